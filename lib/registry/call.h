/* The registry room, call layer: one tool call of a model message
 * (call.c) and the batches that hold them (batch.c). Never installed. See
 * base.h for the room's layers. */
#ifndef JPT_LIB_REGISTRY_CALL_H
#define JPT_LIB_REGISTRY_CALL_H

#include "registry/inquiry.h"

/* How a call names a handle (jpt__call_each_handle). */
#define JPT__NAMES_ACTION 1 /* fetch, apply, abort */
#define JPT__NAMES_SPAWN 2
#define JPT__NAMES_AWAIT 3
/* Told of each handle id a call names, and how. */
typedef int (*jpt__call_handle_fn)(jpt__call *call, const char *id, int how, void *ud);

/* How the registry's own tools run their calls (RFD 037's await, in
 * await.c): the call hands its arguments over and completes when the
 * tool says so. */
struct jpt__call_ops {
    /* The handle ids `arguments` name, each told to `fn`, for the order of
     * the calls of a batch; stops at the first error `fn` returns. */
    int (*each_handle)(jpt__call *call, const json_t *arguments, jpt__call_handle_fn fn,
                       void *ud);
    void (*start)(jpt__call *call, json_t *arguments);
    /* jpt_batch_cancel: answer now with what there is. */
    void (*cancel)(jpt__call *call);
    /* The call goes: let go of call->own. */
    void (*release)(jpt__call *call);
};

struct jpt__call {
    jpt_registry *r;
    jpt_batch *batch;    /* NULL once the host freed it */
    char *id;
    char *name;          /* as the model called it */
    int dialect;         /* the shape it came in (wire.c) */
    bool id_made;        /* a Gemini call without id: jptool named it */
    jpt__tool *tool;     /* resolved once, at submit, and held; or NULL */
    json_t *arguments;   /* until the call starts */
    char *problem;       /* why it cannot run (wire.c), until it starts */
    int action;          /* JPT__ACTION_* */
    char *handle_id;
    jpt_handle *handle;  /* referenced */
    json_t *input;       /* apply */
    int64_t wait_ms;     /* the model's wait_secs, or -1 */
    uint64_t input_lost; /* apply: the handle's count before its write */
    int rounds;          /* questions of a one-shot run answered */
    jpt_inquiry *inquiry;
    char *refusal;       /* why its question went unanswered, until it ends */
    void *own;           /* the registry's own tool's state (call ops) */

    jpt__sub sub;        /* its wait on the handle, told last */
    jpt__timer settle_timer, yield_timer;
    jpt__timer limit_timer; /* jpt_batch_set_call_timeout */
    int limit_ms;        /* that limit, for its words; 0: none */
    bool limit_hit;      /* the cancel is the limit's */
    jpt__defer step;     /* runs `step_fn` at the next dispatch */
    void (*step_fn)(jpt__call *call);

    /* The order of the calls of a batch that name one handle (issue 16):
     * each waits for the answers of the calls before it. */
    jpt__call **followers; /* the calls waiting for its answer, until it
                              has answered */
    size_t nfollowers, cap_followers;
    size_t blockers;     /* calls before it that have not answered yet */
    bool started;        /* it has begun to run */
    char *queued_on;     /* the handle id it waits on, for its words */

    jpt_event *done_event; /* its CALL_DONE, made with the batch (issue 18) */
    char *content;       /* the result, once done; NULL: out of memory
                            (jpt__call_content) */
    bool is_error;
    bool done;
    bool in_flight;      /* counted in r->calls_in_flight */
    bool cancelled;      /* jpt_batch_cancel: its question's answer is refused */
    jpt__call *next, *prev; /* the registry's: in flight, or done and orphaned */
};

