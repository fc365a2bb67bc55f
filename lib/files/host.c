/* The host-supplied backend (jpt_files_new): each D11 method is a request
 * the host answers with jpt_files_request_reply() or _fail(), at once or
 * at any later time; answers are checked for D11's shape. */
#include <stdio.h>
#include <string.h>

#include "files/files.h"

struct jpt_files_request {
    jpt_files *f;
    jpt__files_call *call; /* NULL once cancelled */
    int method;
    char shown[256];
    bool *answered; /* set while the host's call callback runs */
};


static void request_complete(jpt_files_request *req, int status, const char *result,
                             size_t len, const char *message)
{
    jpt__files_call *c = req->call;

    if (req->answered != NULL)
        *req->answered = true;
    if (c != NULL) {
        c->done(c->ud, status, result, len, message);
        jpt__files_call_free(c);
    }
    jpt__files_unref(req->f);
    jpt__free(req);
}

/* The host's params: the caller's with every path in its normal form, so
 * that a host never sees "a/./b" or a trailing '/'. */
static int host_params(int m, json_t *params, jpt__errbuf *e, char *shown, json_t **out)
{
    char norm[JPT__FILES_PATH_MAX + 1], other[256];
    json_t *copy = json_copy(params);
    int rc = JPT_OK;

    *out = NULL;
    if (copy == NULL)
        return jpt__files_nomem(e, m);
    strcpy(shown, ".");
    if (m == JPT__FS_GREP) {
        json_t *paths = json_object_get(params, "paths"), *v, *fixed;
        size_t i;
        if (paths != NULL && !json_is_array(paths))
            rc = jpt__err(e, JPT_ERR_INVALID, "fs.grep: params.paths must be an array");
        else if (paths != NULL) {
            if ((fixed = json_array()) == NULL || json_object_set_new(copy, "paths", fixed) < 0)
                rc = jpt__files_nomem(e, m);
            json_array_foreach(paths, i, v)
            {
                if (rc < 0)
                    break;
                if (!json_is_string(v))
                    rc = jpt__err(e, JPT_ERR_INVALID, "fs.grep: params.paths must hold strings");
                else if ((rc = jpt__files_path_check("fs.grep", json_string_value(v),
                                                     json_string_length(v), norm, e)) == JPT_OK &&
                         json_array_append_new(fixed, json_string_nocheck(norm)) < 0)
                    rc = jpt__files_nomem(e, m);
            }
        }
    } else {
        const char *key = m == JPT__FS_RENAME ? "from" : "path";
        if ((rc = jpt__files_take_path(params, key, m, norm, shown, e)) == JPT_OK &&
            json_object_set_new(copy, key, json_string_nocheck(norm)) < 0)
            rc = jpt__files_nomem(e, m);
        if (rc == JPT_OK && m == JPT__FS_RENAME &&
            (rc = jpt__files_take_path(params, "to", m, norm, other, e)) == JPT_OK &&
            json_object_set_new(copy, "to", json_string_nocheck(norm)) < 0)
            rc = jpt__files_nomem(e, m);
    }
    if (rc < 0)
        json_decref(copy);
    else
        *out = copy;
    return rc;
}

/* The access policy on a request before the host sees it (the host's
 * params, normalised): there are no symlinks that jptool knows of, so each
 * path is judged as requested (issue 15 §2: the policy decides before
 * anything happens). fs.grep's matches are judged again in its result. */
