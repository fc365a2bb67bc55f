/* Handles: one run of a tool. A handle starts its runtime, takes in what
 * the runtime reports (text, states, the end), keeps what the model has not
 * read yet, and publishes each change to its subscribers and, when it is
 * registered, to the event queue and the registry's observers. See
 * handle.h for the order of publication and the references. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "registry/handle.h"

/* The end of a handle's stdout kept for previews (notifications, the turn
 * end's question show a few hundred bytes). */
#define RECENT_BYTES 4096

static void sink_text(jpt__run *run, int stream, const char *p, size_t n);
static void sink_partial(jpt__run *run);
static int sink_state(jpt__run *run, const jpt_state *s);
static void sink_stopped(jpt__run *run, jpt_state *final);
static void sink_lost(jpt__run *run, const char *why);
static void sink_hold(jpt__run *run);
static void sink_let_go(jpt__run *run);
static const jpt__run_sink sink = {sink_text,    sink_partial, sink_state, sink_stopped,
                                   sink_lost,    sink_hold,    sink_let_go};

static void on_timeout(jpt__timer *t);
static void tell_later(jpt__defer *d);
static void answer_later(jpt__defer *d);
static void publish(jpt_handle *h, unsigned what);

static jpt_handle *of_run(jpt__run *run)
{
    return (jpt_handle *)run;
}

/* ---- Lifecycle ----------------------------------------------------------------------- */

/* The one place the phase changes; the moves a handle may make. */
static void set_phase(jpt_handle *h, int phase)
{
    assert((h->phase == JPT__PHASE_PENDING &&
            (phase == JPT__PHASE_LIVE || phase == JPT__PHASE_STOPPED)) ||
           (h->phase == JPT__PHASE_LIVE &&
            (phase == JPT__PHASE_ENDING || phase == JPT__PHASE_STOPPED)) ||
           (h->phase == JPT__PHASE_ENDING && phase == JPT__PHASE_STOPPED) ||
           /* A one-shot run again, with the answers so far. */
           (h->phase == JPT__PHASE_STOPPED && phase == JPT__PHASE_LIVE && !h->registered));
    h->phase = phase;
}

int jpt__handle_new(jpt_registry *r, jpt__tool *t, const char *id, json_t *arguments,
                    jpt_handle **out)
{
    jpt_handle *h = jpt__calloc(1, sizeof(*h));

    *out = NULL;
    if (h == NULL)
        return JPT_ERR_NOMEM;
    h->id = jpt__strdup(id);
    h->answers = json_object();
    if (h->id == NULL || h->answers == NULL) {
        jpt__free(h->id);
        json_decref(h->answers);
        jpt__free(h);
        return JPT_ERR_NOMEM;
    }
    h->r = r;
    h->refs = 1;
    h->phase = JPT__PHASE_PENDING;
    h->kind = JPT_STATE_RUNNING;
    h->started = jpt__loop_now();
    h->tool = jpt__tool_ref(t);
    h->arguments = json_incref(arguments);
    /* Structured output is bounded like text (issue 7). */
    jpt__blockq_init(&h->blocks, r->capture_bytes);
    jpt__capture_init(&h->text, r->capture_bytes);
    jpt__capture_init(&h->recent, RECENT_BYTES);
    jpt__loop_timer_init(&h->timeout_timer, on_timeout, h);
    jpt__loop_defer_init(&h->tell_step, tell_later, h);
    jpt__loop_defer_init(&h->answer_step, answer_later, h);
    h->run.r = r;
    h->run.tool = h->tool;
    h->run.id = h->id;
    h->run.arguments = h->arguments;
    h->run.answers = h->answers;
    h->run.sink = &sink;
    JPT__LIST_PUSH(r->handles, h);
    *out = h;
    return JPT_OK;
}

