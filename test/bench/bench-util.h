/* What the benchmarks share: the clock, order statistics of their samples,
 * the calls of one action on many handles, and ripgrep as a reference. */
#ifndef JPT_BENCH_UTIL_H
#define JPT_BENCH_UTIL_H

/* Seconds on CLOCK_MONOTONIC. */
double bench_now(void);
/* Seconds of CPU this thread has used (CLOCK_THREAD_CPUTIME_ID): the work
 * a dispatch does, without the time other processes held the CPU, which
 * a shared machine's load adds to wall-clock figures. */
double bench_cpu_now(void);
/* "met" or "MISSED" for `value` against `target` (at most). */
const char *bench_verdict(double value, double target);

/* The system calls this thread makes (issue 17 §4: a host's calls per
 * request appear in the benchmarks' output, so that a regression shows).
 * Counted by the kernel without ptrace or seccomp: a perf event on the
 * raw_syscalls:sys_enter tracepoint (perf_event_open; root, or
 * CAP_PERFMON, or kernel.perf_event_paranoid at most 1), else the
 * read-like and write-like calls alone from /proc/thread-self/io (syscr,
 * syscw), which bench_syscalls_how() then says. -1 when neither can be
 * read. Call bench_syscalls from the thread to count, which must be the
 * one that opened the counter (the first call opens it). */
long long bench_syscalls(void);
const char *bench_syscalls_how(void);

/* The p-quantile (0 to 1) of `n` samples, nearest rank; sorts `v`. */
double bench_percentile(double *v, int n, double p);
/* The median, bench_percentile(v, n, 0.5). */
double bench_median(double *v, int n);

/* A batch of `n` calls "<prefix>0".. of `tool`, each {"action": action,
 * "id": "h<i>"}, as JSON text; free() it. Exits on allocation failure. */
char *bench_action_calls(const char *tool, const char *action, const char *prefix, int n);

/* The executable `name` in $PATH (or /usr/bin without one), or NULL. The
 * path is in a static buffer, valid until the next call. */
const char *bench_find_program(const char *name);

/* Runs ripgrep `rg` with one thread in `root` on `pattern`, with the flags
 * that give fs.grep's file set (--no-ignore --hidden -g '!.git') and
 * `flag` before it (e.g. "-i"; may be NULL), its output read through a
 * pipe. Returns the number of matching lines it printed, or -1 when it
 * could not be run or failed. */
long bench_rg_lines(const char *rg, const char *root, const char *flag, const char *pattern);

#endif
