/* jptool — the handle registry: the tool calls a model emits, run as
 * processes (or host callbacks) and turned back into results (RFD 009).
 *
 * SPDX-License-Identifier: MIT
 *
 * A registry holds tool definitions and the handles of running tools. The
 * host submits the tool calls of one model message as a batch, drives the
 * registry from its own event loop, and reads the batch's results:
 *
 *     jpt_registry_submit(r, calls_json, &batch);
 *     while (!jpt_batch_done(batch)) {
 *         poll jpt_registry_get_fd(r) for reading, at most
 *              jpt_registry_get_timeout(r) milliseconds;
 *         jpt_registry_dispatch(r);
 *     }
 *     jpt_batch_results_json(batch, &json);   // one result per call
 *
 * (jpt_registry_wait() is that loop, for hosts without their own.)
 *
 * Every call is a handle that runs, waits for input and stops. A call whose
 * arguments have no `action` is one-shot: the tool runs to the end and its
 * output is the result; a question it asks goes to the inquiry handler and
 * the tool is run again with the answer. A call with an `action` drives a
 * stateful tool: `spawn` starts a handle with an id the model chooses,
 * `fetch` returns its new output, `apply` sends it input or answers its
 * question, `abort` stops it.
 *
 * Event loop: the registry owns one epoll fd (jpt_registry_get_fd) that
 * never changes and is readable whenever jpt_registry_dispatch() has work.
 * jptool starts no threads, installs no signal handlers and does not touch
 * SIGCHLD's disposition: children are watched and reaped through their
 * pidfds. The kernel still sends SIGCHLD when they exit; a host whose own
 * handler reaps every child (waitpid(-1)) takes their exit statuses, and
 * jptool then reports the exit as unknown instead of failing. Children die
 * with the thread that spawned them (PR_SET_PDEATHSIG), so drive a registry
 * from a thread that outlives its handles. Requires Linux 5.3 or later
 * (pidfds).
 *
 * Threading: a registry and everything it hands out are used from one thread
 * at a time; callbacks run only inside jpt_registry_dispatch() (and the
 * calls that dispatch for you: run, wait, free). jpt_registry_wakeup() is
 * the one thread-safe function. */
#ifndef JPTOOL_REGISTRY_H
#define JPTOOL_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "state.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jpt_registry jpt_registry;
typedef struct jpt_batch jpt_batch;
typedef struct jpt_event jpt_event;
typedef struct jpt_inquiry jpt_inquiry;
typedef struct jpt_handle jpt_handle;

/* ---- Creating a registry ---------------------------------------------------- */

/* Options for jpt_registry_new(). Zero-initialise, set `size`, and set only
 * what should differ from the default: a zero (or NULL) field means the
 * default given beside it. */
typedef struct jpt_registry_options {
    size_t size;             /* sizeof(jpt_registry_options) */
    const char *root;        /* workspace root, the tools' working directory;
                                default: the current directory */
    int kill_grace_ms;       /* SIGTERM to SIGKILL; default 5000 */
    size_t capture_bytes;    /* output kept per stream (head + tail);
                                default 1 MiB */
    size_t output_limit;     /* bytes of output the model reads per result;
                                default 30000 (a tool may set its own) */
    int settle_ms;           /* spawn/apply answer once output is quiet this
                                long; default 150 (per tool: settle_ms) */
    int yield_ms;            /* … or this long after the action at most;
                                default 10000 (per tool: yield_ms) */
    int drain_ms;            /* reading after a child exits, for output a
                                grandchild still holds; default 100 */
    int max_inquiry_rounds;  /* questions answered per one-shot call;
                                default 16 */
    const char *spool_dir;   /* if set, each handle's full output is also
                                written to a file here, named to the model */
    const char *state_file;  /* if set, live children are recorded here for
                                jpt_registry_reap_stale() */
    int turn_end_timeout_ms; /* how long the turn end waits for handles;
                                default 120000 */
    int containment;         /* what the end of a tool's process kills
                                (JPT_CONTAIN_*); default JPT_CONTAIN_AUTO */
} jpt_registry_options;

