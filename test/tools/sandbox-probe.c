/* sandbox-probe: tries, from inside the OS sandbox, what a tool should not
 * be able to do, and what it still must, for test-sandbox. One line per
 * check, "<check> ok" or "<check> <ERRNO NAME>" ("open:/etc/passwd
 * EACCES"), in the order given.
 *
 * Usage: sandbox-probe [--vfs] CHECK...
 * With --vfs it is a VFS tool (the SDK): it reads init first and sends the
 * lines as its result text; else it prints them on stdout.
 *
 * Checks:
 *   open:PATH        open(PATH, O_RDONLY) (a directory too)
 *   create:PATH      open(PATH, O_WRONLY | O_CREAT | O_EXCL), removed again
 *   truncate:PATH    truncate(PATH, 0)
 *   environ          open and read /proc/<parent>/environ
 *   socket-inet      socket(AF_INET, SOCK_STREAM)
 *   socket-unix      socket(AF_UNIX, SOCK_STREAM)
 *   socket-unix-dgram  socket(AF_UNIX, SOCK_DGRAM)
 *   socketpair       socketpair(AF_UNIX, SOCK_STREAM)
 *   tcp:PORT         socket(AF_INET) and connect to 127.0.0.1:PORT
 *   unix:PATH        socket(AF_UNIX) and connect to the socket at PATH
 *   io_uring         io_uring_setup(1, …)
 *   ptrace           ptrace(PTRACE_SEIZE) of the parent
 *   process_vm       process_vm_readv of the parent
 *   unshare-user     unshare(CLONE_NEWUSER)
 *   clone-user       clone(CLONE_NEWUSER)
 *   clone3           clone3(…) (ENOSYS is what the sandbox answers)
 *   tiocsti          ioctl(0, TIOCSTI) of one character
 *   keyctl           keyctl(KEYCTL_GET_KEYRING_ID) of the session keyring
 *   bpf              bpf(BPF_PROG_LOAD) with nothing
 *   mount            mount of a tmpfs on a directory that does not exist
 *                    (ENOENT outside a sandbox, never a mount)
 *   signal-parent    kill(parent, 0)
 *   exec:PATH        fork, execve PATH, and its exit status 0
 *   env:NAME         "set" or "unset" instead of ok
 *   read:PATH        open and read: "ok" (bytes), "empty", or the errno
 *   write:PATH       open(PATH, O_WRONLY) and write "0" (a cgroup.procs:
 *                    moves the probe there)
 *   Metadata, each on a file the test owns:
 *   chmod:PATH  fchmod:PATH (fd opened read-only)  fchmodat2:PATH
 *   chown:PATH       chown to 65534 (the group kept)
 *   utimes:PATH      utimensat with explicit times
 *   touch:PATH       utimensat to now
 *   setxattr:PATH    user.jpt_probe = "x"
 *   getxattr:PATH    user.jpt_probe (ENODATA when it has none)
 *   stat:PATH        stat
 *   What a root host's tool could do with capabilities, each harmless
 *   when it succeeds:
 *   caps             "none", or the effective set in hex
 *   sethostname      sethostname to the current name
 *   syslog           syslog(SYSLOG_ACTION_SIZE_BUFFER)
 *   settimeofday     settimeofday(NULL, NULL), the system call itself
 *   reboot           reboot with a wrong magic number (EINVAL: it could)
 *   kexec            kexec_load with invalid flags (EINVAL: it could)
 *   fanotify         fanotify_init and a mark on the whole file system of /
 *   sched-fifo       SCHED_FIFO on itself, SCHED_OTHER again after
 *   The host (the probe's parent), each setting what is already set:
 *   prlimit-parent   RLIMIT_NOFILE of the parent
 *   prlimit-self     RLIMIT_NOFILE of itself, by 0 and by its pid
 *   nice-parent      setpriority of the parent
 *   affinity-parent  sched_setaffinity of the parent
 *   affinity-self    sched_setaffinity of itself, by 0 and by its pid
 *   ioprio-parent    ioprio_set of the parent
 *   Sockets past the rules:
 *   socket-unix-raw  socket(AF_UNIX, SOCK_RAW) (a datagram socket)
 *   socketpair-raw   socketpair(AF_UNIX, SOCK_RAW)
 *   raw-sendto:PATH  socket(AF_UNIX, SOCK_RAW) and sendto the datagram
 *                    socket at PATH without connect
 *   pair-sendto:PATH socketpair(AF_UNIX, SOCK_RAW) and sendto PATH
 *   Paths it cannot open:
 *   inotify:PATH     inotify_init1 and a watch on PATH
 *   handle:PATH      name_to_handle_at
 *   cwd              its working directory instead of ok
 *   pid              its process id instead of ok
 *   Signals by other ways than kill(parent) (the adversarial pass):
 *   kill-every       kill(-1, 0): every process it may signal
 *   owner-parent:SIG its stdout (the protocol's pipe) owned by the parent
 *                    (F_SETOWN), with signal SIG for its events (F_SETSIG)
 *                    and O_ASYNC: the parent gets SIG when it reads
 *   owner-pair:SIG   a socketpair owned by the parent (FIOSETOWN), with
 *                    SIG and O_ASYNC, then a byte sent through it
 *   Set-user-ID and set-group-ID files (each left as it is made):
 *   chmod-setuid:PATH  chmod-setgid:PATH  fchmod-setuid:PATH
 *   fchmodat2-setuid:PATH   chmod 04755 or 02755
 *   create-setuid:PATH      open(O_CREAT | O_EXCL, 04755)
 *   openat-setgid:PATH      openat(O_CREAT | O_EXCL, 02755)
 *   creat-setuid:PATH       creat(04755)
 *   mknod-setuid:PATH       mknod(S_IFREG | 04755)
 *   tmpfile-setuid:DIR      open(DIR, O_TMPFILE, 04755), linked as DIR/tmpfile
 *   openat2-create:PATH     openat2(O_CREAT | O_EXCL, 04755)
 *   Names others would connect to:
 *   listen-abstract:NAME  socket(AF_UNIX, SOCK_STREAM), bound to the
 *                         abstract NAME, listening
 *   listen-path:PATH      the same at PATH
 *   pair-bind:NAME        a socketpair's end bound to the abstract NAME
 *   plant-repo:DIR        makes DIR/.git a repository (HEAD, objects,
 *                         refs, a config naming a core.fsmonitor)
 *   forks:N               forks N children that wait, says how many it
 *                         could start (each is ended after)
 *   host:PID              names the host: the "parent" of the checks
 *                         after it (in a PID namespace of its own the
 *                         probe's parent is 0), said "ok"
 *   daemon:PATH           a grandchild in a session of its own that
 *                         would outlive the probe, writing its pid (the
 *                         host's number for it) to PATH, which the probe
 *                         waits for (the test reads and kills it)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/klog.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>

#include <jptool/vfs_tool.h>

static char report[1 << 14];
static size_t report_len;
/* The host the "parent" checks aim at (host:PID), else getppid(). */
static pid_t host_pid;

