/* Containment (process.h, "Containment"): the mode a registry runs its
 * children in; in CGROUP mode the cgroup of each child, made before it
 * starts and removed once its last process is gone; in SUBREAPER mode the
 * mark each child carries, and the orphans found by it, killed and reaped. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "process/process.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* Empty cgroups kept for the next children: making and removing one costs
 * more than the rest of a short tool's spawn (bench-registry). Every
 * cgroup found empty joins the pool; past POOL_SIZE, the pool is trimmed
 * once it has not been needed for TRIM_DELAY_MS, a slice of TRIM_NS at a
 * time. Removing a cgroup (tens of microseconds of the kernel's) is not
 * done on the path from a child's exit to its answer, where it made the
 * cost of a stop grow with the number of handles (issue 18). */
#define POOL_SIZE 16
#define TRIM_DELAY_MS 200
#define TRIM_NS 1000000u

/* How long removing a cgroup, or reaping an orphan, may block: their
 * processes were sent SIGKILL already, so only one stuck in the kernel (a
 * dead NFS mount) takes this long. */
#define BLOCKING_WAIT_MS 5000

/* A cgroup whose child was reaped while other processes of it were still
 * exiting: removed once cgroup.events says it is empty. */
typedef struct retiring {
    jpt__contain *ct;
    uint64_t number;
    int events; /* its cgroup.events */
    jpt__watch watch;
    struct retiring *next, *prev;
} retiring;

/* An orphan that was sent SIGKILL, until it is reaped. */
typedef struct orphan {
    jpt__contain *ct;
    int pidfd;
    bool exited;
    jpt__watch watch; /* until it has exited */
    struct orphan *next, *prev;
} orphan;

struct jpt__contain {
    jpt__loop *loop;
    int mode;
    pid_t host;
    uint64_t token;  /* random: tells this registry's cgroups and marks from
                        those of others in the same process */
    int cgroups;     /* CGROUP: the host's cgroup directory */
    jpt__buf cgroups_path; /* …and its path, for the state file */
    bool pids;       /* CGROUP: its children have pids.max */
    uint64_t count;  /* children contained so far: numbers them */
    char mark[40];   /* SUBREAPER: "JPTOOL_CONTAIN_<token>=", every mark's start */
    uint64_t *pool;  /* CGROUP: empty cgroups, by number */
    size_t npool, cap_pool;
    jpt__timer trim_timer;
    retiring *retiring;
    orphan *orphans;
};

/* The prefix of the names the host of `ct` gives its cgroups, which the
 * state file records (jpt__contain_stale_record). */
static void cgroup_prefix(const jpt__contain *ct, char *out, size_t n)
{
    snprintf(out, n, "jptool-%d-%08" PRIx32 "-", (int)ct->host, (uint32_t)ct->token);
}

static void cgroup_name(const jpt__contain *ct, uint64_t number, char *out, size_t n)
{
    char prefix[48];

    cgroup_prefix(ct, prefix, sizeof(prefix));
    snprintf(out, n, "%s%" PRIu64, prefix, number);
}

/* ---- CGROUP ------------------------------------------------------------------- */

/* A new cgroup under the host's, numbered `*number`. A name left behind by
 * an earlier process (of the same pid and token) is passed over. */
static int make_cgroup(jpt__contain *ct, uint64_t *number, jpt__errbuf *err)
{
    char name[64];

    for (int tries = 0;; tries++) {
        *number = ++ct->count;
        cgroup_name(ct, *number, name, sizeof(name));
        if (mkdirat(ct->cgroups, name, 0755) == 0)
            return JPT_OK;
        if (errno != EEXIST || tries == 64)
            return jpt__err(err, JPT_ERR_IO, "making the cgroup %s: %s", name,
                            strerror(errno));
    }
}

/* The name of the first directory in `dir`, into `out`: 1, 0 when it
 * holds none, -1 with errno. */
