/* Secret scrubbing (scrub.h): the forms of each value and their triggers,
 * the Aho–Corasick automaton over them, and the streaming scrubber that
 * covers every occurrence while holding back no more than the longest
 * form. */
#include <stdlib.h>
#include <string.h>

#include "common/scrub.h"

struct jpt__scrub_set {
    jpt__buf storage;          /* every pattern, back to back */
    jpt__scrub_pattern *pats;  /* distinct patterns, sorted bytewise */
    size_t npats, max_len;
    size_t ring;               /* a scrubber's ring of places (ring_size) */
    /* The automaton: node 0 is the root. Node v's edges are
     * edge_byte/edge_to[edge_start[v] .. edge_start[v + 1]), sorted by byte;
     * the root's are also in `root` (0: none). */
    uint32_t nodes;
    uint32_t *fail;       /* the longest proper suffix that is a trie node */
    uint32_t *depth;      /* the node's string length */
    uint32_t *out;        /* 1 + the pattern that is the node's string, or 0 */
    uint32_t *dict;       /* the next node down the failure links whose
                             string is a pattern, or 0 */
    uint32_t *edge_start; /* nodes + 1 */
    unsigned char *edge_byte;
    uint32_t *edge_to;
    uint32_t root[256];
    /* Nodes are numbered breadth first, and the first `nrows` (the
     * shallowest, where ordinary text keeps the automaton) have their
     * whole row of transitions, failure links followed already: one
     * lookup per byte. */
    uint32_t nrows;
    uint32_t *rows;       /* 256 per row */
};

/* Rows kept: 256 KiB of transitions. */
#define DENSE_ROWS 256u
/* A transition: the node, with this bit when a pattern ends there. */
#define ENDS_PATTERN 0x80000000u
#define NODE_MASK 0x7FFFFFFFu

/* ---- Encodings ------------------------------------------------------------------ */

static const char hex_upper[] = "0123456789ABCDEF";
static const char hex_lower[] = "0123456789abcdef";

/* The next code point of valid UTF-8 at p[0..n), its width in *w; -1 when
 * the bytes there are not valid UTF-8. */
static long utf8_next(const unsigned char *p, size_t n, size_t *w)
{
    /* One character at most: the rest is not looked at. */
    size_t valid = jpt__utf8_valid_prefix((const char *)p, n < 4 ? n : 4);
    unsigned char c = p[0];

    if (valid == 0)
        return -1;
    if (c < 0x80) {
        *w = 1;
        return c;
    }
    *w = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (valid < *w)
        return -1;
    long cp = c & (0x3F >> (*w - 1));
    for (size_t i = 1; i < *w; i++)
        cp = (cp << 6) | (p[i] & 0x3F);
    return cp;
}

/* The result of an encoding that does not apply to the value (UTF-16 of
 * bytes that are not UTF-8). */
#define NOT_APPLICABLE 1

#define JSON_SLASH 1u /* '/' as "\/" */
#define JSON_ASCII 2u /* non-ASCII as \uXXXX */
#define JSON_HTML 4u  /* '<' '>' '&' as \u003c \u003e \u0026 */
#define JSON_UPPER 8u /* \u hex digits in capitals */

static int put_u(jpt__buf *b, unsigned long cp, const char *hex)
{
    char e[6] = {'\\', 'u', hex[(cp >> 12) & 15], hex[(cp >> 8) & 15], hex[(cp >> 4) & 15],
                 hex[cp & 15]};
    return jpt__buf_append(b, e, sizeof(e));
}

static int json_form(const unsigned char *v, size_t n, unsigned flags, jpt__buf *b)
{
    const char *hex = flags & JSON_UPPER ? hex_upper : hex_lower;
    int rc = JPT_OK;

    for (size_t i = 0; i < n && rc == JPT_OK;) {
        unsigned char c = v[i];
        char esc = c == '"' ? '"' : c == '\\' ? '\\' : c == '\b' ? 'b' : c == '\f' ? 'f'
                 : c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't'
                 : c == '/' && (flags & JSON_SLASH) ? '/' : 0;
        if (esc != 0) {
            char e[2] = {'\\', esc};
            rc = jpt__buf_append(b, e, 2);
            i++;
        } else if (c < 0x20 || ((flags & JSON_HTML) && (c == '<' || c == '>' || c == '&'))) {
            rc = put_u(b, c, hex);
            i++;
        } else if (c >= 0x80 && (flags & JSON_ASCII)) {
            size_t w;
            long cp = utf8_next(v + i, n - i, &w);
            if (cp < 0)
                return NOT_APPLICABLE;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                rc = put_u(b, 0xD800 + ((unsigned long)cp >> 10), hex);
                if (rc == JPT_OK)
                    rc = put_u(b, 0xDC00 + ((unsigned long)cp & 0x3FF), hex);
            } else
                rc = put_u(b, (unsigned long)cp, hex);
            i += w;
        } else {
            rc = jpt__buf_append(b, v + i, 1);
            i++;
        }
    }
    return rc;
}