static void handle_free(jpt_handle *h)
{
    jpt_registry *r = h->r;

    h->tool->rt->release(&h->run);
    jpt__loop_timer_stop(r->loop, &h->timeout_timer);
    jpt__loop_defer_cancel(r->loop, &h->tell_step);
    jpt__loop_defer_cancel(r->loop, &h->answer_step);
    json_decref(h->late_answer);
    jpt__free(h->late_qid);
    jpt__events_forget(&h->output_event);
    /* A notice keeps its copies, not the handle. */
    if (r->on_handle_change != NULL)
        r->on_handle_change(h, JPT__HEARD_GONE);
    if (h->registered)
        jpt__idmap_remove(&r->handle_ids, h->id, h);
    JPT__LIST_REMOVE(r->handles, h);
    jpt__blockq_free(&h->blocks);
    jpt__capture_free(&h->text);
    jpt__capture_free(&h->recent);
    jpt__block_clear(&h->question);
    for (size_t i = 0; i < h->stop_trace.n; i++)
        jpt__free(h->stop_trace.v[i]);
    jpt__free(h->stop_trace.v);
    jpt_state_unref(h->end);
    json_decref(h->arguments);
    json_decref(h->answers);
    jpt__tool_unref(h->tool);
    jpt__free(h->final_text);
    jpt__free(h->failure);
    jpt__free(h->id);
    jpt__free(h);
}

jpt_handle *jpt__handle_ref(jpt_handle *h)
{
    h->refs++;
    return h;
}

void jpt__handle_unref(jpt_handle *h)
{
    if (h != NULL && --h->refs == 0)
        handle_free(h);
}

int jpt__handle_register(jpt_handle *h)
{
    int rc = jpt__idmap_put(&h->r->handle_ids, h->id, h);

    if (rc == JPT_OK) {
        h->registered = true;
        jpt__handle_ref(h);
    }
    return rc;
}

jpt_handle *jpt__handle_find(jpt_registry *r, const char *id)
{
    jpt_handle *h = jpt__idmap_get(&r->handle_ids, id);

    /* A done batch lets go of its handles a slice at a time (issue 18):
     * one the model has seen stop may be registered only for that, and
     * would be gone had the batch let go at once. */
    if (h != NULL && r->releasing > 0 && h->phase == JPT__PHASE_STOPPED && h->delivered &&
        r->finish_releases != NULL) {
        r->finish_releases(r);
        h = jpt__idmap_get(&r->handle_ids, id);
    }
    return h;
}

/* ---- Ended ids ------------------------------------------------------------------------
 * The host trial: a fetch or an await of a handle whose result the model
 * had (from a notification, most often) was told "Handle `j` not found",
 * RFD 037's words for an id that never was. The last JPT__ENDED_IDS ids
 * that left the id map are kept, with how their results were given: a
 * ring of fixed entries, so that a long session holds no more. */

struct jpt__ended_id {
    char id[65];         /* a handle id is 1 to 64 characters (names.c) */
    unsigned char given; /* JPT__GIVEN_* */
};

static void remember_ended(jpt_handle *h)
{
    jpt_registry *r = h->r;
    size_t len = strlen(h->id);

    if (len >= sizeof(r->ended_ids->id))
        return;
    if (r->ended_ids == NULL &&
        (r->ended_ids = jpt__calloc(JPT__ENDED_IDS, sizeof(*r->ended_ids))) == NULL) {
        jpt__log(JPT_LOG_WARNING, "out of memory: handle '%s' will be called unknown", h->id);
        return;
    }
    struct jpt__ended_id *e = &r->ended_ids[r->ended_next];
    memcpy(e->id, h->id, len + 1);
    e->given = h->given != 0 ? h->given : JPT__GIVEN_ANSWER;
    r->ended_next = (r->ended_next + 1) % JPT__ENDED_IDS;
    if (r->nended_ids < JPT__ENDED_IDS)
        r->nended_ids++;
}

/* The latest of the ended handles named `id`, or NULL. A linear search of
 * a bounded ring, and only for an id no handle has. */
static const struct jpt__ended_id *find_ended(const jpt_registry *r, const char *id)
{
    for (size_t k = 1; k <= r->nended_ids; k++) {
        size_t i = (r->ended_next + JPT__ENDED_IDS - k) % JPT__ENDED_IDS;
        if (strcmp(r->ended_ids[i].id, id) == 0)
            return &r->ended_ids[i];
    }
    return NULL;
}

int jpt__handle_missing_text(jpt_registry *r, const char *id, jpt__buf *out, bool *ended)
{
    const struct jpt__ended_id *e = find_ended(r, id);

    *ended = e != NULL;
    if (e == NULL)
        return jpt__buf_printf(out, "Handle `%s` not found", id);
    switch (e->given) {
    case JPT__GIVEN_NEVER_RAN:
        return jpt__buf_printf(out, "Handle `%s` does not exist: its spawn never ran (the "
                                    "answer to the spawn said why)",
                               id);
    case JPT__GIVEN_NOTICE:
        return jpt__buf_printf(out, "Handle `%s` has stopped, and a notification gave its "
                                    "result",
                               id);
    case JPT__GIVEN_TURN_END:
        return jpt__buf_printf(out, "Handle `%s` has stopped, and its result was given as "
                                    "the turn ended",
                               id);
    default:
        return jpt__buf_printf(out, "Handle `%s` has stopped, and an earlier answer gave its "
                                    "result",
                               id);
    }
}

