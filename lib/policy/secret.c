/* Secrets of the host that a tool may use without reading them (D11
 * "http.get": "the host replaces ${VAR} with the value from its own
 * environment, if the variable is listed in the tool's
 * sandbox.network.envs … The tool never sees the resolved value"):
 * ${NAME} substitution in http header values, for a URL only when a
 * network.allow entry that covers it names the variable (issue 15 §5: "an
 * asked URL gets none"), and the values the policy lends, which the
 * scrubber (common/scrub.h) keeps out of whatever goes back to the tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static bool name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

static bool in_names(char *const *names, size_t count, const char *name, size_t n)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0)
            return true;
    return false;
}

/* Whether the network.allow entry names the variable. */
static bool entry_names(const jpt_policy *p, const jpt__policy_url *entry, const char *name,
                        size_t n)
{
    return entry->global_envs ? in_names(p->envs, p->n_envs, name, n)
                              : in_names(entry->envs, entry->n_envs, name, n);
}

static bool named_anywhere(const jpt_policy *p, const char *name, size_t n)
{
    for (size_t i = 0; i < p->n_urls; i++)
        if (entry_names(p, &p->urls[i], name, n))
            return true;
    return false;
}

static bool carried(const jpt_policy *p, const jpt__policy_url *url, const char *name, size_t n)
{
    for (size_t i = 0; i < p->n_urls; i++)
        if (jpt__policy_url_covers(&p->urls[i], url) && entry_names(p, &p->urls[i], name, n))
            return true;
    return false;
}

/* The next ${NAME} of `text` from *at: 1 with the name, 0 at the end, or
 * JPT_ERR_INVALID for a "${" without a name and '}'. *at moves past it. */
static int next_name(const char **at, const char **name, size_t *n)
{
    const char *c = strstr(*at, "${");

    if (c == NULL)
        return 0;
    const char *end = c + 2;
    while (name_char(*end))
        end++;
    if (!name_start(c[2]) || *end != '}')
        return JPT_ERR_INVALID;
    *name = c + 2;
    *n = (size_t)(end - *name);
    *at = end + 1;
    return 1;
}

bool jpt__policy_url_carries(const jpt_policy *p, const jpt__policy_url *url, const char *text)
{
    const char *at = text, *name;
    size_t n;
    int rc;

    while ((rc = next_name(&at, &name, &n)) == 1)
        if (!carried(p, url, name, n))
            return false;
    return rc == 0;
}

/* The value of ${name} for `url`, checked: JPT_OK with *value, or a status
 * with `why` naming the variable, never its value. */
static int resolve(const jpt_policy *p, const jpt__policy_url *url, const char *name, size_t n,
                   const char **value, char *why, size_t cap)
{
    char var[JPT__POLICY_NAME_MAX + 1];
    int shown = (int)(n < 80 ? n : 80);

    if (n > JPT__POLICY_NAME_MAX || !named_anywhere(p, name, n)) {
        snprintf(why, cap,
                 "${%.*s} is not in network.envs nor in the envs of a network.allow entry",
                 shown, name);
        return JPT_ERR_DENIED;
    }
    if (!carried(p, url, name, n)) {
        snprintf(why, cap,
                 "${%.*s} is not sent to this URL: no network.allow entry that covers it "
                 "names the variable (a URL the policy asks about, or one that an entry "
                 "without the variable covers, gets no secret)",
                 shown, name);
        return JPT_ERR_DENIED;
    }
    memcpy(var, name, n);
    var[n] = '\0';
    if ((*value = getenv(var)) == NULL) {
        snprintf(why, cap, "${%s} is not set in the host's environment", var);
        return JPT_ERR_NOT_FOUND;
    }
    if (strlen(*value) < JPT__SCRUB_MIN_VALUE) {
        snprintf(why, cap,
                 "the value of ${%s} is shorter than %d bytes, too short to be kept out of "
                 "what the tool receives",
                 var, JPT__SCRUB_MIN_VALUE);
        return JPT_ERR_INVALID;
    }
    for (const char *c = *value; *c != '\0'; c++)
        if ((unsigned char)*c < 0x20 && *c != '\t') {
            snprintf(why, cap,
                     "the value of ${%s} holds a line break or another control character, "
                     "which a header cannot carry",
                     var);
            return JPT_ERR_INVALID;
        }
    return JPT_OK;
}

