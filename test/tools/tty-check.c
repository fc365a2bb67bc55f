/* tty-check: reports whether stdin and stdout are terminals, the TERM the
 * child was given and the window size of stdout, for the pty: true tests.
 * Output, four lines:
 *   stdin: tty | stdin: not a tty
 *   stdout: tty | stdout: not a tty
 *   TERM=<value> | TERM=(unset)
 *   size: <rows>x<cols> | size: unknown */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(void)
{
    const char *term = getenv("TERM");
    struct winsize ws;

    printf("stdin: %s\n", isatty(STDIN_FILENO) ? "tty" : "not a tty");
    printf("stdout: %s\n", isatty(STDOUT_FILENO) ? "tty" : "not a tty");
    printf("TERM=%s\n", term != NULL ? term : "(unset)");
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
        printf("size: %ux%u\n", (unsigned)ws.ws_row, (unsigned)ws.ws_col);
    else
        fputs("size: unknown\n", stdout);
    return 0;
}
