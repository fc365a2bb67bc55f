/* The registry as the model providers see it (issue 7): every tool list
 * dialect checked against its provider's documented schema rules, for every
 * tool shape; calls submitted as the providers send them and results read
 * back in their shapes, as a host does with the public API only; a NUL or
 * an out-of-range number failing only its call; the empty batch's
 * BATCH_DONE; and the nulls OpenAI's strict mode sends. */
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry-util.h"

/* ==== The providers' rules, as checkers ============================================ */

/* Why the last check failed. */
static char verdict[1024];

static bool bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static bool bad(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(verdict, sizeof(verdict), fmt, ap);
    va_end(ap);
    return false;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

#define IN(s, list) in_list((s), (list), sizeof(list) / sizeof(*(list)))

static bool name_char(char c, const char *extra)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr(extra, c) != NULL);
}

/* [A-Za-z0-9<extra>]{1,64}, first character from `first` (NULL: any). */
static bool name_ok(const char *name, const char *extra, bool letter_first)
{
    size_t n = name != NULL ? strlen(name) : 0;

    if (n == 0 || n > 64)
        return false;
    if (letter_first && !((name[0] >= 'a' && name[0] <= 'z') ||
                          (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(name[i], extra))
            return false;
    return true;
}

/* OpenAI, function calling (API reference, FunctionObject.name): "Must be
 * a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length
 * of 64". Its error for `parameters` (issue 7): "schema must have type
 * 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'const'/'not' at
 * the top level", even without strict mode; and "In context=(), object
 * schema missing properties" for an object without properties (seen by
 * every MCP client that forwards {"type":"object"}; openai-agents-python
 * PR #454). */
static bool openai_parameters_ok(const json_t *p)
{
    static const char *const refused[] = {"oneOf", "anyOf", "allOf", "enum", "const", "not"};

    if (!json_is_object(p))
        return bad("parameters is not an object");
    if (!json_is_string(json_object_get(p, "type")) ||
        strcmp(json_string_value(json_object_get(p, "type")), "object") != 0)
        return bad("parameters must have type 'object'");
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++)
        if (json_object_get(p, refused[i]) != NULL)
            return bad("parameters has '%s' at the top level", refused[i]);
    if (!json_is_object(json_object_get(p, "properties")))
        return bad("object schema missing properties");
    return true;
}

typedef struct strict_budget {
    size_t properties; /* "up to 5000 object properties total" */
    size_t enum_values; /* "up to 1000 enum values across all enum properties" */
} strict_budget;

/* OpenAI, Structured Outputs, "Supported schemas": the types string,
 * number, boolean, integer, object, array, enum and anyOf; for strings
 * pattern and format, for numbers multipleOf, maximum, exclusiveMaximum,
 * minimum, exclusiveMinimum, for arrays minItems and maxItems; objects with
 * properties, required and additionalProperties, definitions with $defs
 * and $ref. "additionalProperties: false must always be set in objects";
 * "all fields or function parameters must be specified as required"
 * (optional ones as a union with null); "A schema may have up to 5000
 * object properties total, with up to 10 levels of nesting"; "the root
 * level object must be an object, and not use anyOf"; composition
 * keywords allOf, not, dependentRequired, dependentSchemas, if, then, else
 * are not supported (nor oneOf: "In context=(), 'oneOf' is not
 * permitted"). */
static bool strict_ok(const json_t *s, const char *where, int depth, strict_budget *budget)
{
    static const char *const keys[] = {
        "type",    "description", "title",   "enum",         "const",
        "anyOf",   "properties",  "required", "additionalProperties", "items",
        "$defs",   "$ref",        "pattern", "format",       "multipleOf",
        "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems",
        "maxItems"};
    static const char *const types[] = {"string", "number",  "boolean", "integer",
                                        "object", "array",   "null"};
    const char *key;
    const json_t *v;
    char sub[512];
    size_t i;

    if (!json_is_object(s))
        return bad("%s: not a schema object", where);
    json_object_foreach((json_t *)s, key, v)
        if (!IN(key, keys))
            return bad("%s: strict mode does not take '%s'", where, key);
    const json_t *type = json_object_get(s, "type");
    const json_t *alts = json_object_get(s, "anyOf");
    if (type == NULL && alts == NULL && json_object_get(s, "$ref") == NULL)
        return bad("%s: neither a type nor anyOf", where);
    if (json_is_string(type) && !IN(json_string_value(type), types))
        return bad("%s: unknown type", where);
    json_array_foreach(type, i, v)
        if (!json_is_string(v) || !IN(json_string_value(v), types))
            return bad("%s: unknown type in the list", where);
    json_array_foreach(alts, i, v) {
        snprintf(sub, sizeof(sub), "%s/anyOf/%zu", where, i);
        if (!strict_ok(v, sub, depth, budget))
            return false;
    }
    budget->enum_values += json_array_size(json_object_get(s, "enum"));
    const json_t *props = json_object_get(s, "properties");
    bool object = (json_is_string(type) && strcmp(json_string_value(type), "object") == 0) ||
                  props != NULL;
    if (object) {
        if (depth > 10)
            return bad("%s: more than 10 levels of nesting", where);
        if (!json_is_false(json_object_get(s, "additionalProperties")))
            return bad("%s: additionalProperties must be false", where);
        if (!json_is_object(props))
            return bad("%s: an object without properties", where);
        const json_t *required = json_object_get(s, "required");
        if (!json_is_array(required) || json_array_size(required) != json_object_size(props))
            return bad("%s: required must list every property", where);
        json_array_foreach(required, i, v)
            if (!json_is_string(v) || json_object_get(props, json_string_value(v)) == NULL)
                return bad("%s: required names an undefined property", where);
        budget->properties += json_object_size(props);
        json_object_foreach((json_t *)props, key, v) {
            snprintf(sub, sizeof(sub), "%s/properties/%s", where, key);
            if (!strict_ok(v, sub, depth + 1, budget))
                return false;
        }
    }
    if (json_object_get(s, "items") != NULL) {
        snprintf(sub, sizeof(sub), "%s/items", where);
        if (!strict_ok(json_object_get(s, "items"), sub, depth, budget))
            return false;
    }
    if (budget->properties > 5000 || budget->enum_values > 1000)
        return bad("%s: over strict mode's size limits", where);
    return true;
}

/* OpenAI Chat Completions: {"type":"function","function":{"name",
 * "description","parameters","strict"}}; Responses:
 * {"type":"function","name","description","parameters","strict"}. */
static bool openai_entry_ok(const json_t *e, bool responses, bool strict)
{
    const json_t *fn = responses ? e : json_object_get(e, "function");
    const json_t *p = json_object_get(fn, "parameters");
    strict_budget budget = {0, 0};

    if (strcmp(json_string_value(json_object_get(e, "type")), "function") != 0)
        return bad("not a function tool");
    if (!name_ok(json_string_value(json_object_get(fn, "name")), "_-", false))
        return bad("function name does not match ^[a-zA-Z0-9_-]{1,64}$");
    if (!openai_parameters_ok(p))
        return false;
    if (json_is_true(json_object_get(fn, "strict")) != strict)
        return bad("strict is not %s", strict ? "true" : "false");
    if (responses && !json_is_boolean(json_object_get(fn, "strict")))
        return bad("Responses takes a function as strict unless it says \"strict\": false");
    return !strict || strict_ok(p, "parameters", 1, &budget);
}

/* Anthropic, tool use: a tool is {"name","description","input_schema"},
 * the name matching ^[a-zA-Z0-9_-]{1,64}$, input_schema a JSON Schema
 * object with type "object"; the API's error: "input_schema does not
 * support oneOf, allOf, or anyOf at the top level". */
static bool anthropic_schema_ok(const json_t *s)
{
    static const char *const refused[] = {"oneOf", "anyOf", "allOf"};

    if (!json_is_object(s) || !json_is_string(json_object_get(s, "type")) ||
        strcmp(json_string_value(json_object_get(s, "type")), "object") != 0)
        return bad("input_schema must have type 'object'");
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++)
        if (json_object_get(s, refused[i]) != NULL)
            return bad("input_schema does not support %s at the top level", refused[i]);
    return true;
}

static bool anthropic_entry_ok(const json_t *e)
{
    if (json_object_size(e) != 3 || !json_is_string(json_object_get(e, "description")))
        return bad("not {name, description, input_schema}");
    if (!name_ok(json_string_value(json_object_get(e, "name")), "_-", false))
        return bad("tool name does not match ^[a-zA-Z0-9_-]{1,64}$");
    return anthropic_schema_ok(json_object_get(e, "input_schema"));
}

/* MCP, tools/list (schema 2025-06-18): Tool {name, description,
 * inputSchema: {type: "object", properties, required}}. MCP clients pass
 * the schema on to the providers unchanged (issue 7), so it must satisfy
 * OpenAI's and Anthropic's rules too. */
static bool mcp_entry_ok(const json_t *e)
{
    const json_t *s = json_object_get(e, "inputSchema");

    if (!json_is_string(json_object_get(e, "name")))
        return bad("a tool without a name");
    return anthropic_schema_ok(s) && openai_parameters_ok(s);
}

/* Gemini, FunctionDeclaration.parameters: "a select subset of an OpenAPI
 * 3.0 schema object" (Schema reference, v1beta): type (required; one of
 * STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT, NULL), format, title,
 * description, nullable, enum ("Possible values of the element of
 * Type.STRING"), maxItems, minItems, properties, required, minProperties,
 * maxProperties, minLength, maxLength, pattern, example, anyOf,
 * propertyOrdering, default, items, minimum, maximum; nothing else
 * ("Unknown name \"const\" … Cannot find field", the same for
 * additionalProperties). Its validator's errors: anyOf "must be the only
 * field set"; "items: missing field" for an array; "required: only
 * allowed for OBJECT type" and "property is not defined"; a type list
 * ("Proto field is not repeating, cannot start list"). Parameter names
 * "must start with a letter or an underscore and must only contain chars
 * a-z, A-Z, 0-9, or underscores with a maximum length of 64". */
