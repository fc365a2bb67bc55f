/* The standalone VFS host (vfs.h, "A standalone host"): a loop of its own
 * around one session, for an application that serves a VFS tool without a
 * registry. The tool's states are kept as they come; its end fixes the
 * last one. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files/files.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"
#include "vfs/session.h"

struct jpt_vfs_host {
    jpt__loop *loop;
    jpt__vfs_server *server;  /* the workspace, the tool's http.* requests */
    jpt_files *files;
    jpt_policy *policy;
    int request_timeout_ms, kill_grace_ms;
    jpt__vfs_limits limits;
    jpt__vfs_session *session;
    bool started, done;
    jpt_state *state;        /* the latest, or the end's */
    jpt_policy_fn policy_fn;
    void *policy_ud;
    int sandbox_mode;        /* never DEFAULT */
    jpt__sandbox_cache *sandbox_cache; /* the tool's filter, process.run's */
    jpt__contain *contain;   /* the tool's and its children's */
    char **sandbox_read;     /* NULL-terminated, or NULL */
    bool spawned;            /* the tool is a process the host spawned */
    bool sandboxed;          /* … in the sandbox */
    jpt__sandbox_report sandbox; /* what it enforced */
    jpt__errbuf err;
};

static bool host_ask(void *ud, jpt_policy_request *req)
{
    jpt_vfs_host *h = ud;

    if (h->policy_fn == NULL)
        return false;
    h->policy_fn(req, h->policy_ud);
    return true;
}

static void host_state(void *ud, jpt_state *st)
{
    jpt_vfs_host *h = ud;

    jpt_state_unref(h->state);
    h->state = st;
}

static void host_ended(void *ud, jpt_state *failure)
{
    jpt_vfs_host *h = ud;

    h->done = true;
    if (failure != NULL) {
        jpt_state_unref(h->state);
        h->state = failure;
    } else if (h->state == NULL || jpt_state_kind(h->state) != JPT_STATE_STOPPED) {
        /* Cancelled before it said how it ended. */
        jpt_state *st = NULL;
        if (jpt_state_new(JPT_STATE_STOPPED, &st) == JPT_OK &&
            jpt_state_add_text(st, "The tool was cancelled before it ended") == JPT_OK &&
            jpt_state_set_error(st, "", 0) == JPT_OK) {
            jpt_state_unref(h->state);
            h->state = st;
        } else
            jpt_state_unref(st);
    }
}

static const jpt__vfs_session_ops host_ops = {host_state, host_ended, host_ask, NULL, NULL};

/* jpt_vfs_host_new's errors, in the thread's last error. */
#define FAIL(status, ...) jpt__fail(status, "jpt_vfs_host_new: " __VA_ARGS__)

static int take_options(jpt_vfs_host_options *o, const jpt_vfs_host_options *opts)
{
    memset(o, 0, sizeof(*o));
    if (opts == NULL)
        return JPT_OK;
    int rc = jpt__struct_take(o, sizeof(*o), opts, opts->size, sizeof(*o));
    if (rc == JPT_ERR_INVALID)
        return FAIL(rc, "opts->size %zu is less than jpt_vfs_host_options (%zu)", opts->size,
                    sizeof(*o));
    if (rc < 0)
        return FAIL(rc, "opts sets fields past the %zu bytes of this jptool's "
                        "jpt_vfs_host_options (built against a newer one)",
                    sizeof(*o));
    if (o->request_timeout_ms < -1)
        return FAIL(JPT_ERR_INVALID, "request_timeout_ms is %d: it is -1 (none), 0 (the "
                                     "default) or more",
                    o->request_timeout_ms);
    if (o->kill_grace_ms < 0)
        return FAIL(JPT_ERR_INVALID, "kill_grace_ms is %d: a duration is 0 (the default) or "
                                     "more",
                    o->kill_grace_ms);
    if (o->files != NULL && o->root != NULL)
        return FAIL(JPT_ERR_INVALID, "files and root are both set: give one");
    if (o->sandbox_mode < JPT_SANDBOX_DEFAULT || o->sandbox_mode > JPT_SANDBOX_OFF)
        return FAIL(JPT_ERR_INVALID, "sandbox_mode %d is not a JPT_SANDBOX_* mode",
                    o->sandbox_mode);
    for (size_t i = 0; o->sandbox_read != NULL && o->sandbox_read[i] != NULL; i++)
        if (o->sandbox_read[i][0] != '/')
            return FAIL(JPT_ERR_INVALID, "sandbox_read[%zu] '%s' is not an absolute path", i,
                        o->sandbox_read[i]);
    return JPT_OK;
}

