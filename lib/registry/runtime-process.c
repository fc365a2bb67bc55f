/* The process runtime: a stdio tool run as a child process. It builds the
 * argv and environment from the definition, starts it in a process slot
 * (slots.c: it may wait for one), captures stdout and stderr (head and
 * tail, spooled to a file past what the model reads), turns a stateful
 * tool's stdout into the states it reports (RFD 058 and RFD 009 JSON
 * lines) and text, writes its input and answers, and builds what the
 * model reads of its end: a one-shot run's result, or how a handle's
 * process ended. */
#define _GNU_SOURCE /* strsignal */
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "registry/runtime.h"

typedef struct jpt__proc {
    jpt__run *run;
    jpt__child *child;        /* while the process lives */
    jpt__capture out, err;    /* everything it wrote, head and tail */
    jpt__buf line;            /* a stateful tool's incomplete last line */
    jpt__buf crlf;            /* a terminal's output with "\r\n" made "\n" */
    bool cr_pending;          /* a terminal's last read ended with '\r' */
    bool mid_line;            /* the start of the line being written was
                                 shown as text (a prompt, a line longer than
                                 the capture): the rest of it is text too */
    bool structured;          /* its stdout speaks RFD 058/009 lines */
    jpt__timer line_timer;    /* the held line has been quiet for the
                                 settle time: settle_held_line */
    uint64_t line_at;         /* when the held line last grew (ns) */
    bool newline_owed;        /* the held line was read as a state before
                                 its newline came: that newline is not text */
    jpt__exit exit;
    uint64_t input_lost;      /* the reaped process's */
    jpt__slot slot;           /* while the process lives */
    jpt__slot_waiter waiter;  /* in line for a process slot */
} jpt__proc;

static void on_child_output(jpt__child *c, int stream, const char *p, size_t n, void *ud);
static void on_line_quiet(jpt__timer *t);
static void on_child_exited(jpt__child *c, const jpt__exit *e, void *ud);
static const jpt__child_ops child_ops = {on_child_output, on_child_exited, NULL};

static jpt__proc *proc_of(const jpt__run *run)
{
    return run->impl;
}

/* The runtime's part of a definition. */
typedef struct proc_def {
    jpt__command_def cmd;
    bool pty_echo;      /* the terminal echoes what it reads (default) */
} proc_def;

static const proc_def *def_of(const jpt__tool *t)
{
    return t->rt_data;
}

/* ---- Definitions ------------------------------------------------------------------ */

static int check_bool(const json_t *def, const char *key, bool *out, char *why, size_t n)
{
    const json_t *v = json_object_get(def, key);

    if (v == NULL)
        return JPT_OK;
    if (!json_is_boolean(v))
        return snprintf(why, n, "'%s' is %s, not a boolean", key, jpt__json_type_phrase(v)),
               JPT_ERR_INVALID;
    *out = json_is_true(v);
    return JPT_OK;
}

static void forget(jpt__tool *t)
{
    proc_def *d = t->rt_data;

    if (d == NULL)
        return;
    jpt__command_def_free(&d->cmd);
    jpt__free(d);
    t->rt_data = NULL;
}

static int check(jpt_registry *r, jpt__tool *t, const json_t *def, char *why, size_t n)
{
    proc_def *d = jpt__calloc(1, sizeof(*d));
    int rc;

    (void)r;
    if (d == NULL)
        return snprintf(why, n, "out of memory"), JPT_ERR_NOMEM;
    t->rt_data = d;
    /* "sandbox" is RFD 075's OS sandbox here (command.c). */
    d->pty_echo = true;
    if ((rc = jpt__command_take(&d->cmd, def, false, why, n)) < 0 ||
        (rc = check_bool(def, "stdin", &d->cmd.stdin_json, why, n)) < 0 ||
        (rc = check_bool(def, "pty", &d->cmd.pty, why, n)) < 0 ||
        (rc = check_bool(def, "pty_echo", &d->pty_echo, why, n)) < 0)
        return rc;
    if (d->cmd.pty && d->cmd.stdin_json)
        return snprintf(why, n, "'stdin' and 'pty' cannot both be true"), JPT_ERR_INVALID;
    if (json_object_get(def, "pty_echo") != NULL && !d->cmd.pty)
        return snprintf(why, n, "'pty_echo' needs 'pty': true"), JPT_ERR_INVALID;
    return JPT_OK;
}

