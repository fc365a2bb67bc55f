/* Allocation failure over a host's whole path (issue 18): the allocator
 * fails the Nth allocation and every one after it, for N = 1, 2, … until
 * the run succeeds, as the state, files and engine suites do with theirs.
 * Each run goes registry_new → load_tools → submit (a one-shot call, a
 * stateful spawn and an await of it) → wait → results → free. Whatever
 * fails must fail cleanly: a step returns JPT_ERR_NOMEM, or the batch
 * completes with every call answered (an error where memory ran out),
 * never a batch that waits forever; nothing leaks, no fd, no child. */
#include <stdlib.h>
#include <string.h>

#include "registry-util.h"

/* How long one run may wait for its batch: a run that takes this long has
 * hung (a lost completion), whatever the machine's load. */
#define SWEEP_WAIT_MS 20000

static const char host_tools[] =
    "{\"tools\":["
    "{\"name\":\"say\",\"command\":[\"" TOOL("sleep-ms") "\",\"0\",\"{{arguments.text}}\"]},"
    "{\"name\":\"job\",\"stateful\":true,\"settle_ms\":10000,\"yield_ms\":20000,"
    "\"command\":[\"sh\",\"-c\",\"echo {{arguments.text}}\"],"
    "\"env\":{\"inherit\":false,\"allow\":[\"TERM\"],\"set\":{\"JOB\":\"1\"}}}"
    "]}";

/* The one-shot call, a spawn, and an await of the spawn's handle, which
 * ends by itself: the spawn answers once it has (its settle time is far
 * longer than `echo` takes), and the await with it, so that the results do
 * not depend on timing. */
static const char host_calls[] =
    "[{\"id\":\"c1\",\"name\":\"say\",\"arguments\":{\"text\":\"hello\"}},"
    "{\"id\":\"c2\",\"name\":\"job\",\"arguments\":{\"action\":\"spawn\",\"id\":\"h1\","
    "\"text\":\"hi\"}},"
    "{\"id\":\"c3\",\"name\":\"await\",\"arguments\":{\"all\":[\"h1\"]}}]";

/* A run of the host's path; JPT_OK with the results in `*out` (free()),
 * or the status of the step that failed. A batch that completes with a
 * call that ran out of memory is JPT_ERR_NOMEM too: the failure was met
 * and answered. */
static int host_path(char **out)
{
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 200, .drain_ms = 20,
                              .containment = JPT_CONTAIN_SESSION};
    jpt_registry *r = NULL;
    jpt_batch *b = NULL;
    char *results = NULL;
    int rc;

    *out = NULL;
    if ((rc = jpt_registry_new(&o, &r)) < 0)
        return rc;
    if ((rc = jpt_registry_load_tools(r, host_tools, 0)) == JPT_OK &&
        (rc = jpt_registry_submit(r, host_calls, &b)) == JPT_OK) {
        rc = jpt_registry_wait(r, b, SWEEP_WAIT_MS);
        if (rc == JPT_ERR_TIMEOUT) {
            char *pending = NULL;
            tu_print_first_failure();
            tu_fail_at(0);
            jpt_batch_results_json(b, &pending);
            fail_msg("the batch never completed: %s", pending);
        }
        if (rc == JPT_OK)
            rc = jpt_batch_results_json(b, &results);
    }
    jpt_batch_free(b);
    jpt_registry_free(r);
    if (rc == JPT_OK && strstr(results, "out of memory") != NULL)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK)
        *out = strdup(results);
    jpt_free(results);
    return rc;
}

static int host_path_op(void *ctx)
{
    const char *expected = ctx;
    char *got = NULL;
    int rc = host_path(&got);

    if (rc == JPT_OK) {
        tu_fail_at(0); /* the comparison allocates too */
        tu_assert_json_equal(got, expected);
        free(got);
    }
    return rc;
}

static void the_host_path_survives_every_allocation_failure(void **state)
{
    char *expected = NULL;

    (void)state;
    assert_int_equal(host_path(&expected), JPT_OK);
    print_message("the host's path: %s\n", expected);
    tu_sweep("the host's path", host_path_op, expected);
    free(expected);
}

static bool same_json(const char *a, const char *b)
{
    json_t *ja = json_loads(a, 0, NULL), *jb = json_loads(b, 0, NULL);
    bool same = ja != NULL && jb != NULL && json_equal(ja, jb);

    json_decref(ja);
    json_decref(jb);
    return same;
}

/* The same path with only allocation N failing, the ones after it
 * succeeding, for every N the run makes: a run that recovers must give
 * the unhindered results exactly, or say where memory ran out; never a
 * result with something silently missing. */
static void sweep_single_failures(const char *what, int (*run)(char **out), const char *expected)
{
    for (long n = 1;; n++) {
        long before = tu_live_blocks();
        char *got = NULL;
        tu_fail_only(n);
        int rc = run(&got);
        long made = tu_allocations();
        tu_fail_at(0);
        if (tu_live_blocks() != before) {
            tu_print_first_failure();
            fail_msg("%s: %ld block(s) leaked with only allocation %ld failing", what,
                     tu_live_blocks() - before, n);
        }
        if (rc == JPT_OK && !same_json(got, expected)) {
            tu_print_first_failure();
            fail_msg("%s: only allocation %ld failing changed the results silently:\n%s\n"
                     "instead of\n%s",
                     what, n, got, expected);
        } else if (rc != JPT_OK && rc != JPT_ERR_NOMEM)
            fail_msg("%s: only allocation %ld failing gave %s", what, n, jpt_status_name(rc));
        free(got);
        if (made < n) {
            print_message("%s: %ld allocations, each failed in turn\n", what, n - 1);
            return; /* the run made fewer: every one has failed once */
        }
    }
}

static void the_host_path_survives_each_single_allocation_failure(void **state)
{
    char *expected = NULL;

    (void)state;
    assert_int_equal(host_path(&expected), JPT_OK);
    sweep_single_failures("the host's path", host_path, expected);
    free(expected);
}

int main(void)
{
    tu_install_counting_allocator();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_host_path_survives_every_allocation_failure),
        cmocka_unit_test(the_host_path_survives_each_single_allocation_failure),
    };
    return TU_RUN(tests);
}
