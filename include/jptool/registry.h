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
 * Every call runs as a handle: one run of a tool (a process, or a builtin's
 * callbacks), which is running, waiting for input, or stopped. A call whose
 * arguments have no `action` is one-shot, to a stateful tool too (its stdin
 * is then /dev/null): the tool runs to the end and its output is the
 * result; a question it asks is an inquiry (below), and the tool is run
 * again with the answer. A call with an `action` drives a stateful tool:
 * `spawn` starts a handle with an id the model chooses, `fetch` returns its
 * new output, `apply` sends it input or answers its question, `abort` stops
 * it. spawn and apply settle: they answer once the tool's output has been
 * quiet for settle_ms, or yield_ms after the action at the latest, with the
 * handle still running if it is; fetch answers at once. A handle whose
 * process fails (exits non-zero, is killed by a signal, or is stopped by the
 * registry) ends as a failed one-shot call does: an error reading "The tool
 * failed (exit status 3)." (or why the registry stopped it), then
 * "stderr:" and "stdout:" with what the model had not read yet of each. Every answer holds
 * all the tool printed up to the moment it is made, and the exit if the
 * process has ended, however long the host went without dispatching. With
 * `wait_secs` (spawn, fetch and apply; up to a day) a handle with nothing
 * new is given that long to print or stop, then settles as usual, so the
 * model can wait for a slow command instead of polling. An apply whose
 * input the tool does not take (it closed its stdin) is an error to the
 * model saying how many bytes were lost.
 *
 * An inquiry is a question a tool asks that the model did not drive: a
 * one-shot tool's, a stateful handle's while an await watches it, or the
 * turn end's (jpt_registry_end_turn). It goes to the host's inquiry
 * handler (jpt_registry_set_inquiry_handler), which answers it then or
 * later; the call waits meanwhile.
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
#include "vfs.h"

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
    const char *root;        /* workspace root, the working directory of
                                stdio tools and process.run children ("vfs"
                                tools start in "/": their files go through
                                the protocol); default: the current
                                directory */
    int kill_grace_ms;       /* SIGTERM to SIGKILL; default 5000 */
    size_t capture_bytes;    /* output kept per stream, and of a stateful
                                tool's structured (JSON-line) blocks not
                                yet read: the first and last halves, what
                                lies between dropped and counted (blocks
                                give way to a marker block); default 1 MiB */
    size_t output_limit;     /* bytes of output the model reads per result;
                                default 30000 (a tool may set its own) */
    int settle_ms;           /* spawn/apply answer once output is quiet this
                                long; default 150 (per tool: settle_ms) */
    int yield_ms;            /* … or this long after the action at most
                                (the model's wait_secs may be longer);
                                default 10000 (per tool: yield_ms) */
    int drain_ms;            /* reading after a child exits, for output a
                                grandchild still holds; default 100 */
    int max_inquiry_rounds;  /* questions answered per one-shot call;
                                default 16 */
    const char *spool_dir;   /* if set, a handle whose stdout outgrows what
                                the model reads of it (output_limit) has
                                all of it written to a file here, named to
                                the model in the cut output; output that
                                fits leaves no file. The files are removed
                                with the registry unless
                                JPT_REGISTRY_KEEP_SPOOL. A file that cannot
                                be written is logged (WARNING) and the
                                output kept in memory only. */
    const char *state_file;  /* if set, live children (and, in cgroup
                                containment, where the cgroups are) are
                                recorded here for jpt_registry_reap_stale() */
    int turn_end_timeout_ms; /* how long the turn end waits for handles;
                                default 120000 */
    size_t max_processes;    /* tool processes alive at once, VFS tools'
                                process.run children among them (vfs.h,
                                "process.run"); a call beyond it, a stdio
                                or VFS tool's alike, waits in line for a
                                slot while one can free by itself (a
                                one-shot run or a process.run child holds
                                it), and so does a process.run: a spawn
                                waiting so answers with its handle
                                "pending", never "running", until its
                                process starts. While every slot is held
                                by a live handle's process (a spawn's, not
                                being aborted), which keeps it until the
                                model ends the handle, a call beyond the
                                limit fails at once, and so does each one
                                in line when that comes to pass (a spawn's
                                handle then stops with the reason): "…
                                could not run: no process slot is free:
                                the registry runs at most N tool processes
                                at once (max_processes), and live handles
                                hold every slot until they end; abort one,
                                or await the end of one, then call again".
                                Default: min(256, (fd limit - reserve) / 5),
                                the reserve a quarter of the soft
                                RLIMIT_NOFILE (at least 32) left to the host,
                                as a process holds up to 5 of the host's
                                fds. A spawn that still finds no fd (the
                                host took them) also waits, while another
                                tool process is alive. */
    size_t max_events;       /* events queued before the oldest is dropped
                                (with a warning in the log); default 4096 */
    unsigned flags;          /* JPT_REGISTRY_* below */
    int containment;         /* what the end of a tool's process kills
                                (JPT_CONTAIN_*); default JPT_CONTAIN_AUTO */
    int sandbox_mode;        /* the OS sandbox's mode (JPT_SANDBOX_*, vfs.h)
                                for vfs tools, and for stdio tools whose
                                definition asks for it, where the
                                definition's os_sandbox.mode does not say;
                                default JPT_SANDBOX_REQUIRED */
} jpt_registry_options;

