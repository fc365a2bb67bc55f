/* The tool side of the VFS protocol. The tool SDK (vfs_tool.h) against the
 * host engine, through real pipes and a real subprocess: test/tools/vfs-tool runs a script on the SDK, and this
 * test plays its host with the engine and an in-memory method table (files
 * in an array; some paths answer with errors, some are held, some wait on
 * a pretend policy prompt). Every method, every error code, pipelining in
 * both directions, 10 MiB messages both ways at once, stateful inputs and
 * cancel, pending, and a host that goes away. Then the tool side's engine
 * (lib/vfs/client.c) on its own, with byte buffers, and allocation
 * failure. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "test-util.h"
#include "vfs-tool/vfs-tool.h"
#include "vfs/vfs.h"

extern char **environ;

/* ---- The files ------------------------------------------------------------------ */

#define MAX_FILES 64

typedef struct file {
    char *path;
    char *data;
    size_t len;
} file;

typedef struct harness harness;

struct harness {
    jpt__vfs_engine *e;
    pid_t pid;
    int to_tool, from_tool;
    bool eof;
    int status;
    file files[MAX_FILES];
    jpt_state *states[64];
    size_t nstates;
    jpt__vfs_call **deferred; /* answered in reverse once the tool waits */
    size_t ndeferred;
    jpt__vfs_call *held;      /* never answered */
    bool cancel_when_idle;
    /* Reacts to a state of the tool (stateful scripts). */
    void (*on_state)(harness *h, jpt_state *st);
    int step;
    const jpt__vfs_limits *limits;
    int eof_status;
};

static file *find(harness *h, const char *path)
{
    for (size_t i = 0; i < MAX_FILES; i++)
        if (h->files[i].path != NULL && strcmp(h->files[i].path, path) == 0)
            return &h->files[i];
    return NULL;
}

static void put_file(harness *h, const char *path, const char *data, size_t len)
{
    file *f = find(h, path);

    for (size_t i = 0; f == NULL && i < MAX_FILES; i++)
        if (h->files[i].path == NULL) {
            f = &h->files[i];
            f->path = strdup(path);
        }
    assert_non_null(f);
    free(f->data);
    f->data = malloc(len + 1);
    memcpy(f->data, data, len);
    f->len = len;
}

static void remove_file(file *f)
{
    free(f->path);
    free(f->data);
    memset(f, 0, sizeof(*f));
}

static bool is_dir(harness *h, const char *path)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < MAX_FILES; i++)
        if (h->files[i].path != NULL && strncmp(h->files[i].path, path, n) == 0 &&
            h->files[i].path[n] == '/')
            return true;
    return false;
}

/* ---- The method table --------------------------------------------------------------- */

static void answer_value(jpt__vfs_call *c, json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    assert_int_equal(jpt__vfs_call_answer_json(c, text, strlen(text)), JPT_OK);
    free(text);
    json_decref(v);
}

static void not_found(jpt__vfs_call *c, const char *path)
{
    assert_int_equal(jpt__vfs_call_answer_error(c, JPT_VFS_E_NOT_FOUND, "Not found: '%s'", path),
                     JPT_OK);
}

/* The paths the pretend policy and backend treat specially. Returns true
 * when it took the call. */
static bool special_path(harness *h, jpt__vfs_call *c, const char *path)
{
    static const struct {
        const char *path;
        int code;
        const char *message;
    } errors[] = {
        {".env", JPT_VFS_E_ACCESS_DENIED, "Access denied: path '.env' is in the sensitive paths list"},
        {"exists", JPT_VFS_E_EXISTS, "Already exists: 'exists'"},
        {"slow", JPT_VFS_E_TIMEOUT, "Timeout: 'slow' took too long"},
        {"cancelled", JPT_VFS_E_CANCELLED, "Cancelled by the user"},
        {"broken", JPT_VFS_E_INTERNAL, "I/O error reading 'broken'"},
    };

    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
        if (strcmp(path, errors[i].path) == 0) {
            assert_int_equal(jpt__vfs_call_answer_error(c, errors[i].code, "%s", errors[i].message),
                             JPT_OK);
            return true;
        }
    if (strcmp(path, "hang") == 0) {
        h->held = c;
        h->cancel_when_idle = true;
        return true;
    }
    if (strcmp(path, "eof") == 0) {
        h->held = c;
        close(h->to_tool);
        h->to_tool = -1;
        return true;
    }
    if (strncmp(path, "ask/", 4) == 0)
        assert_int_equal(jpt__vfs_call_pending(c, "awaiting user approval"), JPT_OK);
    if (strncmp(path, "p/", 2) == 0 || strncmp(path, "ask/", 4) == 0) {
        h->deferred = realloc(h->deferred, (h->ndeferred + 1) * sizeof(*h->deferred));
        h->deferred[h->ndeferred++] = c;
        return true;
    }
    return false;
}

static void serve_read(void *ud, jpt__vfs_call *c)
{
    harness *h = ud;
    const char *path = jpt__vfs_call_params(c)->path;
    file *f = find(h, path);

    if (special_path(h, c, path))
        return;
    if (f == NULL && strcmp(path, "fine") == 0)
        assert_int_equal(jpt__vfs_call_answer_read(c, "fine", 4), JPT_OK);
    else if (f == NULL)
        not_found(c, path);
    else
        assert_int_equal(jpt__vfs_call_answer_read(c, f->data, f->len), JPT_OK);
}

static void serve_write(void *ud, jpt__vfs_call *c)
{
    harness *h = ud;
    const jpt__vfs_params *p = jpt__vfs_call_params(c);

    if (special_path(h, c, p->path))
        return;
    put_file(h, p->path, p->content, p->content_len);
    answer_value(c, json_object());
}

