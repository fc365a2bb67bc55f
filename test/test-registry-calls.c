/* Calls as models send them (issue 16, §1), on real processes: several
 * calls on one handle in one message, state lines however their bytes
 * arrive, every form of a stopped state's result, the end of a turn for
 * every handle it touches, and the output of failed and terminal handles
 * as the model reads it.
 *
 * Each test runs with a fixture: a scratch directory as the registry's
 * root, and a teardown that frees the registry even when an assertion
 * failed. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry-util.h"

/* ---- Fixture ---------------------------------------------------------------------- */

/* Log lines at WARNING or worse, for tests that the library said nothing. */
static struct {
    int count;
    char last[512];
} warned;

static void on_log(int level, const char *msg, void *ud)
{
    (void)ud;
    if (level > JPT_LOG_WARNING)
        return;
    warned.count++;
    snprintf(warned.last, sizeof(warned.last), "%s", msg);
}

static int setup(void **state)
{
    warned.count = 0;
    warned.last[0] = '\0';
    int rc = ru_setup(state);
    jpt_set_log(on_log, NULL, JPT_LOG_WARNING);
    return rc;
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, ru_teardown)

/* A registry rooted in the scratch directory, with short timings and
 * `turn_end_ms` as its turn-end timeout (0: the default). */
static jpt_registry *registry_with(const char *tools_json, int turn_end_ms)
{
    jpt_registry_options o = {.settle_ms = 150, .turn_end_timeout_ms = turn_end_ms};
    return ru_scratch_registry(&o, tools_json);
}

/* ---- Tools ------------------------------------------------------------------------- */

/* A definition of test/tools/pieces named `name`, with the steps of a
 * NULL-terminated list (written as C strings: "out:{\"type\":…}\\n"), and
 * the keys of `extra_js` (js() text, may be NULL). */
static json_t *pieces(const char *name, const char *extra_js, const char *step, ...)
{
    json_t *d = extra_js != NULL ? parse(js(extra_js)) : json_object();
    json_t *command = json_array();
    va_list ap;

    json_array_append_new(command, json_string(TOOL("pieces")));
    va_start(ap, step);
    for (const char *s = step; s != NULL; s = va_arg(ap, const char *))
        json_array_append_new(command, json_string(s));
    va_end(ap);
    json_object_set_new(d, "name", json_string(name));
    json_object_set_new(d, "command", command);
    return d;
}

/* A registry of the definitions of a NULL-terminated list, with short
 * timings and `turn_end_ms` as its turn-end timeout (0: the default). */
#define registry_of(turn_end_ms, ...)                                                           \
    ru_scratch_registry_of(                                                                    \
        &(jpt_registry_options){.settle_ms = 150, .turn_end_timeout_ms = (turn_end_ms)},       \
        __VA_ARGS__)

/* ==== A stopped state's result, every form the RFDs show ============================ */

/* RFD 009's and D11's examples: {"type":"stopped","result":"Staged 3
 * hunks."} — over stdio as over D11 (test-vfs-host), through one parser. */
static void stopped_state_with_a_plain_result_is_the_result(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0,
        pieces("git", "{'stateful':true}",
               "out:{\"type\":\"stopped\",\"result\":\"Staged 3 hunks.\"}\\n", "exit:0", NULL),
        pieces("git_once", NULL, "out:{\"type\":\"stopped\",\"result\":\"Staged 3 hunks.\"}",
               NULL),
        NULL);

    ru_call_expect(r, "git", "{'action':'spawn','id':'staging','wait_secs':5}",
                "{'id':'staging','state':'stopped','result':'Staged 3 hunks.'}", false);
    ru_call_expect_text(r, "git_once", "{}", "Staged 3 hunks.", false);
    assert_int_equal(warned.count, 0);
    ru_done(r);
}

/* The other forms: RFD 009's Result ({"Ok"}, {"Err"}), a block array,
 * and the From<Outcome> sketch's error member. */
static void stopped_state_takes_every_result_form(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0,
        pieces("ok", NULL, "out:{\"type\":\"stopped\",\"result\":{\"Ok\":\"fine\"}}", NULL),
        pieces("err", NULL,
               "out:{\"type\":\"stopped\",\"result\":{\"Err\":{\"message\":\"broke\","
               "\"trace\":[],\"transient\":false}}}",
               NULL),
        pieces("blocks", NULL,
               "out:{\"type\":\"stopped\",\"result\":[{\"type\":\"text\",\"text\":\"a\"},"
               "{\"type\":\"text\",\"text\":\"b\"}]}",
               NULL),
        pieces("sketch", NULL,
               "out:{\"type\":\"stopped\",\"content\":\"\",\"error\":{\"message\":\"boom\","
               "\"trace\":[],\"transient\":false}}",
               NULL),
        NULL);

    ru_call_expect_text(r, "ok", "{}", "fine", false);
    ru_call_expect_text(r, "err", "{}", "Error: broke", true);
    ru_call_expect_text(r, "blocks", "{}", "a\n\nb", false);
    ru_call_expect_text(r, "sketch", "{}", "Error: boom", true);
    assert_int_equal(warned.count, 0);
    ru_done(r);
}

/* The host trial: a tool that speaks RFD 058 wraps its result in the
 * envelope ({"content": [blocks], "isError"}); the model reads its blocks,
 * over stdio (a handle's state line and a one-shot run's output), not "". */
