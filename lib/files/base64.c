/* fs.read's and fs.write's "encoding": "base64" into and out of the files
 * room's buffers, over the one codec (common/base64.c). */
#include "files/files.h"

int jpt__files_base64_encode(const void *data, size_t len, jpt__buf *out)
{
    size_t n = jpt__base64_size(len);

    if (len > (SIZE_MAX - 1) / 4 * 3 || jpt__buf_reserve(out, n) < 0)
        return JPT_ERR_NOMEM;
    jpt__base64_encode(out->data + out->len, data, len);
    out->len += n;
    out->data[out->len] = '\0';
    return JPT_OK;
}

int jpt__files_base64_decode(const char *text, size_t len, jpt__buf *out)
{
    size_t n = 0;

    if (jpt__buf_reserve(out, len / 4 * 3 + 2) < 0)
        return JPT_ERR_NOMEM;
    if (!jpt__base64_decode(text, len, (unsigned char *)out->data + out->len, &n))
        return JPT_ERR_INVALID;
    out->len += n;
    out->data[out->len] = '\0';
    return JPT_OK;
}
