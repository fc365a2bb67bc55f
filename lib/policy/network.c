/* URLs as the network policy reads them (vfs.h, "network.allow"): parsed
 * by libcurl's own URL parser (curl_url), the parser of the transfer that
 * follows, then put in the form entries and requests are compared in:
 * scheme, lower-case host (IPv6 literals in their canonical text), port
 * with the scheme's default filled in, and the path normalised (RFC 3986
 * §6.2.2: percent-encoded unreserved characters decoded, other escapes in
 * capitals, dot segments removed) and put back in the parse, so that the
 * path compared is the path sent (issue 15 §5: "/api/%2e%2e/admin" is
 * "/admin", which a server that normalises would serve). A path whose
 * lenient reading still has a dot segment — behind an encoded '/', a
 * backslash, a ';' parameter, a second percent-encoding — or an encoded
 * NUL or overlong UTF-8 is refused: servers read it differently. An entry
 * matches a URL of the same scheme, host and port whose path is the
 * entry's path or lies beneath it by whole segments ("/api" covers "/api"
 * and "/api/x", never "/apix"). */
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

/* ---- Paths ----------------------------------------------------------------------- */

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The byte of "%XX" at p, or -1 when p is not such an escape. */
static int escape_at(const char *p)
{
    int hi, lo;

    if (p[0] != '%' || (hi = hex_value(p[1])) < 0 || (lo = hex_value(p[2])) < 0)
        return -1;
    return hi * 16 + lo;
}

/* RFC 3986 §2.3. */
static bool is_unreserved(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

/* §6.2.2.2: escapes of unreserved characters decoded (§6.2.2.1's case of
 * the others' hex digits is libcurl's to write). */
static int decode_unreserved(const char *path, jpt__buf *out, const char **why)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = JPT_OK;

    for (const char *c = path; *c != '\0' && rc == JPT_OK;) {
        if (*c != '%') {
            rc = jpt__buf_putc(out, *c++);
            continue;
        }
        int b = escape_at(c);
        if (b < 0) {
            *why = "its path has a '%' that is not followed by two hex digits";
            return JPT_ERR_INVALID;
        }
        if (is_unreserved(b))
            rc = jpt__buf_putc(out, (char)b);
        else {
            char e[3] = {'%', hex[b >> 4], hex[b & 15]};
            rc = jpt__buf_append(out, e, 3);
        }
        c += 3;
    }
    return rc;
}

/* §5.2.4, remove_dot_segments, from `in` (which it changes) into `out`. */
static int remove_dot_segments(char *in, jpt__buf *out)
{
    char *p = in;
    int rc = JPT_OK;

    while (*p != '\0' && rc == JPT_OK) {
        if (strncmp(p, "../", 3) == 0)
            p += 3;                                           /* A */
        else if (strncmp(p, "./", 2) == 0)
            p += 2;
        else if (strncmp(p, "/./", 3) == 0)
            p += 2;                                           /* B */
        else if (strcmp(p, "/.") == 0)
            p[1] = '\0';
        else if (strncmp(p, "/../", 4) == 0 || strcmp(p, "/..") == 0) {
            if (p[3] == '/')                                  /* C */
                p += 3;
            else
                p[1] = '\0';
            while (out->len > 0 && out->data[out->len - 1] != '/')
                out->len--;
            if (out->len > 0)
                out->len--;
        } else if (strcmp(p, ".") == 0 || strcmp(p, "..") == 0)
            p += strlen(p);                                   /* D */
        else {
            size_t n = strcspn(p + 1, "/") + 1;               /* E */
            rc = jpt__buf_append(out, p, n);
            p += n;
        }
    }
    if (rc == JPT_OK && out->len == 0)
        rc = jpt__buf_putc(out, '/');
    if (rc == JPT_OK)
        out->data[out->len] = '\0';
    return rc;
}

/* A segment that some server reads as "." or "..": only dots and spaces
 * (Windows drops trailing ones), cut at a ';' parameter (servlet
 * containers drop those). */
static bool dot_like(const char *seg, size_t n)
{
    size_t end = 0, dots = 0;

    while (end < n && seg[end] != ';')
        end++;
    for (size_t i = 0; i < end; i++) {
        if (seg[i] == '.')
            dots++;
        else if (seg[i] != ' ')
            return false;
    }
    return dots > 0;
}

/* How lenient servers read the path: '\' as '/', empty segments merged:
 * true when a segment is dot-like. */
static bool hides_dot_segment(const char *path, size_t n)
{
    for (size_t i = 0; i < n;) {
        while (i < n && (path[i] == '/' || path[i] == '\\'))
            i++;
        size_t start = i;
        while (i < n && path[i] != '/' && path[i] != '\\')
            i++;
        if (i > start && dot_like(path + start, i - start))
            return true;
    }
    return false;
}

