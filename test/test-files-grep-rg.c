/* fs.grep against ripgrep (issue 16 §2): over a corpus this test makes
 * (C-like code, Unicode text, CRLF lines, long lines, NUL bytes on both
 * sides of ripgrep's 8 KiB pieces, invalid UTF-8 across read boundaries,
 * byte order marks, empty lines and files, no final newline, deep and
 * hidden directories), hundreds of patterns of every class must give the
 * lines `rg -P` prints: per file, the same matching line numbers, the same
 * context lines and the same content, in the same order. A pattern rg
 * refuses, fs.grep refuses. The directory and memory backends must give
 * the same result. Differences by design (vfs.h) are kept out of the
 * corpus: no file is named directly, no line exceeds pcre2's limits, and
 * there is no UTF-16. With JPT_GREP_RG_TREE=<dir> the cases run over that
 * tree instead (the first 100 000 matches each, no context and no paths): how issue 16
 * compared them over /usr/include and /usr/share/perl5. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "test-files-util.h"

/* ---- The corpus -------------------------------------------------------------------- */

static unsigned long long rnd_state = 0x9E3779B97F4A7C15ull;

static unsigned rnd(unsigned n)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (unsigned)(rnd_state % n);
}

#define PICK(array) (array)[rnd(sizeof(array) / sizeof((array)[0]))]

typedef struct bytes {
    char *p;
    size_t n, cap;
} bytes;

