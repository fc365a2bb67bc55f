/* The JSON codec of the VFS protocol: one strict validating pass over a
 * message, member lookup over the validated text, string escape and unescape
 * at memory speed, base64.
 *
 * jansson builds a tree of every value: a 10 MB file in fs.write or fs.read
 * is copied into a json_t, scanned, unescaped and copied again, at about the
 * speed of the MCP filesystem server. Issue 9 asks for four times that, so
 * large strings never become jansson values here: the validator looks at
 * eight bytes at a time, skipping a value is memchr(), and decoding a string
 * works in place. String literals are written by the common room
 * (common/utf8.c), whose byte tricks (common/text.h) this validator
 * shares. */
#include <string.h>

#include "common/text.h"
#include "vfs-proto.h"

/* ---- UTF-8 ----------------------------------------------------------------- */

static size_t utf8_encode(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ---- Validation --------------------------------------------------------------- */

typedef struct scanner {
    const unsigned char *p;
    size_t n, i;
    jpt__json_error *err;
} scanner;

static bool fail(scanner *s, size_t at, const char *what)
{
    s->err->offset = at;
    s->err->what = what;
    return false;
}

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_ws(scanner *s)
{
    while (s->i < s->n && is_ws(s->p[s->i]))
        s->i++;
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The code unit of "\uXXXX" at p[0..n), or -1. */
static long hex4(const unsigned char *p, size_t n)
{
    long v = 0;

    if (n < 6 || p[0] != '\\' || p[1] != 'u')
        return -1;
    for (int k = 2; k < 6; k++) {
        int h = hex_value(p[k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Whether `\c` is an escape of one letter. A switch, not strchr(): source
 * text has an escape every few dozen bytes. */
static bool is_letter_escape(unsigned char c)
{
    switch (c) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
        return true;
    default:
        return false;
    }
}

/* The escape at s->p[*i] ('\\'): advances past it. A \u escape of a high
 * surrogate must be followed by one of a low surrogate (jansson refuses a
 * lone surrogate too; it has no UTF-8 form). */
static bool scan_escape(scanner *s, size_t *i)
{
    const unsigned char *p = s->p + *i;
    size_t left = s->n - *i;

    if (left < 2)
        return fail(s, *i, "unterminated string");
    if (is_letter_escape(p[1])) {
        *i += 2;
        return true;
    }
    if (p[1] != 'u')
        return fail(s, *i, "invalid escape in a string");
    long unit = hex4(p, left);
    if (unit < 0)
        return fail(s, *i, "invalid \\u escape in a string");
    if (unit >= 0xDC00 && unit <= 0xDFFF)
        return fail(s, *i, "lone low surrogate in a string");
    if (unit >= 0xD800 && unit <= 0xDBFF) {
        long low = hex4(p + 6, left - 6);
        if (low < 0xDC00 || low > 0xDFFF)
            return fail(s, *i, "high surrogate without its low surrogate in a string");
        *i += 12;
        return true;
    }
    *i += 6;
    return true;
}

static bool scan_string(scanner *s)
{
    const unsigned char *p = s->p;
    size_t n = s->n, i = s->i + 1;

    for (;;) {
        i = jpt__skip_plain(p, n, i, true);
        if (i >= n)
            return fail(s, s->i, "unterminated string");
        unsigned char c = p[i];
        if (c == '"') {
            s->i = i + 1;
            return true;
        }
        if (c == '\\') {
            if (!scan_escape(s, &i))
                return false;
        } else if (c < 0x20) {
            return fail(s, i, c == 0 ? "NUL byte in a string"
                                     : "raw control character in a string");
        } else if (c >= 0x80) {
            if (!jpt__utf8_run(p, n, &i))
                return fail(s, i, "invalid UTF-8 in a string");
        } else
            i++;
    }
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static bool scan_digits(scanner *s)
{
    size_t start = s->i;
    while (s->i < s->n && is_digit(s->p[s->i]))
        s->i++;
    return s->i > start || fail(s, s->i, "invalid number");
}

static bool scan_number(scanner *s)
{
    if (s->p[s->i] == '-')
        s->i++;
    if (s->i < s->n && s->p[s->i] == '0')
        s->i++;
    else if (!scan_digits(s))
        return false;
    if (s->i < s->n && s->p[s->i] == '.') {
        s->i++;
        if (!scan_digits(s))
            return false;
    }
    if (s->i < s->n && (s->p[s->i] == 'e' || s->p[s->i] == 'E')) {
        s->i++;
        if (s->i < s->n && (s->p[s->i] == '+' || s->p[s->i] == '-'))
            s->i++;
        if (!scan_digits(s))
            return false;
    }
    return true;
}

static bool scan_literal(scanner *s, const char *word)
{
    size_t len = strlen(word);

    if (s->n - s->i < len || memcmp(s->p + s->i, word, len) != 0)
        return fail(s, s->i, "invalid literal");
    s->i += len;
    return true;
}

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* Open containers, one bit each: 1 object, 0 array. */
typedef struct nesting {
    unsigned char bits[JPT__JSON_MAX_DEPTH / 8];
    unsigned depth;
} nesting;

static bool nesting_top_is_object(const nesting *st)
{
    unsigned d = st->depth - 1;
    return (st->bits[d / 8] >> (d % 8)) & 1;
}

static bool nesting_push(scanner *s, nesting *st, bool object)
{
    unsigned d = st->depth;

    if (d == JPT__JSON_MAX_DEPTH)
        return fail(s, s->i, "nested deeper than " STRINGIFY(JPT_JSON_MAX_DEPTH) " levels");
    if (object)
        st->bits[d / 8] |= (unsigned char)(1u << (d % 8));
    else
        st->bits[d / 8] &= (unsigned char)~(1u << (d % 8));
    st->depth++;
    s->i++;
    skip_ws(s);
    return true;
}

/* A value that is not a container. */
static bool scan_scalar(scanner *s)
{
    unsigned char c = s->p[s->i];

    if (c == '"')
        return scan_string(s);
    if (c == 't')
        return scan_literal(s, "true");
    if (c == 'f')
        return scan_literal(s, "false");
    if (c == 'n')
        return scan_literal(s, "null");
    if (c == '-' || is_digit(c))
        return scan_number(s);
    return fail(s, s->i, "unexpected character");
}

static bool scan_member_name(scanner *s)
{
    if (s->i >= s->n || s->p[s->i] != '"')
        return fail(s, s->i, "expected a member name");
    if (!scan_string(s))
        return false;
    skip_ws(s);
    if (s->i >= s->n || s->p[s->i] != ':')
        return fail(s, s->i, "expected ':'");
    s->i++;
    skip_ws(s);
    return true;
}

/* After a value inside a container: a comma and the next member or
 * element, or the container's end. Sets *next_value when a value follows. */
static bool scan_after_value(scanner *s, nesting *st, bool *next_value)
{
    bool object = nesting_top_is_object(st);

    skip_ws(s);
    if (s->i >= s->n)
        return fail(s, s->i, object ? "expected ',' or '}'" : "expected ',' or ']'");
    unsigned char c = s->p[s->i];
    if (c == ',') {
        s->i++;
        skip_ws(s);
        *next_value = true;
        return !object || scan_member_name(s);
    }
    if (c != (object ? '}' : ']'))
        return fail(s, s->i, object ? "expected ',' or '}'" : "expected ',' or ']'");
    s->i++;
    st->depth--;
    *next_value = false;
    return true;
}

int jpt__json_validate(const char *text, size_t n, jpt__json_error *err)
{
    scanner s = {(const unsigned char *)text, n, 0, err};
    nesting st;
    bool value = true; /* a value comes next (else: after a value) */

    st.depth = 0;
    skip_ws(&s);
    for (;;) {
        if (value) {
            if (s.i >= s.n) {
                fail(&s, s.i, "expected a value");
                return JPT_ERR_INVALID;
            }
            unsigned char c = s.p[s.i];
            if (c == '{' || c == '[') {
                if (!nesting_push(&s, &st, c == '{'))
                    return JPT_ERR_INVALID;
                if (s.i < s.n && s.p[s.i] == (c == '{' ? '}' : ']')) {
                    s.i++;
                    st.depth--;
                    value = false;
                } else if (c == '{' && !scan_member_name(&s))
                    return JPT_ERR_INVALID;
                continue;
            }
            if (!scan_scalar(&s))
                return JPT_ERR_INVALID;
            value = false;
        }
        if (st.depth == 0)
            break;
        if (!scan_after_value(&s, &st, &value))
            return JPT_ERR_INVALID;
    }
    skip_ws(&s);
    if (s.i != s.n) {
        fail(&s, s.i, "unexpected text after the value");
        return JPT_ERR_INVALID;
    }
    return JPT_OK;
}

/* ---- Walking validated text ------------------------------------------------------ */

int jpt__json_type(jpt__vfs_span v)
{
    size_t i = 0;

    while (i < v.n && is_ws((unsigned char)v.p[i]))
        i++;
    switch (i < v.n ? v.p[i] : 0) {
    case '{':
        return JPT__JSON_OBJECT;
    case '[':
        return JPT__JSON_ARRAY;
    case '"':
        return JPT__JSON_STRING;
    case 't':
        return JPT__JSON_TRUE;
    case 'f':
        return JPT__JSON_FALSE;
    case 'n':
        return JPT__JSON_NULL;
    default:
        return JPT__JSON_NUMBER;
    }
}

/* The index just past the string literal opening at p[i]. A quote is the
 * end unless an odd number of backslashes precedes it. */
static size_t skip_string(const char *p, size_t n, size_t i)
{
    size_t from = i + 1;

    for (;;) {
        const char *q = memchr(p + from, '"', n - from);
        size_t at = (size_t)(q - p), k = at;
        while (k > i + 1 && p[k - 1] == '\\')
            k--;
        if ((at - k) % 2 == 0)
            return at + 1;
        from = at + 1;
    }
}

/* The index just past the value starting at p[i]. */
static size_t skip_value(const char *p, size_t n, size_t i)
{
    unsigned depth = 0;

    do {
        char c = p[i];
        if (c == '"')
            i = skip_string(p, n, i);
        else if (c == '{' || c == '[') {
            depth++;
            i++;
        } else if (c == '}' || c == ']') {
            depth--;
            i++;
        } else if (depth > 0)
            i++;
        else {
            while (i < n && strchr(",]} \t\r\n", p[i]) == NULL)
                i++;
        }
    } while (depth > 0);
    return i;
}

static void iter_skip_ws(jpt__json_iter *it)
{
    while (it->i < it->n && is_ws((unsigned char)it->p[it->i]))
        it->i++;
}

void jpt__json_iter_init(jpt__json_iter *it, jpt__vfs_span v)
{
    it->p = v.p;
    it->n = v.n;
    it->i = 0;
    iter_skip_ws(it);
    it->i++; /* the '{' or '[' */
}

/* Moves to the next value: past a comma, or false at the container's end. */
static bool iter_advance(jpt__json_iter *it)
{
    iter_skip_ws(it);
    if (it->i < it->n && it->p[it->i] == ',')
        it->i++;
    iter_skip_ws(it);
    return it->i < it->n && it->p[it->i] != '}' && it->p[it->i] != ']';
}

bool jpt__json_next_element(jpt__json_iter *it, jpt__vfs_span *value)
{
    if (!iter_advance(it))
        return false;
    size_t end = skip_value(it->p, it->n, it->i);
    value->p = it->p + it->i;
    value->n = end - it->i;
    it->i = end;
    return true;
}

bool jpt__json_next_member(jpt__json_iter *it, jpt__vfs_span *key, jpt__vfs_span *value)
{
    if (!iter_advance(it))
        return false;
    size_t end = skip_string(it->p, it->n, it->i);
    key->p = it->p + it->i + 1;
    key->n = end - it->i - 2;
    it->i = end;
    iter_skip_ws(it);
    it->i++; /* ':' */
    iter_skip_ws(it);
    size_t value_end = skip_value(it->p, it->n, it->i);
    value->p = it->p + it->i;
    value->n = value_end - it->i;
    it->i = value_end;
    return true;
}

bool jpt__json_key_is(jpt__vfs_span key, const char *name)
{
    size_t len = strlen(name);
    char decoded[128];

    if (memchr(key.p, '\\', key.n) == NULL)
        return key.n == len && memcmp(key.p, name, len) == 0;
    /* An escape is at most six bytes for one: the protocol's names (20
     * bytes at most) fit escaped whole, and a longer key is another name. */
    if (key.n > sizeof(decoded))
        return false;
    jpt__vfs_span lit = {key.p - 1, key.n + 2};
    size_t got = jpt__json_unescape(lit, decoded);
    return got == len && memcmp(decoded, name, len) == 0;
}

/* ---- Decoding ----------------------------------------------------------------------- */

static char simple_escape(char letter)
{
    switch (letter) {
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default: /* '"', '\\', '/' */
        return letter;
    }
}

/* Decodes the validated escape at p into out (at most 4 bytes). */
static size_t unescape_one(const char *p, char *out, size_t *in_len)
{
    const unsigned char *u = (const unsigned char *)p;

    if (p[1] != 'u') {
        *in_len = 2;
        out[0] = simple_escape(p[1]);
        return 1;
    }
    uint32_t cp = (uint32_t)hex4(u, 6);
    *in_len = 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t low = (uint32_t)hex4(u + 6, 6);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        *in_len = 12;
    }
    return utf8_encode(out, cp);
}

size_t jpt__json_unescape(jpt__vfs_span lit, char *out)
{
    const char *src = lit.p + 1, *end = lit.p + lit.n - 1;
    size_t len = 0;

    for (;;) {
        const char *bs = memchr(src, '\\', (size_t)(end - src));
        size_t run = (size_t)((bs != NULL ? bs : end) - src);
        if (out + len != src)
            memmove(out + len, src, run);
        len += run;
        if (bs == NULL)
            return len;
        /* The escape's output (at most 4 bytes) is never longer than the
         * escape itself, so writing in place never overtakes reading. */
        char tmp[4];
        size_t in_len, got = unescape_one(bs, tmp, &in_len);
        memcpy(out + len, tmp, got);
        len += got;
        src = bs + in_len;
    }
}

bool jpt__json_uint(jpt__vfs_span v, uint64_t max, uint64_t *out)
{
    uint64_t value = 0;

    if (v.n == 0)
        return false;
    for (size_t i = 0; i < v.n; i++) {
        if (!is_digit((unsigned char)v.p[i]))
            return false;
        unsigned d = (unsigned)(v.p[i] - '0');
        if (value > (max - d) / 10)
            return false;
        value = value * 10 + d;
    }
    *out = value;
    return true;
}

/* ---- Encoding ------------------------------------------------------------------------- */

int jpt__json_append_flat(jpt__buf *b, const char *p, size_t n)
{
    int rc = jpt__buf_reserve(b, n);

    if (rc < 0)
        return rc;
    char *dst = b->data + b->len;
    memcpy(dst, p, n);
    /* Inside strings line ends are always escaped, so every raw one is
     * whitespace between tokens. */
    for (const char *ends = "\n\r"; *ends != '\0'; ends++)
        for (char *c = memchr(dst, *ends, n); c != NULL;
             c = memchr(c + 1, *ends, n - (size_t)(c + 1 - dst)))
            *c = ' ';
    b->len += n;
    b->data[b->len] = '\0';
    return JPT_OK;
}
