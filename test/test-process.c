/* The process room on its own: the head+tail capture and its limited text,
 * and a child driven through a bare loop (input to a child that closed its
 * stdin, freeing a child from its own output callback, PATH lookup). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-util.h"

#include "loop/loop.h"
#include "process/process.h"

/* ---- Capture ----------------------------------------------------------------- */

static char *limited(const jpt__capture *c, size_t limit)
{
    jpt__buf out = JPT__BUF_INIT;

    assert_int_equal(jpt__capture_text_limited(c, limit, &out), JPT_OK);
    assert_non_null(out.data);
    return jpt__buf_take(&out);
}

static void fill(jpt__capture *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = (char)('a' + i % 26);
        assert_int_equal(jpt__capture_append(c, &ch, 1), JPT_OK);
    }
}

/* Everything is kept, but most of it in the head: the text shown still
 * ends with the last bytes of the output. */
static void test_limited_text_keeps_the_end(void **state)
{
    jpt__capture c;

    (void)state;
    jpt__capture_init(&c, 64); /* head 32, ring 32 */
    fill(&c, 34);              /* head 32, ring 2: nothing omitted */
    assert_int_equal(jpt__capture_omitted(&c), 0);
    char *text = limited(&c, 20);
    assert_string_equal(text, "abcdefghij\n[… 14 bytes omitted …]\nyzabcdefgh");
    jpt_free(text);
    jpt__capture_free(&c);
}

static void test_limited_text_counts_every_hidden_byte(void **state)
{
    jpt__capture c;

    (void)state;
    jpt__capture_init(&c, 64);
    fill(&c, 100); /* 36 bytes dropped from the middle */
    assert_int_equal(jpt__capture_omitted(&c), 36);
    char *text = limited(&c, 20);
    /* 10 bytes of head, 10 of tail: 80 hidden, whether dropped or cut. */
    assert_string_equal(text, "abcdefghij\n[… 80 bytes omitted …]\nmnopqrstuv");
    jpt_free(text);
    jpt__capture_free(&c);
}

static void test_limited_text_short_output_is_whole(void **state)
{
    jpt__capture c;

    (void)state;
    jpt__capture_init(&c, 64);
    fill(&c, 40);
    char *text = limited(&c, 40);
    assert_int_equal(strlen(text), 40);
    assert_null(strstr(text, "omitted"));
    jpt_free(text);
    jpt__capture_free(&c);
}

/* Cuts fall on line boundaries: the head ends with a whole line (its
 * newline is the marker's), the tail starts with one. */
static void test_limited_text_cuts_at_lines(void **state)
{
    static const char text[] = "one\ntwo\nthree\nfour\nfive\n";
    jpt__buf out = JPT__BUF_INIT;

    (void)state;
    assert_int_equal(jpt__limit_text(text, strlen(text), 12, NULL, &out), JPT_OK);
    assert_string_equal(out.data, "one\n[… 16 bytes omitted …]\nfive\n");
    jpt__buf_free(&out);
}

/* One line longer than the look-back is still cut inside. */
static void test_limited_text_cuts_a_huge_line_inside(void **state)
{
    jpt__buf text = JPT__BUF_INIT, out = JPT__BUF_INIT;

    (void)state;
    assert_int_equal(jpt__buf_puts(&text, "start\n"), JPT_OK);
    for (int i = 0; i < 20000; i++)
        assert_int_equal(jpt__buf_putc(&text, (char)('a' + i % 26)), JPT_OK);
    assert_int_equal(jpt__buf_puts(&text, "\nend\n"), JPT_OK);
    assert_int_equal(jpt__limit_text(text.data, text.len, 16000, NULL, &out), JPT_OK);
    /* 8000 bytes of head: "start\n" and 7994 letters. */
    assert_memory_equal(out.data, "start\nabc", 9);
    static const char marker[] = "\n[… 4011 bytes omitted …]\n";
    assert_memory_equal(out.data + 8000, marker, strlen(marker));
    assert_int_equal(out.len, 16000 + strlen(marker));
    jpt__buf_free(&text);
    jpt__buf_free(&out);
}

