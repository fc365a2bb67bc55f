/* URLs as the network policy reads them (vfs.h, "network.allow"): parsed
 * by libcurl's own URL parser (curl_url), the parser of the transfer that
 * follows, then put in the form entries and requests are compared in:
 * scheme, lower-case host (IPv6 literals in their canonical text), port
 * with the scheme's default filled in, and the path as libcurl normalised
 * it (dot segments removed). An entry matches a URL of the same scheme,
 * host and port whose path is the entry's path or lies beneath it by
 * whole segments ("/api" covers "/api" and "/api/x", never "/apix"). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static char *get_part(CURLU *u, CURLUPart part, unsigned flags, CURLUcode *code)
{
    char *value = NULL;

    *code = curl_url_get(u, part, &value, flags);
    if (*code != CURLUE_OK)
        return NULL;
    char *copy = jpt__strdup(value);
    curl_free(value);
    if (copy == NULL)
        *code = CURLUE_OUT_OF_MEMORY;
    return copy;
}

static bool has_part(CURLU *u, CURLUPart part)
{
    char *value = NULL;
    CURLUcode code = curl_url_get(u, part, &value, 0);

    curl_free(value);
    return code == CURLUE_OK;
}

static void lower(char *s)
{
    for (; *s != '\0'; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

/* "localhost", "x.localhost", with or without one final dot: names the
 * resolver (libcurl's own, RFC 6761) sends to the loopback address. */
static bool is_localhost(const char *host)
{
    size_t n = strlen(host);

    if (n > 0 && host[n - 1] == '.')
        n--;
    if (n == 9)
        return memcmp(host, "localhost", 9) == 0;
    return n > 10 && memcmp(host + n - 10, ".localhost", 10) == 0;
}

/* The host's kind, and an IPv6 literal rewritten in its canonical text
 * ("[::FFFF:7f00:1]" and "[::ffff:127.0.0.1]" are one address). IPv4
 * literals arrive canonical: libcurl rewrites "2130706433", "0177.0.0.1"
 * and "0x7f.1" as "127.0.0.1". */
static int classify(jpt__policy_url *u)
{
    size_t n = strlen(u->host);

    if (n >= 2 && u->host[0] == '[' && u->host[n - 1] == ']') {
        char text[INET6_ADDRSTRLEN + 2], inner[64];
        unsigned char bytes[16];
        if (n - 2 >= sizeof(inner))
            return JPT_OK;
        memcpy(inner, u->host + 1, n - 2);
        inner[n - 2] = '\0';
        u->kind = JPT__URL_IP;
        if (inet_pton(AF_INET6, inner, bytes) != 1 ||
            inet_ntop(AF_INET6, bytes, text + 1, INET6_ADDRSTRLEN) == NULL)
            return JPT_OK;
        text[0] = '[';
        strcat(text, "]");
        char *canonical = jpt__strdup(text);
        if (canonical == NULL)
            return JPT_ERR_NOMEM;
        jpt__free(u->host);
        u->host = canonical;
        return JPT_OK;
    }
    unsigned char v4[4];
    if (inet_pton(AF_INET, u->host, v4) == 1)
        u->kind = JPT__URL_IP;
    else if (is_localhost(u->host))
        u->kind = JPT__URL_LOCALHOST;
    else
        u->kind = JPT__URL_NAME;
    return JPT_OK;
}

/* The parse rewritten with the host in its canonical form and without a
 * port that is the scheme's default, so that one URL has one text (what
 * the prompt's allowed lists compare), and the text. */
static int canonical_text(jpt__policy_url *u)
{
    unsigned fallback = strcmp(u->scheme, "http") == 0    ? 80
                        : strcmp(u->scheme, "https") == 0 ? 443
                                                          : 0;
    char *value = NULL;
    CURLUcode code = u->host[0] != '\0' ? curl_url_set(u->u, CURLUPART_HOST, u->host, 0)
                                        : CURLUE_OK;

    if (code == CURLUE_OK && u->port == fallback)
        code = curl_url_set(u->u, CURLUPART_PORT, NULL, 0);
    if (code == CURLUE_OK)
        code = curl_url_get(u->u, CURLUPART_URL, &value, 0);
    if (code == CURLUE_OUT_OF_MEMORY)
        return JPT_ERR_NOMEM;
    if (code != CURLUE_OK)
        return JPT_ERR_INVALID;
    u->text = jpt__strdup(value);
    curl_free(value);
    return u->text != NULL ? JPT_OK : JPT_ERR_NOMEM;
}

