/* Batches: the calls of one model message. Submitting reads them (wire.c),
 * pre-registers every spawn's handle id so that an await in the same batch
 * finds it (RFD 037), and starts the calls from the next dispatch; the
 * host reads the results, cancels, and frees the batch. */
#include <string.h>

#include "registry/call.h"

/* ---- Pre-registration ----------------------------------------------------------------- */

/* RFD 037, "await in parallel tool call batches": two spawns with one id,
 * or one an active handle holds, reject the whole batch: nothing runs, and
 * every call says which id. The ids are checked through maps: linear time
 * however many spawns a batch holds. `*why` is set when it is rejected. */
static int find_collision(jpt_batch *b, jpt__buf *why)
{
    jpt__idmap seen;
    int rc = JPT_OK;

    jpt__idmap_init(&seen);
    for (size_t i = 0; i < b->n && rc == JPT_OK; i++) {
        const char *id = jpt__call_spawn_id(b->calls[i]);
        const char *holder = NULL;
        if (id == NULL)
            continue;
        if (jpt__handle_find(b->r, id) != NULL)
            holder = "an active handle already uses it";
        else if ((rc = jpt__idmap_put(&seen, id, b->calls[i])) == JPT_ERR_EXISTS)
            holder = "two spawns in this batch use it";
        if (holder != NULL)
            rc = jpt__buf_printf(why, "This batch was not run: handle ID `%s` cannot be "
                                      "used (%s). Choose unique ids and send the calls "
                                      "again.",
                                 id, holder) < 0
                     ? JPT_ERR_NOMEM
                     : JPT_ERR_EXISTS;
    }
    jpt__idmap_free(&seen);
    return rc == JPT_ERR_EXISTS ? JPT_OK : rc;
}

/* The batch keeps `h` registered until it is done: an await anywhere in
 * it finds the id (RFD 037), and a call after another on the handle finds
 * it even when the one before gave its end (issue 16). */
static int reserve_holds(jpt_batch *b, size_t more)
{
    jpt_handle **grown = jpt__array_reserve(b->held, &b->cap_held, b->nheld + more,
                                            sizeof(*grown), 4);

    if (grown == NULL)
        return JPT_ERR_NOMEM;
    b->held = grown;
    return JPT_OK;
}

static int hold(jpt_batch *b, jpt_handle *h)
{
    if (reserve_holds(b, 1) < 0)
        return JPT_ERR_NOMEM;
    jpt__handle_hold(h);
    b->held[b->nheld++] = jpt__handle_ref(h);
    return JPT_OK;
}

/* Every spawn's handle, registered and held by the batch until it is
 * done, so that an await anywhere in it finds the id, even one whose spawn
 * fails (RFD 037: "when await looks up a handle ID, the entry exists"). */
static int preregister(jpt_batch *b)
{
    json_t *none = NULL;
    size_t nspawns = 0;
    int rc = JPT_OK;

    /* Room for them all first: a handle registered is held, or the id
     * would stay taken by a spawn that never comes. */
    for (size_t i = 0; i < b->n; i++)
        nspawns += jpt__call_spawn_id(b->calls[i]) != NULL;
    if (nspawns > 0 && reserve_holds(b, nspawns) < 0)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < b->n && rc == JPT_OK; i++) {
        jpt__call *call = b->calls[i];
        const char *id = jpt__call_spawn_id(call);
        jpt_handle *h;
        if (id == NULL)
            continue;
        if (none == NULL && (none = json_object()) == NULL)
            return JPT_ERR_NOMEM;
        if ((rc = jpt__handle_new(b->r, call->tool, id, none, &h)) < 0)
            break;
        if ((rc = jpt__handle_register(h)) == JPT_OK && (rc = hold(b, h)) == JPT_OK)
            call->handle = jpt__handle_ref(h);
        jpt__handle_unref(h);
    }
    json_decref(none);
    return rc; /* on failure the caller lets go of what was made */
}

/* ---- Order ---------------------------------------------------------------------------- */

/* Issue 16: models send several calls on one handle in one message
 * (spawn + apply, apply + fetch, spawn + await + abort). An action (fetch,
 * apply, abort) runs once every call before it on its handle (an action's
 * id, an await's ids) has answered; calls on different handles run at
 * once. Spawns and awaits keep RFD 037's batches: they wait for no call
 * ("all three tool calls execute concurrently": an await waits for its
 * handles to stop, whenever they started), but the actions after them
 * wait for their answers. */
