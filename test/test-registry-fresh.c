/* Fresh answers and bounded bookkeeping, each a regression test of a fix
 * for issue 7, through the public API only: fetch and apply answer with
 * what the tool did while the host was not dispatching; a stateful tool
 * called without an action runs once on /dev/null; wait_secs; input to a
 * tool that closed its stdin is an error; structured output is bounded;
 * spool files only where the model cannot read the output whole; a
 * timeout or a cancel keeps the output so far; the turn end that aborts
 * everything; 'sandbox' refused; the process lifecycle in the log; the
 * event queue's cap; the state file's slots; an older caller's options.
 *
 * Each test runs with a fixture: a scratch directory as the registry's
 * root, and a teardown that frees the registry and removes the log hook
 * even when an assertion failed. Where a test waits for a tool, it polls
 * a condition the tool makes true (a file, a process state) with the
 * suite's generous bound, never a fixed sleep. */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry-util.h"
#include "test-files-util.h"

/* ---- Fixture ---------------------------------------------------------------------- */

#define T(name) RU_TEST(name)

static jpt_registry *registry(const char *tools_json)
{
    jpt_registry_options o = {0};
    return ru_scratch_registry(&o, tools_json);
}

/* A path in the scratch directory (one of four rotating buffers). */
static const char *in_scratch(const char *name)
{
    static char paths[4][128];
    static unsigned next;
    char *p = paths[next++ % 4];

    snprintf(p, sizeof(paths[0]), "%s/%s", ru_scratch, name);
    return p;
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

    assert_true(fd >= 0);
    close(fd);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "we");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void pause_briefly(void)
{
    const struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Polls for a file a tool creates, with the suite's bound; the registry
 * is not dispatched meanwhile. */
static bool file_appears(const char *path)
{
    uint64_t deadline = ru_now_ms() + WAIT_MS;

    while (access(path, F_OK) != 0) {
        if (ru_now_ms() > deadline)
            return false;
        pause_briefly();
    }
    return true;
}

/* Results of one call run to completion (kept until teardown). */
static json_t *run1(jpt_registry *r, const char *tool, const char *args_js)
{
    char calls[8192];

    snprintf(calls, sizeof(calls), "[{'id':'c','name':'%s','arguments':%s}]", tool, args_js);
    return ru_run_js(r, calls);
}

/* A handle action run to completion; its response (kept until teardown). */
static json_t *action(jpt_registry *r, const char *tool, const char *args_js)
{
    json_t *results = run1(r, tool, args_js);
    return ru_keep(ru_response(ru_content(results, 0)));
}

#define SHELL_DEF "{'name':'sh','stateful':true,'command':['sh']}"
/* A shell line that waits for the file `go` in the registry's root. */
#define UNTIL_GO "while [ ! -e go ]; do sleep 0.01; done; "

/* ---- Fetch and apply answer with what has happened (issue 7, §2) -------------------- */

static void fetch_answers_with_output_printed_while_the_host_did_not_dispatch(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" SHELL_DEF "]}"));

    action(r, "sh", js("{'action':'spawn','id':'s'}"));
    json_t *resp = action(r, "sh", js("{'action':'apply','id':'s','input':'" UNTIL_GO
                                      "echo slept; touch flag\\n'}"));
    assert_string_equal(field(resp, "content"), "");
    /* The shell prints while nobody dispatches. */
    touch(in_scratch("go"));
    assert_true(file_appears(in_scratch("flag")));
    resp = action(r, "sh", js("{'action':'fetch','id':'s'}"));
    assert_string_equal(field(resp, "state"), "running");
    assert_string_equal(field(resp, "content"), "slept\n");
}

/* The pid the state file records first ("<pid> <start time>" slots). */
static int recorded_pid(const char *state_file)
{
    char text[4096];
    int pid = 0;

    assert_true(ru_read_text(state_file, text, sizeof(text)) > 0);
    assert_int_equal(sscanf(ru_state_slots(text), " %d", &pid), 1);
    return pid;
}

/* The state letter of /proc/<pid>/stat ('R', 'S', 'Z', …). */
static char process_state(int pid)
{
    char path[64], text[1024];

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    if (ru_read_text(path, text, sizeof(text)) <= 0)
        return '?';
    const char *close_paren = strrchr(text, ')');
    return close_paren != NULL && close_paren[1] == ' ' ? close_paren[2] : '?';
}

