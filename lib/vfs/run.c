/* process.run (run.h): the request checked, the child started in the
 * workspace with a clean environment, its output scrubbed and kept head
 * and tail, its timeout, and D11's result. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "vfs/run.h"
#include "vfs/scrub.h"

/* How long output is read after the child exits, for a grandchild that
 * holds the pipes (the group's stragglers are killed then). */
#define DRAIN_MS 100
/* execvp's default search path, for a host without PATH. */
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

struct jpt__vfs_run {
    jpt__loop *loop;
    jpt__child *child;
    jpt__files_done_fn done;
    void *ud;
    char shown[256];          /* the program, quoted for messages */
    jpt__scrub_set *secrets;
    jpt__scrubber scrub[2];   /* stdout, stderr */
    jpt__capture kept[2];
    int failed;               /* scrubbing failed: nothing of it is shown */
    jpt__timer timer;
    int timeout_ms;
    int kill_grace_ms;
    bool timed_out;
};

static void refuse(jpt__files_done_fn done, void *ud, int status, const char *shown,
                   const char *fmt, ...) JPT__PRINTF(5, 6);

/* Fails the request at once: "process.run '<program>': <why>". */
static void refuse(jpt__files_done_fn done, void *ud, int status, const char *shown,
                   const char *fmt, ...)
{
    char why[768], message[1100];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(message, sizeof(message), "process.run '%s': %s", shown, why);
    done(ud, status, NULL, 0, message);
}

/* ---- The checks ------------------------------------------------------------------------ */

static bool listed(const jpt__policy_command *cmd, const char *name)
{
    for (size_t i = 0; i < cmd->n_envs; i++)
        if (strcmp(cmd->envs[i], name) == 0)
            return true;
    return false;
}

/* Every variable asked for may be forwarded; else the request is refused
 * (done has run) and false returned. */
static bool envs_allowed(const jpt__vfs_params *p, const jpt__policy_command *cmd,
                         const char *shown, jpt__files_done_fn done, void *ud)
{
    for (size_t i = 0; i < p->nenvs; i++) {
        const char *name = p->envs[i];
        if (!jpt__policy_env_name(name)) {
            char quoted[256];
            jpt__files_path_quote(name, strlen(name), quoted);
            refuse(done, ud, JPT_ERR_INVALID, shown,
                   "envs[%zu] '%s' is not an environment variable name (letters, digits and "
                   "'_', not starting with a digit)",
                   i, quoted);
            return false;
        }
        if (strcmp(name, "PATH") == 0)
            continue; /* always given */
        if (jpt__policy_env_is_loader(name)) {
            refuse(done, ud, JPT_ERR_DENIED, shown,
                   "envs[%zu] '%.80s' is read by the dynamic loader or the C library to load "
                   "code or files, and is never forwarded",
                   i, name);
            return false;
        }
        if (cmd == NULL) {
            refuse(done, ud, JPT_ERR_DENIED, shown,
                   "envs[%zu] '%.80s' cannot be forwarded: commands has no rule for this "
                   "program",
                   i, name);
            return false;
        }
        if (!listed(cmd, name)) {
            refuse(done, ud, JPT_ERR_DENIED, shown, "envs[%zu] '%.80s' is not in commands.%s.envs",
                   i, name, shown);
            return false;
        }
    }
    return true;
}

/* The policy's target: the JSON argv. */
static int argv_json(const jpt__vfs_params *p, jpt__buf *out)
{
    int rc = jpt__buf_putc(out, '[');

    if (rc == JPT_OK)
        rc = jpt__buf_json_string(out, p->program, strlen(p->program));
    for (size_t i = 0; rc == JPT_OK && i < p->nargs; i++)
        if ((rc = jpt__buf_putc(out, ',')) == JPT_OK)
            rc = jpt__buf_json_string(out, p->args[i], strlen(p->args[i]));
    return rc == JPT_OK ? jpt__buf_putc(out, ']') : rc;
}

