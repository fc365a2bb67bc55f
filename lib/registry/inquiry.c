/* Questions of one-shot tools (RFD 009, "Interaction with the inquiry
 * system"): a run that ends `waiting` is put to the host's inquiry handler;
 * its answer, checked against the question's schema, joins the accumulated
 * answers and the tool runs again. The handler may answer at any later
 * time, so an inquiry outlives the dispatch that raised it. */
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

static void unlink_inquiry(jpt_inquiry *q)
{
    jpt_registry *r = q->r;

    if (q->prev != NULL)
        q->prev->next = q->next;
    else if (r->inquiries == q)
        r->inquiries = q->next;
    if (q->next != NULL)
        q->next->prev = q->prev;
}

static void inquiry_free(jpt_inquiry *q)
{
    unlink_inquiry(q);
    if (q->call != NULL)
        q->call->inquiry = NULL;
    jpt__free(q->tool);
    jpt__free(q->call_id);
    jpt__free(q->question_json);
    jpt__free(q->question_id);
    json_decref(q->schema);
    jpt_state_unref(q->context);
    jpt__free(q);
}

void jpt__inquiry_detach(jpt__call *call)
{
    if (call->inquiry != NULL) {
        call->inquiry->call = NULL;
        call->inquiry = NULL;
    }
}

void jpt__inquiries_free(jpt_registry *r)
{
    while (r->inquiries != NULL)
        inquiry_free(r->inquiries);
}

/* The question as RFD 058 writes it, and the blocks shown before it. */
static int build_inquiry(jpt__call *call, const jpt_state *s, size_t qi, jpt_inquiry *q)
{
    const jpt__block *b = &s->blocks[qi];
    json_t *question = jpt__block_to_json(b);
    int rc = question != NULL ? JPT_OK : JPT_ERR_NOMEM;

    if (rc == JPT_OK)
        rc = jpt__json_dump(json_object_get(question, "question"), JSON_COMPACT,
                            &q->question_json);
    json_decref(question);
    if (rc == JPT_OK && b->f[JPT_FIELD_SCHEMA].ptr != NULL &&
        (q->schema = json_loads(b->f[JPT_FIELD_SCHEMA].ptr, JSON_DECODE_ANY, NULL)) == NULL)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK && ((q->tool = jpt__strdup(call->name)) == NULL ||
                         (q->call_id = jpt__strdup(call->id)) == NULL ||
                         (q->question_id = jpt__strdup(b->f[JPT_FIELD_ID].ptr)) == NULL ||
                         (q->context = jpt__state_alloc(JPT_STATE_RUNNING)) == NULL))
        rc = JPT_ERR_NOMEM;
    for (size_t i = 0; rc == JPT_OK && i < qi; i++) {
        jpt__block copy;
        if ((rc = jpt__block_copy(&s->blocks[i], &copy)) == JPT_OK)
            rc = jpt__state_push_block(q->context, &copy);
    }
    return rc;
}

void jpt__inquiry_start(jpt__call *call, jpt_state *s)
{
    jpt_registry *r = call->r;
    size_t qi = 0;

    while (qi < s->nblocks && s->blocks[qi].type != JPT_BLOCK_QUESTION)
        qi++;
    if (qi == s->nblocks) {
        jpt__call_completef(call, true, "`%s` reported that it is waiting for input but "
                                        "asked no question",
                            call->name);
        return;
    }
    const jpt__block *b = &s->blocks[qi];
    if (r->inquiry_fn == NULL) {
        jpt__call_completef(call, true,
                            "`%s` needs input that no one can give here: it asked "
                            "question `%s` (\"%s\"), and no inquiry handler is installed",
                            call->name, b->f[JPT_FIELD_ID].ptr, b->f[JPT_FIELD_TEXT].ptr);
        return;
    }
    if (call->rounds >= r->max_inquiry_rounds) {
        jpt__call_completef(call, true,
                            "`%s` was stopped after %d questions; it kept asking (last: `%s`)",
                            call->name, call->rounds, b->f[JPT_FIELD_ID].ptr);
        return;
    }

    jpt_inquiry *q = jpt__calloc(1, sizeof(*q));
    if (q == NULL) {
        jpt__call_complete(call, "out of memory asking the tool's question", true);
        return;
    }
    q->r = r;
    q->call = call;
    q->target = call->tool->question_target;
    q->next = r->inquiries;
    if (r->inquiries != NULL)
        r->inquiries->prev = q;
    r->inquiries = q;
    if (build_inquiry(call, s, qi, q) < 0) {
        inquiry_free(q);
        jpt__call_complete(call, "out of memory asking the tool's question", true);
        return;
    }
    call->inquiry = q;
    r->inquiry_fn(q, r->inquiry_ud);
}

/* After an answer: a builtin still alive gets it as input; a process is
 * run again with all the answers. */
