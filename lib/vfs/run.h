/* process.run for a VFS session (D11 "Process methods"): the checks, the
 * child in the workspace with a clean environment, its output scrubbed
 * and bounded, its timeout. session.c calls this in place of the files
 * backend for process.run, with the same guard and completion callbacks,
 * so the policy prompt serves it as it serves fs.*. Never installed.
 *
 * What the child gets:
 *   - argv: the program (looked up in the absolute entries of the host's
 *     PATH unless it is an absolute path) and the request's args (for
 *     `git diff` in a repository whose configuration names an external
 *     diff, with --no-ext-diff after the subcommand);
 *   - the environment: PATH (the host's absolute entries, or
 *     /usr/local/bin:/usr/bin:/bin when it has none: "" or "." would find
 *     a program the tool wrote in the workspace), and each variable of the
 *     request's `envs` that
 *     the program's commands rule lists and the host has set — nothing
 *     else, never a loader variable (jpt__policy_env_is_loader); in a
 *     registry whose containment is "subreaper", also jptool's own mark
 *     (JPTOOL_CONTAIN_<token>), which finds its strays; for git, its
 *     hardening (policy/git.c): no system or global configuration, and
 *     the command-line scope overriding every key that names a program,
 *     those of the repository read first by running `git config --list`
 *     in the same slot, before the request's git;
 *   - stdin /dev/null; cwd the workspace root, by fchdir on the directory
 *     backend's root fd (so renaming the root meanwhile does not matter),
 *     or in its sandbox's mount namespace by the fd's path, checked;
 *   - unless `sandbox_mode` is off, the OS sandbox of confine.c (below;
 *     vfs.h, "The OS sandbox"), with a PID namespace when its containment
 *     gives it no cgroup of its own;
 *   - its own session and process group (and the registry's containment);
 *     the group is killed when the child exits (stragglers), on the
 *     timeout (SIGTERM, SIGKILL after the kill grace), and when the
 *     request is cancelled (SIGKILL, reaped before the cancel returns).
 * Its stdout and stderr are scrubbed (common/scrub.h: the forwarded values
 * and every other value the policy lends, PATH's aside) before anything
 * else sees them, then kept head and tail up to
 * the rule's output_limit each, the middle replaced by a note of how many
 * bytes were left out. */
#ifndef JPT_LIB_VFS_RUN_H
#define JPT_LIB_VFS_RUN_H

#include "files/files.h"
#include "loop/loop.h"
#include "process/process.h"
#include "vfs/session.h"

typedef struct jpt__vfs_run jpt__vfs_run;

/* A session's runs (vfs.h, "process.run"): at most
 * JPT_VFS_PROCESS_MAX_RUNNING children alive at once, and with `slots`
 * each needs one of the owner's too; the others wait their turn in
 * order, at most JPT_VFS_PROCESS_MAX_WAITING of them (more are refused at
 * once). A waiting run's timeout starts when it starts. */
typedef struct jpt__vfs_run_queue {
    jpt__loop *loop;
    const jpt__vfs_slots *slots;   /* NULL: the bound alone */
    size_t running;                /* children alive (each holding a slot) */
    size_t waiting;
    jpt__vfs_run *head, *tail;     /* waiting, oldest first */
    jpt__defer drain;              /* starts waiting runs */
} jpt__vfs_run_queue;

void jpt__vfs_run_queue_init(jpt__vfs_run_queue *q, jpt__loop *loop,
                             const jpt__vfs_slots *slots);
/* Stops the queue's deferred work; cancel its runs first. */
void jpt__vfs_run_queue_clear(jpt__vfs_run_queue *q);
/* The owner may have a slot again: starts what can start now (`done`
 * runs for a run that fails to). */
void jpt__vfs_run_queue_wake(jpt__vfs_run_queue *q);
/* Whether runs wait, and none of the queue's children is alive: all wait
 * for the owner's slots. */
bool jpt__vfs_run_queue_starved(const jpt__vfs_run_queue *q);
/* Refuses every waiting run with JPT_ERR_LIMIT and "process.run
 * '<program>': <why>" (`done` runs for each). */
void jpt__vfs_run_queue_refuse(jpt__vfs_run_queue *q, const char *why);

/* What the session lends a run; all outlive it. */
typedef struct jpt__vfs_run_env {
    jpt__loop *loop;
    jpt_files *files;         /* the workspace: a directory backend */
    const jpt_policy *policy;
    jpt__contain *contain;    /* NULL: the process group only */
    int kill_grace_ms;        /* timeout: SIGTERM, then SIGKILL after this */
    jpt__vfs_run_queue *queue; /* the session's */
    int sandbox_mode;         /* the child's OS sandbox: JPT_SANDBOX_REQUIRED,
                                 _BEST_EFFORT or _OFF (the tool's mode) */
    jpt__sandbox_cache *sandbox_cache; /* may be NULL */
} jpt__vfs_run_env;

