/* The host-supplied backend (jpt_files_new): each D11 method is a request
 * the host answers with jpt_files_request_reply() or _fail(), at once or
 * at any later time. The host's interface is JSON (vfs.h): this file is
 * its edge, where the typed params are written for the host and its
 * answers are checked for D11's shape and read into typed results. */
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "files/files.h"

/* The backend's data: the host's ops, kept while the object or a request
 * holds a reference. */
typedef struct hostfs {
    unsigned refs;
    jpt_files_ops ops;
    void *ud;
} hostfs;

struct jpt_files_request {
    jpt__files_call base;
    hostfs *h;
    jpt__files_done_fn done; /* NULL once cancelled */
    void *ud;
    jpt__files_opts opts;    /* its grep's matches are guarded */
    int method;
    char shown[256];
    bool *answered; /* set while the host's call callback runs */
};

static void host_unref(hostfs *h)
{
    if (--h->refs > 0)
        return;
    if (h->ops.release != NULL)
        h->ops.release(h->ud);
    jpt__free(h);
}

static void request_complete(jpt_files_request *req, int status, const jpt__vfs_fs_result *r,
                             const char *message)
{
    if (req->answered != NULL)
        *req->answered = true;
    if (req->done != NULL)
        req->done(req->ud, status, r, message);
    host_unref(req->h);
    jpt__free(req);
}

/* ---- The host's params ---------------------------------------------------------------- */

static int put_member(jpt__buf *b, bool first, const char *name, const char *value)
{
    int rc = jpt__buf_printf(b, "%s\"%s\":", first ? "{" : ",", name);
    return rc < 0 ? rc : jpt__buf_json_string(b, value, strlen(value));
}

static int put_strings(jpt__buf *b, const char *name, const char *const *v, size_t n)
{
    int rc = jpt__buf_printf(b, ",\"%s\":[", name);

    for (size_t i = 0; rc == JPT_OK && i < n; i++)
        if ((rc = i > 0 ? jpt__buf_putc(b, ',') : JPT_OK) == JPT_OK)
            rc = jpt__buf_json_string(b, v[i], strlen(v[i]));
    return rc < 0 ? rc : jpt__buf_putc(b, ']');
}

/* fs.grep's params for the host: its paths normal, as given otherwise. */
static int put_grep(jpt__buf *b, const jpt__vfs_params *p, const char *const *paths)
{
    int rc = put_member(b, true, "pattern", p->pattern);

    if (rc == JPT_OK && p->paths != NULL)
        rc = put_strings(b, "paths", paths, p->npaths);
    if (rc == JPT_OK && p->extensions != NULL)
        rc = put_strings(b, "extensions", p->extensions, p->nextensions);
    if (rc == JPT_OK)
        rc = jpt__buf_printf(b, ",\"context\":%u,\"case_insensitive\":%s,\"fixed_strings\":%s",
                             p->context, p->case_insensitive ? "true" : "false",
                             p->fixed_strings ? "true" : "false");
    if (rc == JPT_OK && p->max_matches > 0)
        rc = jpt__buf_printf(b, ",\"max_matches\":%llu", (unsigned long long)p->max_matches);
    return rc < 0 ? rc : jpt__buf_putc(b, '}');
}

/* The host's params, D11's own with every path in its normal form, so
 * that a host never sees "a/./b" or a trailing '/'; `norm` holds the
 * normal paths (fs.rename's two, or fs.grep's `paths`) for the guard. */
