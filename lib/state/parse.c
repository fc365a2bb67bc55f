/* Tool output -> jpt_state: recognising the RFD 058 envelope, RFD 009
 * ToolState and JP's legacy Outcome, and the raw text fallback for anything
 * else. Problems inside a recognised format become warnings, never a
 * fallback: a tool that writes a content array is clearly using the format
 * (RFD 058, "Malformed content blocks"). */
#include <stdio.h>
#include <string.h>

#include "state/impl.h"

static int warn_block(jpt_state *s, const char *where, size_t i, const char *why)
{
    return jpt__state_warn(s, "%s[%zu]: %s; block skipped", where, i, why);
}

/* Appends the blocks of a content array, skipping malformed ones. */
static int add_content_array(jpt_state *s, const json_t *arr, const char *where)
{
    size_t i;
    const json_t *j;
    char why[256];

    json_array_foreach(arr, i, j) {
        jpt__block b, pre;
        int rc = jpt__block_from_json(j, &b, &pre, why, sizeof(why));
        if (rc == JPT_ERR_INVALID) {
            if ((rc = warn_block(s, where, i, why)) < 0)
                return rc;
            continue;
        }
        if (rc < 0)
            return rc;
        if (pre.type != 0 && (rc = jpt__state_push_block(s, &pre)) < 0) {
            jpt__block_clear(&b);
            return rc;
        }
        if ((rc = jpt__state_push_block(s, &b)) < 0)
            return rc;
    }
    return JPT_OK;
}

/* `content` as RFD 009 carries it (a string, "" meaning none) or as RFD 058
 * does (a block array). Absent or null: no content. */
static int add_content_value(jpt_state *s, const json_t *content,
                             const char *where)
{
    if (content == NULL || json_is_null(content))
        return JPT_OK;
    if (json_is_string(content)) {
        if (json_string_length(content) == 0)
            return JPT_OK;
        return jpt__state_add_text(s, json_string_value(content), json_string_length(content));
    }
    if (json_is_array(content))
        return add_content_array(s, content, where);
    return jpt__state_warn(s, "%s is %s, not a string or block array; ignored",
                           where, jpt__json_type_phrase(content));
}

static bool has_question_id(const jpt_state *s, const jpt__field *id)
{
    for (size_t i = 0; i < s->nblocks; i++) {
        const jpt__field *other = &s->blocks[i].f[JPT_FIELD_ID];
        if (s->blocks[i].type == JPT_BLOCK_QUESTION && other->len == id->len &&
            memcmp(other->ptr, id->ptr, id->len) == 0)
            return true;
    }
    return false;
}

/* The `question` member of ToolState `waiting` and Outcome `needs_input`:
 * JP's Question or RFD 058's. Appended after the content, preceded by its
 * pre_amble; skipped when the content array already holds it (the block
 * array form jpt_state_to_json writes). */
static int add_question_member(jpt_state *s, const json_t *q)
{
    char why[256];
    const char *pre_amble;
    jpt__block b;

    if (q == NULL || json_is_null(q))
        return JPT_OK;
    int rc = jpt__question_from_json(q, &b, &pre_amble, why, sizeof(why));
    if (rc == JPT_ERR_INVALID)
        return jpt__state_warn(s, "question: %s; question skipped", why);
    if (rc < 0)
        return rc;
    if (has_question_id(s, &b.f[JPT_FIELD_ID])) {
        jpt__block_clear(&b);
        return JPT_OK;
    }
    if (pre_amble != NULL && pre_amble[0] != '\0' &&
        (rc = jpt__state_add_text(s, pre_amble, strlen(pre_amble))) < 0) {
        jpt__block_clear(&b);
        return rc;
    }
    return jpt__state_push_block(s, &b);
}

static int take_trace(jpt_state *s, const json_t *trace, const char *where)
{
    size_t i;
    const json_t *line;
    int rc;

    if (trace == NULL || json_is_null(trace))
        return JPT_OK;
    if (!json_is_array(trace))
        return jpt__state_warn(s, "%s.trace is %s, not an array; ignored", where,
                               jpt__json_type_phrase(trace));
    json_array_foreach(trace, i, line) {
        if (!json_is_string(line))
            rc = jpt__state_warn(s, "%s.trace[%zu] is %s, not a string; ignored",
                                 where, i, jpt__json_type_phrase(line));
        else
            rc = jpt__strv_push(&s->trace, json_string_value(line),
                                json_string_length(line));
        if (rc < 0)
            return rc;
    }
    return JPT_OK;
}

