/* The registry's API at its edges (registry.h): the tool lists models see
 * (RFD 009 "Schema generation for stateful tools"), loading definitions,
 * creating a registry, builtin tools, events, driving the loop, and the
 * state file that lets a later process reap orphans. */
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry-util.h"

/* ---- Helpers ---------------------------------------------------------------------- */

static json_t *tools_doc(jpt_registry *r, int dialect)
{
    char *text = NULL;

    assert_int_equal(jpt_registry_tools_json(r, dialect, &text), JPT_OK);
    assert_non_null(text);
    json_t *doc = parse(text);
    jpt_free(text);
    return doc;
}

/* The schema that the list in `dialect` gives tool `name`; new reference. */
static json_t *listed_schema(jpt_registry *r, int dialect, const char *name)
{
    int base = dialect & 0xff;
    json_t *doc = tools_doc(r, dialect);
    json_t *list = base == JPT_DIALECT_GEMINI ? json_object_get(doc, "functionDeclarations")
                   : base == JPT_DIALECT_MCP  ? json_object_get(doc, "tools")
                                              : doc;
    const char *key = base == JPT_DIALECT_ANTHROPIC ? "input_schema"
                      : base == JPT_DIALECT_MCP     ? "inputSchema"
                                                    : "parameters";
    json_t *entry, *found = NULL;
    size_t i;

    json_array_foreach(list, i, entry) {
        json_t *e = base == JPT_DIALECT_OPENAI ? json_object_get(entry, "function") : entry;
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n != NULL && strcmp(n, name) == 0)
            found = json_incref(json_object_get(e, key));
    }
    json_decref(doc);
    if (found == NULL)
        fail_msg("no schema for '%s' in dialect %d", name, dialect);
    return found;
}

/* The loaded tools' names, comma-separated, in list order. */
static void tool_names(jpt_registry *r, char *out, size_t n)
{
    json_t *doc = tools_doc(r, JPT_DIALECT_ANTHROPIC);
    json_t *entry;
    size_t i, len = 0;

    out[0] = '\0';
    json_array_foreach(doc, i, entry)
        len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s", i ? "," : "",
                                json_string_value(json_object_get(entry, "name")));
    json_decref(doc);
}

/* Field 22 of /proc/<pid>/stat: the start time in clock ticks since boot. */
static unsigned long long start_time_of(pid_t pid)
{
    char path[64], buf[1024];
    unsigned long long start = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (ru_read_text(path, buf, sizeof(buf)) <= 0)
        return 0;
    /* The command name (field 2) may hold spaces; fields 3… follow the last ')'. */
    char *p = strrchr(buf, ')');
    for (int f = 3; p != NULL && f <= 22; f++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p, " %llu", &start) != 1)
        return 0;
    return start;
}

/* A process of our own, in its own session, as a crashed host leaves one. */
static pid_t start_orphan(void)
{
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        setsid();
        execl(TOOL("sleep-ms"), "sleep-ms", "10000", (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* A temporary directory with a state file path in it. */
typedef struct scratch {
    char dir[64];
    char file[96];
} scratch;

static void scratch_make(scratch *s)
{
    snprintf(s->dir, sizeof(s->dir), "/tmp/jpt-api-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->file, sizeof(s->file), "%s/children", s->dir);
}

static void scratch_remove(scratch *s)
{
    unlink(s->file);
    rmdir(s->dir);
}

/* ---- Schemas (RFD 009) ------------------------------------------------------------ */

#define GIT_PARAMETERS                                                                     \
    "{'type':'object','properties':{'command':{'enum':['stage','commit','rebase']},"      \
    "'args':{'type':'array','items':{'type':'string'}}},'required':['command']}"
#define CARGO_PARAMETERS "{'type':'object','properties':{'package':{'type':'string'}}}"

/* RFD 009's two example tools: git with every action, cargo_check without apply. */
static const char rfd_tools[] =
    "{'tools':["
    "{'name':'git','description':'Interactive git','stateful':true,"
    " 'command':['git','{{arguments.command}}'],'parameters':" GIT_PARAMETERS "},"
    "{'name':'cargo_check','description':'Check a Rust package','stateful':true,"
    " 'actions':['fetch','abort'],'command':['cargo','check'],"
    " 'parameters':" CARGO_PARAMETERS "}"
    "]}";

#define ID_DESCRIPTION "Handle ID for this tool instance. Must be unique across active handles."
#define WAIT_SECS                                                                          \
    "'wait_secs':{'type':'integer','minimum':0,'description':'Wait up to this many "      \
    "seconds for the handle to print or stop before answering (default: answer once "     \
    "output settles).'}"

/* RFD 009, "How the assistant interacts with stateful tools": the example
 * schema for git, verbatim, plus the optional wait_secs of spawn, fetch and
 * apply; JPT_DIALECT_ONEOF asks for it. */
#define RFD_GIT_SCHEMA                                                                     \
    "{'type':'object','oneOf':["                                                           \
    "{'properties':{'action':{'const':'spawn'},"                                           \
    "'id':{'type':'string','description':'" ID_DESCRIPTION "'},"                           \
    "'command':{'enum':['stage','commit','rebase']},"                                      \
    "'args':{'type':'array','items':{'type':'string'}}," WAIT_SECS "},"                    \
    "'required':['action','id','command']},"                                               \
    "{'properties':{'action':{'const':'fetch'},'id':{'type':'string'}," WAIT_SECS "},"     \
    "'required':['action','id']},"                                                         \
    "{'properties':{'action':{'const':'apply'},'id':{'type':'string'},'input':{},"         \
    WAIT_SECS "},'required':['action','id','input']},"                                     \
    "{'properties':{'action':{'const':'abort'},'id':{'type':'string'}},"                   \
    "'required':['action','id']}]}"

/* … and for cargo_check. */
#define RFD_CARGO_SCHEMA                                                                   \
    "{'type':'object','oneOf':["                                                           \
    "{'properties':{'action':{'const':'spawn'},"                                           \
    "'id':{'type':'string','description':'" ID_DESCRIPTION "'},"                           \
    "'package':{'type':'string'}," WAIT_SECS "},"                                          \
    "'required':['action','id']},"                                                         \
    "{'properties':{'action':{'const':'fetch'},'id':{'type':'string'}," WAIT_SECS "},"     \
    "'required':['action','id']},"                                                         \
    "{'properties':{'action':{'const':'abort'},'id':{'type':'string'}},"                   \
    "'required':['action','id']}]}"

static void git_schema_is_rfd_009s_example(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *schema = listed_schema(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_ONEOF, "git");

    assert_json(schema, js(RFD_GIT_SCHEMA));
    json_decref(schema);
    jpt_registry_free(r);
}

static void cargo_check_schema_is_rfd_009s_example(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *schema = listed_schema(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_ONEOF, "cargo_check");

    assert_json(schema, js(RFD_CARGO_SCHEMA));
    json_decref(schema);
    jpt_registry_free(r);
}


/* RFD 037, "Schema availability": with a stateful tool the list ends with
 * await; the entry is taken off so the tests below see the RFD 009 tools. */
static json_t *without_await(json_t *list)
{
    json_t *last = json_array_get(list, json_array_size(list) - 1);
    json_t *fn = json_object_get(last, "function");
    const char *name = json_string_value(json_object_get(fn != NULL ? fn : last, "name"));

    assert_non_null(name);
    assert_string_equal(name, "await");
    json_array_remove(list, json_array_size(list) - 1);
    return list;
}

static void await_is_listed_with_stateful_tools_as_rfd_037_gives_it(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *doc = tools_doc(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_ONEOF);
    json_t *entry = json_array_get(doc, json_array_size(doc) - 1);
    json_t *expected = parse(ru_await_schema);

    assert_string_equal(json_string_value(json_object_get(entry, "name")), "await");
    assert_string_equal(json_string_value(json_object_get(entry, "description")),
                        ru_await_description);
    assert_true(json_equal(json_object_get(entry, "input_schema"), expected));
    json_decref(doc);
    /* By default the anyOf goes (Anthropic refuses it at the top level);
     * the rule is checked at call time. */
    doc = tools_doc(r, JPT_DIALECT_ANTHROPIC);
    entry = json_array_get(doc, json_array_size(doc) - 1);
    json_object_del(expected, "anyOf");
    assert_true(json_equal(json_object_get(entry, "input_schema"), expected));
    json_decref(expected);
    json_decref(doc);
    jpt_registry_free(r);
}

static void await_is_not_listed_without_stateful_tools(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[{'name':'one','command':['true']}]}"));
    json_t *doc = tools_doc(r, JPT_DIALECT_ANTHROPIC);

    assert_int_equal(json_array_size(doc), 1);
    json_decref(doc);
    jpt_registry_free(r);
}

static void anthropic_list_is_name_description_input_schema(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *doc = without_await(tools_doc(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_ONEOF));

    assert_json(doc, js("[{'name':'git','description':'Interactive git',"
                        "'input_schema':" RFD_GIT_SCHEMA "},"
                        "{'name':'cargo_check','description':'Check a Rust package',"
                        "'input_schema':" RFD_CARGO_SCHEMA "}]"));
    json_decref(doc);
    jpt_registry_free(r);
}

static void openai_list_wraps_each_tool_as_a_function(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *doc = without_await(tools_doc(r, JPT_DIALECT_OPENAI | JPT_DIALECT_ONEOF));

    assert_json(doc, js("[{'type':'function','function':{'name':'git',"
                        "'description':'Interactive git','parameters':" RFD_GIT_SCHEMA "}},"
                        "{'type':'function','function':{'name':'cargo_check',"
                        "'description':'Check a Rust package',"
                        "'parameters':" RFD_CARGO_SCHEMA "}}]"));
    json_decref(doc);
    jpt_registry_free(r);
}

static void mcp_list_is_a_tools_object_with_input_schema(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *doc = tools_doc(r, JPT_DIALECT_MCP | JPT_DIALECT_ONEOF);
    without_await(json_object_get(doc, "tools"));

    assert_json(doc, js("{'tools':[{'name':'git','description':'Interactive git',"
                        "'inputSchema':" RFD_GIT_SCHEMA "},"
                        "{'name':'cargo_check','description':'Check a Rust package',"
                        "'inputSchema':" RFD_CARGO_SCHEMA "}]}"));
    json_decref(doc);
    jpt_registry_free(r);
}

/* RFD 009, "Schema generation": Gemini takes anyOf only alone in a schema
 * object, so its list always carries the flat schema, in its subset (the
 * exact schemas: test-registry-providers). */
static void gemini_list_is_function_declarations_with_flat_schemas(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *doc = tools_doc(r, JPT_DIALECT_GEMINI);
    json_t *also_flat = tools_doc(r, JPT_DIALECT_GEMINI | JPT_DIALECT_FLAT);
    const char *names[] = {"git", "cargo_check"};
    const char *descriptions[] = {"Interactive git", "Check a Rust package"};

    assert_int_equal(json_object_size(doc), 1);
    json_t *list = without_await(json_object_get(doc, "functionDeclarations"));
    without_await(json_object_get(also_flat, "functionDeclarations"));
    assert_int_equal(json_array_size(list), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *entry = json_array_get(list, i);
        assert_int_equal(json_object_size(entry), 3);
        assert_string_equal(json_string_value(json_object_get(entry, "name")), names[i]);
        assert_string_equal(json_string_value(json_object_get(entry, "description")),
                            descriptions[i]);
        json_t *params = json_object_get(entry, "parameters");
        json_t *flat = listed_schema(r, JPT_DIALECT_ANTHROPIC, names[i]);
        const char *key;
        json_t *v;
        assert_null(json_object_get(params, "oneOf"));
        assert_int_equal(json_object_size(json_object_get(params, "properties")),
                         json_object_size(json_object_get(flat, "properties")));
        json_object_foreach(json_object_get(flat, "properties"), key, v)
            assert_non_null(json_object_get(json_object_get(params, "properties"), key));
        json_decref(flat);
    }
    assert_true(json_equal(doc, also_flat));
    json_decref(doc);
    json_decref(also_flat);
    jpt_registry_free(r);
}

/* Issue 7: the flat schema is now every dialect's default; JPT_DIALECT_FLAT
 * is still accepted and changes nothing. */
static void flat_schema_is_the_default_of_every_dialect(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    const int dialects[] = {JPT_DIALECT_OPENAI, JPT_DIALECT_ANTHROPIC, JPT_DIALECT_MCP,
                            JPT_DIALECT_OPENAI_RESPONSES};

    for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        json_t *plain = tools_doc(r, dialects[i]);
        json_t *flat = tools_doc(r, dialects[i] | JPT_DIALECT_FLAT);
        json_t *git = listed_schema(r, dialects[i], "git");
        assert_true(json_equal(plain, flat));
        assert_null(json_object_get(git, "oneOf"));
        assert_non_null(json_object_get(json_object_get(git, "properties"), "action"));
        json_decref(plain);
        json_decref(flat);
        json_decref(git);
    }
    jpt_registry_free(r);
}

/* registry.h: the flat schema is "an action enum" of the declared actions. */
static void flat_schema_has_an_action_enum_of_only_the_declared_actions(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *git = listed_schema(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT, "git");
    json_t *cargo = listed_schema(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT, "cargo_check");
    json_t *git_action = json_object_get(json_object_get(git, "properties"), "action");
    json_t *cargo_action = json_object_get(json_object_get(cargo, "properties"), "action");

    assert_string_equal(json_string_value(json_object_get(git_action, "type")), "string");
    assert_json(json_object_get(git_action, "enum"), js("['spawn','fetch','apply','abort']"));
    assert_string_equal(json_string_value(json_object_get(cargo_action, "type")), "string");
    assert_json(json_object_get(cargo_action, "enum"), js("['spawn','fetch','abort']"));
    /* The per-action rules are in the description, for the declared actions only. */
    const char *rules = json_string_value(json_object_get(cargo_action, "description"));
    assert_non_null(rules);
    ru_assert_contains(rules, "spawn");
    ru_assert_contains(rules, "fetch");
    ru_assert_contains(rules, "abort");
    assert_null(strstr(rules, "apply"));
    json_decref(git);
    json_decref(cargo);
    jpt_registry_free(r);
}

static void flat_schema_has_input_only_when_apply_is_declared(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *git = listed_schema(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT, "git");
    json_t *cargo = listed_schema(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT, "cargo_check");
    json_t *input = json_object_get(json_object_get(git, "properties"), "input");

    assert_non_null(input);
    /* RFD 009's apply variant: "input": {} — any value. */
    assert_null(json_object_get(input, "type"));
    assert_null(json_object_get(json_object_get(cargo, "properties"), "input"));
    json_decref(git);
    json_decref(cargo);
    jpt_registry_free(r);
}

/* Issue 3 §4: "an action enum, id, input and the spawn parameters all
 * optional" — the rules are enforced when the call arrives. */
static void flat_schema_keeps_the_tools_properties_and_requires_nothing(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    json_t *git = listed_schema(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT, "git");
    json_t *cargo = listed_schema(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT, "cargo_check");
    json_t *gp = json_object_get(git, "properties");
    json_t *cp = json_object_get(cargo, "properties");

    assert_int_equal(json_object_size(git), 2);
    assert_string_equal(json_string_value(json_object_get(git, "type")), "object");
    assert_int_equal(json_object_size(gp), 6); /* action, id, input, wait_secs, command, args */
    assert_string_equal(json_string_value(json_object_get(json_object_get(gp, "id"), "type")),
                        "string");
    /* Issue 7: a required spawn parameter says so. */
    assert_json(json_object_get(gp, "command"),
                js("{'enum':['stage','commit','rebase'],'description':'Required for spawn and for a one-shot call (no action).'}"));
    assert_json(json_object_get(gp, "args"), js("{'type':'array','items':{'type':'string'}}"));
    json_t *wait = parse(js("{" WAIT_SECS "}"));
    assert_true(json_equal(json_object_get(gp, "wait_secs"), json_object_get(wait, "wait_secs")));
    json_decref(wait);

    assert_int_equal(json_object_size(cargo), 2);
    assert_string_equal(json_string_value(json_object_get(cargo, "type")), "object");
    assert_int_equal(json_object_size(cp), 4); /* action, id, wait_secs, package */
    assert_non_null(json_object_get(cp, "id"));
    assert_json(json_object_get(cp, "package"), js("{'type':'string'}"));
    json_decref(git);
    json_decref(cargo);
    jpt_registry_free(r);
}

#define LOOKUP_PARAMETERS                                                                  \
    "{'type':'object','properties':{'query':{'type':'string','minLength':1},"             \
    "'limit':{'type':'integer','minimum':1}},'required':['query'],"                        \
    "'additionalProperties':false}"

/* registry.h: "One-shot tools carry their parameters", unchanged in every
 * dialect but Gemini's, which has the part its subset can say (the rest is
 * checked at call time). */
static void one_shot_schema_is_its_parameters_unchanged(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[{'name':'lookup','description':'Look up',"
                                     "'command':['true'],'parameters':" LOOKUP_PARAMETERS
                                     "}]}"));
    const int dialects[] = {JPT_DIALECT_ANTHROPIC,
                            JPT_DIALECT_OPENAI,
                            JPT_DIALECT_MCP,
                            JPT_DIALECT_OPENAI_RESPONSES,
                            JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT,
                            JPT_DIALECT_ANTHROPIC | JPT_DIALECT_ONEOF};

    for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        json_t *schema = listed_schema(r, dialects[i], "lookup");
        assert_json(schema, js(LOOKUP_PARAMETERS));
        json_decref(schema);
    }
    json_t *gemini = listed_schema(r, JPT_DIALECT_GEMINI, "lookup");
    assert_json(gemini, js("{'type':'object','properties':{'query':{'type':'string'},"
                           "'limit':{'type':'integer','minimum':1}},'required':['query']}"));
    json_decref(gemini);
    jpt_registry_free(r);
}

/* registry.h: parameters default to "any object" (what the library writes
 * for it is its choice: the header is silent on the exact schema). OpenAI
 * refuses an object schema without properties; Gemini an object without
 * properties, and lists a function without parameters instead. */
static void tool_without_parameters_takes_any_object(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[{'name':'plain','command':['true']}]}"));
    json_t *doc = tools_doc(r, JPT_DIALECT_ANTHROPIC);

    assert_json(doc, js("[{'name':'plain','description':'','input_schema':"
                        "{'type':'object','properties':{}}}]"));
    json_decref(doc);
    doc = tools_doc(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_ONEOF);
    assert_json(doc, js("[{'name':'plain','description':'','input_schema':{'type':'object'}}]"));
    json_decref(doc);
    doc = tools_doc(r, JPT_DIALECT_GEMINI);
    assert_json(doc, js("{'functionDeclarations':[{'name':'plain','description':''}]}"));
    json_decref(doc);
    jpt_registry_free(r);
}