static const jpt__command_def *command(const jpt__tool *t)
{
    return &def_of(t)->cmd;
}

/* ---- Starting ---------------------------------------------------------------------- */

static void spooled(void *ud, const char *path)
{
    jpt_registry *r = ud;
    char *copy = jpt__strdup(path);
    char **grown = copy != NULL ? jpt__array_reserve(r->spool_files, &r->cap_spool_files,
                                                     r->nspool_files + 1, sizeof(*grown), 8)
                                : NULL;

    if (grown == NULL) {
        jpt__log(JPT_LOG_WARNING, "out of memory: spool file %s will outlive the registry",
                 path);
        jpt__free(copy);
        return;
    }
    r->spool_files = grown;
    r->spool_files[r->nspool_files++] = copy;
}

/* JPT_ERR_AGAIN: no fd or process to be had now, while another child of
 * the registry lives (it will free some as it ends). */
static int spawn(jpt__proc *p, jpt__buf *why)
{
    jpt__run *run = p->run;
    jpt_registry *r = run->r;
    const jpt__tool *t = run->tool;
    const proc_def *d = def_of(t);
    jpt__command cmd;
    jpt__errbuf err;
    jpt__sandbox_report report;
    int rc =
        jpt__command_build(r, t, &d->cmd, run->action, run->arguments, run->answers, &cmd, why);

    if (rc < 0)
        return rc;
    /* Output the model reads whole needs no file (registry.h, spool_dir). */
    if (r->spool_dir != NULL)
        jpt__capture_spool_in(&p->out, r->spool_dir, jpt__tool_output_limit(r, t), spooled, r);
    jpt__spawn spawn = {
        .argv = (const char *const *)cmd.argv,
        .envp = (const char *const *)cmd.envp,
        .cwd = r->root,
        /* RFD 009: without an action the call is one-shot, and a one-shot
         * child reads /dev/null (an open pipe would keep `sh` waiting). */
        .stdin_pipe = run->action == JPT__ACTION_SPAWN || d->cmd.stdin_json,
        .devnull = r->devnull,
        .pty = d->cmd.pty,
        .pty_no_echo = d->cmd.pty && !d->pty_echo,
        .rows = 24,
        .cols = 80,
        .drain_ms = r->drain_ms,
        .contain = r->contain,
        .sandbox = cmd.sandbox.profile != 0 ? &cmd.sandbox : NULL,
        .sandbox_report = &report,
    };
    rc = jpt__child_spawn(r->loop, &spawn, &child_ops, p, &p->child, &err);
    if (rc < 0) {
        jpt__command_free(&cmd);
        if ((rc = jpt__slot_spawn_failed(r, rc, run->id, err.text)) == JPT_ERR_AGAIN)
            return rc;
        return jpt__buf_printf(why, "the tool could not be started: %s", err.text) < 0
                   ? JPT_ERR_NOMEM
                   : rc;
    }
    pid_t pid = jpt__child_pid(p->child);
    jpt__slot_hold(r, &p->slot, pid);
    if (run->action == JPT__ACTION_SPAWN)
        jpt__slot_hold_for_handle(r, &p->slot);
    jpt__log(JPT_LOG_INFO, "tool '%s' started for '%s': pid %d (%s)", t->name, run->id,
             (int)pid, cmd.argv[0]);
    if (cmd.sandbox.profile != 0)
        jpt__sandbox_log(t->name, run->id, pid, &report);
    if (cmd.stdin_json != NULL) {
        rc = jpt__child_write(p->child, cmd.stdin_json, strlen(cmd.stdin_json));
        if (rc == JPT_OK)
            rc = jpt__child_write(p->child, "\n", 1);
        if (run->action != JPT__ACTION_SPAWN)
            jpt__child_close_input(p->child);
    }
    jpt__command_free(&cmd);
    return rc;
}

