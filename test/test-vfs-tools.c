/* The example VFS tools (examples/vfs-tools) through a real registry,
 * loaded from the tools.json meson generated, over a scratch workspace
 * that is a git repository: each tool's results and errors, the host's
 * policy (.env denied, writes asked of the policy handler), and
 * modify_file's question about uncommitted changes answered both ways. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry-util.h"

#ifndef JPT_VFS_TOOLS_DIR
#error "JPT_VFS_TOOLS_DIR must name the built examples/vfs-tools directory"
#endif

static char root[64];
static char *config;         /* the generated tools.json */
static char *config_lenient; /* the same tools without their parameter schemas */

/* ---- The workspace ------------------------------------------------------------------- */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs a shell command in the workspace, failing the test unless it
 * succeeds. */
static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    int n = snprintf(cmd, sizeof(cmd), "cd '%s' && ", root);

    va_start(ap, fmt);
    vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

static void put(const char *rel, const char *content, size_t len)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, len), (ssize_t)len);
    close(fd);
}

static void put_text(const char *rel, const char *content)
{
    put(rel, content, strlen(content));
}

/* The file's content as the test reads it directly. */
static const char *on_disk(const char *rel)
{
    static char buf[4096];
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    long n = ru_read_text(path, buf, sizeof(buf));
    assert_true(n >= 0);
    return buf;
}

#define GIT "git -c user.email=test@example.com -c user.name=test -c init.defaultBranch=main "

static int setup(void **state)
{
    (void)state;
    strcpy(root, "/tmp/jpt-vfs-tools-XXXXXX");
    assert_non_null(mkdtemp(root));
    sh("mkdir -p src/sub docs");
    put_text("hello.txt", "one\ntwo\nthree\n");
    put_text("src/main.c", "int main(void)\n{\n    return helper();\n}\n");
    put_text("src/util.c", "int helper(void)\n{\n    return 0;\n}\n");
    put_text("src/sub/deep.h", "#define DEEP 1\n");
    put_text("docs/guide.md", "# Guide\nTwo words.\n");
    put_text(".env", "TOKEN=two\n");
    put("bin.dat", "a\0b", 3);
    sh(GIT "init -q && " GIT "add hello.txt src docs && " GIT "commit -qm first");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("cd / && rm -rf '%s'", root);
    ru_release_kept();
    return 0;
}

/* ---- The handlers ---------------------------------------------------------------------- */

/* What the inquiry handler saw, and what it answers. */
typedef struct inquired {
    int count;
    const char *answer;
    char tool[64];
    json_t *question;
    char context[2048];
} inquired;

static void on_inquiry(jpt_inquiry *q, void *ud)
{
    inquired *i = ud;
    const jpt_state *context = jpt_inquiry_context(q);

    i->count++;
    snprintf(i->tool, sizeof(i->tool), "%s", jpt_inquiry_tool(q));
    json_decref(i->question);
    i->question = parse(jpt_inquiry_question_json(q));
    i->context[0] = '\0';
    for (size_t k = 0; k < jpt_state_block_count(context); k++) {
        const char *text = jpt_state_block_field(context, k, JPT_FIELD_TEXT, NULL);
        strncat(i->context, text != NULL ? text : "", sizeof(i->context) - strlen(i->context) - 1);
    }
    assert_int_equal(jpt_inquiry_answer(q, i->answer), JPT_OK);
}

static jpt_registry *registry(const char *tools, ru_asked *a, inquired *i)
{
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 300,
                              .drain_ms = 100, .sandbox_mode = tu_sandbox_mode()};
    jpt_registry *r = ru_registry_with(&o, tools);

    jpt_registry_set_policy_handler(r, a != NULL ? ru_on_ask : NULL, a);
    jpt_registry_set_inquiry_handler(r, i != NULL ? on_inquiry : NULL, i);
    return r;
}

/* One call of a tool: its content, kept until teardown, and is_error. */
static const char *call(jpt_registry *r, const char *tool, const char *args_js, bool *is_error)
{
    char calls[4096];

    snprintf(calls, sizeof(calls), "[{'id':'c1','name':'%s','arguments':%s}]", tool, args_js);
    json_t *res = ru_keep(ru_run(r, js(calls)));
    *is_error = ru_is_error(res, 0);
    return ru_content(res, 0);
}

