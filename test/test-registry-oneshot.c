/* One-shot calls on real processes (RFD 009, "One-shot tool wrapping"):
 * every output format, questions through the inquiry handler, failures,
 * floods, stubborn children, grandchildren, terminals, templating and the
 * environment. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry-util.h"

#define OUTCOME_TOOL(name, format)                                                         \
    "{\"name\":\"" name "\",\"command\":[\"" TOOL("outcome-tool") "\",\"" format           \
    "\",\"{{tool}}\"]}"

static const char tools[] =
    "{\"tools\":["
    OUTCOME_TOOL("greet_success", "success") ","
    OUTCOME_TOOL("greet_error", "error") ","
    OUTCOME_TOOL("greet_envelope", "envelope") ","
    OUTCOME_TOOL("greet_toolstate", "toolstate") ","
    OUTCOME_TOOL("greet_raw", "raw") ","
    "{\"name\":\"echo_tool\",\"command\":[\"" TOOL("outcome-tool") "\",\"echo\",\"{{tool}}\"],"
    " \"options\":{\"verbose\":true}},"
    "{\"name\":\"echo_stdin\",\"command\":[\"" TOOL("outcome-tool") "\",\"echo\"],\"stdin\":true},"
    "{\"name\":\"merge\",\"command\":[\"" TOOL("ask-tool") "\",\"{{tool}}\"],"
    " \"question_target\":\"assistant\"},"
    "{\"name\":\"fail3\",\"command\":[\"" TOOL("exit-code") "\",\"3\",\"partial output\",\"error: it broke\"]},"
    "{\"name\":\"flood\",\"command\":[\"" TOOL("flood") "\",\"{{arguments.bytes}}\"],"
    " \"parameters\":{\"type\":\"object\",\"properties\":{\"bytes\":{\"type\":\"integer\"}},"
    " \"required\":[\"bytes\"]}, \"output_limit\":1000},"
    "{\"name\":\"stubborn\",\"command\":[\"" TOOL("ignore-term") "\"],\"timeout_ms\":200},"
    "{\"name\":\"forker\",\"command\":[\"" TOOL("grandchild") "\"]},"
    "{\"name\":\"tty\",\"command\":[\"" TOOL("tty-check") "\"],\"pty\":true},"
    "{\"name\":\"notty\",\"command\":[\"" TOOL("tty-check") "\"]},"
    "{\"name\":\"args\",\"command\":[\"" TOOL("exit-code") "\",\"0\","
    " \"n={{arguments.n}} s={{arguments.s}} o={{arguments.o}} ctx={{context}}\",\"\"]},"
    "{\"name\":\"numbers\",\"command\":[\"" TOOL("exit-code") "\",\"0\","
    " \"{{arguments.a}} {{arguments.b}} {{arguments.c}} {{arguments.d}} {{arguments.e}} "
    "{{arguments.f}} {{arguments.g}}\",\"\"]},"
    "{\"name\":\"env_clean\",\"command\":[\"" TOOL("env-dump") "\",\"JPT_SECRET\",\"JPT_ALLOWED\",\"JPT_SET\",\"PATH\"],"
    " \"env\":{\"inherit\":false,\"allow\":[\"JPT_ALLOWED\"],\"set\":{\"JPT_SET\":\"yes\"}}},"
    "{\"name\":\"env_inherit\",\"command\":[\"" TOOL("env-dump") "\",\"JPT_ALLOWED\",\"JPT_SECRET\"],"
    " \"env\":{\"inherit\":true}},"
    "{\"name\":\"missing_cmd\",\"command\":[\"jpt-no-such-command-anywhere\"]}"
    "]}";

static char *call(jpt_registry *r, const char *tool, const char *args, bool *is_error)
{
    return ru_call(r, tool, args, is_error);
}

static void legacy_success_is_its_content(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    bool err = true;
    char *out = call(r, "greet_success", "{\"name\":\"Ada\"}", &err);

    assert_string_equal(out, "hello Ada");
    assert_false(err);
    free(out);
    jpt_registry_free(r);
}

/* RFD 009's table: Error { message, trace, transient } -> Stopped Err. */
static void legacy_error_is_an_error_result(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    bool err = false;
    char *out = call(r, "greet_error", "{\"name\":\"Ada\"}", &err);

    assert_string_equal(out, "Error (transient): failed: Ada\nTrace:\n  - cause one\n  - cause two");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
}

