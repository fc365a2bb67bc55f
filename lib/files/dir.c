/* The directory backend: ProjectFiles on a real directory, confined
 * beneath it (issue 9 §2). Every method resolves its path from the root's
 * fd (resolve.c) and does its checks and its I/O on the fd it got; a
 * mutation opens the parent directory beneath the root and uses the *at()
 * call on the last name. Only regular files are read and written, and a
 * FIFO is never waited on: files are opened with O_NONBLOCK and refused by
 * fstat before anything is read. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "files/dir.h"

/* The message and status of an errno from resolving or using a path. A
 * name on the way that is not a directory is "not found" as a missing one
 * is: which of the two it is would tell whether a file of that name exists
 * where the policy hides it (".env/x"; issue 15 §2). */
static int fail_errno(const jpt__files_ctx *c, int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
        return jpt__err(c->e, JPT_ERR_NOT_FOUND, "%s '%s': not found", c->method, c->shown);
    case EXDEV:
        return jpt__err(c->e, JPT_ERR_DENIED,
                        "%s '%s': denied: the path leads outside the root through a symlink",
                        c->method, c->shown);
    case ELOOP:
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': too many levels of symbolic links",
                        c->method, c->shown);
    case EACCES:
    case EPERM:
    case EROFS:
        return jpt__err(c->e, JPT_ERR_DENIED, "%s '%s': denied by the operating system: %s",
                        c->method, c->shown, strerror(err));
    case ENAMETOOLONG:
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': the path is too long", c->method,
                        c->shown);
    case EAGAIN:
        return jpt__err(c->e, JPT_ERR_IO, "%s '%s': the directories kept changing while the "
                        "path was resolved", c->method, c->shown);
    case ENOMEM:
        return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method, c->shown);
    default:
        return jpt__err(c->e, JPT_ERR_IO, "%s '%s': %s", c->method, c->shown, strerror(err));
    }
}

/* The guard on the entry `name` of the directory at `rparent`. */
static int guard_entry(const jpt__files_ctx *c, int access, const char *rparent,
                       const char *name)
{
    char resolved[JPT__FILES_PATH_MAX + 1];

    if (!jpt__files_guarded(c))
        return JPT_OK;
    if (!jpt__files_join(resolved, rparent, name))
        return fail_errno(c, ENAMETOOLONG);
    return jpt__files_guard(c, access, resolved);
}

/* A resolution that failed with `err`: a path that is not there (`stop`,
 * if not NULL, says what it would be, `name` its last name when `stop` is
 * its parent's) is first judged by the guard as if it were, so that a refused
 * name answers the same whether or not it exists (issue 15 §2). */
static int fail_missing(const jpt__files_ctx *c, int access, int err, const jpt__dir_stop *stop,
                        const char *name)
{
    int rc;

    if ((err == ENOENT || err == ENOTDIR) && stop != NULL && stop->err != 0 &&
        (rc = name != NULL ? guard_entry(c, access, stop->path, name)
                           : jpt__files_guard(c, access, stop->path)) < 0)
        return rc;
    return fail_errno(c, err);
}

/* A regular file with several hard links may be a file outside the root:
 * refused unless hard links are allowed. */
static int check_links(jpt__files_sync *f, const jpt__files_ctx *c, nlink_t links)
{
    if (links > 1 && !(f->flags & JPT_FILES_ALLOW_HARDLINKS))
        return jpt__err(c->e, JPT_ERR_DENIED,
                        "%s '%s': denied: the file has %lu hard links and may be a file outside "
                        "the root (hard links are not allowed)",
                        c->method, c->shown, (unsigned long)links);
    return JPT_OK;
}

/* What may be read or written: a regular file with one link (or hard links
 * allowed). */
static int check_regular(jpt__files_sync *f, const jpt__files_ctx *c, const struct stat *st)
{
    if (S_ISDIR(st->st_mode))
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is a directory", c->method, c->shown);
    if (!S_ISREG(st->st_mode))
        return jpt__err(c->e, JPT_ERR_UNSUPPORTED, "%s '%s': is a %s, not a regular file",
                        c->method, c->shown,
                        S_ISFIFO(st->st_mode)   ? "FIFO"
                        : S_ISSOCK(st->st_mode) ? "socket"
                        : S_ISLNK(st->st_mode)  ? "symlink"
                                                : "device");
    return check_links(f, c, st->st_nlink);
}

