/* The access policy decides before anything happens (issue 15 §1 and §2),
 * through a real tool process (test/tools/vfs-probe) served by a
 * standalone host: a path of 2 000 missing directories on the main thread
 * and on a thread with a small stack (nothing recurses as deep as a path
 * is), a refused request that leaves the tree byte for byte as it was,
 * the prompt before any directory is made, sensitive names that answer
 * the same whether or not they exist, the metadata of a hard link, the
 * prompt naming the path a write touches through a symlink, git's files
 * (and a repository planted for `git status` to run), and the memory and
 * host-supplied backends, which get the same policy. Each runs on the
 * directory backend with openat2 and with the component walk (the path
 * kernels before 5.6, and valgrind, take). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files/files.h"
#include "registry-util.h"
#include "test-files-util.h"
#include "test-util.h"

extern char **environ;

static char root[200], outside[256];
/* The directory backend of the test: openat2, or the component walk. */
static unsigned files_flags;

/* Names a 4 KiB path is made of: 1 990 directories of one letter. */
#define DEEP 1990

static int setup(void **state)
{
    (void)state;
    fu_workspace("vfs-policy", root, outside);
    fu_write(root, "private/a.txt", "private\n");
    fu_write(root, ".git/HEAD", "ref: refs/heads/main\n");
    fu_write(root, ".git/index", "index\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fu_workspace_remove(root, outside);
    return 0;
}

/* ---- Running the probe ---------------------------------------------------------------- */

/* The directory backend the test runs on (openat2 or the walk). */
static jpt_files *dir_files(void)
{
    jpt_files *f = NULL;

    assert_int_equal(jpt_files_open_dir(root, files_flags, &f), JPT_OK);
    return f;
}

/* {"method": m, "params": params}, params taken. */
static json_t *op(const char *method, json_t *params)
{
    return json_pack("{s:s, s:o}", "method", method, "params", params);
}

static json_t *op_path(const char *method, const char *path)
{
    return op(method, json_pack("{s:s}", "path", path));
}

static json_t *op_write(const char *path, const char *content)
{
    return op("fs.write", json_pack("{s:s, s:s}", "path", path, "content", content));
}

static json_t *op_rename(const char *from, const char *to)
{
    return op("fs.rename", json_pack("{s:s, s:s}", "from", from, "to", to));
}

/* {"ops": ops} as JSON text (free()); `ops` is taken. */
static char *ops_text(json_t *ops)
{
    json_t *args = json_pack("{s:o}", "ops", ops);
    char *text = json_dumps(args, JSON_COMPACT);

    assert_non_null(text);
    json_decref(args);
    return text;
}

/* Runs the probe with `ops` (taken) to its end on `files` (NULL: the
 * test's directory backend) with `sandbox_js` and `a`'s handler. A
 * directory backend the test opens keeps its flags whatever the sandbox
 * says (vfs.h), so a test that allows hard links opens its own. */
static char *run_on(jpt_files *files, const char *sandbox_js, json_t *ops, ru_asked *a)
{
    jpt_files *f = files != NULL ? files : dir_files();
    jpt_vfs_host *h = ru_vfs_host(NULL, f, sandbox_js, 0, a);
    char *args = ops_text(ops);

    if (files == NULL)
        jpt_files_free(f); /* the host holds it */
    ru_vfs_spawn(h, args);
    free(args);
    char *end = ru_vfs_end(h);
    jpt_vfs_host_free(h);
    return end;
}

static char *run(const char *sandbox_js, json_t *ops, ru_asked *a)
{
    return run_on(NULL, sandbox_js, ops, a);
}

/* "<prefix>" then `n` directories "d/", then `leaf` (free()). */
static char *deep(const char *prefix, int n, const char *leaf)
{
    size_t lp = strlen(prefix), ll = strlen(leaf);
    char *p = malloc(lp + 2 * (size_t)n + ll + 1);

    assert_non_null(p);
    memcpy(p, prefix, lp);
    for (int i = 0; i < n; i++)
        memcpy(p + lp + 2 * (size_t)i, "d/", 2);
    memcpy(p + lp + 2 * (size_t)n, leaf, ll + 1);
    return p;
}

/* The i-th line of `text` (0 is the first), in a static buffer. */
static const char *line_of(const char *text, int i)
{
    static char buf[1 << 16];

    for (; i > 0 && text != NULL; i--)
        if ((text = strchr(text, '\n')) != NULL)
            text++;
    if (text == NULL)
        return "";
    size_t n = strcspn(text, "\n");
    snprintf(buf, sizeof(buf), "%.*s", (int)n, text);
    return buf;
}

static void assert_starts(const char *text, const char *prefix)
{
    if (strncmp(text, prefix, strlen(prefix)) != 0)
        fail_msg("'%s' does not start with '%s'", text, prefix);
}

/* Every line of a probe's end is the error `code`. */
static void assert_every_line_is(const char *end, const char *code)
{
    char want[64];
    int lines = 1;

    for (const char *p = end; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    for (int i = 0; i < lines; i++) {
        const char *line = line_of(end, i);
        if (i == 0)
            line += strlen("ok: ");
        const char *space = strchr(line, ' ');
        snprintf(want, sizeof(want), " err %s ", code);
        if (space == NULL || strncmp(space, want, strlen(want)) != 0)
            fail_msg("line %d is not an error %s:\n%s", i + 1, code, end);
    }
}

/* ---- §1: a path of 2 000 missing directories -------------------------------------------- */

/* The ops a deep path takes: a write through DEEP missing directories, its
 * read, a rename to another DEEP path, an exists there, and the read of a
 * DEEP path that is not there. */
static json_t *deep_ops(void)
{
    char *a = deep("deep/", DEEP, "f.txt"), *b = deep("moved/", DEEP, "g.txt");
    char *none = deep("none/", DEEP, "x");
    json_t *ops = json_pack("[o,o,o,o,o]", op_write(a, "deep"), op_path("fs.read", a),
                            op_rename(a, b), op_path("fs.exists", b), op_path("fs.read", none));

    free(a);
    free(b);
    free(none);
    return ops;
}

static void assert_deep_end(const char *end)
{
    assert_string_equal(line_of(end, 0), "ok: fs.write ok {}");
    assert_string_equal(line_of(end, 1), "fs.read ok {\"content\":\"deep\",\"size\":4}");
    assert_string_equal(line_of(end, 2), "fs.rename ok {}");
    assert_string_equal(line_of(end, 3), "fs.exists ok {\"exists\":true}");
    assert_starts(line_of(end, 4), "fs.read err -32002 fs.read 'none/d/d/");
    assert_non_null(strstr(line_of(end, 4), "...': not found"));
}

static void a_write_through_two_thousand_missing_directories_is_served(void **state)
{
    (void)state;
    char *end = run("{'filesystem':{'writable':true}}", deep_ops(), NULL);
    assert_deep_end(end);
    free(end);
    char *b = deep("moved/", DEEP, "g.txt");
    char *content = fu_read(root, b, NULL);
    assert_string_equal(content, "deep");
    free(content);
    free(b);
    fu_rmtree(fu_path(root, "deep"));
    fu_rmtree(fu_path(root, "moved"));
}

/* A host whose whole life runs on a thread of 256 KiB: every path of the
 * resolver and the policy, and freeing a memory tree that renames made
 * 10 000 directories deep, in a loop rather than a recursion. No cmocka
 * assertion runs on the thread: it says what happened, the test checks. */
typedef struct small_run {
    bool memory;
    const char *sandbox;
    char *args;
    char *end;     /* the tool's end, rendered */
    char what[256]; /* what failed on the thread */
} small_run;

static void *small_stack_host(void *arg)
{
    small_run *s = arg;
    jpt_files *f = NULL;
    jpt_vfs_host *h = NULL;
    jpt_state *st = NULL;
    char *text = NULL;
    const char *argv[] = {TOOL("vfs-probe"), NULL};
    jpt_vfs_host_options o = {.size = sizeof(o), .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode(), .sandbox_json = s->sandbox};
    char *tool = NULL;

    int rc = s->memory ? jpt_files_new_memory(&f) : jpt_files_open_dir(root, files_flags, &f);
    o.files = f;
    if (rc == JPT_OK)
        rc = jpt_vfs_host_new(&o, &h);
    if (rc == JPT_OK && asprintf(&tool, "{\"name\":\"probe\",\"arguments\":%s}", s->args) < 0)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_OK && (rc = jpt_vfs_host_spawn(h, argv, tool)) == JPT_OK &&
        (rc = jpt_vfs_host_run(h, WAIT_MS)) == JPT_OK &&
        (rc = jpt_vfs_host_state(h, &st)) == JPT_OK &&
        (rc = jpt_state_render(st, NULL, &text)) == JPT_OK &&
        asprintf(&s->end, "%s: %s", jpt_state_is_error(st) ? "error" : "ok", text) < 0)
        rc = JPT_ERR_NOMEM;
    if (rc != JPT_OK)
        snprintf(s->what, sizeof(s->what), "%s: %s", jpt_status_name(rc),
                 h != NULL ? jpt_vfs_host_errmsg(h) : "");
    jpt_free(text);
    jpt_state_unref(st);
    free(tool);
    jpt_vfs_host_free(h);
    jpt_files_free(f); /* the memory tree is freed here, on this stack */
    return NULL;
}

static char *run_on_small_stack(bool memory, const char *sandbox_js, json_t *ops)
{
    small_run s = {.memory = memory, .sandbox = js(sandbox_js), .args = ops_text(ops)};
    pthread_attr_t attr;
    pthread_t t;

    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
    assert_int_equal(pthread_create(&t, &attr, small_stack_host, &s), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
    free(s.args);
    if (s.end == NULL)
        fail_msg("the host on the small stack failed: %s", s.what);
    return s.end;
}

static void a_host_on_a_small_stack_serves_deep_paths(void **state)
{
    (void)state;
    char *end = run_on_small_stack(false, "{'filesystem':{'writable':true}}", deep_ops());
    assert_deep_end(end);
    free(end);
    fu_rmtree(fu_path(root, "deep"));
    fu_rmtree(fu_path(root, "moved"));
}

/* The memory backend on the small stack: the deep ops, then each tree
 * moved beneath the next, 10 000 directories deep, which the host frees
 * at its end. */
static void a_memory_tree_deeper_than_any_path_is_freed_on_a_small_stack(void **state)
{
    (void)state;
    json_t *ops = deep_ops();
    char *from = deep("t0/", DEEP, "f");
    json_array_append_new(ops, op_write(from, "x"));
    free(from);
    for (int i = 1; i <= 5; i++) {
        char name[16], prefix[16];
        snprintf(name, sizeof(name), "t%d", i - 1);
        snprintf(prefix, sizeof(prefix), "t%d/", i);
        char *to = deep(prefix, DEEP, name);
        json_array_append_new(ops, op_rename(name, to));
        free(to);
    }
    char *end = run_on_small_stack(true, "{'filesystem':{'writable':true}}", ops);
    assert_deep_end(end);
    for (int i = 5; i < 10; i++)
        assert_string_equal(line_of(end, i), i == 5 ? "fs.write ok {}" : "fs.rename ok {}");
    free(end);
}

/* ---- §2: a refused request leaves the tree as it was ------------------------------------------ */

static void a_refused_write_leaves_the_tree_byte_for_byte(void **state)
{
    (void)state;
    static const struct {
        const char *sandbox, *path;
    } cases[] = {
        /* read-only: asked, and no one to ask */
        {"{'filesystem':{'writable':['src']}}", "new/a/b/c.txt"},
        {"{'filesystem':{'writable':true,'deny':['secret']}}", "secret/a/b.txt"},
        {"{'filesystem':{'writable':true}}", ".ssh/keys/id_work"},
        {"{'filesystem':{'writable':true}}", ".git/hooks/pre-commit/x"},
        {"{'filesystem':{'writable':true}}", "lib/.env/x"},
        {"{'filesystem':{'writable':true}}", "sub/.Git/x"},
    };
    char *before = fu_snapshot(root);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *end = run(cases[i].sandbox,
                        json_pack("[o,o]", op_write(cases[i].path, "planted"),
                                  op_rename("src/main.c", cases[i].path)),
                        NULL);
        assert_every_line_is(end, "-32001");
        free(end);
        char *after = fu_snapshot(root);
        if (strcmp(before, after) != 0)
            fail_msg("a refused write of '%s' changed the tree:\n%s\nwas\n%s", cases[i].path,
                     after, before);
        free(after);
    }
    /* 1 990 directories under a denied prefix: none made. */
    char *path = deep("secret/", DEEP, "x");
    char *end = run("{'filesystem':{'writable':true,'deny':['secret']}}",
                    json_pack("[o,o]", op_write(path, "planted"), op_rename("hello.txt", path)),
                    NULL);
    assert_every_line_is(end, "-32001");
    free(end);
    free(path);
    char *after = fu_snapshot(root);
    assert_string_equal(after, before);
    free(after);
    free(before);
}

/* Dispatches the host until its handler keeps a request. */
static void until_asked(jpt_vfs_host *h, ru_asked *a)
{
    uint64_t deadline = ru_now_ms() + (uint64_t)WAIT_MS;

    while (a->kept == NULL && ru_now_ms() < deadline) {
        struct pollfd p = {.fd = jpt_vfs_host_get_fd(h), .events = POLLIN};
        assert_true(poll(&p, 1, 100) >= 0);
        assert_true(jpt_vfs_host_dispatch(h) >= 0);
    }
    assert_non_null(a->kept);
}

/* The prompt is answered later: until then, and after a denial, nothing
 * of the request exists. */
static void ask_then(const char *sandbox_js, json_t *ops, int decision, ru_asked *a,
                     char **before, char **end)
{
    jpt_files *f = dir_files();
    jpt_vfs_host *h = ru_vfs_host(NULL, f, sandbox_js, 0, a);
    char *args = ops_text(ops);

    jpt_files_free(f);
    *before = fu_snapshot(root);
    ru_vfs_spawn(h, args);
    free(args);
    until_asked(h, a);
    char *waiting = fu_snapshot(root);
    if (strcmp(waiting, *before) != 0)
        fail_msg("the tree changed before the prompt was answered:\n%s\nwas\n%s", waiting,
                 *before);
    free(waiting);
    assert_int_equal(jpt_policy_request_answer(a->kept, decision, NULL), JPT_OK);
    *end = ru_vfs_end(h);
    jpt_vfs_host_free(h);
}

static void the_prompt_comes_before_any_directory_is_made(void **state)
{
    (void)state;
    ru_asked a = {.decision = -1};
    char *before, *end;

    ask_then(NULL, json_pack("[o]", op_write("new/dir/f.txt", "x")), JPT_DECISION_DENY, &a,
             &before, &end);
    assert_string_equal(end, "ok: fs.write err -32001 fs.write 'new/dir/f.txt': denied by the "
                             "host");
    assert_string_equal(a.last, "fs.write new/dir/f.txt [probe]: needs approval: not covered "
                                "by the policy (the workspace is read-only: "
                                "filesystem.writable is false)");
    char *after = fu_snapshot(root);
    assert_string_equal(after, before);
    free(after);
    free(before);
    free(end);

    /* fs.rename's target likewise; allowed, it is made then. */
    a.kept = NULL;
    ask_then("{'filesystem':{'writable':['src']}}",
             json_pack("[o]", op_rename("src/main.c", "out/x/main.c")), JPT_DECISION_ALLOW, &a,
             &before, &end);
    assert_string_equal(end, "ok: fs.rename ok {}");
    assert_string_equal(a.requested, "out/x/main.c");
    char *moved = fu_read(root, "out/x/main.c", NULL);
    assert_string_equal(moved, "int main(void) { return 0; }\n");
    free(moved);
    assert_int_equal(rename(fu_path(root, "out/x/main.c"), fu_path(root, "src/main.c")), 0);
    fu_rmtree(fu_path(root, "out"));
    free(before);
    free(end);
}

/* ---- §2: a sensitive name answers the same whether or not it exists ---------------------------- */

/* The ops of every method on `path`, as a tool would probe it; with
 * `writes`, only those that write. */
static json_t *every_method(const char *path, bool writes)
{
    json_t *ops = json_pack("[o,o,o,o]", op_path("fs.delete", path), op_rename(path, "renamed"),
                            op_rename("hello.txt", path), op_write(path, "x"));

    if (writes)
        return ops;
    json_array_append_new(ops, op_path("fs.read", path));
    json_array_append_new(ops, op_path("fs.exists", path));
    json_array_append_new(ops, op_path("fs.metadata", path));
    json_array_append_new(ops, op_path("fs.list_dir", path));
    json_array_append_new(ops, op("fs.grep", json_pack("{s:s, s:[s]}", "pattern", "x", "paths",
                                                       path)));
    return ops;
}

/* The probe's end with the path quoted in it, 'path', written as 'P'. */
static char *answers(const char *sandbox_js, const char *path, bool writes)
{
    char *end = run(sandbox_js, every_method(path, writes), NULL), quoted[256];
    size_t n = (size_t)snprintf(quoted, sizeof(quoted), "'%s'", path);

    for (char *p = end; (p = strstr(p, quoted)) != NULL;) {
        memcpy(p, "'P'", 3);
        memmove(p + 3, p + n, strlen(p + n) + 1);
    }
    return end;
}

static void sensitive_names_answer_the_same_whether_or_not_they_exist(void **state)
{
    (void)state;
    const char *sandbox = "{'filesystem':{'writable':true,'deny':['private']}}";
    /* (there, not there): `.env` is a file, `sub/.env` is not; git's
     * files are sensitive to writes only */
    static const char *const pairs[][2] = {
        {".env", ".ENV"},
        {".env", "sub/.Env"},
        {"private/a.txt", "private/b.txt"},
        {".env/x", "sub/.env/x"},
        {".git/index", ".GIT/index"},
    };
    char *before = fu_snapshot(root);

    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        bool writes = strstr(pairs[i][0], ".git") != NULL;
        char *there = answers(sandbox, pairs[i][0], writes);
        char *absent = answers(sandbox, pairs[i][1], writes);
        if (strcmp(there, absent) != 0)
            fail_msg("'%s' and '%s' answer differently:\n%s\n---\n%s", pairs[i][0],
                     pairs[i][1], there, absent);
        free(there);
        free(absent);
    }
    char *after = fu_snapshot(root);
    assert_string_equal(after, before);
    free(after);
    free(before);
}

