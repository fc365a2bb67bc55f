/* The await tool (RFD 037): block on handles until every one in `all` has
 * stopped and at least one in `any` has, or a timeout passes. An await
 * watches its handles; each stop updates two counters, so the cost of an
 * event does not grow with the number of handles awaited, and the await
 * answers in the dispatch in which its condition is met. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

/* Ten years: longer than any turn waits. */
#define MAX_TIMEOUT_SECS ((json_int_t)10 * 365 * 24 * 3600)

struct jpt__await {
    jpt__watcher base; /* first: the watcher callbacks get this pointer */
    jpt__call *call;
    jpt_handle **handles; /* in the order given, all then any, no repeats */
    jpt__sub *subs;       /* one per handle, its role JPT__ROLE_* bits */
    size_t n;
    size_t all_left;      /* handles in `all` not stopped yet */
    bool has_any;
    size_t any_stopped;   /* handles in `any` that have stopped */
    jpt__timer timer;
};

bool jpt__await_available(jpt_registry *r)
{
    /* RFD 037, "Schema availability": with no stateful tool there is
     * nothing to await. */
    for (size_t i = 0; i < r->ntools; i++)
        if (r->tools[i]->stateful)
            return true;
    return false;
}

static bool satisfied(const jpt__await *a)
{
    return a->all_left == 0 && (!a->has_any || a->any_stopped > 0);
}

static void detach(jpt__await *a)
{
    jpt_registry *r = a->call->r;

    jpt__timer_stop(r->loop, &a->timer);
    for (size_t i = 0; i < a->n; i++)
        jpt__handle_unwatch(&a->subs[i]);
}

static void await_release(jpt__await *a)
{
    a->call->await = NULL;
    jpt__free(a->handles);
    jpt__free(a->subs);
    jpt__free(a);
}

/* RFD 037's response: {"completed": […], "pending": […]}, plus
 * "timed_out" or "cancelled" when the condition was not met. Written
 * directly rather than through a JSON tree: it is on the path from a
 * child's exit to the await's answer. */
static int response(jpt__await *a, const char *flag, jpt__buf *out)
{
    int rc = jpt__buf_puts(out, "{\"completed\":[");
    bool first = true;

    for (size_t i = 0; rc == JPT_OK && i < a->n; i++) {
        jpt_handle *h = a->handles[i];
        const char *text;
        bool is_error;
        if (!h->exited)
            continue;
        if ((rc = jpt__handle_final(h, &text, &is_error)) < 0 ||
            (rc = jpt__buf_puts(out, first ? "{\"id\":" : ",{\"id\":")) < 0 ||
            (rc = jpt__buf_json_string(out, h->id, strlen(h->id))) < 0 ||
            (rc = jpt__buf_puts(out, ",\"state\":\"stopped\",\"result\":")) < 0 ||
            (rc = jpt__buf_json_string(out, text, strlen(text))) < 0)
            break;
        rc = jpt__buf_putc(out, '}');
        first = false;
    }
    if (rc == JPT_OK)
        rc = jpt__buf_puts(out, "],\"pending\":[");
    first = true;
    for (size_t i = 0; rc == JPT_OK && i < a->n; i++) {
        jpt_handle *h = a->handles[i];
        if (h->exited)
            continue;
        if ((rc = jpt__buf_puts(out, first ? "{\"id\":" : ",{\"id\":")) < 0 ||
            (rc = jpt__buf_json_string(out, h->id, strlen(h->id))) < 0)
            break;
        /* A tool that said it stopped but whose process has not ended yet
         * is still running. */
        rc = jpt__buf_printf(out, ",\"state\":\"%s\"}",
                             h->placeholder                  ? "pending"
                             : h->kind == JPT_STATE_STOPPED ? "running"
                                                             : jpt__kind_name(h->kind));
        first = false;
    }
    if (rc == JPT_OK)
        rc = jpt__buf_putc(out, ']');
    if (rc == JPT_OK && flag != NULL)
        rc = jpt__buf_printf(out, ",\"%s\":true", flag);
    if (rc == JPT_OK)
        rc = jpt__buf_putc(out, '}');
    return rc;
}