/* RFD 009, "Handle lifecycle": a stopped handle goes once the model has
 * its result; its id is free again. */
static void unregister_if_done(jpt_handle *h)
{
    if (!h->registered || h->phase != JPT__PHASE_STOPPED || !h->delivered || h->holds > 0)
        return;
    remember_ended(h);
    h->registered = false;
    jpt__idmap_remove(&h->r->handle_ids, h->id, h);
    jpt__handle_unref(h);
}

void jpt__handle_hold(jpt_handle *h)
{
    h->holds++;
}

void jpt__handle_unhold(jpt_handle *h)
{
    assert(h->holds > 0);
    h->holds--;
    unregister_if_done(h);
}

void jpt__handle_set_arguments(jpt_handle *h, json_t *arguments)
{
    json_incref(arguments);
    json_decref(h->arguments);
    h->arguments = arguments;
    h->run.arguments = arguments;
}

/* The run is over: every party hears of it, and the handle leaves the id
 * map if the model has its result. */
static void stop(jpt_handle *h)
{
    h->kind = JPT_STATE_STOPPED;
    set_phase(h, JPT__PHASE_STOPPED);
    /* Whoever hears of it may let go of the handle. */
    jpt__handle_ref(h);
    publish(h, JPT__HEARD_STOPPED);
    unregister_if_done(h);
    jpt__handle_unref(h);
}

static void set_failure(jpt_handle *h, const char *why)
{
    char *copy = jpt__strdup(why);

    /* The result is an error all the same (view.c). */
    if (copy == NULL) {
        h->lost = true;
        return;
    }
    jpt__free(h->failure);
    h->failure = copy;
    h->run.failure = copy;
}

int jpt__handle_start(jpt_handle *h, int action, jpt__buf *why)
{
    jpt_registry *r = h->r;
    int rc;

    h->run.action = action;
    h->run.aborted = false;
    h->run.read_out = h->run.read_err = 0;
    h->run.end_has_output = false;
    h->received_out = h->received_err = 0;
    h->never_ran = false;
    h->kind = JPT_STATE_RUNNING;
    jpt__free(h->failure);
    h->failure = NULL;
    h->run.failure = NULL;
    jpt_state_unref(h->end);
    h->end = NULL;
    jpt__free(h->final_text);
    h->final_text = NULL;
    if (h->phase == JPT__PHASE_PENDING)
        h->started = jpt__loop_now();
    set_phase(h, JPT__PHASE_LIVE);
    if ((rc = h->tool->rt->start(&h->run, why)) < 0) {
        /* It stops with the reason as its result (an await of it in the
         * same batch reports it); the caller answers the model. */
        if (h->phase == JPT__PHASE_LIVE) {
            set_failure(h, why->data != NULL ? why->data : jpt_strerror(rc));
            h->delivered = true;
            h->given = JPT__GIVEN_NEVER_RAN;
            h->never_ran = true;
            stop(h);
        }
        return rc;
    }
    /* A one-shot call's time limit, whatever runs it. */
    if (action == JPT__ACTION_NONE && h->tool->timeout_ms > 0 &&
        (rc = jpt__loop_timer_start(r->loop, &h->timeout_timer,
                               jpt__loop_deadline_ms(h->tool->timeout_ms))) < 0)
        jpt__handle_kill(h, "out of memory starting the tool's time limit");
    return JPT_OK;
}

static void on_timeout(jpt__timer *t)
{
    jpt_handle *h = t->ud;
    char why[128];

    snprintf(why, sizeof(why), "the tool timed out after %" PRId64 " ms and was stopped",
             h->tool->timeout_ms);
    jpt__log(JPT_LOG_INFO, "tool '%s' of '%s' timed out after %" PRId64 " ms", h->tool->name,
             h->id, h->tool->timeout_ms);
    jpt__handle_kill(h, why);
}

