/* Lifetimes at the registry's edges, each a regression test of a fix:
 * handles that a builtin stops from its own callbacks, turn ends that end
 * inside their own loops or lose their batch, calls of batches the host
 * freed that fail inside the library, cancels that race with answers and
 * spawns, inquiries that went stale, host callbacks reached from outside
 * dispatch, stops a tool reports before its process ends, tools replaced
 * under live handles, huge await timeouts, the state file and the orphans
 * it records, and the caller-sized structs of newer callers.
 *
 * Each test runs with a fixture: a scratch directory as the registry's
 * root, and a teardown that frees the registry even when an assertion
 * failed. The tests that free batches in flight also count the library's
 * blocks (the counting allocator) to show nothing is left behind. */
#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registry-util.h"

/* ---- Fixture ---------------------------------------------------------------------- */

/* True while the test is inside a call that dispatches (dispatch, wait,
 * run, free): registry.h, Threading, "callbacks run only inside
 * jpt_registry_dispatch() (and the calls that dispatch for you: run, wait,
 * free)". The builtin's abort callback checks it. */
static bool in_dispatch;

/* The inquiry handler's record. With `answer_now` set, it answers every
 * question at once, from inside the handler. */
static struct {
    jpt_inquiry *q;
    int asked;
    const char *answer_now;
    int answer_rc;
} inq;

/* Driving, with in_dispatch kept (installed as ru_dispatch and ru_wait, so
 * the shared helpers keep it too). */
static int dispatch(jpt_registry *r)
{
    in_dispatch = true;
    int rc = jpt_registry_dispatch(r);
    in_dispatch = false;
    return rc;
}

static int wait_batch(jpt_registry *r, jpt_batch *b, int timeout_ms)
{
    in_dispatch = true;
    int rc = jpt_registry_wait(r, b, timeout_ms);
    in_dispatch = false;
    return rc;
}

static int setup(void **state)
{
    memset(&inq, 0, sizeof(inq));
    in_dispatch = false;
    ru_dispatch = dispatch;
    ru_wait = wait_batch;
    return ru_setup(state);
}

/* The registry is freed as inside a dispatch (its callbacks check it). */
static int teardown(void **state)
{
    in_dispatch = true;
    jpt_registry_free(ru_current);
    in_dispatch = false;
    ru_current = NULL;
    /* Set by the orphan test; cleared here too should it fail midway. */
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    ru_dispatch = jpt_registry_dispatch;
    ru_wait = jpt_registry_wait;
    return ru_teardown(state);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

/* A registry rooted in the scratch directory, with short timings and
 * `turn_end_ms` as its turn-end timeout (0: the default). */
static jpt_registry *registry(const char *tools_json, int turn_end_ms)
{
    jpt_registry_options o = {.turn_end_timeout_ms = turn_end_ms};
    return ru_scratch_registry(&o, tools_json);
}

static void done(jpt_registry *r)
{
    in_dispatch = true;
    ru_done(r);
    in_dispatch = false;
}

static int run_all(jpt_registry *r, int timeout_ms)
{
    in_dispatch = true;
    int rc = jpt_registry_run(r, timeout_ms);
    in_dispatch = false;
    return rc;
}

/* One call "c" of `tool`, its content compared as JSON. */
static void call_expect(jpt_registry *r, const char *tool, const char *args_js,
                        const char *content_js, bool is_error)
{
    char calls[1024];

    snprintf(calls, sizeof(calls), "[{'id':'c','name':'%s','arguments':%s}]", tool, args_js);
    ru_assert_response(ru_run_js(r, calls), 0, "c", content_js, is_error);
}

static void assert_gone(jpt_registry *r, const char *tool, const char *id)
{
    char calls[256];

    snprintf(calls, sizeof(calls),
             "[{'id':'c','name':'%s','arguments':{'action':'fetch','id':'%s'}}]", tool, id);
    json_t *res = ru_run_js(r, calls);
    assert_true(ru_is_error(res, 0));
    ru_assert_gone_text(ru_content(res, 0), id);
}

static void on_inquiry(jpt_inquiry *q, void *ud)
{
    (void)ud;
    inq.asked++;
    if (inq.answer_now != NULL) {
        inq.answer_rc = jpt_inquiry_answer(q, inq.answer_now);
        return;
    }
    inq.q = q;
}

/* Dispatches until the inquiry handler has a question, or `b` (may be
 * NULL) is done. */
static jpt_inquiry *until_inquiry(jpt_registry *r, const jpt_batch *b)
{
    uint64_t deadline = ru_now_ms() + WAIT_MS;

    while (inq.q == NULL && (b == NULL || !jpt_batch_done(b)) && ru_now_ms() < deadline) {
        dispatch(r);
        ru_drain_events(r);
        if (inq.q == NULL)
            ru_poll(r, 50);
    }
    return inq.q;
}

/* The id of the question an inquiry asks. */
static const char *question_id(const jpt_inquiry *q)
{
    static char id[64];
    json_t *question = parse(jpt_inquiry_question_json(q));

    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(question, "id")));
    json_decref(question);
    return id;
}

/* Creates the file `name` in the scratch directory (the scripts wait for it). */
static void touch(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", ru_scratch, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
}

/* ---- A builtin stateful tool, instrumented ------------------------------------------ */

/* What the host side of the builtin `worker` does and saw. */
typedef struct worker {
    jpt_handle *h;            /* the latest handle started */
    int starts, applies, aborts;
    int aborts_outside;       /* abort callbacks run outside dispatch */
    bool stop_on_start;       /* start reports stopped at once */
    bool stop_in_abort;       /* abort reports stopped itself */
    int abort_update_rc;      /* what that jpt_handle_update returned */
    const char *ask_after_apply; /* an apply asks this question next, or NULL */
    char input[256];          /* the last apply's input */
} worker;

/* The handle asks question `qid` (a boolean). */
static void ask(jpt_handle *h, const char *qid)
{
    jpt_state *s = NULL;

    assert_int_equal(jpt_state_new(JPT_STATE_WAITING, &s), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "half done"), JPT_OK);
    assert_int_equal(jpt_state_add_question(s, qid, "Go on?", "{\"type\":\"boolean\"}", NULL),
                     JPT_OK);
    assert_int_equal(jpt_handle_update(h, s), JPT_OK);
    jpt_state_unref(s);
}

