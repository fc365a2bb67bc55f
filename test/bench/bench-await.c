/* bench-await: the await tool's costs (RFD 037), each beside a reference
 * measured in the same run (TESTING.md, "Benchmarks"), each printed
 * against its target (issue 18):
 *
 *  - wake-up latency from a child's exit to the await's completion, p50 and
 *    p99, next to a minimal loop that does what jptool must (captures the
 *    child's stdout and stderr through pipes and reaps it through its pidfd,
 *    all in one epoll set): target p50 within 10 us of it, p99 within 1.5x.
 *    The same work on both sides: the reference's child is the registry's
 *    (a session of its own, its stdin a pipe) and, for cgroup containment,
 *    in a cgroup of its own as well, which the kernel takes time to leave
 *    as the child exits; neither side counts its clean-up (the reference
 *    closes its fds after its clock stops, jptool after the answer). Each
 *    start the same way: the child (`dd` of one byte from a FIFO) exits
 *    when the benchmark writes a byte to its FIFO, and the clock runs from
 *    that write. Beside the wall clock, the CPU time this thread used in
 *    the window: on a shared machine the wall clock also holds the time
 *    other work held the CPU, which CPU time does not. The containments'
 *    own cost (the child in a session, in a cgroup, against a plain one)
 *    and the dispatches per exit are printed too.
 *  - dispatch cost per handle stop with 10, 100 and 1 000 handles under one
 *    await (all, and any), the handles stopped one at a time: target within
 *    1.2x of 10 handles.
 *  - dispatch cost per handle stop with 100, 1 000 and 10 000 live handles
 *    (processes up to what the fd limit allows, builtin handles beyond),
 *    100 of which stop, under one await of them all: target within 1.2x of
 *    100 live handles.
 * The dispatch costs are the CPU time of the dispatches (the wall clock
 * beside it); the children's exits and their own scheduling are not theirs.
 *
 * Each figure is one line: `name: value unit (ratio X.XX vs ref ...)`.
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

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

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

/* ---- The reference: a minimal loop that captures and reaps --------------------- */

static void set_nonblocking(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Reads the pipe empty; false at its end. */
static bool drain(int fd)
{
    char buf[4096];

    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EINTR);
    }
}

/* A cgroup of its own for the reference's child, under this process's
 * (the cgroup2 mount of /proc/self/mounts joined with the "0::" line of
 * /proc/self/cgroup), where cgroups can be made: its directory in `dir`. */
static bool make_cgroup(char *dir, size_t n)
{
    char line[2048], mount[1024] = "", self[2048] = "";
    FILE *f = fopen("/proc/self/mounts", "re");

    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        char fs[64], at[1024];
        if (sscanf(line, "%*s %1023s %63s", at, fs) == 2 && strcmp(fs, "cgroup2") == 0) {
            snprintf(mount, sizeof(mount), "%s", at);
            break;
        }
    }
    if (f != NULL)
        fclose(f);
    f = fopen("/proc/self/cgroup", "re");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(self, sizeof(self), "%s", line + 3);
        }
    if (f != NULL)
        fclose(f);
    if (mount[0] == '\0' || self[0] == '\0')
        return false;
    snprintf(dir, n, "%s%s/bench-await-%d", mount, strcmp(self, "/") == 0 ? "" : self,
             (int)getpid());
    return mkdir(dir, 0755) == 0 || errno == EEXIST;
}

static void move_to_cgroup(const char *dir, pid_t pid)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "we");
    if (f == NULL || fprintf(f, "%d\n", (int)pid) < 0 || fclose(f) != 0)
        fail("moving the reference's child into its cgroup");
}

/* How the reference's child is made: as the registry makes its own (a
 * session of its own, stdin a pipe), and in a cgroup of its own (`cgroup`
 * the directory, or NULL). */
typedef struct child_like {
    bool as_registry;
    const char *cgroup;
} child_like;

/* The child's stdout and stderr are pipes, read in the same epoll set as
 * its pidfd; the exit is complete when the pidfd fires, both pipes are at
 * their end and the child is reaped (waitid on the pidfd). The clean-up
 * (closing the fds) comes after the clock stops, as jptool's comes after
 * the answer. `*cpu` gets the CPU time used in the window. */
