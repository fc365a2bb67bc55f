/* The loop room on its own: jpt__loop_run_once, the owner's own wait
 * (issue 17 §4), and the timerfd armed only when the earliest deadline
 * moves earlier. Waits are bounded generously and never asserted as
 * durations: a wait that times out is a wake-up that never came. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "test-util.h"

#include "common/common.h"
#include "loop/loop.h"

/* A bound no correct wait comes near. */
#define LONG_MS 10000

typedef struct fixture {
    jpt__loop *loop;
    int pipe[2];
    jpt__watch watch;
    jpt__defer defer;
    jpt__timer timer;
    int deferred_runs, timer_runs;
    uint64_t fired_at; /* jpt__loop_now() in the timer's callback */
    uint64_t timer_delay_ms; /* for a deferred call that starts the timer */
} fixture;

static void on_defer(jpt__defer *d)
{
    fixture *f = d->ud;

    f->deferred_runs++;
    if (f->timer_delay_ms > 0)
        assert_int_equal(jpt__loop_timer_start(f->loop, &f->timer,
                                               jpt__loop_deadline_ms((int64_t)f->timer_delay_ms)),
                         JPT_OK);
}

static void on_timer(jpt__timer *t)
{
    fixture *f = t->ud;

    f->timer_runs++;
    f->fired_at = jpt__loop_now();
}

/* Reads what the pipe holds and defers a call: as an exchange's end is
 * reported from the loop (http.h). */
static void on_readable(jpt__watch *w, uint32_t events)
{
    fixture *f = w->ud;
    char buf[16];

    (void)events;
    assert_true(read(f->pipe[0], buf, sizeof(buf)) > 0);
    jpt__loop_defer_queue(f->loop, &f->defer);
}

