/* fs.grep: exact results on small trees (directory and memory backends
 * alike), context, the params, the cap, binary files, what the walk skips,
 * stepping in slices, the matcher's literal fast path and limits, and the
 * same matches as ripgrep on a generated tree where `rg` is installed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files/files.h"
#include "test-files-util.h"

typedef struct fixture {
    char *base;
    char root[4096];
    jpt_files *dir, *mem;
} fixture;

/* The same file in the directory and in memory. */
static void put(fixture *fx, const char *rel, const char *data, size_t n)
{
    fu_write_n(fx->root, rel, data, n);
    assert_int_equal(jpt_files_write(fx->mem, rel, data, n), JPT_OK);
}

static void put_s(fixture *fx, const char *rel, const char *text)
{
    put(fx, rel, text, strlen(text));
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));

    fx->base = fu_tempdir();
    snprintf(fx->root, sizeof(fx->root), "%s/root", fx->base);
    fu_mkdir(fx->base, "root");
    assert_int_equal(jpt_files_new_memory(&fx->mem), JPT_OK);
    put_s(fx, "src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    put_s(fx, "src/lib.rs", "pub fn lib() {}\n// main here\n");
    put_s(fx, "README.md", "main docs\r\nno newline at the end: main");
    put_s(fx, ".hidden/h.rs", "fn main_hidden() {}\n");
    put_s(fx, ".git/config", "main\n");
    put_s(fx, "a-b", "main\n");
    put_s(fx, "a/b", "main\n");
    put(fx, "bin.dat", "main\0binary\n", 12);
    assert_int_equal(jpt_files_open_dir(fx->root, 0, &fx->dir), JPT_OK);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;

    jpt_files_free(fx->dir);
    jpt_files_free(fx->mem);
    fu_rmtree(fx->base);
    free(fx->base);
    free(fx);
    return 0;
}

/* fs.grep on both backends: the same result, which must be `expected`. */
static void expect_grep(fixture *fx, const char *params, const char *expected)
{
    char *a = NULL, *b = NULL;

    if (jpt_files_grep(fx->dir, params, &a) != JPT_OK)
        fail_msg("grep %s: %s", params, jpt_files_errmsg(fx->dir));
    assert_int_equal(jpt_files_grep(fx->mem, params, &b), JPT_OK);
    tu_assert_json_equal(a, expected);
    tu_assert_json_equal(b, expected);
    jpt_free(a);
    jpt_free(b);
}

static void expect_grep_error(fixture *fx, const char *params, int status, const char *message)
{
    char *out = (char *)&out;

    assert_int_equal(jpt_files_grep(fx->dir, params, &out), status);
    assert_null(out);
    assert_string_equal(jpt_files_errmsg(fx->dir), message);
    assert_int_equal(jpt_files_grep(fx->mem, params, &out), status);
    assert_string_equal(jpt_files_errmsg(fx->mem), message);
}

#define LINE(n, text, m) "{\"line_number\":" #n ",\"content\":\"" text "\",\"is_match\":" #m "}"

static void finds_every_match_in_walk_order(void **state)
{
    fixture *fx = *state;

    /* Depth first, each directory's entries sorted: ".hidden" < "README.md"
     * < "a" < "a-b" ("a/b" before "a-b", as rg --sort path has it); .git
     * and the binary file skipped; hidden files searched. */
    expect_grep(fx, "{\"pattern\":\"main\"}",
                "{\"matches\":["
                "{\"path\":\".hidden/h.rs\",\"lines\":[" LINE(1, "fn main_hidden() {}", true) "]},"
                "{\"path\":\"README.md\",\"lines\":[" LINE(1, "main docs\\r", true) ","
                LINE(2, "no newline at the end: main", true) "]},"
                "{\"path\":\"a/b\",\"lines\":[" LINE(1, "main", true) "]},"
                "{\"path\":\"a-b\",\"lines\":[" LINE(1, "main", true) "]},"
                "{\"path\":\"src/lib.rs\",\"lines\":[" LINE(2, "// main here", true) "]},"
                "{\"path\":\"src/main.rs\",\"lines\":[" LINE(1, "fn main() {", true) "]}"
                "],\"truncated\":false}");
}

