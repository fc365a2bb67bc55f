/* Calls and batches: what the model asked for, dispatched to handles, and
 * the results it reads. A call's failure (unknown tool, bad arguments,
 * unknown handle, …) is its result, worded for the model; it never fails
 * the batch. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

/* ---- Completing calls --------------------------------------------------------- */

/* The registry's list holds every call in flight, and the finished calls
 * of freed batches until they are freed. */
static void unlink_call(jpt__call *call)
{
    JPT__LIST_REMOVE(call->r->calls, call);
}

/* The call no longer counts for jpt_registry_run. */
static void leave_flight(jpt__call *call)
{
    if (call->in_flight) {
        call->in_flight = false;
        call->r->calls_in_flight--;
    }
}

void jpt__call_free(jpt__call *call)
{
    jpt_registry *r = call->r;

    if (call->handle != NULL && call->handle->waiter == call)
        call->handle->waiter = NULL;
    jpt__await_free(call);
    /* A one-shot handle belongs to its call; a pre-registered spawn that
     * never ran stops, so that awaits on it end. */
    if (call->handle != NULL && call->action == JPT__ACTION_NONE && !call->handle->registered)
        jpt__handle_free(call->handle);
    else if (call->handle != NULL && call->handle->placeholder)
        jpt__handle_fail(call->handle, "the spawn was cancelled before it ran");
    jpt__inquiry_detach(call);
    jpt__defer_cancel(r->loop, &call->step);
    json_decref(call->arguments);
    jpt__free(call->answer);
    leave_flight(call);
    unlink_call(call);
    json_decref(call->input);
    jpt__free(call->id);
    jpt__free(call->name);
    jpt__free(call->handle_id);
    jpt__free(call->content);
    jpt__free(call);
}

void jpt__call_complete(jpt__call *call, const char *content, bool is_error)
{
    jpt_registry *r = call->r;
    jpt_batch *b = call->batch;

    if (call->done)
        return;
    call->content = jpt__strdup(content);
    if (call->content == NULL) {
        /* The result must reach the model in some form. */
        call->content = jpt__strdup("out of memory");
        is_error = true;
    }
    call->is_error = is_error;
    if (call->handle != NULL && call->handle->waiter == call)
        call->handle->waiter = NULL;
    if (call->action == JPT__ACTION_NONE && call->handle != NULL && !call->handle->registered) {
        jpt__handle_free(call->handle);
        call->handle = NULL;
    }
    jpt__inquiry_detach(call);
    jpt__defer_cancel(r->loop, &call->step);
    call->step_fn = NULL;
    call->done = true;
    /* A spawn that ends without having run (cancelled before it started):
     * its pre-registered handle stops now, so that awaits on it end. */
    if (call->handle != NULL && call->handle->placeholder) {
        jpt_handle *h = call->handle;
        call->handle = NULL;
        jpt__handle_fail(h, "The spawn was cancelled before it ran");
    }

    if (b == NULL) {
        /* Nobody reads the result. The caller may still hold the call, so
         * it is freed from the loop (or with the registry), and counts as
         * in flight until then. */
        call->step_fn = jpt__call_free;
        jpt__defer_queue(r->loop, &call->step);
        return;
    }
    leave_flight(call);
    unlink_call(call);
    jpt__registry_event(r, JPT_EVENT_CALL_DONE, call, call->handle);
    if (--b->pending == 0) {
        jpt__registry_event(r, JPT_EVENT_BATCH_DONE, call, NULL);
        jpt__batch_unhold(b);
    }
}

void jpt__call_completef(jpt__call *call, bool is_error, const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    jpt__call_complete(call, text, is_error);
}

static int response_json(const char *id, const char *state, const char *key,
                         const char *text, size_t len, char **out)
{
    jpt__field f = {(char *)(text != NULL ? text : ""), text != NULL ? len : 0};
    json_t *resp = json_pack("{s:s, s:s, s:o}", "id", id, "state", state, key,
                             jpt__json_from_field(&f));
    int rc = resp != NULL ? jpt__json_dump(resp, JSON_COMPACT, out) : JPT_ERR_NOMEM;

    json_decref(resp);
    return rc;
}