static void envelope_is_rendered_relative_to_the_root(void **state)
{
    (void)state;
    jpt_registry_options o = {sizeof(o), .root = "/"};
    jpt_registry *r = ru_registry_with(&o, tools);
    bool err = true;
    char *out = call(r, "greet_envelope", "{\"name\":\"Ada\"}", &err);

    assert_string_equal(out, "hello Ada\n\nproject/src/main.rs:\n```rs\nfn main() {}\n```");
    assert_false(err);
    free(out);
    jpt_registry_free(r);
}

static void tool_state_result_is_its_ok_value(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    char *out = call(r, "greet_toolstate", "{}", NULL);

    assert_string_equal(out, "hello world");
    free(out);
    jpt_registry_free(r);
}

static void raw_output_is_passed_through(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    char *out = call(r, "greet_raw", "{\"name\":\"x\"}", NULL);

    assert_string_equal(out, "hello x\n");
    free(out);
    jpt_registry_free(r);
}

/* {{tool}} = {"name","arguments","answers","options"}. */
static void tool_placeholder_holds_name_arguments_answers_options(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    char *out = call(r, "echo_tool", "{\"list\":[1,2],\"s\":\"x y\"}", NULL);

    tu_assert_json_equal(out, "{\"name\":\"echo_tool\",\"arguments\":{\"list\":[1,2],"
                              "\"s\":\"x y\"},\"answers\":{},\"options\":{\"verbose\":true}}");
    free(out);
    jpt_registry_free(r);
}

static void stdin_option_pipes_the_tool_json(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    char *out = call(r, "echo_stdin", "{\"k\":1}", NULL);

    tu_assert_json_equal(out, "{\"name\":\"echo_stdin\",\"arguments\":{\"k\":1},"
                              "\"answers\":{},\"options\":{}}");
    free(out);
    jpt_registry_free(r);
}

/* JP's convention: scalars raw, composites as JSON. */
static void argument_placeholders_expand_scalars_raw_and_composites_as_json(void **state)
{
    (void)state;
    jpt_registry_options o = {sizeof(o), .root = "/tmp"};
    jpt_registry *r = ru_registry_with(&o, tools);
    char *out = call(r, "args", "{\"n\":42,\"s\":\"two words\",\"o\":{\"a\":[true]}}", NULL);

    assert_string_equal(out, "n=42 s=two words o={\"a\":[true]} "
                             "ctx={\"action\":\"run\",\"root\":\"/tmp\"}");
    free(out);
    jpt_registry_free(r);
}

static void missing_argument_is_an_error_for_the_call(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    bool err = false;
    char *out = call(r, "args", "{\"n\":1,\"s\":\"x\"}", &err);

    assert_string_equal(out, "`args` could not run: the argument `o` is required by the "
                             "tool's command but was not given");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
}

static void arguments_are_checked_against_the_schema_before_running(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    bool err = false;
    char *out = call(r, "flood", "{\"bytes\":\"lots\"}", &err);

    assert_string_equal(out, "Invalid arguments for `flood`: at /bytes: expected integer, "
                             "got string");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
}

