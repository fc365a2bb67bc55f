/* The memory backend: files and directories held in the process, with the
 * directory backend's path rules, results and errors (there are no
 * symlinks, modes or hard links here). For tests and for sandboxes without
 * a disk. A file's content is a shared, immutable block, so a grep that
 * reads a file across several steps keeps the content it started with
 * while the file is rewritten. */
#include <string.h>

#include "files/files.h"

typedef struct blob {
    unsigned refs;
    size_t len;
    char data[];
} blob;

typedef struct node node;
struct node {
    char *name;
    int kind; /* JPT_FILES_KIND_FILE or _DIR */
    blob *content;
    node **kids; /* sorted by name */
    size_t n, cap;
    node *doomed; /* node_free's list of what it has still to free */
};

typedef struct memfs {
    node root;
} memfs;

static void blob_unref(blob *b)
{
    if (b != NULL && --b->refs == 0)
        jpt__free(b);
}

/* Frees a node and everything beneath it: a loop over a list of what is
 * left, not a recursion, since renames make a tree deeper than any path
 * (issue 15 §1). */
static void node_free(node *n)
{
    if (n != NULL)
        n->doomed = NULL;
    while (n != NULL) {
        node *next = n->doomed;
        for (size_t i = 0; i < n->n; i++) {
            n->kids[i]->doomed = next;
            next = n->kids[i];
        }
        jpt__free(n->kids);
        blob_unref(n->content);
        jpt__free(n->name);
        jpt__free(n);
        n = next;
    }
}

/* The index of `name` among `dir`'s children, or where it would go. */
static size_t find_kid(const node *dir, const char *name, size_t len, bool *found)
{
    size_t lo = 0, hi = dir->n;

    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *k = dir->kids[mid]->name;
        int cmp = strncmp(k, name, len);
        if (cmp == 0)
            cmp = k[len] == '\0' ? 0 : 1;
        if (cmp == 0) {
            *found = true;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The node at `path` (normal form), or NULL. */
static node *lookup(memfs *m, const char *path)
{
    node *cur = &m->root;

    if (strcmp(path, ".") == 0)
        return cur;
    while (*path != '\0') {
        const char *slash = strchr(path, '/');
        size_t len = slash != NULL ? (size_t)(slash - path) : strlen(path);
        bool found;
        if (cur->kind != JPT_FILES_KIND_DIR)
            return NULL;
        size_t i = find_kid(cur, path, len, &found);
        if (!found)
            return NULL;
        cur = cur->kids[i];
        path += len + (slash != NULL);
    }
    return cur;
}

static node *node_new(const char *name, size_t len, int kind)
{
    node *n = jpt__calloc(1, sizeof(*n));

    if (n == NULL)
        return NULL;
    if ((n->name = jpt__memdup0(name, len)) == NULL) {
        jpt__free(n);
        return NULL;
    }
    n->kind = kind;
    return n;
}

static int insert_kid(node *dir, node *kid)
{
    bool found;
    size_t at = find_kid(dir, kid->name, strlen(kid->name), &found);
    node **kids = jpt__array_reserve(dir->kids, &dir->cap, dir->n + 1, sizeof(*kids), 8);

    if (kids == NULL)
        return JPT_ERR_NOMEM;
    dir->kids = kids;
    memmove(kids + at + 1, kids + at, (dir->n - at) * sizeof(*kids));
    kids[at] = kid;
    dir->n++;
    return JPT_OK;
}

static void detach_kid(node *dir, const node *kid)
{
    bool found;
    size_t at = find_kid(dir, kid->name, strlen(kid->name), &found);

    memmove(dir->kids + at, dir->kids + at + 1, (dir->n - at - 1) * sizeof(*dir->kids));
    dir->n--;
}

/* A file on the way is "not found" as a missing name is (dir.c says
 * why). */
static int not_found(const jpt__files_ctx *c)
{
    return jpt__err(c->e, JPT_ERR_NOT_FOUND, "%s '%s': not found", c->method, c->shown);
}

/* The parent directory of `path` (not "."), created with its missing
 * parents when `create`: JPT_ERR_NOT_FOUND, JPT_ERR_INVALID (a file on the
 * way), JPT_ERR_NOMEM (then nothing was created). `*name` is the last
 * component. */
static int parent_of(memfs *m, const jpt__files_ctx *c, const char *path, bool create,
                     node **out, const char **name)
{
    node *cur = &m->root, *made = NULL, *made_in = NULL;
    const char *last = strrchr(path, '/');

    *name = last != NULL ? last + 1 : path;
    while (last != NULL && path < last) {
        const char *slash = strchr(path, '/');
        size_t len = (size_t)(slash - path);
        bool found;
        size_t i = find_kid(cur, path, len, &found);
        if (found && cur->kids[i]->kind != JPT_FILES_KIND_DIR && create)
            return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': a parent is not a directory",
                            c->method, c->shown);
        if (found && cur->kids[i]->kind != JPT_FILES_KIND_DIR)
            return not_found(c);
        if (found)
            cur = cur->kids[i];
        else if (!create)
            return not_found(c);
        else {
            node *dir = node_new(path, len, JPT_FILES_KIND_DIR);
            if (dir == NULL || insert_kid(cur, dir) < 0) {
                node_free(dir);
                if (made != NULL) {
                    detach_kid(made_in, made);
                    node_free(made);
                }
                return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method,
                                c->shown);
            }
            if (made == NULL) {
                made = dir;
                made_in = cur;
            }
            cur = dir;
        }
        path = slash + 1;
    }
    *out = cur;
    return JPT_OK;
}

