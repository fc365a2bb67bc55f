/* vfs-probe: a VFS tool for test-vfs-host, driven by its init arguments.
 * Each mode reports what it saw as its result text, one line per step,
 * which the test compares with what the host should have done.
 *
 *   {"ops": [{"method": "fs.read", "params": {...}}, ...]}
 *       each request in turn: "<method> ok <result JSON>" or
 *       "<method> err <code> <message>", and " data <JSON>" after it when
 *       the error has data
 *   {"concurrent": [ops]}
 *       every request submitted at once, collected last first; the lines
 *       in the order of the ops
 *   {"run": {"program", "args", "envs"}}
 *       process.run through jpt_vfs_tool_process_run: "run <exit> stdout=<JSON
 *       string> stderr=<JSON string>", or "run err <code> <message>"
 *   {"abandon": op, "wait_for": path, "then": "exit" | "cancel"}
 *       submits op, asks fs.exists(path) until it is true, then ends with
 *       the result "abandoned" (its request never collected), or waits for
 *       the host's cancel and exits
 *   {"repeat": {"method", "params", "count"}}
 *       the request `count` times: "ok N err M" and each distinct result
 *       or error once, with how often ("<n>x ok <result>")
 *   {"pipeline": N, "path": p}
 *       N reads of `p` submitted at once, collected in reverse: "N ok"
 *   {"submit_then": {"submit": {"method", "params", "count"}, "then": [ops]}}
 *       the request `count` times without waiting, then each op of
 *       `then` in turn (its line as in "ops"), then the submitted ones
 *       collected: each distinct outcome once, "<n>x <line>"
 *   {"stateful": true}
 *       reports a running state, then for each apply: an input "read P"
 *       reads P and reports it as a running state; "stop" ends with a
 *       stopped state; a cancel ends the tool
 *   {"silent": true}       sends nothing and waits for its stdin to end
 *   {"exit": N, "stderr": "text"}
 *       writes the text to stderr and exits N without a result
 *   {"garbage": N}         N lines that are not JSON, then a result
 *   {"long_line": N}       one line of N bytes, then an fs.exists, then a
 *                          result: "exists ok ..."
 *   {"no_read": N}         N requests written without ever reading stdin,
 *                          then it waits to be stopped
 *   {"unterminated": true} ends with a line without its newline
 *   {"ask": true}          a one-shot question: without an answer to "go",
 *                          a result holding a question block; with one,
 *                          "answered <answer JSON>"
 * and with any mode, {"show_pending": true} adds "pending <reason>" for
 * each `pending` notification, before the line of its request. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jptool/vfs_tool.h>

static jpt_vfs_tool *t;
static char *report;
static size_t report_len, report_cap;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    va_list ap;
    char *line = NULL;

    va_start(ap, fmt);
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0)
        exit(1);
    if (report_len + (size_t)n + 2 > report_cap) {
        report_cap = (report_len + (size_t)n + 2) * 2;
        if ((report = realloc(report, report_cap)) == NULL)
            exit(1);
    }
    memcpy(report + report_len, line, (size_t)n);
    report_len += (size_t)n;
    report[report_len++] = '\n';
    report[report_len] = '\0';
    free(line);
}

_Noreturn static void die(const char *what)
{
    fprintf(stderr, "vfs-probe: %s: %s (code %d)\n", what, t ? jpt_vfs_tool_errmsg(t) : "",
            t ? jpt_vfs_tool_error_code(t) : 0);
    exit(1);
}

static void finish(void)
{
    if (report_len > 0)
        report[--report_len] = '\0';
    if (jpt_vfs_tool_result_text(t, report != NULL ? report : "") != JPT_OK)
        die("result");
}

/* The last call's error as a line. */
static void error_line(const char *method, char *line, size_t n)
{
    const char *data = jpt_vfs_tool_error_data(t);

    snprintf(line, n, "%s err %d %s%s%s", method, jpt_vfs_tool_error_code(t),
             jpt_vfs_tool_errmsg(t), data != NULL ? " data " : "", data != NULL ? data : "");
}
static void outcome(const char *method, int rc, const char *result, char *line, size_t n);