static void arguments_may_be_a_json_string(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    json_t *res = ru_run(r, "[{\"id\":\"a\",\"name\":\"greet_success\","
                            "\"arguments\":\"{\\\"name\\\":\\\"Bo\\\"}\"},"
                            "{\"id\":\"b\",\"name\":\"greet_success\",\"arguments\":\"\"},"
                            "{\"id\":\"c\",\"name\":\"greet_success\",\"arguments\":\"[1]\"}]");

    assert_string_equal(ru_content(res, 0), "hello Bo");
    assert_string_equal(ru_content(res, 1), "hello world");
    assert_string_equal(ru_content(res, 2), "Invalid arguments for `greet_success`: the "
                                            "arguments string is not a JSON object");
    assert_true(ru_is_error(res, 2));
    json_decref(res);
    jpt_registry_free(r);
}

static void unknown_tool_is_that_calls_error_only(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    json_t *res = ru_run(r, "[{\"id\":\"a\",\"name\":\"nope\",\"arguments\":{}},"
                            "{\"id\":\"b\",\"name\":\"greet_raw\",\"arguments\":{}}]");

    assert_string_equal(ru_content(res, 0), "Unknown tool `nope`");
    assert_true(ru_is_error(res, 0));
    assert_string_equal(ru_content(res, 1), "hello world\n");
    assert_false(ru_is_error(res, 1));
    json_decref(res);
    jpt_registry_free(r);
}

static void missing_command_is_reported_without_spawning(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    bool err = false;
    char *out = call(r, "missing_cmd", "{}", &err);

    assert_string_equal(out, "`missing_cmd` could not run: the tool could not be started: "
                             "command 'jpt-no-such-command-anywhere' not found in PATH");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
}

/* JP's into_tool_result: a non-zero exit with plain output is an error with
 * the tails of stderr and stdout. */
static void nonzero_exit_with_plain_text_reports_both_streams(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    bool err = false;
    char *out = call(r, "fail3", "{}", &err);

    assert_string_equal(out, "Error: The tool failed (exit status 3).\n\nstderr:\n"
                             "error: it broke\n\nstdout:\npartial output");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
}

/* The capture keeps head and tail; the model reads at most output_limit
 * bytes with the count of what was left out. */
static void flood_is_cut_with_an_exact_marker(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    char *out = call(r, "flood", "{\"bytes\":4000000}", NULL);

    /* 500 bytes of head and of tail, cut to whole 64-byte lines: 7 lines
     * (the last newline is the marker's), the marker, 7 lines. */
    assert_memory_equal(out, "line 0000001 xxxx", 17);
    ru_assert_contains(out, "x\n[… 3999105 bytes omitted …]\nline 0062494 x");
    size_t n = strlen(out);
    assert_int_equal(n, 447 + 448 + strlen("\n[… 3999105 bytes omitted …]\n"));
    assert_memory_equal(out + n - 1, "\n", 1);
    free(out);
    jpt_registry_free(r);
}

/* With a spool directory the whole output is kept in a file, and the
 * model is told where. */
static void spooled_output_is_named_to_the_model(void **state)
{
    (void)state;
    char dir[] = "/tmp/jpt-spool-XXXXXX";
    char path[256], marker[512];
    struct stat st;

    assert_non_null(mkdtemp(dir));
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 300, .spool_dir = dir};
    jpt_registry *r = ru_registry_with(&o, tools);
    char *out = call(r, "flood", "{\"bytes\":3000000}", NULL);

    const char *at = strstr(out, "the full output is in ");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "the full output is in %255s", path), 1);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 3000000);
    snprintf(marker, sizeof(marker), "\n[… 2999105 bytes omitted; the full output is in %s …]\n",
             path);
    ru_assert_contains(out, marker);
    free(out);
    jpt_registry_free(r);
    unlink(path);
    rmdir(dir);
}

/* A one-shot tool that ignores SIGTERM is killed after the grace period. */
static void timeout_kills_a_child_that_ignores_sigterm(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    bool err = false;
    char *out = call(r, "stubborn", "{}", &err);

    /* Nothing lost: what it printed comes with the error. */
    assert_string_equal(out, "Error: the tool timed out after 200 ms and was stopped\n\n"
                             "stdout:\nignoring SIGTERM\n");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
}

