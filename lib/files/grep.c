/* fs.grep (D11, issue 9 §5) as an iterator: the walk of the tree, the
 * reading of each file in blocks and the search of its lines all keep
 * their place between steps, so a host can slice a grep over a huge tree
 * (or one huge file) across its dispatches. The files searched and the
 * lines found are ripgrep's for `rg -P --no-ignore --hidden -g '!.git'
 * --sort path` (issue 16 §2; see jpt_files_grep in vfs.h for the rules). */
#define _GNU_SOURCE /* memrchr */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "files/files.h"

/* How `rg -P` reads a file: through a UTF-8 decoder, which passes on the
 * first 3 bytes (where a BOM would be) and then 8 KiB at a time; its line
 * buffer checks each of these pieces for a NUL before the lines that end
 * in it are searched. So a NUL ends a file at the start of its piece: the
 * lines that ended before are searched, no other. fs.grep reads 8 pieces
 * at a time, each read ending at a piece's end. */
#define PIECE0 3u
#define PIECE (8u * 1024u)
#define READ_SIZE (8u * PIECE)
#define MAX_CONTEXT 100

typedef struct frame {
    void *dir;
    jpt__files_list list;
    size_t next;
    size_t rel_len, real_len; /* this directory's path in g->rel, g->real */
} frame;

struct jpt__grep {
    jpt__files_sync *f;
    jpt__files_opts opts;
    jpt__errbuf err;
    jpt__matcher *m;
    char **paths;
    size_t n_paths, next_path;
    char **exts;
    size_t n_exts;
    unsigned context;
    size_t max_matches, matched;
    bool truncated, done;

    frame *stack;
    size_t depth, stack_cap;
    char rel[JPT__FILES_PATH_MAX + 1];  /* the path reported */
    char real[JPT__FILES_PATH_MAX + 1]; /* the same after symlinks, for the guard */

    /* The file being searched: buf[start..end) holds what is read and
     * kept, the lines from `pos` on are not searched yet. When the matcher
     * needs UTF-8 (`utf8`), buf[start..end) is repaired text, and the
     * `hold` bytes after it begin a character the next read completes. */
    void *file;
    char *buf;
    size_t cap, start, pos, end, hold;
    uint64_t raw_next;  /* the file offset of the next read */
    bool utf8, eof, binary, stop;
    /* The lines of the last block to search end at `region`; the file
     * ends there when `region_last`. `in_region`: a step stopped in it. */
    size_t region;
    bool region_last, in_region;
    jpt__buf repaired;  /* scratch for repairing invalid UTF-8 */
    size_t lpos;        /* a line start whose number is lno */
    uint64_t lno;
    uint64_t last_out;  /* the number of the last line put out (0: none) */
    size_t after_pos;   /* the line after the last match, while after_left */
    unsigned after_left;
    bool file_listed;   /* the file's entry is open in `out` */

    /* The result as JSON text, written as the search goes: D11's shape,
     * built without a tree (a result may hold thousands of lines). The
     * lines that could not be judged go to `skipped`, listed at the end. */
    jpt__buf out;
    size_t files_listed;
    jpt__buf skipped;
    size_t n_skipped;
};

static jpt__files_ctx ctx_for(jpt__grep *g, const char *shown)
{
    jpt__files_ctx c = {"fs.grep", shown, &g->opts, &g->err};
    return c;
}

/* ---- Params ------------------------------------------------------------------------- */

static int bad(jpt__grep *g, const char *what)
{
    return jpt__err(&g->err, JPT_ERR_INVALID, "fs.grep: %s", what);
}

/* fs.grep's `paths`, each checked and normalised, or its `extensions`,
 * each "rs" or ".rs", copied into `*out`. */