static bool gemini_schema_ok(const json_t *s, const char *where)
{
    static const char *const keys[] = {
        "type",          "format",       "title",     "description", "nullable",
        "enum",          "maxItems",     "minItems",  "properties",  "required",
        "minProperties", "maxProperties", "minLength", "maxLength",  "pattern",
        "example",       "anyOf",        "propertyOrdering", "default", "items",
        "minimum",       "maximum"};
    static const char *const types[] = {"string", "number", "integer", "boolean",
                                        "array",  "object", "null"};
    const char *key;
    const json_t *v;
    char sub[512];
    size_t i;

    if (!json_is_object(s))
        return bad("%s: not a Schema object", where);
    json_object_foreach((json_t *)s, key, v)
        if (!IN(key, keys))
            return bad("%s: Unknown name \"%s\": Cannot find field", where, key);
    const json_t *alts = json_object_get(s, "anyOf");
    if (alts != NULL) {
        if (json_object_size(s) != 1)
            return bad("%s: When using any_of, it must be the only field set", where);
        json_array_foreach(alts, i, v) {
            snprintf(sub, sizeof(sub), "%s/anyOf/%zu", where, i);
            if (!gemini_schema_ok(v, sub))
                return false;
        }
        return true;
    }
    const json_t *type = json_object_get(s, "type");
    char lower[16] = "";
    if (!json_is_string(type))
        return bad("%s: type must be one string", where);
    for (i = 0; i + 1 < sizeof(lower) && json_string_value(type)[i] != '\0'; i++)
        lower[i] = (char)(json_string_value(type)[i] | 0x20);
    lower[i] = '\0';
    if (!IN(lower, types))
        return bad("%s: Invalid value at 'type'", where);
    const json_t *values = json_object_get(s, "enum");
    if (values != NULL) {
        if (strcmp(lower, "string") != 0)
            return bad("%s: enum is only for STRING", where);
        json_array_foreach(values, i, v)
            if (!json_is_string(v))
                return bad("%s: enum values must be strings", where);
    }
    if (json_object_get(s, "nullable") != NULL && !json_is_boolean(json_object_get(s, "nullable")))
        return bad("%s: nullable must be a boolean", where);
    if (strcmp(lower, "array") == 0) {
        snprintf(sub, sizeof(sub), "%s/items", where);
        if (json_object_get(s, "items") == NULL)
            return bad("%s: missing field", sub);
        if (!gemini_schema_ok(json_object_get(s, "items"), sub))
            return false;
    }
    const json_t *props = json_object_get(s, "properties");
    const json_t *required = json_object_get(s, "required");
    if ((props != NULL || required != NULL) && strcmp(lower, "object") != 0)
        return bad("%s: properties and required only allowed for OBJECT type", where);
    json_array_foreach(required, i, v)
        if (!json_is_string(v) || json_object_get(props, json_string_value(v)) == NULL)
            return bad("%s/required/%zu: property is not defined", where, i);
    json_object_foreach((json_t *)props, key, v) {
        snprintf(sub, sizeof(sub), "%s/properties/%s", where, key);
        if (!name_ok(key, "_", true))
            return bad("%s: not a parameter name Gemini takes", sub);
        if (!gemini_schema_ok(v, sub))
            return false;
    }
    return true;
}

/* Gemini FunctionDeclaration: name "must start with a letter or an
 * underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots and
 * dashes, with a maximum length of 64"; parameters left out for a
 * function without them, else an OBJECT whose properties "should be
 * non-empty for OBJECT type". */
static bool gemini_entry_ok(const json_t *e)
{
    const json_t *p = json_object_get(e, "parameters");

    if (!name_ok(json_string_value(json_object_get(e, "name")), "_.-", true))
        return bad("not a function name Gemini takes");
    if (p == NULL)
        return true;
    if (!json_is_string(json_object_get(p, "type")) ||
        strcmp(json_string_value(json_object_get(p, "type")), "object") != 0)
        return bad("parameters must be an OBJECT");
    if (json_object_size(json_object_get(p, "properties")) == 0)
        return bad("parameters.properties: should be non-empty for OBJECT type");
    return gemini_schema_ok(p, "parameters");
}

/* Every entry of the list `dialect` gives, through its provider's checker;
 * false with `verdict` saying which tool and why. */
static bool list_ok(jpt_registry *r, int dialect)
{
    int base = dialect & 0xff;
    bool strict = (dialect & JPT_DIALECT_STRICT) != 0;
    char *text = NULL;
    char why[sizeof(verdict) + 128];

    assert_int_equal(jpt_registry_tools_json(r, dialect, &text), JPT_OK);
    json_t *doc = parse(text);
    jpt_free(text);
    json_t *list = base == JPT_DIALECT_GEMINI ? json_object_get(doc, "functionDeclarations")
                   : base == JPT_DIALECT_MCP  ? json_object_get(doc, "tools")
                                              : doc;
    json_t *e;
    size_t i;
    bool ok = json_is_array(list) && json_array_size(list) > 0;

    if (!ok)
        bad("no list of tools");
    json_array_foreach(list, i, e) {
        if (!ok)
            break;
        switch (base) {
        case JPT_DIALECT_OPENAI:
        case JPT_DIALECT_OPENAI_RESPONSES:
            ok = openai_entry_ok(e, base == JPT_DIALECT_OPENAI_RESPONSES, strict);
            break;
        case JPT_DIALECT_ANTHROPIC:
            ok = anthropic_entry_ok(e);
            break;
        case JPT_DIALECT_GEMINI:
            ok = gemini_entry_ok(e);
            break;
        default:
            ok = mcp_entry_ok(e);
        }
        if (!ok) {
            const json_t *fn = json_object_get(e, "function");
            snprintf(why, sizeof(why), "tool %zu (%.64s): %s", i,
                     json_string_value(json_object_get(fn != NULL ? fn : e, "name")), verdict);
            snprintf(verdict, sizeof(verdict), "%.1000s", why);
        }
    }
    json_decref(doc);
    return ok;
}

/* ==== Every tool shape ================================================================= */

#define GIT_PARAMETERS                                                                     \
    "{'type':'object','properties':{'command':{'enum':['stage','commit','rebase']},"      \
    "'args':{'type':'array','items':{'type':'string'}}},'required':['command']}"

#define STATEFUL(name, actions)                                                            \
    "{'name':'" name "','description':'d','stateful':true,'actions':" actions ","          \
    "'command':['cat']}"

/* Issue 16 §3: properties given by local $refs (pydantic's and zod's
 * form), one with a sibling description, one with its own. */
#define DRAW_PARAMETERS                                                                    \
    "{'type':'object','$defs':{'pt':{'type':'object','properties':{'x':{'type':'number'},"  \
    "'y':{'type':'number'},'label':{'type':'string','description':'The point\\'s name'}}," \
    "'required':['x','y']}},"                                                               \
    "'properties':{'from':{'$ref':'#/$defs/pt'},"                                           \
    "'to':{'$ref':'#/$defs/pt','description':'The end'}},'required':['from']}"
#define DRAW "{'name':'draw','description':'Draw','command':['" TOOL("outcome-tool") "','echo'," \
             "'{{tool}}'],'parameters':" DRAW_PARAMETERS "}"

/* Stateful tools with every action set (spawn is implied), with and
 * without parameters of their own; one-shot tools with and without
 * parameters, with the keywords the forms must translate, and with
 * alternatives at the top level; await comes with the stateful ones. */
static const char shapes[] =
    "{'tools':["
    "{'name':'git','description':'Interactive git','stateful':true,'command':['git'],"
    " 'parameters':" GIT_PARAMETERS "},"
    "{'name':'cargo_check','description':'Check a Rust package','stateful':true,"
    " 'actions':['fetch','abort'],'command':['cargo','check'],"
    " 'parameters':{'type':'object','properties':{'package':{'type':'string'}}}},"
    STATEFUL("s_spawn", "[]") ","
    STATEFUL("s_fetch", "['fetch']") ","
    STATEFUL("s_apply", "['apply']") ","
    STATEFUL("s_abort", "['abort']") ","
    STATEFUL("s_fetch_apply", "['fetch','apply']") ","
    STATEFUL("s_fetch_abort", "['fetch','abort']") ","
    STATEFUL("s_apply_abort", "['apply','abort']") ","
    STATEFUL("s_all", "['fetch','apply','abort']") ","
    "{'name':'lookup','description':'Look up','command':['true'],'parameters':"
    " {'type':'object','properties':{'query':{'type':'string','minLength':1},"
    " 'limit':{'type':'integer','minimum':1}},'required':['query'],"
    " 'additionalProperties':false}},"
    "{'name':'plain','command':['true']},"
    "{'name':'shapes','description':'Every keyword','command':['true'],'parameters':"
    " {'type':'object','title':'Shapes','properties':{"
    "  'mode':{'const':'fast'},'level':{'const':3},'sizes':{'enum':[1,2,3]},"
    "  'maybe':{'type':['integer','null']},'old_style':{'type':'string','nullable':true},"
    "  'either':{'oneOf':[{'type':'string'},{'type':'integer'},{'type':'null'}]},"
    "  'any':{},'flag':true,"
    "  'when':{'type':'string','format':'date-time','pattern':'^2','default':'2024'},"
    "  'nested':{'type':'object','properties':{'deep':{'type':'object','properties':"
    "   {'x':{'type':'number','exclusiveMinimum':0}},'required':['x']}},"
    "   'additionalProperties':false},"
    "  'free':{'type':'object'},'list':{'type':'array'},"
    "  'rows':{'type':'array','items':{'type':'object','properties':{'k':{'type':'string'}},"
    "   'required':['k']},'minItems':1,'uniqueItems':true},"
    "  'merged':{'allOf':[{'type':'object','properties':{'a':{'type':'string'}}},"
    "   {'properties':{'b':{'type':'boolean'}},'required':['b']}]},"
    "  'not_this':{'not':{'type':'string'}}},"
    " 'required':['mode','nested']}},"
    "{'name':'one_of','description':'Alternatives','command':['true'],'parameters':"
    " {'type':'object','properties':{'a':{'type':'string'}},"
    "  'oneOf':[{'required':['a']},{'properties':{'b':{'type':'integer'}},'required':['b']}],"
    "  'anyOf':[{'properties':{'c':{'type':'boolean'}}}],"
    "  'allOf':[{'properties':{'d':{'type':'string'}}}],'not':{'required':['e']}}},"
    "{'name':'enum_top','command':['true'],'parameters':{'enum':[{'a':1}]}},"
    DRAW ","
    "{'name':'stateful_draw','description':'d','stateful':true,'command':['cat'],"
    " 'parameters':" DRAW_PARAMETERS "}"
    "]}";

