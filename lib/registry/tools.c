/* Tool definitions: reading them from JSON with a precise error for every
 * mistake, and keeping them in the registry. A definition is checked whole
 * before anything changes. */
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

static const char *const known_keys[] = {
    "name",        "description",     "parameters", "runtime",   "command",
    "stdin",       "stateful",        "actions",    "pty",       "question_target",
    "settle_ms",   "yield_ms",        "output_limit", "env",     "timeout_ms",
    "sandbox",     "spawn",           "options",
};

const char *jpt__action_name(int action)
{
    switch (action) {
    case JPT__ACTION_SPAWN:
        return "spawn";
    case JPT__ACTION_FETCH:
        return "fetch";
    case JPT__ACTION_APPLY:
        return "apply";
    case JPT__ACTION_ABORT:
        return "abort";
    }
    return "run";
}

void jpt__actions_list(unsigned actions, char *out, size_t n)
{
    size_t len = 0;

    out[0] = '\0';
    for (int a = JPT__ACTION_SPAWN; a <= JPT__ACTION_ABORT; a <<= 1)
        if (actions & (unsigned)a)
            len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s",
                                    len ? ", " : "", jpt__action_name(a));
}

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
    json_decref(t->command);
    json_decref(t->env_allow);
    json_decref(t->env_set);
    jpt__free(t);
}

jpt__tool *jpt__tool_find(jpt_registry *r, const char *name)
{
    for (size_t i = 0; i < r->ntools; i++)
        if (strcmp(r->tools[i]->name, name) == 0)
            return r->tools[i];
    return NULL;
}

int jpt__tool_settle_ms(const jpt_registry *r, const jpt__tool *t)
{
    return t->settle_ms >= 0 ? t->settle_ms : r->settle_ms;
}

int jpt__tool_yield_ms(const jpt_registry *r, const jpt__tool *t)
{
    return t->yield_ms >= 0 ? t->yield_ms : r->yield_ms;
}

size_t jpt__tool_output_limit(const jpt_registry *r, const jpt__tool *t)
{
    return t->output_limit > 0 ? t->output_limit : r->output_limit;
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

static bool valid_name(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
            return false;
    }
    return true;
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

static int take_command(checker *c, jpt__tool *t, const json_t *cmd)
{
    char why[256];
    size_t i;
    const json_t *arg;

    if (t->runtime == JPT__RUNTIME_BUILTIN) {
        if (cmd != NULL)
            return FAIL(c, JPT_ERR_INVALID, "'command' does not apply to a builtin tool");
        return JPT_OK;
    }
    if (cmd == NULL)
        return FAIL(c, JPT_ERR_INVALID, "'command' is required for a stdio tool");
    if (!json_is_array(cmd) || json_array_size(cmd) == 0)
        return FAIL(c, JPT_ERR_INVALID, "'command' must be a non-empty array of strings");
    json_array_foreach(cmd, i, arg) {
        if (!json_is_string(arg))
            return FAIL(c, JPT_ERR_INVALID, "'command[%zu]' is %s, not a string", i,
                        jpt__json_type_phrase(arg));
        if (jpt__command_check_template(json_string_value(arg), why, sizeof(why)) < 0)
            return FAIL(c, JPT_ERR_INVALID, "'command[%zu]': %s", i, why);
    }
    if (json_string_length(json_array_get(cmd, 0)) == 0)
        return FAIL(c, JPT_ERR_INVALID, "'command[0]' is empty");
    t->command = json_incref((json_t *)cmd);
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
        const char *name = json_string_value(a);
        int bit = 0;
        for (int b = JPT__ACTION_SPAWN; b <= JPT__ACTION_ABORT && name; b <<= 1)
            if (strcmp(name, jpt__action_name(b)) == 0)
                bit = b;
        if (bit == 0)
            return FAIL(c, JPT_ERR_INVALID,
                        "'actions[%zu]' must be \"spawn\", \"fetch\", \"apply\" or \"abort\"", i);
        t->actions |= (unsigned)bit;
    }
    return JPT_OK;
}

