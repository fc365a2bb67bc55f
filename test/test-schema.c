/* jpt_schema_check(): answers against the JSON Schema subset questions use
 * (state.h; RFD 058 "Question schema"; issue 2 §3), with the exact `why`
 * messages and their JSON Pointer paths (RFC 6901). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "test-util.h"

static void assert_matches(const char *schema, const char *value)
{
    char *why = NULL;
    int rc = jpt_schema_check(schema, value, &why);
    if (rc != JPT_OK)
        fail_msg("%s against %s: %s (%s)", value, schema, jpt_status_name(rc),
                 why ? why : "no reason");
    assert_null(why);
}

static void assert_mismatch(const char *schema, const char *value,
                            const char *expected_why)
{
    char *why = NULL;
    int rc = jpt_schema_check(schema, value, &why);
    if (rc != JPT_ERR_INVALID)
        fail_msg("%s against %s: expected JPT_ERR_INVALID, got %s", value, schema,
                 jpt_status_name(rc));
    assert_non_null(why);
    assert_string_equal(why, expected_why);
    jpt_free(why);
}

/* A mismatch whose message is not pinned (only that there is one). */
static void assert_rejects(const char *schema, const char *value)
{
    char *why = NULL;
    int rc = jpt_schema_check(schema, value, &why);
    if (rc != JPT_ERR_INVALID)
        fail_msg("%s against %s: expected JPT_ERR_INVALID, got %s", value, schema,
                 jpt_status_name(rc));
    assert_non_null(why);
    jpt_free(why);
}

static void assert_why_starts_with(const char *schema, const char *value,
                                   const char *prefix)
{
    char *why = NULL;
    assert_int_equal(jpt_schema_check(schema, value, &why), JPT_ERR_INVALID);
    assert_non_null(why);
    if (strncmp(why, prefix, strlen(prefix)) != 0)
        fail_msg("why '%s' does not start with '%s'", why, prefix);
    jpt_free(why);
}

/* ---- type ---------------------------------------------------------------------- */

static void type_string_matches_string_only(void **state)
{
    (void)state;
    assert_matches("{\"type\":\"string\"}", "\"x\"");
    assert_mismatch("{\"type\":\"string\"}", "1", "at the top level: expected string, got integer");
}

static void type_boolean_matches_true_and_false_only(void **state)
{
    (void)state;
    assert_matches("{\"type\":\"boolean\"}", "true");
    assert_matches("{\"type\":\"boolean\"}", "false");
    assert_mismatch("{\"type\":\"boolean\"}", "\"yes\"",
                    "at the top level: expected boolean, got string");
    assert_mismatch("{\"type\":\"boolean\"}", "0",
                    "at the top level: expected boolean, got integer");
}

static void type_null_matches_null_only(void **state)
{
    (void)state;
    assert_matches("{\"type\":\"null\"}", "null");
    assert_mismatch("{\"type\":\"null\"}", "false", "at the top level: expected null, got boolean");
}

static void type_object_matches_object_only(void **state)
{
    (void)state;
    assert_matches("{\"type\":\"object\"}", "{}");
    assert_mismatch("{\"type\":\"object\"}", "[]", "at the top level: expected object, got array");
}

static void type_array_matches_array_only(void **state)
{
    (void)state;
    assert_matches("{\"type\":\"array\"}", "[1,\"a\"]");
    assert_mismatch("{\"type\":\"array\"}", "{}", "at the top level: expected array, got object");
}

/* JSON Schema: an integer is a number with a zero fractional part, so 1.0
 * is an integer. */
static void type_integer_accepts_integral_numbers(void **state)
{
    (void)state;
    assert_matches("{\"type\":\"integer\"}", "42");
    assert_matches("{\"type\":\"integer\"}", "-7");
    assert_matches("{\"type\":\"integer\"}", "1.0");
    assert_mismatch("{\"type\":\"integer\"}", "1.5",
                    "at the top level: expected integer, got number");
    assert_mismatch("{\"type\":\"integer\"}", "\"1\"",
                    "at the top level: expected integer, got string");
}

static void type_number_accepts_integers_and_reals(void **state)
{
    (void)state;
    assert_matches("{\"type\":\"number\"}", "3");
    assert_matches("{\"type\":\"number\"}", "3.25");
    assert_mismatch("{\"type\":\"number\"}", "null",
                    "at the top level: expected number, got null");
}

static void type_array_of_types_matches_any_of_them(void **state)
{
    (void)state;
    assert_matches("{\"type\":[\"string\",\"null\"]}", "null");
    assert_matches("{\"type\":[\"string\",\"null\"]}", "\"x\"");
    assert_matches("{\"type\":[\"boolean\",\"integer\"]}", "2.0");
    assert_mismatch("{\"type\":[\"string\",\"null\"]}", "3",
                    "at the top level: expected one of the types [\"string\",\"null\"], "
                    "got integer");
}