/* ---- §2: the metadata of a hard link ------------------------------------------------------------- */

static void metadata_of_a_hard_link_to_an_outside_file_is_refused(void **state)
{
    (void)state;
    if (link(fu_path(outside, "secret.txt"), fu_path(root, "linked.txt")) != 0)
        skip(); /* another file system */
    json_t *ops = json_pack("[o,o,o]", op_path("fs.metadata", "linked.txt"),
                            op_path("fs.read", "linked.txt"), op_path("fs.exists", "linked.txt"));
    char *end = run(NULL, json_deep_copy(ops), NULL);
    assert_string_equal(end, "ok: fs.metadata err -32001 fs.metadata 'linked.txt': denied: the "
                             "file has 2 hard links and may be a file outside the root (hard "
                             "links are not allowed)\n"
                             "fs.read err -32001 fs.read 'linked.txt': denied: the file has 2 "
                             "hard links and may be a file outside the root (hard links are not "
                             "allowed)\n"
                             "fs.exists ok {\"exists\":true}");
    free(end);
    /* ...unless hard links are allowed. */
    jpt_files *f = NULL;
    assert_int_equal(jpt_files_open_dir(root, files_flags | JPT_FILES_ALLOW_HARDLINKS, &f),
                     JPT_OK);
    end = run_on(f, "{'filesystem':{'hardlinks':'allow'}}", ops, NULL);
    jpt_files_free(f);
    assert_string_equal(line_of(end, 0), "ok: fs.metadata ok {\"kind\":\"file\",\"size\":8}");
    free(end);
    unlink(fu_path(root, "linked.txt"));
}

