/* One run of a tool process (stdio or vfs): its argv from the command
 * template (JP's convention: {{tool}}, {{context}}, {{arguments.NAME}};
 * scalars as they are, composites as JSON), its environment from the
 * tool's policy, and the OS sandbox it runs in. Numbers reach the tool as
 * the model wrote them: integers as they are, reals in the shortest form
 * that reads back as the same double. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/base.h"

extern char **environ;

/* The core set a stdio tool gets by default (registry.h, "env"): what
 * programs need to run, find their user and speak the user's language,
 * and nothing that carries a credential. Issue 15 §5: a filter on names
 * cannot win (MYSQL_PWD, DATABASE_URL, SENTRY_DSN, SSH_AUTH_SOCK pass
 * any list of words), so the host's environment is passed only when the
 * definition asks for it. Every LC_* variable is passed too. A vfs tool
 * gets PATH alone. */
static const char *const core_env[] = {"PATH", "HOME", "USER", "LOGNAME", "LANG",
                                       "TERM", "TZ",   "TMPDIR", "SHELL"};

/* What an inherited name must not contain (in any case) to be passed
 * without env.allow naming it, with "inherit": true: the host's API keys
 * and passwords that a name gives away. */
static const char *const secret_words[] = {"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"};

/* Finds the next placeholder in `s`: sets start and end around "{{…}}",
 * and name and name_len to its trimmed inside. Returns false when there is
 * none; end is NULL (and the name empty) for an unterminated "{{". */
static bool next_placeholder(const char *s, const char **start, const char **end,
                             const char **name, size_t *name_len)
{
    *start = strstr(s, "{{");
    if (*start == NULL)
        return false;
    *name = *start + 2;
    *name_len = 0;
    *end = strstr(*start + 2, "}}");
    if (*end == NULL)
        return true;
    const char *a = *start + 2, *b = *end;
    while (a < b && *a == ' ')
        a++;
    while (b > a && b[-1] == ' ')
        b--;
    *name = a;
    *name_len = (size_t)(b - a);
    *end += 2;
    return true;
}

static bool name_is(const char *name, size_t n, const char *what)
{
    return n == strlen(what) && memcmp(name, what, n) == 0;
}

static bool is_argument(const char *name, size_t n)
{
    return n > 10 && memcmp(name, "arguments.", 10) == 0;
}

int jpt__command_check_template(const char *tmpl, char *why, size_t n)
{
    const char *start, *end, *name;
    size_t len;

    for (const char *p = tmpl; next_placeholder(p, &start, &end, &name, &len); p = end) {
        if (end == NULL) {
            snprintf(why, n, "unterminated '{{' in \"%s\"", tmpl);
            return JPT_ERR_INVALID;
        }
        if (!name_is(name, len, "tool") && !name_is(name, len, "context") &&
            !is_argument(name, len)) {
            snprintf(why, n, "unknown placeholder '{{%.*s}}' (expected {{tool}}, "
                             "{{context}} or {{arguments.NAME}})",
                     (int)len, name);
            return JPT_ERR_INVALID;
        }
    }
    return JPT_OK;
}

/* arguments.a.b → arguments["a"]["b"], or NULL. */
static const json_t *lookup_argument(const json_t *arguments, const char *path, size_t n)
{
    const json_t *v = arguments;
    char key[256];

    while (n > 0 && v != NULL) {
        size_t k = 0;
        while (k < n && path[k] != '.')
            k++;
        if (k >= sizeof(key))
            return NULL;
        memcpy(key, path, k);
        key[k] = '\0';
        v = json_object_get(v, key);
        path += k;
        n -= k;
        if (n > 0) {
            path++;
            n--;
        }
    }
    return v;
}

/* ---- Numbers and JSON ----------------------------------------------------------- */

/* The significant digits of |d| printed with `precision` of them, and the
 * decimal exponent of the first (|d| ~ D.DDD × 10^exponent). Only digits are
 * taken from printf's output, so the locale's decimal point does not
 * matter. */
static void decimal_digits(double d, int precision, char digits[static 18], int *exponent)
{
    char text[48];
    size_t n = 0;
    const char *p = text;

    snprintf(text, sizeof(text), "%.*e", precision - 1, fabs(d));
    for (; *p != 'e' && *p != '\0'; p++)
        if (*p >= '0' && *p <= '9' && n < 17)
            digits[n++] = *p;
    digits[n] = '\0';
    *exponent = *p == 'e' ? atoi(p + 1) : 0;
}

