/* File trees for the ProjectFiles suites; see test-files-util.h. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test-files-util.h"

char *fu_tempdir(void)
{
    char *dir = strdup("/tmp/jpt-files-XXXXXX");

    assert_non_null(dir);
    assert_non_null(mkdtemp(dir));
    return dir;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        chmod(path, 0700), rmdir(path);
    else
        unlink(path);
    return 0;
}

void fu_rmtree(const char *path)
{
    nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fu_path(const char *dir, const char *rel)
{
    static char bufs[4][8192];
    static int next;
    char *b = bufs[next++ % 4];

    snprintf(b, sizeof(bufs[0]), "%s/%s", dir, rel);
    return b;
}

static void make_parents(const char *dir, const char *rel)
{
    char path[8192];

    if (mkdir(dir, 0777) < 0 && errno != EEXIST)
        fail_msg("mkdir %s: %s", dir, strerror(errno));
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        if (mkdir(path, 0777) < 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", path, strerror(errno));
        *p = '/';
    }
}

void fu_write_n(const char *dir, const char *rel, const void *data, size_t n)
{
    make_parents(dir, rel);
    FILE *fp = fopen(fu_path(dir, rel), "wb");
    if (fp == NULL)
        fail_msg("fopen %s/%s: %s", dir, rel, strerror(errno));
    assert_int_equal(fwrite(data, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

void fu_write(const char *dir, const char *rel, const char *content)
{
    fu_write_n(dir, rel, content, strlen(content));
}

static char *read_path(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    char *data = NULL;
    size_t len = 0, cap = 0;

    if (fp == NULL)
        return NULL;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = (cap + 4096) * 2;
            data = realloc(data, cap);
            assert_non_null(data);
        }
        size_t got = fread(data + len, 1, 4096, fp);
        len += got;
        if (got == 0)
            break;
    }
    fclose(fp);
    data[len] = '\0';
    if (n != NULL)
        *n = len;
    return data;
}

char *fu_read(const char *dir, const char *rel, size_t *n)
{
    return read_path(fu_path(dir, rel), n);
}

void fu_mkdir(const char *dir, const char *rel)
{
    make_parents(dir, rel);
    if (mkdir(fu_path(dir, rel), 0777) < 0 && errno != EEXIST)
        fail_msg("mkdir %s/%s: %s", dir, rel, strerror(errno));
}

void fu_symlink(const char *dir, const char *rel, const char *target)
{
    make_parents(dir, rel);
    if (symlink(target, fu_path(dir, rel)) < 0)
        fail_msg("symlink %s/%s: %s", dir, rel, strerror(errno));
}

int fu_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* nftw's callback has no user data: the snapshot being taken. */
static struct {
    char **lines;
    size_t n, cap, root_len;
} snap;

static int snap_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    char *line = NULL, *content = NULL, target[8192] = "";

    (void)type;
    (void)ftw;
    if (S_ISREG(st->st_mode))
        content = read_path(path, NULL);
    if (S_ISLNK(st->st_mode)) {
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        target[n > 0 ? n : 0] = '\0';
    }
    assert_true(asprintf(&line, "%s %o %s%s", path + snap.root_len, (unsigned)st->st_mode,
                         content != NULL ? content : "", target) > 0);
    free(content);
    if (snap.n == snap.cap) {
        snap.cap = snap.cap * 2 + 16;
        assert_non_null(snap.lines = realloc(snap.lines, snap.cap * sizeof(*snap.lines)));
    }
    snap.lines[snap.n++] = line;
    return 0;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *fu_snapshot(const char *dir)
{
    size_t len = 1;
    char *out;

    snap.n = 0;
    snap.root_len = strlen(dir);
    assert_int_equal(nftw(dir, snap_one, 16, FTW_PHYS), 0);
    qsort(snap.lines, snap.n, sizeof(*snap.lines), by_text);
    for (size_t i = 0; i < snap.n; i++)
        len += strlen(snap.lines[i]) + 1;
    assert_non_null(out = malloc(len));
    out[0] = '\0';
    for (size_t i = 0; i < snap.n; i++) {
        strcat(out, snap.lines[i]);
        strcat(out, "\n");
        free(snap.lines[i]);
    }
    free(snap.lines);
    snap.lines = NULL;
    snap.cap = 0;
    return out;
}

void fu_workspace(const char *name, char root[200], char outside[256])
{
    snprintf(root, 200, "/tmp/jpt-%s-%d", name, (int)getpid());
    snprintf(outside, 256, "%s-outside", root);
    fu_workspace_remove(root, outside);
    fu_write(root, "hello.txt", "hello\n");
    fu_write(root, "src/main.c", "int main(void) { return 0; }\n");
    fu_write(root, ".env", "TOKEN=secret\n");
    fu_write(outside, "secret.txt", "OUTSIDE\n");
}

void fu_workspace_remove(const char *root, const char *outside)
{
    fu_rmtree(root);
    fu_rmtree(outside);
}

int fu_method(const char *name)
{
    jpt__vfs_span span = {name, strlen(name)};
    int m = jpt__vfs_method_find(span);

    assert_true(m >= JPT__VFS_FS_READ && m <= JPT__VFS_FS_GREP);
    return m;
}

int fu_submit(jpt_files *f, const char *method, const char *params_text,
              const jpt__files_opts *opts, jpt__files_done_fn done, void *ud,
              jpt__files_call **pending)
{
    char *text = strdup(params_text), why[256];
    jpt__vfs_span span = {text, strlen(text)};
    jpt__vfs_params p;
    jpt__json_error jerr;
    void *arrays = NULL;
    int m = fu_method(method);

    assert_non_null(text);
    assert_int_equal(jpt__json_validate(span.p, span.n, &jerr), JPT_OK);
    if (jpt__vfs_params_decode(m, span, &p, &arrays, why, sizeof(why)) != JPT_OK)
        fail_msg("%s %s: %s", method, params_text, why);
    int rc = jpt__files_submit(f, m, &p, opts, done, ud, pending);
    jpt__free(arrays);
    free(text);
    return rc;
}

char *fu_result_text(int method, const jpt__vfs_fs_result *r)
{
    jpt__buf b = JPT__BUF_INIT;

    assert_int_equal(jpt__vfs_put_fs_result(&b, method, r), JPT_OK);
    char *text = strndup(b.data, b.len);
    jpt__buf_free(&b);
    return text;
}
