/* The seccomp filter of a sandboxed tool, built with libseccomp in the
 * parent and exported as BPF into memory, so that the child only has to
 * load it. Every denied call fails with an errno (EPERM; clone3 ENOSYS),
 * never a kill, so a tool gets an error it can report. Calls of another
 * architecture's ABI (i386 or x32 on x86-64) kill the process: libseccomp's
 * default for a foreign architecture. See sandbox.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "sandbox/sandbox.h"

#if JPT_HAVE_SECCOMP
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <seccomp.h>
#endif

bool jpt__seccomp_available(const char **why)
{
#if JPT_HAVE_SECCOMP
    uint32_t action = SECCOMP_RET_ERRNO;

    if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0)
        return true;
    if (why != NULL)
        *why = errno == ENOSYS || errno == EINVAL
                   ? "seccomp(SECCOMP_GET_ACTION_AVAIL) fails: a kernel before 4.14 or "
                     "without CONFIG_SECCOMP_FILTER, or a layer that hides the call "
                     "(valgrind)"
                   : strerror(errno);
    return false;
#else
    if (why != NULL)
        *why = "jptool was built without libseccomp (meson option seccomp)";
    return false;
#endif
}

void jpt__seccomp_prog_free(jpt__seccomp_prog *p)
{
    jpt__free(p->filter);
    p->filter = NULL;
    p->len = 0;
}

#if JPT_HAVE_SECCOMP

/* Calls no tool needs and that reach beyond it: other processes' memory
 * (ptrace, process_vm_*, pidfd_getfd), the io_uring ring (whose operations
 * seccomp cannot see), kernel keyrings, BPF and perf, and mounts. connect()
 * is denied whole: seccomp cannot read the path of a Unix socket's address,
 * and Landlock does not govern connecting to one, so no connect at all is
 * what keeps the host's sockets (an ssh-agent's, D-Bus, a container
 * engine's) out of reach. Then what a root host's tool could do with a
 * capability left (dropped anyway: a second wall) or without one: the
 * kernel log (syslog(2) needs no capability where dmesg_restrict is 0),
 * the clock, the host's names, rebooting, kexec, kernel modules, swap,
 * accounting, fanotify (which watches whole file systems), file handles
 * (open_by_handle_at opens any file by its number; name_to_handle_at
 * tells them), inotify (Landlock does not govern watching: a tool would
 * learn when files it may not read are made, opened and written, the
 * host's home among them), and userfaultfd (a tool of kernel exploits). bind and
 * listen too: a process that may connect() nowhere has no use for a name
 * of its own, which would serve only processes outside the sandbox (a
 * name of the host's services squatted, their clients' connections
 * taken). */
static const int denied[] = {
    SCMP_SYS(ptrace),           SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
    SCMP_SYS(pidfd_getfd),      SCMP_SYS(io_uring_setup),   SCMP_SYS(io_uring_enter),
    SCMP_SYS(io_uring_register), SCMP_SYS(keyctl),          SCMP_SYS(add_key),
    SCMP_SYS(request_key),      SCMP_SYS(bpf),              SCMP_SYS(perf_event_open),
    SCMP_SYS(mount),            SCMP_SYS(umount2),          SCMP_SYS(pivot_root),
    SCMP_SYS(move_mount),       SCMP_SYS(open_tree),        SCMP_SYS(fsopen),
    SCMP_SYS(fsmount),          SCMP_SYS(fsconfig),         SCMP_SYS(fspick),
    SCMP_SYS(mount_setattr),    SCMP_SYS(connect),          SCMP_SYS(syslog),
    SCMP_SYS(settimeofday),     SCMP_SYS(clock_settime),    SCMP_SYS(clock_adjtime),
    SCMP_SYS(sethostname),      SCMP_SYS(setdomainname),    SCMP_SYS(reboot),
    SCMP_SYS(kexec_load),       SCMP_SYS(kexec_file_load),  SCMP_SYS(init_module),
    SCMP_SYS(finit_module),     SCMP_SYS(delete_module),    SCMP_SYS(swapon),
    SCMP_SYS(swapoff),          SCMP_SYS(acct),             SCMP_SYS(fanotify_init),
    SCMP_SYS(fanotify_mark),    SCMP_SYS(name_to_handle_at), SCMP_SYS(open_by_handle_at),
    SCMP_SYS(userfaultfd),      SCMP_SYS(bind),             SCMP_SYS(listen),
    SCMP_SYS(inotify_init),     SCMP_SYS(inotify_init1),    SCMP_SYS(inotify_add_watch),
};