static void finish(jpt__await *a, const char *flag)
{
    jpt__call *call = a->call;
    jpt__buf json = JPT__BUF_INIT;
    bool ok = response(a, flag, &json) == JPT_OK;

    /* The model now holds the stopped handles' results. Completing the call
     * may end its batch, which lets go of handles it held: they stay busy
     * until this function is done with them. */
    detach(a);
    jpt_handle **handles = a->handles;
    size_t n = a->n;
    a->handles = NULL;
    for (size_t i = 0; i < n; i++) {
        jpt__handle_pin(handles[i]);
        if (ok && handles[i]->exited)
            jpt__handle_delivered(handles[i]);
    }
    await_release(a);
    jpt__call_complete(call, ok ? json.data : "out of memory building the await response", !ok);
    jpt__buf_free(&json);
    for (size_t i = 0; i < n; i++)
        jpt__handle_unpin(handles[i]);
    jpt__free(handles);
}

static void on_handle_stopped(jpt__watcher *w, jpt__sub *s)
{
    jpt__await *a = (jpt__await *)w;
    unsigned role = s->role;

    if (role & JPT__ROLE_ALL)
        a->all_left--;
    if (role & JPT__ROLE_ANY)
        a->any_stopped++;
    if (satisfied(a))
        finish(a, NULL);
}

static void on_timeout(jpt__timer *t)
{
    finish(t->ud, "timed_out");
}

/* The ids of the `any` and `all` arguments, without repeats, each with its
 * JPT__ROLE_* bits; found through a map, so an await of many ids costs
 * linear time. */
typedef struct id_list {
    const char **ids;
    unsigned *roles;
    size_t n;
    jpt__idmap seen; /* id -> its index + 1 */
} id_list;

/* Adds the ids of `list` (the `any` or `all` argument) with `role`.
 * Returns false with the call completed when the list is malformed. */
static bool take_ids(jpt__call *call, const json_t *list, const char *name, unsigned role,
                     id_list *l)
{
    size_t i;
    const json_t *id;

    if (list == NULL || json_is_null(list))
        return true;
    if (!json_is_array(list)) {
        jpt__call_completef(call, true, "Invalid arguments for `await`: `%s` must be an "
                                        "array of handle IDs", name);
        return false;
    }
    json_array_foreach(list, i, id) {
        if (!json_is_string(id)) {
            jpt__call_completef(call, true, "Invalid arguments for `await`: `%s[%zu]` is "
                                            "%s, not a handle ID", name, i,
                                jpt__json_type_phrase(id));
            return false;
        }
        const char *text = json_string_value(id);
        uintptr_t k = (uintptr_t)jpt__idmap_get(&l->seen, text);
        if (k == 0) {
            if (jpt__idmap_put(&l->seen, text, (void *)(uintptr_t)(l->n + 1)) < 0) {
                jpt__call_complete(call, "out of memory starting the await", true);
                return false;
            }
            l->ids[l->n] = text;
            l->roles[l->n] = 0;
            k = ++l->n;
        }
        l->roles[k - 1] |= role;
    }
    return true;
}

/* Checks the arguments and collects the ids; false with the call
 * completed when they are wrong. */
static bool read_arguments(jpt__call *call, const json_t *arguments, id_list *l)
{
    const json_t *timeout = json_object_get(arguments, "timeout_secs");

    /* RFD 037, "Recursive await": await is not a stateful tool. */
    if (json_object_get(arguments, "action") != NULL) {
        jpt__call_complete(call, "`await` is not a stateful tool: it takes no `action` and "
                                 "cannot be spawned", true);
        return false;
    }
    if (!take_ids(call, json_object_get(arguments, "all"), "all", JPT__ROLE_ALL, l) ||
        !take_ids(call, json_object_get(arguments, "any"), "any", JPT__ROLE_ANY, l))
        return false;
    if (timeout != NULL && !json_is_null(timeout) &&
        (!json_is_integer(timeout) || json_integer_value(timeout) < 0)) {
        jpt__call_complete(call, "Invalid arguments for `await`: `timeout_secs` must be a "
                                 "whole number of seconds, 0 or more", true);
        return false;
    }
    if (l->n == 0) {
        jpt__call_complete(call, "At least one handle ID required", true);
        return false;
    }
    return true;
}

