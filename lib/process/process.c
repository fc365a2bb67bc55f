/* Spawning a child with clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD), and
 * following it in the loop: its output pipes, its pidfd, the drain window
 * after it exits, and the SIGTERM/SIGKILL escalation. See process.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "process/process.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* Reads per readable event; with 64 KiB reads this is 1 MiB, enough to keep
 * up with a flooding child while leaving room for other events. */
#define READS_PER_EVENT 16
#define READ_CHUNK 65536
#define CHILD_STACK_SIZE (32 * 1024)
/* A slice of the sweep after a sandboxed tool (repos.c), from the loop. */
#define SWEEP_SLICE_NS 1000000u

typedef struct stream {
    jpt__watch watch;
    int fd;   /* -1 once closed */
    bool eof; /* its end was read: closed with the rest of the child */
} stream;

struct jpt__child {
    jpt__loop *loop;
    const jpt__child_ops *ops;
    void *ud;
    pid_t pid;
    int pidfd;
    jpt__watch pid_watch;
    stream out, err;
    int in_fd;        /* -1 when none; equals out.fd on a PTY */
    jpt__watch in_watch; /* pipes only; a PTY writes through out.watch */
    jpt__buf input;   /* queued, not yet written */
    size_t input_off;
    bool input_closing;
    uint64_t input_lost; /* bytes queued for stdin that never got there */
    uint64_t input_written; /* bytes the stdin pipe took */
    int input_unread;    /* of those, left in the pipe when it was closed;
                            -1: not closed yet, or unknown */
    bool pty;
    bool exited;      /* the process ended (pidfd readable) */
    bool reaped;
    bool in_output_call; /* ops->output is running: freeing waits */
    bool out_held;       /* stdout is not read for now (jpt__child_hold_output) */
    bool free_pending;   /* jpt__child_free was called meanwhile */
    jpt__defer clean_up; /* after the exit is reported: its fds and cgroup */
    bool freed;          /* jpt__child_free came first: the clean-up frees it */
    int drain_ms;
    jpt__timer drain_timer;
    jpt__timer kill_timer;
    jpt__exit status;
    jpt__contained contained;
    bool pid_ns;      /* pid 1 of a PID namespace of its own */
    bool term_as_kill; /* it was sent SIGKILL for SIGTERM (terminate_group) */
    jpt__repos *repos; /* its sandbox's repositories, swept after it, or NULL */
    jpt__repo_sweep *sweep; /* that sweep, from the loop before the exit's report */
    jpt__defer sweep_slice;
};

/* ---- The child side ------------------------------------------------------------
 * Runs on its own stack in the parent's memory until execve: only
 * async-signal-safe calls, no allocation, and the outcome written to the
 * context the parent reads after clone returns. */

typedef struct spawn_ctx {
    const char *path;
    char *const *argv;
    char *const *envp;
    const char *cwd;
    int cwd_fd;       /* a directory to fchdir into, or -1 */
    const char *cwd_path; /* in a mount namespace: cwd_fd's path, entered by
                             its path and checked to be cwd_fd's directory */
    bool cwd_remade;  /* … unless the view makes it anew (not checked) */
    int in, out, err; /* the child's ends, all >= 3 */
    int join;         /* cgroup.procs of the child's cgroup, or -1 */
    int slave;        /* PTY slave, or -1 */
    const jpt__sandbox *sandbox; /* or NULL */
    int clone_flags;  /* the sandbox's namespaces */
    pid_t parent;
    sigset_t mask;    /* the parent's mask, to restore */
    int failed_errno;
    int failed_status; /* the status to report, 0: by the errno */
    const char *failed_step;
    const char *failed_path; /* where, or NULL */
} spawn_ctx;

/* Enters the directory the child starts in, in its mount namespace: by
 * its path, which must lead to the very directory the host gave
 * (fchdir would keep the host's mounts, and what covers a hidden path
 * would not be seen from there). */
static int enter_cwd_path(spawn_ctx *ctx)
{
    struct stat want, got;

    if (fstat(ctx->cwd_fd, &want) != 0 || chdir(ctx->cwd_path) != 0)
        return -1;
    if (ctx->cwd_remade)
        return 0;
    if (stat(".", &got) != 0)
        return -1;
    if (got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
        errno = ESTALE;
        return -1;
    }
    return 0;
}

static int child_main(void *arg)
{
    spawn_ctx *ctx = arg;
    struct sigaction dfl;
    sigset_t empty;

    /* Into its cgroup first, while the parent is suspended (CLONE_VFORK):
     * nothing the child starts can be outside it. */
    if (ctx->join >= 0 && write(ctx->join, "0", 1) != 1) {
        ctx->failed_step = "joining its cgroup";
        goto fail;
    }
    /* Handlers belong to the parent's code, which this process is about to
     * leave; ignored signals stay ignored only if the tool says so itself. */
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &dfl, NULL);

    if (setsid() < 0) {
        ctx->failed_step = "setsid";
        goto fail;
    }
    /* Die with the parent; it may already be gone (the signal is only sent
     * for a death after this call). In a PID namespace of its own the
     * parent is outside it, and its id 0. */
    pid_t ppid = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
        (ppid != ctx->parent && !((ctx->clone_flags & CLONE_NEWPID) && ppid == 0))) {
        ctx->failed_step = "prctl(PR_SET_PDEATHSIG)";
        goto fail;
    }
    /* Its view of the file system first: every path from here on is
     * resolved in it. */
    if (ctx->sandbox != NULL) {
        int e = jpt__sandbox_enter_in_child(ctx->sandbox, &ctx->failed_step, &ctx->failed_path);
        if (e != 0) {
            errno = e;
            ctx->failed_status = JPT_ERR_SANDBOX;
            goto fail;
        }
    }
    /* Before dup2 and close_range, which may take the fd's number. */
    if (ctx->cwd_fd >= 0 && ctx->cwd_path != NULL && enter_cwd_path(ctx) < 0) {
        ctx->failed_step = "entering the workspace";
        ctx->failed_path = ctx->cwd_path;
        goto fail;
    }
    if (ctx->cwd_fd >= 0 && ctx->cwd_path == NULL && fchdir(ctx->cwd_fd) < 0) {
        ctx->failed_step = "fchdir";
        goto fail;
    }
    if (ctx->slave >= 0 && ioctl(ctx->slave, TIOCSCTTY, 0) < 0) {
        ctx->failed_step = "ioctl(TIOCSCTTY)";
        goto fail;
    }
    if (dup2(ctx->in, 0) < 0 || dup2(ctx->out, 1) < 0 || dup2(ctx->err, 2) < 0) {
        ctx->failed_step = "dup2";
        goto fail;
    }
    /* While the ruleset's fd is still open; the filter lets through every
     * call left before execve. */
    if (ctx->sandbox != NULL) {
        int e = jpt__sandbox_apply_in_child(ctx->sandbox, &ctx->failed_step);
        if (e != 0) {
            errno = e;
            ctx->failed_status = JPT_ERR_SANDBOX;
            goto fail;
        }
    }
    if (syscall(SYS_close_range, 3u, ~0u, 0) < 0) {
        /* Before Linux 5.9: close them one by one. */
        long max = sysconf(_SC_OPEN_MAX);
        for (int fd = 3; fd < (max > 0 ? max : 1024); fd++)
            close(fd);
    }
    if (ctx->cwd_fd < 0 && ctx->cwd != NULL && chdir(ctx->cwd) < 0) {
        ctx->failed_step = "chdir";
        ctx->failed_path = ctx->cwd;
        goto fail;
    }
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, NULL);
    execve(ctx->path, ctx->argv, ctx->envp);
    ctx->failed_step = "execve";