/* One request: its outcome as a line. */
static void one(const char *method, const json_t *params, char *line, size_t n)
{
    char *p = json_dumps(params, JSON_COMPACT), *result = NULL;
    int rc = jpt_vfs_tool_call(t, method, p != NULL ? p : "{}", &result);

    outcome(method, rc, result, line, n);
    jpt_free(result);
    free(p);
}

static void mode_ops(const json_t *ops)
{
    size_t i;
    const json_t *op;
    static char line[1 << 16];

    json_array_foreach(ops, i, op) {
        one(json_string_value(json_object_get(op, "method")), json_object_get(op, "params"),
            line, sizeof(line));
        say("%s", line);
    }
    finish();
}

static void mode_concurrent(const json_t *ops)
{
    size_t n = json_array_size(ops), i;
    const json_t *op;
    uint64_t *ids = calloc(n + 1, sizeof(*ids));
    char **lines = calloc(n + 1, sizeof(*lines));

    if (ids == NULL || lines == NULL)
        exit(1);
    json_array_foreach(ops, i, op) {
        char *p = json_dumps(json_object_get(op, "params"), JSON_COMPACT);
        if (jpt_vfs_tool_submit(t, json_string_value(json_object_get(op, "method")), p,
                                &ids[i]) != JPT_OK)
            die("submit");
        free(p);
    }
    for (i = n; i-- > 0;) {
        const char *method = json_string_value(json_object_get(json_array_get(ops, i), "method"));
        char *result = NULL;
        if ((lines[i] = malloc(1 << 16)) == NULL)
            exit(1);
        if (jpt_vfs_tool_collect(t, ids[i], &result) == JPT_OK)
            snprintf(lines[i], 1 << 16, "%s ok %s", method, result);
        else
            error_line(method, lines[i], 1 << 16);
        jpt_free(result);
    }
    for (i = 0; i < n; i++) {
        say("%s", lines[i]);
        free(lines[i]);
    }
    free(lines);
    free(ids);
    finish();
}

/* The strings of a JSON array, for jpt_vfs_tool_process_run. */
static const char **strings(const json_t *a, size_t *n)
{
    const char **v = calloc(json_array_size(a) + 1, sizeof(*v));
    size_t i;
    const json_t *s;

    if (v == NULL)
        exit(1);
    json_array_foreach(a, i, s)
        v[i] = json_string_value(s);
    *n = json_array_size(a);
    return v;
}

static void mode_run(const json_t *r)
{
    size_t nargs, nenvs;
    const char **args = strings(json_object_get(r, "args"), &nargs);
    const char **envs = strings(json_object_get(r, "envs"), &nenvs);
    char *out = NULL, *err = NULL;
    int code = 0;
    static char line[1 << 16];

    if (jpt_vfs_tool_process_run(t, json_string_value(json_object_get(r, "program")), args,
                                 nargs, envs, nenvs, &code, &out, &err) == JPT_OK) {
        json_t *o = json_string(out), *e = json_string(err);
        char *os = json_dumps(o, JSON_ENCODE_ANY), *es = json_dumps(e, JSON_ENCODE_ANY);
        say("run %d stdout=%s stderr=%s", code, os, es);
        free(os);
        free(es);
        json_decref(o);
        json_decref(e);
    } else {
        error_line("run", line, sizeof(line));
        say("%s", line);
    }
    jpt_free(out);
    jpt_free(err);
    free(args);
    free(envs);
    finish();
}

