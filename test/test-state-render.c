/* jpt_state_render(): the text the model reads, block by block, with exact
 * expected output (state.h "jpt_state_render"; issue 2 §3; RFD 058
 * "JP-controlled resource formatting"). */
#include <stdbool.h>
#include <string.h>

#include "test-util.h"

/* Renders `s` with `root`, compares, and drops the caller's reference. */
static void assert_state_renders(jpt_state *s, const char *root,
                                 const char *expected)
{
    char *text = tu_render(s, root);
    bool same = strcmp(text, expected) == 0;
    if (!same)
        print_error("rendered:\n%s\n---- expected:\n%s\n----\n", text, expected);
    jpt_free(text);
    jpt_state_unref(s);
    if (!same)
        fail();
}

static void assert_output_renders(const char *output, const char *root,
                                  const char *expected)
{
    assert_state_renders(tu_parse(output), root, expected);
}

static jpt_state *new_state(void)
{
    jpt_state *s = NULL;
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    return s;
}

static jpt_state *state_with_resource(const char *uri, const char *mime,
                                      const char *text)
{
    jpt_state *s = new_state();
    jpt_resource r = {.size = sizeof(r), .uri = uri, .mime_type = mime, .text = text};
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_OK);
    return s;
}

static jpt_state *state_with_question(const char *schema, const char *def)
{
    jpt_state *s = new_state();
    assert_int_equal(jpt_state_add_question(s, "q1", "Proceed?", schema, def), JPT_OK);
    return s;
}

/* ---- Text ----------------------------------------------------------------- */

/* RFD 058 `text`: "JP passes it through to the LLM as-is." */
static void text_block_is_rendered_as_is(void **state)
{
    (void)state;
    assert_output_renders(
        "{\"content\":[{\"type\":\"text\",\"text\":\"Check succeeded. *No* `warnings`.\"}]}",
        NULL, "Check succeeded. *No* `warnings`.");
}

static void raw_text_output_is_rendered_as_is(void **state)
{
    (void)state;
    assert_output_renders("total 0\n  drwxr-xr-x 2 root\n", "/project",
                          "total 0\n  drwxr-xr-x 2 root\n");
}

static void empty_state_renders_as_empty_string(void **state)
{
    (void)state;
    assert_state_renders(new_state(), NULL, "");
}

static void blocks_are_separated_by_one_blank_line(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"text\",\"text\":\"one\"},"
                          "{\"type\":\"text\",\"text\":\"two\"},"
                          "{\"type\":\"text\",\"text\":\"three\"}]}",
                          NULL, "one\n\ntwo\n\nthree");
}

/* The separator counts a newline the previous block already ended with. */
static void block_ending_in_newline_gets_one_more_newline(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"text\",\"text\":\"one\\n\"},"
                          "{\"type\":\"text\",\"text\":\"two\"}]}",
                          NULL, "one\n\ntwo");
}

/* RFD 058 "Content block ordering": JP should not reorder blocks. */
static void block_order_is_preserved(void **state)
{
    (void)state;
    jpt_state *s = new_state();
    jpt_resource r = {.size = sizeof(r), .uri = "file:///project/src/a.rs",
                      .mime_type = "text/rust", .text = "fn a() {}"};
    assert_int_equal(jpt_state_add_text(s, "Before"), JPT_OK);
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "After"), JPT_OK);
    assert_state_renders(s, "/project",
                         "Before\n\nsrc/a.rs:\n```rs\nfn a() {}\n```\n\nAfter");
}

/* ---- Text resources ------------------------------------------------------- */

/* RFD 058 "Tool-provided formatting": "When `formatted` is present, JP uses
 * it for LLM delivery" (verbatim), the RFD's own example. */
static void resource_formatted_is_used_verbatim(void **state)
{
    (void)state;
    assert_output_renders(
        "{\"content\":[{\"type\":\"resource\",\"resource\":{"
        "\"uri\":\"file:///project/src/main.rs\",\"mimeType\":\"text/rust\","
        "\"text\":\"fn main() {\\n    println!(\\\"Hello world!\\\");\\n}\"},"
        "\"formatted\":\"```rs (src/main.rs, lines 1-3)\\nfn main() {\\n    "
        "println!(\\\"Hello world!\\\");\\n}\\n```\"}]}",
        "/project",
        "```rs (src/main.rs, lines 1-3)\nfn main() {\n    println!(\"Hello world!\");\n}\n```");
}

