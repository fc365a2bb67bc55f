/* The seccomp filter of a sandboxed tool, built with libseccomp in the
 * parent and exported as BPF into memory, so that the child only has to
 * load it. Every denied call fails with an errno (EPERM; clone3 ENOSYS),
 * never a kill, so a tool gets an error it can report. Calls of another
 * architecture's ABI (i386 or x32 on x86-64) kill the process: libseccomp's
 * default for a foreign architecture. See sandbox.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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
 * engine's) out of reach. */
static const int denied[] = {
    SCMP_SYS(ptrace),         SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
    SCMP_SYS(pidfd_getfd),    SCMP_SYS(io_uring_setup),   SCMP_SYS(io_uring_enter),
    SCMP_SYS(io_uring_register), SCMP_SYS(keyctl),        SCMP_SYS(add_key),
    SCMP_SYS(request_key),    SCMP_SYS(bpf),              SCMP_SYS(perf_event_open),
    SCMP_SYS(mount),          SCMP_SYS(umount2),          SCMP_SYS(pivot_root),
    SCMP_SYS(move_mount),     SCMP_SYS(open_tree),        SCMP_SYS(fsopen),
    SCMP_SYS(fsmount),        SCMP_SYS(fsconfig),         SCMP_SYS(fspick),
    SCMP_SYS(mount_setattr),  SCMP_SYS(connect),
};

/* clone's flags are its first argument, but on s390 its second. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1
#else
#define CLONE_FLAGS_ARG 0
#endif

/* The socket type without SOCK_NONBLOCK and SOCK_CLOEXEC. */
#define SOCK_TYPE_MASK 0xf

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

static int add_rules(scmp_filter_ctx ctx, int profile, bool deny_truncate, jpt__errbuf *err)
{
    /* Sockets: only connected pairs of AF_UNIX streams (socketpair), and
     * for a stdio tool AF_UNIX streams it may bind and listen on. No
     * datagram sockets: sendto() and sendmsg() with an address reach a
     * path socket (the system log, a notify socket) without connect(). */
    const rule rules[] = {
        {SCMP_SYS(socketpair), EPERM, 1, {SCMP_A0(SCMP_CMP_NE, AF_UNIX)}},
        {SCMP_SYS(socketpair), EPERM, 1,
         {SCMP_A1(SCMP_CMP_MASKED_EQ, SOCK_TYPE_MASK, SOCK_DGRAM)}},
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
    };
    int rc;

    for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
        rule r = {denied[i], EPERM, 0, {{0}}};
        if ((rc = add(ctx, &r, err)) < 0)
            return rc;
    }
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if ((rc = add(ctx, &rules[i], err)) < 0)
            return rc;
    if (profile == JPT__SANDBOX_VFS) {
        rule r = {SCMP_SYS(socket), EPERM, 0, {{0}}};
        if ((rc = add(ctx, &r, err)) < 0)
            return rc;
    } else {
        const rule unix_only[] = {
            {SCMP_SYS(socket), EPERM, 1, {SCMP_A0(SCMP_CMP_NE, AF_UNIX)}},
            {SCMP_SYS(socket), EPERM, 1,
             {SCMP_A1(SCMP_CMP_MASKED_EQ, SOCK_TYPE_MASK, SOCK_DGRAM)}},
        };
        for (size_t i = 0; i < sizeof(unix_only) / sizeof(unix_only[0]); i++)
            if ((rc = add(ctx, &unix_only[i], err)) < 0)
                return rc;
    }
    if (deny_truncate) {
        rule r = {SCMP_SYS(truncate), EPERM, 0, {{0}}};
        if ((rc = add(ctx, &r, err)) < 0)
            return rc;
    }
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

int jpt__seccomp_build(int profile, bool deny_truncate, jpt__seccomp_prog *out,
                       jpt__errbuf *err)
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
    else
        rc = add_rules(ctx, profile, deny_truncate, err);
    if (rc == JPT_OK)
        rc = export_bpf(ctx, out, err);
    seccomp_release(ctx);
    return rc;
}

#else

int jpt__seccomp_build(int profile, bool deny_truncate, jpt__seccomp_prog *out,
                       jpt__errbuf *err)
{
    (void)profile;
    (void)deny_truncate;
    out->filter = NULL;
    out->len = 0;
    return jpt__err(err, JPT_ERR_SANDBOX, "jptool was built without libseccomp");
}

#endif
