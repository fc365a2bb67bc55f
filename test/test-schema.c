/* jpt_schema_check(): answers against the JSON Schema subset questions use
 * (state.h; RFD 058 "Question schema"; issue 2 §3), with the exact `why`
 * messages and their JSON Pointer paths (RFC 6901). */
#include <string.h>

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

/* Detail the header leaves open: a schema that is JSON but neither an
 * object nor a boolean constrains nothing. */
static void non_object_schema_constrains_nothing(void **state)
{
    (void)state;
    assert_matches("[1,2]", "\"x\"");
    assert_matches("42", "{}");
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
        cmocka_unit_test(true_schema_matches_everything),
        cmocka_unit_test(false_schema_matches_nothing),
        cmocka_unit_test(unknown_keywords_are_ignored),
        cmocka_unit_test(non_object_schema_constrains_nothing),
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