/* A call that must succeed with exactly `expected`. */
static void expect_text(jpt_registry *r, const char *tool, const char *args_js,
                        const char *expected)
{
    bool is_error;
    const char *content = call(r, tool, args_js, &is_error);

    if (is_error)
        fail_msg("%s %s failed: %s", tool, args_js, content);
    assert_string_equal(content, expected);
}

/* A call that must fail with a message holding `needle`. */
static void expect_error(jpt_registry *r, const char *tool, const char *args_js,
                         const char *needle)
{
    bool is_error;
    const char *content = call(r, tool, args_js, &is_error);

    if (!is_error)
        fail_msg("%s %s succeeded: %s", tool, args_js, content);
    ru_assert_contains(content, needle);
}

/* ---- read_file ------------------------------------------------------------------------- */

static void read_file_shows_numbered_lines(void **state)
{
    (void)state;
    jpt_registry *r = registry(config, NULL, NULL);

    expect_text(r, "read_file", "{'path':'hello.txt'}",
                "     1\tone\n     2\ttwo\n     3\tthree\n");
    expect_text(r, "read_file", "{'path':'./src//main.c','offset':3,'limit':1}",
                "     3\t    return helper();\n"
                "(lines 3-3 of 4; the next read starts at offset 4)");
    expect_text(r, "read_file", "{'path':'hello.txt','offset':2}",
                "     2\ttwo\n     3\tthree\n(lines 2-3 of 3)");
    jpt_registry_free(r);
}

static void read_file_errors_are_precise(void **state)
{
    (void)state;
    jpt_registry *r = registry(config, NULL, NULL);

    expect_error(r, "read_file", "{'path':'missing.txt'}", "fs.read 'missing.txt': not found");
    expect_error(r, "read_file", "{'path':'.env'}", "fs.read '.env': denied");
    expect_error(r, "read_file", "{'path':'bin.dat'}",
                 "'bin.dat' is not a text file: it holds NUL bytes (3 bytes in all)");
    expect_error(r, "read_file", "{'path':'hello.txt','offset':9}",
                 "offset 9 is past the end of 'hello.txt', which has 3 lines");
    expect_error(r, "read_file", "{'path':'src'}", "fs.read 'src'");
    /* The schema in tools.json stops a bad call before the tool runs. */
    expect_error(r, "read_file", "{'path':'hello.txt','offset':0}", "offset");
    expect_error(r, "read_file", "{}", "path");
    jpt_registry_free(r);
}

/* Without the schemas, the tool's own checks answer. */
static void the_tools_check_their_arguments_themselves(void **state)
{
    (void)state;
    jpt_registry *r = registry(config_lenient, NULL, NULL);

    expect_error(r, "read_file", "{'path':'hello.txt','offset':0}",
                 "argument 'offset' must be a whole number from 1 to 10000000, not 0");
    expect_error(r, "read_file", "{'path':'hello.txt','limit':'all'}",
                 "argument 'limit' must be a whole number from 1 to 10000000, not a string");
    expect_error(r, "read_file", "{'offset':1}", "argument 'path' is required");
    expect_error(r, "read_file", "{'path':''}", "argument 'path' must not be empty");
    expect_error(r, "read_file", "{'path':'hello.txt','lines':3}",
                 "unknown argument 'lines': read_file takes 'path', 'offset', 'limit'");
    expect_error(r, "list_files", "{'path':'../etc'}",
                 "argument 'path': '../etc' has a '..' name: paths stay inside the workspace");
    expect_error(r, "list_files", "{'recursive':'yes'}",
                 "argument 'recursive' must be true or false, not a string");
    expect_error(r, "grep_files", "{'pattern':'x','paths':['src', 3]}",
                 "argument 'paths': element 1 must be a non-empty string");
    expect_error(r, "grep_files", "{'pattern':'x','context':101}",
                 "argument 'context' must be a whole number from 0 to 100, not 101");
    expect_error(r, "modify_file", "{'path':'hello.txt','pattern':'two'}",
                 "argument 'replacement' is required");
    expect_error(r, "modify_file", "{'path':'.','pattern':'a','replacement':'b'}",
                 "argument 'path' names the workspace root, not a file");
    jpt_registry_free(r);
}

/* ---- list_files ------------------------------------------------------------------------ */

