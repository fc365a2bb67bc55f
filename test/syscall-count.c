/* See syscall-count.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "syscall-count.h"

int syscall_counter_open(void)
{
    struct perf_event_attr attr;
    unsigned long long id;
    FILE *f = fopen("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id", "r");

    if (f == NULL)
        f = fopen("/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id", "r");
    if (f == NULL)
        return -1;
    int got = fscanf(f, "%llu", &id);
    fclose(f);
    if (got != 1)
        return -1;
    memset(&attr, 0, sizeof(attr));
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof(attr);
    attr.config = id;
    /* This thread alone (pid 0, any CPU), counting, no samples. */
    return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

long long syscall_counter_read(int fd)
{
    long long n;

    return read(fd, &n, sizeof(n)) == (ssize_t)sizeof(n) ? n : -1;
}
