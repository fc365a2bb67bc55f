/* The registry room's internal interface: tools, handles, calls and
 * batches, and how its files share them. Never installed.
 *
 *   registry.c  the object, its loop, events, run/wait, free
 *   tools.c     tool definitions: loading and checking
 *   command.c   argv templating and the child's environment
 *   handle.c    handles: processes or builtins, output, states, settling
 *   call.c      submit, batches, actions, results
 *   inquiry.c   questions of one-shot tools
 *   schemas.c   the tool lists for model providers
 *   wire.c      the providers' shapes of calls and results
 *   stale.c     the state file of live children, and reaping orphans */
#ifndef JPT_LIB_REGISTRY_H
#define JPT_LIB_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/common.h"
#include "jptool/registry.h"
#include "loop/loop.h"
#include "process/process.h"
#include "state/state.h"

#define JPT__RUNTIME_STDIO 1
#define JPT__RUNTIME_BUILTIN 2

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

typedef struct jpt__tool {
    unsigned refs; /* the registry's list and every handle of the tool */
    char *name;
    char *description;
    json_t *parameters; /* JSON Schema object */
    json_t *options;    /* {{tool}}'s "options" */
    int runtime;
    json_t *command;    /* array of template strings (stdio) */
    bool stdin_json;    /* pipe {{tool}} to stdin */
    bool stateful;
    unsigned actions;   /* JPT__ACTION_* bits, spawn always set if stateful */
    bool pty;
    int question_target;
    int settle_ms, yield_ms; /* -1: the registry's */
    size_t output_limit;     /* 0: the registry's */
    int64_t timeout_ms;      /* 0: none */
    bool env_inherit;
    json_t *env_allow;  /* array of names, or NULL */
    json_t *env_set;    /* object, or NULL */
    unsigned notify;    /* JPT__NOTIFY_* bits (RFD 037, spawn.notifications) */
    int on_turn_end;    /* JPT__TURN_* (RFD 037, spawn.lifecycle.on_turn_end) */
    jpt_builtin_ops ops;
    void *ud;
} jpt__tool;

typedef struct jpt__call jpt__call;
typedef struct jpt__notice jpt__notice;

/* A party waiting for handles to stop (RFD 037): an await call, or the turn
 * end. It watches each handle through a subscription of its own, linked
 * into the handle's list, so that watching and unwatching cost the same
 * whatever the number of watchers or handles. `role` is what the handle is
 * to the watcher (JPT__ROLE_* bits for an await). */
typedef struct jpt__watcher jpt__watcher;
typedef struct jpt__sub jpt__sub;
struct jpt__watcher {
    void (*stopped)(jpt__watcher *w, jpt__sub *s);
};
struct jpt__sub {
    jpt__watcher *w;
    unsigned role;
    jpt_handle *h;      /* NULL while not subscribed */
    jpt__sub *next, *prev;
};
#define JPT__ROLE_ALL 1
#define JPT__ROLE_ANY 2

struct jpt_handle {
    jpt_registry *r;
    char *id;
    jpt__tool *tool;
    bool registered;     /* in the registry's id map (stateful handles) */
    bool placeholder;    /* pre-registered by its batch, not started yet */
    jpt_batch *held_by;  /* kept until this batch is done (pre-registration) */
    size_t held_index;   /* its place in held_by->held */
    uint64_t started;    /* when it was spawned (ns), for elapsed_secs */
    int kind;            /* JPT_STATE_* */
    json_t *arguments;   /* without action and id */
    json_t *answers;     /* accumulated answers (one-shot re-runs) */
    jpt__child *child;   /* stdio runtime, while the process lives */
    size_t stale_slot;   /* its slot in the state file + 1, or 0 */
    uint64_t input_lost; /* its process's, kept once it is reaped */
    bool slot_waiting;   /* queued for a process slot (max_processes) */
    int slot_action;     /* the action it starts for, then */
    jpt_handle *slot_next, *slot_prev;
    jpt__capture out;    /* everything, head+tail */
    jpt__capture err;
    jpt__capture fresh;  /* stdout since the model last read it (stateful) */
    bool structured;     /* its output speaks RFD 058/009 JSON lines */
    jpt_state *state;    /* the latest state a builtin or a JSON line gave */
    jpt__exit exit;
    bool exited;         /* the process was reaped / builtin stopped */
    bool delivered;      /* the model has seen the stopped state */
    bool aborting;
    bool releasing;      /* being freed: updates are accepted and ignored */
    int busy;            /* pinned (jpt__handle_pin): not freed yet */
    char *failure;       /* why the handle stopped without a tool result */
    jpt__call *waiter;   /* the action waiting for this handle to settle */
    jpt__sub *subs;      /* awaits and the turn end watching it */
    size_t nwatchers;
    char *final_text;    /* the stopped result as the model reads it */
    bool final_error;
    jpt__notice *notice; /* its queued notification, if any */
    jpt__timer settle_timer, yield_timer, timeout_timer;
    void *userdata;
    jpt__defer step;     /* a builtin's answer or kill, run from the loop */
    char *step_answer;   /* the answer for the builtin's apply, or NULL: kill */
    jpt_handle *next, *prev; /* the registry's list of live handles */
};

