/* What a real host does to a registry, each a regression test of a fix
 * (issue 7): frees what the header lets it free from inside callbacks
 * (the batch it waits on, the registry itself), shuts down without
 * blocking its loop, ends a turn by aborting everything, reads fetches and
 * applies that answer with what has happened, and keeps output that a
 * timeout or a cancel cut short.
 *
 * Each test runs with a fixture: a scratch directory as the registry's
 * root, and a teardown that frees the registry even when an assertion
 * failed. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registry-util.h"

/* ---- Fixture ---------------------------------------------------------------------- */

#define T(name) RU_TEST(name)

static jpt_registry *registry(const char *tools_json)
{
    jpt_registry_options o = {0};
    return ru_scratch_registry(&o, tools_json);
}

#define ASK_DEF "{'name':'merge','command':['" TOOL("ask-tool") "','{{tool}}']}"
#define SHELL_DEF "{'name':'sh','stateful':true,'command':['sh']}"

/* ---- Freeing from inside callbacks (issue 7, §4) ------------------------------------ */

/* What the inquiry handler frees when it is called. */
static struct {
    jpt_batch *batch;
    bool free_registry;
    int asked;
    jpt_inquiry *q;
} victim;

static void freeing_handler(jpt_inquiry *q, void *ud)
{
    jpt_registry *r = ud;

    victim.asked++;
    victim.q = q;
    if (victim.batch != NULL) {
        jpt_batch_free(victim.batch);
        victim.batch = NULL;
    }
    if (victim.free_registry) {
        jpt_inquiry_cancel(q, "the host is going away");
        jpt_registry_free(r);
        ru_current = NULL;
    }
}

static void inquiry_handler_freeing_the_batch_waited_on_ends_the_wait(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" ASK_DEF "]}"));
    jpt_batch *b = ru_submit(r, "[{'id':'c','name':'merge','arguments':{}}]");

    memset(&victim, 0, sizeof(victim));
    victim.batch = b;
    jpt_registry_set_inquiry_handler(r, freeing_handler, r);
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_ERR_CANCELLED);
    assert_int_equal(victim.asked, 1);
    /* The registry goes on: the call, its batch gone, ends once its
     * question is. */
    assert_int_equal(jpt_inquiry_cancel(victim.q, NULL), JPT_OK);
    assert_int_equal(jpt_registry_run(r, WAIT_MS), JPT_OK);
}

static void inquiry_handler_freeing_the_registry_inside_wait_ends_the_wait(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" ASK_DEF "," SHELL_DEF "]}"));

    /* A live handle too: its process must be reaped by the deferred free. */
    json_decref(act(r, "sh", js("{'action':'spawn','id':'s'}"), NULL));
    jpt_batch *b = ru_submit(r, "[{'id':'c','name':'merge','arguments':{}}]");
    memset(&victim, 0, sizeof(victim));
    victim.free_registry = true;
    jpt_registry_set_inquiry_handler(r, freeing_handler, r);
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_ERR_CANCELLED);
    assert_int_equal(victim.asked, 1);
    assert_null(ru_current);
    /* The batch went with the registry; the suite's hygiene check proves
     * the shell was reaped and no fd is left. */
}

static void inquiry_handler_freeing_the_registry_inside_dispatch_ends_it(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" ASK_DEF "]}"));
    jpt_batch *b = ru_submit(r, "[{'id':'c','name':'merge','arguments':{}}]");
    uint64_t deadline = ru_now_ms() + WAIT_MS;
    int rc = 0;

    (void)b; /* freed with the registry */
    memset(&victim, 0, sizeof(victim));
    victim.free_registry = true;
    jpt_registry_set_inquiry_handler(r, freeing_handler, r);
    while (victim.asked == 0 && ru_now_ms() < deadline) {
        if ((rc = jpt_registry_dispatch(r)) < 0)
            break;
        ru_poll(r, 50);
    }
    assert_int_equal(victim.asked, 1);
    assert_int_equal(rc, JPT_ERR_CANCELLED);
    assert_null(ru_current);
}

/* A builtin whose start callback frees the registry. */
static int start_and_free_registry(jpt_handle *h, const char *arguments_json, void *ud)
{
    (void)h;
    (void)arguments_json;
    jpt_registry_free(ud);
    ru_current = NULL;
    return JPT_OK;
}

