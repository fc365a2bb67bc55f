/* Allocation failure: every operation is run with its 1st, 2nd, … Nth
 * allocation failing until it succeeds. Each failing run must return
 * JPT_ERR_NOMEM, leave nothing allocated, and never crash (TESTING.md). The
 * counting allocator also sees jansson's allocations, which jptool routes
 * through the same hook. */
#include <string.h>

#include "test-util.h"

/* One output of each format and block type the parser reads. */
static const char *const inputs[] = {
    "plain text output\n",
    "",
    "{\"content\":[{\"type\":\"text\",\"text\":\"Check succeeded.\"}]}",
    "{\"content\":[{\"type\":\"text\",\"text\":\"Diff:\"},"
    "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///p/src/main.rs\","
    "\"mimeType\":\"text/rust\",\"text\":\"fn main() {}\",\"name\":\"main\","
    "\"title\":\"Main\",\"description\":\"entry\"},"
    "\"annotations\":{\"audience\":[\"assistant\"],\"priority\":0.5},"
    "\"formatted\":\"```rs\\nfn main() {}\\n```\"},"
    "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///p/logo.png\","
    "\"mimeType\":\"image/png\",\"blob\":\"iVBORw0KGgo=\"}},"
    "{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"},"
    "{\"type\":\"audio\",\"data\":\"AAAA\",\"mimeType\":\"audio/wav\"},"
    "{\"type\":\"resource_link\",\"uri\":\"https://example.com/x\",\"name\":\"x\"},"
    "{\"type\":\"bogus\"},"
    "{\"type\":\"question\",\"question\":{\"id\":\"q\",\"text\":\"Go?\","
    "\"schema\":{\"type\":\"boolean\"},\"default\":true}}],"
    "\"structuredContent\":{\"ok\":true},"
    "\"_meta\":{\"computer.jp/status\":\"waiting\"}}",
    "{\"content\":[{\"type\":\"text\",\"text\":\"File not found\"}],\"isError\":true,"
    "\"_meta\":{\"computer.jp/error\":{\"transient\":true,\"trace\":[\"io: ENOENT\"]}}}",
    "{\"type\":\"running\",\"content\":\"$ \"}",
    "{\"type\":\"stopped\",\"result\":{\"Err\":{\"message\":\"boom\",\"trace\":[\"a\"],"
    "\"transient\":false}}}",
    "{\"type\":\"needs_input\",\"question\":{\"id\":\"branch\",\"text\":\"Which?\","
    "\"pre_amble\":\"Branches:\",\"answer_type\":{\"Select\":{\"options\":[\"main\","
    "\"dev\"]}},\"default\":\"main\"}}",
    "{\"type\":\"error\",\"message\":\"bad\",\"trace\":[\"x\",\"y\"],\"transient\":true}",
    "{\"not\":\"an envelope\"}",
    "{\"content\":[{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\","
    "\"annotations\":{\"note\":\"\\u0000\"}},{\"type\":\"question\",\"question\":"
    "{\"id\":\"q\",\"text\":\"Pick?\",\"schema\":{\"enum\":[\"a\\u0000b\",1.5]},"
    "\"default\":\"a\\u0000b\"}}],\"structuredContent\":{\"s\":\"\\u0000\"}}",
};

#define N_INPUTS (sizeof(inputs) / sizeof(inputs[0]))

typedef struct parse_ctx {
    const char *input;
    jpt_state *expected;
} parse_ctx;

/* A parse either fails cleanly or gives exactly the state an unhindered
 * parse gives: running out of memory must never look like malformed output
 * and fall back to raw text. */
static int parse_op(void *ctx)
{
    parse_ctx *c = ctx;
    jpt_state *s = (jpt_state *)&s; /* must be reset to NULL on failure */
    int rc = jpt_state_parse(c->input, strlen(c->input), 0, &s);

    if (rc == JPT_OK) {
        tu_fail_at(0); /* the comparison allocates too */
        tu_assert_states_equal(s, c->expected);
        assert_int_equal(jpt_state_warning_count(s),
                         jpt_state_warning_count(c->expected));
        jpt_state_unref(s);
    } else
        assert_null(s);
    return rc;
}

static void parse_survives_allocation_failure(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_INPUTS; i++) {
        parse_ctx c = {inputs[i], tu_parse(inputs[i])};
        tu_sweep("jpt_state_parse", parse_op, &c);
        jpt_state_unref(c.expected);
    }
}

typedef struct to_json_ctx {
    jpt_state *s;
    int form;
} to_json_ctx;

static int to_json_op(void *ctx)
{
    to_json_ctx *c = ctx;
    char *out = (char *)&out;
    int rc = jpt_state_to_json(c->s, c->form, JPT_JSON_PRETTY, &out);

    if (rc == JPT_OK)
        jpt_free(out);
    else
        assert_null(out);
    return rc;
}

