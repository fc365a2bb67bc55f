/* loop-libuv: the registry driven from a libuv loop. A uv_poll_t watches
 * the registry's fd for reading; a uv_timer_t is re-armed after every
 * dispatch from jpt_registry_get_timeout(), for work due at a time rather
 * than on fd activity. Either one dispatches. Runs the turn of scenario.h
 * and exits 0 when every result was as expected. */
/* uv.h uses POSIX types (pthread_rwlock_t) that -std=c11 hides. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <uv.h>

#include "scenario.h"

typedef struct host {
    scenario s;
    uv_poll_t fd_watch;
    uv_timer_t timer;
    int rc; /* what the loop ended on, for scenario_end() */
} host;

static void on_timer(uv_timer_t *timer);

static void stop(host *h, int rc)
{
    h->rc = rc;
    uv_close((uv_handle_t *)&h->fd_watch, NULL);
    uv_close((uv_handle_t *)&h->timer, NULL);
}

static void drive(host *h)
{
    int rc, ms;

    while ((rc = jpt_registry_dispatch(h->s.r)) > 0)
        ;
    if (rc < 0 || (rc = scenario_step(&h->s)) <= 0) {
        stop(h, rc);
        return;
    }
    ms = jpt_registry_get_timeout(h->s.r);
    if (ms < 0)
        uv_timer_stop(&h->timer);
    else
        uv_timer_start(&h->timer, on_timer, (uint64_t)ms, 0);
}

static void on_readable(uv_poll_t *watch, int status, int events)
{
    (void)events;
    if (status < 0) {
        fprintf(stderr, "loop-libuv: polling the registry: %s\n", uv_strerror(status));
        stop(watch->data, JPT_ERR_IO);
        return;
    }
    drive(watch->data);
}

static void on_timer(uv_timer_t *timer)
{
    drive(timer->data);
}

int main(void)
{
    host h = {.rc = 0};
    uv_loop_t *loop = uv_default_loop();
    int ms;

    if (scenario_begin(&h.s, "loop-libuv") < 0)
        return scenario_end(&h.s, -1);
    uv_poll_init(loop, &h.fd_watch, jpt_registry_get_fd(h.s.r));
    uv_timer_init(loop, &h.timer);
    h.fd_watch.data = h.timer.data = &h;
    uv_poll_start(&h.fd_watch, UV_READABLE, on_readable);
    if ((ms = jpt_registry_get_timeout(h.s.r)) >= 0)
        uv_timer_start(&h.timer, on_timer, (uint64_t)ms, 0);
    uv_run(loop, UV_RUN_DEFAULT); /* until stop() closed both handles */
    uv_loop_close(loop);
    return scenario_end(&h.s, h.rc);
}
