/* The cgroup v2 mechanics of containment: where the host's own cgroup is,
 * killing every process of a cgroup, and whether one still has any. See
 * process.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/process.h"

/* Reads the file `path` (relative to the directory `dir`) whole into
 * `out`, NUL-terminated; -1 with errno set. */
static int read_whole(int dir, const char *path, jpt__buf *out)
{
    int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    for (;;) {
        if (jpt__buf_reserve(out, 4096) < 0) {
            close(fd);
            errno = ENOMEM;
            return -1;
        }
        ssize_t n = read(fd, out->data + out->len, out->cap - out->len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = errno;
            close(fd);
            out->data[out->len] = '\0';
            errno = e;
            return n < 0 ? -1 : 0;
        }
        out->len += (size_t)n;
    }
}

/* Undoes, in place, the octal escapes (\040 for a space) of mountinfo. */
static void unescape(char *s)
{
    char *w = s;

    for (const char *r = s; *r != '\0';) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else
            *w++ = *r++;
    }
    *w = '\0';
}

/* The part of `path` (a cgroup, as /proc/self/cgroup names it) below
 * `root` (the cgroup a mount shows at its mount point), or NULL when the
 * mount does not show it. */
static const char *below(const char *path, const char *root)
{
    size_t n = strlen(root);

    if (strcmp(root, "/") == 0)
        return path;
    if (strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == '\0'))
        return path + n;
    return NULL;
}

/* The directory of cgroup `path` through the first cgroup2 mount that
 * shows it, appended to `dir`. A line of mountinfo reads "ID PARENT
 * MAJ:MIN ROOT POINT OPTIONS… - FSTYPE SOURCE SUPER-OPTIONS". */
static int through_mount(char *mountinfo, const char *path, jpt__buf *dir, jpt__errbuf *err)
{
    char *next;

    for (char *line = mountinfo; *line != '\0'; line = next) {
        char *end = strchr(line, '\n');
        next = end != NULL ? end + 1 : line + strlen(line);
        if (end != NULL)
            *end = '\0';
        const char *dash = strstr(line, " - ");
        if (dash == NULL || strncmp(dash + 3, "cgroup2 ", 8) != 0)
            continue;
        char *field[5], *save = NULL;
        int n = 0;
        for (char *t = strtok_r(line, " ", &save); t != NULL && n < 5;
             t = strtok_r(NULL, " ", &save))
            field[n++] = t;
        if (n < 5)
            continue;
        unescape(field[3]);
        unescape(field[4]);
        const char *rest = below(path, field[3]);
        if (rest == NULL)
            continue;
        if (jpt__buf_printf(dir, "%s%s", field[4], rest) < 0)
            return jpt__err(err, JPT_ERR_NOMEM, "out of memory naming the host's cgroup");
        return JPT_OK;
    }
    return jpt__err(err, JPT_ERR_UNSUPPORTED,
                    "no cgroup2 file system is mounted where it shows the host's cgroup %s",
                    path);
}

int jpt__cgroup_path(char *cgroup, char *mountinfo, jpt__buf *dir, jpt__errbuf *err)
{
    /* The unified hierarchy's line is "0::PATH"; v1 hierarchies have
     * their own numbers. */
    char *path = strncmp(cgroup, "0::", 3) == 0 ? cgroup + 3 : strstr(cgroup, "\n0::");

    if (path == NULL)
        return jpt__err(err, JPT_ERR_UNSUPPORTED, "the host is in no cgroup v2 "
                                                  "(/proc/self/cgroup has no \"0::\" line)");
    if (path[0] == '\n')
        path += 4;
    path[strcspn(path, "\n")] = '\0';
    return through_mount(mountinfo, path, dir, err);
}