static int worker_start(jpt_handle *h, const char *arguments_json, void *ud)
{
    worker *x = ud;

    (void)arguments_json;
    x->h = h;
    x->starts++;
    ru_report(h, x->stop_on_start ? JPT_STATE_STOPPED : JPT_STATE_RUNNING,
              x->stop_on_start ? "done at once" : "started");
    return JPT_OK;
}

static int worker_apply(jpt_handle *h, const char *input_json, void *ud)
{
    worker *x = ud;

    x->applies++;
    snprintf(x->input, sizeof(x->input), "%s", input_json);
    if (x->ask_after_apply != NULL)
        ask(h, x->ask_after_apply);
    else
        ru_report(h, JPT_STATE_RUNNING, "continuing");
    return JPT_OK;
}

static void worker_abort(jpt_handle *h, void *ud)
{
    worker *x = ud;
    jpt_state *s = NULL;

    x->aborts++;
    x->aborts_outside += !in_dispatch;
    if (!x->stop_in_abort)
        return;
    /* The stop is reported synchronously, from inside the callback. */
    x->abort_update_rc = jpt_state_new(JPT_STATE_STOPPED, &s);
    if (x->abort_update_rc == JPT_OK)
        x->abort_update_rc = jpt_state_add_text(s, "stopped by abort");
    if (x->abort_update_rc == JPT_OK)
        x->abort_update_rc = jpt_handle_update(h, s);
    jpt_state_unref(s);
}

#define WORKER "{'name':'worker','stateful':true}"
#define WORKER_ON_TURN_END(policy)                                                              \
    "{'name':'worker','stateful':true,'spawn':{'lifecycle':{'on_turn_end':'" policy "'}}}"

static void add_worker(jpt_registry *r, worker *x, const char *definition_js)
{
    jpt_builtin_ops ops = {sizeof(ops), worker_start, worker_apply, worker_abort};

    if (jpt_registry_add_builtin(r, js(definition_js), &ops, x) != JPT_OK)
        fail_msg("add_builtin: %s", jpt_registry_errmsg(r));
}

static jpt_registry *worker_registry(worker *x, const char *definition_js, int turn_end_ms)
{
    jpt_registry *r = registry(NULL, turn_end_ms);

    add_worker(r, x, definition_js);
    return r;
}

static void spawn_worker(jpt_registry *r, const char *id)
{
    char args[128], expected[128];

    snprintf(args, sizeof(args), "{'action':'spawn','id':'%s'}", id);
    snprintf(expected, sizeof(expected), "{'id':'%s','state':'running','content':'started'}", id);
    call_expect(r, "worker", args, expected, false);
}

/* ---- Stdio tools ------------------------------------------------------------------- */

#define NAP_DEF                                                                               \
    "{'name':'nap','stateful':true,'command':['" TOOL("sleep-ms") "','{{arguments.ms}}'],"       \
    " 'parameters':{'type':'object','properties':{'ms':{'type':'integer'}},'required':['ms']}}"
#define ECHO_DEF "{'name':'echo','stateful':true,'command':['" TOOL("echo-lines") "']}"
#define GHOST_DEF "{'name':'ghost','stateful':true,'command':['/nonexistent/jpt-no-such-tool']}"
#define MERGE_DEF "{'name':'merge','command':['" TOOL("ask-tool") "','{{tool}}']}"

static const char stdio_tools[] =
    "{'tools':[" NAP_DEF "," ECHO_DEF "," GHOST_DEF "," MERGE_DEF "]}";

/* ==== 1. Builtins that stop from inside their own callbacks ========================== */

/* registry.h, jpt_handle_update: the tool may report its state "from the
 * callbacks"; the abort callback reports the stop itself while an await
 * watches the handle, so the stop delivers the handle to the await while
 * the abort is still under way. */
static void builtin_stopping_inside_abort_by_the_model_stays_valid_until_answered(void **state)
{
    (void)state;
    worker x = {.stop_in_abort = true};
    jpt_registry *r = worker_registry(&x, WORKER, 0);

    spawn_worker(r, "a");
    jpt_batch *watch = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['a']}}]");
    dispatch(r); /* the await watches */
    json_t *res = ru_run_js(r, "[{'id':'x','name':'worker','arguments':{'action':'abort','id':'a'}}]");

    assert_int_equal(x.aborts, 1);
    assert_int_equal(x.abort_update_rc, JPT_OK);
    /* "[aborted]" is the library's note (the header is silent on it). */
    ru_assert_response(res, 0, "x",
                       "{'id':'a','state':'stopped','result':'stopped by abort\\n\\n[aborted]'}",
                       false);
    ru_assert_response(ru_finish(r, watch), 0, "w",
                       "{'completed':[{'id':'a','state':'stopped',"
                       "'result':'stopped by abort\\n\\n[aborted]'}],'pending':[]}",
                       false);
    assert_gone(r, "worker", "a");
    done(r);
}

/* RFD 037, "abort: JP terminates all outstanding handles immediately": a
 * builtin whose abort callback reports the stop settles the turn end from
 * inside the turn end's own loop over its handles. */
static void builtin_stopping_inside_abort_at_a_turn_end_abort_stays_valid(void **state)
{
    (void)state;
    worker x = {.stop_in_abort = true};
    jpt_registry *r = worker_registry(&x, WORKER_ON_TURN_END("abort"), 0);
    jpt_batch *b = NULL;

    spawn_worker(r, "a");
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    assert_json(ru_finish(r, b), "[]");
    assert_int_equal(x.aborts, 1);
    assert_int_equal(x.aborts_outside, 0);
    assert_int_equal(x.abort_update_rc, JPT_OK);
    assert_gone(r, "worker", "a");
    done(r);
}

/* RFD 037, "If the timeout is exceeded, remaining handles are aborted":
 * the same stop, from the turn end's timeout. */
static void builtin_stopping_inside_abort_at_the_turn_end_timeout_stays_valid(void **state)
{
    (void)state;
    worker x = {.stop_in_abort = true};
    jpt_registry *r = worker_registry(&x, WORKER_ON_TURN_END("await"), 100);
    jpt_batch *b = NULL;

    spawn_worker(r, "a");
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    assert_json(ru_finish(r, b), "[]");
    assert_int_equal(x.aborts, 1);
    assert_int_equal(x.aborts_outside, 0);
    assert_int_equal(x.abort_update_rc, JPT_OK);
    assert_int_equal(run_all(r, WAIT_MS), JPT_OK);
    assert_gone(r, "worker", "a");
    done(r);
}

