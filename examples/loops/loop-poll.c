/* loop-poll: the registry driven from a plain poll() loop, the shape every
 * other loop integration has: poll the registry's fd for reading, at most
 * jpt_registry_get_timeout() milliseconds, then dispatch until it has no
 * more work ready. A real host adds its own fds to the poll. Runs the turn
 * of scenario.h and exits 0 when every result was as expected. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "scenario.h"

int main(void)
{
    scenario s;
    int rc;

    if (scenario_begin(&s, "loop-poll") < 0)
        return scenario_end(&s, -1);
    do {
        struct pollfd p = {.fd = jpt_registry_get_fd(s.r), .events = POLLIN};

        if (poll(&p, 1, jpt_registry_get_timeout(s.r)) < 0 && errno != EINTR) {
            fprintf(stderr, "loop-poll: poll: %s\n", strerror(errno));
            return scenario_end(&s, JPT_ERR_IO);
        }
        while ((rc = jpt_registry_dispatch(s.r)) > 0)
            ;
    } while (rc == 0 && (rc = scenario_step(&s)) > 0);
    return scenario_end(&s, rc);
}
