/* The OS sandbox of a process.run child, derived from the policy of the
 * tool that asked (run.h, "The child's sandbox"; issue 15 §3): Landlock
 * grants for what fs.read and fs.write would allow wholesale (the
 * prefixes of filesystem.allow and .writable), and for what they never
 * allow beneath those (filesystem.deny, the sensitive paths), a walk of
 * the readable prefixes that finds it, for the child to cover in its
 * mount namespace; .git entries beneath a writable prefix stay read-only.
 *
 * The walk is iterative (the depth of the tree is the tool's to choose),
 * never follows a symbolic link, resolves every directory beneath the
 * root's fd (RESOLVE_BENEATH), and is bounded: JPT_VFS_RUN_SCAN_MAX
 * entries, JPT_VFS_RUN_COVER_MAX paths covered. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "policy/policy.h"
#include "vfs/run.h"

typedef struct strv {
    char **v;
    bool *flag;
    size_t n, cap;
} strv;

static int strv_add(strv *l, char *owned, bool flag)
{
    char **grown = jpt__array_reserve(l->v, &l->cap, l->n + 2, sizeof(*grown), 8);
    bool *flags;

    if (grown == NULL) {
        jpt__free(owned);
        return JPT_ERR_NOMEM;
    }
    l->v = grown;
    if ((flags = jpt__realloc(l->flag, l->cap * sizeof(*flags))) == NULL) {
        jpt__free(owned);
        return JPT_ERR_NOMEM;
    }
    l->flag = flags;
    l->flag[l->n] = flag;
    l->v[l->n++] = owned;
    l->v[l->n] = NULL;
    return JPT_OK;
}

static void strv_free(strv *l)
{
    for (size_t i = 0; i < l->n; i++)
        jpt__free(l->v[i]);
    jpt__free(l->v);
    jpt__free(l->flag);
    memset(l, 0, sizeof(*l));
}

struct jpt__vfs_confine {
    jpt__sandbox_spec spec;
    char root[JPT__SANDBOX_PATH_MAX]; /* the workspace's real path */
    strv read, write, read_only, hide;
    size_t scanned;
    bool git;                         /* the child is git */
};

typedef struct walk {
    const jpt_policy *p;
    int root_fd;
    jpt__vfs_confine *c;
    strv todo;           /* directories to list, relative to the root */
    size_t next;
    jpt__buf rel;
    jpt__errbuf *err;
} walk;

/* `rel` (relative to the root, "." for it) opened beneath the root
 * without following a symbolic link. */
static int open_beneath(int root_fd, const char *rel, int flags)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };

    return (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
}

/* "<root>/<rel>" (the root for "."), owned. */
static char *absolute(const jpt__vfs_confine *c, const char *rel)
{
    jpt__buf b = JPT__BUF_INIT;

    if ((strcmp(rel, ".") == 0 ? jpt__buf_puts(&b, c->root)
                               : jpt__buf_printf(&b, "%s%s%s", c->root,
                                                 strcmp(c->root, "/") == 0 ? "" : "/", rel)) <
        0) {
        jpt__buf_free(&b);
        return NULL;
    }
    return jpt__buf_take(&b);
}

/* Whether the policy never lets the tool read `rel`: denied, or
 * sensitive (asked or denied: a child cannot ask). */
static bool never_read(const jpt_policy *p, const char *rel)
{
    size_t i;
    bool inside;

    return jpt__prefixes_find(&p->deny_folded, rel, true, &i) != NULL ||
           jpt__pattern_find(p, rel, false, &inside) != NULL;
}

/* Whether `rel` is beneath a writable prefix, and no writable prefix is
 * beneath it (a rule that names a path inside .git grants it). */
