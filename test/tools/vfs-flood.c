/* vfs-flood: a VFS tool that writes COUNT requests of METHOD with PARAMS
 * (JSON text) and never reads its stdin: not the init, not one answer.
 * The host must keep its memory bounded and stop it (vfs.h, "Bounds").
 * With "drain", a child process reads and drops all it is sent instead,
 * so that only the requests in flight can hold the host back.
 *
 * Usage: vfs-flood COUNT METHOD PARAMS [drain]
 * Request ids are 1..COUNT. After the last it waits to be killed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 4 && !(argc == 5 && strcmp(argv[4], "drain") == 0)) {
        fputs("usage: vfs-flood COUNT METHOD PARAMS [drain]\n", stderr);
        return 2;
    }
    if (argc == 5) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            char buf[65536];
            while (read(0, buf, sizeof(buf)) > 0)
                ;
            _exit(0);
        }
    }
    long count = strtol(argv[1], NULL, 10);
    for (long i = 1; i <= count; i++)
        if (printf("{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"%s\",\"params\":%s}\n", i,
                   argv[2], argv[3]) < 0)
            return 1;
    if (fflush(stdout) != 0)
        return 1;
    for (;;)
        pause();
}