/* ---- §2: the prompt names what a write touches -------------------------------------------------- */

static void the_prompt_names_the_path_a_write_touches_through_a_symlink(void **state)
{
    (void)state;
    fu_write(root, ".github/workflows/ci.yml", "on: push\n");
    fu_symlink(root, "scratch/ci.yml", "../.github/workflows/ci.yml");
    json_t *ops = json_pack("[o]", op_write("scratch/ci.yml", "run: evil"));
    ru_asked a = {.decision = JPT_DECISION_DENY};

    char *end = run(NULL, json_deep_copy(ops), &a);
    assert_string_equal(end, "ok: fs.write err -32001 fs.write 'scratch/ci.yml': denied by the "
                             "host");
    assert_string_equal(a.last, "fs.write .github/workflows/ci.yml [probe]: needs approval: not "
                                "covered by the policy (the workspace is read-only: "
                                "filesystem.writable is false)");
    assert_string_equal(a.requested, "scratch/ci.yml");
    free(end);

    /* The policy judges the resolved path: "scratch" being writable does
     * not make the workflow writable... */
    a.count = 0;
    end = run("{'filesystem':{'writable':['scratch']}}", json_deep_copy(ops), &a);
    assert_int_equal(a.count, 1);
    free(end);
    /* ...and ".github" being writable lets the write through without a
     * word. */
    a.count = 0;
    end = run("{'filesystem':{'writable':['.github']}}", ops, &a);
    assert_string_equal(end, "ok: fs.write ok {}");
    assert_int_equal(a.count, 0);
    free(end);
    char *content = fu_read(root, ".github/workflows/ci.yml", NULL);
    assert_string_equal(content, "run: evil");
    free(content);
    fu_rmtree(fu_path(root, ".github"));
    fu_rmtree(fu_path(root, "scratch"));
}