/* Whether D.DDDe<exponent> reads back as |d|. jansson reads it, as it
 * reads the model's JSON, in any locale; rounded up past the largest
 * double, it does not read at all. */
static int reads_back(double d, const char *digits, int exponent, bool *same)
{
    char text[48];
    int n = snprintf(text, sizeof(text), "%c%s%se%d", digits[0], digits[1] != '\0' ? "." : "",
                     digits + 1, exponent);
    json_error_t jerr;
    json_t *v;
    int rc = jpt__json_load(text, (size_t)n, JSON_DECODE_ANY, &v, &jerr);

    *same = rc == JPT_OK && json_number_value(v) == fabs(d);
    if (rc == JPT_OK)
        json_decref(v);
    return rc == JPT_ERR_NOMEM ? rc : JPT_OK;
}

/* A real in the shortest form that reads back as the same double, laid out
 * as Python's repr() does: positional for exponents from -4 to 15 with at
 * least one fractional digit ("0.2", "1.0", "0.0001", "-0.0"), else
 * scientific ("1e+22", "1.5e-07"). */
static int append_real(jpt__buf *b, double d)
{
    char digits[18];
    int exponent = 0, precision = 0, rc = JPT_OK;
    bool same = false;

    /* Seventeen significant digits always read back. */
    while (rc == JPT_OK && !same && ++precision <= 17) {
        decimal_digits(d, precision, digits, &exponent);
        rc = precision < 17 ? reads_back(d, digits, exponent, &same) : JPT_OK;
    }
    if (rc < 0 || (signbit(d) && (rc = jpt__buf_putc(b, '-')) < 0))
        return rc;

    int n = (int)strlen(digits);
    if (exponent < -4 || exponent >= 16)
        return jpt__buf_printf(b, "%c%s%se%c%02d", digits[0], n > 1 ? "." : "", digits + 1,
                               exponent < 0 ? '-' : '+', abs(exponent));
    if (exponent < 0)
        return jpt__buf_printf(b, "0.%.*s%s", -exponent - 1, "000", digits);
    if (n <= exponent + 1)
        return jpt__buf_printf(b, "%s%.*s.0", digits, exponent + 1 - n, "000000000000000");
    return jpt__buf_printf(b, "%.*s.%s", exponent + 1, digits, digits + exponent + 1);
}

static int append_json(jpt__buf *b, const json_t *v);

static int append_array(jpt__buf *b, const json_t *v)
{
    size_t i;
    json_t *item;
    int rc = jpt__buf_putc(b, '[');

    json_array_foreach(v, i, item) {
        if (rc == JPT_OK && i > 0)
            rc = jpt__buf_putc(b, ',');
        if (rc == JPT_OK)
            rc = append_json(b, item);
    }
    return rc == JPT_OK ? jpt__buf_putc(b, ']') : rc;
}

static int append_object(jpt__buf *b, const json_t *v)
{
    const char *key;
    size_t key_len;
    json_t *member;
    bool first = true;
    int rc = jpt__buf_putc(b, '{');

    json_object_keylen_foreach((json_t *)v, key, key_len, member) {
        json_t *name = json_stringn_nocheck(key, key_len);
        if (rc == JPT_OK && !first)
            rc = jpt__buf_putc(b, ',');
        if (rc == JPT_OK)
            rc = name != NULL ? jpt__json_dump_buf(name, JSON_ENCODE_ANY, b) : JPT_ERR_NOMEM;
        if (rc == JPT_OK)
            rc = jpt__buf_putc(b, ':');
        if (rc == JPT_OK)
            rc = append_json(b, member);
        json_decref(name);
        first = false;
    }
    return rc == JPT_OK ? jpt__buf_putc(b, '}') : rc;
}

/* Compact JSON as jansson writes it, but for reals: jansson gives them 17
 * significant digits, which turns the model's 0.2 into 0.20000000000000001. */
static int append_json(jpt__buf *b, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_REAL:
        return append_real(b, json_real_value(v));
    case JSON_ARRAY:
        return append_array(b, v);
    case JSON_OBJECT:
        return append_object(b, v);
    default:
        return jpt__json_dump_buf(v, JSON_COMPACT | JSON_ENCODE_ANY, b);
    }
}