static void fetch_answers_stopped_for_a_tool_that_exited_while_the_host_did_not_dispatch(
    void **state)
{
    (void)state;
    jpt_registry_options o = {.state_file = in_scratch("state")};
    jpt_registry *r = ru_scratch_registry(
        &o, js("{'tools':[{'name':'bye','stateful':true,'command':['sh','-c','" UNTIL_GO
               "echo bye']}]}"));

    json_t *resp = action(r, "bye", js("{'action':'spawn','id':'b'}"));
    assert_string_equal(field(resp, "state"), "running");
    int pid = recorded_pid(in_scratch("state"));
    touch(in_scratch("go"));
    /* Exited and not reaped: the registry has not dispatched. */
    uint64_t deadline = ru_now_ms() + WAIT_MS;
    while (process_state(pid) != 'Z' && ru_now_ms() < deadline)
        pause_briefly();
    assert_int_equal(process_state(pid), 'Z');
    json_t *results = run1(r, "bye", js("{'action':'fetch','id':'b'}"));
    resp = ru_keep(ru_response(ru_content(results, 0)));
    if (strcmp(field(resp, "state"), "stopped") != 0)
        fail_msg("the exited tool is not stopped: %s", ru_content(results, 0));
    ru_assert_contains(field(resp, "result"), "bye");
}

/* ---- A stateful tool called without an action is one-shot (issue 7, §2) ------------ */

/* Runs `tool` with {} and a bound of a few seconds (a tool reading an open
 * pipe would never end). */
static void runs_once_on_dev_null(const char *tool)
{
    jpt_registry *r = registry(js("{'tools':[" SHELL_DEF ",{'name':'cat','stateful':true,"
                                  "'command':['cat']}]}"));
    char calls[128];

    snprintf(calls, sizeof(calls), "[{'id':'c','name':'%s','arguments':{}}]", tool);
    jpt_batch *b = ru_submit(r, calls);
    int rc = jpt_registry_wait(r, b, 5000);
    json_t *results = ru_keep(ru_results(b));
    jpt_batch_free(b);
    assert_int_equal(rc, JPT_OK);
    ru_assert_text(results, 0, "c", "", false);
}

static void stateful_sh_called_without_action_ends(void **state)
{
    (void)state;
    runs_once_on_dev_null("sh");
}

static void stateful_cat_called_without_action_ends(void **state)
{
    (void)state;
    runs_once_on_dev_null("cat");
}

/* ---- wait_secs on spawn, fetch and apply (issue 7, §2) --------------------------- */

static void apply_with_wait_secs_answers_once_the_tool_printed(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" SHELL_DEF "]}"));

    action(r, "sh", js("{'action':'spawn','id':'s'}"));
    json_t *resp = action(r, "sh", js("{'action':'apply','id':'s',"
                                      "'input':'sleep 0.3; echo done\\n','wait_secs':5}"));
    assert_string_equal(field(resp, "state"), "running");
    assert_string_equal(field(resp, "content"), "done\n");
}

/* Dispatches without polling until nothing is ready at once. */
static void dispatch_ready_work(jpt_registry *r)
{
    for (int i = 0; i < 16 && jpt_registry_dispatch(r) > 0; i++)
        ;
}

static void fetch_with_wait_secs_waits_for_output(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" SHELL_DEF "]}"));

    action(r, "sh", js("{'action':'spawn','id':'s'}"));
    action(r, "sh", js("{'action':'apply','id':'s','input':'" UNTIL_GO "echo later\\n'}"));
    jpt_batch *b = ru_submit(r, "[{'id':'f','name':'sh','arguments':"
                                "{'action':'fetch','id':'s','wait_secs':10}}]");
    dispatch_ready_work(r);
    /* Started, and waiting: the tool has printed nothing yet. */
    assert_false(jpt_batch_done(b));
    touch(in_scratch("go"));
    json_t *results = ru_finish(r, b);
    ru_assert_response(results, 0, "f", "{'id':'s','state':'running','content':'later\\n'}",
                       false);
}

static void fetch_without_wait_secs_answers_at_once(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" SHELL_DEF "]}"));

    action(r, "sh", js("{'action':'spawn','id':'s'}"));
    action(r, "sh", js("{'action':'apply','id':'s','input':'" UNTIL_GO "echo later\\n'}"));
    jpt_batch *b = ru_submit(r, "[{'id':'f','name':'sh','arguments':{'action':'fetch','id':'s'}}]");
    dispatch_ready_work(r);
    assert_true(jpt_batch_done(b));
    json_t *results = ru_finish(r, b);
    ru_assert_response(results, 0, "f", "{'id':'s','state':'running','content':''}", false);
}

