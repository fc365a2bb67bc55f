/* exit-code: writes given text to stdout and stderr (no newline added) and
 * exits with the given status, e.g. a tool that exits 3 with plain text, to
 * check how non-zero exits and stream tails become error results.
 *
 * Usage: exit-code CODE STDOUT_TEXT STDERR_TEXT   (CODE 0-255) */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    char *end;
    long code;

    if (argc != 4) {
        fputs("usage: exit-code CODE STDOUT_TEXT STDERR_TEXT\n", stderr);
        return 2;
    }
    code = strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || code < 0 || code > 255) {
        fprintf(stderr, "exit-code: bad exit code '%s'\n", argv[1]);
        return 2;
    }
    fputs(argv[2], stdout);
    fflush(stdout);
    fputs(argv[3], stderr);
    return (int)code;
}