static int host_params(const jpt__files_request *rq, char (*norm)[JPT__FILES_PATH_MAX + 1],
                       char *shown, jpt__buf *b)
{
    const jpt__vfs_params *p = rq->p;
    int m = rq->method, rc;
    char other[256];

    strcpy(shown, ".");
    if (m == JPT__VFS_FS_GREP) {
        if (p->pattern == NULL)
            return jpt__err(rq->e, JPT_ERR_INVALID,
                            "fs.grep: params.pattern must be a string, not missing");
        const char **paths = p->npaths > 0 ? jpt__calloc(p->npaths, sizeof(*paths)) : NULL;
        if (p->npaths > 0 && paths == NULL)
            return jpt__files_nomem(rq->e, m);
        rc = JPT_OK;
        for (size_t i = 0; rc == JPT_OK && i < p->npaths; i++) {
            char one[JPT__FILES_PATH_MAX + 1];
            if ((rc = jpt__files_path_check("fs.grep", p->paths[i], strlen(p->paths[i]), one,
                                            rq->e)) == JPT_OK &&
                (paths[i] = jpt__strdup(one)) == NULL)
                rc = jpt__files_nomem(rq->e, m);
        }
        if (rc == JPT_OK && put_grep(b, p, paths) < 0)
            rc = jpt__files_nomem(rq->e, m);
        for (size_t i = 0; paths != NULL && i < p->npaths; i++)
            jpt__free((char *)paths[i]);
        jpt__free(paths);
        return rc;
    }
    bool rename = m == JPT__VFS_FS_RENAME;
    if ((rc = jpt__files_take_path(m, rename ? p->from : p->path, norm[0], shown, rq->e)) < 0 ||
        (rename && (rc = jpt__files_take_path(m, p->to, norm[1], other, rq->e)) < 0))
        return rc;
    rc = put_member(b, true, rename ? "from" : "path", norm[0]);
    if (rc == JPT_OK && rename)
        rc = put_member(b, false, "to", norm[1]);
    if (rc == JPT_OK && m == JPT__VFS_FS_WRITE) {
        bool base64;
        if ((rc = jpt__buf_puts(b, ",\"content\":")) == JPT_OK &&
            (rc = jpt__buf_content(b, p->content != NULL ? p->content : "", p->content_len,
                                   &base64)) == JPT_OK &&
            base64)
            rc = jpt__buf_puts(b, ",\"encoding\":\"base64\"");
    }
    if (rc == JPT_OK)
        rc = jpt__buf_putc(b, '}');
    return rc < 0 ? jpt__files_nomem(rq->e, m) : JPT_OK;
}

/* The access policy on a request before the host sees it (its params,
 * normalised): there are no symlinks that jptool knows of, so each path
 * is judged as requested (issue 15 §2: the policy decides before
 * anything happens). fs.grep's matches are judged again in its result. */
static int guard_request(const jpt__files_request *rq, char (*norm)[JPT__FILES_PATH_MAX + 1],
                         char *shown)
{
    jpt__files_ctx c = {jpt__vfs_method_name(rq->method), shown, rq->opts, rq->e};
    const jpt__vfs_params *p = rq->p;
    int rc = JPT_OK;

    if (!jpt__files_guarded(&c))
        return JPT_OK;
    switch (rq->method) {
    case JPT__VFS_FS_GREP:
        if (p->paths == NULL)
            return jpt__files_guard(&c, JPT__FILES_ACCESS_READ, ".");
        for (size_t i = 0; rc == JPT_OK && i < p->npaths; i++) {
            char one[JPT__FILES_PATH_MAX + 1];
            jpt__files_path_check("fs.grep", p->paths[i], strlen(p->paths[i]), one, rq->e);
            jpt__files_path_quote(one, strlen(one), shown);
            rc = jpt__files_guard(&c, JPT__FILES_ACCESS_READ, one);
        }
        strcpy(shown, ".");
        return rc;
    /* A write's every directory above counts as one it may create: the
     * host does not say which it will. */
    case JPT__VFS_FS_WRITE:
        return jpt__files_guard_write(&c, norm[0], 0, false);
    case JPT__VFS_FS_DELETE:
        return jpt__files_guard(&c, JPT__FILES_ACCESS_WRITE, norm[0]);
    case JPT__VFS_FS_RENAME: {
        char to[256];
        if ((rc = jpt__files_guard(&c, JPT__FILES_ACCESS_WRITE, norm[0])) < 0)
            return rc;
        jpt__files_path_quote(norm[1], strlen(norm[1]), to);
        c.shown = to;
        return jpt__files_guard_write(&c, norm[1], 0, true);
    }
    default:
        return jpt__files_guard(&c, JPT__FILES_ACCESS_READ, norm[0]);
    }
}

