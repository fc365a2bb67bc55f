/* Checking a value against a JSON Schema (state.h, jpt_schema_check):
 * draft 7's validation keywords, local $refs, the boolean schemas. The
 * schema is linted first (schema-keywords.c), so each keyword below reads
 * a value of the kind it takes. The checker reports the first mismatch it
 * finds, with the JSON Pointer of the offending value.
 *
 * Alternatives (anyOf, oneOf, not, if, contains, dependencies' schemas)
 * are tried quietly, building no path and no message, so that each
 * alternative an answer fails before the one it matches costs a check,
 * never a message over the answer; a message is built only for a keyword
 * that fails, and only from its first alternative.
 *
 * What the schema makes the checker do is bounded: nesting (a $ref that
 * comes back to the same value without going deeper is refused at once),
 * the number of steps, and each pattern's match. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "state/schema.h"

/* Subschemas applied inside one another, and subschema applications in
 * all, for one check. */
#define MAX_DEPTH 512
#define MAX_STEPS (1u << 24)

/* A $ref being followed, for finding one that comes back to itself. */
typedef struct ref_frame {
    const json_t *target, *value;
    const struct ref_frame *up;
} ref_frame;

/* A compiled pattern, kept for the check. */
typedef struct regex_slot {
    char *source; /* the pattern's text */
    size_t len;
    jpt__schema_regex re;
} regex_slot;

/* The checker recurses once per level of the schema, at most
 * JPT_JSON_MAX_DEPTH (jpt__json_load refuses deeper text): the keywords
 * that build a message in a buffer of their own are kept out of the
 * recursive frame, so a level costs little stack (test-depth checks it on
 * a 256 KiB stack, under sanitizers too). */
#define LEAF __attribute__((noinline))

typedef struct checker {
    const json_t *root; /* what a $ref's pointer starts from */
    jpt__buf path;      /* JSON Pointer of the value being checked */
    jpt__buf why;       /* the first mismatch */
    bool quiet;         /* only whether it matches: no path, no message */
    bool explaining;    /* checking again what failed quietly, for its message */
    bool nomem;
    int stop;           /* a status that ends the check (JPT_ERR_LIMIT) */
    char *stop_why;
    unsigned depth;
    uint32_t steps;
    const ref_frame *refs;
    regex_slot *regexes;
    size_t nregexes, cap_regexes;
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
    const json_t *step = json_object_get(schema, "multipleOf");
    if (step == NULL)
        return true;
    /* Integers exactly; otherwise as ECMA 262's numbers do it (ajv):
     * whether the quotient is a finite integer. */
    bool ok;
    if (json_is_integer(v) && json_is_integer(step))
        ok = json_integer_value(v) % json_integer_value(step) == 0;
    else {
        double q = x / json_number_value(step);
        ok = isfinite(q) && floor(q) == q;
    }
    return ok ? true : mismatch(c, "%g is not a multiple of %g (multipleOf)", x,
                                json_number_value(step));
}

static jpt__schema_regex *regex_for(checker *c, const json_t *pattern);

/* Whether string s[0..n) matches `pattern` (ECMA 262: anywhere in it); a
 * failure to match at all ends the check. */
static bool pattern_matches(checker *c, const json_t *pattern, const char *s, size_t n)
{
    jpt__schema_regex *re = regex_for(c, pattern);
    int rc = re != NULL ? jpt__schema_regex_match(re, s, n) : JPT_ERR_NOMEM;

    if (rc == JPT_ERR_NOMEM)
        c->nomem = true;
    else if (rc == JPT_ERR_LIMIT && c->stop == JPT_OK) {
        jpt__buf m = JPT__BUF_INIT;
        c->stop = JPT_ERR_LIMIT;
        if (jpt__buf_printf(&m, "the pattern %.120s needs more than the match limit "
                                "(%u steps) on a string of %zu bytes",
                            json_string_value(pattern), JPT__SCHEMA_MATCH_LIMIT, n) < 0)
            c->nomem = true;
        c->stop_why = jpt__buf_take(&m);
    }
    return rc == 1;
}

