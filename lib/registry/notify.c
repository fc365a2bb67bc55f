/* Notifications (RFD 037, delivered through RFD 011's system message
 * queue): a handle that changes state while the model is not watching it
 * leaves a notice, per the tool's spawn.notifications flags; the host takes
 * them and puts them in front of the model's next message. One notice per
 * handle, the latest; a notice whose state the model has since received
 * through an action is dropped. */
#include <string.h>

#include "registry/party.h"

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

/* What the notice says: a stopped handle's result, else a preview. */
static char *notice_text(jpt_handle *h, bool *is_error)
{
    jpt__buf text = JPT__BUF_INIT;
    const char *result;
    char *out = NULL;

    *is_error = false;
    if (h->kind == JPT_STATE_STOPPED)
        return jpt__view_final(h, &result, is_error) == JPT_OK ? jpt__strdup(result) : NULL;
    if (jpt__view_preview(h, PREVIEW_BYTES, &text) == JPT_OK)
        out = jpt__buf_take(&text);
    jpt__buf_free(&text);
    return out;
}

static jpt__notice *notice_new(jpt_handle *h)
{
    jpt_registry *r = h->r;
    jpt__notice *n = jpt__calloc(1, sizeof(*n));

    if (n == NULL || (n->id = jpt__strdup(h->id)) == NULL ||
        (n->tool = jpt__strdup(h->tool->name)) == NULL) {
        if (n != NULL)
            jpt__free(n->id);
        jpt__free(n);
        return NULL;
    }
    n->handle = h;
    h->notice = n;
    n->prev = r->notices_tail;
    if (r->notices_tail != NULL)
        r->notices_tail->next = n;
    else
        r->notices_head = n;
    r->notices_tail = n;
    return n;
}

/* Creates or refreshes the handle's notice with its current state and
 * `text` (taken; NULL: out of memory). */
static void post_text(jpt_handle *h, char *text, bool is_error)
{
    jpt__notice *n = text != NULL ? h->notice : NULL;

    if (text != NULL && n == NULL)
        n = notice_new(h);
    if (n == NULL) {
        jpt__log(JPT_LOG_WARNING, "out of memory: notification for handle '%s' lost", h->id);
        jpt__free(text);
        return;
    }
    jpt__free(n->text);
    n->text = text;
    n->kind = h->kind;
    n->is_error = is_error;
    n->elapsed = jpt__elapsed_secs(h->started);
}

/* Creates or refreshes the handle's notice with its current state. */
static void post(jpt_handle *h)
{
    bool is_error;
    char *text = notice_text(h, &is_error);

    post_text(h, text, is_error);
}

/* Per the tool's flags: `what` is the JPT__NOTIFY_* of what happened. */
static void notify(jpt_handle *h, unsigned what)
{
    if (what == JPT__NOTIFY_SUCCESS) {
        const char *text;
        bool is_error = false;
        if (jpt__view_final(h, &text, &is_error) == JPT_OK && is_error)
            what = JPT__NOTIFY_FAILURE;
    }
    if (h->tool->notify & what)
        post(h);
}

void jpt__notify_handle_changed(jpt_handle *h, unsigned what)
{
    if (what & JPT__HEARD_GONE) {
        /* The notice keeps its copies. */
        if (h->notice != NULL) {
            h->notice->handle = NULL;
            h->notice = NULL;
        }
        return;
    }
    if (what & JPT__HEARD_SEEN) {
        if (h->notice != NULL)
            notice_free(h->r, h->notice);
        return;
    }
    /* RFD 037: a handle an action or an await watches tells the model
     * there; no notification is due. */
    if (jpt__handle_watched(h))
        return;
    if (what & JPT__HEARD_STOPPED) {
        if (!h->delivered)
            notify(h, JPT__NOTIFY_SUCCESS);
    } else if (what & JPT__HEARD_WAITING)
        notify(h, JPT__NOTIFY_WAITING);
    else if ((what & (JPT__HEARD_OUTPUT | JPT__HEARD_STATE)) && h->kind == JPT_STATE_RUNNING)
        notify(h, JPT__NOTIFY_CONTENT);
}

