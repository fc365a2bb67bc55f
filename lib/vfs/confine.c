/* The OS sandbox of a process.run child, derived from the policy of the
 * tool that asked (run.h, "The child's sandbox"; issue 15 §3): Landlock
 * grants for what fs.read and fs.write would allow wholesale (the
 * prefixes of filesystem.allow and .writable), and for what they never
 * allow beneath those (filesystem.deny, the sensitive paths), a walk of
 * the readable prefixes that finds it, for the child to cover in its
 * mount namespace; repositories beneath a writable prefix (.git entries,
 * bare repositories) stay read-only. The walk also takes an inventory of
 * what of a repository lies beneath the writable prefixes, and after the
 * run a sweep removes what of one the run made there (run.h, "The
 * sweep").
 *
 * The walks are lib/sandbox's (walk.c): iterative, in steps of a time
 * budget (run.c runs them a slice at a time from the loop), never
 * following a symbolic link, resolving every directory beneath the root's
 * fd, and bounded: JPT_VFS_RUN_SCAN_MAX entries, JPT_VFS_RUN_COVER_MAX
 * paths covered. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy.h"
#include "vfs/run.h"

/* The identities of covered paths, beside their list. */
typedef struct idv {
    uint64_t *v; /* (device, inode) pairs */
    size_t n, cap;
} idv;

static int idv_add(idv *l, const struct stat *st)
{
    uint64_t *grown = jpt__array_reserve(l->v, &l->cap, 2 * (l->n + 1), sizeof(*grown), 16);

    if (grown == NULL)
        return JPT_ERR_NOMEM;
    l->v = grown;
    l->v[2 * l->n] = st != NULL ? (uint64_t)st->st_dev : 0;
    l->v[2 * l->n + 1] = st != NULL ? (uint64_t)st->st_ino : 0;
    l->n++;
    return JPT_OK;
}

static int by_id(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;

    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] != y[1] ? (x[1] < y[1] ? -1 : 1) : 0;
}

/* A set of identities: sorted, then looked up. */
static void idv_sort(idv *l)
{
    if (l->n > 1)
        qsort(l->v, l->n, 2 * sizeof(uint64_t), by_id);
}

static bool idv_has(const idv *l, const struct stat *st)
{
    uint64_t key[2] = {(uint64_t)st->st_dev, (uint64_t)st->st_ino};

    return l->n > 0 && bsearch(key, l->v, l->n, 2 * sizeof(uint64_t), by_id) != NULL;
}

struct jpt__vfs_confine {
    jpt__sandbox_spec spec;
    char root[JPT__SANDBOX_PATH_MAX]; /* the workspace's real path */
    const jpt_policy *p;
    int root_fd;                      /* the directory backend's, lent */
    jpt__pathv read, write, read_only, hide; /* absolute */
    idv read_only_ids, hide_ids;
    jpt__pathv write_rel;             /* the writable roots, relative */
    jpt__pathv covered_rel;           /* hide and read_only, relative, and */
    idv covered_ids;                  /* their identities, both sorted once
                                         walked: the child cannot change them */
    idv git_ids, bare_ids;            /* the .git entries and bare
                                         repositories beneath them: what the
                                         sweep finds again by identity
                                         (sorted once walked) */
    jpt__walk *walk;                  /* NULL once walked */
    size_t scanned;
    bool git;                         /* the child is git */
};

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

/* Whether `rel` is `root` or beneath it (relative paths, "." the root). */
static bool beneath(const char *rel, const char *root)
{
    size_t m = strlen(root);

    return strcmp(root, ".") == 0 ||
           (strncmp(rel, root, m) == 0 && (rel[m] == '/' || rel[m] == '\0'));
}

/* Whether `rel` is beneath a writable root, and no writable root is
 * beneath it (a rule that names a path inside .git grants it). */