static void unknown_dialect_is_invalid(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(rfd_tools));
    const int bad[] = {0,
                       6,
                       JPT_DIALECT_FLAT,
                       JPT_DIALECT_ONEOF | JPT_DIALECT_FLAT | JPT_DIALECT_OPENAI,
                       JPT_DIALECT_ONEOF | JPT_DIALECT_GEMINI,
                       JPT_DIALECT_ONEOF | JPT_DIALECT_STRICT | JPT_DIALECT_OPENAI,
                       JPT_DIALECT_STRICT | JPT_DIALECT_ANTHROPIC,
                       JPT_DIALECT_STRICT | JPT_DIALECT_GEMINI,
                       JPT_DIALECT_STRICT | JPT_DIALECT_MCP,
                       0x800 | JPT_DIALECT_OPENAI,
                       -1};
    static char untouched[] = "untouched";

    /* *out is NULL after the error: the header is silent, the library clears it. */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *out = untouched;
        assert_int_equal(jpt_registry_tools_json(r, bad[i], &out), JPT_ERR_INVALID);
        assert_null(out);
    }
    assert_int_equal(jpt_registry_tools_json(r, JPT_DIALECT_OPENAI, NULL), JPT_ERR_INVALID);
    jpt_registry_free(r);
}

/* ---- Loading tool definitions ------------------------------------------------------ */

static const char kept_tool[] = "{'tools':[{'name':'kept','command':['true']}]}";

/* registry.h: "on error nothing changes and jpt_registry_errmsg() names the
 * tool and the field". Everything is compared after the registry is freed,
 * so a failure leaves nothing behind. */
static void assert_load_refused(const char *config, int status, const char *message)
{
    jpt_registry *r = ru_registry(js(kept_tool));
    char before[1024], after[1024], msg[1024];

    tool_names(r, before, sizeof(before));
    int rc = jpt_registry_load_tools(r, config, 0);
    snprintf(msg, sizeof(msg), "%s", jpt_registry_errmsg(r));
    tool_names(r, after, sizeof(after));
    jpt_registry_free(r);
    assert_int_equal(rc, status);
    assert_string_equal(msg, message);
    assert_string_equal(after, before);
}

static void load_refuses_an_unknown_field(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],'colour':'red'}]}"),
                        JPT_ERR_INVALID, "tool 't': unknown field 'colour'");
}

static void load_refuses_a_bad_name(void **state)
{
    (void)state;
    /* Without a valid name the tool is named by its place in the list, and
     * the name it was given is quoted. */
    assert_load_refused(js("{'tools':[{'name':'bad name','command':['true']}]}"),
                        JPT_ERR_INVALID,
                        "tool '#0': 'name' \"bad name\" must be 1 to 64 characters of A-Z, "
                        "a-z, 0-9, _ and -");
    char long_name[66], config[256];
    memset(long_name, 'n', 65);
    long_name[65] = '\0';
    snprintf(config, sizeof(config),
             "{'tools':[{'name':'ok','command':['true']},{'name':'%s','command':['true']}]}",
             long_name);
    char expected[256];
    snprintf(expected, sizeof(expected),
             "tool '#1': 'name' \"%s\" must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -",
             long_name);
    assert_load_refused(js(config), JPT_ERR_INVALID, expected);
    assert_load_refused(js("{'tools':[{'command':['true']}]}"), JPT_ERR_INVALID,
                        "tool '#0': 'name' is required and must be a string");
}

