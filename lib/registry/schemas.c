/* The tool list the model sees: per tool its JSON Schema, in a form the
 * provider accepts, wrapped in the shapes of OpenAI (Chat Completions and
 * Responses), Anthropic, Gemini and MCP tools/list.
 *
 * The forms:
 *   plain   (the default for OpenAI, Anthropic, MCP) a plain object at the
 *           top: OpenAI refuses oneOf, anyOf, allOf, enum, const and not at
 *           the top level, Anthropic oneOf, anyOf and allOf, and MCP
 *           clients pass the schema on to either. Stateful tools get the
 *           flat schema: RFD 009's fallback, "a flat schema with optional
 *           fields and … description to explain the action protocol"; the
 *           rules are checked when the call arrives.
 *   gemini  the flat schema in the OpenAPI subset of Gemini's Schema object.
 *   strict  the flat schema as OpenAI's strict mode takes it: every object
 *           closed, every property required, the optional ones nullable.
 *   one-of  RFD 009's oneOf and RFD 037's anyOf exactly, for a host whose
 *           provider takes them (JPT_DIALECT_ONEOF).
 * Whatever a form cannot say is still checked at call time against the
 * tool's own schema. */
#include <string.h>

#include "registry/tools.h"

#define FORM_ONEOF 0
#define FORM_PLAIN 1
#define FORM_GEMINI 2
#define FORM_STRICT 3

static const char id_description[] =
    "Handle ID for this tool instance. Must be unique across active handles.";
static const char flat_id_description[] =
    "Handle ID: required by every action. For spawn, choose one that no active handle uses.";
static const char wait_description[] =
    "Wait up to this many seconds for the handle to print or stop before answering "
    "(default: answer once output settles).";
static const char input_description[] =
    "For apply. To a running handle: what to write to its input; a string is written as "
    "given (include the newline a line-reading program needs), any other JSON value as its "
    "compact JSON text on one line, without a newline. To a waiting handle: the answer to "
    "its question, as the question's schema asks.";
static const char text_input_description[] =
    "For apply. To a running handle: the text to write to its input, as given (include "
    "the newline a line-reading program needs). To a waiting handle: the answer to its "
    "question.";
/* RFD 009's flat schema: without an action the call runs the tool once,
 * and takes the tool's own required parameters as spawn does. */
static const char required_for_spawn[] = "Required for spawn and for a one-shot call (no "
                                         "action).";

/* Building JSON: a failed allocation is remembered instead of checked at
 * every step (jansson's *_new functions take NULL and drop the value on
 * failure). */
typedef struct build {
    bool nomem;
    jpt__buf refused; /* why the tool cannot be listed in this form */
} build;

static void put(build *b, json_t *obj, const char *key, json_t *v)
{
    if (json_object_set_new(obj, key, v) < 0)
        b->nomem = true;
}

static void push(build *b, json_t *arr, json_t *v)
{
    if (json_array_append_new(arr, v) < 0)
        b->nomem = true;
}

/* Whether `v` holds a "$ref" member anywhere. */
static bool has_ref(const json_t *v)
{
    const char *key;
    const json_t *member;
    size_t i;

    json_object_foreach((json_t *)v, key, member)
        if (strcmp(key, "$ref") == 0 || has_ref(member))
            return true;
    json_array_foreach(v, i, member)
        if (has_ref(member))
            return true;
    return false;
}

/* ---- Local $refs, inlined ------------------------------------------------------- *
 * Gemini's Schema object has no $ref, and the flat, one-of and strict
 * forms rebuild a tool's schema around its properties, which moves what
 * a JSON Pointer names: there a tool's local $refs are replaced by their
 * targets (a $ref's siblings kept beside it in an allOf, which the forms
 * merge). A $ref that leads back to itself cannot be inlined: the tool is
 * refused for that form, with the property named; so is one whose
 * inlining nests deeper or grows larger than the bounds below. */

#define INLINE_MAX_DEPTH 32      /* $refs inlined inside one another */
#define INLINE_MAX_NODES 100000  /* schema objects in an inlined schema */

typedef struct inliner {
    const json_t *root;
    const json_t *open[INLINE_MAX_DEPTH]; /* the targets being inlined */
    size_t depth, nodes;
    jpt__buf path; /* the place in the tool's schema, for messages */
} inliner;

static json_t *inlined(build *b, inliner *in, const json_t *s);

static void refuse(build *b, inliner *in, const char *fmt, ...) JPT__PRINTF(3, 4);

static void refuse(build *b, inliner *in, const char *fmt, ...)
{
    va_list ap;

    if (b->refused.len > 0)
        return;
    if (jpt__buf_printf(&b->refused, "the property at %s: ",
                        in->path.len > 0 ? in->path.data : "the top level") < 0)
        b->nomem = true;
    va_start(ap, fmt);
    if (jpt__buf_vprintf(&b->refused, fmt, ap) < 0)
        b->nomem = true;
    va_end(ap);
}

