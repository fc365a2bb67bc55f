/* The sandbox room's internal interface: the OS sandbox a tool process
 * runs in (RFD 075 as D11 relies on it; vfs.h, "The OS sandbox"), and the
 * one a process.run child runs in (issue 15 §3). Never installed.
 *
 * The parent prepares a sandbox before it spawns: it asks the kernel what
 * it offers, opens a Landlock ruleset holding the rules of the profile,
 * builds the seccomp filter (libseccomp, exported as BPF into memory) and
 * plans the child's namespaces. The child, between clone and execve,
 * applies it with system calls alone: it builds its view of the file
 * system in its mount namespace (when the sandbox has one), drops every
 * capability and locks its securebits, sets no_new_privs, restricts
 * itself to the ruleset and loads the filters. One prepared sandbox may be
 * applied by many children unless it has a private /tmp (its ruleset then
 * gains a rule in the child); applying it changes nothing else.
 *
 * Files: landlock.c (the kernel's ABI, the ruleset), seccomp.c (the
 * filters), ns.c (the namespaces: what the host can make, the child's
 * mounts), etc.c (the secrets of /etc), walk.c (walks of a workspace,
 * what of a repository an entry is, removals), repos.c (the repositories
 * where a process may write: before, and the sweep after), sandbox.c (profiles, modes, the report, what
 * an owner keeps, prepare and apply). */
#ifndef JPT_LIB_SANDBOX_H
#define JPT_LIB_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/common.h"
#include "jptool/vfs.h"

/* Profiles: what a process may do directly. Every profile drops every
 * capability (a root host's tools are root without any), sets
 * no_new_privs, and denies the calls listed in seccomp.c.
 *   VFS    a D11 tool, whose way out is the protocol on its stdin and
 *          stdout: it may read and execute the system's programs and
 *          libraries (what execve and the dynamic loader need), nothing of
 *          the workspace, home, /proc or /sys; no socket() at all; no
 *          change of any file's mode, owner, times or extended attributes,
 *          no file-system watch or file handle. It starts in "/".
 *   STDIO  RFD 075's sandbox of a stdio tool: the workspace read-write (or
 *          read-only) but its repositories (unless git_writable), the
 *          system read-only (/usr, /lib*, /bin, /sbin, /etc but its
 *          secrets, /opt, /sys; not /proc), a /tmp of its own (a
 *          directory per tool bound there; the host's without a mount
 *          namespace),
 *          no network: socket() of AF_UNIX streams only, and no connect();
 *          no file-system watch (inotify, fanotify) nor file handle.
 *          In a mount namespace, everything but the writable areas is
 *          mounted read-only; where the host cannot make one, metadata
 *          changes are denied everywhere instead.
 *   RUN    a process.run child (issue 15 §3): the paths of `read`
 *          readable, of `write` writable, `read_only` kept read-only
 *          within them, `hide` covered, the system as STDIO has it, a
 *          private /tmp; no network as STDIO; in a mount namespace of its
 *          own (and a PID namespace, when asked). Without them it is not
 *          prepared in mode REQUIRED.
 * Any profile may ask for a PID namespace (spec.pid_namespace: the
 * spawner's, where no cgroup of the process's own ends and bounds it),
 * bounded to spec.process_limit processes by its pid_max where the
 * kernel keeps one per namespace. */
#define JPT__SANDBOX_VFS 1
#define JPT__SANDBOX_STDIO 2
#define JPT__SANDBOX_RUN 3

/* The most processes (threads count) a sandboxed process and what it
 * starts have alive at once, unless its definition or rule says
 * otherwise (vfs.h, "The OS sandbox": os_sandbox.process_limit,
 * commands.<program>.process_limit, 1 to the _MAX). */
#define JPT__SANDBOX_PROCESS_LIMIT 512
#define JPT__SANDBOX_PROCESS_LIMIT_MAX 65536

/* The private /tmp of a RUN child (a tmpfs) is this large at most. */
#define JPT__SANDBOX_TMP_SIZE "256m"
/* Granted paths below /tmp that a RUN child's private /tmp can hold (a
 * workspace there): more is refused. */
#define JPT__SANDBOX_TMP_KEEP_MAX 16
/* The longest path the child handles. */
#define JPT__SANDBOX_PATH_MAX 4096

