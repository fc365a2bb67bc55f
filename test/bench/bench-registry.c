/* bench-registry: the registry's costs, each beside a reference measured in
 * the same run (TESTING.md, "Benchmarks"), each printed against its target
 * (issue 18):
 *
 *  - a one-shot call of /bin/true through the registry vs posix_spawn +
 *    waitpid (target: ratio <= 1.10), in each containment mode: session,
 *    cgroup (where available), and last subreaper (which makes this
 *    process a subreaper for good). Beside it, the CPU time this thread
 *    used per call on each side: on a shared machine the wall clock also
 *    holds the time other work held the CPU;
 *  - 1 GiB of output captured through a handle vs reading the same
 *    program's pipe directly (target: ratio <= 1.05, peak RSS <= 10 MiB:
 *    the VmHWM of this process, the one that captures, over the capture;
 *    not ru_maxrss, which keeps the peak of the program that exec'ed it);
 *  - 1 000 concurrent sleeping handles spawned and stopped: library memory
 *    per handle, counted by the allocator hook (target <= 16 KiB, output
 *    buffers excluded: the sleepers write nothing).
 *
 * usage: bench-registry [--quick]   (--quick: fewer rounds, 64 MiB) */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jptool/jptool.h>

#include "bench-util.h"

extern char **environ;

/* ---- A counting allocator: live bytes, for memory per handle ----------------- */

static size_t live_bytes;

typedef struct header {
    size_t size;
    size_t pad; /* keeps the payload 16-byte aligned */
} header;

static void *count_malloc(size_t n, void *ud)
{
    (void)ud;
    header *h = malloc(sizeof(header) + n);
    if (h == NULL)
        return NULL;
    h->size = n;
    live_bytes += n;
    return h + 1;
}

static void *count_realloc(void *p, size_t n, void *ud)
{
    header *h = (header *)p - 1;
    size_t old = h->size;
    (void)ud;
    h = realloc(h, sizeof(header) + n);
    if (h == NULL)
        return NULL;
    live_bytes = live_bytes - old + n;
    h->size = n;
    return h + 1;
}

static void count_free(void *p, void *ud)
{
    (void)ud;
    if (p == NULL)
        return;
    header *h = (header *)p - 1;
    live_bytes -= h->size;
    free(h);
}

/* ---- Helpers ---------------------------------------------------------------- */

static jpt_registry *registry_in(int containment, const char *tools)
{
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 1000, .containment = containment};
    jpt_registry *r = NULL;

    if (jpt_registry_new(&o, &r) != JPT_OK || jpt_registry_load_tools(r, tools, 0) != JPT_OK) {
        fprintf(stderr, "bench-registry: %s\n", r ? jpt_registry_errmsg(r) : "registry_new");
        exit(1);
    }
    return r;
}

static jpt_registry *registry(const char *tools)
{
    return registry_in(JPT_CONTAIN_AUTO, tools);
}

static void run_batch(jpt_registry *r, const char *calls, char **results)
{
    jpt_batch *b = NULL;

    if (jpt_registry_submit(r, calls, &b) != JPT_OK ||
        jpt_registry_wait(r, b, 600000) != JPT_OK) {
        fprintf(stderr, "bench-registry: a batch failed: %s\n", jpt_registry_errmsg(r));
        exit(1);
    }
    if (results != NULL)
        jpt_batch_results_json(b, results);
    jpt_batch_free(b);
}

/* ---- 1. One-shot /bin/true ---------------------------------------------------- */

/* The CPU time of the last timed call. */
static double last_cpu;

static double time_posix_spawn(int calls)
{
    char *argv[] = {"/bin/true", NULL};
    double start = bench_now(), c0 = bench_cpu_now();

    for (int i = 0; i < calls; i++) {
        pid_t pid;
        int status;
        if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0 ||
            waitpid(pid, &status, 0) != pid)
            exit(1);
    }
    last_cpu = (bench_cpu_now() - c0) / calls;
    return (bench_now() - start) / calls;
}

