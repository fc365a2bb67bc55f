/* The registry room, bottom layer: the registry's and a tool's data, and the
 * services every layer above may use. Never installed.
 *
 * The room's files form layers; each calls only the files before it on
 * the map (docs/ARCHITECTURE.md, "The map", which test/check-layers.py
 * reads), and includes only the headers of its layer and those below.
 *
 * Upward ties go through hooks the upper file installs: a runtime reports
 * to its handle through a sink, a handle publishes its changes to
 * subscribers, an inquiry tells its owner of the answer, a call runs the
 * await tool through the call ops registry.c gives it, a batch tells its
 * owner (the turn end) when the host frees it. */
#ifndef JPT_LIB_REGISTRY_BASE_H
#define JPT_LIB_REGISTRY_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/json.h"
#include "jptool/registry.h"
#include "loop/loop.h"
#include "process/process.h"
#include "state/state.h"

/* RFD 037's notification flags and turn-end policies. */
#define JPT__NOTIFY_SUCCESS 1
#define JPT__NOTIFY_FAILURE 2
#define JPT__NOTIFY_WAITING 4
#define JPT__NOTIFY_CONTENT 8
#define JPT__NOTIFY_DEFAULT (JPT__NOTIFY_SUCCESS | JPT__NOTIFY_FAILURE | JPT__NOTIFY_WAITING)
#define JPT__TURN_INQUIRE 1
#define JPT__TURN_AWAIT 2
#define JPT__TURN_ABORT 3

/* Actions, also as bits of a tool's action set. */
#define JPT__ACTION_NONE 0 /* a one-shot call */
#define JPT__ACTION_SPAWN 1
#define JPT__ACTION_FETCH 2
#define JPT__ACTION_APPLY 4
#define JPT__ACTION_ABORT 8

typedef struct jpt__runtime_ops jpt__runtime_ops;
typedef struct jpt__call jpt__call;
typedef struct jpt__call_ops jpt__call_ops;
typedef struct jpt__notice jpt__notice;
typedef struct jpt__turn jpt__turn;

/* A run waiting in line for a process slot (max_processes, registry.h;
 * slots.c serves the line). */
typedef struct jpt__slot_waiter jpt__slot_waiter;
struct jpt__slot_waiter {
    /* Starts the run's process now that a slot is free (jpt__slot_hold
     * counts it): JPT_OK; JPT_ERR_AGAIN to wait on at the end of the line
     * (no fd to be had now: jpt__slot_spawn_failed); another error with
     * the model-facing reason in `why`. */
    int (*start)(jpt__slot_waiter *w, jpt__buf *why);
    /* The run could not start: it ends with `why` as its result. Called
     * out of the line. */
    void (*fail)(jpt__slot_waiter *w, const char *why);
    /* A VFS tool's process.run requests waiting while the tool holds a
     * slot (holds_slot): a slot is free for them, which they take with
     * jpt__slot_take; or they are refused with `why`. NULL for a run that
     * never holds a slot while it waits. */
    void (*granted)(jpt__slot_waiter *w);
    void (*refuse)(jpt__slot_waiter *w, const char *why);
    struct jpt__run *run; /* the run it starts (runtime.h) */
    /* The run's flag that says it waits in line to start (runtime.h,
     * jpt__run.queued: the model reads it "pending"), kept by the line:
     * set while it waits there (not holds_slot), cleared when it leaves. */
    bool *queued;
    bool holds_slot;  /* its owner holds a slot meanwhile (a VFS tool) */
    bool waiting;     /* in the line */
    jpt__slot_waiter *next, *prev;
};

/* A tool process's slot: counted in nchildren and recorded in the state
 * file while held. */
typedef struct jpt__slot {
    size_t stale;     /* its slot in the state file, 0: none */
    bool held;
    bool for_handle;  /* counted in handle_slots (a live handle's process) */
} jpt__slot;

/* A tool definition. Immutable once loaded; held by the registry's list
 * and by every call and handle of it, so a tool replaced under them stays
 * theirs. */
