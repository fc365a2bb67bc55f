/* Tool definitions: reading them from JSON with a precise error for every
 * mistake, and keeping them in the registry. A definition is checked whole
 * before anything changes. */
#include <stdio.h>
#include <string.h>

#include "registry/tools.h"

/* The keys of every runtime: a runtime refuses those of others with a
 * message of its own. */
static const char *const known_keys[] = {
    "name",      "description", "parameters", "runtime",   "stateful",
    "actions",   "question_target", "settle_ms", "yield_ms", "output_limit",
    "timeout_ms", "sandbox",    "spawn",      "options",   "command",
    "stdin",     "pty",         "env",        "files",     "request_timeout_ms",
    "os_sandbox", "pty_echo",
};

jpt__tool *jpt__tool_ref(jpt__tool *t)
{
    t->refs++;
    return t;
}

void jpt__tool_unref(jpt__tool *t)
{
    if (t == NULL || --t->refs > 0)
        return;
    jpt__free(t->name);
    jpt__free(t->description);
    json_decref(t->parameters);
    json_decref(t->options);
    if (t->rt != NULL && t->rt->forget != NULL)
        t->rt->forget(t);
    jpt__free(t);
}

/* A loaded tool by name. */
static jpt__tool *loaded(jpt_registry *r, const char *name)
{
    for (size_t i = 0; i < r->ntools; i++)
        if (strcmp(r->tools[i]->name, name) == 0)
            return r->tools[i];
    return NULL;
}

jpt__tool *jpt__tool_new_own(const char *name, const char *description, json_t *parameters,
                             const jpt__call_ops *ops)
{
    jpt__tool *t = jpt__calloc(1, sizeof(*t));

    if (t == NULL || (t->name = jpt__strdup(name)) == NULL ||
        (t->description = jpt__strdup(description)) == NULL ||
        (t->options = json_object()) == NULL) {
        if (t != NULL)
            t->refs = 1;
        jpt__tool_unref(t);
        json_decref(parameters);
        return NULL;
    }
    t->refs = 1;
    t->parameters = parameters;
    t->call_ops = ops;
    t->question_target = JPT_TARGET_ASSISTANT;
    t->settle_ms = t->yield_ms = -1;
    return t;
}

bool jpt__tools_have_stateful(const jpt_registry *r)
{
    for (size_t i = 0; i < r->ntools; i++)
        if (r->tools[i]->stateful)
            return true;
    return false;
}

jpt__tool *jpt__tool_find(jpt_registry *r, const char *name)
{
    /* RFD 037, "Schema availability": await is the registry's own tool,
     * there while a stateful tool is. */
    if (strcmp(name, "await") == 0)
        return r->await_tool != NULL && jpt__tools_have_stateful(r) ? r->await_tool : NULL;
    return loaded(r, name);
}

/* ---- Checking a definition ------------------------------------------------------ */

typedef struct checker {
    jpt_registry *r;
    const char *tool; /* for messages: the name, or "#3" before it is known */
} checker;

#define FAIL(c, status, ...) tool_error(c, status, __VA_ARGS__)

static int tool_error(checker *c, int status, const char *fmt, ...) JPT__PRINTF(3, 4);

static int tool_error(checker *c, int status, const char *fmt, ...)
{
    char detail[384];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    return jpt__err(&c->r->err, status, "tool '%s': %s", c->tool, detail);
}


static int take_bool(checker *c, const json_t *def, const char *key, bool *out)
{
    const json_t *v = json_object_get(def, key);

    if (v == NULL)
        return JPT_OK;
    if (!json_is_boolean(v))
        return FAIL(c, JPT_ERR_INVALID, "'%s' is %s, not a boolean", key,
                    jpt__json_type_phrase(v));
    *out = json_is_true(v);
    return JPT_OK;
}

/* A duration or size: a non-negative integer below `max`. */
static int take_count(checker *c, const json_t *def, const char *key, int64_t max,
                      int64_t *out)
{
    const json_t *v = json_object_get(def, key);

    if (v == NULL)
        return JPT_OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
        return FAIL(c, JPT_ERR_INVALID,
                    "'%s' must be an integer from 0 to %lld", key, (long long)max);
    *out = json_integer_value(v);
    return JPT_OK;
}