static double time_registry_true(jpt_registry *r, int calls)
{
    double start = bench_now(), c0 = bench_cpu_now();

    for (int i = 0; i < calls; i++)
        run_batch(r, "[{\"id\":\"t\",\"name\":\"true\",\"arguments\":{}}]", NULL);
    last_cpu = (bench_cpu_now() - c0) / calls;
    return (bench_now() - start) / calls;
}

/* Calls alternate one by one, so a burst of load elsewhere hits both sides
 * alike; the medians are compared. */
static void bench_one_shot(int pairs, int containment, const char *mode)
{
    jpt_registry_options o = {sizeof(o), .containment = containment};
    jpt_registry *r = NULL;

    if (jpt_registry_new(&o, &r) == JPT_ERR_UNSUPPORTED) {
        printf("one-shot /bin/true, %s containment: not available here\n", mode);
        return;
    }
    jpt_registry_free(r);
    r = registry_in(containment, "{\"tools\":[{\"name\":\"true\",\"command\":[\"/bin/true\"]}]}");
    double *ref = malloc(sizeof(double) * (size_t)pairs * 4);
    double *reg = ref + pairs, *ref_cpu = ref + 2 * pairs, *reg_cpu = ref + 3 * pairs;

    time_posix_spawn(20);
    time_registry_true(r, 20);
    for (int i = 0; i < pairs; i++) {
        ref[i] = time_posix_spawn(1);
        ref_cpu[i] = last_cpu;
        reg[i] = time_registry_true(r, 1);
        reg_cpu[i] = last_cpu;
    }
    double t_ref = bench_median(ref, pairs), t_reg = bench_median(reg, pairs);
    double c_ref = bench_median(ref_cpu, pairs), c_reg = bench_median(reg_cpu, pairs);
    printf("one-shot /bin/true, %s containment: %.1f us per call (ratio %.2f vs "
           "posix_spawn+waitpid at %.1f us, target <= 1.10: %s); CPU time %.1f us per call vs "
           "%.1f us (%+.1f us)\n",
           mode, t_reg * 1e6, t_reg / t_ref, t_ref * 1e6, bench_verdict(t_reg / t_ref, 1.10),
           c_reg * 1e6, c_ref * 1e6, (c_reg - c_ref) * 1e6);
    free(ref);
    jpt_registry_free(r);
}

/* ---- 2. 1 GiB through a handle ------------------------------------------------- */

static double time_direct_pipe(const char *flood, const char *bytes, double *cpu)
{
    char *argv[] = {(char *)flood, (char *)bytes, NULL};
    posix_spawn_file_actions_t fa;
    int p[2], status;
    pid_t pid;
    static char buf[65536];
    double start = bench_now(), c0 = bench_cpu_now();

    if (pipe(p) < 0)
        exit(1);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    if (posix_spawn(&pid, flood, &fa, NULL, argv, environ) != 0)
        exit(1);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    for (;;) {
        ssize_t n = read(p[0], buf, sizeof(buf));
        if (n > 0)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        break;
    }
    close(p[0]);
    waitpid(pid, &status, 0);
    *cpu = bench_cpu_now() - c0;
    return bench_now() - start;
}

/* This process's peak resident set (VmHWM of /proc/self/status), in KiB;
 * 0 if it cannot be read. */
static long peak_rss_kib(void)
{
    char line[256];
    long kib = 0;
    FILE *f = fopen("/proc/self/status", "r");

    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kib;
}

/* Starts the peak over from the current resident set (Linux 4.0). */
static void reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");

    if (f != NULL) {
        fputs("5", f);
        fclose(f);
    }
}

