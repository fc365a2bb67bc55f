/* flood: writes BYTES bytes of numbered 64-byte text lines to stdout (or
 * stderr), as fast as the reader takes them. Used by the output-capture tests
 * (truncation marker, bounded memory) and the 1 GiB throughput benchmark.
 *
 * Usage: flood BYTES [stdout|stderr]
 * Lines read "line 0000001 xxx...x\n"; the 7-digit number wraps after 9999999
 * so every line stays 64 bytes. The last line is cut short when BYTES is not a
 * multiple of 64. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { LINE = 64, DIGITS = 7, NUMBER_AT = 5, LINES_PER_CHUNK = 16384 };

static char chunk[LINE * LINES_PER_CHUNK];

/* Adds one to a fixed-width decimal counter, wrapping to all zeros. */
static void increment(char *digits)
{
    for (int i = DIGITS - 1; i >= 0; i--) {
        if (digits[i] != '9') {
            digits[i]++;
            return;
        }
        digits[i] = '0';
    }
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* In a sanitizer build, LeakSanitizer's check at exit reads /proc and
 * uses ptrace, which the OS sandbox of a process.run child denies. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

int main(int argc, char **argv)
{
    unsigned long long remaining;
    char digits[DIGITS] = { '0', '0', '0', '0', '0', '0', '1' };
    char *end;
    int fd = STDOUT_FILENO;

    if (argc < 2 || argc > 3 || argv[1][0] < '0' || argv[1][0] > '9') {
        fputs("usage: flood BYTES [stdout|stderr]\n", stderr);
        return 2;
    }
    errno = 0;
    remaining = strtoull(argv[1], &end, 10);
    if (errno != 0 || *end != '\0') {
        fprintf(stderr, "flood: bad byte count '%s'\n", argv[1]);
        return 2;
    }
    if (argc == 3 && strcmp(argv[2], "stderr") == 0)
        fd = STDERR_FILENO;
    else if (argc == 3 && strcmp(argv[2], "stdout") != 0) {
        fprintf(stderr, "flood: bad stream '%s'\n", argv[2]);
        return 2;
    }

    for (size_t i = 0; i < LINES_PER_CHUNK; i++) {
        char *line = chunk + i * LINE;
        memcpy(line, "line ", NUMBER_AT);
        line[NUMBER_AT + DIGITS] = ' ';
        memset(line + NUMBER_AT + DIGITS + 1, 'x', LINE - NUMBER_AT - DIGITS - 2);
        line[LINE - 1] = '\n';
    }

    while (remaining > 0) {
        size_t len = remaining < sizeof chunk ? (size_t)remaining : sizeof chunk;
        size_t lines = (len + LINE - 1) / LINE;

        /* Only the numbers change from chunk to chunk. */
        for (size_t i = 0; i < lines; i++) {
            memcpy(chunk + i * LINE + NUMBER_AT, digits, DIGITS);
            increment(digits);
        }
        if (write_all(fd, chunk, len) < 0) {
            perror("flood: write");
            return 1;
        }
        remaining -= len;
    }
    return 0;
}