static void text_resource_is_named_relative_to_root_and_fenced(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"resource\",\"resource\":{"
                          "\"uri\":\"file:///project/src/main.rs\","
                          "\"mimeType\":\"text/rust\",\"text\":\"fn main() {}\"}}]}",
                          "/project", "src/main.rs:\n```rs\nfn main() {}\n```");
}

static void text_resource_uri_is_canonicalized_before_naming(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/./src/../src//main.rs",
                                             "text/rust", "x"),
                         "/project", "src/main.rs:\n```rs\nx\n```");
}

static void text_resource_root_may_be_a_file_uri(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/src/main.rs",
                                             "text/rust", "x"),
                         "file:///project", "src/main.rs:\n```rs\nx\n```");
}

/* The closing fence must sit on its own line. */
static void text_resource_content_without_newline_gets_one(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/a.py", "text/x-python",
                                             "print(1)"),
                         "/project", "a.py:\n```python\nprint(1)\n```");
}

static void text_resource_content_ending_in_newline_gets_no_second(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/a.py", "text/x-python",
                                             "print(1)\n"),
                         "/project", "a.py:\n```python\nprint(1)\n```");
}

/* Detail the header leaves open: an empty text gets no blank line. */
static void text_resource_with_empty_text_has_empty_fence(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/empty.json",
                                             "application/json", ""),
                         "/project", "empty.json:\n```json\n```");
}

static void text_resource_fence_language_ignores_mime_parameters(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/a.py",
                                             "Text/X-Python; charset=utf-8", "x"),
                         "/project", "a.py:\n```python\nx\n```");
}

/* RFD 058: "If the mimeType is unknown or absent, JP falls back to a plain
 * code fence with no language tag." */
static void text_resource_with_unknown_mime_has_plain_fence(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/data.xyz",
                                             "application/x-unknown-thing", "data"),
                         "/project", "data.xyz:\n```\ndata\n```");
}

static void text_resource_without_mime_has_plain_fence(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"resource\",\"resource\":{"
                          "\"uri\":\"file:///project/notes\",\"text\":\"hello\"}}]}",
                          "/project", "notes:\n```\nhello\n```");
}

/* state.h: the fence "is longer than any backtick run inside"; CommonMark
 * fences are at least three backticks. */
static void fence_is_three_backticks_for_short_runs(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/a.md", NULL,
                                             "use `x` and ``y``"),
                         "/project", "a.md:\n```\nuse `x` and ``y``\n```");
}

static void fence_is_longer_than_triple_backticks_inside(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/README.md",
                                             "text/markdown",
                                             "Example:\n```sh\nls\n```\n"),
                         "/project",
                         "README.md:\n````markdown\nExample:\n```sh\nls\n```\n````");
}

static void fence_is_longer_than_quadruple_backticks_inside(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/README.md", NULL,
                                             "a ``` b\n````\nc"),
                         "/project", "README.md:\n`````\na ``` b\n````\nc\n`````");
}

static void fence_counts_a_backtick_run_at_the_very_end(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/x", NULL, "x```"),
                         "/project", "x:\n````\nx```\n````");
}

/* state.h: "File resources beneath it are named by their path relative to
 * it"; others keep their canonical URI. */
static void resource_outside_root_keeps_file_uri(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///etc/hosts", NULL, "127.0.0.1"),
                         "/project", "file:///etc/hosts:\n```\n127.0.0.1\n```");
}

static void resource_in_sibling_of_root_keeps_file_uri(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project-evil/x.rs", "text/rust", "x"),
                         "/project", "file:///project-evil/x.rs:\n```rs\nx\n```");
}

/* state.h jpt_render_options.root: "NULL: absolute URIs"; `opts` may be NULL. */
static void resource_with_null_options_is_named_by_absolute_uri(void **state)
{
    (void)state;
    jpt_state *s = state_with_resource("file:///project/./src/main.rs", "text/rust",
                                       "fn main() {}");
    char *out = NULL;
    assert_int_equal(jpt_state_render(s, NULL, &out), JPT_OK);
    assert_string_equal(out, "file:///project/src/main.rs:\n```rs\nfn main() {}\n```");
    jpt_free(out);
    jpt_state_unref(s);
}

