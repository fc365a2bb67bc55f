/* The calls between lib/'s files for one action, recorded with
 * -finstrument-functions (count.py maps them to files):
 *   trace-hops spawn         one stateful spawn, from submit to the
 *                            batch's result (issue 8)
 *   trace-hops fs.read N     N fs.read of a 4 KiB file by a VFS tool
 *   trace-hops http.get N    N http.get of a loopback server (keep-alive;
 *                            test/bench/http-server.c, bench-http's)
 * For the VFS tool (test/tools/vfs-probe, path in $TRACE_TOOL) only the
 * host's jpt_vfs_host_run is recorded; count.py subtracts a run of 1 from
 * a run of N, so what one request costs is left (issue 17, "Done").
 * Built without -finstrument-functions, the same program is a driver for
 * callgrind (--toggle-collect=jpt_vfs_host_run, TRACE_SANDBOX=off). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jptool/jptool.h>

#include "http-server.h"

static FILE *out;
static int on;

void __cyg_profile_func_enter(void *fn, void *site) __attribute__((no_instrument_function));
void __cyg_profile_func_enter(void *fn, void *site)
{
    if (on && out != NULL)
        fprintf(out, "%p %p\n", fn, site);
}
void __cyg_profile_func_exit(void *fn, void *site) __attribute__((no_instrument_function));
void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn;
    (void)site;
}

static int fail(const char *what)
{
    fprintf(stderr, "trace-hops: %s\n", what);
    return 1;
}

static int spawn(void)
{
    jpt_registry *r;
    jpt_batch *b;
    char *res;

    if (jpt_registry_new(NULL, &r) < 0)
        return fail("jpt_registry_new");
    jpt_registry_load_tools(r, "{\"tools\":[{\"name\":\"t\",\"stateful\":true,\"command\":[\"sh\",\"-c\",\"echo hi\"]}]}", 0);
    on = 1;
    jpt_registry_submit(r, "[{\"id\":\"c\",\"name\":\"t\",\"arguments\":{\"action\":\"spawn\",\"id\":\"h\",\"wait_secs\":5}}]", &b);
    jpt_registry_wait(r, b, 10000);
    jpt_batch_results_json(b, &res);
    on = 0;
    puts(res);
    jpt_free(res);
    jpt_batch_free(b);
    jpt_registry_free(r);
    return 0;
}

/* ---- A VFS tool's requests ------------------------------------------------------ */

static int vfs(const char *method, int count)
{
    char root[] = "/tmp/trace-hops-XXXXXX", path[64], tool[512], sandbox[256];
    const char *argv[] = {getenv("TRACE_TOOL"), NULL};
    jpt_vfs_host *h = NULL;
    jpt_state *st = NULL;
    char *text = NULL, data[4096];
    int rc = 1;

    if (argv[0] == NULL || mkdtemp(root) == NULL)
        return fail("no $TRACE_TOOL, or no temporary directory");
    snprintf(path, sizeof(path), "%s/f.txt", root);
    FILE *f = fopen(path, "w");
    memset(data, 'a', sizeof(data));
    if (f == NULL || fwrite(data, 1, sizeof(data), f) != sizeof(data) || fclose(f) != 0)
        return fail("cannot write the file to read");
    sandbox[0] = '\0';
    if (strcmp(method, "http.get") == 0) {
        int port = bench_http_server_start();
        if (port < 0)
            return fail("cannot start the server");
        snprintf(tool, sizeof(tool),
                 "{\"name\":\"t\",\"arguments\":{\"repeat\":{\"method\":\"http.get\","
                 "\"params\":{\"url\":\"http://127.0.0.1:%d/x\"},\"count\":%d}}}",
                 port, count);
        snprintf(sandbox, sizeof(sandbox),
                 "{\"network\":{\"allow\":[\"http://127.0.0.1:%d/\"]}}", port);
    } else
        snprintf(tool, sizeof(tool),
                 "{\"name\":\"t\",\"arguments\":{\"repeat\":{\"method\":\"fs.read\","
                 "\"params\":{\"path\":\"f.txt\"},\"count\":%d}}}",
                 count);
    /* TRACE_SANDBOX=off: for a run under valgrind, which hides what the
     * OS sandbox needs (callgrind counts the host's instructions). */
    const char *mode = getenv("TRACE_SANDBOX");
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root,
                              .sandbox_json = sandbox[0] != '\0' ? sandbox : NULL,
                              .sandbox_mode = mode != NULL && strcmp(mode, "off") == 0
                                                  ? JPT_SANDBOX_OFF
                                                  : JPT_SANDBOX_DEFAULT};
    if (jpt_vfs_host_new(&o, &h) != JPT_OK || jpt_vfs_host_spawn(h, argv, tool) != JPT_OK) {
        fail(h != NULL ? jpt_vfs_host_errmsg(h) : "jpt_vfs_host_new");
        goto out;
    }
    on = 1;
    int run = jpt_vfs_host_run(h, 60000);
    on = 0;
    if (run != JPT_OK || jpt_vfs_host_state(h, &st) != JPT_OK ||
        jpt_state_render(st, NULL, &text) != JPT_OK) {
        fail("the tool did not end well");
        goto out;
    }
    printf("%s\n", text);
    rc = strstr(text, " ok ") != NULL && strstr(text, " err ") == NULL ? 0 : 1;
out:
    jpt_free(text);
    jpt_state_unref(st);
    jpt_vfs_host_free(h);
    unlink(path);
    rmdir(root);
    return rc;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "spawn";

    out = fopen(getenv("TRACE_OUT") != NULL ? getenv("TRACE_OUT") : "trace.txt", "w");
    if (out == NULL)
        return fail("cannot open the trace file");
    int rc = strcmp(what, "spawn") == 0
                 ? spawn()
                 : vfs(what, argc > 2 ? atoi(argv[2]) : 1);
    fclose(out);
    return rc;
}
