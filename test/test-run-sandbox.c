/* The OS sandbox of process.run's children (issue 15 §3; vfs.h, "The OS
 * sandbox"), attacked as a tool would: test/tools/vfs-probe asks a real
 * host for process.run, and the child (sh, cat, python3, sandbox-probe)
 * tries what the tool's policy does not give it — reading .env and the
 * rest of the sensitive paths, writing outside fs.write's prefixes,
 * planting in .git, using the host's capabilities, secrets and network,
 * and outliving its run or leaving its cgroup — as root, and as a host
 * that is not root. Every attacked file is the test's own. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "process/process.h"
#include "registry-util.h"
#include "sandbox/sandbox.h"
#include "vfs/run.h"
#include "test-files-util.h"

#define PROBE TOOL("vfs-probe")
#define SANDBOX_PROBE TOOL("sandbox-probe")

static char base[4096];    /* holds the two below */
static char root[4200];    /* the workspace */
static char outside[4200]; /* beside it: the host's, not the tool's */

/* Somewhere no profile grants (not /tmp, /usr, /etc, /opt, /sys): the
 * build tree, unless it is under one of those, else /var/tmp. */
static const char *scratch_base(void)
{
    static const char *const granted[] = {"/tmp/", "/usr/", "/etc/", "/opt/", "/sys/"};

    for (size_t i = 0; i < sizeof(granted) / sizeof(granted[0]); i++)
        if (strncmp(JPT_TEST_TOOLS, granted[i], strlen(granted[i])) == 0)
            return "/var/tmp";
    return JPT_TEST_TOOLS "/..";
}

static void put(const char *rel, const char *text)
{
    fu_write(root, rel, text);
}

static bool exists(const char *dir, const char *rel)
{
    char path[4400];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    return lstat(path, &st) == 0;
}

static char *slurp(const char *dir, const char *rel)
{
    static char buf[4096];
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    return ru_read_text(path, buf, sizeof(buf)) >= 0 ? buf : NULL;
}

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "%s/jpt-run-sandbox-XXXXXX", scratch_base());
    if (mkdtemp(base) == NULL)
        return -1;
    snprintf(root, sizeof(root), "%s/ws", base);
    snprintf(outside, sizeof(outside), "%s/outside", base);
    return mkdir(root, 0755) | mkdir(outside, 0755);
}

static int teardown(void **state)
{
    (void)state;
    jpt__sandbox_test_no_namespaces(false);
    fu_rmtree(base);
    return 0;
}

/* Before each test: an empty workspace. */
static int fresh(void **state)
{
    (void)state;
    fu_rmtree(root);
    return mkdir(root, 0755);
}

/* What a process.run child's sandbox lacks here (NULL: nothing), as its
 * report says. */
static const char *run_sandbox_lacks(void)
{
    static char why[1100];
    const char *ll = NULL;
    jpt__sandbox_spec spec = {.profile = JPT__SANDBOX_RUN, .mode = JPT_SANDBOX_BEST_EFFORT};
    jpt__sandbox *sb = NULL;
    jpt__errbuf err;

    if (jpt__landlock_abi(&ll) < 1 || !jpt__seccomp_available(&ll))
        return ll;
    if (jpt__sandbox_prepare(&spec, &sb, &err) < 0)
        return strcpy(why, err.text);
    const jpt__sandbox_report *rep = jpt__sandbox_report_of(sb);
    bool mounts = (rep->enforced & JPT_SANDBOX_ENFORCED_MOUNTS) != 0;
    snprintf(why, sizeof(why), "%s", rep->text);
    jpt__sandbox_free(sb);
    return mounts ? NULL : why;
}

#define NEED_SANDBOX()                                                                      \
    do {                                                                                    \
        const char *why_ = run_sandbox_lacks();                                             \
        if (why_ != NULL) {                                                                 \
            print_message("[ SKIPPED  ] process.run's sandbox is not whole here: %s\n", why_); \
            skip();                                                                         \
        }                                                                                   \
    } while (0)

/* ---- Running a process through a tool ------------------------------------------ */

/* Runs the probe with `ops` (a JSON array text, for js()) as a tool of a
 * host on `dir` with the policy `sandbox_js`; its result text: one line
 * per op ("process.run ok {…}" or "… err <code> <message>"). */
static char *ops_in(const char *dir, int mode, const char *sandbox_js, const char *ops_js)
{
    jpt_vfs_host_options o = {.size = sizeof(o), .root = dir, .kill_grace_ms = 200,
                              .sandbox_mode = mode};
    jpt_vfs_host *h = NULL;
    const char *argv[] = {PROBE, NULL};
    jpt_state *st = NULL;
    char *text = NULL, tool[1 << 15];

    o.sandbox_json = js(sandbox_js);
    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    snprintf(tool, sizeof(tool), "{\"name\":\"probe\",\"arguments\":{\"ops\":%s}}", js(ops_js));
    if (jpt_vfs_host_spawn(h, argv, tool) != JPT_OK)
        fail_msg("spawn: %s", jpt_vfs_host_errmsg(h));
    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_vfs_host_state(h, &st), JPT_OK);
    assert_int_equal(jpt_state_render(st, NULL, &text), JPT_OK);
    if (jpt_state_is_error(st))
        fail_msg("the probe failed: %s", text);
    char *out = strdup(text);
    jpt_free(text);
    jpt_state_unref(st);
    jpt_vfs_host_free(h);
    return out;
}

/* One `sh -c script` in the workspace: its result, parsed. */
static json_t *sh_in(const char *sandbox_js, const char *script)
{
    json_t *ops = json_pack("[{s:s, s:{s:s, s:[s,s]}}]", "method", "process.run", "params",
                            "program", "sh", "args", "-c", script);
    char *text = json_dumps(ops, JSON_COMPACT);
    for (char *c = text; *c != '\0'; c++)
        if (*c == '\'')
            fail_msg("the script must not hold a single quote (js() turns it into \")");
    char *line = ops_in(root, JPT_SANDBOX_DEFAULT, sandbox_js, text);
    static const char prefix[] = "process.run ok ";
    if (strncmp(line, prefix, sizeof(prefix) - 1) != 0)
        fail_msg("expected a result, got: %s", line);
    json_t *result = parse(line + sizeof(prefix) - 1);
    free(line);
    free(text);
    json_decref(ops);
    return result;
}

static const char *out_of(const json_t *result, const char *stream)
{
    const char *s = json_string_value(json_object_get(result, stream));
    assert_non_null(s);
    return s;
}

