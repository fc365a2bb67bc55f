/* bench-scale: the sizes a model controls, each measured at two sizes ten
 * times apart in the same run (TESTING.md, "Scale and hostile sizes"). The
 * reference of each figure is the same work at a tenth of the size, so the
 * ratio is the cost per item at the large size over the cost per item at
 * the small one: 1.0 is linear, 10 is quadratic (the 10 000 spawns
 * took 3 s, 30 000 await ids 2.8 s). The larger size's handles no longer
 * fit the CPU's caches, which alone costs up to about 2x per item in wall
 * time; counted in instructions (valgrind --tool=callgrind on an await of
 * 3 000 and 30 000 ids) the await is 1.07x. Hence the targets:
 *
 *  - submitting a batch of N stateful spawns (pre-registration of every id)
 *    and running it to the end: 1 000 vs 10 000 (target: ratio <= 2);
 *  - an await of N handle ids, answered at once (timeout_secs 0): 3 000 vs
 *    30 000 (target: ratio <= 2);
 *  - the longest single dispatch while each large case runs (target: a few
 *    milliseconds; the loop's budget for deferred work is 2 ms, so each
 *    figure is printed as a ratio to 2 ms, target <= 2.5).
 *
 * The handles are builtin (host callbacks), so the figures are the
 * registry's own cost, not the kernel's for processes.
 *
 * usage: bench-scale [--quick] */
#define _GNU_SOURCE
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jptool/jptool.h>

#include "bench-util.h"

static double max_dispatch; /* seconds, the longest dispatch seen */

static void check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "bench-scale: %s: %s\n", what, jpt_strerror(rc));
        exit(1);
    }
}

/* A builtin that starts and keeps running: the model's handles. */
static int start_running(jpt_handle *h, const char *arguments_json, void *ud)
{
    (void)h;
    (void)arguments_json;
    (void)ud;
    return JPT_OK;
}

static jpt_registry *new_registry(void)
{
    static const jpt_builtin_ops ops = {sizeof(ops), start_running, NULL, NULL};
    jpt_registry *r;

    check(jpt_registry_new(NULL, &r), "registry_new");
    check(jpt_registry_add_builtin(r, "{\"name\":\"job\",\"stateful\":true,"
                                      "\"actions\":[\"fetch\",\"abort\"],"
                                      "\"settle_ms\":0,\"yield_ms\":1}",
                                   &ops, NULL),
          "add_builtin");
    return r;
}

/* Dispatches until the batch is done, timing every dispatch. */
static void run_batch(jpt_registry *r, jpt_batch *b)
{
    while (!jpt_batch_done(b)) {
        struct pollfd pfd = {.fd = jpt_registry_get_fd(r), .events = POLLIN};
        int timeout = jpt_registry_get_timeout(r);
        if (timeout != 0)
            poll(&pfd, 1, timeout < 0 ? 1000 : timeout);
        double t0 = bench_now();
        check(jpt_registry_dispatch(r), "dispatch");
        double took = bench_now() - t0;
        if (took > max_dispatch)
            max_dispatch = took;
    }
}

/* Submits and runs `calls`; returns the seconds taken. */
static double run_calls(jpt_registry *r, const char *calls)
{
    jpt_batch *b;
    double t0 = bench_now();

    check(jpt_registry_submit(r, calls, &b), "submit");
    run_batch(r, b);
    double took = bench_now() - t0;
    jpt_batch_free(b);
    return took;
}

/* The spawns of `n` handles h0.. as one batch; seconds per spawn. */
static double spawn_batch(jpt_registry *r, int n)
{
    char *calls = bench_action_calls("job", "spawn", "c", n);
    double took = run_calls(r, calls);
    free(calls);
    return took / n;
}

/* {"all": ["h0", …], "timeout_secs": 0} as one await call. */
static char *await_call(int n)
{
    size_t cap = (size_t)n * 12 + 128;
    char *text = malloc(cap);
    size_t len;

    if (text == NULL)
        exit(1);
    len = (size_t)snprintf(text, cap, "[{\"id\":\"w\",\"name\":\"await\",\"arguments\":"
                                      "{\"timeout_secs\":0,\"all\":[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len, "%s\"h%d\"", i ? "," : "", i);
    snprintf(text + len, cap - len, "]}}]");
    return text;
}

typedef struct figures {
    double spawn_per_item, await_per_item;
    double spawn_dispatch, await_dispatch; /* the longest of each */
} figures;

static figures measure(int spawns, int awaited, int rounds)
{
    double *spawn = calloc((size_t)rounds, sizeof(double));
    double *wait = calloc((size_t)rounds, sizeof(double));
    figures f = {0, 0, 0, 0};
    double spawn_dispatch = 0, await_dispatch = 0;

    if (spawn == NULL || wait == NULL)
        exit(1);
    for (int i = 0; i < rounds; i++) {
        jpt_registry *r = new_registry();
        max_dispatch = 0;
        spawn[i] = spawn_batch(r, spawns);
        if (max_dispatch > spawn_dispatch)
            spawn_dispatch = max_dispatch;
        jpt_registry_free(r);

        r = new_registry();
        spawn_batch(r, awaited);
        char *calls = await_call(awaited);
        max_dispatch = 0;
        wait[i] = run_calls(r, calls) / awaited;
        if (max_dispatch > await_dispatch)
            await_dispatch = max_dispatch;
        free(calls);
        jpt_registry_free(r);
    }
    f.spawn_per_item = bench_median(spawn, rounds);
    f.await_per_item = bench_median(wait, rounds);
    f.spawn_dispatch = spawn_dispatch;
    f.await_dispatch = await_dispatch;
    free(spawn);
    free(wait);
    return f;
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int rounds = quick ? 1 : 5;

    figures small = measure(1000, 3000, rounds);
    figures large = measure(10000, 30000, rounds);

    printf("spawn batch: %.2f us per spawn at 10000 (ratio %.2f vs 1000, target <= 2)\n",
           large.spawn_per_item * 1e6, large.spawn_per_item / small.spawn_per_item);
    printf("await ids: %.2f us per id at 30000 (ratio %.2f vs 3000, target <= 2)\n",
           large.await_per_item * 1e6, large.await_per_item / small.await_per_item);
    printf("longest dispatch, spawns: %.2f ms at 10000 (ratio %.2f vs the 2 ms budget, "
           "target <= 2.5)\n",
           large.spawn_dispatch * 1e3, large.spawn_dispatch / 2e-3);
    printf("longest dispatch, await: %.2f ms at 30000 ids (ratio %.2f vs the 2 ms budget, "
           "target <= 2.5)\n",
           large.await_dispatch * 1e3, large.await_dispatch / 2e-3);
    return 0;
}