jpt_state *jpt__run_failed_to_start(const char *why)
{
    jpt_state *s = jpt__state_alloc(JPT_STATE_STOPPED);

    if (s != NULL && (jpt__state_add_text(s, why, strlen(why)) < 0 ||
                      jpt__state_set_error_from_blocks(s, false) < 0)) {
        jpt_state_unref(s);
        s = NULL;
    }
    return s;
}

/* A slot is free for the process (slots.c). */
static int slot_start(jpt__slot_waiter *w, jpt__buf *why)
{
    return spawn((jpt__proc *)((char *)w - offsetof(jpt__proc, waiter)), why);
}

void jpt__run_slot_fail(jpt__slot_waiter *w, const char *why)
{
    w->run->sink->stopped(w->run, jpt__run_failed_to_start(why));
}

static int start(jpt__run *run, jpt__buf *why)
{
    jpt__proc *p = proc_of(run);

    if (p == NULL) {
        if ((p = jpt__calloc(1, sizeof(*p))) == NULL)
            return JPT_ERR_NOMEM;
        p->run = run;
        p->waiter.start = slot_start;
        p->waiter.fail = jpt__run_slot_fail;
        p->waiter.run = run;
        p->waiter.queued = &run->queued;
        jpt__loop_timer_init(&p->line_timer, on_line_quiet, p);
        run->impl = p;
        jpt__capture_init(&p->out, run->r->capture_bytes);
        jpt__capture_init(&p->err, run->r->capture_bytes);
    }
    /* A one-shot run again, with the answers so far: its output starts
     * anew (the spool file, if any, grows on). */
    jpt__capture_reset(&p->out);
    jpt__capture_reset(&p->err);
    p->line.len = 0;
    jpt__loop_timer_stop(run->r->loop, &p->line_timer);
    p->newline_owed = false;
    p->cr_pending = false;
    p->mid_line = false;
    p->structured = false;
    /* registry.h, max_processes: it starts, or waits for a slot (the
     * model reads the handle "pending" until then), or fails when it never
     * could. */
    return jpt__slot_start(run->r, &p->waiter, why);
}

/* ---- Output ------------------------------------------------------------------------ */

/* Whether a line (or the start of one) may be a state: RFD 009's and RFD
 * 058's are JSON objects, one per line. */
static bool may_be_state(const char *line, size_t n)
{
    size_t lead = 0;

    while (lead < n && (line[lead] == ' ' || line[lead] == '\t'))
        lead++;
    return lead < n && line[lead] == '{';
}

/* A complete line of a stateful tool (or its last, unterminated one at its
 * end, or one quiet for the settle time): a structured state (`*state`
 * true, may be NULL), or text. */
static int take_line(jpt__proc *p, const char *line, size_t n, bool *state)
{
    jpt__run *run = p->run;

    if (state != NULL)
        *state = false;
    if (may_be_state(line, n)) {
        jpt_state *s = NULL;
        size_t len = n > 0 && line[n - 1] == '\n' ? n - 1 : n;
        int rc = jpt_state_parse(line, len, 0, &s);
        if (rc < 0)
            return rc;
        if (!jpt__state_is_raw(s)) {
            p->structured = true;
            if (state != NULL)
                *state = true;
            rc = run->sink->state(run, s);
            jpt_state_unref(s);
            return rc;
        }
        jpt_state_unref(s);
    }
    run->sink->text(run, JPT__STDOUT, line, n);
    return JPT_OK;
}

/* The held line, complete now (or at the tool's end): taken out of p->line
 * before it is read, because reading a state answers the action waiting on
 * the handle, whose refresh must not find the line there and show it again
 * as text (issue 16: a state line was shown raw after its question). */
