/* The OS sandbox of a tool process and of a process.run child: the
 * profiles' paths and rights, the modes, the report of what is enforced,
 * and what the child does before execve. See sandbox.h, and vfs.h ("The
 * OS sandbox") for what each profile promises. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>

#include "sandbox/sandbox.h"

#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

struct jpt__sandbox {
    int ruleset;             /* Landlock ruleset, or -1 */
    const jpt__seccomp_prog *prog; /* `own`, a cache's, or NULL: no filter */
    jpt__seccomp_prog own;
    bool own_filter;         /* the child adds its own-process filter */
    jpt__ns_plan ns;         /* its lists point into these: */
    jpt__pathv writable, read_only, hide, pin, tmp_keep;
    jpt__buf read_only_ids, hide_ids, pin_ids; /* uint64_t pairs, per path */
    jpt__pathv tmp_remake;   /* the workspace, when made anew in /tmp */
    jpt__repos *repos;       /* STDIO: its workspace's repositories, or NULL */
    bool repos_partial;      /* … found in part (kept_repos.why) */
    char repos_why[320];
    char workspace_real[PATH_MAX]; /* the spec's workspace, its real path ("": none) */
    char tmp_dir[PATH_MAX];  /* STDIO: its /tmp ("": a tmpfs) */
    jpt__sandbox_report report;
};

/* Whether this host can make the namespaces, by which are wanted (a
 * mount namespace, a PID namespace, one with its pid_max): 0 not known
 * yet, 1 yes, -1 no (`why` says why). */
typedef struct ns_support {
    int state;
    char why[256];
} ns_support;

/* A ruleset built for a spec, kept with what its rules were opened on
 * (a path replaced since, as an upgrade replaces a program, is another
 * file, which the kept rules would not grant). */
typedef struct kept_ruleset {
    jpt__buf key;           /* the spec, serialised (key_of) */
    int fd;                 /* -1: an empty slot */
    jpt__buf ids;           /* (dev, ino) of each path of the key */
    uint64_t used;
} kept_ruleset;

#define KEPT_RULESETS 8

/* A stdio tool's view of the file system, made once (jpt__ns_keep): its
 * children enter it rather than each making and tearing down its own. */
typedef struct kept_view {
    jpt__buf key;           /* view_key */
    jpt__buf ids;           /* (dev, ino) of its writable paths */
    int mnt, user;          /* -1: an empty slot / no user namespace */
    uint64_t used;
} kept_view;

/* The repositories of a stdio tool's writable workspace (S2 of issue 15's
 * second adversarial pass: a tool with "sandbox": true wrote .git/config,
 * whose core.fsmonitor ran at the user's next `git status`): each .git
 * and bare repository, mounted read-only in its view, found by a walk
 * that is taken again only when a directory of the workspace changed
 * (its stamps, in `inv`). */
typedef struct kept_repos {
    char *workspace;        /* its real path; NULL: none kept */
    jpt__repos *inv;        /* the inventory, and the walk's stamps */
    jpt__pathv protect;     /* relative; flag: a directory */
    jpt__idv ids;           /* per `protect` */
    bool partial;           /* the walk stopped: at its bound, or at a
                               directory it could not list */
    char why[320];          /* why, when partial */
} kept_repos;

/* A stdio tool's /tmp: a directory of its own under the host's /tmp,
 * removed with the cache. */
typedef struct tool_tmp {
    char *tool;
    char *dir;
} tool_tmp;

struct jpt__sandbox_cache {
    jpt__seccomp_prog progs[JPT__SECCOMP_VARIANTS];
    kept_repos repos;
    tool_tmp *tmps;
    size_t n_tmps, cap_tmps;
    ns_support ns[8];
    jpt__etc etc;
    kept_ruleset rulesets[KEPT_RULESETS];
    kept_view views[KEPT_RULESETS];
    uint64_t tick;
    char library[PATH_MAX]; /* library_file's, once found ("": none) */
    char tool_library[PATH_MAX]; /* tool_library_file's ("": none) */
    bool library_known;
};

jpt__sandbox_cache *jpt__sandbox_cache_new(void)
{
    jpt__sandbox_cache *c = jpt__calloc(1, sizeof(jpt__sandbox_cache));

    for (size_t i = 0; c != NULL && i < KEPT_RULESETS; i++) {
        c->rulesets[i].fd = -1;
        c->views[i].mnt = c->views[i].user = -1;
    }
    return c;
}

static void drop_view(kept_view *v)
{
    if (v->mnt >= 0)
        close(v->mnt);
    if (v->user >= 0)
        close(v->user);
    v->mnt = v->user = -1;
    jpt__buf_free(&v->key);
    jpt__buf_free(&v->ids);
}

static void drop_kept(kept_ruleset *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    jpt__buf_free(&k->key);
    jpt__buf_free(&k->ids);
}

static void drop_repos(kept_repos *k)
{
    jpt__free(k->workspace);
    jpt__repos_unref(k->inv);
    jpt__pathv_free(&k->protect);
    jpt__idv_free(&k->ids);
    memset(k, 0, sizeof(*k));
}

/* Removes the tool's /tmp and all its tool left there. */
static void drop_tmp(tool_tmp *t)
{
    const char *slash = strrchr(t->dir, '/');
    char parent[PATH_MAX];

    snprintf(parent, sizeof(parent), "%.*s", (int)(slash - t->dir), t->dir);
    int fd = open(parent[0] != '\0' ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || jpt__remove_tree(fd, slash + 1) < 0)
        jpt__log(JPT_LOG_WARNING, "sandbox: the /tmp of tool '%s' (%s) is left: %s", t->tool,
                 t->dir, fd < 0 ? strerror(errno) : "not all of it could be removed");
    if (fd >= 0)
        close(fd);
    jpt__free(t->tool);
    jpt__free(t->dir);
}

void jpt__sandbox_cache_free(jpt__sandbox_cache *c)
{
    if (c == NULL)
        return;
    drop_repos(&c->repos);
    for (size_t i = 0; i < c->n_tmps; i++)
        drop_tmp(&c->tmps[i]);
    jpt__free(c->tmps);
    for (size_t i = 0; i < JPT__SECCOMP_VARIANTS; i++)
        jpt__seccomp_prog_free(&c->progs[i]);
    for (size_t i = 0; i < KEPT_RULESETS; i++) {
        drop_kept(&c->rulesets[i]);
        drop_view(&c->views[i]);
    }
    jpt__etc_free(&c->etc);
    jpt__free(c);
}

/* The filter denying `denies`, from the cache or built now. */
static int filter(jpt__sandbox *sb, const jpt__sandbox_spec *spec, unsigned denies,
                  jpt__errbuf *err)
{
    jpt__seccomp_prog *p = spec->cache != NULL ? &spec->cache->progs[denies] : &sb->own;
    int rc;

    if (p->len == 0 && (rc = jpt__seccomp_build(denies, p, err)) < 0)
        return rc;
    sb->prog = p;
    return JPT_OK;
}

/* jpt__sandbox_test_limit's; -1: the kernel's. */
static int test_max_abi = -1;
static bool test_no_seccomp;
static bool test_no_namespaces;

void jpt__sandbox_test_limit(int max_abi, bool no_seccomp)
{
    test_max_abi = max_abi;
    test_no_seccomp = no_seccomp;
}

void jpt__sandbox_test_no_namespaces(bool none)
{
    test_no_namespaces = none;
}

/* ---- Path lists ------------------------------------------------------------------ */

/* Whether `path` is `dir` or beneath it. */
static bool path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);

    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
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

/* RFD 075's stdio sandbox and process.run's: the system read-only (and
 * /etc, below). Not /proc: Landlock's ptrace restriction stops ptrace,
 * /proc/<pid>/mem and fd/, but not /proc/<pid>/environ, maps or auxv of a
 * process outside the sandbox (Linux 6.18), so a tool that may read /proc
 * may read the host's environment. A stdio tool also shares the host's
 * /tmp; a process.run child has its own (ns.c). */
