/* The registry room, runtime layer: what runs a tool (RFD D10's
 * ToolRuntime). A process for stdio tools (runtime-process.c), the host's
 * callbacks for builtins (runtime-builtin.c), a process served by the vfs
 * room's session for VFS tools (runtime-vfs.c); a runtime is one file and
 * one ops table (found by name in tools.c), keeps what it reads of a
 * definition in the tool's rt_data and what it keeps of a run in the
 * run's impl, and reports back to the handle through a sink. Never
 * installed. See base.h for the room's layers. */
#ifndef JPT_LIB_REGISTRY_RUNTIME_H
#define JPT_LIB_REGISTRY_RUNTIME_H

#include "registry/base.h"

typedef struct jpt__run jpt__run;

/* How a runtime tells its handle what the tool did. The calls may come
 * from the loop (a process) or from the host at any time (a builtin's
 * jpt_handle_update); the handle defers what must run inside dispatch. */
typedef struct jpt__run_sink {
    /* Text the tool wrote on stdout (JPT__STDOUT) or stderr: what the
     * model reads of a tool that does not report states. Out of memory
     * is the handle's to note. */
    void (*text)(jpt__run *run, int stream, const char *p, size_t n);
    /* The tool wrote part of a line, held until the line is complete or
     * the model reads the handle (refresh): activity, not yet text. */
    void (*partial)(jpt__run *run);
    /* A state the tool reported (an RFD 058 or RFD 009 line, a builtin's
     * update): its blocks join what the model reads, and its kind becomes
     * the handle's. A reported stop does not end the run (a process may
     * still be running); stopped() does. */
    int (*state)(jpt__run *run, const jpt_state *s);
    /* The run is over. `final` (a new reference, or NULL) is what the
     * runtime adds to the end: for a one-shot run the whole result, for a
     * handle's what it says of the end ("[process ended: …]"); its
     * is_error says whether the run failed by the runtime's account. */
    void (*stopped)(jpt__run *run, jpt_state *final);
    /* The runtime could not keep what the tool produced (out of memory):
     * the run ends for `why`, so that those waiting on it answer now,
     * with an error, rather than miss what was lost (issue 18). */
    void (*lost)(jpt__run *run, const char *why);
    /* Keeps the run (and its handle) from being freed while the runtime
     * calls the tool from the loop: the tool's callback may report its
     * stop, and whoever hears of it let go of the handle. */
    void (*hold)(jpt__run *run);
    void (*let_go)(jpt__run *run);
} jpt__run_sink;

/* One run of a tool, as its runtime sees it. Embedded first in the public
 * jpt_handle (handle.h), so that a builtin's host callbacks get the handle
 * and the runtime its run from the same pointer. */
struct jpt__run {
    jpt_registry *r;
    jpt__tool *tool;
    const char *id;            /* the handle's */
    const json_t *arguments;   /* the handle's; without action and id */
    const json_t *answers;     /* accumulated answers (one-shot re-runs) */
    int action;                /* JPT__ACTION_NONE (one-shot) or _SPAWN */
    const char *failure;       /* why the registry ended it, or NULL */
    bool aborted;              /* it was aborted (its end is no failure) */
    bool queued;               /* it waits in line for a process slot: it
                                  has not started (the model reads it
                                  "pending") */
    /* Bytes of stdout and stderr the model has read as text (the handle
     * counts them), and whether the runtime's end of a handle holds what
     * came after, stream by stream, in place of the text not read yet (a
     * failed process's, as a one-shot run's failure reads). */
    uint64_t read_out, read_err;
    bool end_has_output;
    const jpt__run_sink *sink;
    void *impl;                /* the runtime's own */
    void *userdata;            /* jpt_handle_set_userdata */
};

/* Runtime capabilities. */
#define JPT__RT_REPORTS_STATES 0x1u  /* the tool reports its states itself
                                        (a builtin): a waiting state answers
                                        the action at once, unsettled */
#define JPT__RT_RERUN_TO_ANSWER 0x2u /* a one-shot run's question is answered
                                        by running the tool again with every
                                        answer so far (a process); else the
                                        live tool gets the answer */
