/* The OS sandbox of a tool process: the profiles' paths and rights, the
 * modes, the report of what is enforced, and the three calls the child
 * makes before execve. See sandbox.h, and vfs.h ("The OS sandbox") for
 * what each profile promises. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include "sandbox/sandbox.h"

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

struct jpt__sandbox {
    int ruleset;             /* Landlock ruleset, or -1 */
    bool ruleset_kept;       /* a cache's: not closed with the sandbox */
    const jpt__seccomp_prog *prog; /* `own`, a cache's, or NULL: no filter */
    jpt__seccomp_prog own;
    jpt__sandbox_report report;
};

/* The file a path named when a ruleset was built. */
typedef struct path_id {
    dev_t dev;
    ino_t ino;
    bool present;
} path_id;

/* A Landlock ruleset kept for the spawns of the same spec (issue 18):
 * building one opens, adds a rule for and closes each of a dozen paths,
 * and resolves the library's own, which was most of what a sandboxed
 * spawn cost beyond an unsandboxed one. A rule holds the file it was made
 * for, so the ruleset is used again only while each path the spec names
 * (its program, workspace and lists) is the file it was then: one stat
 * each. */
typedef struct kept_ruleset {
    int fd;
    char *key;                  /* the spec (spec_key) */
    size_t key_len;
    path_id *ids;               /* of the spec's paths (spec_key's order) */
    size_t nids;
    struct kept_ruleset *next;
} kept_ruleset;

/* By profile (VFS, STDIO) and whether truncate(2) is denied; the rulesets
 * built; what the kernel offers, asked once. */
struct jpt__sandbox_cache {
    jpt__seccomp_prog progs[2][2];
    kept_ruleset *rulesets;
};

jpt__sandbox_cache *jpt__sandbox_cache_new(void)
{
    return jpt__calloc(1, sizeof(jpt__sandbox_cache));
}

void jpt__sandbox_cache_free(jpt__sandbox_cache *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < 2; j++)
            jpt__seccomp_prog_free(&c->progs[i][j]);
    while (c->rulesets != NULL) {
        kept_ruleset *k = c->rulesets;
        c->rulesets = k->next;
        close(k->fd);
        jpt__free(k->key);
        jpt__free(k->ids);
        jpt__free(k);
    }
    jpt__free(c);
}

/* The filter of `spec`, from its cache or built now. */
static int filter(jpt__sandbox *sb, const jpt__sandbox_spec *spec, bool deny_truncate,
                  jpt__errbuf *err)
{
    bool stdio = spec->profile == JPT__SANDBOX_STDIO;
    jpt__seccomp_prog *p = spec->cache != NULL ? &spec->cache->progs[stdio][deny_truncate]
                                               : &sb->own;
    int rc;

    if (p->len == 0 && (rc = jpt__seccomp_build(spec->profile, deny_truncate, p, err)) < 0)
        return rc;
    sb->prog = p;
    return JPT_OK;
}

/* jpt__sandbox_test_limit's; -1: the kernel's. */
static int test_max_abi = -1;
static bool test_no_seccomp;

void jpt__sandbox_test_limit(int max_abi, bool no_seccomp)
{
    test_max_abi = max_abi;
    test_no_seccomp = no_seccomp;
}

/* ---- Rights and paths ------------------------------------------------------------ */

#define RX (JPT__LL_READ_FILE | JPT__LL_READ_DIR | JPT__LL_EXECUTE)
/* Everything on files and directories but devices (MAKE_CHAR, MAKE_BLOCK,
 * IOCTL_DEV). */
#define RW                                                                                  \
    (RX | JPT__LL_WRITE_FILE | JPT__LL_TRUNCATE | JPT__LL_REMOVE_DIR | JPT__LL_REMOVE_FILE | \
     JPT__LL_MAKE_DIR | JPT__LL_MAKE_REG | JPT__LL_MAKE_SOCK | JPT__LL_MAKE_FIFO |          \
     JPT__LL_MAKE_SYM | JPT__LL_REFER)
#define DEV_RW (JPT__LL_READ_FILE | JPT__LL_WRITE_FILE | JPT__LL_TRUNCATE)

typedef struct grant {
    const char *path;
    uint64_t access;
} grant;

