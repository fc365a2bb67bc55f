/* The loop room (lib/loop, loop.h) on its own: timers in deadline order,
 * stopped and moved; fd watches, stopped and quieted inside a dispatch;
 * deferred calls, queued once, cancelled, run at the next dispatch;
 * clean-ups (release) that run without a dispatch; the thread-safe wakeup;
 * interrupt; and the loop under allocation failure. The fd the host polls
 * is read from the outside, with poll(). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "loop/loop.h"
#include "test-util.h"

/* Whether the loop's fd is readable now (poll, no wait). */
static bool readable(const jpt__loop *l)
{
    struct pollfd p = {.fd = jpt__loop_fd(l), .events = POLLIN};

    assert_true(poll(&p, 1, 0) >= 0);
    return (p.revents & POLLIN) != 0;
}

static jpt__loop *loop_new(void)
{
    jpt__loop *l = NULL;

    assert_int_equal(jpt__loop_new(&l), JPT_OK);
    return l;
}

/* ---- Timers ------------------------------------------------------------------------ */

/* What fired, in order: each timer's `ud` is its name. */
static char fired[64];

static void on_timer(jpt__timer *t)
{
    strcat(fired, t->ud);
}

static void timers_fire_in_deadline_order_whatever_order_they_were_started(void **state)
{
    (void)state;
    jpt__loop *l = loop_new();
    jpt__timer a, b, c;
    uint64_t now = jpt__loop_now();

    fired[0] = '\0';
    jpt__loop_timer_init(&a, on_timer, "a");
    jpt__loop_timer_init(&b, on_timer, "b");
    jpt__loop_timer_init(&c, on_timer, "c");
    /* All due already: only their order is at stake. */
    assert_int_equal(jpt__loop_timer_start(l, &b, now - 2), JPT_OK);
    assert_int_equal(jpt__loop_timer_start(l, &c, now - 1), JPT_OK);
    assert_int_equal(jpt__loop_timer_start(l, &a, now - 3), JPT_OK);
    assert_int_equal(jpt__loop_timeout(l), 0);
    assert_true(readable(l));
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_string_equal(fired, "abc");
    assert_false(jpt__loop_timer_active(&a));
    assert_int_equal(jpt__loop_timeout(l), -1);
    jpt__loop_free(l);
}

static void a_stopped_timer_never_fires(void **state)
{
    (void)state;
    jpt__loop *l = loop_new();
    jpt__timer a;

    fired[0] = '\0';
    jpt__loop_timer_init(&a, on_timer, "a");
    assert_int_equal(jpt__loop_timer_start(l, &a, jpt__loop_now() - 1), JPT_OK);
    assert_true(jpt__loop_timer_active(&a));
    jpt__loop_timer_stop(l, &a);
    jpt__loop_timer_stop(l, &a); /* idempotent */
    assert_false(jpt__loop_timer_active(&a));
    assert_int_equal(jpt__loop_timeout(l), -1);
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_string_equal(fired, "");
    jpt__loop_free(l);
}

static void restarting_a_timer_moves_its_deadline_and_it_fires_once(void **state)
{
    (void)state;
    jpt__loop *l = loop_new();
    jpt__timer a, b;

    fired[0] = '\0';
    jpt__loop_timer_init(&a, on_timer, "a");
    jpt__loop_timer_init(&b, on_timer, "b");
    assert_int_equal(jpt__loop_timer_start(l, &a, jpt__loop_deadline_ms(3600 * 1000)), JPT_OK);
    assert_int_equal(jpt__loop_timer_start(l, &b, jpt__loop_deadline_ms(3600 * 1000) + 1),
                     JPT_OK);
    /* An hour away: the timeout says so, rounded up to whole ms. */
    int timeout = jpt__loop_timeout(l);
    assert_true(timeout > 3500 * 1000 && timeout <= 3600 * 1000);
    assert_false(readable(l));
    /* Moved into the past, before b: it fires, alone, and once. */
    assert_int_equal(jpt__loop_timer_start(l, &a, jpt__loop_now() - 1), JPT_OK);
    assert_int_equal(jpt__loop_timeout(l), 0);
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_string_equal(fired, "a");
    assert_true(jpt__loop_timer_active(&b));
    /* And b moved later stays pending. */
    assert_int_equal(jpt__loop_timer_start(l, &b, jpt__loop_deadline_ms(7200 * 1000)), JPT_OK);
    assert_true(jpt__loop_timeout(l) > 3600 * 1000);
    jpt__loop_free(l);
}