static int take_strings(jpt__grep *g, const char *const *v, size_t n, bool paths, char ***out,
                        size_t *count)
{
    *count = 0;
    if (v == NULL)
        return JPT_OK;
    if ((*out = jpt__calloc(n + 1, sizeof(char *))) == NULL)
        return jpt__err(&g->err, JPT_ERR_NOMEM, "fs.grep: out of memory");
    for (size_t i = 0; i < n; i++) {
        char norm[JPT__FILES_PATH_MAX + 1];
        const char *s = v[i];
        size_t len = strlen(s);
        int rc;
        if (paths) {
            if ((rc = jpt__files_path_check("fs.grep", s, len, norm, &g->err)) < 0)
                return rc;
            s = norm;
            len = strlen(norm);
        } else {
            if (len > 0 && s[0] == '.') {
                s++;
                len--;
            }
            if (len == 0 || memchr(s, '/', len) != NULL)
                return bad(g, "params.extensions must hold names like \"rs\" or \".rs\"");
        }
        if (((*out)[*count] = jpt__memdup0(s, len)) == NULL)
            return jpt__err(&g->err, JPT_ERR_NOMEM, "fs.grep: out of memory");
        (*count)++;
    }
    return JPT_OK;
}

static int take_params(jpt__grep *g, const jpt__vfs_params *p)
{
    int rc;

    if ((rc = take_strings(g, p->paths, p->npaths, true, &g->paths, &g->n_paths)) < 0 ||
        (rc = take_strings(g, p->extensions, p->nextensions, false, &g->exts, &g->n_exts)) < 0)
        return rc;
    if (p->context > MAX_CONTEXT)
        return bad(g, "params.context must be an integer from 0 to 100");
    g->context = p->context;
    g->max_matches = g->opts.grep_max_matches ? g->opts.grep_max_matches
                                              : JPT_FILES_GREP_MAX_MATCHES;
    if (p->max_matches > 0)
        g->max_matches = p->max_matches < SIZE_MAX ? (size_t)p->max_matches : SIZE_MAX;
    return JPT_OK;
}

