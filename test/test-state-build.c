/* Building states (jpt_state_new, jpt_state_add_*, set_*), reference
 * counting, and the builders' errors (state.h "Building a state": "on
 * failure the state is unchanged and jpt_state_errmsg() says why"). */
#include <string.h>

#include "test-util.h"

#define SHARED_MSG "the state is shared and can no longer change"
#define AFTER_ERROR_MSG "the error is set; content can no longer be added"

static jpt_state *new_state(int kind)
{
    jpt_state *s = NULL;
    assert_int_equal(jpt_state_new(kind, &s), JPT_OK);
    assert_non_null(s);
    return s;
}

/* Field `field` of block `i` is `expected`, or absent when that is NULL. */
static void assert_field(const jpt_state *s, size_t i, int field, const char *expected)
{
    size_t len = 0;
    const char *value = jpt_state_block_field(s, i, field, &len);
    if (expected == NULL) {
        if (value != NULL)
            fail_msg("block %zu field %d: expected none, got '%s'", i, field, value);
        return;
    }
    if (value == NULL)
        fail_msg("block %zu field %d: expected '%s', got none", i, field, expected);
    assert_string_equal(value, expected);
    assert_int_equal(len, strlen(expected));
}

static void assert_errmsg_starts_with(const jpt_state *s, const char *prefix)
{
    const char *msg = jpt_state_errmsg(s);
    if (strncmp(msg, prefix, strlen(prefix)) != 0)
        fail_msg("errmsg '%s' does not start with '%s'", msg, prefix);
}

/* A stopped state holding one text block "before": what the failure tests
 * check stays as it was. */
static jpt_state *state_with_one_block(void)
{
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_text(s, "before"), JPT_OK);
    return s;
}

static void assert_still_one_block(const jpt_state *s)
{
    assert_int_equal(jpt_state_block_count(s), 1);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_TEXT);
    assert_field(s, 0, JPT_FIELD_TEXT, "before");
}

static void assert_resource_invalid(const jpt_resource *r, const char *why)
{
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_resource(s, r), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), why);
    assert_still_one_block(s);
    jpt_state_unref(s);
}

static void assert_block_json_invalid(const char *json, const char *why)
{
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_block_json(s, json), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), why);
    assert_still_one_block(s);
    jpt_state_unref(s);
}

/* ---- jpt_state_new ------------------------------------------------------------- */

static void new_state_is_empty_with_the_given_kind(void **state)
{
    (void)state;
    const int kinds[] = {JPT_STATE_RUNNING, JPT_STATE_WAITING, JPT_STATE_STOPPED};
    for (size_t i = 0; i < 3; i++) {
        jpt_state *s = new_state(kinds[i]);
        assert_int_equal(jpt_state_kind(s), kinds[i]);
        assert_int_equal(jpt_state_block_count(s), 0);
        assert_int_equal(jpt_state_is_error(s), 0);
        assert_string_equal(jpt_state_error_message(s), "");
        assert_int_equal(jpt_state_error_transient(s), 0);
        assert_int_equal(jpt_state_error_trace_count(s), 0);
        assert_null(jpt_state_structured_content(s));
        assert_int_equal(jpt_state_warning_count(s), 0);
        assert_string_equal(jpt_state_errmsg(s), "");
        jpt_state_unref(s);
    }
}

static void new_with_unknown_kind_is_invalid(void **state)
{
    (void)state;
    const int kinds[] = {0, -1, 4, JPT_STATE_STOPPED + 100};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        jpt_state *s = NULL;
        assert_int_equal(jpt_state_new(kinds[i], &s), JPT_ERR_INVALID);
        assert_null(s);
    }
}

static void new_with_null_out_is_invalid(void **state)
{
    (void)state;
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, NULL), JPT_ERR_INVALID);
}

/* ---- Text ----------------------------------------------------------------------- */

static void add_text_appends_blocks_in_order(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_RUNNING);
    assert_int_equal(jpt_state_add_text(s, "first"), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "second line\n"), JPT_OK);
    assert_int_equal(jpt_state_block_count(s), 2);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_TEXT);
    assert_int_equal(jpt_state_block_type(s, 1), JPT_BLOCK_TEXT);
    assert_field(s, 0, JPT_FIELD_TEXT, "first");
    assert_field(s, 1, JPT_FIELD_TEXT, "second line\n");
    assert_string_equal(jpt_state_errmsg(s), "");
    jpt_state_unref(s);
}

static void add_text_accepts_empty_text(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_text(s, ""), JPT_OK);
    assert_int_equal(jpt_state_block_count(s), 1);
    assert_field(s, 0, JPT_FIELD_TEXT, "");
    jpt_state_unref(s);
}

static void text_block_has_only_text(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    for (int f = JPT_FIELD_URI; f <= JPT_FIELD_BLOB_SIZE; f++)
        assert_field(s, 0, f, NULL);
    jpt_state_unref(s);
}

static void add_text_null_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_text(s, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "text block: text is NULL");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

static void block_accessors_out_of_range_give_nothing(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    size_t len = 99;
    assert_int_equal(jpt_state_block_type(s, 1), 0);
    assert_null(jpt_state_block_field(s, 1, JPT_FIELD_TEXT, &len));
    assert_null(jpt_state_block_field(s, 0, 0, NULL));
    assert_null(jpt_state_block_field(s, 0, JPT_FIELD_BLOB_SIZE + 1, NULL));
    assert_null(jpt_state_block_field(s, 0, -1, NULL));
    jpt_state_unref(s);
}

