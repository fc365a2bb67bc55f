/* Resolution beneath the root (issue 9 §2): every path is opened from the
 * root's fd, by openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), which the
 * kernel checks atomically, or where openat2 is missing by a walk of one
 * component at a time that opens each with O_NOFOLLOW and follows a
 * symlink only by reading it and splicing its target into the rest of the
 * path. Either way what is returned is an fd, and callers do their checks
 * (fstat) and their I/O on it: a name is never checked and then opened
 * again. */
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
    int links;
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
    memmove(w->rest + n + 1, w->rest + w->rpos, tail);
    memcpy(w->rest, target, (size_t)n);
    w->rest[n] = '/';
    w->rpos = 0;
    w->rend = (size_t)n + 1 + tail;
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

static int walk_once(walk *w, int oflags, unsigned how)
{
    int fd = -1;

    while (fd < 0) {
        while (w->rpos < w->rend && w->rest[w->rpos] == '/')
            w->rpos++;
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
        if (rc < 0)
            return rc;
        if (rc == 1)
            fd = -1;
    }
    return fd;
}

static int resolve_walk(jpt__dirfs *d, const char *path, int oflags, unsigned how,
                        char *resolved)
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
        w.links = 0;
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

int jpt__dir_resolve(jpt__dirfs *d, const char *path, int oflags, unsigned how, char *resolved)
{
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
    return resolve_walk(d, path, oflags, how, resolved);
}

/* Resolves the directory `path`, creating it and its missing parents. */
static int resolve_creating(jpt__dirfs *d, const char *path, char *resolved)
{
    int fd = jpt__dir_resolve(d, path, O_PATH | O_DIRECTORY, JPT__RESOLVE_FOLLOW, resolved);
    if (fd != -ENOENT)
        return fd;
    const char *slash = strrchr(path, '/');
    char parent[JPT__FILES_PATH_MAX + 1];
    const char *name = path;
    int pfd;
    if (slash == NULL)
        pfd = jpt__dir_resolve(d, ".", O_PATH | O_DIRECTORY, JPT__RESOLVE_FOLLOW, NULL);
    else {
        memcpy(parent, path, (size_t)(slash - path));
        parent[slash - path] = '\0';
        name = slash + 1;
        pfd = resolve_creating(d, parent, NULL);
    }
    if (pfd < 0)
        return pfd;
    int made = mkdirat(pfd, name, 0777);
    int saved = errno;
    close(pfd);
    if (made < 0 && saved != EEXIST)
        return -saved;
    return jpt__dir_resolve(d, path, O_PATH | O_DIRECTORY, JPT__RESOLVE_FOLLOW, resolved);
}

int jpt__dir_parent(jpt__dirfs *d, const char *path, bool create, const char **name,
                    char *resolved)
{
    const char *slash = strrchr(path, '/');
    char parent[JPT__FILES_PATH_MAX + 1];

    if (slash == NULL) {
        *name = path;
        return jpt__dir_resolve(d, ".", O_PATH | O_DIRECTORY, JPT__RESOLVE_FOLLOW, resolved);
    }
    if ((size_t)(slash - path) > JPT__FILES_PATH_MAX)
        return -ENAMETOOLONG;
    memcpy(parent, path, (size_t)(slash - path));
    parent[slash - path] = '\0';
    *name = slash + 1;
    if (create)
        return resolve_creating(d, parent, resolved);
    return jpt__dir_resolve(d, parent, O_PATH | O_DIRECTORY, JPT__RESOLVE_FOLLOW, resolved);
}
