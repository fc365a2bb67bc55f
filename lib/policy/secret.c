/* Secrets of the host that a tool may use without reading them (D11
 * "http.get": "the host replaces ${VAR} with the value from its own
 * environment, if the variable is listed in the tool's
 * sandbox.network.envs … The tool never sees the resolved value"):
 * ${NAME} substitution, and scrubbing every value substituted — as it is,
 * JSON-escaped, URL-encoded and base64-encoded (RFD 016's scrubbing) —
 * out of whatever goes back to the tool. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static const char REDACTED[] = "[REDACTED]";

static bool name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

static bool env_allowed(const jpt_policy *p, const char *name, size_t n)
{
    for (size_t i = 0; i < p->n_envs; i++)
        if (strlen(p->envs[i]) == n && memcmp(p->envs[i], name, n) == 0)
            return true;
    return false;
}

/* ---- The forms of a value --------------------------------------------------------- */

static int add_form(jpt__secrets *s, jpt__buf *form)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->forms[i].len == form->len && memcmp(s->forms[i].text, form->data, form->len) == 0)
            return JPT_OK; /* already there */
    jpt__secret_form *forms =
        jpt__array_reserve(s->forms, &s->cap, s->n + 1, sizeof(*forms), 8);
    if (forms == NULL)
        return JPT_ERR_NOMEM;
    s->forms = forms;
    size_t len = form->len;
    char *text = jpt__buf_take(form);
    if (text == NULL)
        return JPT_ERR_NOMEM;
    /* Longest first: a form that contains another is replaced whole. */
    size_t i = s->n;
    while (i > 0 && s->forms[i - 1].len < len) {
        s->forms[i] = s->forms[i - 1];
        i--;
    }
    s->forms[i].text = text;
    s->forms[i].len = len;
    s->n++;
    s->first[(unsigned char)text[0]] = true;
    return JPT_OK;
}

/* The value inside a JSON string literal. */
static int json_form(const char *v, size_t n, jpt__buf *out)
{
    int rc = JPT_OK;

    for (size_t i = 0; i < n && rc == JPT_OK; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == '"' || c == '\\')
            rc = jpt__buf_printf(out, "\\%c", c);
        else if (c == '\n')
            rc = jpt__buf_puts(out, "\\n");
        else if (c == '\r')
            rc = jpt__buf_puts(out, "\\r");
        else if (c == '\t')
            rc = jpt__buf_puts(out, "\\t");
        else if (c < 0x20)
            rc = jpt__buf_printf(out, "\\u%04x", c);
        else
            rc = jpt__buf_putc(out, (char)c);
    }
    return rc;
}

/* Percent-encoding of every byte but RFC 3986's unreserved ones. */
static int url_form(const char *v, size_t n, const char *digits, jpt__buf *out)
{
    int rc = JPT_OK;

    for (size_t i = 0; i < n && rc == JPT_OK; i++) {
        unsigned char c = (unsigned char)v[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~')
            rc = jpt__buf_putc(out, (char)c);
        else {
            char esc[3] = {'%', digits[c >> 4], digits[c & 15]};
            rc = jpt__buf_append(out, esc, 3);
        }
    }
    return rc;
}

/* The base64 characters that encode only bytes of the value when it
 * starts `shift` bytes into a 3-byte group of longer encoded text (any
 * bytes before and after it): each character holds 6 bits, kept when all
 * of them are the value's. `url`: the URL-safe alphabet. */
static int base64_form(const char *v, size_t n, size_t shift, bool url, jpt__buf *out)
{
    jpt__buf padded = JPT__BUF_INIT;
    int rc = jpt__buf_append(&padded, "\0\0", shift);
    char *encoded = NULL;

    if (rc == JPT_OK)
        rc = jpt__buf_append(&padded, v, n);
    if (rc == JPT_OK && (encoded = jpt__malloc(jpt__base64_size(padded.len) + 1)) == NULL)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK)
        jpt__base64_encode(encoded, (const unsigned char *)padded.data, padded.len);
    size_t first = (8 * shift + 5) / 6, end = 8 * (shift + n) / 6;
    for (size_t j = first; rc == JPT_OK && j < end; j++) {
        char c = encoded[j];
        rc = jpt__buf_putc(out, url && c == '+' ? '-' : url && c == '/' ? '_' : c);
    }
    jpt__buf_free(&padded);
    jpt__free(encoded);
    return rc;
}