/* The schemas under keyword `key` of a schema, inlined: one, an array or
 * an object of them; other values copied. */
static json_t *inlined_keyword(build *b, inliner *in, const char *key, const json_t *v)
{
    static const char *const one[] = {"items", "additionalItems", "contains",
                                      "additionalProperties", "propertyNames", "not",
                                      "if", "then", "else"};
    static const char *const named[] = {"properties", "patternProperties", "dependencies"};
    static const char *const listed[] = {"allOf", "anyOf", "oneOf", "items"};
    bool is_one = false, is_named = false, is_listed = false;
    size_t mark = in->path.len;
    json_t *out;

    for (size_t i = 0; i < sizeof(one) / sizeof(*one); i++)
        is_one = is_one || (strcmp(key, one[i]) == 0 && !json_is_array(v));
    for (size_t i = 0; i < sizeof(named) / sizeof(*named); i++)
        is_named = is_named || strcmp(key, named[i]) == 0;
    for (size_t i = 0; i < sizeof(listed) / sizeof(*listed); i++)
        is_listed = is_listed || (strcmp(key, listed[i]) == 0 && json_is_array(v));
    if (!is_one && !is_named && !is_listed)
        return json_deep_copy(v);
    if (jpt__buf_printf(&in->path, "/%s", key) < 0)
        b->nomem = true;
    if (is_one)
        out = inlined(b, in, v);
    else if (is_listed) {
        const json_t *item;
        size_t i, at = in->path.len;
        out = json_array();
        json_array_foreach(v, i, item) {
            if (jpt__buf_printf(&in->path, "/%zu", i) < 0)
                b->nomem = true;
            push(b, out, inlined(b, in, item));
            in->path.len = at;
        }
    } else {
        const char *name;
        const json_t *sub;
        size_t at = in->path.len;
        out = json_object();
        json_object_foreach((json_t *)v, name, sub) {
            if (jpt__buf_printf(&in->path, "/%s", name) < 0)
                b->nomem = true;
            /* dependencies' arrays of names are no schemas. */
            put(b, out, name, json_is_array(sub) ? json_deep_copy(sub) : inlined(b, in, sub));
            in->path.len = at;
        }
    }
    in->path.len = mark;
    if (in->path.data != NULL)
        in->path.data[mark] = '\0';
    return out;
}

/* The target of the $ref of `s`, inlined, beside `s`'s other keywords. */
static json_t *inlined_ref(build *b, inliner *in, const json_t *s, const char *ref)
{
    const json_t *target = jpt__schema_ref_target(in->root, ref);

    for (size_t i = 0; i < in->depth; i++)
        if (in->open[i] == target) {
            refuse(b, in, "its $ref \"%.120s\" leads back to itself, and this form has no "
                          "$ref to say so (it inlines them)",
                   ref);
            return json_object();
        }
    if (in->depth == INLINE_MAX_DEPTH) {
        refuse(b, in, "its $refs nest more than %d deep once inlined", INLINE_MAX_DEPTH);
        return json_object();
    }
    if (target == NULL) {
        /* Linted at load: only memory can get here. */
        refuse(b, in, "its $ref \"%.120s\" points to nothing", ref);
        return json_object();
    }
    in->open[in->depth++] = target;
    json_t *body = inlined(b, in, target);
    in->depth--;
    if (json_object_size(s) == 1)
        return body;
    /* A $ref's siblings apply too (state.h): both, as an allOf. */
    json_t *out = json_object();
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)s, key, v)
        if (strcmp(key, "$ref") != 0)
            put(b, out, key, inlined_keyword(b, in, key, v));
    json_t *all = json_object_get(out, "allOf");
    if (json_is_array(all))
        push(b, all, body);
    else
        put(b, out, "allOf", json_pack("[o]", body));
    return out;
}

static json_t *inlined(build *b, inliner *in, const json_t *s)
{
    const json_t *ref = json_object_get(s, "$ref");
    const char *key;
    const json_t *v;

    if (!json_is_object(s))
        return json_deep_copy(s);
    if (++in->nodes > INLINE_MAX_NODES) {
        refuse(b, in, "its schema holds more than %d schemas once its $refs are inlined",
               INLINE_MAX_NODES);
        return json_object();
    }
    if (json_is_string(ref))
        return inlined_ref(b, in, s, json_string_value(ref));
    json_t *out = json_object();
    json_object_foreach((json_t *)s, key, v)
        if (s != in->root || (strcmp(key, "definitions") != 0 && strcmp(key, "$defs") != 0))
            put(b, out, key, inlined_keyword(b, in, key, v));
    return out;
}

/* A tool's parameters with their local $refs inlined (their definitions
 * gone); the tool's own when it has none. New reference. */
static json_t *parameters_inlined(build *b, const jpt__tool *t)
{
    inliner in = {.root = t->parameters, .open = {t->parameters}, .depth = 1,
                  .path = JPT__BUF_INIT};

    if (!has_ref(t->parameters))
        return json_incref(t->parameters);
    json_t *out = inlined(b, &in, t->parameters);
    jpt__buf_free(&in.path);
    if (out == NULL)
        b->nomem = true;
    return out;
}

