/* The schema checker's parts (schema.c checks values, schema-keywords.c
 * says what a schema may say): the state room's own. */
#ifndef JPT_LIB_STATE_SCHEMA_H
#define JPT_LIB_STATE_SCHEMA_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "state/impl.h"

/* A `pattern` (or a patternProperties name) is matched with these limits:
 * one that needs more fails the check with JPT_ERR_LIMIT. */
#define JPT__SCHEMA_MATCH_LIMIT 1000000u
#define JPT__SCHEMA_DEPTH_LIMIT 10000u

typedef struct jpt__schema_regex {
    pcre2_general_context *gctx;
    pcre2_compile_context *cctx;
    pcre2_match_context *mctx;
    pcre2_code *code;
    pcre2_match_data *md;
} jpt__schema_regex;

/* Compiles the JSON string `pattern` as ECMA 262 reads it where PCRE2 can
 * (schema-keywords.c). JPT_ERR_INVALID with `why` ("is not a regular
 * expression: …"), JPT_ERR_NOMEM. */
int jpt__schema_regex_new(const json_t *pattern, jpt__schema_regex *out, char *why, size_t n);
/* 1: s[0..n) matches somewhere; 0: it does not; JPT_ERR_LIMIT: the match
 * limits were reached; JPT_ERR_NOMEM. */
int jpt__schema_regex_match(jpt__schema_regex *re, const char *s, size_t n);
void jpt__schema_regex_free(jpt__schema_regex *re);

/* A count keyword's value (maxLength, minItems, …): a non-negative integer,
 * 2.0 too. */
bool jpt__schema_count(const json_t *v, uint64_t *out);

#endif
