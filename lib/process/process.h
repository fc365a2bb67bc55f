/* The process room's internal interface: spawning a tool's process and
 * watching it, inside a registry's loop, until it is reaped; and the
 * head+tail output buffer. Never installed.
 *
 * A child runs in its own session and process group, dies with its parent
 * (PR_SET_PDEATHSIG), inherits no fd but 0-2, starts with default signal
 * dispositions and an empty mask, and, when the spawn asks for one, in an
 * OS sandbox (lib/sandbox): created in the sandbox's namespaces (clone
 * flags), it builds its view of the file system first, enters its working
 * directory in that view, and applies the rest just before execve. It is
 * created with clone(CLONE_PIDFD) and
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
#include "sandbox/sandbox.h"

/* execvp's search path for a host without PATH: where a command is looked
 * for then, and the PATH a child gets when it is given no environment of
 * its own (a VFS tool, process.run, a stdio tool without any). */
#define JPT__DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
/* The defaults of a host's settings for the children it ends (registry.h,
 * vfs.h): SIGTERM to SIGKILL, and how long output is read after a child
 * exits, for a grandchild that holds the pipes. */
#define JPT__KILL_GRACE_MS 5000
#define JPT__DRAIN_MS 100

typedef struct jpt__child jpt__child;

/* ---- Containment (contain.c, cgroup.c) ----------------------------------------
 * What the end of a child kills besides its process group. The modes and
 * what each guarantees are the public ones (registry.h, JPT_CONTAIN_*):
 *   CGROUP     every child runs in a cgroup v2 of its own, made under the
 *              host's cgroup and joined before execve; its end kills the
 *              cgroup (cgroup.kill) and removes it once it is empty.
 *   SUBREAPER  the host process is a child subreaper, so orphaned
 *              descendants are reparented to it; a child's end stops and
 *              kills those in the child's session or carrying its mark (an
 *              environment variable every child gets), and everything
 *              below them, and reaps them.
 *   SESSION    nothing more: the process group only. */
#define JPT__CONTAIN_AUTO 0
#define JPT__CONTAIN_CGROUP 1
#define JPT__CONTAIN_SUBREAPER 2
#define JPT__CONTAIN_SESSION 3

typedef struct jpt__contain jpt__contain;

/* One child's part: which cgroup, or which mark, is its. */
typedef struct jpt__contained {
    jpt__contain *ct; /* NULL: not contained (the group only) */
    uint64_t number;  /* names its cgroup or its mark */
} jpt__contained;

/* Sets up `mode` for the children spawned in loop `l`. AUTO becomes CGROUP
 * where the host's cgroup lets it make child cgroups, else SESSION.
 * SUBREAPER makes the host process a child subreaper, for good. Errors:
 * JPT_ERR_UNSUPPORTED (CGROUP is not available here, or SUBREAPER lacks
 * pidfd_open; `err` says why),
 * JPT_ERR_INVALID (no such mode), JPT_ERR_IO (prctl failed), JPT_ERR_NOMEM. */
int jpt__contain_new(jpt__loop *l, int mode, jpt__contain **out, jpt__errbuf *err);
/* The mode in effect (never AUTO). */
int jpt__contain_mode(const jpt__contain *ct);
/* Frees it once every cgroup it made is removed and every orphan it killed
 * is reaped, blocking for that if need be. Every child must be freed
 * before. NULL-safe. */
void jpt__contain_free(jpt__contain *ct);

/* The state file's record of the cgroups (registry's stale.c, for
 * jpt_registry_reap_stale after a crash): in CGROUP mode the line
 * "cgroups <prefix> <directory>\n" appended to `out` (every cgroup `ct`
 * makes is <directory>/<prefix><n>); nothing in the other modes.
 * JPT_ERR_NOMEM. */
int jpt__contain_stale_record(const jpt__contain *ct, jpt__buf *out);
/* Reads such a line (`line` without its newline, modified): false when it
 * is not one, or its prefix is not one jptool makes ("jptool-<pid>-<8 hex
 * digits>-") or its directory is not absolute. */
