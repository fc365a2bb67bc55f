/* fs.grep: exact results on small trees (directory and memory backends
 * alike), context, the params, the cap, binary files, what the walk skips,
 * stepping in slices; each line judged alone (issue 16 §2), lines past
 * pcre2's limits skipped; the matcher's literal scan and its three ways of
 * finding lines against pcre2 run on each line alone, for random patterns.
 * test-files-grep-rg compares whole greps with ripgrep. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

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

/* Issue 16 §2: the literal scan ended a bracket expression at the ']' of
 * a POSIX class, and then looked for "]+\." or "ascii:]]". */
static void posix_classes_are_whole_items_of_a_class(void **state)
{
    fixture *fx = *state;

    put_s(fx, "v.txt", "version 1.25\nno digits. here\n\xC3\xA9t\xC3\xA9\nint x;\nprint\n"
                       "[[:digit:]]\nq]5\n");
    expect_grep(fx, "{\"pattern\":\"[[:digit:]]+\\\\.[[:digit:]]+\",\"paths\":[\"v.txt\"]}",
                "{\"matches\":[{\"path\":\"v.txt\",\"lines\":[" LINE(1, "version 1.25", true)
                "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"[^[:ascii:]]\",\"paths\":[\"v.txt\"]}",
                "{\"matches\":[{\"path\":\"v.txt\",\"lines\":["
                LINE(3, "\xC3\xA9t\xC3\xA9", true) "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"[[:<:]]int\",\"paths\":[\"v.txt\"]}",
                "{\"matches\":[{\"path\":\"v.txt\",\"lines\":[" LINE(4, "int x;", true)
                "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"[]a[:digit:]]+5\",\"paths\":[\"v.txt\"]}",
                "{\"matches\":[{\"path\":\"v.txt\",\"lines\":[" LINE(1, "version 1.25", true) ","
                LINE(7, "q]5", true) "]}],\"truncated\":false}");
}

/* Issue 16 §2: patterns without a literal ran over blocks of lines, so
 * anchors and lookaround saw the lines around. */
static void each_line_is_judged_alone(void **state)
{
    fixture *fx = *state;

    put_s(fx, "c.c", "int f(void)\n{\n    return 1;\n}\n#define X 1\n  x;y\n");
    expect_grep(fx, "{\"pattern\":\"\\\\A\\\\s+\\\\w\",\"paths\":[\"c.c\"]}",
                "{\"matches\":[{\"path\":\"c.c\",\"lines\":[" LINE(3, "    return 1;", true) ","
                LINE(6, "  x;y", true) "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"\\\\G\\\\s+\\\\w\",\"paths\":[\"c.c\"]}",
                "{\"matches\":[{\"path\":\"c.c\",\"lines\":[" LINE(3, "    return 1;", true) ","
                LINE(6, "  x;y", true) "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"[;{]\\\\z\",\"paths\":[\"c.c\"]}",
                "{\"matches\":[{\"path\":\"c.c\",\"lines\":[" LINE(2, "{", true) ","
                LINE(3, "    return 1;", true) "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"(?<=\\\\n)#\",\"paths\":[\"c.c\"]}",
                "{\"matches\":[],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"}(?=\\\\n)\",\"paths\":[\"c.c\"]}",
                "{\"matches\":[],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\";(?!\\\\s)\",\"paths\":[\"c.c\"]}",
                "{\"matches\":[{\"path\":\"c.c\",\"lines\":[" LINE(3, "    return 1;", true) ","
                LINE(6, "  x;y", true) "]}],\"truncated\":false}");
    /* A '\r' before the '\n' stays in the line, as in rg without --crlf. */
    put_s(fx, "crlf.txt", "a;\r\nb;\n");
    expect_grep(fx, "{\"pattern\":\";$\",\"paths\":[\"crlf.txt\"]}",
                "{\"matches\":[{\"path\":\"crlf.txt\",\"lines\":[" LINE(2, "b;", true)
                "]}],\"truncated\":false}");
}

