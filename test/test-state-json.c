/* jpt_state_to_json(): the exact JSON of each output form (RFD 058 envelope,
 * RFD 009 ToolState, JP's legacy Outcome) for representative states, pretty
 * output, argument checking, U+FFFD replacement, and the round-trip property
 * state.h promises: every form parses back to an equal state. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "test-util.h"

/* ---- Helpers ----------------------------------------------------------------- */

static jpt_state *parse_bytes(const char *data, size_t len)
{
    jpt_state *s = NULL;

    assert_int_equal(jpt_state_parse(data, len, 0, &s), JPT_OK);
    assert_non_null(s);
    return s;
}

/* Parses `input`, serialises it in `form` and compares as JSON. */
static void assert_form(const char *input, int form, const char *expected)
{
    jpt_state *s = tu_parse(input);
    char *json = tu_to_json(s, form);

    tu_assert_json_equal(json, expected);
    jpt_free(json);
    jpt_state_unref(s);
}

static const char text_state[] =
    "{\"content\":[{\"type\":\"text\",\"text\":\"Check succeeded.\"}]}";

static const char error_state[] =
    "{\"content\":[{\"type\":\"text\",\"text\":\"File not found: foo.rs\"}],"
    "\"isError\":true,\"_meta\":{\"computer.jp/error\":{\"transient\":true,"
    "\"trace\":[\"io error: No such file or directory (os error 2)\"]}}}";

static const char running_state[] =
    "{\"content\":[{\"type\":\"text\",\"text\":\"Stage this hunk? [y/n/...]\"}],"
    "\"_meta\":{\"computer.jp/status\":\"running\"}}";

static const char hunk_context[] =
    "[{\"type\":\"text\",\"text\":\"Diff for hunk 3/5:\"},"
    "{\"type\":\"text\",\"text\":\"@@ -10,3 +10,4 @@\\n+    new_line();\"}]";

static const char hunk_legacy_question[] =
    "{\"id\":\"hunk_3\",\"text\":\"Stage this hunk?\",\"default\":\"y\","
    "\"answer_type\":{\"Select\":{\"options\":[\"y\",\"n\",\"s\",\"q\"]}}}";

static const char confirm_state[] =
    "{\"content\":[{\"type\":\"text\",\"text\":\"src/main.rs already exists.\"},"
    "{\"type\":\"question\",\"question\":{\"id\":\"overwrite\",\"text\":\"Overwrite?\","
    "\"schema\":{\"type\":\"boolean\"}}}]}";

static const char resource_block[] =
    "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///project/src/main.rs\","
    "\"mimeType\":\"text/rust\",\"text\":\"fn main() {}\"}}";

static const char resource_state[] =
    "{\"content\":[{\"type\":\"resource\",\"resource\":{"
    "\"uri\":\"file:///project/src/main.rs\",\"mimeType\":\"text/rust\","
    "\"text\":\"fn main() {}\"}}],\"structuredContent\":{\"lines\":1}}";

/* ---- Exact JSON of each form --------------------------------------------------- */

static void envelope_of_text_state_is_content_array(void **state)
{
    (void)state;
    assert_form(text_state, JPT_JSON_ENVELOPE,
                "{\"content\":[{\"type\":\"text\",\"text\":\"Check succeeded.\"}]}");
}

static void tool_state_of_text_state_is_stopped_ok_string(void **state)
{
    (void)state;
    assert_form(text_state, JPT_JSON_TOOL_STATE,
                "{\"type\":\"stopped\",\"result\":{\"Ok\":\"Check succeeded.\"}}");
}

static void outcome_of_text_state_is_success_string(void **state)
{
    (void)state;
    assert_form(text_state, JPT_JSON_OUTCOME,
                "{\"type\":\"success\",\"content\":\"Check succeeded.\"}");
}

static void envelope_of_error_carries_error_meta(void **state)
{
    (void)state;
    assert_form(error_state, JPT_JSON_ENVELOPE,
                "{\"content\":[{\"type\":\"text\",\"text\":\"File not found: foo.rs\"}],"
                "\"isError\":true,\"_meta\":{\"computer.jp/error\":{\"transient\":true,"
                "\"trace\":[\"io error: No such file or directory (os error 2)\"]}}}");
}

/* RFD 058: without _meta."computer.jp/error" an error is non-transient with
 * no trace, so such an error needs no _meta. */
static void envelope_of_plain_error_has_no_meta(void **state)
{
    (void)state;
    assert_form("{\"type\":\"error\",\"message\":\"File not found: foo.rs\"}",
                JPT_JSON_ENVELOPE,
                "{\"content\":[{\"type\":\"text\",\"text\":\"File not found: foo.rs\"}],"
                "\"isError\":true}");
}

static void tool_state_of_error_is_stopped_err(void **state)
{
    (void)state;
    assert_form(error_state, JPT_JSON_TOOL_STATE,
                "{\"type\":\"stopped\",\"result\":{\"Err\":{"
                "\"message\":\"File not found: foo.rs\","
                "\"trace\":[\"io error: No such file or directory (os error 2)\"],"
                "\"transient\":true}}}");
}

static void outcome_of_error_is_legacy_error(void **state)
{
    (void)state;
    assert_form(error_state, JPT_JSON_OUTCOME,
                "{\"type\":\"error\",\"message\":\"File not found: foo.rs\","
                "\"trace\":[\"io error: No such file or directory (os error 2)\"],"
                "\"transient\":true}");
}

/* state.h: content that is not one non-empty text block is written "with
 * `content` as a block array instead, ... so nothing is lost". */
