/* Helpers the benchmarks share; see bench-util.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "syscall-count.h"

double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double bench_cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *bench_verdict(double value, double target)
{
    return value <= target ? "met" : "MISSED";
}

/* ---- System calls ----------------------------------------------------------------- */

static int syscall_counter = -2; /* -2: not opened yet; -1: none, /proc instead */

/* syscr + syscw of this thread, or -1. */
static long long proc_io_calls(void)
{
    FILE *f = fopen("/proc/thread-self/io", "r");
    char line[128];
    long long total = 0, v;
    int found = 0;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "syscr: %lld", &v) == 1 || sscanf(line, "syscw: %lld", &v) == 1) {
            total += v;
            found++;
        }
    fclose(f);
    return found == 2 ? total : -1;
}

long long bench_syscalls(void)
{
    if (syscall_counter == -2)
        syscall_counter = syscall_counter_open();
    if (syscall_counter >= 0)
        return syscall_counter_read(syscall_counter);
    return proc_io_calls();
}

const char *bench_syscalls_how(void)
{
    if (syscall_counter == -2)
        (void)bench_syscalls();
    return syscall_counter >= 0 ? "all system calls, perf event raw_syscalls:sys_enter"
                                : "read-like and write-like calls only, /proc/thread-self/io";
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double bench_percentile(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(*v), compare_doubles);
    return v[(int)(p * (n - 1) + 0.5)];
}

double bench_median(double *v, int n)
{
    return bench_percentile(v, n, 0.5);
}

char *bench_action_calls(const char *tool, const char *action, const char *prefix, int n)
{
    size_t cap = (size_t)n * 96 + 64, len = 0;
    char *calls = malloc(cap);

    if (calls == NULL) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    len += (size_t)snprintf(calls + len, cap - len, "[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(calls + len, cap - len,
                                "%s{\"id\":\"%s%d\",\"name\":\"%s\",\"arguments\":"
                                "{\"action\":\"%s\",\"id\":\"h%d\"}}",
                                i ? "," : "", prefix, i, tool, action, i);
    snprintf(calls + len, cap - len, "]");
    return calls;
}

const char *bench_find_program(const char *name)
{
    static char path[4096];
    const char *env = getenv("PATH");

    for (const char *p = env != NULL ? env : "/usr/bin"; *p != '\0';) {
        const char *colon = strchr(p, ':');
        size_t n = colon != NULL ? (size_t)(colon - p) : strlen(p);
        snprintf(path, sizeof(path), "%.*s/%s", (int)n, p, name);
        if (access(path, X_OK) == 0)
            return path;
        p += n + (colon != NULL);
    }
    return NULL;
}

long bench_rg_lines(const char *rg, const char *root, const char *flag, const char *pattern)
{
    const char *argv[] = {rg, "-j1", "--no-config", "--no-ignore", "--hidden", "-g", "!.git",
                          "-n", "--no-heading", "--with-filename", "--null", "--color",
                          "never", flag != NULL ? flag : "-e", flag != NULL ? "-e" : pattern,
                          flag != NULL ? pattern : NULL, NULL};
    int fds[2];
    static char buf[1 << 16];
    long lines = 0;
    bool nul_seen = false;

    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        if (chdir(root) == 0)
            execv(rg, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    for (;;) {
        ssize_t n = read(fds[0], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        /* A match is a line with the NUL after its path; rg's notes about
         * binary files have none. */
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\0')
                nul_seen = true;
            else if (buf[i] == '\n') {
                lines += nul_seen;
                nul_seen = false;
            }
        }
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) <= 1 ? lines : -1;
}