typedef struct jpt__tool {
    unsigned refs;
    char *name;
    char *description;
    json_t *parameters; /* JSON Schema object */
    json_t *options;    /* {{tool}}'s "options" */
    const jpt__runtime_ops *rt; /* what runs it */
    void *rt_data;      /* the runtime's own part of the definition (its
                           check fills it, its forget frees it) */
    const jpt__call_ops *call_ops; /* the registry's own tools (await) */
    bool stateful;
    unsigned actions;   /* JPT__ACTION_* bits, spawn always set if stateful */
    int question_target;
    int settle_ms, yield_ms; /* -1: the registry's */
    size_t output_limit;     /* 0: the registry's */
    int64_t timeout_ms;      /* one-shot calls; 0: none */
    unsigned notify;    /* JPT__NOTIFY_* bits (RFD 037, spawn.notifications) */
    int on_turn_end;    /* JPT__TURN_* (RFD 037, spawn.lifecycle.on_turn_end) */
} jpt__tool;

struct jpt_event {
    int type;
    char *call_id;
    char *handle_id;
    char *tool;
    int state;
    const jpt_batch *batch;
    jpt_event **slot;   /* OUTPUT: the handle's pointer to it, cleared when
                           the event goes, so the next output queues another */
    jpt_event *next;
};

/* The registry. Its fields are read by every layer; each is written by
 * the file named beside it. */
struct jpt_registry {
    /* options (registry.c) */
    jpt__loop *loop;
    int devnull;         /* stdin of one-shot children */
    char *root;
    int kill_grace_ms;
    size_t capture_bytes;
    size_t output_limit;
    int settle_ms, yield_ms, drain_ms;
    int max_inquiry_rounds;
    char *spool_dir;
    bool keep_spool;     /* JPT_REGISTRY_KEEP_SPOOL */
    int turn_end_timeout_ms;
    size_t max_processes;
    jpt__contain *contain; /* what a child's end kills */
    int sandbox_mode;    /* JPT_SANDBOX_REQUIRED, _BEST_EFFORT or _OFF */
    jpt__sandbox_cache *sandbox_cache; /* the seccomp filters built so far */

    /* tools (tools.c) */
    jpt__tool **tools;
    size_t ntools, cap_tools;
    jpt__tool *await_tool; /* RFD 037's, offered with stateful tools */

    /* processes (slots.c) */
    size_t nchildren;    /* spawned, not reaped: tool processes and
                            process.run's children (runtime-vfs.c) */
    size_t handle_slots; /* of those, the processes of live handles (a
                            spawn's, not being ended): they keep their
                            slots until the model ends them (registry.h,
                            max_processes) */
    jpt__slot_waiter *slot_head, *slot_tail; /* waiting for a process slot */
    jpt__defer slot_step;
    bool slot_granted;   /* inside a waiter's start() or granted(): it
                            may take one slot ahead of the line */
    /* spool files (runtime-process.c) */
    char **spool_files;  /* created, removed with the registry */
    size_t nspool_files, cap_spool_files;

    /* VFS tools (runtime-vfs.c) */
    jpt_policy_fn policy_fn;
    void *policy_ud;
    /* The workspace, the backends jpt_registry_add_files names, and one
     * HTTP object for every VFS tool (vfs/session.h); made when first
     * needed. */
    struct jpt__vfs_server *vfs_server;

    /* the state file (stale.c) */
    char *state_file;
    int state_fd;
    size_t state_base;   /* the slots start after the cgroups record */
    size_t *free_slots;
    size_t nfree_slots, cap_free_slots, nslots;

    /* handles (handle.c) */
    jpt_handle *handles; /* every live handle, registered or not */
    jpt__idmap handle_ids; /* registered handles by id */
    struct jpt__ended_id *ended_ids; /* the last JPT__ENDED_IDS handles that
                            left the id map, a ring (handle.h) */
    size_t nended_ids, ended_next;
    /* told of every registered handle's change (notify.c, through
       registry.c): JPT__HEARD_* bits */
    void (*on_handle_change)(jpt_handle *h, unsigned what);

    /* inquiries (inquiry.c) */
    jpt_inquiry *inquiries;
    jpt_inquiry_fn inquiry_fn;
    void *inquiry_ud;