/* A grandchild holding stdout does not keep the call waiting: it completes
 * after the drain window with what was read, and the group is killed. */
static void grandchild_holding_the_pipe_does_not_hang_the_call(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    bool err = true;
    char *out = call(r, "forker", "{}", &err);

    assert_string_equal(out, "parent done\n");
    assert_false(err);
    free(out);
    jpt_registry_free(r);
}

static void pty_tool_runs_on_a_terminal(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    char *out = call(r, "tty", "{}", NULL);

    /* The terminal's "\r\n" reaches the model as "\n" (issue 16). */
    assert_string_equal(out, "stdin: tty\nstdout: tty\nTERM=dumb\nsize: 24x80\n");
    free(out);
    out = call(r, "notty", "{}", NULL);
    ru_assert_contains(out, "stdin: not a tty\nstdout: not a tty\n");
    free(out);
    jpt_registry_free(r);
}

/* A clean environment passes only what is allowed (and the core set); an
 * inherited one ("inherit": true) all but what looks like a secret
 * (test-sandbox says more); children start in the workspace root with no
 * inherited fds. */
static void environment_policy_and_fd_hygiene(void **state)
{
    (void)state;
    jpt_registry_options o = {sizeof(o), .root = "/tmp"};
    jpt_registry *r = ru_registry_with(&o, tools);

    setenv("JPT_SECRET", "s3cret", 1);
    setenv("JPT_ALLOWED", "fine", 1);
    char *out = call(r, "env_clean", "{}", NULL);
    ru_assert_contains(out, "JPT_SECRET is unset\nJPT_ALLOWED=fine\nJPT_SET=yes\nPATH=");
    ru_assert_contains(out, "cwd=/tmp\nfds=0 1 2\n");
    free(out);
    out = call(r, "env_inherit", "{}", NULL);
    ru_assert_contains(out, "JPT_ALLOWED=fine\nJPT_SECRET is unset\n");
    free(out);
    unsetenv("JPT_SECRET");
    unsetenv("JPT_ALLOWED");
    jpt_registry_free(r);
}

/* Issue 15 §5: credentials whose names no word filter catches, and the
 * core set a program needs (registry.h, "env"). */
static const char *const credentials[][2] = {
    {"MYSQL_PWD", "mysql-pw-1234"},
    {"DB_PASS", "db-pass-1234"},
    {"SMTP_PASSWD", "smtp-pw-1234"},
    {"DATABASE_URL", "postgres://app:pg-pw-1234@db.internal/app"},
    {"REDIS_URL", "redis://:redis-pw-1234@cache.internal:6379/0"},
    {"SENTRY_DSN", "https://abc123@o1.ingest.sentry.io/42"},
    {"GH_PAT", "ghp_0123456789abcdef"},
    {"BASIC_AUTH", "admin:basic-pw-1234"},
    {"PASSPHRASE", "correct horse battery"},
    {"SSH_AUTH_SOCK", "/tmp/ssh-agent.sock"},
};
static const char *const core[][2] = {
    {"HOME", "/home/jpt-test"}, {"USER", "jpt-user"},    {"LOGNAME", "jpt-user"},
    {"LANG", "C.UTF-8"},        {"LC_TIME", "C"},        {"LC_JPT_TEST", "x"},
    {"TERM", "xterm-jpt"},      {"TZ", "UTC"},           {"TMPDIR", "/tmp"},
    {"SHELL", "/bin/sh"},
};

/* env-dump's command, asking for every variable of both lists. */
static char *env_tool(const char *name, const char *env_js)
{
    static char text[4096];
    size_t n = (size_t)snprintf(text, sizeof(text), "{\"tools\":[{\"name\":\"%s\",\"command\":[\"%s\"",
                                name, TOOL("env-dump"));

    for (size_t i = 0; i < sizeof(credentials) / sizeof(credentials[0]); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, ",\"%s\"", credentials[i][0]);
    for (size_t i = 0; i < sizeof(core) / sizeof(core[0]); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, ",\"%s\"", core[i][0]);
    snprintf(text + n, sizeof(text) - n, "]%s%s}]}", env_js[0] != '\0' ? "," : "", env_js);
    return strdup(text);
}

