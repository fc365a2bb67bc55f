/* sleep-ms: prints TEXT at once (no newline added), sleeps MS milliseconds,
 * then prints "slept MS". Used for settle windows, yield limits, timeouts and
 * concurrency (many handles alive at once).
 *
 * Usage: sleep-ms MS [TEXT] */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    struct timespec left;
    char *end;
    long long ms;

    if (argc < 2 || argc > 3) {
        fputs("usage: sleep-ms MS [TEXT]\n", stderr);
        return 2;
    }
    ms = strtoll(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || ms < 0) {
        fprintf(stderr, "sleep-ms: bad duration '%s'\n", argv[1]);
        return 2;
    }
    if (argc == 3) {
        fputs(argv[2], stdout);
        fflush(stdout);
    }
    left.tv_sec = (time_t)(ms / 1000);
    left.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&left, &left) < 0 && errno == EINTR)
        ;
    printf("slept %lld\n", ms);
    return 0;
}