static void assert_lacks(const char *text, const char *what)
{
    if (strstr(text, what) != NULL)
        fail_msg("'%s' got through:\n%s", what, text);
}

/* ---- What it reads --------------------------------------------------------------- */

static void a_child_reads_no_sensitive_or_denied_path(void **state)
{
    (void)state;
    NEED_SANDBOX();
    put("README", "readme\n");
    put(".env", "SECRET-1\n");
    put(".ENV", "SECRET-2\n");
    fu_mkdir(root, "sub");
    put("sub/.env.local", "SECRET-3\n");
    fu_mkdir(root, ".ssh");
    put(".ssh/id_rsa", "SECRET-4\n");
    fu_mkdir(root, "certs");
    put("certs/server.pem", "SECRET-5\n");
    fu_mkdir(root, "private");
    put("private/notes", "SECRET-6\n");
    fu_mkdir(root, ".git");
    put(".git/config", "SECRET-7\n");
    put(".git/HEAD", "ref: refs/heads/main\n");

    /* What `cat **` would do, and a search of everything. */
    json_t *r = sh_in("{'filesystem':{'deny':['private']},'commands':{'sh':{}}}",
                      "cat README .env .ENV sub/.env.local .ssh/id_rsa certs/server.pem "
                      "private/notes .git/config .git/HEAD; ls .ssh private; "
                      "grep -r SECRET . ; echo done");
    const char *out = out_of(r, "stdout"), *err = out_of(r, "stderr");
    assert_non_null(strstr(out, "readme\n"));
    assert_non_null(strstr(out, "ref: refs/heads/main\n"));
    assert_non_null(strstr(out, "done\n"));
    assert_lacks(out, "SECRET");
    assert_lacks(err, "SECRET");
    assert_non_null(strstr(err, ".env: Permission denied"));
    json_decref(r);
}

static void a_child_reads_nothing_of_the_host_outside_the_system(void **state)
{
    (void)state;
    NEED_SANDBOX();
    char script[9000];
    fu_write(outside, "host-key", "SECRET-HOST\n");
    snprintf(script, sizeof(script), "cat %s/host-key /etc/shadow; cat /etc/hostname >/dev/null "
                                     "&& echo system-ok",
             outside);
    json_t *r = sh_in("{'commands':{'sh':{}}}", script);
    const char *out = out_of(r, "stdout");
    assert_lacks(out, "SECRET");
    assert_lacks(out, "root:");
    if (access("/etc/hostname", R_OK) == 0)
        assert_non_null(strstr(out, "system-ok"));
    json_decref(r);
}

/* ---- What it writes ---------------------------------------------------------------- */

static void a_child_writes_only_where_fs_write_may(void **state)
{
    (void)state;
    NEED_SANDBOX();
    char script[9000], host_tmp[256];
    struct stat before, after;
    put("README", "readme\n");
    fu_mkdir(root, "out");
    assert_int_equal(stat(fu_path(root, "README"), &before), 0);
    snprintf(host_tmp, sizeof(host_tmp), "/tmp/jpt-run-sandbox-%d", (int)getpid());
    unlink(host_tmp);
    snprintf(script, sizeof(script),
             "echo a > out/a.txt; echo b > b.txt; echo c > %s/c.txt; echo d > %s; "
             "chmod 777 README; touch -d 2001-01-01 README; mkdir out/.git; "
             "echo t > /tmp/own && cat /tmp/own",
             outside, host_tmp);
    json_t *r = sh_in("{'filesystem':{'writable':['out']},'commands':{'sh':{}}}", script);
    const char *out = out_of(r, "stdout");

    /* Its /tmp is its own: the host's has nothing of it (a file there is
     * removed before the test fails). */
    bool in_host_tmp = exists("/", host_tmp + 1);
    unlink(host_tmp);
    assert_false(in_host_tmp);
    assert_true(exists(root, "out/a.txt"));
    assert_false(exists(root, "b.txt"));
    assert_false(exists(outside, "c.txt"));
    assert_non_null(strstr(out, "t\n"));
    assert_int_equal(stat(fu_path(root, "README"), &after), 0);
    assert_int_equal(after.st_mode, before.st_mode);
    assert_int_equal(after.st_mtime, before.st_mtime);
    json_decref(r);
}

/* The adversarial pass: a .git file (a submodule's or a worktree's,
 * "gitdir: <path>") names where the repository is: rewritten to name a
 * directory the child made, with a core.fsmonitor of its own, the
 * user's next `git status` there would run it. It stays read-only as a
 * .git directory does. */
static void a_childs_git_file_stays_read_only(void **state)
{
    (void)state;
    NEED_SANDBOX();
    fu_mkdir(root, "sub");
    put("sub/.git", "gitdir: ../.git/modules/sub\n");
    json_t *r = sh_in("{'filesystem':{'writable':true},'commands':{'sh':{}}}",
                      "echo gitdir: ../evil > sub/.git; rm -f sub/.git; "
                      "mv sub/.git sub/moved; echo ok > sub/file.txt");
    const char *git = slurp(root, "sub/.git");

    if (git == NULL || strcmp(git, "gitdir: ../.git/modules/sub\n") != 0)
        fail_msg("the child changed sub/.git: %s", git != NULL ? git : "(removed)");
    assert_false(exists(root, "sub/moved"));
    assert_string_equal(slurp(root, "sub/file.txt"), "ok\n");
    json_decref(r);
}

/* The adversarial pass: where it may write, a child of a root host
 * would leave a program that runs as root for whoever may run it (a
 * set-user-ID or set-group-ID file); the bits are refused however they
 * are asked for. */
static void a_child_makes_no_setuid_file(void **state)
{
    (void)state;
    NEED_SANDBOX();
    fu_mkdir(root, "out");
    json_t *r = sh_in("{'filesystem':{'writable':['out']},'commands':{'sh':{}}}",
                      "cp /bin/true out/t; chmod u+s out/t; chmod g+s out/t; chmod 6755 out/t; "
                      "install -m 4755 /bin/true out/i; cp -p out/t out/p; "
                      "mkfifo -m 4755 out/f; ls -l out");
    char cmd[4400];
    snprintf(cmd, sizeof(cmd), "find '%s' -perm /6000 | grep -q .", root);

    if (system(cmd) == 0)
        fail_msg("a set-user-ID or set-group-ID file was left:\n%s", out_of(r, "stdout"));
    assert_true(exists(root, "out/t"));
    json_decref(r);
}

