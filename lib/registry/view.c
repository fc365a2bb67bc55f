/* What the model reads of a handle: its news as a state, a one-shot run's
 * result, the rendered and limited text, the final result kept once, a
 * preview, and RFD 009's handle response, of which this is the one
 * writer. */
#include <string.h>

#include "registry/handle.h"

/* Text a stateful handle's end adds when nothing else says how it ended. */
static const char aborted_text[] = "[aborted]";
/* …and when memory ran out for why it ended (issue 18). */
static const char lost_text[] = "out of memory keeping the tool's output";

bool jpt__view_has_news(const jpt_handle *h)
{
    return jpt__capture_total(&h->text) > 0 || h->unread_partial || !jpt__blockq_empty(&h->blocks);
}

/* The text run not yet turned into a block, as one (a peek leaves it). */
static int add_text_run(jpt_handle *h, jpt_state *s)
{
    jpt__buf text = JPT__BUF_INIT;
    int rc;

    if (jpt__capture_total(&h->text) == 0)
        return JPT_OK;
    rc = jpt__capture_text(&h->text, &text);
    if (rc == JPT_OK)
        rc = jpt__state_add_text(s, text.data, text.len);
    jpt__buf_free(&text);
    return rc;
}

static int add_blocks(jpt_state *s, const jpt_state *from)
{
    int rc = JPT_OK;

    size_t n;
    const jpt__block *blocks = jpt__state_blocks(from, &n);

    for (size_t i = 0; rc == JPT_OK && i < n; i++) {
        jpt__block copy;
        if ((rc = jpt__block_copy(&blocks[i], &copy)) == JPT_OK)
            rc = jpt__state_push_block(s, &copy);
    }
    return rc;
}

/* How a stopped handle ended, after its output: why the registry ended
 * it, else what its runtime said of the end, else that it was aborted;
 * and whether that is an error. An abort is not. */
static int add_end(jpt_handle *h, jpt_state *s)
{
    int rc = JPT_OK;

    if (h->run.end_has_output)
        rc = add_blocks(s, h->end); /* why it ended, then its output */
    else if (h->failure != NULL)
        rc = jpt__state_add_text(s, h->failure, strlen(h->failure));
    else if (h->lost)
        rc = jpt__state_add_text(s, lost_text, sizeof(lost_text) - 1);
    else if (h->end != NULL && jpt_state_block_count(h->end) > 0)
        rc = add_blocks(s, h->end);
    else if (h->run.aborted)
        rc = jpt__state_add_text(s, aborted_text, sizeof(aborted_text) - 1);
    bool failed = h->failure != NULL || h->lost || h->stop_error ||
                  (h->end != NULL && jpt_state_is_error(h->end));
    if (rc == JPT_OK && failed && (!h->run.aborted || h->lost)) {
        rc = jpt__state_set_error_from_blocks(s, h->stop_transient);
        for (size_t i = 0; rc == JPT_OK && i < h->stop_trace.n; i++)
            rc = jpt__state_add_trace(s, h->stop_trace.v[i]);
    }
    return rc;
}

int jpt__view_take(jpt_handle *h, bool peek, jpt_state **out)
{
    jpt_state *s = jpt__state_alloc(h->kind);
    int rc = s != NULL ? JPT_OK : JPT_ERR_NOMEM;
    /* The end holds the text not read yet, stream by stream. */
    bool in_end = h->kind == JPT_STATE_STOPPED && h->run.end_has_output;

    *out = NULL;
    if (rc == JPT_OK && !peek) {
        rc = jpt__handle_flush_text(h);
        h->run.read_out = h->received_out;
        h->run.read_err = h->received_err;
    }
    if (rc == JPT_OK && !in_end)
        rc = jpt__blockq_copy(&h->blocks, s);
    if (rc == JPT_OK && peek && !in_end)
        rc = add_text_run(h, s);
    if (rc == JPT_OK && h->kind == JPT_STATE_STOPPED)
        rc = add_end(h, s);
    if (rc < 0) {
        jpt_state_unref(s);
        return rc;
    }
    if (!peek) {
        jpt__blockq_clear(&h->blocks);
        h->unread_partial = false;
    }
    *out = s;
    return JPT_OK;
}

int jpt__view_result(jpt_handle *h, jpt_state **out)
{
    /* A runtime that does not report states built the whole result of a
     * one-shot run at its end (a process's output, parsed). */
    if (h->run.action == JPT__ACTION_NONE && h->end != NULL && !h->lost &&
        !(h->tool->rt->caps & JPT__RT_REPORTS_STATES)) {
        *out = jpt_state_ref(h->end);
        return *out != NULL ? JPT_OK : JPT_ERR_NOMEM;
    }
    return jpt__view_take(h, false, out);
}

