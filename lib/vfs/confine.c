/* The OS sandbox of a process.run child, derived from the policy of the
 * tool that asked (run.h, "The child's sandbox"; issue 15 §3): Landlock
 * grants for what fs.read and fs.write would allow wholesale (the
 * prefixes of filesystem.allow and .writable), and for what they never
 * allow beneath those (filesystem.deny, the sensitive paths), a walk of
 * the readable prefixes that finds it, for the child to cover in its
 * mount namespace; repositories beneath a writable prefix (.git entries,
 * bare repositories) stay read-only. The walk also takes the inventory
 * of what of a repository lies beneath the writable prefixes (repos.c),
 * which the sweep after the run compares with.
 *
 * The walk is lib/sandbox's (walk.c): iterative, in steps of a time
 * budget (run.c runs it a slice at a time from the loop), never following
 * a symbolic link, resolving every directory beneath the root's fd, and
 * bounded: JPT_VFS_RUN_SCAN_MAX entries, JPT_VFS_RUN_COVER_MAX paths
 * covered. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy.h"
#include "vfs/run.h"

/* How many times a walk is begun when directories it listed keep
 * changing before its end. */
#define WALKS_MAX 4

struct jpt__vfs_confine {
    jpt__sandbox_spec spec;
    char root[JPT__SANDBOX_PATH_MAX]; /* the workspace's real path */
    const jpt_policy *p;
    int root_fd;                      /* the directory backend's, lent */
    jpt__pathv read, write, read_only, hide, pin; /* absolute */
    jpt__idv read_only_ids, hide_ids, pin_ids; /* per path, for the child's check */
    jpt__repos *repos;                /* the writable roots and what of a
                                         repository lies beneath them */
    jpt__walk *walk;                  /* NULL once walked */
    jpt__walk_stamps listed;          /* the directories it listed */
    bool checking;                    /* walked: the stamps are being checked */
    size_t checked;                   /* ... up to this one */
    bool stamp_repos;                 /* ... which the sweep compares with */
    unsigned walks;                   /* begun */
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
    if (c->hide.n + c->read_only.n + c->pin.n >= JPT_VFS_RUN_COVER_MAX)
        return JPT_ERR_LIMIT;
    return JPT_OK;
}

/* Adds `rel` to the covered list `l` (with its identity, which the child
 * checks: ns.c), absolute. */