static void builtin_freeing_the_registry_from_its_start_callback_is_safe(void **state)
{
    (void)state;
    jpt_registry *r = registry(NULL);
    jpt_builtin_ops ops = {sizeof(ops), start_and_free_registry, NULL, NULL};

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'bye'}"), &ops, r), JPT_OK);
    jpt_batch *b = ru_submit(r, "[{'id':'a','name':'bye','arguments':{}},"
                                " {'id':'b','name':'bye','arguments':{}}]");
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_ERR_CANCELLED);
    assert_null(ru_current);
}

/* A builtin whose start callback frees the batch of its own call. */
static jpt_batch *own_batch;

static int start_and_free_batch(jpt_handle *h, const char *arguments_json, void *ud)
{
    (void)arguments_json;
    (void)ud;
    jpt_batch_free(own_batch);
    own_batch = NULL;
    ru_report(h, JPT_STATE_STOPPED, "done");
    return JPT_OK;
}

static void builtin_freeing_the_batch_waited_on_from_its_start_callback_is_safe(void **state)
{
    (void)state;
    jpt_registry *r = registry(NULL);
    jpt_builtin_ops ops = {sizeof(ops), start_and_free_batch, NULL, NULL};

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'bye'}"), &ops, NULL), JPT_OK);
    own_batch = ru_submit(r, "[{'id':'a','name':'bye','arguments':{}}]");
    assert_int_equal(jpt_registry_wait(r, own_batch, WAIT_MS), JPT_ERR_CANCELLED);
    assert_null(own_batch);
    assert_int_equal(jpt_registry_run(r, WAIT_MS), JPT_OK);
}

/* Waits nested in a callback: the inner wait sees the registry freed, and
 * so does the outer one. */
static int start_wait_and_free(jpt_handle *h, const char *arguments_json, void *ud)
{
    jpt_registry *r = ud;
    jpt_batch *inner = NULL;

    (void)h;
    (void)arguments_json;
    if (jpt_registry_submit(r, "[{\"id\":\"n\",\"name\":\"quit\",\"arguments\":{}}]", &inner) <
        0)
        return JPT_ERR_NOMEM;
    int rc = jpt_registry_wait(r, inner, WAIT_MS);
    assert_int_equal(rc, JPT_ERR_CANCELLED);
    return JPT_OK;
}

static void wait_nested_in_a_callback_sees_the_registry_freed(void **state)
{
    (void)state;
    jpt_registry *r = registry(NULL);
    jpt_builtin_ops outer = {sizeof(outer), start_wait_and_free, NULL, NULL};
    jpt_builtin_ops quit = {sizeof(quit), start_and_free_registry, NULL, NULL};

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'outer'}"), &outer, r), JPT_OK);
    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'quit'}"), &quit, r), JPT_OK);
    jpt_batch *b = ru_submit(r, "[{'id':'o','name':'outer','arguments':{}}]");
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_ERR_CANCELLED);
    assert_null(ru_current);
}

/* ---- Shutting down without blocking (issue 7, §4) ---------------------------------- */

#define STUBBORN_DEF "{'name':'stubborn','stateful':true,'command':['" TOOL("ignore-term") "']}"
#define NAP_DEF                                                                             \
    "{'name':'nap','command':['" TOOL("sleep-ms") "','{{arguments.ms}}'],"                   \
    " 'parameters':{'type':'object','properties':{'ms':{'type':'integer'}}}}"

/* Dispatches until an event of `type` is popped (others dropped). */
static bool until_event(jpt_registry *r, int type)
{
    return ru_until_event(r, type, NULL, 0);
}

static void shutdown_returns_at_once_and_reports_when_every_tool_is_reaped(void **state)
{
    (void)state;
    jpt_registry_options o = {.kill_grace_ms = 1000};
    jpt_registry *r = ru_scratch_registry(&o, js("{'tools':[" STUBBORN_DEF "," NAP_DEF "]}"));
    json_t *resp = act(r, "stubborn", js("{'action':'spawn','id':'s'}"), NULL);
    assert_string_equal(field(resp, "content"), "ignoring SIGTERM\n");
    json_decref(resp);
    jpt_batch *b = ru_submit(r, "[{'id':'n','name':'nap','arguments':{'ms':60000}}]");
    ru_drain_events(r);

    /* Nothing has ended yet: the host's loop goes on. */
    assert_int_equal(jpt_registry_shutdown(r), JPT_ERR_AGAIN);
    assert_int_equal(jpt_registry_shutdown(r), JPT_ERR_AGAIN);
    jpt_batch *refused = NULL;
    assert_int_equal(jpt_registry_submit(r, "[]", &refused), JPT_ERR_STATE);
    assert_null(refused);
    ru_assert_contains(jpt_registry_errmsg(r), "shutting down");
    assert_int_equal(jpt_registry_end_turn(r, 0, &refused), JPT_ERR_STATE);

    /* SIGTERM ends the sleeper; the stubborn tool takes SIGKILL after the
     * grace; the one-shot call ends with its process. */
    assert_true(until_event(r, JPT_EVENT_SHUTDOWN));
    assert_int_equal(jpt_registry_shutdown(r), JPT_OK);
    assert_true(jpt_batch_done(b));
    json_t *results = ru_results(b);
    assert_true(ru_is_error(results, 0));
    json_decref(results);
    jpt_batch_free(b);
}