static bool in_writable_only(const jpt__vfs_confine *c, const char *abs)
{
    bool under = false;
    size_t n = strlen(abs);

    for (size_t i = 0; i < c->write.n; i++) {
        const char *w = c->write.v[i];
        size_t m = strlen(w);
        if (strncmp(abs, w, m) == 0 && (abs[m] == '/' || abs[m] == '\0'))
            under = true;
        if (strncmp(w, abs, n) == 0 && w[n] == '/')
            return false;
    }
    return under;
}

static bool is_git(const char *name)
{
    return strcasecmp(name, ".git") == 0;
}

/* Whether `rel` is a repository's own configuration, `<…>/.git/config`:
 * git cannot work without reading it, so a git child is not denied it
 * (the sensitive list keeps it from fs.read and every other program;
 * what git prints of it is the commands rule's to allow). */
static bool is_git_config(const char *rel)
{
    const char *slash = strrchr(rel, '/');

    if (slash == NULL || strcmp(slash + 1, "config") != 0)
        return false;
    const char *start = slash;
    while (start > rel && start[-1] != '/')
        start--;
    return (size_t)(slash - start) == 4 && strncasecmp(start, ".git", 4) == 0;
}

static int bounded(walk *w)
{
    if (w->c->hide.n + w->c->read_only.n >= JPT_VFS_RUN_COVER_MAX)
        return jpt__err(w->err, JPT_ERR_LIMIT,
                        "the paths it may read hold more than %d sensitive, denied or .git "
                        "entries to cover: too many for the OS sandbox of a process",
                        JPT_VFS_RUN_COVER_MAX);
    return JPT_OK;
}

/* One entry of the directory `dir` (relative), of type `type` (DT_*). */
static int visit(walk *w, const char *dir, const char *name, unsigned char type)
{
    jpt__vfs_confine *c = w->c;
    int rc;

    /* "<dir>/<name>" (the name alone in the root), without printf: this
     * runs for every entry. */
    w->rel.len = 0;
    if (strcmp(dir, ".") != 0 && ((rc = jpt__buf_puts(&w->rel, dir)) < 0 ||
                                  (rc = jpt__buf_putc(&w->rel, '/')) < 0))
        return rc;
    if ((rc = jpt__buf_puts(&w->rel, name)) < 0)
        return rc;
    if (++c->scanned > JPT_VFS_RUN_SCAN_MAX)
        return jpt__err(w->err, JPT_ERR_LIMIT,
                        "the paths it may read hold more than %d entries: too many to find "
                        "their sensitive paths before each process",
                        JPT_VFS_RUN_SCAN_MAX);
    if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(w->root_fd, w->rel.data, &st, AT_SYMLINK_NOFOLLOW) != 0)
            return JPT_OK; /* gone meanwhile */
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
    }
    /* A symbolic link is neither followed nor covered: what it leads to
     * is judged by its own path. */
    if (type == DT_LNK)
        return JPT_OK;
    if (c->git && type != DT_DIR && is_git_config(w->rel.data)) {
        /* Read, never written: a git child cannot change what its own
         * overrides were read from. */
        char *abs = absolute(c, w->rel.data);
        if (abs == NULL)
            return JPT_ERR_NOMEM;
        if (!in_writable_only(c, abs)) {
            jpt__free(abs);
            return JPT_OK;
        }
        if ((rc = bounded(w)) < 0) {
            jpt__free(abs);
            return rc;
        }
        return strv_add(&c->read_only, abs, false);
    }
    if (never_read(w->p, w->rel.data)) {
        if ((rc = bounded(w)) < 0)
            return rc;
        char *abs = absolute(c, w->rel.data);
        return abs == NULL ? JPT_ERR_NOMEM : strv_add(&c->hide, abs, type == DT_DIR);
    }
    /* .git is written only where filesystem.git says "writable", as by
     * fs.write (issue 15 §2): a directory, or a file ("gitdir: <path>", a
     * submodule's or a worktree's) that would otherwise name a
     * repository of the child's making. */
    if (is_git(name) && !w->p->git_writable) {
        char *abs = absolute(c, w->rel.data);
        if (abs == NULL)
            return JPT_ERR_NOMEM;
        if (!in_writable_only(c, abs))
            jpt__free(abs);
        else if ((rc = bounded(w)) < 0) {
            jpt__free(abs);
            return rc;
        } else if ((rc = strv_add(&c->read_only, abs, type == DT_DIR)) < 0)
            return rc; /* strv_add freed it */
    }
    if (type != DT_DIR)
        return JPT_OK;
    char *copy = jpt__strdup(w->rel.data);
    return copy == NULL ? JPT_ERR_NOMEM : strv_add(&w->todo, copy, false);
}

