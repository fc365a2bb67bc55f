/* Walks of a workspace (sandbox.h, "walk.c"): a bounded, iterative walk
 * beneath a directory fd that never follows a symbolic link and can stop
 * after a time budget and go on later; what of a repository an entry is
 * (a `.git`, a bare repository's HEAD, objects, refs, commondir); the
 * stamps that tell whether the directories walked changed since; and the
 * removal of a tree, in steps as well.
 *
 * Every directory is opened beneath the root's fd with RESOLVE_BENEATH and
 * RESOLVE_NO_SYMLINKS, so a symbolic link swapped in meanwhile is not
 * followed: what is gone or is no directory beneath the root any more is
 * passed over (a walk) or left (a removal). A directory a walk cannot
 * open or list for another reason fails it: what lies beneath may still
 * be reached by name. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "sandbox/sandbox.h"

/* How often (in entries) a step looks at the clock. */
#define CLOCK_EVERY 64

/* A directory whose ctime is this close to when it was listed may change
 * again within the same timestamp: its stamp is not trusted (as git's
 * index treats "racily clean" entries). File systems keep times to at
 * least this (a jiffy, or whole seconds on some). */
#define RACY_NS 2000000000LL

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t wall_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int jpt__walk_open(int root_fd, const char *rel, int flags)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };

    return (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
}

/* ---- Repositories ------------------------------------------------------------------ */

unsigned jpt__repo_mark(const char *name, unsigned char type)
{
    if (strcasecmp(name, ".git") == 0)
        return JPT__REPO_GIT;
    if (strcmp(name, "HEAD") == 0)
        return JPT__REPO_HEAD;
    if (strcmp(name, "commondir") == 0 && type != DT_DIR)
        return JPT__REPO_COMMONDIR;
    if (type != DT_DIR && type != DT_LNK)
        return 0;
    if (strcmp(name, "objects") == 0)
        return JPT__REPO_OBJECTS;
    if (strcmp(name, "refs") == 0)
        return JPT__REPO_REFS;
    return 0;
}

bool jpt__repo_bare(unsigned marks)
{
    /* git's is_git_directory(): HEAD, and objects and refs (or a
     * commondir that names where they are). */
    return (marks & JPT__REPO_HEAD) &&
           ((marks & (JPT__REPO_OBJECTS | JPT__REPO_REFS)) ==
                (JPT__REPO_OBJECTS | JPT__REPO_REFS) ||
            (marks & JPT__REPO_COMMONDIR));
}

/* ---- Sorted path sets --------------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void jpt__pathv_sort(jpt__pathv *l)
{
    /* The flags go with their paths: sorted by hand as pairs would need a
     * copy; a set's flags are not read, so they are cleared. */
    if (l->n > 1)
        qsort(l->v, l->n, sizeof(l->v[0]), by_name);
    for (size_t i = 0; l->flag != NULL && i < l->n; i++)
        l->flag[i] = false;
}

bool jpt__pathv_has(const jpt__pathv *l, const char *path)
{
    return l->n > 0 && bsearch(&path, l->v, l->n, sizeof(l->v[0]), by_name) != NULL;
}

/* ---- The walk ----------------------------------------------------------------------- */

struct jpt__walk {
    int root_fd;
    size_t max, scanned;
    jpt__walk_fn visit;
    jpt__walk_dir_fn dir_done; /* may be NULL */
    void *ud;
    jpt__pathv todo;          /* directories to list, relative ("." the root) */
    size_t next;
    DIR *dir;                 /* the directory being listed, todo.v[next - 1] */
    unsigned marks;           /* its entries' JPT__REPO_* */
    jpt__buf rel;
    jpt__walk_stamps *stamps; /* where listed directories are stamped, or NULL */
};

int jpt__walk_new(int root_fd, size_t max_entries, jpt__walk_fn visit, jpt__walk_dir_fn dir_done,
                  void *ud, jpt__walk **out)
{
    jpt__walk *w = jpt__calloc(1, sizeof(*w));

    *out = NULL;
    if (w == NULL)
        return JPT_ERR_NOMEM;
    w->root_fd = root_fd;
    w->max = max_entries;
    w->visit = visit;
    w->dir_done = dir_done;
    w->ud = ud;
    w->rel = (jpt__buf)JPT__BUF_INIT;
    *out = w;
    return JPT_OK;
}

void jpt__walk_stamp_into(jpt__walk *w, jpt__walk_stamps *s)
{
    w->stamps = s;
}

int jpt__walk_add(jpt__walk *w, const char *rel)
{
    return jpt__pathv_add(&w->todo, rel, false);
}