static void serve_exists(void *ud, jpt__vfs_call *c)
{
    harness *h = ud;
    const char *path = jpt__vfs_call_params(c)->path;

    answer_value(c, json_pack("{s:b}", "exists", find(h, path) != NULL || is_dir(h, path)));
}

static void serve_list_dir(void *ud, jpt__vfs_call *c)
{
    harness *h = ud;
    const char *dir = jpt__vfs_call_params(c)->path;
    size_t n = strlen(dir);
    json_t *entries = json_array();

    for (size_t i = 0; i < MAX_FILES; i++) {
        const char *path = h->files[i].path;
        if (path != NULL && strncmp(path, dir, n) == 0 && path[n] == '/')
            json_array_append_new(entries, json_pack("{s:s,s:s}", "path", path + n + 1, "kind",
                                                     "file"));
    }
    answer_value(c, json_pack("{s:o}", "entries", entries));
}

static void serve_metadata(void *ud, jpt__vfs_call *c)
{
    harness *h = ud;
    const char *path = jpt__vfs_call_params(c)->path;
    file *f = find(h, path);

    if (f != NULL)
        answer_value(c, json_pack("{s:s,s:I}", "kind", "file", "size", (json_int_t)f->len));
    else if (is_dir(h, path))
        answer_value(c, json_pack("{s:s}", "kind", "dir"));
    else
        not_found(c, path);
}

static void serve_delete(void *ud, jpt__vfs_call *c)
{
    harness *h = ud;
    file *f = find(h, jpt__vfs_call_params(c)->path);

    if (f == NULL) {
        not_found(c, jpt__vfs_call_params(c)->path);
        return;
    }
    remove_file(f);
    answer_value(c, json_object());
}

static void serve_rename(void *ud, jpt__vfs_call *c)
{
    harness *h = ud;
    const jpt__vfs_params *p = jpt__vfs_call_params(c);
    file *f = find(h, p->from);

    if (f == NULL) {
        not_found(c, p->from);
        return;
    }
    free(f->path);
    f->path = strdup(p->to);
    answer_value(c, json_object());
}

