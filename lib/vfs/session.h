/* The vfs room's sessions: serving one VFS tool on a loop (session.c),
 * and what every owner of sessions builds them with (serve.c): the
 * resources its tools share, the defaults, one way to start a session.
 * The standalone host (host.c) and the registry's "vfs" runtime are the
 * owners; neither assembles a session itself. Never installed. */
#ifndef JPT_LIB_VFS_SESSION_H
#define JPT_LIB_VFS_SESSION_H

#include "common/json.h"
#include "vfs/vfs.h"

/* A request's timeout when the owner names none (vfs.h,
 * jpt_vfs_host_options.request_timeout_ms 0; a definition without
 * "request_timeout_ms", registry.h), and the longest a definition may
 * name: a day, longer than any tool should go silent. */
#define JPT__VFS_REQUEST_TIMEOUT_MS 60000
#define JPT__VFS_REQUEST_TIMEOUT_MAX_MS 86400000

/* The owner's process slots (a registry's max_processes, registry.h),
 * which each child of process.run takes one of while it lives (run.h). */
typedef struct jpt__vfs_slots {
    /* Takes a slot: true; or false when none is free now, and then the
     * owner calls jpt__vfs_session_slot_free() once one may be (from the
     * loop, never from inside this call). */
    bool (*take)(void *ud);
    /* Gives back a slot taken: the child was reaped, or did not start. */
    void (*give)(void *ud);
    void *ud;
} jpt__vfs_slots;

/* ==== session.c: serving one tool on a loop ============================== */

typedef struct jpt__vfs_session jpt__vfs_session;

/* What the session tells its owner (the standalone host, the registry's
 * "vfs" runtime). Inside the loop's dispatch. */
typedef struct jpt__vfs_session_ops {
    /* A state the tool reported (result, error, state notifications); the
     * owner takes the reference. */
    void (*state)(void *ud, jpt_state *st);
    /* The tool has ended (its process reaped, or its fds closed). `failure`
     * (a reference for the owner, or NULL) is an error state when it failed
     * by the session's account: it exited without a result (with the end
     * of its stderr), broke the protocol past the limit, or was silent past
     * the request timeout. The owner may free the session from here. */
    void (*ended)(void *ud, jpt_state *failure);
    /* A request the policy asks about: the owner hands it to its policy
     * handler (jpt_policy_fn) and returns true, or returns false when it
     * has none (the request is then denied, saying no one could be
     * asked). NULL: no handler ever. */
    bool (*ask)(void *ud, jpt_policy_request *req);
    /* Bytes of the tool's stderr as they are read (its stdout is the
     * protocol's). May be NULL. */
    void (*stderr_bytes)(void *ud, const char *p, size_t n);
    void *ud;
} jpt__vfs_session_ops;

typedef struct jpt__vfs_session_config {
    jpt__loop *loop;
    jpt_files *files;           /* referenced by the session */
    const jpt_policy *policy;   /* the owner keeps it for the session's life */
    /* The owner's HTTP object (one per loop owner, outliving its
     * sessions), or NULL: http.* are then answered -32601. */
    struct jpt__http *http;
    jpt__vfs_init init;         /* init.name is the tool's name in messages */
    const char *request_id;     /* jpt_policy_request_id(), or NULL */
    int request_timeout_ms;     /* <= 0: none */
    int kill_grace_ms;
    jpt__vfs_limits limits;     /* zeros: the defaults */
    /* The owner's process slots, which process.run's children take too
     * (run.h), or NULL: the tool's own bound alone. Outlives the session. */
    const struct jpt__vfs_slots *slots;
    /* The OS sandbox of process.run's children (JPT_SANDBOX_*, run.h):
     * the tool's own mode; 0: JPT_SANDBOX_REQUIRED. */
    int run_sandbox_mode;
    struct jpt__sandbox_cache *sandbox_cache; /* the owner's, for the
                                                 children's filters; may be
                                                 NULL */
    /* The option that lets a sandboxed tool read more, in the owner's
     * words ("os_sandbox.read in its definition"), static storage, or
     * NULL: the end of a tool that ran in the OS sandbox and could not
     * start (it read none of init, sent no valid message and did not exit
     * 0) names it (issue 16 §4). */
    const char *sandbox_hint;
    /* How to give a tool environment variables, in the owner's words,
     * static storage, or NULL: the end of a Python tool that could not
     * start because it could not import jptool (its stderr says "No
     * module named 'jptool'") names it with jptool.python_tool_env(). */
    const char *env_hint;
} jpt__vfs_session_config;