static int take_held_line(jpt__proc *p, bool *state)
{
    jpt__buf held = p->line;
    int rc;

    jpt__loop_timer_stop(p->run->r->loop, &p->line_timer);
    p->line = (jpt__buf)JPT__BUF_INIT;
    rc = take_line(p, held.data, held.len, state);
    held.len = 0;
    if (p->line.data == NULL)
        p->line = held; /* its memory serves the next line */
    else
        jpt__buf_free(&held);
    return rc;
}

/* Whether held line p[0..n), which starts like a state, may still be one
 * being written: it is JSON so far, only cut short (jansson stops at its
 * end). A line it reads as whole JSON, or that can never be JSON, is not
 * in flight. */
static bool in_flight(const char *line, size_t n)
{
    json_error_t jerr;
    json_t *v = NULL;
    int rc = jpt__json_load(line, n, JSON_ALLOW_NUL, &v, &jerr);

    json_decref(v);
    if (rc != JPT_ERR_INVALID)
        return rc == JPT_ERR_NOMEM; /* NOMEM: left as it is, for now */
    return json_error_code(&jerr) == json_error_premature_end_of_input ||
           (json_error_code(&jerr) != json_error_end_of_input_expected &&
            (size_t)jerr.position >= n);
}

/* The host trial: a line without its newline that starts like a state is
 * held (issue 16: a state line is never shown raw, whatever pieces it
 * comes in), but not for as long as the process runs. Once it has been
 * quiet for the settle time, complete JSON is read as a line: a state
 * (its newline, should it come, is not text), or text; a line that can
 * never be JSON is text; JSON cut short stays held, as the rest of a
 * state may still come (registry.h, "stateful"). */
static void settle_held_line(jpt__proc *p)
{
    jpt__run *run = p->run;
    bool state = false;

    if (p->line.len == 0 || !may_be_state(p->line.data, p->line.len) ||
        in_flight(p->line.data, p->line.len))
        return;
    if (take_held_line(p, &state) < 0)
        jpt__log(JPT_LOG_ERROR, "out of memory keeping the output of '%s'", run->id);
    if (state)
        p->newline_owed = true;
    else
        p->mid_line = true;
}

static void on_line_quiet(jpt__timer *t)
{
    settle_held_line(t->ud);
}

/* Part of a line: held, and its quiet time counted from now. */
static int hold_line(jpt__proc *p)
{
    jpt__run *run = p->run;
    uint64_t settle_ns = (uint64_t)jpt__tool_settle_ms(run->r, run->tool) * 1000000u;

    p->line_at = jpt__loop_now();
    if (may_be_state(p->line.data, p->line.len) &&
        jpt__loop_timer_start(run->r->loop, &p->line_timer, p->line_at + settle_ns) < 0)
        return JPT_ERR_NOMEM;
    run->sink->partial(run);
    return JPT_OK;
}

/* A stateful tool's stdout, split into lines. A state line reaches the
 * handle as a state however its bytes arrive (split across reads, in one
 * read with text, alone); a line whose start was shown as text already is
 * text to its end. */
static int take_stdout(jpt__proc *p, const char *s, size_t n)
{
    jpt__buf *line = &p->line;
    int rc = JPT_OK;

    if (p->newline_owed && n > 0) {
        p->newline_owed = false;
        if (s[0] == '\n') {
            s++;
            n--;
        }
    }
    while (rc == JPT_OK && n > 0) {
        const char *nl = memchr(s, '\n', n);
        size_t k = nl != NULL ? (size_t)(nl - s) + 1 : n;
        if (p->mid_line) {
            p->run->sink->text(p->run, JPT__STDOUT, s, k);
            p->mid_line = nl == NULL;
        } else if (nl == NULL && line->len + k > p->run->r->capture_bytes) {
            /* A line longer than the capture is text, whatever it starts
             * with. */
            p->run->sink->text(p->run, JPT__STDOUT, line->data, line->len);
            p->run->sink->text(p->run, JPT__STDOUT, s, k);
            line->len = 0;
            p->mid_line = true;
        } else if (line->len == 0 && nl != NULL)
            rc = take_line(p, s, k, NULL);
        else if ((rc = jpt__buf_append(line, s, k)) == JPT_OK && nl != NULL)
            rc = take_held_line(p, NULL);
        else if (rc == JPT_OK)
            rc = hold_line(p);
        s += k;
        n -= k;
    }
    return rc;
}

