/* The jpt_files object: its backends behind one face, the D11 filesystem
 * methods as JSON requests (what the VFS host submits), the
 * host-supplied backend's requests and answers, and the direct C calls. */
#include <stdlib.h>
#include <string.h>

#include "files/files.h"

/* ---- Entry lists ------------------------------------------------------------------ */

void jpt__files_list_free(jpt__files_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        jpt__free(l->v[i].name);
    jpt__free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

int jpt__files_list_add(jpt__files_list *l, const char *name, size_t len, int kind)
{
    jpt__files_entry *v = jpt__array_reserve(l->v, &l->cap, l->n + 1, sizeof(*v), 16);
    char *copy;

    if (v == NULL)
        return JPT_ERR_NOMEM;
    l->v = v;
    if ((copy = jpt__memdup0(name, len)) == NULL)
        return JPT_ERR_NOMEM;
    v[l->n].name = copy;
    v[l->n].kind = kind;
    l->n++;
    return JPT_OK;
}

static int compare_entries(const void *a, const void *b)
{
    return strcmp(((const jpt__files_entry *)a)->name, ((const jpt__files_entry *)b)->name);
}

void jpt__files_list_sort(jpt__files_list *l)
{
    if (l->n > 1)
        qsort(l->v, l->n, sizeof(*l->v), compare_entries);
}

int jpt__files_kind_json(const json_t *s)
{
    return json_is_string(s) ? jpt__vfs_kind_find(json_string_value(s), json_string_length(s))
                             : 0;
}

/* ---- The object ------------------------------------------------------------------- */

int jpt__files_wrap(int type, const jpt__files_backend *be, void *impl, jpt_files **out)
{
    jpt_files *f = jpt__calloc(1, sizeof(*f));

    if (f == NULL)
        return JPT_ERR_NOMEM;
    f->refs = 1;
    f->type = type;
    f->be = be;
    f->impl = impl;
    *out = f;
    return JPT_OK;
}

jpt_files *jpt__files_ref(jpt_files *f)
{
    f->refs++;
    return f;
}

void jpt__files_unref(jpt_files *f)
{
    if (f == NULL || --f->refs > 0)
        return;
    if (f->be != NULL)
        f->be->destroy(f);
    if (f->type == JPT__FILES_HOST && f->ops.release != NULL)
        f->ops.release(f->ud);
    jpt__buf_free(&f->data);
    jpt__buf_free(&f->text);
    jpt__free(f);
}

JPT_EXPORT int jpt_files_open_dir(const char *root, unsigned flags, jpt_files **out)
{
    jpt__errbuf e;
    unsigned known = JPT_FILES_ALLOW_HARDLINKS | JPT_FILES_FSYNC | JPT__FILES_FORCE_WALK;

    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_open_dir: out is NULL");
    *out = NULL;
    if (root == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_open_dir: root is NULL");
    if ((flags & ~known) != 0)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_open_dir: unknown flags 0x%x",
                         flags & ~known);
    e.text[0] = '\0';
    int rc = jpt__files_dir_new(root, flags, &e, out);
    if (rc < 0)
        return jpt__fail(rc, "jpt_files_open_dir '%s': %s", root,
                         e.text[0] != '\0' ? e.text : jpt_strerror(rc));
    return JPT_OK;
}

JPT_EXPORT int jpt_files_new_memory(jpt_files **out)
{
    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_new_memory: out is NULL");
    *out = NULL;
    int rc = jpt__files_memory_new(out);
    return rc < 0 ? jpt__fail(rc, "jpt_files_new_memory: out of memory") : rc;
}

JPT_EXPORT int jpt_files_new(const jpt_files_ops *ops, void *ud, jpt_files **out)
{
    int rc;

    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_new: out is NULL");
    *out = NULL;
    if (ops == NULL || ops->call == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_files_new: %s",
                         ops == NULL ? "ops is NULL" : "ops->call is NULL");
    if ((rc = jpt__struct_check(ops, ops->size, sizeof(*ops))) < 0)
        return jpt__fail(rc, rc == JPT_ERR_INVALID
                                 ? "jpt_files_new: ops->size is less than jpt_files_ops"
                                 : "jpt_files_new: ops sets fields this jptool does not know "
                                   "(built against a newer one)");
    if ((rc = jpt__files_wrap(JPT__FILES_HOST, NULL, NULL, out)) < 0)
        return jpt__fail(rc, "jpt_files_new: out of memory");
    (*out)->ops = *ops;
    (*out)->ops.size = sizeof(*ops);
    (*out)->ud = ud;
    return JPT_OK;
}

JPT_EXPORT void jpt_files_free(jpt_files *f)
{
    jpt__files_unref(f);
}

JPT_EXPORT const char *jpt_files_errmsg(const jpt_files *f)
{
    return f != NULL ? f->err.text : "";
}

/* ---- The methods and their params ------------------------------------------------------ */

const char *const jpt__files_method_names[JPT__FS_COUNT] = {
    "fs.read", "fs.write", "fs.exists", "fs.list_dir", "fs.metadata", "fs.delete",
    "fs.rename", "fs.grep",
};

int jpt__files_method_id(const char *name)
{
    for (int m = 0; m < JPT__FS_COUNT; m++)
        if (strcmp(name, jpt__files_method_names[m]) == 0)
            return m;
    return -1;
}

/* params[key] as a path: checked, normalised into `norm`, quoted into
 * `shown`. */
int jpt__files_take_path(json_t *params, const char *key, int m, char *norm, char *shown,
                     jpt__errbuf *e)
{
    json_t *v = json_object_get(params, key);

    if (!json_is_string(v))
        return jpt__err(e, JPT_ERR_INVALID, "%s: params.%s must be a string, not %s",
                        jpt__files_method_names[m], key,
                        v == NULL ? "missing" : jpt__json_type_phrase(v));
    jpt__files_path_quote(json_string_value(v), json_string_length(v), shown);
    return jpt__files_path_check(jpt__files_method_names[m], json_string_value(v),
                                 json_string_length(v), norm, e);
}

/* ---- Results in D11's shapes --------------------------------------------------------- */

bool jpt__files_is_text(const char *data, size_t len)
{
    return memchr(data, '\0', len) == NULL && jpt__utf8_valid(data, len);
}

/* ---- The guard (the access policy) ----------------------------------------------------- */

bool jpt__files_guarded(const jpt__files_ctx *c)
{
    return c->opts != NULL && c->opts->guard != NULL;
}

int jpt__files_guard(const jpt__files_ctx *c, int access, const char *resolved)
{
    char why[256] = "";

    if (!jpt__files_guarded(c))
        return JPT_OK;
    int rc = c->opts->guard(c->opts->guard_ud, access, resolved, why, sizeof(why));
    if (rc >= 0)
        return JPT_OK;
    return jpt__err(c->e, rc, "%s '%s': %s", c->method, c->shown,
                    why[0] != '\0' ? why : jpt_strerror(rc));
}

int jpt__files_guard_write(const jpt__files_ctx *c, const char *target, size_t exists_len,
                           bool to)
{
    char dir[JPT__FILES_PATH_MAX + 1];
    size_t len = strlen(target);
    int flag = to ? JPT__FILES_ACCESS_TO : 0, rc;
    const char *slash;

    if (!jpt__files_guarded(c))
        return JPT_OK;
    /* Each directory the write would make, outermost first: a loop, as
     * deep as the path is (issue 15 §1). */
    for (size_t i = exists_len + (exists_len > 0);
         i < len && (slash = memchr(target + i, '/', len - i)) != NULL;
         i = (size_t)(slash - target) + 1) {
        memcpy(dir, target, (size_t)(slash - target));
        dir[slash - target] = '\0';
        if ((rc = jpt__files_guard(c, JPT__FILES_ACCESS_CREATE | flag, dir)) < 0)
            return rc;
    }
    return jpt__files_guard(c, JPT__FILES_ACCESS_WRITE | flag, target);
}

bool jpt__files_join(char *out, const char *parent, const char *name)
{
    size_t pl = strcmp(parent, ".") == 0 ? 0 : strlen(parent), nl = strlen(name);

    if (pl + 1 + nl > JPT__FILES_PATH_MAX)
        return false;
    memmove(out, parent, pl);
    out[pl] = '/';
    memmove(out + pl + (pl > 0), name, nl + 1);
    return true;
}

/* ---- Running a method on the directory or memory backend --------------------------------- */

int jpt__files_nomem(jpt__errbuf *e, int m)
{
    return jpt__err(e, JPT_ERR_NOMEM, "%s: out of memory for the result",
                    jpt__files_method_names[m]);
}

/* fs.write's content: the text, or the bytes its base64 encodes. */
static int write_content(json_t *params, jpt__errbuf *e, const char **data, size_t *len,
                         jpt__buf *decoded)
{
    json_t *content = json_object_get(params, "content");
    json_t *encoding = json_object_get(params, "encoding");

    if (!json_is_string(content))
        return jpt__err(e, JPT_ERR_INVALID, "fs.write: params.content must be a string, not %s",
                        content == NULL ? "missing" : jpt__json_type_phrase(content));
    *data = json_string_value(content);
    *len = json_string_length(content);
    if (encoding == NULL || json_is_null(encoding))
        return JPT_OK;
    if (!json_is_string(encoding) || strcmp(json_string_value(encoding), "base64") != 0)
        return jpt__err(e, JPT_ERR_INVALID,
                        "fs.write: params.encoding must be \"base64\" or absent");
    int rc = jpt__buf_base64_decode(decoded, *data, *len);
    if (rc == JPT_ERR_NOMEM)
        return jpt__err(e, rc, "fs.write: out of memory decoding the content");
    if (rc < 0)
        return jpt__err(e, rc, "fs.write: params.content is not valid base64");
    *data = decoded->data != NULL ? decoded->data : "";
    *len = decoded->len;
    return JPT_OK;
}

/* Runs method `m` (not fs.grep) and writes its result into `text` with
 * the one writer of D11's shapes (vfs-proto's jpt__vfs_put_fs_result):
 * from bytes, a kind and size, or entries, without a JSON tree. fs.read
 * reads into `data`, which the caller reuses from request to request. */
static int local_call(jpt_files *f, int m, json_t *params, const jpt__files_opts *opts,
                      jpt__buf *data, jpt__buf *text)
{
    char path[JPT__FILES_PATH_MAX + 1], shown[256];
    char to[JPT__FILES_PATH_MAX + 1], shown_to[256];
    jpt__files_ctx c = {jpt__files_method_names[m], shown, opts, &f->err};
    const char *key = m == JPT__FS_RENAME ? "from" : "path";
    jpt__files_list list = {NULL, 0, 0};
    jpt__vfs_fs_result r = {0};
    int rc;

    if ((rc = jpt__files_take_path(params, key, m, path, shown, &f->err)) < 0)
        return rc;
    switch (m) {
    case JPT__FS_READ:
        if ((rc = f->be->read(f, &c, path, data)) == JPT_OK) {
            r.data = data->data;
            r.len = data->len;
        }
        break;
    case JPT__FS_WRITE: {
        const char *bytes = NULL;
        size_t len = 0;
        if ((rc = write_content(params, &f->err, &bytes, &len, data)) == JPT_OK)
            rc = f->be->write(f, &c, path, bytes, len);
        break;
    }
    case JPT__FS_EXISTS:
    case JPT__FS_METADATA:
        rc = f->be->stat(f, &c, path, &r.kind, m == JPT__FS_METADATA ? &r.size : NULL);
        if (rc == JPT_OK && m == JPT__FS_METADATA && r.kind == 0)
            rc = jpt__err(&f->err, JPT_ERR_NOT_FOUND, "fs.metadata '%s': not found", shown);
        break;
    case JPT__FS_LIST:
        if ((rc = f->be->list(f, &c, path, &list)) == JPT_OK) {
            r.entries = list.v;
            r.nentries = list.n;
        }
        break;
    case JPT__FS_DELETE:
        rc = f->be->remove(f, &c, path);
        break;
    case JPT__FS_RENAME:
        if ((rc = jpt__files_take_path(params, "to", m, to, shown_to, &f->err)) == JPT_OK)
            rc = f->be->rename(f, &c, path, to, shown_to);
        break;
    }
    if (rc == JPT_OK && jpt__vfs_put_fs_result(text, m, &r) < 0)
        rc = jpt__files_nomem(&f->err, m);
    jpt__files_list_free(&list);
    return rc;
}

/* A buffer to keep for the next request: its memory, unless a request
 * larger than most made it grow beyond KEEP_BYTES. */
#define KEEP_BYTES (2u << 20)

static jpt__buf keep(jpt__buf b)
{
    if (b.cap > KEEP_BYTES)
        jpt__buf_free(&b);
    return b;
}

/* ---- Requests in flight -------------------------------------------------------------- */

void jpt__files_call_free(jpt__files_call *c)
{
    jpt__grep_free(c->grep);
    jpt__files_unref(c->f);
    jpt__free(c);
}

jpt__files_call *jpt__files_call_new(jpt_files *f, jpt__files_done_fn done, void *ud)
{
    jpt__files_call *c = jpt__calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->f = jpt__files_ref(f);
    c->done = done;
    c->ud = ud;
    return c;
}

/* Ends a host request: its call (unless cancelled) learns the outcome. */
int jpt__files_submit(jpt_files *f, const char *method, json_t *params,
                      const jpt__files_opts *opts, jpt__files_done_fn done, void *ud,
                      jpt__files_call **pending)
{
    if (pending != NULL)
        *pending = NULL;
    if (f == NULL || method == NULL || done == NULL || pending == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&f->err);
    int m = jpt__files_method_id(method);
    if (m < 0) {
        char shown[256];
        jpt__files_path_quote(method, strlen(method), shown);
        done(ud, jpt__err(&f->err, JPT_ERR_UNSUPPORTED, "unknown method '%s'", shown), NULL, 0,
             f->err.text);
        return JPT_OK;
    }
    if (!json_is_object(params)) {
        done(ud, jpt__err(&f->err, JPT_ERR_INVALID, "%s: params must be an object", method),
             NULL, 0, f->err.text);
        return JPT_OK;
    }
    if (f->type == JPT__FILES_HOST)
        return jpt__files_host_submit(f, m, params, opts, done, ud, pending);
    if (m == JPT__FS_GREP) {
        jpt__grep *g;
        int rc = jpt__grep_begin(f, params, opts, &f->err, &g);
        if (rc < 0) {
            done(ud, rc, NULL, 0, f->err.text);
            return JPT_OK;
        }
        jpt__files_call *c = jpt__files_call_new(f, done, ud);
        if (c == NULL) {
            jpt__grep_free(g);
            return jpt__err(&f->err, JPT_ERR_NOMEM, "fs.grep: out of memory");
        }
        c->grep = g;
        *pending = c;
        return JPT_OK;
    }
    /* The object's buffers serve one request after another (no fresh
     * megabyte per fs.read); a request submitted from inside `done` while
     * they are lent out gets its own. */
    jpt__buf data = JPT__BUF_INIT, text = JPT__BUF_INIT;
    bool own = !f->lent;
    if (own) {
        data = f->data;
        text = f->text;
        data.len = text.len = 0;
        f->lent = true;
    }
    int rc = local_call(f, m, params, opts, &data, &text);
    done(ud, rc, rc < 0 ? NULL : text.data, rc < 0 ? 0 : text.len, rc < 0 ? f->err.text : NULL);
    if (own) {
        f->data = keep(data);
        f->text = keep(text);
        f->lent = false;
        return JPT_OK;
    }
    jpt__buf_free(&data);
    jpt__buf_free(&text);
    return JPT_OK;
}

bool jpt__files_call_needs_step(const jpt__files_call *c)
{
    return c->grep != NULL;
}

int jpt__files_step(jpt__files_call *c, uint64_t budget_ns)
{
    int rc = jpt__grep_step(c->grep, budget_ns);

    if (rc == 1)
        return 1;
    if (rc == 0) {
        size_t len;
        const char *text = jpt__grep_result(c->grep, &len);
        c->done(c->ud, JPT_OK, text, len, NULL);
    } else
        c->done(c->ud, rc, NULL, 0, jpt__grep_errmsg(c->grep));
    jpt__files_call_free(c);
    return 0;
}

void jpt__files_cancel(jpt__files_call *c)
{
    if (c->req != NULL)
        jpt__files_host_cancel(c);
    else
        jpt__files_call_free(c);
}