static const jpt__files_backend host_backend;

static int host_submit(void *impl, const jpt__files_request *rq, jpt__files_call **pending)
{
    hostfs *h = impl;
    char norm[2][JPT__FILES_PATH_MAX + 1];
    char shown[256];
    jpt__buf text = JPT__BUF_INIT;
    bool answered = false;
    const char *method = jpt__vfs_method_name(rq->method);

    int rc = host_params(rq, norm, shown, &text);
    if (rc == JPT_OK)
        rc = guard_request(rq, norm, shown);
    if (rc < 0) {
        jpt__buf_free(&text);
        rq->done(rq->ud, rc, NULL, rq->e->text);
        return JPT_OK;
    }
    jpt_files_request *req = jpt__calloc(1, sizeof(*req));
    if (req == NULL) {
        jpt__buf_free(&text);
        return jpt__err(rq->e, JPT_ERR_NOMEM, "%s: out of memory", method);
    }
    req->base.be = &host_backend;
    req->h = h;
    h->refs++;
    req->done = rq->done;
    req->ud = rq->ud;
    if (rq->opts != NULL)
        req->opts = *rq->opts;
    req->method = rq->method;
    memcpy(req->shown, shown, sizeof(shown));
    req->answered = &answered;
    rc = h->ops.call(req, method, text.data, h->ud);
    jpt__buf_free(&text);
    if (answered)
        return JPT_OK;
    req->answered = NULL;
    if (rc < 0) {
        jpt__errbuf e;
        jpt__err(&e, rc, "%s '%s': the backend refused the request: %s", method, req->shown,
                 jpt_strerror(rc));
        request_complete(req, rc, NULL, e.text);
        return JPT_OK;
    }
    *pending = &req->base;
    return JPT_OK;
}

static void host_cancel(jpt__files_call *c)
{
    jpt_files_request *req = (jpt_files_request *)c;
    jpt_files_ops ops = req->h->ops;
    void *ud = req->h->ud;

    req->done = NULL;
    /* Last: the host may answer from inside, which frees `req`. */
    if (ops.cancel != NULL)
        ops.cancel(req, ud);
}

static void host_release(void *impl)
{
    host_unref(impl);
}

static const jpt__files_backend host_backend = {
    .submit = host_submit,
    .cancel = host_cancel,
    .release = host_release,
};

int jpt__files_host_new(const jpt_files_ops *ops, void *ud, jpt__files_be *out)
{
    hostfs *h = jpt__calloc(1, sizeof(*h));

    if (h == NULL)
        return JPT_ERR_NOMEM;
    h->refs = 1;
    h->ops = *ops;
    h->ops.size = sizeof(*ops);
    h->ud = ud;
    out->ops = &host_backend;
    out->impl = h;
    return JPT_OK;
}

/* ---- The host's answers ----------------------------------------------------------------- */

/* The JPT_FILES_KIND_* a JSON string names; 0 for anything else. */
static int kind_of(const json_t *s)
{
    return json_is_string(s) ? jpt__vfs_kind_find(json_string_value(s), json_string_length(s))
                             : 0;
}

static bool is_size(json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0;
}