/* A terminal ends its lines with "\r\n" (ONLCR): the model reads "\n",
 * as from a pipe (issue 16). A '\r' that ends a read waits for the next
 * byte; a lone '\r' (a progress line) stays. */
static int crlf_to_lf(jpt__proc *p, const char *s, size_t n)
{
    jpt__buf *out = &p->crlf;
    int rc = JPT_OK;

    out->len = 0;
    if (p->cr_pending && (n == 0 || s[0] != '\n'))
        rc = jpt__buf_putc(out, '\r');
    p->cr_pending = false;
    while (rc == JPT_OK && n > 0) {
        const char *cr = memchr(s, '\r', n);
        size_t k = cr != NULL ? (size_t)(cr - s) : n;
        rc = jpt__buf_append(out, s, k);
        s += k;
        n -= k;
        if (rc < 0 || n == 0)
            break;
        /* At a '\r': dropped before '\n', held at the end of the read. */
        if (n == 1)
            p->cr_pending = true;
        else if (s[1] != '\n')
            rc = jpt__buf_putc(out, '\r');
        s++;
        n--;
    }
    return rc;
}

/* Output as the model reads it: kept, and a handle's split into lines. */
static int take_output(jpt__proc *p, int stream, const char *s, size_t n)
{
    int rc = jpt__capture_append(stream == JPT__STDOUT ? &p->out : &p->err, s, n);

    /* A handle reads its tool's output as it comes; a one-shot run is read
     * whole at its end. States are lines of stdout; stderr is text, kept
     * out of the line being assembled so that it cannot split a state. */
    if (p->run->action != JPT__ACTION_SPAWN || n == 0)
        ;
    else if (stream == JPT__STDOUT)
        rc = rc == JPT_OK ? take_stdout(p, s, n) : rc;
    else
        p->run->sink->text(p->run, JPT__STDERR, s, n);
    return rc;
}

static void on_child_output(jpt__child *c, int stream, const char *s, size_t n, void *ud)
{
    jpt__proc *p = ud;
    jpt__run *run = p->run;
    int rc;

    (void)c;
    if (!def_of(run->tool)->cmd.pty)
        rc = take_output(p, stream, s, n);
    else if ((rc = crlf_to_lf(p, s, n)) == JPT_OK)
        rc = take_output(p, stream, p->crlf.data, p->crlf.len);
    if (rc < 0)
        run->sink->lost(run, "out of memory keeping the tool's output");
    /* Last: the host's handler may call back into the registry. */
    jpt__events_stream(run->r, run->id, run->tool->name, run->action == JPT__ACTION_SPAWN,
                       stream, s, n);
}

/* ---- The end ----------------------------------------------------------------------- */

/* How a process ended, in words. */
static void describe_exit(const jpt__proc *p, char *out, size_t n)
{
    if (p->run->aborted)
        snprintf(out, n, "aborted");
    else if (!p->exit.known)
        snprintf(out, n, "exit status unknown: another part of the program reaped it");
    else if (p->exit.signal != 0)
        snprintf(out, n, "killed by signal %d (%s)", p->exit.signal, strsignal(p->exit.signal));
    else
        snprintf(out, n, "exit status %d", p->exit.code);
}

static bool exit_failed(const jpt__proc *p)
{
    return !p->run->aborted && p->exit.known && (p->exit.signal != 0 || p->exit.code != 0);
}

/* JP's into_tool_result: a failed run with unstructured output is an error
 * carrying what the tool said last on each stream, after `headline` (NULL:
 * how the process ended). A run the registry stopped (a timeout, a cancel)
 * keeps its output the same way: nothing the tool produced is lost. A
 * handle's failure reads the same, with the output the model has not read
 * yet (from the run's read counts; a one-shot run's are 0). */
