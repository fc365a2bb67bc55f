/* The direct C calls (jpt_files_read, …) and jpt_files_call: requests on
 * any backend that must be answered at once, their results copied out for
 * the caller. jpt_files_call is the public edge where JSON params are read
 * (with their messages) and the result written in D11's shape. */
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "files/files.h"

/* ---- Calling a method and waiting ----------------------------------------------------- */

/* What a request gave, copied from its typed result. */
typedef struct sync_answer {
    int method;
    bool want_text; /* the result in D11's shape (jpt_files_call) */
    int status;
    jpt__buf data;  /* fs.read's bytes, or the result's text */
    jpt__files_list list;
    int kind;
    uint64_t size;
    jpt__errbuf message;
} sync_answer;

static int copy_result(sync_answer *a, const jpt__vfs_fs_result *r)
{
    if (a->want_text)
        return jpt__vfs_put_fs_result(&a->data, a->method, r);
    a->kind = r->kind;
    a->size = r->size;
    if (a->method == JPT__VFS_FS_READ)
        return jpt__buf_append(&a->data, r->data != NULL ? r->data : "", r->len);
    for (size_t i = 0; i < r->nentries; i++)
        if (jpt__files_list_add(&a->list, r->entries[i].name, strlen(r->entries[i].name),
                                r->entries[i].kind) < 0)
            return JPT_ERR_NOMEM;
    return JPT_OK;
}

static void sync_done(void *ud, int status, const jpt__vfs_fs_result *r, const char *message)
{
    sync_answer *a = ud;

    a->status = status;
    if (r != NULL && copy_result(a, r) < 0) {
        a->status = JPT_ERR_NOMEM;
        message = "out of memory for the result";
    }
    if (message != NULL)
        snprintf(a->message.text, sizeof(a->message.text), "%s", message);
}

static void answer_free(sync_answer *a)
{
    jpt__buf_free(&a->data);
    jpt__files_list_free(&a->list);
}

/* Runs method `m` to the end: a grep is stepped through, a host's request
 * answered later is JPT_ERR_AGAIN. On failure the message is f's. */
static int call_sync(jpt_files *f, int m, const jpt__vfs_params *p, const jpt__files_opts *opts,
                     sync_answer *a)
{
    jpt__files_call *pending;

    a->method = m;
    a->status = JPT_OK;
    a->message.text[0] = '\0';
    int rc = jpt__files_submit(f, m, p, opts, sync_done, a, &pending);
    if (rc < 0)
        return rc;
    if (pending != NULL && jpt__files_call_needs_step(pending))
        while (jpt__files_step(pending, 0) == 1)
            ;
    else if (pending != NULL) {
        jpt__files_cancel(pending);
        return jpt__err(&f->err, JPT_ERR_AGAIN,
                        "%s: the backend answers later; a VFS host waits for such answers",
                        jpt__vfs_method_name(m));
    }
    if (a->status < 0)
        memcpy(f->err.text, a->message.text, sizeof(f->err.text));
    return a->status;
}

static int begin(jpt_files *f, int m, bool args_ok)
{
    if (f == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&f->err);
    if (!args_ok)
        return jpt__err(&f->err, JPT_ERR_INVALID, "%s: a required argument is NULL",
                        jpt__vfs_method_name(m));
    return JPT_OK;
}

JPT_EXPORT int jpt_files_read(jpt_files *f, const char *path, size_t limit, char **data,
                              size_t *len, int *utf8)
{
    jpt__files_opts opts = {limit, 0, NULL, NULL};
    jpt__vfs_params p = {.path = path};
    sync_answer a = {0};
    int rc;

    if (data != NULL)
        *data = NULL;
    if (len != NULL)
        *len = 0;
    if ((rc = begin(f, JPT__VFS_FS_READ, path != NULL && data != NULL && len != NULL)) < 0)
        return rc;
    rc = call_sync(f, JPT__VFS_FS_READ, &p, &opts, &a);
    if (rc == JPT_ERR_NOMEM && f->err.text[0] == '\0')
        jpt__err(&f->err, rc, "fs.read: out of memory");
    size_t got = a.data.len;
    if (rc == JPT_OK && (*data = jpt__buf_take(&a.data)) == NULL)
        rc = jpt__err(&f->err, JPT_ERR_NOMEM, "fs.read: out of memory");
    answer_free(&a);
    if (rc < 0)
        return rc;
    *len = got;
    if (utf8 != NULL)
        *utf8 = jpt__files_is_text(*data, *len);
    return JPT_OK;
}

