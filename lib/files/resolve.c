/* Resolution beneath the root (issue 9 §2): every path is opened from the
 * root's fd, by openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), which the
 * kernel checks atomically, or where openat2 is missing by a walk of one
 * component at a time that opens each with O_NOFOLLOW and follows a
 * symlink only by reading it and splicing its target into the rest of the
 * path. Either way what is returned is an fd, and callers do their checks
 * (fstat) and their I/O on it: a name is never checked and then opened
 * again. Every step is a loop over the components, never a recursion: a
 * tool controls how many there are (issue 15 §1). A path that is not there
 * says where it stopped, for the policy to judge it, and a write plans the
 * directories it will create before any is made (issue 15 §2). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "files/dir.h"

/* Symlinks followed in one resolution, as the kernel allows (MAXSYMLINKS). */
#define MAX_LINKS 40
/* Resolutions retried because the tree changed under them. */
#define MAX_RETRIES 64

static int resolve_openat2(jpt__dirfs *d, const char *path, int oflags, unsigned how)
{
    struct open_how oh = {
        .flags = (uint64_t)(oflags | O_CLOEXEC | (how & JPT__RESOLVE_FOLLOW ? 0 : O_NOFOLLOW)),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
                   (how & JPT__RESOLVE_NO_SYMLINKS ? RESOLVE_NO_SYMLINKS : 0),
    };

    for (int tries = 0; tries < MAX_RETRIES; tries++) {
        long fd = syscall(SYS_openat2, d->root_fd, path, &oh, sizeof(oh));
        if (fd >= 0)
            return (int)fd;
        /* EAGAIN: a rename raced with a ".." (openat2(2)); try again. */
        if (errno != EAGAIN)
            return -errno;
    }
    return -EAGAIN;
}

/* The walk's state: the directory it is in (`cur`, the root's fd or one it
 * owns), the real path to it, and the components still to resolve. */
typedef struct walk {
    jpt__dirfs *d;
    int cur;
    char res[JPT__FILES_PATH_MAX + 1];
    size_t rlen;
    char rest[2 * (JPT__FILES_PATH_MAX + 1)];
    size_t rpos, rend; /* rest[rpos..rend) */
    size_t link_end;   /* rest[0..link_end) came from symlinks' targets */
    size_t cstart;     /* where the component being resolved starts in rest */
    int links;
    jpt__dir_stop *stop; /* may be NULL */
    bool keep;           /* JPT__RESOLVE_KEEP */
} walk;

static void walk_enter(walk *w, int fd)
{
    if (w->cur != w->d->root_fd)
        close(w->cur);
    w->cur = fd;
}

/* Reopens the directory at w->res from the root, after a ".." dropped its
 * last component: real directories only, so a directory swapped for a
 * symlink meanwhile fails (EAGAIN) instead of leading anywhere. */
static int walk_reopen(walk *w)
{
    int fd = w->d->root_fd;
    size_t i = 0;

    while (i < w->rlen) {
        char comp[JPT__FILES_PATH_MAX + 1];
        const char *slash = memchr(w->res + i, '/', w->rlen - i);
        size_t end = slash != NULL ? (size_t)(slash - w->res) : w->rlen;
        memcpy(comp, w->res + i, end - i);
        comp[end - i] = '\0';
        int next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        if (fd != w->d->root_fd)
            close(fd);
        if (next < 0)
            return saved == ENOENT || saved == ENOTDIR || saved == ELOOP ? -EAGAIN : -saved;
        fd = next;
        i = end + 1;
    }
    walk_enter(w, fd);
    return 0;
}

/* Replaces the current component by the target of the symlink open as
 * `link_fd` (O_PATH | O_NOFOLLOW): the rest of the path follows it. */
static int walk_splice(walk *w, int link_fd, unsigned how)
{
    char target[JPT__FILES_PATH_MAX + 2];

    if (how & JPT__RESOLVE_NO_SYMLINKS)
        return -ELOOP;
    if (++w->links > MAX_LINKS)
        return -ELOOP;
    ssize_t n = readlinkat(link_fd, "", target, sizeof(target));
    if (n < 0)
        return errno == EINVAL ? -EAGAIN : -errno;
    if ((size_t)n >= sizeof(target) - 1)
        return -ENAMETOOLONG;
    if (n == 0)
        return -ENOENT;
    /* An absolute target is outside by definition: RESOLVE_BENEATH refuses
     * it too, so both modes agree. */
    if (target[0] == '/')
        return -EXDEV;
    size_t tail = w->rend - w->rpos;
    if ((size_t)n + 1 + tail > sizeof(w->rest))
        return -ENAMETOOLONG;
    /* What is left of an earlier target stays a target's text. */
    size_t linked = w->link_end > w->rpos ? w->link_end - w->rpos : 0;
    memmove(w->rest + n + 1, w->rest + w->rpos, tail);
    memcpy(w->rest, target, (size_t)n);
    w->rest[n] = '/';
    w->rpos = 0;
    w->rend = (size_t)n + 1 + tail;
    w->link_end = (size_t)n + (linked > 0 ? 1 + linked : 0);
    return 0;
}

