/* The registry object, the room's face: options, its own await tool and
 * the hooks the layers below report through, the loop it is driven
 * through, the blocking conveniences, shutdown and free. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/party.h"

#define DEFAULT_CAPTURE_BYTES (1024 * 1024)
#define DEFAULT_OUTPUT_LIMIT 30000
#define DEFAULT_SETTLE_MS 150
#define DEFAULT_YIELD_MS 10000
#define DEFAULT_INQUIRY_ROUNDS 16
#define DEFAULT_TURN_END_TIMEOUT_MS 120000
#define DEFAULT_MAX_PROCESSES 256
#define DEFAULT_FD_RESERVE 32
#define FDS_PER_PROCESS 5
#define DEFAULT_MAX_EVENTS 4096

static void run_shutdown(jpt__defer *d);
static void check_shutdown_done(jpt_registry *r);

/* The public modes are the process room's. */
_Static_assert(JPT_CONTAIN_AUTO == JPT__CONTAIN_AUTO &&
                   JPT_CONTAIN_CGROUP == JPT__CONTAIN_CGROUP &&
                   JPT_CONTAIN_SUBREAPER == JPT__CONTAIN_SUBREAPER &&
                   JPT_CONTAIN_SESSION == JPT__CONTAIN_SESSION,
               "containment modes");

static int opt_ms(int value, int fallback)
{
    return value > 0 ? value : fallback;
}

/* registry.h, max_processes: what the fd limit allows after the host's
 * reserve, at up to 5 fds per process (pidfd, three pipes, a spool). */
static size_t default_max_processes(void)
{
    struct rlimit lim;
    size_t fds = 1024;

    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
        fds = lim.rlim_cur < SIZE_MAX ? (size_t)lim.rlim_cur : SIZE_MAX;
    size_t reserve = fds / 4 > DEFAULT_FD_RESERVE ? fds / 4 : DEFAULT_FD_RESERVE;
    size_t n = fds > reserve ? (fds - reserve) / FDS_PER_PROCESS : 0;
    return n < 1 ? 1 : n > DEFAULT_MAX_PROCESSES ? DEFAULT_MAX_PROCESSES : n;
}

/* jpt_registry_new's errors go to the thread's last error (and, for the
 * steps that use one, through the registry's own message). */
#define FAIL(status, ...) jpt__fail(status, "jpt_registry_new: " __VA_ARGS__)