static void resource_with_null_root_is_named_by_absolute_uri(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file:///project/src/main.rs",
                                             "text/rust", "x"),
                         NULL, "file:///project/src/main.rs:\n```rs\nx\n```");
}

static void web_resource_is_named_by_canonical_uri(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("HTTPS://Docs.Example.COM:443/a/./b.html",
                                             "text/html", "<p>hi</p>"),
                         "/project",
                         "https://docs.example.com/a/b.html:\n```html\n<p>hi</p>\n```");
}

/* Detail the header leaves open: a URI that cannot be canonicalised is
 * named as the tool gave it, rather than failing the render. */
static void resource_with_uncanonicalizable_uri_is_named_as_given(void **state)
{
    (void)state;
    assert_state_renders(state_with_resource("file://otherhost/x.rs", "text/rust", "x"),
                         "/project", "file://otherhost/x.rs:\n```rs\nx\n```");
}

/* ---- Binary content --------------------------------------------------------- */

/* Issue 2 §3: "a blob resource is one line with uri, mime type and size,
 * never base64". "aGVsbG8=" is "hello", 5 bytes. */
static void blob_resource_is_one_line_with_name_mime_and_size(void **state)
{
    (void)state;
    jpt_state *s = new_state();
    jpt_resource r = {.size = sizeof(r), .uri = "file:///project/logo.png",
                      .mime_type = "image/png", .blob = "aGVsbG8="};
    assert_int_equal(jpt_state_add_resource(s, &r), JPT_OK);
    char *out = tu_render(s, "/project");
    assert_string_equal(out, "logo.png: image/png, 5 bytes of binary data, not shown");
    assert_null(strstr(out, "aGVsbG8"));
    jpt_free(out);
    jpt_state_unref(s);
}

static void blob_resource_without_mime_omits_it(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"resource\",\"resource\":{"
                          "\"uri\":\"file:///data/blob.bin\",\"blob\":\"AAECAw==\"}}]}",
                          "/project", "file:///data/blob.bin: 4 bytes of binary data, not shown");
}

static void blob_resource_with_formatted_uses_formatted(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"resource\",\"resource\":{"
                          "\"uri\":\"file:///project/logo.png\",\"mimeType\":\"image/png\","
                          "\"blob\":\"aGVsbG8=\"},\"formatted\":\"[the logo]\"}]}",
                          "/project", "[the logo]");
}

static void image_block_is_one_line_without_data(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"image\",\"data\":\"aGVsbG8=\","
                          "\"mimeType\":\"image/png\"}]}",
                          NULL, "[image: image/png, 5 bytes of image data, not shown]");
}

static void audio_block_is_one_line_without_data(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"audio\",\"data\":\"AAECAwQFBgc=\","
                          "\"mimeType\":\"audio/wav\"}]}",
                          NULL, "[audio: audio/wav, 8 bytes of audio data, not shown]");
}

static void resource_link_names_uri_name_and_mime(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"resource_link\","
                          "\"uri\":\"file:///project/docs/README.md\",\"name\":\"README\","
                          "\"mimeType\":\"text/markdown\"}]}",
                          "/project", "[resource link: docs/README.md \"README\", text/markdown]");
}

static void resource_link_with_uri_only_names_uri(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"resource_link\","
                          "\"uri\":\"https://Example.com:443/x\"}]}",
                          "/project", "[resource link: https://example.com/x]");
}

/* ---- Questions ---------------------------------------------------------------- */

/* state.h: "a question with its id, text, expected answer and default";
 * RFD 058's boolean example. */
static void boolean_question_expects_true_or_false(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"question\",\"question\":{"
                          "\"id\":\"confirm\",\"text\":\"Apply these changes to a third file?\","
                          "\"schema\":{\"type\":\"boolean\"},\"default\":true}}]}",
                          NULL,
                          "Question [confirm]: Apply these changes to a third file?\n"
                          "Expected answer: true or false\n"
                          "Default: true");
}

