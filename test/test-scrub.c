/* Secret scrubbing (lib/vfs/scrub.h), as a pure unit: every encoded form of
 * a value, found whole and when split across reads at every offset;
 * overlapping and nested values; the shortest value scrubbed; work linear
 * in the input and memory bounded by the longest form; allocation failure.
 * The encodings are computed here independently of the library (jansson
 * for JSON, hand-written percent-encoding and base64). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "test-util.h"
#include "vfs/scrub.h"

#define MARK JPT__SCRUB_MARK

/* ---- Helpers ---------------------------------------------------------------------- */

static jpt__scrub_set *set_of(const char *const *values, size_t n)
{
    size_t lens[16];
    jpt__scrub_set *set = NULL;

    assert_true(n <= 16);
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(values[i]);
    assert_int_equal(jpt__scrub_set_new(values, lens, n, &set), JPT_OK);
    return set;
}

/* The whole text scrubbed at once (NUL-terminated, to free). */
static char *scrub_all(const jpt__scrub_set *set, const char *text, size_t n)
{
    jpt__buf out = JPT__BUF_INIT;

    assert_int_equal(jpt__scrub(set, text, n, &out), JPT_OK);
    char *s = jpt__buf_take(&out);
    assert_non_null(s);
    return s;
}

static int to_buf(void *ud, const char *p, size_t n)
{
    return jpt__buf_append(ud, p, n);
}

/* The text fed in pieces cut at `cuts` (ascending offsets). */
static char *scrub_pieces(const jpt__scrub_set *set, const char *text, size_t n,
                          const size_t *cuts, size_t ncuts)
{
    jpt__buf out = JPT__BUF_INIT;
    jpt__scrubber s;
    size_t at = 0;

    jpt__scrubber_init(&s, set, to_buf, &out);
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        assert_int_equal(jpt__scrubber_feed(&s, text + at, end - at), JPT_OK);
        /* Never more held back than the longest form. */
        assert_true(s.carry.len <= jpt__scrub_set_max_len(set));
        at = end;
    }
    assert_int_equal(jpt__scrubber_finish(&s), JPT_OK);
    jpt__scrubber_free(&s);
    char *r = jpt__buf_take(&out);
    assert_non_null(r);
    return r;
}

static void expect(const jpt__scrub_set *set, const char *text, const char *expected)
{
    char *got = scrub_all(set, text, strlen(text));
    if (strcmp(got, expected) != 0)
        fail_msg("scrubbing\n  %s\ngave\n  %s\nnot\n  %s", text, got, expected);
    jpt__free(got);
}

static char *cat3(const char *a, const char *b, const char *c)
{
    char *s = NULL;
    assert_true(asprintf(&s, "%s%s%s", a, b, c) > 0);
    return s;
}

/* "before<form>after" becomes "before[REDACTED]after". */
static void expect_form(const jpt__scrub_set *set, const char *form)
{
    char *text = cat3("before ", form, " after");
    char *want = cat3("before ", MARK, " after");
    expect(set, text, want);
    free(text);
    free(want);
}

/* JSON string content (without quotes) as jansson writes it. */
static char *jansson_form(const char *v, size_t flags)
{
    json_t *s = json_string(v);
    char *d = json_dumps(s, JSON_ENCODE_ANY | flags);
    json_decref(s);
    assert_non_null(d);
    size_t n = strlen(d);
    memmove(d, d + 1, n - 2);
    d[n - 2] = '\0';
    return d;
}

/* RFC 3986 percent-encoding, everything but unreserved; `keep` also kept. */
static char *percent(const char *v, const char *keep, const char *hex, bool plus)
{
    char *out = malloc(strlen(v) * 3 + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p) || (keep != NULL && strchr(keep, *p)))
            *o++ = (char)*p;
        else if (*p == ' ' && plus)
            *o++ = '+';
        else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

static char *base64(const unsigned char *p, size_t n, const char *alphabet, bool pad)
{
    char *out = malloc(n * 2 + 8), *o = out;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *o++ = alphabet[(v >> 18) & 63];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = i + 1 < n ? alphabet[(v >> 6) & 63] : pad ? '=' : 0;
        *o++ = i + 2 < n ? alphabet[v & 63] : pad ? '=' : 0;
    }
    *o = '\0';
    return out; /* unpadded: the zeros end the string early */
}