/* Text is read as ripgrep's decoder gives it to pcre2: invalid UTF-8 as
 * U+FFFD, a leading byte order mark dropped. */
static void text_is_repaired_utf8_without_its_bom(void **state)
{
    fixture *fx = *state;

    put_s(fx, "u.txt", "\xEF\xBB\xBF" "first\nbad \xFF byte\nok\n");
    expect_grep(fx, "{\"pattern\":\"^first\",\"paths\":[\"u.txt\"]}",
                "{\"matches\":[{\"path\":\"u.txt\",\"lines\":[" LINE(1, "first", true)
                "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"d . b\",\"paths\":[\"u.txt\"]}",
                "{\"matches\":[{\"path\":\"u.txt\",\"lines\":["
                LINE(2, "bad \xEF\xBF\xBD byte", true) "]}],\"truncated\":false}");
    expect_grep(fx, "{\"pattern\":\"\\ufffd\",\"paths\":[\"u.txt\"]}",
                "{\"matches\":[{\"path\":\"u.txt\",\"lines\":["
                LINE(2, "bad \xEF\xBF\xBD byte", true) "]}],\"truncated\":false}");
}

/* rg -P reads 3 bytes and then 8 KiB pieces, each checked for a NUL before
 * the lines ending in it are searched. */
static void a_nul_ends_the_file_at_its_piece(void **state)
{
    fixture *fx = *state;
    char data[9000];

    memset(data, 'y', sizeof(data));
    memcpy(data, "hit\n", 4);
    memcpy(data + 8189, "\nhit\n", 5); /* a line ending at 8193, in the second piece */
    for (size_t nul = 8194; nul <= 8195; nul++) {
        data[nul] = '\0';
        put(fx, "n.bin", data, sizeof(data));
        data[nul] = 'y';
        /* At 8194 the NUL is in the piece [3, 8195): nothing; at 8195 it is
         * in the next, so both lines before it are searched. */
        expect_grep(fx, "{\"pattern\":\"^hit$\",\"paths\":[\"n.bin\"]}",
                    nul == 8194 ? "{\"matches\":[],\"truncated\":false}"
                                : "{\"matches\":[{\"path\":\"n.bin\",\"lines\":["
                                  LINE(1, "hit", true) "," LINE(3, "hit", true)
                                  "]}],\"truncated\":false}");
    }
}

/* A line that needs more than pcre2's match limit is skipped and listed;
 * the others are still searched (the whole grep failed before). */
static void lines_past_the_match_limit_are_skipped(void **state)
{
    fixture *fx = *state;
    char runaway[64];

    memset(runaway, 'a', 40);
    strcpy(runaway + 40, "!\n");
    char *text = malloc(200 * 64);
    strcpy(text, "ok 1\n");
    strcat(text, runaway);
    strcat(text, "ok 3\n");
    put_s(fx, "limit.txt", text);
    /* Line-local (the regex over many lines first) and line by line. */
    static const char *const patterns[] = {"(a+)+$|ok", "(?<!x)(a+)+$|ok"};
    for (size_t i = 0; i < 2; i++) {
        char params[256];
        snprintf(params, sizeof(params),
                 "{\"pattern\":\"%s\",\"paths\":[\"limit.txt\"],\"context\":1}", patterns[i]);
        expect_grep(fx, params,
                    "{\"matches\":[{\"path\":\"limit.txt\",\"lines\":["
                    LINE(1, "ok 1", true) "," LINE(2, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!",
                                                    false) "," LINE(3, "ok 3", true)
                    "]}],\"truncated\":false,\"skipped\":[{\"path\":\"limit.txt\","
                    "\"line_number\":2,\"reason\":\"match limit exceeded\"}],"
                    "\"skipped_count\":1}");
    }
    /* The list stops at JPT_FILES_GREP_MAX_SKIPPED; the count goes on. (A
     * limit the pattern sets itself is reached at once: 10 000 000 steps
     * a line would take minutes under valgrind.) */
    text[0] = '\0';
    for (int i = 0; i < 150; i++)
        strcat(text, runaway);
    put_s(fx, "limit.txt", text);
    free(text);
    char *out;
    assert_int_equal(jpt_files_grep(fx->dir, "{\"pattern\":\"(*LIMIT_MATCH=5)(a+)+$\","
                                             "\"paths\":[\"limit.txt\"]}", &out), JPT_OK);
    json_t *r = json_loads(out, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(r, "matches")), 0);
    assert_int_equal(json_array_size(json_object_get(r, "skipped")), JPT_FILES_GREP_MAX_SKIPPED);
    assert_int_equal(json_integer_value(json_object_get(r, "skipped_count")), 150);
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(r, "skipped"), 99), "line_number")), 100);
    json_decref(r);
    jpt_free(out);
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