static void stopped_state_with_an_envelope_result_is_its_content(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0,
        pieces("env", "{'stateful':true}",
               "out:{\"type\":\"stopped\",\"result\":{\"content\":[{\"type\":\"text\","
               "\"text\":\"Staged 3 hunks.\"}]}}\\n",
               "exit:0", NULL),
        pieces("env_once", NULL,
               "out:{\"type\":\"stopped\",\"result\":{\"content\":[{\"type\":\"text\","
               "\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]}}",
               NULL),
        pieces("env_error", NULL,
               "out:{\"type\":\"stopped\",\"result\":{\"content\":[{\"type\":\"text\","
               "\"text\":\"it broke\"}],\"isError\":true}}",
               NULL),
        NULL);

    ru_call_expect(r, "env", "{'action':'spawn','id':'staging','wait_secs':5}",
                "{'id':'staging','state':'stopped','result':'Staged 3 hunks.'}", false);
    ru_call_expect_text(r, "env_once", "{}", "a\n\nb", false);
    ru_call_expect_text(r, "env_error", "{}", "Error: it broke", true);
    assert_int_equal(warned.count, 0);
    ru_done(r);
}

/* ==== State lines are never shown raw (issue 16) ===================================== */

#define WAITING_LINE                                                                          \
    "{\"type\":\"waiting\",\"content\":\"Confirm?\",\"question\":{\"id\":\"ok\",\"text\":"     \
    "\"Proceed?\",\"answer_type\":\"Boolean\"}}"
#define WAITING_HEAD "{\"type\":\"waiting\",\"content\":\"Confir"
#define WAITING_TAIL                                                                          \
    "m?\",\"question\":{\"id\":\"ok\",\"text\":\"Proceed?\",\"answer_type\":\"Boolean\"}}"
#define QUESTION_TEXT "Question [ok]: Proceed?\nExpected answer: true or false"
#define QUESTION_JSON "Question [ok]: Proceed?\\nExpected answer: true or false"

/* Handles spawned per pattern, at once: their bytes meet the registry's
 * reads at every moment the scheduler gives them. */
#define REPEATS 10

/* What the model read of handle `id` until it reported its question: the
 * spawn's answer `first`, then fetches. None holds the state line's JSON;
 * together they hold the rendered question once, and `text` if not NULL. */
static void assert_read_as_question(jpt_registry *r, const char *tool, const char *id,
                                    const char *first, const char *text)
{
    char all[8192] = "", args[128];
    json_t *resp = ru_response(first);

    for (int fetches = 0;; fetches++) {
        const char *content = field(resp, "content");
        if (strstr(content, "\"type\"") != NULL || strstr(content, "answer_type") != NULL)
            fail_msg("handle '%s': a state line reached the model raw: %s", id, content);
        strncat(all, content, sizeof(all) - strlen(all) - 1);
        bool waiting = strcmp(field(resp, "state"), "waiting") == 0;
        json_decref(resp);
        if (waiting)
            break;
        assert_true(fetches < 20);
        snprintf(args, sizeof(args), "{'action':'fetch','id':'%s','wait_secs':5}", id);
        resp = act(r, tool, js(args), NULL);
    }
    const char *q = strstr(all, QUESTION_TEXT);
    if (q == NULL || strstr(q + 1, QUESTION_TEXT) != NULL)
        fail_msg("handle '%s': the question is not there once: %s", id, all);
    if (text != NULL)
        ru_assert_contains(all, text);
}

/* Spawns REPEATS handles of `tool` in one batch and checks what the model
 * reads of each. */
static void spawn_and_read_questions(jpt_registry *r, const char *tool, const char *text)
{
    char calls[8192] = "[", call[256], id[16];

    for (int i = 0; i < REPEATS; i++) {
        snprintf(call, sizeof(call), "%s{'id':'c%d','name':'%s','arguments':{'action':'spawn',"
                                     "'id':'h%d'}}",
                 i > 0 ? "," : "", i, tool, i);
        strcat(calls, call);
    }
    strcat(calls, "]");
    json_t *res = ru_run_js(r, calls);
    for (int i = 0; i < REPEATS; i++) {
        snprintf(id, sizeof(id), "h%d", i);
        assert_false(ru_is_error(res, (size_t)i));
        assert_read_as_question(r, tool, id, ru_content(res, (size_t)i), text);
    }
    for (int i = 0; i < REPEATS; i++) {
        snprintf(call, sizeof(call), "{'action':'abort','id':'h%d'}", i);
        bool err = true;
        free(ru_call(r, tool, js(call), &err));
        assert_false(err);
    }
}

/* The two cases and every way the bytes can come: a text line just
 * before the state in one write, and in its own; the state alone; a byte
 * per write; split with a pause longer than the settle time (the spawn
 * answers while half of it is in); followed by text in the same write. */
static void state_line_is_never_shown_raw_however_its_bytes_arrive(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0, pieces("text_then_state", "{'stateful':true}", "out:hello\\n" WAITING_LINE "\\n", NULL),
        pieces("text_write_state", "{'stateful':true}", "out:hello\\n", "out:" WAITING_LINE "\\n",
               NULL),
        pieces("state_alone", "{'stateful':true}", "out:" WAITING_LINE "\\n", NULL),
        pieces("byte_by_byte", "{'stateful':true}", "bytes:" WAITING_LINE "\\n", NULL),
        pieces("split_slowly", "{'stateful':true}", "out:" WAITING_HEAD, "sleep:400",
               "out:" WAITING_TAIL "\\n", NULL),
        pieces("state_then_text", "{'stateful':true}", "out:" WAITING_LINE "\\nafter\\n", NULL),
        NULL);

    spawn_and_read_questions(r, "text_then_state", "hello");
    spawn_and_read_questions(r, "text_write_state", "hello");
    spawn_and_read_questions(r, "state_alone", NULL);
    spawn_and_read_questions(r, "byte_by_byte", NULL);
    spawn_and_read_questions(r, "split_slowly", NULL);
    spawn_and_read_questions(r, "state_then_text", NULL);
    ru_done(r);
}