/* `seq 1 100000`: what stands around the marker are whole numbers, the
 * head counting up from 1 and the tail up to 100000, and the count is
 * every byte between them. */
static void assert_whole_numbers(const char *text, uint64_t total)
{
    const char *marker = strstr(text, "\n[… ");
    unsigned long omitted, expect = 1;
    const char *p = text;

    assert_non_null(marker);
    for (; p < marker; expect++) {
        char *end;
        assert_int_equal(strtoul(p, &end, 10), expect);
        assert_true(*end == '\n' || end == marker);
        p = end == marker ? marker : end + 1;
    }
    assert_int_equal(sscanf(marker, "\n[… %lu bytes omitted …]\n", &omitted), 1);
    p = strchr(marker + 1, '\n') + 1;
    const char *tail = p;
    unsigned long first = strtoul(p, NULL, 10), n = first;
    assert_true(first > expect);
    while (*p != '\0') {
        char *end;
        assert_int_equal(strtoul(p, &end, 10), n++);
        assert_int_equal(*end, '\n');
        p = end + 1;
    }
    assert_int_equal(n - 1, 100000);
    assert_int_equal(omitted, total - (uint64_t)(marker - text) - strlen(tail));
}

static void seq(jpt__buf *out)
{
    for (int i = 1; i <= 100000; i++)
        assert_int_equal(jpt__buf_printf(out, "%d\n", i), JPT_OK);
}

static void test_limited_text_of_seq_shows_whole_numbers(void **state)
{
    jpt__buf text = JPT__BUF_INIT, out = JPT__BUF_INIT;

    (void)state;
    seq(&text);
    assert_int_equal(jpt__limit_text(text.data, text.len, 30000, NULL, &out), JPT_OK);
    assert_whole_numbers(out.data, text.len);
    jpt__buf_free(&text);
    jpt__buf_free(&out);
}

/* The same when the capture itself dropped the middle: its text, and its
 * text cut again to a smaller limit. */
static void test_capture_of_seq_shows_whole_numbers(void **state)
{
    jpt__buf text = JPT__BUF_INIT;
    jpt__capture c;

    (void)state;
    seq(&text);
    jpt__capture_init(&c, 65536);
    for (size_t at = 0; at < text.len; at += 1000)
        assert_int_equal(jpt__capture_append(&c, text.data + at,
                                             text.len - at < 1000 ? text.len - at : 1000),
                         JPT_OK);
    assert_true(jpt__capture_omitted(&c) > 0);
    jpt__buf whole = JPT__BUF_INIT;
    assert_int_equal(jpt__capture_text(&c, &whole), JPT_OK);
    assert_whole_numbers(whole.data, text.len);
    char *cut = limited(&c, 30000);
    assert_whole_numbers(cut, text.len);
    jpt_free(cut);
    jpt__buf_free(&whole);
    jpt__buf_free(&text);
    jpt__capture_free(&c);
}

/* ---- A child in a bare loop ------------------------------------------------------ */

typedef struct run {
    jpt__loop *loop;
    jpt__child *child;
    jpt__buf out;
    bool exited;
    jpt__exit status;
    int outputs;
    bool free_on_output; /* the output callback frees the child */
} run;

static void on_output(jpt__child *c, int stream, const char *p, size_t n, void *ud)
{
    run *r = ud;

    (void)stream;
    r->outputs++;
    assert_int_equal(jpt__buf_append(&r->out, p, n), JPT_OK);
    if (r->free_on_output) {
        assert_ptr_equal(c, r->child);
        jpt__child_free(c);
        r->child = NULL;
    }
}

static void on_exited(jpt__child *c, const jpt__exit *e, void *ud)
{
    run *r = ud;

    r->exited = true;
    r->status = *e;
    jpt__child_free(c);
    r->child = NULL;
}