/* The probe's exit status. */
static int mode_abandon(const json_t *op, const char *wait_for, const char *then)
{
    char *p = json_dumps(json_object_get(op, "params"), JSON_COMPACT);
    uint64_t id;
    int exists = 0;

    if (jpt_vfs_tool_submit(t, json_string_value(json_object_get(op, "method")), p, &id) !=
        JPT_OK)
        die("submit");
    free(p);
    while (!exists) {
        if (jpt_vfs_tool_exists(t, wait_for, &exists) != JPT_OK)
            die("exists");
        if (!exists) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (then != NULL && strcmp(then, "cancel") == 0) {
        char *input = NULL;
        int rc = jpt_vfs_tool_next_input(t, &input);
        jpt_free(input);
        return rc == JPT_ERR_CANCELLED ? 0 : 5;
    }
    say("abandoned");
    finish();
    return 0;
}

static void mode_repeat(const json_t *r)
{
    const char *method = json_string_value(json_object_get(r, "method"));
    const json_t *params = json_object_get(r, "params");
    json_int_t count = json_integer_value(json_object_get(r, "count"));
    json_t *seen = json_object();
    static char line[4096];

    for (json_int_t k = 0; k < count; k++) {
        one(method, params, line, sizeof(line));
        json_t *n = json_object_get(seen, line);
        json_object_set_new(seen, line, json_integer(n != NULL ? json_integer_value(n) + 1 : 1));
    }
    const char *key;
    json_t *v;
    json_object_foreach(seen, key, v)
        say("%" JSON_INTEGER_FORMAT "x %s", json_integer_value(v), key);
    json_decref(seen);
    finish();
}

static void mode_pipeline(json_int_t n, const char *path)
{
    uint64_t *ids = calloc((size_t)n, sizeof(*ids));
    json_int_t good = 0;

    if (ids == NULL)
        exit(1);
    for (json_int_t i = 0; i < n; i++)
        if (jpt_vfs_tool_submit_read(t, path, &ids[i]) != JPT_OK)
            die("submit");
    for (json_int_t i = n - 1; i >= 0; i--) {
        char *data = NULL;
        size_t len;
        if (jpt_vfs_tool_collect_read(t, ids[i], &data, &len) == JPT_OK)
            good++;
        jpt_free(data);
    }
    free(ids);
    say("%" JSON_INTEGER_FORMAT " ok", good);
    finish();
}

/* One collected response as an ops line. */
static void outcome(const char *method, int rc, const char *result, char *line, size_t n)
{
    if (rc == JPT_OK)
        snprintf(line, n, "%s ok %s", method, result);
    else
        error_line(method, line, n);
}

static void mode_submit_then(const json_t *c)
{
    const json_t *sub = json_object_get(c, "submit"), *op;
    const char *method = json_string_value(json_object_get(sub, "method"));
    char *params = json_dumps(json_object_get(sub, "params"), JSON_COMPACT);
    json_int_t count = json_integer_value(json_object_get(sub, "count"));
    uint64_t *ids = calloc((size_t)count, sizeof(*ids));
    json_t *seen = json_object();
    static char line[1 << 16];
    size_t i;

    if (ids == NULL || params == NULL || seen == NULL)
        exit(1);
    for (json_int_t k = 0; k < count; k++)
        if (jpt_vfs_tool_submit(t, method, params, &ids[k]) != JPT_OK)
            die("submit");
    json_array_foreach(json_object_get(c, "then"), i, op) {
        one(json_string_value(json_object_get(op, "method")), json_object_get(op, "params"),
            line, sizeof(line));
        say("%s", line);
    }
    for (json_int_t k = 0; k < count; k++) {
        char *result = NULL;
        int rc = jpt_vfs_tool_collect(t, ids[k], &result);
        outcome(method, rc, result, line, sizeof(line));
        jpt_free(result);
        json_t *n = json_object_get(seen, line);
        json_object_set_new(seen, line, json_integer(n != NULL ? json_integer_value(n) + 1 : 1));
    }
    const char *key;
    json_t *v;
    json_object_foreach(seen, key, v)
        say("%" JSON_INTEGER_FORMAT "x %s", json_integer_value(v), key);
    json_decref(seen);
    free(ids);
    free(params);
    finish();
}

static void report_state(const char *type, const char *content)
{
    json_t *st = json_pack("{s:s, s:s}", "type", type, "content", content);
    char *text = json_dumps(st, JSON_COMPACT);

    if (text == NULL || jpt_vfs_tool_state(t, text) != JPT_OK)
        die("state");
    free(text);
    json_decref(st);
}

static void mode_stateful(void)
{
    char *input = NULL;
    static char line[1 << 16];

    report_state("running", "ready");
    for (;;) {
        int rc = jpt_vfs_tool_next_input(t, &input);
        if (rc == JPT_ERR_CANCELLED || rc == JPT_ERR_IO)
            exit(0);
        if (rc != JPT_OK)
            die("next_input");
        json_t *v = json_loads(input, JSON_DECODE_ANY, NULL);
        const char *text = json_string_value(v);
        if (text != NULL && strncmp(text, "read ", 5) == 0) {
            json_t *params = json_pack("{s:s}", "path", text + 5);
            one("fs.read", params, line, sizeof(line));
            json_decref(params);
            report_state("running", line);
        } else if (text != NULL && strcmp(text, "stop") == 0) {
            json_t *st = json_pack("{s:s, s:s}", "type", "stopped", "result", "stopped on request");
            char *s = json_dumps(st, JSON_COMPACT);
            if (jpt_vfs_tool_state(t, s) != JPT_OK)
                die("state");
            free(s);
            json_decref(st);
            exit(0);
        } else
            report_state("running", input);
        json_decref(v);
        jpt_free(input);
    }
}

/* Raw lines on stdout, bypassing the SDK (the protocol's stdout is ours). */
/* Writes straight to stdout, which the SDK has made non-blocking. */
static void raw(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(1, p, n);
        if (k < 0 && errno == EAGAIN) {
            struct pollfd pfd = {.fd = 1, .events = POLLOUT};
            poll(&pfd, 1, -1);
            continue;
        }
        if (k <= 0)
            exit(2);
        p += k;
        n -= (size_t)k;
    }
}