static void outcome_of_error_with_several_blocks_carries_content_array(void **state)
{
    (void)state;
    assert_form("{\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                "{\"type\":\"text\",\"text\":\"b\"}],\"isError\":true}",
                JPT_JSON_OUTCOME,
                "{\"type\":\"error\",\"message\":\"a\\nb\",\"trace\":[],"
                "\"transient\":false,\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                "{\"type\":\"text\",\"text\":\"b\"}]}");
}

static void envelope_of_running_state_names_status(void **state)
{
    (void)state;
    assert_form(running_state, JPT_JSON_ENVELOPE,
                "{\"content\":[{\"type\":\"text\",\"text\":\"Stage this hunk? [y/n/...]\"}],"
                "\"_meta\":{\"computer.jp/status\":\"running\"}}");
}

static void tool_state_of_running_state_is_running_string(void **state)
{
    (void)state;
    assert_form(running_state, JPT_JSON_TOOL_STATE,
                "{\"type\":\"running\",\"content\":\"Stage this hunk? [y/n/...]\"}");
}

static void tool_state_of_running_state_without_content_has_no_content(void **state)
{
    (void)state;
    assert_form("{\"type\":\"running\"}", JPT_JSON_TOOL_STATE, "{\"type\":\"running\"}");
}

/* state.h: the legacy format "cannot express" a running state. */
static void outcome_of_running_state_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = tu_parse(running_state);
    char *out = (char *)&out; /* any non-NULL value, to see it reset */

    assert_int_equal(jpt_state_to_json(s, JPT_JSON_OUTCOME, 0, &out), JPT_ERR_INVALID);
    assert_null(out);
    jpt_state_unref(s);
}

/* RFD 058: "When computer.jp/status is absent, the response is implicitly
 * stopped", so a waiting state says so, as the RFD's own example does. */
static void envelope_of_waiting_state_names_status(void **state)
{
    (void)state;
    assert_form(tu_rfd058_waiting, JPT_JSON_ENVELOPE,
                "{\"content\":["
                "{\"type\":\"text\",\"text\":\"Diff for hunk 3/5:\"},"
                "{\"type\":\"text\",\"text\":\"@@ -10,3 +10,4 @@\\n+    new_line();\"},"
                "{\"type\":\"question\",\"question\":{\"id\":\"hunk_3\","
                "\"text\":\"Stage this hunk?\",\"schema\":{\"type\":\"string\","
                "\"enum\":[\"y\",\"n\",\"s\",\"q\"]},\"default\":\"y\"}}],"
                "\"_meta\":{\"computer.jp/status\":\"waiting\"}}");
}

/* Parsing stays lenient: a one-shot tool's question without a status is
 * waiting, and its envelope then names the status. */
static void envelope_of_question_without_status_names_waiting(void **state)
{
    (void)state;
    assert_form(confirm_state, JPT_JSON_ENVELOPE,
                "{\"content\":[{\"type\":\"text\",\"text\":\"src/main.rs already exists.\"},"
                "{\"type\":\"question\",\"question\":{\"id\":\"overwrite\","
                "\"text\":\"Overwrite?\",\"schema\":{\"type\":\"boolean\"}}}],"
                "\"_meta\":{\"computer.jp/status\":\"waiting\"}}");
}

static void tool_state_of_waiting_state_has_content_and_legacy_question(void **state)
{
    (void)state;
    char expected[1024];

    snprintf(expected, sizeof(expected),
             "{\"type\":\"waiting\",\"content\":%s,\"question\":%s}", hunk_context,
             hunk_legacy_question);
    assert_form(tu_rfd058_waiting, JPT_JSON_TOOL_STATE, expected);
}

static void outcome_of_waiting_state_has_content_and_legacy_question(void **state)
{
    (void)state;
    char expected[1024];

    snprintf(expected, sizeof(expected),
             "{\"type\":\"needs_input\",\"content\":%s,\"question\":%s}", hunk_context,
             hunk_legacy_question);
    assert_form(tu_rfd058_waiting, JPT_JSON_OUTCOME, expected);
}

static void tool_state_of_text_then_question_uses_content_string(void **state)
{
    (void)state;
    assert_form(confirm_state, JPT_JSON_TOOL_STATE,
                "{\"type\":\"waiting\",\"content\":\"src/main.rs already exists.\","
                "\"question\":{\"id\":\"overwrite\",\"text\":\"Overwrite?\","
                "\"answer_type\":\"Boolean\"}}");
}

static void outcome_of_text_then_question_uses_pre_amble(void **state)
{
    (void)state;
    assert_form(confirm_state, JPT_JSON_OUTCOME,
                "{\"type\":\"needs_input\",\"question\":{\"id\":\"overwrite\","
                "\"text\":\"Overwrite?\",\"pre_amble\":\"src/main.rs already exists.\","
                "\"answer_type\":\"Boolean\"}}");
}

/* A schema that Boolean, Text and Select cannot say is written as is. */
static void tool_state_of_rich_schema_question_keeps_schema(void **state)
{
    (void)state;
    assert_form("{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"files\","
                "\"text\":\"Which files?\",\"schema\":{\"type\":\"array\","
                "\"items\":{\"type\":\"string\"}}}}]}",
                JPT_JSON_TOOL_STATE,
                "{\"type\":\"waiting\",\"question\":{\"id\":\"files\",\"text\":\"Which files?\","
                "\"schema\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}");
}

static void envelope_of_stopped_state_with_question_names_status(void **state)
{
    (void)state;
    assert_form("{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"go\","
                "\"text\":\"Go?\"}}],\"_meta\":{\"computer.jp/status\":\"stopped\"}}",
                JPT_JSON_ENVELOPE,
                "{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"go\","
                "\"text\":\"Go?\"}}],\"_meta\":{\"computer.jp/status\":\"stopped\"}}");
}

static void envelope_of_waiting_state_without_question_names_status(void **state)
{
    (void)state;
    assert_form("{\"type\":\"waiting\",\"content\":\"x\"}", JPT_JSON_ENVELOPE,
                "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],"
                "\"_meta\":{\"computer.jp/status\":\"waiting\"}}");
}

static void envelope_of_resource_state_keeps_resource_and_structured_content(void **state)
{
    (void)state;
    char expected[1024];

    snprintf(expected, sizeof(expected),
             "{\"content\":[%s],\"structuredContent\":{\"lines\":1}}", resource_block);
    assert_form(resource_state, JPT_JSON_ENVELOPE, expected);
}

static void tool_state_of_resource_state_writes_ok_as_block_array(void **state)
{
    (void)state;
    char expected[1024];

    snprintf(expected, sizeof(expected),
             "{\"type\":\"stopped\",\"result\":{\"Ok\":[%s]},"
             "\"structuredContent\":{\"lines\":1}}",
             resource_block);
    assert_form(resource_state, JPT_JSON_TOOL_STATE, expected);
}

static void outcome_of_resource_state_writes_content_as_block_array(void **state)
{
    (void)state;
    char expected[1024];

    snprintf(expected, sizeof(expected),
             "{\"type\":\"success\",\"content\":[%s],\"structuredContent\":{\"lines\":1}}",
             resource_block);
    assert_form(resource_state, JPT_JSON_OUTCOME, expected);
}

/* Not fixed by state.h, whose "not one non-empty text block" sentence could
 * be read to cover zero blocks: the string forms write no content as "",
 * RFD 009's own spelling of it (From<Outcome>: String::new()). */
static void empty_stopped_state_in_every_form(void **state)
{
    (void)state;
    assert_form("{\"content\":[]}", JPT_JSON_ENVELOPE, "{\"content\":[]}");
    assert_form("{\"content\":[]}", JPT_JSON_TOOL_STATE,
                "{\"type\":\"stopped\",\"result\":{\"Ok\":\"\"}}");
    assert_form("{\"content\":[]}", JPT_JSON_OUTCOME,
                "{\"type\":\"success\",\"content\":\"\"}");
}

/* An empty text block is not "one non-empty text block", so the string
 * forms write it as a block array (else it would read back as no content). */
static void empty_text_block_is_written_as_block_array(void **state)
{
    (void)state;
    static const char input[] = "{\"content\":[{\"type\":\"text\",\"text\":\"\"}]}";

    assert_form(input, JPT_JSON_TOOL_STATE,
                "{\"type\":\"stopped\",\"result\":{\"Ok\":[{\"type\":\"text\","
                "\"text\":\"\"}]}}");
    assert_form(input, JPT_JSON_OUTCOME,
                "{\"type\":\"success\",\"content\":[{\"type\":\"text\",\"text\":\"\"}]}");
}

/* Blocks are written back in the MCP form they were read in. */
static void every_block_type_is_written_in_mcp_form(void **state)
{
    (void)state;
    static const char envelope[] =
        "{\"content\":[{\"type\":\"image\",\"data\":\"iVBORw0KGgo=\",\"mimeType\":\"image/png\","
        "\"annotations\":{\"priority\":1}},"
        "{\"type\":\"audio\",\"data\":\"UklGRg==\",\"mimeType\":\"audio/wav\"},"
        "{\"type\":\"resource_link\",\"uri\":\"file:///a.rs\",\"name\":\"a.rs\","
        "\"title\":\"A\",\"description\":\"The A\",\"mimeType\":\"text/rust\","
        "\"annotations\":{\"audience\":[\"user\"]}},"
        "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///b.bin\","
        "\"mimeType\":\"application/octet-stream\",\"blob\":\"AAEC\",\"name\":\"b.bin\","
        "\"title\":\"B\",\"description\":\"The B\"},"
        "\"annotations\":{\"audience\":[\"assistant\"]},\"formatted\":\"b.bin (3 bytes)\"}]}";

    assert_form(envelope, JPT_JSON_ENVELOPE, envelope);
}

static void pretty_flag_indents_with_two_spaces(void **state)
{
    (void)state;
    jpt_state *s = tu_parse(text_state);
    char *out = NULL;

    assert_int_equal(jpt_state_to_json(s, JPT_JSON_ENVELOPE, JPT_JSON_PRETTY, &out),
                     JPT_OK);
    assert_string_equal(out, "{\n"
                             "  \"content\": [\n"
                             "    {\n"
                             "      \"type\": \"text\",\n"
                             "      \"text\": \"Check succeeded.\"\n"
                             "    }\n"
                             "  ]\n"
                             "}");
    jpt_free(out);
    jpt_state_unref(s);
}

static void compact_output_has_no_whitespace_between_tokens(void **state)
{
    (void)state;
    jpt_state *s = tu_parse(text_state);
    char *out = tu_to_json(s, JPT_JSON_ENVELOPE);

    assert_string_equal(out, "{\"content\":[{\"type\":\"text\",\"text\":\"Check succeeded.\"}]}");
    jpt_free(out);
    jpt_state_unref(s);
}

/* ---- Arguments ------------------------------------------------------------------- */

static void to_json_rejects_null_state(void **state)
{
    (void)state;
    char *out = (char *)&out;

    assert_int_equal(jpt_state_to_json(NULL, JPT_JSON_ENVELOPE, 0, &out), JPT_ERR_INVALID);
    assert_null(out);
}

static void to_json_rejects_null_out(void **state)
{
    (void)state;
    jpt_state *s = tu_parse(text_state);

    assert_int_equal(jpt_state_to_json(s, JPT_JSON_ENVELOPE, 0, NULL), JPT_ERR_INVALID);
    jpt_state_unref(s);
}

static void to_json_rejects_unknown_form(void **state)
{
    (void)state;
    jpt_state *s = tu_parse(text_state);
    const int forms[] = {0, JPT_JSON_OUTCOME + 1, -1};

    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        char *out = (char *)&out;
        assert_int_equal(jpt_state_to_json(s, forms[i], 0, &out), JPT_ERR_INVALID);
        assert_null(out);
    }
    jpt_state_unref(s);
}