/* Deterministic: the tool writes the first half of the state, the spawn
 * answers (the half is held, not shown), and the apply that makes the tool
 * write the rest answers with the question, rendered, and nothing raw. */
static void state_line_completed_by_an_apply_answers_it_rendered(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0, pieces("half", "{'stateful':true}", "out:" WAITING_HEAD, "read",
                  "out:" WAITING_TAIL "\\n", NULL),
        NULL);

    for (int i = 0; i < REPEATS; i++) {
        ru_call_expect(r, "half", "{'action':'spawn','id':'h'}",
                    "{'id':'h','state':'running','content':''}", false);
        ru_call_expect(r, "half", "{'action':'apply','id':'h','input':'go\\n'}",
                    "{'id':'h','state':'waiting','content':'Confirm?\\n\\n" QUESTION_JSON "'}",
                    false);
        ru_call_expect(r, "half", "{'action':'abort','id':'h'}",
                    "{'id':'h','state':'stopped','result':'[aborted]'}", false);
    }
    ru_done(r);
}

/* A last state written without its newline is read as a state when the
 * tool ends; a prompt without one is shown as text at once, and the rest
 * of its line stays text even when it looks like JSON. */
static void unterminated_lines_are_states_at_the_end_and_prompts_at_once(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0,
        pieces("last", "{'stateful':true}", "out:{\"type\":\"stopped\",\"result\":\"done\"}",
               "exit:0", NULL),
        pieces("prompt", "{'stateful':true}", "out:> ", "read",
               "out:{\"type\":\"running\",\"content\":\"inner\"}\\n",
               NULL),
        NULL);

    ru_call_expect(r, "last", "{'action':'spawn','id':'l','wait_secs':5}",
                "{'id':'l','state':'stopped','result':'done'}", false);
    ru_call_expect(r, "prompt", "{'action':'spawn','id':'p'}",
                "{'id':'p','state':'running','content':'> '}", false);
    ru_call_expect(r, "prompt", "{'action':'apply','id':'p','input':'go\\n'}",
                "{'id':'p','state':'running','content':"
                "'{\\\"type\\\":\\\"running\\\",\\\"content\\\":\\\"inner\\\"}\\n'}",
                false);
    ru_call_expect(r, "prompt", "{'action':'abort','id':'p'}",
                "{'id':'p','state':'stopped','result':'[process ended: aborted]'}", false);
    ru_done(r);
}

/* The host trial: a state written without its newline by a tool that then
 * waits for input was held from the model for as long as the process ran.
 * Quiet for the settle time, it is read as a state (its late newline is
 * no text); complete JSON that is no state, and a line that can never be
 * JSON, are text then; JSON cut short stays held (the test above). */
static void an_unterminated_line_is_read_once_quiet_for_the_settle_time(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0,
        pieces("state", "{'stateful':true}", "out:{\"type\":\"running\",\"content\":\"inner\"}",
               "read", "out:\\n", "out:after\\n", "read", NULL),
        pieces("json", "{'stateful':true}", "out:{\"progress\":5}", "read", NULL),
        pieces("brace", "{'stateful':true}", "out:{ not json", "read", NULL),
        NULL);

    ru_call_expect(r, "state", "{'action':'spawn','id':'s'}",
                "{'id':'s','state':'running','content':'inner'}", false);
    ru_call_expect(r, "state", "{'action':'apply','id':'s','input':'go\\n','wait_secs':5}",
                "{'id':'s','state':'running','content':'after\\n'}", false);
    ru_call_expect(r, "json", "{'action':'spawn','id':'j'}",
                "{'id':'j','state':'running','content':'{\\\"progress\\\":5}'}", false);
    ru_call_expect(r, "brace", "{'action':'spawn','id':'b'}",
                "{'id':'b','state':'running','content':'{ not json'}", false);
    /* A fetch long after reads the same: nothing is held back. */
    ru_call_expect(r, "json", "{'action':'fetch','id':'j'}",
                "{'id':'j','state':'running','content':''}", false);
    for (const char *const *id = (const char *const[]){"s", "j", "b", NULL}; *id != NULL; id++) {
        char args[64];
        bool err = true;
        snprintf(args, sizeof(args), "{\"action\":\"abort\",\"id\":\"%s\"}", *id);
        free(ru_call(r, **id == 's' ? "state" : **id == 'j' ? "json" : "brace", args, &err));
        assert_false(err);
    }
    ru_done(r);
}

/* ==== Several calls on one handle in one message (issue 16) ============================ */

#define ECHO_TOOL "{'name':'echo','stateful':true,'command':['" TOOL("echo-lines") "']}"
#define NAP_TOOL                                                                              \
    "{'name':'nap','stateful':true,'command':['" TOOL("sleep-ms") "','{{arguments.ms}}'],"    \
    "'parameters':{'type':'object','properties':{'ms':{'type':'integer'}},'required':['ms']}}"
#define GHOST_TOOL "{'name':'ghost','stateful':true,'command':['/nonexistent/ghost']}"

static jpt_registry *order_registry(void)
{
    return registry_with(js("{'tools':[" ECHO_TOOL "," NAP_TOOL "," GHOST_TOOL "]}"), 0);
}