/* Flags for jpt_registry_options.flags. */
#define JPT_REGISTRY_KEEP_SPOOL 0x1u /* spool files outlive the registry */

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
 * out, struct too small, a negative duration or max_inquiry_rounds, a root
 * that is not a directory, unknown flags, an unknown containment or
 * sandbox mode),
 * JPT_ERR_UNSUPPORTED (`opts` sets fields of a newer jptool,
 * JPT_CONTAIN_CGROUP where cgroups are not available, JPT_CONTAIN_SUBREAPER
 * without pidfd_open), JPT_ERR_EXISTS (the state file lists children
 * or cgroups already: another registry uses it, or a crashed one left it;
 * see jpt_registry_reap_stale()), JPT_ERR_IO (creating the epoll fd, timerfd or
 * eventfd, opening /dev/null, writing the state file, or becoming a child
 * subreaper), JPT_ERR_NOMEM. There is no registry to hold the message:
 * jpt_last_error() names the option and why ("jpt_registry_new: settle_ms
 * is -1: a duration is 0 (the default) or more"). */
JPT_EXPORT int jpt_registry_new(const jpt_registry_options *opts,
                                jpt_registry **out);

/* Ends every live handle (SIGTERM to each process group, the grace period,
 * SIGKILL, and every child reaped before it returns; with containment, every
 * process of the tools killed, the cgroups removed and the orphans reaped),
 * frees the batches, events and inquiries still held, removes the spool
 * files (unless JPT_REGISTRY_KEEP_SPOOL), and frees the registry.
 * NULL-safe. Called from a callback (the inquiry handler, a builtin's), the
 * registry is freed as the outermost dispatch under way returns, and
 * nothing else runs before: that dispatch (jpt_registry_dispatch, run,
 * wait) returns JPT_ERR_CANCELLED, and the registry must not be used
 * again. Blocks for up to the kill grace for a tool that ignores SIGTERM;
 * an event-loop host calls jpt_registry_shutdown() first. */
JPT_EXPORT void jpt_registry_free(jpt_registry *r);

/* Begins ending every live handle without blocking, for an event-loop host
 * that closes: calls in flight are cancelled (one-shot runs end with their
 * process), each tool process gets SIGTERM and, past the kill grace,
 * SIGKILL, and builtin handles their abort callback, all from the next
 * dispatches. The host keeps dispatching; JPT_EVENT_SHUTDOWN is queued once
 * every process is reaped, and jpt_registry_free() then returns at once.
 * From the first call on, jpt_registry_submit() and jpt_registry_end_turn()
 * fail with JPT_ERR_STATE. May be called again: returns JPT_OK once every
 * process is reaped, JPT_ERR_AGAIN before. Errors: JPT_ERR_INVALID. */
JPT_EXPORT int jpt_registry_shutdown(jpt_registry *r);

/* The message of the last failed call on `r`, or "". */
JPT_EXPORT const char *jpt_registry_errmsg(const jpt_registry *r);

/* ---- Tools -------------------------------------------------------------------- */

/* Flags for jpt_registry_load_tools(). */
#define JPT_LOAD_REPLACE 0x1u /* a definition replaces a tool of the same name */

/* Loads tool definitions from JSON: {"tools": [definition, …]}. A
 * definition is an object with these keys (only `name` and, for stdio
 * and vfs tools, `command` are required; any other key is an error):
 *
 *   name             [A-Za-z0-9_-]{1,64}, unique (unless JPT_LOAD_REPLACE);
 *                    "await" is reserved for the await tool
 *   description      string
 *   parameters       JSON Schema of the arguments (default: any object)
 *   runtime          "stdio" (default), "builtin" (jpt_registry_add_builtin)
 *                    or "vfs" (a D11 tool: see "VFS tools" below, which
 *                    lists its own keys: sandbox, files,
 *                    request_timeout_ms; pty and stdin do not apply, and
 *                    its environment is clean)
 *   command          argv array of strings; each element may hold
 *                    {{tool}}      {"name","arguments","answers","options"} JSON
 *                    {{context}}   {"action","root"} JSON
 *                    {{arguments.NAME}}  the argument: strings and numbers
 *                                  as they are, objects and arrays as JSON
 *                                  (the model chooses it: a string that
 *                                  begins with '-' is an option to most
 *                                  programs — `rg --pre=sh`, `git log
 *                                  --output=…` — so put "--" before the
 *                                  element, or give the parameter a
 *                                  "pattern" such as "^[^-]"; a value
 *                                  the schema passes is not thereby
 *                                  safe as an argument)
 *                    a missing argument is an error for that call; in all
 *                    three, and on stdin, a real is written in the shortest
 *                    form that reads back as the same double (0.2, 1.0,
 *                    1e+22), an integer as it is
 *   options          an object passed to the tool as the "options" of
 *                    {{tool}} (default: {})
 *   stdin            true: write the {{tool}} JSON to stdin instead
 *   stateful         true: the tool takes actions (spawn is implied).
 *                    A stdio handle's stdout is read a line at a time: a
 *                    line that is an RFD 009 ToolState or an RFD 058
 *                    envelope (a JSON object; state.h) is a state the
 *                    handle reports, any other line is text. A line
 *                    without its newline yet is shown as text when the
 *                    model reads the handle (a prompt), unless it starts
 *                    with '{': then it is held, so that a state is never
 *                    shown raw, however its bytes arrive, until it has
 *                    been quiet for settle_ms; then it is read as if its
 *                    newline had come (a state, its newline dropped if it
 *                    comes, or text) if it is complete JSON or can never
 *                    be JSON, and held on while it is JSON cut short (the
 *                    rest of a state may still come)
 *   actions          those of "fetch", "apply", "abort" it supports
 *                    (default: all three; needs stateful)
 *   pty              true: run on a pseudo-terminal (TERM=dumb, 24x80). The
 *                    model reads its output with the terminal's "\r\n"
 *                    made "\n" (a lone "\r" stays; the output handler
 *                    gets the bytes as written). A terminal echoes what it
 *                    reads: an apply's answer starts with its own input, as
 *                    a person at the terminal would see it (twice when it
 *                    arrives before a line editor such as readline reads
 *                    it: once from the terminal, once from the editor)
 *   pty_echo         false: the terminal starts with echo off (termios
 *                    ECHO), so the model reads only what the program
 *                    prints; line editors that echo for the terminal
 *                    (readline: bash -i, python3 -i) then echo nothing
 *                    either. A program may turn it back on (stty echo).
 *                    Default true; needs pty
 *   question_target  "user" (default) or "assistant": who the inquiry
 *                    handler should ask
 *   settle_ms, yield_ms   as in the registry options, for this tool
 *   output_limit     bytes of output the model reads, for this tool
 *   timeout_ms       one-shot calls are killed after this, their result
 *                    an error with the output so far (default: none)
 *   env              {"inherit": true|false, "allow": [names],
 *                     "set": {"NAME": "value"}}: by default (inherit
 *                    false) a clean environment: the core set PATH,
 *                    HOME, USER, LOGNAME, LANG, every LC_*, TERM, TZ,
 *                    TMPDIR and SHELL, and the names "allow" lists, as
 *                    the host has them. Credentials that no name gives
 *                    away (MYSQL_PWD, DB_PASS, DATABASE_URL or REDIS_URL
 *                    with a password, SENTRY_DSN, GH_PAT, BASIC_AUTH,
 *                    SSH_AUTH_SOCK) never reach a tool unless "allow"
 *                    names them. "inherit": true is the explicit choice
 *                    of the host's whole environment, less the variables
 *                    whose names contain KEY, TOKEN, SECRET, PASSWORD or
 *                    CREDENTIAL (in any case: API_KEY, github_token,
 *                    KEYBOARD too) unless "allow" names them — a filter
 *                    on names, which lets the ones above through. "set"
 *                    adds its values whatever their names. A vfs tool's
 *                    environment is PATH and the allowed names only
 *                    (inherit true is refused)
 *   spawn            RFD 037's per-tool settings of stateful handles:
 *                    {"notifications": {"on_success", "on_failure",
 *                    "on_waiting", "on_content": booleans},
 *                    "lifecycle": {"on_turn_end": "inquire" | "await" |
 *                    "abort"}, "stateful": as the top-level key} (see
 *                    jpt_registry_take_notifications and
 *                    jpt_registry_end_turn)
 *   sandbox          for a vfs tool, its access policy (D11; vfs.h,
 *                    jpt_policy_new). For a stdio tool, RFD 075's OS
 *                    sandbox (vfs.h, "The OS sandbox"): true (the
 *                    workspace, the registry's root, read-write, the
 *                    system read-only, no network), false (none, the
 *                    default), or {"filesystem": {"writable": false}} for
 *                    the workspace read-only, {"filesystem": {"git":
 *                    "writable"}} for its repositories (.git, bare) left
 *                    writable to it (by default "protected": read-only,
 *                    and one it makes moved aside after it: vfs.h, "The
 *                    OS sandbox"). The policy keys an OS
 *                    sandbox cannot enforce (network, commands, paths
 *                    allowed or denied one by one) are refused with
 *                    JPT_ERR_UNSUPPORTED: a security setting is never
 *                    accepted and ignored. For builtin tools refused
 *                    (JPT_ERR_UNSUPPORTED): they run in the host's process
 *   os_sandbox       the OS sandbox of a vfs tool, or of a stdio tool
 *                    with "sandbox": {"mode": "required" | "best-effort"
 *                    | "off"} (default: the registry's sandbox_mode);
 *                    "read": [absolute paths] the tool's processes may
 *                    also read and execute (an interpreter's or a
 *                    library's directory outside /usr, a virtualenv);
 *                    for a stdio tool "write": [absolute paths] they may
 *                    also write. Paths that do not exist are skipped;
 *                    "process_limit": the most processes (threads count)
 *                    the tool and what it starts have at once, 2 to 65536
 *                    (default 512; vfs.h, "The OS sandbox")
 *
 * "parameters" is a JSON Schema the call's arguments are checked against
 * as jpt_schema_check() checks (state.h): a keyword it would not check, or
 * a malformed one, refuses the tool, naming the keyword and its place
 * ("tool 'x': 'parameters' at /properties/p: 'prefixItems' is …").
 * "parameters" and "options" may hold NUL characters (\u0000) like any
 * JSON value; every other field refuses one, by name (state.h, the NUL
 * rule).
 *
 * All definitions are checked before any is added: on error nothing changes
 * and jpt_registry_errmsg() names the tool and the field. Errors:
 * JPT_ERR_INVALID, JPT_ERR_EXISTS (a tool of that name exists),
 * JPT_ERR_UNSUPPORTED ("sandbox" or "os_sandbox" on a builtin tool; a
 * stdio tool's "sandbox" key that its OS sandbox cannot enforce; a
 * parameters keyword the checker does not check), JPT_ERR_NOMEM. */
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
 * missing start callback, a missing apply callback of a tool whose actions
 * include "apply", or an `ops->size` too small, JPT_ERR_UNSUPPORTED for
 * ops that set fields of a newer jptool. */
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

/* Tool list dialects for jpt_registry_tools_json(): a provider, and
 * optionally a form OR'd into it. Which to use:
 *
 *   OpenAI Chat Completions     JPT_DIALECT_OPENAI
 *                               (| JPT_DIALECT_STRICT with strict mode)
 *   OpenAI Responses            JPT_DIALECT_OPENAI_RESPONSES
 *                               (| JPT_DIALECT_STRICT with strict mode)
 *   Anthropic Messages          JPT_DIALECT_ANTHROPIC
 *   Gemini                      JPT_DIALECT_GEMINI
 *   an MCP server's tools/list  JPT_DIALECT_MCP (clients pass it on to any
 *                               of the above: it satisfies each of them)
 *   a provider that takes RFD 009's oneOf: its dialect | JPT_DIALECT_ONEOF
 *
 * By default every dialect gives what its provider accepts: a plain object
 * at the top of each schema (OpenAI refuses oneOf, anyOf, allOf, enum,
 * const and not there, Anthropic oneOf, anyOf and allOf), with properties
 * (OpenAI refuses an object schema without). Stateful tools get the flat
 * schema: an optional `action` (an enum of the declared actions, the
 * per-action rules in its description), `id`, `input` (with apply),
 * `wait_secs` and the tool's own parameters, whose required ones say
 * "Required for spawn and for a one-shot call (no action)." in their
 * descriptions (after their own text, ended with a full stop where it has
 * no punctuation); the rules are checked when the call arrives. await lists `any` and `all` both optional (RFD 037's
 * fallback; at least one is still required at call time). A tool's own
 * top-level oneOf/anyOf/allOf is dropped and the properties of its
 * branches listed; the call is still checked against the whole schema.
 * Gemini and strict mode need a type for `input`: it is a string there, so
 * a question whose schema asks for another type cannot be answered in
 * those forms. Changed: the default used to be RFD 009's oneOf, which
 * OpenAI and Anthropic refuse; ask for it with JPT_DIALECT_ONEOF. */
#define JPT_DIALECT_OPENAI 1    /* [{"type":"function","function":{"name",
                                   "description","parameters"[,"strict"]}}] */
