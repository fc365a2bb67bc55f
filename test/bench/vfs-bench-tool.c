/* vfs-bench-tool: the VFS tool bench-vfs runs through a real jpt_vfs_host.
 * Built on the SDK (include/jptool/vfs_tool.h), it times its own requests
 * and ends with a result text "seconds=<s> matches=<n>", which bench-vfs
 * reads. Its init arguments say what to do:
 *
 *   {"scenario":"read", "path", "count", "size", "sum"}
 *       `count` sequential fs.read of `path`, each checked for `size`
 *       bytes (and the first for the FNV-1a checksum `sum`);
 *   {"scenario":"pipeline", "method":"fs.read"|"fs.metadata", "prefix",
 *    "files", "count", "window", "size"}
 *       `count` requests on "<prefix><i % files>.txt", at most `window`
 *       outstanding, collected oldest first; reads checked for `size`
 *       bytes, metadata for kind file and `size`;
 *   {"scenario":"write", "from", "path", "count", "size"}
 *       reads `from` (untimed), then `count` fs.write of it to `path`;
 *   {"scenario":"grep", "pattern", "case_insensitive"}
 *       one fs.grep of the whole root with no cap on matches; `matches`
 *       is the number of matching lines in its result.
 *
 * Any failure ends the tool with an error notification saying what failed
 * (and exit status 1). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <jptool/vfs_tool.h>

#include "bench-util.h"

static jpt_vfs_tool *t;

_Noreturn static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

_Noreturn static void fail(const char *fmt, ...)
{
    char message[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    fprintf(stderr, "vfs-bench-tool: %s\n", message);
    if (t != NULL)
        jpt_vfs_tool_error(t, message, NULL, 0, 0);
    jpt_vfs_tool_free(t);
    exit(1);
}

/* The SDK call returned `rc`: fails unless JPT_OK. */
static void ok(int rc, const char *what, const char *path)
{
    if (rc != JPT_OK)
        fail("%s '%s': %s: %s", what, path, jpt_status_name(rc), jpt_vfs_tool_errmsg(t));
}

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 14695981039346656037u;

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211u;
    return h;
}

static json_t *args;

static const char *arg_string(const char *name)
{
    const char *v = json_string_value(json_object_get(args, name));

    if (v == NULL)
        fail("argument '%s' is missing or not a string", name);
    return v;
}

static long arg_long(const char *name)
{
    json_t *v = json_object_get(args, name);

    if (!json_is_integer(v) || json_integer_value(v) < 0)
        fail("argument '%s' is missing or not a non-negative integer", name);
    return (long)json_integer_value(v);
}

static void check_size(const char *path, size_t got, size_t want)
{
    if (got != want)
        fail("fs.read '%s': %zu bytes, not %zu", path, got, want);
}

static double scenario_read(void)
{
    const char *path = arg_string("path");
    long count = arg_long("count");
    size_t size = (size_t)arg_long("size");
    uint64_t sum = strtoull(arg_string("sum"), NULL, 16);
    double start = bench_now();

    for (long i = 0; i < count; i++) {
        char *data = NULL;
        size_t len = 0;
        ok(jpt_vfs_tool_read(t, path, &data, &len), "fs.read", path);
        check_size(path, len, size);
        if (i == 0 && fnv1a(data, len) != sum)
            fail("fs.read '%s': not the content the host wrote", path);
        jpt_free(data);
    }
    return bench_now() - start;
}

/* The fs.metadata result of a regular file of `size` bytes. */
static void check_metadata(const char *path, const char *result, size_t size)
{
    json_t *r = json_loads(result, 0, NULL);
    const char *kind = json_string_value(json_object_get(r, "kind"));
    json_int_t got = json_integer_value(json_object_get(r, "size"));

    if (kind == NULL || strcmp(kind, "file") != 0 || got != (json_int_t)size)
        fail("fs.metadata '%s': unexpected result %s", path, result);
    json_decref(r);
}