static void load_refuses_a_stdio_tool_without_command(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t'}]}"), JPT_ERR_INVALID,
                        "tool 't': 'command' is required for a stdio tool");
}

static void load_refuses_a_command_that_is_not_an_array_of_strings(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','command':'true'}]}"), JPT_ERR_INVALID,
                        "tool 't': 'command' must be a non-empty array of strings");
    assert_load_refused(js("{'tools':[{'name':'t','command':[]}]}"), JPT_ERR_INVALID,
                        "tool 't': 'command' must be a non-empty array of strings");
    assert_load_refused(js("{'tools':[{'name':'t','command':['true',3]}]}"), JPT_ERR_INVALID,
                        "tool 't': 'command[1]' is an integer, not a string");
}

static void load_refuses_an_unknown_placeholder_in_a_command(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','command':['echo','{{argument.x}}']}]}"),
                        JPT_ERR_INVALID,
                        "tool 't': 'command[1]': unknown placeholder '{{argument.x}}' "
                        "(expected {{tool}}, {{context}} or {{arguments.NAME}})");
}

static void load_refuses_bad_actions(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],'stateful':true,"
                           "'actions':['fetch','explode']}]}"),
                        JPT_ERR_INVALID,
                        "tool 't': 'actions[1]' must be \"spawn\", \"fetch\", \"apply\" or "
                        "\"abort\"");
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],'stateful':true,"
                           "'actions':'fetch'}]}"),
                        JPT_ERR_INVALID, "tool 't': 'actions' must be an array of action names");
}

static void load_refuses_actions_without_stateful(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],'actions':['fetch']}]}"),
                        JPT_ERR_INVALID, "tool 't': 'actions' needs \"stateful\": true");
}

static void load_refuses_a_bad_question_target(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],"
                           "'question_target':'robot'}]}"),
                        JPT_ERR_INVALID,
                        "tool 't': 'question_target' must be \"user\" or \"assistant\"");
}

static void load_refuses_a_negative_settle_ms(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],'settle_ms':-1}]}"),
                        JPT_ERR_INVALID,
                        "tool 't': 'settle_ms' must be an integer from 0 to 3600000");
}

/* registry.h, "VFS tools": a vfs definition's own keys are checked as a
 * stdio tool's, and its sandbox is its policy's configuration. */
static void load_checks_a_vfs_definition(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','runtime':'vfs'}]}"), JPT_ERR_INVALID,
                        "tool 't': 'command' is required for a vfs tool");
    assert_load_refused(js("{'tools':[{'name':'t','runtime':'vfs','command':['x'],"
                           "'pty':true}]}"),
                        JPT_ERR_INVALID,
                        "tool 't': 'pty' does not apply to a vfs tool: its stdin and stdout "
                        "are the protocol's");
    assert_load_refused(js("{'tools':[{'name':'t','runtime':'vfs','command':['x'],"
                           "'sandbox':{'filesystem':{'alow':['.']}}}]}"),
                        JPT_ERR_INVALID,
                        "tool 't': 'sandbox': filesystem: unknown key 'alow' (known: allow, "
                        "writable, deny, hardlinks, git)");
    assert_load_refused(js("{'tools':[{'name':'t','runtime':'vfs','command':['x'],"
                           "'files':'db'}]}"),
                        JPT_ERR_INVALID,
                        "tool 't': 'files' names \"db\", which no jpt_registry_add_files() "
                        "added");
    /* A stdio tool's sandbox is its OS sandbox: what that cannot enforce
     * would be accepted and ignored, so it is refused. */
    assert_load_refused(js("{'tools':[{'name':'t','command':['x'],"
                           "'sandbox':{'network':{'allow':['https://x.org/']}}}]}"),
                        JPT_ERR_UNSUPPORTED,
                        "tool 't': 'sandbox.network' cannot be enforced for a stdio tool, "
                        "whose OS sandbox has no network, no policy per path and no commands "
                        "to allow: make it a \"vfs\" tool");
}

/* registry.h: builtin tools come from jpt_registry_add_builtin. */
static void load_refuses_runtime_builtin(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','runtime':'builtin'}]}"), JPT_ERR_INVALID,
                        "tool 't': runtime \"builtin\" tools are added with "
                        "jpt_registry_add_builtin");
}

static void load_refuses_env_mistakes(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],"
                           "'env':{'inherit':'yes'}}]}"),
                        JPT_ERR_INVALID, "tool 't': 'env.inherit' must be a boolean");
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],'env':{'allow':[1]}}]}"),
                        JPT_ERR_INVALID, "tool 't': 'env.allow[0]' is an integer, not a string");
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],"
                           "'env':{'set':{'A':true}}}]}"),
                        JPT_ERR_INVALID, "tool 't': 'env.set.A' is a boolean, not a string");
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],'env':{'path':[]}}]}"),
                        JPT_ERR_INVALID,
                        "tool 't': unknown field 'env.path' (expected inherit, allow, set)");
    assert_load_refused(js("{'tools':[{'name':'t','command':['true'],'env':[]}]}"),
                        JPT_ERR_INVALID, "tool 't': 'env' must be an object");
}

static void load_refuses_text_that_is_not_json(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(kept_tool));
    char names[256], msg[1024];
    int rc = jpt_registry_load_tools(r, "{\"tools\": [", 0);

    snprintf(msg, sizeof(msg), "%s", jpt_registry_errmsg(r));
    tool_names(r, names, sizeof(names));
    jpt_registry_free(r);
    assert_int_equal(rc, JPT_ERR_INVALID);
    /* The rest is jansson's wording and position. */
    assert_memory_equal(msg, "the tool config is not JSON: ", 29);
    ru_assert_contains(msg, "(line 1, column ");
    assert_string_equal(names, "kept");
}

static void load_refuses_a_document_without_a_tools_array(void **state)
{
    (void)state;
    const char *message = "the tool config must be an object with a \"tools\" array";

    assert_load_refused(js("{'tool':[]}"), JPT_ERR_INVALID, message);
    assert_load_refused(js("{'tools':{'name':'t','command':['true']}}"), JPT_ERR_INVALID,
                        message);
    assert_load_refused(js("[{'name':'t','command':['true']}]"), JPT_ERR_INVALID, message);
}

static void load_refuses_a_name_already_loaded(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'kept','command':['false']}]}"), JPT_ERR_EXISTS,
                        "tool 'kept' is already loaded (use JPT_LOAD_REPLACE to replace it)");
}

static void load_refuses_a_name_defined_twice_in_one_document(void **state)
{
    (void)state;
    assert_load_refused(js("{'tools':[{'name':'a','command':['true']},"
                           "{'name':'a','command':['false']}]}"),
                        JPT_ERR_EXISTS, "tool 'a' is defined twice in the document");
}

static void load_replace_uses_the_new_definition_for_new_calls(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[{'name':'v','command':['" TOOL("exit-code")
                                     "','0','one','']}]}"));
    char *out = ru_call(r, "v", "{}", NULL);
    assert_string_equal(out, "one");
    free(out);

    assert_int_equal(jpt_registry_load_tools(r, js("{'tools':[{'name':'v','command':['"
                                                   TOOL("exit-code") "','0','two','']}]}"),
                                             JPT_LOAD_REPLACE),
                     JPT_OK);
    out = ru_call(r, "v", "{}", NULL);
    assert_string_equal(out, "two");
    free(out);
    char names[256];
    tool_names(r, names, sizeof(names));
    assert_string_equal(names, "v");
    jpt_registry_free(r);
}

/* registry.h: "All definitions are checked before any is added". */
static void load_with_one_bad_definition_adds_none_of_its_tools(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(kept_tool));
    char names[256];
    bool err = false;

    assert_int_equal(jpt_registry_load_tools(r, js("{'tools':["
                                                   "{'name':'a','command':['true']},"
                                                   "{'name':'b','command':['true'],'pty':1},"
                                                   "{'name':'c','command':['true']}]}"),
                                             0),
                     JPT_ERR_INVALID);
    assert_string_equal(jpt_registry_errmsg(r), "tool 'b': 'pty' is an integer, not a boolean");
    tool_names(r, names, sizeof(names));
    assert_string_equal(names, "kept");
    char *out = ru_call(r, "a", "{}", &err);
    assert_string_equal(out, "Unknown tool `a`");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
}

static void load_calls_accumulate(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(kept_tool));
    char names[256];

    assert_int_equal(jpt_registry_load_tools(r, js("{'tools':[{'name':'a','command':['true']},"
                                                   "{'name':'b','command':['true']}]}"),
                                             0),
                     JPT_OK);
    assert_int_equal(jpt_registry_load_tools(r, js("{'tools':[{'name':'c','command':['true']}]}"),
                                             0),
                     JPT_OK);
    assert_int_equal(jpt_registry_load_tools(r, js("{'tools':[]}"), 0), JPT_OK);
    tool_names(r, names, sizeof(names));
    assert_string_equal(names, "kept,a,b,c");
    jpt_registry_free(r);
}

/* ---- Creating a registry ------------------------------------------------------------ */

static const char context_tool[] =
    "{'tools':[{'name':'ctx','command':['" TOOL("exit-code") "','0','{{context}}','']}]}";

/* registry.h: "`opts` may be NULL for every default"; the root defaults to
 * the current directory, made absolute. */
static void new_with_null_options_roots_tools_in_the_current_directory(void **state)
{
    (void)state;
    char cwd[PATH_MAX], expected[PATH_MAX + 64];
    jpt_registry *r = NULL;

    assert_non_null(realpath(".", cwd));
    assert_int_equal(jpt_registry_new(NULL, &r), JPT_OK);
    assert_non_null(r);
    assert_int_equal(jpt_registry_load_tools(r, js(context_tool), 0), JPT_OK);
    char *out = ru_call(r, "ctx", "{}", NULL);
    snprintf(expected, sizeof(expected), "{\"action\":\"run\",\"root\":\"%s\"}", cwd);
    tu_assert_json_equal(out, expected);
    free(out);
    jpt_registry_free(r);
}

/* Here and below, *out is NULL after an error: the header is silent on it,
 * the library clears it (a non-NULL value going in shows that). */
