/* Calls and batches: what the model asked for, dispatched to handles, and
 * the results it reads. A call's failure (unknown tool, bad arguments,
 * unknown handle, …) is its result, worded for the model; it never fails
 * the batch. */
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

/* ---- Completing calls --------------------------------------------------------- */

void jpt__call_free(jpt__call *call)
{
    jpt_registry *r = call->r;

    if (call->handle != NULL && call->handle->waiter == call)
        call->handle->waiter = NULL;
    /* A one-shot handle belongs to its call. */
    if (call->handle != NULL && call->action == JPT__ACTION_NONE)
        jpt__handle_free(call->handle);
    jpt__inquiry_detach(call);
    jpt__defer_cancel(r->loop, &call->step);
    json_decref(call->arguments);
    jpt__free(call->answer);
    if (!call->done) {
        if (call->prev != NULL)
            call->prev->next = call->next;
        else if (r->calls == call)
            r->calls = call->next;
        if (call->next != NULL)
            call->next->prev = call->prev;
        r->calls_in_flight--;
    }
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
    if (call->action == JPT__ACTION_NONE && call->handle != NULL) {
        jpt__handle_free(call->handle);
        call->handle = NULL;
    }
    jpt__inquiry_detach(call);
    jpt__defer_cancel(r->loop, &call->step);
    call->done = true;
    if (call->prev != NULL)
        call->prev->next = call->next;
    else if (r->calls == call)
        r->calls = call->next;
    if (call->next != NULL)
        call->next->prev = call->prev;
    call->next = call->prev = NULL;
    r->calls_in_flight--;

    if (b == NULL) {
        jpt__call_free(call);
        return;
    }
    jpt__registry_event(r, JPT_EVENT_CALL_DONE, call, call->handle);
    if (--b->pending == 0)
        jpt__registry_event(r, JPT_EVENT_BATCH_DONE, call, NULL);
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

/* The text the model reads for a state: rendered, then limited. A capture
 * that was already cut carries its own marker, so only text clearly past
 * the limit is cut again. */
static int model_text(const jpt_handle *h, const jpt_state *s, jpt__buf *out)
{
    jpt_render_options opts = {sizeof(opts), h->r->root};
    size_t limit = jpt__tool_output_limit(h->r, h->tool);
    char *text = NULL;
    int rc = jpt_state_render(s, &opts, &text);

    if (rc < 0)
        return rc;
    size_t n = strlen(text);
    rc = n > limit + 256 ? jpt__limit_text(text, n, limit, h->out.spool_path, out)
                         : jpt__buf_append(out, text, n);
    jpt_free(text);
    return rc;
}

static const char *kind_name(int kind)
{
    return kind == JPT_STATE_RUNNING   ? "running"
           : kind == JPT_STATE_WAITING ? "waiting"
                                       : "stopped";
}

/* RFD 009's handle response: {"id","state","content"} while the handle
 * lives, {"id","state","result"|"error"} once it stopped. */
static void respond_with_state(jpt__call *call, jpt_handle *h)
{
    jpt_state *s = NULL;
    jpt__buf text = JPT__BUF_INIT;
    char *json = NULL;
    int rc = jpt__handle_take_state(h, false, &s);

    if (rc == JPT_OK)
        rc = model_text(h, s, &text);
    if (rc == JPT_OK) {
        const char *key = s->kind != JPT_STATE_STOPPED ? "content"
                          : s->is_error                ? "error"
                                                       : "result";
        jpt__field f = {text.data != NULL ? text.data : "", text.len};
        json_t *resp = json_pack("{s:s, s:s, s:o}", "id", h->id, "state",
                                 kind_name(s->kind), key, jpt__json_from_field(&f));
        rc = resp != NULL ? jpt__json_dump(resp, JSON_COMPACT, &json) : JPT_ERR_NOMEM;
        json_decref(resp);
    }
    bool is_error = rc == JPT_OK && s->is_error;
    bool stopped = h->kind == JPT_STATE_STOPPED;
    jpt_state_unref(s);
    jpt__buf_free(&text);
    if (rc < 0) {
        jpt__call_complete(call, "out of memory building the response", true);
        return;
    }
    /* The model has now seen the stopped state: the handle goes (RFD 009,
     * "Handle lifecycle"), and its id is free again. */
    if (stopped) {
        h->delivered = true;
        call->handle = NULL;
        jpt__handle_free(h);
    }
    jpt__call_complete(call, json, is_error);
    jpt__free(json);
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
        rc = model_text(h, s, &text);
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

void jpt__call_later(jpt__call *call, void (*fn)(jpt__call *call))
{
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

static void start_handle(jpt__call *call, jpt_handle *h, int action)
{
    jpt__buf why = JPT__BUF_INIT;
    int rc = jpt__handle_start(h, action, &why);

    if (rc < 0) {
        if (action != JPT__ACTION_NONE) {
            call->handle = NULL;
            jpt__handle_free(h);
        }
        jpt__call_completef(call, true, "`%s` could not run: %s", call->name,
                            why.data != NULL ? why.data : jpt_strerror(rc));
        jpt__buf_free(&why);
        return;
    }
    jpt__buf_free(&why);
    jpt__handle_wait(h, call, action == JPT__ACTION_SPAWN);
}

static void run_one_shot(jpt__call *call, json_t *arguments)
{
    jpt_handle *h;

    if (!arguments_fit(call, arguments))
        return;
    if (jpt__handle_new(call->r, call->tool, call->id, arguments, &h) < 0) {
        jpt__call_complete(call, "out of memory starting the tool", true);
        return;
    }
    call->handle = h;
    start_handle(call, h, JPT__ACTION_NONE);
}

static void do_spawn(jpt__call *call, json_t *arguments)
{
    jpt_handle *h;

    if (jpt__handle_find(call->r, call->handle_id) != NULL) {
        jpt__call_completef(call, true,
                            "Handle ID `%s` is already in use by an active handle; "
                            "choose another id",
                            call->handle_id);
        return;
    }
    if (!arguments_fit(call, arguments))
        return;
    if (jpt__handle_new(call->r, call->tool, call->handle_id, arguments, &h) < 0) {
        jpt__call_complete(call, "out of memory starting the tool", true);
        return;
    }
    h->registered = true;
    call->handle = h;
    start_handle(call, h, JPT__ACTION_SPAWN);
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
        if (jpt__handle_write(h, bytes.data != NULL ? bytes.data : "", bytes.len) < 0) {
            jpt__call_completef(call, true, "Handle `%s` no longer takes input", h->id);
            goto out;
        }
    }
    call->handle = h;
    jpt__handle_wait(h, call, true);
    goto out;

nomem:
    jpt__call_complete(call, "out of memory sending the input", true);
out:
    jpt__free(input);
    jpt__free(why);
    jpt__free(qid);
    jpt__buf_free(&bytes);
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
    if (a == JPT__ACTION_SPAWN) {
        json_t *args = json_deep_copy(arguments);
        if (args == NULL) {
            jpt__call_complete(call, "out of memory", true);
            return;
        }
        json_object_del(args, "action");
        json_object_del(args, "id");
        do_spawn(call, args);
        json_decref(args);
        return;
    }

    jpt_handle *h = jpt__handle_find(call->r, call->handle_id);
    if (h == NULL || h->tool != jpt__tool_find(call->r, call->name)) {
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
    switch (a) {
    case JPT__ACTION_FETCH:
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
        jpt__handle_wait(h, call, false);
        break;
    }
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

static jpt__call *call_new(jpt_registry *r, jpt_batch *b, const json_t *c, json_t **args,
                           const char **problem)
{
    jpt__call *call = jpt__calloc(1, sizeof(*call));
    const char *id = json_string_value(json_object_get(c, "id"));
    const char *name = json_string_value(json_object_get(c, "name"));
    const json_t *arguments = json_object_get(c, "arguments");

    *args = NULL;
    *problem = NULL;
    if (call == NULL)
        return NULL;
    call->r = r;
    call->batch = b;
    jpt__defer_init(&call->step, run_step, call);
    call->id = jpt__strdup(id);
    call->name = jpt__strdup(name);
    if (call->id == NULL || call->name == NULL) {
        jpt__free(call->id);
        jpt__free(call->name);
        jpt__free(call);
        return NULL;
    }
    if (arguments == NULL || json_is_null(arguments))
        *args = json_object();
    else if (json_is_object(arguments))
        *args = json_incref((json_t *)arguments);
    else if (json_is_string(arguments)) {
        json_error_t jerr;
        const char *text = json_string_value(arguments);
        /* An empty string is what some providers send for no arguments. */
        if (json_string_length(arguments) == 0)
            *args = json_object();
        else if (jpt__json_load(text, json_string_length(arguments), 0, args, &jerr) ==
                     JPT_ERR_INVALID ||
                 !json_is_object(*args)) {
            json_decref(*args);
            *args = NULL;
            *problem = "the arguments string is not a JSON object";
        }
    } else
        *problem = "the arguments are neither an object nor a JSON string";
    return call;
}

JPT_EXPORT int jpt_registry_submit(jpt_registry *r, const char *calls_json, jpt_batch **out)
{
    json_error_t jerr;
    json_t *list = NULL;
    size_t i;
    const json_t *c;
    int rc;

    if (r == NULL || out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    jpt__err_clear(&r->err);
    if (calls_json == NULL)
        return jpt__err(&r->err, JPT_ERR_INVALID, "submit: the calls are NULL");
    rc = jpt__json_load(calls_json, strlen(calls_json), 0, &list, &jerr);
    if (rc == JPT_ERR_NOMEM)
        return jpt__err(&r->err, rc, "out of memory reading the calls");
    if (rc < 0 || !json_is_array(list)) {
        json_decref(list);
        return jpt__err(&r->err, JPT_ERR_INVALID, "submit: the calls must be a JSON array%s%s",
                        rc < 0 ? ": " : "", rc < 0 ? jerr.text : "");
    }
    json_array_foreach(list, i, c) {
        if (!json_is_object(c) || !json_is_string(json_object_get(c, "id")) ||
            !json_is_string(json_object_get(c, "name"))) {
            json_decref(list);
            return jpt__err(&r->err, JPT_ERR_INVALID,
                            "submit: call %zu must be an object with string \"id\" and "
                            "\"name\"",
                            i);
        }
    }

    jpt_batch *b = jpt__calloc(1, sizeof(*b));
    json_t **args = jpt__calloc(json_array_size(list) + 1, sizeof(*args));
    const char **problems = jpt__calloc(json_array_size(list) + 1, sizeof(*problems));
    if (b != NULL)
        b->calls = jpt__calloc(json_array_size(list) + 1, sizeof(*b->calls));
    if (b == NULL || b->calls == NULL || args == NULL || problems == NULL)
        goto nomem;
    b->r = r;
    json_array_foreach(list, i, c) {
        if ((b->calls[i] = call_new(r, b, c, &args[i], &problems[i])) == NULL)
            goto nomem;
        b->n++;
    }

    /* From here the calls exist: each gets a result, whatever happens. */
    b->pending = b->n;
    for (i = 0; i < b->n; i++) {
        jpt__call *call = b->calls[i];
        call->next = r->calls;
        if (r->calls != NULL)
            r->calls->prev = call;
        r->calls = call;
        r->calls_in_flight++;
    }
    b->next = r->batches;
    if (r->batches != NULL)
        r->batches->prev = b;
    r->batches = b;
    *out = b;
    for (i = 0; i < b->n; i++) {
        if (problems[i] != NULL)
            jpt__call_completef(b->calls[i], true, "Invalid arguments for `%s`: %s",
                                b->calls[i]->name, problems[i]);
        else if (args[i] == NULL)
            jpt__call_complete(b->calls[i], "out of memory reading the arguments", true);
        else {
            /* Calls start at the next dispatch: tools' callbacks (builtins,
             * the inquiry handler) run only inside dispatch. */
            b->calls[i]->arguments = args[i];
            args[i] = NULL;
            jpt__call_later(b->calls[i], start_call);
        }
        json_decref(args[i]);
    }
    jpt__free(args);
    jpt__free(problems);
    json_decref(list);
    return JPT_OK;

nomem:
    for (i = 0; b != NULL && i < b->n; i++) {
        b->calls[i]->done = true;
        json_decref(args[i]);
        jpt__call_free(b->calls[i]);
    }
    if (b != NULL)
        jpt__free(b->calls);
    jpt__free(b);
    jpt__free(args);
    jpt__free(problems);
    json_decref(list);
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
        json_t *item;
        if (call->done) {
            jpt__field f = {call->content, strlen(call->content)};
            item = json_pack("{s:s, s:o, s:b}", "id", call->id, "content",
                             jpt__json_from_field(&f), "is_error", call->is_error);
        } else
            item = json_pack("{s:s, s:n, s:b, s:b}", "id", call->id, "content",
                             "is_error", 0, "pending", 1);
        if (json_array_append_new(arr, item) < 0) {
            json_decref(arr);
            return JPT_ERR_NOMEM;
        }
    }
    rc = jpt__json_dump(arr, JSON_COMPACT, out);
    json_decref(arr);
    return rc;
}

JPT_EXPORT void jpt_batch_free(jpt_batch *b)
{
    jpt_registry *r;

    if (b == NULL)
        return;
    r = b->r;
    for (size_t i = 0; i < b->n; i++) {
        jpt__call *call = b->calls[i];
        if (call->done)
            jpt__call_free(call);
        else
            call->batch = NULL; /* it finishes on its own and frees itself */
    }
    if (b->prev != NULL)
        b->prev->next = b->next;
    else if (r->batches == b)
        r->batches = b->next;
    if (b->next != NULL)
        b->next->prev = b->prev;
    jpt__free(b->calls);
    jpt__free(b);
}
