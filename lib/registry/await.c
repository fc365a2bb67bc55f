/* The await tool (RFD 037): block on handles until every one in `all` has
 * stopped and at least one in `any` has, or a timeout passes. An await
 * watches its handles: each handle knows the awaits that hold it (its
 * subscriptions), and a stop updates the counters of those alone (the
 * handles in `all` still running, the handles in `any` stopped), so the
 * cost of an event is that of the awaits it concerns, not of the handles
 * awaited, and the await answers in the dispatch in which its condition
 * is met.
 *
 * An await of many ids does its work in slices (base.h), one slice per
 * dispatch, so that no dispatch of the host's loop runs long (issues 7,
 * 18), frees included:
 *
 *   checking   every id is a string (before any is watched);
 *   resolving  the ids are found and watched (stops meanwhile are
 *              counted, the condition checked only once all are in), and
 *              the arguments' JSON let go of;
 *   waiting    for the condition, the timeout or a cancel; the handles
 *              that wait for an answer go to the inquiry handler first;
 *   answering  each handle's state is taken (once: what the answer says of
 *              it and what becomes of it agree) and the handle held, the
 *              response written and the handles let go of, slice by
 *              slice; then the call completes.
 *
 * An await of a few ids runs each phase within one dispatch, as if there
 * were no slices. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "registry/party.h"

/* Ten years: longer than any turn waits. */
#define MAX_TIMEOUT_SECS ((json_int_t)10 * 365 * 24 * 3600)
enum { CHECKING, RESOLVING, WAITING, ANSWERING };

/* A handle's state as the answer gives it, taken as answering begins. */
enum { SNAP_STOPPED = 1, SNAP_RUNNING, SNAP_WAITING, SNAP_PENDING };

/* The passes of answering. */
enum { PASS_SNAPSHOT, PASS_COMPLETED, PASS_PENDING, PASS_RELEASE };

/* What a handle is to the await (a subscription's role bits). */
#define ROLE_ALL 1u
#define ROLE_ANY 2u

typedef struct jpt__await {
    jpt__call *call;
    int phase;
    jpt__defer step;      /* the next slice */

    /* checking, resolving */
    json_t *arguments;    /* the ids live here until they are watched */
    size_t cursor;        /* ids read, `all` first, then `any` */
    size_t total;         /* ids given, repeats included */
    jpt__idmap seen;      /* id -> its index + 1, for repeats */
    json_int_t timeout_secs; /* -1: none */
    const char *pending_flag; /* a cancel that came while resolving */

    jpt_handle **handles; /* in the order given, all then any, no repeats */
    jpt__sub *subs;       /* one per handle, its role ROLE_* bits */
    size_t n;
    size_t all_left;      /* handles in `all` not stopped yet */
    bool has_any;
    size_t any_stopped;   /* handles in `any` that have stopped */
    jpt__timer timer;
    size_t asked;         /* waiting: handles put to the inquiry handler */

    /* answering: handles [released, snapped) are held (referenced) */
    unsigned char *snap;
    size_t snapped;
    const char *flag;
    jpt__buf json;
    size_t written;       /* entries looked at in this pass */
    int pass;             /* PASS_* */
    bool first;
    size_t released;
    bool failed;          /* out of memory building the answer */
} jpt__await;

static void run_slice(jpt__defer *d);

static bool satisfied(const jpt__await *a)
{
    return a->all_left == 0 && (!a->has_any || a->any_stopped > 0);
}

/* The call goes (call ops): the await lets go of everything. */
static void await_release(jpt__call *call)
{
    jpt__await *a = call->own;
    jpt_registry *r = call->r;

    jpt__loop_timer_stop(r->loop, &a->timer);
    jpt__loop_defer_cancel(r->loop, &a->step);
    for (size_t i = 0; i < a->n; i++)
        jpt__handle_unsubscribe(&a->subs[i]);
    if (a->phase == ANSWERING)
        for (size_t i = a->released; i < a->snapped; i++)
            jpt__handle_unref(a->handles[i]);
    call->own = NULL;
    json_decref(a->arguments);
    jpt__idmap_free(&a->seen);
    jpt__buf_free(&a->json);
    jpt__free(a->snap);
    jpt__free(a->handles);
    jpt__free(a->subs);
    jpt__free(a);
}