/* spawn + apply: the apply runs once the spawn has answered, on the
 * handle the spawn made, and reads the output after the spawn's. */
static void spawn_then_apply_acts_on_the_handle_the_spawn_made(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'echo','arguments':{'action':'spawn','id':'e'}},"
        "{'id':'2','name':'echo','arguments':{'action':'apply','id':'e','input':'x\\n'}}]");
    ru_assert_response(res, 0, "1", "{'id':'e','state':'running','content':'ready\\n> '}", false);
    ru_assert_response(res, 1, "2", "{'id':'e','state':'running','content':'echo: x\\n> '}",
                       false);
    ru_done(r);
}

/* apply + apply + fetch, in the order written, each reading what came
 * after the one before; a last apply that ends the tool answers with its
 * end, and an abort after it has nothing left to do. */
static void actions_on_one_handle_answer_in_the_order_written(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    ru_call_expect(r, "echo", "{'action':'spawn','id':'e'}",
                "{'id':'e','state':'running','content':'ready\\n> '}", false);
    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'echo','arguments':{'action':'apply','id':'e','input':'a\\n'}},"
        "{'id':'2','name':'echo','arguments':{'action':'apply','id':'e','input':'b\\n'}},"
        "{'id':'3','name':'echo','arguments':{'action':'fetch','id':'e'}},"
        "{'id':'4','name':'echo','arguments':{'action':'apply','id':'e','input':'quit\\n'}},"
        "{'id':'5','name':'echo','arguments':{'action':'abort','id':'e'}}]");
    ru_assert_response(res, 0, "1", "{'id':'e','state':'running','content':'echo: a\\n> '}",
                       false);
    ru_assert_response(res, 1, "2", "{'id':'e','state':'running','content':'echo: b\\n> '}",
                       false);
    ru_assert_response(res, 2, "3", "{'id':'e','state':'running','content':''}", false);
    ru_assert_response(res, 3, "4",
                       "{'id':'e','state':'stopped','result':'bye\\n\\n[process ended: exit "
                       "status 0]'}",
                       false);
    ru_assert_text(res, 4, "5", "Handle `e` has stopped, and an earlier answer gave its result",
                   false);
    /* The batch let go of it: the model has its end, and a later call is
     * told so. */
    ru_call_expect_text(r, "echo", "{'action':'fetch','id':'e'}",
                     "Handle `e` has stopped, and an earlier answer gave its result", true);
    ru_done(r);
}

/* spawn + await + abort: the abort waits for the await, which waits for the
 * handle to stop (or for its timeout). */
static void spawn_await_abort_aborts_only_after_the_await(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'nap','arguments':{'action':'spawn','id':'n','ms':300}},"
        "{'id':'2','name':'await','arguments':{'all':['n']}},"
        "{'id':'3','name':'nap','arguments':{'action':'abort','id':'n'}}]");
    ru_assert_response(res, 0, "1", "{'id':'n','state':'running','content':''}", false);
    ru_assert_response(res, 1, "2",
                       "{'completed':[{'id':'n','state':'stopped','result':'slept 300\\n\\n"
                       "[process ended: exit status 0]'}],'pending':[]}",
                       false);
    ru_assert_text(res, 2, "3", "Handle `n` has stopped, and an earlier answer gave its result",
                   false);
    /* With a timeout the await answers first, and the abort then ends the
     * handle still running. */
    res = ru_run_js(r, "["
        "{'id':'1','name':'nap','arguments':{'action':'spawn','id':'m','ms':30000}},"
        "{'id':'2','name':'await','arguments':{'all':['m'],'timeout_secs':0}},"
        "{'id':'3','name':'nap','arguments':{'action':'abort','id':'m'}}]");
    ru_assert_response(res, 1, "2",
                       "{'completed':[],'pending':[{'id':'m','state':'running'}],'timed_out':true}",
                       false);
    ru_assert_response(res, 2, "3",
                       "{'id':'m','state':'stopped','result':'[process ended: aborted]'}", false);
    ru_done(r);
}

/* Awaits change nothing: several on one handle wait together, and the call
 * after them waits for them all. */
static void awaits_on_one_handle_run_together_before_the_next_call(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'nap','arguments':{'action':'spawn','id':'n','ms':300}},"
        "{'id':'2','name':'await','arguments':{'all':['n']}},"
        "{'id':'3','name':'await','arguments':{'any':['n','n']}},"
        "{'id':'4','name':'nap','arguments':{'action':'fetch','id':'n'}}]");
    static const char awaited[] = "{'completed':[{'id':'n','state':'stopped','result':"
                                  "'slept 300\\n\\n[process ended: exit status 0]'}],"
                                  "'pending':[]}";
    ru_assert_response(res, 1, "2", awaited, false);
    ru_assert_response(res, 2, "3", awaited, false);
    ru_assert_text(res, 3, "4", "Handle `n` has stopped, and an earlier answer gave its result",
                   true);
    ru_done(r);
}

/* A spawn that fails: the calls after it on its id say the handle does not
 * exist, and why. */