#define URL_LOWER 1u /* %xx in lower case */
#define URL_SLASH 2u /* '/' kept (Python's quote) */
#define URL_PLUS 4u  /* ' ' as '+' (HTML forms) */
#define URL_MARKS 8u /* ! ' ( ) * kept (encodeURIComponent) */

static int url_form(const unsigned char *v, size_t n, unsigned flags, jpt__buf *b)
{
    const char *hex = flags & URL_LOWER ? hex_lower : hex_upper;
    int rc = JPT_OK;

    for (size_t i = 0; i < n && rc == JPT_OK; i++) {
        unsigned char c = v[i];
        bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_' || c == '~' ||
                    (c == '/' && (flags & URL_SLASH)) ||
                    ((flags & URL_MARKS) && c != 0 && strchr("!'()*", c) != NULL);
        if (keep)
            rc = jpt__buf_append(b, v + i, 1);
        else if (c == ' ' && (flags & URL_PLUS))
            rc = jpt__buf_putc(b, '+');
        else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = jpt__buf_append(b, e, 3);
        }
    }
    return rc;
}

/* HTML escaping: 0 Python's html.escape, 1 markupsafe's, 2 only & < >. */
static int html_form(const unsigned char *v, size_t n, unsigned variant, jpt__buf *b)
{
    int rc = JPT_OK;

    for (size_t i = 0; i < n && rc == JPT_OK; i++) {
        unsigned char c = v[i];
        const char *e = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : NULL;
        if (e == NULL && variant < 2 && c == '"')
            e = variant == 0 ? "&quot;" : "&#34;";
        if (e == NULL && variant < 2 && c == '\'')
            e = variant == 0 ? "&#x27;" : "&#39;";
        rc = e != NULL ? jpt__buf_puts(b, e) : jpt__buf_append(b, v + i, 1);
    }
    return rc;
}

static int hex_form(const unsigned char *v, size_t n, unsigned upper, jpt__buf *b)
{
    const char *hex = upper ? hex_upper : hex_lower;
    int rc = JPT_OK;

    for (size_t i = 0; i < n && rc == JPT_OK; i++) {
        char e[2] = {hex[v[i] >> 4], hex[v[i] & 15]};
        rc = jpt__buf_append(b, e, 2);
    }
    return rc;
}

static int put_unit(jpt__buf *b, unsigned long u, unsigned big_endian)
{
    char e[2] = {(char)(u & 0xFF), (char)(u >> 8)};

    if (big_endian) {
        e[0] = (char)(u >> 8);
        e[1] = (char)(u & 0xFF);
    }
    return jpt__buf_append(b, e, 2);
}

static int utf16_form(const unsigned char *v, size_t n, unsigned big_endian, jpt__buf *b)
{
    int rc = JPT_OK;

    for (size_t i = 0; i < n && rc == JPT_OK;) {
        size_t w;
        long cp = utf8_next(v + i, n - i, &w);
        if (cp < 0)
            return NOT_APPLICABLE;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            rc = put_unit(b, 0xD800 + ((unsigned long)cp >> 10), big_endian);
            if (rc == JPT_OK)
                rc = put_unit(b, 0xDC00 + ((unsigned long)cp & 0x3FF), big_endian);
        } else
            rc = put_unit(b, (unsigned long)cp, big_endian);
        i += w;
    }
    return rc;
}

/* base64 variants: the URL-safe alphabet from 5 on; within each five,
 * padded, unpadded, then the characters the value alone determines at
 * offsets 0, 1 and 2 of a 3-byte group. */
#define B64_PADDED 0u
#define B64_UNPADDED 1u
#define B64_CORE 2u

/* The base64 characters of `k` zero bytes followed by v: v's whole
 * encoding (k 0), padded or not, or only the characters v alone
 * determines (`core`). Character c covers bits [6c, 6c + 6) of the data;
 * v's bits are [8k, 8(k + n)). */
static int base64_form(const unsigned char *v, size_t n, unsigned variant, jpt__buf *b)
{
    bool url = variant >= 5, core = variant % 5 >= B64_CORE;
    unsigned k = core ? variant % 5 - B64_CORE : 0;
    size_t bits = 8 * (k + n);
    size_t first = core ? (8 * k + 5) / 6 : 0;
    size_t end = core                            ? bits / 6
                 : variant % 5 == B64_PADDED ? jpt__base64_size(n)
                                                 : (bits + 5) / 6;
    unsigned char *data = jpt__malloc(k + n);
    char *text = jpt__malloc(jpt__base64_size(k + n) + 1);
    int rc = data != NULL && text != NULL ? JPT_OK : JPT_ERR_NOMEM;

    if (rc == JPT_OK) {
        memset(data, 0, k);
        memcpy(data + k, v, n);
        jpt__base64_encode(text, data, k + n);
        for (size_t c = first; url && c < end; c++)
            text[c] = text[c] == '+' ? '-' : text[c] == '/' ? '_' : text[c];
        rc = jpt__buf_append(b, text + first, end - first);
    }
    jpt__free(data);
    jpt__free(text);
    return rc;
}