/* Containment: what the end of a handle's process (the tool exits, is
 * aborted or times out, or the registry is freed) kills besides the tool
 * itself. A tool always runs in a session and process group of its own.
 *
 * JPT_CONTAIN_AUTO       CGROUP where the host's cgroup allows it, else
 *                        SESSION (logged at JPT_LOG_INFO). Under systemd,
 *                        give the host's unit Delegate=yes: systemd does
 *                        not expect cgroups it did not make elsewhere.
 * JPT_CONTAIN_CGROUP     Every process of the tool is killed, whatever it
 *                        did to get away (a double fork, setsid, a daemon):
 *                        each process handle gets a cgroup v2 of its own
 *                        under the host's cgroup (named
 *                        jptool-<pid>-<token>-<n>), joined before the
 *                        tool's program starts, so everything it starts is
 *                        inside; only a process privileged to move itself
 *                        to another cgroup can leave. The end kills what
 *                        is left in it (cgroup.kill, Linux 5.14; before,
 *                        SIGKILL to each member). A cgroup found empty is
 *                        kept for a later handle (up to 16); one that was
 *                        not is removed once its last process is gone.
 *                        jpt_registry_free() returns when every cgroup it
 *                        made is removed (a host that exits without it
 *                        leaves them behind). Needs the host's cgroup to
 *                        be writable by the host (root, or a delegated
 *                        subtree such as systemd's Delegate=yes); where it
 *                        is not, jpt_registry_new() fails with
 *                        JPT_ERR_UNSUPPORTED and logs why (at
 *                        JPT_LOG_ERROR). Costs a few system calls per
 *                        process (bench-registry).
 * JPT_CONTAIN_SUBREAPER  For hosts without cgroups, opt-in. jptool makes
 *                        the host process a child subreaper
 *                        (PR_SET_CHILD_SUBREAPER), for good: this affects
 *                        the whole host process, whose orphaned
 *                        descendants, of tools and of its other children
 *                        alike, are then reparented to it instead of to
 *                        init, and stay zombies until reaped (a host that
 *                        reaps with waitpid(-1) reaps them). Every tool
 *                        starts with an environment variable
 *                        JPTOOL_CONTAIN_<token>=<n> that marks it; the end
 *                        stops and kills the processes in the tool's
 *                        session, those of the host's children that carry
 *                        the mark, and everything below them, and reaps
 *                        them: never another child of the host. A
 *                        descendant escapes only if it leaves the session
 *                        and also runs a program with an environment
 *                        without the mark (env -i), or one whose
 *                        environment the host may not read (setuid). Each
 *                        end reads the stat of every process in /proc, a
 *                        cost that grows with the system's process count.
 *                        Needs pidfd_open (Linux 5.3; JPT_ERR_UNSUPPORTED
 *                        without it).
 * JPT_CONTAIN_SESSION    The process group is killed, nothing more: a
 *                        descendant that calls setsid() or setpgid() lives
 *                        on. */
#define JPT_CONTAIN_AUTO 0
#define JPT_CONTAIN_CGROUP 1
#define JPT_CONTAIN_SUBREAPER 2
#define JPT_CONTAIN_SESSION 3

/* Creates a registry; `opts` may be NULL for every default. The root must be
 * an existing directory; it is made absolute. Errors: JPT_ERR_INVALID (NULL
 * out, struct too small, a negative duration, a root that is not a
 * directory, an unknown containment), JPT_ERR_UNSUPPORTED (`opts` sets
 * fields of a newer jptool, JPT_CONTAIN_CGROUP where cgroups are not
 * available, JPT_CONTAIN_SUBREAPER without pidfd_open),
 * JPT_ERR_EXISTS (the state file lists children already: another registry
 * uses it, or a crashed one left it; see jpt_registry_reap_stale()),
 * JPT_ERR_IO (creating the epoll fd, timerfd or eventfd, writing the
 * state file, or becoming a child subreaper), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_new(const jpt_registry_options *opts,
                                jpt_registry **out);

/* Ends every live handle (SIGTERM to each process group, the grace period,
 * SIGKILL, and every child reaped before it returns; with containment, every
 * process of the tools killed, the cgroups removed and the orphans reaped),
 * frees the batches, events and inquiries still held, and the registry.
 * NULL-safe. */
JPT_EXPORT void jpt_registry_free(jpt_registry *r);

/* The message of the last failed call on `r`, or "". */
JPT_EXPORT const char *jpt_registry_errmsg(const jpt_registry *r);

/* ---- Tools -------------------------------------------------------------------- */

/* Flags for jpt_registry_load_tools(). */
#define JPT_LOAD_REPLACE 0x1u /* a definition replaces a tool of the same name */

