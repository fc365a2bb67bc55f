/* Stateful calls on real processes (RFD 009): spawn, fetch, apply, abort on
 * git's interactive staging, a shell, Python, a line-echo program, a tool
 * speaking RFD 058 states with questions, and on a terminal. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry-util.h"

static jpt_registry *registry(const char *root, const char *tools)
{
    jpt_registry_options o = {sizeof(o), .root = root, .kill_grace_ms = 300,
                              .drain_ms = 100, .settle_ms = 200};
    return ru_registry_with(&o, tools);
}

static void assert_response(json_t *resp, const char *id, const char *state)
{
    assert_string_equal(field(resp, "id"), id);
    assert_string_equal(field(resp, "state"), state);
}

static void run_in(const char *dir, const char *cmd)
{
    char line[1024];
    snprintf(line, sizeof(line), "cd '%s' && %s", dir, cmd);
    assert_int_equal(system(line), 0);
}

static char *capture_in(const char *dir, const char *cmd)
{
    char line[1024];
    static char out[8192];
    snprintf(line, sizeof(line), "cd '%s' && %s", dir, cmd);
    FILE *p = popen(line, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    return out;
}

/* RFD 009's concrete example, for real: interactive staging of two hunks. */
static void git_add_patch_stages_exactly_the_first_hunk(void **state)
{
    (void)state;
    char dir[] = "/tmp/jpt-git-XXXXXX";
    assert_non_null(mkdtemp(dir));
    run_in(dir, "git init -q && git config user.email t@example.com && "
                "git config user.name t && seq 1 30 > f.txt && git add f.txt && "
                "git commit -qm init && sed -i 's/^2$/two/; s/^28$/twenty-eight/' f.txt");
    jpt_registry *r = registry(dir, "{\"tools\":[{\"name\":\"git\",\"stateful\":true,"
                                    "\"command\":[\"git\",\"add\",\"--patch\"],"
                                    "\"env\":{\"set\":{\"GIT_PAGER\":\"cat\"}}}]}");

    json_t *resp = act(r, "git", "{\"action\":\"spawn\",\"id\":\"staging\"}", NULL);
    assert_response(resp, "staging", "running");
    ru_assert_contains(field(resp, "content"), "+two");
    ru_assert_contains(field(resp, "content"), "(1/2) Stage this hunk");
    json_decref(resp);

    resp = act(r, "git", "{\"action\":\"apply\",\"id\":\"staging\",\"input\":\"y\\n\"}", NULL);
    assert_response(resp, "staging", "running");
    char seen[4096];
    snprintf(seen, sizeof(seen), "%s", field(resp, "content"));
    json_decref(resp);
    resp = act(r, "git", "{\"action\":\"fetch\",\"id\":\"staging\"}", NULL);
    assert_response(resp, "staging", "running");
    strncat(seen, field(resp, "content"), sizeof(seen) - strlen(seen) - 1);
    json_decref(resp);
    ru_assert_contains(seen, "+twenty-eight");
    ru_assert_contains(seen, "(2/2) Stage this hunk");

    resp = act(r, "git", "{\"action\":\"apply\",\"id\":\"staging\",\"input\":\"n\\n\"}", NULL);
    assert_response(resp, "staging", "stopped");
    ru_assert_contains(field(resp, "result"), "[process ended: exit status 0]");
    json_decref(resp);

    const char *cached = capture_in(dir, "git diff --cached -U0 | grep '^[-+][^-+]'");
    assert_string_equal(cached, "-2\n+two\n");
    /* The handle is gone once the model saw it stop. */
    bool err = false;
    char *out = ru_call(r, "git", "{\"action\":\"fetch\",\"id\":\"staging\"}", &err);
    assert_string_equal(out, "Handle `staging` has stopped, and an earlier answer gave its result");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
    run_in("/tmp", "rm -rf /tmp/jpt-git-*");
}

static void stopped_handle_is_removed_once_seen(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", "{\"tools\":[{\"name\":\"sh\",\"stateful\":true,"
                                       "\"command\":[\"sh\"]}]}");
    bool err = false;

    json_t *resp = act(r, "sh", "{\"action\":\"spawn\",\"id\":\"s\"}", NULL);
    json_decref(resp);
    resp = act(r, "sh", "{\"action\":\"apply\",\"id\":\"s\",\"input\":\"exit 0\\n\"}", NULL);
    assert_response(resp, "s", "stopped");
    json_decref(resp);
    char *out = ru_call(r, "sh", "{\"action\":\"fetch\",\"id\":\"s\"}", &err);
    assert_string_equal(out, "Handle `s` has stopped, and an earlier answer gave its result");
    assert_true(err);
    free(out);
    /* The id is free again. */
    resp = act(r, "sh", "{\"action\":\"spawn\",\"id\":\"s\"}", NULL);
    assert_response(resp, "s", "running");
    json_decref(resp);
    jpt_registry_free(r);
}

