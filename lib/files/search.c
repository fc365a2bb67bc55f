/* The line matcher of fs.grep (issue 9 §5, issue 16 §2). Each line is
 * judged alone, as `rg -P` judges it: pcre2 (UTF, UCP, MULTILINE; JIT
 * where the machine has it) runs on the line without its '\n', as valid
 * UTF-8. How the lines to judge are found depends on what the pattern
 * allows:
 *   - a literal every match contains (read from the pattern, or the
 *     fixed string): a vector scan finds the candidate lines and the regex
 *     judges each (or nothing does, when the literal is the pattern);
 *   - a pattern that looks at nothing beyond the text it matches
 *     ("line-local"): the regex runs over many lines at once, as ripgrep's
 *     own engine does, and a match inside one line is that line's; one
 *     that crosses a line end is judged again on its first line alone;
 *   - any other (lookaround, \A, \z, \G, \K, atomic groups, possessive
 *     quantifiers, verbs, …): the regex runs on each line alone.
 * pcre2 has the match limit that ripgrep leaves it (10 000 000) and a JIT
 * stack as large as ripgrep's; a line that needs more is reported to the
 * caller, which skips it. pcre2's own allocations go through the library's
 * allocator. */
#define _GNU_SOURCE /* memmem, memrchr */
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "files/files.h"

/* pcre2's default match limit, which `rg -P` keeps; the heap limit bounds
 * what the interpreter (no JIT) may take for one line. ripgrep's JIT
 * stack: "the PCRE2 docs say that 32KB is the default, and that 1MB should
 * be big enough for anything. But let's crank it to 10MB." */
#define MATCH_LIMIT 10000000u
#define HEAP_LIMIT_KIB (64u * 1024u)
#define JIT_STACK_MIN (32u * 1024u)
#define JIT_STACK_MAX (10u * 1024u * 1024u)

/* The bytes kept defined after a subject (see run_line). */
#define SLACK 32u

/* How lines are found (see the file's comment). */
enum { BY_LITERAL, BY_BLOCK, BY_LINE };

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
    int how;           /* BY_* */
    jpt__buf line;     /* a candidate line repaired to valid UTF-8 */
    char reason[128];  /* why the last line could not be judged */
    char *literal; /* a string every match contains, or NULL */
    size_t literal_len;
    bool literal_only; /* the literal is the pattern: no regex to run */
    bool fold;         /* the literal is matched without regard to ASCII case */
    /* The two rarest bytes of the literal, at offsets i1 <= i2 (each in
     * both cases when folding): where both are found that far apart, a
     * line may hold the literal (ripgrep's "packed pair"). */
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
    jpt__buf_free(&m->line);
    jpt__free(m->literal);
    jpt__free(m);
}

/* ---- Reading a pattern ------------------------------------------------------------
 * Just enough of pcre2's syntax (pcre2_compile.c, 10.42) to step over a
 * class, an escape or a group exactly as pcre2 does; each reader returns
 * false where it is unsure, and the caller then gives up, which is only
 * slower. Indexes are bytes into the pattern, which pcre2 has checked to be
 * UTF-8 by the time these run. */

typedef struct pattern_text {
    const char *p;
    size_t n;
} pattern_text;

static bool at(const pattern_text *pt, size_t i, char c)
{
    return i < pt->n && pt->p[i] == c;
}

