/* UTF-8 validation, counting and repair, following Unicode §3.9 (table 3-7):
 * no overlong forms, no surrogates, nothing above U+10FFFF; and JSON string
 * literals of UTF-8 text, the one writer of them for the host and the tool
 * side. Both run over text that can be megabytes (fs.read results, grep
 * lines), so they look at eight bytes at a time (text.h). */
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "text.h"

size_t jpt__utf8_valid_prefix(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, bad;

    while (i < n) {
        if (i + 8 <= n && (jpt__load8(p + i) & JPT__HIGHS) == 0) {
            i += 8;
            continue;
        }
        size_t len = jpt__utf8_sequence(p + i, n - i, &bad);
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

/* ---- JSON string literals -------------------------------------------------- */

/* What a byte becomes inside a string literal: 0 itself, 'u' \u00XX, else
 * the letter after the backslash. */
static const char escape_letter[256] = {
    ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
    [0x00] = 'u', [0x01] = 'u', [0x02] = 'u', [0x03] = 'u', [0x04] = 'u',
    [0x05] = 'u', [0x06] = 'u', [0x07] = 'u', [0x0B] = 'u', [0x0E] = 'u',
    [0x0F] = 'u', [0x10] = 'u', [0x11] = 'u', [0x12] = 'u', [0x13] = 'u',
    [0x14] = 'u', [0x15] = 'u', [0x16] = 'u', [0x17] = 'u', [0x18] = 'u',
    [0x19] = 'u', [0x1A] = 'u', [0x1B] = 'u', [0x1C] = 'u', [0x1D] = 'u',
    [0x1E] = 'u', [0x1F] = 'u', ['"'] = '"', ['\\'] = '\\',
};

size_t jpt__json_quoted_size(const char *text, size_t n, bool refuse_nul)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t size = n + 2, i = 0;

    for (;;) {
        i = jpt__skip_plain(p, n, i, true);
        if (i >= n)
            return size;
        unsigned char c = p[i];
        if (c >= 0x80) {
            if (!jpt__utf8_run(p, n, &i))
                return 0;
            continue;
        }
        if (c == 0 && refuse_nul)
            return 0;
        char letter = escape_letter[c];
        size += letter == 'u' ? 5 : letter != 0;
        i++;
    }
}

void jpt__json_quote(char *dst, const char *text, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0, start = 0;

    *dst++ = '"';
    for (;;) {
        i = jpt__skip_plain(p, n, i, false);
        memcpy(dst, p + start, i - start);
        dst += i - start;
        if (i >= n)
            break;
        char letter = escape_letter[p[i]];
        *dst++ = '\\';
        *dst++ = letter;
        if (letter == 'u') {
            memcpy(dst, "00", 2);
            dst[2] = hex[p[i] >> 4];
            dst[3] = hex[p[i] & 15];
            dst += 4;
        }
        start = ++i;
    }
    *dst = '"';
}

/* Appends the literal of valid UTF-8, which jpt__json_quoted_size() sized:
 * the buffer grows once, and plain runs are copied whole. */
static int append_quoted(jpt__buf *b, const char *p, size_t n, size_t size)
{
    int rc = jpt__buf_reserve(b, size);

    if (rc < 0)
        return rc;
    jpt__json_quote(b->data + b->len, p, n);
    b->len += size;
    b->data[b->len] = '\0';
    return JPT_OK;
}

int jpt__buf_json_string(jpt__buf *b, const char *p, size_t n)
{
    jpt__buf clean = JPT__BUF_INIT;
    size_t size = jpt__json_quoted_size(p, n, false);
    int rc;

    if (size != 0)
        return append_quoted(b, p, n, size);
    if ((rc = jpt__buf_append_utf8(&clean, p, n, true)) == JPT_OK)
        rc = append_quoted(b, clean.data, clean.len,
                           jpt__json_quoted_size(clean.data, clean.len, false));
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
        size_t len = p[i] == 0 ? keep_nul : jpt__utf8_sequence(p + i, n - i, &bad);
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
    size_t len = jpt__utf8_sequence(p, n, &bad);
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