/* System calls newer than the headers of some builds: the numbers are
 * the same on every architecture but alpha and mips (the unified table
 * since Linux 5.1). */
#define NR_FCHMODAT2 452
#define NR_SETXATTRAT 463
#define NR_GETXATTRAT 464
#define NR_LISTXATTRAT 465
#define NR_REMOVEXATTRAT 466
#define NR_FILE_GETATTR 468
#define NR_FILE_SETATTR 469
#if defined(__alpha__) || defined(__mips__)
#define HAVE_UNIFIED_NR 0
#else
#define HAVE_UNIFIED_NR 1
#endif

/* JPT__SECCOMP_METADATA: every way to change a file's mode, owner,
 * times, extended attributes or inode flags, by path or by fd. Landlock
 * governs none of them, and a process owns the files of its uid: a root
 * host's tool owns root's. */
static const int metadata[] = {
    SCMP_SYS(chmod),        SCMP_SYS(fchmod),       SCMP_SYS(fchmodat),
    SCMP_SYS(chown),        SCMP_SYS(fchown),       SCMP_SYS(lchown),
    SCMP_SYS(fchownat),     SCMP_SYS(utime),        SCMP_SYS(utimes),
    SCMP_SYS(futimesat),    SCMP_SYS(utimensat),    SCMP_SYS(setxattr),
    SCMP_SYS(lsetxattr),    SCMP_SYS(fsetxattr),    SCMP_SYS(removexattr),
    SCMP_SYS(lremovexattr), SCMP_SYS(fremovexattr),
#if HAVE_UNIFIED_NR
    NR_FCHMODAT2,           NR_SETXATTRAT,          NR_REMOVEXATTRAT,
    NR_FILE_SETATTR,
#endif
};

/* JPT__SECCOMP_PATH_PROBES: what tells a VFS tool of paths it cannot open
 * beyond their existence: their extended attributes (an ACL, a security
 * label). (Watching them is denied to every profile.) */
static const int path_probes[] = {
    SCMP_SYS(getxattr),     SCMP_SYS(lgetxattr),     SCMP_SYS(fgetxattr),
    SCMP_SYS(listxattr),    SCMP_SYS(llistxattr),    SCMP_SYS(flistxattr),
#if HAVE_UNIFIED_NR
    NR_GETXATTRAT,          NR_LISTXATTRAT,          NR_FILE_GETATTR,
#endif
};

/* The calls that set a file's mode, and which argument holds it (and
 * for open and openat, which holds the flags that say a file is made:
 * -1 for none). */
typedef struct mode_call {
    int nr;
    int mode;
    int flags;
} mode_call;

static const mode_call mode_calls[] = {
    {SCMP_SYS(chmod), 1, -1},   {SCMP_SYS(fchmod), 1, -1}, {SCMP_SYS(fchmodat), 2, -1},
    {SCMP_SYS(creat), 1, -1},   {SCMP_SYS(mknod), 1, -1},  {SCMP_SYS(mknodat), 2, -1},
    {SCMP_SYS(open), 2, 1},     {SCMP_SYS(openat), 3, 2},
#if HAVE_UNIFIED_NR
    {NR_FCHMODAT2, 2, -1},
#endif
};

/* clone's flags are its first argument, but on s390 its second. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

/* The socket type without SOCK_NONBLOCK and SOCK_CLOEXEC. */
#define SOCK_TYPE_MASK 0xf

/* FS_IOC_SETFLAGS and FS_IOC_FSSETXATTR (linux/fs.h): chattr's ioctls,
 * an inode's flags and project by fd. */
#define IOC_SETFLAGS 0x40086602u
#define IOC_SETFLAGS32 0x40046602u
#define IOC_FSSETXATTR 0x401c5820u

typedef struct rule {
    int syscall;
    int err;
    unsigned ncmp;
    struct scmp_arg_cmp cmp[2];
} rule;

static int add(scmp_filter_ctx ctx, const rule *r, jpt__errbuf *err)
{
    int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO((uint32_t)r->err), r->syscall,
                                    r->ncmp, r->ncmp > 0 ? r->cmp : NULL);

    if (rc < 0) {
        char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, r->syscall);
        rc = jpt__err(err, rc == -ENOMEM ? JPT_ERR_NOMEM : JPT_ERR_IO,
                      "seccomp: adding the rule for %s: %s", name != NULL ? name : "a call",
                      strerror(-rc));
        free(name); /* libseccomp's allocation */
        return rc;
    }
    return JPT_OK;
}

