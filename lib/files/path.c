/* The path rules every backend shares (D11: "All paths are relative to the
 * project root. Absolute paths and .. traversal are rejected by the
 * host."), checked on the text before anything is opened. */
#include <string.h>

#include "files/files.h"

void jpt__files_path_quote(const char *path, size_t len, char out[256])
{
    size_t n = 0, shown = len > 200 ? 200 : len;

    /* Each character that would display misleadingly (a control, a
     * bidirectional override) becomes one '?'. */
    for (size_t i = 0; i < shown;) {
        size_t m = jpt__utf8_misleading(path + i, len - i);
        if (m > 0) {
            out[n++] = '?';
            i += m;
        } else
            out[n++] = path[i++];
    }
    if (shown < len) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

static int refuse(jpt__errbuf *e, const char *method, const char *path, size_t len,
                  const char *why)
{
    char shown[256];

    jpt__files_path_quote(path, len, shown);
    return jpt__err(e, JPT_ERR_INVALID, "%s '%s': %s", method, shown, why);
}

int jpt__files_path_check(const char *method, const char *path, size_t len, char *norm,
                          jpt__errbuf *e)
{
    size_t n = 0, whole = len;

    if (len > JPT__FILES_PATH_MAX)
        return refuse(e, method, path, whole, "the path is longer than 4095 bytes");
    if (memchr(path, '\0', len) != NULL)
        return refuse(e, method, path, whole, "the path holds a NUL byte");
    if (len > 0 && path[0] == '/')
        return refuse(e, method, path, whole,
                      "absolute paths are not allowed: paths are relative to the root");
    if (len > 0 && path[len - 1] == '/')
        len--; /* one trailing '/' is allowed */
    if (len > 0 && path[len - 1] == '/')
        return refuse(e, method, path, whole, "the path has an empty component ('//')");
    for (size_t i = 0; i < len;) {
        const char *slash = memchr(path + i, '/', len - i);
        size_t end = slash != NULL ? (size_t)(slash - path) : len;
        size_t clen = end - i;

        if (clen == 0)
            return refuse(e, method, path, whole, "the path has an empty component ('//')");
        if (clen == 2 && path[i] == '.' && path[i + 1] == '.')
            return refuse(e, method, path, whole,
                          "'..' is not allowed: paths stay beneath the root");
        if (!(clen == 1 && path[i] == '.')) {
            if (n > 0)
                norm[n++] = '/';
            memcpy(norm + n, path + i, clen);
            n += clen;
        }
        i = end + 1;
    }
    if (n == 0)
        norm[n++] = '.';
    norm[n] = '\0';
    return JPT_OK;
}