/* Overlong UTF-8 ("%C0%AE" for '.'), which old decoders take for ASCII. */
static bool has_overlong(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == 0xC0 || p[i] == 0xC1 ||
            (i + 1 < n && ((p[i] == 0xE0 && p[i + 1] < 0xA0) || (p[i] == 0xF0 && p[i + 1] < 0x90))))
            return true;
    return false;
}

/* Every escape of `in` decoded into `out`; false when there was none. */
static bool decode_all(const char *in, size_t n, jpt__buf *out, int *rc)
{
    bool any = false;

    out->len = 0;
    for (size_t i = 0; i < n && *rc == JPT_OK;) {
        int b = i + 2 < n ? escape_at(in + i) : -1;
        if (b >= 0) {
            *rc = jpt__buf_putc(out, (char)b);
            any = true;
            i += 3;
        } else
            *rc = jpt__buf_putc(out, in[i++]);
    }
    return any;
}

/* Decodings of the normalised path a server may make: lenient readings,
 * up to three rounds of percent-decoding. */
#define DECODE_ROUNDS 3

static int check_lenient(const char *path, const char **why)
{
    jpt__buf a = JPT__BUF_INIT, b = JPT__BUF_INIT;
    const char *cur = path;
    size_t n = strlen(path);
    int rc = JPT_OK;

    for (int round = 0; rc == JPT_OK && *why == NULL; round++) {
        if (hides_dot_segment(cur, n))
            *why = "its path hides a dot segment (behind an encoded '/', a backslash, a ';' "
                   "parameter or a second percent-encoding), which servers read differently";
        else if (round > 0 && memchr(cur, '\0', n) != NULL)
            *why = "its path holds an encoded NUL byte";
        else if (has_overlong((const unsigned char *)cur, n))
            *why = "its path holds overlong UTF-8, which old servers read as ASCII";
        if (*why != NULL)
            break;
        jpt__buf *next = cur == a.data ? &b : &a;
        if (!decode_all(cur, n, next, &rc))
            break;
        if (round == DECODE_ROUNDS)
            *why = "its path is percent-encoded more than three times over";
        cur = next->data;
        n = next->len;
    }
    jpt__buf_free(&a);
    jpt__buf_free(&b);
    return rc < 0 ? rc : *why != NULL ? JPT_ERR_INVALID : JPT_OK;
}

/* u->path normalised (above) and set as the path of the parse. */
static int normalize_path(jpt__policy_url *u, const char **why)
{
    jpt__buf decoded = JPT__BUF_INIT, clean = JPT__BUF_INIT;
    int rc = decode_unreserved(u->path, &decoded, why);

    if (rc == JPT_OK && decoded.data == NULL)
        rc = jpt__buf_putc(&decoded, '/');
    if (rc == JPT_OK)
        rc = remove_dot_segments(decoded.data, &clean);
    if (rc == JPT_OK)
        rc = check_lenient(clean.data, why);
    if (rc == JPT_OK) {
        CURLUcode code = curl_url_set(u->u, CURLUPART_PATH, clean.data, 0);
        rc = code == CURLUE_OK              ? JPT_OK
             : code == CURLUE_OUT_OF_MEMORY ? JPT_ERR_NOMEM
                                            : JPT_ERR_INVALID;
        if (rc == JPT_ERR_INVALID)
            *why = curl_url_strerror(code);
    }
    /* What is compared is what libcurl will send (which writes escapes'
     * hex digits in lower case). */
    if (rc == JPT_OK) {
        jpt__free(u->path);
        CURLUcode code;
        rc = (u->path = get_part(u->u, CURLUPART_PATH, 0, &code)) != NULL ? JPT_OK
                                                                           : JPT_ERR_NOMEM;
    }
    jpt__buf_free(&decoded);
    jpt__buf_free(&clean);
    return rc;
}

/* ---- The URL ------------------------------------------------------------------------- */

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
    /* Dot segments are removed here, after decoding (normalize_path). */
    code = curl_url_set(u->u, CURLUPART_URL, text, CURLU_PATH_AS_IS);
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
    int rc = normalize_path(u, why);
    if (rc == JPT_ERR_INVALID) {
        jpt__free(zone);
        jpt__policy_url_clear(u);
        return rc;
    }
    if (rc == JPT_OK)
        rc = classify(u);
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

/* Per origin, not per path: libcurl reuses a connection for any path of
 * the origin, whatever address it reached. */
bool jpt__policy_url_private(const jpt_policy *p, const jpt__policy_url *url)
{
    for (size_t i = 0; i < p->n_urls; i++)
        if (p->urls[i].private_ok && jpt__policy_url_same_origin(&p->urls[i], url))
            return true;
    return false;
}
