/* The `sandbox` section read into a policy (vfs.h, "The access policy";
 * rfd/README.md, "Policy configuration"): D11's keys and jptool's, each
 * checked for type and form. A message names the key as D11 writes it
 * ("filesystem.allow[1]: …"); no key is accepted and then ignored. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy/policy.h"
#include "sandbox/sandbox.h"

/* Keys are named in messages up to this length ("commands.<program>.args"). */
#define WHERE_MAX 160

/* Reads the value of one key; `where` names it. */
typedef int (*read_fn)(jpt_policy *p, const json_t *v, const char *where);

typedef struct member {
    const char *key;
    read_fn read;
} member;

static int invalid_type(jpt_policy *p, const char *where, const char *expected,
                        const json_t *v)
{
    return jpt__err(&p->err, JPT_ERR_INVALID, "%s: expected %s, got %s", where, expected,
                    jpt__json_type_phrase(v));
}

/* `key` is not one of `members`: the message lists the ones there are. */
static int unknown_key(jpt_policy *p, const char *where, const char *key,
                       const member *members, size_t n)
{
    char known[WHERE_MAX] = "";
    size_t len = 0;

    for (size_t i = 0; i < n && len < sizeof(known); i++)
        len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%s", i ? ", " : "",
                                members[i].key);
    return jpt__err(&p->err, JPT_ERR_INVALID, "%s: unknown key '%.80s' (known: %s)%s",
                    where, key, known,
                    strchr(key, '.') != NULL ? "; write dotted keys as nested objects" : "");
}

/* The name of a member of the object named `where` ("sandbox" is the
 * section itself, whose members are named alone). */
static void member_where(char *out, const char *where, const char *key)
{
    if (strcmp(where, "sandbox") == 0)
        snprintf(out, WHERE_MAX, "%s", key);
    else
        snprintf(out, WHERE_MAX, "%s.%s", where, key);
}

static int read_members(jpt_policy *p, const json_t *obj, const char *where,
                        const member *members, size_t n)
{
    const char *key;
    json_t *v;

    if (!json_is_object(obj))
        return invalid_type(p, where, "an object", obj);
    json_object_foreach((json_t *)obj, key, v) {
        const member *m = NULL;
        for (size_t i = 0; i < n && m == NULL; i++)
            if (strcmp(members[i].key, key) == 0)
                m = &members[i];
        if (m == NULL)
            return unknown_key(p, where, key, members, n);

        char child[WHERE_MAX];
        member_where(child, where, key);
        int rc = m->read(p, v, child);
        if (rc < 0)
            return rc;
    }
    return JPT_OK;
}

/* One of two words: *first is whether it is the first. */
static int read_choice(jpt_policy *p, const json_t *v, const char *where,
                       const char *one, const char *other, bool *first)
{
    const char *s = json_string_value(v);

    if (s != NULL && strcmp(s, one) == 0)
        *first = true;
    else if (s != NULL && strcmp(s, other) == 0)
        *first = false;
    else if (s != NULL)
        return jpt__err(&p->err, JPT_ERR_INVALID, "%s: expected \"%s\" or \"%s\", got \"%.80s\"",
                        where, one, other, s);
    else
        return jpt__err(&p->err, JPT_ERR_INVALID, "%s: expected \"%s\" or \"%s\", got %s",
                        where, one, other, jpt__json_type_phrase(v));
    return JPT_OK;
}

/* The i-th element of an array of strings, or an error. */
static int string_at(jpt_policy *p, const json_t *array, size_t i, const char *where,
                     const char **out)
{
    const json_t *v = json_array_get(array, i);

    if ((*out = json_string_value(v)) == NULL)
        return jpt__err(&p->err, JPT_ERR_INVALID, "%s[%zu]: expected a string, got %s",
                        where, i, jpt__json_type_phrase(v));
    return JPT_OK;
}

/* ---- filesystem ------------------------------------------------------------------ */