enum { ENC_RAW, ENC_JSON, ENC_URL, ENC_HTML, ENC_HEX, ENC_UTF16, ENC_BASE64, ENC_COUNT };

static const unsigned variants[ENC_COUNT] = {1, 16, 16, 3, 2, 2, 10};

/* Appends the encoding's variant of v[0..n): JPT_OK, NOT_APPLICABLE,
 * JPT_ERR_NOMEM. A trigger (`prefix`) of base64 is the characters its
 * bytes alone determine, padded or not. */
static int encode(unsigned enc, unsigned variant, const unsigned char *v, size_t n, bool prefix,
                  jpt__buf *b)
{
    switch (enc) {
    case ENC_RAW:
        return jpt__buf_append(b, v, n);
    case ENC_JSON:
        return json_form(v, n, variant, b);
    case ENC_URL:
        return url_form(v, n, variant, b);
    case ENC_HTML:
        return html_form(v, n, variant, b);
    case ENC_HEX:
        return hex_form(v, n, variant, b);
    case ENC_UTF16:
        return utf16_form(v, n, variant, b);
    default:
        if (prefix && variant % 5 < B64_CORE)
            variant = variant - variant % 5 + B64_CORE;
        return base64_form(v, n, variant, b);
    }
}

/* ---- Patterns -------------------------------------------------------------------- */

/* Patterns are collected as offsets into the storage, which may move. */
typedef struct collected {
    size_t start, len, span;
    bool whole, trigger;
} collected;

typedef struct pattern_list {
    jpt__buf *storage;
    collected *items;
    size_t n, cap;
} pattern_list;

static int collect(pattern_list *l, size_t start, size_t len, bool whole, size_t span)
{
    collected *grown = jpt__array_reserve(l->items, &l->cap, l->n + 1, sizeof(*l->items), 32);

    if (grown == NULL)
        return JPT_ERR_NOMEM;
    l->items = grown;
    l->items[l->n++] = (collected){start, len, whole ? 0 : span, whole, !whole};
    return JPT_OK;
}

/* How many of v's bytes its triggers encode: the first JPT__SCRUB_PREFIX
 * (one less for the shortest values), with a UTF-8 character begun taken
 * whole. */
static size_t trigger_bytes(const unsigned char *v, size_t n)
{
    size_t k = n > JPT__SCRUB_PREFIX ? JPT__SCRUB_PREFIX : n - 1;

    while (k < n && (v[k] & 0xC0) == 0x80)
        k++;
    return k;
}

/* Room for line breaks that wrap base64 (every 64 or 76 characters, CRLF)
 * in how far a trigger's redaction reaches. */
static size_t wrap_slack(unsigned enc, size_t len)
{
    return enc == ENC_BASE64 ? 2 * (len / 64 + 1) : 0;
}

/* One form of v and its trigger. The trigger, as encoded from v's first
 * bytes, is a prefix of the whole form (the encodings work a character or
 * a byte at a time, and base64's triggers take only the characters those
 * bytes determine); stored once, as that prefix. */
static int add_form(pattern_list *l, unsigned enc, unsigned variant, const unsigned char *v,
                    size_t n)
{
    jpt__buf *b = l->storage;
    size_t start = b->len;
    int rc = encode(enc, variant, v, n, false, b);

    if (rc != JPT_OK) {
        b->len = start;
        return rc == NOT_APPLICABLE ? JPT_OK : rc;
    }
    size_t len = b->len - start, mid = b->len;
    size_t k = trigger_bytes(v, n);
    if ((rc = encode(enc, variant, v, k, true, b)) < 0)
        return rc;
    size_t tlen = rc == JPT_OK ? b->len - mid : len;
    if (tlen > len || memcmp(b->data + start, b->data + mid, tlen) != 0)
        tlen = len; /* not a prefix (never expected): the whole form triggers */
    b->len = mid;
    rc = collect(l, start, len, true, 0);
    if (rc == JPT_OK)
        rc = collect(l, start, tlen, false, len + wrap_slack(enc, len));
    return rc;
}

static int add_value(pattern_list *l, const unsigned char *v, size_t n)
{
    int rc = JPT_OK;

    for (unsigned enc = 0; enc < ENC_COUNT && rc == JPT_OK; enc++)
        for (unsigned variant = 0; variant < variants[enc] && rc == JPT_OK; variant++)
            rc = add_form(l, enc, variant, v, n);
    return rc;
}