static void context_lines_surround_matches(void **state)
{
    fixture *fx = *state;

    /* D11's own example. */
    expect_grep(fx, "{\"pattern\":\"fn main\",\"paths\":[\"src\"],\"extensions\":[\"rs\"],"
                    "\"context\":2}",
                "{\"matches\":[{\"path\":\"src/main.rs\",\"lines\":["
                LINE(1, "fn main() {", true) ","
                LINE(2, "    println!(\\\"hello\\\");", false) ","
                LINE(3, "}", false) "]}],\"truncated\":false}");
    put_s(fx, "ctx.txt", "1\n2 x\n3\n4\n5\n6 x\n7\n8 x\n9\n10\n11\n12\n13 x\n");
    expect_grep(fx, "{\"pattern\":\"x\",\"paths\":[\"ctx.txt\"],\"context\":1}",
                "{\"matches\":[{\"path\":\"ctx.txt\",\"lines\":["
                LINE(1, "1", false) "," LINE(2, "2 x", true) "," LINE(3, "3", false) ","
                LINE(5, "5", false) "," LINE(6, "6 x", true) "," LINE(7, "7", false) ","
                LINE(8, "8 x", true) "," LINE(9, "9", false) ","
                LINE(12, "12", false) "," LINE(13, "13 x", true)
                "]}],\"truncated\":false}");
}

static void params_narrow_the_search(void **state)
{
    fixture *fx = *state;

    expect_grep(fx, "{\"pattern\":\"MAIN\",\"case_insensitive\":true,\"extensions\":[\".md\"]}",
                "{\"matches\":[{\"path\":\"README.md\",\"lines\":["
                LINE(1, "main docs\\r", true) "," LINE(2, "no newline at the end: main", true)
                "]}],\"truncated\":false}");
    put_s(fx, "dots.txt", "a.b\naxb\n");
    expect_grep(fx, "{\"pattern\":\"a.b\",\"paths\":[\"dots.txt\"]}",
                "{\"matches\":[{\"path\":\"dots.txt\",\"lines\":[" LINE(1, "a.b", true) ","
                LINE(2, "axb", true) "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"a.b\",\"paths\":[\"dots.txt\"],\"fixed_strings\":true}",
                "{\"matches\":[{\"path\":\"dots.txt\",\"lines\":[" LINE(1, "a.b", true)
                "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"^\\\\s+println\",\"paths\":[\"src/main.rs\", \"a\"]}",
                "{\"matches\":[{\"path\":\"src/main.rs\",\"lines\":["
                LINE(2, "    println!(\\\"hello\\\");", true) "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"nothing matches this\"}", "{\"matches\":[],\"truncated\":false}");
}

static void the_cap_truncates(void **state)
{
    fixture *fx = *state;

    expect_grep(fx, "{\"pattern\":\"main\",\"max_matches\":2}",
                "{\"matches\":["
                "{\"path\":\".hidden/h.rs\",\"lines\":[" LINE(1, "fn main_hidden() {}", true) "]},"
                "{\"path\":\"README.md\",\"lines\":[" LINE(1, "main docs\\r", true) "]}"
                "],\"truncated\":true}");
    /* Exactly as many as the cap: not truncated. */
    expect_grep(fx, "{\"pattern\":\"main\",\"max_matches\":7}",
                "{\"matches\":["
                "{\"path\":\".hidden/h.rs\",\"lines\":[" LINE(1, "fn main_hidden() {}", true) "]},"
                "{\"path\":\"README.md\",\"lines\":[" LINE(1, "main docs\\r", true) ","
                LINE(2, "no newline at the end: main", true) "]},"
                "{\"path\":\"a/b\",\"lines\":[" LINE(1, "main", true) "]},"
                "{\"path\":\"a-b\",\"lines\":[" LINE(1, "main", true) "]},"
                "{\"path\":\"src/lib.rs\",\"lines\":[" LINE(2, "// main here", true) "]},"
                "{\"path\":\"src/main.rs\",\"lines\":[" LINE(1, "fn main() {", true) "]}"
                "],\"truncated\":false}");
}

