/* What a JSON Schema may say to the checker (schema.c): the keywords it
 * checks, those it ignores, those it refuses, and the values each takes
 * (state.h, jpt_schema_check). A schema is linted whole before a value is
 * checked against it, and when a tool or a question brings it, so that no
 * keyword is silently half-applied (issue 16 §3): every JSON Schema
 * draft 7 keyword is checked or is an annotation; a keyword of a later
 * draft that changes what a value may be is refused, naming it and where.
 * Also here: a local $ref's target, and a `pattern` compiled as checking
 * runs it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/schema.h"

/* Keywords of JSON Schema 2019-09 and 2020-12 that change what a value
 * may be, and that draft 7 (which the checker follows) does not have:
 * ignoring them would accept what the schema's author meant to refuse. */
static const char *const later_drafts[] = {
    "prefixItems",        "dependentRequired", "dependentSchemas", "unevaluatedItems",
    "unevaluatedProperties", "minContains",    "maxContains",      "$anchor",
    "$dynamicRef",        "$dynamicAnchor",    "$recursiveRef",    "$recursiveAnchor",
    "$vocabulary",
};

static bool listed(const char *key, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, list[i]) == 0)
            return true;
    return false;
}

#define LISTED(key, list) listed((key), (list), sizeof(list) / sizeof(*(list)))

/* ---- Patterns -------------------------------------------------------------------- */

static void *pcre_alloc(PCRE2_SIZE n, void *ud)
{
    (void)ud;
    return jpt__malloc(n);
}

static void pcre_free(void *p, void *ud)
{
    (void)ud;
    jpt__free(p);
}

int jpt__schema_regex_new(const json_t *pattern, jpt__schema_regex *out, char *why, size_t n)
{
    int errcode;
    PCRE2_SIZE erroff;

    memset(out, 0, sizeof(*out));
    if ((out->gctx = pcre2_general_context_create(pcre_alloc, pcre_free, NULL)) == NULL ||
        (out->cctx = pcre2_compile_context_create(out->gctx)) == NULL ||
        (out->mctx = pcre2_match_context_create(out->gctx)) == NULL) {
        jpt__schema_regex_free(out);
        return JPT_ERR_NOMEM;
    }
    /* ECMA 262's reading where PCRE2 can give it (draft 7 §4.3, "Regular
     * Expressions"): \uHHHH and \u{…} escapes, `$` only at the very end,
     * `.` matching neither CR nor LF. */
    pcre2_set_compile_extra_options(out->cctx, PCRE2_EXTRA_ALT_BSUX);
    pcre2_set_newline(out->cctx, PCRE2_NEWLINE_ANYCRLF);
    pcre2_set_match_limit(out->mctx, JPT__SCHEMA_MATCH_LIMIT);
    pcre2_set_depth_limit(out->mctx, JPT__SCHEMA_DEPTH_LIMIT);
    out->code = pcre2_compile((PCRE2_SPTR)json_string_value(pattern), json_string_length(pattern),
                              PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY, &errcode,
                              &erroff, out->cctx);
    if (out->code == NULL) {
        PCRE2_UCHAR text[160];
        pcre2_get_error_message(errcode, text, sizeof(text));
        jpt__schema_regex_free(out);
        if (errcode == PCRE2_ERROR_HEAPLIMIT || errcode == PCRE2_ERROR_NOMEMORY)
            return JPT_ERR_NOMEM;
        snprintf(why, n, "is not a regular expression: %s at offset %zu", (const char *)text,
                 (size_t)erroff);
        return JPT_ERR_INVALID;
    }
    if ((out->md = pcre2_match_data_create(1, out->gctx)) == NULL) {
        jpt__schema_regex_free(out);
        return JPT_ERR_NOMEM;
    }
    return JPT_OK;
}

int jpt__schema_regex_match(jpt__schema_regex *re, const char *s, size_t n)
{
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, 0, 0, re->md, re->mctx);

    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc == PCRE2_ERROR_NOMEMORY || rc == PCRE2_ERROR_HEAPLIMIT)
        return JPT_ERR_NOMEM;
    return JPT_ERR_LIMIT;
}