static void shutdown_of_an_idle_registry_completes_at_the_next_dispatch(void **state)
{
    (void)state;
    jpt_registry *r = registry(NULL);

    assert_int_equal(jpt_registry_shutdown(r), JPT_ERR_AGAIN);
    assert_true(until_event(r, JPT_EVENT_SHUTDOWN));
    assert_int_equal(jpt_registry_shutdown(r), JPT_OK);
    assert_int_equal(jpt_registry_shutdown(NULL), JPT_ERR_INVALID);
}

/* ---- A limit on live processes (issue 7, §3) ---------------------------------------- */

/* A tool that notes "+" as it starts and "-" as it ends in `log`. */
#define COUNTED_DEF(log)                                                                     \
    "{'name':'counted','command':['sh','-c','echo + >> " log "; sleep 0.05; echo - >> " log "']}"

/* The most "+" lines not yet matched by a "-", reading the log in order. */
static int most_at_once(const char *path)
{
    char text[65536];
    long n = ru_read_text(path, text, sizeof(text));
    int live = 0, most = 0;

    assert_true(n > 0);
    for (long i = 0; i < n; i++) {
        live += text[i] == '+' ? 1 : text[i] == '-' ? -1 : 0;
        most = live > most ? live : most;
    }
    assert_int_equal(live, 0);
    return most;
}

static char *calls_of(const char *tool, int n)
{
    size_t cap = (size_t)n * 64 + 8;
    char *text = malloc(cap);
    size_t len = 1;

    assert_non_null(text);
    text[0] = '[';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "%s{\"id\":\"c%d\",\"name\":\"%s\",\"arguments\":{}}",
                                i ? "," : "", i, tool);
    snprintf(text + len, cap - len, "]");
    return text;
}

static void calls_beyond_max_processes_wait_for_a_slot(void **state)
{
    (void)state;
    char log[128], tools[512];
    snprintf(log, sizeof(log), "%s/log", ru_scratch);
    snprintf(tools, sizeof(tools), "{'tools':[" COUNTED_DEF("%s") "]}", log, log);
    jpt_registry_options o = {.max_processes = 2};
    jpt_registry *r = ru_scratch_registry(&o, js(tools));
    char *calls = calls_of("counted", 8);
    jpt_batch *b = NULL;

    assert_int_equal(jpt_registry_submit(r, calls, &b), JPT_OK);
    free(calls);
    json_t *results = ru_finish(r, b);
    for (size_t i = 0; i < 8; i++)
        assert_false(ru_is_error(results, i));
    assert_int_equal(most_at_once(log), 2);
}

#define STUCK_WHY                                                                             \
    "no process slot is free: the registry runs at most %d tool processes at once "          \
    "(max_processes), and live handles hold every slot until they end; abort one, or await " \
    "the end of one, then call again"

/* The host trial: with 6 slots, 40 spawns of `sh` and 20 one-shot calls in
 * one message answered every spawn "running" while 34 never started, and
 * the one-shots waited until the turn ended. Every slot held by a live
 * handle, the calls beyond them fail at once, saying why; the batch is
 * done. Ending a handle frees its slot for the next call. */
