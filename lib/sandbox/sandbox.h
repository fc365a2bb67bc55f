/* The sandbox room's internal interface: the OS sandbox a tool process
 * runs in (RFD 075 as D11 relies on it; vfs.h, "The OS sandbox"). Never
 * installed.
 *
 * The parent prepares a sandbox before it spawns: it asks the kernel what
 * it offers, opens a Landlock ruleset holding the rules of the profile,
 * and builds the seccomp filter (libseccomp, exported as BPF into memory).
 * The child, between clone and execve, applies it with three system calls
 * and nothing else: no_new_privs, landlock_restrict_self, seccomp. One
 * prepared sandbox may be applied by many children; it is not changed by
 * applying it.
 *
 * Files: landlock.c (the kernel's ABI, the ruleset), seccomp.c (the
 * filter), sandbox.c (profiles, modes, the report, prepare and apply). */
#ifndef JPT_LIB_SANDBOX_H
#define JPT_LIB_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "common/common.h"
#include "jptool/vfs.h"

/* Profiles: what a process may do directly.
 *   VFS    a D11 tool, whose way out is the protocol on its stdin and
 *          stdout: it may read and execute the system's programs and
 *          libraries (what execve and the dynamic loader need), nothing of
 *          the workspace, home, /proc or /sys; no socket() at all.
 *   STDIO  RFD 075's sandbox of a stdio tool: the workspace read-write (or
 *          read-only), the system read-only (/usr, /lib*, /bin, /sbin,
 *          /etc, /opt, /sys; not /proc), /tmp read-write, no network: socket()
 *          of AF_UNIX streams only, and no connect(). */
#define JPT__SANDBOX_VFS 1
#define JPT__SANDBOX_STDIO 2

/* The seccomp filters and Landlock rulesets an owner (a registry) has
 * built, kept for its later spawns: a filter depends on the profile and
 * the kernel only, a ruleset on the spec as well (and is used again only
 * while the paths the spec names are the files they were), and building
 * one costs more than applying it (issue 18). One thread at a time, as
 * its owner. */
typedef struct jpt__sandbox_cache jpt__sandbox_cache;

/* NULL when out of memory. */
jpt__sandbox_cache *jpt__sandbox_cache_new(void);
/* Every sandbox prepared with it must be freed first. NULL-safe. */
void jpt__sandbox_cache_free(jpt__sandbox_cache *c);

typedef struct jpt__sandbox_spec {
    int profile;               /* JPT__SANDBOX_VFS or _STDIO */
    int mode;                  /* JPT_SANDBOX_REQUIRED or _BEST_EFFORT */
    const char *program;       /* the executable (a path): may be read and
                                  executed; NULL: none besides the system's */
    const char *workspace;     /* STDIO: the workspace root; NULL: none */
    bool workspace_writable;   /* STDIO */
    const char *const *read;   /* absolute paths readable and executable
                                  besides the profile's; NULL-terminated,
                                  or NULL */
    const char *const *write;  /* STDIO: absolute paths writable too */
    jpt__sandbox_cache *cache; /* filters kept here; NULL: built for this
                                  sandbox alone */
} jpt__sandbox_spec;

typedef struct jpt__sandbox jpt__sandbox;

/* What a prepared sandbox enforces, for the report of a spawn. */
typedef struct jpt__sandbox_report {
    unsigned enforced;         /* JPT_SANDBOX_ENFORCED_* bits */
    int landlock_abi;          /* the kernel's, 0: none */
    char text[JPT__ERRMSG_MAX];
} jpt__sandbox_report;

/* Prepares a sandbox. In mode REQUIRED, a kernel (or a build) that cannot
 * enforce the profile's minimum — Landlock (any ABI), a seccomp filter,
 * no_new_privs — fails with JPT_ERR_SANDBOX and `err` names what it lacks;
 * in BEST_EFFORT the sandbox enforces what there is and its report says
 * what is missing. Errors: JPT_ERR_SANDBOX, JPT_ERR_INVALID (an unknown
 * profile or mode, a relative path in `read` or `write`, `write` with the
 * VFS profile), JPT_ERR_IO (a path of the spec that exists but cannot be
 * opened, or a Landlock or seccomp call failed unexpectedly; `err` says
 * which), JPT_ERR_NOMEM. Paths that do not exist are skipped. */
int jpt__sandbox_prepare(const jpt__sandbox_spec *spec, jpt__sandbox **out, jpt__errbuf *err);

/* In the child between clone (or fork) and execve: sets no_new_privs,
 * restricts itself to the ruleset and loads the filter. Async-signal-safe:
 * system calls only, no allocation, no locks. Returns 0, or an errno with
 * `*step` naming the call that failed. The ruleset's fd must still be open
 * (apply before closing the inherited fds). */
int jpt__sandbox_apply_in_child(const jpt__sandbox *sb, const char **step);

/* What it enforces (filled at prepare). */
const jpt__sandbox_report *jpt__sandbox_report_of(const jpt__sandbox *sb);

