/* process.run (run.h): the request checked, its turn in the tool's queue
 * and the owner's process slots, the child started in the workspace with
 * a clean environment (git's configuration read first, by a child of its
 * own, for what to override: policy/git.c), its output scrubbed and kept
 * head and tail, its timeout, and D11's result. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "vfs/run.h"
#include "common/scrub.h"

/* A slice of the walks before and after a run (confine.c) within one of
 * the loop's deferred calls: the loop runs them for JPT__DEFER_BUDGET_NS
 * at most, so a slice never holds other tools' work up for long
 * (issue 15, R3: 256 queued runs of a tool in a large workspace stalled
 * every other tool). */
#define SLICE_NS 1000000u
/* The most of git's configuration read before it runs. */
#define SCAN_LIMIT (1u << 20)

struct jpt__vfs_run {
    jpt__vfs_run_env env;     /* the session's, copied */
    const jpt__vfs_params *p; /* the request's, until `done` */
    jpt__child *child;
    jpt__vfs_run_done_fn done;
    void *ud;
    char shown[256];          /* the program, quoted for messages */
    jpt__scrub_set *secrets;
    jpt__scrubber scrub[2];   /* stdout, stderr */
    jpt__capture kept[2];
    int failed;               /* scrubbing failed: nothing of it is shown */
    jpt__timer timer;
    jpt__vfs_confine *confine; /* its OS sandbox, walked in slices (NULL: none) */
    jpt__repo_sweep *sweep;   /* after its request's child, in slices */
    jpt__defer slice;         /* runs the next slice of either */
    bool spawned;             /* a child of the request's ran */
    jpt__exit status;         /* the request's child's, while the sweep runs */
    int timeout_ms;
    unsigned process_limit;   /* its rule's, in its OS sandbox (0: the default) */
    bool timed_out;
    bool waiting;             /* in the queue's line */
    bool counted;             /* in queue->running: it holds a slot */
    bool git;                 /* the program is git (policy/git.c) */
    bool scanning;            /* its child is `git config --list` */
    jpt__buf scan;            /* what that printed */
    bool scan_overflow;       /* more than SCAN_LIMIT */
    jpt__vfs_run *next, *prev; /* the queue's line */
};

static void refuse(jpt__vfs_run_done_fn done, void *ud, int status, const char *shown,
                   const char *fmt, ...) JPT__PRINTF(5, 6);

/* Fails the request at once: "process.run '<program>': <why>". */
static void refuse(jpt__vfs_run_done_fn done, void *ud, int status, const char *shown,
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
                         const char *shown, jpt__vfs_run_done_fn done, void *ud)
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

/* A variable forwarded is lent only to a command line its rule allows: on
 * one the policy would ask about it is refused before anyone is asked, as
 * http's ${VAR} is (the prompt shows the command line, not the values
 * that would ride along). PATH is no secret. True to go on; else the
 * request is refused (done has run, *rc says how it went). */
static bool envs_not_asked(const jpt__vfs_params *p, const jpt_policy *policy,
                           const char *shown, jpt__vfs_run_done_fn done, void *ud, int *rc)
{
    jpt__buf target = JPT__BUF_INIT;
    size_t i = 0;

    while (i < p->nenvs && strcmp(p->envs[i], "PATH") == 0)
        i++;
    *rc = JPT_OK;
    if (i == p->nenvs)
        return true;
    if ((*rc = argv_json(p, &target)) < 0) {
        jpt__buf_free(&target);
        return false;
    }
    int verdict = jpt_policy_check(policy, JPT_ACCESS_PROCESS, target.data, NULL);
    jpt__buf_free(&target);
    if (verdict != JPT_VERDICT_ASK)
        return true; /* allowed, or refused by the guard with its reason */
    refuse(done, ud, JPT_ERR_DENIED, shown,
           "envs[%zu] '%.80s' is forwarded only to a command line that commands.%s allows: "
           "this one would need approval, which cannot be asked for a value the prompt does "
           "not show",
           i, p->envs[i], shown);
    return false;
}