/* How much of the directories above the normal path `path` is there: the
 * length of its longest prefix of names that are directories, short of
 * its last name (0: only the root). */
static size_t existing_prefix(memfs *m, const char *path)
{
    node *cur = &m->root;
    size_t there = 0;

    for (const char *p = path, *slash; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
        bool found;
        size_t i = find_kid(cur, p, (size_t)(slash - p), &found);
        if (!found || cur->kids[i]->kind != JPT_FILES_KIND_DIR)
            break;
        cur = cur->kids[i];
        there = (size_t)(slash - path);
    }
    return there;
}

/* The guard on a write of `path` (issue 15 §2): every directory it would
 * create, then `path` itself; there are no symlinks here, so each is the
 * path as requested. */
static int guard_write(memfs *m, const jpt__files_ctx *c, const char *path, bool to)
{
    if (!jpt__files_guarded(c))
        return JPT_OK;
    return jpt__files_guard_write(c, path, existing_prefix(m, path), to);
}

static int mem_read(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, jpt__buf *out)
{
    size_t limit = c->opts != NULL && c->opts->read_limit ? c->opts->read_limit
                                                          : JPT_FILES_READ_LIMIT;
    /* The guard first, whatever is there (issue 15 §2). */
    int rc = jpt__files_guard(c, JPT__FILES_ACCESS_READ, path);
    if (rc < 0)
        return rc;
    node *n = lookup(f->impl, path);

    if (n == NULL)
        return not_found(c);
    if (n->kind == JPT_FILES_KIND_DIR)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is a directory", c->method, c->shown);
    if (n->content->len > limit)
        return jpt__err(c->e, JPT_ERR_LIMIT,
                        "%s '%s': the file is %zu bytes, over the read limit of %zu bytes",
                        c->method, c->shown, n->content->len, limit);
    if (jpt__buf_append(out, n->content->data, n->content->len) < 0)
        return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method, c->shown);
    return JPT_OK;
}

static int mem_write(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, const void *data,
                     size_t len)
{
    node *dir, *kid = NULL;
    const char *name;
    bool found;
    int rc;

    if (strcmp(path, ".") == 0)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is the root directory", c->method,
                        c->shown);
    if ((rc = guard_write(f->impl, c, path, false)) < 0)
        return rc;
    size_t at = 0;
    node *existing = NULL;
    if ((dir = lookup(f->impl, path)) != NULL && dir->kind == JPT_FILES_KIND_DIR)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is a directory", c->method, c->shown);
    blob *b = jpt__malloc(sizeof(blob) + len);
    if (b == NULL)
        return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method, c->shown);
    b->refs = 1;
    b->len = len;
    if (len > 0)
        memcpy(b->data, data, len);
    if ((rc = parent_of(f->impl, c, path, true, &dir, &name)) < 0) {
        jpt__free(b);
        return rc;
    }
    at = find_kid(dir, name, strlen(name), &found);
    if (found)
        existing = dir->kids[at];
    if (existing == NULL) {
        if ((kid = node_new(name, strlen(name), JPT_FILES_KIND_FILE)) == NULL ||
            insert_kid(dir, kid) < 0) {
            node_free(kid);
            jpt__free(b);
            return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method,
                            c->shown);
        }
        existing = kid;
    }
    blob_unref(existing->content);
    existing->content = b;
    return JPT_OK;
}

