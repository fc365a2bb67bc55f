/* Handles: one run of a tool, as a process (stdio runtime) or as host
 * callbacks (builtin runtime). A handle gathers its output, follows its
 * state (RFD 009: running, waiting, stopped), and tells the call waiting on
 * it when the output has settled or the tool has stopped. */
#define _GNU_SOURCE /* strsignal */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

static void on_child_output(jpt__child *c, int stream, const char *p, size_t n, void *ud);
static void on_child_exited(jpt__child *c, const jpt__exit *e, void *ud);
static const jpt__child_ops child_ops = {on_child_output, on_child_exited};

static void slot_queue_remove(jpt_handle *h);
static void child_gone(jpt_handle *h);
static void on_settled(jpt__timer *t);
static void on_timeout(jpt__timer *t);
static void terminate(jpt_handle *h);
static void describe_exit(const jpt_handle *h, char *out, size_t n);
static void run_step(jpt__defer *d);

/* The model's view of a stateful handle is built from the output since it
 * last looked: structured JSON lines (RFD 058 envelopes, RFD 009 states)
 * become their blocks, everything else text. */
typedef struct jpt__pending {
    jpt__blockq blocks; /* blocks since the last take, bounded */
    jpt__capture text;  /* the text run not yet turned into a block */
    jpt__buf line;      /* an incomplete last line */
} jpt__pending;

typedef struct handle_ext {
    jpt__pending pending;
    jpt__block question;  /* the pending question of a waiting handle */
    bool has_question;
    bool stop_error;      /* the stopped state the tool reported */
    bool stop_transient;
    jpt__strv stop_trace;
    jpt_event *output_event; /* the queued OUTPUT event, until popped */
    jpt__defer ask_step;  /* its question to the inquiry handler, from the loop */
} handle_ext;

/* The extension lives right after the public part, in one allocation. */
typedef struct handle_alloc {
    struct jpt_handle h;
    handle_ext x;
} handle_alloc;

static handle_ext *ext(const jpt_handle *h)
{
    return &((handle_alloc *)h)->x;
}

/* Still a question nobody else is answering: an await watches the handle
 * and no action of the model waits on it. */
static void run_ask_step(jpt__defer *d)
{
    jpt_handle *h = d->ud;

    if (h->kind == JPT_STATE_WAITING && h->waiter == NULL && h->nwatchers > 0)
        jpt__await_handle_waiting(h);
}

void jpt__handle_ask_soon(jpt_handle *h)
{
    /* The inquiry handler is a host callback: only inside dispatch. A
     * builtin may report its question from anywhere. */
    if (h->r->dispatching > 0)
        jpt__await_handle_waiting(h);
    else
        jpt__defer_queue(h->r->loop, &ext(h)->ask_step);
}

int jpt__handle_new(jpt_registry *r, jpt__tool *t, const char *id, json_t *arguments,
                    jpt_handle **out)
{
    handle_alloc *a = jpt__calloc(1, sizeof(*a));
    jpt_handle *h = &a->h;

    *out = NULL;
    if (a == NULL)
        return JPT_ERR_NOMEM;
    h->r = r;
    h->kind = JPT_STATE_RUNNING;
    h->started = jpt__now();
    h->id = jpt__strdup(id);
    h->answers = json_object();
    if (h->id == NULL || h->answers == NULL) {
        jpt__free(h->id);
        json_decref(h->answers);
        jpt__free(a);
        return JPT_ERR_NOMEM;
    }
    /* Structured output is bounded like text (issue 7). */
    jpt__blockq_init(&a->x.pending.blocks, r->capture_bytes);
    h->tool = jpt__tool_ref(t);
    h->arguments = json_incref(arguments);
    jpt__capture_init(&h->out, r->capture_bytes);
    jpt__capture_init(&h->err, r->capture_bytes);
    jpt__capture_init(&a->x.pending.text, r->capture_bytes);
    jpt__timer_init(&h->settle_timer, on_settled, h);
    jpt__timer_init(&h->yield_timer, on_settled, h);
    jpt__timer_init(&h->timeout_timer, on_timeout, h);
    jpt__defer_init(&h->step, run_step, h);
    jpt__defer_init(&ext(h)->ask_step, run_ask_step, h);
    JPT__LIST_PUSH(r->handles, h);
    *out = h;
    return JPT_OK;
}


void jpt__handle_free(jpt_handle *h)
{
    jpt_registry *r;
    handle_ext *x;

    if (h == NULL)
        return;
    r = h->r;
    x = ext(h);
    /* A builtin that has not stopped is told to, so the host never keeps a
     * handle the registry has freed (registry.h, jpt_handle_update). */
    if (h->tool->runtime == JPT__RUNTIME_BUILTIN && !h->exited && h->tool->ops.abort != NULL) {
        h->releasing = true;
        h->tool->ops.abort(h, h->tool->ud);
    }
    jpt__timer_stop(r->loop, &h->settle_timer);
    jpt__timer_stop(r->loop, &h->yield_timer);
    jpt__timer_stop(r->loop, &h->timeout_timer);
    jpt__defer_cancel(r->loop, &h->step);
    jpt__defer_cancel(r->loop, &x->ask_step);
    jpt__free(h->step_answer);
    jpt__inquiry_forget_handle(h);
    /* A queued event or notice keeps its copied strings, not the handle. */
    if (x->output_event != NULL)
        x->output_event->output_of = NULL;
    jpt__notify_forget(h);
    while (h->subs != NULL)
        jpt__handle_unwatch(h->subs);
    if (h->held_by != NULL)
        h->held_by->held[h->held_index] = NULL;
    if (h->registered)
        jpt__idmap_remove(&r->handle_ids, h->id, h);
    jpt__free(h->final_text);
    if (h->child != NULL) {
        jpt__child_free(h->child);
        h->child = NULL;
        child_gone(h);
    }
    slot_queue_remove(h);
    JPT__LIST_REMOVE(r->handles, h);
    jpt__capture_free(&h->out);
    jpt__capture_free(&h->err);
    jpt__capture_free(&x->pending.text);
    jpt__buf_free(&x->pending.line);
    jpt__blockq_free(&x->pending.blocks);
    jpt__block_clear(&x->question);
    for (size_t i = 0; i < x->stop_trace.n; i++)
        jpt__free(x->stop_trace.v[i]);
    jpt__free(x->stop_trace.v);
    jpt_state_unref(h->state);
    json_decref(h->arguments);
    json_decref(h->answers);
    jpt__tool_unref(h->tool);
    jpt__free(h->failure);
    jpt__free(h->id);
    jpt__free(h);
}