/* ---- enum, const ------------------------------------------------------------------ */

static void enum_matches_listed_values_only(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"string\",\"enum\":[\"main\",\"develop\",\"staging\"]}";
    assert_matches(schema, "\"develop\"");
    assert_mismatch(schema, "\"master\"",
                    "at the top level: \"master\" is not one of [\"main\",\"develop\",\"staging\"]");
}

static void enum_compares_numbers_by_value(void **state)
{
    (void)state;
    assert_matches("{\"enum\":[1,2]}", "2.0");
    assert_matches("{\"enum\":[1.0]}", "1");
    assert_mismatch("{\"enum\":[1,2]}", "3", "at the top level: 3 is not one of [1,2]");
}

static void enum_compares_structures(void **state)
{
    (void)state;
    assert_matches("{\"enum\":[{\"a\":[1,2]},null]}", "{\"a\":[1,2]}");
    assert_matches("{\"enum\":[{\"a\":[1,2]},null]}", "null");
    assert_rejects("{\"enum\":[{\"a\":[1,2]}]}", "{\"a\":[2,1]}");
}

/* JSON Schema equality: 1 equals 1.0. */
static void const_one_equals_one_point_zero(void **state)
{
    (void)state;
    assert_matches("{\"const\":1}", "1.0");
    assert_matches("{\"const\":1.0}", "1");
    assert_matches("{\"const\":{\"n\":[1]}}", "{\"n\":[1.0]}");
}

static void const_rejects_other_values(void **state)
{
    (void)state;
    assert_mismatch("{\"const\":1}", "2", "at the top level: 2 is not the constant 1");
    assert_mismatch("{\"const\":\"a\"}", "\"A\"",
                    "at the top level: \"A\" is not the constant \"a\"");
    assert_mismatch("{\"const\":true}", "1", "at the top level: 1 is not the constant true");
}

static void const_null_matches_null(void **state)
{
    (void)state;
    assert_matches("{\"const\":null}", "null");
    assert_rejects("{\"const\":null}", "0");
}

/* ---- objects ------------------------------------------------------------------------ */

static void properties_check_their_members(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                         "\"age\":{\"type\":\"integer\"}}}";
    assert_matches(schema, "{\"name\":\"Ada\",\"age\":36}");
    assert_matches(schema, "{}");
    assert_mismatch(schema, "{\"name\":\"Ada\",\"age\":\"36\"}",
                    "at /age: expected integer, got string");
}

static void properties_ignore_non_objects(void **state)
{
    (void)state;
    assert_matches("{\"properties\":{\"a\":{\"type\":\"string\"}}}", "[1]");
}

static void required_members_must_be_present(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"object\",\"required\":[\"name\",\"age\"]}";
    assert_matches(schema, "{\"name\":\"Ada\",\"age\":36,\"extra\":1}");
    assert_mismatch(schema, "{\"name\":\"Ada\"}",
                    "at the top level: missing required property \"age\"");
}

static void required_is_reported_at_the_nested_object(void **state)
{
    (void)state;
    assert_mismatch("{\"properties\":{\"user\":{\"required\":[\"id\"]}}}",
                    "{\"user\":{\"name\":\"x\"}}", "at /user: missing required property \"id\"");
}

/* A member present with the value null is present. */
static void required_member_may_be_null(void **state)
{
    (void)state;
    assert_matches("{\"required\":[\"a\"]}", "{\"a\":null}");
}

static void additional_properties_false_rejects_unlisted_members(void **state)
{
    (void)state;
    const char *schema = "{\"properties\":{\"a\":{}},\"additionalProperties\":false}";
    assert_matches(schema, "{\"a\":1}");
    assert_mismatch(schema, "{\"a\":1,\"extra\":2}",
                    "at /extra: property \"extra\" is not allowed");
}

static void additional_properties_schema_checks_unlisted_members(void **state)
{
    (void)state;
    const char *schema = "{\"properties\":{\"a\":{\"type\":\"string\"}},"
                         "\"additionalProperties\":{\"type\":\"integer\"}}";
    assert_matches(schema, "{\"a\":\"x\",\"b\":1,\"c\":2}");
    assert_mismatch(schema, "{\"a\":\"x\",\"b\":\"y\"}", "at /b: expected integer, got string");
}

static void additional_properties_true_allows_anything(void **state)
{
    (void)state;
    assert_matches("{\"properties\":{},\"additionalProperties\":true}", "{\"x\":[1]}");
}