static int pattern_cmp(const void *a, const void *b)
{
    const jpt__scrub_pattern *x = a, *y = b;
    int c = memcmp(x->text, y->text, x->len < y->len ? x->len : y->len);

    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* The collected patterns, sorted, each text once with what its
 * occurrences mean merged. */
static int make_patterns(jpt__scrub_set *t, const pattern_list *l)
{
    if (l->n == 0)
        return JPT_OK;
    if ((t->pats = jpt__calloc(l->n, sizeof(*t->pats))) == NULL)
        return JPT_ERR_NOMEM;
    for (size_t i = 0; i < l->n; i++) {
        const collected *c = &l->items[i];
        t->pats[i] = (jpt__scrub_pattern){t->storage.data + c->start, c->len, c->whole,
                                          c->trigger, c->span};
    }
    qsort(t->pats, l->n, sizeof(*t->pats), pattern_cmp);
    for (size_t i = 0; i < l->n; i++) {
        jpt__scrub_pattern *last = t->npats > 0 ? &t->pats[t->npats - 1] : NULL;
        if (last != NULL && pattern_cmp(last, &t->pats[i]) == 0) {
            last->whole |= t->pats[i].whole;
            last->trigger |= t->pats[i].trigger;
            if (t->pats[i].span > last->span)
                last->span = t->pats[i].span;
            continue;
        }
        t->pats[t->npats++] = t->pats[i];
    }
    for (size_t i = 0; i < t->npats; i++)
        if (t->pats[i].len > t->max_len)
            t->max_len = t->pats[i].len;
    return JPT_OK;
}

/* ---- The automaton ------------------------------------------------------------------ */

static inline uint32_t child(const jpt__scrub_set *t, uint32_t u, unsigned char b)
{
    if (u == 0)
        return t->root[b];
    uint32_t lo = t->edge_start[u], end = t->edge_start[u + 1], hi = end;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->edge_byte[mid] < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < end && t->edge_byte[lo] == b ? t->edge_to[lo] : 0;
}

/* The trie of the sorted, distinct patterns: nodes are made in pattern
 * order, so each node's children are made in increasing byte order, and
 * the edge into node v is (parent[v], byte[v]). */
static int build_trie(jpt__scrub_set *t, uint32_t *parent, unsigned char *byte_of)
{
    uint32_t *path = jpt__calloc(t->max_len + 1, sizeof(*path));
    const jpt__scrub_pattern *prev = NULL;

    if (path == NULL)
        return JPT_ERR_NOMEM;
    t->nodes = 1;
    for (size_t i = 0; i < t->npats; i++) {
        const jpt__scrub_pattern *pt = &t->pats[i];
        size_t common = 0;
        while (prev != NULL && common < prev->len && common < pt->len &&
               prev->text[common] == pt->text[common])
            common++;
        for (size_t d = common; d < pt->len; d++) {
            uint32_t v = t->nodes++;
            parent[v] = path[d];
            byte_of[v] = (unsigned char)pt->text[d];
            t->depth[v] = (uint32_t)d + 1;
            path[d + 1] = v;
        }
        t->out[path[pt->len]] = (uint32_t)i + 1;
        prev = pt;
    }
    jpt__free(path);
    return JPT_OK;
}

/* Numbers the nodes in the breadth-first order `order`, so that a node's
 * failure link and its parent have smaller numbers than it. */
static int renumber(jpt__scrub_set *t, const uint32_t *order)
{
    size_t n = t->nodes;
    uint32_t *rank = jpt__malloc(n * sizeof(uint32_t)), *fail = jpt__malloc(n * sizeof(uint32_t));
    uint32_t *depth = jpt__malloc(n * sizeof(uint32_t)), *out = jpt__malloc(n * sizeof(uint32_t));
    uint32_t *dict = jpt__malloc(n * sizeof(uint32_t));
    uint32_t *start = jpt__malloc((n + 1) * sizeof(uint32_t));
    uint32_t *to = jpt__malloc(n * sizeof(uint32_t));
    unsigned char *byte = jpt__malloc(n);
    int rc = rank && fail && depth && out && dict && start && to && byte ? JPT_OK : JPT_ERR_NOMEM;

    for (uint32_t i = 0; rc == JPT_OK && i < n; i++)
        rank[order[i]] = i;
    for (uint32_t i = 0, e = 0; rc == JPT_OK && i < n; i++) {
        uint32_t v = order[i];
        fail[i] = rank[t->fail[v]];
        depth[i] = t->depth[v];
        out[i] = t->out[v];
        dict[i] = rank[t->dict[v]]; /* the root keeps 0: none */
        start[i] = e;
        for (uint32_t k = t->edge_start[v]; k < t->edge_start[v + 1]; k++, e++) {
            byte[e] = t->edge_byte[k];
            to[e] = rank[t->edge_to[k]];
        }
        start[i + 1] = e;
    }
    for (unsigned b = 0; rc == JPT_OK && b < 256; b++)
        t->root[b] = t->root[b] != 0 ? rank[t->root[b]] : 0;
    if (rc == JPT_OK) {
        uint32_t *old[] = {t->fail, t->depth, t->out, t->dict, t->edge_start, t->edge_to};
        unsigned char *old_byte = t->edge_byte;
        t->fail = fail, t->depth = depth, t->out = out, t->dict = dict, t->edge_start = start;
        t->edge_to = to;
        t->edge_byte = byte;
        fail = old[0], depth = old[1], out = old[2], dict = old[3], start = old[4], to = old[5];
        byte = old_byte;
    }
    jpt__free(rank);
    jpt__free(fail);
    jpt__free(depth);
    jpt__free(out);
    jpt__free(dict);
    jpt__free(start);
    jpt__free(to);
    jpt__free(byte);
    return rc;
}

/* A transition into node c, flagged when a pattern ends there. */
static inline uint32_t arrive(const jpt__scrub_set *t, uint32_t c)
{
    return c | (t->out[c] != 0 || t->dict[c] != 0 ? ENDS_PATTERN : 0);
}

/* Whole rows for the first nodes: a node's failure link has a smaller
 * number, so its row is made before. */
static int fill_rows(jpt__scrub_set *t)
{
    t->nrows = t->nodes < DENSE_ROWS ? t->nodes : DENSE_ROWS;
    if ((t->rows = jpt__malloc((size_t)t->nrows * 256 * sizeof(*t->rows))) == NULL)
        return JPT_ERR_NOMEM;
    for (uint32_t v = 0; v < t->nrows; v++) {
        uint32_t *row = &t->rows[(size_t)v * 256];
        const uint32_t *fail_row = &t->rows[(size_t)t->fail[v] * 256];
        for (unsigned b = 0; b < 256; b++) {
            uint32_t c = child(t, v, (unsigned char)b);
            row[b] = c != 0 ? arrive(t, c) : v == 0 ? 0 : fail_row[b];
        }
    }
    return JPT_OK;
}

/* Edges in CSR form, then failure and output links breadth first. */
static int link_trie(jpt__scrub_set *t, const uint32_t *parent, const unsigned char *byte_of)
{
    uint32_t *queue = jpt__malloc((size_t)t->nodes * sizeof(*queue));
    uint32_t *fill = jpt__calloc((size_t)t->nodes + 1, sizeof(*fill));

    if (queue == NULL || fill == NULL) {
        jpt__free(queue);
        jpt__free(fill);
        return JPT_ERR_NOMEM;
    }
    for (uint32_t v = 1; v < t->nodes; v++)
        t->edge_start[parent[v] + 1]++;
    for (uint32_t u = 0; u < t->nodes; u++)
        t->edge_start[u + 1] += t->edge_start[u];
    for (uint32_t v = 1; v < t->nodes; v++) {
        uint32_t at = t->edge_start[parent[v]] + fill[parent[v]]++;
        t->edge_byte[at] = byte_of[v];
        t->edge_to[at] = v;
        if (parent[v] == 0)
            t->root[byte_of[v]] = v;
    }
    size_t qhead = 0, qtail = 0;
    queue[qtail++] = 0;
    while (qhead < qtail) {
        uint32_t u = queue[qhead++];
        for (uint32_t e = t->edge_start[u]; e < t->edge_start[u + 1]; e++) {
            uint32_t v = t->edge_to[e], f = 0;
            unsigned char b = t->edge_byte[e];
            if (u != 0) {
                for (f = t->fail[u];; f = t->fail[f]) {
                    uint32_t c = child(t, f, b);
                    if (c != 0) {
                        f = c;
                        break;
                    }
                    if (f == 0)
                        break;
                }
            }
            t->fail[v] = f;
            t->dict[v] = t->out[f] != 0 ? f : t->dict[f];
            queue[qtail++] = v;
        }
    }
    int rc = renumber(t, queue);
    if (rc == JPT_OK)
        rc = fill_rows(t);
    jpt__free(queue);
    jpt__free(fill);
    return rc;
}

static int build_automaton(jpt__scrub_set *t)
{
    size_t total = 1;

    for (size_t i = 0; i < t->npats; i++)
        total += t->pats[i].len;
    if (total > NODE_MASK)
        return JPT_ERR_NOMEM;
    uint32_t *parent = jpt__calloc(total, sizeof(*parent));
    unsigned char *byte_of = jpt__calloc(total, 1);
    t->fail = jpt__calloc(total, sizeof(uint32_t));
    t->depth = jpt__calloc(total, sizeof(uint32_t));
    t->out = jpt__calloc(total, sizeof(uint32_t));
    t->dict = jpt__calloc(total, sizeof(uint32_t));
    t->edge_start = jpt__calloc(total + 1, sizeof(uint32_t));
    t->edge_byte = jpt__calloc(total, 1);
    t->edge_to = jpt__calloc(total, sizeof(uint32_t));
    int rc = parent == NULL || byte_of == NULL || t->fail == NULL || t->depth == NULL ||
                     t->out == NULL || t->dict == NULL || t->edge_start == NULL ||
                     t->edge_byte == NULL || t->edge_to == NULL
                 ? JPT_ERR_NOMEM
                 : build_trie(t, parent, byte_of);
    if (rc == JPT_OK)
        rc = link_trie(t, parent, byte_of);
    jpt__free(parent);
    jpt__free(byte_of);
    return rc;
}

static size_t ring_size(size_t max_len);

int jpt__scrub_set_new(const char *const *values, const size_t *lens, size_t n,
                       jpt__scrub_set **out)
{
    jpt__scrub_set *t = jpt__calloc(1, sizeof(*t));
    pattern_list l = {0};
    int rc = JPT_OK;

    *out = NULL;
    if (t == NULL)
        return JPT_ERR_NOMEM;
    l.storage = &t->storage;
    for (size_t i = 0; i < n && rc == JPT_OK; i++)
        if (lens[i] >= JPT__SCRUB_MIN_VALUE)
            rc = add_value(&l, (const unsigned char *)values[i], lens[i]);
    if (rc == JPT_OK)
        rc = make_patterns(t, &l);
    jpt__free(l.items);
    if (rc == JPT_OK)
        rc = build_automaton(t);
    t->ring = ring_size(t->max_len);
    if (rc < 0) {
        jpt__scrub_set_free(t);
        return rc;
    }
    *out = t;
    return JPT_OK;
}

void jpt__scrub_set_free(jpt__scrub_set *t)
{
    if (t == NULL)
        return;
    jpt__buf_free(&t->storage);
    jpt__free(t->pats);
    jpt__free(t->fail);
    jpt__free(t->depth);
    jpt__free(t->out);
    jpt__free(t->dict);
    jpt__free(t->edge_start);
    jpt__free(t->edge_byte);
    jpt__free(t->edge_to);
    jpt__free(t->rows);
    jpt__free(t);
}

bool jpt__scrub_set_empty(const jpt__scrub_set *t)
{
    return t == NULL || t->npats == 0;
}

size_t jpt__scrub_set_patterns(const jpt__scrub_set *t)
{
    return t->npats;
}

size_t jpt__scrub_set_max_len(const jpt__scrub_set *t)
{
    return t->max_len;
}

const jpt__scrub_pattern *jpt__scrub_set_pattern(const jpt__scrub_set *t, size_t i)
{
    return i < t->npats ? &t->pats[i] : NULL;
}

/* ---- Scrubbing ------------------------------------------------------------------------- */

void jpt__scrubber_init(jpt__scrubber *s, const jpt__scrub_set *set, jpt__scrub_sink sink,
                        void *ud)
{
    memset(s, 0, sizeof(*s));
    s->set = set;
    s->sink = sink;
    s->ud = ud;
}

void jpt__scrubber_free(jpt__scrubber *s)
{
    jpt__buf_free(&s->carry);
    jpt__free(s->runs);
    jpt__free(s->pending);
    s->runs = NULL;
    s->pending = NULL;
    s->head = s->count = s->cap = s->npending = 0;
}

/* The bytes being scrubbed: the held-back ones, then the new ones. */
typedef struct source {
    const char *carry;
    uint64_t carry_base; /* stream position of carry[0] */
    const char *chunk;
    uint64_t chunk_base; /* stream position of chunk[0] */
} source;

static int sink(jpt__scrubber *s, const char *p, size_t n)
{
    if (s->failed == 0 && n > 0) {
        int rc = s->sink(s->ud, p, n);
        if (rc < 0)
            s->failed = rc;
    }
    return s->failed;
}

/* Writes the stream's bytes [a, b). */
static void put(jpt__scrubber *s, const source *src, uint64_t a, uint64_t b)
{
    if (a < src->chunk_base) {
        uint64_t end = b < src->chunk_base ? b : src->chunk_base;
        sink(s, src->carry + (a - src->carry_base), (size_t)(end - a));
        a = end;
    }
    if (a < b)
        sink(s, src->chunk + (a - src->chunk_base), (size_t)(b - a));
}

/* The queue's capacity is a power of two. */
static jpt__scrub_run *run_at(jpt__scrubber *s, size_t i)
{
    return &s->runs[(s->head + i) & (s->cap - 1)];
}

/* Writes every run that ends at or before `final` (no later redaction can
 * start before it), with the bytes before it. */
static void finalize(jpt__scrubber *s, const source *src, uint64_t final)
{
    while (s->count > 0 && run_at(s, 0)->e <= final) {
        jpt__scrub_run r = *run_at(s, 0);
        if (s->emitted < r.s)
            put(s, src, s->emitted, r.s);
        sink(s, JPT__SCRUB_MARK, sizeof(JPT__SCRUB_MARK) - 1);
        s->redactions++;
        if (s->emitted < r.e)
            s->emitted = r.e;
        s->head = (s->head + 1) & (s->cap - 1);
        s->count--;
    }
}

/* A redaction [ms, me), merged with the run it overlaps. Redactions are
 * added in the order of their starts, and runs do not overlap, so only
 * the newest run can. */
static int add_redaction(jpt__scrubber *s, uint64_t ms, uint64_t me)
{
    if (s->count > 0) {
        jpt__scrub_run *last = run_at(s, s->count - 1);
        if (ms < last->e) {
            if (me > last->e)
                last->e = me;
            return JPT_OK;
        }
    }
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        jpt__scrub_run *grown = jpt__malloc(cap * sizeof(*grown));
        if (grown == NULL)
            return JPT_ERR_NOMEM;
        for (size_t i = 0; i < s->count; i++)
            grown[i] = *run_at(s, i);
        jpt__free(s->runs);
        s->runs = grown;
        s->cap = cap;
        s->head = 0;
    }
    jpt__scrub_run r = {ms, me};
    *run_at(s, s->count++) = r;
    return JPT_OK;
}