int jpt__grep_begin(jpt__files_sync *f, const jpt__vfs_params *p, const jpt__files_opts *opts,
                    jpt__errbuf *e, jpt__grep **out)
{
    jpt__grep *g;
    int rc;

    *out = NULL;
    if ((g = jpt__calloc(1, sizeof(*g))) == NULL)
        return jpt__err(e, JPT_ERR_NOMEM, "fs.grep: out of memory");
    g->f = f;
    if (opts != NULL)
        g->opts = *opts;
    if (p->pattern == NULL)
        rc = bad(g, "params.pattern must be a string, not missing");
    else if ((rc = take_params(g, p)) == JPT_OK)
        rc = jpt__matcher_new(p->pattern, strlen(p->pattern), p->fixed_strings,
                              p->case_insensitive, &g->err, &g->m);
    if (rc == JPT_OK && jpt__vfs_grep_begin(&g->out) == JPT_OK &&
        (g->buf = jpt__calloc(1, 2 * READ_SIZE)) != NULL)
        g->cap = 2 * READ_SIZE;
    else if (rc == JPT_OK)
        rc = jpt__err(&g->err, JPT_ERR_NOMEM, "fs.grep: out of memory");
    if (rc < 0) {
        memcpy(e->text, g->err.text, sizeof(e->text));
        jpt__grep_free(g);
        return rc;
    }
    g->utf8 = jpt__matcher_needs_utf8(g->m);
    *out = g;
    return JPT_OK;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- Lines out ------------------------------------------------------------------------ */

static int nomem(jpt__grep *g)
{
    return jpt__err(&g->err, JPT_ERR_NOMEM, "fs.grep: out of memory for the result");
}

static int put_line(jpt__grep *g, uint64_t number, const char *p, const char *end, bool match)
{
    jpt__buf *b = &g->out;
    int rc = JPT_OK;

    /* vfs.h, "Bounds": the result stays within JPT_VFS_GREP_RESULT_LIMIT,
     * its end included; what does not fit truncates it. */
    if (g->stop || b->len + 64 > JPT_VFS_GREP_RESULT_LIMIT ||
        jpt__vfs_grep_line_size(strlen(g->rel), (size_t)(end - p)) >
            JPT_VFS_GREP_RESULT_LIMIT - 64 - b->len) {
        g->truncated = g->stop = true;
        return JPT_OK;
    }

    /* A file's entry opens with its first line, which is a match or the
     * context before one: files without a match never appear. */
    bool first = !g->file_listed;
    if (first) {
        rc = jpt__vfs_grep_file(b, g->files_listed == 0, g->rel);
        g->file_listed = true;
        g->files_listed++;
    }
    if (rc == JPT_OK)
        rc = jpt__vfs_grep_line(b, first, number, p, (size_t)(end - p), match);
    if (rc < 0)
        return nomem(g);
    g->last_out = number;
    return JPT_OK;
}

/* The '\n' in p[0..n): every line is counted, so this must be fast. Byte
 * counters summed every 255 rounds are what compilers turn into vector
 * compares. */
static uint64_t count_lines(const char *p, size_t n)
{
    uint64_t total = 0;

    while (n > 0) {
        size_t chunk = n < 255 * 16 ? n : 255 * 16, i = 0;
        unsigned char acc[16] = {0};
        for (; i + 16 <= chunk; i += 16)
            for (int k = 0; k < 16; k++)
                acc[k] = (unsigned char)(acc[k] + (p[i + (size_t)k] == '\n'));
        for (int k = 0; k < 16; k++)
            total += acc[k];
        for (; i < chunk; i++)
            total += p[i] == '\n';
        p += chunk;
        n -= chunk;
    }
    return total;
}

/* The number of the line starting at `at` (at or after g->lpos). */
static uint64_t number_at(jpt__grep *g, size_t at)
{
    g->lno += count_lines(g->buf + g->lpos, at - g->lpos);
    g->lpos = at;
    return g->lno;
}

/* Puts out the lines after the last match, while context remains, up to
 * `limit` (a line start). */
static int put_after(jpt__grep *g, size_t limit)
{
    while (g->after_left > 0 && g->after_pos < limit) {
        const char *p = g->buf + g->after_pos;
        const char *nl = memchr(p, '\n', limit - g->after_pos);
        const char *le = nl != NULL ? nl : g->buf + limit;
        int rc = put_line(g, g->last_out + 1, p, le, false);
        if (rc < 0)
            return rc;
        g->after_left--;
        g->after_pos = (size_t)(le - g->buf) + 1;
    }
    return JPT_OK;
}

/* Puts out the context lines before the match line at `ls` (numbered
 * `number`), back to what was put out already or kept in the buffer. */
static int put_before(jpt__grep *g, size_t ls, uint64_t number)
{
    size_t starts[MAX_CONTEXT];
    unsigned n = 0;
    size_t at = ls;

    while (n < g->context && at > g->start && number - n - 1 > g->last_out) {
        const char *prev = g->buf + at - 1; /* the '\n' ending the line before */
        const char *nl = prev > g->buf + g->start
                             ? memrchr(g->buf + g->start, '\n', (size_t)(prev - g->buf) - g->start)
                             : NULL;
        at = nl != NULL ? (size_t)(nl - g->buf) + 1 : g->start;
        starts[n++] = at;
    }
    while (n > 0) {
        n--;
        size_t s = starts[n];
        const char *le = memchr(g->buf + s, '\n', ls - s);
        int rc = put_line(g, number - n - 1, g->buf + s, le, false);
        if (rc < 0)
            return rc;
    }
    return JPT_OK;
}

/* ---- Searching one file ------------------------------------------------------------------ */

static void file_close(jpt__grep *g)
{
    if (g->file != NULL)
        g->f->be->file_close(g->f, g->file);
    g->file = NULL;
}

/* Ends the file, and its entry in the result if it has one. */
static int file_finish(jpt__grep *g)
{
    file_close(g);
    if (!g->file_listed)
        return JPT_OK;
    g->file_listed = false;
    return jpt__vfs_grep_file_end(&g->out) < 0 ? nomem(g) : JPT_OK;
}

/* A line the matcher could not judge (pcre2's limits): listed in the
 * result's "skipped", the first JPT_FILES_GREP_MAX_SKIPPED of them. */
static int skip_line(jpt__grep *g, size_t ls)
{
    jpt__buf *b = &g->skipped;
    const char *why = jpt__matcher_reason(g->m);
    uint64_t number = number_at(g, ls);

    if (g->n_skipped++ >= JPT_FILES_GREP_MAX_SKIPPED)
        return JPT_OK;
    if (jpt__vfs_grep_skipped(b, b->len == 0, g->rel, number, why) < 0)
        return nomem(g);
    return JPT_OK;
}

/* Searches the whole lines of buf[pos..limit). Returns 0 when done, or 1
 * when `deadline` (0: none) passed after a line was found or skipped: a
 * line pcre2 gives up on takes its whole match limit, and a block may
 * hold many. */
static int search_region(jpt__grep *g, size_t limit, uint64_t deadline)
{
    const char *line, *le;
    int rc;

    while (g->pos < limit && !g->stop) {
        int found = jpt__matcher_find(g->m, g->buf + g->pos, g->buf + limit, &line, &le);
        if (found == JPT_ERR_LIMIT) {
            /* The line is skipped and said to be; the search goes on (rg
             * gives up the file there). */
            if ((rc = skip_line(g, (size_t)(line - g->buf))) < 0)
                return rc;
            g->pos = (size_t)(le - g->buf) + 1;
            if (deadline != 0 && g->pos < limit && now_ns() >= deadline)
                return 1;
            continue;
        }
        if (found < 0)
            return jpt__err(&g->err, found, "fs.grep: out of memory");
        if (found == 0)
            break;
        size_t ls = (size_t)(line - g->buf);
        if ((rc = put_after(g, ls)) < 0)
            return rc;
        if (g->matched == g->max_matches) {
            g->truncated = g->stop = true;
            return JPT_OK;
        }
        uint64_t number = number_at(g, ls);
        if ((rc = put_before(g, ls, number)) < 0 || (rc = put_line(g, number, line, le, true)) < 0)
            return rc;
        g->matched++;
        g->after_left = g->context;
        g->after_pos = (size_t)(le - g->buf) + 1;
        g->pos = g->after_pos;
        if (deadline != 0 && g->pos < limit && now_ns() >= deadline)
            return 1;
    }
    g->pos = limit;
    return put_after(g, limit);
}

/* Makes buf at least `need` bytes. The new bytes are defined: pcre2's JIT
 * reads ahead of a subject's end in whole words (harmless, but memcheck
 * would call it a use of uninitialised memory). */
static int grow(jpt__grep *g, size_t need)
{
    size_t cap = g->cap;

    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return jpt__err(&g->err, JPT_ERR_NOMEM, "fs.grep '%s': out of memory for a line",
                            g->rel);
        cap *= 2;
    }
    if (cap == g->cap)
        return JPT_OK;
    char *bigger = jpt__realloc(g->buf, cap);
    if (bigger == NULL)
        return jpt__err(&g->err, JPT_ERR_NOMEM, "fs.grep '%s': out of memory for a line",
                        g->rel);
    memset(bigger + g->cap, 0, cap - g->cap);
    g->buf = bigger;
    g->cap = cap;
    return JPT_OK;
}

