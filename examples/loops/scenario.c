/* The agent turn the event-loop examples run; see scenario.h. */
#include "scenario.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* A shell the model drives, and a build that takes a second. */
static const char tools[] =
    "{\"tools\":["
    "{\"name\":\"shell\",\"description\":\"A POSIX shell\",\"stateful\":true,"
    "\"command\":[\"sh\"]},"
    "{\"name\":\"build\",\"description\":\"Builds the project\",\"stateful\":true,"
    "\"command\":[\"sh\",\"-c\",\"echo compiling; sleep 1; echo built\"]}]}";

/* The tool calls of the model's three messages. The apply's wait_secs
 * gives the shell time to answer, however slow the machine. */
static const char *const messages[] = {
    "[{\"id\":\"c1\",\"name\":\"shell\",\"arguments\":{\"action\":\"spawn\",\"id\":\"sh\"}}]",
    "[{\"id\":\"c2\",\"name\":\"shell\",\"arguments\":{\"action\":\"apply\",\"id\":\"sh\","
    "\"input\":\"echo hello from the loop\\n\",\"wait_secs\":10}}]",
    "[{\"id\":\"c3\",\"name\":\"build\",\"arguments\":{\"action\":\"spawn\",\"id\":\"b\"}},"
    "{\"id\":\"c4\",\"name\":\"await\",\"arguments\":{\"all\":[\"b\"]}}]",
};
#define MESSAGES ((int)(sizeof(messages) / sizeof(messages[0])))

/* What the await reports of the build, after the output the model saw. */
static const char build_end[] = "built\n\n[process ended: exit status 0]";

static int fail(scenario *s, const char *what, const char *detail)
{
    fprintf(stderr, "%s: message %d: %s%s%s\n", s->name, s->message, what,
            detail != NULL ? ": " : "", detail != NULL ? detail : "");
    s->failed = 1;
    return -1;
}

static void show_events(scenario *s)
{
    static const char *const names[] = {"", "call_done", "batch_done", "output", "state",
                                        "shutdown"};
    jpt_event *e;

    while (jpt_registry_next_event(s->r, &e) == JPT_OK) {
        int type = jpt_event_type(e);
        const char *id = jpt_event_call_id(e) != NULL ? jpt_event_call_id(e)
                                                      : jpt_event_handle_id(e);

        printf("  event %s%s%s\n", type >= 1 && type <= 5 ? names[type] : "?",
               id != NULL ? " " : "", id != NULL ? id : "");
        jpt_event_free(e);
    }
}

static int submit(scenario *s)
{
    const char *calls = messages[s->message++];

    printf("message %d: %s\n", s->message, calls);
    if (jpt_registry_submit(s->r, calls, &s->batch) != JPT_OK)
        return fail(s, "submit failed", jpt_registry_errmsg(s->r));
    return 1;
}

/* The response of result `i` (a handle's {"id","state",...} or an await's
 * {"completed","pending"}), parsed; NULL after a failure. */
static json_t *response(scenario *s, json_t *results, size_t i)
{
    json_t *result = json_array_get(results, i);
    const char *content = json_string_value(json_object_get(result, "content"));
    json_t *parsed;

    if (content == NULL || !json_is_false(json_object_get(result, "is_error"))) {
        fail(s, "expected a result that is not an error", content);
        return NULL;
    }
    if ((parsed = json_loads(content, 0, NULL)) == NULL)
        fail(s, "the response is not JSON", content);
    return parsed;
}

static int expect_equal(scenario *s, json_t *got, const char *expected_json)
{
    json_t *expected = json_loads(expected_json, 0, NULL);
    int equal = got != NULL && expected != NULL && json_equal(got, expected);

    json_decref(expected);
    return equal ? 0 : fail(s, "expected", expected_json);
}

static int string_is(json_t *object, const char *key, const char *value)
{
    const char *s = json_string_value(json_object_get(object, key));

    return s != NULL && strcmp(s, value) == 0;
}

/* The await's answer: the build completed, the output the model had not
 * seen yet (RFD 037), and nothing pending. What the spawn's answer showed
 * ("compiling") depends on the machine's speed, so only the end is fixed. */
static int expect_build_awaited(scenario *s, json_t *got)
{
    json_t *completed = json_object_get(got, "completed");
    json_t *build = json_array_get(completed, 0);
    const char *result = json_string_value(json_object_get(build, "result"));
    size_t n = result != NULL ? strlen(result) : 0, m = strlen(build_end);

    if (json_array_size(completed) != 1 || !string_is(build, "id", "b") ||
        !string_is(build, "state", "stopped") || n < m ||
        strcmp(result + n - m, build_end) != 0 ||
        !json_is_array(json_object_get(got, "pending")) ||
        json_array_size(json_object_get(got, "pending")) != 0)
        return fail(s, "expected the build completed, ending with", build_end);
    return 0;
}

static int check(scenario *s, const char *results_json)
{
    json_t *results = json_loads(results_json, 0, NULL);
    json_t *got = NULL;
    int rc = -1;

    if (results == NULL)
        return fail(s, "the results are not JSON", results_json);
    switch (s->message) {
    case 1:
        if ((got = response(s, results, 0)) != NULL)
            rc = expect_equal(s, got, "{\"id\":\"sh\",\"state\":\"running\",\"content\":\"\"}");
        break;
    case 2:
        if ((got = response(s, results, 0)) != NULL)
            rc = expect_equal(s, got,
                              "{\"id\":\"sh\",\"state\":\"running\","
                              "\"content\":\"hello from the loop\\n\"}");
        break;
    default:
        if ((got = response(s, results, 1)) != NULL)
            rc = expect_build_awaited(s, got);
        break;
    }
    json_decref(got);
    json_decref(results);
    return rc;
}

int scenario_begin(scenario *s, const char *name)
{
    *s = (scenario){.name = name};
    if (jpt_registry_new(NULL, &s->r) != JPT_OK) {
        fprintf(stderr, "%s: cannot make a registry\n", name);
        return -1;
    }
    if (jpt_registry_load_tools(s->r, tools, 0) != JPT_OK)
        return fail(s, "load_tools failed", jpt_registry_errmsg(s->r));
    return submit(s) < 0 ? -1 : 0;
}

int scenario_step(scenario *s)
{
    int rc;

    show_events(s);
    if (s->batch != NULL) {
        char *results;

        if (!jpt_batch_done(s->batch))
            return 1;
        if (jpt_batch_results_json(s->batch, &results) != JPT_OK)
            return fail(s, "cannot read the results", NULL);
        printf("results %d: %s\n", s->message, results);
        rc = check(s, results);
        jpt_free(results);
        jpt_batch_free(s->batch);
        s->batch = NULL;
        if (rc < 0)
            return -1;
        if (s->message < MESSAGES)
            return submit(s);
        printf("the turn is over: shutting down\n");
    }
    /* Ends the shell without blocking the loop; JPT_OK once every tool
     * process is reaped (the "shutdown" event is then queued). */
    rc = jpt_registry_shutdown(s->r);
    if (rc == JPT_ERR_AGAIN)
        return 1;
    show_events(s);
    return rc == JPT_OK ? 0 : fail(s, "shutdown failed", jpt_strerror(rc));
}

int scenario_end(scenario *s, int rc)
{
    if (rc < 0 && !s->failed)
        fprintf(stderr, "%s: the loop stopped: %s\n", s->name, jpt_strerror(rc));
    jpt_batch_free(s->batch);
    jpt_registry_free(s->r);
    return rc == 0 && !s->failed ? 0 : 1;
}