static int kind_of(mode_t mode)
{
    return S_ISREG(mode)   ? JPT_FILES_KIND_FILE
           : S_ISDIR(mode) ? JPT_FILES_KIND_DIR
           : S_ISLNK(mode) ? JPT_FILES_KIND_SYMLINK
                           : JPT_FILES_KIND_OTHER;
}

/* An open that failed for what the path is (a socket is ENXIO, a device
 * without a driver ENODEV): said as check_regular() says it, once the
 * guard has let the path be seen. */
static int open_failed(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, int err,
                       const jpt__dir_stop *stop)
{
    char resolved[JPT__FILES_PATH_MAX + 1];
    struct stat st;
    int rc;

    if (err != ENXIO && err != ENODEV)
        return fail_missing(c, JPT__FILES_ACCESS_READ, err, stop, NULL);
    int fd = jpt__dir_resolve(f->impl, path, O_PATH, JPT__RESOLVE_FOLLOW, resolved, NULL);
    if (fd < 0)
        return fail_errno(c, -fd);
    if ((rc = jpt__files_guard(c, JPT__FILES_ACCESS_READ, resolved)) == JPT_OK)
        rc = fstat(fd, &st) < 0 ? fail_errno(c, errno) : check_regular(f, c, &st);
    close(fd);
    return rc < 0 ? rc : fail_errno(c, err);
}

/* ---- read ---------------------------------------------------------------------- */

static int read_all(const jpt__files_ctx *c, int fd, size_t size, size_t limit, jpt__buf *out)
{
    if (jpt__buf_reserve(out, size) < 0)
        return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory for %zu bytes", c->method,
                        c->shown, size);
    for (;;) {
        if (out->cap - out->len - 1 == 0 && jpt__buf_reserve(out, 64 * 1024) < 0)
            return jpt__err(c->e, JPT_ERR_NOMEM, "%s '%s': out of memory", c->method, c->shown);
        size_t room = out->cap - out->len - 1;
        ssize_t n = read(fd, out->data + out->len, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail_errno(c, errno);
        if (n == 0)
            break;
        out->len += (size_t)n;
        if (out->len > limit) /* it grew since fstat */
            return jpt__err(c->e, JPT_ERR_LIMIT,
                            "%s '%s': the file is larger than the read limit of %zu bytes",
                            c->method, c->shown, limit);
    }
    out->data[out->len] = '\0';
    return JPT_OK;
}

/* Where a guarded request wants the resolved path and where it stopped;
 * an unguarded one takes openat2's one call. */
#define RESOLVED(c, buf) (jpt__files_guarded(c) ? (buf) : NULL)
#define STOP(c, stop) (jpt__files_guarded(c) ? (stop) : NULL)

static int dir_read(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, jpt__buf *out)
{
    jpt__dirfs *d = f->impl;
    char resolved[JPT__FILES_PATH_MAX + 1];
    jpt__dir_stop stop;
    size_t limit = c->opts != NULL && c->opts->read_limit ? c->opts->read_limit
                                                          : JPT_FILES_READ_LIMIT;
    struct stat st;
    int rc;

    stop.err = 0;
    int fd = jpt__dir_resolve(d, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, JPT__RESOLVE_FOLLOW,
                              RESOLVED(c, resolved), STOP(c, &stop));
    if (fd < 0)
        return open_failed(f, c, path, -fd, &stop);
    /* The guard first: what a refused path is (a directory, a FIFO, a
     * hard link) is none of the tool's business. */
    if ((rc = jpt__files_guard(c, JPT__FILES_ACCESS_READ, resolved)) < 0)
        ;
    else if (fstat(fd, &st) < 0)
        rc = fail_errno(c, errno);
    else if ((rc = check_regular(f, c, &st)) < 0)
        ;
    else if ((uint64_t)st.st_size > limit)
        rc = jpt__err(c->e, JPT_ERR_LIMIT,
                      "%s '%s': the file is %llu bytes, over the read limit of %zu bytes",
                      c->method, c->shown, (unsigned long long)st.st_size, limit);
    else
        rc = read_all(c, fd, (size_t)st.st_size, limit, out);
    close(fd);
    return rc;
}