static json_t *strings(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

/* fs.grep answers what it was asked, so the test sees the SDK's encoding
 * of every option. */
static void serve_grep(void *ud, jpt__vfs_call *c)
{
    const jpt__vfs_params *p = jpt__vfs_call_params(c);

    (void)ud;
    answer_value(c, json_pack("{s:[],s:{s:s,s:o,s:o,s:i,s:b,s:b,s:I}}", "matches", "asked",
                              "pattern", p->pattern, "paths", strings(p->paths, p->npaths),
                              "extensions", strings(p->extensions, p->nextensions), "context",
                              (int)p->context, "case_insensitive", p->case_insensitive,
                              "fixed_strings", p->fixed_strings, "max_matches",
                              (json_int_t)p->max_matches));
}

/* http.get and http.post answer what they were asked: the URL and the
 * headers as response headers, the body back (base64 when it is not text),
 * 256 bytes in base64 for ".../binary", and -32001 for a "denied" host. */
static void serve_http(void *ud, jpt__vfs_call *c)
{
    const jpt__vfs_params *p = jpt__vfs_call_params(c);
    json_t *headers = json_pack("[{s:s,s:s}]", "name", "X-Url", "value", p->url);

    (void)ud;
    if (strstr(p->url, "denied") != NULL) {
        json_decref(headers);
        assert_int_equal(jpt__vfs_call_answer_error(c, JPT_VFS_E_ACCESS_DENIED,
                                                    "http.get '%s': denied", p->url),
                         JPT_OK);
        return;
    }
    for (size_t i = 0; i < p->nheaders; i++)
        json_array_append_new(headers, json_pack("{s:s,s:s}", "name", p->header_names[i],
                                                 "value", p->header_values[i]));
    unsigned char bytes[256];
    const char *body = p->body != NULL ? p->body : "";
    size_t len = p->body_len;
    if (strstr(p->url, "binary") != NULL) {
        for (size_t i = 0; i < 256; i++)
            bytes[i] = (unsigned char)i;
        body = (const char *)bytes;
        len = 256;
    }
    json_t *r = json_pack("{s:i,s:o}", "status", jpt__vfs_call_method(c) == JPT__VFS_HTTP_POST
                                                     ? 201 : 200, "headers", headers);
    if (jpt__json_quoted_size(body, len, true) != 0)
        json_object_set_new(r, "body", json_stringn(body, len));
    else {
        char *b64 = malloc(jpt__base64_size(len) + 1);
        jpt__base64_encode(b64, (const unsigned char *)body, len);
        b64[jpt__base64_size(len)] = '\0';
        json_object_set_new(r, "body", json_string(b64));
        json_object_set_new(r, "encoding", json_string("base64"));
        free(b64);
    }
    answer_value(c, r);
}

static void on_state(void *ud, jpt_state *st, bool final)
{
    (void)final;
    harness *h = ud;

    assert_true(h->nstates < 64);
    h->states[h->nstates++] = st;
    if (h->on_state != NULL)
        h->on_state(h, st);
}

/* ---- Running a script ------------------------------------------------------------------- */

static void start(harness *h, const char *script)
{
    jpt__vfs_handlers hs = {.state = on_state, .ud = h};
    char arguments[128];
    jpt__errbuf err;
    int in[2], out[2];
    posix_spawn_file_actions_t fa;
    char *argv[] = {JPT_TEST_TOOLS "/vfs-tool", NULL};

    hs.method[JPT__VFS_FS_READ] = serve_read;
    hs.method[JPT__VFS_FS_WRITE] = serve_write;
    hs.method[JPT__VFS_FS_EXISTS] = serve_exists;
    hs.method[JPT__VFS_FS_LIST_DIR] = serve_list_dir;
    hs.method[JPT__VFS_FS_METADATA] = serve_metadata;
    hs.method[JPT__VFS_FS_DELETE] = serve_delete;
    hs.method[JPT__VFS_FS_RENAME] = serve_rename;
    hs.method[JPT__VFS_FS_GREP] = serve_grep;
    if (strcmp(script, "http") == 0)
        hs.method[JPT__VFS_HTTP_GET] = hs.method[JPT__VFS_HTTP_POST] = serve_http;
    snprintf(arguments, sizeof(arguments), "{\"script\":\"%s\"}", script);
    jpt__vfs_init init = {"vfs_test_tool", arguments, "{\"q\":[1,2]}", "{\"confirm\":true}"};
    assert_int_equal(jpt__vfs_engine_new(h->limits, &hs, &init, &err, &h->e), JPT_OK);

    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    assert_int_equal(posix_spawn(&h->pid, argv[0], &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    h->to_tool = in[1];
    h->from_tool = out[0];
    fcntl(h->to_tool, F_SETFL, O_NONBLOCK);
    fcntl(h->from_tool, F_SETFL, O_NONBLOCK);
}

static void write_output(harness *h)
{
    const char *p;
    size_t n;

    while ((n = jpt__vfs_engine_output(h->e, &p)) > 0) {
        ssize_t w = write(h->to_tool, p, n);
        if (w < 0 && errno == EAGAIN)
            return;
        if (w < 0) {
            /* The tool is gone: what it did not read is dropped. */
            assert_int_equal(errno, EPIPE);
            close(h->to_tool);
            h->to_tool = -1;
            return;
        }
        jpt__vfs_engine_output_done(h->e, (size_t)w);
    }
}

/* The tool waits on us: answer what was deferred, last first, or cancel. */
static bool act_when_idle(harness *h)
{
    if (h->ndeferred > 0) {
        while (h->ndeferred > 0) {
            jpt__vfs_call *c = h->deferred[--h->ndeferred];
            char content[64];
            snprintf(content, sizeof(content), "%s of %s",
                     strncmp(jpt__vfs_call_params(c)->path, "ask/", 4) == 0 ? "secret" : "content",
                     jpt__vfs_call_params(c)->path);
            assert_int_equal(jpt__vfs_call_answer_read(c, content, strlen(content)), JPT_OK);
        }
        return true;
    }
    if (h->cancel_when_idle) {
        h->cancel_when_idle = false;
        assert_int_equal(jpt__vfs_engine_cancel(h->e), JPT_OK);
        return true;
    }
    return false;
}

/* Serves the tool until it has closed its stdout and exited. */
static void serve(harness *h)
{
    static char chunk[256 << 10];
    size_t have = 0, used_total = 0;

    for (;;) {
        if (have > used_total && jpt__vfs_engine_wants_input(h->e)) {
            size_t used;
            assert_int_equal(jpt__vfs_engine_feed(h->e, chunk + used_total, have - used_total, &used),
                             JPT_OK);
            used_total += used;
        }
        if (h->to_tool >= 0)
            write_output(h);
        const char *p;
        bool want_write = h->to_tool >= 0 && jpt__vfs_engine_output(h->e, &p) > 0;
        bool want_read = !h->eof && used_total == have && jpt__vfs_engine_wants_input(h->e);
        if (!want_read && !want_write && h->eof)
            break;
        struct pollfd fds[2] = {{.fd = want_read ? h->from_tool : -1, .events = POLLIN},
                                {.fd = want_write ? h->to_tool : -1, .events = POLLOUT}};
        int ready = poll(fds, 2, h->ndeferred > 0 || h->cancel_when_idle ? 0 : -1);
        assert_true(ready >= 0 || errno == EINTR);
        if (ready == 0 && act_when_idle(h))
            continue;
        if (want_read && fds[0].revents != 0) {
            ssize_t got = read(h->from_tool, chunk, sizeof(chunk));
            assert_true(got >= 0 || errno == EAGAIN);
            if (got == 0) {
                h->eof = true;
                h->eof_status = jpt__vfs_engine_eof(h->e);
            } else if (got > 0) {
                have = (size_t)got;
                used_total = 0;
            }
        }
    }
    close(h->from_tool);
    if (h->to_tool >= 0)
        close(h->to_tool);
    assert_int_equal(waitpid(h->pid, &h->status, 0), h->pid);
}

static void finish(harness *h)
{
    jpt__vfs_engine_free(h->e);
    for (size_t i = 0; i < h->nstates; i++)
        jpt_state_unref(h->states[i]);
    for (size_t i = 0; i < MAX_FILES; i++)
        remove_file(&h->files[i]);
    free(h->deferred);
}

/* Runs `script` to its end: the tool exited 0 with one final state. */
static const char *run(harness *h, const char *script)
{
    memset(h, 0, sizeof(*h));
    start(h, script);
    serve(h);
    assert_int_equal(h->eof_status, JPT_OK);
    assert_true(WIFEXITED(h->status));
    assert_int_equal(WEXITSTATUS(h->status), 0);
    assert_true(h->nstates >= 1);
    jpt_state *last = h->states[h->nstates - 1];
    assert_int_equal(jpt_state_kind(last), JPT_STATE_STOPPED);
    if (jpt_state_is_error(last))
        return jpt_state_error_message(last);
    return jpt_state_block_field(last, 0, JPT_FIELD_TEXT, NULL);
}

/* ---- The scripts ------------------------------------------------------------------------------ */

static void the_tool_reads_its_initial_context(void **state)
{
    harness h;

    (void)state;
    assert_string_equal(run(&h, "init"), "name vfs_test_tool\n"
                                         "arguments {\"script\":\"init\"}\n"
                                         "answers {\"q\":[1,2]}\n"
                                         "options {\"confirm\":true}\n"
                                         "version 0.1.0");
    finish(&h);
}

static void every_file_method_works_through_the_sdk(void **state)
{
    harness h;

    (void)state;
    assert_string_equal(run(&h, "files"),
                        "read a.txt 14 same\n"
                        "read b.bin 7 same\n"
                        "exists a.txt 1\n"
                        "exists nope 0\n"
                        "list_dir [{\"kind\":\"file\",\"path\":\"b.bin\"}]\n"
                        "metadata a.txt 1 14\n"
                        "metadata dir 2\n"
                        "grep {\"asked\":{\"case_insensitive\":true,\"context\":2,\"extensions\":"
                        "[\"txt\"],\"fixed_strings\":true,\"max_matches\":10,\"paths\":[\"c.txt\"],"
                        "\"pattern\":\"world\"},\"matches\":[]}\n"
                        "call {\"exists\":true}");
    file *c = find(&h, "c.txt");
    assert_non_null(c);
    assert_int_equal(c->len, 14);
    assert_memory_equal(c->data, "hello \"world\"\n", 14);
    assert_null(find(&h, "a.txt"));
    assert_null(find(&h, "dir/b.bin"));
    finish(&h);
}

static void every_error_code_reaches_the_tool(void **state)
{
    harness h;

    (void)state;
    assert_string_equal(
        run(&h, "errors"),
        "read .env: JPT_ERR_DENIED -32001 Access denied: path '.env' is in the sensitive paths list\n"
        "read missing: JPT_ERR_NOT_FOUND -32002 Not found: 'missing'\n"
        "write exists: JPT_ERR_EXISTS -32003 Already exists: 'exists'\n"
        "read slow: JPT_ERR_TIMEOUT -32004 Timeout: 'slow' took too long\n"
        "read cancelled: JPT_ERR_CANCELLED -32005 Cancelled by the user\n"
        "read broken: JPT_ERR_IO -32603 I/O error reading 'broken'\n"
        "call fs.nope: JPT_ERR_UNSUPPORTED -32601 Method not found: 'fs.nope'\n"
        "call http.get: JPT_ERR_UNSUPPORTED -32601 Method not found: 'http.get' is not served by "
        "this host\n"
        "call fs.read {}: JPT_ERR_INVALID -32602 Invalid params: 'path' is required\n"
        "call bad json: JPT_ERR_INVALID 0 the params of fs.read are not JSON: expected a member "
        "name at byte 1\n"
        /* The message keeps the path's bytes; the result text replaced them. */
        "read latin-1: JPT_ERR_INVALID 0 the path 'caf\xef\xbf\xbd' is not valid UTF-8\n"
        "collect unknown: JPT_ERR_NOT_FOUND 0 request 999 is not outstanding\n"
        "state bad: JPT_ERR_INVALID 0 a state must be an object whose \"type\" is \"running\", "
        "\"waiting\" or \"stopped\"\n"
        "result bad: JPT_ERR_INVALID 0 a result's content must be a JSON array of content blocks "
        "or a JSON string\n"
        "read fine fine");
    assert_int_equal(jpt__vfs_engine_violations(h.e), 0);
    finish(&h);
}

static void http_calls_work_through_the_sdk(void **state)
{
    harness h;

    (void)state;
    assert_string_equal(
        run(&h, "http"),
        "get 200 [{\"name\":\"X-Url\",\"value\":\"https://example.com/a\"},"
        "{\"name\":\"Authorization\",\"value\":\"Bearer ${TOKEN}\"},"
        "{\"name\":\"X-A\",\"value\":\"1\"}] 0:\n"
        "binary 256 same nul\n"
        "post 201 [{\"name\":\"X-Url\",\"value\":\"https://example.com/p\"},"
        "{\"name\":\"X-A\",\"value\":\"1\"}] 9:hello \"x\"\n"
        "post binary 4 same\n"
        "post empty 201 [{\"name\":\"X-Url\",\"value\":\"https://example.com/p\"}] 0:\n"
        "get denied: JPT_ERR_DENIED -32001 http.get 'https://denied.example/': denied\n"
        "after an error 0 none none\n"
        "get null value: JPT_ERR_INVALID 0 http.get: header 0 has a NULL name or value\n"
        "get null headers: JPT_ERR_INVALID 0 http.get: headers is NULL with a count of 1\n"
        "get latin-1: JPT_ERR_INVALID 0 'https://example.com/caf\xef\xbf\xbd' is not valid "
        "UTF-8\n"
        "get small: JPT_ERR_INVALID 0 http.get: the response's size does not match this jptool\n"
        "get null url: JPT_ERR_INVALID 0 a required argument is NULL");
    assert_int_equal(jpt__vfs_engine_violations(h.e), 0);
    finish(&h);
}

static void pipelined_reads_are_answered_out_of_order(void **state)
{
    harness h;

    (void)state;
    assert_string_equal(run(&h, "pipeline"), "1000 of 1000 reads right");
    finish(&h);
}

static void large_messages_both_ways_at_once_never_deadlock(void **state)
{
    harness h;

    (void)state;
    assert_string_equal(run(&h, "big"),
                        "big 9437184 same\n"
                        "both 9437184 same\n"
                        "write heavy: JPT_ERR_LIMIT 0 the request is 22136689 bytes, more than the "
                        "10551296 a message to the host may have");
    file *f = find(&h, "big2.txt");
    assert_non_null(f);
    assert_int_equal(f->len, 9u << 20);
    assert_memory_equal(f->data, find(&h, "big.txt")->data, f->len);
    finish(&h);
}

/* Applies two inputs as the tool asks for them, then cancels. */
static void drive_stateful(harness *h, jpt_state *st)
{
    if (jpt_state_kind(st) == JPT_STATE_STOPPED)
        return;
    switch (h->step++) {
    case 0:
        assert_int_equal(jpt_state_kind(st), JPT_STATE_RUNNING);
        assert_string_equal(jpt_state_block_field(st, 0, JPT_FIELD_TEXT, NULL), "ready");
        assert_int_equal(jpt__vfs_engine_apply(h->e, "\"y\"", 3), JPT_OK);
        break;
    case 1:
        assert_int_equal(jpt_state_kind(st), JPT_STATE_WAITING);
        assert_string_equal(jpt_state_block_field(st, 0, JPT_FIELD_TEXT, NULL), "\"y\"");
        assert_int_equal(jpt__vfs_engine_apply(h->e, "{\"answer\": true}", 16), JPT_OK);
        break;
    default:
        assert_int_equal(jpt_state_kind(st), JPT_STATE_WAITING);
        /* The input as the host gave it, spaces and all. */
        assert_string_equal(jpt_state_block_field(st, 0, JPT_FIELD_TEXT, NULL), "{\"answer\": true}");
        assert_int_equal(jpt__vfs_engine_cancel(h->e), JPT_OK);
    }
}

static void a_stateful_tool_takes_inputs_until_cancelled(void **state)
{
    harness h;

    (void)state;
    memset(&h, 0, sizeof(h));
    h.on_state = drive_stateful;
    start(&h, "stateful");
    serve(&h);
    assert_int_equal(WEXITSTATUS(h.status), 0);
    assert_int_equal(h.nstates, 4);
    assert_string_equal(jpt_state_block_field(h.states[3], 0, JPT_FIELD_TEXT, NULL),
                        "inputs 2\nnext_input JPT_ERR_CANCELLED cancelled 1");
    finish(&h);
}

static void a_request_on_the_policy_prompt_is_pending(void **state)
{
    harness h;

    (void)state;
    assert_string_equal(run(&h, "pending"),
                        "pending 1: awaiting user approval\nread secret of ask/secret");
    finish(&h);
}

static void cancel_ends_a_request_the_host_never_answers(void **state)
{
    harness h;

    (void)state;
    assert_string_equal(run(&h, "hang"),
                        "read hang: JPT_ERR_CANCELLED -32005 cancelled by the host\ncancelled 1");
    assert_int_equal(jpt__vfs_engine_calls(h.e), 1);
    finish(&h);
}

static void an_error_notification_ends_the_call_with_an_error(void **state)
{
    harness h;

    (void)state;
    assert_string_equal(run(&h, "error"), "Failed to parse input");
    jpt_state *st = h.states[0];
    assert_true(jpt_state_is_error(st));
    assert_true(jpt_state_error_transient(st));
    assert_int_equal(jpt_state_error_trace_count(st), 2);
    assert_string_equal(jpt_state_error_trace(st, 0), "outer");
    finish(&h);
}

static void a_host_that_closes_stdin_fails_the_waiting_read(void **state)
{
    harness h;

    (void)state;
    memset(&h, 0, sizeof(h));
    start(&h, "eof");
    serve(&h);
    /* The tool reported on stderr and exited 3: it saw JPT_ERR_IO. */
    assert_true(WIFEXITED(h.status));
    assert_int_equal(WEXITSTATUS(h.status), 3);
    assert_int_equal(h.nstates, 0);
    finish(&h);
}

static void a_request_the_host_cannot_read_ends_the_session(void **state)
{
    jpt__vfs_limits limits = {.max_message = 1 << 20};
    harness h;

    (void)state;
    memset(&h, 0, sizeof(h));
    h.limits = &limits;
    start(&h, "oversize");
    serve(&h);
    assert_true(WIFEXITED(h.status));
    assert_int_equal(WEXITSTATUS(h.status), 3);
    /* Whether the tool finished writing the refused line before it learnt
     * of the refusal depends on timing, and so does the engine's view of
     * its end; the tool's outcome does not. */
    assert_int_equal(jpt__vfs_engine_violations(h.e), 1);
    finish(&h);
}

/* Connects a tool in this process to a host that wrote `host` and closed
 * its end. */
static int connect_to(const char *host, jpt_vfs_tool **t)
{
    int to_tool[2], from_tool[2];

    assert_int_equal(pipe2(to_tool, O_CLOEXEC), 0);
    assert_int_equal(pipe2(from_tool, O_CLOEXEC), 0);
    assert_int_equal(write(to_tool[1], host, strlen(host)), (ssize_t)strlen(host));
    close(to_tool[1]);
    int rc = jpt_vfs_tool_connect_fds(to_tool[0], from_tool[1], NULL, t);
    jpt_vfs_tool_free(*t);
    close(to_tool[0]);
    close(from_tool[0]);
    close(from_tool[1]);
    return rc;
}

static void connecting_fails_with_a_reason(void **state)
{
    jpt_vfs_connect_options small = {sizeof(small) - 1, 0, 0, NULL, NULL};
    jpt_vfs_tool *t = (jpt_vfs_tool *)&t;
    char *data;

    (void)state;
    assert_int_equal(jpt_vfs_tool_connect_fds(-1, 1, NULL, &t), JPT_ERR_INVALID);
    assert_null(t);
    assert_int_equal(jpt_vfs_tool_connect_fds(0, 1, &small, &t), JPT_ERR_INVALID);
    assert_null(t);
    assert_int_equal(jpt_vfs_tool_connect_fds(0, 1, NULL, NULL), JPT_ERR_INVALID);
    /* What went wrong while connecting is kept with the tool. */
    int to_tool[2], from_tool[2];
    assert_int_equal(pipe2(to_tool, O_CLOEXEC), 0);
    assert_int_equal(pipe2(from_tool, O_CLOEXEC), 0);
    close(to_tool[1]);
    assert_int_equal(jpt_vfs_tool_connect_fds(to_tool[0], from_tool[1], NULL, &t), JPT_ERR_IO);
    assert_string_equal(jpt_vfs_tool_errmsg(t), "the host closed the tool's stdin before sending init");
    assert_null(jpt_vfs_tool_name(t));
    assert_int_equal(jpt_vfs_tool_read(t, "a", &data, NULL), JPT_ERR_STATE);
    assert_string_equal(jpt_vfs_tool_errmsg(t), "the tool is not connected");
    jpt_vfs_tool_free(t);
    close(to_tool[0]);
    close(from_tool[0]);
    close(from_tool[1]);
    assert_int_equal(connect_to("{\"jsonrpc\":\"2.0\",\"method\":\"apply\"}\n", &t),
                     JPT_ERR_PROTOCOL);
    assert_int_equal(connect_to("{\"jsonrpc\":\"2.0\",\"method\":\"init\"", &t), JPT_ERR_IO);
}

/* ---- The tool side's engine, without pipes ------------------------------------------ */

static const char init_line[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{\"tool\":{\"name\":\"t\\u00e9\","
    "\"arguments\":{\"a\": [1]}},\"protocol_version\":\"0.1.0\"}}\n";

static jpt__vfs_client *client(void)
{
    jpt__vfs_client *c;

    assert_int_equal(jpt__vfs_client_new(0, 0, &c), JPT_OK);
    assert_int_equal(jpt__vfs_client_feed(c, init_line, sizeof(init_line) - 1), JPT_OK);
    return c;
}

static void client_feed(jpt__vfs_client *c, const char *text)
{
    assert_int_equal(jpt__vfs_client_feed(c, text, strlen(text)), JPT_OK);
}

/* The output as one string, then forgotten. */
static char *client_out(jpt__vfs_client *c)
{
    const char *p;
    size_t n = jpt__vfs_client_output(c, &p);
    char *s = strndup(p, n);
    jpt__vfs_client_output_done(c, n);
    return s;
}

static void the_client_reads_init_and_writes_requests(void **state)
{
    jpt__vfs_client *c = client();
    uint64_t id;

    (void)state;
    assert_string_equal(jpt__vfs_client_init(c, JPT__VFS_INIT_NAME), "t\xc3\xa9");
    assert_string_equal(jpt__vfs_client_init(c, JPT__VFS_INIT_ARGUMENTS), "{\"a\": [1]}");
    assert_string_equal(jpt__vfs_client_init(c, JPT__VFS_INIT_ANSWERS), "{}");
    assert_string_equal(jpt__vfs_client_init(c, JPT__VFS_INIT_OPTIONS), "{}");
    assert_string_equal(jpt__vfs_client_init(c, JPT__VFS_INIT_VERSION), "0.1.0");
    assert_int_equal(jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "a\"b", &id), JPT_OK);
    assert_int_equal(id, 1);
    assert_int_equal(jpt__vfs_client_request_rename(c, "x", "y", &id), JPT_OK);
    assert_int_equal(jpt__vfs_client_request_write(c, "w", "t\n", 2, &id), JPT_OK);
    assert_int_equal(jpt__vfs_client_request_write(c, "b", "\0\xff", 2, &id), JPT_OK);
    assert_int_equal(jpt__vfs_client_request(c, "fs.list_dir", "{\n\"path\": \"d\"}", &id), JPT_OK);
    assert_int_equal(jpt__vfs_client_request(c, "fs.nothing", NULL, &id), JPT_OK);
    assert_int_equal(id, 6);
    assert_int_equal(jpt__vfs_client_notify(c, "result", "{\"content\":\"x\"}", 15), JPT_OK);
    char *out = client_out(c);
    assert_string_equal(out,
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.read\",\"params\":{\"path\":\"a\\\"b\"}}\n"
                        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"fs.rename\",\"params\":{\"from\":\"x\",\"to\":\"y\"}}\n"
                        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"fs.write\",\"params\":{\"path\":\"w\",\"content\":\"t\\n\"}}\n"
                        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"fs.write\",\"params\":{\"path\":\"b\",\"content\":\"AP8=\",\"encoding\":\"base64\"}}\n"
                        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"fs.list_dir\",\"params\":{ \"path\": \"d\"}}\n"
                        "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"fs.nothing\"}\n"
                        "{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"content\":\"x\"}}\n");
    free(out);
    jpt__vfs_client_free(c);
}

static void the_client_matches_responses_to_requests_in_any_order(void **state)
{
    jpt__vfs_client *c = client();
    uint64_t a, b, late;

    (void)state;
    assert_int_equal(jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "a", &a), JPT_OK);
    assert_int_equal(jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "b", &b), JPT_OK);
    assert_int_equal(jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "c", &late), JPT_OK);
    client_feed(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32002,\"message\":\"no 'b'\"}}\r\n"
                   "\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":\"A\",\"size\":1}}\n"
                   /* Not ours: a string id, an unknown number. */
                   "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}\n"
                   "{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}\n");
    jpt__vfs_reply *r = jpt__vfs_client_reply(c, a);
    assert_true(r->done);
    assert_int_equal(r->code, 0);
    assert_int_equal(r->result.n, 24);
    assert_memory_equal(r->result.p, "{\"content\":\"A\",\"size\":1}", 24);
    r = jpt__vfs_client_reply(c, b);
    assert_true(r->done);
    assert_int_equal(r->code, JPT_VFS_E_NOT_FOUND);
    assert_string_equal(r->message, "no 'b'");
    assert_false(jpt__vfs_client_reply(c, late)->done);
    jpt__vfs_client_forget(c, a);
    assert_null(jpt__vfs_client_reply(c, a));
    /* A response to a forgotten request is dropped. */
    client_feed(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    assert_int_equal(jpt__vfs_client_status(c), JPT_OK);
    jpt__vfs_client_free(c);
}

static void pending(uint64_t id, const char *reason, void *ud)
{
    char *seen = ud;
    sprintf(seen + strlen(seen), "%llu:%s;", (unsigned long long)id, reason);
}

static void inputs_and_cancel_come_in_order_and_cancel_ends_waiting_requests(void **state)
{
    jpt__vfs_client *c = client();
    char seen[128] = "", *input;
    uint64_t id;

    (void)state;
    jpt__vfs_client_on_pending(c, pending, seen);
    assert_int_equal(jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "a", &id), JPT_OK);
    client_feed(c, "{\"jsonrpc\":\"2.0\",\"method\":\"pending\",\"params\":{\"request_id\":1,"
                   "\"reason\":\"asking\"}}\n"
                   "{\"jsonrpc\":\"2.0\",\"method\":\"apply\",\"params\":{\"input\":\"y\"}}\n"
                   "{\"jsonrpc\":\"2.0\",\"method\":\"apply\",\"params\":{}}\n"
                   "{\"jsonrpc\":\"2.0\",\"method\":\"cancel\"}\n"
                   "{\"jsonrpc\":\"2.0\",\"method\":\"apply\",\"params\":{\"input\":{\"k\":1}}}\n"
                   "{\"jsonrpc\":\"2.0\",\"method\":\"later\"}\n");
    assert_string_equal(seen, "1:asking;");
    assert_true(jpt__vfs_client_cancelled(c));
    jpt__vfs_reply *r = jpt__vfs_client_reply(c, id);
    assert_true(r->done);
    assert_int_equal(r->code, JPT_VFS_E_CANCELLED);
    assert_true(jpt__vfs_client_next_input(c, &input));
    assert_string_equal(input, "\"y\"");
    jpt_free(input);
    assert_true(jpt__vfs_client_next_input(c, &input));
    assert_string_equal(input, "null");
    jpt_free(input);
    assert_true(jpt__vfs_client_next_input(c, &input));
    assert_null(input);
    assert_true(jpt__vfs_client_next_input(c, &input));
    assert_string_equal(input, "{\"k\":1}");
    jpt_free(input);
    assert_false(jpt__vfs_client_next_input(c, &input));
    /* The response that comes after all is dropped. */
    client_feed(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    assert_int_equal(jpt__vfs_client_reply(c, id)->code, JPT_VFS_E_CANCELLED);
    jpt__vfs_client_free(c);
}

static void a_host_breaking_the_protocol_fails_the_client(void **state)
{
    static const struct {
        const char *text;
        int status;
        const char *message;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"method\":\"apply\"}\n", JPT_ERR_PROTOCOL,
         "the host's first message is not init"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", JPT_ERR_PROTOCOL,
         "the host's first message is not init"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{}}\n", JPT_ERR_PROTOCOL,
         "the host's init message has no params.tool object"},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{\"tool\":{}}}\n", JPT_ERR_PROTOCOL,
         "the host's init message has no params.tool.name"},
        {"not json\n", JPT_ERR_PROTOCOL, "line 1 from the host is not JSON: invalid literal at byte 0"},
        {"[]\n", JPT_ERR_PROTOCOL, "line 1 from the host is not a JSON object"},
    };
    jpt__vfs_client *c;
    uint64_t id;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(jpt__vfs_client_new(0, 0, &c), JPT_OK);
        assert_int_equal(jpt__vfs_client_feed(c, cases[i].text, strlen(cases[i].text)),
                         cases[i].status);
        assert_string_equal(jpt__vfs_client_errmsg(c), cases[i].message);
        assert_int_equal(jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "a", &id),
                         cases[i].status);
        jpt__vfs_client_free(c);
    }
    /* After init: an id-null error, a response without result or error,
     * an error without a code, a line past the limit. */
    static const struct {
        const char *text, *message;
    } after[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}\n",
         "the host could not read a request: Parse error"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1}\n",
         "line 2 from the host is neither a notification nor a response"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"m\"}}\n",
         "the host answered with an error without a negative integer code"},
    };
    for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
        c = client();
        assert_int_equal(jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "a", &id), JPT_OK);
        assert_int_equal(jpt__vfs_client_feed(c, after[i].text, strlen(after[i].text)),
                         JPT_ERR_PROTOCOL);
        assert_string_equal(jpt__vfs_client_errmsg(c), after[i].message);
        jpt__vfs_client_free(c);
    }
    assert_int_equal(jpt__vfs_client_new(200, 0, &c), JPT_OK);
    char line[300];
    memset(line, ' ', sizeof(line));
    assert_int_equal(jpt__vfs_client_feed(c, line, sizeof(line)), JPT_ERR_LIMIT);
    assert_string_equal(jpt__vfs_client_errmsg(c),
                        "line 1 from the host is longer than the limit of 200 bytes");
    jpt__vfs_client_free(c);
}