static int take_actions(checker *c, jpt__tool *t, const json_t *actions)
{
    size_t i;
    const json_t *a;

    if (!t->stateful) {
        if (actions != NULL)
            return FAIL(c, JPT_ERR_INVALID, "'actions' needs \"stateful\": true");
        return JPT_OK;
    }
    t->actions = JPT__ACTION_SPAWN;
    if (actions == NULL) {
        t->actions |= JPT__ACTION_FETCH | JPT__ACTION_APPLY | JPT__ACTION_ABORT;
        return JPT_OK;
    }
    if (!json_is_array(actions))
        return FAIL(c, JPT_ERR_INVALID, "'actions' must be an array of action names");
    json_array_foreach(actions, i, a) {
        int bit = jpt__action_from_name(json_string_value(a));
        if (bit == 0)
            return FAIL(c, JPT_ERR_INVALID,
                        "'actions[%zu]' must be \"spawn\", \"fetch\", \"apply\" or \"abort\"", i);
        t->actions |= (unsigned)bit;
    }
    return JPT_OK;
}


/* RFD 037's per-tool configuration: spawn.notifications and
 * spawn.lifecycle.on_turn_end. */
static int take_spawn(checker *c, jpt__tool *t, const json_t *spawn)
{
    static const struct {
        const char *name;
        unsigned bit;
    } flags[] = {
        {"on_success", JPT__NOTIFY_SUCCESS},
        {"on_failure", JPT__NOTIFY_FAILURE},
        {"on_waiting", JPT__NOTIFY_WAITING},
        {"on_content", JPT__NOTIFY_CONTENT},
    };
    const char *key;
    const json_t *v;

    t->notify = JPT__NOTIFY_DEFAULT;
    t->on_turn_end = JPT__TURN_INQUIRE;
    if (spawn == NULL)
        return JPT_OK;
    if (!json_is_object(spawn))
        return FAIL(c, JPT_ERR_INVALID, "'spawn' must be an object");
    json_object_foreach((json_t *)spawn, key, v) {
        if (strcmp(key, "notifications") == 0) {
            const char *flag;
            const json_t *on;
            if (!json_is_object(v))
                return FAIL(c, JPT_ERR_INVALID, "'spawn.notifications' must be an object");
            json_object_foreach((json_t *)v, flag, on) {
                size_t i = 0;
                while (i < sizeof(flags) / sizeof(flags[0]) && strcmp(flag, flags[i].name) != 0)
                    i++;
                if (i == sizeof(flags) / sizeof(flags[0]))
                    return FAIL(c, JPT_ERR_INVALID,
                                "unknown field 'spawn.notifications.%s' (expected on_success, "
                                "on_failure, on_waiting, on_content)",
                                flag);
                if (!json_is_boolean(on))
                    return FAIL(c, JPT_ERR_INVALID,
                                "'spawn.notifications.%s' must be a boolean", flag);
                t->notify = json_is_true(on) ? t->notify | flags[i].bit
                                             : t->notify & ~flags[i].bit;
            }
        } else if (strcmp(key, "lifecycle") == 0) {
            const char *field;
            const json_t *value;
            if (!json_is_object(v))
                return FAIL(c, JPT_ERR_INVALID, "'spawn.lifecycle' must be an object");
            json_object_foreach((json_t *)v, field, value) {
                const char *policy = json_string_value(value);
                if (strcmp(field, "on_turn_end") != 0)
                    return FAIL(c, JPT_ERR_INVALID,
                                "unknown field 'spawn.lifecycle.%s' (expected on_turn_end)",
                                field);
                if (policy != NULL && strcmp(policy, "inquire") == 0)
                    t->on_turn_end = JPT__TURN_INQUIRE;
                else if (policy != NULL && strcmp(policy, "await") == 0)
                    t->on_turn_end = JPT__TURN_AWAIT;
                else if (policy != NULL && strcmp(policy, "abort") == 0)
                    t->on_turn_end = JPT__TURN_ABORT;
                else
                    return FAIL(c, JPT_ERR_INVALID,
                                "'spawn.lifecycle.on_turn_end' must be \"inquire\", "
                                "\"await\" or \"abort\"");
            }
        } else if (strcmp(key, "stateful") == 0) {
            /* RFD 037 writes the flag under spawn, too. */
            if (!json_is_boolean(v))
                return FAIL(c, JPT_ERR_INVALID, "'spawn.stateful' must be a boolean");
            t->stateful = t->stateful || json_is_true(v);
        } else
            return FAIL(c, JPT_ERR_INVALID,
                        "unknown field 'spawn.%s' (expected stateful, notifications, "
                        "lifecycle)",
                        key);
    }
    return JPT_OK;
}