    /* calls and batches (call.c, batch.c) */
    jpt_batch *batches;
    /* Done batches still letting go of the handles they held, a slice per
     * dispatch (issue 18); finish_releases lets go of them all at once, for
     * a lookup that must see the registry as if they were done (handle.c). */
    size_t releasing;
    void (*finish_releases)(jpt_registry *r);
    jpt__call *calls;    /* in flight, and finished ones of freed batches */
    size_t calls_in_flight;

    /* notifications (notify.c) and the turn end (turn.c) */
    jpt__notice *notices_head, *notices_tail;
    jpt__turn *turn;

    /* events (events.c) */
    jpt_event *events_head, *events_tail;
    size_t nevents, max_events;
    jpt_output_fn output_fn; /* jpt_registry_set_output_handler */
    void *output_ud;

    /* the face (registry.c) */
    int dispatching;     /* inside jpt_registry_dispatch (or run, wait) */
    bool free_pending;   /* freed from a callback: freed as dispatch ends */
    bool freeing;        /* inside jpt_registry_free */
    bool shutting_down;  /* jpt_registry_shutdown: nothing new starts */
    bool shutdown_reported;
    jpt__defer shutdown_step;
    void (*on_child_gone)(jpt_registry *r); /* a process was reaped */
    jpt__errbuf err;
};

/* ---- Slices ---------------------------------------------------------------------
 * Work over what a model or a tool controls (the ids of an await, the
 * handles a batch holds) runs in slices, one per dispatch, so that no
 * dispatch of the host's loop runs long (issue 18): up to JPT__SLICE items,
 * for no longer than JPT__SLICE_NS (a slice whose items page in fresh
 * memory, or miss the caches, does fewer). */
#define JPT__SLICE 2048
#define JPT__SLICE_NS 1000000u

typedef struct jpt__slice {
    uint64_t until;
    size_t left;
} jpt__slice;

static inline jpt__slice jpt__slice_begin(void)
{
    jpt__slice s = {jpt__loop_now() + JPT__SLICE_NS, JPT__SLICE};
    return s;
}

/* Whether the slice has room for one more item, which it counts. The
 * clock is read every 64 items. */
static inline bool jpt__slice_more(jpt__slice *s)
{
    if (s->left == 0 || ((s->left & 63) == 0 && jpt__loop_now() >= s->until)) {
        s->left = 0;
        return false;
    }
    s->left--;
    return true;
}

/* Host callbacks run only inside dispatch (registry.h, Threading): `d`
 * runs at once when inside it, else from the next one. */
static inline void jpt__registry_soon(jpt_registry *r, jpt__defer *d)
{
    if (r->dispatching > 0)
        d->fn(d);
    else
        jpt__loop_defer_queue(r->loop, d);
}

/* ---- Events (events.c) -------------------------------------------------------
 * The queue the host pops. The oldest is dropped beyond max_events (with a
 * warning), so a host that never pops them does not grow without bound.
 * Pushing never fails the caller: a STATE or OUTPUT event that cannot be
 * made is lost with a warning in the log. The events that end a call and
 * a batch are made ahead, when the batch is submitted, and queued without
 * allocating (issue 18: no completion is lost to an allocation failure). */
/* A CALL_DONE or BATCH_DONE event made ahead (NULL when out of memory),
 * queued once with jpt__events_queue or freed unqueued with
 * jpt__events_unreserve (NULL-safe). */
jpt_event *jpt__events_reserve(int type, const char *call_id, const char *tool);
void jpt__events_unreserve(jpt_event *e);
/* Queues `*reserved` (set to NULL) for batch `b`, taking `*handle_id` (set
 * to NULL; `handle_id` may be NULL) as the event's handle id. */
void jpt__events_queue(jpt_registry *r, jpt_event **reserved, const jpt_batch *b,
                       char **handle_id);
void jpt__events_state(jpt_registry *r, const char *handle_id, const char *tool, int kind);
/* One OUTPUT event per handle until popped: `*slot` points to it while it
 * is queued and is cleared when it goes; a handle that goes first lets go
 * of it with jpt__events_forget. */
void jpt__events_output(jpt_registry *r, const char *handle_id, const char *tool,
                        jpt_event **slot);
void jpt__events_forget(jpt_event **slot);
/* Hands bytes a tool wrote to the host's output handler, if it has one:
 * `id` is the call's (one-shot) or the handle's (stateful). */
