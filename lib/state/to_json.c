/* jpt_state -> JSON text in the three forms jpt_state_parse() reads: the
 * RFD 058 envelope, RFD 009 ToolState and JP's legacy Outcome. Each form
 * parses back to an equal state; where a form would have to drop something
 * (several blocks in a string-typed `content`), `content` is written as a
 * block array instead. */
#include <string.h>

#include "state/impl.h"

/* A builder that remembers the first failure (memory), so that the
 * serialisers read as a list of members instead of a ladder of checks. */
typedef struct writer {
    bool failed;
} writer;

/* obj[key] = value, taking the value; a NULL value is a failed allocation.
 * (json_object_set_new releases the value when it fails.) */
static void set(writer *w, json_t *obj, const char *key, json_t *value)
{
    if (value == NULL)
        w->failed = true;
    else if (w->failed)
        json_decref(value);
    else if (json_object_set_new(obj, key, value) < 0)
        w->failed = true;
}

static json_t *blocks_array(const jpt_state *s, size_t from, size_t to)
{
    json_t *arr = json_array();

    for (size_t i = from; arr != NULL && i < to; i++)
        if (json_array_append_new(arr, jpt__block_to_json(&s->blocks[i])) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    return arr;
}

static bool is_single_text(const jpt_state *s, size_t from, size_t to)
{
    return to - from == 1 && s->blocks[from].type == JPT_BLOCK_TEXT &&
           s->blocks[from].f[JPT_FIELD_TEXT].len > 0;
}

/* RFD 009's `content` for blocks [from, to): "" for none, a string for one
 * non-empty text block, else a block array. */
static json_t *content_value(const jpt_state *s, size_t from, size_t to)
{
    if (from == to)
        return json_string("");
    if (is_single_text(s, from, to))
        return jpt__json_from_field(&s->blocks[from].f[JPT_FIELD_TEXT]);
    return blocks_array(s, from, to);
}

/* Sets `content`; with no blocks it is left out unless `required`. */
static void set_content(writer *w, json_t *obj, const jpt_state *s, size_t from,
                        size_t to, bool required)
{
    if (from < to || required)
        set(w, obj, "content", content_value(s, from, to));
}

static json_t *trace_array(const jpt_state *s)
{
    json_t *arr = json_array();

    for (size_t i = 0; arr != NULL && i < s->trace.n; i++) {
        jpt__field f = {s->trace.v[i], strlen(s->trace.v[i])};
        if (json_array_append_new(arr, jpt__json_from_field(&f)) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

/* {message, trace, transient}: RFD 009's ToolError and the legacy error,
 * set on `obj`; `content` goes on `content_obj` (the state's top level). */
static void set_tool_error(writer *w, json_t *obj, json_t *content_obj,
                           const jpt_state *s)
{
    jpt__field msg = {s->error_message, s->error_message_len};

    set(w, obj, "message", jpt__json_from_field(&msg));
    set(w, obj, "trace", trace_array(s));
    set(w, obj, "transient", json_boolean(s->transient));
    /* The message is derived from the text blocks; the content is needed
     * only when it says more than that one text. */
    if (s->nblocks > 0 && !is_single_text(s, 0, s->nblocks))
        set(w, content_obj, "content", blocks_array(s, 0, s->nblocks));
}

static void set_structured(writer *w, json_t *obj, const jpt_state *s)
{
    if (s->structured != NULL)
        set(w, obj, "structuredContent",
            jpt__json_reload(s->structured, strlen(s->structured)));
}

static json_t *to_envelope(writer *w, const jpt_state *s)
{
    json_t *root = json_object();
    json_t *meta = json_object();

    set(w, root, "content", blocks_array(s, 0, s->nblocks));
    if (s->is_error)
        set(w, root, "isError", json_true());
    set_structured(w, root, s);
    /* RFD 058: "When computer.jp/status is absent, the response is
     * implicitly stopped". Only a stopped state without questions leaves it
     * out; jptool's parser would read one with questions as waiting. */
    if (s->kind != JPT_STATE_STOPPED || jpt__state_question_count(s) > 0)
        set(w, meta, "computer.jp/status", json_string(jpt__state_kind_name(s->kind)));
    if (s->is_error && (s->transient || s->trace.n > 0)) {
        json_t *err = json_object();
        set(w, err, "transient", json_boolean(s->transient));
        set(w, err, "trace", trace_array(s));
        set(w, meta, "computer.jp/error", err);
    }
    if (json_object_size(meta) > 0)
        set(w, root, "_meta", json_incref(meta));
    json_decref(meta);
    return root;
}

/* The one pending question of a waiting state, when it is the last block
 * and the only question: the common shape (content, then a question) that
 * both legacy forms express with a separate `question` member. Else
 * s->nblocks. */
static size_t trailing_question(const jpt_state *s)
{
    size_t last = s->nblocks - 1;

    if (s->nblocks > 0 && s->blocks[last].type == JPT_BLOCK_QUESTION &&
        jpt__state_question_count(s) == 1)
        return last;
    return s->nblocks;
}

static const jpt__block *first_question(const jpt_state *s)
{
    for (size_t i = 0; i < s->nblocks; i++)
        if (s->blocks[i].type == JPT_BLOCK_QUESTION)
            return &s->blocks[i];
    return NULL;
}

/* Waiting states in both legacy forms: `content` and `question` when the
 * question ends the content; otherwise all blocks (questions included) as
 * the content array and the first question repeated as `question`. */
static void set_waiting(writer *w, json_t *root, const jpt_state *s,
                        bool pre_amble)
{
    size_t q = trailing_question(s);

    if (q == s->nblocks) {
        const jpt__block *first = first_question(s);
        set_content(w, root, s, 0, s->nblocks, false);
        if (first != NULL)
            set(w, root, "question", jpt__question_to_json(first, NULL));
    } else if (pre_amble && is_single_text(s, 0, q))
        set(w, root, "question",
            jpt__question_to_json(&s->blocks[q], &s->blocks[0].f[JPT_FIELD_TEXT]));
    else {
        set_content(w, root, s, 0, q, false);
        set(w, root, "question", jpt__question_to_json(&s->blocks[q], NULL));
    }
}

static json_t *to_tool_state(writer *w, const jpt_state *s)
{
    json_t *root = json_object();

    set(w, root, "type", json_string(jpt__state_kind_name(s->kind)));
    if (s->kind == JPT_STATE_RUNNING)
        set_content(w, root, s, 0, s->nblocks, false);
    else if (s->kind == JPT_STATE_WAITING)
        set_waiting(w, root, s, false);
    else if (s->is_error) {
        json_t *err = json_object();
        set_tool_error(w, err, root, s);
        set(w, root, "result", json_pack("{s:o}", "Err", err));
    } else
        set(w, root, "result",
            json_pack("{s:o}", "Ok", content_value(s, 0, s->nblocks)));
    set_structured(w, root, s);
    return root;
}

static json_t *to_outcome(writer *w, const jpt_state *s)
{
    json_t *root = json_object();

    if (s->kind == JPT_STATE_WAITING) {
        set(w, root, "type", json_string("needs_input"));
        set_waiting(w, root, s, true);
    } else if (s->is_error) {
        set(w, root, "type", json_string("error"));
        set_tool_error(w, root, root, s);
    } else {
        set(w, root, "type", json_string("success"));
        set_content(w, root, s, 0, s->nblocks, true);
    }
    set_structured(w, root, s);
    return root;
}

JPT_EXPORT int jpt_state_to_json(const jpt_state *s, int form, unsigned flags,
                                 char **out)
{
    writer w = {false};
    json_t *root = NULL;

    if (out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    if (s == NULL || (flags & ~JPT_JSON_PRETTY) != 0)
        return JPT_ERR_INVALID;
    switch (form) {
    case JPT_JSON_ENVELOPE:
        root = to_envelope(&w, s);
        break;
    case JPT_JSON_TOOL_STATE:
        root = to_tool_state(&w, s);
        break;
    case JPT_JSON_OUTCOME:
        /* The legacy Outcome has no running state to write. */
        if (s->kind == JPT_STATE_RUNNING)
            return JPT_ERR_INVALID;
        root = to_outcome(&w, s);
        break;
    default:
        return JPT_ERR_INVALID;
    }
    int rc = JPT_ERR_NOMEM;
    if (root != NULL && !w.failed)
        rc = jpt__json_dump(root, (flags & JPT_JSON_PRETTY) ? JSON_INDENT(2)
                                                            : JSON_COMPACT,
                            out);
    json_decref(root);
    return rc;
}