static bool in_writable_only(const jpt__vfs_confine *c, const char *rel)
{
    bool under = false;
    size_t n = strlen(rel);

    for (size_t i = 0; i < c->write_rel.n; i++) {
        const char *w = c->write_rel.v[i];
        if (beneath(rel, w))
            under = true;
        if (strcmp(rel, ".") == 0 ? strcmp(w, ".") != 0
                                  : strncmp(w, rel, n) == 0 && w[n] == '/')
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

static int bounded(jpt__vfs_confine *c)
{
    if (c->hide.n + c->read_only.n >= JPT_VFS_RUN_COVER_MAX)
        return JPT_ERR_LIMIT;
    return JPT_OK;
}

/* Adds `rel` to the covered list `l` (with its identity, which the child
 * checks: ns.c), absolute. */
static int cover(jpt__vfs_confine *c, jpt__pathv *l, idv *ids, const char *rel, bool flag)
{
    struct stat st;
    int rc = bounded(c);
    char *abs;

    if (rc < 0)
        return rc;
    if ((abs = absolute(c, rel)) == NULL)
        return JPT_ERR_NOMEM;
    /* Gone meanwhile: nothing to cover, and the child would fail on it. */
    if (fstatat(c->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        jpt__free(abs);
        return JPT_OK;
    }
    rc = jpt__pathv_add(l, abs, flag);
    jpt__free(abs);
    if (rc == JPT_OK)
        rc = jpt__pathv_add(&c->covered_rel, rel, false);
    if (rc == JPT_OK)
        rc = idv_add(&c->covered_ids, &st);
    return rc < 0 ? rc : idv_add(ids, &st);
}

/* One entry of the walk (walk.c's jpt__walk_fn). */
static int visit(void *ud, const char *rel, const char *name, unsigned char type)
{
    jpt__vfs_confine *c = ud;
    bool writable = c->write_rel.n > 0 && in_writable_only(c, rel);
    int rc;

    /* The inventory the sweep compares with: every .git beneath a
     * writable prefix, a symbolic link too, by its identity. */
    if (writable && !c->p->git_writable && is_git(name)) {
        struct stat st;
        if (fstatat(c->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (rc = idv_add(&c->git_ids, &st)) < 0)
            return rc;
    }
    /* A symbolic link is neither followed nor covered: what it leads to
     * is judged by its own path. */
    if (type == DT_LNK)
        return JPT_OK;
    if (c->git && type != DT_DIR && is_git_config(rel)) {
        /* Read, never written: a git child cannot change what its own
         * overrides were read from. */
        return writable ? cover(c, &c->read_only, &c->read_only_ids, rel, false) : JPT_OK;
    }
    if (never_read(c->p, rel))
        return cover(c, &c->hide, &c->hide_ids, rel, type == DT_DIR);
    /* .git is written only where filesystem.git says "writable", as by
     * fs.write (issue 15 §2): a directory, or a file ("gitdir: <path>", a
     * submodule's or a worktree's) that would otherwise name a
     * repository of the child's making. */
    if (is_git(name) && !c->p->git_writable && writable &&
        (rc = cover(c, &c->read_only, &c->read_only_ids, rel, type == DT_DIR)) < 0)
        return rc;
    return type == DT_DIR ? JPT__WALK_DESCEND : JPT_OK;
}

/* A directory listed (walk.c's jpt__walk_dir_fn): a bare repository
 * beneath a writable prefix stays read-only, as a .git does. */
static int dir_done(void *ud, const char *rel, unsigned marks)
{
    jpt__vfs_confine *c = ud;
    struct stat st;
    int rc;

    if (!jpt__repo_bare(marks) || c->p->git_writable || !in_writable_only(c, rel))
        return JPT_OK;
    if (fstatat(c->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (rc = idv_add(&c->bare_ids, &st)) < 0)
        return rc;
    /* A writable root that is itself one stays writable: the rule names
     * it. */
    if (jpt__pathv_has(&c->write_rel, rel))
        return JPT_OK;
    return cover(c, &c->read_only, &c->read_only_ids, rel, true);
}

/* The prefix `rel` of the policy as the path it leads to beneath the root
 * (its real path), relative to the root: NULL when it does not exist,
 * leads out of the root, or is never readable itself. */
static int real_prefix(const jpt__vfs_confine *c, const char *rel, char **out)
{
    char link[64], real[JPT__SANDBOX_PATH_MAX];
    size_t n = strcmp(c->root, "/") == 0 ? 0 : strlen(c->root);
    int fd = jpt__walk_open(c->root_fd, rel, O_PATH);

    *out = NULL;
    if (fd < 0)
        return JPT_OK;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, real, sizeof(real) - 1);
    close(fd);
    if (len <= 0 || (size_t)len >= sizeof(real) - 1)
        return JPT_OK;
    real[len] = '\0';
    if (strncmp(real, c->root, n) != 0 || (real[n] != '/' && real[n] != '\0'))
        return JPT_OK;
    const char *r = real[n] == '\0' || real[n + 1] == '\0' ? "." : real + n + 1;
    if (strcmp(r, ".") != 0 && never_read(c->p, r))
        return JPT_OK;
    return (*out = jpt__strdup(r)) == NULL ? JPT_ERR_NOMEM : JPT_OK;
}

/* The policy's prefixes (`lists`, `n` of them) as roots beneath the real
 * root, each once, into `rel_roots` (relative) and `abs_roots` (absolute);
 * a root beneath another is left out. */
static int add_roots(jpt__vfs_confine *c, const jpt__policy_prefixes *const *lists, size_t n,
                     jpt__pathv *rel_roots, jpt__pathv *abs_roots)
{
    jpt__pathv found = {0};
    int rc = JPT_OK;

    for (size_t l = 0; rc == JPT_OK && l < n; l++)
        for (size_t i = 0; rc == JPT_OK && i < lists[l]->n; i++) {
            char *rel = NULL;
            if ((rc = real_prefix(c, lists[l]->paths[i], &rel)) == JPT_OK && rel != NULL)
                rc = jpt__pathv_add(&found, rel, false);
            jpt__free(rel);
        }
    for (size_t i = 0; rc == JPT_OK && i < found.n; i++) {
        bool inner = false;
        for (size_t j = 0; j < found.n && !inner; j++)
            inner = j != i && beneath(found.v[i], found.v[j]) &&
                    (!beneath(found.v[j], found.v[i]) || j < i);
        if (inner)
            continue;
        char *abs = absolute(c, found.v[i]);
        if (abs == NULL)
            rc = JPT_ERR_NOMEM;
        else if ((rc = jpt__pathv_add(rel_roots, found.v[i], false)) == JPT_OK)
            rc = jpt__pathv_add(abs_roots, abs, false);
        jpt__free(abs);
    }
    jpt__pathv_free(&found);
    return rc;
}

/* The roots to grant and walk. A refused configuration grants nothing.
 * Writable first: what lies beneath them is judged so during the walk. */
static int plan_walk(jpt__vfs_confine *c)
{
    const jpt_policy *p = c->p;
    jpt__pathv read_rel = {0};
    int rc = JPT_OK;

    if (!p->refused) {
        const jpt__policy_prefixes *writes[] = {p->writable_all ? &p->allow : &p->writable};
        const jpt__policy_prefixes *reads[] = {&p->allow, &p->writable};
        rc = add_roots(c, writes, 1, &c->write_rel, &c->write);
        if (rc == JPT_OK)
            rc = add_roots(c, reads, 2, &read_rel, &c->read);
    }
    /* Each readable root is listed once: one beneath another was dropped. */
    for (size_t i = 0; rc == JPT_OK && i < read_rel.n; i++)
        rc = jpt__walk_add(c->walk, read_rel.v[i]);
    jpt__pathv_free(&read_rel);
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
    c->p = p;
    c->root_fd = root_fd;
    c->git = git;
    if ((rc = jpt__walk_new(root_fd, JPT_VFS_RUN_SCAN_MAX, visit, dir_done, c, &c->walk)) < 0 ||
        (rc = plan_walk(c)) < 0) {
        jpt__vfs_confine_free(c);
        return jpt__err(err, rc, "out of memory finding what the process may not read");
    }
    c->spec = (jpt__sandbox_spec){
        .profile = JPT__SANDBOX_RUN,
        .mode = mode,
        .workspace = c->root,
        .process_limit = process_limit,
        .cache = cache,
    };
    *out = c;
    return JPT_OK;
}

int jpt__vfs_confine_step(jpt__vfs_confine *c, uint64_t budget_ns, jpt__errbuf *err)
{
    jpt__errbuf why = {{0}};

    if (c->walk == NULL)
        return 0;
    int rc = jpt__walk_step(c->walk, budget_ns, &why);
    c->scanned = jpt__walk_scanned(c->walk);
    if (rc == 1)
        return 1;
    jpt__walk_free(c->walk);
    c->walk = NULL;
    if (rc == JPT_ERR_LIMIT && c->scanned > JPT_VFS_RUN_SCAN_MAX)
        return jpt__err(err, rc,
                        "the paths it may read hold more than %d entries: too many to find "
                        "their sensitive paths before each process",
                        JPT_VFS_RUN_SCAN_MAX);
    if (rc == JPT_ERR_LIMIT)
        return jpt__err(err, rc,
                        "the paths it may read hold more than %d sensitive, denied or "
                        "repository entries to cover: too many for the OS sandbox of a process",
                        JPT_VFS_RUN_COVER_MAX);
    if (rc < 0)
        return jpt__err(err, rc, "%s",
                        rc == JPT_ERR_NOMEM ? "out of memory finding what the process may not read"
                                            : why.text);
    idv_sort(&c->git_ids);
    idv_sort(&c->bare_ids);
    idv_sort(&c->covered_ids);
    jpt__pathv_sort(&c->covered_rel);
    c->spec.read = jpt__pathv_list(&c->read);
    c->spec.write = jpt__pathv_list(&c->write);
    c->spec.read_only = jpt__pathv_list(&c->read_only);
    c->spec.read_only_ids = c->read_only_ids.v;
    c->spec.hide = jpt__pathv_list(&c->hide);
    c->spec.hide_dir = c->hide.flag;
    c->spec.hide_ids = c->hide_ids.v;
    return 0;
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
    jpt__walk_free(c->walk);
    jpt__pathv_free(&c->read);
    jpt__pathv_free(&c->write);
    jpt__pathv_free(&c->read_only);
    jpt__pathv_free(&c->hide);
    jpt__free(c->read_only_ids.v);
    jpt__free(c->hide_ids.v);
    jpt__pathv_free(&c->write_rel);
    jpt__pathv_free(&c->covered_rel);
    jpt__free(c->git_ids.v);
    jpt__free(c->bare_ids.v);
    jpt__free(c->covered_ids.v);
    jpt__free(c);
}

/* ---- The sweep ------------------------------------------------------------------------ */

struct jpt__vfs_sweep {
    const jpt__vfs_confine *c;  /* its walk's inventory and roots */
    jpt__walk *walk;
    jpt__pathv doomed;          /* what the run made, to remove (relative) */
    size_t next;                /* the one being removed */
    jpt__remove *removing;
    int removing_in;            /* its parent directory's fd */
    jpt__buf removed;           /* their names, for the message */
    size_t n_removed;
    bool failed;
};

/* The sweep's walk, beneath the writable roots: each .git found that was
 * not there before (by identity: a .git that was is read-only to the
 * child, so neither changed nor freed for its inode to be reused), whole,
 * and past what the child could not change (what it had covered, found
 * where it was); but into anything else, a directory of a sensitive name
 * it made too. */
static int sweep_visit(void *ud, const char *rel, const char *name, unsigned char type)
{
    jpt__vfs_sweep *s = ud;
    const jpt__vfs_confine *c = s->c;
    struct stat st;

    if (!in_writable_only(c, rel))
        return type == DT_DIR ? JPT__WALK_DESCEND : JPT_OK;
    if (is_git(name)) {
        if (fstatat(c->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0 || idv_has(&c->git_ids, &st))
            return JPT_OK;
        return jpt__pathv_add(&s->doomed, rel, false);
    }
    if (type != DT_DIR)
        return JPT_OK;
    if (jpt__pathv_has(&c->covered_rel, rel) &&
        fstatat(c->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        idv_has(&c->covered_ids, &st))
        return JPT_OK;
    return JPT__WALK_DESCEND;
}

/* A bare repository that was not one before: its HEAD goes (git takes no
 * directory without one for a repository), the rest stays. */
static int sweep_dir_done(void *ud, const char *rel, unsigned marks)
{
    jpt__vfs_sweep *s = ud;
    struct stat st;
    jpt__buf head = JPT__BUF_INIT;
    int rc;

    if (!jpt__repo_bare(marks) || !in_writable_only(s->c, rel) ||
        fstatat(s->c->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        idv_has(&s->c->bare_ids, &st))
        return JPT_OK;
    rc = strcmp(rel, ".") == 0 ? jpt__buf_puts(&head, "HEAD")
                               : jpt__buf_printf(&head, "%s/HEAD", rel);
    if (rc == JPT_OK)
        rc = jpt__pathv_add(&s->doomed, head.data, false);
    jpt__buf_free(&head);
    return rc;
}

int jpt__vfs_sweep_new(const jpt__vfs_confine *c, jpt__vfs_sweep **out)
{
    jpt__vfs_sweep *s;
    int rc = JPT_OK;

    *out = NULL;
    if (c->p->git_writable || c->write_rel.n == 0 || c->walk != NULL)
        return JPT_OK;
    if ((s = jpt__calloc(1, sizeof(*s))) == NULL)
        return JPT_ERR_NOMEM;
    s->c = c;
    s->removing_in = -1;
    s->removed = (jpt__buf)JPT__BUF_INIT;
    rc = jpt__walk_new(c->root_fd, JPT_VFS_RUN_SCAN_MAX, sweep_visit, sweep_dir_done, s,
                       &s->walk);
    for (size_t i = 0; rc == JPT_OK && i < c->write_rel.n; i++)
        rc = jpt__walk_add(s->walk, c->write_rel.v[i]);
    if (rc < 0) {
        jpt__vfs_sweep_free(s);
        return rc;
    }
    *out = s;
    return JPT_OK;
}

/* Starts removing doomed[next]; its parent not opened (swapped for a
 * symbolic link meanwhile), it is left, and that said. */
static int remove_next(jpt__vfs_sweep *s)
{
    const char *rel = s->doomed.v[s->next];
    const char *slash = strrchr(rel, '/');
    char parent[JPT__SANDBOX_PATH_MAX];

    snprintf(parent, sizeof(parent), "%.*s", slash != NULL ? (int)(slash - rel) : 1,
             slash != NULL ? rel : ".");
    int fd = jpt__walk_open(s->c->root_fd, parent, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        s->failed = true;
        return JPT_OK;
    }
    int rc = jpt__remove_new(fd, slash != NULL ? slash + 1 : rel, &s->removing);
    if (rc < 0)
        close(fd);
    else
        s->removing_in = fd;
    return rc;
}

/* The current removal is over (`status` its last step's). */
static int removed_one(jpt__vfs_sweep *s, int status)
{
    int rc = JPT_OK;

    close(s->removing_in);
    s->removing_in = -1;
    jpt__remove_free(s->removing);
    s->removing = NULL;
    if (status < 0)
        s->failed = true;
    else if ((rc = jpt__buf_printf(&s->removed, "%s%s", s->n_removed > 0 ? ", " : "",
                                   s->doomed.v[s->next])) == JPT_OK)
        s->n_removed++;
    s->next++;
    return rc;
}

int jpt__vfs_sweep_step(jpt__vfs_sweep *s, uint64_t budget_ns, jpt__errbuf *err)
{
    int rc;

    if (s->walk != NULL) {
        jpt__errbuf why = {{0}};
        rc = jpt__walk_step(s->walk, budget_ns, &why);
        if (rc == 1)
            return 1;
        jpt__walk_free(s->walk);
        s->walk = NULL;
        if (rc == JPT_ERR_LIMIT)
            return jpt__err(err, rc,
                            "the paths it may write hold more than %d entries after the run: "
                            "too many to find what of a repository it made there",
                            JPT_VFS_RUN_SCAN_MAX);
        if (rc < 0)
            return jpt__err(err, rc, "%s",
                            rc == JPT_ERR_NOMEM ? "out of memory after the run" : why.text);
    }
    while (s->next < s->doomed.n) {
        if (s->removing == NULL && (rc = remove_next(s)) < 0)
            return jpt__err(err, rc, "out of memory after the run");
        if (s->removing == NULL) {
            s->next++;
            continue;
        }
        rc = jpt__remove_step(s->removing, budget_ns);
        if (rc == 1)
            return 1;
        if ((rc = removed_one(s, rc)) < 0)
            return jpt__err(err, rc, "out of memory after the run");
    }
    return 0;
}

const char *jpt__vfs_sweep_removed(const jpt__vfs_sweep *s, size_t *n, bool *failed)
{
    *n = s->n_removed;
    *failed = s->failed;
    return s->removed.data != NULL ? s->removed.data : "";
}

void jpt__vfs_sweep_free(jpt__vfs_sweep *s)
{
    if (s == NULL)
        return;
    jpt__walk_free(s->walk);
    if (s->removing != NULL) {
        close(s->removing_in);
        jpt__remove_free(s->removing);
    }
    jpt__pathv_free(&s->doomed);
    jpt__buf_free(&s->removed);
    jpt__free(s);
}