static void list_files_lists_and_walks(void **state)
{
    (void)state;
    jpt_registry *r = registry(config, NULL, NULL);

    expect_text(r, "list_files", "{}", ".env\n.git/\nbin.dat\ndocs/\nhello.txt\nsrc/");
    expect_text(r, "list_files", "{'path':'src','recursive':true}",
                "src/main.c\nsrc/sub/\nsrc/sub/deep.h\nsrc/util.c");
    expect_text(r, "list_files", "{'recursive':true,'pattern':'*.[ch]'}",
                "src/main.c\nsrc/sub/deep.h\nsrc/util.c");
    expect_text(r, "list_files", "{'path':'src/','pattern':'*.py'}",
                "(no entries match '*.py')");
    expect_text(r, "list_files", "{'recursive':true,'max_entries':2}",
                ".env\n.git/\n(9 more not shown: raise max_entries or narrow the pattern)");
    /* .git is listed, never entered. */
    bool is_error;
    const char *all = call(r, "list_files", "{'recursive':true}", &is_error);
    assert_false(is_error);
    assert_null(strstr(all, ".git/HEAD"));
    jpt_registry_free(r);
}

static void list_files_errors_and_skipped_directories(void **state)
{
    (void)state;
    jpt_registry *r = registry(config, NULL, NULL);

    expect_error(r, "list_files", "{'path':'nope'}", "fs.list_dir 'nope': not found");
    expect_error(r, "list_files", "{'path':'hello.txt'}",
                 "fs.list_dir 'hello.txt': is not a directory");
    sh("mkdir -p keys/.ssh && echo secret > keys/.ssh/id_rsa");
    expect_error(r, "list_files", "{'path':'keys/.ssh'}", "fs.list_dir 'keys/.ssh': denied");
    bool is_error;
    const char *listing = call(r, "list_files", "{'path':'keys','recursive':true}", &is_error);
    assert_false(is_error);
    ru_assert_contains(listing, "keys/.ssh/\n(skipped keys/.ssh/: fs.list_dir 'keys/.ssh': "
                                "denied");
    assert_null(strstr(listing, "id_rsa"));
    jpt_registry_free(r);
}

/* ---- grep_files ------------------------------------------------------------------------ */

static void grep_files_prints_as_ripgrep_does(void **state)
{
    (void)state;
    jpt_registry *r = registry(config, NULL, NULL);

    /* .env holds "two" too: a sensitive path is never searched. */
    expect_text(r, "grep_files", "{'pattern':'two'}", "hello.txt:2:two\n\n"
                                                      "1 matching line in 1 file");
    expect_text(r, "grep_files", "{'pattern':'TWO','case_insensitive':true}",
                "docs/guide.md:2:Two words.\nhello.txt:2:two\n\n"
                "2 matching lines in 2 files");
    expect_text(r, "grep_files", "{'pattern':'return','extensions':['c'],'context':1}",
                "src/main.c-2-{\nsrc/main.c:3:    return helper();\nsrc/main.c-4-}\n--\n"
                "src/util.c-2-{\nsrc/util.c:3:    return 0;\nsrc/util.c-4-}\n\n"
                "2 matching lines in 2 files");
    expect_text(r, "grep_files", "{'pattern':'help.r(','fixed_strings':true}",
                "No matches for 'help.r('.");
    expect_text(r, "grep_files", "{'pattern':'zebra','paths':['./src/','docs']}",
                "No matches for 'zebra' in 'src', 'docs'.");
    expect_text(r, "grep_files", "{'pattern':'e','paths':['hello.txt'],'max_matches':1}",
                "hello.txt:1:one\n\n1 matching line in 1 file (the search stopped at "
                "max_matches: there are more)");
    /* A line the regex engine gives up on is named, not passed over in
     * silence (issue 16 §2). */
    put_text("runaway.txt", "ok\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n");
    expect_text(r, "grep_files",
                "{'pattern':'(*LIMIT_MATCH=1000)(a+)+$|ok','paths':['runaway.txt']}",
                "runaway.txt:1:ok\n\n1 matching line in 1 file (1 line skipped: the pattern "
                "ran past the regex engine's limits on it, the first runaway.txt:2)");
    expect_text(r, "grep_files",
                "{'pattern':'(*LIMIT_MATCH=1000)(a+)+$','paths':['runaway.txt']}",
                "No matches for '(*LIMIT_MATCH=1000)(a+)+$' in 'runaway.txt' (1 line "
                "skipped: the pattern ran past the regex engine's limits on it, the first "
                "runaway.txt:2).");
    char path[512];
    snprintf(path, sizeof(path), "%s/runaway.txt", root);
    assert_int_equal(unlink(path), 0);
    jpt_registry_free(r);
}