/* A builtin done in its start callback, with an await placed before its
 * spawn in the batch (RFD 037, "await in parallel tool call batches"), and
 * the batch freed by the host before it runs: nothing holds the handle for
 * the batch, so the stop, delivered to the await, must not free it while
 * the spawn is still starting it. */
static void builtin_stopping_inside_start_with_its_batch_freed_leaks_nothing(void **state)
{
    (void)state;
    worker x = {.stop_on_start = true};
    jpt_registry *r = worker_registry(&x, WORKER, 0);
    static const char calls[] = "["
        "{'id':'w','name':'await','arguments':{'all':['a']}},"
        "{'id':'s','name':'worker','arguments':{'action':'spawn','id':'a'}}]";

    /* Once through, for what the loop keeps for good. */
    ru_run_js(r, calls);
    ru_drain_events(r);
    long live = tu_live_blocks();

    jpt_batch *b = ru_submit(r, calls);
    jpt_batch_free(b);
    assert_int_equal(run_all(r, WAIT_MS), JPT_OK);
    ru_drain_events(r);
    assert_int_equal(tu_live_blocks() - live, 0);
    assert_int_equal(x.starts, 2);
    assert_gone(r, "worker", "a");
    done(r);
}

/* ==== 2. Turn ends that settle inside their own loops ================================= */

/* registry.h, jpt_registry_end_turn: "The batch is done when every handle
 * has settled", and jpt_registry_run returns once no call is in flight —
 * with every handle a builtin that stops inside its abort callback. */
static void turn_end_of_builtins_stopping_inside_abort_completes_and_run_returns(void **state)
{
    (void)state;
    worker x = {.stop_in_abort = true};
    jpt_registry *r = worker_registry(&x, WORKER_ON_TURN_END("abort"), 0);
    jpt_batch *b = NULL;

    spawn_worker(r, "a");
    spawn_worker(r, "b");
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    assert_int_equal(wait_batch(r, b, WAIT_MS), JPT_OK);
    json_t *res = ru_results(b);
    jpt_batch_free(b);
    assert_json(res, "[]");
    json_decref(res);
    assert_int_equal(run_all(r, WAIT_MS), JPT_OK);
    assert_int_equal(x.aborts, 2);
    assert_int_equal(x.aborts_outside, 0);
    assert_gone(r, "worker", "a");
    assert_gone(r, "worker", "b");
    done(r);
}

/* registry.h, jpt_batch_free: calls "keep running and their results are
 * dropped" — the turn end, too, still ends, and no longer counts as in
 * flight: run returns JPT_OK instead of timing out, and the next turn can
 * end. */
static void turn_end_with_its_batch_freed_by_the_host_still_lets_run_return(void **state)
{
    (void)state;
    worker x = {.stop_in_abort = true};
    jpt_registry *r = worker_registry(&x, WORKER_ON_TURN_END("abort"), 0);
    jpt_batch *b = NULL, *next = NULL;

    spawn_worker(r, "a");
    spawn_worker(r, "b");
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    jpt_batch_free(b);
    assert_int_equal(run_all(r, WAIT_MS), JPT_OK);
    assert_int_equal(x.aborts, 2);
    assert_int_equal(x.aborts_outside, 0);
    assert_int_equal(jpt_registry_end_turn(r, 0, &next), JPT_OK);
    assert_json(ru_finish(r, next), "[]");
    assert_gone(r, "worker", "a");
    done(r);
}

/* ==== 3. Calls of a freed batch that fail inside the library ========================== */

/* Runs `calls` once to completion (warming up what the loop keeps), then
 * again with the batch freed before it runs, and checks that the second
 * round left no block behind. */
static void assert_freed_batch_leaks_nothing(jpt_registry *r, const char *calls)
{
    ru_run_js(r, calls);
    ru_drain_events(r);
    long live = tu_live_blocks();

    assert_true(live > 0); /* the counting allocator is in use */
    jpt_batch *b = ru_submit(r, calls);
    jpt_batch_free(b);
    assert_int_equal(run_all(r, WAIT_MS), JPT_OK);
    ru_drain_events(r);
    assert_int_equal(tu_live_blocks() - live, 0);
}

/* A spawn whose arguments fail the schema completes inside the library,
 * with nobody to read its result. */
static void freed_batch_spawn_with_arguments_off_the_schema_leaks_nothing(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(stdio_tools), 0);

    assert_freed_batch_leaks_nothing(
        r, "[{'id':'s','name':'nap','arguments':{'action':'spawn','id':'n','ms':'soon'}}]");
    assert_gone(r, "nap", "n");
    done(r);
}

static void freed_batch_spawn_of_a_missing_command_leaks_nothing(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(stdio_tools), 0);

    assert_freed_batch_leaks_nothing(
        r, "[{'id':'s','name':'ghost','arguments':{'action':'spawn','id':'g'}}]");
    assert_gone(r, "ghost", "g");
    done(r);
}

/* Two actions on one handle in one batch run in turn (issue 16): freed at
 * once, the apply under way answers into the void, and the fetch waiting
 * for its turn never runs. */
static void freed_batch_with_a_call_waiting_its_turn_leaks_nothing(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(stdio_tools), 0);

    call_expect(r, "echo", "{'action':'spawn','id':'e'}",
                "{'id':'e','state':'running','content':'ready\\n> '}", false);
    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'echo','arguments':{'action':'apply','id':'e','input':'x\\n'}},"
        "{'id':'2','name':'echo','arguments':{'action':'fetch','id':'e'}}]");
    ru_assert_response(res, 0, "1", "{'id':'e','state':'running','content':'echo: x\\n> '}",
                       false);
    ru_assert_response(res, 1, "2", "{'id':'e','state':'running','content':''}", false);
    assert_freed_batch_leaks_nothing(r, "["
        "{'id':'1','name':'echo','arguments':{'action':'apply','id':'e','input':'y\\n'}},"
        "{'id':'2','name':'echo','arguments':{'action':'fetch','id':'e'}}]");
    /* The handle lives on, having answered the apply nobody read. */
    call_expect(r, "echo", "{'action':'fetch','id':'e'}",
                "{'id':'e','state':'running','content':''}", false);
    done(r);
}

/* ==== 4. A cancel that races with an answer ========================================== */

