/* Repositories where a sandboxed process may write (sandbox.h,
 * "repos.c"): the inventory a walk takes of what of a repository lies
 * beneath the writable roots before the process runs (each .git, each
 * bare repository, by identity; what the process had covered or
 * read-only), and the sweep after it, which removes what of one the
 * process made there: git runs the configuration of any repository it
 * finds above the user's working directory, so one a tool planted would
 * run its commands outside every sandbox (issue 15 §2, R1, S2). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

/* ---- Sets of identities ------------------------------------------------------------ */

int jpt__idv_add(jpt__idv *l, const struct stat *st)
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

static void idv_sort(jpt__idv *l)
{
    if (l->n > 1)
        qsort(l->v, l->n, 2 * sizeof(uint64_t), by_id);
}

static bool idv_has(const jpt__idv *l, const struct stat *st)
{
    uint64_t key[2] = {(uint64_t)st->st_dev, (uint64_t)st->st_ino};

    return l->n > 0 && bsearch(key, l->v, l->n, 2 * sizeof(uint64_t), by_id) != NULL;
}

void jpt__idv_free(jpt__idv *l)
{
    jpt__free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- The inventory ------------------------------------------------------------------- */

struct jpt__repos {
    unsigned refs;
    int root_fd;            /* owned */
    jpt__pathv roots;       /* the writable roots, relative ("." the root) */
    jpt__idv git_ids;       /* each .git beneath them, a symbolic link too */
    jpt__idv bare_ids;      /* each bare repository beneath them */
    jpt__pathv covered_rel; /* what the process cannot change, relative, */
    jpt__idv covered_ids;   /* and its identities */
    jpt__walk_stamps stamps; /* the directories of the walk, when stamped */
    bool sealed;
};

int jpt__repos_new(int root_fd, jpt__repos **out)
{
    jpt__repos *r = jpt__calloc(1, sizeof(*r));

    *out = NULL;
    if (r == NULL)
        return JPT_ERR_NOMEM;
    if ((r->root_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3)) < 0) {
        int e = errno;
        jpt__free(r);
        return e == EMFILE || e == ENFILE ? JPT_ERR_LIMIT : JPT_ERR_IO;
    }
    r->refs = 1;
    *out = r;
    return JPT_OK;
}

jpt__repos *jpt__repos_ref(jpt__repos *r)
{
    if (r != NULL)
        r->refs++;
    return r;
}

void jpt__repos_unref(jpt__repos *r)
{
    if (r == NULL || --r->refs > 0)
        return;
    close(r->root_fd);
    jpt__pathv_free(&r->roots);
    jpt__idv_free(&r->git_ids);
    jpt__idv_free(&r->bare_ids);
    jpt__pathv_free(&r->covered_rel);
    jpt__idv_free(&r->covered_ids);
    jpt__walk_stamps_free(&r->stamps);
    jpt__free(r);
}

int jpt__repos_root_fd(const jpt__repos *r)
{
    return r->root_fd;
}

int jpt__repos_add_root(jpt__repos *r, const char *rel)
{
    return jpt__pathv_add(&r->roots, rel, false);
}

bool jpt__repos_has_roots(const jpt__repos *r)
{
    return r->roots.n > 0;
}

jpt__walk_stamps *jpt__repos_stamps(jpt__repos *r)
{
    return &r->stamps;
}

/* Whether `rel` is `root` or beneath it (relative paths, "." the root). */
static bool beneath(const char *rel, const char *root)
{
    size_t m = strlen(root);

    return strcmp(root, ".") == 0 ||
           (strncmp(rel, root, m) == 0 && (rel[m] == '/' || rel[m] == '\0'));
}

bool jpt__repos_writable(const jpt__repos *r, const char *rel)
{
    bool under = false;
    size_t n = strlen(rel);

    for (size_t i = 0; i < r->roots.n; i++) {
        const char *w = r->roots.v[i];
        if (beneath(rel, w))
            under = true;
        /* A root beneath it: a rule names a path inside (.git/hooks). */
        if (strcmp(rel, ".") == 0 ? strcmp(w, ".") != 0
                                  : strncmp(w, rel, n) == 0 && w[n] == '/')
            return false;
    }
    return under;
}

