/* Questions put to the host's inquiry handler, of three kinds:
 *
 *  - a one-shot run that ended `waiting` (RFD 009, "Interaction with the
 *    inquiry system"): the answer joins the accumulated answers and the
 *    tool runs again;
 *  - a stateful handle that asks while an await watches it (RFD 037,
 *    "Waiting handles and the inquiry system"): the answer goes to the
 *    still-running tool;
 *  - the turn end's question which handles to wait for (RFD 037,
 *    "Turn-end behavior").
 *
 * The handler may answer at any later time, so an inquiry outlives the
 * dispatch that raised it; if what it asked about ends first, it becomes
 * orphaned and its answer returns JPT_ERR_CANCELLED. */
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

static void inquiry_free(jpt_inquiry *q)
{
    jpt_registry *r = q->r;

    JPT__LIST_REMOVE(r->inquiries, q);
    if (q->call != NULL)
        q->call->inquiry = NULL;
    jpt__free(q->tool);
    jpt__free(q->call_id);
    jpt__free(q->handle_id);
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

void jpt__inquiry_forget_handle(jpt_handle *h)
{
    for (jpt_inquiry *q = h->r->inquiries; q != NULL; q = q->next)
        if (q->handle == h)
            q->handle = NULL;
}

void jpt__inquiries_free(jpt_registry *r)
{
    while (r->inquiries != NULL)
        inquiry_free(r->inquiries);
}

jpt_inquiry *jpt__inquiry_create(jpt_registry *r, const jpt__block *question,
                                 const jpt__block *before, size_t nbefore,
                                 const char *tool, int target)
{
    jpt_inquiry *q = jpt__calloc(1, sizeof(*q));
    json_t *block = jpt__block_to_json(question);
    int rc = q != NULL && block != NULL ? JPT_OK : JPT_ERR_NOMEM;

    if (rc == JPT_OK)
        rc = jpt__json_dump(json_object_get(block, "question"), JSON_COMPACT,
                            &q->question_json);
    json_decref(block);
    if (rc == JPT_OK && question->f[JPT_FIELD_SCHEMA].ptr != NULL &&
        (q->schema = jpt__json_reload(question->f[JPT_FIELD_SCHEMA].ptr,
                                      question->f[JPT_FIELD_SCHEMA].len)) == NULL)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK &&
        ((tool != NULL && (q->tool = jpt__strdup(tool)) == NULL) ||
         (q->question_id = jpt__strdup(question->f[JPT_FIELD_ID].ptr)) == NULL ||
         (q->context = jpt__state_alloc(JPT_STATE_RUNNING)) == NULL))
        rc = JPT_ERR_NOMEM;
    for (size_t i = 0; rc == JPT_OK && i < nbefore; i++) {
        jpt__block copy;
        if ((rc = jpt__block_copy(&before[i], &copy)) == JPT_OK)
            rc = jpt__state_push_block(q->context, &copy);
    }
    if (q == NULL)
        return NULL;
    q->r = r;
    q->target = target;
    JPT__LIST_PUSH(r->inquiries, q);
    if (rc < 0) {
        inquiry_free(q);
        return NULL;
    }
    return q;
}

/* ---- One-shot runs ------------------------------------------------------------- */

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
    jpt_inquiry *q = jpt__inquiry_create(r, b, s->blocks, qi, call->name,
                                         call->tool->question_target);
    if (q == NULL || (q->call_id = jpt__strdup(call->id)) == NULL) {
        if (q != NULL)
            inquiry_free(q);
        jpt__call_complete(call, "out of memory asking the tool's question", true);
        return;
    }
    q->call = call;
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
            jpt__handle_wait(h, call, false, -1);
        return;
    }
    jpt__free(answer);
    jpt__buf why = JPT__BUF_INIT;
    rc = jpt__handle_start(h, JPT__ACTION_NONE, &why);
    if (rc < 0)
        jpt__call_completef(call, true, "`%s` could not run again: %s", call->name,
                            why.data != NULL ? why.data : jpt_strerror(rc));
    else
        jpt__handle_wait(h, call, false, -1);
    jpt__buf_free(&why);
}

