/* Containment (registry.h, JPT_CONTAIN_*): a tool whose grandchild gets
 * away as a daemon does (a double fork and setsid(), test/tools/escape.c)
 * leaves nothing behind when its handle ends: the one-shot call ends, the
 * stateful handle is aborted, or the registry is freed. In the mode CI runs
 * (JPT_CONTAIN_AUTO, which is a cgroup there; and JPT_CONTAIN_CGROUP where
 * cgroups are available) and in JPT_CONTAIN_SUBREAPER. Every cgroup made is
 * removed, and every orphan reaped (the suite's hygiene check sees any
 * child left).
 *
 * The subreaper tests come last: they make this process a child subreaper
 * for good. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry-util.h"

#include "process/process.h"

static const char tools[] =
    "{\"tools\":["
    "{\"name\":\"escape\",\"command\":[\"" TOOL("escape") "\",\"{{arguments.dir}}\"],"
    " \"parameters\":{\"type\":\"object\",\"properties\":{\"dir\":{\"type\":\"string\"}},"
    " \"required\":[\"dir\"]}},"
    "{\"name\":\"quiet\",\"command\":[\"/bin/true\"]},"
    "{\"name\":\"escape_stay\",\"stateful\":true,"
    " \"command\":[\"" TOOL("escape") "\",\"{{arguments.dir}}\",\"stay\"],"
    " \"parameters\":{\"type\":\"object\",\"properties\":{\"dir\":{\"type\":\"string\"}},"
    " \"required\":[\"dir\"]}}"
    "]}";

/* The tool's directory: the grandchild writes its pid to `pidfile` and
 * holds the FIFO `alive` open for writing while it lives; `alive_fd` is
 * its reading end, which sees the end of file once the grandchild is gone
 * (no pidfd: valgrind 3.19 does not know pidfd_open). */
static char scratch[64], pidfile[128], alive[128];
static int alive_fd = -1;

