/* jpt_schema_check() against the official JSON Schema Test Suite, draft 7
 * (TESTING.md "Differential tests against references"; issue 16 §3): every
 * case of every file for the keywords state.h says the checker checks,
 * with the suite's verdict. A case the checker answers otherwise fails the
 * test unless it is listed below with the reason (state.h documents each);
 * a listed case that no longer differs fails it too, so the list stays
 * true. Prints the case counts per file.
 *
 * The suite is Debian's json-schema-test-suite package (scripts/common.sh
 * installs it; npm has no package that carries the draft 7 files without
 * fetching them from GitHub). Where it is not installed the test is
 * skipped, unless JPT_TEST_REQUIRE_REFERENCES is set (scripts/run-tests
 * sets it): then its absence fails. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "test-util.h"

#ifndef JPT_TEST_SCHEMA_SUITE
#define JPT_TEST_SCHEMA_SUITE "/usr/share/json-schema-test-suite/tests/draft7"
#endif

/* The files run: every draft 7 keyword file, and the optional files about
 * patterns and numbers. Not run: optional/format/ and
 * optional/content.json, whose keywords are annotations to jptool
 * (state.h), as draft 7 §7.2 and §8 allow; refRemote.json, whose
 * references are to other documents, which jptool refuses (state.h), so
 * that each of its cases would be "refused"; optional/bignum.json, whose
 * integers are larger than jansson holds (64 bits): jpt_schema_check
 * reads such a value as not JSON (state.h), and a call's arguments
 * holding one fail the call naming the number (registry.h). */
static const char *const files[] = {
    "additionalItems.json",   "additionalProperties.json", "allOf.json",
    "anyOf.json",             "boolean_schema.json",       "const.json",
    "contains.json",          "default.json",              "definitions.json",
    "dependencies.json",      "enum.json",                 "exclusiveMaximum.json",
    "exclusiveMinimum.json",  "if-then-else.json",         "items.json",
    "maxItems.json",          "maxLength.json",            "maxProperties.json",
    "maximum.json",           "minItems.json",             "minLength.json",
    "minProperties.json",     "minimum.json",              "multipleOf.json",
    "not.json",               "oneOf.json",                "pattern.json",
    "patternProperties.json", "properties.json",           "propertyNames.json",
    "ref.json",               "required.json",             "type.json",
    "uniqueItems.json",       "optional/ecmascript-regex.json",
    "optional/zeroTerminatedFloats.json",
};

/* How a listed case differs. */
#define REFUSED 1 /* the schema is refused (JPT_ERR_UNSUPPORTED) */
#define OTHER 2   /* the verdict is the other one */

/* The cases jptool answers otherwise, by design (state.h). `test` NULL:
 * every case of the group. */
static const struct known {
    const char *file, *group, *test;
    int how;
    const char *why;
} known[] = {
    {"definitions.json", "valid definition", NULL, REFUSED,
     "its $ref is to the draft 7 meta-schema, another document"},
    {"definitions.json", "invalid definition", NULL, REFUSED,
     "its $ref is to the draft 7 meta-schema, another document"},
    {"ref.json", "remote ref, containing refs itself", NULL, REFUSED,
     "a $ref to another document"},
    {"ref.json", "Recursive references between schemas", NULL, REFUSED,
     "$refs resolved against an $id below the root"},
    {"ref.json", "ref overrides any sibling keywords", "ref valid, maxItems ignored", OTHER,
     "a $ref's siblings apply too, as in JSON Schema 2019-09 and later and in ajv; draft 7 "
     "ignores them"},
    {"optional/ecmascript-regex.json", "ECMA 262 regex non-compliance", NULL, OTHER,
     "its schema is {\"format\": \"regex\"}, and format is an annotation"},
};

