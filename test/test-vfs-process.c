/* process.run (vfs.h, "process.run"; D11 "Process methods"; issue 10 §2)
 * through a real host and real tool processes (test/tools/vfs-probe):
 * what the child sees (only PATH and the variables it may have, never a
 * loader variable; the workspace root as its directory; only fds 0-2), the
 * commands rules and their `**` prefixes, a program without a rule denied
 * or asked, scrubbed output, the timeout killing the whole process group,
 * the output limit, a workspace that is not a directory, fs.* served while
 * processes run, the tool's end and cancel killing its processes, D11's
 * result shape, the SDK's jpt_vfs_tool_process_run, and a registry's vfs tool. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jptool/vfs_tool.h>

#include "registry-util.h"
#include "test-files-util.h"
#include "test-util.h"

#define PROBE TOOL("vfs-probe")
#define ENV_DUMP TOOL("env-dump")
#define FLOOD TOOL("flood")
#define MARK "[REDACTED]"

static char root[200], real_root[4096];

/* Variables of the test's own environment: some forwarded, some that must
 * never reach a child. */
static const char *const test_env[][2] = {
    {"JPT_TEST_PLAIN", "hello"}, /* shorter than 8 bytes: not scrubbed */
    {"JPT_TEST_SECRET", "s3cret-Value/with+chars="},
    {"JPT_TEST_SHORT", "abc1234"},
    {"LD_LIBRARY_PATH", "/nonexistent-jpt-test"},
    {"LD_BIND_NOW", "1"},
    {"GCONV_PATH", "/nonexistent-jpt-test"},
};

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/jpt-vfs-process-%d", (int)getpid());
    fu_rmtree(root);
    assert_int_equal(mkdir(root, 0755), 0);
    assert_non_null(realpath(root, real_root));
    for (size_t i = 0; i < sizeof(test_env) / sizeof(test_env[0]); i++)
        assert_int_equal(setenv(test_env[i][0], test_env[i][1], 1), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(test_env) / sizeof(test_env[0]); i++)
        unsetenv(test_env[i][0]);
    fu_rmtree(root);
    return 0;
}

/* ---- Running a probe ------------------------------------------------------------- */

typedef struct asked {
    int count;
    int decision;
    const char *reason;
    char last[1024];
} asked;

static void on_ask(jpt_policy_request *req, void *ud)
{
    asked *a = ud;

    a->count++;
    snprintf(a->last, sizeof(a->last), "%s %s [%s] %d: %s", jpt_policy_request_method(req),
             jpt_policy_request_path(req), jpt_policy_request_tool(req),
             jpt_policy_request_access(req), jpt_policy_request_reason(req));
    assert_int_equal(jpt_policy_request_answer(req, a->decision, a->reason), JPT_OK);
}

static jpt_vfs_host *host_with(jpt_files *files, const char *sandbox_js, asked *a)
{
    jpt_vfs_host_options o = {.size = sizeof(o), .root = files == NULL ? root : NULL,
                              .files = files, .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode()};
    jpt_vfs_host *h = NULL;

    o.sandbox_json = sandbox_js != NULL ? js(sandbox_js) : NULL;
    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    if (a != NULL)
        jpt_vfs_host_set_policy_handler(h, on_ask, a);
    return h;
}

/* Starts the probe with `arguments` (taken). */
static void spawn(jpt_vfs_host *h, json_t *arguments)
{
    const char *argv[] = {PROBE, NULL};
    json_t *tool = json_pack("{s:s, s:o}", "name", "probe", "arguments", arguments);
    char *text = json_dumps(tool, JSON_COMPACT);

    if (jpt_vfs_host_spawn(h, argv, text) != JPT_OK)
        fail_msg("spawn: %s", jpt_vfs_host_errmsg(h));
    free(text);
    json_decref(tool);
}

