/* bench-sandbox: what the OS sandbox costs a spawn, beside the same spawn
 * without it, measured in the same run (TESTING.md, "Benchmarks"):
 *   - a one-shot call of /bin/true through the registry, as a stdio tool
 *     with "sandbox": true (a Landlock ruleset and seccomp filters kept in
 *     the registry, applied in the child; every capability dropped; a
 *     mount namespace, read-only but the workspace and a /tmp of its own,
 *     the workspace's repositories read-only, the secrets of /etc
 *     covered) vs the same tool without;
 *   - a "vfs" tool (test/tools/sandbox-probe --vfs, which sends its result
 *     at once) in its OS sandbox vs the same with "os_sandbox": {"mode":
 *     "off"}.
 * Calls alternate one by one and the medians are compared; each line says
 * the difference against issue 15's target, +150 us per spawn.
 *
 * usage: bench-sandbox [--quick]   (--quick: fewer rounds) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jptool/jptool.h>

#include "bench-util.h"

#ifndef JPT_BENCH_TOOLS
#error "JPT_BENCH_TOOLS must name the test tools' directory"
#endif
#define PROBE JPT_BENCH_TOOLS "/sandbox-probe"

#define TARGET_US 150.0

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

static void report(jpt_registry *r, const char *tool)
{
    unsigned enforced = 0;
    char *text = NULL;

    if (jpt_registry_tool_sandbox(r, tool, &enforced, &text) != JPT_OK) {
        fprintf(stderr, "bench-sandbox: %s\n", jpt_registry_errmsg(r));
        exit(1);
    }
    printf("%s: %s\n", tool, text);
    jpt_free(text);
}

/* Medians of `pairs` alternating calls of `plain` and `boxed`. */
static void compare(jpt_registry *r, const char *what, const char *plain, const char *boxed,
                    int pairs)
{
    double *a = malloc(sizeof(double) * (size_t)pairs);
    double *b = malloc(sizeof(double) * (size_t)pairs);

    for (int i = 0; i < 20; i++) {
        time_call(r, plain);
        time_call(r, boxed);
    }
    for (int i = 0; i < pairs; i++) {
        a[i] = time_call(r, plain);
        b[i] = time_call(r, boxed);
    }
    double t_plain = bench_median(a, pairs), t_boxed = bench_median(b, pairs);
    double extra = (t_boxed - t_plain) * 1e6;
    printf("%s: %.1f us per call (ratio %.2f vs %.1f us unsandboxed; +%.1f us, %s the target "
           "of +%.0f us)\n",
           what, t_boxed * 1e6, t_boxed / t_plain, t_plain * 1e6, extra,
           extra <= TARGET_US ? "within" : "over", TARGET_US);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    int pairs = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 50 : 400;
    jpt_registry_options o = {sizeof(o), .containment = JPT_CONTAIN_SESSION};
    jpt_registry *r = NULL;

    if (jpt_registry_new(&o, &r) != JPT_OK ||
        jpt_registry_load_tools(
            r,
            "{\"tools\":[{\"name\":\"plain\",\"command\":[\"/bin/true\"]},"
            "{\"name\":\"boxed\",\"command\":[\"/bin/true\"],"
            "\"sandbox\":true,\"os_sandbox\":{\"mode\":\"best-effort\"}},"
            "{\"name\":\"vfs-off\",\"runtime\":\"vfs\",\"command\":[\"" PROBE "\",\"--vfs\"],"
            "\"os_sandbox\":{\"mode\":\"off\"}},"
            "{\"name\":\"vfs-boxed\",\"runtime\":\"vfs\",\"command\":[\"" PROBE "\",\"--vfs\"],"
            "\"os_sandbox\":{\"mode\":\"best-effort\"}}]}",
            0) != JPT_OK) {
        fprintf(stderr, "bench-sandbox: %s\n", r != NULL ? jpt_registry_errmsg(r) : "new");
        return 1;
    }
    report(r, "boxed");
    report(r, "vfs-boxed");
    compare(r, "one-shot /bin/true in the OS sandbox (stdio profile)", "plain", "boxed", pairs);
    compare(r, "a vfs tool's spawn and result in the OS sandbox (vfs profile)", "vfs-off",
            "vfs-boxed", pairs);
    jpt_registry_free(r);
    return 0;
}