static void a_childs_git_metadata_stays_read_only(void **state)
{
    (void)state;
    NEED_SANDBOX();
    fu_mkdir(root, ".git");
    fu_mkdir(root, ".git/hooks");
    put(".git/HEAD", "ref: refs/heads/main\n");
    put(".git/config", "[core]\n");
    json_t *r = sh_in("{'filesystem':{'writable':true},'commands':{'sh':{}}}",
                      "echo x >> .git/HEAD; echo evil > .git/hooks/pre-commit; "
                      "echo fsmonitor=evil >> .git/config; echo ok > file.txt");

    assert_string_equal(slurp(root, ".git/HEAD"), "ref: refs/heads/main\n");
    assert_string_equal(slurp(root, ".git/config"), "[core]\n");
    assert_false(exists(root, ".git/hooks/pre-commit"));
    assert_string_equal(slurp(root, "file.txt"), "ok\n");
    json_decref(r);
}

/* The attack the issue names: a module the tool wrote, imported by an
 * allowed `python3 -m unittest`, runs in the sandbox too. */
static void code_the_tool_wrote_runs_confined(void **state)
{
    (void)state;
    NEED_SANDBOX();
    if (access("/usr/bin/python3", X_OK) != 0) {
        print_message("[ SKIPPED  ] no /usr/bin/python3\n");
        skip();
    }
    char module[8192], key[4400];
    put(".env", "SECRET-ENV\n");
    fu_write(outside, "k", "SECRET-OUT\n");
    snprintf(key, sizeof(key), "%s/k", outside);
    snprintf(module, sizeof(module),
             "import unittest\n"
             "class T(unittest.TestCase):\n"
             "    def test(self):\n"
             "        for p in (\".env\", \"/etc/shadow\", \"%s\"):\n"
             "            try:\n"
             "                print(open(p).read())\n"
             "            except OSError:\n"
             "                print(\"no\", p)\n",
             key);
    json_t *ops = json_pack("[{s:s, s:{s:s, s:s}}, {s:s, s:{s:s, s:[s,s,s]}}]", "method",
                            "fs.write", "params", "path", "test_x.py", "content", module,
                            "method", "process.run", "params", "program", "/usr/bin/python3", "args",
                            "-m", "unittest", "test_x");
    char *ops_text = json_dumps(ops, JSON_COMPACT);
    char *lines = ops_in(root, JPT_SANDBOX_DEFAULT,
                         "{'filesystem':{'writable':true},'commands':{'/usr/bin/python3':{}}}",
                         ops_text);
    free(ops_text);
    json_decref(ops);
    assert_non_null(strstr(lines, "process.run ok "));
    if (strstr(lines, "no .env") == NULL)
        fail_msg("the module did not run as expected: %s", strchr(lines, '\n'));
    assert_lacks(lines, "SECRET");
    assert_lacks(lines, "root:");
    free(lines);
}

/* ---- What else it has -------------------------------------------------------------- */

static void a_child_has_no_capabilities_nor_network(void **state)
{
    (void)state;
    NEED_SANDBOX();
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr = {htonl(INADDR_LOOPBACK)}};
    socklen_t len = sizeof(sin);
    assert_int_equal(bind(listener, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(listener, 4), 0);
    assert_int_equal(getsockname(listener, (struct sockaddr *)&sin, &len), 0);
    char ops[8192], port[32];
    snprintf(port, sizeof(port), "tcp:%d", ntohs(sin.sin_port));
    snprintf(ops, sizeof(ops),
             "[{'method':'process.run','params':{'program':'%s','args':['host:%d','caps',"
             "'sethostname','syslog','settimeofday','reboot','socket-inet','%s',"
             "'prlimit-parent','affinity-parent','prlimit-self']}}]",
             SANDBOX_PROBE, (int)getpid(), port);
    char policy[8192];
    snprintf(policy, sizeof(policy), "{'commands':{'%s':{}}}", SANDBOX_PROBE);
    char *lines = ops_in(root, JPT_SANDBOX_DEFAULT, policy, ops);
    close(listener);
    static const char prefix[] = "process.run ok ";
    if (strncmp(lines, prefix, sizeof(prefix) - 1) != 0)
        fail_msg("expected a result: %s", lines);
    json_t *r = parse(lines + sizeof(prefix) - 1);
    const char *out = out_of(r, "stdout");
    static const char *const denied[] = {"sethostname", "syslog", "settimeofday", "reboot",
                                         "socket-inet", "prlimit-parent", "affinity-parent"};
    char want[128];
    assert_non_null(strstr(out, "caps none\n"));
    for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
        snprintf(want, sizeof(want), "%s EPERM\n", denied[i]);
        if (strstr(out, want) == NULL)
            fail_msg("expected %s:\n%s", want, out);
    }
    snprintf(want, sizeof(want), "%s EPERM\n", port);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "prlimit-self ok"));
    json_decref(r);
    free(lines);
}

static void what_a_child_starts_ends_with_it(void **state)
{
    (void)state;
    NEED_SANDBOX();
    /* A session of its own (out of the process group), and the standalone
     * host; then out of its cgroup, into the host's. */
    json_t *r = sh_in("{'commands':{'sh':{}}}",
                      "setsid sleep 86399 </dev/null >/dev/null 2>&1 & echo started");
    assert_string_equal(out_of(r, "stdout"), "started\n");
    json_decref(r);
    ru_assert_none_sleeping("86399");

    jpt__errbuf err;
    int host_cgroup = jpt__cgroup_open_host(NULL, &err);
    if (host_cgroup < 0) {
        print_message("[ SKIPPED  ] the cgroup part: %s\n", err.text);
        return;
    }
    char procs[256], script[1024];
    close(host_cgroup);
    jpt__buf dir = JPT__BUF_INIT;
    char cg[4096], mounts[1 << 16];
    assert_true(ru_read_text("/proc/self/cgroup", cg, sizeof(cg)) > 0);
    assert_true(ru_read_text("/proc/self/mountinfo", mounts, sizeof(mounts)) > 0);
    assert_int_equal(jpt__cgroup_path(cg, mounts, &dir, &err), JPT_OK);
    snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir.data);
    jpt__buf_free(&dir);
    snprintf(script, sizeof(script), "echo $$ > %s && echo moved", procs);
    r = sh_in("{'commands':{'sh':{}}}", script);
    assert_lacks(out_of(r, "stdout"), "moved");
    json_decref(r);
}

/* ---- The second adversarial pass's findings (issue 15) ----------------------------- */

/* R1: where it may write, a child made a repository of its own (a .git
 * with HEAD, objects, refs and a config naming a core.fsmonitor): the
 * user's next `git status` in that directory ran the child's command,
 * outside every sandbox. Landlock grants by directory, not by name: the
 * sweep after the run moves aside what the walk before it did not find
 * (to a name git never takes, nothing deleted), and the tool is told. */