/* What mode "required" requires. */
#define JPT__SANDBOX_ENFORCED_MINIMUM                                                      \
    (JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS | JPT_SANDBOX_ENFORCED_SECCOMP |                    \
     JPT_SANDBOX_ENFORCED_FILES | JPT_SANDBOX_ENFORCED_TRUNCATE)

/* Logs what the sandbox of process `pid` of tool `tool` (for call or
 * handle `id`, or NULL) enforces: at JPT_LOG_INFO, or JPT_LOG_WARNING when
 * it lacks part of the minimum (best-effort without Landlock or seccomp). */
void jpt__sandbox_log(const char *tool, const char *id, int pid,
                      const jpt__sandbox_report *rep);

/* Closes the ruleset and frees the filter. NULL-safe. */
void jpt__sandbox_free(jpt__sandbox *sb);

/* "required", "best-effort", "off" to JPT_SANDBOX_* (0 for another word),
 * and back ("default" for 0). */
int jpt__sandbox_mode_from_name(const char *name);
const char *jpt__sandbox_mode_name(int mode);

/* ---- landlock.c ------------------------------------------------------------------ */

/* The Landlock ABI the kernel offers (LANDLOCK_CREATE_RULESET_VERSION), 0
 * when it has none; `*why` (may be NULL) then says why (errno's text). */
int jpt__landlock_abi(const char **why);

/* The access rights ruleset a Landlock ABI handles, for the rules. */
typedef struct jpt__landlock_handled {
    uint64_t fs, net, scoped;
} jpt__landlock_handled;
void jpt__landlock_handled_for(int abi, jpt__landlock_handled *h);

/* Creates a ruleset handling `h` (its fd, >= 3, close-on-exec), or -1
 * with errno set. */
int jpt__landlock_create(int abi, const jpt__landlock_handled *h);
/* Adds a rule granting `access` beneath `path` (a directory) or on it (a
 * file: only the rights of files are kept), masked by `handled`. 1 when
 * added, 0 when the path does not exist, -1 with errno set. */
int jpt__landlock_allow(int ruleset, const char *path, uint64_t access, uint64_t handled);

/* Rights, as the kernel numbers them (linux/landlock.h; older headers lack
 * the later ones). */
#define JPT__LL_EXECUTE (1ULL << 0)
#define JPT__LL_WRITE_FILE (1ULL << 1)
#define JPT__LL_READ_FILE (1ULL << 2)
#define JPT__LL_READ_DIR (1ULL << 3)
#define JPT__LL_REMOVE_DIR (1ULL << 4)
#define JPT__LL_REMOVE_FILE (1ULL << 5)
#define JPT__LL_MAKE_CHAR (1ULL << 6)
#define JPT__LL_MAKE_DIR (1ULL << 7)
#define JPT__LL_MAKE_REG (1ULL << 8)
#define JPT__LL_MAKE_SOCK (1ULL << 9)
#define JPT__LL_MAKE_FIFO (1ULL << 10)
#define JPT__LL_MAKE_BLOCK (1ULL << 11)
#define JPT__LL_MAKE_SYM (1ULL << 12)
#define JPT__LL_REFER (1ULL << 13)    /* ABI 2 */
#define JPT__LL_TRUNCATE (1ULL << 14) /* ABI 3 */
#define JPT__LL_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define JPT__LL_NET_BIND_TCP (1ULL << 0)    /* ABI 4 */
#define JPT__LL_NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */
#define JPT__LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define JPT__LL_SCOPE_SIGNAL (1ULL << 1)                /* ABI 6 */

/* ---- seccomp.c ------------------------------------------------------------------- */

/* A seccomp filter as BPF, ready for seccomp(SECCOMP_SET_MODE_FILTER). */
typedef struct jpt__seccomp_prog {
    unsigned short len;        /* instructions */
    void *filter;              /* struct sock_filter[len] */
} jpt__seccomp_prog;

/* Whether the kernel takes seccomp filters that return errors (and the
 * library was built with libseccomp); `*why` (may be NULL) says why not. */
bool jpt__seccomp_available(const char **why);
/* Builds the filter of `profile`; `deny_truncate` adds truncate(2) to the
 * denied calls (for a Landlock that does not govern it). Errors:
 * JPT_ERR_IO (libseccomp failed; `err` says where), JPT_ERR_NOMEM. */
int jpt__seccomp_build(int profile, bool deny_truncate, jpt__seccomp_prog *out,
                       jpt__errbuf *err);
void jpt__seccomp_prog_free(jpt__seccomp_prog *p);

/* ---- For tests ------------------------------------------------------------------- */

/* Makes jpt__sandbox_prepare act as on a kernel with Landlock ABI
 * `max_abi` at most (0: none) and, with `no_seccomp`, without seccomp
 * filters, so that the modes can be tested on any kernel. -1 restores
 * the kernel's. Process-wide and not thread-safe: tests only, set while no
 * other thread prepares a sandbox. */
void jpt__sandbox_test_limit(int max_abi, bool no_seccomp);

#endif /* JPT_LIB_SANDBOX_H */
