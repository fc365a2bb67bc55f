/* The tool list the model sees: per tool its JSON Schema (RFD 009's oneOf
 * per action for stateful tools, or the flat variant for providers that
 * reject oneOf), wrapped in the shapes of OpenAI, Anthropic, Gemini and MCP
 * tools/list. */
#include <string.h>

#include "registry/registry.h"

static const char id_description[] =
    "Handle ID for this tool instance. Must be unique across active handles.";

/* RFD 009's fixed variants for fetch, apply and abort. */
static json_t *action_variant(int action)
{
    json_t *v = json_pack("{s:{s:{s:s}, s:{s:s}}, s:[s, s]}", "properties", "action", "const",
                          jpt__action_name(action), "id", "type", "string", "required",
                          "action", "id");

    if (v != NULL && action == JPT__ACTION_APPLY &&
        (json_object_set_new(json_object_get(v, "properties"), "input", json_object()) < 0 ||
         json_array_append_new(json_object_get(v, "required"), json_string("input")) < 0)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* The spawn variant: action and id, then the tool's own parameters. */
static json_t *spawn_variant(const jpt__tool *t)
{
    json_t *v = json_pack("{s:{s:{s:s}, s:{s:s, s:s}}, s:[s, s]}", "properties", "action",
                          "const", "spawn", "id", "type", "string", "description",
                          id_description, "required", "action", "id");
    const json_t *props = json_object_get(t->parameters, "properties");
    const json_t *required = json_object_get(t->parameters, "required");
    size_t i;
    const json_t *name;

    if (v == NULL)
        return NULL;
    if ((json_is_object(props) &&
         json_object_update_missing(json_object_get(v, "properties"), (json_t *)props) < 0)) {
        json_decref(v);
        return NULL;
    }
    json_array_foreach(required, i, name) {
        if (json_is_string(name) && strcmp(json_string_value(name), "action") != 0 &&
            strcmp(json_string_value(name), "id") != 0 &&
            json_array_append(json_object_get(v, "required"), (json_t *)name) < 0) {
            json_decref(v);
            return NULL;
        }
    }
    return v;
}

static json_t *one_of_schema(const jpt__tool *t)
{
    json_t *variants = json_array();
    json_t *schema = json_pack("{s:s, s:o}", "type", "object", "oneOf", variants);

    if (schema == NULL)
        return NULL;
    for (int a = JPT__ACTION_SPAWN; a <= JPT__ACTION_ABORT; a <<= 1) {
        if (!(t->actions & (unsigned)a))
            continue;
        json_t *v = a == JPT__ACTION_SPAWN ? spawn_variant(t) : action_variant(a);
        if (json_array_append_new(variants, v) < 0) {
            json_decref(schema);
            return NULL;
        }
    }
    return schema;
}

/* The flat variant: one object, every field optional, the rules in the
 * descriptions and enforced when the call arrives. */
static json_t *flat_schema(const jpt__tool *t)
{
    json_t *actions = json_array();
    jpt__buf desc = JPT__BUF_INIT;
    int rc = actions != NULL ? JPT_OK : JPT_ERR_NOMEM;

    if (rc == JPT_OK)
        rc = jpt__buf_puts(&desc, "What to do. Without it the tool runs once to the end.");
    for (int a = JPT__ACTION_SPAWN; rc == JPT_OK && a <= JPT__ACTION_ABORT; a <<= 1) {
        if (!(t->actions & (unsigned)a))
            continue;
        static const char *const what[] = {
            [JPT__ACTION_SPAWN] = " spawn: start a new handle (needs id and the tool's "
                                  "parameters).",
            [JPT__ACTION_FETCH] = " fetch: the handle's output since the last fetch, "
                                  "and its state (needs id).",
            [JPT__ACTION_APPLY] = " apply: send input to a running handle, or answer a "
                                  "waiting handle's question (needs id and input).",
            [JPT__ACTION_ABORT] = " abort: stop the handle (needs id).",
        };
        if (json_array_append_new(actions, json_string(jpt__action_name(a))) < 0)
            rc = JPT_ERR_NOMEM;
        else
            rc = jpt__buf_puts(&desc, what[a]);
    }
    json_t *schema = NULL;
    if (rc == JPT_OK)
        schema = json_pack("{s:s, s:{s:{s:s, s:O, s:s}, s:{s:s, s:s}}}", "type", "object",
                           "properties", "action", "type", "string", "enum", actions,
                           "description", desc.data, "id", "type", "string", "description",
                           "Handle ID: required by every action. For spawn, choose one "
                           "that no active handle uses.");
    json_decref(actions);
    jpt__buf_free(&desc);
    if (schema == NULL)
        return NULL;
    json_t *props = json_object_get(schema, "properties");
    if ((t->actions & JPT__ACTION_APPLY) &&
        json_object_set_new(props, "input",
                            json_pack("{s:s}", "description",
                                      "For apply: text for the handle's input, or the "
                                      "answer to its question.")) < 0) {
        json_decref(schema);
        return NULL;
    }
    const json_t *own = json_object_get(t->parameters, "properties");
    if (json_is_object(own) && json_object_update_missing(props, (json_t *)own) < 0) {
        json_decref(schema);
        return NULL;
    }
    return schema;
}

static json_t *tool_schema(const jpt__tool *t, bool flat)
{
    if (!t->stateful)
        return json_deep_copy(t->parameters);
    return flat ? flat_schema(t) : one_of_schema(t);
}

static json_t *tool_entry(const jpt__tool *t, int dialect, json_t *schema)
{
    switch (dialect) {
    case JPT_DIALECT_OPENAI:
        return json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "function", "function", "name",
                         t->name, "description", t->description, "parameters", schema);
    case JPT_DIALECT_ANTHROPIC:
        return json_pack("{s:s, s:s, s:o}", "name", t->name, "description", t->description,
                         "input_schema", schema);
    case JPT_DIALECT_GEMINI:
        return json_pack("{s:s, s:s, s:o}", "name", t->name, "description", t->description,
                         "parameters", schema);
    default:
        return json_pack("{s:s, s:s, s:o}", "name", t->name, "description", t->description,
                         "inputSchema", schema);
    }
}

/* RFD 037's await tool, exactly as the RFD gives it; the flat variant
 * drops the anyOf (both lists optional, checked at call time). */
static jpt__tool *await_tool(jpt__tool *t, bool flat)
{
    json_t *params = json_pack(
        "{s:s, s:{s:{s:s, s:{s:s}, s:s}, s:{s:s, s:{s:s}, s:s}, s:{s:s, s:s}}}", "type",
        "object", "properties", "any", "type", "array", "items", "type", "string",
        "description",
        "Handle IDs. Returns when at least one of these handles reaches 'stopped'.", "all",
        "type", "array", "items", "type", "string", "description",
        "Handle IDs. Returns when every one of these handles reaches 'stopped'.",
        "timeout_secs", "type", "integer", "description",
        "Maximum seconds to wait. If exceeded, returns with current handle states. Omit for "
        "no timeout.");

    if (params == NULL ||
        (!flat && json_object_set_new(params, "anyOf",
                                      json_pack("[{s:[s]}, {s:[s]}]", "required", "any",
                                                "required", "all")) < 0)) {
        json_decref(params);
        return NULL;
    }
    memset(t, 0, sizeof(*t));
    t->name = (char *)"await";
    t->description = (char *)"Block until stateful tool handles reach completion. Use `any` to "
                            "wait for the first handle to finish, `all` to wait for every "
                            "handle to finish, or both to combine conditions.";
    t->parameters = params;
    return t;
}

JPT_EXPORT int jpt_registry_tools_json(jpt_registry *r, int dialect, char **out)
{
    int base = dialect & ~JPT_DIALECT_FLAT;
    /* Gemini allows anyOf only alone in a schema object (RFD 009, "Schema
     * generation for stateful tools"): its tools are always flat. */
    bool flat = (dialect & JPT_DIALECT_FLAT) || base == JPT_DIALECT_GEMINI;

    if (out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    if (r == NULL || base < JPT_DIALECT_OPENAI || base > JPT_DIALECT_MCP ||
        (dialect & ~(JPT_DIALECT_FLAT | 0xff)) != 0)
        return JPT_ERR_INVALID;
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < r->ntools; i++) {
        json_t *schema = tool_schema(r->tools[i], flat);
        if (schema == NULL ||
            json_array_append_new(list, tool_entry(r->tools[i], base, schema)) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    /* RFD 037, "Schema availability": await comes with stateful tools. */
    if (list != NULL && jpt__await_available(r)) {
        jpt__tool storage;
        jpt__tool *t = await_tool(&storage, flat);
        if (t == NULL || json_array_append_new(list, tool_entry(t, base, t->parameters)) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    json_t *doc = list;
    if (list != NULL && base == JPT_DIALECT_GEMINI)
        doc = json_pack("{s:o}", "functionDeclarations", list);
    else if (list != NULL && base == JPT_DIALECT_MCP)
        doc = json_pack("{s:o}", "tools", list);
    if (doc == NULL)
        return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory listing the tools");
    int rc = jpt__json_dump(doc, JSON_COMPACT, out);
    json_decref(doc);
    return rc;
}