int jpt__view_text(const jpt_handle *h, const jpt_state *s, jpt__buf *out)
{
    size_t limit = jpt__tool_output_limit(h->r, h->tool);
    char *text = NULL;
    /* The root is the registry's, absolute and resolved (realpath). */
    int rc = jpt__state_render_at(s, h->r->root, &text);

    if (rc < 0)
        return rc;
    /* A capture that was already cut carries its own marker, so only text
     * clearly past the limit is cut again. */
    size_t n = strlen(text);
    const jpt__runtime_ops *rt = h->tool->rt;
    const char *spool = rt->spool_path != NULL ? rt->spool_path(&h->run) : NULL;
    rc = n > limit + 256 ? jpt__limit_text(text, n, limit, spool, out)
                         : jpt__buf_append(out, text, n);
    jpt_free(text);
    return rc;
}

int jpt__view_final(jpt_handle *h, const char **text, bool *is_error)
{
    if (h->final_text == NULL) {
        jpt_state *s = NULL;
        jpt__buf buf = JPT__BUF_INIT;
        int rc = jpt__view_take(h, false, &s);
        if (rc == JPT_OK)
            rc = jpt__view_text(h, s, &buf);
        if (rc == JPT_OK && (h->final_text = jpt__buf_take(&buf)) == NULL)
            rc = JPT_ERR_NOMEM;
        if (rc == JPT_OK)
            h->final_error = jpt_state_is_error(s);
        jpt_state_unref(s);
        jpt__buf_free(&buf);
        if (rc < 0)
            return rc;
    }
    *text = h->final_text;
    *is_error = h->final_error;
    return JPT_OK;
}

int jpt__view_preview(jpt_handle *h, size_t max, jpt__buf *out)
{
    jpt__buf all = JPT__BUF_INIT;
    jpt_state *s = NULL;
    int rc;

    /* Structured output previews as the model would read it; plain output
     * as the tool wrote it. */
    if (h->structured || (h->tool->rt->caps & JPT__RT_REPORTS_STATES)) {
        rc = jpt__view_take(h, true, &s);
        if (rc == JPT_OK)
            rc = jpt__view_text(h, s, &all);
        jpt_state_unref(s);
    } else
        rc = jpt__capture_text(&h->recent, &all);
    if (rc == JPT_OK) {
        size_t from = all.len > max ? all.len - max : 0;
        while (from < all.len && ((unsigned char)all.data[from] & 0xC0) == 0x80)
            from++;
        rc = jpt__buf_append(out, all.data != NULL ? all.data + from : "", all.len - from);
    }
    jpt__buf_free(&all);
    return rc;
}

/* {"id":…,"state":"…",  — the opening every response shares. */
static int open_response(const jpt_handle *h, const char *state, jpt__buf *out)
{
    int rc = jpt__buf_puts(out, "{\"id\":");

    if (rc == JPT_OK)
        rc = jpt__buf_json_string(out, h->id, strlen(h->id));
    if (rc == JPT_OK && (rc = jpt__buf_puts(out, ",\"state\":\"")) == JPT_OK &&
        (rc = jpt__buf_puts(out, state)) == JPT_OK)
        rc = jpt__buf_puts(out, "\",");
    return rc;
}

int jpt__view_response(jpt_handle *h, bool error_key, jpt__buf *out, bool *is_error)
{
    const char *text;
    int rc;

    *is_error = false;
    /* A tool that said it stopped is stopped for the model, though its
     * process may not have ended yet. */
    if (h->kind == JPT_STATE_STOPPED) {
        if ((rc = jpt__view_final(h, &text, is_error)) < 0 ||
            (rc = open_response(h, "stopped", out)) < 0 ||
            (rc = jpt__buf_puts(out, error_key && *is_error ? "\"error\":" : "\"result\":")) < 0)
            return rc;
        if ((rc = jpt__buf_json_string(out, text, strlen(text))) < 0)
            return rc;
        return jpt__buf_putc(out, '}');
    }
    jpt_state *s = NULL;
    jpt__buf content = JPT__BUF_INIT;
    /* Not started yet: pre-registered, or in line for a process slot
     * (registry.h, max_processes). */
    const char *state = h->phase == JPT__PHASE_PENDING || h->run.queued
                            ? "pending"
                            : jpt__state_kind_name(h->kind);
    if ((rc = jpt__view_take(h, false, &s)) == JPT_OK &&
        (rc = jpt__view_text(h, s, &content)) == JPT_OK &&
        (rc = open_response(h, state, out)) == JPT_OK &&
        (rc = jpt__buf_puts(out, "\"content\":")) == JPT_OK &&
        (rc = jpt__buf_json_string(out, content.data != NULL ? content.data : "",
                                   content.len)) == JPT_OK)
        rc = jpt__buf_putc(out, '}');
    jpt_state_unref(s);
    jpt__buf_free(&content);
    return rc;
}
