/* Answer checking against the JSON Schema subset questions use (RFD 058,
 * "Question schema"). The checker reports the first mismatch it finds, with
 * the JSON Pointer of the offending value. Unknown keywords are ignored, as
 * JSON Schema itself ignores them.
 *
 * Alternatives (anyOf, oneOf) are tried quietly, building no path and no
 * message, so that each alternative an answer fails before the one it
 * matches costs a check, never a message over the answer; a message is
 * built only for a keyword that fails, and only from its first
 * alternative. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "state/impl.h"

/* The checker recurses once per level of the schema, at most
 * JPT_JSON_MAX_DEPTH (jpt__json_load refuses deeper text): the keywords
 * that build a message in a buffer of their own are kept out of the
 * recursive frame, so a level costs little stack (test-depth checks it on
 * a 256 KiB stack, under sanitizers too). */
#define LEAF __attribute__((noinline))

typedef struct checker {
    jpt__buf path;   /* JSON Pointer of the value being checked */
    jpt__buf why;    /* the first mismatch */
    bool quiet;      /* only whether it matches: no path, no message */
    bool explaining; /* checking again what failed quietly, for its message */
    bool nomem;
} checker;

/* Records a mismatch at the current path; returns false (does not match). */
static bool mismatch(checker *c, const char *fmt, ...) JPT__PRINTF(2, 3);

static bool mismatch(checker *c, const char *fmt, ...)
{
    char detail[384];
    va_list ap;

    if (c->quiet)
        return false;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    jpt__buf_free(&c->why);
    if (jpt__buf_printf(&c->why, "at %s: %s",
                        c->path.len > 0 ? c->path.data : "the top level",
                        detail) < 0)
        c->nomem = true;
    return false;
}

/* Appends "/token" to the path (RFC 6901 escaping); returns the length to
 * restore afterwards. */
static size_t path_push(checker *c, const char *token)
{
    size_t mark = c->path.len;

    if (c->quiet)
        return mark;
    int rc = jpt__buf_putc(&c->path, '/');

    for (const char *p = token; *p != '\0' && rc == JPT_OK; p++)
        rc = *p == '~'   ? jpt__buf_puts(&c->path, "~0")
             : *p == '/' ? jpt__buf_puts(&c->path, "~1")
                         : jpt__buf_putc(&c->path, *p);
    if (rc < 0)
        c->nomem = true;
    return mark;
}

static size_t path_push_index(checker *c, size_t i)
{
    char token[32];

    if (c->quiet)
        return c->path.len;
    snprintf(token, sizeof(token), "%zu", i);
    return path_push(c, token);
}

static void path_pop(checker *c, size_t mark)
{
    c->path.len = mark;
    if (c->path.data != NULL)
        c->path.data[mark] = '\0';
}

static bool is_integral(const json_t *v)
{
    if (json_is_integer(v))
        return true;
    double d = json_real_value(v);
    return json_is_real(v) && isfinite(d) && floor(d) == d;
}

static bool type_matches(const char *type, const json_t *v)
{
    if (strcmp(type, "integer") == 0)
        return is_integral(v);
    if (strcmp(type, "number") == 0)
        return json_is_number(v);
    return strcmp(type, jpt__json_type_name(v)) == 0;
}

/* JSON Schema equality: numbers compare by value (1 equals 1.0), objects
 * and arrays member by member. */
static bool values_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b) &&
               (!json_is_integer(a) || !json_is_integer(b) ||
                json_integer_value(a) == json_integer_value(b));
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!values_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        const char *key;
        const json_t *va;
        if (json_object_size(a) != json_object_size(b))
            return false;
        json_object_foreach((json_t *)a, key, va) {
            const json_t *vb = json_object_get(b, key);
            if (vb == NULL || !values_equal(va, vb))
                return false;
        }
        return true;
    }
    return json_equal(a, b);
}

/* The first bytes of a value's JSON text. */
typedef struct excerpt {
    char *out;
    size_t len, room;
    bool cut;
} excerpt;

