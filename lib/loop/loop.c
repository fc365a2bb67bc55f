/* One epoll fd with watches, a timer heap behind one timerfd, deferred
 * calls and a wakeup eventfd. See loop.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "loop/loop.h"

/* Events handled per dispatch: bounded work, so one busy fd cannot starve
 * the host's own loop. */
#define EVENT_BATCH 64
#define TIMER_BATCH 64

struct jpt__loop {
    int epfd;
    int timerfd;
    int eventfd;
    jpt__watch timer_watch;
    jpt__watch event_watch;
    uint64_t armed; /* deadline the timerfd is armed for, 0 = disarmed */
    int dispatching; /* depth; timer changes are settled as dispatch ends */
    bool interrupted; /* the owner is going away: dispatch returns at once */
    bool signaled;   /* this thread wrote the eventfd since it was read */
    uint64_t settled; /* when the allocator last merged freed blocks */

    jpt__timer **heap;
    size_t nheap, cap_heap;

    jpt__defer *defer_head, *defer_tail;
    uint64_t defer_seq; /* numbers queued calls, to bound each run */

    /* The batches of fd events being dispatched, innermost first (a
     * callback may dispatch again), so that a stopped watch can be struck
     * out of each. */
    struct event_batch *batches;
    uint64_t callbacks; /* watch callbacks run, for jpt__loop_events */
};

/* The fd events one dispatch fetched; on that dispatch's stack. */
struct event_batch {
    struct epoll_event events[EVENT_BATCH];
    int n, current;
    struct event_batch *outer;
};

uint64_t jpt__loop_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t jpt__loop_deadline_ms(int64_t ms)
{
    uint64_t now = jpt__loop_now();
    uint64_t span = (uint64_t)(ms > 0 ? ms : 0);

    /* Saturates: a deadline past the clock's range is never reached. */
    if (span > (UINT64_MAX - now) / 1000000u)
        return UINT64_MAX;
    return now + span * 1000000u;
}

void jpt__loop_timer_init(jpt__timer *t, jpt__timer_fn fn, void *ud)
{
    t->deadline = 0;
    t->fn = fn;
    t->ud = ud;
    t->heap_index = JPT__TIMER_IDLE;
}

void jpt__loop_defer_init(jpt__defer *d, jpt__defer_fn fn, void *ud)
{
    d->fn = fn;
    d->ud = ud;
    d->next = d->prev = NULL;
    d->queued = false;
    d->release = false;
}

bool jpt__loop_timer_active(const jpt__timer *t)
{
    return t->heap_index != JPT__TIMER_IDLE;
}

/* ---- Timer heap ------------------------------------------------------------ */

static void heap_swap(jpt__loop *l, size_t a, size_t b)
{
    jpt__timer *t = l->heap[a];

    l->heap[a] = l->heap[b];
    l->heap[b] = t;
    l->heap[a]->heap_index = a;
    l->heap[b]->heap_index = b;
}