/* registry.h, jpt_inquiry_answer: "If the call ended meanwhile (aborted,
 * batch cancelled, …), returns JPT_ERR_CANCELLED" — and the cancel stands:
 * the answer does not run the tool again in its place. */
static void cancelled_one_shot_refuses_the_answer_to_its_question(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(stdio_tools), 0);

    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    jpt_batch *b = ru_submit(r, "[{'id':'m','name':'merge','arguments':{}}]");
    jpt_inquiry *q = until_inquiry(r, b);
    assert_non_null(q);
    assert_string_equal(question_id(q), "branch");

    jpt_batch_cancel(b);
    assert_int_equal(jpt_inquiry_answer(q, "\"develop\""), JPT_ERR_CANCELLED);
    inq.q = NULL;
    json_t *res = ru_finish(r, b);
    ru_assert_text(res, 0, "m", "The call `merge` was cancelled", true);
    assert_int_equal(inq.asked, 1);
    done(r);
}

/* ==== 5. A spawn cancelled before it ran, and an await on it ========================= */

/* registry.h, jpt_batch_cancel: "calls not yet started never run" — the
 * spawn's pre-registered handle (RFD 037, "await in parallel tool call
 * batches") stops with it, instead of holding its id until the host frees
 * the batch. The await, not started either, is cancelled with the batch. */
static void spawn_cancelled_before_it_ran_frees_its_id_before_the_batch_is_freed(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(stdio_tools), 0);

    jpt_batch *b = ru_submit(r, "["
        "{'id':'s','name':'nap','arguments':{'action':'spawn','id':'h','ms':30000}},"
        "{'id':'w','name':'await','arguments':{'all':['h'],'timeout_secs':600}}]");
    jpt_batch_cancel(b);
    assert_int_equal(wait_batch(r, b, WAIT_MS), JPT_OK);
    json_t *res = ru_results(b);
    ru_assert_text(res, 0, "s", "The call `nap` was cancelled", true);
    ru_assert_text(res, 1, "w", "The call `await` was cancelled", true);
    json_decref(res);

    /* The batch is done but still held by the host: the id is free all
     * the same. */
    assert_gone(r, "nap", "h");
    call_expect(r, "nap", "{'action':'spawn','id':'h','ms':0}",
                "{'id':'h','state':'stopped',"
                "'result':'slept 0\\n\\n[process ended: exit status 0]'}",
                false);
    jpt_batch_free(b);
    done(r);
}

/* One batch: the await has started, the spawn after it has not, when the
 * batch is cancelled (from a builtin's start callback between them). The
 * spawn's handle stops with the reason, which ends the await at once (not
 * at its timeout) and reaches the model through it. */
static jpt_batch *cancel_target;

static int cancel_start(jpt_handle *h, const char *arguments_json, void *ud)
{
    (void)h;
    (void)arguments_json;
    (void)ud;
    jpt_batch_cancel(cancel_target);
    return JPT_OK;
}

static void await_in_a_batch_cancelled_before_its_spawn_ran_reports_the_reason(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(stdio_tools), 0);
    jpt_builtin_ops ops = {sizeof(ops), cancel_start, NULL, NULL};

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'cancel'}"), &ops, NULL), JPT_OK);
    jpt_batch *b = ru_submit(r, "["
        "{'id':'w','name':'await','arguments':{'all':['h'],'timeout_secs':600}},"
        "{'id':'c','name':'cancel','arguments':{}},"
        "{'id':'s','name':'nap','arguments':{'action':'spawn','id':'h','ms':30000}}]");
    cancel_target = b;

    json_t *res = ru_finish(r, b);
    /* Not "cancelled": the await was satisfied first, by the handle's stop. */
    ru_assert_response(res, 0, "w",
                       "{'completed':[{'id':'h','state':'stopped',"
                       "'result':'Error: The spawn was cancelled before it ran'}],'pending':[]}",
                       false);
    ru_assert_text(res, 1, "c", "The call `cancel` was cancelled", true);
    ru_assert_text(res, 2, "s", "The call `nap` was cancelled", true);
    assert_gone(r, "nap", "h");
    done(r);
}

/* ==== 6. Stale inquiries ============================================================== */

/* A worker `a`, an await watching it in `*watch`, and its question q1 in
 * the inquiry handler. */
static jpt_inquiry *asked_while_awaited(jpt_registry *r, worker *x, jpt_batch **watch)
{
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    spawn_worker(r, "a");
    *watch = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['a']}}]");
    dispatch(r); /* the await watches */
    ask(x->h, "q1");
    jpt_inquiry *q = until_inquiry(r, *watch);
    assert_non_null(q);
    assert_string_equal(jpt_inquiry_handle_id(q), "a");
    assert_string_equal(question_id(q), "q1");
    inq.q = NULL;
    return q;
}

static void abort_and_finish(jpt_registry *r, jpt_batch *watch)
{
    json_t *res = ru_run_js(r, "[{'id':'x','name':'worker','arguments':{'action':'abort','id':'a'}}]");
    json_t *resp = ru_response(ru_content(res, 0));
    assert_string_equal(field(resp, "state"), "stopped");
    json_decref(resp);
    json_t *awaited = ru_finish(r, watch);
    resp = ru_response(ru_content(awaited, 0));
    assert_int_equal(json_array_size(json_object_get(resp, "completed")), 1);
    json_decref(resp);
}

/* RFD 009, "Apply serves two purposes": the model answers the question
 * itself; the host's later answer to the inquiry is stale. */
static void inquiry_answered_by_the_models_apply_is_refused_and_not_delivered(void **state)
{
    (void)state;
    worker x = {0};
    jpt_registry *r = worker_registry(&x, WORKER, 0);
    jpt_batch *watch = NULL;
    jpt_inquiry *q1 = asked_while_awaited(r, &x, &watch);

    json_t *res = ru_run_js(r, "[{'id':'p','name':'worker','arguments':"
                         "{'action':'apply','id':'a','input':true}}]");
    json_t *resp = ru_response(ru_content(res, 0));
    assert_string_equal(field(resp, "state"), "running");
    ru_assert_contains(field(resp, "content"), "continuing");
    json_decref(resp);
    assert_int_equal(x.applies, 1);

    assert_int_equal(jpt_inquiry_answer(q1, "false"), JPT_ERR_CANCELLED);
    for (int i = 0; i < 3; i++)
        dispatch(r);
    assert_int_equal(x.applies, 1);
    assert_string_equal(x.input, "true");
    assert_int_equal(inq.asked, 1);
    abort_and_finish(r, watch);
    done(r);
}

