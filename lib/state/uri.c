/* URI canonicalisation for resource identity (RFD 058, "URI
 * canonicalization"): two spellings of one file or one web page give one
 * string. libcurl's URL API does the parsing; this file adds what it leaves
 * out: path normalisation after percent-decoding, case of the host,
 * percent-encoding normalisation, and paths relative to the workspace root.
 *
 * This names resources; it is not access control (the VFS room confines
 * paths with openat2). */
#define _GNU_SOURCE /* memrchr */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "state/impl.h"

static bool is_unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (unsigned char)tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The byte a "%XX" at p encodes, or -1 if p is not one. */
static int percent_byte(const char *p)
{
    if (p[0] != '%')
        return -1;
    int hi = hex_value((unsigned char)p[1]);
    int lo = hi < 0 ? -1 : hex_value((unsigned char)p[2]);
    return lo < 0 ? -1 : hi * 16 + lo;
}

/* RFC 3986 §6.2.2: unreserved characters decoded, other escapes in
 * uppercase hex. A '%' that starts no escape is itself escaped ("%25"), so
 * that normalising twice changes nothing (found by fuzzing: "%4%32" would
 * otherwise become "%42" and then "B"). */
static int normalize_percent(const char *p, jpt__buf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = JPT_OK;

    for (; *p != '\0' && rc == JPT_OK; p++) {
        int byte = percent_byte(p);
        if (byte < 0 && *p == '%')
            rc = jpt__buf_puts(out, "%25");
        else if (byte < 0)
            rc = jpt__buf_putc(out, *p);
        else if (is_unreserved((unsigned char)byte)) {
            rc = jpt__buf_putc(out, (char)byte);
            p += 2;
        } else {
            char esc[3] = {'%', hex[byte >> 4], hex[byte & 15]};
            rc = jpt__buf_append(out, esc, 3);
            p += 2;
        }
    }
    return rc;
}

/* A file URI's path as a file system path. An encoded NUL cannot name a
 * file, so it makes the URI invalid. */
static int decode_path(const char *p, jpt__buf *out)
{
    int rc = JPT_OK;

    for (; *p != '\0' && rc == JPT_OK; p++) {
        int byte = percent_byte(p);
        if (byte == 0)
            return JPT_ERR_INVALID;
        if (byte < 0)
            rc = jpt__buf_putc(out, *p);
        else {
            rc = jpt__buf_putc(out, (char)byte);
            p += 2;
        }
    }
    return rc;
}

/* Removes the last segment of `segs` ("/a/b" -> "/a") for a "..". With
 * none to remove, an absolute path stays at "/" and a relative one keeps
 * the ".." (it points outside what it is relative to). */
static int pop_segment(jpt__buf *segs, bool absolute)
{
    char *last = segs->len > 0 ? memrchr(segs->data, '/', segs->len) : NULL;

    if (last != NULL && strcmp(last, "/..") != 0) {
        segs->len = (size_t)(last - segs->data);
        segs->data[segs->len] = '\0';
        return JPT_OK;
    }
    return absolute ? JPT_OK : jpt__buf_puts(segs, "/..");
}

/* Resolves "." and "..", collapses "//" and drops a trailing "/". The
 * empty relative path is ".". */
static int normalize_path(const char *path, jpt__buf *out)
{
    bool absolute = path[0] == '/';
    jpt__buf segs = JPT__BUF_INIT; /* "/seg/seg": each segment after a '/' */
    int rc = JPT_OK;

    for (const char *p = path; *p != '\0' && rc == JPT_OK;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            rc = pop_segment(&segs, absolute);
        else if (n > 0 && !(n == 1 && p[0] == '.') &&
                 (rc = jpt__buf_putc(&segs, '/')) == JPT_OK)
            rc = jpt__buf_append(&segs, p, n);
        p += n;
        if (*p == '/')
            p++;
    }
    if (rc == JPT_OK) {
        if (segs.len == 0)
            rc = jpt__buf_puts(out, absolute ? "/" : ".");
        else
            rc = jpt__buf_puts(out, absolute ? segs.data : segs.data + 1);
    }
    jpt__buf_free(&segs);
    return rc;
}

/* A path in a file:// URI: everything but unreserved characters,
 * sub-delimiters, ':', '@' and '/' percent-encoded. */
static int encode_path(const char *p, jpt__buf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    static const char allowed[] = "!$&'()*+,;=:@/";
    int rc = JPT_OK;

    for (; *p != '\0' && rc == JPT_OK; p++) {
        unsigned char c = (unsigned char)*p;
        if (is_unreserved(c) || strchr(allowed, c) != NULL)
            rc = jpt__buf_putc(out, (char)c);
        else {
            char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = jpt__buf_append(out, esc, 3);
        }
    }
    return rc;
}