static const jpt__child_ops ops = {.output = on_output, .exited = on_exited};

static void run_start(run *r, const char *const *argv, bool stdin_pipe)
{
    jpt__errbuf err;
    jpt__spawn s = {.argv = argv, .stdin_pipe = stdin_pipe, .devnull = -1, .drain_ms = 1000};

    memset(r, 0, sizeof(*r));
    assert_int_equal(jpt__loop_new(&r->loop), JPT_OK);
    int rc = jpt__child_spawn(r->loop, &s, &ops, r, &r->child, &err);
    if (rc != JPT_OK)
        fail_msg("spawn: %s", err.text);
}

/* Dispatches until `done` holds or ten seconds pass. */
static void run_until(run *r, bool (*done)(const run *r))
{
    uint64_t deadline = jpt__loop_deadline_ms(10000);

    while (!done(r)) {
        assert_true(jpt__loop_now() < deadline);
        assert_int_equal(jpt__loop_poll(r->loop, 100), JPT_OK);
        assert_true(jpt__loop_dispatch(r->loop) >= 0);
    }
}

static bool has_exited(const run *r)
{
    return r->exited;
}

static bool said_closed(const run *r)
{
    return r->out.len >= 7 && memcmp(r->out.data, "closed\n", 7) == 0;
}

static void run_end(run *r)
{
    jpt__child_free(r->child);
    jpt__loop_free(r->loop);
    jpt__buf_free(&r->out);
}

/* The default action of SIGPIPE ends the process: a write to a child that
 * closed its stdin must neither raise it nor leave it pending. */
static void test_input_to_closed_stdin_raises_no_sigpipe(void **state)
{
    static const char *const argv[] = {"/bin/sh", "-c", "exec <&-; echo closed; sleep 1", NULL};
    char block[65536];
    run r;
    sigset_t pending;

    (void)state;
    memset(block, 'x', sizeof(block));
    run_start(&r, argv, true);
    run_until(&r, said_closed);
    /* Refused by the pipe: the input is dropped, counted as lost, and the
     * writer told that nothing arrived. */
    assert_int_equal(jpt__child_write(r.child, block, sizeof(block)), JPT_ERR_STATE);
    assert_int_equal(jpt__child_pending_input(r.child), 0);
    assert_int_equal(jpt__child_input_lost(r.child), sizeof(block));
    assert_int_equal(jpt__child_write(r.child, "y", 1), JPT_ERR_STATE);
    sigpending(&pending);
    assert_false(sigismember(&pending, SIGPIPE));
    run_until(&r, has_exited);
    assert_int_equal(r.status.code, 0);
    run_end(&r);
}

/* A SIGPIPE the host had pending before is its own and stays pending. */
static void test_pending_sigpipe_of_the_host_is_kept(void **state)
{
    static const char *const argv[] = {"/bin/sh", "-c", "exec <&-; echo closed; sleep 1", NULL};
    sigset_t pipe_set, old, pending;
    run r;

    (void)state;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_set, &old);
    raise(SIGPIPE);
    run_start(&r, argv, true);
    run_until(&r, said_closed);
    assert_int_equal(jpt__child_write(r.child, "data\n", 5), JPT_ERR_STATE);
    sigpending(&pending);
    assert_true(sigismember(&pending, SIGPIPE));
    /* Take it back, so it does not end the suite when unblocked. */
    const struct timespec zero = {0, 0};
    assert_int_equal(sigtimedwait(&pipe_set, NULL, &zero), SIGPIPE);
    sigprocmask(SIG_SETMASK, &old, NULL);
    run_until(&r, has_exited);
    run_end(&r);
}

/* In a hold (jpt_vfs_host_run's), SIGPIPE is blocked once for many
 * writes: one that a closed stdin raises is taken back all the same, and
 * the release unblocks SIGPIPE alone, leaving what the host blocked
 * meanwhile (from a callback) as it is (issue 17 §4). */
