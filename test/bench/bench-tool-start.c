/* bench-tool-start: what one call of a VFS tool costs through the registry
 * from start to end — spawn, init, one fs.read of a 4 KiB file, the
 * result, exit — against a stdio tool that `cat`s the same file (issue 17
 * §3), measured the same way in the same run (TESTING.md, "Benchmarks"):
 *
 *   - test/tools/vfs-read, linked to libjptool-tool, the tool side alone
 *     (libc only): the target is at most 1.3 times the cat tool's time;
 *   - the same program linked to libjptool, which loads every library the
 *     host needs (libcurl and its TLS stack, pcre2, libseccomp, jansson):
 *     how tools were linked before the small library;
 *   - the example read_file tool (examples/vfs-tools, which numbers the
 *     lines), when the examples are built.
 *
 * Each comes twice, to compare like with like: unsandboxed (the VFS tools
 * with "os_sandbox": {"mode": "off"}, the stdio tool as it is by default)
 * and in the OS sandbox (the VFS tools' own profile, the stdio tool with
 * "sandbox": true; both best-effort, what each enforces is printed
 * first). The sandbox's own cost per call is printed for both runtimes.
 *
 * Every round calls each tool once, in an order that rotates; the medians
 * are compared. Exits 0 unless a call failed; a missed target is reported,
 * not failed.
 *
 * usage: bench-tool-start [--quick]   (--quick: fewer rounds) */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jptool/jptool.h>

#include "bench-util.h"

#ifndef JPT_BENCH_TOOL_SMALL
#error "JPT_BENCH_TOOL_SMALL must name vfs-read linked to libjptool-tool"
#endif
#ifndef JPT_BENCH_TOOL_FULL
#error "JPT_BENCH_TOOL_FULL must name vfs-read linked to libjptool"
#endif
/* JPT_BENCH_READ_FILE: the example read_file, when the examples are built. */

#define TARGET 1.3
#define FILE_SIZE 4096
#define WARMUP 20
#define MAX_TOOLS 8

typedef struct tool {
    const char *name;    /* in the registry */
    const char *what;    /* in the report */
    const char *args;    /* the call's arguments */
    double *samples;
} tool;

static char root[64];

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench-tool-start: %s: %s\n", what, why);
    exit(1);
}

/* The 4 KiB file both kinds of tool read: lines of text. */
static void make_root(void)
{
    char path[128], text[FILE_SIZE];

    snprintf(root, sizeof(root), "/tmp/jpt-bench-start-XXXXXX");
    if (mkdtemp(root) == NULL)
        die("mkdtemp", "cannot make the workspace");
    for (size_t i = 0; i < FILE_SIZE; i++)
        text[i] = (i + 1) % 64 == 0 ? '\n' : (char)('a' + i % 26);
    snprintf(path, sizeof(path), "%s/file.txt", root);
    FILE *f = fopen(path, "we");
    if (f == NULL || fwrite(text, 1, FILE_SIZE, f) != FILE_SIZE || fclose(f) != 0)
        die(path, "cannot write");
}

static void remove_root(void)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/file.txt", root);
    unlink(path);
    rmdir(root);
}

/* One call; its time in seconds. The result must be the file's text. */
static double time_call(jpt_registry *r, const tool *t)
{
    char calls[256];
    jpt_batch *b = NULL;
    char *results = NULL;

    snprintf(calls, sizeof(calls), "[{\"id\":\"c\",\"name\":\"%s\",\"arguments\":%s}]", t->name,
             t->args);
    double start = bench_now();
    if (jpt_registry_submit(r, calls, &b) != JPT_OK || jpt_registry_wait(r, b, 600000) != JPT_OK)
        die(t->name, jpt_registry_errmsg(r));
    double took = bench_now() - start;
    if (jpt_batch_results_json(b, &results) != JPT_OK)
        die(t->name, jpt_registry_errmsg(r));
    if (strstr(results, "\"is_error\":true") != NULL || strstr(results, "abcdefghijk") == NULL)
        die(t->name, results);
    jpt_free(results);
    jpt_batch_free(b);
    return took;
}

static void report_sandbox(jpt_registry *r, const char *name)
{
    unsigned enforced = 0;
    char *text = NULL;

    if (jpt_registry_tool_sandbox(r, name, &enforced, &text) != JPT_OK)
        die(name, jpt_registry_errmsg(r));
    printf("%s: %s\n", name, text);
    jpt_free(text);
}

/* The definition of a VFS tool running `program` with `arg`. */
static int add_vfs(char *out, size_t cap, const char *name, const char *program, const char *arg,
                   bool boxed)
{
    return snprintf(out, cap,
                    ",{\"name\":\"%s\",\"runtime\":\"vfs\",\"command\":[\"%s\"%s%s%s],"
                    "\"sandbox\":{\"filesystem\":{\"allow\":[\".\"]}},"
                    "\"os_sandbox\":{\"mode\":\"%s\"}}",
                    name, program, arg != NULL ? ",\"" : "", arg != NULL ? arg : "",
                    arg != NULL ? "\"" : "", boxed ? "best-effort" : "off");
}