/* What an owner (a registry, a VFS host) keeps for its later spawns: the
 * seccomp filters it has built (a filter depends on the profile and the
 * kernel only, and building one costs more than applying it); whether
 * this host can make the namespaces a sandbox wants (probed once, by a
 * child that tries); the secrets of /etc found; Landlock rulesets by spec
 * (made again when a file their rules hold was replaced); and a stdio
 * tool's view of the file system by plan, made once by a helper child and
 * entered by each child (setns), so that none makes and tears down a
 * mount namespace of its own. It holds fds (rulesets, views) until it is
 * freed. One thread at a time, as its owner. */
typedef struct jpt__sandbox_cache jpt__sandbox_cache;

/* NULL when out of memory. */
jpt__sandbox_cache *jpt__sandbox_cache_new(void);
/* Every sandbox prepared with it must be freed first. NULL-safe. */
void jpt__sandbox_cache_free(jpt__sandbox_cache *c);

typedef struct jpt__sandbox_spec {
    int profile;               /* JPT__SANDBOX_VFS, _STDIO or _RUN */
    int mode;                  /* JPT_SANDBOX_REQUIRED or _BEST_EFFORT */
    const char *program;       /* the executable (a path): may be read and
                                  executed; NULL: none besides the system's */
    const char *workspace;     /* the workspace root; NULL: none. STDIO:
                                  granted. VFS and RUN: its real path,
                                  which no grant of the profile may hold
                                  (a workspace in /usr/src, a read path
                                  above it): mode REQUIRED refuses such a
                                  spec, and BEST_EFFORT's report says so */
    bool workspace_writable;   /* STDIO */
    bool git_writable;         /* STDIO: its repositories writable too
                                  ("filesystem": {"git": "writable"});
                                  else each .git and bare repository of
                                  a writable workspace is mounted
                                  read-only, and what of one it makes is
                                  swept after it (repos.c) */
    const char *tool;          /* STDIO: whose /tmp it is (a directory of
                                  its own per tool and cache, bound over
                                  /tmp); NULL, or no cache: a tmpfs of its
                                  own */
    const char *const *read;   /* absolute paths readable and executable
                                  besides the profile's; NULL-terminated,
                                  or NULL */
    const char *const *write;  /* STDIO, RUN: absolute paths writable too */
    const char *const *read_only; /* RUN: absolute paths within `write`
                                  kept read-only (a repository's .git) */
    const char *const *hide;   /* RUN: absolute paths the process must not
                                  read: each is covered by an empty
                                  directory or file it cannot open */
    const bool *hide_dir;      /* RUN: per `hide`, whether a directory */
    const char *const *pin;    /* RUN: absolute paths of directories within
                                  `write` that the process must not rename
                                  (a name a verdict on a hidden path
                                  depends on: "config" of a denied
                                  "config/prod"): each is mounted on
                                  itself, which no rename moves (EBUSY) */
    const uint64_t *pin_ids;   /* RUN: per `pin`, as below */
    const uint64_t *read_only_ids; /* RUN: per `read_only` and per `hide`, */
    const uint64_t *hide_ids;  /* the (device, inode) pair the path was
                                  when it was found: the child covers it
                                  only if it is still that file (a
                                  directory renamed and made again since
                                  fails the spawn); NULL, or a pair of 0:
                                  not checked */
    bool pid_namespace;        /* a PID namespace whose end ends every
                                  process in it, and which bounds them (for
                                  a process that has no cgroup of its own
                                  to be killed, or whose cgroup bounds no
                                  processes); where the host cannot make
                                  one, RUN is not prepared in mode
                                  REQUIRED, the others run without and
                                  their report says so */
    unsigned process_limit;    /* the most processes (threads count) alive
                                  at once in that PID namespace; 0:
                                  JPT__SANDBOX_PROCESS_LIMIT */
    jpt__sandbox_cache *cache; /* filters kept here; NULL: built for this
                                  sandbox alone */
} jpt__sandbox_spec;

typedef struct jpt__sandbox jpt__sandbox;
typedef struct jpt__repos jpt__repos; /* repos.c */