static int take_bool(jpt_state *s, const json_t *v, const char *where,
                     bool *out)
{
    *out = false;
    if (v == NULL || json_is_null(v))
        return JPT_OK;
    if (!json_is_boolean(v))
        return jpt__state_warn(s, "%s is %s, not a boolean; read as false",
                               where, jpt__json_type_phrase(v));
    *out = json_is_true(v);
    return JPT_OK;
}

/* An error given as {message, trace, transient} (ToolError, legacy Outcome),
 * with the content blocks (if any) already in the state. RFD 058 carries
 * the message in the content; when the content does not already say it, the
 * message is appended as a text block so that no reader loses it. */
static int take_tool_error(jpt_state *s, const json_t *err, const char *where)
{
    const json_t *message = json_object_get(err, "message");
    char member[64];
    bool transient;
    int rc = JPT_OK;

    if (message == NULL)
        rc = jpt__state_warn(s, "%s has no message", where);
    else if (!json_is_string(message))
        rc = jpt__state_warn(s, "%s.message is %s, not a string; ignored", where,
                             jpt__json_type_phrase(message));
    else if (json_string_length(message) > 0) {
        size_t len = json_string_length(message);
        rc = jpt__state_set_error_from_blocks(s, false);
        if (rc == JPT_OK && (s->error_message_len != len ||
                             memcmp(s->error_message, json_string_value(message), len) != 0))
            rc = jpt__state_add_text(s, json_string_value(message), len);
    }
    if (rc < 0)
        return rc;

    snprintf(member, sizeof(member), "%s.transient", where);
    if ((rc = take_bool(s, json_object_get(err, "transient"), member,
                        &transient)) < 0 ||
        (rc = jpt__state_set_error_from_blocks(s, transient)) < 0)
        return rc;
    return take_trace(s, json_object_get(err, "trace"), where);
}

static int take_structured(jpt_state *s, const json_t *root)
{
    const json_t *sc = json_object_get(root, "structuredContent");

    if (sc == NULL)
        return JPT_OK;
    return jpt__json_dump(sc, JSON_COMPACT | JSON_ENCODE_ANY, &s->structured);
}

/* The kind a status or ToolState type names, 0 for none. RFD 009 mentions a
 * ToolState type "spawned" without defining it; it can only mean a tool that
 * has started, so it reads as running. */
static int kind_from_status(const char *status, bool allow_spawned)
{
    if (strcmp(status, "running") == 0 ||
        (allow_spawned && strcmp(status, "spawned") == 0))
        return JPT_STATE_RUNNING;
    if (strcmp(status, "waiting") == 0)
        return JPT_STATE_WAITING;
    if (strcmp(status, "stopped") == 0)
        return JPT_STATE_STOPPED;
    return 0;
}

/* Warnings every format shares about a finished state. */
static int check_consistency(jpt_state *s, bool status_given)
{
    size_t questions = jpt__state_question_count(s);

    if (s->kind == JPT_STATE_WAITING && questions == 0)
        return jpt__state_warn(s, "the state is waiting but the content has no "
                                  "question block");
    if (s->kind != JPT_STATE_WAITING && questions > 0 && status_given)
        return jpt__state_warn(s, "the state is %s; its question blocks are not "
                                  "asked", jpt__state_kind_name(s->kind));
    return JPT_OK;
}