/* ---- §2: git's files ------------------------------------------------------------------------------ */

static void repository_files_are_sensitive_for_writes(void **state)
{
    (void)state;
    fu_write(root, "sub/keep.txt", "keep\n");
    char *before = fu_snapshot(root);
    json_t *ops = json_pack(
        "[o,o,o,o,o,o,o,o,o,o,o,o]", op_write(".git/HEAD", "ref: refs/heads/evil\n"),
        op_write(".Git/commondir", "../evil\n"), op_write(".GIT/info/attributes", "x"),
        op_write("sub/.git", "gitdir: ../evil\n"), op_write("sub/.git/config", "x"),
        op_write("bare/HEAD", "ref: refs/heads/main\n"), op_write("bare/Head", "x"),
        op_path("fs.delete", ".git/index"), op_rename("hello.txt", ".git/x"),
        op_rename(".git", "g"), op_rename("sub", "x/.git"), op_rename("hello.txt", "HEAD"));
    char *end = run("{'filesystem':{'writable':true}}", json_deep_copy(ops), NULL);

    assert_every_line_is(end, "-32001");
    assert_string_equal(line_of(end, 0),
                        "ok: fs.write err -32001 fs.write '.git/HEAD': denied: path is in a git "
                        "repository's own files (a '.git' name), which could make git run "
                        "commands; filesystem.git is \"protected\"");
    assert_string_equal(line_of(end, 5),
                        "fs.write err -32001 fs.write 'bare/HEAD': denied: a file named HEAD "
                        "makes its directory a git repository, which could make git run "
                        "commands; filesystem.git is \"protected\"");
    free(end);
    char *after = fu_snapshot(root);
    assert_string_equal(after, before);
    free(after);
    free(before);

    /* Reading them is as before. */
    end = run(NULL, json_pack("[o]", op_path("fs.read", ".git/HEAD")), NULL);
    assert_string_equal(end, "ok: fs.read ok {\"content\":\"ref: refs/heads/main\\n\",\"size\":21}");
    free(end);

    /* "git": "writable" is the host saying so: the rules that grant
     * writing decide again (.git/config stays in the sensitive list). */
    end = run("{'filesystem':{'writable':true,'git':'writable'}}",
              json_pack("[o,o]", op_write(".git/description", "mine\n"),
                        op_write(".git/config", "x")),
              NULL);
    assert_string_equal(end, "ok: fs.write ok {}\n"
                             "fs.write err -32001 fs.write '.git/config': denied: path is in "
                             "the sensitive paths list (.git/config)");
    free(end);
    unlink(fu_path(root, ".git/description"));
    json_decref(ops);
    fu_rmtree(fu_path(root, "sub"));
}