static const char STD[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* A value with every kind of byte the encodings treat apart. */
static const char TRICKY[] = "p@ss/w0rd \"q\"\\<&>\n\t\x01 caf\xC3\xA9 \xF0\x9F\x94\x91!*()'";

/* ---- Forms ------------------------------------------------------------------------ */

static void the_value_itself_is_replaced(void **state)
{
    (void)state;
    const char *v[] = {"hunter2-secret"};
    jpt__scrub_set *set = set_of(v, 1);
    expect(set, "token=hunter2-secret; again hunter2-secret.",
           "token=" MARK "; again " MARK ".");
    expect(set, "hunter2-secret", MARK);
    expect(set, "hunter2-secre", "hunter2-secre");
    expect(set, "", "");
    jpt__scrub_set_free(set);
}

static void json_escaped_forms_are_replaced(void **state)
{
    (void)state;
    const char *v[] = {TRICKY};
    jpt__scrub_set *set = set_of(v, 1);
    static const size_t flags[] = {0, JSON_ENSURE_ASCII, JSON_ESCAPE_SLASH,
                                   JSON_ENSURE_ASCII | JSON_ESCAPE_SLASH};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        char *form = jansson_form(TRICKY, flags[i]);
        assert_string_not_equal(form, TRICKY);
        expect_form(set, form);
        free(form);
    }
    /* Python's json.dumps (lower-case \u, ensure_ascii) and Go's
     * encoding/json (<, >, & escaped), written out by hand. */
    expect_form(set, "p@ss/w0rd \\\"q\\\"\\\\<&>\\n\\t\\u0001 caf\\u00e9 \\ud83d\\udd11!*()'");
    expect_form(set, "p@ss/w0rd \\\"q\\\"\\\\\\u003c\\u0026\\u003e\\n\\t\\u0001 caf\xC3\xA9 "
                     "\xF0\x9F\x94\x91!*()'");
    jpt__scrub_set_free(set);
}

static void url_encoded_forms_are_replaced(void **state)
{
    (void)state;
    const char *v[] = {TRICKY};
    jpt__scrub_set *set = set_of(v, 1);
    const char *hexes[] = {"0123456789ABCDEF", "0123456789abcdef"};
    const char *keeps[] = {NULL, "/", "!'()*"};
    for (size_t h = 0; h < 2; h++)
        for (size_t k = 0; k < 3; k++)
            for (int plus = 0; plus < 2; plus++) {
                char *form = percent(TRICKY, keeps[k], hexes[h], plus);
                expect_form(set, form);
                free(form);
            }
    jpt__scrub_set_free(set);
}

static void base64_forms_are_replaced_at_every_alignment(void **state)
{
    (void)state;
    const char *v[] = {TRICKY};
    jpt__scrub_set *set = set_of(v, 1);
    size_t n = strlen(TRICKY);
    const char *alphabets[] = {STD, URL};

    for (size_t a = 0; a < 2; a++) {
        for (int pad = 0; pad < 2; pad++) {
            char *form = base64((const unsigned char *)TRICKY, n, alphabets[a], pad);
            expect_form(set, form);
            free(form);
        }
        /* Inside longer data, after k bytes and before two more: the
         * characters the value alone decides are replaced, nothing else. */
        for (size_t k = 0; k < 6; k++) {
            unsigned char data[256];
            memset(data, 'x', k);
            memcpy(data + k, TRICKY, n);
            memcpy(data + k + n, "yz", 2);
            char *enc = base64(data, k + n + 2, alphabets[a], true);
            size_t first = (8 * k + 5) / 6, end = 8 * (k + n) / 6;
            char want[600];
            snprintf(want, sizeof(want), "<%.*s%s%s>", (int)first, enc, MARK, enc + end);
            char text[600];
            snprintf(text, sizeof(text), "<%s>", enc);
            expect(set, text, want);
            free(enc);
        }
    }
    jpt__scrub_set_free(set);
}