static jpt_registry *make_registry(void)
{
    jpt_registry_options o = {sizeof(o), .root = root, .containment = JPT_CONTAIN_SESSION};
    jpt_registry *r = NULL;
    char config[4096];
    size_t n;

    n = (size_t)snprintf(config, sizeof(config),
                         "{\"tools\":[{\"name\":\"cat\",\"command\":[\"/bin/cat\",\"file.txt\"]},"
                         "{\"name\":\"cat-boxed\",\"command\":[\"/bin/cat\",\"file.txt\"],"
                         "\"sandbox\":true,\"os_sandbox\":{\"mode\":\"best-effort\"}}");
    n += (size_t)add_vfs(config + n, sizeof(config) - n, "small", JPT_BENCH_TOOL_SMALL,
                         "file.txt", false);
    n += (size_t)add_vfs(config + n, sizeof(config) - n, "small-boxed", JPT_BENCH_TOOL_SMALL,
                         "file.txt", true);
    n += (size_t)add_vfs(config + n, sizeof(config) - n, "full", JPT_BENCH_TOOL_FULL,
                         "file.txt", false);
    n += (size_t)add_vfs(config + n, sizeof(config) - n, "full-boxed", JPT_BENCH_TOOL_FULL,
                         "file.txt", true);
#ifdef JPT_BENCH_READ_FILE
    n += (size_t)add_vfs(config + n, sizeof(config) - n, "read_file", JPT_BENCH_READ_FILE, NULL,
                         false);
    n += (size_t)add_vfs(config + n, sizeof(config) - n, "read_file-boxed",
                         JPT_BENCH_READ_FILE, NULL, true);
#endif
    if (n + 3 > sizeof(config))
        die("the tool config", "too long");
    memcpy(config + n, "]}", 3);
    if (jpt_registry_new(&o, &r) != JPT_OK)
        die("jpt_registry_new", jpt_last_error());
    if (jpt_registry_load_tools(r, config, 0) != JPT_OK)
        die("jpt_registry_load_tools", jpt_registry_errmsg(r));
    return r;
}

static double median_of(const tool *t, int rounds)
{
    return bench_median(t->samples, rounds);
}

/* One line: `t` against the reference `ref`, with the target when given. */
static void compare(const char *side, const tool *t, const tool *ref, int rounds, bool target)
{
    double a = median_of(t, rounds), b = median_of(ref, rounds);

    printf("%s: %s: %.3f ms per call (ratio %.2f vs %s, %.3f ms)", side, t->what, a * 1e3, a / b,
           ref->what, b * 1e3);
    if (target)
        printf(", %s the target of %.2f", a / b <= TARGET ? "within" : "over", TARGET);
    printf("\n");
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 30 : 300;
    const char *file_args = "{\"path\":\"file.txt\"}";
    tool tools[MAX_TOOLS] = {
        {"cat", "stdio cat", "{}", NULL},
        {"small", "vfs tool on libjptool-tool", "{}", NULL},
        {"full", "vfs tool on libjptool", "{}", NULL},
        {"cat-boxed", "stdio cat", "{}", NULL},
        {"small-boxed", "vfs tool on libjptool-tool", "{}", NULL},
        {"full-boxed", "vfs tool on libjptool", "{}", NULL},
#ifdef JPT_BENCH_READ_FILE
        {"read_file", "example read_file", file_args, NULL},
        {"read_file-boxed", "example read_file", file_args, NULL},
#endif
    };
    size_t ntools = 0;

    (void)file_args;
    while (ntools < MAX_TOOLS && tools[ntools].name != NULL)
        ntools++;
    make_root();
    jpt_registry *r = make_registry();
    report_sandbox(r, "cat-boxed");
    report_sandbox(r, "small-boxed");
    for (size_t i = 0; i < ntools; i++)
        if ((tools[i].samples = calloc((size_t)rounds, sizeof(double))) == NULL)
            die("calloc", "out of memory");
    for (int i = 0; i < WARMUP; i++)
        for (size_t k = 0; k < ntools; k++)
            time_call(r, &tools[k]);
    for (int i = 0; i < rounds; i++)
        for (size_t k = 0; k < ntools; k++) {
            tool *t = &tools[(k + (size_t)i) % ntools];
            t->samples[i] = time_call(r, t);
        }

    for (int boxed = 0; boxed < 2; boxed++) {
        const char *side = boxed ? "sandboxed" : "unsandboxed";
        const tool *cat = &tools[boxed ? 3 : 0];
        printf("%s: stdio cat of the 4 KiB file: %.3f ms per call\n", side,
               median_of(cat, rounds) * 1e3);
        compare(side, &tools[boxed ? 4 : 1], cat, rounds, true);
        compare(side, &tools[boxed ? 5 : 2], cat, rounds, false);
        if (ntools > 6)
            compare(side, &tools[boxed ? 7 : 6], cat, rounds, false);
    }
    printf("the OS sandbox's cost per call: stdio cat +%.3f ms, vfs tool on libjptool-tool "
           "+%.3f ms\n",
           (median_of(&tools[3], rounds) - median_of(&tools[0], rounds)) * 1e3,
           (median_of(&tools[4], rounds) - median_of(&tools[1], rounds)) * 1e3);
    for (size_t i = 0; i < ntools; i++)
        free(tools[i].samples);
    jpt_registry_free(r);
    remove_root();
    return 0;
}
