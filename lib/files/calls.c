/* The direct C calls (jpt_files_read, …): straight to the directory and
 * memory backends, and through a request (which must be answered at once)
 * on a host-supplied one. */
#include <stdio.h>
#include <string.h>

#include "files/files.h"

/* ---- Calling a method and waiting ----------------------------------------------------- */

typedef struct sync_answer {
    int status;
    char *result; /* a copy, or NULL (out of memory: status says so) */
    size_t len;
    jpt__errbuf message;
} sync_answer;

static void sync_done(void *ud, int status, const char *result, size_t len,
                      const char *message)
{
    sync_answer *a = ud;

    a->status = status;
    if (result != NULL && (a->result = jpt__memdup0(result, len)) == NULL) {
        a->status = JPT_ERR_NOMEM;
        message = "out of memory for the result";
    }
    a->len = len;
    if (message != NULL)
        snprintf(a->message.text, sizeof(a->message.text), "%s", message);
}

/* Runs method `m` to the end: a grep is stepped through, a host's request
 * answered later is JPT_ERR_AGAIN. The result text is the caller's. */
static int call_sync_text(jpt_files *f, int m, json_t *params, char **result, size_t *len)
{
    sync_answer a = {JPT_OK, NULL, 0, {""}};
    jpt__files_call *pending;

    *result = NULL;
    int rc = jpt__files_submit(f, jpt__files_method_names[m], params, NULL, sync_done, &a,
                               &pending);
    if (rc < 0)
        return rc;
    if (pending != NULL && jpt__files_call_needs_step(pending))
        while (jpt__files_step(pending, 0) == 1)
            ;
    else if (pending != NULL) {
        jpt__files_cancel(pending);
        return jpt__err(&f->err, JPT_ERR_AGAIN,
                        "%s: the backend answers later; a VFS host waits for such answers",
                        jpt__files_method_names[m]);
    }
    if (a.status < 0) {
        jpt__free(a.result);
        memcpy(f->err.text, a.message.text, sizeof(f->err.text));
        return a.status;
    }
    *result = a.result;
    *len = a.len;
    return JPT_OK;
}

/* The same with the result as a tree (the direct calls on a
 * host-supplied backend take its fields). */
static int call_sync(jpt_files *f, int m, json_t *params, json_t **result)
{
    json_error_t jerr;
    char *text;
    size_t len = 0;
    int rc;

    *result = NULL;
    if ((rc = call_sync_text(f, m, params, &text, &len)) < 0)
        return rc;
    rc = jpt__json_load(text, len, JSON_ALLOW_NUL, result, &jerr);
    jpt__free(text);
    return rc < 0 ? jpt__files_nomem(&f->err, m) : JPT_OK;
}

/* {key: path} for a direct call on a host-supplied backend. */
static json_t *path_params(const char *key, const char *path)
{
    json_t *p = json_object();

    if (p != NULL && json_object_set_new(p, key, json_string_nocheck(path)) < 0) {
        json_decref(p);
        return NULL;
    }
    return p;
}

/* Runs a path method through JSON (host-supplied backend). */
static int call_path(jpt_files *f, int m, const char *path, json_t **result)
{
    json_t *params = path_params("path", path);

    *result = NULL;
    if (params == NULL)
        return jpt__files_nomem(&f->err, m);
    int rc = call_sync(f, m, params, result);
    json_decref(params);
    return rc;
}

/* A direct call's path on the directory or memory backend. */
static int direct_path(jpt_files *f, int m, const char *path, char *norm, char *shown)
{
    jpt__files_path_quote(path, strlen(path), shown);
    return jpt__files_path_check(jpt__files_method_names[m], path, strlen(path), norm, &f->err);
}

static int begin(jpt_files *f, int m, bool args_ok)
{
    if (f == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&f->err);
    if (!args_ok)
        return jpt__err(&f->err, JPT_ERR_INVALID, "%s: a required argument is NULL",
                        jpt__files_method_names[m]);
    return JPT_OK;
}

