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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

#include <linux/sched.h>

#include <jptool/vfs_tool.h>

static char report[1 << 14];
static size_t report_len;

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
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)getppid());
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
        rc = ptrace(PTRACE_SEIZE, getppid(), NULL, NULL);
        if (rc == 0)
            ptrace(PTRACE_DETACH, getppid(), NULL, NULL);
    } else if (strcmp(check, "process_vm") == 0) {
        char buf[8];
        struct iovec local = {buf, sizeof(buf)}, remote = {(void *)&report, sizeof(buf)};
        rc = process_vm_readv(getppid(), &local, 1, &remote, 1, 0);
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
        rc = kill(getppid(), 0);
    else if (strncmp(check, "exec:", 5) == 0)
        rc = check_exec(arg);
    else if (strncmp(check, "env:", 4) == 0) {
        say(check, getenv(arg) != NULL ? "set" : "unset");
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