/* The policy's verdict through the session's guard: true to go on. */
static bool allowed(const jpt__vfs_params *p, const char *shown, jpt__files_guard_fn guard,
                    void *guard_ud, jpt__files_done_fn done, void *ud, int *rc)
{
    jpt__buf target = JPT__BUF_INIT;
    char why[512] = "";

    *rc = argv_json(p, &target);
    if (*rc < 0) {
        jpt__buf_free(&target);
        return false;
    }
    int verdict = guard != NULL ? guard(guard_ud, JPT__FILES_ACCESS_READ, target.data, why,
                                        sizeof(why))
                                : JPT_OK;
    jpt__buf_free(&target);
    if (verdict == JPT_OK)
        return true;
    refuse(done, ud, verdict, shown, "%s", why[0] != '\0' ? why : "denied by the access policy");
    return false;
}

/* ---- The environment ------------------------------------------------------------------ */

typedef struct child_env {
    char **envp;       /* "NAME=value", NULL-terminated */
    size_t n;
    const char **values; /* the forwarded values, for the scrubber */
    size_t *lens;
    size_t nvalues;
} child_env;

static void child_env_free(child_env *e)
{
    for (size_t i = 0; e->envp != NULL && i < e->n; i++)
        jpt__free(e->envp[i]);
    jpt__free(e->envp);
    jpt__free(e->values);
    jpt__free(e->lens);
}

static int add_var(child_env *e, const char *name, const char *value)
{
    jpt__buf b = JPT__BUF_INIT;

    if (jpt__buf_printf(&b, "%s=%s", name, value) < 0 || (e->envp[e->n] = jpt__buf_take(&b)) == NULL) {
        jpt__buf_free(&b);
        return JPT_ERR_NOMEM;
    }
    e->n++;
    return JPT_OK;
}

/* PATH, and the variables asked for that the host has, each once. */
static int make_env(const jpt__vfs_params *p, child_env *e)
{
    const char *path = getenv("PATH");

    memset(e, 0, sizeof(*e));
    if ((e->envp = jpt__calloc(p->nenvs + 2, sizeof(char *))) == NULL ||
        (e->values = jpt__calloc(p->nenvs + 1, sizeof(char *))) == NULL ||
        (e->lens = jpt__calloc(p->nenvs + 1, sizeof(size_t))) == NULL)
        return JPT_ERR_NOMEM;
    if (add_var(e, "PATH", path != NULL ? path : DEFAULT_PATH) < 0)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < p->nenvs; i++) {
        const char *name = p->envs[i], *value = getenv(name);
        bool seen = strcmp(name, "PATH") == 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(p->envs[j], name) == 0;
        if (seen || value == NULL)
            continue;
        if (add_var(e, name, value) < 0)
            return JPT_ERR_NOMEM;
        e->values[e->nvalues] = value;
        e->lens[e->nvalues++] = strlen(value);
    }
    return JPT_OK;
}

/* ---- The child ----------------------------------------------------------------------- */

static void run_free(jpt__vfs_run *r)
{
    jpt__loop_timer_stop(r->loop, &r->timer);
    if (r->child != NULL)
        jpt__child_free(r->child);
    for (int i = 0; i < 2; i++) {
        jpt__scrubber_free(&r->scrub[i]);
        jpt__capture_free(&r->kept[i]);
    }
    jpt__scrub_set_free(r->secrets);
    jpt__free(r);
}

static int keep(void *ud, const char *p, size_t n)
{
    return jpt__capture_append(ud, p, n);
}

static void on_output(jpt__child *c, int stream, const char *p, size_t n, void *ud)
{
    jpt__vfs_run *r = ud;

    (void)c;
    /* Fail closed: output that could not be scrubbed is never shown. */
    if (r->failed == 0)
        r->failed = jpt__scrubber_feed(&r->scrub[stream == JPT__STDERR], p, n);
}