static void builders_on_null_state_are_invalid(void **state)
{
    (void)state;
    jpt_resource r = {.size = sizeof(r), .uri = "file:///x", .text = "x"};
    assert_int_equal(jpt_state_add_text(NULL, "x"), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_add_resource(NULL, &r), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_add_question(NULL, "q", "Q?", NULL, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_add_block_json(NULL, "{\"type\":\"text\",\"text\":\"x\"}"),
                     JPT_ERR_INVALID);
    assert_int_equal(jpt_state_set_structured_content(NULL, "{}"), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_set_error(NULL, "boom", 0), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_add_error_trace(NULL, "x"), JPT_ERR_INVALID);
}

/* Detail the header leaves open ("the last failed builder call … valid
 * until the next call on s"): the next builder call clears the message,
 * even when it succeeds. */
static void errmsg_is_cleared_by_the_next_builder_call(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_text(s, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "text block: text is NULL");
    assert_int_equal(jpt_state_add_text(s, "ok"), JPT_OK);
    assert_string_equal(jpt_state_errmsg(s), "");
    jpt_state_unref(s);
}

/* ---- Resources ------------------------------------------------------------------------ */

static void add_resource_with_text_keeps_every_field(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    jpt_resource r = {
        .size = sizeof(r),
        .uri = "file:///project/src/main.rs",
        .mime_type = "text/rust",
        .text = "fn main() {}",
        .formatted = "```rs\nfn main() {}\n```",
        .name = "main.rs",
        .title = "Main",
        .description = "The entry point",
        .annotations_json = "{ \"audience\": [\"user\"], \"priority\": 0.5 }",
    };
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_OK);
    assert_int_equal(jpt_state_block_count(s), 1);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_RESOURCE);
    /* The URI is kept as the tool gave it; canonical forms are for naming. */
    assert_field(s, 0, JPT_FIELD_URI, "file:///project/src/main.rs");
    assert_field(s, 0, JPT_FIELD_MIME_TYPE, "text/rust");
    assert_field(s, 0, JPT_FIELD_TEXT, "fn main() {}");
    assert_field(s, 0, JPT_FIELD_FORMATTED, "```rs\nfn main() {}\n```");
    assert_field(s, 0, JPT_FIELD_NAME, "main.rs");
    assert_field(s, 0, JPT_FIELD_TITLE, "Main");
    assert_field(s, 0, JPT_FIELD_DESCRIPTION, "The entry point");
    /* state.h: "SCHEMA, DEFAULT and ANNOTATIONS are compact JSON text". */
    assert_field(s, 0, JPT_FIELD_ANNOTATIONS, "{\"audience\":[\"user\"],\"priority\":0.5}");
    assert_field(s, 0, JPT_FIELD_BLOB, NULL);
    assert_field(s, 0, JPT_FIELD_BLOB_SIZE, NULL);
    jpt_state_unref(s);
}

static void add_resource_minimal_has_only_uri_and_text(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    jpt_resource r = {.size = sizeof(r), .uri = "https://example.com/a", .text = "a"};
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_OK);
    assert_field(s, 0, JPT_FIELD_URI, "https://example.com/a");
    assert_field(s, 0, JPT_FIELD_TEXT, "a");
    const int absent[] = {JPT_FIELD_MIME_TYPE, JPT_FIELD_BLOB, JPT_FIELD_FORMATTED,
                          JPT_FIELD_NAME, JPT_FIELD_TITLE, JPT_FIELD_DESCRIPTION,
                          JPT_FIELD_ANNOTATIONS, JPT_FIELD_ID, JPT_FIELD_SCHEMA,
                          JPT_FIELD_DEFAULT, JPT_FIELD_BLOB_SIZE};
    for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        assert_field(s, 0, absent[i], NULL);
    jpt_state_unref(s);
}

/* state.h: "BLOB is the base64 text as the tool sent it;
 * JPT_FIELD_BLOB_SIZE is the decoded size in bytes". */
static void add_resource_with_blob_keeps_base64_and_decoded_size(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    jpt_resource r = {.size = sizeof(r), .uri = "file:///project/logo.png",
                      .mime_type = "image/png", .blob = "aGVsbG8="};
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_OK);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_RESOURCE);
    assert_field(s, 0, JPT_FIELD_BLOB, "aGVsbG8=");
    assert_field(s, 0, JPT_FIELD_BLOB_SIZE, "5");
    assert_field(s, 0, JPT_FIELD_TEXT, NULL);
    assert_field(s, 0, JPT_FIELD_MIME_TYPE, "image/png");
    jpt_state_unref(s);
}