static double capturing_wake(const char *fifo, child_like how, double *cpu)
{
    char in[128];
    snprintf(in, sizeof(in), "if=%s", fifo);
    char *argv[] = {"dd", in, "of=/dev/null", "bs=1", "count=1", "status=none", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int out[2], err[2], input[2] = {-1, -1};
    pid_t pid;

    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
        (how.as_registry && pipe2(input, O_CLOEXEC) < 0))
        fail("pipe2");
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    if (how.as_registry) {
        posix_spawn_file_actions_adddup2(&fa, input[0], 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    } else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    if (posix_spawnp(&pid, "dd", &fa, &attr, argv, environ) != 0)
        fail("posix_spawnp dd");
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (how.cgroup != NULL)
        move_to_cgroup(how.cgroup, pid);
    close(out[1]);
    close(err[1]);
    if (input[0] >= 0)
        close(input[0]);
    set_nonblocking(out[0]);
    set_nonblocking(err[0]);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event evs[3];
    int fds[3] = {pidfd, out[0], err[0]};
    for (int i = 0; i < 3; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
        if (fds[i] < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0)
            fail("pidfd/epoll");
    }
    int fd = open_when_ready(fifo);
    double start = bench_now() * 1e6, c0 = bench_cpu_now() * 1e6;
    trigger(fd, 1);
    bool reaped = false;
    while (!reaped) {
        int n = epoll_wait(ep, evs, 3, -1);
        for (int i = 0; i < n && !reaped; i++) {
            int ready = evs[i].data.fd;
            if (ready != pidfd) {
                if (!drain(ready))
                    epoll_ctl(ep, EPOLL_CTL_DEL, ready, NULL);
                continue;
            }
            siginfo_t info;
            drain(out[0]);
            drain(err[0]);
            reaped = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED) == 0;
        }
    }
    double took = bench_now() * 1e6 - start;
    *cpu = bench_cpu_now() * 1e6 - c0;
    close(fd);
    close(pidfd);
    close(ep);
    close(out[0]);
    close(err[0]);
    if (input[1] >= 0)
        close(input[1]);
    return took;
}

/* ---- Through the registry ------------------------------------------------------ */

static int idle_start(jpt_handle *h, const char *arguments_json, void *ud)
{
    (void)h;
    (void)arguments_json;
    (void)ud;
    return JPT_OK;
}

/* The "waiter" tool (a process that exits when the FIFO gives it a byte)
 * and the "idle" builtin, whose handles run until the registry is freed. */
static jpt_registry *registry_in(const char *fifo, int containment)
{
    char tools[1024];
    /* Every process handle runs at once (the default max_processes would
     * queue most of them, and time their spawns as stops). */
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 1000, .containment = containment,
                              .max_processes = 100000};
    jpt_builtin_ops idle = {sizeof(idle), idle_start, NULL, NULL};
    jpt_registry *r = NULL;

    snprintf(tools, sizeof(tools),
             "{\"tools\":[{\"name\":\"waiter\",\"stateful\":true,\"settle_ms\":1,"
             "\"command\":[\"dd\",\"if=%s\",\"of=/dev/null\",\"bs=1\",\"count=1\","
             "\"status=none\"]},"
             "{\"name\":\"sleeper\",\"stateful\":true,\"settle_ms\":1,"
             "\"command\":[\"sleep\",\"3600\"]}]}",
             fifo);
    if (jpt_registry_new(&o, &r) != JPT_OK || jpt_registry_load_tools(r, tools, 0) != JPT_OK ||
        jpt_registry_add_builtin(r,
                                 "{\"name\":\"idle\",\"stateful\":true,\"settle_ms\":1,"
                                 "\"actions\":[\"fetch\",\"abort\"]}",
                                 &idle, NULL) != JPT_OK) {
        fprintf(stderr, "bench-await: %s\n", r != NULL ? jpt_registry_errmsg(r) : "registry_new");
        exit(1);
    }
    return r;
}