/* The handle moved on to a second question q2: the answer meant for q1
 * does not answer q2; q2 still takes its own. */
static void inquiry_for_a_first_question_is_refused_once_the_handle_asks_a_second(void **state)
{
    (void)state;
    worker x = {.ask_after_apply = "q2"};
    jpt_registry *r = worker_registry(&x, WORKER, 0);
    jpt_batch *watch = NULL;
    jpt_inquiry *q1 = asked_while_awaited(r, &x, &watch);

    json_t *res = ru_run_js(r, "[{'id':'p','name':'worker','arguments':"
                         "{'action':'apply','id':'a','input':true}}]");
    json_t *resp = ru_response(ru_content(res, 0));
    assert_string_equal(field(resp, "state"), "waiting");
    json_decref(resp);
    assert_int_equal(x.applies, 1);
    jpt_inquiry *q2 = until_inquiry(r, watch);
    assert_non_null(q2);
    assert_string_equal(question_id(q2), "q2");
    inq.q = NULL;

    assert_int_equal(jpt_inquiry_answer(q1, "false"), JPT_ERR_CANCELLED);
    for (int i = 0; i < 3; i++)
        dispatch(r);
    assert_int_equal(x.applies, 1);

    x.ask_after_apply = NULL;
    assert_int_equal(jpt_inquiry_answer(q2, "false"), JPT_OK);
    for (int i = 0; i < 100 && x.applies < 2; i++) {
        dispatch(r);
        ru_poll(r, 10);
    }
    assert_int_equal(x.applies, 2);
    assert_string_equal(x.input, "false");
    assert_int_equal(inq.asked, 2);
    abort_and_finish(r, watch);
    done(r);
}

/* ==== 7. A question reported from outside dispatch ==================================== */

/* registry.h: jpt_handle_update may be called "outside dispatch too; the
 * registry reacts at its next dispatch" — and the inquiry handler, a host
 * callback, runs only inside dispatch. */
static void question_reported_outside_dispatch_reaches_the_handler_at_the_next_dispatch(
    void **state)
{
    (void)state;
    worker x = {0};
    jpt_registry *r = worker_registry(&x, WORKER, 0);

    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    spawn_worker(r, "a");
    jpt_batch *watch = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['a']}}]");
    dispatch(r); /* the await watches */
    assert_int_equal(inq.asked, 0);

    ask(x.h, "q1");
    int asked_by_update = inq.asked;
    for (int i = 0; i < 3 && inq.asked == 0; i++)
        dispatch(r);
    assert_int_equal(asked_by_update, 0);
    assert_int_equal(inq.asked, 1);
    assert_non_null(inq.q);
    assert_string_equal(jpt_inquiry_handle_id(inq.q), "a");

    assert_int_equal(jpt_inquiry_cancel(inq.q, "not now"), JPT_OK);
    inq.q = NULL;
    json_t *res = ru_finish(r, watch);
    json_t *resp = ru_response(ru_content(res, 0));
    json_t *a = json_array_get(json_object_get(resp, "completed"), 0);
    assert_string_equal(json_string_value(json_object_get(a, "id")), "a");
    ru_assert_contains(json_string_value(json_object_get(a, "result")),
                       "The question `q1` was not answered: not now");
    json_decref(resp);
    assert_int_equal(x.aborts_outside, 0);
    done(r);
}

/* ==== 8. The turn-end answer, and the abort callback it leads to ===================== */

#define ABORT_A "{'handles':[{'id':'a','action':'abort'}]}"

/* The handler answers "abort" before it returns. */
static void turn_end_answered_inside_the_handler_aborts_the_builtin_inside_dispatch(void **state)
{
    (void)state;
    worker x = {0};
    jpt_registry *r = worker_registry(&x, WORKER, 0);
    jpt_batch *b = NULL;
    char answer[128];

    spawn_worker(r, "a");
    snprintf(answer, sizeof(answer), "%s", js(ABORT_A));
    inq.answer_now = answer;
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    assert_json(ru_finish(r, b), "[]");

    assert_int_equal(inq.asked, 1);
    assert_int_equal(inq.answer_rc, JPT_OK);
    assert_int_equal(x.aborts, 1);
    assert_int_equal(x.aborts_outside, 0);
    assert_gone(r, "worker", "a");
    done(r);
}

/* The host answers "abort" later, from outside dispatch: the abort
 * callback waits for the next dispatch. */
static void turn_end_answered_outside_dispatch_aborts_the_builtin_only_inside_dispatch(
    void **state)
{
    (void)state;
    worker x = {0};
    jpt_registry *r = worker_registry(&x, WORKER, 0);
    jpt_batch *b = NULL;

    spawn_worker(r, "a");
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    jpt_inquiry *q = until_inquiry(r, b);
    assert_non_null(q);
    assert_null(jpt_inquiry_handle_id(q));
    assert_string_equal(question_id(q), "turn_end");

    assert_int_equal(jpt_inquiry_answer(q, js(ABORT_A)), JPT_OK);
    inq.q = NULL;
    int aborts_by_answer = x.aborts;
    assert_json(ru_finish(r, b), "[]");
    assert_int_equal(aborts_by_answer, 0);
    assert_int_equal(x.aborts, 1);
    assert_int_equal(x.aborts_outside, 0);
    assert_gone(r, "worker", "a");
    done(r);
}

/* ==== 9. A stop reported before the process ends ===================================== */

/* Once `go` exists: prints an RFD 009 ToolState line saying it stopped,
 * and lives on for half a second. */
#define STOPPER_SH                                                                            \
    "until [ -e go ]; do sleep 0.02; done; "                                                  \
    "echo '{\"type\":\"stopped\",\"content\":\"checked\"}'; sleep 0.5"
/* Once `go_b` exists: says so and ends. */
#define BUILDER_SH "until [ -e go_b ]; do sleep 0.02; done; echo built"

static jpt_registry *stop_line_registry(void)
{
    json_t *tools = json_pack("{s:[{s:s, s:b, s:[s, s, s]}, {s:s, s:b, s:[s, s, s]}]}", "tools",
                              "name", "stopper", "stateful", 1, "command", "sh", "-c", STOPPER_SH,
                              "name", "builder", "stateful", 1, "command", "sh", "-c",
                              BUILDER_SH);
    char *text = json_dumps(tools, JSON_COMPACT);
    json_decref(tools);
    assert_non_null(text);
    jpt_registry *r = registry(text, 0);
    jpt_free(text);
    return r;
}