static int guard_request(jpt_files *f, int m, json_t *hp, const jpt__files_opts *opts,
                         char *shown)
{
    jpt__files_ctx c = {jpt__files_method_names[m], shown, opts, &f->err};
    json_t *paths = json_object_get(hp, "paths"), *v;
    size_t i;
    int rc = JPT_OK;

    if (!jpt__files_guarded(&c))
        return JPT_OK;
    switch (m) {
    case JPT__FS_GREP:
        if (paths == NULL)
            return jpt__files_guard(&c, JPT__FILES_ACCESS_READ, ".");
        json_array_foreach(paths, i, v) {
            jpt__files_path_quote(json_string_value(v), json_string_length(v), shown);
            if ((rc = jpt__files_guard(&c, JPT__FILES_ACCESS_READ, json_string_value(v))) < 0)
                break;
        }
        strcpy(shown, ".");
        return rc;
    /* A write's every directory above counts as one it may create: the
     * host does not say which it will. */
    case JPT__FS_WRITE:
        return jpt__files_guard_write(&c, json_string_value(json_object_get(hp, "path")), 0,
                                      false);
    case JPT__FS_DELETE:
        return jpt__files_guard(&c, JPT__FILES_ACCESS_WRITE,
                                json_string_value(json_object_get(hp, "path")));
    case JPT__FS_RENAME: {
        char to[256];
        if ((rc = jpt__files_guard(&c, JPT__FILES_ACCESS_WRITE,
                                   json_string_value(json_object_get(hp, "from")))) < 0)
            return rc;
        v = json_object_get(hp, "to");
        jpt__files_path_quote(json_string_value(v), json_string_length(v), to);
        c.shown = to;
        return jpt__files_guard_write(&c, json_string_value(v), 0, true);
    }
    default:
        return jpt__files_guard(&c, JPT__FILES_ACCESS_READ,
                                json_string_value(json_object_get(hp, "path")));
    }
}

int jpt__files_host_submit(jpt_files *f, int m, json_t *params, const jpt__files_opts *opts,
                           jpt__files_done_fn done, void *ud, jpt__files_call **pending)
{
    json_t *hp;
    char *text = NULL;
    char shown[256];
    bool answered = false;

    int rc = host_params(m, params, &f->err, shown, &hp);
    if (rc == JPT_OK && (rc = guard_request(f, m, hp, opts, shown)) < 0)
        json_decref(hp);
    if (rc < 0) {
        done(ud, rc, NULL, 0, f->err.text);
        return JPT_OK;
    }
    rc = jpt__json_dump(hp, JSON_COMPACT, &text);
    json_decref(hp);
    jpt__files_call *c = rc == JPT_OK ? jpt__files_call_new(f, done, ud) : NULL;
    jpt_files_request *req = c != NULL ? jpt__calloc(1, sizeof(*req)) : NULL;
    if (req == NULL) {
        if (c != NULL)
            jpt__files_call_free(c);
        jpt__free(text);
        return jpt__err(&f->err, JPT_ERR_NOMEM, "%s: out of memory", jpt__files_method_names[m]);
    }
    req->f = jpt__files_ref(f);
    if (opts != NULL)
        c->opts = *opts;
    req->call = c;
    req->method = m;
    memcpy(req->shown, shown, sizeof(shown));
    req->answered = &answered;
    c->req = req;
    rc = f->ops.call(req, jpt__files_method_names[m], text, f->ud);
    jpt__free(text);
    if (answered)
        return JPT_OK;
    req->answered = NULL;
    if (rc < 0) {
        jpt__errbuf e;
        jpt__err(&e, rc, "%s '%s': the backend refused the request: %s", jpt__files_method_names[m],
                 req->shown, jpt_strerror(rc));
        request_complete(req, rc, NULL, 0, e.text);
        return JPT_OK;
    }
    *pending = c;
    return JPT_OK;
}

void jpt__files_host_cancel(jpt__files_call *c)
{
    jpt_files_request *req = c->req;
    jpt_files_ops ops = c->f->ops;
    void *ud = c->f->ud;

    req->call = NULL;
    jpt__files_call_free(c);
    /* Last: the host may answer from inside, which frees `req`. */
    if (ops.cancel != NULL)
        ops.cancel(req, ud);
}