static void calls_after_a_failed_spawn_say_the_handle_does_not_exist(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    json_t *res = ru_run_js(r, "["
        "{'id':'1','name':'ghost','arguments':{'action':'spawn','id':'g'}},"
        "{'id':'2','name':'ghost','arguments':{'action':'apply','id':'g','input':'x'}},"
        "{'id':'3','name':'nap','arguments':{'action':'spawn','id':'n','ms':'soon'}},"
        "{'id':'4','name':'nap','arguments':{'action':'fetch','id':'n'}}]");
    const char *why = ru_content(res, 0);
    assert_true(ru_is_error(res, 0));
    ru_assert_contains(why, "`ghost` could not run: ");
    char expected[1024];
    snprintf(expected, sizeof(expected), "Handle `g` does not exist: its spawn failed: %s",
             why + strlen("`ghost` could not run: "));
    ru_assert_text(res, 1, "2", expected, true);
    assert_true(ru_is_error(res, 2));
    snprintf(expected, sizeof(expected), "Handle `n` does not exist: its spawn failed: %s",
             ru_content(res, 2));
    ru_assert_text(res, 3, "4", expected, true);
    ru_done(r);
}

/* Calls on other handles do not wait: a fetch on `b` answers while a fetch
 * on `a` still waits for output. */
static void calls_on_different_handles_still_run_at_once(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    ru_call_expect(r, "echo", "{'action':'spawn','id':'a'}",
                "{'id':'a','state':'running','content':'ready\\n> '}", false);
    ru_call_expect(r, "echo", "{'action':'spawn','id':'b'}",
                "{'id':'b','state':'running','content':'ready\\n> '}", false);
    jpt_batch *b = ru_submit(r, "["
        "{'id':'1','name':'echo','arguments':{'action':'fetch','id':'a','wait_secs':600}},"
        "{'id':'2','name':'echo','arguments':{'action':'apply','id':'b','input':'x\\n'}}]");
    assert_true(ru_until_event(r, JPT_EVENT_CALL_DONE, "2", 0));
    assert_false(jpt_batch_done(b));
    json_t *res = ru_results(b);
    ru_assert_response(res, 1, "2", "{'id':'b','state':'running','content':'echo: x\\n> '}",
                       false);
    json_decref(res);
    jpt_batch_cancel(b);
    res = ru_finish(r, b);
    ru_assert_response(res, 0, "1", "{'id':'a','state':'running','content':''}", false);
    ru_done(r);
}

/* A batch cancelled mid-chain: the call under way answers as a cancel
 * makes it, the one waiting its turn never runs and says so. */
static void cancel_mid_chain_ends_the_waiting_calls_unrun(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    ru_call_expect(r, "echo", "{'action':'spawn','id':'e'}",
                "{'id':'e','state':'running','content':'ready\\n> '}", false);
    jpt_batch *b = ru_submit(r, "["
        "{'id':'1','name':'echo','arguments':{'action':'fetch','id':'e','wait_secs':600}},"
        "{'id':'2','name':'echo','arguments':{'action':'apply','id':'e','input':'x\\n'}}]");
    assert_true(jpt_registry_dispatch(r) >= 0); /* the fetch starts and waits */
    jpt_batch_cancel(b);
    json_t *res = ru_finish(r, b);
    ru_assert_response(res, 0, "1", "{'id':'e','state':'running','content':''}", false);
    ru_assert_text(res, 1, "2",
                   "The call `echo` was cancelled before it ran (it was waiting for an earlier "
                   "call on handle `e` to answer)",
                   true);
    /* The apply never ran: the tool read nothing. */
    ru_call_expect(r, "echo", "{'action':'fetch','id':'e'}",
                "{'id':'e','state':'running','content':''}", false);
    ru_done(r);
}

/* Cancelling the first call of a chain lets the next one run. */
static void cancel_of_one_call_lets_the_next_on_its_handle_run(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    ru_call_expect(r, "echo", "{'action':'spawn','id':'e'}",
                "{'id':'e','state':'running','content':'ready\\n> '}", false);
    jpt_batch *b = ru_submit(r, "["
        "{'id':'1','name':'echo','arguments':{'action':'fetch','id':'e','wait_secs':600}},"
        "{'id':'2','name':'echo','arguments':{'action':'apply','id':'e','input':'x\\n'}}]");
    assert_true(jpt_registry_dispatch(r) >= 0);
    assert_int_equal(jpt_batch_cancel_call(b, "1"), JPT_OK);
    json_t *res = ru_finish(r, b);
    ru_assert_response(res, 0, "1", "{'id':'e','state':'running','content':''}", false);
    ru_assert_response(res, 1, "2", "{'id':'e','state':'running','content':'echo: x\\n> '}",
                       false);
    ru_done(r);
}

/* Cancelling a call that waits its turn leaves the one after it in line:
 * it runs once the call before the cancelled one has answered, not at
 * once (to find the handle busy with that call). */
static void cancel_of_a_waiting_call_keeps_the_next_in_its_turn(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    ru_call_expect(r, "echo", "{'action':'spawn','id':'e'}",
                "{'id':'e','state':'running','content':'ready\\n> '}", false);
    jpt_batch *b = ru_submit(r, "["
        "{'id':'1','name':'echo','arguments':{'action':'fetch','id':'e','wait_secs':600}},"
        "{'id':'2','name':'echo','arguments':{'action':'apply','id':'e','input':'x\\n'}},"
        "{'id':'3','name':'echo','arguments':{'action':'apply','id':'e','input':'y\\n'}}]");
    assert_true(jpt_registry_dispatch(r) >= 0); /* the fetch starts and waits */
    assert_int_equal(jpt_batch_cancel_call(b, "2"), JPT_OK);
    assert_true(ru_until_event(r, JPT_EVENT_CALL_DONE, "2", 0));
    while (jpt_registry_dispatch(r) > 0)
        ;
    json_t *res = ru_results(b);
    assert_true(json_is_true(json_object_get(json_array_get(res, 2), "pending")));
    json_decref(res);
    assert_int_equal(jpt_batch_cancel_call(b, "1"), JPT_OK);
    res = ru_finish(r, b);
    ru_assert_response(res, 0, "1", "{'id':'e','state':'running','content':''}", false);
    ru_assert_text(res, 1, "2",
                   "The call `echo` was cancelled before it ran (it was waiting for an earlier "
                   "call on handle `e` to answer)",
                   true);
    ru_assert_response(res, 2, "3", "{'id':'e','state':'running','content':'echo: y\\n> '}",
                       false);
    ru_done(r);
}

