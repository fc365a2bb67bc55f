/* The directory backend's resolution (resolve.c), shared with its methods
 * (dir.c). Never installed. */
#ifndef JPT_LIB_FILES_DIR_H
#define JPT_LIB_FILES_DIR_H

#include "files/files.h"

typedef struct jpt__dirfs {
    int root_fd;
    bool walk; /* no openat2 (ENOSYS), or forced by JPT__FILES_FORCE_WALK */
} jpt__dirfs;

/* How jpt__dir_resolve() treats symlinks. */
#define JPT__RESOLVE_FOLLOW 0x1u      /* follow a symlink in the last component */
#define JPT__RESOLVE_NO_SYMLINKS 0x2u /* refuse every symlink (ELOOP) */
#define JPT__RESOLVE_KEEP 0x4u        /* keep the stop's directory open (stop->fd) */

/* Where a resolution stopped when its path is not there: a name on the way
 * is missing (ENOENT) or is not a directory (ENOTDIR). `path` is the
 * root-relative path it would be — the directories resolved so far (their
 * symlinks followed), then the rest of the path as written — so that the
 * access policy judges a path that is not there as it judges one that is,
 * and a refused name answers the same whether or not it exists (issue 15
 * §2). A write plans with it what it will create (jpt__dir_plan). */
typedef struct jpt__dir_stop {
    int err;           /* ENOENT or ENOTDIR; 0: the path is all there */
    char path[JPT__FILES_PATH_MAX + 1];
    size_t exists_len; /* path[0..exists_len) is a directory that is there
                          (0: the root) */
    size_t miss_len;   /* path[0..miss_len) ends with the name that is missing
                          or not a directory */
    bool linked;       /* that name came from a symlink's target, or the rest
                          holds "." or ".." (from one): nothing may be created
                          there, and `path` ends with that name */
    int fd;            /* with JPT__RESOLVE_KEEP: the directory
                          path[0..exists_len), O_PATH, the caller's to close;
                          else -1 */
} jpt__dir_stop;

/* Opens `path` beneath the root with open(2) flags `oflags` (O_CLOEXEC is
 * added; O_NOFOLLOW unless JPT__RESOLVE_FOLLOW). `path` is a normal path
 * (path.c) or one built from a symlink's target, which may hold "..": a
 * ".." never climbs above the root, and an absolute target never
 * resolves. Returns the fd, or -errno: EXDEV (the path leaves the root),
 * ELOOP (a symlink where none may be, or too many), ENOENT, ENOTDIR,
 * ENAMETOOLONG, EAGAIN (the tree kept changing under the walk), and
 * whatever open(2) says. With `resolved` (JPT__FILES_PATH_MAX + 1 bytes)
 * it also gives the root-relative path of what it opened: a normal path
 * that meets no symlink is that path (one openat2 with RESOLVE_NO_SYMLINKS
 * shows it); any other resolves by the component walk, which knows the
 * path it took. With `stop` (which needs `resolved`), a resolution that
 * fails with ENOENT or ENOTDIR says where (stop->err is 0 otherwise).
 * The walk is a loop over the components: no recursion, whatever the
 * depth of the path. */
int jpt__dir_resolve(jpt__dirfs *d, const char *path, int oflags, unsigned how,
                     char *resolved, jpt__dir_stop *stop);

/* Opens the parent directory of `path` (not ".") beneath the root,
 * following symlinks; `*name` points at the last component inside
 * `path`. `resolved` and `stop` (may be NULL) as jpt__dir_resolve() says,
 * for the parent. Returns the parent's fd (O_PATH) or -errno as
 * jpt__dir_resolve(). */
int jpt__dir_parent(jpt__dirfs *d, const char *path, const char **name, char *resolved,
                    jpt__dir_stop *stop);

/* Plans a request that creates the missing directories above what it
 * writes (fs.write, fs.rename's target; D11), creating nothing yet: the
 * policy is asked about every directory it would create and about the
 * target before anything changes (issue 15 §2). Resolves the parent of
 * `path` (not ".") as jpt__dir_parent() does into `plan`: plan->err 0, the
 * parent is there (plan->path is its resolved path, plan->fd its fd);
 * ENOENT, the directories of plan->path beyond exists_len are missing
 * (plan->fd is the last one that is there; with plan->linked, the missing
 * one is a symlink's target, which is not created); ENOTDIR, a name on the
 * way is not a directory (plan->path as if it were missing). Returns 0, or
 * -errno as jpt__dir_resolve() for any other failure (nothing open then).
 * Close plan->fd after. */
int jpt__dir_plan(jpt__dirfs *d, const char *path, const char **name, jpt__dir_stop *plan);

/* Creates the directories a plan (plan->err ENOENT, not linked) lacks, one
 * at a time beneath plan->fd (0777 less the umask), never following a
 * symlink: a name that something else took meanwhile must be a directory.
 * Returns the fd (O_PATH) of the last one, or -errno: ENOTDIR (a name on
 * the way is not a directory), EAGAIN (a symlink took a name), and what
 * mkdirat(2) says. Directories made before a failure stay. */
int jpt__dir_make(const jpt__dir_stop *plan);

#endif /* JPT_LIB_FILES_DIR_H */