static jpt_registry *registry(const char *fifo)
{
    return registry_in(fifo, JPT_CONTAIN_AUTO);
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

/* Spawns handles h<first>..h<first+n-1> of `tool`. */
static void spawn_tool(jpt_registry *r, const char *tool, int first, int n)
{
    size_t cap = (size_t)n * 96 + 64, len = 0;
    char *calls = malloc(cap);

    if (calls == NULL)
        fail("malloc");
    len += (size_t)snprintf(calls + len, cap - len, "[");
    for (int i = first; i < first + n; i++)
        len += (size_t)snprintf(calls + len, cap - len,
                                "%s{\"id\":\"s%d\",\"name\":\"%s\",\"arguments\":"
                                "{\"action\":\"spawn\",\"id\":\"h%d\"}}",
                                i > first ? "," : "", i, tool, i);
    snprintf(calls + len, cap - len, "]");
    jpt_batch *b = submit(r, calls);
    if (jpt_registry_wait(r, b, 600000) != JPT_OK)
        fail("spawn wait");
    char *results = NULL;
    jpt_batch_results_json(b, &results);
    if (results == NULL || strstr(results, "\"is_error\":true") != NULL) {
        fprintf(stderr, "bench-await: a spawn failed: %.300s\n", results ? results : "");
        exit(1);
    }
    jpt_free(results);
    jpt_batch_free(b);
    free(calls);
    drain_events(r);
}

/* Spawns `n` handles h0..h{n-1}, each blocked reading the FIFO. */
static void spawn_handles(jpt_registry *r, int n)
{
    spawn_tool(r, "waiter", 0, n);
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

/* The time from the trigger to the await's completion; `*dispatches`
 * counts the dispatches it took, `*cpu` the CPU time used in the window.
 * What the registry puts off until after the answer (the child's
 * clean-up) runs with the next spawn, outside the window. */
static double registry_wake(jpt_registry *r, const char *fifo, double *dispatches, double *cpu)
{
    spawn_handles(r, 1);
    jpt_batch *b = start_await(r, 1, "all");
    int fd = open_when_ready(fifo);
    int n = 0;
    double start = bench_now() * 1e6, c0 = bench_cpu_now() * 1e6;
    trigger(fd, 1);
    while (!jpt_batch_done(b)) {
        poll_fd(r);
        jpt_registry_dispatch(r);
        n++;
    }
    double took = bench_now() * 1e6 - start;
    *cpu = bench_cpu_now() * 1e6 - c0;
    close(fd);
    jpt_batch_free(b);
    drain_events(r);
    *dispatches = n;
    return took;
}

/* "name: X us (ratio R vs <ref> at Y us; +D us, target T: met)", the
 * target on the difference (`plus`) or on the ratio. */
static void print_latency(const char *name, double x, double ref, const char *ref_name,
                          bool plus, double target)
{
    printf("%s: %.1f us (ratio %.2f vs %s at %.1f us; %+.1f us", name, x, x / ref, ref_name,
           ref, x - ref);
    if (plus)
        printf(", target <= %+.0f us: %s)\n", target, bench_verdict(x - ref, target));
    else if (target > 0)
        printf(", target <= %.2fx: %s)\n", target, bench_verdict(x / ref, target));
    else
        printf(")\n");
}

/* One side of the comparison: its wall and CPU samples. */
typedef struct side {
    double *wall, *cpu;
} side;

static side side_new(int n)
{
    side s = {malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * (size_t)n)};
    if (s.wall == NULL || s.cpu == NULL)
        fail("malloc");
    return s;
}

static void side_free(side s)
{
    free(s.wall);
    free(s.cpu);
}

/* The wall clock's p50 and p99 of `s` against `ref`, and the CPU time's
 * p50 beside. */
static void print_side(const char *what, side s, side ref, const char *ref_name, int n)
{
    char name[160];
    double w50 = bench_percentile(s.wall, n, 0.5), r50 = bench_percentile(ref.wall, n, 0.5);
    double w99 = bench_percentile(s.wall, n, 0.99), r99 = bench_percentile(ref.wall, n, 0.99);
    double c50 = bench_percentile(s.cpu, n, 0.5), rc50 = bench_percentile(ref.cpu, n, 0.5);

    snprintf(name, sizeof(name), "await wake-up p50, %s", what);
    print_latency(name, w50, r50, ref_name, true, 10);
    snprintf(name, sizeof(name), "await wake-up p99, %s", what);
    print_latency(name, w99, r99, ref_name, false, 1.5);
    printf("await wake-up CPU time p50, %s: %.1f us (%+.1f us vs %.1f us of the reference's; "
           "the work done in the window, without the machine's load)\n",
           what, c50, c50 - rc50, rc50);
}

/* The references and both containments alternate sample by sample, so
 * that a burst of load elsewhere hits them alike. */
static void bench_latency(const char *fifo, int samples)
{
    char cgroup[4200];
    bool have_cgroup = make_cgroup(cgroup, sizeof(cgroup));
    child_like plain = {false, NULL}, in_session = {true, NULL},
               in_cgroup = {true, have_cgroup ? cgroup : NULL};
    side bare = side_new(samples), ref_plain = side_new(samples),
         ref_session = side_new(samples), ref_cgroup = side_new(samples),
         reg = side_new(samples), session = side_new(samples);
    double *wakes = malloc(sizeof(double) * (size_t)samples);
    double ignored, cpu;
    jpt_registry *r = registry(fifo), *rs = registry_in(fifo, JPT_CONTAIN_SESSION);

    bare_wake(fifo);
    capturing_wake(fifo, in_session, &cpu);
    registry_wake(r, fifo, &ignored, &cpu);
    registry_wake(rs, fifo, &ignored, &cpu);
    for (int i = 0; i < samples; i++) {
        bare.wall[i] = bare_wake(fifo);
        ref_plain.wall[i] = capturing_wake(fifo, plain, &ref_plain.cpu[i]);
        ref_session.wall[i] = capturing_wake(fifo, in_session, &ref_session.cpu[i]);
        ref_cgroup.wall[i] = capturing_wake(fifo, in_cgroup, &ref_cgroup.cpu[i]);
        reg.wall[i] = registry_wake(r, fifo, &wakes[i], &reg.cpu[i]);
        session.wall[i] = registry_wake(rs, fifo, &ignored, &session.cpu[i]);
    }
    jpt_registry_free(r);
    jpt_registry_free(rs);
    if (have_cgroup)
        rmdir(cgroup);
    print_side(have_cgroup ? "cgroup containment" : "default containment (no cgroups here)",
               reg, have_cgroup ? ref_cgroup : ref_session,
               have_cgroup ? "the minimal capturing loop, its child in a session and a "
                             "cgroup of its own"
                           : "the minimal capturing loop, its child in a session of its own",
               samples);
    print_side("session containment", session, ref_session,
               "the minimal capturing loop, its child in a session of its own", samples);
    double p50 = bench_percentile(ref_plain.wall, samples, 0.5);
    printf("the containments' own cost (the kernel's, as the child exits): a session %+.1f "
           "us, a session and a cgroup %+.1f us, vs a plain child at %.1f us (p50)\n",
           bench_percentile(ref_session.wall, samples, 0.5) - p50,
           have_cgroup ? bench_percentile(ref_cgroup.wall, samples, 0.5) - p50 : 0.0, p50);
    print_latency("await wake-up p50 vs a bare wake", bench_percentile(reg.wall, samples, 0.5),
                  bench_percentile(bare.wall, samples, 0.5), "a bare pidfd+epoll wake", false,
                  0);
    printf("await wake-up dispatches: %.0f per child exit (p50; max %.0f)\n",
           bench_percentile(wakes, samples, 0.5), bench_percentile(wakes, samples, 1.0));
    side_free(bare);
    side_free(ref_plain);
    side_free(ref_session);
    side_free(ref_cgroup);
    side_free(reg);
    side_free(session);
    free(wakes);
}

/* What the dispatches cost per handle stop: CPU time (the target's) and
 * wall clock. */
typedef struct per_stop {
    double cpu, wall;
} per_stop;

/* Stops `stops` handles one after the other (a byte to the FIFO each,
 * which one child reads), dispatching until each has stopped, and adds up
 * the dispatches' cost. One at a time, so that each stop costs what it
 * costs alone, however many handles there are: stops that come together
 * share a dispatch, and more of them do with fewer handles. */
static per_stop dispatch_until_stopped(jpt_registry *r, int fd, int stops)
{
    per_stop cost = {0, 0};
    jpt_event *e;

    for (int i = 0; i < stops; i++) {
        int stopped = 0;
        trigger(fd, 1);
        while (stopped == 0) {
            poll_fd(r);
            double t = bench_now() * 1e6, c = bench_cpu_now() * 1e6;
            jpt_registry_dispatch(r);
            cost.cpu += bench_cpu_now() * 1e6 - c;
            cost.wall += bench_now() * 1e6 - t;
            while (jpt_registry_next_event(r, &e) == JPT_OK) {
                stopped += jpt_event_type(e) == JPT_EVENT_STATE &&
                           jpt_event_state(e) == JPT_STATE_STOPPED;
                jpt_event_free(e);
            }
        }
    }
    cost.cpu /= stops;
    cost.wall /= stops;
    return cost;
}

/* Dispatch cost per handle stop, from the trigger until every handle has
 * stopped, with one await over all of them. */
static per_stop dispatch_per_stop(const char *fifo, int n, const char *mode)
{
    jpt_registry *r = registry(fifo);

    spawn_handles(r, n);
    jpt_batch *b = start_await(r, n, mode);
    int fd = open_when_ready(fifo);
    per_stop cost = dispatch_until_stopped(r, fd, n);
    close(fd);
    if (jpt_registry_wait(r, b, 60000) != JPT_OK)
        fail("await wait");
    jpt_batch_free(b);
    jpt_registry_free(r);
    return cost;
}

/* The least of `rounds` runs of each figure. */
static per_stop best_of(per_stop a, per_stop b)
{
    per_stop m = {a.cpu < b.cpu ? a.cpu : b.cpu, a.wall < b.wall ? a.wall : b.wall};
    return m;
}

static void print_per_stop(const char *what, per_stop x, per_stop base, const char *base_name)
{
    printf("dispatch per handle stop, %s: %.1f us CPU time (ratio %.2f vs %s at %.1f us, "
           "target <= 1.20: %s; wall clock %.1f us, ratio %.2f vs %.1f us)\n",
           what, x.cpu, x.cpu / base.cpu, base_name, base.cpu,
           bench_verdict(x.cpu / base.cpu, 1.2), x.wall, x.wall / base.wall, base.wall);
}

static void bench_scaling(const char *fifo, bool quick)
{
    static const int counts[] = {10, 100, 1000};
    int rounds = quick ? 1 : 3;

    for (size_t m = 0; m < 2; m++) {
        const char *mode = m == 0 ? "all" : "any";
        per_stop base = {0, 0};
        for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
            if (quick && counts[i] > 100)
                continue;
            per_stop best = {1e18, 1e18};
            for (int k = 0; k < rounds; k++)
                best = best_of(best, dispatch_per_stop(fifo, counts[i], mode));
            if (i == 0) {
                base = best;
                continue;
            }
            char what[96], base_name[32];
            snprintf(what, sizeof(what), "%d handles under one await %s", counts[i], mode);
            snprintf(base_name, sizeof(base_name), "%d handles", counts[0]);
            print_per_stop(what, best, base, base_name);
        }
    }
}

