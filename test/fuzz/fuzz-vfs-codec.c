/* libFuzzer harness for the VFS engine's JSON codec, against jansson:
 *  - the validator and jansson agree on what is JSON, except where they
 *    are meant to differ (nesting past 512 levels, which only the
 *    validator refuses; numbers too large for jansson's types and "\u0000"
 *    in member names, which only jansson refuses; a NUL byte after the
 *    value, where jansson stops reading);
 *  - a string literal either accepts decodes to the same bytes in both;
 *  - any bytes that are UTF-8 escape to a literal both read back as those
 *    bytes, of exactly the size computed first;
 *  - base64 of any bytes decodes back to them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "vfs/vfs.h"

static void check_validation(const char *p, size_t n)
{
    jpt__json_error err;
    json_error_t jerr;
    bool ours = jpt__json_validate(p, n, &err) == JPT_OK;
    json_t *v = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);

    if (ours && v == NULL && strstr(jerr.text, "too big") == NULL &&
        strstr(jerr.text, "overflow") == NULL && strstr(jerr.text, "NUL byte in object key") == NULL)
        abort();
    /* jansson stops reading at a NUL byte after the value ("2\0" is 2). */
    if (!ours && v != NULL && strcmp(err.what, "nested deeper than 512 levels") != 0 &&
        memchr(p, '\0', n) == NULL)
        abort();
    /* A string both read decodes alike. */
    if (ours && json_is_string(v)) {
        jpt__vfs_span lit = {p, n};
        while (lit.n > 0 && lit.p[0] != '"')
            lit.p++, lit.n--;
        while (lit.n > 0 && lit.p[lit.n - 1] != '"')
            lit.n--;
        char *out = malloc(lit.n);
        size_t len = jpt__json_unescape(lit, out);
        if (len != json_string_length(v) || memcmp(out, json_string_value(v), len) != 0)
            abort();
        free(out);
    }
    json_decref(v);
}

static void check_escaping(const char *p, size_t n)
{
    size_t size = jpt__json_quoted_size(p, n, false);
    jpt__json_error err;

    if (size == 0)
        return; /* not UTF-8 */
    char *lit = malloc(size + 1);
    lit[size] = 'X'; /* must stay untouched */
    jpt__json_quote(lit, p, n);
    if (lit[size] != 'X' || jpt__json_validate(lit, size, &err) != JPT_OK ||
        memchr(lit, '\n', size) != NULL)
        abort();
    json_t *v = json_loadb(lit, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v == NULL || json_string_length(v) != n || memcmp(json_string_value(v), p, n) != 0)
        abort();
    json_decref(v);
    /* And back in place. */
    jpt__vfs_span span = {lit, size};
    if (jpt__json_unescape(span, lit) != n || memcmp(lit, p, n) != 0)
        abort();
    free(lit);
}

static void check_base64(const char *p, size_t n)
{
    size_t size = jpt__base64_size(n), len;
    char *text = malloc(size + 1);

    jpt__base64_encode(text, (const unsigned char *)p, n);
    if (!jpt__base64_decode(text, size, (unsigned char *)text, &len) || len != n ||
        memcmp(text, p, n) != 0)
        abort();
    free(text);
    /* Decoding arbitrary text never writes past its input. */
    text = malloc(n + 1);
    memcpy(text, p, n);
    jpt__base64_decode(text, n, (unsigned char *)text, &len);
    if (len > n)
        abort();
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;

    check_validation(p, size);
    check_escaping(p, size);
    check_base64(p, size);
    return 0;
}