/* {"stdout","stderr","exit_code"[,"signal"]} */
static int result_json(jpt__vfs_run *r, const jpt__exit *e, jpt__buf *out)
{
    static const char *const names[2] = {"{\"stdout\":", ",\"stderr\":"};
    int rc = JPT_OK;

    for (int i = 0; i < 2 && rc == JPT_OK; i++) {
        jpt__buf text = JPT__BUF_INIT;
        if ((rc = jpt__capture_text(&r->kept[i], &text)) == JPT_OK &&
            (rc = jpt__buf_puts(out, names[i])) == JPT_OK)
            rc = jpt__buf_json_string(out, text.data != NULL ? text.data : "", text.len);
        jpt__buf_free(&text);
    }
    if (rc < 0)
        return rc;
    if (e->known && e->signal == 0)
        return jpt__buf_printf(out, ",\"exit_code\":%d}", e->code);
    if (e->known)
        return jpt__buf_printf(out, ",\"exit_code\":null,\"signal\":%d}", e->signal);
    return jpt__buf_puts(out, ",\"exit_code\":null}");
}

static void on_exited(jpt__child *c, const jpt__exit *e, void *ud)
{
    jpt__vfs_run *r = ud;
    jpt__buf result = JPT__BUF_INIT;
    char message[512];
    jpt__exit status = *e; /* it lives in the child */

    r->child = NULL;
    jpt__child_free(c);
    jpt__loop_timer_stop(r->loop, &r->timer);
    for (int i = 0; i < 2 && r->failed == 0; i++)
        r->failed = jpt__scrubber_finish(&r->scrub[i]);
    int rc = r->failed != 0 ? r->failed : result_json(r, &status, &result);
    if (rc < 0) {
        snprintf(message, sizeof(message),
                 "process.run '%s': out of memory keeping its output (nothing of it is shown)",
                 r->shown);
        r->done(r->ud, JPT_ERR_NOMEM, NULL, 0, message);
    } else if (r->timed_out) {
        snprintf(message, sizeof(message),
                 "process.run '%s': timed out after %d ms: its process group was killed",
                 r->shown, r->timeout_ms);
        r->done(r->ud, JPT_ERR_TIMEOUT, result.data, result.len, message);
    } else
        r->done(r->ud, JPT_OK, result.data, result.len, NULL);
    jpt__buf_free(&result);
    run_free(r);
}

static void on_timeout(jpt__timer *t)
{
    jpt__vfs_run *r = t->ud;

    r->timed_out = true;
    jpt__log(JPT_LOG_INFO, "process.run '%s' ran past %d ms: SIGTERM to its group", r->shown,
             r->timeout_ms);
    jpt__child_terminate(r->child, r->kill_grace_ms);
}

static const jpt__child_ops child_ops = {on_output, on_exited, NULL};

