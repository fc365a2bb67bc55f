/* The VFS runtime (D11 "VfsRuntime"): a tool process that does its file
 * access through JSON-RPC requests, served by the vfs room's session in
 * the registry's loop, through the tool's files backend after the access
 * policy of its "sandbox" section. One-shot runs end with the tool's
 * result (a question is answered by running it again with every answer so
 * far in init, as a stdio tool is); stateful ones report their states and
 * take apply notifications. The public jpt_registry_add_files and
 * jpt_registry_set_policy_handler live here. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "registry/runtime.h"
#include "vfs/session.h"

/* The runtime's part of a definition. */
typedef struct vfs_def {
    jpt__command_def cmd;
    jpt__vfs_def vfs;        /* its policy, files backend, request timeout */
} vfs_def;

/* One run. */
typedef struct vfs_run {
    jpt__run *run;
    jpt__vfs_session *session;
    jpt_state *last;         /* a one-shot run's latest state */
    jpt__slot slot;          /* while the tool's process lives */
    /* In line for a slot (max_processes): to start, or (while the tool
     * runs) for its process.run children, which take slots too. */
    jpt__slot_waiter waiter;
    jpt__vfs_slots slots;
} vfs_run;

static vfs_run *vfs_of(const jpt__run *run)
{
    return run->impl;
}

static const vfs_def *def_of(const jpt__tool *t)
{
    return t->rt_data;
}

/* ---- Files backends -------------------------------------------------------------------- */

/* The registry's VFS server, made when first needed. */
static int server(jpt_registry *r, jpt__vfs_server **out)
{
    int rc = r->vfs_server != NULL ? JPT_OK
                                   : jpt__vfs_server_new(r->loop, r->root, &r->vfs_server);

    *out = r->vfs_server;
    return rc;
}

JPT_EXPORT int jpt_registry_add_files(jpt_registry *r, const char *name, jpt_files *files)
{
    jpt__vfs_server *sv = NULL;
    int rc;

    if (r == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&r->err);
    if (name == NULL || files == NULL || !jpt__valid_name(name, ""))
        return jpt__err(&r->err, JPT_ERR_INVALID,
                        "add_files: a name of 1 to 64 characters of A-Z, a-z, 0-9, _ and - "
                        "and a backend are required");
    if ((rc = server(r, &sv)) == JPT_OK)
        rc = jpt__vfs_server_add_files(sv, name, files);
    if (rc == JPT_ERR_EXISTS)
        return jpt__err(&r->err, rc, "add_files: '%s' is added already", name);
    if (rc < 0)
        return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory adding files '%s'", name);
    return JPT_OK;
}

JPT_EXPORT void jpt_registry_set_policy_handler(jpt_registry *r, jpt_policy_fn fn, void *ud)
{
    if (r == NULL)
        return;
    r->policy_fn = fn;
    r->policy_ud = ud;
}

void jpt__vfs_runtime_free(jpt_registry *r)
{
    jpt__vfs_server_free(r->vfs_server);
    r->vfs_server = NULL;
}

/* ---- Definitions ------------------------------------------------------------------------ */

static void forget(jpt__tool *t)
{
    vfs_def *d = t->rt_data;

    if (d == NULL)
        return;
    jpt__command_def_free(&d->cmd);
    jpt__vfs_def_clear(&d->vfs);
    jpt__free(d);
    t->rt_data = NULL;
}

static int check(jpt_registry *r, jpt__tool *t, const json_t *def, char *why, size_t n)
{
    static const char *const not_here[] = {"pty", "pty_echo", "stdin"};
    int rc;

    for (size_t i = 0; i < sizeof(not_here) / sizeof(not_here[0]); i++)
        if (json_object_get(def, not_here[i]) != NULL)
            return snprintf(why, n, "'%s' does not apply to a vfs tool: its stdin and stdout "
                                    "are the protocol's",
                            not_here[i]),
                   JPT_ERR_INVALID;
    if (json_object_get(def, "command") == NULL)
        return snprintf(why, n, "'command' is required for a vfs tool"), JPT_ERR_INVALID;
    vfs_def *d = jpt__calloc(1, sizeof(*d));
    if (d == NULL)
        return snprintf(why, n, "out of memory"), JPT_ERR_NOMEM;
    t->rt_data = d;
    if ((rc = jpt__command_take(&d->cmd, def, true, why, n)) < 0)
        return rc;
    return jpt__vfs_def_read(r->vfs_server, def, &d->vfs, why, n);
}

