/* One tool call of a model message: its arguments checked, a one-shot run
 * or an action on a handle (RFD 009), the wait for the handle to settle or
 * stop, a one-shot run's questions, and the result the model reads. A
 * call's failure (unknown tool, bad arguments, unknown handle, …) is its
 * result, worded for the model; it never fails the batch.
 *
 * A call waits on its handle through a subscription told after every
 * other (handle.h), and owns the settle and yield timers of that wait. */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "registry/call.h"

/* A day: longer than any model should block one action. */
#define MAX_WAIT_SECS 86400

/* What a call waits to hear of its handle. */
#define HEARS_END (JPT__HEARD_STOPPED)
#define HEARS_ONE_SHOT (JPT__HEARD_STOPPED | JPT__HEARD_WAITING)
#define HEARS_SETTLING \
    (JPT__HEARD_OUTPUT | JPT__HEARD_WAITING | JPT__HEARD_STATE | JPT__HEARD_STOPPED)

static void run_call_step(jpt__defer *d);
static void on_wait_timer(jpt__timer *t);
static void heard_waited(jpt__sub *s, unsigned what);
static void start_now(jpt__call *call);
static void call_later(jpt__call *call, void (*fn)(jpt__call *call));

/* ---- The call's life ------------------------------------------------------------------ */

static void on_limit(jpt__timer *t);

jpt__call *jpt__call_new(jpt_registry *r, jpt_batch *b, jpt__wire_call *wc)
{
    jpt__call *call = jpt__calloc(1, sizeof(*call));

    if (call == NULL)
        return NULL;
    call->r = r;
    call->batch = b;
    call->wait_ms = -1;
    jpt__loop_defer_init(&call->step, run_call_step, call);
    jpt__loop_timer_init(&call->settle_timer, on_wait_timer, call);
    jpt__loop_timer_init(&call->yield_timer, on_wait_timer, call);
    jpt__loop_timer_init(&call->limit_timer, on_limit, call);
    call->sub.heard = heard_waited;
    call->id = wc->id;
    call->name = wc->name;
    call->dialect = wc->dialect;
    call->id_made = wc->id_made;
    call->arguments = wc->arguments;
    call->problem = wc->problem;
    wc->id = wc->name = wc->problem = NULL;
    wc->arguments = NULL;
    /* Once: a tool replaced before the call runs is replaced for later
     * calls, not under this one. */
    call->tool = jpt__tool_find(r, call->name);
    if (call->tool != NULL)
        jpt__tool_ref(call->tool);
    return call;
}

void jpt__call_fly(jpt__call *call)
{
    JPT__LIST_PUSH(call->r->calls, call);
    call->in_flight = true;
    call->r->calls_in_flight++;
}

/* The call no longer counts for jpt_registry_run, nor is it listed. */
static void land(jpt__call *call)
{
    if (call->in_flight) {
        call->in_flight = false;
        call->r->calls_in_flight--;
        JPT__LIST_REMOVE(call->r->calls, call);
    }
}

/* The call stops waiting on its handle. */
static void stop_waiting(jpt__call *call)
{
    jpt__loop_timer_stop(call->r->loop, &call->settle_timer);
    jpt__loop_timer_stop(call->r->loop, &call->yield_timer);
    jpt__handle_unsubscribe(&call->sub);
}

/* The call lets go of its handle. A pre-registered spawn that never ran
 * stops with `why` as its result, so that awaits on it end. */
static void drop_handle(jpt__call *call, const char *why)
{
    jpt_handle *h = call->handle;

    if (h == NULL)
        return;
    call->handle = NULL;
    if (h->phase == JPT__PHASE_PENDING)
        jpt__handle_fail(h, why);
    jpt__handle_unref(h);
}

/* Ends everything the call has under way but its result. */
static void wind_down(jpt__call *call, const char *why)
{
    stop_waiting(call);
    jpt__loop_timer_stop(call->r->loop, &call->limit_timer);
    jpt__inquiry_orphan(call->inquiry);
    call->inquiry = NULL;
    jpt__loop_defer_cancel(call->r->loop, &call->step);
    call->step_fn = NULL;
    if (call->own != NULL && call->tool->call_ops != NULL)
        call->tool->call_ops->release(call);
    drop_handle(call, why);
}

void jpt__call_free(jpt__call *call)
{
    wind_down(call, "The spawn was cancelled before it ran");
    land(call);
    jpt__call_drop_followers(call);
    jpt__free(call->queued_on);
    json_decref(call->arguments);
    json_decref(call->input);
    jpt__tool_unref(call->tool);
    jpt__free(call->problem);
    jpt__free(call->id);
    jpt__free(call->name);
    jpt__free(call->handle_id);
    jpt__free(call->content);
    jpt__free(call->refusal);
    jpt__events_unreserve(call->done_event);
    jpt__free(call);
}