/* What execve and the dynamic loader need, for every profile: programs
 * and libraries (on merged-/usr systems /bin, /sbin and /lib* are
 * symbolic links into /usr), and the devices programs open as a matter of
 * course. */
static const grant system_grants[] = {
    {"/usr", RX},          {"/bin", RX},          {"/sbin", RX},
    {"/lib", RX},          {"/lib32", RX},        {"/lib64", RX},
    {"/libx32", RX},       {"/dev/null", DEV_RW}, {"/dev/zero", DEV_RW},
    {"/dev/full", DEV_RW}, {"/dev/random", JPT__LL_READ_FILE},
    {"/dev/urandom", JPT__LL_READ_FILE},
};

/* A VFS tool reads of /etc only what the loader and the C library's time
 * functions read: not passwd, hosts, the TLS certificates or anything
 * else that says something of the host. */
static const grant vfs_grants[] = {
    {"/etc/ld.so.cache", JPT__LL_READ_FILE},
    {"/etc/ld.so.preload", JPT__LL_READ_FILE},
    {"/etc/localtime", JPT__LL_READ_FILE},
};

/* RFD 075's stdio sandbox: the system read-only, /tmp (shared with the
 * host) read-write. Not /proc: Landlock's ptrace restriction stops
 * ptrace, /proc/<pid>/mem and fd/, but not /proc/<pid>/environ, maps or
 * auxv of a process outside the sandbox (Linux 6.18), so a tool that may
 * read /proc may read the host's environment. */
static const grant stdio_grants[] = {
    {"/etc", RX}, {"/opt", RX}, {"/sys", RX}, {"/tmp", RW},
};

/* ---- Modes ----------------------------------------------------------------------- */

int jpt__sandbox_mode_from_name(const char *name)
{
    if (strcmp(name, "required") == 0)
        return JPT_SANDBOX_REQUIRED;
    if (strcmp(name, "best-effort") == 0)
        return JPT_SANDBOX_BEST_EFFORT;
    if (strcmp(name, "off") == 0)
        return JPT_SANDBOX_OFF;
    return 0;
}

const char *jpt__sandbox_mode_name(int mode)
{
    switch (mode) {
    case JPT_SANDBOX_REQUIRED:
        return "required";
    case JPT_SANDBOX_BEST_EFFORT:
        return "best-effort";
    case JPT_SANDBOX_OFF:
        return "off";
    default:
        return "default";
    }
}

/* ---- Preparing --------------------------------------------------------------------- */

static int check_paths(const char *const *paths, const char *what, jpt__errbuf *err)
{
    for (size_t i = 0; paths != NULL && paths[i] != NULL; i++)
        if (paths[i][0] != '/')
            return jpt__err(err, JPT_ERR_INVALID,
                            "sandbox: %s path '%.200s' is not absolute", what, paths[i]);
    return JPT_OK;
}

static int check_spec(const jpt__sandbox_spec *spec, jpt__errbuf *err)
{
    int rc;

    if (spec->profile != JPT__SANDBOX_VFS && spec->profile != JPT__SANDBOX_STDIO)
        return jpt__err(err, JPT_ERR_INVALID, "sandbox: unknown profile %d", spec->profile);
    if (spec->mode != JPT_SANDBOX_REQUIRED && spec->mode != JPT_SANDBOX_BEST_EFFORT)
        return jpt__err(err, JPT_ERR_INVALID, "sandbox: mode %d cannot be prepared",
                        spec->mode);
    if (spec->profile == JPT__SANDBOX_VFS && spec->write != NULL && spec->write[0] != NULL)
        return jpt__err(err, JPT_ERR_INVALID,
                        "sandbox: a VFS tool writes through the protocol: no path may be "
                        "writable");
    if ((rc = check_paths(spec->read, "a readable", err)) < 0 ||
        (rc = check_paths(spec->write, "a writable", err)) < 0)
        return rc;
    return JPT_OK;
}

static int allow(jpt__sandbox *sb, const char *path, uint64_t access, uint64_t handled,
                 jpt__errbuf *err)
{
    if (jpt__landlock_allow(sb->ruleset, path, access, handled) < 0)
        return jpt__err(err, JPT_ERR_IO, "sandbox: Landlock rule for '%.200s': %s", path,
                        strerror(errno));
    return JPT_OK;
}

