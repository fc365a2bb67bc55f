/* The registry room, handle layer: one run of a tool (handle.c) and what
 * the model reads of it (view.c). Never installed. See base.h for the
 * room's layers.
 *
 * A handle knows nothing of who watches it: it publishes its changes to
 * the subscribers on its list, each with the mask of what it wants to
 * hear, and, for a registered handle, to the event queue and the
 * registry's change hook (notifications, registry.c installs it). The
 * order is fixed: the event queue first (STATE, OUTPUT events), then the
 * hook (a watched handle leaves no notification), then the subscribers in
 * the order they subscribed, and last those marked `last` (the action
 * waiting on it, so that awaits have counted the stop before the action's
 * answer completes its batch). The handle is held (referenced) while it
 * fans out, and the list is taken first: a subscriber may end any
 * subscription, its own included.
 *
 * Subscribers are told only inside dispatch: a change that happens
 * outside it (a builtin's jpt_handle_update from the host) reaches them
 * from the next dispatch, its bits gathered meanwhile. This is the one
 * place the registry decides "now, or from the loop" for what a handle
 * does; a subscriber may run host callbacks at once.
 *
 * A handle is reference counted: its creator (a call, or the batch that
 * pre-registered it), the registry's id map while it is registered, every
 * subscription, an inquiry about its question, and anyone who pins it
 * across code that may let it go. It is freed when the last reference
 * goes. It leaves the id map once it has stopped, the model has its
 * result, and no batch holds it (RFD 009, "Handle lifecycle"). */
#ifndef JPT_LIB_REGISTRY_HANDLE_H
#define JPT_LIB_REGISTRY_HANDLE_H

#include "registry/tools.h"

/* How the model was given a handle's end (jpt__handle_delivered). */
#define JPT__GIVEN_ANSWER 1    /* an action's or an await's answer */
#define JPT__GIVEN_NOTICE 2    /* a notification */
#define JPT__GIVEN_TURN_END 3  /* a result of the turn end's batch */
#define JPT__GIVEN_NEVER_RAN 4 /* the answer to its spawn, which failed */

/* The handles that left the id map remembered by id, for what the model is
 * told of a later call naming one (registry.h, "Handle `h1` has stopped"):
 * the last ones only, so that the memory stays bounded. */
#define JPT__ENDED_IDS 256

/* A handle's lifecycle, changed only through one function (handle.c). */
#define JPT__PHASE_PENDING 1 /* pre-registered by its batch, not started */
#define JPT__PHASE_LIVE 2    /* started: running or waiting */
#define JPT__PHASE_ENDING 3  /* being ended (an abort, a kill, a timeout) */
#define JPT__PHASE_STOPPED 4 /* its run is over; what it says is fixed */

/* What a handle publishes. */
#define JPT__HEARD_OUTPUT 0x1u  /* new output while it runs */
#define JPT__HEARD_WAITING 0x2u /* it became waiting: it asks a question */
#define JPT__HEARD_STATE 0x4u   /* the tool reported another state */
#define JPT__HEARD_STOPPED 0x8u /* its run is over */
#define JPT__HEARD_SEEN 0x10u   /* the model read its state (the hook only) */
#define JPT__HEARD_GONE 0x20u   /* it is being freed (the hook only) */

typedef struct jpt__sub jpt__sub;
struct jpt__sub {
    void (*heard)(jpt__sub *s, unsigned what);
    unsigned mask;       /* JPT__HEARD_* */
    bool watching;       /* the model watches through it (an action, an
                            await): then no notification is due (RFD 037) */
    bool last;           /* told after the others */
    unsigned role;       /* the subscriber's own */
    void *ud;            /* the subscriber's own */
    jpt_handle *h;       /* while subscribed, referenced */
    jpt__sub *next, *prev;
};

struct jpt_handle {
    jpt__run run;        /* first: see runtime.h */
    jpt_registry *r;
    char *id;
    jpt__tool *tool;
    int phase;           /* JPT__PHASE_* */
    int kind;            /* the tool's last reported state, JPT_STATE_* */
    unsigned refs;
    bool registered;     /* in the id map (stateful handles), referenced */
    bool delivered;      /* the model has its final state */
    unsigned char given; /* how: JPT__GIVEN_*, the first way */
    bool never_ran;      /* it stopped without running: its start failed,
                            or its pre-registered spawn never started */
    unsigned holds;      /* batches that keep it registered until done */
    uint64_t started;    /* ns, for elapsed_secs */
    json_t *arguments;   /* without action and id */
    json_t *answers;     /* accumulated answers (one-shot re-runs) */
    char *failure;       /* why the registry ended it, or NULL */
    bool lost;           /* memory ran out for what the tool produced, or
                            for why it ended: its result is an error
                            (issue 18), `failure` when there was memory
                            for it */