JPT_EXPORT int jpt_files_write(jpt_files *f, const char *path, const void *data, size_t len)
{
    jpt__vfs_params p = {.path = path, .content = data, .content_len = len};
    sync_answer a = {0};
    int rc;

    if ((rc = begin(f, JPT__VFS_FS_WRITE, path != NULL && (data != NULL || len == 0))) < 0)
        return rc;
    rc = call_sync(f, JPT__VFS_FS_WRITE, &p, NULL, &a);
    answer_free(&a);
    return rc;
}

/* exists and metadata: the kind (0: nothing there) and size. */
static int stat_path(jpt_files *f, int m, const char *path, int *kind, uint64_t *size)
{
    jpt__vfs_params p = {.path = path};
    sync_answer a = {0};
    int rc = call_sync(f, m, &p, NULL, &a);

    *kind = a.kind;
    *size = a.size;
    answer_free(&a);
    return rc;
}

JPT_EXPORT int jpt_files_exists(jpt_files *f, const char *path, int *exists)
{
    int rc, kind = 0;
    uint64_t size = 0;

    if (exists != NULL)
        *exists = 0;
    if ((rc = begin(f, JPT__VFS_FS_EXISTS, path != NULL && exists != NULL)) < 0)
        return rc;
    if ((rc = stat_path(f, JPT__VFS_FS_EXISTS, path, &kind, &size)) == JPT_OK)
        *exists = kind != 0;
    return rc;
}

JPT_EXPORT int jpt_files_metadata(jpt_files *f, const char *path, int *kind, uint64_t *size)
{
    int rc, k = 0;
    uint64_t s = 0;

    if ((rc = begin(f, JPT__VFS_FS_METADATA, path != NULL && kind != NULL && size != NULL)) < 0)
        return rc;
    *kind = 0;
    *size = 0;
    if ((rc = stat_path(f, JPT__VFS_FS_METADATA, path, &k, &s)) < 0)
        return rc;
    *kind = k;
    *size = s;
    return JPT_OK;
}

/* The entries as one block: the array, then the names. */
static int entries_block(jpt_files *f, const jpt__files_list *l, jpt_files_entry **out)
{
    size_t bytes = l->n * sizeof(jpt_files_entry);

    for (size_t i = 0; i < l->n; i++)
        bytes += strlen(l->v[i].name) + 1;
    jpt_files_entry *v = jpt__malloc(bytes);
    if (v == NULL)
        return jpt__files_nomem(&f->err, JPT__VFS_FS_LIST_DIR);
    char *names = (char *)(v + l->n);
    for (size_t i = 0; i < l->n; i++) {
        size_t n = strlen(l->v[i].name) + 1;
        memcpy(names, l->v[i].name, n);
        v[i].name = names;
        v[i].kind = l->v[i].kind;
        names += n;
    }
    *out = v;
    return JPT_OK;
}

JPT_EXPORT int jpt_files_list_dir(jpt_files *f, const char *path, jpt_files_entry **entries,
                                  size_t *count)
{
    jpt__vfs_params p = {.path = path};
    sync_answer a = {0};
    int rc;

    if (entries != NULL)
        *entries = NULL;
    if (count != NULL)
        *count = 0;
    if ((rc = begin(f, JPT__VFS_FS_LIST_DIR, path != NULL && entries != NULL && count != NULL)) <
        0)
        return rc;
    /* Sorted, whatever order a host-supplied backend gave. */
    if ((rc = call_sync(f, JPT__VFS_FS_LIST_DIR, &p, NULL, &a)) == JPT_OK) {
        jpt__files_list_sort(&a.list);
        if ((rc = entries_block(f, &a.list, entries)) == JPT_OK)
            *count = a.list.n;
    }
    answer_free(&a);
    return rc;
}

JPT_EXPORT int jpt_files_delete(jpt_files *f, const char *path)
{
    jpt__vfs_params p = {.path = path};
    sync_answer a = {0};
    int rc;

    if ((rc = begin(f, JPT__VFS_FS_DELETE, path != NULL)) < 0)
        return rc;
    rc = call_sync(f, JPT__VFS_FS_DELETE, &p, NULL, &a);
    answer_free(&a);
    return rc;
}

JPT_EXPORT int jpt_files_rename(jpt_files *f, const char *from, const char *to)
{
    jpt__vfs_params p = {.from = from, .to = to};
    sync_answer a = {0};
    int rc;

    if ((rc = begin(f, JPT__VFS_FS_RENAME, from != NULL && to != NULL)) < 0)
        return rc;
    rc = call_sync(f, JPT__VFS_FS_RENAME, &p, NULL, &a);
    answer_free(&a);
    return rc;
}

/* ---- jpt_files_call: params as JSON --------------------------------------------------- */

/* The params read from JSON, and what they point into. */
typedef struct json_params {
    jpt__vfs_params p;
    const char **strings; /* fs.grep's paths, then its extensions */
    jpt__buf content;     /* fs.write's base64 decoded */
} json_params;