/* The length of the character starting at p[i]. */
static size_t char_len(const pattern_text *pt, size_t i)
{
    unsigned char c = (unsigned char)pt->p[i];
    size_t len = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    return len < pt->n - i ? len : pt->n - i;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* From p[from], past the next `close` into *i, or false. */
static bool skip_to(const pattern_text *pt, size_t from, char close, size_t *i)
{
    const char *end = from < pt->n ? memchr(pt->p + from, close, pt->n - from) : NULL;

    if (end == NULL)
        return false;
    *i = (size_t)(end - pt->p) + 1;
    return true;
}

/* pcre2's check_posix_syntax: at p[i] (the ':', '.' or '=' after a '['
 * inside a class), whether a POSIX name and its ":]" follow; *end is then
 * past the ']'. */
static bool posix_class(const pattern_text *pt, size_t i, size_t *end)
{
    char term = pt->p[i++];

    for (; pt->n - i >= 2; i++) {
        const char *p = pt->p + i;
        if (p[0] == '\\' && (p[1] == ']' || p[1] == '\\'))
            i++;
        else if ((p[0] == '[' && p[1] == term) || p[0] == ']')
            return false;
        else if (p[0] == term && p[1] == ']') {
            *end = i + 2;
            return true;
        }
    }
    return false;
}

/* Steps over "\Q…\E" from its backslash at p[*i]: to past the "\E", or to
 * the end of the pattern, which ends the quote too. Sets *last to the
 * start of the quote's last character (SIZE_MAX if it is empty). */
static void skip_quote(const pattern_text *pt, size_t *i, size_t *last)
{
    size_t j = *i + 2;

    *last = SIZE_MAX;
    while (j < pt->n && !(pt->p[j] == '\\' && at(pt, j + 1, 'E'))) {
        *last = j;
        j += char_len(pt, j);
    }
    *i = j < pt->n ? j + 2 : j;
}

/* A class from p[*i] == '[' to past its ']'. In a class a backslash takes
 * the next character (and "\c" one more), "\Q…\E" quotes, a POSIX name is
 * one item, and a ']' first (after an optional '^') is a member. */
static bool skip_class(const pattern_text *pt, size_t *i)
{
    size_t j = *i + 1, end, last;
    bool negated = false, first = true;

    /* [[:<:]] and [[:>:]], pcre2's word starts and ends, are one item. */
    if (pt->n - j >= 6 && (memcmp(pt->p + j, "[:<:]]", 6) == 0 ||
                           memcmp(pt->p + j, "[:>:]]", 6) == 0)) {
        *i = j + 6;
        return true;
    }
    /* "\E", "\Q\E" and one '^' may come first. */
    for (;;) {
        if (at(pt, j, '\\') && at(pt, j + 1, 'E'))
            j += 2;
        else if (at(pt, j, '\\') && pt->n - j >= 4 && memcmp(pt->p + j + 1, "Q\\E", 3) == 0)
            j += 4;
        else if (!negated && at(pt, j, '^')) {
            negated = true;
            j++;
        } else
            break;
    }
    while (j < pt->n) {
        char c = pt->p[j];
        if (c == ']' && !first) {
            *i = j + 1;
            return true;
        }
        first = false;
        if (c == '[' && pt->n - j >= 4 &&
            (pt->p[j + 1] == ':' || pt->p[j + 1] == '.' || pt->p[j + 1] == '=') &&
            posix_class(pt, j + 1, &end))
            j = end;
        else if (c == '\\' && at(pt, j + 1, 'Q'))
            skip_quote(pt, &j, &last);
        else if (c == '\\' && at(pt, j + 1, 'c'))
            j += 3;
        else if (c == '\\' && j + 1 < pt->n)
            j += 1 + char_len(pt, j + 1);
        else
            j += char_len(pt, j);
    }
    return false;
}

/* An escape outside a class, from p[*i] == '\\', that is not a literal
 * character, "\Q" or "\E": to past it. */
static bool skip_escape(const pattern_text *pt, size_t *i)
{
    size_t j = *i + 1;
    char e = pt->p[j++];

    switch (e) {
    case 'x':
        if (at(pt, j, '{'))
            return skip_to(pt, j, '}', i);
        for (int k = 0; k < 2 && j < pt->n && strchr("0123456789abcdefABCDEF", pt->p[j]); k++)
            j++;
        break;
    case 'o':
        return at(pt, j, '{') && skip_to(pt, j, '}', i);
    case 'c':
        j++;
        break;
    case 'p':
    case 'P':
        if (at(pt, j, '{'))
            return skip_to(pt, j, '}', i);
        j++;
        break;
    case 'N': /* \N{U+hhhh}; \N{3} is \N repeated */
        if (at(pt, j, '{') && at(pt, j + 1, 'U') && at(pt, j + 2, '+'))
            return skip_to(pt, j, '}', i);
        break;
    case 'g':
    case 'k':
        if (at(pt, j, '{'))
            return skip_to(pt, j, '}', i);
        if (at(pt, j, '<'))
            return skip_to(pt, j, '>', i);
        if (at(pt, j, '\''))
            return skip_to(pt, j + 1, '\'', i);
        if (e == 'k')
            return false;
        if (at(pt, j, '+') || at(pt, j, '-'))
            j++;
        while (j < pt->n && is_digit(pt->p[j]))
            j++;
        break;
    case '0': /* up to two more octal digits */
        for (int k = 0; k < 2 && j < pt->n && pt->p[j] >= '0' && pt->p[j] <= '7'; k++)
            j++;
        break;
    default:
        /* \1 to \9 refer back; more digits may be a reference or an
         * octal character, by the number of groups. */
        if (is_digit(e) && j < pt->n && is_digit(pt->p[j]))
            return false;
        break;
    }
    if (j > pt->n)
        return false;
    *i = j;
    return true;
}

/* Options in "(?…)" or "(?…:" from p[i] (after the '?'): the letters, and
 * whether they end there. */
static bool option_letters(const pattern_text *pt, size_t i, size_t *end)
{
    while (i < pt->n && pt->p[i] != '\0' && strchr("imnsxJU-^", pt->p[i]) != NULL)
        i++;
    *end = i;
    return at(pt, i, ')') || at(pt, i, ':');
}

/* Whether options p[from..to) switch extended mode on (which changes what
 * white space and '#' mean: beyond this reading). */
static bool sets_extended(const pattern_text *pt, size_t from, size_t to)
{
    for (size_t i = from; i < to && pt->p[i] != '-'; i++)
        if (pt->p[i] == 'x')
            return true;
    return false;
}

/* A group from p[*i] == '(' to past its ')'. */
static bool skip_group(const pattern_text *pt, size_t *i)
{
    size_t j = *i, depth = 0, end, last;

    while (j < pt->n) {
        char c = pt->p[j];
        if (c == '\\' && at(pt, j + 1, 'Q'))
            skip_quote(pt, &j, &last);
        else if (c == '\\' && at(pt, j + 1, 'c'))
            j += 3;
        else if (c == '\\' && j + 1 < pt->n)
            j += 1 + char_len(pt, j + 1);
        else if (c == '[') {
            if (!skip_class(pt, &j))
                return false;
        } else if (c == '(' && at(pt, j + 1, '?') && at(pt, j + 2, '#')) {
            if (!skip_to(pt, j, ')', &j))
                return false;
        } else if (c == '(') {
            /* (*ACCEPT) ends a match early, whatever follows. */
            if (at(pt, j + 1, '*') ||
                (at(pt, j + 1, '?') && option_letters(pt, j + 2, &end) &&
                 sets_extended(pt, j + 2, end)))
                return false;
            depth++;
            j++;
        } else if (c == ')') {
            j++;
            if (--depth == 0) {
                *i = j;
                return true;
            }
        } else
            j += char_len(pt, j);
    }
    return false;
}

/* A quantifier at p[i]: its length (with a lazy or possessive mark) and
 * its minimum; 0 if there is none. *unsure where pcre2 versions read it
 * differently ("{,3}", "{2 }", which 10.43 takes as quantifiers and 10.42
 * as text). */
static size_t quantifier(const pattern_text *pt, size_t i, unsigned long *min, bool *unsure)
{
    size_t j = i + 1;

    *unsure = false;
    *min = 0;
    if (i >= pt->n)
        return 0;
    if (pt->p[i] == '*' || pt->p[i] == '?' || pt->p[i] == '+') {
        *min = pt->p[i] == '+';
    } else if (pt->p[i] == '{') {
        if (at(pt, j, ',') || at(pt, j, ' ')) {
            *unsure = true;
            return 0;
        }
        if (j >= pt->n || !is_digit(pt->p[j]))
            return 0; /* a literal '{' */
        for (; j < pt->n && is_digit(pt->p[j]); j++)
            *min = *min > 100000 ? *min : *min * 10 + (unsigned long)(pt->p[j] - '0');
        if (at(pt, j, ','))
            for (j++; j < pt->n && is_digit(pt->p[j]); j++)
                ;
        if (!at(pt, j, '}')) {
            *unsure = true;
            return 0;
        }
        j++;
    } else
        return 0;
    if (at(pt, j, '?') || at(pt, j, '+'))
        j++;
    return j - i;
}

/* Whether a quantifier (or what may be one) is at p[i]. */
static bool quantified(const pattern_text *pt, size_t i)
{
    unsigned long min;
    bool unsure;

    return quantifier(pt, i, &min, &unsure) > 0 || unsure;
}

/* ---- The required literal ------------------------------------------------------------
 * At the top level of a pattern without alternation there: runs of literal
 * characters (plain or escaped, or quoted by \Q…\E), each cut by anything
 * else (a class, a group, an escape that is not one character, an anchor)
 * and by a quantifier, which also takes back the character before it
 * when it may repeat it zero times. The longest run is in every match.
 * Groups are not looked into. Anything this reading is unsure of (options
 * that turn on extended mode, or case-folding the matcher does not do,
 * "(*" verbs and options, top-level '|', odd quantifiers) gives no
 * literal. */

typedef struct literal_scan {
    pattern_text pt;
    bool caseless;
    char *best, *run;
    size_t best_len, run_len;
    size_t last; /* run_len before the last atom if it was a character, or SIZE_MAX */
    bool whole;  /* every atom so far a plain character */
} literal_scan;

static void end_run(literal_scan *s)
{
    if (s->run_len > s->best_len) {
        memcpy(s->best, s->run, s->run_len);
        s->best_len = s->run_len;
    }
    s->run_len = 0;
    s->last = SIZE_MAX;
}

static void add_char(literal_scan *s, const char *c, size_t len)
{
    s->last = s->run_len;
    memcpy(s->run + s->run_len, c, len);
    s->run_len += len;
}

/* The quantifier at p[*i], if any, applied to the atom before it (none
 * when `atom` is false). */
static bool take_quantifier(literal_scan *s, size_t *i, bool atom)
{
    unsigned long min;
    bool unsure;
    size_t len = quantifier(&s->pt, *i, &min, &unsure);

    if (unsure)
        return false;
    if (len == 0)
        return true;
    /* Nothing to repeat, or a second quantifier: pcre2 refuses most of
     * these, and none is worth reading. */
    if (!atom || quantified(&s->pt, *i + len))
        return false;
    if (s->last != SIZE_MAX && min == 0)
        s->run_len = s->last;
    s->whole = false;
    end_run(s);
    *i += len;
    return true;
}

/* "(?" at the top level from p[*i] == '(': a comment, options for the rest
 * of the pattern, or a group. */
static bool top_group(literal_scan *s, size_t *i)
{
    const pattern_text *pt = &s->pt;
    size_t end;

    if (at(pt, *i + 2, '#'))
        return skip_to(pt, *i, ')', i) && !quantified(pt, *i);
    if (option_letters(pt, *i + 2, &end) && sets_extended(pt, *i + 2, end))
        return false;
    if (!at(pt, end, ')') || end == *i + 2)
        return skip_group(pt, i);
    /* A caseless rest is beyond a case-sensitive literal scan. */
    for (size_t k = *i + 2; k < end && pt->p[k] != '-'; k++)
        if (pt->p[k] == 'i' && !s->caseless)
            return false;
    *i = end + 1;
    return !quantified(pt, *i);
}

/* One escape at the top level, from p[*i] == '\\'. *atom says whether a
 * quantifier may follow it. */
static bool top_escape(literal_scan *s, size_t *i, bool *atom)
{
    const pattern_text *pt = &s->pt;
    size_t last, from = *i;

    if (*i + 1 >= pt->n)
        return false;
    char e = pt->p[*i + 1];
    if ((unsigned char)e >= 0x80 || !is_alnum(e)) {
        add_char(s, pt->p + *i + 1, char_len(pt, *i + 1));
        *i += 1 + char_len(pt, *i + 1);
        return true;
    }
    if (e == 'E') { /* a lone \E is nothing */
        *i += 2;
        *atom = false;
        return !quantified(pt, *i);
    }
    if (e != 'Q') {
        end_run(s);
        return skip_escape(pt, i);
    }
    skip_quote(pt, i, &last);
    if (last == SIZE_MAX) { /* "\Q\E": what a quantifier after it takes is unclear */
        *atom = false;
        return !quantified(pt, *i);
    }
    /* All but the last character, then the last, which a quantifier may
     * take back. */
    size_t body = last - (from + 2);
    memcpy(s->run + s->run_len, pt->p + from + 2, body);
    s->run_len += body;
    add_char(s, pt->p + last, char_len(pt, last));
    return true;
}

/* Returns false when the pattern is beyond this reading. */
static bool scan_literal(literal_scan *s)
{
    const pattern_text *pt = &s->pt;
    size_t i = 0;

    s->whole = true;
    s->last = SIZE_MAX;
    while (i < pt->n) {
        char c = pt->p[i];
        bool atom = true, ok = true;
        if (c == '|' || c == ')' || c == '*' || c == '+' || c == '?' || quantified(pt, i) ||
            (c == '(' && at(pt, i + 1, '*')))
            return false; /* alternation, or a quantifier with nothing before it */
        if (c == '(' || c == '[' || c == '.' || c == '^' || c == '$' || c == '\\')
            s->whole = false;
        if (c == '(') {
            end_run(s);
            ok = at(pt, i + 1, '?') ? top_group(s, &i) : skip_group(pt, &i);
        } else if (c == '[') {
            end_run(s);
            ok = skip_class(pt, &i);
        } else if (c == '.' || c == '^' || c == '$') {
            end_run(s);
            atom = c == '.';
            i++;
        } else if (c == '\\') {
            ok = top_escape(s, &i, &atom);
        } else {
            add_char(s, pt->p + i, char_len(pt, i));
            i += char_len(pt, i);
        }
        if (!ok || !take_quantifier(s, &i, atom))
            return false;
    }
    end_run(s);
    return true;
}

/* ---- Line-local patterns -------------------------------------------------------------
 * Whether a match found in a buffer of many lines, inside one line, is a
 * match of that line alone, and each line that matches alone has a match
 * in the buffer: true of a backtracking pattern whose every test looks at
 * no more than the characters it consumes and the one on either side (for
 * ^, $, \b and \B, a '\n' beside a line reads as the line's edge). Not of
 * lookaround, \A \z \Z \G (the subject's bounds), \K (a match's reported
 * start moves), atomic groups, possessive quantifiers, \R and \X (atomic
 * themselves: "\r\n" is one), backtracking verbs and pattern options
 * ("(*"), subroutine calls and conditions, or an option that takes
 * MULTILINE away. Read from the text, erring on the safe side: such a
 * sequence anywhere (even quoted or in a class) makes the pattern run line
 * by line. */

/* After "(?" at p[i]: a group that tests nothing outside its text (plain,
 * named, a branch reset, a comment), or options that keep MULTILINE. */
static bool plain_group(const pattern_text *pt, size_t i)
{
    size_t end;

    if (i >= pt->n)
        return false;
    switch (pt->p[i]) {
    case ':':
    case '|':
    case '#':
    case '\'':
        return true;
    case 'P':
        return at(pt, i + 1, '<');
    case '<':
        return !at(pt, i + 1, '=') && !at(pt, i + 1, '!');
    default:
        if (!option_letters(pt, i, &end))
            return false;
        for (size_t k = i; k < end; k++)
            if (pt->p[k] == '-' || pt->p[k] == '^')
                return false;
        return true;
    }
}

static bool line_local(const pattern_text *pt)
{
    static const char *const unsafe[] = {"(*", "*+", "++", "?+", "}+", "[:<:]", "[:>:]"};

    for (size_t k = 0; k < sizeof(unsafe) / sizeof(unsafe[0]); k++)
        if (memmem(pt->p, pt->n, unsafe[k], strlen(unsafe[k])) != NULL)
            return false;
    for (size_t i = 0; i + 1 < pt->n; i++) {
        char c = pt->p[i], next = pt->p[i + 1];
        if (c == '\\' && next != '\0' && strchr("AzZGKRXgC", next) != NULL)
            return false;
        if (c == '(' && next == '?' && !plain_group(pt, i + 2))
            return false;
    }
    return true;
}

/* ---- The literal's anchor pair ------------------------------------------------------ */

/* Bytes by how common they are in source code and prose, the most common
 * first; every byte not listed is rarer than all of these. */
static const char common_bytes[] =
    " etaoinsrlhdcupmf_(),;.=g\n\tybw*/\"-v>x0k1<:2#{}[]ETASRINOLCDMP";

static int rarity(unsigned char c)
{
    const char *p = memchr(common_bytes, c, sizeof(common_bytes) - 1);
    return p != NULL ? (int)(p - common_bytes) - (int)sizeof(common_bytes) : 0;
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

/* Sets m->how, and the literal when there is one. */
static int plan(jpt__matcher *m, const char *text, size_t len, bool fixed, bool caseless)
{
    literal_scan s = {{text, len}, caseless, NULL, NULL, 0, 0, SIZE_MAX, false};

    m->how = fixed || line_local(&s.pt) ? BY_BLOCK : BY_LINE;
    if (len == 0)
        return JPT_OK;
    if ((s.best = jpt__malloc(len)) == NULL || (s.run = jpt__malloc(len)) == NULL) {
        jpt__free(s.best);
        return JPT_ERR_NOMEM;
    }
    if (fixed) {
        memcpy(s.best, text, len);
        s.best_len = len;
        s.whole = true;
    } else if (!scan_literal(&s))
        s.best_len = 0;
    jpt__free(s.run);
    m->literal = s.best;
    m->literal_len = s.best_len;
    m->fold = caseless;
    /* Caseless, the regex always has the last word (Unicode folding). */
    m->literal_only = s.whole && s.best_len == len && !caseless;
    /* Lines are repaired before the regex sees them, but the literal is
     * sought in the bytes as read: a U+FFFD in it may stand for any
     * invalid bytes there. */
    if (s.best_len == 0 || memmem(s.best, s.best_len, "\xEF\xBF\xBD", 3) != NULL ||
        !choose_pair(m)) {
        jpt__free(m->literal);
        m->literal = NULL;
        m->literal_len = 0;
        m->literal_only = false;
        return JPT_OK;
    }
    m->how = BY_LITERAL;
    return JPT_OK;
}

/* ---- Compiling ------------------------------------------------------------------------- */

static int setup_contexts(jpt__matcher *m)
{
    if ((m->gctx = pcre2_general_context_create(pcre_alloc, pcre_free, NULL)) == NULL ||
        (m->cctx = pcre2_compile_context_create(m->gctx)) == NULL ||
        (m->mctx = pcre2_match_context_create(m->gctx)) == NULL)
        return JPT_ERR_NOMEM;
    /* Lines end at '\n' alone, as in ripgrep without --crlf: a '\r'
     * before it is part of the line. */
    pcre2_set_newline(m->cctx, PCRE2_NEWLINE_LF);
    /* pcre2 compiles a group with a stack frame per level (some 600 bytes
     * each): its own limit, 250, takes 150 KiB of the host's stack for a
     * pattern the tool or the model wrote (issue 15 §1). */
    pcre2_set_parens_nest_limit(m->cctx, JPT_VFS_GREP_NEST_LIMIT);
    pcre2_set_match_limit(m->mctx, MATCH_LIMIT);
    pcre2_set_heap_limit(m->mctx, HEAP_LIMIT_KIB);
    return JPT_OK;
}

/* JIT where it works; otherwise the interpreter, which is correct and
 * slower (a build without JIT, a system that forbids executable memory). */
static int setup_jit(jpt__matcher *m)
{
    size_t size = 0;

    /* A pattern may refuse JIT itself ("(*NO_JIT)"): then there is no
     * code, though pcre2_jit_compile succeeds. */
    if (pcre2_jit_compile(m->code, PCRE2_JIT_COMPLETE) != 0 ||
        pcre2_pattern_info(m->code, PCRE2_INFO_JITSIZE, &size) != 0 || size == 0)
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
    /* ripgrep's options for -P: UTF and UCP (\w, \d, \b and POSIX classes
     * are Unicode's), MULTILINE; -F quotes the pattern, which is
     * PCRE2_LITERAL (with which UCP, about classes, cannot be set; UTF alone
     * folds case by Unicode). */
    uint32_t options = PCRE2_UTF | (caseless ? PCRE2_CASELESS : 0) |
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
    if (setup_contexts(m) < 0) {
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
    if (plan(m, pattern, len, fixed, caseless) < 0 ||
        (m->md = pcre2_match_data_create_from_pattern(m->code, m->gctx)) == NULL ||
        setup_jit(m) < 0) {
        jpt__matcher_free(m);
        return jpt__err(e, JPT_ERR_NOMEM, "fs.grep: out of memory");
    }
    *out = m;
    return JPT_OK;
}

const char *jpt__matcher_literal(const jpt__matcher *m, size_t *len)
{
    *len = m->how == BY_LITERAL ? m->literal_len : 0;
    return m->how == BY_LITERAL ? m->literal : NULL;
}

bool jpt__matcher_line_by_line(const jpt__matcher *m)
{
    return m->how == BY_LINE;
}

bool jpt__matcher_needs_utf8(const jpt__matcher *m)
{
    return m->how != BY_LITERAL;
}

const char *jpt__matcher_reason(const jpt__matcher *m)
{
    return m->reason;
}

void jpt__matcher_disable_jit(jpt__matcher *m)
{
    m->jit = false;
}

/* ---- Matching ------------------------------------------------------------------------- */

/* pcre2_match on the valid UTF-8 [p, end): 1 with the match's offsets, 0,
 * JPT_ERR_NOMEM, or JPT_ERR_LIMIT with pcre2's reason in m->reason. */
static int run(jpt__matcher *m, const char *p, const char *end, PCRE2_SIZE **ov)
{
    int rc = m->jit ? pcre2_jit_match(m->code, (PCRE2_SPTR)p, (PCRE2_SIZE)(end - p), 0,
                                      PCRE2_NO_UTF_CHECK, m->md, m->mctx)
                    : pcre2_match(m->code, (PCRE2_SPTR)p, (PCRE2_SIZE)(end - p), 0,
                                  PCRE2_NO_JIT | PCRE2_NO_UTF_CHECK, m->md, m->mctx);
    if (rc >= 0) {
        *ov = pcre2_get_ovector_pointer(m->md);
        return 1;
    }
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc == PCRE2_ERROR_NOMEMORY)
        return JPT_ERR_NOMEM;
    pcre2_get_error_message(rc, (PCRE2_UCHAR *)m->reason, sizeof(m->reason));
    return JPT_ERR_LIMIT;
}

size_t jpt__ascii_prefix(const char *p, size_t n)
{
    size_t i = 0;

#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16) {
        unsigned mask = (unsigned)_mm_movemask_epi8(
            _mm_loadu_si128((const __m128i *)(const void *)(p + i)));
        if (mask != 0)
            return i + (size_t)__builtin_ctz(mask);
    }
#endif
    while (i < n && (unsigned char)p[i] < 0x80)
        i++;
    return i;
}

/* The line [p, end) alone, repaired first if it is not valid UTF-8 (only
 * a candidate of the literal scan can be). */
static int run_line(jpt__matcher *m, const char *p, const char *end)
{
    PCRE2_SIZE *ov;
    size_t n = (size_t)(end - p), ascii;
    int rc;

    if (m->how == BY_LITERAL && (ascii = jpt__ascii_prefix(p, n)) < n &&
        !jpt__utf8_valid(p + ascii, n - ascii)) {
        m->line.len = 0;
        if ((rc = jpt__buf_append_utf8(&m->line, p, n, true)) < 0 ||
            (rc = jpt__buf_reserve(&m->line, SLACK)) < 0)
            return rc;
        /* Defined bytes past the subject: pcre2's JIT reads ahead of its
         * end in whole words (harmless, but memcheck would call it a use of
         * uninitialised memory). */
        memset(m->line.data + m->line.len, 0, SLACK);
        p = m->line.data;
        end = m->line.data + m->line.len;
    }
    return run(m, p, end, &ov);
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

/* The outcome for the line [ls, le): a match or a line that could not be
 * judged is the caller's; 0 goes on. */
static int report(int rc, const char *ls, const char *le, const char **line, const char **lend)
{
    if (rc != 0) {
        *line = ls;
        *lend = le;
    }
    return rc;
}

/* Each line alone, as ripgrep runs pcre2. */
static int find_by_line(jpt__matcher *m, const char *p, const char *end, const char **line,
                        const char **lend)
{
    while (p < end) {
        const char *le = line_end(p, end);
        int rc = run_line(m, p, le);
        if (rc != 0)
            return report(rc, p, le, line, lend);
        p = le + 1;
    }
    return 0;
}

static bool pair_at(const jpt__matcher *m, const char *q)
{
    unsigned char a = (unsigned char)q[0], b = (unsigned char)q[m->i2 - m->i1];
    return (a == m->b1 || a == m->c1) && (b == m->b2 || b == m->c2);
}

/* The first q in [q, limit) where the pair is: its first byte at q, its
 * second i2 - i1 further (which is inside the text for every q before
 * `limit`). */
static const char *next_pair(const jpt__matcher *m, const char *q, const char *limit)
{
#if defined(__SSE2__)
    const __m128i b1 = _mm_set1_epi8((char)m->b1), c1 = _mm_set1_epi8((char)m->c1);
    const __m128i b2 = _mm_set1_epi8((char)m->b2), c2 = _mm_set1_epi8((char)m->c2);
    size_t d = m->i2 - m->i1;
    /* 16 at a time; the loads end at q + d + 16 <= limit + d. */
    for (; limit - q >= 16; q += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(q + d));
        __m128i hit = _mm_and_si128(_mm_or_si128(_mm_cmpeq_epi8(x, b1), _mm_cmpeq_epi8(x, c1)),
                                    _mm_or_si128(_mm_cmpeq_epi8(y, b2), _mm_cmpeq_epi8(y, c2)));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        if (mask != 0)
            return q + __builtin_ctz(mask);
    }
#endif
    for (; q < limit; q++)
        if (pair_at(m, q))
            return q;
    return NULL;
}

/* Candidate lines are those holding the pair (the bytes at i1 and i2 of
 * the literal) at the right distance. The line is that of the pair, not of
 * where the literal would start: folded, the characters before i1 may
 * take up other lengths (KELVIN SIGN is 3 bytes, k 1). Without folding
 * the literal itself is compared first. */
static int find_by_literal(jpt__matcher *m, const char *p, const char *end, const char **line,
                           const char **lend)
{
    const char *from = p; /* where the line being looked at may start */
    /* The bytes the candidate needs before q and from q on. */
    size_t before = m->fold ? 0 : m->i1;
    size_t after = m->fold ? m->i2 - m->i1 + 1 : m->literal_len - m->i1;

    while (p < end) {
        if ((size_t)(end - p) < before + after)
            return 0;
        const char *q = next_pair(m, p + before, end - after + 1);
        if (q == NULL)
            return 0;
        if (!m->fold && memcmp(q - m->i1, m->literal, m->literal_len) != 0) {
            p = q + 1 - before;
            continue;
        }
        const char *ls = line_start(from, q), *le = line_end(q, end);
        int rc = m->literal_only ? 1 : run_line(m, ls, le);
        if (rc != 0)
            return report(rc, ls, le, line, lend);
        p = from = le + 1;
    }
    return 0;
}

/* A line-local pattern over many lines at once, with ^ and $ at line
 * bounds: pcre2 skips ahead far faster than a call per line does. A match
 * that crosses a line end (\s meeting '\n') is judged again on its first
 * line alone, and the search goes on after that line if it fails there.
 * When the whole region needs more than the match limit (which a line
 * alone may not), the lines are judged one by one from there on. */
static int find_by_block(jpt__matcher *m, const char *p, const char *end, const char **line,
                         const char **lend)
{
    PCRE2_SIZE *ov;

    while (p < end) {
        int rc = run(m, p, end, &ov);
        if (rc == JPT_ERR_LIMIT) {
            m->how = BY_LINE;
            return find_by_line(m, p, end, line, lend);
        }
        if (rc <= 0)
            return rc;
        const char *s = p + ov[0];
        if (s == end && end[-1] == '\n')
            return 0; /* the empty line after the last '\n' is no line */
        const char *ls = line_start(p, s), *le = line_end(s, end);
        if (p + ov[1] <= le || (rc = run(m, ls, le, &ov)) != 0)
            return report(rc, ls, le, line, lend);
        p = le + 1;
    }
    return 0;
}

int jpt__matcher_find(jpt__matcher *m, const char *p, const char *end, const char **line,
                      const char **line_end)
{
    switch (m->how) {
    case BY_LITERAL:
        return find_by_literal(m, p, end, line, line_end);
    case BY_BLOCK:
        return find_by_block(m, p, end, line, line_end);
    default:
        return find_by_line(m, p, end, line, line_end);
    }
}