/* One configured prefix, normalised, appended to `list` (which has room). */
static int add_prefix(jpt_policy *p, jpt__policy_prefixes *list, const char *s,
                      const char *where, size_t i)
{
    jpt__buf b = JPT__BUF_INIT;
    const char *why = NULL;
    int rc = JPT_OK;

    if (s[0] == '\0')
        why = "is empty (\".\" is the whole workspace)";
    else if ((rc = jpt__path_normalize(s, &b, &why)) == JPT_OK &&
             jpt__path_longest_name(b.data) > JPT__POLICY_NAME_MAX)
        why = "has a name longer than 255 bytes, which no file can have";
    if (why != NULL) {
        jpt__buf_free(&b);
        return jpt__err(&p->err, JPT_ERR_INVALID, "%s[%zu]: '%.80s' %s", where, i, s, why);
    }
    if (rc == JPT_OK && (list->paths[list->n] = jpt__buf_take(&b)) == NULL)
        rc = JPT_ERR_NOMEM;
    else if (rc == JPT_OK)
        list->n++;
    jpt__buf_free(&b);
    return rc;
}

static int read_prefixes(jpt_policy *p, const json_t *v, const char *where,
                         jpt__policy_prefixes *list)
{
    const char *s;

    if (!json_is_array(v))
        return invalid_type(p, where, "an array of paths", v);
    list->paths = jpt__calloc(json_array_size(v), sizeof(char *));
    if (list->paths == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < json_array_size(v); i++) {
        int rc = string_at(p, v, i, where, &s);
        if (rc == JPT_OK)
            rc = add_prefix(p, list, s, where, i);
        if (rc < 0)
            return rc;
    }
    return JPT_OK;
}

static int read_allow(jpt_policy *p, const json_t *v, const char *where)
{
    p->allow_configured = true;
    return read_prefixes(p, v, where, &p->allow);
}

static int read_writable(jpt_policy *p, const json_t *v, const char *where)
{
    if (json_is_boolean(v)) {
        p->writable_all = json_is_true(v);
        return JPT_OK;
    }
    if (!json_is_array(v))
        return invalid_type(p, where, "a boolean or an array of paths", v);
    return read_prefixes(p, v, where, &p->writable);
}

/* filesystem.deny, kept as written for reasons and folded for matching. */
static int read_deny(jpt_policy *p, const json_t *v, const char *where)
{
    int rc = read_prefixes(p, v, where, &p->deny);

    if (rc == JPT_OK && (p->deny_folded.paths = jpt__calloc(p->deny.n, sizeof(char *))) == NULL)
        rc = JPT_ERR_NOMEM;
    for (size_t i = 0; rc == JPT_OK && i < p->deny.n; i++) {
        jpt__buf b = JPT__BUF_INIT;
        const char *path = p->deny.paths[i];
        if ((rc = jpt__fold(path, strlen(path), &b)) == JPT_OK &&
            (p->deny_folded.paths[i] = jpt__buf_take(&b)) != NULL)
            p->deny_folded.n++;
        else
            rc = JPT_ERR_NOMEM;
        jpt__buf_free(&b);
    }
    return rc;
}

static int read_hardlinks(jpt_policy *p, const json_t *v, const char *where)
{
    return read_choice(p, v, where, "allow", "deny", &p->hardlinks);
}

/* filesystem.git: whether a write may make or change a git repository
 * (vfs.h; issue 15 §2): "protected" unless the host says otherwise. */
static int read_git(jpt_policy *p, const json_t *v, const char *where)
{
    return read_choice(p, v, where, "writable", "protected", &p->git_writable);
}

static const member filesystem_members[] = {
    {"allow", read_allow},
    {"writable", read_writable},
    {"deny", read_deny},
    {"hardlinks", read_hardlinks},
    {"git", read_git},
};

static int read_filesystem(jpt_policy *p, const json_t *v, const char *where)
{
    return read_members(p, v, where, filesystem_members,
                        sizeof(filesystem_members) / sizeof(filesystem_members[0]));
}

/* ---- sensitive paths ------------------------------------------------------------ */