/* Places are decided in batches of this many bytes of the stream (and at
 * the end of each feed): a decision costs a call, and text that holds a
 * trigger at every byte would pay it at every byte. */
#define DECIDE_BATCH 64u

/* The ring of places with triggers: a place is pending from the trigger
 * found there until it is decided, at most the longest pattern's length
 * (plus the byte being read) and a batch behind the stream. A power of
 * two, for a mask. */
static size_t ring_size(size_t max_len)
{
    size_t n = 4;

    while (n < max_len + 2 + DECIDE_BATCH)
        n *= 2;
    return n;
}

/* Decides every pending place before `w` (no pattern starting there can
 * still end), in order, each redaction's end at most `limit`. */
static int decide(jpt__scrubber *s, const source *src, uint64_t w, uint64_t limit)
{
    size_t mask = s->set->ring - 1;

    for (; s->npending > 0 && s->decided < w; s->decided++) {
        jpt__scrub_pending *q = &s->pending[s->decided & mask];
        if (q->trig_end == 0)
            continue;
        jpt__scrub_pending d = *q;
        q->trig_end = q->span_end = q->whole_end = 0;
        s->npending--;
        /* A trigger inside a whole form found before adds nothing. */
        if (d.whole_end == 0 && d.trig_end <= s->covered)
            continue;
        if (d.whole_end > s->covered)
            s->covered = d.whole_end;
        uint64_t end = d.whole_end != 0 ? d.whole_end : d.span_end;
        if (add_redaction(s, s->decided, end < limit ? end : limit) < 0)
            return s->failed = JPT_ERR_NOMEM;
    }
    if (s->decided < w)
        s->decided = w;
    if (s->count > 0 && run_at(s, 0)->e <= w)
        finalize(s, src, w);
    return s->failed;
}