static void a_child_plants_no_repository(void **state)
{
    (void)state;
    NEED_SANDBOX();
    fu_mkdir(root, "out");
    json_t *r = sh_in("{'filesystem':{'writable':['out']},'commands':{'sh':{}}}",
                      "mkdir -p out/.git/objects out/.git/refs && "
                      "echo ref: refs/heads/main > out/.git/HEAD && "
                      "printf [core]\\\\n\\\\tfsmonitor=touch-pwned\\\\n > out/.git/config");
    assert_false(exists(root, "out/.git"));
    assert_true(exists(root, "out/.git.jptool-quarantine/config")); /* nothing deleted */
    assert_non_null(strstr(out_of(r, "stderr"),
                           "[jptool: moved aside out/.git (now out/.git.jptool-quarantine): a "
                           "repository made"));
    json_decref(r);
}

/* The same in every other shape git takes for a repository: .git in
 * another case (a case-insensitive file system's .git), a "gitdir:" file
 * naming a directory the child made, a .git in a directory of a
 * sensitive name it made (no cover there), a bare repository (its HEAD
 * is moved aside); and with a repository that was there renamed away and
 * its name taken: the one that was there stays, whole. */
static void a_child_plants_no_repository_in_any_shape(void **state)
{
    (void)state;
    NEED_SANDBOX();
    fu_mkdir(root, "out");
    fu_mkdir(root, "out/keep");
    fu_mkdir(root, "out/keep/.git");
    put("out/keep/.git/config", "[core]\n");
    put("out/notes.txt", "mine\n");
    json_t *r = sh_in("{'filesystem':{'writable':['out']},'commands':{'sh':{}}}",
                      "cd out && mkdir -p a/.GIT b c/.ssh/.git evil/objects evil/refs && "
                      "echo gitdir: ../evil > b/.git && echo ref: refs/heads/x > evil/HEAD && "
                      "echo [core] > evil/config && mv keep moved && mkdir -p keep/.git && "
                      "echo [core] > keep/.git/config && echo ok");
    assert_string_equal(out_of(r, "stdout"), "ok\n");
    assert_non_null(strstr(out_of(r, "stderr"), "[jptool: moved aside "));
    json_decref(r);
    assert_false(exists(root, "out/a/.GIT"));
    assert_false(exists(root, "out/b/.git"));
    assert_false(exists(root, "out/c/.ssh/.git"));
    assert_false(exists(root, "out/evil/HEAD"));
    assert_true(exists(root, "out/evil/HEAD.jptool-quarantine"));
    assert_true(exists(root, "out/evil/config")); /* no repository without HEAD */
    assert_false(exists(root, "out/keep/.git"));
    assert_string_equal(slurp(root, "out/moved/.git/config"), "[core]\n");
    assert_string_equal(slurp(root, "out/notes.txt"), "mine\n");
}

/* A bare repository where a child may write stays read-only to it, as a
 * .git does. */
static void a_bare_repository_where_a_child_writes_stays_read_only(void **state)
{
    (void)state;
    NEED_SANDBOX();
    fu_mkdir(root, "out");
    fu_mkdir(root, "out/repo");
    fu_mkdir(root, "out/repo/objects");
    fu_mkdir(root, "out/repo/refs");
    put("out/repo/HEAD", "ref: refs/heads/main\n");
    put("out/repo/config", "[core]\n");
    json_t *r = sh_in("{'filesystem':{'writable':['out']},'commands':{'sh':{}}}",
                      "echo [core] fsmonitor = touch pwned >> out/repo/config; "
                      "rm -f out/repo/HEAD; echo x > out/other.txt && echo written");
    assert_string_equal(out_of(r, "stdout"), "written\n");
    json_decref(r);
    assert_string_equal(slurp(root, "out/repo/config"), "[core]\n");
    assert_true(exists(root, "out/repo/HEAD"));
}

/* R2: there was no bound on a child's processes: 1000 of them started
 * (for a root host RLIMIT_NPROC does not apply). Its cgroup's pids.max,
 * or its PID namespace's pid_max, bounds them to the rule's
 * process_limit (512 by default), the child itself counted. */
static void a_childs_processes_are_bounded(void **state)
{
    (void)state;
    NEED_SANDBOX();
    json_t *r = sh_in("{'commands':{'sh':{'timeout_ms':60000}}}",
                      "n=0; while [ $n -lt 1000 ]; do sleep 30 & n=$((n+1)); done; "
                      "echo started $n");
    const char *out = out_of(r, "stdout");
    bool all = strstr(out, "started 1000") != NULL;
    json_decref(r);
    assert_false(all);
}

/* N1: a workspace below /tmp whose root the policy does not let the
 * child read (filesystem.allow names "src" alone) is where the child
 * starts all the same: its private /tmp holds the workspace again, not
 * only the prefixes it may read. */
static void a_child_starts_in_a_workspace_in_tmp_whose_root_it_may_not_read(void **state)
{
    (void)state;
    NEED_SANDBOX();
    char ws[64] = "/tmp/jpt-run-sandbox-ws-XXXXXX";
    assert_non_null(mkdtemp(ws));
    fu_mkdir(ws, "src");
    fu_write(ws, "src/a.txt", "in src\n");
    fu_write(ws, "top.txt", "at the root\n");
    char *line = ops_in(ws, JPT_SANDBOX_DEFAULT,
                        "{'filesystem':{'allow':['src']},'commands':{'sh':{}}}",
                        "[{'method':'process.run','params':{'program':'sh','args':['-c',"
                        "'cat src/a.txt; cat top.txt; pwd; echo x > new.txt; ls']}}]");
    bool made = access(fu_path(ws, "new.txt"), F_OK) == 0;
    fu_rmtree(ws);
    assert_false(made);
    static const char prefix[] = "process.run ok ";
    if (strncmp(line, prefix, sizeof(prefix) - 1) != 0)
        fail_msg("expected a result, got: %s", line);
    json_t *r = parse(line + sizeof(prefix) - 1);
    free(line);
    char expected[128];
    /* It lists what it may read of the root, and writes nothing there. */
    snprintf(expected, sizeof(expected), "in src\n%s\nsrc\n", ws);
    assert_string_equal(out_of(r, "stdout"), expected);
    assert_non_null(strstr(out_of(r, "stderr"), "top.txt"));
    assert_non_null(strstr(out_of(r, "stderr"), "new.txt"));
    json_decref(r);
}