/* Loads tool definitions from JSON: {"tools": [definition, …]}. A
 * definition is an object with these keys (only `name` and, for stdio
 * tools, `command` are required):
 *
 *   name             [A-Za-z0-9_-]{1,64}, unique (unless JPT_LOAD_REPLACE)
 *   description      string
 *   parameters       JSON Schema of the arguments (default: any object)
 *   runtime          "stdio" (default) or "builtin" (jpt_registry_add_builtin);
 *                    "vfs" is not available yet
 *   command          argv array of strings; each element may hold
 *                    {{tool}}      {"name","arguments","answers","options"} JSON
 *                    {{context}}   {"action","root"} JSON
 *                    {{arguments.NAME}}  the argument: strings and numbers
 *                                  as they are, objects and arrays as JSON
 *                    a missing argument is an error for that call
 *   stdin            true: write the {{tool}} JSON to stdin instead
 *   stateful         true: the tool takes actions (spawn is implied)
 *   actions          those of "fetch", "apply", "abort" it supports
 *                    (default: all three)
 *   pty              true: run on a pseudo-terminal (TERM=dumb, 24x80)
 *   question_target  "user" (default) or "assistant": who the inquiry
 *                    handler should ask
 *   settle_ms, yield_ms   as in the registry options, for this tool
 *   output_limit     bytes of output the model reads, for this tool
 *   timeout_ms       one-shot calls are killed after this (default: none)
 *   env              {"inherit": true|false, "allow": [names],
 *                     "set": {"NAME": "value"}}: by default the host's
 *                    environment; with inherit false only the allowed
 *                    names (and PATH, HOME, LANG) are passed
 *   sandbox, spawn   accepted for the later VFS and await features
 *
 * All definitions are checked before any is added: on error nothing changes
 * and jpt_registry_errmsg() names the tool and the field. Errors:
 * JPT_ERR_INVALID, JPT_ERR_EXISTS (a tool of that name exists),
 * JPT_ERR_UNSUPPORTED (runtime "vfs"), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_load_tools(jpt_registry *r, const char *config_json,
                                       unsigned flags);

/* Callbacks of a builtin tool: one implemented by the host in its own
 * process (a sub-agent, say; RFD 009 "Toward sub-agents"). Each call or
 * handle is a jpt_handle; the tool reports its progress with
 * jpt_handle_update(), from the callbacks or at any later time. */
typedef struct jpt_builtin_ops {
    size_t size; /* sizeof(jpt_builtin_ops) */
    /* A call or spawn begins; `arguments_json` is the arguments object
     * (without action and id). Return JPT_OK, or a status to fail the call
     * (then jpt_handle_update is not needed). */
    int (*start)(jpt_handle *h, const char *arguments_json, void *ud);
    /* Input for a running handle, or the answer to its question (as JSON).
     * May be NULL if the tool declares no "apply". */
    int (*apply)(jpt_handle *h, const char *input_json, void *ud);
    /* The handle is being aborted (by the model, or because the registry is
     * freed); the registry marks it stopped after this returns. May be
     * NULL. */
    void (*abort)(jpt_handle *h, void *ud);
} jpt_builtin_ops;

/* Adds a builtin tool from a definition (the keys of load_tools; runtime
 * and command do not apply). `ops` is copied; `ud` is passed to every
 * callback. Errors as jpt_registry_load_tools(), JPT_ERR_INVALID for a
 * missing start callback or an `ops->size` too small, JPT_ERR_UNSUPPORTED
 * for ops that set fields of a newer jptool. */
JPT_EXPORT int jpt_registry_add_builtin(jpt_registry *r, const char *definition_json,
                                        const jpt_builtin_ops *ops, void *ud);

/* Reports a builtin handle's state: output so far (running), a question
 * (waiting) or the end (stopped). The state's content is copied: the caller
 * keeps its reference and may change or drop the state afterwards. Call it
 * from the callbacks or at any later time, outside dispatch too. The
 * registry takes the state in at once (an await on the handle may complete
 * and events be queued before this returns); what it calls back (the
 * inquiry handler for a question) runs at its next dispatch, never inside
 * this call. Once a stopped state is reported,
 * or the abort callback has returned, the handle must not be used again
 * (the registry frees it when the model has seen the result). A handle
 * whose call ends before the tool stopped (a question nobody answers, an
 * abort, the registry freed) gets the abort callback first, so the host
 * always learns when its handle becomes invalid.
 * Errors: JPT_ERR_INVALID (NULL, or not a builtin's handle), JPT_ERR_STATE
 * (the handle stopped already), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_handle_update(jpt_handle *h, jpt_state *state);
/* The handle's id (the model's, for a stateful spawn; the call id for a
 * one-shot call). Valid while the handle is. */
