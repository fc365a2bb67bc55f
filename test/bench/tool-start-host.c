/* tool-start-host: the least a host does for one call of test/tools/vfs-read,
 * so that a profiler sees the tool process's own start-up (the loader,
 * relocations, connecting) and little else: it starts the tool with pipes,
 * writes `init`, answers the one request whatever it is with an fs.read
 * result of 4 KiB of letters, reads until the tool closes its stdout, and
 * reaps it. It links the C library alone.
 *
 *   perf stat -r 500 tool-start-host build/test/tools/vfs-read
 *   valgrind --tool=callgrind --trace-children=yes tool-start-host TOOL
 *
 * Exits 0 when the tool exited 0 after sending a result, else 1 with a
 * message. usage: tool-start-host TOOL [ARG...] (the tool gets "file.txt"
 * when no ARG is given). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILE_SIZE 4096

static const char init[] = "{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{"
                           "\"protocol_version\":\"0.1.0\",\"tool\":{\"name\":\"t\","
                           "\"arguments\":{}}}}\n";

static int fail(const char *what)
{
    perror(what);
    return 1;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int to_tool[2], from_tool[2], status;
    char answer[FILE_SIZE + 128], got[65536];
    size_t have = 0;
    bool answered = false;

    if (argc < 2) {
        fprintf(stderr, "usage: tool-start-host TOOL [ARG...]\n");
        return 2;
    }
    if (pipe2(to_tool, O_CLOEXEC) < 0 || pipe2(from_tool, O_CLOEXEC) < 0)
        return fail("pipe2");
    pid_t pid = fork();
    if (pid < 0)
        return fail("fork");
    if (pid == 0) {
        char *file_args[] = {argv[1], "file.txt", NULL};
        dup2(to_tool[0], 0);
        dup2(from_tool[1], 1);
        execv(argv[1], argc > 2 ? argv + 1 : file_args);
        _exit(127);
    }
    close(to_tool[0]);
    close(from_tool[1]);

    int n = snprintf(answer, sizeof(answer),
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"size\":%d,\"content\":\"",
                     FILE_SIZE);
    for (int i = 0; i < FILE_SIZE; i++)
        answer[n++] = (char)('a' + i % 26);
    n += snprintf(answer + n, sizeof(answer) - (size_t)n, "\"}}\n");
    if (write_all(to_tool[1], init, sizeof(init) - 1) < 0)
        return fail("write init");
    for (;;) {
        ssize_t r = read(from_tool[0], got + have, sizeof(got) - have);
        if (r < 0)
            return fail("read");
        if (r == 0)
            break;
        have += (size_t)r;
        if (!answered && memchr(got, '\n', have) != NULL) {
            if (write_all(to_tool[1], answer, (size_t)n) < 0)
                return fail("write the answer");
            answered = true;
        }
        if (have == sizeof(got))
            have = 0;
    }
    close(to_tool[1]);
    if (waitpid(pid, &status, 0) < 0)
        return fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !answered) {
        fprintf(stderr, "tool-start-host: the tool did not end with a result (status %d)\n",
                status);
        return 1;
    }
    return 0;
}