/* Whether `r` has D11's shape for method `m`; `why` says what is wrong. */
static bool result_shape_ok(int m, json_t *r, const char **why)
{
    json_t *v, *entry;
    size_t i;

    switch (m) {
    case JPT__VFS_FS_READ:
        v = json_object_get(r, "encoding");
        *why = "fs.read needs a string \"content\", an optional \"encoding\": \"base64\" "
               "and an optional non-negative integer \"size\"";
        return json_is_string(json_object_get(r, "content")) &&
               (v == NULL || (json_is_string(v) &&
                              strcmp(json_string_value(v), "base64") == 0)) &&
               (json_object_get(r, "size") == NULL || is_size(json_object_get(r, "size")));
    case JPT__VFS_FS_EXISTS:
        *why = "fs.exists needs a boolean \"exists\"";
        return json_is_boolean(json_object_get(r, "exists"));
    case JPT__VFS_FS_METADATA:
        v = json_object_get(r, "kind");
        *why = "fs.metadata needs \"kind\" (\"file\", \"dir\", \"symlink\" or \"other\") and "
               "a non-negative integer \"size\"";
        return json_is_string(v) && kind_of(v) != 0 &&
               is_size(json_object_get(r, "size"));
    case JPT__VFS_FS_LIST_DIR:
        *why = "fs.list_dir needs \"entries\": an array of {\"path\": string, \"kind\": "
               "\"file\", \"dir\", \"symlink\" or \"other\"}";
        v = json_object_get(r, "entries");
        if (!json_is_array(v))
            return false;
        json_array_foreach(v, i, entry)
        {
            json_t *kind = json_object_get(entry, "kind");
            if (!json_is_string(json_object_get(entry, "path")) || !json_is_string(kind) ||
                kind_of(kind) == 0)
                return false;
        }
        return true;
    case JPT__VFS_FS_GREP:
        *why = "fs.grep needs \"matches\": an array";
        return json_is_array(json_object_get(r, "matches"));
    default:
        return true;
    }
}

/* A host's fs.grep searched what it holds: the matches in files the
 * access policy does not let the tool read are dropped, as a walk of the
 * directory backend skips them. */
static int filter_matches(jpt_files_request *req, json_t *r)
{
    json_t *matches = json_object_get(r, "matches"), *kept = json_array(), *match;
    char norm[JPT__FILES_PATH_MAX + 1], shown[256];
    jpt__errbuf e;
    jpt__files_ctx c = {"fs.grep", shown, &req->opts, &e};
    size_t i;

    if (kept == NULL)
        return JPT_ERR_NOMEM;
    json_array_foreach(matches, i, match) {
        json_t *path = json_object_get(match, "path");
        if (!json_is_string(path) ||
            jpt__files_path_check("fs.grep", json_string_value(path), json_string_length(path),
                                  norm, &e) < 0)
            continue;
        jpt__files_path_quote(norm, strlen(norm), shown);
        if (jpt__files_guard(&c, JPT__FILES_ACCESS_READ, norm) == JPT_OK &&
            json_array_append(kept, match) < 0) {
            json_decref(kept);
            return JPT_ERR_NOMEM;
        }
    }
    return json_object_set_new(r, "matches", kept) < 0 ? JPT_ERR_NOMEM : JPT_OK;
}

/* The typed result of the checked answer `r`, for method `m`: fs.read's
 * bytes (base64 decoded) go into `data`, fs.list_dir's entries into
 * `list`, fs.grep's result (its matches filtered) into `text`. */