static int add_each(scmp_filter_ctx ctx, const int *calls, size_t n, jpt__errbuf *err)
{
    int rc;

    for (size_t i = 0; i < n; i++) {
        rule r = {calls[i], EPERM, 0, {{0}}};
        if ((rc = add(ctx, &r, err)) < 0)
            return rc;
    }
    return JPT_OK;
}

/* socket() or socketpair() (`call`) of any type but a stream: an AF_UNIX
 * SOCK_RAW is a datagram socket to Linux, and a datagram socket sends to
 * a path socket (the system log, a notify socket) with sendto() or
 * sendmsg() and no connect(), whatever it is connected to. */
static int streams_only(scmp_filter_ctx ctx, int call, jpt__errbuf *err)
{
    rule other_family = {call, EPERM, 1, {SCMP_A0(SCMP_CMP_NE, AF_UNIX)}};
    int rc = add(ctx, &other_family, err);

    for (unsigned type = 0; rc == JPT_OK && type <= SOCK_TYPE_MASK; type++) {
        if (type == SOCK_STREAM)
            continue;
        rule r = {call, EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, SOCK_TYPE_MASK, type)}};
        rc = add(ctx, &r, err);
    }
    return rc;
}

/* No set-user-ID or set-group-ID file: a tool of a root host would leave
 * a program that runs as root for whoever may run it (another user of
 * the machine, the user's next command), one of a host that is not root
 * a program that runs as that user. Whatever else a profile allows of
 * chmod, no mode with either bit, nor a file made with one (open and
 * openat with O_CREAT or O_TMPFILE, creat, mknod of a regular file);
 * openat2's mode is in memory seccomp cannot read, so it answers ENOSYS
 * and the C library or the program falls back to openat, which is
 * checked. mkdir keeps neither bit of its mode. */
static int no_setid(scmp_filter_ctx ctx, jpt__errbuf *err)
{
    static const unsigned bits[] = {S_ISUID, S_ISGID};
    static const unsigned makes[] = {O_CREAT, __O_TMPFILE};
    rule openat2 = {SCMP_SYS(openat2), ENOSYS, 0, {{0}}};
    int rc = JPT_OK;

    for (size_t i = 0; rc == JPT_OK && i < sizeof(mode_calls) / sizeof(mode_calls[0]); i++) {
        const mode_call *m = &mode_calls[i];
        for (size_t b = 0; rc == JPT_OK && b < 2; b++) {
            struct scmp_arg_cmp mode =
                SCMP_CMP((unsigned)m->mode, SCMP_CMP_MASKED_EQ, bits[b], bits[b]);
            if (m->flags < 0) {
                rule r = {m->nr, EPERM, 1, {mode}};
                rc = add(ctx, &r, err);
                continue;
            }
            for (size_t k = 0; rc == JPT_OK && k < 2; k++) {
                rule r = {m->nr, EPERM, 2,
                          {SCMP_CMP((unsigned)m->flags, SCMP_CMP_MASKED_EQ, makes[k], makes[k]),
                           mode}};
                rc = add(ctx, &r, err);
            }
        }
    }
    return rc == JPT_OK ? add(ctx, &openat2, err) : rc;
}

static int add_rules(scmp_filter_ctx ctx, unsigned denies, jpt__errbuf *err)
{
    const rule rules[] = {
        /* Typing into a terminal's input (TIOCSTI) or the console's
         * selection (TIOCLINUX): the request is compared on the 32 bits
         * the kernel reads. */
        {SCMP_SYS(ioctl), EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI)}},
        {SCMP_SYS(ioctl), EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX)}},
        /* A user namespace would give the tool every capability inside
         * it, and with them mounts and more kernel surface. */
        {SCMP_SYS(unshare), EPERM, 1,
         {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)}},
        {SCMP_SYS(clone), EPERM, 1,
         {SCMP_CMP(CLONE_FLAGS_ARG, SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)}},
        /* clone3's flags are in memory seccomp cannot read: ENOSYS makes
         * the C library fall back to clone, which is checked. */
        {SCMP_SYS(clone3), ENOSYS, 0, {{0}}},
        /* An address: a datagram's destination; a stream socket has no
         * use for one. */
        {SCMP_SYS(sendto), EPERM, 1, {SCMP_A4(SCMP_CMP_NE, 0)}},
        /* Another process as the owner of a file's events (SIGIO, leases,
         * dnotify), with a signal of the tool's choosing: the kernel sends
         * it with the tool's credentials, where a uid 0 may signal any
         * process of the machine and only Landlock's signal scope (ABI 6)
         * stops it. F_SETOWN may only clear the owner; F_SETOWN_EX and the
         * ioctls name it in memory seccomp cannot read. */
        {SCMP_SYS(fcntl), EPERM, 2,
         {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETOWN), SCMP_A2(SCMP_CMP_NE, 0)}},
        {SCMP_SYS(fcntl), EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETOWN_EX)}},