/* RFD 009's handle response: {"id","state","content"} while the handle
 * lives, {"id","state","result"|"error"} once it stopped. */
static void respond_with_state(jpt__call *call, jpt_handle *h)
{
    char *json = NULL;
    bool is_error = false;
    int rc;

    if (h->kind == JPT_STATE_STOPPED) {
        const char *text;
        if ((rc = jpt__handle_final(h, &text, &is_error)) == JPT_OK)
            rc = response_json(h->id, "stopped", is_error ? "error" : "result", text,
                               strlen(text), &json);
    } else {
        jpt_state *s = NULL;
        jpt__buf text = JPT__BUF_INIT;
        if ((rc = jpt__handle_take_state(h, false, &s)) == JPT_OK)
            rc = jpt__handle_model_text(h, s, &text);
        if (rc == JPT_OK)
            rc = response_json(h->id, h->placeholder ? "pending" : jpt__kind_name(s->kind),
                               "content", text.data, text.len, &json);
        jpt_state_unref(s);
        jpt__buf_free(&text);
        jpt__notify_seen(h);
    }
    /* An apply whose input the tool never read (it closed its stdin) says
     * so, before the handle's state: the input was lost, not taken. */
    uint64_t lost = call->action == JPT__ACTION_APPLY
                        ? jpt__handle_input_lost(h) - call->input_lost
                        : 0;
    if (rc == JPT_OK && lost > 0) {
        jpt__buf text = JPT__BUF_INIT;
        rc = jpt__buf_printf(&text, "Handle `%s` no longer takes input: it closed its input "
                                    "before reading %" PRIu64 " bytes of it. Its state: %s",
                             h->id, lost, json);
        jpt__free(json);
        json = rc == JPT_OK ? jpt__buf_take(&text) : NULL;
        rc = json != NULL ? JPT_OK : JPT_ERR_NOMEM;
        jpt__buf_free(&text);
        is_error = true;
    }
    if (rc < 0) {
        jpt__call_complete(call, "out of memory building the response", true);
        return;
    }
    /* The model has now seen the stopped state: the handle goes once no
     * await still holds it (RFD 009, "Handle lifecycle"), and its id is
     * free again. */
    bool stopped = h->kind == JPT_STATE_STOPPED;
    if (stopped)
        jpt__handle_delivered(h);
    call->handle = NULL;
    /* Completing may end the batch that holds the handle: not freed yet. */
    jpt__handle_pin(h);
    jpt__call_complete(call, json, is_error);
    jpt__free(json);
    jpt__handle_unpin(h); /* a stopped handle may go now */
    /* A question that came while this action waited: an await watching the
     * handle keeps waiting for it, and the inquiry handler takes it up
     * (RFD 037, "Waiting handles and the inquiry system"). */
    if (!stopped && h->kind == JPT_STATE_WAITING && h->nwatchers > 0 && h->waiter == NULL)
        jpt__handle_ask_soon(h);
}

static void finish_one_shot(jpt__call *call, jpt_handle *h)
{
    jpt_state *s = NULL;
    jpt__buf text = JPT__BUF_INIT;
    int rc = jpt__handle_result_state(h, &s);

    if (rc == JPT_OK && s->kind == JPT_STATE_WAITING) {
        jpt__inquiry_start(call, s);
        jpt_state_unref(s);
        return;
    }
    if (rc == JPT_OK)
        rc = jpt__handle_model_text(h, s, &text);
    if (rc == JPT_OK)
        jpt__call_complete(call, text.data != NULL ? text.data : "", s->is_error);
    else
        jpt__call_complete(call, "out of memory reading the tool's result", true);
    jpt_state_unref(s);
    jpt__buf_free(&text);
}