/* The tool's end: "ok: text" or "error: text". */
static char *end_of(jpt_vfs_host *h)
{
    jpt_state *st = NULL;
    char *text = NULL, *out = NULL;

    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_vfs_host_state(h, &st), JPT_OK);
    assert_int_equal(jpt_state_render(st, NULL, &text), JPT_OK);
    assert_true(asprintf(&out, "%s: %s", jpt_state_is_error(st) ? "error" : "ok", text) > 0);
    jpt_free(text);
    jpt_state_unref(st);
    return out;
}

/* Runs the probe to its end on a directory host. */
static char *probe(const char *sandbox_js, json_t *arguments, asked *a)
{
    jpt_vfs_host *h = host_with(NULL, sandbox_js, a);

    spawn(h, arguments);
    char *end = end_of(h);
    jpt_vfs_host_free(h);
    return end;
}

/* {"ops": [process.run with each params]}: the params are taken. */
static json_t *run_ops(size_t n, json_t *const *params)
{
    json_t *ops = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(ops, json_pack("{s:s, s:o}", "method", "process.run", "params",
                                             params[i]));
    return json_pack("{s:o}", "ops", ops);
}

/* One process.run through the probe: the line it reported. */
static char *run_one(const char *sandbox_js, json_t *params, asked *a)
{
    char *end = probe(sandbox_js, run_ops(1, &params), a);
    char *line = NULL;

    if (strncmp(end, "ok: ", 4) != 0)
        fail_msg("the probe failed: %s", end);
    line = strdup(end + 4);
    free(end);
    return line;
}

/* The result of a process.run that succeeded, parsed. */
static json_t *run_ok(const char *sandbox_js, json_t *params, asked *a)
{
    char *line = run_one(sandbox_js, params, a);
    static const char prefix[] = "process.run ok ";

    if (strncmp(line, prefix, sizeof(prefix) - 1) != 0)
        fail_msg("expected a result, got: %s", line);
    json_t *result = parse(line + sizeof(prefix) - 1);
    free(line);
    return result;
}

/* A process.run that failed with `code` and exactly `message`. */
static void run_err(const char *sandbox_js, json_t *params, asked *a, int code,
                    const char *message)
{
    char *line = run_one(sandbox_js, params, a);
    char expected[2048];

    snprintf(expected, sizeof(expected), "process.run err %d %s", code, message);
    if (strcmp(line, expected) != 0)
        fail_msg("expected\n  %s\ngot\n  %s", expected, line);
    free(line);
}

static json_t *params_argv(const char *program, const char *const *args, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(args[i]));
    return json_pack("{s:s, s:o}", "program", program, "args", a);
}

static json_t *sh(const char *script)
{
    const char *args[] = {"-c", script};
    return params_argv("sh", args, 2);
}

static void assert_string_member(const json_t *o, const char *key, const char *expected)
{
    const char *got = json_string_value(json_object_get(o, key));
    if (got == NULL || strcmp(got, expected) != 0)
        fail_msg("%s: expected\n  \"%s\"\ngot\n  \"%s\"", key, expected, got ? got : "(none)");
}

/* Whether process `pid` is gone: no /proc entry, or a zombie waiting for
 * whoever adopted it. */
static bool is_dead(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    long n = ru_read_text(path, buf, sizeof(buf));
    if (n < 0)
        return true;
    const char *close_paren = strrchr(buf, ')');
    return close_paren != NULL && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

/* The pid a script left in `name` under the root is dead, or dies within
 * WAIT_MS (SIGKILL is delivered, not awaited). */
static void assert_pid_file_dead(const char *name)
{
    char path[512], text[64];
    snprintf(path, sizeof(path), "%s/%s", root, name);
    assert_true(ru_read_text(path, text, sizeof(text)) > 0);
    pid_t pid = (pid_t)atoi(text);
    assert_true(pid > 1);
    uint64_t deadline = ru_now_ms() + (uint64_t)WAIT_MS;
    while (!is_dead(pid) && ru_now_ms() < deadline) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!is_dead(pid)) {
        kill(pid, SIGKILL);
        fail_msg("process %d from %s outlived its process.run", (int)pid, name);
    }
    unlink(path);
}