void jpt__schema_regex_free(jpt__schema_regex *re)
{
    pcre2_match_data_free(re->md);
    pcre2_code_free(re->code);
    pcre2_match_context_free(re->mctx);
    pcre2_compile_context_free(re->cctx);
    pcre2_general_context_free(re->gctx);
    memset(re, 0, sizeof(*re));
}

/* ---- $ref ---------------------------------------------------------------------------- */

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One reference token of a pointer, ref[0..n): URI fragment percent
 * decoding (RFC 3986 §2.1), then RFC 6901's ~1 and ~0. False when it is
 * malformed or longer than `room`. */
static bool pointer_token(const char *ref, size_t n, char *out, size_t room, size_t *len)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        char c = ref[i];
        if (c == '%') {
            if (i + 2 >= n)
                return false;
            int hi = hex_digit(ref[i + 1]), lo = hex_digit(ref[i + 2]);
            if (hi < 0 || lo < 0)
                return false;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (k + 1 >= room)
            return false;
        out[k++] = c;
    }
    size_t w = 0;
    for (size_t r = 0; r < k; r++) {
        if (out[r] == '~') {
            if (r + 1 == k || (out[r + 1] != '0' && out[r + 1] != '1'))
                return false;
            out[w++] = out[++r] == '1' ? '/' : '~';
        } else
            out[w++] = out[r];
    }
    out[w] = '\0';
    *len = w;
    return true;
}

const json_t *jpt__schema_ref_target(const json_t *root, const char *ref)
{
    const json_t *at = root;
    char token[512];

    if (ref == NULL || ref[0] != '#')
        return NULL;
    for (const char *p = ref + 1; *p != '\0';) {
        if (*p != '/')
            return NULL;
        const char *end = strchr(p + 1, '/');
        size_t n = end != NULL ? (size_t)(end - p - 1) : strlen(p + 1), len;
        if (!pointer_token(p + 1, n, token, sizeof(token), &len) || memchr(token, '\0', len))
            return NULL;
        if (json_is_object(at))
            at = json_object_get(at, token);
        else if (json_is_array(at)) {
            char *stop;
            unsigned long long i = strtoull(token, &stop, 10);
            if (len == 0 || *stop != '\0' || (token[0] == '0' && len > 1) || token[0] == '-')
                return NULL;
            at = json_array_get(at, (size_t)i);
        } else
            return NULL;
        if (at == NULL)
            return NULL;
        p += n + 1;
    }
    return at;
}

/* ---- Linting -------------------------------------------------------------------------
 * Everything not named below is ignored: draft 7's annotations ($schema,
 * $id at the root, $comment, title, description, default, examples,
 * readOnly, writeOnly, contentMediaType, contentEncoding, and `format`,
 * which draft 7 §7.2 lets an implementation treat as an annotation, as
 * every later draft does), and keywords JSON Schema does not define,
 * which it ignores. */

/* One step of the place being linted, on the C stack: linting allocates
 * nothing until it has something to say. */
typedef struct place {
    const char *key; /* a member name, or NULL for `index` */
    size_t index;
    bool raw;        /* `key` is a JSON Pointer already (a $ref's) */
    const struct place *up;
} place;

typedef struct linter {
    const json_t *root;
    const place *at;      /* where the schema being linted is */
    jpt__buf why;
    int rc;
    bool has_ref;         /* a $ref anywhere */
    char *nested_id;      /* where the first $id below the root is, or NULL */
    const json_t **done;  /* $ref targets linted already */
    size_t ndone, cap_done;
} linter;

/* The JSON Pointer of `p` (RFC 6901 escaping), "" for the root. */
static int put_place(jpt__buf *b, const place *p)
{
    int rc = p != NULL && p->up != NULL ? put_place(b, p->up) : JPT_OK;

    if (rc < 0 || p == NULL)
        return rc;
    if (p->raw)
        return jpt__buf_puts(b, p->key);
    if (p->key == NULL)
        return jpt__buf_printf(b, "/%zu", p->index);
    rc = jpt__buf_putc(b, '/');
    for (const char *c = p->key; *c != '\0' && rc == JPT_OK; c++)
        rc = *c == '~'   ? jpt__buf_puts(b, "~0")
             : *c == '/' ? jpt__buf_puts(b, "~1")
                         : jpt__buf_putc(b, *c);
    return rc;
}