/* Runs `git status` in `dir` with no configuration but the repository's;
 * returns its exit status, or -1 when there is no git. */
static int git_status(const char *dir)
{
    char home[300], ceiling[300], *env[] = {home, ceiling, "GIT_CONFIG_NOSYSTEM=1",
                                            "PATH=/usr/local/bin:/usr/bin:/bin", NULL};
    char *argv[] = {"git", "-C", (char *)dir, "status", NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status;

    snprintf(home, sizeof(home), "HOME=%s", outside);
    snprintf(ceiling, sizeof(ceiling), "GIT_CEILING_DIRECTORIES=%s", "/tmp");
    assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
    assert_int_equal(posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0), 0);
    assert_int_equal(posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0), 0);
    int rc = posix_spawnp(&pid, "git", &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? -1 : status;
}

/* What a tool that may only write files plants for the user's next `git
 * status` to run: in `at` ("" the workspace, or a directory), a .git whose
 * commondir names a directory holding the configuration (.git/config is
 * in the sensitive list, so an attacker goes round it), or a bare
 * repository. */
static json_t *plant(const char *at, const char *marker)
{
    char path[6][256], config[512];
    snprintf(config, sizeof(config), "[core]\n\trepositoryformatversion = 0\n"
                                     "\tfsmonitor = \"touch %s; false\"\n", marker);
    snprintf(path[0], 256, "%s.git/HEAD", at);
    snprintf(path[1], 256, "%s.git/commondir", at);
    snprintf(path[2], 256, "%sevil/objects/info/keep", at);
    snprintf(path[3], 256, "%sevil/refs/heads/keep", at);
    snprintf(path[4], 256, "%sevil/config", at);
    snprintf(path[5], 256, "%sbare/HEAD", at);
    return json_pack("[o,o,o,o,o,o,o,o,o]", op_write(path[0], "ref: refs/heads/main\n"),
                     op_write(path[1], "../evil\n"), op_write(path[2], ""),
                     op_write(path[3], ""), op_write(path[4], config),
                     op_write(path[5], "ref: refs/heads/main\n"),
                     op_write("bare/objects/info/keep", ""), op_write("bare/refs/heads/keep", ""),
                     op_write("bare/config", config));
}