static void blob_size_counts_decoded_bytes(void **state)
{
    (void)state;
    static const struct {
        const char *blob, *size;
    } cases[] = {
        {"", "0"},          {"AA==", "1"},     {"AAA=", "2"},
        {"AAAA", "3"},      {"aGVsbG8", "5"},  {"aGVs\nbG8=\n", "5"},
        {"+/+/", "3"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        jpt_state *s = new_state(JPT_STATE_STOPPED);
        jpt_resource r = {.size = sizeof(r), .uri = "file:///b", .blob = cases[i].blob};
        if (jpt_state_add_resource(s, &r) != JPT_OK)
            fail_msg("blob '%s': %s", cases[i].blob, jpt_state_errmsg(s));
        assert_field(s, 0, JPT_FIELD_BLOB, cases[i].blob);
        assert_field(s, 0, JPT_FIELD_BLOB_SIZE, cases[i].size);
        jpt_state_unref(s);
    }
}

static void add_resource_null_or_small_struct_is_invalid(void **state)
{
    (void)state;
    jpt_resource r = {.size = sizeof(r) - 1, .uri = "file:///x", .text = "x"};
    assert_resource_invalid(NULL, "resource: the struct is NULL");
    assert_resource_invalid(&r, "resource: size is smaller than sizeof(jpt_resource)");
    r.size = 0;
    assert_resource_invalid(&r, "resource: size is smaller than sizeof(jpt_resource)");
}

/* A caller built against a newer jptool passes a bigger struct: accepted
 * while the fields this library does not know are zero, refused (never
 * silently ignored) once one is set. */
static void add_resource_from_a_newer_caller(void **state)
{
    struct newer {
        jpt_resource known;
        const char *later_field;
    } n = {{.size = sizeof(n), .uri = "file:///x", .text = "x"}, NULL};
    jpt_state *s = state_with_one_block();

    (void)state;
    assert_int_equal(jpt_state_add_resource(s, &n.known), JPT_OK);
    assert_int_equal(jpt_state_block_count(s), 2);
    n.later_field = "set";
    assert_int_equal(jpt_state_add_resource(s, &n.known), JPT_ERR_UNSUPPORTED);
    assert_string_equal(jpt_state_errmsg(s), "resource: fields this library does not know are set");
    assert_int_equal(jpt_state_block_count(s), 2);
    jpt_state_unref(s);
}

static void add_resource_without_uri_is_invalid(void **state)
{
    (void)state;
    jpt_resource r = {.size = sizeof(r), .text = "x"};
    assert_resource_invalid(&r, "resource block has no uri");
}

static void add_resource_with_empty_uri_is_invalid(void **state)
{
    (void)state;
    jpt_resource r = {.size = sizeof(r), .uri = "", .text = "x"};
    assert_resource_invalid(&r, "resource block has an empty uri");
}

static void add_resource_with_text_and_blob_is_invalid(void **state)
{
    (void)state;
    jpt_resource r = {.size = sizeof(r), .uri = "file:///x", .text = "x", .blob = "eA=="};
    assert_resource_invalid(&r, "resource 'file:///x' has both text and blob");
}

static void add_resource_without_text_or_blob_is_invalid(void **state)
{
    (void)state;
    jpt_resource r = {.size = sizeof(r), .uri = "file:///x", .mime_type = "text/plain"};
    assert_resource_invalid(&r, "resource 'file:///x' has neither text nor blob");
}

/* RFC 4648 §4 base64: its alphabet, at most two '=' and only at the end. */
static void add_resource_with_bad_base64_is_invalid(void **state)
{
    (void)state;
    const char *bad[] = {"not base64!", "A", "AA=A", "A===", "aGVsbG8-", "aGVs_bG8="};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        jpt_resource r = {.size = sizeof(r), .uri = "file:///x", .blob = bad[i]};
        assert_resource_invalid(&r, "resource 'file:///x': blob is not valid base64");
    }
}

static void add_resource_with_annotations_not_json_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    jpt_resource r = {.size = sizeof(r), .uri = "file:///x", .text = "x",
                      .annotations_json = "{audience: user}"};
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_ERR_INVALID);
    assert_errmsg_starts_with(s, "resource annotations is not JSON: ");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

static void add_resource_with_annotations_not_object_is_invalid(void **state)
{
    (void)state;
    jpt_resource r = {.size = sizeof(r), .uri = "file:///x", .text = "x",
                      .annotations_json = "[\"user\"]"};
    assert_resource_invalid(&r, "resource 'file:///x': annotations are an array, not an object");
}

/* common.h: "Strings cross the API as NUL-terminated UTF-8". */
static void add_resource_with_invalid_utf8_is_invalid(void **state)
{
    (void)state;
    jpt_resource r = {.size = sizeof(r), .uri = "file:///x", .text = "caf\xE9"};
    assert_resource_invalid(&r, "resource: a string is not valid UTF-8");
}

/* ---- Questions ------------------------------------------------------------------------------ */

static void add_question_keeps_id_text_schema_and_default(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_WAITING);
    assert_int_equal(jpt_state_add_question(s, "target_branch", "Which branch?",
                                            "{ \"type\": \"string\", \"enum\": [\"main\", \"dev\"] }",
                                            " \"main\" "),
                     JPT_OK);
    assert_int_equal(jpt_state_block_count(s), 1);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_QUESTION);
    assert_field(s, 0, JPT_FIELD_ID, "target_branch");
    assert_field(s, 0, JPT_FIELD_TEXT, "Which branch?");
    assert_field(s, 0, JPT_FIELD_SCHEMA, "{\"type\":\"string\",\"enum\":[\"main\",\"dev\"]}");
    assert_field(s, 0, JPT_FIELD_DEFAULT, "\"main\"");
    assert_field(s, 0, JPT_FIELD_URI, NULL);
    jpt_state_unref(s);
}

/* state.h: schema "NULL for "any answer""; default "NULL for none". */
static void add_question_without_schema_or_default_leaves_them_absent(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_WAITING);
    assert_int_equal(jpt_state_add_question(s, "q", "Anything?", NULL, NULL), JPT_OK);
    assert_field(s, 0, JPT_FIELD_SCHEMA, NULL);
    assert_field(s, 0, JPT_FIELD_DEFAULT, NULL);
    jpt_state_unref(s);
}

/* state.h: `default_json` "is any JSON value". */
static void add_question_default_may_be_any_json_value(void **state)
{
    (void)state;
    const char *values[] = {"true", "null", "3.5", "[1,2]", "{\"a\":{}}"};
    jpt_state *s = new_state(JPT_STATE_WAITING);
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        assert_int_equal(jpt_state_add_question(s, "q", "Q?", NULL, values[i]), JPT_OK);
        assert_field(s, i, JPT_FIELD_DEFAULT, values[i]);
    }
    jpt_state_unref(s);
}

/* state.h: builders read JSON text that spells NUL characters (\u0000), as
 * jpt_state_parse() does; the fields keep them escaped. */
static void builders_accept_nul_characters_in_json(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_WAITING);
    jpt_resource r = {.size = sizeof(r), .uri = "file:///a", .text = "a",
                      .annotations_json = "{\"note\":\"x\\u0000y\"}"};

    assert_int_equal(jpt_state_add_question(s, "q", "Q?", "{\"enum\":[\"a\\u0000b\"]}",
                                            "\"a\\u0000b\""),
                     JPT_OK);
    assert_field(s, 0, JPT_FIELD_SCHEMA, "{\"enum\":[\"a\\u0000b\"]}");
    assert_field(s, 0, JPT_FIELD_DEFAULT, "\"a\\u0000b\"");
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_OK);
    assert_field(s, 1, JPT_FIELD_ANNOTATIONS, "{\"note\":\"x\\u0000y\"}");
    assert_int_equal(jpt_state_set_structured_content(s, "[\"\\u0000\"]"), JPT_OK);
    assert_string_equal(jpt_state_structured_content(s), "[\"\\u0000\"]");
    jpt_state_unref(s);
}