/* ---- RFD 009's oneOf ----------------------------------------------------------- */

/* The optional wait of spawn, fetch and apply. */
static json_t *wait_secs_schema(void)
{
    return json_pack("{s:s, s:i, s:s}", "type", "integer", "minimum", 0, "description",
                     wait_description);
}

/* RFD 009's fixed variants for fetch, apply and abort. */
static json_t *action_variant(build *b, int action)
{
    json_t *v = json_pack("{s:{s:{s:s}, s:{s:s}}, s:[s, s]}", "properties", "action", "const",
                          jpt__action_name(action), "id", "type", "string", "required",
                          "action", "id");
    json_t *props = json_object_get(v, "properties");

    if (v == NULL)
        b->nomem = true;
    if (action == JPT__ACTION_APPLY) {
        put(b, props, "input", json_object());
        push(b, json_object_get(v, "required"), json_string("input"));
    }
    if (action != JPT__ACTION_ABORT)
        put(b, props, "wait_secs", wait_secs_schema());
    return v;
}

/* The spawn variant: action and id, then the tool's own parameters. */
static json_t *spawn_variant(build *b, const json_t *params)
{
    json_t *v = json_pack("{s:{s:{s:s}, s:{s:s, s:s}}, s:[s, s]}", "properties", "action",
                          "const", "spawn", "id", "type", "string", "description",
                          id_description, "required", "action", "id");
    json_t *props = json_object_get(v, "properties");
    const json_t *own = json_object_get(params, "properties");
    const json_t *required = json_object_get(params, "required");
    size_t i;
    const json_t *name;

    if (v == NULL) {
        b->nomem = true;
        return NULL;
    }
    if (json_is_object(own) && json_object_update_missing(props, (json_t *)own) < 0)
        b->nomem = true;
    if (json_object_get(props, "wait_secs") == NULL)
        put(b, props, "wait_secs", wait_secs_schema());
    json_array_foreach(required, i, name) {
        if (json_is_string(name) && strcmp(json_string_value(name), "action") != 0 &&
            strcmp(json_string_value(name), "id") != 0)
            push(b, json_object_get(v, "required"), json_incref((json_t *)name));
    }
    return v;
}

static json_t *one_of_schema(build *b, const jpt__tool *t, const json_t *params)
{
    json_t *variants = json_array();
    json_t *schema = json_pack("{s:s, s:o}", "type", "object", "oneOf", variants);

    if (schema == NULL) {
        b->nomem = true;
        return NULL;
    }
    for (int a = JPT__ACTION_SPAWN; a <= JPT__ACTION_ABORT; a <<= 1)
        if (t->actions & (unsigned)a)
            push(b, variants,
                 a == JPT__ACTION_SPAWN ? spawn_variant(b, params) : action_variant(b, a));
    return schema;
}

/* ---- The flat schema ------------------------------------------------------------ */

/* The properties of a tool's parameters, with those its top-level oneOf,
 * anyOf and allOf branches define: the alternatives a plain object cannot
 * express still show what can be given. New reference. */
static json_t *all_properties(build *b, const json_t *params)
{
    static const char *const combinators[] = {"oneOf", "anyOf", "allOf"};
    const json_t *own = json_object_get(params, "properties");
    json_t *props = json_is_object(own) ? json_deep_copy(own) : json_object();

    if (props == NULL)
        b->nomem = true;
    for (size_t c = 0; props != NULL && c < sizeof(combinators) / sizeof(*combinators); c++) {
        const json_t *branch;
        size_t i;
        json_array_foreach(json_object_get(params, combinators[c]), i, branch) {
            json_t *more = json_deep_copy(json_object_get(branch, "properties"));
            if (json_is_object(more) && json_object_update_missing(props, more) < 0)
                b->nomem = true;
            json_decref(more);
        }
    }
    return props;
}

/* Sets the description of schema `s` to its own text followed by
 * `sentence`: the text ends in a full stop first when it ends without
 * punctuation ("The command line" + "Required…" is "The command line.
 * Required…"), and the two are one space apart. The description may hold
 * any character a JSON string can (a NUL too). */
static void describe_after(build *b, json_t *s, const char *sentence)
{
    const json_t *had = json_object_get(s, "description");
    const char *text = json_string_value(had);
    size_t n = json_string_length(had);
    jpt__buf d = JPT__BUF_INIT;
    int rc = JPT_OK;

    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\n' ||
                     text[n - 1] == '\r'))
        n--;
    if (n > 0) {
        rc = jpt__buf_append(&d, text, n);
        if (rc == JPT_OK && strchr(".!?:;", text[n - 1]) == NULL)
            rc = jpt__buf_putc(&d, '.');
        if (rc == JPT_OK)
            rc = jpt__buf_putc(&d, ' ');
    }
    if (rc == JPT_OK)
        rc = jpt__buf_puts(&d, sentence);
    if (rc < 0)
        b->nomem = true;
    else
        put(b, s, "description", json_stringn(d.data, d.len));
    jpt__buf_free(&d);
}

