/* Growable byte buffers: the one way the library builds strings. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

int jpt__buf_reserve(jpt__buf *b, size_t extra)
{
    if (extra >= SIZE_MAX - b->len)
        return JPT_ERR_NOMEM;
    size_t need = b->len + extra + 1; /* room for the terminating NUL */
    if (need <= b->cap)
        return JPT_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *data = jpt__realloc(b->data, cap);
    if (data == NULL)
        return JPT_ERR_NOMEM;
    b->data = data;
    b->cap = cap;
    return JPT_OK;
}

int jpt__buf_append(jpt__buf *b, const void *p, size_t n)
{
    int rc = jpt__buf_reserve(b, n);
    if (rc < 0)
        return rc;
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return JPT_OK;
}

int jpt__buf_puts(jpt__buf *b, const char *s)
{
    return jpt__buf_append(b, s, strlen(s));
}

int jpt__buf_putc(jpt__buf *b, char c)
{
    return jpt__buf_append(b, &c, 1);
}

int jpt__buf_vprintf(jpt__buf *b, const char *fmt, va_list ap)
{
    char small[256];
    va_list again;

    va_copy(again, ap);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    if (n < 0 || (size_t)n < sizeof(small)) {
        va_end(again);
        return n < 0 ? JPT_ERR_INVALID : jpt__buf_append(b, small, (size_t)n);
    }
    int rc = jpt__buf_reserve(b, (size_t)n);
    if (rc == JPT_OK) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
    return rc;
}

int jpt__buf_printf(jpt__buf *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    int rc = jpt__buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *jpt__buf_take(jpt__buf *b)
{
    char *data = b->data;

    if (data == NULL)
        data = jpt__memdup0("", 0);
    b->data = NULL;
    b->len = b->cap = 0;
    return data;
}

void jpt__buf_free(jpt__buf *b)
{
    jpt__free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