/* The patterns that end at `end` in node st (its own, then down the
 * output links): each is noted at its place. Every one starts at or after
 * `w`, the start of the node's string. */
static int note_patterns(jpt__scrubber *s, uint32_t st, uint64_t end, uint64_t w)
{
    const jpt__scrub_set *t = s->set;
    size_t mask = t->ring - 1;

    if (s->pending == NULL && (s->pending = jpt__calloc(t->ring, sizeof(*s->pending))) == NULL)
        return s->failed = JPT_ERR_NOMEM;
    if (s->npending == 0)
        s->decided = w;
    for (uint32_t v = t->out[st] != 0 ? st : t->dict[st]; v != 0; v = t->dict[v]) {
        const jpt__scrub_pattern *pt = &t->pats[t->out[v] - 1];
        uint64_t at = end - pt->len;
        uint64_t reach = at + (pt->trigger ? pt->span : pt->len);
        jpt__scrub_pending *q = &s->pending[at & mask];
        if (q->trig_end == 0)
            s->npending++;
        if (q->trig_end < end)
            q->trig_end = end;
        if (q->span_end < reach)
            q->span_end = reach;
        if (pt->whole && q->whole_end < end)
            q->whole_end = end;
        s->steps++;
    }
    return JPT_OK;
}

/* The end of a feed (or of the stream, with final == pos): everything
 * before `final` is written, and carry holds the rest. */