static void to_json_survives_allocation_failure(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_INPUTS; i++) {
        jpt_state *s = tu_parse(inputs[i]);
        for (int form = JPT_JSON_ENVELOPE; form <= JPT_JSON_OUTCOME; form++) {
            if (form == JPT_JSON_OUTCOME && jpt_state_kind(s) == JPT_STATE_RUNNING)
                continue;
            to_json_ctx c = {s, form};
            tu_sweep("jpt_state_to_json", to_json_op, &c);
        }
        jpt_state_unref(s);
    }
}

static int render_op(void *ctx)
{
    jpt_render_options opts = {sizeof(opts), "/p"};
    char *out = NULL;
    int rc = jpt_state_render(ctx, &opts, &out);

    if (rc == JPT_OK)
        jpt_free(out);
    else
        assert_null(out);
    return rc;
}

static void render_survives_allocation_failure(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_INPUTS; i++) {
        jpt_state *s = tu_parse(inputs[i]);
        tu_sweep("jpt_state_render", render_op, s);
        jpt_state_unref(s);
    }
}

static int schema_check_op(void *ctx)
{
    const char *const *pair = ctx;
    char *why = NULL;
    int rc = jpt_schema_check(pair[0], pair[1], &why);

    jpt_free(why);
    /* A mismatch is the expected answer here, not a failure to retry. */
    return rc == JPT_ERR_INVALID && why != NULL ? JPT_OK : rc;
}

static void schema_check_survives_allocation_failure(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        {"{\"type\":\"object\",\"properties\":{\"files\":{\"type\":\"array\","
         "\"items\":{\"type\":\"string\"}}},\"required\":[\"files\"]}",
         "{\"files\":[\"a\",2]}"},
        {"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "1.5"},
        {"{\"type\":\"string\",\"enum\":[\"main\",\"dev\"]}", "\"main\""},
        {"{\"anyOf\":[{\"properties\":{\"a\":{\"oneOf\":[{\"const\":\"\\u0000\"},"
         "{\"type\":\"integer\"}]}}},{\"type\":\"array\"}]}",
         "{\"a\":[1,\"\\u0000\"]}"},
        {"not json", "1"},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
        tu_sweep("jpt_schema_check", schema_check_op, (void *)pairs[i]);
}

static int uri_op(void *ctx)
{
    char *out = NULL;
    int rc = jpt_uri_canonicalize(ctx, "/project", &out);

    jpt_free(out);
    return rc;
}

static void uri_canonicalize_survives_allocation_failure(void **state)
{
    (void)state;
    static const char *const uris[] = {
        "file:///project/./src/../src/main.rs",
        "HTTPS://Example.COM:443/a/./b/../c?x=%7e",
        "urn:ISBN:0451450523",
        "../outside/x",
    };
    for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++)
        tu_sweep("jpt_uri_canonicalize", uri_op, (void *)uris[i]);
}

/* A builder that fails must leave the state as it was. */
static int builders_op(void *ctx)
{
    (void)ctx;
    jpt_state *s = NULL;
    jpt_resource r = {sizeof(r), "file:///p/a.rs", "text/rust", "fn a() {}", NULL,
                      NULL, "a", NULL, NULL, "{\"priority\":1}"};
    int rc = jpt_state_new(JPT_STATE_STOPPED, &s);
    size_t before;

    if (rc < 0)
        return rc;
#define STEP(call)                                                             \
    before = jpt_state_block_count(s);                                         \
    if ((rc = (call)) < 0) {                                                   \
        assert_int_equal(jpt_state_block_count(s), before);                    \
        goto out;                                                              \
    }
    STEP(jpt_state_add_text(s, "hello"));
    STEP(jpt_state_add_resource(s, &r));
    STEP(jpt_state_add_question(s, "q", "Go?", "{\"type\":\"boolean\"}", "true"));
    STEP(jpt_state_add_block_json(s, "{\"type\":\"question\",\"question\":{\"id\":"
                                     "\"b\",\"text\":\"Which?\",\"pre_amble\":\"Pick\","
                                     "\"answer_type\":\"Text\"}}"));
    STEP(jpt_state_set_structured_content(s, "{\"n\":1}"));
    STEP(jpt_state_set_error(s, "failed", 1));
    STEP(jpt_state_add_error_trace(s, "cause"));
#undef STEP
out:
    jpt_state_unref(s);
    return rc;
}

static void builders_survive_allocation_failure(void **state)
{
    (void)state;
    tu_sweep("builders", builders_op, NULL);
}

int main(void)
{
    /* The allocator must be installed before anything allocates; invalid
     * ones are refused first. */
    jpt_allocator bad = {sizeof(bad) - 1, NULL, NULL, NULL, NULL};
    if (jpt_set_allocator(&bad) != JPT_ERR_INVALID)
        return 1;
    tu_install_counting_allocator();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_survives_allocation_failure),
        cmocka_unit_test(to_json_survives_allocation_failure),
        cmocka_unit_test(render_survives_allocation_failure),
        cmocka_unit_test(schema_check_survives_allocation_failure),
        cmocka_unit_test(uri_canonicalize_survives_allocation_failure),
        cmocka_unit_test(builders_survive_allocation_failure),
    };
    return TU_RUN(tests);
}