static void a_repository_planted_for_git_status_is_refused(void **state)
{
    (void)state;
    char marker[300], marker2[300], ws[300], bare[300];
    snprintf(marker, sizeof(marker), "%s/ran", outside);
    snprintf(marker2, sizeof(marker2), "%s/ran-bare", outside);
    snprintf(ws, sizeof(ws), "%s/ws", root);
    snprintf(bare, sizeof(bare), "%s/ws/bare", root);
    fu_mkdir(root, "ws");
    if (git_status(ws) < 0)
        skip(); /* no git here */

    char *end = run("{'filesystem':{'writable':true}}", plant("ws/", marker), NULL);
    assert_string_equal(line_of(end, 0), "ok: fs.write err -32001 fs.write 'ws/.git/HEAD': "
                                         "denied: path is in a git repository's own files (a "
                                         "'.git' name), which could make git run commands; "
                                         "filesystem.git is \"protected\"");
    free(end);
    git_status(ws);
    git_status(bare);
    assert_int_equal(access(marker, F_OK), -1);

    /* The host that opts in gets what it asked for: the same writes make
     * a repository whose command `git status` runs. */
    json_t *ops = plant("ws/", marker);
    for (size_t i = 5; i < 9; i++) /* the bare one, with its own marker */
        json_array_remove(ops, 5);
    end = run("{'filesystem':{'writable':true,'git':'writable'}}", ops, NULL);
    assert_string_equal(end, "ok: fs.write ok {}\nfs.write ok {}\nfs.write ok {}\n"
                             "fs.write ok {}\nfs.write ok {}");
    free(end);
    git_status(ws);
    assert_int_equal(access(marker, F_OK), 0);
    fu_rmtree(ws);
    unlink(marker);
    (void)marker2;
}

