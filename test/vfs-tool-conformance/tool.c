/* The C driver of the tool SDKs' conformance cases (README.md here): a VFS
 * tool that runs the tool-side actions of one case through vfs_tool.h and
 * reports each outcome, as tool.py does through jptool.vfs_tool.
 *
 *     vfs-conformance-tool '<the case's actions, a JSON array>'
 *
 * stdin and stdout are the protocol's pipes; the fd that the environment
 * variable JPT_CONFORMANCE_REPORT_FD names takes the reports, one
 * JSON object a line: {"i", "do", "ok": value} or {"i", "do", "error":
 * "JPT_ERR_…", "code", "message", "data"}, and {"pending": [id, reason]}
 * from the on_pending callback. Bytes travel as hex ("hex"), sizes as
 * decimal strings. Exits 0 once every action ran (or connecting failed),
 * 2 when the actions cannot be read, 3 when a report cannot be written. */
#define _POSIX_C_SOURCE 200809L /* fdopen */
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jptool/vfs_tool.h>

static jpt_vfs_tool *t;
static FILE *reports;

_Noreturn static void die(int code, const char *what)
{
    fprintf(stderr, "vfs-conformance-tool: %s\n", what);
    exit(code);
}

static void report(json_t *r)
{
    char *line = json_dumps(r, JSON_COMPACT | JSON_ENSURE_ASCII);

    if (line == NULL || fprintf(reports, "%s\n", line) < 0 || fflush(reports) != 0)
        die(3, "cannot write a report");
    free(line);
    json_decref(r);
}

/* Text the SDK gives as UTF-8, or its bytes as hex when it is not. */
static json_t *text(const char *s)
{
    json_t *v;

    if (s == NULL)
        return json_null();
    if ((v = json_string(s)) != NULL)
        return v;
    return json_pack("{s:s}", "invalid utf-8", s);
}

static json_t *hex(const char *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    char *s = malloc(2 * n + 1);

    if (s == NULL)
        die(3, "out of memory");
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = digits[(unsigned char)p[i] >> 4];
        s[2 * i + 1] = digits[(unsigned char)p[i] & 15];
    }
    s[2 * n] = '\0';
    json_t *v = json_pack("{s:s}", "hex", s);
    free(s);
    return v;
}

/* JSON text the SDK gave, parsed (it is JSON: the SDK checked it). */
static json_t *parsed(const char *json)
{
    json_t *v = json != NULL ? json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;

    return v != NULL ? v : json_pack("{s:s?}", "unparsable", json);
}

/* One action's outcome; takes `value`. */
static void outcome(size_t i, const char *what, int rc, json_t *value)
{
    json_t *r = json_pack("{s:I,s:s}", "i", (json_int_t)i, "do", what);

    if (rc == JPT_OK) {
        json_object_set_new(r, "ok", value != NULL ? value : json_null());
    } else {
        json_decref(value);
        const char *data = jpt_vfs_tool_error_data(t);
        json_object_set_new(r, "error", text(jpt_status_name(rc)));
        json_object_set_new(r, "code", json_integer(jpt_vfs_tool_error_code(t)));
        json_object_set_new(r, "message",
                            text(t != NULL ? jpt_vfs_tool_errmsg(t) : jpt_last_error()));
        json_object_set_new(r, "data", data != NULL ? parsed(data) : json_null());
    }
    report(r);
}

static void on_pending(uint64_t id, const char *reason, void *ud)
{
    (void)ud;
    report(json_pack("{s:[I,o]}", "pending", (json_int_t)id, text(reason)));
}

/* ---- Reading an action --------------------------------------------------- */

static const char *str(const json_t *a, const char *key)
{
    return json_string_value(json_object_get(a, key));
}

/* An action's bytes: its "text" (UTF-8) or "hex"; none: empty. */
static char *bytes(const json_t *a, size_t *len)
{
    const char *s = str(a, "text"), *h = str(a, "hex");

    if (s != NULL) {
        *len = json_string_length(json_object_get(a, "text"));
        char *copy = malloc(*len + 1);
        if (copy == NULL)
            die(3, "out of memory");
        memcpy(copy, s, *len + 1);
        return copy;
    }
    if (h == NULL)
        h = "";
    *len = strlen(h) / 2;
    char *out = malloc(*len + 1);
    if (out == NULL)
        die(3, "out of memory");
    for (size_t i = 0; i < *len; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1)
            die(2, "bad hex");
        out[i] = (char)v;
    }
    out[*len] = '\0';
    return out;
}

/* A JSON array of strings as a C array (NULL for none). */
static const char **strings(const json_t *v, size_t *n)
{
    *n = json_array_size(v);
    if (*n == 0)
        return NULL;
    const char **out = calloc(*n, sizeof(*out));
    if (out == NULL)
        die(3, "out of memory");
    for (size_t i = 0; i < *n; i++)
        out[i] = json_string_value(json_array_get(v, i));
    return out;
}