static pid_t host(void)
{
    return host_pid > 0 ? host_pid : getppid();
}

static void say(const char *check, const char *outcome)
{
    int n = snprintf(report + report_len, sizeof(report) - report_len, "%s%s %s",
                     report_len > 0 ? "\n" : "", check, outcome);
    if (n > 0 && (size_t)n < sizeof(report) - report_len)
        report_len += (size_t)n;
}

static const char *errno_name(int e)
{
    switch (e) {
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    case ENOTTY: return "ENOTTY";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EXDEV: return "EXDEV";
    case EBADF: return "EBADF";
    case EFAULT: return "EFAULT";
    case EEXIST: return "EEXIST";
    case EIO: return "EIO";
    case EROFS: return "EROFS";
    case ENODATA: return "ENODATA";
    case ESRCH: return "ESRCH";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    default: return strerror(e);
    }
}

/* `rc` < 0: the errno's name; else ok. */
static const char *outcome(long rc)
{
    return rc < 0 ? errno_name(errno) : "ok";
}

static long close_after(long fd)
{
    if (fd >= 0)
        close((int)fd);
    return fd;
}

static long try_connect(int family, const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    long rc = connect(fd, sa, len);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static long check_environ(void)
{
    char path[64], buf[64];
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)host());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long n = read(fd, buf, sizeof(buf));
    int e = errno;
    close(fd);
    errno = e;
    return n;
}

