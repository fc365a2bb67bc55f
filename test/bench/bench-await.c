/* bench-await: the await tool's costs (RFD 037), each beside a reference
 * measured in the same run (TESTING.md, "Benchmarks"):
 *
 *  - wake-up latency from a child's exit to the await's completion, p50 and
 *    p99, next to a bare pidfd + epoll wake of the same child (target: p50
 *    within 50 µs of the bare wake). Both start the same way: the child
 *    (`head -c1 FIFO`) exits when the benchmark writes a byte to its FIFO,
 *    and the clock runs from that write.
 *  - dispatch cost per handle stop with 10, 100 and 1 000 handles under one
 *    await (all, and any): it must stay flat as the count grows.
 *
 * usage: bench-await [--quick] */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jptool/jptool.h>

#include "bench-util.h"

extern char **environ;

static void fail(const char *what)
{
    fprintf(stderr, "bench-await: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Opens the FIFO for writing once `readers` children hold it open for
 * reading (each then blocks in read), so that the clock starts with every
 * child ready in both measurements. */
static int open_when_ready(const char *fifo)
{
    struct timespec pause = {0, 100000};

    for (;;) {
        int fd = open(fifo, O_WRONLY | O_NONBLOCK);
        if (fd >= 0)
            return fd;
        if (errno != ENXIO)
            fail("open fifo");
        nanosleep(&pause, NULL);
    }
}

/* Writes `bytes` bytes to the FIFO opened by open_when_ready: as many
 * children as bytes read one each and exit. The caller closes `fd` only
 * once they all have: a child that opens the FIFO late (only one reader is
 * needed for the open to succeed) still finds its byte, which would be
 * lost with the last open end. */
static void trigger(int fd, size_t bytes)
{
    char buf[4096];

    memset(buf, 'x', sizeof(buf));
    while (bytes > 0) {
        size_t n = bytes < sizeof(buf) ? bytes : sizeof(buf);
        ssize_t w = write(fd, buf, n);
        if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (w <= 0)
            fail("write fifo");
        bytes -= (size_t)w;
    }
}

/* ---- The reference: a bare pidfd in an epoll set ----------------------------- */

static double bare_wake(const char *fifo)
{
    char in[128];
    snprintf(in, sizeof(in), "if=%s", fifo);
    char *argv[] = {"dd", in, "of=/dev/null", "bs=1", "count=1", "status=none", NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (posix_spawnp(&pid, "dd", &fa, NULL, argv, environ) != 0)
        fail("posix_spawnp dd");
    posix_spawn_file_actions_destroy(&fa);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN}, out;
    if (pidfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, pidfd, &ev) < 0)
        fail("pidfd/epoll");
    int fd = open_when_ready(fifo);
    double start = bench_now() * 1e6;
    trigger(fd, 1);
    while (epoll_wait(ep, &out, 1, -1) != 1)
        ;
    double took = bench_now() * 1e6 - start;
    close(fd);
    waitpid(pid, &status, 0);
    close(pidfd);
    close(ep);
    return took;
}

/* ---- Through the registry ------------------------------------------------------ */

static jpt_registry *registry(const char *fifo)
{
    char tools[1024];
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 1000};
    jpt_registry *r = NULL;

    snprintf(tools, sizeof(tools),
             "{\"tools\":[{\"name\":\"waiter\",\"stateful\":true,\"settle_ms\":1,"
             "\"command\":[\"dd\",\"if=%s\",\"of=/dev/null\",\"bs=1\",\"count=1\","
             "\"status=none\"]}]}",
             fifo);
    if (jpt_registry_new(&o, &r) != JPT_OK || jpt_registry_load_tools(r, tools, 0) != JPT_OK)
        fail("registry");
    return r;
}

static jpt_batch *submit(jpt_registry *r, const char *calls)
{
    jpt_batch *b = NULL;

    if (jpt_registry_submit(r, calls, &b) != JPT_OK)
        fail("submit");
    return b;
}

static void drain_events(jpt_registry *r)
{
    jpt_event *e;

    while (jpt_registry_next_event(r, &e) == JPT_OK)
        jpt_event_free(e);
}

/* Spawns `n` handles h0..h{n-1}, each blocked reading the FIFO. */
static void spawn_handles(jpt_registry *r, int n)
{
    char *calls = bench_action_calls("waiter", "spawn", "s", n);
    jpt_batch *b = submit(r, calls);
    if (jpt_registry_wait(r, b, 600000) != JPT_OK)
        fail("spawn wait");
    jpt_batch_free(b);
    free(calls);
    drain_events(r);
}