static void grep_files_errors_are_the_hosts(void **state)
{
    (void)state;
    jpt_registry *r = registry(config, NULL, NULL);

    expect_error(r, "grep_files", "{'pattern':'('}", "fs.grep");
    expect_error(r, "grep_files", "{'pattern':'x','paths':['nope']}",
                 "fs.grep 'nope': not found");
    jpt_registry_free(r);
}

/* ---- modify_file ----------------------------------------------------------------------- */

static void modify_file_writes_a_clean_file_after_the_policy_handler(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    inquired i = {.answer = "true"};
    jpt_registry *r = registry(config, &a, &i);

    expect_text(r, "modify_file", "{'path':'hello.txt','pattern':'two','replacement':'TWO'}",
                "Replaced 1 occurrence in hello.txt (line 2).");
    assert_string_equal(on_disk("hello.txt"), "one\nTWO\nthree\n");
    assert_int_equal(i.count, 0);
    assert_int_equal(a.count, 1);
    assert_string_equal(a.tool, "modify_file");
    assert_string_equal(a.method, "fs.write");
    assert_string_equal(a.path, "hello.txt");
    assert_string_equal(a.id, "c1");
    assert_int_equal(a.access, JPT_ACCESS_WRITE);
    assert_true(a.why[0] != '\0');
    jpt_registry_free(r);
}

static void modify_file_reports_a_write_the_policy_handler_denies(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_DENY, .reason = "not in this test"};
    jpt_registry *r = registry(config, &a, NULL);

    expect_error(r, "modify_file", "{'path':'hello.txt','pattern':'two','replacement':'2'}",
                 "fs.write 'hello.txt'");
    assert_int_equal(a.count, 1);
    assert_string_equal(on_disk("hello.txt"), "one\ntwo\nthree\n");
    jpt_registry_free(r);

    /* No handler: the write is denied, saying no one could be asked. */
    r = registry(config, NULL, NULL);
    expect_error(r, "modify_file", "{'path':'hello.txt','pattern':'two','replacement':'2'}",
                 "no one could be asked");
    assert_string_equal(on_disk("hello.txt"), "one\ntwo\nthree\n");
    jpt_registry_free(r);
}

static void modify_file_asks_before_writing_over_uncommitted_changes(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    inquired i = {.answer = "true"};
    jpt_registry *r = registry(config, &a, &i);

    put_text("hello.txt", "one\ntwo\nthree\nfour\n");
    expect_text(r, "modify_file", "{'path':'hello.txt','pattern':'three','replacement':'3'}",
                "Replaced 1 occurrence in hello.txt (line 3).");
    assert_int_equal(i.count, 1);
    assert_string_equal(i.tool, "modify_file");
    assert_json(i.question, "{\"id\":\"write_anyway\",\"text\":\"Write the replacement "
                            "anyway?\",\"schema\":{\"type\":\"boolean\"},\"default\":false}");
    assert_string_equal(i.context, "'hello.txt' has uncommitted changes: its content differs "
                                   "from the version in git's index, so git holds no copy of "
                                   "it. The replacement (1 occurrence, line 3) would be "
                                   "written over it.");
    assert_int_equal(a.count, 1);
    assert_string_equal(on_disk("hello.txt"), "one\ntwo\n3\nfour\n");
    json_decref(i.question);
    jpt_registry_free(r);
}

static void modify_file_leaves_the_file_when_the_answer_is_no(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    inquired i = {.answer = "false"};
    jpt_registry *r = registry(config, &a, &i);

    put_text("src/util.c", "int helper(void)\n{\n    return 1;\n}\n");
    expect_error(r, "modify_file",
                 "{'path':'src/util.c','pattern':'return 1','replacement':'return 2'}",
                 "'src/util.c' was not written: the answer was not to write over what git "
                 "does not hold ('src/util.c' has uncommitted changes");
    assert_int_equal(i.count, 1);
    assert_int_equal(a.count, 0);
    assert_string_equal(on_disk("src/util.c"), "int helper(void)\n{\n    return 1;\n}\n");
    json_decref(i.question);
    jpt_registry_free(r);
}