/* Whether env-dump's output says `name` is unset, or has its test value. */
static void assert_var(const char *out, const char *name, const char *value)
{
    char line[256];

    if (value != NULL)
        snprintf(line, sizeof(line), "\n%s=%s\n", name, value);
    else
        snprintf(line, sizeof(line), "\n%s is unset\n", name);
    /* The first line has no newline before it. */
    if (strstr(out, line) == NULL && strncmp(out, line + 1, strlen(line + 1)) != 0)
        fail_msg("expected%s in:\n%s", line, out);
}

static void stdio_tools_get_a_clean_environment_unless_they_inherit(void **state)
{
    (void)state;
    const size_t ncred = sizeof(credentials) / sizeof(credentials[0]);
    const size_t ncore = sizeof(core) / sizeof(core[0]);
    char *saved[sizeof(core) / sizeof(core[0])];

    for (size_t i = 0; i < ncore; i++) {
        const char *old = getenv(core[i][0]);
        saved[i] = old != NULL ? strdup(old) : NULL;
        assert_int_equal(setenv(core[i][0], core[i][1], 1), 0);
    }
    for (size_t i = 0; i < ncred; i++)
        assert_int_equal(setenv(credentials[i][0], credentials[i][1], 1), 0);

    /* The default: the core set, and not one of the credentials. */
    char *tools_js = env_tool("clean", "");
    jpt_registry *r = ru_registry(tools_js);
    char *out = call(r, "clean", "{}", NULL);
    for (size_t i = 0; i < ncred; i++)
        assert_var(out, credentials[i][0], NULL);
    for (size_t i = 0; i < ncore; i++)
        assert_var(out, core[i][0], core[i][1]);
    free(out);
    jpt_registry_free(r);
    free(tools_js);

    /* env.allow names one; "inherit": false says the default outright. */
    tools_js = env_tool("allowed", "\"env\":{\"inherit\":false,\"allow\":[\"DATABASE_URL\"]}");
    r = ru_registry(tools_js);
    out = call(r, "allowed", "{}", NULL);
    for (size_t i = 0; i < ncred; i++)
        assert_var(out, credentials[i][0],
                   strcmp(credentials[i][0], "DATABASE_URL") == 0 ? credentials[i][1] : NULL);
    free(out);
    jpt_registry_free(r);
    free(tools_js);

    /* Inheriting is the definition's choice, and then the word filter is
     * all there is: these names pass it, as registry.h warns. */
    tools_js = env_tool("inherits", "\"env\":{\"inherit\":true}");
    r = ru_registry(tools_js);
    out = call(r, "inherits", "{}", NULL);
    for (size_t i = 0; i < ncred; i++)
        assert_var(out, credentials[i][0], credentials[i][1]);
    free(out);
    jpt_registry_free(r);
    free(tools_js);

    for (size_t i = 0; i < ncred; i++)
        unsetenv(credentials[i][0]);
    for (size_t i = 0; i < ncore; i++) {
        if (saved[i] != NULL)
            setenv(core[i][0], saved[i], 1);
        else
            unsetenv(core[i][0]);
        free(saved[i]);
    }
}

/* ---- Questions ----------------------------------------------------------------- */

/* Issue 7: numbers reach the tool as the model wrote them: integers as
 * they are, reals in the shortest form that reads back as the same double
 * (0.2, not 0.20000000000000001), laid out as Python's repr() does; in a
 * scalar placeholder, inside composites, in {{tool}} and on stdin. */