/* Makes room for a read of `want` bytes as ripgrep's line buffer does:
 * what is kept moves to the front, and a buffer full of one line grows. */
static int make_room(jpt__grep *g, size_t want)
{
    size_t shift = g->start;

    if (shift > 0) {
        memmove(g->buf, g->buf + shift, g->end + g->hold - shift);
        g->start = 0;
        g->pos -= shift;
        g->end -= shift;
        g->lpos -= shift;
        g->after_pos = g->after_pos >= shift ? g->after_pos - shift : 0;
    }
    return grow(g, g->end + g->hold + want);
}

/* What is kept for the next block: the last `context` lines before pos. */
static void keep_context(jpt__grep *g)
{
    size_t at = g->pos;

    for (unsigned n = 0; n < g->context && at > g->start; n++) {
        const char *nl = at - 1 > g->start
                             ? memrchr(g->buf + g->start, '\n', at - 1 - g->start)
                             : NULL;
        at = nl != NULL ? (size_t)(nl - g->buf) + 1 : g->start;
    }
    g->start = at;
    if (g->lpos < g->start)
        number_at(g, g->start); /* what moves out is counted first */
}

/* The bytes at the end of p[0..n) that begin a character the next read
 * completes (a valid prefix of a UTF-8 sequence, Unicode §3.9): 0 to 3. */