/* Spawns the stopper as `a` and lets it print its stop line. */
static void stopper_reports_its_stop(jpt_registry *r)
{
    call_expect(r, "stopper", "{'action':'spawn','id':'a'}",
                "{'id':'a','state':'running','content':''}", false);
    ru_drain_events(r);
    touch("go");
    assert_true(ru_until_event(r, JPT_EVENT_OUTPUT, "a", 0));
}

/* RFD 037: await returns when a handle "reaches 'stopped'"; the process
 * of a tool that said so runs on, and the await answers once, when it has
 * ended, with the tool's result. */
static void await_on_a_stop_reported_before_exit_completes_once_when_the_tool_ends(void **state)
{
    (void)state;
    jpt_registry *r = stop_line_registry();
    uint64_t deadline = ru_now_ms() + WAIT_MS;
    int await_done = 0, done_before_exit = 0;
    bool exited = false;
    jpt_event *e;

    stopper_reports_its_stop(r);
    jpt_batch *watch = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['a']}}]");
    while (ru_now_ms() < deadline && !(exited && jpt_batch_done(watch)) && done_before_exit == 0) {
        dispatch(r);
        while (jpt_registry_next_event(r, &e) == JPT_OK) {
            if (ru_event_matches(e, JPT_EVENT_STATE, "a", JPT_STATE_STOPPED))
                exited = true;
            if (ru_event_matches(e, JPT_EVENT_CALL_DONE, "w", 0)) {
                await_done++;
                done_before_exit += !exited;
            }
            jpt_event_free(e);
        }
        ru_poll(r, 50);
    }
    /* Nothing more comes of it. */
    for (int i = 0; i < 3; i++) {
        dispatch(r);
        while (jpt_registry_next_event(r, &e) == JPT_OK) {
            await_done += ru_event_matches(e, JPT_EVENT_CALL_DONE, "w", 0);
            jpt_event_free(e);
        }
    }
    assert_int_equal(done_before_exit, 0);
    assert_true(exited);
    assert_int_equal(await_done, 1);
    json_t *res = ru_finish(r, watch);
    json_t *resp = parse(ru_content(res, 0));
    json_t *completed = json_object_get(resp, "completed");
    assert_int_equal(json_array_size(completed), 1);
    assert_int_equal(json_array_size(json_object_get(resp, "pending")), 0);
    json_t *a = json_array_get(completed, 0);
    assert_string_equal(json_string_value(json_object_get(a, "id")), "a");
    assert_string_equal(json_string_value(json_object_get(a, "state")), "stopped");
    ru_assert_contains(json_string_value(json_object_get(a, "result")), "checked");
    json_decref(resp);
    assert_gone(r, "stopper", "a");
    done(r);
}

/* RFD 037, "Completion condition": every handle in `all` — a stop counted
 * twice (once as reported, once at the exit) would end the await while
 * `b` still runs. */
static void await_all_waits_for_every_handle_when_one_reported_its_stop_early(void **state)
{
    (void)state;
    jpt_registry *r = stop_line_registry();

    call_expect(r, "builder", "{'action':'spawn','id':'b'}",
                "{'id':'b','state':'running','content':''}", false);
    stopper_reports_its_stop(r);
    jpt_batch *watch = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['a','b']}}]");
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "a", JPT_STATE_STOPPED));
    for (int i = 0; i < 3; i++)
        dispatch(r);
    assert_false(jpt_batch_done(watch));

    touch("go_b");
    json_t *res = ru_finish(r, watch);
    json_t *resp = parse(ru_content(res, 0));
    json_t *completed = json_object_get(resp, "completed");
    assert_int_equal(json_array_size(completed), 2);
    assert_int_equal(json_array_size(json_object_get(resp, "pending")), 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(completed, 0), "id")),
                        "a");
    assert_string_equal(json_string_value(json_object_get(json_array_get(completed, 1), "id")),
                        "b");
    ru_assert_contains(json_string_value(json_object_get(json_array_get(completed, 1), "result")),
                       "built");
    json_decref(resp);
    done(r);
}

/* ==== 10. A tool replaced under a live handle ======================================== */

/* registry.h, JPT_LOAD_REPLACE: "a definition replaces a tool of the same
 * name" — for new calls; the handles of the old definition are still the
 * tool's, for every action. */
#define SVC_DEF(text)                                                                         \
    "{'name':'svc','stateful':true,'command':['" TOOL("sleep-ms") "','30000','" text "']}"

static void handle_of_a_replaced_tool_is_still_found_by_fetch_and_abort(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" SVC_DEF("v1") "]}"), 0);

    call_expect(r, "svc", "{'action':'spawn','id':'old'}",
                "{'id':'old','state':'running','content':'v1'}", false);
    assert_int_equal(
        jpt_registry_load_tools(r, js("{'tools':[" SVC_DEF("v2") "]}"), JPT_LOAD_REPLACE),
        JPT_OK);
    call_expect(r, "svc", "{'action':'spawn','id':'new'}",
                "{'id':'new','state':'running','content':'v2'}", false);

    call_expect(r, "svc", "{'action':'fetch','id':'old'}",
                "{'id':'old','state':'running','content':''}", false);
    json_t *res = ru_run_js(r, "[{'id':'x','name':'svc','arguments':{'action':'abort','id':'old'}}]");
    json_t *resp = ru_response(ru_content(res, 0));
    assert_string_equal(field(resp, "id"), "old");
    assert_string_equal(field(resp, "state"), "stopped");
    json_decref(resp);
    assert_gone(r, "svc", "old");
    call_expect(r, "svc", "{'action':'fetch','id':'new'}",
                "{'id':'new','state':'running','content':''}", false);
    done(r);
}

/* issue 8: a call is checked against, and runs, the definition it was
 * submitted to; a replacement between submit and the dispatch that starts
 * the call is for later calls. (The tool was once looked up again as the
 * call started: its arguments were checked against the new schema, and
 * the old definition run.) */
#define GREET_DEF(version, key)                                                               \
    "{'name':'greet','parameters':{'type':'object','properties':{'" key "':{'type':'string'}},"  \
    "'required':['" key "'],'additionalProperties':false},"                                   \
    "'command':['echo','" version "','{{arguments." key "}}']}"