static int settle(jpt__scrubber *s, const source *src, uint64_t final)
{
    finalize(s, src, final);
    uint64_t limit = final;
    if (s->count > 0 && run_at(s, 0)->s < limit)
        limit = run_at(s, 0)->s; /* [s, final) is inside that run */
    if (s->emitted < limit)
        put(s, src, s->emitted, limit);
    if (s->emitted < final)
        s->emitted = final;
    if (s->failed != 0)
        return s->failed;

    /* Hold back [emitted, pos): from the old carry's end and the chunk. */
    size_t keep = (size_t)(s->pos - s->emitted);
    size_t from_chunk = (size_t)(s->pos - src->chunk_base);
    if (keep <= from_chunk) {
        s->carry.len = 0;
        if (keep > 0 && jpt__buf_append(&s->carry, src->chunk + (from_chunk - keep), keep) < 0)
            return s->failed = JPT_ERR_NOMEM;
        return JPT_OK;
    }
    size_t old = keep - from_chunk;
    memmove(s->carry.data, s->carry.data + (s->carry.len - old), old);
    s->carry.len = old;
    if (from_chunk > 0 && jpt__buf_append(&s->carry, src->chunk, from_chunk) < 0)
        return s->failed = JPT_ERR_NOMEM;
    return JPT_OK;
}