/* ---- What the child sees ---------------------------------------------------------- */

static void the_child_sees_only_path_and_the_variables_it_may_have(void **state)
{
    (void)state;
    char expected[8192];
    const char *path = getenv("PATH");

    json_t *r = run_ok("{'commands':{'env':{}}}", json_pack("{s:s}", "program", "env"), NULL);
    snprintf(expected, sizeof(expected), "PATH=%s\n", path);
    assert_string_member(r, "stdout", expected);
    assert_string_member(r, "stderr", "");
    json_decref(r);

    /* Listed and asked for: forwarded once; listed, asked for, unset:
     * nothing; listed, not asked for: nothing. */
    r = run_ok("{'commands':{'env':{'envs':['JPT_TEST_PLAIN','JPT_TEST_UNSET','HOME']}}}",
               json_pack("{s:s, s:[s,s,s]}", "program", "env", "envs", "JPT_TEST_PLAIN",
                         "JPT_TEST_UNSET", "JPT_TEST_PLAIN"),
               NULL);
    snprintf(expected, sizeof(expected), "PATH=%s\nJPT_TEST_PLAIN=hello\n", path);
    assert_string_member(r, "stdout", expected);
    json_decref(r);
}

static void the_child_runs_in_the_root_with_only_its_stdio(void **state)
{
    (void)state;
    char sandbox[512], expected[4200];
    const char *args[] = {"LD_LIBRARY_PATH", "GCONV_PATH", "LD_BIND_NOW"};

    snprintf(sandbox, sizeof(sandbox), "{'commands':{'%s':{}}}", ENV_DUMP);
    json_t *r = run_ok(sandbox, params_argv(ENV_DUMP, args, 3), NULL);
    snprintf(expected, sizeof(expected),
             "LD_LIBRARY_PATH is unset\nGCONV_PATH is unset\nLD_BIND_NOW is unset\n"
             "cwd=%s\nfds=0 1 2\n",
             real_root);
    assert_string_member(r, "stdout", expected);
    json_decref(r);
}

/* ---- The policy -------------------------------------------------------------------- */

static void argument_lists_decide_what_runs(void **state)
{
    (void)state;
    const char *a1[] = {"hello", "a", "b"}, *a2[] = {"hello"}, *a3[] = {"exact"},
               *a4[] = {"exact", "more"}, *a5[] = {"other"};
    json_t *params[] = {params_argv("echo", a1, 3), params_argv("echo", a2, 1),
                        params_argv("echo", a3, 1), params_argv("echo", a4, 2),
                        params_argv("echo", a5, 1), params_argv("echo", NULL, 0)};
    char *end = probe("{'uncovered':'deny','commands':{'echo':{'args':[['hello','**'],"
                      "['exact']]}}}",
                      run_ops(6, params), NULL);
    static const char denied[] =
        "process.run err -32001 process.run 'echo': denied: not covered by the policy (the "
        "arguments match none of commands.echo.args)";
    char expected[2048];
    snprintf(expected, sizeof(expected),
             "ok: process.run ok {\"stdout\":\"hello a b\\n\",\"stderr\":\"\",\"exit_code\":0}\n"
             "process.run ok {\"stdout\":\"hello\\n\",\"stderr\":\"\",\"exit_code\":0}\n"
             "process.run ok {\"stdout\":\"exact\\n\",\"stderr\":\"\",\"exit_code\":0}\n"
             "%s\n%s\n%s",
             denied, denied, denied);
    assert_string_equal(end, expected);
    free(end);
}