static void values_shorter_than_eight_bytes_are_not_scrubbed(void **state)
{
    (void)state;
    const char *v[] = {"1234567", "true", "dev", ""};
    jpt__scrub_set *set = set_of(v, 4);
    assert_int_equal(jpt__scrub_set_patterns(set), 0);
    expect(set, "1234567 true dev", "1234567 true dev");
    jpt__scrub_set_free(set);

    const char *eight[] = {"12345678"};
    set = set_of(eight, 1);
    expect(set, "x12345678y 1234567", "x" MARK "y 1234567");
    jpt__scrub_set_free(set);
}

static void binary_values_and_output_are_handled(void **state)
{
    (void)state;
    static const char value[] = "\x00\xff\x01secret\x00\x80";
    const char *v[] = {value};
    size_t lens[] = {sizeof(value) - 1};
    jpt__scrub_set *set = NULL;
    assert_int_equal(jpt__scrub_set_new(v, lens, 1, &set), JPT_OK);
    static const char text[] = "\x00\x00\x00\xff\x01secret\x00\x80\xff";
    char *got = scrub_all(set, text, sizeof(text) - 1);
    assert_memory_equal(got, "\x00\x00" MARK "\xff", 2 + strlen(MARK) + 1);
    jpt__free(got);
    jpt__scrub_set_free(set);
}

/* ---- Overlaps ---------------------------------------------------------------------- */

static void the_longest_value_wins_over_one_inside_it(void **state)
{
    (void)state;
    const char *v[] = {"password1234", "password1234567890"};
    jpt__scrub_set *set = set_of(v, 2);
    expect(set, "a password1234567890 b password1234 c", "a " MARK " b " MARK " c");
    jpt__scrub_set_free(set);
    /* The same, listed the other way round. */
    const char *w[] = {"password1234567890", "password1234"};
    set = set_of(w, 2);
    expect(set, "a password1234567890 b", "a " MARK " b");
    jpt__scrub_set_free(set);
}

static void overlapping_values_leave_no_byte_of_either(void **state)
{
    (void)state;
    const char *v[] = {"abcdefgh12", "12345678xy"};
    jpt__scrub_set *set = set_of(v, 2);
    expect(set, "<abcdefgh12345678xy>", "<" MARK ">");
    /* Touching is not overlapping: two marks. */
    expect(set, "<abcdefgh1212345678xy>", "<" MARK MARK ">");
    /* A chain of overlaps is one run. */
    const char *chain[] = {"aaaaaaaa"};
    jpt__scrub_set *c = set_of(chain, 1);
    expect(c, "<aaaaaaaaaaaaaaaaaaaaaaa>", "<" MARK ">");
    expect(c, "<aaaaaaa>", "<aaaaaaa>");
    jpt__scrub_set_free(c);
    jpt__scrub_set_free(set);
}

static void a_long_form_started_but_not_finished_leaves_a_short_one_covered(void **state)
{
    (void)state;
    /* "XXXXXXXXAB…" begins a long value; inside it "BBBBBBBB" is another.
     * The long one never completes: the short one must still go. */
    const char *v[] = {"XXXXXXXXBBBBBBBBC", "BBBBBBBB"};
    jpt__scrub_set *set = set_of(v, 2);
    expect(set, "XXXXXXXXBBBBBBBBD", "XXXXXXXX" MARK "D");
    expect(set, "XXXXXXXXBBBBBBBBC", MARK);
    expect(set, "XXXXXXXXBBBBBBBB", "XXXXXXXX" MARK);
    jpt__scrub_set_free(set);
}

/* ---- Streaming ----------------------------------------------------------------------- */

/* A text holding every form of two values, fed in two pieces cut at every
 * offset, then in three at every pair of offsets near the forms, then a
 * byte at a time: always the whole text's result. */
