/* The event queue: what happened, for a host that pops events rather than
 * (or besides) polling its batches. Bounded: beyond max_events the oldest
 * is dropped. The public jpt_event functions live here too. */
#include <string.h>

#include "registry/base.h"

static void event_free(jpt_event *e)
{
    jpt__free(e->call_id);
    jpt__free(e->handle_id);
    jpt__free(e->tool);
    jpt__free(e);
}

/* Takes the oldest event off the queue. */
static jpt_event *pop(jpt_registry *r)
{
    jpt_event *e = r->events_head;

    if (e == NULL)
        return NULL;
    r->events_head = e->next;
    if (r->events_head == NULL)
        r->events_tail = NULL;
    r->nevents--;
    e->next = NULL;
    if (e->slot != NULL) {
        *e->slot = NULL;
        e->slot = NULL;
    }
    return e;
}

/* A new event with copies of the names given (NULL ones stay NULL). */
static jpt_event *make(int type, const char *call_id, const char *handle_id, const char *tool)
{
    jpt_event *e = jpt__calloc(1, sizeof(*e));

    if (e == NULL)
        return NULL;
    e->type = type;
    if ((call_id != NULL && (e->call_id = jpt__strdup(call_id)) == NULL) ||
        (handle_id != NULL && (e->handle_id = jpt__strdup(handle_id)) == NULL) ||
        (tool != NULL && (e->tool = jpt__strdup(tool)) == NULL)) {
        event_free(e);
        return NULL;
    }
    return e;
}

static void enqueue(jpt_registry *r, jpt_event *e)
{
    if (e == NULL) {
        jpt__log(JPT_LOG_WARNING, "out of memory: an event was lost");
        return;
    }
    if (r->nevents >= r->max_events) {
        jpt__log(JPT_LOG_WARNING, "event queue full (%zu events): dropping the oldest",
                 r->max_events);
        event_free(pop(r));
    }
    if (r->events_tail != NULL)
        r->events_tail->next = e;
    else
        r->events_head = e;
    r->events_tail = e;
    r->nevents++;
}

jpt_event *jpt__events_reserve(int type, const char *call_id, const char *tool)
{
    return make(type, call_id, NULL, tool);
}

void jpt__events_unreserve(jpt_event *e)
{
    if (e != NULL)
        event_free(e);
}

void jpt__events_queue(jpt_registry *r, jpt_event **reserved, const jpt_batch *b,
                       char **handle_id)
{
    jpt_event *e = *reserved;

    *reserved = NULL;
    if (e == NULL) {
        jpt__log(JPT_LOG_ERROR, "a completion event was queued twice, or never made");
        return;
    }
    e->batch = b;
    if (handle_id != NULL) {
        e->handle_id = *handle_id;
        *handle_id = NULL;
    }
    enqueue(r, e);
}

void jpt__events_state(jpt_registry *r, const char *handle_id, const char *tool, int kind)
{
    jpt_event *e = make(JPT_EVENT_STATE, NULL, handle_id, tool);

    if (e != NULL)
        e->state = kind;
    enqueue(r, e);
}

void jpt__events_output(jpt_registry *r, const char *handle_id, const char *tool,
                        jpt_event **slot)
{
    if (*slot != NULL)
        return;
    jpt_event *e = make(JPT_EVENT_OUTPUT, NULL, handle_id, tool);
    if (e != NULL) {
        e->state = JPT_STATE_RUNNING;
        e->slot = slot;
        *slot = e;
    }
    enqueue(r, e);
}

void jpt__events_stream(jpt_registry *r, const char *id, const char *tool, bool stateful,
                        int stream, const char *p, size_t n)
{
    if (r->output_fn == NULL || n == 0)
        return;
    jpt_output out = {.size = sizeof(out),
                      .id = id,
                      .tool = tool,
                      .stateful = stateful,
                      .stream = stream == JPT__STDERR ? JPT_STREAM_STDERR : JPT_STREAM_STDOUT,
                      .data = p,
                      .len = n};
    r->output_fn(&out, r->output_ud);
}

JPT_EXPORT void jpt_registry_set_output_handler(jpt_registry *r, jpt_output_fn fn, void *ud)
{
    if (r == NULL)
        return;
    r->output_fn = fn;
    r->output_ud = ud;
}

void jpt__events_forget(jpt_event **slot)
{
    if (*slot != NULL) {
        (*slot)->slot = NULL;
        *slot = NULL;
    }
}

void jpt__events_shutdown(jpt_registry *r)
{
    enqueue(r, make(JPT_EVENT_SHUTDOWN, NULL, NULL, NULL));
}

void jpt__events_free(jpt_registry *r)
{
    while (r->events_head != NULL)
        event_free(pop(r));
}

JPT_EXPORT int jpt_registry_next_event(jpt_registry *r, jpt_event **out)
{
    if (r == NULL || out == NULL)
        return JPT_ERR_INVALID;
    *out = pop(r);
    return *out != NULL ? JPT_OK : JPT_ERR_AGAIN;
}

JPT_EXPORT int jpt_event_type(const jpt_event *e)
{
    return e != NULL ? e->type : JPT_ERR_INVALID;
}

JPT_EXPORT const char *jpt_event_call_id(const jpt_event *e)
{
    return e != NULL ? e->call_id : NULL;
}

JPT_EXPORT const char *jpt_event_handle_id(const jpt_event *e)
{
    return e != NULL ? e->handle_id : NULL;
}

JPT_EXPORT const char *jpt_event_tool(const jpt_event *e)
{
    return e != NULL ? e->tool : NULL;
}

JPT_EXPORT int jpt_event_state(const jpt_event *e)
{
    return e != NULL && e->type == JPT_EVENT_STATE ? e->state : 0;
}

JPT_EXPORT const jpt_batch *jpt_event_batch(const jpt_event *e)
{
    return e != NULL ? e->batch : NULL;
}

JPT_EXPORT void jpt_event_free(jpt_event *e)
{
    if (e != NULL)
        event_free(e);
}