void jpt__handle_fail(jpt_handle *h, const char *why)
{
    if (h->phase != JPT__PHASE_PENDING)
        return;
    set_failure(h, why);
    h->started = jpt__loop_now();
    h->delivered = true;
    h->given = JPT__GIVEN_NEVER_RAN;
    h->never_ran = true;
    stop(h);
}

void jpt__handle_abort(jpt_handle *h)
{
    if (h->phase != JPT__PHASE_LIVE && h->phase != JPT__PHASE_ENDING)
        return;
    /* A tool that reported its stop keeps its result; only its process,
     * still running, is ended. */
    if (h->kind != JPT_STATE_STOPPED)
        h->run.aborted = true;
    if (h->phase == JPT__PHASE_LIVE)
        set_phase(h, JPT__PHASE_ENDING);
    h->tool->rt->abort(&h->run);
}

void jpt__handle_kill(jpt_handle *h, const char *why)
{
    if (h->phase != JPT__PHASE_LIVE && h->phase != JPT__PHASE_ENDING)
        return;
    if (h->kind != JPT_STATE_STOPPED)
        set_failure(h, why);
    if (h->phase == JPT__PHASE_LIVE)
        set_phase(h, JPT__PHASE_ENDING);
    h->tool->rt->abort(&h->run);
}

void jpt__handle_refresh(jpt_handle *h)
{
    /* The runtime may report the end meanwhile; the handle stays, its
     * caller holds it. */
    if (h->phase == JPT__PHASE_LIVE || h->phase == JPT__PHASE_ENDING)
        h->tool->rt->refresh(&h->run);
}

int jpt__handle_input(jpt_handle *h, const json_t *input, const char *input_json)
{
    if (h->phase != JPT__PHASE_LIVE)
        return JPT_ERR_STATE;
    return h->tool->rt->input(&h->run, input, input_json);
}

uint64_t jpt__handle_input_lost(const jpt_handle *h)
{
    const jpt__runtime_ops *rt = h->tool->rt;

    return rt->input_lost != NULL ? rt->input_lost(&h->run) : 0;
}

const jpt__block *jpt__handle_question(const jpt_handle *h)
{
    return h->kind == JPT_STATE_WAITING && h->has_question ? &h->question : NULL;
}

int jpt__handle_add_answer(jpt_handle *h, const char *qid, const json_t *answer)
{
    return json_object_set(h->answers, qid, (json_t *)answer) == 0 ? JPT_OK : JPT_ERR_NOMEM;
}

static void clear_question(jpt_handle *h)
{
    jpt__block_clear(&h->question);
    h->has_question = false;
    h->question_asked = false;
}

/* The runtime takes the answer; JSON text for those that want it. */
static int deliver_answer(jpt_handle *h, const char *qid, const json_t *answer,
                          const char *answer_json)
{
    char *json = NULL;
    int rc = answer_json == NULL ? jpt__json_dump(answer, JSON_COMPACT | JSON_ENCODE_ANY, &json)
                                 : JPT_OK;

    if (rc == JPT_OK)
        rc = h->tool->rt->answer(&h->run, qid, answer, answer_json != NULL ? answer_json : json);
    jpt__free(json);
    return rc;
}

/* From the loop: an answer given outside dispatch. */
static void answer_later(jpt__defer *d)
{
    jpt_handle *h = d->ud;
    json_t *answer = h->late_answer;
    char *qid = h->late_qid;

    h->late_answer = NULL;
    h->late_qid = NULL;
    if (h->phase == JPT__PHASE_LIVE && deliver_answer(h, qid, answer, NULL) < 0)
        jpt__handle_kill(h, "the tool refused the answer to its question");
    json_decref(answer);
    jpt__free(qid);
}

int jpt__handle_answer(jpt_handle *h, const char *qid, const json_t *answer,
                       const char *answer_json)
{
    const jpt__block *q = jpt__handle_question(h);
    char *id;
    int rc = JPT_OK;

    /* Only the question the handle asks now takes the answer. */
    if (q == NULL || q->f[JPT_FIELD_ID].ptr == NULL || strcmp(q->f[JPT_FIELD_ID].ptr, qid) != 0)
        return JPT_ERR_CANCELLED;
    /* `qid` may be the question's own, which goes now. */
    if ((id = jpt__strdup(qid)) == NULL)
        return JPT_ERR_NOMEM;
    /* Answered before the tool hears of it: a builtin may report its next
     * state from inside its callback. A refusal leaves it running. */
    clear_question(h);
    h->kind = JPT_STATE_RUNNING;
    if ((h->tool->rt->caps & JPT__RT_HOST_CALLBACKS) && h->r->dispatching == 0) {
        json_decref(h->late_answer);
        jpt__free(h->late_qid);
        h->late_answer = json_incref((json_t *)answer);
        h->late_qid = id;
        jpt__loop_defer_queue(h->r->loop, &h->answer_step);
        return JPT_OK;
    }
    rc = deliver_answer(h, id, answer, answer_json);
    jpt__free(id);
    return rc;
}

