/* vfs-tool: a VFS tool built on the SDK (include/jptool/vfs_tool.h) for
 * test-vfs-tool. Its init arguments name a script, {"script": "files"};
 * each script calls the SDK and reports what it saw, one line per step, as
 * its result text, which the test compares with what it served.
 *
 *   init       echoes the initial context
 *   files      every fs.* method, text and binary content
 *   errors     every error code the host answers, and local errors
 *   pipeline   1000 pipelined reads collected in reverse order
 *   big        a 9 MiB write and read with escapes, and both at once; a
 *              write too long for the host's limit
 *   oversize   a write longer than a host with a lower limit takes
 *   stateful   states and inputs until the host cancels
 *   pending    a read held on the policy prompt
 *   hang       a read the host never answers before its cancel
 *   error      ends with an error notification
 *   eof        a read whose answer never comes: the host closes stdin
 *   http       http.get and http.post: headers, text and binary bodies
 *              both ways, a host error, and local errors
 *
 * Exits 0 after writing its result, 1 when the SDK fails where the script
 * did not expect it (the reason on stderr); eof and oversize exit 3 when
 * the call failed as it should, 4 otherwise. */
#define _DEFAULT_SOURCE /* explicit_bzero */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jptool/vfs_tool.h>

static jpt_vfs_tool *t;
static char report[1 << 16];
static size_t report_len;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    report_len += (size_t)vsnprintf(report + report_len, sizeof(report) - report_len, fmt, ap);
    va_end(ap);
    if (report_len < sizeof(report) - 1)
        report[report_len++] = '\n';
}

_Noreturn static void die(const char *what)
{
    fprintf(stderr, "vfs-tool: %s: %s (code %d)\n", what, jpt_vfs_tool_errmsg(t),
            jpt_vfs_tool_error_code(t));
    exit(1);
}

static void ok(int rc, const char *what)
{
    if (rc != JPT_OK)
        die(what);
}

/* A step expected to fail: its status, code and message. */
static void outcome(const char *what, int rc)
{
    say("%s: %s %d %s", what, jpt_status_name(rc), jpt_vfs_tool_error_code(t),
        jpt_vfs_tool_errmsg(t));
}

static void finish(void)
{
    if (report_len > 0)
        report[--report_len] = '\0';
    ok(jpt_vfs_tool_result_text(t, report), "result");
}

/* ---- Scripts ------------------------------------------------------------------ */

static void script_init(void)
{
    say("name %s", jpt_vfs_tool_name(t));
    say("arguments %s", jpt_vfs_tool_arguments(t));
    say("answers %s", jpt_vfs_tool_answers(t));
    say("options %s", jpt_vfs_tool_options(t));
    say("version %s", jpt_vfs_tool_protocol_version(t));
    finish();
}

static void script_files(void)
{
    static const char binary[] = "\x89PNG\0\xff\x01";
    char *data, *json;
    size_t len;
    int exists, kind;
    uint64_t size;

    ok(jpt_vfs_tool_write(t, "a.txt", "hello \"world\"\n", 14), "write a.txt");
    ok(jpt_vfs_tool_read(t, "a.txt", &data, &len), "read a.txt");
    say("read a.txt %zu %s", len, memcmp(data, "hello \"world\"\n", 14) == 0 ? "same" : "differs");
    jpt_free(data);
    ok(jpt_vfs_tool_write(t, "dir/b.bin", binary, sizeof(binary) - 1), "write b.bin");
    ok(jpt_vfs_tool_read(t, "dir/b.bin", &data, &len), "read b.bin");
    say("read b.bin %zu %s", len, memcmp(data, binary, len) == 0 ? "same" : "differs");
    jpt_free(data);
    ok(jpt_vfs_tool_exists(t, "a.txt", &exists), "exists a.txt");
    say("exists a.txt %d", exists);
    ok(jpt_vfs_tool_exists(t, "nope", &exists), "exists nope");
    say("exists nope %d", exists);
    ok(jpt_vfs_tool_list_dir(t, "dir", &json), "list_dir");
    say("list_dir %s", json);
    jpt_free(json);
    ok(jpt_vfs_tool_metadata(t, "a.txt", &kind, &size), "metadata a.txt");
    say("metadata a.txt %d %" PRIu64, kind, size);
    ok(jpt_vfs_tool_metadata(t, "dir", &kind, NULL), "metadata dir");
    say("metadata dir %d", kind);
    ok(jpt_vfs_tool_rename(t, "a.txt", "c.txt"), "rename");
    ok(jpt_vfs_tool_delete(t, "dir/b.bin"), "delete");
    const char *paths[] = {"c.txt"}, *exts[] = {"txt"};
    jpt_vfs_grep_query q = {sizeof(q), "world", paths, 1, exts, 1, 2, 1, 1, 10};
    ok(jpt_vfs_tool_grep(t, &q, &json), "grep");
    say("grep %s", json);
    jpt_free(json);
    ok(jpt_vfs_tool_call(t, "fs.exists", "{\"path\": \"c.txt\"}", &json), "call");
    say("call %s", json);
    jpt_free(json);
    finish();
}

