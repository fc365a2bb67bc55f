/* pieces: writes its output in the pieces and at the moments a test
 * chooses, so that a test can show that what a tool writes is read the same
 * however the bytes arrive (issue 16: a state line split across reads, in
 * one read with text, alone). Each argument is one step:
 *   out:TEXT    one write(2) of TEXT to stdout
 *   err:TEXT    one write(2) of TEXT to stderr
 *   bytes:TEXT  TEXT to stdout, one byte per write(2)
 *   sleep:MS    sleeps MS milliseconds
 *   read        waits for a line on stdin (the host's next input)
 *   echo        reads a line on stdin and writes it back as "got: LINE\n"
 *   exit:N      exits with status N
 * In TEXT, "\n" stands for a newline, "\r" for a carriage return and "\\"
 * for a backslash. After the last step it waits for the end of stdin, then
 * exits 0.
 *
 * Usage: pieces STEP... */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            exit(3);
        p += k;
        n -= (size_t)k;
    }
}

/* TEXT with its escapes decoded, in place; returns its length. */
static size_t decode(char *text)
{
    size_t n = 0;

    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\\' && (p[1] == 'n' || p[1] == 'r' || p[1] == '\\')) {
            p++;
            text[n++] = *p == 'n' ? '\n' : *p == 'r' ? '\r' : '\\';
        } else
            text[n++] = *p;
    }
    text[n] = '\0';
    return n;
}

static void nap(long ms)
{
    struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&left, &left) < 0 && errno == EINTR)
        ;
}

/* One line of stdin, without its newline; NULL at its end. */
static char *read_line(void)
{
    static char *line;
    static size_t cap;
    ssize_t len = getline(&line, &cap, stdin);

    if (len < 0)
        return NULL;
    if (len > 0 && line[len - 1] == '\n')
        line[len - 1] = '\0';
    return line;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        char *step = argv[i];
        if (strncmp(step, "out:", 4) == 0) {
            size_t n = decode(step + 4);
            write_all(1, step + 4, n);
        } else if (strncmp(step, "err:", 4) == 0) {
            size_t n = decode(step + 4);
            write_all(2, step + 4, n);
        } else if (strncmp(step, "bytes:", 6) == 0) {
            size_t n = decode(step + 6);
            for (size_t k = 0; k < n; k++)
                write_all(1, step + 6 + k, 1);
        } else if (strncmp(step, "sleep:", 6) == 0) {
            nap(atol(step + 6));
        } else if (strcmp(step, "read") == 0) {
            if (read_line() == NULL)
                return 0;
        } else if (strcmp(step, "echo") == 0) {
            char *line = read_line();
            if (line == NULL)
                return 0;
            char out[4096];
            int n = snprintf(out, sizeof(out), "got: %s\n", line);
            write_all(1, out, n > 0 && (size_t)n < sizeof(out) ? (size_t)n : 0);
        } else if (strncmp(step, "exit:", 5) == 0) {
            return atoi(step + 5);
        } else {
            fprintf(stderr, "pieces: unknown step '%s'\n", step);
            return 2;
        }
    }
    while (read_line() != NULL)
        ;
    return 0;
}