static void calls_beyond_slots_held_by_handles_fail_at_once_saying_why(void **state)
{
    (void)state;
    char tools[256], calls[2048], why[512];
    size_t n = 0;
    snprintf(tools, sizeof(tools),
             "{'tools':[" SHELL_DEF ",{'name':'ok','command':['%s','0','ran','']}]}",
             TOOL("exit-code"));
    jpt_registry_options o = {.max_processes = 3};
    jpt_registry *r = ru_scratch_registry(&o, js(tools));

    n += (size_t)snprintf(calls + n, sizeof(calls) - n, "[");
    for (int i = 0; i < 5; i++)
        n += (size_t)snprintf(calls + n, sizeof(calls) - n,
                              "{'id':'s%d','name':'sh','arguments':{'action':'spawn','id':'h%d'}},",
                              i, i);
    for (int i = 0; i < 3; i++)
        n += (size_t)snprintf(calls + n, sizeof(calls) - n,
                              "%s{'id':'o%d','name':'ok','arguments':{}}", i > 0 ? "," : "", i);
    snprintf(calls + n, sizeof(calls) - n, "]");
    json_t *res = ru_run_js(r, calls);

    snprintf(why, sizeof(why), "`sh` could not run: " STUCK_WHY, 3);
    for (size_t i = 0; i < 3; i++)
        assert_false(ru_is_error(res, i));
    ru_assert_text(res, 3, "s3", why, true);
    ru_assert_text(res, 4, "s4", why, true);
    snprintf(why, sizeof(why), "`ok` could not run: " STUCK_WHY, 3);
    for (size_t i = 5; i < 8; i++)
        ru_assert_text(res, i, ((const char *[]){"o0", "o1", "o2"})[i - 5], why, true);
    /* The refused spawns made no handle that runs. */
    bool err = false;
    char *out = ru_call(r, "sh", "{\"action\":\"fetch\",\"id\":\"h3\"}", &err);
    assert_true(err);
    ru_assert_contains(out, "its spawn never ran");
    free(out);
    /* An aborted handle's slot goes to the next call, which waits for it. */
    json_decref(act(r, "sh", "{\"action\":\"abort\",\"id\":\"h0\"}", NULL));
    out = ru_call(r, "ok", "{}", &err);
    assert_false(err);
    assert_string_equal(out, "ran");
    free(out);
    json_t *resp = act(r, "sh", "{\"action\":\"spawn\",\"id\":\"h5\"}", NULL);
    assert_string_equal(field(resp, "state"), "running");
    json_decref(resp);
}

/* A spawn beyond the limit while a one-shot run holds a slot (it ends by
 * itself) waits in line: the model reads it "pending", not "running",
 * until its process starts; then it runs. */
static void spawn_waiting_behind_a_one_shot_is_pending_then_runs(void **state)
{
    (void)state;
    char tools[256];
    snprintf(tools, sizeof(tools),
             "{'tools':[" SHELL_DEF ",{'name':'nap','command':['%s','600']}]}",
             TOOL("sleep-ms"));
    jpt_registry_options o = {.max_processes = 1, .settle_ms = 20};
    jpt_registry *r = ru_scratch_registry(&o, js(tools));

    json_t *res = ru_run_js(r, "[{'id':'n','name':'nap','arguments':{}},"
                               "{'id':'s','name':'sh','arguments':{'action':'spawn','id':'b'}}]");
    ru_assert_text(res, 0, "n", "slept 600\n", false);
    ru_assert_response(res, 1, "s", "{'id':'b','state':'pending','content':''}", false);
    /* The one-shot ended: `b` has its slot and runs. */
    json_t *resp =
        act(r, "sh", "{\"action\":\"apply\",\"id\":\"b\",\"input\":\"echo hi\\n\",\"wait_secs\":5}",
            NULL);
    assert_string_equal(field(resp, "state"), "running");
    assert_string_equal(field(resp, "content"), "hi\n");
    json_decref(resp);
}

/* Waiting in line, a spawn whose slot would have come from a one-shot
 * that another handle took first can never start: it fails then, and the
 * model learns it as the handle's end. Aborting a waiting handle stops it
 * without ever running it. */