static const jpt__command_def *command(const jpt__tool *t)
{
    return &def_of(t)->cmd;
}

/* ---- The session's reports ---------------------------------------------------------- */

/* The process is gone (reaped, or freed): its slot is free, and it waits
 * for none. */
static void uncount(vfs_run *v)
{
    jpt_registry *r = v->run->r;

    jpt__slot_leave(r, &v->waiter);
    jpt__slot_release(r, &v->slot);
}

/* ---- Process slots for process.run (vfs/run.h) ------------------------------------- */

static bool slot_take(void *ud)
{
    vfs_run *v = ud;
    jpt_registry *r = v->run->r;

    if (jpt__slot_take(r))
        return true;
    v->waiter.holds_slot = true;
    jpt__slot_wait(r, &v->waiter);
    /* From the loop: a registry whose every process waits so is found
     * there (jpt__slots_freed). */
    jpt__loop_defer_queue(r->loop, &r->slot_step);
    return false;
}

static void slot_give(void *ud)
{
    vfs_run *v = ud;

    jpt__slot_give(v->run->r);
}

/* Its process.run requests may take the free slot. */
static void slot_granted(jpt__slot_waiter *w)
{
    vfs_run *v = (vfs_run *)((char *)w - offsetof(vfs_run, waiter));

    jpt__vfs_session_slot_free(v->session);
}

static void slot_refuse(jpt__slot_waiter *w, const char *why)
{
    vfs_run *v = (vfs_run *)((char *)w - offsetof(vfs_run, waiter));

    if (v->session != NULL)
        jpt__vfs_session_refuse_waiting(v->session, why);
}

static void session_state(void *ud, jpt_state *st)
{
    vfs_run *v = ud;
    jpt__run *run = v->run;

    /* A handle reads its tool's states as they come; a one-shot run ends
     * with its last. */
    if (run->action == JPT__ACTION_SPAWN) {
        if (run->sink->state(run, st) < 0)
            run->sink->lost(run, "out of memory keeping a state of the tool");
        jpt_state_unref(st);
        return;
    }
    jpt_state_unref(v->last);
    v->last = st;
}

static void session_ended(void *ud, jpt_state *failure)
{
    vfs_run *v = ud;
    jpt__run *run = v->run;
    jpt_state *final = failure;

    /* It failed, and there was no memory to say how (issue 18). */
    if (final == NULL && jpt__vfs_session_failed(v->session))
        run->sink->lost(run, "out of memory reading how the tool ended");
    if (final == NULL && run->action != JPT__ACTION_SPAWN) {
        final = v->last;
        v->last = NULL;
    }
    uncount(v);
    run->sink->stopped(run, final);
}

static bool session_ask(void *ud, jpt_policy_request *req)
{
    vfs_run *v = ud;
    jpt_registry *r = v->run->r;

    if (r->policy_fn == NULL)
        return false;
    r->policy_fn(req, r->policy_ud);
    return true;
}

static void session_stderr(void *ud, const char *p, size_t n)
{
    const vfs_run *v = ud;
    const jpt__run *run = v->run;

    jpt__events_stream(run->r, run->id, run->tool->name, run->action == JPT__ACTION_SPAWN,
                       JPT__STDERR, p, n);
}

static const jpt__vfs_session_ops session_ops = {session_state, session_ended, session_ask,
                                                 session_stderr, NULL};

/* ---- Runs ------------------------------------------------------------------------------- */

/* init's texts: the arguments, answers and options as JSON. */
static int init_texts(const jpt__run *run, char *texts[3])
{
    int rc = jpt__json_dump(run->arguments, JSON_COMPACT, &texts[0]);

    if (rc == JPT_OK)
        rc = jpt__json_dump(run->answers, JSON_COMPACT, &texts[1]);
    if (rc == JPT_OK)
        rc = jpt__json_dump(run->tool->options, JSON_COMPACT, &texts[2]);
    return rc;
}