static int answer_call(jpt_inquiry *q, json_t *answer, const char *answer_json)
{
    /* RFD 009: "re-executes the tool with the accumulated answers", from
     * the next dispatch. */
    jpt__call *call = q->call;
    if (json_object_set(call->handle->answers, q->question_id, answer) < 0)
        return jpt__err(&q->err, JPT_ERR_NOMEM, "out of memory keeping the answer");
    jpt__free(call->answer);
    if ((call->answer = jpt__strdup(answer_json)) == NULL)
        return jpt__err(&q->err, JPT_ERR_NOMEM, "out of memory keeping the answer");
    call->rounds++;
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

/* ---- Awaited handles ------------------------------------------------------------ */

void jpt__await_handle_waiting(jpt_handle *h)
{
    jpt_registry *r = h->r;
    const jpt__block *question = jpt__handle_question(h);
    jpt_state *s = NULL;

    if (r->inquiry_fn == NULL || question == NULL)
        return;
    for (jpt_inquiry *q = r->inquiries; q != NULL; q = q->next)
        if (q->handle == h && strcmp(q->question_id, question->f[JPT_FIELD_ID].ptr) == 0)
            return; /* asked already */
    /* The context is the output the tool showed with its question. */
    if (jpt__handle_take_state(h, true, &s) < 0)
        return;
    size_t before = 0;
    while (before < s->nblocks && s->blocks[before].type != JPT_BLOCK_QUESTION)
        before++;
    jpt_inquiry *q = jpt__inquiry_create(r, question, s->blocks, before, h->tool->name,
                                         h->tool->question_target);
    jpt_state_unref(s);
    if (q == NULL || (q->handle_id = jpt__strdup(h->id)) == NULL) {
        if (q != NULL)
            inquiry_free(q);
        jpt__log(JPT_LOG_WARNING, "out of memory asking handle '%s''s question", h->id);
        return;
    }
    q->handle = h;
    r->inquiry_fn(q, r->inquiry_ud);
}

/* ---- The public functions ---------------------------------------------------------- */

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

JPT_EXPORT const char *jpt_inquiry_handle_id(const jpt_inquiry *q)
{
    return q->handle_id;
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
    char *why = NULL;
    int rc;

    if (q == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&q->err);
    /* What it asked about has ended, or its batch was cancelled (the
     * cancel, queued already, ends the call). */
    if (q->call != NULL ? q->call->cancelled : q->handle == NULL && q->turn == NULL) {
        inquiry_free(q);
        return JPT_ERR_CANCELLED;
    }
    if (answer_json == NULL)
        return jpt__err(&q->err, JPT_ERR_INVALID, "the answer is NULL");
    /* An answer may hold what a question's default can: NUL characters. */
    rc = jpt__json_load(answer_json, strlen(answer_json), JSON_DECODE_ANY | JSON_ALLOW_NUL,
                        &answer, &jerr);
    if (rc < 0)
        return jpt__err(&q->err, rc, "the answer is not JSON: %s",
                        rc == JPT_ERR_NOMEM ? "out of memory" : jerr.text);
    if (q->schema != NULL) {
        rc = jpt__schema_check_json(q->schema, answer, &why);
        if (rc < 0) {
            json_decref(answer);
            rc = jpt__err(&q->err, rc, "the answer does not fit question '%s': %s",
                          q->question_id, why != NULL ? why : jpt_strerror(rc));
            jpt__free(why);
            return rc;
        }
    }

    if (q->call != NULL)
        rc = answer_call(q, answer, answer_json);
    else if (q->handle != NULL)
        rc = jpt__handle_answer(q->handle, q->question_id, answer, answer_json);
    else
        rc = jpt__turn_answered(q->turn, answer);
    json_decref(answer);
    /* The handle moved on to another question, or ended, meanwhile. */
    if (rc == JPT_OK || rc == JPT_ERR_CANCELLED) {
        inquiry_free(q);
        return rc;
    }
    if (q->err.text[0] == '\0')
        jpt__err(&q->err, rc, "the answer could not be delivered: %s", jpt_strerror(rc));
    return rc;
}

JPT_EXPORT int jpt_inquiry_cancel(jpt_inquiry *q, const char *reason)
{
    jpt__buf why = JPT__BUF_INIT;

    if (q == NULL)
        return JPT_ERR_INVALID;
    if (jpt__buf_printf(&why, "The question `%s` was not answered%s%s", q->question_id,
                        reason != NULL ? ": " : "", reason != NULL ? reason : "") < 0) {
        jpt__buf_free(&why);
        return JPT_ERR_NOMEM;
    }
    if (q->call != NULL) {
        /* The call ends from the loop: ending it may run a builtin's abort
         * callback, and callbacks run only inside dispatch. */
        jpt__call *call = q->call;
        jpt__free(call->answer);
        call->answer = jpt__buf_take(&why);
        jpt__call_later(call, refused);
    } else if (q->handle != NULL)
        /* RFD 037: a cancelled prompt still brings the tool to Stopped,
         * with an error result. */
        jpt__handle_kill(q->handle, why.data);
    else if (q->turn != NULL)
        jpt__turn_unanswered(q->turn);
    jpt__buf_free(&why);
    inquiry_free(q);
    return JPT_OK;
}