static int curl_status(CURLUcode code)
{
    return code == CURLUE_OUT_OF_MEMORY ? JPT_ERR_NOMEM : JPT_ERR_INVALID;
}

/* The length of the URI's scheme (RFC 3986 §3.1), 0 if it has none. */
static size_t scheme_length(const char *uri)
{
    size_t n = 0;

    if (!isalpha((unsigned char)uri[0]))
        return 0;
    while (isalnum((unsigned char)uri[n]) || uri[n] == '+' || uri[n] == '-' ||
           uri[n] == '.')
        n++;
    return uri[n] == ':' ? n : 0;
}

static bool is_file_scheme(const char *uri, size_t scheme_len)
{
    return scheme_len == 4 && strncasecmp(uri, "file", 4) == 0;
}

/* The decoded path of a file URI, or the text of a bare path. */
static int file_path(const char *uri, jpt__buf *out)
{
    if (!is_file_scheme(uri, scheme_length(uri)))
        return jpt__buf_puts(out, uri);

    CURLU *h = curl_url();
    char *path = NULL;
    if (h == NULL)
        return JPT_ERR_NOMEM;
    CURLUcode code = curl_url_set(h, CURLUPART_URL, uri, CURLU_ALLOW_SPACE);
    if (code == CURLUE_OK)
        code = curl_url_get(h, CURLUPART_PATH, &path, 0);
    int rc = code == CURLUE_OK ? decode_path(path, out) : curl_status(code);
    curl_free(path);
    curl_url_cleanup(h);
    return rc;
}

/* The canonical absolute path of the workspace root. */
static int root_path(const char *root, jpt__buf *out)
{
    jpt__buf raw = JPT__BUF_INIT;
    int rc = file_path(root, &raw);

    if (rc == JPT_OK && (raw.data == NULL || raw.data[0] != '/'))
        rc = JPT_ERR_INVALID;
    if (rc == JPT_OK)
        rc = normalize_path(raw.data, out);
    jpt__buf_free(&raw);
    return rc;
}

int jpt__uri_check_root(const char *root)
{
    jpt__buf b = JPT__BUF_INIT;
    int rc = root_path(root, &b);

    jpt__buf_free(&b);
    return rc;
}

/* `path` is normalised; `root` normalised and absolute, or NULL. */
/* A relative path as the result. RFC 3986 §4.2: a first segment with a
 * colon would read as a scheme ("a:b/c"), so it is written "./a:b/c". */
static int relative_path(const char *path, jpt__buf *out)
{
    const char *colon = strchr(path, ':');
    const char *slash = strchr(path, '/');
    int rc = JPT_OK;

    if (colon != NULL && (slash == NULL || colon < slash))
        rc = jpt__buf_puts(out, "./");
    return rc < 0 ? rc : jpt__buf_puts(out, path);
}

static int express_path(const char *path, const char *root, jpt__buf *out)
{
    if (root != NULL && path[0] == '/') {
        size_t n = strlen(root);
        if (strcmp(path, root) == 0)
            return jpt__buf_putc(out, '.');
        if (n == 1)
            return relative_path(path + 1, out);
        if (strncmp(path, root, n) == 0 && path[n] == '/')
            return relative_path(path + n + 1, out);
    }
    if (path[0] != '/')
        return relative_path(path, out);
    int rc = jpt__buf_puts(out, "file://");
    return rc < 0 ? rc : encode_path(path, out);
}

static int canonicalize_file(const char *uri, const char *root, jpt__buf *out)
{
    jpt__buf root_buf = JPT__BUF_INIT, joined = JPT__BUF_INIT,
             path = JPT__BUF_INIT;
    int rc = JPT_OK;

    if (root != NULL)
        rc = root_path(root, &root_buf);
    if (rc == JPT_OK)
        rc = file_path(uri, &joined);
    if (rc == JPT_OK && joined.len == 0)
        rc = jpt__buf_putc(&joined, '.');
    /* A relative path is relative to the workspace root. */
    if (rc == JPT_OK && joined.data[0] != '/' && root != NULL) {
        jpt__buf abs = JPT__BUF_INIT;
        if ((rc = jpt__buf_puts(&abs, root_buf.data)) == JPT_OK &&
            (rc = jpt__buf_putc(&abs, '/')) == JPT_OK)
            rc = jpt__buf_append(&abs, joined.data, joined.len);
        jpt__buf_free(&joined);
        joined = abs;
    }
    if (rc == JPT_OK)
        rc = normalize_path(joined.data, &path);
    if (rc == JPT_OK)
        rc = express_path(path.data, root != NULL ? root_buf.data : NULL, out);
    jpt__buf_free(&root_buf);
    jpt__buf_free(&joined);
    jpt__buf_free(&path);
    return rc;
}