static int walk_push(walk *w, const char *comp, size_t clen)
{
    if (w->rlen + 1 + clen > JPT__FILES_PATH_MAX)
        return -ENAMETOOLONG;
    if (w->rlen > 0)
        w->res[w->rlen++] = '/';
    memcpy(w->res + w->rlen, comp, clen);
    w->rlen += clen;
    w->res[w->rlen] = '\0';
    return 0;
}

/* Opens the last component `comp` in w->cur; 1 means it was a symlink
 * that was spliced in, and the walk goes on. */
static int walk_last(walk *w, const char *comp, int oflags, unsigned how, int *out)
{
    bool follow = how & JPT__RESOLVE_FOLLOW;
    int fd = openat(w->cur, comp, oflags | O_NOFOLLOW | O_CLOEXEC);

    if (fd >= 0) {
        struct stat st;
        if (!((oflags & O_PATH) && follow))
            return *out = fd, 0;
        if (fstat(fd, &st) < 0) {
            int saved = errno;
            close(fd);
            return -saved;
        }
        if (!S_ISLNK(st.st_mode))
            return *out = fd, 0;
    } else {
        /* O_NOFOLLOW meets a symlink as ELOOP (ENOTDIR with O_DIRECTORY on
         * some kernels); anything else is the answer. */
        int saved = errno;
        if (saved != ELOOP && saved != ENOTDIR)
            return -saved;
        fd = openat(w->cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISLNK(st.st_mode)) {
            if (fd >= 0)
                close(fd);
            return saved == ELOOP ? -EAGAIN : -saved;
        }
        if (!follow) {
            close(fd);
            return -ELOOP;
        }
    }
    int rc = walk_splice(w, fd, how);
    close(fd);
    return rc < 0 ? rc : 1;
}

/* Steps into the directory `comp` of w->cur; 1 means it was a symlink that
 * was spliced in. */
static int walk_into(walk *w, const char *comp, size_t clen, unsigned how)
{
    struct stat st;
    int fd = openat(w->cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        int saved = errno;
        close(fd);
        return -saved;
    }
    if (S_ISLNK(st.st_mode)) {
        int rc = walk_splice(w, fd, how);
        close(fd);
        return rc < 0 ? rc : 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        close(fd);
        return -ENOTDIR;
    }
    int rc = walk_push(w, comp, clen);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    walk_enter(w, fd);
    return 0;
}