static void add_question_without_id_or_text_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_question(s, NULL, "Q?", NULL, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "question: id or text is NULL");
    assert_int_equal(jpt_state_add_question(s, "q", NULL, NULL, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "question: id or text is NULL");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

/* state.h: "`id` is non-empty". */
static void add_question_with_empty_id_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_question(s, "", "Q?", NULL, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "question has an empty id");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

static void add_question_with_schema_not_json_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_question(s, "q", "Q?", "{type: boolean}", NULL),
                     JPT_ERR_INVALID);
    assert_errmsg_starts_with(s, "question schema is not JSON: ");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

static void add_question_with_default_not_json_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_question(s, "q", "Q?", NULL, "main"), JPT_ERR_INVALID);
    assert_errmsg_starts_with(s, "question default is not JSON: ");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

/* state.h: "JPT_ERR_INVALID for … a schema that is neither an object nor a
 * boolean". */
static void add_question_with_schema_not_object_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_question(s, "q", "Q?", "42", NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "question 'q': schema is an integer, not an object or a boolean");
    assert_int_equal(jpt_state_add_question(s, "q", "Q?", "[]", NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "question 'q': schema is an array, not an object or a boolean");
    assert_int_equal(jpt_state_add_question(s, "q", "Q?", "null", NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "question 'q': schema is null, not an object or a boolean");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

/* state.h: "a JSON Schema (an object, or the boolean schemas true /
 * false)". */
static void add_question_accepts_boolean_schemas(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_WAITING);
    assert_int_equal(jpt_state_add_question(s, "any", "Anything?", "true", NULL), JPT_OK);
    assert_int_equal(jpt_state_add_question(s, "none", "Nothing?", " false ", NULL), JPT_OK);
    assert_field(s, 0, JPT_FIELD_SCHEMA, "true");
    assert_field(s, 1, JPT_FIELD_SCHEMA, "false");
    jpt_state_unref(s);
}

static void add_question_with_invalid_utf8_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_question(s, "q", "Caf\xE9?", NULL, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "question: a string is not valid UTF-8");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

/* ---- Blocks as JSON ------------------------------------------------------------------------------ */

static void add_block_json_text(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_block_json(s, "{\"type\":\"text\",\"text\":\"hi\"}"), JPT_OK);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_TEXT);
    assert_field(s, 0, JPT_FIELD_TEXT, "hi");
    jpt_state_unref(s);
}

static void add_block_json_text_keeps_nul_bytes(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    size_t len = 0;
    assert_int_equal(jpt_state_add_block_json(s, "{\"type\":\"text\",\"text\":\"a\\u0000b\"}"),
                     JPT_OK);
    const char *text = jpt_state_block_field(s, 0, JPT_FIELD_TEXT, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(text, "a\0b", 3);
    jpt_state_unref(s);
}

/* RFD 058: `formatted` beside `resource`; MCP annotations on the block. */
static void add_block_json_text_resource(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_block_json(
                         s, "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///p/a.rs\","
                            "\"mimeType\":\"text/rust\",\"text\":\"fn a() {}\",\"name\":\"a.rs\","
                            "\"title\":\"A\",\"description\":\"d\"},\"formatted\":\"F\","
                            "\"annotations\":{\"priority\":1}}"),
                     JPT_OK);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_RESOURCE);
    assert_field(s, 0, JPT_FIELD_URI, "file:///p/a.rs");
    assert_field(s, 0, JPT_FIELD_MIME_TYPE, "text/rust");
    assert_field(s, 0, JPT_FIELD_TEXT, "fn a() {}");
    assert_field(s, 0, JPT_FIELD_NAME, "a.rs");
    assert_field(s, 0, JPT_FIELD_TITLE, "A");
    assert_field(s, 0, JPT_FIELD_DESCRIPTION, "d");
    assert_field(s, 0, JPT_FIELD_FORMATTED, "F");
    assert_field(s, 0, JPT_FIELD_ANNOTATIONS, "{\"priority\":1}");
    jpt_state_unref(s);
}

/* RFD 065's Resource carries annotations inside the resource object. */
static void add_block_json_resource_reads_annotations_inside_resource(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_block_json(
                         s, "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///p/a\","
                            "\"text\":\"a\",\"annotations\":{\"audience\":[\"user\"]}}}"),
                     JPT_OK);
    assert_field(s, 0, JPT_FIELD_ANNOTATIONS, "{\"audience\":[\"user\"]}");
    jpt_state_unref(s);
}

static void add_block_json_blob_resource(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_block_json(
                         s, "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///p/logo.png\","
                            "\"mimeType\":\"image/png\",\"blob\":\"AAECAw==\"}}"),
                     JPT_OK);
    assert_field(s, 0, JPT_FIELD_BLOB, "AAECAw==");
    assert_field(s, 0, JPT_FIELD_BLOB_SIZE, "4");
    assert_field(s, 0, JPT_FIELD_TEXT, NULL);
    jpt_state_unref(s);
}

static void add_block_json_question(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_WAITING);
    assert_int_equal(jpt_state_add_block_json(
                         s, "{\"type\":\"question\",\"question\":{\"id\":\"confirm\","
                            "\"text\":\"Apply?\",\"schema\":{\"type\":\"boolean\"},\"default\":true}}"),
                     JPT_OK);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_QUESTION);
    assert_field(s, 0, JPT_FIELD_ID, "confirm");
    assert_field(s, 0, JPT_FIELD_TEXT, "Apply?");
    assert_field(s, 0, JPT_FIELD_SCHEMA, "{\"type\":\"boolean\"}");
    assert_field(s, 0, JPT_FIELD_DEFAULT, "true");
    jpt_state_unref(s);
}

