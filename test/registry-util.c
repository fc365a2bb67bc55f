/* Helpers for the registry suites; see registry-util.h. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "registry-util.h"

jpt_registry *ru_registry_with(const jpt_registry_options *opts, const char *tools_json)
{
    jpt_registry *r = NULL;

    assert_int_equal(jpt_registry_new(opts, &r), JPT_OK);
    if (tools_json != NULL && jpt_registry_load_tools(r, tools_json, 0) != JPT_OK)
        fail_msg("load_tools: %s", jpt_registry_errmsg(r));
    return r;
}

jpt_registry *ru_registry(const char *tools_json)
{
    jpt_registry_options o = {0};

    o.size = sizeof(o);
    o.kill_grace_ms = 300;
    o.drain_ms = 100;
    return ru_registry_with(&o, tools_json);
}

json_t *ru_run(jpt_registry *r, const char *calls_json)
{
    jpt_batch *b = NULL;
    char *text = NULL;

    if (jpt_registry_submit(r, calls_json, &b) != JPT_OK)
        fail_msg("submit: %s", jpt_registry_errmsg(r));
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_batch_results_json(b, &text), JPT_OK);
    json_t *results = json_loads(text, 0, NULL);
    assert_non_null(results);
    jpt_free(text);
    jpt_batch_free(b);
    return results;
}

char *ru_call(jpt_registry *r, const char *tool, const char *arguments_json, bool *is_error)
{
    char calls[8192];

    snprintf(calls, sizeof(calls), "[{\"id\":\"c1\",\"name\":\"%s\",\"arguments\":%s}]", tool,
             arguments_json);
    json_t *results = ru_run(r, calls);
    char *content = strdup(ru_content(results, 0));
    if (is_error != NULL)
        *is_error = ru_is_error(results, 0);
    json_decref(results);
    return content;
}

const char *ru_content(const json_t *results, size_t i)
{
    const char *s = json_string_value(json_object_get(json_array_get(results, i), "content"));
    assert_non_null(s);
    return s;
}

bool ru_is_error(const json_t *results, size_t i)
{
    return json_is_true(json_object_get(json_array_get(results, i), "is_error"));
}

json_t *ru_response(const char *content)
{
    json_t *j = json_loads(content, 0, NULL);
    if (j == NULL)
        fail_msg("not a JSON response: %s", content);
    return j;
}

void ru_assert_contains(const char *haystack, const char *needle)
{
    if (strstr(haystack, needle) == NULL)
        fail_msg("expected to find\n  %s\nin\n  %s", needle, haystack);
}

void ru_poll(jpt_registry *r, int max_ms)
{
    struct pollfd p = {.fd = jpt_registry_get_fd(r), .events = POLLIN};
    int timeout = jpt_registry_get_timeout(r);

    if (timeout < 0 || timeout > max_ms)
        timeout = max_ms;
    assert_true(poll(&p, 1, timeout) >= 0);
}

const char *js(const char *text)
{
    static char ring[8][16384];
    static unsigned next;
    char *out = ring[next++ % 8];
    size_t n = strlen(text);

    assert_true(n < sizeof(ring[0]));
    for (size_t i = 0; i <= n; i++)
        out[i] = text[i] == '\'' ? '"' : text[i];
    return out;
}

json_t *parse(const char *text)
{
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    if (j == NULL)
        fail_msg("not JSON: %s", text);
    return j;
}

void assert_json(const json_t *actual, const char *expected)
{
    char *text = json_dumps(actual, JSON_COMPACT | JSON_ENCODE_ANY);

    assert_non_null(text);
    tu_assert_json_equal(text, expected);
    jpt_free(text); /* jansson allocates through the library's allocator */
}

json_t *act(jpt_registry *r, const char *tool, const char *args, bool *is_error)
{
    char *content = ru_call(r, tool, args, is_error);
    json_t *resp = json_loads(content, 0, NULL);

    if (resp == NULL)
        fail_msg("not a handle response: %s", content);
    free(content);
    return resp;
}

const char *field(const json_t *resp, const char *key)
{
    const char *s = json_string_value(json_object_get(resp, key));
    if (s == NULL)
        fail_msg("response has no string '%s'", key);
    return s;
}

