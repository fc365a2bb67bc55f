/* The process room's internal interface: spawning a tool's process and
 * watching it, inside a registry's loop, until it is reaped; and the
 * head+tail output buffer. Never installed.
 *
 * A child runs in its own session and process group, dies with its parent
 * (PR_SET_PDEATHSIG), inherits no fd but 0-2, and starts with default signal
 * dispositions and an empty mask. It is created with clone(CLONE_PIDFD) and
 * reaped only through its pidfd. (The kernel gives it SIGCHLD as its exit
 * signal again at execve, so a host that reaps every child with waitpid(-1)
 * can take its status; the exit is then reported as unknown.) */
#ifndef JPT_LIB_PROCESS_H
#define JPT_LIB_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/common.h"
#include "loop/loop.h"

typedef struct jpt__child jpt__child;

#define JPT__STDOUT 1
#define JPT__STDERR 2

typedef struct jpt__exit {
    int code;   /* exit status, or -1 when killed by a signal or unknown */
    int signal; /* the signal that killed it, or 0 */
    bool known; /* false when someone else reaped the child first */
} jpt__exit;

typedef struct jpt__child_ops {
    /* Output read from the child's stdout or stderr (a PTY is stdout). */
    void (*output)(jpt__child *c, int stream, const char *p, size_t n, void *ud);
    /* The child was reaped: its output is complete and its fds are closed.
     * The callback may free the child. */
    void (*exited)(jpt__child *c, const jpt__exit *e, void *ud);
} jpt__child_ops;

typedef struct jpt__spawn {
    const char *const *argv;  /* argv[0] is looked up in PATH unless it has a '/' */
    const char *const *envp;  /* NULL: the host's environment */
    const char *cwd;          /* NULL: the host's current directory */
    bool stdin_pipe;          /* else /dev/null (ignored with pty) */
    int devnull;              /* an open /dev/null to use, or -1 */
    bool pty;                 /* stdin, stdout and stderr on a new terminal */
    unsigned short rows, cols;
    int drain_ms;             /* how long to read after the child exits */
} jpt__spawn;

/* Starts a child. Errors: JPT_ERR_NOT_FOUND (no such command), JPT_ERR_IO
 * (a system call failed; `err` says which, with errno's text),
 * JPT_ERR_NOMEM. */
int jpt__child_spawn(jpt__loop *l, const jpt__spawn *s, const jpt__child_ops *ops,
                     void *ud, jpt__child **out, jpt__errbuf *err);

pid_t jpt__child_pid(const jpt__child *c);
/* Whether the process itself (not its output) has ended. */
bool jpt__child_exited(const jpt__child *c);

/* Takes in at once what the child has written and not yet been read (a
 * bounded amount, through the output callback), and its exit if it has
 * ended with its output (through the exit callback, which may free it):
 * for a reader that wants the latest state without waiting for the loop.
 * Does nothing from inside the output callback. */
void jpt__child_poll(jpt__child *c);

/* Queues bytes for the child's stdin, written as the pipe accepts them.
 * JPT_ERR_STATE when the child has no input or it was closed (also when
 * the child turns out to have closed it as this write begins: nothing of
 * these bytes arrived). */
int jpt__child_write(jpt__child *c, const char *p, size_t n);
/* Bytes queued for stdin that were dropped because the child closed its
 * stdin (or it could not be written), over the child's life. */
uint64_t jpt__child_input_lost(const jpt__child *c);
/* Closes stdin once the queued bytes are written. */
void jpt__child_close_input(jpt__child *c);
/* Bytes queued and not yet written. */
size_t jpt__child_pending_input(const jpt__child *c);

/* SIGTERM to the process group now, SIGKILL after `grace_ms`. Stops
 * waiting for output a grandchild may still hold. */
void jpt__child_terminate(jpt__child *c, int grace_ms);

/* Frees a child; one still running is killed (SIGKILL to its group) and
 * reaped first. */
void jpt__child_free(jpt__child *c);

/* Ends many children at once, for shutdown: SIGTERM to every group, up to
 * `grace_ms` for them to exit, SIGKILL to the rest, and every one reaped
 * before it returns. The children are freed; no callback runs. */
void jpt__children_shutdown(jpt__child **children, size_t n, int grace_ms);

/* The start time of process `pid` in clock ticks since boot (field 22 of
 * /proc/<pid>/stat), or 0 if it cannot be read. With the pid it identifies a
 * process across pid reuse. */
uint64_t jpt__process_start_time(pid_t pid);

/* SIGKILL to every process of session `sid` (field 6 of /proc/<pid>/stat);
 * returns how many were signalled. A session's id stays reserved while any
 * member lives, so after its leader is gone the members are still the
 * leader's descendants. */
size_t jpt__kill_session(pid_t sid);

/* ---- Head+tail capture (capture.c) ------------------------------------------
 * Keeps the first and the last half of at most `limit` bytes; the middle is
 * counted. Optionally writes everything to a spool file as well, created
 * only once the output outgrows a threshold (what the model reads whole):
 * output that fits leaves no file behind. */
typedef struct jpt__capture {
    size_t limit;
    jpt__buf head;    /* the first limit/2 bytes */
    char *tail;       /* ring of limit - limit/2 bytes, allocated when needed */
    size_t tail_cap, tail_start, tail_len;
    uint64_t total;   /* every byte appended */
    const char *spool_dir; /* spool here past spool_threshold; not owned */
    size_t spool_threshold;
    void (*spool_created)(void *ud, const char *path); /* told of the file */
    void *spool_ud;
    bool spool_failed; /* creating or writing the file failed: no spool */
    int spool_fd;     /* -1 when not writing the spool now */
    char *spool_path; /* the spool file, once created */
} jpt__capture;

void jpt__capture_init(jpt__capture *c, size_t limit);
/* Spools the output to a new file in `dir` (mkstemp) once more than
 * `threshold` bytes arrive (at once if 0); `created(ud, path)` is told of
 * the file (its owner removes the files) and the path kept. A file that
 * cannot be created or written is logged and the output kept in memory
 * only. */
void jpt__capture_spool_in(jpt__capture *c, const char *dir, size_t threshold,
                           void (*created)(void *ud, const char *path), void *ud);
/* No more output for now (the process ended): the spool file is closed,
 * and reopened should more come (a tool run again). */
void jpt__capture_spool_pause(jpt__capture *c);
int jpt__capture_append(jpt__capture *c, const char *p, size_t n);
/* Bytes dropped from the middle. */
uint64_t jpt__capture_omitted(const jpt__capture *c);
/* Appends head, a marker for the omitted middle if any, and tail. */
int jpt__capture_text(const jpt__capture *c, jpt__buf *out);
/* Empties the buffer (the spool file, if any, keeps growing). */
void jpt__capture_reset(jpt__capture *c);
void jpt__capture_free(jpt__capture *c);

/* Appends the captured text cut to at most `limit` bytes (plus the
 * marker): the first and last halves around "[… N bytes omitted …]", N
 * counting every byte not shown, the spool file named when there is one. */
int jpt__capture_text_limited(const jpt__capture *c, size_t limit, jpt__buf *out);

/* The same for any text. Cuts fall on UTF-8 character boundaries. */
int jpt__limit_text(const char *p, size_t n, size_t limit, const char *spool_path,
                    jpt__buf *out);

#endif /* JPT_LIB_PROCESS_H */
