/* The OS sandbox (lib/sandbox; vfs.h, "The OS sandbox"): what a tool in it
 * cannot do, each asserted by test/tools/sandbox-probe from inside a real
 * sandboxed process — through the standalone host, and through a
 * registry's vfs and stdio runtimes — what it still can, the modes and
 * their report, and the environment tools inherit.
 *
 * Checks that need a Landlock ABI the kernel lacks are skipped with the
 * reason printed; everything else is asserted. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "registry-util.h"
#include "sandbox/sandbox.h"

#define PROBE TOOL("sandbox-probe")

static char root[4096];    /* the workspace */
static char outside[4096]; /* a directory beside it */
static char secret[4200];  /* a file in the workspace */
static char home[4096];
static char tmp_ws[64];    /* a workspace in /tmp, removed at the end */
static int kernel_abi;
static const char *kernel_why = ""; /* why there is no Landlock */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *read_text(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Where the workspace and the directory beside it live: nowhere a
 * profile grants (a stdio sandbox writes /tmp and reads /usr, /etc, /opt,
 * /sys), so that "outside" is outside. The build tree, unless it is under
 * one of those (a checkout in /tmp), else /var/tmp. */
static const char *scratch_base(void)
{
    static const char *const granted[] = {"/tmp/", "/usr/", "/etc/", "/opt/", "/sys/"};

    for (size_t i = 0; i < sizeof(granted) / sizeof(granted[0]); i++)
        if (strncmp(JPT_TEST_TOOLS, granted[i], strlen(granted[i])) == 0)
            return "/var/tmp";
    return JPT_TEST_TOOLS "/..";
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "%s/jpt-sandbox-root-XXXXXX", scratch_base());
    snprintf(outside, sizeof(outside), "%s/jpt-sandbox-outside-XXXXXX", scratch_base());
    if (mkdtemp(root) == NULL || mkdtemp(outside) == NULL)
        return -1;
    snprintf(secret, sizeof(secret), "%s/secret.txt", root);
    write_text(secret, "the workspace's own\n");
    const struct passwd *pw = getpwuid(getuid());
    snprintf(home, sizeof(home), "%s", pw != NULL ? pw->pw_dir : "/root");
    kernel_abi = jpt__landlock_abi(&kernel_why);
    /* What an agent host's environment holds. */
    setenv("JPT_TEST_API_KEY", "sk-host-secret", 1);
    setenv("JPT_TEST_GITHUB_token", "ghp-host-secret", 1);
    setenv("JPT_TEST_DB_PASSWORD", "hunter2", 1);
    setenv("JPT_TEST_PLAIN", "plain", 1);
    return 0;
}

static int rm_tree(const char *dir)
{
    char cmd[8300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd);
}

static int teardown(void **state)
{
    (void)state;
    jpt__sandbox_test_limit(-1, false);
    if (tmp_ws[0] != '\0')
        rm_tree(tmp_ws);
    return rm_tree(root) | rm_tree(outside);
}

/* Skips the test, saying why, when the Landlock this process sees is
 * older than `abi` (none under valgrind 3.19, which does not pass the
 * landlock_* calls through). */
#define NEED_ABI(abi, what)                                                                 \
    do {                                                                                    \
        if (kernel_abi < (abi)) {                                                           \
            print_message("[ SKIPPED  ] %s needs Landlock ABI %d; this process sees %d%s%s\n", \
                          (what), (abi), kernel_abi, kernel_abi == 0 ? ": " : "",           \
                          kernel_abi == 0 ? kernel_why : "");                               \
            skip();                                                                         \
        }                                                                                   \
    } while (0)

/* The same for seccomp filters (none under valgrind 3.19 either). */
#define NEED_SECCOMP(what)                                                                  \
    do {                                                                                    \
        const char *why_ = NULL;                                                            \
        if (!jpt__seccomp_available(&why_)) {                                               \
            print_message("[ SKIPPED  ] %s needs seccomp filters: %s\n", (what), why_);     \
            skip();                                                                         \
        }                                                                                   \
    } while (0)

/* ---- Through the standalone host ------------------------------------------------- */

typedef struct host_run {
    char *lines;         /* the probe's report (the tool's result text) */
    unsigned enforced;
    char report[1024];
} host_run;

/* The probe's first check: this process is the host its "parent" checks
 * aim at (in a PID namespace of its own its parent is 0). */
static const char *host_check(void)
{
    static char check[32];
    snprintf(check, sizeof(check), "host:%d", (int)getpid());
    return check;
}

/* Runs the probe with `checks` (NULL-terminated) as a VFS tool of a host
 * in `mode`, with `read` as sandbox_read. */
static void run_vfs(int mode, const char *const *read, const char *const *checks, host_run *out)
{
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .sandbox_mode = mode, .sandbox_read = read};
    jpt_vfs_host *h = NULL;
    const char *argv[64] = {PROBE, "--vfs", host_check()};
    size_t n = 3;
    const char *report = NULL;
    jpt_state *st = NULL;

    for (size_t i = 0; checks[i] != NULL && n < 63; i++)
        argv[n++] = checks[i];
    argv[n] = NULL;
    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    if (jpt_vfs_host_spawn(h, argv, "{\"name\":\"probe\"}") != JPT_OK)
        fail_msg("spawn: %s", jpt_vfs_host_errmsg(h));
    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_vfs_host_sandbox(h, &out->enforced, &report), JPT_OK);
    snprintf(out->report, sizeof(out->report), "%s", report);
    assert_int_equal(jpt_vfs_host_state(h, &st), JPT_OK);
    const char *text = jpt_state_block_field(st, 0, JPT_FIELD_TEXT, NULL);
    if (jpt_state_is_error(st) || text == NULL)
        fail_msg("the probe failed: %s", text != NULL ? text : "(no text)");
    out->lines = strdup(text);
    jpt_state_unref(st);
    jpt_vfs_host_free(h);
}

/* The outcome the probe gave `check` ("EACCES", "ok"). */
static const char *outcome_of(const char *lines, const char *check)
{
    static char out[64];
    size_t n = strlen(check);

    for (const char *p = lines; p != NULL && *p != '\0';) {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len > n && strncmp(p, check, n) == 0 && p[n] == ' ') {
            snprintf(out, sizeof(out), "%.*s", (int)(len - n - 1), p + n + 1);
            return out;
        }
        p = end != NULL ? end + 1 : NULL;
    }
    fail_msg("the probe said nothing of '%s':\n%s", check, lines);
    return NULL;
}

static void assert_outcome(const char *lines, const char *check, const char *expected)
{
    const char *got = outcome_of(lines, check);
    if (strcmp(got, expected) != 0)
        fail_msg("%s: %s, not %s\n(the probe said:\n%s)", check, got, expected, lines);
}

static char *check_of(const char *prefix, const char *path)
{
    static char buf[8][4400];
    static int next;
    char *b = buf[next++ % 8];
    snprintf(b, sizeof(buf[0]), "%s%s", prefix, path);
    return b;
}

/* A Unix socket of the host's, listening at `path`: what a tool must not
 * reach. */