#define JPT__RT_HOST_CALLBACKS 0x4u  /* its input and answers run the host's
                                        callbacks: only inside dispatch (the
                                        handle defers an answer otherwise) */

/* What runs a tool. The operations marked optional may be NULL, for a
 * runtime that has nothing of the kind (a builtin has no process, a VFS
 * tool's stdin and stdout are the protocol's); the others are required. */
struct jpt__runtime_ops {
    unsigned caps;             /* JPT__RT_* */
    /* The definition's keys of this runtime (tools.c): fills `t`, or
     * returns JPT_ERR_INVALID with the reason in `why`. */
    int (*check)(jpt_registry *r, jpt__tool *t, const json_t *def, char *why, size_t n);
    /* Frees what check kept in t->rt_data (the tool goes). Optional. */
    void (*forget)(jpt__tool *t);
    /* The process a tool runs, as its definition gives it (command.c).
     * Optional: the tool runs in the host's process. */
    const jpt__command_def *(*command)(const jpt__tool *t);
    /* Starts the run. On failure `why` holds the model-facing reason. */
    int (*start)(jpt__run *run, jpt__buf *why);
    /* Input for a running tool (apply), which the runtime encodes; inside
     * dispatch. JPT_ERR_STATE: it takes no more input; another error:
     * the tool refused it. */
    int (*input)(jpt__run *run, const json_t *input, const char *input_json);
    /* The answer to the tool's question `qid`, as input is; inside
     * dispatch when the runtime has JPT__RT_HOST_CALLBACKS. */
    int (*answer)(jpt__run *run, const char *qid, const json_t *answer,
                  const char *answer_json);
    /* Ends the run (SIGTERM, the grace, SIGKILL; a builtin's abort
     * callback, from the loop): its stop comes through the sink. */
    void (*abort)(jpt__run *run);
    /* Takes in at once what the tool produced and was not yet reported,
     * and its end if it has ended. */
    void (*refresh)(jpt__run *run);
    /* Bytes of input the tool never read (it closed its input). Optional:
     * none. */
    uint64_t (*input_lost)(const jpt__run *run);
    /* The file that holds the tool's whole output, once it outgrew what
     * the model reads (spool_dir), or NULL. Optional: none. */
    const char *(*spool_path)(const jpt__run *run);
    /* The result so far of a one-shot run ended before its end (a cancel):
     * run->failure and what the tool produced. JPT_ERR_STATE when the
     * runtime keeps nothing of the kind (as when it is NULL). Optional. */
    int (*partial)(jpt__run *run, jpt_state **out);
    /* For the registry's free: hands over the live process, if any, which
     * the registry ends with all the others at once. Optional: the
     * runtime's release ends what it runs. */
    jpt__child *(*take_child)(jpt__run *run);
    /* Frees what the runtime keeps; a run still live is ended at once (a
     * process killed and reaped, a builtin told by its abort callback). */
    void (*release)(jpt__run *run);
};

/* runtime-process.c: stdio tools. */
extern const jpt__runtime_ops jpt__runtime_process;
/* The end of a run that could not start: the reason, as an error (NULL
 * when out of memory). */
jpt_state *jpt__run_failed_to_start(const char *why);
/* A waiter's fail (base.h) for any runtime: its run stops with `why` as
 * its result. */
void jpt__run_slot_fail(jpt__slot_waiter *w, const char *why);

/* runtime-builtin.c: builtin tools. */
extern const jpt__runtime_ops jpt__runtime_builtin;
/* The host's callbacks of builtin tool `t` (jpt_registry_add_builtin). */
void jpt__builtin_set_ops(jpt__tool *t, const jpt_builtin_ops *ops, void *ud);

/* runtime-vfs.c: VFS tools (D11), served by the vfs room's session. */
extern const jpt__runtime_ops jpt__runtime_vfs;
/* Lets go of the files backends (the registry's free). */
void jpt__vfs_runtime_free(jpt_registry *r);

#endif /* JPT_LIB_REGISTRY_RUNTIME_H */