static int allow_all(jpt__sandbox *sb, const grant *g, size_t n, uint64_t handled,
                     jpt__errbuf *err)
{
    int rc;

    for (size_t i = 0; i < n; i++)
        if ((rc = allow(sb, g[i].path, g[i].access, handled, err)) < 0)
            return rc;
    return JPT_OK;
}

static int allow_list(jpt__sandbox *sb, const char *const *paths, uint64_t access,
                      uint64_t handled, jpt__errbuf *err)
{
    int rc;

    for (size_t i = 0; paths != NULL && paths[i] != NULL; i++)
        if ((rc = allow(sb, paths[i], access, handled, err)) < 0)
            return rc;
    return JPT_OK;
}

/* The file this library was loaded from, resolved (libjptool.so.0 is a
 * symlink), in `out`; false when it cannot be told. A tool written with
 * vfs_tool.h links the library the host runs: when that library is not a
 * system one (a build tree, /opt), the tool could not even start without
 * it. Reading it gives the tool nothing it could not have. */
static bool library_file(char out[PATH_MAX])
{
    static const char anchor; /* any address of the library's own */
    Dl_info info;

    return dladdr(&anchor, &info) != 0 && info.dli_fname != NULL &&
           info.dli_fname[0] == '/' && realpath(info.dli_fname, out) != NULL;
}

/* ---- Rulesets kept ------------------------------------------------------------------ */

/* Calls `fn` with each path the spec names, in a fixed order: its
 * program, its workspace, its readable and writable lists. */
static void each_spec_path(const jpt__sandbox_spec *spec, void (*fn)(const char *, void *),
                           void *ud)
{
    fn(spec->program != NULL ? spec->program : "", ud);
    fn(spec->profile == JPT__SANDBOX_STDIO && spec->workspace != NULL ? spec->workspace : "",
       ud);
    for (size_t i = 0; spec->read != NULL && spec->read[i] != NULL; i++)
        fn(spec->read[i], ud);
    fn("", ud); /* between the lists */
    for (size_t i = 0; spec->write != NULL && spec->write[i] != NULL; i++)
        fn(spec->write[i], ud);
}

typedef struct key_builder {
    jpt__buf b;
    size_t n;
    int rc;
} key_builder;

static void add_to_key(const char *path, void *ud)
{
    key_builder *k = ud;

    /* NUL-separated: a path holds any other byte. */
    if (k->rc == JPT_OK)
        k->rc = jpt__buf_append(&k->b, path, strlen(path) + 1);
    k->n++;
}

/* The spec as the ruleset depends on it: the profile, the ABI, whether
 * the workspace is writable, and its paths. */
static int spec_key(const jpt__sandbox_spec *spec, int abi, key_builder *k)
{
    k->rc = jpt__buf_printf(&k->b, "%d %d %d", spec->profile, abi, spec->workspace_writable);
    if (k->rc == JPT_OK)
        k->rc = jpt__buf_putc(&k->b, '\0');
    each_spec_path(spec, add_to_key, k);
    return k->rc;
}

typedef struct id_taker {
    path_id *ids;
    size_t n;
} id_taker;

static void take_id(const char *path, void *ud)
{
    id_taker *t = ud;
    struct stat st;
    path_id *id = &t->ids[t->n++];

    id->present = path[0] != '\0' && stat(path, &st) == 0;
    id->dev = id->present ? st.st_dev : 0;
    id->ino = id->present ? st.st_ino : 0;
}

/* The files the spec's paths name now, in `ids` (room for `n`). */
static void spec_ids(const jpt__sandbox_spec *spec, path_id *ids)
{
    id_taker t = {ids, 0};

    each_spec_path(spec, take_id, &t);
}

static bool same_ids(const path_id *a, const path_id *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].present != b[i].present || a[i].dev != b[i].dev || a[i].ino != b[i].ino)
            return false;
    return true;
}

/* The kept ruleset of `key`, still good for the files the spec names now;
 * or NULL. A stale one is dropped. */