static void add(bytes *b, const void *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void adds(bytes *b, const char *s)
{
    add(b, s, strlen(s));
}

static void addf(bytes *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(bytes *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    add(b, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* Pads with lines of 'y' (and their '\n') up to exactly `len` bytes. */
static void pad_to(bytes *b, size_t len)
{
    while (b->n < len) {
        size_t left = len - b->n, line = left > 80 ? 79 : left - 1;
        for (size_t i = 0; i < line; i++)
            add(b, "y", 1);
        add(b, "\n", 1);
    }
}

typedef struct corpus {
    char root[4096];
    jpt_files *mem;
    size_t files, bytes;
} corpus;

static void save(corpus *c, const char *rel, bytes *b)
{
    fu_write_n(c->root, rel, b->p != NULL ? b->p : "", b->n);
    assert_int_equal(jpt_files_write(c->mem, rel, b->p != NULL ? b->p : "", b->n), JPT_OK);
    c->files++;
    c->bytes += b->n;
    b->n = 0;
}

static void save_s(corpus *c, const char *rel, const char *text)
{
    bytes b = {0};
    adds(&b, text);
    save(c, rel, &b);
    free(b.p);
}

static const char *const idents[] = {
    "alpha", "beta", "gamma", "delta", "foo_bar", "FOO_BAR", "x", "i", "count", "main", "init",
    "buf", "len", "NULL", "ptr", "MAX_LEN", "u8", "int", "char", "static", "const", "return",
    "void", "struct", "size_t", "errno", "EINVAL", "pthread_mutex_lock", "malloc", "free",
    "Kelvin", "integer", "print", "sprint", "main2", "_private", "CamelCase", "snake_case_name",
    "a1", "b22", "c333", "TODO", "FIXME", "NaN", "inf", "end",
};

static const char *const unicode_words[] = {
    "élan", "naïve", "café", "Δelta", "ΔΕΛΤΑ", "δέλτα", "日本語", "中文", "한국어",
    "\xF0\x9F\x98\x80", "\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", "e\xCC\x81", "Ⅻ", "٣٤٥", "２０２４",
    "ｆｕｌｌ", "\xC2\xA0", "\xE2\x80\x8B", "\xEF\xBB\xBF", "\xEF\xBF\xBD", "ǅemal", "ǆ", "straße",
    "STRASSE", "ẞ", "ſ", "\xE2\x84\xAA" "elvin", "kelvin", "İstanbul", "ıi", "ﬁle", "Ω",
    "\xE2\x84\xA6", "Å", "\xE2\x84\xAB", "µ", "μ", "ΣΊΣΥΦΟΣ", "σίσυφος", "Привет", "мир",
    "שלום", "مرحبا",
    "x", "the", "and", "of", "int", "return",
};

static const char *const indents[] = {"", "", "    ", "\t", "  ", "        ", "\t\t", " \t"};

static const char *const special_lines[] = {
    "", " ", "\t", "}", ";", "{;", "a;b", "x ;", "{ x; }", "};", "#", "  #  define X 1",
    "\t\t;", "int;", "int main", "integer", "print(int)", "a.b", "axb", "a{,2}", "a{2}", "aa",
    "]", "]a", "a]", "^", "$", "\\", "\\d", "$x", "x$", "(", ")", "()", "((a))", "[[", "]]",
    "[[:digit:]]", "1.5", "12.75", "0.0.1", "3.", ".5", "abcabc", "abab", "xyzzy", "noon",
    "\"q\" 'q'", "'mixed\"", "a b  c", "trailing  ", "trailing\t", "  leading", "K", "k",
    "\xE2\x84\xAA", "S", "s", "\xC5\xBF", "ss", "ß", "I", "i", "İ", "ı", "Σ", "σ", "ς",
    "\xEF\xBF\xBD", "\xEF\xBB\xBF" "bom-in-middle", "é", "e\xCC\x81", "\xF0\x9F\x98\x80",
    "a\xCC\x81\xCC\x82", "line with ; semicolon;", ";;;", "; ;", "x;y;z", "needle", "NEEDLE",
    "Needle in a haystack", "end", "END", "the end", "return 0;", "return;", "    return x;",
    "#include <stdio.h>", "#define FOO_BAR 123", "/* comment */", "// line comment", "a//b",
    "0x1F 0X2e 0755", "1e10 2E-5", "foo::bar", "a->b", "a - > b", "x == y", "x != y",
    "__attribute__((unused))", "café crème", "CAFÉ CRÈME", "ÉLAN", "Mañana", "MAÑANA",
};

static void c_line(bytes *b)
{
    const char *in = PICK(indents);

    switch (rnd(17)) {
    case 0:
        addf(b, "#include <%s.h>", PICK(idents));
        break;
    case 1:
        addf(b, "#define %s %u", PICK(idents), rnd(100000));
        break;
    case 2:
        addf(b, "%sreturn %s;", in, PICK(idents));
        break;
    case 3:
        addf(b, "%sif (%s == %s) {", in, PICK(idents), PICK(idents));
        break;
    case 4:
        addf(b, "%s}", in);
        break;
    case 5:
        addf(b, "static %s %s(%s *%s, size_t %s);", PICK(idents), PICK(idents), PICK(idents),
             PICK(idents), PICK(idents));
        break;
    case 6:
        addf(b, "%s/* %s %s */", in, PICK(idents), PICK(unicode_words));
        break;
    case 7:
        addf(b, "%s%s = %s->%s + %u.%u;", in, PICK(idents), PICK(idents), PICK(idents),
             rnd(1000), rnd(100));
        break;
    case 8:
        break; /* empty */
    case 9:
        addf(b, "%s%s(\"%s %s\\n\", %s);", in, PICK(idents), PICK(unicode_words), PICK(idents),
             PICK(idents));
        break;
    case 10:
        addf(b, "%s// TODO: %s %s", in, PICK(idents), PICK(unicode_words));
        break;
    case 11:
        addf(b, "%scase %s: %s++; break;", in, PICK(idents), PICK(idents));
        break;
    case 12:
        addf(b, "0x%x, 0%o, %ue%u, %s::%s", rnd(70000), rnd(512), rnd(10), rnd(20), PICK(idents),
             PICK(idents));
        break;
    case 13:
    case 14:
        adds(b, PICK(special_lines));
        break;
    case 15:
        addf(b, "%s%s;%s", in, PICK(idents), PICK(indents));
        break;
    default:
        for (unsigned w = rnd(8) + 1; w > 0; w--)
            addf(b, "%s%s", PICK(unicode_words), rnd(4) ? " " : "");
        break;
    }
}

enum { LF, CRLF, MIXED };

static void c_file(corpus *c, const char *rel, unsigned lines, int ends, bool final_newline)
{
    bytes b = {0};

    for (unsigned l = 0; l < lines; l++) {
        c_line(&b);
        if (l + 1 < lines || final_newline)
            adds(&b, ends == CRLF || (ends == MIXED && rnd(2)) ? "\r\n" : "\n");
    }
    save(c, rel, &b);
    free(b.p);
}

/* A file of lines that mark where they are ("match 12 ..."), a NUL at
 * `nul` (or none: SIZE_MAX), `size` bytes in all. */
static void nul_file(corpus *c, const char *rel, const char *start, size_t nul, size_t size,
                     unsigned line_len)
{
    bytes b = {0};

    adds(&b, start);
    for (unsigned l = 1; b.n < size; l++) {
        size_t before = b.n;
        addf(&b, "match %u at %zu ", l, before);
        while (b.n - before + 1 < line_len && b.n < size)
            add(&b, "z", 1);
        add(&b, "\n", 1);
    }
    b.n = size;
    if (nul != SIZE_MAX)
        b.p[nul] = '\0';
    save(c, rel, &b);
    free(b.p);
}

/* Lines of ASCII up to `at`, then `bytes` (straddling ripgrep's piece or
 * fs.grep's read boundary there), then more lines. */
static void straddle(bytes *b, size_t at, const char *seq, size_t back)
{
    pad_to(b, at - back - 6);
    adds(b, "mark ");
    add(b, seq, strlen(seq));
    adds(b, " end\n");
}

static void long_lines(corpus *c)
{
    bytes b = {0};
    static const char *const words[] = {"word", "alpha", "beta", "x1", "Zeta", "élan", "12.5"};

    adds(&b, "short before\n");
    for (size_t n = 0; n < 70000; n += 5)
        adds(&b, "word ");
    adds(&b, "\nmiddle\n");
    size_t start = b.n;
    while (b.n - start < 140000) {
        adds(&b, PICK(words));
        adds(&b, rnd(5) ? " " : "  ");
    }
    adds(&b, "needle at the end\n");
    start = b.n;
    while (b.n - start < 65535)
        add(&b, "q", 1);
    adds(&b, "\n\n");
    for (int i = 0; i < 120; i++) {
        start = b.n;
        unsigned len = rnd(6) == 0 ? 3000 + rnd(9000) : rnd(200);
        while (b.n - start < len) {
            adds(&b, PICK(words));
            add(&b, " ", 1);
        }
        adds(&b, rnd(3) ? "\n" : ";\n");
    }
    save(c, "long/lines.txt", &b);
    free(b.p);
}

static void utf8_edges(corpus *c)
{
    bytes b = {0};
    /* Invalid sequences of every kind, one a line. */
    static const char *const bad[] = {
        "a\xFF" "b", "\xC0\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x84", "x\xE2\x84y",
        "\xF0\x9F\x98", "\x80", "\x80\x80\x80", "\xC3", "\xC3(", "caf\xE9", "\xFE\xFF",
        "ok \xEF\xBF\xBD ok", "\xF8\x88\x80\x80\x80", "\xE0\x80\xAF", "a\xC2" "b\xC2",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        adds(&b, "line ");
        adds(&b, bad[i]);
        adds(&b, i % 2 ? " tail\n" : "\n");
    }
    adds(&b, "last \xE2\x82"); /* cut at the end of the file */
    save(c, "utf8/invalid.txt", &b);

    /* Characters and broken ones across ripgrep's pieces (3 + 8192k) and
     * fs.grep's reads (3 + 65536k). */
    static const size_t edges[] = {8195, 16387, 65539};
    static const char *const seqs[] = {"\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xE2\x82" "x",
                                       "\xF0\x9F\x98" "!"};
    for (size_t s = 0; s < sizeof(seqs) / sizeof(seqs[0]); s++) {
        char rel[64];
        for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++)
            for (size_t back = 1; back < strlen(seqs[s]); back++)
                if (b.n + 64 < edges[e])
                    straddle(&b, edges[e], seqs[s], back);
        if (s == 0)
            straddle(&b, 131075, seqs[s], 1); /* fs.grep's second read boundary */
        adds(&b, "after all\n");
        snprintf(rel, sizeof(rel), "utf8/edge%zu.txt", s);
        save(c, rel, &b);
    }
    free(b.p);
}

static void binaries(corpus *c)
{
    /* A NUL in the first piece [0, 3): nothing; at 3: the lines that
     * ended in the first piece; about the next pieces and fs.grep's reads. */
    nul_file(c, "bin/at0.dat", "", 0, 300, 40);
    nul_file(c, "bin/at2.dat", "a\n", 2, 300, 40);
    nul_file(c, "bin/at3.dat", "a\nb", 3, 300, 40);
    nul_file(c, "bin/at5.dat", "a\nbcdef\n", 5, 300, 40);
    static const size_t at[] = {8194, 8195, 8196, 16386, 16387, 65538, 65539, 65540, 131075};
    static const unsigned lens[] = {1, 40, 8192};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
            char rel[64];
            if (at[i] > 20000 && l != 1)
                continue; /* big files: one of each */
            snprintf(rel, sizeof(rel), "bin/nul-%zu-%u.dat", at[i], lens[l]);
            nul_file(c, rel, "", at[i], at[i] + 500 + l * 7, lens[l] + (unsigned)i);
        }
    /* Lines ending right at a piece's end or just after it. */
    for (size_t nl = 8192; nl <= 8198; nl++) {
        bytes b = {0};
        char rel[64];
        pad_to(&b, nl - 6);
        adds(&b, "edge\n");
        pad_to(&b, 8195 + 8192 + 10);
        b.p[8195 + 4] = '\0';
        snprintf(rel, sizeof(rel), "bin/edge-%zu.dat", nl);
        save(c, rel, &b);
        free(b.p);
    }
    nul_file(c, "bin/bom.dat", "\xEF\xBB\xBF" "bom\n", 8200, 9000, 50);
    nul_file(c, "bin/late-crlf.dat", "first\r\n", 70000, 80000, 60);
}

static void small_files(corpus *c)
{
    save_s(c, "empty.txt", "");
    save_s(c, "nl.txt", "\n");
    save_s(c, "nl2.txt", "\n\n");
    save_s(c, "crlf-only.txt", "\r\n");
    save_s(c, "cr.txt", "\r");
    save_s(c, "nofinal.c", "int main(void)\n{\n    return 0;\n}");
    save_s(c, "one-char.txt", "x");
    save_s(c, "bom/bom.c", "\xEF\xBB\xBF#include <bom.h>\nint bom;\n");
    save_s(c, "bom/only.txt", "\xEF\xBB\xBF");
    save_s(c, "bom/short.txt", "\xEF\xBB");
    save_s(c, "bom/nofinal.txt", "\xEF\xBB\xBF" "match");
    save_s(c, "bom/crlf.txt", "\xEF\xBB\xBF" "first\r\nsecond\r\n");
    save_s(c, "bom/twice.txt", "\xEF\xBB\xBF\xEF\xBB\xBF" "twice\n");
    save_s(c, "B.c", "upper case name\n");
    save_s(c, "a.c", "a\n");
    save_s(c, "a-b.c", "a-b\n");
    save_s(c, "a.b/x.c", "a.b/x\n");
    save_s(c, "a/b.c", "a/b\n");
    save_s(c, "_u.h", "underscore\n");
    save_s(c, "é.txt", "é name\n");
    save_s(c, "with space.txt", "with space\n");
    save_s(c, ".hidden/h.c", "hidden int main;\n");
    save_s(c, ".env", "TOKEN=alpha\n");
    save_s(c, ".git/HEAD", "ref: alpha\n");
    save_s(c, "src/.git", "alpha gitdir\n");
    save_s(c, "deep/a/b/c/d/e/f/g/h/i/j/k/l/m/n/deep.c", "int deep = 1;\n#include <deep.h>\n");
    bytes b = {0};
    for (size_t i = 0; i < sizeof(special_lines) / sizeof(special_lines[0]); i++) {
        adds(&b, special_lines[i]);
        adds(&b, "\n");
    }
    save(c, "specials.txt", &b);
    for (size_t i = 0; i < sizeof(special_lines) / sizeof(special_lines[0]); i++) {
        adds(&b, special_lines[i]);
        adds(&b, "\r\n");
    }
    save(c, "specials-crlf.txt", &b);
    for (size_t i = 0; i < sizeof(unicode_words) / sizeof(unicode_words[0]); i++) {
        addf(&b, "%s %s %s\n", unicode_words[i], PICK(unicode_words), PICK(idents));
        addf(&b, "%s\n", unicode_words[i]);
    }
    save(c, "unicode.txt", &b);
    free(b.p);
}

static void make_corpus(corpus *c)
{
    static const char *const dirs[] = {"src", "src/lib", "include", "include/sys", "docs",
                                       ".config", "tests/unit"};
    static const char *const names[] = {"main.c", "util.h", "io.c", "notes.txt", "README",
                                        "Makefile", ".rc"};
    char rel[256];

    for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++)
        for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
            if (rnd(3) == 0)
                continue;
            snprintf(rel, sizeof(rel), "%s/%s", dirs[d], names[f]);
            c_file(c, rel, 20 + rnd(250), rnd(6) == 0 ? CRLF : rnd(6) == 0 ? MIXED : LF,
                   rnd(5) != 0);
        }
    small_files(c);
    long_lines(c);
    utf8_edges(c);
    binaries(c);
    fu_symlink(c->root, "src/link.c", "main.c");
    fu_symlink(c->root, "linkdir", "src");
}

