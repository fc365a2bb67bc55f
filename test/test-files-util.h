/* What the ProjectFiles suites share: real file trees in temporary
 * directories, made and read back with plain system calls. Every helper
 * fails the running test on an error. */
#ifndef JPT_TEST_FILES_UTIL_H
#define JPT_TEST_FILES_UTIL_H

#include <stddef.h>

#include "test-util.h"
#include "common/json.h"
#include "files/files.h"

/* A new directory /tmp/jpt-files-XXXXXX; free() the path. */
char *fu_tempdir(void);
/* Removes a tree without following symlinks. */
void fu_rmtree(const char *path);
/* "<dir>/<rel>" in a static buffer of four (the fifth call reuses the first). */
const char *fu_path(const char *dir, const char *rel);
/* Writes a file, creating its parents. */
void fu_write(const char *dir, const char *rel, const char *content);
void fu_write_n(const char *dir, const char *rel, const void *data, size_t n);
/* The content of a file (NUL-terminated; free()), or NULL if it is missing. */
char *fu_read(const char *dir, const char *rel, size_t *n);
void fu_mkdir(const char *dir, const char *rel);
void fu_symlink(const char *dir, const char *rel, const char *target);
/* Everything under `dir`, as text to compare: one line per entry (its
 * path below `dir`, mode, and a file's content or a symlink's target),
 * sorted (free()). */
char *fu_snapshot(const char *dir);
/* A VFS suite's workspace, made afresh: `root` ("/tmp/jpt-<name>-<pid>",
 * at most 200 bytes) holding hello.txt ("hello\n"), src/main.c and .env
 * ("TOKEN=secret\n"), and beside it `outside` ("<root>-outside", 256
 * bytes) holding secret.txt ("OUTSIDE\n"), which no tool may reach.
 * fu_workspace_remove() removes both. */
void fu_workspace(const char *name, char root[200], char outside[256]);
void fu_workspace_remove(const char *root, const char *outside);
/* How many entries a directory has (without "." and ".."). */
int fu_count_entries(const char *dir);

/* Submits fs.* method `method` with its params as the JSON text a tool
 * would send, decoded as the VFS engine decodes them (asserting they
 * decode); the params live for the call only, as the engine promises. */
int fu_submit(jpt_files *f, const char *method, const char *params_text,
              const jpt__files_opts *opts, jpt__files_done_fn done, void *ud,
              jpt__files_call **pending);
/* A typed result of fs.* method `method` (JPT__VFS_FS_*) as the JSON text
 * the engine would send (free()). */
char *fu_result_text(int method, const jpt__vfs_fs_result *r);
/* The JPT__VFS_FS_* of a method's name. */
int fu_method(const char *name);

#endif