/* What a prepared sandbox enforces, for the report of a spawn. */
typedef struct jpt__sandbox_report {
    unsigned enforced;         /* JPT_SANDBOX_ENFORCED_* bits */
    int landlock_abi;          /* the kernel's, 0: none */
    char text[1024];
} jpt__sandbox_report;

/* Prepares a sandbox. In mode REQUIRED, a kernel (or a build) that cannot
 * enforce the profile's minimum (JPT__SANDBOX_ENFORCED_MINIMUM, and for
 * RUN the namespaces) fails with JPT_ERR_SANDBOX and `err` names what it
 * lacks; in BEST_EFFORT the sandbox enforces what there is and its report
 * says what is missing. Errors: JPT_ERR_SANDBOX, JPT_ERR_INVALID (an
 * unknown profile or mode, a relative path in a list, `write` with the
 * VFS profile, `read_only` or `hide` with another than RUN), JPT_ERR_LIMIT
 * (more than JPT__SANDBOX_TMP_KEEP_MAX granted paths below /tmp, a path
 * longer than JPT__SANDBOX_PATH_MAX), JPT_ERR_IO (a path of the spec that
 * exists but cannot be opened, or a Landlock or seccomp call failed
 * unexpectedly; `err` says which), JPT_ERR_NOMEM. Paths that do not exist
 * are skipped. */
int jpt__sandbox_prepare(const jpt__sandbox_spec *spec, jpt__sandbox **out, jpt__errbuf *err);

/* The flags clone needs for the sandbox's namespaces (CLONE_NEWNS,
 * CLONE_NEWPID, CLONE_NEWUSER), 0 for none. */
int jpt__sandbox_clone_flags(const jpt__sandbox *sb);

/* In the child between clone (with jpt__sandbox_clone_flags) and execve,
 * first: builds its view of the file system in its mount namespace (none:
 * nothing to do). Then paths are resolved in that view: a directory to
 * start in must be entered by its path, never by an fd of the host's.
 * Async-signal-safe: system calls only, no allocation, no locks. Returns
 * 0, or an errno with `*step` naming what failed and `*path` (may be
 * NULL) where. */
int jpt__sandbox_enter_in_child(const jpt__sandbox *sb, const char **step, const char **path);

/* In the child, after jpt__sandbox_enter_in_child and just before
 * execve: drops every capability (bounding set, ambient, effective,
 * permitted, inheritable) and locks the securebits, sets no_new_privs,
 * restricts itself to the ruleset and loads the filters. Async-signal-safe
 * as above. Returns 0, or an errno with `*step` naming the call that
 * failed. The ruleset's fd must still be open (apply before closing the
 * inherited fds). */
int jpt__sandbox_apply_in_child(const jpt__sandbox *sb, const char **step);

/* Whether the directory `dir` (a real path) is made anew in the child's
 * view (a workspace below /tmp whose root it may not read, ns.c): a
 * child starting there enters it by its path, which does not lead to the
 * host's directory. */
bool jpt__sandbox_remade(const jpt__sandbox *sb, const char *dir);

/* The repositories of a STDIO sandbox's writable workspace, for the
 * sweep after its process (the spawner takes a reference); NULL: none to
 * sweep. */
jpt__repos *jpt__sandbox_repos(const jpt__sandbox *sb);

/* What it enforces (filled at prepare). */
const jpt__sandbox_report *jpt__sandbox_report_of(const jpt__sandbox *sb);

/* What mode "required" requires of every profile; RUN requires its
 * namespaces as well (JPT_SANDBOX_ENFORCED_MOUNTS, and _PROCESSES when it
 * asks for a PID namespace). */
#define JPT__SANDBOX_ENFORCED_MINIMUM                                                      \
    (JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS | JPT_SANDBOX_ENFORCED_SECCOMP |                    \
     JPT_SANDBOX_ENFORCED_FILES | JPT_SANDBOX_ENFORCED_TRUNCATE |                          \
     JPT_SANDBOX_ENFORCED_CAPABILITIES | JPT_SANDBOX_ENFORCED_METADATA)

/* Logs what the sandbox of process `pid` of tool `tool` (for call or
 * handle `id`, or NULL) enforces: at JPT_LOG_INFO, or JPT_LOG_WARNING when
 * it lacks part of the minimum (best-effort without Landlock or seccomp). */