static const int every_dialect[] = {
    JPT_DIALECT_OPENAI,
    JPT_DIALECT_OPENAI | JPT_DIALECT_STRICT,
    JPT_DIALECT_OPENAI_RESPONSES,
    JPT_DIALECT_OPENAI_RESPONSES | JPT_DIALECT_STRICT,
    JPT_DIALECT_ANTHROPIC,
    JPT_DIALECT_GEMINI,
    JPT_DIALECT_MCP,
    JPT_DIALECT_OPENAI | JPT_DIALECT_FLAT,
    JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT,
    JPT_DIALECT_GEMINI | JPT_DIALECT_FLAT,
    JPT_DIALECT_MCP | JPT_DIALECT_FLAT,
};

#define N_DIALECTS (sizeof(every_dialect) / sizeof(every_dialect[0]))

/* Issue 7: "Every provider dialect must produce by default what that
 * provider accepts", for every tool shape. */
static void every_dialect_gives_what_its_provider_accepts(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(shapes));

    for (size_t i = 0; i < N_DIALECTS; i++)
        if (!list_ok(r, every_dialect[i]))
            fail_msg("dialect 0x%x: %s", (unsigned)every_dialect[i], verdict);
    jpt_registry_free(r);
}

/* The same with only the stateful tools without parameters (the list then
 * has no one-shot tool at all), and with only a one-shot tool (no await). */
static void every_dialect_gives_what_its_provider_accepts_for_small_lists(void **state)
{
    (void)state;
    const char *lists[] = {
        "{'tools':[" STATEFUL("only", "[]") "]}",
        "{'tools':[{'name':'plain','command':['true']}]}",
    };

    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        jpt_registry *r = ru_registry(js(lists[l]));
        for (size_t i = 0; i < N_DIALECTS; i++)
            if (!list_ok(r, every_dialect[i]))
                fail_msg("list %zu, dialect 0x%x: %s", l, (unsigned)every_dialect[i], verdict);
        jpt_registry_free(r);
    }
}

/* RFD 009's exact form is a choice for hosts whose provider takes it: the
 * checkers refuse it for OpenAI and Anthropic (as they refused the old
 * default, which it is), so they do catch what issue 7 is about. */
static void rfd_009s_one_of_is_what_openai_and_anthropic_refuse(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[{'name':'git','stateful':true,"
                                     "'command':['git'],'parameters':" GIT_PARAMETERS "}]}"));

    assert_false(list_ok(r, JPT_DIALECT_OPENAI | JPT_DIALECT_ONEOF));
    assert_string_equal(verdict, "tool 0 (git): parameters has 'oneOf' at the top level");
    assert_false(list_ok(r, JPT_DIALECT_ANTHROPIC | JPT_DIALECT_ONEOF));
    assert_string_equal(verdict,
                        "tool 0 (git): input_schema does not support oneOf at the top level");
    assert_false(list_ok(r, JPT_DIALECT_MCP | JPT_DIALECT_ONEOF));
    jpt_registry_free(r);
}

/* ==== The flat schema, exactly ========================================================= */

#define ACTION_RULES                                                                       \
    "What to do. Without it the tool runs once to the end. spawn: start a new handle "     \
    "(needs id, command). fetch: the handle's output since the last fetch, and its state " \
    "(needs id). apply: send input to a running handle, or answer a waiting handle's "     \
    "question (needs id and input). abort: stop the handle (needs id)."
#define FLAT_ID                                                                            \
    "Handle ID: required by every action. For spawn, choose one that no active handle uses."
#define INPUT_ANY                                                                          \
    "For apply. To a running handle: what to write to its input; a string is written as " \
    "given (include the newline a line-reading program needs), any other JSON value as "   \
    "its compact JSON text on one line, without a newline. To a waiting handle: the "      \
    "answer to its question, as the question's schema asks."
#define INPUT_TEXT                                                                         \
    "For apply. To a running handle: the text to write to its input, as given (include "  \
    "the newline a line-reading program needs). To a waiting handle: the answer to its "   \
    "question."
#define WAIT                                                                               \
    "Wait up to this many seconds for the handle to print or stop before answering "       \
    "(default: answer once output settles)."

/* The descriptions hold apostrophes, which js() would turn into quotes:
 * expected schemas name them "@NAME", and this puts the text in. */
static void expand(json_t *v)
{
    static const struct {
        const char *name, *text;
    } texts[] = {{"@ACTION_RULES", ACTION_RULES}, {"@FLAT_ID", FLAT_ID},
                 {"@INPUT_ANY", INPUT_ANY},       {"@INPUT_TEXT", INPUT_TEXT},
                 {"@WAIT", WAIT}};
    const char *key;
    json_t *member;
    size_t i;

    json_object_foreach(v, key, member) {
        for (size_t t = 0; json_is_string(member) && t < sizeof(texts) / sizeof(*texts); t++)
            if (strcmp(json_string_value(member), texts[t].name) == 0) {
                json_object_set_new(v, key, json_string(texts[t].text));
                break; /* `member` is gone */
            }
        if (!json_is_string(json_object_get(v, key)))
            expand(member);
    }
    json_array_foreach(v, i, member)
        expand(member);
}

/* Asserts that `actual` is the JSON written for js() in `expected_js`,
 * with its "@NAME" texts expanded. */
static void assert_schema(const json_t *actual, const char *expected_js)
{
    json_t *expected = parse(js(expected_js));
    char *text;

    expand(expected);
    text = json_dumps(expected, JSON_COMPACT);
    assert_json(actual, text);
    free(text);
    json_decref(expected);
}

/* The schema `dialect` gives tool `name` (new reference). */
static json_t *schema_of(jpt_registry *r, int dialect, const char *name)
{
    int base = dialect & 0xff;
    char *text = NULL;
    json_t *e, *found = NULL;
    size_t i;

    assert_int_equal(jpt_registry_tools_json(r, dialect, &text), JPT_OK);
    json_t *doc = parse(text);
    jpt_free(text);
    json_t *list = base == JPT_DIALECT_GEMINI ? json_object_get(doc, "functionDeclarations")
                   : base == JPT_DIALECT_MCP  ? json_object_get(doc, "tools")
                                              : doc;
    const char *key = base == JPT_DIALECT_ANTHROPIC ? "input_schema"
                      : base == JPT_DIALECT_MCP     ? "inputSchema"
                                                    : "parameters";
    json_array_foreach(list, i, e) {
        json_t *fn = base == JPT_DIALECT_OPENAI ? json_object_get(e, "function") : e;
        if (strcmp(json_string_value(json_object_get(fn, "name")), name) == 0)
            found = json_incref(json_object_get(fn, key));
    }
    json_decref(doc);
    if (found == NULL)
        fail_msg("no schema for %s", name);
    return found;
}

/* Issue 7: a plain object at the top level, the per-action rules in
 * descriptions; the tool's required spawn parameters named in them. */
static void flat_schema_is_a_plain_object_with_the_rules_in_descriptions(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(shapes));
    json_t *git = schema_of(r, JPT_DIALECT_ANTHROPIC, "git");

    assert_schema(git, "{'type':'object','properties':{"
                       "'action':{'type':'string','enum':['spawn','fetch','apply','abort'],"
                       " 'description':'@ACTION_RULES'},"
                       "'id':{'type':'string','description':'@FLAT_ID'},"
                       "'input':{'description':'@INPUT_ANY'},"
                       "'wait_secs':{'type':'integer','minimum':0,'description':'@WAIT'},"
                       "'command':{'enum':['stage','commit','rebase'],"
                       " 'description':'Required for spawn and for a one-shot call (no action).'},"
                       "'args':{'type':'array','items':{'type':'string'}}}}");
    json_decref(git);
    jpt_registry_free(r);
}

/* Gemini's subset: every schema typed (the enum a string, input text),
 * the minimum kept. */
static void gemini_schema_is_the_flat_one_in_its_subset(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(shapes));
    json_t *git = schema_of(r, JPT_DIALECT_GEMINI, "git");

    assert_schema(git, "{'type':'object','properties':{"
                       "'action':{'type':'string','enum':['spawn','fetch','apply','abort'],"
                       " 'description':'@ACTION_RULES'},"
                       "'id':{'type':'string','description':'@FLAT_ID'},"
                       "'input':{'type':'string','description':'@INPUT_TEXT'},"
                       "'wait_secs':{'type':'integer','minimum':0,'description':'@WAIT'},"
                       "'command':{'type':'string','enum':['stage','commit','rebase'],"
                       " 'description':'Required for spawn and for a one-shot call (no action).'},"
                       "'args':{'type':'array','items':{'type':'string'}}}}");
    json_decref(git);
    jpt_registry_free(r);
}

