/* libFuzzer harness for the network policy (vfs.h, "network.allow",
 * "URLs", "Secrets"): the input up to its first NUL is a list of
 * network.allow entries, one per line; each NUL-separated piece after it
 * is a URL to check, and also a text to scrub. Beyond surviving:
 *  - a configuration that is refused denies every URL;
 *  - an allowed URL is one an independent matcher — curl_url read here,
 *    with plain string comparisons — also allows: http or https, no user
 *    information, the scheme, lower-case host and port of an entry, and a
 *    path that is the entry's or continues it after a '/';
 *  - a URL with user information, or another scheme, is denied;
 *  - the verdict does not change when the URL is checked again, and the
 *    reason names the URL;
 *  - a scrubbed text holds no value added to the secrets (unless a value
 *    holds characters of "[REDACTED]", which the replacement and its
 *    neighbours could spell again), and text without one comes back as
 *    it was. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What curl_url says of one URL, lower-cased where the policy compares
 * case-insensitively. */
typedef struct parts {
    char scheme[16], host[512], port[8], path[4096];
    int userinfo;
} parts;

static void lower(char *s)
{
    for (; *s != '\0'; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

static int get(CURLU *u, CURLUPart part, unsigned flags, char *out, size_t cap)
{
    char *v = NULL;
    int ok = curl_url_get(u, part, &v, flags) == CURLUE_OK && strlen(v) < cap;

    if (ok)
        strcpy(out, v);
    curl_free(v);
    return ok;
}

static int read_parts(const char *url, parts *p)
{
    CURLU *u = curl_url();
    char *v = NULL;
    int ok = u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
             get(u, CURLUPART_SCHEME, 0, p->scheme, sizeof(p->scheme)) &&
             get(u, CURLUPART_HOST, 0, p->host, sizeof(p->host)) &&
             get(u, CURLUPART_PORT, CURLU_DEFAULT_PORT, p->port, sizeof(p->port)) &&
             get(u, CURLUPART_PATH, 0, p->path, sizeof(p->path));

    p->userinfo = 0;
    if (ok && curl_url_get(u, CURLUPART_USER, &v, 0) == CURLUE_OK)
        p->userinfo = 1;
    curl_free(v);
    v = NULL;
    if (ok && curl_url_get(u, CURLUPART_PASSWORD, &v, 0) == CURLUE_OK)
        p->userinfo = 1;
    curl_free(v);
    curl_url_cleanup(u);
    lower(p->scheme);
    lower(p->host);
    return ok;
}

/* The independent matcher: IPv6 literals are left out (the policy
 * rewrites them canonically, which plain text comparison does not). */
static int covers(const parts *e, const parts *u)
{
    size_t n = strlen(e->path);

    if (strcmp(e->scheme, u->scheme) != 0 || strcmp(e->host, u->host) != 0 ||
        strcmp(e->port, u->port) != 0)
        return 0;
    while (n > 0 && e->path[n - 1] == '/')
        n--;
    return n == 0 || (strncmp(u->path, e->path, n) == 0 && (u->path[n] == '\0' || u->path[n] == '/'));
}

static void check_url(const jpt_policy *p, int refused, const char *entries[], size_t n,
                      const char *url)
{
    char *reason = NULL;
    int verdict = jpt_policy_check(p, JPT_ACCESS_HTTP, url, &reason);

    if (verdict == JPT_ERR_NOMEM)
        return;
    if (verdict < 0 || reason == NULL || strstr(reason, "http '") != reason)
        abort();
    if (jpt_policy_check(p, JPT_ACCESS_HTTP, url, NULL) != verdict)
        abort();
    jpt_free(reason);
    if (refused && verdict != JPT_VERDICT_DENY)
        abort();
    parts u;
    int parsed = read_parts(url, &u);
    if (parsed && (u.userinfo || (strcmp(u.scheme, "http") != 0 && strcmp(u.scheme, "https") != 0)) &&
        verdict != JPT_VERDICT_DENY)
        abort();
    if (verdict != JPT_VERDICT_ALLOW || u.host[0] == '[')
        return;
    if (!parsed)
        abort(); /* allowed, yet libcurl cannot read it */
    for (size_t i = 0; i < n; i++) {
        parts e;
        if (read_parts(entries[i], &e) && covers(&e, &u))
            return;
    }
    abort();
}

static void check_scrub(const char *value, const char *text, size_t len)
{
    jpt__secrets s;
    jpt__buf out = JPT__BUF_INIT;

    memset(&s, 0, sizeof(s));
    if (jpt__secrets_add(&s, value) == JPT_OK && jpt__secrets_scrub(&s, text, len, &out) == JPT_OK) {
        /* A value made of the replacement's characters could be formed
         * again by it and its neighbours. */
        if (s.n > 0 && strpbrk(value, "[REDACT]") == NULL && out.data != NULL &&
            memmem(out.data, out.len, value, strlen(value)) != NULL)
            abort();
        if (!jpt__secrets_found(&s, text, len) &&
            (out.len != len || (len > 0 && memcmp(out.data, text, len) != 0)))
            abort();
    }
    jpt__buf_free(&out);
    jpt__secrets_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    const char *entries[16];
    size_t n = 0;

    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    size_t head = strlen(text);

    /* The entries, one per line, as a configuration. */
    jpt__buf config = JPT__BUF_INIT;
    char *list = strdup(text);
    int ok = list != NULL && jpt__buf_puts(&config, "{\"network\":{\"allow\":[") == JPT_OK;
    for (char *line = list, *next; ok && line != NULL && n < 16; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (line[0] == '\0')
            continue;
        entries[n] = line;
        ok = (n > 0 ? jpt__buf_putc(&config, ',') : JPT_OK) == JPT_OK &&
             jpt__buf_json_string(&config, line, strlen(line)) == JPT_OK;
        n++;
    }
    if (ok && jpt__buf_puts(&config, "]}}") == JPT_OK) {
        jpt_policy *p = NULL;
        int rc = jpt_policy_new(config.data, &p);
        if (p != NULL) {
            int refused = rc != JPT_OK;
            if (refused != (jpt_policy_errmsg(p)[0] != '\0'))
                abort();
            for (size_t at = head + 1; at < size; at += strlen(text + at) + 1) {
                check_url(p, refused, entries, n, text + at);
                if (strlen(text + at) >= JPT__SECRET_MIN)
                    check_scrub(text + at, text, head);
            }
            jpt_policy_free(p);
        }
    }
    jpt__buf_free(&config);
    free(list);
    free(text);
    return 0;
}
