/* The end of a turn (RFD 037, "Turn-end behavior"): each live handle meets
 * its tool's spawn.lifecycle.on_turn_end policy.
 *
 *   abort    killed; its output discarded, a notification saying so.
 *   await    waited for (up to the turn-end timeout); its result is queued
 *            as a notification for the next turn; past the timeout killed,
 *            the notification saying so after its last output.
 *   inquire  one question to the assistant through the inquiry handler,
 *            listing every such handle, answered per handle "wait" (its
 *            result becomes a result of the turn's batch, killed at the
 *            timeout as await's are) or "abort" (as the abort policy).
 *            Without a handler there is nobody to ask: killed at once,
 *            the notification saying why after its last output. A
 *            cancelled question: as await.
 *
 * Every handle the turn end touches has a result or a notification that
 * says what became of it (issue 16). The batch jpt_registry_end_turn
 * returns completes once every handle has settled; stopped handles the
 * model never saw leave their results as notifications and go. */
#include <stdio.h>
#include <string.h>

#include "registry/party.h"

#define MODE_NOTIFY 1  /* await: result as a notification */
#define MODE_RESULT 2  /* inquire answered wait: result into the batch */
#define MODE_ABORT 3   /* killed: result discarded */
#define MODE_ASKING 4  /* inquire: the question is out */

/* A live handle at the turn end. Its subscription holds it until it
 * settles; `h` is NULL from then on. */
typedef struct entry {
    jpt_handle *h;
    int mode;
    const char *aborted;  /* MODE_ABORT: what its notification says */
    bool settled;
    jpt__sub sub;      /* its subscription to the handle's stop; the role
                          is the entry's index */
} entry;

struct jpt__turn {
    jpt_registry *r;
    jpt_batch *batch;
    entry *entries;
    size_t n;
    size_t unsettled;
    bool asking;       /* the inquiry is out */
    bool keep;         /* JPT_TURN_KEEP: nothing is killed */
    bool abort_all;    /* JPT_TURN_ABORT: every live handle is killed */
    int busy;          /* inside a loop over the entries: not freed yet */
    jpt__timer timer;
    jpt__defer start;  /* the policies run from the loop */
    jpt__defer decide; /* so does the answer to the question */
    json_t *answer;    /* the answer, until then */
    jpt_inquiry *inquiry; /* the question, while it is out */
    char past_limit[160]; /* why a handle killed at the timeout ended */
};

/* What the notification of an aborted handle says (RFD 037: "Results are
 * lost"; the model still learns that the handle is gone). */
static const char aborted_by_policy[] =
    "The turn ended: the handle was aborted (on_turn_end \"abort\"), and its output "
    "discarded";
static const char aborted_by_answer[] =
    "The turn ended: the handle was aborted, as the answer to the turn-end question chose, "
    "and its output discarded";
static const char aborted_by_host[] =
    "The turn ended: the handle was aborted, and its output discarded";
static const char nobody_to_ask[] =
    "The turn ended with nobody to ask whether to wait for the handle (no inquiry handler): "
    "it was stopped";

static void finish_if_settled(jpt__turn *t);

/* A result of the turn's batch, named after the handle: RFD 009's
 * handle response. */
static void add_result(jpt__turn *t, jpt_handle *h)
{
    jpt__buf text = JPT__BUF_INIT;
    bool is_error = false;

    if (t->batch == NULL)
        return;
    if (jpt__view_response(h, true, &text, &is_error) < 0 ||
        jpt__batch_add_result(t->batch, h->id, h->tool->name, text.data, is_error) < 0)
        jpt__log(JPT_LOG_WARNING, "out of memory: the turn-end result of '%s' is lost", h->id);
    jpt__buf_free(&text);
}

/* The turn is done with the handle; it may be freed, so the entry lets
 * go of it. */