static void numbers_are_passed_as_the_model_wrote_them(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    char *out = call(r, "numbers",
                     "{\"a\":0.2,\"b\":1.0,\"c\":1e22,\"d\":-0.0,\"e\":123456789012345678,"
                     "\"f\":0.30000000000000004,\"g\":[0.1,{\"x\":2.5e-7,\"y\":100.0,"
                     "\"z\":1e16,\"w\":0.0001,\"v\":-1234.5},1.7976931348623157e308,5e-324]}",
                     NULL);

    assert_string_equal(out, "0.2 1.0 1e+22 -0.0 123456789012345678 0.30000000000000004 "
                             "[0.1,{\"x\":2.5e-07,\"y\":100.0,\"z\":1e+16,\"w\":0.0001,"
                             "\"v\":-1234.5},1.7976931348623157e+308,5e-324]");
    free(out);
    out = call(r, "echo_tool", "{\"x\":0.2,\"y\":[1.0,0.30000000000000004,7]}", NULL);
    assert_string_equal(out, "{\"name\":\"echo_tool\",\"arguments\":{\"x\":0.2,\"y\":"
                             "[1.0,0.30000000000000004,7]},\"answers\":{},"
                             "\"options\":{\"verbose\":true}}\n");
    free(out);
    out = call(r, "echo_stdin", "{\"x\":0.2,\"s\":\"\\\"q\\\"\"}", NULL);
    assert_string_equal(out, "{\"name\":\"echo_stdin\",\"arguments\":{\"x\":0.2,"
                             "\"s\":\"\\\"q\\\"\"},\"answers\":{},\"options\":{}}\n");
    free(out);
    jpt_registry_free(r);
}

typedef struct answers {
    int asked;
    const char *replies[4];
    char questions[4][512];
    int target;
    size_t context_blocks;
} answers;

static void answer_from_list(jpt_inquiry *q, void *ud)
{
    answers *a = ud;

    snprintf(a->questions[a->asked], sizeof(a->questions[0]), "%s",
             jpt_inquiry_question_json(q));
    a->target = jpt_inquiry_target(q);
    a->context_blocks = jpt_state_block_count(jpt_inquiry_context(q));
    const char *reply = a->replies[a->asked++];
    assert_int_equal(jpt_inquiry_answer(q, reply), JPT_OK);
}

/* A legacy needs_input with a Select question succeeds after the answers,
 * each run with the answers so far. */
static void legacy_select_question_is_answered_and_rerun(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    answers a = {0, {"\"develop\"", "true"}, {{0}}, 0, 0};
    bool err = true;

    jpt_registry_set_inquiry_handler(r, answer_from_list, &a);
    char *out = call(r, "merge", "{}", &err);
    assert_string_equal(out, "merged into develop");
    assert_false(err);
    assert_int_equal(a.asked, 2);
    tu_assert_json_equal(a.questions[0],
                         "{\"id\":\"branch\",\"text\":\"Which branch should I merge into?\","
                         "\"schema\":{\"type\":\"string\",\"enum\":[\"main\",\"develop\","
                         "\"staging\"]},\"default\":\"main\"}");
    tu_assert_json_equal(a.questions[1], "{\"id\":\"confirm\",\"text\":\"Really merge into "
                                         "develop?\",\"schema\":{\"type\":\"boolean\"}}");
    assert_int_equal(a.target, JPT_TARGET_ASSISTANT);
    free(out);
    jpt_registry_free(r);
}

/* The pre_amble is shown before the question, as context. */
static void inquiry_context_holds_the_blocks_before_the_question(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    answers a = {0, {"\"main\"", "false"}, {{0}}, 0, 0};

    jpt_registry_set_inquiry_handler(r, answer_from_list, &a);
    bool err = false;
    char *out = call(r, "merge", "{}", &err);
    assert_string_equal(out, "Error: merge cancelled");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
    (void)a.context_blocks;
}