typedef struct id_order {
    jpt__call *last;   /* the last call on the id that is not an await */
    jpt__call **awaits; /* the awaits on it since */
    size_t nawaits, cap_awaits;
} id_order;

typedef struct ordering {
    jpt_batch *b;
    jpt__idmap by_id;  /* handle id -> its id_order */
    id_order **all;    /* to free */
    size_t n, cap;
} ordering;

/* The id's record, made (and a live handle of that id held) the first
 * time the batch names it; NULL when out of memory. The id's key lives in
 * the call's arguments, which outlive the map. */
static id_order *order_of(ordering *o, const char *id)
{
    id_order *rec = jpt__idmap_get(&o->by_id, id);
    jpt_handle *h;

    if (rec != NULL)
        return rec;
    id_order **grown = jpt__array_reserve(o->all, &o->cap, o->n + 1, sizeof(*grown), 8);
    if (grown == NULL)
        return NULL;
    o->all = grown;
    if ((rec = jpt__calloc(1, sizeof(*rec))) == NULL)
        return NULL;
    o->all[o->n++] = rec;
    if (jpt__idmap_put(&o->by_id, id, rec) < 0)
        return NULL;
    /* A handle this batch pre-registered is held already. */
    if ((h = jpt__handle_find(o->b->r, id)) != NULL && h->phase != JPT__PHASE_PENDING &&
        hold(o->b, h) < 0)
        return NULL;
    return rec;
}

static int order_one(jpt__call *call, const char *id, int how, void *ud)
{
    id_order *rec = order_of(ud, id);
    int rc = rec != NULL ? JPT_OK : JPT_ERR_NOMEM;

    if (rc == JPT_OK && rec->last != NULL && how == JPT__NAMES_ACTION)
        rc = jpt__call_follow(call, rec->last, id);
    if (how == JPT__NAMES_AWAIT) {
        jpt__call **grown = rc == JPT_OK ? jpt__array_reserve(rec->awaits, &rec->cap_awaits,
                                                             rec->nawaits + 1, sizeof(*grown), 2)
                                         : NULL;
        if (grown == NULL)
            return JPT_ERR_NOMEM;
        rec->awaits = grown;
        /* Named twice by one await: once. */
        if (rec->nawaits == 0 || rec->awaits[rec->nawaits - 1] != call)
            rec->awaits[rec->nawaits++] = call;
        return JPT_OK;
    }
    for (size_t i = 0; rc == JPT_OK && how != JPT__NAMES_SPAWN && i < rec->nawaits; i++)
        rc = jpt__call_follow(call, rec->awaits[i], id);
    if (rc == JPT_OK) {
        rec->last = call;
        /* After a spawn the awaits written before it still come first. */
        if (how != JPT__NAMES_SPAWN)
            rec->nawaits = 0;
    }
    return rc;
}

/* Links each call to the calls before it on its handles; linear in the
 * ids named (an await of thousands costs a lookup each). */
static int order_calls(jpt_batch *b)
{
    ordering o = {.b = b};
    int rc = JPT_OK;

    jpt__idmap_init(&o.by_id);
    for (size_t i = 0; i < b->n && rc == JPT_OK; i++)
        rc = jpt__call_each_handle(b->calls[i], order_one, &o);
    for (size_t i = 0; i < o.n; i++) {
        jpt__free(o.all[i]->awaits);
        jpt__free(o.all[i]);
    }
    jpt__free(o.all);
    jpt__idmap_free(&o.by_id);
    return rc; /* on failure the caller lets go of what was made */
}

/* ---- Letting go once done ---------------------------------------------------------- */

static void release_more(jpt__defer *d)
{
    jpt__batch_release(d->ud, true);
}

void jpt__batches_finish_releases(jpt_registry *r)
{
    for (jpt_batch *b = r->batches; b != NULL && r->releasing > 0; b = b->next)
        if (b->release_step.queued)
            jpt__batch_release(b, false);
}

/* ---- Submitting ---------------------------------------------------------------------- */

static void batch_destroy(jpt_batch *b);