static int unix_listener(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (n >= sizeof(sun.sun_path))
        fail_msg("the socket path is too long for sun_path: %s", path);
    memcpy(sun.sun_path, path, n + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    assert_int_equal(listen(fd, 4), 0);
    return fd;
}

/* ---- The VFS profile --------------------------------------------------------------- */

static void a_vfs_tool_reads_no_file_of_the_workspace_home_or_host(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    char outside_file[4200];
    snprintf(outside_file, sizeof(outside_file), "%s/new.txt", outside);
    const char *checks[] = {check_of("open:", secret), check_of("open:", root),
                            check_of("open:", home), "open:/etc/passwd", "open:/tmp",
                            "open:/proc/self/status", "environ",
                            check_of("create:", outside_file), "create:/tmp/jpt-sandbox-x",
                            check_of("truncate:", secret), NULL};
    host_run run;

    run_vfs(JPT_SANDBOX_DEFAULT, NULL, checks, &run);
    assert_outcome(run.lines, checks[0], "EACCES");
    assert_outcome(run.lines, checks[1], "EACCES");
    assert_outcome(run.lines, checks[2], "EACCES");
    assert_outcome(run.lines, "open:/etc/passwd", "EACCES");
    assert_outcome(run.lines, "open:/tmp", "EACCES");
    assert_outcome(run.lines, "open:/proc/self/status", "EACCES");
    /* The host's environment through /proc: the issue's leak. */
    assert_outcome(run.lines, "environ", "EACCES");
    assert_outcome(run.lines, checks[7], "EACCES");
    assert_outcome(run.lines, "create:/tmp/jpt-sandbox-x", "EACCES");
    /* Landlock from ABI 3; below it seccomp denies truncate(2). */
    assert_outcome(run.lines, checks[9], kernel_abi >= 3 ? "EACCES" : "EPERM");
    assert_string_equal(read_text(secret), "the workspace's own\n");
    free(run.lines);
}

static void a_vfs_tool_has_no_socket_and_no_way_to_other_processes(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    /* A host socket the tool must not reach. */
    char sock_path[4200];
    snprintf(sock_path, sizeof(sock_path), "%s/host.sock", outside);
    int listener = unix_listener(sock_path);
    const char *checks[] = {"socket-inet", "socket-unix", "socket-unix-dgram", "socketpair",
                            check_of("unix:", sock_path), "io_uring", "ptrace", "process_vm",
                            "unshare-user", "clone-user", "clone3", "tiocsti", "keyctl", "bpf",
                            "mount", NULL};
    host_run run;

    run_vfs(JPT_SANDBOX_REQUIRED, NULL, checks, &run);
    close(listener);
    unlink(sock_path);
    assert_outcome(run.lines, "socket-inet", "EPERM");
    assert_outcome(run.lines, "socket-unix", "EPERM");
    assert_outcome(run.lines, "socket-unix-dgram", "EPERM");
    /* A connected pair reaches no one (asyncio's self-pipe needs it). */
    assert_outcome(run.lines, "socketpair", "ok");
    assert_outcome(run.lines, checks[4], "EPERM");
    assert_outcome(run.lines, "io_uring", "EPERM");
    assert_outcome(run.lines, "ptrace", "EPERM");
    assert_outcome(run.lines, "process_vm", "EPERM");
    assert_outcome(run.lines, "unshare-user", "EPERM");
    assert_outcome(run.lines, "clone-user", "EPERM");
    /* So that the C library falls back to clone, which is checked. */
    assert_outcome(run.lines, "clone3", "ENOSYS");
    assert_outcome(run.lines, "tiocsti", "EPERM");
    assert_outcome(run.lines, "keyctl", "EPERM");
    assert_outcome(run.lines, "bpf", "EPERM");
    assert_outcome(run.lines, "mount", "EPERM");
    free(run.lines);
}

/* Landlock's signal scope refuses it (EPERM); in a PID namespace of its
 * own the tool does not even see its host (ESRCH). */
static void a_vfs_tool_cannot_signal_the_host(void **state)
{
    (void)state;
    NEED_ABI(6, "signal scoping");
    const char *checks[] = {"signal-parent", NULL};
    host_run run;

    run_vfs(JPT_SANDBOX_REQUIRED, NULL, checks, &run);
    assert_outcome(run.lines, "signal-parent",
                   run.enforced & JPT_SANDBOX_ENFORCED_PROCESSES ? "ESRCH" : "EPERM");
    free(run.lines);
}

/* Landlock's own TCP rule, seen with seccomp left out (best-effort on a
 * pretended system without seccomp): socket() is then allowed, and
 * connect() is not. Without the sandbox the same connect succeeds. */
static void tcp_connect_is_denied_by_landlock_too(void **state)
{
    (void)state;
    NEED_ABI(4, "TCP bind and connect");
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr = {htonl(INADDR_LOOPBACK)}};
    socklen_t len = sizeof(sin);
    assert_int_equal(bind(listener, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(listener, 4), 0);
    assert_int_equal(getsockname(listener, (struct sockaddr *)&sin, &len), 0);
    char port[32];
    snprintf(port, sizeof(port), "tcp:%d", ntohs(sin.sin_port));
    const char *checks[] = {"socket-inet", port, NULL};
    host_run run, off;

    jpt__sandbox_test_limit(-1, true);
    run_vfs(JPT_SANDBOX_BEST_EFFORT, NULL, checks, &run);
    jpt__sandbox_test_limit(-1, false);
    run_vfs(JPT_SANDBOX_OFF, NULL, checks, &off);
    close(listener);
    assert_outcome(run.lines, "socket-inet", "ok");
    assert_outcome(run.lines, port, "EACCES");
    assert_outcome(off.lines, port, "ok");
    assert_int_equal(run.enforced & JPT_SANDBOX_ENFORCED_SECCOMP, 0);
    assert_int_not_equal(run.enforced & JPT_SANDBOX_ENFORCED_TCP, 0);
    free(run.lines);
    free(off.lines);
}

static void a_vfs_tool_still_execs_and_reads_the_system(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    const char *checks[] = {"exec:/bin/true", "exec:/usr/bin/env", "open:/usr/lib",
                            "open:/etc/ld.so.cache", "open:/dev/urandom", NULL};
    host_run run;

    run_vfs(JPT_SANDBOX_REQUIRED, NULL, checks, &run);
    assert_outcome(run.lines, "exec:/bin/true", "ok");
    assert_outcome(run.lines, "exec:/usr/bin/env", "ok");
    assert_outcome(run.lines, "open:/usr/lib", "ok");
    assert_outcome(run.lines, "open:/etc/ld.so.cache", "ok");
    assert_outcome(run.lines, "open:/dev/urandom", "ok");
    free(run.lines);
}

static void sandbox_read_lets_a_vfs_tool_read_a_listed_directory(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    char lib[4200];
    snprintf(lib, sizeof(lib), "%s/lib.txt", outside);
    write_text(lib, "a library\n");
    const char *read[] = {outside, NULL};
    const char *checks[] = {check_of("open:", lib), check_of("open:", secret), NULL};
    host_run run;

    run_vfs(JPT_SANDBOX_REQUIRED, read, checks, &run);
    unlink(lib);
    assert_outcome(run.lines, checks[0], "ok");
    assert_outcome(run.lines, checks[1], "EACCES");
    free(run.lines);
}

static void a_vfs_tools_environment_is_path_alone(void **state)
{
    (void)state;
    const char *checks[] = {"env:PATH", "env:JPT_TEST_PLAIN", "env:JPT_TEST_API_KEY",
                            "env:HOME", NULL};
    host_run run;

    run_vfs(JPT_SANDBOX_BEST_EFFORT, NULL, checks, &run);
    assert_outcome(run.lines, "env:PATH", "set");
    assert_outcome(run.lines, "env:JPT_TEST_PLAIN", "unset");
    assert_outcome(run.lines, "env:JPT_TEST_API_KEY", "unset");
    assert_outcome(run.lines, "env:HOME", "unset");
    free(run.lines);
}

/* ---- Modes and the report ----------------------------------------------------------- */

static void the_report_says_what_this_kernel_enforces(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    const char *checks[] = {"env:PATH", NULL};
    host_run run;
    unsigned want = JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS | JPT_SANDBOX_ENFORCED_SECCOMP |
                    JPT_SANDBOX_ENFORCED_FILES | JPT_SANDBOX_ENFORCED_TRUNCATE |
                    JPT_SANDBOX_ENFORCED_CAPABILITIES | JPT_SANDBOX_ENFORCED_METADATA;
    char abi[64];

    if (kernel_abi >= 4)
        want |= JPT_SANDBOX_ENFORCED_TCP;
    if (kernel_abi >= 5)
        want |= JPT_SANDBOX_ENFORCED_DEVICE_IOCTL;
    if (kernel_abi >= 6)
        want |= JPT_SANDBOX_ENFORCED_SCOPES;
    run_vfs(JPT_SANDBOX_REQUIRED, NULL, checks, &run);
    /* A PID namespace where no cgroup of its own ends and bounds it. */
    assert_int_equal(run.enforced & ~JPT_SANDBOX_ENFORCED_PROCESSES, want);
    if (run.enforced & JPT_SANDBOX_ENFORCED_PROCESSES)
        assert_non_null(strstr(run.report, "a PID namespace (its processes end with it"));
    snprintf(abi, sizeof(abi), "vfs profile, Landlock ABI %d: enforced files, truncation",
             kernel_abi);
    assert_non_null(strstr(run.report, abi));
    assert_non_null(strstr(run.report, "seccomp (no sockets"));
    assert_non_null(strstr(run.report, "no_new_privs"));
    if (kernel_abi >= 6)
        assert_null(strstr(run.report, "missing"));
    print_message("[   INFO   ] %s\n", run.report);
    free(run.lines);
}

/* jpt__sandbox_test_limit pretends an older kernel: the ruleset is built
 * for the ABI given, which any newer kernel takes. */
static void best_effort_on_an_older_kernel_runs_and_reports_the_gaps(void **state)
{
    (void)state;
    NEED_ABI(3, "pretending ABI 3");
    NEED_SECCOMP("the system-call filter");
    const char *checks[] = {check_of("open:", secret), "socket-inet", NULL};
    host_run run;

    jpt__sandbox_test_limit(3, false);
    run_vfs(JPT_SANDBOX_BEST_EFFORT, NULL, checks, &run);
    jpt__sandbox_test_limit(-1, false);
    assert_int_equal(run.enforced & ~JPT_SANDBOX_ENFORCED_PROCESSES,
                     JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS | JPT_SANDBOX_ENFORCED_SECCOMP |
                                       JPT_SANDBOX_ENFORCED_FILES |
                                       JPT_SANDBOX_ENFORCED_TRUNCATE |
                                       JPT_SANDBOX_ENFORCED_CAPABILITIES |
                                       JPT_SANDBOX_ENFORCED_METADATA);
    assert_non_null(strstr(run.report, "Landlock ABI 3"));
    assert_non_null(strstr(run.report, "; missing: TCP bind and connect (needs Landlock ABI 4), "
                                       "device ioctls (needs Landlock ABI 5), signal and "
                                       "abstract-socket scopes (needs Landlock ABI 6)"));
    /* What there is still holds. */
    assert_outcome(run.lines, checks[0], "EACCES");
    assert_outcome(run.lines, "socket-inet", "EPERM");
    free(run.lines);
}

/* Below ABI 3 Landlock does not govern truncate(2): seccomp denies it. */
static void below_abi_3_seccomp_denies_truncate(void **state)
{
    (void)state;
    NEED_ABI(2, "pretending ABI 2");
    NEED_SECCOMP("the system-call filter");
    char outside_file[4200];
    snprintf(outside_file, sizeof(outside_file), "%s/keep.txt", outside);
    write_text(outside_file, "kept\n");
    const char *read[] = {outside, NULL};
    const char *checks[] = {check_of("truncate:", outside_file), NULL};
    host_run run;

    jpt__sandbox_test_limit(2, false);
    run_vfs(JPT_SANDBOX_BEST_EFFORT, read, checks, &run);
    jpt__sandbox_test_limit(-1, false);
    assert_outcome(run.lines, checks[0], "EPERM");
    assert_string_equal(read_text(outside_file), "kept\n");
    assert_int_not_equal(run.enforced & JPT_SANDBOX_ENFORCED_TRUNCATE, 0);
    unlink(outside_file);
    free(run.lines);
}

static void required_fails_where_the_system_lacks_landlock_or_seccomp(void **state)
{
    (void)state;
    /* The test limit takes away what there is. */
    NEED_ABI(1, "taking Landlock away");
    NEED_SECCOMP("taking seccomp away");
    const struct {
        int max_abi;
        bool no_seccomp;
        const char *message;
    } cases[] = {
        {0, false,
         "the OS sandbox is required, but this system lacks Landlock (not available (limited "
         "for a test)) (the sandbox mode \"best-effort\" runs tools with what there is)"},
        {-1, true,
         "the OS sandbox is required, but this system lacks seccomp filters (not available "
         "(limited for a test)) (the sandbox mode \"best-effort\" runs tools with what there "
         "is)"},
        {0, true,
         "the OS sandbox is required, but this system lacks Landlock (not available (limited "
         "for a test)) and seccomp filters (not available (limited for a test)) (the sandbox "
         "mode \"best-effort\" runs tools with what there is)"},
    };
    const char *argv[] = {PROBE, "--vfs", NULL};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        jpt_vfs_host_options o = {.size = sizeof(o), .root = root};
        jpt_vfs_host *h = NULL;
        assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
        jpt__sandbox_test_limit(cases[i].max_abi, cases[i].no_seccomp);
        int rc = jpt_vfs_host_spawn(h, argv, "{\"name\":\"probe\"}");
        jpt__sandbox_test_limit(-1, false);
        assert_int_equal(rc, JPT_ERR_SANDBOX);
        assert_string_equal(jpt_vfs_host_errmsg(h), cases[i].message);
        assert_int_equal(jpt_vfs_host_sandbox(h, NULL, NULL), JPT_ERR_STATE);
        jpt_vfs_host_free(h);
    }
}

static void off_runs_the_tool_unconfined_and_says_so(void **state)
{
    (void)state;
    const char *checks[] = {check_of("open:", secret), "env:JPT_TEST_PLAIN", NULL};
    host_run run;

    run_vfs(JPT_SANDBOX_OFF, NULL, checks, &run);
    assert_outcome(run.lines, checks[0], "ok");
    /* The environment stays clean whatever the mode. */
    assert_outcome(run.lines, "env:JPT_TEST_PLAIN", "unset");
    assert_int_equal(run.enforced, 0);
    assert_string_equal(run.report, "off: the sandbox mode is \"off\"");
    free(run.lines);
}

typedef struct logged {
    int level;
    char line[1024];
} logged;

static void on_log(int level, const char *msg, void *ud)
{
    logged *l = ud;

    if (strstr(msg, "runs in the OS sandbox") != NULL) {
        l->level = level;
        snprintf(l->line, sizeof(l->line), "%s", msg);
    }
}

/* The log's line per process: INFO with Landlock and seccomp, WARNING
 * without either (best-effort). */
static void each_spawn_logs_what_its_sandbox_enforces(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    const char *checks[] = {"env:PATH", NULL};
    logged l = {0, ""};
    host_run run;

    jpt_set_log(on_log, &l, JPT_LOG_INFO);
    run_vfs(JPT_SANDBOX_REQUIRED, NULL, checks, &run);
    assert_int_equal(l.level, JPT_LOG_INFO);
    assert_non_null(strstr(l.line, "tool 'probe': pid "));
    assert_non_null(strstr(l.line, " runs in the OS sandbox: vfs profile, Landlock ABI "));
    free(run.lines);
    l.level = 0;
    jpt__sandbox_test_limit(0, false);
    run_vfs(JPT_SANDBOX_BEST_EFFORT, NULL, checks, &run);
    jpt__sandbox_test_limit(-1, false);
    jpt_set_log(NULL, NULL, 0);
    assert_int_equal(l.level, JPT_LOG_WARNING);
    assert_non_null(strstr(l.line, "missing: files (needs Landlock)"));
    free(run.lines);
}

static void host_options_are_checked(void **state)
{
    (void)state;
    const char *relative[] = {"lib", NULL};
    jpt_vfs_host_options bad_mode = {.size = sizeof(bad_mode), .root = root, .sandbox_mode = 9};
    jpt_vfs_host_options bad_path = {.size = sizeof(bad_path), .root = root,
                                     .sandbox_read = relative};
    jpt_vfs_host *h = NULL;

    assert_int_equal(jpt_vfs_host_new(&bad_mode, &h), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_new(&bad_path, &h), JPT_ERR_INVALID);
    assert_null(h);
    assert_int_equal(jpt_vfs_host_sandbox(NULL, NULL, NULL), JPT_ERR_INVALID);

    /* A tool the application started is confined by the application. */
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root};
    int to_tool[2], from_tool[2];
    unsigned enforced = 99;
    const char *report = "untouched";
    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    assert_int_equal(jpt_vfs_host_sandbox(h, &enforced, &report), JPT_ERR_STATE);
    assert_string_equal(jpt_vfs_host_errmsg(h), "sandbox: no tool was started");
    assert_int_equal(pipe2(to_tool, O_CLOEXEC), 0);
    assert_int_equal(pipe2(from_tool, O_CLOEXEC), 0);
    assert_int_equal(jpt_vfs_host_attach(h, from_tool[0], to_tool[1], "{\"name\":\"a\"}"),
                     JPT_OK);
    assert_int_equal(jpt_vfs_host_sandbox(h, &enforced, &report), JPT_ERR_STATE);
    assert_string_equal(jpt_vfs_host_errmsg(h),
                        "sandbox: the tool was attached: its process is the application's");
    assert_int_equal(enforced, 0);
    assert_null(report);
    jpt_vfs_host_free(h);
    close(to_tool[0]);
    close(from_tool[1]);
}