static void wait_secs_that_is_not_seconds_is_refused(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" SHELL_DEF "]}"));

    action(r, "sh", js("{'action':'spawn','id':'s'}"));
    json_t *results = ru_run_js(
        r, "[{'id':'f','name':'sh','arguments':{'action':'fetch','id':'s','wait_secs':-1}},"
           " {'id':'a','name':'sh','arguments':{'action':'apply','id':'s','input':'x\\n',"
           "'wait_secs':'5'}},"
           " {'id':'p','name':'sh','arguments':{'action':'spawn','id':'t','wait_secs':'soon'}}]");
    /* Worded as every other refusal of a call's arguments, naming the tool. */
    static const char *const ids[] = {"f", "a", "p"};
    for (size_t i = 0; i < 3; i++)
        ru_assert_text(results, i, ids[i],
                       "Invalid arguments for `sh`: `wait_secs` must be a number of seconds, 0 "
                       "or more",
                       true);
    /* The refused spawn made no handle that runs. */
    results = run1(r, "sh", js("{'action':'fetch','id':'t'}"));
    assert_true(ru_is_error(results, 0));
    ru_assert_text(results, 0, "c",
                   "Handle `t` does not exist: its spawn never ran (the answer to the spawn "
                   "said why)",
                   true);
}

static void spawn_does_not_pass_wait_secs_to_the_tool(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(
        "{'tools':[{'name':'closed','stateful':true,"
        "'command':['sh','-c','echo \\\"$1\\\"','sh','{{tool}}'],"
        "'parameters':{'type':'object','properties':{'name':{'type':'string'}},"
        "'additionalProperties':false}}]}"));

    json_t *resp =
        action(r, "closed", js("{'action':'spawn','id':'c','name':'x','wait_secs':5}"));
    const char *state_name = field(resp, "state");
    const char *text = field(resp, strcmp(state_name, "stopped") == 0 ? "result" : "content");
    ru_assert_contains(text, "\"arguments\":{\"name\":\"x\"}");
    if (strstr(text, "wait_secs") != NULL)
        fail_msg("the tool was given wait_secs: %s", text);
}

/* ---- Input to a tool that closed its stdin (issue 7, §2) ------------------------------ */

#define DEAF_DEF                                                                            \
    "{'name':'deaf','stateful':true,'command':['sh','-c','exec <&-; echo closed; sleep 5']}"

static void apply_to_a_tool_that_closed_its_input_is_an_error(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" DEAF_DEF "]}"));

    json_t *resp = action(r, "deaf", js("{'action':'spawn','id':'x','wait_secs':5}"));
    assert_string_equal(field(resp, "content"), "closed\n");
    json_t *results = run1(r, "deaf", js("{'action':'apply','id':'x','input':'data\\n'}"));
    assert_true(ru_is_error(results, 0));
    const char *expected = "Handle `x` no longer takes input";
    if (strncmp(ru_content(results, 0), expected, strlen(expected)) != 0)
        fail_msg("expected '%s…', got: %s", expected, ru_content(results, 0));
}

/* An apply of `size` bytes of "y\n" lines to handle `id` of `tool`. */
static json_t *apply_large(jpt_registry *r, const char *tool, const char *id, size_t size)
{
    char *text = malloc(size + 1);

    assert_non_null(text);
    for (size_t i = 0; i < size; i += 2)
        memcpy(text + i, "y\n", 2);
    text[size] = '\0';
    json_t *calls = json_pack("[{s:s, s:s, s:{s:s, s:s, s:s}}]", "id", "c", "name", tool,
                              "arguments", "action", "apply", "id", id, "input", text);
    free(text);
    assert_non_null(calls);
    char *calls_json = json_dumps(calls, JSON_COMPACT);
    json_decref(calls);
    json_t *results = ru_run(r, calls_json);
    jpt_free(calls_json);
    return ru_keep(results);
}

static void large_input_to_a_tool_that_closed_its_input_is_an_error(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" DEAF_DEF "]}"));

    json_t *resp = action(r, "deaf", js("{'action':'spawn','id':'x','wait_secs':5}"));
    assert_string_equal(field(resp, "content"), "closed\n");
    json_t *results = apply_large(r, "deaf", "x", 256 * 1024);
    assert_true(ru_is_error(results, 0));
    const char *expected = "Handle `x` no longer takes input";
    if (strncmp(ru_content(results, 0), expected, strlen(expected)) != 0)
        fail_msg("expected '%s…', got: %s", expected, ru_content(results, 0));
}

