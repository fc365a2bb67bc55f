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
 * path it took. */
int jpt__dir_resolve(jpt__dirfs *d, const char *path, int oflags, unsigned how,
                     char *resolved);

/* Opens the parent directory of `path` (not ".") beneath the root,
 * following symlinks, and creating missing directories (0777 less the
 * umask) with `create`; `*name` points at the last component inside
 * `path`. `resolved` (may be NULL) receives the parent's root-relative
 * path. Returns the parent's fd (O_PATH) or -errno as jpt__dir_resolve(). */
int jpt__dir_parent(jpt__dirfs *d, const char *path, bool create, const char **name,
                    char *resolved);

#endif /* JPT_LIB_FILES_DIR_H */