static bool same(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static const struct known *listed(const char *file, const char *group, const char *test)
{
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (same(known[i].file, file) && same(known[i].group, group) &&
            (known[i].test == NULL || same(known[i].test, test)))
            return &known[i];
    return NULL;
}

typedef struct counts {
    size_t cases, agree, refused, differ_known, differ;
} counts;

/* Runs one case; returns how it differs (0: it agrees). */
static int run_case(const char *schema, const json_t *test, char **why)
{
    char *data = json_dumps(json_object_get(test, "data"), JSON_ENCODE_ANY | JSON_COMPACT);
    bool valid = json_is_true(json_object_get(test, "valid"));

    assert_non_null(data);
    int rc = jpt_schema_check(schema, data, why);
    free(data);
    if (rc == JPT_ERR_UNSUPPORTED)
        return REFUSED;
    if (valid)
        return rc == JPT_OK ? 0 : OTHER;
    /* Refusing the value, not the schema. */
    if (rc == JPT_ERR_INVALID && *why != NULL && strncmp(*why, "the schema", 10) == 0)
        return REFUSED;
    return rc == JPT_ERR_INVALID ? 0 : OTHER;
}

static void run_file(const char *dir, const char *file, counts *total, int *failures)
{
    char path[1024];
    json_error_t jerr;
    counts c = {0};

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    json_t *groups = json_load_file(path, 0, &jerr);
    if (groups == NULL)
        fail_msg("%s: %s", path, jerr.text);
    size_t g, t;
    json_t *group, *test;
    json_array_foreach(groups, g, group) {
        const char *gname = json_string_value(json_object_get(group, "description"));
        char *schema = json_dumps(json_object_get(group, "schema"), JSON_ENCODE_ANY);
        assert_non_null(schema);
        json_array_foreach(json_object_get(group, "tests"), t, test) {
            const char *tname = json_string_value(json_object_get(test, "description"));
            char *why = NULL;
            int how = run_case(schema, test, &why);
            const struct known *k = listed(file, gname, tname);
            c.cases++;
            if (how == 0 && k == NULL)
                c.agree++;
            else if (how == 0) {
                printf("%s: \"%s\" / \"%s\": listed as differing (%s), but agrees\n", file,
                       gname, tname, k->why);
                (*failures)++;
            } else if (k != NULL && k->how == how) {
                if (how == REFUSED)
                    c.refused++;
                else
                    c.differ_known++;
            } else {
                printf("%s: \"%s\" / \"%s\": the suite says %s, jptool %s: %s\n", file, gname,
                       tname, json_is_true(json_object_get(test, "valid")) ? "valid" : "invalid",
                       how == REFUSED ? "refuses the schema" : "the other", why ? why : "");
                c.differ++;
                (*failures)++;
            }
            jpt_free(why);
        }
        free(schema);
    }
    json_decref(groups);
    printf("[ SUITE    ] %-36s %3zu cases: %3zu agree, %zu refused, %zu differ by design, "
           "%zu differ\n",
           file, c.cases, c.agree, c.refused, c.differ_known, c.differ);
    total->cases += c.cases;
    total->agree += c.agree;
    total->refused += c.refused;
    total->differ_known += c.differ_known;
    total->differ += c.differ;
}

static void the_draft_7_suite_agrees(void **state)
{
    const char *dir = getenv("JPT_TEST_SCHEMA_SUITE_DIR");
    counts total = {0};
    int failures = 0;

    (void)state;
    if (dir == NULL)
        dir = JPT_TEST_SCHEMA_SUITE;
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (getenv("JPT_TEST_REQUIRE_REFERENCES") != NULL)
            fail_msg("the JSON Schema Test Suite is not at %s (Debian: json-schema-test-suite)",
                     dir);
        skip();
    }
    closedir(d);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        run_file(dir, files[i], &total, &failures);
    printf("[ SUITE    ] all %zu cases: %zu agree, %zu refused, %zu differ by design, "
           "%zu differ\n",
           total.cases, total.agree, total.refused, total.differ_known, total.differ);
    if (failures > 0)
        fail_msg("%d cases of the JSON Schema Test Suite answered otherwise than listed",
                 failures);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_draft_7_suite_agrees),
    };
    return TU_RUN(tests);
}