static size_t incomplete_tail(const char *p, size_t n)
{
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = (unsigned char)p[n - k];
        if (c < 0x80)
            return 0;
        if (c < 0xC0)
            continue; /* a continuation byte: its lead is further back */
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (c < 0xC2 || c > 0xF4 || need <= k)
            return 0;
        if (k >= 2) {
            unsigned char second = (unsigned char)p[n - k + 1];
            unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
            unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
            if (second < lo || second > hi)
                return 0;
        }
        return k;
    }
    return 0;
}

/* Takes the `n` bytes read at buf[end + hold] into the text. When the
 * matcher needs UTF-8, each maximal invalid subpart becomes U+FFFD, as
 * ripgrep's decoder makes it before pcre2 sees a line, and a character
 * cut by the end of the read waits for the next one unless `final`. */
static int take_text(jpt__grep *g, size_t n, bool final)
{
    if (!g->utf8) {
        g->end += n;
        return JPT_OK;
    }
    char *text = g->buf + g->end, tail_bytes[4];
    size_t len = g->hold + n;
    size_t tail = final ? 0 : incomplete_tail(text, len), body = len - tail;
    size_t valid = jpt__ascii_prefix(text, body);
    valid += jpt__utf8_valid_prefix(text + valid, body - valid);
    int rc;

    if (valid < body) {
        jpt__buf *r = &g->repaired;
        r->len = 0;
        if (jpt__buf_append_utf8(r, text + valid, body - valid, true) < 0)
            return nomem(g);
        memcpy(tail_bytes, text + body, tail);
        if ((rc = grow(g, g->end + valid + r->len + tail)) < 0)
            return rc;
        text = g->buf + g->end;
        memcpy(text + valid, r->data, r->len);
        memcpy(text + valid + r->len, tail_bytes, tail);
        body = valid + r->len;
    }
    g->end += body;
    g->hold = tail;
    return JPT_OK;
}

/* Reads up to `want` bytes at buf[end + hold], fewer only at the end of
 * the file. Returns the count, or -1 when the file cannot be read on. */
static long read_more(jpt__grep *g, size_t want)
{
    jpt__files_ctx c = ctx_for(g, g->rel);
    char *to = g->buf + g->end + g->hold;
    size_t got = 0;

    while (got < want) {
        long n = g->f->be->file_read(g->f, &c, g->file, to + got, want - got);
        if (n < 0)
            return -1;
        if (n == 0) {
            g->eof = true;
            break;
        }
        got += (size_t)n;
    }
    g->raw_next += got;
    return (long)got;
}

/* The start of the piece (see PIECE) that holds the file offset `off`. */
static uint64_t piece_start(uint64_t off)
{
    return off < PIECE0 ? 0 : off - (off - PIECE0) % PIECE;
}

/* Reads one block and finds the lines to search in it: buf[pos..region),
 * the file's last when `region_last`. Returns 0, or an error. */