static void settle(jpt__turn *t, entry *e)
{
    jpt_handle *h = e->h;

    if (e->settled)
        return;
    e->settled = true;
    e->h = NULL;
    t->unsettled--;
    if (h->phase == JPT__PHASE_STOPPED && h->delivered)
        ; /* the model has its end already (a batch of its held it) */
    else if (e->mode == MODE_RESULT)
        add_result(t, h);
    else if (e->mode == MODE_ABORT && h->phase == JPT__PHASE_STOPPED)
        jpt__notify_instead(h, e->aborted, false);
    else /* its result; or, kept running (JPT_TURN_KEEP), its output so far */
        jpt__notify_force(h);
    /* Delivered one way or the other (a notice keeps its own copy). */
    if (h->phase == JPT__PHASE_STOPPED)
        jpt__handle_delivered(h, e->mode == MODE_RESULT ? JPT__GIVEN_TURN_END : JPT__GIVEN_NOTICE);
    jpt__handle_unsubscribe(&e->sub); /* may free the handle */
}

static void heard_stop(jpt__sub *s, unsigned what)
{
    jpt__turn *t = s->ud;
    entry *e = &t->entries[s->role];

    (void)what;
    if (e->mode != MODE_ASKING) {
        settle(t, e);
        finish_if_settled(t);
    }
}

/* Ends the wait for a handle: killed for `why` (it settles once reaped,
 * its result or notification saying why after its last output), aborted
 * when `why` is NULL (MODE_ABORT), or left running when the host asked to
 * keep handles. */
static void give_up_on(jpt__turn *t, entry *e, const char *why)
{
    if (e->settled)
        return;
    if (e->h->phase == JPT__PHASE_STOPPED || t->keep) {
        settle(t, e);
        return;
    }
    if (why != NULL)
        jpt__handle_kill(e->h, why);
    else
        jpt__handle_abort(e->h);
}

static void on_turn_timeout(jpt__timer *timer)
{
    jpt__turn *t = timer->ud;

    /* A builtin's abort stops its handle at once, which may settle the
     * last entry: the turn stays until the loop is over. Handles being
     * aborted are ending already. */
    t->busy++;
    for (size_t i = 0; i < t->n; i++) {
        entry *e = &t->entries[i];
        if (e->mode != MODE_ASKING && e->mode != MODE_ABORT && e->h != NULL)
            give_up_on(t, e, t->past_limit);
    }
    t->busy--;
    finish_if_settled(t);
}

static void turn_release(jpt__turn *t)
{
    jpt_registry *r = t->r;

    jpt__loop_timer_stop(r->loop, &t->timer);
    jpt__loop_defer_cancel(r->loop, &t->start);
    jpt__loop_defer_cancel(r->loop, &t->decide);
    json_decref(t->answer);
    for (size_t i = 0; i < t->n; i++)
        jpt__handle_unsubscribe(&t->entries[i].sub);
    jpt__inquiry_orphan(t->inquiry);
    if (t->batch != NULL)
        t->batch->owner_gone = NULL;
    r->turn = NULL;
    jpt__free(t->entries);
    jpt__free(t);
}

static void finish_if_settled(jpt__turn *t)
{
    jpt_registry *r = t->r;
    jpt_batch *b = t->batch;

    if (t->unsettled > 0 || t->asking || t->busy > 0)
        return;
    turn_release(t);
    /* The turn end counted as a call in flight whether or not the host
     * still holds its batch. */
    r->calls_in_flight--;
    if (b != NULL)
        jpt__batch_one_done(b);
}

/* Puts the handles of MODE_ASKING into a mode, and starts waiting. */
static void decide(jpt__turn *t, entry *e, bool wait)
{
    if (e->mode != MODE_ASKING || e->settled)
        return;
    e->mode = wait ? MODE_RESULT : MODE_ABORT;
    e->aborted = aborted_by_answer;
    if (e->h->phase == JPT__PHASE_STOPPED)
        settle(t, e);
    else if (!wait)
        give_up_on(t, e, NULL);
}