bool jpt__contain_stale_parse(char *line, const char **prefix, const char **dir);
/* What a crashed host left: every cgroup under `dir` whose name starts
 * with `prefix` has its processes killed (how many is added to `*killed`)
 * and is removed once empty. A directory that is not a cgroup2 one, or
 * that is gone, holds none (JPT_OK). JPT_ERR_IO when one is left behind
 * or the directory cannot be read (`err` says which). */
int jpt__contain_reap_stale(const char *dir, const char *prefix, size_t *killed,
                            jpt__errbuf *err);
/* Whether such a cgroup is left: 1, 0, or -1 when `dir` cannot be read. */
int jpt__contain_stale_left(const char *dir, const char *prefix);

/* process.c's side. Before a spawn: makes the child's cgroup and opens its
 * cgroup.procs, which the child writes to join it before execve (`*join`,
 * else -1); or makes the environment that marks its processes (`*envp_out`
 * from `envp`, freed with jpt__free; else NULL). Errors: JPT_ERR_IO (`err`
 * says which call failed), JPT_ERR_NOMEM. */
int jpt__contain_prepare(jpt__contain *ct, jpt__contained *cd, char *const *envp,
                         char ***envp_out, int *join, jpt__errbuf *err);
/* The spawn failed: what prepare made goes. */
void jpt__contain_cancel(jpt__contained *cd);
/* SIGKILL now to every process of children `cds[0..n)`; `leaders[i]` is
 * the pid of child i while it is unreaped, else 0. */
void jpt__contain_kill(jpt__contained *const *cds, const pid_t *leaders, size_t n);
/* The child's leader has exited and is about to be reaped. */
void jpt__contain_exiting(jpt__contained *cd, pid_t leader);
/* The child's leader was reaped: its cgroup goes once empty. */
void jpt__contain_reaped(jpt__contained *cd);

/* Whether every child of `ct` (may be NULL) has a cgroup of its own
 * (CGROUP mode), and whether those cgroups can bound their processes
 * (pids.max: the host's cgroup has the pids controller enabled for its
 * children in cgroup.subtree_control). */
bool jpt__contain_has_cgroups(const jpt__contain *ct);
bool jpt__contain_bounds_pids(const jpt__contain *ct);
/* Whether a sandboxed child of `ct` gets a PID namespace: where no cgroup
 * of its own ends it all, or where its cgroup does not bound its
 * processes and a PID namespace's pid_max can (jpt__ns_pid_max_here).
 * jpt__child_spawn sets the spec's pid_namespace so; what reports a
 * sandbox asks the same. */
bool jpt__contain_wants_pid_namespace(const jpt__contain *ct);
/* Sets the cgroup of a child prepared with jpt__contain_prepare to at most
 * `max` processes (pids.max; 0: no bound), before the child joins it.
 * Errors: JPT_ERR_IO (`err` says why). */
int jpt__contain_bound(jpt__contained *cd, unsigned max, jpt__errbuf *err);

/* The directory of the cgroup v2 that the text of /proc/self/cgroup names
 * (its "0::" line), through the cgroup2 mount in the text of
 * /proc/self/mountinfo that shows it, appended to `dir`. Both texts are
 * modified. Errors: JPT_ERR_UNSUPPORTED (no "0::" line, or no mount shows
 * it), JPT_ERR_NOMEM. */
int jpt__cgroup_path(char *cgroup, char *mountinfo, jpt__buf *dir, jpt__errbuf *err);
/* The cgroup v2 directory of this process (the mount of the cgroup2 file
 * system in /proc/self/mountinfo joined with the "0::" line of
 * /proc/self/cgroup), opened, its path appended to `path` (may be NULL);
 * or JPT_ERR_UNSUPPORTED (no such cgroup, or it cannot be opened; `err`
 * says why), JPT_ERR_NOMEM. */