JPT_EXPORT const char *jpt_handle_id(const jpt_handle *h);
/* The tool's name. */
JPT_EXPORT const char *jpt_handle_tool(const jpt_handle *h);
/* A pointer the host keeps with the handle. */
JPT_EXPORT void jpt_handle_set_userdata(jpt_handle *h, void *data);
JPT_EXPORT void *jpt_handle_get_userdata(const jpt_handle *h);

/* Tool list dialects for jpt_registry_tools_json(). */
#define JPT_DIALECT_OPENAI 1    /* [{"type":"function","function":{…}}] */
#define JPT_DIALECT_ANTHROPIC 2 /* [{"name","description","input_schema"}] */
#define JPT_DIALECT_GEMINI 3    /* {"functionDeclarations":[…]}, always flat */
#define JPT_DIALECT_MCP 4       /* {"tools":[{"name","description","inputSchema"}]} */
/* OR'd into the dialect: stateful tools get the flat schema (an action
 * enum, id and input optional, the per-action rules in descriptions and
 * checked at call time) instead of RFD 009's oneOf, for providers that
 * reject oneOf. */
#define JPT_DIALECT_FLAT 0x100

/* The tools as the model should see them, in `dialect`; the caller frees
 * `*out` with jpt_free(). One-shot tools carry their parameters; stateful
 * tools the oneOf of RFD 009 (only the declared actions; spawn with the
 * tool's parameters plus action and id). Errors: JPT_ERR_INVALID (unknown
 * dialect, NULL argument), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_tools_json(jpt_registry *r, int dialect, char **out);

/* ---- Calls ---------------------------------------------------------------------- */

/* Submits the tool calls of one model message:
 *   [{"id": "call_1", "name": "git", "arguments": {…}}, …]
 * with `arguments` an object or a JSON string holding one (providers send
 * both). The calls run concurrently. A call that cannot
 * run (unknown tool, arguments that fail the tool's schema, unknown handle,
 * an action the tool does not declare, a duplicate handle id) gets an error
 * result; that is not a failure of the batch. The batch belongs to the
 * caller (jpt_batch_free). The calls start at the next dispatch (yours, or
 * inside jpt_registry_wait / run), so that tools' callbacks only ever run
 * there. Errors: JPT_ERR_INVALID (the calls are not such
 * an array; jpt_registry_errmsg() says where), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_submit(jpt_registry *r, const char *calls_json,
                                   jpt_batch **out);

/* 1 when every call of the batch has its result, else 0. */
JPT_EXPORT int jpt_batch_done(const jpt_batch *b);

/* The results, one per call in the order submitted:
 *   [{"id": "call_1", "content": "…", "is_error": false}, …]
 * `content` is the text the model reads: a one-shot tool's rendered output;
 * for an action, the handle's response as JSON text ({"id", "state",
 * "content"} while running or waiting, {"id", "state", "result"} or
 * {"id", "state", "error"} once stopped). Calls still running are given as
 * {"id", "content": null, "is_error": false, "pending": true}. The caller
 * frees `*out` with jpt_free(). Errors: JPT_ERR_INVALID, JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_batch_results_json(const jpt_batch *b, char **out);

/* Cancels every call of the batch still in flight (RFD 037's cancellation,
 * for a host's Ctrl+C), at the next dispatch: one-shot children are killed
 * and their calls end with an error, awaits answer with the handles' states
 * and "cancelled": true, spawn and apply answer at once with the output so
 * far (their handles keep running), calls not yet started never run.
 * Finished calls keep their results. NULL-safe. */
JPT_EXPORT void jpt_batch_cancel(jpt_batch *b);

/* Frees the batch. Calls still in flight keep running and their results are
 * dropped; handles they spawned stay in the registry. NULL-safe. */
JPT_EXPORT void jpt_batch_free(jpt_batch *b);

/* ---- Driving the registry ------------------------------------------------------- */

/* The epoll fd to poll for reading; it never changes. */
JPT_EXPORT int jpt_registry_get_fd(const jpt_registry *r);