/* ---- arrays ---------------------------------------------------------------------------- */

static void items_schema_checks_every_item(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}";
    assert_matches(schema, "[]");
    assert_matches(schema, "[\"a\",\"b\"]");
    assert_mismatch(schema, "[\"a\",\"b\",3]", "at /2: expected string, got integer");
}

/* state.h's own example of a `why`. */
static void nested_item_mismatch_is_reported_with_its_pointer(void **state)
{
    (void)state;
    assert_mismatch("{\"type\":\"object\",\"properties\":{\"files\":{\"type\":\"array\","
                    "\"items\":{\"type\":\"string\"}}}}",
                    "{\"files\":[\"a.rs\",\"b.rs\",7]}", "at /files/2: expected string, got integer");
}

/* Draft 4-7 tuple form: one schema per position. */
static void items_tuple_checks_each_position(void **state)
{
    (void)state;
    const char *schema = "{\"items\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}";
    assert_matches(schema, "[\"a\",2]");
    assert_mismatch(schema, "[\"a\",\"b\"]", "at /1: expected integer, got string");
}

/* Detail the header leaves open: without additionalItems, items past the
 * tuple are free, as in drafts 4-7. */
static void items_tuple_allows_extra_items(void **state)
{
    (void)state;
    assert_matches("{\"items\":[{\"type\":\"string\"}]}", "[\"a\",1,null]");
    assert_matches("{\"items\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "[\"a\"]");
}

/* ---- numbers --------------------------------------------------------------------------- */

static void minimum_is_inclusive(void **state)
{
    (void)state;
    assert_matches("{\"minimum\":5}", "5");
    assert_matches("{\"minimum\":5}", "5.5");
    assert_mismatch("{\"minimum\":5}", "4", "at the top level: 4 is below 5 (minimum)");
}

static void maximum_is_inclusive(void **state)
{
    (void)state;
    assert_matches("{\"maximum\":10}", "10");
    assert_mismatch("{\"maximum\":10}", "10.5", "at the top level: 10.5 is above 10 (maximum)");
}

static void exclusive_minimum_excludes_the_bound(void **state)
{
    (void)state;
    assert_matches("{\"exclusiveMinimum\":0}", "0.001");
    assert_mismatch("{\"exclusiveMinimum\":0}", "0",
                    "at the top level: 0 is below 0 (exclusiveMinimum)");
}

static void exclusive_maximum_excludes_the_bound(void **state)
{
    (void)state;
    assert_matches("{\"exclusiveMaximum\":1}", "0.999");
    assert_mismatch("{\"exclusiveMaximum\":1}", "1",
                    "at the top level: 1 is above 1 (exclusiveMaximum)");
}

static void number_bounds_ignore_non_numbers(void **state)
{
    (void)state;
    assert_matches("{\"minimum\":5,\"maximum\":6}", "\"abc\"");
}

/* ---- strings ----------------------------------------------------------------------------- */

/* state.h: "minLength, maxLength (in characters)". "é€" is 2 characters
 * in 5 bytes. */
static void max_length_counts_characters_not_bytes(void **state)
{
    (void)state;
    assert_matches("{\"maxLength\":2}", "\"\xC3\xA9\xE2\x82\xAC\"");
    assert_mismatch("{\"maxLength\":1}", "\"\xC3\xA9\xE2\x82\xAC\"",
                    "at the top level: a string of 2 characters is longer than maxLength 1");
}

static void min_length_counts_characters_not_bytes(void **state)
{
    (void)state;
    assert_matches("{\"minLength\":2}", "\"\xC3\xA9\xE2\x82\xAC\"");
    assert_mismatch("{\"minLength\":3}", "\"\xC3\xA9\xE2\x82\xAC\"",
                    "at the top level: a string of 2 characters is shorter than minLength 3");
}

static void length_counts_escaped_characters(void **state)
{
    (void)state;
    assert_matches("{\"maxLength\":2}", "\"\\u00e9\\ud83d\\ude00\"");
    assert_rejects("{\"maxLength\":1}", "\"\\u00e9\\ud83d\\ude00\"");
}

static void length_bounds_ignore_non_strings(void **state)
{
    (void)state;
    assert_matches("{\"minLength\":3}", "12");
}

/* ---- anyOf, oneOf ------------------------------------------------------------------------- */

static void any_of_matches_when_one_alternative_does(void **state)
{
    (void)state;
    const char *schema = "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}";
    assert_matches(schema, "\"x\"");
    assert_matches(schema, "3");
}

static void any_of_matches_when_several_alternatives_do(void **state)
{
    (void)state;
    assert_matches("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", "3");
}

static void any_of_with_no_match_reports_the_first_reason(void **state)
{
    (void)state;
    assert_mismatch("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "true",
                    "at the top level: matches none of the 2 anyOf alternatives "
                    "(the first: at the top level: expected string, got boolean)");
}

static void one_of_matches_exactly_one(void **state)
{
    (void)state;
    assert_matches("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "3");
}

static void one_of_with_no_match_is_rejected(void **state)
{
    (void)state;
    assert_mismatch("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "null",
                    "at the top level: matches none of the 2 oneOf alternatives "
                    "(the first: at the top level: expected string, got null)");
}

static void one_of_with_two_matches_is_rejected(void **state)
{
    (void)state;
    assert_mismatch("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", "3",
                    "at the top level: matches 2 of the oneOf alternatives; "
                    "exactly one must match");
}

static void alternatives_report_at_the_nested_path(void **state)
{
    (void)state;
    assert_mismatch("{\"properties\":{\"v\":{\"oneOf\":[{\"minimum\":0},{\"maximum\":10}]}}}",
                    "{\"v\":5}",
                    "at /v: matches 2 of the oneOf alternatives; exactly one must match");
}

/* Nested alternatives: each level gives its first alternative's reason. */
static void nested_alternatives_give_the_first_reason_at_each_level(void **state)
{
    (void)state;
    assert_mismatch("{\"anyOf\":[{\"properties\":{\"a\":{\"anyOf\":[{\"type\":\"string\"},"
                    "{\"type\":\"null\"}]}}},{\"type\":\"integer\"}]}",
                    "{\"a\":1}",
                    "at the top level: matches none of the 2 anyOf alternatives (the first: "
                    "at /a: matches none of the 2 anyOf alternatives (the first: at /a: "
                    "expected string, got integer))");
    /* The inner anyOf matches by its second alternative: its first one's
     * reason is not the answer's fault and must not be reported. */
    assert_mismatch("{\"anyOf\":[{\"properties\":{\"a\":{\"anyOf\":[{\"type\":\"string\"},"
                    "{\"type\":\"integer\"}]},\"b\":{\"type\":\"string\"}}},{\"type\":\"array\"}]}",
                    "{\"a\":1,\"b\":2}",
                    "at the top level: matches none of the 2 anyOf alternatives (the first: "
                    "at /b: expected string, got integer)");
    assert_mismatch("{\"oneOf\":[{\"items\":{\"oneOf\":[{\"type\":\"integer\"},"
                    "{\"type\":\"number\"}]}},{\"type\":\"object\"}]}",
                    "[1.5,2]",
                    "at the top level: matches none of the 2 oneOf alternatives (the first: "
                    "at /1: matches 2 of the oneOf alternatives; exactly one must match)");
}

/* An anyOf of `failing` alternatives that `value` does not match, then
 * (when `with_match`) one that it does: a list of integers. The failing
 * ones differ, as a real schema's would: a constant, an array of strings,
 * an array too long. */
static char *many_alternatives(int failing, bool with_match)
{
    size_t cap = (size_t)failing * 64 + 128, n = 0;
    char *schema = malloc(cap);

    assert_non_null(schema);
    n += (size_t)snprintf(schema + n, cap - n, "{\"anyOf\":[");
    for (int i = 0; i < failing; i++)
        n += (size_t)snprintf(schema + n, cap - n,
                              i % 3 == 0   ? "{\"const\":%d},"
                              : i % 3 == 1 ? "{\"items\":{\"type\":\"string\"},\"$comment\":%d},"
                                           : "{\"maxItems\":%d},",
                              i % 3 == 2 ? i % 50 : i);
    snprintf(schema + n, cap - n, "%s]}",
             with_match ? "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}"
                        : "{\"type\":\"null\"}");
    return schema;
}

/* [0, 1, …, n - 1] as JSON text. */
static char *integer_list(int n)
{
    size_t cap = (size_t)n * 12 + 4, len = 1;
    char *list = malloc(cap);

    assert_non_null(list);
    list[0] = '[';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(list + len, cap - len, i > 0 ? ",%d" : "%d", i);
    snprintf(list + len, cap - len, "]");
    return list;
}

/* The allocations jpt_schema_check makes beyond reading its two texts
 * (which cost what jansson's own reading of them costs). */
static long check_allocations(const char *schema, const char *value, int expected_rc)
{
    char *why = NULL;

    tu_fail_at(0);
    json_t *s = json_loads(schema, JSON_DECODE_ANY, NULL);
    json_t *v = json_loads(value, JSON_DECODE_ANY, NULL);
    long reading = tu_allocations();
    assert_non_null(s);
    assert_non_null(v);
    json_decref(s);
    json_decref(v);

    tu_fail_at(0);
    assert_int_equal(jpt_schema_check(schema, value, &why), expected_rc);
    long checking = tu_allocations() - reading;
    jpt_free(why);
    return checking;
}

/* Issue 7: checking alternatives must not build a message for each one
 * that fails before one matches (a 2 000-way anyOf against a 10 000-item
 * answer took seconds). What the check allocates does not grow with the
 * number of failing alternatives, whether the answer matches or not. */
static void failing_alternatives_cost_no_allocations(void **state)
{
    (void)state;
    char *value = integer_list(1000);
    char *few = many_alternatives(10, true), *many = many_alternatives(2000, true);
    char *few_fail = many_alternatives(10, false), *many_fail = many_alternatives(2000, false);

    long matching_few = check_allocations(few, value, JPT_OK);
    long matching_many = check_allocations(many, value, JPT_OK);
    long failing_few = check_allocations(few_fail, value, JPT_ERR_INVALID);
    long failing_many = check_allocations(many_fail, value, JPT_ERR_INVALID);
    if (matching_many != matching_few || failing_many != failing_few)
        fail_msg("allocations: matching %ld with 10 failing alternatives, %ld with 2000; "
                 "failing %ld with 10, %ld with 2000",
                 matching_few, matching_many, failing_few, failing_many);
    /* A matching answer needs no message at all. */
    assert_int_equal(matching_many, 0);
    free(value);
    free(few);
    free(many);
    free(few_fail);
    free(many_fail);
}

/* A message shows a large value by its first bytes only. */
static void large_values_are_cut_in_messages(void **state)
{
    (void)state;
    char *value = integer_list(10000);
    char expected[256];

    snprintf(expected, sizeof(expected), "at the top level: %.92s… is not the constant 1", value);
    assert_mismatch("{\"const\":1}", value, expected);
    free(value);
}

/* ---- NUL characters ------------------------------------------------------------------------- */

/* JSON text may spell a NUL character (\u0000); it is a character like any
 * other, in the schema and in the value. */
static void nul_characters_are_json(void **state)
{
    (void)state;
    assert_matches("{\"enum\":[\"a\\u0000b\"]}", "\"a\\u0000b\"");
    assert_mismatch("{\"const\":\"a\\u0000b\"}", "\"a\\u0000c\"",
                    "at the top level: \"a\\u0000c\" is not the constant \"a\\u0000b\"");
    assert_matches("{\"type\":\"string\",\"maxLength\":3}", "\"a\\u0000b\"");
    assert_mismatch("{\"type\":\"string\",\"maxLength\":2}", "\"a\\u0000b\"",
                    "at the top level: a string of 3 characters is longer than maxLength 2");
}

/* A question whose schema and default hold a NUL character can be
 * answered with its default: the fields are JSON text that reads back. */
static void question_with_nul_accepts_its_default(void **state)
{
    (void)state;
    jpt_state *s = tu_parse("{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"q\","
                            "\"text\":\"Which?\",\"schema\":{\"type\":\"string\",\"enum\":"
                            "[\"a\\u0000b\",\"c\"]},\"default\":\"a\\u0000b\"}}]}");
    const char *schema = jpt_state_block_field(s, 0, JPT_FIELD_SCHEMA, NULL);
    const char *def = jpt_state_block_field(s, 0, JPT_FIELD_DEFAULT, NULL);

    assert_int_equal(jpt_state_block_type(s, 0), JPT_BLOCK_QUESTION);
    assert_string_equal(schema, "{\"type\":\"string\",\"enum\":[\"a\\u0000b\",\"c\"]}");
    assert_string_equal(def, "\"a\\u0000b\"");
    assert_matches(schema, def);
    assert_mismatch(schema, "\"a\"", "at the top level: \"a\" is not one of [\"a\\u0000b\",\"c\"]");
    jpt_state_unref(s);
}

/* ---- Issue 16 §3: what the official suite found, and what is refused ------------------ */

/* Draft 6 and later let a count be written as a decimal: it used to be
 * ignored. */
static void counts_written_as_decimals_apply(void **state)
{
    (void)state;
    assert_mismatch("{\"maxLength\":2.0}", "\"abc\"",
                    "at the top level: a string of 3 characters is longer than maxLength 2");
    assert_matches("{\"maxLength\":2.0}", "\"ab\"");
    assert_mismatch("{\"minItems\":1.0}", "[]",
                    "at the top level: an array of 0 items is shorter than minItems 1");
    assert_mismatch("{\"maxProperties\":1.0}", "{\"a\":1,\"b\":2}",
                    "at the top level: an object of 2 properties has more than maxProperties 1");
    assert_mismatch("{\"maxLength\":2.5}", "\"a\"",
                    "the schema is malformed: at the top level: 'maxLength' must be a "
                    "non-negative integer");
}

/* additionalProperties applies to the members neither properties nor
 * patternProperties names: it used to reject those patternProperties
 * names. */
static void additional_properties_leave_pattern_properties_alone(void **state)
{
    (void)state;
    const char *schema = "{\"properties\":{\"a\":{}},\"patternProperties\":{\"^x-\":"
                         "{\"type\":\"integer\"}},\"additionalProperties\":false}";
    assert_matches(schema, "{\"a\":1,\"x-b\":2}");
    assert_mismatch(schema, "{\"x-b\":\"no\"}", "at /x-b: expected integer, got string");
    assert_mismatch(schema, "{\"c\":1}", "at /c: property \"c\" is not allowed");
}

/* An empty name is a name (ajv 8 skips it in required: not jptool). */
static void an_empty_property_name_can_be_required(void **state)
{
    (void)state;
    assert_mismatch("{\"required\":[\"\"]}", "{\"a\":1}",
                    "at the top level: missing required property \"\"");
    assert_matches("{\"required\":[\"\"]}", "{\"\":1}");
}

static void keywords_of_later_drafts_are_refused_by_name(void **state)
{
    (void)state;
    char *why = NULL;
    assert_int_equal(jpt_schema_check("{\"properties\":{\"p\":{\"prefixItems\":[true]}}}", "{}",
                                      &why),
                     JPT_ERR_UNSUPPORTED);
    assert_string_equal(why, "the schema uses what jptool does not check: at /properties/p: "
                             "'prefixItems' is a keyword of JSON Schema 2019-09 or later, which "
                             "jptool does not check (it checks draft 7's keywords)");
    jpt_free(why);
    why = NULL;
    assert_int_equal(jpt_schema_check("{\"$ref\":\"https://example.com/s.json\"}", "1", &why),
                     JPT_ERR_UNSUPPORTED);
    jpt_free(why);
    assert_mismatch("{\"exclusiveMaximum\":true,\"maximum\":3}", "3",
                    "the schema is malformed: at the top level: 'exclusiveMaximum' is a "
                    "boolean, JSON Schema draft 4's form; draft 7 takes the bound itself "
                    "(\"exclusiveMaximum\": <the bound>)");
    assert_mismatch("{\"items\":{\"$ref\":\"#/definitions/nope\"}}", "[]",
                    "the schema is malformed: at /items: '$ref' \"#/definitions/nope\" points "
                    "to nothing in this schema");
    assert_mismatch("{\"pattern\":\"(\"}", "\"x\"",
                    "the schema is malformed: at the top level: 'pattern' is not a regular "
                    "expression: missing closing parenthesis at offset 1");
}

/* Local $refs, by JSON Pointer; a $ref that comes back to the same value
 * is refused at once, and nesting is bounded. */
static void local_refs_are_followed_and_loops_refused(void **state)
{
    (void)state;
    const char *tree = "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"kids\":"
                       "{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}}}},"
                       "\"$ref\":\"#/$defs/node\"}";
    assert_matches(tree, "{\"kids\":[{\"kids\":[]},{}]}");
    assert_mismatch(tree, "{\"kids\":[{\"kids\":[1]}]}",
                    "at /kids/0/kids/0: expected object, got integer");
    assert_mismatch("{\"$ref\":\"#\"}", "1",
                    "the schema's $ref \"#\" comes back to the same value without going deeper "
                    "into it, so no value can end the check");
    char *why = NULL;
    /* A value of JPT_JSON_MAX_DEPTH (the deepest any JSON text may be),
     * with subschemas nesting three a level. */
    char deep[2 * JPT_JSON_MAX_DEPTH + 1];
    memset(deep, '[', JPT_JSON_MAX_DEPTH);
    memset(deep + JPT_JSON_MAX_DEPTH, ']', JPT_JSON_MAX_DEPTH);
    deep[2 * JPT_JSON_MAX_DEPTH] = '\0';
    assert_int_equal(jpt_schema_check("{\"items\":{\"allOf\":[{\"allOf\":[{\"$ref\":\"#\"}]}]}}",
                                      deep, &why),
                     JPT_ERR_LIMIT);
    assert_string_equal(why, "the schema nests more than 512 subschemas deep on the value");
    jpt_free(why);
}

/* ---- boolean schemas, unknown keywords ---------------------------------------------------- */

static void true_schema_matches_everything(void **state)
{
    (void)state;
    assert_matches("true", "null");
    assert_matches("true", "{\"a\":[1,2]}");
    assert_matches("{}", "\"anything\"");
}

static void false_schema_matches_nothing(void **state)
{
    (void)state;
    assert_mismatch("false", "null", "at the top level: no value is allowed here");
    assert_mismatch("{\"properties\":{\"secret\":false}}", "{\"secret\":1}",
                    "at /secret: no value is allowed here");
}

static void unknown_keywords_are_ignored(void **state)
{
    (void)state;
    assert_matches("{\"type\":\"string\",\"format\":\"email\",\"x-ui\":{\"widget\":\"big\"},"
                   "\"description\":\"anything\",\"title\":\"T\",\"$schema\":\"x\"}",
                   "\"not an email\"");
}

/* A schema that is JSON but neither an object nor a boolean is no JSON
 * Schema (issue 16 §3: it used to constrain nothing). */
static void non_object_schema_is_malformed(void **state)
{
    (void)state;
    assert_mismatch("[1,2]", "\"x\"",
                    "the schema is malformed: at the top level: an array is not a schema (an "
                    "object or a boolean)");
    assert_mismatch("{\"properties\":{\"a\":42}}", "{}",
                    "the schema is malformed: at /properties/a: an integer is not a schema (an "
                    "object or a boolean)");
}

/* ---- JSON Pointer paths --------------------------------------------------------------------- */

static void deep_path_names_every_step(void **state)
{
    (void)state;
    assert_mismatch("{\"properties\":{\"a\":{\"items\":{\"properties\":{\"b\":"
                    "{\"type\":\"boolean\"}}}}}}",
                    "{\"a\":[{\"b\":true},{\"b\":\"no\"}]}",
                    "at /a/1/b: expected boolean, got string");
}

/* RFC 6901 §3: "~" is written "~0" and "/" is written "~1". */
static void path_escapes_tilde_and_slash(void **state)
{
    (void)state;
    assert_mismatch("{\"properties\":{\"a/b~c\":{\"type\":\"string\"}}}",
                    "{\"a/b~c\":1}", "at /a~1b~0c: expected string, got integer");
}

static void path_of_empty_key_is_a_lone_slash(void **state)
{
    (void)state;
    assert_mismatch("{\"properties\":{\"\":{\"type\":\"string\"}}}", "{\"\":1}",
                    "at /: expected string, got integer");
}

/* ---- Input that is not JSON, arguments ------------------------------------------------------- */

static void malformed_schema_is_invalid_and_says_so(void **state)
{
    (void)state;
    assert_why_starts_with("{\"type\":", "1", "the schema is not JSON: ");
    assert_why_starts_with("", "1", "the schema is not JSON: ");
}

static void malformed_value_is_invalid_and_says_so(void **state)
{
    (void)state;
    assert_why_starts_with("{\"type\":\"string\"}", "'single'", "the value is not JSON: ");
    assert_why_starts_with("true", "", "the value is not JSON: ");
    assert_why_starts_with("true", "1 2", "the value is not JSON: ");
}

/* Scalars are JSON values (RFC 8259), so an answer may be one. */
static void scalar_values_are_json(void **state)
{
    (void)state;
    assert_matches("{\"type\":\"string\"}", "\"x\"");
    assert_matches("{\"type\":\"null\"}", " null ");
}

static void why_may_be_null(void **state)
{
    (void)state;
    assert_int_equal(jpt_schema_check("{\"type\":\"string\"}", "\"x\"", NULL), JPT_OK);
    assert_int_equal(jpt_schema_check("{\"type\":\"string\"}", "1", NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_schema_check("{", "1", NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_schema_check("true", "nope", NULL), JPT_ERR_INVALID);
}

static void why_is_null_on_success(void **state)
{
    (void)state;
    char *why = (char *)&why; /* anything but NULL */
    assert_int_equal(jpt_schema_check("{\"type\":\"string\"}", "\"x\"", &why), JPT_OK);
    assert_null(why);
}

static void null_schema_or_value_is_invalid(void **state)
{
    (void)state;
    char *why = NULL;
    assert_int_equal(jpt_schema_check(NULL, "1", &why), JPT_ERR_INVALID);
    jpt_free(why);
    why = NULL;
    assert_int_equal(jpt_schema_check("true", NULL, &why), JPT_ERR_INVALID);
    jpt_free(why);
    assert_int_equal(jpt_schema_check(NULL, NULL, NULL), JPT_ERR_INVALID);
}

/* minItems / maxItems bound an array's length (the turn-end question asks
 * for one entry per handle). */
static void item_counts_are_bounded(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"array\",\"minItems\":2,\"maxItems\":3}";
    assert_matches(schema, "[1,2]");
    assert_matches(schema, "[1,2,3]");
    assert_mismatch(schema, "[1]", "at the top level: an array of 1 items is shorter than minItems 2");
    assert_mismatch(schema, "[1,2,3,4]",
                    "at the top level: an array of 4 items is longer than maxItems 3");
}

int main(void)
{
    tu_install_counting_allocator();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(item_counts_are_bounded),
        cmocka_unit_test(type_string_matches_string_only),
        cmocka_unit_test(type_boolean_matches_true_and_false_only),
        cmocka_unit_test(type_null_matches_null_only),
        cmocka_unit_test(type_object_matches_object_only),
        cmocka_unit_test(type_array_matches_array_only),
        cmocka_unit_test(type_integer_accepts_integral_numbers),
        cmocka_unit_test(type_number_accepts_integers_and_reals),
        cmocka_unit_test(type_array_of_types_matches_any_of_them),
        cmocka_unit_test(enum_matches_listed_values_only),
        cmocka_unit_test(enum_compares_numbers_by_value),
        cmocka_unit_test(enum_compares_structures),
        cmocka_unit_test(const_one_equals_one_point_zero),
        cmocka_unit_test(const_rejects_other_values),
        cmocka_unit_test(const_null_matches_null),
        cmocka_unit_test(properties_check_their_members),
        cmocka_unit_test(properties_ignore_non_objects),
        cmocka_unit_test(required_members_must_be_present),
        cmocka_unit_test(required_is_reported_at_the_nested_object),
        cmocka_unit_test(required_member_may_be_null),
        cmocka_unit_test(additional_properties_false_rejects_unlisted_members),
        cmocka_unit_test(additional_properties_schema_checks_unlisted_members),
        cmocka_unit_test(additional_properties_true_allows_anything),
        cmocka_unit_test(items_schema_checks_every_item),
        cmocka_unit_test(nested_item_mismatch_is_reported_with_its_pointer),
        cmocka_unit_test(items_tuple_checks_each_position),
        cmocka_unit_test(items_tuple_allows_extra_items),
        cmocka_unit_test(minimum_is_inclusive),
        cmocka_unit_test(maximum_is_inclusive),
        cmocka_unit_test(exclusive_minimum_excludes_the_bound),
        cmocka_unit_test(exclusive_maximum_excludes_the_bound),
        cmocka_unit_test(number_bounds_ignore_non_numbers),
        cmocka_unit_test(max_length_counts_characters_not_bytes),
        cmocka_unit_test(min_length_counts_characters_not_bytes),
        cmocka_unit_test(length_counts_escaped_characters),
        cmocka_unit_test(length_bounds_ignore_non_strings),
        cmocka_unit_test(any_of_matches_when_one_alternative_does),
        cmocka_unit_test(any_of_matches_when_several_alternatives_do),
        cmocka_unit_test(any_of_with_no_match_reports_the_first_reason),
        cmocka_unit_test(one_of_matches_exactly_one),
        cmocka_unit_test(one_of_with_no_match_is_rejected),
        cmocka_unit_test(one_of_with_two_matches_is_rejected),
        cmocka_unit_test(alternatives_report_at_the_nested_path),
        cmocka_unit_test(nested_alternatives_give_the_first_reason_at_each_level),
        cmocka_unit_test(failing_alternatives_cost_no_allocations),
        cmocka_unit_test(large_values_are_cut_in_messages),
        cmocka_unit_test(nul_characters_are_json),
        cmocka_unit_test(question_with_nul_accepts_its_default),
        cmocka_unit_test(true_schema_matches_everything),
        cmocka_unit_test(false_schema_matches_nothing),
        cmocka_unit_test(unknown_keywords_are_ignored),
        cmocka_unit_test(non_object_schema_is_malformed),
        cmocka_unit_test(counts_written_as_decimals_apply),
        cmocka_unit_test(additional_properties_leave_pattern_properties_alone),
        cmocka_unit_test(an_empty_property_name_can_be_required),
        cmocka_unit_test(keywords_of_later_drafts_are_refused_by_name),
        cmocka_unit_test(local_refs_are_followed_and_loops_refused),
        cmocka_unit_test(deep_path_names_every_step),
        cmocka_unit_test(path_escapes_tilde_and_slash),
        cmocka_unit_test(path_of_empty_key_is_a_lone_slash),
        cmocka_unit_test(malformed_schema_is_invalid_and_says_so),
        cmocka_unit_test(malformed_value_is_invalid_and_says_so),
        cmocka_unit_test(scalar_values_are_json),
        cmocka_unit_test(why_may_be_null),
        cmocka_unit_test(why_is_null_on_success),
        cmocka_unit_test(null_schema_or_value_is_invalid),
    };
    return TU_RUN(tests);
}