/* OpenAI strict mode: closed objects, everything required, the optional
 * nullable, no minimum. */
static void strict_schema_closes_every_object_and_makes_the_optional_nullable(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(shapes));
    json_t *git = schema_of(r, JPT_DIALECT_OPENAI | JPT_DIALECT_STRICT, "git");
    json_t *lookup = schema_of(r, JPT_DIALECT_OPENAI_RESPONSES | JPT_DIALECT_STRICT, "lookup");

    assert_schema(git, "{'type':'object','properties':{"
                       "'action':{'type':['string','null'],"
                       " 'enum':['spawn','fetch','apply','abort',null],"
                       " 'description':'@ACTION_RULES'},"
                       "'id':{'type':['string','null'],'description':'@FLAT_ID'},"
                       "'input':{'type':['string','null'],'description':'@INPUT_TEXT'},"
                       "'wait_secs':{'type':['integer','null'],'description':'@WAIT'},"
                       "'command':{'type':['string','null'],"
                       " 'enum':['stage','commit','rebase',null],"
                       " 'description':'Required for spawn and for a one-shot call (no action).'},"
                       "'args':{'type':['array','null'],'items':{'type':'string'}}},"
                       "'required':['action','id','input','wait_secs','command','args'],"
                       "'additionalProperties':false}");
    assert_json(lookup, js("{'type':'object','properties':{'query':{'type':'string'},"
                           "'limit':{'type':['integer','null']}},"
                           "'required':['query','limit'],'additionalProperties':false}"));
    json_decref(git);
    json_decref(lookup);
    jpt_registry_free(r);
}

/* The entries: strict mode says so; Responses says it either way. */
static void openai_entries_say_whether_they_are_strict(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[{'name':'plain','command':['true']}]}"));
    char *text = NULL;

    assert_int_equal(jpt_registry_tools_json(r, JPT_DIALECT_OPENAI, &text), JPT_OK);
    tu_assert_json_equal(text, js("[{'type':'function','function':{'name':'plain',"
                                  "'description':'','parameters':{'type':'object',"
                                  "'properties':{}}}}]"));
    jpt_free(text);
    assert_int_equal(jpt_registry_tools_json(r, JPT_DIALECT_OPENAI | JPT_DIALECT_STRICT, &text),
                     JPT_OK);
    tu_assert_json_equal(text, js("[{'type':'function','function':{'name':'plain',"
                                  "'description':'','parameters':{'type':'object',"
                                  "'properties':{},'required':[],'additionalProperties':false},"
                                  "'strict':true}}]"));
    jpt_free(text);
    assert_int_equal(jpt_registry_tools_json(r, JPT_DIALECT_OPENAI_RESPONSES, &text), JPT_OK);
    tu_assert_json_equal(text, js("[{'type':'function','name':'plain','description':'',"
                                  "'parameters':{'type':'object','properties':{}},"
                                  "'strict':false}]"));
    jpt_free(text);
    jpt_registry_free(r);
}

/* A tool's own top-level alternatives: dropped, their properties listed. */
static void a_tools_top_level_alternatives_become_listed_properties(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(shapes));
    json_t *s = schema_of(r, JPT_DIALECT_OPENAI, "one_of");

    assert_json(s, js("{'type':'object','properties':{'a':{'type':'string'},"
                      "'b':{'type':'integer'},'c':{'type':'boolean'},'d':{'type':'string'}}}"));
    json_decref(s);
    jpt_registry_free(r);
}

/* ==== Calls as the providers send them, results as they take them ==================== */

#define WEATHER                                                                            \
    "{'name':'weather','description':'Weather','command':['" TOOL("outcome-tool") "',"     \
    "'echo','{{tool}}'],'parameters':{'type':'object','properties':{"                      \
    "'city':{'type':'string'},'unit':{'enum':['celsius','fahrenheit']}},"                  \
    "'required':['city']}}"
#define SH "{'name':'sh','description':'A shell','stateful':true,'command':['" TOOL("echo-lines") "']}"

static const char host_tools[] = "{'tools':[" WEATHER "," SH "]}";

/* What the echoing weather tool prints for `arguments` (its content). */
static char *weather_text(const char *arguments_js)
{
    char buf[1024];

    snprintf(buf, sizeof(buf),
             "{\"name\":\"weather\",\"arguments\":%s,\"answers\":{},\"options\":{}}\n",
             js(arguments_js));
    return strdup(buf);
}

/* Submits `calls_json`, waits, and returns jpt_batch_results_json_as()
 * in `dialect`, parsed. */
static json_t *run_as(jpt_registry *r, const char *calls_json, int dialect)
{
    jpt_batch *b = NULL;
    char *text = NULL;

    if (jpt_registry_submit(r, calls_json, &b) != JPT_OK)
        fail_msg("submit: %s", jpt_registry_errmsg(r));
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_batch_results_json_as(b, dialect, &text), JPT_OK);
    json_t *results = parse(text);
    jpt_free(text);
    jpt_batch_free(b);
    return results;
}

/* The content of a result in `dialect`'s shape. */
static const char *content_of(const json_t *results, size_t i, const char *key)
{
    const char *s = json_string_value(json_object_get(json_array_get(results, i), key));

    assert_non_null(s);
    return s;
}

/* Issue 7: "jpt_registry_submit takes the calls as providers send them" —
 * an OpenAI Chat Completions message's tool_calls, verbatim (arguments as
 * JSON text); the results as `tool` messages. Before: the batch was
 * refused. */
static void openai_chat_tool_calls_go_in_verbatim_and_come_back_as_tool_messages(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(host_tools));
    /* A host takes the assistant message's tool_calls as they came. */
    json_t *message = parse(js(
        "{'role':'assistant','content':null,'tool_calls':["
        "{'id':'call_abc','type':'function','function':{'name':'weather',"
        "  'arguments':'{\\'city\\':\\'Paris\\'}'}},"
        "{'id':'call_def','type':'function','function':{'name':'sh',"
        "  'arguments':'{\\'action\\':\\'spawn\\',\\'id\\':\\'s1\\'}'}}]}"));
    char *calls = json_dumps(json_object_get(message, "tool_calls"), JSON_COMPACT);
    json_t *results = run_as(r, calls, JPT_DIALECT_AS_CALLED);
    char *paris = weather_text("{'city':'Paris'}");

    assert_int_equal(json_array_size(results), 2);
    json_t *first = json_array_get(results, 0);
    assert_int_equal(json_object_size(first), 3);
    assert_string_equal(json_string_value(json_object_get(first, "role")), "tool");
    assert_string_equal(json_string_value(json_object_get(first, "tool_call_id")), "call_abc");
    tu_assert_json_equal(content_of(results, 0, "content"), paris);
    json_t *second = json_array_get(results, 1);
    assert_string_equal(json_string_value(json_object_get(second, "tool_call_id")), "call_def");
    tu_assert_json_equal(content_of(results, 1, "content"),
                         js("{'id':'s1','state':'running','content':'ready\\n> '}"));
    free(paris);
    free(calls);
    json_decref(results);
    json_decref(message);
    jpt_registry_free(r);
}

/* … an Anthropic message's content array, verbatim (its text block
 * skipped); the results as tool_result blocks. Before: `input` was ignored
 * and the call failed with "missing required property". */
static void anthropic_content_goes_in_verbatim_and_comes_back_as_tool_results(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(host_tools));
    json_t *message = parse(js(
        "{'role':'assistant','content':["
        "{'type':'thinking','thinking':'Two calls.','signature':'x'},"
        "{'type':'text','text':'Let me check.'},"
        "{'type':'tool_use','id':'toolu_01','name':'weather',"
        "  'input':{'city':'Oslo','unit':'celsius'}},"
        "{'type':'tool_use','id':'toolu_02','name':'nope','input':{}}]}"));
    char *calls = json_dumps(json_object_get(message, "content"), JSON_COMPACT);
    json_t *results = run_as(r, calls, JPT_DIALECT_AS_CALLED);
    char *oslo = weather_text("{'city':'Oslo','unit':'celsius'}");

    assert_int_equal(json_array_size(results), 2);
    json_t *first = json_array_get(results, 0);
    assert_int_equal(json_object_size(first), 4);
    assert_string_equal(json_string_value(json_object_get(first, "type")), "tool_result");
    assert_string_equal(json_string_value(json_object_get(first, "tool_use_id")), "toolu_01");
    assert_true(json_is_false(json_object_get(first, "is_error")));
    tu_assert_json_equal(content_of(results, 0, "content"), oslo);
    assert_json(json_array_get(results, 1),
                js("{'type':'tool_result','tool_use_id':'toolu_02',"
                   "'content':'Unknown tool `nope`','is_error':true}"));
    free(oslo);
    free(calls);
    json_decref(results);
    json_decref(message);
    jpt_registry_free(r);
}

/* … an OpenAI Responses output array (its reasoning item skipped); the
 * results as function_call_output items, by call_id. */
static void responses_output_goes_in_verbatim_and_comes_back_as_outputs(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(host_tools));
    json_t *results = run_as(
        r,
        js("[{'type':'reasoning','id':'rs_1','summary':[]},"
           "{'type':'function_call','id':'fc_1','call_id':'call_9','name':'weather',"
           " 'arguments':'{\\'city\\':\\'Rome\\'}','status':'completed'}]"),
        JPT_DIALECT_AS_CALLED);
    char *rome = weather_text("{'city':'Rome'}");

    assert_int_equal(json_array_size(results), 1);
    json_t *first = json_array_get(results, 0);
    assert_int_equal(json_object_size(first), 3);
    assert_string_equal(json_string_value(json_object_get(first, "type")),
                       "function_call_output");
    assert_string_equal(json_string_value(json_object_get(first, "call_id")), "call_9");
    tu_assert_json_equal(content_of(results, 0, "output"), rome);
    free(rome);
    json_decref(results);
    jpt_registry_free(r);
}