int jpt__cgroup_open_host(jpt__buf *path, jpt__errbuf *err);
/* SIGKILL to every process of the cgroup `dir` (an open directory):
 * cgroup.kill, or jpt__cgroup_kill_each where it is missing (before Linux
 * 5.14). JPT_OK or JPT_ERR_IO. */
int jpt__cgroup_kill(int dir);
int jpt__cgroup_kill_each(int dir);
/* Whether the cgroup open as `dir` enables the controller `name` ("pids")
 * for its children (cgroup.subtree_control). */
bool jpt__cgroup_has_controller(int dir, const char *name);
/* Whether the cgroup whose cgroup.events is open as `events` has a live
 * process: 1, 0, or -1 when the file cannot be read. */
int jpt__cgroup_populated(int events);

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
    /* The child was reaped: its output is complete and its output fds
     * are closed. The callback frees the child, or soon after: what is
     * left of it (stdin, the pidfd, its cgroup, where what got away from
     * it is killed) goes then. */
    void (*exited)(jpt__child *c, const jpt__exit *e, void *ud);
    /* Input that had to wait for the pipe is all written: a writer that
     * holds back (bounded memory) may queue more. May be NULL. */
    void (*drained)(jpt__child *c, void *ud);
} jpt__child_ops;

typedef struct jpt__spawn {
    const char *const *argv;  /* argv[0] is looked up in PATH unless it has a '/' */
    const char *path;         /* the directories argv[0] is looked up in (a
                                 PATH value) instead of the host's PATH,
                                 their absolute entries only (a relative
                                 one, empty or ".", would name a directory
                                 the child may write); NULL: the host's
                                 PATH, where an empty entry is the current
                                 directory, as execvp has it */
    const char *const *envp;  /* NULL: the host's environment */
    const char *cwd;          /* NULL: the host's current directory */
    const int *cwd_fd;        /* an open directory (O_PATH will do) the child
                                 starts in, by fchdir before it closes the
                                 host's fds (in a sandbox's mount namespace:
                                 by the fd's path, checked to lead to the
                                 same directory); cwd is then ignored.
                                 NULL: none */
    bool stdin_pipe;          /* else /dev/null (ignored with pty) */
    int devnull;              /* an open /dev/null to use, or -1 */
    bool pty;                 /* stdin, stdout and stderr on a new terminal */
    bool pty_no_echo;         /* that terminal starts without echo (termios
                                 ECHO cleared) */
    unsigned short rows, cols;
    int drain_ms;             /* how long to read after the child exits */
    jpt__contain *contain;    /* NULL: the process group only */
    /* NULL: none. Else the child runs in this sandbox, prepared for this
     * spawn with the resolved program as spec.program (lib/sandbox), and
     * applied after its stdio is in place, before execve. */
    const jpt__sandbox_spec *sandbox;
    jpt__sandbox_report *sandbox_report; /* filled with what the sandbox
                                            enforces; may be NULL */
} jpt__spawn;

/* Starts a child. Errors: JPT_ERR_NOT_FOUND (no such command), JPT_ERR_IO
 * (a system call failed; `err` says which, with errno's text),
 * JPT_ERR_SANDBOX (the sandbox is required and not enforceable here, or
 * the child could not apply it), those of jpt__sandbox_prepare,
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
/* SIGPIPE blocked in the calling thread from _hold to _release (nested
 * holds: the outermost does it), so that writes to children's stdin
 * (jpt__child_write) need no system call of their own to keep the signal
 * from the host: for a loop the library runs itself (jpt_vfs_host_run).
 * A SIGPIPE a child's closed stdin raises meanwhile is taken back at its
 * write; one that was pending when the hold began is left. The thread's
 * other signals are left as they are. */
typedef struct jpt__sigpipe_hold {
    bool unblock; /* this hold blocked it */
} jpt__sigpipe_hold;
void jpt__process_sigpipe_hold(jpt__sigpipe_hold *h);
void jpt__process_sigpipe_release(jpt__sigpipe_hold *h);
/* Bytes queued for stdin that were dropped because the child closed its
 * stdin (or it could not be written), over the child's life. */