jpt_handle *jpt__handle_find(jpt_registry *r, const char *id)
{
    return jpt__idmap_get(&r->handle_ids, id);
}

int jpt__handle_register(jpt_handle *h)
{
    int rc = jpt__idmap_put(&h->r->handle_ids, h->id, h);

    if (rc == JPT_OK)
        h->registered = true;
    return rc;
}

size_t jpt__handles_children(jpt_registry *r, jpt__child ***out)
{
    size_t n = 0;

    *out = NULL;
    for (jpt_handle *h = r->handles; h != NULL; h = h->next)
        n += h->child != NULL;
    if (n == 0 || (*out = jpt__calloc(n, sizeof(**out))) == NULL)
        return 0;
    n = 0;
    for (jpt_handle *h = r->handles; h != NULL; h = h->next)
        if (h->child != NULL) {
            (*out)[n++] = h->child;
            h->child = NULL;
            r->nchildren--;
        }
    return n;
}

/* ---- Starting ------------------------------------------------------------------ */

/* Processes wait for a slot beyond max_processes (registry.h): in order,
 * each started as a child of the registry is reaped. */
static void slot_queue_remove(jpt_handle *h)
{
    jpt_registry *r = h->r;

    if (!h->slot_waiting)
        return;
    if (h->slot_prev != NULL)
        h->slot_prev->slot_next = h->slot_next;
    else
        r->slot_head = h->slot_next;
    if (h->slot_next != NULL)
        h->slot_next->slot_prev = h->slot_prev;
    else
        r->slot_tail = h->slot_prev;
    h->slot_next = h->slot_prev = NULL;
    h->slot_waiting = false;
}

static void slot_queue_push(jpt_handle *h, int action)
{
    jpt_registry *r = h->r;

    h->slot_waiting = true;
    h->slot_action = action;
    h->slot_next = NULL;
    h->slot_prev = r->slot_tail;
    if (r->slot_tail != NULL)
        r->slot_tail->slot_next = h;
    else
        r->slot_head = h;
    r->slot_tail = h;
}

static int spawn_stdio(jpt_handle *h, int action, jpt__buf *why);

/* From the loop, whenever a child was reaped: the handles waiting for a
 * slot start, a few per dispatch. */
void jpt__handle_slots_freed(jpt__defer *d)
{
    jpt_registry *r = d->ud;

    for (int n = 0; n < 16 && r->slot_head != NULL && r->nchildren < r->max_processes &&
                    !r->shutting_down;
         n++) {
        jpt_handle *h = r->slot_head;
        jpt__buf why = JPT__BUF_INIT;
        slot_queue_remove(h);
        int rc = spawn_stdio(h, h->slot_action, &why);
        /* It stops with the reason as its result, which the call
         * waiting on it reads. */
        if (rc < 0 && !h->slot_waiting)
            jpt__handle_kill(h, why.data != NULL ? why.data : jpt_strerror(rc));
        jpt__buf_free(&why);
    }
    if (r->slot_head != NULL && r->nchildren < r->max_processes)
        jpt__defer_queue(r->loop, d);
}

static void child_gone(jpt_handle *h)
{
    jpt_registry *r = h->r;

    r->nchildren--;
    jpt__stale_remove(r, h);
    if (r->slot_head != NULL)
        jpt__defer_queue(r->loop, &r->slot_step);
    jpt__registry_child_gone(r);
}

static int start_stdio(jpt_handle *h, int action, jpt__buf *why)
{
    /* Beyond the limit the tool waits its turn; the call waiting on it
     * sees it running, without output, until then. */
    if (h->r->nchildren >= h->r->max_processes) {
        slot_queue_push(h, action);
        return JPT_OK;
    }
    return spawn_stdio(h, action, why);
}