int jpt__cgroup_open_host(jpt__buf *path, jpt__errbuf *err)
{
    jpt__buf cgroup = JPT__BUF_INIT, mounts = JPT__BUF_INIT, dir = JPT__BUF_INIT;
    int fd;

    if (read_whole(AT_FDCWD, "/proc/self/cgroup", &cgroup) < 0 ||
        read_whole(AT_FDCWD, "/proc/self/mountinfo", &mounts) < 0)
        fd = jpt__err(err, errno == ENOMEM ? JPT_ERR_NOMEM : JPT_ERR_UNSUPPORTED,
                      "reading /proc/self/cgroup and mountinfo: %s", strerror(errno));
    else if ((fd = jpt__cgroup_path(cgroup.data, mounts.data, &dir, err)) == JPT_OK &&
             (fd = open(dir.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        fd = jpt__err(err, JPT_ERR_UNSUPPORTED, "opening the host's cgroup %s: %s", dir.data,
                      strerror(errno));
    if (fd >= 0 && path != NULL && jpt__buf_append(path, dir.data, dir.len) < 0) {
        close(fd);
        fd = jpt__err(err, JPT_ERR_NOMEM, "out of memory naming the host's cgroup");
    }
    jpt__buf_free(&cgroup);
    jpt__buf_free(&mounts);
    jpt__buf_free(&dir);
    return fd;
}

int jpt__cgroup_kill(int dir)
{
    int fd = openat(dir, "cgroup.kill", O_WRONLY | O_CLOEXEC);

    if (fd < 0)
        return errno == ENOENT ? jpt__cgroup_kill_each(dir) : JPT_ERR_IO;
    ssize_t n = write(fd, "1", 1);
    close(fd);
    return n == 1 ? JPT_OK : JPT_ERR_IO;
}

static bool listed(const pid_t *pids, size_t n, pid_t pid)
{
    for (size_t i = 0; i < n; i++)
        if (pids[i] == pid)
            return true;
    return false;
}

/* Rounds of reading the members and sending SIGKILL to those not signalled
 * before. A member forks nothing once SIGKILL is pending, and a process it
 * forked before is listed by the next read: so a read that shows no new
 * member ends it, everything then in the cgroup is dying. */
int jpt__cgroup_kill_each(int dir)
{
    pid_t *signalled = NULL;
    size_t n = 0, cap = 0;
    int rc = JPT_OK;
    bool more = true;

    while (more && rc == JPT_OK) {
        jpt__buf procs = JPT__BUF_INIT;
        more = false;
        if (read_whole(dir, "cgroup.procs", &procs) < 0) {
            jpt__buf_free(&procs);
            rc = errno == ENOMEM ? JPT_ERR_NOMEM : JPT_ERR_IO;
            break;
        }
        char *p = procs.data, *end;
        for (long pid; (pid = strtol(p, &end, 10)) > 0; p = end) {
            if (listed(signalled, n, (pid_t)pid))
                continue;
            kill((pid_t)pid, SIGKILL);
            pid_t *grown = jpt__array_reserve(signalled, &cap, n + 1, sizeof(*grown), 16);
            if (grown == NULL) {
                /* Without memory to tell new members from old, this round's
                 * are signalled and the rounds end. */
                rc = JPT_ERR_NOMEM;
                continue;
            }
            signalled = grown;
            signalled[n++] = (pid_t)pid;
            more = true;
        }
        jpt__buf_free(&procs);
    }
    jpt__free(signalled);
    return rc;
}

bool jpt__cgroup_has_controller(int dir, const char *name)
{
    jpt__buf text = JPT__BUF_INIT;
    bool found = false;

    if (read_whole(dir, "cgroup.subtree_control", &text) == 0)
        for (char *save = NULL, *w = strtok_r(text.data, " \n", &save); w != NULL && !found;
             w = strtok_r(NULL, " \n", &save))
            found = strcmp(w, name) == 0;
    jpt__buf_free(&text);
    return found;
}

int jpt__cgroup_populated(int events)
{
    char buf[256];
    ssize_t n = pread(events, buf, sizeof(buf) - 1, 0);

    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *at = strstr(buf, "populated ");
    return at == NULL ? -1 : at[10] == '1';
}