/* The policy's verdict through the session's guard: true to go on. */
static bool allowed(const jpt__vfs_params *p, const char *shown, jpt__files_guard_fn guard,
                    void *guard_ud, jpt__vfs_run_done_fn done, void *ud, int *rc)
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
    size_t n, cap;
    jpt__buf path;     /* PATH's value: also where the program is looked up */
} child_env;

static void child_env_free(child_env *e)
{
    for (size_t i = 0; e->envp != NULL && i < e->n; i++)
        jpt__free(e->envp[i]);
    jpt__free(e->envp);
    jpt__buf_free(&e->path);
}

static int add_var(child_env *e, const char *name, const char *value)
{
    jpt__buf b = JPT__BUF_INIT;
    /* The entry and the terminating NULL. */
    char **grown = jpt__array_reserve(e->envp, &e->cap, e->n + 2, sizeof(char *), 16);

    if (grown == NULL)
        return JPT_ERR_NOMEM;
    e->envp = grown;
    if (jpt__buf_printf(&b, "%s=%s", name, value) < 0 || (e->envp[e->n] = jpt__buf_take(&b)) == NULL) {
        jpt__buf_free(&b);
        return JPT_ERR_NOMEM;
    }
    e->envp[++e->n] = NULL;
    return JPT_OK;
}

/* Calls `fn` with each variable of `envs` asked for that the host has
 * (PATH aside: always given), each once, and its value. */
static int each_forwarded(const jpt__vfs_params *p, int (*fn)(void *ud, const char *name,
                                                              const char *value),
                          void *ud)
{
    for (size_t i = 0; i < p->nenvs; i++) {
        const char *name = p->envs[i], *value = getenv(name);
        bool seen = strcmp(name, "PATH") == 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(p->envs[j], name) == 0;
        int rc = seen || value == NULL ? JPT_OK : fn(ud, name, value);
        if (rc < 0)
            return rc;
    }
    return JPT_OK;
}

static int forward(void *ud, const char *name, const char *value)
{
    return add_var(ud, name, value);
}

/* git's own environment, and its command-line scope: what jptool always
 * sets, then `overrides` (NULL: none). */
static int add_git(child_env *e, const jpt__git_overrides *overrides)
{
    const char *name, *value;
    char key[48], count[32];
    size_t nenv = jpt__policy_git_env(0, &name, &value);
    size_t nconfig = jpt__policy_git_config(0, &name, &value);
    size_t nover = overrides != NULL ? overrides->n : 0;
    int rc = JPT_OK;

    for (size_t i = 0; rc == JPT_OK && i < nenv; i++) {
        jpt__policy_git_env(i, &name, &value);
        rc = add_var(e, name, value);
    }
    snprintf(count, sizeof(count), "%zu", nconfig + nover);
    if (rc == JPT_OK)
        rc = add_var(e, "GIT_CONFIG_COUNT", count);
    for (size_t i = 0; rc == JPT_OK && i < nconfig + nover; i++) {
        if (i < nconfig)
            jpt__policy_git_config(i, &name, &value);
        else {
            name = overrides->keys[i - nconfig];
            value = overrides->values[i - nconfig];
        }
        snprintf(key, sizeof(key), "GIT_CONFIG_KEY_%zu", i);
        if ((rc = add_var(e, key, name)) == JPT_OK) {
            snprintf(key, sizeof(key), "GIT_CONFIG_VALUE_%zu", i);
            rc = add_var(e, key, value);
        }
    }
    return rc;
}

/* PATH, the variables asked for that the host has, and for git its
 * hardening (policy/git.c). PATH keeps the host's absolute entries only:
 * a relative one ("", ".") would find programs in the workspace, which
 * the tool may have written. */