typedef struct jpt__await jpt__await;

struct jpt__call {
    jpt_registry *r;
    jpt__await *await;   /* the await tool's state */
    jpt__call *next, *prev; /* the registry's calls in flight */
    jpt_batch *batch;    /* NULL once the batch was freed */
    char *id;
    char *name;
    int dialect;         /* the shape it came in (wire.c) */
    bool id_made;        /* a Gemini call without id: jptool named it */
    jpt__tool *tool;
    int action;
    char *handle_id;
    jpt_handle *handle;
    json_t *input;       /* apply */
    int64_t wait_ms;     /* the model's wait_secs (spawn, fetch, apply), or -1 */
    uint64_t input_lost; /* apply: the handle's count before its write */
    char *content;       /* the result, once done */
    bool is_error;
    bool done;
    bool in_flight;      /* counted in r->calls_in_flight */
    bool cancelled;      /* jpt_batch_cancel: an answer to its question is refused */
    int rounds;          /* questions answered (one-shot) */
    jpt_inquiry *inquiry;
    json_t *arguments;   /* until the call starts */
    char *answer;        /* an answer on its way to a builtin (JSON) */
    jpt__defer step;     /* runs `step_fn` at the next dispatch */
    void (*step_fn)(jpt__call *call);
};

struct jpt_batch {
    jpt_registry *r;
    char *rejected;      /* why the whole batch was refused, during submit */
    jpt__call **calls;
    size_t n;
    size_t pending;
    jpt_handle **held;   /* handles it pre-registered, until it is done */
    size_t nheld;
    int pins;            /* jpt_registry_wait calls waiting on it */
    bool free_pending;   /* freed by a callback while waited on */
    jpt_batch *next, *prev;
};

struct jpt_inquiry {
    jpt_registry *r;
    jpt__call *call;     /* a one-shot call's question; NULL once it ended */
    jpt_handle *handle;  /* an awaited handle's question */
    struct jpt__turn *turn; /* the turn end's question */
    char *tool;
    char *call_id;
    char *handle_id;
    char *question_json;
    char *question_id;
    json_t *schema;
    int target;
    jpt_state *context;
    jpt__errbuf err;
    jpt_inquiry *next, *prev;
};

struct jpt_event {
    int type;
    char *call_id;
    char *handle_id;
    char *tool;
    int state;
    const jpt_batch *batch;
    jpt_handle *output_of; /* OUTPUT: the handle whose event this is */
    jpt_event *next;
};

struct jpt_registry {
    jpt__loop *loop;
    int devnull;         /* stdin of one-shot children */
    char *root;
    int kill_grace_ms;
    size_t capture_bytes;
    size_t output_limit;
    int settle_ms, yield_ms, drain_ms;
    int max_inquiry_rounds;
    char *spool_dir;
    char *state_file;
    int state_fd;        /* the state file, open while the registry lives */
    size_t *free_slots;  /* its blank slots, for reuse */
    size_t nfree_slots, cap_free_slots, nslots;
    jpt__contain *contain; /* what a child's end kills (options.containment) */