/* RFD 058's select example. */
static void string_enum_question_lists_the_options(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"question\",\"question\":{"
                          "\"id\":\"target_branch\",\"text\":\"Which branch should I merge into?\","
                          "\"schema\":{\"type\":\"string\",\"enum\":[\"main\",\"develop\",\"staging\"]},"
                          "\"default\":\"main\"}}]}",
                          NULL,
                          "Question [target_branch]: Which branch should I merge into?\n"
                          "Expected answer: one of \"main\", \"develop\", \"staging\"\n"
                          "Default: \"main\"");
}

static void enum_question_without_type_lists_the_options(void **state)
{
    (void)state;
    assert_state_renders(state_with_question("{\"enum\":[1,2,3]}", NULL), NULL,
                         "Question [q1]: Proceed?\nExpected answer: one of 1, 2, 3");
}

static void string_question_expects_a_string(void **state)
{
    (void)state;
    assert_state_renders(state_with_question("{\"type\":\"string\"}", NULL), NULL,
                         "Question [q1]: Proceed?\nExpected answer: a string");
}

static void integer_question_expects_an_integer(void **state)
{
    (void)state;
    assert_state_renders(state_with_question("{\"type\":\"integer\"}", "3"), NULL,
                         "Question [q1]: Proceed?\nExpected answer: an integer\nDefault: 3");
}

static void number_question_expects_a_number(void **state)
{
    (void)state;
    assert_state_renders(state_with_question("{\"type\":\"number\"}", "2.5"), NULL,
                         "Question [q1]: Proceed?\nExpected answer: a number\nDefault: 2.5");
}

/* RFD 058: complex schemas still work on the LLM path, "JP sends the schema". */
static void complex_question_shows_the_schema(void **state)
{
    (void)state;
    assert_state_renders(
        state_with_question("{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}}",
                            "{\"n\": 1}"),
        NULL,
        "Question [q1]: Proceed?\n"
        "Expected answer: JSON matching the schema "
        "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}\n"
        "Default: {\"n\":1}");
}

static void string_with_constraints_shows_the_schema(void **state)
{
    (void)state;
    assert_state_renders(state_with_question("{\"type\":\"string\",\"maxLength\":5}", NULL),
                         NULL,
                         "Question [q1]: Proceed?\n"
                         "Expected answer: JSON matching the schema "
                         "{\"type\":\"string\",\"maxLength\":5}");
}

static void question_without_schema_expects_any_json_value(void **state)
{
    (void)state;
    assert_state_renders(state_with_question(NULL, NULL), NULL,
                         "Question [q1]: Proceed?\nExpected answer: any JSON value");
}

static void question_default_null_is_shown(void **state)
{
    (void)state;
    assert_state_renders(state_with_question(NULL, "null"), NULL,
                         "Question [q1]: Proceed?\nExpected answer: any JSON value\n"
                         "Default: null");
}

/* A NUL character in a question's schema or default is JSON like any
 * other: shown escaped, as the model would write it. */
static void question_with_nul_in_schema_and_default_renders(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"q\","
                          "\"text\":\"Pick?\",\"schema\":{\"type\":\"string\",\"enum\":"
                          "[\"a\\u0000b\",\"c\"]},\"default\":\"a\\u0000b\"}}]}",
                          NULL,
                          "Question [q]: Pick?\n"
                          "Expected answer: one of \"a\\u0000b\", \"c\"\n"
                          "Default: \"a\\u0000b\"");
    assert_state_renders(state_with_question("{\"type\":\"object\",\"properties\":"
                                             "{\"k\":{\"const\":\"\\u0000\"}}}",
                                             "{\"k\":\"\\u0000\"}"),
                         NULL,
                         "Question [q1]: Proceed?\n"
                         "Expected answer: JSON matching the schema "
                         "{\"type\":\"object\",\"properties\":{\"k\":"
                         "{\"const\":\"\\u0000\"}}}\n"
                         "Default: {\"k\":\"\\u0000\"}");
}