#define JPT_DIALECT_ANTHROPIC 2 /* [{"name","description","input_schema"}] */
#define JPT_DIALECT_GEMINI 3    /* {"functionDeclarations":[{"name",
                                   "description"[,"parameters"]}]}: the schemas
                                   in Gemini's OpenAPI subset (one type per
                                   schema, nullable instead of null, enums of
                                   strings, no const, oneOf, allOf, not or
                                   additionalProperties; a value that may be
                                   anything is a string); a tool without
                                   parameters has none */
#define JPT_DIALECT_MCP 4       /* {"tools":[{"name","description","inputSchema"}]} */
#define JPT_DIALECT_OPENAI_RESPONSES 5 /* [{"type":"function","name",
                                   "description","parameters","strict"}] */
/* Accepted for compatibility: the flat schema is now the default. */
#define JPT_DIALECT_FLAT 0x100
/* RFD 009's schemas exactly: stateful tools as a oneOf per action (only the
 * declared actions; spawn with the tool's parameters plus action and id;
 * spawn, fetch and apply with an optional wait_secs), await with RFD 037's
 * anyOf, one-shot tools' parameters as given. Not with Gemini, FLAT or
 * STRICT. */
#define JPT_DIALECT_ONEOF 0x200
/* OpenAI's strict mode (OPENAI and OPENAI_RESPONSES only): each entry says
 * "strict": true, and each schema is the flat one with every object
 * closed (additionalProperties false), every property listed in required,
 * those that are optional typed as nullable (the model sends null for
 * them, and the call drops such nulls), only the keywords strict mode
 * takes (the others still checked at call time), and input as a string. A
 * parameter that is a free-form object cannot be expressed in strict mode
 * and becomes an empty one. */