static void waiting_calls_fail_once_live_handles_hold_every_slot(void **state)
{
    (void)state;
    char tools[256], why[512];
    snprintf(tools, sizeof(tools),
             "{'tools':[" SHELL_DEF ",{'name':'nap','command':['%s','600']}]}",
             TOOL("sleep-ms"));
    jpt_registry_options o = {.max_processes = 1, .settle_ms = 20};
    jpt_registry *r = ru_scratch_registry(&o, js(tools));

    json_t *res = ru_run_js(r, "[{'id':'n','name':'nap','arguments':{}},"
                               "{'id':'a','name':'sh','arguments':{'action':'spawn','id':'a'}},"
                               "{'id':'b','name':'sh','arguments':{'action':'spawn','id':'b'}},"
                               "{'id':'c','name':'sh','arguments':{'action':'spawn','id':'c'}},"
                               "{'id':'x','name':'sh','arguments':{'action':'abort','id':'c'}}]");
    ru_assert_response(res, 1, "a", "{'id':'a','state':'pending','content':''}", false);
    ru_assert_response(res, 2, "b", "{'id':'b','state':'pending','content':''}", false);
    ru_assert_response(res, 4, "x",
                       "{'id':'c','state':'stopped','result':'[process ended: aborted]'}", false);
    /* `a` took the one-shot's slot; `b` could never start. */
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "b", JPT_STATE_STOPPED));
    snprintf(why, sizeof(why), "{'id':'b','state':'stopped','error':'Error: " STUCK_WHY "'}", 1);
    bool err = false;
    char *out = ru_call(r, "sh", "{\"action\":\"fetch\",\"id\":\"b\"}", &err);
    tu_assert_json_equal(out, js(why));
    assert_true(err);
    free(out);
    json_t *resp;
    resp = act(r, "sh",
               "{\"action\":\"apply\",\"id\":\"a\",\"input\":\"echo hi\\n\",\"wait_secs\":5}",
               NULL);
    assert_string_equal(field(resp, "content"), "hi\n");
    json_decref(resp);
}

/* The host trial itself: 64 fds (6 slots), 40 spawns of `sh` and 20
 * one-shot calls in one message. Six handles run; every other call says
 * why it did not, and the batch is done without the turn's end. */
static void forty_spawns_and_twenty_one_shots_under_64_fds_all_answer(void **state)
{
    (void)state;
    struct rlimit old, low;
    char tools[256];
    size_t cap = 64 * 100, n = 0;
    char *calls = malloc(cap);

    assert_non_null(calls);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    snprintf(tools, sizeof(tools),
             "{'tools':[" SHELL_DEF ",{'name':'ok','command':['%s','0','','']}]}",
             TOOL("exit-code"));
    jpt_registry *r = registry(js(tools));
    n += (size_t)snprintf(calls + n, cap - n, "[");
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(calls + n, cap - n,
                              i < 40 ? "%s{\"id\":\"c%d\",\"name\":\"sh\",\"arguments\":"
                                       "{\"action\":\"spawn\",\"id\":\"h%d\"}}"
                                     : "%s{\"id\":\"c%d\",\"name\":\"ok\",\"arguments\":{}}",
                              i > 0 ? "," : "", i, i);
    snprintf(calls + n, cap - n, "]");
    jpt_batch *b = NULL;
    int rc = jpt_registry_submit(r, calls, &b);
    free(calls);
    rc = rc == JPT_OK ? jpt_registry_wait(r, b, WAIT_MS) : rc;
    setrlimit(RLIMIT_NOFILE, &old);

    assert_int_equal(rc, JPT_OK);
    json_t *results = ru_finish(r, b);
    size_t running = 0, refused = 0;
    for (size_t i = 0; i < 60; i++) {
        const char *content = ru_content(results, i);
        if (!ru_is_error(results, i) && i < 40 && strstr(content, "\"state\":\"running\"") != NULL)
            running++;
        else if (ru_is_error(results, i) && strstr(content, "no process slot is free") != NULL)
            refused++;
        else
            fail_msg("call %zu: %s", i, content);
    }
    assert_int_equal(running, 6);
    assert_int_equal(refused, 54);
}

/* 300 calls with 64 fds in all (TESTING.md, "fd exhaustion"): the default
 * process limit leaves the host its reserve, and every call runs. */
static void many_calls_under_a_low_fd_limit_all_run(void **state)
{
    (void)state;
    struct rlimit old, low;
    char tools[256];

    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 64;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    snprintf(tools, sizeof(tools), "{'tools':[{'name':'ok','command':['%s','0','','']}]}",
             TOOL("exit-code"));
    jpt_registry *r = registry(js(tools));
    char *calls = calls_of("ok", 300);
    jpt_batch *b = NULL;
    int rc = jpt_registry_submit(r, calls, &b);
    free(calls);
    json_t *results = rc == JPT_OK ? ru_finish(r, b) : NULL;
    setrlimit(RLIMIT_NOFILE, &old);

    assert_int_equal(rc, JPT_OK);
    for (size_t i = 0; i < 300; i++)
        if (ru_is_error(results, i))
            fail_msg("call %zu failed: %s", i, ru_content(results, i));
}