static void new_refuses_an_options_struct_that_is_too_small(void **state)
{
    (void)state;
    jpt_registry_options o = {0};
    jpt_registry *r = (jpt_registry *)&o;

    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_null(r);
    /* Smaller than the first version (0.1.0 ended before max_processes). */
    o.size = offsetof(jpt_registry_options, max_processes) - 1;
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_null(r);
    char why[256];
    snprintf(why, sizeof(why),
             "jpt_registry_new: opts->size %zu is less than any jpt_registry_options (%zu)",
             o.size, offsetof(jpt_registry_options, max_processes));
    assert_string_equal(jpt_last_error(), why);
    assert_int_equal(jpt_registry_new(NULL, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_registry_new: out is NULL");
    /* A newer caller's struct with a field this library does not know. */
    struct {
        jpt_registry_options o;
        int newer;
    } newer = {.o = {.size = sizeof(newer)}, .newer = 1};
    assert_int_equal(jpt_registry_new(&newer.o, &r), JPT_ERR_UNSUPPORTED);
    ru_assert_contains(jpt_last_error(), "opts sets fields past the");
}

/* A host built against 0.1.0's header passes its smaller struct: the
 * fields it does not know take their defaults. */
static void new_takes_the_options_struct_of_an_older_caller(void **state)
{
    (void)state;
    struct {
        jpt_registry_options o;
        char beyond[64];
    } old;
    jpt_registry *r = NULL;

    memset(&old, 0, sizeof(old));
    old.o.size = offsetof(jpt_registry_options, max_processes);
    /* What lies past the old caller's struct is not its business: bytes
     * there must not be read as options. */
    memset((char *)&old.o + old.o.size, 0xff, sizeof(old) - old.o.size);
    old.o.size = offsetof(jpt_registry_options, max_processes);
    /* (Read as flags, those bytes would be refused as unknown flags.) */
    assert_int_equal(jpt_registry_new(&old.o, &r), JPT_OK);
    assert_non_null(r);
    jpt_registry_free(r);
}

/* Each refusal names its option and why (jpt_last_error; issue 16: there
 * was no message anywhere). */
static void new_refuses_negative_durations(void **state)
{
    (void)state;
    static const char *const names[] = {"kill_grace_ms", "settle_ms", "yield_ms", "drain_ms",
                                        "turn_end_timeout_ms"};
    for (int which = 0; which < 5; which++) {
        jpt_registry_options o = {.size = sizeof(o)};
        jpt_registry *r = (jpt_registry *)&o;
        char why[128];
        if (which == 0)
            o.kill_grace_ms = -1;
        else if (which == 1)
            o.settle_ms = -1;
        else if (which == 2)
            o.yield_ms = -1;
        else if (which == 3)
            o.drain_ms = -1;
        else
            o.turn_end_timeout_ms = -1;
        assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
        assert_null(r);
        snprintf(why, sizeof(why),
                 "jpt_registry_new: %s is -1: a duration is 0 (the default) or more",
                 names[which]);
        assert_string_equal(jpt_last_error(), why);
    }
    jpt_registry *r = NULL;
    jpt_registry_options o = {.size = sizeof(o), .max_inquiry_rounds = -2};
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_registry_new: max_inquiry_rounds is -2: a count "
                                          "is 0 (the default) or more");
    o = (jpt_registry_options){.size = sizeof(o), .flags = 0x10};
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_registry_new: flags 0x10: unknown flags 0x10 "
                                          "(JPT_REGISTRY_KEEP_SPOOL is the only one)");
    o = (jpt_registry_options){.size = sizeof(o), .containment = 9};
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(),
                        "jpt_registry_new: containment 9 is not a JPT_CONTAIN_* mode");
    o = (jpt_registry_options){.size = sizeof(o), .sandbox_mode = 9};
    assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(),
                        "jpt_registry_new: sandbox_mode 9 is not a JPT_SANDBOX_* mode");
    /* A success clears it. */
    assert_int_equal(jpt_registry_new(NULL, &r), JPT_OK);
    assert_string_equal(jpt_last_error(), "");
    jpt_registry_free(r);
}

static void new_refuses_a_root_that_is_not_a_directory(void **state)
{
    (void)state;
    const char *roots[] = {TOOL("sleep-ms"), "/nonexistent/jpt-no-such-dir"};
    const char *why[] = {"jpt_registry_new: root '" TOOL("sleep-ms") "' is not a directory",
                         "jpt_registry_new: root '/nonexistent/jpt-no-such-dir': No such file "
                         "or directory"};

    for (size_t i = 0; i < 2; i++) {
        jpt_registry_options o = {sizeof(o), .root = roots[i]};
        jpt_registry *r = (jpt_registry *)&o;
        assert_int_equal(jpt_registry_new(&o, &r), JPT_ERR_INVALID);
        assert_null(r);
        assert_string_equal(jpt_last_error(), why[i]);
    }
}

/* registry.h, jpt_registry_new: "JPT_ERR_IO (… or writing the state file)". */
static void new_fails_when_the_state_file_cannot_be_written(void **state)
{
    (void)state;
    jpt_registry_options o = {sizeof(o), .state_file = "/nonexistent/jpt-no-such-dir/children"};
    jpt_registry *r = NULL;
    int rc = jpt_registry_new(&o, &r);
    bool got_registry = r != NULL;

    jpt_registry_free(r);
    assert_int_equal(rc, JPT_ERR_IO);
    assert_false(got_registry);
    assert_string_equal(jpt_last_error(), "jpt_registry_new: opening the state file "
                                          "/nonexistent/jpt-no-such-dir/children: No such file "
                                          "or directory");
}

/* common.h, jpt_last_error: every function without an object to keep its
 * message says why it failed, naming the argument or option. */
static void calls_without_an_object_say_why_they_failed(void **state)
{
    (void)state;
    jpt_vfs_host *h = NULL;
    jpt_files *f = NULL;
    jpt_policy *p = NULL;
    jpt_state *s = NULL;
    jpt_vfs_tool *t = NULL;
    char *out = NULL;

    jpt_vfs_host_options ho = {.size = sizeof(ho), .request_timeout_ms = -2};
    assert_int_equal(jpt_vfs_host_new(&ho, &h), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_vfs_host_new: request_timeout_ms is -2: it is "
                                          "-1 (none), 0 (the default) or more");
    ho = (jpt_vfs_host_options){.size = sizeof(ho), .root = "/nonexistent/jpt-no-such-dir"};
    assert_true(jpt_vfs_host_new(&ho, &h) < 0);
    ru_assert_contains(jpt_last_error(), "jpt_vfs_host_new: root: jpt_files_open_dir "
                                         "'/nonexistent/jpt-no-such-dir': ");
    ho = (jpt_vfs_host_options){.size = sizeof(ho), .sandbox_json = "{\"network\":1}"};
    assert_int_equal(jpt_vfs_host_new(&ho, &h), JPT_ERR_INVALID);
    ru_assert_contains(jpt_last_error(), "jpt_vfs_host_new: sandbox_json: ");
    ru_assert_contains(jpt_last_error(), "network");

    assert_true(jpt_files_open_dir("/nonexistent/jpt-no-such-dir", 0, &f) < 0);
    ru_assert_contains(jpt_last_error(), "jpt_files_open_dir '/nonexistent/jpt-no-such-dir': ");
    assert_int_equal(jpt_files_open_dir("/tmp", 0x8000, &f), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_files_open_dir: unknown flags 0x8000");
    assert_int_equal(jpt_files_new(NULL, NULL, &f), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_files_new: ops is NULL");

    assert_int_equal(jpt_policy_new("{", &p), JPT_ERR_INVALID);
    char why[600];
    snprintf(why, sizeof(why), "jpt_policy_new: %s", jpt_policy_errmsg(p));
    assert_string_equal(jpt_last_error(), why);
    jpt_policy_free(p);
    assert_int_equal(jpt_policy_normalize_path("/etc", &out), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_policy_normalize_path '/etc': is absolute: "
                                          "paths are relative to the workspace root");

    assert_int_equal(jpt_state_parse(NULL, 3, 0, &s), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_state_parse: data is NULL but len is 3");
    assert_int_equal(jpt_state_parse("x", 1, 0x80, &s), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_state_parse: unknown flags 0x80");
    assert_int_equal(jpt_state_new(7, &s), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_state_new: kind 7 is not a JPT_STATE_* kind");
    assert_int_equal(jpt_uri_canonicalize("", NULL, &out), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_uri_canonicalize: the URI is empty");
    assert_int_equal(jpt_uri_canonicalize("a.txt", "relative", &out), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_uri_canonicalize: root 'relative' is not an "
                                          "absolute path or file URI");

    assert_int_equal(jpt_registry_reap_stale("/", NULL), JPT_ERR_IO);
    ru_assert_contains(jpt_last_error(), "jpt_registry_reap_stale: removing '/': ");
    assert_int_equal(jpt_vfs_tool_connect_fds(-1, 1, NULL, &t), JPT_ERR_INVALID);
    assert_string_equal(jpt_last_error(), "jpt_vfs_tool_connect: in_fd is -1, not a file "
                                          "descriptor");
    assert_int_equal(jpt_set_allocator(NULL), JPT_ERR_STATE);
    ru_assert_contains(jpt_last_error(), "jpt_set_allocator: the library has allocated memory "
                                         "already");

    /* A success clears it. */
    assert_int_equal(jpt_state_new(JPT_STATE_RUNNING, &s), JPT_OK);
    assert_string_equal(jpt_last_error(), "");
    jpt_state_unref(s);
}

static void *fail_in_a_thread(void *arg)
{
    jpt_state *s = NULL;

    (void)arg;
    if (jpt_state_new(8, &s) != JPT_ERR_INVALID)
        return NULL;
    return strdup(jpt_last_error());
}

/* Each thread reads its own last error. */
static void last_error_is_the_threads_own(void **state)
{
    (void)state;
    jpt_state *s = NULL;
    pthread_t thread;
    void *theirs = NULL;

    assert_int_equal(jpt_state_new(7, &s), JPT_ERR_INVALID);
    assert_int_equal(pthread_create(&thread, NULL, fail_in_a_thread, NULL), 0);
    assert_int_equal(pthread_join(thread, &theirs), 0);
    assert_non_null(theirs);
    assert_string_equal(theirs, "jpt_state_new: kind 8 is not a JPT_STATE_* kind");
    free(theirs);
    assert_string_equal(jpt_last_error(), "jpt_state_new: kind 7 is not a JPT_STATE_* kind");
}

/* ---- Builtin tools ------------------------------------------------------------------- */

/* What the host side of a builtin tool saw and did. */
typedef struct host {
    jpt_handle *h;     /* the latest handle started, kept to report later */
    int starts, applies, aborts;
    int start_status;  /* what a failing start returns */
    char args[512];    /* arguments_json of the last start */
    char input[512];   /* input_json of the last apply */
    char id[80], tool[80];
    void *userdata_at_start; /* before the host set any */
    void *userdata_at_apply;
    int update_status[2];
    int edit_after_update;
} host;

static void record_start(host *x, jpt_handle *h, const char *arguments_json)
{
    x->h = h;
    x->starts++;
    snprintf(x->args, sizeof(x->args), "%s", arguments_json);
    snprintf(x->id, sizeof(x->id), "%s", jpt_handle_id(h));
    snprintf(x->tool, sizeof(x->tool), "%s", jpt_handle_tool(h));
}

static int start_and_stop(jpt_handle *h, const char *arguments_json, void *ud)
{
    jpt_state *s = NULL;

    record_start(ud, h, arguments_json);
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "first"), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "second"), JPT_OK);
    assert_int_equal(jpt_handle_update(h, s), JPT_OK);
    jpt_state_unref(s);
    return JPT_OK;
}

static int start_and_fail_in_state(jpt_handle *h, const char *arguments_json, void *ud)
{
    jpt_state *s = NULL;

    record_start(ud, h, arguments_json);
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    assert_int_equal(jpt_state_set_error(s, "it broke", 0), JPT_OK);
    assert_int_equal(jpt_handle_update(h, s), JPT_OK);
    jpt_state_unref(s);
    return JPT_OK;
}

static int start_failing(jpt_handle *h, const char *arguments_json, void *ud)
{
    host *x = ud;

    record_start(x, h, arguments_json);
    return x->start_status;
}

static int start_and_hold(jpt_handle *h, const char *arguments_json, void *ud)
{
    record_start(ud, h, arguments_json);
    return JPT_OK;
}

static int start_and_stop_twice(jpt_handle *h, const char *arguments_json, void *ud)
{
    host *x = ud;
    jpt_state *s = NULL, *again = NULL;

    record_start(x, h, arguments_json);
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "once"), JPT_OK);
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &again), JPT_OK);
    assert_int_equal(jpt_state_add_text(again, "twice"), JPT_OK);
    x->update_status[0] = jpt_handle_update(h, s);
    x->update_status[1] = jpt_handle_update(h, again);
    jpt_state_unref(s);
    jpt_state_unref(again);
    return JPT_OK;
}