#define JPT_DIALECT_STRICT 0x400

/* The tools as the model should see them, in `dialect`; the caller frees
 * `*out` with jpt_free(). The list holds every loaded tool, then await when
 * a stateful tool is loaded (RFD 037, "Schema availability").
 *
 * A tool's local $refs ("#/$defs/pt") stay as written in the plain form of
 * a one-shot tool (OpenAI, Anthropic and MCP clients take JSON Schema's
 * $ref there); every other form has them inlined, each replaced by its
 * target (its sibling keywords kept): Gemini's Schema object has no $ref,
 * and the flat, one-of and strict forms rebuild the schema, which moves
 * what a pointer names. A $ref that leads back to itself (a recursive
 * schema) cannot be inlined, nor one nesting more than 32 deep or growing
 * past 100 000 schemas: the list is then refused for that dialect,
 * JPT_ERR_UNSUPPORTED, the message naming the tool and the property.
 *
 * Errors: JPT_ERR_INVALID (not a dialect or a combination above, NULL
 * argument), JPT_ERR_UNSUPPORTED (as above), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_tools_json(jpt_registry *r, int dialect, char **out);

/* ---- Calls ---------------------------------------------------------------------- */

/* Submits the tool calls of one model message: a JSON array whose
 * elements may be, in any mix,
 *   jptool's own        {"id": "call_1", "name": "git", "arguments": {…}},
 *                       arguments an object or a JSON string holding one;
 *   OpenAI Chat Completions tool_calls entries
 *                       {"id", "type": "function",
 *                        "function": {"name", "arguments": "<JSON text>"}};
 *   OpenAI Responses function_call items
 *                       {"type": "function_call", "call_id", "name",
 *                        "arguments": "<JSON text>"} (call_id is the id);
 *   Anthropic tool_use blocks
 *                       {"type": "tool_use", "id", "name", "input": {…}};
 *   Gemini functionCall parts
 *                       {"functionCall": {"name", "args": {…}[, "id"]}}
 *                       (or the functionCall object itself). A call
 *                       without an id gets "<name>#<n>", n its position in
 *                       the array, counted from 0.
 * so a message's tool_calls, content, output or parts array goes in as it
 * came: its other elements (text, thinking, reasoning, message items, a
 * Gemini text part: any element with another "type", or a Gemini part
 * without functionCall) are skipped and get no result. Each call
 * remembers its shape, for jpt_batch_results_json_as().
 *
 * The calls run concurrently, but an action (fetch, apply, abort) runs
 * only once every call before it in the array that names its handle (an
 * action's `id`, an id in an await's `any` or `all`) has answered: models
 * send spawn + apply, apply + apply, apply + fetch, apply + abort and spawn
 * + await + abort in one message, meaning them in that order. Each result
 * holds what its call saw at its turn: an apply after a spawn acts on the
 * handle the spawn made and reads the output that came after the spawn's
 * answer; a fetch after an apply, what came after the apply's; an abort
 * after an await runs once the await has answered (so an await followed
 * by the action that would end its handle waits for its timeout_secs, or
 * for as long as the handle runs without one). Spawns and awaits wait for
 * no call, as in RFD 037's batches, where they run together: an await
 * waits for its handles to stop, whenever they started, and one written
 * before the spawn of its handle sees it start. The batch keeps every
 * handle its calls name registered until it is done, so that a call after
 * one that gave the handle's end (the spawn, a fetch, an apply or an await
 * that answered with it stopped) finds it, and says so: "Handle `h1` has
 * stopped, and an earlier answer gave its result" (an error, but for an
 * abort, which has nothing left to do); a call after a spawn that failed
 * says "Handle `h1` does not exist: its spawn failed: " and why. Once a
 * handle has gone (it stopped, the model had its result, and no batch
 * holds it), a later call naming it — an action, an id of an await — is
 * told so rather than RFD 037's "Handle `h1` not found": "Handle `h1` has
 * stopped, and a notification gave its result" (or "an earlier answer
 * gave its result", "its result was given as the turn ended", "does not
 * exist: its spawn never ran (the answer to the spawn said why)"), an
 * error but for an abort. The registry remembers the ids of the last 256
 * handles that went (a fixed ring: bounded memory however long a session
 * runs); an id older than those, or one no handle ever had, is "not
 * found". Calls on different handles never wait for each other. Across batches there is no
 * order: an action on a handle that an action of another batch still waits
 * on fails at once ("Handle `h1` is busy with another action; try again
 * once it has answered").
 *
 * A call that cannot run (unknown tool,
 * arguments that are not a JSON object or fail the tool's schema, an
 * argument holding a NUL character or a number jptool cannot hold, unknown
 * handle, an action the tool does not declare, a duplicate handle id) gets
 * an error result naming the cause; that is not a failure of the batch. A
 * null argument where the tool's schema takes no null counts as absent
 * (OpenAI's strict mode sends null for every optional parameter left out).
 * The batch belongs to the caller (jpt_batch_free). The calls start at the
 * next dispatch (yours, or inside jpt_registry_wait / run), so that tools'
 * callbacks only ever run there. A message without calls ("[]") makes a
 * batch that is done at once; its BATCH_DONE event is queued and the fd
 * made readable, so an event-driven host meets it at its next dispatch
 * like any other. Errors: JPT_ERR_INVALID (the calls are not such an
 * array, or a call lacks its id or name; jpt_registry_errmsg() says
 * where), JPT_ERR_STATE (the registry is shutting down), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_submit(jpt_registry *r, const char *calls_json,
                                   jpt_batch **out);

/* 1 when every call of the batch has its result, else 0. */
JPT_EXPORT int jpt_batch_done(const jpt_batch *b);