static double scenario_pipeline(void)
{
    const char *method = arg_string("method"), *prefix = arg_string("prefix");
    long files = arg_long("files"), count = arg_long("count"), window = arg_long("window");
    size_t size = (size_t)arg_long("size");
    int reads = strcmp(method, "fs.read") == 0;
    uint64_t *ids = calloc((size_t)count, sizeof(*ids));
    char path[512], params[640];
    long sent = 0, done = 0;

    if (ids == NULL)
        fail("out of memory");
    if (!reads && strcmp(method, "fs.metadata") != 0)
        fail("unknown method '%s'", method);
    if (files <= 0 || window <= 0)
        fail("files and window must be positive");
    double start = bench_now();
    while (done < count) {
        while (sent < count && sent - done < window) {
            snprintf(path, sizeof(path), "%s%03ld.txt", prefix, sent % files);
            if (reads)
                ok(jpt_vfs_tool_submit_read(t, path, &ids[sent]), "submit fs.read", path);
            else {
                snprintf(params, sizeof(params), "{\"path\":\"%s\"}", path);
                ok(jpt_vfs_tool_submit(t, method, params, &ids[sent]), "submit", path);
            }
            sent++;
        }
        snprintf(path, sizeof(path), "%s%03ld.txt", prefix, done % files);
        char *out = NULL;
        size_t len = 0;
        if (reads) {
            ok(jpt_vfs_tool_collect_read(t, ids[done], &out, &len), "collect fs.read", path);
            check_size(path, len, size);
        } else {
            ok(jpt_vfs_tool_collect(t, ids[done], &out), "collect fs.metadata", path);
            if (done < files)
                check_metadata(path, out, size);
        }
        jpt_free(out);
        done++;
    }
    double seconds = bench_now() - start;
    free(ids);
    return seconds;
}

static double scenario_write(void)
{
    const char *from = arg_string("from"), *path = arg_string("path");
    long count = arg_long("count");
    size_t size = (size_t)arg_long("size");
    char *data = NULL;
    size_t len = 0;

    ok(jpt_vfs_tool_read(t, from, &data, &len), "fs.read", from);
    check_size(from, len, size);
    double start = bench_now();
    for (long i = 0; i < count; i++)
        ok(jpt_vfs_tool_write(t, path, data, len), "fs.write", path);
    double seconds = bench_now() - start;
    jpt_free(data);
    return seconds;
}

static double scenario_grep(long *matches)
{
    jpt_vfs_grep_query q = {
        .size = sizeof(q),
        .pattern = arg_string("pattern"),
        .case_insensitive = json_is_true(json_object_get(args, "case_insensitive")),
        .max_matches = UINT64_MAX >> 1,
    };
    char *result = NULL;
    static const char key[] = "\"is_match\":true";

    double start = bench_now();
    ok(jpt_vfs_tool_grep(t, &q, &result), "fs.grep", q.pattern);
    double seconds = bench_now() - start;
    /* Content is a JSON string, whose quotes are escaped: the key is only
     * ever a key. */
    for (const char *p = result; (p = strstr(p, key)) != NULL; p += sizeof(key) - 1)
        ++*matches;
    if (strstr(result, "\"truncated\":true") != NULL)
        fail("fs.grep '%s': the result was truncated", q.pattern);
    jpt_free(result);
    return seconds;
}

int main(void)
{
    char report[128];
    long matches = 0;
    double seconds;

    if (jpt_vfs_tool_connect(&t) != JPT_OK)
        fail("connecting: %s", t != NULL ? jpt_vfs_tool_errmsg(t) : "out of memory");
    args = json_loads(jpt_vfs_tool_arguments(t), 0, NULL);
    const char *scenario = arg_string("scenario");
    if (strcmp(scenario, "read") == 0)
        seconds = scenario_read();
    else if (strcmp(scenario, "pipeline") == 0)
        seconds = scenario_pipeline();
    else if (strcmp(scenario, "write") == 0)
        seconds = scenario_write();
    else if (strcmp(scenario, "grep") == 0)
        seconds = scenario_grep(&matches);
    else
        fail("unknown scenario '%s'", scenario);
    snprintf(report, sizeof(report), "seconds=%.9f matches=%ld", seconds, matches);
    json_decref(args);
    int rc = jpt_vfs_tool_result_text(t, report);
    jpt_vfs_tool_free(t);
    return rc == JPT_OK ? 0 : 1;
}