static void binary_files_as_ripgrep_reads_them(void **state)
{
    fixture *fx = *state;
    size_t n = 200 * 1024;
    char *data = malloc(n);

    /* A match in the first block, a NUL 100 KiB in: the first block's
     * match is kept, the rest of the file not searched. */
    memset(data, 'z', n);
    memcpy(data, "late\n", 5);
    for (size_t i = 80; i < n; i += 80)
        data[i] = '\n';
    data[100 * 1024] = '\0';
    memcpy(data + 150 * 1024 + 1, "late", 4);
    put(fx, "late.bin", data, n);
    free(data);
    put(fx, "early.bin", "late\n\0", 6);
    put_s(fx, "bad-utf8.txt", "late \xff\xfe ok\n");
    expect_grep(fx, "{\"pattern\":\"late\"}",
                "{\"matches\":["
                "{\"path\":\"bad-utf8.txt\",\"lines\":[" LINE(1, "late \xef\xbf\xbd\xef\xbf\xbd ok", true) "]},"
                "{\"path\":\"late.bin\",\"lines\":[" LINE(1, "late", true) "]}"
                "],\"truncated\":false}");
}

static void walk_skips_symlinks_but_named_paths_follow_them(void **state)
{
    fixture *fx = *state;

    fu_symlink(fx->root, "z-link.rs", "src/main.rs");
    fu_symlink(fx->root, "z-dir", "src");
    expect_grep(fx, "{\"pattern\":\"println\"}",
                "{\"matches\":[{\"path\":\"src/main.rs\",\"lines\":["
                LINE(2, "    println!(\\\"hello\\\");", true) "]}],\"truncated\":false}");
    char *out;
    assert_int_equal(jpt_files_grep(fx->dir, "{\"pattern\":\"println\",\"paths\":[\"z-dir\"]}",
                                    &out), JPT_OK);
    tu_assert_json_equal(out, "{\"matches\":[{\"path\":\"z-dir/main.rs\",\"lines\":["
                              LINE(2, "    println!(\\\"hello\\\");", true)
                              "]}],\"truncated\":false}");
    jpt_free(out);
    fu_symlink(fx->root, "out", "../..");
    assert_int_equal(jpt_files_grep(fx->dir, "{\"pattern\":\"x\",\"paths\":[\"out\"]}", &out),
                     JPT_ERR_DENIED);
    assert_string_equal(jpt_files_errmsg(fx->dir), "fs.grep 'out': denied: the path leads "
                        "outside the root through a symlink");
}

static void bad_params_are_refused(void **state)
{
    fixture *fx = *state;

    expect_grep_error(fx, "{}", JPT_ERR_INVALID,
                      "fs.grep: params.pattern must be a string, not missing");
    expect_grep_error(fx, "{\"pattern\":\"(\"}", JPT_ERR_INVALID,
                      "fs.grep: the pattern does not compile at offset 1: missing closing "
                      "parenthesis");
    expect_grep_error(fx, "{\"pattern\":\"a\\nb\"}", JPT_ERR_INVALID,
                      "fs.grep: the pattern holds a line break; lines are searched one at a time");
    expect_grep_error(fx, "{\"pattern\":\"a\",\"context\":101}", JPT_ERR_INVALID,
                      "fs.grep: params.context must be an integer from 0 to 100");
    expect_grep_error(fx, "{\"pattern\":\"a\",\"max_matches\":0}", JPT_ERR_INVALID,
                      "fs.grep: params.max_matches must be a positive integer");
    expect_grep_error(fx, "{\"pattern\":\"a\",\"paths\":\"src\"}", JPT_ERR_INVALID,
                      "fs.grep: params.paths must be an array of strings");
    expect_grep_error(fx, "{\"pattern\":\"a\",\"paths\":[\"../x\"]}", JPT_ERR_INVALID,
                      "fs.grep '../x': '..' is not allowed: paths stay beneath the root");
    expect_grep_error(fx, "{\"pattern\":\"a\",\"extensions\":[\"\"]}", JPT_ERR_INVALID,
                      "fs.grep: params.extensions must hold names like \"rs\" or \".rs\"");
    expect_grep_error(fx, "{\"pattern\":\"a\",\"fixed_strings\":1}", JPT_ERR_INVALID,
                      "fs.grep: params.fixed_strings must be a boolean");
    expect_grep_error(fx, "{\"pattern\":\"a\",\"paths\":[\"src\",\"nope\"]}", JPT_ERR_NOT_FOUND,
                      "fs.grep 'nope': not found");
}