static long check_exec(const char *path)
{
    pid_t pid = fork();
    int status;
    if (pid < 0)
        return -1;
    if (pid == 0) {
        char *const argv[] = {(char *)path, NULL};
        execv(path, argv);
        _exit(126 + (errno == ENOENT));
    }
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        errno = WIFEXITED(status) && WEXITSTATUS(status) == 126 ? EACCES : EIO;
        return -1;
    }
    return 0;
}

static long check_clone_user(void)
{
    long pid = syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), NULL, NULL, NULL, 0);
    if (pid == 0)
        _exit(0);
    if (pid > 0)
        waitpid((pid_t)pid, NULL, 0);
    return pid;
}

static long check_clone3(void)
{
    struct clone_args args;
    memset(&args, 0, sizeof(args));
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid == 0)
        _exit(0);
    if (pid > 0)
        waitpid((pid_t)pid, NULL, 0);
    return pid;
}

static long check_read(const char *path, const char **what)
{
    char buf[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long n = read(fd, buf, sizeof(buf));
    int e = errno;
    close(fd);
    errno = e;
    if (n == 0)
        *what = "empty";
    return n;
}

static long check_write(const char *path)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long n = write(fd, "0", 1);
    int e = errno;
    close(fd);
    errno = e;
    return n;
}

static long check_fchmod(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long rc = fchmod(fd, 0666);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static long check_utimes(const char *path, bool now)
{
    struct timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
    return utimensat(AT_FDCWD, path, now ? NULL : times, 0);
}

static char caps_text[32];

static const char *check_caps(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) != 0)
        return errno_name(errno);
    uint64_t eff = (uint64_t)data[1].effective << 32 | data[0].effective;
    uint64_t prm = (uint64_t)data[1].permitted << 32 | data[0].permitted;
    if (eff == 0 && prm == 0)
        return "none";
    snprintf(caps_text, sizeof(caps_text), "%llx", (unsigned long long)(eff | prm));
    return caps_text;
}

static long check_sethostname(void)
{
    char name[256];
    if (gethostname(name, sizeof(name)) != 0)
        return -1;
    return sethostname(name, strlen(name));
}

static long check_fanotify(void)
{
    int fd = fanotify_init(FAN_CLASS_NOTIF, O_RDONLY);
    if (fd < 0)
        return -1;
    long rc = fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_OPEN, AT_FDCWD, "/");
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static long check_sched_fifo(void)
{
    struct sched_param fifo = {.sched_priority = 1}, other = {.sched_priority = 0};
    long rc = sched_setscheduler(0, SCHED_FIFO, &fifo);
    int e = errno;
    if (rc == 0)
        sched_setscheduler(0, SCHED_OTHER, &other);
    errno = e;
    return rc;
}

static long check_prlimit(pid_t pid)
{
    struct rlimit now;
    if (prlimit(pid, RLIMIT_NOFILE, NULL, &now) != 0)
        return -1;
    return prlimit(pid, RLIMIT_NOFILE, &now, NULL);
}

/* Each of these sets what is set already; where the process is not in
 * the probe's PID namespace (ESRCH: the host, from a namespace of its
 * own), it sets its own value, which can reach no process: the set
 * itself is what is checked, the filter answering first. */
static long check_nice(pid_t pid)
{
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)pid);
    if (nice == -1 && errno == ESRCH)
        nice = getpriority(PRIO_PROCESS, 0);
    else if (nice == -1 && errno != 0)
        return -1;
    return setpriority(PRIO_PROCESS, (id_t)pid, nice);
}

static long check_affinity(pid_t pid)
{
    cpu_set_t set;
    if (sched_getaffinity(pid, sizeof(set), &set) != 0 &&
        (errno != ESRCH || sched_getaffinity(0, sizeof(set), &set) != 0))
        return -1;
    return sched_setaffinity(pid, sizeof(set), &set);
}

static long check_ioprio(pid_t pid)
{
    long prio = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, pid);
    if (prio < 0 && errno == ESRCH)
        prio = syscall(SYS_ioprio_get, 1, 0);
    if (prio < 0)
        return -1;
    return syscall(SYS_ioprio_set, 1, pid, prio);
}