/* … Gemini parts (a text part skipped): a functionCall without an id is
 * "<name>#<position>"; the functionResponse echoes the name, and the id
 * only when the call had one; an error is the response's "error". */
static void gemini_parts_go_in_verbatim_and_come_back_as_function_responses(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(host_tools));
    const char *parts = js("[{'text':'Checking.'},"
                           "{'functionCall':{'name':'weather','args':{'city':'Lima'}}},"
                           "{'functionCall':{'name':'weather','args':{'city':'Quito'},"
                           " 'id':'g-7'}},"
                           "{'functionCall':{'name':'weather','args':{}}}]");
    jpt_batch *b = NULL;
    char *text = NULL;
    char *lima = weather_text("{'city':'Lima'}");
    char *quito = weather_text("{'city':'Quito'}");

    assert_int_equal(jpt_registry_submit(r, parts, &b), JPT_OK);
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_batch_results_json(b, &text), JPT_OK);
    json_t *own = parse(text);
    jpt_free(text);
    assert_string_equal(json_string_value(json_object_get(json_array_get(own, 0), "id")),
                       "weather#1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(own, 1), "id")),
                       "g-7");
    assert_string_equal(json_string_value(json_object_get(json_array_get(own, 2), "id")),
                       "weather#3");
    assert_int_equal(jpt_batch_results_json_as(b, JPT_DIALECT_GEMINI, &text), JPT_OK);
    json_t *results = parse(text);
    jpt_free(text);
    json_t *fr = json_object_get(json_array_get(results, 0), "functionResponse");
    assert_int_equal(json_object_size(fr), 2);
    assert_string_equal(json_string_value(json_object_get(fr, "name")), "weather");
    tu_assert_json_equal(json_string_value(json_object_get(json_object_get(fr, "response"),
                                                           "output")),
                         lima);
    fr = json_object_get(json_array_get(results, 1), "functionResponse");
    assert_int_equal(json_object_size(fr), 3);
    assert_string_equal(json_string_value(json_object_get(fr, "id")), "g-7");
    tu_assert_json_equal(json_string_value(json_object_get(json_object_get(fr, "response"),
                                                           "output")),
                         quito);
    assert_json(json_array_get(results, 2),
                js("{'functionResponse':{'name':'weather','response':{'error':"
                   "'Invalid arguments for `weather`: at the top level: missing required "
                   "property \\'city\\''}}}"));
    free(lima);
    free(quito);
    json_decref(own);
    json_decref(results);
    jpt_batch_free(b);
    jpt_registry_free(r);
}

/* A host may ask for one shape whatever the calls came in; jptool's own
 * calls come back in jptool's own shape when asked as called. */
static void results_in_a_chosen_shape_or_each_as_called(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(host_tools));
    const char *calls = js("[{'id':'own','name':'nope','arguments':{}},"
                           "{'type':'tool_use','id':'tu','name':'nope','input':{}}]");
    json_t *as_called = run_as(r, calls, JPT_DIALECT_AS_CALLED);
    json_t *openai = run_as(r, calls, JPT_DIALECT_OPENAI);
    json_t *responses = run_as(r, calls, JPT_DIALECT_OPENAI_RESPONSES);

    assert_json(as_called, js("[{'id':'own','content':'Unknown tool `nope`','is_error':true},"
                              "{'type':'tool_result','tool_use_id':'tu',"
                              "'content':'Unknown tool `nope`','is_error':true}]"));
    assert_json(openai, js("[{'role':'tool','tool_call_id':'own',"
                           "'content':'Unknown tool `nope`'},"
                           "{'role':'tool','tool_call_id':'tu','content':'Unknown tool `nope`'}]"));
    assert_json(responses, js("[{'type':'function_call_output','call_id':'own',"
                              "'output':'Unknown tool `nope`'},"
                              "{'type':'function_call_output','call_id':'tu',"
                              "'output':'Unknown tool `nope`'}]"));
    json_decref(as_called);
    json_decref(openai);
    json_decref(responses);
    jpt_registry_free(r);
}

/* Anthropic refuses an empty text: an empty result has no content. */
static void anthropic_result_without_output_has_no_content(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[{'name':'quiet','command':['true']}]}"));
    json_t *results = run_as(r, js("[{'type':'tool_use','id':'t','name':'quiet','input':{}}]"),
                             JPT_DIALECT_ANTHROPIC);

    assert_json(results, js("[{'type':'tool_result','tool_use_id':'t','is_error':false}]"));
    json_decref(results);
    jpt_registry_free(r);
}

static void results_as_refuses_a_running_batch_and_other_dialects(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(host_tools));
    jpt_batch *b = NULL;
    char *text = NULL;
    static char untouched[] = "untouched";
    const int bad_dialects[] = {JPT_DIALECT_MCP, 6, JPT_DIALECT_OPENAI | JPT_DIALECT_STRICT,
                                JPT_DIALECT_ANTHROPIC | JPT_DIALECT_FLAT, -1};

    assert_int_equal(jpt_registry_submit(r, js("[{'id':'a','name':'sh','arguments':"
                                               "{'action':'spawn','id':'s'}}]"),
                                         &b),
                     JPT_OK);
    text = untouched;
    assert_int_equal(jpt_batch_results_json_as(b, JPT_DIALECT_OPENAI, &text), JPT_ERR_STATE);
    assert_null(text);
    ru_assert_contains(jpt_registry_errmsg(r), "still running");
    assert_int_equal(jpt_registry_wait(r, b, WAIT_MS), JPT_OK);
    for (size_t i = 0; i < sizeof(bad_dialects) / sizeof(bad_dialects[0]); i++) {
        text = untouched;
        assert_int_equal(jpt_batch_results_json_as(b, bad_dialects[i], &text), JPT_ERR_INVALID);
        assert_null(text);
        ru_assert_contains(jpt_registry_errmsg(r), "is not a results dialect");
    }
    /* A success clears the message of the failure before it. */
    assert_int_equal(jpt_batch_results_json_as(b, JPT_DIALECT_OPENAI, &text), JPT_OK);
    jpt_free(text);
    assert_string_equal(jpt_registry_errmsg(r), "");
    assert_int_equal(jpt_batch_results_json_as(NULL, JPT_DIALECT_OPENAI, &text),
                     JPT_ERR_INVALID);
    assert_int_equal(jpt_batch_results_json_as(b, JPT_DIALECT_OPENAI, NULL), JPT_ERR_INVALID);
    jpt_batch_free(b);
    jpt_registry_free(r);
}

/* A call of a provider's shape without its id or name is not a call the
 * host can answer: the batch is refused, saying which and what. */
static void a_provider_call_without_its_id_or_name_refuses_the_batch(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(host_tools));
    const char *cases[][2] = {
        {"[{'type':'function','function':{'name':'weather'}}]",
         "submit: call 0 must be an OpenAI tool call with string \"id\" and "
         "\"function\".\"name\" (without NUL characters)"},
        {"[{'type':'text','text':'x'},{'type':'tool_use','name':'weather','input':{}}]",
         "submit: call 1 must be an Anthropic tool_use block with string \"id\" and \"name\" "
         "(without NUL characters)"},
        {"[{'type':'function_call','id':'fc_1','name':'weather','arguments':'{}'}]",
         "submit: call 0 must be an OpenAI function_call with string \"call_id\" and \"name\" "
         "(without NUL characters)"},
        {"[{'functionCall':{'args':{}}}]",
         "submit: call 0 must be a Gemini functionCall with string \"name\" (without NUL "
         "characters)"},
        {"[{'id':'a\\u0000b','name':'weather'}]",
         "submit: call 0 must be an object with string \"id\" and \"name\" (without NUL "
         "characters)"},
        {"[{'id':'a','name':'weather','arguments':{}},1e400]",
         "submit: call 1 must be an object with string \"id\" and \"name\" (without NUL "
         "characters)"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        jpt_batch *b = (jpt_batch *)&b;
        assert_int_equal(jpt_registry_submit(r, js(cases[i][0]), &b), JPT_ERR_INVALID);
        assert_null(b);
        assert_string_equal(jpt_registry_errmsg(r), cases[i][1]);
    }
    jpt_registry_free(r);
}

/* ==== What one call's arguments may not hold (issue 7 §6) ============================== */

#define ECHO                                                                               \
    "{'name':'echo','command':['" TOOL("outcome-tool") "','echo','{{tool}}']}"

/* "A NUL, or a number jansson cannot hold, inside one call's arguments
 * fails that call with a clear error, not the whole batch." Before, the
 * whole submit failed. */