static void call_runs_the_definition_it_was_submitted_to(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[" GREET_DEF("v1", "who") "]}"), 0);

    jpt_batch *b = ru_submit(r, "[{'id':'g','name':'greet','arguments':{'who':'ada'}}]");
    assert_int_equal(
        jpt_registry_load_tools(r, js("{'tools':[" GREET_DEF("v2", "name") "]}"), JPT_LOAD_REPLACE),
        JPT_OK);
    json_t *res = ru_finish(r, b);
    ru_assert_text(res, 0, "g", "v1 ada\n", false);
    /* A call submitted now gets the new one. */
    res = ru_run_js(r, "[{'id':'h','name':'greet','arguments':{'name':'bob'}}]");
    ru_assert_text(res, 0, "h", "v2 bob\n", false);
    done(r);
}

/* issue 8: a builtin's `timeout_ms` holds as a process's does. (It was
 * accepted and never enforced: only the process path started the timer,
 * and the call waited for ever.) The tool is ended through its abort
 * callback, inside dispatch, and the result keeps what it said so far. */
static void builtin_one_shot_timeout_ends_it_through_its_abort(void **state)
{
    (void)state;
    worker x = {0};
    jpt_registry *r = worker_registry(&x, "{'name':'worker','timeout_ms':200}", 0);

    json_t *res = ru_run_js(r, "[{'id':'w','name':'worker','arguments':{}}]");
    assert_true(ru_is_error(res, 0));
    ru_assert_contains(ru_content(res, 0), "started");
    ru_assert_contains(ru_content(res, 0), "the tool timed out after 200 ms and was stopped");
    assert_int_equal(x.aborts, 1);
    assert_int_equal(x.aborts_outside, 0);
    done(r);
}

/* ==== 11. An enormous await timeout ================================================== */

/* RFD 037, timeout_secs: "Maximum seconds to wait" — the largest integer
 * JSON carries is a wait longer than any turn, not an overflow into the
 * past. */
static void await_with_an_enormous_timeout_waits_for_the_handle(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(stdio_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'s','name':'nap','arguments':{'action':'spawn','id':'n','ms':100}},"
        "{'id':'w','name':'await','arguments':{'all':['n'],'timeout_secs':9223372036854775807}}]");
    ru_assert_response(res, 1, "w",
                       "{'completed':[{'id':'n','state':'stopped',"
                       "'result':'slept 100\\n\\n[process ended: exit status 0]'}],'pending':[]}",
                       false);
    done(r);
}

/* ==== 12. The state file and the orphans it records ================================== */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* registry.h, jpt_registry_new: "JPT_ERR_EXISTS (the state file lists
 * children already …)" — never overwritten, so reap_stale still finds
 * them; an empty file is what a registry without children leaves, and is
 * taken. */
static void state_file_listing_children_is_refused_untouched_and_an_empty_one_taken(
    void **state)
{
    (void)state;
    char path[128], text[128];
    static const char listed[] = "4242 123456\n";
    jpt_registry_options o = {sizeof(o), .root = ru_scratch, .state_file = path};
    jpt_registry *r = (jpt_registry *)&o;

    snprintf(path, sizeof(path), "%s/children", ru_scratch);
    write_text(path, listed);
    int rc = jpt_registry_new(&o, &r);
    jpt_registry *refused = r;
    long len = ru_read_text(path, text, sizeof(text));
    if (refused != NULL)
        jpt_registry_free(refused);
    assert_int_equal(rc, JPT_ERR_EXISTS);
    assert_null(refused);
    assert_int_equal(len, (long)strlen(listed));
    assert_string_equal(text, listed);

    write_text(path, "");
    assert_int_equal(jpt_registry_new(&o, &r), JPT_OK);
    assert_non_null(r);
    jpt_registry_free(r);
}

/* A session whose leader is gone while a member lives: forks a leader
 * that calls setsid(), forks a sleeper into its session and exits. The
 * sleeper is reparented to this process (a subreaper for the time), so
 * the test can reap it. Returns the leader's pid; *member the sleeper's. */
static pid_t orphaned_session(pid_t *member)
{
    int p[2];
    int status = 0;

    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t leader = fork();
    assert_true(leader >= 0);
    if (leader == 0) {
        pid_t g = -1;
        if (setsid() >= 0 && (g = fork()) == 0) {
            execl(TOOL("sleep-ms"), "sleep-ms", "10000", (char *)NULL);
            _exit(127);
        }
        _exit(write(p[1], &g, sizeof(g)) == (ssize_t)sizeof(g) && g > 0 ? 0 : 1);
    }
    close(p[1]);
    ssize_t n = read(p[0], member, sizeof(*member));
    close(p[0]);
    assert_int_equal(waitpid(leader, &status, 0), leader);
    assert_int_equal(n, (ssize_t)sizeof(*member));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return leader;
}

/* registry.h, jpt_registry_reap_stale: "Kills the children a crashed host
 * left behind" — the recorded tool died with the host, and what it started
 * lives on in its session. */