static void record(void *ud, int status, const jpt__vfs_fs_result *result, const char *message)
{
    answer *a = ud;

    a->calls++;
    a->status = status;
    a->json = result != NULL ? fu_result_text(JPT__VFS_FS_GREP, result) : NULL;
    snprintf(a->message, sizeof(a->message), "%s", message != NULL ? message : "");
}

/* Submits fs.grep and steps it with `budget_ns` (1: a step does one block
 * or one file) until done; returns the steps taken. */
static int grep_in_steps(jpt_files *f, const char *params_text, const jpt__files_opts *opts,
                         uint64_t budget_ns, answer *a)
{
    jpt__files_call *c = NULL;
    int steps = 0;

    memset(a, 0, sizeof(*a));
    assert_int_equal(fu_submit(f, "fs.grep", params_text, opts, record, a, &c), JPT_OK);
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

/* Each line pcre2 gives up on costs its whole match limit: a step ends
 * after one when its time is up, inside a block, and the next goes on
 * from there. */
static void steps_end_on_time_between_skipped_lines(void **state)
{
    fixture *fx = *state;
    char text[64 * 30] = "";
    answer whole, sliced;

    for (int i = 0; i < 30; i++)
        strcat(text, i % 3 ? "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n" : "ok\n");
    put_s(fx, "slow.txt", text);
    const char *params = "{\"pattern\":\"(*LIMIT_MATCH=5)(?<!x)(a+)+$|ok\","
                         "\"paths\":[\"slow.txt\"],\"context\":1}";
    assert_int_equal(grep_in_steps(fx->dir, params, NULL, 0, &whole), 1);
    assert_true(grep_in_steps(fx->dir, params, NULL, 1, &sliced) >= 20);
    assert_int_equal(sliced.status, JPT_OK);
    assert_string_equal(sliced.json, whole.json);
    json_t *r = json_loads(whole.json, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(r, "skipped_count")), 20);
    json_decref(r);
    free(whole.json);
    free(sliced.json);
}

