/* What an owner's sessions are built with (session.h): the resources its
 * VFS tools share (the workspace as a files backend, the named backends,
 * one HTTP object), a tool definition's VFS keys, and the one place a
 * session is assembled, for the standalone host and the registry alike. */
#include <stdio.h>
#include <string.h>

#include "files/files.h"
#include "http/http.h"
#include "policy/policy.h"
#include "vfs/session.h"

typedef struct named_files {
    char *name;
    jpt_files *files;
} named_files;

struct jpt__vfs_server {
    jpt__loop *loop;
    char *root;
    jpt_files *root_files[2]; /* without and with hard links */
    named_files *named;
    size_t nnamed, cap_named;
    jpt__http *http;          /* made with the first session */
};

int jpt__vfs_server_new(jpt__loop *loop, const char *root, jpt__vfs_server **out)
{
    jpt__vfs_server *sv = jpt__calloc(1, sizeof(*sv));

    *out = NULL;
    if (sv == NULL || (sv->root = jpt__strdup(root)) == NULL) {
        jpt__free(sv);
        return JPT_ERR_NOMEM;
    }
    sv->loop = loop;
    *out = sv;
    return JPT_OK;
}

void jpt__vfs_server_free(jpt__vfs_server *sv)
{
    if (sv == NULL)
        return;
    for (size_t i = 0; i < sv->nnamed; i++) {
        jpt__free(sv->named[i].name);
        jpt__files_unref(sv->named[i].files);
    }
    jpt__free(sv->named);
    for (size_t i = 0; i < 2; i++)
        jpt__files_unref(sv->root_files[i]);
    jpt__http_free(sv->http);
    jpt__free(sv->root);
    jpt__free(sv);
}

jpt_files *jpt__vfs_server_named(const jpt__vfs_server *sv, const char *name)
{
    for (size_t i = 0; i < sv->nnamed; i++)
        if (strcmp(sv->named[i].name, name) == 0)
            return sv->named[i].files;
    return NULL;
}

int jpt__vfs_server_add_files(jpt__vfs_server *sv, const char *name, jpt_files *files)
{
    if (jpt__vfs_server_named(sv, name) != NULL)
        return JPT_ERR_EXISTS;
    named_files *grown =
        jpt__array_reserve(sv->named, &sv->cap_named, sv->nnamed + 1, sizeof(*grown), 4);
    char *copy = grown != NULL ? jpt__strdup(name) : NULL;
    if (copy == NULL)
        return JPT_ERR_NOMEM;
    sv->named = grown;
    sv->named[sv->nnamed].name = copy;
    sv->named[sv->nnamed].files = jpt__files_ref(files);
    sv->nnamed++;
    return JPT_OK;
}

int jpt__vfs_server_root(jpt__vfs_server *sv, const jpt_policy *policy, jpt_files **out)
{
    /* The policy's "hardlinks": "allow" is the directory's flag. */
    bool hardlinks = jpt_policy_hardlinks_allowed(policy) == 1;
    jpt_files **slot = &sv->root_files[hardlinks];

    if (*slot == NULL) {
        int rc = jpt_files_open_dir(sv->root, hardlinks ? JPT_FILES_ALLOW_HARDLINKS : 0, slot);
        if (rc < 0)
            return rc;
    }
    *out = *slot;
    return JPT_OK;
}

/* ---- A tool definition's VFS keys ------------------------------------------------------ */

static int take_files(const jpt__vfs_server *sv, jpt__vfs_def *d, const json_t *v, char *why,
                      size_t n)
{
    if (v == NULL)
        return JPT_OK;
    const char *name = json_string_value(v);
    if (name == NULL)
        return snprintf(why, n, "'files' must be the name of a files backend"), JPT_ERR_INVALID;
    jpt_files *f = sv != NULL ? jpt__vfs_server_named(sv, name) : NULL;
    if (f == NULL)
        return snprintf(why, n,
                        "'files' names \"%.64s\", which no jpt_registry_add_files() added", name),
               JPT_ERR_INVALID;
    d->files = jpt__files_ref(f);
    return JPT_OK;
}