/* A json_dump_callback sink that stops the dump once `room` is full, so a
 * large value costs no more than its first bytes. */
static int take_excerpt(const char *p, size_t n, void *ud)
{
    excerpt *e = ud;
    size_t k = n < e->room - e->len ? n : e->room - e->len;

    memcpy(e->out + e->len, p, k);
    e->len += k;
    e->cut = k < n;
    return e->cut ? -1 : 0;
}

/* A short rendering of a value for messages: its JSON text, or the first
 * n - 4 bytes of it and "…". */
static void describe(const json_t *v, char *out, size_t n)
{
    excerpt e = {out, 0, n - 1, false};

    if (json_dump_callback(v, take_excerpt, &e, JSON_COMPACT | JSON_ENCODE_ANY) == 0)
        out[e.len] = '\0';
    else if (e.cut)
        snprintf(out + n - 4, 4, "…");
    else
        snprintf(out, n, "(a %s)", jpt__json_type_name(v));
}

static bool check(checker *c, const json_t *schema, const json_t *v);

LEAF static bool check_type(checker *c, const json_t *type, const json_t *v)
{
    char expected[128];

    if (json_is_string(type)) {
        if (type_matches(json_string_value(type), v))
            return true;
        return mismatch(c, "expected %s, got %s", json_string_value(type),
                        jpt__json_type_name(v));
    }
    if (!json_is_array(type))
        return true;
    size_t i;
    const json_t *t;
    json_array_foreach(type, i, t) if (json_is_string(t) &&
                                       type_matches(json_string_value(t), v)) return true;
    if (c->quiet)
        return false;
    describe(type, expected, sizeof(expected));
    return mismatch(c, "expected one of the types %s, got %s", expected,
                    jpt__json_type_name(v));
}

LEAF static bool check_enum_const(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *options = json_object_get(schema, "enum");
    const json_t *constant = json_object_get(schema, "const");
    char text[160], got[96];

    if (json_is_array(options)) {
        size_t i;
        const json_t *o;
        bool found = false;
        json_array_foreach(options, i, o) found = found || values_equal(o, v);
        if (!found && c->quiet)
            return false;
        if (!found) {
            describe(options, text, sizeof(text));
            describe(v, got, sizeof(got));
            return mismatch(c, "%s is not one of %s", got, text);
        }
    }
    if (constant != NULL && !values_equal(constant, v)) {
        if (c->quiet)
            return false;
        describe(constant, text, sizeof(text));
        describe(v, got, sizeof(got));
        return mismatch(c, "%s is not the constant %s", got, text);
    }
    return true;
}

LEAF static bool check_number(checker *c, const json_t *schema, const json_t *v)
{
    static const struct {
        const char *keyword;
        bool lower, exclusive;
    } bounds[] = {
        {"minimum", true, false},
        {"maximum", false, false},
        {"exclusiveMinimum", true, true},
        {"exclusiveMaximum", false, true},
    };
    double x = json_number_value(v);

    if (!json_is_number(v))
        return true;
    for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
        const json_t *b = json_object_get(schema, bounds[i].keyword);
        if (!json_is_number(b))
            continue;
        double limit = json_number_value(b);
        bool ok = bounds[i].lower ? (bounds[i].exclusive ? x > limit : x >= limit)
                                  : (bounds[i].exclusive ? x < limit : x <= limit);
        if (!ok)
            return mismatch(c, "%g is %s %g (%s)", x,
                            bounds[i].lower ? "below" : "above", limit,
                            bounds[i].keyword);
    }
    return true;
}

LEAF static bool check_string(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *min = json_object_get(schema, "minLength");
    const json_t *max = json_object_get(schema, "maxLength");

    if (!json_is_string(v))
        return true;
    /* JSON Schema counts characters, not bytes. */
    size_t n = jpt__utf8_length(json_string_value(v), json_string_length(v));
    if (json_is_integer(min) && (json_int_t)n < json_integer_value(min))
        return mismatch(c, "a string of %zu characters is shorter than "
                           "minLength %" JSON_INTEGER_FORMAT,
                        n, json_integer_value(min));
    if (json_is_integer(max) && (json_int_t)n > json_integer_value(max))
        return mismatch(c, "a string of %zu characters is longer than "
                           "maxLength %" JSON_INTEGER_FORMAT,
                        n, json_integer_value(max));
    return true;
}