static void cancelling_a_grep_in_flight(void **state)
{
    fixture *fx = *state;
    jpt__files_call *c = NULL;
    answer a = {0, 0, NULL, ""};

    assert_int_equal(fu_submit(fx->dir, "fs.grep", "{\"pattern\":\"main\"}", NULL, record, &a, &c),
                     JPT_OK);
    assert_int_equal(jpt__files_step(c, 1), 1);
    jpt__files_cancel(c);
    assert_int_equal(a.calls, 0);
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

/* The literal read from a pattern (or none, and then whether the lines
 * are found over many lines at once or one by one). */
static void matcher_reads_the_literal_every_match_holds(void **state)
{
    static const struct {
        const char *pattern;
        bool caseless;
        const char *literal; /* NULL: none */
        bool by_line;        /* without a literal: line by line */
    } cases[] = {
        {"fn main", false, "fn main", false},
        {"struct \\w+_ops", false, "struct ", false},
        {"a|b", false, NULL, false},
        {"(a|b)cd", false, "cd", false},
        {"(?i)abc", false, NULL, false},
        {"(?i)abc", true, "abc", false},
        {"abc(?i)def", false, NULL, false},
        {"(?-i)abc", true, "abc", false},
        {"x?y*", false, NULL, false},
        {"[abc]+", false, NULL, false},
        {"foo(bar)?baz", false, "foo", false},
        {"\\.h$", false, ".h", false},
        {"", false, NULL, false},
        /* Classes end where pcre2 ends them (issue 16 §2). */
        {"[[:digit:]]+\\.[[:digit:]]+", false, ".", false},
        {"[^[:ascii:]]", false, NULL, false},
        {"[[:<:]]int", false, "int", false},
        {"int[[:>:]]x", false, "int", false},
        {"[]a]bc", false, "bc", false},
        {"[^]a]xy", false, "xy", false},
        {"[\\]]zz", false, "zz", false},
        {"[\\Q]\\E]+qq", false, "qq", false},
        {"[:a[:digit:]b:]yy", false, "yy", false},
        {"[\\c]]ww", false, "ww", false},
        /* Quantifiers take back what they may repeat zero times. */
        {"ab?c", false, "a", false},
        {"abc?d", false, "ab", false},
        {"abb*c", false, "ab", false},
        {"ab+c", false, "ab", false},
        {"ab{0}cd", false, "cd", false},
        {"ab{2}c", false, "ab", false},
        {"ab{0,2}cd", false, "cd", false},
        {"éé?x", false, "é", false},
        {"a{,2}", false, NULL, false},
        {"ab{2 }", false, NULL, false},
        {"x{y", false, "x{y", false},
        /* Escapes: one character, or something else. */
        {"a\\.b\\\\c", false, "a.b\\c", false},
        {"\\x{41}BC", false, "BC", false},
        {"\\x4BCD", false, "CD", false},
        {"\\N{U+41}BC", false, "BC", false},
        {"\\N{2}ab", false, "ab", false},
        {"\\cIab", false, "ab", false},
        {"\\Qa.b\\E", false, "a.b", false},
        {"\\Qa.b\\E?x", false, "a.", false},
        {"\\Qa|b", false, "a|b", false},
        {"a\\E*", false, NULL, false},
        {"x(?#c)yz", false, "yz", false},
        {"a\xEF\xBF\xBD" "b", false, NULL, false},
        /* What this reading does not follow. */
        {"(?x) a b", false, NULL, false},
        {"(?x:a b)cd", false, NULL, false},
        {"(a(*ACCEPT))foo", false, NULL, true},
        {"(*UCP)abc", false, NULL, true},
        /* Lookaround needs no care with a literal (each candidate line is
         * judged alone); without one, the lines go one by one. */
        {";(?!\\s)", false, ";", false},
        {"(?<=\\n)#", false, "#", false},
        {"}(?=\\n)", false, "}", false},
        {"foo\\Kbar", false, "foo", false},
        {"\\A\\s+\\w", false, NULL, true},
        {"[;{]\\z", false, NULL, true},
        {"\\G\\s+\\w", false, NULL, true},
        {"\\s*+$", false, NULL, true},
        {"(?>\\s*)$", false, NULL, true},
        {"\\X$", false, NULL, true},
        {"\\R", false, NULL, true},
        {"\\K\\w", false, NULL, true},
        {"(?-m)^\\w", false, NULL, true},
        {"(?=\\w)", false, NULL, true},
        {"[[:<:]]\\w", false, NULL, true},
        {"(?m)^\\w", false, NULL, false},
        {"(?s)\\w.\\w", false, NULL, false},
        {"(?<n>\\w)\\k<n>", false, NULL, false},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        jpt__matcher *m = matcher(cases[i].pattern, false, cases[i].caseless);
        size_t len;
        const char *lit = jpt__matcher_literal(m, &len);
        const char *want = cases[i].literal;
        if ((lit == NULL) != (want == NULL) ||
            (lit != NULL && (len != strlen(want) || memcmp(lit, want, len) != 0)))
            fail_msg("pattern '%s': literal '%.*s', not '%s'", cases[i].pattern, (int)len,
                     lit != NULL ? lit : "", want != NULL ? want : "(none)");
        if (want == NULL && jpt__matcher_line_by_line(m) != cases[i].by_line)
            fail_msg("pattern '%s': line by line %d", cases[i].pattern, !cases[i].by_line);
        jpt__matcher_free(m);
    }
}

/* ---- Random patterns against pcre2 on each line alone ------------------------------- */

static unsigned long long rnd_state = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return (unsigned)(rnd_state % n);
}