/* Ends the call with `text`, which lets go of the await (call ops). */
static void complete(jpt__await *a, const char *text, bool is_error)
{
    jpt__call_complete(a->call, text, is_error);
}

static void next_slice(jpt__await *a)
{
    jpt__loop_defer_queue(a->call->r->loop, &a->step);
}

/* ---- Answering ------------------------------------------------------------------- */

/* RFD 037's response: {"completed": […], "pending": […]}, plus
 * "timed_out" or "cancelled" when the condition was not met. Written
 * directly rather than through a JSON tree: it is on the path from a
 * child's exit to the await's answer. One entry of the current pass. */
static int write_entry(jpt__await *a, size_t i)
{
    jpt_handle *h = a->handles[i];
    jpt__buf *out = &a->json;
    int rc;

    if ((a->pass == PASS_COMPLETED) != (a->snap[i] == SNAP_STOPPED))
        return JPT_OK;
    if (!a->first && (rc = jpt__buf_putc(out, ',')) < 0)
        return rc;
    a->first = false;
    if (a->pass == PASS_COMPLETED) {
        /* RFD 037 says "result" whether or not the handle failed. */
        bool is_error;
        return jpt__view_response(h, false, out, &is_error);
    }
    static const char *const names[] = {
        [SNAP_RUNNING] = "running", [SNAP_WAITING] = "waiting", [SNAP_PENDING] = "pending"};
    if ((rc = jpt__buf_puts(out, "{\"id\":")) < 0 ||
        (rc = jpt__buf_json_string(out, h->id, strlen(h->id))) < 0)
        return rc;
    return jpt__buf_printf(out, ",\"state\":\"%s\"}", names[a->snap[i]]);
}

/* Takes handle i's state for the answer, and holds the handle until the
 * answer is written. */
static void snapshot(jpt__await *a, size_t i)
{
    jpt_handle *h = a->handles[i];

    jpt__handle_ref(h);
    jpt__handle_unsubscribe(&a->subs[i]);
    /* A tool that said it stopped but whose process has not ended yet is
     * still running. */
    a->snap[i] = h->phase == JPT__PHASE_STOPPED   ? SNAP_STOPPED
                 : h->phase == JPT__PHASE_PENDING ? SNAP_PENDING
                 : h->kind == JPT_STATE_WAITING  ? SNAP_WAITING
                                                  : SNAP_RUNNING;
}

/* A slice of the answer, in passes over the handles: their states are
 * taken (each once, so that what the answer says of a handle and what
 * becomes of it agree), the completed entries written, then the pending
 * ones; last, the handles are let go of and the call completes. */
static void answer_slice(jpt__await *a)
{
    jpt__slice sl = jpt__slice_begin();

    while (a->pass == PASS_SNAPSHOT && jpt__slice_more(&sl)) {
        if (a->snapped == a->n) {
            a->failed = jpt__buf_puts(&a->json, "{\"completed\":[") < 0;
            a->pass = PASS_COMPLETED;
            break;
        }
        snapshot(a, a->snapped++);
    }
    while ((a->pass == PASS_COMPLETED || a->pass == PASS_PENDING) && sl.left > 0) {
        for (; a->written < a->n && jpt__slice_more(&sl); a->written++)
            if (!a->failed && write_entry(a, a->written) < 0)
                a->failed = true;
        if (a->written < a->n)
            break;
        a->failed |= jpt__buf_puts(&a->json,
                                   a->pass == PASS_COMPLETED ? "],\"pending\":[" : "]") < 0;
        a->pass++;
        a->written = 0;
        a->first = true;
    }
    /* The model now holds the stopped handles' results (RFD 009, "Handle
     * lifecycle"): delivered, and no longer held, a slice at a time. */
    for (; a->pass == PASS_RELEASE && a->released < a->n && jpt__slice_more(&sl);
         a->released++) {
        jpt_handle *h = a->handles[a->released];
        if (!a->failed && a->snap[a->released] == SNAP_STOPPED) {
            jpt__handle_seen(h);
            jpt__handle_delivered(h, JPT__GIVEN_ANSWER);
        }
        jpt__handle_unref(h);
    }
    if (a->pass != PASS_RELEASE || a->released < a->n) {
        next_slice(a);
        return;
    }
    if (!a->failed && a->flag != NULL)
        a->failed = jpt__buf_printf(&a->json, ",\"%s\":true", a->flag) < 0;
    if (!a->failed)
        a->failed = jpt__buf_putc(&a->json, '}') < 0;
    if (a->failed) {
        complete(a, "out of memory building the await response", true);
        return;
    }
    char *text = jpt__buf_take(&a->json);
    complete(a, text != NULL ? text : "out of memory building the await response",
             text == NULL);
    jpt__free(text);
}

