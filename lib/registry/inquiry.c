/* Questions put to the host's inquiry handler, and the public jpt_inquiry
 * functions. An inquiry knows what it asks and how to check an answer;
 * what the answer does is its owner's (inquiry.h). */
#include <stdio.h>
#include <string.h>

#include "registry/inquiry.h"

static void inquiry_free(jpt_inquiry *q)
{
    jpt_registry *r = q->r;

    JPT__LIST_REMOVE(r->inquiries, q);
    if (q->owner != NULL && q->ops->released != NULL)
        q->ops->released(q);
    jpt__free(q->tool);
    jpt__free(q->call_id);
    jpt__free(q->handle_id);
    jpt__free(q->question_json);
    jpt__free(q->question_id);
    json_decref(q->schema);
    jpt_state_unref(q->context);
    jpt__free(q);
}

void jpt__inquiry_orphan(jpt_inquiry *q)
{
    if (q != NULL)
        q->owner = NULL;
}

void jpt__inquiries_free(jpt_registry *r)
{
    while (r->inquiries != NULL)
        inquiry_free(r->inquiries);
}

bool jpt__inquiry_handler_set(const jpt_registry *r)
{
    return r->inquiry_fn != NULL;
}

static int copy_name(const char *name, char **out)
{
    if (name == NULL)
        return JPT_OK;
    return (*out = jpt__strdup(name)) != NULL ? JPT_OK : JPT_ERR_NOMEM;
}

/* The question as the host reads it, its schema for checking answers, and
 * the blocks shown before it. */
static int take_question(jpt_inquiry *q, const jpt__inquiry_about *a)
{
    const jpt__block *question = a->question;
    json_t *block = jpt__block_to_json(question);
    int rc = block != NULL ? JPT_OK : JPT_ERR_NOMEM;

    if (rc == JPT_OK)
        rc = jpt__json_dump(json_object_get(block, "question"), JSON_COMPACT,
                            &q->question_json);
    json_decref(block);
    if (rc == JPT_OK && question->f[JPT_FIELD_SCHEMA].ptr != NULL &&
        (q->schema = jpt__json_reload(question->f[JPT_FIELD_SCHEMA].ptr,
                                      question->f[JPT_FIELD_SCHEMA].len)) == NULL)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK)
        rc = copy_name(question->f[JPT_FIELD_ID].ptr, &q->question_id);
    if (rc == JPT_OK && (q->context = jpt__state_alloc(JPT_STATE_RUNNING)) == NULL)
        rc = JPT_ERR_NOMEM;
    for (size_t i = 0; rc == JPT_OK && i < a->nbefore; i++) {
        jpt__block copy;
        if ((rc = jpt__block_copy(&a->before[i], &copy)) == JPT_OK)
            rc = jpt__state_push_block(q->context, &copy);
    }
    return rc;
}

int jpt__inquiry_ask(jpt_registry *r, const jpt__inquiry_about *about,
                     const jpt__inquiry_owner *ops, void *owner, jpt_inquiry **slot)
{
    jpt_inquiry *q = jpt__calloc(1, sizeof(*q));
    int rc;

    if (q == NULL)
        return JPT_ERR_NOMEM;
    q->r = r;
    q->target = about->target;
    JPT__LIST_PUSH(r->inquiries, q);
    if ((rc = take_question(q, about)) < 0 || (rc = copy_name(about->tool, &q->tool)) < 0 ||
        (rc = copy_name(about->call_id, &q->call_id)) < 0 ||
        (rc = copy_name(about->handle_id, &q->handle_id)) < 0) {
        inquiry_free(q);
        return rc;
    }
    q->ops = ops;
    q->owner = owner;
    if (slot != NULL)
        *slot = q;
    r->inquiry_fn(q, r->inquiry_ud);
    return JPT_OK;
}

/* ---- The public functions ---------------------------------------------------------- */

JPT_EXPORT void jpt_registry_set_inquiry_handler(jpt_registry *r, jpt_inquiry_fn fn, void *ud)
{
    if (r == NULL)
        return;
    r->inquiry_fn = fn;
    r->inquiry_ud = ud;
}

JPT_EXPORT const char *jpt_inquiry_tool(const jpt_inquiry *q)
{
    return q != NULL ? q->tool : NULL;
}

JPT_EXPORT const char *jpt_inquiry_call_id(const jpt_inquiry *q)
{
    return q != NULL ? q->call_id : NULL;
}

JPT_EXPORT const char *jpt_inquiry_handle_id(const jpt_inquiry *q)
{
    return q != NULL ? q->handle_id : NULL;
}

JPT_EXPORT const char *jpt_inquiry_question_json(const jpt_inquiry *q)
{
    return q != NULL ? q->question_json : NULL;
}

JPT_EXPORT int jpt_inquiry_target(const jpt_inquiry *q)
{
    return q != NULL ? q->target : JPT_ERR_INVALID;
}

JPT_EXPORT const jpt_state *jpt_inquiry_context(const jpt_inquiry *q)
{
    return q != NULL ? q->context : NULL;
}

JPT_EXPORT const char *jpt_inquiry_errmsg(const jpt_inquiry *q)
{
    return q != NULL ? q->err.text : "";
}

/* The answer as JSON, checked against the question's schema. */
static int parse_answer(jpt_inquiry *q, const char *answer_json, json_t **out)
{
    json_error_t jerr;
    char *why = NULL;
    /* An answer may hold what a question's default can: NUL characters. */
    int rc = jpt__json_load(answer_json, strlen(answer_json), JSON_DECODE_ANY | JSON_ALLOW_NUL,
                            out, &jerr);

    if (rc < 0)
        return jpt__err(&q->err, rc, "the answer is not JSON: %s",
                        rc == JPT_ERR_NOMEM ? "out of memory" : jerr.text);
    if (q->schema == NULL || (rc = jpt__schema_check_json(q->schema, *out, &why)) == JPT_OK)
        return JPT_OK;
    json_decref(*out);
    *out = NULL;
    rc = jpt__err(&q->err, rc, "the answer does not fit question '%s': %s", q->question_id,
                  why != NULL ? why : jpt_strerror(rc));
    jpt__free(why);
    return rc;
}

JPT_EXPORT int jpt_inquiry_answer(jpt_inquiry *q, const char *answer_json)
{
    json_t *answer = NULL;
    int rc;

    if (q == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&q->err);
    /* What it asked about has ended, or was cancelled. */
    if (q->owner == NULL) {
        inquiry_free(q);
        return JPT_ERR_CANCELLED;
    }
    if (answer_json == NULL)
        return jpt__err(&q->err, JPT_ERR_INVALID, "the answer is NULL");
    if ((rc = parse_answer(q, answer_json, &answer)) < 0)
        return rc;
    rc = q->ops->answered(q, answer, answer_json);
    json_decref(answer);
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
    if (q->owner != NULL)
        q->ops->declined(q, why.data);
    jpt__buf_free(&why);
    inquiry_free(q);
    return JPT_OK;
}