/* A timer that starts itself again from its callback, for a deadline
 * reached already: it runs once per dispatch, never in a loop inside one. */
typedef struct again {
    jpt__timer t;
    jpt__loop *l;
    int runs;
} again;

static void on_again(jpt__timer *t)
{
    again *g = t->ud;

    g->runs++;
    assert_int_equal(jpt__loop_timer_start(g->l, t, jpt__loop_now()), JPT_OK);
}

static void a_timer_restarted_from_its_callback_runs_once_per_dispatch(void **state)
{
    (void)state;
    again g = {.l = loop_new()};

    jpt__loop_timer_init(&g.t, on_again, &g);
    assert_int_equal(jpt__loop_timer_start(g.l, &g.t, jpt__loop_now()), JPT_OK);
    for (int i = 1; i <= 3; i++) {
        jpt__loop_dispatch(g.l);
        assert_int_equal(g.runs, i);
    }
    jpt__loop_timer_stop(g.l, &g.t);
    jpt__loop_free(g.l);
}

/* A callback that stops another timer due in the same dispatch. */
static jpt__timer *victim;
static jpt__loop *victim_loop;

static void on_stop_victim(jpt__timer *t)
{
    on_timer(t);
    jpt__loop_timer_stop(victim_loop, victim);
}

static void a_timer_stopped_by_an_earlier_one_in_the_same_dispatch_does_not_fire(void **state)
{
    (void)state;
    jpt__loop *l = loop_new();
    jpt__timer a, b;
    uint64_t now = jpt__loop_now();

    fired[0] = '\0';
    victim = &b;
    victim_loop = l;
    jpt__loop_timer_init(&a, on_stop_victim, "a");
    jpt__loop_timer_init(&b, on_timer, "b");
    assert_int_equal(jpt__loop_timer_start(l, &a, now - 2), JPT_OK);
    assert_int_equal(jpt__loop_timer_start(l, &b, now - 1), JPT_OK);
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_string_equal(fired, "a");
    assert_int_equal(jpt__loop_timeout(l), -1);
    jpt__loop_free(l);
}

/* ---- Watches ----------------------------------------------------------------------- */

typedef struct heard {
    int count;
    uint32_t events;
    jpt__loop *l;
    jpt__watch *other; /* what the callback stops or quiets, if any */
    bool quiet;        /* quiet `other` rather than stop it */
} heard;

static void on_watch(jpt__watch *w, uint32_t events)
{
    heard *h = w->ud;

    h->count++;
    h->events = events;
    if (h->other != NULL) {
        if (h->quiet)
            jpt__loop_watch_quiet(h->l, h->other);
        else
            jpt__loop_watch_stop(h->l, h->other);
    }
}

static void put_byte(int fd)
{
    assert_int_equal(write(fd, "x", 1), 1);
}

static void a_watch_hears_its_fd_until_stopped(void **state)
{
    (void)state;
    jpt__loop *l = loop_new();
    int p[2];
    jpt__watch w;
    heard h = {0};

    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    assert_int_equal(jpt__loop_watch_start(l, &w, p[0], EPOLLIN, on_watch, &h), JPT_OK);
    assert_false(readable(l));
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_int_equal(h.count, 0);
    put_byte(p[1]);
    assert_true(readable(l));
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.events, EPOLLIN);
    /* Level-triggered: unread, it is heard again. */
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_int_equal(h.count, 2);
    jpt__loop_watch_stop(l, &w);
    jpt__loop_watch_stop(l, &w); /* idempotent */
    assert_false(readable(l));
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_int_equal(h.count, 2);
    /* Stopping does not close the fd. */
    assert_int_equal(fcntl(p[0], F_GETFD), FD_CLOEXEC);
    close(p[0]);
    close(p[1]);
    jpt__loop_free(l);
}