JPT_EXPORT int jpt_files_read(jpt_files *f, const char *path, size_t limit, char **data,
                              size_t *len, int *utf8)
{
    char norm[JPT__FILES_PATH_MAX + 1], shown[256];
    jpt__files_opts opts = {limit, 0, NULL, NULL};
    jpt__files_ctx c = {"fs.read", shown, &opts, NULL};
    jpt__buf buf = JPT__BUF_INIT;
    json_t *r = NULL;
    int rc;

    if (data != NULL)
        *data = NULL;
    if (len != NULL)
        *len = 0;
    if ((rc = begin(f, JPT__FS_READ, path != NULL && data != NULL && len != NULL)) < 0)
        return rc;
    if (f->type == JPT__FILES_HOST) {
        if ((rc = call_path(f, JPT__FS_READ, path, &r)) < 0)
            return rc;
        json_t *content = json_object_get(r, "content");
        if (json_object_get(r, "encoding") == NULL)
            rc = jpt__buf_append(&buf, json_string_value(content), json_string_length(content));
        else if ((rc = jpt__buf_base64_decode(&buf, json_string_value(content),
                                              json_string_length(content))) ==
                 JPT_ERR_INVALID)
            rc = jpt__err(&f->err, JPT_ERR_PROTOCOL,
                          "fs.read: the backend's base64 content is not valid base64");
        json_decref(r);
        if (limit == 0)
            limit = JPT_FILES_READ_LIMIT;
        if (rc == JPT_OK && buf.len > limit)
            rc = jpt__err(&f->err, JPT_ERR_LIMIT,
                          "fs.read: the file is %zu bytes, over the read limit of %zu bytes",
                          buf.len, limit);
    } else if ((rc = direct_path(f, JPT__FS_READ, path, norm, shown)) == JPT_OK) {
        c.e = &f->err;
        rc = f->be->read(f, &c, norm, &buf);
    }
    if (rc == JPT_ERR_NOMEM && f->err.text[0] == '\0')
        jpt__err(&f->err, rc, "fs.read: out of memory");
    size_t got = buf.len;
    if (rc == JPT_OK && (*data = jpt__buf_take(&buf)) == NULL)
        rc = jpt__err(&f->err, JPT_ERR_NOMEM, "fs.read: out of memory");
    if (rc < 0) {
        jpt__buf_free(&buf);
        return rc;
    }
    *len = got;
    if (utf8 != NULL)
        *utf8 = jpt__files_is_text(*data, *len);
    return JPT_OK;
}

JPT_EXPORT int jpt_files_write(jpt_files *f, const char *path, const void *data, size_t len)
{
    char norm[JPT__FILES_PATH_MAX + 1], shown[256];
    jpt__files_ctx c = {"fs.write", shown, NULL, NULL};
    jpt__buf b64 = JPT__BUF_INIT;
    json_t *params, *r;
    int rc;

    if ((rc = begin(f, JPT__FS_WRITE, path != NULL && (data != NULL || len == 0))) < 0)
        return rc;
    if (f->type != JPT__FILES_HOST) {
        if ((rc = direct_path(f, JPT__FS_WRITE, path, norm, shown)) < 0)
            return rc;
        c.e = &f->err;
        return f->be->write(f, &c, norm, data != NULL ? data : "", len);
    }
    bool text = data == NULL || jpt__files_is_text(data, len);
    if (!text && jpt__buf_base64(&b64, data, len) < 0)
        return jpt__files_nomem(&f->err, JPT__FS_WRITE);
    if ((params = path_params("path", path)) == NULL ||
        json_object_set_new(params, "content",
                            text ? json_stringn_nocheck(data != NULL ? data : "", len)
                                 : json_stringn_nocheck(b64.data, b64.len)) < 0 ||
        (!text && json_object_set_new(params, "encoding", json_string("base64")) < 0)) {
        json_decref(params);
        jpt__buf_free(&b64);
        return jpt__files_nomem(&f->err, JPT__FS_WRITE);
    }
    jpt__buf_free(&b64);
    rc = call_sync(f, JPT__FS_WRITE, params, &r);
    json_decref(params);
    json_decref(r);
    return rc;
}

/* exists and metadata: the kind (0: nothing there) and size. */
static int stat_path(jpt_files *f, int m, const char *path, int *kind, uint64_t *size)
{
    char norm[JPT__FILES_PATH_MAX + 1], shown[256];
    jpt__files_ctx c = {jpt__files_method_names[m], shown, NULL, &f->err};
    json_t *r;
    int rc;

    if (f->type != JPT__FILES_HOST) {
        if ((rc = direct_path(f, m, path, norm, shown)) < 0)
            return rc;
        return f->be->stat(f, &c, norm, kind, m == JPT__FS_METADATA ? size : NULL);
    }
    if ((rc = call_path(f, m, path, &r)) < 0)
        return rc;
    if (m == JPT__FS_EXISTS)
        *kind = json_is_true(json_object_get(r, "exists")) ? JPT_FILES_KIND_OTHER : 0;
    else {
        *kind = jpt__files_kind_json(json_object_get(r, "kind"));
        *size = (uint64_t)json_integer_value(json_object_get(r, "size"));
    }
    json_decref(r);
    return JPT_OK;
}

JPT_EXPORT int jpt_files_exists(jpt_files *f, const char *path, int *exists)
{
    int rc, kind = 0;
    uint64_t size = 0;

    if (exists != NULL)
        *exists = 0;
    if ((rc = begin(f, JPT__FS_EXISTS, path != NULL && exists != NULL)) < 0)
        return rc;
    if ((rc = stat_path(f, JPT__FS_EXISTS, path, &kind, &size)) == JPT_OK)
        *exists = kind != 0;
    return rc;
}