/* jpt_batch_set_call_timeout counts from when it is set: a call that
 * waits its turn past it ends unrun, and says so. */
static void call_timeout_covers_the_wait_for_its_turn(void **state)
{
    (void)state;
    jpt_registry *r = order_registry();

    ru_call_expect(r, "echo", "{'action':'spawn','id':'e'}",
                "{'id':'e','state':'running','content':'ready\\n> '}", false);
    jpt_batch *b = ru_submit(r, "["
        "{'id':'1','name':'echo','arguments':{'action':'fetch','id':'e','wait_secs':600}},"
        "{'id':'2','name':'echo','arguments':{'action':'apply','id':'e','input':'x\\n'}}]");
    assert_int_equal(jpt_batch_set_call_timeout(b, "2", 200), JPT_OK);
    assert_true(ru_until_event(r, JPT_EVENT_CALL_DONE, "2", 0));
    json_t *res = ru_results(b);
    ru_assert_text(res, 1, "2",
                   "The call `echo` was stopped: it reached the host's time limit of 200 ms "
                   "before it ran (it was waiting for an earlier call on handle `e` to answer)",
                   true);
    json_decref(res);
    assert_int_equal(jpt_batch_cancel_call(b, "1"), JPT_OK);
    ru_finish(r, b);
    ru_done(r);
}

/* ==== The end of a turn: every handle it touches says what became of it =============== */

/* The notifications taken now, parsed and kept (elapsed_secs dropped: a
 * duration). */
static json_t *notifications(jpt_registry *r)
{
    char *text = NULL;
    json_t *item;
    size_t i;

    assert_int_equal(jpt_registry_take_notifications(r, &text), JPT_OK);
    json_t *list = ru_keep(parse(text));
    jpt_free(text);
    json_array_foreach(list, i, item) {
        assert_true(json_number_value(json_object_get(item, "elapsed_secs")) >= 0);
        json_object_del(item, "elapsed_secs");
    }
    return list;
}

static json_t *end_turn(jpt_registry *r, unsigned flags)
{
    jpt_batch *b = NULL;

    assert_int_equal(jpt_registry_end_turn(r, flags, &b), JPT_OK);
    return ru_finish(r, b);
}

/* Answers every turn-end question: each handle "wait". */
static void answer_wait(jpt_inquiry *q, void *ud)
{
    char answer[256];
    const char *id = ud;

    snprintf(answer, sizeof(answer), "{'handles':[{'id':'%s','action':'wait'}]}", id);
    assert_int_equal(jpt_inquiry_answer(q, js(answer)), JPT_OK);
}

#define SLOW_STEPS "out:working...\\n", "sleep:300", "out:still going\\n", "read"
#define PAST_LIMIT                                                                            \
    "The turn end waited 300 ms (turn_end_timeout_ms) for the handle to stop: it was stopped"

/* A handle answered "wait" that outlives turn_end_timeout_ms: its result is
 * a result of the batch, with its last output and why it ended (it was
 * killed and left nothing). */
static void turn_end_wait_past_the_limit_gives_a_result_with_its_last_output(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(300, pieces("slow", "{'stateful':true}", SLOW_STEPS, NULL),
                                  NULL);
    char seen[4096];

    json_t *resp = act(r, "slow", js("{'action':'spawn','id':'h'}"), NULL);
    snprintf(seen, sizeof(seen), "%s", field(resp, "content"));
    json_decref(resp);
    jpt_registry_set_inquiry_handler(r, answer_wait, "h");
    json_t *res = end_turn(r, 0);
    assert_int_equal(json_array_size(res), 1);
    assert_true(ru_is_error(res, 0));
    resp = ru_response(ru_content(res, 0));
    assert_string_equal(field(resp, "id"), "h");
    assert_string_equal(field(resp, "state"), "stopped");
    const char *error = field(resp, "error");
    strncat(seen, error, sizeof(seen) - strlen(seen) - 1);
    ru_assert_contains(seen, "working...\n");
    ru_assert_contains(seen, "still going\n");
    ru_assert_contains(error, PAST_LIMIT);
    json_decref(resp);
    assert_json(notifications(r), "[]");
    ru_done(r);
}

/* The same under the await policy: a notification. */
static void turn_end_await_past_the_limit_notifies_with_its_last_output(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        300,
        pieces("slow", "{'stateful':true,'spawn':{'lifecycle':{'on_turn_end':'await'}}}",
               SLOW_STEPS, NULL),
        NULL);
    char seen[4096];

    json_t *resp = act(r, "slow", js("{'action':'spawn','id':'h'}"), NULL);
    snprintf(seen, sizeof(seen), "%s", field(resp, "content"));
    json_decref(resp);
    assert_json(end_turn(r, 0), "[]");
    json_t *list = notifications(r);
    assert_int_equal(json_array_size(list), 1);
    json_t *n = json_array_get(list, 0);
    assert_string_equal(json_string_value(json_object_get(n, "id")), "h");
    assert_string_equal(json_string_value(json_object_get(n, "state")), "stopped");
    assert_true(json_is_true(json_object_get(n, "is_error")));
    const char *result = json_string_value(json_object_get(n, "result"));
    strncat(seen, result, sizeof(seen) - strlen(seen) - 1);
    ru_assert_contains(seen, "working...\n");
    ru_assert_contains(seen, "still going\n");
    ru_assert_contains(result, PAST_LIMIT);
    ru_done(r);
}