/* Appends `sentence` to the description of `props[name]` (a schema). */
static void describe_more(build *b, json_t *props, const char *name, const char *sentence)
{
    json_t *schema = json_object_get(props, name);

    if (!json_is_object(schema)) {
        /* A boolean schema, or a required name the tool did not define. */
        put(b, props, name, json_pack("{s:s}", "description", sentence));
        return;
    }
    describe_after(b, schema, sentence);
}

/* "What to do": the per-action rules, for the declared actions only. */
static json_t *action_description(build *b, const jpt__tool *t)
{
    static const char *const what[] = {
        [JPT__ACTION_FETCH] = " fetch: the handle's output since the last fetch, and its "
                              "state (needs id).",
        [JPT__ACTION_APPLY] = " apply: send input to a running handle, or answer a waiting "
                              "handle's question (needs id and input).",
        [JPT__ACTION_ABORT] = " abort: stop the handle (needs id).",
    };
    const json_t *required = json_object_get(t->parameters, "required");
    const json_t *name;
    size_t i;
    jpt__buf d = JPT__BUF_INIT;
    int rc = jpt__buf_puts(&d, "What to do. Without it the tool runs once to the end. "
                               "spawn: start a new handle (needs id");

    json_array_foreach(required, i, name)
        if (rc == JPT_OK && json_is_string(name))
            rc = jpt__buf_printf(&d, ", %s", json_string_value(name));
    if (rc == JPT_OK)
        rc = jpt__buf_puts(&d, ").");
    for (int a = JPT__ACTION_FETCH; rc == JPT_OK && a <= JPT__ACTION_ABORT; a <<= 1)
        if (t->actions & (unsigned)a)
            rc = jpt__buf_puts(&d, what[a]);
    json_t *text = rc == JPT_OK ? json_string(d.data) : NULL;
    if (text == NULL)
        b->nomem = true;
    jpt__buf_free(&d);
    return text;
}

/* One object, every field optional: an action enum of the declared
 * actions, id, input (with apply), wait_secs and the tool's parameters;
 * the tool's required ones say so in their descriptions. `text_input`:
 * the dialect needs a type for input, and gets a string. */
static json_t *flat_schema(build *b, const jpt__tool *t, const json_t *params, bool text_input)
{
    json_t *actions = json_array();
    json_t *props = all_properties(b, params);
    const json_t *required = json_object_get(params, "required");
    const json_t *name;
    size_t i;

    for (int a = JPT__ACTION_SPAWN; a <= JPT__ACTION_ABORT; a <<= 1)
        if (t->actions & (unsigned)a)
            push(b, actions, json_string(jpt__action_name(a)));
    json_array_foreach(required, i, name)
        if (json_is_string(name))
            describe_more(b, props, json_string_value(name), required_for_spawn);
    json_t *own = props;
    props = json_pack("{s:{s:s, s:o, s:o}, s:{s:s, s:s}}", "action", "type", "string", "enum",
                      actions, "description", action_description(b, t), "id", "type",
                      "string", "description", flat_id_description);
    if (t->actions & JPT__ACTION_APPLY)
        put(b, props, "input",
            text_input ? json_pack("{s:s, s:s}", "type", "string", "description",
                                   text_input_description)
                       : json_pack("{s:s}", "description", input_description));
    put(b, props, "wait_secs", wait_secs_schema());
    if (json_object_update_missing(props, own) < 0)
        b->nomem = true;
    json_decref(own);
    json_t *schema = json_pack("{s:s, s:o}", "type", "object", "properties", props);
    if (schema == NULL)
        b->nomem = true;
    return schema;
}

/* RFD 037's await tool, exactly as the RFD gives it; without `one_of` the
 * anyOf goes (both lists optional, checked at call time: RFD 037,
 * "Provider support for the anyOf required constraint"). */
static json_t *await_parameters(build *b, bool one_of)
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

    if (params == NULL)
        b->nomem = true;
    if (one_of)
        put(b, params, "anyOf",
            json_pack("[{s:[s]}, {s:[s]}]", "required", "any", "required", "all"));
    return params;
}

json_t *jpt__await_schema(void)
{
    build b = {false, JPT__BUF_INIT};
    json_t *params = await_parameters(&b, true);

    if (b.nomem) {
        json_decref(params);
        return NULL;
    }
    return params;
}

const char jpt__await_description[] =
    "Block until stateful tool handles reach completion. Use `any` to wait for the first "
    "handle to finish, `all` to wait for every handle to finish, or both to combine "
    "conditions.";

/* ---- Plain: what OpenAI and Anthropic take at the top level --------------------- */

/* OpenAI: "schema must have type 'object' and not have 'oneOf'/'anyOf'/
 * 'allOf'/'enum'/'const'/'not' at the top level", and an object schema
 * without properties is refused ("object schema missing properties");
 * Anthropic: "input_schema does not support oneOf, allOf, or anyOf at the
 * top level". The alternatives' properties stay listed. Takes `schema`. */