static void bench_capture(const char *flood, long long bytes, int rounds)
{
    char tools[1024], count[32];
    double ref[16], reg[16], ref_cpu[16], reg_cpu[16];
    long peak = 0;

    snprintf(count, sizeof(count), "%lld", bytes);
    snprintf(tools, sizeof(tools),
             "{\"tools\":[{\"name\":\"flood\",\"command\":[\"%s\",\"%s\"]}]}", flood, count);
    jpt_registry *r = registry(tools);
    reset_peak_rss();
    for (int i = 0; i < rounds; i++) {
        double start = bench_now(), c0 = bench_cpu_now();
        run_batch(r, "[{\"id\":\"f\",\"name\":\"flood\",\"arguments\":{}}]", NULL);
        reg[i] = bench_now() - start;
        reg_cpu[i] = bench_cpu_now() - c0;
        if (i == 0) {
            /* The peak over the first capture: the registry runs alone. */
            peak = peak_rss_kib();
        }
        ref[i] = time_direct_pipe(flood, count, &ref_cpu[i]);
    }
    jpt_registry_free(r);
    double t_ref = bench_median(ref, rounds), t_reg = bench_median(reg, rounds);
    double c_ref = bench_median(ref_cpu, rounds), c_reg = bench_median(reg_cpu, rounds);
    double mb = (double)bytes / (1024.0 * 1024.0);
    printf("capture %.0f MiB: %.0f MB/s through a handle (time ratio %.2f vs reading the "
           "pipe directly at %.0f MB/s, target <= 1.05: %s)\n",
           mb, mb / t_reg, t_reg / t_ref, mb / t_ref, bench_verdict(t_reg / t_ref, 1.05));
    printf("capture %.0f MiB: CPU time %.3f s through a handle vs %.3f s reading the pipe "
           "directly (ratio %.2f; the reader's own work, without the machine's load)\n",
           mb, c_reg, c_ref, c_reg / c_ref);
    printf("capture peak RSS: %.1f MiB (VmHWM of the capturing process, target <= 10 MiB: "
           "%s)\n",
           (double)peak / 1024.0, bench_verdict((double)peak / 1024.0, 10));
}

/* ---- 3. 1 000 concurrent handles ----------------------------------------------- */

static void bench_many_handles(const char *sleeper, int n)
{
    char tools[1024];
    struct rlimit rl;

    /* Four fds a handle (pidfd, stdin, stdout, stderr). */
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    snprintf(tools, sizeof(tools),
             "{\"tools\":[{\"name\":\"nap\",\"stateful\":true,\"settle_ms\":1,"
             "\"command\":[\"%s\",\"600000\"]}]}",
             sleeper);
    jpt_registry *r = registry(tools);
    char *calls = bench_action_calls("nap", "spawn", "c", n);

    size_t before = live_bytes;
    double start = bench_now();
    jpt_batch *b = NULL;
    if (jpt_registry_submit(r, calls, &b) != JPT_OK || jpt_registry_wait(r, b, 600000) != JPT_OK)
        exit(1);
    double spawned = bench_now() - start;
    char *results = NULL;
    jpt_batch_results_json(b, &results);
    if (results == NULL || strstr(results, "\"is_error\":true") != NULL) {
        fprintf(stderr, "bench-registry: a spawn failed: %.300s\n", results ? results : "");
        exit(1);
    }
    jpt_free(results);
    jpt_batch_free(b);
    size_t per_handle = (live_bytes - before) / (size_t)n;

    free(calls);
    calls = bench_action_calls("nap", "abort", "a", n);
    start = bench_now();
    run_batch(r, calls, NULL);
    double stopped = bench_now() - start;
    free(calls);
    jpt_registry_free(r);
    printf("%d handles: spawned in %.2f s, all stopped in %.2f s; library memory %.1f KiB "
           "per handle (target <= 16 KiB)\n",
           n, spawned, stopped, (double)per_handle / 1024.0);
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    jpt_allocator a = {sizeof(a), count_malloc, count_realloc, count_free, NULL};

    if (jpt_set_allocator(&a) != JPT_OK)
        return 1;
    bench_one_shot(quick ? 100 : 1000, JPT_CONTAIN_SESSION, "session");
    bench_one_shot(quick ? 100 : 1000, JPT_CONTAIN_CGROUP, "cgroup");
    bench_capture(JPT_BENCH_TOOLS "/flood", quick ? 64ll << 20 : 1ll << 30, quick ? 1 : 3);
    bench_many_handles(JPT_BENCH_TOOLS "/sleep-ms", quick ? 100 : 1000);
    bench_one_shot(quick ? 100 : 1000, JPT_CONTAIN_SUBREAPER, "subreaper");
    return 0;
}