/* state.h jpt_state_parse: JP's Question "becomes a question block with the
 * equivalent JSON Schema, its pre_amble a text block before it". */
static void add_block_json_legacy_question_adds_pre_amble_first(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_WAITING);
    assert_int_equal(jpt_state_add_block_json(
                         s, "{\"type\":\"question\",\"question\":{\"id\":\"br\",\"text\":\"Branch?\","
                            "\"pre_amble\":\"Two branches exist.\","
                            "\"answer_type\":{\"Select\":{\"options\":[\"main\",\"dev\"]}}}}"),
                     JPT_OK);
    assert_int_equal(jpt_state_block_count(s), 2);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_TEXT);
    assert_field(s, 0, JPT_FIELD_TEXT, "Two branches exist.");
    assert_int_equal(jpt_state_block_type(s, 1), JPT_BLOCK_QUESTION);
    assert_field(s, 1, JPT_FIELD_SCHEMA, "{\"type\":\"string\",\"enum\":[\"main\",\"dev\"]}");
    jpt_state_unref(s);
}

static void add_block_json_image(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_block_json(
                         s, "{\"type\":\"image\",\"data\":\"aGVsbG8=\",\"mimeType\":\"image/png\","
                            "\"annotations\":{\"audience\":[\"assistant\"]}}"),
                     JPT_OK);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_IMAGE);
    assert_field(s, 0, JPT_FIELD_BLOB, "aGVsbG8=");
    assert_field(s, 0, JPT_FIELD_BLOB_SIZE, "5");
    assert_field(s, 0, JPT_FIELD_MIME_TYPE, "image/png");
    assert_field(s, 0, JPT_FIELD_ANNOTATIONS, "{\"audience\":[\"assistant\"]}");
    assert_field(s, 0, JPT_FIELD_URI, NULL);
    jpt_state_unref(s);
}

static void add_block_json_audio(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_block_json(
                         s, "{\"type\":\"audio\",\"data\":\"AAECAwQFBgc=\",\"mimeType\":\"audio/wav\"}"),
                     JPT_OK);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_AUDIO);
    assert_field(s, 0, JPT_FIELD_BLOB, "AAECAwQFBgc=");
    assert_field(s, 0, JPT_FIELD_BLOB_SIZE, "8");
    assert_field(s, 0, JPT_FIELD_MIME_TYPE, "audio/wav");
    assert_field(s, 0, JPT_FIELD_ANNOTATIONS, NULL);
    jpt_state_unref(s);
}

/* The annotations' 0.2 stays 0.2 (jansson alone writes 0.20000000000000001). */
static void add_block_json_resource_link(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_add_block_json(
                         s, "{\"type\":\"resource_link\",\"uri\":\"file:///p/README.md\","
                            "\"name\":\"README\",\"title\":\"Read me\",\"description\":\"docs\","
                            "\"mimeType\":\"text/markdown\",\"annotations\":{\"priority\":0.2}}"),
                     JPT_OK);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_RESOURCE_LINK);
    assert_field(s, 0, JPT_FIELD_URI, "file:///p/README.md");
    assert_field(s, 0, JPT_FIELD_NAME, "README");
    assert_field(s, 0, JPT_FIELD_TITLE, "Read me");
    assert_field(s, 0, JPT_FIELD_DESCRIPTION, "docs");
    assert_field(s, 0, JPT_FIELD_MIME_TYPE, "text/markdown");
    assert_field(s, 0, JPT_FIELD_ANNOTATIONS, "{\"priority\":0.2}");
    assert_field(s, 0, JPT_FIELD_TEXT, NULL);
    assert_field(s, 0, JPT_FIELD_BLOB, NULL);
    jpt_state_unref(s);
}

static void add_block_json_null_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid(NULL, "block: JSON is NULL");
}

static void add_block_json_not_json_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_block_json(s, "{\"type\":\"text\","), JPT_ERR_INVALID);
    assert_errmsg_starts_with(s, "block is not a JSON object: ");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

static void add_block_json_not_object_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid("[{\"type\":\"text\",\"text\":\"x\"}]",
                              "block is an array, not an object");
}

static void add_block_json_without_type_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid("{\"text\":\"x\"}", "block has no type");
    assert_block_json_invalid("{\"type\":[\"text\"],\"text\":\"x\"}",
                              "block type is an array, not a string");
}

static void add_block_json_unknown_type_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid("{\"type\":\"video\",\"data\":\"AA==\"}",
                              "unknown block type 'video'");
}

static void add_block_json_text_without_text_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid("{\"type\":\"text\"}", "text block has no text");
    assert_block_json_invalid("{\"type\":\"text\",\"text\":[\"x\"]}",
                              "text block: text is an array, not a string");
}

static void add_block_json_resource_without_uri_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid("{\"type\":\"resource\",\"resource\":{\"text\":\"x\"}}",
                              "resource block has no uri");
    assert_block_json_invalid("{\"type\":\"resource\",\"uri\":\"file:///x\",\"text\":\"x\"}",
                              "resource block has no resource object");
}

static void add_block_json_resource_with_bad_blob_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid("{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///x\","
                              "\"blob\":\"@@@\"}}",
                              "resource 'file:///x': blob is not valid base64");
}

static void add_block_json_question_without_id_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid("{\"type\":\"question\",\"question\":{\"text\":\"Q?\"}}",
                              "question has no id");
    assert_block_json_invalid("{\"type\":\"question\"}", "question block has no question object");
}

static void add_block_json_image_with_bad_data_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid("{\"type\":\"image\",\"data\":\"@@@@\",\"mimeType\":\"image/png\"}",
                              "image block: data is not valid base64");
    assert_block_json_invalid("{\"type\":\"image\",\"data\":\"aGVsbG8=\"}",
                              "image block has no mimeType");
}

static void add_block_json_resource_link_without_uri_is_invalid(void **state)
{
    (void)state;
    assert_block_json_invalid("{\"type\":\"resource_link\",\"name\":\"x\"}",
                              "resource_link block has no uri");
}