void jpt__sandbox_log(const char *tool, const char *id, int pid,
                      const jpt__sandbox_report *rep);

/* Closes the ruleset and frees the filter. NULL-safe. */
void jpt__sandbox_free(jpt__sandbox *sb);

/* "required", "best-effort", "off" to JPT_SANDBOX_* (0 for another word),
 * and back ("default" for 0). */
int jpt__sandbox_mode_from_name(const char *name);
const char *jpt__sandbox_mode_name(int mode);

/* ---- landlock.c ------------------------------------------------------------------ */

/* The Landlock ABI the kernel offers (LANDLOCK_CREATE_RULESET_VERSION), 0
 * when it has none; `*why` (may be NULL) then says why (errno's text). */
int jpt__landlock_abi(const char **why);

/* The access rights ruleset a Landlock ABI handles, for the rules. */
typedef struct jpt__landlock_handled {
    uint64_t fs, net, scoped;
} jpt__landlock_handled;
void jpt__landlock_handled_for(int abi, jpt__landlock_handled *h);

/* Creates a ruleset handling `h` (its fd, >= 3, close-on-exec), or -1
 * with errno set. */
int jpt__landlock_create(int abi, const jpt__landlock_handled *h);
/* Adds a rule granting `access` beneath `path` (a directory) or on it (a
 * file: only the rights of files are kept), masked by `handled`. 1 when
 * added, 0 when the path does not exist, -1 with errno set. */
int jpt__landlock_allow(int ruleset, const char *path, uint64_t access, uint64_t handled);

/* Rights, as the kernel numbers them (linux/landlock.h; older headers lack
 * the later ones). */
#define JPT__LL_EXECUTE (1ULL << 0)
#define JPT__LL_WRITE_FILE (1ULL << 1)
#define JPT__LL_READ_FILE (1ULL << 2)
#define JPT__LL_READ_DIR (1ULL << 3)
#define JPT__LL_REMOVE_DIR (1ULL << 4)
#define JPT__LL_REMOVE_FILE (1ULL << 5)
#define JPT__LL_MAKE_CHAR (1ULL << 6)
#define JPT__LL_MAKE_DIR (1ULL << 7)
#define JPT__LL_MAKE_REG (1ULL << 8)
#define JPT__LL_MAKE_SOCK (1ULL << 9)
#define JPT__LL_MAKE_FIFO (1ULL << 10)
#define JPT__LL_MAKE_BLOCK (1ULL << 11)
#define JPT__LL_MAKE_SYM (1ULL << 12)
#define JPT__LL_REFER (1ULL << 13)    /* ABI 2 */
#define JPT__LL_TRUNCATE (1ULL << 14) /* ABI 3 */
#define JPT__LL_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define JPT__LL_NET_BIND_TCP (1ULL << 0)    /* ABI 4 */
#define JPT__LL_NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */
#define JPT__LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define JPT__LL_SCOPE_SIGNAL (1ULL << 1)                /* ABI 6 */

/* ---- seccomp.c ------------------------------------------------------------------- */

/* A seccomp filter as BPF, ready for seccomp(SECCOMP_SET_MODE_FILTER). */
typedef struct jpt__seccomp_prog {
    unsigned short len;        /* instructions */
    void *filter;              /* struct sock_filter[len] */
} jpt__seccomp_prog;

/* What a filter denies besides what every filter does. */
#define JPT__SECCOMP_NO_SOCKETS 0x1  /* socket() at all (VFS) */
#define JPT__SECCOMP_TRUNCATE 0x2    /* truncate(2): a Landlock below ABI 3 */
#define JPT__SECCOMP_METADATA 0x4    /* chmod, chown, utimes, xattrs, … of
                                        any file */
#define JPT__SECCOMP_PATH_PROBES 0x8 /* reading extended attributes
                                        (inotify, fanotify and file
                                        handles are denied to all) */
#define JPT__SECCOMP_VARIANTS 16

/* Whether the kernel takes seccomp filters that return errors (and the
 * library was built with libseccomp); `*why` (may be NULL) says why not. */