/* JP's legacy Question: pre_amble is a text block before the question. */
static void legacy_question_renders_pre_amble_then_question(void **state)
{
    (void)state;
    assert_output_renders("{\"type\":\"needs_input\",\"question\":{\"id\":\"ok\","
                          "\"text\":\"Continue?\",\"pre_amble\":\"3 files changed.\","
                          "\"answer_type\":\"Boolean\",\"default\":false}}",
                          NULL,
                          "3 files changed.\n\n"
                          "Question [ok]: Continue?\nExpected answer: true or false\n"
                          "Default: false");
}

/* ---- Errors ----------------------------------------------------------------------- */

/* state.h: 'An error state starts with "Error: "'; RFD 058's error example. */
static void error_state_starts_with_error(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"text\",\"text\":\"File not found: foo.rs\"}],"
                          "\"isError\":true}",
                          NULL, "Error: File not found: foo.rs");
}

/* RFD 058's error example with `_meta."computer.jp/error"`. */
static void transient_error_with_trace_ends_with_trace(void **state)
{
    (void)state;
    assert_output_renders(
        "{\"content\":[{\"type\":\"text\",\"text\":\"File not found: foo.rs\"}],"
        "\"isError\":true,\"_meta\":{\"computer.jp/error\":{\"transient\":true,"
        "\"trace\":[\"io error: No such file or directory (os error 2)\"]}}}",
        NULL,
        "Error (transient): File not found: foo.rs\n"
        "Trace:\n"
        "  - io error: No such file or directory (os error 2)");
}

static void transient_error_without_trace_has_no_trace_section(void **state)
{
    (void)state;
    jpt_state *s = new_state();
    assert_int_equal(jpt_state_set_error(s, "rate limited", 1), JPT_OK);
    assert_state_renders(s, NULL, "Error (transient): rate limited");
}

static void error_trace_lines_are_listed_in_order(void **state)
{
    (void)state;
    jpt_state *s = new_state();
    assert_int_equal(jpt_state_set_error(s, "build failed", 0), JPT_OK);
    assert_int_equal(jpt_state_add_error_trace(s, "cargo exited with 101"), JPT_OK);
    assert_int_equal(jpt_state_add_error_trace(s, "linker error"), JPT_OK);
    assert_state_renders(s, NULL,
                         "Error: build failed\nTrace:\n  - cargo exited with 101\n"
                         "  - linker error");
}

static void error_message_ending_in_newline_gets_no_blank_line_before_trace(void **state)
{
    (void)state;
    jpt_state *s = new_state();
    assert_int_equal(jpt_state_set_error(s, "failed\n", 0), JPT_OK);
    assert_int_equal(jpt_state_add_error_trace(s, "cause"), JPT_OK);
    assert_state_renders(s, NULL, "Error: failed\nTrace:\n  - cause");
}

static void error_with_several_text_blocks_renders_them_all(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"text\",\"text\":\"first\"},"
                          "{\"type\":\"text\",\"text\":\"second\"}],\"isError\":true}",
                          NULL, "Error: first\n\nsecond");
}

/* Detail the header leaves open: the library says "(no message)". */
static void error_without_blocks_says_no_message(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[],\"isError\":true}", NULL,
                          "Error: (no message)");
}

/* Detail the header leaves open: when the first block is not text, the
 * label stands on its own line ("Error:" without the trailing space). */
static void error_starting_with_a_resource_puts_label_on_its_own_line(void **state)
{
    (void)state;
    jpt_state *s = state_with_resource("file:///project/a.log", NULL, "boom");
    assert_int_equal(jpt_state_set_error(s, "", 0), JPT_OK);
    assert_state_renders(s, "/project", "Error:\na.log:\n```\nboom\n```");
}

/* RFD 009 / legacy errors carry `message`; the model must still read it. */
static void legacy_error_renders_its_message(void **state)
{
    (void)state;
    assert_output_renders("{\"type\":\"error\",\"message\":\"disk full\","
                          "\"trace\":[\"write failed\"],\"transient\":false}",
                          NULL, "Error: disk full\nTrace:\n  - write failed");
}

/* ---- Bytes that are not UTF-8 ------------------------------------------------------- */

