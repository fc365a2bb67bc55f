/* Secret scrubbing (lib/common/scrub.h), as a pure unit: every encoded
 * form of a value, found whole and when split across reads at every
 * offset; truncated forms, redacted so that the bytes after a trigger
 * change nothing; overlapping, nested and repeating values; the shortest
 * value scrubbed; work linear in the input and memory bounded by the
 * longest form; allocation failure. The encodings are computed here
 * independently of the library (jansson for JSON, iconv for UTF-16,
 * hand-written percent-encoding, HTML escaping, hex and base64). */
#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "test-util.h"
#include "common/scrub.h"

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
static char *scrub_all_n(const jpt__scrub_set *set, const char *text, size_t n, size_t *len)
{
    jpt__buf out = JPT__BUF_INIT;

    assert_int_equal(jpt__scrub(set, text, n, &out, NULL), JPT_OK);
    *len = out.len;
    char *s = jpt__buf_take(&out);
    assert_non_null(s);
    return s;
}

static char *scrub_all(const jpt__scrub_set *set, const char *text, size_t n)
{
    size_t len;
    return scrub_all_n(set, text, n, &len);
}

static int to_buf(void *ud, const char *p, size_t n)
{
    return jpt__buf_append(ud, p, n);
}

/* The text fed in pieces cut at `cuts` (ascending offsets). */
static char *scrub_pieces_n(const jpt__scrub_set *set, const char *text, size_t n,
                            const size_t *cuts, size_t ncuts, size_t *len)
{
    jpt__buf out = JPT__BUF_INIT;
    jpt__scrubber s;
    size_t at = 0;

    jpt__scrubber_init(&s, set, to_buf, &out);
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        assert_int_equal(jpt__scrubber_feed(&s, text + at, end - at), JPT_OK);
        /* Never more held back than the longest form. */
        assert_true(set == NULL || s.carry.len <= jpt__scrub_set_max_len(set));
        at = end;
    }
    assert_int_equal(jpt__scrubber_finish(&s), JPT_OK);
    jpt__scrubber_free(&s);
    *len = out.len;
    char *r = jpt__buf_take(&out);
    assert_non_null(r);
    return r;
}

static char *scrub_pieces(const jpt__scrub_set *set, const char *text, size_t n,
                          const size_t *cuts, size_t ncuts)
{
    size_t len;
    return scrub_pieces_n(set, text, n, cuts, ncuts, &len);
}

/* p[0..n) scrubbed whole, then cut in two at every offset, then a byte at
 * a time: each gives `expected` (m bytes). */
static void expect_bytes(const jpt__scrub_set *set, const char *p, size_t n, const char *expected,
                         size_t m)
{
    size_t len;
    char *got = scrub_all_n(set, p, n, &len);
    if (len != m || memcmp(got, expected, m) != 0)
        fail_msg("scrubbing\n  %.*s\ngave\n  %.*s\nnot\n  %.*s", (int)n, p, (int)len, got,
                 (int)m, expected);
    jpt__free(got);
    for (size_t cut = 0; cut <= n; cut++) {
        got = scrub_pieces_n(set, p, n, &cut, 1, &len);
        if (len != m || memcmp(got, expected, m) != 0)
            fail_msg("cut at %zu:\n  %.*s\ngave\n  %.*s", cut, (int)n, p, (int)len, got);
        jpt__free(got);
    }
    size_t *every = malloc((n + 1) * sizeof(*every));
    for (size_t i = 0; i < n; i++)
        every[i] = i;
    got = scrub_pieces_n(set, p, n, every, n, &len);
    if (len != m || memcmp(got, expected, m) != 0)
        fail_msg("a byte at a time:\n  %.*s\ngave\n  %.*s", (int)n, p, (int)len, got);
    jpt__free(got);
    free(every);
}

static void expect(const jpt__scrub_set *set, const char *text, const char *expected)
{
    expect_bytes(set, text, strlen(text), expected, strlen(expected));
}

/* "before <form> after" becomes "before [REDACTED] after" (the form any
 * bytes, n of them). */