bool jpt__seccomp_available(const char **why);
/* Builds the filter with `denies` (JPT__SECCOMP_* bits). Errors:
 * JPT_ERR_IO (libseccomp failed; `err` says where), JPT_ERR_NOMEM. */
int jpt__seccomp_build(unsigned denies, jpt__seccomp_prog *out, jpt__errbuf *err);
void jpt__seccomp_prog_free(jpt__seccomp_prog *p);

/* The head of the child's filter, built in the child for its own process
 * id `self` (async-signal-safe): prlimit64, setpriority,
 * sched_setaffinity, sched_setscheduler, sched_setparam, sched_setattr,
 * ioprio_set, migrate_pages and move_pages only on itself (0 or `self`),
 * never on a user's processes at once; every other call goes on to the
 * instructions that follow it (the main filter, copied after it: one
 * filter to load, not two). Writes at most JPT__SECCOMP_OWN_MAX
 * instructions (struct sock_filter) to `out`; returns how many, 0 on an
 * architecture it does not know. */
#define JPT__SECCOMP_OWN_MAX 96
unsigned short jpt__seccomp_own_filter(void *out, int self);

/* ---- etc.c ------------------------------------------------------------------------ */

/* Owned copies of paths, NULL-terminated, each with a flag. */
typedef struct jpt__pathv {
    char **v;
    bool *flag;
    size_t n, cap;
} jpt__pathv;

int jpt__pathv_add(jpt__pathv *l, const char *path, bool flag); /* JPT_ERR_NOMEM */
void jpt__pathv_free(jpt__pathv *l);
/* The list, or NULL when empty. */
const char *const *jpt__pathv_list(const jpt__pathv *l);

/* The secrets of /etc this system has (etc.c's list: shadow, sudoers,
 * host keys, …), their real paths, a directory flagged; found again only
 * when a directory that holds one has changed. Zeroed is empty. */
#define JPT__ETC_DIRS 32
typedef struct jpt__etc {
    jpt__pathv found;
    struct timespec stamps[JPT__ETC_DIRS];
    bool known;
    unsigned generation;     /* changes when `found` is found again */
} jpt__etc;

/* Brings `e` up to date. JPT_ERR_NOMEM. */
int jpt__etc_secrets(jpt__etc *e, jpt__errbuf *err);
void jpt__etc_free(jpt__etc *e);
/* Grants `access` on /etc entry by entry around the secrets of `e`, for a
 * ruleset where nothing covers them (no mount namespace). JPT_ERR_IO. */
int jpt__etc_allow_around(int ruleset, const jpt__etc *e, uint64_t access, uint64_t handled,
                          jpt__errbuf *err);

/* ---- walk.c ---------------------------------------------------------------------- */

/* `rel` (relative to the directory `root_fd`, "." for it) opened beneath
 * it with `flags` (O_CLOEXEC and O_NOFOLLOW added), never through a
 * symbolic link (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS); -1 with errno. */
int jpt__walk_open(int root_fd, const char *rel, int flags);

/* What of a repository the entry `name` of type `type` (DT_*) is: a `.git`
 * in any case (a directory, a "gitdir:" file, a symbolic link), and what
 * makes a directory a bare repository to git (HEAD; objects and refs, or
 * commondir). */
#define JPT__REPO_GIT 0x1u
#define JPT__REPO_HEAD 0x2u
#define JPT__REPO_OBJECTS 0x4u
#define JPT__REPO_REFS 0x8u
#define JPT__REPO_COMMONDIR 0x10u
unsigned jpt__repo_mark(const char *name, unsigned char type);
/* Whether a directory whose entries have `marks` is a repository to git:
 * HEAD, and objects and refs or a commondir. */
bool jpt__repo_bare(unsigned marks);

/* A set of paths: sorted (its flags cleared), then looked up. */
void jpt__pathv_sort(jpt__pathv *l);
bool jpt__pathv_has(const jpt__pathv *l, const char *path);

/* What a directory was when a walk listed it: (device, inode, ctime),
 * and whether its ctime was so recent then that a change in the same
 * tick would not show (racy: the stamp is never trusted). */