static void a_program_without_a_rule_is_denied_or_asked(void **state)
{
    (void)state;
    const char *hi[] = {"hi"};

    run_err("{'uncovered':'deny'}", json_pack("{s:s}", "program", "ls"), NULL, -32001,
            "process.run 'ls': denied: not covered by the policy (commands has no rule for "
            "this program)");
    run_err(NULL, params_argv("echo", hi, 1), NULL, -32001,
            "process.run '[\"echo\",\"hi\"]': needs approval: not covered by the policy "
            "(commands has no rule for this program); no one could be asked (the host has no "
            "policy handler), so it is denied");

    asked a = {.decision = JPT_DECISION_ALLOW};
    json_t *r = run_ok(NULL, params_argv("echo", hi, 1), &a);
    assert_string_member(r, "stdout", "hi\n");
    json_decref(r);
    assert_int_equal(a.count, 1);
    char expected[512];
    snprintf(expected, sizeof(expected),
             "process.run [\"echo\",\"hi\"] [probe] %d: needs approval: not covered by the "
             "policy (commands has no rule for this program)",
             JPT_ACCESS_PROCESS);
    assert_string_equal(a.last, expected);

    asked d = {.decision = JPT_DECISION_DENY, .reason = "not today"};
    run_err(NULL, params_argv("echo", hi, 1), &d, -32001,
            "process.run '[\"echo\",\"hi\"]': denied by the host: not today");

    /* Always: the same command line is not asked again; another is. */
    asked always = {.decision = JPT_DECISION_ALLOW_ALWAYS};
    const char *other[] = {"other"};
    json_t *params[] = {params_argv("echo", hi, 1), params_argv("echo", hi, 1),
                        params_argv("echo", other, 1)};
    char *end = probe(NULL, run_ops(3, params), &always);
    assert_string_equal(
        end, "ok: process.run ok {\"stdout\":\"hi\\n\",\"stderr\":\"\",\"exit_code\":0}\n"
             "process.run ok {\"stdout\":\"hi\\n\",\"stderr\":\"\",\"exit_code\":0}\n"
             "process.run ok {\"stdout\":\"other\\n\",\"stderr\":\"\",\"exit_code\":0}");
    free(end);
    assert_int_equal(always.count, 2);
}

static void variables_must_be_listed_to_be_forwarded(void **state)
{
    (void)state;
    static const char sandbox[] = "{'commands':{'env':{'envs':['JPT_TEST_PLAIN']}}}";

    run_err(sandbox, json_pack("{s:s, s:[s]}", "program", "env", "envs", "HOME"), NULL, -32001,
            "process.run 'env': envs[0] 'HOME' is not in commands.env.envs");
    run_err(sandbox, json_pack("{s:s, s:[s,s]}", "program", "env", "envs", "JPT_TEST_PLAIN",
                               "LD_PRELOAD"),
            NULL, -32001,
            "process.run 'env': envs[1] 'LD_PRELOAD' is read by the dynamic loader or the C "
            "library to load code or files, and is never forwarded");
    run_err(sandbox, json_pack("{s:s, s:[s]}", "program", "env", "envs", "1X"), NULL, -32602,
            "process.run 'env': envs[0] '1X' is not an environment variable name (letters, "
            "digits and '_', not starting with a digit)");
    run_err(sandbox, json_pack("{s:s, s:[s]}", "program", "printenv", "envs", "JPT_TEST_PLAIN"),
            NULL, -32001,
            "process.run 'printenv': envs[0] 'JPT_TEST_PLAIN' cannot be forwarded: commands "
            "has no rule for this program");
    /* PATH is always given, so always allowed. */
    json_t *r = run_ok(sandbox, json_pack("{s:s, s:[s]}", "program", "env", "envs", "PATH"), NULL);
    char expected[4200];
    snprintf(expected, sizeof(expected), "PATH=%s\n", getenv("PATH"));
    assert_string_member(r, "stdout", expected);
    json_decref(r);
}

/* ---- Scrubbing ------------------------------------------------------------------------- */

