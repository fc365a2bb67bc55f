/* RFD 037 on real processes: the await tool (its examples, conditions,
 * timeout and error cases, waiting handles answered through the inquiry
 * handler), batches (pre-registration, collisions, order, cancellation),
 * notifications (RFD 011's system message queue) and the end of a turn.
 *
 * Each test runs with a fixture: a scratch directory as the registry's
 * root, and a teardown that frees the registry even when an assertion
 * failed, so that one failure does not leave children for the suite's
 * hygiene check to blame on everything after it. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "registry-util.h"

/* ---- Fixture ---------------------------------------------------------------------- */

/* The inquiry handler's record: the latest question and how many came. */
static struct {
    jpt_inquiry *q;
    int asked;
} inq;

static int setup(void **state)
{
    inq.q = NULL;
    inq.asked = 0;
    return ru_setup(state);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, ru_teardown)

/* A registry rooted in the scratch directory, with short timings and
 * `turn_end_ms` as its turn-end timeout (0: the default). */
static jpt_registry *registry(const char *tools_json, int turn_end_ms)
{
    jpt_registry_options o = {.settle_ms = 150, .turn_end_timeout_ms = turn_end_ms};
    return ru_scratch_registry(&o, tools_json);
}

/* ---- JSON helpers ------------------------------------------------------------------ */

/* A tool definition from js() text; with `script`, its command is
 * sh -c script (scripts quote freely, so they are not written in js()). */
static json_t *def(const char *def_js, const char *script)
{
    json_t *d = parse(js(def_js));

    if (script != NULL)
        json_object_set_new(d, "command", json_pack("[s, s, s]", "sh", "-c", script));
    return d;
}

/* registry() with the tools of a NULL-terminated list of def() results. */
#define registry_of(turn_end_ms, ...)                                                           \
    ru_scratch_registry_of(                                                                    \
        &(jpt_registry_options){.settle_ms = 150, .turn_end_timeout_ms = (turn_end_ms)},       \
        __VA_ARGS__)

static void assert_gone(jpt_registry *r, const char *tool, const char *id)
{
    char args[128];
    bool err = false;

    snprintf(args, sizeof(args), "{'action':'fetch','id':'%s'}", id);
    char *content = ru_call(r, tool, js(args), &err);
    assert_true(err);
    ru_assert_gone_text(content, id);
    free(content);
}

/* ---- Driving the loop by its events ------------------------------------------------ */

/* An event to wait for, as ru_until_event() takes it. */
typedef struct want {
    int type;
    const char *id;
    int state;
    bool seen;
} want;

/* Dispatches until every one of `w` has been popped, in whatever order
 * they come. False if they did not all come within WAIT_MS. */
static bool until_all(jpt_registry *r, want *w, size_t n)
{
    uint64_t deadline = ru_now_ms() + WAIT_MS;
    size_t left = n;
    jpt_event *e;

    while (left > 0 && ru_now_ms() < deadline) {
        jpt_registry_dispatch(r);
        while (jpt_registry_next_event(r, &e) == JPT_OK) {
            for (size_t i = 0; i < n; i++)
                if (!w[i].seen && ru_event_matches(e, w[i].type, w[i].id, w[i].state)) {
                    w[i].seen = true;
                    left--;
                }
            jpt_event_free(e);
        }
        if (left > 0)
            ru_poll(r, 50);
    }
    return left == 0;
}

static void on_inquiry(jpt_inquiry *q, void *ud)
{
    (void)ud;
    inq.q = q;
    inq.asked++;
}

/* Dispatches until the inquiry handler has a question, or `b` (may be
 * NULL) is done. */
static jpt_inquiry *until_inquiry(jpt_registry *r, const jpt_batch *b)
{
    uint64_t deadline = ru_now_ms() + WAIT_MS;

    while (inq.q == NULL && (b == NULL || !jpt_batch_done(b)) && ru_now_ms() < deadline) {
        jpt_registry_dispatch(r);
        ru_drain_events(r);
        if (inq.q == NULL)
            ru_poll(r, 50);
    }
    return inq.q;
}

/* ---- The world outside ------------------------------------------------------------- */

/* Our direct children, alive or not yet reaped (from /proc: their ppid). */
static int children(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        char path[300], buf[1024], st;
        int ppid;
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        size_t k = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[k] = '\0';
        char *p = strrchr(buf, ')');
        if (p != NULL && sscanf(p + 1, " %c %d", &st, &ppid) == 2 && ppid == (int)getpid())
            n++;
    }
    closedir(d);
    return n;
}

static bool exists(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", ru_scratch, name);
    return access(path, F_OK) == 0;
}

/* Creates the file the trigger scripts wait for. */
static void touch_go(void)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/go", ru_scratch);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
}

/* ---- Notifications ----------------------------------------------------------------- */

/* Takes the notifications and compares them with `expected_js`, after
 * checking that each has an elapsed_secs of 0 or more (a duration, so not
 * compared). */
static void assert_notifications(jpt_registry *r, const char *expected_js)
{
    char *text = NULL;
    json_t *item;
    size_t i;

    assert_int_equal(jpt_registry_take_notifications(r, &text), JPT_OK);
    assert_non_null(text);
    json_t *list = parse(text);
    jpt_free(text);
    assert_true(json_is_array(list));
    json_array_foreach(list, i, item) {
        const json_t *elapsed = json_object_get(item, "elapsed_secs");
        if (!json_is_number(elapsed) || json_number_value(elapsed) < 0)
            fail_msg("notification %zu has no elapsed_secs of 0 or more", i);
        json_object_del(item, "elapsed_secs");
    }
    assert_json(list, js(expected_js));
    json_decref(list);
}

/* ---- Tools ---------------------------------------------------------------------------- */

/* RFD 037's tools, as stand-ins that sleep: cargo_check finishes before
 * cargo_test; crate_search long before github_code_search. */
#define SLEEPER(name, ms, param)                                                            \
    "{'name':'" name "','stateful':true,'command':['" TOOL("sleep-ms") "','" ms "'],"          \
    "'parameters':{'type':'object','properties':{'" param "':{'type':'string'}},"            \
    "'required':['" param "']}}"

static const char rfd_tools[] =
    "{'tools':[" SLEEPER("cargo_check", "500", "package") "," SLEEPER("cargo_test", "900", "package")
    "," SLEEPER("crate_search", "400", "query") "," SLEEPER("github_code_search", "30000", "query")
    "]}";

/* nap: a stateful sleep of `ms`; sleep: the same, one-shot, printing
 * `text` first; counter: RFD 058 envelopes with a question on "ask". */
#define NAP_DEF                                                                               \
    "{'name':'nap','stateful':true,'command':['" TOOL("sleep-ms") "','{{arguments.ms}}'],"       \
    " 'parameters':{'type':'object','properties':{'ms':{'type':'integer'}},'required':['ms']}}"

static const char nap_tools[] =
    "{'tools':[" NAP_DEF ","
    "{'name':'sleep','command':['" TOOL("sleep-ms") "','{{arguments.ms}}','{{arguments.text}}'],"
    " 'parameters':{'type':'object','properties':{'ms':{'type':'integer'},"
    " 'text':{'type':'string'}},'required':['ms','text']}},"
    "{'name':'counter','stateful':true,'command':['" TOOL("stateful-counter") "']}"
    "]}";

/* Scripts that do nothing visible until the test creates the file `go`,
 * so the test decides when they change state, whoever watches. */
#define WAIT_GO "until [ -e go ]; do sleep 0.02; done; "
#define QUESTION                                                                              \
    "{\"content\":[{\"type\":\"question\",\"question\":{\"id\":\"go\",\"text\":\"Proceed?\","  \
    "\"schema\":{\"type\":\"boolean\"},\"default\":false}}],"                                  \
    "\"_meta\":{\"computer.jp/status\":\"waiting\"}}"
#define SAID(text) "{\"content\":[{\"type\":\"text\",\"text\":\"" text "\"}]}"
#define ASK_THEN_SAY                                                                          \
    "echo '" QUESTION "'; read answer; case \"$answer\" in *true*) echo '" SAID("proceeded")    \
    "';; *) echo '" SAID("held back") "';; esac"

static const char built_sh[] = WAIT_GO "echo built";
static const char boom_sh[] = WAIT_GO "echo boom; exit 3";
static const char asker_sh[] = WAIT_GO ASK_THEN_SAY;
static const char asker_now_sh[] = ASK_THEN_SAY;
static const char ticker_sh[] = WAIT_GO "echo 'progress 1'; exec sleep 30";

/* The rendering of QUESTION as the model reads it. */
static const char question_text[] = "Question [go]: Proceed?\nExpected answer: true or false\n"
                                    "Default: false";

/* ==== RFD 037's examples ============================================================= */

/* RFD 037, "Concrete example": spawn cargo_check and cargo_test and await
 * both, "all in a single tool call batch". */
static void rfd_check_and_test_spawned_and_awaited_with_all_in_one_batch(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(rfd_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'call_1','name':'cargo_check','arguments':{'action':'spawn','id':'check','package':'jp_cli'}},"
        "{'id':'call_2','name':'cargo_test','arguments':{'action':'spawn','id':'test','package':'jp_cli'}},"
        "{'id':'call_3','name':'await','arguments':{'all':['check','test']}}]");

    assert_int_equal(json_array_size(res), 3);
    ru_assert_response(res, 0, "call_1", "{'id':'check','state':'running','content':''}", false);
    ru_assert_response(res, 1, "call_2", "{'id':'test','state':'running','content':''}", false);
    ru_assert_response(res, 2, "call_3",
                       "{'completed':["
                       "{'id':'check','state':'stopped','result':'slept 500\\n\\n[process ended: exit status 0]'},"
                       "{'id':'test','state':'stopped','result':'slept 900\\n\\n[process ended: exit status 0]'}],"
                       "'pending':[]}",
                       false);
    /* The model holds both results now: the handles are gone. */
    assert_gone(r, "cargo_check", "check");
    assert_gone(r, "cargo_test", "test");
    ru_done(r);
}

/* RFD 037's race: "take whichever returns first"; the other keeps running
 * (Non-Goals: no automatic abort on `any` completion). */
static void rfd_race_with_any_returns_the_first_and_leaves_the_other_running(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(rfd_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'call_1','name':'crate_search','arguments':{'action':'spawn','id':'crates','query':'async runtime'}},"
        "{'id':'call_2','name':'github_code_search','arguments':{'action':'spawn','id':'github','query':'async runtime'}},"
        "{'id':'call_3','name':'await','arguments':{'any':['crates','github']}}]");

    ru_assert_response(res, 0, "call_1", "{'id':'crates','state':'running','content':''}", false);
    ru_assert_response(res, 1, "call_2", "{'id':'github','state':'running','content':''}", false);
    ru_assert_response(res, 2, "call_3",
                       "{'completed':["
                       "{'id':'crates','state':'stopped','result':'slept 400\\n\\n[process ended: exit status 0]'}],"
                       "'pending':[{'id':'github','state':'running'}]}",
                       false);
    ru_call_expect(r, "github_code_search", "{'action':'fetch','id':'github'}",
                "{'id':'github','state':'running','content':''}", false);
    ru_done(r);
}