static int spawn_stdio(jpt_handle *h, int action, jpt__buf *why)
{
    jpt_registry *r = h->r;
    jpt__tool *t = h->tool;
    jpt__command cmd;
    jpt__errbuf err;
    int rc = jpt__command_build(r, t, action, h->arguments, h->answers, &cmd, why);

    if (rc < 0)
        return rc;
    /* Output the model reads whole needs no file (registry.h, spool_dir). */
    if (r->spool_dir != NULL)
        jpt__capture_spool_in(&h->out, r->spool_dir, jpt__tool_output_limit(r, t),
                              jpt__registry_spooled, r);
    jpt__spawn spawn = {
        .argv = (const char *const *)cmd.argv,
        .envp = (const char *const *)cmd.envp,
        .cwd = r->root,
        /* RFD 009: without an action the call is one-shot, and a one-shot
         * child reads /dev/null (an open pipe would keep `sh` waiting). */
        .stdin_pipe = action == JPT__ACTION_SPAWN || t->stdin_json,
        .devnull = r->devnull,
        .pty = t->pty,
        .rows = 24,
        .cols = 80,
        .drain_ms = r->drain_ms,
        .contain = r->contain,
    };
    rc = jpt__child_spawn(r->loop, &spawn, &child_ops, h, &h->child, &err);
    if (rc == JPT_ERR_LIMIT && r->nchildren > 0) {
        /* Out of fds or processes for now (the host may hold many): a
         * child of ours will free some as it ends. */
        jpt__command_free(&cmd);
        jpt__log(JPT_LOG_DEBUG, "tool '%s' waits for a slot: %s", t->name, err.text);
        slot_queue_push(h, action);
        return JPT_OK;
    }
    if (rc < 0) {
        jpt__command_free(&cmd);
        return jpt__buf_printf(why, "the tool could not be started: %s", err.text) < 0
                   ? JPT_ERR_NOMEM
                   : rc;
    }
    r->nchildren++;
    jpt__log(JPT_LOG_INFO, "tool '%s' started for '%s': pid %d (%s)", t->name, h->id,
             (int)jpt__child_pid(h->child), cmd.argv[0]);
    if (cmd.stdin_json != NULL) {
        rc = jpt__child_write(h->child, cmd.stdin_json, strlen(cmd.stdin_json));
        if (rc == JPT_OK)
            rc = jpt__child_write(h->child, "\n", 1);
        if (action != JPT__ACTION_SPAWN)
            jpt__child_close_input(h->child);
    }
    jpt__command_free(&cmd);
    if (rc == JPT_OK && action == JPT__ACTION_NONE && t->timeout_ms > 0)
        rc = jpt__timer_start(r->loop, &h->timeout_timer, jpt__deadline_ms(t->timeout_ms));
    jpt__stale_add(r, h, jpt__child_pid(h->child));
    return rc;
}

int jpt__handle_start(jpt_handle *h, int action, jpt__buf *why)
{
    jpt__tool *t = h->tool;
    int rc;

    h->kind = JPT_STATE_RUNNING;
    h->exited = false;
    h->aborting = false;
    jpt__free(h->failure);
    h->failure = NULL;
    jpt__capture_reset(&h->out);
    jpt__capture_reset(&h->err);
    if (t->runtime == JPT__RUNTIME_STDIO)
        return start_stdio(h, action, why);

    char *args = NULL;
    if ((rc = jpt__json_dump(h->arguments, JSON_COMPACT, &args)) < 0)
        return rc;
    rc = t->ops.start(h, args, t->ud);
    jpt__free(args);
    if (rc < 0 && jpt__buf_printf(why, "the tool failed to start: %s",
                                  jpt_strerror(rc)) < 0)
        return JPT_ERR_NOMEM;
    return rc;
}

/* ---- Output ---------------------------------------------------------------------- */

static int flush_text_run(jpt_handle *h)
{
    handle_ext *x = ext(h);
    jpt__buf text = JPT__BUF_INIT;
    jpt__block b = {.type = JPT_BLOCK_TEXT};

    if (x->pending.text.total == 0)
        return JPT_OK;
    int rc = jpt__capture_text(&x->pending.text, &text);
    if (rc == JPT_OK) {
        b.f[JPT_FIELD_TEXT].len = text.len;
        b.f[JPT_FIELD_TEXT].ptr = jpt__buf_take(&text);
        rc = b.f[JPT_FIELD_TEXT].ptr != NULL
                 ? jpt__blockq_push(&x->pending.blocks, &b)
                 : JPT_ERR_NOMEM;
    }
    jpt__buf_free(&text);
    jpt__capture_reset(&x->pending.text);
    return rc;
}

/* Takes in a state the tool reported: its blocks join the pending ones,
 * and it decides the handle's kind. */
static int absorb_state(jpt_handle *h, const jpt_state *s)
{
    handle_ext *x = ext(h);
    int rc = flush_text_run(h);

    for (size_t i = 0; rc == JPT_OK && i < s->nblocks; i++) {
        jpt__block copy;
        if ((rc = jpt__block_copy(&s->blocks[i], &copy)) == JPT_OK)
            rc = jpt__blockq_push(&x->pending.blocks, &copy);
        if (rc == JPT_OK && s->blocks[i].type == JPT_BLOCK_QUESTION &&
            s->kind == JPT_STATE_WAITING && !x->has_question) {
            rc = jpt__block_copy(&s->blocks[i], &x->question);
            x->has_question = rc == JPT_OK;
        }
    }
    if (rc < 0)
        return rc;
    h->kind = s->kind;
    if (s->kind == JPT_STATE_STOPPED) {
        x->stop_error = s->is_error;
        x->stop_transient = s->transient;
        for (size_t i = 0; rc == JPT_OK && i < s->trace.n; i++)
            rc = jpt__strv_push(&x->stop_trace, s->trace.v[i], strlen(s->trace.v[i]));
    }
    return rc;
}

/* A complete line of a stateful tool: a structured state, or text. */
static int take_line(jpt_handle *h, const char *line, size_t n)
{
    size_t lead = 0;

    while (lead < n && (line[lead] == ' ' || line[lead] == '\t'))
        lead++;
    if (lead < n && line[lead] == '{') {
        jpt_state *s = NULL;
        size_t len = n > 0 && line[n - 1] == '\n' ? n - 1 : n;
        int rc = jpt_state_parse(line, len, 0, &s);
        if (rc < 0)
            return rc;
        if (!s->raw) {
            h->structured = true;
            rc = absorb_state(h, s);
            jpt_state_unref(s);
            return rc;
        }
        jpt_state_unref(s);
    }
    return jpt__capture_append(&ext(h)->pending.text, line, n);
}