static int read_block(jpt__grep *g)
{
    uint64_t from = g->raw_next;
    size_t want = (from == 0 ? PIECE0 : 0) + READ_SIZE;
    int rc;

    keep_context(g);
    if ((rc = make_room(g, want)) < 0)
        return rc;
    g->region = g->pos;
    g->region_last = true;
    long got = read_more(g, want);
    if (got < 0)
        return 0; /* unreadable from here on: what was found stays */
    char *in = g->buf + g->end + g->hold;
    size_t n = (size_t)got;
    const char *nul = memchr(in, '\0', n);
    if (nul != NULL) {
        /* Binary (ripgrep's default): nothing from the NUL's piece on is
         * searched, and in the first piece that is the whole file. */
        n = (size_t)(piece_start(from + (uint64_t)(nul - in)) - from);
        g->binary = true;
    }
    /* A UTF-8 byte order mark is no text: ripgrep strips it, and then its
     * decoder strips one more right after it. */
    for (int k = 0; from == 0 && k < 2 && n >= 3 && memcmp(in, "\xEF\xBB\xBF", 3) == 0; k++) {
        memmove(in, in + 3, n - 3);
        n -= 3;
    }
    g->region_last = g->eof || g->binary;
    size_t old_end = g->end;
    if ((rc = take_text(g, n, g->region_last)) < 0)
        return rc;
    /* vfs.h, "Bounds": a line of JPT_VFS_GREP_LINE_LIMIT bytes or more ends
     * the file's search (what matched before it is kept). Only the line
     * kept from the reads before can be that long, and what was kept of
     * it holds no line end: its end is the first in what was just read. */
    const char *first_end = memchr(g->buf + old_end, '\n', g->end - old_end);
    if ((size_t)((first_end != NULL ? first_end : g->buf + g->end) - (g->buf + g->pos)) >=
        JPT_VFS_GREP_LINE_LIMIT) {
        g->region = g->pos;
        g->region_last = true;
        return JPT_OK;
    }
    if (g->eof && !g->binary) {
        g->region = g->end;
        return JPT_OK;
    }
    /* The whole lines (with none, one long line: read more); after a NUL,
     * the line it cuts is never searched. */
    const char *nl = memrchr(g->buf + g->pos, '\n', g->end - g->pos);
    g->region = nl != NULL ? (size_t)(nl - g->buf) + 1 : g->pos;
    return JPT_OK;
}

/* Reads and searches one block, or goes on with the one whose search the
 * last step left at its deadline. Returns 1 while the file goes on, 0 when
 * it is done, or an error. */
static int search_block(jpt__grep *g, uint64_t deadline)
{
    int rc;

    if (!g->in_region) {
        if ((rc = read_block(g)) < 0)
            return rc;
        g->in_region = true;
    }
    if ((rc = search_region(g, g->region, deadline)) != 0)
        return rc; /* an error, or 1: the deadline came */
    g->in_region = false;
    return g->region_last ? 0 : 1;
}

static void file_begin(jpt__grep *g, void *file)
{
    g->file = file;
    g->start = g->pos = g->end = g->hold = g->lpos = 0;
    g->raw_next = 0;
    g->lno = 1;
    g->last_out = 0;
    g->after_left = 0;
    g->eof = g->binary = g->in_region = false;
}

/* ---- The walk ------------------------------------------------------------------------- */

static bool ext_ok(jpt__grep *g, const char *name)
{
    size_t len = strlen(name);

    if (g->n_exts == 0)
        return true;
    for (size_t i = 0; i < g->n_exts; i++) {
        size_t el = strlen(g->exts[i]);
        if (len > el && name[len - el - 1] == '.' && memcmp(name + len - el, g->exts[i], el) == 0)
            return true;
    }
    return false;
}

/* Whether the guard lets the walk see `real`; `why` (may be NULL) gets its
 * reason when it does not. */
