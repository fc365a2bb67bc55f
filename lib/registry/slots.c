/* The process slots (registry.h, max_processes): the one keeper every
 * runtime uses. Every tool process, whatever runs it, and every VFS tool's
 * process.run child takes a slot; a run beyond them, or one that finds no
 * fd while another child of the registry lives, waits in line, in order;
 * a slot freed serves the line from the loop. A live handle's process
 * keeps its slot until the model ends the handle: when such processes
 * hold every slot, a run that would wait fails at once, saying why. */
#include <stdio.h>

#include "registry/base.h"

void jpt__slot_wait(jpt_registry *r, jpt__slot_waiter *w)
{
    if (w->waiting)
        return;
    w->waiting = true;
    /* A run in line to start reads "pending" (registry.h, max_processes). */
    if (w->queued != NULL && !w->holds_slot)
        *w->queued = true;
    JPT__QUEUE_APPEND(r->slot_head, r->slot_tail, w);
}

void jpt__slot_leave(jpt_registry *r, jpt__slot_waiter *w)
{
    if (!w->waiting)
        return;
    JPT__QUEUE_REMOVE(r->slot_head, r->slot_tail, w);
    w->waiting = false;
    if (w->queued != NULL)
        *w->queued = false;
}

bool jpt__slot_take(jpt_registry *r)
{
    if (r->shutting_down || r->nchildren >= r->max_processes ||
        (r->slot_head != NULL && !r->slot_granted))
        return false;
    r->slot_granted = false;
    r->nchildren++;
    return true;
}

void jpt__slot_give(jpt_registry *r)
{
    r->nchildren--;
    if (r->slot_head != NULL)
        jpt__loop_defer_queue(r->loop, &r->slot_step);
    if (r->on_child_gone != NULL)
        r->on_child_gone(r);
}

/* Every slot is held by a live handle's process: none frees until the
 * model ends a handle, which it cannot while it waits for the answers of
 * the calls that wait for a slot. */
static bool stuck(const jpt_registry *r)
{
    return r->handle_slots >= r->max_processes;
}

static int stuck_reason(const jpt_registry *r, jpt__buf *why)
{
    return jpt__buf_printf(why,
                           "no process slot is free: the registry runs at most %zu tool "
                           "processes at once (max_processes), and live handles hold every "
                           "slot until they end; abort one, or await the end of one, then "
                           "call again",
                           r->max_processes);
}

int jpt__slot_start(jpt_registry *r, jpt__slot_waiter *w, jpt__buf *why)
{
    int rc = r->nchildren < r->max_processes ? w->start(w, why) : JPT_ERR_AGAIN;

    if (rc != JPT_ERR_AGAIN)
        return rc;
    /* The host trial: 40 spawns of `sh` and 20 one-shot calls with 6
     * slots answered every spawn "running" while 34 never started, and
     * the one-shots waited for the turn's end. */
    if (stuck(r))
        return stuck_reason(r, why) < 0 ? JPT_ERR_NOMEM : JPT_ERR_LIMIT;
    w->holds_slot = false;
    jpt__slot_wait(r, w);
    return JPT_OK;
}

int jpt__slot_spawn_failed(const jpt_registry *r, int rc, const char *id, const char *reason)
{
    if (rc != JPT_ERR_LIMIT || r->nchildren == 0)
        return rc;
    jpt__log(JPT_LOG_DEBUG, "'%s' waits for a slot: %s", id, reason);
    return JPT_ERR_AGAIN;
}

void jpt__slot_hold(jpt_registry *r, jpt__slot *s, pid_t pid)
{
    r->nchildren++;
    s->held = true;
    s->stale = jpt__stale_add(r, pid);
}

void jpt__slot_hold_for_handle(jpt_registry *r, jpt__slot *s)
{
    if (!s->held || s->for_handle)
        return;
    s->for_handle = true;
    r->handle_slots++;
    /* Those in line may now wait for nothing. */
    if (r->slot_head != NULL && stuck(r))
        jpt__loop_defer_queue(r->loop, &r->slot_step);
}