static int take_output(jpt_handle *h, const char *p, size_t n)
{
    handle_ext *x = ext(h);
    jpt__buf *line = &x->pending.line;
    int rc = JPT_OK;

    while (rc == JPT_OK && n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t k = nl != NULL ? (size_t)(nl - p) + 1 : n;
        /* A line longer than the capture is text, whatever it starts with. */
        if (nl == NULL && line->len + k > h->r->capture_bytes) {
            if ((rc = jpt__capture_append(&x->pending.text, line->data, line->len)) == JPT_OK)
                rc = jpt__capture_append(&x->pending.text, p, k);
            line->len = 0;
        } else if (line->len == 0 && nl != NULL)
            rc = take_line(h, p, k);
        else if ((rc = jpt__buf_append(line, p, k)) == JPT_OK && nl != NULL) {
            rc = take_line(h, line->data, line->len);
            line->len = 0;
        }
        p += k;
        n -= k;
    }
    return rc;
}

static void queue_output_event(jpt_handle *h)
{
    if (h->registered && ext(h)->output_event == NULL)
        ext(h)->output_event = jpt__registry_event(h->r, JPT_EVENT_OUTPUT, NULL, h);
}

void jpt__handle_output_event_gone(jpt_handle *h)
{
    ext(h)->output_event = NULL;
}

/* The tool said something: an action waiting for quiet waits longer. A
 * reported state other than running answers it at once. */
static void note_activity(jpt_handle *h, int kind_before)
{
    jpt__call *call = h->waiter;

    if (call == NULL || !jpt__timer_active(&h->settle_timer))
        return;
    if (h->kind != kind_before || h->kind != JPT_STATE_RUNNING) {
        jpt__call_wake(call);
        return;
    }
    jpt__timer_start(h->r->loop, &h->settle_timer,
                     jpt__deadline_ms(jpt__tool_settle_ms(h->r, h->tool)));
}

/* Whether an action or an await of the model is watching the handle:
 * then it learns of changes there, and no notification is due (RFD 037). */
static bool watched(const jpt_handle *h)
{
    return h->waiter != NULL || h->nwatchers > 0;
}

/* A registered handle produced output or changed state while running. */
static void changed(jpt_handle *h, int kind_before)
{
    if (!h->registered)
        return;
    queue_output_event(h);
    if (h->kind == JPT_STATE_WAITING && kind_before != JPT_STATE_WAITING) {
        jpt__registry_event(h->r, JPT_EVENT_STATE, NULL, h);
        if (h->waiter == NULL && h->nwatchers > 0)
            jpt__handle_ask_soon(h);
        else if (!watched(h))
            jpt__notify_change(h, JPT__NOTIFY_WAITING);
    } else if (h->kind == JPT_STATE_RUNNING && !watched(h))
        jpt__notify_change(h, JPT__NOTIFY_CONTENT);
}

static void on_child_output(jpt__child *c, int stream, const char *p, size_t n, void *ud)
{
    jpt_handle *h = ud;
    int before = h->kind;
    int rc;

    (void)c;
    rc = jpt__capture_append(stream == JPT__STDOUT ? &h->out : &h->err, p, n);
    /* States are lines of stdout; stderr is text, kept out of the line
     * being assembled so that it cannot split a state in two. */
    if (h->tool->stateful && rc == JPT_OK)
        rc = stream == JPT__STDOUT ? take_output(h, p, n)
                                   : jpt__capture_append(&ext(h)->pending.text, p, n);
    if (rc < 0 && h->failure == NULL)
        h->failure = jpt__strdup("out of memory keeping the tool's output");
    if (h->tool->stateful) {
        changed(h, before);
        note_activity(h, before);
    }
}

static void stopped(jpt_handle *h)
{
    jpt_registry *r = h->r;

    h->kind = JPT_STATE_STOPPED;
    h->exited = true;
    h->placeholder = false;
    jpt__timer_stop(r->loop, &h->settle_timer);
    jpt__timer_stop(r->loop, &h->yield_timer);
    jpt__timer_stop(r->loop, &h->timeout_timer);
    if (!h->registered) {
        if (h->waiter != NULL)
            jpt__call_wake(h->waiter);
        return;
    }
    /* Everyone who waits hears of it; the handle is not freed before the
     * last of them has (busy), whatever they do with it. A watcher may end
     * other subscriptions than its own as it hears (an await that finishes
     * lets go of every handle it watched), so the list is taken first. */
    jpt__handle_pin(h);
    jpt__registry_event(r, JPT_EVENT_STATE, NULL, h);
    if (!watched(h) && !h->delivered)
        jpt__notify_change(h, JPT__NOTIFY_SUCCESS);
    size_t n = h->nwatchers;
    jpt__sub **copy = n > 0 ? jpt__calloc(n, sizeof(*copy)) : NULL;
    size_t k = 0;
    for (jpt__sub *s = h->subs; copy != NULL && s != NULL; s = s->next)
        copy[k++] = s;
    for (size_t i = 0; i < k; i++)
        copy[i]->w->stopped(copy[i]->w, copy[i]);
    if (n > 0 && copy == NULL)
        jpt__log(JPT_LOG_ERROR, "out of memory: the watchers of handle '%s' missed its stop",
                 h->id);
    jpt__free(copy);
    if (h->waiter != NULL)
        jpt__call_wake(h->waiter);
    jpt__handle_unpin(h);
}