static int start_and_edit_after_update(jpt_handle *h, const char *arguments_json, void *ud)
{
    host *x = ud;
    jpt_state *s = NULL;

    record_start(x, h, arguments_json);
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "sent"), JPT_OK);
    x->update_status[0] = jpt_handle_update(h, s);
    x->edit_after_update = jpt_state_add_text(s, "edited afterwards");
    jpt_state_unref(s);
    return JPT_OK;
}

static jpt_registry *builtin_registry(int (*start)(jpt_handle *, const char *, void *), host *x)
{
    jpt_registry *r = ru_registry(NULL);
    jpt_builtin_ops ops = {sizeof(ops), start, NULL, NULL};

    if (jpt_registry_add_builtin(r, js("{'name':'helper','description':'In-process helper'}"),
                                 &ops, x) != JPT_OK)
        fail_msg("add_builtin: %s", jpt_registry_errmsg(r));
    return r;
}

/* registry.h: "`content` is the text the model reads: a one-shot tool's
 * rendered output"; jpt_state_render separates blocks by a blank line. */
static void builtin_one_shot_result_is_the_rendering_of_its_stopped_state(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = builtin_registry(start_and_stop, &x);
    json_t *res = ru_run(r, js("[{'id':'c1','name':'helper','arguments':{'q':'x'}}]"));

    assert_string_equal(ru_content(res, 0), "first\n\nsecond");
    assert_false(ru_is_error(res, 0));
    assert_int_equal(x.starts, 1);
    tu_assert_json_equal(x.args, js("{'q':'x'}"));
    json_decref(res);
    jpt_registry_free(r);
}

static void builtin_one_shot_error_state_is_an_error_result(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = builtin_registry(start_and_fail_in_state, &x);
    bool err = false;
    char *out = ru_call(r, "helper", "{}", &err);

    assert_string_equal(out, "Error: it broke");
    assert_true(err);
    free(out);
    jpt_registry_free(r);
}

/* registry.h, start: "Return JPT_OK, or a status to fail the call". The
 * wording of the result is the library's. */
static void builtin_start_returning_an_error_fails_the_call(void **state)
{
    (void)state;
    host x = {.start_status = JPT_ERR_IO};
    jpt_registry *r = builtin_registry(start_failing, &x);
    bool err = false;
    char *out = ru_call(r, "helper", "{}", &err);

    assert_string_equal(out, "`helper` could not run: the tool failed to start: "
                             "input/output error");
    assert_true(err);
    assert_int_equal(x.starts, 1);
    free(out);
    jpt_registry_free(r);
}

/* registry.h: the tool reports "from the callbacks or at any later time". */
static void builtin_reports_its_result_later_from_outside_the_callbacks(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = builtin_registry(start_and_hold, &x);
    jpt_batch *b = NULL;
    char *text = NULL;

    assert_int_equal(jpt_registry_submit(r, js("[{'id':'c1','name':'helper','arguments':{}}]"),
                                         &b),
                     JPT_OK);
    for (int i = 0; i < 100 && x.h == NULL; i++) {
        ru_poll(r, 50);
        assert_true(jpt_registry_dispatch(r) >= 0);
    }
    assert_non_null(x.h);
    for (int i = 0; i < 3; i++)
        assert_true(jpt_registry_dispatch(r) >= 0);
    assert_int_equal(jpt_batch_done(b), 0);

    ru_report(x.h, JPT_STATE_STOPPED, "done later");
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_batch_results_json(b, &text), JPT_OK);
    tu_assert_json_equal(text, js("[{'id':'c1','content':'done later','is_error':false}]"));
    jpt_free(text);
    jpt_batch_free(b);
    jpt_registry_free(r);
}

/* registry.h, Threading: "callbacks run only inside jpt_registry_dispatch()
 * (and the calls that dispatch for you: run, wait, free)" — submit is not
 * one of them. */
static void builtin_start_runs_inside_dispatch_not_inside_submit(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = builtin_registry(start_and_stop, &x);
    jpt_batch *b = NULL;

    assert_int_equal(jpt_registry_submit(r, js("[{'id':'c1','name':'helper','arguments':{}}]"),
                                         &b),
                     JPT_OK);
    int starts_after_submit = x.starts;
    int wait_rc = jpt_registry_wait(r, b, WAIT_MS);
    jpt_batch_free(b);
    jpt_registry_free(r);
    assert_int_equal(wait_rc, JPT_OK);
    assert_int_equal(x.starts, 1);
    assert_int_equal(starts_after_submit, 0);
}

/* registry.h: "Errors: … JPT_ERR_STATE (the handle stopped already)". */
static void handle_update_after_stop_is_a_state_error(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = builtin_registry(start_and_stop_twice, &x);
    char *out = ru_call(r, "helper", "{}", NULL);

    assert_string_equal(out, "once");
    assert_int_equal(x.update_status[0], JPT_OK);
    assert_int_equal(x.update_status[1], JPT_ERR_STATE);
    free(out);
    jpt_registry_free(r);
}

/* registry.h: "The state's content is copied: the caller keeps its
 * reference and may change or drop the state afterwards." */
static void handle_update_copies_the_state(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = builtin_registry(start_and_edit_after_update, &x);
    char *out = ru_call(r, "helper", "{}", NULL);
    char content[64];

    snprintf(content, sizeof(content), "%s", out);
    free(out);
    jpt_registry_free(r);
    assert_int_equal(x.update_status[0], JPT_OK);
    assert_string_equal(content, "sent");
    assert_int_equal(x.edit_after_update, JPT_OK);
}

static void handle_update_refuses_null(void **state)
{
    (void)state;
    jpt_state *s = NULL;

    assert_int_equal(jpt_state_new(JPT_STATE_RUNNING, &s), JPT_OK);
    assert_int_equal(jpt_handle_update(NULL, s), JPT_ERR_INVALID);
    jpt_state_unref(s);
}

/* A sub-agent as a stateful builtin (RFD 009, "Toward sub-agents"). */
static const char agent_definition[] =
    "{'name':'agent','description':'A sub-agent','stateful':true,"
    " 'parameters':{'type':'object','properties':{'task':{'type':'string'}},"
    " 'required':['task']}}";

static int userdata_marker;

static int agent_start(jpt_handle *h, const char *arguments_json, void *ud)
{
    host *x = ud;
    json_t *args = json_loads(arguments_json, 0, NULL);
    char text[256];

    record_start(x, h, arguments_json);
    x->userdata_at_start = jpt_handle_get_userdata(h);
    jpt_handle_set_userdata(h, &userdata_marker);
    snprintf(text, sizeof(text), "working on %s",
             json_string_value(json_object_get(args, "task")));
    json_decref(args);
    ru_report(h, JPT_STATE_RUNNING, text);
    return JPT_OK;
}

/* Half done: the sub-agent asks whether to go on. */
static jpt_state *agent_question(void)
{
    jpt_state *s = NULL;

    assert_int_equal(jpt_state_new(JPT_STATE_WAITING, &s), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "half done"), JPT_OK);
    assert_int_equal(jpt_state_add_question(s, "proceed", "Continue?", "{\"type\":\"boolean\"}",
                                            NULL),
                     JPT_OK);
    return s;
}

static int agent_apply(jpt_handle *h, const char *input_json, void *ud)
{
    host *x = ud;

    x->applies++;
    x->userdata_at_apply = jpt_handle_get_userdata(h);
    snprintf(x->input, sizeof(x->input), "%s", input_json);
    if (strcmp(input_json, "\"status?\"") == 0) {
        jpt_state *s = agent_question();
        assert_int_equal(jpt_handle_update(h, s), JPT_OK);
        jpt_state_unref(s);
    } else {
        ru_report(h, JPT_STATE_RUNNING, "continuing");
    }
    return JPT_OK;
}

static void agent_abort(jpt_handle *h, void *ud)
{
    (void)h;
    ((host *)ud)->aborts++;
}

static jpt_registry *agent_registry(host *x)
{
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 300, .drain_ms = 100,
                              .settle_ms = 50};
    jpt_registry *r = ru_registry_with(&o, NULL);
    jpt_builtin_ops ops = {sizeof(ops), agent_start, agent_apply, agent_abort};

    if (jpt_registry_add_builtin(r, js(agent_definition), &ops, x) != JPT_OK)
        fail_msg("add_builtin: %s", jpt_registry_errmsg(r));
    return r;
}

static json_t *spawn_agent(jpt_registry *r)
{
    return act(r, "agent", js("{'action':'spawn','id':'sub','task':'summarise'}"), NULL);
}

static void abort_agent(jpt_registry *r)
{
    json_decref(act(r, "agent", js("{'action':'abort','id':'sub'}"), NULL));
}

/* registry.h, start: "`arguments_json` is the arguments object (without
 * action and id)"; the spawn response carries the output so far. */
static void builtin_spawn_answers_with_its_running_output(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = agent_registry(&x);
    json_t *resp = spawn_agent(r);

    assert_json(resp, js("{'id':'sub','state':'running','content':'working on summarise'}"));
    tu_assert_json_equal(x.args, js("{'task':'summarise'}"));
    json_decref(resp);
    abort_agent(r);
    jpt_registry_free(r);
}

static void builtin_apply_receives_the_input_as_json(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = agent_registry(&x);

    json_decref(spawn_agent(r));
    json_t *resp = act(r, "agent", js("{'action':'apply','id':'sub','input':{'note':[1,2]}}"),
                       NULL);
    assert_int_equal(x.applies, 1);
    tu_assert_json_equal(x.input, js("{'note':[1,2]}"));
    assert_json(resp, js("{'id':'sub','state':'running','content':'continuing'}"));
    json_decref(resp);
    abort_agent(r);
    jpt_registry_free(r);
}

/* RFD 009, "Apply serves two purposes": to a waiting handle, apply answers
 * its question, checked against the question's schema. */