int jpt__secrets_add(jpt__secrets *s, const char *value)
{
    size_t n = strlen(value);
    int rc = JPT_OK;

    if (n == 0)
        return JPT_OK;
    for (int form = 0; form < 10 && rc == JPT_OK; form++) {
        jpt__buf b = JPT__BUF_INIT;
        switch (form) {
        case 0:
            rc = jpt__buf_append(&b, value, n);
            break;
        case 1:
            rc = json_form(value, n, &b);
            break;
        case 2:
            rc = url_form(value, n, "0123456789ABCDEF", &b);
            break;
        case 3:
            rc = url_form(value, n, "0123456789abcdef", &b);
            break;
        default: /* 4 to 9: three shifts, two alphabets */
            rc = base64_form(value, n, (size_t)(form - 4) % 3, form >= 7, &b);
            break;
        }
        if (rc == JPT_OK && b.len > 0)
            rc = add_form(s, &b);
        jpt__buf_free(&b);
    }
    return rc;
}

bool jpt__secrets_empty(const jpt__secrets *s)
{
    return s->n == 0;
}

void jpt__secrets_free(jpt__secrets *s)
{
    for (size_t i = 0; i < s->n; i++)
        jpt__free(s->forms[i].text);
    jpt__free(s->forms);
    memset(s, 0, sizeof(*s));
}

int jpt__secrets_scrub(const jpt__secrets *s, const char *p, size_t n, jpt__buf *out)
{
    size_t run = 0; /* start of the bytes not yet appended */

    if (s->n == 0)
        return jpt__buf_append(out, p, n);
    for (size_t i = 0; i < n;) {
        size_t hit = 0;
        if (s->first[(unsigned char)p[i]])
            for (size_t k = 0; k < s->n && hit == 0; k++)
                if (s->forms[k].len <= n - i &&
                    memcmp(p + i, s->forms[k].text, s->forms[k].len) == 0)
                    hit = s->forms[k].len;
        if (hit == 0) {
            i++;
            continue;
        }
        int rc = jpt__buf_append(out, p + run, i - run);
        if (rc == JPT_OK)
            rc = jpt__buf_append(out, REDACTED, sizeof(REDACTED) - 1);
        if (rc < 0)
            return rc;
        i += hit;
        run = i;
    }
    return jpt__buf_append(out, p + run, n - run);
}

bool jpt__secrets_found(const jpt__secrets *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s->first[(unsigned char)p[i]])
            for (size_t k = 0; k < s->n; k++)
                if (s->forms[k].len <= n - i &&
                    memcmp(p + i, s->forms[k].text, s->forms[k].len) == 0)
                    return true;
    return false;
}

/* ---- ${NAME} ---------------------------------------------------------------------------- */

/* The value of ${name}, checked: JPT_OK with *value, or a status with
 * `why` naming the variable, never its value. */
static int resolve(const jpt_policy *p, const char *name, size_t n, const char **value,
                   char *why, size_t cap)
{
    char var[JPT__POLICY_NAME_MAX + 1];

    if (n > JPT__POLICY_NAME_MAX || !env_allowed(p, name, n)) {
        snprintf(why, cap, "${%.*s} is not in network.envs", (int)(n < 80 ? n : 80), name);
        return JPT_ERR_DENIED;
    }
    memcpy(var, name, n);
    var[n] = '\0';
    if ((*value = getenv(var)) == NULL) {
        snprintf(why, cap, "${%s} is not set in the host's environment", var);
        return JPT_ERR_NOT_FOUND;
    }
    if (strlen(*value) < JPT__SECRET_MIN) {
        snprintf(why, cap,
                 "the value of ${%s} is shorter than %d bytes, too short to be kept out of "
                 "what the tool receives",
                 var, JPT__SECRET_MIN);
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

int jpt__policy_substitute(const jpt_policy *p, const char *text, jpt__buf *out,
                           jpt__secrets *secrets, char *why, size_t cap)
{
    const char *run = text;

    for (const char *c = text; *c != '\0';) {
        if (c[0] != '$' || c[1] != '{') {
            c++;
            continue;
        }
        const char *name = c + 2, *end = name;
        while (name_char(*end))
            end++;
        if (!name_start(*name) || *end != '}') {
            snprintf(why, cap,
                     "'${' is not followed by a variable name and '}' (write ${NAME} with "
                     "letters, digits and '_')");
            return JPT_ERR_INVALID;
        }
        const char *value;
        int rc = resolve(p, name, (size_t)(end - name), &value, why, cap);
        if (rc == JPT_OK)
            rc = jpt__buf_append(out, run, (size_t)(c - run));
        if (rc == JPT_OK)
            rc = jpt__buf_puts(out, value);
        if (rc == JPT_OK)
            rc = jpt__secrets_add(secrets, value);
        if (rc == JPT_ERR_NOMEM)
            snprintf(why, cap, "out of memory");
        if (rc < 0)
            return rc;
        c = run = end + 1;
    }
    int rc = jpt__buf_puts(out, run);
    if (rc < 0)
        snprintf(why, cap, "out of memory");
    return rc;
}