/* RFD 037, "Timeout behavior": the current states and "timed_out": true;
 * "Handles are not aborted on timeout — they continue running and can be
 * awaited again or fetched individually." */
static void rfd_timeout_returns_current_states_and_aborts_nothing(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'nap','arguments':{'action':'spawn','id':'check','ms':300}},"
        "{'id':'2','name':'nap','arguments':{'action':'spawn','id':'test','ms':2500}},"
        "{'id':'3','name':'await','arguments':{'all':['check','test'],'timeout_secs':1}}]");

    ru_assert_response(res, 2, "3",
                       "{'completed':["
                       "{'id':'check','state':'stopped','result':'slept 300\\n\\n[process ended: exit status 0]'}],"
                       "'pending':[{'id':'test','state':'running'}],'timed_out':true}",
                       false);
    ru_call_expect(r, "nap", "{'action':'fetch','id':'test'}",
                "{'id':'test','state':'running','content':''}", false);
    res = ru_run_js(r, "[{'id':'4','name':'await','arguments':{'all':['test']}}]");
    ru_assert_response(res, 0, "4",
                       "{'completed':["
                       "{'id':'test','state':'stopped','result':'slept 2500\\n\\n[process ended: exit status 0]'}],"
                       "'pending':[]}",
                       false);
    ru_done(r);
}

/* RFD 037, "Completion condition": every handle in `all` AND at least one
 * in `any`. The `any` handle that stops first does not end the await while
 * an `all` handle runs; the third stays pending. */
static void await_with_any_and_all_needs_every_all_and_one_any(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'nap','arguments':{'action':'spawn','id':'slow','ms':900}},"
        "{'id':'2','name':'nap','arguments':{'action':'spawn','id':'fast','ms':300}},"
        "{'id':'3','name':'nap','arguments':{'action':'spawn','id':'never','ms':30000}},"
        "{'id':'4','name':'await','arguments':{'all':['slow'],'any':['fast','never']}}]");

    /* The order is the order given, `all` first (the RFD is silent). */
    ru_assert_response(res, 3, "4",
                       "{'completed':["
                       "{'id':'slow','state':'stopped','result':'slept 900\\n\\n[process ended: exit status 0]'},"
                       "{'id':'fast','state':'stopped','result':'slept 300\\n\\n[process ended: exit status 0]'}],"
                       "'pending':[{'id':'never','state':'running'}]}",
                       false);
    ru_done(r);
}

/* RFD 037, "Error cases": both `any` and `all` empty or missing. */
static void await_without_handle_ids_is_an_error(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'await','arguments':{}},"
        "{'id':'2','name':'await','arguments':{'any':[]}},"
        "{'id':'3','name':'await','arguments':{'all':[]}},"
        "{'id':'4','name':'await','arguments':{'any':[],'all':[],'timeout_secs':5}}]");

    assert_int_equal(json_array_size(res), 4);
    ru_assert_text(res, 0, "1", "At least one handle ID required", true);
    ru_assert_text(res, 1, "2", "At least one handle ID required", true);
    ru_assert_text(res, 2, "3", "At least one handle ID required", true);
    ru_assert_text(res, 3, "4", "At least one handle ID required", true);
    ru_done(r);
}

/* RFD 037: "An unknown handle ID is an error, not a silent skip", even
 * beside a known one. */
static void await_on_an_unknown_handle_is_an_error(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    ru_call_expect(r, "nap", "{'action':'spawn','id':'check','ms':30000}",
                "{'id':'check','state':'running','content':''}", false);
    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'await','arguments':{'all':['my_handle']}},"
        "{'id':'2','name':'await','arguments':{'all':['check'],'any':['my_handle']}}]");

    ru_assert_text(res, 0, "1", "Handle `my_handle` not found", true);
    ru_assert_text(res, 1, "2", "Handle `my_handle` not found", true);
    /* The known handle was not disturbed. */
    ru_call_expect(r, "nap", "{'action':'fetch','id':'check'}",
                "{'id':'check','state':'running','content':''}", false);
    ru_done(r);
}

/* RFD 037: "If the condition is already met at call time, await returns
 * without blocking": the await answers in the dispatch that starts it. */
static void await_on_handles_stopped_before_returns_at_once(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    ru_call_expect(r, "nap", "{'action':'spawn','id':'a','ms':400}",
                "{'id':'a','state':'running','content':''}", false);
    ru_call_expect(r, "nap", "{'action':'spawn','id':'b','ms':500}",
                "{'id':'b','state':'running','content':''}", false);
    want w[] = {{JPT_EVENT_STATE, "a", JPT_STATE_STOPPED, false},
                {JPT_EVENT_STATE, "b", JPT_STATE_STOPPED, false}};
    assert_true(until_all(r, w, 2));

    jpt_batch *b = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['a','b']}}]");
    assert_false(jpt_batch_done(b));
    jpt_registry_dispatch(r);
    assert_true(jpt_batch_done(b));
    json_t *res = ru_finish(r, b);
    ru_assert_response(res, 0, "w",
                       "{'completed':["
                       "{'id':'a','state':'stopped','result':'slept 400\\n\\n[process ended: exit status 0]'},"
                       "{'id':'b','state':'stopped','result':'slept 500\\n\\n[process ended: exit status 0]'}],"
                       "'pending':[]}",
                       false);
    ru_done(r);
}

/* RFD 037: "Multiple await calls can reference the same handle
 * concurrently": each gets the same result. */
static void several_awaits_on_one_handle_complete_with_the_same_result(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    ru_call_expect(r, "nap", "{'action':'spawn','id':'h','ms':500}",
                "{'id':'h','state':'running','content':''}", false);
    jpt_batch *b1 = ru_submit(r, "[{'id':'w1','name':'await','arguments':{'all':['h']}},"
                              " {'id':'w2','name':'await','arguments':{'any':['h']}}]");
    jpt_batch *b2 = ru_submit(r, "[{'id':'w3','name':'await','arguments':{'all':['h']}}]");
    json_t *res1 = ru_finish(r, b1);
    json_t *res2 = ru_finish(r, b2);

    static const char expected[] =
        "{'completed':[{'id':'h','state':'stopped',"
        "'result':'slept 500\\n\\n[process ended: exit status 0]'}],'pending':[]}";
    ru_assert_response(res1, 0, "w1", expected, false);
    ru_assert_response(res1, 1, "w2", expected, false);
    ru_assert_response(res2, 0, "w3", expected, false);
    assert_gone(r, "nap", "h");
    ru_done(r);
}

/* RFD 037, Non-Goals: "The await tool itself is not a stateful tool — it
 * cannot be spawned and awaited." */
static void await_is_not_spawnable(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    ru_call_expect(r, "nap", "{'action':'spawn','id':'h','ms':30000}",
                "{'id':'h','state':'running','content':''}", false);
    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'await','arguments':{'action':'spawn','id':'w','all':['h']}},"
        "{'id':'2','name':'await','arguments':{'action':'fetch','id':'h'}}]");
    /* The wording is the library's (the RFD gives none). */
    ru_assert_text(res, 0, "1",
                   "`await` is not a stateful tool: it takes no `action` and cannot be spawned",
                   true);
    ru_assert_text(res, 1, "2",
                   "`await` is not a stateful tool: it takes no `action` and cannot be spawned",
                   true);
    /* No handle `w` came of it. */
    res = ru_run_js(r, "[{'id':'3','name':'await','arguments':{'all':['w']}}]");
    ru_assert_text(res, 0, "3", "Handle `w` not found", true);
    ru_done(r);
}

/* RFD 037, "Schema availability": "If no stateful tools are available,
 * await is not exposed" — neither listed nor callable. */
static void await_is_absent_without_stateful_tools(void **state)
{
    (void)state;
    jpt_registry *r = registry(js("{'tools':[{'name':'once','command':['" TOOL("sleep-ms") "','0']}]}"), 0);
    char *text = NULL;

    assert_int_equal(jpt_registry_tools_json(r, JPT_DIALECT_ANTHROPIC, &text), JPT_OK);
    json_t *list = parse(text);
    jpt_free(text);
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "name")),
                        "once");
    json_decref(list);
    json_t *res = ru_run_js(r, "[{'id':'1','name':'await','arguments':{'all':['x']}}]");
    ru_assert_text(res, 0, "1", "Unknown tool `await`", true);
    ru_done(r);
}


/* The await entry of the list in `dialect`: {name, description, schema}. */
static json_t *listed_await(jpt_registry *r, int dialect)
{
    int base = dialect & 0xff;
    char *text = NULL;
    json_t *entry, *found = NULL;
    size_t i;

    assert_int_equal(jpt_registry_tools_json(r, dialect, &text), JPT_OK);
    json_t *doc = parse(text);
    jpt_free(text);
    json_t *list = base == JPT_DIALECT_MCP ? json_object_get(doc, "tools") : doc;
    const char *key = base == JPT_DIALECT_ANTHROPIC ? "input_schema"
                      : base == JPT_DIALECT_MCP     ? "inputSchema"
                                                    : "parameters";
    json_array_foreach(list, i, entry) {
        json_t *e = base == JPT_DIALECT_OPENAI ? json_object_get(entry, "function") : entry;
        if (strcmp(json_string_value(json_object_get(e, "name")), "await") == 0)
            found = json_pack("{s:O, s:O, s:O}", "name", json_object_get(e, "name"),
                              "description", json_object_get(e, "description"), "schema",
                              json_object_get(e, key));
    }
    json_decref(doc);
    if (found == NULL)
        fail_msg("await is not listed in dialect %d", dialect);
    return found;
}

/* RFD 037, "Schema": the await tool is listed exactly as given with
 * JPT_DIALECT_ONEOF; by default the anyOf goes, as OpenAI and Anthropic
 * refuse it at the top level (RFD 037, "Provider support for the anyOf
 * required constraint": "make both optional … and validate at runtime"). */