/* ---- The memory and host-supplied backends get the same policy --------------------------------- */

static void the_memory_backend_gets_the_policy(void **state)
{
    (void)state;
    jpt_files *mem = NULL;
    assert_int_equal(jpt_files_new_memory(&mem), JPT_OK);
    assert_int_equal(jpt_files_write(mem, ".env", "TOKEN=secret\n", 13), JPT_OK);

    char *end = run_on(mem, NULL,
                       json_pack("[o,o,o,o]", op_path("fs.read", ".env"),
                                 op_path("fs.exists", ".ENV"), op_write("a/b.txt", "x"),
                                 op("fs.grep", json_pack("{s:s}", "pattern", "TOKEN"))),
                       NULL);
    assert_string_equal(end, "ok: fs.read err -32001 fs.read '.env': denied: path is in the "
                             "sensitive paths list (.env)\n"
                             "fs.exists err -32001 fs.exists '.ENV': denied: path is in the "
                             "sensitive paths list (.env)\n"
                             "fs.write err -32001 fs.write 'a/b.txt': needs approval: not "
                             "covered by the policy (the workspace is read-only: "
                             "filesystem.writable is false); no one could be asked (the host "
                             "has no policy handler), so it is denied\n"
                             "fs.grep ok {\"matches\":[],\"truncated\":false}");
    free(end);
    int exists = 1;
    assert_int_equal(jpt_files_exists(mem, "a", &exists), JPT_OK);
    assert_int_equal(exists, 0);
    jpt_files_free(mem);
}

/* A host backend that records the requests it is sent and answers each at
 * once: a grep finds "TOKEN" in .env and in src/a.c. */
typedef struct host_log {
    char seen[4096];
} host_log;

static int host_call(jpt_files_request *req, const char *method, const char *params_json,
                     void *ud)
{
    host_log *log = ud;
    size_t n = strlen(log->seen);

    snprintf(log->seen + n, sizeof(log->seen) - n, "%s %s\n", method, params_json);
    if (strcmp(method, "fs.grep") == 0)
        return jpt_files_request_reply(
            req, "{\"matches\":[{\"path\":\".env\",\"lines\":[{\"line_number\":1,"
                 "\"content\":\"TOKEN=secret\",\"is_match\":true}]},{\"path\":\"src/a.c\","
                 "\"lines\":[{\"line_number\":1,\"content\":\"TOKEN\",\"is_match\":true}]}],"
                 "\"truncated\":false}");
    return jpt_files_request_reply(req, strcmp(method, "fs.read") == 0
                                            ? "{\"content\":\"TOKEN=secret\\n\"}"
                                            : "{}");
}

/* A host-supplied backend served by host_call, logging into `log`. */
static jpt_files *logging_host(host_log *log)
{
    jpt_files_ops ops = {.size = sizeof(ops), .call = host_call};
    jpt_files *f = NULL;

    assert_int_equal(jpt_files_new(&ops, log, &f), JPT_OK);
    return f;
}