static int set_root(jpt_registry *r, const char *root)
{
    char resolved[PATH_MAX];
    struct stat st;
    const char *name = root != NULL ? root : ".";

    if (realpath(name, resolved) == NULL || stat(resolved, &st) < 0)
        return FAIL(JPT_ERR_INVALID, "root '%s': %s", name, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return FAIL(JPT_ERR_INVALID, "root '%s' is not a directory", name);
    if ((r->root = jpt__strdup(resolved)) == NULL)
        return FAIL(JPT_ERR_NOMEM, "out of memory");
    return JPT_OK;
}

/* A failure is also logged, as it always was. */
static int contain(jpt_registry *r, int mode)
{
    jpt__errbuf err;
    int rc = jpt__contain_new(r->loop, mode, &r->contain, &err);

    if (rc < 0)
        jpt__log(JPT_LOG_ERROR, "jpt_registry_new: containment: %s", err.text);
    return rc < 0 ? FAIL(rc, "containment: %s", err.text) : rc;
}

/* The options one by one, each refusal naming the option and why. */
static int check_duration(const char *name, int value)
{
    if (value < 0)
        return FAIL(JPT_ERR_INVALID, "%s is %d: a duration is 0 (the default) or more", name,
                    value);
    return JPT_OK;
}

static int check_options(const jpt_registry_options *o)
{
    int rc;

    if ((rc = check_duration("kill_grace_ms", o->kill_grace_ms)) < 0 ||
        (rc = check_duration("settle_ms", o->settle_ms)) < 0 ||
        (rc = check_duration("yield_ms", o->yield_ms)) < 0 ||
        (rc = check_duration("drain_ms", o->drain_ms)) < 0 ||
        (rc = check_duration("turn_end_timeout_ms", o->turn_end_timeout_ms)) < 0)
        return rc;
    if (o->max_inquiry_rounds < 0)
        return FAIL(JPT_ERR_INVALID, "max_inquiry_rounds is %d: a count is 0 (the default) "
                                     "or more",
                    o->max_inquiry_rounds);
    if ((o->flags & ~JPT_REGISTRY_KEEP_SPOOL) != 0)
        return FAIL(JPT_ERR_INVALID, "flags 0x%x: unknown flags 0x%x (JPT_REGISTRY_KEEP_SPOOL "
                                     "is the only one)",
                    o->flags, o->flags & ~JPT_REGISTRY_KEEP_SPOOL);
    if (o->containment < JPT_CONTAIN_AUTO || o->containment > JPT_CONTAIN_SESSION)
        return FAIL(JPT_ERR_INVALID, "containment %d is not a JPT_CONTAIN_* mode",
                    o->containment);
    if (o->sandbox_mode < JPT_SANDBOX_DEFAULT || o->sandbox_mode > JPT_SANDBOX_OFF)
        return FAIL(JPT_ERR_INVALID, "sandbox_mode %d is not a JPT_SANDBOX_* mode",
                    o->sandbox_mode);
    return JPT_OK;
}

/* A registry in use for the state file: what stands in the way. */
static int check_state_file(const char *path)
{
    int rc = jpt__stale_in_use(path);

    if (rc == JPT_ERR_EXISTS)
        return FAIL(rc, "state_file '%s' lists live children or cgroups: another registry "
                        "uses it, or a crashed one left them (jpt_registry_reap_stale)",
                    path);
    if (rc < 0)
        return FAIL(rc, "state_file '%s' cannot be read: %s", path, strerror(errno));
    return JPT_OK;
}

/* RFD 037's await, offered while a stateful tool is loaded (tools.c). */
static int add_await_tool(jpt_registry *r)
{
    json_t *schema = jpt__await_schema();

    /* The tool takes the schema. */
    if (schema != NULL)
        r->await_tool = jpt__tool_new_own("await", jpt__await_description, schema,
                                          &jpt__await_ops);
    return r->await_tool != NULL ? JPT_OK : JPT_ERR_NOMEM;
}

JPT_EXPORT int jpt_registry_new(const jpt_registry_options *opts, jpt_registry **out)
{
    jpt_registry_options o;
    int rc;

    jpt__fail_clear();
    if (out == NULL)
        return FAIL(JPT_ERR_INVALID, "out is NULL");
    *out = NULL;
    memset(&o, 0, sizeof(o));
    /* 0.1.0's struct ended before max_processes. */
    if (opts != NULL &&
        (rc = jpt__struct_take(&o, sizeof(o), opts, opts->size,
                               offsetof(jpt_registry_options, max_processes))) < 0)
        return rc == JPT_ERR_INVALID
                   ? FAIL(rc, "opts->size %zu is less than any jpt_registry_options (%zu)",
                          opts->size, offsetof(jpt_registry_options, max_processes))
                   : FAIL(rc, "opts sets fields past the %zu bytes of this jptool's "
                              "jpt_registry_options (built against a newer one)",
                          sizeof(o));
    if ((rc = check_options(&o)) < 0)
        return rc;

    jpt_registry *r = jpt__calloc(1, sizeof(*r));
    if (r == NULL)
        return FAIL(JPT_ERR_NOMEM, "out of memory");
    r->state_fd = -1;
    r->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int devnull_errno = errno;
    r->kill_grace_ms = opt_ms(o.kill_grace_ms, JPT__KILL_GRACE_MS);
    r->capture_bytes = o.capture_bytes > 0 ? o.capture_bytes : DEFAULT_CAPTURE_BYTES;
    r->output_limit = o.output_limit > 0 ? o.output_limit : DEFAULT_OUTPUT_LIMIT;
    r->settle_ms = opt_ms(o.settle_ms, DEFAULT_SETTLE_MS);
    r->yield_ms = opt_ms(o.yield_ms, DEFAULT_YIELD_MS);
    r->drain_ms = opt_ms(o.drain_ms, JPT__DRAIN_MS);
    r->max_inquiry_rounds = opt_ms(o.max_inquiry_rounds, DEFAULT_INQUIRY_ROUNDS);
    r->turn_end_timeout_ms = opt_ms(o.turn_end_timeout_ms, DEFAULT_TURN_END_TIMEOUT_MS);
    r->max_processes = o.max_processes > 0 ? o.max_processes : default_max_processes();
    r->max_events = o.max_events > 0 ? o.max_events : DEFAULT_MAX_EVENTS;
    r->keep_spool = (o.flags & JPT_REGISTRY_KEEP_SPOOL) != 0;
    r->sandbox_mode = o.sandbox_mode != JPT_SANDBOX_DEFAULT ? o.sandbox_mode
                                                            : JPT_SANDBOX_REQUIRED;
    jpt__idmap_init(&r->handle_ids);
    jpt__loop_defer_init(&r->slot_step, jpt__slots_freed, r);
    jpt__loop_defer_init(&r->shutdown_step, run_shutdown, r);
    r->on_child_gone = check_shutdown_done;
    r->on_handle_change = jpt__notify_handle_changed;
    r->finish_releases = jpt__batches_finish_releases;
    if ((rc = set_root(r, o.root)) < 0)
        goto fail;
    if ((rc = add_await_tool(r)) < 0 || (r->sandbox_cache = jpt__sandbox_cache_new()) == NULL ||
        (o.spool_dir != NULL && (r->spool_dir = jpt__strdup(o.spool_dir)) == NULL) ||
        (o.state_file != NULL && (r->state_file = jpt__strdup(o.state_file)) == NULL)) {
        rc = FAIL(JPT_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((rc = jpt__loop_new(&r->loop)) < 0) {
        rc = rc == JPT_ERR_NOMEM ? FAIL(rc, "out of memory")
                                 : FAIL(rc, "creating its epoll fd, timerfd and eventfd: %s",
                                        strerror(errno));
        goto fail;
    }
    if (r->devnull < 0) {
        rc = FAIL(JPT_ERR_IO, "opening /dev/null: %s", strerror(devnull_errno));
        goto fail;
    }
    if ((rc = contain(r, o.containment)) < 0 ||
        /* A state file that lists children belongs to another registry,
         * or to a crashed one whose orphans jpt_registry_reap_stale() must
         * see: never overwritten. */
        (r->state_file != NULL && (rc = check_state_file(r->state_file)) < 0))
        goto fail;
    if ((rc = jpt__stale_open(r)) < 0) {
        rc = FAIL(rc, "%s", r->err.text);
        goto fail;
    }
    *out = r;
    return JPT_OK;
fail:
    jpt_registry_free(r);
    return rc;
}

JPT_EXPORT void jpt_registry_free(jpt_registry *r)
{
    jpt__child **children = NULL;

    if (r == NULL || r->freeing)
        return;
    /* From a callback: the dispatches under way end first (registry.h). */
    if (r->dispatching > 0) {
        r->free_pending = true;
        jpt__loop_interrupt(r->loop);
        return;
    }
    r->freeing = true;
    /* Every process ends and is reaped before anything else goes. */
    size_t n = jpt__handles_take_children(r, &children);
    if (n > 0) {
        jpt__log(JPT_LOG_INFO, "registry freed: ending %zu tool processes (SIGTERM, SIGKILL "
                               "after %d ms)", n, r->kill_grace_ms);
        jpt__children_shutdown(children, n, r->kill_grace_ms);
    }
    jpt__free(children);

    jpt__turn_free(r);
    while (r->batches != NULL)
        jpt_batch_free(r->batches);
    while (r->calls != NULL) /* of batches the host freed, in flight or done */
        jpt__call_free(r->calls);
    jpt__inquiries_free(r);
    jpt__notices_free(r);
    jpt__handles_free_all(r);
    jpt__idmap_free(&r->handle_ids);
    jpt__events_free(r);
    for (size_t i = 0; i < r->ntools; i++)
        jpt__tool_unref(r->tools[i]);
    jpt__free(r->tools);
    jpt__tool_unref(r->await_tool);
    jpt__vfs_runtime_free(r);
    jpt__stale_close(r);
    jpt__free(r->free_slots);
    for (size_t i = 0; i < r->nspool_files; i++) {
        if (!r->keep_spool)
            unlink(r->spool_files[i]);
        jpt__free(r->spool_files[i]);
    }
    jpt__free(r->spool_files);
    /* What is left of reaped children (their fds and cgroups) goes before
     * the containment that released them. */
    if (r->loop != NULL)
        jpt__loop_release_now(r->loop);
    jpt__contain_free(r->contain);
    jpt__sandbox_cache_free(r->sandbox_cache);
    jpt__loop_free(r->loop);
    if (r->devnull >= 0)
        close(r->devnull);
    jpt__free(r->root);
    jpt__free(r->spool_dir);
    jpt__free(r->state_file);
    jpt__free(r);
}

JPT_EXPORT int jpt_registry_tool_sandbox(jpt_registry *r, const char *tool, unsigned *enforced,
                                         char **report)
{
    jpt__sandbox_spec spec;
    jpt__sandbox *sb = NULL;
    const char *text;
    int rc;

    if (enforced != NULL)
        *enforced = 0;
    if (report != NULL)
        *report = NULL;
    if (r == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&r->err);
    if (tool == NULL)
        return jpt__err(&r->err, JPT_ERR_INVALID, "tool_sandbox: no tool named");
    jpt__tool *t = jpt__tool_find(r, tool);
    if (t == NULL)
        return jpt__err(&r->err, JPT_ERR_NOT_FOUND, "tool_sandbox: no tool '%.80s'", tool);
    const jpt__command_def *cmd = t->rt->command != NULL ? t->rt->command(t) : NULL;
    jpt__command_sandbox(r, t, cmd, &spec);
    if (spec.profile == 0)
        text = cmd == NULL                ? "none: the tool runs in the host's process"
               : cmd->sandbox_profile != 0 ? "off: the sandbox mode is \"off\""
                                          : "none: a stdio tool without \"sandbox\" runs "
                                            "unconfined";
    else {
        jpt__errbuf err;
        if ((rc = jpt__sandbox_prepare(&spec, &sb, &err)) < 0)
            return jpt__err(&r->err, rc, "tool '%s': %s", t->name, err.text);
        const jpt__sandbox_report *rep = jpt__sandbox_report_of(sb);
        if (enforced != NULL)
            *enforced = rep->enforced;
        text = rep->text;
    }
    rc = JPT_OK;
    if (report != NULL && (*report = jpt__strdup(text)) == NULL)
        rc = jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory");
    jpt__sandbox_free(sb);
    return rc;
}

JPT_EXPORT const char *jpt_registry_errmsg(const jpt_registry *r)
{
    return r != NULL ? r->err.text : "";
}

/* ---- Shutting down without blocking ---------------------------------------------- */

static bool shutdown_done(const jpt_registry *r)
{
    return r->nchildren == 0 && r->slot_head == NULL && !r->shutdown_step.queued;
}

/* A tool process was reaped: a shutdown under way may be complete. */
static void check_shutdown_done(jpt_registry *r)
{
    if (r->shutting_down && !r->shutdown_reported && shutdown_done(r)) {
        r->shutdown_reported = true;
        jpt__events_shutdown(r);
    }
}

/* From the loop: calls end (but one-shot runs, which end with their
 * process), then every handle is ended the way an abort ends it, without
 * waiting here for any of them. */
static void run_shutdown(jpt__defer *d)
{
    jpt_registry *r = d->ud;

    jpt__calls_cancel_all(r);
    jpt__handles_kill_all(r, "The registry is shutting down: the tool was stopped");
    check_shutdown_done(r);
}

JPT_EXPORT int jpt_registry_shutdown(jpt_registry *r)
{
    if (r == NULL)
        return JPT_ERR_INVALID;
    if (!r->shutting_down) {
        r->shutting_down = true;
        jpt__log(JPT_LOG_INFO, "registry shutting down: %zu tool processes to end",
                 r->nchildren);
        jpt__loop_defer_queue(r->loop, &r->shutdown_step);
    }
    return shutdown_done(r) ? JPT_OK : JPT_ERR_AGAIN;
}

/* ---- Driving ----------------------------------------------------------------------- */

JPT_EXPORT int jpt_registry_get_fd(const jpt_registry *r)
{
    return r != NULL ? jpt__loop_fd(r->loop) : JPT_ERR_INVALID;
}

JPT_EXPORT int jpt_registry_get_timeout(const jpt_registry *r)
{
    return r != NULL ? jpt__loop_timeout(r->loop) : JPT_ERR_INVALID;
}

/* One dispatch. A callback may free the registry (the host's inquiry
 * handler, say): the free waits for the outermost dispatch to unwind, and
 * then `*gone` is set and the registry must not be touched again. Every
 * dispatch that was under way returns JPT_ERR_CANCELLED. */
static int dispatch_once(jpt_registry *r, bool *gone)
{
    *gone = false;
    r->dispatching++;
    int rc = jpt__loop_dispatch(r->loop);
    int e = errno; /* of the loop's system call, when it failed */
    r->dispatching--;
    if (r->free_pending) {
        if (r->dispatching == 0) {
            jpt_registry_free(r);
            *gone = true;
        }
        return JPT_ERR_CANCELLED;
    }
    if (rc == JPT_ERR_IO)
        return jpt__err(&r->err, rc, "dispatch: waiting for the registry's events: %s",
                        strerror(e));
    return rc;
}

JPT_EXPORT int jpt_registry_dispatch(jpt_registry *r)
{
    bool gone;

    if (r == NULL)
        return JPT_ERR_INVALID;
    return dispatch_once(r, &gone);
}

JPT_EXPORT int jpt_registry_wakeup(jpt_registry *r)
{
    if (r == NULL)
        return JPT_ERR_INVALID;
    return jpt__loop_wakeup(r->loop);
}

/* Polls and dispatches until done(r, arg) or the deadline. `*gone` as for
 * dispatch_once(). */
static int drive(jpt_registry *r, int timeout_ms, bool (*done)(jpt_registry *, void *),
                 void *arg, bool *gone)
{
    uint64_t deadline = timeout_ms >= 0 ? jpt__loop_deadline_ms(timeout_ms) : 0;

    *gone = false;
    if (r->free_pending)
        return JPT_ERR_CANCELLED;
    for (;;) {
        int more;
        do {
            if ((more = dispatch_once(r, gone)) < 0)
                return more;
        } while (more > 0 && !done(r, arg));
        if (done(r, arg)) {
            /* What is left of the tools that ended (their fds, their
             * cgroups and what got away in them), put off so that their
             * ends were reported first, goes before the host gets the
             * results: a host that waits may not dispatch again soon. */
            if (r->dispatching == 0)
                jpt__loop_release_now(r->loop);
            return JPT_OK;
        }
        int wait = jpt__loop_timeout(r->loop);
        if (timeout_ms >= 0) {
            uint64_t now = jpt__loop_now();
            if (now >= deadline)
                return JPT_ERR_TIMEOUT;
            int left = (int)((deadline - now + 999999u) / 1000000u);
            if (wait < 0 || wait > left)
                wait = left;
        }
        if (jpt__loop_poll(r->loop, wait) < 0)
            return jpt__err(&r->err, JPT_ERR_IO, "poll on the registry's fd: %s",
                            strerror(errno));
    }
}

static bool no_calls_in_flight(jpt_registry *r, void *arg)
{
    (void)arg;
    return r->calls_in_flight == 0;
}

/* A batch the host freed while waiting on it is done too (as far as the
 * wait is concerned). */
static bool batch_done(jpt_registry *r, void *arg)
{
    const jpt_batch *b = arg;

    (void)r;
    return b->pending == 0 || b->free_pending;
}

JPT_EXPORT int jpt_registry_run(jpt_registry *r, int timeout_ms)
{
    bool gone;

    if (r == NULL)
        return JPT_ERR_INVALID;
    return drive(r, timeout_ms, no_calls_in_flight, NULL, &gone);
}

JPT_EXPORT int jpt_registry_wait(jpt_registry *r, jpt_batch *b, int timeout_ms)
{
    bool gone;

    if (r == NULL || b == NULL || b->r != r)
        return JPT_ERR_INVALID;
    /* Kept while waited on: a callback may free it (jpt_batch_free). */
    b->pins++;
    int rc = drive(r, timeout_ms, batch_done, b, &gone);
    if (gone)
        return rc; /* the batch went with the registry */
    b->pins--;
    if (b->free_pending) {
        if (b->pins == 0)
            jpt_batch_free(b);
        return JPT_ERR_CANCELLED;
    }
    return rc;
}