/* ---- Structured content -------------------------------------------------------------------- */

static void set_structured_content_keeps_compact_json(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_structured_content(s, "{ \"a\" : [1, 2], \"b\": null }"),
                     JPT_OK);
    assert_string_equal(jpt_state_structured_content(s), "{\"a\":[1,2],\"b\":null}");
    assert_int_equal(jpt_state_block_count(s), 0);
    jpt_state_unref(s);
}

static void set_structured_content_replaces_the_earlier_one(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_structured_content(s, "{\"old\":1}"), JPT_OK);
    assert_int_equal(jpt_state_set_structured_content(s, "[true]"), JPT_OK);
    assert_string_equal(jpt_state_structured_content(s), "[true]");
    jpt_state_unref(s);
}

/* state.h: "(any JSON value)" — null included, which is not "absent". */
static void set_structured_content_accepts_any_json_value(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_structured_content(s, "\"text\""), JPT_OK);
    assert_string_equal(jpt_state_structured_content(s), "\"text\"");
    assert_int_equal(jpt_state_set_structured_content(s, "null"), JPT_OK);
    assert_string_equal(jpt_state_structured_content(s), "null");
    jpt_state_unref(s);
}

static void set_structured_content_not_json_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_structured_content(s, "{\"kept\":1}"), JPT_OK);
    assert_int_equal(jpt_state_set_structured_content(s, "{nope}"), JPT_ERR_INVALID);
    assert_errmsg_starts_with(s, "structuredContent is not JSON: ");
    assert_int_equal(jpt_state_set_structured_content(s, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "structuredContent is NULL");
    assert_string_equal(jpt_state_structured_content(s), "{\"kept\":1}");
    jpt_state_unref(s);
}

/* ---- Errors ---------------------------------------------------------------------------------- */

/* state.h set_error: "A non-empty `message` is appended as a text block, so
 * the content carries it as RFD 058 requires". */
static void set_error_appends_the_message_as_a_text_block(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_error(s, "File not found: foo.rs", 0), JPT_OK);
    assert_int_equal(jpt_state_is_error(s), 1);
    assert_int_equal(jpt_state_error_transient(s), 0);
    assert_int_equal(jpt_state_block_count(s), 1);
    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_TEXT);
    assert_field(s, 0, JPT_FIELD_TEXT, "File not found: foo.rs");
    assert_string_equal(jpt_state_error_message(s), "File not found: foo.rs");
    jpt_state_unref(s);
}

/* state.h: "An error state is stopped." */
static void set_error_makes_a_running_state_stopped(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_RUNNING);
    assert_int_equal(jpt_state_set_error(s, "crashed", 1), JPT_OK);
    assert_int_equal(jpt_state_kind(s), JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_error_transient(s), 1);
    jpt_state_unref(s);
}

/* state.h: "the error message is then the text of all text blocks"
 * (error_message: "joined by newlines"). */
static void error_message_joins_every_text_block(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    jpt_resource r = {.size = sizeof(r), .uri = "file:///p/log", .text = "not part of it"};
    assert_int_equal(jpt_state_add_text(s, "first"), JPT_OK);
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "second"), JPT_OK);
    assert_int_equal(jpt_state_set_error(s, "boom", 1), JPT_OK);
    assert_int_equal(jpt_state_block_count(s), 4);
    assert_string_equal(jpt_state_error_message(s), "first\nsecond\nboom");
    jpt_state_unref(s);
}

static void set_error_with_empty_message_adds_no_block(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_set_error(s, "", 0), JPT_OK);
    assert_int_equal(jpt_state_is_error(s), 1);
    assert_still_one_block(s);
    assert_string_equal(jpt_state_error_message(s), "before");
    jpt_state_unref(s);
}

static void set_error_with_empty_message_on_empty_state(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_error(s, "", 0), JPT_OK);
    assert_int_equal(jpt_state_is_error(s), 1);
    assert_int_equal(jpt_state_block_count(s), 0);
    assert_string_equal(jpt_state_error_message(s), "");
    jpt_state_unref(s);
}

static void set_error_null_message_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_set_error(s, NULL, 0), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "error message is NULL");
    assert_int_equal(jpt_state_is_error(s), 0);
    assert_string_equal(jpt_state_error_message(s), "");
    assert_still_one_block(s);
    jpt_state_unref(s);
}

/* state.h set_error: "content can no longer be added afterwards". */
static void content_after_set_error_is_refused(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    jpt_resource r = {.size = sizeof(r), .uri = "file:///x", .text = "x"};
    assert_int_equal(jpt_state_set_error(s, "before", 0), JPT_OK);

    assert_int_equal(jpt_state_add_text(s, "late"), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), AFTER_ERROR_MSG);
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), AFTER_ERROR_MSG);
    assert_int_equal(jpt_state_add_question(s, "q", "Q?", NULL, NULL), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), AFTER_ERROR_MSG);
    assert_int_equal(jpt_state_add_block_json(s, "{\"type\":\"text\",\"text\":\"x\"}"),
                     JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), AFTER_ERROR_MSG);
    /* A second set_error would add its message as content too. */
    assert_int_equal(jpt_state_set_error(s, "again", 1), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), AFTER_ERROR_MSG);

    assert_still_one_block(s);
    assert_string_equal(jpt_state_error_message(s), "before");
    assert_int_equal(jpt_state_error_transient(s), 0);
    jpt_state_unref(s);
}

/* Detail the header leaves open: structuredContent is not a content block,
 * and the library still accepts it after the error. */
static void structured_content_after_set_error_is_accepted(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_error(s, "boom", 0), JPT_OK);
    assert_int_equal(jpt_state_set_structured_content(s, "{\"code\":2}"), JPT_OK);
    assert_string_equal(jpt_state_structured_content(s), "{\"code\":2}");
    jpt_state_unref(s);
}