static void await_is_listed_exactly_as_rfd_037_gives_it(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);
    const int dialects[] = {JPT_DIALECT_ANTHROPIC, JPT_DIALECT_OPENAI, JPT_DIALECT_MCP};
    json_t *schema = parse(ru_await_schema);

    for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        json_t *entry = listed_await(r, dialects[i] | JPT_DIALECT_ONEOF);
        assert_string_equal(json_string_value(json_object_get(entry, "description")),
                            ru_await_description);
        assert_true(json_equal(json_object_get(entry, "schema"), schema));
        json_decref(entry);
    }
    json_object_del(schema, "anyOf");
    for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        json_t *flat = listed_await(r, dialects[i]);
        assert_true(json_equal(json_object_get(flat, "schema"), schema));
        json_decref(flat);
    }
    json_decref(schema);
    /* … and the runtime check stands in for it. */
    json_t *res = ru_run_js(r, "[{'id':'1','name':'await','arguments':{'timeout_secs':1}}]");
    ru_assert_text(res, 0, "1", "At least one handle ID required", true);
    ru_done(r);
}

/* RFD 037, "await in parallel tool call batches": the coordinator
 * pre-registers spawn ids, so an await placed before its spawns in the
 * batch still finds them. */
static void await_placed_before_its_spawns_in_the_batch_finds_them(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'await','arguments':{'all':['check','test']}},"
        "{'id':'2','name':'nap','arguments':{'action':'spawn','id':'check','ms':400}},"
        "{'id':'3','name':'nap','arguments':{'action':'spawn','id':'test','ms':500}}]");

    ru_assert_response(res, 0, "1",
                       "{'completed':["
                       "{'id':'check','state':'stopped','result':'slept 400\\n\\n[process ended: exit status 0]'},"
                       "{'id':'test','state':'stopped','result':'slept 500\\n\\n[process ended: exit status 0]'}],"
                       "'pending':[]}",
                       false);
    ru_assert_response(res, 1, "2", "{'id':'check','state':'running','content':''}", false);
    ru_assert_response(res, 2, "3", "{'id':'test','state':'running','content':''}", false);
    ru_done(r);
}

/* RFD 037, "await in parallel tool call batches": pre-registration
 * "guarantees that when await looks up a handle ID, the entry exists". A
 * spawn of the batch that cannot run (its arguments fail the schema) stops
 * its entry with the reason, and the await reports that stopped handle —
 * here with the await after the spawn, the order of RFD 037's examples. */
static void await_after_a_spawn_that_could_not_run_reports_it(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'nap','arguments':{'action':'spawn','id':'x'}},"
        "{'id':'2','name':'await','arguments':{'all':['x']}}]");

    ru_assert_text(res, 0, "1", "Invalid arguments for `nap`: at the top level: missing required "
                             "property \"ms\"", true);
    ru_assert_response(res, 1, "2",
                       "{'completed':[{'id':'x','state':'stopped','result':"
                       "'Error: Invalid arguments for `nap`: at the top level: missing required "
                       "property \\'ms\\''}],'pending':[]}",
                       false);
    assert_gone(r, "nap", "x");
    ru_done(r);
}

/* The same with the await first: it watches the placeholder when the
 * spawn fails. (Last in the suite: it has crashed the library.) */
static void await_before_a_spawn_that_could_not_run_reports_it(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'await','arguments':{'all':['x']}},"
        "{'id':'2','name':'nap','arguments':{'action':'spawn','id':'x'}}]");

    ru_assert_response(res, 0, "1",
                       "{'completed':[{'id':'x','state':'stopped','result':"
                       "'Error: Invalid arguments for `nap`: at the top level: missing required "
                       "property \\'ms\\''}],'pending':[]}",
                       false);
    ru_assert_text(res, 1, "2", "Invalid arguments for `nap`: at the top level: missing required "
                             "property \"ms\"", true);
    assert_gone(r, "nap", "x");
    ru_done(r);
}

/* RFD 037, "Spawn configuration": [conversation.tools.cargo_check.spawn]
 * with stateful, notifications and lifecycle, as the RFD writes it. */
static void rfd_spawn_configuration_loads_as_written(void **state)
{
    (void)state;
    jpt_registry *r = registry(NULL, 0);
    const char *config = js(
        "{'tools':[{'name':'cargo_check','command':['" TOOL("sleep-ms") "','10'],"
        "'spawn':{'stateful':true,"
        "'notifications':{'on_success':true,'on_failure':true,'on_waiting':true,'on_content':false},"
        "'lifecycle':{'on_turn_end':'inquire'}}}]}");

    if (jpt_registry_load_tools(r, config, 0) != JPT_OK)
        fail_msg("load_tools: %s", jpt_registry_errmsg(r));
    /* Stateful, so await comes with it. */
    json_t *entry = listed_await(r, JPT_DIALECT_ANTHROPIC);
    json_decref(entry);
    ru_done(r);
}

/* ==== Waiting handles (RFD 037, "Waiting handles and the inquiry system") ============ */

/* "Handle is in Waiting state: Counts as pending. JP continues handling the
 * inquiry/prompt while await waits." The counter asks; the await hands the
 * question to the inquiry handler, whose answer is checked against the
 * schema and reaches the tool; the counter runs on, and once stopped by an
 * apply in another batch the await returns its final result. */
static void awaited_waiting_handle_is_answered_through_the_inquiry_handler(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    ru_call_expect(r, "counter", "{'action':'spawn','id':'n'}",
                "{'id':'n','state':'running','content':'count=0'}", false);
    ru_call_expect(r, "counter", "{'action':'apply','id':'n','input':'inc\\n'}",
                "{'id':'n','state':'running','content':'count=1'}", false);
    ru_call_expect(r, "counter", "{'action':'apply','id':'n','input':'ask\\n'}",
                "{'id':'n','state':'waiting','content':'Question [reset]: Reset the counter?\\n"
                "Expected answer: true or false\\nDefault: false'}",
                false);
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);

    jpt_batch *wait = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['n']}}]");
    jpt_inquiry *q = until_inquiry(r, wait);
    assert_non_null(q);
    assert_int_equal(inq.asked, 1);
    assert_string_equal(jpt_inquiry_handle_id(q), "n");
    assert_string_equal(jpt_inquiry_tool(q), "counter");
    /* The host trial: NULL, so a host could not tell which call the
     * question held up; it is the await's. */
    assert_string_equal(jpt_inquiry_call_id(q), "w");
    assert_int_equal(jpt_inquiry_target(q), JPT_TARGET_USER);
    tu_assert_json_equal(jpt_inquiry_question_json(q),
                         js("{'id':'reset','text':'Reset the counter?','schema':{'type':'boolean'},"
                            "'default':false}"));
    assert_int_equal(jpt_inquiry_answer(q, "\"yes\""), JPT_ERR_INVALID);
    assert_string_equal(jpt_inquiry_errmsg(q), "the answer does not fit question 'reset': at "
                                               "the top level: expected boolean, got string");
    assert_int_equal(jpt_inquiry_answer(q, "true"), JPT_OK);
    inq.q = NULL;
    /* Answered, the handle runs again: still pending. */
    assert_false(jpt_batch_done(wait));

    json_t *stop = ru_run_js(r, "[{'id':'s','name':'counter','arguments':"
                             "{'action':'apply','id':'n','input':'stop\\n'}}]");
    json_t *res = ru_finish(r, wait);
    /* Reset by the answer: the count ends at 0, not 1. */
    ru_assert_response(res, 0, "w",
                       "{'completed':[{'id':'n','state':'stopped',"
                       "'result':'count=0 (reset)\\n\\nfinal count=0'}],'pending':[]}",
                       false);
    ru_assert_response(stop, 0, "s",
                       "{'id':'n','state':'stopped','result':'count=0 (reset)\\n\\nfinal count=0'}",
                       false);
    assert_int_equal(inq.asked, 1);
    assert_gone(r, "counter", "n");
    ru_done(r);
}

/* The handle enters waiting while the await already watches it: the
 * question goes to the handler, the answer to the tool, which finishes. */
static void handle_asking_while_awaited_is_answered_through_the_inquiry_handler(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, def("{'name':'asker','stateful':true}", asker_sh), NULL);

    ru_call_expect(r, "asker", "{'action':'spawn','id':'q'}",
                "{'id':'q','state':'running','content':''}", false);
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    jpt_batch *wait = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['q']}}]");
    jpt_registry_dispatch(r); /* the await starts watching */
    assert_null(inq.q);
    touch_go();

    jpt_inquiry *q = until_inquiry(r, wait);
    assert_non_null(q);
    assert_string_equal(jpt_inquiry_handle_id(q), "q");
    assert_string_equal(jpt_inquiry_tool(q), "asker");
    tu_assert_json_equal(jpt_inquiry_question_json(q),
                         js("{'id':'go','text':'Proceed?','schema':{'type':'boolean'},"
                            "'default':false}"));
    assert_int_equal(jpt_inquiry_answer(q, "true"), JPT_OK);
    inq.q = NULL;
    json_t *res = ru_finish(r, wait);
    /* The model never saw the question, so the result shows it before the
     * tool's last word (the header is silent; this is what the library
     * does). */
    char expected[512];
    snprintf(expected, sizeof(expected), "%s\n\nproceeded", question_text);
    json_t *resp = parse(ru_content(res, 0));
    json_t *entry = json_array_get(json_object_get(resp, "completed"), 0);
    assert_int_equal(json_array_size(json_object_get(resp, "completed")), 1);
    assert_int_equal(json_array_size(json_object_get(resp, "pending")), 0);
    assert_string_equal(json_string_value(json_object_get(entry, "id")), "q");
    assert_string_equal(json_string_value(json_object_get(entry, "result")), expected);
    json_decref(resp);
    ru_done(r);
}

/* RFD 037, "await in parallel tool call batches" with a tool that asks at
 * once: its spawn and the await share a batch, so the model cannot answer
 * through apply before the await returns — the question must reach the
 * inquiry handler ("JP continues handling the inquiry/prompt while await
 * waits"), or the batch can only time out. */
static void question_asked_during_its_spawn_reaches_the_handler_for_the_await(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, def("{'name':'asker','stateful':true}", asker_now_sh), NULL);

    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    jpt_batch *b = ru_submit(r, "["
        "{'id':'1','name':'asker','arguments':{'action':'spawn','id':'q'}},"
        "{'id':'2','name':'await','arguments':{'all':['q'],'timeout_secs':3}}]");
    jpt_inquiry *q = until_inquiry(r, b);
    if (q != NULL) {
        assert_string_equal(jpt_inquiry_handle_id(q), "q");
        assert_int_equal(jpt_inquiry_answer(q, "true"), JPT_OK);
        inq.q = NULL;
    }
    json_t *res = ru_finish(r, b);
    char spawned[512], awaited[512];
    snprintf(spawned, sizeof(spawned), "%s", ru_content(res, 0));
    snprintf(awaited, sizeof(awaited), "%s", ru_content(res, 1));
    ru_done(r);

    if (inq.asked != 1)
        fail_msg("the handler was asked %d times; spawn: %s; await: %s", inq.asked, spawned,
                 awaited);
    tu_assert_json_equal(awaited, js("{'completed':[{'id':'q','state':'stopped',"
                                     "'result':'proceeded'}],'pending':[]}"));
}