typedef struct jpt__walk_stamp {
    char *rel;
    uint64_t dev, ino;
    int64_t ctime; /* ns */
    bool racy;
} jpt__walk_stamp;
typedef struct jpt__walk_stamps {
    jpt__walk_stamp *v;
    size_t n, cap;
} jpt__walk_stamps;
/* Whether every directory stamped is still what it was (so none has an
 * entry made, removed or renamed since: each such change moves its
 * directory's ctime, which no process sets back). */
bool jpt__walk_stamps_hold(const jpt__walk_stamps *s, int root_fd);
/* Whether every directory stamped still has the (device, inode, ctime)
 * it had, racy or not. Every change since its listing moves its ctime
 * where the file system keeps fine-grained ctimes for an inode whose
 * ctime was read (Linux 6.13's multigrain timestamps: ext4, xfs, btrfs,
 * tmpfs); elsewhere a change within the clock tick of the listing, of a
 * directory already changed in that tick, does not show. */
bool jpt__walk_stamps_same(const jpt__walk_stamps *s, int root_fd);
/* jpt__walk_stamps_same in steps of about `budget_ns` (0: to the end),
 * from the stamp `*next` on (0 at first; moved on as they are checked):
 * 1 when there are more to check, 0 when every one holds, -1 at the first
 * that does not. A walk of a hundred thousand directories is as many
 * stats: they must not stall one dispatch (issue 18). */
int jpt__walk_stamps_step(const jpt__walk_stamps *s, int root_fd, size_t *next,
                          uint64_t budget_ns);
void jpt__walk_stamps_free(jpt__walk_stamps *s);

/* A walk of directories beneath `root_fd`: each listed, each entry (its
 * path relative to the root, its name, its type: DT_DIR, DT_LNK, DT_REG
 * for the rest) given to `visit`, which answers JPT__WALK_DESCEND for a
 * directory to list too, JPT_OK for not, or a negative status to stop
 * the walk; a directory's entries' JPT__REPO_* marks given to `dir_done`
 * (may be NULL) once it is listed. A symbolic link is never followed; a
 * directory that cannot be opened beneath the root without one is passed
 * over. Iterative (the depth is a tool's to choose) and bounded: past
 * `max_entries` it fails with JPT_ERR_LIMIT. */
#define JPT__WALK_DESCEND 1
typedef int (*jpt__walk_fn)(void *ud, const char *rel, const char *name, unsigned char type);
typedef int (*jpt__walk_dir_fn)(void *ud, const char *rel, unsigned marks);
typedef struct jpt__walk jpt__walk;
/* JPT_ERR_NOMEM. */
int jpt__walk_new(int root_fd, size_t max_entries, jpt__walk_fn visit, jpt__walk_dir_fn dir_done,
                  void *ud, jpt__walk **out);
/* Whether the directory `rel` is one a walk passes over as no process of
 * this uid may search it, yet this uid owns: a process of the uid makes
 * it searchable again (chmod) where it may write, and reaches what lies
 * beneath, which no walk saw. */
bool jpt__walk_shut_but_owned(int root_fd, const char *rel);
/* Stamps each directory listed into `s` (jpt__walk_stamps_hold). */
void jpt__walk_stamp_into(jpt__walk *w, jpt__walk_stamps *s);
/* Adds the directory `rel` to list. JPT_ERR_NOMEM. */
int jpt__walk_add(jpt__walk *w, const char *rel);
/* Walks on for about `budget_ns` (0: to the end): 1 when there is more,
 * 0 when done, or a negative status (JPT_ERR_LIMIT past the bound,
 * JPT_ERR_IO a directory that cannot be listed and may hold what the walk
 * looks for, JPT_ERR_NOMEM, or `visit`'s or `dir_done`'s), `err` saying
 * why (for JPT_ERR_LIMIT "more than N entries", to be put in context). */
int jpt__walk_step(jpt__walk *w, uint64_t budget_ns, jpt__errbuf *err);
size_t jpt__walk_scanned(const jpt__walk *w);
void jpt__walk_free(jpt__walk *w);

/* The removal of the entry `name` of the directory `parent_fd` and all
 * beneath it, never following a symbolic link, in steps: at most two
 * directories are open at once whatever the depth, and a directory made
 * unreadable by its owner is made readable to be emptied. */