/* 1. RFD 058 envelope / MCP CallToolResult. */
static int parse_envelope(jpt_state *s, const json_t *root)
{
    const json_t *content = json_object_get(root, "content");
    const json_t *meta = json_object_get(root, "_meta");
    const json_t *status = NULL, *err_meta = NULL;
    bool is_error, transient = false;
    int rc;

    if (json_is_string(content))
        rc = jpt__state_add_text(s, json_string_value(content), json_string_length(content));
    else
        rc = add_content_array(s, content, "content");
    if (rc < 0 ||
        (rc = take_bool(s, json_object_get(root, "isError"), "isError",
                        &is_error)) < 0 ||
        (rc = take_structured(s, root)) < 0)
        return rc;

    if (meta != NULL && !json_is_object(meta)) {
        if ((rc = jpt__state_warn(s, "_meta is %s, not an object; ignored",
                                  jpt__json_type_phrase(meta))) < 0)
            return rc;
    } else if (meta != NULL) {
        status = json_object_get(meta, "computer.jp/status");
        err_meta = json_object_get(meta, "computer.jp/error");
    }

    /* RFD 058: an absent status means stopped; a one-shot tool asking a
     * question sends question blocks without one, which is waiting. */
    s->kind = jpt__state_question_count(s) > 0 ? JPT_STATE_WAITING
                                               : JPT_STATE_STOPPED;
    if (status != NULL) {
        int kind = json_is_string(status)
                       ? kind_from_status(json_string_value(status), false)
                       : 0;
        if (kind != 0)
            s->kind = kind;
        else if ((rc = jpt__state_warn(
                      s, "_meta.computer.jp/status is not \"running\", "
                         "\"waiting\" or \"stopped\"; read as %s",
                      jpt__state_kind_name(s->kind))) < 0)
            return rc;
    }

    if (err_meta != NULL && !is_error)
        rc = jpt__state_warn(s, "_meta.computer.jp/error is set but isError is "
                                "not true; ignored");
    else if (err_meta != NULL && !json_is_object(err_meta))
        rc = jpt__state_warn(s, "_meta.computer.jp/error is %s, not an object; "
                                "ignored", jpt__json_type_phrase(err_meta));
    else if (err_meta != NULL &&
             (rc = take_bool(s, json_object_get(err_meta, "transient"),
                             "_meta.computer.jp/error.transient", &transient)) == 0)
        rc = take_trace(s, json_object_get(err_meta, "trace"),
                        "_meta.computer.jp/error");
    if (rc < 0)
        return rc;

    if (is_error) {
        if (s->kind != JPT_STATE_STOPPED && status != NULL &&
            (rc = jpt__state_warn(s, "isError with status \"%s\"; read as stopped",
                                  jpt__state_kind_name(s->kind))) < 0)
            return rc;
        if ((rc = jpt__state_set_error_from_blocks(s, transient)) < 0)
            return rc;
    }
    return check_consistency(s, status != NULL);
}

/* "result" as RFD 058's envelope (an MCP CallToolResult): its content
 * (a block array or a string) and, with isError true, a failure. */
static int take_result_envelope(jpt_state *s, const json_t *result)
{
    bool is_error;
    int rc;

    if ((rc = add_content_value(s, json_object_get(result, "content"), "result.content")) < 0 ||
        (rc = take_bool(s, json_object_get(result, "isError"), "result.isError", &is_error)) <
            0 ||
        (rc = take_structured(s, result)) < 0)
        return rc;
    return is_error ? jpt__state_set_error_from_blocks(s, false) : JPT_OK;
}

/* A stopped ToolState's end, in every form the RFDs write it (issue 16):
 *   "result": {"Ok": value} | {"Err": ToolError}  RFD 009's Result, as serde
 *                                                 writes it;
 *   "result": value                               the value itself: a string
 *                                                 (RFD 009's and D11's
 *                                                 examples, "Staged 3
 *                                                 hunks.") or a block array;
 *   "result": {"content": […], "isError"}         RFD 058's envelope (the
 *                                                 host trial: a tool that
 *                                                 speaks RFD 058 wraps its
 *                                                 result in one);
 *   "error": ToolError, no "result"               RFD 009's From<Outcome>
 *                                                 sketch, Stopped { content,
 *                                                 error }.
 * Both runtimes (a stdio tool's state line, a VFS tool's state
 * notification) read it here. */
static int take_stopped_end(jpt_state *s, const json_t *root)
{
    const json_t *result = json_object_get(root, "result");
    const json_t *ok = json_object_get(result, "Ok");
    const json_t *err = json_object_get(result, "Err");

    if (result == NULL) {
        err = json_object_get(root, "error");
        if (err == NULL || json_is_null(err))
            return JPT_OK;
        return json_is_object(err) ? take_tool_error(s, err, "error")
                                   : jpt__state_warn(s, "error is %s, not an object; ignored",
                                                     jpt__json_type_phrase(err));
    }
    if (json_is_string(result) || json_is_array(result) || json_is_null(result))
        return add_content_value(s, result, "result");
    if (ok != NULL && json_object_size(result) == 1)
        return add_content_value(s, ok, "result.Ok");
    if (json_is_object(err) && json_object_size(result) == 1)
        return take_tool_error(s, err, "result.Err");
    const json_t *content = json_object_get(result, "content");
    if (json_is_array(content) || json_is_string(content))
        return take_result_envelope(s, result);
    return jpt__state_warn(s, "result is %s, not a string, a block array, {\"Ok\": …}, "
                              "{\"Err\": {…}} or {\"content\": […]}; ignored",
                           json_is_object(result) ? "another object"
                                                  : jpt__json_type_phrase(result));
}