static void heap_up(jpt__loop *l, size_t i)
{
    while (i > 0 && l->heap[(i - 1) / 2]->deadline > l->heap[i]->deadline) {
        heap_swap(l, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(jpt__loop *l, size_t i)
{
    for (;;) {
        size_t least = i, left = 2 * i + 1, right = left + 1;
        if (left < l->nheap && l->heap[left]->deadline < l->heap[least]->deadline)
            least = left;
        if (right < l->nheap && l->heap[right]->deadline < l->heap[least]->deadline)
            least = right;
        if (least == i)
            return;
        heap_swap(l, i, least);
        i = least;
    }
}

/* Arms the timerfd for the earliest deadline, when that is earlier than
 * what it is armed for (or it is disarmed). A timer that stopped or moved
 * later leaves the timerfd as it was: that costs at most an early wake-up,
 * after which dispatch arms it exactly, where re-arming it would cost a
 * system call per change (issue 17 §4: a request timeout restarted by
 * every request armed the timerfd once per request). The timerfd is never
 * armed later than the earliest deadline. */
static void arm(jpt__loop *l)
{
    uint64_t next = l->nheap > 0 ? l->heap[0]->deadline : 0;
    struct itimerspec its;

    if (next == 0 || (l->armed != 0 && next >= l->armed))
        return;
    memset(&its, 0, sizeof(its));
    /* Deadlines are never 0 (jpt__loop_timer_start); one already past
     * makes the timerfd readable at once. */
    its.it_value.tv_sec = (time_t)(next / 1000000000u);
    its.it_value.tv_nsec = (long)(next % 1000000000u);
    timerfd_settime(l->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
    l->armed = next;
}

/* After a timer change. A system call per change would cost more than the
 * timers themselves (thousands of handles start and stop settle timers in
 * one dispatch), so inside dispatch the timerfd is armed once, as dispatch
 * ends; outside, at once, when the deadline moved earlier. */
static void rearm(jpt__loop *l)
{
    if (l->dispatching > 0)
        return;
    arm(l);
}

int jpt__loop_timer_start(jpt__loop *l, jpt__timer *t, uint64_t deadline)
{
    if (deadline == 0)
        deadline = 1;
    if (jpt__loop_timer_active(t)) {
        uint64_t old = t->deadline;
        t->deadline = deadline;
        if (deadline < old)
            heap_up(l, t->heap_index);
        else
            heap_down(l, t->heap_index);
    } else {
        jpt__timer **heap =
            jpt__array_reserve(l->heap, &l->cap_heap, l->nheap + 1, sizeof(*heap), 16);
        if (heap == NULL)
            return JPT_ERR_NOMEM;
        l->heap = heap;
        t->deadline = deadline;
        t->heap_index = l->nheap;
        l->heap[l->nheap++] = t;
        heap_up(l, t->heap_index);
    }
    rearm(l);
    return JPT_OK;
}

void jpt__loop_timer_stop(jpt__loop *l, jpt__timer *t)
{
    size_t i = t->heap_index;

    if (i == JPT__TIMER_IDLE)
        return;
    t->heap_index = JPT__TIMER_IDLE;
    l->nheap--;
    if (i != l->nheap) {
        l->heap[i] = l->heap[l->nheap];
        l->heap[i]->heap_index = i;
        heap_up(l, i);
        heap_down(l, l->heap[i]->heap_index);
    }
    rearm(l);
}

/* ---- Watches ---------------------------------------------------------------- */

int jpt__loop_watch_start(jpt__loop *l, jpt__watch *w, int fd, uint32_t events,
                     jpt__watch_fn fn, void *ud)
{
    struct epoll_event ev = {.events = events, .data.ptr = w};

    w->fd = fd;
    w->events = events;
    w->fn = fn;
    w->ud = ud;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return errno == ENOMEM ? JPT_ERR_NOMEM : JPT_ERR_IO;
    w->active = true;
    return JPT_OK;
}

int jpt__loop_watch_update(jpt__loop *l, jpt__watch *w, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = w};

    if (!w->active)
        return JPT_ERR_STATE;
    if (events == w->events)
        return JPT_OK;
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
        return JPT_ERR_IO;
    w->events = events;
    return JPT_OK;
}

void jpt__loop_watch_quiet(jpt__loop *l, jpt__watch *w)
{
    for (struct event_batch *b = l->batches; b != NULL; b = b->outer)
        for (int i = b->current + 1; i < b->n; i++)
            if (b->events[i].data.ptr == w)
                b->events[i].data.ptr = NULL;
}

void jpt__loop_watch_stop(jpt__loop *l, jpt__watch *w)
{
    if (!w->active)
        return;
    /* Always removed explicitly, even when the fd is about to be closed:
     * the registration belongs to the open file description, which a
     * process the host forked may still hold, and would go on reporting
     * events for a freed watch. */
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
    w->active = false;
    /* Events for it may already sit in the batch being dispatched; its
     * owner may be freed right after this call. */
    jpt__loop_watch_quiet(l, w);
}

/* ---- Deferred calls --------------------------------------------------------- */

static void write_eventfd(jpt__loop *l)
{
    uint64_t one = 1;

    /* EAGAIN means the counter is already non-zero: readable anyway. */
    (void)!write(l->eventfd, &one, sizeof(one));
}

/* Once until the eventfd is read: each write is a system call. */
static void signal_eventfd(jpt__loop *l)
{
    if (l->signaled)
        return;
    l->signaled = true;
    write_eventfd(l);
}

void jpt__loop_defer_release(jpt__loop *l, jpt__defer *d)
{
    d->release = true;
    jpt__loop_defer_queue(l, d);
}

void jpt__loop_release_now(jpt__loop *l)
{
    /* A clean-up may queue another: from the head again after each. */
    for (jpt__defer *d = l->defer_head; d != NULL;) {
        if (!d->release) {
            d = d->next;
            continue;
        }
        jpt__loop_defer_cancel(l, d);
        d->fn(d);
        d = l->defer_head;
    }
}

void jpt__loop_defer_queue(jpt__loop *l, jpt__defer *d)
{
    if (d->queued)
        return;
    d->queued = true;
    d->next = NULL;
    d->prev = l->defer_tail;
    d->seq = ++l->defer_seq;
    /* The fd turns readable with the first call queued outside dispatch;
     * a dispatch makes it readable as it ends if it leaves calls for the
     * next one. One write per batch of calls, not per call, and none for
     * the calls a dispatch runs itself (jpt__loop_run_once). */
    if (l->defer_tail != NULL)
        l->defer_tail->next = d;
    else {
        l->defer_head = d;
        if (l->dispatching == 0)
            signal_eventfd(l);
    }
    l->defer_tail = d;
}

/* Doubly linked, so that cancelling costs the same however many calls are
 * queued (a batch of thousands of calls queues one each). */
void jpt__loop_defer_cancel(jpt__loop *l, jpt__defer *d)
{
    if (!d->queued)
        return;
    if (d->prev != NULL)
        d->prev->next = d->next;
    else
        l->defer_head = d->next;
    if (d->next != NULL)
        d->next->prev = d->prev;
    else
        l->defer_tail = d->prev;
    d->queued = false;
    d->next = d->prev = NULL;
}

/* Runs the calls queued before this dispatch began, until `until` (at
 * least one); calls they queue wait for the next one, which keeps each
 * dispatch bounded. */
static bool run_deferred(jpt__loop *l, uint64_t until)
{
    /* Only what was queued before this run: a call that queues itself
     * again runs at the next dispatch, not in a loop here. (By number, as
     * the calls queued now may be cancelled while earlier ones run.) */
    uint64_t last = l->defer_seq;

    while (l->defer_head != NULL && l->defer_head->seq <= last && !l->interrupted) {
        jpt__defer *d = l->defer_head;
        jpt__loop_defer_cancel(l, d);
        d->fn(d);
        if (jpt__loop_now() >= until)
            break;
    }
    return l->defer_head != NULL;
}

/* ---- The loop --------------------------------------------------------------- */

static void on_timerfd(jpt__watch *w, uint32_t events)
{
    jpt__loop *l = w->ud;
    uint64_t expirations;

    (void)events;
    (void)!read(l->timerfd, &expirations, sizeof(expirations));
    l->armed = 0; /* re-armed after the expired timers ran */
}

static void on_eventfd(jpt__watch *w, uint32_t events)
{
    jpt__loop *l = w->ud;
    uint64_t count;

    (void)events;
    (void)!read(l->eventfd, &count, sizeof(count));
    l->signaled = false;
}

int jpt__loop_new(jpt__loop **out)
{
    jpt__loop *l = jpt__calloc(1, sizeof(*l));
    int rc = JPT_ERR_IO;

    *out = NULL;
    if (l == NULL)
        return JPT_ERR_NOMEM;
    l->epfd = l->timerfd = l->eventfd = -1;
    /* Room for a few timers from the start: later growth is rare. */
    if ((l->heap = jpt__calloc(16, sizeof(*l->heap))) == NULL) {
        jpt__loop_free(l);
        return JPT_ERR_NOMEM;
    }
    l->cap_heap = 16;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    l->eventfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->epfd < 0 || l->timerfd < 0 || l->eventfd < 0 ||
        (rc = jpt__loop_watch_start(l, &l->timer_watch, l->timerfd, EPOLLIN, on_timerfd, l)) < 0 ||
        (rc = jpt__loop_watch_start(l, &l->event_watch, l->eventfd, EPOLLIN, on_eventfd, l)) < 0) {
        jpt__loop_free(l);
        return rc;
    }
    *out = l;
    return JPT_OK;
}

void jpt__loop_free(jpt__loop *l)
{
    if (l == NULL)
        return;
    jpt__loop_release_now(l);
    for (size_t i = 0; i < l->nheap; i++)
        l->heap[i]->heap_index = JPT__TIMER_IDLE;
    jpt__free(l->heap);
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->timerfd >= 0)
        close(l->timerfd);
    if (l->eventfd >= 0)
        close(l->eventfd);
    jpt__free(l);
}

int jpt__loop_fd(const jpt__loop *l)
{
    return l->epfd;
}

int jpt__loop_timeout(const jpt__loop *l)
{
    if (l->defer_head != NULL)
        return 0;
    if (l->nheap == 0)
        return -1;
    uint64_t now = jpt__loop_now(), next = l->heap[0]->deadline;
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + 999999u) / 1000000u;
    return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* The timers due when it begins, until `until` (at least one). */
static bool run_timers(jpt__loop *l, uint64_t until)
{
    uint64_t now = jpt__loop_now();

    for (int n = 0; n < TIMER_BATCH && !l->interrupted; n++) {
        if (l->nheap == 0 || l->heap[0]->deadline > now)
            break;
        jpt__timer *t = l->heap[0];
        jpt__loop_timer_stop(l, t);
        t->fn(t);
        if (jpt__loop_now() >= until)
            break;
    }
    return l->nheap > 0 && l->heap[0]->deadline <= now;
}

/* One dispatch does at most JPT__DEFER_BUDGET_NS of work, however much is
 * ready (issue 18: a dispatch of the host's loop stays short): deferred
 * calls, fd events and timers each run while the budget lasts, and each
 * at least one, so that none starves the others. An fd event fetched and
 * not run is fetched again by the next dispatch (every watch is level
 * triggered). `wait_ms` (jpt__loop_run_once): how long the epoll_wait
 * may block when nothing is ready (-1: until something is), and whether
 * the calls deferred by this dispatch's callbacks run before it returns,
 * where jpt__loop_dispatch leaves them to the next dispatch, after its
 * caller has seen what this one reported. */
static int dispatch(jpt__loop *l, bool own, int wait_ms, uint64_t *start)
{
    uint64_t until = jpt__loop_now() + JPT__DEFER_BUDGET_NS;
    bool more = run_deferred(l, until);

    if (more)
        wait_ms = 0;
    else if (wait_ms != 0) {
        /* Timers started by the calls just run are not armed before
         * dispatch ends: the wait is bounded by the heap itself. */
        int due = jpt__loop_timeout(l);
        if (due >= 0 && (wait_ms < 0 || due < wait_ms))
            wait_ms = due;
    }
    struct event_batch b;
    int n = epoll_wait(l->epfd, b.events, EVENT_BATCH, wait_ms);
    if (n < 0 && errno != EINTR)
        return JPT_ERR_IO;
    if (wait_ms != 0) {
        /* The work, and its budget, start after the wait. */
        *start = jpt__loop_now();
        until = *start + JPT__DEFER_BUDGET_NS;
    }
    b.n = n > 0 ? n : 0;
    b.outer = l->batches;
    l->batches = &b;
    for (b.current = 0; b.current < b.n && !l->interrupted; b.current++) {
        jpt__watch *w = b.events[b.current].data.ptr;
        if (w != NULL) {
            l->callbacks++;
            w->fn(w, b.events[b.current].events);
            if (b.current + 1 < b.n && jpt__loop_now() >= until) {
                more = true;
                break;
            }
        }
    }
    l->batches = b.outer;
    more |= n == EVENT_BATCH;
    more |= run_timers(l, until);
    /* What the callbacks deferred (an exchange's end reported from the
     * loop, http.h) runs now, in the same wake-up: no eventfd write and
     * read, no second dispatch per request (issue 17 §4). */
    if (own && !l->interrupted && jpt__loop_now() < until)
        more |= run_deferred(l, until);
    if (l->defer_head != NULL) {
        /* Work left for the next dispatch: the fd says so to a host that
         * polls it rather than asking for the timeout. */
        more = true;
        signal_eventfd(l);
    }
    return more ? 1 : 0;
}

/* A dispatch that ran this long (it may have freed thousands of blocks)
 * has the allocator merge what it freed; the others, once in a while. */
#define SETTLE_AFTER_NS 200000u
#define SETTLE_EVERY_NS 50000000u

static int dispatch_outer(jpt__loop *l, bool own, int wait_ms)
{
    uint64_t start = jpt__loop_now();

    l->dispatching++;
    int rc = dispatch(l, own, wait_ms, &start);
    if (--l->dispatching == 0) {
        l->interrupted = false;
        arm(l);
        /* What this dispatch freed is merged now, in its own budget, not
         * all at once by some later allocation (issue 18). A short one
         * freed little: merging is put off, within a bound, rather than
         * paid on the path from a child's exit to its answer. */
        uint64_t now = jpt__loop_now();
        if (now - start >= SETTLE_AFTER_NS || now - l->settled >= SETTLE_EVERY_NS) {
            jpt__alloc_settle();
            l->settled = now;
        }
    }
    return rc;
}

int jpt__loop_dispatch(jpt__loop *l)
{
    return dispatch_outer(l, false, 0);
}

int jpt__loop_run_once(jpt__loop *l, int timeout_ms)
{
    return dispatch_outer(l, true, timeout_ms);
}

void jpt__loop_interrupt(jpt__loop *l)
{
    if (l->dispatching > 0)
        l->interrupted = true;
}

uint64_t jpt__loop_events(const jpt__loop *l)
{
    return l->callbacks;
}

int jpt__loop_poll(jpt__loop *l, int timeout_ms)
{
    struct pollfd pfd = {.fd = l->epfd, .events = POLLIN};

    if (poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR)
        return JPT_ERR_IO;
    return JPT_OK;
}

int jpt__loop_wakeup(jpt__loop *l)
{
    /* From any thread: not through the flag, which is the loop's own. */
    write_eventfd(l);
    return JPT_OK;
}