#define PICK(array) (array)[rnd(sizeof(array) / sizeof((array)[0]))]

static void gen_pattern(jpt__buf *b, int depth)
{
    static const char *const literals[] = {
        "a", "b", "ab", "A", "k", "K", "é", "É", "\\.", "\\t", " ", ";", "{", "}", "\\{",
        "x{", "a{2}", "#", "1", ".5", "\xe2\x84\xaa", "ss", "ß", "\\\\", "\\;", "\\\xc3\xa9"};
    static const char *const classes[] = {
        "[ab]", "[^a]", "[]a]", "[^]a]", "[[:alpha:]]", "[[:digit:]]", "[^[:space:]]",
        "[a-]", "[\\]]", "[\\Q]\\E]", "[[:^alpha:]]", "[;{]", "[^;]", "[\\s;]", "[[:ascii:]]",
        "[^[:ascii:]]", "[:a[:digit:]b:]", "[\\w.]", "[\\c]]"};
    static const char *const escapes[] = {
        "\\s", "\\S", "\\w", "\\W", "\\d", "\\b", "\\B", "\\A", "\\z", "\\Z", "\\G", "\\K",
        "\\R", "\\X", "\\h", "\\N", "\\x{e9}", "\\x61", "\\r", "\\n", "\\v", "\\C",
        "\\x{FFFD}", "\\p{L}", "\\P{Ll}", "\\N{U+61}", "\\cI", "\\Qa.b\\E", "\\Q;\\E", "\\E"};
    static const char *const others[] = {
        "^", "$", ".", "(?i)", "(?-i)", "(?s)", "(?x)", "(?-m)", "(?m)", "(?n)", "(?U)", "\\1",
        "(*ACCEPT)", "(*SKIP)(*F)", "(?#c)", "[[:<:]]", "[[:>:]]", "(*UCP)", "(?^)"};
    static const char *const openers[] = {
        "(", "(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>", "(?|", "(?i:", "(?x:", "(?<n>",
        "(*atomic:", "(*pla:", "(?-i:", "(?s:"};
    /* What meets a line's end or its neighbour: where judging a line alone
     * and judging it among others part. */
    static const char *const edges[] = {
        "\\s++$", "[^;]++$", "\\s*+$", ".++", "(?>\\s*)$", "\\X$", "\\R", "\\s{0,}+$",
        "\\S?+$", "\\v", "(?=\\s)", "(?<=\\s)", "\\z", "\\A", ";(?!\\s)", "\\K\\s",
        "(?<!\\S)", "\\Z", "\\G\\s", "(*atomic:\\s*)$", "\\h*+$", "(?-m)$", "(?-m)^"};
    static const char *const quantifiers[] = {
        "*", "+", "?", "*?", "+?", "*+", "++", "?+", "{2}", "{1,2}", "{0,}", "??", "{0}",
        "{,2}"};

    for (unsigned n = 1 + rnd(4); n > 0; n--) {
        unsigned r = rnd(100);
        if (r < 30)
            jpt__buf_puts(b, PICK(literals));
        else if (r < 45)
            jpt__buf_puts(b, PICK(classes));
        else if (r < 62)
            jpt__buf_puts(b, PICK(escapes));
        else if (r < 68)
            jpt__buf_puts(b, PICK(edges));
        else if (r < 78 && depth < 2) {
            jpt__buf_puts(b, PICK(openers));
            gen_pattern(b, depth + 1);
            jpt__buf_putc(b, ')');
        } else
            jpt__buf_puts(b, PICK(others));
        if (rnd(3) == 0)
            jpt__buf_puts(b, PICK(quantifiers));
        if (rnd(12) == 0)
            jpt__buf_putc(b, '|');
    }
}

