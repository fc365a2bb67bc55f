/* The system calls of the calling thread, counted by the kernel without
 * ptrace or seccomp: a perf event on the raw_syscalls:sys_enter
 * tracepoint (issue 17 §4). Shared by the tests (a request's calls) and
 * the benchmarks (their figure of calls per request). */
#ifndef JPT_TEST_SYSCALL_COUNT_H
#define JPT_TEST_SYSCALL_COUNT_H

/* A counter of this thread's system calls from now on (not its
 * children's), or -1 where the kernel opens none to this process: not
 * root nor CAP_PERFMON with kernel.perf_event_paranoid above 1, no
 * tracefs. Close it when done. */
int syscall_counter_open(void);
/* The calls counted so far, or -1. From the thread that opened it. */
long long syscall_counter_read(int fd);

#endif