/* A datagram to the socket at `path` from a socket (or a pair's end) of
 * type SOCK_RAW, never connected. */
static long check_dgram_send(const char *path, bool pair)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    int sv[2] = {-1, -1};
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    long rc = pair ? socketpair(AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0, sv)
                   : (sv[0] = socket(AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0));
    if (rc < 0)
        return -1;
    rc = sendto(sv[0], "probe", 5, 0, (const struct sockaddr *)&sun, sizeof(sun));
    int e = errno;
    close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    errno = e;
    return rc;
}

static long check_inotify(const char *path)
{
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0)
        return -1;
    long rc = inotify_add_watch(fd, path, IN_ALL_EVENTS);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static long check_handle(const char *path)
{
    struct {
        struct file_handle h;
        unsigned char room[128];
    } fh;
    int mount_id;
    fh.h.handle_bytes = sizeof(fh.room);
    return name_to_handle_at(AT_FDCWD, path, &fh.h, &mount_id, 0);
}

/* The parent as the owner of `fd`, by F_SETOWN (`ioctl` false) or
 * FIOSETOWN, its events signalled with `sig` (O_ASYNC). */
static long check_owner(int fd, bool ioctl_way, int sig)
{
    int parent = (int)host(), flags = fcntl(fd, F_GETFL);
    long rc = ioctl_way ? ioctl(fd, FIOSETOWN, &parent) : fcntl(fd, F_SETOWN, parent);
    if (rc == 0)
        rc = fcntl(fd, F_SETSIG, sig);
    if (rc == 0)
        rc = flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_ASYNC);
    return rc;
}

static long check_owner_pair(int sig)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    long rc = check_owner(sv[0], true, sig);
    int e = errno;
    if (rc == 0 && write(sv[1], "x", 1) != 1)
        rc = -1, e = errno;
    close(sv[0]);
    close(sv[1]);
    errno = e;
    return rc;
}

static long check_fchmod_mode(const char *path, mode_t mode)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long rc = fchmod(fd, mode);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static long check_tmpfile(const char *dir)
{
    char name[4200], proc[64];
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 04755);
    if (fd < 0)
        return -1;
    snprintf(name, sizeof(name), "%s/tmpfile", dir);
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    /* Linked by its fd (AT_EMPTY_PATH needs a capability; the /proc link
     * needs /proc): either shows the file made. */
    long rc = linkat(fd, "", AT_FDCWD, name, AT_EMPTY_PATH);
    if (rc != 0)
        rc = linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW);
    if (rc != 0)
        rc = 0; /* made all the same: the mode is what was asked */
    close(fd);
    return rc;
}

static long check_openat2_create(const char *path)
{
    struct {
        uint64_t flags, mode, resolve;
    } how = {O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 04755, 0};
    return close_after(syscall(437 /* openat2 */, AT_FDCWD, path, &how, sizeof(how)));
}

/* `fd` bound to the abstract name `name` (`abstract`) or the path. */
static long bind_unix(int fd, const char *name, bool abstract)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n + 1 >= sizeof(sun.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sun.sun_path + abstract, name, n);
    return bind(fd, (const struct sockaddr *)&sun,
                (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + n));
}

static long check_listen(const char *name, bool abstract)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    long rc = bind_unix(fd, name, abstract);
    if (rc == 0)
        rc = listen(fd, 1);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

static long check_pair_bind(const char *name)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    long rc = bind_unix(sv[0], name, true);
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    errno = e;
    return rc;
}

static long check_daemon(const char *path)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (setsid() < 0 || fork() != 0)
            _exit(0);
        /* Its pid as the host knows it: in a PID namespace of its own
         * getpid() names another process of the host; /proc/self, read
         * through the host's /proc (readlink of a path it may not open),
         * does not. */
        char self[32];
        ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
        FILE *f = fopen(path, "w");
        if (f != NULL) {
            if (n > 0) {
                self[n] = '\0';
                fprintf(f, "%s\n", self);
            } else
                fprintf(f, "%d\n", (int)getpid());
            fclose(f);
        }
        for (int i = 0; i < 600; i++)
            sleep(1);
        _exit(0);
    }
    if (waitpid(pid, NULL, 0) != pid)
        return -1;
    /* The probe ends once the daemon is surely running. */
    for (int i = 0; i < 500; i++) {
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size > 0)
            return 0;
        usleep(10000);
    }
    errno = ETIMEDOUT;
    return -1;
}