/* The guard hides what the policy would deny. */
static int hide_env(void *ud, int access, const char *path, char *msg, size_t cap)
{
    (void)ud;
    (void)access;
    if (strcmp(path, ".env") != 0 && strcmp(path, "secrets") != 0)
        return JPT_OK;
    snprintf(msg, cap, "sensitive");
    return JPT_ERR_DENIED;
}

typedef struct answer {
    int status, calls;
    char *json;
    char message[512];
} answer;

static void record(void *ud, int status, const char *result, size_t len, const char *message)
{
    answer *a = ud;

    a->calls++;
    a->status = status;
    a->json = result != NULL ? strndup(result, len) : NULL;
    if (result != NULL)
        assert_int_equal(strlen(result), len);
    snprintf(a->message, sizeof(a->message), "%s", message != NULL ? message : "");
}

/* Submits fs.grep and steps it with `budget_ns` (1: a step does one block
 * or one file) until done; returns the steps taken. */
static int grep_in_steps(jpt_files *f, const char *params_text, const jpt__files_opts *opts,
                         uint64_t budget_ns, answer *a)
{
    json_t *params = json_loads(params_text, 0, NULL);
    jpt__files_call *c = NULL;
    int steps = 0;

    memset(a, 0, sizeof(*a));
    assert_int_equal(jpt__files_submit(f, "fs.grep", params, opts, record, a, &c), JPT_OK);
    json_decref(params);
    assert_non_null(c);
    assert_true(jpt__files_call_needs_step(c));
    assert_int_equal(a->calls, 0);
    do
        steps++;
    while (jpt__files_step(c, budget_ns) == 1);
    assert_int_equal(a->calls, 1);
    return steps;
}

static void the_guard_hides_paths(void **state)
{
    fixture *fx = *state;
    jpt__files_opts opts = {0, 0, hide_env, NULL};
    answer a;

    put_s(fx, ".env", "TOKEN=main\n");
    put_s(fx, "secrets/key", "main\n");
    grep_in_steps(fx->dir, "{\"pattern\":\"TOKEN|main\",\"paths\":[\"a\",\"secrets/key\"]}",
                  &opts, 0, &a);
    assert_int_equal(a.status, JPT_OK);
    free(a.json);
    grep_in_steps(fx->dir, "{\"pattern\":\"TOKEN\"}", &opts, 0, &a);
    assert_int_equal(a.status, JPT_OK);
    assert_string_equal(a.json, "{\"matches\":[],\"truncated\":false}");
    free(a.json);
    grep_in_steps(fx->dir, "{\"pattern\":\"TOKEN\",\"paths\":[\".env\"]}", &opts, 0, &a);
    assert_int_equal(a.status, JPT_ERR_DENIED);
    assert_string_equal(a.message, "fs.grep '.env': sensitive");
    grep_in_steps(fx->mem, "{\"pattern\":\"TOKEN\"}", &opts, 0, &a);
    assert_string_equal(a.json, "{\"matches\":[],\"truncated\":false}");
    free(a.json);
}

