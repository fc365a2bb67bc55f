/* The names the registry reads and writes: actions, handle ids, elapsed
 * times. One place, so that what a definition declares, what a call asks
 * and what the model is told agree. */
#include <stdio.h>
#include <string.h>

#include "registry/base.h"

static const char *const action_names[] = {
    [JPT__ACTION_SPAWN] = "spawn",
    [JPT__ACTION_FETCH] = "fetch",
    [JPT__ACTION_APPLY] = "apply",
    [JPT__ACTION_ABORT] = "abort",
};

const char *jpt__action_name(int action)
{
    if (action > 0 && action <= JPT__ACTION_ABORT && action_names[action] != NULL)
        return action_names[action];
    return "run";
}

int jpt__action_from_name(const char *name)
{
    for (int a = JPT__ACTION_SPAWN; a <= JPT__ACTION_ABORT && name != NULL; a <<= 1)
        if (strcmp(name, action_names[a]) == 0)
            return a;
    return 0;
}

void jpt__actions_list(unsigned actions, char *out, size_t n)
{
    size_t len = 0;

    out[0] = '\0';
    for (int a = JPT__ACTION_SPAWN; a <= JPT__ACTION_ABORT; a <<= 1)
        if (actions & (unsigned)a)
            len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s",
                                    len ? ", " : "", action_names[a]);
}

bool jpt__valid_name(const char *name, const char *extra)
{
    size_t n = strlen(name);

    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || (c != '\0' && strchr(extra, c) != NULL)))
            return false;
    }
    return true;
}

double jpt__elapsed_secs(uint64_t since)
{
    double secs = (double)(jpt__loop_now() - since) / 1e9;

    return (double)(long long)(secs * 10 + 0.5) / 10;
}