static void large_input_to_a_tool_that_closes_its_input_midway_is_an_error(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(
        "{'tools':[{'name':'quitter','stateful':true,'command':['sh','-c',"
        "'echo ready; head -c 1 >/dev/null; exec <&-; echo closing; sleep 5']}]}"));

    json_t *resp = action(r, "quitter", js("{'action':'spawn','id':'q','wait_secs':5}"));
    assert_string_equal(field(resp, "content"), "ready\n");
    /* More than a pipe holds: the rest is still queued when the tool closes
     * its input. */
    json_t *results = apply_large(r, "quitter", "q", 256 * 1024);
    assert_true(ru_is_error(results, 0));
    const char *expected = "Handle `q` no longer takes input";
    if (strncmp(ru_content(results, 0), expected, strlen(expected)) != 0)
        fail_msg("expected '%s…', got: %s", expected, ru_content(results, 0));
}

/* ---- Structured output is bounded (issue 7, §2) ------------------------------------ */

#define STATE_LINES 200000

static void structured_output_is_bounded_like_text(void **state)
{
    (void)state;
    char tools[512];
    write_file(in_scratch("gen.sh"),
               "seq 1 200000 | sed 's/.*/{\"type\":\"running\",\"content\":\"line &\"}/'\n"
               "echo '{\"type\":\"stopped\",\"content\":\"end\"}'\n");
    snprintf(tools, sizeof(tools),
             "{'tools':[{'name':'gen','stateful':true,'command':['sh','%s']}]}",
             in_scratch("gen.sh"));
    jpt_registry_options o = {.capture_bytes = 65536, .output_limit = 1024 * 1024};
    jpt_registry *r = ru_scratch_registry(&o, js(tools));
    long before = tu_live_blocks(), most = 0;

    jpt_batch *b = ru_submit(r, "[{'id':'a','name':'gen','arguments':{'action':'spawn','id':'g'}},"
                                " {'id':'w','name':'await','arguments':{'all':['g']}}]");
    uint64_t deadline = ru_now_ms() + WAIT_MS;
    while (!jpt_batch_done(b) && ru_now_ms() < deadline) {
        ru_poll(r, 50);
        assert_true(jpt_registry_dispatch(r) >= 0);
        long live = tu_live_blocks() - before;
        most = live > most ? live : most;
    }
    assert_true(jpt_batch_done(b));
    json_t *results = ru_finish(r, b);
    /* The spawn may have seen the start; the await has the end. */
    json_t *spawned = ru_keep(ru_response(ru_content(results, 0)));
    json_t *awaited = ru_keep(ru_response(ru_content(results, 1)));
    const char *first = json_string_value(json_object_get(spawned, "content"));
    if (first == NULL)
        first = field(spawned, "result");
    const char *last = json_string_value(
        json_object_get(json_array_get(json_object_get(awaited, "completed"), 0), "result"));
    if (last == NULL)
        fail_msg("the await did not complete: %s", ru_content(results, 1));
    /* What the model reads holds both ends and says what was dropped. */
    size_t len = strlen(first) + strlen(last);
    bool whole = (strstr(first, "line 1\n") != NULL || strstr(last, "line 1\n") != NULL) &&
                 strstr(last, "blocks (") != NULL && strstr(last, "omitted") != NULL &&
                 strstr(last, "line 200000") != NULL && strstr(last, "end") != NULL;
    if (!whole || len >= 200 * 1024 || most >= 20000)
        fail_msg("%zu bytes read by the model, %ld blocks held at once for %d state lines; "
                 "the await's result begins: %.200s … and ends: %s",
                 len, most, STATE_LINES, last, strlen(last) > 200 ? last + strlen(last) - 200 : last);
}

/* ---- Spool files (issue 7, §4) -------------------------------------------------------- */

/* seq 1 20000, about 106 KiB: past the tool's output limit. */
#define SEQ_DEF                                                                             \
    "{'name':'seq','command':['seq','1','20000'],'output_limit':2000}"
#define SMALL_DEF "{'name':'small','command':['echo','small']}"

static jpt_registry *spooling_registry(unsigned flags)
{
    jpt_registry_options o = {.spool_dir = in_scratch("spool"), .flags = flags};
    assert_int_equal(mkdir(o.spool_dir, 0700), 0);
    return ru_scratch_registry(&o, js("{'tools':[" SHELL_DEF "," SEQ_DEF "," SMALL_DEF "]}"));
}

static void output_that_fits_leaves_no_spool_file(void **state)
{
    (void)state;
    jpt_registry *r = spooling_registry(0);
    char spool[128];

    snprintf(spool, sizeof(spool), "%s", in_scratch("spool"));
    json_t *results = run1(r, "small", "{}");
    assert_string_equal(ru_content(results, 0), "small\n");
    action(r, "sh", js("{'action':'spawn','id':'s'}"));
    json_t *resp = action(r, "sh", js("{'action':'apply','id':'s','input':'echo hi\\n',"
                                      "'wait_secs':5}"));
    assert_string_equal(field(resp, "content"), "hi\n");
    /* During the calls (the shell still runs) and after the free. */
    assert_int_equal(fu_count_entries(spool), 0);
    jpt_registry_free(r);
    ru_current = NULL;
    assert_int_equal(fu_count_entries(spool), 0);
}

