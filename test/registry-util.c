/* Helpers for the registry suites; see registry-util.h. */
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
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

void ru_assert_gone_text(const char *text, const char *id)
{
    static const char *const endings[] = {
        "has stopped, and an earlier answer gave its result",
        "has stopped, and a notification gave its result",
        "has stopped, and its result was given as the turn ended",
        "does not exist: its spawn never ran (the answer to the spawn said why)",
    };
    char want[256];

    for (size_t i = 0; i < sizeof(endings) / sizeof(endings[0]); i++) {
        snprintf(want, sizeof(want), "Handle `%s` %s", id, endings[i]);
        if (strcmp(text, want) == 0)
            return;
    }
    fail_msg("handle `%s` is not told gone: %s", id, text);
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

/* ---- A suite's scratch directory and its registry ------------------------- */

char ru_scratch[64];
jpt_registry *ru_current;

int ru_setup(void **state)
{
    (void)state;
    snprintf(ru_scratch, sizeof(ru_scratch), "/tmp/jpt-registry-XXXXXX");
    if (mkdtemp(ru_scratch) == NULL)
        return -1;
    ru_current = NULL;
    return 0;
}

int ru_teardown(void **state)
{
    char cmd[128];

    (void)state;
    jpt_registry_free(ru_current);
    ru_current = NULL;
    jpt_set_log(NULL, NULL, 0);
    ru_release_kept();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", ru_scratch);
    return system(cmd) == 0 ? 0 : -1;
}

jpt_registry *ru_scratch_registry(jpt_registry_options *o, const char *tools_json)
{
    o->size = sizeof(*o);
    o->root = ru_scratch;
    if (o->kill_grace_ms == 0)
        o->kill_grace_ms = 300;
    if (o->drain_ms == 0)
        o->drain_ms = 100;
    if (o->settle_ms == 0)
        o->settle_ms = 50;
    ru_current = ru_registry_with(o, tools_json);
    return ru_current;
}

jpt_registry *ru_scratch_registry_of(jpt_registry_options *o, json_t *first, ...)
{
    json_t *list = json_array();
    va_list ap;

    va_start(ap, first);
    for (json_t *d = first; d != NULL; d = va_arg(ap, json_t *))
        json_array_append_new(list, d);
    va_end(ap);
    json_t *doc = json_pack("{s:o}", "tools", list);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    assert_non_null(text);
    jpt_registry *r = ru_scratch_registry(o, text);
    jpt_free(text);
    return r;
}

void ru_done(jpt_registry *r)
{
    assert_ptr_equal(r, ru_current);
    jpt_registry_free(r);
    ru_current = NULL;
}

void ru_call_expect(jpt_registry *r, const char *tool, const char *args_js,
                    const char *content_js, bool is_error)
{
    bool err = !is_error;
    char *content = ru_call(r, tool, js(args_js), &err);

    tu_assert_json_equal(content, js(content_js));
    assert_int_equal(err, is_error);
    free(content);
}

void ru_call_expect_text(jpt_registry *r, const char *tool, const char *args_js,
                         const char *text, bool is_error)
{
    bool err = !is_error;
    char *content = ru_call(r, tool, js(args_js), &err);

    assert_string_equal(content, text);
    assert_int_equal(err, is_error);
    free(content);
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

const char *ru_state_slots(const char *text)
{
    const char *nl = strncmp(text, "cgroups ", 8) == 0 ? strchr(text, '\n') : NULL;

    return nl != NULL ? nl + 1 : text;
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
    snprintf(a->method, sizeof(a->method), "%s", jpt_policy_request_method(req));
    snprintf(a->path, sizeof(a->path), "%s", jpt_policy_request_path(req));
    snprintf(a->tool, sizeof(a->tool), "%s", jpt_policy_request_tool(req));
    snprintf(a->id, sizeof(a->id), "%s", jpt_policy_request_id(req));
    snprintf(a->why, sizeof(a->why), "%s", jpt_policy_request_reason(req));
    a->access = jpt_policy_request_access(req);
    snprintf(a->last, sizeof(a->last), "%s %s [%s]: %s", a->method, a->path, a->tool, a->why);
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

/* ---- Allocation failure over a host's path (issue 18) --------------------------- */

/* How long one run may wait for its batch: a run that takes this long has
 * hung (a lost completion), whatever the machine's load. */
#define SWEEP_WAIT_MS 20000

/* A run of a host's path with `o` and the tools and calls given; JPT_OK
 * with the results in `*out` (free()), or the status of the step that
 * failed. A batch that completes with a call that ran out of memory is
 * JPT_ERR_NOMEM too: the failure was met and answered. */
int ru_run_path(const jpt_registry_options *o, const char *tools, const char *calls,
                char **out)
{
    jpt_registry *r = NULL;
    jpt_batch *b = NULL;
    char *results = NULL;
    int rc;

    *out = NULL;
    if ((rc = jpt_registry_new(o, &r)) < 0)
        return rc;
    if ((rc = jpt_registry_load_tools(r, tools, 0)) == JPT_OK &&
        (rc = jpt_registry_submit(r, calls, &b)) == JPT_OK) {
        rc = jpt_registry_wait(r, b, SWEEP_WAIT_MS);
        if (rc == JPT_ERR_TIMEOUT) {
            char *pending = NULL;
            tu_print_first_failure();
            tu_fail_at(0);
            jpt_batch_results_json(b, &pending);
            fail_msg("the batch never completed: %s", pending);
        }
        if (rc == JPT_OK)
            rc = jpt_batch_results_json(b, &results);
    }
    jpt_batch_free(b);
    jpt_registry_free(r);
    if (rc == JPT_OK && strstr(results, "out of memory") != NULL)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK)
        *out = strdup(results);
    jpt_free(results);
    return rc;
}

static bool same_json(const char *a, const char *b)
{
    json_t *ja = json_loads(a, 0, NULL), *jb = json_loads(b, 0, NULL);
    bool same = ja != NULL && jb != NULL && json_equal(ja, jb);

    json_decref(ja);
    json_decref(jb);
    return same;
}

/* Runs `run` with allocation N failing, for each N the run makes: every
 * allocation from N on (`once` false), or only N, the ones after it
 * succeeding (`once`), what a program that recovers meets. A run must
 * give the unhindered results exactly, or say that memory ran out
 * (JPT_ERR_NOMEM from a step, or "out of memory" in a result): never a
 * result with something silently missing, never a leak. Under valgrind
 * (JPT_TEST_SLOWDOWN) every run costs seconds: about forty N spread over
 * the run are tried there, each of them in the other builds. */
/* JPT_TEST_SWEEP_LOG set: the library's log on stderr, to see where a run
 * that hangs stands. */
static void sweep_log(int level, const char *line, void *ud)
{
    (void)ud;
    fprintf(stderr, "log %d: %s\n", level, line);
}

void ru_sweep(const char *what, int (*run)(char **out), bool once)
{
    if (getenv("JPT_TEST_SWEEP_LOG") != NULL)
        jpt_set_log(sweep_log, NULL, JPT_LOG_DEBUG);
    char *expected = NULL;
    long step = 1, total;

    tu_fail_at(0);
    assert_int_equal(run(&expected), JPT_OK);
    total = tu_allocations();
    if (getenv("JPT_TEST_SLOWDOWN") != NULL)
        step = total / 40 > 1 ? total / 40 : 1;
    for (long n = 1;; n += step) {
        long before = tu_live_blocks();
        char *got = NULL;
        if (once)
            tu_fail_only(n);
        else
            tu_fail_at(n);
        int rc = run(&got);
        long made = tu_allocations();
        tu_fail_at(0);
        if (tu_live_blocks() != before) {
            tu_print_first_failure();
            fail_msg("%s: %ld block(s) leaked with allocation %ld failing", what,
                     tu_live_blocks() - before, n);
        }
        if (rc == JPT_OK && !same_json(got, expected)) {
            tu_print_first_failure();
            fail_msg("%s: allocation %ld failing changed the results silently:\n%s\n"
                     "instead of\n%s",
                     what, n, got, expected);
        } else if (rc != JPT_OK && rc != JPT_ERR_NOMEM) {
            tu_print_first_failure();
            fail_msg("%s: allocation %ld failing gave %s", what, n, jpt_status_name(rc));
        }
        free(got);
        if (made < n || (!once && rc == JPT_OK)) {
            print_message("%s: %ld allocations, %s failed in turn (every %ld)\n", what,
                          total, once ? "each alone" : "each and those after it", step);
            break;
        }
    }
    free(expected);
    jpt_set_log(NULL, NULL, 0);
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
