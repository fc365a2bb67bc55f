/* ignore-term: a misbehaving tool that ignores SIGTERM, so tests can check
 * that abort and shutdown fall back to SIGKILL after the grace period.
 * Prints "ignoring SIGTERM" once SIGTERM is ignored, then waits to be killed. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    struct sigaction sa = { .sa_handler = SIG_IGN };

    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) < 0) {
        perror("ignore-term: sigaction");
        return 1;
    }
    fputs("ignoring SIGTERM\n", stdout);
    fflush(stdout);
    for (;;)
        pause();
}