/* ---- The patterns -------------------------------------------------------------------- */

enum {
    I = 1,        /* -i, "case_insensitive" */
    F = 2,        /* -F, "fixed_strings" */
    C1 = 4,       /* -C 1 */
    C3 = 8,       /* -C 3 */
    EXT = 16,     /* -g '*.c' -g '*.h', "extensions": ["c", "h"] */
    DOCS = 32,    /* the path "docs" */
    BOTH = 64,    /* the pattern as it is and with -i */
};

typedef struct grep_case {
    const char *pattern;
    unsigned flags;
} grep_case;

/* The first ISSUE_CASES are issue 16's named defects. */
#define ISSUE_CASES 9
static const grep_case cases[] = {
    {"[[:digit:]]+\\.[[:digit:]]+", 0},
    {"[^[:ascii:]]", 0},
    {"[[:<:]]int", 0},
    {"\\A\\s+\\w", 0},
    {"[;{]\\z", 0},
    {"\\G\\s+\\w", 0},
    {"(?<=\\n)#", 0},
    {"}(?=\\n)", 0},
    {";(?!\\s)", 0},
    /* Literals. */
    {"int", BOTH},
    {"return", BOTH},
    {"#include", 0},
    {"main", BOTH | C1},
    {"NULL", BOTH},
    {"pthread_mutex_lock", 0},
    {"->", 0},
    {"::", 0},
    {"\"", 0},
    {"'", 0},
    {"==", 0},
    {"}", 0},
    {";", C3},
    {"(", F},
    {"a.b", BOTH},
    {"a.b", F | BOTH},
    {"élan", BOTH},
    {"café crème", BOTH},
    {"ΔΕΛΤΑ", BOTH},
    {"δέλτα", I},
    {"日本", 0},
    {"\xF0\x9F\x98\x80", 0},
    {"\xE2\x84\xAA", BOTH},
    {"kelvin", I},
    {"KELVIN", I},
    {"ſ", BOTH},
    {"straße", BOTH},
    {"STRASSE", I},
    {"ß", I},
    {"ẞ", I},
    {"İstanbul", BOTH},
    {"istanbul", I},
    {"σίσυφος", I},
    {"ΣΊΣΥΦΟΣ", I},
    {"ς", I},
    {"Ω", I},
    {"Å", I},
    {"µ", I},
    {"ǅ", I},
    {"ﬁle", I},
    {"FILE", I},
    {"needle", BOTH | C3},
    {"needle at the end", 0},
    {"end", BOTH},
    {"\t", 0},
    {"  ", 0},
    {" \t", 0},
    {"TODO", C1},
    {"match 1 ", 0},
    {"edge", 0},
    {"mark", 0},
    {"after all", 0},
    {"hidden", 0},
    {"alpha", BOTH},
    {"first", 0},
    {"bom", 0},
    {"twice", 0},
    {"\xEF\xBF\xBD", BOTH},
    {"\xEF\xBF\xBD", F},
    {"ok \xEF\xBF\xBD ok", F},
    {"\xEF\xBB\xBF", 0},
    {"\xEF\xBB\xBF", F},
    {"\xC2\xA0", 0},
    {"e\xCC\x81", 0},
    /* Fixed strings of regex syntax. */
    {"[", F},
    {"]", F},
    {"*", F},
    {"\\", F},
    {"\\d", F},
    {"$", F},
    {"^", F},
    {"a|b", F},
    {"a{2}", F},
    {"?", F},
    {".", F},
    {"x$", F | I},
    {"(int)", F},
    {"", F},
    /* Classes. */
    {"[0-9]+", 0},
    {"[a-z]+_[a-z]+", BOTH},
    {"[A-Z]{2,}", BOTH},
    {"[^a-z ]", 0},
    {"[]a]", 0},
    {"[^]a]", 0},
    {"[\\]]", 0},
    {"[\\\\]", 0},
    {"[a-]", 0},
    {"[-a]x", 0},
    {"[\\w.]+\\(", 0},
    {"[\\d,]{3}", 0},
    {"[\\p{Greek}]+", BOTH},
    {"[^\\x00-\\x7F]", 0},
    {"[\\Q]\\E]", 0},
    {"[\\Q^\\E]", 0},
    {"[^\\Q\\E]x]", 0},
    {"[\\x{FFFD}]", 0},
    {"[^\\n]", 0},
    {"[\\n;]$", 0},
    {"[;{][^;{]*$", 0},
    /* POSIX classes. */
    {"[[:alpha:]]+", 0},
    {"[[:digit:]]{3}", 0},
    {"int[[:>:]]", 0},
    {"[[:<:]]\\w+[[:>:]] \\(", 0},
    {"[[:space:]]$", 0},
    {"[[:punct:]]{3}", 0},
    {"[[:upper:]][[:lower:]]+", BOTH},
    {"[[:^alpha:]]x", 0},
    {"[[:word:]]+\\(", 0},
    {"[[:xdigit:]]{4}", 0},
    {"[[:cntrl:]]", 0},
    {"[[:blank:]]+$", 0},
    {"[[:print:]]{200}", 0},
    {"[[:graph:]][[:space:]][[:graph:]]", 0},
    {"[^[:alnum:][:space:]]", 0},
    {"[:a[:digit:]b:]", 0},
    {"[[:alpha:]-]+", 0},
    {"a[[:digit:]]b", 0},
    {"[[:digit:]]", 0},
    {"[[:digit:]]x", 0},
    {"[[:ascii:]]", 0},
    /* Anchors. */
    {"^", 0},
    {"$", 0},
    {"^$", C1},
    {"^\\s*$", 0},
    {"^#", 0},
    {"^\\s+return", BOTH},
    {";$", 0},
    {";\\r$", 0},
    {"\\r$", 0},
    {"\\r", 0},
    {"^\\r", 0},
    {"\\Z", 0},
    {"}\\Z", 0},
    {"^}$", 0},
    {"\\A$", 0},
    {"\\A\\z", 0},
    {"\\A#", 0},
    {"d\\z", 0},
    {"\\A\\w+\\z", 0},
    {"(?m)^int", 0},
    {"(?-m)^int", 0},
    {"(?-m)int$", 0},
    {"(?-m)\\w$", 0},
    {"x\\z|\\Ay", 0},
    {"\\Gint", 0},
    {"\\G", 0},
    {"^x|y$", 0},
    {"^.$", 0},
    {"^.{3}$", 0},
    {"^.{80,}$", 0},
    {"^.{65535}", 0},
    {"^.{70000}", 0},
    {"^[^;]*;$", 0},
    {"^\\w+ \\d+ at \\d+", 0},
    /* Lookaround. */
    {"(?<!\\w)int(?!\\w)", BOTH},
    {"(?<=^)\\s", 0},
    {"(?<=\\s)\\w+(?=\\()", 0},
    {"^(?=.*return).*;", 0},
    {"^(?!.*;).+$", 0},
    {"(?<![a-z])[A-Z]", 0},
    {"\\w+(?=\\r$)", 0},
    {"(?<=\\t)\\w", 0},
    {"(?<=\\A)#", 0},
    {"(?=\\z)", 0},
    {"(?<=;)$", 0},
    {"(?<=\\r)$", 0},
    {"(?=\\n)", 0},
    {"(?<=\\n)", 0},
    {"\\s(?=\\s)", 0},
    {"(?<=\\.)\\d", 0},
    {"(?<=é)\\w", 0},
    {"(?!)", 0},
    {"(?=)", 0},
    {"(*pla:int)", 0},
    {"(*negative_lookahead:\\w)$", 0},
    /* Backreferences. */
    {"(\\w)\\1", 0},
    {"(\\w+) \\1\\b", 0},
    {"(['\"])[^'\"]*\\1", 0},
    {"(?<q>a)\\k<q>", 0},
    {"(.)(.)\\2\\1", 0},
    {"(?P<w>\\w+)::(?P=w)", 0},
    {"(\\s)\\1$", 0},
    {"(\\w)(?:\\1)+", I},
    /* Unicode. */
    {"\\p{Lu}", 0},
    {"\\p{Lu}\\p{Ll}+", BOTH},
    {"\\p{Greek}+", 0},
    {"\\p{Han}", 0},
    {"\\p{Cyrillic}+", I},
    {"\\p{Arabic}", 0},
    {"\\p{Hebrew}", 0},
    {"\\p{L}\\p{M}", 0},
    {"\\p{Mn}", 0},
    {"\\p{Zs}", 0},
    {"\\p{Cf}", 0},
    {"\\p{Nl}", 0},
    {"\\P{L}{5}", 0},
    {"\\X", 0},
    {"\\X$", 0},
    {"^\\X\\X$", 0},
    {"\\p{Nd}+", 0},
    {"\\d", 0},
    {"\\d+\\.\\d+", 0},
    {"\\D\\d\\D", 0},
    {"\\w+", 0},
    {"\\W{3}", 0},
    {"\\s\\S", 0},
    {"\\S\\s$", 0},
    {"\\h+$", 0},
    {"\\H\\h\\H", 0},
    {"\\v", 0},
    {"\\V", 0},
    {"\\R", 0},
    {"\\N+", 0},
    {"\\x{FFFD}", 0},
    {"[^\\x{FFFD}]\\x{FFFD}", 0},
    {"\\x{FFFD}$", 0},
    {"^\\x{FFFD}", 0},
    {"\\x{212A}", BOTH},
    {"\\N{U+00E9}", BOTH},
    {"\\x{FEFF}", 0},
    {"^\\x{FEFF}", 0},
    {"\\x{200B}", 0},
    {"\\x{1F600}", 0},
    {"\\x{10FFFF}", 0},
    {"(?i)straße", 0},
    {"(?i)σ", 0},
    {"(?i)k", 0},
    {"(?i)s\\b", 0},
    {"(?i)é", 0},
    {"\\w\\b\\W", 0},
    {"é\\b", 0},
    {"\\bé", 0},
    {".", 0},
    {"...", 0},
    {".\\r", 0},
    {"a.b", 0},
    {"\\C", 0},
    /* Empty matches. */
    {"", C1},
    {"x*", 0},
    {"\\b", 0},
    {"\\B", 0},
    {"(?:)", 0},
    {"a?", 0},
    {"(?=x)", 0},
    {"$|x", 0},
    {"^\\s*", 0},
    /* Alternation. */
    {"int|void", BOTH},
    {"return|static|const", 0},
    {"^(#if|#endif|#define)", 0},
    {"a|\\A", 0},
    {"foo|", 0},
    {"|x", 0},
    {"alpha|beta|gamma|delta", BOTH},
    {"élan|café|naïve", BOTH},
    {"(a|b)+c", 0},
    {"x(?:y|z)*", 0},
    /* \b and \K. */
    {"\\bint\\b", BOTH},
    {"\\b\\w{10,}\\b", 0},
    {"\\B_\\B", 0},
    {"\\bx\\b", 0},
    {"int\\K\\s+\\w+", 0},
    {"\\Kx", 0},
    {"a\\s*\\Kb", 0},
    {"(?<=int)\\K main", 0},
    {"int \\Kmain", 0},
    /* Quantifiers, quoting, options, comments. */
    {"a{,2}", 0},
    {"a{2}", 0},
    {"x{0}y", 0},
    {"ab?c", 0},
    {"ab*c", 0},
    {"a+b", 0},
    {"(ab)+", 0},
    {"a{1,3}?", 0},
    {"colou?r", 0},
    {"in?t", 0},
    {"int?", 0},
    {"ma*in", 0},
    {"mai{0,1}n", 0},
    {"ma+in", 0},
    {"mai{1}n", 0},
    {"ret(urn)?", 0},
    {"r(e)turn", 0},
    {"\\Qa.b\\E", 0},
    {"\\Qa.b\\E+", 0},
    {"\\Qa.b", 0},
    {"x\\Q\\Ey", 0},
    {"\\Qa{2}\\E", 0},
    {"a\\E", 0},
    {"a(?#comment)b", 0},
    {"a(?#c)*", 0},
    {"(?x) int \\  main # comment", 0},
    {"(?x)r e t u r n", 0},
    {"(?x:a b)c", 0},
    {"(?i)INT", 0},
    {"(?i:INT) main", 0},
    {"INT(?i) main", 0},
    {"(?-i)int", I},
    {"(?i)int(?-i)M", 0},
    {"(?s).", 0},
    {"(?s)a.b", 0},
    {"(?U)a+", 0},
    {"(?n)(a)", 0},
    {"(?J)(?<n>a)|(?<n>b)", 0},
    {"(?|(a)|(b))\\1", 0},
    {"(?^)int", 0},
    {"(?^i)INT", 0},
    {"#define\\s+\\w+\\s+\\d+$", 0},
    {"\\{", 0},
    {"\\}", 0},
    {"{", 0},
    {"{}", 0},
    {"x{", 0},
    {"a{2 }", 0},
    {"}{", 0},
    /* Atomic, possessive, verbs, recursion, conditions. */
    {"(?>a+)b", 0},
    {"a++b", 0},
    {"\\s*+$", 0},
    {"[^;]*+;", 0},
    {"(?>\\s*)$", 0},
    {"(?>x|xy)z", 0},
    {"(*UCP)\\w", 0},
    {"(*NO_JIT)int", 0},
    {"(*NO_START_OPT)x", 0},
    {"a(*SKIP)(*FAIL)|b", 0},
    {"(*ACCEPT)x", 0},
    {"x(*COMMIT)y", 0},
    {"\\((?:[^()]|(?R))*\\)", 0},
    {"(?1)(a)", 0},
    {"(a)?(?(1)b|c)", 0},
    {"(?(?=int)int|\\w)", 0},
    {"(*atomic:\\s*)$", 0},
    /* Escapes. */
    {"\\t", 0},
    {"\\x20\\x20", 0},
    {"\\x{41}", I},
    {"\\101", 0},
    {"\\o{101}", 0},
    {"\\cI", 0},
    {"\\e", 0},
    {"\\0", 0},
    {"\\$", 0},
    {"\\.h>", 0},
    {"\\\\", 0},
    {"\\/", 0},
    {"\\n", 0},
    {"a\\nb", 0},
    {"\\x0A", 0},
    {"\\r\\n", 0},
    {"\\x00", 0},
    /* Where and which files. */
    {"int", EXT},
    {"\\w+", EXT | C1},
    {"^", DOCS},
    {"return", DOCS | C3},
    /* Patterns both refuse. */
    {"(", 0},
    {"a{2}{3}", 0},
    {"[z-a]", 0},
    {"(?<=a+)b", 0},
    {"(?=a\\K)", 0},
    {"[[:foo:]]", 0},
    {"x**", 0},
    {"\\", 0},
    {"(?P<n>a)(?P<n>b)", 0},
    {"\\k<nope>", 0},
    {"[[.a.]]", 0},
    {"(?<", 0},
};