jpt_batch *ru_submit(jpt_registry *r, const char *calls_js)
{
    jpt_batch *b = NULL;

    if (jpt_registry_submit(r, js(calls_js), &b) != JPT_OK)
        fail_msg("submit: %s", jpt_registry_errmsg(r));
    assert_non_null(b);
    return b;
}

json_t *ru_results(const jpt_batch *b)
{
    char *text = NULL;

    assert_int_equal(jpt_batch_results_json(b, &text), JPT_OK);
    json_t *results = parse(text);
    jpt_free(text);
    return results;
}

static json_t *kept[32];
static size_t nkept;

json_t *ru_keep(json_t *v)
{
    assert_true(nkept < sizeof(kept) / sizeof(kept[0]));
    kept[nkept++] = v;
    return v;
}

void ru_release_kept(void)
{
    while (nkept > 0)
        json_decref(kept[--nkept]);
}

int (*ru_wait)(jpt_registry *r, jpt_batch *b, int timeout_ms) = jpt_registry_wait;

json_t *ru_finish(jpt_registry *r, jpt_batch *b)
{
    assert_int_equal(ru_wait(r, b, WAIT_MS), JPT_OK);
    json_t *results = ru_results(b);
    jpt_batch_free(b);
    return ru_keep(results);
}

json_t *ru_run_js(jpt_registry *r, const char *calls_js)
{
    return ru_finish(r, ru_submit(r, calls_js));
}

void ru_drain_events(jpt_registry *r)
{
    jpt_event *e;

    while (jpt_registry_next_event(r, &e) == JPT_OK)
        jpt_event_free(e);
}

void ru_assert_response(const json_t *results, size_t i, const char *id,
                        const char *content_js, bool is_error)
{
    const json_t *res = json_array_get(results, i);

    assert_non_null(res);
    assert_string_equal(json_string_value(json_object_get(res, "id")), id);
    tu_assert_json_equal(ru_content(results, i), js(content_js));
    assert_int_equal(ru_is_error(results, i), is_error);
}

void ru_assert_text(const json_t *results, size_t i, const char *id, const char *text,
                    bool is_error)
{
    const json_t *res = json_array_get(results, i);

    assert_non_null(res);
    assert_string_equal(json_string_value(json_object_get(res, "id")), id);
    assert_string_equal(ru_content(results, i), text);
    assert_int_equal(ru_is_error(results, i), is_error);
}

bool ru_event_matches(const jpt_event *e, int type, const char *id, int state)
{
    const char *eid = type == JPT_EVENT_CALL_DONE ? jpt_event_call_id(e) : jpt_event_handle_id(e);

    return jpt_event_type(e) == type && (id == NULL || (eid != NULL && strcmp(eid, id) == 0)) &&
           (state == 0 || jpt_event_state(e) == state);
}

long ru_read_text(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    long len = 0;

    buf[0] = '\0';
    if (fd < 0)
        return -1;
    for (ssize_t k; (k = read(fd, buf + len, n - 1 - (size_t)len)) > 0;)
        len += k;
    close(fd);
    buf[len] = '\0';
    return len;
}

uint64_t ru_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int (*ru_dispatch)(jpt_registry *r) = jpt_registry_dispatch;

bool ru_until_event(jpt_registry *r, int type, const char *id, int state)
{
    uint64_t deadline = ru_now_ms() + WAIT_MS;
    jpt_event *e;

    while (ru_now_ms() < deadline) {
        ru_dispatch(r);
        while (jpt_registry_next_event(r, &e) == JPT_OK) {
            bool hit = ru_event_matches(e, type, id, state);
            jpt_event_free(e);
            if (hit)
                return true;
        }
        ru_poll(r, 50);
    }
    return false;
}

void ru_report(jpt_handle *h, int kind, const char *text)
{
    jpt_state *s = NULL;

    assert_int_equal(jpt_state_new(kind, &s), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, text), JPT_OK);
    assert_int_equal(jpt_handle_update(h, s), JPT_OK);
    jpt_state_unref(s);
}

const char ru_await_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"any\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
    "\"Handle IDs. Returns when at least one of these handles reaches 'stopped'.\"},"
    "\"all\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
    "\"Handle IDs. Returns when every one of these handles reaches 'stopped'.\"},"
    "\"timeout_secs\":{\"type\":\"integer\",\"description\":\"Maximum seconds to wait. "
    "If exceeded, returns with current handle states. Omit for no timeout.\"}},"
    "\"anyOf\":[{\"required\":[\"any\"]},{\"required\":[\"all\"]}]}";