static json_t *plain_top(build *b, json_t *schema)
{
    static const char *const refused[] = {"oneOf", "anyOf", "allOf", "enum", "const", "not"};

    if (!json_is_object(schema)) {
        json_decref(schema);
        schema = json_object();
    }
    put(b, schema, "properties", all_properties(b, schema));
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++)
        json_object_del(schema, refused[i]);
    put(b, schema, "type", json_string("object"));
    return schema;
}

/* ---- Conversions shared by the Gemini and strict forms -------------------------- */

/* The member `key` of `m` as m's own copy (one level deep), to change
 * without changing the schema it came from. */
static json_t *own_member(build *b, json_t *m, const char *key)
{
    json_t *v = json_object_get(m, key);

    if (!json_is_object(v) && !json_is_array(v))
        return v;
    put(b, m, key, json_copy(v));
    return json_object_get(m, key);
}

/* allOf's branches merged into one schema (their properties, required and
 * other keywords; the first wins), so that the forms without allOf keep
 * what it says. New reference, which the caller only reads: a schema
 * without allOf is itself, and a merged one shares what it did not change
 * (copying each level whole made a deep schema cost its depth times its
 * size). */
static json_t *merged(build *b, const json_t *s)
{
    const json_t *all = json_object_get(s, "allOf");
    const json_t *branch;
    size_t i;

    if (all == NULL)
        return json_incref((json_t *)s);
    json_t *m = json_copy((json_t *)s);
    if (m == NULL) {
        b->nomem = true;
        return NULL;
    }
    json_object_del(m, "allOf");
    json_array_foreach(all, i, branch) {
        json_t *part = merged(b, branch);
        json_t *props = own_member(b, m, "properties");
        json_t *more = json_object_get(part, "properties");
        if (json_is_object(props) && json_is_object(more) &&
            json_object_update_missing(props, more) < 0)
            b->nomem = true;
        json_t *req = own_member(b, m, "required");
        if (json_is_array(req) && json_is_array(json_object_get(part, "required")) &&
            json_array_extend(req, json_object_get(part, "required")) < 0)
            b->nomem = true;
        if (json_is_object(part) && json_object_update_missing(m, part) < 0)
            b->nomem = true;
        json_decref(part);
    }
    return m;
}

/* The one type a schema gives or implies: "null" counts only alone. */
static const char *main_type(const json_t *s, bool *nullable)
{
    const json_t *type = json_object_get(s, "type");
    const json_t *t;
    size_t i;

    *nullable = json_is_true(json_object_get(s, "nullable"));
    if (json_is_string(type)) {
        if (strcmp(json_string_value(type), "null") == 0)
            *nullable = true;
        return json_string_value(type);
    }
    const char *found = NULL;
    json_array_foreach(type, i, t) {
        if (!json_is_string(t))
            continue;
        if (strcmp(json_string_value(t), "null") == 0)
            *nullable = true;
        else if (found == NULL)
            found = json_string_value(t);
    }
    if (found != NULL)
        return found;
    if (json_object_get(s, "properties") != NULL)
        return "object";
    if (json_object_get(s, "items") != NULL)
        return "array";
    const json_t *value = json_object_get(s, "const");
    if (value == NULL)
        value = json_array_get(json_object_get(s, "enum"), 0);
    if (value != NULL && !json_is_null(value))
        return jpt__json_type_name(value);
    /* Any value: the forms that need a type get text. */
    return "string";
}

/* Whether branch `s` of a oneOf or anyOf only allows null. */
static bool only_null(const json_t *s)
{
    const json_t *type = json_object_get(s, "type");

    return json_is_string(type) && strcmp(json_string_value(type), "null") == 0;
}

/* Appends "<lead> <value>." to the description of `out`: what the schema
 * form cannot say, told to the model instead. */
static void note(build *b, json_t *out, const char *lead, const json_t *value)
{
    char *text = NULL;
    jpt__buf d = JPT__BUF_INIT;

    if (jpt__json_dump(value, JSON_COMPACT | JSON_ENCODE_ANY, &text) < 0 ||
        jpt__buf_printf(&d, "%s %s.", lead, text) < 0)
        b->nomem = true;
    else
        describe_after(b, out, d.data);
    jpt__free(text);
    jpt__buf_free(&d);
}

static bool all_strings(const json_t *arr)
{
    const json_t *v;
    size_t i;

    json_array_foreach(arr, i, v)
        if (!json_is_string(v))
            return false;
    return json_array_size(arr) > 0;
}

/* Copies s[key] into `out` if it has the JSON type `type`. */
static void copy_key(build *b, json_t *out, const json_t *s, const char *key, json_type type)
{
    json_t *v = json_object_get(s, key);

    if (v != NULL && json_typeof(v) == type)
        put(b, out, key, json_deep_copy(v));
}

