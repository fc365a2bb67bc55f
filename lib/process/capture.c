/* Bounded output: the head+tail buffer that keeps a process's output within
 * a fixed size (the end of a failed build is the part that matters, so the
 * tail is never cut), and the limit applied to the text the model reads. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/process.h"

void jpt__capture_init(jpt__capture *c, size_t limit)
{
    memset(c, 0, sizeof(*c));
    c->limit = limit;
    c->spool_fd = -1;
}

void jpt__capture_spool_in(jpt__capture *c, const char *dir, size_t threshold,
                           void (*created)(void *ud, const char *path), void *ud)
{
    c->spool_dir = dir;
    c->spool_threshold = threshold;
    c->spool_created = created;
    c->spool_ud = ud;
}

static void spool_fail(jpt__capture *c, const char *what)
{
    jpt__log(JPT_LOG_WARNING, "spool file %s: %s: %s; the output is kept in memory only",
             c->spool_path != NULL ? c->spool_path : c->spool_dir, what, strerror(errno));
    if (c->spool_fd >= 0)
        close(c->spool_fd);
    c->spool_fd = -1;
    c->spool_failed = true;
}

static void spool_write(jpt__capture *c, const char *p, size_t n)
{
    while (c->spool_fd >= 0 && n > 0) {
        ssize_t w = write(c->spool_fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* A full disk ends the spool, not the tool: the buffer still
             * holds head and tail, and the file what it got. */
            spool_fail(c, "writing");
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* The file is made when the output first outgrows the threshold: it gets
 * what the buffer holds so far (all of it: the threshold is below the
 * buffer's limit, or this is the first byte the buffer would drop). */
static void spool_start(jpt__capture *c)
{
    jpt__buf path = JPT__BUF_INIT;
    jpt__buf so_far = JPT__BUF_INIT;

    if (jpt__buf_printf(&path, "%s/jptool-output-XXXXXX", c->spool_dir) < 0) {
        jpt__buf_free(&path);
        c->spool_failed = true;
        return;
    }
    int fd = mkostemp(path.data, O_CLOEXEC);
    if (fd < 0) {
        jpt__buf_free(&path);
        spool_fail(c, "creating");
        return;
    }
    c->spool_fd = fd;
    c->spool_path = jpt__buf_take(&path);
    if (c->spool_created != NULL)
        c->spool_created(c->spool_ud, c->spool_path);
    if (jpt__capture_text(c, &so_far) == JPT_OK)
        spool_write(c, so_far.data != NULL ? so_far.data : "", so_far.len);
    else
        spool_fail(c, "out of memory copying");
    jpt__buf_free(&so_far);
}

static void spool(jpt__capture *c, const char *p, size_t n)
{
    if (c->spool_dir == NULL || c->spool_failed)
        return;
    if (c->spool_path == NULL) {
        if (c->total + n <= c->spool_threshold && c->total + n <= c->limit)
            return;
        spool_start(c);
    } else if (c->spool_fd < 0) {
        /* More output after a pause: the file grows on. */
        c->spool_fd = open(c->spool_path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (c->spool_fd < 0) {
            spool_fail(c, "reopening");
            return;
        }
    }
    spool_write(c, p, n);
}

void jpt__capture_spool_pause(jpt__capture *c)
{
    if (c->spool_fd >= 0)
        close(c->spool_fd);
    c->spool_fd = -1;
}

int jpt__capture_append(jpt__capture *c, const char *p, size_t n)
{
    size_t head_cap = c->limit / 2;

    spool(c, p, n);
    c->total += n;
    if (c->head.len < head_cap) {
        size_t take = head_cap - c->head.len < n ? head_cap - c->head.len : n;
        if (jpt__buf_append(&c->head, p, take) < 0)
            return JPT_ERR_NOMEM;
        p += take;
        n -= take;
    }
    if (n == 0)
        return JPT_OK;

    /* The tail ring grows to its full size only for output that needs it,
     * so a quiet process costs little memory. */
    size_t ring = c->limit - head_cap;
    if (ring == 0)
        return JPT_OK;
    if (c->tail_cap < ring && c->tail_len + n > c->tail_cap) {
        size_t cap = c->tail_cap ? c->tail_cap : 4096;
        while (cap < c->tail_len + n && cap < ring)
            cap *= 2;
        if (cap > ring)
            cap = ring;
        /* Unroll the ring into the new allocation. */
        char *bigger = jpt__malloc(cap);
        if (bigger == NULL)
            return JPT_ERR_NOMEM;
        for (size_t i = 0; i < c->tail_len; i++)
            bigger[i] = c->tail[(c->tail_start + i) % c->tail_cap];
        jpt__free(c->tail);
        c->tail = bigger;
        c->tail_cap = cap;
        c->tail_start = 0;
    }
    if (n >= c->tail_cap) {
        /* Only the last tail_cap bytes can survive. */
        memcpy(c->tail, p + n - c->tail_cap, c->tail_cap);
        c->tail_start = 0;
        c->tail_len = c->tail_cap;
        return JPT_OK;
    }
    size_t end = (c->tail_start + c->tail_len) % c->tail_cap;
    size_t first = c->tail_cap - end < n ? c->tail_cap - end : n;
    memcpy(c->tail + end, p, first);
    memcpy(c->tail, p + first, n - first);
    if (c->tail_len + n > c->tail_cap) {
        c->tail_start = (c->tail_start + c->tail_len + n - c->tail_cap) % c->tail_cap;
        c->tail_len = c->tail_cap;
    } else
        c->tail_len += n;
    return JPT_OK;
}

uint64_t jpt__capture_omitted(const jpt__capture *c)
{
    return c->total - c->head.len - c->tail_len;
}

static int append_marker(jpt__buf *out, uint64_t omitted, const char *spool_path)
{
    if (spool_path != NULL)
        return jpt__buf_printf(out, "\n[… %" PRIu64 " bytes omitted; the full output "
                                    "is in %s …]\n",
                               omitted, spool_path);
    return jpt__buf_printf(out, "\n[… %" PRIu64 " bytes omitted …]\n", omitted);
}

int jpt__capture_text(const jpt__capture *c, jpt__buf *out)
{
    int rc = jpt__buf_append(out, c->head.data, c->head.len);
    uint64_t omitted = jpt__capture_omitted(c);

    if (rc == JPT_OK && omitted > 0)
        rc = append_marker(out, omitted, c->spool_path);
    if (rc == JPT_OK && c->tail_len > 0) {
        size_t first = c->tail_cap - c->tail_start < c->tail_len
                           ? c->tail_cap - c->tail_start
                           : c->tail_len;
        rc = jpt__buf_append(out, c->tail + c->tail_start, first);
        if (rc == JPT_OK)
            rc = jpt__buf_append(out, c->tail, c->tail_len - first);
    }
    return rc;
}

void jpt__capture_reset(jpt__capture *c)
{
    jpt__buf_free(&c->head);
    jpt__free(c->tail);
    c->tail = NULL;
    c->tail_cap = c->tail_start = c->tail_len = 0;
    c->total = 0;
}

void jpt__capture_free(jpt__capture *c)
{
    jpt__capture_reset(c);
    if (c->spool_fd >= 0)
        close(c->spool_fd);
    c->spool_fd = -1;
    jpt__free(c->spool_path);
    c->spool_path = NULL;
}

/* The largest cut <= at in p[0..len) that does not split a UTF-8
 * sequence: p[cut] is not a continuation byte. */
static size_t boundary_before(const char *p, size_t len, size_t at)
{
    for (int i = 0; i < 3 && at > 0 && at < len && ((unsigned char)p[at] & 0xC0) == 0x80; i++)
        at--;
    return at;
}

static size_t boundary_after(const char *p, size_t n, size_t at)
{
    while (at < n && ((unsigned char)p[at] & 0xC0) == 0x80)
        at++;
    return at;
}

int jpt__limit_text(const char *p, size_t n, size_t limit, const char *spool_path,
                    jpt__buf *out)
{
    if (n <= limit)
        return jpt__buf_append(out, p, n);
    size_t head = boundary_before(p, n, limit / 2);
    size_t tail_start = boundary_after(p, n, n - (limit - limit / 2));
    int rc = jpt__buf_append(out, p, head);
    if (rc == JPT_OK)
        rc = append_marker(out, tail_start - head, spool_path);
    if (rc == JPT_OK)
        rc = jpt__buf_append(out, p + tail_start, n - tail_start);
    return rc;
}

int jpt__capture_text_limited(const jpt__capture *c, size_t limit, jpt__buf *out)
{
    if (jpt__capture_omitted(c) == 0) {
        if (c->total <= limit)
            return jpt__capture_text(c, out);
        /* Everything is still here, split between head and ring at some
         * point unrelated to `limit`: cut the whole text instead. */
        jpt__buf whole = JPT__BUF_INIT;
        int rc = jpt__capture_text(c, &whole);
        if (rc == JPT_OK)
            rc = jpt__limit_text(whole.data, whole.len, limit, c->spool_path, out);
        jpt__buf_free(&whole);
        return rc;
    }

    /* Head and tail straight from the buffer, so the count of omitted bytes
     * is exact: everything between what is shown. */
    jpt__buf tail = JPT__BUF_INIT;
    size_t want_tail = limit - limit / 2;
    size_t have_tail = c->tail_len < want_tail ? c->tail_len : want_tail;
    int rc = JPT_OK;
    for (size_t i = c->tail_len - have_tail; rc == JPT_OK && i < c->tail_len; i++)
        rc = jpt__buf_putc(&tail, c->tail[(c->tail_start + i) % c->tail_cap]);
    size_t head_len = c->head.len < limit / 2 ? c->head.len : limit / 2;
    head_len = boundary_before(c->head.data, c->head.len, head_len);
    size_t skip = tail.data != NULL ? boundary_after(tail.data, tail.len, 0) : 0;
    if (rc == JPT_OK)
        rc = jpt__buf_append(out, c->head.data, head_len);
    if (rc == JPT_OK)
        rc = append_marker(out, c->total - head_len - (tail.len - skip), c->spool_path);
    if (rc == JPT_OK && tail.len > skip)
        rc = jpt__buf_append(out, tail.data + skip, tail.len - skip);
    jpt__buf_free(&tail);
    return rc;
}