/* Without an inquiry handler nobody answers: the waiting handle stays
 * pending, in state "waiting", until the await's timeout. */
static void waiting_handle_without_a_handler_stays_pending(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    ru_call_expect(r, "counter", "{'action':'spawn','id':'n'}",
                "{'id':'n','state':'running','content':'count=0'}", false);
    ru_call_expect(r, "counter", "{'action':'apply','id':'n','input':'ask\\n'}",
                "{'id':'n','state':'waiting','content':'Question [reset]: Reset the counter?\\n"
                "Expected answer: true or false\\nDefault: false'}",
                false);
    json_t *res = ru_run_js(r, "[{'id':'w','name':'await','arguments':{'all':['n'],'timeout_secs':1}}]");
    ru_assert_response(res, 0, "w",
                       "{'completed':[],'pending':[{'id':'n','state':'waiting'}],'timed_out':true}",
                       false);
    /* Still there, still waiting for its answer. */
    ru_call_expect_text(r, "counter", "{'action':'apply','id':'n','input':'maybe'}",
                     "The answer does not fit question `reset` of handle `n`: at the top "
                     "level: expected boolean, got string",
                     true);
    ru_done(r);
}

/* RFD 037: "If the inquiry itself fails or the user cancels the prompt,
 * the tool still reaches Stopped (with an error result)." */
static void cancelled_question_stops_the_awaited_handle_with_an_error(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    ru_call_expect(r, "counter", "{'action':'spawn','id':'n'}",
                "{'id':'n','state':'running','content':'count=0'}", false);
    ru_call_expect(r, "counter", "{'action':'apply','id':'n','input':'ask\\n'}",
                "{'id':'n','state':'waiting','content':'Question [reset]: Reset the counter?\\n"
                "Expected answer: true or false\\nDefault: false'}",
                false);
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    jpt_batch *wait = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['n']}}]");
    jpt_inquiry *q = until_inquiry(r, wait);
    assert_non_null(q);
    assert_int_equal(jpt_inquiry_cancel(q, "the user walked away"), JPT_OK);
    inq.q = NULL;

    json_t *res = ru_finish(r, wait);
    ru_assert_response(res, 0, "w",
                       "{'completed':[{'id':'n','state':'stopped','result':"
                       "'Error: The question `reset` was not answered: the user walked away'}],'pending':[]}",
                       false);
    assert_int_equal(children(), 0);
    ru_done(r);
}

/* ==== Batches (RFD 037, "Handle ID collisions") ======================================== */

static const char marker_def[] =
    "{'name':'marked','stateful':true,'parameters':{'type':'object',"
    "'properties':{'marker':{'type':'string'}},'required':['marker']}}";

/* Touches the file its argument names, says so, and lives on. */
static json_t *marker_tool(void)
{
    json_t *d = def(marker_def, NULL);

    json_object_set_new(d, "command",
                        json_pack("[s, s, s, s]", "sh", "-c",
                                  "touch \"$0\"; echo ready; exec sleep 30",
                                  "{{arguments.marker}}"));
    return d;
}

/* "If two spawns in the same batch use the same id … the coordinator
 * rejects the batch before any tool runs": every call gets the error
 * naming the id, the batch is done at once, and no process started. */
static void batch_with_two_spawns_of_one_id_is_rejected_and_nothing_runs(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, marker_tool(), parse(js(NAP_DEF)), NULL);

    jpt_batch *b = ru_submit(r, "["
        "{'id':'1','name':'marked','arguments':{'action':'spawn','id':'dup','marker':'m1'}},"
        "{'id':'2','name':'nap','arguments':{'action':'spawn','id':'other','ms':100}},"
        "{'id':'3','name':'marked','arguments':{'action':'spawn','id':'dup','marker':'m2'}},"
        "{'id':'4','name':'await','arguments':{'all':['dup']}}]");
    assert_true(jpt_batch_done(b));
    assert_int_equal(jpt_registry_run(r, WAIT_MS), JPT_OK);
    assert_int_equal(children(), 0);
    assert_false(exists("m1"));
    assert_false(exists("m2"));

    json_t *res = ru_finish(r, b);
    static const char why[] = "This batch was not run: handle ID `dup` cannot be used (two "
                              "spawns in this batch use it). Choose unique ids and send the "
                              "calls again.";
    assert_int_equal(json_array_size(res), 4);
    ru_assert_text(res, 0, "1", why, true);
    ru_assert_text(res, 1, "2", why, true);
    ru_assert_text(res, 2, "3", why, true);
    ru_assert_text(res, 3, "4", why, true);
    /* A rejected batch made no handle: RFD 037's words for an unknown id. */
    ru_call_expect_text(r, "nap", "{'action':'fetch','id':'other'}", "Handle `other` not found",
                     true);
    /* The id is free, and the tool does mark when it runs. */
    ru_call_expect(r, "marked", "{'action':'spawn','id':'dup','marker':'m3'}",
                "{'id':'dup','state':'running','content':'ready\\n'}", false);
    assert_true(exists("m3"));
    ru_done(r);
}

/* A done batch lets go of the handles it held from the next dispatch, a
 * slice at a time (issue 18); the next batch, submitted before any
 * dispatch, still finds the id of a handle the model has seen stop free,
 * and its fetch finds no such handle. */
static void an_id_seen_stopped_is_free_for_the_next_batch_at_once(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, def("{'name':'once','stateful':true,'settle_ms':10000,"
                                         "'yield_ms':20000}",
                                         "echo hi"),
                                  NULL);
    /* The host keeps the first batch (freeing it lets go of all at once). */
    jpt_batch *first = ru_submit(r, "[{'id':'1','name':'once','arguments':{'action':'spawn',"
                                    "'id':'h'}},{'id':'2','name':'await','arguments':{'all':"
                                    "['h']}}]");
    assert_int_equal(jpt_registry_wait(r, first, WAIT_MS), JPT_OK);
    json_t *res = ru_run_js(r, "[{'id':'3','name':'once','arguments':{'action':'spawn','id':'h'}}]");
    ru_assert_contains(ru_content(res, 0), "\"state\":\"stopped\"");
    assert_false(ru_is_error(res, 0));
    assert_gone(r, "once", "h");
    jpt_batch_free(first);
    ru_done(r);
}

/* "… or if a spawn's id collides with an already-active handle from a
 * previous batch": the same rejection. */
static void batch_reusing_an_active_handle_id_is_rejected_and_nothing_runs(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, marker_tool(), parse(js(NAP_DEF)), NULL);

    ru_call_expect(r, "marked", "{'action':'spawn','id':'dup','marker':'m0'}",
                "{'id':'dup','state':'running','content':'ready\\n'}", false);
    assert_int_equal(children(), 1);
    jpt_batch *b = ru_submit(r, "["
        "{'id':'1','name':'marked','arguments':{'action':'spawn','id':'fresh','marker':'m1'}},"
        "{'id':'2','name':'marked','arguments':{'action':'spawn','id':'dup','marker':'m2'}},"
        "{'id':'3','name':'await','arguments':{'all':['fresh']}}]");
    assert_true(jpt_batch_done(b));
    assert_int_equal(jpt_registry_run(r, WAIT_MS), JPT_OK);
    assert_int_equal(children(), 1);
    assert_false(exists("m1"));
    assert_false(exists("m2"));

    json_t *res = ru_finish(r, b);
    static const char why[] = "This batch was not run: handle ID `dup` cannot be used (an "
                              "active handle already uses it). Choose unique ids and send the "
                              "calls again.";
    ru_assert_text(res, 0, "1", why, true);
    ru_assert_text(res, 1, "2", why, true);
    ru_assert_text(res, 2, "3", why, true);
    ru_call_expect_text(r, "marked", "{'action':'fetch','id':'fresh'}", "Handle `fresh` not found",
                     true);
    /* The active handle is untouched. */
    ru_call_expect(r, "marked", "{'action':'fetch','id':'dup'}",
                "{'id':'dup','state':'running','content':''}", false);
    ru_done(r);
}

/* registry.h: "one result per call in the order submitted", whatever order
 * they finish in. */
static void batch_results_are_in_input_order(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);
    jpt_event *e;
    char order[64] = "";

    jpt_batch *b = ru_submit(r, "["
        "{'id':'slow','name':'sleep','arguments':{'ms':400,'text':'first\\n'}},"
        "{'id':'fast','name':'sleep','arguments':{'ms':0,'text':'second\\n'}}]");
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);
    while (jpt_registry_next_event(r, &e) == JPT_OK) {
        if (jpt_event_type(e) == JPT_EVENT_CALL_DONE) {
            strcat(order, jpt_event_call_id(e));
            strcat(order, " ");
        }
        jpt_event_free(e);
    }
    assert_string_equal(order, "fast slow ");
    json_t *res = ru_finish(r, b);
    ru_assert_text(res, 0, "slow", "first\nslept 400\n", false);
    ru_assert_text(res, 1, "fast", "second\nslept 0\n", false);
    ru_done(r);
}

/* registry.h: `arguments` "an object or a JSON string holding one
 * (providers send both)" — for spawns (pre-registered all the same),
 * awaits and one-shot calls. */
static void arguments_given_as_a_json_string_are_taken(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'await','arguments':'{\\'all\\':[\\'s\\']}'},"
        "{'id':'2','name':'nap','arguments':'{\\'action\\':\\'spawn\\',\\'id\\':\\'s\\',\\'ms\\':400}'},"
        "{'id':'3','name':'sleep','arguments':'{\\'ms\\':0,\\'text\\':\\'x\\'}'}]");

    ru_assert_response(res, 0, "1",
                       "{'completed':[{'id':'s','state':'stopped',"
                       "'result':'slept 400\\n\\n[process ended: exit status 0]'}],'pending':[]}",
                       false);
    ru_assert_response(res, 1, "2", "{'id':'s','state':'running','content':''}", false);
    ru_assert_text(res, 2, "3", "xslept 0\n", false);
    ru_done(r);
}

/* registry.h, jpt_batch_cancel: "one-shot children are killed and their
 * calls end with an error, awaits answer with the handles' states and
 * "cancelled": true, spawn and apply answer at once … (their handles keep
 * running) … Finished calls keep their results." */
