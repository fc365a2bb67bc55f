/* libFuzzer harness for tool definitions: jpt_registry_load_tools() with
 * any text, then the tool list in every dialect and dialect flag. The
 * input: byte 0 picks the load flags (bit 0: JPT_LOAD_REPLACE; bit 1: the
 * second piece is a builtin's definition, jpt_registry_add_builtin,
 * rather than a second load), then NUL-separated pieces: the first
 * configuration, and a second one loaded after it.
 *
 * Beyond surviving:
 *  - a load succeeds or fails with a message; a failed one changes
 *    nothing (registry.h: "All definitions are checked before any is
 *    added"): the list in every dialect is the same text before and after;
 *  - every list is JSON of its dialect's shape, each tool named, and
 *    listing changes nothing (the second list is the first);
 *  - the schemas keep each provider's documented rules (registry.h and
 *    TESTING.md, "Providers"): Anthropic's input_schema has type "object"
 *    and no top-level oneOf, anyOf or allOf (unless asked for with
 *    JPT_DIALECT_ONEOF); Gemini's keywords are its OpenAPI subset, with
 *    one type and anyOf alone; OpenAI strict mode's objects have
 *    additionalProperties false and every property required, with no
 *    keyword outside its list. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <jptool/jptool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int bases[] = {JPT_DIALECT_OPENAI, JPT_DIALECT_ANTHROPIC, JPT_DIALECT_GEMINI,
                            JPT_DIALECT_MCP, JPT_DIALECT_OPENAI_RESPONSES};
static const int flag_sets[] = {0,
                                JPT_DIALECT_FLAT,
                                JPT_DIALECT_ONEOF,
                                JPT_DIALECT_STRICT,
                                JPT_DIALECT_FLAT | JPT_DIALECT_STRICT,
                                JPT_DIALECT_ONEOF | JPT_DIALECT_STRICT,
                                JPT_DIALECT_FLAT | JPT_DIALECT_ONEOF};
#define NBASES (sizeof(bases) / sizeof(*bases))
#define NFLAGS (sizeof(flag_sets) / sizeof(*flag_sets))
#define NLISTS (NBASES * NFLAGS)

static int start(jpt_handle *h, const char *arguments_json, void *ud)
{
    (void)h;
    (void)arguments_json;
    (void)ud;
    return JPT_OK;
}

static int apply(jpt_handle *h, const char *input_json, void *ud)
{
    (void)h;
    (void)input_json;
    (void)ud;
    return JPT_OK;
}

static int has_key(const json_t *o, const char *const *keys)
{
    for (; *keys != NULL; keys++)
        if (json_object_get(o, *keys) != NULL)
            return 1;
    return 0;
}

static int only_keys(const json_t *o, const char *const *allowed)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)o, key, v) {
        const char *const *a = allowed;
        while (*a != NULL && strcmp(*a, key) != 0)
            a++;
        if (*a == NULL)
            return 0;
    }
    return 1;
}

/* Gemini's Schema object, as schemas.c documents it. */
static void check_gemini(const json_t *s)
{
    static const char *const keys[] = {"type",     "format",   "description", "nullable",
                                       "enum",     "properties", "required",  "items",
                                       "minItems", "maxItems", "minimum",     "maximum",
                                       NULL};
    const json_t *alts = json_object_get(s, "anyOf"), *sub;
    const char *key;
    size_t i;

    if (!json_is_object(s))
        abort();
    if (alts != NULL) {
        if (json_object_size(s) != 1 || json_array_size(alts) < 2)
            abort();
        json_array_foreach(alts, i, sub) check_gemini(sub);
        return;
    }
    if (!only_keys(s, keys) || !json_is_string(json_object_get(s, "type")))
        abort();
    json_object_foreach((json_t *)json_object_get(s, "properties"), key, sub) check_gemini(sub);
    if (json_object_get(s, "items") != NULL)
        check_gemini(json_object_get(s, "items"));
}

/* Whether the type of a strict schema names "object". */
static int is_object_type(const json_t *type)
{
    const json_t *t;
    size_t i;

    if (json_is_string(type))
        return strcmp(json_string_value(type), "object") == 0;
    json_array_foreach(type, i, t) if (json_is_string(t) &&
                                       strcmp(json_string_value(t), "object") == 0) return 1;
    return 0;
}

/* OpenAI strict mode, as schemas.c documents it. */
static void check_strict(const json_t *s)
{
    static const char *const keys[] = {"type",  "description", "enum",  "properties",
                                       "required", "additionalProperties", "items", "anyOf",
                                       NULL};
    const json_t *sub, *props = json_object_get(s, "properties");
    const char *key;
    size_t i;

    if (!json_is_object(s) || !only_keys(s, keys))
        abort();
    json_array_foreach(json_object_get(s, "anyOf"), i, sub) check_strict(sub);
    if (is_object_type(json_object_get(s, "type"))) {
        const json_t *required = json_object_get(s, "required");
        if (!json_is_false(json_object_get(s, "additionalProperties")) ||
            json_array_size(required) != json_object_size(props))
            abort();
        json_array_foreach(required, i, sub) if (!json_is_string(sub) ||
                                                 json_object_get(props, json_string_value(sub)) ==
                                                     NULL) abort();
    }
    json_object_foreach((json_t *)props, key, sub) check_strict(sub);
    if (json_object_get(s, "items") != NULL)
        check_strict(json_object_get(s, "items"));
}

