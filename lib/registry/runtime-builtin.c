/* The builtin runtime: a tool the host implements in its own process (a
 * sub-agent, say; RFD 009 "Toward sub-agents"), through the callbacks of
 * jpt_builtin_ops. The tool reports its states itself, with
 * jpt_handle_update(), from the callbacks or at any later time. The public
 * jpt_handle functions live here: a jpt_handle is, first of all, a run. */
#include <string.h>

#include "registry/runtime.h"

typedef struct builtin_run {
    bool ended;          /* its stop was reported (or it was aborted) */
    bool releasing;      /* being freed: updates are accepted and ignored */
    jpt__defer abort_step; /* the abort callback, from the loop */
} builtin_run;

static builtin_run *builtin_of(const jpt__run *run)
{
    return run->impl;
}

static jpt_handle *handle_of(jpt__run *run)
{
    return (jpt_handle *)run;
}

/* The runtime's part of a definition: the host's callbacks. */
typedef struct builtin_def {
    jpt_builtin_ops ops;
    void *ud;
} builtin_def;

static const builtin_def *def_of(const jpt__tool *t)
{
    return t->rt_data;
}

void jpt__builtin_set_ops(jpt__tool *t, const jpt_builtin_ops *ops, void *ud)
{
    builtin_def *d = t->rt_data;

    d->ops = *ops;
    d->ops.size = sizeof(jpt_builtin_ops);
    d->ud = ud;
}

static void forget(jpt__tool *t)
{
    jpt__free(t->rt_data);
    t->rt_data = NULL;
}

static int check(jpt_registry *r, jpt__tool *t, const json_t *def, char *why, size_t n)
{
    static const char *const not_here[] = {"command", "pty",   "pty_echo", "stdin",
                                           "env",     "files", "request_timeout_ms"};

    (void)r;
    /* The host's own code: nothing of this version confines it. */
    if (json_object_get(def, "sandbox") != NULL || json_object_get(def, "os_sandbox") != NULL)
        return snprintf(why, n, "'%s' is not enforced for a builtin tool, so it is refused",
                        json_object_get(def, "sandbox") != NULL ? "sandbox" : "os_sandbox"),
               JPT_ERR_UNSUPPORTED;
    for (size_t i = 0; i < sizeof(not_here) / sizeof(not_here[0]); i++)
        if (json_object_get(def, not_here[i]) != NULL) {
            snprintf(why, n, "'%s' does not apply to a builtin tool", not_here[i]);
            return JPT_ERR_INVALID;
        }
    if ((t->rt_data = jpt__calloc(1, sizeof(builtin_def))) == NULL)
        return snprintf(why, n, "out of memory"), JPT_ERR_NOMEM;
    return JPT_OK;
}

/* The tool ends: its abort callback, which may report the stop itself;
 * else the stop is reported here, with `why` (or NULL) as its error. */
static void end_now(jpt__run *run, const char *why)
{
    builtin_run *b = builtin_of(run);

    if (def_of(run->tool)->ops.abort != NULL)
        def_of(run->tool)->ops.abort(handle_of(run), def_of(run->tool)->ud);
    if (b->ended)
        return;
    b->ended = true;
    jpt_state *final = NULL;
    if (why != NULL && jpt_state_new(JPT_STATE_STOPPED, &final) == JPT_OK &&
        (jpt_state_add_text(final, why) < 0 ||
         jpt__state_set_error_from_blocks(final, false) < 0)) {
        jpt_state_unref(final);
        final = NULL;
    }
    run->sink->stopped(run, final);
}

/* From the loop: the abort callback may stop any handle, and whoever
 * asked for the abort may be walking them. */
static void run_abort(jpt__defer *d)
{
    jpt__run *run = d->ud;

    if (builtin_of(run)->ended)
        return;
    run->sink->hold(run);
    end_now(run, NULL);
    run->sink->let_go(run);
}

