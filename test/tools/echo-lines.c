/* echo-lines: an interactive line-echo program for stateful and PTY tests.
 * Prompts with "> ", echoes each stdin line as "echo: <line>", says "bye" and
 * exits on "quit", exits silently on EOF. Every prompt is flushed so a reader
 * sees it without a newline. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;

    fputs("ready\n> ", stdout);
    fflush(stdout);
    while ((len = getline(&line, &cap, stdin)) != -1) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (strcmp(line, "quit") == 0) {
            fputs("bye\n", stdout);
            break;
        }
        printf("echo: %s\n> ", line);
        fflush(stdout);
    }
    free(line);
    return 0;
}
