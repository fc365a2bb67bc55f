/* Reading git's index through the VFS protocol; see git-index.h. The
 * format is git's Documentation/gitformat-index.txt: versions 2, 3 and 4
 * (4 compresses each path against the one before), SHA-1 object names. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "git-index.h"
#include "sha1.h"
#include "tool-util.h"

#define HASH_LEN 20
#define HEADER_LEN 12
/* ctime, mtime (8 bytes each), dev, ino, mode, uid, gid, size (4 each),
 * the object name, and the flags. */
#define ENTRY_FIXED_LEN (40 + HASH_LEN + 2)
#define FLAG_EXTENDED 0x4000u
#define MODE_TYPE 0170000u
#define MODE_REGULAR 0100000u

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t be16(const unsigned char *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* git's name for a blob of these bytes. */
static void blob_name(const char *data, size_t len, unsigned char out[HASH_LEN])
{
    char header[32];
    int n = snprintf(header, sizeof(header), "blob %zu", len);
    sha1_ctx c;

    sha1_init(&c);
    sha1_update(&c, header, (size_t)n + 1); /* with its NUL */
    sha1_update(&c, data, len);
    sha1_final(&c, out);
}

/* The index ends in the SHA-1 of what precedes it, or in zeros when git
 * was told not to compute it (index.skipHash). Anything else: another
 * hash (a SHA-256 repository) or a torn file. */
static bool checksum_ok(const unsigned char *idx, size_t len)
{
    static const unsigned char zeros[HASH_LEN];
    unsigned char sum[HASH_LEN];
    sha1_ctx c;

    if (memcmp(idx + len - HASH_LEN, zeros, HASH_LEN) == 0)
        return true;
    sha1_init(&c);
    sha1_update(&c, idx, len - HASH_LEN);
    sha1_final(&c, sum);
    return memcmp(sum, idx + len - HASH_LEN, HASH_LEN) == 0;
}

/* What one search of the index found for the path. */
typedef struct found {
    bool stage0, conflict;
    unsigned char name[HASH_LEN];
    uint32_t mode;
} found;

/* Version 4's path prefix: git's varint (each continuation adds one). */
static bool varint(const unsigned char *idx, size_t end, size_t *off, uint64_t *out)
{
    uint64_t v;
    unsigned char c;

    if (*off >= end)
        return false;
    c = idx[(*off)++];
    v = c & 127;
    while (c & 128) {
        if (*off >= end || v > (UINT64_MAX >> 8))
            return false;
        c = idx[(*off)++];
        v = ((v + 1) << 7) | (c & 127);
    }
    *out = v;
    return true;
}

/* Walks the entries (and the extensions after them): NULL, or what is
 * wrong with the file. */
static const char *walk(const unsigned char *idx, size_t len, const char *path, found *f)
{
    size_t end = len - HASH_LEN, off = HEADER_LEN;
    uint32_t version = be32(idx + 4), count = be32(idx + 8);
    vt_text name = {0};
    const char *bad = NULL;

    if (version < 2 || version > 4)
        return "its version is not 2, 3 or 4";
    for (uint32_t i = 0; i < count && bad == NULL; i++) {
        size_t entry = off, fixed = ENTRY_FIXED_LEN;
        if (off + fixed > end) {
            bad = "an entry runs past its end";
            break;
        }
        uint16_t flags = be16(idx + off + ENTRY_FIXED_LEN - 2);
        if (flags & FLAG_EXTENDED)
            fixed += 2;
        size_t p = off + fixed;
        if (((flags & FLAG_EXTENDED) && version < 3) || p > end) {
            bad = "an entry's flags are not valid";
            break;
        }
        uint64_t strip = 0;
        if (version == 4 && (!varint(idx, end, &p, &strip) || strip > name.len)) {
            bad = "an entry's path prefix is not valid";
            break;
        }
        const unsigned char *nul = memchr(idx + p, '\0', end - p);
        if (nul == NULL) {
            bad = "an entry's path is not terminated";
            break;
        }
        size_t suffix = (size_t)(nul - (idx + p));
        if (version == 4) {
            name.len -= (size_t)strip;
            off = p + suffix + 1;
        } else {
            name.len = 0;
            off = entry + ((fixed + suffix + 8) & ~(size_t)7);
        }
        vt_append(&name, (const char *)idx + p, suffix);
        if (off > end)
            bad = "an entry's padding runs past its end";
        else if (strcmp(name.p, path) == 0) {
            if (((flags >> 12) & 3) != 0) /* stages 1-3: a conflict */
                f->conflict = true;
            else {
                f->stage0 = true;
                memcpy(f->name, idx + entry + 40, HASH_LEN);
                f->mode = be32(idx + entry + 24);
            }
        }
    }
    vt_text_free(&name);
    /* A split index keeps most entries in another file (sharedindex.*). */
    while (bad == NULL && off + 8 <= end) {
        if (memcmp(idx + off, "link", 4) == 0)
            return "it is split (core.splitIndex), and this tool reads only whole indexes";
        off += 8 + (size_t)be32(idx + off + 4);
    }
    return bad;
}

git_status git_file_status(jpt_vfs_tool *t, const char *path, const char *data, size_t len,
                           char *why, size_t n)
{
    int kind = 0;
    char *idx = NULL;
    size_t ilen = 0;

    if (jpt_vfs_tool_metadata(t, ".git", &kind, NULL) != JPT_OK) {
        if (jpt_vfs_tool_error_code(t) == JPT_VFS_E_NOT_FOUND)
            return GIT_NO_REPOSITORY;
        snprintf(why, n, "looking for .git: %s", jpt_vfs_tool_errmsg(t));
        return GIT_UNKNOWN;
    }
    if (kind != JPT_VFS_TOOL_DIR) {
        snprintf(why, n, "'.git' is not a directory (a linked worktree or a submodule, whose "
                         "index lies outside the workspace)");
        return GIT_UNKNOWN;
    }
    if (jpt_vfs_tool_read(t, ".git/index", &idx, &ilen) != JPT_OK) {
        /* A repository where nothing was ever added has no index. */
        if (jpt_vfs_tool_error_code(t) == JPT_VFS_E_NOT_FOUND)
            return GIT_UNTRACKED;
        snprintf(why, n, "reading git's index: %s", jpt_vfs_tool_errmsg(t));
        return GIT_UNKNOWN;
    }

    const unsigned char *u = (const unsigned char *)idx;
    const char *bad = NULL;
    found f = {0};
    if (ilen < HEADER_LEN + HASH_LEN || memcmp(u, "DIRC", 4) != 0)
        bad = "it does not start as a git index does";
    else if (!checksum_ok(u, ilen))
        bad = "it does not end in the SHA-1 of its content (a SHA-256 repository, which this "
              "tool does not read, or a damaged file)";
    else
        bad = walk(u, ilen, path, &f);
    jpt_free(idx);
    if (bad != NULL) {
        snprintf(why, n, "git's index (.git/index) cannot be read: %s", bad);
        return GIT_UNKNOWN;
    }
    if (f.conflict)
        return GIT_UNMERGED;
    if (!f.stage0)
        return GIT_UNTRACKED;
    if ((f.mode & MODE_TYPE) != MODE_REGULAR) {
        snprintf(why, n, "git tracks '%s' as a symlink or a submodule, not as a file", path);
        return GIT_UNKNOWN;
    }
    unsigned char current[HASH_LEN];
    blob_name(data, len, current);
    return memcmp(current, f.name, HASH_LEN) == 0 ? GIT_CLEAN : GIT_CHANGED;
}