/* Starts a tool as a child process (`spawn`, its stdin a pipe whatever it
 * says) and writes init. Errors as jpt__child_spawn and
 * jpt__vfs_engine_new, the message in `err`. */
int jpt__vfs_session_spawn(const jpt__vfs_session_config *cfg, const jpt__spawn *spawn,
                           const jpt__vfs_session_ops *ops, jpt__errbuf *err,
                           jpt__vfs_session **out);
/* Serves a tool on two fds the caller opened, which the session owns from
 * then on (made non-blocking; closed at its end). */
int jpt__vfs_session_attach(const jpt__vfs_session_config *cfg, int rfd, int wfd,
                            const jpt__vfs_session_ops *ops, jpt__errbuf *err,
                            jpt__vfs_session **out);
/* D11's apply notification with `input_json`. JPT_ERR_STATE once the tool
 * is ending, JPT_ERR_INVALID (not JSON), JPT_ERR_NOMEM. */
int jpt__vfs_session_apply(jpt__vfs_session *s, const char *input_json, size_t len);
/* D11 "Cancellation": the cancel notification, SIGTERM after the grace,
 * SIGKILL after another; requests waiting on the prompt are answered
 * -32005. Its end comes through ops->ended. */
void jpt__vfs_session_cancel(jpt__vfs_session *s);
/* Ends the tool now: SIGTERM, SIGKILL after the grace (attached fds are
 * closed). */
void jpt__vfs_session_terminate(jpt__vfs_session *s);
/* Takes in what the tool wrote and was not read yet, and its end. */
void jpt__vfs_session_refresh(jpt__vfs_session *s);
bool jpt__vfs_session_ended(const jpt__vfs_session *s);
/* Whether the tool failed by the session's account (what `failure` of
 * ops.ended says), also when there was no memory to say how: `failure`
 * is then NULL (issue 18). */
bool jpt__vfs_session_failed(const jpt__vfs_session *s);
/* The tool's process id, 0 for attached fds or once it is reaped. */
pid_t jpt__vfs_session_pid(const jpt__vfs_session *s);
/* The owner has a process slot again: process.run requests waiting for
 * one start (run.h, jpt__vfs_run_queue_wake). */
void jpt__vfs_session_slot_free(jpt__vfs_session *s);
/* Whether process.run requests wait for the owner's slots while none of
 * the tool's processes runs. */
bool jpt__vfs_session_starved(const jpt__vfs_session *s);
/* Refuses the waiting process.run requests: JPT_ERR_LIMIT (-32603) and
 * "process.run '<program>': <why>". */
void jpt__vfs_session_refuse_waiting(jpt__vfs_session *s, const char *why);
/* Hands over the tool's process, for a free that ends every process at
 * once. */
jpt__child *jpt__vfs_session_take_child(jpt__vfs_session *s);
/* Frees the session; a process still running is killed and reaped. Not
 * from inside a callback of the session but ops->ended. */
void jpt__vfs_session_free(jpt__vfs_session *s);

/* ==== serve.c: what an owner's sessions are built with ================== */

/* What the tools of one owner share: its loop, its workspace (opened as a
 * files backend once for each hard-link setting, for a tool given none),
 * the files backends it names (jpt_registry_add_files), and one HTTP
 * object for their http.* requests, made with the first session, whose
 * connections they share. */
typedef struct jpt__vfs_server jpt__vfs_server;

/* `root` is the workspace's directory (copied). JPT_ERR_NOMEM. */
int jpt__vfs_server_new(jpt__loop *loop, const char *root, jpt__vfs_server **out);
/* After the sessions it served. NULL-safe. */
void jpt__vfs_server_free(jpt__vfs_server *sv);
/* Names backend `files` (a reference is taken): JPT_ERR_EXISTS when the
 * name is taken, JPT_ERR_NOMEM. */
