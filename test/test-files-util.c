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

char *fu_read(const char *dir, const char *rel, size_t *n)
{
    FILE *fp = fopen(fu_path(dir, rel), "rb");
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