static void on_child_exited(jpt__child *c, const jpt__exit *e, void *ud)
{
    jpt_handle *h = ud;
    char how[128];

    h->exit = *e;
    if (jpt__log_enabled(JPT_LOG_INFO)) {
        describe_exit(h, how, sizeof(how));
        jpt__log(JPT_LOG_INFO, "tool '%s' of '%s' ended: pid %d, %s", h->tool->name, h->id,
                 (int)jpt__child_pid(c), how);
    }
    h->input_lost = jpt__child_input_lost(c);
    h->child = NULL;
    jpt__capture_spool_pause(&h->out);
    child_gone(h);
    /* Those waiting hear of the stop before the child's fds are closed:
     * the answer is out a few system calls sooner. */
    stopped(h);
    jpt__child_free(c);
}

static void on_settled(jpt__timer *t)
{
    jpt_handle *h = t->ud;

    if (h->waiter != NULL)
        jpt__call_wake(h->waiter);
}

static void on_timeout(jpt__timer *t)
{
    jpt_handle *h = t->ud;

    if (h->failure == NULL) {
        jpt__buf msg = JPT__BUF_INIT;
        if (jpt__buf_printf(&msg, "the tool timed out after %" PRId64 " ms and was "
                                  "stopped",
                            h->tool->timeout_ms) == JPT_OK)
            h->failure = jpt__buf_take(&msg);
        jpt__buf_free(&msg);
    }
    jpt__log(JPT_LOG_INFO, "tool '%s' of '%s' timed out after %" PRId64 " ms", h->tool->name,
             h->id, h->tool->timeout_ms);
    terminate(h);
}

/* SIGTERM now, SIGKILL after the grace: logged, as common.h promises. */
static void terminate(jpt_handle *h)
{
    if (h->child == NULL)
        return;
    jpt__log(JPT_LOG_INFO, "ending tool '%s' of '%s': SIGTERM to pid %d, SIGKILL after %d ms",
             h->tool->name, h->id, (int)jpt__child_pid(h->child), h->r->kill_grace_ms);
    jpt__child_terminate(h->child, h->r->kill_grace_ms);
}

/* ---- Waiting, input, abort ------------------------------------------------------ */

/* Whether the model has output of the handle it has not read yet. */
static bool has_news(const jpt_handle *h)
{
    const handle_ext *x = ext(h);

    return x->pending.text.total > 0 || x->pending.line.len > 0 ||
           !jpt__blockq_empty(&x->pending.blocks);
}

void jpt__handle_wait(jpt_handle *h, jpt__call *call, bool settle, int64_t wait_ms)
{
    jpt_registry *r = h->r;
    int64_t settle_ms = jpt__tool_settle_ms(r, h->tool);
    int64_t yield_ms = jpt__tool_yield_ms(r, h->tool);

    h->waiter = call;
    /* Already there: stopped, or a builtin that reported its question. */
    if (h->kind == JPT_STATE_STOPPED ||
        (h->kind == JPT_STATE_WAITING && h->tool->runtime == JPT__RUNTIME_BUILTIN)) {
        jpt__call_wake(call);
        return;
    }
    if (!settle)
        return;
    /* wait_secs: the first quiet window is that long, so the answer comes
     * once the tool has printed (and then settled) or stopped, or the wait
     * is over; news already pending settles as usual. The yield limit
     * never cuts the wait short. */
    if (wait_ms >= 0 && !has_news(h)) {
        settle_ms = wait_ms > settle_ms ? wait_ms : settle_ms;
        yield_ms = wait_ms > yield_ms ? wait_ms : yield_ms;
    }
    if (jpt__timer_start(r->loop, &h->settle_timer, jpt__deadline_ms(settle_ms)) < 0 ||
        jpt__timer_start(r->loop, &h->yield_timer, jpt__deadline_ms(yield_ms)) < 0)
        jpt__call_wake(call);
}

void jpt__handle_refresh(jpt_handle *h)
{
    /* The exit callback may free the child and stop the handle; the
     * handle itself stays (whoever calls this holds it). */
    if (h->child != NULL)
        jpt__child_poll(h->child);
}

int jpt__handle_write(jpt_handle *h, const char *p, size_t n)
{
    if (h->child == NULL)
        return JPT_ERR_STATE;
    return jpt__child_write(h->child, p, n);
}

uint64_t jpt__handle_input_lost(const jpt_handle *h)
{
    return h->child != NULL ? jpt__child_input_lost(h->child) : h->input_lost;
}

void jpt__handle_abort(jpt_handle *h)
{
    if (h->exited)
        return;
    /* A tool that reported its stop keeps its result; only its process,
     * still running, is ended. */
    if (h->kind != JPT_STATE_STOPPED)
        h->aborting = true;
    if (h->child != NULL) {
        terminate(h);
        return;
    }
    if (h->slot_waiting) {
        /* It never started: it stops here. */
        slot_queue_remove(h);
        stopped(h);
        return;
    }
    if (h->tool->runtime == JPT__RUNTIME_BUILTIN) {
        /* The callback may report the stop itself. */
        jpt__handle_pin(h);
        if (h->tool->ops.abort != NULL)
            h->tool->ops.abort(h, h->tool->ud);
        if (h->kind != JPT_STATE_STOPPED)
            stopped(h);
        jpt__handle_unpin(h);
    }
}

void jpt__handle_resume(jpt_handle *h)
{
    handle_ext *x = ext(h);

    /* Answered (by the model or the host): an inquiry still out about the
     * question is moot, and its answer is refused. */
    jpt__inquiry_forget_handle(h);
    jpt__block_clear(&x->question);
    x->has_question = false;
    h->kind = JPT_STATE_RUNNING;
}