static long write_file_at(const char *dir, const char *name, const char *text)
{
    char path[4300];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    long rc = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
    close(fd);
    return rc;
}

static long check_plant_repo(const char *dir)
{
    char git[4200], sub[4300];
    snprintf(git, sizeof(git), "%s/.git", dir);
    if (mkdir(git, 0755) != 0)
        return -1;
    snprintf(sub, sizeof(sub), "%s/objects", git);
    if (mkdir(sub, 0755) != 0)
        return -1;
    snprintf(sub, sizeof(sub), "%s/refs", git);
    if (mkdir(sub, 0755) != 0)
        return -1;
    if (write_file_at(git, "HEAD", "ref: refs/heads/main\n") != 0)
        return -1;
    return write_file_at(git, "config", "[core]\n\tfsmonitor = touch pwned\n");
}

/* Forks up to `n` children that wait for the end of a pipe; says how many
 * started, then ends and reaps them. */
static void check_forks(const char *check, int n)
{
    int p[2], started = 0;
    char text[32];

    if (pipe(p) != 0) {
        say(check, errno_name(errno));
        return;
    }
    for (; started < n; started++) {
        pid_t pid = fork();
        if (pid < 0)
            break;
        if (pid == 0) {
            char c;
            close(p[1]);
            while (read(p[0], &c, 1) < 0 && errno == EINTR)
                ;
            _exit(0);
        }
    }
    close(p[0]);
    close(p[1]);
    while (wait(NULL) > 0 || errno == EINTR)
        ;
    snprintf(text, sizeof(text), "%d", started);
    say(check, text);
}

