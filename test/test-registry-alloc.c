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
#include <sys/stat.h>
#include <unistd.h>

#include "registry-util.h"
#include "test-files-util.h"

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

/* A run of a host's path with `o` and the tools and calls given; JPT_OK
 * with the results in `*out` (free()), or the status of the step that
 * failed. A batch that completes with a call that ran out of memory is
 * JPT_ERR_NOMEM too: the failure was met and answered. */
static int run_path(const jpt_registry_options *o, const char *tools, const char *calls,
                    char **out)
{
    jpt_registry *r = NULL;
    jpt_batch *b = NULL;
    char *results = NULL;
    int rc;

    *out = NULL;
    if ((rc = jpt_registry_new(o, &r)) < 0)
        return rc;
    if ((rc = jpt_registry_load_tools(r, tools, 0)) == JPT_OK &&
        (rc = jpt_registry_submit(r, calls, &b)) == JPT_OK) {
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

static int host_path(char **out)
{
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 200, .drain_ms = 20,
                              .containment = JPT_CONTAIN_SESSION};

    return run_path(&o, host_tools, host_calls, out);
}

static bool same_json(const char *a, const char *b)
{
    json_t *ja = json_loads(a, 0, NULL), *jb = json_loads(b, 0, NULL);
    bool same = ja != NULL && jb != NULL && json_equal(ja, jb);

    json_decref(ja);
    json_decref(jb);
    return same;
}

/* Runs `run` with allocation N failing, for each N the run makes: every
 * allocation from N on (`once` false), or only N, the ones after it
 * succeeding (`once`), what a program that recovers meets. A run must
 * give the unhindered results exactly, or say that memory ran out
 * (JPT_ERR_NOMEM from a step, or "out of memory" in a result): never a
 * result with something silently missing, never a leak. Under valgrind
 * (JPT_TEST_SLOWDOWN) every run costs seconds: about forty N spread over
 * the run are tried there, each of them in the other builds. */
static void sweep(const char *what, int (*run)(char **out), bool once)
{
    char *expected = NULL;
    long step = 1, total;

    tu_fail_at(0);
    assert_int_equal(run(&expected), JPT_OK);
    total = tu_allocations();
    if (getenv("JPT_TEST_SLOWDOWN") != NULL)
        step = total / 40 > 1 ? total / 40 : 1;
    for (long n = 1;; n += step) {
        long before = tu_live_blocks();
        char *got = NULL;
        if (once)
            tu_fail_only(n);
        else
            tu_fail_at(n);
        int rc = run(&got);
        long made = tu_allocations();
        tu_fail_at(0);
        if (tu_live_blocks() != before) {
            tu_print_first_failure();
            fail_msg("%s: %ld block(s) leaked with allocation %ld failing", what,
                     tu_live_blocks() - before, n);
        }
        if (rc == JPT_OK && !same_json(got, expected)) {
            tu_print_first_failure();
            fail_msg("%s: allocation %ld failing changed the results silently:\n%s\n"
                     "instead of\n%s",
                     what, n, got, expected);
        } else if (rc != JPT_OK && rc != JPT_ERR_NOMEM) {
            tu_print_first_failure();
            fail_msg("%s: allocation %ld failing gave %s", what, n, jpt_status_name(rc));
        }
        free(got);
        if (made < n || (!once && rc == JPT_OK)) {
            print_message("%s: %ld allocations, %s failed in turn (every %ld)\n", what,
                          total, once ? "each alone" : "each and those after it", step);
            break;
        }
    }
    free(expected);
}

static void the_host_path_survives_every_allocation_failure(void **state)
{
    (void)state;
    sweep("the host's path", host_path, false);
}

static void the_host_path_survives_each_single_allocation_failure(void **state)
{
    (void)state;
    sweep("the host's path", host_path, true);
}

/* ---- A VFS tool's session through the registry ------------------------------------ */

static char vfs_root[64];

/* A fresh workspace for each run: what one run wrote is not the next's. */
static void make_vfs_root(void)
{
    char path[128];

    fu_rmtree(vfs_root);
    assert_int_equal(mkdir(vfs_root, 0755), 0);
    snprintf(path, sizeof(path), "%s/hello.txt", vfs_root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("hello\n", f);
    fclose(f);
}

static const char vfs_tools[] =
    "{\"tools\":[{\"name\":\"probe\",\"runtime\":\"vfs\",\"stateful\":true,"
    "\"settle_ms\":1,\"command\":[\"" TOOL("vfs-probe") "\"],"
    "\"parameters\":{\"type\":\"object\"},"
    "\"sandbox\":{\"filesystem\":{\"writable\":[\"out/\"]}}}]}";

/* A one-shot session of file requests, and a stateful one: spawned, a
 * read applied, stopped. Each apply waits for the tool's next state
 * (wait_secs), so that the results do not depend on timing. */
static const char vfs_calls[] =
    "[{\"id\":\"c1\",\"name\":\"probe\",\"arguments\":{\"ops\":["
    "{\"method\":\"fs.write\",\"params\":{\"path\":\"out/a.txt\",\"content\":\"hi\"}},"
    "{\"method\":\"fs.read\",\"params\":{\"path\":\"out/a.txt\"}},"
    "{\"method\":\"fs.exists\",\"params\":{\"path\":\"hello.txt\"}},"
    "{\"method\":\"fs.list_dir\",\"params\":{\"path\":\"out\"}},"
    "{\"method\":\"fs.read\",\"params\":{\"path\":\"missing\"}},"
    "{\"method\":\"fs.delete\",\"params\":{\"path\":\"out/a.txt\"}}]}},"
    "{\"id\":\"c2\",\"name\":\"probe\",\"arguments\":{\"action\":\"spawn\",\"id\":\"v1\","
    "\"stateful\":true,\"wait_secs\":30}},"
    "{\"id\":\"c3\",\"name\":\"probe\",\"arguments\":{\"action\":\"apply\",\"id\":\"v1\","
    "\"input\":\"read hello.txt\",\"wait_secs\":30}},"
    "{\"id\":\"c4\",\"name\":\"probe\",\"arguments\":{\"action\":\"apply\",\"id\":\"v1\","
    "\"input\":\"stop\",\"wait_secs\":30}}]";

static int vfs_path(char **out)
{
    jpt_registry_options o = {sizeof(o), .root = vfs_root, .kill_grace_ms = 200,
                              .containment = JPT_CONTAIN_SESSION,
                              .sandbox_mode = tu_sandbox_mode()};

    make_vfs_root();
    return run_path(&o, vfs_tools, vfs_calls, out);
}

static void a_vfs_session_survives_every_allocation_failure(void **state)
{
    (void)state;
    sweep("a VFS tool's session", vfs_path, false);
}

static void a_vfs_session_survives_each_single_allocation_failure(void **state)
{
    (void)state;
    sweep("a VFS tool's session", vfs_path, true);
}

static int setup(void **state)
{
    (void)state;
    snprintf(vfs_root, sizeof(vfs_root), "/tmp/jpt-registry-alloc-%d", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fu_rmtree(vfs_root);
    return 0;
}

/* JPT_TEST_SWEEP_LOG set: the library's log on stderr, to see where a run
 * that hangs stands. */
static void log_line(int level, const char *line, void *ud)
{
    (void)ud;
    fprintf(stderr, "LOG %d: %s\n", level, line);
}

int main(void)
{
    tu_install_counting_allocator();
    if (getenv("JPT_TEST_SWEEP_LOG"))
        jpt_set_log(log_line, NULL, JPT_LOG_DEBUG);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_host_path_survives_every_allocation_failure),
        cmocka_unit_test(the_host_path_survives_each_single_allocation_failure),
        cmocka_unit_test_setup_teardown(a_vfs_session_survives_every_allocation_failure, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_vfs_session_survives_each_single_allocation_failure,
                                        setup, teardown),
    };
    return TU_RUN(tests);
}