int jpt__handle_cut_short(jpt_handle *h, const char *why, jpt_state **out)
{
    *out = NULL;
    if (h->failure == NULL)
        set_failure(h, why);
    return h->tool->rt->partial != NULL ? h->tool->rt->partial(&h->run, out) : JPT_ERR_STATE;
}

/* ---- Publishing ---------------------------------------------------------------------- */

bool jpt__handle_watched(const jpt_handle *h)
{
    return h->nwatching > 0;
}

bool jpt__handle_acted_on(const jpt_handle *h)
{
    return h->nlast > 0;
}

static void tell(jpt_handle *h, unsigned what);

void jpt__handle_question_free(jpt_handle *h)
{
    /* Its subscribers only: the event queue and notifications had it. */
    if (jpt__handle_question(h) != NULL && h->nlast == 0)
        tell(h, JPT__HEARD_WAITING);
}

/* Links `s` into the handle's list after `at` (NULL: at the head), and
 * out again; no counts, no reference (the markers of tell_subscribers use
 * them bare). */
static void link_after(jpt_handle *h, jpt__sub *at, jpt__sub *s)
{
    s->prev = at;
    s->next = at != NULL ? at->next : h->subs;
    if (s->next != NULL)
        s->next->prev = s;
    else
        h->subs_tail = s;
    if (at != NULL)
        at->next = s;
    else
        h->subs = s;
}

static void unlink_sub(jpt_handle *h, jpt__sub *s)
{
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        h->subs = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    else
        h->subs_tail = s->prev;
    s->next = s->prev = NULL;
}

void jpt__handle_subscribe(jpt_handle *h, jpt__sub *s, unsigned mask, bool watching, bool last)
{
    s->mask = mask;
    s->watching = watching;
    s->last = last;
    s->h = jpt__handle_ref(h);
    link_after(h, h->subs_tail, s);
    h->nwatching += watching;
    h->nlast += last;
}

void jpt__handle_unsubscribe(jpt__sub *s)
{
    jpt_handle *h = s->h;

    if (h == NULL)
        return;
    unlink_sub(h, s);
    h->nwatching -= s->watching;
    h->nlast -= s->last;
    s->h = NULL;
    jpt__handle_unref(h);
}

/* Tells the subscribers of `what`, the `last` ones after the others.
 * Nothing is allocated, so that no change is lost to an allocation
 * failure (issue 18): a cursor, itself on the list, walks it, and an end
 * marker put at its tail first keeps those who subscribe meanwhile from
 * hearing a change from before their time. A subscriber may end any
 * subscription, its own included: the list's links stay whole around the
 * cursor, which never rests on a subscription it has told. Markers hear
 * nothing (no `heard`); a nested walk skips the outer one's. Both are
 * unlinked before it returns, which GCC's dangling-pointer analysis does
 * not follow. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
static void tell_subscribers(jpt_handle *h, unsigned what)
{
    jpt__sub end = {0}, cursor = {0};

    if (h->subs == NULL)
        return;
    link_after(h, h->subs_tail, &end);
    for (int pass = 0; pass < 2; pass++) {
        link_after(h, NULL, &cursor);
        while (cursor.next != &end) {
            jpt__sub *s = cursor.next;
            unlink_sub(h, &cursor);
            link_after(h, s, &cursor);
            if (s->heard != NULL && (s->mask & what) && s->last == (pass == 1))
                s->heard(s, what);
        }
        unlink_sub(h, &cursor);
    }
    unlink_sub(h, &end);
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif

/* From the loop: what changed while nobody dispatched. */
static void tell_later(jpt__defer *d)
{
    jpt_handle *h = d->ud;
    unsigned what = h->untold;

    h->untold = 0;
    jpt__handle_ref(h);
    tell_subscribers(h, what);
    jpt__handle_unref(h);
}