/* ---- Exact counts of what is omitted (issue 7, §5) ---------------------------------- */

/* The model reads 30 000 bytes at most; 20 000 NULs render as 60 000
 * (U+FFFD each): 5 000 are shown at each end, and the marker counts the
 * tool's 10 000 bytes in between, not the repaired text's. */
static void bytes_omitted_count_the_tools_bytes_for_nul_output(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[{'name':'zeros','command':['head','-c',"
                                  "'{{arguments.n}}','/dev/zero']}]}"));
    bool is_error;

    char *out = ru_call(r, "zeros", "{\"n\":20000}", &is_error);
    assert_false(is_error);
    ru_assert_contains(out, "\n[… 10000 bytes omitted …]\n");
    free(out);
    /* Past the capture (1 MiB) too: 10 000 of 2 000 000 shown. */
    out = ru_call(r, "zeros", "{\"n\":2000000}", &is_error);
    ru_assert_contains(out, "\n[… 1990000 bytes omitted …]\n");
    free(out);
}

/* ---- What hosts expect from the API (issue 11, §5) ---------------------------------- */

#define SLEEP_DEF(name, ms, text)                                                             \
    "{'name':'" name "','command':['" TOOL("sleep-ms") "','" ms "','" text "']}"

/* What the output handler saw, concatenated per stream. */
typedef struct seen {
    char out[256], err[256];
    char id[64];
    int stateful, calls;
} seen;

static void on_output(const jpt_output *o, void *ud)
{
    seen *s = ud;
    char *buf = o->stream == JPT_STREAM_STDERR ? s->err : s->out;
    size_t have = strlen(buf);

    assert_int_equal(o->size, sizeof(*o));
    assert_true(o->len > 0);
    snprintf(buf + have, 256 - have, "%.*s", (int)o->len, o->data);
    snprintf(s->id, sizeof(s->id), "%s", o->id);
    s->stateful = o->stateful;
    s->calls++;
}

/* A UI streams a tool's output as it comes, and the model still reads all
 * of it: the handler consumes nothing. */
static void the_output_handler_streams_bytes_without_consuming_them(void **state)
{
    (void)state;
    seen s = {0};
    jpt_registry *r = registry(js("{'tools':[" SHELL_DEF ",{'name':'both','command':['sh',"
                                  "'-c','printf out; printf err >&2']}]}"));
    jpt_registry_set_output_handler(r, on_output, &s);

    json_t *res = ru_run_js(r, "[{'id':'c1','name':'both','arguments':{}}]");
    assert_string_equal(s.out, "out");
    assert_string_equal(s.err, "err");
    assert_string_equal(s.id, "c1");
    assert_int_equal(s.stateful, 0);
    ru_assert_contains(ru_content(res, 0), "out");

    /* A handle: its id, and a fetch that returns what was streamed. */
    memset(&s, 0, sizeof(s));
    ru_run_js(r, "[{'id':'c2','name':'sh','arguments':{'action':'spawn','id':'h1'}}]");
    json_t *applied = ru_run_js(r, "[{'id':'c3','name':'sh','arguments':{'action':'apply',"
                                   "'id':'h1','input':'echo streamed\\n'}}]");
    uint64_t end = ru_now_ms() + (uint64_t)WAIT_MS;
    while (strstr(s.out, "streamed") == NULL && ru_now_ms() < end)
        ru_poll(r, 50);
    assert_string_equal(s.id, "h1");
    assert_int_equal(s.stateful, 1);
    /* The apply's answer (or else the next fetch) has it all the same. */
    if (strstr(ru_content(applied, 0), "streamed") == NULL) {
        json_t *fetched = ru_run_js(r, "[{'id':'c4','name':'sh','arguments':{'action':'fetch',"
                                       "'id':'h1'}}]");
        ru_assert_contains(ru_content(fetched, 0), "streamed");
    }

    /* Removed: no more calls. */
    jpt_registry_set_output_handler(r, NULL, NULL);
    int before = s.calls;
    ru_run_js(r, "[{'id':'c5','name':'both','arguments':{}}]");
    assert_int_equal(s.calls, before);
}

/* One call of a batch is cancelled; the others run to their end. */
static void one_call_is_cancelled_and_the_others_go_on(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" SLEEP_DEF("slow", "60000", "begun") ","
                                  SLEEP_DEF("quick", "50", "fast") "]}"));
    jpt_batch *b = ru_submit(r, "[{'id':'s','name':'slow','arguments':{}},"
                                "{'id':'q','name':'quick','arguments':{}}]");
    assert_int_equal(jpt_batch_cancel_call(b, "nope"), JPT_ERR_NOT_FOUND);
    assert_int_equal(jpt_batch_cancel_call(b, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_batch_cancel_call(NULL, "s"), JPT_ERR_INVALID);
    assert_int_equal(jpt_batch_cancel_call(b, "s"), JPT_OK);
    json_t *res = ru_finish(r, b);
    assert_true(ru_is_error(res, 0));
    ru_assert_contains(ru_content(res, 0), "The call `slow` was cancelled");
    assert_false(ru_is_error(res, 1));
    ru_assert_contains(ru_content(res, 1), "slept 50");
}