size_t jpt__walk_scanned(const jpt__walk *w)
{
    return w->scanned;
}

static int stamp(jpt__walk_stamps *s, const char *rel, const struct stat *st)
{
    jpt__walk_stamp *grown = jpt__array_reserve(s->v, &s->cap, s->n + 1, sizeof(*grown), 64);
    char *copy = jpt__strdup(rel);

    if (grown == NULL || copy == NULL) {
        if (grown != NULL)
            s->v = grown;
        jpt__free(copy);
        return JPT_ERR_NOMEM;
    }
    s->v = grown;
    int64_t ctime = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
    s->v[s->n++] = (jpt__walk_stamp){copy, (uint64_t)st->st_dev, (uint64_t)st->st_ino, ctime,
                                     ctime >= wall_ns() - RACY_NS};
    return JPT_OK;
}

/* Whether a directory that `errno` kept from being opened can be passed
 * over: it is gone, no longer a directory, or a symbolic link now
 * (nothing of it is beneath the root by that path), or it may not be
 * searched (no process of this uid, with fewer rights, reaches a name in
 * it either). One this process may search but not read (mode 0311: its
 * names cannot be listed, yet each is reached by name), or that failed
 * for want of a system call (openat2 before Linux 5.6, or under a
 * tracer), an fd or memory, cannot: the walk would not see what it holds. */
static bool passed_over(int root_fd, const char *rel, int e)
{
    if (e == ENOENT || e == ENOTDIR || e == ELOOP || e == EXDEV)
        return true;
    /* Not searchable: the check itself must say so (EACCES), not fail. */
    return (e == EACCES || e == EPERM) &&
           faccessat(root_fd, rel, X_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0 &&
           errno == EACCES;
}

bool jpt__walk_shut_but_owned(int root_fd, const char *rel)
{
    struct stat st;

    return faccessat(root_fd, rel, X_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0 &&
           errno == EACCES && fstatat(root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           st.st_uid == geteuid();
}

/* Opens the next directory to list; false when none is left. */
static int open_next(jpt__walk *w, bool *opened, jpt__errbuf *err)
{
    *opened = false;
    while (w->next < w->todo.n) {
        const char *rel = w->todo.v[w->next++];
        int fd = jpt__walk_open(w->root_fd, rel, O_RDONLY | O_DIRECTORY);
        struct stat st;
        if (fd < 0) {
            int e = errno;
            if (passed_over(w->root_fd, rel, e))
                continue;
            return jpt__err(err, e == ENOMEM ? JPT_ERR_NOMEM : JPT_ERR_IO,
                            "the directory %.300s cannot be listed to find what lies beneath "
                            "it: %s",
                            rel, strerror(e));
        }
        if (w->stamps != NULL) {
            int rc = fstat(fd, &st) == 0 ? stamp(w->stamps, rel, &st) : JPT_OK;
            if (rc < 0) {
                close(fd);
                return rc;
            }
        }
        if ((w->dir = fdopendir(fd)) == NULL) {
            close(fd);
            return JPT_ERR_NOMEM;
        }
        w->marks = 0;
        *opened = true;
        return JPT_OK;
    }
    return JPT_OK;
}

/* The entry `name` of the directory being listed. */
static int visit_entry(jpt__walk *w, const char *dir, const char *name, unsigned char type,
                       jpt__errbuf *err)
{
    int rc;

    /* "<dir>/<name>" (the name alone in the root), without printf: this
     * runs for every entry. */
    w->rel.len = 0;
    if (strcmp(dir, ".") != 0 && ((rc = jpt__buf_puts(&w->rel, dir)) < 0 ||
                                  (rc = jpt__buf_putc(&w->rel, '/')) < 0))
        return rc;
    if ((rc = jpt__buf_puts(&w->rel, name)) < 0)
        return rc;
    if (++w->scanned > w->max)
        return jpt__err(err, JPT_ERR_LIMIT, "more than %zu entries", w->max);
    if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(w->root_fd, w->rel.data, &st, AT_SYMLINK_NOFOLLOW) != 0)
            return JPT_OK; /* gone meanwhile */
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
    }
    w->marks |= jpt__repo_mark(name, type);
    rc = w->visit(w->ud, w->rel.data, name, type);
    if (rc < 0 || rc != JPT__WALK_DESCEND || type != DT_DIR)
        return rc < 0 ? rc : JPT_OK;
    return jpt__pathv_add(&w->todo, w->rel.data, false);
}

static int close_dir(jpt__walk *w)
{
    int rc = JPT_OK;

    closedir(w->dir);
    w->dir = NULL;
    if (w->dir_done != NULL)
        rc = w->dir_done(w->ud, w->todo.v[w->next - 1], w->marks);
    return rc;
}

int jpt__walk_step(jpt__walk *w, uint64_t budget_ns, jpt__errbuf *err)
{
    uint64_t deadline = budget_ns != 0 ? now_ns() + budget_ns : 0;
    unsigned count = 0;
    int rc = JPT_OK;

    for (;;) {
        if (w->dir == NULL) {
            bool opened;
            if ((rc = open_next(w, &opened, err)) < 0 || !opened)
                break;
        }
        struct dirent *e;
        /* errno tells readdir's end from its failure; a visit may set it. */
        while (rc == JPT_OK && (errno = 0, e = readdir(w->dir)) != NULL) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                rc = visit_entry(w, w->todo.v[w->next - 1], e->d_name, e->d_type, err);
            if (rc == JPT_OK && deadline != 0 && ++count % CLOCK_EVERY == 0 &&
                now_ns() >= deadline)
                return 1;
        }
        if (rc == JPT_OK && errno != 0)
            rc = jpt__err(err, JPT_ERR_IO,
                          "the directory %.300s cannot be listed to find what lies beneath "
                          "it: %s",
                          w->todo.v[w->next - 1], strerror(errno));
        if (rc < 0)
            break;
        if ((rc = close_dir(w)) < 0)
            break;
        if (deadline != 0 && now_ns() >= deadline)
            return w->next < w->todo.n ? 1 : 0;
    }
    if (rc == JPT_ERR_NOMEM && err->text[0] == '\0')
        jpt__err(err, rc, "out of memory walking the workspace");
    return rc;
}

