/* Logging: nothing is printed unless the host installs a function. */
#include <stdio.h>

#include "common.h"

static jpt_log_fn log_fn;
static void *log_ud;
static int log_min_level = JPT_LOG_WARNING;

JPT_EXPORT void jpt_set_log(jpt_log_fn fn, void *ud, int min_level)
{
    log_fn = fn;
    log_ud = ud;
    log_min_level = min_level;
}

bool jpt__log_enabled(int level)
{
    return log_fn != NULL && level <= log_min_level;
}

void jpt__log(int level, const char *fmt, ...)
{
    /* Long enough for any message the library writes; a longer one is cut,
     * which is better than allocating on what may be an error path. */
    char line[1024];
    va_list ap;

    if (!jpt__log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    log_fn(level, line, log_ud);
}