static bool allowed(jpt__grep *g, const char *real, char *why, size_t cap)
{
    char ignored[8];

    if (why == NULL) {
        why = ignored;
        cap = sizeof(ignored);
    }
    why[0] = '\0';
    return g->opts.guard == NULL ||
           g->opts.guard(g->opts.guard_ud, JPT__FILES_ACCESS_READ, real, why, cap) >= 0;
}

static void pop(jpt__grep *g)
{
    frame *fr = &g->stack[--g->depth];

    g->f->be->dir_close(g->f, fr->dir);
    jpt__files_list_free(&fr->list);
}

static int push(jpt__grep *g, void *dir)
{
    jpt__files_ctx c = ctx_for(g, g->rel);
    frame *stack = jpt__array_reserve(g->stack, &g->stack_cap, g->depth + 1, sizeof(*stack), 8);
    int rc;

    if (stack == NULL) {
        g->f->be->dir_close(g->f, dir);
        return jpt__err(&g->err, JPT_ERR_NOMEM, "fs.grep: out of memory");
    }
    g->stack = stack;
    frame *fr = &stack[g->depth++];
    memset(fr, 0, sizeof(*fr));
    fr->dir = dir;
    fr->rel_len = strlen(g->rel);
    fr->real_len = strlen(g->real);
    if ((rc = g->f->be->dir_list(g->f, &c, dir, &fr->list)) < 0) {
        pop(g);
        return rc == JPT_ERR_NOMEM ? rc : JPT_OK; /* unreadable: skipped */
    }
    return JPT_OK;
}

/* Sets g->rel and g->real to a child of the top frame. */
static bool child_path(jpt__grep *g, const frame *fr, const char *name)
{
    size_t nl = strlen(name);

    if (fr->rel_len + 1 + nl > JPT__FILES_PATH_MAX || fr->real_len + 1 + nl > JPT__FILES_PATH_MAX)
        return false;
    bool root = fr->rel_len == 0;
    g->rel[fr->rel_len] = '/';
    memcpy(g->rel + fr->rel_len + !root, name, nl + 1);
    bool real_root = fr->real_len == 0;
    size_t at = fr->real_len;
    g->real[at] = '/';
    memcpy(g->real + at + !real_root, name, nl + 1);
    return true;
}

/* One of `paths`: a directory is pushed, a file opened. */
static int start_path(jpt__grep *g, const char *path)
{
    char shown[256];
    jpt__files_ctx c = ctx_for(g, shown);
    int kind, rc;
    void *h;

    jpt__files_path_quote(path, strlen(path), shown);
    if ((rc = g->f->be->stat(g->f, &c, path, &kind, NULL)) < 0)
        return rc;
    if (kind == 0)
        return jpt__err(&g->err, JPT_ERR_NOT_FOUND, "fs.grep '%s': not found", shown);
    snprintf(g->real, sizeof(g->real), "%s", path);
    if (g->opts.guard != NULL && (rc = g->f->be->realpath(g->f, &c, path, g->real)) < 0)
        return rc;
    char why[256];
    if (!allowed(g, g->real, why, sizeof(why)))
        return jpt__err(&g->err, JPT_ERR_DENIED, "fs.grep '%s': %s", shown,
                        why[0] != '\0' ? why : jpt_strerror(JPT_ERR_DENIED));
    snprintf(g->rel, sizeof(g->rel), "%s", strcmp(path, ".") == 0 ? "" : path);
    if (strcmp(g->real, ".") == 0)
        g->real[0] = '\0';
    if (kind == JPT_FILES_KIND_DIR) {
        if ((rc = g->f->be->dir_open(g->f, &c, path, &h)) < 0)
            return rc;
        return push(g, h);
    }
    if (kind != JPT_FILES_KIND_FILE || !ext_ok(g, path))
        return JPT_OK;
    rc = g->f->be->file_open(g->f, &c, path, &h);
    if (rc == JPT_OK)
        file_begin(g, h);
    return rc == JPT_ERR_NOMEM ? rc : JPT_OK;
}