static bool check_object(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *props = json_object_get(schema, "properties");
    const json_t *required = json_object_get(schema, "required");
    const json_t *additional = json_object_get(schema, "additionalProperties");
    const char *key;
    const json_t *member;

    if (!json_is_object(v))
        return true;
    if (json_is_array(required)) {
        size_t i;
        const json_t *r;
        json_array_foreach(required, i, r) if (json_is_string(r) &&
                                               json_object_get(v, json_string_value(r)) == NULL) return mismatch(c, "missing required property \"%s\"", json_string_value(r));
    }
    json_object_foreach((json_t *)v, key, member) {
        const json_t *sub = json_object_get(props, key);
        if (sub == NULL && additional == NULL)
            continue;
        size_t mark = path_push(c, key);
        bool ok;
        if (sub != NULL)
            ok = check(c, sub, member);
        else if (json_is_false(additional))
            ok = mismatch(c, "property \"%s\" is not allowed", key);
        else
            ok = check(c, additional, member);
        path_pop(c, mark);
        if (!ok)
            return false;
    }
    return true;
}

static bool check_array(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *items = json_object_get(schema, "items");
    const json_t *min = json_object_get(schema, "minItems");
    const json_t *max = json_object_get(schema, "maxItems");
    size_t i, n = json_array_size(v);
    const json_t *item;

    if (!json_is_array(v))
        return true;
    if (json_is_integer(min) && (json_int_t)n < json_integer_value(min))
        return mismatch(c, "an array of %zu items is shorter than minItems %" JSON_INTEGER_FORMAT,
                        n, json_integer_value(min));
    if (json_is_integer(max) && (json_int_t)n > json_integer_value(max))
        return mismatch(c, "an array of %zu items is longer than maxItems %" JSON_INTEGER_FORMAT,
                        n, json_integer_value(max));
    if (items == NULL)
        return true;
    json_array_foreach(v, i, item) {
        /* Draft 4-7 tuple form: one schema per position, extra items free. */
        const json_t *sub = json_is_array(items) ? json_array_get(items, i) : items;
        if (sub == NULL)
            break;
        size_t mark = path_push_index(c, i);
        bool ok = check(c, sub, item);
        path_pop(c, mark);
        if (!ok)
            return false;
    }
    return true;
}

/* Moves the message of the last mismatch to `to`. */
static void take_why(checker *c, jpt__buf *to)
{
    jpt__buf_free(to);
    *to = c->why;
    c->why = (jpt__buf)JPT__BUF_INIT;
}

/* Checks `v` quietly against alts[from], alts[from + 1], … until `enough`
 * of them match; returns how many did. */
static size_t count_matches(checker *c, const json_t *alts, size_t from, const json_t *v,
                            size_t enough)
{
    bool quiet = c->quiet;
    size_t matches = 0;

    c->quiet = true;
    for (size_t i = from; i < json_array_size(alts) && matches < enough; i++)
        if (check(c, json_array_get(alts, i), v))
            matches++;
    c->quiet = quiet;
    return matches;
}

/* anyOf / oneOf. anyOf stops at the first match; oneOf counts them all.
 * The reason given for a failure is the first alternative's, which is
 * usually the intended one. */
