/* base64 (RFC 4648 §4, with padding): D11 carries binary file content as
 * "content" with "encoding": "base64". */
#include "files/files.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int jpt__files_base64_encode(const void *data, size_t len, jpt__buf *out)
{
    const unsigned char *p = data;
    size_t groups = len / 3 + (len % 3 != 0);

    if (groups > (SIZE_MAX - 1) / 4 || jpt__buf_reserve(out, groups * 4) < 0)
        return JPT_ERR_NOMEM;
    char *w = out->data + out->len;
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *w++ = alphabet[v >> 18];
        *w++ = alphabet[(v >> 12) & 63];
        *w++ = alphabet[(v >> 6) & 63];
        *w++ = alphabet[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        *w++ = alphabet[v >> 18];
        *w++ = alphabet[(v >> 12) & 63];
        *w++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        *w++ = '=';
    }
    out->len = (size_t)(w - out->data);
    *w = '\0';
    return JPT_OK;
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

int jpt__files_base64_decode(const char *text, size_t len, jpt__buf *out)
{
    const unsigned char *p = (const unsigned char *)text;

    if (len % 4 != 0)
        return JPT_ERR_INVALID;
    if (jpt__buf_reserve(out, len / 4 * 3) < 0)
        return JPT_ERR_NOMEM;
    unsigned char *w = (unsigned char *)out->data + out->len;
    for (size_t i = 0; i < len; i += 4) {
        bool last = i + 4 == len;
        int pad = last && p[i + 3] == '=' ? (p[i + 2] == '=' ? 2 : 1) : 0;
        int a = sextet(p[i]), b = sextet(p[i + 1]);
        int c = pad == 2 ? 0 : sextet(p[i + 2]);
        int d = pad >= 1 ? 0 : sextet(p[i + 3]);
        if (a < 0 || b < 0 || c < 0 || d < 0)
            return JPT_ERR_INVALID;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        /* Canonical form only: the bits padding drops must be zero. */
        if ((pad == 2 && (v & 0xFFFF) != 0) || (pad == 1 && (v & 0xFF) != 0))
            return JPT_ERR_INVALID;
        *w++ = (unsigned char)(v >> 16);
        if (pad < 2)
            *w++ = (unsigned char)(v >> 8);
        if (pad < 1)
            *w++ = (unsigned char)v;
    }
    out->len = (size_t)((char *)w - out->data);
    out->data[out->len] = '\0';
    return JPT_OK;
}