/* The case: a live `sh` and no inquiry handler, the default
 * turn-end timeout (120 s). Nobody can say to wait for it: it is stopped
 * at once, and its notification says why. */
static void turn_end_without_a_handler_stops_a_live_shell_at_once(void **state)
{
    (void)state;
    jpt_registry *r = registry_with(js("{'tools':[{'name':'sh','stateful':true,"
                                       "'command':['sh']}]}"),
                                    0);

    ru_call_expect(r, "sh", "{'action':'spawn','id':'s'}",
                "{'id':'s','state':'running','content':''}", false);
    ru_call_expect(r, "sh", "{'action':'apply','id':'s','input':'echo hi\\n'}",
                "{'id':'s','state':'running','content':'hi\\n'}", false);
    /* Within WAIT_MS (20 s), far less than the 120 s it used to take. */
    assert_json(end_turn(r, 0), "[]");
    assert_json(notifications(r),
                js("[{'id':'s','tool':'sh','state':'stopped','result':'Error: The turn ended "
                   "with nobody to ask whether to wait for the handle (no inquiry handler): it "
                   "was stopped','is_error':true}]"));
    ru_done(r);
}

/* JPT_TURN_KEEP leaves handles running: each leaves a notification of its
 * state, so that the model knows it is still there. */
static void turn_end_keep_notifies_the_handles_it_leaves_running(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        300,
        pieces("kept", "{'stateful':true,'spawn':{'lifecycle':{'on_turn_end':'abort'}}}",
               "out:a\\n", "read", "out:b\\n", "read", NULL),
        NULL);

    ru_call_expect(r, "kept", "{'action':'spawn','id':'k'}",
                "{'id':'k','state':'running','content':'a\\n'}", false);
    assert_json(end_turn(r, JPT_TURN_KEEP), "[]");
    assert_json(notifications(r), js("[{'id':'k','tool':'kept','state':'running',"
                                     "'output_preview':'a\\n'}]"));
    ru_call_expect(r, "kept", "{'action':'apply','id':'k','input':'x\\n'}",
                "{'id':'k','state':'running','content':'b\\n'}", false);
    ru_done(r);
}

/* A handle that stopped unseen, whose tool asks for no notifications: the
 * turn end removes it, so its result is queued all the same. */
static void turn_end_queues_the_result_of_a_handle_stopped_unseen_whatever_its_flags(
    void **state)
{
    (void)state;
    jpt_registry *r = registry_with(
        js("{'tools':[{'name':'quiet','stateful':true,'command':['sh','-c','echo first; "
           "while [ ! -e go ]; do sleep 0.02; done; echo done'],"
           "'spawn':{'notifications':{'on_success':false,'on_failure':false}}}]}"),
        0);

    ru_call_expect(r, "quiet", "{'action':'spawn','id':'q'}",
                "{'id':'q','state':'running','content':'first\\n'}", false);
    char go[128];
    snprintf(go, sizeof(go), "%s/go", ru_scratch);
    FILE *f = fopen(go, "w");
    assert_non_null(f);
    fclose(f);
    assert_true(ru_until_event(r, JPT_EVENT_STATE, "q", JPT_STATE_STOPPED));
    assert_json(notifications(r), "[]");
    assert_json(end_turn(r, 0), "[]");
    json_t *list = notifications(r);
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "state")),
                        "stopped");
    ru_assert_contains(json_string_value(json_object_get(json_array_get(list, 0), "result")),
                       "[process ended: exit status 0]");
    ru_done(r);
}

/* ==== What the model reads of failed handles and terminals ============================ */

/* A failed handle reads as a failed one-shot run: why, then what it said
 * on stderr and on stdout that the model has not read yet (issue 16: the
 * handle mixed both under "Error:"). */
static void failed_handle_reads_as_a_failed_one_shot_run(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0, pieces("once", NULL, "out:out1\\n", "err:err1\\n", "exit:3", NULL),
        pieces("handle", "{'stateful':true}", "out:out1\\n", "err:err1\\n", "read", "out:out2\\n",
               "err:err2\\n", "exit:3", NULL),
        NULL);

    ru_call_expect_text(r, "once", "{}",
                     "Error: The tool failed (exit status 3).\n\nstderr:\nerr1\n\n\nstdout:\nout1\n",
                     true);
    json_t *resp = act(r, "handle", js("{'action':'spawn','id':'h','wait_secs':5}"), NULL);
    ru_assert_contains(field(resp, "content"), "out1\n");
    ru_assert_contains(field(resp, "content"), "err1\n");
    json_decref(resp);
    bool err = false;
    resp = act(r, "handle", js("{'action':'apply','id':'h','input':'go\\n','wait_secs':5}"),
               &err);
    /* The exit is usually there by the answer; if not, a fetch gets it. */
    char seen[1024] = "";
    while (strcmp(field(resp, "state"), "running") == 0) {
        strncat(seen, field(resp, "content"), sizeof(seen) - strlen(seen) - 1);
        json_decref(resp);
        resp = act(r, "handle", js("{'action':'fetch','id':'h','wait_secs':5}"), &err);
    }
    assert_true(err);
    const char *error = field(resp, "error");
    if (seen[0] == '\0')
        assert_string_equal(error, "Error: The tool failed (exit status 3).\n\nstderr:\nerr2\n"
                                   "\n\nstdout:\nout2\n");
    else
        ru_assert_contains(error, "Error: The tool failed (exit status 3).");
    assert_null(strstr(error, "[process ended"));
    json_decref(resp);
    ru_done(r);
}