static void builtin_question_is_answered_through_apply(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = agent_registry(&x);
    bool err = false;

    json_decref(spawn_agent(r));
    json_t *resp = act(r, "agent", js("{'action':'apply','id':'sub','input':'status?'}"), NULL);
    jpt_state *asked = agent_question();
    char *rendered = tu_render(asked, NULL);
    assert_string_equal(field(resp, "id"), "sub");
    assert_string_equal(field(resp, "state"), "waiting");
    assert_string_equal(field(resp, "content"), rendered);
    jpt_free(rendered);
    jpt_state_unref(asked);
    json_decref(resp);

    char *out = ru_call(r, "agent", js("{'action':'apply','id':'sub','input':'yes'}"), &err);
    assert_string_equal(out, "The answer does not fit question `proceed` of handle `sub`: at "
                             "the top level: expected boolean, got string");
    assert_true(err);
    assert_int_equal(x.applies, 1); /* the wrong answer never reached the tool */
    free(out);

    resp = act(r, "agent", js("{'action':'apply','id':'sub','input':true}"), &err);
    assert_false(err);
    assert_int_equal(x.applies, 2);
    assert_string_equal(x.input, "true");
    assert_json(resp, js("{'id':'sub','state':'running','content':'continuing'}"));
    json_decref(resp);
    abort_agent(r);
    jpt_registry_free(r);
}

/* registry.h, abort: "the registry marks it stopped after this returns".
 * The "[aborted]" text is the library's (the header is silent on it). */
static void builtin_abort_runs_the_callback_and_stops_the_handle(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = agent_registry(&x);
    bool err = true;

    json_decref(spawn_agent(r));
    json_t *resp = act(r, "agent", js("{'action':'abort','id':'sub'}"), &err);
    assert_int_equal(x.aborts, 1);
    assert_false(err);
    assert_json(resp, js("{'id':'sub','state':'stopped','result':'[aborted]'}"));
    json_decref(resp);
    jpt_registry_free(r);
}

/* registry.h: the handle id is "the model's, for a stateful spawn; the call
 * id for a one-shot call". */
static void handle_id_and_tool_are_the_models_names(void **state)
{
    (void)state;
    host x = {0}, y = {0};
    jpt_registry *r = agent_registry(&x);
    jpt_builtin_ops ops = {sizeof(ops), start_and_stop, NULL, NULL};

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'helper'}"), &ops, &y), JPT_OK);
    json_decref(spawn_agent(r));
    assert_string_equal(x.id, "sub");
    assert_string_equal(x.tool, "agent");
    json_t *res = ru_run(r, js("[{'id':'call_7','name':'helper','arguments':{}}]"));
    assert_string_equal(y.id, "call_7");
    assert_string_equal(y.tool, "helper");
    json_decref(res);
    abort_agent(r);
    jpt_registry_free(r);
}

/* NULL before the host sets it: the header is silent, the library starts
 * every handle without one. */
static void handle_userdata_is_kept_with_the_handle(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = agent_registry(&x);

    json_decref(spawn_agent(r));
    json_decref(act(r, "agent", js("{'action':'apply','id':'sub','input':'go'}"), NULL));
    assert_null(x.userdata_at_start);
    assert_ptr_equal(x.userdata_at_apply, &userdata_marker);
    abort_agent(r);
    jpt_registry_free(r);
}

static int start_other(jpt_handle *h, const char *arguments_json, void *ud)
{
    (void)h;
    (void)arguments_json;
    (void)ud;
    fail_msg("the ops were not copied");
    return JPT_ERR_INVALID;
}

/* registry.h: "`ops` is copied". */
static void add_builtin_copies_the_ops(void **state)
{
    (void)state;
    host x = {0};
    jpt_registry *r = ru_registry(NULL);
    jpt_builtin_ops ops = {sizeof(ops), start_and_stop, NULL, NULL};

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'helper'}"), &ops, &x), JPT_OK);
    ops.start = start_other;
    char *out = ru_call(r, "helper", "{}", NULL);
    assert_string_equal(out, "first\n\nsecond");
    free(out);
    jpt_registry_free(r);
}

static void add_builtin_refuses_missing_ops_or_start(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(NULL);
    jpt_builtin_ops no_start = {sizeof(no_start), NULL, NULL, NULL};
    char names[256];

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'helper'}"), NULL, NULL),
                     JPT_ERR_INVALID);
    assert_string_not_equal(jpt_registry_errmsg(r), "");
    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'helper'}"), &no_start, NULL),
                     JPT_ERR_INVALID);
    assert_string_not_equal(jpt_registry_errmsg(r), "");
    tool_names(r, names, sizeof(names));
    assert_string_equal(names, "");
    jpt_registry_free(r);
}

/* jpt_builtin_ops.apply "May be NULL if the tool declares no "apply"": a
 * stateful tool declares it unless its actions leave it out. The message
 * names the tool and the field, as for every definition mistake. */
static void add_builtin_refuses_apply_declared_without_a_callback(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(NULL);
    jpt_builtin_ops ops = {sizeof(ops), start_and_hold, NULL, NULL};
    char names[256], msg[512];
    int rc = jpt_registry_add_builtin(r, js("{'name':'agent','stateful':true}"), &ops, NULL);

    snprintf(msg, sizeof(msg), "%s", jpt_registry_errmsg(r));
    int rc_without_apply = jpt_registry_add_builtin(
        r, js("{'name':'poller','stateful':true,'actions':['fetch','abort']}"), &ops, NULL);
    tool_names(r, names, sizeof(names));
    jpt_registry_free(r);
    assert_int_equal(rc, JPT_ERR_INVALID);
    assert_int_equal(rc_without_apply, JPT_OK);
    /* (await is listed with any stateful tool.) */
    assert_string_equal(names, "poller,await");
    ru_assert_contains(msg, "'agent'");
    ru_assert_contains(msg, "apply");
}

/* registry.h: "Errors as jpt_registry_load_tools()". */
static void add_builtin_checks_the_definition_as_load_tools_does(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(kept_tool));
    jpt_builtin_ops ops = {sizeof(ops), start_and_hold, NULL, NULL};

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'kept'}"), &ops, NULL),
                     JPT_ERR_EXISTS);
    assert_string_equal(jpt_registry_errmsg(r),
                        "tool 'kept' is already loaded (use JPT_LOAD_REPLACE to replace it)");
    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'h','colour':1}"), &ops, NULL),
                     JPT_ERR_INVALID);
    assert_string_equal(jpt_registry_errmsg(r), "tool 'h': unknown field 'colour'");
    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'h','command':['true']}"), &ops,
                                              NULL),
                     JPT_ERR_INVALID);
    assert_string_equal(jpt_registry_errmsg(r),
                        "tool 'h': 'command' does not apply to a builtin tool");
    jpt_registry_free(r);
}

/* ---- Events -------------------------------------------------------------------------- */

static const char quick_tools[] =
    "{'tools':[{'name':'one','command':['" TOOL("exit-code") "','0','1','']},"
    "{'name':'two','command':['" TOOL("exit-code") "','0','2','']},"
    "{'name':'nap','command':['" TOOL("sleep-ms") "','{{arguments.ms}}']}]}";

static void two_calls_give_two_call_done_events_then_batch_done(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(quick_tools));
    jpt_batch *b = NULL;
    jpt_event *e[3] = {NULL}, *extra = (jpt_event *)&b;
    bool seen_a = false, seen_b = false;

    assert_int_equal(jpt_registry_submit(r, js("[{'id':'a','name':'one','arguments':{}},"
                                               "{'id':'b','name':'two','arguments':{}}]"),
                                         &b),
                     JPT_OK);
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(jpt_registry_next_event(r, &e[i]), JPT_OK);
    assert_int_equal(jpt_registry_next_event(r, &extra), JPT_ERR_AGAIN);

    for (int i = 0; i < 2; i++) {
        assert_int_equal(jpt_event_type(e[i]), JPT_EVENT_CALL_DONE);
        assert_ptr_equal(jpt_event_batch(e[i]), b);
        assert_null(jpt_event_handle_id(e[i])); /* one-shot calls have no handle id */
        assert_int_equal(jpt_event_state(e[i]), 0);
        const char *id = jpt_event_call_id(e[i]);
        if (strcmp(id, "a") == 0) {
            assert_string_equal(jpt_event_tool(e[i]), "one");
            seen_a = true;
        } else {
            assert_string_equal(id, "b");
            assert_string_equal(jpt_event_tool(e[i]), "two");
            seen_b = true;
        }
    }
    assert_true(seen_a && seen_b);
    assert_int_equal(jpt_event_type(e[2]), JPT_EVENT_BATCH_DONE);
    assert_ptr_equal(jpt_event_batch(e[2]), b);
    assert_null(jpt_event_tool(e[2]));
    assert_null(jpt_event_call_id(e[2]));
    for (int i = 0; i < 3; i++)
        jpt_event_free(e[i]);
    jpt_batch_free(b);
    jpt_registry_free(r);
}

static void next_event_is_again_when_there_is_none(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(quick_tools));
    jpt_event *e = (jpt_event *)&r;

    /* *out is NULL too: the library's choice, the header is silent. */
    assert_int_equal(jpt_registry_next_event(r, &e), JPT_ERR_AGAIN);
    assert_null(e);
    jpt_registry_free(r);
}

/* ---- Driving ------------------------------------------------------------------------- */

static bool readable_now(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, 0);

    assert_true(n >= 0);
    return n == 1;
}

/* registry.h: "one epoll fd … that never changes". */
static void fd_is_one_epoll_fd_that_never_changes(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(quick_tools));
    int fd = jpt_registry_get_fd(r);
    char path[64], target[64] = {0};

    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) >= 0);
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    assert_true(readlink(path, target, sizeof(target) - 1) > 0);
    assert_string_equal(target, "anon_inode:[eventpoll]");
    char *out = ru_call(r, "one", "{}", NULL);
    free(out);
    assert_int_equal(jpt_registry_get_fd(r), fd);
    jpt_registry_free(r);
}

/* registry.h: "-1 when only fd activity can make any". */
static void timeout_is_minus_one_when_idle(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(quick_tools));

    assert_int_equal(jpt_registry_get_timeout(r), -1);
    char *out = ru_call(r, "one", "{}", NULL);
    free(out);
    assert_int_equal(jpt_registry_run(r, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_registry_get_timeout(r), -1);
    jpt_registry_free(r);
}

static void wakeup_makes_the_fd_readable_until_dispatched(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(quick_tools));
    int fd = jpt_registry_get_fd(r);

    assert_false(readable_now(fd));
    assert_int_equal(jpt_registry_wakeup(r), JPT_OK);
    assert_true(readable_now(fd));
    assert_true(jpt_registry_dispatch(r) >= 0);
    assert_false(readable_now(fd));
    jpt_registry_free(r);
}

static void run_returns_ok_once_every_call_finished(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(quick_tools));
    jpt_batch *b = NULL;

    assert_int_equal(jpt_registry_submit(r, js("[{'id':'a','name':'one','arguments':{}},"
                                               "{'id':'b','name':'nap','arguments':{'ms':50}}]"),
                                         &b),
                     JPT_OK);
    assert_int_equal(jpt_registry_run(r, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_batch_done(b), 1);
    jpt_batch_free(b);
    /* With nothing in flight, run returns at once. */
    assert_int_equal(jpt_registry_run(r, WAIT_MS), JPT_OK);
    jpt_registry_free(r);
}