static void copy_number(build *b, json_t *out, const json_t *s, const char *key)
{
    copy_key(b, out, s, key, JSON_INTEGER);
    copy_key(b, out, s, key, JSON_REAL);
}

/* ---- Gemini: the OpenAPI subset of its Schema object ---------------------------- */

static json_t *gemini_schema(build *b, const json_t *s);

/* oneOf / anyOf: Gemini takes anyOf only as the one field of its schema
 * object (RFD 009, "Schema generation for stateful tools"); a null branch
 * becomes `nullable`. NULL when `s` has no alternatives. */
static json_t *gemini_alternatives(build *b, const json_t *s)
{
    const json_t *alts = json_object_get(s, "anyOf");
    const json_t *branch;
    size_t i;
    bool nullable = false;

    if (alts == NULL)
        alts = json_object_get(s, "oneOf");
    if (!json_is_array(alts) || json_array_size(alts) == 0)
        return NULL;
    json_t *branches = json_array();
    json_array_foreach(alts, i, branch) {
        if (only_null(branch))
            nullable = true;
        else
            push(b, branches, gemini_schema(b, branch));
    }
    json_array_foreach(branches, i, branch)
        if (nullable && json_object_get(branch, "type") != NULL)
            put(b, (json_t *)branch, "nullable", json_true());
    if (json_array_size(branches) == 1) {
        json_t *one = json_incref(json_array_get(branches, 0));
        json_decref(branches);
        if (json_object_get(one, "description") == NULL)
            copy_key(b, one, s, "description", JSON_STRING);
        return one;
    }
    if (json_array_size(branches) == 0) {
        json_decref(branches);
        return json_pack("{s:s, s:b}", "type", "string", "nullable", 1);
    }
    return json_pack("{s:o}", "anyOf", branches);
}

/* Gemini's FunctionDeclaration parameters are "a select subset of an
 * OpenAPI 3.0 schema object": type (one, required), format, description,
 * nullable, enum (strings), properties, required, items, minItems,
 * maxItems, minimum, maximum, anyOf (alone). No const, oneOf, allOf, not,
 * additionalProperties or type arrays. */
static json_t *gemini_schema(build *b, const json_t *s)
{
    if (!json_is_object(s))
        return json_pack("{s:s}", "type", "string");
    json_t *m = merged(b, s);
    json_t *alts = gemini_alternatives(b, m);
    if (alts != NULL) {
        json_decref(m);
        return alts;
    }
    bool nullable;
    const char *type = main_type(m, &nullable);
    if (strcmp(type, "null") == 0) {
        type = "string";
        nullable = true;
    }
    json_t *out = json_pack("{s:s}", "type", type);
    if (out == NULL)
        b->nomem = true;
    copy_key(b, out, m, "description", JSON_STRING);
    if (nullable)
        put(b, out, "nullable", json_true());

    const json_t *values = json_object_get(m, "enum");
    const json_t *value = json_object_get(m, "const");
    if (strcmp(type, "string") == 0 && all_strings(values))
        put(b, out, "enum", json_deep_copy(values));
    else if (values != NULL)
        note(b, out, "One of:", values);
    if (value != NULL && json_is_string(value) && strcmp(type, "string") == 0)
        put(b, out, "enum", json_pack("[O]", value));
    else if (value != NULL)
        note(b, out, "Must be", value);

    if (strcmp(type, "object") == 0) {
        json_t *props = json_object();
        const char *key;
        const json_t *sub, *name;
        size_t i;
        json_object_foreach((json_t *)json_object_get(m, "properties"), key, sub)
            put(b, props, key, gemini_schema(b, sub));
        json_t *required = json_array();
        json_array_foreach(json_object_get(m, "required"), i, name)
            if (json_is_string(name) && json_object_get(props, json_string_value(name)) != NULL)
                push(b, required, json_incref((json_t *)name));
        if (json_object_size(props) > 0)
            put(b, out, "properties", props);
        else
            json_decref(props);
        if (json_array_size(required) > 0)
            put(b, out, "required", required);
        else
            json_decref(required);
    } else if (strcmp(type, "array") == 0) {
        put(b, out, "items", gemini_schema(b, json_object_get(m, "items")));
        copy_key(b, out, m, "minItems", JSON_INTEGER);
        copy_key(b, out, m, "maxItems", JSON_INTEGER);
    } else if (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0) {
        copy_number(b, out, m, "minimum");
        copy_number(b, out, m, "maximum");
    }
    json_decref(m);
    return out;
}

/* ---- OpenAI strict mode ---------------------------------------------------------- */

static bool has_string(const json_t *arr, const char *text)
{
    const json_t *v;
    size_t i;

    json_array_foreach(arr, i, v)
        if (json_is_string(v) && strcmp(json_string_value(v), text) == 0)
            return true;
    return false;
}

static bool has_null(const json_t *arr)
{
    const json_t *v;
    size_t i;

    json_array_foreach(arr, i, v)
        if (json_is_null(v))
            return true;
    return false;
}

/* `s` may also be null: the model sends null for an optional property in
 * strict mode, and the call drops it (wire.c). */