static int start(jpt__run *run, jpt__buf *why)
{
    char *args = NULL;
    int rc;

    if (builtin_of(run) == NULL) {
        builtin_run *b = jpt__calloc(1, sizeof(*b));
        if (b == NULL)
            return JPT_ERR_NOMEM;
        jpt__loop_defer_init(&b->abort_step, run_abort, run);
        run->impl = b;
    }
    builtin_of(run)->ended = false;
    if ((rc = jpt__json_dump(run->arguments, JSON_COMPACT, &args)) < 0)
        return rc;
    rc = def_of(run->tool)->ops.start(handle_of(run), args, def_of(run->tool)->ud);
    jpt__free(args);
    if (rc < 0 && jpt__buf_printf(why, "the tool failed to start: %s", jpt_strerror(rc)) < 0)
        return JPT_ERR_NOMEM;
    return rc;
}

static int input(jpt__run *run, const json_t *value, const char *value_json)
{
    (void)value;
    if (builtin_of(run)->ended)
        return JPT_ERR_STATE;
    return def_of(run->tool)->ops.apply(handle_of(run), value_json, def_of(run->tool)->ud);
}

/* The answer to its question, to its apply callback (inside dispatch:
 * the handle defers it otherwise). */
static int answer(jpt__run *run, const char *qid, const json_t *value, const char *value_json)
{
    (void)qid;
    (void)value;
    if (builtin_of(run)->ended)
        return JPT_ERR_STATE;
    if (def_of(run->tool)->ops.apply == NULL)
        return JPT_ERR_UNSUPPORTED;
    return def_of(run->tool)->ops.apply(handle_of(run), value_json, def_of(run->tool)->ud);
}

static void abort_run(jpt__run *run)
{
    builtin_run *b = builtin_of(run);

    if (b != NULL && !b->ended)
        jpt__loop_defer_queue(run->r->loop, &b->abort_step);
}

static void refresh(jpt__run *run)
{
    (void)run;
}

/* A builtin that has not stopped is told to, so the host never keeps a
 * handle the registry has freed (registry.h, jpt_handle_update). */
static void release(jpt__run *run)
{
    builtin_run *b = builtin_of(run);

    if (b == NULL)
        return;
    jpt__loop_defer_cancel(run->r->loop, &b->abort_step);
    if (!b->ended && def_of(run->tool)->ops.abort != NULL) {
        b->releasing = true;
        def_of(run->tool)->ops.abort(handle_of(run), def_of(run->tool)->ud);
    }
    jpt__free(b);
    run->impl = NULL;
}

const jpt__runtime_ops jpt__runtime_builtin = {
    .caps = JPT__RT_REPORTS_STATES | JPT__RT_HOST_CALLBACKS,
    .check = check,
    .forget = forget,
    .start = start,
    .input = input,
    .answer = answer,
    .abort = abort_run,
    .refresh = refresh,
    .release = release,
};

/* ---- The public handle functions ------------------------------------------------- */

JPT_EXPORT int jpt_handle_update(jpt_handle *h, jpt_state *state)
{
    jpt__run *run = (jpt__run *)h;

    if (h == NULL || state == NULL || run->tool->rt != &jpt__runtime_builtin ||
        builtin_of(run) == NULL)
        return JPT_ERR_INVALID;
    builtin_run *b = builtin_of(run);
    /* From the abort callback of a handle being freed: nobody can read the
     * state any more. */
    if (b->releasing)
        return JPT_OK;
    if (b->ended)
        return JPT_ERR_STATE;
    int rc = run->sink->state(run, state);
    if (rc < 0)
        return rc;
    if (jpt_state_kind(state) == JPT_STATE_STOPPED) {
        b->ended = true;
        run->sink->stopped(run, NULL);
    }
    return JPT_OK;
}

JPT_EXPORT const char *jpt_handle_id(const jpt_handle *h)
{
    return h != NULL ? ((const jpt__run *)h)->id : NULL;
}

JPT_EXPORT const char *jpt_handle_tool(const jpt_handle *h)
{
    return h != NULL ? ((const jpt__run *)h)->tool->name : NULL;
}

JPT_EXPORT void jpt_handle_set_userdata(jpt_handle *h, void *data)
{
    if (h != NULL)
        ((jpt__run *)h)->userdata = data;
}

JPT_EXPORT void *jpt_handle_get_userdata(const jpt_handle *h)
{
    return h != NULL ? ((const jpt__run *)h)->userdata : NULL;
}