static void check_entry(const json_t *e, int base, int flags)
{
    static const char *const alternatives[] = {"oneOf", "anyOf", "allOf", NULL};
    const json_t *schema;
    const char *name;

    switch (base) {
    case JPT_DIALECT_OPENAI:
        name = json_string_value(json_object_get(json_object_get(e, "function"), "name"));
        schema = json_object_get(json_object_get(e, "function"), "parameters");
        break;
    case JPT_DIALECT_OPENAI_RESPONSES:
        name = json_string_value(json_object_get(e, "name"));
        schema = json_object_get(e, "parameters");
        break;
    case JPT_DIALECT_ANTHROPIC:
        name = json_string_value(json_object_get(e, "name"));
        schema = json_object_get(e, "input_schema");
        break;
    case JPT_DIALECT_GEMINI:
        name = json_string_value(json_object_get(e, "name"));
        schema = json_object_get(e, "parameters");
        break;
    default:
        name = json_string_value(json_object_get(e, "name"));
        schema = json_object_get(e, "inputSchema");
    }
    if (name == NULL || name[0] == '\0')
        abort();
    if (base == JPT_DIALECT_GEMINI) {
        /* No parameters is how Gemini lists a tool that takes none. */
        if (schema != NULL)
            check_gemini(schema);
        return;
    }
    if (!json_is_object(schema))
        abort();
    if (flags & JPT_DIALECT_STRICT) {
        check_strict(schema);
        return;
    }
    if (flags & JPT_DIALECT_ONEOF)
        return;
    const char *type = json_string_value(json_object_get(schema, "type"));
    if (type == NULL || strcmp(type, "object") != 0 || has_key(schema, alternatives))
        abort();
}

/* The tool list in `dialect`; NULL when that is not a dialect. */
static char *list(jpt_registry *r, int base, int flags)
{
    char *text = NULL;
    int rc = jpt_registry_tools_json(r, base | flags, &text);

    if (rc == JPT_ERR_INVALID) {
        if (text != NULL)
            abort();
        return NULL;
    }
    if (rc != JPT_OK || text == NULL)
        abort();
    json_t *doc = json_loads(text, 0, NULL);
    const json_t *entries = base == JPT_DIALECT_GEMINI ? json_object_get(doc, "functionDeclarations")
                            : base == JPT_DIALECT_MCP  ? json_object_get(doc, "tools")
                                                       : doc;
    const json_t *e;
    size_t i;
    if (!json_is_array(entries))
        abort();
    json_array_foreach(entries, i, e) check_entry(e, base, flags);
    json_decref(doc);
    return text;
}

static void lists(jpt_registry *r, char **out)
{
    for (size_t b = 0; b < NBASES; b++)
        for (size_t f = 0; f < NFLAGS; f++)
            out[b * NFLAGS + f] = list(r, bases[b], flag_sets[f]);
}

static void free_lists(char **texts)
{
    for (size_t i = 0; i < NLISTS; i++)
        jpt_free(texts[i]);
}

/* A failed load or add changes nothing. */
static void check_unchanged(jpt_registry *r, char **before)
{
    char *after[NLISTS];

    lists(r, after);
    for (size_t i = 0; i < NLISTS; i++)
        if ((before[i] == NULL) != (after[i] == NULL) ||
            (before[i] != NULL && strcmp(before[i], after[i]) != 0))
            abort();
    free_lists(after);
}

static void check_status(jpt_registry *r, int rc)
{
    if (rc != JPT_OK && rc != JPT_ERR_INVALID && rc != JPT_ERR_EXISTS &&
        rc != JPT_ERR_UNSUPPORTED)
        abort();
    if (rc != JPT_OK && jpt_registry_errmsg(r)[0] == '\0')
        abort();
}

static void quiet(int level, const char *msg, void *ud)
{
    (void)level;
    (void)msg;
    (void)ud;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const jpt_builtin_ops ops = {sizeof(ops), start, apply, NULL};
    jpt_registry_options opts = {.size = sizeof(opts), .containment = JPT_CONTAIN_SESSION};
    jpt_registry *r = NULL;
    char *before[NLISTS];

    if (size == 0)
        return 0;
    jpt_set_log(quiet, NULL, JPT_LOG_ERROR);
    unsigned mode = data[0];
    char *text = malloc(size);
    if (text == NULL)
        abort();
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    const char *second = strlen(text) < size - 1 ? text + strlen(text) + 1 : NULL;

    if (jpt_registry_new(&opts, &r) != JPT_OK)
        abort();
    jpt_files *mem = NULL;
    if (jpt_files_new_memory(&mem) != JPT_OK || jpt_registry_add_files(r, "mem", mem) != JPT_OK)
        abort();
    jpt_files_free(mem);

    unsigned flags = mode & 1u ? JPT_LOAD_REPLACE : 0;
    lists(r, before);
    int rc = jpt_registry_load_tools(r, text, flags);
    check_status(r, rc);
    if (rc != JPT_OK)
        check_unchanged(r, before);
    free_lists(before);
    lists(r, before);
    check_unchanged(r, before);
    free_lists(before);

    if (second != NULL) {
        lists(r, before);
        rc = mode & 2u ? jpt_registry_add_builtin(r, second, &ops, NULL)
                       : jpt_registry_load_tools(r, second, flags);
        check_status(r, rc);
        if (rc != JPT_OK)
            check_unchanged(r, before);
        free_lists(before);
    }
    jpt_registry_free(r);
    free(text);
    return 0;
}