void jpt__events_stream(jpt_registry *r, const char *id, const char *tool, bool stateful,
                        int stream, const char *p, size_t n);
void jpt__events_shutdown(jpt_registry *r);
void jpt__events_free(jpt_registry *r);

/* ---- The state file (stale.c) -----------------------------------------------
 * Opening creates it, empty but for where the cgroups are in cgroup
 * containment (JPT_ERR_IO if it cannot); adding and removing a
 * child write its slot (failures are logged: a spawn does not fail for
 * them); closing removes the file. A slot is named by the number add
 * returns (0: none was written). */
int jpt__stale_open(jpt_registry *r);
void jpt__stale_close(jpt_registry *r);
size_t jpt__stale_add(jpt_registry *r, pid_t pid);
void jpt__stale_remove(jpt_registry *r, size_t slot);
/* JPT_ERR_EXISTS when the file at `path` lists a child, or cgroups that
 * are still there; JPT_OK when it is absent or lists none; JPT_ERR_IO when
 * it cannot be read. */
int jpt__stale_in_use(const char *path);

/* ---- Process slots (slots.c) --------------------------------------------------------
 * registry.h, max_processes: one rule for every runtime. A run starts its
 * process when a slot is free and it finds the fds; else it waits in line,
 * in order, and the loop starts it as slots free. */
/* Starts `w`'s run now (w->start), or puts it in line (*w->queued set):
 * JPT_OK, or w->start's error; or, when no slot is free and live handles'
 * processes hold every one (they keep them until the model ends the
 * handles, and the model waits for this call), JPT_ERR_LIMIT with the
 * model-facing reason in `why`. */
int jpt__slot_start(jpt_registry *r, jpt__slot_waiter *w, jpt__buf *why);
/* What a spawn's failure `rc` (for `reason`) means for run `id`:
 * JPT_ERR_AGAIN (it waits in line, logged) for want of an fd or a process
 * while another child of the registry lives, whose end frees some; else
 * `rc`. */
int jpt__slot_spawn_failed(const jpt_registry *r, int rc, const char *id, const char *reason);
/* A tool process started (`pid`): it holds a slot and is recorded in the
 * state file. Released when it is reaped or freed (the line moves), or
 * dropped when the registry's free takes it (the line does not). Both
 * do nothing for a slot not held. */
void jpt__slot_hold(jpt_registry *r, jpt__slot *s, pid_t pid);
void jpt__slot_release(jpt_registry *r, jpt__slot *s);
void jpt__slot_drop(jpt_registry *r, jpt__slot *s);
/* A held slot is a live handle's from now on (counted in handle_slots),
 * or no longer (its process is being ended: its slot frees soon, so a
 * call now waits for it rather than fail). Released and dropped slots are
 * no handle's. */
void jpt__slot_hold_for_handle(jpt_registry *r, jpt__slot *s);
void jpt__slot_release_for_handle(jpt_registry *r, jpt__slot *s);
/* The line: a waiter joins at the end (once) or leaves it. */
void jpt__slot_wait(jpt_registry *r, jpt__slot_waiter *w);
void jpt__slot_leave(jpt_registry *r, jpt__slot_waiter *w);
/* A process.run child: takes a slot (true); false when all max_processes
 * are taken, others wait in line ahead (unless the caller is a waiter
 * being served), or the registry shuts down. Given back when it is
 * reaped: the line moves. */
bool jpt__slot_take(jpt_registry *r);
void jpt__slot_give(jpt_registry *r);
/* Deferred (r->slot_step): serves the line as slots free, in order; then,
 * if live handles' processes hold every slot, fails the runs in line and
 * refuses the process.run requests (they would wait for the model, which
 * waits for them); else, if every process the registry runs is a VFS
 * tool whose process.run waits for a slot, refuses those requests (none
 * could ever free one). */
void jpt__slots_freed(jpt__defer *d);

/* ---- A stdio tool's command (command.c) --------------------------------------
 * What a definition says of the process a stdio or VFS tool runs, kept in
 * its runtime's data; the argv and environment for one run (`why`
 * receives a model-facing reason when an argument is missing). */