fail:
    ctx->failed_errno = errno;
    _exit(127);
}

/* ---- Spawning ------------------------------------------------------------------ */

int jpt__path_absolute_only(const char *path, jpt__buf *out)
{
    int rc = jpt__buf_puts(out, "");

    for (const char *p = path; rc == JPT_OK && *p != '\0';) {
        size_t n = strcspn(p, ":");
        if (n > 0 && p[0] == '/')
            rc = jpt__buf_printf(out, "%s%.*s", out->len > 0 ? ":" : "", (int)n, p);
        p += n;
        if (*p == ':')
            p++;
    }
    return rc;
}

/* argv[0] resolved against `search` (the spawn's, whose relative entries
 * do not count) or the host's PATH, as execvp would, so that a missing
 * command is reported before anything is spawned. */
static int resolve_command(const char *cmd, const char *search, char *path, size_t size,
                           jpt__errbuf *err)
{
    if (strchr(cmd, '/') != NULL) {
        if (access(cmd, X_OK) < 0)
            return jpt__err(err, errno == ENOENT ? JPT_ERR_NOT_FOUND : JPT_ERR_IO,
                            "command '%s': %s", cmd, strerror(errno));
        /* The child changes directory before execve: a relative path is
         * resolved here, where the caller meant it. */
        char cwd[4096];
        if (cmd[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
            snprintf(path, size, "%s", cmd);
        else if (snprintf(path, size, "%s/%s", cwd, cmd) >= (int)size)
            return jpt__err(err, JPT_ERR_LIMIT, "command '%s': path too long", cmd);
        return JPT_OK;
    }
    const char *dirs = search != NULL ? search : getenv("PATH");
    if (dirs == NULL)
        dirs = JPT__DEFAULT_PATH;
    while (*dirs != '\0') {
        size_t n = strcspn(dirs, ":");
        struct stat st;
        /* An empty element means the current directory. */
        if ((search == NULL || (n > 0 && dirs[0] == '/')) &&
            snprintf(path, size, "%.*s/%s", n ? (int)n : 1, n ? dirs : ".", cmd) < (int)size &&
            access(path, X_OK) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            return JPT_OK;
        dirs += n;
        if (*dirs == ':')
            dirs++;
    }
    return jpt__err(err, JPT_ERR_NOT_FOUND, "command '%s' not found in PATH", cmd);
}

/* A copy of `fd` at 3 or above, so the child's dup2 onto 0-2 never
 * clobbers another of its ends (the host may have closed its own 0-2). */
static int high_fd(int fd)
{
    if (fd >= 3)
        return fd;
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno; /* the caller reports the failure, not the close */
    close(fd);
    errno = e;
    return copy;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Clears the terminal's ECHO: it no longer shows what it reads. */
static int echo_off(int fd)
{
    struct termios t;

    if (tcgetattr(fd, &t) < 0)
        return -1;
    t.c_lflag &= ~(tcflag_t)ECHO;
    return tcsetattr(fd, TCSANOW, &t);
}

static int open_pty(int *master, int *slave, const jpt__spawn *s, jpt__errbuf *err)
{
    char name[128];
    struct winsize ws = {.ws_row = s->rows ? s->rows : 24, .ws_col = s->cols ? s->cols : 80};

    *slave = -1;
    *master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*master < 0 || grantpt(*master) < 0 || unlockpt(*master) < 0 ||
        ptsname_r(*master, name, sizeof(name)) != 0 ||
        (*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0 ||
        ioctl(*master, TIOCSWINSZ, &ws) < 0 || (s->pty_no_echo && echo_off(*slave) < 0)) {
        int e = errno;
        close_fd(master);
        close_fd(slave);
        return jpt__err(err, JPT_ERR_IO, "opening a pseudo-terminal: %s", strerror(e));
    }
    return JPT_OK;
}

/* The parent's ends of fresh pipes and PTYs have no other status flags. */
static void set_nonblocking(int fd)
{
    fcntl(fd, F_SETFL, O_NONBLOCK);
}


static void on_pidfd(jpt__watch *w, uint32_t events);
static void on_output(jpt__watch *w, uint32_t events);
static void on_sweep_slice(jpt__defer *d);
static void release(jpt__child *c);
static void on_input(jpt__watch *w, uint32_t events);
static void on_drain_timeout(jpt__timer *t);
static void on_kill_timeout(jpt__timer *t);
static void clean_up(jpt__defer *d);

/* The parent's ends of the child's stdio, and the child's. */
typedef struct stdio_fds {
    int parent_in, parent_out, parent_err;
    int child_in, child_out, child_err, slave;
} stdio_fds;

static void close_stdio(stdio_fds *f)
{
    int *fds[] = {&f->parent_in, &f->parent_out, &f->parent_err,
                  &f->child_in,  &f->child_out,  &f->child_err};

    /* On a PTY several of these are one fd: close each number once. */
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        for (size_t j = i + 1; j < sizeof(fds) / sizeof(fds[0]); j++)
            if (*fds[j] == *fds[i])
                *fds[j] = -1;
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        close_fd(fds[i]);
    f->slave = -1;
}

static int make_stdio(const jpt__spawn *s, stdio_fds *f, jpt__errbuf *err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    int rc;

    memset(f, -1, sizeof(*f));
    if (s->pty) {
        int master, slave;
        if ((rc = open_pty(&master, &slave, s, err)) < 0)
            return rc;
        f->parent_in = f->parent_out = master;
        f->child_in = f->child_out = f->child_err = f->slave = high_fd(slave);
        f->parent_err = -1;
        if (f->slave < 0) {
            int e = errno;
            close_fd(&master);
            memset(f, -1, sizeof(*f));
            return jpt__err(err, JPT_ERR_IO, "dup: %s", strerror(e));
        }
        set_nonblocking(master);
        return JPT_OK;
    }
    if ((s->stdin_pipe ? pipe2(in, O_CLOEXEC)
         : s->devnull >= 0 ? ((in[0] = fcntl(s->devnull, F_DUPFD_CLOEXEC, 3)) < 0 ? -1 : 0)
                           : ((in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 ? -1 : 0)) < 0 ||
        pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        int e = errno;
        int *all[] = {&in[0], &in[1], &out[0], &out[1], &errp[0], &errp[1]};
        for (size_t i = 0; i < 6; i++)
            close_fd(all[i]);
        return jpt__err(err, e == EMFILE || e == ENFILE ? JPT_ERR_LIMIT : JPT_ERR_IO,
                        "creating pipes: %s", strerror(e));
    }
    f->child_in = high_fd(in[0]);
    f->child_out = high_fd(out[1]);
    f->child_err = high_fd(errp[1]);
    f->parent_in = in[1];
    f->parent_out = out[0];
    f->parent_err = errp[0];
    if (f->child_in < 0 || f->child_out < 0 || f->child_err < 0) {
        int e = errno; /* read before the closes */
        close_stdio(f);
        return jpt__err(err, e == EMFILE || e == ENFILE ? JPT_ERR_LIMIT : JPT_ERR_IO, "dup: %s",
                        strerror(e));
    }
    if (f->parent_in >= 0)
        set_nonblocking(f->parent_in);
    set_nonblocking(f->parent_out);
    set_nonblocking(f->parent_err);
    return JPT_OK;
}

/* clone() in vfork style: the parent waits until the child has called
 * execve or exited, so the context and the stack can be released at once,
 * and a failed exec is known before spawn returns. */
static int clone_child(spawn_ctx *ctx, int *pidfd, jpt__errbuf *err)
{
    sigset_t all;
    /* The child runs on this frame's array until execve, while this thread
     * is suspended (CLONE_VFORK): no allocation per spawn (as musl does). */
    _Alignas(16) char stack[CHILD_STACK_SIZE];

    /* No signal handler of the host may run in the child while it shares
     * the host's memory. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &ctx->mask);
    ctx->parent = getpid();
    pid_t pid = clone(child_main, stack + CHILD_STACK_SIZE,
                      CLONE_VM | CLONE_VFORK | CLONE_PIDFD | ctx->clone_flags, ctx, pidfd);
    int clone_errno = errno;
    pthread_sigmask(SIG_SETMASK, &ctx->mask, NULL);

    /* CLONE_PIDFD takes an fd: EMFILE is a limit as a pipe's is. */
    if (pid < 0)
        return jpt__err(err,
                        clone_errno == EAGAIN || clone_errno == EMFILE || clone_errno == ENFILE
                            ? JPT_ERR_LIMIT
                            : JPT_ERR_IO,
                        "clone: %s", strerror(clone_errno));
    if (ctx->failed_step != NULL) {
        siginfo_t info;
        waitid((idtype_t)P_PIDFD, (id_t)*pidfd, &info, WEXITED | __WALL);
        close_fd(pidfd);
        return jpt__err(err,
                        ctx->failed_status != 0      ? ctx->failed_status
                        : ctx->failed_errno == ENOENT ? JPT_ERR_NOT_FOUND
                                                      : JPT_ERR_IO,
                        "%s%s%s: %s%s", ctx->failed_step,
                        ctx->failed_path != NULL ? " " : "",
                        ctx->failed_path != NULL ? ctx->failed_path : "",
                        ctx->failed_errno == ESTALE && ctx->failed_path == ctx->cwd_path
                            ? "it is no longer the directory the host opened"
                            : strerror(ctx->failed_errno),
                        ctx->sandbox != NULL && ctx->failed_errno == EACCES &&
                                strcmp(ctx->failed_step, "execve") == 0
                            ? " (the OS sandbox may not read or execute the program: list "
                              "its directory as readable)"
                            : "");
    }
    return pid;
}

extern char **environ;

/* The path of the directory open as `fd`, for a child that enters it in
 * its own mount namespace. */
static int fd_path(int fd, char *out, size_t n, jpt__errbuf *err)
{
    char link[64];

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, out, n - 1);
    if (len < 0)
        return jpt__err(err, JPT_ERR_IO, "readlink %s (the directory to start in): %s", link,
                        strerror(errno));
    if ((size_t)len >= n - 1)
        return jpt__err(err, JPT_ERR_LIMIT, "the directory to start in has too long a path");
    out[len] = '\0';
    if (out[0] != '/')
        return jpt__err(err, JPT_ERR_IO, "the directory to start in is not a path: %s", out);
    return JPT_OK;
}

int jpt__child_spawn(jpt__loop *l, const jpt__spawn *s, const jpt__child_ops *ops,
                     void *ud, jpt__child **out, jpt__errbuf *err)
{
    char path[4096], cwd_path[4096];
    stdio_fds f;
    int pidfd = -1, rc;

    *out = NULL;
    if ((rc = resolve_command(s->argv[0], s->path, path, sizeof(path), err)) < 0)
        return rc;
    jpt__sandbox *sb = NULL;
    if (s->sandbox != NULL) {
        jpt__sandbox_spec spec = *s->sandbox;
        spec.program = path;
        spec.pid_namespace = jpt__contain_wants_pid_namespace(s->contain);
        if ((rc = jpt__sandbox_prepare(&spec, &sb, err)) < 0)
            return rc;
        if (s->sandbox_report != NULL)
            *s->sandbox_report = *jpt__sandbox_report_of(sb);
    }
    jpt__child *c = jpt__calloc(1, sizeof(*c));
    if (c == NULL) {
        jpt__sandbox_free(sb);
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory spawning '%s'", s->argv[0]);
    }
    if ((rc = make_stdio(s, &f, err)) < 0) {
        jpt__sandbox_free(sb);
        jpt__free(c);
        return rc;
    }

    spawn_ctx ctx = {
        .path = path,
        .argv = (char *const *)s->argv,
        .envp = s->envp != NULL ? (char *const *)s->envp : environ,
        .cwd = s->cwd,
        .cwd_fd = s->cwd_fd != NULL ? *s->cwd_fd : -1,
        .in = f.child_in,
        .out = f.child_out,
        .err = f.child_err,
        .join = -1,
        .slave = f.slave,
        .sandbox = sb,
        .clone_flags = sb != NULL ? jpt__sandbox_clone_flags(sb) : 0,
    };
    if ((ctx.clone_flags & CLONE_NEWNS) && ctx.cwd_fd >= 0 &&
        (rc = fd_path(ctx.cwd_fd, cwd_path, sizeof(cwd_path), err)) < 0) {
        jpt__sandbox_free(sb);
        close_stdio(&f);
        jpt__free(c);
        return rc;
    }
    if ((ctx.clone_flags & CLONE_NEWNS) && ctx.cwd_fd >= 0)
        ctx.cwd_path = cwd_path;
    /* A workspace its view makes anew is another directory there. */
    ctx.cwd_remade = ctx.cwd_path != NULL && jpt__sandbox_remade(sb, cwd_path);
    char **marked = NULL;
    if (s->contain != NULL &&
        (rc = jpt__contain_prepare(s->contain, &c->contained, ctx.envp, &marked, &ctx.join,
                                   err)) < 0) {
        jpt__sandbox_free(sb);
        close_stdio(&f);
        jpt__free(c);
        return rc;
    }
    if (marked != NULL)
        ctx.envp = marked;
    /* Its cgroup's bound, before it joins: a sandboxed process's
     * process_limit, any other's none (a cgroup of the pool may have
     * bounded another). */
    if (ctx.join >= 0 && jpt__contain_bounds_pids(s->contain) &&
        (rc = jpt__contain_bound(&c->contained,
                                 sb != NULL ? (s->sandbox->process_limit != 0
                                                   ? s->sandbox->process_limit
                                                   : JPT__SANDBOX_PROCESS_LIMIT)
                                            : 0,
                                 err)) < 0) {
        jpt__sandbox_free(sb);
        close_fd(&ctx.join);
        jpt__free(marked);
        jpt__contain_cancel(&c->contained);
        close_stdio(&f);
        jpt__free(c);
        return rc;
    }
    rc = clone_child(&ctx, &pidfd, err);
    /* What of a repository lies where it may write, for the sweep after it. */
    jpt__repos *sb_repos = rc >= 0 && sb != NULL ? jpt__repos_ref(jpt__sandbox_repos(sb)) : NULL;
    jpt__sandbox_free(sb); /* applied by now, or never */
    close_fd(&ctx.join);
    jpt__free(marked);
    if (rc < 0)
        jpt__contain_cancel(&c->contained);
    /* The child's ends belong to the child now (or to nobody); on a PTY
     * they are one fd, closed once. */
    int child_in = f.child_in, child_out = f.child_out, child_err = f.child_err;
    close_fd(&f.child_in);
    if (child_out != child_in)
        close_fd(&f.child_out);
    if (child_err != child_in && child_err != child_out)
        close_fd(&f.child_err);
    f.child_out = f.child_err = f.slave = -1;
    if (rc < 0) {
        close_stdio(&f);
        jpt__free(c);
        return rc;
    }

    c->loop = l;
    c->ops = ops;
    c->ud = ud;
    c->pid = rc;
    c->pidfd = pidfd;
    c->pid_ns = (ctx.clone_flags & CLONE_NEWPID) != 0;
    c->pty = s->pty;
    c->drain_ms = s->drain_ms;
    c->out.fd = f.parent_out;
    c->err.fd = f.parent_err;
    c->in_fd = (s->stdin_pipe || s->pty) ? f.parent_in : -1;
    c->input_unread = -1;
    if (c->in_fd < 0)
        close_fd(&f.parent_in);
    jpt__loop_timer_init(&c->drain_timer, on_drain_timeout, c);
    jpt__loop_timer_init(&c->kill_timer, on_kill_timeout, c);
    jpt__loop_defer_init(&c->clean_up, clean_up, c);
    jpt__loop_defer_init(&c->sweep_slice, on_sweep_slice, c);
    c->repos = sb_repos;
    if ((rc = jpt__loop_watch_start(l, &c->pid_watch, pidfd, EPOLLIN, on_pidfd, c)) < 0 ||
        (rc = jpt__loop_watch_start(l, &c->out.watch, c->out.fd, EPOLLIN, on_output, c)) < 0 ||
        (c->err.fd >= 0 &&
         (rc = jpt__loop_watch_start(l, &c->err.watch, c->err.fd, EPOLLIN, on_output, c)) < 0)) {
        jpt__child_free(c);
        return jpt__err(err, rc, "adding the child's fds to the loop failed");
    }
    *out = c;
    return JPT_OK;
}

pid_t jpt__child_pid(const jpt__child *c)
{
    return c->pid;
}

bool jpt__child_exited(const jpt__child *c)
{
    return c->exited;
}

/* ---- Following the child ------------------------------------------------------- */

static void close_stream(jpt__child *c, stream *st)
{
    if (st->fd < 0)
        return;
    jpt__loop_watch_stop(c->loop, &st->watch);
    if (c->pty && st == &c->out)
        c->in_fd = -1; /* the master was both */
    close_fd(&st->fd);
}

static void close_input(jpt__child *c)
{
    if (c->in_fd < 0)
        return;
    if (!c->pty) {
        int unread;
        /* What the child left unread, which the pipe forgets with its
         * last fd (jpt__child_read_no_input). */
        c->input_unread = ioctl(c->in_fd, FIONREAD, &unread) == 0 ? unread : -1;
        jpt__loop_watch_stop(c->loop, &c->in_watch);
        close_fd(&c->in_fd);
    }
    c->in_fd = -1;
    jpt__buf_free(&c->input);
    c->input_off = 0;
}

static bool stream_open(const stream *st)
{
    return st->fd >= 0 && !st->eof;
}

/* The streams whose end was read, while the process lives on (or a
 * grandchild holds the other): closed now, or their end would be heard
 * of again at every dispatch. */
static void close_ended(jpt__child *c)
{
    if (c->out.eof)
        close_stream(c, &c->out);
    if (c->err.eof)
        close_stream(c, &c->err);
}

/* waitid() on the child through its pidfd, which names this very process
 * even after someone else reaped it. */
static int wait_child(const jpt__child *c, siginfo_t *info, int options)
{
    memset(info, 0, sizeof(*info));
    return waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, info, options | __WALL);
}

/* The child's pid while it is unreaped, else 0: the host may reap it
 * behind our back (waitpid(-1) in a SIGCHLD handler), and then its pid, and
 * the group's id, may belong to someone else by now. */
static pid_t unreaped_pid(jpt__child *c)
{
    siginfo_t info;

    if (c->reaped || c->pidfd < 0)
        return 0;
    if (wait_child(c, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
        return 0;
    return c->pid;
}

/* Signals the process group of the child whose unreaped pid is `pid` (0:
 * none), and the child itself (it may have left the group). */
static void signal_pid_group(const jpt__child *c, pid_t pid, int sig)
{
    if (pid == 0)
        return;
    kill(-pid, sig);
    /* An exited leader is a zombie: only its group is left to signal. */
    if (!c->exited)
        kill(pid, sig);
}

/* The same while the child is unreaped. */
static void signal_group(jpt__child *c, int sig)
{
    signal_pid_group(c, unreaped_pid(c), sig);
}

/* Whether process `pid` neither catches, ignores nor blocks `sig`, as its
 * /proc/<pid>/status says (SigCgt, SigIgn, SigBlk); false when it cannot
 * be read. */
static bool signal_default(pid_t pid, int sig)
{
    char path[64], buf[2048];
    const char *const fields[] = {"\nSigBlk:", "\nSigIgn:", "\nSigCgt:"};

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *at = strstr(buf, fields[i]);
        if (at == NULL)
            return false;
        unsigned long long mask = strtoull(at + strlen(fields[i]), NULL, 16);
        if (mask & (1ULL << (sig - 1)))
            return false;
    }
    return true;
}

/* SIGTERM as the child would take it were it not pid 1 of a PID
 * namespace of its own: the kernel drops a signal a namespace's init
 * does not handle, so one that leaves SIGTERM to its default action gets
 * SIGKILL, which ends it as that action would (its namespace with it),
 * not the kill grace later; and its end is reported as SIGTERM's. */
static void terminate_group(jpt__child *c)
{
    pid_t pid = unreaped_pid(c);

    c->term_as_kill = c->pid_ns && pid != 0 && !c->exited && signal_default(pid, SIGTERM);
    signal_pid_group(c, pid, c->term_as_kill ? SIGKILL : SIGTERM);
}

/* Reaps the child and reports it: the output is complete (or the drain
 * window is over). Stragglers in the process group are killed first, while
 * the unreaped leader still holds the group's id. The report goes out
 * before the clean-up (the streams at their end, stdin and the pidfd
 * closed, the cgroup released), which runs from the loop (issue 18: each
 * of those system calls costs microseconds on the path from the exit to
 * the answer). Until then the child's events are not heard of. */
static void finish(jpt__child *c)
{
    siginfo_t info;

    jpt__loop_timer_stop(c->loop, &c->drain_timer);
    jpt__loop_timer_stop(c->loop, &c->kill_timer);
    /* Still open: the drain window ended with a grandchild holding it. */
    if (stream_open(&c->out))
        close_stream(c, &c->out);
    if (stream_open(&c->err))
        close_stream(c, &c->err);
    /* The subreaper finds the tool's strays by its session, which only the
     * unreaped leader keeps reserved: they go first. */
    bool strays_first = c->contained.ct != NULL &&
                        jpt__contain_mode(c->contained.ct) == JPT__CONTAIN_SUBREAPER;
    if (strays_first) {
        pid_t pid = unreaped_pid(c);
        signal_pid_group(c, pid, SIGKILL);
        jpt__contain_exiting(&c->contained, pid);
    }
    if (wait_child(c, &info, WEXITED) == 0) {
        c->status.code = info.si_code == CLD_EXITED ? info.si_status : -1;
        c->status.signal = info.si_code == CLD_EXITED ? 0 : info.si_status;
        if (c->term_as_kill && c->status.signal == SIGKILL)
            c->status.signal = SIGTERM;
        c->status.known = true;
        /* Stragglers of its group: the group's id stays theirs while any
         * lives, and pids are handed out again only after the whole pid
         * space went round, so the just-reaped leader's id names no one
         * else. One wait on the child instead of two (each costs the
         * kernel a walk over the host's children). */
        if (!strays_first)
            kill(-c->pid, SIGKILL);
    } else {
        /* ECHILD: the host reaped it (waitid(-1) in a SIGCHLD handler),
         * and its pid may be someone else's by now: nothing is signalled. */
        c->status.code = -1;
        c->status.signal = 0;
        c->status.known = false;
    }
    c->reaped = true;
    /* Their events of this dispatch say nothing more; at the next, the
     * clean-up runs before the fds are polled. */
    jpt__loop_watch_quiet(c->loop, &c->out.watch);
    jpt__loop_watch_quiet(c->loop, &c->err.watch);
    jpt__loop_watch_quiet(c->loop, &c->pid_watch);
    jpt__loop_defer_release(c->loop, &c->clean_up);
    /* What of a repository it made where it may write goes before its end
     * is told (sandbox.h, repos.c), a slice at a time from the loop. */
    if (c->repos != NULL) {
        if (jpt__repo_sweep_new(c->repos, JPT_VFS_RUN_SCAN_MAX, &c->sweep) < 0)
            jpt__log(JPT_LOG_WARNING, "pid %d: out of memory for the sweep after it",
                     (int)c->pid);
        jpt__repos_unref(c->repos);
        c->repos = NULL;
        if (c->sweep != NULL) {
            jpt__loop_defer_queue(c->loop, &c->sweep_slice);
            return;
        }
    }
    c->ops->exited(c, &c->status, c->ud);
}

/* The sweep over: what it moved aside is logged, and told as the last of
 * the child's stderr. */
static void swept(jpt__child *c, int rc, const jpt__errbuf *err)
{
    size_t n = 0;
    bool failed = false;
    const char *moved = jpt__repo_sweep_moved(c->sweep, &n, &failed);
    char note[2048];

    if (rc < 0)
        jpt__log(JPT_LOG_WARNING,
                 "pid %d: after it, what of a repository it made where it may write could not "
                 "be found: %s",
                 (int)c->pid, err->text);
    if (n > 0 || failed) {
        jpt__log(JPT_LOG_WARNING,
                 "pid %d made what git would take for a repository where it may write: %s%s",
                 (int)c->pid, n > 0 ? "moved aside " : "",
                 n > 0 ? moved : "it could not all be moved");
        int len = snprintf(note, sizeof(note),
                           "\n[jptool: moved aside %.1800s: a repository made where this "
                           "process may write, whose configuration git would run]\n",
                           n > 0 ? moved : "(some of it)");
        c->in_output_call = true;
        c->ops->output(c, JPT__STDERR, note,
                       (size_t)len < sizeof(note) ? (size_t)len : sizeof(note) - 1, c->ud);
        c->in_output_call = false;
    }
    jpt__repo_sweep_free(c->sweep);
    c->sweep = NULL;
}

static void on_sweep_slice(jpt__defer *d)
{
    jpt__child *c = d->ud;
    jpt__errbuf err = {{0}};
    int rc = jpt__repo_sweep_step(c->sweep, SWEEP_SLICE_NS, &err);

    if (rc == 1) {
        jpt__loop_defer_queue(c->loop, &c->sweep_slice);
        return;
    }
    swept(c, rc, &err);
    if (c->free_pending) {
        release(c);
        return;
    }
    /* Freed from the output callback while its clean-up was queued: the
     * clean-up frees it, and no one is left to tell. */
    if (c->freed)
        return;
    c->ops->exited(c, &c->status, c->ud);
}

static bool output_done(const jpt__child *c)
{
    return !stream_open(&c->out) && !stream_open(&c->err);
}

/* Whether the child has exited, without reaping it. A process closes its
 * fds as it exits, so its output usually ends just before the pidfd turns
 * readable: asking here saves a round through the host's loop. */
static bool has_exited(jpt__child *c)
{
    /* A pidfd is readable once its process has exited. */
    struct pollfd pfd = {.fd = c->pidfd, .events = POLLIN};

    if (c->pidfd < 0 || poll(&pfd, 1, 0) <= 0 || !(pfd.revents & POLLIN))
        return false;
    c->exited = true;
    return true;
}

static bool read_stream(jpt__child *c, stream *st, bool until_empty);

/* Reads everything both streams hold now, to their end if the writers are
 * gone; false if the child was freed from an output callback meanwhile. */
static bool read_streams(jpt__child *c)
{
    return (!stream_open(&c->out) || read_stream(c, &c->out, true)) &&
           (!stream_open(&c->err) || read_stream(c, &c->err, true));
}

static void on_pidfd(jpt__watch *w, uint32_t events)
{
    jpt__child *c = w->ud;

    (void)events;
    if (c->reaped)
        return; /* its clean-up is under way */
    c->exited = true;
    /* The output ended as the process exited: take its end now rather
     * than from further events. */
    if (!read_streams(c))
        return;
    if (output_done(c)) {
        finish(c);
        return;
    }
    close_ended(c);
    /* Level-triggered: stop hearing of the exit until the pidfd is closed. */
    jpt__loop_watch_stop(c->loop, &c->pid_watch);
    if (jpt__loop_timer_start(c->loop, &c->drain_timer, jpt__loop_deadline_ms(c->drain_ms)) < 0)
        finish(c);
}

static void on_drain_timeout(jpt__timer *t)
{
    finish(t->ud);
}

/* SIGKILL to the child's group and, when it is contained, to every
 * process of it. */
static void kill_child(jpt__child *c)
{
    jpt__contained *cd = &c->contained;
    pid_t pid = unreaped_pid(c);

    signal_group(c, SIGKILL);
    if (cd->ct != NULL)
        jpt__contain_kill(&cd, &pid, 1);
}

static void on_kill_timeout(jpt__timer *t)
{
    jpt__child *c = t->ud;

    jpt__log(JPT_LOG_INFO, "pid %d outlived the kill grace: SIGKILL", (int)c->pid);
    kill_child(c);
}

static void flush_input(jpt__child *c);

/* Reads what `st` holds, up to a bound, to its end at most. After a
 * short read the pipe is most likely empty and is left until its next
 * event, unless `until_empty` (its writers are gone, or the process has
 * ended): then the end of file may be right behind. False if the child was
 * freed from the output callback. */
static bool read_stream(jpt__child *c, stream *st, bool until_empty)
{
    int which = st == &c->out ? JPT__STDOUT : JPT__STDERR;
    char buf[READ_CHUNK];

    for (int i = 0; i < READS_PER_EVENT && stream_open(st) && !(st == &c->out && c->out_held);
         i++) {
        ssize_t n = read(st->fd, buf, sizeof(buf));
        if (n > 0) {
            c->in_output_call = true;
            c->ops->output(c, which, buf, (size_t)n, c->ud);
            c->in_output_call = false;
            if (c->free_pending) {
                release(c);
                return false;
            }
            if ((size_t)n < sizeof(buf) && !until_empty)
                break;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        /* End of file; on a PTY, EIO once the last slave fd is closed. The
         * fd is closed by the caller, or with the child. */
        st->eof = true;
    }
    return true;
}

static void on_output(jpt__watch *w, uint32_t events)
{
    jpt__child *c = w->ud;
    stream *st = w == &c->out.watch ? &c->out : &c->err;

    if (c->reaped || st->eof)
        return; /* its clean-up is under way */
    if ((events & EPOLLOUT) && c->pty)
        flush_input(c);
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    if (!read_stream(c, st, (events & EPOLLHUP) != 0) || !st->eof)
        return;
    /* The end of one stream is most often the process exiting: the other
     * stream's end and the exit are taken now too, so that the whole end
     * costs one wake-up when it is all there. */
    if (!(c->exited || has_exited(c))) {
        /* A process closes its fds a moment before its exit shows: the
         * stream is no longer heard of, and closed with the child (issue
         * 18: a close is microseconds on the path from an exit to its
         * answer). */
        jpt__loop_watch_stop(c->loop, &st->watch);
        return;
    }
    if (!read_streams(c))
        return;
    if (output_done(c))
        finish(c);
    else
        close_ended(c); /* a grandchild holds the other: the pidfd's event
                           starts the drain window */
}



void jpt__child_poll(jpt__child *c)
{
    if (c->reaped || c->in_output_call)
        return;
    /* To the end of what is there: a tool that printed and exited is then
     * seen to have ended. */
    if (!read_streams(c))
        return;
    if (!(c->exited || has_exited(c))) {
        close_ended(c);
        return;
    }
    if (output_done(c))
        finish(c);
    else if (c->pid_watch.active)
        /* Its output is still held open (a grandchild): the drain window
         * starts now rather than when the loop hears of the exit. */
        on_pidfd(&c->pid_watch, EPOLLIN);
    else
        close_ended(c);
}

/* ---- Input ------------------------------------------------------------------------ */

static int want_output_space(jpt__child *c, bool want)
{
    if (c->pty)
        return c->out.fd < 0 ? JPT_OK
                             : jpt__loop_watch_update(c->loop, &c->out.watch,
                                                 EPOLLIN | (want ? EPOLLOUT : 0));
    if (want && !c->in_watch.active)
        return jpt__loop_watch_start(c->loop, &c->in_watch, c->in_fd, EPOLLOUT, on_input, c);
    if (!want)
        jpt__loop_watch_stop(c->loop, &c->in_watch);
    return JPT_OK;
}

/* ---- SIGPIPE -------------------------------------------------------------------------- */

/* A write to a child that closed its stdin must not kill the host, whose
 * disposition for SIGPIPE is its own business: the signal is blocked in
 * the writing thread, one the write raises is taken back, and one that was
 * pending before is left for the host. Blocked for each write, that costs
 * two system calls per write; a loop the library runs itself blocks it
 * for its whole run instead (jpt__process_sigpipe_hold, issue 17 §4). */

/* This thread's hold: how many are under way, and whether SIGPIPE was
 * pending (the host's own, blocked by the host) when the outermost began. */
static _Thread_local unsigned hold_depth;
static _Thread_local bool hold_pending;

static bool sigpipe_pending(void)
{
    sigset_t pending;

    return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

/* Takes back the SIGPIPE a write raised (blocked: it is pending). */
static void take_sigpipe(void)
{
    sigset_t pipe_set;
    const struct timespec zero = {0, 0};

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
        ;
}

/* Only SIGPIPE is blocked or unblocked, never the whole mask set back: a
 * mask the host changes meanwhile (from a callback) stays as it made it. */
static bool block_sigpipe(void)
{
    sigset_t pipe_set, old;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    return sigismember(&old, SIGPIPE) == 1;
}

static void unblock_sigpipe(void)
{
    sigset_t pipe_set;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_UNBLOCK, &pipe_set, NULL);
}

void jpt__process_sigpipe_hold(jpt__sigpipe_hold *h)
{
    h->unblock = false;
    if (hold_depth++ > 0)
        return;
    bool was_blocked = block_sigpipe();
    /* Unblocked, it could not have been pending: it would have been
     * delivered (or discarded, ignored). */
    hold_pending = was_blocked && sigpipe_pending();
    h->unblock = !was_blocked;
}

void jpt__process_sigpipe_release(jpt__sigpipe_hold *h)
{
    hold_depth--;
    if (h->unblock)
        unblock_sigpipe();
}

static ssize_t write_no_sigpipe(int fd, const void *p, size_t n)
{
    bool was_pending = hold_pending, was_blocked = true;

    if (hold_depth == 0) {
        was_blocked = block_sigpipe();
        was_pending = was_blocked && sigpipe_pending();
    }
    ssize_t written = write(fd, p, n);
    int saved = errno;
    if (written < 0 && saved == EPIPE && !was_pending)
        take_sigpipe();
    if (!was_blocked)
        unblock_sigpipe();
    errno = saved;
    return written;
}

static void flush_input(jpt__child *c)
{
    while (c->in_fd >= 0 && c->input_off < c->input.len) {
        ssize_t n = write_no_sigpipe(c->in_fd, c->input.data + c->input_off,
                                     c->input.len - c->input_off);
        if (n > 0) {
            c->input_off += (size_t)n;
            c->input_written += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            if (want_output_space(c, true) == JPT_OK)
                return;
            /* Never told when the pipe has room: the input cannot be
             * delivered, and waiting for it would hang the tool. */
            c->input_lost += c->input.len - c->input_off;
            close_input(c);
            return;
        }
        /* EPIPE: the child closed its stdin; what it did not read is lost
         * (counted, so the writer can say so), and later writes are
         * refused. */
        c->input_lost += c->input.len - c->input_off;
        want_output_space(c, false);
        close_input(c);
        return;
    }
    if (c->in_fd >= 0) {
        want_output_space(c, false);
        jpt__buf_free(&c->input);
        c->input_off = 0;
        if (c->input_closing)
            close_input(c);
    }
}

static void on_input(jpt__watch *w, uint32_t events)
{
    jpt__child *c = w->ud;

    (void)events;
    flush_input(c);
    /* Room again after a full pipe: the writer may queue more. */
    if (c->in_fd >= 0 && c->input.len == 0 && c->ops->drained != NULL)
        c->ops->drained(c, c->ud);
}

void jpt__child_hold_output(jpt__child *c, bool hold)
{
    if (c->pty || c->out_held == hold)
        return;
    c->out_held = hold;
    if (c->out.fd < 0)
        return;
    if (hold) {
        jpt__loop_watch_stop(c->loop, &c->out.watch);
        return;
    }
    if (jpt__loop_watch_start(c->loop, &c->out.watch, c->out.fd, EPOLLIN, on_output, c) < 0) {
        /* Never told of it again: its end is taken when the process's is. */
        jpt__log(JPT_LOG_ERROR, "pid %d: cannot watch its output again", (int)c->pid);
        close_stream(c, &c->out);
    }
}

int jpt__child_write(jpt__child *c, const char *p, size_t n)
{
    if (c->in_fd < 0 || c->input_closing)
        return JPT_ERR_STATE;
    int rc = jpt__buf_append(&c->input, p, n);
    if (rc < 0)
        return rc;
    flush_input(c);
    /* The child had closed its stdin already: nothing of it arrived. */
    return c->in_fd >= 0 ? JPT_OK : JPT_ERR_STATE;
}

uint64_t jpt__child_input_lost(const jpt__child *c)
{
    return c->input_lost;
}

bool jpt__child_read_no_input(const jpt__child *c)
{
    int unread = c->input_unread;

    /* FIONREAD on either end of a pipe counts the bytes in it (Linux's
     * pipe_ioctl serves both); a terminal's counts what the host may
     * read, not what it wrote. A child that was gone (or had closed its
     * stdin) before the first write took any read none either. */
    if (c->pty)
        return false;
    if (c->input_written == 0)
        return c->input_lost > 0;
    if (c->in_fd >= 0 && ioctl(c->in_fd, FIONREAD, &unread) < 0)
        return false;
    return unread >= 0 && (uint64_t)unread == c->input_written;
}

void jpt__child_close_input(jpt__child *c)
{
    if (c->in_fd < 0)
        return;
    c->input_closing = true;
    if (c->input_off >= c->input.len)
        close_input(c);
}

size_t jpt__child_pending_input(const jpt__child *c)
{
    return c->input.len - c->input_off;
}

/* ---- Ending ----------------------------------------------------------------------- */

void jpt__child_terminate(jpt__child *c, int grace_ms)
{
    if (c->reaped)
        return;
    if (c->exited) {
        /* Only a grandchild holding the output is left: end the drain window
         * now. Through the timer, so that the exit is reported from the
         * loop, never from inside the caller. */
        jpt__loop_timer_start(c->loop, &c->drain_timer, jpt__loop_now());
        return;
    }
    /* A second request does not push the deadline of the first back. */
    if (jpt__loop_timer_active(&c->kill_timer))
        return;
    terminate_group(c);
    if (jpt__loop_timer_start(c->loop, &c->kill_timer, jpt__loop_deadline_ms(grace_ms)) < 0)
        kill_child(c);
}

/* Frees the child, killing it first unless `killed` says it was, and
 * reaping it. */
static void release_child(jpt__child *c, bool killed)
{
    jpt__loop_defer_cancel(c->loop, &c->clean_up);
    jpt__loop_timer_stop(c->loop, &c->drain_timer);
    jpt__loop_timer_stop(c->loop, &c->kill_timer);
    close_stream(c, &c->out);
    close_stream(c, &c->err);
    close_input(c);
    jpt__loop_watch_stop(c->loop, &c->pid_watch);
    if (!c->reaped && c->pidfd >= 0) {
        siginfo_t info;
        if (!killed)
            kill_child(c);
        /* Blocks until the child is gone; after SIGKILL that is at once,
         * unless it sits in uninterruptible sleep (a dead NFS mount). */
        wait_child(c, &info, WEXITED);
        c->reaped = true;
    }
    jpt__contain_reaped(&c->contained);
    /* Freed before its sweep was done: done now, at once, no one told
     * but the log. */
    jpt__loop_defer_cancel(c->loop, &c->sweep_slice);
    if (c->sweep == NULL && c->repos != NULL &&
        jpt__repo_sweep_new(c->repos, JPT_VFS_RUN_SCAN_MAX, &c->sweep) < 0)
        jpt__log(JPT_LOG_WARNING, "pid %d: out of memory for the sweep after it", (int)c->pid);
    if (c->sweep != NULL) {
        jpt__errbuf err = {{0}};
        size_t n = 0;
        bool failed = false;
        int rc = jpt__repo_sweep_step(c->sweep, 0, &err);
        const char *moved = jpt__repo_sweep_moved(c->sweep, &n, &failed);
        if (rc < 0 || n > 0 || failed)
            jpt__log(JPT_LOG_WARNING,
                     "pid %d (ended by its host): what of a repository was made where it may "
                     "write: %s%s%s",
                     (int)c->pid, n > 0 ? "moved aside " : "", moved,
                     rc < 0 ? err.text : failed ? " (not all could be moved)" : "");
        jpt__repo_sweep_free(c->sweep);
    }
    jpt__repos_unref(c->repos);
    close_fd(&c->pidfd);
    jpt__buf_free(&c->input);
    jpt__free(c);
}

static void release(jpt__child *c)
{
    release_child(c, false);
}

/* From the loop, after a reaped child's exit was reported (finish). */
static void clean_up(jpt__defer *d)
{
    jpt__child *c = d->ud;

    if (c->freed) {
        release_child(c, true);
        return;
    }
    close_stream(c, &c->out);
    close_stream(c, &c->err);
    close_input(c);
    jpt__loop_watch_stop(c->loop, &c->pid_watch);
    jpt__contain_reaped(&c->contained);
    close_fd(&c->pidfd);
}

void jpt__child_free(jpt__child *c)
{
    if (c == NULL)
        return;
    if (c->clean_up.queued) {
        /* Reaped, its exit reported: the clean-up frees it. */
        c->freed = true;
        return;
    }
    if (c->in_output_call) {
        /* The reader still stands on it; it releases the child, without a
         * further callback, once the output callback returns. */
        c->free_pending = true;
        return;
    }
    release(c);
}

/* SIGKILL to every child's group and, with one search for them all, to
 * every process of the contained ones. */
static void kill_children(jpt__child **children, size_t n)
{
    jpt__contained **cds = jpt__calloc(n ? n : 1, sizeof(*cds));
    pid_t *pids = jpt__calloc(n ? n : 1, sizeof(*pids));
    size_t m = 0;

    for (size_t i = 0; i < n; i++) {
        jpt__child *c = children[i];
        if (cds == NULL || pids == NULL) {
            /* Without memory for the list: one by one. */
            kill_child(c);
            continue;
        }
        if (c->contained.ct != NULL) {
            cds[m] = &c->contained;
            pids[m++] = unreaped_pid(c);
        }
        signal_group(c, SIGKILL);
    }
    if (m > 0)
        jpt__contain_kill(cds, pids, m);
    jpt__free(cds);
    jpt__free(pids);
}

void jpt__children_shutdown(jpt__child **children, size_t n, int grace_ms)
{
    uint64_t deadline = jpt__loop_deadline_ms(grace_ms);
    struct pollfd *fds = jpt__calloc(n ? n : 1, sizeof(*fds));

    for (size_t i = 0; i < n; i++)
        if (!children[i]->exited)
            terminate_group(children[i]);
    /* Wait on every pidfd at once until all have exited or the grace period
     * ends; without memory for the poll set, go straight to SIGKILL. */
    while (fds != NULL) {
        size_t waiting = 0;
        for (size_t i = 0; i < n; i++) {
            jpt__child *c = children[i];
            if (!c->reaped && !c->exited && c->pidfd >= 0)
                fds[waiting++] = (struct pollfd){.fd = c->pidfd, .events = POLLIN};
        }
        uint64_t now = jpt__loop_now();
        if (waiting == 0 || now >= deadline)
            break;
        int ready = poll(fds, waiting, (int)((deadline - now + 999999u) / 1000000u));
        if (ready < 0 && errno != EINTR)
            break;
        for (size_t i = 0, k = 0; i < n && ready > 0; i++) {
            jpt__child *c = children[i];
            if (c->reaped || c->exited || c->pidfd < 0)
                continue;
            if (fds[k++].revents != 0)
                c->exited = true;
        }
    }
    jpt__free(fds);
    kill_children(children, n);
    for (size_t i = 0; i < n; i++)
        release_child(children[i], true);
}