static void a_value_split_across_reads_is_found_at_every_offset(void **state)
{
    (void)state;
    const char *v[] = {TRICKY, "sk-live-0123456789abcdef"};
    jpt__scrub_set *set = set_of(v, 2);
    jpt__buf text = JPT__BUF_INIT;
    char *form;

    assert_int_equal(jpt__buf_puts(&text, "start sk-live-0123456789abcdef | "), JPT_OK);
    assert_int_equal(jpt__buf_puts(&text, TRICKY), JPT_OK);
    form = jansson_form(TRICKY, JSON_ENSURE_ASCII);
    assert_int_equal(jpt__buf_printf(&text, " | %s | ", form), JPT_OK);
    free(form);
    form = percent(TRICKY, NULL, "0123456789ABCDEF", false);
    assert_int_equal(jpt__buf_printf(&text, "%s | ", form), JPT_OK);
    free(form);
    form = base64((const unsigned char *)TRICKY, strlen(TRICKY), STD, true);
    assert_int_equal(jpt__buf_printf(&text, "%s end", form), JPT_OK);
    free(form);

    char *whole = scrub_all(set, text.data, text.len);
    assert_null(strstr(whole, "sk-live"));
    assert_null(strstr(whole, "p@ss"));
    /* Five occurrences, five marks. */
    size_t marks = 0;
    for (const char *p = whole; (p = strstr(p, MARK)) != NULL; p += strlen(MARK))
        marks++;
    assert_int_equal(marks, 5);

    for (size_t cut = 0; cut <= text.len; cut++) {
        char *got = scrub_pieces(set, text.data, text.len, &cut, 1);
        if (strcmp(got, whole) != 0)
            fail_msg("cut at %zu:\n  %s\nnot\n  %s", cut, got, whole);
        jpt__free(got);
    }
    for (size_t a = 0; a < 60; a++)
        for (size_t b = a; b < 60; b++) {
            size_t cuts[2] = {a, b};
            char *got = scrub_pieces(set, text.data, text.len, cuts, 2);
            if (strcmp(got, whole) != 0)
                fail_msg("cut at %zu and %zu:\n  %s\nnot\n  %s", a, b, got, whole);
            jpt__free(got);
        }
    size_t *every = malloc(text.len * sizeof(*every));
    for (size_t i = 0; i < text.len; i++)
        every[i] = i;
    char *bytewise = scrub_pieces(set, text.data, text.len, every, text.len);
    assert_string_equal(bytewise, whole);
    jpt__free(bytewise);
    free(every);
    jpt__free(whole);
    jpt__buf_free(&text);
    jpt__scrub_set_free(set);
}

static void output_without_secrets_comes_through_unchanged(void **state)
{
    (void)state;
    const char *v[] = {"correct horse battery staple"};
    jpt__scrub_set *set = set_of(v, 1);
    size_t n = 1 << 20;
    char *text = malloc(n);
    unsigned seed = 12345;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        text[i] = (char)(seed >> 16);
    }
    char *got = scrub_all(set, text, n);
    assert_memory_equal(got, text, n);
    jpt__free(got);
    free(text);
    jpt__scrub_set_free(set);
}

/* ---- Against a naive reference ------------------------------------------------------ */

typedef struct span {
    size_t s, e;
} span;

static int size_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

/* What scrub.h promises, the slow way: every occurrence of every form
 * found by comparing at every offset; occurrences that share a byte merge
 * into one mark. */
static char *naive(const jpt__scrub_set *set, const char *text, size_t n)
{
    span *spans = NULL;
    size_t count = 0, cap = 0, len;
    const char *form;
    jpt__buf out = JPT__BUF_INIT;

    for (size_t i = 0; (form = jpt__scrub_set_pattern(set, i, &len)) != NULL; i++)
        for (size_t at = 0; at + len <= n; at++)
            if (memcmp(text + at, form, len) == 0) {
                if (count == cap)
                    spans = realloc(spans, (cap = cap ? cap * 2 : 16) * sizeof(*spans));
                spans[count].s = at;
                spans[count++].e = at + len;
            }
    if (count > 0)
        qsort(spans, count, sizeof(*spans), span_cmp);
    size_t at = 0;
    for (size_t i = 0; i < count;) {
        span run = spans[i++];
        while (i < count && spans[i].s < run.e) {
            if (spans[i].e > run.e)
                run.e = spans[i].e;
            i++;
        }
        assert_int_equal(jpt__buf_append(&out, text + at, run.s - at), JPT_OK);
        assert_int_equal(jpt__buf_puts(&out, MARK), JPT_OK);
        at = run.e;
    }
    assert_int_equal(jpt__buf_append(&out, text + at, n - at), JPT_OK);
    free(spans);
    char *r = jpt__buf_take(&out);
    assert_non_null(r);
    return r;
}