/* state.h set_error: "trace lines can" be added afterwards. */
static void add_error_trace_appends_lines_in_order(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_error(s, "File not found: foo.rs", 1), JPT_OK);
    assert_int_equal(jpt_state_add_error_trace(s, "open failed"), JPT_OK);
    assert_int_equal(jpt_state_add_error_trace(s, "No such file or directory (os error 2)"),
                     JPT_OK);
    assert_int_equal(jpt_state_error_trace_count(s), 2);
    assert_string_equal(jpt_state_error_trace(s, 0), "open failed");
    assert_string_equal(jpt_state_error_trace(s, 1), "No such file or directory (os error 2)");
    assert_null(jpt_state_error_trace(s, 2));
    assert_int_equal(jpt_state_block_count(s), 1);
    jpt_state_unref(s);
}

static void add_error_trace_without_error_is_refused(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_add_error_trace(s, "cause"), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), "no error is set to add a trace to");
    assert_int_equal(jpt_state_error_trace_count(s), 0);
    assert_int_equal(jpt_state_is_error(s), 0);
    jpt_state_unref(s);
}

static void add_error_trace_null_line_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_error(s, "boom", 0), JPT_OK);
    assert_int_equal(jpt_state_add_error_trace(s, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_state_errmsg(s), "trace line is NULL");
    assert_int_equal(jpt_state_error_trace_count(s), 0);
    jpt_state_unref(s);
}

/* ---- Sharing and reference counting ------------------------------------------------------------ */

static void ref_returns_the_state_and_null_is_safe(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_ptr_equal(jpt_state_ref(s), s);
    assert_null(jpt_state_ref(NULL));
    jpt_state_unref(NULL);
    jpt_state_unref(s);
    jpt_state_unref(s);
}

/* state.h: "once a state has more than one reference it is immutable and
 * the builders refuse it with JPT_ERR_STATE"; "on failure the state is
 * unchanged". */
static void every_builder_refuses_a_shared_state(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    jpt_resource r = {.size = sizeof(r), .uri = "file:///x", .text = "x"};
    assert_int_equal(jpt_state_set_structured_content(s, "{\"v\":1}"), JPT_OK);
    jpt_state_ref(s);

    assert_int_equal(jpt_state_add_text(s, "x"), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), SHARED_MSG);
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), SHARED_MSG);
    assert_int_equal(jpt_state_add_question(s, "q", "Q?", NULL, NULL), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), SHARED_MSG);
    assert_int_equal(jpt_state_add_block_json(s, "{\"type\":\"text\",\"text\":\"x\"}"),
                     JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), SHARED_MSG);
    assert_int_equal(jpt_state_set_structured_content(s, "{\"v\":2}"), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), SHARED_MSG);
    assert_int_equal(jpt_state_set_error(s, "boom", 1), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), SHARED_MSG);

    assert_still_one_block(s);
    assert_string_equal(jpt_state_structured_content(s), "{\"v\":1}");
    assert_int_equal(jpt_state_is_error(s), 0);
    assert_int_equal(jpt_state_kind(s), JPT_STATE_STOPPED);
    jpt_state_unref(s);
    jpt_state_unref(s);
}

/* Being shared is checked before the arguments. */
static void shared_state_refuses_even_invalid_arguments_with_state(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    jpt_state_ref(s);
    assert_int_equal(jpt_state_add_text(s, NULL), JPT_ERR_STATE);
    assert_int_equal(jpt_state_add_resource(s, NULL), JPT_ERR_STATE);
    assert_still_one_block(s);
    jpt_state_unref(s);
    jpt_state_unref(s);
}

static void add_error_trace_refuses_a_shared_error_state(void **state)
{
    (void)state;
    jpt_state *s = new_state(JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_set_error(s, "boom", 0), JPT_OK);
    assert_int_equal(jpt_state_add_error_trace(s, "one"), JPT_OK);
    jpt_state_ref(s);
    assert_int_equal(jpt_state_add_error_trace(s, "two"), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), SHARED_MSG);
    assert_int_equal(jpt_state_error_trace_count(s), 1);
    assert_string_equal(jpt_state_error_trace(s, 0), "one");
    jpt_state_unref(s);
    jpt_state_unref(s);
}

/* state.h jpt_state_ref: "From then on the state is immutable, even after
 * the extra reference is dropped." */
static void state_stays_immutable_after_the_extra_reference_is_dropped(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    jpt_state_ref(s);
    jpt_state_unref(s);
    assert_int_equal(jpt_state_add_text(s, "after"), JPT_ERR_STATE);
    assert_string_equal(jpt_state_errmsg(s), SHARED_MSG);
    assert_int_equal(jpt_state_set_error(s, "boom", 0), JPT_ERR_STATE);
    assert_still_one_block(s);
    assert_int_equal(jpt_state_is_error(s), 0);
    jpt_state_unref(s);
}

/* state.h: "Strings returned by accessors are owned by the state and valid
 * until its last reference is dropped." */
static void state_stays_readable_until_the_last_reference(void **state)
{
    (void)state;
    jpt_state *s = state_with_one_block();
    const char *text = jpt_state_block_field(s, 0, JPT_FIELD_TEXT, NULL);
    jpt_state_ref(s);
    jpt_state_ref(s);
    jpt_state_unref(s);
    jpt_state_unref(s);
    assert_string_equal(text, "before");
    assert_int_equal(jpt_state_block_count(s), 1);
    jpt_state_unref(s);
}

/* Counted with the test allocator installed in main(): n refs need n+1
 * unrefs, and the last one frees everything the state allocated. */
static void last_unref_frees_the_state(void **state)
{
    (void)state;
    long before = tu_live_blocks();
    jpt_state *s = state_with_one_block();
    assert_int_equal(jpt_state_set_structured_content(s, "{\"a\":[1,2,3]}"), JPT_OK);
    jpt_state_ref(s);
    jpt_state_ref(s);
    jpt_state_unref(s);
    jpt_state_unref(s);
    assert_true(tu_live_blocks() > before);
    assert_field(s, 0, JPT_FIELD_TEXT, "before");
    jpt_state_unref(s);
    assert_int_equal(tu_live_blocks(), before);
}

