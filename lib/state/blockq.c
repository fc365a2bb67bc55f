/* A bounded queue of content blocks: what a stateful tool reported since
 * the model last read it. Like the head+tail capture of raw output, it keeps
 * the first half of its byte limit in blocks and the last half in a ring,
 * and counts what it drops in between, so a tool that prints structured
 * states without end costs bounded memory (issue 7) and the model still
 * sees how it began and where it is now. */
#include <inttypes.h>
#include <string.h>

#include "state/impl.h"

/* What a block costs: its bytes, plus its own size, so that even empty
 * blocks are bounded in number. */
static size_t block_cost(const jpt__block *b)
{
    size_t n = sizeof(*b);

    for (size_t i = 0; i <= JPT__FIELD_MAX; i++)
        n += b->f[i].len;
    return n;
}

void jpt__blockq_init(jpt__blockq *q, size_t limit)
{
    memset(q, 0, sizeof(*q));
    q->limit = limit;
}

static jpt__block *ring_at(const jpt__blockq *q, size_t i)
{
    return &q->ring[(q->ring_start + i) % q->ring_cap];
}

static void drop_oldest(jpt__blockq *q)
{
    jpt__block *b = ring_at(q, 0);
    size_t cost = block_cost(b);

    q->ring_bytes -= cost;
    q->dropped_blocks++;
    q->dropped_bytes += cost - sizeof(*b);
    jpt__block_clear(b);
    q->ring_start = (q->ring_start + 1) % q->ring_cap;
    q->ring_len--;
}

/* Room for one more in the ring, unrolled into a larger array. */
static int ring_grow(jpt__blockq *q)
{
    size_t cap = q->ring_cap ? q->ring_cap * 2 : 16;
    jpt__block *bigger = jpt__calloc(cap, sizeof(*bigger));

    if (bigger == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < q->ring_len; i++)
        bigger[i] = *ring_at(q, i);
    jpt__free(q->ring);
    q->ring = bigger;
    q->ring_cap = cap;
    q->ring_start = 0;
    return JPT_OK;
}

int jpt__blockq_push(jpt__blockq *q, jpt__block *b)
{
    size_t cost = block_cost(b);
    size_t head_limit = q->limit / 2;

    /* The head fills first, in order; once anything went to the ring, all
     * that follows does. */
    if (q->ring_len == 0 && q->dropped_blocks == 0 && q->head_bytes + cost <= head_limit) {
        jpt__block *grown =
            jpt__array_reserve(q->head, &q->cap_head, q->nhead + 1, sizeof(*grown), 8);
        if (grown == NULL) {
            jpt__block_clear(b);
            return JPT_ERR_NOMEM;
        }
        q->head = grown;
        q->head[q->nhead++] = *b;
        q->head_bytes += cost;
        memset(b, 0, sizeof(*b));
        return JPT_OK;
    }
    if (q->ring_len == q->ring_cap && ring_grow(q) < 0) {
        jpt__block_clear(b);
        return JPT_ERR_NOMEM;
    }
    *ring_at(q, q->ring_len++) = *b;
    q->ring_bytes += cost;
    memset(b, 0, sizeof(*b));
    /* The newest block always stays, however large. */
    while (q->ring_len > 1 && q->ring_bytes > q->limit - head_limit)
        drop_oldest(q);
    return JPT_OK;
}

bool jpt__blockq_empty(const jpt__blockq *q)
{
    return q->nhead == 0 && q->ring_len == 0 && q->dropped_blocks == 0;
}

/* The marker standing for what was dropped, as a text block. */
static int marker(const jpt__blockq *q, jpt__block *out)
{
    jpt__buf text = JPT__BUF_INIT;
    int rc = jpt__buf_printf(&text, "[… %" PRIu64 " blocks (%" PRIu64 " bytes) omitted …]",
                             q->dropped_blocks, q->dropped_bytes);

    memset(out, 0, sizeof(*out));
    out->type = JPT_BLOCK_TEXT;
    if (rc == JPT_OK)
        rc = jpt__field_set(&out->f[JPT_FIELD_TEXT], text.data, text.len);
    jpt__buf_free(&text);
    return rc;
}

static int copy_into(const jpt__block *b, jpt_state *s)
{
    jpt__block copy;
    int rc = jpt__block_copy(b, &copy);

    return rc < 0 ? rc : jpt__state_push_block(s, &copy);
}

int jpt__blockq_copy(const jpt__blockq *q, jpt_state *s)
{
    int rc = JPT_OK;

    for (size_t i = 0; rc == JPT_OK && i < q->nhead; i++)
        rc = copy_into(&q->head[i], s);
    if (rc == JPT_OK && q->dropped_blocks > 0) {
        jpt__block m;
        if ((rc = marker(q, &m)) == JPT_OK)
            rc = jpt__state_push_block(s, &m);
        else
            jpt__block_clear(&m);
    }
    for (size_t i = 0; rc == JPT_OK && i < q->ring_len; i++)
        rc = copy_into(ring_at(q, i), s);
    return rc;
}

void jpt__blockq_clear(jpt__blockq *q)
{
    for (size_t i = 0; i < q->nhead; i++)
        jpt__block_clear(&q->head[i]);
    for (size_t i = 0; i < q->ring_len; i++)
        jpt__block_clear(ring_at(q, i));
    q->nhead = 0;
    q->head_bytes = 0;
    q->ring_start = q->ring_len = 0;
    q->ring_bytes = 0;
    q->dropped_blocks = q->dropped_bytes = 0;
}

void jpt__blockq_free(jpt__blockq *q)
{
    jpt__blockq_clear(q);
    jpt__free(q->head);
    jpt__free(q->ring);
    memset(q, 0, sizeof(*q));
}
