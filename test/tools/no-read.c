/* no-read: a misbehaving stateful tool that never reads its stdin, so tests
 * can check that writes to a full stdin pipe never block jptool.
 * Prints "waiting forever", then waits to be killed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    fputs("waiting forever\n", stdout);
    fflush(stdout);
    for (;;)
        pause();
}