/* Random values over a few characters, texts made of pieces of their
 * forms (whole, cut, overlapping) and noise, fed in random pieces: the
 * scrubber says exactly what the reference says. */
static void random_texts_match_a_naive_reference(void **state)
{
    (void)state;
    unsigned seed = 20240601;
#define RAND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    static const char alphabet[] = "ab/+ %=";
    for (int round = 0; round < 3000; round++) {
        char values[3][16];
        const char *v[3];
        size_t nv = 1 + RAND() % 3;
        for (size_t i = 0; i < nv; i++) {
            size_t len = 6 + RAND() % 8;
            for (size_t k = 0; k < len; k++)
                values[i][k] = alphabet[RAND() % 4];
            values[i][len] = '\0';
            v[i] = values[i];
        }
        jpt__scrub_set *set = set_of(v, nv);
        size_t npat = jpt__scrub_set_patterns(set);
        char text[512];
        size_t n = 0;
        while (n < 400) {
            size_t len;
            if (npat > 0 && RAND() % 2 == 0) {
                const char *form = jpt__scrub_set_pattern(set, RAND() % npat, &len);
                size_t from = RAND() % 3 == 0 ? RAND() % len : 0;
                size_t to = RAND() % 3 == 0 ? from + RAND() % (len - from + 1) : len;
                memcpy(text + n, form + from, to - from);
                n += to - from;
            } else {
                len = RAND() % 4;
                for (size_t k = 0; k < len; k++)
                    text[n++] = alphabet[RAND() % (sizeof(alphabet) - 1)];
            }
        }
        char *want = naive(set, text, n);
        size_t cuts[4];
        for (size_t k = 0; k < 4; k++)
            cuts[k] = RAND() % (n + 1);
        qsort(cuts, 4, sizeof(cuts[0]), size_cmp);
        char *got = scrub_pieces(set, text, n, cuts, 4);
        if (strcmp(got, want) != 0)
            fail_msg("round %d, values '%s' '%s' '%s':\n text %.*s\n got  %s\n want %s", round,
                     v[0], nv > 1 ? v[1] : "", nv > 2 ? v[2] : "", (int)n, text, got, want);
        jpt__free(got);
        jpt__free(want);
        jpt__scrub_set_free(set);
    }
#undef RAND
}

/* ---- Cost ------------------------------------------------------------------------------ */

/* Inputs built to make a naive matcher quadratic: long runs that almost
 * match. The automaton's work (transitions plus failure links) stays
 * within two steps per byte, and what it holds back within the longest
 * form, whatever the input's size. */
static void work_is_linear_and_memory_bounded(void **state)
{
    (void)state;
    char long_value[4097];
    memset(long_value, 'a', 4096);
    long_value[4095] = 'b';
    long_value[4096] = '\0';
    const char *v[] = {long_value, "aaaaaaaaaaaaaaab", "abababababababababac", "bbbbbbbb"};
    jpt__scrub_set *set = set_of(v, 4);
    size_t n = 16u << 20;
    char *text = malloc(n);
    /* Near misses; a match every 16 bytes; one endless overlapping run. */
    const char *fills[] = {"a", "ab", "aaaaaaaaaaaaaaaaaaaaac", "aaaaaaaaaaaaaaab", "b"};

    for (size_t f = 0; f < sizeof(fills) / sizeof(fills[0]); f++) {
        size_t k = strlen(fills[f]);
        for (size_t i = 0; i < n; i++)
            text[i] = fills[f][i % k];
        jpt__buf out = JPT__BUF_INIT;
        jpt__scrubber s;
        jpt__scrubber_init(&s, set, to_buf, &out);
        for (size_t at = 0; at < n; at += 65536) {
            assert_int_equal(jpt__scrubber_feed(&s, text + at, 65536), JPT_OK);
            assert_true(s.carry.len <= jpt__scrub_set_max_len(set));
            out.len = 0; /* the output is not what is measured */
        }
        assert_int_equal(jpt__scrubber_finish(&s), JPT_OK);
        if (s.steps > 2 * (uint64_t)n)
            fail_msg("fill '%s': %llu steps for %zu bytes", fills[f],
                     (unsigned long long)s.steps, n);
        assert_true(s.cap <= 16); /* runs waiting: a handful at most */
        jpt__scrubber_free(&s);
        jpt__buf_free(&out);
    }
    free(text);
    jpt__scrub_set_free(set);
}