#ifdef __NR_fcntl64
        {SCMP_SYS(fcntl64), EPERM, 2,
         {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETOWN), SCMP_A2(SCMP_CMP_NE, 0)}},
        {SCMP_SYS(fcntl64), EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETOWN_EX)}},
#endif
        {SCMP_SYS(ioctl), EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, FIOSETOWN)}},
        {SCMP_SYS(ioctl), EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, SIOCSPGRP)}},
        /* Every process it may signal at once: on a kernel without
         * Landlock's signal scope, each of its uid (for uid 0, the
         * machine's). */
        {SCMP_SYS(kill), EPERM, 1, {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, 0xffffffffu)}},
    };
    const rule inode_flags[] = {
        {SCMP_SYS(ioctl), EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, IOC_SETFLAGS)}},
        {SCMP_SYS(ioctl), EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, IOC_SETFLAGS32)}},
        {SCMP_SYS(ioctl), EPERM, 1, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, IOC_FSSETXATTR)}},
    };
    int rc;

    if ((rc = add_each(ctx, denied, sizeof(denied) / sizeof(denied[0]), err)) < 0)
        return rc;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if ((rc = add(ctx, &rules[i], err)) < 0)
            return rc;
    if ((rc = streams_only(ctx, SCMP_SYS(socketpair), err)) < 0 ||
        (rc = no_setid(ctx, err)) < 0)
        return rc;
    if (denies & JPT__SECCOMP_NO_SOCKETS) {
        rule r = {SCMP_SYS(socket), EPERM, 0, {{0}}};
        rc = add(ctx, &r, err);
    } else
        rc = streams_only(ctx, SCMP_SYS(socket), err);
    if (rc < 0)
        return rc;
    if (denies & JPT__SECCOMP_TRUNCATE) {
        rule r = {SCMP_SYS(truncate), EPERM, 0, {{0}}};
        if ((rc = add(ctx, &r, err)) < 0)
            return rc;
    }
    if (denies & JPT__SECCOMP_METADATA) {
        if ((rc = add_each(ctx, metadata, sizeof(metadata) / sizeof(metadata[0]), err)) < 0)
            return rc;
        for (size_t i = 0; i < sizeof(inode_flags) / sizeof(inode_flags[0]); i++)
            if ((rc = add(ctx, &inode_flags[i], err)) < 0)
                return rc;
    }
    if ((denies & JPT__SECCOMP_PATH_PROBES) &&
        (rc = add_each(ctx, path_probes, sizeof(path_probes) / sizeof(path_probes[0]), err)) <
            0)
        return rc;
    return JPT_OK;
}

/* libseccomp 2.5 exports to an fd only: a memfd, read back. */
static int export_bpf(scmp_filter_ctx ctx, jpt__seccomp_prog *out, jpt__errbuf *err)
{
    struct stat st;
    int fd = memfd_create("jptool-seccomp", MFD_CLOEXEC);
    int rc;

    if (fd < 0)
        return jpt__err(err, JPT_ERR_IO, "seccomp: memfd_create: %s", strerror(errno));
    if ((rc = seccomp_export_bpf(ctx, fd)) < 0) {
        close(fd);
        return jpt__err(err, JPT_ERR_IO, "seccomp: exporting the filter: %s", strerror(-rc));
    }
    if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % 8 != 0 ||
        st.st_size / 8 > 0xffff) {
        int e = errno;
        close(fd);
        return jpt__err(err, JPT_ERR_IO, "seccomp: the exported filter: %s",
                        st.st_size > 0 ? "not a whole number of instructions" : strerror(e));
    }
    void *filter = jpt__malloc((size_t)st.st_size);
    if (filter == NULL) {
        close(fd);
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory building the seccomp filter");
    }
    ssize_t n = pread(fd, filter, (size_t)st.st_size, 0);
    int e = errno;
    close(fd);
    if (n != st.st_size) {
        jpt__free(filter);
        return jpt__err(err, JPT_ERR_IO, "seccomp: reading the exported filter: %s",
                        n < 0 ? strerror(e) : "short read");
    }
    out->filter = filter;
    out->len = (unsigned short)(st.st_size / 8);
    return JPT_OK;
}