static const grant system_more_grants[] = {
    {"/opt", RX},
    {"/sys", RX},
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
    for (size_t i = 0; paths != NULL && paths[i] != NULL; i++) {
        if (paths[i][0] != '/')
            return jpt__err(err, JPT_ERR_INVALID,
                            "sandbox: %s path '%.200s' is not absolute", what, paths[i]);
        if (strlen(paths[i]) >= JPT__SANDBOX_PATH_MAX)
            return jpt__err(err, JPT_ERR_LIMIT, "sandbox: %s path '%.200s…' is too long",
                            what, paths[i]);
    }
    return JPT_OK;
}

static bool any(const char *const *paths)
{
    return paths != NULL && paths[0] != NULL;
}

static int check_spec(const jpt__sandbox_spec *spec, jpt__errbuf *err)
{
    int rc;

    if (spec->profile != JPT__SANDBOX_VFS && spec->profile != JPT__SANDBOX_STDIO &&
        spec->profile != JPT__SANDBOX_RUN)
        return jpt__err(err, JPT_ERR_INVALID, "sandbox: unknown profile %d", spec->profile);
    if (spec->mode != JPT_SANDBOX_REQUIRED && spec->mode != JPT_SANDBOX_BEST_EFFORT)
        return jpt__err(err, JPT_ERR_INVALID, "sandbox: mode %d cannot be prepared",
                        spec->mode);
    if (spec->profile == JPT__SANDBOX_VFS && any(spec->write))
        return jpt__err(err, JPT_ERR_INVALID,
                        "sandbox: a VFS tool writes through the protocol: no path may be "
                        "writable");
    if (spec->profile != JPT__SANDBOX_RUN &&
        (any(spec->read_only) || any(spec->hide) || any(spec->pin)))
        return jpt__err(err, JPT_ERR_INVALID,
                        "sandbox: read-only, hidden and pinned paths are for a process.run "
                        "child");
    if ((rc = check_paths(spec->read, "a readable", err)) < 0 ||
        (rc = check_paths(spec->write, "a writable", err)) < 0 ||
        (rc = check_paths(spec->read_only, "a read-only", err)) < 0 ||
        (rc = check_paths(spec->hide, "a hidden", err)) < 0 ||
        (rc = check_paths(spec->pin, "a pinned", err)) < 0)
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

/* The tool side's own library beside `library` (libjptool-tool.so.N in
 * the same directory, resolved), in `out`; false when there is none. A
 * tool written with vfs_tool.h links that one (include/jptool/vfs_tool.h),
 * from the same build or installation as the host's library. */
static bool tool_library_file(const char *library, char out[PATH_MAX])
{
    char sibling[PATH_MAX];
    const char *slash = strrchr(library, '/');

    if (slash == NULL)
        return false;
    int n = snprintf(sibling, sizeof(sibling), "%.*s/%s", (int)(slash - library), library,
                     JPT_TOOL_LIBRARY_SONAME);
    return n > 0 && (size_t)n < sizeof(sibling) && realpath(sibling, out) != NULL;
}

/* ---- The ruleset --------------------------------------------------------------------- */

/* A ruleset for `spec` (its fd, or JPT_ERR_IO): `around`, /etc is granted
 * entry by entry around the secrets of `etc`; `library`, this library's
 * file, and `tool_library`, the tool side's beside it, or NULL. */
static int make_ruleset(const jpt__sandbox_spec *spec, int abi, const jpt__etc *etc,
                        bool around, const char *library, const char *tool_library,
                        const char *tmp, jpt__errbuf *err)
{
    jpt__landlock_handled h;
    jpt__sandbox sb = {.ruleset = -1};
    bool vfs = spec->profile == JPT__SANDBOX_VFS;
    int rc;

    jpt__landlock_handled_for(abi, &h);
    if ((sb.ruleset = jpt__landlock_create(abi, &h)) < 0)
        return jpt__err(err, JPT_ERR_IO, "sandbox: landlock_create_ruleset: %s",
                        strerror(errno));
    rc = allow_all(&sb, system_grants, sizeof(system_grants) / sizeof(system_grants[0]), h.fs,
                   err);
    if (rc == JPT_OK && vfs)
        rc = allow_all(&sb, vfs_grants, sizeof(vfs_grants) / sizeof(vfs_grants[0]), h.fs, err);
    else if (rc == JPT_OK &&
             (rc = allow_all(&sb, system_more_grants,
                             sizeof(system_more_grants) / sizeof(system_more_grants[0]), h.fs,
                             err)) == JPT_OK)
        rc = around ? jpt__etc_allow_around(sb.ruleset, etc, RX, h.fs, err)
                    : allow(&sb, "/etc", RX, h.fs, err);
    /* A stdio tool's /tmp: its own directory, bound there (a rule on /tmp
     * would not hold: Landlock's walk passes over a mount point hidden by
     * another mount), or the host's where it has no mount namespace. */
    if (rc == JPT_OK && spec->profile == JPT__SANDBOX_STDIO)
        rc = allow(&sb, tmp != NULL ? tmp : "/tmp", RW, h.fs, err);
    /* The tool's own program, wherever it is (a script is read by its
     * interpreter). */
    if (rc == JPT_OK && spec->program != NULL)
        rc = allow(&sb, spec->program, JPT__LL_READ_FILE | JPT__LL_EXECUTE, h.fs, err);
    if (rc == JPT_OK && library != NULL)
        rc = allow(&sb, library, JPT__LL_READ_FILE | JPT__LL_EXECUTE, h.fs, err);
    if (rc == JPT_OK && tool_library != NULL)
        rc = allow(&sb, tool_library, JPT__LL_READ_FILE | JPT__LL_EXECUTE, h.fs, err);
    if (rc == JPT_OK && spec->profile == JPT__SANDBOX_STDIO && spec->workspace != NULL)
        rc = allow(&sb, spec->workspace, spec->workspace_writable ? RW : RX, h.fs, err);
    if (rc == JPT_OK)
        rc = allow_list(&sb, spec->read, RX, h.fs, err);
    if (rc == JPT_OK)
        rc = allow_list(&sb, spec->write, RW, h.fs, err);
    if (rc < 0) {
        close(sb.ruleset);
        return rc;
    }
    return sb.ruleset;
}

/* ---- Rulesets kept ----------------------------------------------------------------- */

/* Everything make_ruleset reads, NUL-separated. */
static int key_of(const jpt__sandbox_spec *spec, int abi, const char *const *libraries,
                  bool around, unsigned etc_generation, const char *tmp, jpt__buf *key)
{
    const char *const one[] = {spec->workspace, spec->program, libraries[0], libraries[1], tmp};
    const char *const *lists[] = {spec->read, spec->write};
    int rc = jpt__buf_printf(key, "%d %d %d %d %u", spec->profile, abi,
                             spec->workspace_writable, around, around ? etc_generation : 0);

    for (size_t i = 0; rc == JPT_OK && i < sizeof(one) / sizeof(one[0]); i++) {
        const char *part = one[i] != NULL ? one[i] : "";
        rc = jpt__buf_append(key, part, strlen(part) + 1);
    }
    for (size_t l = 0; rc == JPT_OK && l < 2; l++) {
        rc = jpt__buf_append(key, l == 0 ? "r" : "w", 2);
        for (size_t i = 0; rc == JPT_OK && lists[l] != NULL && lists[l][i] != NULL; i++)
            rc = jpt__buf_append(key, lists[l][i], strlen(lists[l][i]) + 1);
    }
    return rc;
}

/* The file each path of the key names now: (device, inode), zeros for
 * none. A rule holds the file it was opened on. */
static int ids_of(const jpt__sandbox_spec *spec, const char *const *libraries, jpt__buf *ids)
{
    const char *const one[] = {spec->workspace, spec->program, libraries[0], libraries[1]};
    const char *const *lists[] = {spec->read, spec->write};
    int rc = JPT_OK;

    for (size_t l = 0; rc == JPT_OK && l < 3; l++) {
        const char *const *paths = l == 0 ? one : lists[l - 1];
        size_t n = l == 0 ? 4 : SIZE_MAX;
        for (size_t i = 0; rc == JPT_OK && i < n && paths != NULL && paths[i] != NULL; i++) {
            struct stat st;
            uint64_t id[2] = {0, 0};
            if (stat(paths[i], &st) == 0) {
                id[0] = (uint64_t)st.st_dev;
                id[1] = (uint64_t)st.st_ino;
            }
            rc = jpt__buf_append(ids, id, sizeof(id));
        }
    }
    return rc;
}

static bool same(const jpt__buf *a, const jpt__buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* The ruleset of `sb`: one kept in the cache for the same spec over the
 * same files (a copy of its fd), else made now and kept. A RUN child's
 * gains a rule in the child, and is never kept. */
static int ruleset_for(jpt__sandbox *sb, const jpt__sandbox_spec *spec, int abi,
                       const jpt__etc *etc, bool around, jpt__errbuf *err)
{
    const char *tmp = sb->tmp_dir[0] != '\0' ? sb->tmp_dir : NULL;
    char path[PATH_MAX], tool_path[PATH_MAX];
    jpt__sandbox_cache *c = spec->profile != JPT__SANDBOX_RUN ? spec->cache : NULL;
    const char *library, *tool_library;

    /* The library does not move while it is loaded; the tool side's beside
     * it is looked for once too, with it. */
    if (spec->cache != NULL && !spec->cache->library_known) {
        if (!library_file(spec->cache->library))
            spec->cache->library[0] = '\0';
        if (spec->cache->library[0] == '\0' ||
            !tool_library_file(spec->cache->library, spec->cache->tool_library))
            spec->cache->tool_library[0] = '\0';
        spec->cache->library_known = true;
    }
    if (spec->cache != NULL) {
        library = spec->cache->library[0] != '\0' ? spec->cache->library : NULL;
        tool_library = spec->cache->tool_library[0] != '\0' ? spec->cache->tool_library : NULL;
    } else {
        library = library_file(path) ? path : NULL;
        tool_library = library != NULL && tool_library_file(library, tool_path) ? tool_path
                                                                                 : NULL;
    }
    const char *const libraries[] = {library, tool_library};
    jpt__buf key = JPT__BUF_INIT, ids = JPT__BUF_INIT;
    kept_ruleset *slot = NULL;
    int rc;

    if (c == NULL) {
        sb->ruleset = make_ruleset(spec, abi, etc, around, library, tool_library, tmp, err);
        return sb->ruleset < 0 ? sb->ruleset : JPT_OK;
    }
    if (key_of(spec, abi, libraries, around, etc->generation, tmp, &key) < 0 ||
        ids_of(spec, libraries, &ids) < 0) {
        jpt__buf_free(&key);
        jpt__buf_free(&ids);
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory preparing the sandbox");
    }
    for (size_t i = 0; i < KEPT_RULESETS; i++) {
        kept_ruleset *k = &c->rulesets[i];
        if (k->fd >= 0 && same(&k->key, &key)) {
            slot = k;
            break;
        }
        if (slot == NULL || k->fd < 0 || (slot->fd >= 0 && k->used < slot->used))
            slot = k;
    }
    if (slot->fd >= 0 && same(&slot->key, &key) && same(&slot->ids, &ids))
        rc = JPT_OK;
    else {
        drop_kept(slot);
        if ((rc = make_ruleset(spec, abi, etc, around, library, tool_library, tmp, err)) >= 0) {
            slot->fd = rc;
            slot->key = key;
            slot->ids = ids;
            key = ids = (jpt__buf)JPT__BUF_INIT;
            rc = JPT_OK;
        }
    }
    jpt__buf_free(&key);
    jpt__buf_free(&ids);
    if (rc < 0)
        return rc;
    slot->used = ++c->tick;
    if ((sb->ruleset = fcntl(slot->fd, F_DUPFD_CLOEXEC, 3)) < 0)
        return jpt__err(err, errno == EMFILE || errno == ENFILE ? JPT_ERR_LIMIT : JPT_ERR_IO,
                        "sandbox: copying the ruleset's fd: %s", strerror(errno));
    return JPT_OK;
}

/* ---- The namespaces ------------------------------------------------------------------ */

/* Whether this process may mount in its own user namespace
 * (CAP_SYS_ADMIN): else the child needs a user namespace of its own. */
static bool may_mount(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];

    return syscall(SYS_capget, &hdr, data) == 0 &&
           (data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN)) != 0;
}