static int failure_state(jpt__proc *p, jpt_state *s, const char *headline)
{
    size_t limit = jpt__tool_output_limit(p->run->r, p->run->tool);
    jpt__buf text = JPT__BUF_INIT;
    char how[128];
    int rc;

    describe_exit(p, how, sizeof(how));
    rc = headline != NULL ? jpt__buf_puts(&text, headline)
                          : jpt__buf_printf(&text, "The tool failed (%s).", how);
    if (rc == JPT_OK && jpt__capture_total(&p->err) > p->run->read_err &&
        (rc = jpt__buf_puts(&text, "\n\nstderr:\n")) == JPT_OK)
        rc = jpt__capture_text_since(&p->err, p->run->read_err, limit / 2, &text);
    if (rc == JPT_OK && jpt__capture_total(&p->out) > p->run->read_out &&
        (rc = jpt__buf_puts(&text, "\n\nstdout:\n")) == JPT_OK)
        rc = jpt__capture_text_since(&p->out, p->run->read_out, limit / 2, &text);
    if (rc == JPT_OK)
        rc = jpt__state_add_text(s, text.data, text.len);
    jpt__buf_free(&text);
    if (rc == JPT_OK)
        rc = jpt__state_set_error_from_blocks(s, false);
    return rc;
}

/* Whether a one-shot run's stdout is one of the structured formats (it
 * starts with '{', as a JSON object must): else it is raw text. */
static bool structured_output(const jpt__proc *p)
{
    size_t n;
    const char *head = jpt__capture_head(&p->out, &n);

    for (size_t i = 0; i < n; i++)
        if (head[i] != ' ' && head[i] != '\t' && head[i] != '\n' && head[i] != '\r')
            return head[i] == '{';
    return false;
}

/* The result of a one-shot run: its output parsed as a whole. */
static int one_shot_result(jpt__proc *p, jpt_state **out)
{
    jpt__buf text = JPT__BUF_INIT;
    jpt_state *s = NULL;
    int rc;

    *out = NULL;
    if (p->run->failure != NULL) {
        if ((s = jpt__state_alloc(JPT_STATE_STOPPED)) == NULL)
            return JPT_ERR_NOMEM;
        rc = failure_state(p, s, p->run->failure);
    } else if (jpt__capture_omitted(&p->out) > 0 || !structured_output(p)) {
        /* Output past the capture, or any that is not structured, is text:
         * cut here to what the model reads, at the tool's bytes, so that
         * the count omitted is exact (the repair of NULs and invalid bytes
         * never makes it cut again). */
        rc = jpt__capture_text_limited(&p->out, jpt__tool_output_limit(p->run->r, p->run->tool),
                                       &text);
        if (rc == JPT_OK)
            rc = jpt_state_parse(text.data, text.len, JPT_PARSE_RAW, &s);
    } else {
        rc = jpt__capture_text(&p->out, &text);
        if (rc == JPT_OK)
            rc = jpt_state_parse(text.data, text.len, 0, &s);
    }
    jpt__buf_free(&text);
    if (rc == JPT_OK && p->run->failure == NULL && jpt__state_is_raw(s) && exit_failed(p)) {
        jpt_state_unref(s);
        s = jpt__state_alloc(JPT_STATE_STOPPED);
        rc = s != NULL ? failure_state(p, s, NULL) : JPT_ERR_NOMEM;
    }
    if (rc < 0) {
        jpt_state_unref(s);
        return rc;
    }
    *out = s;
    return JPT_OK;
}

/* What a handle's end adds for the model: how an unstructured process
 * ended; a structured one said so itself. A failed one ends as a failed
 * one-shot run does (issue 16: one format), with the output the model has
 * not read, stream by stream, in place of that output. */