    /* What the model has not read yet (view.c reads it). */
    jpt__blockq blocks;  /* the tool's states' blocks, and text runs */
    jpt__capture text;   /* the text run not yet turned into a block */
    uint64_t received_out, received_err; /* text bytes of each stream so far */
    bool unread_partial; /* the tool wrote part of a line since (runtime.h) */
    bool partial_announced; /* …and its OUTPUT was published */
    jpt__capture recent; /* the end of its stdout, for previews */
    bool structured;     /* it reported a state */
    jpt__block question; /* the pending question of a waiting handle */
    bool has_question;
    bool question_asked; /* put to the inquiry handler (await.c); cleared
                            with the question */
    bool stop_error, stop_transient; /* the stopped state it reported */
    jpt__strv stop_trace;
    jpt_state *end;      /* what the runtime added at the end, or NULL */
    char *final_text;    /* the stopped result as the model reads it */
    bool final_error;

    jpt__sub *subs, *subs_tail;
    size_t nwatching;    /* subscriptions with `watching` */
    size_t nlast;        /* subscriptions with `last` */
    unsigned untold;     /* changes the subscribers hear at the next dispatch */
    jpt__defer tell_step;
    json_t *late_answer; /* an answer given outside dispatch, for a runtime */
    char *late_qid;      /* that calls the host: from the next dispatch */
    jpt__defer answer_step;
    jpt_event *output_event; /* the queued OUTPUT event, until popped */
    jpt__notice *notice; /* notify.c's, for this handle */
    jpt__timer timeout_timer;
    jpt_handle *next, *prev; /* the registry's list of live handles */
};

/* ---- Lifecycle (handle.c) ---------------------------------------------------------- */

/* A new handle, PENDING, with one reference (the caller's). */
int jpt__handle_new(jpt_registry *r, jpt__tool *t, const char *id, json_t *arguments,
                    jpt_handle **out);
jpt_handle *jpt__handle_ref(jpt_handle *h);
void jpt__handle_unref(jpt_handle *h);
/* Enters the handle in the registry's id map (a reference): stateful
 * handles, found by id. JPT_ERR_EXISTS when a registered handle has it. */
int jpt__handle_register(jpt_handle *h);
jpt_handle *jpt__handle_find(jpt_registry *r, const char *id);
/* A batch keeps the handle registered until the batch is done, so that
 * an await anywhere in it finds the id (RFD 037, pre-registration). */
void jpt__handle_hold(jpt_handle *h);
void jpt__handle_unhold(jpt_handle *h);
/* The arguments it runs with (a pre-registered spawn learns them as it
 * starts). */
void jpt__handle_set_arguments(jpt_handle *h, json_t *arguments);
/* Starts the tool (again, for a one-shot re-run): `action` is
 * JPT__ACTION_NONE or JPT__ACTION_SPAWN. On failure `why` holds the
 * model-facing reason, and the handle has stopped with it as its
 * failure. */
int jpt__handle_start(jpt_handle *h, int action, jpt__buf *why);
/* The handle never ran (a pre-registered spawn that failed or was
 * cancelled): it stops with `why` as its result, which the model has. */
void jpt__handle_fail(jpt_handle *h, const char *why);
/* Ends the run: an abort (its end is no failure), or a kill for `why`. */
void jpt__handle_abort(jpt_handle *h);
void jpt__handle_kill(jpt_handle *h, const char *why);
/* Takes in what the tool produced and was not yet reported, and its end
 * if it has ended, before the model is answered: an answer reflects the
 * moment the action runs, not the last time the host dispatched. */
void jpt__handle_refresh(jpt_handle *h);

/* Input for a running tool, encoded by its runtime. */
int jpt__handle_input(jpt_handle *h, const json_t *input, const char *input_json);
/* Bytes written to the tool that it never read (it closed its input). */
uint64_t jpt__handle_input_lost(const jpt_handle *h);
/* The pending question of a waiting handle (a question block), or NULL. */
const jpt__block *jpt__handle_question(const jpt_handle *h);
/* Keeps the answer to question `qid` for a one-shot re-run, which runs
 * with every answer so far (RFD 009). */