static void test_hold_raises_no_sigpipe_and_restores_the_mask(void **state)
{
    static const char *const argv[] = {"/bin/sh", "-c", "exec <&-; echo closed; sleep 1", NULL};
    sigset_t mask, usr1, pending;
    jpt__sigpipe_hold hold;
    run r;

    (void)state;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    run_start(&r, argv, true);
    run_until(&r, said_closed);
    jpt__process_sigpipe_hold(&hold);
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    assert_true(sigismember(&mask, SIGPIPE));
    assert_int_equal(jpt__child_write(r.child, "data\n", 5), JPT_ERR_STATE);
    sigpending(&pending);
    assert_false(sigismember(&pending, SIGPIPE));
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    jpt__process_sigpipe_release(&hold);
    pthread_sigmask(SIG_UNBLOCK, &usr1, &mask);
    assert_false(sigismember(&mask, SIGPIPE));
    assert_true(sigismember(&mask, SIGUSR1));
    run_until(&r, has_exited);
    run_end(&r);
}

/* A hold where the host blocks SIGPIPE itself: its pending SIGPIPE stays
 * pending, and so does the block after the release. */
static void test_hold_keeps_the_hosts_block_and_pending_sigpipe(void **state)
{
    static const char *const argv[] = {"/bin/sh", "-c", "exec <&-; echo closed; sleep 1", NULL};
    sigset_t pipe_set, old, mask, pending;
    jpt__sigpipe_hold hold, inner;
    run r;

    (void)state;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_set, &old);
    raise(SIGPIPE);
    run_start(&r, argv, true);
    run_until(&r, said_closed);
    jpt__process_sigpipe_hold(&hold);
    jpt__process_sigpipe_hold(&inner);
    assert_int_equal(jpt__child_write(r.child, "data\n", 5), JPT_ERR_STATE);
    jpt__process_sigpipe_release(&inner);
    jpt__process_sigpipe_release(&hold);
    sigpending(&pending);
    assert_true(sigismember(&pending, SIGPIPE));
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    assert_true(sigismember(&mask, SIGPIPE));
    const struct timespec zero = {0, 0};
    assert_int_equal(sigtimedwait(&pipe_set, NULL, &zero), SIGPIPE);
    sigprocmask(SIG_SETMASK, &old, NULL);
    run_until(&r, has_exited);
    run_end(&r);
}

static bool freed(const run *r)
{
    return r->child == NULL;
}

/* Freeing the child from its output callback, with more output already
 * waiting to be read: the reader stops at once and nothing else is
 * reported (ASan and valgrind watch for the use after free). */
static void test_free_from_output_callback(void **state)
{
    static const char *const argv[] = {"/bin/sh", "-c", "head -c 1000000 /dev/zero; sleep 5",
                                       NULL};
    run r;

    (void)state;
    run_start(&r, argv, false);
    r.free_on_output = true;
    run_until(&r, freed);
    assert_int_equal(r.outputs, 1);
    assert_false(r.exited);
    /* Whatever the loop still had queued for the child is gone with it. */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(jpt__loop_poll(r.loop, 10), JPT_OK);
        assert_true(jpt__loop_dispatch(r.loop) >= 0);
    }
    assert_int_equal(r.outputs, 1);
    run_end(&r);
}

/* A child's end costs one wake-up when all of it is there: the end of
 * stdout, of stderr and the pidfd are taken together, by whichever event
 * comes first. */
static void test_exit_is_taken_in_one_event(void **state)
{
    static const char *const argv[] = {"/bin/sh", "-c", "echo out; echo err >&2", NULL};
    siginfo_t info;
    run r;

    (void)state;
    run_start(&r, argv, false);
    /* Exited, not reaped: both pipes at their end and the pidfd readable. */
    memset(&info, 0, sizeof(info));
    assert_int_equal(waitid(P_PID, (id_t)jpt__child_pid(r.child), &info, WEXITED | WNOWAIT), 0);
    uint64_t before = jpt__loop_events(r.loop);
    run_until(&r, has_exited);
    assert_int_equal(jpt__loop_events(r.loop) - before, 1);
    assert_int_equal(r.status.code, 0);
    assert_int_equal(r.out.len, 8);
    run_end(&r);
}