/* Reads one definition into a new tool; `runtime` is forced for builtins. */
/* The name (which the messages then use), and no key that no one reads. */
static int check_name_and_keys(checker *c, const json_t *def)
{
    const char *key;
    const json_t *v;

    if (!json_is_object(def))
        return FAIL(c, JPT_ERR_INVALID, "the definition is %s, not an object",
                    jpt__json_type_phrase(def));
    const json_t *name = json_object_get(def, "name");
    if (!json_is_string(name))
        return FAIL(c, JPT_ERR_INVALID, "'name' is required and must be a string");
    if (!jpt__valid_name(json_string_value(name), ""))
        return FAIL(c, JPT_ERR_INVALID,
                    "'name' \"%.80s\" must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -",
                    json_string_value(name));
    c->tool = json_string_value(name);
    /* RFD 037: await is the registry's own tool. */
    if (strcmp(c->tool, "await") == 0)
        return FAIL(c, JPT_ERR_INVALID, "the name 'await' is reserved for the await tool");
    json_object_foreach((json_t *)def, key, v) {
        bool known = false;
        for (size_t i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++)
            known = known || strcmp(key, known_keys[i]) == 0;
        if (!known)
            return FAIL(c, JPT_ERR_INVALID, "unknown field '%s'", key);
    }
    return JPT_OK;
}

/* The first string holding a NUL in `v`, for a message: a definition's
 * strings become C strings, which end at the first NUL (state.h, the one
 * rule). */
static bool holds_nul(const json_t *v)
{
    const char *key;
    const json_t *member;
    size_t i;

    if (json_is_string(v))
        return memchr(json_string_value(v), '\0', json_string_length(v)) != NULL;
    json_object_foreach((json_t *)v, key, member)
        if (holds_nul(member))
            return true;
    json_array_foreach(v, i, member)
        if (holds_nul(member))
            return true;
    return false;
}

/* No NUL but in the JSON values a tool is given as JSON (parameters,
 * options), and parameters that say only what the checker checks. */
static int check_values(checker *c, const json_t *def)
{
    const char *key;
    const json_t *v;
    char *why = NULL;

    json_object_foreach((json_t *)def, key, v)
        if (strcmp(key, "parameters") != 0 && strcmp(key, "options") != 0 && holds_nul(v))
            return FAIL(c, JPT_ERR_INVALID,
                        "'%s' holds a NUL character (\\u0000): only 'parameters' and "
                        "'options', which stay JSON, may",
                        key);
    const json_t *params = json_object_get(def, "parameters");
    if (!json_is_object(params))
        return JPT_OK;
    int rc = jpt__schema_lint(params, &why);
    if (rc == JPT_ERR_NOMEM)
        return FAIL(c, rc, "out of memory");
    if (rc < 0)
        rc = FAIL(c, rc, "'parameters' %s", why);
    jpt__free(why);
    return rc;
}

/* Description, parameters and options. */
static int take_texts(checker *c, jpt__tool *t, const json_t *def)
{
    const json_t *desc = json_object_get(def, "description");
    const json_t *params = json_object_get(def, "parameters");
    const json_t *options = json_object_get(def, "options");

    if (desc != NULL && !json_is_string(desc))
        return FAIL(c, JPT_ERR_INVALID, "'description' must be a string");
    if (params != NULL && !json_is_object(params))
        return FAIL(c, JPT_ERR_INVALID, "'parameters' must be a JSON Schema object");
    if (options != NULL && !json_is_object(options))
        return FAIL(c, JPT_ERR_INVALID, "'options' must be an object");
    t->description = jpt__strdup(desc ? json_string_value(desc) : "");
    t->parameters = params ? json_incref((json_t *)params) : json_pack("{s:s}", "type", "object");
    t->options = options ? json_incref((json_t *)options) : json_object();
    if (t->description == NULL || t->parameters == NULL || t->options == NULL)
        return FAIL(c, JPT_ERR_NOMEM, "out of memory");
    return JPT_OK;
}

/* The runtimes by the name a definition's "runtime" gives (registry.h);
 * the first is the default. */
static const struct {
    const char *name;
    const jpt__runtime_ops *ops;
} runtimes[] = {
    {"stdio", &jpt__runtime_process},
    {"vfs", &jpt__runtime_vfs},
    {"builtin", &jpt__runtime_builtin},
};

static const jpt__runtime_ops *runtime_named(const char *name)
{
    for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
        if (strcmp(runtimes[i].name, name) == 0)
            return runtimes[i].ops;
    return NULL;
}