/* The room's own checks of a spec. */
static void a_spec_is_checked_before_anything_is_opened(void **state)
{
    (void)state;
    const char *relative[] = {"usr", NULL};
    const char *write[] = {"/tmp", NULL};
    const struct {
        jpt__sandbox_spec spec;
        const char *message;
    } cases[] = {
        {{.profile = 7, .mode = JPT_SANDBOX_REQUIRED}, "sandbox: unknown profile 7"},
        {{.profile = JPT__SANDBOX_VFS, .mode = JPT_SANDBOX_OFF},
         "sandbox: mode 3 cannot be prepared"},
        {{.profile = JPT__SANDBOX_VFS, .mode = JPT_SANDBOX_REQUIRED, .write = write},
         "sandbox: a VFS tool writes through the protocol: no path may be writable"},
        {{.profile = JPT__SANDBOX_STDIO, .mode = JPT_SANDBOX_REQUIRED, .read = relative},
         "sandbox: a readable path 'usr' is not absolute"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        jpt__sandbox *sb = (jpt__sandbox *)1;
        jpt__errbuf err;
        assert_int_equal(jpt__sandbox_prepare(&cases[i].spec, &sb, &err), JPT_ERR_INVALID);
        assert_null(sb);
        assert_string_equal(err.text, cases[i].message);
    }
}

/* ---- Through a registry -------------------------------------------------------------- */

static jpt_registry *registry(int mode, const char *tools_js)
{
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 300,
                              .drain_ms = 100, .sandbox_mode = mode};
    return ru_registry_with(&o, tools_js != NULL ? js(tools_js) : NULL);
}

/* Runs tool `name` once; its output. */
static char *call(jpt_registry *r, const char *name, bool *is_error)
{
    return ru_call(r, name, "{}", is_error);
}

static char tools[1 << 14];

/* {"tools":[{name, command: [probe, checks…], and `extra` members}]}, for
 * js(). */
static const char *tool_js(const char *name, bool vfs, const char *extra,
                           const char *const *checks)
{
    int n = snprintf(tools, sizeof(tools), "{'tools':[{'name':'%s','command':['%s'%s,'%s'",
                     name, PROBE, vfs ? ",'--vfs'" : "", host_check());
    for (size_t i = 0; checks[i] != NULL; i++)
        n += snprintf(tools + n, sizeof(tools) - (size_t)n, ",'%s'", checks[i]);
    snprintf(tools + n, sizeof(tools) - (size_t)n, "]%s%s%s}]}", vfs ? ",'runtime':'vfs'" : "",
             extra[0] != '\0' ? "," : "", extra);
    return tools;
}

static void a_registry_vfs_tool_runs_sandboxed_with_its_allowed_variables(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    const char *checks[] = {check_of("open:", secret), "environ", "socket-inet",
                            "env:JPT_TEST_PLAIN", "env:JPT_TEST_API_KEY", NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT,
                               tool_js("v", true, "'env':{'allow':['JPT_TEST_PLAIN']}", checks));
    bool is_error = true;
    unsigned enforced = 0;
    char *report = NULL;
    char *out = call(r, "v", &is_error);

    assert_false(is_error);
    assert_outcome(out, checks[0], "EACCES");
    assert_outcome(out, "environ", "EACCES");
    assert_outcome(out, "socket-inet", "EPERM");
    assert_outcome(out, "env:JPT_TEST_PLAIN", "set");
    assert_outcome(out, "env:JPT_TEST_API_KEY", "unset");
    assert_int_equal(jpt_registry_tool_sandbox(r, "v", &enforced, &report), JPT_OK);
    assert_int_not_equal(enforced & JPT_SANDBOX_ENFORCED_FILES, 0);
    assert_non_null(strstr(report, "vfs profile"));
    jpt_free(report);
    free(out);
    jpt_registry_free(r);
}

/* Issue 16 §4: a Python VFS tool whose virtual environment the sandbox
 * does not grant dies in Python's own PermissionError on pyvenv.cfg,
 * before it says anything. Its end names the sandbox as the likely cause
 * and the option that fixes it, with its stderr; with that option given,
 * it runs. */
static void a_tool_that_dies_before_it_speaks_in_the_sandbox_is_told_why(void **state)
{
    char venv[4200], cmd[8600], def[9000];
    bool is_error = false;
    /* Double quotes, which js() writes from \' (a ' is a "). */
    const char *code = "import json; print(json.dumps({\\'jsonrpc\\': \\'2.0\\', "
                       "\\'method\\': \\'result\\', \\'params\\': {\\'content\\': \\'ran\\'}}))";

    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    snprintf(venv, sizeof(venv), "%s/venv", outside);
    /* Debian's Python (python3-venv), whose own files are in /usr. */
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -m venv --without-pip '%s'", venv);
    assert_int_equal(system(cmd), 0);

    snprintf(def, sizeof(def),
             "{'tools':[{'name':'py','runtime':'vfs','command':['%s/bin/python3','-c',"
             "'%s']}]}",
             venv, code);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, def);
    char *out = call(r, "py", &is_error);
    assert_true(is_error);
    const char *want = "without a result. It ended before it read its input, and it ran "
                       "in the OS sandbox: the likely cause is a file it needs to start that "
                       "the sandbox does not let it read (its interpreter's, its libraries', a "
                       "virtual environment's). Grant such paths with \"os_sandbox\": "
                       "{\"read\": […]} in the tool's definition (for a Python tool, the "
                       "paths jptool.python_tool_read_paths() gives).\n\nstderr:\n";
    if (strstr(out, want) == NULL || strstr(out, "PermissionError") == NULL ||
        strstr(out, "pyvenv.cfg") == NULL)
        fail_msg("the end says: %s", out);
    free(out);
    jpt_registry_free(r);

    snprintf(def, sizeof(def),
             "{'tools':[{'name':'py','runtime':'vfs','command':['%s/bin/python3','-c',"
             "'%s'],'os_sandbox':{'read':['%s']}}]}",
             venv, code, venv);
    r = registry(JPT_SANDBOX_DEFAULT, def);
    out = call(r, "py", &is_error);
    if (is_error)
        fail_msg("with os_sandbox.read: %s", out);
    assert_string_equal(out, "ran");
    free(out);
    jpt_registry_free(r);
}

/* The hint is for a tool that said nothing: one that spoke and then died
 * gets the plain end. */
static void a_tool_that_spoke_before_it_died_gets_no_sandbox_hint(void **state)
{
    char script[4200], def[4400];
    bool is_error = false;

    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    snprintf(script, sizeof(script), "%s/spoke.sh", outside);
    write_text(script, "#!/bin/sh\necho '{\"jsonrpc\":\"2.0\",\"method\":\"state\","
                       "\"params\":{\"type\":\"running\",\"content\":\"\"}}'\n"
                       "echo oops >&2\nexit 3\n");
    assert_int_equal(chmod(script, 0755), 0);
    snprintf(def, sizeof(def), "{'tools':[{'name':'sh','runtime':'vfs','command':['%s']}]}",
             script);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, def);
    char *out = call(r, "sh", &is_error);
    assert_true(is_error);
    assert_string_equal(out,
                        "Error: The tool exited (exit status 3) without a result\n\nstderr:\noops\n");
    free(out);
    jpt_registry_free(r);
}

/* Runs Python `code`, written to a script beside the workspace that the
 * sandbox lets it read, as a vfs tool; its end. */
static char *run_python_tool(const char *code, bool *is_error)
{
    char script[4200], def[8800];

    snprintf(script, sizeof(script), "%s/tool.py", outside);
    write_text(script, code);
    snprintf(def, sizeof(def),
             "{'tools':[{'name':'py','runtime':'vfs','command':['/usr/bin/python3','%s'],"
             "'os_sandbox':{'read':['%s']}}]}",
             script, outside);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, def);
    char *out = call(r, "py", is_error);
    jpt_registry_free(r);
    return out;
}

/* The host trial: a tool that read its init and then failed (the model
 * left out an argument: KeyError), and one that never reads it but exits
 * 0 (`echo hello`), both started: neither end blames the sandbox. */
static void a_tool_that_started_then_failed_gets_no_sandbox_hint(void **state)
{
    bool is_error = false;

    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    char *out = run_python_tool("import json, sys\n"
                                "init = json.loads(sys.stdin.readline())\n"
                                "print(init['params']['tool']['arguments']['path'])\n",
                                &is_error);
    assert_true(is_error);
    if (strstr(out, "KeyError: 'path'") == NULL || strstr(out, "likely cause") != NULL ||
        strstr(out, "os_sandbox") != NULL)
        fail_msg("the end says: %s", out);
    assert_non_null(strstr(out, "The tool exited (exit status 1) without a result\n\nstderr:\n"));
    free(out);

    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT,
                               "{'tools':[{'name':'echo','runtime':'vfs',"
                               "'command':['echo','hello']}]}");
    out = call(r, "echo", &is_error);
    assert_true(is_error);
    if (strstr(out, "likely cause") != NULL || strstr(out, "os_sandbox") != NULL)
        fail_msg("the end says: %s", out);
    free(out);
    jpt_registry_free(r);
}

/* A Python tool whose environment cannot find jptool (a vfs tool's is
 * PATH alone) is told of env.set and jptool.python_tool_env(), not of
 * the sandbox's read paths. */
static void a_python_tool_that_cannot_import_jptool_is_told_of_its_environment(void **state)
{
    bool is_error = false;

    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    char *out = run_python_tool("from jptool import vfs_tool\n", &is_error);
    assert_true(is_error);
    const char *want =
        "The tool exited (exit status 1) without a result. It ended before it read its "
        "input: it could not import jptool. A tool's environment is clean (PATH alone), so "
        "the variables that let the host import jptool do not reach it: pass it those "
        "jptool.python_tool_env() gives, with \"env\": {\"set\": jptool.python_tool_env()} "
        "in the tool's definition (in the OS sandbox it must also be let read them: the "
        "paths jptool.python_tool_read_paths() gives).\n\nstderr:\n";
    if (strstr(out, want) == NULL || strstr(out, "No module named 'jptool'") == NULL ||
        strstr(out, "likely cause") != NULL)
        fail_msg("the end says: %s", out);
    free(out);
}

static void a_registry_vfs_call_fails_where_the_sandbox_is_required_and_missing(void **state)
{
    (void)state;
    const char *checks[] = {"env:PATH", NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("v", true, "", checks));
    bool is_error = false;
    char *report = (char *)"untouched";

    jpt__sandbox_test_limit(0, false);
    char *out = call(r, "v", &is_error);
    int rc = jpt_registry_tool_sandbox(r, "v", NULL, &report);
    jpt__sandbox_test_limit(-1, false);
    assert_true(is_error);
    assert_non_null(strstr(out, "the tool could not be started: the OS sandbox is required, "
                                "but this system lacks Landlock"));
    assert_int_equal(rc, JPT_ERR_SANDBOX);
    assert_null(report);
    assert_non_null(strstr(jpt_registry_errmsg(r), "tool 'v': the OS sandbox is required"));
    free(out);
    jpt_registry_free(r);

    /* A definition's own mode wins over the registry's. */
    r = registry(JPT_SANDBOX_DEFAULT,
                 tool_js("v", true, "'os_sandbox':{'mode':'best-effort'}", checks));
    jpt__sandbox_test_limit(0, false);
    out = call(r, "v", &is_error);
    jpt__sandbox_test_limit(-1, false);
    assert_false(is_error);
    assert_outcome(out, "env:PATH", "set");
    free(out);
    jpt_registry_free(r);
}

/* What a stdio tool's write outside its writable areas fails with: EROFS
 * in its mount namespace (everything else is mounted read-only), EACCES
 * (Landlock) without one. */
static const char *outside_write(jpt_registry *r, const char *tool)
{
    unsigned enforced = 0;

    assert_int_equal(jpt_registry_tool_sandbox(r, tool, &enforced, NULL), JPT_OK);
    return enforced & JPT_SANDBOX_ENFORCED_MOUNTS ? "EROFS" : "EACCES";
}