const char ru_await_description[] =
    "Block until stateful tool handles reach completion. Use `any` to wait for the first "
    "handle to finish, `all` to wait for every handle to finish, or both to combine "
    "conditions.";

int ru_wait_ms(void)
{
    const char *slow = getenv("JPT_TEST_SLOWDOWN");
    int factor = slow != NULL ? atoi(slow) : 1;

    return 20000 * (factor >= 1 && factor <= 100 ? factor : 1);
}

/* ---- VFS tools ------------------------------------------------------------------ */

void ru_on_ask(jpt_policy_request *req, void *ud)
{
    ru_asked *a = ud;

    a->count++;
    snprintf(a->last, sizeof(a->last), "%s %s [%s]: %s", jpt_policy_request_method(req),
             jpt_policy_request_path(req), jpt_policy_request_tool(req),
             jpt_policy_request_reason(req));
    snprintf(a->requested, sizeof(a->requested), "%s", jpt_policy_request_requested_path(req));
    if (a->decision < 0)
        a->kept = req;
    else
        assert_int_equal(jpt_policy_request_answer(req, a->decision, a->reason), JPT_OK);
}

jpt_vfs_host *ru_vfs_host(const char *root, jpt_files *files, const char *sandbox_js,
                          int timeout_ms, ru_asked *a)
{
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root, .files = files,
                              .kill_grace_ms = 200, .request_timeout_ms = timeout_ms,
                              .sandbox_mode = tu_sandbox_mode()};
    jpt_vfs_host *h = NULL;

    o.sandbox_json = sandbox_js != NULL ? js(sandbox_js) : NULL;
    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    if (a != NULL)
        jpt_vfs_host_set_policy_handler(h, ru_on_ask, a);
    return h;
}

void ru_vfs_spawn(jpt_vfs_host *h, const char *arguments_json)
{
    const char *argv[] = {TOOL("vfs-probe"), NULL};
    char *tool = NULL;

    assert_true(asprintf(&tool, "{\"name\":\"probe\",\"arguments\":%s}", arguments_json) > 0);
    if (jpt_vfs_host_spawn(h, argv, tool) != JPT_OK)
        fail_msg("spawn: %s", jpt_vfs_host_errmsg(h));
    free(tool);
}

char *ru_vfs_end(jpt_vfs_host *h)
{
    jpt_state *st = NULL;
    char *text = NULL, *out = NULL;

    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_vfs_host_done(h), 1);
    assert_int_equal(jpt_vfs_host_state(h, &st), JPT_OK);
    assert_int_equal(jpt_state_kind(st), JPT_STATE_STOPPED);
    assert_int_equal(jpt_state_render(st, NULL, &text), JPT_OK);
    assert_true(asprintf(&out, "%s: %s", jpt_state_is_error(st) ? "error" : "ok", text) > 0);
    jpt_free(text);
    jpt_state_unref(st);
    return out;
}

/* ---- Processes a test left ------------------------------------------------ */

int ru_count_sleeping(const char *seconds)
{
    char want[64], path[300], buf[256], stat_text[512];
    int n = 0, len = snprintf(want, sizeof(want), "sleep%c%s", '\0', seconds) + 1;
    DIR *proc = opendir("/proc");
    struct dirent *e;

    assert_non_null(proc);
    while ((e = readdir(proc)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        long got = ru_read_text(path, buf, sizeof(buf));
        if (got != len || memcmp(buf, want, (size_t)len) != 0)
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        const char *paren = ru_read_text(path, stat_text, sizeof(stat_text)) > 0
                                ? strrchr(stat_text, ')')
                                : NULL;
        n += paren != NULL && paren[2] != 'Z' && paren[2] != 'X';
    }
    closedir(proc);
    return n;
}

void ru_assert_none_sleeping(const char *seconds)
{
    uint64_t deadline = ru_now_ms() + (uint64_t)WAIT_MS;
    while (ru_count_sleeping(seconds) > 0 && ru_now_ms() < deadline) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (ru_count_sleeping(seconds) > 0) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "pkill -KILL -x -f 'sleep %s'", seconds);
        if (system(cmd) != 0)
            print_message("pkill failed\n");
        fail_msg("a process (sleep %s) outlived its process.run", seconds);
    }
}