/* A persistent shell: commands in, output out, abort at the end. */
static void shell_session_runs_commands_until_aborted(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", "{\"tools\":[{\"name\":\"sh\",\"stateful\":true,"
                                       "\"command\":[\"sh\"]}]}");

    json_t *resp = act(r, "sh", "{\"action\":\"spawn\",\"id\":\"shell\"}", NULL);
    assert_response(resp, "shell", "running");
    assert_string_equal(field(resp, "content"), "");
    json_decref(resp);
    resp = act(r, "sh", "{\"action\":\"apply\",\"id\":\"shell\",\"input\":\"echo hello; pwd\\n\"}",
               NULL);
    assert_response(resp, "shell", "running");
    assert_string_equal(field(resp, "content"), "hello\n/tmp\n");
    json_decref(resp);
    resp = act(r, "sh", "{\"action\":\"apply\",\"id\":\"shell\",\"input\":\"X=41; echo $((X+1)) >&2\\n\"}",
               NULL);
    assert_string_equal(field(resp, "content"), "42\n");
    json_decref(resp);
    resp = act(r, "sh", "{\"action\":\"fetch\",\"id\":\"shell\"}", NULL);
    assert_response(resp, "shell", "running");
    assert_string_equal(field(resp, "content"), "");
    json_decref(resp);
    bool err = true;
    resp = act(r, "sh", "{\"action\":\"abort\",\"id\":\"shell\"}", &err);
    assert_response(resp, "shell", "stopped");
    assert_string_equal(field(resp, "result"), "[process ended: aborted]");
    assert_false(err);
    json_decref(resp);
    jpt_registry_free(r);
}

static void python_repl_keeps_its_state(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", "{\"tools\":[{\"name\":\"py\",\"stateful\":true,"
                                       "\"command\":[\"python3\",\"-i\",\"-q\",\"-u\"]}]}");

    json_t *resp = act(r, "py", "{\"action\":\"spawn\",\"id\":\"repl\"}", NULL);
    assert_response(resp, "repl", "running");
    json_decref(resp);
    resp = act(r, "py", "{\"action\":\"apply\",\"id\":\"repl\",\"input\":\"x = 6 * 7\\n\"}", NULL);
    json_decref(resp);
    /* wait_secs: under load the interpreter may start after the settle
     * window of the earlier actions; the model would wait the same way. */
    resp = act(r, "py",
               "{\"action\":\"apply\",\"id\":\"repl\",\"input\":\"print(x)\\n\",\"wait_secs\":20}",
               NULL);
    ru_assert_contains(field(resp, "content"), "42\n");
    json_decref(resp);
    resp = act(r, "py", "{\"action\":\"apply\",\"id\":\"repl\",\"input\":\"raise SystemExit(3)\\n\"}",
               NULL);
    assert_response(resp, "repl", "stopped");
    /* As a failed one-shot run reads (issue 16). */
    ru_assert_contains(field(resp, "error"), "The tool failed (exit status 3).");
    json_decref(resp);
    jpt_registry_free(r);
}

static const char echo_tools[] =
    "{\"tools\":[{\"name\":\"echo\",\"stateful\":true,\"command\":[\"" TOOL("echo-lines") "\"]},"
    "{\"name\":\"echo_tty\",\"stateful\":true,\"pty\":true,\"command\":[\"" TOOL("echo-lines") "\"]},"
    "{\"name\":\"check\",\"stateful\":true,\"actions\":[\"fetch\",\"abort\"],"
    " \"command\":[\"" TOOL("sleep-ms") "\",\"{{arguments.ms}}\",\"started\"],"
    " \"parameters\":{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}},"
    " \"required\":[\"ms\"]}},"
    "{\"name\":\"counter\",\"stateful\":true,\"command\":[\"" TOOL("stateful-counter") "\"]},"
    "{\"name\":\"stubborn\",\"stateful\":true,\"command\":[\"" TOOL("ignore-term") "\"]},"
    "{\"name\":\"nap\",\"stateful\":true,\"command\":[\"" TOOL("sleep-ms") "\",\"300\"]}"
    "]}";