static bool problem(linter *l, int rc, const char *fmt, ...) JPT__PRINTF(3, 4);

static bool problem(linter *l, int rc, const char *fmt, ...)
{
    char detail[384];
    jpt__buf where = JPT__BUF_INIT;
    va_list ap;

    if (l->rc != JPT_OK)
        return false;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    l->rc = rc;
    if (put_place(&where, l->at) < 0 ||
        jpt__buf_printf(&l->why, "at %s: %s", where.len > 0 ? where.data : "the top level",
                        detail) < 0)
        l->rc = JPT_ERR_NOMEM;
    jpt__buf_free(&where);
    return false;
}

static bool lint(linter *l, const json_t *s);

/* Lints `s`, found at `step` below the current place. */
static bool lint_below(linter *l, place *step, const json_t *s)
{
    step->up = l->at;
    l->at = step;
    bool ok = lint(l, s);
    l->at = step->up;
    return ok;
}

static bool lint_at(linter *l, const char *key, const json_t *s)
{
    place step = {.key = key};
    return lint_below(l, &step, s);
}

static bool lint_index(linter *l, const char *key, size_t i, const json_t *s)
{
    place outer = {.key = key, .up = l->at};
    place step = {.index = i};

    l->at = &outer;
    bool ok = lint_below(l, &step, s);
    l->at = outer.up;
    return ok;
}

/* A count (maxLength, minItems, …): a non-negative integer, which draft 6
 * and later let be written as a number with a zero fraction (2.0). */
bool jpt__schema_count(const json_t *v, uint64_t *out)
{
    double d = json_number_value(v);

    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return false;
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    if (!json_is_real(v) || !(d >= 0) || floor(d) != d)
        return false;
    *out = d >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)d;
    return true;
}

static bool lint_type(linter *l, const json_t *type)
{
    static const char *const names[] = {"null",   "boolean", "object", "array",
                                        "number", "string",  "integer"};
    const json_t *t;
    size_t i;

    if (json_is_string(type)) {
        if (!LISTED(json_string_value(type), names))
            return problem(l, JPT_ERR_INVALID, "'type' \"%.80s\" is not a JSON Schema type",
                           json_string_value(type));
        return true;
    }
    if (!json_is_array(type) || json_array_size(type) == 0)
        return problem(l, JPT_ERR_INVALID, "'type' must be a type name or an array of them");
    json_array_foreach(type, i, t)
        if (!json_is_string(t) || !LISTED(json_string_value(t), names))
            return problem(l, JPT_ERR_INVALID, "'type'[%zu] is not a JSON Schema type", i);
    return true;
}

/* A keyword whose value is a schema, an array of them, or an object of
 * them (by name). */
static bool lint_schema_array(linter *l, const char *key, const json_t *v, bool empty_ok)
{
    const json_t *s;
    size_t i;

    if (!json_is_array(v) || (!empty_ok && json_array_size(v) == 0))
        return problem(l, JPT_ERR_INVALID, "'%s' must be a%s array of schemas", key,
                       empty_ok ? "n" : " non-empty");
    json_array_foreach(v, i, s)
        if (!lint_index(l, key, i, s))
            return false;
    return true;
}

static bool lint_schema_object(linter *l, const char *key, const json_t *v, bool patterns)
{
    const char *name;
    const json_t *s;
    char why[256];

    if (!json_is_object(v))
        return problem(l, JPT_ERR_INVALID, "'%s' must be an object of schemas", key);
    place outer = {.key = key, .up = l->at};
    l->at = &outer;
    json_object_foreach((json_t *)v, name, s) {
        if (patterns) {
            jpt__schema_regex re;
            json_t *text = json_string(name);
            int rc = text != NULL ? jpt__schema_regex_new(text, &re, why, sizeof(why))
                                  : JPT_ERR_NOMEM;
            json_decref(text);
            if (rc == JPT_OK)
                jpt__schema_regex_free(&re);
            else {
                problem(l, rc, "the name \"%.80s\" %s", name, why);
                break;
            }
        }
        if (!lint_at(l, name, s))
            break;
    }
    l->at = outer.up;
    return l->rc == JPT_OK;
}