static kept_ruleset *find_kept(jpt__sandbox_cache *c, const key_builder *k,
                               const jpt__sandbox_spec *spec)
{
    for (kept_ruleset **at = &c->rulesets; *at != NULL; at = &(*at)->next) {
        kept_ruleset *kept = *at;
        if (kept->key_len != k->b.len || memcmp(kept->key, k->b.data, k->b.len) != 0)
            continue;
        path_id *now = jpt__calloc(kept->nids, sizeof(*now));
        if (now == NULL)
            return NULL; /* built again, without memory to check */
        spec_ids(spec, now);
        bool same = same_ids(now, kept->ids, kept->nids);
        jpt__free(now);
        if (same)
            return kept;
        /* A path names another file than when the rules were made. */
        *at = kept->next;
        close(kept->fd);
        jpt__free(kept->key);
        jpt__free(kept->ids);
        jpt__free(kept);
        return NULL;
    }
    return NULL;
}

/* Keeps the sandbox's new ruleset in the cache, which lends it from now
 * on. Without the memory it is simply not kept. */
static void keep(jpt__sandbox_cache *c, jpt__sandbox *sb, key_builder *k,
                 const jpt__sandbox_spec *spec)
{
    kept_ruleset *kept = jpt__calloc(1, sizeof(*kept));

    if (kept == NULL || (kept->ids = jpt__calloc(k->n, sizeof(*kept->ids))) == NULL) {
        jpt__free(kept);
        return;
    }
    kept->fd = sb->ruleset;
    kept->key_len = k->b.len;
    kept->key = jpt__buf_take(&k->b);
    kept->nids = k->n;
    if (kept->key == NULL) {
        jpt__free(kept->ids);
        jpt__free(kept);
        return;
    }
    spec_ids(spec, kept->ids);
    kept->next = c->rulesets;
    c->rulesets = kept;
    sb->ruleset_kept = true;
}

static int build_ruleset(jpt__sandbox *sb, const jpt__sandbox_spec *spec, int abi,
                         jpt__errbuf *err)
{
    char library[PATH_MAX];
    jpt__landlock_handled h;
    int rc;

    jpt__landlock_handled_for(abi, &h);
    if ((sb->ruleset = jpt__landlock_create(abi, &h)) < 0)
        return jpt__err(err, JPT_ERR_IO, "sandbox: landlock_create_ruleset: %s",
                        strerror(errno));
    if ((rc = allow_all(sb, system_grants, sizeof(system_grants) / sizeof(system_grants[0]),
                        h.fs, err)) < 0)
        return rc;
    if (spec->profile == JPT__SANDBOX_VFS)
        rc = allow_all(sb, vfs_grants, sizeof(vfs_grants) / sizeof(vfs_grants[0]), h.fs, err);
    else
        rc = allow_all(sb, stdio_grants, sizeof(stdio_grants) / sizeof(stdio_grants[0]), h.fs,
                       err);
    if (rc < 0)
        return rc;
    /* The tool's own program, wherever it is (a script is read by its
     * interpreter). */
    if (spec->program != NULL &&
        (rc = allow(sb, spec->program, JPT__LL_READ_FILE | JPT__LL_EXECUTE, h.fs, err)) < 0)
        return rc;
    if (library_file(library) &&
        (rc = allow(sb, library, JPT__LL_READ_FILE | JPT__LL_EXECUTE, h.fs, err)) < 0)
        return rc;
    if (spec->profile == JPT__SANDBOX_STDIO && spec->workspace != NULL &&
        (rc = allow(sb, spec->workspace, spec->workspace_writable ? RW : RX, h.fs, err)) < 0)
        return rc;
    if ((rc = allow_list(sb, spec->read, RX, h.fs, err)) < 0 ||
        (rc = allow_list(sb, spec->write, RW, h.fs, err)) < 0)
        return rc;
    return JPT_OK;
}