/* From the loop: aborting a handle runs a builtin's abort callback. */
static void apply_answer(jpt__defer *d)
{
    jpt__turn *t = d->ud;
    json_t *answer = t->answer;
    const json_t *list = json_object_get(answer, "handles");
    size_t i;
    const json_t *item;

    jpt__idmap actions;

    t->answer = NULL;
    t->busy++;
    /* The answer's actions by handle id (the first mention counts), so
     * that a long answer costs linear time. Its keys live in the answer. */
    jpt__idmap_init(&actions);
    json_array_foreach(list, i, item) {
        const char *id = json_string_value(json_object_get(item, "id"));
        const char *action = json_string_value(json_object_get(item, "action"));
        if (id != NULL && action != NULL &&
            jpt__idmap_put(&actions, id, (void *)action) == JPT_ERR_NOMEM)
            jpt__log(JPT_LOG_WARNING, "out of memory: handle '%s' is waited for at the "
                                      "turn end", id);
    }
    /* Deciding may settle other entries (a builtin's abort callback may
     * stop any handle): each entry is looked at as it stands. A handle the
     * answer does not mention is waited for. */
    for (size_t k = 0; k < t->n; k++) {
        entry *e = &t->entries[k];
        const char *action = e->h != NULL ? jpt__idmap_get(&actions, e->h->id) : NULL;
        if (action != NULL)
            decide(t, e, strcmp(action, "wait") == 0);
    }
    jpt__idmap_free(&actions);
    for (size_t k = 0; k < t->n; k++)
        decide(t, &t->entries[k], true);
    t->busy--;
    json_decref(answer);
    t->asking = false;
    /* The wait starts now: the question may have taken a while. */
    jpt__loop_timer_start(t->r->loop, &t->timer, jpt__loop_deadline_ms(t->r->turn_end_timeout_ms));
    finish_if_settled(t);
}

static int turn_answered(jpt_inquiry *q, const json_t *answer, const char *answer_json)
{
    jpt__turn *t = q->owner;

    (void)answer_json;
    if (t->answer != NULL)
        return JPT_ERR_STATE;
    t->answer = json_incref((json_t *)answer);
    jpt__loop_defer_queue(t->r->loop, &t->decide);
    return JPT_OK;
}

/* An unanswered turn-end question falls back to the await policy. */
static void unanswered(jpt__turn *t)
{
    for (size_t k = 0; k < t->n; k++)
        if (t->entries[k].mode == MODE_ASKING)
            t->entries[k].mode = MODE_NOTIFY;
    t->asking = false;
    jpt__loop_timer_start(t->r->loop, &t->timer, jpt__loop_deadline_ms(t->r->turn_end_timeout_ms));
    for (size_t k = 0; k < t->n; k++)
        if (t->entries[k].h != NULL && t->entries[k].h->phase == JPT__PHASE_STOPPED)
            settle(t, &t->entries[k]);
    finish_if_settled(t);
}

static void turn_declined(jpt_inquiry *q, const char *why)
{
    (void)why;
    unanswered(q->owner);
}

static void turn_released(jpt_inquiry *q)
{
    ((jpt__turn *)q->owner)->inquiry = NULL;
}

static const jpt__inquiry_owner turn_question_owner = {turn_answered, turn_declined,
                                                       turn_released};

/* RFD 037's dynamic schema: the answer names handles by id, in any order,
 * each with "wait" or "abort"; every id is one alternative of a oneOf that
 * carries the handle's details (tool, state, elapsed_secs, output_preview)
 * as properties, so the schema itself describes what it asks about. */
