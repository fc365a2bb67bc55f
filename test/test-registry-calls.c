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

static char scratch[64];
static jpt_registry *current;

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
    (void)state;
    snprintf(scratch, sizeof(scratch), "/tmp/jpt-calls-XXXXXX");
    if (mkdtemp(scratch) == NULL)
        return -1;
    current = NULL;
    warned.count = 0;
    warned.last[0] = '\0';
    jpt_set_log(on_log, NULL, JPT_LOG_WARNING);
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    jpt_registry_free(current);
    current = NULL;
    jpt_set_log(NULL, NULL, 0);
    ru_release_kept();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
    return system(cmd) == 0 ? 0 : -1;
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

static jpt_registry *registry_with(const char *tools_json, int turn_end_ms)
{
    jpt_registry_options o = {sizeof(o), .root = scratch, .kill_grace_ms = 300,
                              .drain_ms = 100, .settle_ms = 150,
                              .turn_end_timeout_ms = turn_end_ms};
    current = ru_registry_with(&o, tools_json);
    return current;
}

static void done(jpt_registry *r)
{
    assert_ptr_equal(r, current);
    jpt_registry_free(r);
    current = NULL;
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

/* A registry of the definitions of a NULL-terminated list. */
static jpt_registry *registry_of(int turn_end_ms, json_t *first, ...)
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
    jpt_registry *r = registry_with(text, turn_end_ms);
    free(text);
    return r;
}

/* One call, its content compared as JSON. */
static void call_expect(jpt_registry *r, const char *tool, const char *args_js,
                        const char *content_js, bool is_error)
{
    bool err = !is_error;
    char *content = ru_call(r, tool, js(args_js), &err);

    tu_assert_json_equal(content, js(content_js));
    assert_int_equal(err, is_error);
    free(content);
}

static void call_expect_text(jpt_registry *r, const char *tool, const char *args_js,
                             const char *text, bool is_error)
{
    bool err = !is_error;
    char *content = ru_call(r, tool, js(args_js), &err);

    assert_string_equal(content, text);
    assert_int_equal(err, is_error);
    free(content);
}

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

    call_expect(r, "git", "{'action':'spawn','id':'staging','wait_secs':5}",
                "{'id':'staging','state':'stopped','result':'Staged 3 hunks.'}", false);
    call_expect_text(r, "git_once", "{}", "Staged 3 hunks.", false);
    assert_int_equal(warned.count, 0);
    done(r);
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

    call_expect_text(r, "ok", "{}", "fine", false);
    call_expect_text(r, "err", "{}", "Error: broke", true);
    call_expect_text(r, "blocks", "{}", "a\n\nb", false);
    call_expect_text(r, "sketch", "{}", "Error: boom", true);
    assert_int_equal(warned.count, 0);
    done(r);
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
    done(r);
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
        call_expect(r, "half", "{'action':'spawn','id':'h'}",
                    "{'id':'h','state':'running','content':''}", false);
        call_expect(r, "half", "{'action':'apply','id':'h','input':'go\\n'}",
                    "{'id':'h','state':'waiting','content':'Confirm?\\n\\n" QUESTION_JSON "'}",
                    false);
        call_expect(r, "half", "{'action':'abort','id':'h'}",
                    "{'id':'h','state':'stopped','result':'[aborted]'}", false);
    }
    done(r);
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

    call_expect(r, "last", "{'action':'spawn','id':'l','wait_secs':5}",
                "{'id':'l','state':'stopped','result':'done'}", false);
    call_expect(r, "prompt", "{'action':'spawn','id':'p'}",
                "{'id':'p','state':'running','content':'> '}", false);
    call_expect(r, "prompt", "{'action':'apply','id':'p','input':'go\\n'}",
                "{'id':'p','state':'running','content':"
                "'{\\\"type\\\":\\\"running\\\",\\\"content\\\":\\\"inner\\\"}\\n'}",
                false);
    call_expect(r, "prompt", "{'action':'abort','id':'p'}",
                "{'id':'p','state':'stopped','result':'[process ended: aborted]'}", false);
    done(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(stopped_state_with_a_plain_result_is_the_result),
        T(stopped_state_takes_every_result_form),
        T(state_line_is_never_shown_raw_however_its_bytes_arrive),
        T(state_line_completed_by_an_apply_answers_it_rendered),
        T(unterminated_lines_are_states_at_the_end_and_prompts_at_once),
    };
    return TU_RUN(tests);
}