/* The condition is met, the time is up, or the call is cancelled: the
 * answer begins. */
static void answer_await(jpt__await *a, const char *flag)
{
    jpt_registry *r = a->call->r;

    if (a->phase == ANSWERING)
        return;
    if (a->phase == CHECKING || a->phase == RESOLVING) {
        /* Not every id is watched yet: the answer waits for them. */
        a->pending_flag = flag;
        return;
    }
    jpt__loop_timer_stop(r->loop, &a->timer);
    a->snap = jpt__calloc(a->n ? a->n : 1, sizeof(*a->snap));
    if (a->snap == NULL) {
        complete(a, "out of memory building the await response", true);
        return;
    }
    a->phase = ANSWERING;
    a->pass = PASS_SNAPSHOT;
    a->flag = flag;
    a->first = true;
    answer_slice(a);
}

/* ---- Questions of the handles it watches --------------------------------------------
 * RFD 037, "Waiting handles and the inquiry system": a handle an await
 * watches that asks, while no action of the model waits on it, has its
 * question put to the inquiry handler; the answer goes to the tool. The
 * inquiry holds the handle. */

static int handle_answered(jpt_inquiry *q, const json_t *answer, const char *answer_json)
{
    return jpt__handle_answer(q->owner, q->question_id, answer, answer_json);
}

/* A declined question still brings the tool to its end, with an error
 * result (RFD 037). */
static void handle_declined(jpt_inquiry *q, const char *why)
{
    jpt__handle_kill(q->owner, why);
}

static void handle_released(jpt_inquiry *q)
{
    jpt__handle_unref(q->owner);
}

static const jpt__inquiry_owner handle_question_owner = {handle_answered, handle_declined,
                                                         handle_released};

/* `call_id` is the await's: the call under which the question arose
 * (jpt_inquiry_call_id). */
static void ask_for(jpt_handle *h, const char *call_id)
{
    const jpt__block *question = jpt__handle_question(h);
    jpt_state *s = NULL;

    if (question == NULL || h->question_asked || jpt__handle_acted_on(h) ||
        !jpt__inquiry_handler_set(h->r))
        return;
    /* The context is the output the tool showed with its question. */
    if (jpt__view_take(h, true, &s) < 0) {
        jpt__log(JPT_LOG_WARNING, "out of memory asking handle '%s''s question", h->id);
        return;
    }
    size_t before = 0, n;
    const jpt__block *blocks = jpt__state_blocks(s, &n);
    while (before < n && blocks[before].type != JPT_BLOCK_QUESTION)
        before++;
    jpt__inquiry_about about = {
        .question = question,
        .before = blocks,
        .nbefore = before,
        .tool = h->tool->name,
        .call_id = call_id,
        .handle_id = h->id,
        .target = h->tool->question_target,
    };
    h->question_asked = true;
    jpt__handle_ref(h);
    if (jpt__inquiry_ask(h->r, &about, &handle_question_owner, h, NULL) < 0) {
        h->question_asked = false;
        jpt__handle_unref(h);
        jpt__log(JPT_LOG_WARNING, "out of memory asking handle '%s''s question", h->id);
    }
    jpt_state_unref(s);
}