/* 2. RFD 009 ToolState. */
static int parse_tool_state(jpt_state *s, const json_t *root, int kind)
{
    const json_t *content = json_object_get(root, "content");
    int rc;

    s->kind = kind;
    if ((rc = take_structured(s, root)) < 0 ||
        (rc = add_content_value(s, content, "content")) < 0)
        return rc;
    if (kind == JPT_STATE_WAITING)
        rc = add_question_member(s, json_object_get(root, "question"));
    else if (kind == JPT_STATE_STOPPED)
        rc = take_stopped_end(s, root);
    if (rc < 0)
        return rc;
    return check_consistency(s, true);
}

/* 3. JP's legacy Outcome, mapped as RFD 009's table says. */
static int parse_outcome(jpt_state *s, const json_t *root, const char *type)
{
    const json_t *content = json_object_get(root, "content");
    int rc;

    if ((rc = take_structured(s, root)) < 0 ||
        (rc = add_content_value(s, content, "content")) < 0)
        return rc;
    if (strcmp(type, "success") == 0) {
        s->kind = JPT_STATE_STOPPED;
        if (content == NULL)
            rc = jpt__state_warn(s, "success outcome has no content");
    } else if (strcmp(type, "error") == 0) {
        s->kind = JPT_STATE_STOPPED;
        rc = take_tool_error(s, root, "error outcome");
    } else {
        s->kind = JPT_STATE_WAITING;
        rc = add_question_member(s, json_object_get(root, "question"));
    }
    if (rc < 0)
        return rc;
    return check_consistency(s, true);
}

static int parse_raw(jpt_state *s, const char *data, size_t len)
{
    s->kind = JPT_STATE_STOPPED;
    s->raw = true;
    return jpt__state_add_text(s, data, len);
}

static bool starts_like_object(const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return c == '{';
    }
    return false;
}

/* Detects the format of a JSON object and parses it; *recognised is false
 * when it is none of them, and the output is raw text. */
static int parse_object(jpt_state *s, const json_t *root, bool *recognised)
{
    const char *type = json_string_value(json_object_get(root, "type"));
    const json_t *content = json_object_get(root, "content");

    *recognised = true;
    if (type != NULL) {
        int kind = kind_from_status(type, true);
        if (kind != 0)
            return parse_tool_state(s, root, kind);
        if (strcmp(type, "success") == 0 || strcmp(type, "error") == 0 ||
            strcmp(type, "needs_input") == 0)
            return parse_outcome(s, root, type);
    }
    if (json_is_array(content) || json_is_string(content))
        return parse_envelope(s, root);
    *recognised = false;
    if (content != NULL)
        return jpt__state_warn(s, "content is %s, not an array or string; the "
                                  "output is read as raw text",
                               jpt__json_type_phrase(content));
    return JPT_OK;
}

JPT_EXPORT int jpt_state_parse(const char *data, size_t len, unsigned flags,
                               jpt_state **out)
{
    json_t *root = NULL;
    json_error_t jerr;
    bool recognised = false;
    int rc = JPT_OK;

    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_state_parse: out is NULL");
    *out = NULL;
    if (data == NULL && len > 0)
        return jpt__fail(JPT_ERR_INVALID, "jpt_state_parse: data is NULL but len is %zu", len);
    if ((flags & ~JPT_PARSE_RAW) != 0)
        return jpt__fail(JPT_ERR_INVALID, "jpt_state_parse: unknown flags 0x%x",
                         flags & ~JPT_PARSE_RAW);

    jpt_state *s = jpt__state_alloc(JPT_STATE_STOPPED);
    if (s == NULL)
        return jpt__fail(JPT_ERR_NOMEM, "jpt_state_parse: out of memory");

    /* Only an object can be a structured format; checking the first byte
     * keeps plain text (the common case for shell tools) out of the JSON
     * parser. */
    if (!(flags & JPT_PARSE_RAW) && starts_like_object(data, len)) {
        rc = jpt__json_load(data, len, JSON_ALLOW_NUL, &root, &jerr);
        if (rc == JPT_ERR_INVALID)
            rc = JPT_OK;
        if (rc == JPT_OK && root != NULL)
            rc = parse_object(s, root, &recognised);
        json_decref(root);
    }
    if (rc == JPT_OK && !recognised)
        rc = parse_raw(s, data != NULL ? data : "", len);
    if (rc < 0) {
        jpt_state_unref(s);
        return jpt__fail(rc, "jpt_state_parse: out of memory reading %zu bytes of output", len);
    }
    *out = s;
    return JPT_OK;
}
