/* Normalised relative paths (vfs.h, jpt_policy_check()): the lexical
 * normaliser for pre-checks and configured prefixes, the test for the form
 * a check requires, prefix matching by whole names, and the folding that
 * makes name comparisons case-insensitive. Everything here runs in time
 * linear in the path. */
#include <string.h>

#include "policy/policy.h"

int jpt__fold_char(const char *p, const char *end, size_t *width)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t left = (size_t)(end - p);

    /* ext4's and APFS's case folding maps these two to ASCII letters, so
     * ".ſsh" (U+017F) and "K" (U+212A) names reach ".ssh" and "k" names. */
    if (left >= 2 && u[0] == 0xC5 && u[1] == 0xBF) {
        *width = 2;
        return 's';
    }
    if (left >= 3 && u[0] == 0xE2 && u[1] == 0x84 && u[2] == 0xAA) {
        *width = 3;
        return 'k';
    }
    *width = 1;
    return u[0] >= 'A' && u[0] <= 'Z' ? u[0] - 'A' + 'a' : u[0];
}

int jpt__fold(const char *text, size_t n, jpt__buf *out)
{
    const char *end = text + n;
    int rc = JPT_OK;

    while (text < end && rc == JPT_OK) {
        size_t width;
        rc = jpt__buf_putc(out, (char)jpt__fold_char(text, end, &width));
        text += width;
    }
    return rc;
}

/* Drops the last name of the normalised path in `b` (there is one). */
static void drop_last_name(jpt__buf *b)
{
    while (b->len > 0 && b->data[b->len - 1] != '/')
        b->len--;
    if (b->len > 0)
        b->len--; /* the '/' before it */
    b->data[b->len] = '\0';
}

int jpt__path_normalize(const char *path, jpt__buf *out, const char **why)
{
    int rc = JPT_OK;

    if (path[0] == '/') {
        *why = "is absolute: paths are relative to the workspace root";
        return JPT_ERR_INVALID;
    }
    for (const char *p = path; *p != '\0' && rc == JPT_OK;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (out->len == 0) {
                *why = "leaves the workspace root";
                return JPT_ERR_INVALID;
            }
            drop_last_name(out);
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            if (out->len > 0)
                rc = jpt__buf_putc(out, '/');
            if (rc == JPT_OK)
                rc = jpt__buf_append(out, p, n);
        }
        p += n;
        if (*p == '/')
            p++;
    }
    if (rc == JPT_OK && out->len == 0)
        rc = jpt__buf_puts(out, ".");
    return rc;
}

JPT_EXPORT int jpt_policy_normalize_path(const char *path, char **out)
{
    jpt__buf b = JPT__BUF_INIT;
    const char *why = NULL;

    jpt__fail_clear();
    if (out != NULL)
        *out = NULL;
    if (path == NULL || out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_policy_normalize_path: %s is NULL",
                         path == NULL ? "path" : "out");
    int rc = jpt__path_normalize(path, &b, &why);
    if (rc == JPT_OK && (*out = jpt__buf_take(&b)) == NULL)
        rc = JPT_ERR_NOMEM;
    jpt__buf_free(&b);
    if (rc < 0)
        return jpt__fail(rc, "jpt_policy_normalize_path '%s': %s", path,
                         why != NULL ? why : "out of memory");
    return rc;
}

bool jpt__path_is_normalized(const char *path)
{
    if (strcmp(path, ".") == 0)
        return true;
    for (const char *p = path;; p++) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false; /* empty (leading, trailing or doubled '/'), "." or ".." */
        p += n;
        if (*p == '\0')
            return true;
    }
}

size_t jpt__path_longest_name(const char *path)
{
    size_t longest = 0;

    for (const char *p = path;;) {
        size_t n = strcspn(p, "/");
        if (n > longest)
            longest = n;
        p += n;
        if (*p == '\0')
            return longest;
        p++;
    }
}

/* How many bytes of `path` spell `prefix` (folded when `fold`), or
 * SIZE_MAX if it does not begin with it. */
static size_t prefix_span(const char *path, const char *prefix, bool fold)
{
    const char *end = path + strlen(path);
    const char *p = path;

    for (const char *q = prefix; *q != '\0'; q++) {
        size_t width = 1;
        if (p == end)
            return SIZE_MAX;
        int c = fold ? jpt__fold_char(p, end, &width) : (unsigned char)*p;
        if (c != (unsigned char)*q)
            return SIZE_MAX;
        p += width;
    }
    return (size_t)(p - path);
}

bool jpt__path_under(const char *path, const char *prefix, bool fold)
{
    if (strcmp(prefix, ".") == 0)
        return true;
    size_t n = prefix_span(path, prefix, fold);
    return n != SIZE_MAX && (path[n] == '\0' || path[n] == '/');
}

bool jpt__path_above(const char *path, const char *folded_prefix)
{
    if (strcmp(folded_prefix, ".") == 0)
        return false;
    if (strcmp(path, ".") == 0)
        return true;

    /* `path` folded, then a '/', must begin the prefix. */
    const char *end = path + strlen(path);
    const char *q = folded_prefix;
    for (const char *p = path; p < end; q++) {
        size_t width;
        int c = jpt__fold_char(p, end, &width);
        if (*q == '\0' || c != (unsigned char)*q)
            return false;
        p += width;
    }
    return *q == '/';
}

const char *jpt__prefixes_find(const jpt__policy_prefixes *list, const char *path,
                               bool fold, size_t *index)
{
    for (size_t i = 0; i < list->n; i++)
        if (jpt__path_under(path, list->paths[i], fold)) {
            *index = i;
            return list->paths[i];
        }
    return NULL;
}
