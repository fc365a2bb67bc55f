/* SHA-1 as FIPS 180-4 §6.1 gives it; see sha1.h. */
#include <string.h>

#include "sha1.h"

static uint32_t rol(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

static void compress(uint32_t h[5], const unsigned char *p)
{
    uint32_t w[80];

    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdc;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6;
        }
        uint32_t next = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = next;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void sha1_init(sha1_ctx *c)
{
    static const uint32_t start[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
                                      0xc3d2e1f0};

    memcpy(c->h, start, sizeof(start));
    c->length = 0;
    c->used = 0;
}

void sha1_update(sha1_ctx *c, const void *data, size_t n)
{
    const unsigned char *p = data;

    c->length += n;
    while (n > 0) {
        size_t take = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->block + c->used, p, take);
        c->used += take;
        p += take;
        n -= take;
        if (c->used == 64) {
            compress(c->h, c->block);
            c->used = 0;
        }
    }
}

void sha1_final(sha1_ctx *c, unsigned char digest[20])
{
    uint64_t bits = c->length * 8;
    unsigned char pad = 0x80, zero = 0, len[8];

    sha1_update(c, &pad, 1);
    while (c->used != 56)
        sha1_update(c, &zero, 1);
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha1_update(c, len, 8);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            digest[4 * i + j] = (unsigned char)(c->h[i] >> (24 - 8 * j));
}