static char *base64(const char *p, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = (const unsigned char *)p;
    char *out = malloc(n * 2 + 8), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? s[i + 2] : 0);
        *o++ = a[(v >> 18) & 63];
        *o++ = a[(v >> 12) & 63];
        *o++ = i + 1 < n ? a[(v >> 6) & 63] : '=';
        *o++ = i + 2 < n ? a[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static void forwarded_values_are_scrubbed_from_stdout_and_stderr(void **state)
{
    (void)state;
    static const char script[] =
        "v=\"$JPT_TEST_SECRET\"\n"
        "echo \"raw:$v\"\n"
        "printf '%s' \"$v\" | base64\n"
        "printf 'x%s' \"$v\" | base64\n"
        "echo 'url:s3cret-Value%2Fwith%2Bchars%3D'\n"
        "echo 'json:s3cret-Value\\/with+chars='\n"
        /* the value in two writes, read apart */
        "printf '%s' \"${v%????????????}\"; sleep 0.2; printf '%s\\n' \"${v#????????????}\"\n"
        "echo \"short:$JPT_TEST_SHORT\"\n"
        "echo \"err:$v\" >&2\n";
    json_t *params = sh(script);
    json_object_set_new(params, "envs", json_pack("[s,s]", "JPT_TEST_SECRET", "JPT_TEST_SHORT"));
    json_t *r = run_ok("{'commands':{'sh':{'envs':['JPT_TEST_SECRET','JPT_TEST_SHORT']}}}",
                       params, NULL);

    /* "x" + the value: the characters the value alone decides go. */
    const char *secret = getenv("JPT_TEST_SECRET");
    char shifted_in[64];
    snprintf(shifted_in, sizeof(shifted_in), "x%s", secret);
    char *shifted = base64(shifted_in, strlen(shifted_in));
    size_t n = strlen(secret), first = (8 + 5) / 6, end = 8 * (1 + n) / 6;
    char expected[1024];
    snprintf(expected, sizeof(expected),
             "raw:" MARK "\n" MARK "\n%.*s" MARK "%s\nurl:" MARK "\njson:" MARK "\n" MARK
             "\nshort:abc1234\n",
             (int)first, shifted, shifted + end);
    free(shifted);
    assert_string_member(r, "stdout", expected);
    assert_string_member(r, "stderr", "err:" MARK "\n");
    char *text = json_dumps(r, 0);
    assert_null(strstr(text, "s3cret"));
    free(text);
    json_decref(r);
}

/* ---- Limits ---------------------------------------------------------------------------- */

static void a_timeout_kills_the_process_group_grandchild_too(void **state)
{
    (void)state;
    /* Both ignore SIGTERM: the kill grace ends in SIGKILL. The script
     * writes its pid file where fs.write may write (issue 15 §3). */
    char *line = run_one("{'filesystem':{'writable':true},'commands':{'sh':{'timeout_ms':1000}}}",
                         sh("trap '' TERM; sleep 1000 & echo $! > grandchild.pid; "
                            "echo started; wait"),
                         NULL);
    static const char expected[] =
        "process.run err -32004 process.run 'sh': timed out after 1000 ms: its process group "
        "was killed data ";
    if (strncmp(line, expected, sizeof(expected) - 1) != 0)
        fail_msg("expected a timeout, got: %s", line);
    json_t *data = parse(line + sizeof(expected) - 1);
    assert_json(data, "{\"stdout\":\"started\\n\",\"stderr\":\"\",\"exit_code\":null,"
                      "\"signal\":9}");
    json_decref(data);
    free(line);
    assert_pid_file_dead("grandchild.pid");
}

static void output_beyond_the_limit_is_cut_with_a_note(void **state)
{
    (void)state;
    char sandbox[512];
    const char *out_args[] = {"100000"}, *err_args[] = {"100000", "stderr"};

    snprintf(sandbox, sizeof(sandbox), "{'commands':{'%s':{'output_limit':1000}}}", FLOOD);
    json_t *params[] = {params_argv(FLOOD, out_args, 1), params_argv(FLOOD, err_args, 2)};
    char *end = probe(sandbox, run_ops(2, params), NULL);
    assert_true(strncmp(end, "ok: ", 4) == 0);
    char *second = strchr(end, '\n');
    assert_non_null(second);
    *second++ = '\0';
    static const char prefix[] = "process.run ok ";
    const char *lines[] = {end + 4, second};
    for (int i = 0; i < 2; i++) {
        assert_true(strncmp(lines[i], prefix, sizeof(prefix) - 1) == 0);
        json_t *r = parse(lines[i] + sizeof(prefix) - 1);
        const char *kept = json_string_value(json_object_get(r, i == 0 ? "stdout" : "stderr"));
        const char *other = json_string_value(json_object_get(r, i == 0 ? "stderr" : "stdout"));
        assert_non_null(kept);
        assert_string_equal(other, "");
        assert_true(strlen(kept) < 1100);
        assert_true(strncmp(kept, "line 0000001 ", 13) == 0);
        ru_assert_contains(kept, " bytes omitted");
        /* The end of a failed build is the part that matters: the tail
         * is kept (100000 = 1562 lines of 64 and 32 bytes more). */
        ru_assert_contains(kept, "line 0001563 ");
        assert_int_equal(json_integer_value(json_object_get(r, "exit_code")), 0);
        json_decref(r);
    }
    free(end);
}

/* ---- Backends, concurrency, the tool's end ---------------------------------------------- */

static void a_workspace_without_a_directory_cannot_run_processes(void **state)
{
    (void)state;
    jpt_files *mem = NULL;
    assert_int_equal(jpt_files_new_memory(&mem), JPT_OK);
    jpt_vfs_host *h = host_with(mem, "{'commands':{'env':{}}}", NULL);
    jpt_files_free(mem);
    json_t *params = json_pack("{s:s}", "program", "env");
    spawn(h, run_ops(1, &params));
    char *end = end_of(h);
    jpt_vfs_host_free(h);
    assert_string_equal(end, "ok: process.run err -32601 process.run 'env': not available: the "
                             "workspace is not a directory of this machine (a memory or "
                             "host-supplied backend), so there is nowhere to run a process");
    free(end);
}

/* Two processes wait for a file that only the tool's fs.write, served
 * while they run, creates: a host that blocked on a process would never
 * answer it. */
static void file_requests_are_served_while_processes_run(void **state)
{
    (void)state;
    static const char wait_go[] = "while [ ! -e go ]; do sleep 0.01; done; echo saw go";
    json_t *ops = json_pack("[{s:s,s:o},{s:s,s:o},{s:s,s:{s:s,s:s}}]", "method", "process.run",
                            "params", sh(wait_go), "method", "process.run", "params",
                            sh(wait_go), "method", "fs.write", "params", "path", "go",
                            "content", "");
    char *end = probe("{'filesystem':{'writable':true},'commands':{'sh':{}}}",
                      json_pack("{s:o}", "concurrent", ops), NULL);
    assert_string_equal(
        end, "ok: process.run ok {\"stdout\":\"saw go\\n\",\"stderr\":\"\",\"exit_code\":0}\n"
             "process.run ok {\"stdout\":\"saw go\\n\",\"stderr\":\"\",\"exit_code\":0}\n"
             "fs.write ok {}");
    free(end);
    char path[512];
    snprintf(path, sizeof(path), "%s/go", root);
    unlink(path);
}

static json_t *abandon(const char *then)
{
    return json_pack("{s:{s:s,s:o}, s:s, s:s}", "abandon", "method", "process.run", "params",
                     sh("sleep 1000 & echo $! > bg.pid; sleep 1000"), "wait_for", "bg.pid",
                     "then", then);
}

static void the_end_of_the_tool_kills_its_processes(void **state)
{
    (void)state;
    char *end = probe("{'filesystem':{'writable':true},'commands':{'sh':{}}}", abandon("exit"),
                      NULL);
    assert_string_equal(end, "ok: abandoned");
    free(end);
    assert_pid_file_dead("bg.pid");
}

static void cancelling_the_tool_kills_its_processes(void **state)
{
    (void)state;
    char path[512];
    struct stat st;
    jpt_vfs_host *h = host_with(NULL, "{'filesystem':{'writable':true},'commands':{'sh':{}}}",
                                NULL);

    snprintf(path, sizeof(path), "%s/bg.pid", root);
    spawn(h, abandon("cancel"));
    uint64_t deadline = ru_now_ms() + (uint64_t)WAIT_MS;
    while (stat(path, &st) != 0 && ru_now_ms() < deadline)
        assert_int_not_equal(jpt_vfs_host_run(h, 10), JPT_ERR_IO);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(jpt_vfs_host_cancel(h), JPT_OK);
    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_vfs_host_done(h), 1);
    jpt_vfs_host_free(h);
    assert_pid_file_dead("bg.pid");
}

