/* The common room's jansson glue (json.c): for the rooms that speak JSON
 * (state, registry), kept out of common.h so that the loop and process
 * rooms do not pull in jansson. Never installed. */
#ifndef JPT_LIB_COMMON_JSON_H
#define JPT_LIB_COMMON_JSON_H

#include <jansson.h>

#include "common/common.h"

/* Routes jansson's allocations through the library allocator. */
void jpt__json_use_library_allocator(void);
/* Serialises `v` into a new string from the library allocator. `flags` are
 * jansson's json_dumps flags. */
int jpt__json_dump(const json_t *v, size_t flags, char **out);
/* Appends the serialisation of `v` to `b`. */
int jpt__json_dump_buf(const json_t *v, size_t flags, jpt__buf *b);
/* json_loadb() that tells running out of memory (JPT_ERR_NOMEM) from
 * malformed text (JPT_ERR_INVALID, `err` says where). jansson's own
 * allocations are only seen when they go through the library allocator
 * (jpt_set_allocator); with the C library's malloc, an allocation failure
 * inside jansson may look like malformed text. */
int jpt__json_load(const char *data, size_t len, size_t flags, json_t **out,
                   json_error_t *err);
/* json_loadb() that gives no value when an allocation failed while it ran
 * (`*nomem` then true): jansson's lexer keeps going without a byte it had
 * no memory for. `err` may be NULL. */
json_t *jpt__json_loadb(const char *data, size_t len, size_t flags, json_error_t *err,
                        bool *nomem);
/* The JSON type name a schema uses: "object", "array", "string", "integer",
 * "number", "boolean" or "null". */
const char *jpt__json_type_name(const json_t *v);
/* The type as a message says it: "an integer", "a string", "null". */
const char *jpt__json_type_phrase(const json_t *v);

#endif /* JPT_LIB_COMMON_JSON_H */
