/* process.run (vfs.h, "process.run"; D11 "Process methods"; issue 10 §2)
 * through a real host and real tool processes (test/tools/vfs-probe):
 * what the child sees (only PATH and the variables it may have, never a
 * loader variable; the workspace root as its directory; only fds 0-2), the
 * commands rules and their `**` prefixes, a program without a rule denied
 * or asked, scrubbed output, the timeout killing the whole process group,
 * the output limit, a workspace that is not a directory, fs.* served while
 * processes run, the tool's end and cancel killing its processes, D11's
 * result shape, the SDK's jpt_vfs_tool_process_run, and a registry's vfs tool. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jptool/vfs_tool.h>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#include "registry-util.h"
#include "test-files-util.h"
#include "test-util.h"

#define PROBE TOOL("vfs-probe")
#define ENV_DUMP TOOL("env-dump")
#define FLOOD TOOL("flood")
#define MARK "[REDACTED]"

static char root[200], real_root[4096];
/* The hosts' workspace: the root, or a repository under it (git's tests). */
static const char *host_root = root;

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

/* A process that ends by a signal, SIGSEGV: one it sends itself is
 * dropped where it is pid 1 of a PID namespace of its own. */
#define SEGFAULT "exec python3 -c 'import ctypes; ctypes.string_at(0)'"

/* ---- Running a probe ------------------------------------------------------------- */