void jpt__walk_free(jpt__walk *w)
{
    if (w == NULL)
        return;
    if (w->dir != NULL)
        closedir(w->dir);
    jpt__pathv_free(&w->todo);
    jpt__buf_free(&w->rel);
    jpt__free(w);
}

/* ---- Stamps ----------------------------------------------------------------------------- */

bool jpt__walk_stamps_hold(const jpt__walk_stamps *s, int root_fd)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].racy)
            return false;
    return jpt__walk_stamps_same(s, root_fd);
}

static bool stamp_same(const jpt__walk_stamp *p, int root_fd)
{
    struct stat st;

    return fstatat(root_fd, p->rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
           (uint64_t)st.st_dev == p->dev && (uint64_t)st.st_ino == p->ino &&
           (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec == p->ctime;
}

int jpt__walk_stamps_step(const jpt__walk_stamps *s, int root_fd, size_t *next,
                          uint64_t budget_ns)
{
    uint64_t deadline = budget_ns != 0 ? now_ns() + budget_ns : 0;

    for (size_t i = *next; i < s->n; i++) {
        if (!stamp_same(&s->v[i], root_fd))
            return -1;
        *next = i + 1;
        /* A stat costs a microsecond or two: the clock every 64. */
        if (deadline != 0 && (i & 63) == 63 && *next < s->n && now_ns() >= deadline)
            return 1;
    }
    return 0;
}

bool jpt__walk_stamps_same(const jpt__walk_stamps *s, int root_fd)
{
    size_t next = 0;

    return jpt__walk_stamps_step(s, root_fd, &next, 0) == 0;
}

void jpt__walk_stamps_free(jpt__walk_stamps *s)
{
    for (size_t i = 0; i < s->n; i++)
        jpt__free(s->v[i].rel);
    jpt__free(s->v);
    memset(s, 0, sizeof(*s));
}

/* ---- Removing a tree ------------------------------------------------------------------ */

/* The tree is emptied from its top: a file is unlinked where it is; a
 * directory below the top's children is renamed up to the top, to be
 * emptied as one of them. So at most two directories are open at once
 * however deep the tree is (its depth is a tool's to choose), and each
 * pass over the top takes what is there, until one finds it empty. */
struct jpt__remove {
    int parent_fd;      /* where `name` is (not owned) */
    char *name;
    DIR *top;           /* `name`, being emptied */
    DIR *child;         /* one of its directories, being emptied */
    char child_name[NAME_MAX + 1];
    bool seen;          /* this pass over the top met an entry */
    uint64_t renamed;   /* names made for the directories moved up */
    size_t removed;
    bool started, failed, done;
};

int jpt__remove_new(int parent_fd, const char *name, jpt__remove **out)
{
    jpt__remove *r = jpt__calloc(1, sizeof(*r));

    *out = NULL;
    if (r == NULL || (r->name = jpt__strdup(name)) == NULL) {
        jpt__free(r);
        return JPT_ERR_NOMEM;
    }
    r->parent_fd = parent_fd;
    *out = r;
    return JPT_OK;
}

size_t jpt__remove_count(const jpt__remove *r)
{
    return r->removed;
}

/* `name` beneath `fd` opened as a directory to list, never through a
 * symbolic link; one its owner made unreadable is made readable first
 * (a process that is not root cannot list a directory of mode 000). */
static DIR *open_dir(int fd, const char *name)
{
    int dfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d;

    if (dfd < 0 && errno == EACCES && fchmodat(fd, name, 0700, 0) == 0)
        dfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return NULL;
    if ((d = fdopendir(dfd)) == NULL)
        close(dfd);
    return d;
}

/* Moves the directory `name` of the child up to the top, under a name of
 * its own. */
static void move_up(jpt__remove *r, const char *name)
{
    char to[32];

    for (int tries = 0; tries < 64; tries++) {
        snprintf(to, sizeof(to), ".jptool-rm-%llu", (unsigned long long)r->renamed++);
        if (syscall(SYS_renameat2, dirfd(r->child), name, dirfd(r->top), to,
                    1 /* RENAME_NOREPLACE */) == 0)
            return;
        if (errno != EEXIST)
            break;
    }
    r->failed = true;
}

/* One entry of the top (`child` NULL) or of the child being emptied. */
static void remove_entry(jpt__remove *r, DIR *in, const char *name)
{
    if (unlinkat(dirfd(in), name, 0) == 0) {
        r->removed++;
        return;
    }
    if (errno != EISDIR) {
        if (errno != ENOENT)
            r->failed = true;
        return;
    }
    if (in == r->child) {
        move_up(r, name);
        return;
    }
    if ((r->child = open_dir(dirfd(r->top), name)) == NULL) {
        r->failed = true;
        return;
    }
    snprintf(r->child_name, sizeof(r->child_name), "%s", name);
}

int jpt__remove_step(jpt__remove *r, uint64_t budget_ns)
{
    uint64_t deadline = budget_ns != 0 ? now_ns() + budget_ns : 0;
    unsigned count = 0;

    if (r->done)
        return r->failed ? JPT_ERR_IO : 0;
    if (!r->started) {
        r->started = true;
        /* Not a directory (a file, a symbolic link): one unlink. */
        if (unlinkat(r->parent_fd, r->name, 0) == 0 || errno == ENOENT) {
            r->removed += errno != ENOENT;
            r->done = true;
            return 0;
        }
        if (errno != EISDIR || (r->top = open_dir(r->parent_fd, r->name)) == NULL) {
            r->failed = r->done = true;
            return JPT_ERR_IO;
        }
    }
    for (;;) {
        DIR *in = r->child != NULL ? r->child : r->top;
        struct dirent *e = readdir(in);
        if (e == NULL && in == r->child) {
            closedir(r->child);
            r->child = NULL;
            if (unlinkat(dirfd(r->top), r->child_name, AT_REMOVEDIR) == 0)
                r->removed++;
            else if (errno != ENOENT)
                r->failed = true;
        } else if (e == NULL) {
            /* A pass that met nothing: the top is empty (or holds only
             * what cannot be removed). */
            if (!r->seen || r->failed)
                break;
            r->seen = false;
            rewinddir(r->top);
        } else if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            if (in == r->top)
                r->seen = true;
            remove_entry(r, in, e->d_name);
        }
        if (deadline != 0 && ++count % CLOCK_EVERY == 0 && now_ns() >= deadline)
            return 1;
    }
    closedir(r->top);
    r->top = NULL;
    if (unlinkat(r->parent_fd, r->name, AT_REMOVEDIR) == 0)
        r->removed++;
    else if (errno != ENOENT)
        r->failed = true;
    r->done = true;
    return r->failed ? JPT_ERR_IO : 0;
}

void jpt__remove_free(jpt__remove *r)
{
    if (r == NULL)
        return;
    if (r->child != NULL)
        closedir(r->child);
    if (r->top != NULL)
        closedir(r->top);
    jpt__free(r->name);
    jpt__free(r);
}

int jpt__remove_tree(int parent_fd, const char *name)
{
    jpt__remove *r = NULL;
    int rc = jpt__remove_new(parent_fd, name, &r);

    if (rc == JPT_OK)
        rc = jpt__remove_step(r, 0);
    jpt__remove_free(r);
    return rc;
}