/* The results, one per call in the order submitted:
 *   [{"id": "call_1", "content": "…", "is_error": false}, …]
 * `content` is the text the model reads: a one-shot tool's rendered output;
 * for an action, the handle's response as JSON text ({"id", "state",
 * "content"} while running or waiting, or "pending" while a spawn waits
 * for a process slot (max_processes), {"id", "state", "result"} or
 * {"id", "state", "error"} once stopped). Calls still running are given as
 * {"id", "content": null, "is_error": false, "pending": true}. The caller
 * frees `*out` with jpt_free(). Errors: JPT_ERR_INVALID, JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_batch_results_json(const jpt_batch *b, char **out);

/* For jpt_batch_results_json_as(): each result in the shape its call came
 * in (jptool's own shape is jpt_batch_results_json()'s). */
#define JPT_DIALECT_AS_CALLED 0

/* The results of a finished batch, one per call in the order submitted,
 * in a provider's shape, ready to send back:
 *   JPT_DIALECT_OPENAI            [{"role": "tool", "tool_call_id", "content"}]
 *                                 (messages to append)
 *   JPT_DIALECT_OPENAI_RESPONSES  [{"type": "function_call_output", "call_id",
 *                                   "output"}] (input items)
 *   JPT_DIALECT_ANTHROPIC         [{"type": "tool_result", "tool_use_id",
 *                                   "content", "is_error"}] (the content of
 *                                 a user message; "content" is left out
 *                                 when empty)
 *   JPT_DIALECT_GEMINI            [{"functionResponse": {"name", "response":
 *                                   {"output": content} or {"error": content}
 *                                   [, "id"]}}] (parts): the name echoes the
 *                                 call's; the id only a call's own
 *   JPT_DIALECT_AS_CALLED         each in the shape its call came in
 * `content` is the text jpt_batch_results_json() gives. The caller frees
 * `*out` with jpt_free(). Errors, with jpt_registry_errmsg() saying why
 * (but for NULL): JPT_ERR_INVALID (NULL, another dialect;
 * a provider's dialect for the turn end's batch, whose results answer no
 * call of the model's: give them as text, jpt_registry_take_turn_text),
 * JPT_ERR_STATE (a call is still
 * running: a provider takes the results of a message together),
 * JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_batch_results_json_as(const jpt_batch *b, int dialect, char **out);

/* Cancels every call of the batch still in flight (RFD 037's cancellation,
 * for a host's Ctrl+C), at the next dispatch: one-shot children are killed
 * and their calls end with an error that carries the output so far, awaits
 * answer with the handles' states and "cancelled": true, spawn and apply
 * answer at once with the output so far (their handles keep running),
 * calls not yet started never run (a call waiting for its turn on a handle
 * says "… was cancelled before it ran (it was waiting for an earlier call
 * on handle `h1` to answer)"); cancelling only the call before it
 * (jpt_batch_cancel_call) lets it run, in its turn: once the calls before
 * the cancelled one on that handle have answered.
 * Finished calls keep their results. NULL-safe. */
JPT_EXPORT void jpt_batch_cancel(jpt_batch *b);

/* Cancels one call of the batch, `call_id` as the model gave it (or as
 * jptool named a Gemini call without one), exactly as jpt_batch_cancel()
 * cancels each of its calls, at the next dispatch; the batch's other calls
 * go on. A finished call keeps its result (JPT_OK). Ids repeated within a
 * batch name the first such call. Lookups take constant time (an index
 * built at the first one). Errors: JPT_ERR_INVALID (NULL `b` or
 * `call_id`), JPT_ERR_NOT_FOUND (no call of that id in the batch). */
JPT_EXPORT int jpt_batch_cancel_call(jpt_batch *b, const char *call_id);