static void script_errors(void)
{
    char *data = NULL, *json = NULL;

    outcome("read .env", jpt_vfs_tool_read(t, ".env", &data, NULL));
    outcome("read missing", jpt_vfs_tool_read(t, "missing", &data, NULL));
    outcome("write exists", jpt_vfs_tool_write(t, "exists", "x", 1));
    outcome("read slow", jpt_vfs_tool_read(t, "slow", &data, NULL));
    outcome("read cancelled", jpt_vfs_tool_read(t, "cancelled", &data, NULL));
    outcome("read broken", jpt_vfs_tool_read(t, "broken", &data, NULL));
    outcome("call fs.nope", jpt_vfs_tool_call(t, "fs.nope", "{}", &json));
    outcome("call http.get", jpt_vfs_tool_call(t, "http.get", "{\"url\":\"https://x\"}", &json));
    outcome("call fs.read {}", jpt_vfs_tool_call(t, "fs.read", "{}", &json));
    outcome("call bad json", jpt_vfs_tool_call(t, "fs.read", "{", &json));
    outcome("read latin-1", jpt_vfs_tool_read(t, "caf\xe9", &data, NULL));
    outcome("collect unknown", jpt_vfs_tool_collect(t, 999, &json));
    outcome("state bad", jpt_vfs_tool_state(t, "{\"type\":\"done\"}"));
    outcome("result bad", jpt_vfs_tool_result(t, "{\"content\":1}"));
    if (data != NULL || json != NULL)
        die("an out parameter was set on failure");
    /* After all of that the session works. */
    ok(jpt_vfs_tool_read(t, "fine", &data, NULL), "read fine");
    say("read fine %s", data);
    jpt_free(data);
    finish();
}

static void script_pipeline(void)
{
    enum { N = 1000 };
    static uint64_t ids[N];
    char path[32], want[64];
    int same = 0;

    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof(path), "p/%d", i);
        ok(jpt_vfs_tool_submit_read(t, path, &ids[i]), "submit_read");
    }
    for (int i = N - 1; i >= 0; i--) {
        char *data;
        size_t len;
        ok(jpt_vfs_tool_collect_read(t, ids[i], &data, &len), "collect_read");
        snprintf(want, sizeof(want), "content of p/%d", i);
        same += len == strlen(want) && memcmp(data, want, len) == 0;
        jpt_free(data);
    }
    say("%d of %d reads right", same, N);
    finish();
}

/* `n` bytes of source-like text: quotes, backslashes, tabs, newlines and
 * multi-byte UTF-8 to escape or keep, about 7% longer escaped. Or, with
 * `heavy`, mostly characters that escape: half as long again. */
static char *text(size_t n, bool heavy)
{
    static const char light[] = "\tlet value = format!(\"{}\", key); // caf\xc3\xa9 \\ ok\n";
    static const char dense[] = "\"q\" \\ \x01\t\n";
    const char *pattern = heavy ? dense : light;
    size_t plen = strlen(pattern);
    char *s = malloc(n);

    for (size_t i = 0; i < n; i++)
        s[i] = pattern[i % plen];
    /* No multi-byte sequence cut at the end. */
    s[n - 1] = '\n';
    s[n - 2] = '.';
    return s;
}