    jpt__tool **tools;
    size_t ntools, cap_tools;
    jpt_handle *handles; /* every live handle, registered or not */
    jpt__idmap handle_ids; /* registered handles by id */
    size_t nchildren;    /* processes alive (spawned, not reaped) */
    size_t max_processes;
    jpt_handle *slot_head, *slot_tail; /* waiting for a process slot */
    jpt__defer slot_step; /* starts them as slots free up */
    bool shutting_down;  /* jpt_registry_shutdown: nothing new starts */
    bool shutdown_reported; /* its JPT_EVENT_SHUTDOWN is queued */
    jpt__defer shutdown_step;
    jpt_batch *batches;
    jpt__call *calls;    /* in flight */
    jpt_inquiry *inquiries;
    jpt__notice *notices_head, *notices_tail;
    struct jpt__turn *turn; /* the turn end in progress */
    int turn_end_timeout_ms;
    jpt_event *events_head, *events_tail;
    size_t nevents, max_events;
    bool keep_spool;     /* JPT_REGISTRY_KEEP_SPOOL */
    char **spool_files;  /* created, removed with the registry */
    size_t nspool_files, cap_spool_files;
    size_t calls_in_flight;
    int dispatching;     /* inside jpt_registry_dispatch (or run, wait) */
    bool free_pending;   /* freed from a callback: freed as dispatch ends */
    bool freeing;        /* inside jpt_registry_free */
    jpt_inquiry_fn inquiry_fn;
    void *inquiry_ud;
    jpt__errbuf err;
};

/* registry.c: queues an event (the oldest is dropped beyond max_events,
 * so a host that never pops them does not grow without bound); NULL when
 * out of memory. */
jpt_event *jpt__registry_event(jpt_registry *r, int type, jpt__call *call, jpt_handle *h);
/* A spool file was created (a capture's callback, `ud` the registry): it
 * is removed with the registry unless JPT_REGISTRY_KEEP_SPOOL. */
void jpt__registry_spooled(void *ud, const char *path);
/* A tool process was reaped (or a queued one dropped): a shutdown under
 * way may be complete. */
void jpt__registry_child_gone(jpt_registry *r);

/* tools.c */
jpt__tool *jpt__tool_find(jpt_registry *r, const char *name);
jpt__tool *jpt__tool_ref(jpt__tool *t);
void jpt__tool_unref(jpt__tool *t);
const char *jpt__action_name(int action);
/* "spawn, fetch, abort" */
void jpt__actions_list(unsigned actions, char *out, size_t n);
int jpt__tool_settle_ms(const jpt_registry *r, const jpt__tool *t);
int jpt__tool_yield_ms(const jpt_registry *r, const jpt__tool *t);
size_t jpt__tool_output_limit(const jpt_registry *r, const jpt__tool *t);

/* command.c: the argv and environment for one run of a tool. `why`
 * receives a model-facing reason when an argument is missing. */
typedef struct jpt__command {
    char **argv;
    char **envp;
    char *stdin_json; /* the {{tool}} JSON when the tool takes it on stdin */
} jpt__command;
int jpt__command_check_template(const char *tmpl, char *why, size_t n);
int jpt__command_build(const jpt_registry *r, const jpt__tool *t, int action,
                       const json_t *arguments, const json_t *answers,
                       jpt__command *out, jpt__buf *why);
void jpt__command_free(jpt__command *c);

/* handle.c */
int jpt__handle_new(jpt_registry *r, jpt__tool *t, const char *id,
                    json_t *arguments, jpt_handle **out);
/* Starts the tool (spawns its process or calls the builtin's start). On
 * failure `why` holds the model-facing reason. */
int jpt__handle_start(jpt_handle *h, int action, jpt__buf *why);
void jpt__handle_free(jpt_handle *h);
jpt_handle *jpt__handle_find(jpt_registry *r, const char *id);
/* Makes `call` wait for the handle: until it stops (one-shot, abort), or
 * until its output settles (spawn, apply, fetch with wait_secs). With
 * `wait_ms` >= 0 (the model's wait_secs) a handle without news is given
 * that long to print or stop before the answer. */
void jpt__handle_wait(jpt_handle *h, jpt__call *call, bool settle, int64_t wait_ms);
/* The handle's state as the model should see it now: its output since the
 * last fetch (consumed unless `peek`), kind and error. New reference. */
int jpt__handle_take_state(jpt_handle *h, bool peek, jpt_state **out);
/* The whole output of a finished one-shot run, as a state. */
int jpt__handle_result_state(jpt_handle *h, jpt_state **out);
/* The result of a one-shot run ended before its process did (a cancel):
 * `why` and the output so far, unread output taken in first. The exit
 * callback may run meanwhile (the run may end just then). JPT_ERR_STATE
 * when the handle has no process. */