static int read_sensitive_paths(jpt_policy *p, const json_t *v, const char *where)
{
    const char *s, *why = NULL;

    if (!json_is_array(v))
        return invalid_type(p, where, "an array of patterns", v);
    p->patterns = jpt__calloc(json_array_size(v), sizeof(*p->patterns));
    if (p->patterns == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < json_array_size(v); i++) {
        int rc = string_at(p, v, i, where, &s);
        if (rc == JPT_OK)
            rc = jpt__pattern_compile(s, &p->patterns[p->n_patterns], &why);
        if (rc == JPT_ERR_INVALID && why != NULL)
            return jpt__err(&p->err, rc, "%s[%zu]: '%.80s' %s", where, i, s, why);
        if (rc < 0)
            return rc;
        p->n_patterns++;
    }
    return JPT_OK;
}

static int read_sensitive(jpt_policy *p, const json_t *v, const char *where)
{
    bool deny = true;
    int rc = read_choice(p, v, where, "deny", "ask", &deny);

    p->sensitive_verdict = deny ? JPT_VERDICT_DENY : JPT_VERDICT_ASK;
    return rc;
}

static int read_uncovered(jpt_policy *p, const json_t *v, const char *where)
{
    bool ask = true;
    int rc = read_choice(p, v, where, "ask", "deny", &ask);

    p->uncovered_verdict = ask ? JPT_VERDICT_ASK : JPT_VERDICT_DENY;
    return rc;
}

/* ---- network and commands ----------------------------------------------------- */

/* A copy of the strings of `list` (checked), the first `n` of them; on
 * failure the slots not copied are NULL. */
