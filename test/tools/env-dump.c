/* env-dump: shows what a spawned child inherited, to test the environment
 * policy, the working directory and fd hygiene (only 0-2 open).
 * Output: "VAR=value" or "VAR is unset" per argument, then
 * "cwd=<path>" and "fds=<open fds, ascending, space-separated>".
 *
 * Usage: env-dump [VAR...] */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { MAX_FDS = 1024 };

static int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    char cwd[PATH_MAX];
    int fds[MAX_FDS];
    size_t count = 0;
    struct dirent *entry;
    DIR *dir;

    for (int i = 1; i < argc; i++) {
        const char *value = getenv(argv[i]);
        if (value != NULL)
            printf("%s=%s\n", argv[i], value);
        else
            printf("%s is unset\n", argv[i]);
    }

    if (getcwd(cwd, sizeof cwd) == NULL) {
        perror("env-dump: getcwd");
        return 1;
    }
    printf("cwd=%s\n", cwd);

    dir = opendir("/proc/self/fd");
    if (dir == NULL) {
        perror("env-dump: /proc/self/fd");
        return 1;
    }
    while ((entry = readdir(dir)) != NULL && count < MAX_FDS) {
        int fd;
        if (entry->d_name[0] == '.')
            continue;
        fd = atoi(entry->d_name);
        if (fd != dirfd(dir))
            fds[count++] = fd;
    }
    closedir(dir);
    qsort(fds, count, sizeof fds[0], compare_ints);

    fputs("fds=", stdout);
    for (size_t i = 0; i < count; i++)
        printf("%s%d", i == 0 ? "" : " ", fds[i]);
    putchar('\n');
    return 0;
}