int jpt__handle_cut_short(jpt_handle *h, const char *why, jpt_state **out);
/* Takes in what the tool has written and not been read yet, and its exit
 * if it has ended, before the model is answered: an answer reflects the
 * moment the action runs, not the last time the host dispatched. */
void jpt__handle_refresh(jpt_handle *h);
int jpt__handle_write(jpt_handle *h, const char *p, size_t n);
/* Bytes written to the tool that it never read (it closed its input). */
uint64_t jpt__handle_input_lost(const jpt_handle *h);
void jpt__handle_abort(jpt_handle *h);
/* The pending question of a waiting handle (a question block), or NULL. */
const jpt__block *jpt__handle_question(const jpt_handle *h);
/* Its question was answered: the handle runs again. */
void jpt__handle_resume(jpt_handle *h);
/* Delivers an inquiry's answer to a waiting handle: a JSON line
 * {"id","answer"} to a process, or (from the loop) the builtin's apply. */
int jpt__handle_answer(jpt_handle *h, const char *qid, json_t *answer,
                       const char *answer_json);
/* Stops the handle with `why` as its error (from the loop for builtins). */
void jpt__handle_kill(jpt_handle *h, const char *why);
/* The handle's OUTPUT event was popped or dropped; the next output queues
 * another. */
void jpt__handle_output_event_gone(jpt_handle *h);
/* Subscribes `w` to the handle's stop through `s` (the watcher's own
 * storage, linked until unwatched); a watcher subscribes once per handle. */
void jpt__handle_watch(jpt_handle *h, jpt__sub *s, jpt__watcher *w, unsigned role);
/* Ends the subscription; idempotent. */
void jpt__handle_unwatch(jpt__sub *s);
/* Enters the handle in the registry's id map: stateful handles, found by
 * id. JPT_ERR_EXISTS when a registered handle has the id. */
int jpt__handle_register(jpt_handle *h);
/* The rendered, limited text the model reads for `s`. */
int jpt__handle_model_text(const jpt_handle *h, const jpt_state *s, jpt__buf *out);
/* The result of a stopped handle, rendered once and kept, so that every
 * reader (fetch, several awaits, a notification) gets the same text. */
int jpt__handle_final(jpt_handle *h, const char **text, bool *is_error);
/* The model has now seen the handle's final state. */
void jpt__handle_delivered(jpt_handle *h);
/* Puts the handle's question to the inquiry handler: now inside
 * dispatch, else from the next one. */
void jpt__handle_ask_soon(jpt_handle *h);
/* Frees a stopped handle the model has seen, once nothing waits on it. */
void jpt__handle_release_if_done(jpt_handle *h);
/* Keeps the handle from being freed while the caller works on it: a
 * builtin's callback, or anyone woken by a stop, may deliver it. Unpinning
 * frees it if it is done by then. */
void jpt__handle_pin(jpt_handle *h);
void jpt__handle_unpin(jpt_handle *h);
/* The handle failed before it could start (a pre-registered spawn that did
 * not run): it stops with `why` as its result. */
void jpt__handle_fail(jpt_handle *h, const char *why);
const char *jpt__kind_name(int kind);
/* The last `max` bytes of what the model would read from the handle now
 * (without consuming it), cut at a character boundary. */
int jpt__handle_preview(jpt_handle *h, size_t max, jpt__buf *out);
/* Deferred: starts the handles waiting for a process slot. */
void jpt__handle_slots_freed(jpt__defer *d);
/* Children of all live handles, for shutdown. */
size_t jpt__handles_children(jpt_registry *r, jpt__child ***out);

/* call.c */
void jpt__call_complete(jpt__call *call, const char *content, bool is_error);
void jpt__call_completef(jpt__call *call, bool is_error, const char *fmt, ...)
    JPT__PRINTF(3, 4);
/* The handle the call waited on has settled or stopped: answer the call. */
void jpt__call_handle_ready(jpt__call *call);
/* The same, from anywhere: at once inside dispatch, else at the next one,
 * so host callbacks only ever run inside dispatch. */
void jpt__call_wake(jpt__call *call);
/* Runs `fn(call)` at the next dispatch. */
void jpt__call_later(jpt__call *call, void (*fn)(jpt__call *call));
void jpt__call_free(jpt__call *call);
void jpt__batch_unhold(jpt_batch *b);
/* Ends every call in flight as jpt_batch_cancel does, but one-shot runs,
 * which end when their process does (shutdown). */
void jpt__calls_cancel_all(jpt_registry *r);

