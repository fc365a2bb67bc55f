/* SHA-1 (FIPS 180-4), for comparing a file with the blob git's index
 * names: git names a blob by SHA-1("blob <size>\0<bytes>"). Not for
 * security. */
#ifndef VFS_TOOLS_SHA1_H
#define VFS_TOOLS_SHA1_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha1_ctx {
    uint32_t h[5];
    uint64_t length;     /* bytes hashed so far */
    unsigned char block[64];
    size_t used;         /* bytes waiting in `block` */
} sha1_ctx;

void sha1_init(sha1_ctx *c);
void sha1_update(sha1_ctx *c, const void *data, size_t n);
void sha1_final(sha1_ctx *c, unsigned char digest[20]);

#endif