/* A value as JSON text for the SDK (NULL: absent). */
static char *json_text(const json_t *v)
{
    return v != NULL ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

static json_t *context(void)
{
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "name", text(jpt_vfs_tool_name(t)), "arguments",
                     parsed(jpt_vfs_tool_arguments(t)), "answers", parsed(jpt_vfs_tool_answers(t)),
                     "options", parsed(jpt_vfs_tool_options(t)), "protocol_version",
                     text(jpt_vfs_tool_protocol_version(t)));
}

static const char *const kinds[] = {"?", "file", "dir", "symlink", "other"};

static json_t *response(const jpt_vfs_http_response *r)
{
    json_t *v = hex(r->body, r->body_len);

    json_object_set_new(v, "status", json_integer(r->status));
    json_object_set_new(v, "headers", parsed(r->headers_json));
    return v;
}

static bool connect_to(size_t i, const json_t *a)
{
    jpt_vfs_connect_options o = {.size = sizeof(o)};

    o.max_message = (size_t)json_integer_value(json_object_get(a, "max_message"));
    o.max_request = (size_t)json_integer_value(json_object_get(a, "max_request"));
    if (json_is_true(json_object_get(a, "pending")))
        o.on_pending = on_pending;
    int rc = jpt_vfs_tool_connect_fds(0, 1, &o, &t);
    outcome(i, "connect", rc, rc == JPT_OK ? context() : NULL);
    return rc == JPT_OK;
}