/* The batch of the calls read, each a call object; JPT_ERR_NOMEM. */
static int make_batch(jpt_registry *r, jpt__wire_call *wire, size_t n, jpt_batch **out)
{
    jpt_batch *b = jpt__calloc(1, sizeof(*b));

    *out = NULL;
    if (b == NULL)
        return JPT_ERR_NOMEM;
    b->r = r;
    jpt__loop_defer_init(&b->release_step, release_more, b);
    if ((b->calls = jpt__calloc(n + 1, sizeof(*b->calls))) == NULL) {
        jpt__free(b);
        return JPT_ERR_NOMEM;
    }
    /* The events that end each call and the batch are made now: no
     * completion is lost to an allocation failure later (issue 18). */
    if ((b->done_event = jpt__events_reserve(JPT_EVENT_BATCH_DONE, NULL, NULL)) == NULL) {
        batch_destroy(b);
        return JPT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        jpt__call *call = jpt__call_new(r, b, &wire[i]);
        if (call != NULL)
            b->calls[b->n++] = call;
        if (call == NULL || (call->done_event = jpt__events_reserve(
                                 JPT_EVENT_CALL_DONE, call->id, call->name)) == NULL) {
            batch_destroy(b);
            return JPT_ERR_NOMEM;
        }
    }
    *out = b;
    return JPT_OK;
}

/* From here the calls exist: each gets a result, whatever happens. */
static void launch(jpt_batch *b, const char *rejected)
{
    jpt_registry *r = b->r;

    b->pending = b->n;
    for (size_t i = 0; i < b->n; i++)
        jpt__call_fly(b->calls[i]);
    JPT__LIST_PUSH(r->batches, b);
    for (size_t i = 0; i < b->n; i++) {
        jpt__call *call = b->calls[i];
        if (rejected != NULL)
            jpt__call_complete(call, rejected, true);
        else if (call->problem != NULL)
            jpt__call_completef(call, true, "Invalid arguments for `%s`: %s", call->name,
                                call->problem);
        else
            /* Tools' callbacks (builtins, the inquiry handler) run only
             * inside dispatch; a call that follows another on its handle
             * starts once that one has answered. */
            jpt__call_start_in_order(call);
    }
    /* A message without calls is a batch done at once; its BATCH_DONE is
     * there for the host's next dispatch, as any other batch's. */
    if (b->n == 0) {
        jpt__events_queue(r, &b->done_event, b, NULL);
        jpt__loop_wakeup(r->loop);
    }
}