/* The pid of the only child a state file lists, or -1. */
static pid_t recorded_pid(const char *path, unsigned long long *start)
{
    char text[4352];
    int pid, used = 0;
    unsigned long long st;

    if (ru_read_text(path, text, sizeof(text)) <= 0)
        return -1;
    const char *slots = ru_state_slots(text);
    if (sscanf(slots, "%d %llu\n%n", &pid, &st, &used) != 2 || slots[used] != '\0')
        return -1;
    if (start != NULL)
        *start = st;
    return pid;
}

/* registry.h, jpt_registry_free: "every child reaped before it returns";
 * the pid is learnt from the state file. */
static void run_times_out_while_a_call_runs_and_free_kills_it(void **state)
{
    (void)state;
    scratch s;
    scratch_make(&s);
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 300, .drain_ms = 100,
                              .state_file = s.file};
    jpt_registry *r = ru_registry_with(&o, js(quick_tools));
    jpt_batch *b = NULL;

    assert_int_equal(jpt_registry_submit(r, js("[{'id':'a','name':'nap','arguments':{'ms':2000}}]"),
                                         &b),
                     JPT_OK);
    int rc = jpt_registry_run(r, 100);
    int done = jpt_batch_done(b);
    pid_t pid = recorded_pid(s.file, NULL);
    /* The batch is still held: the registry frees it. */
    jpt_registry_free(r);
    bool gone = pid > 0 && kill(pid, 0) < 0 && errno == ESRCH;
    scratch_remove(&s);
    assert_int_equal(rc, JPT_ERR_TIMEOUT);
    assert_int_equal(done, 0);
    assert_true(pid > 0);
    assert_true(gone);
}

static void wait_refuses_a_batch_of_another_registry(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(quick_tools));
    jpt_registry *other = ru_registry(js(quick_tools));
    jpt_batch *b = NULL;

    assert_int_equal(jpt_registry_submit(r, js("[{'id':'a','name':'one','arguments':{}}]"), &b),
                     JPT_OK);
    assert_int_equal(jpt_registry_wait(other, b, WAIT_MS), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);
    jpt_batch_free(b);
    jpt_registry_free(other);
    jpt_registry_free(r);
}

static void results_show_a_running_call_as_pending(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(quick_tools));
    jpt_batch *b = NULL;
    char *text = NULL;

    assert_int_equal(jpt_registry_submit(r, js("[{'id':'c1','name':'nap','arguments':{'ms':2000}},"
                                               "{'id':'c2','name':'nope','arguments':{}}]"),
                                         &b),
                     JPT_OK);
    /* Calls start at the next dispatch; then the unknown tool has its
     * result and the sleeper runs. */
    assert_int_equal(jpt_batch_results_json(b, &text), JPT_OK);
    tu_assert_json_equal(text, js("[{'id':'c1','content':null,'is_error':false,'pending':true},"
                                  "{'id':'c2','content':null,'is_error':false,'pending':true}]"));
    jpt_free(text);
    /* Starting calls takes a dispatch or a few (each does a bounded
     * slice of work). */
    for (int i = 0; i < 100; i++) {
        jpt_registry_dispatch(r);
        assert_int_equal(jpt_batch_results_json(b, &text), JPT_OK);
        if (strstr(text, "Unknown tool") != NULL)
            break;
        jpt_free(text);
        text = NULL;
    }
    assert_int_equal(jpt_batch_done(b), 0);
    tu_assert_json_equal(text, js("[{'id':'c1','content':null,'is_error':false,'pending':true},"
                                  "{'id':'c2','content':'Unknown tool `nope`','is_error':true}]"));
    jpt_free(text);
    jpt_batch_free(b);
    jpt_registry_free(r);
}

/* registry.h: "Calls still in flight keep running and their results are
 * dropped". Blocks are counted by the test allocator; a first call warms
 * up what the loop keeps for good. */
static void freeing_a_batch_in_flight_leaks_nothing(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(quick_tools));
    jpt_batch *b = NULL;
    jpt_event *e;

    json_decref(ru_run(r, js("[{'id':'w','name':'nap','arguments':{'ms':10}}]")));
    while (jpt_registry_next_event(r, &e) == JPT_OK)
        jpt_event_free(e);
    long live = tu_live_blocks();

    assert_true(live > 0); /* the counting allocator is in use */
    assert_int_equal(jpt_registry_submit(r, js("[{'id':'a','name':'nap','arguments':{'ms':200}}]"),
                                         &b),
                     JPT_OK);
    assert_int_equal(jpt_batch_done(b), 0);
    jpt_batch_free(b);
    assert_int_equal(jpt_registry_run(r, WAIT_MS), JPT_OK);
    while (jpt_registry_next_event(r, &e) == JPT_OK)
        jpt_event_free(e);
    assert_int_equal(tu_live_blocks() - live, 0);
    jpt_registry_free(r);
}

/* ---- State file and orphans (RFD 009, "Handle cleanup guarantees") ---------------- */

static const char sleeper_tool[] =
    "{'tools':[{'name':'sleeper','stateful':true,'command':['" TOOL("sleep-ms") "','5000']}]}";

static jpt_registry *registry_with_state_file(const scratch *s)
{
    jpt_registry_options o = {sizeof(o), .kill_grace_ms = 300, .drain_ms = 100,
                              .state_file = s->file};
    return ru_registry_with(&o, js(sleeper_tool));
}

/* Issue 3 §2: the state file records "pid and start time from /proc". */
static void state_file_lists_a_live_child_with_its_start_time(void **state)
{
    (void)state;
    scratch s;
    scratch_make(&s);
    jpt_registry *r = registry_with_state_file(&s);
    unsigned long long start = 0;
    char exe_link[64], exe[PATH_MAX] = {0};

    json_t *resp = act(r, "sleeper", js("{'action':'spawn','id':'zz'}"), NULL);
    assert_string_equal(field(resp, "state"), "running");
    json_decref(resp);
    pid_t pid = recorded_pid(s.file, &start);
    bool alive = pid > 0 && kill(pid, 0) == 0;
    unsigned long long actual_start = pid > 0 ? start_time_of(pid) : 0;
    snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", (int)pid);
    if (pid > 0 && readlink(exe_link, exe, sizeof(exe) - 1) < 0)
        exe[0] = '\0';
    json_decref(act(r, "sleeper", js("{'action':'abort','id':'zz'}"), NULL));
    jpt_registry_free(r);
    scratch_remove(&s);

    assert_true(pid > 0);
    assert_true(alive);
    assert_true(actual_start != 0);
    assert_true(start == actual_start);
    ru_assert_contains(exe, "/sleep-ms");
}

static void state_file_no_longer_lists_an_aborted_child(void **state)
{
    (void)state;
    scratch s;
    scratch_make(&s);
    jpt_registry *r = registry_with_state_file(&s);
    char text[4352];

    json_decref(act(r, "sleeper", js("{'action':'spawn','id':'zz'}"), NULL));
    pid_t pid = recorded_pid(s.file, NULL);
    json_t *resp = act(r, "sleeper", js("{'action':'abort','id':'zz'}"), NULL);
    long len = ru_read_text(s.file, text, sizeof(text));
    json_decref(resp);
    jpt_registry_free(r);
    scratch_remove(&s);
    assert_true(pid > 0);
    /* Its slot is blank: only spaces and newlines remain. */
    assert_true(len >= 0);
    const char *slots = ru_state_slots(text);
    assert_int_equal(strspn(slots, " \n"), strlen(slots));
}

/* The header is silent on the file once the registry is gone; the library
 * removes it, having no live child left to list. */
static void state_file_is_removed_when_the_registry_is_freed(void **state)
{
    (void)state;
    scratch s;
    scratch_make(&s);
    jpt_registry *r = registry_with_state_file(&s);
    char text[64];

    json_decref(act(r, "sleeper", js("{'action':'spawn','id':'zz'}"), NULL));
    jpt_registry_free(r);
    long len = ru_read_text(s.file, text, sizeof(text));
    scratch_remove(&s);
    assert_int_equal(len, -1);
}

static void write_state_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* registry.h: "A process is killed only if its pid still has the recorded
 * start time, so a reused pid is never touched". */