void jpt__batch_release(jpt_batch *b, bool slice)
{
    jpt_registry *r = b->r;
    jpt__slice sl = jpt__slice_begin();
    bool was_releasing = b->release_step.queued;

    jpt__loop_defer_cancel(r->loop, &b->release_step);
    while (b->released < b->nheld && (!slice || jpt__slice_more(&sl))) {
        jpt_handle *h = b->held[b->released++];
        jpt__handle_unhold(h);
        jpt__handle_unref(h);
    }
    bool more = b->released < b->nheld;
    if (more)
        jpt__loop_defer_queue(r->loop, &b->release_step);
    r->releasing = r->releasing - was_releasing + more;
}

void jpt__batch_one_done(jpt_batch *b)
{
    assert(b->pending > 0);
    if (--b->pending > 0)
        return;
    jpt__events_queue(b->r, &b->done_event, b, NULL);
    /* The handles it pre-registered may leave the id map now, from the
     * next dispatch (after the answer that ends the batch), a slice per
     * dispatch: a batch may name a hundred thousand. */
    if (b->nheld > 0) {
        b->r->releasing += !b->release_step.queued;
        jpt__loop_defer_queue(b->r->loop, &b->release_step);
    }
}

/* The calls that waited for this one's answer go on (issue 16). One that
 * ended meanwhile (cancelled before its turn) stays ended, and its own
 * followers' turn comes now: until then they still waited on the calls
 * before it, through it. That is passed on from the next dispatch, so a
 * chain of such calls as long as the model made it is a loop, not a
 * recursion. */
static void pass_turn(jpt__call *call);

static void release_followers(jpt__call *call)
{
    jpt__call **followers = call->followers;
    size_t n = call->nfollowers;

    call->followers = NULL;
    call->nfollowers = call->cap_followers = 0;
    for (size_t i = 0; i < n; i++) {
        jpt__call *f = followers[i];
        if (--f->blockers == 0)
            call_later(f, f->done ? pass_turn : start_now);
    }
    jpt__free(followers);
}

static void pass_turn(jpt__call *call)
{
    release_followers(call);
}

void jpt__call_complete(jpt__call *call, const char *content, bool is_error)
{
    jpt_batch *b = call->batch;

    if (call->done)
        return;
    /* The result reaches the model in some form: without memory to keep
     * it, as "out of memory" (jpt__call_content). */
    call->content = jpt__strdup(content);
    call->is_error = is_error || call->content == NULL;
    call->done = true;
    /* A spawn that ends without having run: its result is the handle's
     * (why its arguments were refused, say). */
    wind_down(call, call->cancelled ? "The spawn was cancelled before it ran"
                                    : jpt__call_content(call));
    /* Ended before its turn: the calls after it wait for that turn. */
    if (call->blockers == 0)
        release_followers(call);
    if (b == NULL) {
        /* Nobody reads the result. The caller may still hold the call, so
         * it is freed from the loop (or with the registry), and counts as
         * in flight until then. */
        call->step_fn = jpt__call_free;
        jpt__loop_defer_queue(call->r->loop, &call->step);
        return;
    }
    land(call);
    jpt__events_queue(call->r, &call->done_event, b, &call->handle_id);
    jpt__batch_one_done(b);
}

const char *jpt__call_content(const jpt__call *call)
{
    return call->content != NULL ? call->content : "out of memory";
}

void jpt__call_completef(jpt__call *call, bool is_error, const char *fmt, ...)
{
    jpt__buf text = JPT__BUF_INIT;
    va_list ap;

    va_start(ap, fmt);
    int rc = jpt__buf_vprintf(&text, fmt, ap);
    va_end(ap);
    jpt__call_complete(call, rc == JPT_OK ? text.data : "out of memory", is_error || rc < 0);
    jpt__buf_free(&text);
}

/* ---- Steps from the loop ------------------------------------------------------------- */

static void run_call_step(jpt__defer *d)
{
    jpt__call *call = d->ud;
    void (*fn)(jpt__call *) = call->step_fn;

    call->step_fn = NULL;
    fn(call);
}

static void cancel_now(jpt__call *call);

/* Runs `fn(call)` at the next dispatch. A cancel stands: what it ends is
 * not resumed in its place. */
static void call_later(jpt__call *call, void (*fn)(jpt__call *call))
{
    if (call->step_fn == cancel_now && call->step.queued)
        return;
    call->step_fn = fn;
    jpt__loop_defer_queue(call->r->loop, &call->step);
}

/* ---- Answering from the handle ------------------------------------------------------- */

static void finish_one_shot(jpt__call *call);

/* RFD 009's handle response; an apply whose input the tool never read (it
 * closed its input) says so first: the input was lost, not taken. */