/* What runs the tool, and that runtime's own keys. */
static int take_runtime(checker *c, jpt__tool *t, const json_t *def, bool builtin)
{
    const json_t *v = json_object_get(def, "runtime");
    const char *runtime = v != NULL ? json_string_value(v) : builtin ? "builtin" : runtimes[0].name;
    char why[384];

    if (runtime == NULL)
        return FAIL(c, JPT_ERR_INVALID, "'runtime' must be a string");
    t->rt = runtime_named(runtime);
    if (builtin && t->rt != &jpt__runtime_builtin)
        return FAIL(c, JPT_ERR_INVALID, "'runtime' of a builtin tool must be \"builtin\"");
    if (!builtin && t->rt == &jpt__runtime_builtin)
        return FAIL(c, JPT_ERR_INVALID,
                    "runtime \"builtin\" tools are added with jpt_registry_add_builtin");
    if (t->rt == NULL)
        return FAIL(c, JPT_ERR_INVALID,
                    "'runtime' must be \"stdio\", \"vfs\" or \"builtin\", not \"%s\"", runtime);
    int rc = t->rt->check(c->r, t, def, why, sizeof(why));
    return rc < 0 ? FAIL(c, rc, "%s", why) : JPT_OK;
}

static int take_target(checker *c, jpt__tool *t, const json_t *def)
{
    const json_t *v = json_object_get(def, "question_target");
    const char *target = json_string_value(v);

    if (v == NULL)
        return JPT_OK;
    if (target != NULL && strcmp(target, "user") == 0)
        t->question_target = JPT_TARGET_USER;
    else if (target != NULL && strcmp(target, "assistant") == 0)
        t->question_target = JPT_TARGET_ASSISTANT;
    else
        return FAIL(c, JPT_ERR_INVALID, "'question_target' must be \"user\" or \"assistant\"");
    return JPT_OK;
}

/* settle_ms, yield_ms, output_limit, timeout_ms. */
static int take_limits(checker *c, jpt__tool *t, const json_t *def)
{
    int64_t settle = -1, yield = -1, limit = 0, timeout = 0;
    int rc;

    if ((rc = take_count(c, def, "settle_ms", 3600000, &settle)) < 0 ||
        (rc = take_count(c, def, "yield_ms", 3600000, &yield)) < 0 ||
        (rc = take_count(c, def, "output_limit", (int64_t)1 << 30, &limit)) < 0 ||
        (rc = take_count(c, def, "timeout_ms", (int64_t)1 << 40, &timeout)) < 0)
        return rc;
    if (json_object_get(def, "output_limit") != NULL && limit < 64)
        return FAIL(c, JPT_ERR_INVALID, "'output_limit' must be at least 64 bytes");
    t->settle_ms = (int)settle;
    t->yield_ms = (int)yield;
    t->output_limit = (size_t)limit;
    t->timeout_ms = timeout;
    return JPT_OK;
}

/* Reads one definition into a new tool; `builtin` forces its runtime. */
static int tool_from_json(checker *c, const json_t *def, bool builtin, jpt__tool **out)
{
    int rc;

    *out = NULL;
    if ((rc = check_name_and_keys(c, def)) < 0)
        return rc;
    jpt__tool *t = jpt__calloc(1, sizeof(*t));
    if (t == NULL)
        return FAIL(c, JPT_ERR_NOMEM, "out of memory");
    t->refs = 1;
    t->question_target = JPT_TARGET_USER;
    if ((t->name = jpt__strdup(c->tool)) == NULL)
        rc = FAIL(c, JPT_ERR_NOMEM, "out of memory");
    if (rc < 0 || (rc = check_values(c, def)) < 0 || (rc = take_texts(c, t, def)) < 0 ||
        (rc = take_runtime(c, t, def, builtin)) < 0 ||
        (rc = take_bool(c, def, "stateful", &t->stateful)) < 0 ||
        (rc = take_spawn(c, t, json_object_get(def, "spawn"))) < 0 ||
        (rc = take_actions(c, t, json_object_get(def, "actions"))) < 0 ||
        (rc = take_target(c, t, def)) < 0 || (rc = take_limits(c, t, def)) < 0) {
        jpt__tool_unref(t);
        return rc;
    }
    *out = t;
    return JPT_OK;
}

/* Adds checked tools; replaces same-named ones only if asked. All or none. */
static int add_tools(jpt_registry *r, jpt__tool **tools, size_t n, bool replace)
{
    size_t adding = 0;

    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(tools[i]->name, tools[j]->name) == 0)
                return jpt__err(&r->err, JPT_ERR_EXISTS,
                                "tool '%s' is defined twice in the document",
                                tools[i]->name);
        jpt__tool *old = loaded(r, tools[i]->name);
        if (old != NULL && !replace)
            return jpt__err(&r->err, JPT_ERR_EXISTS,
                            "tool '%s' is already loaded (use JPT_LOAD_REPLACE to "
                            "replace it)",
                            tools[i]->name);
        adding += old == NULL;
    }
    if (adding > 0) {
        jpt__tool **grown =
            jpt__array_reserve(r->tools, &r->cap_tools, r->ntools + adding, sizeof(*grown), 8);
        if (grown == NULL)
            return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory adding tools");
        r->tools = grown;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k;
        for (k = 0; k < r->ntools; k++)
            if (strcmp(r->tools[k]->name, tools[i]->name) == 0)
                break;
        /* Handles of a replaced tool keep the old definition until they end. */
        if (k < r->ntools)
            jpt__tool_unref(r->tools[k]);
        else
            r->ntools++;
        r->tools[k] = tools[i];
        tools[i] = NULL;
    }
    return JPT_OK;
}