LEAF static bool check_string(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *pattern = json_object_get(schema, "pattern");
    uint64_t min = 0, max = UINT64_MAX;
    char got[96];

    if (!json_is_string(v))
        return true;
    jpt__schema_count(json_object_get(schema, "minLength"), &min);
    jpt__schema_count(json_object_get(schema, "maxLength"), &max);
    /* JSON Schema counts characters, not bytes. */
    size_t n = jpt__utf8_length(json_string_value(v), json_string_length(v));
    if (n < min)
        return mismatch(c, "a string of %zu characters is shorter than minLength %" PRIu64, n,
                        min);
    if (n > max)
        return mismatch(c, "a string of %zu characters is longer than maxLength %" PRIu64, n,
                        max);
    if (pattern != NULL &&
        !pattern_matches(c, pattern, json_string_value(v), json_string_length(v))) {
        if (c->quiet)
            return false;
        describe(v, got, sizeof(got));
        return mismatch(c, "%s does not match the pattern %.160s", got,
                        json_string_value(pattern));
    }
    return true;
}

/* Whether member `key` matches one of the patternProperties names; each
 * it matches checks the member. */
static bool check_pattern_members(checker *c, const json_t *patterns, const char *key,
                                  const json_t *member, bool *matched)
{
    const char *pattern;
    const json_t *sub;

    *matched = false;
    json_object_foreach((json_t *)patterns, pattern, sub) {
        json_t *text = json_string(pattern);
        bool hit = text != NULL ? pattern_matches(c, text, key, strlen(key)) : false;
        json_decref(text);
        if (text == NULL)
            c->nomem = true;
        if (c->nomem || c->stop != JPT_OK)
            return false;
        if (!hit)
            continue;
        *matched = true;
        size_t mark = path_push(c, key);
        bool ok = check(c, sub, member);
        path_pop(c, mark);
        if (!ok)
            return false;
    }
    return true;
}

/* The members: properties, patternProperties, and additionalProperties
 * for the members neither names (draft 7 §6.5.6). */
