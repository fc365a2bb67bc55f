/* The namespaces of a sandbox (sandbox.h, "Namespaces"): whether this host
 * can make them, and the child's side, which builds its view of the file
 * system between clone and execve with system calls alone.
 *
 * The view, in a mount namespace of the child's own (in a user namespace
 * of its own too when the host lacks CAP_SYS_ADMIN): every mount made
 * read-only (so chmod, chown, utimes and xattrs fail with EROFS there,
 * which Landlock does not govern); the writable areas mounted again,
 * writable; the read-only ones (.git) mounted again, read-only; each
 * hidden path covered by an empty directory or file of a small tmpfs,
 * mode 000, read-only (bubblewrap covers paths the same way), from one
 * tmpfs per child; and for a
 * process.run child a private tmpfs on /tmp. Every path is resolved with
 * RESOLVE_NO_SYMLINKS from the absolute real path the parent found, so a
 * symbolic link swapped in meanwhile fails the spawn instead of moving a
 * mount elsewhere; a hidden path that is gone fails it too (it may have
 * been moved, and would then be seen where it went). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/mount.h>
#include <linux/openat2.h>

#include "sandbox/sandbox.h"

#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif

/* Where the empty tmpfs is mounted while the hidden paths are covered
 * from it when none is a directory: a directory that exists on every
 * Linux system and that no hidden path is under; it is unmounted again at
 * once. */
#define STAGE "/proc"

/* The private /tmp of a process.run child: its size and files bound what
 * it can take of the host's memory. */
#define TMP_OPTIONS "size=" JPT__SANDBOX_TMP_SIZE ",nr_inodes=65536,mode=1777"

/* ---- The child's side (async-signal-safe: system calls only) -------------------- */

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* `path` opened O_PATH with no symbolic link on the way. */
static int resolve(const char *path)
{
    struct open_how how = {
        .flags = O_PATH | O_CLOEXEC,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };

    return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
}

static int set_attr(int fd, unsigned flags, uint64_t set, uint64_t clear)
{
    struct mount_attr attr = {.attr_set = set, .attr_clr = clear};

    return (int)syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | flags, &attr, sizeof(attr));
}