static int append_value(jpt__buf *b, const json_t *v)
{
    if (json_is_string(v))
        return jpt__buf_append(b, json_string_value(v), json_string_length(v));
    return append_json(b, v);
}

static json_t *tool_json(const jpt__tool *t, const json_t *arguments, const json_t *answers)
{
    return json_pack("{s:s, s:O, s:O, s:O}", "name", t->name, "arguments", arguments,
                     "answers", answers, "options", t->options);
}

/* Expands one template into `out`. A missing argument fills `why`. */
static int expand(const char *tmpl, const json_t *tool, const json_t *context,
                  const json_t *arguments, jpt__buf *out, jpt__buf *why)
{
    const char *start, *end, *name, *p = tmpl;
    size_t len;
    int rc = JPT_OK;

    /* Loaded templates were checked (jpt__command_check_template): every
     * "{{" is closed; an unclosed one would stay as it is. */
    while (rc == JPT_OK && next_placeholder(p, &start, &end, &name, &len) && end != NULL) {
        rc = jpt__buf_append(out, p, (size_t)(start - p));
        if (rc < 0)
            break;
        if (name_is(name, len, "tool"))
            rc = append_json(out, tool);
        else if (name_is(name, len, "context"))
            rc = append_json(out, context);
        else {
            const json_t *v = lookup_argument(arguments, name + 10, len - 10);
            if (v == NULL) {
                if (jpt__buf_printf(why, "the argument `%.*s` is required by the "
                                         "tool's command but was not given",
                                    (int)(len - 10), name + 10) < 0)
                    return JPT_ERR_NOMEM;
                return JPT_ERR_INVALID;
            }
            /* A C string ends at its first NUL (state.h: the one rule). */
            if (json_is_string(v) && memchr(json_string_value(v), '\0', json_string_length(v))) {
                if (jpt__buf_printf(why, "the argument `%.*s` holds a NUL character (U+0000), "
                                         "which a command line cannot carry",
                                    (int)(len - 10), name + 10) < 0)
                    return JPT_ERR_NOMEM;
                return JPT_ERR_INVALID;
            }
            rc = append_value(out, v);
        }
        p = end;
    }
    if (rc == JPT_OK)
        rc = jpt__buf_puts(out, p);
    return rc;
}

/* ---- Environment --------------------------------------------------------------- */

typedef struct envv {
    char **v;
    size_t n, cap;
} envv;