JPT_EXPORT int jpt_files_metadata(jpt_files *f, const char *path, int *kind, uint64_t *size)
{
    char shown[256];
    int rc, k = 0;
    uint64_t s = 0;

    if ((rc = begin(f, JPT__FS_METADATA, path != NULL && kind != NULL && size != NULL)) < 0)
        return rc;
    *kind = 0;
    *size = 0;
    if ((rc = stat_path(f, JPT__FS_METADATA, path, &k, &s)) < 0)
        return rc;
    if (k == 0) {
        jpt__files_path_quote(path, strlen(path), shown);
        return jpt__err(&f->err, JPT_ERR_NOT_FOUND, "fs.metadata '%s': not found", shown);
    }
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
        return jpt__files_nomem(&f->err, JPT__FS_LIST);
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

/* The entries of a host's fs.list_dir result, sorted. */
static int list_from_json(jpt_files *f, json_t *r, jpt__files_list *l)
{
    json_t *entry;
    size_t i;

    json_array_foreach(json_object_get(r, "entries"), i, entry)
    {
        json_t *name = json_object_get(entry, "path");
        if (jpt__files_list_add(l, json_string_value(name), json_string_length(name),
                                jpt__files_kind_json(json_object_get(entry, "kind"))) < 0)
            return jpt__files_nomem(&f->err, JPT__FS_LIST);
    }
    jpt__files_list_sort(l);
    return JPT_OK;
}

JPT_EXPORT int jpt_files_list_dir(jpt_files *f, const char *path, jpt_files_entry **entries,
                                  size_t *count)
{
    char norm[JPT__FILES_PATH_MAX + 1], shown[256];
    jpt__files_ctx c = {"fs.list_dir", shown, NULL, NULL};
    jpt__files_list l = {NULL, 0, 0};
    json_t *r;
    int rc;

    if (entries != NULL)
        *entries = NULL;
    if (count != NULL)
        *count = 0;
    if ((rc = begin(f, JPT__FS_LIST, path != NULL && entries != NULL && count != NULL)) < 0)
        return rc;
    if (f->type == JPT__FILES_HOST) {
        if ((rc = call_path(f, JPT__FS_LIST, path, &r)) == JPT_OK) {
            rc = list_from_json(f, r, &l);
            json_decref(r);
        }
    } else if ((rc = direct_path(f, JPT__FS_LIST, path, norm, shown)) == JPT_OK) {
        c.e = &f->err;
        rc = f->be->list(f, &c, norm, &l);
    }
    if (rc == JPT_OK && (rc = entries_block(f, &l, entries)) == JPT_OK)
        *count = l.n;
    jpt__files_list_free(&l);
    return rc;
}

JPT_EXPORT int jpt_files_delete(jpt_files *f, const char *path)
{
    char norm[JPT__FILES_PATH_MAX + 1], shown[256];
    jpt__files_ctx c = {"fs.delete", shown, NULL, NULL};
    json_t *r;
    int rc;

    if ((rc = begin(f, JPT__FS_DELETE, path != NULL)) < 0)
        return rc;
    if (f->type == JPT__FILES_HOST) {
        rc = call_path(f, JPT__FS_DELETE, path, &r);
        json_decref(r);
        return rc;
    }
    if ((rc = direct_path(f, JPT__FS_DELETE, path, norm, shown)) < 0)
        return rc;
    c.e = &f->err;
    return f->be->remove(f, &c, norm);
}

JPT_EXPORT int jpt_files_rename(jpt_files *f, const char *from, const char *to)
{
    char nfrom[JPT__FILES_PATH_MAX + 1], sfrom[256];
    char nto[JPT__FILES_PATH_MAX + 1], sto[256];
    jpt__files_ctx c = {"fs.rename", sfrom, NULL, NULL};
    json_t *params, *r;
    int rc;

    if ((rc = begin(f, JPT__FS_RENAME, from != NULL && to != NULL)) < 0)
        return rc;
    if (f->type == JPT__FILES_HOST) {
        if ((params = path_params("from", from)) == NULL ||
            json_object_set_new(params, "to", json_string_nocheck(to)) < 0) {
            json_decref(params);
            return jpt__files_nomem(&f->err, JPT__FS_RENAME);
        }
        rc = call_sync(f, JPT__FS_RENAME, params, &r);
        json_decref(params);
        json_decref(r);
        return rc;
    }
    if ((rc = direct_path(f, JPT__FS_RENAME, from, nfrom, sfrom)) < 0 ||
        (rc = direct_path(f, JPT__FS_RENAME, to, nto, sto)) < 0)
        return rc;
    c.e = &f->err;
    return f->be->rename(f, &c, nfrom, nto, sto);
}

JPT_EXPORT int jpt_files_call(jpt_files *f, const char *method, const char *params_json,
                              char **result_json)
{
    json_t *params = NULL;
    json_error_t jerr;
    int rc;

    if (result_json != NULL)
        *result_json = NULL;
    if (f == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&f->err);
    if (method == NULL || params_json == NULL || result_json == NULL)
        return jpt__err(&f->err, JPT_ERR_INVALID, "call: a required argument is NULL");
    int m = jpt__files_method_id(method);
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
    size_t len;
    rc = call_sync_text(f, m, params, result_json, &len);
    json_decref(params);
    return rc;
}

JPT_EXPORT int jpt_files_grep(jpt_files *f, const char *params_json, char **result_json)
{
    return jpt_files_call(f, "fs.grep", params_json, result_json);
}
