/* env-dump: shows what a spawned child inherited, to test the environment
 * policy, the working directory and fd hygiene (only 0-2 open).
 * Output: "VAR=value" or "VAR is unset" per argument, then
 * "cwd=<path>" and "fds=<open fds, ascending, space-separated>".
 *
 * Usage: env-dump [VAR...] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { MAX_FDS = 1024 };

/* In a sanitizer build, LeakSanitizer's check at exit reads /proc and
 * uses ptrace, which the OS sandbox of a process.run child denies. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

int main(int argc, char **argv)
{
    char cwd[PATH_MAX];
    int fds[MAX_FDS];
    size_t count = 0;

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

    /* By asking each fd, not by /proc/self/fd, which a sandboxed child
     * cannot read. */
    for (int fd = 0; fd < MAX_FDS; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            fds[count++] = fd;
    fputs("fds=", stdout);
    for (size_t i = 0; i < count; i++)
        printf("%s%d", i == 0 ? "" : " ", fds[i]);
    putchar('\n');
    return 0;
}