static void heard_awaited(jpt__sub *s, unsigned what)
{
    jpt__await *a = s->ud;

    if (what & JPT__HEARD_STOPPED) {
        if (s->role & ROLE_ALL)
            a->all_left--;
        if (s->role & ROLE_ANY)
            a->any_stopped++;
        if (a->phase == WAITING && satisfied(a))
            answer_await(a, NULL);
        return;
    }
    /* Waiting counts as pending while the inquiry handler resolves it. */
    if ((what & JPT__HEARD_WAITING) && a->phase == WAITING)
        ask_for(s->h, a->call->id);
}

static void on_await_timeout(jpt__timer *t)
{
    answer_await(t->ud, "timed_out");
}

/* ---- Resolving ------------------------------------------------------------------- */

/* `list` (the `any` or `all` argument) is an array, or absent; false with
 * the call completed when it is not. Its ids are checked in slices
 * (check_slice), before any is watched, so that a malformed call never
 * half-starts. */
static bool check_list(jpt__call *call, const json_t *list, const char *name)
{
    if (list == NULL || json_is_null(list) || json_is_array(list))
        return true;
    jpt__call_completef(call, true, "Invalid arguments for `await`: `%s` must be an array of "
                                    "handle IDs", name);
    return false;
}

static bool check_arguments(jpt__call *call, const json_t *arguments)
{
    const json_t *timeout = json_object_get(arguments, "timeout_secs");
    const json_t *all = json_object_get(arguments, "all");
    const json_t *any = json_object_get(arguments, "any");

    /* RFD 037, "Recursive await": await is not a stateful tool. */
    if (json_object_get(arguments, "action") != NULL) {
        jpt__call_complete(call, "`await` is not a stateful tool: it takes no `action` and "
                                 "cannot be spawned", true);
        return false;
    }
    if (!check_list(call, all, "all") || !check_list(call, any, "any"))
        return false;
    if (timeout != NULL && !json_is_null(timeout) &&
        (!json_is_integer(timeout) || json_integer_value(timeout) < 0)) {
        jpt__call_complete(call, "Invalid arguments for `await`: `timeout_secs` must be a "
                                 "whole number of seconds, 0 or more", true);
        return false;
    }
    if (json_array_size(all) + json_array_size(any) == 0) {
        jpt__call_complete(call, "At least one handle ID required", true);
        return false;
    }
    return true;
}

/* Id number `k` of the arguments, `all` first, and whether it is in `all`
 * and where in its list. */
static const json_t *id_at(const jpt__await *a, size_t k, bool *in_all, size_t *index)
{
    const json_t *all = json_object_get(a->arguments, "all");
    size_t nall = json_array_size(all);

    *in_all = k < nall;
    *index = *in_all ? k : k - nall;
    return json_array_get(*in_all ? all : json_object_get(a->arguments, "any"), *index);
}

/* Checks a slice of the ids: false with the call completed at the first
 * that is not a string. */
static bool check_ids(jpt__await *a, jpt__slice *sl)
{
    for (; a->cursor < a->total && jpt__slice_more(sl); a->cursor++) {
        bool in_all;
        size_t i;
        const json_t *id = id_at(a, a->cursor, &in_all, &i);
        if (!json_is_string(id)) {
            jpt__call_completef(a->call, true, "Invalid arguments for `await`: `%s[%zu]` is "
                                               "%s, not a handle ID",
                                in_all ? "all" : "any", i, jpt__json_type_phrase(id));
            return false;
        }
    }
    return true;
}

/* Takes id number `k` of the arguments (`all` first); false with the call
 * completed when it names no handle. */