/* A host-side limit per call: the slow call stops with the output so far,
 * saying why; the quick one is not touched. */
static void a_call_past_its_host_time_limit_is_stopped_with_its_output(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" SLEEP_DEF("slow", "60000", "begun") ","
                                  SLEEP_DEF("quick", "50", "fast") "]}"));
    jpt_batch *b = ru_submit(r, "[{'id':'s','name':'slow','arguments':{}},"
                                "{'id':'q','name':'quick','arguments':{}}]");
    assert_int_equal(jpt_batch_set_call_timeout(b, "s", -1), JPT_ERR_INVALID);
    assert_int_equal(jpt_batch_set_call_timeout(b, "nope", 10), JPT_ERR_NOT_FOUND);
    assert_int_equal(jpt_batch_set_call_timeout(NULL, "s", 10), JPT_ERR_INVALID);
    assert_int_equal(jpt_batch_set_call_timeout(b, "s", 300), JPT_OK);
    uint64_t start = ru_now_ms();
    json_t *res = ru_finish(r, b);
    assert_true(ru_now_ms() - start < 30000);
    assert_true(ru_is_error(res, 0));
    ru_assert_contains(ru_content(res, 0), "begun");
    ru_assert_contains(ru_content(res, 0),
                       "The call `slow` was stopped: it reached the host's time limit of "
                       "300 ms");
    assert_false(ru_is_error(res, 1));

    /* NULL: every call of the batch; 0 removes a limit. */
    b = ru_submit(r, "[{'id':'s','name':'slow','arguments':{}},"
                     "{'id':'q','name':'quick','arguments':{}}]");
    assert_int_equal(jpt_batch_set_call_timeout(b, NULL, 200), JPT_OK);
    assert_int_equal(jpt_batch_set_call_timeout(b, "q", 0), JPT_OK);
    res = ru_finish(r, b);
    ru_assert_contains(ru_content(res, 0), "time limit of 200 ms");
    ru_assert_contains(ru_content(res, 1), "slept 50");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(inquiry_handler_freeing_the_batch_waited_on_ends_the_wait),
        T(inquiry_handler_freeing_the_registry_inside_wait_ends_the_wait),
        T(inquiry_handler_freeing_the_registry_inside_dispatch_ends_it),
        T(builtin_freeing_the_registry_from_its_start_callback_is_safe),
        T(builtin_freeing_the_batch_waited_on_from_its_start_callback_is_safe),
        T(wait_nested_in_a_callback_sees_the_registry_freed),
        T(shutdown_returns_at_once_and_reports_when_every_tool_is_reaped),
        T(shutdown_of_an_idle_registry_completes_at_the_next_dispatch),
        T(calls_beyond_max_processes_wait_for_a_slot),
        T(calls_beyond_slots_held_by_handles_fail_at_once_saying_why),
        T(spawn_waiting_behind_a_one_shot_is_pending_then_runs),
        T(waiting_calls_fail_once_live_handles_hold_every_slot),
        T(forty_spawns_and_twenty_one_shots_under_64_fds_all_answer),
        T(many_calls_under_a_low_fd_limit_all_run),
        T(bytes_omitted_count_the_tools_bytes_for_nul_output),
        T(the_output_handler_streams_bytes_without_consuming_them),
        T(one_call_is_cancelled_and_the_others_go_on),
        T(a_call_past_its_host_time_limit_is_stopped_with_its_output),
    };

    return TU_RUN(tests);
}
