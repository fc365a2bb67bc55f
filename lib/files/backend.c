/* What every backend shares: entry lists, the guard (the access policy's
 * check on what a request touches), joining and taking paths. The bottom
 * of the files room after path.c: it calls no backend. */
#include <stdlib.h>
#include <string.h>

#include "files/files.h"

/* ---- Entry lists ------------------------------------------------------------------ */

void jpt__files_list_free(jpt__files_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        jpt__free(l->v[i].name);
    jpt__free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

int jpt__files_list_add(jpt__files_list *l, const char *name, size_t len, int kind)
{
    jpt__files_entry *v = jpt__array_reserve(l->v, &l->cap, l->n + 1, sizeof(*v), 16);
    char *copy;

    if (v == NULL)
        return JPT_ERR_NOMEM;
    l->v = v;
    if ((copy = jpt__memdup0(name, len)) == NULL)
        return JPT_ERR_NOMEM;
    v[l->n].name = copy;
    v[l->n].kind = kind;
    l->n++;
    return JPT_OK;
}

static int compare_entries(const void *a, const void *b)
{
    return strcmp(((const jpt__files_entry *)a)->name, ((const jpt__files_entry *)b)->name);
}

void jpt__files_list_sort(jpt__files_list *l)
{
    if (l->n > 1)
        qsort(l->v, l->n, sizeof(*l->v), compare_entries);
}

/* ---- Paths and messages ---------------------------------------------------------------- */

int jpt__files_take_path(int method, const char *path, char *norm, char *shown,
                         jpt__errbuf *e)
{
    size_t len = strlen(path);

    jpt__files_path_quote(path, len, shown);
    return jpt__files_path_check(jpt__vfs_method_name(method), path, len, norm, e);
}

int jpt__files_nomem(jpt__errbuf *e, int method)
{
    return jpt__err(e, JPT_ERR_NOMEM, "%s: out of memory for the result",
                    jpt__vfs_method_name(method));
}

bool jpt__files_is_text(const char *data, size_t len)
{
    return memchr(data, '\0', len) == NULL && jpt__utf8_valid(data, len);
}

bool jpt__files_join(char *out, const char *parent, const char *name)
{
    size_t pl = strcmp(parent, ".") == 0 ? 0 : strlen(parent), nl = strlen(name);

    if (pl + 1 + nl > JPT__FILES_PATH_MAX)
        return false;
    memmove(out, parent, pl);
    out[pl] = '/';
    memmove(out + pl + (pl > 0), name, nl + 1);
    return true;
}

/* ---- The guard (the access policy) ----------------------------------------------------- */

bool jpt__files_guarded(const jpt__files_ctx *c)
{
    return c->opts != NULL && c->opts->guard != NULL;
}

int jpt__files_guard(const jpt__files_ctx *c, int access, const char *resolved)
{
    char why[256] = "";

    if (!jpt__files_guarded(c))
        return JPT_OK;
    int rc = c->opts->guard(c->opts->guard_ud, access, resolved, why, sizeof(why));
    if (rc >= 0)
        return JPT_OK;
    return jpt__err(c->e, rc, "%s '%s': %s", c->method, c->shown,
                    why[0] != '\0' ? why : jpt_strerror(rc));
}

int jpt__files_guard_write(const jpt__files_ctx *c, const char *target, size_t exists_len,
                           bool to)
{
    char dir[JPT__FILES_PATH_MAX + 1];
    size_t len = strlen(target);
    int flag = to ? JPT__FILES_ACCESS_TO : 0, rc;
    const char *slash;

    if (!jpt__files_guarded(c))
        return JPT_OK;
    /* Each directory the write would make, outermost first: a loop, as
     * deep as the path is (issue 15 §1). */
    for (size_t i = exists_len + (exists_len > 0);
         i < len && (slash = memchr(target + i, '/', len - i)) != NULL;
         i = (size_t)(slash - target) + 1) {
        memcpy(dir, target, (size_t)(slash - target));
        dir[slash - target] = '\0';
        if ((rc = jpt__files_guard(c, JPT__FILES_ACCESS_CREATE | flag, dir)) < 0)
            return rc;
    }
    return jpt__files_guard(c, JPT__FILES_ACCESS_WRITE | flag, target);
}