/* ---- Running both ---------------------------------------------------------------------- */

/* One line of a result: "path\tnumber\tm|c\tcontent" (content escaped). */
typedef struct lines {
    char **v;
    size_t n, cap;
} lines;

static void add_line(lines *l, const char *path, size_t path_len, long long number, char kind,
                     const char *content, size_t len)
{
    bytes b = {0};

    add(&b, path, path_len);
    addf(&b, "\t%lld\t%c\t", number, kind);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)content[i];
        if (ch < 0x20 || ch == '\\')
            addf(&b, "\\x%02x", ch);
        else
            add(&b, &ch, 1);
    }
    b.p[b.n] = '\0';
    if (l->n == l->cap)
        l->v = realloc(l->v, (l->cap = l->cap * 2 + 64) * sizeof(char *));
    l->v[l->n++] = b.p;
}

static void free_lines(lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* rg's arguments for a case. */
static size_t rg_args(const grep_case *gc, bool caseless, const char *argv[32])
{
    static const char *const base[] = {
        JPT_TEST_RG, "-P", "--no-config", "--no-ignore", "--hidden", "-g", "!.git", "--sort",
        "path", "-n", "--no-heading", "--with-filename", "--null", "--color", "never"};
    size_t n = 0;

    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
        argv[n++] = base[i];
    if (caseless)
        argv[n++] = "-i";
    if (gc->flags & F)
        argv[n++] = "-F";
    if (gc->flags & (C1 | C3)) {
        argv[n++] = "-C";
        argv[n++] = gc->flags & C1 ? "1" : "3";
    }
    if (gc->flags & EXT) {
        argv[n++] = "-g";
        argv[n++] = "*.c";
        argv[n++] = "-g";
        argv[n++] = "*.h";
    }
    argv[n++] = "-e";
    argv[n++] = gc->pattern;
    if (gc->flags & DOCS)
        argv[n++] = "docs";
    argv[n] = NULL;
    return n;
}

/* The most matching lines compared: all of them in the corpus, the first
 * ones in a tree of JPT_GREP_RG_TREE (where "" matches millions). */
static size_t max_matches = 100000000;

/* Takes rg's line "path NUL number ':' content" (a match; '-' for
 * context). Its notes about binary files and "--" separators have no such
 * form. Returns false once max_matches matches are taken. */
static bool take_rg_line(const char *p, size_t n, lines *out, size_t *matches)
{
    const char *nul = memchr(p, '\0', n), *sep = nul != NULL ? nul + 1 : NULL;

    while (sep != NULL && sep < p + n && *sep >= '0' && *sep <= '9')
        sep++;
    if (sep == NULL || sep == nul + 1 || sep >= p + n || (*sep != ':' && *sep != '-'))
        return true;
    if (*sep == ':' && *matches == max_matches)
        return false;
    *matches += *sep == ':';
    add_line(out, p, (size_t)(nul - p), strtoll(nul + 1, NULL, 10), *sep == ':' ? 'm' : 'c',
             sep + 1, (size_t)(p + n - sep - 1));
    return true;
}

/* Runs rg in `root`; returns its exit status, the lines it printed in *out. */
static int run_rg(const char *root, const grep_case *gc, bool caseless, lines *out)
{
    const char *argv[32];
    int pipefd[2];

    rg_args(gc, caseless, argv);
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(pipefd[1], 1);
        dup2(null, 2);
        close(pipefd[0]);
        close(pipefd[1]);
        if (chdir(root) < 0)
            _exit(127);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(pipefd[1]);
    /* Line by line as it comes; past max_matches, read and dropped. */
    bytes pending = {0};
    char chunk[65536];
    size_t matches = 0;
    bool taking = true;
    for (;;) {
        ssize_t got = read(pipefd[0], chunk, sizeof(chunk));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (!taking)
            continue;
        add(&pending, chunk, (size_t)got);
        size_t done = 0;
        for (char *nl; taking && (nl = memchr(pending.p + done, '\n', pending.n - done)) != NULL;) {
            taking = take_rg_line(pending.p + done, (size_t)(nl - pending.p) - done, out, &matches);
            done = (size_t)(nl - pending.p) + 1;
        }
        memmove(pending.p, pending.p + done, pending.n - done);
        pending.n -= done;
    }
    if (taking && pending.n > 0)
        take_rg_line(pending.p, pending.n, out, &matches);
    free(pending.p);
    close(pipefd[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static char *grep_params(const grep_case *gc, bool caseless)
{
    json_t *p = json_pack("{s:s, s:I}", "pattern", gc->pattern, "max_matches",
                          (json_int_t)max_matches);

    if (caseless)
        json_object_set_new(p, "case_insensitive", json_true());
    if (gc->flags & F)
        json_object_set_new(p, "fixed_strings", json_true());
    if (gc->flags & (C1 | C3))
        json_object_set_new(p, "context", json_integer(gc->flags & C1 ? 1 : 3));
    if (gc->flags & EXT)
        json_object_set_new(p, "extensions", json_pack("[s,s]", "c", "h"));
    if (gc->flags & DOCS)
        json_object_set_new(p, "paths", json_pack("[s]", "docs"));
    char *text = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    return text;
}

/* Runs fs.grep on both backends; returns its status, its lines in *out.
 * What is wrong whatever rg prints (the backends differ, lines were
 * skipped) goes to `failures`. */
static int run_ours(corpus *c, jpt_files *dir, const char *params, lines *out, bytes *failures)
{
    char *a = NULL, *b = NULL;
    int rc = jpt_files_grep(dir, params, &a);
    int rc_mem = c->mem != NULL ? jpt_files_grep(c->mem, params, &b) : rc;

    assert_int_equal(rc, rc_mem);
    if (rc != JPT_OK)
        return rc;
    if (b != NULL && strcmp(a, b) != 0)
        addf(failures, "%s: the directory and memory backends differ:\n  %.300s\n  %.300s\n",
             params, a, b);
    json_t *r = json_loads(a, JSON_ALLOW_NUL, NULL), *file, *line;
    size_t i, j;
    assert_non_null(r);
    if (json_object_get(r, "skipped") != NULL) {
        char *skipped = json_dumps(json_object_get(r, "skipped"), JSON_COMPACT);
        addf(failures, "%s: lines skipped: %.300s\n", params, skipped);
        free(skipped);
    }
    json_array_foreach(json_object_get(r, "matches"), i, file)
    {
        json_t *path = json_object_get(file, "path");
        json_array_foreach(json_object_get(file, "lines"), j, line)
        {
            json_t *content = json_object_get(line, "content");
            add_line(out, json_string_value(path), json_string_length(path),
                     (long long)json_integer_value(json_object_get(line, "line_number")),
                     json_is_true(json_object_get(line, "is_match")) ? 'm' : 'c',
                     json_string_value(content), json_string_length(content));
        }
    }
    json_decref(r);
    jpt_free(a);
    jpt_free(b);
    return JPT_OK;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of `a` that `b` lacks, up to 12 of them, into `msg`. */
static size_t missing(const lines *a, const lines *b, bytes *msg, const char *who)
{
    char **sorted = malloc((b->n + 1) * sizeof(char *));
    size_t count = 0;

    if (b->n > 0)
        memcpy(sorted, b->v, b->n * sizeof(char *));
    qsort(sorted, b->n, sizeof(char *), compare_strings);
    for (size_t i = 0; i < a->n; i++)
        if (bsearch(&a->v[i], sorted, b->n, sizeof(char *), compare_strings) == NULL &&
            count++ < 12)
            addf(msg, "  only %s: %.300s\n", who, a->v[i]);
    free(sorted);
    return count;
}

/* Whether the lines are the same, in the same order; if not, says how
 * they differ in `msg`. */
static bool compare(const char *params, const lines *rg, const lines *ours, bytes *msg)
{
    bytes diff = {0};
    size_t only_rg = missing(rg, ours, &diff, "rg -P");
    size_t only_us = missing(ours, rg, &diff, "fs.grep");

    if (only_rg > 0 || only_us > 0) {
        addf(msg, "%s: %zu lines only rg -P prints, %zu only fs.grep (of %zu and %zu):\n",
             params, only_rg, only_us, rg->n, ours->n);
        add(msg, diff.p, diff.n);
        free(diff.p);
        return false;
    }
    for (size_t i = 0; i < rg->n; i++)
        if (strcmp(rg->v[i], ours->v[i]) != 0) {
            addf(msg, "%s: the same lines in another order; at %zu rg -P has\n  %.300s\n"
                 "fs.grep has\n  %.300s\n", params, i, rg->v[i], ours->v[i]);
            return false;
        }
    return true;
}

static void same_lines_as_rg_pcre2(void **state)
{
    corpus c = {0};
    char *base = fu_tempdir();
    jpt_files *dir;
    size_t ran = 0, refused = 0, compared = 0, failed = 0;
    bytes failures = {0};

    (void)state;
    if (JPT_TEST_RG[0] == '\0' || access(JPT_TEST_RG, X_OK) != 0) {
        fu_rmtree(base);
        free(base);
        skip(); /* ripgrep is not installed */
    }
    const char *tree = getenv("JPT_GREP_RG_TREE");
    if (tree != NULL) {
        /* A tree of one's own (/usr/include): the first matches of each
         * case, no context (rg's after a last match would differ). */
        snprintf(c.root, sizeof(c.root), "%s", tree);
        max_matches = 100000;
    } else {
        snprintf(c.root, sizeof(c.root), "%s/root", base);
        fu_mkdir(base, "root");
        assert_int_equal(jpt_files_new_memory(&c.mem), JPT_OK);
        make_corpus(&c);
    }
    assert_int_equal(jpt_files_open_dir(c.root, 0, &dir), JPT_OK);
    /* Under valgrind (JPT_TEST_SLOWDOWN), which checks memory, not
     * answers: issue 16's cases and every fourth other. */
    bool slow = getenv("JPT_TEST_SLOWDOWN") != NULL;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        for (int pass = 0; pass < 2; pass++) {
            const grep_case *gc = &cases[k];
            if ((slow && k >= ISSUE_CASES && k % 4 != 0) ||
                (tree != NULL && (gc->flags & (C1 | C3 | EXT | DOCS))))
                continue;
            bool caseless = pass == 1 || (gc->flags & I);
            if (pass == 1 && !(gc->flags & BOTH))
                continue;
            lines theirs = {0}, ours = {0};
            char *params = grep_params(gc, caseless);
            size_t before = failures.n;
            int rg_status = run_rg(c.root, gc, caseless, &theirs);
            int rc = run_ours(&c, dir, params, &ours, &failures);
            ran++;
            if (rg_status == 2 && theirs.n == 0) {
                /* rg refused the pattern. */
                if (rc != JPT_ERR_INVALID)
                    addf(&failures, "%s: rg -P refuses it, fs.grep gives %d\n", params, rc);
                refused++;
            } else if (rc != JPT_OK || rg_status > 1) {
                addf(&failures, "%s: fs.grep gives %d (%s) where rg -P exits %d with %zu lines\n",
                     params, rc, jpt_files_errmsg(dir), rg_status, theirs.n);
            } else {
                compare(params, &theirs, &ours, &failures);
                compared += theirs.n;
            }
            failed += failures.n > before;
            free_lines(&theirs);
            free_lines(&ours);
            free(params);
        }
    if (failed > 0) {
        /* cmocka cuts long messages: the cases go to stderr whole. */
        fwrite(failures.p, 1, failures.n, stderr);
        fail_msg("fs.grep and rg -P differ in %zu of %zu cases (above)", failed, ran);
    }
    print_message("fs.grep and rg -P agree on %zu cases (%zu patterns refused by both), "
                  "%zu lines, over %s (%zu files of %zu bytes made)\n", ran, refused, compared,
                  tree != NULL ? tree : "the corpus", c.files, c.bytes);
    jpt_files_free(dir);
    jpt_files_free(c.mem);
    fu_rmtree(base);
    free(base);
    free(failures.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_lines_as_rg_pcre2),
    };

    return TU_RUN(tests);
}
