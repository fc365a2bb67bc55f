/* Sensitive path patterns (rfd/README.md, "Sensitive paths"; vfs.h): the
 * built-in list, configured patterns checked and folded, and matching
 * against a normalised path by name, so that a file created after the tool
 * started is covered as soon as it is asked for.
 *
 * A pattern's names are globs with '*' and '?' only, matched by the greedy
 * algorithm that remembers the last '*': no backtracking beyond it, so a
 * name costs at most its length times the pattern name's (at most 255
 * bytes), and a path costs time linear in its length. */
#include <string.h>

#include "policy/policy.h"

/* rfd/README.md: ".env, .env.*, .ssh/, .gnupg/, .aws/credentials,
 * .kube/config, .docker/config.json, .git/config, .git/hooks/, *.pem,
 * id_rsa*, id_ed25519*". Already folded; test-policy checks that compiling
 * each text gives its entry. */
static const jpt__policy_pattern builtin[] = {
    {NULL, ".env", ".env", 1, false},
    {NULL, ".env.*", ".env.*", 1, false},
    {NULL, ".ssh/", ".ssh", 1, true},
    {NULL, ".gnupg/", ".gnupg", 1, true},
    {NULL, ".aws/credentials", ".aws/credentials", 2, false},
    {NULL, ".kube/config", ".kube/config", 2, false},
    {NULL, ".docker/config.json", ".docker/config.json", 2, false},
    {NULL, ".git/config", ".git/config", 2, false},
    {NULL, ".git/hooks/", ".git/hooks", 2, true},
    {NULL, "*.pem", "*.pem", 1, false},
    {NULL, "id_rsa*", "id_rsa*", 1, false},
    {NULL, "id_ed25519*", "id_ed25519*", 1, false},
};

#define N_BUILTIN (sizeof(builtin) / sizeof(builtin[0]))

size_t jpt__pattern_builtin_count(void)
{
    return N_BUILTIN;
}

const jpt__policy_pattern *jpt__pattern_builtin(size_t i)
{
    return &builtin[i];
}

/* What is wrong with the names of a pattern's body, or NULL. */
static const char *check_names(const char *body, size_t len)
{
    for (const char *p = body, *end = body + len; p <= end; p++) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        size_t n = (size_t)((slash != NULL ? slash : end) - p);
        if (n == 0)
            return "has an empty name";
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return "has a '.' or '..' name: patterns match names, they are not resolved";
        if (n == 2 && p[0] == '*' && p[1] == '*')
            return "has a '**' name: patterns match at any depth already, and '*' "
                   "matches within a name";
        if (n > JPT__POLICY_NAME_MAX)
            return "has a name longer than 255 bytes, which no file can have";
        p += n;
    }
    return NULL;
}

/* What is wrong with a configured pattern as a whole, or NULL. */
static const char *check_pattern(const char *text, const char *body, size_t len)
{
    if (text[0] == '\0')
        return "is empty";
    if (body[0] == '/')
        return "is absolute: patterns name files inside the workspace, at any depth";
    if (body[0] == '~' && (body[1] == '/' || body[1] == '\0'))
        return "names a home directory: patterns name files inside the workspace, "
               "at any depth";
    if (len == 0)
        return "has no name";
    return check_names(body, len);
}

int jpt__pattern_compile(const char *text, jpt__policy_pattern *pt, const char **why)
{
    const char *body = text;
    jpt__buf b = JPT__BUF_INIT;

    while (strncmp(body, "**/", 3) == 0)
        body += 3;
    size_t len = strlen(body);
    bool dir = len > 0 && body[len - 1] == '/';
    if (dir)
        len--;
    if ((*why = check_pattern(text, body, len)) != NULL)
        return JPT_ERR_INVALID;

    /* One block: the text as written, a NUL, the folded names. */
    size_t text_len = strlen(text);
    int rc = jpt__buf_append(&b, text, text_len + 1);
    if (rc == JPT_OK)
        rc = jpt__fold(body, len, &b);
    if (rc < 0) {
        jpt__buf_free(&b);
        return rc;
    }
    pt->storage = b.data;
    pt->text = b.data;
    pt->names = b.data + text_len + 1;
    pt->n_names = 1;
    for (const char *p = pt->names; *p != '\0'; p++)
        pt->n_names += *p == '/';
    pt->dir = dir;
    return JPT_OK;
}

/* Whether the name s[0..n) matches the pattern name pat[0..m) ('*' any
 * run, '?' one character), the name read folded. */