/* ---- Allocation failure ---------------------------------------------------------------- */

static int build_and_scrub(char **result)
{
    const char *v[] = {TRICKY, "sk-live-0123456789abcdef"};
    size_t lens[] = {strlen(TRICKY), strlen(v[1])};
    jpt__scrub_set *set = NULL;
    jpt__buf out = JPT__BUF_INIT;
    static const char text[] = "x sk-live-0123456789abcdef y p@ss/w0rd z";

    int rc = jpt__scrub_set_new(v, lens, 2, &set);
    if (rc < 0)
        return rc;
    jpt__scrubber s;
    jpt__scrubber_init(&s, set, to_buf, &out);
    for (size_t i = 0; rc == JPT_OK && i < sizeof(text) - 1; i += 5)
        rc = jpt__scrubber_feed(&s, text + i, i + 5 < sizeof(text) - 1 ? 5 : sizeof(text) - 1 - i);
    if (rc == JPT_OK)
        rc = jpt__scrubber_finish(&s);
    /* A failed stream keeps failing. */
    if (rc < 0)
        assert_int_equal(jpt__scrubber_feed(&s, "x", 1), rc);
    jpt__scrubber_free(&s);
    jpt__scrub_set_free(set);
    if (rc == JPT_OK) {
        *result = strdup(out.data);
    }
    jpt__buf_free(&out);
    return rc;
}

static void every_allocation_failure_is_reported_without_a_leak(void **state)
{
    char *expected = NULL, *got = NULL;

    (void)state;
    assert_int_equal(build_and_scrub(&expected), JPT_OK);
    assert_string_equal(expected, "x " MARK " y p@ss/w0rd z");
    for (long n = 1;; n++) {
        long live = tu_live_blocks();
        tu_fail_at(n);
        int rc = build_and_scrub(&got);
        tu_fail_at(0);
        if (tu_live_blocks() != live)
            fail_msg("%ld block(s) leaked with allocation %ld failing", tu_live_blocks() - live,
                     n);
        if (rc == JPT_OK) {
            assert_string_equal(got, expected);
            free(got);
            break;
        }
        if (rc != JPT_ERR_NOMEM)
            fail_msg("allocation %ld failing gave %s", n, jpt_status_name(rc));
        assert_true(n < 100000);
    }
    free(expected);
}

int main(void)
{
    tu_install_counting_allocator();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_value_itself_is_replaced),
        cmocka_unit_test(json_escaped_forms_are_replaced),
        cmocka_unit_test(url_encoded_forms_are_replaced),
        cmocka_unit_test(base64_forms_are_replaced_at_every_alignment),
        cmocka_unit_test(values_shorter_than_eight_bytes_are_not_scrubbed),
        cmocka_unit_test(binary_values_and_output_are_handled),
        cmocka_unit_test(the_longest_value_wins_over_one_inside_it),
        cmocka_unit_test(overlapping_values_leave_no_byte_of_either),
        cmocka_unit_test(a_long_form_started_but_not_finished_leaves_a_short_one_covered),
        cmocka_unit_test(a_value_split_across_reads_is_found_at_every_offset),
        cmocka_unit_test(output_without_secrets_comes_through_unchanged),
        cmocka_unit_test(random_texts_match_a_naive_reference),
        cmocka_unit_test(work_is_linear_and_memory_bounded),
        cmocka_unit_test(every_allocation_failure_is_reported_without_a_leak),
    };
    return TU_RUN(tests);
}