static void a_sandboxed_stdio_tool_has_rfd_075s_shape(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    char made[4200], away[4200], sock_path[4200];
    snprintf(made, sizeof(made), "%s/made.txt", root);
    snprintf(away, sizeof(away), "%s/away.txt", outside);
    snprintf(sock_path, sizeof(sock_path), "%s/host.sock", outside);
    int listener = unix_listener(sock_path);
    const char *checks[] = {check_of("open:", secret), check_of("create:", made),
                            check_of("create:", away), check_of("open:", home),
                            "open:/etc/passwd", "create:/tmp/jpt-sandbox-probe-x", "environ",
                            "socket-inet", "socket-unix", "socket-unix-dgram",
                            check_of("unix:", sock_path), "ptrace", "io_uring",
                            "exec:/bin/true", NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'sandbox':true", checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);

    close(listener);
    unlink(sock_path);
    assert_false(is_error);
    assert_outcome(out, checks[0], "ok");
    assert_outcome(out, checks[1], "ok");
    assert_outcome(out, checks[2], outside_write(r, "s"));
    assert_outcome(out, checks[3], "EACCES");
    assert_outcome(out, "open:/etc/passwd", "ok");
    assert_outcome(out, "create:/tmp/jpt-sandbox-probe-x", "ok");
    assert_outcome(out, "environ", "EACCES");
    assert_outcome(out, "socket-inet", "EPERM");
    assert_outcome(out, "socket-unix", "ok");
    assert_outcome(out, "socket-unix-dgram", "EPERM");
    assert_outcome(out, checks[10], "EPERM");
    assert_outcome(out, "ptrace", "EPERM");
    assert_outcome(out, "io_uring", "EPERM");
    assert_outcome(out, "exec:/bin/true", "ok");
    free(out);
    jpt_registry_free(r);
}

static void a_stdio_sandbox_may_keep_the_workspace_read_only(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    char made[4200];
    snprintf(made, sizeof(made), "%s/made.txt", root);
    const char *checks[] = {check_of("open:", secret), check_of("create:", made),
                            check_of("truncate:", secret), NULL};
    jpt_registry *r = registry(
        JPT_SANDBOX_DEFAULT,
        tool_js("s", false, "'sandbox':{'filesystem':{'writable':false}}", checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);

    assert_false(is_error);
    assert_outcome(out, checks[0], "ok");
    assert_outcome(out, checks[1], outside_write(r, "s"));
    assert_outcome(out, checks[2],
                   strcmp(outside_write(r, "s"), "EROFS") == 0 ? "EROFS"
                   : kernel_abi >= 3                          ? "EACCES"
                                                              : "EPERM");
    assert_string_equal(read_text(secret), "the workspace's own\n");
    free(out);
    jpt_registry_free(r);
}

static void os_sandbox_write_opens_a_directory_to_a_stdio_tool(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    char away[4200];
    snprintf(away, sizeof(away), "%s/away.txt", outside);
    const char *checks[] = {check_of("create:", away), NULL};
    char extra[4300];
    snprintf(extra, sizeof(extra), "'sandbox':true,'os_sandbox':{'write':['%s']}", outside);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, extra, checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);

    assert_false(is_error);
    assert_outcome(out, checks[0], "ok");
    free(out);
    jpt_registry_free(r);
}

/* On a terminal of its own (pty), TIOCSTI would type into the tool's own
 * input: allowed outside the sandbox (where the kernel still has legacy
 * TIOCSTI), EPERM inside. */
static void a_sandboxed_pty_tool_cannot_push_input_into_its_terminal(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    const char *checks[] = {"tiocsti", NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT,
                               tool_js("s", false, "'pty':true,'sandbox':true", checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);

    assert_false(is_error);
    assert_non_null(strstr(out, "tiocsti EPERM"));
    free(out);
    jpt_registry_free(r);
    r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'pty':true", checks));
    out = call(r, "s", &is_error);
    assert_null(strstr(out, "tiocsti EPERM"));
    free(out);
    jpt_registry_free(r);
}

/* "inherit": true (registry.h, "env"): the host's environment, less the
 * names that look like secrets. */
static void stdio_tools_stop_inheriting_what_looks_like_a_secret(void **state)
{
    (void)state;
    const char *checks[] = {"env:JPT_TEST_API_KEY", "env:JPT_TEST_GITHUB_token",
                            "env:JPT_TEST_DB_PASSWORD", "env:JPT_TEST_PLAIN", "env:PATH",
                            "env:JPT_TEST_SET_TOKEN", NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT,
                               tool_js("s", false,
                                       "'env':{'inherit':true,'set':{'JPT_TEST_SET_TOKEN':'x'}}",
                                       checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);

    assert_false(is_error);
    assert_outcome(out, "env:JPT_TEST_API_KEY", "unset");
    assert_outcome(out, "env:JPT_TEST_GITHUB_token", "unset");
    assert_outcome(out, "env:JPT_TEST_DB_PASSWORD", "unset");
    assert_outcome(out, "env:JPT_TEST_PLAIN", "set");
    assert_outcome(out, "env:PATH", "set");
    /* What the definition sets itself is given. */
    assert_outcome(out, "env:JPT_TEST_SET_TOKEN", "set");
    free(out);
    jpt_registry_free(r);

    r = registry(JPT_SANDBOX_DEFAULT,
                 tool_js("s", false, "'env':{'inherit':true,'allow':['JPT_TEST_API_KEY']}",
                         checks));
    out = call(r, "s", &is_error);
    assert_outcome(out, "env:JPT_TEST_API_KEY", "set");
    assert_outcome(out, "env:JPT_TEST_GITHUB_token", "unset");
    free(out);
    jpt_registry_free(r);
}

static void tool_sandbox_reports_each_kind_of_tool(void **state)
{
    (void)state;
    const char *checks[] = {"env:PATH", NULL};
    jpt_registry *r = registry(JPT_SANDBOX_BEST_EFFORT, tool_js("plain", false, "", checks));
    unsigned enforced = 99;
    char *report = NULL;

    assert_int_equal(jpt_registry_tool_sandbox(r, "plain", &enforced, &report), JPT_OK);
    assert_int_equal(enforced, 0);
    assert_string_equal(report, "none: a stdio tool without \"sandbox\" runs unconfined");
    jpt_free(report);
    assert_int_equal(jpt_registry_load_tools(
                         r, js(tool_js("off", true, "'os_sandbox':{'mode':'off'}", checks)), 0),
                     JPT_OK);
    assert_int_equal(jpt_registry_tool_sandbox(r, "off", &enforced, &report), JPT_OK);
    assert_int_equal(enforced, 0);
    assert_string_equal(report, "off: the sandbox mode is \"off\"");
    jpt_free(report);
    assert_int_equal(jpt_registry_load_tools(r, js(tool_js("s", false, "'sandbox':true", checks)),
                                             0),
                     JPT_OK);
    assert_int_equal(jpt_registry_tool_sandbox(r, "s", &enforced, NULL), JPT_OK);
    if (kernel_abi >= 1)
        assert_int_not_equal(enforced & JPT_SANDBOX_ENFORCED_FILES, 0);
    assert_int_equal(jpt_registry_tool_sandbox(r, "nope", &enforced, &report), JPT_ERR_NOT_FOUND);
    assert_string_equal(jpt_registry_errmsg(r), "tool_sandbox: no tool 'nope'");
    assert_int_equal(jpt_registry_tool_sandbox(r, NULL, NULL, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_tool_sandbox(NULL, "s", NULL, NULL), JPT_ERR_INVALID);
    jpt_registry_free(r);
}

static void assert_refused(const char *tools_js, int status, const char *message)
{
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, NULL);
    int rc = jpt_registry_load_tools(r, js(tools_js), 0);
    char msg[1024];

    snprintf(msg, sizeof(msg), "%s", jpt_registry_errmsg(r));
    jpt_registry_free(r);
    assert_int_equal(rc, status);
    assert_string_equal(msg, message);
}

static void sandbox_settings_that_cannot_hold_are_refused(void **state)
{
    (void)state;
    assert_refused("{'tools':[{'name':'t','command':['x'],'os_sandbox':{'mode':'strict'}}]}",
                   JPT_ERR_INVALID,
                   "tool 't': 'os_sandbox.mode' must be \"required\", \"best-effort\" or \"off\"");
    assert_refused("{'tools':[{'name':'t','command':['x'],'os_sandbox':{'mode':'required'}}]}",
                   JPT_ERR_INVALID,
                   "tool 't': 'os_sandbox' applies to a stdio tool only with \"sandbox\" (it "
                   "runs unconfined without)");
    assert_refused("{'tools':[{'name':'t','command':['x'],'sandbox':true,"
                   "'os_sandbox':{'mode':'off'}}]}",
                   JPT_ERR_INVALID,
                   "tool 't': 'sandbox' asks for the OS sandbox and 'os_sandbox.mode' turns it "
                   "off: remove one of them");
    assert_refused("{'tools':[{'name':'t','command':['x'],'sandbox':true,"
                   "'os_sandbox':{'read':['lib']}}]}",
                   JPT_ERR_INVALID,
                   "tool 't': 'os_sandbox.read[0]' \"lib\" is not an absolute path");
    assert_refused("{'tools':[{'name':'t','command':['x'],'sandbox':true,"
                   "'os_sandbox':{'root':'/'}}]}",
                   JPT_ERR_INVALID,
                   "tool 't': unknown field 'os_sandbox.root' (expected mode, read, write, "
                   "process_limit)");
    assert_refused("{'tools':[{'name':'t','command':['x'],'sandbox':true,"
                   "'os_sandbox':{'process_limit':1}}]}",
                   JPT_ERR_INVALID,
                   "tool 't': 'os_sandbox.process_limit' must be an integer from 2 to 65536");
    assert_refused("{'tools':[{'name':'t','runtime':'vfs','command':['x'],"
                   "'os_sandbox':{'write':['/tmp']}}]}",
                   JPT_ERR_INVALID,
                   "tool 't': 'os_sandbox.write' does not apply to a vfs tool: it writes "
                   "through the protocol");
    assert_refused("{'tools':[{'name':'t','runtime':'vfs','command':['x'],"
                   "'env':{'inherit':true}}]}",
                   JPT_ERR_INVALID,
                   "tool 't': 'env.inherit' cannot be true for a vfs tool, whose environment is "
                   "clean: name the variables it needs in env.allow");
    assert_refused("{'tools':[{'name':'t','command':['x'],'sandbox':{'filesystem':"
                   "{'allow':['src']}}}]}",
                   JPT_ERR_UNSUPPORTED,
                   "tool 't': 'sandbox.filesystem' of a stdio tool takes \"writable\": true or "
                   "false, and \"git\": \"writable\" or \"protected\" (its OS sandbox "
                   "cannot allow or deny paths one by one)");
    assert_refused("{'tools':[{'name':'t','command':['x'],'sandbox':{'filesystem':"
                   "{'git':'yes'}}}]}",
                   JPT_ERR_UNSUPPORTED,
                   "tool 't': 'sandbox.filesystem' of a stdio tool takes \"writable\": true or "
                   "false, and \"git\": \"writable\" or \"protected\" (its OS sandbox "
                   "cannot allow or deny paths one by one)");
    assert_refused("{'tools':[{'name':'t','command':['x'],'sandbox':'yes'}]}", JPT_ERR_INVALID,
                   "tool 't': 'sandbox' of a stdio tool must be true, false or "
                   "{\"filesystem\": {\"writable\": true|false, \"git\": "
                   "\"writable\"|\"protected\"}}");
}

static int builtin_start(jpt_handle *h, const char *arguments_json, void *ud)
{
    (void)h;
    (void)arguments_json;
    (void)ud;
    return JPT_OK;
}

static void builtin_tools_refuse_os_sandbox(void **state)
{
    (void)state;
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, NULL);
    jpt_builtin_ops ops = {.size = sizeof(ops), .start = builtin_start};

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'b','os_sandbox':{}}"), &ops, NULL),
                     JPT_ERR_UNSUPPORTED);
    assert_string_equal(jpt_registry_errmsg(r),
                        "tool 'b': 'os_sandbox' is not enforced for a builtin tool, so it is "
                        "refused");
    jpt_registry_free(r);
}

static void registry_options_refuse_an_unknown_sandbox_mode(void **state)
{
    (void)state;
    jpt_registry_options o = {.size = sizeof(o), .sandbox_mode = 4};
    jpt_registry *r = NULL;

    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    o.sandbox_mode = -1;
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_null(r);
}

/* ---- Issue 15 §4: a wall for a root host too ------------------------------------ */

/* What a root host's tool did with the capabilities it kept: each check
 * is harmless when it succeeds (the current host name, a wrong reboot
 * magic number, invalid kexec flags, …). EPERM everywhere now, whether
 * the capability or the filter stops it. */
static const char *const privileged[] = {"caps",       "sethostname", "syslog",
                                         "settimeofday", "reboot",    "kexec",
                                         "fanotify",   "sched-fifo",  NULL};

static void assert_no_privilege(const char *lines)
{
    assert_outcome(lines, "caps", "none");
    for (size_t i = 1; privileged[i] != NULL; i++)
        assert_outcome(lines, privileged[i], "EPERM");
}

static void a_root_hosts_vfs_tool_has_no_capabilities(void **state)
{
    (void)state;
    NEED_SECCOMP("the system-call filter");
    host_run run;

    run_vfs(JPT_SANDBOX_REQUIRED, NULL, privileged, &run);
    assert_no_privilege(run.lines);
    assert_int_not_equal(run.enforced & JPT_SANDBOX_ENFORCED_CAPABILITIES, 0);
    free(run.lines);
}