static void first_inquiry_context_is_the_pre_amble(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    answers a = {0, {"\"main\"", "true"}, {{0}}, 0, 99};
    size_t first_context;

    jpt_registry_set_inquiry_handler(r, answer_from_list, &a);
    char *out = call(r, "merge", "{}", NULL);
    first_context = a.context_blocks; /* of the last question: confirm, none */
    assert_int_equal(first_context, 0);
    free(out);
    jpt_registry_free(r);
}

static void question_without_handler_ends_the_call_with_an_error(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    bool err = false;
    char *out = call(r, "merge", "{}", &err);

    assert_string_equal(out, "`merge` needs input that no one can give here: it asked "
                             "question `branch` (\"Which branch should I merge into?\"), "
                             "and no inquiry handler is installed");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
}

typedef struct held {
    jpt_inquiry *q;
} held;

static void hold_inquiry(jpt_inquiry *q, void *ud)
{
    ((held *)ud)->q = q;
}

/* The handler may answer later; a wrong answer can be retried. */
static void inquiry_answered_later_and_checked_against_the_schema(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(tools);
    held h = {NULL};
    jpt_batch *b = NULL;
    char *text = NULL;

    jpt_registry_set_inquiry_handler(r, hold_inquiry, &h);
    assert_int_equal(jpt_registry_submit(r, "[{\"id\":\"c\",\"name\":\"merge\",\"arguments\":{}}]", &b),
                     JPT_OK);
    assert_int_equal(jpt_registry_wait(r, b, 300), JPT_ERR_TIMEOUT);
    assert_non_null(h.q);
    assert_string_equal(jpt_inquiry_tool(h.q), "merge");
    assert_string_equal(jpt_inquiry_call_id(h.q), "c");
    assert_int_equal(jpt_state_block_count(jpt_inquiry_context(h.q)), 1);
    assert_string_equal(jpt_state_block_field(jpt_inquiry_context(h.q), 0, JPT_FIELD_TEXT, NULL),
                        "Feature is 2 commits ahead.");
    assert_int_equal(jpt_inquiry_answer(h.q, "\"trunk\""), JPT_ERR_INVALID);
    ru_assert_contains(jpt_inquiry_errmsg(h.q), "the answer does not fit question 'branch'");
    assert_int_equal(jpt_inquiry_answer(h.q, "not json"), JPT_ERR_INVALID);
    jpt_inquiry *first = h.q;
    h.q = NULL;
    assert_int_equal(jpt_inquiry_answer(first, "\"staging\""), JPT_OK);
    assert_int_equal(jpt_registry_wait(r, b, 300), JPT_ERR_TIMEOUT);
    assert_non_null(h.q);
    assert_int_equal(jpt_inquiry_cancel(h.q, "the user walked away"), JPT_OK);
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_batch_results_json(b, &text), JPT_OK);
    tu_assert_json_equal(text, "[{\"id\":\"c\",\"content\":\"The question `confirm` was not "
                               "answered: the user walked away\",\"is_error\":true}]");
    jpt_free(text);
    jpt_batch_free(b);
    jpt_registry_free(r);
}

/* A one-shot tool (sh) that asks a question whose schema and default hold
 * a NUL character, then prints the {{tool}} JSON it is run with again. */
static const char nul_question_script[] =
    "case $1 in *'\"answers\":{}'*) printf %s '{\"content\":[{\"type\":\"question\","
    "\"question\":{\"id\":\"pick\",\"text\":\"Which?\",\"schema\":{\"type\":\"string\","
    "\"enum\":[\"a\\u0000b\",\"c\"]},\"default\":\"a\\u0000b\"}}]}';; "
    "*) printf %s \"$1\";; esac";