static void line_echo_answers_each_line(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", echo_tools);

    json_t *resp = act(r, "echo", "{\"action\":\"spawn\",\"id\":\"e\"}", NULL);
    assert_string_equal(field(resp, "content"), "ready\n> ");
    json_decref(resp);
    resp = act(r, "echo", "{\"action\":\"apply\",\"id\":\"e\",\"input\":\"hi there\\n\"}", NULL);
    assert_string_equal(field(resp, "content"), "echo: hi there\n> ");
    json_decref(resp);
    /* Input that is not a string is sent as JSON text. */
    resp = act(r, "echo", "{\"action\":\"apply\",\"id\":\"e\",\"input\":{\"n\":1}}", NULL);
    json_decref(resp);
    resp = act(r, "echo", "{\"action\":\"apply\",\"id\":\"e\",\"input\":\"\\nquit\\n\"}", NULL);
    assert_response(resp, "e", "stopped");
    assert_string_equal(field(resp, "result"),
                        "echo: {\"n\":1}\n> bye\n\n[process ended: exit status 0]");
    json_decref(resp);
    jpt_registry_free(r);
}

static void pty_session_echoes_through_the_terminal(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", echo_tools);

    json_t *resp = act(r, "echo_tty", "{\"action\":\"spawn\",\"id\":\"t\"}", NULL);
    /* The terminal's "\r\n" reaches the model as "\n" (issue 16). */
    assert_string_equal(field(resp, "content"), "ready\n> ");
    json_decref(resp);
    resp = act(r, "echo_tty", "{\"action\":\"apply\",\"id\":\"t\",\"input\":\"abc\\n\"}", NULL);
    /* The terminal echoes the input, then the program answers. */
    assert_string_equal(field(resp, "content"), "abc\necho: abc\n> ");
    json_decref(resp);
    resp = act(r, "echo_tty", "{\"action\":\"abort\",\"id\":\"t\"}", NULL);
    assert_response(resp, "t", "stopped");
    json_decref(resp);
    jpt_registry_free(r);
}

/* A tool speaking RFD 058 envelopes: running, then waiting with a
 * question, answered through apply (RFD 009: routed by the handle's state). */
static void structured_tool_waits_and_takes_its_answer(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", echo_tools);
    bool err;

    json_t *resp = act(r, "counter", "{\"action\":\"spawn\",\"id\":\"n\"}", NULL);
    assert_response(resp, "n", "running");
    assert_string_equal(field(resp, "content"), "count=0");
    json_decref(resp);
    resp = act(r, "counter", "{\"action\":\"apply\",\"id\":\"n\",\"input\":\"inc\\n\"}", NULL);
    assert_string_equal(field(resp, "content"), "count=1");
    json_decref(resp);
    resp = act(r, "counter", "{\"action\":\"apply\",\"id\":\"n\",\"input\":\"ask\\n\"}", NULL);
    assert_response(resp, "n", "waiting");
    assert_string_equal(field(resp, "content"), "Question [reset]: Reset the counter?\n"
                                                "Expected answer: true or false\nDefault: false");
    json_decref(resp);
    char *out = ru_call(r, "counter", "{\"action\":\"apply\",\"id\":\"n\",\"input\":\"yes\"}", &err);
    assert_string_equal(out, "The answer does not fit question `reset` of handle `n`: at the "
                             "top level: expected boolean, got string");
    assert_true(err);
    free(out);
    resp = act(r, "counter", "{\"action\":\"apply\",\"id\":\"n\",\"input\":true}", NULL);
    assert_response(resp, "n", "running");
    assert_string_equal(field(resp, "content"), "count=0 (reset)");
    json_decref(resp);
    resp = act(r, "counter", "{\"action\":\"apply\",\"id\":\"n\",\"input\":\"stop\\n\"}", &err);
    assert_response(resp, "n", "stopped");
    assert_string_equal(field(resp, "result"), "final count=0");
    assert_false(err);
    json_decref(resp);
    jpt_registry_free(r);
}

/* Output that arrives while nobody waits is kept for the next fetch, and
 * announced by one OUTPUT event; the stop by a STATE event. */