static void stepping_gives_the_same_result(void **state)
{
    fixture *fx = *state;
    size_t n = 600 * 1024;
    char *big = malloc(n), *line = big;
    answer whole, sliced;

    /* Lines of every length, one 100 KiB long, matches every 97 lines: the
     * blocks split lines and context everywhere. */
    for (int i = 0; line < big + n - 120 * 1024; i++) {
        int len = i == 500 ? 100 * 1024 : (i * 37) % 150;
        memset(line, 'a' + i % 26, (size_t)len);
        if (i % 97 == 0)
            memcpy(line, "needle", len >= 6 ? 6 : (size_t)len);
        line += len;
        *line++ = '\n';
    }
    put(fx, "big.txt", big, (size_t)(line - big));
    free(big);
    for (int i = 0; i < 50; i++) {
        char name[32];
        snprintf(name, sizeof(name), "many/f%02d.txt", i);
        put_s(fx, name, i % 3 ? "hay\nneedle\nhay\n" : "hay\n");
    }
    const char *params = "{\"pattern\":\"needle\",\"context\":3,\"max_matches\":100000}";
    jpt_files *backends[] = {fx->dir, fx->mem};
    for (int b = 0; b < 2; b++) {
        assert_int_equal(grep_in_steps(backends[b], params, NULL, 0, &whole), 1);
        int steps = grep_in_steps(backends[b], params, NULL, 1, &sliced);
        assert_true(steps > 50);
        assert_int_equal(whole.status, JPT_OK);
        assert_string_equal(sliced.json, whole.json);
        free(whole.json);
        free(sliced.json);
    }
}

static void cancelling_a_grep_in_flight(void **state)
{
    fixture *fx = *state;
    json_t *params = json_pack("{s:s}", "pattern", "main");
    jpt__files_call *c = NULL;
    answer a = {0, 0, NULL, ""};

    assert_int_equal(jpt__files_submit(fx->dir, "fs.grep", params, NULL, record, &a, &c), JPT_OK);
    assert_int_equal(jpt__files_step(c, 1), 1);
    jpt__files_cancel(c);
    assert_int_equal(a.calls, 0);
    json_decref(params);
}

/* ---- The matcher ----------------------------------------------------------------------- */

static int find(jpt__matcher *m, const char *text, char *line)
{
    const char *ls, *le;
    int rc = jpt__matcher_find(m, text, text + strlen(text), &ls, &le);

    if (rc == 1) {
        memcpy(line, ls, (size_t)(le - ls));
        line[le - ls] = '\0';
    }
    return rc;
}

static jpt__matcher *matcher(const char *pattern, bool fixed, bool caseless)
{
    jpt__errbuf e;
    jpt__matcher *m;

    assert_int_equal(jpt__matcher_new(pattern, strlen(pattern), fixed, caseless, &e, &m), JPT_OK);
    return m;
}

static void matcher_uses_a_literal_when_every_match_has_one(void **state)
{
    static const struct {
        const char *pattern;
        bool literal;
    } cases[] = {
        {"fn main", true},         {"struct \\w+_ops", true}, {"a|b", false},
        {"(?i)abc", false},        {"x?y*", false},           {"[abc]+", false},
        {"foo(bar)?baz", true},    {"\\.h$", true},           {"", false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        jpt__matcher *m = matcher(cases[i].pattern, false, false);
        if (jpt__matcher_has_literal(m) != cases[i].literal)
            fail_msg("pattern '%s': literal %d", cases[i].pattern, !cases[i].literal);
        jpt__matcher_free(m);
    }
}

static void matcher_finds_the_same_lines_with_and_without_jit(void **state)
{
    static const char *const patterns[] = {
        "needle", "ne+dle", "^\\s*needle$", "\\bneedle\\b", "(?i)NEEDLE", "needle\\s+x",
        "e\\s", "", "dle$", "x*",
    };
    const char *text = "hay\n  needle\nneedle\n  x\nNEEDLE here\nend needle";
    char a[256], b[256];

    (void)state;
    for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
        jpt__matcher *jit = matcher(patterns[i], false, false);
        jpt__matcher *interp = matcher(patterns[i], false, false);
        jpt__matcher_disable_jit(interp);
        const char *p = text;
        for (;;) {
            const char *ls, *le, *ls2, *le2;
            int r1 = jpt__matcher_find(jit, p, text + strlen(text), &ls, &le);
            int r2 = jpt__matcher_find(interp, p, text + strlen(text), &ls2, &le2);
            assert_int_equal(r1, r2);
            if (r1 != 1)
                break;
            assert_ptr_equal(ls, ls2);
            assert_ptr_equal(le, le2);
            if (*le == '\0')
                break;
            p = le + 1;
        }
        jpt__matcher_free(jit);
        jpt__matcher_free(interp);
    }
    /* A match that would cross a line end is checked on its line alone. */
    jpt__matcher *m = matcher("needle\\s+x", false, false);
    assert_int_equal(find(m, "needle\n  x\n", a), 0);
    assert_int_equal(find(m, "needle\n  x\nneedle   x\n", a), 1);
    assert_string_equal(a, "needle   x");
    jpt__matcher_free(m);
    m = matcher("A.B", true, true);
    assert_int_equal(find(m, "axb\nq a.b q\n", b), 1);
    assert_string_equal(b, "q a.b q");
    jpt__matcher_free(m);
}

