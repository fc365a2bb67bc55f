/* Helpers the benchmarks share; see bench-util.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench-util.h"

double bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