typedef struct jpt__command_def {
    json_t *command;    /* array of template strings */
    bool stdin_json;    /* pipe {{tool}} to stdin (stdio) */
    bool pty;           /* it runs on a terminal (stdio) */
    bool env_inherit;   /* env.inherit; else PATH (vfs) or the core set,
                           and env.allow */
    bool env_vfs;       /* a vfs tool's: clean, PATH as base */
    json_t *env_allow;  /* array of names, or NULL */
    json_t *env_set;    /* object, or NULL */
    /* The OS sandbox (vfs.h, "The OS sandbox"). */
    int sandbox_profile; /* JPT__SANDBOX_VFS or _STDIO, 0: none */
    int sandbox_mode;    /* os_sandbox.mode (JPT_SANDBOX_*), 0: the registry's */
    bool sandbox_writable; /* stdio: the workspace */
    bool sandbox_git_writable; /* stdio: sandbox.filesystem.git "writable" */
    unsigned sandbox_processes; /* os_sandbox.process_limit, 0: the default */
    json_t *sandbox_read;  /* os_sandbox.read: absolute paths, or NULL */
    json_t *sandbox_write; /* os_sandbox.write (stdio), or NULL */
} jpt__command_def;

typedef struct jpt__command {
    char **argv;
    char **envp;
    char *stdin_json; /* the {{tool}} JSON when the tool takes it on stdin */
    jpt__sandbox_spec sandbox;  /* profile 0: none */
    const char **sandbox_paths; /* what sandbox.read and .write point into */
} jpt__command;
int jpt__command_check_template(const char *tmpl, char *why, size_t n);
/* A definition's "command" (required: templates checked), "env" and
 * "os_sandbox" into `d` (zeroed first by the caller), and for a stdio
 * tool (`vfs` false) "sandbox"; or JPT_ERR_INVALID (JPT_ERR_UNSUPPORTED
 * for a sandbox setting that cannot be enforced) with the reason in
 * `why`. jpt__command_def_free lets go of what it took, either way. */
int jpt__command_take(jpt__command_def *d, const json_t *def, bool vfs, char *why, size_t n);
void jpt__command_def_free(jpt__command_def *d);
/* The sandbox a run of tool `t`, whose command is `d`, gets (`*spec`
 * profile 0: none; `d` NULL: a tool that runs no process) and its mode. */
void jpt__command_sandbox(const jpt_registry *r, const jpt__tool *t, const jpt__command_def *d,
                          jpt__sandbox_spec *spec);
/* The run of tool `t` whose command is `d`. */
int jpt__command_build(const jpt_registry *r, const jpt__tool *t, const jpt__command_def *d,
                       int action, const json_t *arguments, const json_t *answers,
                       jpt__command *out, jpt__buf *why);
void jpt__command_free(jpt__command *c);

/* A tool's own setting, else the registry's. */
static inline int jpt__tool_settle_ms(const jpt_registry *r, const jpt__tool *t)
{
    return t->settle_ms >= 0 ? t->settle_ms : r->settle_ms;
}

static inline int jpt__tool_yield_ms(const jpt_registry *r, const jpt__tool *t)
{
    return t->yield_ms >= 0 ? t->yield_ms : r->yield_ms;
}

static inline size_t jpt__tool_output_limit(const jpt_registry *r, const jpt__tool *t)
{
    return t->output_limit > 0 ? t->output_limit : r->output_limit;
}

/* ---- Names (names.c) ------------------------------------------------------------ */

/* 1 to 64 characters of A-Z, a-z, 0-9, '_', '-' and those of `extra`: a
 * tool's name (extra ""), a handle id the model chooses (extra "."). */
bool jpt__valid_name(const char *name, const char *extra);
#define JPT__HANDLE_ID_EXTRA "."
/* "spawn", "fetch", "apply", "abort" (or "run" for none), and back (0 for
 * an unknown name). */
const char *jpt__action_name(int action);
int jpt__action_from_name(const char *name);
/* "spawn, fetch, abort" */
void jpt__actions_list(unsigned actions, char *out, size_t n);
/* Seconds since `since` (ns), rounded to a tenth, as RFD 037 shows them. */
double jpt__elapsed_secs(uint64_t since);

#endif /* JPT_LIB_REGISTRY_BASE_H */