static void updating_a_watch_changes_what_it_hears(void **state)
{
    (void)state;
    jpt__loop *l = loop_new();
    int p[2];
    jpt__watch w;
    heard h = {0};

    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    /* The write end never becomes readable; it is writable at once. */
    assert_int_equal(jpt__loop_watch_start(l, &w, p[1], EPOLLIN, on_watch, &h), JPT_OK);
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_int_equal(h.count, 0);
    assert_int_equal(jpt__loop_watch_update(l, &w, EPOLLOUT), JPT_OK);
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.events, EPOLLOUT);
    jpt__loop_watch_stop(l, &w);
    assert_int_equal(jpt__loop_watch_update(l, &w, EPOLLIN), JPT_ERR_STATE);
    close(p[0]);
    close(p[1]);
    jpt__loop_free(l);
}

/* Two pipes, both readable, watched; each watch's callback stops (or
 * quiets) the other's, until told otherwise. */
typedef struct two_ready {
    jpt__loop *l;
    int p[2], q[2];
    jpt__watch wp, wq;
    heard hp, hq;
} two_ready;

static void two_ready_start(two_ready *t, bool quiet)
{
    t->l = loop_new();
    t->hp = (heard){.l = t->l, .other = &t->wq, .quiet = quiet};
    t->hq = (heard){.l = t->l, .other = &t->wp, .quiet = quiet};
    assert_int_equal(pipe2(t->p, O_CLOEXEC), 0);
    assert_int_equal(pipe2(t->q, O_CLOEXEC), 0);
    assert_int_equal(jpt__loop_watch_start(t->l, &t->wp, t->p[0], EPOLLIN, on_watch, &t->hp),
                     JPT_OK);
    assert_int_equal(jpt__loop_watch_start(t->l, &t->wq, t->q[0], EPOLLIN, on_watch, &t->hq),
                     JPT_OK);
    put_byte(t->p[1]);
    put_byte(t->q[1]);
}

static void two_ready_end(two_ready *t)
{
    jpt__loop_watch_stop(t->l, &t->wp);
    jpt__loop_watch_stop(t->l, &t->wq);
    close(t->p[0]);
    close(t->p[1]);
    close(t->q[0]);
    close(t->q[1]);
    jpt__loop_free(t->l);
}

/* Whichever runs first, the other never runs: its owner may be gone. */
static void a_watch_stopped_in_a_dispatch_misses_the_events_already_fetched(void **state)
{
    (void)state;
    two_ready t;

    two_ready_start(&t, false);
    assert_int_equal(jpt__loop_dispatch(t.l), 0);
    assert_int_equal(t.hp.count + t.hq.count, 1);
    /* Still readable, but stopped: never heard again (the one that ran is
     * heard again, being readable still). */
    t.hp.other = t.hq.other = NULL;
    assert_int_equal(jpt__loop_dispatch(t.l), 0);
    assert_int_equal(t.hp.count + t.hq.count, 2);
    assert_true(t.hp.count == 0 || t.hq.count == 0);
    two_ready_end(&t);
}

/* Quieting drops the events fetched in this dispatch only: the watch
 * stays, and hears its fd at the next. */
static void a_quieted_watch_misses_this_dispatch_only(void **state)
{
    (void)state;
    two_ready t;

    two_ready_start(&t, true);
    assert_int_equal(jpt__loop_dispatch(t.l), 0);
    assert_int_equal(t.hp.count + t.hq.count, 1);
    t.hp.other = t.hq.other = NULL;
    assert_int_equal(jpt__loop_dispatch(t.l), 0);
    assert_int_equal(t.hp.count, t.hq.count == 2 ? 1 : 2);
    assert_int_equal(t.hp.count + t.hq.count, 3);
    two_ready_end(&t);
}

/* ---- Deferred calls ---------------------------------------------------------------- */

typedef struct deferred {
    jpt__defer d;
    jpt__loop *l;
    int runs;
    int requeue;         /* times it queues itself again */
    bool interrupt;      /* interrupts the dispatch it runs in */
} deferred;

static void on_defer(jpt__defer *d)
{
    deferred *x = d->ud;

    x->runs++;
    if (x->requeue > 0) {
        x->requeue--;
        jpt__loop_defer_queue(x->l, d);
    }
    if (x->interrupt)
        jpt__loop_interrupt(x->l);
}