/* Whether s[0..n) is "." or "..". */
static bool is_dots(const char *s, size_t n)
{
    return (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.');
}

/* Fills w->stop for a walk that met `err` (ENOENT or ENOTDIR) at the
 * component `comp`: what the path would be. Returns -err, or the errno of
 * a failure of its own (a path too long, no fd left). */
static int walk_stop(walk *w, int err, const char *comp, size_t clen)
{
    jpt__dir_stop *s = w->stop;
    size_t n = w->rlen;

    if (s == NULL)
        return -err;
    if (n + 1 + clen > JPT__FILES_PATH_MAX)
        return -ENAMETOOLONG;
    memcpy(s->path, w->res, n);
    s->exists_len = n;
    if (n > 0)
        s->path[n++] = '/';
    memcpy(s->path + n, comp, clen);
    n += clen;
    s->miss_len = n;
    s->linked = w->cstart < w->link_end;
    /* The rest as written: names only (a "." or ".." comes from a
     * target, which is not planned through). */
    for (size_t i = w->rpos; !s->linked && i < w->rend;) {
        const char *slash = memchr(w->rest + i, '/', w->rend - i);
        size_t end = slash != NULL ? (size_t)(slash - w->rest) : w->rend, len = end - i;
        if (is_dots(w->rest + i, len)) {
            s->linked = true;
            n = s->miss_len;
        } else if (len > 0) {
            if (n + 1 + len > JPT__FILES_PATH_MAX)
                return -ENAMETOOLONG;
            s->path[n++] = '/';
            memcpy(s->path + n, w->rest + i, len);
            n += len;
        }
        i = end + 1;
    }
    s->path[n] = '\0';
    if (w->keep) {
        if (w->cur != w->d->root_fd) {
            s->fd = w->cur; /* the stop's now */
            w->cur = w->d->root_fd;
        } else if ((s->fd = fcntl(w->d->root_fd, F_DUPFD_CLOEXEC, 0)) < 0)
            return -errno;
    }
    s->err = err;
    return -err;
}

static int walk_once(walk *w, int oflags, unsigned how)
{
    int fd = -1;

    while (fd < 0) {
        while (w->rpos < w->rend && w->rest[w->rpos] == '/')
            w->rpos++;
        w->cstart = w->rpos;
        char comp[JPT__FILES_PATH_MAX + 1];
        const char *slash = memchr(w->rest + w->rpos, '/', w->rend - w->rpos);
        size_t end = slash != NULL ? (size_t)(slash - w->rest) : w->rend;
        size_t clen = end - w->rpos;
        memcpy(comp, w->rest + w->rpos, clen);
        comp[clen] = '\0';
        w->rpos = end;
        while (w->rpos < w->rend && w->rest[w->rpos] == '/')
            w->rpos++;
        bool last = w->rpos == w->rend;
        int rc;

        if (clen == 2 && comp[0] == '.' && comp[1] == '.') {
            if (w->rlen == 0)
                return -EXDEV;
            char *cut = memrchr(w->res, '/', w->rlen);
            w->rlen = cut != NULL ? (size_t)(cut - w->res) : 0;
            w->res[w->rlen] = '\0';
            if ((rc = walk_reopen(w)) < 0)
                return rc;
        }
        if (clen == 0 || (clen == 1 && comp[0] == '.') ||
            (clen == 2 && comp[0] == '.' && comp[1] == '.')) {
            if (!last)
                continue;
            fd = openat(w->cur, ".", oflags | O_CLOEXEC);
            return fd < 0 ? -errno : fd;
        }
        if (!last)
            rc = walk_into(w, comp, clen, how);
        else if ((rc = walk_last(w, comp, oflags, how, &fd)) == 0 &&
                 (rc = walk_push(w, comp, clen)) < 0)
            close(fd);
        if (rc == -ENOENT || rc == -ENOTDIR)
            return walk_stop(w, -rc, comp, clen);
        if (rc < 0)
            return rc;
        if (rc == 1)
            fd = -1;
    }
    return fd;
}

static int resolve_walk(jpt__dirfs *d, const char *path, int oflags, unsigned how,
                        char *resolved, jpt__dir_stop *stop)
{
    size_t len = strlen(path);
    walk w;
    int fd = -EAGAIN;

    if (len >= sizeof(w.rest))
        return -ENAMETOOLONG;
    for (int tries = 0; tries < MAX_RETRIES && fd == -EAGAIN; tries++) {
        w.d = d;
        w.cur = d->root_fd;
        w.rlen = 0;
        w.res[0] = '\0';
        memcpy(w.rest, path, len);
        w.rpos = 0;
        w.rend = len;
        w.link_end = 0;
        w.links = 0;
        w.stop = stop;
        w.keep = how & JPT__RESOLVE_KEEP;
        if (stop != NULL && stop->fd >= 0)
            close(stop->fd);
        if (stop != NULL) {
            stop->err = 0;
            stop->fd = -1;
        }
        fd = walk_once(&w, oflags, how);
        walk_enter(&w, d->root_fd);
    }
    if (fd >= 0 && resolved != NULL) {
        if (w.rlen == 0)
            memcpy(resolved, ".", 2);
        else
            memcpy(resolved, w.res, w.rlen + 1);
    }
    return fd;
}

/* Whether `path` is in normal form (path.c): "." or names joined by single
 * '/', none of them "." or "..". Paths built from a symlink's target may
 * not be. */
static bool is_normal(const char *path, size_t len)
{
    if (len == 1 && path[0] == '.')
        return true;
    for (size_t i = 0; i < len;) {
        const char *slash = memchr(path + i, '/', len - i);
        size_t end = slash != NULL ? (size_t)(slash - path) : len;
        size_t n = end - i;
        if (n == 0 || (n == 1 && path[i] == '.') ||
            (n == 2 && path[i] == '.' && path[i + 1] == '.') || (slash != NULL && end + 1 == len))
            return false;
        i = end + 1;
    }
    return len > 0;
}

int jpt__dir_resolve(jpt__dirfs *d, const char *path, int oflags, unsigned how, char *resolved,
                     jpt__dir_stop *stop)
{
    if (stop != NULL) {
        stop->err = 0;
        stop->fd = -1;
    }
    if (!d->walk && resolved == NULL) {
        int fd = resolve_openat2(d, path, oflags, how);
        if (fd != -ENOSYS)
            return fd;
        d->walk = true; /* a kernel before 5.6, or a seccomp filter */
    }
    /* A normal path that meets no symlink resolves to itself: openat2 with
     * RESOLVE_NO_SYMLINKS gives the fd and proves that in one call. Only a
     * path through a symlink (ELOOP), or any failure, takes the walk,
     * which knows where it went and words every error. */
    size_t len = strlen(path);
    if (!d->walk && len <= JPT__FILES_PATH_MAX && is_normal(path, len)) {
        int fd = resolve_openat2(d, path, oflags, how | JPT__RESOLVE_NO_SYMLINKS);
        if (fd >= 0) {
            memcpy(resolved, path, len + 1);
            return fd;
        }
        if (fd == -ENOSYS)
            d->walk = true;
    }
    return resolve_walk(d, path, oflags, how, resolved, stop);
}

/* Copies the parent of `path` (not ".") into `parent` and points *name at
 * the last component. */
static int split_parent(const char *path, char *parent, const char **name)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL) {
        *name = path;
        memcpy(parent, ".", 2);
        return 0;
    }
    if ((size_t)(slash - path) > JPT__FILES_PATH_MAX)
        return -ENAMETOOLONG;
    memcpy(parent, path, (size_t)(slash - path));
    parent[slash - path] = '\0';
    *name = slash + 1;
    return 0;
}