static void fetch_returns_output_since_last_fetch_and_events_announce_it(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", echo_tools);
    jpt_event *e;

    json_t *resp = act(r, "check", "{\"action\":\"spawn\",\"id\":\"chk\",\"ms\":400}", NULL);
    assert_response(resp, "chk", "running");
    assert_string_equal(field(resp, "content"), "started");
    json_decref(resp);
    /* Drain the spawn's events. */
    while (jpt_registry_next_event(r, &e) == JPT_OK)
        jpt_event_free(e);

    bool stopped = false, output = false;
    for (int i = 0; i < 1000 && !stopped; i++) {
        ru_poll(r, 50);
        jpt_registry_dispatch(r);
        while (jpt_registry_next_event(r, &e) == JPT_OK) {
            if (jpt_event_type(e) == JPT_EVENT_OUTPUT) {
                assert_string_equal(jpt_event_handle_id(e), "chk");
                assert_string_equal(jpt_event_tool(e), "check");
                output = true;
            }
            if (jpt_event_type(e) == JPT_EVENT_STATE) {
                assert_int_equal(jpt_event_state(e), JPT_STATE_STOPPED);
                stopped = true;
            }
            jpt_event_free(e);
        }
    }
    assert_true(output);
    assert_true(stopped);
    resp = act(r, "check", "{\"action\":\"fetch\",\"id\":\"chk\"}", NULL);
    assert_response(resp, "chk", "stopped");
    assert_string_equal(field(resp, "result"), "slept 400\n\n[process ended: exit status 0]");
    json_decref(resp);
    jpt_registry_free(r);
}

static void errors_are_model_visible_results(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", echo_tools);
    json_t *res = ru_run(r,
        "[{\"id\":\"1\",\"name\":\"echo\",\"arguments\":{\"action\":\"fetch\",\"id\":\"ghost\"}},"
        "{\"id\":\"2\",\"name\":\"check\",\"arguments\":{\"action\":\"apply\",\"id\":\"x\",\"input\":1}},"
        "{\"id\":\"3\",\"name\":\"echo\",\"arguments\":{\"action\":\"spawn\",\"id\":\"bad id!\"}},"
        "{\"id\":\"4\",\"name\":\"echo\",\"arguments\":{\"action\":\"launch\",\"id\":\"a\"}},"
        "{\"id\":\"5\",\"name\":\"check\",\"arguments\":{\"action\":\"spawn\",\"id\":\"c\"}},"
        "{\"id\":\"6\",\"name\":\"echo\",\"arguments\":{\"action\":\"spawn\"}}]");

    assert_string_equal(ru_content(res, 0), "Handle `ghost` not found");
    assert_string_equal(ru_content(res, 1), "`check` does not support the action `apply` "
                                            "(it supports: spawn, fetch, abort)");
    assert_string_equal(ru_content(res, 2), "`spawn` needs an `id`: 1 to 64 characters of "
                                            "A-Z, a-z, 0-9, '_', '.' and '-'; `bad id!` holds "
                                            "other characters");
    assert_string_equal(ru_content(res, 3), "`echo` does not support the action `launch` "
                                            "(it supports: spawn, fetch, apply, abort)");
    assert_string_equal(ru_content(res, 4), "Invalid arguments for `check`: at the top level: "
                                            "missing required property \"ms\"");
    assert_string_equal(ru_content(res, 5), "`spawn` needs an `id`: 1 to 64 characters of "
                                            "A-Z, a-z, 0-9, '_', '.' and '-'");
    for (size_t i = 0; i < 6; i++)
        assert_true(ru_is_error(res, i));
    json_decref(res);

    /* An id given but not one: what is wrong with it, not that none came
     * (a model then sends the same again); a long one is not echoed. */
    char calls[12000];
    snprintf(calls, sizeof(calls),
             "[{\"id\":\"1\",\"name\":\"echo\",\"arguments\":{\"action\":\"fetch\",\"id\":\"%0*d\"}},"
             "{\"id\":\"2\",\"name\":\"echo\",\"arguments\":{\"action\":\"abort\",\"id\":7}},"
             "{\"id\":\"3\",\"name\":\"echo\",\"arguments\":{\"action\":\"spawn\",\"id\":\"\"}}]",
             10000, 0);
    res = ru_run(r, calls);
    assert_string_equal(ru_content(res, 0), "`fetch` needs an `id`: 1 to 64 characters of "
                                            "A-Z, a-z, 0-9, '_', '.' and '-'; the `id` given "
                                            "is 10000 bytes long");
    assert_string_equal(ru_content(res, 1), "`abort` needs an `id`: 1 to 64 characters of "
                                            "A-Z, a-z, 0-9, '_', '.' and '-'; the `id` given "
                                            "is an integer");
    assert_string_equal(ru_content(res, 2), "`spawn` needs an `id`: 1 to 64 characters of "
                                            "A-Z, a-z, 0-9, '_', '.' and '-'; the `id` given "
                                            "is 0 bytes long");
    json_decref(res);

    json_t *resp = act(r, "echo", "{\"action\":\"spawn\",\"id\":\"dup\"}", NULL);
    json_decref(resp);
    bool err = false;
    char *out = ru_call(r, "echo", "{\"action\":\"spawn\",\"id\":\"dup\"}", &err);
    /* RFD 037: the collision is found before the batch runs. */
    assert_string_equal(out, "This batch was not run: handle ID `dup` cannot be used (an "
                             "active handle already uses it). Choose unique ids and send the "
                             "calls again.");
    assert_true(err);
    free(out);
    out = ru_call(r, "echo", "{\"action\":\"apply\",\"id\":\"dup\"}", &err);
    assert_string_equal(out, "`apply` needs an `input`");
    free(out);
    /* A handle belongs to its tool. */
    out = ru_call(r, "check", "{\"action\":\"fetch\",\"id\":\"dup\"}", &err);
    assert_string_equal(out, "Handle `dup` not found");
    free(out);
    jpt_registry_free(r);
}