static void a_deferred_call_runs_once_however_often_it_is_queued(void **state)
{
    (void)state;
    deferred x = {.l = loop_new()};

    jpt__loop_defer_init(&x.d, on_defer, &x);
    assert_int_equal(jpt__loop_timeout(x.l), -1);
    assert_false(readable(x.l));
    for (int i = 0; i < 3; i++)
        jpt__loop_defer_queue(x.l, &x.d);
    /* Pending work: due at once, and the fd says so. */
    assert_int_equal(jpt__loop_timeout(x.l), 0);
    assert_true(readable(x.l));
    assert_int_equal(jpt__loop_dispatch(x.l), 0);
    assert_int_equal(x.runs, 1);
    assert_false(readable(x.l));
    assert_int_equal(jpt__loop_dispatch(x.l), 0);
    assert_int_equal(x.runs, 1);
    jpt__loop_free(x.l);
}

static void a_cancelled_deferred_call_does_not_run(void **state)
{
    (void)state;
    deferred x = {.l = loop_new()}, y = {.l = x.l};

    jpt__loop_defer_init(&x.d, on_defer, &x);
    jpt__loop_defer_init(&y.d, on_defer, &y);
    jpt__loop_defer_queue(x.l, &x.d);
    jpt__loop_defer_queue(x.l, &y.d);
    jpt__loop_defer_cancel(x.l, &x.d);
    jpt__loop_defer_cancel(x.l, &x.d); /* idempotent */
    assert_int_equal(jpt__loop_dispatch(x.l), 0);
    assert_int_equal(x.runs, 0);
    assert_int_equal(y.runs, 1);
    jpt__loop_defer_queue(x.l, &y.d);
    jpt__loop_defer_cancel(x.l, &y.d);
    assert_int_equal(jpt__loop_timeout(x.l), -1);
    jpt__loop_free(x.l);
}

/* A call queued by a deferred call waits for the next dispatch, and the
 * dispatch says more work is ready (and leaves the fd readable). */
static void a_call_queued_from_a_deferred_call_runs_at_the_next_dispatch(void **state)
{
    (void)state;
    deferred x = {.l = loop_new(), .requeue = 2};

    jpt__loop_defer_init(&x.d, on_defer, &x);
    jpt__loop_defer_queue(x.l, &x.d);
    assert_int_equal(jpt__loop_dispatch(x.l), 1);
    assert_int_equal(x.runs, 1);
    assert_true(readable(x.l));
    assert_int_equal(jpt__loop_dispatch(x.l), 1);
    assert_int_equal(x.runs, 2);
    assert_int_equal(jpt__loop_dispatch(x.l), 0);
    assert_int_equal(x.runs, 3);
    assert_false(readable(x.l));
    jpt__loop_free(x.l);
}

/* Many calls at once run over as many dispatches as the budget needs,
 * each exactly once, none lost. */
static void thousands_of_deferred_calls_each_run_once(void **state)
{
    (void)state;
    enum { N = 20000 };
    jpt__loop *l = loop_new();
    deferred *x = calloc(N, sizeof(*x));

    assert_non_null(x);
    for (size_t i = 0; i < N; i++) {
        x[i].l = l;
        jpt__loop_defer_init(&x[i].d, on_defer, &x[i]);
        jpt__loop_defer_queue(l, &x[i].d);
    }
    int dispatches = 0;
    while (jpt__loop_dispatch(l) > 0)
        assert_true(++dispatches < N);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(x[i].runs, 1);
    assert_int_equal(jpt__loop_timeout(l), -1);
    jpt__loop_free(l);
    free(x);
}

static void interrupt_ends_the_dispatch_after_the_running_callback(void **state)
{
    (void)state;
    jpt__loop *l = loop_new();
    deferred x = {.l = l, .interrupt = true}, y = {.l = l};
    jpt__timer t;

    fired[0] = '\0';
    jpt__loop_defer_init(&x.d, on_defer, &x);
    jpt__loop_defer_init(&y.d, on_defer, &y);
    jpt__loop_timer_init(&t, on_timer, "t");
    jpt__loop_defer_queue(l, &x.d);
    jpt__loop_defer_queue(l, &y.d);
    assert_int_equal(jpt__loop_timer_start(l, &t, jpt__loop_now() - 1), JPT_OK);
    jpt__loop_dispatch(l);
    assert_int_equal(x.runs, 1);
    assert_int_equal(y.runs, 0);
    assert_string_equal(fired, "");
    /* Outside a dispatch it does nothing; the next dispatch runs the rest. */
    x.interrupt = false;
    jpt__loop_interrupt(l);
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_int_equal(y.runs, 1);
    assert_string_equal(fired, "t");
    jpt__loop_free(l);
}

