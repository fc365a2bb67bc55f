/* The line matcher of fs.grep (issue 9 §5): pcre2 compiled with JIT where
 * the machine has it (its interpreter elsewhere), with match, depth and
 * heap limits so that no pattern runs away, and a literal fast path: when
 * every match must contain a known string, memmem finds the candidate
 * lines and the regex runs only on those (or not at all, when the string
 * is the whole pattern). pcre2's own allocations go through the library's
 * allocator. */
#define _GNU_SOURCE /* memmem, memrchr */
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "files/files.h"

/* Enough for any sane pattern on one line; a pattern that needs more fails
 * the grep with JPT_ERR_LIMIT instead of stalling the host's loop. */
#define MATCH_LIMIT 10000000u
#define DEPTH_LIMIT 10000u
#define HEAP_LIMIT_KIB (64u * 1024u)
#define JIT_STACK_MIN (32u * 1024u)
#define JIT_STACK_MAX (1024u * 1024u)

#define JPT__FILES_STR_(x) #x
#define JPT__FILES_STR(x) JPT__FILES_STR_(x)

struct jpt__matcher {
    pcre2_general_context *gctx;
    pcre2_compile_context *cctx;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit_stack;
    pcre2_code *code;
    pcre2_match_data *md;
    bool jit;
    char *literal; /* a string every match contains, or NULL */
    size_t literal_len;
    bool literal_only; /* the literal is the pattern: no regex to run */
    bool fold;         /* the literal is matched without regard to ASCII case */
    /* The two rarest bytes of the literal, at offsets i1 <= i2 (each in
     * both cases when folding): where both are found, the literal may
     * start (ripgrep's "packed pair"). */
    size_t i1, i2;
    unsigned char b1, b2, c1, c2;
};

static void *pcre_alloc(PCRE2_SIZE n, void *ud)
{
    (void)ud;
    return jpt__malloc(n);
}

static void pcre_free(void *p, void *ud)
{
    (void)ud;
    jpt__free(p);
}

void jpt__matcher_free(jpt__matcher *m)
{
    if (m == NULL)
        return;
    pcre2_match_data_free(m->md);
    pcre2_code_free(m->code);
    pcre2_jit_stack_free(m->jit_stack);
    pcre2_match_context_free(m->mctx);
    pcre2_compile_context_free(m->cctx);
    pcre2_general_context_free(m->gctx);
    jpt__free(m->literal);
    jpt__free(m);
}

/* ---- The required literal -----------------------------------------------------------
 * From a pattern that is one sequence (no alternation at its top level):
 * runs of plain characters, each cut where a group, a class, an escape
 * that is not a plain character, or a quantifier that makes the character
 * before it optional interrupts it. The longest run is a string every
 * match contains. Anything this reading is unsure of ("(?" options, \Q)
 * gives no literal, which is only slower. */

/* Back over one UTF-8 character ending at run[n]. */
static size_t char_start(const char *run, size_t n)
{
    size_t i = n;
    while (i > 0 && ((unsigned char)run[i - 1] & 0xC0) == 0x80)
        i--;
    return i > 0 ? i - 1 : 0;
}

/* Skips a character class starting at p[i] == '['; returns the index after
 * its ']'. */
static size_t skip_class(const char *p, size_t n, size_t i)
{
    i++;
    if (i < n && p[i] == '^')
        i++;
    if (i < n && p[i] == ']')
        i++;
    while (i < n && p[i] != ']')
        i += p[i] == '\\' && i + 1 < n ? 2 : 1;
    return i < n ? i + 1 : n;
}

typedef struct literal_scan {
    char *best;
    size_t best_len;
    char *run;
    size_t run_len;
    bool whole; /* one run made of the whole pattern so far */
} literal_scan;

static void end_run(literal_scan *s)
{
    if (s->run_len > s->best_len) {
        memcpy(s->best, s->run, s->run_len);
        s->best_len = s->run_len;
    }
    s->run_len = 0;
}