/* Mounts `tree` (a detached clone) on the directory or file open as `at`. */
static int attach(int tree, int at)
{
    return (int)syscall(SYS_move_mount, tree, "", at, "",
                        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

static void close_both(int a, int b)
{
    int e = errno;

    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
    errno = e;
}

/* `path` resolved as resolve() does, and checked to be the file `id`
 * names ((device, inode); NULL or 0: not checked): else ESTALE, a path
 * that led elsewhere when it was found (its directory renamed and made
 * again meanwhile, the file found moved with it). */
static int resolve_same(const char *path, const uint64_t *id)
{
    int at = resolve(path);
    struct stat st;

    if (at < 0 || id == NULL || (id[0] == 0 && id[1] == 0))
        return at;
    if (fstat(at, &st) != 0 || (uint64_t)st.st_dev != id[0] || (uint64_t)st.st_ino != id[1]) {
        close(at);
        errno = ESTALE;
        return -1;
    }
    return at;
}

/* Mounts `path` (checked to be `id`: resolve_same) on itself again with
 * `set` and `clear` attributes: on its own mount only, or with
 * `recursive` on those beneath it too. */
static int remount(const char *path, const uint64_t *id, uint64_t set, uint64_t clear,
                   bool recursive)
{
    int at = resolve_same(path, id);
    int tree = at < 0 ? -1
                      : (int)syscall(SYS_open_tree, at, "",
                                     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
                                         AT_RECURSIVE);
    int rc = tree < 0 ||
                     ((set | clear) != 0 &&
                      set_attr(tree, recursive ? AT_RECURSIVE : 0, set, clear) < 0) ||
                     attach(tree, at) < 0
                 ? -1
                 : 0;

    close_both(tree, at);
    return rc;
}

/* Covers `path` (checked to be `id`) with a clone of the empty directory
 * or file of the tmpfs `stage` (an attached mount's fd). */
static int cover(int stage, const char *path, const uint64_t *id, bool dir)
{
    int at = resolve_same(path, id);
    int tree = at < 0 ? -1
                      : (int)syscall(SYS_open_tree, stage, dir ? "d" : "f",
                                     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    int rc = tree < 0 || attach(tree, at) < 0 ? -1 : 0;

    close_both(tree, at);
    return rc;
}

#define FAIL(what, where)                                                                   \
    do {                                                                                    \
        *step = (what);                                                                     \
        *path = (where);                                                                    \
        return errno;                                                                       \
    } while (0)

/* A tmpfs of its own, detached (its fd), read-only, holding an empty
 * directory "d" and an empty file "f", all mode 000: a process without
 * capabilities can neither read nor list them, nor change their mode. */
static int empty_tmpfs(void)
{
    int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC), mnt = -1, fd;

    if (fs >= 0 && syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", "4k", 0) == 0 &&
        syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "nr_inodes", "8", 0) == 0 &&
        syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0", 0) == 0 &&
        syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
        mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
                           MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    close_both(fs, -1);
    if (mnt < 0)
        return -1;
    if (mkdirat(mnt, "d", 0) != 0 ||
        (fd = openat(mnt, "f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0)) < 0) {
        close_both(mnt, -1);
        return -1;
    }
    close(fd);
    if (set_attr(mnt, 0, MOUNT_ATTR_RDONLY, 0) != 0) {
        close_both(mnt, -1);
        return -1;
    }
    return mnt;
}

/* Whether `e` says a path is not what it was when it was found. */
static bool changed(int e)
{
    return e == ENOENT || e == ELOOP || e == ENOTDIR || e == ESTALE || e == EXDEV;
}

static const uint64_t *hide_id(const jpt__ns_plan *p, size_t i)
{
    return p->hide_ids != NULL ? p->hide_ids + 2 * i : NULL;
}

static int hide_all(const jpt__ns_plan *p, const char **step, const char **path)
{
    /* The tmpfs is attached where it covers the first hidden directory,
     * and the rest are covered by clones of it (a detached mount can be
     * cloned only from Linux 6.15); with no directory to hide it is
     * attached on /proc for the while. */
    size_t first = 0;
    while (p->hide[first] != NULL && !p->hide_dir[first])
        first++;
    const char *stage_path = p->hide[first] != NULL ? p->hide[first] : STAGE;
    int stage = empty_tmpfs();
    if (stage < 0)
        FAIL("making the tmpfs that covers hidden paths", NULL);
    int at = p->hide[first] != NULL ? resolve_same(stage_path, hide_id(p, first))
                                    : resolve(stage_path);
    if (at < 0 || attach(stage, at) != 0) {
        close_both(stage, at);
        FAIL(changed(errno) ? "hiding (the workspace changed while the process started)"
                            : "hiding",
             stage_path);
    }
    close(at);
    for (size_t i = 0; p->hide[i] != NULL; i++)
        if (i != first && cover(stage, p->hide[i], hide_id(p, i), p->hide_dir[i]) != 0) {
            close_both(stage, -1);
            FAIL(changed(errno) ? "hiding (the workspace changed while the process started)"
                                : "hiding",
                 p->hide[i]);
        }
    close(stage);
    if (p->hide[first] == NULL && umount2(STAGE, MNT_DETACH) != 0)
        FAIL("unmounting the tmpfs that covers hidden paths", STAGE);
    return 0;
}

/* mkdir -p of `path` (under /tmp) in the fresh tmpfs. */
static int make_dirs(const char *path)
{
    char buf[JPT__SANDBOX_PATH_MAX];
    size_t n = strlen(path);

    if (n >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        buf[i] = c;
    }
    return 0;
}

/* A tmpfs of its own on /tmp, or p->tmp_dir bound there, writable
 * (Landlock: a rule for it, added now, as the ruleset prepared in the
 * parent cannot name it; none for a stdio tool's, whose ruleset grants
 * /tmp); the granted
 * paths below /tmp mounted in it where they were; a workspace made anew
 * (p->tmp_remake) read-only, before they are, so that its directories
 * made on the way to them stay read-only too. */
static int private_tmp(const jpt__ns_plan *p, const char **step, const char **path)
{
    int keep[JPT__SANDBOX_TMP_KEEP_MAX];
    size_t n = 0;
    int rc = 0;

    for (; p->tmp_keep != NULL && p->tmp_keep[n] != NULL; n++) {
        int at = resolve(p->tmp_keep[n]);
        keep[n] = at < 0 ? -1
                         : (int)syscall(SYS_open_tree, at, "",
                                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
                                            AT_RECURSIVE);
        close_both(at, -1);
        if (keep[n] < 0) {
            *step = "keeping a granted path below /tmp";
            *path = p->tmp_keep[n];
            rc = errno;
            break;
        }
    }
    if (rc == 0 && p->tmp_dir != NULL) {
        /* The tool's own directory, writable again (every mount was made
         * read-only), bound over /tmp. */
        int at = resolve(p->tmp_dir), dir = -1, tmp = -1;
        dir = at < 0 ? -1
                     : (int)syscall(SYS_open_tree, at, "",
                                    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        close_both(at, -1);
        if (dir < 0 || set_attr(dir, 0, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                                MOUNT_ATTR_RDONLY) != 0 ||
            (tmp = resolve("/tmp")) < 0 || attach(dir, tmp) != 0) {
            *step = "mounting its own directory on /tmp";
            *path = p->tmp_dir;
            rc = errno;
        }
        close_both(dir, tmp);
    } else if (rc == 0 &&
               mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, TMP_OPTIONS) != 0) {
        *step = "mounting a private tmpfs";
        *path = "/tmp";
        rc = errno;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (make_dirs(p->tmp_keep[i]) != 0) {
            *step = "making a granted path's place on the private /tmp";
            *path = p->tmp_keep[i];
            rc = errno;
        }
    if (rc == 0 && p->tmp_remake != NULL &&
        (make_dirs(p->tmp_remake) != 0 ||
         remount(p->tmp_remake, NULL, MOUNT_ATTR_RDONLY, 0, false) != 0)) {
        *step = "making the workspace anew on the private /tmp";
        *path = p->tmp_remake;
        rc = errno;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int at = resolve(p->tmp_keep[i]);
        if (at < 0 || attach(keep[i], at) < 0) {
            *step = "mounting a granted path on the private /tmp";
            *path = p->tmp_keep[i];
            rc = errno;
        }
        close_both(at, -1);
    }
    for (size_t i = 0; i < n; i++)
        close_both(keep[i], -1);
    if (rc != 0)
        return rc;
    int at = resolve("/tmp");
    struct {
        uint64_t allowed_access;
        int32_t parent_fd;
    } __attribute__((packed)) rule = {p->tmp_access, at};
    if (at < 0 || (p->ruleset >= 0 && syscall(SYS_landlock_add_rule, p->ruleset,
                                              1 /* LANDLOCK_RULE_PATH_BENEATH */, &rule, 0) != 0)) {
        close_both(at, -1);
        FAIL("granting the private /tmp", "/tmp");
    }
    close(at);
    return 0;
}

/* The bound on the processes of its new PID namespace: the namespace's
 * own pid_max (Linux 6.14), written through the host's /proc while it is
 * still writable. Only as the first process of a PID namespace of its
 * own (pid 1): on a kernel without namespaced pid_max the same write
 * would set the whole machine's, which p->pid_max rules out (the parent
 * sets it only where the kernel has them), and pid 1 checks again. Its
 * last pid is then set to 300 (RESERVED_PIDS; ns_last_pid, the
 * namespace's own on every kernel): past it the kernel hands out pids
 * from 300 to pid_max - 1 only, so that pid 1 and those are all there
 * can be at once (pid_max = limit + 299, sandbox.c). */
static int bound_processes(const jpt__ns_plan *p)
{
    if (!p->pid || p->pid_max[0] == '\0')
        return 0;
    if (getpid() != 1) {
        errno = EPERM;
        return -1;
    }
    if (write_file("/proc/sys/kernel/pid_max", p->pid_max) != 0)
        return -1;
    return write_file("/proc/sys/kernel/ns_last_pid", "300");
}

int jpt__ns_enter_in_child(const jpt__ns_plan *p, const char **step, const char **path)
{
    int rc;

    *path = NULL;
    /* A view kept: the user namespace first, which gives the capability
     * to enter the mount namespace it owns. */
    if (p->mounts && p->enter_mnt >= 0) {
        if (bound_processes(p) != 0)
            FAIL("bounding its processes (its PID namespace's pid_max)", NULL);
        if (p->enter_user >= 0 && setns(p->enter_user, CLONE_NEWUSER) != 0)
            FAIL("entering the kept user namespace (setns)", NULL);
        if (setns(p->enter_mnt, CLONE_NEWNS) != 0)
            FAIL("entering the kept mount namespace (setns)", NULL);
        return 0;
    }
    if (!p->mounts && !p->pid)
        return 0;
    /* Mapped to itself: the tool sees the host's uid and gid. setgroups
     * must be denied before an unprivileged process writes gid_map. */
    if (p->user && (write_file("/proc/self/setgroups", "deny") != 0 ||
                    write_file("/proc/self/uid_map", p->uid_map) != 0 ||
                    write_file("/proc/self/gid_map", p->gid_map) != 0))
        FAIL("mapping its user and group in its user namespace", NULL);
    if (bound_processes(p) != 0)
        FAIL("bounding its processes (its PID namespace's pid_max)", NULL);
    if (!p->mounts)
        return 0;
    /* Nothing it mounts reaches the host's namespace. */
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
        FAIL("making its mounts its own (MS_SLAVE)", "/");
    int root = resolve("/");
    if (root < 0 || set_attr(root, AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0) != 0) {
        close_both(root, -1);
        FAIL("making every mount read-only (mount_setattr)", "/");
    }
    close(root);
    /* Only the mount of each writable path: one mounted beneath it stays
     * read-only, as the host may have mounted it so. */
    for (size_t i = 0; p->writable != NULL && p->writable[i] != NULL; i++)
        if (remount(p->writable[i], NULL, 0, MOUNT_ATTR_RDONLY, false) != 0)
            FAIL("mounting a writable path", p->writable[i]);
    /* A directory a verdict depends on by its name is a mount point:
     * rename(2) refuses to move one (EBUSY). */
    for (size_t i = 0; p->pin != NULL && p->pin[i] != NULL; i++)
        if (remount(p->pin[i], p->pin_ids != NULL ? p->pin_ids + 2 * i : NULL, 0, 0, false) !=
            0)
            FAIL(changed(errno)
                     ? "pinning a directory (the workspace changed while the process started)"
                     : "pinning a directory",
                 p->pin[i]);
    for (size_t i = 0; p->read_only != NULL && p->read_only[i] != NULL; i++)
        if (remount(p->read_only[i], p->read_only_ids != NULL ? p->read_only_ids + 2 * i : NULL,
                    MOUNT_ATTR_RDONLY, 0, true) != 0)
            FAIL(changed(errno)
                     ? "mounting a read-only path (the workspace changed while the process "
                       "started)"
                     : "mounting a read-only path",
                 p->read_only[i]);
    if (p->hide != NULL && p->hide[0] != NULL && (rc = hide_all(p, step, path)) != 0)
        return rc;
    if (p->private_tmp && (rc = private_tmp(p, step, path)) != 0)
        return rc;
    return 0;
}

#undef FAIL

/* ---- Can this host make them? ----------------------------------------------------- */

typedef struct probe_ctx {
    jpt__ns_plan plan;
    int err;
    const char *step, *path;
} probe_ctx;

static int probe_child(void *arg)
{
    probe_ctx *ctx = arg;

    ctx->err = jpt__ns_enter_in_child(&ctx->plan, &ctx->step, &ctx->path);
    _exit(ctx->err == 0 ? 0 : 1);
}

bool jpt__ns_probe(const jpt__ns_plan *plan, char *why, size_t n)
{
    /* The child shares this memory until it exits (CLONE_VFORK): it
     * writes its outcome here, whoever reaps it. */
    _Alignas(16) char stack[16384];
    static const char *const hide[] = {"/dev/null", NULL};
    static const bool hide_dir[] = {false};
    probe_ctx ctx = {.plan = *plan, .err = -1};
    sigset_t all, old;

    ctx.plan.hide = hide;
    ctx.plan.hide_dir = hide_dir;
    ctx.plan.hide_ids = NULL;
    ctx.plan.read_only = NULL;
    ctx.plan.read_only_ids = NULL;
    ctx.plan.pin = NULL;
    ctx.plan.pin_ids = NULL;
    ctx.plan.ruleset = -1;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int pidfd = -1;
    pid_t pid = clone(probe_child, stack + sizeof(stack),
                      CLONE_VM | CLONE_VFORK | CLONE_PIDFD | jpt__ns_clone_flags(plan), &ctx,
                      &pidfd);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        snprintf(why, n, "clone with %s%s%s namespaces: %s", plan->user ? "user, " : "",
                 plan->mounts ? "mount" : "", plan->pid ? (plan->mounts ? " and PID" : "PID") : "",
                 strerror(e));
        return false;
    }
    siginfo_t info;
    waitid((idtype_t)3 /* P_PIDFD */, (id_t)pidfd, &info, WEXITED | __WALL);
    close(pidfd);
    if (ctx.err == 0)
        return true;
    snprintf(why, n, "%s%s%s: %s", ctx.step != NULL ? ctx.step : "the namespace setup",
             ctx.path != NULL ? " " : "", ctx.path != NULL ? ctx.path : "",
             ctx.err > 0 ? strerror(ctx.err) : "the child did not say");
    return false;
}

/* The helper of jpt__ns_keep: it shares the fd table (CLONE_FILES), so
 * the fds it opens on its namespaces are the parent's once it exits. */
typedef struct keep_ctx {
    const jpt__ns_plan *plan;
    int err, mnt, user;
    const char *step, *path;
} keep_ctx;

static int keep_child(void *arg)
{
    keep_ctx *ctx = arg;

    ctx->err = jpt__ns_enter_in_child(ctx->plan, &ctx->step, &ctx->path);
    if (ctx->err == 0 && (ctx->mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC)) < 0) {
        ctx->err = errno;
        ctx->step = "opening /proc/self/ns/mnt";
    }
    if (ctx->err == 0 && ctx->plan->user &&
        (ctx->user = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC)) < 0) {
        ctx->err = errno;
        ctx->step = "opening /proc/self/ns/user";
    }
    _exit(ctx->err == 0 ? 0 : 1);
}

int jpt__ns_keep(const jpt__ns_plan *p, int *mnt, int *user, char *why, size_t n)
{
    _Alignas(16) char stack[16384];
    keep_ctx ctx = {.plan = p, .err = -1, .mnt = -1, .user = -1};
    sigset_t all, old;
    int pidfd = -1;

    *mnt = *user = -1;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = clone(keep_child, stack + sizeof(stack),
                      CLONE_VM | CLONE_VFORK | CLONE_FILES | CLONE_PIDFD | jpt__ns_clone_flags(p),
                      &ctx, &pidfd);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        snprintf(why, n, "clone: %s", strerror(e));
        return JPT_ERR_IO;
    }
    siginfo_t info;
    waitid((idtype_t)3 /* P_PIDFD */, (id_t)pidfd, &info, WEXITED | __WALL);
    close(pidfd);
    if (ctx.err != 0) {
        close_both(ctx.mnt, ctx.user);
        snprintf(why, n, "%s%s%s: %s", ctx.step != NULL ? ctx.step : "the namespace setup",
                 ctx.path != NULL ? " " : "", ctx.path != NULL ? ctx.path : "",
                 ctx.err > 0 ? strerror(ctx.err) : "the helper did not say");
        return JPT_ERR_IO;
    }
    *mnt = ctx.mnt;
    *user = ctx.user;
    return JPT_OK;
}

int jpt__ns_clone_flags(const jpt__ns_plan *p)
{
    int pid = p->pid ? CLONE_NEWPID : 0;

    /* A kept view is entered by a process of the host's user namespace
     * (a root host's: one that is not root makes its own view when it
     * wants a PID namespace, sandbox.c). */
    if (p->mounts && p->enter_mnt >= 0)
        return pid;
    if (!p->mounts)
        return pid != 0 ? pid | (p->user ? CLONE_NEWUSER : 0) : 0;
    return CLONE_NEWNS | pid | (p->user ? CLONE_NEWUSER : 0);
}

/* Whether this kernel keeps pid_max per PID namespace (Linux 6.14): by
 * its version alone, as nothing else tells it without writing the
 * machine's pid_max on a kernel that does not. A backport is missed, and
 * its processes go unbounded as on an older kernel. */
bool jpt__ns_pid_max_here(void)
{
    struct utsname u;
    unsigned major = 0, minor = 0;

    if (uname(&u) != 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
        return false;
    return major > 6 || (major == 6 && minor >= 14);
}