static void run_step(jpt__defer *d)
{
    jpt__call *call = d->ud;
    void (*fn)(jpt__call *) = call->step_fn;

    call->step_fn = NULL;
    fn(call);
}

static void cancel_call(jpt__call *call);

void jpt__call_later(jpt__call *call, void (*fn)(jpt__call *call))
{
    /* A cancel stands: what it ends must not be resumed in its place. */
    if (call->step_fn == cancel_call && call->step.queued)
        return;
    call->step_fn = fn;
    jpt__defer_queue(call->r->loop, &call->step);
}

void jpt__call_wake(jpt__call *call)
{
    if (call->r->dispatching > 0)
        jpt__call_handle_ready(call);
    else
        jpt__call_later(call, jpt__call_handle_ready);
}

void jpt__call_handle_ready(jpt__call *call)
{
    jpt_handle *h = call->handle;

    jpt__timer_stop(call->r->loop, &h->settle_timer);
    jpt__timer_stop(call->r->loop, &h->yield_timer);
    h->waiter = NULL;
    /* issue 7: the answer holds what the tool did up to now, even when
     * the host has not dispatched for a while. No longer the waiter, the
     * call is not woken again by a stop this may bring. */
    if (call->action != JPT__ACTION_NONE) {
        jpt__handle_pin(h);
        jpt__handle_refresh(h);
        jpt__handle_unpin(h);
    }
    if (call->action == JPT__ACTION_NONE)
        finish_one_shot(call, h);
    else
        respond_with_state(call, h);
}

/* ---- Dispatching a call ---------------------------------------------------------- */