/* ---- write --------------------------------------------------------------------- */

/* Finds where a write of `path` lands, creating nothing: the plan of its
 * parent (dir.h) and the name in it, through a symlink in the last
 * component (which stays inside the root). `*st_rc` is 0 with `st` the
 * existing entry, or -ENOENT. Returns 0 (plan->fd open) or -errno. */
static int write_target(jpt__dirfs *d, const char *path, char *cur, const char **name,
                        struct stat *st, int *st_rc, jpt__dir_stop *plan)
{
    memcpy(cur, path, strlen(path) + 1);
    for (int links = 0;; links++) {
        int rc = jpt__dir_plan(d, cur, name, plan);
        if (rc < 0)
            return rc;
        *st_rc = -ENOENT;
        if (plan->err != 0)
            return 0; /* its parent is not there: neither is it */
        *st_rc = fstatat(plan->fd, *name, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
        if (*st_rc < 0 && *st_rc != -ENOENT) {
            close(plan->fd);
            return *st_rc;
        }
        if (*st_rc < 0 || !S_ISLNK(st->st_mode))
            return 0;
        /* Written through, as editors do: the target is what changes. */
        char target[JPT__FILES_PATH_MAX + 1];
        ssize_t n = readlinkat(plan->fd, *name, target, sizeof(target) - 1);
        int saved = errno;
        close(plan->fd);
        if (n < 0)
            return -saved;
        target[n] = '\0';
        if (target[0] == '/')
            return -EXDEV;
        if (links >= 40)
            return -ELOOP;
        size_t dirlen = (size_t)(*name - cur);
        if (dirlen + (size_t)n > JPT__FILES_PATH_MAX)
            return -ENAMETOOLONG;
        memmove(cur + dirlen, target, (size_t)n + 1);
    }
}

/* The parent directory a planned request writes in: the plan's, or the
 * directories it lacks made now that the guard has let them be. Returns
 * an fd (the caller's) or a status with its message. */
static int plan_parent(const jpt__files_ctx *c, jpt__dir_stop *plan)
{
    if (plan->err == ENOTDIR)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': a parent is not a directory",
                        c->method, c->shown);
    if (plan->err == ENOENT && plan->linked)
        return fail_errno(c, ENOENT); /* through a symlink to nowhere */
    if (plan->err == 0) {
        int fd = plan->fd;
        plan->fd = -1;
        return fd;
    }
    int fd = jpt__dir_make(plan);
    if (fd == -ENOTDIR || fd == -EEXIST)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': a parent is not a directory",
                        c->method, c->shown);
    return fd < 0 ? fail_errno(c, -fd) : fd;
}

static int write_fd(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Writes `data` to a new temporary file in `pfd` and renames it over
 * `name`; any failure removes the temporary file and leaves `name` as it
 * was. Returns 0 or -errno. */
static int replace_atomically(jpt__files_sync *f, int pfd, const char *name, const void *data,
                              size_t len, const struct stat *old)
{
    char tmp[64];
    unsigned char rnd[8];
    int fd = -1;

    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
            return -EIO;
        snprintf(tmp, sizeof(tmp), ".jpt-write-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
                 rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
        /* 0600 until the old mode is set, so the new content is never more
         * readable than the old. */
        fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    old != NULL ? 0600 : 0666);
        if (fd < 0 && errno != EEXIST)
            return -errno;
    }
    if (fd < 0)
        return -EEXIST;
    int rc = write_fd(fd, data, len);
    /* The old mode but its set-user-ID and set-group-ID bits, which the
     * kernel drops when someone else writes a file: the content is new,
     * and the file is now this process's (a root host's would otherwise
     * be a program that runs as root). */
    mode_t keep = old != NULL ? old->st_mode & 07777 & ~(mode_t)(S_ISUID | S_ISGID) : 0;
    if (rc == 0 && old != NULL && fchmod(fd, keep) < 0)
        rc = -errno;
    if (rc == 0 && (f->flags & JPT_FILES_FSYNC) && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(pfd, tmp, pfd, name) < 0)
        rc = -errno;
    if (rc < 0)
        unlinkat(pfd, tmp, 0);
    return rc;
}