static int copy_paths(const char *const *paths, char ***out)
{
    size_t n = 0;

    while (paths != NULL && paths[n] != NULL)
        n++;
    if (n == 0)
        return JPT_OK;
    if ((*out = jpt__calloc(n + 1, sizeof(**out))) == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (((*out)[i] = jpt__strdup(paths[i])) == NULL)
            return JPT_ERR_NOMEM;
    return JPT_OK;
}

JPT_EXPORT int jpt_vfs_host_new(const jpt_vfs_host_options *opts, jpt_vfs_host **out)
{
    jpt_vfs_host_options o;
    int rc;

    jpt__fail_clear();
    if (out == NULL)
        return FAIL(JPT_ERR_INVALID, "out is NULL");
    *out = NULL;
    if ((rc = take_options(&o, opts)) < 0)
        return rc;
    jpt_vfs_host *h = jpt__calloc(1, sizeof(*h));
    if (h == NULL)
        return FAIL(JPT_ERR_NOMEM, "out of memory");
    h->request_timeout_ms = o.request_timeout_ms == 0 ? JPT__VFS_REQUEST_TIMEOUT_MS
                                                      : o.request_timeout_ms;
    h->kill_grace_ms = o.kill_grace_ms > 0 ? o.kill_grace_ms : JPT__KILL_GRACE_MS;
    h->limits.max_message = o.max_message;
    h->limits.max_violations = o.max_violations;
    h->sandbox_mode = o.sandbox_mode != JPT_SANDBOX_DEFAULT ? o.sandbox_mode
                                                            : JPT_SANDBOX_REQUIRED;
    if ((rc = copy_paths(o.sandbox_read, &h->sandbox_read)) < 0 ||
        (rc = jpt__loop_new(&h->loop)) < 0 ||
        (rc = jpt__vfs_server_new(h->loop, o.root != NULL ? o.root : ".", &h->server)) < 0) {
        rc = rc == JPT_ERR_NOMEM ? FAIL(rc, "out of memory")
                                 : FAIL(rc, "creating its event loop: %s", strerror(errno));
        goto fail;
    }
    if ((h->sandbox_cache = jpt__sandbox_cache_new()) == NULL) {
        rc = FAIL(JPT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* Issue 15 §3: what the tool and its process.run children start ends
     * with them; a cgroup each where the host's cgroup allows it. */
    jpt__errbuf why;
    if ((rc = jpt__contain_new(h->loop, JPT__CONTAIN_AUTO, &h->contain, &why)) < 0) {
        jpt__log(JPT_LOG_ERROR, "jpt_vfs_host_new: containment: %s", why.text);
        rc = FAIL(rc, "containment: %s", why.text);
        goto fail;
    }
    if ((rc = jpt_policy_new(o.sandbox_json, &h->policy)) < 0) {
        jpt__log(JPT_LOG_ERROR, "jpt_vfs_host_new: the sandbox: %s",
                 h->policy != NULL ? jpt_policy_errmsg(h->policy) : jpt_strerror(rc));
        rc = FAIL(rc, "sandbox_json: %s",
                  h->policy != NULL ? jpt_policy_errmsg(h->policy) : "out of memory");
        goto fail;
    }
    /* A backend the application opened keeps the flags it was opened
     * with; the root is opened with the policy's. */
    if (o.files != NULL)
        h->files = jpt__files_ref(o.files);
    else if ((rc = jpt__vfs_server_root(h->server, h->policy, &h->files)) == JPT_OK)
        jpt__files_ref(h->files);
    else {
        jpt__log(JPT_LOG_ERROR, "jpt_vfs_host_new: cannot open the root '%s': %s",
                 o.root != NULL ? o.root : ".", jpt_strerror(rc));
        /* jpt_files_open_dir said why, naming the root. */
        rc = FAIL(rc, "root: %s", jpt_last_error());
        goto fail;
    }
    *out = h;
    return JPT_OK;
fail:
    jpt_vfs_host_free(h);
    return rc;
}

/* The init of `tool_json`: {"name", "arguments", "answers", "options"}. */
static int read_tool(jpt_vfs_host *h, const char *tool_json, json_t **tool,
                     jpt__vfs_init *init, char **texts)
{
    json_error_t jerr;
    static const char *const keys[] = {"arguments", "answers", "options"};

    if (tool_json == NULL)
        return jpt__err(&h->err, JPT_ERR_INVALID, "tool_json is NULL");
    if (jpt__json_load(tool_json, strlen(tool_json), 0, tool, &jerr) < 0)
        return jpt__err(&h->err, JPT_ERR_INVALID, "tool_json is not JSON: %s", jerr.text);
    const char *name = json_string_value(json_object_get(*tool, "name"));
    if (!json_is_object(*tool) || name == NULL || name[0] == '\0')
        return jpt__err(&h->err, JPT_ERR_INVALID,
                        "tool_json must be an object with a non-empty \"name\"");
    const char *key;
    json_t *v;
    json_object_foreach(*tool, key, v) {
        if (strcmp(key, "name") != 0 && strcmp(key, "arguments") != 0 &&
            strcmp(key, "answers") != 0 && strcmp(key, "options") != 0)
            return jpt__err(&h->err, JPT_ERR_INVALID,
                            "tool_json: unknown key '%s' (expected name, arguments, answers, "
                            "options)",
                            key);
    }
    init->name = name;
    const char **slots[] = {&init->arguments, &init->answers, &init->options};
    for (size_t i = 0; i < 3; i++) {
        json_t *part = json_object_get(*tool, keys[i]);
        if (part == NULL)
            continue;
        if (!json_is_object(part))
            return jpt__err(&h->err, JPT_ERR_INVALID, "tool_json: \"%s\" must be an object",
                            keys[i]);
        if (jpt__json_dump(part, JSON_COMPACT, &texts[i]) < 0)
            return jpt__err(&h->err, JPT_ERR_NOMEM, "out of memory");
        *slots[i] = texts[i];
    }
    return JPT_OK;
}

/* The tool's process: in the OS sandbox (vfs.h) unless its mode is off,
 * with a clean environment (PATH alone). */
static int spawn_tool(jpt_vfs_host *h, const char *const argv[], jpt__vfs_start *st,
                      const jpt__vfs_session_ops *ops)
{
    jpt__buf path = JPT__BUF_INIT;
    const char *host_path = getenv("PATH");
    char link[64], workspace[PATH_MAX];
    int root = jpt__files_root_fd(h->files);
    ssize_t len = -1;

    if (jpt__buf_printf(&path, "PATH=%s", host_path != NULL ? host_path : JPT__DEFAULT_PATH) < 0)
        return jpt__err(&h->err, JPT_ERR_NOMEM, "out of memory");
    /* The directory backend's root, which no grant of the sandbox may
     * hold (a memory or host-supplied backend has none). */
    if (root >= 0) {
        snprintf(link, sizeof(link), "/proc/self/fd/%d", root);
        len = readlink(link, workspace, sizeof(workspace) - 1);
    }
    if (len > 0 && (size_t)len < sizeof(workspace) - 1)
        workspace[len] = '\0';
    const char *envp[] = {path.data, NULL};
    jpt__sandbox_spec spec = {
        .profile = JPT__SANDBOX_VFS,
        .mode = h->sandbox_mode,
        .cache = h->sandbox_cache,
        .read = (const char *const *)h->sandbox_read,
        .workspace = len > 0 && (size_t)len < sizeof(workspace) - 1 && workspace[0] == '/'
                         ? workspace
                         : NULL,
    };
    st->argv = argv;
    st->envp = envp;
    st->devnull = -1;
    st->drain_ms = JPT__DRAIN_MS;
    st->contain = h->contain;
    st->sandbox = h->sandbox_mode != JPT_SANDBOX_OFF ? &spec : NULL;
    int rc = jpt__vfs_serve_spawn(h->server, st, ops, &h->sandbox, &h->err, &h->session);
    jpt__buf_free(&path);
    h->spawned = rc == JPT_OK;
    h->sandboxed = rc == JPT_OK && st->sandbox != NULL;
    return rc;
}

/* Starts the session: a child (`argv`) or attached fds. */
static int start(jpt_vfs_host *h, const char *const argv[], int rfd, int wfd,
                 const char *tool_json)
{
    json_t *tool = NULL;
    char *texts[3] = {NULL, NULL, NULL};
    jpt__vfs_start st = {
        .policy = h->policy,
        .files = h->files,
        .request_timeout_ms = h->request_timeout_ms,
        .kill_grace_ms = h->kill_grace_ms,
        .limits = h->limits,
        .sandbox_cache = h->sandbox_cache,
        .run_sandbox_mode = h->sandbox_mode,
        .sandbox_hint = "jpt_vfs_host_options.sandbox_read (Python: VfsHost(sandbox_read=…))",
        /* The host passes PATH alone (spawn_tool). */
        .env_hint = "its command line: [\"env\", \"NAME=value\", …, the tool's command]",
    };
    jpt__vfs_session_ops ops = host_ops;
    int rc;

    if (h->started)
        return jpt__err(&h->err, JPT_ERR_STATE, "a tool was started on this host already");
    ops.ud = h;
    if ((rc = read_tool(h, tool_json, &tool, &st.init, texts)) == JPT_OK) {
        if (argv != NULL)
            rc = spawn_tool(h, argv, &st, &ops);
        else
            rc = jpt__vfs_serve_attach(h->server, &st, rfd, wfd, &ops, &h->err, &h->session);
    }
    json_decref(tool);
    for (size_t i = 0; i < 3; i++)
        jpt__free(texts[i]);
    if (rc == JPT_OK)
        h->started = true;
    return rc;
}

JPT_EXPORT int jpt_vfs_host_spawn(jpt_vfs_host *h, const char *const argv[],
                                  const char *tool_json)
{
    if (h == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&h->err);
    if (argv == NULL || argv[0] == NULL)
        return jpt__err(&h->err, JPT_ERR_INVALID, "spawn: no program to run");
    return start(h, argv, -1, -1, tool_json);
}

JPT_EXPORT int jpt_vfs_host_attach(jpt_vfs_host *h, int read_fd, int write_fd,
                                   const char *tool_json)
{
    if (h == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&h->err);
    if (read_fd < 0 || write_fd < 0)
        return jpt__err(&h->err, JPT_ERR_INVALID, "attach: a negative fd");
    return start(h, NULL, read_fd, write_fd, tool_json);
}

JPT_EXPORT int jpt_vfs_host_get_fd(const jpt_vfs_host *h)
{
    return h != NULL ? jpt__loop_fd(h->loop) : JPT_ERR_INVALID;
}

JPT_EXPORT int jpt_vfs_host_get_timeout(const jpt_vfs_host *h)
{
    return h != NULL ? jpt__loop_timeout(h->loop) : JPT_ERR_INVALID;
}

JPT_EXPORT int jpt_vfs_host_dispatch(jpt_vfs_host *h)
{
    if (h == NULL)
        return JPT_ERR_INVALID;
    int rc = jpt__loop_dispatch(h->loop);
    if (rc == JPT_ERR_IO)
        return jpt__err(&h->err, rc, "dispatch: waiting for events: %s", strerror(errno));
    return rc;
}

JPT_EXPORT int jpt_vfs_host_run(jpt_vfs_host *h, int timeout_ms)
{
    if (h == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&h->err);
    if (!h->started)
        return jpt__err(&h->err, JPT_ERR_STATE, "run: no tool was started");
    uint64_t deadline = timeout_ms >= 0 ? jpt__loop_deadline_ms(timeout_ms) : 0;
    /* Issue 17 §4: the wait is the dispatch's own epoll_wait, and SIGPIPE
     * stays blocked for the run rather than for each write to the tool. */
    jpt__sigpipe_hold hold;
    jpt__process_sigpipe_hold(&hold);
    int rc;
    for (;;) {
        int wait = -1;
        uint64_t now = timeout_ms >= 0 ? jpt__loop_now() : 0;
        if (timeout_ms >= 0)
            wait = now >= deadline ? 0 : (int)((deadline - now + 999999u) / 1000000u);
        int more = jpt__loop_run_once(h->loop, wait);
        if (more < 0) {
            rc = jpt__err(&h->err, more, "run: waiting for events: %s", strerror(errno));
            break;
        }
        rc = JPT_OK;
        if (h->done)
            break;
        if (more == 0 && timeout_ms >= 0 && jpt__loop_now() >= deadline) {
            rc = jpt__err(&h->err, JPT_ERR_TIMEOUT, "run: the tool has not ended");
            break;
        }
    }
    jpt__process_sigpipe_release(&hold);
    return rc;
}

JPT_EXPORT int jpt_vfs_host_apply(jpt_vfs_host *h, const char *input_json)
{
    if (h == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&h->err);
    if (input_json == NULL)
        return jpt__err(&h->err, JPT_ERR_INVALID, "apply: the input is NULL");
    if (h->session == NULL || h->done)
        return jpt__err(&h->err, JPT_ERR_STATE, "apply: no tool is running");
    int rc = jpt__vfs_session_apply(h->session, input_json, strlen(input_json));
    if (rc == JPT_ERR_INVALID)
        return jpt__err(&h->err, rc, "apply: the input is not JSON");
    if (rc == JPT_ERR_STATE)
        return jpt__err(&h->err, rc, "apply: the tool is ending");
    return rc < 0 ? jpt__err(&h->err, rc, "apply: out of memory") : JPT_OK;
}

JPT_EXPORT int jpt_vfs_host_cancel(jpt_vfs_host *h)
{
    if (h == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&h->err);
    if (h->session == NULL || h->done)
        return jpt__err(&h->err, JPT_ERR_STATE, "cancel: no tool is running");
    jpt__vfs_session_cancel(h->session);
    return JPT_OK;
}

JPT_EXPORT int jpt_vfs_host_state(jpt_vfs_host *h, jpt_state **out)
{
    if (out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    if (h == NULL)
        return JPT_ERR_INVALID;
    if (!h->started)
        return jpt__err(&h->err, JPT_ERR_STATE, "state: no tool was started");
    if (h->state == NULL)
        return JPT_ERR_AGAIN;
    *out = jpt_state_ref(h->state);
    return JPT_OK;
}

JPT_EXPORT int jpt_vfs_host_sandbox(jpt_vfs_host *h, unsigned *enforced, const char **report)
{
    if (enforced != NULL)
        *enforced = 0;
    if (report != NULL)
        *report = NULL;
    if (h == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&h->err);
    if (!h->started)
        return jpt__err(&h->err, JPT_ERR_STATE, "sandbox: no tool was started");
    if (!h->spawned)
        return jpt__err(&h->err, JPT_ERR_STATE,
                        "sandbox: the tool was attached: its process is the application's");
    if (enforced != NULL)
        *enforced = h->sandboxed ? h->sandbox.enforced : 0;
    if (report != NULL)
        *report = h->sandboxed ? h->sandbox.text : "off: the sandbox mode is \"off\"";
    return JPT_OK;
}

JPT_EXPORT int jpt_vfs_host_done(const jpt_vfs_host *h)
{
    return h != NULL && h->done;
}

JPT_EXPORT void jpt_vfs_host_set_policy_handler(jpt_vfs_host *h, jpt_policy_fn fn, void *ud)
{
    if (h == NULL)
        return;
    h->policy_fn = fn;
    h->policy_ud = ud;
}

JPT_EXPORT const char *jpt_vfs_host_errmsg(const jpt_vfs_host *h)
{
    return h != NULL ? h->err.text : "";
}

JPT_EXPORT void jpt_vfs_host_free(jpt_vfs_host *h)
{
    if (h == NULL)
        return;
    jpt__vfs_session_free(h->session);
    /* What is left of reaped children (their fds and cgroups) goes before
     * the containment that released them. */
    if (h->loop != NULL)
        jpt__loop_release_now(h->loop);
    jpt__contain_free(h->contain);
    jpt__vfs_server_free(h->server);
    jpt_state_unref(h->state);
    jpt_policy_free(h->policy);
    jpt__files_unref(h->files);
    jpt__loop_free(h->loop);
    jpt__sandbox_cache_free(h->sandbox_cache);
    for (size_t i = 0; h->sandbox_read != NULL && h->sandbox_read[i] != NULL; i++)
        jpt__free(h->sandbox_read[i]);
    jpt__free(h->sandbox_read);
    jpt__free(h);
}