JPT_EXPORT int jpt_registry_submit(jpt_registry *r, const char *calls_json, jpt_batch **out)
{
    jpt__wire_call *wire = NULL;
    jpt__buf rejected = JPT__BUF_INIT;
    jpt_batch *b = NULL;
    size_t n = 0;
    int rc;

    if (r == NULL || out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    jpt__err_clear(&r->err);
    if (calls_json == NULL)
        return jpt__err(&r->err, JPT_ERR_INVALID, "submit: the calls are NULL");
    if (r->shutting_down)
        return jpt__err(&r->err, JPT_ERR_STATE, "submit: the registry is shutting down");
    if ((rc = jpt__wire_read(r, calls_json, &wire, &n)) < 0)
        return rc;
    if ((rc = make_batch(r, wire, n, &b)) == JPT_OK &&
        (rc = find_collision(b, &rejected)) == JPT_OK && rejected.len == 0 &&
        ((rc = preregister(b)) < 0 || (rc = order_calls(b)) < 0))
        batch_destroy(b);
    else if (rc < 0 && b != NULL)
        batch_destroy(b);
    jpt__wire_free(wire, n);
    if (rc < 0) {
        jpt__buf_free(&rejected);
        return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory submitting the calls");
    }
    launch(b, rejected.len > 0 ? rejected.data : NULL);
    jpt__buf_free(&rejected);
    *out = b;
    return JPT_OK;
}

/* ---- Owned batches ------------------------------------------------------------------- */

jpt_batch *jpt__batch_new_owned(jpt_registry *r, void (*owner_gone)(jpt_batch *, void *),
                                void *owner)
{
    jpt_batch *b = jpt__calloc(1, sizeof(*b));

    if (b == NULL || (b->calls = jpt__calloc(1, sizeof(*b->calls))) == NULL ||
        (b->done_event = jpt__events_reserve(JPT_EVENT_BATCH_DONE, NULL, NULL)) == NULL) {
        if (b != NULL)
            jpt__free(b->calls);
        jpt__free(b);
        return NULL;
    }
    b->r = r;
    jpt__loop_defer_init(&b->release_step, release_more, b);
    b->pending = 1;
    b->owner_gone = owner_gone;
    b->owner = owner;
    b->owned = true;
    JPT__LIST_PUSH(r->batches, b);
    return b;
}

int jpt__batch_add_result(jpt_batch *b, const char *id, const char *name, const char *content,
                          bool is_error)
{
    jpt__wire_call wc = {.id = jpt__strdup(id), .name = jpt__strdup(name)};
    jpt__call **grown = jpt__realloc(b->calls, (b->n + 1) * sizeof(*grown));
    jpt__call *call = NULL;

    if (grown != NULL)
        b->calls = grown;
    if (grown != NULL && wc.id != NULL && wc.name != NULL)
        call = jpt__call_new(b->r, b, &wc);
    if (call != NULL)
        call->content = jpt__strdup(content);
    if (call == NULL || call->content == NULL) {
        if (call != NULL)
            jpt__call_free(call);
        jpt__free(wc.id); /* NULL once the call took them */
        jpt__free(wc.name);
        return JPT_ERR_NOMEM;
    }
    call->is_error = is_error;
    call->done = true;
    b->calls[b->n++] = call;
    return JPT_OK;
}

/* ---- Results --------------------------------------------------------------------------- */

JPT_EXPORT int jpt_batch_done(const jpt_batch *b)
{
    return b != NULL && b->pending == 0;
}

static json_t *result_json(const jpt__call *call, int dialect)
{
    jpt__wire_result_of of = {call->id, call->name, jpt__call_content(call), call->is_error,
                              call->id_made};

    return jpt__wire_result(&of, dialect);
}

JPT_EXPORT int jpt_batch_results_json(const jpt_batch *b, char **out)
{
    json_t *arr;
    int rc;

    if (out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    if (b == NULL)
        return JPT_ERR_INVALID;
    if ((arr = json_array()) == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < b->n; i++) {
        const jpt__call *call = b->calls[i];
        json_t *item = call->done ? result_json(call, JPT__DIALECT_OWN)
                                  : json_pack("{s:s, s:n, s:b, s:b}", "id", call->id,
                                              "content", "is_error", 0, "pending", 1);
        if (json_array_append_new(arr, item) < 0) {
            json_decref(arr);
            return JPT_ERR_NOMEM;
        }
    }
    rc = jpt__json_dump(arr, JSON_COMPACT, out);
    json_decref(arr);
    return rc;
}

JPT_EXPORT int jpt_batch_results_json_as(const jpt_batch *b, int dialect, char **out)
{
    json_t *arr;
    int rc;

    if (out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    if (b == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&b->r->err);
    if (dialect != JPT_DIALECT_AS_CALLED && dialect != JPT_DIALECT_OPENAI &&
        dialect != JPT_DIALECT_OPENAI_RESPONSES && dialect != JPT_DIALECT_ANTHROPIC &&
        dialect != JPT_DIALECT_GEMINI)
        return jpt__err(&b->r->err, JPT_ERR_INVALID,
                        "jpt_batch_results_json_as: %d is not a results dialect "
                        "(JPT_DIALECT_AS_CALLED, _OPENAI, _OPENAI_RESPONSES, _ANTHROPIC, "
                        "_GEMINI)",
                        dialect);
    /* The host trial: the turn end's results as tool_result blocks whose
     * tool_use_id is a handle id, which no provider accepts. */
    if (b->owned && dialect != JPT_DIALECT_AS_CALLED)
        return jpt__err(&b->r->err, JPT_ERR_INVALID,
                        "jpt_batch_results_json_as: this batch is the turn end's "
                        "(jpt_registry_end_turn), not a model's message: its results answer "
                        "no tool call of the model's, and a provider takes a tool result only "
                        "for a call of the message before it; give them to the model as text "
                        "with jpt_registry_take_turn_text()");
    /* A provider takes the results of a message all at once. */
    if (b->pending > 0)
        return jpt__err(&b->r->err, JPT_ERR_STATE,
                        "jpt_batch_results_json_as: a call of the batch is still running: a "
                        "provider takes the results of a message together");
    if ((arr = json_array()) == NULL)
        return jpt__err(&b->r->err, JPT_ERR_NOMEM, "out of memory writing the results");
    for (size_t i = 0; i < b->n; i++) {
        const jpt__call *call = b->calls[i];
        int shape = dialect != JPT_DIALECT_AS_CALLED ? dialect : call->dialect;
        if (json_array_append_new(arr, result_json(call, shape)) < 0) {
            json_decref(arr);
            return jpt__err(&b->r->err, JPT_ERR_NOMEM, "out of memory writing the results");
        }
    }
    rc = jpt__json_dump(arr, JSON_COMPACT, out);
    json_decref(arr);
    return rc < 0 ? jpt__err(&b->r->err, rc, "out of memory writing the results") : rc;
}

/* ---- Cancel and free ------------------------------------------------------------------ */

JPT_EXPORT void jpt_batch_cancel(jpt_batch *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->n; i++)
        jpt__call_cancel_soon(b->calls[i]);
}

/* The batch's call `id`, or NULL. The index is built at the first lookup,
 * so that a host cancelling each of n calls does n lookups, not n². Ids
 * repeated within a batch resolve to the first. */
static jpt__call *find_call(jpt_batch *b, const char *id)
{
    if (!b->indexed) {
        jpt__idmap_init(&b->by_id);
        for (size_t i = 0; i < b->n; i++) {
            jpt__call *call = b->calls[i];
            if (jpt__idmap_get(&b->by_id, call->id) == NULL &&
                jpt__idmap_put(&b->by_id, call->id, call) < 0) {
                jpt__idmap_free(&b->by_id);
                /* Without memory for the index: one pass. */
                for (size_t j = 0; j < b->n; j++)
                    if (strcmp(b->calls[j]->id, id) == 0)
                        return b->calls[j];
                return NULL;
            }
        }
        b->indexed = true;
    }
    return jpt__idmap_get(&b->by_id, id);
}

JPT_EXPORT int jpt_batch_cancel_call(jpt_batch *b, const char *call_id)
{
    if (b == NULL || call_id == NULL)
        return JPT_ERR_INVALID;
    jpt__call *call = find_call(b, call_id);
    if (call == NULL)
        return JPT_ERR_NOT_FOUND;
    jpt__call_cancel_soon(call);
    return JPT_OK;
}

JPT_EXPORT int jpt_batch_set_call_timeout(jpt_batch *b, const char *call_id, int timeout_ms)
{
    if (b == NULL || timeout_ms < 0)
        return JPT_ERR_INVALID;
    if (call_id != NULL) {
        jpt__call *call = find_call(b, call_id);
        return call == NULL ? JPT_ERR_NOT_FOUND : jpt__call_set_limit(call, timeout_ms);
    }
    for (size_t i = 0; i < b->n; i++) {
        int rc = jpt__call_set_limit(b->calls[i], timeout_ms);
        if (rc < 0)
            return rc;
    }
    return JPT_OK;
}

/* Frees the batch; its calls under way finish on their own and free
 * themselves, and those still waiting for their turn go with it. */
static void batch_destroy(jpt_batch *b)
{
    jpt__batch_release(b, false);
    /* Calls still waiting for their turn never run; those under way know
     * no more of them. */
    for (size_t i = 0; i < b->n; i++)
        jpt__call_drop_followers(b->calls[i]);
    for (size_t i = 0; i < b->n; i++) {
        jpt__call *call = b->calls[i];
        if (call->done || !call->in_flight || call->blockers > 0)
            jpt__call_free(call);
        else
            call->batch = NULL;
    }
    if (b->indexed)
        jpt__idmap_free(&b->by_id);
    jpt__events_unreserve(b->done_event);
    jpt__free(b->held);
    jpt__free(b->calls);
    jpt__free(b);
}

JPT_EXPORT void jpt_batch_free(jpt_batch *b)
{
    jpt_registry *r;

    if (b == NULL)
        return;
    r = b->r;
    /* A wait on it is under way (a callback frees it): the wait frees it
     * as it returns; the registry's own free frees it at once. */
    if (b->pins > 0 && !r->freeing) {
        b->free_pending = true;
        return;
    }
    if (b->owner_gone != NULL)
        b->owner_gone(b, b->owner);
    JPT__LIST_REMOVE(r->batches, b);
    batch_destroy(b);
}