/* A host-side time limit: `timeout_ms` from now, the call `call_id` (NULL:
 * every call of the batch) is cancelled as by jpt_batch_cancel_call(), and
 * its result says that it reached the host's time limit, with the output
 * so far (an await answers as a cancelled await does: the states so far and
 * "cancelled": true). Setting it again replaces the limit; 0 removes it. A
 * finished call is left alone. Unlike a definition's `timeout_ms`, it is
 * the host's per call, and covers every kind of call (actions and awaits
 * too), the time a call waits for its turn on a handle included (the
 * result then says it stopped before it ran). Errors: JPT_ERR_INVALID
 * (NULL `b`, negative `timeout_ms`), JPT_ERR_NOT_FOUND (no such call),
 * JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_batch_set_call_timeout(jpt_batch *b, const char *call_id, int timeout_ms);

/* Frees the batch. Calls still in flight keep running and their results are
 * dropped; handles they spawned stay in the registry. Calls still waiting
 * for their turn on a handle never run. NULL-safe. May be called from a
 * callback, also while jpt_registry_wait() waits on this batch: that wait
 * then returns JPT_ERR_CANCELLED. */
JPT_EXPORT void jpt_batch_free(jpt_batch *b);

/* ---- Driving the registry ------------------------------------------------------- */

/* The epoll fd to poll for reading; it never changes. */
JPT_EXPORT int jpt_registry_get_fd(const jpt_registry *r);

/* Milliseconds until jpt_registry_dispatch() is due: 0 when work is ready,
 * -1 when only fd activity can make any. */
JPT_EXPORT int jpt_registry_get_timeout(const jpt_registry *r);

/* Does what is ready, without blocking and with bounded work (about 2 ms,
 * however many handles or calls are under way): reads output, reaps
 * children, fires timers, completes calls, calls the inquiry handler. The
 * clean-up after a tool's exit (closing its fds, releasing its cgroup,
 * where what got away from it is killed) comes after the exit is reported:
 * from the next dispatch, the fd staying readable until then (or before
 * jpt_registry_wait() and jpt_registry_run() return).
 * Returns >0 if more work is ready at once (call it again before polling),
 * 0 if not, JPT_ERR_INVALID for NULL, JPT_ERR_IO if the epoll fd failed
 * (jpt_registry_errmsg() gives errno's text), or JPT_ERR_CANCELLED if a callback freed the registry (it is gone when
 * this returns, unless this dispatch is nested in another, which then
 * returns the same). A callback may dispatch again (or run, or wait). */
JPT_EXPORT int jpt_registry_dispatch(jpt_registry *r);

/* Polls and dispatches until no call is in flight or `timeout_ms` passes
 * (-1: no limit). JPT_OK when idle, JPT_ERR_TIMEOUT, JPT_ERR_INVALID (NULL),
 * JPT_ERR_IO (with errno's text in jpt_registry_errmsg()), JPT_ERR_CANCELLED (a callback freed the registry, as for
 * dispatch). */
JPT_EXPORT int jpt_registry_run(jpt_registry *r, int timeout_ms);

/* Polls and dispatches until batch `b` is done or `timeout_ms` passes
 * (-1: no limit). JPT_OK, JPT_ERR_TIMEOUT, JPT_ERR_INVALID (NULL, or a
 * batch of another registry), JPT_ERR_IO (with errno's text in
 * jpt_registry_errmsg()), JPT_ERR_CANCELLED (a callback
 * freed `b`, which is then freed as this returns, or freed the registry,
 * as for dispatch). */
JPT_EXPORT int jpt_registry_wait(jpt_registry *r, jpt_batch *b, int timeout_ms);

/* Makes the registry's fd readable, so a thread blocked polling it returns.
 * The one function that may be called from any thread at any time (while
 * the registry exists). JPT_OK, or JPT_ERR_INVALID for NULL. */
JPT_EXPORT int jpt_registry_wakeup(jpt_registry *r);

/* ---- Events ------------------------------------------------------------------------ */

#define JPT_EVENT_CALL_DONE 1    /* a call has its result */
#define JPT_EVENT_BATCH_DONE 2   /* every call of a batch has its result */
#define JPT_EVENT_OUTPUT 3       /* a running handle produced output (one
                                    event until popped, however much) */
#define JPT_EVENT_STATE 4        /* a handle became waiting or stopped */
#define JPT_EVENT_SHUTDOWN 5     /* jpt_registry_shutdown() is complete: every
                                    tool process is reaped */

/* ---- Streaming output ------------------------------------------------------------ */

#define JPT_STREAM_STDOUT 1
#define JPT_STREAM_STDERR 2

/* Bytes a tool process wrote, as they were read: what a UI shows while the
 * tool runs. Handing them to the host consumes nothing: the model's fetch,
 * await and results read the same output as without a handler. */
typedef struct jpt_output {
    size_t size;         /* sizeof(jpt_output) of this library */
    const char *id;      /* the call id of a one-shot call, or the handle id */
    const char *tool;    /* the tool's name */
    int stateful;        /* 1 when `id` is a handle's (a spawn), else 0 */
    int stream;          /* JPT_STREAM_STDOUT or JPT_STREAM_STDERR */
    const char *data;    /* `len` bytes, not NUL-terminated, as the tool wrote
                            them (a stateful tool's state lines included);
                            valid during the call */
    size_t len;          /* > 0 */
} jpt_output;

typedef void (*jpt_output_fn)(const jpt_output *out, void *ud);

/* Sets the handler called inside dispatch with each piece of output a tool
 * process writes: stdout and stderr of stdio tools, stderr of vfs tools
 * (their stdout is the protocol; their states come as JPT_EVENT_STATE and
 * JPT_EVENT_OUTPUT events). Builtin tools write no bytes: none. The
 * handler may call the registry's functions (cancel a call, say); it is
 * called as often as the tool writes, so it should be quick, and copy what
 * it keeps. NULL removes it. NULL `r`: nothing. */
JPT_EXPORT void jpt_registry_set_output_handler(jpt_registry *r, jpt_output_fn fn, void *ud);

