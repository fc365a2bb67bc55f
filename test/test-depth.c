/* Issue 15 §1: no recursion whose depth a tool or a model controls. Deep
 * input goes in through the public API as a tool or a model would send it
 * (a tool's output, a question's schema, a tool definition, a model's
 * arguments, a VFS tool's messages, a tree of directories, a grep
 * pattern), and the work
 * runs on a thread with a small stack, so that a recursion that follows
 * the input's depth shows as a crash. JSON deeper than JPT_JSON_MAX_DEPTH
 * is refused with a message naming the limit; JSON as deep as the limit
 * is read, checked, converted and written. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry-util.h"

/* The stack of the threads the work runs on (a host's event-loop thread
 * may well be this small; glibc's default is 8 MiB). */
#if defined(__SANITIZE_ADDRESS__)
/* ASan pads every frame with redzones (and UBSan adds its checks): the
 * same recursion needs several times the stack it needs in a plain build. */
#define SMALL_STACK (1024u * 1024u)
#else
#define SMALL_STACK (256u * 1024u)
#endif
#define LIMIT JPT_JSON_MAX_DEPTH

/* ---- Work on a small stack ----------------------------------------------------------- */

/* What the work reports (cmocka's assertions may not run off the test's
 * thread): a status and a text, checked once the thread is joined. */
typedef struct outcome {
    int rc;
    char *text;
    int depth;    /* an input to the work */
    int answered; /* jpt_inquiry_answer's status */
} outcome;