static bool lint_dependencies(linter *l, const json_t *v)
{
    const char *name;
    const json_t *d, *n;
    size_t i;

    if (!json_is_object(v))
        return problem(l, JPT_ERR_INVALID, "'dependencies' must be an object");
    place outer = {.key = "dependencies", .up = l->at};
    l->at = &outer;
    json_object_foreach((json_t *)v, name, d) {
        if (json_is_array(d)) {
            json_array_foreach(d, i, n)
                if (!json_is_string(n))
                    problem(l, JPT_ERR_INVALID,
                            "'%.80s' must be a schema or an array of property names", name);
        } else
            lint_at(l, name, d);
        if (l->rc != JPT_OK)
            break;
    }
    l->at = outer.up;
    return l->rc == JPT_OK;
}

/* A local $ref: "#" or "#/…" (a JSON Pointer in a URI fragment) whose
 * target is a schema, which is linted too. */
static bool lint_ref(linter *l, const json_t *v)
{
    const char *ref = json_string_value(v);

    l->has_ref = true;
    if (ref == NULL)
        return problem(l, JPT_ERR_INVALID, "'$ref' must be a string");
    if (ref[0] != '#' || (ref[1] != '\0' && ref[1] != '/'))
        return problem(l, JPT_ERR_UNSUPPORTED,
                       "'$ref' \"%.120s\" is not a JSON Pointer into this schema (\"#\" or "
                       "\"#/…\"); jptool follows no other reference",
                       ref);
    const json_t *target = jpt__schema_ref_target(l->root, ref);
    if (target == NULL)
        return problem(l, JPT_ERR_INVALID, "'$ref' \"%.120s\" points to nothing in this schema",
                       ref);
    if (!json_is_object(target) && !json_is_boolean(target))
        return problem(l, JPT_ERR_INVALID, "'$ref' \"%.120s\" points to %s, not a schema", ref,
                       jpt__json_type_phrase(target));
    for (size_t i = 0; i < l->ndone; i++)
        if (l->done[i] == target)
            return true;
    const json_t **grown = jpt__array_reserve(l->done, &l->cap_done, l->ndone + 1,
                                              sizeof(*grown), 8);
    if (grown == NULL)
        return problem(l, JPT_ERR_NOMEM, "out of memory");
    l->done = grown;
    l->done[l->ndone++] = target;
    /* Messages name the target's own place. */
    const place *saved = l->at;
    place there = {.key = ref + 1, .raw = true};
    l->at = NULL;
    bool ok = lint_below(l, &there, target);
    l->at = saved;
    return ok;
}

static bool lint_number(linter *l, const char *key, const json_t *v)
{
    if (json_is_boolean(v) && (strcmp(key, "exclusiveMinimum") == 0 ||
                               strcmp(key, "exclusiveMaximum") == 0))
        return problem(l, JPT_ERR_INVALID,
                       "'%s' is a boolean, JSON Schema draft 4's form; draft 7 takes the "
                       "bound itself (\"%s\": <the bound>)",
                       key, key);
    if (!json_is_number(v))
        return problem(l, JPT_ERR_INVALID, "'%s' must be a number", key);
    if (strcmp(key, "multipleOf") == 0 && !(json_number_value(v) > 0))
        return problem(l, JPT_ERR_INVALID, "'multipleOf' must be greater than 0");
    return true;
}