static void make_nullable(build *b, json_t *s)
{
    json_t *type = json_object_get(s, "type");
    json_t *values = json_object_get(s, "enum");
    json_t *alts = json_object_get(s, "anyOf");

    if (json_is_array(alts)) {
        push(b, alts, json_pack("{s:s}", "type", "null"));
        return;
    }
    if (json_is_string(type) && strcmp(json_string_value(type), "null") != 0)
        put(b, s, "type", json_pack("[O, s]", type, "null"));
    else if (json_is_array(type) && !has_string(type, "null"))
        push(b, type, json_string("null"));
    if (json_is_array(values) && !has_null(values))
        push(b, values, json_null());
}

static json_t *strict_schema(build *b, const json_t *s, bool optional);

/* The object keywords of strict mode: every property listed in required,
 * those the tool does not require made nullable, and no others allowed. */

static void strict_object(build *b, json_t *out, const json_t *m)
{
    const json_t *required = json_object_get(m, "required");
    json_t *props = json_object();
    json_t *names = json_array();
    const char *key;
    const json_t *sub;

    json_object_foreach((json_t *)json_object_get(m, "properties"), key, sub) {
        bool needed = false;
        const json_t *name;
        size_t i;
        json_array_foreach(required, i, name)
            needed = needed || (json_is_string(name) && strcmp(json_string_value(name), key) == 0);
        put(b, props, key, strict_schema(b, sub, !needed));
        push(b, names, json_string(key));
    }
    put(b, out, "properties", props);
    put(b, out, "required", names);
    put(b, out, "additionalProperties", json_false());
}

/* One schema of strict mode, not yet made nullable. */
static json_t *strict_node(build *b, const json_t *m)
{
    const json_t *alts = json_object_get(m, "anyOf");
    const json_t *branch;
    size_t i;
    json_t *out;

    if (alts == NULL)
        alts = json_object_get(m, "oneOf");
    if (json_is_array(alts) && json_array_size(alts) > 0) {
        json_t *branches = json_array();
        json_array_foreach(alts, i, branch)
            push(b, branches, strict_schema(b, branch, false));
        out = json_pack("{s:o}", "anyOf", branches);
        copy_key(b, out, m, "description", JSON_STRING);
        return out;
    }
    bool nullable;
    const char *type = main_type(m, &nullable);
    const json_t *declared = json_object_get(m, "type");
    /* A copy: make_nullable adds to it, and `declared` is the tool's. */
    out = json_is_array(declared) ? json_pack("{s:o}", "type", json_copy((json_t *)declared))
                                  : json_pack("{s:s}", "type", type);
    if (nullable && !json_is_array(declared) && strcmp(type, "null") != 0)
        make_nullable(b, out);
    copy_key(b, out, m, "description", JSON_STRING);
    copy_key(b, out, m, "enum", JSON_ARRAY);
    if (json_object_get(m, "const") != NULL)
        put(b, out, "enum", json_pack("[O]", json_object_get(m, "const")));
    if (strcmp(type, "object") == 0)
        strict_object(b, out, m);
    else if (strcmp(type, "array") == 0)
        put(b, out, "items", strict_schema(b, json_object_get(m, "items"), false));
    return out;
}

/* Strict mode takes "string, number, boolean, integer, object, array,
 * enum, anyOf" with properties, required, additionalProperties, items and
 * description; every object has additionalProperties false and lists
 * every property in required ("optional" is a union with null); allOf,
 * not, oneOf and the rest are refused. The value keywords it takes only
 * for some models (pattern, minimum, minItems, …) are left out. */
static json_t *strict_schema(build *b, const json_t *s, bool optional)
{
    json_t *m = json_is_object(s) ? merged(b, s) : NULL;
    json_t *out = m != NULL ? strict_node(b, m) : json_pack("{s:s}", "type", "string");

    json_decref(m);
    if (out == NULL)
        b->nomem = true;
    else if (optional)
        make_nullable(b, out);
    return out;
}

/* ---- The list -------------------------------------------------------------------- */

/* The schema of a tool (or await's, when `t` is NULL) in `form`. For
 * Gemini, NULL with no error when the tool takes no parameters: Gemini
 * refuses an object without properties, and a declaration without
 * parameters is how it lists such a function. */
static json_t *listed_schema(build *b, const jpt__tool *t, int form)
{
    json_t *s, *params = NULL;

    /* The plain form of a one-shot tool is its schema as written, $refs
     * and all, which OpenAI, Anthropic and MCP clients take; the others
     * have them inlined. */
    if (t != NULL)
        params = form == FORM_PLAIN && !t->stateful ? json_incref(t->parameters)
                                                      : parameters_inlined(b, t);
    if (t == NULL)
        s = await_parameters(b, form == FORM_ONEOF);
    else if (params == NULL)
        s = NULL;
    else if (!t->stateful)
        s = json_deep_copy(params);
    else if (form == FORM_ONEOF)
        s = one_of_schema(b, t, params);
    else
        s = flat_schema(b, t, params, form == FORM_GEMINI || form == FORM_STRICT);
    json_decref(params);
    if (s == NULL)
        b->nomem = true;
    if (form == FORM_ONEOF || s == NULL)
        return s;

    s = plain_top(b, s);
    json_t *out = s;
    if (form == FORM_GEMINI) {
        out = json_object_size(json_object_get(s, "properties")) > 0 ? gemini_schema(b, s)
                                                                     : NULL;
        json_decref(s);
    } else if (form == FORM_STRICT) {
        out = strict_schema(b, s, false);
        json_decref(s);
    }
    return out;
}