static int handle_end(jpt__proc *p, jpt_state **out)
{
    jpt_state *s = jpt__state_alloc(JPT_STATE_STOPPED);
    char how[128], text[128 + 32];
    int rc = s != NULL ? JPT_OK : JPT_ERR_NOMEM;

    *out = NULL;
    if (rc == JPT_OK && !p->structured && (p->run->failure != NULL || exit_failed(p))) {
        rc = failure_state(p, s, p->run->failure);
        p->run->end_has_output = rc == JPT_OK;
    } else if (rc == JPT_OK && !p->structured && p->run->failure == NULL) {
        static const char head[] = "[process ended: ";
        describe_exit(p, how, sizeof(how));
        size_t n = strlen(how);
        memcpy(text, head, sizeof(head) - 1);
        memcpy(text + sizeof(head) - 1, how, n);
        text[sizeof(head) - 1 + n] = ']';
        rc = jpt__state_add_text(s, text, sizeof(head) + n);
    }
    if (rc < 0) {
        jpt_state_unref(s);
        return rc;
    }
    *out = s;
    return JPT_OK;
}

static void on_child_exited(jpt__child *c, const jpt__exit *e, void *ud)
{
    jpt__proc *p = ud;
    jpt__run *run = p->run;
    jpt_state *final = NULL;
    char how[128];

    p->exit = *e;
    if (jpt__log_enabled(JPT_LOG_INFO)) {
        describe_exit(p, how, sizeof(how));
        jpt__log(JPT_LOG_INFO, "tool '%s' of '%s' ended: pid %d, %s", run->tool->name,
                 run->id, (int)jpt__child_pid(c), how);
    }
    p->input_lost = jpt__child_input_lost(c);
    p->child = NULL;
    jpt__capture_spool_pause(&p->out);
    jpt__slot_release(run->r, &p->slot);
    /* A terminal's last '\r', which no '\n' followed. */
    if (p->cr_pending) {
        p->cr_pending = false;
        if (take_output(p, JPT__STDOUT, "\r", 1) < 0)
            run->sink->lost(run, "out of memory keeping the tool's output");
    }
    /* What a stateful tool wrote last, without a newline: a prompt, or a
     * last state written without one. */
    if (p->line.len > 0 && take_held_line(p, NULL) < 0)
        run->sink->lost(run, "out of memory keeping the tool's output");
    int rc = run->action == JPT__ACTION_SPAWN ? handle_end(p, &final)
                                               : one_shot_result(p, &final);
    if (rc < 0)
        run->sink->lost(run, "out of memory reading the tool's result");
    /* Those waiting hear of the end before the child's fds are closed: the
     * answer is out a few system calls sooner. */
    run->sink->stopped(run, final);
    jpt__child_free(c);
}

/* ---- Input, answers, abort --------------------------------------------------------- */

/* RFD 009, "Apply serves two purposes": to a running tool the input, a
 * string as it is and anything else as its JSON text. */
static int input(jpt__run *run, const json_t *value, const char *value_json)
{
    jpt__proc *p = proc_of(run);

    if (p->child == NULL)
        return JPT_ERR_STATE;
    if (json_is_string(value))
        return jpt__child_write(p->child, json_string_value(value), json_string_length(value));
    return jpt__child_write(p->child, value_json, strlen(value_json));
}

/* The answer to a waiting tool's question: a JSON line
 * {"id": question, "answer": input} on its stdin. */
static int answer(jpt__run *run, const char *qid, const json_t *value, const char *value_json)
{
    jpt__proc *p = proc_of(run);
    jpt__buf line = JPT__BUF_INIT;

    (void)value_json;
    if (p->child == NULL)
        return JPT_ERR_STATE;
    json_t *msg = json_pack("{s:s, s:O}", "id", qid, "answer", value);
    int rc = msg != NULL ? jpt__json_dump_buf(msg, JSON_COMPACT, &line) : JPT_ERR_NOMEM;
    json_decref(msg);
    if (rc == JPT_OK && (rc = jpt__buf_putc(&line, '\n')) == JPT_OK)
        rc = jpt__child_write(p->child, line.data, line.len);
    jpt__buf_free(&line);
    return rc;
}

/* SIGTERM now, SIGKILL after the grace: logged, as common.h promises. A
 * run still waiting for a slot ends here. */