static void publish(jpt_handle *h, unsigned what)
{
    jpt_registry *r = h->r;

    jpt__handle_ref(h);
    if (h->registered) {
        if (what & (JPT__HEARD_OUTPUT | JPT__HEARD_WAITING | JPT__HEARD_STATE))
            jpt__events_output(r, h->id, h->tool->name, &h->output_event);
        if (what & (JPT__HEARD_WAITING | JPT__HEARD_STOPPED))
            jpt__events_state(r, h->id, h->tool->name, h->kind);
        if (r->on_handle_change != NULL)
            r->on_handle_change(h, what);
    }
    tell(h, what);
    jpt__handle_unref(h);
}

/* Subscribers run host callbacks (an action's answer ends a batch, an
 * await asks the inquiry handler): only inside dispatch, and after what
 * they were not told yet. */
static void tell(jpt_handle *h, unsigned what)
{
    if (h->r->dispatching > 0 && h->untold == 0) {
        jpt__handle_ref(h);
        tell_subscribers(h, what);
        jpt__handle_unref(h);
        return;
    }
    h->untold |= what;
    jpt__loop_defer_queue(h->r->loop, &h->tell_step);
}

void jpt__handle_seen(jpt_handle *h)
{
    if (h->registered && h->r->on_handle_change != NULL)
        h->r->on_handle_change(h, JPT__HEARD_SEEN);
}

void jpt__handle_delivered(jpt_handle *h, int how)
{
    if (h->given == 0)
        h->given = (unsigned char)how;
    h->delivered = true;
    unregister_if_done(h);
}

/* ---- What the runtime reports -------------------------------------------------------- */

/* Output that could not be kept ends the run: the model must not read a
 * result with a part silently missing, and those waiting on the handle
 * answer now, with the error (issue 18). */
static void out_of_memory(jpt_handle *h)
{
    jpt__log(JPT_LOG_ERROR, "out of memory keeping the output of '%s': it is stopped", h->id);
    h->lost = true;
    jpt__handle_kill(h, "out of memory keeping the tool's output");
}

static void sink_text(jpt__run *run, int stream, const char *p, size_t n)
{
    jpt_handle *h = of_run(run);
    /* The start of this text, part of a line, was announced already. */
    bool announced = h->partial_announced;

    h->unread_partial = false;
    h->partial_announced = false;
    if (stream == JPT__STDOUT)
        h->received_out += n;
    else
        h->received_err += n;
    if (jpt__capture_append(&h->text, p, n) < 0 ||
        (stream == JPT__STDOUT && jpt__capture_append(&h->recent, p, n) < 0))
        out_of_memory(h);
    if (h->kind == JPT_STATE_RUNNING && !announced)
        publish(h, JPT__HEARD_OUTPUT);
}

static void sink_partial(jpt__run *run)
{
    jpt_handle *h = of_run(run);

    h->unread_partial = true;
    h->partial_announced = true;
    if (h->kind == JPT_STATE_RUNNING)
        publish(h, JPT__HEARD_OUTPUT);
}

/* The text run so far becomes a block, before the blocks of a state. */
int jpt__handle_flush_text(jpt_handle *h)
{
    jpt__buf text = JPT__BUF_INIT;
    jpt__block b = {.type = JPT_BLOCK_TEXT};

    if (jpt__capture_total(&h->text) == 0)
        return JPT_OK;
    int rc = jpt__capture_text(&h->text, &text);
    if (rc == JPT_OK) {
        b.f[JPT_FIELD_TEXT].len = text.len;
        b.f[JPT_FIELD_TEXT].ptr = jpt__buf_take(&text);
        rc = b.f[JPT_FIELD_TEXT].ptr != NULL ? jpt__blockq_push(&h->blocks, &b) : JPT_ERR_NOMEM;
    }
    jpt__buf_free(&text);
    jpt__capture_reset(&h->text);
    return rc;
}

/* A state the tool reported: its blocks join the pending ones, and it
 * decides the handle's kind. */