/* inquiry.c */
/* A one-shot run ended waiting: ask, or fail the call. */
void jpt__inquiry_start(jpt__call *call, jpt_state *state);
/* A new inquiry about `question`, with `before` as its context; the caller
 * ties it to what it asks for and calls the handler. NULL: out of memory. */
jpt_inquiry *jpt__inquiry_create(jpt_registry *r, const jpt__block *question,
                                 const jpt__block *before, size_t nbefore,
                                 const char *tool, int target);
/* The call or handle ended; an inquiry still out becomes orphaned. */
void jpt__inquiry_detach(jpt__call *call);
void jpt__inquiry_forget_handle(jpt_handle *h);
void jpt__inquiries_free(jpt_registry *r);

/* await.c: the await tool, and awaited handles that ask questions. */
bool jpt__await_available(jpt_registry *r);
void jpt__await_start(jpt__call *call, json_t *arguments);
void jpt__await_cancel(jpt__call *call);
void jpt__await_free(jpt__call *call);
/* A watched handle became waiting: its question goes to the inquiry
 * handler (RFD 037, "Waiting handles and the inquiry system"). */
void jpt__await_handle_waiting(jpt_handle *h);

/* notify.c: the system message queue (RFD 037 notifications). */
/* A registered handle changed (JPT__NOTIFY_* of what happened). */
void jpt__notify_change(jpt_handle *h, unsigned what);
/* Queues the handle's final result whatever its flags say (turn end). */
void jpt__notify_force(jpt_handle *h);
/* The model received the handle's state by an action: drop its notice. */
void jpt__notify_seen(jpt_handle *h);
/* The handle is being freed; its notice (if any) keeps its copies. */
void jpt__notify_forget(jpt_handle *h);
void jpt__notices_free(jpt_registry *r);

/* turn.c */
typedef struct jpt__turn jpt__turn;
int jpt__turn_answered(jpt__turn *t, json_t *answer);
void jpt__turn_unanswered(jpt__turn *t);
/* The host freed the turn's batch: the turn goes on without it. */
void jpt__turn_batch_gone(jpt_registry *r, jpt_batch *b);
void jpt__turn_free(jpt_registry *r);

/* schemas.c: RFD 037's await parameters, anyOf included. New reference,
 * NULL when out of memory. */
json_t *jpt__await_schema(void);

/* wire.c: the shapes of calls and results. */
#define JPT__DIALECT_OWN 0 /* jptool's own {"id","name","arguments"} */

/* One call as read from a model message. */
typedef struct jpt__wire_call {
    char *id;
    char *name;
    json_t *arguments; /* the arguments object; NULL when `problem` is set */
    char *problem;     /* why the call cannot run, worded for the model */
    int dialect;       /* the shape it came in: JPT_DIALECT_*, or JPT__DIALECT_OWN */
    bool id_made;      /* a Gemini call without id, named "<name>#<index>" */
} jpt__wire_call;

/* Reads the calls of one model message (see jpt_registry_submit): `*calls`
 * holds `*n` calls, skipped blocks left out; free them with
 * jpt__wire_free(). Errors (in r->err): JPT_ERR_INVALID (not such an
 * array), JPT_ERR_NOMEM. */
int jpt__wire_read(jpt_registry *r, const char *text, jpt__wire_call **calls, size_t *n);
void jpt__wire_free(jpt__wire_call *calls, size_t n);
/* A finished call's result in the shape of `dialect` (JPT__DIALECT_OWN:
 * {"id","content","is_error"}). New reference, NULL when out of memory. */
json_t *jpt__wire_result(const jpt__call *call, int dialect);

/* stale.c: the state file of live children. Opening creates it empty
 * (JPT_ERR_IO if it cannot); adding and removing a child write its slot
 * (failures are logged: a spawn does not fail for them); closing removes
 * the file. */
int jpt__stale_open(jpt_registry *r);
void jpt__stale_close(jpt_registry *r);
void jpt__stale_add(jpt_registry *r, jpt_handle *h, pid_t pid);
void jpt__stale_remove(jpt_registry *r, jpt_handle *h);
/* JPT_ERR_EXISTS when the file at `path` lists a child, JPT_OK when it is
 * absent or lists none, JPT_ERR_IO when it cannot be read. */
int jpt__stale_in_use(const char *path);

#endif /* JPT_LIB_REGISTRY_H */