static void batch_cancel_kills_one_shots_and_ends_awaits_keeping_finished_results(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    jpt_batch *b = ru_submit(r, "["
        "{'id':'quick','name':'sleep','arguments':{'ms':0,'text':''}},"
        "{'id':'long','name':'sleep','arguments':{'ms':30000,'text':''}},"
        "{'id':'spawn','name':'nap','arguments':{'action':'spawn','id':'h','ms':30000}},"
        "{'id':'wait','name':'await','arguments':{'all':['h']}}]");
    want w[] = {{JPT_EVENT_CALL_DONE, "quick", 0, false},
                {JPT_EVENT_CALL_DONE, "spawn", 0, false}};
    assert_true(until_all(r, w, 2));
    assert_int_equal(children(), 2);

    jpt_batch_cancel(b);
    json_t *res = ru_finish(r, b);
    ru_assert_text(res, 0, "quick", "slept 0\n", false);
    /* Nothing lost: what it printed (nothing here) comes with the error. */
    ru_assert_text(res, 1, "long", "Error: The call `sleep` was cancelled", true);
    ru_assert_response(res, 2, "spawn", "{'id':'h','state':'running','content':''}", false);
    ru_assert_response(res, 3, "wait",
                       "{'completed':[],'pending':[{'id':'h','state':'running'}],'cancelled':true}",
                       false);
    /* The one-shot child is gone; the handle's lives on. */
    assert_int_equal(children(), 1);
    ru_call_expect(r, "nap", "{'action':'fetch','id':'h'}",
                "{'id':'h','state':'running','content':''}", false);
    ru_done(r);
}

/* ==== Notifications (RFD 037, "Notifications"; registry.h) ============================= */

/* A handle that stops while nobody watches queues one notification with
 * its result; taking it clears it, and the result having reached the
 * model, the handle goes. */
static void handle_stopping_unwatched_leaves_one_notification_taken_once(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, def("{'name':'build','stateful':true}", built_sh), NULL);

    ru_call_expect(r, "build", "{'action':'spawn','id':'b'}",
                "{'id':'b','state':'running','content':''}", false);
    assert_notifications(r, "[]");
    touch_go();
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "b", JPT_STATE_STOPPED));
    assert_notifications(r, "[{'id':'b','tool':'build','state':'stopped',"
                            "'result':'built\\n\\n[process ended: exit status 0]','is_error':false}]");
    assert_notifications(r, "[]");
    assert_gone(r, "build", "b");
    ru_done(r);
}

/* The host trial: a fetch or an await of a handle whose result went out
 * as a notification was told "Handle `b` not found", RFD 037's words for
 * an id that never was. It is told how the model had the result; an
 * abort of it has nothing left to do (no error); an unknown id is still
 * not found. */
static void a_handle_whose_result_was_given_is_not_called_unknown(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, def("{'name':'build','stateful':true}", built_sh),
                                  parse(js(NAP_DEF)), NULL);

    ru_call_expect(r, "build", "{'action':'spawn','id':'b'}",
                "{'id':'b','state':'running','content':''}", false);
    touch_go();
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "b", JPT_STATE_STOPPED));
    assert_notifications(r, "[{'id':'b','tool':'build','state':'stopped',"
                            "'result':'built\\n\\n[process ended: exit status 0]','is_error':false}]");
    static const char noticed[] = "Handle `b` has stopped, and a notification gave its result";
    json_t *res = ru_run_js(r, "[{'id':'1','name':'build','arguments':{'action':'fetch','id':'b'}},"
                               "{'id':'2','name':'await','arguments':{'all':['b']}},"
                               "{'id':'3','name':'build','arguments':{'action':'abort','id':'b'}},"
                               "{'id':'4','name':'await','arguments':{'any':['zz']}}]");
    ru_assert_text(res, 0, "1", noticed, true);
    ru_assert_text(res, 1, "2", noticed, true);
    ru_assert_text(res, 2, "3", noticed, false);
    ru_assert_text(res, 3, "4", "Handle `zz` not found", true);

    /* Given by an answer (the spawn's, which saw it stop). */
    ru_call_expect(r, "nap", "{'action':'spawn','id':'n','ms':1,'wait_secs':5}",
                "{'id':'n','state':'stopped','result':'slept 1\\n\\n[process ended: exit status 0]'}",
                false);
    ru_call_expect_text(r, "nap", "{'action':'fetch','id':'n'}",
                     "Handle `n` has stopped, and an earlier answer gave its result", true);
    /* The id is free again: a new handle of it is the one found. */
    ru_call_expect(r, "nap", "{'action':'spawn','id':'n','ms':1,'wait_secs':5}",
                "{'id':'n','state':'stopped','result':'slept 1\\n\\n[process ended: exit status 0]'}",
                false);
    ru_done(r);
}

/* A builtin stateful tool that stops as it starts. */
static int stop_at_once(jpt_handle *h, const char *arguments_json, void *ud)
{
    jpt_state *s = NULL;

    (void)arguments_json;
    (void)ud;
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "done"), JPT_OK);
    int rc = jpt_handle_update(h, s);
    jpt_state_unref(s);
    return rc;
}

/* Bounded memory: the last 256 ids that went are remembered, no more; an
 * older one is unknown again. */
static void only_the_last_256_ended_ids_are_remembered(void **state)
{
    (void)state;
    jpt_registry *r = registry(NULL, 0);
    jpt_builtin_ops ops = {sizeof(ops), stop_at_once, NULL, NULL};
    size_t cap = 300 * 80;
    char *calls = malloc(cap);
    size_t len = 0;

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'quick','stateful':true,'actions':['fetch']}"), &ops,
                                              NULL),
                     JPT_OK);
    assert_non_null(calls);
    len += (size_t)snprintf(calls + len, cap - len, "[");
    for (int i = 0; i < 257; i++)
        len += (size_t)snprintf(calls + len, cap - len,
                                "%s{\"id\":\"c%d\",\"name\":\"quick\",\"arguments\":"
                                "{\"action\":\"spawn\",\"id\":\"q%d\"}}",
                                i > 0 ? "," : "", i, i);
    snprintf(calls + len, cap - len, "]");
    jpt_batch *b = NULL;
    assert_int_equal(jpt_registry_submit(r, calls, &b), JPT_OK);
    free(calls);
    json_t *res = ru_finish(r, b);
    assert_int_equal(json_array_size(res), 257);
    assert_false(ru_is_error(res, 256));
    ru_call_expect_text(r, "quick", "{'action':'fetch','id':'q0'}", "Handle `q0` not found", true);
    ru_call_expect_text(r, "quick", "{'action':'fetch','id':'q1'}",
                     "Handle `q1` has stopped, and an earlier answer gave its result", true);
    ru_call_expect_text(r, "quick", "{'action':'fetch','id':'q256'}",
                     "Handle `q256` has stopped, and an earlier answer gave its result", true);
    ru_done(r);
}

/* on_failure (default true): an error exit notifies, with is_error. */
static void failed_handle_leaves_an_on_failure_notification(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, def("{'name':'build','stateful':true}", boom_sh), NULL);

    ru_call_expect(r, "build", "{'action':'spawn','id':'b'}",
                "{'id':'b','state':'running','content':''}", false);
    touch_go();
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "b", JPT_STATE_STOPPED));
    assert_notifications(r, "[{'id':'b','tool':'build','state':'stopped',"
                            "'result':'Error: The tool failed (exit status 3).\\n\\nstdout:\\nboom\\n',"
                            "'is_error':true}]");
    assert_gone(r, "build", "b");
    ru_done(r);
}

/* on_waiting (default true): a handle that asks while nobody watches
 * notifies, with its question as the preview. */
static void handle_asking_unwatched_leaves_an_on_waiting_notification(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, def("{'name':'asker','stateful':true}", asker_sh), NULL);
    char expected[512];

    ru_call_expect(r, "asker", "{'action':'spawn','id':'q'}",
                "{'id':'q','state':'running','content':''}", false);
    touch_go();
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "q", JPT_STATE_WAITING));
    json_t *preview = json_string(question_text);
    char *quoted = json_dumps(preview, JSON_ENCODE_ANY);
    snprintf(expected, sizeof(expected),
             "[{\"id\":\"q\",\"tool\":\"asker\",\"state\":\"waiting\",\"output_preview\":%s}]",
             quoted);
    jpt_free(quoted);
    json_decref(preview);
    assert_notifications(r, expected);
    assert_notifications(r, "[]");
    ru_done(r);
}

/* RFD 037: on_content "is false by default because it can be very noisy". */
static void output_while_running_notifies_nothing_by_default(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, def("{'name':'tick','stateful':true}", ticker_sh), NULL);

    ru_call_expect(r, "tick", "{'action':'spawn','id':'t'}",
                "{'id':'t','state':'running','content':''}", false);
    touch_go();
    assert_true(ru_until_event(r, JPT_EVENT_OUTPUT, "t", 0));
    assert_notifications(r, "[]");
    ru_done(r);
}

/* on_content configured on: output while running notifies, with a
 * preview of the output. */
static void on_content_notifies_output_with_a_preview(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0, def("{'name':'tick','stateful':true,'spawn':{'notifications':{'on_content':true}}}",
               ticker_sh),
        NULL);

    ru_call_expect(r, "tick", "{'action':'spawn','id':'t'}",
                "{'id':'t','state':'running','content':''}", false);
    assert_notifications(r, "[]");
    touch_go();
    assert_true(ru_until_event(r, JPT_EVENT_OUTPUT, "t", 0));
    assert_notifications(r, "[{'id':'t','tool':'tick','state':'running',"
                            "'output_preview':'progress 1\\n'}]");
    assert_notifications(r, "[]");
    ru_done(r);
}

/* Each flag set false suppresses its notification; the handle keeps its
 * state for the model to fetch. */
static void notification_flags_set_false_suppress_them(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0,
        def("{'name':'quiet_ok','stateful':true,'spawn':{'notifications':{'on_success':false}}}",
            built_sh),
        def("{'name':'quiet_fail','stateful':true,'spawn':{'notifications':{'on_failure':false}}}",
            boom_sh),
        def("{'name':'quiet_ask','stateful':true,'spawn':{'notifications':{'on_waiting':false}}}",
            asker_sh),
        NULL);

    ru_call_expect(r, "quiet_ok", "{'action':'spawn','id':'s'}",
                "{'id':'s','state':'running','content':''}", false);
    ru_call_expect(r, "quiet_fail", "{'action':'spawn','id':'f'}",
                "{'id':'f','state':'running','content':''}", false);
    ru_call_expect(r, "quiet_ask", "{'action':'spawn','id':'w'}",
                "{'id':'w','state':'running','content':''}", false);
    touch_go();
    want w[] = {{JPT_EVENT_STATE, "s", JPT_STATE_STOPPED, false},
                {JPT_EVENT_STATE, "f", JPT_STATE_STOPPED, false},
                {JPT_EVENT_STATE, "w", JPT_STATE_WAITING, false}};
    assert_true(until_all(r, w, 3));
    assert_notifications(r, "[]");
    ru_call_expect(r, "quiet_ok", "{'action':'fetch','id':'s'}",
                "{'id':'s','state':'stopped','result':'built\\n\\n[process ended: exit status 0]'}",
                false);
    ru_call_expect(r, "quiet_fail", "{'action':'fetch','id':'f'}",
                "{'id':'f','state':'stopped','error':'Error: The tool failed (exit status 3).\\n\\n"
                "stdout:\\nboom\\n'}",
                true);
    ru_done(r);
}