static int ask_turn_question(jpt__turn *t)
{
    jpt_registry *r = t->r;
    json_t *ids = json_array(), *defaults = json_array(), *details = json_array();
    int rc = ids != NULL && defaults != NULL && details != NULL ? JPT_OK : JPT_ERR_NOMEM;

    for (size_t i = 0; rc == JPT_OK && i < t->n; i++) {
        entry *e = &t->entries[i];
        if (e->mode != MODE_ASKING || e->settled)
            continue;
        double elapsed = jpt__elapsed_secs(e->h->started);
        const char *state = jpt__state_kind_name(e->h->kind);
        jpt__buf preview = JPT__BUF_INIT;
        jpt__view_preview(e->h, 200, &preview);
        jpt__field f = {preview.data != NULL ? preview.data : "", preview.len};
        json_t *detail = json_pack("{s:s, s:s, s:s, s:f, s:o}", "id", e->h->id, "tool",
                                   e->h->tool->name, "state", state,
                                   "elapsed_secs", elapsed, "output_preview",
                                   jpt__json_from_field(&f));
        jpt__buf_free(&preview);
        json_t *alternative = json_pack("{s:s, s:s, s:s, s:f, s:O}", "const", e->h->id,
                                        "tool", e->h->tool->name, "state", state,
                                        "elapsed_secs", elapsed,
                                        "output_preview",
                                        json_object_get(detail, "output_preview"));
        if (json_array_append_new(ids, alternative) < 0 ||
            json_array_append_new(defaults, json_pack("{s:s, s:s}", "id", e->h->id, "action",
                                                      "wait")) < 0 ||
            json_array_append_new(details, detail) < 0)
            rc = JPT_ERR_NOMEM;
    }

    jpt__block question = {.type = JPT_BLOCK_QUESTION};
    jpt__block context = {.type = JPT_BLOCK_TEXT};
    json_t *schema = NULL, *def = NULL;
    char *listing = NULL;
    if (rc == JPT_OK) {
        schema = json_pack("{s:s, s:{s:{s:s, s:{s:s, s:{s:{s:O}, s:{s:s, s:[s, s]}}, "
                           "s:[s, s]}}}, s:[s]}",
                           "type", "object", "properties", "handles", "type", "array", "items",
                           "type", "object", "properties", "id", "oneOf", ids, "action", "type",
                           "string", "enum", "wait", "abort", "required", "id", "action",
                           "required", "handles");
        def = json_pack("{s:O}", "handles", defaults);
        static const char text[] = "The turn is ending while these handles are still "
                                   "running. Wait for each, or abort it?";
        if (schema == NULL || def == NULL ||
            jpt__field_set(&question.f[JPT_FIELD_ID], "turn_end", 8) < 0 ||
            jpt__field_set(&question.f[JPT_FIELD_TEXT], text, sizeof(text) - 1) < 0 ||
            jpt__field_set_json(&question.f[JPT_FIELD_SCHEMA], schema) < 0 ||
            jpt__field_set_json(&question.f[JPT_FIELD_DEFAULT], def) < 0 ||
            jpt__json_dump(details, JSON_INDENT(2), &listing) < 0 ||
            jpt__field_set(&context.f[JPT_FIELD_TEXT], listing, strlen(listing)) < 0)
            rc = JPT_ERR_NOMEM;
    }
    jpt__inquiry_about about = {
        .question = &question,
        .before = &context,
        .nbefore = 1,
        .target = JPT_TARGET_ASSISTANT,
    };
    /* The handler may answer before it returns: the turn asks first. */
    t->asking = rc == JPT_OK;
    if (rc == JPT_OK)
        rc = jpt__inquiry_ask(r, &about, &turn_question_owner, t, &t->inquiry);
    json_decref(ids);
    json_decref(defaults);
    json_decref(details);
    json_decref(schema);
    json_decref(def);
    jpt__free(listing);
    jpt__block_clear(&question);
    jpt__block_clear(&context);
    if (rc < 0)
        t->asking = false;
    return rc;
}

static int by_start(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return (x->h->started > y->h->started) - (x->h->started < y->h->started);
}