static void a_rules_process_limit_bounds_its_child(void **state)
{
    (void)state;
    NEED_SANDBOX();
    static const char policy[] = "{'commands':{'sh':{'process_limit':20}}}";
    json_t *r = sh_in(policy, "n=0; while [ $n -lt 19 ]; do sleep 30.19 & n=$((n+1)); done; "
                              "echo started $n");
    assert_string_equal(out_of(r, "stdout"), "started 19\n");
    json_decref(r);
    ru_assert_none_sleeping("30.19");
    r = sh_in(policy, "n=0; while [ $n -lt 20 ]; do sleep 30.2 & n=$((n+1)); done; "
                      "echo started $n");
    assert_null(strstr(out_of(r, "stdout"), "started 20"));
    json_decref(r);
    ru_assert_none_sleeping("30.2");
}

/* R4: between the walk that finds what a child may not read and the
 * child's mounts, another process of the tool renames a sensitive file's
 * directory and makes it again (a decoy .env where the real one was): the
 * cover would land on the decoy, and the real one, moved, be read. Each
 * covered path is checked to be the file the walk found: the spawn fails
 * instead. Made deterministic here by doing the rename between the two
 * (the walk's and the spawn's internal calls). */
static void a_covered_path_moved_before_the_mounts_fails_the_spawn(void **state)
{
    (void)state;
    NEED_SANDBOX();
    fu_mkdir(root, "a");
    put("a/.env", "SECRET-MOVED\n");
    jpt_policy *p = NULL;
    assert_int_equal(jpt_policy_new(js("{'commands':{'cat':{}}}"), &p), JPT_OK);
    int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(root_fd >= 0);
    jpt__vfs_confine *c = NULL;
    jpt__errbuf err = {{0}};
    assert_int_equal(jpt__vfs_confine_new(p, root_fd, JPT_SANDBOX_REQUIRED, false, 0, NULL, &c,
                                          &err),
                     JPT_OK);
    assert_int_equal(jpt__vfs_confine_step(c, 0, &err), 0);
    char from[4400], to[4400];
    snprintf(from, sizeof(from), "%s/a", root);
    snprintf(to, sizeof(to), "%s/b", root);
    assert_int_equal(rename(from, to), 0);
    fu_mkdir(root, "a");
    put("a/.env", "decoy\n");

    jpt__loop *l = NULL;
    assert_int_equal(jpt__loop_new(&l), JPT_OK);
    static const jpt__child_ops ops = {NULL, NULL, NULL};
    const char *argv[] = {"cat", "b/.env", NULL};
    jpt__spawn sp = {.argv = argv, .cwd_fd = &root_fd, .devnull = -1,
                     .sandbox = jpt__vfs_confine_spec(c)};
    jpt__child *child = NULL;
    int rc = jpt__child_spawn(l, &sp, &ops, NULL, &child, &err);
    jpt__child_free(child);
    jpt__loop_free(l);
    jpt__vfs_confine_free(c);
    jpt_policy_free(p);
    close(root_fd);
    assert_int_equal(rc, JPT_ERR_SANDBOX);
    assert_non_null(strstr(err.text, "the workspace changed while the process started"));
}

/* A child that may write the workspace renames the directory above what
 * it may not read: a filesystem.deny prefix of two names (config/prod)
 * and a sensitive pattern of two (.aws/credentials) match by name, so
 * "config" renamed "cfg" and ".aws" renamed "aws" would put both out of
 * the policy's reach, and the tool would read them with fs.read (which
 * refuses renaming them itself). Each directory whose name the verdict
 * depends on is a mount point of its own in the child's view, which no
 * rename moves (EBUSY). */
static void a_child_renames_nothing_a_verdict_depends_on(void **state)
{
    (void)state;
    NEED_SANDBOX();
    fu_mkdir(root, "config");
    fu_mkdir(root, "config/prod");
    put("config/prod/db.yml", "SECRET-DENIED\n");
    put("config/dev.yml", "dev\n");
    fu_mkdir(root, "home");
    fu_mkdir(root, "home/.aws");
    put("home/.aws/credentials", "SECRET-AWS\n");
    put("home/.aws/region", "eu\n");
    char *t = ops_in(root, JPT_SANDBOX_DEFAULT,
                     "{'filesystem':{'writable':true,'deny':['config/prod']},"
                     "'commands':{'sh':{}}}",
                     "[{'method':'process.run','params':{'program':'sh','args':['-c',"
                     "'mv config cfg; mv home/.aws home/aws; mv home h2; cat config/dev.yml "
                     "h2/.aws/region; echo x > config/new; echo done']}},"
                     "{'method':'fs.read','params':{'path':'cfg/prod/db.yml'}},"
                     "{'method':'fs.read','params':{'path':'home/aws/credentials'}},"
                     "{'method':'fs.read','params':{'path':'h2/aws/credentials'}}]");
    assert_lacks(t, "SECRET");
    /* What does not move the verdict still works: a parent renamed
     * above the pattern's names, files read and written beneath. */
    assert_non_null(strstr(t, "dev\\neu\\ndone\\n"));
    assert_true(exists(root, "h2/.aws/credentials"));
    assert_true(exists(root, "config/prod/db.yml"));
    assert_true(exists(root, "config/new"));
    free(t);
}

/* The covered files themselves: a hard link to one, a rename of one, a
 * copy, each to a name no verdict holds, for the tool's fs.read (held:
 * a link or rename across the cover's mount is EXDEV or EBUSY, and the
 * cover reads as nothing). */
static void a_child_links_or_moves_no_covered_file(void **state)
{
    (void)state;
    NEED_SANDBOX();
    put(".env", "SECRET-ENV\n");
    fu_mkdir(root, "private");
    put("private/key", "SECRET-KEY\n");
    char *t = ops_in(root, JPT_SANDBOX_DEFAULT,
                     "{'filesystem':{'writable':true,'deny':['private']},'commands':{'sh':{}}}",
                     "[{'method':'process.run','params':{'program':'sh','args':['-c',"
                     "'ln .env a; ln private/key b; mv .env c; mv private d; "
                     "cp .env e; ln -s .env f; echo done']}},"
                     "{'method':'fs.read','params':{'path':'a'}},"
                     "{'method':'fs.read','params':{'path':'b'}},"
                     "{'method':'fs.read','params':{'path':'c'}},"
                     "{'method':'fs.read','params':{'path':'d/key'}},"
                     "{'method':'fs.read','params':{'path':'e'}},"
                     "{'method':'fs.read','params':{'path':'f'}}]");
    assert_lacks(t, "SECRET");
    assert_non_null(strstr(t, "done"));
    assert_string_equal(slurp(root, ".env"), "SECRET-ENV\n");
    assert_string_equal(slurp(root, "private/key"), "SECRET-KEY\n");
    free(t);
}