/* Staged changes are git's to give back; untracked files and a workspace
 * without a repository have nothing to lose to git: no question. */
static void modify_file_asks_only_about_what_git_does_not_hold(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    inquired i = {.answer = "false"};
    jpt_registry *r = registry(config, &a, &i);

    put_text("hello.txt", "one\ntwo\nthree\nfour\n");
    sh(GIT "add hello.txt");
    expect_text(r, "modify_file", "{'path':'hello.txt','pattern':'four','replacement':'4'}",
                "Replaced 1 occurrence in hello.txt (line 4).");
    put_text("notes.txt", "draft\n");
    expect_text(r, "modify_file", "{'path':'notes.txt','pattern':'draft','replacement':'done'}",
                "Replaced 1 occurrence in notes.txt (line 1).");
    sh("rm -rf .git");
    put_text("src/main.c", "changed\n");
    expect_text(r, "modify_file", "{'path':'src/main.c','pattern':'changed','replacement':'x'}",
                "Replaced 1 occurrence in src/main.c (line 1).");
    assert_int_equal(i.count, 0);
    assert_int_equal(a.count, 3);
    jpt_registry_free(r);
}

/* Index version 4 compresses each path against the one before it. */
static void modify_file_reads_a_version_4_index(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW_ALWAYS};
    inquired i = {.answer = "false"};
    jpt_registry *r = registry(config, &a, &i);

    sh(GIT "update-index --index-version 4");
    expect_text(r, "modify_file", "{'path':'src/sub/deep.h','pattern':'1','replacement':'2'}",
                "Replaced 1 occurrence in src/sub/deep.h (line 1).");
    assert_int_equal(i.count, 0);
    put_text("src/util.c", "int helper(void)\n{\n    return 1;\n}\n");
    expect_error(r, "modify_file", "{'path':'src/util.c','pattern':'1','replacement':'2'}",
                 "'src/util.c' was not written");
    assert_int_equal(i.count, 1);
    json_decref(i.question);
    jpt_registry_free(r);
}

static void modify_file_asks_about_a_merge_conflict(void **state)
{
    (void)state;
    inquired i = {.answer = "false"};
    jpt_registry *r = registry(config, NULL, &i);

    sh(GIT "checkout -qb other && sed -i s/two/deux/ hello.txt && " GIT "commit -qam deux && "
       GIT "checkout -q main && sed -i s/two/zwei/ hello.txt && " GIT "commit -qam zwei && "
       "! " GIT "merge -q other >/dev/null 2>&1");
    expect_error(r, "modify_file", "{'path':'hello.txt','pattern':'one','replacement':'1'}",
                 "'hello.txt' has unresolved merge conflicts in git's index.");
    assert_int_equal(i.count, 1);
    json_decref(i.question);
    jpt_registry_free(r);
}

static void modify_file_replaces_literals_and_patterns(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW_ALWAYS};
    inquired i = {.answer = "true"};
    jpt_registry *r = registry(config, &a, &i);

    expect_error(r, "modify_file", "{'path':'hello.txt','pattern':'e','replacement':'E'}",
                 "the text 'e' occurs 3 times in 'hello.txt' (lines 1 and 3): make it longer "
                 "so that it occurs once, or set replace_all to replace every one");
    expect_text(r, "modify_file",
                "{'path':'hello.txt','pattern':'e','replacement':'E','replace_all':true}",
                "Replaced 3 occurrences in hello.txt (lines 1 and 3).");
    assert_string_equal(on_disk("hello.txt"), "onE\ntwo\nthrEE\n");
    expect_text(r, "modify_file",
                "{'path':'hello.txt','pattern':'t(w|hr)(?<end>o|EE)$','replacement':"
                "'<$1${end}$$>','regex':true,'replace_all':true}",
                "Replaced 2 occurrences in hello.txt (lines 2 and 3).");
    assert_string_equal(on_disk("hello.txt"), "onE\n<wo$>\n<hrEE$>\n");
    expect_text(r, "modify_file", "{'path':'hello.txt','pattern':'onE','replacement':'onE'}",
                "Nothing to write: the replacement is the same as what it replaces.");
    /* The second edit found the first one's uncommitted changes. */
    assert_int_equal(i.count, 1);
    json_decref(i.question);
    jpt_registry_free(r);
}