static void a_root_hosts_stdio_tool_has_no_capabilities_nor_etc_secrets(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    NEED_SECCOMP("the system-call filter");
    const char *checks[] = {"caps",       "sethostname",      "syslog",
                            "settimeofday", "reboot",          "kexec",
                            "fanotify",   "sched-fifo",       "read:/etc/shadow",
                            "read:/etc/gshadow", "read:/etc/passwd", NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'sandbox':true", checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);

    assert_false(is_error);
    assert_no_privilege(out);
    /* root owns /etc/shadow: only the sandbox keeps it from a root tool. */
    assert_outcome(out, "read:/etc/shadow", "EACCES");
    if (access("/etc/gshadow", F_OK) == 0)
        assert_outcome(out, "read:/etc/gshadow", "EACCES");
    assert_outcome(out, "read:/etc/passwd", "ok");
    free(out);
    jpt_registry_free(r);
}

/* A file of the test's own, outside the workspace, mode 0600. */
static void make_key(char *path, size_t n, const char *dir, const char *name)
{
    snprintf(path, n, "%s/%s", dir, name);
    write_text(path, "a key\n");
    assert_int_equal(chmod(path, 0600), 0);
}

/* The key as the test made it: mode, owner, times, no extended
 * attribute. */
static void assert_key_untouched(const char *path, const struct stat *before)
{
    struct stat after;
    char value[16];

    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(after.st_mode & 07777, 0600);
    assert_int_equal(after.st_uid, before->st_uid);
    assert_int_equal(after.st_mtime, before->st_mtime);
    assert_int_equal(getxattr(path, "user.jpt_probe", value, sizeof(value)), -1);
}

static void a_vfs_tool_changes_no_files_mode_owner_times_or_xattrs(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    NEED_SECCOMP("the system-call filter");
    char key[4200], env[4200];
    struct stat key_st, env_st;
    make_key(key, sizeof(key), outside, "id_key");
    make_key(env, sizeof(env), root, ".env");
    assert_int_equal(stat(key, &key_st), 0);
    assert_int_equal(stat(env, &env_st), 0);
    /* Readable, so that the fd calls have an fd to work on. */
    const char *read[] = {outside, NULL};
    const char *checks[] = {
        check_of("chmod:", key),    check_of("fchmod:", key),   check_of("fchmodat2:", key),
        check_of("chown:", key),    check_of("utimes:", key),   check_of("touch:", key),
        check_of("setxattr:", key), check_of("getxattr:", key), check_of("chmod:", env),
        NULL};
    host_run run;

    run_vfs(JPT_SANDBOX_REQUIRED, read, checks, &run);
    for (size_t i = 0; checks[i] != NULL; i++)
        assert_outcome(run.lines, checks[i], "EPERM");
    assert_key_untouched(key, &key_st);
    assert_key_untouched(env, &env_st);
    assert_int_not_equal(run.enforced & JPT_SANDBOX_ENFORCED_METADATA, 0);
    unlink(key);
    unlink(env);
    free(run.lines);
}

static void a_stdio_tool_changes_metadata_only_where_it_may_write(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    NEED_SECCOMP("the system-call filter");
    char key[4200], own[4200], extra[4400];
    struct stat key_st;
    make_key(key, sizeof(key), outside, "id_key");
    make_key(own, sizeof(own), root, "script.sh");
    assert_int_equal(stat(key, &key_st), 0);
    const char *checks[] = {check_of("chmod:", key),    check_of("fchmod:", key),
                            check_of("fchmodat2:", key), check_of("chown:", key),
                            check_of("utimes:", key),   check_of("touch:", key),
                            check_of("setxattr:", key), check_of("chmod:", own), NULL};
    snprintf(extra, sizeof(extra), "'sandbox':true,'os_sandbox':{'read':['%s']}", outside);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, extra, checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    /* EROFS in its mount namespace; EPERM from the filter where the host
     * cannot make one (then in the workspace too). */
    const char *outside_err = outside_write(r, "s");
    bool mounts = strcmp(outside_err, "EROFS") == 0;

    assert_false(is_error);
    for (size_t i = 0; i < 7; i++)
        assert_outcome(out, checks[i], mounts ? "EROFS" : "EPERM");
    assert_outcome(out, checks[7], mounts ? "ok" : "EPERM");
    assert_key_untouched(key, &key_st);
    free(out);
    jpt_registry_free(r);

    /* Where the host cannot make a mount namespace: the calls are denied
     * wholesale, and the report says so. */
    jpt__sandbox_test_no_namespaces(true);
    r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, extra, checks));
    out = call(r, "s", &is_error);
    unsigned enforced = 0;
    char *report = NULL;
    assert_int_equal(jpt_registry_tool_sandbox(r, "s", &enforced, &report), JPT_OK);
    jpt__sandbox_test_no_namespaces(false);
    assert_false(is_error);
    for (size_t i = 0; checks[i] != NULL; i++)
        assert_outcome(out, checks[i], "EPERM");
    assert_int_not_equal(enforced & JPT_SANDBOX_ENFORCED_METADATA, 0);
    assert_int_equal(enforced & JPT_SANDBOX_ENFORCED_MOUNTS, 0);
    assert_non_null(strstr(report, "missing: a mount namespace"));
    jpt_free(report);
    assert_key_untouched(key, &key_st);
    unlink(key);
    unlink(own);
    free(out);
    jpt_registry_free(r);
}

/* What the tool does to its host (the probe's parent): each sets what is
 * already set, and is EPERM; on itself it still may. */
static const char *const host_reaching[] = {"prlimit-parent", "nice-parent", "affinity-parent",
                                            "ioprio-parent",  "prlimit-self", "affinity-self",
                                            NULL};

static void assert_only_itself(const char *lines)
{
    for (size_t i = 0; i < 4; i++)
        assert_outcome(lines, host_reaching[i], "EPERM");
    assert_outcome(lines, "prlimit-self", "ok");
    assert_outcome(lines, "affinity-self", "ok");
}

static void a_tool_sets_limits_and_scheduling_of_its_own_process_only(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    host_run run;

    run_vfs(JPT_SANDBOX_REQUIRED, NULL, host_reaching, &run);
    assert_only_itself(run.lines);
    free(run.lines);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT,
                               tool_js("s", false, "'sandbox':true", host_reaching));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    assert_false(is_error);
    assert_only_itself(out);
    free(out);
    jpt_registry_free(r);
}

/* A datagram socket of the host's (the system log's kind), bound at
 * `path`. */
static int dgram_listener(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    size_t n = strlen(path);

    if (n >= sizeof(sun.sun_path))
        fail_msg("the socket path is too long for sun_path: %s", path);
    memcpy(sun.sun_path, path, n + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    return fd;
}

static void assert_nothing_received(int fd)
{
    char buf[64];
    assert_int_equal(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), -1);
    assert_int_equal(errno, EAGAIN);
}

static void no_tool_sends_a_datagram_to_a_host_socket(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    char sock_path[4200];
    snprintf(sock_path, sizeof(sock_path), "%s/log.sock", outside);
    int listener = dgram_listener(sock_path);
    const char *checks[] = {"socket-unix-raw", "socketpair-raw", check_of("raw-sendto:", sock_path),
                            check_of("pair-sendto:", sock_path), "socket-unix", NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'sandbox':true", checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    host_run run;

    run_vfs(JPT_SANDBOX_REQUIRED, NULL, checks, &run);
    assert_nothing_received(listener);
    close(listener);
    unlink(sock_path);
    assert_false(is_error);
    /* Linux makes an AF_UNIX SOCK_RAW a datagram socket. */
    for (size_t i = 0; i < 4; i++) {
        assert_outcome(out, checks[i], "EPERM");
        assert_outcome(run.lines, checks[i], "EPERM");
    }
    /* What the stdio profile documents still works. */
    assert_outcome(out, "socket-unix", "ok");
    free(out);
    free(run.lines);
    jpt_registry_free(r);
}

static void a_vfs_tool_cannot_watch_name_or_locate_host_paths(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    const char *checks[] = {"inotify:/etc", check_of("inotify:", outside),
                            "handle:/etc/passwd", check_of("handle:", secret), "cwd",
                            "stat:/etc/passwd", NULL};
    host_run run;

    run_vfs(JPT_SANDBOX_REQUIRED, NULL, checks, &run);
    assert_outcome(run.lines, checks[0], "EPERM");
    assert_outcome(run.lines, checks[1], "EPERM");
    assert_outcome(run.lines, checks[2], "EPERM");
    assert_outcome(run.lines, checks[3], "EPERM");
    /* It starts in "/", not where the host runs. */
    assert_outcome(run.lines, "cwd", "/");
    /* What remains (vfs.h): Landlock does not govern stat, and the loader
     * and interpreters need it. */
    assert_outcome(run.lines, "stat:/etc/passwd", "ok");
    free(run.lines);

    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("v", true, "", checks));
    bool is_error = true;
    char *out = call(r, "v", &is_error);
    assert_false(is_error);
    assert_outcome(out, "cwd", "/");
    assert_outcome(out, checks[0], "EPERM");
    free(out);
    jpt_registry_free(r);
}

/* The mounts are made by real paths: a writable directory named through
 * a symbolic link (os_sandbox.write) is writable all the same. */
static void a_writable_path_named_through_a_symlink_stays_writable(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    char dir[4200], link[4200], made[4300], extra[4600];
    snprintf(dir, sizeof(dir), "%s/real-w", outside);
    snprintf(link, sizeof(link), "%s/w-link", outside);
    snprintf(made, sizeof(made), "%s/made.txt", link);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(symlink(dir, link), 0);
    const char *checks[] = {check_of("create:", made), NULL};
    snprintf(extra, sizeof(extra), "'sandbox':true,'os_sandbox':{'write':['%s']}", link);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, extra, checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);

    unlink(link);
    rmdir(dir);
    if (is_error)
        fail_msg("the tool failed: %s", out);
    assert_outcome(out, checks[0], "ok");
    free(out);
    jpt_registry_free(r);
}

/* ---- The adversarial pass: a read-only workspace in /tmp ------------------------- */

/* A stdio tool whose workspace is read-only ("filesystem": {"writable":
 * false}) in a checkout under /tmp, which the profile lets it write:
 * Landlock's grant of /tmp holds the workspace too, so only a mount can
 * keep it read-only; without a mount namespace the required mode
 * refuses to run it. */
static void a_read_only_workspace_in_tmp_stays_read_only(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    NEED_SECCOMP("the system-call filter");
    char *ws = strcpy(tmp_ws, "/tmp/jpt-sandbox-ro-XXXXXX"), file[128], made[128];
    assert_non_null(mkdtemp(ws));
    snprintf(file, sizeof(file), "%s/file.txt", ws);
    snprintf(made, sizeof(made), "%s/made.txt", ws);
    write_text(file, "as it was\n");
    struct stat before, st;
    assert_int_equal(stat(file, &before), 0);
    const char *checks[] = {check_of("create:", made), check_of("truncate:", file),
                            check_of("chmod:", file), "create:/tmp/jpt-sandbox-ro-beside", NULL};
    const char *extra = "'sandbox':{'filesystem':{'writable':false}}";
    jpt_registry_options o = {.size = sizeof(o), .root = ws, .kill_grace_ms = 300,
                              .drain_ms = 100};
    jpt_registry *r = ru_registry_with(&o, js(tool_js("s", false, extra, checks)));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    unsigned enforced = 0;

    assert_int_equal(jpt_registry_tool_sandbox(r, "s", &enforced, NULL), JPT_OK);
    jpt_registry_free(r);
    bool made_it = access(made, F_OK) == 0;
    unlink(made);
    assert_false(is_error);
    assert_false(made_it);
    assert_string_equal(read_text(file), "as it was\n");
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_mode, before.st_mode);
    if (enforced & JPT_SANDBOX_ENFORCED_MOUNTS) {
        assert_outcome(out, checks[0], "EROFS");
        assert_outcome(out, checks[1], "EROFS");
        assert_outcome(out, checks[2], "EROFS");
    }
    /* The rest of /tmp stays writable. */
    assert_outcome(out, "create:/tmp/jpt-sandbox-ro-beside", "ok");
    free(out);

    /* Without a mount namespace nothing could keep it read-only. */
    jpt__sandbox_test_no_namespaces(true);
    r = ru_registry_with(&o, js(tool_js("s", false, extra, checks)));
    out = call(r, "s", &is_error);
    jpt__sandbox_test_no_namespaces(false);
    jpt_registry_free(r);
    unlink(made);
    assert_true(is_error);
    assert_non_null(strstr(out, "the read-only workspace"));
    assert_string_equal(read_text(file), "as it was\n");
    free(out);
    unlink(file);
    assert_int_equal(rmdir(ws), 0);
    tmp_ws[0] = '\0';
}

/* ---- The adversarial pass: a grant above the workspace -------------------------- */