uint64_t jpt__child_input_lost(const jpt__child *c);
/* Whether the child (and whoever shares its stdin) read none of the bytes
 * written to its stdin pipe: every one of them is still in the pipe, or
 * was when the host closed its end, or the pipe had no reader left when
 * the first were written (they were lost). A tool that never began to
 * read its input, most often one that could not start. False when
 * nothing was written, for a terminal, or when the pipe cannot be asked.
 * Valid until the child is freed (from the exit callback too). */
bool jpt__child_read_no_input(const jpt__child *c);
/* Stops reading stdout (`hold`), so that a reader that cannot take more
 * now makes the child wait on a full pipe, and starts again. Pipes only.
 * Output held when the process ends is read if the hold ends within the
 * drain window, else dropped. */
void jpt__child_hold_output(jpt__child *c, bool hold);
/* Closes stdin once the queued bytes are written. */
void jpt__child_close_input(jpt__child *c);
/* Bytes queued and not yet written. */
size_t jpt__child_pending_input(const jpt__child *c);

/* SIGTERM to the process group now, SIGKILL after `grace_ms` (to every
 * process of the child when it is contained). Stops waiting for output a
 * grandchild may still hold. */
void jpt__child_terminate(jpt__child *c, int grace_ms);

/* Frees a child; one still running is killed (SIGKILL to its group, and
 * to every process of it when it is contained) and reaped first. */
void jpt__child_free(jpt__child *c);

/* Ends many children at once, for shutdown: SIGTERM to every group, up to
 * `grace_ms` for them to exit, SIGKILL to the rest, and every one reaped
 * before it returns. The children are freed; no callback runs. */
void jpt__children_shutdown(jpt__child **children, size_t n, int grace_ms);

/* The absolute entries of the PATH value `path`, in order, joined by ':'
 * into `out` (empty when there are none): relative entries ("", ".",
 * "bin") are dropped. JPT_ERR_NOMEM. */
int jpt__path_absolute_only(const char *path, jpt__buf *out);

/* What /proc/<pid>/stat says of a process: its parent (field 4), process
 * group (5), session (6) and start time in clock ticks since boot (22). */
typedef struct jpt__proc_stat {
    pid_t ppid, pgrp, session;
    uint64_t start;
} jpt__proc_stat;

/* False if the process is gone or the file unreadable. */
bool jpt__process_stat(pid_t pid, jpt__proc_stat *st);

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
/* Every byte appended since the last reset. */
uint64_t jpt__capture_total(const jpt__capture *c);
/* The first bytes kept (up to limit/2), `*n` of them. */
const char *jpt__capture_head(const jpt__capture *c, size_t *n);
/* The spool file, once created, or NULL. */
const char *jpt__capture_spool_path(const jpt__capture *c);
/* Appends head, a marker for the omitted middle if any, and tail; when the
 * middle was dropped, head and tail are cut as jpt__limit_text cuts. */
int jpt__capture_text(const jpt__capture *c, jpt__buf *out);
/* Empties the buffer (the spool file, if any, keeps growing). */
void jpt__capture_reset(jpt__capture *c);
void jpt__capture_free(jpt__capture *c);

/* Appends the captured text cut to at most `limit` bytes (plus the
 * marker): the first and last halves around "[… N bytes omitted …]", N
 * counting every byte not shown, the spool file named when there is one. */
int jpt__capture_text_limited(const jpt__capture *c, size_t limit, jpt__buf *out);
/* The same for the bytes from offset `from` (counted from the start, or
 * the last reset) to the end: what came after a reader took the rest. */
int jpt__capture_text_since(const jpt__capture *c, uint64_t from, size_t limit, jpt__buf *out);

/* The same for any text. Cuts fall on line boundaries where a newline is
 * near (within 4 KiB, and half of what is shown), else on UTF-8 character
 * boundaries. */
int jpt__limit_text(const char *p, size_t n, size_t limit, const char *spool_path,
                    jpt__buf *out);

#endif /* JPT_LIB_PROCESS_H */