/* A directory renamed while the walk runs, from where the walk has not
 * been yet to where it has been: between two of its slices, the tool's
 * own fs.rename or another child of its (a writable workspace) moves
 * x/y/s, which holds a .env, to the root, already listed. The walk finds
 * x/y without s, never lists s2, and a child would read s2/.env. What
 * it holds is covered all the same: the walk starts again when a
 * directory it listed changed before its end. */
static void a_secret_moved_behind_the_walk_is_covered(void **state)
{
    (void)state;
    NEED_SANDBOX();
    char file[64];
    fu_mkdir(root, "big");
    for (int f = 0; f < 400; f++) {
        snprintf(file, sizeof(file), "big/f%03d", f);
        put(file, "x\n");
    }
    fu_mkdir(root, "x");
    fu_mkdir(root, "x/y");
    fu_mkdir(root, "x/y/s");
    put("x/y/s/.env", "SECRET-BEHIND\n");
    jpt_policy *p = NULL;
    assert_int_equal(jpt_policy_new(js("{'commands':{'cat':{}}}"), &p), JPT_OK);
    int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(root_fd >= 0);
    jpt__vfs_confine *c = NULL;
    jpt__errbuf err = {{0}};
    assert_int_equal(jpt__vfs_confine_new(p, root_fd, JPT_SANDBOX_REQUIRED, false, 0, NULL, &c,
                                          &err),
                     JPT_OK);
    /* The first slice lists the root (1 ns: the clock is read after
     * each directory and every 64 entries). */
    assert_int_equal(jpt__vfs_confine_step(c, 1, &err), 1);
    char from[4400], to[4400];
    snprintf(from, sizeof(from), "%s/x/y/s", root);
    snprintf(to, sizeof(to), "%s/s2", root);
    assert_int_equal(rename(from, to), 0);
    int rc, steps = 0;
    while ((rc = jpt__vfs_confine_step(c, 1, &err)) == 1)
        assert_true(++steps < 100000);
    assert_int_equal(rc, 0);
    const jpt__sandbox_spec *spec = jpt__vfs_confine_spec(c);
    /* The spec's paths are real paths: the end is compared. */
    static const char want[] = "/ws/s2/.env";
    bool covered = false;
    for (size_t i = 0; spec->hide != NULL && spec->hide[i] != NULL; i++) {
        size_t n = strlen(spec->hide[i]);
        covered |= n >= sizeof(want) - 1 &&
                   strcmp(spec->hide[i] + n - (sizeof(want) - 1), want) == 0;
    }
    jpt__vfs_confine_free(c);
    jpt_policy_free(p);
    close(root_fd);
    if (!covered)
        fail_msg("s2/.env was moved behind the walk and is not covered");
}

/* Issue 18 after the third adversarial pass: the check that no directory
 * a walk listed changed before its end (a stat each) ran whole in the
 * dispatch that ended the walk: 2.6-2.8 ms for a walk of 100 000 entries
 * (bench-process-run). It goes in slices, and still sees a change. */
static void the_check_of_a_walks_stamps_goes_in_slices(void **state)
{
    (void)state;
    enum { DIRS = 3000 };
    char top[64] = "/var/tmp/jpt-stamps-XXXXXX", rel[32];
    assert_non_null(mkdtemp(top));
    int root_fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(root_fd >= 0);
    jpt__walk_stamp *v = calloc(DIRS, sizeof(*v));
    assert_non_null(v);
    for (int i = 0; i < DIRS; i++) {
        struct stat st;
        snprintf(rel, sizeof(rel), "d%d", i);
        assert_int_equal(mkdirat(root_fd, rel, 0700), 0);
        assert_int_equal(fstatat(root_fd, rel, &st, AT_SYMLINK_NOFOLLOW), 0);
        v[i].rel = strdup(rel);
        v[i].dev = (uint64_t)st.st_dev;
        v[i].ino = (uint64_t)st.st_ino;
        v[i].ctime = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    }
    jpt__walk_stamps s = {v, DIRS, DIRS};
    size_t next = 0;
    int steps = 0, rc;
    while ((rc = jpt__walk_stamps_step(&s, root_fd, &next, 1)) == 1)
        steps++;
    assert_int_equal(rc, 0);
    assert_int_equal(next, DIRS);
    assert_true(steps >= DIRS / 64 - 1);
    /* One changed (an entry made in it): seen, in slices or at once. */
    assert_int_equal(mkdirat(root_fd, "d2999/new", 0700), 0);
    next = 0;
    while ((rc = jpt__walk_stamps_step(&s, root_fd, &next, 1)) == 1)
        ;
    assert_int_equal(rc, -1);
    assert_false(jpt__walk_stamps_same(&s, root_fd));
    assert_int_equal(unlinkat(root_fd, "d2999/new", AT_REMOVEDIR), 0);
    for (int i = 0; i < DIRS; i++) {
        assert_int_equal(unlinkat(root_fd, v[i].rel, AT_REMOVEDIR), 0);
        free(v[i].rel);
    }
    free(v);
    close(root_fd);
    assert_int_equal(rmdir(top), 0);
}

/* The spec of a walk stepped `budget_ns` at a time (0: at once), and the
 * number of steps it took; its hidden paths in `hidden`, one a line. */
static int confine_in_steps(jpt_policy *p, int root_fd, uint64_t budget_ns, char *hidden,
                            size_t size, size_t *scanned)
{
    jpt__vfs_confine *c = NULL;
    jpt__errbuf err = {{0}};
    int steps = 0, rc;

    assert_int_equal(jpt__vfs_confine_new(p, root_fd, JPT_SANDBOX_BEST_EFFORT, false, 0, NULL,
                                          &c, &err),
                     JPT_OK);
    do {
        rc = jpt__vfs_confine_step(c, budget_ns, &err);
        steps++;
        assert_true(steps < 100000);
    } while (rc == 1);
    assert_int_equal(rc, 0);
    const jpt__sandbox_spec *spec = jpt__vfs_confine_spec(c);
    size_t n = 0;
    hidden[0] = '\0';
    for (size_t i = 0; spec->hide != NULL && spec->hide[i] != NULL; i++)
        n += (size_t)snprintf(hidden + n, n < size ? size - n : 0, "%s\n", spec->hide[i]);
    assert_true(n < size);
    *scanned = jpt__vfs_confine_scanned(c);
    jpt__vfs_confine_free(c);
    return steps;
}