static int bad(jpt__errbuf *e, int m, const char *key, const char *what, json_t *v)
{
    return jpt__err(e, JPT_ERR_INVALID, "%s: params.%s must be %s, not %s",
                    jpt__vfs_method_name(m), key, what,
                    v == NULL ? "missing" : jpt__json_type_phrase(v));
}

/* params[key] as a path: a string the path rules accept (checked here so
 * that a bad path is said before the other params). */
static int take_path(json_t *params, const char *key, int m, const char **out, jpt__errbuf *e)
{
    json_t *v = json_object_get(params, key);
    char norm[JPT__FILES_PATH_MAX + 1];

    if (!json_is_string(v))
        return bad(e, m, key, "a string", v);
    *out = json_string_value(v);
    return jpt__files_path_check(jpt__vfs_method_name(m), *out, json_string_length(v), norm, e);
}

/* fs.write's content: the text, or the bytes its base64 encodes. */
static int take_content(json_t *params, json_params *jp, jpt__errbuf *e)
{
    json_t *content = json_object_get(params, "content");
    json_t *encoding = json_object_get(params, "encoding");

    if (!json_is_string(content))
        return bad(e, JPT__VFS_FS_WRITE, "content", "a string", content);
    jp->p.content = json_string_value(content);
    jp->p.content_len = json_string_length(content);
    if (encoding == NULL || json_is_null(encoding))
        return JPT_OK;
    if (!json_is_string(encoding) || strcmp(json_string_value(encoding), "base64") != 0)
        return jpt__err(e, JPT_ERR_INVALID,
                        "fs.write: params.encoding must be \"base64\" or absent");
    int rc = jpt__buf_base64_decode(&jp->content, jp->p.content, jp->p.content_len);
    if (rc == JPT_ERR_NOMEM)
        return jpt__err(e, rc, "fs.write: out of memory decoding the content");
    if (rc < 0)
        return jpt__err(e, rc, "fs.write: params.content is not valid base64");
    jp->p.content = jp->content.data != NULL ? jp->content.data : "";
    jp->p.content_len = jp->content.len;
    return JPT_OK;
}

/* fs.grep's paths (each checked) or extensions, into `slots`. */
static int take_strings(json_t *params, const char *key, const char **slots,
                        const char *const **out, size_t *n, jpt__errbuf *e)
{
    json_t *v = json_object_get(params, key), *item;
    char norm[JPT__FILES_PATH_MAX + 1];
    size_t i;
    int rc;

    if (v == NULL || json_is_null(v))
        return JPT_OK;
    *out = slots;
    json_array_foreach(v, i, item)
    {
        if (!json_is_string(item))
            return jpt__err(e, JPT_ERR_INVALID,
                            "fs.grep: params.%s must be an array of strings", key);
        const char *s = json_string_value(item);
        size_t len = json_string_length(item);
        if (strcmp(key, "paths") == 0 &&
            (rc = jpt__files_path_check("fs.grep", s, len, norm, e)) < 0)
            return rc;
        if (strcmp(key, "extensions") == 0 && memchr(s, '\0', len) != NULL)
            return jpt__err(e, JPT_ERR_INVALID, "fs.grep: params.extensions must hold names "
                                                "like \"rs\" or \".rs\"");
        slots[(*n)++] = s;
    }
    return JPT_OK;
}

static int take_bool(json_t *params, const char *key, bool *out, jpt__errbuf *e)
{
    json_t *v = json_object_get(params, key);

    if (v == NULL || json_is_null(v))
        return JPT_OK;
    if (!json_is_boolean(v))
        return jpt__err(e, JPT_ERR_INVALID, "fs.grep: params.%s must be a boolean", key);
    *out = json_is_true(v);
    return JPT_OK;
}