static void a_nul_or_an_unholdable_number_fails_only_its_call(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[" ECHO "]}"));
    json_t *res = ru_run(
        r, "[{\"id\":\"a\",\"name\":\"echo\",\"arguments\":{\"s\":\"x\\u0000y\"}},"
           "{\"id\":\"b\",\"name\":\"echo\",\"arguments\":{\"a\\u0000b\":1}},"
           "{\"id\":\"c\",\"name\":\"echo\",\"arguments\":{\"n\":1e400}},"
           "{\"id\":\"d\",\"name\":\"echo\",\"arguments\":{\"n\":99999999999999999999}},"
           "{\"id\":\"e\",\"name\":\"echo\",\"arguments\":{\"deep\":{\"list\":[1,-1E+999]}}},"
           "{\"id\":\"f\",\"name\":\"echo\",\"arguments\":{\"n\":-99999999999999999999}},"
           "{\"id\":\"g\",\"name\":\"echo\",\"arguments\":{\"ok\":[1e-400,"
           "9223372036854775807,-9223372036854775808,1.7976931348623157e308,\"1e400\"]}}]");

    /* Issue 16 §3: a NUL in a string is a character (state.h, the one
     * rule); {{tool}} carries it as JSON. */
    tu_assert_json_equal(ru_content(res, 0), "{\"name\":\"echo\",\"arguments\":{\"s\":"
                                             "\"x\\u0000y\"},\"answers\":{},\"options\":{}}");
    assert_false(ru_is_error(res, 0));
    ru_assert_text(res, 1, "b",
                   "Invalid arguments for `echo`: an argument name at the top level holds a "
                   "NUL character (U+0000)",
                   true);
    ru_assert_text(res, 2, "c",
                   "Invalid arguments for `echo`: the argument at /n is a number out of "
                   "range: 1e400",
                   true);
    ru_assert_text(res, 3, "d",
                   "Invalid arguments for `echo`: the argument at /n is a number out of "
                   "range: 99999999999999999999",
                   true);
    ru_assert_text(res, 4, "e",
                   "Invalid arguments for `echo`: the argument at /deep/list/1 is a number "
                   "out of range: -1E+999",
                   true);
    ru_assert_text(res, 5, "f",
                   "Invalid arguments for `echo`: the argument at /n is a number out of "
                   "range: -99999999999999999999",
                   true);
    /* What jansson holds runs (an underflow is 0). */
    tu_assert_json_equal(ru_content(res, 6),
                         "{\"name\":\"echo\",\"arguments\":{\"ok\":[0.0,9223372036854775807,"
                         "-9223372036854775808,1.7976931348623157e308,\"1e400\"]},"
                         "\"answers\":{},\"options\":{}}");
    assert_false(ru_is_error(res, 6));
    json_decref(res);
    jpt_registry_free(r);
}

/* The same inside arguments given as JSON text (OpenAI's shape). */
static void a_nul_or_an_unholdable_number_in_arguments_text_fails_only_its_call(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[" ECHO "]}"));
    json_t *res = ru_run(
        r, "[{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"echo\","
           "\"arguments\":\"{\\\"s\\\":\\\"x\\\\u0000y\\\"}\"}},"
           "{\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"echo\","
           "\"arguments\":\"{\\\"n\\\":[2e308]}\"}},"
           "{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"echo\","
           "\"arguments\":\"{\\\"k\\\\u0000\\\":true}\"}},"
           "{\"id\":\"d\",\"type\":\"function\",\"function\":{\"name\":\"echo\","
           "\"arguments\":\"{\\\"n\\\":\"}},"
           "{\"id\":\"e\",\"type\":\"function\",\"function\":{\"name\":\"echo\","
           "\"arguments\":\"{\\\"n\\\":1}\"}}]");

    tu_assert_json_equal(ru_content(res, 0), "{\"name\":\"echo\",\"arguments\":{\"s\":"
                                             "\"x\\u0000y\"},\"answers\":{},\"options\":{}}");
    ru_assert_text(res, 1, "b",
                   "Invalid arguments for `echo`: the argument at /n/0 is a number out of "
                   "range: 2e308",
                   true);
    ru_assert_text(res, 2, "c",
                   "Invalid arguments for `echo`: an argument name at the top level holds a "
                   "NUL character (U+0000)",
                   true);
    ru_assert_text(res, 3, "d",
                   "Invalid arguments for `echo`: the arguments string is not a JSON object: "
                   "unexpected token near end of file",
                   true);
    tu_assert_json_equal(ru_content(res, 4), "{\"name\":\"echo\",\"arguments\":{\"n\":1},"
                                             "\"answers\":{},\"options\":{}}");
    json_decref(res);
    jpt_registry_free(r);
}

/* Issue 16 §3: "a tool whose schema holds \\u0000 is refused at load while
 * the direct check and questions accept it; arguments holding U+0000 are
 * refused even when the schema allows them". One rule now (state.h): a
 * NUL is a character in every JSON value; only what becomes a C string
 * refuses it, by name. */
static void a_nul_follows_one_rule_on_every_route(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(
        "{'tools':[{'name':'pick','command':['" TOOL("outcome-tool") "','echo','{{tool}}'],"
        " 'parameters':{'type':'object','properties':{'s':{'enum':['x\\u0000y','z']}},"
        "  'required':['s']}},"
        "{'name':'argv','command':['" TOOL("outcome-tool") "','echo','{{arguments.s}}'],"
        " 'parameters':{'type':'object','properties':{'s':{'type':'string','maxLength':3}}}}]}"));
    json_t *res = ru_run(
        r, "[{\"id\":\"a\",\"name\":\"pick\",\"arguments\":{\"s\":\"x\\u0000y\"}},"
           "{\"id\":\"b\",\"name\":\"pick\",\"arguments\":{\"s\":\"x\\u0000z\"}},"
           "{\"id\":\"c\",\"name\":\"argv\",\"arguments\":{\"s\":\"a\\u0000b\"}},"
           "{\"id\":\"d\",\"name\":\"argv\",\"arguments\":{\"s\":\"ab\\u0000cd\"}}]");

    tu_assert_json_equal(ru_content(res, 0), "{\"name\":\"pick\",\"arguments\":{\"s\":"
                                             "\"x\\u0000y\"},\"answers\":{},\"options\":{}}");
    ru_assert_text(res, 1, "b",
                   "Invalid arguments for `pick`: at /s: \"x\\u0000z\" is not one of "
                   "[\"x\\u0000y\",\"z\"]",
                   true);
    ru_assert_text(res, 2, "c",
                   "`argv` could not run: the argument `s` holds a NUL character (U+0000), "
                   "which a command line cannot carry",
                   true);
    ru_assert_text(res, 3, "d",
                   "Invalid arguments for `argv`: at /s: a string of 5 characters is longer "
                   "than maxLength 3",
                   true);
    json_decref(res);

    /* What becomes a C string refuses a NUL at load, by name. */
    assert_int_equal(jpt_registry_load_tools(r, js("{'tools':[{'name':'d','description':"
                                                   "'a\\u0000b','command':['true']}]}"),
                                             0),
                     JPT_ERR_INVALID);
    assert_string_equal(jpt_registry_errmsg(r),
                        "tool 'd': 'description' holds a NUL character (\\u0000): only "
                        "'parameters' and 'options', which stay JSON, may");
    jpt_registry_free(r);
}

/* Issue 16 §3: a keyword the checker would half-apply refuses the tool at
 * load, naming the keyword and its place. */
static void a_tool_whose_schema_the_checker_cannot_follow_is_refused(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[]}"));

    assert_int_equal(jpt_registry_load_tools(
                         r, js("{'tools':[{'name':'t','command':['true'],'parameters':"
                               "{'type':'object','properties':{'pair':{'type':'array',"
                               "'prefixItems':[{'type':'string'}]}}}}]}"),
                         0),
                     JPT_ERR_UNSUPPORTED);
    assert_string_equal(jpt_registry_errmsg(r),
                        "tool 't': 'parameters' at /properties/pair: 'prefixItems' is a "
                        "keyword of JSON Schema 2019-09 or later, which jptool does not check "
                        "(it checks draft 7's keywords)");
    assert_int_equal(jpt_registry_load_tools(
                         r, js("{'tools':[{'name':'t','command':['true'],'parameters':"
                               "{'type':'object','properties':{'n':{'maxLength':-1}}}}]}"),
                         0),
                     JPT_ERR_INVALID);
    assert_string_equal(jpt_registry_errmsg(r),
                        "tool 't': 'parameters' at /properties/n: 'maxLength' must be a "
                        "non-negative integer");
    jpt_registry_free(r);
}

/* Issue 16 §3: "A $ref property becomes {\"type\": \"string\"} in the Gemini
 * and OpenAI strict lists: the model is told to send a string." Where the
 * provider has no $ref (Gemini) or the form rebuilds the schema (strict,
 * flat), the target is inlined. */
static void local_refs_are_inlined_where_the_form_has_none(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[" DRAW "]}"));
    json_t *gemini = schema_of(r, JPT_DIALECT_GEMINI, "draw");
    json_t *strict = schema_of(r, JPT_DIALECT_OPENAI | JPT_DIALECT_STRICT, "draw");
    json_t *plain = schema_of(r, JPT_DIALECT_ANTHROPIC, "draw");

    assert_json(json_object_get(json_object_get(gemini, "properties"), "from"),
                js("{'type':'object','properties':{'x':{'type':'number'},"
                   "'y':{'type':'number'},'label':{'type':'string',"
                   "'description':'The point\\'s name'}},'required':['x','y']}"));
    assert_json(json_object_get(json_object_get(gemini, "properties"), "to"),
                js("{'type':'object','description':'The end','properties':{'x':{'type':'number'},"
                   "'y':{'type':'number'},'label':{'type':'string',"
                   "'description':'The point\\'s name'}},'required':['x','y']}"));
    assert_json(json_object_get(json_object_get(strict, "properties"), "from"),
                js("{'type':'object','properties':{'x':{'type':'number'},"
                   "'y':{'type':'number'},'label':{'type':['string','null'],"
                   "'description':'The point\\'s name'}},'required':['x','y','label'],"
                   "'additionalProperties':false}"));
    /* The plain form of a one-shot tool is its schema as written. */
    assert_json(json_object_get(json_object_get(plain, "properties"), "from"),
                js("{'$ref':'#/$defs/pt'}"));
    assert_non_null(json_object_get(plain, "$defs"));
    json_decref(gemini);
    json_decref(strict);
    json_decref(plain);

    /* What strict mode's model sends: nulls inside the inlined target are
     * absent, and the call runs. */
    json_t *res = ru_run_js(r, "[{'id':'1','name':'draw','arguments':{'from':{'x':1,'y':2,"
                               "'label':null},'to':null}}]");
    tu_assert_json_equal(ru_content(res, 0), js("{'name':'draw','arguments':{'from':{'x':1,"
                                                "'y':2}},'answers':{},'options':{}}"));
    jpt_registry_free(r);
}