int jpt__handle_answer(jpt_handle *h, const char *qid, json_t *answer,
                       const char *answer_json)
{
    const jpt__block *q = jpt__handle_question(h);

    /* Only the question the handle asks now takes the answer. */
    if (q == NULL || q->f[JPT_FIELD_ID].ptr == NULL || strcmp(q->f[JPT_FIELD_ID].ptr, qid) != 0)
        return JPT_ERR_CANCELLED;
    if (h->tool->runtime == JPT__RUNTIME_BUILTIN) {
        /* The apply callback runs from the loop, like every callback. */
        char *copy = jpt__strdup(answer_json);
        if (copy == NULL)
            return JPT_ERR_NOMEM;
        jpt__free(h->step_answer);
        h->step_answer = copy;
        jpt__defer_queue(h->r->loop, &h->step);
        return JPT_OK;
    }
    jpt__buf line = JPT__BUF_INIT;
    json_t *msg = json_pack("{s:s, s:O}", "id", qid, "answer", answer);
    int rc = msg != NULL ? jpt__json_dump_buf(msg, JSON_COMPACT, &line) : JPT_ERR_NOMEM;
    json_decref(msg);
    if (rc == JPT_OK && (rc = jpt__buf_putc(&line, '\n')) == JPT_OK &&
        (rc = jpt__handle_write(h, line.data, line.len)) == JPT_OK)
        jpt__handle_resume(h);
    jpt__buf_free(&line);
    return rc;
}

void jpt__handle_kill(jpt_handle *h, const char *why)
{
    if (h->exited)
        return;
    if (h->kind != JPT_STATE_STOPPED) {
        jpt__free(h->failure);
        h->failure = jpt__strdup(why);
    }
    if (h->child != NULL) {
        terminate(h);
        return;
    }
    slot_queue_remove(h);
    jpt__free(h->step_answer);
    h->step_answer = NULL;
    jpt__defer_queue(h->r->loop, &h->step);
}

/* From the loop: a builtin's answer goes to its apply callback; without
 * one, the builtin is being stopped (jpt__handle_kill). */
static void run_step(jpt__defer *d)
{
    jpt_handle *h = d->ud;
    char *answer = h->step_answer;

    h->step_answer = NULL;
    if (h->kind == JPT_STATE_STOPPED) {
        jpt__free(answer);
        return;
    }
    /* The callbacks may report a stop, which may free a delivered handle. */
    jpt__handle_pin(h);
    if (answer != NULL) {
        jpt__handle_resume(h);
        int rc = h->tool->ops.apply != NULL ? h->tool->ops.apply(h, answer, h->tool->ud)
                                            : JPT_ERR_UNSUPPORTED;
        jpt__free(answer);
        if (rc < 0)
            jpt__handle_kill(h, "the tool refused the answer to its question");
    } else {
        if (h->tool->ops.abort != NULL)
            h->tool->ops.abort(h, h->tool->ud);
        if (h->kind != JPT_STATE_STOPPED)
            stopped(h);
    }
    jpt__handle_unpin(h);
}

const jpt__block *jpt__handle_question(const jpt_handle *h)
{
    return h->kind == JPT_STATE_WAITING && ext(h)->has_question ? &ext(h)->question : NULL;
}

/* ---- Watchers, results, release ------------------------------------------------- */

const char *jpt__kind_name(int kind)
{
    return kind == JPT_STATE_RUNNING   ? "running"
           : kind == JPT_STATE_WAITING ? "waiting"
                                       : "stopped";
}

void jpt__handle_watch(jpt_handle *h, jpt__sub *s, jpt__watcher *w, unsigned role)
{
    s->w = w;
    s->role = role;
    s->h = h;
    JPT__LIST_PUSH(h->subs, s);
    h->nwatchers++;
}

void jpt__handle_unwatch(jpt__sub *s)
{
    if (s->h == NULL)
        return;
    JPT__LIST_REMOVE(s->h->subs, s);
    s->h->nwatchers--;
    s->h = NULL;
}

int jpt__handle_model_text(const jpt_handle *h, const jpt_state *s, jpt__buf *out)
{
    jpt_render_options opts = {sizeof(opts), h->r->root};
    size_t limit = jpt__tool_output_limit(h->r, h->tool);
    char *text = NULL;
    int rc = jpt_state_render(s, &opts, &text);

    if (rc < 0)
        return rc;
    /* A capture that was already cut carries its own marker, so only text
     * clearly past the limit is cut again. */
    size_t n = strlen(text);
    rc = n > limit + 256 ? jpt__limit_text(text, n, limit, h->out.spool_path, out)
                         : jpt__buf_append(out, text, n);
    jpt_free(text);
    return rc;
}

int jpt__handle_final(jpt_handle *h, const char **text, bool *is_error)
{
    if (h->final_text == NULL) {
        jpt_state *s = NULL;
        jpt__buf buf = JPT__BUF_INIT;
        int rc = jpt__handle_take_state(h, false, &s);
        if (rc == JPT_OK)
            rc = jpt__handle_model_text(h, s, &buf);
        if (rc == JPT_OK && (h->final_text = jpt__buf_take(&buf)) == NULL)
            rc = JPT_ERR_NOMEM;
        if (rc == JPT_OK)
            h->final_error = s->is_error;
        jpt_state_unref(s);
        jpt__buf_free(&buf);
        if (rc < 0)
            return rc;
    }
    *text = h->final_text;
    *is_error = h->final_error;
    return JPT_OK;
}