static void script_big(void)
{
    size_t n = 9u << 20, len;
    char *content = text(n, false), *data;
    uint64_t wid, rid;

    ok(jpt_vfs_tool_write(t, "big.txt", content, n), "write big");
    ok(jpt_vfs_tool_read(t, "big.txt", &data, &len), "read big");
    say("big %zu %s", len, len == n && memcmp(data, content, n) == 0 ? "same" : "differs");
    jpt_free(data);
    /* Both directions full at once: the host answers a 9 MiB read while
     * this tool still writes a 9 MiB request. */
    ok(jpt_vfs_tool_submit_read(t, "big.txt", &rid), "submit read");
    ok(jpt_vfs_tool_submit_write(t, "big2.txt", content, n, &wid), "submit write");
    ok(jpt_vfs_tool_collect(t, wid, NULL), "collect write");
    ok(jpt_vfs_tool_collect_read(t, rid, &data, &len), "collect read");
    say("both %zu %s", len, len == n && memcmp(data, content, n) == 0 ? "same" : "differs");
    jpt_free(data);
    free(content);
    /* 10 MiB that escapes to 15: refused before anything is sent. */
    content = text(10u << 20, true);
    outcome("write heavy", jpt_vfs_tool_write(t, "heavy.txt", content, 10u << 20));
    free(content);
    finish();
}

/* A host whose limit is lower than the SDK's: the request it cannot read
 * is answered with id null, which ends the session rather than leaving the
 * write waiting forever. */
static void script_oversize(void)
{
    char *content = text(2u << 20, false);
    int rc = jpt_vfs_tool_write(t, "two.txt", content, 2u << 20);

    free(content);
    if (rc == JPT_ERR_PROTOCOL &&
        strcmp(jpt_vfs_tool_errmsg(t),
               "the host could not read a request: Invalid Request: message longer than the "
               "limit of 1048576 bytes") == 0 &&
        jpt_vfs_tool_result_text(t, "late") == JPT_ERR_PROTOCOL)
        exit(3);
    outcome("write two", rc);
    fprintf(stderr, "vfs-tool: %s", report);
    exit(4);
}

static void script_stateful(void)
{
    char *input, state[512];
    int n = 0, rc;

    ok(jpt_vfs_tool_state(t, "{\"type\":\"running\",\"content\":\"ready\"}"), "state");
    while ((rc = jpt_vfs_tool_next_input(t, &input)) == JPT_OK) {
        json_t *s = json_string(input);
        char *quoted = json_dumps(s, JSON_ENCODE_ANY);
        snprintf(state, sizeof(state), "{\"type\":\"waiting\",\"content\":%s,\"question\":"
                                       "{\"id\":\"more\",\"text\":\"More?\",\"answer_type\":"
                                       "\"Boolean\"}}", quoted);
        free(quoted);
        json_decref(s);
        ok(jpt_vfs_tool_state(t, state), "state");
        jpt_free(input);
        n++;
    }
    say("inputs %d", n);
    say("next_input %s cancelled %d", jpt_status_name(rc), jpt_vfs_tool_cancelled(t));
    finish();
}

static void on_pending(uint64_t id, const char *reason, void *ud)
{
    (void)ud;
    say("pending %" PRIu64 ": %s", id, reason);
}

static void script_pending(void)
{
    char *data;

    ok(jpt_vfs_tool_read(t, "ask/secret", &data, NULL), "read ask/secret");
    say("read %s", data);
    jpt_free(data);
    finish();
}

static void script_hang(void)
{
    char *data = NULL;

    outcome("read hang", jpt_vfs_tool_read(t, "hang", &data, NULL));
    say("cancelled %d", jpt_vfs_tool_cancelled(t));
    finish();
}

static void script_error(void)
{
    const char *trace[] = {"outer", "inner"};

    ok(jpt_vfs_tool_error(t, "Failed to parse input", trace, 2, 1), "error");
}

/* Nothing can be reported to a host that is gone: the exit status says
 * whether the read failed as it should. */
static void script_eof(void)
{
    char *data = NULL;
    int rc = jpt_vfs_tool_read(t, "eof", &data, NULL);

    if (rc == JPT_ERR_IO && jpt_vfs_tool_error_code(t) == 0 &&
        strcmp(jpt_vfs_tool_errmsg(t),
               "the host closed the tool's stdin before answering request 1") == 0)
        exit(3);
    outcome("read eof", rc);
    fprintf(stderr, "vfs-tool: %s", report);
    exit(4);
}