typedef struct jpt__remove jpt__remove;
int jpt__remove_new(int parent_fd, const char *name, jpt__remove **out); /* JPT_ERR_NOMEM */
/* Removes on for about `budget_ns` (0: to the end): 1 when there is more,
 * 0 when all is gone (or was), JPT_ERR_IO when something could not be
 * removed (the rest was). */
int jpt__remove_step(jpt__remove *r, uint64_t budget_ns);
/* Entries removed so far. */
size_t jpt__remove_count(const jpt__remove *r);
void jpt__remove_free(jpt__remove *r);
/* The same at once: 0, or JPT_ERR_IO / JPT_ERR_NOMEM. */
int jpt__remove_tree(int parent_fd, const char *name);

/* ---- repos.c --------------------------------------------------------------------- */

struct stat;

/* (device, inode) pairs: a set once sorted (repos.c), else a list. */
typedef struct jpt__idv {
    uint64_t *v;
    size_t n, cap;
} jpt__idv;
int jpt__idv_add(jpt__idv *l, const struct stat *st); /* NULL: (0, 0). JPT_ERR_NOMEM */
void jpt__idv_free(jpt__idv *l);

/* What of a repository lies beneath the writable roots of a workspace
 * before a sandboxed process runs there, for the sweep after it: each
 * .git (any case, any type) and each bare repository by identity, and
 * what the process had covered or read-only (not walked again). A walk
 * notes them (jpt__repos_note, _note_dir, _covered), then seals it.
 * Reference-counted: a kept view and each of its processes hold one. */
/* Over the directory `root_fd` (duplicated). JPT_ERR_NOMEM, JPT_ERR_LIMIT
 * (no fd), JPT_ERR_IO. */
int jpt__repos_new(int root_fd, jpt__repos **out);
jpt__repos *jpt__repos_ref(jpt__repos *r);
void jpt__repos_unref(jpt__repos *r); /* NULL-safe */
int jpt__repos_root_fd(const jpt__repos *r);
/* A writable root, relative ("." the root). JPT_ERR_NOMEM. */
int jpt__repos_add_root(jpt__repos *r, const char *rel);
bool jpt__repos_has_roots(const jpt__repos *r);
/* Whether `rel` is beneath a writable root and no root is beneath it (a
 * rule that names a path inside .git grants it). */
bool jpt__repos_writable(const jpt__repos *r, const char *rel);
/* The entry `rel` (named `name`) met: a .git beneath a root is noted.
 * The directory `rel` listed, its entries' `marks`: a bare repository
 * beneath a root is noted, and `*bare` says so. What the process cannot
 * change, `rel` being `st`. JPT_ERR_NOMEM. */
int jpt__repos_note(jpt__repos *r, const char *rel, const char *name);
int jpt__repos_note_dir(jpt__repos *r, const char *rel, unsigned marks, bool *bare);
int jpt__repos_covered(jpt__repos *r, const char *rel, const struct stat *st);
/* The walk's stamps (jpt__walk_stamp_into), which let a sweep see that
 * nothing changed and walk nothing. */
jpt__walk_stamps *jpt__repos_stamps(jpt__repos *r);
/* Noted all: the sets are sorted. */
void jpt__repos_seal(jpt__repos *r);

/* The sweep after the process (`r` sealed; it takes a reference): a walk
 * of the writable roots (at most `max_entries`) finds each .git that was
 * not there and the HEAD of each bare repository that was not one (git
 * takes no directory without one), and moves each aside in its
 * directory, to "<name>.jptool-quarantine" (-2, -3, …): git no longer
 * finds the repository, and nothing is deleted (the sweep cannot tell a
 * repository the user made meanwhile from the process's). NULL in
 * `*out` when there is nothing to sweep (no root, or every stamped
 * directory as it was). JPT_ERR_NOMEM. */
typedef struct jpt__repo_sweep jpt__repo_sweep;
int jpt__repo_sweep_new(jpt__repos *r, size_t max_entries, jpt__repo_sweep **out);
/* Sweeps on for about `budget_ns` (0: to the end): 1 when there is more,
 * 0 when done, or JPT_ERR_LIMIT (more entries than the bound: nothing was
 * moved; `err` says "more than N entries"), JPT_ERR_NOMEM. */