int jpt__handle_preview(jpt_handle *h, size_t max, jpt__buf *out)
{
    jpt__buf all = JPT__BUF_INIT;
    jpt_state *s = NULL;
    int rc;

    /* Structured output previews as the model would read it; plain output
     * as the tool wrote it. */
    if (h->structured || h->tool->runtime == JPT__RUNTIME_BUILTIN) {
        rc = jpt__handle_take_state(h, true, &s);
        if (rc == JPT_OK)
            rc = jpt__handle_model_text(h, s, &all);
        jpt_state_unref(s);
    } else
        rc = jpt__capture_text(&h->out, &all);
    if (rc == JPT_OK) {
        size_t from = all.len > max ? all.len - max : 0;
        while (from < all.len && ((unsigned char)all.data[from] & 0xC0) == 0x80)
            from++;
        rc = jpt__buf_append(out, all.data != NULL ? all.data + from : "", all.len - from);
    }
    jpt__buf_free(&all);
    return rc;
}

void jpt__handle_delivered(jpt_handle *h)
{
    h->delivered = true;
    jpt__notify_seen(h);
}

void jpt__handle_pin(jpt_handle *h)
{
    h->busy++;
}

void jpt__handle_unpin(jpt_handle *h)
{
    h->busy--;
    jpt__handle_release_if_done(h);
}

void jpt__handle_release_if_done(jpt_handle *h)
{
    if (h->registered && h->kind == JPT_STATE_STOPPED && h->delivered && h->busy == 0 &&
        h->waiter == NULL && h->nwatchers == 0 && h->held_by == NULL)
        jpt__handle_free(h);
}

/* The failure is the result the model already has (the spawn's error):
 * delivered, and freed by stopped() once nobody (an await) holds it. The
 * handle must not be touched after this. */
void jpt__handle_fail(jpt_handle *h, const char *why)
{
    if (h->kind == JPT_STATE_STOPPED)
        return;
    jpt__free(h->failure);
    h->failure = jpt__strdup(why);
    h->delivered = true;
    stopped(h);
}

/* ---- States for the model -------------------------------------------------------- */

static int add_text(jpt_state *s, const char *text, size_t n)
{
    jpt__block b = {.type = JPT_BLOCK_TEXT};
    int rc = jpt__field_set(&b.f[JPT_FIELD_TEXT], text, n);

    return rc < 0 ? rc : jpt__state_push_block(s, &b);
}

static int add_textf(jpt_state *s, const char *fmt, ...) JPT__PRINTF(2, 3);

static int add_textf(jpt_state *s, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    /* vsnprintf returns the untruncated length. */
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1;
    return add_text(s, text, len);
}

/* How a process ended, in words. */
static void describe_exit(const jpt_handle *h, char *out, size_t n)
{
    if (h->aborting)
        snprintf(out, n, "aborted");
    else if (!h->exit.known)
        snprintf(out, n, "exit status unknown: another part of the program reaped it");
    else if (h->exit.signal != 0)
        snprintf(out, n, "killed by signal %d (%s)", h->exit.signal,
                 strsignal(h->exit.signal));
    else
        snprintf(out, n, "exit status %d", h->exit.code);
}

static bool exit_failed(const jpt_handle *h)
{
    return !h->aborting && h->exit.known && (h->exit.signal != 0 || h->exit.code != 0);
}

int jpt__handle_take_state(jpt_handle *h, bool peek, jpt_state **out)
{
    handle_ext *x = ext(h);
    jpt_state *s = jpt__state_alloc(h->kind);
    int rc = s != NULL ? JPT_OK : JPT_ERR_NOMEM;

    *out = NULL;
    /* The incomplete last line is shown too (a prompt has no newline), and
     * so becomes part of the text run. */
    if (rc == JPT_OK && !peek && x->pending.line.len > 0) {
        rc = jpt__capture_append(&x->pending.text, x->pending.line.data,
                                 x->pending.line.len);
        x->pending.line.len = 0;
    }
    if (rc == JPT_OK && !peek)
        rc = flush_text_run(h);
    if (rc == JPT_OK)
        rc = jpt__blockq_copy(&x->pending.blocks, s);
    if (rc == JPT_OK && h->kind == JPT_STATE_STOPPED) {
        char how[128];
        if (h->failure != NULL)
            rc = add_text(s, h->failure, strlen(h->failure));
        else if (h->tool->runtime == JPT__RUNTIME_STDIO && !h->structured) {
            describe_exit(h, how, sizeof(how));
            rc = add_textf(s, "[process ended: %s]", how);
        } else if (h->aborting)
            rc = add_text(s, "[aborted]", 9);
        bool failed = h->failure != NULL ||
                      (h->structured || h->tool->runtime == JPT__RUNTIME_BUILTIN
                           ? x->stop_error
                           : exit_failed(h));
        if (rc == JPT_OK && failed && !h->aborting) {
            rc = jpt__state_set_error_from_blocks(s, x->stop_transient);
            for (size_t i = 0; rc == JPT_OK && i < x->stop_trace.n; i++)
                rc = jpt__strv_push(&s->trace, x->stop_trace.v[i],
                                    strlen(x->stop_trace.v[i]));
        }
    }
    if (rc < 0) {
        jpt_state_unref(s);
        return rc;
    }
    if (!peek)
        jpt__blockq_clear(&x->pending.blocks);
    *out = s;
    return JPT_OK;
}

/* JP's into_tool_result: a failed run with unstructured output is an error
 * carrying what the tool said last on each stream, after `headline` (NULL:
 * how the process ended). A run the registry stopped (a timeout, a cancel)
 * keeps its output the same way: nothing the tool produced is lost. */