struct jpt_batch {
    jpt_registry *r;
    jpt__call **calls;
    size_t n;
    size_t pending;      /* calls not done, and the owner's share */
    jpt_event *done_event; /* its BATCH_DONE, made with it (issue 18) */
    jpt_handle **held;   /* handles its calls name (those it pre-registered
                            too), kept registered until it is done */
    size_t nheld, cap_held;
    size_t released;     /* held[0..released) let go of, once it is done */
    jpt__defer release_step; /* the next slice of them */
    int pins;            /* jpt_registry_wait calls waiting on it */
    bool free_pending;   /* freed by a callback while waited on */
    /* The batch's owner, when not the model's message (the turn end):
     * told when the host frees the batch. */
    void (*owner_gone)(jpt_batch *b, void *owner);
    void *owner;
    bool owned;          /* made by its owner, not from a model's message:
                            no call of the model's asked for its results */
    jpt__idmap by_id;    /* call id -> call, built at the first lookup */
    bool indexed;
    jpt_batch *next, *prev;
};

/* ---- One call (call.c) ------------------------------------------------------------- */

/* A call from what was read (wire.c), taking its id, name, arguments and
 * problem; its tool is looked up here, once. NULL when out of memory. */
jpt__call *jpt__call_new(jpt_registry *r, jpt_batch *b, jpt__wire_call *wc);
/* Enters the call in the registry's list of calls in flight. */
void jpt__call_fly(jpt__call *call);
/* Starts the call at the next dispatch (tools' callbacks run only inside
 * it). */
void jpt__call_start_soon(jpt__call *call);
/* The call's result: its batch learns of it (CALL_DONE, BATCH_DONE). */
void jpt__call_complete(jpt__call *call, const char *content, bool is_error);
void jpt__call_completef(jpt__call *call, bool is_error, const char *fmt, ...)
    JPT__PRINTF(3, 4);
/* The result the model reads: its content, or, when there was no memory
 * to keep it, "out of memory" (an error). */
const char *jpt__call_content(const jpt__call *call);
/* jpt_batch_cancel: the call answers from the next dispatch with what it
 * has; an answer to its question is refused from now on. */
void jpt__call_cancel_soon(jpt__call *call);
/* jpt_batch_set_call_timeout: the call is cancelled `timeout_ms` from now
 * (0: never), its result saying that the host's time limit stopped it. */
int jpt__call_set_limit(jpt__call *call, int timeout_ms);
/* Ends every call in flight as a cancel does, but one-shot runs, which end
 * when their process does (shutdown). */
void jpt__calls_cancel_all(jpt_registry *r);
void jpt__call_free(jpt__call *call);
/* A spawn's id, when the call is a stateful tool's spawn with a valid one
 * (pre-registration), else NULL. */
const char *jpt__call_spawn_id(const jpt__call *call);
/* Tells `fn` of each handle id the call names before it starts: an
 * action's id, an await's ids. */
int jpt__call_each_handle(jpt__call *call, jpt__call_handle_fn fn, void *ud);
/* `call` runs once `before` has answered, waiting on handle `id`. */
int jpt__call_follow(jpt__call *call, jpt__call *before, const char *id);
/* Starts the call now if no call it follows is still to answer, else once
 * the last of them has. */
void jpt__call_start_in_order(jpt__call *call);
/* The batch goes: the call lets go of those that wait for it. */
void jpt__call_drop_followers(jpt__call *call);

/* One more call or share done of the batch: BATCH_DONE at the last, and
 * the handles it held are let go of, a slice per dispatch. */
void jpt__batch_one_done(jpt_batch *b);
/* Lets go of what the batch still holds, all of it at once (the batch is
 * freed) or a slice (`slice`). */
void jpt__batch_release(jpt_batch *b, bool slice);

/* ---- Batches (batch.c) ----------------------------------------------------------------- */

/* An empty batch of `owner` (the turn end), pending until its owner's
 * share is done (jpt__batch_one_done). NULL when out of memory. */
jpt_batch *jpt__batch_new_owned(jpt_registry *r, void (*owner_gone)(jpt_batch *, void *),
                                void *owner);
/* Lets go at once of what every done batch still holds (the registry's
 * finish_releases hook). */
void jpt__batches_finish_releases(jpt_registry *r);
/* A result the owner adds to its batch, as a done call. */
int jpt__batch_add_result(jpt_batch *b, const char *id, const char *name, const char *content,
                          bool is_error);

#endif /* JPT_LIB_REGISTRY_CALL_H */