static void respond(jpt__call *call)
{
    jpt_handle *h = jpt__handle_ref(call->handle);
    jpt__buf text = JPT__BUF_INIT;
    bool is_error = false;
    uint64_t lost = call->action == JPT__ACTION_APPLY
                        ? jpt__handle_input_lost(h) - call->input_lost
                        : 0;
    int rc = lost == 0 ? JPT_OK
                       : jpt__buf_printf(&text, "Handle `%s` no longer takes input: it closed "
                                                "its input before reading %" PRIu64
                                                " bytes of it. Its state: ",
                                         h->id, lost);

    if (rc == JPT_OK)
        rc = jpt__view_response(h, true, &text, &is_error);
    bool stopped = h->kind == JPT_STATE_STOPPED;
    if (rc == JPT_OK)
        jpt__handle_seen(h);
    if (rc == JPT_OK && stopped)
        jpt__handle_delivered(h, JPT__GIVEN_ANSWER); /* RFD 009: its id is free once it ends */
    if (rc == JPT_OK)
        jpt__call_complete(call, text.data, is_error || lost > 0);
    else
        jpt__call_complete(call, "out of memory building the response", true);
    jpt__buf_free(&text);
    /* A question that came while this action waited goes to an await
     * watching the handle (RFD 037). */
    if (!stopped)
        jpt__handle_question_free(h);
    jpt__handle_unref(h);
}

/* The handle settled or stopped, or the wait is over: answer. */
static void answer_now(jpt__call *call)
{
    stop_waiting(call);
    if (call->action == JPT__ACTION_NONE) {
        finish_one_shot(call);
        return;
    }
    /* The answer holds what the tool did up to now, even when the host
     * has not dispatched for a while (issue 7). */
    jpt__handle_refresh(call->handle);
    respond(call);
}

static void heard_waited(jpt__sub *s, unsigned what)
{
    jpt__call *call = (jpt__call *)((char *)s - offsetof(jpt__call, sub));

    if (what & (JPT__HEARD_STOPPED | JPT__HEARD_WAITING | JPT__HEARD_STATE)) {
        answer_now(call);
        return;
    }
    /* Output: an action waiting for quiet waits longer. */
    if (jpt__loop_timer_active(&call->settle_timer) &&
        jpt__loop_timer_start(call->r->loop, &call->settle_timer,
                         jpt__loop_deadline_ms(jpt__tool_settle_ms(call->r, call->tool))) < 0)
        answer_now(call);
}

static void on_wait_timer(jpt__timer *t)
{
    answer_now(t->ud);
}

/* Waits until the handle stops, or reports a state other than running;
 * with `settle`, also until its output has been quiet for the settle
 * time, or the yield time has passed. With wait_secs (call->wait_ms) a
 * handle without news is given that long to print or stop first. */
static void wait_for(jpt__call *call, bool settle)
{
    jpt_registry *r = call->r;
    jpt_handle *h = call->handle;
    bool reports = (h->tool->rt->caps & JPT__RT_REPORTS_STATES) != 0;
    int64_t settle_ms = jpt__tool_settle_ms(r, h->tool);
    int64_t yield_ms = jpt__tool_yield_ms(r, h->tool);

    /* Already there: stopped, or a tool that reports its own states
     * waiting for an answer (no settling of a waiting state). */
    bool there = call->action == JPT__ACTION_NONE || call->action == JPT__ACTION_ABORT
                     ? h->phase == JPT__PHASE_STOPPED
                     : h->kind == JPT_STATE_STOPPED;
    if (there || (reports && h->kind == JPT_STATE_WAITING && call->action != JPT__ACTION_ABORT)) {
        answer_now(call);
        return;
    }
    unsigned mask = settle ? HEARS_SETTLING
                    : call->action == JPT__ACTION_NONE ? HEARS_ONE_SHOT
                                                       : HEARS_END;
    jpt__handle_subscribe(h, &call->sub, mask, true, true);
    if (!settle)
        return;
    /* The yield limit never cuts wait_secs short. */
    if (call->wait_ms >= 0 && !jpt__view_has_news(h)) {
        settle_ms = call->wait_ms > settle_ms ? call->wait_ms : settle_ms;
        yield_ms = call->wait_ms > yield_ms ? call->wait_ms : yield_ms;
    }
    if (jpt__loop_timer_start(r->loop, &call->settle_timer, jpt__loop_deadline_ms(settle_ms)) < 0 ||
        jpt__loop_timer_start(r->loop, &call->yield_timer, jpt__loop_deadline_ms(yield_ms)) < 0)
        answer_now(call);
}

/* ---- One-shot runs and their questions ----------------------------------------------- */

static void rerun(jpt__call *call);
static void declined_step(jpt__call *call);

/* RFD 009, "Interaction with the inquiry system": the answer joins the
 * accumulated answers and the process runs again, or goes to the live
 * tool (a builtin). */