static bool take_id(jpt__await *a, size_t k)
{
    bool in_all;
    size_t index;
    const char *id = json_string_value(id_at(a, k, &in_all, &index));
    unsigned role = in_all ? ROLE_ALL : ROLE_ANY;
    uintptr_t seen = (uintptr_t)jpt__idmap_get(&a->seen, id);
    jpt__sub *s;

    if (seen != 0) {
        /* Named again (in `any` after `all`): one more role for the
         * watch, counted as the first was. */
        s = &a->subs[seen - 1];
        if (!(s->role & role) && role == ROLE_ANY &&
            a->handles[seen - 1]->phase == JPT__PHASE_STOPPED)
            a->any_stopped++;
        s->role |= role;
        a->has_any |= role == ROLE_ANY;
        return true;
    }
    /* RFD 037: an unknown id is an error, not a silent skip; one that
     * went after the model had its result says so. */
    jpt_handle *h = jpt__handle_find(a->call->r, id);
    if (h == NULL) {
        jpt__buf text = JPT__BUF_INIT;
        bool ended;
        bool ok = jpt__handle_missing_text(a->call->r, id, &text, &ended) == JPT_OK;
        complete(a, ok ? text.data : "Handle not found", true);
        jpt__buf_free(&text);
        return false;
    }
    /* The map has room for every id (await_start): this never fails. */
    jpt__idmap_put(&a->seen, h->id, (void *)(uintptr_t)(a->n + 1));
    size_t i = a->n++;
    a->handles[i] = h;
    /* Stopped as watchers count it: a tool may report its stop before its
     * process has ended, and is announced only then. */
    bool stopped = h->phase == JPT__PHASE_STOPPED;
    a->has_any |= role == ROLE_ANY;
    if (role == ROLE_ALL && !stopped)
        a->all_left++;
    if (role == ROLE_ANY && stopped)
        a->any_stopped++;
    a->subs[i].heard = heard_awaited;
    a->subs[i].ud = a;
    a->subs[i].role = role;
    jpt__handle_subscribe(h, &a->subs[i], JPT__HEARD_STOPPED | JPT__HEARD_WAITING, true, false);
    return true;
}

/* Waiting counts as pending while the inquiry handler resolves it: the
 * handles waiting for an answer are put to it, a slice at a time. */
static void ask_slice(jpt__await *a)
{
    jpt__slice sl = jpt__slice_begin();

    while (a->asked < a->n && a->phase == WAITING && jpt__slice_more(&sl))
        ask_for(a->handles[a->asked++], a->call->id);
    if (a->phase == WAITING && a->asked < a->n)
        next_slice(a);
}

/* Every id is watched: the condition may hold already; else the timeout
 * starts and waiting handles go to the inquiry handler. */
static void resolved(jpt__await *a)
{
    jpt_registry *r = a->call->r;

    a->phase = WAITING;
    jpt__idmap_free(&a->seen);
    /* RFD 037: an already satisfied condition returns without blocking. */
    if (a->pending_flag != NULL || satisfied(a)) {
        answer_await(a, a->pending_flag);
        return;
    }
    /* Beyond any real wait, a timeout is no limit at all; clamped, the
     * product below cannot overflow. */
    json_int_t secs = a->timeout_secs > MAX_TIMEOUT_SECS ? MAX_TIMEOUT_SECS : a->timeout_secs;
    if (secs >= 0 && jpt__loop_timer_start(r->loop, &a->timer, jpt__loop_deadline_ms(secs * 1000)) < 0) {
        answer_await(a, "timed_out");
        return;
    }
    ask_slice(a);
}

/* Lets go of the ids' JSON, a slice of elements at a time from the end:
 * freeing a hundred thousand strings at once would stall a dispatch. True
 * once it is all gone. */
static bool drop_arguments(jpt__await *a, jpt__slice *sl)
{
    static const char *const keys[] = {"any", "all"};
    bool dropped = false, gone = true;

    for (size_t k = 0; k < 2 && gone; k++) {
        json_t *list = json_object_get(a->arguments, keys[k]);
        for (size_t n = json_array_size(list); n > 0 && jpt__slice_more(sl); n--) {
            json_array_remove(list, n - 1);
            dropped = true;
        }
        gone = json_array_size(list) == 0;
    }
    /* The blocks just freed are merged now, not all at once later. */
    if (dropped)
        jpt__alloc_settle();
    if (!gone)
        return false;
    json_decref(a->arguments);
    a->arguments = NULL;
    return true;
}