static void to_json_rejects_unknown_flags(void **state)
{
    (void)state;
    jpt_state *s = tu_parse(text_state);
    char *out = (char *)&out;

    assert_int_equal(jpt_state_to_json(s, JPT_JSON_ENVELOPE, 0x2u, &out), JPT_ERR_INVALID);
    assert_null(out);
    out = (char *)&out;
    assert_int_equal(jpt_state_to_json(s, JPT_JSON_TOOL_STATE,
                                       JPT_JSON_PRETTY | 0x80000000u, &out),
                     JPT_ERR_INVALID);
    assert_null(out);
    jpt_state_unref(s);
}

/* ---- Bytes that JSON strings cannot hold as they are ------------------------------ */

/* A question whose default holds a NUL character: the fuzz harness's
 * regression input (test/fuzz/corpus/state-parse). */
static const char nul_default_question[] =
    "{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"q\",\"text\":\"Pick?\","
    "\"default\":\"a\\u0000b\"}}]}";

/* JSON fields (schema, default, annotations, structuredContent) keep a NUL
 * character escaped; every form writes it back as \u0000. */
static void nul_in_json_fields_is_written_in_every_form(void **state)
{
    (void)state;
    static const char question[] =
        "{\"id\":\"q\",\"text\":\"Pick?\",\"default\":\"a\\u0000b\"}";
    static const char rich[] =
        "{\"content\":[{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\","
        "\"annotations\":{\"note\":\"x\\u0000y\"}}],\"structuredContent\":[\"\\u0000\"]}";
    char expected[512];

    snprintf(expected, sizeof(expected),
             "{\"content\":[{\"type\":\"question\",\"question\":%s}],"
             "\"_meta\":{\"computer.jp/status\":\"waiting\"}}", question);
    assert_form(nul_default_question, JPT_JSON_ENVELOPE, expected);
    snprintf(expected, sizeof(expected), "{\"type\":\"waiting\",\"question\":%s}", question);
    assert_form(nul_default_question, JPT_JSON_TOOL_STATE, expected);
    snprintf(expected, sizeof(expected), "{\"type\":\"needs_input\",\"question\":%s}",
             question);
    assert_form(nul_default_question, JPT_JSON_OUTCOME, expected);

    assert_form(rich, JPT_JSON_ENVELOPE, rich);
    assert_form(rich, JPT_JSON_TOOL_STATE,
                "{\"type\":\"stopped\",\"result\":{\"Ok\":[{\"type\":\"image\","
                "\"data\":\"AAAA\",\"mimeType\":\"image/png\",\"annotations\":"
                "{\"note\":\"x\\u0000y\"}}]},\"structuredContent\":[\"\\u0000\"]}");
    assert_form(rich, JPT_JSON_OUTCOME,
                "{\"type\":\"success\",\"content\":[{\"type\":\"image\","
                "\"data\":\"AAAA\",\"mimeType\":\"image/png\",\"annotations\":"
                "{\"note\":\"x\\u0000y\"}}],\"structuredContent\":[\"\\u0000\"]}");
}

