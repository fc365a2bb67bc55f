/* Per-object error text: a fixed buffer in each object, so reporting an
 * error (including running out of memory) never needs memory itself. */
#include <stdio.h>
#include <string.h>

#include "common.h"

int jpt__err(jpt__errbuf *e, int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(e->text, sizeof(e->text), fmt, ap);
    va_end(ap);
    jpt__log(JPT_LOG_DEBUG, "%s (%s)", e->text, jpt_strerror(status));
    return status;
}

void jpt__err_clear(jpt__errbuf *e)
{
    e->text[0] = '\0';
}

/* The calling thread's own: two threads creating registries at once each
 * read their own message. */
static _Thread_local jpt__errbuf last_error;

JPT_EXPORT const char *jpt_last_error(void)
{
    return last_error.text;
}

int jpt__fail(int status, const char *fmt, ...)
{
    char text[sizeof(last_error.text)];
    va_list ap;

    /* Formatted aside first: the message may quote the previous one (a
     * constructor saying why the one it called failed). */
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    memcpy(last_error.text, text, sizeof(text));
    jpt__log(JPT_LOG_DEBUG, "%s (%s)", last_error.text, jpt_strerror(status));
    return status;
}

void jpt__fail_clear(void)
{
    last_error.text[0] = '\0';
}

int jpt__struct_check(const void *p, size_t size, size_t known)
{
    const unsigned char *bytes = p;

    if (size < known)
        return JPT_ERR_INVALID;
    for (size_t i = known; i < size; i++)
        if (bytes[i] != 0)
            return JPT_ERR_UNSUPPORTED;
    return JPT_OK;
}

int jpt__struct_take(void *dst, size_t known, const void *src, size_t size, size_t oldest)
{
    if (size < oldest)
        return JPT_ERR_INVALID;
    int rc = size > known ? jpt__struct_check(src, size, known) : JPT_OK;
    if (rc < 0)
        return rc;
    memset(dst, 0, known);
    memcpy(dst, src, size < known ? size : known);
    return JPT_OK;
}