static void abort_run(jpt__run *run)
{
    jpt__proc *p = proc_of(run);

    if (p == NULL)
        return;
    if (p->waiter.waiting) {
        jpt__slot_leave(run->r, &p->waiter);
        jpt_state *final = NULL;
        if (run->action == JPT__ACTION_SPAWN)
            handle_end(p, &final);
        else
            one_shot_result(p, &final);
        run->sink->stopped(run, final);
        return;
    }
    if (p->child == NULL)
        return;
    /* Its slot frees soon: a call now waits for it rather than fail. */
    jpt__slot_release_for_handle(run->r, &p->slot);
    jpt__log(JPT_LOG_INFO, "ending tool '%s' of '%s': SIGTERM to pid %d, SIGKILL after %d ms",
             run->tool->name, run->id, (int)jpt__child_pid(p->child), run->r->kill_grace_ms);
    jpt__child_terminate(p->child, run->r->kill_grace_ms);
}

static void refresh(jpt__run *run)
{
    jpt__proc *p = proc_of(run);

    if (p == NULL)
        return;
    /* The exit callback may free the child and end the run. */
    if (p->child != NULL)
        jpt__child_poll(p->child);
    /* What it wrote last, without a newline, is shown too (a prompt), and
     * the rest of its line will be text; but not the start of what may be
     * a state line, which waits for its end (issue 16). */
    if (p->child != NULL && p->line.len > 0 && !may_be_state(p->line.data, p->line.len)) {
        run->sink->text(run, JPT__STDOUT, p->line.data, p->line.len);
        p->line.len = 0;
        p->mid_line = true;
    }
    /* One that may be a state, once quiet for the settle time, as its
     * timer would (this answer may come first). */
    uint64_t settle_ns = (uint64_t)jpt__tool_settle_ms(run->r, run->tool) * 1000000u;
    if (p->child != NULL && p->line.len > 0 && jpt__loop_now() - p->line_at >= settle_ns)
        settle_held_line(p);
}

static uint64_t input_lost(const jpt__run *run)
{
    const jpt__proc *p = proc_of(run);

    if (p == NULL)
        return 0;
    return p->child != NULL ? jpt__child_input_lost(p->child) : p->input_lost;
}

static const char *spool_path(const jpt__run *run)
{
    const jpt__proc *p = proc_of(run);

    return p != NULL ? jpt__capture_spool_path(&p->out) : NULL;
}

static int partial(jpt__run *run, jpt_state **out)
{
    jpt__proc *p = proc_of(run);

    *out = NULL;
    if (p == NULL || p->child == NULL)
        return JPT_ERR_STATE;
    /* What the tool wrote and nobody read yet is part of it. */
    jpt__child_poll(p->child);
    return one_shot_result(p, out);
}

static jpt__child *take_child(jpt__run *run)
{
    jpt__proc *p = proc_of(run);
    jpt__child *c = p != NULL ? p->child : NULL;

    if (c != NULL) {
        p->child = NULL;
        jpt__slot_drop(run->r, &p->slot);
    }
    return c;
}

static void release(jpt__run *run)
{
    jpt__proc *p = proc_of(run);

    if (p == NULL)
        return;
    jpt__slot_leave(run->r, &p->waiter);
    jpt__loop_timer_stop(run->r->loop, &p->line_timer);
    if (p->child != NULL) {
        jpt__child_free(p->child);
        p->child = NULL;
        jpt__slot_release(run->r, &p->slot);
    }
    jpt__capture_free(&p->out);
    jpt__capture_free(&p->err);
    jpt__buf_free(&p->line);
    jpt__buf_free(&p->crlf);
    jpt__free(p);
    run->impl = NULL;
}

const jpt__runtime_ops jpt__runtime_process = {
    .caps = JPT__RT_RERUN_TO_ANSWER,
    .check = check,
    .forget = forget,
    .command = command,
    .start = start,
    .input = input,
    .answer = answer,
    .abort = abort_run,
    .refresh = refresh,
    .input_lost = input_lost,
    .spool_path = spool_path,
    .partial = partial,
    .take_child = take_child,
    .release = release,
};