/* ---- D11's result, the SDK, a registry -------------------------------------------------- */

static void the_result_has_d11s_shape(void **state)
{
    (void)state;
    static const char sandbox[] = "{'commands':{'sh':{},'jpt-no-such-program':{}}}";
    const char *hello[] = {"hello"};

    json_t *r = run_ok("{'commands':{'echo':{}}}", params_argv("echo", hello, 1), NULL);
    assert_json(r, "{\"stdout\":\"hello\\n\",\"stderr\":\"\",\"exit_code\":0}");
    json_decref(r);
    r = run_ok(sandbox, sh("echo oops >&2; exit 3"), NULL);
    assert_json(r, "{\"stdout\":\"\",\"stderr\":\"oops\\n\",\"exit_code\":3}");
    json_decref(r);
    r = run_ok(sandbox, sh("kill -9 $$"), NULL);
    assert_json(r, "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":null,\"signal\":9}");
    json_decref(r);
    /* Bytes that are not UTF-8 become U+FFFD. */
    r = run_ok(sandbox, sh("printf 'a\\377b'"), NULL);
    assert_json(r, "{\"stdout\":\"a\\ufffdb\",\"stderr\":\"\",\"exit_code\":0}");
    json_decref(r);

    run_err(sandbox, json_pack("{s:s}", "program", "jpt-no-such-program"), NULL, -32002,
            "process.run 'jpt-no-such-program': command 'jpt-no-such-program' not found in "
            "PATH");
    run_err(sandbox, json_pack("{s:s}", "program", "./x"), NULL, -32602,
            "process.run './x': 'program' is a relative path: name a program found in PATH, "
            "or give its absolute path");
    run_err(sandbox, json_pack("{s:[s]}", "args", "x"), NULL, -32602,
            "Invalid params: 'program' is required");
    run_err(sandbox, json_pack("{s:s}", "program", ""), NULL, -32602,
            "Invalid params: 'program' must not be empty");
    run_err(sandbox, json_pack("{s:s, s:s}", "program", "sh", "args", "-c"), NULL, -32602,
            "Invalid params: 'args' must be an array of strings");
    run_err(sandbox, json_pack("{s:s, s:[i]}", "program", "sh", "envs", 1), NULL, -32602,
            "Invalid params: 'envs' must be an array of strings");
}