/* Pops the oldest event; the caller frees it with jpt_event_free(). Returns
 * JPT_ERR_AGAIN when there is none, JPT_ERR_INVALID for NULL. The queue
 * holds max_events (jpt_registry_options); past that the oldest event is
 * dropped, with a warning in the log. */
JPT_EXPORT int jpt_registry_next_event(jpt_registry *r, jpt_event **out);
JPT_EXPORT int jpt_event_type(const jpt_event *e);
/* The call id (CALL_DONE), or NULL. */
JPT_EXPORT const char *jpt_event_call_id(const jpt_event *e);
/* The handle id (OUTPUT, STATE; CALL_DONE of an action), or NULL. */
JPT_EXPORT const char *jpt_event_handle_id(const jpt_event *e);
/* The tool's name, or NULL for BATCH_DONE and SHUTDOWN. */
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
/* The id of the model's call under which the question arose: the
 * one-shot call whose run asks, or, for a handle's question, the await
 * that was watching the handle when it asked (the one that put it to the
 * handler: the question outlives that await if it answers first). */
JPT_EXPORT const char *jpt_inquiry_call_id(const jpt_inquiry *q);
/* The handle whose question it is (a stateful handle asking while an await
 * watches it), or NULL. The tool and call id are NULL for the turn end's
 * question (see jpt_registry_end_turn). */
JPT_EXPORT const char *jpt_inquiry_handle_id(const jpt_inquiry *q);
JPT_EXPORT const char *jpt_inquiry_question_json(const jpt_inquiry *q);
JPT_EXPORT int jpt_inquiry_target(const jpt_inquiry *q);
JPT_EXPORT const jpt_state *jpt_inquiry_context(const jpt_inquiry *q);

/* Answers with JSON checked against the question's schema. On JPT_OK `q`
 * is freed and the answer delivered: a one-shot tool runs again with the
 * accumulated answers, a stateful handle reads {"id", "answer"} as a line
 * on its stdin (a builtin's apply callback gets the answer, at the next
 * dispatch), the turn end acts on it. On JPT_ERR_INVALID (the answer is
 * not JSON or does not match; the message is in jpt_inquiry_errmsg()) `q`
 * stays valid for another try, as it does
 * on JPT_ERR_NOMEM and on JPT_ERR_STATE (a stateful handle that no longer
 * takes input). If the call ended meanwhile (aborted, batch cancelled,
 * registry freeing, or the handle moved on to another question), returns
 * JPT_ERR_CANCELLED and frees `q`. */
JPT_EXPORT int jpt_inquiry_answer(jpt_inquiry *q, const char *answer_json);
/* Declines the question and frees `q`: a one-shot call ends with an error
 * naming `reason` (may be NULL), a stateful handle is stopped with that
 * error (RFD 037), and the turn end treats its handles as "await". JPT_OK,
 * JPT_ERR_INVALID (NULL), JPT_ERR_NOMEM (`q` then stays valid). */
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
 * is dropped once an action shows the model that state. The turn end
 * leaves one for each handle it ends or keeps (jpt_registry_end_turn),
 * whatever the flags. A stopped handle's result reaches the model this way,
 * and the handle then goes. Returns "[]"
 * when there are none (jpt_registry_take_turn_text() takes them as text
 * for the model). The caller frees `*json_out` with jpt_free().
 * Errors: JPT_ERR_INVALID, JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_take_notifications(jpt_registry *r, char **json_out);