/* Starts process.run with the request's params `p` (which must stay valid
 * until `done` runs or the run is cancelled). In order:
 *   - a program that is a relative path with a '/': JPT_ERR_INVALID;
 *   - a workspace that is not a directory: JPT_ERR_UNSUPPORTED;
 *   - `envs`: a name that is not a variable name is JPT_ERR_INVALID, a
 *     loader variable or one the rule does not list JPT_ERR_DENIED (PATH
 *     is always given and always allowed);
 *   - the policy, through `guard` (as the files room calls it, with the
 *     JSON argv ["program", args…] as the path): JPT_OK goes on,
 *     JPT_ERR_AGAIN is passed to `done` as it is (the session asks and
 *     submits again once allowed), any other status fails the request;
 *   - the queue: JPT_ERR_LIMIT when JPT_VFS_PROCESS_MAX_WAITING runs
 *     wait already; else the run waits its turn (then `done` runs later,
 *     also for the refusals below);
 *   - the spawn: JPT_ERR_NOT_FOUND (no such program), JPT_ERR_IO,
 *     JPT_ERR_LIMIT (no fds or processes left).
 * `done` runs exactly once unless the run is cancelled first: inside this
 * call for every refusal above, else from the loop once the child is
 * reaped: JPT_OK with D11's result {"stdout", "stderr", "exit_code"}
 * ("exit_code": null and "signal": N when a signal killed it; null alone
 * when someone else reaped it); JPT_ERR_TIMEOUT with `result` the same
 * object, for the response's error data, when the timeout killed it;
 * JPT_ERR_NOMEM. Messages begin "process.run '<program>': ". Returns
 * JPT_OK (then *pending is the run in flight, or NULL if `done` ran), or
 * JPT_ERR_NOMEM without calling `done`. */
typedef void (*jpt__vfs_run_done_fn)(void *ud, int status, const char *result, size_t len,
                                     const char *message);

int jpt__vfs_run_submit(const jpt__vfs_run_env *env, const jpt__vfs_params *p,
                        jpt__files_guard_fn guard, void *guard_ud, jpt__vfs_run_done_fn done,
                        void *ud, jpt__vfs_run **pending);

/* Abandons a run: its process group is killed and reaped now, and `done`
 * does not run. */
void jpt__vfs_run_cancel(jpt__vfs_run *r);

/* ---- The child's sandbox (confine.c) ------------------------------------------------
 * What the OS sandbox of a process.run child holds, from the tool's policy
 * (vfs.h, "process.run"): readable, the real paths of filesystem.allow's
 * and .writable's prefixes beneath the root; writable, .writable's (all of
 * .allow's with "writable": true); never readable, each entry beneath the
 * readable ones that filesystem.deny or a sensitive pattern names, found
 * by a walk of at most JPT_VFS_RUN_SCAN_MAX entries; read-only, each .git
 * entry and each bare repository (HEAD, and objects and refs or
 * commondir) beneath a writable prefix (unless a prefix names a path in
 * it, or filesystem.git is "writable"). Each path covered goes with its
 * identity, which the child checks as it covers it (issue 15, R4: a
 * directory renamed and made again between the walk and the child's
 * mounts fails the spawn rather than leave the moved one uncovered). A
 * git child (`git`) reads its repositories' .git/config, which it cannot
 * work without. */
typedef struct jpt__vfs_confine jpt__vfs_confine;

/* Plans the walk of the readable prefixes of `p` beneath the directory
 * `root_fd` (which must outlive `*out`), for a sandbox of `mode` (for git
 * when `git`; with at most `process_limit` processes, 0: the default)
 * with filters from `cache` (may be NULL). Errors: JPT_ERR_IO (the root's
 * path cannot be told), JPT_ERR_NOMEM; `err` says which. */
int jpt__vfs_confine_new(const jpt_policy *p, int root_fd, int mode, bool git,
                         unsigned process_limit, jpt__sandbox_cache *cache,
                         jpt__vfs_confine **out, jpt__errbuf *err);
/* Walks on for about `budget_ns` (0: to the end): 1 when there is more, 0
 * when the spec is ready; JPT_ERR_LIMIT (more entries or covered paths
 * than the bounds), JPT_ERR_NOMEM; `err` says which. */
int jpt__vfs_confine_step(jpt__vfs_confine *c, uint64_t budget_ns, jpt__errbuf *err);
/* The spec for jpt__child_spawn, once walked, valid while `c` lives. */
const jpt__sandbox_spec *jpt__vfs_confine_spec(const jpt__vfs_confine *c);
/* The entries the walk met. */
size_t jpt__vfs_confine_scanned(const jpt__vfs_confine *c);
void jpt__vfs_confine_free(jpt__vfs_confine *c);

/* The inventory of what of a repository lay beneath the writable
 * prefixes when `c` was walked (repos.c), for the sweep after the run
 * (issue 15, R1: a child that planted .git/HEAD and a config with
 * core.fsmonitor had the user's next `git status` there run its
 * command); NULL when there is nothing to sweep (not walked, no writable
 * prefix, filesystem.git "writable"). `c` keeps a reference. */
jpt__repos *jpt__vfs_confine_repos(const jpt__vfs_confine *c);

#endif /* JPT_LIB_VFS_RUN_H */