static bool check_members(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *props = json_object_get(schema, "properties");
    const json_t *patterns = json_object_get(schema, "patternProperties");
    const json_t *additional = json_object_get(schema, "additionalProperties");
    const char *key;
    const json_t *member;

    json_object_foreach((json_t *)v, key, member) {
        const json_t *sub = json_object_get(props, key);
        bool matched = false;
        if (patterns != NULL && !check_pattern_members(c, patterns, key, member, &matched))
            return false;
        if (sub == NULL && (matched || additional == NULL))
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

/* dependencies: a member's presence requires other members (an array of
 * names) or the whole object to match a schema. */
static bool check_dependencies(checker *c, const json_t *deps, const json_t *v)
{
    const char *key;
    const json_t *dep, *name;
    size_t i;

    json_object_foreach((json_t *)deps, key, dep) {
        if (json_object_get(v, key) == NULL)
            continue;
        if (!json_is_array(dep)) {
            if (!check(c, dep, v))
                return false;
            continue;
        }
        json_array_foreach(dep, i, name)
            if (json_object_get(v, json_string_value(name)) == NULL)
                return mismatch(c, "property \"%s\" requires property \"%s\" (dependencies)",
                                key, json_string_value(name));
    }
    return true;
}

/* propertyNames: every member's name, as a string, matches the schema. */
static bool check_names(checker *c, const json_t *names, const json_t *v)
{
    const char *key;
    const json_t *member;
    bool quiet = c->quiet;

    json_object_foreach((json_t *)v, key, member) {
        json_t *name = json_string(key);
        if (name == NULL) {
            c->nomem = true;
            return false;
        }
        c->quiet = true;
        bool ok = check(c, names, name);
        c->quiet = quiet;
        json_decref(name);
        if (!ok)
            return mismatch(c, "the property name \"%s\" does not match propertyNames", key);
    }
    return true;
}

static bool check_object(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *required = json_object_get(schema, "required");
    const json_t *deps = json_object_get(schema, "dependencies");
    const json_t *names = json_object_get(schema, "propertyNames");
    uint64_t min = 0, max = UINT64_MAX;
    size_t i, n = json_object_size(v);
    const json_t *r;

    if (!json_is_object(v))
        return true;
    jpt__schema_count(json_object_get(schema, "minProperties"), &min);
    jpt__schema_count(json_object_get(schema, "maxProperties"), &max);
    if (n < min)
        return mismatch(c, "an object of %zu properties has fewer than minProperties %" PRIu64,
                        n, min);
    if (n > max)
        return mismatch(c, "an object of %zu properties has more than maxProperties %" PRIu64,
                        n, max);
    json_array_foreach(required, i, r)
        if (json_object_get(v, json_string_value(r)) == NULL)
            return mismatch(c, "missing required property \"%s\"", json_string_value(r));
    return check_members(c, schema, v) && (deps == NULL || check_dependencies(c, deps, v)) &&
           (names == NULL || check_names(c, names, v));
}

/* A hash under which values_equal() values are equal: numbers by value,
 * objects whatever the order of their members. */
static uint64_t value_hash(const json_t *v)
{
    uint64_t h = 1469598103934665603u;
    const char *key;
    const json_t *member;
    size_t i;

    switch (json_typeof(v)) {
    case JSON_STRING:
        for (i = 0; i < json_string_length(v); i++)
            h = (h ^ (unsigned char)json_string_value(v)[i]) * 1099511628211u;
        return h;
    case JSON_INTEGER:
    case JSON_REAL: {
        double d = json_number_value(v);
        uint64_t bits;
        if (d == 0)
            d = 0; /* -0 is 0 */
        memcpy(&bits, &d, sizeof(bits));
        return bits * 0x9E3779B97F4A7C15u;
    }
    case JSON_ARRAY:
        json_array_foreach(v, i, member)
            h = (h ^ value_hash(member)) * 1099511628211u;
        return h + 7;
    case JSON_OBJECT: {
        uint64_t sum = 11;
        json_object_foreach((json_t *)v, key, member) {
            uint64_t k = 1469598103934665603u;
            for (const char *p = key; *p != '\0'; p++)
                k = (k ^ (unsigned char)*p) * 1099511628211u;
            sum += (k ^ value_hash(member)) * 0x9E3779B97F4A7C15u;
        }
        return sum;
    }
    default:
        return (uint64_t)json_typeof(v) * 0x9E3779B97F4A7C15u;
    }
}

typedef struct hashed {
    uint64_t hash;
    size_t index;
} hashed;

static int by_hash(const void *a, const void *b)
{
    const hashed *x = a, *y = b;

    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* uniqueItems: sorted by hash, so that only items of equal hash are
 * compared (n log n, where comparing every pair would be n²). */
static bool check_unique(checker *c, const json_t *v)
{
    size_t n = json_array_size(v), first = 0, second = 0;
    bool found = false;
    hashed *h = n > 1 ? jpt__calloc(n, sizeof(*h)) : NULL;

    if (n < 2)
        return true;
    if (h == NULL) {
        c->nomem = true;
        return false;
    }
    for (size_t i = 0; i < n; i++)
        h[i] = (hashed){value_hash(json_array_get(v, i)), i};
    qsort(h, n, sizeof(*h), by_hash);
    for (size_t i = 0; i + 1 < n && !found; i++)
        for (size_t j = i + 1; j < n && h[j].hash == h[i].hash && !found; j++)
            if (values_equal(json_array_get(v, h[i].index), json_array_get(v, h[j].index))) {
                found = true;
                first = h[i].index;
                second = h[j].index;
            }
    jpt__free(h);
    if (!found)
        return true;
    return mismatch(c, "items %zu and %zu are equal (uniqueItems)", first, second);
}

/* contains: at least one item matches. */
static bool check_contains(checker *c, const json_t *schema, const json_t *v)
{
    bool quiet = c->quiet, any = false;
    size_t i;
    const json_t *item;

    c->quiet = true;
    json_array_foreach(v, i, item) {
        if ((any = check(c, schema, item)) || c->nomem || c->stop != JPT_OK)
            break;
    }
    c->quiet = quiet;
    return any ? true : mismatch(c, "none of the %zu items matches 'contains'",
                                 json_array_size(v));
}

static bool check_array(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *items = json_object_get(schema, "items");
    const json_t *more = json_object_get(schema, "additionalItems");
    const json_t *contains = json_object_get(schema, "contains");
    uint64_t min = 0, max = UINT64_MAX;
    size_t i, n = json_array_size(v);
    const json_t *item;

    if (!json_is_array(v))
        return true;
    jpt__schema_count(json_object_get(schema, "minItems"), &min);
    jpt__schema_count(json_object_get(schema, "maxItems"), &max);
    if (n < min)
        return mismatch(c, "an array of %zu items is shorter than minItems %" PRIu64, n, min);
    if (n > max)
        return mismatch(c, "an array of %zu items is longer than maxItems %" PRIu64, n, max);
    if (json_is_true(json_object_get(schema, "uniqueItems")) && !check_unique(c, v))
        return false;
    if (contains != NULL && !check_contains(c, contains, v))
        return false;
    if (items == NULL)
        return true;
    json_array_foreach(v, i, item) {
        /* Draft 7's tuple form: one schema per position, the rest
         * additionalItems' (any value without it). */
        const json_t *sub = json_is_array(items) ? json_array_get(items, i) : items;
        if (sub == NULL && (more == NULL || json_is_true(more)))
            break;
        if (sub == NULL && json_is_false(more))
            return mismatch(c, "an array of %zu items has more than the %zu the schema lists "
                               "(additionalItems)",
                            n, json_array_size(items));
        size_t mark = path_push_index(c, i);
        bool ok = check(c, sub != NULL ? sub : more, item);
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

/* Stops the check with `status`; the message replaces any mismatch's. */
static bool stop(checker *c, int status, const char *fmt, ...) JPT__PRINTF(3, 4);

static bool stop(checker *c, int status, const char *fmt, ...)
{
    jpt__buf m = JPT__BUF_INIT;
    va_list ap;

    if (c->stop != JPT_OK)
        return false;
    c->stop = status;
    va_start(ap, fmt);
    int rc = jpt__buf_vprintf(&m, fmt, ap);
    va_end(ap);
    if (rc < 0)
        c->nomem = true;
    c->stop_why = jpt__buf_take(&m);
    return false;
}

/* $ref: its target applies (a $ref's siblings apply too, as in JSON
 * Schema 2019-09 and later, and ajv; draft 7 ignores them). A target that
 * comes back to the same value is a loop the value cannot end. */
static bool check_ref(checker *c, const json_t *ref, const json_t *v)
{
    const json_t *target = jpt__schema_ref_target(c->root, json_string_value(ref));

    for (const ref_frame *f = c->refs; f != NULL; f = f->up)
        if (f->target == target && f->value == v)
            return stop(c, JPT_ERR_INVALID,
                        "the schema's $ref \"%.120s\" comes back to the same value without "
                        "going deeper into it, so no value can end the check",
                        json_string_value(ref));
    ref_frame frame = {target, v, c->refs};
    c->refs = &frame;
    bool ok = check(c, target, v);
    c->refs = frame.up;
    return ok;
}

/* not: the value must fail the schema. */
static bool check_not(checker *c, const json_t *schema, const json_t *v)
{
    bool quiet = c->quiet;

    c->quiet = true;
    bool matched = check(c, schema, v);
    c->quiet = quiet;
    if (c->nomem || c->stop != JPT_OK)
        return false;
    return matched ? mismatch(c, "matches the schema of 'not'") : true;
}

/* if / then / else: the value is checked against `then` when it matches
 * `if`, against `else` when it does not. */
static bool check_conditional(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *cond = json_object_get(schema, "if");
    const json_t *then = json_object_get(schema, "then");
    const json_t *otherwise = json_object_get(schema, "else");
    bool quiet = c->quiet;

    if (cond == NULL || (then == NULL && otherwise == NULL))
        return true;
    c->quiet = true;
    bool holds = check(c, cond, v);
    c->quiet = quiet;
    if (c->nomem || c->stop != JPT_OK)
        return false;
    const json_t *branch = holds ? then : otherwise;
    return branch == NULL || check(c, branch, v);
}

static bool check_all_of(checker *c, const json_t *all, const json_t *v)
{
    size_t i;
    const json_t *s;

    json_array_foreach(all, i, s)
        if (!check(c, s, v))
            return false;
    return true;
}

static bool check_keywords(checker *c, const json_t *schema, const json_t *v)
{
    const json_t *type = json_object_get(schema, "type");
    const json_t *ref = json_object_get(schema, "$ref");
    const json_t *all = json_object_get(schema, "allOf");
    const json_t *not = json_object_get(schema, "not");

    return (ref == NULL || check_ref(c, ref, v)) && (type == NULL || check_type(c, type, v)) &&
           check_enum_const(c, schema, v) && check_number(c, schema, v) &&
           check_string(c, schema, v) && check_object(c, schema, v) &&
           check_array(c, schema, v) && (all == NULL || check_all_of(c, all, v)) &&
           check_alternatives(c, schema, v, "anyOf", false) &&
           check_alternatives(c, schema, v, "oneOf", true) &&
           (not == NULL || check_not(c, not, v)) && check_conditional(c, schema, v);
}

static bool check(checker *c, const json_t *schema, const json_t *v)
{
    if (c->nomem || c->stop != JPT_OK)
        return false;
    if (json_is_boolean(schema))
        return json_is_true(schema) ? true
                                    : mismatch(c, "no value is allowed here");
    if (++c->steps > MAX_STEPS)
        return stop(c, JPT_ERR_LIMIT, "checking the value takes more than %u steps of the "
                                      "schema",
                    MAX_STEPS);
    if (c->depth == MAX_DEPTH)
        return stop(c, JPT_ERR_LIMIT, "the schema nests more than %d subschemas deep on the "
                                      "value",
                    MAX_DEPTH);
    c->depth++;
    bool ok = check_keywords(c, schema, v);
    c->depth--;
    return ok;
}

/* The compiled `pattern`, compiled at its first use in this check. */
static jpt__schema_regex *regex_for(checker *c, const json_t *pattern)
{
    const char *text = json_string_value(pattern);
    size_t len = json_string_length(pattern);
    char why[256];

    for (size_t i = 0; i < c->nregexes; i++)
        if (c->regexes[i].len == len && memcmp(c->regexes[i].source, text, len) == 0)
            return &c->regexes[i].re;
    regex_slot *grown = jpt__array_reserve(c->regexes, &c->cap_regexes, c->nregexes + 1,
                                           sizeof(*grown), 4);
    if (grown == NULL)
        return NULL;
    c->regexes = grown;
    regex_slot *slot = &c->regexes[c->nregexes];
    if ((slot->source = jpt__memdup0(text, len)) == NULL)
        return NULL;
    /* Linted: it compiles, or memory failed. */
    if (jpt__schema_regex_new(pattern, &slot->re, why, sizeof(why)) < 0) {
        jpt__free(slot->source);
        return NULL;
    }
    slot->len = len;
    c->nregexes++;
    return &slot->re;
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

/* "the schema …" for a lint finding. */
static int schema_problem(int rc, const char *found, char **why)
{
    jpt__buf m = JPT__BUF_INIT;

    if (why == NULL)
        return rc;
    if (jpt__buf_printf(&m, "the schema %s: %s",
                        rc == JPT_ERR_UNSUPPORTED ? "uses what jptool does not check"
                                                  : "is malformed",
                        found) < 0 ||
        (*why = jpt__buf_take(&m)) == NULL) {
        jpt__buf_free(&m);
        return JPT_ERR_NOMEM;
    }
    return rc;
}

int jpt__schema_check_json(const json_t *schema, const json_t *value, char **why)
{
    checker c = {.root = schema, .path = JPT__BUF_INIT, .why = JPT__BUF_INIT,
                 .quiet = why == NULL};
    char *found = NULL;
    int rc;

    if (why != NULL)
        *why = NULL;
    if ((rc = jpt__schema_lint(schema, &found)) < 0) {
        if (rc != JPT_ERR_NOMEM)
            rc = schema_problem(rc, found, why);
        jpt__free(found);
        return rc;
    }
    bool ok = check(&c, schema, value);
    rc = JPT_OK;
    if (c.nomem)
        rc = JPT_ERR_NOMEM;
    else if (c.stop != JPT_OK) {
        rc = c.stop;
        if (why != NULL) {
            *why = c.stop_why;
            c.stop_why = NULL;
        }
    } else if (!ok) {
        rc = JPT_ERR_INVALID;
        if (why != NULL && (*why = jpt__buf_take(&c.why)) == NULL)
            rc = JPT_ERR_NOMEM;
    }
    for (size_t i = 0; i < c.nregexes; i++) {
        jpt__schema_regex_free(&c.regexes[i].re);
        jpt__free(c.regexes[i].source);
    }
    jpt__free(c.regexes);
    jpt__free(c.stop_why);
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