/* The path the model is given for the full output, copied to `path`. */
static void spool_path_named(const char *content, char *path, size_t n)
{
    const char *intro = "the full output is in ";
    const char *at = strstr(content, intro);

    if (at == NULL)
        fail_msg("no spool file named in: %s", content);
    at += strlen(intro);
    size_t len = strcspn(at, " \n");
    assert_true(len < n);
    memcpy(path, at, len);
    path[len] = '\0';
}

static void assert_holds_the_whole_seq(const char *path)
{
    static char text[256 * 1024], expected[256 * 1024];
    size_t len = 0;

    for (int i = 1; i <= 20000; i++)
        len += (size_t)snprintf(expected + len, sizeof(expected) - len, "%d\n", i);
    assert_int_equal(ru_read_text(path, text, sizeof(text)), (long)len);
    assert_memory_equal(text, expected, len);
}

static void output_past_the_limit_is_spooled_until_the_registry_is_freed(void **state)
{
    (void)state;
    jpt_registry *r = spooling_registry(0);
    char path[256], spool[128];

    snprintf(spool, sizeof(spool), "%s/", in_scratch("spool"));
    json_t *results = run1(r, "seq", "{}");
    assert_false(ru_is_error(results, 0));
    spool_path_named(ru_content(results, 0), path, sizeof(path));
    assert_memory_equal(path, spool, strlen(spool));
    assert_holds_the_whole_seq(path);
    jpt_registry_free(r);
    ru_current = NULL;
    assert_int_equal(access(path, F_OK), -1);
}

static void spool_files_kept_on_request_outlive_the_registry(void **state)
{
    (void)state;
    jpt_registry *r = spooling_registry(JPT_REGISTRY_KEEP_SPOOL);
    char path[256];

    json_t *results = run1(r, "seq", "{}");
    spool_path_named(ru_content(results, 0), path, sizeof(path));
    jpt_registry_free(r);
    ru_current = NULL;
    assert_holds_the_whole_seq(path);
}

/* ---- Nothing lost (issue 7, §4) -------------------------------------------------------- */

static void one_shot_timeout_keeps_the_output_so_far(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[{'name':'hang','timeout_ms':300,"
                                  "'command':['sh','-c','echo partial; exec sleep 30']}]}"));

    json_t *results = run1(r, "hang", "{}");
    assert_true(ru_is_error(results, 0));
    ru_assert_contains(ru_content(results, 0), "timed out");
    ru_assert_contains(ru_content(results, 0), "partial");
}

static void cancelled_one_shot_keeps_the_output_so_far(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[{'name':'hang','command':['sh','-c',"
                                  "'echo partial; touch started; exec sleep 30']}]}"));
    jpt_batch *b = ru_submit(r, "[{'id':'c','name':'hang','arguments':{}}]");
    uint64_t deadline = ru_now_ms() + WAIT_MS;

    while (access(in_scratch("started"), F_OK) != 0 && ru_now_ms() < deadline) {
        jpt_registry_dispatch(r);
        ru_poll(r, 10);
    }
    assert_int_equal(access(in_scratch("started"), F_OK), 0);
    jpt_batch_cancel(b);
    json_t *results = ru_finish(r, b);
    assert_true(ru_is_error(results, 0));
    ru_assert_contains(ru_content(results, 0), "cancelled");
    ru_assert_contains(ru_content(results, 0), "partial");
}

/* ---- The turn end that aborts everything (issue 7, §4) ------------------------------- */

static int asked;

static void counting_handler(jpt_inquiry *q, void *ud)
{
    (void)ud;
    asked++;
    jpt_inquiry_cancel(q, "not expected");
}

static void end_turn_abort_kills_every_handle_whatever_its_policy(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(
        "{'tools':[{'name':'waited','stateful':true,'command':['sh'],"
        "'spawn':{'lifecycle':{'on_turn_end':'await'}}},"
        "{'name':'asking','stateful':true,'command':['sh'],"
        "'spawn':{'lifecycle':{'on_turn_end':'inquire'}}}]}"));

    action(r, "waited", js("{'action':'spawn','id':'w'}"));
    action(r, "asking", js("{'action':'spawn','id':'a'}"));
    asked = 0;
    jpt_registry_set_inquiry_handler(r, counting_handler, NULL);
    jpt_batch *b = NULL;
    assert_int_equal(jpt_registry_end_turn(r, JPT_TURN_ABORT, &b), JPT_OK);
    /* Without the abort, the awaited shell would hold the turn for the
     * default 120 s. */
    int rc = jpt_registry_wait(r, b, 10000);
    jpt_batch_free(b);
    assert_int_equal(rc, JPT_OK);
    assert_int_equal(asked, 0);
    json_t *results = ru_run_js(
        r, "[{'id':'1','name':'waited','arguments':{'action':'fetch','id':'w'}},"
           " {'id':'2','name':'asking','arguments':{'action':'fetch','id':'a'}}]");
    ru_assert_text(results, 0, "1", "Handle `w` has stopped, and a notification gave its result",
                   true);
    ru_assert_text(results, 1, "2", "Handle `a` has stopped, and a notification gave its result",
                   true);
}

