/* Glue between jansson and the library: its allocations through our hook,
 * serialisation into our buffers. */
#include <stdio.h>
#include <string.h>

#include "json.h"

/* Inside jpt__json_loadb on this thread, and whether an allocation failed
 * there. jansson's lexer drops a byte it has no memory to keep and goes
 * on; should a later allocation succeed, it reads the text it kept, with
 * the hole, and asserts or reads past its end. Once one has failed, every
 * allocation of the load fails, and jansson gives up at the next one. */
static _Thread_local bool loading JPT__TLS_HOT, load_failed JPT__TLS_HOT;

static void *json_alloc(size_t n)
{
    if (loading && load_failed)
        return NULL;
    void *p = jpt__malloc(n);
    load_failed |= loading && p == NULL;
    return p;
}

void jpt__json_use_library_allocator(void)
{
    json_set_alloc_funcs(json_alloc, jpt__free);
}

typedef struct dump_target {
    jpt__buf *b;
    bool failed;
} dump_target;

/* jansson ignores the outcome of writing an object's key and goes on with
 * its value: once one piece failed, every later one fails too, so that no
 * text with a piece missing comes out (issue 18). */
static int dump_to_buf(const char *p, size_t n, void *ud)
{
    dump_target *t = ud;

    if (!t->failed && jpt__buf_append(t->b, p, n) < 0)
        t->failed = true;
    return t->failed ? -1 : 0;
}

int jpt__json_dump_buf(const json_t *v, size_t flags, jpt__buf *b)
{
    dump_target t = {b, false};

    /* jansson reports only "failed"; with valid values built by us, the one
     * way to fail is running out of memory. */
    return json_dump_callback(v, dump_to_buf, &t, flags) < 0 || t.failed ? JPT_ERR_NOMEM
                                                                         : JPT_OK;
}

static bool contains_real(const json_t *v)
{
    const char *key;
    size_t i;
    json_t *member;

    switch (json_typeof(v)) {
    case JSON_REAL:
        return true;
    case JSON_OBJECT:
        json_object_foreach((json_t *)v, key, member) if (contains_real(member)) return true;
        return false;
    case JSON_ARRAY:
        json_array_foreach(v, i, member) if (contains_real(member)) return true;
        return false;
    default:
        return false;
    }
}

/* jansson writes reals with 17 significant digits, which turns a tool's 0.2
 * into 0.20000000000000001. Fifteen digits give the short form whenever it
 * reads back as the same numbers; otherwise the 17 digits stay. */
static size_t real_precision(const json_t *v, size_t flags, int *rc)
{
    jpt__buf b = JPT__BUF_INIT;
    json_t *back = NULL;
    json_error_t err;
    size_t shorter = flags | JSON_REAL_PRECISION(15);

    *rc = JPT_OK;
    if (!contains_real(v))
        return flags;
    if ((*rc = jpt__json_dump_buf(v, shorter, &b)) == JPT_OK)
        *rc = jpt__json_load(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &back,
                             &err);
    bool same = *rc == JPT_OK && json_equal(v, back);
    json_decref(back);
    jpt__buf_free(&b);
    if (*rc == JPT_ERR_INVALID)
        *rc = JPT_OK;
    return same ? shorter : flags;
}

int jpt__json_dump(const json_t *v, size_t flags, char **out)
{
    jpt__buf b = JPT__BUF_INIT;
    int rc;

    flags = real_precision(v, flags, &rc);
    if (rc == JPT_OK)
        rc = jpt__json_dump_buf(v, flags, &b);

    if (rc < 0) {
        jpt__buf_free(&b);
        return rc;
    }
    *out = jpt__buf_take(&b);
    return *out != NULL ? JPT_OK : JPT_ERR_NOMEM;
}

const char *jpt__json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

/* Issue 15 §1: no recursion whose depth a tool or a model controls.
 * jansson's parser takes a stack frame per level of nesting (up to its own
 * limit of 2048 levels, some 300 bytes each), and so do its writer, copy,
 * comparison and free, and the library's own walks of a value (schema
 * checks, the providers' schema forms, argument checks). Every JSON text
 * the library reads comes through jpt__json_load(), so text nested deeper
 * than JPT_JSON_MAX_DEPTH is refused here, before anything recurses: its
 * brackets are counted in one pass, without recursion, strings skipped. */
static bool too_deep(const char *p, size_t n, json_error_t *err)
{
    size_t depth = 0;
    bool in_string = false;

    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth <= JPT_JSON_MAX_DEPTH)
                continue;
            const char *line = p;
            for (const char *nl; (nl = memchr(line, '\n', (size_t)(p + i - line))) != NULL;)
                line = nl + 1, err->line++;
            err->line++;
            err->column = (int)(p + i - line) + 1;
            err->position = (int)i;
            snprintf(err->text, sizeof(err->text) - 1,
                     "nested deeper than %d levels (JPT_JSON_MAX_DEPTH)", JPT_JSON_MAX_DEPTH);
            return true;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return false;
}

json_t *jpt__json_loadb(const char *data, size_t len, size_t flags, json_error_t *err,
                        bool *nomem)
{
    unsigned long failures = jpt__alloc_failures();
    bool outer = loading;

    loading = true;
    if (!outer)
        load_failed = false;
    json_t *v = json_loadb(data, len, flags, err);
    loading = outer;
    /* A value read while an allocation failed is not the text's (issue
     * 18): see json_alloc. */
    *nomem = jpt__alloc_failures() != failures;
    if (v != NULL && *nomem) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

int jpt__json_load(const char *data, size_t len, size_t flags, json_t **out,
                   json_error_t *err)
{
    bool nomem;

    /* Some of jansson's failure paths leave `err` unset; json_error_code()
     * must not read garbage then. */
    memset(err, 0, sizeof(*err));
    *out = NULL;
    if (too_deep(data, len, err))
        return JPT_ERR_INVALID;
    *out = jpt__json_loadb(data, len, flags, err, &nomem);
    if (*out != NULL)
        return JPT_OK;
    if (nomem || json_error_code(err) == json_error_out_of_memory)
        return JPT_ERR_NOMEM;
    return JPT_ERR_INVALID;
}

const char *jpt__json_type_phrase(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}