static int failure_state(jpt_handle *h, jpt_state *s, const char *headline)
{
    size_t limit = jpt__tool_output_limit(h->r, h->tool);
    jpt__buf text = JPT__BUF_INIT;
    char how[128];
    int rc;

    describe_exit(h, how, sizeof(how));
    rc = headline != NULL ? jpt__buf_puts(&text, headline)
                          : jpt__buf_printf(&text, "The tool failed (%s).", how);
    if (rc == JPT_OK && h->err.total > 0 &&
        (rc = jpt__buf_puts(&text, "\n\nstderr:\n")) == JPT_OK)
        rc = jpt__capture_text_limited(&h->err, limit / 2, &text);
    if (rc == JPT_OK && h->out.total > 0 &&
        (rc = jpt__buf_puts(&text, "\n\nstdout:\n")) == JPT_OK)
        rc = jpt__capture_text_limited(&h->out, limit / 2, &text);
    if (rc == JPT_OK)
        rc = add_text(s, text.data, text.len);
    jpt__buf_free(&text);
    if (rc == JPT_OK)
        rc = jpt__state_set_error_from_blocks(s, false);
    return rc;
}

/* Whether a one-shot run's stdout is one of the structured formats (it
 * starts with '{', as a JSON object must): else it is raw text. */
static bool structured_output(const jpt_handle *h)
{
    const jpt__buf *head = &h->out.head;

    for (size_t i = 0; i < head->len; i++)
        if (head->data[i] != ' ' && head->data[i] != '\t' && head->data[i] != '\n' &&
            head->data[i] != '\r')
            return head->data[i] == '{';
    return false;
}

int jpt__handle_result_state(jpt_handle *h, jpt_state **out)
{
    jpt_state *s = NULL;
    int rc;

    *out = NULL;
    if (h->tool->runtime == JPT__RUNTIME_BUILTIN)
        return jpt__handle_take_state(h, false, out);
    if (h->failure != NULL) {
        if ((s = jpt__state_alloc(JPT_STATE_STOPPED)) == NULL)
            return JPT_ERR_NOMEM;
        rc = failure_state(h, s, h->failure);
    } else if (jpt__capture_omitted(&h->out) > 0 || !structured_output(h)) {
        /* Output past the capture, or any that is not structured, is text:
         * cut here to what the model reads, at the tool's bytes, so that
         * the count omitted is exact (the repair of NULs and invalid bytes
         * never makes it cut again). */
        jpt__buf text = JPT__BUF_INIT;
        rc = jpt__capture_text_limited(&h->out, jpt__tool_output_limit(h->r, h->tool),
                                       &text);
        if (rc == JPT_OK)
            rc = jpt_state_parse(text.data, text.len, JPT_PARSE_RAW, &s);
        jpt__buf_free(&text);
        if (rc == JPT_OK && exit_failed(h)) {
            jpt_state_unref(s);
            s = jpt__state_alloc(JPT_STATE_STOPPED);
            rc = s != NULL ? failure_state(h, s, NULL) : JPT_ERR_NOMEM;
        }
    } else {
        jpt__buf text = JPT__BUF_INIT;
        rc = jpt__capture_text(&h->out, &text);
        if (rc == JPT_OK)
            rc = jpt_state_parse(text.data, text.len, 0, &s);
        jpt__buf_free(&text);
        if (rc == JPT_OK && s->raw && exit_failed(h)) {
            jpt_state_unref(s);
            s = jpt__state_alloc(JPT_STATE_STOPPED);
            rc = s != NULL ? failure_state(h, s, NULL) : JPT_ERR_NOMEM;
        }
    }
    if (rc < 0) {
        jpt_state_unref(s);
        return rc;
    }
    *out = s;
    return JPT_OK;
}

int jpt__handle_cut_short(jpt_handle *h, const char *why, jpt_state **out)
{
    *out = NULL;
    if (h->tool->runtime == JPT__RUNTIME_BUILTIN || h->child == NULL)
        return JPT_ERR_STATE;
    /* What the tool wrote and nobody read yet is part of it. */
    jpt__child_poll(h->child);
    if (h->failure == NULL && (h->failure = jpt__strdup(why)) == NULL)
        return JPT_ERR_NOMEM;
    return jpt__handle_result_state(h, out);
}

/* ---- The public handle functions (builtin tools) ------------------------------- */

JPT_EXPORT int jpt_handle_update(jpt_handle *h, jpt_state *state)
{
    if (h == NULL || state == NULL)
        return JPT_ERR_INVALID;
    if (h->tool->runtime != JPT__RUNTIME_BUILTIN)
        return JPT_ERR_INVALID;
    /* From the abort callback of a handle being freed: nobody can read the
     * state any more. */
    if (h->releasing)
        return JPT_OK;
    if (h->exited)
        return JPT_ERR_STATE;
    int before = h->kind;
    int rc = absorb_state(h, state);
    if (rc < 0)
        return rc;
    if (h->kind == JPT_STATE_STOPPED) {
        queue_output_event(h);
        stopped(h);
        return JPT_OK;
    }
    changed(h, before);
    if (h->waiter != NULL && h->kind == JPT_STATE_WAITING)
        jpt__call_wake(h->waiter);
    else
        note_activity(h, before);
    return JPT_OK;
}

JPT_EXPORT const char *jpt_handle_id(const jpt_handle *h)
{
    return h->id;
}

JPT_EXPORT const char *jpt_handle_tool(const jpt_handle *h)
{
    return h->tool->name;
}

JPT_EXPORT void jpt_handle_set_userdata(jpt_handle *h, void *data)
{
    h->userdata = data;
}

JPT_EXPORT void *jpt_handle_get_userdata(const jpt_handle *h)
{
    return h->userdata;
}