static int one_shot_answered(jpt_inquiry *q, const json_t *answer, const char *answer_json)
{
    jpt__call *call = q->owner;
    jpt_handle *h = call->handle;
    int rc;

    if (h->tool->rt->caps & JPT__RT_RERUN_TO_ANSWER) {
        if ((rc = jpt__handle_add_answer(h, q->question_id, answer)) < 0)
            return jpt__err(&q->err, rc, "out of memory keeping the answer");
        call->rounds++;
        call_later(call, rerun);
        return JPT_OK;
    }
    rc = jpt__handle_answer(h, q->question_id, answer, answer_json);
    if (rc == JPT_ERR_CANCELLED || rc == JPT_ERR_NOMEM)
        return rc;
    call->rounds++;
    if (rc < 0) {
        /* Taken, and refused by the tool: the call's result says so. */
        jpt__buf why = JPT__BUF_INIT;
        if (jpt__buf_printf(&why, "`%s` refused the answer: %s", call->name,
                            jpt_strerror(rc)) < 0)
            return JPT_ERR_NOMEM;
        jpt__free(call->refusal);
        call->refusal = jpt__buf_take(&why);
        call_later(call, declined_step);
        return JPT_OK;
    }
    wait_for(call, false);
    return JPT_OK;
}

static void one_shot_declined(jpt_inquiry *q, const char *why)
{
    jpt__call *call = q->owner;

    jpt__free(call->refusal);
    call->refusal = jpt__strdup(why);
    /* Ending the call may run a builtin's abort callback: from the loop. */
    call_later(call, declined_step);
}

static void one_shot_released(jpt_inquiry *q)
{
    ((jpt__call *)q->owner)->inquiry = NULL;
}

static const jpt__inquiry_owner one_shot_owner = {one_shot_answered, one_shot_declined,
                                                  one_shot_released};

static void declined_step(jpt__call *call)
{
    char *why = call->refusal;

    call->refusal = NULL;
    jpt__call_complete(call, why != NULL ? why : "The question was not answered", true);
    jpt__free(why);
}

/* A one-shot run ended waiting: ask, or end the call. */
static void ask_one_shot_question(jpt__call *call, const jpt_state *s)
{
    size_t qi = 0, n;
    const jpt__block *blocks = jpt__state_blocks(s, &n);

    while (qi < n && blocks[qi].type != JPT_BLOCK_QUESTION)
        qi++;
    if (qi == n) {
        jpt__call_completef(call, true, "`%s` reported that it is waiting for input but "
                                        "asked no question",
                            call->name);
        return;
    }
    const jpt__block *b = &blocks[qi];
    if (!jpt__inquiry_handler_set(call->r)) {
        jpt__call_completef(call, true,
                            "`%s` needs input that no one can give here: it asked "
                            "question `%s` (\"%s\"), and no inquiry handler is installed",
                            call->name, b->f[JPT_FIELD_ID].ptr, b->f[JPT_FIELD_TEXT].ptr);
        return;
    }
    if (call->rounds >= call->r->max_inquiry_rounds) {
        jpt__call_completef(call, true,
                            "`%s` was stopped after %d questions; it kept asking (last: `%s`)",
                            call->name, call->rounds, b->f[JPT_FIELD_ID].ptr);
        return;
    }
    jpt__inquiry_about about = {
        .question = b,
        .before = blocks,
        .nbefore = qi,
        .tool = call->name,
        .call_id = call->id,
        .target = call->tool->question_target,
    };
    if (jpt__inquiry_ask(call->r, &about, &one_shot_owner, call, &call->inquiry) < 0)
        jpt__call_complete(call, "out of memory asking the tool's question", true);
}

static void finish_one_shot(jpt__call *call)
{
    jpt_state *s = NULL;
    jpt__buf text = JPT__BUF_INIT;
    int rc = jpt__view_result(call->handle, &s);

    if (rc == JPT_OK && jpt_state_kind(s) == JPT_STATE_WAITING) {
        ask_one_shot_question(call, s);
        jpt_state_unref(s);
        return;
    }
    if (rc == JPT_OK)
        rc = jpt__view_text(call->handle, s, &text);
    if (rc == JPT_OK)
        jpt__call_complete(call, text.data != NULL ? text.data : "", jpt_state_is_error(s));
    else
        jpt__call_complete(call, "out of memory reading the tool's result", true);
    jpt_state_unref(s);
    jpt__buf_free(&text);
}

static void rerun(jpt__call *call)
{
    jpt__buf why = JPT__BUF_INIT;
    int rc = jpt__handle_start(call->handle, JPT__ACTION_NONE, &why);

    if (rc < 0)
        jpt__call_completef(call, true, "`%s` could not run again: %s", call->name,
                            why.data != NULL ? why.data : jpt_strerror(rc));
    else
        wait_for(call, false);
    jpt__buf_free(&why);
}