static int mem_stat(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, int *kind,
                    uint64_t *size)
{
    int rc = jpt__files_guard(c, JPT__FILES_ACCESS_READ, path);
    node *n = rc == JPT_OK ? lookup(f->impl, path) : NULL;

    *kind = n != NULL ? n->kind : 0;
    if (size != NULL)
        *size = n != NULL && n->content != NULL ? n->content->len : 0;
    return rc;
}

static int list_node(const jpt__files_ctx *c, const node *n, jpt__files_list *out)
{
    for (size_t i = 0; i < n->n; i++)
        if (jpt__files_list_add(out, n->kids[i]->name, strlen(n->kids[i]->name),
                                n->kids[i]->kind) < 0)
            return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method,
                            c->shown);
    return JPT_OK;
}

static int mem_list(jpt__files_sync *f, const jpt__files_ctx *c, const char *path,
                    jpt__files_list *out)
{
    int rc = jpt__files_guard(c, JPT__FILES_ACCESS_READ, path);
    if (rc < 0)
        return rc;
    node *n = lookup(f->impl, path);

    if (n == NULL)
        return not_found(c);
    if (n->kind != JPT_FILES_KIND_DIR)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is not a directory", c->method,
                        c->shown);
    return list_node(c, n, out);
}

static int mem_remove(jpt__files_sync *f, const jpt__files_ctx *c, const char *path)
{
    node *dir;
    const char *name;
    bool found;

    if (strcmp(path, ".") == 0)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is the root directory", c->method,
                        c->shown);
    int rc = jpt__files_guard(c, JPT__FILES_ACCESS_WRITE, path);
    if (rc == JPT_OK)
        rc = parent_of(f->impl, c, path, false, &dir, &name);
    if (rc < 0)
        return rc;
    size_t at = find_kid(dir, name, strlen(name), &found);
    if (!found)
        return not_found(c);
    node *n = dir->kids[at];
    if (n->kind == JPT_FILES_KIND_DIR)
        return jpt__err(c->e, JPT_ERR_INVALID,
                        "%s '%s': is a directory (fs.delete deletes files)", c->method,
                        c->shown);
    detach_kid(dir, n);
    node_free(n);
    return JPT_OK;
}

static int mem_rename(jpt__files_sync *f, const jpt__files_ctx *c, const char *from, const char *to,
                      const char *shown_to)
{
    jpt__files_ctx cto = *c;
    node *fdir, *tdir;
    const char *fname, *tname;
    bool found;
    size_t flen = strlen(from);

    cto.shown = shown_to;
    if (strcmp(from, ".") == 0 || strcmp(to, ".") == 0)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is the root directory", c->method,
                        strcmp(from, ".") == 0 ? c->shown : shown_to);
    int rc = jpt__files_guard(c, JPT__FILES_ACCESS_WRITE, from);
    if (rc == JPT_OK)
        rc = parent_of(f->impl, c, from, false, &fdir, &fname);
    if (rc < 0)
        return rc;
    size_t at = find_kid(fdir, fname, strlen(fname), &found);
    if (!found)
        return not_found(c);
    if ((rc = guard_write(f->impl, &cto, to, true)) < 0)
        return rc;
    node *n = fdir->kids[at];
    if (strncmp(to, from, flen) == 0 && (to[flen] == '/' || to[flen] == '\0'))
        return jpt__err(c->e, to[flen] == '\0' ? JPT_ERR_EXISTS : JPT_ERR_INVALID,
                        to[flen] == '\0' ? "%s '%s': exists already"
                                         : "%s '%s': cannot move a directory into itself",
                        c->method, to[flen] == '\0' ? shown_to : c->shown);
    if (lookup(f->impl, to) != NULL)
        return jpt__err(c->e, JPT_ERR_EXISTS, "%s '%s': exists already", c->method, shown_to);
    char *name = jpt__strdup(strrchr(to, '/') != NULL ? strrchr(to, '/') + 1 : to);
    if (name == NULL)
        return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method, c->shown);
    if ((rc = parent_of(f->impl, &cto, to, true, &tdir, &tname)) < 0) {
        jpt__free(name);
        return rc;
    }
    node **kids = jpt__array_reserve(tdir->kids, &tdir->cap, tdir->n + 1, sizeof(*kids), 8);
    if (kids == NULL) {
        jpt__free(name);
        return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method, c->shown);
    }
    tdir->kids = kids;
    detach_kid(fdir, n);
    jpt__free(n->name);
    n->name = name;
    return insert_kid(tdir, n); /* room reserved: cannot fail */
}