static void start(fixture *f)
{
    memset(f, 0, sizeof(*f));
    assert_int_equal(jpt__loop_new(&f->loop), JPT_OK);
    assert_int_equal(pipe2(f->pipe, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(jpt__loop_watch_start(f->loop, &f->watch, f->pipe[0], EPOLLIN, on_readable, f),
                     JPT_OK);
    jpt__loop_defer_init(&f->defer, on_defer, f);
    jpt__loop_timer_init(&f->timer, on_timer, f);
}

static void end(fixture *f)
{
    jpt__loop_watch_stop(f->loop, &f->watch);
    jpt__loop_timer_stop(f->loop, &f->timer);
    jpt__loop_defer_cancel(f->loop, &f->defer);
    jpt__loop_free(f->loop);
    close(f->pipe[0]);
    close(f->pipe[1]);
}

static bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    return poll(&p, 1, timeout_ms) == 1;
}

/* What a callback defers runs before run_once returns, in the same
 * wake-up: the loop fd is not left readable for a second dispatch. */
static void test_run_once_runs_what_a_callback_defers(void **state)
{
    fixture f;

    (void)state;
    start(&f);
    assert_int_equal(write(f.pipe[1], "x", 1), 1);
    assert_int_equal(jpt__loop_run_once(f.loop, LONG_MS), 0);
    assert_int_equal(f.deferred_runs, 1);
    assert_false(fd_readable(jpt__loop_fd(f.loop), 0));
    end(&f);
}

/* jpt__loop_dispatch, for a host that polls the fd, leaves it to the next
 * dispatch and says so through the fd. */
static void test_dispatch_leaves_what_a_callback_defers_to_the_next(void **state)
{
    fixture f;

    (void)state;
    start(&f);
    assert_int_equal(write(f.pipe[1], "x", 1), 1);
    assert_true(fd_readable(jpt__loop_fd(f.loop), LONG_MS));
    assert_int_equal(jpt__loop_dispatch(f.loop), 1);
    assert_int_equal(f.deferred_runs, 0);
    assert_true(fd_readable(jpt__loop_fd(f.loop), 0));
    assert_int_equal(jpt__loop_timeout(f.loop), 0);
    assert_int_equal(jpt__loop_dispatch(f.loop), 0);
    assert_int_equal(f.deferred_runs, 1);
    end(&f);
}

/* run_once blocks in its own wait until an fd is ready, and returns 0
 * with nothing run when the timeout passes. */
static void test_run_once_waits_for_its_timeout(void **state)
{
    fixture f;

    (void)state;
    start(&f);
    assert_int_equal(jpt__loop_run_once(f.loop, 20), 0);
    assert_int_equal(f.deferred_runs, 0);
    assert_int_equal(f.timer_runs, 0);
    end(&f);
}

/* A timer started by a deferred call that run_once runs is not armed
 * before dispatch ends; the wait itself is bounded by it, so run_once
 * with no limit still wakes for it. */
static void test_run_once_wakes_for_a_timer_its_deferred_call_started(void **state)
{
    fixture f;

    (void)state;
    start(&f);
    f.timer_delay_ms = 30;
    jpt__loop_defer_queue(f.loop, &f.defer);
    uint64_t bound = jpt__loop_deadline_ms(LONG_MS);
    while (f.timer_runs == 0 && jpt__loop_now() < bound)
        assert_true(jpt__loop_run_once(f.loop, -1) >= 0);
    assert_int_equal(f.deferred_runs, 1);
    assert_int_equal(f.timer_runs, 1);
    end(&f);
}

/* A timer moved later leaves the timerfd armed early (no system call per
 * move); the early wake-up runs nothing, and the timer runs at its own
 * deadline, not before. */
static void test_timer_moved_later_runs_at_its_deadline(void **state)
{
    fixture f;

    (void)state;
    start(&f);
    assert_int_equal(jpt__loop_timer_start(f.loop, &f.timer, jpt__loop_deadline_ms(10)), JPT_OK);
    uint64_t deadline = jpt__loop_deadline_ms(60);
    assert_int_equal(jpt__loop_timer_start(f.loop, &f.timer, deadline), JPT_OK);
    uint64_t bound = jpt__loop_deadline_ms(LONG_MS);
    while (f.timer_runs == 0 && jpt__loop_now() < bound) {
        /* As a host would: the fd, then a dispatch. */
        assert_int_equal(jpt__loop_poll(f.loop, 1000), JPT_OK);
        assert_true(jpt__loop_dispatch(f.loop) >= 0);
    }
    assert_int_equal(f.timer_runs, 1);
    assert_true(f.fired_at >= deadline);
    end(&f);
}

/* A timer moved earlier outside dispatch re-arms the timerfd at once: a
 * host polling the fd alone wakes for the earlier deadline. */
static void test_timer_moved_earlier_wakes_a_host_polling_the_fd(void **state)
{
    fixture f;

    (void)state;
    start(&f);
    assert_int_equal(jpt__loop_timer_start(f.loop, &f.timer, jpt__loop_deadline_ms(600000)),
                     JPT_OK);
    assert_false(fd_readable(jpt__loop_fd(f.loop), 0));
    assert_int_equal(jpt__loop_timer_start(f.loop, &f.timer, jpt__loop_deadline_ms(20)), JPT_OK);
    assert_true(fd_readable(jpt__loop_fd(f.loop), LONG_MS));
    assert_int_equal(jpt__loop_dispatch(f.loop), 0);
    assert_int_equal(f.timer_runs, 1);
    end(&f);
}

/* A timer stopped while the timerfd is armed for it: the wake-up that
 * may still come runs nothing, and the loop has nothing scheduled. */
static void test_stopped_timer_runs_nothing(void **state)
{
    fixture f;

    (void)state;
    start(&f);
    assert_int_equal(jpt__loop_timer_start(f.loop, &f.timer, jpt__loop_deadline_ms(10)), JPT_OK);
    jpt__loop_timer_stop(f.loop, &f.timer);
    assert_int_equal(jpt__loop_timeout(f.loop), -1);
    (void)fd_readable(jpt__loop_fd(f.loop), 200);
    assert_int_equal(jpt__loop_dispatch(f.loop), 0);
    assert_int_equal(f.timer_runs, 0);
    assert_false(fd_readable(jpt__loop_fd(f.loop), 0));
    end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_once_runs_what_a_callback_defers),
        cmocka_unit_test(test_dispatch_leaves_what_a_callback_defers_to_the_next),
        cmocka_unit_test(test_run_once_waits_for_its_timeout),
        cmocka_unit_test(test_run_once_wakes_for_a_timer_its_deferred_call_started),
        cmocka_unit_test(test_timer_moved_later_runs_at_its_deadline),
        cmocka_unit_test(test_timer_moved_earlier_wakes_a_host_polling_the_fd),
        cmocka_unit_test(test_stopped_timer_runs_nothing),
    };

    return TU_RUN(tests);
}