JPT_EXPORT int jpt_registry_load_tools(jpt_registry *r, const char *config_json,
                                       unsigned flags)
{
    json_error_t jerr;
    json_t *doc = NULL;
    jpt__tool **tools = NULL;
    size_t n = 0;
    int rc;

    if (r == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&r->err);
    if (config_json == NULL || (flags & ~JPT_LOAD_REPLACE) != 0)
        return jpt__err(&r->err, JPT_ERR_INVALID, "load_tools: NULL config or unknown flags");
    /* JSON_ALLOW_NUL: parameters may spell \u0000 (state.h, the one rule);
     * the other fields refuse it by name (check_values). */
    rc = jpt__json_load(config_json, strlen(config_json), JSON_ALLOW_NUL, &doc, &jerr);
    if (rc == JPT_ERR_NOMEM)
        return jpt__err(&r->err, rc, "out of memory reading the tool config");
    if (rc < 0)
        return jpt__err(&r->err, rc, "the tool config is not JSON: %s (line %d, column %d)",
                        jerr.text, jerr.line, jerr.column);
    const json_t *list = json_object_get(doc, "tools");
    if (!json_is_array(list)) {
        json_decref(doc);
        return jpt__err(&r->err, JPT_ERR_INVALID,
                        "the tool config must be an object with a \"tools\" array");
    }
    tools = jpt__calloc(json_array_size(list) ? json_array_size(list) : 1, sizeof(*tools));
    if (tools == NULL) {
        json_decref(doc);
        return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory reading the tool config");
    }
    for (n = 0; n < json_array_size(list); n++) {
        char label[32];
        snprintf(label, sizeof(label), "#%zu", n);
        checker c = {r, label};
        if ((rc = tool_from_json(&c, json_array_get(list, n), false, &tools[n])) < 0)
            break;
    }
    if (rc == JPT_OK)
        rc = add_tools(r, tools, n, flags & JPT_LOAD_REPLACE);
    for (size_t i = 0; i < n; i++)
        jpt__tool_unref(tools[i]);
    jpt__free(tools);
    json_decref(doc);
    return rc;
}

JPT_EXPORT int jpt_registry_add_builtin(jpt_registry *r, const char *definition_json,
                                        const jpt_builtin_ops *ops, void *ud)
{
    json_error_t jerr;
    json_t *def = NULL;
    jpt__tool *t = NULL;
    int rc;

    if (r == NULL)
        return JPT_ERR_INVALID;
    jpt__err_clear(&r->err);
    if (definition_json == NULL || ops == NULL || ops->start == NULL)
        return jpt__err(&r->err, JPT_ERR_INVALID,
                        "add_builtin: a definition and ops with a start callback are required");
    if ((rc = jpt__struct_check(ops, ops->size, sizeof(*ops))) < 0)
        return jpt__err(&r->err, rc, rc == JPT_ERR_INVALID
                                         ? "add_builtin: ops->size is smaller than "
                                           "sizeof(jpt_builtin_ops)"
                                         : "add_builtin: the ops set fields this library "
                                           "does not know");
    rc = jpt__json_load(definition_json, strlen(definition_json), JSON_ALLOW_NUL, &def, &jerr);
    if (rc < 0)
        return jpt__err(&r->err, rc, "the builtin definition is not JSON: %s", jerr.text);
    checker c = {r, "(builtin)"};
    rc = tool_from_json(&c, def, true, &t);
    json_decref(def);
    if (rc < 0)
        return rc;
    if ((t->actions & JPT__ACTION_APPLY) && ops->apply == NULL) {
        rc = jpt__err(&r->err, JPT_ERR_INVALID,
                      "tool '%s': 'actions' include \"apply\" but the ops have no apply "
                      "callback",
                      t->name);
        jpt__tool_unref(t);
        return rc;
    }
    jpt__builtin_set_ops(t, ops, ud);
    rc = add_tools(r, &t, 1, false);
    jpt__tool_unref(t);
    return rc;
}