static char *sdk_run(const char *sandbox_js, json_t *run)
{
    char *end = probe(sandbox_js, json_pack("{s:o}", "run", run), NULL);
    return end;
}

static void the_sdk_runs_a_process(void **state)
{
    (void)state;
    static const char sandbox[] =
        "{'commands':{'sh':{'envs':['JPT_TEST_SECRET'],'timeout_ms':1000}}}";
    char *end = sdk_run(sandbox, json_pack("{s:s, s:[s,s], s:[s]}", "program", "sh", "args",
                                           "-c", "echo \"a b $JPT_TEST_SECRET\"; echo e >&2",
                                           "envs", "JPT_TEST_SECRET"));
    assert_string_equal(end, "ok: run 0 stdout=\"a b " MARK "\\n\" stderr=\"e\\n\"");
    free(end);
    end = sdk_run(sandbox, json_pack("{s:s, s:[s,s], s:[]}", "program", "sh", "args", "-c",
                                     "kill -15 $$", "envs"));
    assert_string_equal(end, "ok: run -15 stdout=\"\" stderr=\"\"");
    free(end);
    end = sdk_run(sandbox, json_pack("{s:s, s:[s,s], s:[]}", "program", "sh", "args", "-c",
                                     "echo before; exec sleep 1000", "envs"));
    assert_string_equal(end, "ok: run err -32004 process.run 'sh': timed out after 1000 ms: its "
                             "process group was killed data {\"stdout\":\"before\\n\","
                             "\"stderr\":\"\",\"exit_code\":null,\"signal\":15}");
    free(end);
    end = sdk_run(sandbox, json_pack("{s:s, s:[], s:[s]}", "program", "sh", "args", "envs",
                                     "HOME"));
    assert_string_equal(end, "ok: run err -32001 process.run 'sh': envs[0] 'HOME' is not in "
                             "commands.sh.envs");
    free(end);
}