static int make_env(const jpt__vfs_run *r, const jpt__git_overrides *overrides, child_env *e)
{
    const char *path = getenv("PATH");
    int rc;

    memset(e, 0, sizeof(*e));
    rc = jpt__path_absolute_only(path != NULL ? path : JPT__DEFAULT_PATH, &e->path);
    if (rc == JPT_OK && e->path.len == 0)
        rc = jpt__buf_puts(&e->path, JPT__DEFAULT_PATH);
    if (rc == JPT_OK && (rc = add_var(e, "PATH", e->path.data)) == JPT_OK)
        rc = each_forwarded(r->p, forward, e);
    if (rc == JPT_OK && r->git)
        rc = add_git(e, overrides);
    return rc;
}

/* The values forwarded, and every other value the policy lends (a child
 * may find one: a server that kept it, a file), which the scrubber hides. */
static int note_value(void *ud, const char *name, const char *value)
{
    (void)name;
    return jpt__policy_values_add(ud, value);
}

static int make_secrets(jpt__vfs_run *r)
{
    jpt__policy_values values = {0};
    int rc = each_forwarded(r->p, note_value, &values);

    if (rc == JPT_OK)
        rc = jpt__policy_lent_values(r->env.policy, &values);
    if (rc == JPT_OK)
        rc = jpt__policy_values_scrub_set(&values, &r->secrets);
    jpt__policy_values_free(&values);
    return rc;
}

/* ---- The child ----------------------------------------------------------------------- */

/* The run's slot is free again (its child is gone, or never started). */
static void release(jpt__vfs_run *r)
{
    jpt__vfs_run_queue *q = r->env.queue;

    if (!r->counted)
        return;
    r->counted = false;
    q->running--;
    if (q->slots != NULL)
        q->slots->give(q->slots->ud);
    if (q->head != NULL)
        jpt__loop_defer_queue(q->loop, &q->drain);
}

static void sweep_now(jpt__vfs_run *r);