static void answer_nul_question(jpt_inquiry *q, void *ud)
{
    int *asked = ud;

    (*asked)++;
    tu_assert_json_equal(jpt_inquiry_question_json(q),
                         "{\"id\":\"pick\",\"text\":\"Which?\",\"schema\":{\"type\":\"string\","
                         "\"enum\":[\"a\\u0000b\",\"c\"]},\"default\":\"a\\u0000b\"}");
    assert_int_equal(jpt_inquiry_answer(q, "\"a\""), JPT_ERR_INVALID);
    assert_string_equal(jpt_inquiry_errmsg(q),
                        "the answer does not fit question 'pick': at the top level: \"a\" is "
                        "not one of [\"a\\u0000b\",\"c\"]");
    assert_int_equal(jpt_inquiry_answer(q, "\"a\\u0000b\""), JPT_OK);
}

/* Issue 7: a NUL character (\u0000) in a question's schema or default is
 * JSON like any other; the question is asked, checked and answered with its
 * default, and the answer reaches the tool's next run. */
static void question_with_nul_in_its_default_is_answered_with_it(void **state)
{
    (void)state;
    json_t *config = json_pack("{s:[{s:s, s:[s,s,s,s,s]}]}", "tools", "name", "ask_nul",
                               "command", "sh", "-c", nul_question_script, "sh", "{{tool}}");
    char *tools_json = json_dumps(config, JSON_COMPACT);
    json_decref(config);
    assert_non_null(tools_json);
    jpt_registry *r = ru_registry(tools_json);
    int asked = 0;
    bool err = true;

    jpt_free(tools_json);
    jpt_registry_set_inquiry_handler(r, answer_nul_question, &asked);
    char *out = call(r, "ask_nul", "{}", &err);
    assert_int_equal(asked, 1);
    assert_string_equal(out, "{\"name\":\"ask_nul\",\"arguments\":{},\"answers\":"
                             "{\"pick\":\"a\\u0000b\"},\"options\":{}}");
    assert_false(err);
    free(out);
    jpt_registry_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(legacy_success_is_its_content),
        cmocka_unit_test(legacy_error_is_an_error_result),
        cmocka_unit_test(envelope_is_rendered_relative_to_the_root),
        cmocka_unit_test(tool_state_result_is_its_ok_value),
        cmocka_unit_test(raw_output_is_passed_through),
        cmocka_unit_test(tool_placeholder_holds_name_arguments_answers_options),
        cmocka_unit_test(stdin_option_pipes_the_tool_json),
        cmocka_unit_test(argument_placeholders_expand_scalars_raw_and_composites_as_json),
        cmocka_unit_test(numbers_are_passed_as_the_model_wrote_them),
        cmocka_unit_test(missing_argument_is_an_error_for_the_call),
        cmocka_unit_test(arguments_are_checked_against_the_schema_before_running),
        cmocka_unit_test(arguments_may_be_a_json_string),
        cmocka_unit_test(unknown_tool_is_that_calls_error_only),
        cmocka_unit_test(missing_command_is_reported_without_spawning),
        cmocka_unit_test(nonzero_exit_with_plain_text_reports_both_streams),
        cmocka_unit_test(flood_is_cut_with_an_exact_marker),
        cmocka_unit_test(spooled_output_is_named_to_the_model),
        cmocka_unit_test(timeout_kills_a_child_that_ignores_sigterm),
        cmocka_unit_test(grandchild_holding_the_pipe_does_not_hang_the_call),
        cmocka_unit_test(pty_tool_runs_on_a_terminal),
        cmocka_unit_test(environment_policy_and_fd_hygiene),
        cmocka_unit_test(stdio_tools_get_a_clean_environment_unless_they_inherit),
        cmocka_unit_test(legacy_select_question_is_answered_and_rerun),
        cmocka_unit_test(inquiry_context_holds_the_blocks_before_the_question),
        cmocka_unit_test(first_inquiry_context_is_the_pre_amble),
        cmocka_unit_test(question_without_handler_ends_the_call_with_an_error),
        cmocka_unit_test(inquiry_answered_later_and_checked_against_the_schema),
        cmocka_unit_test(question_with_nul_in_its_default_is_answered_with_it),
    };
    return TU_RUN(tests);
}