/* The transition from a node without a row: failure links down to a node
 * that has a child for `b`, or to one with a row. */
static uint32_t slow_step(const jpt__scrub_set *t, uint32_t st, unsigned char b,
                          uint64_t *steps)
{
    for (;;) {
        if (st < t->nrows)
            return t->rows[(size_t)st * 256 + b];
        uint32_t next = child(t, st, b);
        if (next != 0)
            return arrive(t, next);
        st = t->fail[st];
        (*steps)++;
    }
}

int jpt__scrubber_feed(jpt__scrubber *s, const char *p, size_t n)
{
    const jpt__scrub_set *t = s->set;
    source src = {s->carry.data, s->emitted, p, s->pos};
    uint32_t st = s->state;
    uint64_t steps = 0;

    if (s->failed != 0)
        return s->failed;
    if (jpt__scrub_set_empty(t)) {
        s->pos += n;
        s->emitted = s->pos;
        return sink(s, p, n);
    }
    /* Kept in locals: the bytes read may alias anything of `s`. */
    const uint32_t *rows = t->rows, nrows = t->nrows;
    size_t pending = s->npending;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)p[i];
        uint32_t e = st < nrows ? rows[(size_t)st * 256 + b] : slow_step(t, st, b, &steps);
        st = e & NODE_MASK;
        if (!(e & ENDS_PATTERN) && pending == 0)
            continue;
        /* The start of the node's string: no pattern starting before it
         * can still end. */
        uint64_t end = src.chunk_base + i + 1, w = end - t->depth[st];
        if (((e & ENDS_PATTERN) && note_patterns(s, st, end, w) < 0) ||
            (w >= s->decided + DECIDE_BATCH && decide(s, &src, w, UINT64_MAX) < 0)) {
            s->steps += steps + i + 1;
            return s->failed;
        }
        pending = s->npending;
    }
    s->state = st;
    s->steps += steps + n; /* a transition per byte */
    s->pos += n;
    uint64_t final = s->pos - t->depth[st];
    if (decide(s, &src, final, UINT64_MAX) < 0)
        return s->failed;
    return settle(s, &src, final);
}

int jpt__scrubber_finish(jpt__scrubber *s)
{
    source src = {s->carry.data, s->emitted, NULL, s->pos};

    if (s->failed != 0)
        return s->failed;
    if (!jpt__scrub_set_empty(s->set) && decide(s, &src, s->pos, s->pos) < 0)
        return s->failed;
    /* A redaction that would reach past the end stops there. */
    for (size_t i = 0; i < s->count; i++)
        if (run_at(s, i)->e > s->pos)
            run_at(s, i)->e = s->pos;
    int rc = settle(s, &src, s->pos);
    s->state = 0;
    s->carry.len = 0;
    return rc;
}

static int append_to_buf(void *ud, const char *p, size_t n)
{
    return jpt__buf_append(ud, p, n);
}

int jpt__scrub(const jpt__scrub_set *set, const char *p, size_t n, jpt__buf *out, bool *found)
{
    jpt__scrubber s;

    jpt__scrubber_init(&s, set, append_to_buf, out);
    int rc = jpt__scrubber_feed(&s, p, n);
    if (rc == JPT_OK)
        rc = jpt__scrubber_finish(&s);
    if (found != NULL)
        *found = s.redactions > 0;
    jpt__scrubber_free(&s);
    return rc;
}