/* Runs action `i`; false when nothing more can run. */
static bool run(size_t i, const json_t *a)
{
    const char *what = str(a, "do"), *path = str(a, "path");
    char *out = NULL, *json = NULL, *err = NULL;
    size_t len = 0, n1, n2;
    uint64_t id = 0, size = 0;
    int rc, flag = 0, kind = 0;

    if (what == NULL)
        die(2, "an action without \"do\"");
    if (strcmp(what, "connect") == 0)
        return connect_to(i, a);
    if (t == NULL)
        die(2, "an action before connect");
    if (strcmp(what, "context") == 0) {
        outcome(i, what, JPT_OK, context());
    } else if (strcmp(what, "read") == 0) {
        rc = jpt_vfs_tool_read(t, path, &out, &len);
        outcome(i, what, rc, rc == JPT_OK ? hex(out, len) : NULL);
    } else if (strcmp(what, "write") == 0) {
        char *data = bytes(a, &len);
        outcome(i, what, jpt_vfs_tool_write(t, path, data, len), NULL);
        free(data);
    } else if (strcmp(what, "exists") == 0) {
        rc = jpt_vfs_tool_exists(t, path, &flag);
        outcome(i, what, rc, json_boolean(flag));
    } else if (strcmp(what, "list_dir") == 0) {
        rc = jpt_vfs_tool_list_dir(t, path, &json);
        outcome(i, what, rc, rc == JPT_OK ? parsed(json) : NULL);
    } else if (strcmp(what, "metadata") == 0) {
        rc = jpt_vfs_tool_metadata(t, path, &kind, &size);
        char digits[24];
        snprintf(digits, sizeof(digits), "%" PRIu64, size);
        outcome(i, what, rc,
                rc == JPT_OK ? json_pack("{s:s,s:s}", "kind", kinds[kind], "size", digits) : NULL);
    } else if (strcmp(what, "delete") == 0) {
        outcome(i, what, jpt_vfs_tool_delete(t, path), NULL);
    } else if (strcmp(what, "rename") == 0) {
        outcome(i, what, jpt_vfs_tool_rename(t, str(a, "from"), str(a, "to")), NULL);
    } else if (strcmp(what, "grep") == 0) {
        const json_t *q = json_object_get(a, "query");
        const char **paths = strings(json_object_get(q, "paths"), &n1);
        const char **exts = strings(json_object_get(q, "extensions"), &n2);
        jpt_vfs_grep_query query = {
            .size = sizeof(query),
            .pattern = str(q, "pattern"),
            .paths = paths,
            .npaths = n1,
            .extensions = exts,
            .nextensions = n2,
            .context = (unsigned)json_integer_value(json_object_get(q, "context")),
            .case_insensitive = json_is_true(json_object_get(q, "case_insensitive")),
            .fixed_strings = json_is_true(json_object_get(q, "fixed_strings")),
            .max_matches = (uint64_t)json_integer_value(json_object_get(q, "max_matches")),
        };
        rc = jpt_vfs_tool_grep(t, &query, &json);
        outcome(i, what, rc, rc == JPT_OK ? parsed(json) : NULL);
        free(paths);
        free(exts);
    } else if (strcmp(what, "http_get") == 0 || strcmp(what, "http_post") == 0) {
        const json_t *h = json_object_get(a, "headers");
        size_t nh = json_array_size(h);
        jpt_vfs_http_header *headers = calloc(nh + 1, sizeof(*headers));
        jpt_vfs_http_response r = {.size = sizeof(r)};
        if (headers == NULL)
            die(3, "out of memory");
        for (size_t k = 0; k < nh; k++) {
            headers[k].name = json_string_value(json_array_get(json_array_get(h, k), 0));
            headers[k].value = json_string_value(json_array_get(json_array_get(h, k), 1));
        }
        if (what[5] == 'g') {
            rc = jpt_vfs_tool_http_get(t, str(a, "url"), headers, nh, &r);
        } else {
            char *body = bytes(a, &len);
            rc = jpt_vfs_tool_http_post(t, str(a, "url"), headers, nh, body, len, &r);
            free(body);
        }
        outcome(i, what, rc, rc == JPT_OK ? response(&r) : NULL);
        jpt_vfs_http_response_clear(&r);
        free(headers);
    } else if (strcmp(what, "process_run") == 0) {
        const char **args = strings(json_object_get(a, "args"), &n1);
        const char **envs = strings(json_object_get(a, "envs"), &n2);
        int code = 0;
        rc = jpt_vfs_tool_process_run(t, str(a, "program"), args, n1, envs, n2, &code, &out,
                                      &err);
        outcome(i, what, rc,
                rc == JPT_OK ? json_pack("{s:i,s:o,s:o}", "exit_code", code, "stdout", text(out),
                                         "stderr", text(err))
                             : NULL);
        free(args);
        free(envs);
    } else if (strcmp(what, "call") == 0 || strcmp(what, "submit") == 0) {
        char *params = json_text(json_object_get(a, "params"));
        if (what[0] == 'c') {
            rc = jpt_vfs_tool_call(t, str(a, "method"), params, &json);
            outcome(i, what, rc, rc == JPT_OK ? parsed(json) : NULL);
        } else {
            rc = jpt_vfs_tool_submit(t, str(a, "method"), params, &id);
            outcome(i, what, rc, json_integer((json_int_t)id));
        }
        free(params);
    } else if (strcmp(what, "submit_read") == 0) {
        rc = jpt_vfs_tool_submit_read(t, path, &id);
        outcome(i, what, rc, json_integer((json_int_t)id));
    } else if (strcmp(what, "submit_write") == 0) {
        char *data = bytes(a, &len);
        rc = jpt_vfs_tool_submit_write(t, path, data, len, &id);
        outcome(i, what, rc, json_integer((json_int_t)id));
        free(data);
    } else if (strcmp(what, "collect") == 0) {
        id = (uint64_t)json_integer_value(json_object_get(a, "id"));
        rc = jpt_vfs_tool_collect(t, id, &json);
        outcome(i, what, rc, rc == JPT_OK ? parsed(json) : NULL);
    } else if (strcmp(what, "collect_read") == 0) {
        id = (uint64_t)json_integer_value(json_object_get(a, "id"));
        rc = jpt_vfs_tool_collect_read(t, id, &out, &len);
        outcome(i, what, rc, rc == JPT_OK ? hex(out, len) : NULL);
    } else if (strcmp(what, "state") == 0) {
        outcome(i, what, jpt_vfs_tool_state(t, str(a, "json")), NULL);
    } else if (strcmp(what, "next_input") == 0) {
        rc = jpt_vfs_tool_next_input(t, &json);
        outcome(i, what, rc, rc == JPT_OK ? parsed(json) : NULL);
    } else if (strcmp(what, "cancelled") == 0) {
        outcome(i, what, JPT_OK, json_boolean(jpt_vfs_tool_cancelled(t)));
    } else if (strcmp(what, "result") == 0) {
        outcome(i, what, jpt_vfs_tool_result(t, str(a, "json")), NULL);
    } else if (strcmp(what, "result_text") == 0) {
        outcome(i, what, jpt_vfs_tool_result_text(t, str(a, "text")), NULL);
    } else if (strcmp(what, "error") == 0) {
        const char **trace = strings(json_object_get(a, "trace"), &n1);
        rc = jpt_vfs_tool_error(t, str(a, "message"), trace, n1,
                                json_is_true(json_object_get(a, "transient")));
        outcome(i, what, rc, NULL);
        free(trace);
    } else if (strcmp(what, "close") == 0) {
        jpt_vfs_tool_free(t);
        t = NULL;
        outcome(i, what, JPT_OK, NULL);
        return false;
    } else {
        die(2, "an unknown action");
    }
    jpt_free(out);
    jpt_free(json);
    jpt_free(err);
    return true;
}

int main(int argc, char **argv)
{
    json_error_t jerr;
    json_t *actions;

    if (argc != 2 || (actions = json_loads(argv[1], 0, &jerr)) == NULL ||
        !json_is_array(actions))
        die(2, "usage: vfs-conformance-tool '<actions: a JSON array>'");
    const char *fd = getenv("JPT_CONFORMANCE_REPORT_FD");
    if (fd == NULL || (reports = fdopen(atoi(fd), "w")) == NULL)
        die(3, "JPT_CONFORMANCE_REPORT_FD does not name an open fd");
    for (size_t i = 0; i < json_array_size(actions); i++)
        if (!run(i, json_array_get(actions, i)))
            break;
    jpt_vfs_tool_free(t);
    json_decref(actions);
    fclose(reports);
    return 0;
}