/* The options live only while connecting: the SDK keeps its own copy. */
static int connect_to_host(void)
{
    jpt_vfs_connect_options opts = {sizeof(opts), 0, 0, on_pending, NULL};
    int rc = jpt_vfs_tool_connect_fds(0, 1, &opts, &t);

    explicit_bzero(&opts, sizeof(opts));
    return rc;
}

static void say_response(const char *what, const jpt_vfs_http_response *r)
{
    say("%s %d %s %zu:%s", what, r->status, r->headers_json, r->body_len, r->body);
}

static void script_http(void)
{
    static const unsigned char bytes[] = {0x00, 0xff, 0x10, 'a'};
    jpt_vfs_http_header headers[] = {{"Authorization", "Bearer ${TOKEN}"}, {"X-A", "1"}};
    jpt_vfs_http_response r = {.size = sizeof(r)};

    ok(jpt_vfs_tool_http_get(t, "https://example.com/a", headers, 2, &r), "http_get");
    say_response("get", &r);
    jpt_vfs_http_response_clear(&r);
    ok(jpt_vfs_tool_http_get(t, "https://example.com/binary", NULL, 0, &r), "http_get binary");
    bool same = r.body_len == 256;
    for (size_t i = 0; same && i < 256; i++)
        same = (unsigned char)r.body[i] == i;
    say("binary %zu %s %s", r.body_len, same ? "same" : "differs", r.body[256] == '\0' ? "nul" : "");
    jpt_vfs_http_response_clear(&r);
    ok(jpt_vfs_tool_http_post(t, "https://example.com/p", headers + 1, 1, "hello \"x\"", 9, &r),
       "http_post");
    say_response("post", &r);
    jpt_vfs_http_response_clear(&r);
    ok(jpt_vfs_tool_http_post(t, "https://example.com/p", NULL, 0, bytes, sizeof(bytes), &r),
       "http_post binary");
    say("post binary %zu %s", r.body_len,
        r.body_len == sizeof(bytes) && memcmp(r.body, bytes, sizeof(bytes)) == 0 ? "same"
                                                                                : "differs");
    jpt_vfs_http_response_clear(&r);
    ok(jpt_vfs_tool_http_post(t, "https://example.com/p", NULL, 0, NULL, 0, &r), "http_post empty");
    say_response("post empty", &r);
    jpt_vfs_http_response_clear(&r);
    outcome("get denied", jpt_vfs_tool_http_get(t, "https://denied.example/", NULL, 0, &r));
    say("after an error %d %s %s", r.status, r.headers_json ? "headers" : "none",
        r.body ? "body" : "none");
    jpt_vfs_http_header bad[] = {{"X", NULL}};
    outcome("get null value", jpt_vfs_tool_http_get(t, "https://example.com/", bad, 1, &r));
    outcome("get null headers", jpt_vfs_tool_http_get(t, "https://example.com/", NULL, 1, &r));
    outcome("get latin-1", jpt_vfs_tool_http_get(t, "https://example.com/caf\xe9", NULL, 0, &r));
    jpt_vfs_http_response small = {.size = sizeof(size_t)};
    outcome("get small", jpt_vfs_tool_http_get(t, "https://example.com/", NULL, 0, &small));
    outcome("get null url", jpt_vfs_tool_http_get(t, NULL, NULL, 0, &r));
    jpt_vfs_http_response_clear(NULL);
    finish();
}

/* In a sanitizer build, LeakSanitizer's check at exit reads /proc and
 * uses ptrace, which the OS sandbox denies a VFS tool. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

int main(void)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } scripts[] = {
        {"init", script_init},       {"files", script_files},   {"errors", script_errors},
        {"pipeline", script_pipeline}, {"big", script_big},     {"stateful", script_stateful},
        {"pending", script_pending}, {"hang", script_hang},     {"error", script_error},
        {"eof", script_eof},         {"oversize", script_oversize}, {"http", script_http},
    };
    if (connect_to_host() != JPT_OK)
        die("connect");
    json_t *args = json_loads(jpt_vfs_tool_arguments(t), 0, NULL);
    const char *script = json_string_value(json_object_get(args, "script"));
    for (size_t i = 0; script != NULL && i < sizeof(scripts) / sizeof(scripts[0]); i++)
        if (strcmp(script, scripts[i].name) == 0) {
            scripts[i].run();
            json_decref(args);
            jpt_vfs_tool_free(t);
            return 0;
        }
    die("no such script");
}