#define PY_REPL(name, extra)                                                                  \
    "{'name':'" name "','stateful':true,'pty':true," extra "'command':['python3','-i','-q']}"

/* A REPL on a terminal: "\r\n" reaches the model as "\n"; the terminal
 * echoes the input, unless the definition says "pty_echo": false. */
static void repl_on_a_terminal_reads_with_newlines_and_echo_as_asked(void **state)
{
    (void)state;
    jpt_registry *r = registry_with(
        js("{'tools':[" PY_REPL("py", "") "," PY_REPL("py_quiet", "'pty_echo':false,") "]}"), 0);

    ru_call_expect(r, "py", "{'action':'spawn','id':'p','wait_secs':20}",
                "{'id':'p','state':'running','content':'>>> '}", false);
    ru_call_expect(r, "py", "{'action':'apply','id':'p','input':'print(6 * 7)\\n','wait_secs':20}",
                "{'id':'p','state':'running','content':'print(6 * 7)\\n42\\n>>> '}", false);
    ru_call_expect(r, "py_quiet", "{'action':'spawn','id':'q','wait_secs':20}",
                "{'id':'q','state':'running','content':'>>> '}", false);
    ru_call_expect(r, "py_quiet",
                "{'action':'apply','id':'q','input':'print(6 * 7)\\n','wait_secs':20}",
                "{'id':'q','state':'running','content':'42\\n>>> '}", false);
    ru_done(r);
}

/* Only "\r\n" changes: a lone '\r' (a progress line) stays, and line ends
 * written a byte at a time come out the same. */
static void terminal_line_ends_change_and_nothing_else(void **state)
{
    (void)state;
    jpt_registry *r = registry_of(
        0, pieces("progress", "{'pty':true}", "out:50%\\r100%\\n", "exit:0", NULL),
        pieces("bytes", "{'pty':true}", "bytes:one\\ntwo\\n", "exit:0", NULL),
        pieces("quiet", "{'stateful':true,'pty':true,'pty_echo':false}", "echo", NULL), NULL);

    ru_call_expect_text(r, "progress", "{}", "50%\r100%\n", false);
    for (int i = 0; i < REPEATS; i++)
        ru_call_expect_text(r, "bytes", "{}", "one\ntwo\n", false);
    ru_call_expect(r, "quiet", "{'action':'spawn','id':'q'}",
                "{'id':'q','state':'running','content':''}", false);
    ru_call_expect(r, "quiet", "{'action':'apply','id':'q','input':'abc\\n'}",
                "{'id':'q','state':'running','content':'got: abc\\n'}", false);
    ru_done(r);
}

/* pty_echo is a terminal's: refused without one. */
static void pty_echo_without_a_terminal_is_refused(void **state)
{
    (void)state;
    jpt_registry *r = registry_with(js("{'tools':[]}"), 0);

    assert_int_equal(jpt_registry_load_tools(r, js("{'tools':[{'name':'t','command':['true'],"
                                                   "'pty_echo':false}]}"),
                                             0),
                     JPT_ERR_INVALID);
    ru_assert_contains(jpt_registry_errmsg(r), "'pty_echo' needs 'pty': true");
    ru_done(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(stopped_state_with_a_plain_result_is_the_result),
        T(stopped_state_takes_every_result_form),
        T(stopped_state_with_an_envelope_result_is_its_content),
        T(an_unterminated_line_is_read_once_quiet_for_the_settle_time),
        T(state_line_is_never_shown_raw_however_its_bytes_arrive),
        T(state_line_completed_by_an_apply_answers_it_rendered),
        T(unterminated_lines_are_states_at_the_end_and_prompts_at_once),
        T(spawn_then_apply_acts_on_the_handle_the_spawn_made),
        T(actions_on_one_handle_answer_in_the_order_written),
        T(spawn_await_abort_aborts_only_after_the_await),
        T(awaits_on_one_handle_run_together_before_the_next_call),
        T(calls_after_a_failed_spawn_say_the_handle_does_not_exist),
        T(calls_on_different_handles_still_run_at_once),
        T(cancel_mid_chain_ends_the_waiting_calls_unrun),
        T(cancel_of_one_call_lets_the_next_on_its_handle_run),
        T(cancel_of_a_waiting_call_keeps_the_next_in_its_turn),
        T(call_timeout_covers_the_wait_for_its_turn),
        T(turn_end_wait_past_the_limit_gives_a_result_with_its_last_output),
        T(turn_end_await_past_the_limit_notifies_with_its_last_output),
        T(turn_end_without_a_handler_stops_a_live_shell_at_once),
        T(turn_end_keep_notifies_the_handles_it_leaves_running),
        T(turn_end_queues_the_result_of_a_handle_stopped_unseen_whatever_its_flags),
        T(failed_handle_reads_as_a_failed_one_shot_run),
        T(repl_on_a_terminal_reads_with_newlines_and_echo_as_asked),
        T(terminal_line_ends_change_and_nothing_else),
        T(pty_echo_without_a_terminal_is_refused),
    };
    return TU_RUN(tests);
}