static void a_registry_vfs_tool_runs_processes(void **state)
{
    (void)state;
    char tools[1024];
    snprintf(tools, sizeof(tools),
             "{'tools':[{'name':'probe','runtime':'vfs','command':['%s'],"
             "'parameters':{'type':'object'},"
             "'sandbox':{'commands':{'echo':{'args':[['from','**']]}},'uncovered':'deny'}}]}",
             PROBE);
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode()};
    jpt_registry *r = ru_registry_with(&o, js(tools));
    json_t *res = ru_run_js(r, "[{'id':'c1','name':'probe','arguments':{'ops':["
                               "{'method':'process.run','params':{'program':'echo',"
                               "'args':['from','a','registry']}},"
                               "{'method':'process.run','params':{'program':'echo'}}]}}]");
    ru_assert_text(res, 0, "c1",
                   "process.run ok {\"stdout\":\"from a registry\\n\",\"stderr\":\"\","
                   "\"exit_code\":0}\n"
                   "process.run err -32001 process.run 'echo': denied: not covered by the "
                   "policy (the arguments match none of commands.echo.args)",
                   false);
    jpt_registry_free(r);
}

int main(void)
{
    tu_install_counting_allocator();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_child_sees_only_path_and_the_variables_it_may_have),
        cmocka_unit_test(the_child_runs_in_the_root_with_only_its_stdio),
        cmocka_unit_test(argument_lists_decide_what_runs),
        cmocka_unit_test(a_program_without_a_rule_is_denied_or_asked),
        cmocka_unit_test(variables_must_be_listed_to_be_forwarded),
        cmocka_unit_test(forwarded_values_are_scrubbed_from_stdout_and_stderr),
        cmocka_unit_test(a_timeout_kills_the_process_group_grandchild_too),
        cmocka_unit_test(output_beyond_the_limit_is_cut_with_a_note),
        cmocka_unit_test(a_workspace_without_a_directory_cannot_run_processes),
        cmocka_unit_test(file_requests_are_served_while_processes_run),
        cmocka_unit_test(the_end_of_the_tool_kills_its_processes),
        cmocka_unit_test(cancelling_the_tool_kills_its_processes),
        cmocka_unit_test(the_result_has_d11s_shape),
        cmocka_unit_test(the_sdk_runs_a_process),
        cmocka_unit_test(a_registry_vfs_tool_runs_processes),
    };
    return tu_hygiene_end(
        (tu_hygiene_begin(), cmocka_run_group_tests(tests, setup, teardown)));
}