/* Whether this host can make the namespaces of `plan`: asked of a child
 * once per cache. */
static bool namespaces_here(const jpt__sandbox_spec *spec, const jpt__ns_plan *plan,
                            char *why, size_t n)
{
    ns_support local = {0, ""};
    size_t kind = (plan->mounts ? 4u : 0u) | (plan->pid ? 2u : 0u) | (plan->pid_max[0] != '\0');
    ns_support *s = spec->cache != NULL ? &spec->cache->ns[kind] : &local;

    if (test_no_namespaces) {
        snprintf(why, n, "not available (limited for a test)");
        return false;
    }
    if (s->state == 0) {
        static const char *const tmp[] = {"/tmp", NULL};
        jpt__ns_plan probe = *plan;
        struct stat st;
        probe.writable = lstat("/tmp", &st) == 0 && S_ISDIR(st.st_mode) ? tmp : NULL;
        probe.private_tmp = plan->pid && probe.writable != NULL;
        s->state = jpt__ns_probe(&probe, s->why, sizeof(s->why)) ? 1 : -1;
    }
    if (s->state < 0)
        snprintf(why, n, "%s", s->why);
    return s->state > 0;
}

/* Makes each writable path that is a writable file system's. */
static int plan_writable(jpt__sandbox *sb, const char *const *paths)
{
    char real[PATH_MAX];
    struct statvfs fs;
    int rc;

    /* By its real path: the child resolves none through a symbolic link
     * (ns.c). */
    for (size_t i = 0; paths != NULL && paths[i] != NULL; i++)
        if (realpath(paths[i], real) != NULL && statvfs(real, &fs) == 0 &&
            !(fs.f_flag & ST_RDONLY) && (rc = jpt__pathv_add(&sb->writable, real, true)) < 0)
            return rc;
    return JPT_OK;
}

/* Adds `path` to the granted paths the private /tmp holds again when it
 * is below /tmp and not beneath one kept already. */
static int keep_below_tmp(jpt__sandbox *sb, const char *path, jpt__errbuf *err)
{
    int rc;

    if (!path_under(path, "/tmp") || strcmp(path, "/tmp") == 0)
        return JPT_OK;
    for (size_t j = 0; j < sb->tmp_keep.n; j++)
        if (path_under(path, sb->tmp_keep.v[j]))
            return JPT_OK;
    if (sb->tmp_keep.n == JPT__SANDBOX_TMP_KEEP_MAX)
        return jpt__err(err, JPT_ERR_LIMIT, "sandbox: more than %d granted paths below /tmp",
                        JPT__SANDBOX_TMP_KEEP_MAX);
    if ((rc = jpt__pathv_add(&sb->tmp_keep, path, true)) < 0)
        return jpt__err(err, rc, "out of memory planning the sandbox");
    return JPT_OK;
}

/* The /tmp of tool `tool`: a directory of its own under the host's /tmp
 * (mode 0700), made at its first spawn, kept for its later ones and
 * removed with the cache; into `out`. A stdio tool shared the host's
 * /tmp, where a root host's tool read and wrote every root-owned file
 * (issue 15's second pass, S1); on disk rather than a tmpfs of its own,
 * which would hold up to its size of the host's memory for each tool.
 * JPT_ERR_IO, JPT_ERR_NOMEM. */