int jpt__handle_add_answer(jpt_handle *h, const char *qid, const json_t *answer);
/* Answers the pending question `qid`: the handle runs again. A question
 * it no longer asks gives JPT_ERR_CANCELLED; another error, that the tool
 * refused the answer. Outside dispatch, a runtime that calls the host
 * gets it from the next dispatch, and a refusal then ends the handle. */
int jpt__handle_answer(jpt_handle *h, const char *qid, const json_t *answer,
                       const char *answer_json);
/* The result so far of a one-shot run ended before its end (a cancel),
 * with `why` first: nothing the tool produced is lost. JPT_ERR_STATE when
 * the runtime keeps nothing of the kind. */
int jpt__handle_cut_short(jpt_handle *h, const char *why, jpt_state **out);

/* ---- Subscribers (handle.c) ----------------------------------------------------------
 * A subscription references the handle. `heard` may unsubscribe anything,
 * itself included. */
void jpt__handle_subscribe(jpt_handle *h, jpt__sub *s, unsigned mask, bool watching,
                           bool last);
void jpt__handle_unsubscribe(jpt__sub *s);
/* Whether an action or an await of the model is watching the handle. */
bool jpt__handle_watched(const jpt_handle *h);
/* Whether an action waits on it (a `last` subscription). */
bool jpt__handle_acted_on(const jpt_handle *h);
/* The action waiting on the handle has answered: a waiting handle's
 * question is told again to its subscribers (an await watching it takes
 * it to the inquiry handler, RFD 037). */
void jpt__handle_question_free(jpt_handle *h);
/* The model read the handle's current state through an action or an
 * await: a notification of it is moot. */
void jpt__handle_seen(jpt_handle *h);
/* The model has, or will have, the handle's final result, given `how`
 * (JPT__GIVEN_*): its id is free again once it has stopped and no batch
 * holds it. */
void jpt__handle_delivered(jpt_handle *h, int how);
/* What the model is told of a call that names handle `id`, which no
 * registered handle has (appended to `out`): RFD 037's "Handle `id` not
 * found" for an unknown id; for one of the last JPT__ENDED_IDS handles
 * that went, that it stopped and how its result was given (`*ended`
 * true). JPT_OK or JPT_ERR_NOMEM. */
int jpt__handle_missing_text(jpt_registry *r, const char *id, jpt__buf *out, bool *ended);

/* ---- Every handle (handle.c) -------------------------------------------------------- */

/* Ends every handle the way a kill does, for `why` (shutdown). */
void jpt__handles_kill_all(jpt_registry *r, const char *why);
/* The processes of all live handles, for the registry's free. */
size_t jpt__handles_take_children(jpt_registry *r, jpt__child ***out);
/* The text run so far becomes a block of what the model reads. */
int jpt__handle_flush_text(jpt_handle *h);
/* Frees every handle, whatever holds it (the registry's free). */
void jpt__handles_free_all(jpt_registry *r);

/* ---- What the model reads (view.c) ---------------------------------------------------- */

/* Whether the model has output of the handle it has not read yet. */
bool jpt__view_has_news(const jpt_handle *h);
/* The handle's state as the model should see it now: its output since the
 * last take (consumed unless `peek`), kind and error. New reference. */
int jpt__view_take(jpt_handle *h, bool peek, jpt_state **out);
/* A finished one-shot run's result. New reference. */
int jpt__view_result(jpt_handle *h, jpt_state **out);
/* The rendered, limited text the model reads for `s`. */
int jpt__view_text(const jpt_handle *h, const jpt_state *s, jpt__buf *out);
/* The result of a stopped handle, rendered once and kept, so that every
 * reader (fetch, awaits, a notification) gets the same text. */
int jpt__view_final(jpt_handle *h, const char **text, bool *is_error);
/* The last `max` bytes of what the model would read now, not consumed,
 * cut at a character boundary. */
int jpt__view_preview(jpt_handle *h, size_t max, jpt__buf *out);
/* RFD 009's handle response, the one writer of it:
 * {"id","state","content"} while the handle lives (its news consumed),
 * {"id","state","result"} once it stopped, "error" in place of "result"
 * for a failed handle when `error_key` (RFD 037's await always says
 * "result"); a pre-registered spawn that has not started yet is
 * "pending". Written into `out` directly: it is on the path from a
 * child's exit to the model's answer. */
int jpt__view_response(jpt_handle *h, bool error_key, jpt__buf *out, bool *is_error);

#endif /* JPT_LIB_REGISTRY_HANDLE_H */