static void end_turn_keep_and_abort_together_is_invalid(void **state)
{
    (void)state;
    jpt_registry *r = registry(NULL);
    jpt_batch *b = NULL;

    assert_int_equal(jpt_registry_end_turn(r, JPT_TURN_KEEP | JPT_TURN_ABORT, &b),
                     JPT_ERR_INVALID);
    assert_null(b);
}

/* ---- 'sandbox' is refused (issue 7, §7) --------------------------------------------- */

static void sandbox_in_a_definition_is_refused_and_nothing_loads(void **state)
{
    (void)state;
    jpt_registry *r = registry(NULL);
    char *list = NULL;

    assert_int_equal(jpt_registry_load_tools(
                         r,
                         js("{'tools':[{'name':'ok','command':['true']},"
                            "{'name':'boxed','command':['true'],'sandbox':{'network':false}}]}"),
                         0),
                     JPT_ERR_UNSUPPORTED);
    ru_assert_contains(jpt_registry_errmsg(r), "sandbox");
    assert_int_equal(jpt_registry_tools_json(r, JPT_DIALECT_MCP, &list), JPT_OK);
    tu_assert_json_equal(list, "{\"tools\":[]}");
    jpt_free(list);
}

/* ---- The process lifecycle in the log (issue 7, §7) --------------------------------- */

static char log_text[65536];
static size_t log_len;

static void collect_log(int level, const char *msg, void *ud)
{
    (void)ud;
    if (level > JPT_LOG_INFO)
        return;
    int n = snprintf(log_text + log_len, sizeof(log_text) - log_len, "%s\n", msg);
    if (n > 0)
        log_len += (size_t)n < sizeof(log_text) - log_len ? (size_t)n
                                                           : sizeof(log_text) - log_len - 1;
}

static void start_log(void)
{
    log_len = 0;
    log_text[0] = '\0';
    jpt_set_log(collect_log, NULL, JPT_LOG_INFO);
}

/* The line of the log holding every one of `parts`, copied to `line`. */
static void log_line_with(const char *const *parts, size_t nparts, char *line, size_t n)
{
    for (const char *at = log_text; *at != '\0';) {
        size_t len = strcspn(at, "\n");
        snprintf(line, n, "%.*s", (int)len, at);
        bool all = true;
        for (size_t i = 0; i < nparts && all; i++)
            all = strstr(line, parts[i]) != NULL;
        if (all)
            return;
        at += len + (at[len] == '\n');
    }
    fail_msg("no log line with '%s'%s%s in:\n%s", parts[0], nparts > 1 ? " and " : "",
             nparts > 1 ? parts[1] : "", log_text);
}

/* The number after "pid " in `line`. */
static int pid_in(const char *line)
{
    const char *at = strstr(line, "pid ");
    int pid = 0;

    assert_non_null(at);
    assert_int_equal(sscanf(at + 4, "%d", &pid), 1);
    assert_true(pid > 1);
    return pid;
}

static void one_shot_run_logs_its_start_and_end(void **state)
{
    (void)state;
    char line[1024], tools[256];
    snprintf(tools, sizeof(tools), "{'tools':[{'name':'quick','command':['%s','3','','']}]}",
             TOOL("exit-code"));
    jpt_registry *r = registry(js(tools));

    start_log();
    run1(r, "quick", "{}");
    jpt_set_log(NULL, NULL, 0);
    const char *start[] = {"'quick'", "pid "};
    log_line_with(start, 2, line, sizeof(line));
    int pid = pid_in(line);
    const char *end[] = {"'quick'", "ended"};
    log_line_with(end, 2, line, sizeof(line));
    assert_int_equal(pid_in(line), pid);
    ru_assert_contains(line, "3");
}