static size_t name_length(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

/* Sets NAME=value, replacing an entry of the same name. */
static int env_put(envv *e, const char *name, size_t name_len, const char *value)
{
    jpt__buf entry = JPT__BUF_INIT;

    if (jpt__buf_append(&entry, name, name_len) < 0 || jpt__buf_putc(&entry, '=') < 0 ||
        jpt__buf_puts(&entry, value) < 0) {
        jpt__buf_free(&entry);
        return JPT_ERR_NOMEM;
    }
    for (size_t i = 0; i < e->n; i++)
        if (name_length(e->v[i]) == name_len && memcmp(e->v[i], name, name_len) == 0) {
            jpt__free(e->v[i]);
            e->v[i] = entry.data;
            return JPT_OK;
        }
    /* The entry and the terminating NULL. */
    char **v = jpt__array_reserve(e->v, &e->cap, e->n + 2, sizeof(*v), 32);
    if (v == NULL) {
        jpt__buf_free(&entry);
        return JPT_ERR_NOMEM;
    }
    e->v = v;
    e->v[e->n++] = entry.data;
    e->v[e->n] = NULL;
    return JPT_OK;
}

static int env_pass(envv *e, const char *name)
{
    size_t n = strlen(name);

    for (char **p = environ; p != NULL && *p != NULL; p++)
        if (name_length(*p) == n && memcmp(*p, name, n) == 0)
            return env_put(e, name, n, *p + n + 1);
    return JPT_OK;
}

static bool looks_secret(const char *name, size_t n)
{
    for (size_t w = 0; w < sizeof(secret_words) / sizeof(secret_words[0]); w++) {
        size_t len = strlen(secret_words[w]);
        for (size_t i = 0; i + len <= n; i++) {
            size_t k = 0;
            while (k < len && toupper((unsigned char)name[i + k]) == secret_words[w][k])
                k++;
            if (k == len)
                return true;
        }
    }
    return false;
}

static bool allowed(const jpt__command_def *d, const char *name, size_t n)
{
    size_t i;
    const json_t *v;

    json_array_foreach(d->env_allow, i, v) {
        if (json_string_length(v) == n && memcmp(json_string_value(v), name, n) == 0)
            return true;
    }
    return false;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        jpt__free(v[i]);
    jpt__free(v);
}

/* The core set, and every LC_* variable the host has. */
static int pass_core(envv *e)
{
    int rc = JPT_OK;

    for (size_t i = 0; rc == JPT_OK && i < sizeof(core_env) / sizeof(core_env[0]); i++)
        rc = env_pass(e, core_env[i]);
    for (char **p = environ; rc == JPT_OK && p != NULL && *p != NULL; p++)
        if (strncmp(*p, "LC_", 3) == 0 && strchr(*p, '=') != NULL)
            rc = env_put(e, *p, name_length(*p), *p + name_length(*p) + 1);
    return rc;
}

static int build_env(const jpt__command_def *d, char ***out)
{
    envv e = {NULL, 0, 0};
    int rc = JPT_OK;
    const char *name;
    const json_t *v;
    size_t i;

    if (d->env_inherit) {
        for (char **p = environ; rc == JPT_OK && p != NULL && *p != NULL; p++) {
            size_t n = name_length(*p);
            if (strchr(*p, '=') != NULL && (!looks_secret(*p, n) || allowed(d, *p, n)))
                rc = env_put(&e, *p, n, *p + n + 1);
        }
    } else {
        rc = d->env_vfs ? env_pass(&e, "PATH") : pass_core(&e);
        json_array_foreach(d->env_allow, i, v) if (rc == JPT_OK) rc =
            env_pass(&e, json_string_value(v));
    }
    json_object_foreach(d->env_set, name, v) if (rc == JPT_OK) rc =
        env_put(&e, name, strlen(name), json_string_value(v));
    /* A terminal the model reads should not draw colours and cursor moves. */
    if (rc == JPT_OK && d->pty)
        rc = env_put(&e, "TERM", 4, "dumb");
    if (rc == JPT_OK && e.v == NULL)
        rc = env_put(&e, "PATH", 4, JPT__DEFAULT_PATH);
    if (rc < 0) {
        strv_free(e.v);
        return rc;
    }
    *out = e.v;
    return JPT_OK;
}

/* ---- The OS sandbox ---------------------------------------------------------- */

void jpt__command_sandbox(const jpt_registry *r, const jpt__tool *t, const jpt__command_def *d,
                          jpt__sandbox_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    if (d == NULL)
        return;
    int mode = d->sandbox_mode != 0 ? d->sandbox_mode : r->sandbox_mode;
    if (d->sandbox_profile == 0 || mode == JPT_SANDBOX_OFF)
        return;
    spec->profile = d->sandbox_profile;
    spec->mode = mode;
    /* A stdio tool's to use; a VFS tool's that no grant may hold. */
    spec->workspace = r->root;
    spec->workspace_writable = d->sandbox_writable;
    spec->git_writable = d->sandbox_git_writable;
    spec->tool = t->name;
    spec->process_limit = d->sandbox_processes;
    /* As its spawn will have it (process.c), for the report. */
    spec->pid_namespace = jpt__contain_wants_pid_namespace(r->contain);
    spec->cache = r->sandbox_cache;
}

/* spec.read and spec.write from the tool's lists: one array, each list
 * NULL-terminated, pointing into the tool's JSON. */
static int sandbox_paths(const jpt__command_def *d, jpt__command *out)
{
    size_t nr = json_array_size(d->sandbox_read), nw = json_array_size(d->sandbox_write);
    const char **v;

    if (nr + nw == 0)
        return JPT_OK;
    if ((v = jpt__calloc(nr + nw + 2, sizeof(*v))) == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < nr; i++)
        v[i] = json_string_value(json_array_get(d->sandbox_read, i));
    for (size_t i = 0; i < nw; i++)
        v[nr + 1 + i] = json_string_value(json_array_get(d->sandbox_write, i));
    out->sandbox_paths = v;
    out->sandbox.read = v;
    out->sandbox.write = v + nr + 1;
    return JPT_OK;
}

/* ---- A run -------------------------------------------------------------------- */

int jpt__command_build(const jpt_registry *r, const jpt__tool *t, const jpt__command_def *d,
                       int action,
                       const json_t *arguments, const json_t *answers,
                       jpt__command *out, jpt__buf *why)
{
    size_t argc = json_array_size(d->command);
    json_t *tool = tool_json(t, arguments, answers);
    json_t *context = json_pack("{s:s, s:s}", "action",
                                action == JPT__ACTION_SPAWN ? "spawn" : "run", "root",
                                r->root);
    int rc = tool != NULL && context != NULL ? JPT_OK : JPT_ERR_NOMEM;

    memset(out, 0, sizeof(*out));
    if (rc == JPT_OK && (out->argv = jpt__calloc(argc + 1, sizeof(char *))) == NULL)
        rc = JPT_ERR_NOMEM;
    for (size_t i = 0; rc == JPT_OK && i < argc; i++) {
        jpt__buf arg = JPT__BUF_INIT;
        rc = expand(json_string_value(json_array_get(d->command, i)), tool, context,
                    arguments, &arg, why);
        if (rc == JPT_OK && (out->argv[i] = jpt__buf_take(&arg)) == NULL)
            rc = JPT_ERR_NOMEM;
        jpt__buf_free(&arg);
    }
    if (rc == JPT_OK && d->stdin_json) {
        jpt__buf text = JPT__BUF_INIT;
        if ((rc = append_json(&text, tool)) == JPT_OK &&
            (out->stdin_json = jpt__buf_take(&text)) == NULL)
            rc = JPT_ERR_NOMEM;
        jpt__buf_free(&text);
    }
    if (rc == JPT_OK)
        rc = build_env(d, &out->envp);
    if (rc == JPT_OK) {
        jpt__command_sandbox(r, t, d, &out->sandbox);
        if (out->sandbox.profile != 0)
            rc = sandbox_paths(d, out);
    }
    json_decref(tool);
    json_decref(context);
    if (rc < 0)
        jpt__command_free(out);
    return rc;
}

void jpt__command_def_free(jpt__command_def *d)
{
    json_decref(d->command);
    json_decref(d->env_allow);
    json_decref(d->env_set);
    json_decref(d->sandbox_read);
    json_decref(d->sandbox_write);
    memset(d, 0, sizeof(*d));
}

void jpt__command_free(jpt__command *c)
{
    strv_free(c->argv);
    strv_free(c->envp);
    jpt__free(c->stdin_json);
    jpt__free(c->sandbox_paths);
    memset(c, 0, sizeof(*c));
}

/* ---- Definitions ------------------------------------------------------------------ */

static int take_command(jpt__command_def *d, const json_t *cmd, char *why, size_t n)
{
    char reason[256];
    size_t i;
    const json_t *arg;

    if (cmd == NULL)
        return snprintf(why, n, "'command' is required for a stdio tool"), JPT_ERR_INVALID;
    if (!json_is_array(cmd) || json_array_size(cmd) == 0)
        return snprintf(why, n, "'command' must be a non-empty array of strings"),
               JPT_ERR_INVALID;
    json_array_foreach(cmd, i, arg) {
        if (!json_is_string(arg))
            return snprintf(why, n, "'command[%zu]' is %s, not a string", i,
                            jpt__json_type_phrase(arg)),
                   JPT_ERR_INVALID;
        if (jpt__command_check_template(json_string_value(arg), reason, sizeof(reason)) < 0)
            return snprintf(why, n, "'command[%zu]': %s", i, reason), JPT_ERR_INVALID;
    }
    if (json_string_length(json_array_get(cmd, 0)) == 0)
        return snprintf(why, n, "'command[0]' is empty"), JPT_ERR_INVALID;
    d->command = json_incref((json_t *)cmd);
    return JPT_OK;
}

static int take_env(jpt__command_def *d, const json_t *env, char *why, size_t n)
{
    const char *key, *name;
    const json_t *v, *value;
    size_t i;

    if (env == NULL)
        return JPT_OK;
    if (!json_is_object(env))
        return snprintf(why, n, "'env' must be an object"), JPT_ERR_INVALID;
    json_object_foreach((json_t *)env, key, v) {
        if (strcmp(key, "inherit") == 0) {
            if (!json_is_boolean(v))
                return snprintf(why, n, "'env.inherit' must be a boolean"), JPT_ERR_INVALID;
            d->env_inherit = json_is_true(v);
        } else if (strcmp(key, "allow") == 0) {
            if (!json_is_array(v))
                return snprintf(why, n, "'env.allow' must be an array of names"),
                       JPT_ERR_INVALID;
            json_array_foreach(v, i, value) if (!json_is_string(value)) return snprintf(
                why, n, "'env.allow[%zu]' is %s, not a string", i,
                jpt__json_type_phrase(value)),
                JPT_ERR_INVALID;
            d->env_allow = json_incref((json_t *)v);
        } else if (strcmp(key, "set") == 0) {
            if (!json_is_object(v))
                return snprintf(why, n, "'env.set' must be an object of strings"),
                       JPT_ERR_INVALID;
            json_object_foreach((json_t *)v, name, value) if (!json_is_string(value)) return snprintf(
                why, n, "'env.set.%s' is %s, not a string", name,
                jpt__json_type_phrase(value)),
                JPT_ERR_INVALID;
            d->env_set = json_incref((json_t *)v);
        } else
            return snprintf(why, n, "unknown field 'env.%s' (expected inherit, allow, set)",
                            key),
                   JPT_ERR_INVALID;
    }
    return JPT_OK;
}

/* os_sandbox.read or .write: absolute paths. */
static int take_paths(const json_t *v, const char *key, json_t **out, char *why, size_t n)
{
    size_t i;
    const json_t *path;

    if (!json_is_array(v))
        return snprintf(why, n, "'os_sandbox.%s' must be an array of absolute paths", key),
               JPT_ERR_INVALID;
    json_array_foreach(v, i, path) {
        if (!json_is_string(path))
            return snprintf(why, n, "'os_sandbox.%s[%zu]' is %s, not a string", key, i,
                            jpt__json_type_phrase(path)),
                   JPT_ERR_INVALID;
        if (json_string_value(path)[0] != '/' ||
            strlen(json_string_value(path)) != json_string_length(path))
            return snprintf(why, n, "'os_sandbox.%s[%zu]' \"%.80s\" is not an absolute path",
                            key, i, json_string_value(path)),
                   JPT_ERR_INVALID;
    }
    *out = json_incref((json_t *)v);
    return JPT_OK;
}

static int take_os_sandbox(jpt__command_def *d, const json_t *v, bool vfs, char *why, size_t n)
{
    const char *key;
    const json_t *member;
    int rc;

    if (v == NULL)
        return JPT_OK;
    if (!json_is_object(v))
        return snprintf(why, n, "'os_sandbox' must be an object"), JPT_ERR_INVALID;
    json_object_foreach((json_t *)v, key, member) {
        if (strcmp(key, "mode") == 0) {
            const char *mode = json_string_value(member);
            if (mode == NULL || (d->sandbox_mode = jpt__sandbox_mode_from_name(mode)) == 0)
                return snprintf(why, n, "'os_sandbox.mode' must be \"required\", "
                                        "\"best-effort\" or \"off\""),
                       JPT_ERR_INVALID;
        } else if (strcmp(key, "read") == 0) {
            if ((rc = take_paths(member, key, &d->sandbox_read, why, n)) < 0)
                return rc;
        } else if (strcmp(key, "process_limit") == 0) {
            json_int_t limit = json_integer_value(member);
            if (!json_is_integer(member) || limit < 2 || limit > JPT__SANDBOX_PROCESS_LIMIT_MAX)
                return snprintf(why, n, "'os_sandbox.process_limit' must be an integer from 2 "
                                        "to %d",
                                JPT__SANDBOX_PROCESS_LIMIT_MAX),
                       JPT_ERR_INVALID;
            d->sandbox_processes = (unsigned)limit;
        } else if (strcmp(key, "write") == 0) {
            if (vfs)
                return snprintf(why, n, "'os_sandbox.write' does not apply to a vfs tool: "
                                        "it writes through the protocol"),
                       JPT_ERR_INVALID;
            if ((rc = take_paths(member, key, &d->sandbox_write, why, n)) < 0)
                return rc;
        } else
            return snprintf(why, n,
                            "unknown field 'os_sandbox.%s' (expected mode, read%s, "
                            "process_limit)",
                            key, vfs ? "" : ", write"),
                   JPT_ERR_INVALID;
    }
    return JPT_OK;
}

/* A stdio tool's "sandbox": true, false, or RFD 075's keys that an OS
 * sandbox can enforce: {"filesystem": {"writable": bool, "git":
 * "writable" | "protected"}} (git as a vfs tool's policy has it: its
 * repositories stay read-only unless "writable"). The policy keys of a
 * vfs tool (network, commands, paths to allow and deny one by one) need
 * the protocol, and are refused rather than ignored. */
static int take_stdio_sandbox(jpt__command_def *d, const json_t *v, char *why, size_t n)
{
    static const char form[] = "'sandbox.filesystem' of a stdio tool takes \"writable\": true "
                               "or false, and \"git\": \"writable\" or \"protected\" (its "
                               "OS sandbox cannot allow or deny paths one by one)";
    const char *key, *name;
    const json_t *member, *value;

    d->sandbox_writable = true;
    d->sandbox_git_writable = false;
    if (v == NULL || json_is_false(v))
        return JPT_OK;
    if (!json_is_true(v) && !json_is_object(v))
        return snprintf(why, n, "'sandbox' of a stdio tool must be true, false or "
                                "{\"filesystem\": {\"writable\": true|false, \"git\": "
                                "\"writable\"|\"protected\"}}"),
               JPT_ERR_INVALID;
    json_object_foreach((json_t *)v, key, member) {
        if (strcmp(key, "filesystem") != 0)
            return snprintf(why, n, "'sandbox.%s' cannot be enforced for a stdio tool, whose "
                                    "OS sandbox has no network, no policy per path and no "
                                    "commands to allow: make it a \"vfs\" tool",
                            key),
                   JPT_ERR_UNSUPPORTED;
        if (!json_is_object(member) || json_object_size(member) == 0)
            return snprintf(why, n, "%s", form), JPT_ERR_UNSUPPORTED;
        json_object_foreach((json_t *)member, name, value) {
            if (strcmp(name, "writable") == 0 && json_is_boolean(value))
                d->sandbox_writable = json_is_true(value);
            else if (strcmp(name, "git") == 0 && json_is_string(value) &&
                     (strcmp(json_string_value(value), "writable") == 0 ||
                      strcmp(json_string_value(value), "protected") == 0))
                d->sandbox_git_writable = strcmp(json_string_value(value), "writable") == 0;
            else
                return snprintf(why, n, "%s", form), JPT_ERR_UNSUPPORTED;
        }
    }
    d->sandbox_profile = JPT__SANDBOX_STDIO;
    return JPT_OK;
}

int jpt__command_take(jpt__command_def *d, const json_t *def, bool vfs, char *why, size_t n)
{
    int rc;

    /* Issue 15 §5: inheriting the host's environment is the definition's
     * explicit choice, never the default. */
    d->env_inherit = false;
    d->env_vfs = vfs;
    if ((rc = take_command(d, json_object_get(def, "command"), why, n)) < 0 ||
        (rc = take_env(d, json_object_get(def, "env"), why, n)) < 0 ||
        (rc = take_os_sandbox(d, json_object_get(def, "os_sandbox"), vfs, why, n)) < 0)
        return rc;
    /* D11: a vfs tool's environment is clean. */
    if (vfs && d->env_inherit)
        return snprintf(why, n, "'env.inherit' cannot be true for a vfs tool, whose "
                                "environment is clean: name the variables it needs in "
                                "env.allow"),
               JPT_ERR_INVALID;
    if (vfs) {
        d->sandbox_profile = JPT__SANDBOX_VFS;
        return JPT_OK;
    }
    if ((rc = take_stdio_sandbox(d, json_object_get(def, "sandbox"), why, n)) < 0)
        return rc;
    if (d->sandbox_profile == 0 && json_object_get(def, "os_sandbox") != NULL)
        return snprintf(why, n, "'os_sandbox' applies to a stdio tool only with "
                                "\"sandbox\" (it runs unconfined without)"),
               JPT_ERR_INVALID;
    if (d->sandbox_profile != 0 && d->sandbox_mode == JPT_SANDBOX_OFF)
        return snprintf(why, n, "'sandbox' asks for the OS sandbox and 'os_sandbox.mode' "
                                "turns it off: remove one of them"),
               JPT_ERR_INVALID;
    return JPT_OK;
}