/* ---- Starting a call ------------------------------------------------------------------- */

/* Arguments are checked against the tool's schema before anything runs. */
static bool arguments_fit(jpt__call *call, const json_t *arguments)
{
    char *why = NULL;
    int rc = jpt__schema_check_json(call->tool->parameters, arguments, &why);

    if (rc == JPT_ERR_INVALID)
        jpt__call_completef(call, true, "Invalid arguments for `%s`: %s", call->name,
                            why != NULL ? why : "they do not match its schema");
    else if (rc < 0)
        jpt__call_complete(call, "out of memory checking the arguments", true);
    jpt__free(why);
    return rc == JPT_OK;
}

static void run_one_shot(jpt__call *call, json_t *arguments)
{
    jpt__buf why = JPT__BUF_INIT;

    if (!arguments_fit(call, arguments))
        return;
    if (jpt__handle_new(call->r, call->tool, call->id, arguments, &call->handle) < 0) {
        jpt__call_complete(call, "out of memory starting the tool", true);
        return;
    }
    int rc = jpt__handle_start(call->handle, JPT__ACTION_NONE, &why);
    if (rc < 0)
        jpt__call_completef(call, true, "`%s` could not run: %s", call->name,
                            why.data != NULL ? why.data : jpt_strerror(rc));
    else
        wait_for(call, false);
    jpt__buf_free(&why);
}

/* The handle was pre-registered by its batch (RFD 037, "await in parallel
 * tool call batches"): it starts now, or stops with the reason it cannot,
 * which an await in the same batch then reports. */
static void do_spawn(jpt__call *call, json_t *arguments)
{
    jpt_handle *h = call->handle;
    jpt__buf why = JPT__BUF_INIT;

    assert(h != NULL && h->phase == JPT__PHASE_PENDING);
    /* Bad arguments end the call, and with its text the handle. */
    if (!arguments_fit(call, arguments))
        return;
    jpt__handle_set_arguments(h, arguments);
    int rc = jpt__handle_start(h, JPT__ACTION_SPAWN, &why);
    if (rc < 0) {
        /* The call's result tells the model of the failure. */
        jpt__call_completef(call, true, "`%s` could not run: %s", call->name,
                            why.data != NULL ? why.data : jpt_strerror(rc));
    } else
        wait_for(call, true);
    jpt__buf_free(&why);
}

/* RFD 009, "Apply serves two purposes": the answer to a waiting handle's
 * question, checked against its schema, or input for a running one. */
static void do_apply(jpt__call *call, jpt_handle *h)
{
    const jpt__block *q = jpt__handle_question(h);
    char *input = NULL, *why = NULL;
    json_t *schema = NULL;
    int rc = jpt__json_dump(call->input, JSON_COMPACT | JSON_ENCODE_ANY, &input);

    if (rc == JPT_OK && q != NULL && q->f[JPT_FIELD_SCHEMA].ptr != NULL) {
        schema = jpt__json_reload(q->f[JPT_FIELD_SCHEMA].ptr, q->f[JPT_FIELD_SCHEMA].len);
        rc = schema != NULL ? jpt__schema_check_json(schema, call->input, &why) : JPT_ERR_NOMEM;
        if (rc == JPT_ERR_INVALID) {
            jpt__call_completef(call, true,
                                "The answer does not fit question `%s` of handle `%s`: %s",
                                q->f[JPT_FIELD_ID].ptr, h->id, why != NULL ? why : "");
            goto out;
        }
    }
    if (rc < 0) {
        jpt__call_complete(call, "out of memory sending the input", true);
        goto out;
    }
    call->input_lost = jpt__handle_input_lost(h);
    rc = q != NULL ? jpt__handle_answer(h, q->f[JPT_FIELD_ID].ptr, call->input, input)
                   : jpt__handle_input(h, call->input, input);
    if (rc == JPT_ERR_STATE || rc == JPT_ERR_IO || rc == JPT_ERR_CANCELLED)
        jpt__call_completef(call, true, "Handle `%s` no longer takes input", h->id);
    else if (rc < 0)
        jpt__call_completef(call, true, "`%s` refused the input: %s", call->name,
                            jpt_strerror(rc));
    else
        wait_for(call, true);
out:
    json_decref(schema);
    jpt__free(input);
    jpt__free(why);
}

/* The optional wait_secs of spawn, fetch and apply (issue 7): how long to
 * wait for the handle to print or stop. False with the call completed
 * when it is not a number of seconds, 0 or more. */