/* A caseless literal is searched in both ASCII cases, and Unicode's other
 * spellings of k and s (KELVIN SIGN, LONG S: other lengths in UTF-8) are
 * still found. */
static void caseless_literals_fold_as_unicode_does(void **state)
{
    char line[256];

    (void)state;
    jpt__matcher *m = matcher("copyright", false, true);
    assert_true(jpt__matcher_has_literal(m));
    assert_int_equal(find(m, "none\n(C) COPYRIGHT 2024\n", line), 1);
    assert_string_equal(line, "(C) COPYRIGHT 2024");
    jpt__matcher_free(m);
    m = matcher("kelvin", false, true);
    assert_int_equal(find(m, "x\nthe \xe2\x84\xaa" "elvin scale\n", line), 1);
    assert_string_equal(line, "the \xe2\x84\xaa" "elvin scale");
    jpt__matcher_free(m);
    m = matcher("task force", true, true);
    assert_int_equal(find(m, "TA\xc5\xbfK FORCE\n", line), 1);
    jpt__matcher_free(m);
    m = matcher("ks", false, true); /* nothing to anchor on: the regex alone */
    assert_false(jpt__matcher_has_literal(m));
    assert_int_equal(find(m, "\xe2\x84\xaa\xc5\xbf\n", line), 1);
    jpt__matcher_free(m);
}

static void runaway_patterns_hit_the_limits(void **state)
{
    char text[64];

    (void)state;
    memset(text, 'a', 40);
    strcpy(text + 40, "!\n");
    jpt__matcher *m = matcher("(a+)+$", false, false);
    char line[64];
    assert_int_equal(find(m, text, line), JPT_ERR_LIMIT);
    jpt__matcher_disable_jit(m);
    assert_int_equal(find(m, text, line), JPT_ERR_LIMIT);
    jpt__matcher_free(m);
}

/* ---- The same matches as ripgrep ----------------------------------------------------------- */

static unsigned long long rnd_state = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (unsigned)(rnd_state % n);
}

static const char *const words[] = {
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "Alpha", "BETA",
    "a.b", "axb", "return", "struct", "foo_ops", "x", "123", "4567", "\t", "  ", "élan",
    "naïve", "\xff", "Δelta", "_", "(", ")", "[", "]", "$", "#include", "<sys/types.h>",
};

static void random_file(const char *root, const char *rel)
{
    size_t cap = 1 << 20, n = 0;
    char *data = malloc(cap);
    unsigned kind = rnd(20);
    unsigned lines = kind == 3 ? 4000 : rnd(400);

    for (unsigned l = 0; l < lines; l++) {
        unsigned k = kind == 0 && l == 3 ? 9000 : rnd(12);
        for (unsigned w = 0; w < k && n + 64 < cap; w++) {
            const char *word = words[rnd(sizeof(words) / sizeof(words[0]))];
            n += (size_t)sprintf(data + n, "%s%s", word, rnd(3) ? " " : "");
        }
        if (n + 3 >= cap)
            break;
        if (rnd(10) == 0)
            data[n++] = '\r';
        data[n++] = '\n';
    }
    if (kind == 1 && n > 0)
        n--; /* no final newline */
    if (kind == 2 || (kind == 3 && n > 0))
        data[rnd((unsigned)n)] = '\0'; /* binary somewhere: early or late */
    fu_write_n(root, rel, data, n);
    free(data);
}