static int first_subdir(int dir, char out[NAME_MAX + 1])
{
    int fd = dup(dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *e;
    int found = 0;

    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    while (found == 0 && (e = readdir(d)) != NULL)
        if (e->d_type == DT_DIR && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(out, NAME_MAX + 1, "%s", e->d_name);
            found = 1;
        }
    closedir(d);
    return found;
}

/* Removes one cgroup without children beneath parent/name (name itself
 * when it has none): 0, or -1 with errno (EBUSY when a process is in it). */
static int remove_a_leaf(int parent, const char *name)
{
    char names[2][NAME_MAX + 1];
    int up = dup(parent), cur = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = -1, at = 0;

    snprintf(names[0], sizeof(names[0]), "%s", name);
    while (up >= 0 && cur >= 0) {
        int found = first_subdir(cur, names[1 - at]);
        if (found <= 0) {
            rc = found < 0 ? -1 : unlinkat(up, names[at], AT_REMOVEDIR);
            break;
        }
        close(up);
        up = cur;
        at = 1 - at;
        cur = openat(up, names[at], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    int saved = errno;
    if (up >= 0)
        close(up);
    if (cur >= 0)
        close(cur);
    errno = saved;
    return rc;
}

/* rmdir of the cgroup and of any it holds (a tool may have made its own):
 * 0, or -1 with errno (EBUSY while a process is in it). Without recursion
 * (issue 15 §1: a tool that can write its cgroup decides how deep it
 * nests): the deepest cgroups go first, one at a time, with two fds open. */
static int remove_tree(int parent, const char *name)
{
    for (;;) {
        if (unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -1;
        /* Busy: it holds cgroups (removed next), or processes (EBUSY). One
         * that vanished meanwhile is looked for again. */
        if (remove_a_leaf(parent, name) < 0 && errno != ENOENT)
            return -1;
    }
}

/* SIGKILL to every process of the cgroup `name` under `parent`. */
static void kill_cgroup_named(int parent, const char *name)
{
    int dir = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (dir < 0 || jpt__cgroup_kill(dir) < 0)
        jpt__log(JPT_LOG_WARNING, "killing the processes of cgroup %s: %s", name,
                 strerror(errno));
    if (dir >= 0)
        close(dir);
}

static void kill_cgroup(jpt__contain *ct, uint64_t number)
{
    char name[64];

    cgroup_name(ct, number, name, sizeof(name));
    kill_cgroup_named(ct->cgroups, name);
}

/* Blocks until the cgroup `name` under `parent` is empty and removed, or
 * `timeout_ms` passes; `events` is its cgroup.events, or -1. False when it
 * is left behind (logged). */
static bool remove_when_empty(int parent, const char *name, int events, int timeout_ms)
{
    uint64_t deadline = jpt__loop_deadline_ms(timeout_ms);

    while (remove_tree(parent, name) < 0) {
        uint64_t now = jpt__loop_now();
        if (errno != EBUSY || now >= deadline) {
            jpt__log(JPT_LOG_WARNING, "the cgroup %s is left behind: %s", name,
                     strerror(errno));
            return false;
        }
        int wait = (int)((deadline - now + 999999u) / 1000000u);
        /* Reading cgroup.events arms it: poll reports the next change. */
        if (events >= 0 && jpt__cgroup_populated(events) == 1) {
            struct pollfd p = {.fd = events, .events = POLLPRI};
            poll(&p, 1, wait);
        } else {
            /* No file to wait on: its processes were sent SIGKILL, and are
             * gone in a moment. */
            struct timespec pause = {0, 1000000};
            nanosleep(&pause, NULL);
        }
    }
    return true;
}

static void remove_numbered_when_empty(jpt__contain *ct, uint64_t number, int events,
                                       int timeout_ms)
{
    char name[64];

    cgroup_name(ct, number, name, sizeof(name));
    remove_when_empty(ct->cgroups, name, events, timeout_ms);
}

static void retired(retiring *rt)
{
    jpt__loop_watch_stop(rt->ct->loop, &rt->watch);
    close(rt->events);
    JPT__LIST_REMOVE(rt->ct->retiring, rt);
    jpt__free(rt);
}

/* The cgroup is removed once cgroup.events says that its last process is
 * gone (the kernel signals EPOLLPRI when `populated` changes); rmdir fails
 * with EBUSY until then. */
static void check_retiring(retiring *rt)
{
    char name[64];

    if (jpt__cgroup_populated(rt->events) == 1)
        return;
    cgroup_name(rt->ct, rt->number, name, sizeof(name));
    if (remove_tree(rt->ct->cgroups, name) < 0)
        jpt__log(JPT_LOG_WARNING, "removing the cgroup %s: %s", name, strerror(errno));
    retired(rt);
}

static void on_cgroup_events(jpt__watch *w, uint32_t events)
{
    (void)events;
    check_retiring(w->ud);
}

/* Watches the cgroup, whose processes were sent SIGKILL, until it can be
 * removed; without the memory or an fd to watch it with, waits here. */
static void retire(jpt__contain *ct, uint64_t number)
{
    char path[96];
    retiring *rt = jpt__calloc(1, sizeof(*rt));
    int events = -1;

    cgroup_name(ct, number, path, sizeof(path));
    strcat(path, "/cgroup.events");
    if (rt == NULL || (events = openat(ct->cgroups, path, O_RDONLY | O_CLOEXEC)) < 0 ||
        jpt__loop_watch_start(ct->loop, &rt->watch, events, EPOLLPRI, on_cgroup_events, rt) < 0) {
        jpt__free(rt);
        remove_numbered_when_empty(ct, number, events, BLOCKING_WAIT_MS);
        if (events >= 0)
            close(events);
        return;
    }
    rt->ct = ct;
    rt->number = number;
    rt->events = events;
    JPT__LIST_PUSH(ct->retiring, rt);
    /* It may have emptied before the watch began, and then no event comes. */
    check_retiring(rt);
}

/* Removes the cgroups of the pool past POOL_SIZE, the last ones first,
 * for a slice; the rest at a later dispatch. */
static void on_trim(jpt__timer *t)
{
    jpt__contain *ct = t->ud;
    uint64_t until = jpt__loop_now() + TRIM_NS;
    char name[64];

    while (ct->npool > POOL_SIZE && jpt__loop_now() < until) {
        cgroup_name(ct, ct->pool[--ct->npool], name, sizeof(name));
        if (remove_tree(ct->cgroups, name) < 0)
            jpt__log(JPT_LOG_WARNING, "removing the cgroup %s: %s", name, strerror(errno));
    }
    if (ct->npool > POOL_SIZE &&
        jpt__loop_timer_start(ct->loop, &ct->trim_timer, jpt__loop_now()) < 0)
        on_trim(t);
}

/* Keeps an empty cgroup for a later child; false without the memory. */
static bool pool_cgroup(jpt__contain *ct, uint64_t number)
{
    uint64_t *grown = jpt__array_reserve(ct->pool, &ct->cap_pool, ct->npool + 1,
                                         sizeof(*grown), POOL_SIZE);

    if (grown == NULL)
        return false;
    ct->pool = grown;
    ct->pool[ct->npool++] = number;
    /* The trim waits for a quiet moment: a burst of handles that ends
     * leaves its cgroups to the next. */
    if (ct->npool > POOL_SIZE &&
        jpt__loop_timer_start(ct->loop, &ct->trim_timer, jpt__loop_deadline_ms(TRIM_DELAY_MS)) < 0)
        on_trim(&ct->trim_timer);
    return true;
}

/* After the child is reaped its cgroup is usually empty: it goes back to
 * the pool for the next child (no process can enter an empty cgroup but
 * by a privileged move). A process left in it is killed, and the cgroup
 * retired. */
static void release_cgroup(jpt__contain *ct, uint64_t number)
{
    char name[96];
    int populated = -1;

    cgroup_name(ct, number, name, sizeof(name));
    size_t n = strlen(name);
    strcat(name, "/cgroup.events");
    int events = openat(ct->cgroups, name, O_RDONLY | O_CLOEXEC);
    name[n] = '\0';
    if (events >= 0) {
        populated = jpt__cgroup_populated(events);
        close(events);
    }
    if (populated == 0 && pool_cgroup(ct, number))
        return;
    if (unlinkat(ct->cgroups, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
        return;
    if (errno != EBUSY) {
        jpt__log(JPT_LOG_WARNING, "removing the cgroup %s: %s", name, strerror(errno));
        return;
    }
    kill_cgroup(ct, number);
    retire(ct, number);
}

/* The host's cgroup must let this process make a child cgroup and move a
 * process into it (which needs write access to the cgroup.procs of the
 * common ancestor: the host's cgroup). */
static int open_cgroups(jpt__contain *ct, jpt__errbuf *err)
{
    char name[64];
    uint64_t number;
    int rc;

    if ((ct->cgroups = jpt__cgroup_open_host(&ct->cgroups_path, err)) < 0) {
        rc = ct->cgroups;
        ct->cgroups = -1;
        return rc;
    }
    if (faccessat(ct->cgroups, "cgroup.procs", W_OK, AT_EACCESS) < 0)
        return jpt__err(err, JPT_ERR_UNSUPPORTED,
                        "the host's cgroup does not let this process move processes "
                        "(cgroup.procs: %s)",
                        strerror(errno));
    if ((rc = make_cgroup(ct, &number, err)) < 0) {
        jpt__errbuf why = *err;
        return jpt__err(err, JPT_ERR_UNSUPPORTED, "the host's cgroup does not let this "
                                                  "process make cgroups under it: %s",
                        why.text);
    }
    cgroup_name(ct, number, name, sizeof(name));
    unlinkat(ct->cgroups, name, AT_REMOVEDIR);
    ct->pids = jpt__cgroup_has_controller(ct->cgroups, "pids");
    return JPT_OK;
}

/* ---- What a crashed host left (jpt_registry_reap_stale) ----------------------------
 * A host that exits without freeing its registry (a crash, SIGKILL) leaves
 * its cgroups: the empty ones kept for later handles, and those whose
 * processes got away from the end of the host's children (PDEATHSIG ends
 * the tools themselves). The state file records where they are. */

int jpt__contain_stale_record(const jpt__contain *ct, jpt__buf *out)
{
    char prefix[64];

    if (ct->mode != JPT__CONTAIN_CGROUP)
        return JPT_OK;
    cgroup_prefix(ct, prefix, sizeof(prefix));
    return jpt__buf_printf(out, "cgroups %s %s\n", prefix, ct->cgroups_path.data);
}

/* "jptool-<pid>-<8 hex digits>-": a record that names anything else is
 * not followed (a state file is not trusted to choose what gets killed). */
static bool valid_prefix(const char *p)
{
    size_t digits = 0, hex = 0;

    if (strncmp(p, "jptool-", 7) != 0)
        return false;
    for (p += 7; *p >= '0' && *p <= '9'; p++)
        digits++;
    if (digits == 0 || *p++ != '-')
        return false;
    for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
        hex++;
    return hex == 8 && p[0] == '-' && p[1] == '\0';
}

bool jpt__contain_stale_parse(char *line, const char **prefix, const char **dir)
{
    if (strncmp(line, "cgroups ", 8) != 0)
        return false;
    char *p = line + 8, *space = strchr(p, ' ');
    if (space == NULL)
        return false;
    *space = '\0';
    *prefix = p;
    *dir = space + 1;
    return valid_prefix(*prefix) && (*dir)[0] == '/';
}

/* The cgroup2 directory `dir`, opened; -1 with errno (ENOENT for one that
 * is gone or is not a cgroup2 one). */
static int open_cgroup_dir(const char *dir)
{
    struct statfs fs;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd >= 0 && (fstatfs(fd, &fs) < 0 || fs.f_type != CGROUP2_SUPER_MAGIC)) {
        close(fd);
        errno = ENOENT;
        return -1;
    }
    return fd;
}

/* The processes in the cgroup `name` and those below it. */
static size_t count_processes(int parent, const char *name)
{
    char buf[4096];
    size_t n = 0;
    int dir = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int procs = dir >= 0 ? openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC) : -1;

    for (ssize_t got; procs >= 0 && (got = read(procs, buf, sizeof(buf))) > 0;)
        for (ssize_t i = 0; i < got; i++)
            n += buf[i] == '\n';
    if (procs >= 0)
        close(procs);
    DIR *d = dir >= 0 ? fdopendir(dir) : NULL;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        if (e->d_type == DT_DIR && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n += count_processes(dirfd(d), e->d_name);
    if (d != NULL)
        closedir(d);
    else if (dir >= 0)
        close(dir);
    return n;
}

int jpt__contain_reap_stale(const char *dir, const char *prefix, size_t *killed,
                            jpt__errbuf *err)
{
    size_t n = strlen(prefix);
    int rc = JPT_OK, fd = open_cgroup_dir(dir);

    if (fd < 0)
        return errno == ENOENT ? JPT_OK
                               : jpt__err(err, JPT_ERR_IO, "opening the cgroup %s: %s", dir,
                                          strerror(errno));
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return jpt__err(err, JPT_ERR_IO, "reading the cgroup %s: %s", dir, strerror(errno));
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_type != DT_DIR || strncmp(e->d_name, prefix, n) != 0)
            continue;
        char events_path[300];
        snprintf(events_path, sizeof(events_path), "%s/cgroup.events", e->d_name);
        *killed += count_processes(dirfd(d), e->d_name);
        kill_cgroup_named(dirfd(d), e->d_name);
        int events = openat(dirfd(d), events_path, O_RDONLY | O_CLOEXEC);
        if (!remove_when_empty(dirfd(d), e->d_name, events, BLOCKING_WAIT_MS) && rc == JPT_OK)
            rc = jpt__err(err, JPT_ERR_IO, "the cgroup %s/%s is left behind: %s", dir,
                          e->d_name, strerror(errno));
        if (events >= 0)
            close(events);
    }
    closedir(d);
    return rc;
}

int jpt__contain_stale_left(const char *dir, const char *prefix)
{
    size_t n = strlen(prefix);
    int fd = open_cgroup_dir(dir), left = 0;

    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return -1;
    }
    for (struct dirent *e; left == 0 && (e = readdir(d)) != NULL;)
        left = e->d_type == DT_DIR && strncmp(e->d_name, prefix, n) == 0;
    closedir(d);
    return left;
}

/* ---- SUBREAPER ----------------------------------------------------------------- */

/* Every process, as /proc says: pid, parent, session, start time. */
typedef struct proc_entry {
    pid_t pid;
    jpt__proc_stat st;
    int pidfd;   /* once taken (stopped, to be killed) */
    int marked;  /* has_mark, once asked: 1 or 0; -1 before */
} proc_entry;

typedef struct proc_table {
    proc_entry *v;
    size_t n, cap;
} proc_table;

static int scan_processes(proc_table *t)
{
    DIR *proc = opendir("/proc");
    struct dirent *d;

    t->n = 0;
    if (proc == NULL)
        return JPT_ERR_IO;
    while ((d = readdir(proc)) != NULL) {
        char *end;
        long pid = strtol(d->d_name, &end, 10);
        jpt__proc_stat st;
        if (*end != '\0' || pid <= 1 || !jpt__process_stat((pid_t)pid, &st))
            continue;
        proc_entry *grown = jpt__array_reserve(t->v, &t->cap, t->n + 1, sizeof(*grown), 256);
        if (grown == NULL) {
            closedir(proc);
            return JPT_ERR_NOMEM;
        }
        t->v = grown;
        t->v[t->n++] = (proc_entry){(pid_t)pid, st, -1, -1};
    }
    closedir(proc);
    return JPT_OK;
}

static bool has_pid(const pid_t *pids, size_t n, pid_t pid)
{
    for (size_t i = 0; pid > 0 && i < n; i++)
        if (pids[i] == pid)
            return true;
    return false;
}

/* Whether the environment process `pid` was started with holds the mark of
 * one of `cds`: "JPTOOL_CONTAIN_<token>=<number>". (A process that calls
 * unsetenv keeps the original block /proc shows; only an execve with
 * another environment loses it.) */
static bool has_mark(const jpt__contain *ct, pid_t pid, jpt__contained *const *cds, size_t n)
{
    char path[64], buf[65536];
    size_t mark_len = strlen(ct->mark), have = 0;
    bool found = false;

    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    /* Entry by entry; one cut by the end of a read moves to the front. */
    for (;;) {
        ssize_t got = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        have += (size_t)got;
        char *entry = buf, *end;
        while ((end = memchr(entry, '\0', have - (size_t)(entry - buf))) != NULL) {
            if ((size_t)(end - entry) > mark_len && memcmp(entry, ct->mark, mark_len) == 0) {
                uint64_t number = strtoull(entry + mark_len, NULL, 10);
                for (size_t i = 0; i < n; i++)
                    found |= cds[i]->number == number;
            }
            entry = end + 1;
        }
        have -= (size_t)(entry - buf);
        memmove(buf, entry, have);
        /* An entry longer than the buffer is not a mark: skipped. */
        if (have == sizeof(buf) - 1)
            have = 0;
    }
    close(fd);
    return found;
}

/* Takes process `e` to be killed: a pidfd (checked to be the process the
 * scan saw, by its start time), and SIGSTOP, so that it forks nothing
 * more and its children stay where the next scan finds them. */
static bool take(proc_entry *e)
{
    jpt__proc_stat now;

    e->pidfd = (int)syscall(SYS_pidfd_open, e->pid, 0);
    if (e->pidfd < 0) {
        /* Out of fds: killed by its pid, and left for the host to reap. */
        if (errno == EMFILE || errno == ENFILE)
            kill(e->pid, SIGKILL);
        return false;
    }
    if (!jpt__process_stat(e->pid, &now) || now.start != e->st.start) {
        close(e->pidfd);
        e->pidfd = -1;
        return false;
    }
    syscall(SYS_pidfd_send_signal, e->pidfd, SIGSTOP, NULL, 0);
    return true;
}

static void on_orphan(jpt__watch *w, uint32_t events);
static void reap_orphans(jpt__contain *ct);

/* Keeps a killed process's pidfd until it is reaped. Without memory or a
 * watch it is given up (it stays a zombie of the host). */
static void add_orphan(jpt__contain *ct, int pidfd)
{
    orphan *o = jpt__calloc(1, sizeof(*o));

    if (o == NULL || jpt__loop_watch_start(ct->loop, &o->watch, pidfd, EPOLLIN, on_orphan, o) < 0) {
        jpt__log(JPT_LOG_WARNING, "an orphan of a tool cannot be followed: it is left "
                                  "unreaped");
        jpt__free(o);
        close(pidfd);
        return;
    }
    o->ct = ct;
    o->pidfd = pidfd;
    JPT__LIST_PUSH(ct->orphans, o);
}

/* Finds every process of the children that is still around and kills it:
 * those in a child's session (`leaders`, while their ids are reserved by
 * the unreaped leaders) or carrying a child's mark, among the host's
 * children, where orphans come to (the host is a subreaper); the leaders
 * themselves; and everything below them. Each found is stopped first and
 * the table scanned again, until a scan finds nothing new: a process
 * forked meanwhile is then found below its stopped parent. Then all are
 * sent SIGKILL; all but the leaders become orphans to reap. */
static void kill_orphans(jpt__contain *ct, jpt__contained *const *cds, const pid_t *leaders,
                         size_t n)
{
    proc_table t = {NULL, 0, 0};
    pid_t *taken = NULL;
    int *pidfds = NULL;
    size_t ntaken = 0, cap_taken = 0, cap_pidfds = 0;
    bool found = true;

    while (found && scan_processes(&t) == JPT_OK) {
        found = false;
        /* Parents before children is not the table's order: repeat until
         * no entry joins. */
        for (bool more = true; more;) {
            more = false;
            for (size_t i = 0; i < t.n; i++) {
                proc_entry *e = &t.v[i];
                if (has_pid(taken, ntaken, e->pid))
                    continue;
                if (e->marked < 0 && e->st.ppid == ct->host)
                    e->marked = has_mark(ct, e->pid, cds, n);
                bool ours = has_pid(leaders, n, e->pid) || has_pid(taken, ntaken, e->st.ppid) ||
                            has_pid(leaders, n, e->st.ppid) ||
                            has_pid(leaders, n, e->st.session) || e->marked == 1;
                if (!ours || !take(e))
                    continue;
                pid_t *grown_taken =
                    jpt__array_reserve(taken, &cap_taken, ntaken + 1, sizeof(*taken), 16);
                int *grown_fds =
                    jpt__array_reserve(pidfds, &cap_pidfds, ntaken + 1, sizeof(*pidfds), 16);
                if (grown_taken != NULL)
                    taken = grown_taken;
                if (grown_fds != NULL)
                    pidfds = grown_fds;
                if (grown_taken == NULL || grown_fds == NULL) {
                    /* Without memory to remember it, killed at once. */
                    syscall(SYS_pidfd_send_signal, e->pidfd, SIGKILL, NULL, 0);
                    close(e->pidfd);
                    continue;
                }
                taken[ntaken] = e->pid;
                pidfds[ntaken++] = e->pidfd;
                found = more = true;
            }
        }
    }
    for (size_t i = 0; i < ntaken; i++) {
        syscall(SYS_pidfd_send_signal, pidfds[i], SIGKILL, NULL, 0);
        if (has_pid(leaders, n, taken[i]))
            close(pidfds[i]); /* reaped by process.c */
        else
            add_orphan(ct, pidfds[i]);
    }
    jpt__free(t.v);
    jpt__free(taken);
    jpt__free(pidfds);
}

/* An orphan is reaped once it has exited and is the host's child: one that
 * exited below another killed process is reparented to the host when that
 * one exits, and is reaped at that one's event. One the host reaped itself
 * (waitpid(-1)) is gone: a signal to it fails with ESRCH. */
static bool reap_orphan(orphan *o)
{
    siginfo_t info;

    memset(&info, 0, sizeof(info));
    if (waitid((idtype_t)P_PIDFD, (id_t)o->pidfd, &info, WEXITED | WNOHANG | __WALL) == 0 &&
        info.si_pid != 0)
        return true;
    return syscall(SYS_pidfd_send_signal, o->pidfd, 0, NULL, 0) < 0 && errno == ESRCH;
}

static void reap_orphans(jpt__contain *ct)
{
    orphan *next;

    for (orphan *o = ct->orphans; o != NULL; o = next) {
        next = o->next;
        if (!o->exited || !reap_orphan(o))
            continue;
        close(o->pidfd);
        JPT__LIST_REMOVE(ct->orphans, o);
        jpt__free(o);
    }
}

static void on_orphan(jpt__watch *w, uint32_t events)
{
    orphan *o = w->ud;

    (void)events;
    /* Level-triggered, and readable for good once it has exited. */
    jpt__loop_watch_stop(o->ct->loop, &o->watch);
    o->exited = true;
    reap_orphans(o->ct);
}

/* Blocks until every orphan is reaped, or the time is up. */
static void reap_orphans_blocking(jpt__contain *ct)
{
    uint64_t deadline = jpt__loop_deadline_ms(BLOCKING_WAIT_MS);

    for (;;) {
        size_t n = 0;
        for (orphan *o = ct->orphans; o != NULL; o = o->next)
            n += !o->exited;
        uint64_t now = jpt__loop_now();
        if (n == 0 || now >= deadline)
            break;
        struct pollfd *fds = jpt__calloc(n, sizeof(*fds));
        if (fds == NULL)
            break;
        n = 0;
        for (orphan *o = ct->orphans; o != NULL; o = o->next)
            if (!o->exited)
                fds[n++] = (struct pollfd){.fd = o->pidfd, .events = POLLIN};
        poll(fds, n, (int)((deadline - now + 999999u) / 1000000u));
        n = 0;
        for (orphan *o = ct->orphans; o != NULL; o = o->next)
            if (!o->exited && fds[n++].revents != 0) {
                jpt__loop_watch_stop(ct->loop, &o->watch);
                o->exited = true;
            }
        jpt__free(fds);
        reap_orphans(ct);
    }
    reap_orphans(ct);
    if (ct->orphans != NULL)
        jpt__log(JPT_LOG_WARNING, "orphans of tools are left unreaped");
    while (ct->orphans != NULL) {
        orphan *o = ct->orphans;
        jpt__loop_watch_stop(ct->loop, &o->watch);
        close(o->pidfd);
        JPT__LIST_REMOVE(ct->orphans, o);
        jpt__free(o);
    }
}

/* Orphans are held by pidfds (pidfd_open, Linux 5.3), so that a pid the
 * host reaped and the system reused is never signalled or reaped. */
static int start_subreaper(jpt__contain *ct, jpt__errbuf *err)
{
    int self = (int)syscall(SYS_pidfd_open, ct->host, 0);

    if (self < 0)
        return jpt__err(err, JPT_ERR_UNSUPPORTED, "subreaper containment needs pidfd_open: %s",
                        strerror(errno));
    close(self);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        return jpt__err(err, JPT_ERR_IO, "prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
    snprintf(ct->mark, sizeof(ct->mark), "JPTOOL_CONTAIN_%016" PRIx64 "=", ct->token);
    return JPT_OK;
}

/* The environment `envp` with the child's mark added, in one allocation. */
static int marked_environment(const jpt__contain *ct, uint64_t number, char *const *envp,
                              char ***out)
{
    size_t n = 0;

    while (envp[n] != NULL)
        n++;
    size_t pointers = (n + 2) * sizeof(char *);
    char **env = jpt__malloc(pointers + sizeof(ct->mark) + 24);
    if (env == NULL)
        return JPT_ERR_NOMEM;
    char *mark = (char *)env + pointers;
    snprintf(mark, sizeof(ct->mark) + 24, "%s%" PRIu64, ct->mark, number);
    memcpy(env, envp, n * sizeof(char *));
    env[n] = mark;
    env[n + 1] = NULL;
    *out = env;
    return JPT_OK;
}

/* ---- The object and process.c's side ------------------------------------------ */

int jpt__contain_new(jpt__loop *l, int mode, jpt__contain **out, jpt__errbuf *err)
{
    int rc = JPT_OK;

    *out = NULL;
    if (mode < JPT__CONTAIN_AUTO || mode > JPT__CONTAIN_SESSION)
        return jpt__err(err, JPT_ERR_INVALID, "no containment mode %d", mode);
    jpt__contain *ct = jpt__calloc(1, sizeof(*ct));
    if (ct == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory");
    ct->loop = l;
    ct->mode = mode;
    ct->host = getpid();
    ct->cgroups = -1;
    jpt__loop_timer_init(&ct->trim_timer, on_trim, ct);
    if (getrandom(&ct->token, sizeof(ct->token), GRND_NONBLOCK) != (ssize_t)sizeof(ct->token))
        ct->token = jpt__loop_now() ^ ((uint64_t)ct->host << 32) ^ (uint64_t)(uintptr_t)ct;
    if (mode == JPT__CONTAIN_AUTO || mode == JPT__CONTAIN_CGROUP) {
        rc = open_cgroups(ct, err);
        if (rc == JPT_OK)
            ct->mode = JPT__CONTAIN_CGROUP;
        else if (mode == JPT__CONTAIN_AUTO && rc != JPT_ERR_NOMEM) {
            jpt__log(JPT_LOG_INFO, "children are contained by session only: %s", err->text);
            ct->mode = JPT__CONTAIN_SESSION;
            if (ct->cgroups >= 0)
                close(ct->cgroups);
            ct->cgroups = -1;
            rc = JPT_OK;
        }
    } else if (mode == JPT__CONTAIN_SUBREAPER)
        rc = start_subreaper(ct, err);
    if (rc < 0) {
        jpt__contain_free(ct);
        return rc;
    }
    *out = ct;
    return JPT_OK;
}

int jpt__contain_mode(const jpt__contain *ct)
{
    return ct->mode;
}

bool jpt__contain_has_cgroups(const jpt__contain *ct)
{
    return ct != NULL && ct->mode == JPT__CONTAIN_CGROUP;
}

bool jpt__contain_bounds_pids(const jpt__contain *ct)
{
    return jpt__contain_has_cgroups(ct) && ct->pids;
}

bool jpt__contain_wants_pid_namespace(const jpt__contain *ct)
{
    return !jpt__contain_has_cgroups(ct) ||
           (!jpt__contain_bounds_pids(ct) && jpt__ns_pid_max_here());
}

int jpt__contain_bound(jpt__contained *cd, unsigned max, jpt__errbuf *err)
{
    char path[96], value[16];

    cgroup_name(cd->ct, cd->number, path, sizeof(path));
    strcat(path, "/pids.max");
    int n = max > 0 ? snprintf(value, sizeof(value), "%u", max)
                    : snprintf(value, sizeof(value), "max");
    int fd = openat(cd->ct->cgroups, path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, value, (size_t)n) != n) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return jpt__err(err, JPT_ERR_IO, "writing %s: %s", path, strerror(e));
    }
    close(fd);
    return JPT_OK;
}

void jpt__contain_free(jpt__contain *ct)
{
    char name[64];

    if (ct == NULL)
        return;
    jpt__loop_timer_stop(ct->loop, &ct->trim_timer);
    while (ct->npool > 0) {
        cgroup_name(ct, ct->pool[--ct->npool], name, sizeof(name));
        if (remove_tree(ct->cgroups, name) < 0)
            jpt__log(JPT_LOG_WARNING, "removing the cgroup %s: %s", name, strerror(errno));
    }
    jpt__free(ct->pool);
    while (ct->retiring != NULL) {
        retiring *rt = ct->retiring;
        remove_numbered_when_empty(ct, rt->number, rt->events, BLOCKING_WAIT_MS);
        retired(rt);
    }
    reap_orphans_blocking(ct);
    if (ct->cgroups >= 0)
        close(ct->cgroups);
    jpt__buf_free(&ct->cgroups_path);
    jpt__free(ct);
}

int jpt__contain_prepare(jpt__contain *ct, jpt__contained *cd, char *const *envp,
                         char ***envp_out, int *join, jpt__errbuf *err)
{
    char path[96];
    int rc;

    cd->ct = NULL;
    cd->number = 0;
    *envp_out = NULL;
    *join = -1;
    if (ct->mode == JPT__CONTAIN_SUBREAPER) {
        cd->number = ++ct->count;
        if ((rc = marked_environment(ct, cd->number, envp, envp_out)) < 0)
            return jpt__err(err, rc, "out of memory marking the environment");
        cd->ct = ct;
        return JPT_OK;
    }
    if (ct->mode != JPT__CONTAIN_CGROUP)
        return JPT_OK;
    if (ct->npool > 0)
        cd->number = ct->pool[--ct->npool];
    else if ((rc = make_cgroup(ct, &cd->number, err)) < 0)
        return rc;
    cgroup_name(ct, cd->number, path, sizeof(path));
    strcat(path, "/cgroup.procs");
    if ((*join = openat(ct->cgroups, path, O_WRONLY | O_CLOEXEC)) < 0) {
        int e = errno;
        path[strcspn(path, "/")] = '\0';
        unlinkat(ct->cgroups, path, AT_REMOVEDIR);
        return jpt__err(err, e == EMFILE || e == ENFILE ? JPT_ERR_LIMIT : JPT_ERR_IO,
                        "opening %s/cgroup.procs: %s", path, strerror(e));
    }
    cd->ct = ct;
    return JPT_OK;
}

void jpt__contain_cancel(jpt__contained *cd)
{
    /* A child that failed before execve was reaped already. */
    if (cd->ct != NULL && cd->ct->mode == JPT__CONTAIN_CGROUP)
        release_cgroup(cd->ct, cd->number);
    cd->ct = NULL;
}

void jpt__contain_kill(jpt__contained *const *cds, const pid_t *leaders, size_t n)
{
    jpt__contain *ct = n > 0 ? cds[0]->ct : NULL;

    if (ct == NULL)
        return;
    if (ct->mode == JPT__CONTAIN_SUBREAPER) {
        kill_orphans(ct, cds, leaders, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        kill_cgroup(ct, cds[i]->number);
}

void jpt__contain_exiting(jpt__contained *cd, pid_t leader)
{
    /* CGROUP: nothing yet; after the reap an empty cgroup costs one rmdir
     * (jpt__contain_reaped). SUBREAPER: now, while the leader's session id
     * is still reserved by it. */
    if (cd->ct != NULL && cd->ct->mode == JPT__CONTAIN_SUBREAPER)
        kill_orphans(cd->ct, &cd, &leader, 1);
}

void jpt__contain_reaped(jpt__contained *cd)
{
    jpt__contain *ct = cd->ct;

    if (ct == NULL)
        return;
    if (ct->mode == JPT__CONTAIN_CGROUP)
        release_cgroup(ct, cd->number);
    else
        /* Orphans that exited below the leader were reparented to the host
         * as it exited, after their own events. */
        reap_orphans(ct);
    cd->ct = NULL;
}
