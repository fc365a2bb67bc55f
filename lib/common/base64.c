/* base64 (RFC 4648 §4, the standard alphabet): D11 carries binary content
 * as a string with "encoding": "base64", in both directions. One codec for
 * the files room and the protocol engine, so both read the same texts;
 * and D11's content, a string when it is text, else its base64. */
#include "common/common.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t jpt__base64_size(size_t n)
{
    return (n + 2) / 3 * 4;
}

void jpt__base64_encode(char *dst, const unsigned char *src, size_t n)
{
    size_t i = 0;

    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];
        *dst++ = alphabet[v >> 18];
        *dst++ = alphabet[(v >> 12) & 63];
        *dst++ = alphabet[(v >> 6) & 63];
        *dst++ = alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)src[i] << 16 | (i + 1 < n ? (uint32_t)src[i + 1] << 8 : 0);
        *dst++ = alphabet[v >> 18];
        *dst++ = alphabet[(v >> 12) & 63];
        *dst++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
        *dst++ = '=';
    }
}

static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    return c == '/' ? 63 : -1;
}

bool jpt__base64_decode(const char *src, size_t n, unsigned char *dst, size_t *len)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t out = 0;
    uint32_t acc = 0;
    unsigned bits = 0;

    /* Padding, when there is any, completes the last group of four. */
    if (n % 4 == 0 && n > 0 && s[n - 1] == '=')
        n -= s[n - 2] == '=' ? 2 : 1;
    if (n % 4 == 1)
        return false;
    /* Four characters make three bytes: output trails input, so dst may be
     * src. */
    for (size_t i = 0; i < n; i++) {
        int v = sextet(s[i]);
        if (v < 0)
            return false;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            dst[out++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    /* Canonical text only: the bits the last character carries beyond the
     * bytes must be zero, so one text means one content. */
    if (acc != 0)
        return false;
    *len = out;
    return true;
}

int jpt__buf_base64(jpt__buf *b, const void *data, size_t len)
{
    size_t n = jpt__base64_size(len);

    if (len > (SIZE_MAX - 1) / 4 * 3 || jpt__buf_reserve(b, n) < 0)
        return JPT_ERR_NOMEM;
    jpt__base64_encode(b->data + b->len, data, len);
    b->len += n;
    b->data[b->len] = '\0';
    return JPT_OK;
}

int jpt__buf_base64_decode(jpt__buf *b, const char *text, size_t len)
{
    size_t n = 0;

    if (jpt__buf_reserve(b, len / 4 * 3 + 2) < 0)
        return JPT_ERR_NOMEM;
    if (!jpt__base64_decode(text, len, (unsigned char *)b->data + b->len, &n))
        return JPT_ERR_INVALID;
    b->len += n;
    b->data[b->len] = '\0';
    return JPT_OK;
}

int jpt__buf_content(jpt__buf *b, const void *data, size_t len, bool *base64)
{
    size_t quoted = jpt__json_quoted_size(data, len, true);
    size_t size = quoted != 0 ? quoted : jpt__base64_size(len) + 2;

    *base64 = quoted == 0;
    if (quoted == 0 && len > (SIZE_MAX - 3) / 4 * 3)
        return JPT_ERR_NOMEM;
    if (jpt__buf_reserve(b, size) < 0)
        return JPT_ERR_NOMEM;
    char *dst = b->data + b->len;
    if (quoted != 0)
        jpt__json_quote(dst, data, len);
    else {
        dst[0] = '"';
        jpt__base64_encode(dst + 1, data, len);
        dst[size - 1] = '"';
    }
    b->len += size;
    b->data[b->len] = '\0';
    return JPT_OK;
}