/* The await for the ids, its handles found; NULL with the call completed
 * when an id is unknown or memory is short. */
static jpt__await *await_new(jpt__call *call, const id_list *l)
{
    jpt__await *a = jpt__calloc(1, sizeof(*a));

    if (a == NULL || (a->handles = jpt__calloc(l->n, sizeof(*a->handles))) == NULL ||
        (a->subs = jpt__calloc(l->n, sizeof(*a->subs))) == NULL) {
        if (a != NULL)
            jpt__free(a->handles);
        jpt__free(a);
        jpt__call_complete(call, "out of memory starting the await", true);
        return NULL;
    }
    for (size_t i = 0; i < l->n; i++) {
        /* RFD 037: an unknown id is an error, not a silent skip. */
        if ((a->handles[i] = jpt__handle_find(call->r, l->ids[i])) == NULL) {
            jpt__call_completef(call, true, "Handle `%s` not found", l->ids[i]);
            jpt__free(a->handles);
            jpt__free(a->subs);
            jpt__free(a);
            return NULL;
        }
    }
    a->base.stopped = on_handle_stopped;
    a->call = call;
    a->n = l->n;
    jpt__timer_init(&a->timer, on_timeout, a);
    return a;
}

void jpt__await_start(jpt__call *call, json_t *arguments)
{
    jpt_registry *r = call->r;
    const json_t *timeout = json_object_get(arguments, "timeout_secs");
    size_t cap = json_array_size(json_object_get(arguments, "any")) +
                 json_array_size(json_object_get(arguments, "all")) + 1;
    id_list l;
    jpt__await *a;

    l.ids = jpt__calloc(cap, sizeof(*l.ids));
    l.roles = jpt__calloc(cap, sizeof(*l.roles));
    l.n = 0;
    jpt__idmap_init(&l.seen);
    if (l.ids == NULL || l.roles == NULL) {
        jpt__call_complete(call, "out of memory starting the await", true);
        goto out;
    }
    if (!read_arguments(call, arguments, &l) || (a = await_new(call, &l)) == NULL)
        goto out;
    call->await = a;
    for (size_t i = 0; i < a->n; i++) {
        jpt_handle *h = a->handles[i];
        unsigned role = l.roles[i];
        /* Stopped as watchers count it: a tool may report its stop before
         * its process has ended, and is announced only then. */
        bool stopped = h->exited;
        a->has_any |= (role & JPT__ROLE_ANY) != 0;
        if ((role & JPT__ROLE_ALL) && !stopped)
            a->all_left++;
        if ((role & JPT__ROLE_ANY) && stopped)
            a->any_stopped++;
        jpt__handle_watch(h, &a->subs[i], &a->base, role);
    }
    /* RFD 037: an already satisfied condition returns without blocking. */
    if (satisfied(a)) {
        finish(a, NULL);
        goto out;
    }
    /* Beyond any real wait, a timeout is no limit at all; clamped, the
     * product below cannot overflow. */
    json_int_t secs = json_is_integer(timeout) ? json_integer_value(timeout) : -1;
    if (secs > MAX_TIMEOUT_SECS)
        secs = MAX_TIMEOUT_SECS;
    if (secs >= 0 && jpt__timer_start(r->loop, &a->timer, jpt__deadline_ms(secs * 1000)) < 0) {
        finish(a, "timed_out");
        goto out;
    }
    /* Waiting counts as pending while the inquiry handler resolves it. */
    for (size_t i = 0; i < a->n; i++)
        if (a->handles[i]->kind == JPT_STATE_WAITING && a->handles[i]->waiter == NULL)
            jpt__handle_ask_soon(a->handles[i]);
out:
    jpt__idmap_free(&l.seen);
    jpt__free(l.ids);
    jpt__free(l.roles);
}

void jpt__await_cancel(jpt__call *call)
{
    if (call->await != NULL)
        finish(call->await, "cancelled");
}

void jpt__await_free(jpt__call *call)
{
    if (call->await == NULL)
        return;
    jpt__await *a = call->await;
    detach(a);
    await_release(a);
}