/* Flags for jpt_registry_end_turn() (not both). */
#define JPT_TURN_KEEP 0x1u  /* kill nothing: handles past their wait stay */
#define JPT_TURN_ABORT 0x2u /* every live handle is killed at once, whatever
                               its policy, and its output discarded (RFD
                               009's own turn end); each leaves a
                               notification saying it was aborted */

/* Ends the turn (RFD 037, "Turn-end behavior"): every live handle meets
 * its tool's spawn.lifecycle.on_turn_end policy, from the next dispatch:
 *   "abort"    it is killed and its output discarded; a notification says
 *              so: {"id", "tool", "state": "stopped", "result": "The turn
 *              ended: the handle was aborted (on_turn_end \"abort\"), and
 *              its output discarded", "is_error": false};
 *   "await"    it is waited for, up to turn_end_timeout_ms; its result is
 *              queued as a notification for the next turn; past the
 *              timeout it is killed, and the notification holds its last
 *              output (what the model had not read) and then "The turn end
 *              waited N ms (turn_end_timeout_ms) for the handle to stop: it
 *              was stopped", an error;
 *   "inquire"  (the default) one question goes to the inquiry handler for
 *              the assistant, listing each such handle (id, tool, state,
 *              elapsed_secs, output_preview) with an action "wait" or
 *              "abort" to choose: {"handles": [{"id", "action"}, …]}. A
 *              handle answered "wait" (or not mentioned) is waited for (up
 *              to the timeout) and its result becomes a result of the
 *              returned batch: {"id": handle id, "content": {"id", "state",
 *              "result"|"error"} as JSON text, "is_error"}; past the
 *              timeout it is killed and that result holds its last output
 *              and why it ended, as under "await". "abort" kills it as the
 *              abort policy does (its notification says the answer chose
 *              it). If the handler cancels the question, these handles are
 *              treated as "await". Without a handler nobody can choose to
 *              wait: each is killed at once (not after the timeout), its
 *              notification holding its last output and "The turn ended
 *              with nobody to ask whether to wait for the handle (no
 *              inquiry handler): it was stopped".
 * So every handle the turn end touches has a result or a notification
 * that says what became of it. Stopped handles the model has not seen go,
 * their results queued as notifications whatever their tools'
 * notification flags. The batch is done when every handle has settled;
 * then the registry holds no live handles, unless JPT_TURN_KEEP was given:
 * handles are then left running instead of killed, and each leaves a
 * notification of its state (a "wait" answer's handle, a result of the
 * batch). Give its results and the notifications to the model with
 * jpt_registry_take_turn_text() (below), as text before its next user
 * message. Free the batch with jpt_batch_free().
 * Errors: JPT_ERR_INVALID (unknown flags, or both), JPT_ERR_STATE (a turn end
 * is still settling, or the registry is shutting down), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_end_turn(jpt_registry *r, unsigned flags, jpt_batch **out);

/* What the tools left since the model's last message, as text to put in
 * front of its next user message: the notifications queued (taken, as
 * jpt_registry_take_notifications takes them) and, when `turn_end` is
 * the done batch jpt_registry_end_turn returned (else NULL), its results.
 * A provider takes a tool result only for a call of the message before
 * it, and these answer none (a turn end's result is named after a handle,
 * not a call: jpt_batch_results_json_as refuses to shape them), so the
 * model reads them as text, an entry each, every entry a bracketed line
 * and the tool's text after it, ended by a blank line:
 *
 *   [Notification: handle `b` (tool `build`) stopped after 3.2 s]
 *   <its result>                        (", with an error" before "]" for
 *                                        a failure)
 *   [Notification: handle `s` (tool `sh`) is running (12.0 s); its latest
 *   output:]                            (one line)
 *   <the last few hundred bytes of its output>
 *   [Notification: handle `q` (tool `ask`) is waiting (1.0 s), with no
 *   output yet]                         (one line, nothing after it)
 *   [Handle `w` (tool `test`) stopped after your last turn]
 *   <its result or error>
 *   [Handle `k` (tool `sh`) was still running as your last turn ended;
 *   its output:]                        (one line: JPT_TURN_KEEP)
 *   <its output>
 *
 * the notifications first, as they came, then the turn end's results in
 * its batch's order. `*text_out` is "" when there is nothing; the caller
 * frees it with jpt_free(). Calling it again gives only what came since.
 * Errors: JPT_ERR_INVALID (NULL `r` or `text_out`, a batch that is not a
 * turn end's of `r`), JPT_ERR_STATE (the turn end is still settling),
 * JPT_ERR_NOMEM; nothing is taken then, and jpt_registry_errmsg() says
 * why. */
JPT_EXPORT int jpt_registry_take_turn_text(jpt_registry *r, const jpt_batch *turn_end,
                                           char **text_out);

/* ---- Orphans ---------------------------------------------------------------------- */

/* Kills the children a crashed host left behind, as recorded in a state
 * file (jpt_registry_options.state_file), then removes the file. A process
 * is killed only if its pid still has the recorded start time, so a reused
 * pid is never touched. In cgroup containment the file also says where the
 * host's cgroups are: every process left in them (what got away from the
 * children) is killed and the cgroups removed, those kept empty for later
 * handles too. `killed` (may be NULL) receives the count of processes.
 * Errors: JPT_ERR_INVALID, JPT_ERR_IO (the file cannot be read or
 * removed, or a cgroup is left behind; a missing file is not an error),
 * JPT_ERR_NOMEM; jpt_last_error() says why. */
JPT_EXPORT int jpt_registry_reap_stale(const char *path, size_t *killed);

/* ---- VFS tools ---------------------------------------------------------------
 * A tool whose definition says "runtime": "vfs" (D11) is a process that
 * does its file access through JSON-RPC requests to the registry, which
 * serves them from the registry's loop through a ProjectFiles backend,
 * after the access policy its "sandbox" section gives; its http.get and
 * http.post run on the registry's one libcurl multi handle, in the same
 * loop (vfs.h, "A standalone host" says how). Its definition:
 * "command" (as a stdio tool's, templates and "env" included), "sandbox"
 * (the policy; absent: the workspace read-only), "files" (the name of a
 * backend added with jpt_registry_add_files; absent: the registry's root
 * directory), "request_timeout_ms" (no request nor result for this long
 * stops the tool; default 60000). It may be stateful (RFD 009): `apply`
 * reaches it as D11's apply notification, its state notifications are the
 * handle's. Its process runs in the OS sandbox (vfs.h, "The OS sandbox";
 * "os_sandbox" above chooses the mode and adds readable paths), with a
 * clean environment: PATH and the names its env.allow lists. In mode
 * "required" (the default) on a system without Landlock or seccomp, the
 * call fails before the tool starts, its result an error that says what
 * the system lacks. */

/* What the OS sandbox of `tool`'s processes enforces on this system, as a
 * spawn now would prepare it: `*enforced` gets the JPT_SANDBOX_ENFORCED_*
 * bits (0 for a tool without one) and `*report` (free with jpt_free) a
 * sentence saying so and naming what is missing ("vfs profile, Landlock
 * ABI 7: enforced files, …"), or why there is none. Either may be NULL.
 * Each process's start also logs it (JPT_LOG_INFO, or JPT_LOG_WARNING
 * when it runs without Landlock or seccomp). Errors: JPT_ERR_INVALID (NULL r or tool),
 * JPT_ERR_NOT_FOUND (no such tool), JPT_ERR_SANDBOX (its mode is
 * "required" and this system cannot enforce it: what a spawn would fail
 * with; the message says what is lacking), JPT_ERR_IO, JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_tool_sandbox(jpt_registry *r, const char *tool, unsigned *enforced,
                                         char **report);

/* Names a files backend that "vfs" tool definitions may choose with
 * "files": name. The registry takes a reference; a name is added once.
 * Errors: JPT_ERR_INVALID (NULL, or a name that is not 1 to 64 characters
 * of A-Z a-z 0-9 _ -), JPT_ERR_EXISTS, JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_registry_add_files(jpt_registry *r, const char *name, jpt_files *files);

/* The policy handler of the registry's "vfs" tools: called inside
 * dispatch with each request their policy asks about (vfs.h, "The policy
 * prompt"); jpt_policy_request_id() gives the call id of a one-shot call,
 * or the handle id. NULL: none (an ask is denied). */
JPT_EXPORT void jpt_registry_set_policy_handler(jpt_registry *r, jpt_policy_fn fn, void *ud);

#ifdef __cplusplus
}
#endif

#endif /* JPTOOL_REGISTRY_H */
