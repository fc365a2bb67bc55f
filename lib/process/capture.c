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

/* The ring's last `n` bytes, in order. */
static int tail_copy(const jpt__capture *c, size_t n, jpt__buf *out)
{
    if (n == 0)
        return JPT_OK;
    size_t from = (c->tail_start + c->tail_len - n) % c->tail_cap;
    size_t first = c->tail_cap - from < n ? c->tail_cap - from : n;
    int rc = jpt__buf_append(out, c->tail + from, first);

    if (rc == JPT_OK)
        rc = jpt__buf_append(out, c->tail, n - first);
    return rc;
}

static int append_cut(const char *head, size_t head_len, const char *tail, size_t tail_len,
                      uint64_t total, const char *spool_path, jpt__buf *out);

int jpt__capture_text(const jpt__capture *c, jpt__buf *out)
{
    if (jpt__capture_omitted(c) == 0) {
        int rc = jpt__buf_append(out, c->head.data, c->head.len);
        if (rc == JPT_OK && c->tail_len > 0)
            rc = tail_copy(c, c->tail_len, out);
        return rc;
    }
    /* The capture dropped the middle at byte counts unrelated to the text:
     * the cuts move to line boundaries. */
    jpt__buf tail = JPT__BUF_INIT;
    int rc = tail_copy(c, c->tail_len, &tail);
    if (rc == JPT_OK)
        rc = append_cut(c->head.data, c->head.len, tail.data, tail.len, c->total,
                        c->spool_path, out);
    jpt__buf_free(&tail);
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

/* The most a repair widens text (a NUL becomes the 3 bytes of U+FFFD):
 * text of at most limit / 3 bytes fits whatever it holds. */
#define REPAIR_GROWTH 3

/* How far a cut may move to fall on a line boundary: a few KiB, and at
 * most half of what is shown, so that a single huge line is still cut
 * inside and a cut never empties its side. */
#define LINE_LOOKBACK 4096

static size_t lookback(size_t shown)
{
    return shown / 2 < LINE_LOOKBACK ? shown / 2 : LINE_LOOKBACK;
}

/* The end of the head shown from p[0..len), at most `at`: at the last
 * newline close before it (the newline itself is left out: the marker
 * begins with one), else on a character boundary. Numbers the text never
 * held (`32` of `32768`) are what a cut inside a line shows. */
static size_t head_end(const char *p, size_t len, size_t at)
{
    for (size_t i = at, stop = at - lookback(at); i > stop; i--)
        if (p[i - 1] == '\n')
            return i - 1;
    return boundary_before(p, len, at);
}

/* The start of the tail shown from p[0..n), at least `at`: just after
 * the first newline close after it, else on a character boundary. */
static size_t tail_start(const char *p, size_t n, size_t at)
{
    if (at > 0 && p[at - 1] == '\n')
        return at;
    for (size_t i = at, stop = at + lookback(n - at); i < stop; i++)
        if (p[i] == '\n')
            return i + 1;
    return boundary_after(p, n, at);
}

/* Appends head[0..head_len) and tail[0..tail_len) cut to lines, around the
 * marker; `total` is the length of the whole text they come from, so the
 * count names every byte not shown. */
static int append_cut(const char *head, size_t head_len, const char *tail, size_t tail_len,
                      uint64_t total, const char *spool_path, jpt__buf *out)
{
    size_t h = head_len > 0 ? head_end(head, head_len, head_len) : 0;
    size_t t = tail_len > 0 ? tail_start(tail, tail_len, 0) : 0;
    int rc = jpt__buf_append(out, head, h);

    if (rc == JPT_OK)
        rc = append_marker(out, total - h - (tail_len - t), spool_path);
    if (rc == JPT_OK && t < tail_len)
        rc = jpt__buf_append(out, tail + t, tail_len - t);
    return rc;
}

/* The limit is on the width the model reads (jpt__render_width): a NUL or
 * an invalid byte shown as U+FFFD counts as the 3 bytes it becomes, so the
 * repaired text is never cut a second time, and the count of omitted bytes
 * is the tool's. */
int jpt__limit_text(const char *p, size_t n, size_t limit, const char *spool_path,
                    jpt__buf *out)
{
    if (n <= limit / REPAIR_GROWTH || jpt__render_width(p, n) <= limit)
        return jpt__buf_append(out, p, n);
    size_t head = jpt__render_prefix(p, n, limit / 2);
    size_t tail = jpt__render_suffix(p, n, limit - limit / 2);
    if (tail < head)
        tail = head;
    return append_cut(p, head, p + tail, n - tail, n, spool_path, out);
}

int jpt__capture_text_limited(const jpt__capture *c, size_t limit, jpt__buf *out)
{
    if (jpt__capture_omitted(c) == 0) {
        if (c->total <= limit / REPAIR_GROWTH)
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
     * is exact: everything between what is shown. A width is never less
     * than its bytes: the last `want_tail` bytes hold the tail shown. */
    jpt__buf tail = JPT__BUF_INIT;
    size_t want_tail = limit - limit / 2;
    size_t head_len = jpt__render_prefix(c->head.data, c->head.len, limit / 2);
    int rc = tail_copy(c, c->tail_len < want_tail ? c->tail_len : want_tail, &tail);
    size_t from = tail.data != NULL ? jpt__render_suffix(tail.data, tail.len, want_tail) : 0;
    if (rc == JPT_OK)
        rc = append_cut(c->head.data, head_len, tail.data + from, tail.len - from, c->total,
                        c->spool_path, out);
    jpt__buf_free(&tail);
    return rc;
}

int jpt__capture_text_since(const jpt__capture *c, uint64_t from, size_t limit, jpt__buf *out)
{
    uint64_t tail_from = c->total - c->tail_len;
    jpt__buf text = JPT__BUF_INIT;
    int rc = JPT_OK;

    if (from == 0)
        return jpt__capture_text_limited(c, limit, out);
    if (from >= c->total)
        return JPT_OK;
    if (from >= tail_from)
        rc = tail_copy(c, (size_t)(c->total - from), &text);
    else if (jpt__capture_omitted(c) == 0) {
        /* Head and tail are one run of the text: `from` is in the head. */
        rc = jpt__buf_append(&text, c->head.data + from, c->head.len - (size_t)from);
        if (rc == JPT_OK)
            rc = tail_copy(c, c->tail_len, &text);
    } else {
        /* The middle was dropped: what is kept of the bytes since `from`,
         * around a marker that counts the rest. */
        jpt__buf tail = JPT__BUF_INIT;
        size_t in_head = from < c->head.len ? c->head.len - (size_t)from : 0;
        rc = tail_copy(c, c->tail_len, &tail);
        if (rc == JPT_OK)
            rc = append_cut(c->head.data + (c->head.len - in_head), in_head, tail.data,
                            tail.len, c->total - from, c->spool_path, &text);
        jpt__buf_free(&tail);
    }
    if (rc == JPT_OK)
        rc = jpt__limit_text(text.data != NULL ? text.data : "", text.len, limit, c->spool_path,
                             out);
    jpt__buf_free(&text);
    return rc;
}

uint64_t jpt__capture_total(const jpt__capture *c)
{
    return c->total;
}

const char *jpt__capture_head(const jpt__capture *c, size_t *n)
{
    *n = c->head.len;
    return c->head.data;
}

const char *jpt__capture_spool_path(const jpt__capture *c)
{
    return c->spool_path;
}