static int take_timeout(jpt__vfs_def *d, const json_t *v, char *why, size_t n)
{
    d->request_timeout_ms = JPT__VFS_REQUEST_TIMEOUT_MS;
    if (v == NULL)
        return JPT_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > JPT__VFS_REQUEST_TIMEOUT_MAX_MS)
        return snprintf(why, n, "'request_timeout_ms' must be a whole number of milliseconds, "
                                "0 (none) to %d",
                        JPT__VFS_REQUEST_TIMEOUT_MAX_MS),
               JPT_ERR_INVALID;
    d->request_timeout_ms = (int)json_integer_value(v);
    return JPT_OK;
}

int jpt__vfs_def_read(const jpt__vfs_server *sv, const json_t *def, jpt__vfs_def *d, char *why,
                      size_t n)
{
    /* D11: no sandbox section is the default policy (workspace read-only,
     * no network, no processes). */
    int rc = jpt__policy_new_json(json_object_get(def, "sandbox"), &d->policy);

    if (rc == JPT_ERR_INVALID)
        return snprintf(why, n, "'sandbox': %s", jpt_policy_errmsg(d->policy)), rc;
    if (rc < 0)
        return snprintf(why, n, "out of memory reading 'sandbox'"), rc;
    if ((rc = take_files(sv, d, json_object_get(def, "files"), why, n)) < 0 ||
        (rc = take_timeout(d, json_object_get(def, "request_timeout_ms"), why, n)) < 0)
        return rc;
    return JPT_OK;
}

void jpt__vfs_def_clear(jpt__vfs_def *d)
{
    jpt_policy_free(d->policy);
    jpt__files_unref(d->files);
    memset(d, 0, sizeof(*d));
}

/* ---- Sessions -------------------------------------------------------------------------- */

/* The session's configuration, with the server's HTTP object, made now
 * if this is the first session. */
static int configure(jpt__vfs_server *sv, const jpt__vfs_start *st, jpt__vfs_session_config *cfg,
                     jpt__errbuf *err)
{
    int rc;

    if (sv->http == NULL && (rc = jpt__http_new(sv->loop, &sv->http)) < 0)
        return jpt__err(err, rc, "making the HTTP client: %s", jpt_strerror(rc));
    *cfg = (jpt__vfs_session_config){
        .loop = sv->loop,
        .files = st->files,
        .policy = st->policy,
        .http = sv->http,
        .init = st->init,
        .request_id = st->request_id,
        .request_timeout_ms = st->request_timeout_ms,
        .kill_grace_ms = st->kill_grace_ms,
        .limits = st->limits,
        .slots = st->slots,
        .run_sandbox_mode = st->run_sandbox_mode,
        .sandbox_cache = st->sandbox_cache,
        .sandbox_hint = st->sandbox_hint,
        .env_hint = st->env_hint,
    };
    return JPT_OK;
}

int jpt__vfs_serve_spawn(jpt__vfs_server *sv, const jpt__vfs_start *st,
                         const jpt__vfs_session_ops *ops, jpt__sandbox_report *report,
                         jpt__errbuf *err, jpt__vfs_session **out)
{
    jpt__vfs_session_config cfg;
    int rc = configure(sv, st, &cfg, err);

    *out = NULL;
    if (rc < 0)
        return rc;
    jpt__spawn spawn = {
        .argv = st->argv,
        .envp = st->envp,
        /* Issue 15 §4: it reads the workspace through the protocol, and
         * learns nothing of the host's paths, not even where it runs. */
        .cwd = "/",
        .stdin_pipe = true,
        .devnull = st->devnull,
        .drain_ms = st->drain_ms,
        .contain = st->contain,
        .sandbox = st->sandbox,
        .sandbox_report = report,
    };
    rc = jpt__vfs_session_spawn(&cfg, &spawn, ops, err, out);
    if (rc == JPT_OK && st->sandbox != NULL)
        jpt__sandbox_log(st->init.name, st->request_id, (int)jpt__vfs_session_pid(*out), report);
    return rc;
}

int jpt__vfs_serve_attach(jpt__vfs_server *sv, const jpt__vfs_start *st, int rfd, int wfd,
                          const jpt__vfs_session_ops *ops, jpt__errbuf *err,
                          jpt__vfs_session **out)
{
    jpt__vfs_session_config cfg;
    int rc = configure(sv, st, &cfg, err);

    *out = NULL;
    if (rc < 0)
        return rc;
    return jpt__vfs_session_attach(&cfg, rfd, wfd, ops, err, out);
}