/* The scrubbers and the child; on failure `done` has run. */
static int start(jpt__vfs_run *r, const jpt__vfs_run_env *env, const jpt__vfs_params *p,
                 int root)
{
    child_env ce;
    jpt__errbuf err = {{0}};
    int rc = make_env(p, &ce);

    if (rc == JPT_OK)
        rc = jpt__scrub_set_new(ce.values, ce.lens, ce.nvalues, &r->secrets);
    const char **argv = rc == JPT_OK ? jpt__calloc(p->nargs + 2, sizeof(char *)) : NULL;
    if (rc == JPT_OK && argv == NULL)
        rc = JPT_ERR_NOMEM;
    if (rc < 0) {
        child_env_free(&ce);
        return rc;
    }
    for (int i = 0; i < 2; i++)
        jpt__scrubber_init(&r->scrub[i], r->secrets, keep, &r->kept[i]);
    argv[0] = p->program;
    for (size_t i = 0; i < p->nargs; i++)
        argv[i + 1] = p->args[i];
    jpt__vfs_confine *confine = NULL;
    /* Issue 15 §3: confined as the tool that asked, whose mode it has; a
     * child without a cgroup of its own (to be killed with everything in
     * it) gets a PID namespace, whose end ends what it started. */
    bool own_cgroup = env->contain != NULL && jpt__contain_mode(env->contain) == JPT__CONTAIN_CGROUP;
    if (env->sandbox_mode != JPT_SANDBOX_OFF)
        rc = jpt__vfs_confine_new(env->policy, root, env->sandbox_mode, !own_cgroup,
                                  env->sandbox_cache, &confine, &err);
    jpt__sandbox_report report;
    jpt__spawn sp = {
        .argv = argv,
        .envp = (const char *const *)ce.envp,
        .cwd_fd = &root,
        .devnull = -1,
        .drain_ms = DRAIN_MS,
        .contain = env->contain,
        .sandbox = confine != NULL ? jpt__vfs_confine_spec(confine) : NULL,
        .sandbox_report = &report,
    };
    if (rc == JPT_OK)
        rc = jpt__child_spawn(env->loop, &sp, &child_ops, r, &r->child, &err);
    if (rc == JPT_OK && confine != NULL)
        jpt__log((report.enforced & JPT__SANDBOX_ENFORCED_MINIMUM) ==
                         JPT__SANDBOX_ENFORCED_MINIMUM
                     ? JPT_LOG_DEBUG
                     : JPT_LOG_WARNING,
                 "process.run '%s' pid %d (%zu entries walked) runs in the OS sandbox: %s",
                 r->shown, (int)jpt__child_pid(r->child), jpt__vfs_confine_scanned(confine),
                 report.text);
    jpt__vfs_confine_free(confine);
    jpt__free(argv);
    child_env_free(&ce);
    if (rc < 0) {
        if (rc != JPT_ERR_NOMEM)
            refuse(r->done, r->ud, rc, r->shown, "%s", err.text);
        return rc;
    }
    if (jpt__loop_timer_start(env->loop, &r->timer, jpt__loop_deadline_ms(r->timeout_ms)) < 0) {
        /* No timeout is no run: a process must never outlive its limit. */
        jpt__child_free(r->child);
        r->child = NULL;
        return JPT_ERR_NOMEM;
    }
    return JPT_OK;
}

int jpt__vfs_run_submit(const jpt__vfs_run_env *env, const jpt__vfs_params *p,
                        jpt__files_guard_fn guard, void *guard_ud, jpt__files_done_fn done,
                        void *ud, jpt__vfs_run **pending)
{
    char shown[256];
    int rc = JPT_OK;

    *pending = NULL;
    jpt__files_path_quote(p->program, strlen(p->program), shown);
    if (p->program[0] != '/' && strchr(p->program, '/') != NULL) {
        refuse(done, ud, JPT_ERR_INVALID, shown,
               "'program' is a relative path: name a program found in PATH, or give its "
               "absolute path");
        return JPT_OK;
    }
    int root = jpt__files_root_fd(env->files);
    if (root < 0) {
        refuse(done, ud, JPT_ERR_UNSUPPORTED, shown,
               "not available: the workspace is not a directory of this machine (a memory or "
               "host-supplied backend), so there is nowhere to run a process");
        return JPT_OK;
    }
    const jpt__policy_command *cmd = jpt__policy_command_find(env->policy, p->program);
    if (!envs_allowed(p, cmd, shown, done, ud) ||
        !allowed(p, shown, guard, guard_ud, done, ud, &rc))
        return rc;

    jpt__vfs_run *r = jpt__calloc(1, sizeof(*r));
    if (r == NULL)
        return JPT_ERR_NOMEM;
    r->loop = env->loop;
    r->done = done;
    r->ud = ud;
    memcpy(r->shown, shown, sizeof(shown));
    r->timeout_ms = cmd != NULL ? cmd->timeout_ms : JPT_VFS_PROCESS_TIMEOUT_MS;
    r->kill_grace_ms = env->kill_grace_ms;
    size_t limit = cmd != NULL ? cmd->output_limit : JPT_VFS_PROCESS_OUTPUT_LIMIT;
    for (int i = 0; i < 2; i++)
        jpt__capture_init(&r->kept[i], limit);
    jpt__loop_timer_init(&r->timer, on_timeout, r);
    if ((rc = start(r, env, p, root)) < 0) {
        run_free(r);
        /* A refused spawn was answered; running out of memory is the
         * caller's to report. */
        return rc == JPT_ERR_NOMEM ? rc : JPT_OK;
    }
    *pending = r;
    return JPT_OK;
}

void jpt__vfs_run_cancel(jpt__vfs_run *r)
{
    run_free(r);
}