static void run_free(jpt__vfs_run *r)
{
    jpt__vfs_run_queue *q = r->env.queue;

    jpt__loop_timer_stop(r->env.loop, &r->timer);
    jpt__loop_defer_cancel(r->env.loop, &r->slice);
    if (r->waiting) {
        JPT__QUEUE_REMOVE(q->head, q->tail, r);
        q->waiting--;
        r->waiting = false;
    }
    if (r->child != NULL)
        jpt__child_free(r->child);
    /* Cancelled after its child ran: what of a repository it made still
     * goes, at once. */
    if (r->spawned)
        sweep_now(r);
    jpt__repo_sweep_free(r->sweep);
    jpt__vfs_confine_free(r->confine);
    release(r);
    for (int i = 0; i < 2; i++) {
        jpt__scrubber_free(&r->scrub[i]);
        jpt__capture_free(&r->kept[i]);
    }
    jpt__scrub_set_free(r->secrets);
    jpt__buf_free(&r->scan);
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
    if (r->scanning && stream == JPT__STDOUT) {
        /* git's configuration: read here, never shown. */
        if (r->scan.len + n > SCAN_LIMIT)
            r->scan_overflow = true;
        else if (r->failed == 0)
            r->failed = jpt__buf_append(&r->scan, p, n);
        return;
    }
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

static void scanned(jpt__vfs_run *r, const jpt__exit *e);

/* The sweep after the run (run.h: what of a repository the run made
 * where it may write), when there is one to make. JPT_ERR_NOMEM. */
static int sweep_new(jpt__vfs_run *r)
{
    jpt__repos *repos = jpt__vfs_confine_repos(r->confine);

    return repos != NULL ? jpt__repo_sweep_new(repos, JPT_VFS_RUN_SCAN_MAX, &r->sweep) : JPT_OK;
}

/* The note that ends stderr when the sweep removed something: the model
 * is told, scrubbed (the names are the child's). */
static int sweep_note(jpt__vfs_run *r)
{
    size_t n = 0;
    bool failed = false;
    const char *names = r->sweep != NULL ? jpt__repo_sweep_moved(r->sweep, &n, &failed) : "";
    jpt__buf note = JPT__BUF_INIT, clean = JPT__BUF_INIT;
    int rc = JPT_OK;

    if (n == 0 && !failed)
        return JPT_OK;
    jpt__log(JPT_LOG_WARNING,
             "process.run '%s' made what git would take for a repository where it may write: "
             "%s%s",
             r->shown, n > 0 ? "moved aside " : "", n > 0 ? names : "it could not all be moved");
    if (n > 0)
        rc = jpt__buf_printf(&note,
                             "\n[jptool: moved aside %s: a repository made where this process "
                             "may write, whose configuration git would run]\n",
                             names);
    if (rc == JPT_OK && failed)
        rc = jpt__buf_puts(&note, "\n[jptool: a repository made where this process may write "
                                  "could not all be moved aside]\n");
    if (rc == JPT_OK)
        rc = jpt__scrub(r->secrets, note.data, note.len, &clean, NULL);
    if (rc == JPT_OK && clean.len > 0)
        rc = jpt__capture_append(&r->kept[1], clean.data, clean.len);
    jpt__buf_free(&note);
    jpt__buf_free(&clean);
    return rc;
}

/* The request's child is reaped and swept after: D11's result. */
static void finish_run(jpt__vfs_run *r)
{
    jpt__buf result = JPT__BUF_INIT;
    char message[512];

    for (int i = 0; i < 2 && r->failed == 0; i++)
        r->failed = jpt__scrubber_finish(&r->scrub[i]);
    if (r->failed == 0)
        r->failed = sweep_note(r);
    int rc = r->failed != 0 ? r->failed : result_json(r, &r->status, &result);
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
    r->spawned = false; /* swept */
    run_free(r);
}

static void on_exited(jpt__child *c, const jpt__exit *e, void *ud)
{
    jpt__vfs_run *r = ud;

    r->status = *e; /* it lives in the child */
    r->child = NULL;
    jpt__child_free(c);
    if (r->scanning && !r->timed_out) {
        scanned(r, &r->status);
        return;
    }
    release(r);
    jpt__loop_timer_stop(r->env.loop, &r->timer);
    /* What of a repository it made where it may write goes before the
     * tool hears of its end (run.h, "The sweep"). */
    if (r->confine != NULL) {
        if (sweep_new(r) < 0) {
            r->failed = JPT_ERR_NOMEM;
            sweep_now(r);
        } else if (r->sweep != NULL) {
            jpt__loop_defer_queue(r->env.loop, &r->slice);
            return;
        }
    }
    finish_run(r);
}

static void on_timeout(jpt__timer *t)
{
    jpt__vfs_run *r = t->ud;

    r->timed_out = true;
    jpt__log(JPT_LOG_INFO, "process.run '%s' ran past %d ms: SIGTERM to its group", r->shown,
             r->timeout_ms);
    jpt__child_terminate(r->child, r->env.kill_grace_ms);
}

static const jpt__child_ops child_ops = {on_output, on_exited, NULL};

/* Spawns `argv` in the workspace (for git, with `overrides` too). A
 * refused spawn has run `done` (r->done is NULL then); any other failure
 * is JPT_ERR_NOMEM. */
static int spawn_child(jpt__vfs_run *r, const char *const *argv,
                       const jpt__git_overrides *overrides)
{
    child_env ce;
    jpt__errbuf err = {{0}};
    int root = jpt__files_root_fd(r->env.files);
    int rc = make_env(r, overrides, &ce);

    if (rc < 0) {
        child_env_free(&ce);
        return rc;
    }
    jpt__vfs_confine *confine = r->confine;
    jpt__sandbox_report report;
    jpt__spawn sp = {
        .argv = argv,
        .path = ce.path.data,
        .envp = (const char *const *)ce.envp,
        .cwd_fd = &root,
        .devnull = -1,
        /* Output is read that long after the child exits, for a
         * grandchild that holds the pipes; then the group's stragglers
         * are killed. */
        .drain_ms = JPT__DRAIN_MS,
        .contain = r->env.contain,
        .sandbox = confine != NULL ? jpt__vfs_confine_spec(confine) : NULL,
        .sandbox_report = &report,
    };
    rc = jpt__child_spawn(r->env.loop, &sp, &child_ops, r, &r->child, &err);
    if (rc == JPT_OK)
        r->spawned = true;
    if (rc == JPT_OK && confine != NULL)
        jpt__log((report.enforced & JPT__SANDBOX_ENFORCED_MINIMUM) ==
                         JPT__SANDBOX_ENFORCED_MINIMUM
                     ? JPT_LOG_DEBUG
                     : JPT_LOG_WARNING,
                 "process.run '%s' pid %d (%zu entries walked) runs in the OS sandbox: %s",
                 r->shown, (int)jpt__child_pid(r->child), jpt__vfs_confine_scanned(confine),
                 report.text);
    child_env_free(&ce);
    if (rc < 0 && rc != JPT_ERR_NOMEM) {
        /* Like the output, the reason goes through the scrubber. */
        jpt__buf clean = JPT__BUF_INIT;
        if (jpt__scrub(r->secrets, err.text, strlen(err.text), &clean, NULL) < 0) {
            jpt__buf_free(&clean);
            return JPT_ERR_NOMEM;
        }
        refuse(r->done, r->ud, rc, r->shown, "%s", clean.data != NULL ? clean.data : "");
        jpt__buf_free(&clean);
        r->done = NULL;
    }
    return rc;
}

/* The request's program and arguments; for `git diff` when the
 * configuration names an external diff (git.c), --no-ext-diff after the
 * subcommand. */
static int spawn_request(jpt__vfs_run *r, const jpt__git_overrides *overrides)
{
    const jpt__vfs_params *p = r->p;
    const char **argv = jpt__calloc(p->nargs + 3, sizeof(char *));
    size_t sub = p->nargs, k = 0;
    int rc;

    if (argv == NULL)
        return JPT_ERR_NOMEM;
    if (overrides != NULL && overrides->external_diff) {
        sub = jpt__policy_git_subcommand(p->args, p->nargs);
        if (sub < p->nargs && strcmp(p->args[sub], "diff") != 0)
            sub = p->nargs;
    }
    argv[k++] = p->program;
    for (size_t i = 0; i < p->nargs; i++) {
        argv[k++] = p->args[i];
        if (i == sub)
            argv[k++] = "--no-ext-diff";
    }
    rc = spawn_child(r, argv, overrides);
    jpt__free(argv);
    return rc;
}

/* The end of a failed step: `done` with the failure (unless it ran), and
 * the run freed. */
static void fail(jpt__vfs_run *r, int status, const char *why)
{
    if (r->done != NULL)
        refuse(r->done, r->ud, status, r->shown, "%s", why);
    run_free(r);
}

/* The last line of what the scan wrote on stderr (scrubbed), for a
 * message. */
static void scan_complaint(jpt__vfs_run *r, char *out, size_t cap)
{
    jpt__buf text = JPT__BUF_INIT;

    out[0] = '\0';
    if (jpt__scrubber_finish(&r->scrub[1]) < 0 || jpt__capture_text(&r->kept[1], &text) < 0 ||
        text.data == NULL) {
        jpt__buf_free(&text);
        return;
    }
    while (text.len > 0 && (text.data[text.len - 1] == '\n' || text.data[text.len - 1] == '\r'))
        text.data[--text.len] = '\0';
    const char *line = strrchr(text.data, '\n');
    snprintf(out, cap, ": %.300s", line != NULL ? line + 1 : text.data);
    jpt__buf_free(&text);
}

/* git's configuration is read: the request's git runs with what it
 * needs overridden, or is refused. */
static void scanned(jpt__vfs_run *r, const jpt__exit *e)
{
    jpt__git_overrides overrides;
    char why[512], complaint[320];
    int rc;

    r->scanning = false;
    memset(&overrides, 0, sizeof(overrides));
    if (r->failed != 0) {
        fail(r, JPT_ERR_NOMEM, "out of memory reading git's configuration");
        return;
    }
    if (!e->known || e->signal != 0 || e->code != 0) {
        scan_complaint(r, complaint, sizeof(complaint));
        snprintf(why, sizeof(why), "its configuration could not be read first (git config "
                                   "--list %s %d)%s",
                 e->known && e->signal != 0 ? "was killed by signal" : "exited",
                 e->signal != 0 ? e->signal : e->code, complaint);
        fail(r, JPT_ERR_IO, why);
        return;
    }
    if (r->scan_overflow) {
        fail(r, JPT_ERR_LIMIT, "its configuration holds more than 1 MiB, more than jptool "
                               "checks");
        return;
    }
    if ((rc = jpt__policy_git_overrides(r->scan.data, r->scan.len, &overrides, why,
                                        sizeof(why))) < 0) {
        /* A git too old is the host's failure (-32603), not a method the
         * host lacks (-32601, what JPT_ERR_UNSUPPORTED says here). */
        fail(r, rc == JPT_ERR_UNSUPPORTED ? JPT_ERR_IO : rc,
             rc == JPT_ERR_NOMEM ? "out of memory reading git's configuration" : why);
        return;
    }
    /* What the scan wrote on stderr is not the request's. */
    for (int i = 0; i < 2; i++) {
        jpt__scrubber_free(&r->scrub[i]);
        jpt__capture_reset(&r->kept[i]);
        jpt__scrubber_init(&r->scrub[i], r->secrets, keep, &r->kept[i]);
    }
    rc = spawn_request(r, &overrides);
    jpt__policy_git_overrides_free(&overrides);
    if (rc < 0)
        fail(r, rc, "out of memory starting the process");
}

/* `git config --list`, with the request's options of git that choose the
 * repository and configuration (a rule may name -C or --git-dir), so that
 * it reads what the request's git will. */
static int spawn_scan(jpt__vfs_run *r)
{
    static const char *const scan_args[] = {"config", "--list", "-z", "--show-scope"};
    const jpt__vfs_params *p = r->p;
    const char **argv = jpt__calloc(p->nargs + 6, sizeof(char *));

    if (argv == NULL)
        return JPT_ERR_NOMEM;
    argv[0] = p->program;
    size_t k = 1 + jpt__policy_git_where(p->args, p->nargs, argv + 1);
    for (size_t i = 0; i < sizeof(scan_args) / sizeof(scan_args[0]); i++)
        argv[k++] = scan_args[i];
    int rc = spawn_child(r, argv, NULL);
    jpt__free(argv);
    return rc;
}

/* The first child: for git, `git config --list`, whose output says what
 * to override (git.c); else the request's; and its timeout. A refused
 * spawn has run `done`; any other failure is JPT_ERR_NOMEM, and `done`
 * has not run. */
static int go(jpt__vfs_run *r)
{
    int rc;

    if (r->git) {
        r->scanning = true;
        rc = spawn_scan(r);
    } else
        rc = spawn_request(r, NULL);
    if (rc < 0)
        return rc;
    if (jpt__loop_timer_start(r->env.loop, &r->timer, jpt__loop_deadline_ms(r->timeout_ms)) < 0) {
        /* No timeout is no run: a process must never outlive its limit. */
        jpt__child_free(r->child);
        r->child = NULL;
        return JPT_ERR_NOMEM;
    }
    return JPT_OK;
}

/* The sweep done (or failed, `err` saying why): the result. */
static void swept(jpt__vfs_run *r, int rc, const jpt__errbuf *err)
{
    if (rc == JPT_ERR_LIMIT)
        jpt__log(JPT_LOG_WARNING,
                 "process.run '%s': after it, the paths it may write hold %s: too many to find "
                 "what of a repository it made there",
                 r->shown, err->text);
    else if (rc < 0)
        jpt__log(JPT_LOG_WARNING, "process.run '%s': after it: %s", r->shown, err->text);
    if (rc == JPT_ERR_NOMEM)
        r->failed = rc;
    finish_run(r);
}

/* A slice of the walk before the run or of the sweep after it, from the
 * loop (issue 15, R3). */
static void on_slice(jpt__defer *d)
{
    jpt__vfs_run *r = d->ud;
    jpt__errbuf err = {{0}};
    int rc;

    if (r->sweep != NULL) {
        if ((rc = jpt__repo_sweep_step(r->sweep, SLICE_NS, &err)) == 1)
            jpt__loop_defer_queue(r->env.loop, &r->slice);
        else
            swept(r, rc, &err);
        return;
    }
    if ((rc = jpt__vfs_confine_step(r->confine, SLICE_NS, &err)) == 1) {
        jpt__loop_defer_queue(r->env.loop, &r->slice);
        return;
    }
    if (rc == JPT_OK && (rc = go(r)) == JPT_OK)
        return;
    if (rc == JPT_ERR_NOMEM)
        fail(r, rc, "out of memory starting the process");
    else if (r->done != NULL)
        fail(r, rc, err.text);
    else
        run_free(r);
}

/* Removes at once what of a repository the child made (a run cancelled
 * or failed after its child ran), and logs it. */
static void sweep_now(jpt__vfs_run *r)
{
    jpt__errbuf err = {{0}};
    size_t n = 0;
    bool failed = false;
    int rc = JPT_OK;

    r->spawned = false;
    if (r->sweep == NULL && r->confine != NULL)
        rc = sweep_new(r);
    if (rc == JPT_OK && r->sweep != NULL)
        rc = jpt__repo_sweep_step(r->sweep, 0, &err);
    const char *names = r->sweep != NULL ? jpt__repo_sweep_moved(r->sweep, &n, &failed) : "";
    if (rc < 0 || n > 0 || failed)
        jpt__log(JPT_LOG_WARNING,
                 "process.run '%s' (cancelled): what of a repository was made where it may "
                 "write: %s%s%s",
                 r->shown, n > 0 ? "moved aside " : "", names,
                 rc < 0 ? err.text : failed ? " (not all could be moved)" : "");
}

/* The scrubbers, and the walk that finds what the child may not read
 * (in slices from the loop, then `go`), or the first child at once. A
 * refused start has run `done`; any other failure is JPT_ERR_NOMEM, and
 * `done` has not run. */
static int start(jpt__vfs_run *r)
{
    jpt__errbuf err = {{0}};
    int rc = make_secrets(r);

    if (rc < 0)
        return rc;
    for (int i = 0; i < 2; i++)
        jpt__scrubber_init(&r->scrub[i], r->secrets, keep, &r->kept[i]);
    /* Issue 15 §3: confined as the tool that asked, whose mode it has (a
     * child without a cgroup of its own that ends and bounds it gets a
     * PID namespace: process.c). One walk serves both of git's
     * children. */
    if (r->env.sandbox_mode == JPT_SANDBOX_OFF)
        return go(r);
    rc = jpt__vfs_confine_new(r->env.policy, jpt__files_root_fd(r->env.files),
                              r->env.sandbox_mode, r->git, r->process_limit,
                              r->env.sandbox_cache, &r->confine, &err);
    if (rc == JPT_ERR_NOMEM)
        return rc;
    if (rc < 0) {
        refuse(r->done, r->ud, rc, r->shown, "%s", err.text);
        r->done = NULL;
        return rc;
    }
    jpt__loop_defer_queue(r->env.loop, &r->slice);
    return JPT_OK;
}

/* Starts a run that holds a slot: true; else `done` has run and the run
 * is freed. */
static bool launch(jpt__vfs_run *r)
{
    int rc = start(r);

    if (rc == JPT_OK)
        return true;
    fail(r, rc, "out of memory starting the process");
    return false;
}

/* ---- The queue ---------------------------------------------------------------------- */

/* One of the owner's slots for a run of `q`, counted: true, or false when
 * the queue's bound or the owner has none. */
static bool take_slot(jpt__vfs_run_queue *q, jpt__vfs_run *r)
{
    if (q->running >= JPT_VFS_PROCESS_MAX_RUNNING ||
        (q->slots != NULL && !q->slots->take(q->slots->ud)))
        return false;
    q->running++;
    r->counted = true;
    return true;
}

void jpt__vfs_run_queue_wake(jpt__vfs_run_queue *q)
{
    while (q->head != NULL && take_slot(q, q->head)) {
        jpt__vfs_run *r = q->head;
        JPT__QUEUE_REMOVE(q->head, q->tail, r);
        q->waiting--;
        r->waiting = false;
        (void)launch(r);
    }
}

static void on_drain(jpt__defer *d)
{
    jpt__vfs_run_queue_wake(d->ud);
}

void jpt__vfs_run_queue_init(jpt__vfs_run_queue *q, jpt__loop *loop,
                             const jpt__vfs_slots *slots)
{
    memset(q, 0, sizeof(*q));
    q->loop = loop;
    q->slots = slots;
    jpt__loop_defer_init(&q->drain, on_drain, q);
}

void jpt__vfs_run_queue_clear(jpt__vfs_run_queue *q)
{
    jpt__loop_defer_cancel(q->loop, &q->drain);
}

bool jpt__vfs_run_queue_starved(const jpt__vfs_run_queue *q)
{
    return q->head != NULL && q->running == 0;
}

void jpt__vfs_run_queue_refuse(jpt__vfs_run_queue *q, const char *why)
{
    while (q->head != NULL) {
        jpt__vfs_run *r = q->head;
        refuse(r->done, r->ud, JPT_ERR_LIMIT, r->shown, "%s", why);
        run_free(r);
    }
}

/* ---- The request -------------------------------------------------------------------- */

int jpt__vfs_run_submit(const jpt__vfs_run_env *env, const jpt__vfs_params *p,
                        jpt__files_guard_fn guard, void *guard_ud, jpt__vfs_run_done_fn done,
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
    if (jpt__files_root_fd(env->files) < 0) {
        refuse(done, ud, JPT_ERR_UNSUPPORTED, shown,
               "not available: the workspace is not a directory of this machine (a memory or "
               "host-supplied backend), so there is nowhere to run a process");
        return JPT_OK;
    }
    const jpt__policy_command *cmd = jpt__policy_command_find(env->policy, p->program);
    if (!envs_allowed(p, cmd, shown, done, ud) ||
        !envs_not_asked(p, env->policy, shown, done, ud, &rc) ||
        !allowed(p, shown, guard, guard_ud, done, ud, &rc))
        return rc;

    jpt__vfs_run_queue *q = env->queue;
    if (q->waiting >= JPT_VFS_PROCESS_MAX_WAITING) {
        refuse(done, ud, JPT_ERR_LIMIT, shown,
               "%zu processes of this tool run and %zu wait already (at most %d wait): "
               "refused; try again once one has ended",
               q->running, q->waiting, JPT_VFS_PROCESS_MAX_WAITING);
        return JPT_OK;
    }
    jpt__vfs_run *r = jpt__calloc(1, sizeof(*r));
    if (r == NULL)
        return JPT_ERR_NOMEM;
    r->env = *env;
    r->p = p;
    r->git = jpt__policy_is_git(p->program);
    r->done = done;
    r->ud = ud;
    memcpy(r->shown, shown, sizeof(shown));
    r->timeout_ms = cmd != NULL ? cmd->timeout_ms : JPT_VFS_PROCESS_TIMEOUT_MS;
    r->process_limit = cmd != NULL ? cmd->process_limit : 0;
    size_t limit = cmd != NULL ? cmd->output_limit : JPT_VFS_PROCESS_OUTPUT_LIMIT;
    for (int i = 0; i < 2; i++)
        jpt__capture_init(&r->kept[i], limit);
    jpt__loop_timer_init(&r->timer, on_timeout, r);
    jpt__loop_defer_init(&r->slice, on_slice, r);
    /* In order: behind those waiting, and within the bound and the owner's
     * slots. */
    if (q->head != NULL || !take_slot(q, r)) {
        JPT__QUEUE_APPEND(q->head, q->tail, r);
        q->waiting++;
        r->waiting = true;
        *pending = r;
        return JPT_OK;
    }
    if (launch(r))
        *pending = r;
    return JPT_OK;
}

void jpt__vfs_run_cancel(jpt__vfs_run *r)
{
    run_free(r);
}