/* A read path that holds the workspace (the directory above it, where a
 * tool's libraries were thought to be; or the system's own, for a
 * workspace in /usr/src): the VFS tool would open the workspace's .env
 * itself, past the policy. Required mode refuses the spawn; best-effort
 * runs it and its report says the workspace is readable. */
static void a_read_path_above_the_workspace_is_refused(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    char above[4200], env[4200];
    snprintf(above, sizeof(above), "%s/..", root);
    snprintf(env, sizeof(env), "%s/.env", root);
    write_text(env, "SECRET=1\n");
    const char *read[] = {above, NULL};
    const char *checks[] = {check_of("read:", env), NULL};
    const char *argv[] = {PROBE, "--vfs", checks[0], NULL};
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .sandbox_mode = JPT_SANDBOX_REQUIRED, .sandbox_read = read};
    jpt_vfs_host *h = NULL;
    host_run run;

    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    assert_int_equal(jpt_vfs_host_spawn(h, argv, "{\"name\":\"probe\"}"), JPT_ERR_SANDBOX);
    assert_non_null(strstr(jpt_vfs_host_errmsg(h), "lies beneath"));
    jpt_vfs_host_free(h);

    run_vfs(JPT_SANDBOX_BEST_EFFORT, read, checks, &run);
    assert_non_null(strstr(run.report, "the workspace is readable: it lies beneath"));
    free(run.lines);

    /* A definition's os_sandbox.read, through a registry. */
    char extra[4400];
    snprintf(extra, sizeof(extra), "'os_sandbox':{'read':['%s']}", above);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("v", true, extra, checks));
    bool is_error = false;
    char *out = call(r, "v", &is_error);
    jpt_registry_free(r);
    unlink(env);
    assert_true(is_error);
    if (strstr(out, "SECRET") != NULL || strstr(out, "lies beneath") == NULL)
        fail_msg("the tool read the workspace past the policy: %s", out);
    free(out);
}

/* ---- The adversarial pass: names others connect to -------------------------------- */

/* A tool cannot connect() to anything, so a socket it listens on serves
 * only processes outside the sandbox: bound to a name the host's users
 * connect to (an abstract name of a service that restarts, a path in
 * /tmp such as a terminal multiplexer's), it takes their connections and
 * what they send; bound to a socketpair's end, it keeps the name from
 * its service. bind() and listen() are refused in every profile. */