/* RFD 037: "If the assistant is already watching a handle, notifications
 * for that handle are suppressed" — an await in flight while one handle
 * asks and another prints (on_content on). */
static void awaited_handle_leaves_no_notification(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0, def("{'name':'asker','stateful':true}", asker_sh),
        def("{'name':'tick','stateful':true,'spawn':{'notifications':{'on_content':true}}}",
            ticker_sh),
        NULL);

    ru_call_expect(r, "asker", "{'action':'spawn','id':'q'}",
                "{'id':'q','state':'running','content':''}", false);
    ru_call_expect(r, "tick", "{'action':'spawn','id':'t'}",
                "{'id':'t','state':'running','content':''}", false);
    jpt_batch *b = ru_submit(r, "[{'id':'w','name':'await','arguments':{'all':['q','t']}}]");
    jpt_registry_dispatch(r); /* the await starts watching */
    touch_go();
    want w[] = {{JPT_EVENT_STATE, "q", JPT_STATE_WAITING, false},
                {JPT_EVENT_OUTPUT, "t", 0, false}};
    assert_true(until_all(r, w, 2));
    assert_notifications(r, "[]");
    jpt_batch_cancel(b);
    json_t *res = ru_finish(r, b);
    ru_assert_response(res, 0, "w",
                       "{'completed':[],'pending':[{'id':'q','state':'waiting'},"
                       "{'id':'t','state':'running'}],'cancelled':true}",
                       false);
    assert_notifications(r, "[]");
    ru_done(r);
}

/* A handle that changes while an action of the model waits on it (a spawn
 * settling, an apply) leaves no notification: the action's answer shows
 * the change. */
static void handle_changing_during_an_action_leaves_no_notification(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);

    ru_call_expect(r, "nap", "{'action':'spawn','id':'z','ms':0}",
                "{'id':'z','state':'stopped','result':'slept 0\\n\\n[process ended: exit status 0]'}",
                false);
    ru_call_expect(r, "counter", "{'action':'spawn','id':'n'}",
                "{'id':'n','state':'running','content':'count=0'}", false);
    ru_call_expect(r, "counter", "{'action':'apply','id':'n','input':'ask\\n'}",
                "{'id':'n','state':'waiting','content':'Question [reset]: Reset the counter?\\n"
                "Expected answer: true or false\\nDefault: false'}",
                false);
    assert_notifications(r, "[]");
    ru_done(r);
}

/* registry.h: a notice "is dropped once an action shows the model that
 * state" — a fetch of the stopped handle, or of the new output. */
static void fetch_drops_the_notification_of_the_state_it_shows(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0, def("{'name':'build','stateful':true}", built_sh),
        def("{'name':'tick','stateful':true,'spawn':{'notifications':{'on_content':true}}}",
            ticker_sh),
        NULL);

    ru_call_expect(r, "build", "{'action':'spawn','id':'b'}",
                "{'id':'b','state':'running','content':''}", false);
    ru_call_expect(r, "tick", "{'action':'spawn','id':'t'}",
                "{'id':'t','state':'running','content':''}", false);
    touch_go();
    want w[] = {{JPT_EVENT_STATE, "b", JPT_STATE_STOPPED, false},
                {JPT_EVENT_OUTPUT, "t", 0, false}};
    assert_true(until_all(r, w, 2));
    ru_call_expect(r, "build", "{'action':'fetch','id':'b'}",
                "{'id':'b','state':'stopped','result':'built\\n\\n[process ended: exit status 0]'}",
                false);
    ru_call_expect(r, "tick", "{'action':'fetch','id':'t'}",
                "{'id':'t','state':'running','content':'progress 1\\n'}", false);
    assert_notifications(r, "[]");
    ru_done(r);
}

/* ==== The end of a turn (RFD 037, "Turn-end behavior") ================================= */

#define POLICY_NAP(name, policy)                                                              \
    "{'name':'" name "','stateful':true,'command':['" TOOL("sleep-ms") "','{{arguments.ms}}'],"   \
    "'parameters':{'type':'object','properties':{'ms':{'type':'integer'}},'required':['ms']},"    \
    "'spawn':{'lifecycle':{'on_turn_end':'" policy "'}}}"

static const char policy_tools[] = "{'tools':[" POLICY_NAP("nap_abort", "abort") ","
                                   POLICY_NAP("nap_await", "await") ","
                                   POLICY_NAP("nap_inquire", "inquire") "]}";

static json_t *end_turn(jpt_registry *r, unsigned flags)
{
    jpt_batch *b = NULL;

    assert_int_equal(jpt_registry_end_turn(r, flags, &b), JPT_OK);
    assert_non_null(b);
    return ru_finish(r, b);
}

/* "abort: JP terminates all outstanding handles immediately. Results are
 * lost." — its output; a notification says that it was aborted (issue 16:
 * every handle the turn end touches says what became of it). */
static void turn_end_abort_kills_the_handle_and_loses_its_result(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 0);

    ru_call_expect(r, "nap_abort", "{'action':'spawn','id':'h','ms':30000}",
                "{'id':'h','state':'running','content':''}", false);
    assert_int_equal(children(), 1);
    json_t *res = end_turn(r, 0);
    assert_json(res, "[]");
    assert_int_equal(children(), 0);
    assert_notifications(r, "[{'id':'h','tool':'nap_abort','state':'stopped','result':"
                            "'The turn ended: the handle was aborted (on_turn_end "
                            "\\\"abort\\\"), and its output discarded','is_error':false}]");
    assert_gone(r, "nap_abort", "h");
    ru_done(r);
}

/* "await: JP automatically waits for all outstanding handles … Results are
 * delivered via the system message queue at the start of the next turn." */
static void turn_end_await_waits_and_queues_the_result(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 0);

    ru_call_expect(r, "nap_await", "{'action':'spawn','id':'h','ms':400}",
                "{'id':'h','state':'running','content':''}", false);
    json_t *res = end_turn(r, 0);
    assert_json(res, "[]");
    assert_notifications(r, "[{'id':'h','tool':'nap_await','state':'stopped',"
                            "'result':'slept 400\\n\\n[process ended: exit status 0]','is_error':false}]");
    assert_gone(r, "nap_await", "h");
    ru_done(r);
}

/* "If the timeout is exceeded, remaining handles are aborted" (the
 * turn_end_timeout_ms option); its notification says so (issue 16). */
static void turn_end_await_kills_a_handle_past_the_timeout(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 300);

    ru_call_expect(r, "nap_await", "{'action':'spawn','id':'h','ms':30000}",
                "{'id':'h','state':'running','content':''}", false);
    json_t *res = end_turn(r, 0);
    assert_json(res, "[]");
    assert_int_equal(children(), 0);
    assert_notifications(r, "[{'id':'h','tool':'nap_await','state':'stopped','result':"
                            "'Error: The turn end waited 300 ms (turn_end_timeout_ms) for the "
                            "handle to stop: it was stopped','is_error':true}]");
    assert_gone(r, "nap_await", "h");
    ru_done(r);
}

/* The turn-end schema's alternative for handle `id`: one entry of the
 * oneOf of `id`, carrying the handle's details. */
static const json_t *schema_alternative(const json_t *alternatives, const char *id)
{
    const json_t *alt;
    size_t i;

    json_array_foreach(alternatives, i, alt) {
        const char *c = json_string_value(json_object_get(alt, "const"));
        if (c != NULL && strcmp(c, id) == 0)
            return alt;
    }
    fail_msg("the turn-end schema lists no handle '%s'", id);
    return NULL;
}

/* A handle as RFD 037 lists it: id, tool, state, elapsed_secs and the
 * trimmed output. */
static void assert_turn_alternative(const json_t *alternatives, const char *id,
                                    const char *tool, const char *preview)
{
    json_t *alt = json_deep_copy(schema_alternative(alternatives, id));
    const json_t *elapsed = json_object_get(alt, "elapsed_secs");
    char expected[1024];

    if (!json_is_number(elapsed) || json_number_value(elapsed) < 0)
        fail_msg("handle '%s' has no elapsed_secs of 0 or more", id);
    json_object_del(alt, "elapsed_secs");
    snprintf(expected, sizeof(expected),
             "{'const':'%s','tool':'%s','state':'running','output_preview':'%s'}", id, tool,
             preview);
    assert_json(alt, js(expected));
    json_decref(alt);
}

/* "inquire (default): JP sends an InquiryRequest to the assistant with a
 * dynamically built schema listing each outstanding handle, its current
 * state, and trimmed output. The assistant chooses per-handle whether to
 * wait or abort": wait delivers the result as a result of the batch
 * (registry.h: {"id": handle id, "content": {"id","state","result"}}),
 * abort kills. */