static bool take_wait_secs(jpt__call *call, const json_t *v)
{
    call->wait_ms = -1;
    if (v == NULL || json_is_null(v))
        return true;
    if (!json_is_number(v) || json_number_value(v) < 0) {
        jpt__call_completef(call, true, "Invalid arguments for `%s`: `wait_secs` must be a "
                                        "number of seconds, 0 or more", call->name);
        return false;
    }
    double secs = json_number_value(v);
    call->wait_ms = (int64_t)((secs > MAX_WAIT_SECS ? MAX_WAIT_SECS : secs) * 1000);
    return true;
}

/* The action the model asked for, one the tool supports; 0 with the call
 * completed when it is not. */
static int take_action(jpt__call *call, const json_t *action)
{
    const char *name = json_is_string(action) ? json_string_value(action) : "?";
    int a = jpt__action_from_name(name);
    char supported[64];

    if (a != 0 && (call->tool->actions & (unsigned)a))
        return a;
    jpt__actions_list(call->tool->actions, supported, sizeof(supported));
    jpt__call_completef(call, true, "`%s` does not support the action `%s` (it supports: %s)",
                        call->name, name, supported);
    return 0;
}

/* The handle id the action names; false with the call completed when it
 * names none, or none that is valid. */
static bool take_handle_id(jpt__call *call, const json_t *id)
{
#define ID_RULE "`%s` needs an `id`: 1 to 64 characters of A-Z, a-z, 0-9, '_', '.' and '-'"
    const char *action = jpt__action_name(call->action);

    if (id == NULL || json_is_null(id)) {
        jpt__call_completef(call, true, ID_RULE, action);
        return false;
    }
    /* One given: say what is wrong with it, so that the model does not
     * read that it sent none. A long one is not repeated back. */
    if (!json_is_string(id)) {
        jpt__call_completef(call, true, ID_RULE "; the `id` given is %s", action,
                            jpt__json_type_phrase(id));
        return false;
    }
    if (!jpt__valid_name(json_string_value(id), JPT__HANDLE_ID_EXTRA)) {
        size_t len = json_string_length(id);
        if (len == 0 || len > 64)
            jpt__call_completef(call, true, ID_RULE "; the `id` given is %zu bytes long",
                                action, len);
        else
            jpt__call_completef(call, true, ID_RULE "; `%s` holds other characters", action,
                                json_string_value(id));
        return false;
    }
#undef ID_RULE
    if ((call->handle_id = jpt__strdup(json_string_value(id))) == NULL) {
        jpt__call_complete(call, "out of memory", true);
        return false;
    }
    return true;
}

/* A spawn's own arguments: what the flat schema adds for the other actions
 * is not the tool's, and a spawn that carries it does not pass it on. */
static void run_spawn(jpt__call *call, const json_t *arguments)
{
    json_t *args = json_deep_copy(arguments);

    if (args == NULL) {
        jpt__call_complete(call, "out of memory", true);
        return;
    }
    json_object_del(args, "action");
    json_object_del(args, "id");
    json_object_del(args, "wait_secs");
    if (json_object_get(json_object_get(call->tool->parameters, "properties"), "input") == NULL)
        json_object_del(args, "input");
    do_spawn(call, args);
    json_decref(args);
}

/* No handle has the id: unknown (RFD 037), or gone once the model had its
 * result, which an abort finds done (no error, as for a handle its batch
 * holds). */
static void gone(jpt__call *call)
{
    jpt__buf text = JPT__BUF_INIT;
    bool ended = false;

    if (jpt__handle_missing_text(call->r, call->handle_id, &text, &ended) < 0)
        jpt__call_complete(call, "out of memory answering the call", true);
    else
        jpt__call_complete(call, text.data, !ended || call->action != JPT__ACTION_ABORT);
    jpt__buf_free(&text);
}

/* fetch, apply and abort: the handle must be the tool's, started, and
 * free of another action. */
static void act_on_handle(jpt__call *call, const json_t *arguments)
{
    jpt_handle *h = jpt__handle_find(call->r, call->handle_id);

    /* By name: a handle spawned before its tool was replaced is still the
     * tool's. */
    if (h == NULL) {
        gone(call);
        return;
    }
    if (strcmp(h->tool->name, call->name) != 0 || h->phase == JPT__PHASE_PENDING) {
        jpt__call_completef(call, true, "Handle `%s` not found", call->handle_id);
        return;
    }
    /* Only a batch that holds the handle finds it stopped and delivered:
     * an earlier call of the batch answered with its end, or its spawn
     * failed (issue 16). */
    if (h->phase == JPT__PHASE_STOPPED && h->never_ran) {
        jpt__call_completef(call, true, "Handle `%s` does not exist: its spawn failed: %s",
                            h->id, h->failure != NULL ? h->failure : "it could not run");
        return;
    }
    if (h->phase == JPT__PHASE_STOPPED && h->delivered) {
        /* An abort of it has nothing left to do: no error. */
        jpt__call_completef(call, call->action != JPT__ACTION_ABORT,
                            "Handle `%s` has stopped, and an earlier answer gave its result",
                            h->id);
        return;
    }
    /* An action of another batch waits on it (those of one batch run in
     * turn). */
    if (jpt__handle_acted_on(h)) {
        jpt__call_completef(call, true,
                            "Handle `%s` is busy with another action; try again once it "
                            "has answered",
                            h->id);
        return;
    }
    call->handle = jpt__handle_ref(h);
    switch (call->action) {
    case JPT__ACTION_FETCH:
        /* Without wait_secs a fetch answers at once. */
        if (call->wait_ms >= 0)
            wait_for(call, true);
        else
            answer_now(call);
        break;
    case JPT__ACTION_APPLY:
        if ((call->input = json_incref(json_object_get(arguments, "input"))) == NULL)
            jpt__call_complete(call, "`apply` needs an `input`", true);
        else if (h->kind == JPT_STATE_STOPPED)
            jpt__call_completef(call, true, "Handle `%s` has stopped and takes no input",
                                h->id);
        else
            do_apply(call, h);
        break;
    case JPT__ACTION_ABORT:
        jpt__handle_abort(h);
        wait_for(call, false);
        break;
    }
}