static void modify_file_errors_are_precise(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    jpt_registry *r = registry(config, &a, NULL);

    expect_error(r, "modify_file", "{'path':'gone.txt','pattern':'a','replacement':'b'}",
                 "fs.read 'gone.txt': not found");
    expect_error(r, "modify_file", "{'path':'.env','pattern':'two','replacement':'x'}",
                 "fs.read '.env': denied");
    expect_error(r, "modify_file", "{'path':'bin.dat','pattern':'a','replacement':'x'}",
                 "'bin.dat' is not a text file: it holds NUL bytes");
    expect_error(r, "modify_file", "{'path':'hello.txt','pattern':'four','replacement':'4'}",
                 "the text 'four' does not occur in 'hello.txt'");
    expect_error(r, "modify_file",
                 "{'path':'hello.txt','pattern':'(','replacement':'x','regex':true}",
                 "argument 'pattern' is not a valid regular expression: missing closing "
                 "parenthesis (at offset 1)");
    expect_error(r, "modify_file",
                 "{'path':'hello.txt','pattern':'two','replacement':'$1','regex':true}",
                 "argument 'replacement': '$1': the pattern has 0 groups");
    expect_error(r, "modify_file",
                 "{'path':'hello.txt','pattern':'t','replacement':'${x}','regex':true}",
                 "argument 'replacement': '${x}': the pattern has no group of that name");
    expect_error(r, "modify_file",
                 "{'path':'hello.txt','pattern':'x*','replacement':'y','regex':true}",
                 "argument 'pattern' matches an empty string (on line 1): it must match at "
                 "least one character");
    assert_int_equal(a.count, 0);
    assert_string_equal(on_disk("hello.txt"), "one\ntwo\nthree\n");
    jpt_registry_free(r);
}

/* ---- The suite ------------------------------------------------------------------------- */

static char *load_config(void)
{
    char path[512], *text;
    FILE *f;
    long n;

    snprintf(path, sizeof(path), "%s/tools.json", JPT_VFS_TOOLS_DIR);
    if ((f = fopen(path, "re")) == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0 || (text = malloc((size_t)n + 1)) == NULL ||
        fread(text, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    text[n] = '\0';
    /* The example tools link the build's libjptool.so. A host linked to it
     * too lets its sandboxed tools read it (lib/sandbox); this suite is
     * linked statically, so it names the library's directory itself. */
    json_t *c = json_loads(text, 0, NULL), *tool;
    size_t i;
    json_array_foreach(json_object_get(c, "tools"), i, tool)
        json_object_set_new(tool, "os_sandbox", json_pack("{s:[s]}", "read", JPT_BUILD_LIB_DIR));
    free(text);
    text = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return text;
}

/* The config without "parameters": every call reaches the tool. */
static char *lenient(const char *text)
{
    json_t *c = json_loads(text, 0, NULL), *tool;
    size_t i;

    json_array_foreach(json_object_get(c, "tools"), i, tool) json_object_del(tool, "parameters");
    char *out = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return out;
}

#define TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    config = load_config();
    config_lenient = lenient(config);
    const struct CMUnitTest tests[] = {
        TEST(read_file_shows_numbered_lines),
        TEST(read_file_errors_are_precise),
        TEST(the_tools_check_their_arguments_themselves),
        TEST(list_files_lists_and_walks),
        TEST(list_files_errors_and_skipped_directories),
        TEST(grep_files_prints_as_ripgrep_does),
        TEST(grep_files_errors_are_the_hosts),
        TEST(modify_file_writes_a_clean_file_after_the_policy_handler),
        TEST(modify_file_reports_a_write_the_policy_handler_denies),
        TEST(modify_file_asks_before_writing_over_uncommitted_changes),
        TEST(modify_file_leaves_the_file_when_the_answer_is_no),
        TEST(modify_file_asks_only_about_what_git_does_not_hold),
        TEST(modify_file_reads_a_version_4_index),
        TEST(modify_file_asks_about_a_merge_conflict),
        TEST(modify_file_replaces_literals_and_patterns),
        TEST(modify_file_errors_are_precise),
    };
    int rc = TU_RUN(tests);
    free(config);
    free(config_lenient);
    return rc;
}
