/* The state file (RFD 009, "Handle cleanup guarantees"): while a registry
 * has live children, a file lists each one's pid and start time, so that a
 * process started after a crash can kill the orphans and only them.
 *
 * The file is a row of fixed-width slots, one per live child: a spawn
 * writes its child's slot and an exit blanks it, each with one pwrite of a
 * few bytes, so the cost of a spawn or an exit does not grow with the
 * number of children alive (the start time is read from /proc once, at the
 * spawn). Freed slots are reused. A blank slot is spaces ending in a
 * newline, which the reader skips. In cgroup containment a line before the
 * slots says where the host's cgroups are (issue 18): a crashed host
 * leaves them, with what got away from its children in them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <limits.h>

#include "registry/base.h"

/* "<pid> <start time>" padded with spaces, then a newline. */
#define SLOT_BYTES 32

/* The cgroups record is a line at most this long. */
#define RECORD_MAX (PATH_MAX + 64)

int jpt__stale_open(jpt_registry *r)
{
    jpt__buf record = JPT__BUF_INIT;

    if (r->state_file == NULL)
        return JPT_OK;
    if (jpt__contain_stale_record(r->contain, &record) < 0)
        return jpt__err(&r->err, JPT_ERR_NOMEM, "out of memory writing the state file");
    r->state_fd = open(r->state_file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (r->state_fd < 0) {
        jpt__buf_free(&record);
        return jpt__err(&r->err, JPT_ERR_IO, "opening the state file %s: %s", r->state_file,
                        strerror(errno));
    }
    r->state_base = record.len;
    ssize_t n = record.len > 0 ? write(r->state_fd, record.data, record.len) : 0;
    jpt__buf_free(&record);
    if (n != (ssize_t)r->state_base) {
        int e = n < 0 ? errno : EIO;
        jpt__stale_close(r);
        return jpt__err(&r->err, JPT_ERR_IO, "writing the state file %s: %s", r->state_file,
                        strerror(e));
    }
    return JPT_OK;
}

void jpt__stale_close(jpt_registry *r)
{
    if (r->state_fd < 0)
        return;
    close(r->state_fd);
    r->state_fd = -1;
    unlink(r->state_file);
}

static void write_slot(jpt_registry *r, size_t slot, const char *text)
{
    char record[SLOT_BYTES];
    size_t n = strlen(text);

    memset(record, ' ', sizeof(record));
    memcpy(record, text, n < SLOT_BYTES - 1 ? n : SLOT_BYTES - 1);
    record[SLOT_BYTES - 1] = '\n';
    if (pwrite(r->state_fd, record, sizeof(record),
               (off_t)(r->state_base + slot * SLOT_BYTES)) !=
        (ssize_t)sizeof(record))
        /* A spawn does not fail for its bookkeeping: the child runs, and
         * only a crash of the host would show what was not written. */
        jpt__log(JPT_LOG_WARNING, "writing the state file %s: %s", r->state_file,
                 errno != 0 ? strerror(errno) : "short write");
}

size_t jpt__stale_add(jpt_registry *r, pid_t pid)
{
    char text[SLOT_BYTES];
    size_t slot;

    if (r->state_fd < 0)
        return 0;
    if (r->nfree_slots > 0)
        slot = r->free_slots[--r->nfree_slots];
    else
        slot = r->nslots++;
    snprintf(text, sizeof(text), "%d %" PRIu64, (int)pid, jpt__process_start_time(pid));
    write_slot(r, slot, text);
    return slot + 1;
}

void jpt__stale_remove(jpt_registry *r, size_t slot_number)
{
    if (r->state_fd < 0 || slot_number == 0)
        return;
    size_t slot = slot_number - 1;
    write_slot(r, slot, "");
    size_t *grown = jpt__array_reserve(r->free_slots, &r->cap_free_slots,
                                       r->nfree_slots + 1, sizeof(*grown), 16);
    /* Without memory to remember it, the slot stays blank and unused. */
    if (grown != NULL) {
        r->free_slots = grown;
        r->free_slots[r->nfree_slots++] = slot;
    }
}

/* The cgroups record at the start of the file `f`, read into `line`: true
 * with its prefix and directory when there is one; the file is then past
 * it, else back at its start. */
static bool read_record(FILE *f, char *line, size_t n, const char **prefix, const char **dir)
{
    if (fgets(line, (int)n, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (jpt__contain_stale_parse(line, prefix, dir))
            return true;
    }
    rewind(f);
    return false;
}

int jpt__stale_in_use(const char *path)
{
    char line[RECORD_MAX];
    const char *prefix, *dir;
    int c, rc = JPT_OK;
    FILE *f = fopen(path, "re");

    if (f == NULL)
        return errno == ENOENT ? JPT_OK : JPT_ERR_IO;
    /* Cgroups a crashed host left, or a live one uses. */
    if (read_record(f, line, sizeof(line), &prefix, &dir)) {
        int left = jpt__contain_stale_left(dir, prefix);
        rc = left > 0 ? JPT_ERR_EXISTS : left < 0 ? JPT_ERR_IO : JPT_OK;
    }
    /* Any record, not just any byte: blank slots list nobody. */
    while (rc == JPT_OK && (c = getc(f)) != EOF)
        if (c != ' ' && c != '\n')
            rc = JPT_ERR_EXISTS;
    if (rc == JPT_OK && ferror(f))
        rc = JPT_ERR_IO;
    fclose(f);
    return rc;
}

JPT_EXPORT int jpt_registry_reap_stale(const char *path, size_t *killed)
{
    char line[RECORD_MAX];
    const char *prefix = NULL, *dir = NULL;
    int pid;
    uint64_t start;
    size_t count = 0;

    jpt__fail_clear();
    if (killed != NULL)
        *killed = 0;
    if (path == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_registry_reap_stale: path is NULL");
    FILE *f = fopen(path, "re");
    if (f == NULL && errno == ENOENT)
        return JPT_OK;
    if (f == NULL)
        return jpt__fail(JPT_ERR_IO, "jpt_registry_reap_stale: reading '%s': %s", path,
                         strerror(errno));
    bool cgroups = read_record(f, line, sizeof(line), &prefix, &dir);
    /* fscanf skips the blank slots as whitespace. */
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
    /* What got away from the children, in their cgroups, and the cgroups
     * themselves. */
    jpt__errbuf err;
    if (cgroups && jpt__contain_reap_stale(dir, prefix, &count, &err) < 0) {
        if (killed != NULL)
            *killed = count;
        return jpt__fail(JPT_ERR_IO, "jpt_registry_reap_stale: '%s': %s", path, err.text);
    }
    if (killed != NULL)
        *killed = count;
    if (unlink(path) < 0)
        return jpt__fail(JPT_ERR_IO, "jpt_registry_reap_stale: removing '%s': %s", path,
                         strerror(errno));
    return JPT_OK;
}