int jpt__vfs_server_add_files(jpt__vfs_server *sv, const char *name, jpt_files *files);
/* The backend named `name`, or NULL. */
jpt_files *jpt__vfs_server_named(const jpt__vfs_server *sv, const char *name);
/* The workspace as a backend, with `policy`'s "hardlinks" setting
 * (jpt_policy_hardlinks_allowed): jpt_files_open_dir's errors, which set
 * the thread's last error naming the root. */
int jpt__vfs_server_root(jpt__vfs_server *sv, const jpt_policy *policy, jpt_files **out);

/* A VFS tool's definition, as the registry reads it (registry.h, a "vfs"
 * tool): "sandbox" the access policy (D11: none is the default policy),
 * "files" a backend the server names (none: the workspace), and
 * "request_timeout_ms". */
typedef struct jpt__vfs_def {
    jpt_policy *policy;
    jpt_files *files;         /* a reference, or NULL: the workspace */
    int request_timeout_ms;
} jpt__vfs_def;

/* Reads `def`'s keys into `d` (zeroed by the caller): JPT_ERR_INVALID
 * with the reason in `why`, JPT_ERR_NOMEM. jpt__vfs_def_clear lets go of
 * what it took, either way. */
int jpt__vfs_def_read(const jpt__vfs_server *sv, const json_t *def, jpt__vfs_def *d, char *why,
                      size_t n);
void jpt__vfs_def_clear(jpt__vfs_def *d);

/* One session to start: the tool, how it is served, and (for a tool the
 * owner spawns) its process. */
typedef struct jpt__vfs_start {
    const jpt_policy *policy;   /* the owner keeps it for the session's life */
    jpt_files *files;           /* referenced by the session: the tool's, or
                                   the workspace (jpt__vfs_server_root) */
    jpt__vfs_init init;         /* init.name is the tool's name in messages */
    const char *request_id;     /* jpt_policy_request_id(), or NULL */
    int request_timeout_ms;     /* <= 0: none */
    int kill_grace_ms;
    jpt__vfs_limits limits;     /* zeros: the defaults */
    const jpt__vfs_slots *slots; /* as jpt__vfs_session_config's */
    jpt__sandbox_cache *sandbox_cache; /* the owner's; may be NULL */
    const char *sandbox_hint;   /* as jpt__vfs_session_config's */
    const char *env_hint;       /* as jpt__vfs_session_config's */
    /* The process (jpt__vfs_serve_spawn): its argv and environment, run
     * in "/" (issue 15 §4: nothing of the host's, not even where it runs),
     * its stdin a pipe. */
    const char *const *argv;
    const char *const *envp;
    int devnull;                /* as jpt__spawn's */
    int drain_ms;
    jpt__contain *contain;
    /* Its OS sandbox, or NULL: none. */
    const jpt__sandbox_spec *sandbox;
    /* The OS sandbox mode of process.run's children (JPT_SANDBOX_*), as
     * jpt__vfs_session_config's. */
    int run_sandbox_mode;
} jpt__vfs_start;

/* Spawns the tool (`report`: what its sandbox enforced, logged) or
 * serves it on fds the owner opened (`rfd`, `wfd`, which the session owns
 * from then on), and writes init. jpt__vfs_session_spawn's errors, and
 * jpt__http_new's, the message in `err`. */
int jpt__vfs_serve_spawn(jpt__vfs_server *sv, const jpt__vfs_start *st,
                         const jpt__vfs_session_ops *ops, jpt__sandbox_report *report,
                         jpt__errbuf *err, jpt__vfs_session **out);
int jpt__vfs_serve_attach(jpt__vfs_server *sv, const jpt__vfs_start *st, int rfd, int wfd,
                          const jpt__vfs_session_ops *ops, jpt__errbuf *err,
                          jpt__vfs_session **out);

#endif /* JPT_LIB_VFS_SESSION_H */