static void a_request_over_the_limit_is_refused_and_the_client_goes_on(void **state)
{
    jpt__vfs_client *c;
    char content[200];
    uint64_t id = 0;

    (void)state;
    assert_int_equal(jpt__vfs_client_new(0, 150, &c), JPT_OK);
    client_feed(c, init_line);
    memset(content, 'x', sizeof(content));
    assert_int_equal(jpt__vfs_client_request_write(c, "p", content, sizeof(content), &id),
                     JPT_ERR_LIMIT);
    assert_string_equal(jpt__vfs_client_errmsg(c),
                        "the request is 279 bytes, more than the 150 a message to the host may have");
    assert_int_equal(jpt__vfs_client_notify(c, "result", "{\"content\":\"" "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                                      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                                      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}", 132),
                     JPT_ERR_LIMIT);
    const char *p;
    assert_int_equal(jpt__vfs_client_output(c, &p), 0);
    assert_int_equal(jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "a", &id), JPT_OK);
    assert_int_equal(id, 1);
    assert_int_equal(jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "caf\xe9", &id),
                     JPT_ERR_INVALID);
    assert_int_equal(jpt__vfs_client_status(c), JPT_OK);
    jpt__vfs_client_free(c);
}

/* A session of the tool side touching every path that allocates. */
static int client_session(char **transcript)
{
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{\"tool\":{\"name\":\"t\","
        "\"arguments\":{},\"answers\":{\"a\":1},\"options\":{}},\"protocol_version\":\"0.1.0\"}}\n";
    static const char host[] =
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"entries\":[]}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"pending\",\"params\":{\"request_id\":1,\"reason\":\"r\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32001,\"message\":\"denied\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"apply\",\"params\":{\"input\":\"y\"}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"cancel\"}\n";
    jpt__vfs_client *c;
    char seen[64] = "", *input;
    uint64_t id;
    int rc;

    if ((rc = jpt__vfs_client_new(0, 0, &c)) < 0)
        return rc;
    jpt__vfs_client_on_pending(c, pending, seen);
    if ((rc = jpt__vfs_client_feed(c, init, sizeof(init) - 1)) == JPT_OK &&
        (rc = jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "a", &id)) == JPT_OK &&
        (rc = jpt__vfs_client_request(c, "fs.list_dir", "{\"path\":\"d\"}", &id)) == JPT_OK &&
        (rc = jpt__vfs_client_request_write(c, "w", "\xff", 1, &id)) == JPT_OK &&
        (rc = jpt__vfs_client_notify(c, "state", "{\"type\":\"running\"}", 18)) == JPT_OK)
        rc = jpt__vfs_client_feed(c, host, sizeof(host) - 1);
    while (rc == JPT_OK && jpt__vfs_client_next_input(c, &input))
        jpt_free(input);
    if (rc == JPT_OK) {
        *transcript = client_out(c);
        jpt__vfs_reply *r = jpt__vfs_client_reply(c, 2);
        if (r == NULL || !r->done || jpt__vfs_client_reply(c, 1)->code != JPT_VFS_E_ACCESS_DENIED ||
            strcmp(seen, "1:r;") != 0)
            rc = JPT_ERR_STATE;
    }
    jpt__vfs_client_free(c);
    return rc;
}

