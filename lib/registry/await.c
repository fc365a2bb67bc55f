/* The await tool (RFD 037): block on handles until every one in `all` has
 * stopped and at least one in `any` has, or a timeout passes. An await
 * watches its handles; each stop updates two counters, so the cost of an
 * event does not grow with the number of handles awaited, and the await
 * answers in the dispatch in which its condition is met. */
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

/* Ten years: longer than any turn waits. */
#define MAX_TIMEOUT_SECS ((json_int_t)10 * 365 * 24 * 3600)

struct jpt__await {
    jpt__watcher base; /* first: the watcher callbacks get this pointer */
    jpt__call *call;
    jpt_handle **handles; /* in the order given, all then any, no repeats */
    unsigned *roles;
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
        jpt__handle_unwatch(a->handles[i], &a->base);
}

static void await_release(jpt__await *a)
{
    a->call->await = NULL;
    jpt__free(a->handles);
    jpt__free(a->roles);
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

static void on_handle_stopped(jpt__watcher *w, jpt_handle *h, unsigned role)
{
    jpt__await *a = (jpt__await *)w;

    (void)h;
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

/* Adds the ids of `list` (the `any` or `all` argument) with `role`.
 * Returns false with the call completed when the list is malformed. */
static bool take_ids(jpt__call *call, const json_t *list, const char *name,
                     const char **ids, unsigned *roles, size_t *n)
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
        size_t k = 0;
        while (k < *n && strcmp(ids[k], json_string_value(id)) != 0)
            k++;
        if (k == *n) {
            ids[k] = json_string_value(id);
            roles[k] = 0;
            (*n)++;
        }
        roles[k] |= strcmp(name, "all") == 0 ? JPT__ROLE_ALL : JPT__ROLE_ANY;
    }
    return true;
}

void jpt__await_start(jpt__call *call, json_t *arguments)
{
    jpt_registry *r = call->r;
    const json_t *any = json_object_get(arguments, "any");
    const json_t *all = json_object_get(arguments, "all");
    const json_t *timeout = json_object_get(arguments, "timeout_secs");
    size_t cap = json_array_size(any) + json_array_size(all) + 1;
    const char **ids = jpt__calloc(cap, sizeof(*ids));
    unsigned *roles = jpt__calloc(cap, sizeof(*roles));
    jpt__await *a = NULL;
    size_t n = 0;

    if (ids == NULL || roles == NULL) {
        jpt__call_complete(call, "out of memory starting the await", true);
        goto out;
    }
    /* RFD 037, "Recursive await": await is not a stateful tool. */
    if (json_object_get(arguments, "action") != NULL) {
        jpt__call_complete(call, "`await` is not a stateful tool: it takes no `action` and "
                                 "cannot be spawned", true);
        goto out;
    }
    if (!take_ids(call, all, "all", ids, roles, &n) || !take_ids(call, any, "any", ids, roles, &n))
        goto out;
    if (timeout != NULL && !json_is_null(timeout) &&
        (!json_is_integer(timeout) || json_integer_value(timeout) < 0)) {
        jpt__call_complete(call, "Invalid arguments for `await`: `timeout_secs` must be a "
                                 "whole number of seconds, 0 or more", true);
        goto out;
    }
    if (n == 0) {
        jpt__call_complete(call, "At least one handle ID required", true);
        goto out;
    }

    if ((a = jpt__calloc(1, sizeof(*a))) == NULL ||
        (a->handles = jpt__calloc(n, sizeof(*a->handles))) == NULL ||
        (a->roles = jpt__calloc(n, sizeof(*a->roles))) == NULL) {
        if (a != NULL)
            jpt__free(a->handles);
        jpt__free(a);
        jpt__call_complete(call, "out of memory starting the await", true);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        /* RFD 037: an unknown id is an error, not a silent skip. */
        if ((a->handles[i] = jpt__handle_find(r, ids[i])) == NULL) {
            jpt__call_completef(call, true, "Handle `%s` not found", ids[i]);
            jpt__free(a->handles);
            jpt__free(a->roles);
            jpt__free(a);
            goto out;
        }
        a->roles[i] = roles[i];
    }
    a->base.stopped = on_handle_stopped;
    a->call = call;
    a->n = n;
    jpt__timer_init(&a->timer, on_timeout, a);
    call->await = a;
    for (size_t i = 0; i < n; i++) {
        jpt_handle *h = a->handles[i];
        /* Stopped as watchers count it: a tool may report its stop before
         * its process has ended, and is announced only then. */
        bool stopped = h->exited;
        a->has_any |= (a->roles[i] & JPT__ROLE_ANY) != 0;
        if ((a->roles[i] & JPT__ROLE_ALL) && !stopped)
            a->all_left++;
        if ((a->roles[i] & JPT__ROLE_ANY) && stopped)
            a->any_stopped++;
        if (jpt__handle_watch(h, &a->base, a->roles[i]) < 0) {
            a->n = i;
            finish(a, NULL);
            goto out;
        }
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
    for (size_t i = 0; i < n; i++)
        if (a->handles[i]->kind == JPT_STATE_WAITING && a->handles[i]->waiter == NULL)
            jpt__handle_ask_soon(a->handles[i]);
out:
    jpt__free(ids);
    jpt__free(roles);
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