int main(void)
{
    tu_install_counting_allocator();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_state_is_empty_with_the_given_kind),
        cmocka_unit_test(new_with_unknown_kind_is_invalid),
        cmocka_unit_test(new_with_null_out_is_invalid),
        cmocka_unit_test(add_text_appends_blocks_in_order),
        cmocka_unit_test(add_text_accepts_empty_text),
        cmocka_unit_test(text_block_has_only_text),
        cmocka_unit_test(add_text_null_is_invalid),
        cmocka_unit_test(block_accessors_out_of_range_give_nothing),
        cmocka_unit_test(errmsg_is_cleared_by_the_next_builder_call),
        cmocka_unit_test(builders_on_null_state_are_invalid),
        cmocka_unit_test(add_resource_with_text_keeps_every_field),
        cmocka_unit_test(add_resource_minimal_has_only_uri_and_text),
        cmocka_unit_test(add_resource_with_blob_keeps_base64_and_decoded_size),
        cmocka_unit_test(blob_size_counts_decoded_bytes),
        cmocka_unit_test(add_resource_null_or_small_struct_is_invalid),
        cmocka_unit_test(add_resource_from_a_newer_caller),
        cmocka_unit_test(add_resource_without_uri_is_invalid),
        cmocka_unit_test(add_resource_with_empty_uri_is_invalid),
        cmocka_unit_test(add_resource_with_text_and_blob_is_invalid),
        cmocka_unit_test(add_resource_without_text_or_blob_is_invalid),
        cmocka_unit_test(add_resource_with_bad_base64_is_invalid),
        cmocka_unit_test(add_resource_with_annotations_not_json_is_invalid),
        cmocka_unit_test(add_resource_with_annotations_not_object_is_invalid),
        cmocka_unit_test(add_resource_with_invalid_utf8_is_invalid),
        cmocka_unit_test(add_question_keeps_id_text_schema_and_default),
        cmocka_unit_test(add_question_without_schema_or_default_leaves_them_absent),
        cmocka_unit_test(add_question_default_may_be_any_json_value),
        cmocka_unit_test(builders_accept_nul_characters_in_json),
        cmocka_unit_test(add_question_without_id_or_text_is_invalid),
        cmocka_unit_test(add_question_with_empty_id_is_invalid),
        cmocka_unit_test(add_question_with_schema_not_json_is_invalid),
        cmocka_unit_test(add_question_with_default_not_json_is_invalid),
        cmocka_unit_test(add_question_with_schema_not_object_is_invalid),
        cmocka_unit_test(add_question_accepts_boolean_schemas),
        cmocka_unit_test(add_question_with_invalid_utf8_is_invalid),
        cmocka_unit_test(add_block_json_text),
        cmocka_unit_test(add_block_json_text_keeps_nul_bytes),
        cmocka_unit_test(add_block_json_text_resource),
        cmocka_unit_test(add_block_json_resource_reads_annotations_inside_resource),
        cmocka_unit_test(add_block_json_blob_resource),
        cmocka_unit_test(add_block_json_question),
        cmocka_unit_test(add_block_json_legacy_question_adds_pre_amble_first),
        cmocka_unit_test(add_block_json_image),
        cmocka_unit_test(add_block_json_audio),
        cmocka_unit_test(add_block_json_resource_link),
        cmocka_unit_test(add_block_json_null_is_invalid),
        cmocka_unit_test(add_block_json_not_json_is_invalid),
        cmocka_unit_test(add_block_json_not_object_is_invalid),
        cmocka_unit_test(add_block_json_without_type_is_invalid),
        cmocka_unit_test(add_block_json_unknown_type_is_invalid),
        cmocka_unit_test(add_block_json_text_without_text_is_invalid),
        cmocka_unit_test(add_block_json_resource_without_uri_is_invalid),
        cmocka_unit_test(add_block_json_resource_with_bad_blob_is_invalid),
        cmocka_unit_test(add_block_json_question_without_id_is_invalid),
        cmocka_unit_test(add_block_json_image_with_bad_data_is_invalid),
        cmocka_unit_test(add_block_json_resource_link_without_uri_is_invalid),
        cmocka_unit_test(set_structured_content_keeps_compact_json),
        cmocka_unit_test(set_structured_content_replaces_the_earlier_one),
        cmocka_unit_test(set_structured_content_accepts_any_json_value),
        cmocka_unit_test(set_structured_content_not_json_is_invalid),
        cmocka_unit_test(set_error_appends_the_message_as_a_text_block),
        cmocka_unit_test(set_error_makes_a_running_state_stopped),
        cmocka_unit_test(error_message_joins_every_text_block),
        cmocka_unit_test(set_error_with_empty_message_adds_no_block),
        cmocka_unit_test(set_error_with_empty_message_on_empty_state),
        cmocka_unit_test(set_error_null_message_is_invalid),
        cmocka_unit_test(content_after_set_error_is_refused),
        cmocka_unit_test(structured_content_after_set_error_is_accepted),
        cmocka_unit_test(add_error_trace_appends_lines_in_order),
        cmocka_unit_test(add_error_trace_without_error_is_refused),
        cmocka_unit_test(add_error_trace_null_line_is_invalid),
        cmocka_unit_test(ref_returns_the_state_and_null_is_safe),
        cmocka_unit_test(every_builder_refuses_a_shared_state),
        cmocka_unit_test(shared_state_refuses_even_invalid_arguments_with_state),
        cmocka_unit_test(add_error_trace_refuses_a_shared_error_state),
        cmocka_unit_test(state_stays_immutable_after_the_extra_reference_is_dropped),
        cmocka_unit_test(state_stays_readable_until_the_last_reference),
        cmocka_unit_test(last_unref_frees_the_state),
    };
    return TU_RUN(tests);
}