/* state.h: "Invalid UTF-8 and NUL bytes become U+FFFD." */
static void invalid_utf8_in_raw_text_becomes_replacement_character(void **state)
{
    (void)state;
    jpt_state *s = NULL;
    assert_int_equal(jpt_state_parse("a\xff" "b\xc3", 4, 0, &s), JPT_OK);
    assert_state_renders(s, NULL, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
}

static void nul_byte_in_raw_text_becomes_replacement_character(void **state)
{
    (void)state;
    jpt_state *s = NULL;
    assert_int_equal(jpt_state_parse("a\0b", 3, 0, &s), JPT_OK);
    char *out = tu_render(s, NULL);
    assert_string_equal(out, "a\xEF\xBF\xBD" "b");
    jpt_free(out);
    jpt_state_unref(s);
}

static void nul_escape_in_text_block_becomes_replacement_character(void **state)
{
    (void)state;
    assert_output_renders("{\"content\":[{\"type\":\"text\",\"text\":\"x\\u0000y\"}]}",
                          NULL, "x\xEF\xBF\xBDy");
}

static void valid_multibyte_utf8_is_kept(void **state)
{
    (void)state;
    assert_output_renders("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80", NULL,
                          "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80");
}

/* Unicode §3.9 "maximal subpart": a truncated sequence is one U+FFFD. */
static void truncated_sequence_becomes_one_replacement_character(void **state)
{
    (void)state;
    jpt_state *s = NULL;
    assert_int_equal(jpt_state_parse("\xE2\x82x", 3, 0, &s), JPT_OK);
    assert_state_renders(s, NULL, "\xEF\xBF\xBDx");
}

/* ---- Arguments ------------------------------------------------------------------------ */

static void options_with_too_small_size_are_invalid(void **state)
{
    (void)state;
    jpt_state *s = new_state();
    jpt_render_options opts = {sizeof(opts) - 1, NULL};
    char *out = NULL;
    assert_int_equal(jpt_state_render(s, &opts, &out), JPT_ERR_INVALID);
    assert_null(out);
    opts.size = 0;
    assert_int_equal(jpt_state_render(s, &opts, &out), JPT_ERR_INVALID);
    jpt_state_unref(s);
}

static void null_out_is_invalid(void **state)
{
    (void)state;
    jpt_state *s = new_state();
    assert_int_equal(jpt_state_render(s, NULL, NULL), JPT_ERR_INVALID);
    jpt_state_unref(s);
}

static void null_state_is_invalid(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(jpt_state_render(NULL, NULL, &out), JPT_ERR_INVALID);
    assert_null(out);
}

/* state.h: "JPT_ERR_INVALID (… a root that is not absolute)", even when no
 * resource needs it. */
static void root_that_is_not_absolute_is_invalid(void **state)
{
    (void)state;
    const char *roots[] = {"project", "./project", "", "https://example.com/project",
                           "file://otherhost/project"};
    jpt_state *s = new_state();
    assert_int_equal(jpt_state_add_text(s, "hi"), JPT_OK);
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        jpt_render_options opts = {sizeof(opts), roots[i]};
        char *out = NULL;
        if (jpt_state_render(s, &opts, &out) != JPT_ERR_INVALID)
            fail_msg("root '%s' was accepted", roots[i]);
        assert_null(out);
    }
    jpt_state_unref(s);
}