/* The host's cgroup directory from the texts of /proc/self/cgroup and
 * /proc/self/mountinfo; NULL when there is none (the status in *rc). */
static char *cgroup_path(const char *cgroup, const char *mountinfo, int *rc)
{
    char *c = strdup(cgroup), *m = strdup(mountinfo);
    jpt__buf dir = JPT__BUF_INIT;
    jpt__errbuf err;

    *rc = jpt__cgroup_path(c, m, &dir, &err);
    free(c);
    free(m);
    if (*rc != JPT_OK) {
        jpt__buf_free(&dir);
        return NULL;
    }
    return jpt__buf_take(&dir);
}

#define V1_LINES "12:pids:/\n4:memory:/x\n"
#define MOUNT(root, point, fs)                                                             \
    "40 31 0:37 " root " " point " rw,relatime shared:9 - " fs " " fs " rw\n"

/* A hybrid system mounts cgroup2 at /sys/fs/cgroup/unified, a pure v2
 * one at /sys/fs/cgroup; in a container the mount may show a subtree only
 * (its root field), and mountinfo escapes a space as \040. */
static void test_cgroup_path_follows_the_cgroup2_mount(void **state)
{
    const char *hybrid = MOUNT("/", "/sys/fs/cgroup/memory", "cgroup")
        MOUNT("/", "/sys/fs/cgroup/unified", "cgroup2");
    const char *pure = MOUNT("/", "/proc", "proc") MOUNT("/", "/sys/fs/cgroup", "cgroup2");
    const char *container = MOUNT("/docker/abc", "/sys/fs/cgroup", "cgroup2");
    const char *spaced = MOUNT("/", "/mnt/cgroup\\040two", "cgroup2");
    int rc;
    char *dir;

    (void)state;
    dir = cgroup_path(V1_LINES "0::/\n", hybrid, &rc);
    assert_string_equal(dir, "/sys/fs/cgroup/unified/");
    jpt_free(dir);
    dir = cgroup_path("0::/user.slice/session-1.scope\n", pure, &rc);
    assert_string_equal(dir, "/sys/fs/cgroup/user.slice/session-1.scope");
    jpt_free(dir);
    dir = cgroup_path("0::/docker/abc/job\n", container, &rc);
    assert_string_equal(dir, "/sys/fs/cgroup/job");
    jpt_free(dir);
    dir = cgroup_path("0::/app", spaced, &rc);
    assert_string_equal(dir, "/mnt/cgroup two/app");
    jpt_free(dir);
    /* A mount that shows another subtree does not show this cgroup. */
    assert_null(cgroup_path("0::/docker/abcdef\n", container, &rc));
    assert_int_equal(rc, JPT_ERR_UNSUPPORTED);
    /* cgroup v1 only: no "0::" line, or no cgroup2 mount. */
    assert_null(cgroup_path(V1_LINES, hybrid, &rc));
    assert_int_equal(rc, JPT_ERR_UNSUPPORTED);
    assert_null(cgroup_path("0::/\n", MOUNT("/", "/sys/fs/cgroup/memory", "cgroup"), &rc));
    assert_int_equal(rc, JPT_ERR_UNSUPPORTED);
}

/* Before Linux 5.14 a cgroup has no cgroup.kill: its members are sent
 * SIGKILL one by one, until a read of cgroup.procs shows none that was not
 * signalled; processes forked in the background go too. */