/* A $ref that leads back to itself cannot be inlined: the forms that
 * inline refuse the tool, naming the property; the plain form lists it. */
static void a_recursive_ref_refuses_the_tool_where_refs_are_inlined(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(
        "{'tools':[{'name':'tree','command':['true'],'parameters':{'type':'object',"
        "'definitions':{'node':{'type':'object','properties':{'kids':{'type':'array',"
        "'items':{'$ref':'#/definitions/node'}}}}},'properties':{'root':"
        "{'$ref':'#/definitions/node'}}}}]}"));
    char *text = NULL;

    assert_int_equal(jpt_registry_tools_json(r, JPT_DIALECT_GEMINI, &text), JPT_ERR_UNSUPPORTED);
    assert_null(text);
    assert_string_equal(jpt_registry_errmsg(r),
                        "tools_json: tool 'tree' cannot be listed for this dialect: the "
                        "property at /properties/root/properties/kids/items: its $ref "
                        "\"#/definitions/node\" leads back to itself, and this form has no "
                        "$ref to say so (it inlines them)");
    assert_int_equal(jpt_registry_tools_json(r, JPT_DIALECT_OPENAI | JPT_DIALECT_STRICT, &text),
                     JPT_ERR_UNSUPPORTED);
    assert_int_equal(jpt_registry_tools_json(r, JPT_DIALECT_ANTHROPIC, &text), JPT_OK);
    jpt_free(text);
    jpt_registry_free(r);
}

/* Issue 16 §3: "The command line Required for spawn.": descriptions are
 * joined as sentences, and the required parameters say a one-shot call
 * needs them too. */
static void descriptions_join_as_sentences(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(
        "{'tools':[{'name':'run','stateful':true,'command':['cat'],'parameters':"
        "{'type':'object','properties':{'cmd':{'type':'string','description':'The command "
        "line'},'why':{'type':'string','description':'Why it runs.  '},"
        "'n':{'enum':[1,2],'description':'How many'}},'required':['cmd','why','n']}}]}"));
    static const int dialects[] = {JPT_DIALECT_ANTHROPIC, JPT_DIALECT_GEMINI,
                                   JPT_DIALECT_OPENAI | JPT_DIALECT_STRICT};

    for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        json_t *s = schema_of(r, dialects[i], "run");
        json_t *props = json_object_get(s, "properties");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(props, "cmd"), "description")),
            "The command line. Required for spawn and for a one-shot call (no action).");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(props, "why"), "description")),
            "Why it runs. Required for spawn and for a one-shot call (no action).");
        json_decref(s);
    }
    /* Gemini tells in words what its subset cannot say. */
    json_t *g = schema_of(r, JPT_DIALECT_GEMINI, "run");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(g, "properties"), "n"),
                            "description")),
                        "How many. Required for spawn and for a one-shot call (no action). "
                        "One of: [1,2].");
    json_decref(g);
    jpt_registry_free(r);
}

/* Arguments that are neither an object nor text holding one, in each
 * provider's field: the result names the field as the provider does and
 * what it held. */
static void arguments_of_another_type_are_named_in_each_shape(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[" ECHO "]}"));
    json_t *res = ru_run_js(r, "["
        "{'id':'a','type':'function','function':{'name':'echo','arguments':42}},"
        "{'type':'tool_use','id':'b','name':'echo','input':[1]},"
        "{'functionCall':{'name':'echo','args':true,'id':'c'}},"
        "{'id':'d','name':'echo','arguments':[]}]");

    ru_assert_text(res, 0, "a",
                   "Invalid arguments for `echo`: `arguments` is an integer, not an object or "
                   "a JSON string holding one",
                   true);
    ru_assert_text(res, 1, "b",
                   "Invalid arguments for `echo`: `input` is an array, not an object or a "
                   "JSON string holding one",
                   true);
    ru_assert_text(res, 2, "c",
                   "Invalid arguments for `echo`: `args` is a boolean, not an object or a "
                   "JSON string holding one",
                   true);
    ru_assert_text(res, 3, "d",
                   "Invalid arguments for `echo`: `arguments` is an array, not an object or "
                   "a JSON string holding one",
                   true);
    jpt_registry_free(r);
}

/* ==== The empty batch ================================================================= */

/* Issue 7: "An empty batch ([]) emits BATCH_DONE like any other; today an
 * event-driven host waits for it forever." The host polls the fd, which is
 * readable, dispatches, and finds the event. A message with no call among
 * its blocks is such a batch too. */
static void an_empty_batch_emits_batch_done_at_the_next_dispatch(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js(host_tools));
    const char *messages[] = {"[]", js("[{'type':'text','text':'Nothing to run.'}]")};

    for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) {
        jpt_batch *b = NULL;
        jpt_event *e = NULL;
        char *text = NULL;
        struct pollfd p = {.fd = jpt_registry_get_fd(r), .events = POLLIN};
        assert_int_equal(jpt_registry_submit(r, messages[i], &b), JPT_OK);
        assert_true(jpt_batch_done(b));
        assert_int_equal(poll(&p, 1, WAIT_MS), 1);
        assert_true(jpt_registry_dispatch(r) >= 0);
        assert_int_equal(jpt_registry_next_event(r, &e), JPT_OK);
        assert_int_equal(jpt_event_type(e), JPT_EVENT_BATCH_DONE);
        assert_ptr_equal(jpt_event_batch(e), b);
        jpt_event_free(e);
        assert_int_equal(jpt_registry_next_event(r, &e), JPT_ERR_AGAIN);
        assert_int_equal(jpt_batch_results_json(b, &text), JPT_OK);
        assert_string_equal(text, "[]");
        jpt_free(text);
        assert_int_equal(jpt_batch_results_json_as(b, JPT_DIALECT_ANTHROPIC, &text), JPT_OK);
        assert_string_equal(text, "[]");
        jpt_free(text);
        jpt_batch_free(b);
    }
    jpt_registry_free(r);
}

/* ==== The nulls of OpenAI's strict mode ================================================ */

#define OPTIONS                                                                            \
    "{'name':'options','command':['" TOOL("outcome-tool") "','echo','{{tool}}'],"          \
    "'parameters':{'type':'object','properties':{'a':{'type':'string'},"                  \
    "'b':{'type':['string','null']},'o':{'type':'object','properties':"                   \
    "{'x':{'type':'integer'},'y':{'type':'integer'}}},"                                    \
    "'rows':{'type':'array','items':{'type':'object','properties':{'k':{'type':'string'}}}}},"\
    "'required':['a']}}"

/* Strict mode makes the model send null for each optional parameter it
 * leaves out: such a null goes, where the tool's schema takes no null. */
static void strict_modes_nulls_count_as_absent(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[" OPTIONS "," SH "]}"));
    json_t *res = ru_run_js(r, "[{'id':'1','name':'options','arguments':{'a':'v','b':null,"
                               "'c':null,'o':{'x':null,'y':2},'rows':[{'k':null}]}},"
                               "{'id':'2','type':'function','function':{'name':'sh',"
                               "'arguments':'{\\'action\\':\\'spawn\\',\\'id\\':\\'n1\\',"
                               "\\'input\\':null,\\'wait_secs\\':null}'}},"
                               "{'id':'3','name':'await','arguments':{'any':null,"
                               "'all':['n1'],'timeout_secs':0}}]");

    tu_assert_json_equal(ru_content(res, 0),
                         js("{'name':'options','arguments':{'a':'v','b':null,'o':{'y':2},"
                            "'rows':[{}]},'answers':{},'options':{}}"));
    ru_assert_response(res, 1, "2", "{'id':'n1','state':'running','content':'ready\\n> '}",
                       false);
    assert_false(ru_is_error(res, 2));
    res = ru_run_js(r, "[{'id':'4','name':'sh','arguments':{'action':'abort','id':'n1',"
                       "'input':null,'wait_secs':null}}]");
    assert_false(ru_is_error(res, 0));
    jpt_registry_free(r);
}

/* ==== The flat schema's rules, at call time ============================================ */

#define PROMPT                                                                             \
    "{'name':'prompt','stateful':true,'actions':['fetch','abort'],"                       \
    "'command':['" TOOL("echo-lines") "'],'parameters':{'type':'object','properties':"    \
    "{'mode':{'type':'string'}},'required':['mode']}}"

/* Issue 7: the flat form says the rules in descriptions and they are
 * "checked at call time": the tool's required spawn parameters, the id,
 * the declared actions, and input for apply. */
static void flat_schemas_rules_are_checked_when_the_call_arrives(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[" PROMPT "," SH "]}"));
    json_t *res = ru_run_js(r, "[{'id':'1','name':'prompt','arguments':{'action':'spawn',"
                               "'id':'p1'}},"
                               "{'id':'2','name':'prompt','arguments':{'action':'spawn'}},"
                               "{'id':'3','name':'prompt','arguments':{'action':'apply',"
                               "'id':'p1','input':'x'}},"
                               "{'id':'4','name':'sh','arguments':{'action':'spawn','id':'s2'}}]");

    ru_assert_text(res, 0, "1",
                   "Invalid arguments for `prompt`: at the top level: missing required "
                   "property \"mode\"",
                   true);
    ru_assert_text(res, 1, "2",
                   "`spawn` needs an `id`: 1 to 64 characters of A-Z, a-z, 0-9, '_', '.' "
                   "and '-'",
                   true);
    ru_assert_text(res, 2, "3",
                   "`prompt` does not support the action `apply` (it supports: spawn, fetch, "
                   "abort)",
                   true);
    assert_false(ru_is_error(res, 3));
    res = ru_run_js(r, "[{'id':'5','name':'sh','arguments':{'action':'apply','id':'s2'}},"
                       "{'id':'6','name':'sh','arguments':{'action':'abort','id':'s2'}}]");
    ru_assert_text(res, 0, "5", "`apply` needs an `input`", true);
    assert_false(ru_is_error(res, 1));
    jpt_registry_free(r);
}