static void reap_stale_kills_the_recorded_process_only_and_removes_the_file(void **state)
{
    (void)state;
    scratch s;
    scratch_make(&s);
    pid_t pid = start_orphan();
    unsigned long long start = start_time_of(pid);
    char text[256], pid_max_text[32];
    size_t killed = 99;
    int status = 0;

    assert_true(ru_read_text("/proc/sys/kernel/pid_max", pid_max_text, sizeof(pid_max_text)) > 0);
    /* (b) the same pid with another start time, (c) a pid that cannot exist
     * (pids stay below pid_max), (a) the process itself. */
    snprintf(text, sizeof(text), "%d %llu\n%ld 12345\n%d %llu\n", (int)pid, start + 1,
             atol(pid_max_text), (int)pid, start);
    write_state_file(s.file, text);
    int rc = jpt_registry_reap_stale(s.file, &killed);
    pid_t reaped = waitpid(pid, &status, 0);
    bool file_left = access(s.file, F_OK) == 0;
    scratch_remove(&s);

    assert_true(start != 0);
    assert_int_equal(rc, JPT_OK);
    assert_int_equal(killed, 1);
    assert_int_equal(reaped, pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    assert_false(file_left);
}

static void reap_stale_spares_a_pid_whose_start_time_differs(void **state)
{
    (void)state;
    scratch s;
    scratch_make(&s);
    pid_t pid = start_orphan();
    unsigned long long start = start_time_of(pid);
    char text[128];
    size_t killed = 99;
    int status = 0;

    snprintf(text, sizeof(text), "%d %llu\n", (int)pid, start + 1);
    write_state_file(s.file, text);
    int rc = jpt_registry_reap_stale(s.file, &killed);
    bool alive = waitpid(pid, &status, WNOHANG) == 0;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    scratch_remove(&s);

    assert_true(start != 0);
    assert_int_equal(rc, JPT_OK);
    assert_int_equal(killed, 0);
    assert_true(alive);
}

static void reap_stale_of_a_missing_file_kills_nothing(void **state)
{
    (void)state;
    size_t killed = 99;

    assert_int_equal(jpt_registry_reap_stale("/nonexistent/jpt-no-such-dir/children", &killed),
                     JPT_OK);
    assert_int_equal(killed, 0);
}

static void reap_stale_refuses_a_null_path(void **state)
{
    (void)state;
    size_t killed = 99;

    assert_int_equal(jpt_registry_reap_stale(NULL, &killed), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_reap_stale(NULL, NULL), JPT_ERR_INVALID);
}

/* common.h, "NULL for the object a function works on is never a crash":
 * every public function, given NULL for its object, answers by the one
 * rule (issue 8). */
static void every_function_takes_null_by_the_one_rule(void **state)
{
    (void)state;
    char *text = NULL;
    jpt_event *e = NULL;
    jpt_batch *b = NULL;
    jpt_state *st = NULL;
    const jpt_registry_options o = {.size = sizeof(o)};
    jpt_builtin_ops ops = {sizeof(ops), NULL, NULL, NULL};
    jpt_resource res = {.size = sizeof(res)};

    /* Statuses. */
    assert_int_equal(jpt_registry_new(&o, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_load_tools(NULL, "{}", 0), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_add_builtin(NULL, "{}", &ops, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_tools_json(NULL, JPT_DIALECT_OPENAI, &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_submit(NULL, "[]", &b), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_end_turn(NULL, 0, &b), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_take_notifications(NULL, &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_take_turn_text(NULL, NULL, &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_next_event(NULL, &e), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_dispatch(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_run(NULL, 0), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_wait(NULL, NULL, 0), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_wakeup(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_shutdown(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_reap_stale(NULL, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_batch_results_json(NULL, &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_batch_results_json_as(NULL, JPT_DIALECT_AS_CALLED, &text),
                     JPT_ERR_INVALID);
    assert_int_equal(jpt_batch_cancel_call(NULL, "c"), JPT_ERR_INVALID);
    assert_int_equal(jpt_batch_set_call_timeout(NULL, "c", 1), JPT_ERR_INVALID);
    jpt_registry_set_output_handler(NULL, NULL, NULL);
    assert_int_equal(jpt_inquiry_answer(NULL, "true"), JPT_ERR_INVALID);
    assert_int_equal(jpt_inquiry_cancel(NULL, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_handle_update(NULL, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_new(JPT_STATE_RUNNING, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_add_text(NULL, "x"), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_add_resource(NULL, &res), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_add_question(NULL, "q", "?", NULL, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_add_block_json(NULL, "{}"), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_set_structured_content(NULL, "{}"), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_set_error(NULL, "x", 0), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_add_error_trace(NULL, "x"), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_render(NULL, NULL, &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_to_json(NULL, JPT_JSON_ENVELOPE, 0, &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_parse(NULL, 5, 0, &st), JPT_ERR_INVALID);
    assert_int_equal(jpt_schema_check(NULL, "1", NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_uri_canonicalize(NULL, NULL, &text), JPT_ERR_INVALID);
    /* Getters of status-like ints. */
    assert_int_equal(jpt_registry_get_fd(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_registry_get_timeout(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_event_type(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_inquiry_target(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_state_kind(NULL), JPT_ERR_INVALID);
    /* Yes/no and counts. */
    assert_int_equal(jpt_batch_done(NULL), 0);
    assert_int_equal(jpt_event_state(NULL), 0);
    assert_int_equal(jpt_state_is_error(NULL), 0);
    assert_int_equal(jpt_state_error_transient(NULL), 0);
    assert_int_equal(jpt_state_error_trace_count(NULL), 0);
    assert_int_equal(jpt_state_block_count(NULL), 0);
    assert_int_equal(jpt_state_block_type(NULL, 0), 0);
    assert_int_equal(jpt_state_warning_count(NULL), 0);
    /* Pointers. */
    assert_null(jpt_event_call_id(NULL));
    assert_null(jpt_event_handle_id(NULL));
    assert_null(jpt_event_tool(NULL));
    assert_null(jpt_event_batch(NULL));
    assert_null(jpt_inquiry_tool(NULL));
    assert_null(jpt_inquiry_call_id(NULL));
    assert_null(jpt_inquiry_handle_id(NULL));
    assert_null(jpt_inquiry_question_json(NULL));
    assert_null(jpt_inquiry_context(NULL));
    assert_null(jpt_handle_id(NULL));
    assert_null(jpt_handle_tool(NULL));
    assert_null(jpt_handle_get_userdata(NULL));
    assert_null(jpt_state_ref(NULL));
    assert_null(jpt_state_error_trace(NULL, 0));
    assert_null(jpt_state_structured_content(NULL));
    assert_null(jpt_state_block_field(NULL, 0, JPT_FIELD_TEXT, NULL));
    assert_null(jpt_state_warning(NULL, 0));
    assert_null(jpt_mime_fence_lang(NULL));
    /* Messages: never NULL. */
    assert_string_equal(jpt_registry_errmsg(NULL), "");
    assert_string_equal(jpt_inquiry_errmsg(NULL), "");
    assert_string_equal(jpt_state_errmsg(NULL), "");
    assert_string_equal(jpt_state_error_message(NULL), "");
    /* Frees, cancels, setters. */
    jpt_registry_free(NULL);
    jpt_registry_set_inquiry_handler(NULL, NULL, NULL);
    jpt_batch_cancel(NULL);
    jpt_batch_free(NULL);
    jpt_event_free(NULL);
    jpt_handle_set_userdata(NULL, NULL);
    jpt_state_unref(NULL);
    jpt_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* Schemas */
        cmocka_unit_test(git_schema_is_rfd_009s_example),
        cmocka_unit_test(cargo_check_schema_is_rfd_009s_example),
        cmocka_unit_test(anthropic_list_is_name_description_input_schema),
        cmocka_unit_test(openai_list_wraps_each_tool_as_a_function),
        cmocka_unit_test(mcp_list_is_a_tools_object_with_input_schema),
        cmocka_unit_test(gemini_list_is_function_declarations_with_flat_schemas),
        cmocka_unit_test(await_is_listed_with_stateful_tools_as_rfd_037_gives_it),
        cmocka_unit_test(await_is_not_listed_without_stateful_tools),
        cmocka_unit_test(flat_schema_has_an_action_enum_of_only_the_declared_actions),
        cmocka_unit_test(flat_schema_has_input_only_when_apply_is_declared),
        cmocka_unit_test(flat_schema_keeps_the_tools_properties_and_requires_nothing),
        cmocka_unit_test(one_shot_schema_is_its_parameters_unchanged),
        cmocka_unit_test(tool_without_parameters_takes_any_object),
        cmocka_unit_test(unknown_dialect_is_invalid),
        cmocka_unit_test(flat_schema_is_the_default_of_every_dialect),
        /* Loading */
        cmocka_unit_test(load_refuses_an_unknown_field),
        cmocka_unit_test(load_refuses_a_bad_name),
        cmocka_unit_test(load_refuses_a_stdio_tool_without_command),
        cmocka_unit_test(load_refuses_a_command_that_is_not_an_array_of_strings),
        cmocka_unit_test(load_refuses_an_unknown_placeholder_in_a_command),
        cmocka_unit_test(load_refuses_bad_actions),
        cmocka_unit_test(load_refuses_actions_without_stateful),
        cmocka_unit_test(load_refuses_a_bad_question_target),
        cmocka_unit_test(load_refuses_a_negative_settle_ms),
        cmocka_unit_test(load_checks_a_vfs_definition),
        cmocka_unit_test(load_refuses_runtime_builtin),
        cmocka_unit_test(load_refuses_env_mistakes),
        cmocka_unit_test(load_refuses_text_that_is_not_json),
        cmocka_unit_test(load_refuses_a_document_without_a_tools_array),
        cmocka_unit_test(load_refuses_a_name_already_loaded),
        cmocka_unit_test(load_refuses_a_name_defined_twice_in_one_document),
        cmocka_unit_test(load_replace_uses_the_new_definition_for_new_calls),
        cmocka_unit_test(load_with_one_bad_definition_adds_none_of_its_tools),
        cmocka_unit_test(load_calls_accumulate),
        /* Creating */
        cmocka_unit_test(new_with_null_options_roots_tools_in_the_current_directory),
        cmocka_unit_test(new_refuses_an_options_struct_that_is_too_small),
        cmocka_unit_test(new_takes_the_options_struct_of_an_older_caller),
        cmocka_unit_test(new_refuses_negative_durations),
        cmocka_unit_test(new_refuses_a_root_that_is_not_a_directory),
        cmocka_unit_test(calls_without_an_object_say_why_they_failed),
        cmocka_unit_test(last_error_is_the_threads_own),
        cmocka_unit_test(new_fails_when_the_state_file_cannot_be_written),
        /* Builtins */
        cmocka_unit_test(builtin_one_shot_result_is_the_rendering_of_its_stopped_state),
        cmocka_unit_test(builtin_one_shot_error_state_is_an_error_result),
        cmocka_unit_test(builtin_start_returning_an_error_fails_the_call),
        cmocka_unit_test(builtin_reports_its_result_later_from_outside_the_callbacks),
        cmocka_unit_test(builtin_start_runs_inside_dispatch_not_inside_submit),
        cmocka_unit_test(handle_update_after_stop_is_a_state_error),
        cmocka_unit_test(handle_update_copies_the_state),
        cmocka_unit_test(handle_update_refuses_null),
        cmocka_unit_test(builtin_spawn_answers_with_its_running_output),
        cmocka_unit_test(builtin_apply_receives_the_input_as_json),
        cmocka_unit_test(builtin_question_is_answered_through_apply),
        cmocka_unit_test(builtin_abort_runs_the_callback_and_stops_the_handle),
        cmocka_unit_test(handle_id_and_tool_are_the_models_names),
        cmocka_unit_test(handle_userdata_is_kept_with_the_handle),
        cmocka_unit_test(add_builtin_copies_the_ops),
        cmocka_unit_test(add_builtin_refuses_missing_ops_or_start),
        cmocka_unit_test(add_builtin_refuses_apply_declared_without_a_callback),
        cmocka_unit_test(add_builtin_checks_the_definition_as_load_tools_does),
        /* Events */
        cmocka_unit_test(two_calls_give_two_call_done_events_then_batch_done),
        cmocka_unit_test(next_event_is_again_when_there_is_none),
        /* Driving */
        cmocka_unit_test(fd_is_one_epoll_fd_that_never_changes),
        cmocka_unit_test(timeout_is_minus_one_when_idle),
        cmocka_unit_test(wakeup_makes_the_fd_readable_until_dispatched),
        cmocka_unit_test(run_returns_ok_once_every_call_finished),
        cmocka_unit_test(run_times_out_while_a_call_runs_and_free_kills_it),
        cmocka_unit_test(wait_refuses_a_batch_of_another_registry),
        cmocka_unit_test(results_show_a_running_call_as_pending),
        cmocka_unit_test(freeing_a_batch_in_flight_leaks_nothing),
        /* State file */
        cmocka_unit_test(state_file_lists_a_live_child_with_its_start_time),
        cmocka_unit_test(state_file_no_longer_lists_an_aborted_child),
        cmocka_unit_test(state_file_is_removed_when_the_registry_is_freed),
        cmocka_unit_test(reap_stale_kills_the_recorded_process_only_and_removes_the_file),
        cmocka_unit_test(reap_stale_spares_a_pid_whose_start_time_differs),
        cmocka_unit_test(reap_stale_of_a_missing_file_kills_nothing),
        cmocka_unit_test(reap_stale_refuses_a_null_path),
        cmocka_unit_test(every_function_takes_null_by_the_one_rule),
    };

    /* Counts the library's blocks (and jansson's, which go through the same
     * hook) for the leak checks; it must precede every other jptool call. */
    tu_install_counting_allocator();
    return TU_RUN(tests);
}