static int setup(void **state)
{
    (void)state;
    snprintf(scratch, sizeof(scratch), "/tmp/jpt-contain-XXXXXX");
    assert_non_null(mkdtemp(scratch));
    snprintf(pidfile, sizeof(pidfile), "%s/pid", scratch);
    snprintf(alive, sizeof(alive), "%s/alive", scratch);
    assert_int_equal(mkfifo(alive, 0600), 0);
    alive_fd = open(alive, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    assert_true(alive_fd >= 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(alive_fd);
    unlink(alive);
    unlink(pidfile);
    rmdir(scratch);
    return 0;
}

static jpt_registry *registry(int containment)
{
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 300, .drain_ms = 100,
                              .containment = containment};

    return ru_registry_with(&o, tools);
}

static pid_t grandchild(void)
{
    char text[32];

    assert_true(ru_read_text(pidfile, text, sizeof(text)) > 0);
    return (pid_t)atoi(text);
}

/* The grandchild is gone, or goes within WAIT_MS (it was sent SIGKILL, which
 * takes effect at once, but not synchronously): its end of the FIFO closes.
 * One still alive is killed here, so that a failing test leaves no sleeper
 * behind. */
static void assert_dies(pid_t pid)
{
    struct pollfd p = {.fd = alive_fd, .events = POLLIN};
    char byte;

    if (poll(&p, 1, WAIT_MS) == 1 && read(alive_fd, &byte, 1) == 0)
        return;
    kill(pid, SIGKILL);
    fail_msg("the escaped grandchild %d outlived its tool's handle", (int)pid);
}

/* Its cgroup (the "0::" line of /proc/<pid>/cgroup), as a registry of this
 * process names them, when it is in one. */
static bool in_registry_cgroup(pid_t pid)
{
    char path[64], text[4096], prefix[64];

    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    snprintf(prefix, sizeof(prefix), "/jptool-%d-", (int)getpid());
    return ru_read_text(path, text, sizeof(text)) > 0 && strstr(text, prefix) != NULL;
}

/* No cgroup of this process is left under the host's cgroup. */
static void assert_no_cgroup_left(void)
{
    jpt__errbuf err;
    char prefix[64];
    int dir = jpt__cgroup_open_host(NULL, &err);

    if (dir < 0)
        return; /* no cgroups here: nothing could be left */
    snprintf(prefix, sizeof(prefix), "jptool-%d-", (int)getpid());
    DIR *d = fdopendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            fail_msg("the cgroup %s is left behind", e->d_name);
    closedir(d);
}

static const char *dir_args(void)
{
    static char args[256];

    snprintf(args, sizeof(args), "{\"dir\":\"%s\"}", scratch);
    return args;
}

/* Spawns the tool that stays, and waits until it printed "ready": its
 * grandchild has written its pid by then. */
static void spawn_escape(jpt_registry *r)
{
    char args[512];

    snprintf(args, sizeof(args), "{\"action\":\"spawn\",\"id\":\"e\",\"dir\":\"%s\"}",
             scratch);
    json_t *resp = act(r, "escape_stay", args, NULL);
    bool ready = strstr(field(resp, "content"), "ready") != NULL;
    json_decref(resp);
    if (!ready)
        assert_true(ru_until_event(r, JPT_EVENT_OUTPUT, "e", 0));
}

/* ---- The three ends, in any mode ------------------------------------------------ */

static void one_shot_end_kills(int containment, bool cgroup)
{
    jpt_registry *r = registry(containment);
    bool err = true;
    char *out = ru_call(r, "escape", dir_args(), &err);

    assert_string_equal(out, "ready\n");
    assert_false(err);
    free(out);
    assert_dies(grandchild());
    jpt_registry_free(r);
    if (cgroup)
        assert_no_cgroup_left();
}

static void abort_kills(int containment, bool cgroup)
{
    jpt_registry *r = registry(containment);

    spawn_escape(r);
    pid_t pid = grandchild();
    bool inside = in_registry_cgroup(pid);
    json_t *resp = act(r, "escape_stay", "{\"action\":\"abort\",\"id\":\"e\"}", NULL);
    assert_string_equal(field(resp, "state"), "stopped");
    json_decref(resp);
    assert_dies(pid);
    assert_int_equal(inside, cgroup);
    jpt_registry_free(r);
    if (cgroup)
        assert_no_cgroup_left();
}

static void registry_free_kills(int containment, bool cgroup)
{
    jpt_registry *r = registry(containment);

    spawn_escape(r);
    pid_t pid = grandchild();
    jpt_registry_free(r);
    assert_dies(pid);
    if (cgroup)
        assert_no_cgroup_left();
}

/* ---- AUTO: a cgroup where the host's cgroup allows one (CI's case) -------------- */

static bool available(int containment)
{
    jpt_registry_options o = {sizeof(o), .containment = containment};
    jpt_registry *r = NULL;
    int rc = jpt_registry_new(&o, &r);

    jpt_registry_free(r);
    assert_true(rc == JPT_OK || rc == JPT_ERR_UNSUPPORTED);
    return rc == JPT_OK;
}

static bool cgroups_available(void)
{
    return available(JPT_CONTAIN_CGROUP);
}

static void auto_one_shot_end_kills_the_escaped_grandchild(void **state)
{
    (void)state;
    if (!cgroups_available())
        skip();
    one_shot_end_kills(JPT_CONTAIN_AUTO, true);
}

static void auto_abort_kills_the_escaped_grandchild(void **state)
{
    (void)state;
    if (!cgroups_available())
        skip();
    abort_kills(JPT_CONTAIN_AUTO, true);
}

static void auto_registry_free_kills_the_escaped_grandchild(void **state)
{
    (void)state;
    if (!cgroups_available())
        skip();
    registry_free_kills(JPT_CONTAIN_AUTO, true);
}

static void cgroup_one_shot_end_kills_the_escaped_grandchild(void **state)
{
    (void)state;
    if (!cgroups_available())
        skip();
    one_shot_end_kills(JPT_CONTAIN_CGROUP, true);
}

static void cgroup_abort_kills_the_escaped_grandchild(void **state)
{
    (void)state;
    if (!cgroups_available())
        skip();
    abort_kills(JPT_CONTAIN_CGROUP, true);
}

static void cgroup_registry_free_kills_the_escaped_grandchild(void **state)
{
    (void)state;
    if (!cgroups_available())
        skip();
    registry_free_kills(JPT_CONTAIN_CGROUP, true);
}

/* An empty cgroup is kept for the next handle: one that served a tool
 * before contains the next as well as a new one. */
static void reused_cgroup_kills_the_escaped_grandchild(void **state)
{
    bool err = true;

    (void)state;
    if (!cgroups_available())
        skip();
    jpt_registry *r = registry(JPT_CONTAIN_CGROUP);
    for (int i = 0; i < 2; i++) {
        char *out = ru_call(r, "quiet", "{}", &err);
        assert_string_equal(out, "");
        assert_false(err);
        free(out);
    }
    char *out = ru_call(r, "escape", dir_args(), &err);
    assert_string_equal(out, "ready\n");
    free(out);
    assert_dies(grandchild());
    jpt_registry_free(r);
    assert_no_cgroup_left();
}

/* ---- What a crashed host leaves (jpt_registry_reap_stale) ------------------------ */

/* The cgroups of the host `pid` under this process's cgroup (a forked
 * host's are made there too). */
static size_t cgroups_of(pid_t pid)
{
    jpt__errbuf err;
    char prefix[64];
    size_t n = 0;
    int dir = jpt__cgroup_open_host(NULL, &err);

    assert_true(dir >= 0);
    snprintf(prefix, sizeof(prefix), "jptool-%d-", (int)pid);
    DIR *d = fdopendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* A host that runs two one-shot calls at once (their cgroups kept, empty,
 * for later handles), then spawns the tool whose grandchild gets away
 * (into one of them), says so on `ready`, and waits to be killed. In a
 * forked process: nothing here may return into the test. */
static void run_doomed_host(const char *state_file, int ready)
{
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 300,
                              .containment = JPT_CONTAIN_CGROUP, .state_file = state_file};
    jpt_registry *r = NULL;
    jpt_batch *quiet = NULL, *spawn = NULL;
    char calls[1024];

    snprintf(calls, sizeof(calls),
             "[{\"id\":\"s\",\"name\":\"escape_stay\",\"arguments\":{\"action\":\"spawn\","
             "\"id\":\"e\",\"dir\":\"%s\",\"wait_secs\":60}}]",
             scratch);
    if (jpt_registry_new(&o, &r) != JPT_OK || jpt_registry_load_tools(r, tools, 0) != JPT_OK ||
        jpt_registry_submit(r,
                            "[{\"id\":\"q1\",\"name\":\"quiet\",\"arguments\":{}},"
                            "{\"id\":\"q2\",\"name\":\"quiet\",\"arguments\":{}}]",
                            &quiet) != JPT_OK ||
        jpt_registry_wait(r, quiet, WAIT_MS) != JPT_OK ||
        jpt_registry_submit(r, calls, &spawn) != JPT_OK ||
        jpt_registry_wait(r, spawn, WAIT_MS) != JPT_OK || access(pidfile, F_OK) < 0)
        _exit(1);
    if (write(ready, "x", 1) != 1)
        _exit(1);
    for (;;)
        pause();
}

/* issue 18: a host killed with live cgroups leaves them, and what got
 * away from its tools in them; jpt_registry_reap_stale kills it and
 * removes them all, the empty one kept for later handles too. Until then
 * the state file is not taken over. */
static void reap_stale_kills_and_removes_the_cgroups_of_a_crashed_host(void **state)
{
    char state_file[128], byte;
    int ready[2], status;
    size_t killed = 0;
    jpt_registry *r = NULL;

    (void)state;
    if (!cgroups_available())
        skip();
    snprintf(state_file, sizeof(state_file), "%s/state", scratch);
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    pid_t host = fork();
    assert_true(host >= 0);
    if (host == 0) {
        close(ready[0]);
        run_doomed_host(state_file, ready[1]);
    }
    close(ready[1]);
    bool up = read(ready[0], &byte, 1) == 1;
    close(ready[0]);
    kill(host, SIGKILL);
    assert_int_equal(waitpid(host, &status, 0), host);
    assert_true(up);
    /* The escaped grandchild's, and those kept empty that the spawn did
     * not take (how many, the kernel's timing of their last exit says). */
    assert_true(cgroups_of(host) >= 1);

    jpt_registry_options o = {sizeof(o), .state_file = state_file};
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_EXISTS);
    assert_null(r);
    assert_int_equal(jpt_registry_reap_stale(state_file, &killed), JPT_OK);
    assert_true(killed >= 1);
    assert_dies(grandchild());
    assert_int_equal(cgroups_of(host), 0);
    assert_int_equal(access(state_file, F_OK), -1);
}