static void run_action(jpt__call *call, const json_t *arguments)
{
    if ((call->action = take_action(call, json_object_get(arguments, "action"))) == 0 ||
        !take_handle_id(call, json_object_get(arguments, "id")) ||
        !take_wait_secs(call, json_object_get(arguments, "wait_secs")))
        return;
    if (call->action == JPT__ACTION_SPAWN)
        run_spawn(call, arguments);
    else
        act_on_handle(call, arguments);
}

static void start_now(jpt__call *call)
{
    json_t *arguments = call->arguments;

    call->arguments = NULL;
    call->started = true;
    if (call->tool == NULL)
        jpt__call_completef(call, true, "Unknown tool `%s`", call->name);
    else if (call->tool->call_ops != NULL)
        call->tool->call_ops->start(call, arguments);
    /* RFD 009: the invocation decides. `action` makes it a stateful call,
     * for a tool that declares actions; for any other it is an argument. */
    else if (call->tool->stateful && json_object_get(arguments, "action") != NULL)
        run_action(call, arguments);
    else
        run_one_shot(call, arguments);
    json_decref(arguments);
}

void jpt__call_start_soon(jpt__call *call)
{
    call_later(call, start_now);
}

void jpt__call_start_in_order(jpt__call *call)
{
    if (call->blockers == 0)
        jpt__call_start_soon(call);
}

/* ---- The order of a batch's calls on one handle (issue 16) -------------------------- */

int jpt__call_each_handle(jpt__call *call, jpt__call_handle_fn fn, void *ud)
{
    const json_t *arguments = call->arguments;

    if (call->tool == NULL || call->problem != NULL || !json_is_object(arguments))
        return JPT_OK;
    if (call->tool->call_ops != NULL)
        return call->tool->call_ops->each_handle != NULL
                   ? call->tool->call_ops->each_handle(call, arguments, fn, ud)
                   : JPT_OK;
    const char *action = json_string_value(json_object_get(arguments, "action"));
    const char *id = json_string_value(json_object_get(arguments, "id"));
    /* What run_action acts on: a stateful tool's action with a valid id. */
    if (!call->tool->stateful || action == NULL || id == NULL ||
        !jpt__valid_name(id, JPT__HANDLE_ID_EXTRA))
        return JPT_OK;
    return fn(call, id,
              jpt__action_from_name(action) == JPT__ACTION_SPAWN ? JPT__NAMES_SPAWN
                                                                 : JPT__NAMES_ACTION,
              ud);
}

int jpt__call_follow(jpt__call *call, jpt__call *before, const char *id)
{
    /* Once per pair: an await may name several handles `before` names, and
     * the links of one call are made together. */
    if (before == call ||
        (before->nfollowers > 0 && before->followers[before->nfollowers - 1] == call))
        return JPT_OK;
    jpt__call **grown = jpt__array_reserve(before->followers, &before->cap_followers,
                                           before->nfollowers + 1, sizeof(*grown), 2);
    if (grown == NULL)
        return JPT_ERR_NOMEM;
    before->followers = grown;
    if (call->queued_on == NULL && (call->queued_on = jpt__strdup(id)) == NULL)
        return JPT_ERR_NOMEM;
    before->followers[before->nfollowers++] = call;
    call->blockers++;
    return JPT_OK;
}

void jpt__call_drop_followers(jpt__call *call)
{
    jpt__free(call->followers);
    call->followers = NULL;
    call->nfollowers = call->cap_followers = 0;
}