static void gen_text(jpt__buf *b)
{
    static const char *const pieces[] = {
        "a", "b", "ab", " ", "\t", ";", "{", "}", "\r", "k", "K", "\xe2\x84\xaa", "é", "É", "x",
        "1", ".", "5", "#", "\xef\xbf\xbd", "aa", "ß", "ss", "\xff", "\xe2\x84", "A", "a.b",
        ";\r", "  "};

    for (unsigned lines = 1 + rnd(8), l = 0; l < lines; l++) {
        for (unsigned n = rnd(10); n > 0; n--)
            jpt__buf_puts(b, PICK(pieces));
        if (l + 1 < lines || rnd(2))
            jpt__buf_putc(b, '\n');
    }
}

/* Zeroes the bytes after b's text: pcre2's JIT reads a little past a
 * subject's end, which memcheck would otherwise report. */
static const char *padded(jpt__buf *b)
{
    jpt__buf_reserve(b, 32);
    memset(b->data + b->len, 0, 32);
    return b->data;
}

/* The lines (a bit each) of `text` that pcre2 matches, each alone and
 * repaired; -1 if pcre2 gives up on one. */
static long long reference_lines(pcre2_code *code, const char *text, size_t n)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    long long found = 0;
    size_t start = 0;

    for (int line = 0; start < n; line++) {
        const char *nl = memchr(text + start, '\n', n - start);
        size_t end = nl != NULL ? (size_t)(nl - text) : n;
        jpt__buf fixed = JPT__BUF_INIT;
        jpt__buf_append_utf8(&fixed, text + start, end - start, true);
        int rc = pcre2_match(code, (PCRE2_SPTR)padded(&fixed), fixed.len, 0, 0, md, NULL);
        jpt__buf_free(&fixed);
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
            found = -1;
            break;
        }
        if (rc >= 0)
            found |= 1ll << line;
        start = end + 1;
    }
    pcre2_match_data_free(md);
    return found;
}

/* The lines the matcher finds, given the text as fs.grep gives it. */
static long long matcher_lines(jpt__matcher *m, const char *text, size_t n)
{
    jpt__buf fixed = JPT__BUF_INIT;
    long long found = 0;

    if (jpt__matcher_needs_utf8(m)) {
        jpt__buf_append_utf8(&fixed, text, n, true);
        text = padded(&fixed);
        n = fixed.len;
    }
    const char *p = text, *end = text + n, *ls, *le;
    for (;;) {
        int rc = jpt__matcher_find(m, p, end, &ls, &le);
        if (rc < 0) {
            found = -1;
            break;
        }
        if (rc == 0)
            break;
        int line = 0;
        for (const char *q = text; q < ls; q++)
            line += *q == '\n';
        found |= 1ll << line;
        if (le == end)
            break;
        p = le + 1;
    }
    jpt__buf_free(&fixed);
    return found;
}

static void escaped(const char *p, size_t n, char *out, size_t cap)
{
    size_t w = 0;

    for (size_t i = 0; i < n && w + 5 < cap; i++)
        w += (size_t)(p[i] >= 0x20 && p[i] < 0x7f
                          ? snprintf(out + w, cap - w, "%c", p[i])
                          : snprintf(out + w, cap - w, "\\x%02x", (unsigned char)p[i]));
    out[w] = '\0';
}

/* Random patterns (every construct the matcher reads or refuses to) on
 * random lines: the matcher finds exactly the lines pcre2 matches alone,
 * whichever way it takes (literal, many lines at once, line by line). */