/* ---- The host's answers ----------------------------------------------------------------- */

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
    case JPT__FS_READ:
        v = json_object_get(r, "encoding");
        *why = "fs.read needs a string \"content\", an optional \"encoding\": \"base64\" "
               "and an optional non-negative integer \"size\"";
        return json_is_string(json_object_get(r, "content")) &&
               (v == NULL || (json_is_string(v) &&
                              strcmp(json_string_value(v), "base64") == 0)) &&
               (json_object_get(r, "size") == NULL || is_size(json_object_get(r, "size")));
    case JPT__FS_EXISTS:
        *why = "fs.exists needs a boolean \"exists\"";
        return json_is_boolean(json_object_get(r, "exists"));
    case JPT__FS_METADATA:
        v = json_object_get(r, "kind");
        *why = "fs.metadata needs \"kind\" (\"file\", \"dir\", \"symlink\" or \"other\") and "
               "a non-negative integer \"size\"";
        return json_is_string(v) && jpt__files_kind_json(v) != 0 &&
               is_size(json_object_get(r, "size"));
    case JPT__FS_LIST:
        *why = "fs.list_dir needs \"entries\": an array of {\"path\": string, \"kind\": "
               "\"file\", \"dir\", \"symlink\" or \"other\"}";
        v = json_object_get(r, "entries");
        if (!json_is_array(v))
            return false;
        json_array_foreach(v, i, entry)
        {
            json_t *kind = json_object_get(entry, "kind");
            if (!json_is_string(json_object_get(entry, "path")) || !json_is_string(kind) ||
                jpt__files_kind_json(kind) == 0)
                return false;
        }
        return true;
    case JPT__FS_GREP:
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
    jpt__files_ctx c = {"fs.grep", shown, &req->call->opts, &e};
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

JPT_EXPORT int jpt_files_request_reply(jpt_files_request *req, const char *result_json)
{
    json_t *r = NULL;
    json_error_t jerr;
    jpt__errbuf e;
    const char *why;

    if (req == NULL)
        return JPT_ERR_INVALID;
    const char *method = jpt__files_method_names[req->method];
    int rc = result_json != NULL ? jpt__json_load(result_json, strlen(result_json),
                                                  JSON_ALLOW_NUL, &r, &jerr)
                                 : JPT_ERR_INVALID;
    if (rc == JPT_ERR_NOMEM) {
        jpt__err(&e, rc, "%s '%s': out of memory for the backend's result", method, req->shown);
        request_complete(req, rc, NULL, 0, e.text);
        return rc;
    }
    if (rc < 0 || !json_is_object(r)) {
        jpt__err(&e, JPT_ERR_PROTOCOL, "%s '%s': the backend's result is not a JSON object",
                 method, req->shown);
        json_decref(r);
        request_complete(req, JPT_ERR_PROTOCOL, NULL, 0, e.text);
        return JPT_ERR_INVALID;
    }
    if (!result_shape_ok(req->method, r, &why)) {
        jpt__err(&e, JPT_ERR_PROTOCOL, "%s '%s': the backend's result is malformed: %s",
                 method, req->shown, why);
        json_decref(r);
        request_complete(req, JPT_ERR_PROTOCOL, NULL, 0, e.text);
        return JPT_ERR_INVALID;
    }
    if (req->method == JPT__FS_GREP && req->call != NULL && (rc = filter_matches(req, r)) < 0) {
        json_decref(r);
        jpt__err(&e, rc, "%s '%s': out of memory for the backend's result", method, req->shown);
        request_complete(req, rc, NULL, 0, e.text);
        return rc;
    }
    /* Compact, whatever the host sent: the result goes into one NDJSON
     * line. */
    jpt__buf text = JPT__BUF_INIT;
    rc = jpt__json_dump_buf(r, JSON_COMPACT, &text);
    json_decref(r);
    if (rc < 0) {
        jpt__buf_free(&text);
        jpt__err(&e, rc, "%s '%s': out of memory for the backend's result", method, req->shown);
        request_complete(req, rc, NULL, 0, e.text);
        return rc;
    }
    request_complete(req, JPT_OK, text.data, text.len, NULL);
    jpt__buf_free(&text);
    return JPT_OK;
}

JPT_EXPORT int jpt_files_request_fail(jpt_files_request *req, int status, const char *message)
{
    jpt__errbuf e;

    if (req == NULL)
        return JPT_ERR_INVALID;
    if (status >= 0 || jpt_status_name(status) == NULL)
        status = JPT_ERR_IO;
    jpt__err(&e, status, "%s '%s': %s", jpt__files_method_names[req->method], req->shown,
             message != NULL && message[0] != '\0' ? message : jpt_strerror(status));
    request_complete(req, status, NULL, 0, e.text);
    return JPT_OK;
}