/* Milliseconds until jpt_registry_dispatch() is due: 0 when work is ready,
 * -1 when only fd activity can make any. */
JPT_EXPORT int jpt_registry_get_timeout(const jpt_registry *r);

/* Does what is ready, without blocking and with bounded work: reads output,
 * reaps children, fires timers, completes calls, calls the inquiry handler.
 * Returns >0 if more work is ready at once (call it again before polling),
 * 0 if not, or JPT_ERR_IO if the epoll fd failed. */
JPT_EXPORT int jpt_registry_dispatch(jpt_registry *r);

/* Polls and dispatches until no call is in flight or `timeout_ms` passes
 * (-1: no limit). JPT_OK when idle, JPT_ERR_TIMEOUT, JPT_ERR_IO. */
JPT_EXPORT int jpt_registry_run(jpt_registry *r, int timeout_ms);

/* Polls and dispatches until batch `b` is done or `timeout_ms` passes
 * (-1: no limit). JPT_OK, JPT_ERR_TIMEOUT, JPT_ERR_INVALID, JPT_ERR_IO. */
JPT_EXPORT int jpt_registry_wait(jpt_registry *r, jpt_batch *b, int timeout_ms);

/* Makes the registry's fd readable, so a thread blocked polling it returns.
 * The one function that may be called from any thread at any time. */
JPT_EXPORT int jpt_registry_wakeup(jpt_registry *r);

/* ---- Events ------------------------------------------------------------------------ */

#define JPT_EVENT_CALL_DONE 1    /* a call has its result */
#define JPT_EVENT_BATCH_DONE 2   /* every call of a batch has its result */
#define JPT_EVENT_OUTPUT 3       /* a running handle produced output (one
                                    event until popped, however much) */
#define JPT_EVENT_STATE 4        /* a handle became waiting or stopped */

/* Pops the oldest event; the caller frees it with jpt_event_free(). Returns
 * JPT_ERR_AGAIN when there is none. */
JPT_EXPORT int jpt_registry_next_event(jpt_registry *r, jpt_event **out);
JPT_EXPORT int jpt_event_type(const jpt_event *e);
/* The call id (CALL_DONE), or NULL. */
JPT_EXPORT const char *jpt_event_call_id(const jpt_event *e);
/* The handle id (OUTPUT, STATE; CALL_DONE of an action), or NULL. */
JPT_EXPORT const char *jpt_event_handle_id(const jpt_event *e);
/* The tool's name, or NULL for BATCH_DONE. */
JPT_EXPORT const char *jpt_event_tool(const jpt_event *e);
/* The handle's JPT_STATE_* kind (STATE), or 0. */
JPT_EXPORT int jpt_event_state(const jpt_event *e);
/* The batch (CALL_DONE, BATCH_DONE), or NULL; compare, do not free. The
 * pointer may already be freed by the host. */
JPT_EXPORT const jpt_batch *jpt_event_batch(const jpt_event *e);
JPT_EXPORT void jpt_event_free(jpt_event *e);

/* ---- Questions ------------------------------------------------------------------- */

/* Who a question is for (the tool's question_target). */
#define JPT_TARGET_USER 1
#define JPT_TARGET_ASSISTANT 2

/* Called (inside dispatch) when a tool asks a question the model did not
 * drive: a one-shot tool that answered `waiting`. The handler answers with
 * jpt_inquiry_answer() or jpt_inquiry_cancel(), now or at any later time;
 * until then the call waits. */
typedef void (*jpt_inquiry_fn)(jpt_inquiry *q, void *ud);

/* Installs (or with NULL removes) the handler. Without one, a question ends
 * the call with an error saying that input was required. */
JPT_EXPORT void jpt_registry_set_inquiry_handler(jpt_registry *r, jpt_inquiry_fn fn,
                                                 void *ud);

/* What the inquiry asks; strings valid until it is answered or cancelled.
 * The question is RFD 058's {"id","text","schema","default"} JSON; the
 * context holds the blocks the tool showed before it (may be empty). */
JPT_EXPORT const char *jpt_inquiry_tool(const jpt_inquiry *q);
JPT_EXPORT const char *jpt_inquiry_call_id(const jpt_inquiry *q);
/* The handle whose question it is (a stateful handle asking while an await
 * watches it), or NULL. The tool and call id are NULL for the turn end's
 * question (see jpt_registry_end_turn). */