/* A handle that stopped unseen keeps its final state for the model, and
 * takes no more input. */
static void apply_to_a_stopped_handle_is_refused(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", echo_tools);
    jpt_event *e;
    bool err = false, stopped = false;

    json_t *resp = act(r, "nap", "{\"action\":\"spawn\",\"id\":\"q\"}", NULL);
    assert_response(resp, "q", "running");
    json_decref(resp);
    for (int i = 0; i < 1000 && !stopped; i++) {
        ru_poll(r, 50);
        jpt_registry_dispatch(r);
        while (jpt_registry_next_event(r, &e) == JPT_OK) {
            stopped |= jpt_event_type(e) == JPT_EVENT_STATE;
            jpt_event_free(e);
        }
    }
    assert_true(stopped);
    char *out = ru_call(r, "nap", "{\"action\":\"apply\",\"id\":\"q\",\"input\":\"x\"}", &err);
    assert_string_equal(out, "Handle `q` has stopped and takes no input");
    assert_true(err);
    free(out);
    resp = act(r, "nap", "{\"action\":\"fetch\",\"id\":\"q\"}", NULL);
    assert_response(resp, "q", "stopped");
    assert_string_equal(field(resp, "result"), "slept 300\n\n[process ended: exit status 0]");
    json_decref(resp);
    jpt_registry_free(r);
}

/* Freeing the registry ends every handle: SIGTERM, the grace period,
 * SIGKILL, and every child reaped (the hygiene check sees none left). */
static void registry_free_kills_a_child_that_ignores_sigterm(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", echo_tools);

    json_t *resp = act(r, "stubborn", "{\"action\":\"spawn\",\"id\":\"s\"}", NULL);
    assert_string_equal(field(resp, "content"), "ignoring SIGTERM\n");
    json_decref(resp);
    resp = act(r, "echo", "{\"action\":\"spawn\",\"id\":\"e\"}", NULL);
    json_decref(resp);
    jpt_registry_free(r);
}

static void abort_escalates_to_sigkill(void **state)
{
    (void)state;
    jpt_registry *r = registry("/tmp", echo_tools);

    json_t *resp = act(r, "stubborn", "{\"action\":\"spawn\",\"id\":\"s\"}", NULL);
    json_decref(resp);
    resp = act(r, "stubborn", "{\"action\":\"abort\",\"id\":\"s\"}", NULL);
    assert_response(resp, "s", "stopped");
    assert_string_equal(field(resp, "result"), "[process ended: aborted]");
    json_decref(resp);
    jpt_registry_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(git_add_patch_stages_exactly_the_first_hunk),
        cmocka_unit_test(stopped_handle_is_removed_once_seen),
        cmocka_unit_test(shell_session_runs_commands_until_aborted),
        cmocka_unit_test(python_repl_keeps_its_state),
        cmocka_unit_test(line_echo_answers_each_line),
        cmocka_unit_test(pty_session_echoes_through_the_terminal),
        cmocka_unit_test(structured_tool_waits_and_takes_its_answer),
        cmocka_unit_test(fetch_returns_output_since_last_fetch_and_events_announce_it),
        cmocka_unit_test(errors_are_model_visible_results),
        cmocka_unit_test(apply_to_a_stopped_handle_is_refused),
        cmocka_unit_test(registry_free_kills_a_child_that_ignores_sigterm),
        cmocka_unit_test(abort_escalates_to_sigkill),
    };
    return TU_RUN(tests);
}
