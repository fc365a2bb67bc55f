/* The loop room's internal interface: one epoll fd that aggregates every
 * file descriptor, timer and deferred callback of a registry, so the host
 * polls a single fd (ARCHITECTURE.md §1, principle 1).
 *
 * - Watches: any fd (pipes, pidfds, and later libcurl's sockets) with an
 *   epoll event mask and a callback.
 * - Timers: absolute CLOCK_MONOTONIC deadlines in a min-heap; one timerfd in
 *   the epoll set is armed for the earliest.
 * - Deferred calls: work to run at the next dispatch (for example completing
 *   a call from inside a caller's function); an eventfd makes the epoll fd
 *   readable while any is pending. The same eventfd is the thread-safe
 *   wakeup.
 *
 * Dispatch never blocks and does bounded work. Callbacks may start and stop
 * any watch or timer, including their own. Never installed. */
#ifndef JPT_LIB_LOOP_H
#define JPT_LIB_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct jpt__loop jpt__loop;
typedef struct jpt__watch jpt__watch;
typedef struct jpt__timer jpt__timer;
typedef struct jpt__defer jpt__defer;

typedef void (*jpt__watch_fn)(jpt__watch *w, uint32_t events);
typedef void (*jpt__timer_fn)(jpt__timer *t);
typedef void (*jpt__defer_fn)(jpt__defer *d);

/* Embedded in their owners; the loop keeps pointers to them while active. */
struct jpt__watch {
    int fd;
    uint32_t events;
    jpt__watch_fn fn;
    void *ud;
    bool active;
};

struct jpt__timer {
    uint64_t deadline; /* ns, CLOCK_MONOTONIC */
    jpt__timer_fn fn;
    void *ud;
    size_t heap_index; /* JPT__TIMER_IDLE when not started */
};

#define JPT__TIMER_IDLE SIZE_MAX

struct jpt__defer {
    jpt__defer_fn fn;
    void *ud;
    jpt__defer *next, *prev;
    uint64_t seq; /* the loop's count when it was queued */
    bool queued;
    bool release; /* jpt__loop_defer_release: runs before the loop goes */
};

/* Initialises a timer or deferred call as idle. */
void jpt__loop_timer_init(jpt__timer *t, jpt__timer_fn fn, void *ud);
void jpt__loop_defer_init(jpt__defer *d, jpt__defer_fn fn, void *ud);

int jpt__loop_new(jpt__loop **out);
void jpt__loop_free(jpt__loop *l);
int jpt__loop_fd(const jpt__loop *l);

/* Now on CLOCK_MONOTONIC, in nanoseconds; and a deadline `ms` from now
 * (UINT64_MAX, never, when that is past the clock's range). */
uint64_t jpt__loop_now(void);
uint64_t jpt__loop_deadline_ms(int64_t ms);

/* Adds `fd` to the epoll set for `events` (EPOLLIN, EPOLLOUT, …). */
int jpt__loop_watch_start(jpt__loop *l, jpt__watch *w, int fd, uint32_t events,
                     jpt__watch_fn fn, void *ud);
int jpt__loop_watch_update(jpt__loop *l, jpt__watch *w, uint32_t events);
/* Removes the watch; it receives no further events, even ones already
 * fetched in the current dispatch. Idempotent. Does not close the fd. */
void jpt__loop_watch_stop(jpt__loop *l, jpt__watch *w);
/* Drops the events of the watch already fetched in the dispatches under
 * way, and only those: it stays in the epoll set (for an owner that will
 * stop it from a deferred clean-up, and hears of nothing meanwhile). */
void jpt__loop_watch_quiet(jpt__loop *l, jpt__watch *w);

/* (Re)starts the timer for an absolute deadline; stopping is idempotent. */
int jpt__loop_timer_start(jpt__loop *l, jpt__timer *t, uint64_t deadline);
void jpt__loop_timer_stop(jpt__loop *l, jpt__timer *t);
bool jpt__loop_timer_active(const jpt__timer *t);

/* Queues `d` to run at the next dispatch (once, however often queued). */
void jpt__loop_defer_queue(jpt__loop *l, jpt__defer *d);
void jpt__loop_defer_cancel(jpt__loop *l, jpt__defer *d);
/* The same for a clean-up that must run, dispatched or not: what is left
 * of something its owner let go of (a child's fds after its exit was
 * reported), put off so that the report goes out first (issue 18). It runs
 * at the next dispatch, or at jpt__loop_release_now, which the loop's owner
 * calls before freeing what the clean-ups use (jpt__loop_free runs it last
 * of all). */
void jpt__loop_defer_release(jpt__loop *l, jpt__defer *d);
void jpt__loop_release_now(jpt__loop *l);

/* Milliseconds until dispatch is due: 0 when work is pending, -1 when
 * nothing is scheduled. Rounded up, so waiting that long never wakes early. */
int jpt__loop_timeout(const jpt__loop *l);
/* Runs what is ready without blocking, for about JPT__DEFER_BUDGET_NS:
 * deferred calls, a batch of fd events, expired timers, each while the
 * budget lasts and at least one of each (so that thousands queued at once
 * run over several dispatches, and none starves the others). A callback
 * that runs long makes the dispatch run long: work over what a model or a
 * tool controls is done in slices (issue 18). Returns >0 if more work is
 * ready at once, 0 if not, or a negative status when the epoll fd itself
 * failed. */
#define JPT__DEFER_BUDGET_NS 2000000u
int jpt__loop_dispatch(jpt__loop *l);
/* jpt__loop_dispatch for the loop's owner running it itself (the
 * standalone VFS host's jpt_vfs_host_run): when nothing is ready, the
 * dispatch's own epoll_wait blocks, for `timeout_ms` at most (-1: no
 * limit; less when a timer is due sooner), where a poll of the loop fd
 * then a dispatch would make two system calls of one; and what its
 * callbacks defer runs before it returns, where jpt__loop_dispatch leaves
 * it to the next dispatch (with an eventfd write and read), so that a
 * host polling the fd hears of events between the two. Same returns. */
int jpt__loop_run_once(jpt__loop *l, int timeout_ms);
/* Ends the dispatches under way (this one and any it is nested in) as soon
 * as the callback running now returns: nothing else runs until the
 * outermost returns. For an owner freed from one of its callbacks. */
void jpt__loop_interrupt(jpt__loop *l);
/* Blocks until the loop fd is readable or `timeout_ms` passes (-1: no
 * limit). Returns 0, or JPT_ERR_IO. */
int jpt__loop_poll(jpt__loop *l, int timeout_ms);
/* Watch callbacks run since the loop was made: a metric (as libuv's
 * uv_metrics_info counts events) for what an fd's end costs in wake-ups. */
uint64_t jpt__loop_events(const jpt__loop *l);
/* Thread-safe: makes the loop fd readable. */
int jpt__loop_wakeup(jpt__loop *l);

#endif /* JPT_LIB_LOOP_H */