int jpt__policy_url_parse(const char *text, jpt__policy_url *u, const char **why)
{
    CURLUcode code;
    char *port = NULL;

    memset(u, 0, sizeof(*u));
    *why = NULL;
    if ((u->u = curl_url()) == NULL)
        return JPT_ERR_NOMEM;
    code = curl_url_set(u->u, CURLUPART_URL, text, 0);
    if (code == CURLUE_OUT_OF_MEMORY)
        goto nomem;
    if (code != CURLUE_OK) {
        *why = curl_url_strerror(code);
        jpt__policy_url_clear(u);
        return JPT_ERR_INVALID;
    }
    u->userinfo = has_part(u->u, CURLUPART_USER) || has_part(u->u, CURLUPART_PASSWORD) ||
                  has_part(u->u, CURLUPART_OPTIONS);
    if ((u->scheme = get_part(u->u, CURLUPART_SCHEME, 0, &code)) == NULL)
        goto fail;
    if ((u->host = get_part(u->u, CURLUPART_HOST, 0, &code)) == NULL) {
        if (code != CURLUE_NO_HOST)
            goto fail;
        /* file:///x has none: the policy refuses it for its scheme. */
        if (jpt__policy_url_is_web(u)) {
            *why = "the URL has no host";
            jpt__policy_url_clear(u);
            return JPT_ERR_INVALID;
        }
        if ((u->host = jpt__strdup("")) == NULL)
            goto nomem;
    }
    char *zone = get_part(u->u, CURLUPART_ZONEID, 0, &code);
    if (zone == NULL && code != CURLUE_NO_ZONEID)
        goto fail;
    /* A scheme libcurl knows no default port of has none. */
    if ((port = get_part(u->u, CURLUPART_PORT, CURLU_DEFAULT_PORT, &code)) == NULL &&
        code != CURLUE_NO_PORT) {
        jpt__free(zone);
        goto fail;
    }
    u->port = port != NULL ? (unsigned)strtoul(port, NULL, 10) : 0;
    jpt__free(port);
    if ((u->path = get_part(u->u, CURLUPART_PATH, 0, &code)) == NULL) {
        jpt__free(zone);
        goto fail;
    }
    lower(u->scheme);
    lower(u->host);
    int rc = classify(u);
    if (rc == JPT_OK)
        rc = canonical_text(u);
    if (rc == JPT_OK && zone != NULL) {
        /* A link-local literal's zone is part of the address. */
        jpt__buf b = JPT__BUF_INIT;
        if (jpt__buf_printf(&b, "%.*s%%%s]", (int)strlen(u->host) - 1, u->host, zone) < 0)
            rc = JPT_ERR_NOMEM;
        else {
            jpt__free(u->host);
            u->host = jpt__buf_take(&b);
            rc = u->host != NULL ? JPT_OK : JPT_ERR_NOMEM;
        }
        jpt__buf_free(&b);
    }
    jpt__free(zone);
    if (rc == JPT_ERR_INVALID) {
        *why = "the URL cannot be written back once its host is made canonical";
        jpt__policy_url_clear(u);
        return rc;
    }
    if (rc < 0)
        goto nomem;
    return JPT_OK;
fail:
    if (code == CURLUE_OUT_OF_MEMORY)
        goto nomem;
    *why = curl_url_strerror(code);
    jpt__policy_url_clear(u);
    return JPT_ERR_INVALID;
nomem:
    jpt__policy_url_clear(u);
    return JPT_ERR_NOMEM;
}

void jpt__policy_url_clear(jpt__policy_url *u)
{
    curl_url_cleanup(u->u);
    jpt__free(u->scheme);
    jpt__free(u->host);
    jpt__free(u->path);
    jpt__free(u->text);
    memset(u, 0, sizeof(*u));
}

bool jpt__policy_url_is_web(const jpt__policy_url *u)
{
    return strcmp(u->scheme, "http") == 0 || strcmp(u->scheme, "https") == 0;
}

bool jpt__policy_url_same_origin(const jpt__policy_url *a, const jpt__policy_url *b)
{
    return strcmp(a->scheme, b->scheme) == 0 && strcmp(a->host, b->host) == 0 &&
           a->port == b->port;
}

/* The entry's path as a prefix: without its final '/', "" for the root. */
static size_t prefix_length(const char *path)
{
    size_t n = strlen(path);

    while (n > 0 && path[n - 1] == '/')
        n--;
    return n;
}

bool jpt__policy_url_covers(const jpt__policy_url *entry, const jpt__policy_url *url)
{
    if (!jpt__policy_url_same_origin(entry, url))
        return false;
    size_t n = prefix_length(entry->path);
    if (n == 0)
        return true;
    return strncmp(url->path, entry->path, n) == 0 &&
           (url->path[n] == '\0' || url->path[n] == '/');
}

const jpt__policy_url *jpt__policy_url_find(const jpt_policy *p, const jpt__policy_url *url)
{
    for (size_t i = 0; i < p->n_urls; i++)
        if (jpt__policy_url_covers(&p->urls[i], url))
            return &p->urls[i];
    return NULL;
}