/* Moves to the next file to search: 1 when one is open, 0 when the walk is
 * over, or an error. */
static int next_file(jpt__grep *g)
{
    int rc;

    while (g->file == NULL) {
        if (g->depth == 0) {
            if (g->next_path == (g->n_paths ? g->n_paths : 1))
                return 0;
            const char *path = g->n_paths ? g->paths[g->next_path] : ".";
            g->next_path++;
            if ((rc = start_path(g, path)) < 0)
                return rc;
            continue;
        }
        frame *fr = &g->stack[g->depth - 1];
        if (fr->next == fr->list.n) {
            pop(g);
            continue;
        }
        jpt__files_entry *ent = &fr->list.v[fr->next++];
        jpt__files_ctx c = ctx_for(g, g->rel);
        void *h;
        /* rg -g '!.git': the repository's own files are not the project's. */
        if (strcmp(ent->name, ".git") == 0 || !child_path(g, fr, ent->name))
            continue;
        if (ent->kind == JPT_FILES_KIND_DIR && allowed(g, g->real, NULL, 0)) {
            rc = g->f->be->dir_open_at(g->f, &c, fr->dir, ent->name, g->rel, &h);
            if (rc == JPT_OK && (rc = push(g, h)) < 0)
                return rc;
            if (rc == JPT_ERR_NOMEM)
                return rc;
        } else if (ent->kind == JPT_FILES_KIND_FILE && ext_ok(g, ent->name) &&
                   allowed(g, g->real, NULL, 0)) {
            rc = g->f->be->file_open_at(g->f, &c, fr->dir, ent->name, &h);
            if (rc == JPT_ERR_NOMEM)
                return rc;
            if (rc == JPT_OK)
                file_begin(g, h);
        }
        /* Symlinks (not followed, as in ripgrep), FIFOs, sockets, devices,
         * and what vanished or may not be read are skipped. */
    }
    return 1;
}

static int finish(jpt__grep *g)
{
    jpt__buf *b = &g->out;

    while (g->depth > 0)
        pop(g);
    g->done = true;
    if (jpt__vfs_grep_end(b, g->truncated, g->skipped.data, g->skipped.len, g->n_skipped) < 0)
        return nomem(g);
    return 0;
}

int jpt__grep_step(jpt__grep *g, uint64_t budget_ns)
{
    uint64_t deadline = budget_ns ? now_ns() + budget_ns : 0;
    int rc;

    if (g->done)
        return 0;
    for (;;) {
        if (g->file == NULL && (rc = next_file(g)) <= 0)
            return rc < 0 ? rc : finish(g);
        if ((rc = search_block(g, deadline)) < 0)
            return rc;
        if ((rc == 0 || g->stop) && (rc = file_finish(g)) < 0)
            return rc;
        if (g->stop)
            return finish(g);
        if (deadline != 0 && now_ns() >= deadline)
            return 1;
    }
}

const char *jpt__grep_result(const jpt__grep *g, size_t *len)
{
    *len = g->done ? g->out.len : 0;
    return g->done ? g->out.data : NULL;
}

const char *jpt__grep_errmsg(const jpt__grep *g)
{
    return g->err.text;
}

void jpt__grep_free(jpt__grep *g)
{
    if (g == NULL)
        return;
    file_close(g);
    while (g->depth > 0)
        pop(g);
    jpt__free(g->stack);
    for (size_t i = 0; i < g->n_paths; i++)
        jpt__free(g->paths[i]);
    jpt__free(g->paths);
    for (size_t i = 0; i < g->n_exts; i++)
        jpt__free(g->exts[i]);
    jpt__free(g->exts);
    jpt__matcher_free(g->m);
    jpt__free(g->buf);
    jpt__buf_free(&g->repaired);
    jpt__buf_free(&g->out);
    jpt__buf_free(&g->skipped);
    jpt__free(g);
}