static bool check_alternatives(checker *c, const json_t *schema, const json_t *v,
                               const char *keyword, bool exactly_one)
{
    const json_t *alts = json_object_get(schema, keyword);
    size_t n = json_array_size(alts), matches = 0, from = 0;
    size_t enough = exactly_one ? SIZE_MAX : 1;
    jpt__buf first = JPT__BUF_INIT;

    if (!json_is_array(alts))
        return true;
    /* Explaining an enclosing failure, a message is wanted: the first
     * alternative's reason is built on the way rather than by checking it
     * twice, and dropped if another alternative matches. */
    if (c->explaining && !c->quiet && n > 0) {
        if (check(c, json_array_get(alts, 0), v))
            matches++;
        else
            take_why(c, &first);
        from = 1;
    }
    matches += count_matches(c, alts, from, v, enough - matches);
    bool ok = exactly_one ? matches == 1 : matches >= 1;
    if (!ok && !c->quiet && matches == 0 && from == 0 && n > 0) {
        c->explaining = true;
        check(c, json_array_get(alts, 0), v);
        c->explaining = false;
        take_why(c, &first);
    }
    if (!ok && matches == 0)
        mismatch(c, "matches none of the %zu %s alternatives (the first: %s)", n, keyword,
                 first.data != NULL ? first.data : "no reason");
    else if (!ok)
        mismatch(c, "matches %zu of the %s alternatives; exactly one must match",
                 matches, keyword);
    jpt__buf_free(&first);
    return ok;
}

static bool check(checker *c, const json_t *schema, const json_t *v)
{
    if (c->nomem)
        return false;
    if (json_is_boolean(schema))
        return json_is_true(schema) ? true
                                    : mismatch(c, "no value is allowed here");
    if (!json_is_object(schema))
        return true;
    const json_t *type = json_object_get(schema, "type");
    return (type == NULL || check_type(c, type, v)) &&
           check_enum_const(c, schema, v) && check_number(c, schema, v) &&
           check_string(c, schema, v) && check_object(c, schema, v) &&
           check_array(c, schema, v) &&
           check_alternatives(c, schema, v, "anyOf", false) &&
           check_alternatives(c, schema, v, "oneOf", true);
}

static int parse_input(const char *text, const char *what, json_t **out,
                       char **why)
{
    json_error_t jerr;
    /* JSON text may spell NUL characters (\u0000), in a question's schema
     * or default as anywhere else. */
    int rc = jpt__json_load(text, strlen(text), JSON_DECODE_ANY | JSON_ALLOW_NUL, out,
                            &jerr);
    jpt__buf msg = JPT__BUF_INIT;

    if (rc != JPT_ERR_INVALID || why == NULL)
        return rc;
    if (jpt__buf_printf(&msg, "the %s is not JSON: %s (line %d, column %d)",
                        what, jerr.text, jerr.line, jerr.column) < 0 ||
        (*why = jpt__buf_take(&msg)) == NULL) {
        jpt__buf_free(&msg);
        return JPT_ERR_NOMEM;
    }
    return rc;
}

int jpt__schema_check_json(const json_t *schema, const json_t *value, char **why)
{
    checker c = {JPT__BUF_INIT, JPT__BUF_INIT, why == NULL, false, false};
    int rc = JPT_OK;

    if (why != NULL)
        *why = NULL;
    bool ok = check(&c, schema, value);
    if (c.nomem)
        rc = JPT_ERR_NOMEM;
    else if (!ok) {
        rc = JPT_ERR_INVALID;
        if (why != NULL && (*why = jpt__buf_take(&c.why)) == NULL)
            rc = JPT_ERR_NOMEM;
    }
    jpt__buf_free(&c.path);
    jpt__buf_free(&c.why);
    return rc;
}

JPT_EXPORT int jpt_schema_check(const char *schema_json, const char *value_json,
                                char **why)
{
    json_t *schema = NULL, *value = NULL;
    int rc;

    if (why != NULL)
        *why = NULL;
    if (schema_json == NULL || value_json == NULL)
        return JPT_ERR_INVALID;
    if ((rc = parse_input(schema_json, "schema", &schema, why)) < 0 ||
        (rc = parse_input(value_json, "value", &value, why)) < 0) {
        json_decref(schema);
        return rc;
    }
    rc = jpt__schema_check_json(schema, value, why);
    json_decref(schema);
    json_decref(value);
    return rc;
}
