/* libjptool-tool, the tool side's own library, as a tool outside this tree
 * uses it: test/tools/vfs-read links the shared libjptool-tool of the
 * build tree, and this suite links the shared libjptool (not the private
 * objects the other suites link), so the registry runs it as an
 * application would. A tool of a build tree or /opt loads its library
 * from there: the OS sandbox must let it read the libjptool-tool beside
 * the host's libjptool (lib/sandbox), or it cannot even start. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <jptool/jptool.h>

#ifndef JPT_TEST_TOOLS
#error "JPT_TEST_TOOLS must name the test tools' directory"
#endif
#define VFS_READ JPT_TEST_TOOLS "/vfs-read"

#define TEXT "the file's text\n"

static char root[64];

static int setup(void **state)
{
    char path[128];

    (void)state;
    snprintf(root, sizeof(root), "/tmp/jpt-tool-lib-XXXXXX");
    if (mkdtemp(root) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/file.txt", root);
    FILE *f = fopen(path, "we");
    if (f == NULL)
        return -1;
    fputs(TEXT, f);
    return fclose(f) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    char path[128];

    (void)state;
    snprintf(path, sizeof(path), "%s/file.txt", root);
    unlink(path);
    return rmdir(root);
}

/* A registry over the workspace with vfs-read in OS sandbox `mode`. */
static jpt_registry *registry(const char *mode)
{
    jpt_registry_options o = {sizeof(o), .root = root};
    jpt_registry *r = NULL;
    char config[1024];

    snprintf(config, sizeof(config),
             "{\"tools\":[{\"name\":\"read\",\"runtime\":\"vfs\",\"command\":[\"%s\","
             "\"file.txt\"],\"sandbox\":{\"filesystem\":{\"allow\":[\".\"]}},"
             "\"os_sandbox\":{\"mode\":\"%s\"}}]}",
             VFS_READ, mode);
    assert_int_equal(jpt_registry_new(&o, &r), JPT_OK);
    if (jpt_registry_load_tools(r, config, 0) != JPT_OK)
        fail_msg("%s", jpt_registry_errmsg(r));
    return r;
}

/* One call of the tool: its result text, which must not be an error. */
static void call_reads_the_file(jpt_registry *r)
{
    jpt_batch *b = NULL;
    char *results = NULL;

    assert_int_equal(
        jpt_registry_submit(r, "[{\"id\":\"c\",\"name\":\"read\",\"arguments\":{}}]", &b),
        JPT_OK);
    assert_int_equal(jpt_registry_wait(r, b, 60000), JPT_OK);
    assert_int_equal(jpt_batch_results_json(b, &results), JPT_OK);
    if (strstr(results, "\"is_error\":true") != NULL || strstr(results, "the file's text") == NULL)
        fail_msg("the tool did not answer with the file: %s", results);
    jpt_free(results);
    jpt_batch_free(b);
}

static void no_child_left(void)
{
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void a_tool_on_libjptool_tool_reads_through_the_registry(void **state)
{
    (void)state;
    jpt_registry *r = registry("off");
    call_reads_the_file(r);
    jpt_registry_free(r);
    no_child_left();
}

/* Where the sandbox confines files (not under valgrind, which does not
 * pass Landlock's calls through), the tool's library is outside every
 * system directory it grants: in this build tree. */
static void the_os_sandbox_lets_a_tool_load_libjptool_tool_beside_the_hosts_library(void **state)
{
    unsigned enforced = 0;
    char *report = NULL;

    (void)state;
    jpt_registry *r = registry("best-effort");
    assert_int_equal(jpt_registry_tool_sandbox(r, "read", &enforced, &report), JPT_OK);
    jpt_free(report);
    if (!(enforced & JPT_SANDBOX_ENFORCED_FILES)) {
        jpt_registry_free(r);
        skip();
    }
    call_reads_the_file(r);
    jpt_registry_free(r);
    no_child_left();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_tool_on_libjptool_tool_reads_through_the_registry,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            the_os_sandbox_lets_a_tool_load_libjptool_tool_beside_the_hosts_library, setup,
            teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