/* Lists the directory `rel`; one that cannot be opened (gone, or no
 * longer a directory) is passed over: nothing of it can be read. */
static int list_dir(walk *w, const char *rel)
{
    int fd = open_beneath(w->root_fd, rel, O_RDONLY | O_DIRECTORY);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *e;
    int rc = JPT_OK;

    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return JPT_OK;
    }
    while (rc == JPT_OK && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rc = visit(w, rel, e->d_name, e->d_type);
    closedir(d);
    return rc;
}

/* The prefix `rel` of the policy as the path it leads to beneath the root
 * (its real path), relative to the root: NULL when it does not exist,
 * leads out of the root, or is never readable itself. */
static int real_prefix(const walk *w, const char *rel, char **out)
{
    char link[64], real[JPT__SANDBOX_PATH_MAX];
    const char *root = w->c->root;
    size_t n = strcmp(root, "/") == 0 ? 0 : strlen(root);
    int fd = open_beneath(w->root_fd, rel, O_PATH);

    *out = NULL;
    if (fd < 0)
        return JPT_OK;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, real, sizeof(real) - 1);
    close(fd);
    if (len <= 0 || (size_t)len >= sizeof(real) - 1)
        return JPT_OK;
    real[len] = '\0';
    if (strncmp(real, root, n) != 0 || (real[n] != '/' && real[n] != '\0'))
        return JPT_OK;
    const char *r = real[n] == '\0' || real[n + 1] == '\0' ? "." : real + n + 1;
    if (strcmp(r, ".") != 0 && never_read(w->p, r))
        return JPT_OK;
    return (*out = jpt__strdup(r)) == NULL ? JPT_ERR_NOMEM : JPT_OK;
}

/* Whether `rel` is `root` or beneath it (relative paths, "." the root). */
static bool beneath(const char *rel, const char *root)
{
    size_t m = strlen(root);

    return strcmp(root, ".") == 0 ||
           (strncmp(rel, root, m) == 0 && (rel[m] == '/' || rel[m] == '\0'));
}

/* The policy's prefixes (`lists`, `n` of them) as roots beneath the real
 * root, each once: relative in `rel_roots`, absolute in `abs_roots`; a
 * root beneath another is left out. */
static int add_roots(walk *w, const jpt__policy_prefixes *const *lists, size_t n,
                     strv *rel_roots, strv *abs_roots)
{
    strv found = {0};
    int rc = JPT_OK;

    for (size_t l = 0; rc == JPT_OK && l < n; l++)
        for (size_t i = 0; rc == JPT_OK && i < lists[l]->n; i++) {
            char *rel = NULL;
            if ((rc = real_prefix(w, lists[l]->paths[i], &rel)) == JPT_OK && rel != NULL)
                rc = strv_add(&found, rel, false);
        }
    for (size_t i = 0; rc == JPT_OK && i < found.n; i++) {
        bool inner = false;
        for (size_t j = 0; j < found.n && !inner; j++)
            inner = j != i && beneath(found.v[i], found.v[j]) &&
                    (!beneath(found.v[j], found.v[i]) || j < i);
        if (inner)
            continue;
        char *abs = absolute(w->c, found.v[i]), *rel = jpt__strdup(found.v[i]);
        if (abs == NULL || rel == NULL) {
            jpt__free(abs);
            jpt__free(rel);
            rc = JPT_ERR_NOMEM;
        } else if ((rc = strv_add(rel_roots, rel, false)) < 0)
            jpt__free(abs);
        else
            rc = strv_add(abs_roots, abs, false);
    }
    strv_free(&found);
    return rc;
}