/* ==== Allocation failure =============================================================== */

typedef struct list_ctx {
    jpt_registry *r;
    int dialect;
} list_ctx;

static int list_op(void *ctx)
{
    list_ctx *c = ctx;
    char *text = NULL;
    int rc = jpt_registry_tools_json(c->r, c->dialect, &text);
    jpt_free(text);
    return rc;
}

static void tool_lists_survive_allocation_failure(void **state)
{
    (void)state;
    list_ctx c = {ru_registry(js(shapes)), 0};
    /* Each form once (FLAT changes nothing), each wrapping once. */
    const int dialects[] = {JPT_DIALECT_ANTHROPIC,
                            JPT_DIALECT_OPENAI,
                            JPT_DIALECT_MCP,
                            JPT_DIALECT_GEMINI,
                            JPT_DIALECT_OPENAI_RESPONSES | JPT_DIALECT_STRICT,
                            JPT_DIALECT_ANTHROPIC | JPT_DIALECT_ONEOF};

    for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        c.dialect = dialects[i];
        tu_sweep("tools_json", list_op, &c);
    }
    jpt_registry_free(c.r);
}

/* A message of every shape, with a NUL, an unholdable number in
 * arguments text, a name holding a NUL, a Gemini call without id, nulls to
 * drop. */
static const char every_shape[] =
    "[{\"type\":\"text\",\"text\":\"x\"},"
    "{\"id\":\"a\",\"name\":\"nope\",\"arguments\":{\"s\":\"x\\u0000y\"}},"
    "{\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"nope\","
    "\"arguments\":\"{\\\"n\\\":[2e308],\\\"k\\\\u0000\\\":1}\"}},"
    "{\"type\":\"tool_use\",\"id\":\"c\",\"name\":\"options\",\"input\":{\"a\":\"v\","
    "\"b\":null,\"o\":{\"x\":null}}},"
    "{\"type\":\"function_call\",\"call_id\":\"d\",\"name\":\"nope\",\"arguments\":\"\"},"
    "{\"functionCall\":{\"name\":\"nope\",\"args\":{\"n\":1e999}}}]";

/* Submitting under allocation failure: the registry is made first and
 * freed after (calls in flight go with it). */
static int submit_op(void *ctx)
{
    (void)ctx;
    long n = tu_fail_hold();
    jpt_registry *r = ru_registry(js("{'tools':[" OPTIONS "," ECHO "]}"));
    jpt_batch *b = NULL;

    tu_fail_at(n);
    int rc = jpt_registry_submit(r, every_shape, &b);
    tu_fail_at(0);
    if (rc != JPT_OK)
        assert_null(b);
    jpt_batch_free(b);
    jpt_registry_free(r);
    return rc;
}

static void submit_survives_allocation_failure(void **state)
{
    (void)state;
    tu_sweep("submit", submit_op, NULL);
}

typedef struct results_ctx {
    jpt_batch *b;
    int dialect;
} results_ctx;

static int results_op(void *ctx)
{
    results_ctx *c = ctx;
    char *text = NULL;
    int rc = jpt_batch_results_json_as(c->b, c->dialect, &text);
    jpt_free(text);
    return rc;
}

static void results_survive_allocation_failure(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(js("{'tools':[" OPTIONS "," ECHO "]}"));
    const int dialects[] = {JPT_DIALECT_AS_CALLED, JPT_DIALECT_OPENAI,
                            JPT_DIALECT_OPENAI_RESPONSES, JPT_DIALECT_ANTHROPIC,
                            JPT_DIALECT_GEMINI};
    results_ctx c = {NULL, 0};

    assert_int_equal(jpt_registry_submit(r, every_shape, &c.b), JPT_OK);
    assert_int_equal(jpt_registry_wait(r, c.b, WAIT_MS), JPT_OK);
    for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++) {
        c.dialect = dialects[i];
        tu_sweep("results_json_as", results_op, &c);
    }
    jpt_batch_free(c.b);
    jpt_registry_free(r);
}

/* A builtin handle that runs until the test stops it. */
static jpt_handle *builtin_handle;

static int start_running(jpt_handle *h, const char *arguments_json, void *ud)
{
    jpt_state *s = NULL;

    (void)arguments_json;
    (void)ud;
    builtin_handle = h;
    assert_int_equal(jpt_state_new(JPT_STATE_RUNNING, &s), JPT_OK);
    int rc = jpt_handle_update(h, s);
    jpt_state_unref(s);
    return rc;
}

typedef struct turn_text_ctx {
    jpt_registry *r;
    jpt_batch *turn_end;
} turn_text_ctx;

static int turn_text_op(void *ctx, long n)
{
    turn_text_ctx *c = ctx;
    char *text = NULL;

    tu_fail_at(n);
    int rc = jpt_registry_take_turn_text(c->r, c->turn_end, &text);
    tu_fail_at(0);
    /* Nothing was taken by a failed one: the whole text comes at last. */
    if (rc == JPT_OK)
        ru_assert_contains(text, "[Notification: handle `b` (tool `job`) stopped after ");
    jpt_free(text);
    return rc;
}

/* jpt_registry_take_turn_text: a failure takes nothing and leaks nothing. */
static void turn_text_survives_allocation_failure(void **state)
{
    (void)state;
    jpt_registry *r = ru_registry(NULL);
    jpt_builtin_ops ops = {sizeof(ops), start_running, NULL, NULL};
    jpt_state *s = NULL;
    turn_text_ctx c = {r, NULL};

    assert_int_equal(jpt_registry_add_builtin(r, js("{'name':'job','stateful':true,"
                                                   "'actions':['fetch']}"),
                                              &ops, NULL),
                     JPT_OK);
    /* (Its results are kept until the suite's teardown frees them.) */
    ru_run_js(r, "[{'id':'s','name':'job','arguments':{'action':'spawn','id':'b'}}]");
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    assert_int_equal(jpt_state_add_text(s, "done"), JPT_OK);
    assert_int_equal(jpt_handle_update(builtin_handle, s), JPT_OK);
    jpt_state_unref(s);
    assert_int_equal(jpt_registry_run(r, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_registry_end_turn(r, 0, &c.turn_end), JPT_OK);
    assert_int_equal(jpt_registry_wait(r, c.turn_end, WAIT_MS), JPT_OK);
    /* sweep() but for the success, which frees the notices it takes. */
    for (long n = 1;; n++) {
        long live = tu_live_blocks();
        int rc = turn_text_op(&c, n);
        if (rc == JPT_OK)
            break;
        if (rc != JPT_ERR_NOMEM)
            fail_msg("allocation %ld failing gave %s, not JPT_ERR_NOMEM", n, jpt_status_name(rc));
        if (tu_live_blocks() != live)
            fail_msg("%ld block(s) leaked with allocation %ld failing", tu_live_blocks() - live, n);
        assert_true(n < 100000);
    }
    jpt_batch_free(c.turn_end);
    jpt_registry_free(r);
}

int main(void)
{
    tu_install_counting_allocator();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_dialect_gives_what_its_provider_accepts),
        cmocka_unit_test(every_dialect_gives_what_its_provider_accepts_for_small_lists),
        cmocka_unit_test(rfd_009s_one_of_is_what_openai_and_anthropic_refuse),
        cmocka_unit_test(flat_schema_is_a_plain_object_with_the_rules_in_descriptions),
        cmocka_unit_test(gemini_schema_is_the_flat_one_in_its_subset),
        cmocka_unit_test(strict_schema_closes_every_object_and_makes_the_optional_nullable),
        cmocka_unit_test(openai_entries_say_whether_they_are_strict),
        cmocka_unit_test(a_tools_top_level_alternatives_become_listed_properties),
        cmocka_unit_test(openai_chat_tool_calls_go_in_verbatim_and_come_back_as_tool_messages),
        cmocka_unit_test(anthropic_content_goes_in_verbatim_and_comes_back_as_tool_results),
        cmocka_unit_test(responses_output_goes_in_verbatim_and_comes_back_as_outputs),
        cmocka_unit_test(gemini_parts_go_in_verbatim_and_come_back_as_function_responses),
        cmocka_unit_test(results_in_a_chosen_shape_or_each_as_called),
        cmocka_unit_test(anthropic_result_without_output_has_no_content),
        cmocka_unit_test(results_as_refuses_a_running_batch_and_other_dialects),
        cmocka_unit_test(a_provider_call_without_its_id_or_name_refuses_the_batch),
        cmocka_unit_test(a_nul_or_an_unholdable_number_fails_only_its_call),
        cmocka_unit_test(a_nul_or_an_unholdable_number_in_arguments_text_fails_only_its_call),
        cmocka_unit_test(a_nul_follows_one_rule_on_every_route),
        cmocka_unit_test(a_tool_whose_schema_the_checker_cannot_follow_is_refused),
        cmocka_unit_test(local_refs_are_inlined_where_the_form_has_none),
        cmocka_unit_test(a_recursive_ref_refuses_the_tool_where_refs_are_inlined),
        cmocka_unit_test(descriptions_join_as_sentences),
        cmocka_unit_test(arguments_of_another_type_are_named_in_each_shape),
        cmocka_unit_test(an_empty_batch_emits_batch_done_at_the_next_dispatch),
        cmocka_unit_test(strict_modes_nulls_count_as_absent),
        cmocka_unit_test(flat_schemas_rules_are_checked_when_the_call_arrives),
        cmocka_unit_test(tool_lists_survive_allocation_failure),
        cmocka_unit_test(submit_survives_allocation_failure),
        cmocka_unit_test(results_survive_allocation_failure),
        cmocka_unit_test(turn_text_survives_allocation_failure),
    };
    int failed = TU_RUN(tests);
    ru_release_kept();
    return failed;
}
