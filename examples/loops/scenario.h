/* The agent turn that each event-loop example (loop-poll, loop-libuv,
 * loop-glib) runs, so that the examples hold nothing but their loop's glue.
 *
 * Three model messages, each submitted once the one before has all its
 * results: a stateful shell is spawned; the shell is given a command (an
 * apply); a build is spawned and awaited in the same message (RFD 037).
 * Then the registry is shut down without blocking, and the loop ends when
 * every tool process is reaped. Each result is checked; the first that is
 * not what jptool promises ends the run with a message on stderr.
 *
 * The glue a loop needs, after each time it dispatches the registry:
 *
 *     while ((rc = jpt_registry_dispatch(s.r)) > 0)
 *         ;
 *     if (rc < 0 || scenario_step(&s) <= 0)
 *         stop the loop;
 *     otherwise wait, at most jpt_registry_get_timeout(s.r) ms, for
 *     jpt_registry_get_fd(s.r) to be readable, then dispatch again.
 *
 * and scenario_end() once the loop has stopped. */
#ifndef LOOP_SCENARIO_H
#define LOOP_SCENARIO_H

#include <jptool/jptool.h>

typedef struct scenario {
    const char *name;  /* the example's name, for messages */
    jpt_registry *r;
    jpt_batch *batch;  /* the message whose results are awaited */
    int message;       /* how many messages were submitted */
    int failed;
} scenario;

/* Makes the registry, loads the tools and submits the first message.
 * Returns 0, or -1 with a message on stderr. */
int scenario_begin(scenario *s, const char *name);

/* Called after dispatching: pops the events, and when the message in flight
 * has its results, checks them and submits the next message, or after the
 * last begins the shutdown. Returns 1 while there is more to do, 0 once
 * the shutdown is complete (every tool process reaped), -1 on a failure
 * (a message on stderr). */
int scenario_step(scenario *s);

/* Frees what is left (the registry: at once after a complete shutdown)
 * and returns the exit status: 0 when every result was as expected and
 * the shutdown completed, else 1. `rc` is what the loop ended on: the last
 * scenario_step(), or a negative jpt status when dispatching failed. */
int scenario_end(scenario *s, int rc);

#endif