static void reap_stale_kills_the_session_of_a_recorded_tool_that_is_gone(void **state)
{
    (void)state;
    char path[128], text[64];
    size_t killed = 99;
    pid_t member = -1;
    int status = 0;

    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    pid_t leader = orphaned_session(&member);
    snprintf(path, sizeof(path), "%s/children", ru_scratch);
    snprintf(text, sizeof(text), "%d 12345\n", (int)leader);
    write_text(path, text);

    int rc = jpt_registry_reap_stale(path, &killed);
    /* Killed, it is reaped at once; spared, it ends its sleep (10 s) and
     * exits 0. Either way no process is left. */
    pid_t reaped = waitpid(member, &status, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    bool file_left = access(path, F_OK) == 0;

    assert_int_equal(rc, JPT_OK);
    assert_int_equal(reaped, member);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    assert_int_equal(killed, 1);
    assert_false(file_left);
}

/* ==== 13. Caller-sized structs of a newer caller ===================================== */

/* include/jptool/common.h: a size "below the first version's is
 * JPT_ERR_INVALID. A larger one … is accepted when every field this
 * library does not know is zero, and is JPT_ERR_UNSUPPORTED otherwise". */

static void registry_options_of_a_newer_caller_are_checked_to_their_size(void **state)
{
    (void)state;
    struct {
        jpt_registry_options o;
        unsigned char tail[16];
    } newer;
    jpt_registry *zero_tail = NULL, *set_tail = NULL, *smaller = NULL;

    memset(&newer, 0, sizeof(newer));
    newer.o.size = sizeof(newer);
    newer.o.root = ru_scratch;
    int ok = jpt_registry_new(&newer.o, &zero_tail);
    newer.tail[5] = 1;
    int unsupported = jpt_registry_new(&newer.o, &set_tail);
    newer.tail[5] = 0;
    newer.o.size = offsetof(jpt_registry_options, max_processes) - 1;
    int invalid = jpt_registry_new(&newer.o, &smaller);
    bool created[3] = {zero_tail != NULL, set_tail != NULL, smaller != NULL};
    jpt_registry_free(zero_tail);
    jpt_registry_free(set_tail);
    jpt_registry_free(smaller);

    assert_int_equal(ok, JPT_OK);
    assert_true(created[0]);
    assert_int_equal(unsupported, JPT_ERR_UNSUPPORTED);
    assert_false(created[1]);
    assert_int_equal(invalid, JPT_ERR_INVALID);
    assert_false(created[2]);
}

static void render_options_of_a_newer_caller_are_checked_to_their_size(void **state)
{
    (void)state;
    struct {
        jpt_render_options o;
        unsigned char tail[16];
    } newer;
    jpt_state *s = NULL;
    char *out = NULL;

    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "hello"), JPT_OK);
    memset(&newer, 0, sizeof(newer));
    newer.o.size = sizeof(newer);
    int ok = jpt_state_render(s, &newer.o, &out);
    char rendered[32];
    snprintf(rendered, sizeof(rendered), "%s", out != NULL ? out : "(none)");
    jpt_free(out);
    out = NULL;

    newer.tail[15] = 0x80;
    int unsupported = jpt_state_render(s, &newer.o, &out);
    jpt_free(out);
    out = NULL;

    newer.tail[15] = 0;
    newer.o.size = sizeof(jpt_render_options) - 1;
    int invalid = jpt_state_render(s, &newer.o, &out);
    jpt_free(out);
    jpt_state_unref(s);

    assert_int_equal(ok, JPT_OK);
    assert_string_equal(rendered, "hello");
    assert_int_equal(unsupported, JPT_ERR_UNSUPPORTED);
    assert_int_equal(invalid, JPT_ERR_INVALID);
}

static void builtin_ops_of_a_newer_caller_are_checked_to_their_size(void **state)
{
    (void)state;
    struct {
        jpt_builtin_ops ops;
        unsigned char tail[16];
    } newer;
    worker x = {.stop_on_start = true};
    jpt_registry *r = registry(NULL, 0);

    memset(&newer, 0, sizeof(newer));
    newer.ops.size = sizeof(newer);
    newer.ops.start = worker_start;
    newer.tail[0] = 7;
    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'worker'}"), &newer.ops, &x),
                     JPT_ERR_UNSUPPORTED);

    newer.tail[0] = 0;
    newer.ops.size = sizeof(jpt_builtin_ops) - 1;
    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'worker'}"), &newer.ops, &x),
                     JPT_ERR_INVALID);

    newer.ops.size = sizeof(newer);
    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'worker'}"), &newer.ops, &x),
                     JPT_OK);
    /* Neither refused attempt added the tool: this one did, and it runs. */
    ru_assert_text(ru_run_js(r, "[{'id':'c','name':'worker','arguments':{}}]"), 0, "c", "done at once",
                   false);
    done(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* 1 */
        T(builtin_stopping_inside_abort_by_the_model_stays_valid_until_answered),
        T(builtin_stopping_inside_abort_at_a_turn_end_abort_stays_valid),
        T(builtin_stopping_inside_abort_at_the_turn_end_timeout_stays_valid),
        T(builtin_stopping_inside_start_with_its_batch_freed_leaks_nothing),
        /* 2 */
        T(turn_end_of_builtins_stopping_inside_abort_completes_and_run_returns),
        T(turn_end_with_its_batch_freed_by_the_host_still_lets_run_return),
        /* 3 */
        T(freed_batch_spawn_with_arguments_off_the_schema_leaks_nothing),
        T(freed_batch_spawn_of_a_missing_command_leaks_nothing),
        T(freed_batch_with_a_call_waiting_its_turn_leaks_nothing),
        /* 4 */
        T(cancelled_one_shot_refuses_the_answer_to_its_question),
        /* 5 */
        T(spawn_cancelled_before_it_ran_frees_its_id_before_the_batch_is_freed),
        T(await_in_a_batch_cancelled_before_its_spawn_ran_reports_the_reason),
        /* 6 */
        T(inquiry_answered_by_the_models_apply_is_refused_and_not_delivered),
        T(inquiry_for_a_first_question_is_refused_once_the_handle_asks_a_second),
        /* 7 */
        T(question_reported_outside_dispatch_reaches_the_handler_at_the_next_dispatch),
        /* 8 */
        T(turn_end_answered_inside_the_handler_aborts_the_builtin_inside_dispatch),
        T(turn_end_answered_outside_dispatch_aborts_the_builtin_only_inside_dispatch),
        /* 9 */
        T(await_on_a_stop_reported_before_exit_completes_once_when_the_tool_ends),
        T(await_all_waits_for_every_handle_when_one_reported_its_stop_early),
        /* 10 */
        T(handle_of_a_replaced_tool_is_still_found_by_fetch_and_abort),
        /* 11 */
        T(await_with_an_enormous_timeout_waits_for_the_handle),
        /* 12 */
        T(state_file_listing_children_is_refused_untouched_and_an_empty_one_taken),
        T(reap_stale_kills_the_session_of_a_recorded_tool_that_is_gone),
        /* 13 */
        T(registry_options_of_a_newer_caller_are_checked_to_their_size),
        T(render_options_of_a_newer_caller_are_checked_to_their_size),
        T(builtin_ops_of_a_newer_caller_are_checked_to_their_size),
        T(call_runs_the_definition_it_was_submitted_to),
        T(builtin_one_shot_timeout_ends_it_through_its_abort),
    };

    /* Counts the library's blocks (and jansson's, which go through the same
     * hook) for the leak checks; it must precede every other jptool call. */
    tu_install_counting_allocator();
    return TU_RUN(tests);
}