void jpt__slot_release_for_handle(jpt_registry *r, jpt__slot *s)
{
    if (!s->for_handle)
        return;
    s->for_handle = false;
    r->handle_slots--;
}

/* Not counted nor recorded any more. */
static bool let_go(jpt_registry *r, jpt__slot *s)
{
    if (!s->held)
        return false;
    jpt__slot_release_for_handle(r, s);
    s->held = false;
    jpt__stale_remove(r, s->stale);
    s->stale = 0;
    return true;
}

void jpt__slot_release(jpt_registry *r, jpt__slot *s)
{
    if (let_go(r, s))
        jpt__slot_give(r);
}

void jpt__slot_drop(jpt_registry *r, jpt__slot *s)
{
    if (let_go(r, s))
        r->nchildren--;
}

/* ---- Serving the line ----------------------------------------------------------------- */

/* A run waiting to start: true when it is out of the line (started, or
 * ended with the reason it could not start), false when it waits on (no
 * fd to be had now). */
static bool start_waiting(jpt__slot_waiter *w)
{
    jpt__buf why = JPT__BUF_INIT;
    int rc = w->start(w, &why);

    if (rc < 0 && rc != JPT_ERR_AGAIN)
        w->fail(w, why.data != NULL ? why.data : jpt_strerror(rc));
    jpt__buf_free(&why);
    return rc != JPT_ERR_AGAIN;
}

/* Whether no process the registry runs could ever end and free a slot:
 * each is a VFS tool whose process.run waits for one (vfs.h). */
static bool deadlocked(const jpt_registry *r)
{
    size_t holding = 0;

    for (const jpt__slot_waiter *w = r->slot_head; w != NULL; w = w->next)
        holding += w->holds_slot;
    return r->nchildren > 0 && holding == r->nchildren;
}

static void refuse_deadlocked(jpt_registry *r)
{
    char why[512];

    snprintf(why, sizeof(why),
             "no process slot is free: the registry runs max_processes (%zu) processes, every "
             "one a VFS tool waiting for a slot for process.run, so none could ever free one; "
             "refused rather than wait forever",
             r->max_processes);
    jpt__log(JPT_LOG_WARNING, "%s", why);
    for (jpt__slot_waiter *w = r->slot_head, *next; w != NULL; w = next) {
        next = w->next;
        if (w->holds_slot) {
            jpt__slot_leave(r, w);
            w->refuse(w, why);
        }
    }
}

/* Every slot is held by a live handle's process: those in line would
 * wait for the model, which waits for them. Each fails (a run to start)
 * or is refused (a VFS tool's process.run). */
static void refuse_stuck(jpt_registry *r)
{
    jpt__buf why = JPT__BUF_INIT;
    const char *text = stuck_reason(r, &why) == JPT_OK ? why.data : "no process slot is free";

    jpt__log(JPT_LOG_INFO, "%s", text);
    while (r->slot_head != NULL) {
        jpt__slot_waiter *w = r->slot_head;
        jpt__slot_leave(r, w);
        if (w->holds_slot)
            w->refuse(w, text);
        else
            w->fail(w, text);
    }
    jpt__buf_free(&why);
}

void jpt__slots_freed(jpt__defer *d)
{
    jpt_registry *r = d->ud;

    for (int n = 0; n < 16 && r->slot_head != NULL && r->nchildren < r->max_processes &&
                    !r->shutting_down;
         n++) {
        jpt__slot_waiter *w = r->slot_head;
        jpt__slot_leave(r, w);
        r->slot_granted = true;
        bool served = true;
        if (w->holds_slot)
            w->granted(w);
        else
            served = start_waiting(w);
        r->slot_granted = false;
        if (!served) {
            jpt__slot_wait(r, w);
            break;
        }
    }
    if (r->slot_head != NULL && r->nchildren < r->max_processes && !r->shutting_down)
        jpt__loop_defer_queue(r->loop, d);
    else if (!r->shutting_down && r->slot_head != NULL && stuck(r))
        refuse_stuck(r);
    else if (!r->shutting_down && deadlocked(r))
        refuse_deadlocked(r);
}