static int open_session(vfs_run *v, const jpt__command *cmd, jpt__buf *why)
{
    jpt__run *run = v->run;
    jpt_registry *r = run->r;
    const vfs_def *d = def_of(run->tool);
    jpt__errbuf err;
    jpt__sandbox_report report;
    char *texts[3] = {NULL, NULL, NULL};
    jpt__vfs_server *sv = NULL;
    jpt_files *files = d->vfs.files;
    int rc = server(r, &sv);

    if (rc < 0)
        return rc;
    if (files == NULL && (rc = jpt__vfs_server_root(sv, d->vfs.policy, &files)) < 0)
        return jpt__buf_printf(why, "the workspace cannot be opened: %s", jpt_strerror(rc)) < 0
                   ? JPT_ERR_NOMEM
                   : rc;
    if ((rc = init_texts(run, texts)) < 0)
        goto out;
    jpt__vfs_start st = {
        .policy = d->vfs.policy,
        .files = files,
        .init = {run->tool->name, texts[0], texts[1], texts[2]},
        .request_id = run->id,
        .request_timeout_ms = d->vfs.request_timeout_ms,
        .kill_grace_ms = r->kill_grace_ms,
        .slots = &v->slots,
        .sandbox_cache = r->sandbox_cache,
        .sandbox_hint = "\"os_sandbox\": {\"read\": […]} in the tool's definition",
        .env_hint = "\"env\": {\"set\": jptool.python_tool_env()} in the tool's definition",
        .argv = (const char *const *)cmd->argv,
        .envp = (const char *const *)cmd->envp,
        .devnull = r->devnull,
        .drain_ms = r->drain_ms,
        .contain = r->contain,
        .sandbox = cmd->sandbox.profile != 0 ? &cmd->sandbox : NULL,
        /* Its process.run children are confined as the tool is. */
        .run_sandbox_mode = cmd->sandbox.profile != 0 ? cmd->sandbox.mode : JPT_SANDBOX_OFF,
    };
    jpt__vfs_session_ops ops = session_ops;
    ops.ud = v;
    rc = jpt__vfs_serve_spawn(sv, &st, &ops, &report, &err, &v->session);
    if (rc < 0 && (rc = jpt__slot_spawn_failed(r, rc, run->id, err.text)) != JPT_ERR_AGAIN &&
        jpt__buf_printf(why, "the tool could not be started: %s", err.text) < 0)
        rc = JPT_ERR_NOMEM;
out:
    for (size_t i = 0; i < 3; i++)
        jpt__free(texts[i]);
    return rc;
}

/* Starts the tool's process, which holds a slot from then on. */
static int spawn(vfs_run *v, jpt__buf *why)
{
    jpt__run *run = v->run;
    jpt_registry *r = run->r;
    jpt__command cmd;
    int rc = jpt__command_build(r, run->tool, &def_of(run->tool)->cmd, run->action,
                                run->arguments, run->answers, &cmd, why);

    if (rc < 0)
        return rc;
    rc = open_session(v, &cmd, why);
    jpt__command_free(&cmd);
    if (rc < 0)
        return rc;
    jpt__slot_hold(r, &v->slot, jpt__vfs_session_pid(v->session));
    if (run->action == JPT__ACTION_SPAWN)
        jpt__slot_hold_for_handle(r, &v->slot);
    jpt__log(JPT_LOG_INFO, "vfs tool '%s' started for '%s': pid %d", run->tool->name, run->id,
             (int)jpt__vfs_session_pid(v->session));
    return JPT_OK;
}

/* A slot is free for the tool's process (slots.c). */
static int slot_start(jpt__slot_waiter *w, jpt__buf *why)
{
    return spawn((vfs_run *)((char *)w - offsetof(vfs_run, waiter)), why);
}