static void the_host_backend_gets_the_policy(void **state)
{
    (void)state;
    host_log log = {""};
    jpt_files *f = logging_host(&log);

    char *end = run_on(f, "{'filesystem':{'writable':true}}",
                       json_pack("[o,o,o,o,o]", op_path("fs.read", ".env"),
                                 op_write(".git/HEAD", "x"), op_write(".env/x", "x"),
                                 op_write("notes.txt", "x"),
                                 op("fs.grep", json_pack("{s:s}", "pattern", "TOKEN"))),
                       NULL);
    assert_string_equal(line_of(end, 0), "ok: fs.read err -32001 fs.read '.env': denied: path is "
                                         "in the sensitive paths list (.env)");
    assert_starts(line_of(end, 1), "fs.write err -32001 fs.write '.git/HEAD': denied: ");
    assert_starts(line_of(end, 2), "fs.write err -32001 fs.write '.env/x': denied: ");
    assert_string_equal(line_of(end, 3), "fs.write ok {}");
    assert_string_equal(line_of(end, 4),
                        "fs.grep ok {\"matches\":[{\"path\":\"src/a.c\",\"lines\":[{"
                        "\"line_number\":1,\"content\":\"TOKEN\",\"is_match\":true}]}],"
                        "\"truncated\":false}");
    /* The host never heard of the refused ones. */
    assert_string_equal(log.seen, "fs.write {\"path\":\"notes.txt\",\"content\":\"x\"}\n"
                                  "fs.grep {\"pattern\":\"TOKEN\",\"context\":0,"
                                  "\"case_insensitive\":false,\"fixed_strings\":false}\n");
    free(end);
    jpt_files_free(f);
}

/* A tool's fs.write of bytes that are not text reaches a host-supplied
 * backend as D11 writes them, base64 with "encoding": the files room hands
 * its backends bytes, and the host backend's edge writes them for the
 * host (it used to put the raw bytes in a JSON string, which could not be
 * written, and the tool was told "out of memory"). */
static void a_binary_write_reaches_a_host_backend_as_base64(void **state)
{
    (void)state;
    host_log log = {""};
    jpt_files *f = logging_host(&log);

    char *end = run_on(f, "{'filesystem':{'writable':true}}",
                       json_pack("[o,o]",
                                 op("fs.write", json_pack("{s:s, s:s, s:s}", "path", "./b/bin",
                                                          "content", "AP8K", "encoding",
                                                          "base64")),
                                 op_write("b/text", "h\u00e9")),
                       NULL);
    assert_string_equal(line_of(end, 0), "ok: fs.write ok {}");
    assert_string_equal(line_of(end, 1), "fs.write ok {}");
    assert_string_equal(log.seen,
                        "fs.write {\"path\":\"b/bin\",\"content\":\"AP8K\",\"encoding\":\"base64\"}\n"
                        "fs.write {\"path\":\"b/text\",\"content\":\"h\u00e9\"}\n");
    free(end);
    jpt_files_free(f);
}

/* ---- Both ways of resolving ------------------------------------------------------------------------ */

static int with_openat2(void **state)
{
    files_flags = 0;
    return setup(state);
}

static int with_walk(void **state)
{
    files_flags = JPT__FILES_FORCE_WALK;
    return setup(state);
}

#define BOTH(test)                                                                              \
    cmocka_unit_test_setup_teardown(test, with_openat2, teardown),                            \
        cmocka_unit_test_setup_teardown(test, with_walk, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* the walk's way: on the small stack below */
        cmocka_unit_test_setup_teardown(a_write_through_two_thousand_missing_directories_is_served,
                                        with_openat2, teardown),
        BOTH(a_host_on_a_small_stack_serves_deep_paths),
        BOTH(a_refused_write_leaves_the_tree_byte_for_byte),
        BOTH(the_prompt_comes_before_any_directory_is_made),
        BOTH(sensitive_names_answer_the_same_whether_or_not_they_exist),
        BOTH(metadata_of_a_hard_link_to_an_outside_file_is_refused),
        BOTH(the_prompt_names_the_path_a_write_touches_through_a_symlink),
        BOTH(repository_files_are_sensitive_for_writes),
        BOTH(a_repository_planted_for_git_status_is_refused),
        cmocka_unit_test(a_binary_write_reaches_a_host_backend_as_base64),
        cmocka_unit_test_setup_teardown(
            a_memory_tree_deeper_than_any_path_is_freed_on_a_small_stack, with_openat2,
            teardown),
        cmocka_unit_test_setup_teardown(the_memory_backend_gets_the_policy, with_openat2,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_host_backend_gets_the_policy, with_openat2,
                                        teardown),
    };
    return TU_RUN(tests);
}