static int tool_tmp_dir(jpt__sandbox_cache *c, const char *tool, char out[PATH_MAX],
                        jpt__errbuf *err)
{
    char dir[PATH_MAX];

    for (size_t i = 0; i < c->n_tmps; i++)
        if (strcmp(c->tmps[i].tool, tool) == 0) {
            snprintf(out, PATH_MAX, "%s", c->tmps[i].dir);
            return JPT_OK;
        }
    tool_tmp *grown = jpt__array_reserve(c->tmps, &c->cap_tmps, c->n_tmps + 1, sizeof(*grown), 4);
    if (grown == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory planning the sandbox");
    c->tmps = grown;
    snprintf(dir, sizeof(dir), "/tmp/jptool-tmp-%d-XXXXXX", (int)getpid());
    if (mkdtemp(dir) == NULL)
        return jpt__err(err, JPT_ERR_IO, "sandbox: making the /tmp of tool '%.80s' (%s): %s",
                        tool, dir, strerror(errno));
    tool_tmp *t = &c->tmps[c->n_tmps];
    if ((t->tool = jpt__strdup(tool)) == NULL || (t->dir = jpt__strdup(dir)) == NULL) {
        jpt__free(t->tool);
        rmdir(dir);
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory planning the sandbox");
    }
    c->n_tmps++;
    snprintf(out, PATH_MAX, "%s", dir);
    return JPT_OK;
}

/* ---- A stdio tool's repositories --------------------------------------------------------- */

/* `rel` of the walk kept read-only in the tool's view. */
static int protect(kept_repos *k, const char *rel, bool dir)
{
    struct stat st;
    int rc;

    if (fstatat(jpt__repos_root_fd(k->inv), rel, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return JPT_OK; /* gone meanwhile */
    if (k->protect.n >= JPT_VFS_RUN_COVER_MAX)
        return JPT_ERR_LIMIT;
    if ((rc = jpt__pathv_add(&k->protect, rel, dir)) < 0 || (rc = jpt__idv_add(&k->ids, &st)) < 0)
        return rc;
    return jpt__repos_covered(k->inv, rel, &st);
}

/* Each .git (any case; a symbolic link is judged by where it leads, as
 * it is left) is read-only, and not walked into. */
static int repos_visit(void *ud, const char *rel, const char *name, unsigned char type)
{
    kept_repos *k = ud;
    int rc = jpt__repos_note(k->inv, rel, name);

    if (rc < 0)
        return rc;
    if (strcasecmp(name, ".git") == 0)
        return type == DT_LNK ? JPT_OK : protect(k, rel, type == DT_DIR);
    /* A repository in a directory the walk passes over would be the
     * tool's to open (chmod) and write: the directory stays as it is. */
    if (type == DT_DIR && jpt__walk_shut_but_owned(jpt__repos_root_fd(k->inv), rel))
        return protect(k, rel, true);
    return type == DT_DIR ? JPT__WALK_DESCEND : JPT_OK;
}

/* Each bare repository too, but the workspace itself. */
static int repos_dir_done(void *ud, const char *rel, unsigned marks)
{
    kept_repos *k = ud;
    bool bare = false;
    int rc = jpt__repos_note_dir(k->inv, rel, marks, &bare);

    return rc < 0 || !bare || strcmp(rel, ".") == 0 ? rc : protect(k, rel, true);
}

/* Walks the workspace `real` into `k` (empty): JPT_OK (with k->partial
 * past a bound), JPT_ERR_IO, JPT_ERR_NOMEM. */
static int walk_repos(kept_repos *k, const char *real, jpt__errbuf *err)
{
    jpt__errbuf why = {{0}};
    jpt__walk *w = NULL;
    int fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC), rc;

    if (fd < 0)
        return jpt__err(err, JPT_ERR_IO, "sandbox: opening the workspace %.200s: %s", real,
                        strerror(errno));
    rc = jpt__repos_new(fd, &k->inv);
    close(fd);
    if (rc == JPT_OK && (rc = jpt__repos_add_root(k->inv, ".")) == JPT_OK &&
        (rc = jpt__walk_new(jpt__repos_root_fd(k->inv), JPT_VFS_RUN_SCAN_MAX, repos_visit,
                            repos_dir_done, k, &w)) == JPT_OK &&
        (rc = jpt__walk_add(w, ".")) == JPT_OK) {
        jpt__walk_stamp_into(w, jpt__repos_stamps(k->inv));
        rc = jpt__walk_step(w, 0, &why);
    }
    jpt__walk_free(w);
    /* What was found before the walk stopped is kept read-only; the rest
     * is not known, which the mode decides on (build). */
    if (rc == JPT_ERR_LIMIT)
        snprintf(k->why, sizeof(k->why), "it holds more than %d entries or %d repositories",
                 JPT_VFS_RUN_SCAN_MAX, JPT_VFS_RUN_COVER_MAX);
    else if (rc == JPT_ERR_IO)
        snprintf(k->why, sizeof(k->why), "%.300s", why.text);
    if (rc == JPT_ERR_LIMIT || rc == JPT_ERR_IO) {
        k->partial = true;
        rc = JPT_OK;
    }
    if (rc < 0)
        return jpt__err(err, rc, "%s", rc == JPT_ERR_NOMEM ? "out of memory finding the "
                                                              "workspace's repositories"
                                                            : "sandbox: no fd left for the "
                                                              "workspace");
    jpt__repos_seal(k->inv);
    if ((k->workspace = jpt__strdup(real)) == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory finding the workspace's repositories");
    return JPT_OK;
}

/* The repositories of a STDIO spec's writable workspace into sb
 * (read_only, with their identities, and `repos` for the sweep after
 * it): those the cache found, while no directory of the workspace has
 * changed since, else found again. None with "git": "writable". */
static int find_repos(jpt__sandbox *sb, const jpt__sandbox_spec *spec, jpt__errbuf *err)
{
    kept_repos local = {0}, *k = spec->cache != NULL ? &spec->cache->repos : &local;
    const char *real = sb->workspace_real;
    int rc = JPT_OK;

    if (spec->profile != JPT__SANDBOX_STDIO || !spec->workspace_writable || spec->git_writable ||
        real[0] == '\0')
        return JPT_OK;
    if (k->workspace == NULL || strcmp(k->workspace, real) != 0 || k->partial ||
        !jpt__walk_stamps_hold(jpt__repos_stamps(k->inv), jpt__repos_root_fd(k->inv))) {
        drop_repos(k);
        rc = walk_repos(k, real, err);
    }
    for (size_t i = 0; rc == JPT_OK && i < k->protect.n; i++) {
        jpt__buf abs = JPT__BUF_INIT;
        if ((rc = jpt__buf_printf(&abs, "%s/%s", strcmp(real, "/") == 0 ? "" : real,
                                  k->protect.v[i])) == JPT_OK &&
            (rc = jpt__pathv_add(&sb->read_only, abs.data, k->protect.flag[i])) == JPT_OK)
            rc = jpt__buf_append(&sb->read_only_ids, k->ids.v + 2 * i, 2 * sizeof(uint64_t));
        jpt__buf_free(&abs);
    }
    if (rc == JPT_OK) {
        sb->repos = jpt__repos_ref(k->inv);
        sb->repos_partial = k->partial;
        snprintf(sb->repos_why, sizeof(sb->repos_why), "%.300s", k->why);
    } else if (rc == JPT_ERR_NOMEM)
        jpt__err(err, rc, "out of memory finding the workspace's repositories");
    drop_repos(&local);
    return rc;
}

/* A RUN child's own /tmp, holding again the granted paths below it and
 * the program's directory; none when the workspace or a granted path
 * holds /tmp itself (a workspace there is its /tmp). A workspace below
 * /tmp that no grant holds (its root is not readable) is made anew in it,
 * read-only, holding what is kept of it: the child starts there, and
 * lists and reads nothing of the workspace but what it may read. (Kept
 * whole, it would be readable: Landlock's walk from a file beneath it
 * passes the private /tmp, which it may read and write.) */
static int plan_tmp(jpt__sandbox *sb, const jpt__sandbox_spec *spec, jpt__errbuf *err)
{
    const char *const *lists[] = {spec->read, spec->write};
    char dir[PATH_MAX];
    struct stat st;
    bool stdio = spec->profile == JPT__SANDBOX_STDIO, held = stdio;
    int rc;

    if (lstat("/tmp", &st) != 0 || !S_ISDIR(st.st_mode) ||
        (spec->workspace != NULL && path_under("/tmp", spec->workspace)))
        return JPT_OK;
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; lists[l] != NULL && lists[l][i] != NULL; i++) {
            if (path_under("/tmp", lists[l][i]))
                return JPT_OK;
            held |= spec->workspace != NULL && path_under(spec->workspace, lists[l][i]);
        }
    /* A stdio tool's workspace is granted, and kept whole. */
    if (stdio && spec->workspace != NULL &&
        (rc = keep_below_tmp(sb, sb->workspace_real, err)) < 0)
        return rc;
    /* Outer paths first, so that one beneath another is not kept twice. */
    for (size_t depth = 1; depth < JPT__SANDBOX_PATH_MAX / 2; depth++) {
        bool deeper = false;
        for (size_t l = 0; l < 2; l++)
            for (size_t i = 0; lists[l] != NULL && lists[l][i] != NULL; i++) {
                size_t slashes = 0;
                for (const char *c = lists[l][i]; *c != '\0'; c++)
                    slashes += *c == '/';
                deeper |= slashes > depth;
                if (slashes == depth && (rc = keep_below_tmp(sb, lists[l][i], err)) < 0)
                    return rc;
            }
        if (!deeper)
            break;
    }
    if (spec->program != NULL && spec->program[0] == '/' &&
        snprintf(dir, sizeof(dir), "%s", spec->program) < (int)sizeof(dir)) {
        *strrchr(dir, '/') = '\0';
        if ((rc = keep_below_tmp(sb, dir, err)) < 0)
            return rc;
    }
    if (spec->workspace != NULL && !held && path_under(spec->workspace, "/tmp") &&
        strcmp(spec->workspace, "/tmp") != 0 &&
        (rc = jpt__pathv_add(&sb->tmp_remake, spec->workspace, true)) < 0)
        return jpt__err(err, rc, "out of memory planning the sandbox");
    sb->ns.private_tmp = true;
    return JPT_OK;
}

/* A grant of the profile that holds the workspace of a VFS or RUN spec
 * (whose files a VFS tool must read only through the protocol, and a
 * RUN child only where the walk of its prefixes found what to hide):
 * the system's, and for VFS its `read` paths, into `over`; false when
 * none does. The workspace is a real path (its callers' own: the
 * registry's root, a directory's fd read back); the system's grants are
 * compared as they are written — where one is a symbolic link
 * (/lib -> usr/lib), it leads beneath /usr, which is compared too — so
 * that a spawn costs no system call here but for the `read` paths. */
static bool grant_over_workspace(const jpt__sandbox_spec *spec, char over[PATH_MAX])
{
    const grant *const lists[] = {system_grants, system_more_grants};
    const size_t sizes[] = {sizeof(system_grants) / sizeof(system_grants[0]),
                            sizeof(system_more_grants) / sizeof(system_more_grants[0])};
    const char *ws = spec->workspace;

    if (spec->profile == JPT__SANDBOX_STDIO || ws == NULL || ws[0] != '/')
        return false;
    for (size_t l = 0; l < (spec->profile == JPT__SANDBOX_RUN ? 2u : 1u); l++)
        for (size_t i = 0; i < sizes[l]; i++)
            if (path_under(ws, lists[l][i].path)) {
                snprintf(over, PATH_MAX, "%s", lists[l][i].path);
                return true;
            }
    if (spec->profile == JPT__SANDBOX_RUN) {
        snprintf(over, PATH_MAX, "/etc");
        return path_under(ws, over);
    }
    for (size_t i = 0; spec->read != NULL && spec->read[i] != NULL; i++)
        if (realpath(spec->read[i], over) != NULL && path_under(ws, over))
            return true;
    return false;
}

/* The real path of a read-only workspace of a STDIO spec that lies
 * beneath one of its writable paths (/tmp, os_sandbox.write), into
 * `real`: Landlock cannot take back what it grants above, so only a
 * mount keeps it read-only. False for any other spec. */
static bool workspace_under_writable(const jpt__sandbox_spec *spec, char real[PATH_MAX])
{
    char dir[PATH_MAX];

    if (spec->profile != JPT__SANDBOX_STDIO || spec->workspace_writable ||
        spec->workspace == NULL || realpath(spec->workspace, real) == NULL)
        return false;
    if (realpath("/tmp", dir) != NULL && path_under(real, dir))
        return true;
    for (size_t i = 0; spec->write != NULL && spec->write[i] != NULL; i++)
        if (realpath(spec->write[i], dir) != NULL && path_under(real, dir))
            return true;
    return false;
}

/* The child's mounts (sandbox.h, profiles STDIO and RUN). */
static int plan_mounts(jpt__sandbox *sb, const jpt__sandbox_spec *spec, const jpt__pathv *etc,
                       jpt__errbuf *err)
{
    int rc = JPT_OK;

    /* A stdio tool's /tmp is its own (plan_tmp), the host's read-only. */
    if (spec->profile == JPT__SANDBOX_STDIO && spec->workspace_writable) {
        const char *const own[] = {spec->workspace, NULL};
        rc = plan_writable(sb, own);
    }
    if (rc == JPT_OK)
        rc = plan_writable(sb, spec->write);
    /* A read-only workspace in /tmp (a checkout there): mounted read-only
     * again, after /tmp is made writable. */
    char real[PATH_MAX];
    static const uint64_t unchecked[2] = {0, 0};
    if (rc == JPT_OK && workspace_under_writable(spec, real) &&
        (rc = jpt__pathv_add(&sb->read_only, real, true)) == JPT_OK)
        rc = jpt__buf_append(&sb->read_only_ids, unchecked, sizeof(unchecked));
    for (size_t i = 0; rc == JPT_OK && spec->read_only != NULL && spec->read_only[i] != NULL;
         i++)
        if ((rc = jpt__pathv_add(&sb->read_only, spec->read_only[i], true)) == JPT_OK)
            rc = jpt__buf_append(&sb->read_only_ids,
                                 spec->read_only_ids != NULL ? spec->read_only_ids + 2 * i
                                                             : unchecked,
                                 sizeof(unchecked));
    for (size_t i = 0; rc == JPT_OK && spec->hide != NULL && spec->hide[i] != NULL; i++)
        if ((rc = jpt__pathv_add(&sb->hide, spec->hide[i],
                                 spec->hide_dir != NULL && spec->hide_dir[i])) == JPT_OK)
            rc = jpt__buf_append(&sb->hide_ids,
                                 spec->hide_ids != NULL ? spec->hide_ids + 2 * i : unchecked,
                                 sizeof(unchecked));
    for (size_t i = 0; rc == JPT_OK && spec->pin != NULL && spec->pin[i] != NULL; i++)
        if ((rc = jpt__pathv_add(&sb->pin, spec->pin[i], true)) == JPT_OK)
            rc = jpt__buf_append(&sb->pin_ids,
                                 spec->pin_ids != NULL ? spec->pin_ids + 2 * i : unchecked,
                                 sizeof(unchecked));
    for (size_t i = 0; rc == JPT_OK && i < etc->n; i++)
        if ((rc = jpt__pathv_add(&sb->hide, etc->v[i], etc->flag[i])) == JPT_OK)
            rc = jpt__buf_append(&sb->hide_ids, unchecked, sizeof(unchecked));
    if (rc < 0)
        return jpt__err(err, rc, "out of memory planning the sandbox");
    if ((rc = plan_tmp(sb, spec, err)) < 0)
        return rc;
    sb->ns.writable = jpt__pathv_list(&sb->writable);
    sb->ns.read_only = jpt__pathv_list(&sb->read_only);
    sb->ns.hide = jpt__pathv_list(&sb->hide);
    sb->ns.hide_dir = sb->hide.flag;
    sb->ns.pin = jpt__pathv_list(&sb->pin);
    sb->ns.pin_ids = (const uint64_t *)sb->pin_ids.data;
    sb->ns.read_only_ids = (const uint64_t *)sb->read_only_ids.data;
    sb->ns.hide_ids = (const uint64_t *)sb->hide_ids.data;
    sb->ns.tmp_keep = jpt__pathv_list(&sb->tmp_keep);
    sb->ns.tmp_remake = sb->tmp_remake.n > 0 ? sb->tmp_remake.v[0] : NULL;
    sb->ns.tmp_dir = sb->tmp_dir[0] != '\0' ? sb->tmp_dir : NULL;
    /* A stdio tool's kept ruleset (shared) grants its /tmp directory
     * already; one without (no cache) gains a rule for its tmpfs in the
     * child, as a RUN child's. */
    sb->ns.ruleset = sb->tmp_dir[0] == '\0' ? sb->ruleset : -1;
    return JPT_OK;
}

/* ---- Views kept ------------------------------------------------------------------- */

/* What a stdio tool's view depends on: its writable paths (their files
 * are checked apart), the secrets of /etc found, and the user namespace. */
static int view_key(const jpt__sandbox *sb, unsigned etc_generation, jpt__buf *key,
                    jpt__buf *ids)
{
    int rc = jpt__buf_printf(key, "%u %d t%s", etc_generation, sb->ns.user, sb->tmp_dir);

    /* A read-only workspace below a writable path, and the workspace's
     * repositories, by path and identity, are part of the view. */
    for (size_t i = 0; rc == JPT_OK && i < sb->read_only.n; i++)
        rc = jpt__buf_printf(key, " r%s", sb->read_only.v[i]);
    /* What the private /tmp holds again (the program's directory among
     * them: a view kept for jpt_registry_tool_sandbox, which names no
     * program, hid a program below /tmp from the spawns after it), the
     * workspace made anew there, and the paths covered. */
    for (size_t i = 0; rc == JPT_OK && i < sb->tmp_keep.n; i++)
        rc = jpt__buf_printf(key, " k%s", sb->tmp_keep.v[i]);
    for (size_t i = 0; rc == JPT_OK && i < sb->tmp_remake.n; i++)
        rc = jpt__buf_printf(key, " m%s", sb->tmp_remake.v[i]);
    for (size_t i = 0; rc == JPT_OK && i < sb->hide.n; i++)
        rc = jpt__buf_printf(key, " h%d%s", sb->hide.flag[i] ? 1 : 0, sb->hide.v[i]);
    if (rc == JPT_OK && sb->read_only_ids.len > 0)
        rc = jpt__buf_append(key, sb->read_only_ids.data, sb->read_only_ids.len);
    for (size_t i = 0; rc == JPT_OK && i < sb->writable.n; i++) {
        struct stat st;
        uint64_t id[2] = {0, 0};
        if (stat(sb->writable.v[i], &st) == 0) {
            id[0] = (uint64_t)st.st_dev;
            id[1] = (uint64_t)st.st_ino;
        }
        if ((rc = jpt__buf_append(key, sb->writable.v[i], strlen(sb->writable.v[i]) + 1)) ==
            JPT_OK)
            rc = jpt__buf_append(ids, id, sizeof(id));
    }
    return rc;
}

/* A stdio tool's child enters a view kept in the cache for the same
 * plan, or one made now and kept; where none can be made it makes its
 * own (the plan as it is). */
static void use_kept_view(jpt__sandbox *sb, jpt__sandbox_cache *c, unsigned etc_generation)
{
    jpt__buf key = JPT__BUF_INIT, ids = JPT__BUF_INIT;
    kept_view *slot = NULL;
    char why[256];

    if (view_key(sb, etc_generation, &key, &ids) < 0)
        goto out;
    for (size_t i = 0; i < KEPT_RULESETS; i++) {
        kept_view *v = &c->views[i];
        if (v->mnt >= 0 && same(&v->key, &key)) {
            slot = v;
            break;
        }
        if (slot == NULL || v->mnt < 0 || (slot->mnt >= 0 && v->used < slot->used))
            slot = v;
    }
    if (slot->mnt < 0 || !same(&slot->key, &key) || !same(&slot->ids, &ids)) {
        /* The helper that makes it is not the tool: no PID namespace. */
        jpt__ns_plan view = sb->ns;
        view.pid = false;
        view.pid_max[0] = '\0';
        drop_view(slot);
        if (jpt__ns_keep(&view, &slot->mnt, &slot->user, why, sizeof(why)) != JPT_OK) {
            jpt__log(JPT_LOG_DEBUG, "sandbox: a stdio tool's view cannot be kept (%s): each "
                                    "child makes its own",
                     why);
            goto out;
        }
        slot->key = key;
        slot->ids = ids;
        key = ids = (jpt__buf)JPT__BUF_INIT;
    }
    slot->used = ++c->tick;
    sb->ns.enter_mnt = fcntl(slot->mnt, F_DUPFD_CLOEXEC, 3);
    sb->ns.enter_user = slot->user >= 0 ? fcntl(slot->user, F_DUPFD_CLOEXEC, 3) : -1;
    if (sb->ns.enter_mnt < 0 || (slot->user >= 0 && sb->ns.enter_user < 0)) {
        if (sb->ns.enter_mnt >= 0)
            close(sb->ns.enter_mnt);
        if (sb->ns.enter_user >= 0)
            close(sb->ns.enter_user);
        sb->ns.enter_mnt = sb->ns.enter_user = -1;
    }
out:
    jpt__buf_free(&key);
    jpt__buf_free(&ids);
}

/* ---- The report ---------------------------------------------------------------------- */

/* What is enforced, and what this system lacks. */
static void describe(jpt__sandbox_report *rep, int profile, bool pid, unsigned bound,
                     const char *ll_why,
                     const char *sc_why, const char *ns_why)
{
    char pid_text[96];
    snprintf(pid_text, sizeof(pid_text),
             "a PID namespace (its processes end with it; at most %u at once)", bound);
    const struct {
        unsigned bit;
        const char *name;
        const char *needs;
        bool vfs, stdio, run; /* applies to */
    } parts[] = {
        {JPT_SANDBOX_ENFORCED_FILES, "files", "Landlock", 1, 1, 1},
        {JPT_SANDBOX_ENFORCED_TRUNCATE, "truncation", "Landlock ABI 3, or seccomp", 1, 1, 1},
        {JPT_SANDBOX_ENFORCED_TCP, "TCP bind and connect", "Landlock ABI 4", 1, 1, 1},
        {JPT_SANDBOX_ENFORCED_DEVICE_IOCTL, "device ioctls", "Landlock ABI 5", 1, 1, 1},
        {JPT_SANDBOX_ENFORCED_SCOPES, "signal and abstract-socket scopes", "Landlock ABI 6", 1,
         1, 1},
        {JPT_SANDBOX_ENFORCED_SECCOMP,
         profile == JPT__SANDBOX_VFS
             ? "seccomp (no sockets, no connect, no ptrace, io_uring, user namespaces, "
               "TIOCSTI, keyrings, bpf, perf, mounts, kernel log, clock, host names, reboot, "
               "kexec, modules, fanotify, file handles, inotify, xattrs; limits and "
               "scheduling of its own process only)"
             : "seccomp (AF_UNIX streams only, no connect, no sendto an address, no ptrace, "
               "io_uring, user namespaces, TIOCSTI, keyrings, bpf, perf, mounts, kernel log, "
               "clock, host names, reboot, kexec, modules, fanotify, inotify, file handles; "
               "limits and scheduling of its own process only)",
         "seccomp filters", 1, 1, 1},
        {JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS, "no_new_privs", "prctl", 1, 1, 1},
        {JPT_SANDBOX_ENFORCED_CAPABILITIES, "no capabilities", "prctl and capset", 1, 1, 1},
        {JPT_SANDBOX_ENFORCED_METADATA, "no metadata changes outside its writable areas",
         "a mount namespace or seccomp", 1, 1, 1},
        {JPT_SANDBOX_ENFORCED_MOUNTS,
         profile == JPT__SANDBOX_RUN
             ? "a mount namespace (read-only but where fs.write may write, .git read-only, "
               "sensitive paths and the secrets of /etc covered, a private /tmp)"
             : "a mount namespace (read-only but the workspace and a /tmp of its own, its "
               "repositories read-only, the secrets of /etc covered)",
         "a mount namespace", 0, 1, 1},
        {JPT_SANDBOX_ENFORCED_PROCESSES,
         bound > 0 ? pid_text : "a PID namespace (its processes end with it)",
         "a PID namespace", pid, pid, pid},
    };
    size_t n = 0, cap = sizeof(rep->text);
    bool first = true;

#define PUT(...)                                                                        \
    do {                                                                                \
        int w_ = snprintf(rep->text + n, cap - n, __VA_ARGS__);                         \
        n = w_ < 0 ? n : (size_t)w_ >= cap - n ? cap - 1 : n + (size_t)w_;             \
    } while (0)
#define APPLIES(i)                                                                      \
    (profile == JPT__SANDBOX_VFS ? parts[i].vfs                                         \
     : profile == JPT__SANDBOX_STDIO ? parts[i].stdio                                   \
                                     : parts[i].run)

    PUT("%s profile", profile == JPT__SANDBOX_VFS     ? "vfs"
                      : profile == JPT__SANDBOX_STDIO ? "stdio"
                                                      : "process.run");
    if (rep->landlock_abi > 0)
        PUT(", Landlock ABI %d", rep->landlock_abi);
    PUT(": enforced ");
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if ((rep->enforced & parts[i].bit) && APPLIES(i)) {
            PUT("%s%s", first ? "" : ", ", parts[i].name);
            first = false;
        }
    if (first)
        PUT("nothing");
    first = true;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (!(rep->enforced & parts[i].bit) && APPLIES(i)) {
            PUT("%s%s (needs %s)", first ? "; missing: " : ", ", parts[i].name,
                parts[i].needs);
            first = false;
        }
    if (ll_why != NULL)
        PUT("; Landlock: %s", ll_why);
    if (sc_why != NULL)
        PUT("; seccomp: %s", sc_why);
    if (ns_why != NULL)
        PUT("; namespaces: %s", ns_why);
#undef APPLIES
#undef PUT
}

static unsigned enforced_bits(int abi, bool seccomp, bool ns, unsigned denies)
{
    unsigned e = JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS | JPT_SANDBOX_ENFORCED_CAPABILITIES;

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
    if (ns || (seccomp && (denies & JPT__SECCOMP_METADATA)))
        e |= JPT_SANDBOX_ENFORCED_METADATA;
    if (ns)
        e |= JPT_SANDBOX_ENFORCED_MOUNTS;
    return e;
}

/* ---- prepare --------------------------------------------------------------------------- */

/* The bound on a PID namespace's processes (spec.process_limit). */
static unsigned process_limit(const jpt__sandbox_spec *spec)
{
    return spec->process_limit != 0 ? spec->process_limit : JPT__SANDBOX_PROCESS_LIMIT;
}

/* The namespaces of `spec` this host can make, into `plan`: a mount
 * namespace for STDIO and RUN (`*mounts`), and a PID namespace where the
 * spec wants one (returned), with its pid_max where the kernel keeps one
 * per namespace. `why` says what could not be made, `unbounded` why the
 * processes are not bounded (both "" when there is nothing to say). A
 * STDIO spec keeps its mount namespace where a PID namespace cannot be
 * made too; a RUN spec has both or neither. */
static bool plan_namespaces(const jpt__sandbox_spec *spec, jpt__ns_plan *plan, bool *mounts,
                            char *why, size_t n, char *unbounded, size_t m)
{
    bool ok = false;

    plan->mounts = spec->profile != JPT__SANDBOX_VFS;
    plan->pid = spec->pid_namespace;
    plan->user = !may_mount();
    snprintf(plan->uid_map, sizeof(plan->uid_map), "%u %u 1", (unsigned)geteuid(),
             (unsigned)geteuid());
    snprintf(plan->gid_map, sizeof(plan->gid_map), "%u %u 1", (unsigned)getegid(),
             (unsigned)getegid());
    /* pid 1, and pids 300 to pid_max - 1 once its last pid is 300 (the
     * kernel hands out none below 300 once it has gone past: ns.c). */
    if (plan->pid && jpt__ns_pid_max_here())
        snprintf(plan->pid_max, sizeof(plan->pid_max), "%u", process_limit(spec) + 299u);
    else if (plan->pid)
        snprintf(unbounded, m, "this kernel keeps no pid_max per PID namespace (Linux 6.14)");
    if (plan->mounts || plan->pid)
        ok = namespaces_here(spec, plan, why, n);
    /* /proc/sys read-only (a container's): a PID namespace unbounded. */
    if (!ok && plan->pid_max[0] != '\0') {
        snprintf(unbounded, m, "%s", why);
        plan->pid_max[0] = '\0';
        ok = namespaces_here(spec, plan, why, n);
    }
    if (!ok && plan->pid && spec->profile == JPT__SANDBOX_STDIO) {
        char pid_why[256];
        snprintf(pid_why, sizeof(pid_why), "%s", why);
        plan->pid = false;
        unbounded[0] = '\0';
        if ((ok = namespaces_here(spec, plan, why, n)))
            snprintf(why, n, "%s", pid_why);
        *mounts = ok;
        return false;
    }
    *mounts = ok && plan->mounts;
    return ok && plan->pid;
}

static int refuse_required(int abi, bool seccomp, const char *ll_why, const char *sc_why,
                           jpt__errbuf *err)
{
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

/* Everything but the checks and the kernel's answers, which `prepare`
 * gathered. */
static int build(jpt__sandbox *sb, const jpt__sandbox_spec *spec, int abi, bool seccomp,
                 bool ns, jpt__errbuf *err)
{
    bool vfs = spec->profile == JPT__SANDBOX_VFS;
    jpt__etc local = {0}, *etc = spec->cache != NULL ? &spec->cache->etc : &local;
    unsigned denies = (abi < 3 ? JPT__SECCOMP_TRUNCATE : 0) |
                      (vfs ? JPT__SECCOMP_NO_SOCKETS | JPT__SECCOMP_METADATA |
                                 JPT__SECCOMP_PATH_PROBES
                           : ns ? 0
                                : JPT__SECCOMP_METADATA);
    int rc = vfs ? JPT_OK : jpt__etc_secrets(etc, err);

    if (spec->workspace != NULL && realpath(spec->workspace, sb->workspace_real) == NULL)
        sb->workspace_real[0] = '\0';
    if (rc == JPT_OK)
        rc = find_repos(sb, spec, err);
    if (rc == JPT_OK && sb->read_only.n > 0 && !ns && spec->mode == JPT_SANDBOX_REQUIRED)
        rc = jpt__err(err, JPT_ERR_SANDBOX,
                      "the OS sandbox is required, but the workspace %.200s holds a "
                      "repository (%.200s), which the tool may not write (its configuration "
                      "names programs the user's git runs), and without a mount namespace of "
                      "its own nothing keeps it read-only (\"sandbox\": {\"filesystem\": "
                      "{\"git\": \"writable\"}} lets the tool write it; the sandbox mode "
                      "\"best-effort\" runs it so)",
                      sb->workspace_real, sb->read_only.v[0]);
    if (rc == JPT_OK && sb->repos_partial && spec->mode == JPT_SANDBOX_REQUIRED)
        rc = jpt__err(err, JPT_ERR_SANDBOX,
                      "the OS sandbox is required, but not every repository of the workspace "
                      "%.200s can be found (%.320s), which the tool may not write (\"sandbox\": "
                      "{\"filesystem\": {\"git\": \"writable\"}} lets the tool write them; the "
                      "sandbox mode \"best-effort\" runs it so)",
                      sb->workspace_real, sb->repos_why);

    /* Its own /tmp (the host's shared is read and written by every
     * process of the host's uid: S1), known before its ruleset grants it. */
    if (rc == JPT_OK && ns && spec->profile == JPT__SANDBOX_STDIO && spec->cache != NULL)
        rc = tool_tmp_dir(spec->cache, spec->tool != NULL ? spec->tool : "", sb->tmp_dir, err);
    /* Without a mount namespace to cover them, a root host's ruleset
     * leaves the secrets of /etc out; another host cannot read them. */
    if (rc == JPT_OK && abi >= 1)
        rc = ruleset_for(sb, spec, abi, etc, !vfs && !ns && geteuid() == 0, err);
    if (rc == JPT_OK && abi >= 1) {
        jpt__landlock_handled h;
        jpt__landlock_handled_for(abi, &h);
        sb->ns.tmp_access = RW & h.fs;
    }
    if (rc == JPT_OK && ns)
        rc = plan_mounts(sb, spec, &etc->found, err);
    /* A kept view is entered from the host's user namespace, where a
     * host that is not root cannot make a PID namespace: it then makes
     * its own view, in a user namespace of its own. */
    if (rc == JPT_OK && ns && spec->profile == JPT__SANDBOX_STDIO && spec->cache != NULL &&
        !(sb->ns.pid && sb->ns.user))
        use_kept_view(sb, spec->cache, etc->generation);
    if (rc == JPT_OK && seccomp)
        rc = filter(sb, spec, denies, err);
    jpt__etc_free(&local);
    if (rc < 0)
        return rc;
    sb->own_filter = seccomp;
    sb->report.enforced = enforced_bits(abi, seccomp, ns, denies);
    return JPT_OK;
}

int jpt__sandbox_prepare(const jpt__sandbox_spec *spec, jpt__sandbox **out, jpt__errbuf *err)
{
    const char *ll_why = NULL, *sc_why = NULL;
    char ns_why[256] = "";
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
     * TCP), a seccomp filter, no_new_privs; for a process.run child, its
     * namespaces too. */
    if (spec->mode == JPT_SANDBOX_REQUIRED && (abi < 1 || !seccomp))
        return refuse_required(abi, seccomp, ll_why, sc_why, err);
    jpt__ns_plan plan = {.ruleset = -1, .enter_mnt = -1, .enter_user = -1};
    char unbounded[256] = "";
    bool ns = false, pidns = plan_namespaces(spec, &plan, &ns, ns_why, sizeof(ns_why), unbounded,
                                             sizeof(unbounded));
    char real[PATH_MAX], over[PATH_MAX];
    bool exposed = grant_over_workspace(spec, over);
    if (spec->mode == JPT_SANDBOX_REQUIRED && exposed)
        return jpt__err(err, JPT_ERR_SANDBOX,
                        "the OS sandbox is required, but the workspace %.200s lies beneath "
                        "%.200s, which the %s may read: it would read the workspace's files "
                        "(.env among them) directly, past the access policy (move the "
                        "workspace, or name a narrower path; the sandbox mode \"best-effort\" "
                        "runs it so)",
                        spec->workspace, over,
                        spec->profile == JPT__SANDBOX_VFS ? "tool" : "process.run child");
    if (spec->mode == JPT_SANDBOX_REQUIRED && !ns && workspace_under_writable(spec, real))
        return jpt__err(err, JPT_ERR_SANDBOX,
                        "the OS sandbox is required, but the read-only workspace %.200s lies "
                        "beneath a path the tool may write (/tmp, or os_sandbox.write), and "
                        "without a mount namespace of its own (%s) nothing keeps it "
                        "read-only (the sandbox mode \"best-effort\" runs it so)",
                        real, ns_why);
    if (spec->mode == JPT_SANDBOX_REQUIRED && spec->profile == JPT__SANDBOX_RUN && !ns)
        return jpt__err(err, JPT_ERR_SANDBOX,
                        "the OS sandbox of process.run is required, but this host cannot "
                        "give the process a mount namespace%s of its own (to cover sensitive "
                        "paths and keep the rest read-only%s): %s (the sandbox mode "
                        "\"best-effort\" runs it without)",
                        spec->pid_namespace ? " and a PID namespace" : "",
                        spec->pid_namespace ? ", and to end whatever it starts" : "", ns_why);

    jpt__sandbox *sb = jpt__calloc(1, sizeof(*sb));
    if (sb == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory preparing the sandbox");
    sb->ruleset = -1;
    sb->ns.enter_mnt = sb->ns.enter_user = -1;
    sb->report.landlock_abi = abi;
    if (ns || pidns)
        sb->ns = plan;
    if ((rc = build(sb, spec, abi, seccomp, ns, err)) < 0) {
        jpt__sandbox_free(sb);
        return rc;
    }
    if (pidns)
        sb->report.enforced |= JPT_SANDBOX_ENFORCED_PROCESSES;
    describe(&sb->report, spec->profile, spec->pid_namespace,
             pidns && plan.pid_max[0] != '\0' ? process_limit(spec) : 0,
             abi < 1 ? ll_why : NULL, seccomp ? NULL : sc_why,
             (spec->profile != JPT__SANDBOX_VFS && !ns) || (spec->pid_namespace && !pidns)
                 ? ns_why
                 : NULL);
    if (sb->repos_partial) {
        size_t n = strlen(sb->report.text);
        snprintf(sb->report.text + n, sizeof(sb->report.text) - n,
                 "; not all its repositories are kept read-only: %.320s", sb->repos_why);
    }
    if (pidns && unbounded[0] != '\0') {
        size_t n = strlen(sb->report.text);
        snprintf(sb->report.text + n, sizeof(sb->report.text) - n,
                 "; its processes are not bounded: %s", unbounded);
    }
    if (exposed) {
        size_t n = strlen(sb->report.text);
        snprintf(sb->report.text + n, sizeof(sb->report.text) - n,
                 "; the workspace is readable: it lies beneath %.200s", over);
    }
    *out = sb;
    return JPT_OK;
}

jpt__repos *jpt__sandbox_repos(const jpt__sandbox *sb)
{
    return sb->repos;
}

bool jpt__sandbox_remade(const jpt__sandbox *sb, const char *dir)
{
    return sb->ns.tmp_remake != NULL && strcmp(sb->ns.tmp_remake, dir) == 0;
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
    if (sb->ruleset >= 0)
        close(sb->ruleset);
    if (sb->ns.enter_mnt >= 0)
        close(sb->ns.enter_mnt);
    if (sb->ns.enter_user >= 0)
        close(sb->ns.enter_user);
    jpt__seccomp_prog_free(&sb->own);
    jpt__pathv_free(&sb->writable);
    jpt__pathv_free(&sb->read_only);
    jpt__pathv_free(&sb->hide);
    jpt__pathv_free(&sb->pin);
    jpt__pathv_free(&sb->tmp_keep);
    jpt__pathv_free(&sb->tmp_remake);
    jpt__buf_free(&sb->read_only_ids);
    jpt__buf_free(&sb->hide_ids);
    jpt__buf_free(&sb->pin_ids);
    jpt__repos_unref(sb->repos);
    jpt__free(sb);
}

/* ---- In the child ------------------------------------------------------------------ */

int jpt__sandbox_clone_flags(const jpt__sandbox *sb)
{
    return jpt__ns_clone_flags(&sb->ns);
}

int jpt__sandbox_enter_in_child(const jpt__sandbox *sb, const char **step, const char **path)
{
    return jpt__ns_enter_in_child(&sb->ns, step, path);
}

/* Locked: no later execve or setuid gives root's capabilities back, and
 * none can be raised as ambient. */
#define SECUREBITS                                                                          \
    (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |                        \
     SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | \
     SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

/* Every capability out of every set (issue 15 §4: a root host's tool had
 * them all). The securebits and the bounding set need CAP_SETPCAP: a
 * process without it has no capability to lose, and with no_new_privs
 * gains none at execve, so EPERM there is no failure. */
static int drop_capabilities(const char **step)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct none[2];

    if (prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0) != 0 && errno != EPERM) {
        *step = "prctl(PR_SET_SECUREBITS)";
        return errno;
    }
    /* Up to the kernel's CAP_LAST_CAP, where it answers EINVAL. */
    for (unsigned long cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
            if (errno == EINVAL)
                break;
            if (errno != EPERM) {
                *step = "prctl(PR_CAPBSET_DROP)";
                return errno;
            }
        }
    /* EINVAL: a kernel before 4.3, without ambient capabilities. */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
        *step = "prctl(PR_CAP_AMBIENT_CLEAR_ALL)";
        return errno;
    }
    memset(none, 0, sizeof(none));
    if (syscall(SYS_capset, &hdr, none) != 0) {
        *step = "capset";
        return errno;
    }
    return 0;
}

static int load_filter(unsigned short len, void *filter, const char **step)
{
    struct sock_fprog prog = {.len = len, .filter = filter};

    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        *step = "seccomp(SECCOMP_SET_MODE_FILTER)";
        return errno;
    }
    return 0;
}

/* The filter as the child loads it: its own head, then the main one. */
#define CHILD_FILTER_MAX (JPT__SECCOMP_OWN_MAX + 512)

int jpt__sandbox_apply_in_child(const jpt__sandbox *sb, const char **step)
{
    struct sock_filter filter[CHILD_FILTER_MAX];
    int e;

    if ((e = drop_capabilities(step)) != 0)
        return e;
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
    if (sb->prog == NULL)
        return 0;
    /* The process's own id is known only now (1 in a PID namespace). A
     * main filter too long to copy is loaded after the head, as a second
     * filter. */
    unsigned short n = sb->own_filter ? jpt__seccomp_own_filter(filter, (int)getpid()) : 0;
    if (n + sb->prog->len <= CHILD_FILTER_MAX) {
        memcpy(filter + n, sb->prog->filter, sb->prog->len * sizeof(filter[0]));
        return load_filter((unsigned short)(n + sb->prog->len), filter, step);
    }
    if ((e = load_filter(sb->prog->len, sb->prog->filter, step)) != 0 || n == 0)
        return e;
    filter[n] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    return load_filter((unsigned short)(n + 1), filter, step);
}