static jpt_batch *start_await(jpt_registry *r, int n, const char *mode)
{
    size_t cap = (size_t)n * 12 + 128, len = 0;
    char *calls = malloc(cap);

    len += (size_t)snprintf(calls + len, cap - len,
                            "[{\"id\":\"a\",\"name\":\"await\",\"arguments\":{\"%s\":[", mode);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(calls + len, cap - len, "%s\"h%d\"", i ? "," : "", i);
    snprintf(calls + len, cap - len, "]}}]");
    jpt_batch *b = submit(r, calls);
    free(calls);
    /* One dispatch starts the await: it now watches its handles. */
    while (jpt_registry_get_timeout(r) == 0)
        jpt_registry_dispatch(r);
    return b;
}

static void poll_fd(jpt_registry *r)
{
    struct pollfd p = {.fd = jpt_registry_get_fd(r), .events = POLLIN};
    poll(&p, 1, jpt_registry_get_timeout(r));
}

static double registry_wake(jpt_registry *r, const char *fifo)
{
    spawn_handles(r, 1);
    jpt_batch *b = start_await(r, 1, "all");
    int fd = open_when_ready(fifo);
    double start = bench_now() * 1e6;
    trigger(fd, 1);
    while (!jpt_batch_done(b)) {
        poll_fd(r);
        jpt_registry_dispatch(r);
    }
    double took = bench_now() * 1e6 - start;
    close(fd);
    jpt_batch_free(b);
    drain_events(r);
    return took;
}

static void bench_latency(const char *fifo, int samples)
{
    double *bare = malloc(sizeof(double) * (size_t)samples);
    double *reg = malloc(sizeof(double) * (size_t)samples);
    jpt_registry *r = registry(fifo);

    bare_wake(fifo);
    registry_wake(r, fifo);
    for (int i = 0; i < samples; i++) {
        bare[i] = bare_wake(fifo);
        reg[i] = registry_wake(r, fifo);
    }
    jpt_registry_free(r);
    double b50 = bench_percentile(bare, samples, 0.5), b99 = bench_percentile(bare, samples, 0.99);
    double r50 = bench_percentile(reg, samples, 0.5), r99 = bench_percentile(reg, samples, 0.99);
    printf("await wake-up: p50 %.1f us, p99 %.1f us (bare pidfd+epoll p50 %.1f us, p99 "
           "%.1f us; p50 difference %.1f us, target <= 50 us)\n",
           r50, r99, b50, b99, r50 - b50);
    free(bare);
    free(reg);
}

/* Dispatch time spent per handle stop, from the trigger until every
 * handle has stopped, with one await over all of them. */
static double dispatch_per_stop(const char *fifo, int n, const char *mode)
{
    jpt_registry *r = registry(fifo);
    jpt_event *e;
    int stopped = 0;
    double in_dispatch = 0;

    spawn_handles(r, n);
    jpt_batch *b = start_await(r, n, mode);
    int fd = open_when_ready(fifo);
    trigger(fd, (size_t)n);
    while (stopped < n) {
        poll_fd(r);
        double t = bench_now() * 1e6;
        jpt_registry_dispatch(r);
        in_dispatch += bench_now() * 1e6 - t;
        while (jpt_registry_next_event(r, &e) == JPT_OK) {
            stopped += jpt_event_type(e) == JPT_EVENT_STATE &&
                       jpt_event_state(e) == JPT_STATE_STOPPED;
            jpt_event_free(e);
        }
    }
    close(fd);
    if (jpt_registry_wait(r, b, 60000) != JPT_OK)
        fail("await wait");
    jpt_batch_free(b);
    jpt_registry_free(r);
    return in_dispatch / n;
}

static void bench_scaling(const char *fifo, bool quick)
{
    static const int counts[] = {10, 100, 1000};
    int rounds = quick ? 1 : 3;

    for (size_t m = 0; m < 2; m++) {
        const char *mode = m == 0 ? "all" : "any";
        printf("dispatch per handle stop, await %s:", mode);
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
            if (quick && counts[i] > 100)
                continue;
            double best = 1e18;
            for (int k = 0; k < rounds; k++) {
                double v = dispatch_per_stop(fifo, counts[i], mode);
                best = v < best ? v : best;
            }
            printf(" %d handles %.1f us%s", counts[i], best,
                   i + 1 < sizeof(counts) / sizeof(counts[0]) && !(quick && counts[i + 1] > 100)
                       ? ","
                       : "");
        }
        printf(" (target: flat as the count grows)\n");
    }
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    char dir[] = "/tmp/jpt-bench-await-XXXXXX", fifo[64];
    struct rlimit rl;

    /* Four fds a handle. */
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (mkdtemp(dir) == NULL)
        fail("mkdtemp");
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    if (mkfifo(fifo, 0600) < 0)
        fail("mkfifo");
    bench_latency(fifo, quick ? 30 : 300);
    bench_scaling(fifo, quick);
    unlink(fifo);
    rmdir(dir);
    return 0;
}