/* R3: the walk that finds what a child may not read (up to
 * JPT_VFS_RUN_SCAN_MAX entries, tens of milliseconds) ran whole in the
 * dispatch that read the request: every other tool's call waited. It goes
 * in slices now, a step at a time from the loop, and comes to what the
 * whole walk finds. (Its time in the loop: bench-process-run.) */
static void the_walk_before_a_run_goes_in_slices(void **state)
{
    (void)state;
    char dir[64], file[96];
    for (int d = 0; d < 30; d++) {
        snprintf(dir, sizeof(dir), "d%02d", d);
        fu_mkdir(root, dir);
        snprintf(file, sizeof(file), "%s/.env", dir);
        put(file, "SECRET\n");
        for (int f = 0; f < 40; f++) {
            snprintf(file, sizeof(file), "%s/f%02d.txt", dir, f);
            put(file, "x\n");
        }
    }
    jpt_policy *p = NULL;
    assert_int_equal(jpt_policy_new(js("{'commands':{'cat':{}}}"), &p), JPT_OK);
    int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(root_fd >= 0);
    int probe = jpt__walk_open(root_fd, ".", O_RDONLY | O_DIRECTORY);
    if (probe < 0 && errno == ENOSYS) {
        close(root_fd);
        jpt_policy_free(p);
        print_message("[ SKIPPED  ] no openat2 here (valgrind does not know it): the walk "
                      "cannot run\n");
        skip();
    }
    assert_true(probe >= 0);
    close(probe);
    static char whole[8192], sliced[8192];
    size_t whole_n = 0, sliced_n = 0;
    assert_int_equal(confine_in_steps(p, root_fd, 0, whole, sizeof(whole), &whole_n), 1);
    /* The clock is read every 64 entries: 1 ns a step is 64 entries. */
    int steps = confine_in_steps(p, root_fd, 1, sliced, sizeof(sliced), &sliced_n);
    jpt_policy_free(p);
    close(root_fd);
    assert_true(whole_n >= 1230);
    assert_int_equal(sliced_n, whole_n);
    assert_true(steps >= 10);
    assert_non_null(strstr(whole, "/d29/.env\n"));
    assert_string_equal(sliced, whole);
}

/* ---- Modes, bounds ----------------------------------------------------------------- */

static void required_mode_refuses_a_child_it_cannot_confine(void **state)
{
    (void)state;
    NEED_SANDBOX();
    put(".env", "SECRET-ENV\n");
    jpt__sandbox_test_no_namespaces(true);
    char *lines = ops_in(root, JPT_SANDBOX_REQUIRED, "{'commands':{'cat':{}}}",
                         "[{'method':'process.run','params':{'program':'cat','args':['.env']}}]");
    jpt__sandbox_test_no_namespaces(false);
    assert_lacks(lines, "SECRET");
    assert_non_null(strstr(lines, "process.run err -32603 process.run 'cat': the OS sandbox "
                                  "of process.run is required, but this host cannot give the "
                                  "process a mount namespace"));
    free(lines);
    /* Off: the tool asked for no sandbox, and its children get none. */
    lines = ops_in(root, JPT_SANDBOX_OFF, "{'commands':{'cat':{}}}",
                   "[{'method':'process.run','params':{'program':'cat','args':['.env']}}]");
    assert_non_null(strstr(lines, "SECRET-ENV"));
    free(lines);
}

/* The adversarial pass: a workspace in /opt (or /usr/src, /etc), which
 * a child may read as part of the system: everything of it outside the
 * policy's prefixes (.env, the paths the tool would be asked about) was
 * readable, as the walk that finds what to hide only looks beneath the
 * prefixes. Such a workspace is refused in mode "required". */
static void a_workspace_the_system_grants_is_refused(void **state)
{
    (void)state;
    NEED_SANDBOX();
    char ws[64] = "/opt/jpt-run-ws-XXXXXX";
    if (mkdtemp(ws) == NULL) {
        print_message("[ SKIPPED  ] no directory can be made in /opt: %s\n", strerror(errno));
        skip();
    }
    fu_write(ws, ".env", "SECRET-ENV\n");
    fu_write(ws, "private.txt", "SECRET-ASKED\n");
    fu_mkdir(ws, "src");
    char *lines = ops_in(ws, JPT_SANDBOX_DEFAULT,
                         "{'filesystem':{'allow':['src']},'commands':{'cat':{}}}",
                         "[{'method':'process.run','params':{'program':'cat','args':"
                         "['.env','private.txt']}}]");
    fu_rmtree(ws);
    assert_lacks(lines, "SECRET");
    assert_non_null(strstr(lines, "process.run err -32603"));
    assert_non_null(strstr(lines, "lies beneath /opt"));
    free(lines);
}

static void too_many_paths_to_cover_refuse_the_run(void **state)
{
    (void)state;
    NEED_SANDBOX();
    char name[64];
    fu_mkdir(root, "keys");
    for (int i = 0; i <= JPT_VFS_RUN_COVER_MAX; i++) {
        snprintf(name, sizeof(name), "keys/%d.pem", i);
        put(name, "k");
    }
    char *lines = ops_in(root, JPT_SANDBOX_DEFAULT, "{'commands':{'true':{}}}",
                         "[{'method':'process.run','params':{'program':'true'}}]");
    char want[256];
    snprintf(want, sizeof(want),
             "process.run err -32603 process.run 'true': the paths it may read hold more than "
             "%d sensitive, denied or repository entries to cover",
             JPT_VFS_RUN_COVER_MAX);
    if (strstr(lines, want) == NULL)
        fail_msg("expected %s\ngot %s", want, lines);
    free(lines);
}

/* ---- A host that is not root ------------------------------------------------------- */

static void as_nobody_run(int out)
{
    char *lines = ops_in(root, JPT_SANDBOX_BEST_EFFORT, "{'commands':{'sh':{}}}",
                         "[{'method':'process.run','params':{'program':'sh','args':['-c',"
                         "'cat .env; setsid sleep 86398 </dev/null >/dev/null 2>&1 & "
                         "echo started']}}]");
    dprintf(out, "%s", lines);
    free(lines);
}

/* Runs `run` in a child that became nobody (the workspace given to it),
 * its output in `buf`. */
