/* Glue between jansson and the library: its allocations through our hook,
 * serialisation into our buffers. */
#include <string.h>

#include "common.h"

static void *json_alloc(size_t n)
{
    return jpt__malloc(n);
}

void jpt__json_use_library_allocator(void)
{
    json_set_alloc_funcs(json_alloc, jpt__free);
}

static int dump_to_buf(const char *p, size_t n, void *ud)
{
    return jpt__buf_append(ud, p, n) < 0 ? -1 : 0;
}

int jpt__json_dump_buf(const json_t *v, size_t flags, jpt__buf *b)
{
    /* jansson reports only "failed"; with valid values built by us, the one
     * way to fail is running out of memory. */
    return json_dump_callback(v, dump_to_buf, b, flags) < 0 ? JPT_ERR_NOMEM
                                                            : JPT_OK;
}

int jpt__json_dump(const json_t *v, size_t flags, char **out)
{
    jpt__buf b = JPT__BUF_INIT;
    int rc = jpt__json_dump_buf(v, flags, &b);

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

int jpt__json_load(const char *data, size_t len, size_t flags, json_t **out,
                   json_error_t *err)
{
    unsigned long failures = jpt__alloc_failures();

    /* Some of jansson's failure paths leave `err` unset; json_error_code()
     * must not read garbage then. */
    memset(err, 0, sizeof(*err));
    *out = json_loadb(data, len, flags, err);
    if (*out != NULL)
        return JPT_OK;
    if (json_error_code(err) == json_error_out_of_memory ||
        jpt__alloc_failures() != failures)
        return JPT_ERR_NOMEM;
    return JPT_ERR_INVALID;
}