static bool name_matches(const char *pat, size_t m, const char *s, size_t n)
{
    const char *end = s + n;
    size_t pi = 0, star = SIZE_MAX;
    const char *si = s, *star_s = s;

    while (si < end) {
        size_t width;
        int c = jpt__fold_char(si, end, &width);
        if (pi < m && pat[pi] == '*') {
            star = pi++;
            star_s = si;
        } else if (pi < m && (pat[pi] == '?' || (unsigned char)pat[pi] == c)) {
            pi++;
            si += width;
        } else if (star != SIZE_MAX) {
            /* Let the last '*' take one more character and retry after it. */
            pi = star + 1;
            jpt__fold_char(star_s, end, &width);
            star_s += width;
            si = star_s;
        } else
            return false;
    }
    while (pi < m && pat[pi] == '*')
        pi++;
    return pi == m;
}

/* Whether `count` names of the pattern, from `pat`, match the path's names
 * from `s` (the start of a name) on; the path may go on after them. On a
 * match, *after is where the path goes on (its end or a '/'). */
static bool names_match(const char *pat, size_t count, const char *s, const char *end,
                        const char **after)
{
    for (size_t i = 0; i < count; i++) {
        if (i > 0) {
            if (s == end)
                return false;
            s++; /* the '/' */
        }
        const char *slash = memchr(s, '/', (size_t)(end - s));
        size_t n = (size_t)((slash != NULL ? slash : end) - s);
        size_t m = strcspn(pat, "/");
        if (!name_matches(pat, m, s, n))
            return false;
        s += n;
        pat += m + (pat[m] == '/');
    }
    *after = s;
    return true;
}

/* The start of the path's last `count` names, or NULL if it has fewer. */
static const char *last_names(const char *path, const char *end, size_t count)
{
    size_t seen = 0;

    for (const char *p = end; p > path; p--)
        if (p[-1] == '/' && ++seen == count)
            return p;
    return seen + 1 == count ? path : NULL;
}

/* Whether `pt` matches the path: its last names, or for a directory
 * pattern, names anywhere in it. */
static bool pattern_matches(const jpt__policy_pattern *pt, const char *path,
                            const char *end)
{
    const char *after;

    if (!pt->dir) {
        const char *s = last_names(path, end, pt->n_names);
        return s != NULL && names_match(pt->names, pt->n_names, s, end, &after);
    }
    for (const char *s = path;; s++) {
        if (names_match(pt->names, pt->n_names, s, end, &after))
            return true;
        if ((s = memchr(s, '/', (size_t)(end - s))) == NULL)
            return false;
    }
}

/* Whether the path's last names are the first names, not all, of `pt`: a
 * directory whose renaming would move what `pt` matches out of its reach. */
static bool pattern_holds(const jpt__policy_pattern *pt, const char *path,
                          const char *end)
{
    const char *after;

    for (size_t n = 1; n < pt->n_names; n++) {
        const char *s = last_names(path, end, n);
        if (s == NULL)
            return false;
        if (names_match(pt->names, n, s, end, &after))
            return true;
    }
    return false;
}

bool jpt__pattern_has_name(const char *path, const char *name, bool last)
{
    const char *end = path + strlen(path);
    size_t n = strlen(name);

    for (const char *s = last ? last_names(path, end, 1) : path; s != NULL && s < end;) {
        const char *slash = memchr(s, '/', (size_t)(end - s));
        const char *stop = slash != NULL ? slash : end;
        if (name_matches(name, n, s, (size_t)(stop - s)))
            return true;
        s = slash != NULL ? slash + 1 : NULL;
    }
    return false;
}

/* The i-th pattern of `p`'s list: the built-in ones, then the configured. */
static const jpt__policy_pattern *nth_pattern(const jpt_policy *p, size_t i)
{
    return i < N_BUILTIN ? &builtin[i] : &p->patterns[i - N_BUILTIN];
}

const jpt__policy_pattern *jpt__pattern_find(const jpt_policy *p, const char *path,
                                             bool as_container, bool *inside)
{
    size_t n = N_BUILTIN + p->n_patterns;
    const char *end = path + strlen(path);

    *inside = false;
    if (strcmp(path, ".") == 0)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (pattern_matches(nth_pattern(p, i), path, end))
            return nth_pattern(p, i);
    for (size_t i = 0; as_container && i < n; i++)
        if (pattern_holds(nth_pattern(p, i), path, end)) {
            *inside = true;
            return nth_pattern(p, i);
        }
    return NULL;
}
