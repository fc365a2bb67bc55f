/* escape: a tool whose descendant gets away from its session and process
 * group the way a daemon does. It forks; the child forks again and exits;
 * the grandchild calls setsid(), lets go of the tool's stdio, opens DIR/alive
 * for writing if it exists (a FIFO whose reader sees the end of file when
 * the grandchild is gone), writes its pid to DIR/pid (whole, by rename) and
 * sleeps 300 seconds. The tool waits for the pid to be written, prints
 * "ready", and then exits, or with "stay" waits for a signal.
 *
 * Usage: escape DIR [stay]
 * jptool's containment must kill the grandchild when the tool's handle
 * ends; this program deliberately leaves it running. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void grandchild(const char *dir, int ready)
{
    char path[4096], tmp[4096], pid[32];
    int null = open("/dev/null", O_RDWR);

    setsid();
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    close(null);
    /* Held open until this process is gone. */
    snprintf(path, sizeof(path), "%s/alive", dir);
    if (open(path, O_WRONLY) < 0 && errno != ENOENT)
        _exit(1);
    snprintf(path, sizeof(path), "%s/pid", dir);
    snprintf(tmp, sizeof(tmp), "%s/pid.tmp", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    if (fd < 0 || write(fd, pid, (size_t)n) != n || close(fd) < 0 || rename(tmp, path) < 0)
        _exit(1);
    (void)!write(ready, "x", 1);
    close(ready);
    struct timespec left = {.tv_sec = 300};
    while (nanosleep(&left, &left) < 0 && errno == EINTR)
        ;
    _exit(0);
}

int main(int argc, char **argv)
{
    int ready[2];
    char byte;

    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "stay") != 0)) {
        fputs("usage: escape DIR [stay]\n", stderr);
        return 2;
    }
    if (pipe(ready) < 0) {
        perror("escape: pipe");
        return 1;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("escape: fork");
        return 1;
    }
    if (child == 0) {
        close(ready[0]);
        pid_t pid = fork();
        if (pid == 0)
            grandchild(argv[1], ready[1]);
        _exit(pid < 0);
    }
    close(ready[1]);
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        read(ready[0], &byte, 1) != 1) {
        fputs("escape: the grandchild did not start\n", stderr);
        return 1;
    }
    puts("ready");
    fflush(stdout);
    if (argc == 3)
        for (;;)
            pause();
    return 0;
}