static int confine_walk(walk *w)
{
    const jpt_policy *p = w->p;
    strv read_rel = {0}, write_rel = {0};
    int rc = JPT_OK;

    /* A refused configuration grants nothing. Writable first: .git is
     * judged against them during the walk. */
    if (!p->refused) {
        const jpt__policy_prefixes *writes[] = {p->writable_all ? &p->allow : &p->writable};
        const jpt__policy_prefixes *reads[] = {&p->allow, &p->writable};
        rc = add_roots(w, writes, 1, &write_rel, &w->c->write);
        if (rc == JPT_OK)
            rc = add_roots(w, reads, 2, &read_rel, &w->c->read);
    }
    /* Each readable root is listed once: one beneath another was
     * dropped. */
    for (size_t i = 0; rc == JPT_OK && i < read_rel.n; i++) {
        char *copy = jpt__strdup(read_rel.v[i]);
        rc = copy == NULL ? JPT_ERR_NOMEM : strv_add(&w->todo, copy, false);
    }
    while (rc == JPT_OK && w->next < w->todo.n) {
        const char *rel = w->todo.v[w->next++];
        rc = list_dir(w, rel);
    }
    strv_free(&read_rel);
    strv_free(&write_rel);
    return rc;
}

int jpt__vfs_confine_new(const jpt_policy *p, int root_fd, int mode, bool git,
                         unsigned process_limit, jpt__sandbox_cache *cache,
                         jpt__vfs_confine **out, jpt__errbuf *err)
{
    char link[64];
    int rc;

    *out = NULL;
    jpt__vfs_confine *c = jpt__calloc(1, sizeof(*c));
    if (c == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory");
    snprintf(link, sizeof(link), "/proc/self/fd/%d", root_fd);
    ssize_t len = readlink(link, c->root, sizeof(c->root) - 1);
    if (len <= 0 || (size_t)len >= sizeof(c->root) - 1 || c->root[0] != '/') {
        jpt__free(c);
        return jpt__err(err, JPT_ERR_IO, "the workspace's path cannot be told (%s): %s", link,
                        len < 0 ? strerror(errno) : "not a path");
    }
    c->root[len] = '\0';
    c->git = git;
    walk w = {p, root_fd, c, {0}, 0, JPT__BUF_INIT, err};
    rc = confine_walk(&w);
    strv_free(&w.todo);
    jpt__buf_free(&w.rel);
    if (rc < 0) {
        if (rc == JPT_ERR_NOMEM)
            jpt__err(err, rc, "out of memory finding what the process may not read");
        jpt__vfs_confine_free(c);
        return rc;
    }
    c->spec = (jpt__sandbox_spec){
        .profile = JPT__SANDBOX_RUN,
        .mode = mode,
        .workspace = c->root,
        .read = (const char *const *)c->read.v,
        .write = (const char *const *)c->write.v,
        .read_only = (const char *const *)c->read_only.v,
        .hide = (const char *const *)c->hide.v,
        .hide_dir = c->hide.flag,
        .process_limit = process_limit,
        .cache = cache,
    };
    *out = c;
    return JPT_OK;
}

const jpt__sandbox_spec *jpt__vfs_confine_spec(const jpt__vfs_confine *c)
{
    return &c->spec;
}

size_t jpt__vfs_confine_scanned(const jpt__vfs_confine *c)
{
    return c->scanned;
}

void jpt__vfs_confine_free(jpt__vfs_confine *c)
{
    if (c == NULL)
        return;
    strv_free(&c->read);
    strv_free(&c->write);
    strv_free(&c->read_only);
    strv_free(&c->hide);
    jpt__free(c);
}