static void rerun(jpt__call *call)
{
    jpt_handle *h = call->handle;
    char *answer = call->answer;
    int rc;

    call->answer = NULL;
    if (h->tool->runtime == JPT__RUNTIME_BUILTIN && !h->exited) {
        jpt__handle_resume(h);
        rc = h->tool->ops.apply != NULL ? h->tool->ops.apply(h, answer, h->tool->ud)
                                        : JPT_ERR_UNSUPPORTED;
        jpt__free(answer);
        if (rc < 0)
            jpt__call_completef(call, true, "`%s` refused the answer: %s", call->name,
                                jpt_strerror(rc));
        else
            jpt__handle_wait(h, call, false);
        return;
    }
    jpt__free(answer);
    jpt__buf why = JPT__BUF_INIT;
    rc = jpt__handle_start(h, JPT__ACTION_NONE, &why);
    if (rc < 0)
        jpt__call_completef(call, true, "`%s` could not run again: %s", call->name,
                            why.data != NULL ? why.data : jpt_strerror(rc));
    else
        jpt__handle_wait(h, call, false);
    jpt__buf_free(&why);
}

JPT_EXPORT void jpt_registry_set_inquiry_handler(jpt_registry *r, jpt_inquiry_fn fn, void *ud)
{
    r->inquiry_fn = fn;
    r->inquiry_ud = ud;
}

JPT_EXPORT const char *jpt_inquiry_tool(const jpt_inquiry *q)
{
    return q->tool;
}

JPT_EXPORT const char *jpt_inquiry_call_id(const jpt_inquiry *q)
{
    return q->call_id;
}

JPT_EXPORT const char *jpt_inquiry_question_json(const jpt_inquiry *q)
{
    return q->question_json;
}

JPT_EXPORT int jpt_inquiry_target(const jpt_inquiry *q)
{
    return q->target;
}

JPT_EXPORT const jpt_state *jpt_inquiry_context(const jpt_inquiry *q)
{
    return q->context;
}

JPT_EXPORT const char *jpt_inquiry_errmsg(const jpt_inquiry *q)
{
    return q->err.text;
}

JPT_EXPORT int jpt_inquiry_answer(jpt_inquiry *q, const char *answer_json)
{
    json_error_t jerr;
    json_t *answer = NULL;
    char *schema = NULL, *why = NULL;
    int rc;

    if (q == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&q->err);
    if (q->call == NULL) {
        inquiry_free(q);
        return JPT_ERR_CANCELLED;
    }
    if (answer_json == NULL)
        return jpt__err(&q->err, JPT_ERR_INVALID, "the answer is NULL");
    rc = jpt__json_load(answer_json, strlen(answer_json), JSON_DECODE_ANY, &answer, &jerr);
    if (rc < 0)
        return jpt__err(&q->err, rc, rc == JPT_ERR_NOMEM ? "out of memory" : "the answer is not JSON: %s",
                        jerr.text);
    if (q->schema != NULL) {
        if ((rc = jpt__json_dump(q->schema, JSON_COMPACT | JSON_ENCODE_ANY, &schema)) == JPT_OK)
            rc = jpt_schema_check(schema, answer_json, &why);
        jpt__free(schema);
        if (rc < 0) {
            json_decref(answer);
            rc = jpt__err(&q->err, rc, "the answer does not fit question '%s': %s",
                          q->question_id, why != NULL ? why : jpt_strerror(rc));
            jpt__free(why);
            return rc;
        }
    }

    /* Run the tool again with every answer so far (RFD 009: "re-executes
     * the tool with the accumulated answers"), from the next dispatch. */
    jpt__call *call = q->call;
    if (json_object_set_new(call->handle->answers, q->question_id, answer) < 0)
        return jpt__err(&q->err, JPT_ERR_NOMEM, "out of memory keeping the answer");
    jpt__free(call->answer);
    if ((call->answer = jpt__strdup(answer_json)) == NULL)
        return jpt__err(&q->err, JPT_ERR_NOMEM, "out of memory keeping the answer");
    call->rounds++;
    inquiry_free(q);
    jpt__call_later(call, rerun);
    return JPT_OK;
}

static void refused(jpt__call *call)
{
    char *why = call->answer;

    call->answer = NULL;
    jpt__call_complete(call, why != NULL ? why : "The question was not answered", true);
    jpt__free(why);
}

JPT_EXPORT int jpt_inquiry_cancel(jpt_inquiry *q, const char *reason)
{
    jpt__buf why = JPT__BUF_INIT;

    if (q == NULL)
        return JPT_ERR_INVALID;
    jpt__call *call = q->call;
    if (call != NULL) {
        /* The call ends from the loop: ending it may run a builtin's abort
         * callback, and callbacks run only inside dispatch. */
        jpt__buf_printf(&why, "The question `%s` was not answered%s%s", q->question_id,
                        reason != NULL ? ": " : "", reason != NULL ? reason : "");
        jpt__free(call->answer);
        call->answer = jpt__buf_take(&why);
        jpt__call_later(call, refused);
    }
    jpt__buf_free(&why);
    inquiry_free(q);
    return JPT_OK;
}