int jpt__repo_sweep_step(jpt__repo_sweep *s, uint64_t budget_ns, jpt__errbuf *err);
/* What was moved aside, "a/.git (now a/.git.jptool-quarantine), …" (`*n`
 * of them), and whether something found could not be. */
const char *jpt__repo_sweep_moved(const jpt__repo_sweep *s, size_t *n, bool *failed);
void jpt__repo_sweep_free(jpt__repo_sweep *s);

/* ---- ns.c ------------------------------------------------------------------------ */

/* The namespaces of a sandbox and what the child does in them (ns.c's
 * header comment). The lists are NULL-terminated, or NULL. */
typedef struct jpt__ns_plan {
    bool mounts;               /* a mount namespace */
    bool pid;                  /* a PID namespace (with or without mounts;
                                  neither: no namespace at all) */
    char pid_max[16];          /* its pid_max, the bound on its processes
                                  (jpt__ns_pid_max_here); "": none */
    bool user;                 /* a user namespace too (a host without
                                  CAP_SYS_ADMIN), mapping: */
    char uid_map[32], gid_map[32]; /* "<id> <id> 1" */
    const char *const *writable;  /* mounted writable (the rest read-only) */
    const char *const *read_only; /* within them, read-only again */
    const char *const *hide;      /* covered by an empty directory or file */
    const bool *hide_dir;
    const char *const *pin;       /* mounted on themselves: not renamed */
    const uint64_t *pin_ids;
    const uint64_t *read_only_ids, *hide_ids; /* (device, inode) per path,
                                     or NULL: what each must still be
                                     (a pair of 0: not checked) */
    bool private_tmp;             /* a tmpfs of its own on /tmp, granted
                                     `tmp_access` in `ruleset` (-1: none) */
    const char *const *tmp_keep;  /* granted paths below /tmp, kept there */
    const char *tmp_dir;          /* a directory bound on /tmp instead of a
                                     tmpfs (writable; the ruleset grants
                                     /tmp already) */
    const char *tmp_remake;       /* the workspace, below /tmp and not kept
                                     (its root is not readable): made anew
                                     there, read-only, the kept paths
                                     beneath it; the child enters it by
                                     its path (jpt__sandbox_remade) */
    uint64_t tmp_access;
    int ruleset;
    /* A view made once and kept (jpt__ns_keep): the child enters these
     * namespaces (setns) instead of making its own; -1: none. */
    int enter_mnt, enter_user;
} jpt__ns_plan;

/* CLONE_NEW* for `p`. */
int jpt__ns_clone_flags(const jpt__ns_plan *p);
/* Whether this kernel has a pid_max per PID namespace (Linux 6.14). */
bool jpt__ns_pid_max_here(void);
/* The child's side; as jpt__sandbox_enter_in_child. */
int jpt__ns_enter_in_child(const jpt__ns_plan *p, const char **step, const char **path);
/* Whether a child can carry out `p` here (it tries, with /dev/null as a
 * path to hide); else false and `why` says what failed. */
bool jpt__ns_probe(const jpt__ns_plan *p, char *why, size_t n);
/* Carries out `p` (without its PID namespace) once, in a helper
 * child, and keeps its namespaces: `*mnt` (and `*user`, when `p->user`;
 * else -1) are fds for later children to enter, so that they make no
 * mounts of their own and leave none to tear down. JPT_OK, or
 * JPT_ERR_IO with `why` saying what failed. */
int jpt__ns_keep(const jpt__ns_plan *p, int *mnt, int *user, char *why, size_t n);

/* ---- For tests ------------------------------------------------------------------- */

/* Makes jpt__sandbox_prepare act as on a kernel with Landlock ABI
 * `max_abi` at most (0: none) and, with `no_seccomp`, without seccomp
 * filters, so that the modes can be tested on any kernel. -1 restores
 * the kernel's. Process-wide and not thread-safe: tests only, set while no
 * other thread prepares a sandbox. */
void jpt__sandbox_test_limit(int max_abi, bool no_seccomp);
/* The same for namespaces: with `none`, prepare acts as on a host that
 * cannot make any. */
void jpt__sandbox_test_no_namespaces(bool none);

#endif /* JPT_LIB_SANDBOX_H */