static int absorb(jpt_handle *h, const jpt_state *s)
{
    int kind = jpt_state_kind(s);
    size_t n;
    const jpt__block *blocks = jpt__state_blocks(s, &n);
    int rc = jpt__handle_flush_text(h);

    for (size_t i = 0; rc == JPT_OK && i < n; i++) {
        jpt__block copy;
        if ((rc = jpt__block_copy(&blocks[i], &copy)) == JPT_OK)
            rc = jpt__blockq_push(&h->blocks, &copy);
        if (rc == JPT_OK && blocks[i].type == JPT_BLOCK_QUESTION && kind == JPT_STATE_WAITING &&
            !h->has_question) {
            rc = jpt__block_copy(&blocks[i], &h->question);
            h->has_question = rc == JPT_OK;
            h->question_asked = false;
        }
    }
    if (rc < 0)
        return rc;
    h->structured = true;
    h->kind = kind;
    if (kind == JPT_STATE_STOPPED) {
        const jpt__strv *trace = jpt__state_trace(s);
        h->stop_error = jpt_state_is_error(s);
        h->stop_transient = jpt__state_is_transient(s);
        for (size_t i = 0; rc == JPT_OK && i < trace->n; i++)
            rc = jpt__strv_push(&h->stop_trace, trace->v[i], strlen(trace->v[i]));
    }
    return rc;
}

static int sink_state(jpt__run *run, const jpt_state *s)
{
    jpt_handle *h = of_run(run);
    int before = h->kind;

    h->unread_partial = false;
    h->partial_announced = false;
    int rc = absorb(h, s);

    if (rc < 0)
        return rc;
    if (h->kind == JPT_STATE_WAITING && before != JPT_STATE_WAITING)
        publish(h, JPT__HEARD_WAITING);
    else if (h->kind != before)
        publish(h, JPT__HEARD_STATE);
    else
        publish(h, JPT__HEARD_OUTPUT);
    return JPT_OK;
}

static void sink_stopped(jpt__run *run, jpt_state *final)
{
    jpt_handle *h = of_run(run);

    jpt__loop_timer_stop(h->r->loop, &h->timeout_timer);
    jpt_state_unref(h->end);
    h->end = final;
    /* A one-shot run's question is read from its result (view.c); a
     * handle asks no more. */
    if (h->registered)
        clear_question(h);
    stop(h);
}

static void sink_lost(jpt__run *run, const char *why)
{
    jpt_handle *h = of_run(run);

    jpt__log(JPT_LOG_ERROR, "%s of '%s': it is stopped", why, h->id);
    h->lost = true;
    if (h->failure == NULL)
        set_failure(h, why);
    jpt__handle_kill(h, why);
}

static void sink_hold(jpt__run *run)
{
    jpt__handle_ref(of_run(run));
}

static void sink_let_go(jpt__run *run)
{
    jpt__handle_unref(of_run(run));
}

/* ---- Every handle ------------------------------------------------------------------ */

/* The live handles, each referenced, for a walk in which any may go. */
static size_t take_all(jpt_registry *r, jpt_handle ***out)
{
    size_t n = 0;

    *out = NULL;
    for (jpt_handle *h = r->handles; h != NULL; h = h->next)
        n++;
    if (n == 0 || (*out = jpt__calloc(n, sizeof(**out))) == NULL)
        return 0;
    n = 0;
    for (jpt_handle *h = r->handles; h != NULL; h = h->next)
        (*out)[n++] = jpt__handle_ref(h);
    return n;
}

void jpt__handles_kill_all(jpt_registry *r, const char *why)
{
    jpt_handle **all;
    size_t n = take_all(r, &all);

    for (size_t i = 0; i < n; i++)
        jpt__handle_kill(all[i], why);
    for (size_t i = 0; i < n; i++)
        jpt__handle_unref(all[i]);
    jpt__free(all);
}

size_t jpt__handles_take_children(jpt_registry *r, jpt__child ***out)
{
    size_t n = 0;

    *out = NULL;
    for (jpt_handle *h = r->handles; h != NULL; h = h->next)
        n++;
    if (n == 0 || (*out = jpt__calloc(n, sizeof(**out))) == NULL)
        return 0;
    n = 0;
    for (jpt_handle *h = r->handles; h != NULL; h = h->next) {
        jpt__child *c = h->tool->rt->take_child != NULL ? h->tool->rt->take_child(&h->run) : NULL;
        if (c != NULL)
            (*out)[n++] = c;
    }
    return n;
}

void jpt__handles_free_all(jpt_registry *r)
{
    while (r->handles != NULL) {
        jpt_handle *h = r->handles;
        while (h->subs != NULL) {
            jpt__sub *s = h->subs;
            h->subs = s->next;
            s->h = NULL;
        }
        handle_free(h);
    }
    jpt__free(r->ended_ids);
    r->ended_ids = NULL;
    r->nended_ids = r->ended_next = 0;
}
