/* What the benchmarks share: the clock, order statistics of their samples,
 * and the calls of one action on many handles. */
#ifndef JPT_BENCH_UTIL_H
#define JPT_BENCH_UTIL_H

/* Seconds on CLOCK_MONOTONIC. */
double bench_now(void);

/* The p-quantile (0 to 1) of `n` samples, nearest rank; sorts `v`. */
double bench_percentile(double *v, int n, double p);
/* The median, bench_percentile(v, n, 0.5). */
double bench_median(double *v, int n);

/* A batch of `n` calls "<prefix>0".. of `tool`, each {"action": action,
 * "id": "h<i>"}, as JSON text; free() it. Exits on allocation failure. */
char *bench_action_calls(const char *tool, const char *action, const char *prefix, int n);

#endif