static void plan_close(jpt__dir_stop *plan)
{
    if (plan->fd >= 0)
        close(plan->fd);
    plan->fd = -1;
}

static int dir_write(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, const void *data,
                     size_t len)
{
    jpt__dirfs *d = f->impl;
    char cur[JPT__FILES_PATH_MAX + 1], target[JPT__FILES_PATH_MAX + 1];
    jpt__dir_stop plan;
    const char *name;
    struct stat st;
    int st_rc, rc;

    if (strcmp(path, ".") == 0)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is the root directory", c->method,
                        c->shown);
    if ((rc = write_target(d, path, cur, &name, &st, &st_rc, &plan)) < 0)
        return fail_errno(c, -rc);
    /* The policy first, on every directory the write would create and on
     * its target; then what is there; and only then anything made. */
    if (!jpt__files_join(target, plan.path, name))
        rc = fail_errno(c, ENAMETOOLONG);
    else if ((rc = jpt__files_guard_write(c, target, plan.exists_len, false)) < 0)
        ;
    else if (st_rc == 0 && (rc = check_regular(f, c, &st)) < 0)
        ;
    else if ((rc = plan_parent(c, &plan)) >= 0) {
        int pfd = rc;
        if ((rc = replace_atomically(f, pfd, name, data, len, st_rc == 0 ? &st : NULL)) < 0)
            rc = fail_errno(c, -rc);
        close(pfd);
    }
    plan_close(&plan);
    return rc;
}

/* ---- exists, metadata ------------------------------------------------------------ */

static int dir_stat(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, int *kind,
                    uint64_t *size)
{
    jpt__dirfs *d = f->impl;
    char resolved[JPT__FILES_PATH_MAX + 1];
    jpt__dir_stop stop;
    struct stat st;
    int rc;

    *kind = 0;
    if (size != NULL)
        *size = 0;
    stop.err = 0;
    int fd = jpt__dir_resolve(d, path, O_PATH, JPT__RESOLVE_FOLLOW, RESOLVED(c, resolved),
                              STOP(c, &stop));
    /* Nothing there, once the guard has judged what would be. */
    if (fd == -ENOENT || fd == -ENOTDIR)
        return stop.err != 0 ? jpt__files_guard(c, JPT__FILES_ACCESS_READ, stop.path) : JPT_OK;
    if (fd < 0)
        return fail_errno(c, -fd);
    if ((rc = jpt__files_guard(c, JPT__FILES_ACCESS_READ, resolved)) < 0)
        ;
    else if (fstat(fd, &st) < 0)
        rc = fail_errno(c, errno);
    else if (size != NULL && S_ISREG(st.st_mode) &&
             (rc = check_links(f, c, st.st_nlink)) < 0)
        ;
    else {
        *kind = kind_of(st.st_mode);
        if (size != NULL)
            *size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    }
    close(fd);
    return rc;
}

/* ---- list_dir ------------------------------------------------------------------- */

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* The entries of the directory open as `fd`, sorted. Returns 0 or -errno
 * (-ENOMEM when the list could not grow). */
static int list_fd(int fd, jpt__files_list *out)
{
    char buf[32 * 1024] __attribute__((aligned(8)));

    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        for (long off = 0; off < n;) {
            struct linux_dirent64 *ent = (struct linux_dirent64 *)(buf + off);
            const char *name = ent->d_name;
            off += ent->d_reclen;
            if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
                continue;
            int kind;
            struct stat st;
            switch (ent->d_type) {
            case DT_REG:
                kind = JPT_FILES_KIND_FILE;
                break;
            case DT_DIR:
                kind = JPT_FILES_KIND_DIR;
                break;
            case DT_LNK:
                kind = JPT_FILES_KIND_SYMLINK;
                break;
            case DT_UNKNOWN: /* some file systems leave it to stat */
                if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                    continue; /* gone since */
                kind = kind_of(st.st_mode);
                break;
            default:
                kind = JPT_FILES_KIND_OTHER;
            }
            if (jpt__files_list_add(out, name, strlen(name), kind) < 0)
                return -ENOMEM;
        }
    }
    jpt__files_list_sort(out);
    return 0;
}