/* The ruleset of the spec: the cache's, or built now (and kept). */
static int ruleset(jpt__sandbox *sb, const jpt__sandbox_spec *spec, int abi, jpt__errbuf *err)
{
    key_builder k = {JPT__BUF_INIT, 0, JPT_OK};
    int rc;

    if (spec->cache == NULL)
        return build_ruleset(sb, spec, abi, err);
    if (spec_key(spec, abi, &k) < 0) {
        jpt__buf_free(&k.b);
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory preparing the sandbox");
    }
    kept_ruleset *kept = find_kept(spec->cache, &k, spec);
    if (kept != NULL) {
        sb->ruleset = kept->fd;
        sb->ruleset_kept = true;
        jpt__buf_free(&k.b);
        return JPT_OK;
    }
    if ((rc = build_ruleset(sb, spec, abi, err)) == JPT_OK)
        keep(spec->cache, sb, &k, spec);
    jpt__buf_free(&k.b);
    return rc;
}

/* The report: what is enforced, and what this system lacks. */
static void describe(jpt__sandbox_report *rep, int profile, const char *ll_why,
                     const char *sc_why)
{
    const struct {
        unsigned bit;
        const char *name;
        const char *needs;
    } parts[] = {
        {JPT_SANDBOX_ENFORCED_FILES, "files", "Landlock"},
        {JPT_SANDBOX_ENFORCED_TRUNCATE, "truncation", "Landlock ABI 3, or seccomp"},
        {JPT_SANDBOX_ENFORCED_TCP, "TCP bind and connect", "Landlock ABI 4"},
        {JPT_SANDBOX_ENFORCED_DEVICE_IOCTL, "device ioctls", "Landlock ABI 5"},
        {JPT_SANDBOX_ENFORCED_SCOPES, "signal and abstract-socket scopes", "Landlock ABI 6"},
        {JPT_SANDBOX_ENFORCED_SECCOMP,
         profile == JPT__SANDBOX_VFS ? "seccomp (no sockets, no connect, no ptrace, io_uring, "
                                       "user namespaces, TIOCSTI, keyrings, bpf, perf, mounts)"
                                     : "seccomp (AF_UNIX streams only, no connect, no ptrace, "
                                       "io_uring, user namespaces, TIOCSTI, keyrings, bpf, "
                                       "perf, mounts)",
         "seccomp filters"},
        {JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS, "no_new_privs", "prctl"},
    };
    size_t n = 0, cap = sizeof(rep->text);
    bool first = true;

#define PUT(...)                                                                        \
    do {                                                                                \
        int w_ = snprintf(rep->text + n, cap - n, __VA_ARGS__);                         \
        n = w_ < 0 ? n : (size_t)w_ >= cap - n ? cap - 1 : n + (size_t)w_;             \
    } while (0)

    PUT("%s profile", profile == JPT__SANDBOX_VFS ? "vfs" : "stdio");
    if (rep->landlock_abi > 0)
        PUT(", Landlock ABI %d", rep->landlock_abi);
    PUT(": enforced ");
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (rep->enforced & parts[i].bit) {
            PUT("%s%s", first ? "" : ", ", parts[i].name);
            first = false;
        }
    if (first)
        PUT("nothing");
    first = true;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (!(rep->enforced & parts[i].bit)) {
            PUT("%s%s (needs %s)", first ? "; missing: " : ", ", parts[i].name,
                parts[i].needs);
            first = false;
        }
    if (ll_why != NULL)
        PUT("; Landlock: %s", ll_why);
    if (sc_why != NULL)
        PUT("; seccomp: %s", sc_why);
#undef PUT
}