static void turn_end_inquire_asks_once_and_waits_or_aborts_per_handle(void **state)
{
    (void)state;
    jpt_registry *r = registry(
        js("{'tools':["
           "{'name':'cargo_check','stateful':true,'command':['" TOOL("sleep-ms") "','1500','Compiling jp_cli v0.1.0...']},"
           "{'name':'cargo_test','stateful':true,'command':['" TOOL("sleep-ms") "','30000','running 42 tests...']}]}"),
        0);

    ru_call_expect(r, "cargo_check", "{'action':'spawn','id':'check'}",
                "{'id':'check','state':'running','content':'Compiling jp_cli v0.1.0...'}", false);
    ru_call_expect(r, "cargo_test", "{'action':'spawn','id':'test'}",
                "{'id':'test','state':'running','content':'running 42 tests...'}", false);
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    jpt_batch *b = NULL;
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    jpt_inquiry *q = until_inquiry(r, b);
    assert_non_null(q);
    assert_int_equal(inq.asked, 1);
    assert_null(jpt_inquiry_tool(q));
    assert_null(jpt_inquiry_call_id(q));
    assert_null(jpt_inquiry_handle_id(q));
    assert_int_equal(jpt_inquiry_target(q), JPT_TARGET_ASSISTANT);

    json_t *question = parse(jpt_inquiry_question_json(q));
    assert_string_equal(json_string_value(json_object_get(question, "id")), "turn_end");
    assert_true(json_string_length(json_object_get(question, "text")) > 0);
    json_t *schema = json_object_get(question, "schema");
    assert_string_equal(json_string_value(json_object_get(schema, "type")), "object");
    assert_json(json_object_get(schema, "required"), "[\"handles\"]");
    json_t *handles = json_object_get(json_object_get(schema, "properties"), "handles");
    assert_string_equal(json_string_value(json_object_get(handles, "type")), "array");
    json_t *items = json_object_get(handles, "items");
    /* The answer names handles by id, in any order, each with an action. */
    assert_json(json_object_get(items, "required"), "[\"id\",\"action\"]");
    assert_json(json_object_get(json_object_get(items, "properties"), "action"),
                js("{'type':'string','enum':['wait','abort']}"));
    json_t *alternatives =
        json_object_get(json_object_get(json_object_get(items, "properties"), "id"), "oneOf");
    assert_int_equal(json_array_size(alternatives), 2);
    assert_turn_alternative(alternatives, "check", "cargo_check", "Compiling jp_cli v0.1.0...");
    assert_turn_alternative(alternatives, "test", "cargo_test", "running 42 tests...");
    char answer[256];
    snprintf(answer, sizeof(answer),
             "{'handles':[{'id':'check','action':'wait'},{'id':'test','action':'abort'}]}");
    json_decref(question);

    if (jpt_inquiry_answer(q, js(answer)) != JPT_OK)
        fail_msg("answer refused: %s", jpt_inquiry_errmsg(q));
    inq.q = NULL;
    json_t *res = ru_finish(r, b);
    assert_int_equal(json_array_size(res), 1);
    ru_assert_response(res, 0, "check",
                       "{'id':'check','state':'stopped',"
                       "'result':'slept 1500\\n\\n[process ended: exit status 0]'}",
                       false);
    assert_int_equal(inq.asked, 1);
    assert_int_equal(children(), 0);
    assert_notifications(r, "[{'id':'test','tool':'cargo_test','state':'stopped','result':"
                            "'The turn ended: the handle was aborted, as the answer to the "
                            "turn-end question chose, and its output discarded',"
                            "'is_error':false}]");
    assert_gone(r, "cargo_check", "check");
    assert_gone(r, "cargo_test", "test");
    ru_done(r);
}

/* `text` with each elapsed time ("3.2 s") written "N s": a duration, so
 * not compared. */
static char *without_durations(const char *text)
{
    char *out = malloc(strlen(text) + 1), *o = out;

    assert_non_null(out);
    for (const char *p = text; *p != '\0';) {
        const char *q = p;
        while (*q >= '0' && *q <= '9')
            q++;
        if (q > p && *q == '.' && q[1] >= '0' && q[1] <= '9' && strncmp(q + 2, " s", 2) == 0) {
            *o++ = 'N';
            p = q + 2;
        } else
            *o++ = *p++;
    }
    *o = '\0';
    return out;
}

/* The host trial: the turn end's results, shaped as a provider's
 * tool_result blocks, carried handle ids as tool_use_ids, which no
 * provider accepts; every host had to write them out as text itself. The
 * registry refuses those shapes for the turn end's batch, saying why, and
 * jpt_registry_take_turn_text gives its results and the notifications as
 * the text to put before the next user message, once. */
static void turn_end_results_reach_the_model_as_text_not_tool_results(void **state)
{
    (void)state;
    jpt_registry *r = registry(
        js("{'tools':["
           "{'name':'cargo_check','stateful':true,'command':['" TOOL("sleep-ms") "','600']},"
           "{'name':'cargo_test','stateful':true,'command':['" TOOL("sleep-ms") "','30000']}]}"),
        0);
    char *text = NULL;

    ru_call_expect(r, "cargo_check", "{'action':'spawn','id':'check'}",
                "{'id':'check','state':'running','content':''}", false);
    ru_call_expect(r, "cargo_test", "{'action':'spawn','id':'test'}",
                "{'id':'test','state':'running','content':''}", false);
    jpt_batch *model = ru_submit(r, "[{'id':'f','name':'cargo_test',"
                                    "'arguments':{'action':'fetch','id':'test'}}]");
    assert_int_equal(jpt_registry_wait(r, model, WAIT_MS), JPT_OK);
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    jpt_batch *b = NULL;
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    /* Not before it settles. */
    assert_int_equal(jpt_registry_take_turn_text(r, b, &text), JPT_ERR_STATE);
    assert_null(text);
    ru_assert_contains(jpt_registry_errmsg(r), "still settling");
    jpt_inquiry *q = until_inquiry(r, b);
    assert_non_null(q);
    assert_int_equal(jpt_inquiry_answer(q, js("{'handles':[{'id':'check','action':'wait'},"
                                             "{'id':'test','action':'abort'}]}")),
                     JPT_OK);
    inq.q = NULL;
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);

    static const int providers[] = {JPT_DIALECT_OPENAI, JPT_DIALECT_OPENAI_RESPONSES,
                                    JPT_DIALECT_ANTHROPIC, JPT_DIALECT_GEMINI};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(jpt_batch_results_json_as(b, providers[i], &text), JPT_ERR_INVALID);
        assert_null(text);
        ru_assert_contains(jpt_registry_errmsg(r), "this batch is the turn end's");
        ru_assert_contains(jpt_registry_errmsg(r), "jpt_registry_take_turn_text()");
    }
    /* jptool's own shape, and a model's batch, are not refused. */
    assert_int_equal(jpt_batch_results_json_as(b, JPT_DIALECT_AS_CALLED, &text), JPT_OK);
    jpt_free(text);
    assert_int_equal(jpt_batch_results_json_as(model, JPT_DIALECT_ANTHROPIC, &text), JPT_OK);
    jpt_free(text);
    /* A model's batch is no turn end's. */
    text = (char *)"untouched";
    assert_int_equal(jpt_registry_take_turn_text(r, model, &text), JPT_ERR_INVALID);
    assert_null(text);
    ru_assert_contains(jpt_registry_errmsg(r), "not a turn end's");

    assert_int_equal(jpt_registry_take_turn_text(r, b, &text), JPT_OK);
    char *seen = without_durations(text);
    jpt_free(text);
    assert_string_equal(seen,
                        "[Notification: handle `test` (tool `cargo_test`) stopped after N s]\n"
                        "The turn ended: the handle was aborted, as the answer to the "
                        "turn-end question chose, and its output discarded\n"
                        "\n"
                        "[Handle `check` (tool `cargo_check`) stopped after your last turn]\n"
                        "slept 600\n"
                        "\n"
                        "[process ended: exit status 0]\n"
                        "\n");
    free(seen);
    /* Taken: the notifications are gone, and only what comes later is
     * given again. */
    assert_notifications(r, "[]");
    assert_int_equal(jpt_registry_take_turn_text(r, NULL, &text), JPT_OK);
    assert_string_equal(text, "");
    jpt_free(text);
    jpt_batch_free(model);
    jpt_batch_free(b);
    assert_gone(r, "cargo_check", "check");
    ru_done(r);
}

/* A handle the turn end keeps running (JPT_TURN_KEEP) leaves a
 * notification of its state; an error stop says so. */
static void turn_text_gives_running_handles_and_failures(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(300, def("{'name':'build','stateful':true}", boom_sh),
                                  parse(js(POLICY_NAP("nap_await", "await"))), NULL);
    char *text = NULL;

    ru_call_expect(r, "build", "{'action':'spawn','id':'b'}",
                "{'id':'b','state':'running','content':''}", false);
    touch_go();
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "b", JPT_STATE_STOPPED));
    ru_call_expect(r, "nap_await", "{'action':'spawn','id':'k','ms':30000}",
                "{'id':'k','state':'running','content':''}", false);
    json_t *res = end_turn(r, JPT_TURN_KEEP);
    assert_json(res, "[]");
    assert_int_equal(jpt_registry_take_turn_text(r, NULL, &text), JPT_OK);
    char *seen = without_durations(text);
    jpt_free(text);
    assert_string_equal(seen,
                        "[Notification: handle `b` (tool `build`) stopped after N s, with an "
                        "error]\n"
                        "Error: The tool failed (exit status 3).\n"
                        "\n"
                        "stdout:\n"
                        "boom\n"
                        "\n"
                        "[Notification: handle `k` (tool `nap_await`) is running (N s), with no "
                        "output yet]\n"
                        "\n");
    free(seen);
    ru_call_expect(r, "nap_await", "{'action':'abort','id':'k'}",
                "{'id':'k','state':'stopped','result':'[process ended: aborted]'}", false);
    ru_done(r);
}

/* registry.h: the answer is {"handles": [{"id", "action"}, …]}, a choice
 * per handle named by its id; RFD 037 lists the handles in the order they
 * were spawned. An answer in that order names every handle once and must
 * be taken, whatever order the question happened to list them in. */
static void turn_end_answer_may_name_handles_in_any_order(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 0);

    ru_call_expect(r, "nap_inquire", "{'action':'spawn','id':'check','ms':30000}",
                "{'id':'check','state':'running','content':''}", false);
    ru_call_expect(r, "nap_inquire", "{'action':'spawn','id':'test','ms':30000}",
                "{'id':'test','state':'running','content':''}", false);
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    jpt_batch *b = NULL;
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    jpt_inquiry *q = until_inquiry(r, b);
    assert_non_null(q);
    int rc = jpt_inquiry_answer(q, js("{'handles':[{'id':'check','action':'abort'},"
                                      "{'id':'test','action':'abort'}]}"));
    char why[512];
    snprintf(why, sizeof(why), "%s", rc == JPT_OK ? "" : jpt_inquiry_errmsg(q));
    if (rc != JPT_OK)
        assert_int_equal(jpt_inquiry_answer(q, js("{'handles':[{'id':'test','action':'abort'},"
                                                  "{'id':'check','action':'abort'}]}")),
                         JPT_OK);
    inq.q = NULL;
    assert_json(ru_finish(r, b), "[]");
    ru_done(r);

    if (rc != JPT_OK)
        fail_msg("the answer in spawn order was refused: %s", why);
}

/* The turn-end answer is checked against the schema it was asked with. */
static void turn_end_answer_is_checked_against_its_schema(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 0);

    ru_call_expect(r, "nap_inquire", "{'action':'spawn','id':'h','ms':30000}",
                "{'id':'h','state':'running','content':''}", false);
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    jpt_batch *b = NULL;
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    jpt_inquiry *q = until_inquiry(r, b);
    assert_non_null(q);
    assert_int_equal(jpt_inquiry_answer(q, js("{'handles':[{'id':'h','action':'later'}]}")),
                     JPT_ERR_INVALID);
    ru_assert_contains(jpt_inquiry_errmsg(q), "the answer does not fit question 'turn_end'");
    assert_int_equal(jpt_inquiry_answer(q, js("{'handles':[{'id':'h','action':'abort'}]}")),
                     JPT_OK);
    inq.q = NULL;
    json_t *res = ru_finish(r, b);
    assert_json(res, "[]");
    assert_int_equal(children(), 0);
    ru_done(r);
}