/* One keyword of a schema object. */
static bool lint_keyword(linter *l, const char *key, const json_t *v)
{
    static const char *const numbers[] = {"multipleOf", "maximum", "exclusiveMaximum",
                                          "minimum", "exclusiveMinimum"};
    static const char *const counts[] = {"maxLength", "minLength", "maxItems",
                                         "minItems", "maxProperties", "minProperties"};
    static const char *const single[] = {"additionalItems", "contains", "additionalProperties",
                                         "propertyNames", "not", "if", "then", "else"};
    uint64_t n;
    char why[256];

    if (LISTED(key, later_drafts))
        return problem(l, JPT_ERR_UNSUPPORTED,
                       "'%s' is a keyword of JSON Schema 2019-09 or later, which jptool does "
                       "not check (it checks draft 7's keywords)",
                       key);
    if (strcmp(key, "type") == 0)
        return lint_type(l, v);
    if (LISTED(key, numbers))
        return lint_number(l, key, v);
    if (LISTED(key, counts)) {
        if (!jpt__schema_count(v, &n))
            return problem(l, JPT_ERR_INVALID, "'%s' must be a non-negative integer", key);
        return true;
    }
    if (LISTED(key, single))
        return lint_at(l, key, v);
    if (strcmp(key, "items") == 0)
        return json_is_array(v) ? lint_schema_array(l, key, v, true) : lint_at(l, key, v);
    if (strcmp(key, "allOf") == 0 || strcmp(key, "anyOf") == 0 || strcmp(key, "oneOf") == 0)
        return lint_schema_array(l, key, v, false);
    if (strcmp(key, "properties") == 0 || strcmp(key, "definitions") == 0 ||
        strcmp(key, "$defs") == 0)
        return lint_schema_object(l, key, v, false);
    if (strcmp(key, "patternProperties") == 0)
        return lint_schema_object(l, key, v, true);
    if (strcmp(key, "dependencies") == 0)
        return lint_dependencies(l, v);
    if (strcmp(key, "$ref") == 0)
        return lint_ref(l, v);
    if (strcmp(key, "enum") == 0 && !json_is_array(v))
        return problem(l, JPT_ERR_INVALID, "'enum' must be an array");
    if (strcmp(key, "uniqueItems") == 0 && !json_is_boolean(v))
        return problem(l, JPT_ERR_INVALID, "'uniqueItems' must be a boolean");
    if (strcmp(key, "required") == 0) {
        const json_t *name;
        size_t i;
        if (!json_is_array(v))
            return problem(l, JPT_ERR_INVALID, "'required' must be an array of property names");
        json_array_foreach(v, i, name)
            if (!json_is_string(name))
                return problem(l, JPT_ERR_INVALID, "'required'[%zu] is not a string", i);
        return true;
    }
    if (strcmp(key, "pattern") == 0) {
        jpt__schema_regex re;
        int rc = json_is_string(v) ? jpt__schema_regex_new(v, &re, why, sizeof(why))
                                   : (snprintf(why, sizeof(why), "must be a string"),
                                      JPT_ERR_INVALID);
        if (rc == JPT_OK)
            jpt__schema_regex_free(&re);
        return rc == JPT_OK ? true : problem(l, rc, "'pattern' %s", why);
    }
    /* const, the annotations, and keywords JSON Schema does not define
     * (which it ignores, and so does the checker). */
    return true;
}

static bool lint(linter *l, const json_t *s)
{
    const char *key;
    const json_t *v;

    if (json_is_boolean(s))
        return true;
    if (!json_is_object(s))
        return problem(l, JPT_ERR_INVALID, "%s is not a schema (an object or a boolean)",
                       jpt__json_type_phrase(s));
    if (s != l->root && l->nested_id == NULL && json_object_get(s, "$id") != NULL) {
        jpt__buf where = JPT__BUF_INIT;
        if (put_place(&where, l->at) < 0 || (l->nested_id = jpt__buf_take(&where)) == NULL) {
            jpt__buf_free(&where);
            return problem(l, JPT_ERR_NOMEM, "out of memory");
        }
    }
    json_object_foreach((json_t *)s, key, v)
        if (!lint_keyword(l, key, v))
            return false;
    return true;
}

int jpt__schema_lint(const json_t *schema, char **why)
{
    linter l = {.root = schema, .why = JPT__BUF_INIT};

    *why = NULL;
    lint(&l, schema);
    /* Draft 7 §8.2: an $id below the root changes the base its $refs
     * resolve against, which the checker does not follow. */
    if (l.rc == JPT_OK && l.has_ref && l.nested_id != NULL) {
        place there = {.key = l.nested_id, .raw = true};
        l.at = &there;
        problem(&l, JPT_ERR_UNSUPPORTED,
                "an '$id' inside a schema that uses $ref changes what the references "
                "resolve against, which jptool does not follow");
    }
    if (l.rc != JPT_OK && l.rc != JPT_ERR_NOMEM && (*why = jpt__buf_take(&l.why)) == NULL)
        l.rc = JPT_ERR_NOMEM;
    jpt__buf_free(&l.why);
    jpt__free(l.nested_id);
    jpt__free(l.done);
    return l.rc;
}