int jpt__sandbox_prepare(const jpt__sandbox_spec *spec, jpt__sandbox **out, jpt__errbuf *err)
{
    const char *ll_why = NULL, *sc_why = NULL;
    int rc;

    *out = NULL;
    if ((rc = check_spec(spec, err)) < 0)
        return rc;
    int abi = jpt__landlock_abi(&ll_why);
    if (test_max_abi >= 0 && abi > test_max_abi) {
        abi = test_max_abi;
        if (abi == 0)
            ll_why = "not available (limited for a test)";
    }
    bool seccomp = jpt__seccomp_available(&sc_why);
    if (seccomp && test_no_seccomp) {
        seccomp = false;
        sc_why = "not available (limited for a test)";
    }
    /* The minimum of "required": Landlock at any ABI (with seccomp denying
     * truncate(2) below ABI 3, and socket() whatever Landlock does with
     * TCP), a seccomp filter, no_new_privs. */
    if (spec->mode == JPT_SANDBOX_REQUIRED && (abi < 1 || !seccomp)) {
        char lacks[JPT__ERRMSG_MAX];
        if (abi < 1 && !seccomp)
            snprintf(lacks, sizeof(lacks), "Landlock (%s) and seccomp filters (%s)", ll_why,
                     sc_why);
        else if (abi < 1)
            snprintf(lacks, sizeof(lacks), "Landlock (%s)", ll_why);
        else
            snprintf(lacks, sizeof(lacks), "seccomp filters (%s)", sc_why);
        return jpt__err(err, JPT_ERR_SANDBOX,
                        "the OS sandbox is required, but this system lacks %s (the sandbox "
                        "mode \"best-effort\" runs tools with what there is)",
                        lacks);
    }

    jpt__sandbox *sb = jpt__calloc(1, sizeof(*sb));
    if (sb == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory preparing the sandbox");
    sb->ruleset = -1;
    sb->report.landlock_abi = abi;
    if (abi >= 1 && (rc = ruleset(sb, spec, abi, err)) < 0) {
        jpt__sandbox_free(sb);
        return rc;
    }
    if (seccomp && (rc = filter(sb, spec, abi < 3, err)) < 0) {
        jpt__sandbox_free(sb);
        return rc;
    }

    unsigned e = JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS;
    if (seccomp)
        e |= JPT_SANDBOX_ENFORCED_SECCOMP;
    if (abi >= 1)
        e |= JPT_SANDBOX_ENFORCED_FILES;
    if (abi >= 3 || (abi >= 1 && seccomp))
        e |= JPT_SANDBOX_ENFORCED_TRUNCATE;
    if (abi >= 4)
        e |= JPT_SANDBOX_ENFORCED_TCP;
    if (abi >= 5)
        e |= JPT_SANDBOX_ENFORCED_DEVICE_IOCTL;
    if (abi >= 6)
        e |= JPT_SANDBOX_ENFORCED_SCOPES;
    sb->report.enforced = e;
    describe(&sb->report, spec->profile, abi < 1 ? ll_why : NULL, seccomp ? NULL : sc_why);
    *out = sb;
    return JPT_OK;
}

const jpt__sandbox_report *jpt__sandbox_report_of(const jpt__sandbox *sb)
{
    return &sb->report;
}

void jpt__sandbox_log(const char *tool, const char *id, int pid,
                      const jpt__sandbox_report *rep)
{
    /* A kernel before 6.12 lacks a part of Landlock, which is worth a
     * line; a sandbox without Landlock or seccomp at all, a warning. */
    jpt__log((rep->enforced & JPT__SANDBOX_ENFORCED_MINIMUM) == JPT__SANDBOX_ENFORCED_MINIMUM
                 ? JPT_LOG_INFO
                 : JPT_LOG_WARNING,
             "tool '%s'%s%s%s pid %d runs in the OS sandbox: %s", tool,
             id != NULL ? " for '" : "", id != NULL ? id : "", id != NULL ? "':" : ":", pid,
             rep->text);
}

void jpt__sandbox_free(jpt__sandbox *sb)
{
    if (sb == NULL)
        return;
    if (sb->ruleset >= 0 && !sb->ruleset_kept)
        close(sb->ruleset);
    jpt__seccomp_prog_free(&sb->own);
    jpt__free(sb);
}

/* ---- In the child ------------------------------------------------------------------ */

int jpt__sandbox_apply_in_child(const jpt__sandbox *sb, const char **step)
{
    /* Landlock without CAP_SYS_ADMIN and seccomp filters both need it;
     * it also keeps set-user-ID programs from gaining anything. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        *step = "prctl(PR_SET_NO_NEW_PRIVS)";
        return errno;
    }
    if (sb->ruleset >= 0 && syscall(SYS_landlock_restrict_self, sb->ruleset, 0) != 0) {
        *step = "landlock_restrict_self";
        return errno;
    }
    if (sb->prog != NULL) {
        struct sock_fprog prog = {.len = sb->prog->len, .filter = sb->prog->filter};
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
            *step = "seccomp(SECCOMP_SET_MODE_FILTER)";
            return errno;
        }
    }
    return 0;
}
