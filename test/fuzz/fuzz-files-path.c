/* libFuzzer harness for ProjectFiles' path handling: any bytes (up to a
 * NUL) as a path, read, listed and checked on a directory that holds
 * symlinks leading outside it (relative, absolute, through "..", a loop),
 * by openat2 and by the component walk, and written and read back on the
 * memory backend. Nothing outside the root may ever be read or listed. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jptool/jptool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* lib/files/files.h: JPT__FILES_FORCE_WALK, the walk kernels without
 * openat2 take. */
#define FORCE_WALK 0x80000000u

static jpt_files *dirs[2], *mem;
static char base[] = "/tmp/jpt-fuzz-XXXXXX";

static void put(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");

    if (fp == NULL || fputs(text, fp) < 0 || fclose(fp) != 0)
        abort();
}

static void setup(void)
{
    char path[4096];

    if (mkdtemp(base) == NULL)
        abort();
    snprintf(path, sizeof(path), "%s/outside", base);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/outside/secret", base);
    put(path, "SECRET-OUTSIDE");
    snprintf(path, sizeof(path), "%s/root", base);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/root/a", base);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/root/a/b.txt", base);
    put(path, "inside");
    static const char *const links[][2] = {
        {"up", ".."}, {"out", "../outside"}, {"a/deep", "../../outside/secret"},
        {"loop", "loop"}, {"self", "."}, {"proc", "/proc/self/root"},
    };
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        snprintf(path, sizeof(path), "%s/root/%s", base, links[i][0]);
        if (symlink(links[i][1], path) < 0)
            abort();
    }
    snprintf(path, sizeof(path), "%s/root/abs", base);
    char target[4096];
    snprintf(target, sizeof(target), "%s/outside/secret", base);
    if (symlink(target, path) < 0)
        abort();
    snprintf(path, sizeof(path), "%s/root", base);
    if (jpt_files_open_dir(path, 0, &dirs[0]) != JPT_OK ||
        jpt_files_open_dir(path, FORCE_WALK, &dirs[1]) != JPT_OK ||
        jpt_files_new_memory(&mem) != JPT_OK)
        abort();
}

static void check_dir(jpt_files *f, const char *path)
{
    char *data = NULL;
    size_t len, n;
    jpt_files_entry *e = NULL;
    int exists;

    if (jpt_files_read(f, path, 0, &data, &len, NULL) == JPT_OK &&
        memmem(data, len, "SECRET", 6) != NULL)
        abort(); /* read outside the root */
    jpt_free(data);
    if (jpt_files_list_dir(f, path, &e, &n) == JPT_OK)
        for (size_t i = 0; i < n; i++)
            if (strcmp(e[i].name, "secret") == 0 || strcmp(e[i].name, "root") == 0)
                abort(); /* listed outside the root */
    jpt_free(e);
    jpt_files_exists(f, path, &exists);
    /* A message names the path requested, which may be anything. */
    if (strstr(jpt_files_errmsg(f), base) != NULL && strstr(path, "jpt-fuzz-") == NULL)
        abort(); /* a message showed the host's path */
}

static int has_dotdot(const char *path)
{
    for (const char *p = path; *p != '\0';) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return 1;
        p += n + (p[n] == '/');
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *path = malloc(size + 1);
    char *back = NULL;
    size_t len;

    if (path == NULL)
        return 0;
    if (dirs[0] == NULL)
        setup();
    memcpy(path, data, size);
    path[size] = '\0';
    check_dir(dirs[0], path);
    check_dir(dirs[1], path);
    /* The memory backend: what is written reads back, and the two path
     * verdicts agree. */
    int w = jpt_files_write(mem, path, "x", 1);
    if (w == JPT_OK && (jpt_files_read(mem, path, 0, &back, &len, NULL) != JPT_OK || len != 1))
        abort();
    jpt_free(back);
    if (w == JPT_OK && (has_dotdot(path) || path[0] == '/'))
        abort(); /* the rules let an escape through */
    free(path);
    return 0;
}