static CURLUcode lowercase_host(CURLU *h)
{
    char *host = NULL;
    CURLUcode code = curl_url_get(h, CURLUPART_HOST, &host, 0);

    if (code == CURLUE_NO_HOST)
        return CURLUE_OK;
    if (code != CURLUE_OK)
        return code;
    for (char *p = host; *p != '\0'; p++)
        *p = (char)tolower((unsigned char)*p);
    code = curl_url_set(h, CURLUPART_HOST, host, 0);
    curl_free(host);
    return code;
}

/* RFC 3986 §6.2.2: escapes are normalised first (so "%2E%2E" is a dot
 * segment), then libcurl parses, resolves dot segments and drops the
 * default port. The result is normalised once more because libcurl rewrites
 * the escapes of a part set back into it (the host). */
static int canonicalize_hierarchical(const char *uri, jpt__buf *out)
{
    jpt__buf pre = JPT__BUF_INIT;
    CURLU *h = NULL;
    char *url = NULL;
    int rc = normalize_percent(uri, &pre);

    if (rc == JPT_OK && pre.data != NULL && (h = curl_url()) == NULL)
        rc = JPT_ERR_NOMEM;
    if (rc < 0 || pre.data == NULL) {
        jpt__buf_free(&pre);
        return rc < 0 ? rc : JPT_ERR_NOMEM;
    }
    CURLUcode code = curl_url_set(h, CURLUPART_URL, pre.data, CURLU_NON_SUPPORT_SCHEME);
    jpt__buf_free(&pre);
    if (code == CURLUE_OK)
        code = lowercase_host(h);
    if (code == CURLUE_OK)
        code = curl_url_get(h, CURLUPART_URL, &url, CURLU_NO_DEFAULT_PORT);
    rc = code == CURLUE_OK ? normalize_percent(url, out) : curl_status(code);
    curl_free(url);
    curl_url_cleanup(h);
    return rc;
}

/* urn:…, mailto:…: only the scheme's case and the escapes are normalised. */
static int canonicalize_opaque(const char *uri, size_t scheme_len, jpt__buf *out)
{
    for (size_t i = 0; i < scheme_len; i++)
        if (jpt__buf_putc(out, (char)tolower((unsigned char)uri[i])) < 0)
            return JPT_ERR_NOMEM;
    return normalize_percent(uri + scheme_len, out);
}

JPT_EXPORT int jpt_uri_canonicalize(const char *uri, const char *root,
                                    char **out)
{
    jpt__buf b = JPT__BUF_INIT;
    int rc;

    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_uri_canonicalize: out is NULL");
    *out = NULL;
    if (uri == NULL || uri[0] == '\0')
        return jpt__fail(JPT_ERR_INVALID, "jpt_uri_canonicalize: the URI is %s",
                         uri == NULL ? "NULL" : "empty");

    /* The root is checked even when this URI does not need it, so that a
     * bad root fails the same way for every URI. */
    if (root != NULL && (rc = jpt__uri_check_root(root)) < 0)
        return jpt__fail(rc, "jpt_uri_canonicalize: root '%s' is not an absolute path or file "
                             "URI",
                         root);
    size_t scheme_len = scheme_length(uri);
    if (scheme_len == 0 || is_file_scheme(uri, scheme_len))
        rc = canonicalize_file(uri, root, &b);
    else if (strncmp(uri + scheme_len, "://", 3) == 0)
        rc = canonicalize_hierarchical(uri, &b);
    else
        rc = canonicalize_opaque(uri, scheme_len, &b);
    if (rc == JPT_OK && (*out = jpt__buf_take(&b)) == NULL)
        rc = JPT_ERR_NOMEM;
    jpt__buf_free(&b);
    if (rc == JPT_ERR_NOMEM)
        return jpt__fail(rc, "jpt_uri_canonicalize: out of memory");
    if (rc < 0)
        return jpt__fail(rc, "jpt_uri_canonicalize '%s': %s", uri,
                         scheme_len == 0 || is_file_scheme(uri, scheme_len)
                             ? "a file URI naming a remote host or holding an encoded NUL, or "
                               "one libcurl refuses"
                             : "libcurl refuses it");
    return rc;
}
