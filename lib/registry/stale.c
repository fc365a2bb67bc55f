/* The state file (RFD 009, "Handle cleanup guarantees"): while a registry
 * has live children, a file lists each one's pid and start time, so that a
 * process started after a crash can kill the orphans and only them. The
 * file is rewritten whole, through a rename, so a crash never leaves half
 * of it. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "registry/registry.h"

int jpt__stale_record(jpt_registry *r)
{
    jpt__buf text = JPT__BUF_INIT, tmp = JPT__BUF_INIT;
    int rc = JPT_OK;

    if (r->state_file == NULL)
        return JPT_OK;
    for (jpt_handle *h = r->handles; rc == JPT_OK && h != NULL; h = h->next) {
        if (h->child == NULL)
            continue;
        pid_t pid = jpt__child_pid(h->child);
        rc = jpt__buf_printf(&text, "%d %" PRIu64 "\n", (int)pid,
                             jpt__process_start_time(pid));
    }
    if (rc == JPT_OK)
        rc = jpt__buf_printf(&tmp, "%s.tmp", r->state_file);
    if (rc == JPT_OK) {
        FILE *f = fopen(tmp.data, "we");
        bool ok = f != NULL && fwrite(text.data != NULL ? text.data : "", 1, text.len, f) ==
                                   text.len;
        if (f != NULL && fclose(f) != 0)
            ok = false;
        if (!ok || rename(tmp.data, r->state_file) < 0) {
            jpt__err(&r->err, JPT_ERR_IO, "writing the state file %s: %s", r->state_file,
                     strerror(errno));
            jpt__log(JPT_LOG_WARNING, "%s", r->err.text);
            unlink(tmp.data);
            rc = JPT_ERR_IO;
        }
    }
    jpt__buf_free(&text);
    jpt__buf_free(&tmp);
    return rc;
}

JPT_EXPORT int jpt_registry_reap_stale(const char *path, size_t *killed)
{
    int pid;
    uint64_t start;
    size_t count = 0;

    if (killed != NULL)
        *killed = 0;
    if (path == NULL)
        return JPT_ERR_INVALID;
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return errno == ENOENT ? JPT_OK : JPT_ERR_IO;
    while (fscanf(f, "%d %" SCNu64, &pid, &start) == 2) {
        if (pid <= 1 || start == 0)
            continue;
        uint64_t now = jpt__process_start_time(pid);
        if (now == start) {
            /* The very process recorded: same pid, same start time. */
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            count++;
        } else if (now == 0) {
            /* The tool died with the host (PR_SET_PDEATHSIG) and was
             * reaped; what it started may live on in its session, whose id
             * no new process can take while a member lives. */
            count += jpt__kill_session(pid);
        }
        /* Else the pid was reused by another process: not ours. */
    }
    fclose(f);
    if (killed != NULL)
        *killed = count;
    return unlink(path) == 0 ? JPT_OK : JPT_ERR_IO;
}