int jpt__repos_note(jpt__repos *r, const char *rel, const char *name)
{
    struct stat st;

    if (strcasecmp(name, ".git") != 0 || !jpt__repos_writable(r, rel) ||
        fstatat(r->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return JPT_OK;
    return jpt__idv_add(&r->git_ids, &st);
}

int jpt__repos_note_dir(jpt__repos *r, const char *rel, unsigned marks, bool *bare)
{
    struct stat st;

    *bare = false;
    if (!jpt__repo_bare(marks) || !jpt__repos_writable(r, rel) ||
        fstatat(r->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return JPT_OK;
    *bare = true;
    return jpt__idv_add(&r->bare_ids, &st);
}

int jpt__repos_covered(jpt__repos *r, const char *rel, const struct stat *st)
{
    int rc = jpt__pathv_add(&r->covered_rel, rel, false);

    return rc < 0 ? rc : jpt__idv_add(&r->covered_ids, st);
}

void jpt__repos_seal(jpt__repos *r)
{
    idv_sort(&r->git_ids);
    idv_sort(&r->bare_ids);
    idv_sort(&r->covered_ids);
    jpt__pathv_sort(&r->covered_rel);
    r->sealed = true;
}

/* ---- The sweep ------------------------------------------------------------------------ */

struct jpt__repo_sweep {
    jpt__repos *r;              /* a reference */
    jpt__walk *walk;
    jpt__pathv doomed;          /* what the process made (relative) */
    jpt__buf moved;             /* "a/.git (now a/.git.jptool-quarantine)", … */
    size_t n_moved;
    bool failed;
};

/* Each .git found that was not there before (by identity: one that was
 * is read-only to the process, so neither changed nor freed for its inode
 * to be reused), whole; past what the process could not change (what it
 * had covered, found where it was), but into anything else, a directory
 * of a sensitive name it made too. */
static int sweep_visit(void *ud, const char *rel, const char *name, unsigned char type)
{
    jpt__repo_sweep *s = ud;
    const jpt__repos *r = s->r;
    struct stat st;

    if (!jpt__repos_writable(r, rel))
        return type == DT_DIR ? JPT__WALK_DESCEND : JPT_OK;
    if (strcasecmp(name, ".git") == 0) {
        if (fstatat(r->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0 || idv_has(&r->git_ids, &st))
            return JPT_OK;
        return jpt__pathv_add(&s->doomed, rel, false);
    }
    if (type != DT_DIR)
        return JPT_OK;
    if (jpt__pathv_has(&r->covered_rel, rel) &&
        fstatat(r->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && idv_has(&r->covered_ids, &st))
        return JPT_OK;
    return JPT__WALK_DESCEND;
}

/* A bare repository that was not one before: its HEAD is what goes (git
 * takes no directory without one for a repository). */
static int sweep_dir_done(void *ud, const char *rel, unsigned marks)
{
    jpt__repo_sweep *s = ud;
    struct stat st;
    jpt__buf head = JPT__BUF_INIT;
    int rc;

    if (!jpt__repo_bare(marks) || !jpt__repos_writable(s->r, rel) ||
        fstatat(s->r->root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        idv_has(&s->r->bare_ids, &st))
        return JPT_OK;
    rc = strcmp(rel, ".") == 0 ? jpt__buf_puts(&head, "HEAD")
                               : jpt__buf_printf(&head, "%s/HEAD", rel);
    if (rc == JPT_OK)
        rc = jpt__pathv_add(&s->doomed, head.data, false);
    jpt__buf_free(&head);
    return rc;
}

int jpt__repo_sweep_new(jpt__repos *r, size_t max_entries, jpt__repo_sweep **out)
{
    jpt__repo_sweep *s;
    int rc;

    *out = NULL;
    if (!r->sealed || r->roots.n == 0)
        return JPT_OK;
    /* Not a directory made, removed or renamed since the walk: nothing of
     * a repository can have been made. */
    if (r->stamps.n > 0 && jpt__walk_stamps_hold(&r->stamps, r->root_fd))
        return JPT_OK;
    if ((s = jpt__calloc(1, sizeof(*s))) == NULL)
        return JPT_ERR_NOMEM;
    s->r = jpt__repos_ref(r);
    s->moved = (jpt__buf)JPT__BUF_INIT;
    rc = jpt__walk_new(r->root_fd, max_entries, sweep_visit, sweep_dir_done, s, &s->walk);
    for (size_t i = 0; rc == JPT_OK && i < r->roots.n; i++)
        rc = jpt__walk_add(s->walk, r->roots.v[i]);
    if (rc < 0) {
        jpt__repo_sweep_free(s);
        return rc;
    }
    *out = s;
    return JPT_OK;
}

/* Moves `rel` aside, in its directory, to "<name>.jptool-quarantine"
 * (then -2, -3, …: never over anything): a name git never takes for a
 * repository's, and nothing of it deleted (it may be the user's, made
 * meanwhile: the sweep cannot tell who made it). Its directory not
 * opened (swapped for a symbolic link meanwhile), it is left, and that
 * said. */
static int move_aside(jpt__repo_sweep *s, const char *rel)
{
    const char *slash = strrchr(rel, '/'), *name = slash != NULL ? slash + 1 : rel;
    char parent[JPT__SANDBOX_PATH_MAX], to[NAME_MAX + 1];
    int rc = JPT_OK;

    snprintf(parent, sizeof(parent), "%.*s", slash != NULL ? (int)(slash - rel) : 1,
             slash != NULL ? rel : ".");
    int fd = jpt__walk_open(s->r->root_fd, parent, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        s->failed = true;
        return JPT_OK;
    }
    for (int i = 1; i <= 100; i++) {
        if (i == 1)
            snprintf(to, sizeof(to), "%.200s.jptool-quarantine", name);
        else
            snprintf(to, sizeof(to), "%.200s.jptool-quarantine-%d", name, i);
        if (renameat2(fd, name, fd, to, RENAME_NOREPLACE) == 0) {
            rc = jpt__buf_printf(&s->moved, "%s%s (now %.*s%s%s)", s->n_moved > 0 ? ", " : "",
                                 rel, slash != NULL ? (int)(slash - rel) : 0, rel,
                                 slash != NULL ? "/" : "", to);
            s->n_moved++;
            close(fd);
            return rc;
        }
        if (errno != EEXIST)
            break;
    }
    s->failed = errno != ENOENT;
    close(fd);
    return JPT_OK;
}

int jpt__repo_sweep_step(jpt__repo_sweep *s, uint64_t budget_ns, jpt__errbuf *err)
{
    int rc;

    if (s->walk != NULL) {
        jpt__errbuf why = {{0}};
        rc = jpt__walk_step(s->walk, budget_ns, &why);
        if (rc == 1)
            return 1;
        jpt__walk_free(s->walk);
        s->walk = NULL;
        if (rc < 0)
            return jpt__err(err, rc, "%s", rc == JPT_ERR_NOMEM ? "out of memory" : why.text);
        /* One rename each: no slice needed. */
        for (size_t i = 0; i < s->doomed.n; i++)
            if ((rc = move_aside(s, s->doomed.v[i])) < 0)
                return jpt__err(err, rc, "out of memory");
    }
    return 0;
}

const char *jpt__repo_sweep_moved(const jpt__repo_sweep *s, size_t *n, bool *failed)
{
    *n = s->n_moved;
    *failed = s->failed;
    return s->moved.data != NULL ? s->moved.data : "";
}

void jpt__repo_sweep_free(jpt__repo_sweep *s)
{
    if (s == NULL)
        return;
    jpt__walk_free(s->walk);
    jpt__pathv_free(&s->doomed);
    jpt__buf_free(&s->moved);
    jpt__repos_unref(s->r);
    jpt__free(s);
}