void jpt__notify_force(jpt_handle *h)
{
    post(h);
}

void jpt__notify_instead(jpt_handle *h, const char *text, bool is_error)
{
    post_text(h, jpt__strdup(text), is_error);
}

void jpt__notices_free(jpt_registry *r)
{
    while (r->notices_head != NULL)
        notice_free(r, r->notices_head);
}

static json_t *notice_json(const jpt__notice *n)
{
    bool stopped = n->kind == JPT_STATE_STOPPED;
    jpt__field f = {n->text, strlen(n->text)};
    json_t *item = json_pack("{s:s, s:s, s:s, s:o, s:f}", "id", n->id, "tool", n->tool,
                             "state", jpt__state_kind_name(n->kind),
                             stopped ? "result" : "output_preview", jpt__json_from_field(&f),
                             "elapsed_secs", n->elapsed);

    if (item != NULL && stopped &&
        json_object_set_new(item, "is_error", json_boolean(n->is_error)) < 0) {
        json_decref(item);
        return NULL;
    }
    return item;
}

/* Taken is seen: a stopped handle's result has reached the model. */
void jpt__notices_take(jpt_registry *r)
{
    while (r->notices_head != NULL) {
        jpt_handle *h = r->notices_head->handle;
        bool stopped = r->notices_head->kind == JPT_STATE_STOPPED;
        notice_free(r, r->notices_head);
        if (h != NULL && stopped)
            jpt__handle_delivered(h, JPT__GIVEN_NOTICE);
    }
}

int jpt__text_entry(jpt__buf *out, const char *text, size_t n)
{
    int rc = jpt__buf_append(out, text, n);

    if (rc == JPT_OK)
        rc = jpt__buf_puts(out, n > 0 && text[n - 1] == '\n' ? "\n" : "\n\n");
    return rc;
}

/* One notice as the model reads it in text. */
static int notice_text_entry(const jpt__notice *n, jpt__buf *out)
{
    size_t len = strlen(n->text);
    int rc;

    if (n->kind == JPT_STATE_STOPPED)
        rc = jpt__buf_printf(out, "[Notification: handle `%s` (tool `%s`) stopped after %.1f s%s]\n",
                             n->id, n->tool, n->elapsed, n->is_error ? ", with an error" : "");
    else if (len == 0)
        return jpt__buf_printf(out, "[Notification: handle `%s` (tool `%s`) is %s (%.1f s), with "
                                    "no output yet]\n\n",
                               n->id, n->tool, jpt__state_kind_name(n->kind), n->elapsed);
    else
        rc = jpt__buf_printf(out, "[Notification: handle `%s` (tool `%s`) is %s (%.1f s); its "
                                  "latest output:]\n",
                             n->id, n->tool, jpt__state_kind_name(n->kind), n->elapsed);
    return rc == JPT_OK ? jpt__text_entry(out, n->text, len) : rc;
}

int jpt__notices_text(const jpt_registry *r, jpt__buf *out)
{
    int rc = JPT_OK;

    for (const jpt__notice *n = r->notices_head; n != NULL && rc == JPT_OK; n = n->next)
        rc = notice_text_entry(n, out);
    return rc;
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
    for (jpt__notice *n = r->notices_head; n != NULL; n = n->next)
        if (json_array_append_new(list, notice_json(n)) < 0) {
            json_decref(list);
            return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory taking notifications");
        }
    rc = jpt__json_dump(list, JSON_COMPACT, json_out);
    json_decref(list);
    if (rc < 0)
        return jpt__err(&r->err, rc, "out of memory taking notifications");
    jpt__notices_take(r);
    return JPT_OK;
}