const char *jpt__call_spawn_id(const jpt__call *call)
{
    const char *action = json_string_value(json_object_get(call->arguments, "action"));
    const char *id = json_string_value(json_object_get(call->arguments, "id"));

    if (call->tool == NULL || !call->tool->stateful || call->tool->call_ops != NULL ||
        action == NULL || jpt__action_from_name(action) != JPT__ACTION_SPAWN || id == NULL ||
        !jpt__valid_name(id, JPT__HANDLE_ID_EXTRA))
        return NULL;
    return id;
}

/* ---- Cancelling ------------------------------------------------------------------------ */

/* Why a cancelled call ended: the host's cancel, or its time limit; and,
 * for a call that was still waiting its turn, that it never ran. */
static int cancel_words(const jpt__call *call, jpt__buf *why)
{
    int rc = call->limit_hit
                 ? jpt__buf_printf(why, "The call `%s` was stopped: it reached the host's time "
                                        "limit of %d ms",
                                   call->name, call->limit_ms)
                 : jpt__buf_printf(why, "The call `%s` was cancelled", call->name);

    if (rc == JPT_OK && !call->started && call->queued_on != NULL)
        rc = jpt__buf_printf(why, " before it ran (it was waiting for an earlier call on "
                                  "handle `%s` to answer)",
                             call->queued_on);
    return rc;
}

/* Completes the call with cancel_words() alone. */
static void complete_cancelled(jpt__call *call)
{
    jpt__buf why = JPT__BUF_INIT;

    if (cancel_words(call, &why) == JPT_OK)
        jpt__call_complete(call, why.data, true);
    else
        jpt__call_complete(call, "The call was cancelled", true);
    jpt__buf_free(&why);
}

/* A one-shot run that is cancelled answers with what the tool produced so
 * far (nothing lost); its process dies with its handle. */
static void cut_short(jpt__call *call)
{
    jpt__buf why = JPT__BUF_INIT, text = JPT__BUF_INIT;
    jpt_state *s = NULL;

    /* The cancel answers the call: an end taken in now must not. */
    stop_waiting(call);
    int rc = cancel_words(call, &why);
    if (rc == JPT_OK)
        rc = jpt__handle_cut_short(call->handle, why.data, &s);
    if (rc == JPT_OK)
        rc = jpt__view_text(call->handle, s, &text);
    if (rc == JPT_OK)
        jpt__call_complete(call, text.data, true);
    else
        complete_cancelled(call);
    jpt_state_unref(s);
    jpt__buf_free(&why);
    jpt__buf_free(&text);
}

static void cancel_now(jpt__call *call)
{
    if (call->done)
        return;
    if (call->own != NULL && call->tool->call_ops != NULL) {
        call->tool->call_ops->cancel(call);
        return;
    }
    bool waiting = call->sub.h != NULL;
    if (waiting && call->action != JPT__ACTION_NONE)
        answer_now(call); /* an action waiting for output to settle */
    else if (waiting)
        cut_short(call);
    else /* not started yet, or its question is pending */
        complete_cancelled(call);
}

void jpt__call_cancel_soon(jpt__call *call)
{
    if (call->done)
        return;
    call->cancelled = true;
    /* An answer to its question, from now on, is refused. */
    jpt__inquiry_orphan(call->inquiry);
    call->inquiry = NULL;
    call_later(call, cancel_now);
}

static void on_limit(jpt__timer *t)
{
    jpt__call *call = t->ud;

    call->limit_hit = true;
    jpt__call_cancel_soon(call);
}

int jpt__call_set_limit(jpt__call *call, int timeout_ms)
{
    if (call->done)
        return JPT_OK;
    jpt__loop_timer_stop(call->r->loop, &call->limit_timer);
    call->limit_ms = timeout_ms;
    if (timeout_ms == 0)
        return JPT_OK;
    return jpt__loop_timer_start(call->r->loop, &call->limit_timer,
                                 jpt__loop_deadline_ms(timeout_ms));
}

void jpt__calls_cancel_all(jpt_registry *r)
{
    size_t n = 0;

    for (jpt__call *call = r->calls; call != NULL; call = call->next)
        n++;
    /* Taken first: a call that ends leaves the list. Ending one call never
     * frees another (a call of a freed batch is freed from the loop). */
    jpt__call **calls = n > 0 ? jpt__calloc(n, sizeof(*calls)) : NULL;
    if (n > 0 && calls == NULL) {
        jpt__log(JPT_LOG_ERROR, "out of memory cancelling the calls in flight");
        return;
    }
    n = 0;
    for (jpt__call *call = r->calls; call != NULL; call = call->next)
        calls[n++] = call;
    for (size_t i = 0; i < n; i++) {
        jpt__call *call = calls[i];
        bool running = call->action == JPT__ACTION_NONE && call->sub.h != NULL;
        if (!call->done && !running) {
            call->cancelled = true;
            jpt__inquiry_orphan(call->inquiry);
            call->inquiry = NULL;
            cancel_now(call);
        }
    }
    jpt__free(calls);
}