/* A state file cannot choose what is killed: a record whose cgroups are
 * not named as jptool names them is not followed. */
static void reap_stale_follows_only_cgroups_jptool_names(void **state)
{
    char state_file[128], name[64];
    jpt__buf path = JPT__BUF_INIT;
    jpt__errbuf err;
    size_t killed = 1;

    (void)state;
    if (!cgroups_available())
        skip();
    int dir = jpt__cgroup_open_host(&path, &err);
    assert_true(dir >= 0);
    snprintf(name, sizeof(name), "not-jptool-%d", (int)getpid());
    assert_int_equal(mkdirat(dir, name, 0755), 0);
    snprintf(state_file, sizeof(state_file), "%s/state", scratch);
    FILE *f = fopen(state_file, "w");
    assert_non_null(f);
    fprintf(f, "cgroups not-jptool- %s\n", path.data);
    fclose(f);
    assert_int_equal(jpt_registry_reap_stale(state_file, &killed), JPT_OK);
    assert_int_equal(killed, 0);
    assert_int_equal(unlinkat(dir, name, AT_REMOVEDIR), 0);
    close(dir);
    jpt__buf_free(&path);
}

static void unknown_containment_is_invalid(void **state)
{
    jpt_registry_options o = {sizeof(o), .containment = JPT_CONTAIN_SESSION + 1};
    jpt_registry *r = NULL;

    (void)state;
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_null(r);
    o.containment = -1;
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
}