/* A shared (immutable) state renders like any other. */
static void shared_state_renders(void **state)
{
    (void)state;
    jpt_state *s = new_state();
    assert_int_equal(jpt_state_add_text(s, "hi"), JPT_OK);
    jpt_state_ref(s);
    char *out = tu_render(s, NULL);
    assert_string_equal(out, "hi");
    jpt_free(out);
    jpt_state_unref(s);
    jpt_state_unref(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_block_is_rendered_as_is),
        cmocka_unit_test(raw_text_output_is_rendered_as_is),
        cmocka_unit_test(empty_state_renders_as_empty_string),
        cmocka_unit_test(blocks_are_separated_by_one_blank_line),
        cmocka_unit_test(block_ending_in_newline_gets_one_more_newline),
        cmocka_unit_test(block_order_is_preserved),
        cmocka_unit_test(resource_formatted_is_used_verbatim),
        cmocka_unit_test(text_resource_is_named_relative_to_root_and_fenced),
        cmocka_unit_test(text_resource_uri_is_canonicalized_before_naming),
        cmocka_unit_test(text_resource_root_may_be_a_file_uri),
        cmocka_unit_test(text_resource_content_without_newline_gets_one),
        cmocka_unit_test(text_resource_content_ending_in_newline_gets_no_second),
        cmocka_unit_test(text_resource_with_empty_text_has_empty_fence),
        cmocka_unit_test(text_resource_fence_language_ignores_mime_parameters),
        cmocka_unit_test(text_resource_with_unknown_mime_has_plain_fence),
        cmocka_unit_test(text_resource_without_mime_has_plain_fence),
        cmocka_unit_test(fence_is_three_backticks_for_short_runs),
        cmocka_unit_test(fence_is_longer_than_triple_backticks_inside),
        cmocka_unit_test(fence_is_longer_than_quadruple_backticks_inside),
        cmocka_unit_test(fence_counts_a_backtick_run_at_the_very_end),
        cmocka_unit_test(resource_outside_root_keeps_file_uri),
        cmocka_unit_test(resource_in_sibling_of_root_keeps_file_uri),
        cmocka_unit_test(resource_with_null_options_is_named_by_absolute_uri),
        cmocka_unit_test(resource_with_null_root_is_named_by_absolute_uri),
        cmocka_unit_test(web_resource_is_named_by_canonical_uri),
        cmocka_unit_test(resource_with_uncanonicalizable_uri_is_named_as_given),
        cmocka_unit_test(blob_resource_is_one_line_with_name_mime_and_size),
        cmocka_unit_test(blob_resource_without_mime_omits_it),
        cmocka_unit_test(blob_resource_with_formatted_uses_formatted),
        cmocka_unit_test(image_block_is_one_line_without_data),
        cmocka_unit_test(audio_block_is_one_line_without_data),
        cmocka_unit_test(resource_link_names_uri_name_and_mime),
        cmocka_unit_test(resource_link_with_uri_only_names_uri),
        cmocka_unit_test(boolean_question_expects_true_or_false),
        cmocka_unit_test(string_enum_question_lists_the_options),
        cmocka_unit_test(enum_question_without_type_lists_the_options),
        cmocka_unit_test(string_question_expects_a_string),
        cmocka_unit_test(integer_question_expects_an_integer),
        cmocka_unit_test(number_question_expects_a_number),
        cmocka_unit_test(complex_question_shows_the_schema),
        cmocka_unit_test(string_with_constraints_shows_the_schema),
        cmocka_unit_test(question_without_schema_expects_any_json_value),
        cmocka_unit_test(question_default_null_is_shown),
        cmocka_unit_test(question_with_nul_in_schema_and_default_renders),
        cmocka_unit_test(legacy_question_renders_pre_amble_then_question),
        cmocka_unit_test(error_state_starts_with_error),
        cmocka_unit_test(transient_error_with_trace_ends_with_trace),
        cmocka_unit_test(transient_error_without_trace_has_no_trace_section),
        cmocka_unit_test(error_trace_lines_are_listed_in_order),
        cmocka_unit_test(error_message_ending_in_newline_gets_no_blank_line_before_trace),
        cmocka_unit_test(error_with_several_text_blocks_renders_them_all),
        cmocka_unit_test(error_without_blocks_says_no_message),
        cmocka_unit_test(error_starting_with_a_resource_puts_label_on_its_own_line),
        cmocka_unit_test(legacy_error_renders_its_message),
        cmocka_unit_test(invalid_utf8_in_raw_text_becomes_replacement_character),
        cmocka_unit_test(nul_byte_in_raw_text_becomes_replacement_character),
        cmocka_unit_test(nul_escape_in_text_block_becomes_replacement_character),
        cmocka_unit_test(valid_multibyte_utf8_is_kept),
        cmocka_unit_test(truncated_sequence_becomes_one_replacement_character),
        cmocka_unit_test(options_with_too_small_size_are_invalid),
        cmocka_unit_test(null_out_is_invalid),
        cmocka_unit_test(null_state_is_invalid),
        cmocka_unit_test(root_that_is_not_absolute_is_invalid),
        cmocka_unit_test(shared_state_renders),
    };
    return TU_RUN(tests);
}