static bool valid_handle_id(const char *id)
{
    size_t n = strlen(id);

    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

/* Arguments are checked against the tool's schema before anything runs. */
static bool arguments_fit(jpt__call *call, const json_t *arguments)
{
    char *schema = NULL, *value = NULL, *why = NULL;
    int rc = jpt__json_dump(call->tool->parameters, JSON_COMPACT, &schema);

    if (rc == JPT_OK)
        rc = jpt__json_dump(arguments, JSON_COMPACT, &value);
    if (rc == JPT_OK)
        rc = jpt_schema_check(schema, value, &why);
    if (rc == JPT_ERR_INVALID)
        jpt__call_completef(call, true, "Invalid arguments for `%s`: %s", call->name,
                            why != NULL ? why : "they do not match its schema");
    else if (rc < 0)
        jpt__call_complete(call, "out of memory checking the arguments", true);
    jpt__free(schema);
    jpt__free(value);
    jpt__free(why);
    return rc == JPT_OK;
}

static void run_one_shot(jpt__call *call, json_t *arguments)
{
    jpt__buf why = JPT__BUF_INIT;
    jpt_handle *h;

    if (!arguments_fit(call, arguments))
        return;
    if (jpt__handle_new(call->r, call->tool, call->id, arguments, &h) < 0) {
        jpt__call_complete(call, "out of memory starting the tool", true);
        return;
    }
    call->handle = h;
    int rc = jpt__handle_start(h, JPT__ACTION_NONE, &why);
    if (rc < 0)
        jpt__call_completef(call, true, "`%s` could not run: %s", call->name,
                            why.data != NULL ? why.data : jpt_strerror(rc));
    else
        jpt__handle_wait(h, call, false, -1);
    jpt__buf_free(&why);
}

/* The handle was pre-registered by submit (RFD 037, "await in parallel tool
 * call batches"): it starts now, or stops with the reason it cannot, which
 * an await in the same batch then reports. */
static void do_spawn(jpt__call *call, json_t *arguments)
{
    jpt_handle *h = call->handle;
    jpt__buf why = JPT__BUF_INIT;

    /* Bad arguments fail the call and, with its text as the result, the
     * handle (an orphaned call is freed later, from the loop, so the text
     * is still there). Until then the call does not hold the placeholder,
     * which completing it would otherwise fail as cancelled. */
    call->handle = NULL;
    if (!arguments_fit(call, arguments)) {
        jpt__handle_fail(h, call->content);
        return;
    }
    call->handle = h;
    /* A builtin may stop in its start callback, and an await then deliver
     * the handle: it stays until this function is done with it. */
    jpt__handle_pin(h);
    json_decref(h->arguments);
    h->arguments = json_incref(arguments);
    h->placeholder = false;
    h->started = jpt__now();
    int rc = jpt__handle_start(h, JPT__ACTION_SPAWN, &why);
    if (rc < 0) {
        jpt__call_completef(call, true, "`%s` could not run: %s", call->name,
                            why.data != NULL ? why.data : jpt_strerror(rc));
        call->handle = NULL;
        jpt__handle_fail(h, call->content);
    } else
        jpt__handle_wait(h, call, true, call->wait_ms);
    jpt__handle_unpin(h);
    jpt__buf_free(&why);
}

/* The bytes a stdio tool receives for an apply: to a running handle the
 * input, a string as it is and anything else as JSON text; to a waiting one
 * the answer as a JSON line {"id": question, "answer": input}. */
static int stdin_bytes(const json_t *input, const char *input_json, const char *qid,
                       jpt__buf *out)
{
    int rc;

    if (qid == NULL && json_is_string(input))
        return jpt__buf_append(out, json_string_value(input), json_string_length(input));
    if (qid == NULL)
        return jpt__buf_puts(out, input_json);
    json_t *answer = json_pack("{s:s, s:O}", "id", qid, "answer", input);
    rc = answer != NULL ? jpt__json_dump_buf(answer, JSON_COMPACT, out) : JPT_ERR_NOMEM;
    json_decref(answer);
    return rc == JPT_OK ? jpt__buf_putc(out, '\n') : rc;
}

/* RFD 009, "Apply serves two purposes": input for a running handle, or the
 * answer to a waiting handle's question, checked against its schema. */
static void do_apply(jpt__call *call, jpt_handle *h)
{
    const jpt__block *q = jpt__handle_question(h);
    jpt__buf bytes = JPT__BUF_INIT;
    char *input = NULL, *why = NULL, *qid = NULL;
    int rc = jpt__json_dump(call->input, JSON_COMPACT | JSON_ENCODE_ANY, &input);

    if (rc == JPT_OK && q != NULL) {
        const char *schema = q->f[JPT_FIELD_SCHEMA].ptr;
        rc = schema != NULL ? jpt_schema_check(schema, input, &why) : JPT_OK;
        if (rc == JPT_ERR_INVALID) {
            jpt__call_completef(call, true,
                                "The answer does not fit question `%s` of handle `%s`: %s",
                                q->f[JPT_FIELD_ID].ptr, h->id, why ? why : "");
            goto out;
        }
        if (rc == JPT_OK && (qid = jpt__strdup(q->f[JPT_FIELD_ID].ptr)) == NULL)
            rc = JPT_ERR_NOMEM;
        /* Answered before the tool hears of it: a builtin may report its
         * next state from inside the apply callback. */
        if (rc == JPT_OK)
            jpt__handle_resume(h);
    }
    if (rc < 0)
        goto nomem;

    if (h->tool->runtime == JPT__RUNTIME_BUILTIN) {
        if ((rc = h->tool->ops.apply(h, input, h->tool->ud)) < 0) {
            jpt__call_completef(call, true, "`%s` refused the input: %s", call->name,
                                jpt_strerror(rc));
            goto out;
        }
    } else {
        if ((rc = stdin_bytes(call->input, input, qid, &bytes)) < 0)
            goto nomem;
        call->input_lost = jpt__handle_input_lost(h);
        if (jpt__handle_write(h, bytes.data != NULL ? bytes.data : "", bytes.len) < 0) {
            jpt__call_completef(call, true, "Handle `%s` no longer takes input", h->id);
            goto out;
        }
    }
    call->handle = h;
    jpt__handle_wait(h, call, true, call->wait_ms);
    goto out;

nomem:
    jpt__call_complete(call, "out of memory sending the input", true);
out:
    jpt__free(input);
    jpt__free(why);
    jpt__free(qid);
    jpt__buf_free(&bytes);
}

/* A day: longer than any model should block one action. */
#define MAX_WAIT_SECS 86400

/* The optional wait_secs of spawn, fetch and apply (issue 7): how long to
 * wait for the handle to print or stop. False with the call completed
 * when it is not a number of seconds, 0 or more. */
static bool take_wait_secs(jpt__call *call, const json_t *v)
{
    call->wait_ms = -1;
    if (v == NULL || json_is_null(v))
        return true;
    if (!json_is_number(v) || json_number_value(v) < 0) {
        jpt__call_complete(call, "Invalid arguments: `wait_secs` must be a number of seconds, "
                                 "0 or more", true);
        return false;
    }
    double secs = json_number_value(v);
    call->wait_ms = (int64_t)((secs > MAX_WAIT_SECS ? MAX_WAIT_SECS : secs) * 1000);
    return true;
}

static void run_action(jpt__call *call, json_t *arguments)
{
    jpt__tool *t = call->tool;
    const json_t *action = json_object_get(arguments, "action");
    const json_t *id = json_object_get(arguments, "id");
    char supported[64];
    int a = 0;

    jpt__actions_list(t->actions, supported, sizeof(supported));
    for (int b = JPT__ACTION_SPAWN; b <= JPT__ACTION_ABORT && json_is_string(action); b <<= 1)
        if (strcmp(json_string_value(action), jpt__action_name(b)) == 0)
            a = b;
    if (a == 0 || !(t->actions & (unsigned)a)) {
        jpt__call_completef(call, true, "`%s` does not support the action `%s` (it supports: %s)",
                            call->name, json_is_string(action) ? json_string_value(action) : "?",
                            supported);
        return;
    }
    call->action = a;
    if (!json_is_string(id) || !valid_handle_id(json_string_value(id))) {
        jpt__call_completef(call, true,
                            "`%s` needs an `id`: 1 to 64 characters of A-Z, a-z, 0-9, "
                            "'_', '.' and '-'",
                            jpt__action_name(a));
        return;
    }
    if ((call->handle_id = jpt__strdup(json_string_value(id))) == NULL) {
        jpt__call_complete(call, "out of memory", true);
        return;
    }
    if (!take_wait_secs(call, json_object_get(arguments, "wait_secs")))
        return;
    if (a == JPT__ACTION_SPAWN) {
        json_t *args = json_deep_copy(arguments);
        if (args == NULL) {
            jpt__call_complete(call, "out of memory", true);
            return;
        }
        /* What the flat schema adds for the other actions is not the
         * tool's: a spawn that carries it does not pass it on. */
        json_object_del(args, "action");
        json_object_del(args, "id");
        json_object_del(args, "wait_secs");
        if (json_object_get(json_object_get(t->parameters, "properties"), "input") == NULL)
            json_object_del(args, "input");
        do_spawn(call, args);
        json_decref(args);
        return;
    }

    jpt_handle *h = jpt__handle_find(call->r, call->handle_id);
    /* By name: a handle spawned before its tool was replaced is still the
     * tool's. */
    if (h == NULL || strcmp(h->tool->name, call->name) != 0 || h->placeholder) {
        jpt__call_completef(call, true, "Handle `%s` not found", call->handle_id);
        return;
    }
    call->handle = h;
    if (h->waiter != NULL) {
        jpt__call_completef(call, true,
                            "Handle `%s` is busy with another action; try again once it "
                            "has answered",
                            h->id);
        call->handle = NULL;
        return;
    }
    /* The builtin's callbacks may stop the handle, and whoever hears of it
     * deliver it: it stays until the action is under way. */
    jpt__handle_pin(h);
    switch (a) {
    case JPT__ACTION_FETCH:
        /* Without wait_secs a fetch answers at once. */
        if (call->wait_ms >= 0)
            jpt__handle_wait(h, call, true, call->wait_ms);
        else
            jpt__call_handle_ready(call);
        break;
    case JPT__ACTION_APPLY:
        if ((call->input = json_incref(json_object_get(arguments, "input"))) == NULL) {
            call->handle = NULL;
            jpt__call_complete(call, "`apply` needs an `input`", true);
        } else if (h->kind == JPT_STATE_STOPPED) {
            call->handle = NULL;
            jpt__call_completef(call, true, "Handle `%s` has stopped and takes no input",
                                h->id);
        } else
            do_apply(call, h);
        break;
    case JPT__ACTION_ABORT:
        jpt__handle_abort(h);
        jpt__handle_wait(h, call, false, -1);
        break;
    }
    jpt__handle_unpin(h);
}

static void start_tool_call(jpt__call *call, json_t *arguments);

static void start_call(jpt__call *call)
{
    json_t *arguments = call->arguments;

    call->arguments = NULL;
    start_tool_call(call, arguments);
    json_decref(arguments);
}

static void start_tool_call(jpt__call *call, json_t *arguments)
{
    /* RFD 037: await is the registry's own tool, offered with stateful ones. */
    if (strcmp(call->name, "await") == 0 && jpt__await_available(call->r)) {
        jpt__await_start(call, arguments);
        return;
    }
    call->tool = jpt__tool_find(call->r, call->name);
    if (call->tool == NULL) {
        jpt__call_completef(call, true, "Unknown tool `%s`", call->name);
        return;
    }
    /* RFD 009: the invocation decides. `action` makes it a stateful call,
     * for a tool that declares actions; for any other it is an argument. */
    if (call->tool->stateful && json_object_get(arguments, "action") != NULL)
        run_action(call, arguments);
    else
        run_one_shot(call, arguments);
}

/* ---- Submitting ------------------------------------------------------------------ */

/* The id a call would spawn, or NULL: a stateful tool's spawn with an id. */
static const char *spawn_id(jpt_registry *r, const jpt__call *call)
{
    const jpt__tool *t = jpt__tool_find(r, call->name);
    const char *action = json_string_value(json_object_get(call->arguments, "action"));
    const char *id = json_string_value(json_object_get(call->arguments, "id"));

    if (t == NULL || !t->stateful || action == NULL || strcmp(action, "spawn") != 0 ||
        id == NULL || !valid_handle_id(id))
        return NULL;
    return id;
}

/* RFD 037, "await in parallel tool call batches": every spawn id of the
 * batch is registered before any call runs, so an await in the same batch
 * finds it. Two spawns with one id, or one an active handle holds, reject
 * the whole batch: nothing runs, and every call says which id. The ids are
 * checked through maps: linear time however many spawns a batch holds. */
static int find_collision(jpt_registry *r, jpt_batch *b, jpt__buf *why)
{
    jpt__idmap seen;
    int rc = JPT_OK;

    jpt__idmap_init(&seen);
    for (size_t i = 0; i < b->n && rc == JPT_OK; i++) {
        const char *id = spawn_id(r, b->calls[i]);
        const char *holder = NULL;
        if (id == NULL)
            continue;
        if (jpt__handle_find(r, id) != NULL)
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

static int preregister(jpt_registry *r, jpt_batch *b)
{
    jpt__buf why = JPT__BUF_INIT;
    size_t nspawns = 0;
    int rc = find_collision(r, b, &why);

    if (rc < 0) {
        jpt__buf_free(&why);
        return rc;
    }
    if (why.len > 0) {
        b->rejected = jpt__buf_take(&why);
        return b->rejected != NULL ? JPT_OK : JPT_ERR_NOMEM;
    }
    for (size_t i = 0; i < b->n; i++)
        nspawns += spawn_id(r, b->calls[i]) != NULL;
    if (nspawns > 0 && (b->held = jpt__calloc(nspawns, sizeof(*b->held))) == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < b->n; i++) {
        const char *id = spawn_id(r, b->calls[i]);
        jpt_handle *h;
        if (id == NULL)
            continue;
        json_t *none = json_object();
        rc = none != NULL ? jpt__handle_new(r, jpt__tool_find(r, b->calls[i]->name), id,
                                            none, &h)
                          : JPT_ERR_NOMEM;
        json_decref(none);
        if (rc == JPT_OK && (rc = jpt__handle_register(h)) < 0)
            jpt__handle_free(h);
        if (rc < 0)
            return rc; /* the caller frees the placeholders made so far */
        h->placeholder = true;
        h->held_by = b;
        h->held_index = b->nheld;
        b->held[b->nheld++] = h;
        b->calls[i]->handle = h;
    }
    return JPT_OK;
}

/* A call from what was read (wire.c), taking its id, name and arguments. */
static jpt__call *call_new(jpt_registry *r, jpt_batch *b, jpt__wire_call *wc)
{
    jpt__call *call = jpt__calloc(1, sizeof(*call));

    if (call == NULL)
        return NULL;
    call->r = r;
    call->batch = b;
    call->wait_ms = -1;
    jpt__defer_init(&call->step, run_step, call);
    call->id = wc->id;
    call->name = wc->name;
    call->dialect = wc->dialect;
    call->id_made = wc->id_made;
    call->arguments = wc->arguments;
    wc->id = wc->name = NULL;
    wc->arguments = NULL;
    return call;
}

JPT_EXPORT int jpt_registry_submit(jpt_registry *r, const char *calls_json, jpt_batch **out)
{
    jpt__wire_call *wire = NULL;
    size_t i, n = 0;
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

    jpt_batch *b = jpt__calloc(1, sizeof(*b));
    if (b != NULL)
        b->calls = jpt__calloc(n + 1, sizeof(*b->calls));
    if (b == NULL || b->calls == NULL)
        goto nomem;
    b->r = r;
    for (i = 0; i < n; i++) {
        if ((b->calls[i] = call_new(r, b, &wire[i])) == NULL)
            goto nomem;
        b->n++;
    }

    if (preregister(r, b) < 0)
        goto nomem;

    /* From here the calls exist: each gets a result, whatever happens. */
    b->pending = b->n;
    for (i = 0; i < b->n; i++) {
        jpt__call *call = b->calls[i];
        JPT__LIST_PUSH(r->calls, call);
        call->in_flight = true;
        r->calls_in_flight++;
    }
    JPT__LIST_PUSH(r->batches, b);
    *out = b;
    for (i = 0; i < b->n; i++) {
        if (b->rejected != NULL) {
            jpt__call_complete(b->calls[i], b->rejected, true);
            continue;
        }
        if (wire[i].problem != NULL)
            jpt__call_completef(b->calls[i], true, "Invalid arguments for `%s`: %s",
                                b->calls[i]->name, wire[i].problem);
        else
            /* Calls start at the next dispatch: tools' callbacks (builtins,
             * the inquiry handler) run only inside dispatch. */
            jpt__call_later(b->calls[i], start_call);
    }
    /* A message without calls is a batch done at once; its BATCH_DONE is
     * there for the host's next dispatch, as any other batch's. */
    if (b->n == 0) {
        jpt__call none = {.r = r, .batch = b};
        jpt__registry_event(r, JPT_EVENT_BATCH_DONE, &none, NULL);
        jpt__loop_wakeup(r->loop);
    }
    jpt__free(b->rejected);
    b->rejected = NULL;
    jpt__wire_free(wire, n);
    return JPT_OK;

nomem:
    for (i = 0; b != NULL && i < b->n; i++) {
        jpt_handle *h = b->calls[i]->handle;
        b->calls[i]->done = true;
        b->calls[i]->handle = NULL;
        jpt__handle_free(h);
        jpt__call_free(b->calls[i]);
    }
    if (b != NULL) {
        jpt__free(b->held);
        jpt__free(b->calls);
    }
    jpt__free(b);
    jpt__wire_free(wire, n);
    return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory submitting the calls");
}

/* ---- Batches ---------------------------------------------------------------------- */

JPT_EXPORT int jpt_batch_done(const jpt_batch *b)
{
    return b != NULL && b->pending == 0;
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
        json_t *item = call->done ? jpt__wire_result(call, JPT__DIALECT_OWN)
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

/* Ends a call still in flight, from the loop (ending may run a builtin's
 * abort callback): one-shot children are killed, awaits answer with what
 * they have, actions waiting for output to settle answer now. */
/* A one-shot run that is cancelled answers with what the tool produced so
 * far (nothing lost); its process dies with its handle. */
static void cut_short(jpt__call *call, jpt_handle *h)
{
    jpt__buf why = JPT__BUF_INIT, text = JPT__BUF_INIT;
    jpt_state *s = NULL;

    /* The cancel answers the call: an exit taken in now must not. */
    h->waiter = NULL;
    int rc = jpt__buf_printf(&why, "The call `%s` was cancelled", call->name);
    if (rc == JPT_OK)
        rc = jpt__handle_cut_short(h, why.data, &s);
    if (rc == JPT_OK)
        rc = jpt__handle_model_text(h, s, &text);
    if (rc == JPT_OK)
        jpt__call_complete(call, text.data, true);
    else
        jpt__call_completef(call, true, "The call `%s` was cancelled", call->name);
    jpt_state_unref(s);
    jpt__buf_free(&why);
    jpt__buf_free(&text);
}

static void cancel_call(jpt__call *call)
{
    jpt_handle *h = call->handle;

    if (call->done)
        return;
    if (call->await != NULL) {
        jpt__await_cancel(call);
        return;
    }
    if (h != NULL && h->waiter == call && call->action != JPT__ACTION_NONE) {
        jpt__call_handle_ready(call);
        return;
    }
    if (h != NULL && h->waiter == call && h->child != NULL) {
        cut_short(call, h);
        return;
    }
    /* A call not started yet, or one whose question is pending. */
    jpt__call_completef(call, true, "The call `%s` was cancelled", call->name);
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
        bool running = call->action == JPT__ACTION_NONE && call->handle != NULL &&
                       call->handle->waiter == call;
        if (!call->done && !running) {
            call->cancelled = true;
            cancel_call(call);
        }
    }
    jpt__free(calls);
}

JPT_EXPORT void jpt_batch_cancel(jpt_batch *b)
{
    if (b == NULL)
        return;
    for (size_t i = 0; i < b->n; i++)
        if (!b->calls[i]->done) {
            b->calls[i]->cancelled = true;
            jpt__call_later(b->calls[i], cancel_call);
        }
}

/* The handles a batch pre-registered are kept until the batch is done, so
 * that an await anywhere in it finds them, even one that failed to start
 * (RFD 037: pre-registration "guarantees that when await looks up a handle
 * ID, the entry exists"). */
void jpt__batch_unhold(jpt_batch *b)
{
    /* Releasing one handle never frees another this batch holds: each is
     * looked at as it stands. */
    for (size_t i = 0; i < b->nheld; i++) {
        jpt_handle *h = b->held[i];
        if (h == NULL)
            continue;
        b->held[i] = NULL;
        h->held_by = NULL;
        jpt__handle_release_if_done(h);
    }
    b->nheld = 0;
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
    jpt__turn_batch_gone(r, b);
    jpt__batch_unhold(b);
    for (size_t i = 0; i < b->n; i++) {
        jpt__call *call = b->calls[i];
        if (call->done)
            jpt__call_free(call);
        else
            call->batch = NULL; /* it finishes on its own and frees itself */
    }
    JPT__LIST_REMOVE(r->batches, b);
    jpt__free(b->held);
    jpt__free(b->calls);
    jpt__free(b->rejected);
    jpt__free(b);
}