/* ---- SUBREAPER (this process stays a subreaper from here on) -------------------- */

/* Unavailable only without pidfd_open (under valgrind 3.19, say). */
static void subreaper_one_shot_end_kills_the_escaped_grandchild(void **state)
{
    (void)state;
    if (!available(JPT_CONTAIN_SUBREAPER))
        skip();
    one_shot_end_kills(JPT_CONTAIN_SUBREAPER, false);
}

static void subreaper_abort_kills_the_escaped_grandchild(void **state)
{
    (void)state;
    if (!available(JPT_CONTAIN_SUBREAPER))
        skip();
    abort_kills(JPT_CONTAIN_SUBREAPER, false);
}

static void subreaper_registry_free_kills_the_escaped_grandchild(void **state)
{
    (void)state;
    if (!available(JPT_CONTAIN_SUBREAPER))
        skip();
    registry_free_kills(JPT_CONTAIN_SUBREAPER, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(auto_one_shot_end_kills_the_escaped_grandchild, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(auto_abort_kills_the_escaped_grandchild, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(auto_registry_free_kills_the_escaped_grandchild, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(cgroup_one_shot_end_kills_the_escaped_grandchild, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(cgroup_abort_kills_the_escaped_grandchild, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(cgroup_registry_free_kills_the_escaped_grandchild,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            reap_stale_kills_and_removes_the_cgroups_of_a_crashed_host, setup, teardown),
        cmocka_unit_test_setup_teardown(reap_stale_follows_only_cgroups_jptool_names, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(reused_cgroup_kills_the_escaped_grandchild, setup,
                                        teardown),
        cmocka_unit_test(unknown_containment_is_invalid),
        cmocka_unit_test_setup_teardown(subreaper_one_shot_end_kills_the_escaped_grandchild,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(subreaper_abort_kills_the_escaped_grandchild, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(subreaper_registry_free_kills_the_escaped_grandchild,
                                        setup, teardown),
    };

    return TU_RUN(tests);
}