int jpt__seccomp_build(unsigned denies, jpt__seccomp_prog *out, jpt__errbuf *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int rc;

    out->filter = NULL;
    out->len = 0;
    if (ctx == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "seccomp: seccomp_init failed");
    /* no_new_privs is the child's to set, before it loads the filter. */
    if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0)
        rc = jpt__err(err, JPT_ERR_IO, "seccomp: seccomp_attr_set: %s", strerror(-rc));
    else {
        /* A binary tree of the calls rather than a chain: each of the
         * child's system calls runs through the filter. Older libseccomp
         * lacks the attribute, and builds the chain. */
        seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        rc = add_rules(ctx, denies, err);
    }
    if (rc == JPT_OK)
        rc = export_bpf(ctx, out, err);
    seccomp_release(ctx);
    return rc;
}

#else

int jpt__seccomp_build(unsigned denies, jpt__seccomp_prog *out, jpt__errbuf *err)
{
    (void)denies;
    out->filter = NULL;
    out->len = 0;
    return jpt__err(err, JPT_ERR_SANDBOX, "jptool was built without libseccomp");
}

#endif

/* ---- The filter of the child's own process id ------------------------------------ */

/* The architecture this library runs as, as seccomp_data.arch says;
 * 0 where the filter below is not built. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__) && !defined(__ILP32__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define NATIVE_ARCH AUDIT_ARCH_I386
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_ARCH AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define NATIVE_ARCH AUDIT_ARCH_S390X
#else
#define NATIVE_ARCH 0
#endif

/* The low 32 bits of argument `i`: a pid_t or an int, which is all the
 * kernel reads of it. */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define ARG_LOW(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#else
#define ARG_LOW(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#endif

#define DENY (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

/* Which argument names the process (`who`), and which value of the
 * argument before it names every process of a user (0: none). */
typedef struct own_call {
    int nr;
    int who;
    unsigned user;
} own_call;

static const own_call own_calls[] = {
    {SYS_prlimit64, 0, 0},
    {SYS_sched_setaffinity, 0, 0},
    {SYS_sched_setscheduler, 0, 0},
    {SYS_sched_setparam, 0, 0},
    {SYS_sched_setattr, 0, 0},
#ifdef SYS_migrate_pages
    {SYS_migrate_pages, 0, 0},
#endif
#ifdef SYS_move_pages
    {SYS_move_pages, 0, 0},
#endif
    {SYS_setpriority, 1, 2 /* PRIO_USER */},
    {SYS_ioprio_set, 1, 3 /* IOPRIO_WHO_USER */},
};

#define N_OWN (sizeof(own_calls) / sizeof(own_calls[0]))

unsigned short jpt__seccomp_own_filter(void *out, int self)
{
    struct sock_filter *f = out;
    /* The arch check and the load of nr (3), the table and its way out
     * (N_OWN + 1), a block of 7 per call; then the program that follows. */
    const unsigned total = 4 + 8 * N_OWN;
    unsigned n = 0;

    if (NATIVE_ARCH == 0)
        return 0;
    /* Another ABI's calls (i386 on x86-64): the main filter's to judge. */
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                          offsetof(struct seccomp_data, arch));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0,
                                          (unsigned char)(total - 2));
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                          offsetof(struct seccomp_data, nr));
    /* Jumps only go forward: each call's block after the table; any other
     * call goes on to what follows. */
    for (size_t i = 0; i < N_OWN; i++)
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                              (unsigned)own_calls[i].nr,
                                              (unsigned char)(N_OWN + 6 * i), 0);
    f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, total - n - 1, 0, 0);
    n++;
    for (size_t i = 0; i < N_OWN; i++) {
        const own_call *c = &own_calls[i];
        /* A call without a `which` checks its `who` for -1 there, which
         * names no one process either. */
        f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                              ARG_LOW(c->user != 0 ? c->who - 1 : c->who));
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                              c->user != 0 ? c->user : 0xffffffffu, 3, 0);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(c->who));
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0);
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)self, 1, 0);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, DENY);
        f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, total - n - 1, 0, 0);
        n++;
    }
    return (unsigned short)n;
}