/* One line of n bytes, then an fs.exists, both written past the SDK (which
 * never sends a line over the limit, and ends its session on the -32600
 * answer with id null that such a line gets): the responses are read raw
 * too, and the result says what came back. */
static void mode_long_line(json_int_t n)
{
    static char chunk[65536];

    memset(chunk, 'x', sizeof(chunk));
    raw("{\"jsonrpc\":\"2.0\",\"method\":\"fs.read\",\"id\":1,\"params\":{\"path\":\"", 61);
    for (json_int_t left = n; left > 0; left -= (json_int_t)sizeof(chunk))
        raw(chunk, left < (json_int_t)sizeof(chunk) ? (size_t)left : sizeof(chunk));
    raw("\"}}\n", 4);
    static const char exists[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"fs.exists\",\"id\":2,\"params\":{\"path\":\".\"}}\n";
    raw(exists, sizeof(exists) - 1);

    /* Two response lines: the -32600 for the long one, then id 2's. */
    static char in[8192];
    size_t len = 0;
    int lines = 0;
    while (lines < 2 && len < sizeof(in) - 1) {
        ssize_t k = read(0, in + len, sizeof(in) - 1 - len);
        if (k < 0 && errno == EAGAIN) {
            struct pollfd pfd = {.fd = 0, .events = POLLIN};
            poll(&pfd, 1, -1);
            continue;
        }
        if (k <= 0)
            exit(3);
        for (ssize_t i = 0; i < k; i++)
            lines += in[len + (size_t)i] == '\n';
        len += (size_t)k;
    }
    in[len] = '\0';
    char *second = strchr(in, '\n');
    if (second == NULL || strstr(in, "\"id\":null") == NULL ||
        strstr(in, "-32600") == NULL)
        exit(4);
    json_t *resp = json_loads(second + 1, JSON_DISABLE_EOF_CHECK, NULL);
    char *result = json_dumps(json_object_get(resp, "result"), JSON_COMPACT);
    json_t *done = json_pack("{s:s,s:s,s:{s:s+}}", "jsonrpc", "2.0", "method", "result",
                             "params", "content", "fs.exists ok ", result);
    char *text = json_dumps(done, JSON_COMPACT);
    raw(text, strlen(text));
    raw("\n", 1);
    free(text);
    free(result);
    json_decref(done);
    json_decref(resp);
}

/* {"show_pending": true}: each `pending` the host sends is a line too. */
static bool show_pending;

static void on_pending(uint64_t request_id, const char *reason, void *ud)
{
    (void)request_id;
    (void)ud;
    if (show_pending)
        say("pending %s", reason);
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
    jpt_vfs_connect_options opts = {.size = sizeof(opts), .on_pending = on_pending};
    if (jpt_vfs_tool_connect_fds(0, 1, &opts, &t) != JPT_OK)
        die("connect");
    json_t *args = json_loads(jpt_vfs_tool_arguments(t), 0, NULL);
    const json_t *v;

    show_pending = json_object_get(args, "show_pending") != NULL;
    int code = 0;

    if ((v = json_object_get(args, "ops")) != NULL)
        mode_ops(v);
    else if (json_object_get(args, "ask") != NULL) {
        json_t *answers = json_loads(jpt_vfs_tool_answers(t), 0, NULL);
        const json_t *go = json_object_get(answers, "go");
        if (go == NULL) {
            if (jpt_vfs_tool_result(t, "[{\"type\":\"question\",\"question\":{\"id\":\"go\","
                                       "\"text\":\"Go?\",\"schema\":{\"type\":\"boolean\"}}}]") !=
                JPT_OK)
                die("result");
        } else {
            char *text = json_dumps(go, JSON_ENCODE_ANY);
            say("answered %s", text);
            free(text);
            finish();
        }
        json_decref(answers);
    }
    else if ((v = json_object_get(args, "concurrent")) != NULL)
        mode_concurrent(v);
    else if ((v = json_object_get(args, "run")) != NULL)
        mode_run(v);
    else if ((v = json_object_get(args, "abandon")) != NULL)
        code = mode_abandon(v, json_string_value(json_object_get(args, "wait_for")),
                            json_string_value(json_object_get(args, "then")));
    else if ((v = json_object_get(args, "repeat")) != NULL)
        mode_repeat(v);
    else if ((v = json_object_get(args, "submit_then")) != NULL)
        mode_submit_then(v);
    else if ((v = json_object_get(args, "pipeline")) != NULL)
        mode_pipeline(json_integer_value(v), json_string_value(json_object_get(args, "path")));
    else if (json_object_get(args, "stateful") != NULL)
        mode_stateful();
    else if (json_object_get(args, "silent") != NULL) {
        /* stdin is non-blocking (the SDK's): wait for its end. */
        char c;
        struct pollfd pfd = {.fd = 0, .events = POLLIN};
        while (poll(&pfd, 1, -1) >= 0 && (read(0, &c, 1) > 0 || errno == EAGAIN))
            ;
    } else if ((v = json_object_get(args, "exit")) != NULL) {
        const char *text = json_string_value(json_object_get(args, "stderr"));
        if (text != NULL)
            fputs(text, stderr);
        code = (int)json_integer_value(v);
    } else if ((v = json_object_get(args, "garbage")) != NULL) {
        for (json_int_t i = 0; i < json_integer_value(v); i++)
            raw("this is not JSON\n", 17);
        say("survived");
        finish();
    } else if ((v = json_object_get(args, "long_line")) != NULL)
        mode_long_line(json_integer_value(v));
    else if ((v = json_object_get(args, "no_read")) != NULL) {
        char req[128];
        for (json_int_t i = 0; i < json_integer_value(v); i++) {
            int n = snprintf(req, sizeof(req),
                             "{\"jsonrpc\":\"2.0\",\"method\":\"fs.exists\",\"id\":%" JSON_INTEGER_FORMAT
                             ",\"params\":{\"path\":\".\"}}\n",
                             i + 1);
            raw(req, (size_t)n);
        }
        pause(); /* until the host stops it */
        return 0;
    } else if (json_object_get(args, "unterminated") != NULL) {
        raw("{\"jsonrpc\":\"2.0\"", 16);
    } else {
        say("unknown mode");
        finish();
    }
    /* Everything freed, so that LeakSanitizer reports only real leaks. */
    json_decref(args);
    jpt_vfs_tool_free(t);
    free(report);
    return code;
}