static void expect_form_bytes(const jpt__scrub_set *set, const char *form, size_t n)
{
    jpt__buf text = JPT__BUF_INIT;

    assert_int_equal(jpt__buf_puts(&text, "before "), JPT_OK);
    assert_int_equal(jpt__buf_append(&text, form, n), JPT_OK);
    assert_int_equal(jpt__buf_puts(&text, " after"), JPT_OK);
    expect_bytes(set, text.data, text.len, "before " MARK " after",
                 strlen("before " MARK " after"));
    jpt__buf_free(&text);
}

static void expect_form(const jpt__scrub_set *set, const char *form)
{
    expect_form_bytes(set, form, strlen(form));
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
    expect(set, "hunter2", "hunter2");
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

/* HTML escaping as Python's html.escape, markupsafe, and & < > alone. */
static char *html(const char *v, const char *quot, const char *apos)
{
    jpt__buf b = JPT__BUF_INIT;
    for (const char *p = v; *p; p++) {
        const char *e = *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;"
                      : *p == '"' ? quot : *p == '\'' ? apos : NULL;
        if (e != NULL)
            assert_int_equal(jpt__buf_puts(&b, e), JPT_OK);
        else
            assert_int_equal(jpt__buf_putc(&b, *p), JPT_OK);
    }
    char *s = jpt__buf_take(&b);
    assert_non_null(s);
    return s;
}

static void html_escaped_forms_are_replaced(void **state)
{
    (void)state;
    const char *v[] = {TRICKY};
    jpt__scrub_set *set = set_of(v, 1);
    const char *forms[][2] = {{"&quot;", "&#x27;"}, {"&#34;", "&#39;"}, {NULL, NULL}};
    for (size_t i = 0; i < 3; i++) {
        char *form = html(TRICKY, forms[i][0], forms[i][1]);
        assert_string_not_equal(form, TRICKY);
        expect_form(set, form);
        jpt__free(form);
    }
    jpt__scrub_set_free(set);
}

static void hex_forms_are_replaced_in_either_case(void **state)
{
    (void)state;
    const char *v[] = {TRICKY};
    jpt__scrub_set *set = set_of(v, 1);
    for (int upper = 0; upper < 2; upper++) {
        char form[256] = "";
        for (const unsigned char *p = (const unsigned char *)TRICKY; *p; p++)
            sprintf(form + strlen(form), upper ? "%02X" : "%02x", *p);
        expect_form(set, form);
    }
    jpt__scrub_set_free(set);
}

/* v converted by iconv to `code` (n bytes out). */
static char *converted(const char *v, const char *code, size_t *n)
{
    iconv_t cd = iconv_open(code, "UTF-8");
    assert_true(cd != (iconv_t)-1);
    size_t in_left = strlen(v), cap = 4 * in_left + 8, out_left = cap;
    char *out = malloc(cap), *in = (char *)v, *o = out;
    assert_true(iconv(cd, &in, &in_left, &o, &out_left) != (size_t)-1);
    iconv_close(cd);
    *n = cap - out_left;
    return out;
}

static void utf16_forms_are_replaced_in_either_byte_order(void **state)
{
    (void)state;
    const char *v[] = {TRICKY};
    jpt__scrub_set *set = set_of(v, 1);
    const char *codes[] = {"UTF-16LE", "UTF-16BE"};
    for (size_t i = 0; i < 2; i++) {
        size_t n;
        char *form = converted(TRICKY, codes[i], &n);
        assert_true(n > strlen(TRICKY));
        expect_form_bytes(set, form, n);
        free(form);
    }
    /* Bytes that are not UTF-8 have no UTF-16 form; the others still hold. */
    const char *binary[] = {"\xff\xfe-not-utf8-value"};
    jpt__scrub_set *b = set_of(binary, 1);
    expect(b, "x \xff\xfe-not-utf8-value y", "x " MARK " y");
    jpt__scrub_set_free(b);
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

/* ---- Truncated forms ------------------------------------------------------------- */

/* The longest trigger that begins the whole form `f`. */
static size_t trigger_of(const jpt__scrub_set *set, const jpt__scrub_pattern *f)
{
    size_t best = 0;
    for (size_t i = 0; i < jpt__scrub_set_patterns(set); i++) {
        const jpt__scrub_pattern *t = jpt__scrub_set_pattern(set, i);
        if (t->trigger && t->len <= f->len && t->len > best && memcmp(t->text, f->text, t->len) == 0)
            best = t->len;
    }
    return best;
}

/* "before <f cut to k bytes> after": "before [REDACTED]" and what is left
 * of " after", whatever the cut (base64 padding after a shorter whole
 * form, unpadded, tells nothing and may stay). */
static void expect_cut(const jpt__scrub_set *set, const jpt__scrub_pattern *f, size_t k)
{
    static const char after[] = " after";
    jpt__buf text = JPT__BUF_INIT;
    assert_int_equal(jpt__buf_puts(&text, "before "), JPT_OK);
    assert_int_equal(jpt__buf_append(&text, f->text, k), JPT_OK);
    assert_int_equal(jpt__buf_puts(&text, after), JPT_OK);
    char *got = scrub_all(set, text.data, text.len);
    static const char head[] = "before " MARK;
    const char *tail = got + sizeof(head) - 1;
    while (strncmp(got, head, sizeof(head) - 1) == 0 && *tail == '=')
        tail++;
    size_t rest = strlen(tail);
    if (strncmp(got, head, sizeof(head) - 1) != 0 || rest > strlen(after) ||
        strcmp(tail, after + strlen(after) - rest) != 0)
        fail_msg("form '%.*s' cut to %zu bytes gave '%s'", (int)f->len, f->text, k, got);
    jpt__free(got);
    jpt__buf_free(&text);
}

/* Issue 15 §5: "truncated (all but its last byte; the scrubber is then an
 * oracle for that byte)". Every form cut anywhere from its whole length
 * down to its trigger is redacted, and the text after the trigger does
 * not change the output unless it completes a whole form: the last byte
 * replaced by each of the 255 others, the output is the same. */
static void truncated_forms_are_redacted_and_tell_nothing(void **state)
{
    (void)state;
    const char *v[] = {TRICKY, "sk-live-0123456789abcdef", "12345678"};
    jpt__scrub_set *set = set_of(v, 3);
    size_t forms = 0;

    for (size_t i = 0; i < jpt__scrub_set_patterns(set); i++) {
        const jpt__scrub_pattern *f = jpt__scrub_set_pattern(set, i);
        if (!f->whole)
            continue;
        forms++;
        size_t t = trigger_of(set, f);
        assert_true(t > 0 && t <= f->len);
        for (size_t k = f->len - 1; k >= t && k > 0; k--)
            expect_cut(set, f, k);
        /* The oracle: the last byte, right or any other. Every wrong one
         * gives the same output, but for that byte itself where it shows. */
        char *first = NULL;
        size_t first_len = 0;
        int first_c = -1;
        for (int c = 0; c < 256; c++) {
            if ((unsigned char)f->text[f->len - 1] == c)
                continue;
            jpt__buf text = JPT__BUF_INIT;
            assert_int_equal(jpt__buf_append(&text, f->text, f->len - 1), JPT_OK);
            assert_int_equal(jpt__buf_putc(&text, (char)c), JPT_OK);
            assert_int_equal(jpt__buf_puts(&text, " and more text"), JPT_OK);
            jpt__buf out = JPT__BUF_INIT;
            assert_int_equal(jpt__scrub(set, text.data, text.len, &out, NULL), JPT_OK);
            jpt__buf_free(&text);
            if (first == NULL) {
                first_len = out.len;
                first = jpt__buf_take(&out);
                first_c = c;
                continue;
            }
            size_t differ = 0;
            bool same = out.len == first_len;
            for (size_t k = 0; same && k < out.len; k++)
                if (out.data[k] != first[k]) {
                    same = ++differ == 1 && (unsigned char)out.data[k] == c &&
                           (unsigned char)first[k] == first_c;
                }
            if (!same)
                fail_msg("form '%.*s': a last byte %d gives '%.*s', %d gives '%s'",
                         (int)f->len, f->text, c, (int)out.len, out.data, first_c, first);
            jpt__buf_free(&out);
        }
        jpt__free(first);
    }
    assert_true(forms >= 50);
    jpt__scrub_set_free(set);
}

/* The trigger is the value's first 8 bytes (7 for a value of 8): fewer
 * stay, and so do they elsewhere than at a form's start. */
static void less_than_the_trigger_stays(void **state)
{
    (void)state;
    const char *v[] = {"sk-live-0123456789abcdef"};
    jpt__scrub_set *set = set_of(v, 1);
    expect(set, "<sk-live->", "<" MARK);
    expect(set, "<sk-live-0>", "<" MARK);
    expect(set, "<sk-live>", "<sk-live>");
    expect(set, "<0123456789abcdef>", "<0123456789abcdef>");
    expect(set, "<k-live-0123456789abcdef>", "<k-live-0123456789abcdef>");
    jpt__scrub_set_free(set);
    const char *eight[] = {"12345678"};
    set = set_of(eight, 1);
    expect(set, "<1234567>", "<" MARK);
    expect(set, "<123456>", "<123456>");
    jpt__scrub_set_free(set);
}

static void values_shorter_than_eight_bytes_are_not_scrubbed(void **state)
{
    (void)state;
    const char *v[] = {"1234567", "true", "dev", ""};
    jpt__scrub_set *set = set_of(v, 4);
    assert_int_equal(jpt__scrub_set_patterns(set), 0);
    assert_true(jpt__scrub_set_empty(set));
    expect(set, "1234567 true dev", "1234567 true dev");
    jpt__scrub_set_free(set);
    assert_true(jpt__scrub_set_empty(NULL));
    expect(NULL, "no set at all", "no set at all");

    const char *eight[] = {"12345678"};
    set = set_of(eight, 1);
    expect(set, "x12345678y 123456", "x" MARK "y 123456");
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
    expect_bytes(set, text, sizeof(text) - 1, "\x00\x00" MARK "\xff", 2 + strlen(MARK) + 1);
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
    expect(c, "<aaaaaa>", "<aaaaaa>");
    jpt__scrub_set_free(c);
    jpt__scrub_set_free(set);
}

/* A trigger that is not completed redacts as far as the longest form it
 * begins would reach, whatever is there: a shorter value inside goes with
 * it, and so does what follows. */
static void a_long_form_started_but_not_finished_covers_what_follows(void **state)
{
    (void)state;
    const char *v[] = {"XXXXXXXXBBBBBBBBC", "BBBBBBBB"};
    jpt__scrub_set *set = set_of(v, 2);
    expect(set, "XXXXXXXXBBBBBBBBD-tail", MARK "-tail");
    expect(set, "XXXXXXXXBBBBBBBBC-tail", MARK "-tail");
    expect(set, "XXXXXXXXBBBBBBBB", MARK);
    expect(set, "XXXXXXX BBBBBBBB.", "XXXXXXX " MARK ".");
    jpt__scrub_set_free(set);
}

/* A value whose start comes back inside it: the whole value found, the
 * triggers inside it add nothing, and the text after it stays. */
static void a_value_that_repeats_itself_is_one_redaction(void **state)
{
    (void)state;
    const char *v[] = {"abababababab"};
    jpt__scrub_set *set = set_of(v, 1);
    expect(set, "<abababababab> then text", "<" MARK "> then text");
    expect(set, "<abababababababab>", "<" MARK ">");
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

static int size_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* What scrub.h promises, the slow way: every pattern compared at every
 * offset; at each place with a trigger, the longest whole form there, or
 * as far as its triggers reach (to the end at most); a place whose
 * triggers lie inside a whole form decided before adds nothing; what
 * overlaps merges into one mark. */
static char *naive(const jpt__scrub_set *set, const char *text, size_t n)
{
    typedef struct place {
        size_t trig_end, span_end, whole_end;
    } place;
    place *at = calloc(n + 1, sizeof(*at));
    jpt__buf out = JPT__BUF_INIT;
    const jpt__scrub_pattern *pt;

    for (size_t i = 0; (pt = jpt__scrub_set_pattern(set, i)) != NULL; i++)
        for (size_t k = 0; k + pt->len <= n; k++)
            if (memcmp(text + k, pt->text, pt->len) == 0) {
                size_t end = k + pt->len, reach = k + (pt->trigger ? pt->span : pt->len);
                at[k].trig_end = at[k].trig_end > end ? at[k].trig_end : end;
                at[k].span_end = at[k].span_end > reach ? at[k].span_end : reach;
                if (pt->whole && at[k].whole_end < end)
                    at[k].whole_end = end;
            }
    /* Places in order: their redactions start in order, so a run grows
     * while the next one starts inside it. */
    size_t covered = 0, emitted = 0, run_s = 0, run_e = 0;
    bool open = false;
    for (size_t k = 0; k < n; k++) {
        if (at[k].trig_end == 0 || (at[k].whole_end == 0 && at[k].trig_end <= covered))
            continue;
        if (at[k].whole_end > covered)
            covered = at[k].whole_end;
        size_t e = at[k].whole_end != 0 ? at[k].whole_end
                   : at[k].span_end < n ? at[k].span_end
                                        : n;
        if (open && k < run_e) {
            run_e = e > run_e ? e : run_e;
            continue;
        }
        if (open) {
            assert_int_equal(jpt__buf_append(&out, text + emitted, run_s - emitted), JPT_OK);
            assert_int_equal(jpt__buf_puts(&out, MARK), JPT_OK);
            emitted = run_e;
        }
        run_s = k;
        run_e = e;
        open = true;
    }
    if (open) {
        assert_int_equal(jpt__buf_append(&out, text + emitted, run_s - emitted), JPT_OK);
        assert_int_equal(jpt__buf_puts(&out, MARK), JPT_OK);
        emitted = run_e;
    }
    assert_int_equal(jpt__buf_append(&out, text + emitted, n - emitted), JPT_OK);
    free(at);
    char *r = jpt__buf_take(&out);
    assert_non_null(r);
    return r;
}

/* Random values over a few characters, texts made of pieces of their
 * patterns (whole, cut, overlapping) and noise, fed in random pieces:
 * the scrubber says exactly what the reference says. */
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
                const jpt__scrub_pattern *pt = jpt__scrub_set_pattern(set, RAND() % npat);
                len = pt->len;
                size_t from = RAND() % 3 == 0 ? RAND() % len : 0;
                size_t to = RAND() % 3 == 0 ? from + RAND() % (len - from + 1) : len;
                memcpy(text + n, pt->text + from, to - from);
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
 * match, or that hold a trigger at every byte. The automaton's work
 * (transitions, failure links, patterns ended) stays within three steps
 * per byte, what it holds back within the longest form, and the runs it
 * keeps within a handful, whatever the input's size. */
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
        if (s.steps > 3 * (uint64_t)n)
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

/* One run under tu_sweep: the whole result, or JPT_ERR_NOMEM. */
static int scrub_op(void *ctx)
{
    char *got = NULL;
    int rc = build_and_scrub(&got);

    if (rc == JPT_OK)
        assert_string_equal(got, ctx);
    free(got);
    return rc;
}

static void every_allocation_failure_is_reported_without_a_leak(void **state)
{
    char *expected = NULL;

    (void)state;
    assert_int_equal(build_and_scrub(&expected), JPT_OK);
    /* The second value's trigger, "p@ss/w0r": redacted to the end. */
    assert_string_equal(expected, "x " MARK " y " MARK);
    tu_sweep("the scrubber", scrub_op, expected);
    free(expected);
}

int main(void)
{
    tu_install_counting_allocator();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_value_itself_is_replaced),
        cmocka_unit_test(json_escaped_forms_are_replaced),
        cmocka_unit_test(url_encoded_forms_are_replaced),
        cmocka_unit_test(html_escaped_forms_are_replaced),
        cmocka_unit_test(hex_forms_are_replaced_in_either_case),
        cmocka_unit_test(utf16_forms_are_replaced_in_either_byte_order),
        cmocka_unit_test(base64_forms_are_replaced_at_every_alignment),
        cmocka_unit_test(truncated_forms_are_redacted_and_tell_nothing),
        cmocka_unit_test(less_than_the_trigger_stays),
        cmocka_unit_test(values_shorter_than_eight_bytes_are_not_scrubbed),
        cmocka_unit_test(binary_values_and_output_are_handled),
        cmocka_unit_test(the_longest_value_wins_over_one_inside_it),
        cmocka_unit_test(overlapping_values_leave_no_byte_of_either),
        cmocka_unit_test(a_long_form_started_but_not_finished_covers_what_follows),
        cmocka_unit_test(a_value_that_repeats_itself_is_one_redaction),
        cmocka_unit_test(a_value_split_across_reads_is_found_at_every_offset),
        cmocka_unit_test(output_without_secrets_comes_through_unchanged),
        cmocka_unit_test(random_texts_match_a_naive_reference),
        cmocka_unit_test(work_is_linear_and_memory_bounded),
        cmocka_unit_test(every_allocation_failure_is_reported_without_a_leak),
    };
    return TU_RUN(tests);
}