/* From the loop: each handle meets its policy. */
static void run_policies(jpt__defer *d)
{
    jpt__turn *t = d->ud;
    jpt_registry *r = t->r;
    size_t asking = 0, live = 0;
    int rc = JPT_OK;

    for (jpt_handle *h = r->handles; h != NULL; h = h->next)
        live += h->registered;
    if ((t->entries = jpt__calloc(live + 1, sizeof(entry))) == NULL) {
        jpt__log(JPT_LOG_ERROR, "out of memory ending the turn: handles left as they are");
        finish_if_settled(t);
        return;
    }
    /* Take stock first: policies may stop handles (and free them). The
     * question lists the handles in the order they were spawned. */
    for (jpt_handle *h = r->handles; h != NULL; h = h->next)
        if (h->registered)
            t->entries[t->n++].h = h;
    qsort(t->entries, t->n, sizeof(*t->entries), by_start);
    for (size_t i = 0; i < t->n; i++) {
        entry *e = &t->entries[i];
        jpt_handle *h = e->h;
        e->sub.heard = heard_stop;
        e->sub.ud = t;
        e->sub.role = (unsigned)i;
        jpt__handle_subscribe(h, &e->sub, JPT__HEARD_STOPPED, true, false);
        e->aborted = t->abort_all ? aborted_by_host : aborted_by_policy;
        if (h->phase == JPT__PHASE_STOPPED)
            e->mode = MODE_NOTIFY;
        else if (t->abort_all || h->tool->on_turn_end == JPT__TURN_ABORT)
            e->mode = MODE_ABORT;
        else if (h->tool->on_turn_end == JPT__TURN_INQUIRE && jpt__inquiry_handler_set(r))
            e->mode = MODE_ASKING;
        else
            e->mode = MODE_NOTIFY; /* await, or inquire without a handler */
        asking += e->mode == MODE_ASKING;
        t->unsettled++;
    }
    if (jpt__loop_timer_start(r->loop, &t->timer, jpt__loop_deadline_ms(r->turn_end_timeout_ms)) < 0)
        jpt__log(JPT_LOG_WARNING, "out of memory: the turn end waits without a timeout");
    for (size_t i = 0; i < t->n; i++) {
        entry *e = &t->entries[i];
        jpt_handle *h = e->h;
        /* A builtin's abort may stop and settle it at once. */
        t->busy++;
        if (h == NULL)
            ;
        else if (h->phase == JPT__PHASE_STOPPED)
            /* Stopped, and the model never saw it: its result is queued,
             * whatever its flags, and the handle goes. */
            settle(t, e);
        else if (e->mode == MODE_ABORT)
            give_up_on(t, e, NULL);
        else if (e->mode == MODE_NOTIFY && h->tool->on_turn_end == JPT__TURN_INQUIRE)
            /* Inquire without a handler: nobody can say to wait for it, and
             * waiting out the timeout helps no one (issue 16). */
            give_up_on(t, e, nobody_to_ask);
        t->busy--;
    }
    /* The handler may answer before it returns; the turn stays until
     * ask_turn_question() is done with it. */
    t->busy++;
    if (asking > 0)
        rc = ask_turn_question(t);
    t->busy--;
    if (rc < 0)
        unanswered(t);
    else
        finish_if_settled(t);
}

/* The host freed the turn's batch: the turn goes on without it. */
static void batch_gone(jpt_batch *b, void *owner)
{
    jpt__turn *t = owner;

    (void)b;
    t->batch = NULL;
}

