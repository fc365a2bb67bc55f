/* Per-object error text: a fixed buffer in each object, so reporting an
 * error (including running out of memory) never needs memory itself. */
#include <stdio.h>

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