/* ---- the tree grep walks: handles are copies of paths ---------------------------- */

typedef struct mem_file {
    blob *content;
    size_t off;
} mem_file;

static int open_dir_handle(memfs *m, const jpt__files_ctx *c, const char *path, void **dir)
{
    node *n = lookup(m, path);

    if (n == NULL)
        return not_found(c);
    if (n->kind != JPT_FILES_KIND_DIR)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is not a directory", c->method,
                        c->shown);
    if ((*dir = jpt__strdup(path)) == NULL)
        return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method, c->shown);
    return JPT_OK;
}

static int mem_dir_open(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, void **dir)
{
    return open_dir_handle(f->impl, c, path, dir);
}

static int mem_dir_open_at(jpt__files_sync *f, const jpt__files_ctx *c, void *parent,
                           const char *name, const char *rel, void **dir)
{
    (void)parent;
    (void)name;
    return open_dir_handle(f->impl, c, rel, dir);
}

static int mem_dir_list(jpt__files_sync *f, const jpt__files_ctx *c, void *dir, jpt__files_list *out)
{
    return mem_list(f, c, dir, out);
}

static void mem_dir_close(jpt__files_sync *f, void *dir)
{
    (void)f;
    jpt__free(dir);
}

static int open_file(memfs *m, const jpt__files_ctx *c, const char *path, void **file)
{
    node *n = lookup(m, path);

    if (n == NULL)
        return not_found(c);
    if (n->kind != JPT_FILES_KIND_FILE)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is a directory", c->method, c->shown);
    mem_file *mf = jpt__malloc(sizeof(*mf));
    if (mf == NULL)
        return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method, c->shown);
    mf->content = n->content;
    mf->content->refs++;
    mf->off = 0;
    *file = mf;
    return JPT_OK;
}

static int mem_file_open(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, void **file)
{
    return open_file(f->impl, c, path, file);
}

static int mem_file_open_at(jpt__files_sync *f, const jpt__files_ctx *c, void *dir, const char *name,
                            void **file)
{
    char path[JPT__FILES_PATH_MAX + 1];
    const char *d = dir;
    size_t dl = strlen(d), nl = strlen(name);

    if (strcmp(d, ".") == 0)
        dl = 0;
    if (dl + 1 + nl > JPT__FILES_PATH_MAX)
        return not_found(c);
    memcpy(path, d, dl);
    path[dl] = '/';
    memcpy(path + dl + (dl > 0), name, nl + 1);
    return open_file(f->impl, c, path, file);
}

static long mem_file_read(jpt__files_sync *f, const jpt__files_ctx *c, void *file, char *buf, size_t n)
{
    mem_file *mf = file;
    size_t left = mf->content->len - mf->off;

    (void)f;
    (void)c;
    if (n > left)
        n = left;
    memcpy(buf, mf->content->data + mf->off, n);
    mf->off += n;
    return (long)n;
}

static void mem_file_close(jpt__files_sync *f, void *file)
{
    mem_file *mf = file;

    (void)f;
    blob_unref(mf->content);
    jpt__free(mf);
}

static int mem_realpath(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, char *out)
{
    (void)f;
    (void)c;
    memcpy(out, path, strlen(path) + 1);
    return JPT_OK;
}

static void mem_destroy(jpt__files_sync *f)
{
    memfs *m = f->impl;

    for (size_t i = 0; i < m->root.n; i++)
        node_free(m->root.kids[i]);
    jpt__free(m->root.kids);
    jpt__free(m);
}

static const jpt__files_sync_ops memory_backend = {
    .read = mem_read,
    .write = mem_write,
    .stat = mem_stat,
    .list = mem_list,
    .remove = mem_remove,
    .rename = mem_rename,
    .dir_open = mem_dir_open,
    .dir_open_at = mem_dir_open_at,
    .dir_list = mem_dir_list,
    .dir_close = mem_dir_close,
    .file_open = mem_file_open,
    .file_open_at = mem_file_open_at,
    .file_read = mem_file_read,
    .file_close = mem_file_close,
    .realpath = mem_realpath,
    .destroy = mem_destroy,
};

int jpt__files_memory_new(jpt__files_be *out)
{
    memfs *m = jpt__calloc(1, sizeof(*m));

    if (m == NULL)
        return JPT_ERR_NOMEM;
    m->root.kind = JPT_FILES_KIND_DIR;
    int rc = jpt__files_sync_new(&memory_backend, m, 0, out);
    if (rc < 0)
        jpt__free(m);
    return rc;
}
