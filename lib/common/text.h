/* The byte-level tricks under UTF-8 validation and JSON string escaping,
 * shared by the common room (utf8.c: validation, repair, quoting) and the
 * protocol codec (vfs-proto/codec.c: validation of whole messages), so
 * that both judge text by the same rules at the same speed. C library
 * only: libjptool-tool compiles both. Never installed. */
#ifndef JPT_LIB_COMMON_TEXT_H
#define JPT_LIB_COMMON_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- Eight bytes at a time --------------------------------------------------
 * The classic bit tricks ("Bit Twiddling Hacks": haszero, hasless). In a
 * flagged word only the lowest flagged byte is exact (a borrow runs
 * upwards only), which is the one wanted. */

#define JPT__ONES UINT64_C(0x0101010101010101)
#define JPT__HIGHS UINT64_C(0x8080808080808080)

static inline uint64_t jpt__load8(const unsigned char *p)
{
    uint64_t x;

    memcpy(&x, p, 8);
    return x;
}

static inline uint64_t jpt__has_byte(uint64_t x, unsigned char c)
{
    uint64_t y = x ^ (JPT__ONES * c);
    return (y - JPT__ONES) & ~y & JPT__HIGHS;
}

/* The bytes a JSON string literal must escape: '"', '\\', controls. */
static inline uint64_t jpt__has_escape(uint64_t x)
{
    return ((x - JPT__ONES * 0x20) & ~x & JPT__HIGHS) | jpt__has_byte(x, '"') |
           jpt__has_byte(x, '\\');
}

/* The index within the word of its lowest flagged byte. */
static inline size_t jpt__first_flagged(uint64_t m)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (size_t)(__builtin_ctzll(m) >> 3);
#else
    return (size_t)(__builtin_clzll(m) >> 3);
#endif
}

/* The index of the first byte at or after `i` that a string literal's
 * text must escape ('"', '\\', a control character), or, with `ascii`,
 * that is not ASCII either (to be validated as UTF-8); n when there is
 * none. */
static inline size_t jpt__skip_plain(const unsigned char *p, size_t n, size_t i, bool ascii)
{
    for (; i + 8 <= n; i += 8) {
        uint64_t x = jpt__load8(p + i);
        uint64_t m = jpt__has_escape(x) | (ascii ? x & JPT__HIGHS : 0);
        if (m != 0)
            return i + jpt__first_flagged(m);
    }
    while (i < n && p[i] >= 0x20 && p[i] != '"' && p[i] != '\\' && (!ascii || p[i] < 0x80))
        i++;
    return i;
}

/* ---- UTF-8 ------------------------------------------------------------------
 * The length of the well-formed sequence at p[0..n) (n >= 1), or 0 if
 * there is none; then *bad is the length of the maximal subpart to
 * replace, at least 1 (Unicode §3.9, table 3-7: no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
static inline size_t jpt__utf8_sequence(const unsigned char *p, size_t n, size_t *bad)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;
    size_t need;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
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

/* Validates the run of multi-byte sequences at p[*i] (a byte >= 0x80) up
 * to the next ASCII byte, where *i is left; false with *i at the first
 * invalid sequence. Text in most scripts is such runs: checking them in
 * one loop saves a word scan per character. */
static inline bool jpt__utf8_run(const unsigned char *p, size_t n, size_t *i)
{
    size_t at = *i, bad;

    do {
        size_t len = jpt__utf8_sequence(p + at, n - at, &bad);
        if (len == 0) {
            *i = at;
            return false;
        }
        at += len;
    } while (at < n && p[at] >= 0x80);
    *i = at;
    return true;
}

#endif /* JPT_LIB_COMMON_TEXT_H */