JPT_EXPORT int jpt_registry_end_turn(jpt_registry *r, unsigned flags, jpt_batch **out)
{
    if (out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    if (r == NULL || (flags & ~(JPT_TURN_KEEP | JPT_TURN_ABORT)) != 0 ||
        (flags & (JPT_TURN_KEEP | JPT_TURN_ABORT)) == (JPT_TURN_KEEP | JPT_TURN_ABORT))
        return JPT_ERR_INVALID;
    jpt__err_clear(&r->err);
    if (r->turn != NULL)
        return jpt__err(&r->err, JPT_ERR_STATE, "end_turn: the previous turn end is still "
                                                "settling");
    if (r->shutting_down)
        return jpt__err(&r->err, JPT_ERR_STATE, "end_turn: the registry is shutting down");

    jpt__turn *t = jpt__calloc(1, sizeof(*t));
    jpt_batch *b = t != NULL ? jpt__batch_new_owned(r, batch_gone, t) : NULL;
    if (b == NULL) {
        jpt__free(t);
        return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory ending the turn");
    }
    t->r = r;
    t->batch = b;
    snprintf(t->past_limit, sizeof(t->past_limit),
             "The turn end waited %d ms (turn_end_timeout_ms) for the handle to stop: it was "
             "stopped",
             r->turn_end_timeout_ms);
    t->keep = (flags & JPT_TURN_KEEP) != 0;
    t->abort_all = (flags & JPT_TURN_ABORT) != 0;
    jpt__loop_timer_init(&t->timer, on_turn_timeout, t);
    jpt__loop_defer_init(&t->start, run_policies, t);
    jpt__loop_defer_init(&t->decide, apply_answer, t);
    r->calls_in_flight++;
    r->turn = t;
    /* The policies may run builtins' abort callbacks and the inquiry
     * handler: from the loop, like every callback. */
    jpt__loop_defer_queue(r->loop, &t->start);
    *out = b;
    return JPT_OK;
}

/* ---- The turn's text (jpt_registry_take_turn_text) ----------------------------------- */

/* A result of the turn end's batch (add_result: RFD 009's handle response
 * as JSON text) as the model reads it in text. */
static int turn_result_entry(const jpt__call *call, jpt__buf *out)
{
    const char *content = call->content != NULL ? call->content : "";
    json_error_t jerr;
    json_t *resp = NULL;
    int rc = jpt__json_load(content, strlen(content), JSON_ALLOW_NUL, &resp, &jerr);

    if (rc == JPT_ERR_NOMEM)
        return rc;
    const char *state = json_string_value(json_object_get(resp, "state"));
    const json_t *said = json_object_get(resp, "result");
    if (said == NULL)
        said = json_object_get(resp, "error");
    if (said == NULL)
        said = json_object_get(resp, "content");
    bool stopped = state == NULL || strcmp(state, "stopped") == 0;
    rc = stopped ? jpt__buf_printf(out, "[Handle `%s` (tool `%s`) stopped after your last "
                                        "turn%s]\n",
                                   call->id, call->name,
                                   call->is_error ? ", with an error" : "")
                 : jpt__buf_printf(out, "[Handle `%s` (tool `%s`) was still %s as your last "
                                        "turn ended; its output:]\n",
                                   call->id, call->name, state);
    /* Not the shape add_result writes: the content as it is. */
    if (rc == JPT_OK)
        rc = json_is_string(said)
                 ? jpt__text_entry(out, json_string_value(said), json_string_length(said))
                 : jpt__text_entry(out, content, strlen(content));
    json_decref(resp);
    return rc;
}

JPT_EXPORT int jpt_registry_take_turn_text(jpt_registry *r, const jpt_batch *turn_end,
                                           char **text_out)
{
    jpt__buf text = JPT__BUF_INIT;
    int rc;

    if (text_out == NULL)
        return JPT_ERR_INVALID;
    *text_out = NULL;
    if (r == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&r->err);
    if (turn_end != NULL && (turn_end->r != r || !turn_end->owned))
        return jpt__err(&r->err, JPT_ERR_INVALID,
                        "take_turn_text: the batch is not a turn end's of this registry (the "
                        "one jpt_registry_end_turn returned): a model's batch's results go "
                        "back as tool results (jpt_batch_results_json_as)");
    if (turn_end != NULL && turn_end->pending > 0)
        return jpt__err(&r->err, JPT_ERR_STATE,
                        "take_turn_text: the turn end is still settling (jpt_batch_done is 0)");
    /* Notifications first, as they came; then what the turn end waited
     * for. Taken only once all of it is written. */
    rc = jpt__notices_text(r, &text);
    for (size_t i = 0; rc == JPT_OK && turn_end != NULL && i < turn_end->n; i++)
        rc = turn_result_entry(turn_end->calls[i], &text);
    char *taken = rc == JPT_OK ? jpt__buf_take(&text) : NULL;
    jpt__buf_free(&text);
    if (taken == NULL)
        return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory writing the turn's text");
    jpt__notices_take(r);
    *text_out = taken;
    return JPT_OK;
}

void jpt__turn_free(jpt_registry *r)
{
    if (r->turn != NULL)
        turn_release(r->turn);
}
