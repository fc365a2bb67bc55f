/* bench-sandbox: what the OS sandbox costs a spawn, beside the same spawn
 * without it, measured in the same run (TESTING.md, "Benchmarks"): a
 * one-shot call of /bin/true through the registry, as a stdio tool with
 * "sandbox": true (a Landlock ruleset and a seccomp filter prepared in the
 * parent, applied in the child) vs the same tool without. Calls alternate
 * one by one and the medians are compared. Target (issue 18): +50 us at
 * most; the registry builds the Landlock ruleset once per tool, and what
 * is left is the child's: applying the ruleset and the seccomp filter
 * (which the kernel compiles at each attach), and running under them.
 *
 * usage: bench-sandbox [--quick]   (--quick: fewer rounds) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jptool/jptool.h>

#include "bench-util.h"

static void run_call(jpt_registry *r, const char *calls)
{
    jpt_batch *b = NULL;
    char *results = NULL;

    if (jpt_registry_submit(r, calls, &b) != JPT_OK ||
        jpt_registry_wait(r, b, 600000) != JPT_OK ||
        jpt_batch_results_json(b, &results) != JPT_OK || strstr(results, "\"is_error\":true")) {
        fprintf(stderr, "bench-sandbox: a call failed: %s %s\n", jpt_registry_errmsg(r),
                results != NULL ? results : "");
        exit(1);
    }
    jpt_free(results);
    jpt_batch_free(b);
}

static double time_call(jpt_registry *r, const char *tool)
{
    char calls[256];
    snprintf(calls, sizeof(calls), "[{\"id\":\"t\",\"name\":\"%s\",\"arguments\":{}}]", tool);
    double start = bench_now();
    run_call(r, calls);
    return bench_now() - start;
}

int main(int argc, char **argv)
{
    int pairs = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 50 : 400;
    jpt_registry_options o = {sizeof(o), .containment = JPT_CONTAIN_SESSION};
    jpt_registry *r = NULL;
    unsigned enforced = 0;
    char *report = NULL;

    if (jpt_registry_new(&o, &r) != JPT_OK ||
        jpt_registry_load_tools(r,
                                "{\"tools\":[{\"name\":\"plain\",\"command\":[\"/bin/true\"]},"
                                "{\"name\":\"boxed\",\"command\":[\"/bin/true\"],"
                                "\"sandbox\":true,\"os_sandbox\":{\"mode\":\"best-effort\"}}]}",
                                0) != JPT_OK ||
        jpt_registry_tool_sandbox(r, "boxed", &enforced, &report) != JPT_OK) {
        fprintf(stderr, "bench-sandbox: %s\n", r != NULL ? jpt_registry_errmsg(r) : "new");
        return 1;
    }
    printf("sandbox: %s\n", report);
    jpt_free(report);
    double *plain = malloc(sizeof(double) * (size_t)pairs);
    double *boxed = malloc(sizeof(double) * (size_t)pairs);
    for (int i = 0; i < 20; i++) {
        time_call(r, "plain");
        time_call(r, "boxed");
    }
    for (int i = 0; i < pairs; i++) {
        plain[i] = time_call(r, "plain");
        boxed[i] = time_call(r, "boxed");
    }
    double t_plain = bench_median(plain, pairs), t_boxed = bench_median(boxed, pairs);
    printf("one-shot /bin/true in the OS sandbox: %.1f us per call (ratio %.2f vs %.1f us "
           "unsandboxed; %+.1f us, target <= +50 us: %s)\n",
           t_boxed * 1e6, t_boxed / t_plain, t_plain * 1e6, (t_boxed - t_plain) * 1e6,
           bench_verdict((t_boxed - t_plain) * 1e6, 50));
    free(plain);
    free(boxed);
    jpt_registry_free(r);
    return 0;
}