static json_t *tool_entry(build *b, const char *name, const char *description, int base,
                          bool strict, json_t *schema)
{
    json_t *e;

    switch (base) {
    case JPT_DIALECT_OPENAI:
        e = json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "function", "function", "name", name,
                      "description", description, "parameters", schema);
        if (strict)
            put(b, json_object_get(e, "function"), "strict", json_true());
        break;
    case JPT_DIALECT_OPENAI_RESPONSES:
        /* Responses takes a function as strict unless told otherwise. */
        e = json_pack("{s:s, s:s, s:s, s:o, s:b}", "type", "function", "name", name,
                      "description", description, "parameters", schema, "strict", strict);
        break;
    case JPT_DIALECT_ANTHROPIC:
        e = json_pack("{s:s, s:s, s:o}", "name", name, "description", description,
                      "input_schema", schema);
        break;
    case JPT_DIALECT_GEMINI:
        e = json_pack("{s:s, s:s}", "name", name, "description", description);
        if (schema != NULL)
            put(b, e, "parameters", schema);
        break;
    default:
        e = json_pack("{s:s, s:s, s:o}", "name", name, "description", description,
                      "inputSchema", schema);
    }
    if (e == NULL)
        b->nomem = true;
    return e;
}

/* The form `dialect` asks for, or -1 when it is not a dialect. */
static int dialect_form(int dialect)
{
    int base = dialect & 0xff;
    int flags = dialect & ~0xff;
    bool openai = base == JPT_DIALECT_OPENAI || base == JPT_DIALECT_OPENAI_RESPONSES;

    if (base < JPT_DIALECT_OPENAI || base > JPT_DIALECT_OPENAI_RESPONSES ||
        (flags & ~(JPT_DIALECT_FLAT | JPT_DIALECT_ONEOF | JPT_DIALECT_STRICT)) != 0)
        return -1;
    if (flags & JPT_DIALECT_ONEOF)
        return (flags & (JPT_DIALECT_FLAT | JPT_DIALECT_STRICT)) || base == JPT_DIALECT_GEMINI
                   ? -1
                   : FORM_ONEOF;
    if (flags & JPT_DIALECT_STRICT)
        return openai ? FORM_STRICT : -1;
    return base == JPT_DIALECT_GEMINI ? FORM_GEMINI : FORM_PLAIN;
}

JPT_EXPORT int jpt_registry_tools_json(jpt_registry *r, int dialect, char **out)
{
    int form = dialect_form(dialect);
    int base = dialect & 0xff;
    build b = {false, JPT__BUF_INIT};

    if (out == NULL)
        return JPT_ERR_INVALID;
    *out = NULL;
    if (r == NULL)
        return JPT_ERR_INVALID;
    if (form < 0)
        return jpt__err(&r->err, JPT_ERR_INVALID, "tools_json: 0x%x is not a dialect",
                        (unsigned)dialect);
    json_t *list = json_array();
    for (size_t i = 0; i < r->ntools && !b.nomem; i++) {
        const jpt__tool *t = r->tools[i];
        push(&b, list, tool_entry(&b, t->name, t->description, base, form == FORM_STRICT,
                                  listed_schema(&b, t, form)));
        if (b.refused.len > 0 && !b.nomem) {
            int rc = jpt__err(&r->err, JPT_ERR_UNSUPPORTED,
                              "tools_json: tool '%s' cannot be listed for this dialect: %s",
                              t->name, b.refused.data);
            jpt__buf_free(&b.refused);
            json_decref(list);
            return rc;
        }
    }
    /* RFD 037, "Schema availability": await comes with stateful tools. */
    if (jpt__tools_have_stateful(r))
        push(&b, list, tool_entry(&b, "await", jpt__await_description, base, form == FORM_STRICT,
                                  listed_schema(&b, NULL, form)));
    json_t *doc = list;
    if (base == JPT_DIALECT_GEMINI)
        doc = json_pack("{s:o}", "functionDeclarations", list);
    else if (base == JPT_DIALECT_MCP)
        doc = json_pack("{s:o}", "tools", list);
    int rc = doc == NULL || b.nomem ? JPT_ERR_NOMEM : jpt__json_dump(doc, JSON_COMPACT, out);
    json_decref(doc);
    jpt__buf_free(&b.refused);
    if (rc < 0)
        return jpt__err(&r->err, rc, "out of memory listing the tools");
    return JPT_OK;
}