JPT_EXPORT const char *jpt_inquiry_handle_id(const jpt_inquiry *q);
JPT_EXPORT const char *jpt_inquiry_question_json(const jpt_inquiry *q);
JPT_EXPORT int jpt_inquiry_target(const jpt_inquiry *q);
JPT_EXPORT const jpt_state *jpt_inquiry_context(const jpt_inquiry *q);

/* Answers with JSON checked against the question's schema. On JPT_OK the
 * tool runs again with the accumulated answers and `q` is freed. On
 * JPT_ERR_INVALID (the answer is not JSON or does not match; the message
 * is in jpt_inquiry_errmsg()) `q` stays valid for another try. If the call
 * ended meanwhile (aborted, batch cancelled, registry freeing), returns
 * JPT_ERR_CANCELLED and frees `q`. */
JPT_EXPORT int jpt_inquiry_answer(jpt_inquiry *q, const char *answer_json);
/* Ends the call with an error naming `reason` (may be NULL) and frees `q`. */
JPT_EXPORT int jpt_inquiry_cancel(jpt_inquiry *q, const char *reason);
JPT_EXPORT const char *jpt_inquiry_errmsg(const jpt_inquiry *q);

/* ---- Notifications and the end of a turn (RFD 037) --------------------------------- */

/* Takes the notifications queued since the last call, as JSON for the host
 * to put in front of the model's next message (RFD 011's system message
 * queue), and clears them:
 *   [{"id", "tool", "state", "elapsed_secs",
 *     "result" and "is_error" (stopped) | "output_preview" (running, waiting)}]
 * A registered handle leaves one when it changes state while the model is
 * not watching it (no action or await on it), as its tool's
 * spawn.notifications flags allow (on_success, on_failure, on_waiting true;
 * on_content false by default); only the latest per handle is kept, and it
 * is dropped once an action shows the model that state. A stopped handle's
 * result reaches the model this way, and the handle then goes. Returns "[]"
 * when there are none. The caller frees `*json_out` with jpt_free().
 * Errors: JPT_ERR_INVALID, JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_take_notifications(jpt_registry *r, char **json_out);

/* Flags for jpt_registry_end_turn(). */
#define JPT_TURN_KEEP 0x1u /* kill nothing: handles past their wait stay */

/* Ends the turn (RFD 037, "Turn-end behavior"): every live handle meets its
 * tool's spawn.lifecycle.on_turn_end policy, from the next dispatch:
 *   "abort"    it is killed and its result discarded;
 *   "await"    it is waited for, up to turn_end_timeout_ms; its result is
 *              queued as a notification for the next turn; past the
 *              timeout it is killed;
 *   "inquire"  (the default) one question goes to the inquiry handler for
 *              the assistant, listing each such handle (id, tool, state,
 *              elapsed_secs, output_preview) with an action "wait" or
 *              "abort" to choose: {"handles": [{"id", "action"}, …]}. A
 *              handle answered "wait" (or not mentioned) is waited for (up
 *              to the timeout) and its result becomes a result of the
 *              returned batch: {"id": handle id, "content": {"id", "state",
 *              "result"|"error"} as JSON text, "is_error"}; "abort" kills
 *              it. Without a handler, or if the question is cancelled,
 *              these handles are treated as "await".
 * Stopped handles the model has not seen go (their notifications stay).
 * The batch is done when every handle has settled; then the registry holds
 * no live handles, unless JPT_TURN_KEEP was given (handles are then left
 * running instead of killed). Free the batch with jpt_batch_free().
 * Errors: JPT_ERR_INVALID, JPT_ERR_STATE (a turn end is still settling),
 * JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_end_turn(jpt_registry *r, unsigned flags, jpt_batch **out);

/* ---- Orphans ---------------------------------------------------------------------- */

/* Kills the children a crashed host left behind, as recorded in a state
 * file (jpt_registry_options.state_file), then removes the file. A process
 * is killed only if its pid still has the recorded start time, so a reused
 * pid is never touched. `killed` (may be NULL) receives the count.
 * Errors: JPT_ERR_INVALID, JPT_ERR_IO (the file cannot be read or
 * removed; a missing file is not an error), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_reap_stale(const char *path, size_t *killed);

#ifdef __cplusplus
}
#endif

#endif /* JPTOOL_REGISTRY_H */