static int dir_list(jpt__files_sync *f, const jpt__files_ctx *c, const char *path,
                    jpt__files_list *out)
{
    jpt__dirfs *d = f->impl;
    char resolved[JPT__FILES_PATH_MAX + 1];
    jpt__dir_stop stop;
    int rc;

    stop.err = 0;
    int fd = jpt__dir_resolve(d, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK, JPT__RESOLVE_FOLLOW,
                              RESOLVED(c, resolved), STOP(c, &stop));
    if (fd == -ENOTDIR) {
        int any = jpt__dir_resolve(d, path, O_PATH, JPT__RESOLVE_FOLLOW, RESOLVED(c, resolved),
                                   NULL);
        if (any >= 0) {
            close(any);
            if ((rc = jpt__files_guard(c, JPT__FILES_ACCESS_READ, resolved)) < 0)
                return rc;
            return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is not a directory", c->method,
                            c->shown);
        }
    }
    if (fd < 0)
        return fail_missing(c, JPT__FILES_ACCESS_READ, -fd, &stop, NULL);
    rc = jpt__files_guard(c, JPT__FILES_ACCESS_READ, resolved);
    if (rc == JPT_OK && (rc = list_fd(fd, out)) < 0)
        rc = fail_errno(c, -rc);
    close(fd);
    return rc;
}

/* ---- delete, rename ----------------------------------------------------------------- */

/* Resolves the parent of an existing entry to remove or move (`path`, not
 * "."), and lstats it: returns the parent's fd (its resolved path in
 * `rparent`), or a status with its message once the guard (`access`) has
 * judged a path that is not there. */
static int existing_entry(jpt__dirfs *d, const jpt__files_ctx *c, int access, const char *path,
                          const char **name, char *rparent, struct stat *st)
{
    jpt__dir_stop stop;

    *name = path;
    stop.err = 0;
    int pfd = jpt__dir_parent(d, path, name, rparent, STOP(c, &stop));
    if (pfd < 0)
        return fail_missing(c, access, -pfd, &stop, *name);
    if (fstatat(pfd, *name, st, AT_SYMLINK_NOFOLLOW) < 0) {
        int err = errno, rc = JPT_OK;
        close(pfd);
        if (err == ENOENT || err == ENOTDIR)
            rc = guard_entry(c, access, rparent, *name);
        return rc < 0 ? rc : fail_errno(c, err);
    }
    int rc = guard_entry(c, access, rparent, *name);
    if (rc < 0) {
        close(pfd);
        return rc;
    }
    return pfd;
}

static int dir_remove(jpt__files_sync *f, const jpt__files_ctx *c, const char *path)
{
    char rparent[JPT__FILES_PATH_MAX + 1];
    const char *name;
    struct stat st;
    int rc = JPT_OK;

    if (strcmp(path, ".") == 0)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is the root directory", c->method,
                        c->shown);
    int pfd = existing_entry(f->impl, c, JPT__FILES_ACCESS_WRITE, path, &name, rparent, &st);
    if (pfd < 0)
        return pfd;
    if (S_ISDIR(st.st_mode))
        rc = jpt__err(c->e, JPT_ERR_INVALID,
                      "%s '%s': is a directory (fs.delete deletes files)", c->method, c->shown);
    else if (unlinkat(pfd, name, 0) < 0)
        rc = fail_errno(c, errno);
    close(pfd);
    return rc;
}

/* renameat2(RENAME_NOREPLACE), or where a file system lacks it, a check
 * and renameat (a target created between the two is replaced: the one
 * race left, and only on such file systems). Returns 0 or -errno. */