/* A slice of checking, then of resolving. */
static void resolve_slice(jpt__await *a)
{
    jpt__slice sl = jpt__slice_begin();

    if (a->phase == CHECKING) {
        if (!check_ids(a, &sl))
            return; /* the await is gone */
        if (a->cursor < a->total) {
            next_slice(a);
            return;
        }
        a->phase = RESOLVING;
        a->cursor = 0;
    }
    for (; a->cursor < a->total && jpt__slice_more(&sl); a->cursor++)
        if (!take_id(a, a->cursor))
            return; /* the await is gone */
    if (a->cursor == a->total && drop_arguments(a, &sl))
        resolved(a);
    else
        next_slice(a);
}

static void run_slice(jpt__defer *d)
{
    jpt__await *a = d->ud;

    if (a->phase == CHECKING || a->phase == RESOLVING)
        resolve_slice(a);
    else if (a->phase == WAITING)
        ask_slice(a);
    else
        answer_slice(a);
}

/* A new await of `total` ids, checking; NULL when out of memory. The map
 * of the ids seen has room for them all from the start: growing it would
 * move every entry at once. */
static jpt__await *await_new(jpt__call *call, json_t *arguments, size_t total)
{
    const json_t *timeout = json_object_get(arguments, "timeout_secs");
    jpt__await *a = jpt__calloc(1, sizeof(*a));

    if (a == NULL)
        return NULL;
    jpt__idmap_init(&a->seen);
    if (total > SIZE_MAX / sizeof(*a->subs)) {
        jpt__free(a);
        return NULL;
    }
    /* Filled as the ids are taken: their pages are touched then, slice by
     * slice. */
    if ((a->handles = jpt__malloc(total * sizeof(*a->handles))) == NULL ||
        (a->subs = jpt__malloc(total * sizeof(*a->subs))) == NULL ||
        jpt__idmap_reserve(&a->seen, total) < 0) {
        jpt__free(a->handles);
        jpt__free(a->subs);
        jpt__idmap_free(&a->seen);
        jpt__free(a);
        return NULL;
    }
    a->call = call;
    a->phase = CHECKING;
    a->arguments = json_incref(arguments);
    a->total = total;
    a->timeout_secs = json_is_integer(timeout) ? json_integer_value(timeout) : -1;
    jpt__loop_timer_init(&a->timer, on_await_timeout, a);
    jpt__loop_defer_init(&a->step, run_slice, a);
    return a;
}

static void await_start(jpt__call *call, json_t *arguments)
{
    if (!check_arguments(call, arguments))
        return;
    jpt__await *a = await_new(call, arguments,
                              json_array_size(json_object_get(arguments, "all")) +
                                  json_array_size(json_object_get(arguments, "any")));
    if (a == NULL) {
        jpt__call_complete(call, "out of memory starting the await", true);
        return;
    }
    call->own = a;
    resolve_slice(a);
}

static void await_cancel(jpt__call *call)
{
    answer_await(call->own, "cancelled");
}

/* The ids of `all` and `any`, for the order of a batch's calls (issue 16,
 * batch.c). */
static int await_each_handle(jpt__call *call, const json_t *arguments, jpt__call_handle_fn fn,
                             void *ud)
{
    static const char *const lists[] = {"all", "any"};
    int rc = JPT_OK;

    for (size_t k = 0; k < 2 && rc == JPT_OK; k++) {
        const json_t *list = json_object_get(arguments, lists[k]);
        size_t i;
        const json_t *id;
        json_array_foreach(list, i, id) {
            if (json_is_string(id) &&
                (rc = fn(call, json_string_value(id), JPT__NAMES_AWAIT, ud)) < 0)
                break;
        }
    }
    return rc;
}

const jpt__call_ops jpt__await_ops = {await_each_handle, await_start, await_cancel,
                                      await_release};