static void make_tree(const char *root)
{
    static const char *const dirs[] = {"", "src", "src/deep", "src/deep/er", ".cfg", "docs",
                                       "a", "a-b", "a.b"};
    static const char *const names[] = {"main.c", "util.h", "lib.rs", "notes.txt", ".hidden",
                                        "README", "x.c", "Makefile"};

    for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++)
        for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
            char rel[256];
            if (rnd(4) == 0)
                continue;
            snprintf(rel, sizeof(rel), "%s%s%s", dirs[d], dirs[d][0] ? "/" : "", names[f]);
            random_file(root, rel);
        }
    random_file(root, ".git/config");
    random_file(root, "src/.git");
    fu_symlink(root, "src/link.c", "main.c");
    fu_symlink(root, "linkdir", "src");
}

/* "path:line:m" for each match rg reports and "path:line:c" for each
 * context line, in its order. */
static char *rg_matches(const char *root, const char *const extra[])
{
    const char *argv[32] = {JPT_TEST_RG, "--no-ignore", "--hidden", "-g", "!.git",
                            "--sort", "path", "-n", "--no-heading", "--with-filename",
                            "--null", "--no-config", "--color", "never", "-P"};
    size_t argc = 15;
    int pipefd[2];

    for (size_t i = 0; extra[i] != NULL; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        close(pipefd[1]);
        if (chdir(root) < 0)
            _exit(127);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(pipefd[1]);
    size_t cap = 1 << 16, n = 0;
    char *raw = malloc(cap);
    for (;;) {
        if (n + 4096 > cap)
            raw = realloc(raw, cap *= 2);
        ssize_t got = read(pipefd[0], raw + n, cap - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(pipefd[0]);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) <= 1);
    /* path NUL line ':' content '\n'; rg's warnings about binary files
     * are lines without the NUL. */
    char *out = malloc(n + 1), *w = out;
    for (size_t i = 0; i < n;) {
        char *nl = memchr(raw + i, '\n', n - i);
        size_t end = nl != NULL ? (size_t)(nl - raw) : n;
        char *nul = memchr(raw + i, '\0', end - i);
        /* "N:" starts a matching line, "N-" a context line. */
        char *sep = nul + 1;
        while (nul != NULL && sep < raw + end && *sep >= '0' && *sep <= '9')
            sep++;
        if (nul != NULL && sep < raw + end && (*sep == ':' || *sep == '-'))
            w += sprintf(w, "%.*s:%.*s:%c\n", (int)(nul - raw - (long)i), raw + i,
                         (int)(sep - nul - 1), nul + 1, *sep == ':' ? 'm' : 'c');
        i = end + 1;
    }
    *w = '\0';
    free(raw);
    return out;
}

/* "path:line:m" for each matching line of our grep, "path:line:c" for
 * each context line, in order. */
static char *our_matches(jpt_files *f, const char *params)
{
    char *json;

    if (jpt_files_grep(f, params, &json) != JPT_OK)
        fail_msg("grep %s: %s", params, jpt_files_errmsg(f));
    json_t *r = json_loads(json, 0, NULL), *file, *line;
    size_t i, j;
    size_t cap = strlen(json) + 1;
    char *out = malloc(cap), *w = out;
    json_array_foreach(json_object_get(r, "matches"), i, file)
    {
        json_array_foreach(json_object_get(file, "lines"), j, line)
        {
            w += sprintf(w, "%s:%lld:%c\n", json_string_value(json_object_get(file, "path")),
                         (long long)json_integer_value(json_object_get(line, "line_number")),
                         json_is_true(json_object_get(line, "is_match")) ? 'm' : 'c');
        }
    }
    *w = '\0';
    assert_false(json_is_true(json_object_get(r, "truncated")));
    json_decref(r);
    jpt_free(json);
    return out;
}

static void same_matches_as_ripgrep(void **state)
{
    static const struct {
        const char *params;
        const char *rg[8];
    } cases[] = {
        {"{\"pattern\":\"alpha\"}", {"-e", "alpha", NULL}},
        {"{\"pattern\":\"beta gamma\"}", {"-e", "beta gamma", NULL}},
        {"{\"pattern\":\"\\\\bdelta\\\\w*\"}", {"-e", "\\bdelta\\w*", NULL}},
        {"{\"pattern\":\"^epsilon\"}", {"-e", "^epsilon", NULL}},
        {"{\"pattern\":\"zeta$\"}", {"-e", "zeta$", NULL}},
        {"{\"pattern\":\"[0-9]{3}\"}", {"-e", "[0-9]{3}", NULL}},
        {"{\"pattern\":\"ALPHA\",\"case_insensitive\":true}", {"-i", "-e", "ALPHA", NULL}},
        {"{\"pattern\":\"a.b\",\"fixed_strings\":true}", {"-F", "-e", "a.b", NULL}},
        {"{\"pattern\":\"struct foo_ops|return\",\"extensions\":[\"c\",\"h\"]}",
         {"-g", "*.c", "-g", "*.h", "-e", "struct foo_ops|return"}},
        {"{\"pattern\":\"[a-z]+ [a-z]+\\\\s+\\\\d\"}", {"-e", "[a-z]+ [a-z]+\\s+\\d", NULL}},
        {"{\"pattern\":\"na.ve|\\u00e9lan\"}", {"-e", "na.ve|élan", NULL}},
        {"{\"pattern\":\"\\\\(\\\\s*\\\\)\"}", {"-e", "\\(\\s*\\)", NULL}},
        {"{\"pattern\":\"gamma\",\"context\":2}", {"-C", "2", "-e", "gamma", NULL}},
        /* (Not "^$": rg 13 reports the first line of a binary file when
         * it is empty and the pattern matches the empty string.) */
        {"{\"pattern\":\"^[a-z]+$\",\"context\":1}", {"-C", "1", "-e", "^[a-z]+$", NULL}},
    };
    char *base = fu_tempdir();
    char root[4096];
    jpt_files *f;

    (void)state;
    if (JPT_TEST_RG[0] == '\0' || access(JPT_TEST_RG, X_OK) != 0) {
        fu_rmtree(base);
        free(base);
        skip(); /* ripgrep is not installed */
    }
    snprintf(root, sizeof(root), "%s/root", base);
    for (int tree = 0; tree < 3; tree++) {
        fu_rmtree(root);
        fu_mkdir(base, "root");
        make_tree(root);
        assert_int_equal(jpt_files_open_dir(root, 0, &f), JPT_OK);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            char params[512];
            snprintf(params, sizeof(params), "%.*s,\"max_matches\":1000000}",
                     (int)strlen(cases[i].params) - 1, cases[i].params);
            char *ours = our_matches(f, params);
            char *theirs = rg_matches(root, cases[i].rg);
            if (strcmp(ours, theirs) != 0) {
                size_t at = 0;
                while (ours[at] == theirs[at])
                    at++;
                while (at > 0 && ours[at - 1] != '\n')
                    at--;
                fail_msg("%s: from here rg found\n%.200s\nfs.grep found\n%.200s", params,
                         theirs + at, ours + at);
            }
            assert_true(strlen(ours) > 0);
            free(ours);
            free(theirs);
        }
        jpt_files_free(f);
    }
    fu_rmtree(base);
    free(base);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(finds_every_match_in_walk_order),
        T(context_lines_surround_matches),
        T(params_narrow_the_search),
        T(the_cap_truncates),
        T(binary_files_as_ripgrep_reads_them),
        T(walk_skips_symlinks_but_named_paths_follow_them),
        T(bad_params_are_refused),
        T(the_guard_hides_paths),
        T(stepping_gives_the_same_result),
        T(cancelling_a_grep_in_flight),
        cmocka_unit_test(matcher_uses_a_literal_when_every_match_has_one),
        cmocka_unit_test(matcher_finds_the_same_lines_with_and_without_jit),
        cmocka_unit_test(caseless_literals_fold_as_unicode_does),
        cmocka_unit_test(runaway_patterns_hit_the_limits),
        cmocka_unit_test(same_matches_as_ripgrep),
    };

    return TU_RUN(tests);
}