static void test_cgroup_members_are_killed_one_by_one(void **state)
{
    jpt__errbuf err;
    char name[64], line[16];
    int ready[2], status;
    int host = jpt__cgroup_open_host(NULL, &err);

    (void)state;
    snprintf(name, sizeof(name), "jpt-test-%d", (int)getpid());
    if (host < 0 || mkdirat(host, name, 0755) < 0) {
        if (host >= 0)
            close(host);
        skip();
    }
    int dir = openat(host, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int procs = openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    int events = openat(dir, "cgroup.events", O_RDONLY | O_CLOEXEC);
    assert_true(dir >= 0 && procs >= 0 && events >= 0);
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (write(procs, "0", 1) == 1 && dup2(ready[1], 1) == 1)
            execl("/bin/sh", "sh", "-c", "sleep 300 & sleep 300 & echo ready; exec sleep 300",
                  (char *)NULL);
        _exit(127);
    }
    close(ready[1]);
    assert_int_equal(read(ready[0], line, 6), 6);
    assert_memory_equal(line, "ready\n", 6);
    assert_int_equal(jpt__cgroup_populated(events), 1);

    assert_int_equal(jpt__cgroup_kill_each(dir), JPT_OK);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* The background sleeps go too: the cgroup empties (reading
     * cgroup.events arms it; poll reports the next change). */
    while (jpt__cgroup_populated(events) == 1) {
        struct pollfd p = {.fd = events, .events = POLLPRI};
        assert_int_equal(poll(&p, 1, 10000), 1);
    }
    assert_int_equal(unlinkat(host, name, AT_REMOVEDIR), 0);
    close(ready[0]);
    close(events);
    close(procs);
    close(dir);
    close(host);
}

/* An empty element of PATH is the current directory, as for execvp. */
static void test_empty_path_element_is_the_current_directory(void **state)
{
    static const char *const argv[] = {"jpt-test-here", NULL};
    char dir[] = "/tmp/jpt-test-path-XXXXXX";
    char cwd[4096], script[64];
    const char *old = getenv("PATH");
    char *saved = old != NULL ? strdup(old) : NULL;
    run r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    snprintf(script, sizeof(script), "%s/jpt-test-here", dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\necho here\n", f);
    fclose(f);
    assert_int_equal(chmod(script, 0755), 0);
    assert_int_equal(chdir(dir), 0);
    setenv("PATH", "/nonexistent::/bin", 1);

    run_start(&r, argv, false);
    run_until(&r, has_exited);
    assert_int_equal(r.status.code, 0);
    assert_int_equal(r.out.len, 5);
    assert_memory_equal(r.out.data, "here\n", 5);
    run_end(&r);

    if (saved != NULL)
        setenv("PATH", saved, 1);
    free(saved);
    assert_int_equal(chdir(cwd), 0);
    unlink(script);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limited_text_keeps_the_end),
        cmocka_unit_test(test_limited_text_counts_every_hidden_byte),
        cmocka_unit_test(test_limited_text_short_output_is_whole),
        cmocka_unit_test(test_limited_text_cuts_at_lines),
        cmocka_unit_test(test_limited_text_cuts_a_huge_line_inside),
        cmocka_unit_test(test_limited_text_of_seq_shows_whole_numbers),
        cmocka_unit_test(test_capture_of_seq_shows_whole_numbers),
        cmocka_unit_test(test_input_to_closed_stdin_raises_no_sigpipe),
        cmocka_unit_test(test_pending_sigpipe_of_the_host_is_kept),
        cmocka_unit_test(test_hold_raises_no_sigpipe_and_restores_the_mask),
        cmocka_unit_test(test_hold_keeps_the_hosts_block_and_pending_sigpipe),
        cmocka_unit_test(test_free_from_output_callback),
        cmocka_unit_test(test_exit_is_taken_in_one_event),
        cmocka_unit_test(test_cgroup_path_follows_the_cgroup2_mount),
        cmocka_unit_test(test_cgroup_members_are_killed_one_by_one),
        cmocka_unit_test(test_empty_path_element_is_the_current_directory),
    };

    return TU_RUN(tests);
}