static int typed_result(jpt_files_request *req, json_t *r, jpt__buf *data, jpt__files_list *list,
                        jpt__buf *text, jpt__vfs_fs_result *out, jpt__errbuf *e)
{
    const char *method = jpt__vfs_method_name(req->method);
    json_t *v, *entry;
    size_t i;
    int rc = JPT_OK;

    switch (req->method) {
    case JPT__VFS_FS_READ: {
        v = json_object_get(r, "content");
        if (json_object_get(r, "encoding") == NULL)
            rc = jpt__buf_append(data, json_string_value(v), json_string_length(v));
        else if ((rc = jpt__buf_base64_decode(data, json_string_value(v),
                                              json_string_length(v))) == JPT_ERR_INVALID)
            return jpt__err(e, JPT_ERR_PROTOCOL,
                            "fs.read '%s': the backend's base64 content is not valid base64",
                            req->shown);
        size_t limit = req->opts.read_limit != 0 ? req->opts.read_limit : JPT_FILES_READ_LIMIT;
        if (rc == JPT_OK && data->len > limit)
            return jpt__err(e, JPT_ERR_LIMIT,
                            "fs.read '%s': the file is %zu bytes, over the read limit of %zu "
                            "bytes",
                            req->shown, data->len, limit);
        out->data = data->data;
        out->len = data->len;
        break;
    }
    case JPT__VFS_FS_EXISTS:
        out->kind = json_is_true(json_object_get(r, "exists")) ? JPT_FILES_KIND_OTHER : 0;
        break;
    case JPT__VFS_FS_METADATA:
        out->kind = kind_of(json_object_get(r, "kind"));
        out->size = (uint64_t)json_integer_value(json_object_get(r, "size"));
        break;
    case JPT__VFS_FS_LIST_DIR:
        json_array_foreach(json_object_get(r, "entries"), i, entry)
        {
            json_t *name = json_object_get(entry, "path");
            if ((rc = jpt__files_list_add(list, json_string_value(name), json_string_length(name),
                                          kind_of(json_object_get(entry, "kind")))) < 0)
                break;
        }
        out->entries = list->v;
        out->nentries = list->n;
        break;
    case JPT__VFS_FS_GREP:
        /* Compact, whatever the host sent: the result goes into one NDJSON
         * line. */
        if (req->done != NULL && (rc = filter_matches(req, r)) == JPT_OK &&
            (rc = jpt__json_dump_buf(r, JSON_COMPACT, text)) == JPT_OK) {
            out->json = text->data;
            out->json_len = text->len;
        }
        break;
    default:
        break;
    }
    if (rc < 0)
        return jpt__err(e, rc, "%s '%s': out of memory for the backend's result", method,
                        req->shown);
    return JPT_OK;
}

JPT_EXPORT int jpt_files_request_reply(jpt_files_request *req, const char *result_json)
{
    json_t *r = NULL;
    json_error_t jerr;
    jpt__errbuf e;
    const char *why;

    if (req == NULL)
        return JPT_ERR_INVALID;
    const char *method = jpt__vfs_method_name(req->method);
    int rc = result_json != NULL ? jpt__json_load(result_json, strlen(result_json),
                                                  JSON_ALLOW_NUL, &r, &jerr)
                                 : JPT_ERR_INVALID;
    if (rc == JPT_ERR_NOMEM) {
        jpt__err(&e, rc, "%s '%s': out of memory for the backend's result", method, req->shown);
        request_complete(req, rc, NULL, e.text);
        return rc;
    }
    if (rc < 0 || !json_is_object(r)) {
        jpt__err(&e, JPT_ERR_PROTOCOL, "%s '%s': the backend's result is not a JSON object",
                 method, req->shown);
        json_decref(r);
        request_complete(req, JPT_ERR_PROTOCOL, NULL, e.text);
        return JPT_ERR_INVALID;
    }
    if (!result_shape_ok(req->method, r, &why)) {
        jpt__err(&e, JPT_ERR_PROTOCOL, "%s '%s': the backend's result is malformed: %s",
                 method, req->shown, why);
        json_decref(r);
        request_complete(req, JPT_ERR_PROTOCOL, NULL, e.text);
        return JPT_ERR_INVALID;
    }
    jpt__buf data = JPT__BUF_INIT, text = JPT__BUF_INIT;
    jpt__files_list list = {NULL, 0, 0};
    jpt__vfs_fs_result typed = {0};
    rc = typed_result(req, r, &data, &list, &text, &typed, &e);
    json_decref(r);
    request_complete(req, rc, rc < 0 ? NULL : &typed, rc < 0 ? e.text : NULL);
    jpt__buf_free(&data);
    jpt__buf_free(&text);
    jpt__files_list_free(&list);
    return rc == JPT_ERR_NOMEM ? rc : JPT_OK;
}

JPT_EXPORT int jpt_files_request_fail(jpt_files_request *req, int status, const char *message)
{
    jpt__errbuf e;

    if (req == NULL)
        return JPT_ERR_INVALID;
    if (status >= 0 || jpt_status_name(status) == NULL)
        status = JPT_ERR_IO;
    jpt__err(&e, status, "%s '%s': %s", jpt__vfs_method_name(req->method), req->shown,
             message != NULL && message[0] != '\0' ? message : jpt_strerror(status));
    request_complete(req, status, NULL, e.text);
    return JPT_OK;
}