static int take_grep(json_t *params, json_params *jp, jpt__errbuf *e)
{
    json_t *pattern = json_object_get(params, "pattern");
    json_t *paths = json_object_get(params, "paths"), *exts = json_object_get(params, "extensions");
    json_t *context = json_object_get(params, "context");
    json_t *max = json_object_get(params, "max_matches");
    int rc;

    if (!json_is_string(pattern))
        return bad(e, JPT__VFS_FS_GREP, "pattern", "a string", pattern);
    if (memchr(json_string_value(pattern), '\0', json_string_length(pattern)) != NULL)
        return jpt__err(e, JPT_ERR_INVALID,
                        "fs.grep: params.pattern must not contain a NUL character");
    jp->p.pattern = json_string_value(pattern);
    if ((paths != NULL && !json_is_null(paths) && !json_is_array(paths)) ||
        (exts != NULL && !json_is_null(exts) && !json_is_array(exts)))
        return jpt__err(e, JPT_ERR_INVALID, "fs.grep: params.%s must be an array of strings",
                        paths != NULL && !json_is_null(paths) && !json_is_array(paths)
                            ? "paths"
                            : "extensions");
    size_t np = json_array_size(paths), ne = json_array_size(exts);
    if ((jp->strings = jpt__calloc(np + ne + 1, sizeof(*jp->strings))) == NULL)
        return jpt__err(e, JPT_ERR_NOMEM, "fs.grep: out of memory");
    if ((rc = take_strings(params, "paths", jp->strings, &jp->p.paths, &jp->p.npaths, e)) < 0 ||
        (rc = take_strings(params, "extensions", jp->strings + np, &jp->p.extensions,
                           &jp->p.nextensions, e)) < 0 ||
        (rc = take_bool(params, "fixed_strings", &jp->p.fixed_strings, e)) < 0 ||
        (rc = take_bool(params, "case_insensitive", &jp->p.case_insensitive, e)) < 0)
        return rc;
    if (context != NULL && !json_is_null(context)) {
        if (!json_is_integer(context) || json_integer_value(context) < 0 ||
            json_integer_value(context) > 100)
            return jpt__err(e, JPT_ERR_INVALID,
                            "fs.grep: params.context must be an integer from 0 to 100");
        jp->p.context = (unsigned)json_integer_value(context);
    }
    if (max != NULL && !json_is_null(max)) {
        if (!json_is_integer(max) || json_integer_value(max) < 1)
            return jpt__err(e, JPT_ERR_INVALID,
                            "fs.grep: params.max_matches must be a positive integer");
        jp->p.max_matches = (uint64_t)json_integer_value(max);
    }
    return JPT_OK;
}

/* The params of method `m` from its JSON object. */
static int take_params(int m, json_t *params, json_params *jp, jpt__errbuf *e)
{
    int rc;

    if (!json_is_object(params))
        return jpt__err(e, JPT_ERR_INVALID, "%s: params must be an object",
                        jpt__vfs_method_name(m));
    switch (m) {
    case JPT__VFS_FS_GREP:
        return take_grep(params, jp, e);
    case JPT__VFS_FS_RENAME:
        if ((rc = take_path(params, "from", m, &jp->p.from, e)) < 0)
            return rc;
        return take_path(params, "to", m, &jp->p.to, e);
    case JPT__VFS_FS_WRITE:
        if ((rc = take_path(params, "path", m, &jp->p.path, e)) < 0)
            return rc;
        return take_content(params, jp, e);
    default:
        return take_path(params, "path", m, &jp->p.path, e);
    }
}

static int method_of(const char *name)
{
    for (int m = JPT__VFS_FS_READ; m <= JPT__VFS_FS_GREP; m++)
        if (strcmp(name, jpt__vfs_method_name(m)) == 0)
            return m;
    return -1;
}

JPT_EXPORT int jpt_files_call(jpt_files *f, const char *method, const char *params_json,
                              char **result_json)
{
    json_t *params = NULL;
    json_error_t jerr;
    json_params jp = {.content = JPT__BUF_INIT};
    sync_answer a = {.want_text = true};
    int rc;

    if (result_json != NULL)
        *result_json = NULL;
    if (f == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&f->err);
    if (method == NULL || params_json == NULL || result_json == NULL)
        return jpt__err(&f->err, JPT_ERR_INVALID, "call: a required argument is NULL");
    int m = method_of(method);
    if (m < 0) {
        char shown[256];
        jpt__files_path_quote(method, strlen(method), shown);
        return jpt__err(&f->err, JPT_ERR_UNSUPPORTED, "unknown method '%s'", shown);
    }
    rc = jpt__json_load(params_json, strlen(params_json), JSON_ALLOW_NUL, &params, &jerr);
    if (rc == JPT_ERR_NOMEM)
        return jpt__files_nomem(&f->err, m);
    if (rc < 0)
        return jpt__err(&f->err, rc, "%s: the params are not JSON: %s", method, jerr.text);
    if ((rc = take_params(m, params, &jp, &f->err)) == JPT_OK &&
        (rc = call_sync(f, m, &jp.p, NULL, &a)) == JPT_OK &&
        (*result_json = jpt__buf_take(&a.data)) == NULL)
        rc = jpt__files_nomem(&f->err, m);
    answer_free(&a);
    jpt__free(jp.strings);
    jpt__buf_free(&jp.content);
    json_decref(params);
    return rc;
}

JPT_EXPORT int jpt_files_grep(jpt_files *f, const char *params_json, char **result_json)
{
    return jpt_files_call(f, "fs.grep", params_json, result_json);
}