static int rename_noreplace(int pfrom, const char *from, int pto, const char *to)
{
    struct stat st;

    if (renameat2(pfrom, from, pto, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (fstatat(pto, to, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return -EEXIST;
    return renameat(pfrom, from, pto, to) < 0 ? -errno : 0;
}

/* Whether the root-relative path `path` is `dir` or beneath it. */
static bool is_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* fs.rename's `to`, once `from` (resolved `rfrom`) is judged: the plan of
 * its parent, judged with every directory it would create, then made.
 * Returns the parent's fd or a status with its message (in `c`'s words
 * for `to`, in `cfrom`'s for `from`). */
static int rename_target(jpt__dirfs *d, const jpt__files_ctx *c, const jpt__files_ctx *cfrom,
                         const char *to, const char *rfrom, const char **tname)
{
    char rto[JPT__FILES_PATH_MAX + 1];
    jpt__dir_stop plan;
    int rc = jpt__dir_plan(d, to, tname, &plan);

    if (rc < 0)
        return fail_errno(c, -rc);
    if (!jpt__files_join(rto, plan.path, *tname))
        rc = fail_errno(c, ENAMETOOLONG);
    else if ((rc = jpt__files_guard_write(c, rto, plan.exists_len, true)) < 0)
        ;
    else if (is_within(rto, rfrom))
        /* Refused before any directory is made inside `from`. */
        rc = strcmp(rto, rfrom) == 0
                 ? jpt__err(c->e, JPT_ERR_EXISTS, "%s '%s': exists already", c->method,
                            c->shown)
                 : jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': cannot move a directory into itself",
                            c->method, cfrom->shown);
    else
        rc = plan_parent(c, &plan);
    plan_close(&plan);
    return rc;
}

static int dir_rename(jpt__files_sync *f, const jpt__files_ctx *c, const char *from, const char *to,
                      const char *shown_to)
{
    jpt__dirfs *d = f->impl;
    jpt__files_ctx cto = *c;
    char rfrom[JPT__FILES_PATH_MAX + 1], rparent[JPT__FILES_PATH_MAX + 1];
    const char *fname, *tname;
    struct stat st;
    int rc = JPT_OK;

    cto.shown = shown_to;
    if (strcmp(from, ".") == 0)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is the root directory", c->method,
                        c->shown);
    if (strcmp(to, ".") == 0)
        return jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': is the root directory", c->method,
                        shown_to);
    int pfrom = existing_entry(d, c, JPT__FILES_ACCESS_WRITE, from, &fname, rparent, &st);
    if (pfrom < 0)
        return pfrom;
    int pto = jpt__files_join(rfrom, rparent, fname)
                  ? rename_target(d, &cto, c, to, rfrom, &tname)
                  : fail_errno(c, ENAMETOOLONG);
    if (pto < 0)
        rc = pto;
    else if ((rc = rename_noreplace(pfrom, fname, pto, tname)) == -EEXIST ||
             rc == -ENOTEMPTY)
        rc = jpt__err(c->e, JPT_ERR_EXISTS, "%s '%s': exists already", c->method, shown_to);
    else if (rc == -EINVAL)
        rc = jpt__err(c->e, JPT_ERR_INVALID, "%s '%s': cannot move a directory into itself",
                      c->method, c->shown);
    else if (rc < 0)
        rc = fail_errno(c, -rc);
    if (pto >= 0)
        close(pto);
    close(pfrom);
    return rc;
}

/* ---- the tree grep walks ------------------------------------------------------------ */

/* Handles are fds, stored as fd + 1 so that none is NULL. */
static void *fd_handle(int fd)
{
    return (void *)(intptr_t)(fd + 1);
}

static int handle_fd(void *h)
{
    return (int)(intptr_t)h - 1;
}

static int dir_tree_open(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, void **dir)
{
    int fd = jpt__dir_resolve(f->impl, path, O_RDONLY | O_DIRECTORY | O_NONBLOCK,
                              JPT__RESOLVE_FOLLOW, NULL, NULL);
    if (fd < 0)
        return fail_errno(c, -fd);
    *dir = fd_handle(fd);
    return JPT_OK;
}

static int dir_tree_open_at(jpt__files_sync *f, const jpt__files_ctx *c, void *parent,
                            const char *name, const char *rel, void **dir)
{
    (void)f;
    (void)rel;
    /* Not following symlinks (ripgrep's default): a directory swapped for
     * a symlink meanwhile fails here and is skipped. */
    int fd = openat(handle_fd(parent), name,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return fail_errno(c, errno);
    *dir = fd_handle(fd);
    return JPT_OK;
}

static int dir_tree_list(jpt__files_sync *f, const jpt__files_ctx *c, void *dir,
                         jpt__files_list *out)
{
    (void)f;
    int rc = list_fd(handle_fd(dir), out);
    return rc < 0 ? fail_errno(c, -rc) : JPT_OK;
}

static void dir_tree_close(jpt__files_sync *f, void *h)
{
    (void)f;
    close(handle_fd(h));
}

static int file_checked(jpt__files_sync *f, const jpt__files_ctx *c, int fd, void **file)
{
    struct stat st;
    int rc;

    if (fstat(fd, &st) < 0)
        rc = fail_errno(c, errno);
    else if ((rc = check_regular(f, c, &st)) == JPT_OK) {
        *file = fd_handle(fd);
        return JPT_OK;
    }
    close(fd);
    return rc;
}

static int dir_file_open(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, void **file)
{
    int fd = jpt__dir_resolve(f->impl, path, O_RDONLY | O_NONBLOCK | O_NOCTTY,
                              JPT__RESOLVE_FOLLOW, NULL, NULL);
    if (fd < 0)
        return open_failed(f, c, path, -fd, NULL);
    return file_checked(f, c, fd, file);
}

static int dir_file_open_at(jpt__files_sync *f, const jpt__files_ctx *c, void *dir, const char *name,
                            void **file)
{
    int fd = openat(handle_fd(dir), name,
                    O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail_errno(c, errno);
    return file_checked(f, c, fd, file);
}

static long dir_file_read(jpt__files_sync *f, const jpt__files_ctx *c, void *file, char *buf, size_t n)
{
    (void)f;
    for (;;) {
        ssize_t got = read(handle_fd(file), buf, n);
        if (got >= 0)
            return (long)got;
        if (errno != EINTR)
            return fail_errno(c, errno);
    }
}

static int dir_realpath(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, char *out)
{
    int fd = jpt__dir_resolve(f->impl, path, O_PATH, JPT__RESOLVE_FOLLOW, out, NULL);
    if (fd < 0)
        return fail_errno(c, -fd);
    close(fd);
    return JPT_OK;
}

static void dir_destroy(jpt__files_sync *f)
{
    jpt__dirfs *d = f->impl;

    close(d->root_fd);
    jpt__free(d);
}

static int dir_root_fd(const jpt__files_sync *f)
{
    return ((const jpt__dirfs *)f->impl)->root_fd;
}

static const jpt__files_sync_ops dir_backend = {
    .read = dir_read,
    .write = dir_write,
    .stat = dir_stat,
    .list = dir_list,
    .remove = dir_remove,
    .rename = dir_rename,
    .dir_open = dir_tree_open,
    .dir_open_at = dir_tree_open_at,
    .dir_list = dir_tree_list,
    .dir_close = dir_tree_close,
    .file_open = dir_file_open,
    .file_open_at = dir_file_open_at,
    .file_read = dir_file_read,
    .file_close = dir_tree_close,
    .realpath = dir_realpath,
    .root_fd = dir_root_fd,
    .destroy = dir_destroy,
};

int jpt__files_dir_new(const char *root, unsigned flags, jpt__errbuf *e, jpt__files_be *out)
{
    char shown[256];
    jpt__dirfs *d;

    jpt__files_path_quote(root, strlen(root), shown);
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return jpt__err(e, errno == ENOENT ? JPT_ERR_NOT_FOUND : JPT_ERR_IO,
                        "open_dir '%s': %s", shown, strerror(errno));
    if ((d = jpt__calloc(1, sizeof(*d))) == NULL) {
        close(fd);
        return jpt__err(e, JPT_ERR_NOMEM, "open_dir: out of memory");
    }
    d->root_fd = fd;
    d->walk = flags & JPT__FILES_FORCE_WALK;
    int rc = jpt__files_sync_new(&dir_backend, d, flags & ~JPT__FILES_FORCE_WALK, out);
    if (rc < 0) {
        close(fd);
        jpt__free(d);
        return jpt__err(e, rc, "open_dir: out of memory");
    }
    return JPT_OK;
}