/* registry.h: without a handler nobody can choose to wait, so an
 * inquire handle is stopped at once (issue 16: it used to block the turn
 * end for the whole timeout, 120 s by default, and then vanish), its
 * notification saying why. */
static void turn_end_inquire_without_a_handler_stops_at_once(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 0);

    ru_call_expect(r, "nap_inquire", "{'action':'spawn','id':'h','ms':60000}",
                "{'id':'h','state':'running','content':''}", false);
    json_t *res = end_turn(r, 0);
    assert_json(res, "[]");
    assert_int_equal(children(), 0);
    assert_notifications(r, "[{'id':'h','tool':'nap_inquire','state':'stopped','result':"
                            "'Error: The turn ended with nobody to ask whether to wait for the "
                            "handle (no inquiry handler): it was stopped','is_error':true}]");
    ru_done(r);
}

/* registry.h: "… or if the question is cancelled, these handles are
 * treated as "await"." */
static void turn_end_question_cancelled_awaits(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 0);

    ru_call_expect(r, "nap_inquire", "{'action':'spawn','id':'h','ms':400}",
                "{'id':'h','state':'running','content':''}", false);
    jpt_registry_set_inquiry_handler(r, on_inquiry, NULL);
    jpt_batch *b = NULL;
    assert_int_equal(jpt_registry_end_turn(r, 0, &b), JPT_OK);
    jpt_inquiry *q = until_inquiry(r, b);
    assert_non_null(q);
    assert_int_equal(jpt_inquiry_cancel(q, NULL), JPT_OK);
    inq.q = NULL;
    json_t *res = ru_finish(r, b);
    assert_json(res, "[]");
    assert_notifications(r, "[{'id':'h','tool':'nap_inquire','state':'stopped',"
                            "'result':'slept 400\\n\\n[process ended: exit status 0]','is_error':false}]");
    ru_done(r);
}

/* registry.h: once the batch is done "the registry holds no live
 * handles": every policy at once, and a handle that had stopped unseen. */
static void turn_end_leaves_no_live_handle(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 0);

    ru_call_expect(r, "nap_abort", "{'action':'spawn','id':'a','ms':30000}",
                "{'id':'a','state':'running','content':''}", false);
    ru_call_expect(r, "nap_await", "{'action':'spawn','id':'w','ms':400}",
                "{'id':'w','state':'running','content':''}", false);
    ru_call_expect(r, "nap_inquire", "{'action':'spawn','id':'i','ms':400}",
                "{'id':'i','state':'running','content':''}", false);
    ru_call_expect(r, "nap_await", "{'action':'spawn','id':'s','ms':400}",
                "{'id':'s','state':'running','content':''}", false);
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "s", JPT_STATE_STOPPED));
    assert_json(end_turn(r, 0), "[]");
    assert_int_equal(children(), 0);
    assert_gone(r, "nap_abort", "a");
    assert_gone(r, "nap_await", "w");
    assert_gone(r, "nap_inquire", "i");
    assert_gone(r, "nap_await", "s");
    ru_done(r);
}

/* registry.h: "Stopped handles the model has not seen go (their
 * notifications stay)." */
static void turn_end_keeps_the_notification_of_a_handle_stopped_unseen(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(0, def("{'name':'build','stateful':true}", built_sh), NULL);

    ru_call_expect(r, "build", "{'action':'spawn','id':'b'}",
                "{'id':'b','state':'running','content':''}", false);
    touch_go();
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "b", JPT_STATE_STOPPED));
    json_t *res = end_turn(r, 0);
    assert_json(res, "[]");
    assert_gone(r, "build", "b");
    assert_notifications(r, "[{'id':'b','tool':'build','state':'stopped',"
                            "'result':'built\\n\\n[process ended: exit status 0]','is_error':false}]");
    ru_done(r);
}

/* JPT_TURN_KEEP: "kill nothing: handles past their wait stay" — an abort
 * policy and an await past its timeout both leave the handle running. */
static void turn_end_keep_leaves_handles_running(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 300);

    ru_call_expect(r, "nap_abort", "{'action':'spawn','id':'a','ms':30000}",
                "{'id':'a','state':'running','content':''}", false);
    ru_call_expect(r, "nap_await", "{'action':'spawn','id':'w','ms':30000}",
                "{'id':'w','state':'running','content':''}", false);
    json_t *res = end_turn(r, JPT_TURN_KEEP);
    assert_json(res, "[]");
    assert_int_equal(children(), 2);
    ru_call_expect(r, "nap_abort", "{'action':'fetch','id':'a'}",
                "{'id':'a','state':'running','content':''}", false);
    ru_call_expect(r, "nap_await", "{'action':'fetch','id':'w'}",
                "{'id':'w','state':'running','content':''}", false);
    ru_done(r);
}

/* registry.h: JPT_ERR_STATE "(a turn end is still settling)"; once it
 * has, the next turn can end. */
static void second_turn_end_while_one_settles_is_a_state_error(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(policy_tools), 300);
    jpt_batch *first = NULL, *second = NULL;

    ru_call_expect(r, "nap_await", "{'action':'spawn','id':'h','ms':30000}",
                "{'id':'h','state':'running','content':''}", false);
    assert_int_equal(jpt_registry_end_turn(r, 0, &first), JPT_OK);
    assert_int_equal(jpt_registry_end_turn(r, 0, &second), JPT_ERR_STATE);
    assert_null(second);
    assert_string_equal(jpt_registry_errmsg(r),
                        "end_turn: the previous turn end is still settling");
    assert_json(ru_finish(r, first), "[]");
    assert_json(end_turn(r, 0), "[]");
    ru_done(r);
}

/* ==== Wake-ups (issue 4: "an await whose last handle stops completes in
 * the same dispatch") ============================================================== */

static void await_completes_in_the_dispatch_where_its_last_handle_stops(void **state)
{
    (void)state;
    jpt_registry *r = registry(js(nap_tools), 0);
    int stopped_at = -1, done_at = -1;
    uint64_t deadline = ru_now_ms() + WAIT_MS;
    jpt_event *e;

    jpt_batch *b = ru_submit(r, "["
        "{'id':'s1','name':'nap','arguments':{'action':'spawn','id':'one','ms':300}},"
        "{'id':'s2','name':'nap','arguments':{'action':'spawn','id':'two','ms':600}},"
        "{'id':'w','name':'await','arguments':{'all':['one','two']}}]");
    for (int i = 0; done_at < 0 && ru_now_ms() < deadline; i++) {
        ru_poll(r, 50);
        jpt_registry_dispatch(r);
        while (jpt_registry_next_event(r, &e) == JPT_OK) {
            if (ru_event_matches(e, JPT_EVENT_STATE, "two", JPT_STATE_STOPPED))
                stopped_at = i;
            if (ru_event_matches(e, JPT_EVENT_CALL_DONE, "w", 0))
                done_at = i;
            jpt_event_free(e);
        }
    }
    assert_true(stopped_at >= 0);
    assert_int_equal(done_at, stopped_at);
    json_t *res = ru_finish(r, b);
    ru_assert_response(res, 2, "w",
                       "{'completed':["
                       "{'id':'one','state':'stopped','result':'slept 300\\n\\n[process ended: exit status 0]'},"
                       "{'id':'two','state':'stopped','result':'slept 600\\n\\n[process ended: exit status 0]'}],"
                       "'pending':[]}",
                       false);
    ru_done(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(rfd_check_and_test_spawned_and_awaited_with_all_in_one_batch),
        T(an_id_seen_stopped_is_free_for_the_next_batch_at_once),
        T(rfd_race_with_any_returns_the_first_and_leaves_the_other_running),
        T(rfd_timeout_returns_current_states_and_aborts_nothing),
        T(await_with_any_and_all_needs_every_all_and_one_any),
        T(await_without_handle_ids_is_an_error),
        T(await_on_an_unknown_handle_is_an_error),
        T(await_on_handles_stopped_before_returns_at_once),
        T(several_awaits_on_one_handle_complete_with_the_same_result),
        T(await_is_not_spawnable),
        T(await_is_absent_without_stateful_tools),
        T(await_is_listed_exactly_as_rfd_037_gives_it),
        T(await_placed_before_its_spawns_in_the_batch_finds_them),
        T(await_after_a_spawn_that_could_not_run_reports_it),
        T(rfd_spawn_configuration_loads_as_written),
        T(awaited_waiting_handle_is_answered_through_the_inquiry_handler),
        T(handle_asking_while_awaited_is_answered_through_the_inquiry_handler),
        T(question_asked_during_its_spawn_reaches_the_handler_for_the_await),
        T(waiting_handle_without_a_handler_stays_pending),
        T(cancelled_question_stops_the_awaited_handle_with_an_error),
        T(batch_with_two_spawns_of_one_id_is_rejected_and_nothing_runs),
        T(batch_reusing_an_active_handle_id_is_rejected_and_nothing_runs),
        T(batch_results_are_in_input_order),
        T(arguments_given_as_a_json_string_are_taken),
        T(batch_cancel_kills_one_shots_and_ends_awaits_keeping_finished_results),
        T(handle_stopping_unwatched_leaves_one_notification_taken_once),
        T(a_handle_whose_result_was_given_is_not_called_unknown),
        T(only_the_last_256_ended_ids_are_remembered),
        T(failed_handle_leaves_an_on_failure_notification),
        T(handle_asking_unwatched_leaves_an_on_waiting_notification),
        T(output_while_running_notifies_nothing_by_default),
        T(on_content_notifies_output_with_a_preview),
        T(notification_flags_set_false_suppress_them),
        T(awaited_handle_leaves_no_notification),
        T(handle_changing_during_an_action_leaves_no_notification),
        T(fetch_drops_the_notification_of_the_state_it_shows),
        T(turn_end_abort_kills_the_handle_and_loses_its_result),
        T(turn_end_await_waits_and_queues_the_result),
        T(turn_end_await_kills_a_handle_past_the_timeout),
        T(turn_end_inquire_asks_once_and_waits_or_aborts_per_handle),
        T(turn_end_results_reach_the_model_as_text_not_tool_results),
        T(turn_text_gives_running_handles_and_failures),
        T(turn_end_answer_may_name_handles_in_any_order),
        T(turn_end_answer_is_checked_against_its_schema),
        T(turn_end_inquire_without_a_handler_stops_at_once),
        T(turn_end_question_cancelled_awaits),
        T(turn_end_leaves_no_live_handle),
        T(turn_end_keeps_the_notification_of_a_handle_stopped_unseen),
        T(turn_end_keep_leaves_handles_running),
        T(second_turn_end_while_one_settles_is_a_state_error),
        T(await_completes_in_the_dispatch_where_its_last_handle_stops),
        T(await_before_a_spawn_that_could_not_run_reports_it),
    };
    return TU_RUN(tests);
}
