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

static int host_path(char **out)
{
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 200, .drain_ms = 20,
                              .containment = JPT_CONTAIN_SESSION};

    return ru_run_path(&o, host_tools, host_calls, out);
}

static void the_host_path_survives_every_allocation_failure(void **state)
{
    (void)state;
    ru_sweep("the host's path", host_path, false);
}

static void the_host_path_survives_each_single_allocation_failure(void **state)
{
    (void)state;
    ru_sweep("the host's path", host_path, true);
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
    return ru_run_path(&o, vfs_tools, vfs_calls, out);
}

static void a_vfs_session_survives_every_allocation_failure(void **state)
{
    (void)state;
    ru_sweep("a VFS tool's session", vfs_path, false);
}

static void a_vfs_session_survives_each_single_allocation_failure(void **state)
{
    (void)state;
    ru_sweep("a VFS tool's session", vfs_path, true);
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

int main(void)
{
    tu_install_counting_allocator();

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