/* Dispatch cost per handle stop with `live` handles alive: processes
 * (waiting on the FIFO) up to `max_procs`, builtin handles beyond; `stops`
 * of the processes stop, under one await of them all. */
static per_stop dispatch_per_stop_live(const char *fifo, int live, int stops, int max_procs)
{
    jpt_registry *r = registry(fifo);
    int procs = live < max_procs ? live : max_procs;

    /* Only the processes that stop read the FIFO: every reader wakes at
     * each byte written, and thousands of them would measure the kernel's
     * wake-ups rather than the registry. */
    spawn_tool(r, "waiter", 0, stops);
    spawn_tool(r, "sleeper", stops, procs - stops);
    if (live > procs)
        spawn_tool(r, "idle", procs, live - procs);
    jpt_batch *b = start_await(r, live, "all");
    int fd = open_when_ready(fifo);
    per_stop cost = dispatch_until_stopped(r, fd, stops);
    close(fd);
    jpt_batch_free(b);
    jpt_registry_free(r);
    return cost;
}

static void bench_live_handles(const char *fifo, bool quick)
{
    static const int counts[] = {100, 1000, 10000};
    struct rlimit rl;
    int rounds = quick ? 1 : 3, stops = 100;
    per_stop base = {0, 0};

    /* Four fds a process handle, and room for the registry's own. */
    getrlimit(RLIMIT_NOFILE, &rl);
    int max_procs = (int)((rl.rlim_cur - 256) / 5);
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        if (quick && counts[i] > 1000)
            continue;
        per_stop best = {1e18, 1e18};
        for (int k = 0; k < rounds; k++)
            best = best_of(best, dispatch_per_stop_live(fifo, counts[i], stops, max_procs));
        if (i == 0) {
            base = best;
            continue;
        }
        int procs = counts[i] < max_procs ? counts[i] : max_procs;
        char what[128], base_name[32];
        snprintf(what, sizeof(what), "%d live handles (%d processes, %d builtin)", counts[i],
                 procs, counts[i] - procs);
        snprintf(base_name, sizeof(base_name), "%d live handles", counts[0]);
        print_per_stop(what, best, base, base_name);
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
    bench_live_handles(fifo, quick);
    unlink(fifo);
    rmdir(dir);
    return 0;
}