static void no_tool_binds_a_name_others_connect_to(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    char sock_path[4200], abstract[64];
    snprintf(sock_path, sizeof(sock_path), "%s/service.sock", root);
    snprintf(abstract, sizeof(abstract), "jpt-sandbox-probe-%d", (int)getpid());
    const char *checks[] = {check_of("listen-abstract:", abstract),
                            check_of("listen-path:", sock_path), check_of("pair-bind:", abstract),
                            NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'sandbox':true", checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    host_run run;
    struct stat st;

    jpt_registry_free(r);
    bool made = lstat(sock_path, &st) == 0;
    unlink(sock_path);
    run_vfs(JPT_SANDBOX_REQUIRED, NULL, checks, &run);
    assert_false(is_error);
    assert_false(made);
    for (size_t i = 0; checks[i] != NULL; i++)
        assert_outcome(out, checks[i], "EPERM");
    /* The VFS tool has no socket(): its socketpair's end. */
    assert_outcome(run.lines, checks[2], "EPERM");
    free(out);
    free(run.lines);
}

/* ---- The adversarial pass: signals by other ways ---------------------------------- */

static volatile sig_atomic_t host_signalled;

static void count_signal(int sig)
{
    (void)sig;
    host_signalled++;
}

/* A tool makes its host the owner of a file's events (F_SETOWN on its
 * stdout, FIOSETOWN on a socketpair) with a signal of its choice: the
 * kernel sends it with the tool's credentials, where a uid 0 may signal
 * any process — the host, and every process of the machine — and only
 * Landlock's signal scope (ABI 6, Linux 6.12) stops it. Also kill(-1),
 * every process the tool may signal at once. Each is refused by the
 * filter, whatever the Landlock ABI (5: a kernel before 6.12). */
static void a_tool_cannot_make_the_host_own_its_signals(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    NEED_SECCOMP("the system-call filter");
    char owner_parent[32], owner_pair[32];
    snprintf(owner_parent, sizeof(owner_parent), "owner-parent:%d", SIGUSR2);
    snprintf(owner_pair, sizeof(owner_pair), "owner-pair:%d", SIGUSR2);
    const char *checks[] = {owner_parent, owner_pair, "kill-every", NULL};
    struct sigaction count = {.sa_handler = count_signal, .sa_flags = SA_RESTART}, old;
    const int abis[] = {-1, 5};

    sigemptyset(&count.sa_mask);
    assert_int_equal(sigaction(SIGUSR2, &count, &old), 0);
    for (size_t i = 0; i < sizeof(abis) / sizeof(abis[0]); i++) {
        host_run run;
        host_signalled = 0;
        jpt__sandbox_test_limit(abis[i], false);
        run_vfs(JPT_SANDBOX_BEST_EFFORT, NULL, checks, &run);
        jpt__sandbox_test_limit(-1, false);
        if (host_signalled != 0)
            fail_msg("the host got %d signals of the tool's choosing (Landlock ABI %d):\n%s",
                     (int)host_signalled, abis[i] < 0 ? kernel_abi : abis[i], run.lines);
        assert_outcome(run.lines, owner_parent, "EPERM");
        assert_outcome(run.lines, owner_pair, "EPERM");
        assert_outcome(run.lines, "kill-every", "EPERM");
        free(run.lines);
    }
    assert_int_equal(sigaction(SIGUSR2, &old, NULL), 0);
}

/* ---- A host that is not root -------------------------------------------------------- */

/* Runs `fn` in a forked process that has become uid and gid 65534 (nobody),
 * in a workspace and a directory beside it that it owns; returns what `fn`
 * wrote to its pipe (the probe's lines), NUL-terminated, to free. */
static char *as_nobody(void (*fn)(int out, const char *ws, const char *beside))
{
    char ws[4200], beside[4200], buf[1 << 14];
    int p[2];
    size_t n = 0;

    snprintf(ws, sizeof(ws), "%s/nobody-ws", outside);
    snprintf(beside, sizeof(beside), "%s/nobody-beside", outside);
    assert_int_equal(mkdir(ws, 0755), 0);
    assert_int_equal(mkdir(beside, 0755), 0);
    assert_int_equal(chown(ws, 65534, 65534), 0);
    assert_int_equal(chown(beside, 65534, 65534), 0);
    /* The scratch directory beside the workspace is the test's, 0700. */
    assert_int_equal(chmod(outside, 0755), 0);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        /* As a host that started unprivileged would be: dumpable (a
         * change of uid without execve leaves /proc/self root's). */
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0 ||
            prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
            _exit(2);
        fn(p[1], ws, beside);
        _exit(0);
    }
    close(p[1]);
    for (ssize_t got; n < sizeof(buf) - 1 && (got = read(p[0], buf + n, sizeof(buf) - 1 - n)) > 0;)
        n += (size_t)got;
    buf[n] = '\0';
    close(p[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(chmod(outside, 0700), 0);
    char cmd[9000];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", ws, beside);
    assert_int_equal(system(cmd), 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the unprivileged host failed (status %d): %s", status, buf);
    return strdup(buf);
}

static void nobody_chmods(int out, const char *ws, const char *beside)
{
    char key[4300], mine[4300], defs[1 << 15];
    snprintf(key, sizeof(key), "%s/id_key", beside);
    snprintf(mine, sizeof(mine), "%s/mine.sh", ws);
    FILE *f = fopen(key, "w");
    FILE *g = fopen(mine, "w");
    if (f == NULL || g == NULL)
        _exit(3);
    fclose(f);
    fclose(g);
    chmod(key, 0600);
    snprintf(defs, sizeof(defs),
             "{\"tools\":[{\"name\":\"s\",\"command\":[\"%s\",\"chmod:%s\",\"touch:%s\","
             "\"setxattr:%s\",\"chmod:%s\",\"caps\"],\"sandbox\":true}]}",
             PROBE, key, key, key, mine);
    jpt_registry_options o = {.size = sizeof(o), .root = ws, .kill_grace_ms = 300,
                              .drain_ms = 100};
    jpt_registry *r = NULL;
    bool is_error = true;
    unsigned enforced = 0;
    if (jpt_registry_new(&o, &r) != JPT_OK || jpt_registry_load_tools(r, defs, 0) != JPT_OK)
        _exit(4);
    char *text = ru_call(r, "s", "{}", &is_error);
    struct stat st;
    jpt_registry_tool_sandbox(r, "s", &enforced, NULL);
    dprintf(out, "%s\nmounts %s\nkey-mode %o\n", text,
            enforced & JPT_SANDBOX_ENFORCED_MOUNTS ? "yes" : "no",
            stat(key, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0u);
    free(text);
    jpt_registry_free(r);
}

static void nobody_reopens_a_shut_repository(int out, const char *ws, const char *beside)
{
    char path[4400], defs[1 << 14];
    (void)beside;
    snprintf(path, sizeof(path), "%s/shut", ws);
    if (mkdir(path, 0755) != 0)
        _exit(3);
    snprintf(path, sizeof(path), "%s/shut/.git", ws);
    if (mkdir(path, 0755) != 0)
        _exit(3);
    snprintf(path, sizeof(path), "%s/shut/.git/config", ws);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        _exit(3);
    fputs("[core]\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/shut", ws);
    if (chmod(path, 0) != 0)
        _exit(3);
    snprintf(defs, sizeof(defs),
             "{\"tools\":[{\"name\":\"s\",\"command\":[\"sh\",\"-c\",\"chmod 700 shut; "
             "echo fsmonitor >> shut/.git/config; echo done\"],\"sandbox\":true}]}");
    jpt_registry_options o = {.size = sizeof(o), .root = ws, .kill_grace_ms = 300,
                              .drain_ms = 100};
    jpt_registry *r = NULL;
    bool is_error = true;
    unsigned enforced = 0;
    if (jpt_registry_new(&o, &r) != JPT_OK || jpt_registry_load_tools(r, defs, 0) != JPT_OK)
        _exit(4);
    char *text = ru_call(r, "s", "{}", &is_error);
    jpt_registry_tool_sandbox(r, "s", &enforced, NULL);
    chmod(path, 0700);
    char config[64] = "";
    snprintf(path, sizeof(path), "%s/shut/.git/config", ws);
    ru_read_text(path, config, sizeof(config));
    dprintf(out, "%s\nmounts %s\nconfig %s", text,
            enforced & JPT_SANDBOX_ENFORCED_MOUNTS ? "yes" : "no", config);
    free(text);
    jpt_registry_free(r);
}

/* A repository in a directory of the host's uid that no one may search
 * (mode 000): the walk that finds the repositories a stdio tool keeps
 * read-only passes it over, and the tool, of that uid, makes it
 * searchable again (chmod) and writes its .git/config (a core.fsmonitor
 * the user's next git status would run), which the sweep moved aside at
 * the tool's end, the user's repository with it. The directory is
 * read-only to the tool now (chmod: EROFS): repository and all stay. */
static void a_stdio_tool_reopens_no_shut_repository(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    NEED_SECCOMP("the system-call filter");
    if (getuid() != 0) {
        print_message("[ SKIPPED  ] becoming nobody needs root\n");
        skip();
    }
    char *lines = as_nobody(nobody_reopens_a_shut_repository);
    if (strstr(lines, "\nmounts yes") == NULL) {
        free(lines);
        print_message("[ SKIPPED  ] no mount namespace for a host that is not root here\n");
        skip();
    }
    if (strstr(lines, "done") == NULL || strstr(lines, "\nconfig [core]\n") == NULL ||
        strstr(lines, "fsmonitor") != NULL)
        fail_msg("the shut repository was written: %s", lines);
    free(lines);
}

static void a_non_root_hosts_stdio_tool_changes_no_metadata_outside(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    NEED_SECCOMP("the system-call filter");
    if (getuid() != 0) {
        print_message("[ SKIPPED  ] becoming nobody needs root\n");
        skip();
    }
    char *lines = as_nobody(nobody_chmods);
    bool mounts = strstr(lines, "\nmounts yes") != NULL;
    /* In its own user and mount namespace (EROFS), or denied wholesale
     * where the host cannot make them (EPERM). */
    const char *want = mounts ? "EROFS" : "EPERM";
    assert_non_null(strstr(lines, "chmod:"));
    assert_non_null(strstr(lines, "\nkey-mode 600"));
    for (const char *line = lines; line != NULL && *line != '\0';) {
        if (strncmp(line, "chmod:", 6) == 0 || strncmp(line, "touch:", 6) == 0 ||
            strncmp(line, "setxattr:", 9) == 0) {
            const char *sp = strchr(line, ' ');
            bool own = sp != NULL && sp - line > 8 && strncmp(sp - 8, "/mine.sh", 8) == 0;
            const char *expect = own && mounts ? "ok" : want;
            if (sp == NULL || strncmp(sp + 1, expect, strlen(expect)) != 0)
                fail_msg("expected %s: %s", expect, lines);
        }
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    assert_outcome(lines, "caps", "none");
    print_message("[   INFO   ] a host that is not root: %s\n",
                  mounts ? "a user and a mount namespace" : "no namespaces, calls denied");
    free(lines);
}

/* ---- The adversarial pass: set-user-ID files -------------------------------------- */

/* Every way a sandboxed tool could leave a set-user-ID or set-group-ID
 * file where it may write, on `dir` (which holds a file "plain.sh"): for
 * a root host's tool, a program that runs as root for whoever may run it
 * (another user of the machine, the user's next command). */
static void setid_checks(const char *dir, const char **checks, char bufs[][4400])
{
    static const char *const kinds[][2] = {
        {"chmod-setuid:", "/plain.sh"},   {"chmod-setgid:", "/plain.sh"},
        {"fchmod-setuid:", "/plain.sh"},  {"fchmodat2-setuid:", "/plain.sh"},
        {"create-setuid:", "/made-1"},    {"openat-setgid:", "/made-2"},
        {"creat-setuid:", "/made-3"},     {"mknod-setuid:", "/made-4"},
        {"tmpfile-setuid:", ""},          {"openat2-create:", "/made-5"},
    };
    size_t i = 0;

    for (; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        snprintf(bufs[i], 4400, "%s%s%s", kinds[i][0], dir, kinds[i][1]);
        checks[i] = bufs[i];
    }
    checks[i] = NULL;
}

/* The outcome each setid check must have: refused (openat2: ENOSYS, for
 * the caller to fall back to openat). */
static void assert_no_setid(const char *lines, const char *const *checks)
{
    for (size_t i = 0; checks[i] != NULL; i++)
        assert_outcome(lines, checks[i],
                       strncmp(checks[i], "openat2-", 8) == 0 ? "ENOSYS" : "EPERM");
}

/* The first file beneath `dir` with a set-user-ID or set-group-ID bit, or
 * NULL. */
static const char *setid_file_in(const char *dir)
{
    static char found[4400];
    char cmd[4400];
    snprintf(cmd, sizeof(cmd), "find '%s' -type f -perm /6000 2>/dev/null", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    found[0] = '\0';
    if (fgets(found, sizeof(found), p) == NULL)
        found[0] = '\0';
    pclose(p);
    return found[0] != '\0' ? found : NULL;
}

static void no_sandboxed_tool_makes_a_setuid_file(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    NEED_SECCOMP("the system-call filter");
    char plain[4200], bufs[16][4400];
    const char *checks[17];
    snprintf(plain, sizeof(plain), "%s/plain.sh", root);
    write_text(plain, "#!/bin/sh\n");
    assert_int_equal(chmod(plain, 0755), 0);
    setid_checks(root, checks, bufs);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'sandbox':true", checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    const char *setid = setid_file_in(root);

    if (setid != NULL)
        fail_msg("the tool left a set-user-ID file: %s(the probe said:\n%s)", setid, out);
    assert_false(is_error);
    assert_no_setid(out, checks);
    free(out);
    jpt_registry_free(r);
    for (size_t i = 1; i <= 5; i++) {
        char made[4300];
        snprintf(made, sizeof(made), "%s/made-%zu", root, i);
        unlink(made);
    }
    snprintf(plain, sizeof(plain), "%s/tmpfile", root);
    unlink(plain);
}

static void nobody_makes_setid(int out, const char *ws, const char *beside)
{
    char plain[4300], bufs[16][4400], defs[1 << 15];
    const char *checks[17];
    int n;
    (void)beside;
    snprintf(plain, sizeof(plain), "%s/plain.sh", ws);
    FILE *f = fopen(plain, "w");
    if (f == NULL)
        _exit(3);
    fclose(f);
    chmod(plain, 0755);
    setid_checks(ws, checks, bufs);
    n = snprintf(defs, sizeof(defs), "{\"tools\":[{\"name\":\"s\",\"command\":[\"%s\"", PROBE);
    for (size_t i = 0; checks[i] != NULL; i++)
        n += snprintf(defs + n, sizeof(defs) - (size_t)n, ",\"%s\"", checks[i]);
    snprintf(defs + n, sizeof(defs) - (size_t)n, "],\"sandbox\":true}]}");
    jpt_registry_options o = {.size = sizeof(o), .root = ws, .kill_grace_ms = 300,
                              .drain_ms = 100};
    jpt_registry *r = NULL;
    bool is_error = true;
    if (jpt_registry_new(&o, &r) != JPT_OK || jpt_registry_load_tools(r, defs, 0) != JPT_OK)
        _exit(4);
    char *text = ru_call(r, "s", "{}", &is_error);
    const char *setid = setid_file_in(ws);
    dprintf(out, "%s\nsetid %s\n", text, setid != NULL ? setid : "none");
    free(text);
    jpt_registry_free(r);
}

static void a_non_root_hosts_tool_makes_no_setuid_file_either(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    NEED_SECCOMP("the system-call filter");
    if (getuid() != 0) {
        print_message("[ SKIPPED  ] becoming nobody needs root\n");
        skip();
    }
    char *lines = as_nobody(nobody_makes_setid);
    char bufs[16][4400];
    const char *checks[17];
    char ws[4200];
    snprintf(ws, sizeof(ws), "%s/nobody-ws", outside);
    setid_checks(ws, checks, bufs);
    if (strstr(lines, "\nsetid none") == NULL)
        fail_msg("a set-user-ID file of nobody was left:\n%s", lines);
    assert_no_setid(lines, checks);
    free(lines);
}

/* A repository below a directory a host that is not root may search but
 * not read (mode 0311): the walk that finds the repositories cannot list
 * it, and passed it over, and the tool, of the host's uid, wrote its
 * .git/config by name. Its sandbox cannot say every repository is
 * read-only now: mode "required" refuses the tool, saying why. */
static void nobody_writes_a_hidden_repository(int out, const char *ws, const char *beside)
{
    char locked[4300], git[4400], config[4500], defs[1 << 14];
    (void)beside;
    snprintf(locked, sizeof(locked), "%s/locked", ws);
    snprintf(git, sizeof(git), "%s/.git", locked);
    snprintf(config, sizeof(config), "%s/config", git);
    FILE *f = NULL;
    if (mkdir(locked, 0755) != 0 || mkdir(git, 0755) != 0 || (f = fopen(config, "w")) == NULL)
        _exit(3);
    fputs("[core]\n", f);
    fclose(f);
    if (chmod(locked, 0311) != 0)
        _exit(3);
    snprintf(defs, sizeof(defs),
             "{\"tools\":[{\"name\":\"s\",\"command\":[\"%s\",\"write:%s\"],\"sandbox\":true,"
             "\"os_sandbox\":{\"mode\":\"required\"}}]}",
             PROBE, config);
    jpt_registry_options o = {.size = sizeof(o), .root = ws, .kill_grace_ms = 300,
                              .drain_ms = 100};
    jpt_registry *r = NULL;
    bool is_error = false;
    if (jpt_registry_new(&o, &r) != JPT_OK || jpt_registry_load_tools(r, defs, 0) != JPT_OK)
        _exit(4);
    char *text = ru_call(r, "s", "{}", &is_error);
    char now[64] = "";
    if ((f = fopen(config, "r")) != NULL) {
        if (fgets(now, sizeof(now), f) == NULL)
            now[0] = '\0';
        fclose(f);
    }
    dprintf(out, "%s\nis_error %d\nconfig %s", text, is_error, now);
    free(text);
    jpt_registry_free(r);
    chmod(locked, 0755);
}

static void a_repository_the_host_cannot_list_is_not_passed_over(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    NEED_SECCOMP("the system-call filter");
    if (getuid() != 0) {
        print_message("[ SKIPPED  ] becoming nobody needs root\n");
        skip();
    }
    char *lines = as_nobody(nobody_writes_a_hidden_repository);
    if (strstr(lines, "\nconfig [core]\n") == NULL)
        fail_msg("the tool wrote the repository's configuration:\n%s", lines);
    if (strstr(lines, "\nis_error 1\n") == NULL ||
        strstr(lines, "not every repository of the workspace") == NULL ||
        strstr(lines, "the directory locked cannot be listed to find what lies beneath it: "
                      "Permission denied") == NULL)
        fail_msg("expected the tool refused, saying why:\n%s", lines);
    free(lines);
}

/* ---- The second adversarial pass's findings (issue 15) ----------------------------- */

/* A stdio tool whose program lies below /tmp, asked about with
 * jpt_registry_tool_sandbox before its first call: the view of the file
 * system that query prepared (and kept) named no program, and the spawns
 * after it entered that view, where the program's directory was not
 * bound into the tool's own /tmp: execve failed with ENOENT (found when
 * the suite ran from a checkout below /tmp). */
static void a_program_below_tmp_runs_after_its_sandbox_was_queried(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    char dir[64] = "/tmp/jpt-sandbox-program-XXXXXX", program[96], tools_json[256];
    assert_non_null(mkdtemp(dir));
    snprintf(program, sizeof(program), "%s/echo", dir);
    char cp[256];
    snprintf(cp, sizeof(cp), "cp /bin/echo %s", program);
    assert_int_equal(system(cp), 0);
    snprintf(tools_json, sizeof(tools_json),
             "{'tools':[{'name':'e','command':['%s','ran'],'sandbox':true}]}", program);
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tools_json);
    unsigned enforced = 0;
    char *report = NULL;
    assert_int_equal(jpt_registry_tool_sandbox(r, "e", &enforced, &report), JPT_OK);
    jpt_free(report);
    bool is_error = true;
    char *out = call(r, "e", &is_error);
    jpt_registry_free(r);
    unlink(program);
    rmdir(dir);
    if (is_error)
        print_message("%s\n", out);
    assert_false(is_error);
    assert_string_equal(out, "ran\n");
    free(out);
    if ((enforced & JPT_SANDBOX_ENFORCED_MOUNTS) == 0)
        print_message("[   INFO   ] no mount namespace here: the host's /tmp is shared\n");
}

/* S1: a root host's stdio tool read (and wrote) every root-owned file
 * of the host's /tmp, another service's private directory included: the
 * profile granted /tmp read-write and the tool is uid 0. Its /tmp is its
 * own now (a directory of its own bound there): the host's files are not
 * there, and what it writes there does not reach the host's /tmp. */
static void a_stdio_tool_reads_no_private_file_of_the_hosts_tmp(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    char dir[64] = "/tmp/jpt-sandbox-private-XXXXXX", key[128], mine[64];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0700), 0);
    snprintf(key, sizeof(key), "%s/key", dir);
    write_text(key, "ROOT-PRIVATE\n");
    assert_int_equal(chmod(key, 0600), 0);
    snprintf(mine, sizeof(mine), "/tmp/jpt-sandbox-tool-%d", (int)getpid());
    const char *checks[] = {check_of("read:", key), check_of("create:", mine), NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'sandbox':true", checks));
    unsigned enforced = 0;
    char *report = NULL;
    assert_int_equal(jpt_registry_tool_sandbox(r, "s", &enforced, &report), JPT_OK);
    bool own_tmp = (enforced & JPT_SANDBOX_ENFORCED_MOUNTS) != 0;
    jpt_free(report);
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    jpt_registry_free(r);
    bool reached = access(mine, F_OK) == 0;
    /* Its /tmp goes with the registry. */
    char pattern[64];
    glob_t left;
    snprintf(pattern, sizeof(pattern), "/tmp/jptool-tmp-%d-*", (int)getpid());
    bool kept = glob(pattern, 0, NULL, &left) == 0;
    if (kept)
        globfree(&left);
    assert_false(kept);
    unlink(mine);
    unlink(key);
    rmdir(dir);
    assert_false(is_error);
    if (!own_tmp) {
        print_message("[ SKIPPED  ] no mount namespace here: the host's /tmp is shared\n");
        free(out);
        skip();
    }
    assert_outcome(out, checks[0], "ENOENT");
    assert_outcome(out, checks[1], "ok");
    assert_false(reached);
    free(out);
}

/* S2: a stdio tool with "sandbox": true writes the workspace's .git: a
 * core.fsmonitor planted there runs, unsandboxed, at the user's next
 * `git status` (issue 15 §2's escape, which fs.write and process.run
 * children no longer have). */
static void a_stdio_tool_cannot_plant_git_configuration(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    char git[4200], config[4300];
    snprintf(git, sizeof(git), "%s/.git", root);
    snprintf(config, sizeof(config), "%s/config", git);
    assert_int_equal(mkdir(git, 0755), 0);
    write_text(config, "[core]\n");
    const char *checks[] = {check_of("write:", config), NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'sandbox':true", checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    jpt_registry_free(r);
    char *now = read_text(config);
    bool planted = strcmp(now, "[core]\n") != 0;
    unlink(config);
    rmdir(git);
    assert_false(is_error);
    assert_false(planted);
    free(out);
}

/* S2's counterpart: where it may write, a stdio tool made a repository of
 * its own (a .git with a core.fsmonitor) for the user's next git there to
 * run. After its process, the sweep moves aside what of a repository was
 * not there before it, and the tool's stderr says so. */
static void on_moved_log(int level, const char *msg, void *ud)
{
    if (level == JPT_LOG_WARNING && strstr(msg, "moved aside") != NULL)
        snprintf(ud, 512, "%s", msg);
}

static void a_stdio_tool_plants_no_repository(void **state)
{
    (void)state;
    char said[512] = "";
    NEED_ABI(1, "the file system part");
    char sub[4200], planted[4300], moved[4400];
    snprintf(sub, sizeof(sub), "%s/sub", root);
    snprintf(planted, sizeof(planted), "%s/.git", sub);
    snprintf(moved, sizeof(moved), "%s/.git.jptool-quarantine/config", sub);
    assert_int_equal(mkdir(sub, 0755), 0);
    const char *checks[] = {check_of("plant-repo:", sub), NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'sandbox':true", checks));
    bool is_error = true;
    jpt_set_log(on_moved_log, said, JPT_LOG_WARNING);
    char *out = call(r, "s", &is_error);
    jpt_set_log(NULL, NULL, 0);
    jpt_registry_free(r);
    bool there = access(planted, F_OK) == 0, aside = access(moved, F_OK) == 0;
    rm_tree(sub);
    assert_outcome(out, checks[0], "ok");
    assert_false(there);
    assert_true(aside);
    /* Told to the host's log, and at the end of the tool's stderr, which
     * the model reads where the registry shows it (a failed call's). */
    assert_non_null(strstr(said, "moved aside sub/.git (now sub/.git.jptool-quarantine)"));
    free(out);
}

/* A stdio tool whose definition says "git": "writable" writes its
 * repositories, as a vfs tool's policy lets fs.write. */
static void git_writable_lets_a_stdio_tool_write_its_repositories(void **state)
{
    (void)state;
    NEED_ABI(1, "the file system part");
    char git[4200], config[4300];
    snprintf(git, sizeof(git), "%s/.git", root);
    snprintf(config, sizeof(config), "%s/config", git);
    assert_int_equal(mkdir(git, 0755), 0);
    write_text(config, "[core]\n");
    const char *checks[] = {check_of("write:", config), NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT,
                               tool_js("s", false, "'sandbox':{'filesystem':{'git':'writable'}}",
                                       checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    jpt_registry_free(r);
    bool written = strcmp(read_text(config), "[core]\n") != 0;
    unlink(config);
    rmdir(git);
    assert_false(is_error);
    assert_outcome(out, checks[0], "ok");
    assert_true(written);
    free(out);
}

/* S3: a stdio tool watched what it may not read (inotify on the home
 * directory: the names made there, when files are opened); no sandboxed
 * process watches a path now. */
static void a_stdio_tool_watches_no_path_it_cannot_read(void **state)
{
    (void)state;
    NEED_SECCOMP("the system-call filter");
    const char *checks[] = {check_of("inotify:", home), check_of("inotify:", outside), NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT, tool_js("s", false, "'sandbox':true", checks));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    jpt_registry_free(r);
    assert_outcome(out, checks[0], "EPERM");
    assert_outcome(out, checks[1], "EPERM");
    free(out);
}

/* S4: where the containment is "session" (a host whose cgroup is not
 * delegated), a sandboxed tool's daemon (setsid, a second fork) outlived
 * the tool and the registry. Every sandboxed process without a cgroup of
 * its own has a PID namespace, whose end ends it. */
static void a_sandboxed_tools_daemon_ends_with_it(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    char pidfile[4200];
    snprintf(pidfile, sizeof(pidfile), "%s/daemon.pid", root);
    unlink(pidfile);
    const char *checks[] = {check_of("daemon:", pidfile), NULL};
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 300,
                              .drain_ms = 100, .containment = JPT_CONTAIN_SESSION};
    jpt_registry *r = ru_registry_with(&o, js(tool_js("s", false, "'sandbox':true", checks)));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    jpt_registry_free(r);
    free(out);
    int pid = 0;
    for (int i = 0; i < 50 && pid == 0; i++) {
        FILE *f = fopen(pidfile, "r");
        if (f != NULL) {
            if (fscanf(f, "%d", &pid) != 1)
                pid = 0;
            fclose(f);
        }
        if (pid == 0)
            usleep(20000);
    }
    unlink(pidfile);
    bool alive = pid > 0 && kill(pid, 0) == 0;
    if (pid > 0)
        kill(pid, SIGKILL);
    assert_true(pid > 0); /* it ran */
    assert_false(alive);
}

/* S4's other half: below Landlock ABI 6 nothing scoped a tool's signals,
 * and a tool of the host's uid could kill its host (kill, tgkill,
 * pidfd_send_signal). In a PID namespace of its own it does not see it. */
static void below_landlock_abi_6_a_tool_still_cannot_signal_its_host(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    const char *checks[] = {"signal-parent", NULL};
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 300,
                              .containment = JPT_CONTAIN_SESSION};
    jpt__sandbox_test_limit(5, false);
    jpt_registry *r = ru_registry_with(&o, js(tool_js("s", false, "'sandbox':true", checks)));
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    jpt_registry_free(r);
    jpt__sandbox_test_limit(-1, false);
    assert_false(is_error);
    assert_outcome(out, "signal-parent", "ESRCH");
    free(out);
}

/* R2 for tools: a sandboxed tool and what it starts have at most
 * os_sandbox.process_limit processes at once (its cgroup's pids.max, or
 * its PID namespace's pid_max), itself counted. */
static void a_sandboxed_tools_processes_are_bounded(void **state)
{
    (void)state;
    NEED_ABI(1, "the sandbox");
    const char *checks[] = {"forks:40", NULL};
    jpt_registry *r = registry(JPT_SANDBOX_DEFAULT,
                               tool_js("s", false, "'sandbox':true,'os_sandbox':{'process_limit':20}",
                                       checks));
    unsigned enforced = 0;
    char *text = NULL;
    assert_int_equal(jpt_registry_tool_sandbox(r, "s", &enforced, &text), JPT_OK);
    bool bounded = strstr(text, "at most 20 at once") != NULL;
    jpt_free(text);
    bool is_error = true;
    char *out = call(r, "s", &is_error);
    jpt_registry_free(r);
    assert_false(is_error);
    if (!bounded) {
        print_message("[ SKIPPED  ] no bound on processes here (no pids controller, no pid_max "
                      "per PID namespace)\n");
        free(out);
        skip();
    }
    assert_outcome(out, "forks:40", "19");
    free(out);
}

/* Not a check: what this machine's kernel lets the sandbox enforce, in the
 * test log, so that a CI run says which features it exercised. */
static void this_machine_enforces(void **state)
{
    (void)state;
    static const char *const checks[] = {NULL};
    host_run run = {0};

    run_vfs(JPT_SANDBOX_BEST_EFFORT, NULL, checks, &run);
    print_message("[ SANDBOX  ] %s\n", run.report);
    free(run.lines);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(this_machine_enforces),
        cmocka_unit_test(a_vfs_tool_reads_no_file_of_the_workspace_home_or_host),
        cmocka_unit_test(a_vfs_tool_has_no_socket_and_no_way_to_other_processes),
        cmocka_unit_test(a_vfs_tool_cannot_signal_the_host),
        cmocka_unit_test(tcp_connect_is_denied_by_landlock_too),
        cmocka_unit_test(a_vfs_tool_still_execs_and_reads_the_system),
        cmocka_unit_test(sandbox_read_lets_a_vfs_tool_read_a_listed_directory),
        cmocka_unit_test(a_vfs_tools_environment_is_path_alone),
        cmocka_unit_test(the_report_says_what_this_kernel_enforces),
        cmocka_unit_test(best_effort_on_an_older_kernel_runs_and_reports_the_gaps),
        cmocka_unit_test(below_abi_3_seccomp_denies_truncate),
        cmocka_unit_test(required_fails_where_the_system_lacks_landlock_or_seccomp),
        cmocka_unit_test(off_runs_the_tool_unconfined_and_says_so),
        cmocka_unit_test(each_spawn_logs_what_its_sandbox_enforces),
        cmocka_unit_test(host_options_are_checked),
        cmocka_unit_test(a_spec_is_checked_before_anything_is_opened),
        cmocka_unit_test(a_registry_vfs_tool_runs_sandboxed_with_its_allowed_variables),
        cmocka_unit_test(a_registry_vfs_call_fails_where_the_sandbox_is_required_and_missing),
        cmocka_unit_test(a_tool_that_dies_before_it_speaks_in_the_sandbox_is_told_why),
        cmocka_unit_test(a_tool_that_spoke_before_it_died_gets_no_sandbox_hint),
        cmocka_unit_test(a_tool_that_started_then_failed_gets_no_sandbox_hint),
        cmocka_unit_test(a_python_tool_that_cannot_import_jptool_is_told_of_its_environment),
        cmocka_unit_test(a_sandboxed_stdio_tool_has_rfd_075s_shape),
        cmocka_unit_test(a_stdio_sandbox_may_keep_the_workspace_read_only),
        cmocka_unit_test(os_sandbox_write_opens_a_directory_to_a_stdio_tool),
        cmocka_unit_test(a_sandboxed_pty_tool_cannot_push_input_into_its_terminal),
        cmocka_unit_test(stdio_tools_stop_inheriting_what_looks_like_a_secret),
        cmocka_unit_test(tool_sandbox_reports_each_kind_of_tool),
        cmocka_unit_test(sandbox_settings_that_cannot_hold_are_refused),
        cmocka_unit_test(builtin_tools_refuse_os_sandbox),
        cmocka_unit_test(registry_options_refuse_an_unknown_sandbox_mode),
        cmocka_unit_test(a_root_hosts_vfs_tool_has_no_capabilities),
        cmocka_unit_test(a_root_hosts_stdio_tool_has_no_capabilities_nor_etc_secrets),
        cmocka_unit_test(a_vfs_tool_changes_no_files_mode_owner_times_or_xattrs),
        cmocka_unit_test(a_stdio_tool_changes_metadata_only_where_it_may_write),
        cmocka_unit_test(a_tool_sets_limits_and_scheduling_of_its_own_process_only),
        cmocka_unit_test(no_tool_sends_a_datagram_to_a_host_socket),
        cmocka_unit_test(a_vfs_tool_cannot_watch_name_or_locate_host_paths),
        cmocka_unit_test(a_non_root_hosts_stdio_tool_changes_no_metadata_outside),
        cmocka_unit_test(a_stdio_tool_reopens_no_shut_repository),
        cmocka_unit_test(a_writable_path_named_through_a_symlink_stays_writable),
        cmocka_unit_test(a_tool_cannot_make_the_host_own_its_signals),
        cmocka_unit_test(no_tool_binds_a_name_others_connect_to),
        cmocka_unit_test(a_read_path_above_the_workspace_is_refused),
        cmocka_unit_test(a_read_only_workspace_in_tmp_stays_read_only),
        cmocka_unit_test(no_sandboxed_tool_makes_a_setuid_file),
        cmocka_unit_test(a_program_below_tmp_runs_after_its_sandbox_was_queried),
        cmocka_unit_test(a_stdio_tool_reads_no_private_file_of_the_hosts_tmp),
        cmocka_unit_test(a_stdio_tool_cannot_plant_git_configuration),
        cmocka_unit_test(a_stdio_tool_plants_no_repository),
        cmocka_unit_test(git_writable_lets_a_stdio_tool_write_its_repositories),
        cmocka_unit_test(a_stdio_tool_watches_no_path_it_cannot_read),
        cmocka_unit_test(a_sandboxed_tools_daemon_ends_with_it),
        cmocka_unit_test(a_sandboxed_tools_processes_are_bounded),
        cmocka_unit_test(below_landlock_abi_6_a_tool_still_cannot_signal_its_host),
        cmocka_unit_test(a_non_root_hosts_tool_makes_no_setuid_file_either),
        cmocka_unit_test(a_repository_the_host_cannot_list_is_not_passed_over),
    };
    return tu_hygiene_end((tu_hygiene_begin(), cmocka_run_group_tests(tests, setup, teardown)));
}
