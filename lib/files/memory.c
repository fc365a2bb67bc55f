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
    node *next_free; /* node_free's list */
};

typedef struct memfs {
    node root;
} memfs;

static void blob_unref(blob *b)
{
    if (b != NULL && --b->refs == 0)
        jpt__free(b);
}

/* Frees a node and everything beneath it. Without recursion (issue 15
 * §1): a tool decides how deep directories nest, up to a path's 4095
 * bytes; the nodes still to free are a list. */
static void node_free(node *n)
{
    node *todo = n;

    if (n != NULL)
        n->next_free = NULL;
    while (todo != NULL) {
        node *cur = todo;
        todo = cur->next_free;
        for (size_t i = 0; i < cur->n; i++) {
            cur->kids[i]->next_free = todo;
            todo = cur->kids[i];
        }
        jpt__free(cur->kids);
        blob_unref(cur->content);
        jpt__free(cur->name);
        jpt__free(cur);
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

/* The node at `path` (normal form), or NULL; *parent_is_file tells a path
 * through a file (a "parent is not a directory") from a missing one. */
static node *lookup(memfs *m, const char *path, bool *through_file)
{
    node *cur = &m->root;

    if (through_file != NULL)
        *through_file = false;
    if (strcmp(path, ".") == 0)
        return cur;
    while (*path != '\0') {
        const char *slash = strchr(path, '/');
        size_t len = slash != NULL ? (size_t)(slash - path) : strlen(path);
        bool found;
        if (cur->kind != JPT_FILES_KIND_DIR) {
            if (through_file != NULL)
                *through_file = true;
            return NULL;
        }
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
        if (found && cur->kids[i]->kind != JPT_FILES_KIND_DIR)
            return jpt__err(c->e, create ? JPT_ERR_INVALID : JPT_ERR_NOT_FOUND, "%s '%s': %s",
                            c->method, c->shown,
                            create ? "a parent is not a directory"
                                   : "not found (a parent is not a directory)");
        if (found)
            cur = cur->kids[i];
        else if (!create)
            return jpt__err(c->e, JPT_ERR_NOT_FOUND, "%s '%s': not found", c->method,
                            c->shown);
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

static int not_found(const jpt__files_ctx *c, bool through_file)
{
    return jpt__err(c->e, JPT_ERR_NOT_FOUND, "%s '%s': not found%s", c->method, c->shown,
                    through_file ? " (a parent is not a directory)" : "");
}

static int mem_read(jpt_files *f, const jpt__files_ctx *c, const char *path, jpt__buf *out)
{
    size_t limit = c->opts != NULL && c->opts->read_limit ? c->opts->read_limit
                                                          : JPT_FILES_READ_LIMIT;
    bool through;
    node *n = lookup(f->impl, path, &through);

    if (n == NULL)
        return not_found(c, through);
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

static int mem_write(jpt_files *f, const jpt__files_ctx *c, const char *path, const void *data,
                     size_t len)
{
    node *dir, *kid = NULL;
    const char *name;
    bool found;
    int rc;

    if (strcmp(path, ".") == 0)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is the root directory", c->method,
                        c->shown);
    size_t at = 0;
    node *existing = NULL;
    if ((dir = lookup(f->impl, path, NULL)) != NULL && dir->kind == JPT_FILES_KIND_DIR)
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

static int mem_stat(jpt_files *f, const jpt__files_ctx *c, const char *path, int *kind,
                    uint64_t *size)
{
    node *n = lookup(f->impl, path, NULL);

    (void)c;
    *kind = n != NULL ? n->kind : 0;
    *size = n != NULL && n->content != NULL ? n->content->len : 0;
    return JPT_OK;
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

static int mem_list(jpt_files *f, const jpt__files_ctx *c, const char *path,
                    jpt__files_list *out)
{
    bool through;
    node *n = lookup(f->impl, path, &through);

    if (n == NULL)
        return not_found(c, through);
    if (n->kind != JPT_FILES_KIND_DIR)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is not a directory", c->method,
                        c->shown);
    return list_node(c, n, out);
}

static int mem_remove(jpt_files *f, const jpt__files_ctx *c, const char *path)
{
    node *dir;
    const char *name;
    bool found;

    if (strcmp(path, ".") == 0)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is the root directory", c->method,
                        c->shown);
    int rc = parent_of(f->impl, c, path, false, &dir, &name);
    if (rc < 0)
        return rc;
    size_t at = find_kid(dir, name, strlen(name), &found);
    if (!found)
        return not_found(c, false);
    node *n = dir->kids[at];
    if (n->kind == JPT_FILES_KIND_DIR)
        return jpt__err(c->e, JPT_ERR_INVALID,
                        "%s '%s': is a directory (fs.delete deletes files)", c->method,
                        c->shown);
    detach_kid(dir, n);
    node_free(n);
    return JPT_OK;
}

static int mem_rename(jpt_files *f, const jpt__files_ctx *c, const char *from, const char *to,
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
    int rc = parent_of(f->impl, c, from, false, &fdir, &fname);
    if (rc < 0)
        return rc;
    size_t at = find_kid(fdir, fname, strlen(fname), &found);
    if (!found)
        return not_found(c, false);
    node *n = fdir->kids[at];
    if (strncmp(to, from, flen) == 0 && (to[flen] == '/' || to[flen] == '\0'))
        return jpt__err(c->e, to[flen] == '\0' ? JPT_ERR_EXISTS : JPT_ERR_INVALID,
                        to[flen] == '\0' ? "%s '%s': exists already"
                                         : "%s '%s': cannot move a directory into itself",
                        c->method, to[flen] == '\0' ? shown_to : c->shown);
    if (lookup(f->impl, to, NULL) != NULL)
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
    bool through;
    node *n = lookup(m, path, &through);

    if (n == NULL)
        return not_found(c, through);
    if (n->kind != JPT_FILES_KIND_DIR)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is not a directory", c->method,
                        c->shown);
    if ((*dir = jpt__strdup(path)) == NULL)
        return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method, c->shown);
    return JPT_OK;
}

static int mem_dir_open(jpt_files *f, const jpt__files_ctx *c, const char *path, void **dir)
{
    return open_dir_handle(f->impl, c, path, dir);
}

static int mem_dir_open_at(jpt_files *f, const jpt__files_ctx *c, void *parent,
                           const char *name, const char *rel, void **dir)
{
    (void)parent;
    (void)name;
    return open_dir_handle(f->impl, c, rel, dir);
}

static int mem_dir_list(jpt_files *f, const jpt__files_ctx *c, void *dir, jpt__files_list *out)
{
    return mem_list(f, c, dir, out);
}

static void mem_dir_close(jpt_files *f, void *dir)
{
    (void)f;
    jpt__free(dir);
}

static int open_file(memfs *m, const jpt__files_ctx *c, const char *path, void **file)
{
    bool through;
    node *n = lookup(m, path, &through);

    if (n == NULL)
        return not_found(c, through);
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

static int mem_file_open(jpt_files *f, const jpt__files_ctx *c, const char *path, void **file)
{
    return open_file(f->impl, c, path, file);
}

static int mem_file_open_at(jpt_files *f, const jpt__files_ctx *c, void *dir, const char *name,
                            void **file)
{
    char path[JPT__FILES_PATH_MAX + 1];
    const char *d = dir;
    size_t dl = strlen(d), nl = strlen(name);

    if (strcmp(d, ".") == 0)
        dl = 0;
    if (dl + 1 + nl > JPT__FILES_PATH_MAX)
        return not_found(c, false);
    memcpy(path, d, dl);
    path[dl] = '/';
    memcpy(path + dl + (dl > 0), name, nl + 1);
    return open_file(f->impl, c, path, file);
}

static long mem_file_read(jpt_files *f, const jpt__files_ctx *c, void *file, char *buf, size_t n)
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

static void mem_file_close(jpt_files *f, void *file)
{
    mem_file *mf = file;

    (void)f;
    blob_unref(mf->content);
    jpt__free(mf);
}

static int mem_realpath(jpt_files *f, const jpt__files_ctx *c, const char *path, char *out)
{
    (void)f;
    (void)c;
    memcpy(out, path, strlen(path) + 1);
    return JPT_OK;
}

static void mem_destroy(jpt_files *f)
{
    memfs *m = f->impl;

    for (size_t i = 0; i < m->root.n; i++)
        node_free(m->root.kids[i]);
    jpt__free(m->root.kids);
    jpt__free(m);
}

static const jpt__files_backend memory_backend = {
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

int jpt__files_memory_new(jpt_files **out)
{
    memfs *m = jpt__calloc(1, sizeof(*m));

    if (m == NULL)
        return JPT_ERR_NOMEM;
    m->root.kind = JPT_FILES_KIND_DIR;
    int rc = jpt__files_wrap(JPT__FILES_MEMORY, &memory_backend, m, out);
    if (rc < 0)
        jpt__free(m);
    return rc;
}
