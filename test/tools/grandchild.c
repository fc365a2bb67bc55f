/* grandchild: a misbehaving tool whose direct child exits at once while a
 * forked grandchild keeps the inherited stdout pipe open for 30 seconds.
 * jptool must complete the call after its drain window instead of waiting
 * for EOF, and kill the grandchild with the process group.
 * This program deliberately leaves the grandchild running. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
    pid_t pid = fork();

    if (pid < 0) {
        perror("grandchild: fork");
        return 1;
    }
    if (pid == 0) {
        struct timespec left = { .tv_sec = 30 };
        while (nanosleep(&left, &left) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    fputs("parent done\n", stdout);
    fflush(stdout);
    return 0;
}