static void on_small_stack(void *(*work)(void *), outcome *o, size_t stack)
{
    pthread_attr_t attr;
    pthread_t t;

    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, stack), 0);
    assert_int_equal(pthread_create(&t, &attr, work, o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
}

/* `depth` copies of open, `inner`, `depth` copies of close. */
static char *nest(int depth, const char *open, const char *inner, const char *close)
{
    size_t lo = strlen(open), li = strlen(inner), lc = strlen(close);
    char *s = malloc((size_t)depth * (lo + lc) + li + 1), *p = s;

    if (s == NULL)
        return NULL;
    for (int i = 0; i < depth; i++, p += lo)
        memcpy(p, open, lo);
    memcpy(p, inner, li);
    p += li;
    for (int i = 0; i < depth; i++, p += lc)
        memcpy(p, close, lc);
    *p = '\0';
    return s;
}

static char *printf_new(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *printf_new(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static void assert_names_the_limit(const char *text)
{
    char expected[64];

    snprintf(expected, sizeof(expected), "nested deeper than %d levels", LIMIT);
    if (text == NULL || strstr(text, expected) == NULL)
        fail_msg("the message does not name the depth limit: %s", text ? text : "(none)");
}

/* ---- Plain JSON: the schema checker's public entry --------------------------------- */

static void *check_value(void *arg)
{
    outcome *o = arg;
    char *value = nest(o->depth, "[", "", "]");

    o->rc = jpt_schema_check("{}", value, &o->text);
    free(value);
    return NULL;
}

static void json_deeper_than_the_limit_is_refused_naming_it(void **state)
{
    (void)state;
    /* 2000: within jansson's own limit (2048), whose parser alone takes
     * some 600 KiB of stack for it. */
    outcome at = {.depth = LIMIT}, past = {.depth = LIMIT + 1}, jansson = {.depth = 2000},
            far = {.depth = 100000};

    outcome *refused[] = {&jansson, &far, &past};
    for (size_t i = 0; i < 3; i++) {
        on_small_stack(check_value, refused[i], SMALL_STACK);
        assert_int_equal(refused[i]->rc, JPT_ERR_INVALID);
        assert_names_the_limit(refused[i]->text);
        jpt_free(refused[i]->text);
    }
    on_small_stack(check_value, &at, SMALL_STACK);
    assert_int_equal(at.rc, JPT_OK);
}

/* ---- Schemas -------------------------------------------------------------------------- */

/* Schemas as deep as the limit allows, each with an answer that passes
 * and one that fails deep down (the failure's message is built on the
 * way back): items in items, anyOf in anyOf, and a deep const. */
static void *check_deep_schemas(void *arg)
{
    outcome *o = arg;
    int n = LIMIT - 1;
    char *items = nest(n, "{\"items\":", "{\"type\":\"integer\"}", "}");
    char *good = nest(n, "[", "1", "]"), *bad = nest(n, "[", "\"x\"", "]");
    char *any = nest((LIMIT - 1) / 2, "{\"anyOf\":[{\"type\":\"string\"},", "{\"type\":\"integer\"}",
                     "]}");
    char *constant = printf_new("{\"const\":%s}", good);
    char *why = NULL;
    int rc = JPT_OK;

    if (items == NULL || good == NULL || bad == NULL || any == NULL || constant == NULL)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK && (rc = jpt_schema_check(items, good, NULL)) == JPT_OK &&
        jpt_schema_check(items, bad, &why) == JPT_ERR_INVALID && why != NULL &&
        (rc = jpt_schema_check(any, "2", NULL)) == JPT_OK &&
        jpt_schema_check(any, "true", NULL) == JPT_ERR_INVALID &&
        (rc = jpt_schema_check(constant, good, NULL)) == JPT_OK &&
        jpt_schema_check(constant, bad, NULL) == JPT_ERR_INVALID)
        rc = JPT_OK;
    else if (rc == JPT_OK)
        rc = JPT_ERR_STATE; /* a verdict was wrong */
    o->rc = rc;
    o->text = why;
    free(items);
    free(good);
    free(bad);
    free(any);
    free(constant);
    return NULL;
}

static void schemas_as_deep_as_the_limit_are_checked(void **state)
{
    (void)state;
    outcome o = {0};

    on_small_stack(check_deep_schemas, &o, SMALL_STACK);
    assert_int_equal(o.rc, JPT_OK);
    assert_non_null(strstr(o.text, "expected integer, got string"));
    jpt_free(o.text);
}

/* ---- A tool definition ------------------------------------------------------------------ */

/* The deepest parameters schema a definition can hold: properties in
 * properties (two levels each), allOf in allOf, under {"tools":[{…}]}. */
static char *deep_definition(int depth, bool stateful)
{
    int props = (depth - 6) / 2; /* 3 levels around it, 3 inside the last */
    char *schema = nest(props, "{\"type\":\"object\",\"properties\":{\"a\":",
                        "{\"allOf\":[{\"type\":\"string\"}]}", "}}");
    char *text = printf_new("{\"tools\":[{\"name\":\"deep\",\"command\":[\"true\"],"
                            "\"stateful\":%s,\"parameters\":%s}]}",
                            stateful ? "true" : "false", schema);
    free(schema);
    return text;
}

static void *load_and_list(void *arg)
{
    static const int dialects[] = {
        JPT_DIALECT_OPENAI,
        JPT_DIALECT_OPENAI | JPT_DIALECT_STRICT,
        JPT_DIALECT_OPENAI_RESPONSES | JPT_DIALECT_STRICT,
        JPT_DIALECT_ANTHROPIC,
        JPT_DIALECT_ANTHROPIC | JPT_DIALECT_ONEOF,
        JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT,
        JPT_DIALECT_GEMINI,
        JPT_DIALECT_MCP,
    };
    outcome *o = arg;
    jpt_registry_options opts = {.size = sizeof(opts), .containment = JPT_CONTAIN_SESSION};
    jpt_registry *r = NULL;

    o->rc = jpt_registry_new(&opts, &r);
    for (int stateful = 0; stateful < 2 && o->rc == JPT_OK; stateful++) {
        char *def = deep_definition(o->depth, stateful);
        o->rc = jpt_registry_load_tools(r, def, JPT_LOAD_REPLACE);
        free(def);
        if (o->rc != JPT_OK) {
            o->text = strdup(jpt_registry_errmsg(r));
            break;
        }
        for (size_t i = 0; i < sizeof(dialects) / sizeof(*dialects) && o->rc == JPT_OK; i++) {
            char *list = NULL;
            o->rc = jpt_registry_tools_json(r, dialects[i], &list);
            jpt_free(list);
        }
    }
    jpt_registry_free(r);
    return NULL;
}

static void a_tool_definition_with_a_deep_schema(void **state)
{
    (void)state;
    outcome at = {.depth = LIMIT}, past = {.depth = LIMIT + 2}, jansson = {.depth = 2000};

    on_small_stack(load_and_list, &jansson, SMALL_STACK);
    assert_int_equal(jansson.rc, JPT_ERR_INVALID);
    assert_names_the_limit(jansson.text);
    free(jansson.text);
    on_small_stack(load_and_list, &at, SMALL_STACK);
    if (at.rc != JPT_OK)
        fail_msg("a definition as deep as the limit: %s (%s)", jpt_status_name(at.rc), at.text);
    on_small_stack(load_and_list, &past, SMALL_STACK);
    assert_int_equal(past.rc, JPT_ERR_INVALID);
    assert_names_the_limit(past.text);
    free(past.text);
}

/* ---- Tools and models through a registry --------------------------------------------- */

/* Submits `calls` and runs the batch; its results' JSON in o->text. */
static void run_calls(jpt_registry *r, const char *calls, outcome *o)
{
    jpt_batch *b = NULL;

    o->rc = jpt_registry_submit(r, calls, &b);
    if (o->rc == JPT_OK)
        o->rc = jpt_registry_wait(r, b, WAIT_MS);
    if (o->rc == JPT_OK)
        o->rc = jpt_batch_results_json(b, &o->text);
    else
        o->text = strdup(jpt_registry_errmsg(r));
    jpt_batch_free(b);
}

/* A tool printing JSON `depth` levels deep (awk writes it, 100 000 deep
 * if asked), and one that prints a question whose schema is as deep as
 * the limit allows; the question is answered as deep. */
static void *tools_print_deep_json(void *arg)
{
    outcome *o = arg;
    char *tools = printf_new(
        "{\"tools\":[{\"name\":\"deep\",\"command\":[\"awk\",\"BEGIN{printf \\\"{\\\\\\\"content\\\\\\\":\\\";"
        "for(i=0;i<%d;i++)printf \\\"[\\\";for(i=0;i<%d;i++)printf \\\"]\\\";print \\\"}\\\"}\"]}]}",
        o->depth, o->depth);
    jpt_registry_options opts = {.size = sizeof(opts), .containment = JPT_CONTAIN_SESSION,
                                 .kill_grace_ms = 200};
    jpt_registry *r = NULL;

    if ((o->rc = jpt_registry_new(&opts, &r)) == JPT_OK &&
        (o->rc = jpt_registry_load_tools(r, tools, 0)) == JPT_OK)
        run_calls(r, "[{\"id\":\"c1\",\"name\":\"deep\",\"arguments\":{}}]", o);
    else
        o->text = strdup(jpt_registry_errmsg(r));
    jpt_registry_free(r);
    free(tools);
    return NULL;
}

static void a_tool_printing_deep_json(void **state)
{
    (void)state;
    /* The envelope {"content": …} is one level. */
    outcome at = {.depth = LIMIT - 1}, far = {.depth = 100000};

    on_small_stack(tools_print_deep_json, &at, SMALL_STACK);
    assert_int_equal(at.rc, JPT_OK);
    json_t *res = parse(at.text);
    assert_false(ru_is_error(res, 0));
    json_decref(res);
    on_small_stack(tools_print_deep_json, &far, SMALL_STACK);
    assert_int_equal(far.rc, JPT_OK);
    /* Too deep to be read as JSON: the model reads it as the text it is. */
    res = parse(far.text);
    assert_false(ru_is_error(res, 0));
    assert_int_equal(strncmp(ru_content(res, 0), "{\"content\":[[[[", 15), 0);
    json_decref(res);
    free(at.text);
    free(far.text);
}

/* A question (RFD 058 envelope) whose schema is items in items, as deep
 * as the tool's output may be; the inquiry handler answers it with a
 * value as deep. */
static void answer_deep(jpt_inquiry *q, void *ud)
{
    outcome *o = ud;
    char *answer = nest(o->depth, "[", "1", "]");

    o->answered = jpt_inquiry_answer(q, answer);
    if (o->answered != JPT_OK)
        jpt_inquiry_cancel(q, "the answer was refused");
    free(answer);
}

static void *a_question_with_a_deep_schema_run(void *arg)
{
    outcome *o = arg;
    /* {"_meta":…,"content":[{"type":"question","id":"q","text":"?","schema":S}]}:
     * the schema starts four levels down. */
    int n = LIMIT - 5;
    char *schema = nest(n, "{\"items\":", "{\"type\":\"integer\"}", "}");
    char *out = printf_new("{\"_meta\":{\"computer.jp/status\":\"waiting\"},\"content\":"
                           "[{\"type\":\"question\",\"id\":\"q\",\"text\":\"?\",\"schema\":%s}]}",
                           schema);
    char *path = printf_new("/tmp/jpt-test-depth-%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(out, f);
    fclose(f);
    char *tools = printf_new("{\"tools\":[{\"name\":\"ask\",\"command\":[\"cat\",\"%s\"]}]}", path);
    jpt_registry_options opts = {.size = sizeof(opts), .containment = JPT_CONTAIN_SESSION,
                                 .kill_grace_ms = 200, .max_inquiry_rounds = 1};
    jpt_registry *r = NULL;

    o->depth = n - 1;
    if ((o->rc = jpt_registry_new(&opts, &r)) == JPT_OK &&
        (o->rc = jpt_registry_load_tools(r, tools, 0)) == JPT_OK) {
        jpt_registry_set_inquiry_handler(r, answer_deep, o);
        run_calls(r, "[{\"id\":\"c1\",\"name\":\"ask\",\"arguments\":{}}]", o);
    }
    jpt_registry_free(r);
    unlink(path);
    free(path);
    free(tools);
    free(out);
    free(schema);
    return NULL;
}

static void a_question_with_a_deep_schema(void **state)
{
    (void)state;
    outcome o = {0};

    on_small_stack(a_question_with_a_deep_schema_run, &o, SMALL_STACK);
    assert_int_equal(o.rc, JPT_OK);
    assert_int_equal(o.answered, JPT_OK);
    free(o.text);
}

/* A model's arguments as deep as the limit allows (the arguments string
 * of an OpenAI call is JSON of its own), written into the tool's command
 * line; and deeper, refused naming the limit. */
static void *model_sends_deep_arguments(void *arg)
{
    outcome *o = arg;
    char *value = nest(o->depth - 1, "[", "1.5", "]");
    char *args = printf_new("{\\\"x\\\":%s}", value);
    char *calls = printf_new("[{\"id\":\"c1\",\"type\":\"function\",\"function\":"
                             "{\"name\":\"show\",\"arguments\":\"%s\"}}]",
                             args);
    jpt_registry_options opts = {.size = sizeof(opts), .containment = JPT_CONTAIN_SESSION,
                                 .kill_grace_ms = 200};
    jpt_registry *r = NULL;

    if ((o->rc = jpt_registry_new(&opts, &r)) == JPT_OK &&
        (o->rc = jpt_registry_load_tools(
             r,
             "{\"tools\":[{\"name\":\"show\",\"command\":[\"printf\",\"%s\","
             "\"{{arguments.x}}\"],\"parameters\":{\"type\":\"object\",\"properties\":"
             "{\"x\":{\"type\":\"array\",\"items\":{\"type\":[\"array\",\"number\"]}}}}}]}",
             0)) == JPT_OK)
        run_calls(r, calls, o);
    jpt_registry_free(r);
    free(calls);
    free(args);
    free(value);
    return NULL;
}

static void deep_arguments_from_a_model(void **state)
{
    (void)state;
    outcome at = {.depth = LIMIT}, past = {.depth = LIMIT + 1}, jansson = {.depth = 2000};

    json_t *res;
    outcome *refused[] = {&jansson, &past};
    for (size_t i = 0; i < 2; i++) {
        on_small_stack(model_sends_deep_arguments, refused[i], SMALL_STACK);
        assert_int_equal(refused[i]->rc, JPT_OK);
        res = parse(refused[i]->text);
        assert_true(ru_is_error(res, 0));
        assert_names_the_limit(ru_content(res, 0));
        json_decref(res);
        free(refused[i]->text);
    }
    on_small_stack(model_sends_deep_arguments, &at, SMALL_STACK);
    assert_int_equal(at.rc, JPT_OK);
    res = parse(at.text);
    assert_false(ru_is_error(res, 0));
    char *expected = nest(LIMIT - 1, "[", "1.5", "]");
    assert_string_equal(ru_content(res, 0), expected);
    free(expected);
    json_decref(res);
    free(at.text);
}

/* ---- A VFS tool --------------------------------------------------------------------------- */

/* A VFS tool on a pair of pipes sends a result whose structuredContent is
 * as deep as a message may be: the host reads it into a state, which is
 * written as JSON and rendered. */
static void *vfs_tool_sends_deep_result(void *arg)
{
    outcome *o = arg;
    jpt_files *files = NULL;
    jpt_vfs_host_options opts = {.size = sizeof(opts), .request_timeout_ms = -1};
    jpt_vfs_host *h = NULL;
    int to_host[2], to_tool[2];
    /* {"jsonrpc","method","params":{"content":[],"structuredContent":{"a":S}}} */
    char *deep = nest(o->depth - 3, "[", "", "]");
    char *line = printf_new("{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":{\"content\":[],"
                            "\"structuredContent\":{\"a\":%s}}}\n",
                            deep);

    if (pipe2(to_host, O_CLOEXEC) < 0 || pipe2(to_tool, O_CLOEXEC) < 0) {
        o->rc = JPT_ERR_IO;
        return NULL;
    }
    if ((o->rc = jpt_files_new_memory(&files)) == JPT_OK) {
        opts.files = files;
        o->rc = jpt_vfs_host_new(&opts, &h);
        jpt_files_free(files);
    }
    if (o->rc == JPT_OK)
        o->rc = jpt_vfs_host_attach(h, to_host[0], to_tool[1], "{\"name\":\"deep\"}");
    /* The whole line fits the pipe's buffer, and the tool's end follows. */
    if (o->rc == JPT_OK && write(to_host[1], line, strlen(line)) != (ssize_t)strlen(line))
        o->rc = JPT_ERR_IO;
    close(to_host[1]);
    if (o->rc == JPT_OK)
        o->rc = jpt_vfs_host_run(h, WAIT_MS);
    jpt_state *st = NULL;
    if (o->rc == JPT_OK && (o->rc = jpt_vfs_host_state(h, &st)) == JPT_OK) {
        char *json = NULL, *text = NULL;
        if ((o->rc = jpt_state_to_json(st, JPT_JSON_ENVELOPE, JPT_JSON_PRETTY, &json)) == JPT_OK)
            o->rc = jpt_state_render(st, NULL, &text);
        o->text = json != NULL ? strdup(json) : NULL;
        jpt_free(json);
        jpt_free(text);
        jpt_state_unref(st);
    }
    jpt_vfs_host_free(h);
    close(to_tool[0]);
    free(line);
    free(deep);
    return NULL;
}

static void a_vfs_tool_sends_a_deep_result(void **state)
{
    (void)state;
    outcome o = {.depth = LIMIT};

    on_small_stack(vfs_tool_sends_deep_result, &o, SMALL_STACK);
    assert_int_equal(o.rc, JPT_OK);
    assert_non_null(strstr(o.text, "\"structuredContent\""));
    free(o.text);
}

/* ---- A tree of directories ------------------------------------------------------------- */

/* A tool may nest directories as deep as a path's 4095 bytes allow: 2047
 * in the memory backend, freed with it. */
#ifndef TREE_STACK
#define TREE_STACK (64u * 1024u)
#endif
static void *deep_directories(void *arg)
{
    outcome *o = arg;
    jpt_files *f = NULL;
    char *path = nest(2046, "a/", "f", "");
    char *result = NULL;

    if ((o->rc = jpt_files_new_memory(&f)) == JPT_OK &&
        (o->rc = jpt_files_write(f, path, "x", 1)) == JPT_OK)
        o->rc = jpt_files_grep(f, "{\"pattern\":\"x\"}", &result);
    jpt_free(result);
    jpt_files_free(f);
    free(path);
    return NULL;
}

static void a_tree_of_directories_as_deep_as_paths_allow(void **state)
{
    (void)state;
    outcome o = {0};

    /* Smaller still: a frame per directory would need more than this. */
    on_small_stack(deep_directories, &o, TREE_STACK);
    assert_int_equal(o.rc, JPT_OK);
}

/* ---- fs.grep's pattern ------------------------------------------------------------------ */

/* pcre2 compiles a group with a stack frame per level: a pattern nests at
 * most JPT_VFS_GREP_NEST_LIMIT groups (pcre2's own 250 took some 150 KiB). */
static void *grep_nested_groups(void *arg)
{
    outcome *o = arg;
    char *pattern = nest(o->depth, "(", "x", ")");
    char *params = printf_new("{\"pattern\":\"%s\"}", pattern);
    jpt_files *f = NULL;
    char *result = NULL;

    if ((o->rc = jpt_files_new_memory(&f)) == JPT_OK &&
        (o->rc = jpt_files_write(f, "a.txt", "x\n", 2)) == JPT_OK) {
        o->rc = jpt_files_grep(f, params, &result);
        o->text = strdup(o->rc == JPT_OK ? result : jpt_files_errmsg(f));
    }
    jpt_free(result);
    jpt_files_free(f);
    free(params);
    free(pattern);
    return NULL;
}

static void a_grep_pattern_nests_groups_up_to_its_limit(void **state)
{
    (void)state;
    outcome past = {.depth = 250}, at = {.depth = JPT_VFS_GREP_NEST_LIMIT};

    on_small_stack(grep_nested_groups, &past, SMALL_STACK / 2);
    assert_int_equal(past.rc, JPT_ERR_INVALID);
    assert_non_null(strstr(past.text, "parentheses are too deeply nested (at most 64 levels)"));
    on_small_stack(grep_nested_groups, &at, SMALL_STACK / 2);
    assert_int_equal(at.rc, JPT_OK);
    assert_non_null(strstr(at.text, "\"content\":\"x\""));
    free(past.text);
    free(at.text);
}

/* ---- Cgroups a tool made ---------------------------------------------------------------- */

/* A tool that can write its cgroup may nest cgroups in it; the registry
 * removes them all, deepest first, without recursion (lib/process). Each
 * level costs the kernel more to make, so twenty stand for any depth. */
static void *nested_cgroups(void *arg)
{
    outcome *o = arg;
    jpt_registry_options opts = {.size = sizeof(opts), .containment = JPT_CONTAIN_CGROUP,
                                 .kill_grace_ms = 200};
    jpt_registry *r = NULL;

    o->rc = jpt_registry_new(&opts, &r);
    if (o->rc != JPT_OK)
        return NULL;
    static const char script[] =
        "cd \"$(awk '$3==\"cgroup2\"{print $2; exit}' /proc/mounts)"
        "$(sed -n 's/^0:://p' /proc/self/cgroup)\" && i=0 && while [ $i -lt 20 ]; do "
        "mkdir x && cd x || exit 1; i=$((i+1)); done && echo nested $i";
    json_t *def = json_pack("{s:[{s:s, s:[s, s, s]}]}", "tools", "name", "nest", "command", "sh",
                            "-c", script);
    char *tools = json_dumps(def, 0);
    o->rc = jpt_registry_load_tools(r, tools, 0);
    free(tools);
    json_decref(def);
    if (o->rc == JPT_OK)
        run_calls(r, "[{\"id\":\"c1\",\"name\":\"nest\",\"arguments\":{}}]", o);
    jpt_registry_free(r);
    return NULL;
}

/* The host's cgroup directory, where the registry makes the tools'. */
static char *host_cgroup_dir(void)
{
    char mount[256] = "", line[512], *cgroup = NULL;
    FILE *f = fopen("/proc/mounts", "re");

    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "%*s %255s cgroup2", mount) == 1 && strstr(line, " cgroup2 ") != NULL)
            break;
    if (f != NULL)
        fclose(f);
    f = fopen("/proc/self/cgroup", "re");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = '\0';
            cgroup = printf_new("%s%s", mount, line + 3);
        }
    if (f != NULL)
        fclose(f);
    return cgroup;
}

static void cgroups_a_tool_nested_are_removed(void **state)
{
    (void)state;
    outcome o = {0};

    on_small_stack(nested_cgroups, &o, SMALL_STACK);
    if (o.rc == JPT_ERR_UNSUPPORTED)
        skip(); /* no cgroup v2 this host may write */
    assert_int_equal(o.rc, JPT_OK);
    json_t *res = parse(o.text);
    if (ru_is_error(res, 0))
        fail_msg("the tool could not nest its cgroups: %s", ru_content(res, 0));
    assert_string_equal(ru_content(res, 0), "nested 20\n");
    json_decref(res);
    free(o.text);
    /* None of this process's cgroups is left. */
    char *dir = host_cgroup_dir(), prefix[64];
    assert_non_null(dir);
    snprintf(prefix, sizeof(prefix), "jptool-%d-", (int)getpid());
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            fail_msg("cgroup %s/%s is left behind", dir, e->d_name);
    closedir(d);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_deeper_than_the_limit_is_refused_naming_it),
        cmocka_unit_test(schemas_as_deep_as_the_limit_are_checked),
        cmocka_unit_test(a_tool_definition_with_a_deep_schema),
        cmocka_unit_test(a_tool_printing_deep_json),
        cmocka_unit_test(a_question_with_a_deep_schema),
        cmocka_unit_test(deep_arguments_from_a_model),
        cmocka_unit_test(a_vfs_tool_sends_a_deep_result),
        cmocka_unit_test(a_tree_of_directories_as_deep_as_paths_allow),
        cmocka_unit_test(a_grep_pattern_nests_groups_up_to_its_limit),
        cmocka_unit_test(cgroups_a_tool_nested_are_removed),
    };

    return TU_RUN(tests);
}