static int copy_strings(const json_t *list, size_t n, char ***out)
{
    if ((*out = jpt__calloc(n > 0 ? n : 1, sizeof(char *))) == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (((*out)[i] = jpt__strdup(json_string_value(json_array_get(list, i)))) == NULL)
            return JPT_ERR_NOMEM;
    return JPT_OK;
}

/* POSIX: "names … consist solely of uppercase letters, digits, and the
 * underscore … and do not begin with a digit"; lowercase is allowed too. */
bool jpt__policy_env_name(const char *s)
{
    if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (; *s != '\0'; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static int read_envs(jpt_policy *p, const json_t *v, const char *where)
{
    const char *s;

    if (!json_is_array(v))
        return invalid_type(p, where, "an array of variable names", v);
    for (size_t i = 0; i < json_array_size(v); i++) {
        int rc = string_at(p, v, i, where, &s);
        if (rc < 0)
            return rc;
        if (!jpt__policy_env_name(s) || strlen(s) > JPT__POLICY_NAME_MAX)
            return jpt__err(&p->err, JPT_ERR_INVALID,
                            "%s[%zu]: '%.80s' is not an environment variable name "
                            "(letters, digits and '_', not starting with a digit)",
                            where, i, s);
    }
    return JPT_OK;
}

/* network.envs: the variables that string entries of network.allow carry. */
static int read_network_envs(jpt_policy *p, const json_t *v, const char *where)
{
    int rc = read_envs(p, v, where);

    if (rc < 0)
        return rc;
    if ((p->envs = jpt__calloc(json_array_size(v), sizeof(char *))) == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < json_array_size(v); i++) {
        if ((p->envs[i] = jpt__strdup(json_string_value(json_array_get(v, i)))) == NULL)
            return JPT_ERR_NOMEM;
        p->n_envs++;
    }
    return JPT_OK;
}

/* One network.allow entry, appended to p->urls (which has room). D11
 * ("http.get") with RFD 016's NetworkSandbox: "Allowed outbound URL
 * prefixes … The prefix implicitly restricts protocol and domain". */
static int add_url(jpt_policy *p, const char *s, const char *where, size_t i)
{
    jpt__policy_url *u = &p->urls[p->n_urls];
    const char *why = NULL, *curl_why = NULL;
    int rc = jpt__policy_url_parse(s, u, &curl_why);

    if (rc == JPT_ERR_NOMEM)
        return rc;
    if (rc < 0 && strncasecmp(s, "http://", 7) != 0 && strncasecmp(s, "https://", 8) != 0)
        return jpt__err(&p->err, JPT_ERR_INVALID, "%s[%zu]: '%.80s' is not an http:// or "
                        "https:// URL", where, i, s);
    if (rc < 0)
        return jpt__err(&p->err, JPT_ERR_INVALID, "%s[%zu]: '%.80s' is not a valid URL (%s)",
                        where, i, s, curl_why);
    p->n_urls++;
    if (!jpt__policy_url_is_web(u))
        why = "is not an http:// or https:// URL";
    else if (u->userinfo)
        why = "has user information: an allowed prefix names a host and a path";
    else if (strchr(s, '?') != NULL)
        why = "has a query: an allowed prefix names a host and a path";
    else if (strchr(s, '#') != NULL)
        why = "has a fragment: an allowed prefix names a host and a path";
    if (why != NULL)
        return jpt__err(&p->err, JPT_ERR_INVALID, "%s[%zu]: '%.80s' %s", where, i, s, why);
    jpt__free(u->text);
    return (u->text = jpt__strdup(s)) != NULL ? JPT_OK : JPT_ERR_NOMEM;
}

/* An entry written as an object (vfs.h): {"url", "envs", "private"}. Its
 * envs are its own, network.envs is not added to them. */
static int add_url_object(jpt_policy *p, const json_t *o, const char *where, size_t i)
{
    static const char known[] = "url, envs, private";
    char entry[WHERE_MAX], envs_where[WHERE_MAX + 16];
    const char *key;
    json_t *v;

    snprintf(entry, sizeof(entry), "%s[%zu]", where, i);
    json_object_foreach((json_t *)o, key, v) {
        if (strcmp(key, "url") != 0 && strcmp(key, "envs") != 0 && strcmp(key, "private") != 0)
            return jpt__err(&p->err, JPT_ERR_INVALID, "%s: unknown key '%.80s' (known: %s)",
                            entry, key, known);
    }
    const json_t *url = json_object_get(o, "url"), *envs = json_object_get(o, "envs");
    const json_t *private_ok = json_object_get(o, "private");
    if (url == NULL)
        return jpt__err(&p->err, JPT_ERR_INVALID, "%s: 'url' is required", entry);
    if (!json_is_string(url)) {
        snprintf(envs_where, sizeof(envs_where), "%s.url", entry);
        return invalid_type(p, envs_where, "a URL prefix", url);
    }
    if (private_ok != NULL && !json_is_boolean(private_ok)) {
        snprintf(envs_where, sizeof(envs_where), "%s.private", entry);
        return invalid_type(p, envs_where, "a boolean", private_ok);
    }
    snprintf(envs_where, sizeof(envs_where), "%s.envs", entry);
    int rc = envs != NULL ? read_envs(p, envs, envs_where) : JPT_OK;
    if (rc == JPT_OK)
        rc = add_url(p, json_string_value(url), where, i);
    if (rc < 0)
        return rc;
    jpt__policy_url *u = &p->urls[p->n_urls - 1];
    u->global_envs = false;
    u->private_ok = json_is_true(private_ok);
    if (envs == NULL)
        return JPT_OK;
    u->n_envs = json_array_size(envs); /* what was copied is freed on failure */
    return copy_strings(envs, u->n_envs, &u->envs);
}

/* network.allow: URL prefixes, or objects that also name the variables a
 * URL under them carries. A string entry carries network.envs, as before
 * entries could name their own. */
static int read_network_allow(jpt_policy *p, const json_t *v, const char *where)
{
    if (!json_is_array(v))
        return invalid_type(p, where, "an array of URL prefixes", v);
    if ((p->urls = jpt__calloc(json_array_size(v), sizeof(*p->urls))) == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *entry = json_array_get(v, i);
        int rc;
        if (json_is_object(entry))
            rc = add_url_object(p, entry, where, i);
        else if (json_is_string(entry)) {
            rc = add_url(p, json_string_value(entry), where, i);
            if (rc == JPT_OK)
                p->urls[p->n_urls - 1].global_envs = true;
        } else
            rc = jpt__err(&p->err, JPT_ERR_INVALID,
                          "%s[%zu]: expected a URL prefix or an object {\"url\", \"envs\", "
                          "\"private\"}, got %s",
                          where, i, jpt__json_type_phrase(entry));
        if (rc < 0)
            return rc;
    }
    return JPT_OK;
}

/* An integer from `min` to `max`. */
static int read_integer(jpt_policy *p, const json_t *v, const char *where, json_int_t min,
                        json_int_t max, json_int_t *out)
{
    if (!json_is_integer(v))
        return jpt__err(&p->err, JPT_ERR_INVALID,
                        "%s: expected an integer from %" JSON_INTEGER_FORMAT
                        " to %" JSON_INTEGER_FORMAT ", got %s",
                        where, min, max, jpt__json_type_phrase(v));
    if (json_integer_value(v) < min || json_integer_value(v) > max)
        return jpt__err(&p->err, JPT_ERR_INVALID,
                        "%s: expected an integer from %" JSON_INTEGER_FORMAT
                        " to %" JSON_INTEGER_FORMAT ", got %" JSON_INTEGER_FORMAT,
                        where, min, max, json_integer_value(v));
    *out = json_integer_value(v);
    return JPT_OK;
}

static int read_redirects(jpt_policy *p, const json_t *v, const char *where)
{
    json_int_t n = 0;
    int rc = read_integer(p, v, where, 0, JPT__NETWORK_MAX_REDIRECTS, &n);

    p->redirects = (int)n;
    return rc;
}

static int read_network_timeout(jpt_policy *p, const json_t *v, const char *where)
{
    json_int_t n = 0;
    int rc = read_integer(p, v, where, 1, JPT__NETWORK_MAX_TIMEOUT_MS, &n);

    p->http_timeout_ms = (int)n;
    return rc;
}

static int read_max_response(jpt_policy *p, const json_t *v, const char *where)
{
    json_int_t n = 0;
    int rc = read_integer(p, v, where, 1, JPT_VFS_CONTENT_LIMIT, &n);

    p->max_response = (size_t)n;
    return rc;
}

static const member network_members[] = {
    {"allow", read_network_allow},
    {"envs", read_network_envs},
    {"redirects", read_redirects},
    {"timeout_ms", read_network_timeout},
    {"max_response_bytes", read_max_response},
};

static int read_network(jpt_policy *p, const json_t *v, const char *where)
{
    return read_members(p, v, where, network_members,
                        sizeof(network_members) / sizeof(network_members[0]));
}

/* The rule being read: commands.<program> fills the last one. */
static jpt__policy_command *current_command(jpt_policy *p)
{
    return &p->commands[p->n_commands - 1];
}

/* RFD 016's CommandRule.args: "Each entry is a sequence of values that
 * must match the start of the actual arguments. `**` as the last element
 * allows any remaining arguments. If absent, any arguments are permitted."
 * An entry without "**" is the whole argument list, or "**" would add
 * nothing (vfs.h). */
static int read_args(jpt_policy *p, const json_t *v, const char *where)
{
    jpt__policy_command *cmd = current_command(p);
    const char *s;
    char entry[WHERE_MAX];

    if (!json_is_array(v) || json_array_size(v) == 0)
        return jpt__err(&p->err, JPT_ERR_INVALID,
                        "%s: expected a non-empty array of argument lists, got %s "
                        "(leave args out to allow any arguments)",
                        where, json_is_array(v) ? "an empty array" : jpt__json_type_phrase(v));
    if ((cmd->args = jpt__calloc(json_array_size(v), sizeof(*cmd->args))) == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *list = json_array_get(v, i);
        snprintf(entry, sizeof(entry), "%s[%zu]", where, i);
        if (!json_is_array(list))
            return invalid_type(p, entry, "an array of strings", list);
        size_t n = json_array_size(list);
        for (size_t j = 0; j < n; j++) {
            int rc = string_at(p, list, j, entry, &s);
            if (rc < 0)
                return rc;
            if (strcmp(s, "**") == 0 && j + 1 < n)
                return jpt__err(&p->err, JPT_ERR_INVALID,
                                "%s[%zu]: '**' may only be the last element", entry, j);
        }
        jpt__policy_args *a = &cmd->args[cmd->n_args++];
        a->rest = n > 0 && strcmp(json_string_value(json_array_get(list, n - 1)), "**") == 0;
        a->n = a->rest ? n - 1 : n;
        if (copy_strings(list, a->n, &a->words) < 0)
            return JPT_ERR_NOMEM;
    }
    return JPT_OK;
}

/* glibc's list of variables it drops for set-user-ID programs
 * (sysdeps/generic/unsecvars.h), less TMPDIR, which only names a
 * directory, and the macOS loader's. */
bool jpt__policy_env_is_loader(const char *name)
{
    static const char *const names[] = {
        "GCONV_PATH",  "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES",      "LOCALDOMAIN",
        "LOCPATH",     "MALLOC_TRACE", "NIS_PATH",      "NLSPATH",          "RESOLV_HOST_CONF",
        "RES_OPTIONS", "TZDIR",
    };

    if (strncmp(name, "LD_", 3) == 0 || strncmp(name, "DYLD_", 5) == 0)
        return true;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

/* The variables forwarded to the program: names, never a loader's. */
static int read_command_envs(jpt_policy *p, const json_t *v, const char *where)
{
    jpt__policy_command *cmd = current_command(p);
    int rc = read_envs(p, v, where);

    for (size_t i = 0; rc == JPT_OK && i < json_array_size(v); i++) {
        const char *name = json_string_value(json_array_get(v, i));
        if (jpt__policy_env_is_loader(name))
            return jpt__err(&p->err, JPT_ERR_INVALID,
                            "%s[%zu]: '%s' is read by the dynamic loader or the C library "
                            "to load code or files, and is never forwarded",
                            where, i, name);
        if (jpt__policy_is_git(cmd->program) && jpt__policy_env_is_git(name))
            return jpt__err(&p->err, JPT_ERR_INVALID,
                            "%s[%zu]: '%s' is set by jptool for git (it keeps git's "
                            "configuration from running programs), and is never forwarded",
                            where, i, name);
    }
    if (rc == JPT_OK) {
        cmd->n_envs = json_array_size(v); /* what was copied is freed on failure */
        rc = copy_strings(v, cmd->n_envs, &cmd->envs);
    }
    return rc;
}

/* An integer from `min` to `max`. */
static int read_command_timeout(jpt_policy *p, const json_t *v, const char *where)
{
    json_int_t ms = 0;
    int rc = read_integer(p, v, where, 1, JPT_VFS_PROCESS_TIMEOUT_MAX_MS, &ms);

    current_command(p)->timeout_ms = (int)ms;
    return rc;
}

static int read_output_limit(jpt_policy *p, const json_t *v, const char *where)
{
    json_int_t bytes = 0;
    int rc = read_integer(p, v, where, 64, JPT_VFS_PROCESS_OUTPUT_MAX, &bytes);

    current_command(p)->output_limit = (size_t)bytes;
    return rc;
}

static int read_process_limit(jpt_policy *p, const json_t *v, const char *where)
{
    json_int_t n = 0;
    int rc = read_integer(p, v, where, 2, JPT__SANDBOX_PROCESS_LIMIT_MAX, &n);

    current_command(p)->process_limit = (unsigned)n;
    return rc;
}

static const member command_members[] = {
    {"args", read_args},
    {"envs", read_command_envs},
    {"timeout_ms", read_command_timeout},
    {"output_limit", read_output_limit},
    {"process_limit", read_process_limit},
};

static int read_commands(jpt_policy *p, const json_t *v, const char *where)
{
    const char *program;
    json_t *rule;
    char child[WHERE_MAX];

    if (!json_is_object(v))
        return invalid_type(p, where, "an object", v);
    if ((p->commands = jpt__calloc(json_object_size(v) + 1, sizeof(*p->commands))) == NULL)
        return JPT_ERR_NOMEM;
    json_object_foreach((json_t *)v, program, rule) {
        if (program[0] == '\0')
            return jpt__err(&p->err, JPT_ERR_INVALID, "%s: a program name is empty", where);
        member_where(child, where, program);
        /* The child's directory is the workspace, but a program is found
         * from the host's: a relative path would name a file of either. */
        if (program[0] != '/' && strchr(program, '/') != NULL)
            return jpt__err(&p->err, JPT_ERR_INVALID,
                            "%s: a relative path: name a program found in PATH, or give "
                            "its absolute path",
                            child);
        jpt__policy_command *cmd = &p->commands[p->n_commands++];
        cmd->timeout_ms = JPT_VFS_PROCESS_TIMEOUT_MS;
        cmd->output_limit = JPT_VFS_PROCESS_OUTPUT_LIMIT;
        if ((cmd->program = jpt__strdup(program)) == NULL)
            return JPT_ERR_NOMEM;
        int rc = read_members(p, rule, child, command_members,
                              sizeof(command_members) / sizeof(command_members[0]));
        if (rc < 0)
            return rc;
    }
    return JPT_OK;
}

/* ---- the section ---------------------------------------------------------------- */

static const member sandbox_members[] = {
    {"filesystem", read_filesystem},
    {"network", read_network},
    {"commands", read_commands},
    {"sensitive_paths", read_sensitive_paths},
    {"sensitive", read_sensitive},
    {"uncovered", read_uncovered},
};

int jpt__policy_configure(jpt_policy *p, const json_t *sandbox)
{
    int rc = JPT_OK;

    p->sensitive_verdict = JPT_VERDICT_DENY;
    p->uncovered_verdict = JPT_VERDICT_ASK;
    p->http_timeout_ms = JPT__NETWORK_TIMEOUT_MS;
    p->max_response = JPT__NETWORK_MAX_RESPONSE;
    if (sandbox != NULL)
        rc = read_members(p, sandbox, "sandbox", sandbox_members,
                          sizeof(sandbox_members) / sizeof(sandbox_members[0]));
    /* D11: "A VFS tool with no sandbox section gets the default policy:
     * workspace read-only". */
    if (rc == JPT_OK && !p->allow_configured) {
        if ((p->allow.paths = jpt__calloc(1, sizeof(char *))) == NULL ||
            (p->allow.paths[0] = jpt__strdup(".")) == NULL)
            return JPT_ERR_NOMEM;
        p->allow.n = 1;
    }
    return rc;
}

static void free_prefixes(jpt__policy_prefixes *list)
{
    for (size_t i = 0; i < list->n; i++)
        jpt__free(list->paths[i]);
    jpt__free(list->paths);
    list->paths = NULL;
    list->n = 0;
}

void jpt__policy_clear(jpt_policy *p)
{
    free_prefixes(&p->allow);
    free_prefixes(&p->writable);
    free_prefixes(&p->deny);
    free_prefixes(&p->deny_folded);
    for (size_t i = 0; i < p->n_patterns; i++)
        jpt__free(p->patterns[i].storage);
    jpt__free(p->patterns);
    p->patterns = NULL;
    p->n_patterns = 0;
    for (size_t i = 0; i < p->n_commands; i++) {
        jpt__policy_command *cmd = &p->commands[i];
        for (size_t j = 0; j < cmd->n_args; j++) {
            for (size_t k = 0; cmd->args[j].words != NULL && k < cmd->args[j].n; k++)
                jpt__free(cmd->args[j].words[k]);
            jpt__free(cmd->args[j].words);
        }
        jpt__free(cmd->args);
        for (size_t j = 0; cmd->envs != NULL && j < cmd->n_envs; j++)
            jpt__free(cmd->envs[j]);
        jpt__free(cmd->envs);
        jpt__free(cmd->program);
    }
    jpt__free(p->commands);
    p->commands = NULL;
    p->n_commands = 0;
    for (size_t i = 0; i < p->n_urls; i++) {
        for (size_t j = 0; p->urls[i].envs != NULL && j < p->urls[i].n_envs; j++)
            jpt__free(p->urls[i].envs[j]);
        jpt__free(p->urls[i].envs);
        jpt__policy_url_clear(&p->urls[i]);
    }
    jpt__free(p->urls);
    p->urls = NULL;
    p->n_urls = 0;
    for (size_t i = 0; i < p->n_envs; i++)
        jpt__free(p->envs[i]);
    jpt__free(p->envs);
    p->envs = NULL;
    p->n_envs = 0;
}