/* Returns false when the pattern is beyond this reading. */
static bool scan_literal(const char *p, size_t n, literal_scan *s)
{
    int depth = 0;
    size_t i = 0;

    s->whole = true;
    while (i < n) {
        unsigned char c = (unsigned char)p[i];
        if (c == '|' && depth == 0)
            return false;
        if (c == '(' && i + 1 < n && p[i + 1] == '?')
            return false;
        if (c == '\\' && i + 1 < n && p[i + 1] == 'Q')
            return false;
        if (c == '(' || c == ')') {
            depth += c == '(' ? 1 : -1;
            s->whole = false;
            end_run(s);
            i++;
            continue;
        }
        if (depth > 0) {
            if (c == '[')
                i = skip_class(p, n, i);
            else
                i += c == '\\' ? 2 : 1;
            continue;
        }
        if (c == '*' || c == '?' || c == '{' || c == '+') {
            /* The character before is optional, or (with '+') repeated:
             * either way the run cannot go on across it. */
            if (c != '+' && s->run_len > 0)
                s->run_len = char_start(s->run, s->run_len);
            s->whole = false;
            end_run(s);
            if (c == '{')
                while (i < n && p[i] != '}')
                    i++;
            i++;
            if (i < n && (p[i] == '?' || p[i] == '+')) /* lazy, possessive */
                i++;
            continue;
        }
        if (c == '[') {
            s->whole = false;
            end_run(s);
            i = skip_class(p, n, i);
            continue;
        }
        if (c == '\\') {
            unsigned char e = i + 1 < n ? (unsigned char)p[i + 1] : 0;
            if (e != 0 && e < 0x80 && !((e >= '0' && e <= '9') || (e >= 'a' && e <= 'z') ||
                                        (e >= 'A' && e <= 'Z'))) {
                s->run[s->run_len++] = (char)e;
                s->whole = false; /* an escape: the regex still runs */
            } else {
                s->whole = false;
                end_run(s);
            }
            i += 2;
            continue;
        }
        if (c == '.' || c == '^' || c == '$') {
            s->whole = false;
            end_run(s);
            i++;
            continue;
        }
        s->run[s->run_len++] = (char)c;
        i++;
    }
    end_run(s);
    return true;
}

/* Bytes by how common they are in source code and prose, the most common
 * first; every byte not listed is rarer than all of these. */
static const char common_bytes[] =
    " etaoinsrlhdcupmf_(),;.=g\n\tybw*/\"-v>x0k1<:2#{}[]ETASRINOLCDMP";

static int rarity(unsigned char c)
{
    const char *at = memchr(common_bytes, c, sizeof(common_bytes) - 1);
    return at != NULL ? (int)(at - common_bytes) - (int)sizeof(common_bytes) : 0;
}

/* Whether a byte of a caseless literal can anchor the search: Unicode
 * folding gives 'k' and 's' spellings of another length (KELVIN SIGN,
 * LONG S), and a byte of a non-ASCII letter may differ between cases. */
static bool foldable(unsigned char c)
{
    return c < 0x80 && c != 'k' && c != 'K' && c != 's' && c != 'S';
}

static unsigned char other_case(unsigned char c)
{
    if (c >= 'a' && c <= 'z')
        return (unsigned char)(c - 'a' + 'A');
    if (c >= 'A' && c <= 'Z')
        return (unsigned char)(c - 'A' + 'a');
    return c;
}

static bool rarer(const jpt__matcher *m, size_t i, size_t than)
{
    return than == SIZE_MAX ||
           rarity((unsigned char)m->literal[i]) > rarity((unsigned char)m->literal[than]);
}

/* Picks the pair; false if no byte may anchor a caseless search. When
 * folding, both bytes come from one run of foldable bytes, so that no
 * character whose other case has another length lies between them. */
static bool choose_pair(jpt__matcher *m)
{
    size_t best = SIZE_MAX, second = SIZE_MAX, lo = 0, hi = m->literal_len;

    for (size_t i = 0; i < m->literal_len; i++)
        if ((!m->fold || foldable((unsigned char)m->literal[i])) && rarer(m, i, best))
            best = i;
    if (best == SIZE_MAX)
        return false;
    if (m->fold) {
        for (lo = best; lo > 0 && foldable((unsigned char)m->literal[lo - 1]); lo--)
            ;
        for (hi = best + 1; hi < m->literal_len && foldable((unsigned char)m->literal[hi]); hi++)
            ;
    }
    for (size_t i = lo; i < hi; i++)
        if (i != best && rarer(m, i, second))
            second = i;
    if (second == SIZE_MAX)
        second = best;
    m->i1 = best < second ? best : second;
    m->i2 = best < second ? second : best;
    m->b1 = (unsigned char)m->literal[m->i1];
    m->b2 = (unsigned char)m->literal[m->i2];
    m->c1 = m->fold ? other_case(m->b1) : m->b1;
    m->c2 = m->fold ? other_case(m->b2) : m->b2;
    return true;
}

static int find_literal(jpt__matcher *m, const char *pattern, size_t len, bool fixed,
                        bool caseless)
{
    literal_scan s = {NULL, 0, NULL, 0, false};

    if (len == 0)
        return JPT_OK;
    if ((s.best = jpt__malloc(len)) == NULL || (s.run = jpt__malloc(len)) == NULL) {
        jpt__free(s.best);
        return JPT_ERR_NOMEM;
    }
    if (fixed) {
        memcpy(s.best, pattern, len);
        s.best_len = len;
        s.whole = true;
    } else if (!scan_literal(pattern, len, &s))
        s.best_len = 0;
    jpt__free(s.run);
    m->literal = s.best;
    m->literal_len = s.best_len;
    m->fold = caseless;
    /* Caseless, the regex always has the last word (Unicode folding). */
    m->literal_only = s.whole && s.best_len == len && !caseless;
    if (s.best_len == 0 || !choose_pair(m)) {
        jpt__free(m->literal);
        m->literal = NULL;
        m->literal_len = 0;
        m->literal_only = false;
    }
    return JPT_OK;
}