static int start(jpt__run *run, jpt__buf *why)
{
    vfs_run *v = vfs_of(run);

    if (v == NULL) {
        if ((v = jpt__calloc(1, sizeof(*v))) == NULL)
            return JPT_ERR_NOMEM;
        v->run = run;
        v->waiter.start = slot_start;
        v->waiter.fail = jpt__run_slot_fail;
        v->waiter.run = run;
        v->waiter.granted = slot_granted;
        v->waiter.refuse = slot_refuse;
        v->waiter.queued = &run->queued;
        v->slots = (jpt__vfs_slots){slot_take, slot_give, v};
        run->impl = v;
    }
    /* A one-shot run again, with the answers so far. */
    jpt__vfs_session_free(v->session);
    v->session = NULL;
    jpt_state_unref(v->last);
    v->last = NULL;
    /* registry.h, max_processes: it starts, or waits for a slot (the
     * model reads the handle "pending" until then), or fails when it never
     * could. */
    return jpt__slot_start(run->r, &v->waiter, why);
}

/* RFD 009 apply: D11's apply notification with the model's input. */
static int input(jpt__run *run, const json_t *value, const char *value_json)
{
    vfs_run *v = vfs_of(run);

    (void)value;
    if (v == NULL || v->session == NULL || jpt__vfs_session_ended(v->session))
        return JPT_ERR_STATE;
    return jpt__vfs_session_apply(v->session, value_json, strlen(value_json));
}

/* A waiting tool's answer arrives as the input of an apply notification:
 * the answer the tool's question asked for. */
static int answer(jpt__run *run, const char *qid, const json_t *value, const char *value_json)
{
    (void)qid;
    return input(run, value, value_json);
}

/* D11 "Cancellation": cancel, SIGTERM after the grace, SIGKILL after
 * another. */
static void abort_run(jpt__run *run)
{
    vfs_run *v = vfs_of(run);

    if (v != NULL && v->session == NULL && v->waiter.waiting) {
        /* Waiting for a slot: it ends without ever running. */
        jpt__slot_leave(run->r, &v->waiter);
        run->sink->stopped(run, NULL);
        return;
    }
    if (v != NULL && v->session != NULL) {
        /* Its slot frees soon: a call now waits for it rather than fail. */
        jpt__slot_release_for_handle(run->r, &v->slot);
        jpt__vfs_session_cancel(v->session);
    }
}

static void refresh(jpt__run *run)
{
    vfs_run *v = vfs_of(run);

    if (v != NULL && v->session != NULL)
        jpt__vfs_session_refresh(v->session);
}

/* What a cancelled one-shot run said last, after why it was cut short. */
static int partial(jpt__run *run, jpt_state **out)
{
    vfs_run *v = vfs_of(run);
    jpt_state *s = NULL;
    int rc;

    *out = NULL;
    if (v == NULL || run->failure == NULL)
        return JPT_ERR_STATE;
    if ((rc = jpt_state_new(JPT_STATE_STOPPED, &s)) < 0 ||
        (rc = jpt_state_add_text(s, run->failure)) < 0 ||
        (rc = jpt_state_set_error(s, "", 0)) < 0) {
        jpt_state_unref(s);
        return rc;
    }
    *out = s;
    return JPT_OK;
}

static jpt__child *take_child(jpt__run *run)
{
    vfs_run *v = vfs_of(run);
    jpt__child *c = v != NULL && v->session != NULL ? jpt__vfs_session_take_child(v->session)
                                                   : NULL;

    /* The registry ends it with all the others; its end is not
     * reported. */
    if (c != NULL)
        jpt__slot_drop(run->r, &v->slot);
    return c;
}

static void release(jpt__run *run)
{
    vfs_run *v = vfs_of(run);

    if (v == NULL)
        return;
    jpt__slot_leave(run->r, &v->waiter);
    jpt__vfs_session_free(v->session); /* a live process is killed and reaped */
    uncount(v);
    jpt_state_unref(v->last);
    jpt__free(v);
    run->impl = NULL;
}

const jpt__runtime_ops jpt__runtime_vfs = {
    .caps = JPT__RT_RERUN_TO_ANSWER,
    .check = check,
    .forget = forget,
    .command = command,
    .start = start,
    .input = input,
    .answer = answer,
    .abort = abort_run,
    .refresh = refresh,
    .partial = partial,
    .take_child = take_child,
    .release = release,
};
