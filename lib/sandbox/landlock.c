/* Landlock: the kernel's ABI, and a ruleset made of path rules. The
 * system calls are made directly (glibc has no wrappers) and the structs
 * are declared here in their newest layout, so that a build against old
 * kernel headers still uses what a newer kernel offers. See sandbox.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif

#define CREATE_RULESET_VERSION (1U << 0)
#define RULE_PATH_BENEATH 1

/* struct landlock_ruleset_attr: handled_access_fs (ABI 1),
 * handled_access_net (ABI 4), scoped (ABI 6). The kernel is given the size
 * of the fields its ABI knows. */
typedef struct ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
} ruleset_attr;

/* struct landlock_path_beneath_attr */
typedef struct __attribute__((packed)) path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} path_beneath_attr;

/* The rights a rule on a file (not a directory) may hold. */
#define FILE_RIGHTS                                                                     \
    (JPT__LL_EXECUTE | JPT__LL_WRITE_FILE | JPT__LL_READ_FILE | JPT__LL_TRUNCATE |     \
     JPT__LL_IOCTL_DEV)

int jpt__landlock_abi(const char **why)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, CREATE_RULESET_VERSION);

    if (abi < 1) {
        if (why != NULL)
            *why = errno == ENOSYS
                       ? "landlock_create_ruleset is not implemented here: a kernel before "
                         "5.13 or built without Landlock, or a layer that hides the call "
                         "(a container's seccomp profile, valgrind)"
                   : errno == EOPNOTSUPP ? "Landlock is not enabled at boot "
                                           "(add landlock to the lsm= list)"
                                         : strerror(errno);
        return 0;
    }
    return (int)abi;
}

void jpt__landlock_handled_for(int abi, jpt__landlock_handled *h)
{
    /* ABI 1: the thirteen rights from EXECUTE to MAKE_SYM. */
    h->fs = (JPT__LL_MAKE_SYM << 1) - 1;
    h->net = 0;
    h->scoped = 0;
    if (abi >= 2)
        h->fs |= JPT__LL_REFER;
    if (abi >= 3)
        h->fs |= JPT__LL_TRUNCATE;
    if (abi >= 4)
        h->net = JPT__LL_NET_BIND_TCP | JPT__LL_NET_CONNECT_TCP;
    if (abi >= 5)
        h->fs |= JPT__LL_IOCTL_DEV;
    if (abi >= 6)
        h->scoped = JPT__LL_SCOPE_ABSTRACT_UNIX_SOCKET | JPT__LL_SCOPE_SIGNAL;
    /* ABI 7 (audit logging flags) and later add no right this version
     * knows: a newer kernel is used at ABI 6's rights. */
}

int jpt__landlock_create(int abi, const jpt__landlock_handled *h)
{
    ruleset_attr attr = {h->fs, h->net, h->scoped};
    size_t size = abi >= 6 ? sizeof(attr)
                  : abi >= 4 ? offsetof(ruleset_attr, scoped)
                             : offsetof(ruleset_attr, handled_access_net);
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);

    /* The child applies it after its dup2 onto 0-2: never one of those. */
    if (fd >= 0 && fd < 3) {
        int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        int e = errno;
        close(fd);
        errno = e;
        fd = high;
    }
    return fd;
}

int jpt__landlock_allow(int ruleset, const char *path, uint64_t access, uint64_t handled)
{
    struct stat st;
    int fd = open(path, O_PATH | O_CLOEXEC);

    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    path_beneath_attr rule = {
        .allowed_access = access & handled & (S_ISDIR(st.st_mode) ? ~0ULL : FILE_RIGHTS),
        .parent_fd = fd,
    };
    int rc = rule.allowed_access == 0
                 ? 0
                 : (int)syscall(SYS_landlock_add_rule, ruleset, RULE_PATH_BENEATH, &rule, 0);
    int e = errno;
    close(fd);
    errno = e;
    return rc < 0 ? -1 : 1;
}
