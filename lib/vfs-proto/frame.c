/* NDJSON framing (D11 "Message framing") and the output queue of one side
 * of a VFS session. */
#include <string.h>

#include "vfs-proto.h"

/* A buffer grown this large for one long line is given back after it, so a
 * session that once read a 10 MB message does not keep 10 MB for life. */
#define KEEP_CAPACITY (256u << 10)

void jpt__vfs_lines_init(jpt__vfs_lines *l, size_t limit)
{
    memset(l, 0, sizeof(*l));
    l->limit = limit;
}

void jpt__vfs_lines_free(jpt__vfs_lines *l)
{
    jpt__buf_free(&l->buf);
}

static void reset_buffer(jpt__vfs_lines *l)
{
    if (l->buf.cap > KEEP_CAPACITY)
        jpt__buf_free(&l->buf);
    l->buf.len = 0;
    l->buf_returned = false;
}

/* The line being read passed the limit: drop what was kept of it. */
static int too_long(jpt__vfs_lines *l, uint64_t bytes, jpt__vfs_line *line)
{
    l->dropped = bytes;
    reset_buffer(l);
    memset(line, 0, sizeof(*line));
    line->number = l->count + 1;
    return JPT__LINE_TOO_LONG;
}

/* Dropping a long line: takes bytes up to its newline. Sets *done when the
 * newline was among them. */
static size_t skip_long_line(jpt__vfs_lines *l, const char *p, size_t n, bool *done)
{
    const char *nl = memchr(p, '\n', n);

    *done = nl != NULL;
    if (nl == NULL) {
        l->dropped += n;
        return n;
    }
    l->skipping = false;
    l->dropped = 0;
    l->count++;
    return (size_t)(nl - p) + 1;
}

int jpt__vfs_lines_next(jpt__vfs_lines *l, const char *p, size_t n, size_t *used,
                        jpt__vfs_line *line)
{
    size_t off = 0;
    bool done;

    if (l->buf_returned)
        reset_buffer(l);
    if (l->skipping) {
        off = skip_long_line(l, p, n, &done);
        if (!done) {
            *used = n;
            return JPT__LINE_NONE;
        }
    }
    const char *start = p + off;
    size_t rest = n - off;
    const char *nl = memchr(start, '\n', rest);
    size_t len = nl != NULL ? (size_t)(nl - start) : rest;

    /* The limit counts the line's bytes before its newline; a '\r' ending
     * it counts too, which matters only for a line exactly at the limit. */
    if (len > l->limit - l->buf.len) {
        /* Numbered before it is counted, whether or not its newline came. */
        int rc = too_long(l, (uint64_t)l->buf.len + len, line);
        if (nl == NULL) {
            l->skipping = true;
            *used = n;
        } else {
            l->count++;
            *used = off + len + 1;
        }
        return rc;
    }
    if (nl == NULL) {
        int rc = jpt__buf_append(&l->buf, start, rest);
        if (rc < 0) {
            *used = off;
            return rc;
        }
        *used = n;
        return JPT__LINE_NONE;
    }
    if (l->buf.len == 0) {
        line->p = (char *)start;
        line->in_buffer = false;
    } else {
        int rc = jpt__buf_append(&l->buf, start, len);
        if (rc < 0) {
            *used = off;
            return rc;
        }
        line->p = l->buf.data;
        len = l->buf.len;
        line->in_buffer = true;
        l->buf_returned = true;
    }
    if (len > 0 && line->p[len - 1] == '\r')
        len--;
    line->n = len;
    line->number = ++l->count;
    *used = (size_t)(nl - p) + 1;
    return JPT__LINE;
}

uint64_t jpt__vfs_lines_partial(const jpt__vfs_lines *l)
{
    if (l->skipping)
        return l->dropped;
    return l->buf_returned ? 0 : l->buf.len;
}

char *jpt__vfs_lines_steal(jpt__vfs_lines *l)
{
    char *data = l->buf.data;

    l->buf.data = NULL;
    l->buf.len = l->buf.cap = 0;
    l->buf_returned = false;
    return data;
}

/* ---- The output queue ------------------------------------------------------- */

void jpt__vfs_outq_free(jpt__vfs_outq *q)
{
    jpt__buf_free(&q->buf);
    q->start = 0;
}

size_t jpt__vfs_outq_pending(const jpt__vfs_outq *q)
{
    return q->buf.len - q->start;
}

const char *jpt__vfs_outq_data(const jpt__vfs_outq *q)
{
    /* Never NULL, so a caller may pass it to memcpy() or write() even
     * with nothing pending. */
    return q->buf.data != NULL ? q->buf.data + q->start : "";
}

void jpt__vfs_outq_consume(jpt__vfs_outq *q, size_t n)
{
    q->start += n;
    if (q->start < q->buf.len)
        return;
    /* All written: start over at the front, and give back a buffer that a
     * large response grew. */
    q->start = 0;
    q->buf.len = 0;
    if (q->buf.cap > KEEP_CAPACITY)
        jpt__buf_free(&q->buf);
}

int jpt__vfs_outq_begin(jpt__vfs_outq *q, size_t n, size_t *mark)
{
    /* Written bytes at the front are dropped once they are the larger part,
     * so the queue moves each pending byte at most a few times. */
    if (q->start > 0 && q->start >= jpt__vfs_outq_pending(q)) {
        size_t pending = jpt__vfs_outq_pending(q);
        memmove(q->buf.data, q->buf.data + q->start, pending);
        q->buf.len = pending;
        q->start = 0;
    }
    *mark = q->buf.len;
    if (n >= SIZE_MAX - 1)
        return JPT_ERR_NOMEM;
    return jpt__buf_reserve(&q->buf, n + 1);
}

int jpt__vfs_outq_end(jpt__vfs_outq *q, size_t mark, int rc)
{
    if (rc == JPT_OK)
        rc = jpt__buf_putc(&q->buf, '\n');
    if (rc < 0) {
        q->buf.len = mark;
        if (q->buf.data != NULL)
            q->buf.data[mark] = '\0';
    }
    return rc;
}