/* ---- Clean-ups (release) ----------------------------------------------------------- */

static void a_release_runs_at_release_now_without_a_dispatch(void **state)
{
    (void)state;
    deferred x = {.l = loop_new()};

    jpt__loop_defer_init(&x.d, on_defer, &x);
    jpt__loop_defer_release(x.l, &x.d);
    assert_int_equal(jpt__loop_timeout(x.l), 0);
    jpt__loop_release_now(x.l);
    assert_int_equal(x.runs, 1);
    jpt__loop_release_now(x.l);
    assert_int_equal(jpt__loop_dispatch(x.l), 0);
    assert_int_equal(x.runs, 1);
    jpt__loop_free(x.l);
}

static void a_release_runs_at_the_next_dispatch_and_not_again(void **state)
{
    (void)state;
    deferred x = {.l = loop_new()};

    jpt__loop_defer_init(&x.d, on_defer, &x);
    jpt__loop_defer_release(x.l, &x.d);
    assert_int_equal(jpt__loop_dispatch(x.l), 0);
    assert_int_equal(x.runs, 1);
    jpt__loop_release_now(x.l);
    assert_int_equal(x.runs, 1);
    jpt__loop_free(x.l);
    assert_int_equal(x.runs, 1);
}

static void freeing_the_loop_runs_the_releases_left_and_nothing_else(void **state)
{
    (void)state;
    deferred x = {.l = loop_new()}, y = {.l = x.l};

    jpt__loop_defer_init(&x.d, on_defer, &x);
    jpt__loop_defer_init(&y.d, on_defer, &y);
    jpt__loop_defer_release(x.l, &x.d);
    jpt__loop_defer_queue(x.l, &y.d);
    jpt__loop_free(x.l);
    assert_int_equal(x.runs, 1);
    assert_int_equal(y.runs, 0);
}

/* ---- Wakeup ------------------------------------------------------------------------ */

static void *wake(void *l)
{
    assert_int_equal(jpt__loop_wakeup(l), JPT_OK);
    return NULL;
}