/* One run under tu_sweep: whatever succeeds says exactly what an
 * unhindered run says. */
static int client_session_op(void *ctx)
{
    const char *expected = ctx;
    char *got = NULL;
    int rc = client_session(&got);

    if (rc == JPT_OK) {
        assert_string_equal(got, expected);
        free(got);
    }
    return rc;
}

static void the_client_survives_every_allocation_failure(void **state)
{
    char *expected = NULL;

    (void)state;
    assert_int_equal(client_session(&expected), JPT_OK);
    tu_sweep("the client", client_session_op, expected);
    free(expected);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_tool_reads_its_initial_context),
        cmocka_unit_test(every_file_method_works_through_the_sdk),
        cmocka_unit_test(every_error_code_reaches_the_tool),
        cmocka_unit_test(http_calls_work_through_the_sdk),
        cmocka_unit_test(pipelined_reads_are_answered_out_of_order),
        cmocka_unit_test(large_messages_both_ways_at_once_never_deadlock),
        cmocka_unit_test(a_request_the_host_cannot_read_ends_the_session),
        cmocka_unit_test(a_stateful_tool_takes_inputs_until_cancelled),
        cmocka_unit_test(a_request_on_the_policy_prompt_is_pending),
        cmocka_unit_test(cancel_ends_a_request_the_host_never_answers),
        cmocka_unit_test(an_error_notification_ends_the_call_with_an_error),
        cmocka_unit_test(a_host_that_closes_stdin_fails_the_waiting_read),
        cmocka_unit_test(connecting_fails_with_a_reason),
        cmocka_unit_test(the_client_reads_init_and_writes_requests),
        cmocka_unit_test(the_client_matches_responses_to_requests_in_any_order),
        cmocka_unit_test(inputs_and_cancel_come_in_order_and_cancel_ends_waiting_requests),
        cmocka_unit_test(a_host_breaking_the_protocol_fails_the_client),
        cmocka_unit_test(a_request_over_the_limit_is_refused_and_the_client_goes_on),
        cmocka_unit_test(the_client_survives_every_allocation_failure),
    };

    tu_install_counting_allocator();
    signal(SIGPIPE, SIG_IGN);
    return TU_RUN(tests);
}
