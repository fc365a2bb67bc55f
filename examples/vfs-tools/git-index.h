/* Whether a file of the workspace has uncommitted changes, found through
 * the VFS protocol alone: modify_file reads git's index (.git/index, which
 * no sensitive-path pattern covers, unlike .git/config and .git/hooks/)
 * with fs.read, like any file, and compares the blob it names with the
 * file's content.
 *
 * "Uncommitted changes" here means content that git could not give back:
 * the file is tracked, and its bytes differ from the version in the index
 * (what `git diff` shows: git has no copy of them), or it has unresolved
 * merge conflicts. Changes staged with `git add` are held by git (`git
 * checkout -- FILE` restores them), so they alone do not count; neither
 * does an untracked file, nor a workspace that is not a repository. The
 * workspace root must be the repository's top level. The file's bytes are
 * compared as they are, without git's filters (autocrlf, clean filters):
 * a repository that uses them may see changes where git sees none, which
 * only costs a question. */
#ifndef VFS_TOOLS_GIT_INDEX_H
#define VFS_TOOLS_GIT_INDEX_H

#include <stddef.h>

#include <jptool/vfs_tool.h>

typedef enum git_status {
    GIT_NO_REPOSITORY, /* no .git at the workspace root */
    GIT_UNTRACKED,     /* not in the index */
    GIT_CLEAN,         /* the same bytes as the index's blob */
    GIT_CHANGED,       /* tracked, and different from the index's blob */
    GIT_UNMERGED,      /* the index holds conflict stages for it */
    GIT_UNKNOWN,       /* cannot tell: `why` says why */
} git_status;

/* What the index says of `path` (normalised as vt_normal_path makes it)
 * whose current content is `data` (`len` bytes). For GIT_UNKNOWN, `why`
 * (`n` bytes) receives a sentence. Every access is a request to the host. */
git_status git_file_status(jpt_vfs_tool *t, const char *path, const char *data, size_t len,
                           char *why, size_t n);

#endif