static void a_wakeup_from_another_thread_makes_the_fd_readable_until_dispatched(void **state)
{
    (void)state;
    jpt__loop *l = loop_new();
    pthread_t th;

    assert_false(readable(l));
    assert_int_equal(pthread_create(&th, NULL, wake, l), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(jpt__loop_poll(l, 60000), JPT_OK);
    assert_true(readable(l));
    assert_int_equal(jpt__loop_dispatch(l), 0);
    assert_false(readable(l));
    jpt__loop_free(l);
}

/* ---- Allocation failure ------------------------------------------------------------ */

/* A loop with more timers than its first heap holds: each failing run
 * returns JPT_ERR_NOMEM with nothing left allocated. */
static int many_timers_op(void *ctx)
{
    (void)ctx;
    jpt__timer t[40];
    jpt__loop *l = NULL;
    int rc = jpt__loop_new(&l);

    if (rc < 0) {
        assert_null(l);
        return rc;
    }
    for (size_t i = 0; i < 40 && rc == JPT_OK; i++) {
        jpt__loop_timer_init(&t[i], on_timer, "");
        rc = jpt__loop_timer_start(l, &t[i], jpt__loop_deadline_ms(60000 + (int64_t)i));
    }
    jpt__loop_free(l);
    return rc;
}

static void the_loop_survives_allocation_failure(void **state)
{
    (void)state;
    tu_sweep("a loop with 40 timers", many_timers_op, NULL);
}

/* ---- run_once and the timerfd armed lazily (issue 17 §4) ------------------------ */

/* A bound no correct wait comes near. */
#define LONG_MS 10000

typedef struct ro_fixture {
    jpt__loop *loop;
    int pipe[2];
    jpt__watch watch;
    jpt__defer defer;
    jpt__timer timer;
    int deferred_runs, timer_runs;
    uint64_t fired_at; /* jpt__loop_now() in the timer's callback */
    uint64_t timer_delay_ms; /* for a deferred call that starts the timer */
} ro_fixture;

static void ro_on_defer(jpt__defer *d)
{
    ro_fixture *f = d->ud;

    f->deferred_runs++;
    if (f->timer_delay_ms > 0)
        assert_int_equal(jpt__loop_timer_start(f->loop, &f->timer,
                                               jpt__loop_deadline_ms((int64_t)f->timer_delay_ms)),
                         JPT_OK);
}

static void ro_on_timer(jpt__timer *t)
{
    ro_fixture *f = t->ud;

    f->timer_runs++;
    f->fired_at = jpt__loop_now();
}

/* Reads what the pipe holds and defers a call: as an exchange's end is
 * reported from the loop (http.h). */
static void ro_on_readable(jpt__watch *w, uint32_t events)
{
    ro_fixture *f = w->ud;
    char buf[16];

    (void)events;
    assert_true(read(f->pipe[0], buf, sizeof(buf)) > 0);
    jpt__loop_defer_queue(f->loop, &f->defer);
}

static void ro_start(ro_fixture *f)
{
    memset(f, 0, sizeof(*f));
    assert_int_equal(jpt__loop_new(&f->loop), JPT_OK);
    assert_int_equal(pipe2(f->pipe, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(jpt__loop_watch_start(f->loop, &f->watch, f->pipe[0], EPOLLIN, ro_on_readable,
                                           f),
                     JPT_OK);
    jpt__loop_defer_init(&f->defer, ro_on_defer, f);
    jpt__loop_timer_init(&f->timer, ro_on_timer, f);
}

static void ro_end(ro_fixture *f)
{
    jpt__loop_watch_stop(f->loop, &f->watch);
    jpt__loop_timer_stop(f->loop, &f->timer);
    jpt__loop_defer_cancel(f->loop, &f->defer);
    jpt__loop_free(f->loop);
    close(f->pipe[0]);
    close(f->pipe[1]);
}

static bool ro_fd_readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    return poll(&p, 1, timeout_ms) == 1;
}

/* What a callback defers runs before run_once returns, in the same
 * wake-up: the loop fd is not left readable for a second dispatch. */
static void test_run_once_runs_what_a_callback_defers(void **state)
{
    ro_fixture f;

    (void)state;
    ro_start(&f);
    assert_int_equal(write(f.pipe[1], "x", 1), 1);
    assert_int_equal(jpt__loop_run_once(f.loop, LONG_MS), 0);
    assert_int_equal(f.deferred_runs, 1);
    assert_false(ro_fd_readable(jpt__loop_fd(f.loop), 0));
    ro_end(&f);
}

/* jpt__loop_dispatch, for a host that polls the fd, leaves it to the next
 * dispatch and says so through the fd. */
static void test_dispatch_leaves_what_a_callback_defers_to_the_next(void **state)
{
    ro_fixture f;

    (void)state;
    ro_start(&f);
    assert_int_equal(write(f.pipe[1], "x", 1), 1);
    assert_true(ro_fd_readable(jpt__loop_fd(f.loop), LONG_MS));
    assert_int_equal(jpt__loop_dispatch(f.loop), 1);
    assert_int_equal(f.deferred_runs, 0);
    assert_true(ro_fd_readable(jpt__loop_fd(f.loop), 0));
    assert_int_equal(jpt__loop_timeout(f.loop), 0);
    assert_int_equal(jpt__loop_dispatch(f.loop), 0);
    assert_int_equal(f.deferred_runs, 1);
    ro_end(&f);
}

/* run_once blocks in its own wait until an fd is ready, and returns 0
 * with nothing run when the timeout passes. */
static void test_run_once_waits_for_its_timeout(void **state)
{
    ro_fixture f;

    (void)state;
    ro_start(&f);
    assert_int_equal(jpt__loop_run_once(f.loop, 20), 0);
    assert_int_equal(f.deferred_runs, 0);
    assert_int_equal(f.timer_runs, 0);
    ro_end(&f);
}

/* A timer started by a deferred call that run_once runs is not armed
 * before dispatch ends; the wait itself is bounded by it, so run_once
 * with no limit still wakes for it. */
static void test_run_once_wakes_for_a_timer_its_deferred_call_started(void **state)
{
    ro_fixture f;

    (void)state;
    ro_start(&f);
    f.timer_delay_ms = 30;
    jpt__loop_defer_queue(f.loop, &f.defer);
    uint64_t bound = jpt__loop_deadline_ms(LONG_MS);
    while (f.timer_runs == 0 && jpt__loop_now() < bound)
        assert_true(jpt__loop_run_once(f.loop, -1) >= 0);
    assert_int_equal(f.deferred_runs, 1);
    assert_int_equal(f.timer_runs, 1);
    ro_end(&f);
}

/* A timer moved later leaves the timerfd armed early (no system call per
 * move); the early wake-up runs nothing, and the timer runs at its own
 * deadline, not before. */
static void test_timer_moved_later_runs_at_its_deadline(void **state)
{
    ro_fixture f;

    (void)state;
    ro_start(&f);
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
    ro_end(&f);
}

/* A timer moved earlier outside dispatch re-arms the timerfd at once: a
 * host polling the fd alone wakes for the earlier deadline. */
static void test_timer_moved_earlier_wakes_a_host_polling_the_fd(void **state)
{
    ro_fixture f;

    (void)state;
    ro_start(&f);
    assert_int_equal(jpt__loop_timer_start(f.loop, &f.timer, jpt__loop_deadline_ms(600000)),
                     JPT_OK);
    assert_false(ro_fd_readable(jpt__loop_fd(f.loop), 0));
    assert_int_equal(jpt__loop_timer_start(f.loop, &f.timer, jpt__loop_deadline_ms(20)), JPT_OK);
    assert_true(ro_fd_readable(jpt__loop_fd(f.loop), LONG_MS));
    assert_int_equal(jpt__loop_dispatch(f.loop), 0);
    assert_int_equal(f.timer_runs, 1);
    ro_end(&f);
}

/* A timer stopped while the timerfd is armed for it: the wake-up that
 * may still come runs nothing, and the loop has nothing scheduled. */
static void test_stopped_timer_runs_nothing(void **state)
{
    ro_fixture f;

    (void)state;
    ro_start(&f);
    assert_int_equal(jpt__loop_timer_start(f.loop, &f.timer, jpt__loop_deadline_ms(10)), JPT_OK);
    jpt__loop_timer_stop(f.loop, &f.timer);
    assert_int_equal(jpt__loop_timeout(f.loop), -1);
    (void)ro_fd_readable(jpt__loop_fd(f.loop), 200);
    assert_int_equal(jpt__loop_dispatch(f.loop), 0);
    assert_int_equal(f.timer_runs, 0);
    assert_false(ro_fd_readable(jpt__loop_fd(f.loop), 0));
    ro_end(&f);
}

int main(void)
{
    tu_install_counting_allocator();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(timers_fire_in_deadline_order_whatever_order_they_were_started),
        cmocka_unit_test(a_stopped_timer_never_fires),
        cmocka_unit_test(restarting_a_timer_moves_its_deadline_and_it_fires_once),
        cmocka_unit_test(a_timer_restarted_from_its_callback_runs_once_per_dispatch),
        cmocka_unit_test(a_timer_stopped_by_an_earlier_one_in_the_same_dispatch_does_not_fire),
        cmocka_unit_test(a_watch_hears_its_fd_until_stopped),
        cmocka_unit_test(updating_a_watch_changes_what_it_hears),
        cmocka_unit_test(a_watch_stopped_in_a_dispatch_misses_the_events_already_fetched),
        cmocka_unit_test(a_quieted_watch_misses_this_dispatch_only),
        cmocka_unit_test(a_deferred_call_runs_once_however_often_it_is_queued),
        cmocka_unit_test(a_cancelled_deferred_call_does_not_run),
        cmocka_unit_test(a_call_queued_from_a_deferred_call_runs_at_the_next_dispatch),
        cmocka_unit_test(thousands_of_deferred_calls_each_run_once),
        cmocka_unit_test(interrupt_ends_the_dispatch_after_the_running_callback),
        cmocka_unit_test(a_release_runs_at_release_now_without_a_dispatch),
        cmocka_unit_test(a_release_runs_at_the_next_dispatch_and_not_again),
        cmocka_unit_test(freeing_the_loop_runs_the_releases_left_and_nothing_else),
        cmocka_unit_test(a_wakeup_from_another_thread_makes_the_fd_readable_until_dispatched),
        cmocka_unit_test(the_loop_survives_allocation_failure),
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