static jpt_vfs_host *host_with(jpt_files *files, const char *sandbox_js, ru_asked *a)
{
    return ru_vfs_host(files == NULL ? host_root : NULL, files, sandbox_js, 0, a);
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
static char *probe(const char *sandbox_js, json_t *arguments, ru_asked *a)
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
static char *run_one(const char *sandbox_js, json_t *params, ru_asked *a)
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
static json_t *run_ok(const char *sandbox_js, json_t *params, ru_asked *a)
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
static void run_err(const char *sandbox_js, json_t *params, ru_asked *a, int code,
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

/* The file `name` under the root, removed. */
static void remove_in_root(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", root, name);
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

/* A host whose PATH holds a relative entry ("." or an empty one): neither
 * the host's lookup of the program nor the child's own find a program the
 * tool wrote in the workspace, where the child starts. */
static void a_relative_path_entry_finds_no_program_in_the_workspace(void **state)
{
    (void)state;
    char *saved = strdup(getenv("PATH")), planted[512], path[8192], cwd[4096];

    snprintf(planted, sizeof(planted), "%s/jpt-planted", root);
    FILE *f = fopen(planted, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\necho PLANTED\n", f);
    fclose(f);
    assert_int_equal(chmod(planted, 0755), 0);
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    /* The host runs in the workspace, as an agent in its project does. */
    assert_int_equal(chdir(root), 0);
    snprintf(path, sizeof(path), ".::%s", saved);
    assert_int_equal(setenv("PATH", path, 1), 0);
    static const char sandbox[] = "{'commands':{'sh':{},'jpt-planted':{}}}";
    char *by_host = run_one(sandbox, json_pack("{s:s}", "program", "jpt-planted"), NULL);
    json_t *by_child = run_ok(sandbox, sh("jpt-planted; echo \"$PATH\""), NULL);
    assert_int_equal(setenv("PATH", saved, 1), 0);
    assert_int_equal(chdir(cwd), 0);
    unlink(planted);

    assert_string_equal(by_host, "process.run err -32002 process.run 'jpt-planted': command "
                                 "'jpt-planted' not found in PATH");
    free(by_host);
    snprintf(path, sizeof(path), "%s\n", saved);
    free(saved);
    const char *out = json_string_value(json_object_get(by_child, "stdout"));
    assert_non_null(out);
    assert_null(strstr(out, "PLANTED"));
    assert_string_equal(out, path);
    json_decref(by_child);
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

    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    json_t *r = run_ok(NULL, params_argv("echo", hi, 1), &a);
    assert_string_member(r, "stdout", "hi\n");
    json_decref(r);
    assert_int_equal(a.count, 1);
    assert_string_equal(a.last, "process.run [\"echo\",\"hi\"] [probe]: needs approval: not "
                                "covered by the policy (commands has no rule for this program)");
    assert_int_equal(a.access, JPT_ACCESS_PROCESS);

    ru_asked d = {.decision = JPT_DECISION_DENY, .reason = "not today"};
    run_err(NULL, params_argv("echo", hi, 1), &d, -32001,
            "process.run '[\"echo\",\"hi\"]': denied by the host: not today");

    /* Always: the same command line is not asked again; another is. */
    ru_asked always = {.decision = JPT_DECISION_ALLOW_ALWAYS};
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

/* The adversarial pass: a variable the policy lends for a command line
 * its rule allows rode along on one it asks about, and the prompt
 * showed the command line alone; the user approved it, and the child
 * wrote the value (reversed, past the scrubber) where the tool reads
 * it. As with http's ${VAR}: a command line the policy would ask about
 * carries none, and is refused before anyone is asked. */
static void an_asked_command_line_gets_no_variable(void **state)
{
    (void)state;
    static const char sandbox[] =
        "{'filesystem':{'writable':true},"
        "'commands':{'sh':{'args':[['-c','echo fine']],'envs':['JPT_TEST_SECRET']}}}";
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    json_t *params = sh("printf %s \"$JPT_TEST_SECRET\" | rev > leak.txt");
    json_object_set_new(params, "envs", json_pack("[s]", "JPT_TEST_SECRET"));

    run_err(sandbox, params, &a, -32001,
            "process.run 'sh': envs[0] 'JPT_TEST_SECRET' is forwarded only to a command line "
            "that commands.sh allows: this one would need approval, which cannot be asked "
            "for a value the prompt does not show");
    assert_int_equal(a.count, 0);
    char path[4300];
    snprintf(path, sizeof(path), "%s/leak.txt", root);
    assert_int_equal(access(path, F_OK), -1);
    /* The command line its rule allows still gets it; and the asked one
     * without it is asked. */
    params = sh("echo fine");
    json_object_set_new(params, "envs", json_pack("[s]", "JPT_TEST_SECRET"));
    json_decref(run_ok(sandbox, params, NULL));
    json_decref(run_ok(sandbox, sh("echo asked"), &a));
    assert_int_equal(a.count, 1);
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

/* Issue 15 §5: the forms the scrubber of before missed — hex of either
 * case, UTF-16 of either byte order, HTML escaping, the value cut short by
 * a byte, its first 8 bytes — on stdout and stderr, and a timed-out run's
 * stderr in the error's data: none reaches the tool. */
static void forwarded_values_are_scrubbed_in_every_form(void **state)
{
    (void)state;
    static const char script[] =
        "import html, os, sys\n"
        "v = os.environ['JPT_TEST_SECRET']\n"
        "out = sys.stdout.buffer\n"
        "for form in [v.encode().hex(), v.encode().hex().upper(), html.escape(v)]:\n"
        "    out.write(b'<' + form.encode() + b'>\\n')\n"
        "out.write(b'<' + v.encode('utf-16-le') + b'>\\n<' + v.encode('utf-16-be') + b'>\\n')\n"
        "out.write(b'first8:' + v[:8].encode() + b'\\n')\n"
        "out.flush()\n"
        "sys.stderr.write('cut:' + v[:-1])\n";
    const char *args[] = {"-c", script};
    /* The system's interpreter: the child's OS sandbox reads the system,
     * not an interpreter of the host user's home (pyenv's). */
    json_t *params = params_argv("/usr/bin/python3", args, 2);
    json_object_set_new(params, "envs", json_pack("[s]", "JPT_TEST_SECRET"));
    json_t *r = run_ok("{'commands':{'/usr/bin/python3':{'envs':['JPT_TEST_SECRET']}}}", params,
                       NULL);
    assert_string_member(r, "stdout",
                         "<" MARK ">\n<" MARK ">\n<" MARK ">\n<" MARK ">\n<" MARK ">\n"
                         "first8:" MARK);
    assert_string_member(r, "stderr", "cut:" MARK);
    json_decref(r);

    /* Timed out: what it wrote comes as the error's data, scrubbed. */
    json_t *slow = sh("printf 'cut:%s' \"${JPT_TEST_SECRET%?}\" >&2; exec sleep 30");
    json_object_set_new(slow, "envs", json_pack("[s]", "JPT_TEST_SECRET"));
    char *line = run_one("{'commands':{'sh':{'envs':['JPT_TEST_SECRET'],'timeout_ms':500}}}",
                         slow, NULL);
    static const char expected[] =
        "process.run err -32004 process.run 'sh': timed out after 500 ms: its process group "
        "was killed data ";
    if (strncmp(line, expected, sizeof(expected) - 1) != 0)
        fail_msg("expected a timeout, got: %s", line);
    json_t *data = parse(line + sizeof(expected) - 1);
    assert_string_member(data, "stderr", "cut:" MARK);
    json_decref(data);
    assert_null(strstr(line, "s3cret"));
    free(line);
}

/* ---- Limits ---------------------------------------------------------------------------- */

static void a_timeout_kills_the_process_group_grandchild_too(void **state)
{
    (void)state;
    /* Both ignore SIGTERM: the kill grace ends in SIGKILL. The script
     * writes its pid file where fs.write may write (issue 15 §3). */
    char *line = run_one("{'filesystem':{'writable':true},'commands':{'sh':{'timeout_ms':1000}}}",
                         sh("trap '' TERM; sleep 1000.17 & echo $! > grandchild.pid; "
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
    remove_in_root("grandchild.pid");
    ru_assert_none_sleeping("1000.17");
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
    /* The pid file appears whole (renamed into place), never empty. */
    return json_pack("{s:{s:s,s:o}, s:s, s:s}", "abandon", "method", "process.run", "params",
                     sh("sleep 1000.23 & echo $! > bg.tmp && mv bg.tmp bg.pid; sleep 1000"),
                     "wait_for", "bg.pid",
                     "then", then);
}

static void the_end_of_the_tool_kills_its_processes(void **state)
{
    (void)state;
    char *end = probe("{'filesystem':{'writable':true},'commands':{'sh':{}}}", abandon("exit"),
                      NULL);
    assert_string_equal(end, "ok: abandoned");
    free(end);
    remove_in_root("bg.pid");
    ru_assert_none_sleeping("1000.23");
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
    remove_in_root("bg.pid");
    ru_assert_none_sleeping("1000.23");
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
    /* A signal that ends it: a fault (a signal it sends itself would not,
     * where it is pid 1 of a PID namespace of its own). */
    r = run_ok(sandbox, sh(SEGFAULT), NULL);
    assert_json(r, "{\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":null,\"signal\":11}");
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
                                     SEGFAULT, "envs"));
    assert_string_equal(end, "ok: run -11 stdout=\"\" stderr=\"\"");
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

/* ---- How many at once (vfs.h, JPT_VFS_PROCESS_MAX_RUNNING; issue 15 §3) ---------- */

/* Children of this process (the host) whose command is `comm`. */
static int children_named(const char *comm)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        char path[300], buf[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        if (ru_read_text(path, buf, sizeof(buf)) < 0)
            continue;
        /* "pid (comm) state ppid …" */
        const char *open_paren = strchr(buf, '('), *close_paren = strrchr(buf, ')');
        if (open_paren == NULL || close_paren == NULL)
            continue;
        int ppid = 0;
        char state = 0;
        if (sscanf(close_paren + 2, "%c %d", &state, &ppid) != 2 || ppid != (int)getpid() ||
            state == 'Z')
            continue;
        n += (size_t)(close_paren - open_paren - 1) == strlen(comm) &&
             strncmp(open_paren + 1, comm, strlen(comm)) == 0;
    }
    closedir(d);
    return n;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    assert_non_null(d);
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3; /* ".", ".." and the DIR's own */
}

/* What the burst does: the program waits for "go" in the workspace. */
static const char wait_for_go[] = "while [ ! -e go ]; do sleep 0.02; done";

/* {"submit_then": …}: `count` process.run of wait_for_go pipelined, then
 * an fs.write of "submitted", which the host reads only after them all. */
static json_t *burst(int count)
{
    return json_pack("{s:{s:{s:s, s:o, s:i}, s:[{s:s, s:{s:s, s:s}}]}}", "submit_then", "submit",
                     "method", "process.run", "params", sh(wait_for_go), "count", count, "then",
                     "method", "fs.write", "params", "path", "submitted", "content", "");
}

/* The probe's result once "go" lets every process end. */
static const char burst_result[] =
    "fs.write ok {}\n"
    "264x process.run ok {\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0}\n"
    "736x process.run err -32603 process.run 'sh': 8 processes of this tool run and 256 wait "
    "already (at most 256 wait): refused; try again once one has ended";

/* Waits for "submitted" while `dispatch` turns, and then for `bound`
 * "sh" children (each starts once its sandbox's walk is done, a few
 * turns later), noting the most seen between turns; then creates "go". */
static int watch_burst(bool (*dispatch)(void *ud), void *ud, int bound, int *fds_seen)
{
    char path[512];
    struct stat st;
    int most = 0;
    uint64_t deadline = ru_now_ms() + (uint64_t)WAIT_MS;

    snprintf(path, sizeof(path), "%s/submitted", root);
    while ((stat(path, &st) != 0 || most < bound) && ru_now_ms() < deadline) {
        assert_true(dispatch(ud));
        int n = children_named("sh");
        most = n > most ? n : most;
    }
    assert_int_equal(stat(path, &st), 0);
    /* Everything read: the bound is reached, not passed. */
    for (int i = 0; i < 20; i++) {
        assert_true(dispatch(ud));
        int n = children_named("sh");
        most = n > most ? n : most;
    }
    *fds_seen = open_fds();
    snprintf(path, sizeof(path), "%s/go", root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    return most;
}

static bool host_turn(void *ud)
{
    return jpt_vfs_host_run(ud, 10) != JPT_ERR_IO;
}

static void a_thousand_pipelined_runs_never_pass_the_bound(void **state)
{
    (void)state;
    int fds_before = open_fds(), fds_seen = 0;
    /* A small output_limit: the answer budget reserves each run's worst
     * case (vfs.h, "Bounds"), which at the default limit lets six run at
     * once; this test is about the per-tool bound. */
    jpt_vfs_host *h = host_with(
        NULL, "{'filesystem':{'writable':true},'commands':{'sh':{'output_limit':1024}}}", NULL);

    spawn(h, burst(1000));
    int most = watch_burst(host_turn, h, JPT_VFS_PROCESS_MAX_RUNNING, &fds_seen);
    assert_int_equal(most, JPT_VFS_PROCESS_MAX_RUNNING);
    /* A child's pidfd and two pipes each, the probe's three: a bounded
     * number, far from the fd limit. */
    assert_true(fds_seen - fds_before < 8 * JPT_VFS_PROCESS_MAX_RUNNING);
    char *end = end_of(h);
    jpt_vfs_host_free(h);
    char expected[1024];
    snprintf(expected, sizeof(expected), "ok: %s", burst_result);
    assert_string_equal(end, expected);
    free(end);
    remove_in_root("go");
    remove_in_root("submitted");
}

static bool registry_turn(void *ud)
{
    ru_poll(ud, 10);
    return jpt_registry_dispatch(ud) >= 0;
}

/* In a registry too, and the registry keeps serving its other tools. */
static void a_registry_tool_bursting_runs_leaves_room_for_others(void **state)
{
    (void)state;
    char tools[1024];
    int fds_seen = 0;
    snprintf(tools, sizeof(tools),
             "{'tools':[{'name':'probe','runtime':'vfs','command':['%s'],"
             "'parameters':{'type':'object'},"
             "'sandbox':{'filesystem':{'writable':true},"
             "'commands':{'sh':{'output_limit':1024}}}},"
             "{'name':'other','command':['%s','0','still here','']}]}",
             PROBE, TOOL("exit-code"));
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode()};
    jpt_registry *r = ru_registry_with(&o, js(tools));
    json_t *args = burst(1000);
    char *args_text = json_dumps(args, JSON_COMPACT), calls[4096];
    json_decref(args);
    snprintf(calls, sizeof(calls), "[{\"id\":\"c1\",\"name\":\"probe\",\"arguments\":%s}]",
             args_text);
    free(args_text);
    jpt_batch *b = NULL;
    assert_int_equal(jpt_registry_submit(r, calls, &b), JPT_OK);

    int most = watch_burst(registry_turn, r, JPT_VFS_PROCESS_MAX_RUNNING, &fds_seen);
    assert_int_equal(most, JPT_VFS_PROCESS_MAX_RUNNING);
    json_t *other = ru_run_js(r, "[{'id':'o1','name':'other','arguments':{}}]");
    ru_assert_text(other, 0, "o1", "still here", false);
    json_t *res = ru_finish(r, b);
    ru_assert_text(res, 0, "c1", burst_result, false);
    jpt_registry_free(r);
    remove_in_root("go");
    remove_in_root("submitted");
}

static jpt_registry *probe_registry(size_t max_processes, const char *more_tools)
{
    char tools[2048];
    snprintf(tools, sizeof(tools),
             "{'tools':[{'name':'probe','runtime':'vfs','command':['%s'],"
             "'parameters':{'type':'object'},"
             "'sandbox':{'filesystem':{'writable':true},"
             "'commands':{'sh':{'output_limit':1024},'echo':{}}}}%s]}",
             PROBE, more_tools);
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .max_processes = max_processes,
                              .sandbox_mode = tu_sandbox_mode()};
    return ru_registry_with(&o, js(tools));
}

/* The probe's call with `arguments` (taken). */
static jpt_batch *submit_probe(jpt_registry *r, const char *id, json_t *arguments)
{
    char *text = json_dumps(arguments, JSON_COMPACT), *calls = NULL;
    jpt_batch *b = NULL;

    json_decref(arguments);
    assert_true(asprintf(&calls, "[{\"id\":\"%s\",\"name\":\"probe\",\"arguments\":%s}]",
                         id, text) > 0);
    free(text);
    assert_int_equal(jpt_registry_submit(r, calls, &b), JPT_OK);
    free(calls);
    return b;
}

/* max_processes counts process.run's children: with 3, the tool and two
 * of its processes run at once; the rest wait, and all run in the end. */
static void process_run_children_count_in_max_processes(void **state)
{
    (void)state;
    int fds_seen = 0;
    jpt_registry *r = probe_registry(3, "");
    jpt_batch *b = submit_probe(r, "c1", burst(20));

    assert_int_equal(watch_burst(registry_turn, r, 2, &fds_seen), 2);
    ru_assert_text(ru_finish(r, b), 0, "c1",
                   "fs.write ok {}\n"
                   "20x process.run ok {\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0}",
                   false);
    jpt_registry_free(r);
    remove_in_root("go");
    remove_in_root("submitted");
}

/* A process.run waits while another tool holds the last slot, and runs
 * once it ends. */
static void process_run_waits_for_a_slot_another_tool_frees(void **state)
{
    (void)state;
    char path[512];
    struct stat st;
    jpt_registry *r =
        probe_registry(2, ",{'name':'holder','command':['sh','-c',"
                          "'while [ ! -e release ]; do sleep 0.02; done; echo released']}");
    jpt_batch *holder = ru_submit(r, "[{'id':'h1','name':'holder','arguments':{}}]");
    uint64_t deadline = ru_now_ms() + (uint64_t)WAIT_MS;
    while (children_named("sh") == 0 && ru_now_ms() < deadline)
        assert_true(registry_turn(r));
    assert_int_equal(children_named("sh"), 1);

    jpt_batch *b = submit_probe(r, "c1", burst(1));
    snprintf(path, sizeof(path), "%s/submitted", root);
    while (stat(path, &st) != 0 && ru_now_ms() < deadline)
        assert_true(registry_turn(r));
    assert_int_equal(stat(path, &st), 0);
    /* The holder and the probe hold both slots: the run waits. */
    assert_int_equal(children_named("sh"), 1);
    fu_write(root, "go", "");
    fu_write(root, "release", "");
    ru_assert_text(ru_finish(r, holder), 0, "h1", "released\n", false);
    ru_assert_text(ru_finish(r, b), 0, "c1",
                   "fs.write ok {}\n"
                   "1x process.run ok {\"stdout\":\"\",\"stderr\":\"\",\"exit_code\":0}",
                   false);
    jpt_registry_free(r);
    remove_in_root("go");
    remove_in_root("release");
    remove_in_root("submitted");
}

/* Every slot held by a VFS tool waiting for one: none could free, so the
 * request is refused instead of waiting forever. */
static void process_run_is_refused_when_no_slot_could_ever_free(void **state)
{
    (void)state;
    jpt_registry *r = probe_registry(1, "");
    json_t *params = json_pack("{s:s, s:[s]}", "program", "echo", "args", "hi");
    jpt_batch *b = submit_probe(r, "c1", run_ops(1, &params));

    ru_assert_text(ru_finish(r, b), 0, "c1",
                   "process.run err -32603 process.run 'echo': no process slot is free: the "
                   "registry runs max_processes (1) processes, every one a VFS tool waiting for "
                   "a slot for process.run, so none could ever free one; refused rather than "
                   "wait forever",
                   false);
    jpt_registry_free(r);
}

/* registry.h, max_processes: with every slot held by a live handle (a
 * stateful shell), a VFS tool's call fails at once, saying why, instead of
 * waiting for the model, which waits for it. */
static void vfs_tool_call_fails_at_once_when_live_handles_hold_every_slot(void **state)
{
    (void)state;
    jpt_registry *r = probe_registry(1, ",{'name':'sh','stateful':true,'command':['sh']}");
    json_t *res = ru_run_js(r, "[{'id':'s','name':'sh','arguments':{'action':'spawn','id':'h'}},"
                               "{'id':'c','name':'probe','arguments':{'ops':["
                               "{'method':'fs.exists','params':{'path':'.'}}]}}]");
    ru_assert_text(res, 1, "c",
                   "`probe` could not run: no process slot is free: the registry runs at most "
                   "1 tool processes at once (max_processes), and live handles hold every "
                   "slot until they end; abort one, or await the end of one, then call again",
                   true);
    jpt_registry_free(r);
}

/* registry.h: a call beyond max_processes waits for a slot, a VFS tool's
 * as a stdio tool's. */
static void vfs_tool_calls_beyond_max_processes_wait_for_a_slot(void **state)
{
    (void)state;
    jpt_registry *r = probe_registry(1, "");
    json_t *res = ru_run_js(r, "[{'id':'c1','name':'probe','arguments':{'ops':["
                               "{'method':'fs.exists','params':{'path':'.'}}]}},"
                               "{'id':'c2','name':'probe','arguments':{'ops':["
                               "{'method':'fs.exists','params':{'path':'.'}}]}}]");
    ru_assert_text(res, 0, "c1", "fs.exists ok {\"exists\":true}", false);
    ru_assert_text(res, 1, "c2", "fs.exists ok {\"exists\":true}", false);
    jpt_registry_free(r);
}

/* registry.h, max_processes: "A spawn that still finds no fd (the host
 * took them) also waits, while another tool process is alive" -- one rule
 * for every runtime (issue 17 §1: a VFS call failed where a stdio call
 * waited). 120 calls, VFS and stdio mixed, with 64 fds in all and a
 * process limit the fds cannot meet: every call runs. */
static void calls_short_of_fds_wait_for_a_slot_whatever_runs_them(void **state)
{
    (void)state;
    enum { PAIRS = 60 };
    struct rlimit old, low;

    /* valgrind (3.19) aborts when a clone(CLONE_PIDFD) fails with EMFILE
     * (its syscall wrapper asserts): the normal and ASan passes run it. */
    if (RUNNING_ON_VALGRIND)
        skip();
    jpt_registry *r = probe_registry(100000, ",{'name':'ok','command':['true']}");
    static char calls[PAIRS * 160];
    size_t len = 0;

    for (int i = 0; i < PAIRS; i++)
        len += (size_t)snprintf(calls + len, sizeof(calls) - len,
                                "%s{\"id\":\"v%d\",\"name\":\"probe\",\"arguments\":{\"ops\":["
                                "{\"method\":\"fs.exists\",\"params\":{\"path\":\".\"}}]}},"
                                "{\"id\":\"s%d\",\"name\":\"ok\",\"arguments\":{}}",
                                i ? "," : "[", i, i);
    assert_true(len + 2 < sizeof(calls));
    strcpy(calls + len, "]");
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    jpt_batch *b = NULL;
    int rc = jpt_registry_submit(r, calls, &b);
    json_t *res = rc == JPT_OK ? ru_finish(r, b) : NULL;
    setrlimit(RLIMIT_NOFILE, &old);

    assert_int_equal(rc, JPT_OK);
    for (size_t i = 0; i < 2 * PAIRS; i += 2) {
        char id[16];
        snprintf(id, sizeof(id), "v%zu", i / 2);
        ru_assert_text(res, i, id, "fs.exists ok {\"exists\":true}", false);
        if (ru_is_error(res, i + 1))
            fail_msg("call s%zu failed: %s", i / 2, ru_content(res, i + 1));
    }
    jpt_registry_free(r);
}

/* ---- git (vfs.h, "process.run" and "commands.<program>"; issue 15 §3) ------------- */

static char repo[256], marks[256];

/* Runs `script` with sh in a clean environment, failing the test if it
 * fails. */
static void shell(const char *script)
{
    char *cmd = NULL;
    assert_true(asprintf(&cmd, "env -i PATH=/usr/local/bin:/usr/bin:/bin GIT_CONFIG_NOSYSTEM=1 "
                               "GIT_CONFIG_GLOBAL=/dev/null sh -ec '%s'",
                         script) > 0);
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
    free(cmd);
}

/* The names in the markers' directory, space-separated ("" when none). */
static void marked(char *out, size_t cap)
{
    DIR *d = opendir(marks);
    struct dirent *e;
    size_t n = 0;

    assert_non_null(d);
    out[0] = '\0';
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && strcmp(e->d_name, "secret.txt") != 0)
            n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s ", e->d_name);
    closedir(d);
}

static void assert_nothing_marked(void)
{
    char names[1024];
    marked(names, sizeof(names));
    if (names[0] != '\0')
        fail_msg("these ran: %s", names);
}

/* A repository; with `planted`, its configuration, hooks and attributes
 * are a tool's: each program they name leaves a marker in `marks` when it
 * runs. */
static void make_repository(bool planted)
{
    char script[8192];

    snprintf(repo, sizeof(repo), "%s/repo", root);
    snprintf(marks, sizeof(marks), "%s/marks", root);
    fu_rmtree(repo);
    fu_rmtree(marks);
    assert_int_equal(mkdir(repo, 0755), 0);
    assert_int_equal(mkdir(marks, 0755), 0);
    fu_write(marks, "secret.txt", "the host's secret\n");
    snprintf(script, sizeof(script),
             "cd %s; git init -q -b main .; git config user.email t@example.com; "
             "git config user.name t; echo hello > a.txt; echo why > b.y; "
             "printf \"* filter=x diff=x merge=x\\n*.y diff=y\\n\" > .gitattributes; "
             "git add .; git commit -qm base; git checkout -qb other; echo theirs > a.txt; "
             "git commit -qam other; git checkout -q main; echo ours > a.txt; "
             "echo yes > b.y; git commit -qam ours",
             repo);
    shell(script);
    host_root = repo;
    if (!planted)
        return;
    /* The configuration, an included file, and hooks where git looks for
     * them (and where core.hooksPath sends it). */
    static const char planted_config[] =
        "[core]\n\tfsmonitor = touch @/fsmonitor; echo\n"
        "\tpager = touch @/pager; cat\n\teditor = touch @/editor; true\n"
        "\taskPass = touch @/askpass; echo\n\thooksPath = planted-hooks\n"
        "[filter \"x\"]\n\tsmudge = touch @/smudge; cat\n"
        "\tclean = touch @/clean; cat\n\tprocess = touch @/process; false\n"
        "\trequired = true\n"
        "[diff]\n\texternal = touch @/external; true\n"
        "[diff \"x\"]\n\ttextconv = touch @/textconv; cat\n"
        "\tcommand = touch @/diff-command; true\n"
        "[merge \"x\"]\n\tdriver = touch @/merge-driver; false\n"
        "[alias]\n\tst = !touch @/alias\n"
        "[credential]\n\thelper = !touch @/credential\n"
        "[sequence]\n\teditor = touch @/sequence-editor; true\n"
        "[help]\n\tautocorrect = immediate\n"
        "[include]\n\tpath = ../planted.cfg\n";
    /* Each '@' is the markers' directory. */
    char config[8192];
    size_t n = 0;
    for (const char *c = planted_config; *c != '\0' && n + sizeof(marks) < sizeof(config); c++)
        if (*c == '@')
            n += (size_t)snprintf(config + n, sizeof(config) - n, "%s", marks);
        else
            config[n++] = *c;
    config[n] = '\0';
    char path[512];
    snprintf(path, sizeof(path), "%s/.git/config", repo);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs(config, f);
    fclose(f);
    snprintf(config, sizeof(config), "[diff \"y\"]\n\ttextconv = touch %s/included; cat\n",
             marks);
    fu_write(repo, "planted.cfg", config);
    /* A repository inside, with a filter of its own: `git -C nested` reads
     * its configuration, not the outer one's. */
    snprintf(script, sizeof(script),
             "cd %s; mkdir nested; cd nested; git init -q .; git config user.email t@e; "
             "git config user.name t; echo a > n.txt; echo \"* filter=z\" > .gitattributes; "
             "git add .; git commit -qm n; echo b > n.txt; "
             "git config filter.z.clean \"touch %s/nested-clean; cat\"",
             repo, marks);
    shell(script);
    static const char *const hooks[] = {"pre-commit", "post-commit", "post-checkout",
                                        "post-merge", "pre-merge-commit", "post-index-change",
                                        "reference-transaction", "pre-auto-gc", "commit-msg",
                                        "prepare-commit-msg"};
    for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++)
        for (int where = 0; where < 2; where++) {
            char rel[128], body[512];
            snprintf(rel, sizeof(rel), "%s/%s", where == 0 ? ".git/hooks" : "planted-hooks",
                     hooks[i]);
            snprintf(body, sizeof(body), "#!/bin/sh\ntouch %s/hook-%s\n", marks, hooks[i]);
            fu_write(repo, rel, body);
            snprintf(path, sizeof(path), "%s/%s", repo, rel);
            assert_int_equal(chmod(path, 0755), 0);
        }
}

static void remove_repository(void)
{
    host_root = root;
    fu_rmtree(repo);
    fu_rmtree(marks);
}

static json_t *git(const char *const *args, size_t n)
{
    return params_argv("git", args, n);
}

/* The result of process.run line `i` (0-based) of the probe's `end`. */
static json_t *line_result(const char *end, int i)
{
    const char *p = strncmp(end, "ok: ", 4) == 0 ? end + 4 : end;
    for (; i > 0 && p != NULL; i--)
        if ((p = strchr(p, '\n')) != NULL)
            p++;
    static const char prefix[] = "process.run ok ";
    if (p == NULL || strncmp(p, prefix, sizeof(prefix) - 1) != 0)
        fail_msg("no result at line %d of:\n%s", i, end);
    const char *nl = strchr(p, '\n');
    char *text = strndup(p + sizeof(prefix) - 1, nl != NULL ? (size_t)(nl - p) - (sizeof(prefix) - 1)
                                                             : strlen(p + sizeof(prefix) - 1));
    json_t *r = parse(text);
    free(text);
    return r;
}

static void assert_exit(const json_t *r, int code)
{
    const json_t *e = json_object_get(r, "exit_code");
    if (!json_is_integer(e) || json_integer_value(e) != code) {
        char *text = json_dumps(r, 0);
        fail_msg("expected exit %d: %s", code, text);
    }
}

/* Issue 15 §3: "git gets no configuration the tool can write". */
static void git_runs_nothing_its_planted_configuration_names(void **state)
{
    (void)state;
    make_repository(true);
    const char *status[] = {"status", "--short"}, *diff[] = {"diff"},
               *log[] = {"log", "-p", "-2"}, *show[] = {"show", "HEAD"},
               *blame[] = {"blame", "a.txt"}, *st[] = {"st"}, *add[] = {"add", "a.txt"},
               *commit[] = {"commit", "-q", "-m", "change"},
               *checkout[] = {"checkout", "HEAD~1", "--", "a.txt"},
               *reset[] = {"reset", "-q", "--hard"}, *merge[] = {"merge", "other"},
               *abort_merge[] = {"merge", "--abort"}, *grep[] = {"grep", "-n", "ours"};
    char typo_file[512];
    snprintf(typo_file, sizeof(typo_file), "--file=%s/autocorrect", marks);
    /* "confi" is no subcommand; autocorrected, it would be config. */
    const char *typo[] = {"confi", typo_file, "a.b", "c"},
               *nested[] = {"-C", "nested", "diff"};
    json_t *ops = json_pack("[{s:s,s:{s:s,s:s}}]", "method", "fs.write", "params", "path",
                            "a.txt", "content", "changed\n");
    json_t *params[] = {git(status, 2), git(diff, 1),      git(log, 3),      git(show, 2),
                        git(blame, 2),  git(st, 1),        git(add, 2),      git(commit, 4),
                        git(checkout, 4), git(reset, 3),   git(merge, 2),    git(abort_merge, 2),
                        git(grep, 3),   git(typo, 4),      git(nested, 3)};
    for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
        json_array_append_new(ops, json_pack("{s:s, s:o}", "method", "process.run", "params",
                                             params[i]));
    char *end = probe("{'filesystem':{'writable':true,'git':'writable'},'commands':{'git':{'args':["
                      "['status','**'],['diff','**'],['log','**'],['show','**'],['blame','**'],"
                      "['st'],['add','**'],['commit','**'],['checkout','**'],['reset','**'],"
                      "['merge','**'],['grep','**'],['confi','**'],['-C','nested','diff']]}}}",
                      json_pack("{s:o}", "ops", ops), NULL);
    assert_nothing_marked();

    /* And git still works, as without the planted keys. */
    json_t *r = line_result(end, 1);
    assert_exit(r, 0);
    ru_assert_contains(json_string_value(json_object_get(r, "stdout")), " M a.txt\n");
    json_decref(r);
    r = line_result(end, 2);
    assert_exit(r, 0);
    ru_assert_contains(json_string_value(json_object_get(r, "stdout")), "\n+changed\n");
    json_decref(r);
    r = line_result(end, 3);
    assert_exit(r, 0);
    ru_assert_contains(json_string_value(json_object_get(r, "stdout")), "\n+yes\n");
    json_decref(r);
    r = line_result(end, 6);
    assert_exit(r, 1);
    ru_assert_contains(json_string_value(json_object_get(r, "stderr")),
                       "expansion of alias 'st' failed");
    json_decref(r);
    for (int i = 7; i <= 10; i++) {
        r = line_result(end, i);
        assert_exit(r, 0);
        json_decref(r);
    }
    r = line_result(end, 11);
    assert_exit(r, 1);
    ru_assert_contains(json_string_value(json_object_get(r, "stdout")), "CONFLICT (content)");
    json_decref(r);
    r = line_result(end, 14);
    assert_exit(r, 1);
    ru_assert_contains(json_string_value(json_object_get(r, "stderr")),
                       "git: 'confi' is not a git command");
    json_decref(r);
    r = line_result(end, 15);
    assert_exit(r, 0);
    ru_assert_contains(json_string_value(json_object_get(r, "stdout")), "\n-a\n+b\n");
    json_decref(r);
    free(end);
    remove_repository();
}

/* A run of git that the policy refuses: the probe's line for it. */
static void git_refused(const char *sandbox_js, const char *program, const char *const *args,
                        size_t n, const char *expected)
{
    char *line = run_one(sandbox_js, params_argv(program, args, n), NULL);
    char want[2048];

    snprintf(want, sizeof(want), "process.run err -32001 process.run '%s': denied: %s",
             program, expected);
    if (strcmp(line, want) != 0)
        fail_msg("expected\n  %s\ngot\n  %s", want, line);
    free(line);
}

/* Issue 15 §3: plausible rules gave a tool the host's rights. */
static void git_options_that_run_programs_or_name_files_need_a_rule_to_name_them(void **state)
{
    (void)state;
    static const char rules[] =
        "{'commands':{'git':{'args':[['diff','**'],['grep','**'],['fetch','**']]},"
        "'/usr/bin/git':{}}}";
    char secret[512], written[512], grep_o[512], upload[512], at_c[512], exec_path[512],
        fsmonitor[512], foreach[512];

    make_repository(false);
    snprintf(secret, sizeof(secret), "%s/secret.txt", marks);
    snprintf(written, sizeof(written), "--output=%s/written", marks);
    snprintf(grep_o, sizeof(grep_o), "-Otouch %s/grep-O", marks);
    snprintf(upload, sizeof(upload), "--upload-pack=touch %s/upload-pack; git-upload-pack",
             marks);
    snprintf(at_c, sizeof(at_c), "alias.x=!touch %s/global-c", marks);
    snprintf(exec_path, sizeof(exec_path), "--exec-path=%s", marks);
    snprintf(fsmonitor, sizeof(fsmonitor), "touch %s/config-written", marks);
    snprintf(foreach, sizeof(foreach), "touch %s/foreach", marks);

    const char *no_index[] = {"diff", "--no-index", secret, "a.txt"};
    git_refused(rules, "git", no_index, 4,
                "argument 2 '--no-index' reads files outside the repository: allowed only "
                "where a commands.git.args entry names it");
    const char *output[] = {"diff", written};
    char expected[1024];
    snprintf(expected, sizeof(expected),
             "argument 2 '%s' writes a file the rule does not name: allowed only where a "
             "commands.git.args entry names it",
             written);
    git_refused(rules, "git", output, 2, expected);
    /* git takes an unambiguous prefix of a long option. */
    const char *out[] = {"diff", "--out=x"};
    git_refused(rules, "git", out, 2,
                "argument 2 '--out=x' writes a file the rule does not name: allowed only "
                "where a commands.git.args entry names it");
    const char *pager[] = {"grep", grep_o, "hello"};
    snprintf(expected, sizeof(expected),
             "argument 2 '%s' runs a program: allowed only where a commands.git.args entry "
             "names it",
             grep_o);
    git_refused(rules, "git", pager, 3, expected);
    const char *cluster[] = {"grep", "-nOless", "hello"}, *open[] = {"grep", "--open=less", "x"};
    git_refused(rules, "git", cluster, 3,
                "argument 2 '-nOless' runs a program: allowed only where a commands.git.args "
                "entry names it");
    git_refused(rules, "git", open, 3,
                "argument 2 '--open=less' runs a program: allowed only where a "
                "commands.git.args entry names it");
    const char *fetch[] = {"fetch", upload, "."};
    snprintf(expected, sizeof(expected),
             "argument 2 '%s' runs a program: allowed only where a commands.git.args entry "
             "names it",
             upload);
    git_refused(rules, "git", fetch, 3, expected);

    /* A rule that allows any arguments still names none of these. */
    static const char global[] =
        "is an option of git itself, before the subcommand (as -c, -C, --git-dir, "
        "--exec-path, -p), which changes the configuration git reads, where it looks or what "
        "it runs: allowed only where a commands./usr/bin/git.args entry names it";
    const char *config_c[] = {"-c", at_c, "x"}, *dir_c[] = {"-C", marks, "status"},
               *exec[] = {exec_path, "status"};
    snprintf(expected, sizeof(expected), "argument 1 '-c' %s", global);
    git_refused(rules, "/usr/bin/git", config_c, 3, expected);
    snprintf(expected, sizeof(expected), "argument 1 '-C' %s", global);
    git_refused(rules, "/usr/bin/git", dir_c, 3, expected);
    snprintf(expected, sizeof(expected), "argument 1 '%s' %s", exec_path, global);
    git_refused(rules, "/usr/bin/git", exec, 2, expected);
    const char *config[] = {"config", "core.fsmonitor", fsmonitor},
               *submodule[] = {"submodule", "foreach", foreach};
    static const char by_design[] =
        "runs programs, serves, or writes git's configuration by design: allowed only where "
        "a commands./usr/bin/git.args entry names it";
    snprintf(expected, sizeof(expected), "argument 1 'config' %s", by_design);
    git_refused(rules, "/usr/bin/git", config, 3, expected);
    snprintf(expected, sizeof(expected), "argument 1 'submodule' %s", by_design);
    git_refused(rules, "/usr/bin/git", submodule, 3, expected);

    assert_nothing_marked();
    snprintf(written, sizeof(written), "%s/x", repo);
    assert_int_equal(access(written, F_OK), -1);
    remove_repository();
}

int main(void)
{
    tu_install_counting_allocator();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_child_sees_only_path_and_the_variables_it_may_have),
        cmocka_unit_test(a_relative_path_entry_finds_no_program_in_the_workspace),
        cmocka_unit_test(the_child_runs_in_the_root_with_only_its_stdio),
        cmocka_unit_test(argument_lists_decide_what_runs),
        cmocka_unit_test(a_program_without_a_rule_is_denied_or_asked),
        cmocka_unit_test(variables_must_be_listed_to_be_forwarded),
        cmocka_unit_test(an_asked_command_line_gets_no_variable),
        cmocka_unit_test(forwarded_values_are_scrubbed_from_stdout_and_stderr),
        cmocka_unit_test(forwarded_values_are_scrubbed_in_every_form),
        cmocka_unit_test(a_timeout_kills_the_process_group_grandchild_too),
        cmocka_unit_test(output_beyond_the_limit_is_cut_with_a_note),
        cmocka_unit_test(a_workspace_without_a_directory_cannot_run_processes),
        cmocka_unit_test(file_requests_are_served_while_processes_run),
        cmocka_unit_test(the_end_of_the_tool_kills_its_processes),
        cmocka_unit_test(cancelling_the_tool_kills_its_processes),
        cmocka_unit_test(the_result_has_d11s_shape),
        cmocka_unit_test(the_sdk_runs_a_process),
        cmocka_unit_test(a_registry_vfs_tool_runs_processes),
        cmocka_unit_test(a_thousand_pipelined_runs_never_pass_the_bound),
        cmocka_unit_test(a_registry_tool_bursting_runs_leaves_room_for_others),
        cmocka_unit_test(process_run_children_count_in_max_processes),
        cmocka_unit_test(process_run_waits_for_a_slot_another_tool_frees),
        cmocka_unit_test(process_run_is_refused_when_no_slot_could_ever_free),
        cmocka_unit_test(vfs_tool_calls_beyond_max_processes_wait_for_a_slot),
        cmocka_unit_test(vfs_tool_call_fails_at_once_when_live_handles_hold_every_slot),
        cmocka_unit_test(calls_short_of_fds_wait_for_a_slot_whatever_runs_them),
        cmocka_unit_test(git_runs_nothing_its_planted_configuration_names),
        cmocka_unit_test(git_options_that_run_programs_or_name_files_need_a_rule_to_name_them),
    };
    return tu_hygiene_end(
        (tu_hygiene_begin(), cmocka_run_group_tests(tests, setup, teardown)));
}