static void as_nobody(void (*run)(int out), char *buf, size_t size)
{
    size_t n = 0;
    int p[2];
    if (getuid() != 0) {
        print_message("[ SKIPPED  ] becoming nobody needs root\n");
        skip();
    }
    assert_int_equal(chown(root, 65534, 65534), 0);
    assert_int_equal(chmod(base, 0755), 0);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        /* As a host that started unprivileged would be: dumpable. */
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0 ||
            prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
            _exit(2);
        run(p[1]);
        _exit(0);
    }
    close(p[1]);
    for (ssize_t got; n < size - 1 && (got = read(p[0], buf + n, size - 1 - n)) > 0;)
        n += (size_t)got;
    buf[n] = '\0';
    close(p[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(chmod(base, 0700), 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the unprivileged host failed (status %d): %s", status, buf);
}

static void a_non_root_hosts_child_is_confined_too(void **state)
{
    (void)state;
    NEED_SANDBOX();
    char buf[1 << 14];
    put(".env", "SECRET-ENV\n");
    as_nobody(as_nobody_run, buf, sizeof(buf));
    /* The .env of the workspace is the host's (it can read it); the child
     * cannot, in its user and mount namespace. Without cgroups of its own
     * its setsid process ends with it in a PID namespace. */
    ru_assert_none_sleeping("86398");
    assert_non_null(strstr(buf, "started"));
    assert_lacks(buf, "SECRET");
}

static void as_nobody_cat(int out)
{
    char *lines = ops_in(root, JPT_SANDBOX_BEST_EFFORT, "{'commands':{'cat':{}}}",
                         "[{'method':'process.run','params':{'program':'cat','args':"
                         "['locked/.env']}}]");
    dprintf(out, "%s", lines);
    free(lines);
}

/* A directory the host may search but not read (mode 0311, root's: nobody
 * may search it): the walk that
 * finds what the child may not read cannot list it, and passed it over,
 * yet the child, of the host's uid, reaches each name in it: its .env was
 * read. The run is refused now, saying why. */
static void a_directory_the_host_cannot_list_refuses_the_run(void **state)
{
    (void)state;
    NEED_SANDBOX();
    char buf[1 << 14], locked[4300];
    fu_mkdir(root, "locked");
    put("locked/.env", "SECRET-LOCKED\n");
    snprintf(locked, sizeof(locked), "%s/locked", root);
    assert_int_equal(chmod(locked, 0311), 0);
    as_nobody(as_nobody_cat, buf, sizeof(buf));
    assert_int_equal(chmod(locked, 0755), 0);
    assert_lacks(buf, "SECRET");
    assert_non_null(strstr(buf, "the directory locked cannot be listed to find what lies "
                                "beneath it: Permission denied"));
}

static void as_nobody_chmod_back(int out)
{
    char *lines = ops_in(root, JPT_SANDBOX_BEST_EFFORT,
                         "{'filesystem':{'writable':true},'commands':{'sh':{}}}",
                         "[{'method':'process.run','params':{'program':'sh','args':['-c',"
                         "'chmod 700 shut; cat shut/.env; echo done']}}]");
    dprintf(out, "%s", lines);
    free(lines);
}

/* A directory of the host's own that no one may search (mode 000): the
 * walk passed it over (no process of the host's uid reaches a name in
 * it), yet a child of that uid, where it may write, owns it and makes it
 * searchable again (chmod), then reads its .env. It is covered whole. */
static void a_directory_shut_by_its_owner_stays_shut(void **state)
{
    (void)state;
    NEED_SANDBOX();
    char buf[1 << 14], shut[4300], env[4400];
    fu_mkdir(root, "shut");
    put("shut/.env", "SECRET-SHUT\n");
    snprintf(shut, sizeof(shut), "%s/shut", root);
    snprintf(env, sizeof(env), "%s/shut/.env", root);
    assert_int_equal(chown(shut, 65534, 65534), 0);
    assert_int_equal(chown(env, 65534, 65534), 0);
    assert_int_equal(chmod(shut, 0), 0);
    as_nobody(as_nobody_chmod_back, buf, sizeof(buf));
    assert_int_equal(chmod(shut, 0755), 0);
    assert_lacks(buf, "SECRET");
    assert_non_null(strstr(buf, "done"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(a_child_reads_no_sensitive_or_denied_path, fresh),
        cmocka_unit_test_setup(a_child_reads_nothing_of_the_host_outside_the_system, fresh),
        cmocka_unit_test_setup(a_child_writes_only_where_fs_write_may, fresh),
        cmocka_unit_test_setup(a_childs_git_metadata_stays_read_only, fresh),
        cmocka_unit_test_setup(a_childs_git_file_stays_read_only, fresh),
        cmocka_unit_test_setup(a_child_makes_no_setuid_file, fresh),
        cmocka_unit_test_setup(a_child_plants_no_repository, fresh),
        cmocka_unit_test_setup(a_child_plants_no_repository_in_any_shape, fresh),
        cmocka_unit_test_setup(a_bare_repository_where_a_child_writes_stays_read_only, fresh),
        cmocka_unit_test_setup(a_childs_processes_are_bounded, fresh),
        cmocka_unit_test_setup(a_rules_process_limit_bounds_its_child, fresh),
        cmocka_unit_test_setup(a_child_starts_in_a_workspace_in_tmp_whose_root_it_may_not_read,
                               fresh),
        cmocka_unit_test_setup(a_covered_path_moved_before_the_mounts_fails_the_spawn, fresh),
        cmocka_unit_test_setup(a_secret_moved_behind_the_walk_is_covered, fresh),
        cmocka_unit_test(the_check_of_a_walks_stamps_goes_in_slices),
        cmocka_unit_test_setup(a_child_renames_nothing_a_verdict_depends_on, fresh),
        cmocka_unit_test_setup(a_child_links_or_moves_no_covered_file, fresh),
        cmocka_unit_test_setup(the_walk_before_a_run_goes_in_slices, fresh),
        cmocka_unit_test_setup(code_the_tool_wrote_runs_confined, fresh),
        cmocka_unit_test_setup(a_child_has_no_capabilities_nor_network, fresh),
        cmocka_unit_test_setup(what_a_child_starts_ends_with_it, fresh),
        cmocka_unit_test_setup(required_mode_refuses_a_child_it_cannot_confine, fresh),
        cmocka_unit_test_setup(too_many_paths_to_cover_refuse_the_run, fresh),
        cmocka_unit_test_setup(a_workspace_the_system_grants_is_refused, fresh),
        cmocka_unit_test_setup(a_non_root_hosts_child_is_confined_too, fresh),
        cmocka_unit_test_setup(a_directory_the_host_cannot_list_refuses_the_run, fresh),
        cmocka_unit_test_setup(a_directory_shut_by_its_owner_stays_shut, fresh),
    };
    return tu_hygiene_end((tu_hygiene_begin(), cmocka_run_group_tests(tests, setup, teardown)));
}
