/* UTF-8 validation, counting and repair, following Unicode §3.9 (table 3-7):
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
#include <string.h>

#include "common.h"

/* The length of the well-formed sequence at p[0..n), or 0 if there is none;
 * then *bad is the length of the maximal subpart to replace (at least 1). */
static size_t sequence_length(const unsigned char *p, size_t n, size_t *bad)
{
    unsigned char c = p[0];
    unsigned char lo = 0x80, hi = 0xBF;
    size_t need;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        *bad = 1;
        return 0;
    }
    for (size_t i = 1; i < need; i++) {
        if (i >= n || p[i] < lo || p[i] > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return need;
}

size_t jpt__utf8_valid_prefix(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, bad;

    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = sequence_length(p + i, n - i, &bad);
        if (len == 0)
            break;
        i += len;
    }
    return i;
}

bool jpt__utf8_valid(const char *p, size_t n)
{
    return jpt__utf8_valid_prefix(p, n) == n;
}

size_t jpt__utf8_length(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t count = 0;

    for (size_t i = 0; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            count++;
    return count;
}

int jpt__buf_json_string(jpt__buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    jpt__buf clean = JPT__BUF_INIT;
    const char *p = s;
    int rc = JPT_OK;

    if (!jpt__utf8_valid(s, n)) {
        if ((rc = jpt__buf_append_utf8(&clean, s, n, true)) < 0)
            return rc;
        p = clean.data;
        n = clean.len;
    }
    if ((rc = jpt__buf_reserve(b, n + 2)) == JPT_OK)
        rc = jpt__buf_putc(b, '"');
    size_t start = 0;
    for (size_t i = 0; rc == JPT_OK && i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if ((rc = jpt__buf_append(b, p + start, i - start)) < 0)
            break;
        start = i + 1;
        char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t len = 2;
        if (c == '\n')
            esc[1] = 'n';
        else if (c == '\t')
            esc[1] = 't';
        else if (c == '\r')
            esc[1] = 'r';
        else if (c < 0x20) {
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            len = 6;
        }
        rc = jpt__buf_append(b, esc, len);
    }
    if (rc == JPT_OK && (rc = jpt__buf_append(b, p + start, n - start)) == JPT_OK)
        rc = jpt__buf_putc(b, '"');
    jpt__buf_free(&clean);
    return rc;
}

int jpt__buf_append_utf8(jpt__buf *b, const char *s, size_t n, bool keep_nul)
{
    static const char replacement[] = "\xEF\xBF\xBD";
    const unsigned char *p = (const unsigned char *)s;
    size_t start = 0, i = 0, bad = 0;
    int rc;

    while (i < n) {
        if (p[i] >= 0x20 && p[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = p[i] == 0 ? keep_nul : sequence_length(p + i, n - i, &bad);
        if (len > 0) {
            i += len;
            continue;
        }
        if (p[i] == 0)
            bad = 1;
        if ((rc = jpt__buf_append(b, p + start, i - start)) < 0 ||
            (rc = jpt__buf_append(b, replacement, 3)) < 0)
            return rc;
        i += bad;
        start = i;
    }
    return jpt__buf_append(b, p + start, n - start);
}

/* ---- Width once rendered -------------------------------------------------
 * What text takes up once jpt__buf_append_utf8 has repaired it: valid
 * characters as they are, NUL and each maximal invalid subpart as U+FFFD (3
 * bytes). A limit on what the model reads is a limit on this width, so that
 * cutting the tool's bytes to it leaves nothing to cut again after the
 * repair, and the bytes said to be omitted are the tool's. */

#define REPLACEMENT_WIDTH 3

/* The unit at p[0..n): its length in the source, and its width. */
static size_t render_unit(const unsigned char *p, size_t n, size_t *width)
{
    size_t bad = 1;

    if (p[0] == 0) {
        *width = REPLACEMENT_WIDTH;
        return 1;
    }
    if (p[0] < 0x80) {
        *width = 1;
        return 1;
    }
    size_t len = sequence_length(p, n, &bad);
    if (len > 0) {
        *width = len;
        return len;
    }
    *width = REPLACEMENT_WIDTH;
    return bad;
}

size_t jpt__render_width(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t total = 0, i = 0, width;

    while (i < n) {
        i += render_unit(p + i, n - i, &width);
        total += width;
    }
    return total;
}

size_t jpt__render_prefix(const char *s, size_t n, size_t budget)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, used = 0, width;

    while (i < n) {
        size_t len = render_unit(p + i, n - i, &width);
        if (used + width > budget)
            break;
        used += width;
        i += len;
    }
    return i;
}

size_t jpt__render_suffix(const char *s, size_t n, size_t budget)
{
    const unsigned char *p = (const unsigned char *)s;
    /* A unit is never narrower than its bytes: the suffix starts no
     * earlier than `budget` bytes from the end, on a character's start. */
    size_t start = n > budget ? n - budget : 0, width;

    while (start < n && (p[start] & 0xC0) == 0x80)
        start++;
    size_t total = jpt__render_width(s + start, n - start);
    while (total > budget && start < n) {
        start += render_unit(p + start, n - start, &width);
        total -= width;
    }
    return start;
}