static int take_env(checker *c, jpt__tool *t, const json_t *env)
{
    const char *key;
    const json_t *v;
    size_t i;

    if (env == NULL)
        return JPT_OK;
    if (!json_is_object(env))
        return FAIL(c, JPT_ERR_INVALID, "'env' must be an object");
    json_object_foreach((json_t *)env, key, v) {
        if (strcmp(key, "inherit") == 0) {
            if (!json_is_boolean(v))
                return FAIL(c, JPT_ERR_INVALID, "'env.inherit' must be a boolean");
            t->env_inherit = json_is_true(v);
        } else if (strcmp(key, "allow") == 0) {
            if (!json_is_array(v))
                return FAIL(c, JPT_ERR_INVALID, "'env.allow' must be an array of names");
            const json_t *name;
            json_array_foreach(v, i, name) if (!json_is_string(name)) return FAIL(
                c, JPT_ERR_INVALID, "'env.allow[%zu]' is %s, not a string", i,
                jpt__json_type_phrase(name));
            t->env_allow = json_incref((json_t *)v);
        } else if (strcmp(key, "set") == 0) {
            const char *name;
            const json_t *value;
            if (!json_is_object(v))
                return FAIL(c, JPT_ERR_INVALID, "'env.set' must be an object of strings");
            json_object_foreach((json_t *)v, name, value) if (!json_is_string(value)) return FAIL(
                c, JPT_ERR_INVALID, "'env.set.%s' is %s, not a string", name,
                jpt__json_type_phrase(value));
            t->env_set = json_incref((json_t *)v);
        } else
            return FAIL(c, JPT_ERR_INVALID,
                        "unknown field 'env.%s' (expected inherit, allow, set)", key);
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
static int tool_from_json(checker *c, const json_t *def, bool builtin, jpt__tool **out)
{
    const char *key;
    const json_t *v;
    int64_t n;
    int rc;

    *out = NULL;
    if (!json_is_object(def))
        return FAIL(c, JPT_ERR_INVALID, "the definition is %s, not an object",
                    jpt__json_type_phrase(def));
    const json_t *name = json_object_get(def, "name");
    if (!json_is_string(name))
        return FAIL(c, JPT_ERR_INVALID, "'name' is required and must be a string");
    if (!valid_name(json_string_value(name)))
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

    jpt__tool *t = jpt__calloc(1, sizeof(*t));
    if (t == NULL)
        return FAIL(c, JPT_ERR_NOMEM, "out of memory");
    t->refs = 1;
    t->settle_ms = t->yield_ms = -1;
    t->env_inherit = true;
    t->question_target = JPT_TARGET_USER;
    t->runtime = JPT__RUNTIME_STDIO;
    if ((t->name = jpt__strdup(c->tool)) == NULL) {
        rc = FAIL(c, JPT_ERR_NOMEM, "out of memory");
        goto fail;
    }

    const json_t *desc = json_object_get(def, "description");
    if (desc != NULL && !json_is_string(desc)) {
        rc = FAIL(c, JPT_ERR_INVALID, "'description' must be a string");
        goto fail;
    }
    if ((t->description = jpt__strdup(desc ? json_string_value(desc) : "")) == NULL) {
        rc = FAIL(c, JPT_ERR_NOMEM, "out of memory");
        goto fail;
    }

    const json_t *params = json_object_get(def, "parameters");
    if (params != NULL && !json_is_object(params)) {
        rc = FAIL(c, JPT_ERR_INVALID, "'parameters' must be a JSON Schema object");
        goto fail;
    }
    t->parameters = params ? json_incref((json_t *)params)
                           : json_pack("{s:s}", "type", "object");
    const json_t *options = json_object_get(def, "options");
    if (options != NULL && !json_is_object(options)) {
        rc = FAIL(c, JPT_ERR_INVALID, "'options' must be an object");
        goto fail;
    }
    t->options = options ? json_incref((json_t *)options) : json_object();
    if (t->parameters == NULL || t->options == NULL) {
        rc = FAIL(c, JPT_ERR_NOMEM, "out of memory");
        goto fail;
    }

    const char *runtime = json_string_value(json_object_get(def, "runtime"));
    if (json_object_get(def, "runtime") != NULL && runtime == NULL) {
        rc = FAIL(c, JPT_ERR_INVALID, "'runtime' must be a string");
        goto fail;
    }
    if (builtin) {
        if (runtime != NULL && strcmp(runtime, "builtin") != 0) {
            rc = FAIL(c, JPT_ERR_INVALID, "'runtime' of a builtin tool must be \"builtin\"");
            goto fail;
        }
        t->runtime = JPT__RUNTIME_BUILTIN;
    } else if (runtime == NULL || strcmp(runtime, "stdio") == 0)
        t->runtime = JPT__RUNTIME_STDIO;
    else if (strcmp(runtime, "builtin") == 0) {
        rc = FAIL(c, JPT_ERR_INVALID,
                  "runtime \"builtin\" tools are added with jpt_registry_add_builtin");
        goto fail;
    } else if (strcmp(runtime, "vfs") == 0) {
        rc = FAIL(c, JPT_ERR_UNSUPPORTED,
                  "runtime \"vfs\" is not available in this version of jptool");
        goto fail;
    } else {
        rc = FAIL(c, JPT_ERR_INVALID,
                  "'runtime' must be \"stdio\" or \"builtin\", not \"%s\"", runtime);
        goto fail;
    }

    if ((rc = take_command(c, t, json_object_get(def, "command"))) < 0 ||
        (rc = take_bool(c, def, "stdin", &t->stdin_json)) < 0 ||
        (rc = take_bool(c, def, "stateful", &t->stateful)) < 0 ||
        (rc = take_spawn(c, t, json_object_get(def, "spawn"))) < 0 ||
        (rc = take_actions(c, t, json_object_get(def, "actions"))) < 0 ||
        (rc = take_bool(c, def, "pty", &t->pty)) < 0 ||
        (rc = take_env(c, t, json_object_get(def, "env"))) < 0)
        goto fail;
    if (t->runtime == JPT__RUNTIME_BUILTIN && (t->stdin_json || t->pty)) {
        rc = FAIL(c, JPT_ERR_INVALID, "'%s' does not apply to a builtin tool",
                  t->pty ? "pty" : "stdin");
        goto fail;
    }
    if (t->pty && t->stdin_json) {
        rc = FAIL(c, JPT_ERR_INVALID, "'stdin' and 'pty' cannot both be true");
        goto fail;
    }

    const char *target = json_string_value(json_object_get(def, "question_target"));
    if (json_object_get(def, "question_target") != NULL) {
        if (target != NULL && strcmp(target, "user") == 0)
            t->question_target = JPT_TARGET_USER;
        else if (target != NULL && strcmp(target, "assistant") == 0)
            t->question_target = JPT_TARGET_ASSISTANT;
        else {
            rc = FAIL(c, JPT_ERR_INVALID,
                      "'question_target' must be \"user\" or \"assistant\"");
            goto fail;
        }
    }

    n = -1;
    if ((rc = take_count(c, def, "settle_ms", 3600000, &n)) < 0)
        goto fail;
    t->settle_ms = (int)n;
    n = -1;
    if ((rc = take_count(c, def, "yield_ms", 3600000, &n)) < 0)
        goto fail;
    t->yield_ms = (int)n;
    n = 0;
    if ((rc = take_count(c, def, "output_limit", (int64_t)1 << 30, &n)) < 0)
        goto fail;
    if (json_object_get(def, "output_limit") != NULL && n < 64) {
        rc = FAIL(c, JPT_ERR_INVALID, "'output_limit' must be at least 64 bytes");
        goto fail;
    }
    t->output_limit = (size_t)n;
    n = 0;
    if ((rc = take_count(c, def, "timeout_ms", (int64_t)1 << 40, &n)) < 0)
        goto fail;
    t->timeout_ms = n;

    /* A security setting is enforced or refused, never accepted and
     * ignored: nothing in this version confines a tool to a policy. */
    if (json_object_get(def, "sandbox") != NULL) {
        rc = FAIL(c, JPT_ERR_UNSUPPORTED,
                  "'sandbox' is not enforced by this version of jptool, so it is refused: "
                  "remove it to run the tool unconfined, with the host's rights");
        goto fail;
    }
    *out = t;
    return JPT_OK;

fail:
    jpt__tool_unref(t);
    return rc;
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
        jpt__tool *old = jpt__tool_find(r, tools[i]->name);
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
    rc = jpt__json_load(config_json, strlen(config_json), 0, &doc, &jerr);
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
    rc = jpt__json_load(definition_json, strlen(definition_json), 0, &def, &jerr);
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
    t->ops = *ops;
    t->ops.size = sizeof(jpt_builtin_ops);
    t->ud = ud;
    rc = add_tools(r, &t, 1, false);
    jpt__tool_unref(t);
    return rc;
}