int jpt__policy_values_add(jpt__policy_values *v, const char *value)
{
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->values[i], value) == 0)
            return JPT_OK;
    char **grown = jpt__array_reserve(v->values, &v->cap, v->n + 1, sizeof(*grown), 4);
    if (grown == NULL)
        return JPT_ERR_NOMEM;
    v->values = grown;
    if ((v->values[v->n] = jpt__strdup(value)) == NULL)
        return JPT_ERR_NOMEM;
    v->n++;
    return JPT_OK;
}

int jpt__policy_substitute(const jpt_policy *p, const jpt__policy_url *url, const char *text,
                           jpt__buf *out, jpt__policy_values *values, char *why, size_t cap)
{
    const char *run = text, *at = text, *name;
    size_t n;
    int found;

    while ((found = next_name(&at, &name, &n)) == 1) {
        const char *value;
        int rc = resolve(p, url, name, n, &value, why, cap);
        if (rc == JPT_OK && out != NULL)
            rc = jpt__buf_append(out, run, (size_t)(name - 2 - run));
        if (rc == JPT_OK && out != NULL)
            rc = jpt__buf_puts(out, value);
        if (rc == JPT_OK && out != NULL)
            rc = jpt__policy_values_add(values, value);
        if (rc == JPT_ERR_NOMEM)
            snprintf(why, cap, "out of memory");
        if (rc < 0)
            return rc;
        run = at;
    }
    if (found < 0) {
        snprintf(why, cap,
                 "'${' is not followed by a variable name and '}' (write ${NAME} with "
                 "letters, digits and '_')");
        return JPT_ERR_INVALID;
    }
    int rc = out != NULL ? jpt__buf_puts(out, run) : JPT_OK;
    if (rc < 0)
        snprintf(why, cap, "out of memory");
    return rc;
}

static int add_named(jpt__policy_values *values, char *const *names, size_t n)
{
    int rc = JPT_OK;

    for (size_t i = 0; i < n && rc == JPT_OK; i++) {
        const char *value = strcmp(names[i], "PATH") != 0 ? getenv(names[i]) : NULL;
        if (value != NULL)
            rc = jpt__policy_values_add(values, value);
    }
    return rc;
}

int jpt__policy_lent_values(const jpt_policy *p, jpt__policy_values *values)
{
    int rc = add_named(values, p->envs, p->n_envs);

    for (size_t i = 0; i < p->n_urls && rc == JPT_OK; i++)
        rc = add_named(values, p->urls[i].envs, p->urls[i].n_envs);
    for (size_t i = 0; i < p->n_commands && rc == JPT_OK; i++)
        rc = add_named(values, p->commands[i].envs, p->commands[i].n_envs);
    return rc;
}

int jpt__policy_values_scrub_set(const jpt__policy_values *v, jpt__scrub_set **out)
{
    size_t *lens = jpt__calloc(v->n + 1, sizeof(*lens));

    *out = NULL;
    if (lens == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < v->n; i++)
        lens[i] = strlen(v->values[i]);
    int rc = jpt__scrub_set_new((const char *const *)v->values, lens, v->n, out);
    jpt__free(lens);
    return rc;
}

void jpt__policy_values_free(jpt__policy_values *v)
{
    for (size_t i = 0; i < v->n; i++)
        jpt__free(v->values[i]);
    jpt__free(v->values);
    memset(v, 0, sizeof(*v));
}
