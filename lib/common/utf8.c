/* UTF-8 validation, counting and repair, following Unicode §3.9 (table 3-7):
 * no overlong forms, no surrogates, nothing above U+10FFFF; and JSON string
 * literals of UTF-8 text. Both run over text that can be megabytes (fs.read
 * results, grep lines), so they look at eight bytes at a time. */
#include <stdint.h>
#include <string.h>

#include "common.h"

/* ---- Eight bytes at a time ------------------------------------------------------
 * The classic bit tricks ("Bit Twiddling Hacks": haszero, hasless). In a
 * flagged word only the lowest flagged byte is exact (a borrow runs
 * upwards only), which is the one wanted. */

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

static inline uint64_t load8(const unsigned char *p)
{
    uint64_t x;

    memcpy(&x, p, 8);
    return x;
}

static inline uint64_t has_byte(uint64_t x, unsigned char c)
{
    uint64_t y = x ^ (ONES * c);
    return (y - ONES) & ~y & HIGHS;
}

/* The bytes a JSON string literal must escape: '"', '\\', controls. */
static inline uint64_t has_escape(uint64_t x)
{
    return (((x - ONES * 0x20) & ~x & HIGHS) | has_byte(x, '"') | has_byte(x, '\\'));
}

/* The index within the word of its lowest flagged byte. */
static inline size_t first_flagged(uint64_t m)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (size_t)(__builtin_ctzll(m) >> 3);
#else
    return (size_t)(__builtin_clzll(m) >> 3);
#endif
}

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
        if (i + 8 <= n && (load8(p + i) & HIGHS) == 0) {
            i += 8;
            continue;
        }
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

/* The index of the first byte at or after `i` that a string literal must
 * escape, or n. */
static size_t plain_run(const unsigned char *p, size_t n, size_t i)
{
    for (; i + 8 <= n; i += 8) {
        uint64_t m = has_escape(load8(p + i));
        if (m != 0)
            return i + first_flagged(m);
    }
    while (i < n && p[i] >= 0x20 && p[i] != '"' && p[i] != '\\')
        i++;
    return i;
}

/* What an escaped byte becomes after its backslash: a letter, itself, or
 * 'u' for \u00XX. */
static char escape_letter(unsigned char c)
{
    switch (c) {
    case '\n':
        return 'n';
    case '\t':
        return 't';
    case '\r':
        return 'r';
    case '"':
    case '\\':
        return (char)c;
    default:
        return 'u';
    }
}

int jpt__buf_json_string(jpt__buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    jpt__buf clean = JPT__BUF_INIT;
    const unsigned char *p = (const unsigned char *)s;
    size_t size = n + 2, i, start = 0;
    int rc;

    if (!jpt__utf8_valid(s, n)) {
        if ((rc = jpt__buf_append_utf8(&clean, s, n, true)) < 0)
            return rc;
        p = (const unsigned char *)clean.data;
        n = clean.len;
        size = n + 2;
    }
    /* One pass sizes the literal, the next writes it in place: the buffer
     * grows once, and plain runs are copied whole. */
    for (i = plain_run(p, n, 0); i < n; i = plain_run(p, n, i + 1))
        size += escape_letter(p[i]) == 'u' ? 5 : 1;
    if ((rc = jpt__buf_reserve(b, size)) < 0) {
        jpt__buf_free(&clean);
        return rc;
    }
    char *dst = b->data + b->len;
    *dst++ = '"';
    for (i = plain_run(p, n, 0);; i = plain_run(p, n, i + 1)) {
        if (i > start)
            memcpy(dst, p + start, i - start);
        dst += i - start;
        if (i >= n)
            break;
        char letter = escape_letter(p[i]);
        *dst++ = '\\';
        *dst++ = letter;
        if (letter == 'u') {
            *dst++ = '0';
            *dst++ = '0';
            *dst++ = hex[p[i] >> 4];
            *dst++ = hex[p[i] & 15];
        }
        start = i + 1;
    }
    *dst = '"';
    b->len += size;
    b->data[b->len] = '\0';
    jpt__buf_free(&clean);
    return JPT_OK;
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

size_t jpt__utf8_misleading(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;

    if (n == 0)
        return 0;
    if (p[0] < 0x20 || p[0] == 0x7f)
        return 1;
    /* C1: C2 80..C2 9F. ALM: D8 9C. */
    if (n >= 2 && p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
        return 2;
    if (n >= 2 && p[0] == 0xd8 && p[1] == 0x9c)
        return 2;
    if (n < 3 || p[0] != 0xe2)
        return 0;
    /* LRM, RLM: E2 80 8E..8F; LS, PS, LRE..RLO: E2 80 A8..AE; LRI..PDI:
     * E2 81 A6..A9. */
    if (p[1] == 0x80 && (p[2] == 0x8e || p[2] == 0x8f || (p[2] >= 0xa8 && p[2] <= 0xae)))
        return 3;
    if (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
        return 3;
    return 0;
}