static int cover(jpt__vfs_confine *c, jpt__pathv *l, jpt__idv *ids, const char *rel, bool flag)
{
    struct stat st;
    int rc = bounded(c);
    char *abs;

    if (rc < 0)
        return rc;
    /* Gone meanwhile: nothing to cover, and the child would fail on it. */
    if (fstatat(c->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return JPT_OK;
    if ((abs = absolute(c, rel)) == NULL)
        return JPT_ERR_NOMEM;
    rc = jpt__pathv_add(l, abs, flag);
    jpt__free(abs);
    if (rc == JPT_OK)
        rc = jpt__repos_covered(c->repos, rel, &st);
    return rc < 0 ? rc : jpt__idv_add(ids, &st);
}

/* Whether the verdict on `rel`, which the child may not read, holds
 * whatever the name of its directory `dir` (a prefix of it): it does not
 * for "config" of a denied "config/prod", nor for ".aws" of
 * ".aws/credentials", and a child renaming it would put what it holds
 * out of the policy's reach, for the tool's fs.read. Two names matched
 * by no literal pattern, one short and one long ('?' and '*' match by
 * length), stand for any. */
static bool verdict_keeps_without(const jpt_policy *p, const char *rel, size_t dir)
{
    static const char *const others[] = {"\x01", "\x01jptool-any-other-name\x01"};
    size_t start = dir;

    while (start > 0 && rel[start - 1] != '/')
        start--;
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        jpt__buf b = JPT__BUF_INIT;
        bool holds = jpt__buf_printf(&b, "%.*s%s%s", (int)start, rel, others[i], rel + dir) < 0 ||
                     never_read(p, b.data);
        jpt__buf_free(&b);
        if (!holds)
            return false;
    }
    return true;
}

/* Pins the directory `dir` (a prefix of `rel`, hidden) where the child
 * may rename it and the verdict on `rel` depends on its name. */
static int pin(jpt__vfs_confine *c, const char *rel, const char *dir)
{
    struct stat st;
    int rc;

    if (!jpt__repos_writable(c->repos, dir) || verdict_keeps_without(c->p, rel, strlen(dir)) ||
        fstatat(c->root_fd, dir, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        return JPT_OK;
    char *abs = absolute(c, dir);
    if (abs == NULL)
        return JPT_ERR_NOMEM;
    if (jpt__pathv_has(&c->pin, abs))
        rc = JPT_OK;
    else if ((rc = bounded(c)) == JPT_OK && (rc = jpt__pathv_add(&c->pin, abs, true)) == JPT_OK)
        rc = jpt__idv_add(&c->pin_ids, &st);
    jpt__free(abs);
    return rc;
}

/* Pins each directory above `rel` (hidden) whose name the verdict on it
 * depends on. */
static int pin_above(jpt__vfs_confine *c, const char *rel)
{
    jpt__buf dir = JPT__BUF_INIT;
    int rc = JPT_OK;

    for (const char *slash = strchr(rel, '/'); rc == JPT_OK && slash != NULL;
         slash = strchr(slash + 1, '/')) {
        dir.len = 0;
        rc = jpt__buf_append(&dir, rel, (size_t)(slash - rel)) < 0 ? JPT_ERR_NOMEM
                                                                    : pin(c, rel, dir.data);
    }
    jpt__buf_free(&dir);
    return rc;
}

/* One entry of the walk (walk.c's jpt__walk_fn). */
static int visit(void *ud, const char *rel, const char *name, unsigned char type)
{
    jpt__vfs_confine *c = ud;
    bool writable = jpt__repos_writable(c->repos, rel);
    int rc;

    /* The inventory the sweep compares with: every .git beneath a
     * writable prefix, a symbolic link too, by its identity. */
    if (!c->p->git_writable && (rc = jpt__repos_note(c->repos, rel, name)) < 0)
        return rc;
    /* A symbolic link is neither followed nor covered: what it leads to
     * is judged by its own path. */
    if (type == DT_LNK)
        return JPT_OK;
    if (c->git && type != DT_DIR && is_git_config(rel)) {
        /* Read, never written: a git child cannot change what its own
         * overrides were read from. */
        return writable ? cover(c, &c->read_only, &c->read_only_ids, rel, false) : JPT_OK;
    }
    if (never_read(c->p, rel)) {
        if ((rc = pin_above(c, rel)) < 0)
            return rc;
        return cover(c, &c->hide, &c->hide_ids, rel, type == DT_DIR);
    }
    /* .git is written only where filesystem.git says "writable", as by
     * fs.write (issue 15 §2): a directory, or a file ("gitdir: <path>", a
     * submodule's or a worktree's) that would otherwise name a
     * repository of the child's making. */
    if (is_git(name) && !c->p->git_writable && writable &&
        (rc = cover(c, &c->read_only, &c->read_only_ids, rel, type == DT_DIR)) < 0)
        return rc;
    /* One the walk passes over, which a child would make searchable
     * again (chmod, where it may write) to reach what no walk saw. */
    if (type == DT_DIR && jpt__walk_shut_but_owned(c->root_fd, rel))
        return cover(c, &c->hide, &c->hide_ids, rel, true);
    return type == DT_DIR ? JPT__WALK_DESCEND : JPT_OK;
}

/* A directory listed (walk.c's jpt__walk_dir_fn): a bare repository
 * beneath a writable prefix stays read-only, as a .git does (a writable
 * root that is itself one stays writable: its rule names it). */
static int dir_done(void *ud, const char *rel, unsigned marks)
{
    jpt__vfs_confine *c = ud;
    bool bare = false;
    int rc;

    if (c->p->git_writable)
        return JPT_OK;
    if ((rc = jpt__repos_note_dir(c->repos, rel, marks, &bare)) < 0 || !bare)
        return rc;
    char *abs = absolute(c, rel);
    if (abs == NULL)
        return JPT_ERR_NOMEM;
    bool named = false;
    for (size_t i = 0; i < c->write.n && !named; i++)
        named = strcmp(abs, c->write.v[i]) == 0;
    jpt__free(abs);
    return named ? JPT_OK : cover(c, &c->read_only, &c->read_only_ids, rel, true);
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
    jpt__pathv read_rel = {0}, write_rel = {0};
    int rc = JPT_OK;

    if (!p->refused) {
        const jpt__policy_prefixes *writes[] = {p->writable_all ? &p->allow : &p->writable};
        const jpt__policy_prefixes *reads[] = {&p->allow, &p->writable};
        rc = add_roots(c, writes, 1, &write_rel, &c->write);
        if (rc == JPT_OK)
            rc = add_roots(c, reads, 2, &read_rel, &c->read);
    }
    for (size_t i = 0; rc == JPT_OK && i < write_rel.n; i++)
        rc = jpt__repos_add_root(c->repos, write_rel.v[i]);
    /* Each readable root is listed once: one beneath another was dropped.
     * Where the child may write all it may read, the directories listed
     * are stamped: a run that changes none has nothing to sweep. */
    bool all_writable = write_rel.n > 0;
    for (size_t i = 0; rc == JPT_OK && i < read_rel.n; i++) {
        all_writable &= jpt__repos_writable(c->repos, read_rel.v[i]);
        rc = jpt__walk_add(c->walk, read_rel.v[i]);
    }
    c->stamp_repos = all_writable && !p->git_writable;
    jpt__walk_stamp_into(c->walk, &c->listed);
    jpt__pathv_free(&read_rel);
    jpt__pathv_free(&write_rel);
    return rc;
}

/* A walk from the start: what an earlier one found is dropped. */
static int begin(jpt__vfs_confine *c)
{
    int rc;

    c->walks++;
    if ((rc = jpt__repos_new(c->root_fd, &c->repos)) < 0 ||
        (rc = jpt__walk_new(c->root_fd, JPT_VFS_RUN_SCAN_MAX, visit, dir_done, c, &c->walk)) < 0)
        return rc;
    return plan_walk(c);
}

static void drop(jpt__vfs_confine *c)
{
    jpt__walk_free(c->walk);
    c->walk = NULL;
    jpt__walk_stamps_free(&c->listed);
    jpt__pathv_free(&c->read);
    jpt__pathv_free(&c->write);
    jpt__pathv_free(&c->read_only);
    jpt__pathv_free(&c->hide);
    jpt__pathv_free(&c->pin);
    jpt__idv_free(&c->read_only_ids);
    jpt__idv_free(&c->hide_ids);
    jpt__idv_free(&c->pin_ids);
    jpt__repos_unref(c->repos);
    c->repos = NULL;
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
    if ((rc = begin(c)) < 0) {
        jpt__vfs_confine_free(c);
        return jpt__err(err, rc, "%s",
                        rc == JPT_ERR_NOMEM ? "out of memory finding what the process may not read"
                                            : "the workspace cannot be opened again: no fd left");
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

/* The walk ended with `rc` < 0: the error the run fails with. */
static int walk_failed(const jpt__vfs_confine *c, int rc, const jpt__errbuf *why,
                       jpt__errbuf *err)
{
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
    return jpt__err(err, rc, "%s",
                    rc == JPT_ERR_NOMEM ? "out of memory finding what the process may not read"
                                        : why->text);
}

int jpt__vfs_confine_step(jpt__vfs_confine *c, uint64_t budget_ns, jpt__errbuf *err)
{
    jpt__errbuf why = {{0}};
    int rc;

    if (c->walk == NULL && !c->checking)
        return 0;
    if (c->walk != NULL) {
        rc = jpt__walk_step(c->walk, budget_ns, &why);
        c->scanned = jpt__walk_scanned(c->walk);
        if (rc == 1)
            return 1;
        jpt__walk_free(c->walk);
        c->walk = NULL;
        if (rc < 0)
            return walk_failed(c, rc, &why, err);
        /* Its stamps are checked from the next slice on (at once when
         * there is no budget). */
        c->checking = true;
        c->checked = 0;
        if (budget_ns != 0)
            return 1;
    }
    /* A directory listed that changed before the walk's end may have
     * taken in what the walk had still to find: a directory renamed from
     * where it had not been yet to where it had (the tool's fs.rename,
     * another child of its, between two slices) would never be listed,
     * and a child would read its .env. The walk starts again. The check is
     * a stat per directory listed: in slices too. */
    rc = jpt__walk_stamps_step(&c->listed, c->root_fd, &c->checked, budget_ns);
    if (rc == 1)
        return 1;
    c->checking = false;
    if (rc < 0) {
        if (c->walks >= WALKS_MAX)
            return jpt__err(err, JPT_ERR_SANDBOX,
                            "the workspace changed while it was walked to find what the "
                            "process may not read, %u times in a row: it cannot be confined",
                            c->walks);
        drop(c);
        if ((rc = begin(c)) < 0)
            return jpt__err(err, rc, "%s",
                            rc == JPT_ERR_NOMEM
                                ? "out of memory finding what the process may not read"
                                : "the workspace cannot be opened again: no fd left");
        return 1;
    }
    if (c->stamp_repos) {
        *jpt__repos_stamps(c->repos) = c->listed;
        c->listed = (jpt__walk_stamps){0};
    }
    jpt__repos_seal(c->repos);
    c->spec.read = jpt__pathv_list(&c->read);
    c->spec.write = jpt__pathv_list(&c->write);
    c->spec.read_only = jpt__pathv_list(&c->read_only);
    c->spec.read_only_ids = c->read_only_ids.v;
    c->spec.hide = jpt__pathv_list(&c->hide);
    c->spec.hide_dir = c->hide.flag;
    c->spec.hide_ids = c->hide_ids.v;
    c->spec.pin = jpt__pathv_list(&c->pin);
    c->spec.pin_ids = c->pin_ids.v;
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

jpt__repos *jpt__vfs_confine_repos(const jpt__vfs_confine *c)
{
    return c->walk == NULL && !c->p->git_writable && jpt__repos_has_roots(c->repos) ? c->repos
                                                                                      : NULL;
}

void jpt__vfs_confine_free(jpt__vfs_confine *c)
{
    if (c == NULL)
        return;
    drop(c);
    jpt__free(c);
}
