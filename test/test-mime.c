/* jpt_mime_fence_lang(): the code fence language for a resource's mime type
 * (state.h; RFD 058 "JP-controlled resource formatting"; issue 2 §3: "a
 * table of at least 40 common types"). */
#include <string.h>

#include "test-util.h"

static void assert_lang(const char *mime, const char *expected)
{
    const char *lang = jpt_mime_fence_lang(mime);
    if (lang == NULL || strcmp(lang, expected) != 0)
        fail_msg("'%s': expected '%s', got '%s'", mime, expected, lang ? lang : "NULL");
}

static void assert_no_lang(const char *mime)
{
    const char *lang = jpt_mime_fence_lang(mime);
    if (lang != NULL)
        fail_msg("'%s': expected no language, got '%s'", mime, lang);
}

/* The three examples state.h and RFD 058 name. */
static void rust_python_and_json_map_as_documented(void **state)
{
    (void)state;
    assert_lang("text/rust", "rs");
    assert_lang("text/x-python", "python");
    assert_lang("application/json", "json");
}

/* Issue 2 §3: at least 40 common types. The languages are the names
 * Markdown highlighters (linguist, highlight.js) recognise. */
static void common_types_map_to_their_languages(void **state)
{
    (void)state;
    static const struct {
        const char *mime, *lang;
    } cases[] = {
        {"text/x-rust", "rs"},
        {"text/python", "python"},
        {"application/x-python", "python"},
        {"application/ld+json", "json"},
        {"application/x-ndjson", "json"},
        {"text/javascript", "javascript"},
        {"application/javascript", "javascript"},
        {"application/x-javascript", "javascript"},
        {"text/typescript", "typescript"},
        {"application/typescript", "typescript"},
        {"text/x-typescript", "typescript"},
        {"text/jsx", "jsx"},
        {"text/tsx", "tsx"},
        {"text/html", "html"},
        {"text/css", "css"},
        {"text/xml", "xml"},
        {"application/xml", "xml"},
        {"text/markdown", "markdown"},
        {"text/x-markdown", "markdown"},
        {"text/csv", "csv"},
        {"text/plain", "text"},
        {"application/yaml", "yaml"},
        {"application/x-yaml", "yaml"},
        {"text/yaml", "yaml"},
        {"text/x-yaml", "yaml"},
        {"application/toml", "toml"},
        {"text/x-toml", "toml"},
        {"text/x-c", "c"},
        {"text/x-csrc", "c"},
        {"text/x-chdr", "c"},
        {"text/x-c++", "cpp"},
        {"text/x-c++src", "cpp"},
        {"text/x-c++hdr", "cpp"},
        {"text/x-csharp", "csharp"},
        {"text/x-go", "go"},
        {"text/x-java", "java"},
        {"text/x-java-source", "java"},
        {"text/x-kotlin", "kotlin"},
        {"text/x-scala", "scala"},
        {"text/x-swift", "swift"},
        {"text/x-ruby", "ruby"},
        {"application/x-ruby", "ruby"},
        {"text/x-php", "php"},
        {"application/x-httpd-php", "php"},
        {"text/x-perl", "perl"},
        {"text/x-lua", "lua"},
        {"text/x-haskell", "haskell"},
        {"text/x-ocaml", "ocaml"},
        {"text/x-erlang", "erlang"},
        {"text/x-elixir", "elixir"},
        {"text/x-clojure", "clojure"},
        {"text/x-dart", "dart"},
        {"text/x-r", "r"},
        {"text/x-zig", "zig"},
        {"text/x-nix", "nix"},
        {"text/x-sh", "bash"},
        {"text/x-shellscript", "bash"},
        {"application/x-sh", "bash"},
        {"application/sql", "sql"},
        {"text/x-sql", "sql"},
        {"application/graphql", "graphql"},
        {"text/x-diff", "diff"},
        {"text/x-patch", "diff"},
        {"text/x-dockerfile", "dockerfile"},
        {"text/x-makefile", "makefile"},
        {"text/x-cmake", "cmake"},
        {"text/x-ini", "ini"},
        {"text/x-tex", "latex"},
        {"application/x-tex", "latex"},
        {"text/x-protobuf", "protobuf"},
        {"text/x-vue", "vue"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_lang(cases[i].mime, cases[i].lang);
}

/* state.h: "parameters ("; charset=…") and case are ignored". */
static void parameters_are_ignored(void **state)
{
    (void)state;
    assert_lang("text/x-python; charset=utf-8", "python");
    assert_lang("application/json;charset=UTF-8", "json");
    assert_lang("text/rust ; charset=utf-8 ; format=flowed", "rs");
}

static void case_is_ignored(void **state)
{
    (void)state;
    assert_lang("Text/X-Python; charset=utf-8", "python");
    assert_lang("APPLICATION/JSON", "json");
    assert_lang("Text/Rust", "rs");
}

/* Detail the header leaves open: whitespace around the type is ignored. */
static void surrounding_whitespace_is_ignored(void **state)
{
    (void)state;
    assert_lang("  text/x-python", "python");
    assert_lang("\ttext/css\t", "css");
}

/* state.h: '"+json" / "+xml" suffixes map to json / xml' (RFC 6839). */
static void json_suffix_maps_to_json(void **state)
{
    (void)state;
    assert_lang("application/vnd.api+json", "json");
    assert_lang("application/problem+json; charset=utf-8", "json");
    assert_lang("application/geo+JSON", "json");
}

static void xml_suffix_maps_to_xml(void **state)
{
    (void)state;
    assert_lang("image/svg+xml", "xml");
    assert_lang("application/atom+xml", "xml");
    assert_lang("Application/RSS+XML;charset=utf-8", "xml");
}

/* Beyond the header: RFC 9512 registers "+yaml". */
static void yaml_suffix_maps_to_yaml(void **state)
{
    (void)state;
    assert_lang("application/openapi+yaml", "yaml");
}

static void unknown_types_have_no_language(void **state)
{
    (void)state;
    assert_no_lang("application/x-unknown-thing");
    assert_no_lang("image/png");
    assert_no_lang("application/octet-stream");
    assert_no_lang("audio/mpeg");
}

/* Only whole types match: no prefix or suffix matching of the table. */
static void near_misses_have_no_language(void **state)
{
    (void)state;
    assert_no_lang("text/rus");
    assert_no_lang("text/rustacean");
    assert_no_lang("xtext/rust");
    assert_no_lang("application/json5");
    assert_no_lang("application/jsonx");
    assert_no_lang("json");
    assert_no_lang("application/json+");
}

static void empty_or_degenerate_types_have_no_language(void **state)
{
    (void)state;
    assert_no_lang("");
    assert_no_lang(" ");
    assert_no_lang(";charset=utf-8");
}

static void null_has_no_language(void **state)
{
    (void)state;
    assert_null(jpt_mime_fence_lang(NULL));
}

/* state.h: "Static storage": the same text for the same language. */
static void result_is_static_storage(void **state)
{
    (void)state;
    const char *a = jpt_mime_fence_lang("text/x-python");
    const char *b = jpt_mime_fence_lang("TEXT/X-PYTHON; charset=ascii");
    assert_non_null(a);
    assert_ptr_equal(a, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rust_python_and_json_map_as_documented),
        cmocka_unit_test(common_types_map_to_their_languages),
        cmocka_unit_test(parameters_are_ignored),
        cmocka_unit_test(case_is_ignored),
        cmocka_unit_test(surrounding_whitespace_is_ignored),
        cmocka_unit_test(json_suffix_maps_to_json),
        cmocka_unit_test(xml_suffix_maps_to_xml),
        cmocka_unit_test(yaml_suffix_maps_to_yaml),
        cmocka_unit_test(unknown_types_have_no_language),
        cmocka_unit_test(near_misses_have_no_language),
        cmocka_unit_test(empty_or_degenerate_types_have_no_language),
        cmocka_unit_test(null_has_no_language),
        cmocka_unit_test(result_is_static_storage),
    };
    return TU_RUN(tests);
}