/* ---- Compiling ------------------------------------------------------------------------- */

static int setup_contexts(jpt__matcher *m)
{
    if ((m->gctx = pcre2_general_context_create(pcre_alloc, pcre_free, NULL)) == NULL ||
        (m->cctx = pcre2_compile_context_create(m->gctx)) == NULL ||
        (m->mctx = pcre2_match_context_create(m->gctx)) == NULL)
        return JPT_ERR_NOMEM;
    /* pcre2 compiles a group with a stack frame per level (some 600 bytes
     * each): its own limit, 250, takes 150 KiB of the host's stack for a
     * pattern the tool or the model wrote (issue 15 §1). */
    pcre2_set_parens_nest_limit(m->cctx, JPT_VFS_GREP_NEST_LIMIT);
    pcre2_set_match_limit(m->mctx, MATCH_LIMIT);
    pcre2_set_depth_limit(m->mctx, DEPTH_LIMIT);
    pcre2_set_heap_limit(m->mctx, HEAP_LIMIT_KIB);
    return JPT_OK;
}

/* JIT where it works; otherwise the interpreter, which is correct and
 * slower (a build without JIT, a system that forbids executable memory). */
static int setup_jit(jpt__matcher *m)
{
    if (pcre2_jit_compile(m->code, PCRE2_JIT_COMPLETE) != 0)
        return JPT_OK;
    if ((m->jit_stack = pcre2_jit_stack_create(JIT_STACK_MIN, JIT_STACK_MAX, m->gctx)) == NULL)
        return JPT_ERR_NOMEM;
    pcre2_jit_stack_assign(m->mctx, NULL, m->jit_stack);
    m->jit = true;
    return JPT_OK;
}

int jpt__matcher_new(const char *pattern, size_t len, bool fixed, bool caseless,
                     jpt__errbuf *e, jpt__matcher **out)
{
    jpt__matcher *m = jpt__calloc(1, sizeof(*m));
    int errcode;
    PCRE2_SIZE erroff;
    /* Lines are UTF-8 text as ripgrep reads them: \w, \d, \b and case
     * folding are Unicode-aware, and invalid UTF-8 only fails to match. */
    uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (caseless ? PCRE2_CASELESS : 0) |
                       (fixed ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_MULTILINE);

    *out = NULL;
    if (m == NULL)
        return jpt__err(e, JPT_ERR_NOMEM, "fs.grep: out of memory");
    if (memchr(pattern, '\n', len) != NULL) {
        jpt__matcher_free(m);
        return jpt__err(e, JPT_ERR_INVALID,
                        "fs.grep: the pattern holds a line break; lines are searched one at a "
                        "time");
    }
    if (setup_contexts(m) < 0 || find_literal(m, pattern, len, fixed, caseless) < 0) {
        jpt__matcher_free(m);
        return jpt__err(e, JPT_ERR_NOMEM, "fs.grep: out of memory");
    }
    m->code = pcre2_compile((PCRE2_SPTR)pattern, len, options, &errcode, &erroff, m->cctx);
    if (m->code == NULL) {
        PCRE2_UCHAR why[256];
        jpt__matcher_free(m);
        if (errcode == PCRE2_ERROR_HEAP_FAILED)
            return jpt__err(e, JPT_ERR_NOMEM, "fs.grep: out of memory");
        pcre2_get_error_message(errcode, why, sizeof(why));
        return jpt__err(e, JPT_ERR_INVALID, "fs.grep: the pattern does not compile at offset "
                        "%zu: %s%s", (size_t)erroff, (const char *)why,
                        errcode == PCRE2_ERROR_PARENTHESES_NEST_TOO_DEEP
                            ? " (at most " JPT__FILES_STR(JPT_VFS_GREP_NEST_LIMIT) " levels)"
                            : "");
    }
    if ((m->md = pcre2_match_data_create_from_pattern(m->code, m->gctx)) == NULL ||
        setup_jit(m) < 0) {
        jpt__matcher_free(m);
        return jpt__err(e, JPT_ERR_NOMEM, "fs.grep: out of memory");
    }
    *out = m;
    return JPT_OK;
}

bool jpt__matcher_has_literal(const jpt__matcher *m)
{
    return m->literal != NULL;
}

void jpt__matcher_disable_jit(jpt__matcher *m)
{
    m->jit = false;
}