/* state.h: invalid sequences "are replaced with U+FFFD only when the state
 * is rendered or serialised as JSON". */
static void invalid_utf8_is_replaced_in_json_but_kept_in_state(void **state)
{
    (void)state;
    static const char data[] = "a\xff" "b";
    jpt_state *s = parse_bytes(data, sizeof(data) - 1);
    size_t len = 0;

    char *env = tu_to_json(s, JPT_JSON_ENVELOPE);
    tu_assert_json_equal(env, "{\"content\":[{\"type\":\"text\",\"text\":\"a\xef\xbf\xbd" "b\"}]}");
    char *outcome = tu_to_json(s, JPT_JSON_OUTCOME);
    tu_assert_json_equal(outcome, "{\"type\":\"success\",\"content\":\"a\xef\xbf\xbd" "b\"}");

    const char *text = jpt_state_block_field(s, 0, JPT_FIELD_TEXT, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(text, data, 3);
    jpt_free(env);
    jpt_free(outcome);
    jpt_state_unref(s);
}

/* NUL is valid UTF-8: JSON carries it as \u0000 and it reads back. */
static void nul_bytes_are_escaped_and_read_back(void **state)
{
    (void)state;
    static const char data[] = "a\0b";
    jpt_state *s = parse_bytes(data, sizeof(data) - 1);
    char *json = tu_to_json(s, JPT_JSON_TOOL_STATE);
    size_t len = 0;

    if (strstr(json, "a\\u0000b") == NULL)
        fail_msg("expected an escaped NUL in %s", json);
    jpt_state *back = tu_parse(json);
    const char *text = jpt_state_block_field(back, 0, JPT_FIELD_TEXT, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(text, data, 3);
    jpt_state_unref(back);
    jpt_free(json);
    jpt_state_unref(s);
}

/* ---- Round trip ---------------------------------------------------------------------- */

typedef struct input {
    const char *name;
    const char *data;
    size_t len;
} input;

#define INPUT(name, text) {name, text, sizeof(text) - 1}

/* Every supported format: RFD 058 envelopes with every block type, errors,
 * stateful statuses, MCP extras, RFD 009 ToolState, legacy Outcome, raw. */
static const input round_trip_inputs[] = {
    INPUT("rfd058 text", "{\"content\":[{\"type\":\"text\",\"text\":\"Check succeeded.\"}]}"),
    INPUT("rfd058 text resource",
          "{\"content\":[{\"type\":\"resource\",\"resource\":{\"uri\":"
          "\"file:///project/src/main.rs\",\"mimeType\":\"text/rust\","
          "\"text\":\"fn main() {}\"}}]}"),
    INPUT("rfd058 blob resource",
          "{\"content\":[{\"type\":\"resource\",\"resource\":{\"uri\":"
          "\"file:///project/logo.png\",\"mimeType\":\"image/png\","
          "\"blob\":\"iVBORw0KGgo=\"}}]}"),
    INPUT("rfd058 formatted resource",
          "{\"content\":[{\"type\":\"resource\",\"resource\":{\"uri\":"
          "\"file:///project/src/main.rs\",\"mimeType\":\"text/rust\",\"text\":"
          "\"fn main() {\\n    println!(\\\"Hello world!\\\");\\n}\"},\"formatted\":"
          "\"```rs (src/main.rs, lines 1-3)\\nfn main() {\\n    println!(\\\"Hello "
          "world!\\\");\\n}\\n```\"}]}"),
    INPUT("rfd058 resources and question",
          "{\"content\":[{\"type\":\"resource\",\"resource\":{\"uri\":"
          "\"file:///project/src/main.rs\",\"mimeType\":\"text/rust\",\"text\":"
          "\"fn main() {}\"}},{\"type\":\"resource\",\"resource\":{\"uri\":"
          "\"file:///project/src/lib.rs\",\"mimeType\":\"text/rust\",\"text\":"
          "\"pub mod config;\"}},{\"type\":\"question\",\"question\":{\"id\":\"confirm\","
          "\"text\":\"Apply these changes to a third file?\",\"schema\":{\"type\":"
          "\"boolean\"},\"default\":true}}]}"),
    INPUT("rfd058 select question",
          "{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"target_branch\","
          "\"text\":\"Which branch should I merge into?\",\"schema\":{\"type\":\"string\","
          "\"enum\":[\"main\",\"develop\",\"staging\"]},\"default\":\"main\"}}]}"),
    INPUT("rfd058 error",
          "{\"content\":[{\"type\":\"text\",\"text\":\"File not found: foo.rs\"}],"
          "\"isError\":true}"),
    INPUT("rfd058 error with meta",
          "{\"content\":[{\"type\":\"text\",\"text\":\"File not found: foo.rs\"}],"
          "\"isError\":true,\"_meta\":{\"computer.jp/error\":{\"transient\":true,"
          "\"trace\":[\"io error: No such file or directory (os error 2)\"]}}}"),
    INPUT("rfd058 running",
          "{\"content\":[{\"type\":\"text\",\"text\":\"Stage this hunk? [y/n/...]\"}],"
          "\"_meta\":{\"computer.jp/status\":\"running\"}}"),
    INPUT("rfd058 waiting",
          "{\"content\":[{\"type\":\"text\",\"text\":\"Diff for hunk 3/5:\"},"
          "{\"type\":\"text\",\"text\":\"@@ -10,3 +10,4 @@\\n+    new_line();\"},"
          "{\"type\":\"question\",\"question\":{\"id\":\"hunk_3\",\"text\":"
          "\"Stage this hunk?\",\"schema\":{\"type\":\"string\",\"enum\":"
          "[\"y\",\"n\",\"s\",\"q\"]},\"default\":\"y\"}}],"
          "\"_meta\":{\"computer.jp/status\":\"waiting\"}}"),
    INPUT("image with annotations",
          "{\"content\":[{\"type\":\"image\",\"data\":\"iVBORw0KGgo=\",\"mimeType\":"
          "\"image/png\",\"annotations\":{\"audience\":[\"user\"],\"priority\":0.5}}]}"),
    INPUT("audio", "{\"content\":[{\"type\":\"audio\",\"data\":\"UklGRg==\","
                   "\"mimeType\":\"audio/wav\"}]}"),
    INPUT("resource_link with every field",
          "{\"content\":[{\"type\":\"resource_link\",\"uri\":\"file:///project/src/main.rs\","
          "\"name\":\"main.rs\",\"title\":\"Entry\",\"description\":\"The binary\","
          "\"mimeType\":\"text/rust\",\"annotations\":{\"priority\":1}}]}"),
    INPUT("resource with extensions and inner annotations",
          "{\"content\":[{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///a.txt\","
          "\"mimeType\":\"text/plain\",\"text\":\"a\",\"name\":\"a.txt\",\"title\":\"A\","
          "\"description\":\"About A\",\"annotations\":{\"lastModified\":"
          "\"2025-01-12T15:00:58Z\"}}}]}"),
    INPUT("blob resource with formatted and annotations",
          "{\"content\":[{\"type\":\"resource\",\"resource\":{\"uri\":\"https://example.com/x\","
          "\"blob\":\"AAEC\"},\"annotations\":{\"audience\":[\"assistant\"]},"
          "\"formatted\":\"x (3 bytes)\"}]}"),
    INPUT("structuredContent object",
          "{\"content\":[{\"type\":\"text\",\"text\":\"22 degrees\"}],\"structuredContent\":"
          "{\"temperature\":22,\"tags\":[\"a\",null,true]}}"),
    INPUT("structuredContent array without blocks",
          "{\"content\":[],\"structuredContent\":[1,\"two\",null]}"),
    INPUT("several questions with context between",
          "{\"content\":[{\"type\":\"text\",\"text\":\"Two questions:\"},"
          "{\"type\":\"question\",\"question\":{\"id\":\"a\",\"text\":\"A?\",\"schema\":"
          "{\"type\":\"boolean\"}}},{\"type\":\"text\",\"text\":\"Then:\"},"
          "{\"type\":\"question\",\"question\":{\"id\":\"b\",\"text\":\"B?\",\"schema\":"
          "{\"type\":\"string\"},\"default\":\"x\"}}]}"),
    INPUT("question not last",
          "{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"go\",\"text\":"
          "\"Go?\"}},{\"type\":\"text\",\"text\":\"after the question\"}]}"),
    INPUT("question without schema",
          "{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"go\",\"text\":\"Go?\"}}]}"),
    INPUT("question with rich schema and null default",
          "{\"content\":[{\"type\":\"text\",\"text\":\"Pick files\"},{\"type\":\"question\","
          "\"question\":{\"id\":\"files\",\"text\":\"Which?\",\"schema\":{\"type\":\"array\","
          "\"items\":{\"type\":\"string\"},\"minItems\":1},\"default\":null}}]}"),
    INPUT("question with boolean schema",
          "{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"any\",\"text\":"
          "\"Anything?\",\"schema\":true}}]}"),
    INPUT("empty text block", "{\"content\":[{\"type\":\"text\",\"text\":\"\"}]}"),
    INPUT("empty content string", "{\"content\":\"\"}"),
    INPUT("several text blocks",
          "{\"content\":[{\"type\":\"text\",\"text\":\"one\"},{\"type\":\"text\",\"text\":\"\"},"
          "{\"type\":\"text\",\"text\":\"three\"}]}"),
    INPUT("empty content array", "{\"content\":[]}"),
    INPUT("error with several blocks and trace",
          "{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"resource\","
          "\"resource\":{\"uri\":\"file:///log.txt\",\"text\":\"log\"}},"
          "{\"type\":\"text\",\"text\":\"b\"}],\"isError\":true,\"_meta\":"
          "{\"computer.jp/error\":{\"transient\":false,\"trace\":[\"x\",\"y\"]}}}"),
    INPUT("error with two text blocks",
          "{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}],"
          "\"isError\":true}"),
    INPUT("error without content", "{\"content\":[],\"isError\":true}"),
    INPUT("error with a question",
          "{\"content\":[{\"type\":\"text\",\"text\":\"failed\"},{\"type\":\"question\","
          "\"question\":{\"id\":\"retry\",\"text\":\"Retry?\"}}],\"isError\":true}"),
    INPUT("error with structuredContent",
          "{\"content\":[{\"type\":\"text\",\"text\":\"not found\"}],\"isError\":true,"
          "\"structuredContent\":{\"code\":404}}"),
    INPUT("stopped status with question",
          "{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"go\",\"text\":\"Go?\"}}],"
          "\"_meta\":{\"computer.jp/status\":\"stopped\"}}"),
    INPUT("waiting status without question",
          "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],"
          "\"_meta\":{\"computer.jp/status\":\"waiting\"}}"),
    INPUT("running status with question",
          "{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"go\",\"text\":\"Go?\"}}],"
          "\"_meta\":{\"computer.jp/status\":\"running\"}}"),
    INPUT("tool state running without content", "{\"type\":\"running\"}"),
    INPUT("tool state running", "{\"type\":\"running\",\"content\":\"$ \"}"),
    INPUT("tool state spawned", "{\"type\":\"spawned\",\"content\":\"Welcome\"}"),
    INPUT("tool state running with block array",
          "{\"type\":\"running\",\"content\":[{\"type\":\"text\",\"text\":\"Reading\"},"
          "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///a.md\",\"text\":\"# A\"}}]}"),
    INPUT("tool state waiting",
          "{\"type\":\"waiting\",\"content\":\"Diff:\",\"question\":{\"id\":\"hunk_3\","
          "\"text\":\"Stage?\",\"answer_type\":{\"Select\":{\"options\":[\"y\",\"n\"]}},"
          "\"default\":\"y\"}}"),
    INPUT("tool state waiting without content",
          "{\"type\":\"waiting\",\"question\":{\"id\":\"q\",\"text\":\"Name?\","
          "\"answer_type\":\"Text\"}}"),
    INPUT("tool state stopped ok", "{\"type\":\"stopped\",\"result\":{\"Ok\":\"done\"}}"),
    INPUT("tool state stopped ok with blocks",
          "{\"type\":\"stopped\",\"result\":{\"Ok\":[{\"type\":\"text\",\"text\":\"a\"},"
          "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///a\",\"text\":\"a\"}}]}}"),
    INPUT("tool state stopped err",
          "{\"type\":\"stopped\",\"result\":{\"Err\":{\"message\":\"network down\","
          "\"trace\":[\"fetch failed\",\"refused\"],\"transient\":true}}}"),
    INPUT("tool state from outcome error",
          "{\"type\":\"stopped\",\"content\":\"\",\"error\":{\"message\":\"boom\","
          "\"trace\":[\"inner\"],\"transient\":false}}"),
    INPUT("tool state from outcome error with content",
          "{\"type\":\"stopped\",\"content\":\"partial\",\"error\":{\"message\":\"boom\","
          "\"trace\":[],\"transient\":false}}"),
    INPUT("legacy success", "{\"type\":\"success\",\"content\":\"All good\"}"),
    INPUT("legacy error",
          "{\"type\":\"error\",\"message\":\"rate limited\",\"trace\":[\"HTTP 429\"],"
          "\"transient\":true}"),
    INPUT("legacy needs_input boolean",
          "{\"type\":\"needs_input\",\"question\":{\"id\":\"confirm\",\"text\":\"Proceed?\","
          "\"answer_type\":\"Boolean\",\"default\":false}}"),
    INPUT("legacy needs_input text",
          "{\"type\":\"needs_input\",\"question\":{\"id\":\"name\",\"text\":\"Name?\","
          "\"answer_type\":\"Text\",\"default\":\"x\"}}"),
    INPUT("legacy needs_input select",
          "{\"type\":\"needs_input\",\"question\":{\"id\":\"b\",\"text\":\"Branch?\","
          "\"answer_type\":{\"Select\":{\"options\":[\"main\",\"dev\"]}}}}"),
    INPUT("legacy needs_input select with non-string options",
          "{\"type\":\"needs_input\",\"question\":{\"id\":\"n\",\"text\":\"How many?\","
          "\"answer_type\":{\"Select\":{\"options\":[1,2,3]}}}}"),
    INPUT("legacy needs_input pre_amble",
          "{\"type\":\"needs_input\",\"question\":{\"id\":\"overwrite\",\"text\":"
          "\"Overwrite?\",\"pre_amble\":\"src/main.rs exists.\",\"answer_type\":\"Boolean\"}}"),
    INPUT("content string", "{\"content\":\"hello\"}"),
    INPUT("non-ASCII text",
          "{\"content\":[{\"type\":\"text\",\"text\":\"na\xc3\xafve \xe2\x80\x94 "
          "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\"}]}"),
    INPUT("escaped NUL in text",
          "{\"content\":[{\"type\":\"text\",\"text\":\"a\\u0000b\"}]}"),
    INPUT("escaped NUL in a question's schema and default",
          "{\"content\":[{\"type\":\"text\",\"text\":\"Pick one\"},{\"type\":\"question\","
          "\"question\":{\"id\":\"q\",\"text\":\"Which?\",\"schema\":{\"type\":\"string\","
          "\"enum\":[\"a\\u0000b\",\"c\"]},\"default\":\"a\\u0000b\"}}]}"),
    INPUT("escaped NUL in a legacy Select",
          "{\"type\":\"needs_input\",\"question\":{\"id\":\"s\",\"text\":\"Which?\","
          "\"answer_type\":{\"Select\":{\"options\":[\"\\u0000\",\"x\"]}},"
          "\"default\":\"\\u0000\"}}"),
    INPUT("escaped NUL in annotations",
          "{\"content\":[{\"type\":\"resource_link\",\"uri\":\"file:///a\","
          "\"annotations\":{\"note\":\"x\\u0000y\"}},{\"type\":\"resource\",\"resource\":"
          "{\"uri\":\"file:///b\",\"text\":\"b\",\"annotations\":{\"k\":[1,\"\\u0000\"]}}}]}"),
    INPUT("escaped NUL in structuredContent",
          "{\"content\":[{\"type\":\"text\",\"text\":\"t\"}],"
          "\"structuredContent\":{\"s\":\"\\u0000\",\"k\":[\"\\u0000\"]}}"),
    INPUT("tool state stopped with a question",
          "{\"type\":\"stopped\",\"result\":{\"Ok\":[{\"type\":\"question\","
          "\"question\":{\"id\":\"go\",\"text\":\"Go?\"}}]}}"),
    INPUT("tool state waiting with two questions",
          "{\"type\":\"waiting\",\"content\":[{\"type\":\"question\",\"question\":"
          "{\"id\":\"a\",\"text\":\"A?\"}},{\"type\":\"question\",\"question\":"
          "{\"id\":\"b\",\"text\":\"B?\"}}]}"),
    INPUT("legacy needs_input without pre_amble",
          "{\"type\":\"needs_input\",\"content\":\"ctx\",\"question\":{\"id\":\"q\","
          "\"text\":\"Q?\"}}"),
    INPUT("malformed block skipped",
          "{\"content\":[{\"type\":\"bogus\"},{\"type\":\"text\",\"text\":\"kept\"}]}"),
    INPUT("raw text", "src/main.rs\nsrc/lib.rs\n"),
    INPUT("raw empty", ""),
    INPUT("raw with NUL", "a\0b\0"),
    INPUT("raw JSON array", "[1,2,3]"),
    INPUT("raw object without content", "{\"name\":\"jptool\"}"),
    INPUT("raw invalid JSON", "{\"content\":["),
};

/* Inputs holding invalid UTF-8, which JSON cannot carry as is. */
static const input invalid_utf8_inputs[] = {
    INPUT("stray bytes", "ok \xff\xfe bad"),
    INPUT("lead byte without continuation", "\xc3\x28"),
    INPUT("truncated sequence", "tail \xe2\x82"),
    INPUT("overlong encoding", "\xc0\xaf"),
    INPUT("encoded surrogate", "\xed\xa0\x80"),
    INPUT("envelope holding invalid UTF-8",
          "{\"content\":[{\"type\":\"text\",\"text\":\"a\xff\"}]}"),
    INPUT("invalid UTF-8 and NUL", "a\0\xff"),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The case being checked, for report_failed_case() when an assertion fails
 * mid-loop. */
static const input *current_input;
static int current_form;
static const char *current_json;

static int report_failed_case(void **state)
{
    (void)state;
    if (current_input != NULL)
        print_error("failed for input '%s' in form %d; JSON: %s\n", current_input->name,
                    current_form, current_json != NULL ? current_json : "(none)");
    current_input = NULL;
    current_json = NULL;
    return 0;
}

/* parse(to_json(parse(x))) equals parse(x). */
static void check_round_trip(const input *in, int form, unsigned flags)
{
    jpt_state *first = parse_bytes(in->data, in->len);
    char *json = NULL;

    current_input = in;
    current_form = form;
    current_json = NULL;
    if (form == JPT_JSON_OUTCOME && jpt_state_kind(first) == JPT_STATE_RUNNING) {
        jpt_state_unref(first);
        return;
    }
    assert_int_equal(jpt_state_to_json(first, form, flags, &json), JPT_OK);
    current_json = json;
    jpt_state *second = tu_parse(json);
    tu_assert_states_equal(first, second);
    jpt_state_unref(second);
    jpt_free(json);
    jpt_state_unref(first);
    current_input = NULL;
    current_json = NULL;
}

static void round_trip_all(int form, unsigned flags)
{
    for (size_t i = 0; i < COUNT(round_trip_inputs); i++)
        check_round_trip(&round_trip_inputs[i], form, flags);
}

static void round_trip_through_envelope_gives_an_equal_state(void **state)
{
    (void)state;
    round_trip_all(JPT_JSON_ENVELOPE, 0);
}

static void round_trip_through_tool_state_gives_an_equal_state(void **state)
{
    (void)state;
    round_trip_all(JPT_JSON_TOOL_STATE, 0);
}

static void round_trip_through_outcome_gives_an_equal_state(void **state)
{
    (void)state;
    round_trip_all(JPT_JSON_OUTCOME, 0);
}

static void round_trip_through_pretty_output_gives_an_equal_state(void **state)
{
    (void)state;
    round_trip_all(JPT_JSON_ENVELOPE, JPT_JSON_PRETTY);
    round_trip_all(JPT_JSON_TOOL_STATE, JPT_JSON_PRETTY);
    round_trip_all(JPT_JSON_OUTCOME, JPT_JSON_PRETTY);
}

/* The kind a reader of RFD 058 alone takes from an envelope: its
 * `computer.jp/status`, and stopped when it is absent. */
static int rfd058_kind(const char *envelope)
{
    json_t *root = json_loads(envelope, JSON_ALLOW_NUL, NULL);

    assert_non_null(root);
    const char *status =
        json_string_value(json_object_get(json_object_get(root, "_meta"), "computer.jp/status"));
    int kind = status == NULL                   ? JPT_STATE_STOPPED
               : strcmp(status, "running") == 0 ? JPT_STATE_RUNNING
               : strcmp(status, "waiting") == 0 ? JPT_STATE_WAITING
               : strcmp(status, "stopped") == 0 ? JPT_STATE_STOPPED
                                                : 0;
    json_decref(root);
    return kind;
}

/* RFD 058 reads an absent status as stopped; the envelope of every state
 * says its kind to such a reader, not only to jptool's lenient parser. */
static void envelope_says_every_kind_as_rfd058_reads_it(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(round_trip_inputs); i++) {
        const input *in = &round_trip_inputs[i];
        jpt_state *s = parse_bytes(in->data, in->len);
        char *json = tu_to_json(s, JPT_JSON_ENVELOPE);

        current_input = in;
        current_form = JPT_JSON_ENVELOPE;
        current_json = json;
        assert_int_equal(rfd058_kind(json), jpt_state_kind(s));
        current_input = NULL;
        current_json = NULL;
        jpt_free(json);
        jpt_state_unref(s);
    }
}

/* NUL is valid UTF-8 and state.h keeps text "byte-exact, even when it ...
 * contains NUL bytes", so an error whose text holds one round-trips too. */
static void error_text_with_nul_round_trips_in_every_form(void **state)
{
    (void)state;
    static const input in = INPUT(
        "escaped NUL in error text",
        "{\"content\":[{\"type\":\"text\",\"text\":\"bad\\u0000byte\"}],\"isError\":true}");

    check_round_trip(&in, JPT_JSON_ENVELOPE, 0);
    check_round_trip(&in, JPT_JSON_TOOL_STATE, 0);
    check_round_trip(&in, JPT_JSON_OUTCOME, 0);
}

/* state.h promises equality "for valid UTF-8 text"; for other bytes the
 * first serialisation replaces them, after which the JSON must be stable. */
static void json_of_invalid_utf8_is_stable(void **state)
{
    (void)state;
    const int forms[] = {JPT_JSON_ENVELOPE, JPT_JSON_TOOL_STATE, JPT_JSON_OUTCOME};

    for (size_t i = 0; i < COUNT(invalid_utf8_inputs); i++) {
        for (size_t f = 0; f < COUNT(forms); f++) {
            jpt_state *first = parse_bytes(invalid_utf8_inputs[i].data,
                                           invalid_utf8_inputs[i].len);
            current_input = &invalid_utf8_inputs[i];
            current_form = forms[f];
            char *json = tu_to_json(first, forms[f]);
            current_json = json;
            jpt_state *second = tu_parse(json);
            char *again = tu_to_json(second, forms[f]);
            assert_string_equal(again, json);
            jpt_free(again);
            jpt_state_unref(second);
            jpt_free(json);
            jpt_state_unref(first);
            current_input = NULL;
            current_json = NULL;
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(envelope_of_text_state_is_content_array),
        cmocka_unit_test(tool_state_of_text_state_is_stopped_ok_string),
        cmocka_unit_test(outcome_of_text_state_is_success_string),
        cmocka_unit_test(envelope_of_error_carries_error_meta),
        cmocka_unit_test(envelope_of_plain_error_has_no_meta),
        cmocka_unit_test(tool_state_of_error_is_stopped_err),
        cmocka_unit_test(outcome_of_error_is_legacy_error),
        cmocka_unit_test(outcome_of_error_with_several_blocks_carries_content_array),
        cmocka_unit_test(envelope_of_running_state_names_status),
        cmocka_unit_test(tool_state_of_running_state_is_running_string),
        cmocka_unit_test(tool_state_of_running_state_without_content_has_no_content),
        cmocka_unit_test(outcome_of_running_state_is_invalid),
        cmocka_unit_test(envelope_of_waiting_state_names_status),
        cmocka_unit_test(envelope_of_question_without_status_names_waiting),
        cmocka_unit_test(tool_state_of_waiting_state_has_content_and_legacy_question),
        cmocka_unit_test(outcome_of_waiting_state_has_content_and_legacy_question),
        cmocka_unit_test(tool_state_of_text_then_question_uses_content_string),
        cmocka_unit_test(outcome_of_text_then_question_uses_pre_amble),
        cmocka_unit_test(tool_state_of_rich_schema_question_keeps_schema),
        cmocka_unit_test(envelope_of_stopped_state_with_question_names_status),
        cmocka_unit_test(envelope_of_waiting_state_without_question_names_status),
        cmocka_unit_test(envelope_of_resource_state_keeps_resource_and_structured_content),
        cmocka_unit_test(tool_state_of_resource_state_writes_ok_as_block_array),
        cmocka_unit_test(outcome_of_resource_state_writes_content_as_block_array),
        cmocka_unit_test(empty_stopped_state_in_every_form),
        cmocka_unit_test(empty_text_block_is_written_as_block_array),
        cmocka_unit_test(every_block_type_is_written_in_mcp_form),
        cmocka_unit_test(pretty_flag_indents_with_two_spaces),
        cmocka_unit_test(compact_output_has_no_whitespace_between_tokens),
        cmocka_unit_test(to_json_rejects_null_state),
        cmocka_unit_test(to_json_rejects_null_out),
        cmocka_unit_test(to_json_rejects_unknown_form),
        cmocka_unit_test(to_json_rejects_unknown_flags),
        cmocka_unit_test(invalid_utf8_is_replaced_in_json_but_kept_in_state),
        cmocka_unit_test(nul_bytes_are_escaped_and_read_back),
        cmocka_unit_test(nul_in_json_fields_is_written_in_every_form),
        cmocka_unit_test_teardown(round_trip_through_envelope_gives_an_equal_state,
                                  report_failed_case),
        cmocka_unit_test_teardown(round_trip_through_tool_state_gives_an_equal_state,
                                  report_failed_case),
        cmocka_unit_test_teardown(round_trip_through_outcome_gives_an_equal_state,
                                  report_failed_case),
        cmocka_unit_test_teardown(round_trip_through_pretty_output_gives_an_equal_state,
                                  report_failed_case),
        cmocka_unit_test_teardown(error_text_with_nul_round_trips_in_every_form,
                                  report_failed_case),
        cmocka_unit_test_teardown(json_of_invalid_utf8_is_stable, report_failed_case),
        cmocka_unit_test_teardown(envelope_says_every_kind_as_rfd058_reads_it,
                                  report_failed_case),
    };
    return TU_RUN(tests);
}
