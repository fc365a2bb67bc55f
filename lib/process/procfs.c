/* What /proc says of a process (its parent, group, session and start
 * time) and killing a whole session by it. The bottom of the process room:
 * the spawner, the containment (contain.c) and the registry's state file
 * of live children read processes through these. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/process.h"

bool jpt__process_stat(pid_t pid, jpt__proc_stat *st)
{
    char path[64], buf[1024];
    int ppid, group, sid;
    unsigned long long started;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses; the
     * fields after it start at the last ')'. */
    char *p = strrchr(buf, ')');
    if (p == NULL || sscanf(p + 1, " %*c %d %d %d", &ppid, &group, &sid) != 3)
        return false;
    p++;
    for (int field = 3; field < 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p, " %llu", &started) != 1)
        return false;
    st->ppid = ppid;
    st->pgrp = group;
    st->session = sid;
    st->start = started;
    return true;
}

uint64_t jpt__process_start_time(pid_t pid)
{
    jpt__proc_stat st;

    return jpt__process_stat(pid, &st) ? st.start : 0;
}

size_t jpt__kill_session(pid_t sid)
{
    size_t killed = 0;
    DIR *proc = opendir("/proc");
    struct dirent *d;

    if (proc == NULL)
        return 0;
    while ((d = readdir(proc)) != NULL) {
        char *end;
        long pid = strtol(d->d_name, &end, 10);
        jpt__proc_stat st;
        if (*end != '\0' || pid <= 1 || !jpt__process_stat((pid_t)pid, &st) ||
            st.session != sid)
            continue;
        if (kill((pid_t)pid, SIGKILL) == 0)
            killed++;
    }
    closedir(proc);
    return killed;
}