/* ---- Matching ------------------------------------------------------------------------- */

/* pcre2_match on [p, end): 1 with the match's offsets, 0, or a status. */
static int run(jpt__matcher *m, const char *p, const char *end, PCRE2_SIZE **ov)
{
    int rc = m->jit ? pcre2_jit_match(m->code, (PCRE2_SPTR)p, (PCRE2_SIZE)(end - p), 0, 0,
                                      m->md, m->mctx)
                    : pcre2_match(m->code, (PCRE2_SPTR)p, (PCRE2_SIZE)(end - p), 0,
                                  PCRE2_NO_JIT, m->md, m->mctx);
    if (rc >= 0) {
        *ov = pcre2_get_ovector_pointer(m->md);
        return 1;
    }
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    return rc == PCRE2_ERROR_NOMEMORY ? JPT_ERR_NOMEM : JPT_ERR_LIMIT;
}

static const char *line_start(const char *from, const char *at)
{
    const char *nl = at > from ? memrchr(from, '\n', (size_t)(at - from)) : NULL;
    return nl != NULL ? nl + 1 : from;
}

static const char *line_end(const char *at, const char *end)
{
    const char *nl = at < end ? memchr(at, '\n', (size_t)(end - at)) : NULL;
    return nl != NULL ? nl : end;
}

static bool pair_at(const jpt__matcher *m, const char *p)
{
    unsigned char a = (unsigned char)p[m->i1], b = (unsigned char)p[m->i2];
    return (a == m->b1 || a == m->c1) && (b == m->b2 || b == m->c2);
}

/* The first position in [p, end) where the literal may start: the pair
 * matches there, and the literal fits before `end`. */
static const char *next_candidate(const jpt__matcher *m, const char *p, const char *end)
{
    if ((size_t)(end - p) < m->literal_len)
        return NULL;
    const char *last = end - m->literal_len; /* the last start that fits */
#if defined(__SSE2__)
    const __m128i b1 = _mm_set1_epi8((char)m->b1), c1 = _mm_set1_epi8((char)m->c1);
    const __m128i b2 = _mm_set1_epi8((char)m->b2), c2 = _mm_set1_epi8((char)m->c2);
    /* 16 starts at a time; the loads end at p + i2 + 16 <= end. */
    for (; last - p >= 15; p += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + m->i1));
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(p + m->i2));
        __m128i hit = _mm_and_si128(_mm_or_si128(_mm_cmpeq_epi8(x, b1), _mm_cmpeq_epi8(x, c1)),
                                    _mm_or_si128(_mm_cmpeq_epi8(y, b2), _mm_cmpeq_epi8(y, c2)));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        if (mask != 0)
            return p + __builtin_ctz(mask);
    }
#endif
    for (; p <= last; p++)
        if (pair_at(m, p))
            return p;
    return NULL;
}

static int find_by_literal(jpt__matcher *m, const char *p, const char *end, const char **line,
                           const char **lend)
{
    const char *from = p; /* where the line being looked at may start */
    PCRE2_SIZE *ov;

    while (p < end) {
        const char *hit = next_candidate(m, p, end);
        if (hit == NULL)
            return 0;
        if (!m->fold && memcmp(hit, m->literal, m->literal_len) != 0) {
            p = hit + 1;
            continue;
        }
        const char *ls = line_start(from, hit), *le = line_end(hit, end);
        int rc = m->literal_only ? 1 : run(m, ls, le, &ov);
        if (rc != 0) {
            *line = ls;
            *lend = le;
            return rc;
        }
        p = from = le + 1;
    }
    return 0;
}

/* Without a literal the regex runs over many lines at once (pcre2 skips
 * ahead far faster than a call per line), with ^ and $ at line bounds. A
 * match that crosses a line end (\s meeting '\n') is checked again on its
 * first line alone, and the search goes on after that line if it fails. */
static int find_by_regex(jpt__matcher *m, const char *p, const char *end, const char **line,
                         const char **lend)
{
    PCRE2_SIZE *ov;

    while (p < end) {
        int rc = run(m, p, end, &ov);
        if (rc <= 0)
            return rc;
        const char *s = p + ov[0];
        if (s == end && end[-1] == '\n')
            return 0; /* the empty line after the last '\n' is no line */
        const char *ls = line_start(p, s), *le = line_end(s, end);
        if (p + ov[1] <= le || (rc = run(m, ls, le, &ov)) != 0) {
            *line = ls;
            *lend = le;
            return rc;
        }
        p = le + 1;
    }
    return 0;
}

int jpt__matcher_find(jpt__matcher *m, const char *p, const char *end, const char **line,
                      const char **line_end)
{
    if (m->literal != NULL)
        return find_by_literal(m, p, end, line, line_end);
    return find_by_regex(m, p, end, line, line_end);
}
