/* jpt_schema_check() against ajv (npm, pinned by test/npm's lockfile), a
 * differential test (TESTING.md "Differential tests against references";
 * issue 16 §3): test/schema-ajv.cjs makes random schemas of the keywords
 * state.h says the checker checks, with values landing on both sides of
 * them, and gives ajv's verdict on each; every case must get the same
 * verdict from jpt_schema_check. A few seeds, each thousands of cases.
 *
 * ajv is installed by scripts/run-tests (npm ci into build-npm/); where it
 * or node is missing the test is skipped, unless
 * JPT_TEST_REQUIRE_REFERENCES is set (scripts/run-tests sets it): then
 * their absence fails. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "test-util.h"

#define CASES_PER_SEED 4000

static const unsigned seeds[] = {1, 16, 2024, 90210};

/* Where ajv is: $JPT_TEST_NODE_MODULES, else the build's default. */
static const char *node_modules(void)
{
    const char *dir = getenv("JPT_TEST_NODE_MODULES");
    return dir != NULL ? dir : JPT_TEST_NODE_MODULES;
}

static bool have_references(char *why, size_t n)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/ajv/package.json", node_modules());
    if (JPT_TEST_NODE[0] == '\0' || access(JPT_TEST_NODE, X_OK) != 0)
        return snprintf(why, n, "node is not installed"), false;
    if (access(path, R_OK) != 0)
        return snprintf(why, n, "ajv is not installed in %s (scripts/run-tests: npm ci)",
                        node_modules()),
               false;
    return true;
}

typedef struct tally {
    size_t cases, valid, differ;
} tally;

static void compare(const char *line, tally *t)
{
    json_error_t jerr;
    json_t *c = json_loads(line, 0, &jerr);
    char *why = NULL;

    if (c == NULL)
        fail_msg("schema-ajv.cjs wrote a line that is not JSON: %s: %.200s", jerr.text, line);
    const char *schema = json_string_value(json_object_get(c, "schema"));
    const char *data = json_string_value(json_object_get(c, "data"));
    bool valid = json_is_true(json_object_get(c, "valid"));
    assert_non_null(schema);
    assert_non_null(data);
    int rc = jpt_schema_check(schema, data, &why);
    bool agrees = valid ? rc == JPT_OK
                        : rc == JPT_ERR_INVALID && strncmp(why, "the schema", 10) != 0;
    t->cases++;
    t->valid += valid;
    if (!agrees) {
        if (t->differ < 10)
            printf("ajv says %s, jptool %s (%s): %s\n  schema %s\n", valid ? "valid" : "invalid",
                   jpt_status_name(rc), why != NULL ? why : "", data, schema);
        t->differ++;
    }
    jpt_free(why);
    json_decref(c);
}

static void run_seed(unsigned seed, tally *t)
{
    char command[2048];

    snprintf(command, sizeof(command), "'%s' '%s' '%s' %u %d", JPT_TEST_NODE, JPT_TEST_AJV_SCRIPT,
             node_modules(), seed, CASES_PER_SEED);
    FILE *p = popen(command, "r");
    assert_non_null(p);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    size_t before = t->cases;
    while ((n = getline(&line, &cap, p)) > 0) {
        if (line[n - 1] == '\n')
            line[n - 1] = '\0';
        compare(line, t);
    }
    free(line);
    int status = pclose(p);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("%s failed (status %d)", command, status);
    assert_int_equal(t->cases - before, CASES_PER_SEED);
}

static void jptool_and_ajv_agree_on_generated_cases(void **state)
{
    tally t = {0};
    char why[512];

    (void)state;
    if (!have_references(why, sizeof(why))) {
        if (getenv("JPT_TEST_REQUIRE_REFERENCES") != NULL)
            fail_msg("%s", why);
        printf("[ SKIPPED  ] %s\n", why);
        skip();
    }
    for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
        run_seed(seeds[i], &t);
    printf("[ AJV      ] %zu cases (%zu valid by ajv): %zu differ\n", t.cases, t.valid,
           t.differ);
    if (t.differ > 0)
        fail_msg("%zu of %zu cases differ from ajv", t.differ, t.cases);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jptool_and_ajv_agree_on_generated_cases),
    };
    return TU_RUN(tests);
}