static void matcher_finds_what_pcre2_finds_on_each_line(void **state)
{
    size_t compiled = 0, texts = 0, ways[3] = {0};
    /* Fewer under valgrind (JPT_TEST_SLOWDOWN), which checks memory. */
    int iterations = getenv("JPT_TEST_SLOWDOWN") != NULL ? 400 : 3000;

    (void)state;
    for (int iter = 0; iter < iterations; iter++) {
        jpt__buf pat = JPT__BUF_INIT;
        bool caseless = rnd(3) == 0, fixed = rnd(12) == 0;
        gen_pattern(&pat, 0);
        jpt__errbuf e;
        jpt__matcher *m;
        int rc = jpt__matcher_new(pat.data, pat.len, fixed, caseless, &e, &m);
        int errcode;
        PCRE2_SIZE erroff;
        uint32_t options = PCRE2_UTF | (caseless ? PCRE2_CASELESS : 0) |
                           (fixed ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_MULTILINE);
        pcre2_code *code = pcre2_compile((PCRE2_SPTR)pat.data, pat.len, options, &errcode,
                                         &erroff, NULL);
        /* JIT where the matcher has it, as ripgrep runs pcre2: the two
         * disagree on some odd patterns (verbs in atomic groups). */
        if (code != NULL)
            pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
        if ((rc == JPT_OK) != (code != NULL))
            fail_msg("pattern '%s': the matcher says %d, pcre2 %d", pat.data, rc, errcode);
        if (rc == JPT_OK) {
            size_t len;
            compiled++;
            ways[jpt__matcher_literal(m, &len) != NULL ? 0 : jpt__matcher_line_by_line(m) ? 2
                                                                                            : 1]++;
            for (int t = 0; t < 8; t++) {
                jpt__buf text = JPT__BUF_INIT;
                gen_text(&text);
                const char *tp = padded(&text);
                long long want = reference_lines(code, tp, text.len);
                long long got = want < 0 ? -1 : matcher_lines(m, tp, text.len);
                if (want >= 0 && got >= 0 && got != want) {
                    char shown[1024];
                    escaped(tp, text.len, shown, sizeof(shown));
                    fail_msg("pattern '%s'%s%s (literal '%.*s', %s): lines %llx, pcre2 %llx in "
                             "\"%s\"", pat.data, fixed ? " fixed" : "",
                             caseless ? " caseless" : "", (int)len,
                             jpt__matcher_literal(m, &len) != NULL ? jpt__matcher_literal(m, &len)
                                                                   : "",
                             jpt__matcher_line_by_line(m) ? "line by line" : "many lines",
                             (unsigned long long)got, (unsigned long long)want, shown);
                }
                texts += want >= 0 && got >= 0;
                jpt__buf_free(&text);
            }
            jpt__matcher_free(m);
        }
        pcre2_code_free(code);
        jpt__buf_free(&pat);
    }
    print_message("%zu random patterns compiled (%zu with a literal, %zu over many lines, %zu "
                  "line by line), %zu texts compared\n", compiled, ways[0], ways[1], ways[2],
                  texts);
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
    size_t len;
    assert_non_null(jpt__matcher_literal(m, &len));
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
    /* The literal starts with KELVIN SIGN (3 bytes), the text with k (1):
     * the candidate line is the one holding the anchoring 'a', not the one
     * where a 3-byte start would be. */
    m = matcher("\xe2\x84\xaa" "ab", false, true);
    assert_int_equal(find(m, "xx\nKab\n", line), 1);
    assert_string_equal(line, "Kab");
    jpt__matcher_free(m);
    m = matcher("ks", false, true); /* nothing to anchor on: the regex alone */
    assert_null(jpt__matcher_literal(m, &len));
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
        T(posix_classes_are_whole_items_of_a_class),
        T(each_line_is_judged_alone),
        T(text_is_repaired_utf8_without_its_bom),
        T(a_nul_ends_the_file_at_its_piece),
        T(lines_past_the_match_limit_are_skipped),
        T(bad_params_are_refused),
        T(the_guard_hides_paths),
        T(stepping_gives_the_same_result),
        T(steps_end_on_time_between_skipped_lines),
        T(cancelling_a_grep_in_flight),
        cmocka_unit_test(matcher_reads_the_literal_every_match_holds),
        cmocka_unit_test(matcher_finds_what_pcre2_finds_on_each_line),
        cmocka_unit_test(matcher_finds_the_same_lines_with_and_without_jit),
        cmocka_unit_test(caseless_literals_fold_as_unicode_does),
        cmocka_unit_test(runaway_patterns_hit_the_limits),
    };

    return TU_RUN(tests);
}