int jpt__dir_parent(jpt__dirfs *d, const char *path, const char **name, char *resolved,
                    jpt__dir_stop *stop)
{
    char parent[JPT__FILES_PATH_MAX + 1];
    int rc = split_parent(path, parent, name);

    if (rc < 0)
        return rc;
    return jpt__dir_resolve(d, parent, O_PATH | O_DIRECTORY, JPT__RESOLVE_FOLLOW, resolved,
                            stop);
}

int jpt__dir_plan(jpt__dirfs *d, const char *path, const char **name, jpt__dir_stop *plan)
{
    char parent[JPT__FILES_PATH_MAX + 1], resolved[JPT__FILES_PATH_MAX + 1];
    int rc = split_parent(path, parent, name);

    if (rc < 0)
        return rc;
    int fd = jpt__dir_resolve(d, parent, O_PATH | O_DIRECTORY,
                              JPT__RESOLVE_FOLLOW | JPT__RESOLVE_KEEP, resolved, plan);
    if (fd >= 0) {
        size_t len = strlen(resolved);
        memcpy(plan->path, resolved, len + 1);
        /* "." is the root, of which nothing counts in a path beneath it. */
        plan->exists_len = plan->miss_len = strcmp(resolved, ".") == 0 ? 0 : len;
        plan->linked = false;
        plan->fd = fd;
        return 0;
    }
    return fd == -ENOENT || fd == -ENOTDIR ? 0 : fd;
}

int jpt__dir_make(const jpt__dir_stop *plan)
{
    char comp[JPT__FILES_PATH_MAX + 1];
    size_t len = strlen(plan->path);
    size_t i = plan->exists_len + (plan->exists_len > 0);
    int cur = plan->fd, rc = 0;

    /* One name at a time, a loop however many there are (issue 15 §1). */
    while (i < len && rc == 0) {
        const char *slash = memchr(plan->path + i, '/', len - i);
        size_t end = slash != NULL ? (size_t)(slash - plan->path) : len;
        memcpy(comp, plan->path + i, end - i);
        comp[end - i] = '\0';
        if (mkdirat(cur, comp, 0777) < 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
        int next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0)
            rc = errno == ELOOP ? -EAGAIN : -errno;
        if (cur != plan->fd)
            close(cur);
        cur = next;
        i = end + 1;
    }
    if (rc < 0) {
        if (cur >= 0 && cur != plan->fd)
            close(cur);
        return rc;
    }
    if (cur != plan->fd)
        return cur;
    int fd = fcntl(cur, F_DUPFD_CLOEXEC, 0);
    return fd < 0 ? -errno : fd;
}