static void abort_of_a_tool_ignoring_sigterm_logs_both_signals(void **state)
{
    (void)state;
    char line[1024], tools[256];
    snprintf(tools, sizeof(tools), "{'tools':[{'name':'stubborn','stateful':true,"
             "'command':['%s']}]}", TOOL("ignore-term"));
    jpt_registry *r = registry(js(tools));

    json_t *resp = action(r, "stubborn", js("{'action':'spawn','id':'s','wait_secs':5}"));
    assert_string_equal(field(resp, "content"), "ignoring SIGTERM\n");
    start_log();
    resp = action(r, "stubborn", js("{'action':'abort','id':'s'}"));
    jpt_set_log(NULL, NULL, 0);
    assert_string_equal(field(resp, "state"), "stopped");
    const char *term[] = {"SIGTERM", "pid "};
    log_line_with(term, 2, line, sizeof(line));
    int pid = pid_in(line);
    const char *kill[] = {"SIGKILL", "grace"};
    /* The second line, not the first one's mention of what will follow. */
    log_line_with(kill, 2, line, sizeof(line));
    if (strstr(line, "SIGTERM") != NULL)
        fail_msg("no line for the SIGKILL itself in:\n%s", log_text);
    assert_int_equal(pid_in(line), pid);
}

static void one_shot_timeout_is_logged(void **state)
{
    (void)state;
    char line[1024];
    jpt_registry *r = registry(js("{'tools':[{'name':'hang','timeout_ms':200,"
                                  "'command':['sleep','30']}]}"));

    start_log();
    run1(r, "hang", "{}");
    jpt_set_log(NULL, NULL, 0);
    const char *timeout[] = {"'hang'", "timed out"};
    log_line_with(timeout, 2, line, sizeof(line));
}

/* ---- The event queue's cap (issue 7, §5) -------------------------------------------- */

/* Empty batches, one BATCH_DONE each: freed by the registry's free. */
static jpt_batch *batches[4100];

/* Submits `n` empty batches and dispatches their events in. */
static void empty_batches(jpt_registry *r, size_t n)
{
    assert_true(n <= sizeof(batches) / sizeof(batches[0]));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(jpt_registry_submit(r, "[]", &batches[i]), JPT_OK);
    dispatch_ready_work(r);
}

/* Pops every event: they are the BATCH_DONE of batches[from…n), in order. */
static void assert_events_of(jpt_registry *r, size_t from, size_t n)
{
    jpt_event *e;
    size_t i = from;

    while (jpt_registry_next_event(r, &e) == JPT_OK) {
        int type = jpt_event_type(e);
        const jpt_batch *b = jpt_event_batch(e);
        jpt_event_free(e);
        assert_int_equal(type, JPT_EVENT_BATCH_DONE);
        if (i >= n || b != batches[i])
            fail_msg("event %zu is not batch %zu's", i - from, i);
        i++;
    }
    assert_int_equal(i, n);
}

static void event_queue_keeps_the_newest_max_events(void **state)
{
    (void)state;
    jpt_registry_options o = {.max_events = 4};
    jpt_registry *r = ru_scratch_registry(&o, NULL);
    empty_batches(r, 10);
    assert_events_of(r, 6, 10);
}

static void event_queue_holds_4096_by_default(void **state)
{
    (void)state;
    jpt_registry *r = registry(NULL);
    empty_batches(r, 4100);
    assert_events_of(r, 4, 4100);
}

/* ---- The state file's slots (issue 7, §5) ------------------------------------------- */

static void state_file_of_blank_slots_is_free_to_use(void **state)
{
    (void)state;
    jpt_registry_options o = {.state_file = in_scratch("state")};
    write_file(o.state_file, "                               \n"
                             "                               \n");
    jpt_registry *r = ru_scratch_registry(&o, js("{'tools':[" SHELL_DEF "]}"));

    json_t *resp = action(r, "sh", js("{'action':'spawn','id':'s'}"));
    assert_string_equal(field(resp, "state"), "running");
}

static void state_file_listing_a_child_is_refused_and_left_as_it_is(void **state)
{
    (void)state;
    const char *path = in_scratch("state");
    const char *record = "                               \n"
                         "4194304 123456                 \n";
    char text[256];
    jpt_registry_options o = {.size = sizeof(o), .root = ru_scratch, .state_file = path};
    jpt_registry *r = NULL;

    write_file(path, record);
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_EXISTS);
    assert_null(r);
    assert_int_equal(ru_read_text(path, text, sizeof(text)), (long)strlen(record));
    assert_string_equal(text, record);
}