static void run(const char *check)
{
    const char *arg = strchr(check, ':') != NULL ? strchr(check, ':') + 1 : "";
    long rc;

    if (strncmp(check, "open:", 5) == 0)
        rc = close_after(open(arg, O_RDONLY | O_CLOEXEC));
    else if (strncmp(check, "create:", 7) == 0) {
        rc = close_after(open(arg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
        if (rc >= 0)
            unlink(arg);
    } else if (strncmp(check, "truncate:", 9) == 0)
        rc = truncate(arg, 0);
    else if (strcmp(check, "environ") == 0)
        rc = check_environ();
    else if (strcmp(check, "socket-inet") == 0)
        rc = close_after(socket(AF_INET, SOCK_STREAM, 0));
    else if (strcmp(check, "socket-unix") == 0)
        rc = close_after(socket(AF_UNIX, SOCK_STREAM, 0));
    else if (strcmp(check, "socket-unix-dgram") == 0)
        rc = close_after(socket(AF_UNIX, SOCK_DGRAM, 0));
    else if (strcmp(check, "socketpair") == 0) {
        int sv[2];
        rc = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
        if (rc == 0) {
            close(sv[0]);
            close(sv[1]);
        }
    } else if (strncmp(check, "tcp:", 4) == 0) {
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)atoi(arg)),
                                  .sin_addr = {htonl(INADDR_LOOPBACK)}};
        rc = try_connect(AF_INET, (const struct sockaddr *)&sin, sizeof(sin));
    } else if (strncmp(check, "unix:", 5) == 0) {
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", arg);
        rc = try_connect(AF_UNIX, (const struct sockaddr *)&sun, sizeof(sun));
    } else if (strcmp(check, "io_uring") == 0) {
        char params[120];
        memset(params, 0, sizeof(params));
        rc = close_after(syscall(SYS_io_uring_setup, 1, params));
    } else if (strcmp(check, "ptrace") == 0) {
        rc = ptrace(PTRACE_SEIZE, host(), NULL, NULL);
        if (rc == 0)
            ptrace(PTRACE_DETACH, host(), NULL, NULL);
    } else if (strcmp(check, "process_vm") == 0) {
        char buf[8];
        struct iovec local = {buf, sizeof(buf)}, remote = {(void *)&report, sizeof(buf)};
        rc = process_vm_readv(host(), &local, 1, &remote, 1, 0);
    } else if (strcmp(check, "unshare-user") == 0)
        rc = unshare(CLONE_NEWUSER);
    else if (strcmp(check, "clone-user") == 0)
        rc = check_clone_user();
    else if (strcmp(check, "clone3") == 0)
        rc = check_clone3();
    else if (strcmp(check, "tiocsti") == 0)
        rc = ioctl(0, TIOCSTI, "x");
    else if (strcmp(check, "keyctl") == 0)
        rc = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
    else if (strcmp(check, "bpf") == 0)
        rc = syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, NULL, 0);
    else if (strcmp(check, "mount") == 0)
        rc = mount("none", "/nonexistent-jpt-sandbox-probe", "tmpfs", 0, NULL);
    else if (strcmp(check, "signal-parent") == 0)
        rc = kill(host(), 0);
    else if (strncmp(check, "exec:", 5) == 0)
        rc = check_exec(arg);
    else if (strncmp(check, "env:", 4) == 0) {
        say(check, getenv(arg) != NULL ? "set" : "unset");
        return;
    } else if (strncmp(check, "read:", 5) == 0) {
        const char *what = NULL;
        rc = check_read(arg, &what);
        if (what != NULL) {
            say(check, what);
            return;
        }
    } else if (strncmp(check, "write:", 6) == 0)
        rc = check_write(arg);
    else if (strncmp(check, "chmod:", 6) == 0)
        rc = chmod(arg, 0666);
    else if (strncmp(check, "fchmod:", 7) == 0)
        rc = check_fchmod(arg);
    else if (strncmp(check, "fchmodat2:", 10) == 0)
        rc = syscall(452 /* fchmodat2 */, AT_FDCWD, arg, 0666, 0);
    else if (strncmp(check, "chown:", 6) == 0)
        rc = chown(arg, 65534, (gid_t)-1);
    else if (strncmp(check, "utimes:", 7) == 0)
        rc = check_utimes(arg, false);
    else if (strncmp(check, "touch:", 6) == 0)
        rc = check_utimes(arg, true);
    else if (strncmp(check, "setxattr:", 9) == 0)
        rc = setxattr(arg, "user.jpt_probe", "x", 1, 0);
    else if (strncmp(check, "getxattr:", 9) == 0) {
        char v[16];
        rc = getxattr(arg, "user.jpt_probe", v, sizeof(v));
    } else if (strncmp(check, "stat:", 5) == 0) {
        struct stat st;
        rc = stat(arg, &st);
    } else if (strcmp(check, "caps") == 0) {
        say(check, check_caps());
        return;
    } else if (strcmp(check, "sethostname") == 0)
        rc = check_sethostname();
    else if (strcmp(check, "syslog") == 0)
        rc = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
    else if (strcmp(check, "settimeofday") == 0)
        rc = syscall(SYS_settimeofday, NULL, NULL);
    else if (strcmp(check, "reboot") == 0)
        rc = syscall(SYS_reboot, 0, 0, 0, NULL);
    else if (strcmp(check, "kexec") == 0)
        rc = syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0xdead0000UL);
    else if (strcmp(check, "fanotify") == 0)
        rc = check_fanotify();
    else if (strcmp(check, "sched-fifo") == 0)
        rc = check_sched_fifo();
    else if (strcmp(check, "prlimit-parent") == 0)
        rc = check_prlimit(host());
    else if (strcmp(check, "prlimit-self") == 0)
        rc = check_prlimit(0) < 0 ? -1 : check_prlimit(getpid());
    else if (strcmp(check, "nice-parent") == 0)
        rc = check_nice(host());
    else if (strcmp(check, "affinity-parent") == 0)
        rc = check_affinity(host());
    else if (strcmp(check, "affinity-self") == 0)
        rc = check_affinity(0) < 0 ? -1 : check_affinity(getpid());
    else if (strcmp(check, "ioprio-parent") == 0)
        rc = check_ioprio(host());
    else if (strcmp(check, "socket-unix-raw") == 0)
        rc = close_after(socket(AF_UNIX, SOCK_RAW, 0));
    else if (strcmp(check, "socketpair-raw") == 0) {
        int sv[2];
        rc = socketpair(AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0, sv);
        if (rc == 0) {
            close(sv[0]);
            close(sv[1]);
        }
    } else if (strncmp(check, "raw-sendto:", 11) == 0)
        rc = check_dgram_send(arg, false);
    else if (strncmp(check, "pair-sendto:", 12) == 0)
        rc = check_dgram_send(arg, true);
    else if (strncmp(check, "inotify:", 8) == 0)
        rc = check_inotify(arg);
    else if (strncmp(check, "handle:", 7) == 0)
        rc = check_handle(arg);
    else if (strcmp(check, "cwd") == 0) {
        char cwd[4096];
        say(check, getcwd(cwd, sizeof(cwd)) != NULL ? cwd : errno_name(errno));
        return;
    } else if (strcmp(check, "kill-every") == 0)
        rc = kill(-1, 0);
    else if (strncmp(check, "owner-parent:", 13) == 0)
        rc = check_owner(1, false, atoi(arg));
    else if (strncmp(check, "owner-pair:", 11) == 0)
        rc = check_owner_pair(atoi(arg));
    else if (strncmp(check, "chmod-setuid:", 13) == 0)
        rc = chmod(arg, 04755);
    else if (strncmp(check, "chmod-setgid:", 13) == 0)
        rc = chmod(arg, 02755);
    else if (strncmp(check, "fchmod-setuid:", 14) == 0)
        rc = check_fchmod_mode(arg, 04755);
    else if (strncmp(check, "fchmodat2-setuid:", 17) == 0)
        rc = syscall(452 /* fchmodat2 */, AT_FDCWD, arg, 04755, 0);
    else if (strncmp(check, "create-setuid:", 14) == 0)
        rc = close_after(open(arg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 04755));
    else if (strncmp(check, "openat-setgid:", 14) == 0)
        rc = close_after(openat(AT_FDCWD, arg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 02755));
    else if (strncmp(check, "creat-setuid:", 13) == 0)
        rc = close_after(creat(arg, 04755));
    else if (strncmp(check, "mknod-setuid:", 13) == 0)
        rc = mknod(arg, S_IFREG | 04755, 0);
    else if (strncmp(check, "tmpfile-setuid:", 15) == 0)
        rc = check_tmpfile(arg);
    else if (strncmp(check, "openat2-create:", 15) == 0)
        rc = check_openat2_create(arg);
    else if (strncmp(check, "listen-abstract:", 16) == 0)
        rc = check_listen(arg, true);
    else if (strncmp(check, "listen-path:", 12) == 0)
        rc = check_listen(arg, false);
    else if (strncmp(check, "pair-bind:", 10) == 0)
        rc = check_pair_bind(arg);
    else if (strncmp(check, "daemon:", 7) == 0)
        rc = check_daemon(arg);
    else if (strncmp(check, "host:", 5) == 0)
        host_pid = (pid_t)atoi(arg);
    else if (strncmp(check, "plant-repo:", 11) == 0)
        rc = check_plant_repo(arg);
    else if (strncmp(check, "forks:", 6) == 0) {
        check_forks(check, atoi(arg));
        return;
    }
    else if (strcmp(check, "pid") == 0) {
        char pid[32];
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        say(check, pid);
        return;
    } else {
        say(check, "unknown-check");
        return;
    }
    say(check, outcome(rc));
}

/* In a sanitizer build, LeakSanitizer's check at exit reads /proc and
 * uses ptrace, which the sandbox denies: it would fail the probe. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

int main(int argc, char **argv)
{
    jpt_vfs_tool *t = NULL;
    int first = 1;

    if (argc > 1 && strcmp(argv[1], "--vfs") == 0) {
        first = 2;
        if (jpt_vfs_tool_connect(&t) != JPT_OK) {
            fprintf(stderr, "sandbox-probe: connect: %s\n", jpt_vfs_tool_errmsg(t));
            return 1;
        }
    }
    for (int i = first; i < argc; i++)
        run(argv[i]);
    if (t == NULL) {
        printf("%s\n", report);
        return 0;
    }
    int rc = jpt_vfs_tool_result_text(t, report);
    jpt_vfs_tool_free(t);
    return rc == JPT_OK ? 0 : 1;
}
