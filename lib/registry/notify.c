/* Notifications (RFD 037, delivered through RFD 011's system message
 * queue): a handle that changes state while the model is not watching it
 * leaves a notice, per the tool's spawn.notifications flags; the host takes
 * them and puts them in front of the model's next message. One notice per
 * handle, the latest; a notice whose state the model has since received
 * through an action is dropped. */
#include <string.h>

#include "registry/registry.h"

#define PREVIEW_BYTES 240

struct jpt__notice {
    jpt_handle *handle; /* NULL once the handle is gone */
    char *id;
    char *tool;
    int kind;
    char *text;         /* stopped: the result; else an output preview */
    bool is_error;
    double elapsed;
    jpt__notice *next, *prev;
};

static void notice_free(jpt_registry *r, jpt__notice *n)
{
    if (n->prev != NULL)
        n->prev->next = n->next;
    else
        r->notices_head = n->next;
    if (n->next != NULL)
        n->next->prev = n->prev;
    else
        r->notices_tail = n->prev;
    if (n->handle != NULL)
        n->handle->notice = NULL;
    jpt__free(n->id);
    jpt__free(n->tool);
    jpt__free(n->text);
    jpt__free(n);
}

static char *preview(jpt_handle *h)
{
    jpt__buf text = JPT__BUF_INIT;
    char *out = NULL;

    if (jpt__handle_preview(h, PREVIEW_BYTES, &text) == JPT_OK)
        out = jpt__buf_take(&text);
    jpt__buf_free(&text);
    return out;
}

/* Creates or refreshes the handle's notice with its current state. */
static void post(jpt_handle *h)
{
    jpt_registry *r = h->r;
    jpt__notice *n = h->notice;
    const char *result;
    bool is_error = false;
    char *text = NULL;

    if (h->kind == JPT_STATE_STOPPED) {
        if (jpt__handle_final(h, &result, &is_error) == JPT_OK)
            text = jpt__strdup(result);
    } else
        text = preview(h);
    if (text == NULL) {
        jpt__log(JPT_LOG_WARNING, "out of memory: notification for handle '%s' lost", h->id);
        return;
    }
    if (n == NULL) {
        if ((n = jpt__calloc(1, sizeof(*n))) == NULL ||
            (n->id = jpt__strdup(h->id)) == NULL || (n->tool = jpt__strdup(h->tool->name)) == NULL) {
            if (n != NULL)
                jpt__free(n->id);
            jpt__free(n);
            jpt__free(text);
            return;
        }
        n->handle = h;
        h->notice = n;
        n->prev = r->notices_tail;
        if (r->notices_tail != NULL)
            r->notices_tail->next = n;
        else
            r->notices_head = n;
        r->notices_tail = n;
    }
    jpt__free(n->text);
    n->text = text;
    n->kind = h->kind;
    n->is_error = is_error;
    n->elapsed = (double)(jpt__now() - h->started) / 1e9;
}

void jpt__notify_change(jpt_handle *h, unsigned what)
{
    if (what == JPT__NOTIFY_SUCCESS) {
        const char *text;
        bool is_error = false;
        if (jpt__handle_final(h, &text, &is_error) == JPT_OK && is_error)
            what = JPT__NOTIFY_FAILURE;
    }
    if (h->tool->notify & what)
        post(h);
}

void jpt__notify_force(jpt_handle *h)
{
    post(h);
}

void jpt__notify_seen(jpt_handle *h)
{
    if (h->notice != NULL)
        notice_free(h->r, h->notice);
}

void jpt__notify_forget(jpt_handle *h)
{
    if (h->notice != NULL) {
        h->notice->handle = NULL;
        h->notice = NULL;
    }
}

void jpt__notices_free(jpt_registry *r)
{
    while (r->notices_head != NULL)
        notice_free(r, r->notices_head);
}

JPT_EXPORT int jpt_registry_take_notifications(jpt_registry *r, char **json_out)
{
    json_t *list;
    int rc;

    if (json_out == NULL)
        return JPT_ERR_INVALID;
    *json_out = NULL;
    if (r == NULL)
        return JPT_ERR_INVALID;
    if ((list = json_array()) == NULL)
        return JPT_ERR_NOMEM;
    for (jpt__notice *n = r->notices_head; n != NULL; n = n->next) {
        bool stopped = n->kind == JPT_STATE_STOPPED;
        jpt__field f = {n->text, strlen(n->text)};
        json_t *item = json_pack("{s:s, s:s, s:s, s:o, s:f}", "id", n->id, "tool", n->tool,
                                 "state", jpt__kind_name(n->kind),
                                 stopped ? "result" : "output_preview",
                                 jpt__json_from_field(&f), "elapsed_secs",
                                 (double)(long long)(n->elapsed * 10 + 0.5) / 10);
        if (item != NULL && stopped)
            json_object_set_new(item, "is_error", json_boolean(n->is_error));
        if (json_array_append_new(list, item) < 0) {
            json_decref(list);
            return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory taking notifications");
        }
    }
    rc = jpt__json_dump(list, JSON_COMPACT, json_out);
    json_decref(list);
    if (rc < 0)
        return jpt__err(&r->err, rc, "out of memory taking notifications");
    /* Taken is seen: a stopped handle's result has reached the model. */
    while (r->notices_head != NULL) {
        jpt_handle *h = r->notices_head->handle;
        bool stopped = r->notices_head->kind == JPT_STATE_STOPPED;
        notice_free(r, r->notices_head);
        if (h != NULL && stopped) {
            h->delivered = true;
            jpt__handle_release_if_done(h);
        }
    }
    return JPT_OK;
}