static void state_file_never_outgrows_the_children_alive_at_once(void **state)
{
    (void)state;
    /* A quiet shell's spawn answers after the settle: short, for speed. */
    jpt_registry_options o = {.state_file = in_scratch("state"), .settle_ms = 5};
    jpt_registry *r = ru_scratch_registry(&o, js("{'tools':[" SHELL_DEF "]}"));
    char args[128];
    long largest = 0;

    /* Three alive at most: each spawn after the third aborts the oldest. */
    for (int i = 0; i < 50; i++) {
        snprintf(args, sizeof(args), "{'action':'spawn','id':'h%d'}", i);
        json_decref(act(r, "sh", js(args), NULL));
        char text[8192];
        long size = ru_read_text(o.state_file, text, sizeof(text));
        size -= (long)(ru_state_slots(text) - text); /* where the cgroups are */
        largest = size > largest ? size : largest;
        if (i >= 2) {
            snprintf(args, sizeof(args), "{'action':'abort','id':'h%d'}", i - 2);
            json_t *resp = act(r, "sh", js(args), NULL);
            bool stopped = strcmp(field(resp, "state"), "stopped") == 0;
            json_decref(resp);
            assert_true(stopped);
        }
    }
    if (largest > 3 * 32)
        fail_msg("the state file grew to %ld bytes for 3 children", largest);
    assert_true(largest > 0);
}

/* ---- An older caller's options (issue 7, §5) ---------------------------------------- */

static void options_of_an_older_caller_take_the_defaults(void **state)
{
    (void)state;
    jpt_registry_options o = {0};
    jpt_registry *r = NULL;

    o.size = offsetof(jpt_registry_options, max_processes);
    o.root = ru_scratch;
    assert_int_equal(jpt_registry_new(&o, &r), JPT_OK);
    ru_current = r;
    assert_int_equal(jpt_registry_load_tools(r, js("{'tools':[" SMALL_DEF "]}"), 0), JPT_OK);
    json_t *results = run1(r, "small", "{}");
    ru_assert_text(results, 0, "c", "small\n", false);
}

static void options_smaller_than_the_first_release_are_invalid(void **state)
{
    (void)state;
    jpt_registry_options o = {0};
    jpt_registry *r = NULL;

    o.size = offsetof(jpt_registry_options, max_processes) - 1;
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_null(r);
    o.size = offsetof(jpt_registry_options, turn_end_timeout_ms);
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_null(r);
}

int main(void)
{
    /* Before any jptool call: the structured-output test counts the
     * library's live blocks. */
    tu_install_counting_allocator();

    const struct CMUnitTest tests[] = {
        T(fetch_answers_with_output_printed_while_the_host_did_not_dispatch),
        T(fetch_answers_stopped_for_a_tool_that_exited_while_the_host_did_not_dispatch),
        T(stateful_sh_called_without_action_ends),
        T(stateful_cat_called_without_action_ends),
        T(apply_with_wait_secs_answers_once_the_tool_printed),
        T(fetch_with_wait_secs_waits_for_output),
        T(fetch_without_wait_secs_answers_at_once),
        T(wait_secs_that_is_not_seconds_is_refused),
        T(spawn_does_not_pass_wait_secs_to_the_tool),
        T(apply_to_a_tool_that_closed_its_input_is_an_error),
        T(large_input_to_a_tool_that_closed_its_input_is_an_error),
        T(large_input_to_a_tool_that_closes_its_input_midway_is_an_error),
        T(structured_output_is_bounded_like_text),
        T(output_that_fits_leaves_no_spool_file),
        T(output_past_the_limit_is_spooled_until_the_registry_is_freed),
        T(spool_files_kept_on_request_outlive_the_registry),
        T(one_shot_timeout_keeps_the_output_so_far),
        T(cancelled_one_shot_keeps_the_output_so_far),
        T(end_turn_abort_kills_every_handle_whatever_its_policy),
        T(end_turn_keep_and_abort_together_is_invalid),
        T(sandbox_in_a_definition_is_refused_and_nothing_loads),
        T(one_shot_run_logs_its_start_and_end),
        T(abort_of_a_tool_ignoring_sigterm_logs_both_signals),
        T(one_shot_timeout_is_logged),
        T(event_queue_keeps_the_newest_max_events),
        T(event_queue_holds_4096_by_default),
        T(state_file_of_blank_slots_is_free_to_use),
        T(state_file_listing_a_child_is_refused_and_left_as_it_is),
        T(state_file_never_outgrows_the_children_alive_at_once),
        T(options_of_an_older_caller_take_the_defaults),
        T(options_smaller_than_the_first_release_are_invalid),
    };

    return TU_RUN(tests);
}
