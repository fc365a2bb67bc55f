/* ProjectFiles (lib/files): every method of the directory backend on real
 * trees, the path attacks of TESTING.md in both resolution modes (openat2
 * and the component walk), FIFOs, sockets, devices and hard links, atomic
 * writes; the memory backend's equivalents; the host-supplied backend
 * answering at once and later. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "files/files.h"
#include "test-files-util.h"

/* 0 (openat2) or JPT__FILES_FORCE_WALK, per group. */
static unsigned mode;

typedef struct tree {
    char *base;
    char root[4096], outside[4096], evil[4096];
    jpt_files *f;
} tree;

static int tree_setup(void **state)
{
    tree *t = calloc(1, sizeof(*t));

    t->base = fu_tempdir();
    snprintf(t->root, sizeof(t->root), "%s/root", t->base);
    snprintf(t->outside, sizeof(t->outside), "%s/outside", t->base);
    snprintf(t->evil, sizeof(t->evil), "%s/root-evil", t->base);
    fu_mkdir(t->base, "root");
    fu_write(t->outside, "secret", "SECRET\n");
    fu_write(t->evil, "secret", "EVIL\n");
    fu_write(t->root, "hello.txt", "hello\n");
    fu_write(t->root, "src/main.rs", "fn main() {}\n");
    assert_int_equal(jpt_files_open_dir(t->root, mode, &t->f), JPT_OK);
    *state = t;
    return 0;
}

static int tree_teardown(void **state)
{
    tree *t = *state;

    jpt_files_free(t->f);
    fu_rmtree(t->base);
    free(t->base);
    free(t);
    return 0;
}

/* The call failed with `status`, its message holds `fragment`, and it
 * never shows where the root is. */
static void expect_error(tree *t, int rc, int status, const char *fragment)
{
    const char *msg = jpt_files_errmsg(t->f);

    if (rc != status)
        fail_msg("got %s (%s), expected %s", jpt_status_name(rc), msg, jpt_status_name(status));
    if (strstr(msg, fragment) == NULL)
        fail_msg("message '%s' lacks '%s'", msg, fragment);
    if (strstr(msg, t->base) != NULL)
        fail_msg("message '%s' shows the host's path", msg);
}

static char *read_ok(tree *t, const char *path)
{
    char *data = NULL;
    size_t len;
    int rc = jpt_files_read(t->f, path, 0, &data, &len, NULL);

    if (rc != JPT_OK)
        fail_msg("read '%s': %s", path, jpt_files_errmsg(t->f));
    return data;
}

static void expect_read_error(tree *t, const char *path, int status, const char *fragment)
{
    char *data = (char *)&data;
    size_t len = 1;

    expect_error(t, jpt_files_read(t->f, path, 0, &data, &len, NULL), status, fragment);
    assert_null(data);
    assert_int_equal(len, 0);
}

/* ---- Paths the rules refuse ------------------------------------------------------- */

static void absolute_paths_are_refused(void **state)
{
    tree *t = *state;
    char abs[8192];

    expect_read_error(t, "/etc/passwd", JPT_ERR_INVALID, "'/etc/passwd': absolute paths");
    snprintf(abs, sizeof(abs), "%s/hello.txt", t->root);
    char *data = NULL;
    size_t len;
    assert_int_equal(jpt_files_read(t->f, abs, 0, &data, &len, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_write(t->f, "/tmp/x", "x", 1), JPT_ERR_INVALID);
}

static void dotdot_is_refused_at_every_position(void **state)
{
    tree *t = *state;
    static const char *const paths[] = {
        "..", "../", "../x", "../root/hello.txt", "src/..", "src/../", "src/../hello.txt",
        "a/../../x", "a/b/../../..", "./..", "src/./../..", "x/y/z/..",
    };

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        char want[256];
        snprintf(want, sizeof(want), "'%s': '..' is not allowed", paths[i]);
        expect_read_error(t, paths[i], JPT_ERR_INVALID, want);
        expect_error(t, jpt_files_write(t->f, paths[i], "x", 1), JPT_ERR_INVALID, "'..'");
        int exists = 7;
        expect_error(t, jpt_files_exists(t->f, paths[i], &exists), JPT_ERR_INVALID, "'..'");
        assert_int_equal(exists, 0);
        expect_error(t, jpt_files_delete(t->f, paths[i]), JPT_ERR_INVALID, "'..'");
        expect_error(t, jpt_files_rename(t->f, "hello.txt", paths[i]), JPT_ERR_INVALID, "'..'");
    }
    /* Nothing was written anywhere. */
    assert_int_equal(fu_count_entries(t->base), 3);
    assert_int_equal(fu_count_entries(t->root), 2);
}

static void empty_components_and_nul_bytes_are_refused(void **state)
{
    tree *t = *state;
    char *out = NULL;

    expect_read_error(t, "src//main.rs", JPT_ERR_INVALID, "empty component");
    expect_read_error(t, "src/main.rs//", JPT_ERR_INVALID, "empty component");
    expect_error(t, jpt_files_call(t->f, "fs.read", "{\"path\":\"hello.txt\\u0000.png\"}", &out),
                 JPT_ERR_INVALID, "'hello.txt?.png': the path holds a NUL byte");
    assert_null(out);
    /* "." components and one trailing '/' are harmless. */
    char *data = read_ok(t, "./src/./main.rs");
    assert_string_equal(data, "fn main() {}\n");
    jpt_free(data);
    jpt_files_entry *entries;
    size_t n;
    assert_int_equal(jpt_files_list_dir(t->f, "src/", &entries, &n), JPT_OK);
    assert_int_equal(n, 1);
    jpt_free(entries);
}

/* A path's message shows no character that displays other than it reads:
 * C1 controls, bidirectional overrides and isolates, line separators. */
static void a_message_quotes_controls_and_bidi_overrides(void **state)
{
    tree *t = *state;
    char *out = NULL;

    expect_error(t,
                 jpt_files_call(t->f, "fs.read",
                                "{\"path\":\"a\\u0085b\\u202etxt.exe\\u2066c\\u200fd\\u2028/..\"}",
                                &out),
                 JPT_ERR_INVALID, "'a?b?txt.exe?c?d?/..': '..' is not allowed");
    assert_null(out);
}

/* ---- Symlinks ------------------------------------------------------------------------ */

static void symlinks_to_outside_are_denied(void **state)
{
    tree *t = *state;
    char abs[8192];

    snprintf(abs, sizeof(abs), "%s/secret", t->outside);
    fu_symlink(t->root, "rel", "../outside/secret");
    fu_symlink(t->root, "abs", abs);
    fu_symlink(t->root, "deep/er/rel", "../../../outside/secret");
    expect_read_error(t, "rel", JPT_ERR_DENIED, "fs.read 'rel': denied: the path leads outside");
    expect_read_error(t, "abs", JPT_ERR_DENIED, "'abs'");
    expect_read_error(t, "deep/er/rel", JPT_ERR_DENIED, "'deep/er/rel'");
    expect_error(t, jpt_files_write(t->f, "rel", "pwned", 5), JPT_ERR_DENIED, "fs.write 'rel'");
    expect_error(t, jpt_files_write(t->f, "abs", "pwned", 5), JPT_ERR_DENIED, "'abs'");
    int kind;
    uint64_t size;
    expect_error(t, jpt_files_metadata(t->f, "rel", &kind, &size), JPT_ERR_DENIED, "'rel'");
    char *secret = fu_read(t->outside, "secret", NULL);
    assert_string_equal(secret, "SECRET\n");
    free(secret);
    /* The message never names the target either. */
    assert_null(strstr(jpt_files_errmsg(t->f), "outside/secret"));
}

static void symlink_chains_that_escape_are_denied(void **state)
{
    tree *t = *state;

    fu_symlink(t->root, "one", "two");
    fu_symlink(t->root, "two", "sub/three");
    fu_symlink(t->root, "sub/three", "../../outside/secret");
    expect_read_error(t, "one", JPT_ERR_DENIED, "'one'");
    fu_symlink(t->root, "loop1", "loop2");
    fu_symlink(t->root, "loop2", "loop1");
    expect_read_error(t, "loop1", JPT_ERR_INVALID, "too many levels of symbolic links");
}

static void symlinked_parents_outside_are_denied(void **state)
{
    tree *t = *state;

    fu_symlink(t->root, "out", "../outside");
    expect_read_error(t, "out/secret", JPT_ERR_DENIED, "'out/secret'");
    expect_error(t, jpt_files_write(t->f, "out/new.txt", "x", 1), JPT_ERR_DENIED, "'out/new.txt'");
    expect_error(t, jpt_files_write(t->f, "out/deeper/new.txt", "x", 1), JPT_ERR_DENIED,
                 "'out/deeper/new.txt'");
    jpt_files_entry *entries = (jpt_files_entry *)&entries;
    size_t n = 9;
    expect_error(t, jpt_files_list_dir(t->f, "out", &entries, &n), JPT_ERR_DENIED, "'out'");
    assert_null(entries);
    assert_int_equal(n, 0);
    expect_error(t, jpt_files_delete(t->f, "out/secret"), JPT_ERR_DENIED, "'out/secret'");
    expect_error(t, jpt_files_rename(t->f, "out/secret", "stolen"), JPT_ERR_DENIED,
                 "'out/secret'");
    expect_error(t, jpt_files_rename(t->f, "hello.txt", "out/planted"), JPT_ERR_DENIED,
                 "'out/planted'");
    assert_int_equal(fu_count_entries(t->outside), 1);
}

static void sibling_with_a_longer_name_is_outside(void **state)
{
    tree *t = *state;
    char abs[8192];

    snprintf(abs, sizeof(abs), "%s/secret", t->evil);
    fu_symlink(t->root, "evil-rel", "../root-evil/secret");
    fu_symlink(t->root, "evil-abs", abs);
    expect_read_error(t, "evil-rel", JPT_ERR_DENIED, "'evil-rel'");
    expect_read_error(t, "evil-abs", JPT_ERR_DENIED, "'evil-abs'");
}

static void proc_self_through_a_symlink_is_denied(void **state)
{
    tree *t = *state;
    char climb[8192] = "";

    fu_symlink(t->root, "proc-abs", "/proc/self/root/etc/passwd");
    fu_symlink(t->root, "proc-cwd", "/proc/self/cwd");
    for (const char *p = t->root; *p != '\0'; p++)
        if (*p == '/')
            strcat(climb, "../");
    strcat(climb, "proc/self/environ");
    fu_symlink(t->root, "proc-rel", climb);
    expect_read_error(t, "proc-abs", JPT_ERR_DENIED, "'proc-abs'");
    expect_read_error(t, "proc-cwd/hello.txt", JPT_ERR_DENIED, "'proc-cwd/hello.txt'");
    expect_read_error(t, "proc-rel", JPT_ERR_DENIED, "'proc-rel'");
}

static void symlinks_inside_the_root_work(void **state)
{
    tree *t = *state;

    fu_symlink(t->root, "link", "hello.txt");
    fu_symlink(t->root, "srcdir", "src");
    fu_symlink(t->root, "src/up", "../hello.txt");
    fu_symlink(t->root, "a/b/c", "../../src/main.rs");
    fu_symlink(t->root, "chain", "link");
    static const char *const paths[] = {"link", "src/up", "chain"};
    for (size_t i = 0; i < 3; i++) {
        char *data = read_ok(t, paths[i]);
        assert_string_equal(data, "hello\n");
        jpt_free(data);
    }
    char *data = read_ok(t, "srcdir/main.rs");
    assert_string_equal(data, "fn main() {}\n");
    jpt_free(data);
    data = read_ok(t, "a/b/c");
    assert_string_equal(data, "fn main() {}\n");
    jpt_free(data);
    /* Writing a symlink writes its target; the link stays. */
    assert_int_equal(jpt_files_write(t->f, "chain", "bye\n", 4), JPT_OK);
    data = fu_read(t->root, "hello.txt", NULL);
    assert_string_equal(data, "bye\n");
    free(data);
    struct stat st;
    assert_int_equal(lstat(fu_path(t->root, "link"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(jpt_files_write(t->f, "srcdir/lib.rs", "//\n", 3), JPT_OK);
    data = fu_read(t->root, "src/lib.rs", NULL);
    assert_string_equal(data, "//\n");
    free(data);
    /* Deleting a symlink deletes the link, not its target. */
    assert_int_equal(jpt_files_delete(t->f, "link"), JPT_OK);
    assert_int_equal(lstat(fu_path(t->root, "link"), &st), -1);
    assert_int_equal(stat(fu_path(t->root, "hello.txt"), &st), 0);
}

/* ---- What is not a regular file --------------------------------------------------------- */

static void hardlinks_are_refused_unless_allowed(void **state)
{
    tree *t = *state;
    jpt_files *allow;

    if (link(fu_path(t->outside, "secret"), fu_path(t->root, "hl")) < 0)
        skip(); /* /tmp on another file system than the test's files */
    expect_read_error(t, "hl", JPT_ERR_DENIED, "'hl': denied: the file has 2 hard links");
    expect_error(t, jpt_files_write(t->f, "hl", "pwned", 5), JPT_ERR_DENIED, "'hl'");
    /* Its size and times are the outside file's: refused as a read is
     * (issue 15 §2); that something is there is no secret. */
    int kind = 0, exists = 0;
    uint64_t size = 0;
    expect_error(t, jpt_files_metadata(t->f, "hl", &kind, &size), JPT_ERR_DENIED,
                 "fs.metadata 'hl': denied: the file has 2 hard links");
    assert_int_equal(size, 0);
    assert_int_equal(jpt_files_exists(t->f, "hl", &exists), JPT_OK);
    assert_int_equal(exists, 1);
    char *secret = fu_read(t->outside, "secret", NULL);
    assert_string_equal(secret, "SECRET\n");
    free(secret);
    assert_int_equal(jpt_files_open_dir(t->root, mode | JPT_FILES_ALLOW_HARDLINKS, &allow),
                     JPT_OK);
    char *data = NULL;
    size_t len;
    assert_int_equal(jpt_files_read(allow, "hl", 0, &data, &len, NULL), JPT_OK);
    assert_string_equal(data, "SECRET\n");
    jpt_free(data);
    jpt_files_free(allow);
}

static void fifos_are_refused_without_blocking(void **state)
{
    tree *t = *state;

    assert_int_equal(mkfifo(fu_path(t->root, "fifo"), 0600), 0);
    /* If the open waited for a writer, the alarm would end the suite. */
    alarm(30);
    expect_read_error(t, "fifo", JPT_ERR_UNSUPPORTED, "'fifo': is a FIFO, not a regular file");
    expect_error(t, jpt_files_write(t->f, "fifo", "x", 1), JPT_ERR_UNSUPPORTED, "'fifo'");
    alarm(0);
    int kind;
    uint64_t size;
    assert_int_equal(jpt_files_metadata(t->f, "fifo", &kind, &size), JPT_OK);
    assert_int_equal(kind, JPT_FILES_KIND_OTHER);
    struct stat st;
    assert_int_equal(lstat(fu_path(t->root, "fifo"), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
}

static void sockets_and_devices_are_refused(void **state)
{
    tree *t = *state;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fu_path(t->root, "sock"));
    if (strlen(fu_path(t->root, "sock")) < sizeof(sa.sun_path)) {
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        expect_read_error(t, "sock", JPT_ERR_UNSUPPORTED, "'sock': is a socket");
    }
    close(fd);
    if (mknod(fu_path(t->root, "null"), S_IFCHR | 0666, makedev(1, 3)) == 0) {
        expect_read_error(t, "null", JPT_ERR_UNSUPPORTED, "'null': is a device");
        expect_error(t, jpt_files_write(t->f, "null", "x", 1), JPT_ERR_UNSUPPORTED, "'null'");
    }
}

/* ---- Writes ---------------------------------------------------------------------------- */

static void write_creates_parents_and_keeps_the_mode(void **state)
{
    tree *t = *state;
    struct stat st;

    assert_int_equal(jpt_files_write(t->f, "a/b/c/d.txt", "deep", 4), JPT_OK);
    char *data = fu_read(t->root, "a/b/c/d.txt", NULL);
    assert_string_equal(data, "deep");
    free(data);
    assert_int_equal(chmod(fu_path(t->root, "hello.txt"), 0640), 0);
    assert_int_equal(jpt_files_write(t->f, "hello.txt", "new\n", 4), JPT_OK);
    assert_int_equal(stat(fu_path(t->root, "hello.txt"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(chmod(fu_path(t->root, "hello.txt"), 0755), 0);
    assert_int_equal(jpt_files_write(t->f, "hello.txt", "", 0), JPT_OK);
    assert_int_equal(stat(fu_path(t->root, "hello.txt"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
    assert_int_equal(st.st_size, 0);
    /* A new file: 0666 less the umask. */
    mode_t mask = umask(022);
    assert_int_equal(jpt_files_write(t->f, "fresh", "x", 1), JPT_OK);
    umask(mask);
    assert_int_equal(stat(fu_path(t->root, "fresh"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    /* No temporary file is left behind. */
    assert_int_equal(fu_count_entries(t->root), 4);
}

static void write_refuses_directories_and_file_parents(void **state)
{
    tree *t = *state;

    expect_error(t, jpt_files_write(t->f, "src", "x", 1), JPT_ERR_INVALID, "'src': is a directory");
    expect_error(t, jpt_files_write(t->f, ".", "x", 1), JPT_ERR_INVALID, "is the root directory");
    expect_error(t, jpt_files_write(t->f, "hello.txt/x", "x", 1), JPT_ERR_INVALID,
                 "'hello.txt/x': a parent is not a directory");
    expect_error(t, jpt_files_write(t->f, "hello.txt/x/y", "x", 1), JPT_ERR_INVALID,
                 "a parent is not a directory");
}

/* A write that fails half-way (the file size limit: deterministic, and
 * root cannot bypass it as it bypasses permissions) leaves the old content
 * and no temporary file. */
static void failed_write_leaves_the_old_content(void **state)
{
    tree *t = *state;
    struct rlimit old, small = {4096, 4096};
    size_t big = 64 * 1024;
    char *data = malloc(big);

    memset(data, 'x', big);
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    int rc = jpt_files_write(t->f, "hello.txt", data, big);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_DFL);
    free(data);
    expect_error(t, rc, JPT_ERR_IO, "fs.write 'hello.txt': File too large");
    char *kept = fu_read(t->root, "hello.txt", NULL);
    assert_string_equal(kept, "hello\n");
    free(kept);
    assert_int_equal(fu_count_entries(t->root), 2);
}

static void read_only_directory_leaves_the_old_content(void **state)
{
    tree *t = *state;

    if (geteuid() == 0)
        skip(); /* root writes where permissions say no */
    assert_int_equal(chmod(fu_path(t->root, "src"), 0555), 0);
    expect_error(t, jpt_files_write(t->f, "src/main.rs", "x", 1), JPT_ERR_DENIED,
                 "fs.write 'src/main.rs': denied by the operating system");
    assert_int_equal(chmod(fu_path(t->root, "src"), 0755), 0);
    char *kept = fu_read(t->root, "src/main.rs", NULL);
    assert_string_equal(kept, "fn main() {}\n");
    free(kept);
}

/* ---- The other methods -------------------------------------------------------------------- */

static void read_reports_text_and_limits(void **state)
{
    tree *t = *state;
    char *data;
    size_t len;
    int utf8 = -1;

    fu_write_n(t->root, "bin", "a\0b\xff", 4);
    assert_int_equal(jpt_files_read(t->f, "bin", 0, &data, &len, &utf8), JPT_OK);
    assert_int_equal(len, 4);
    assert_memory_equal(data, "a\0b\xff", 4);
    assert_int_equal(data[4], '\0');
    assert_int_equal(utf8, 0);
    jpt_free(data);
    assert_int_equal(jpt_files_read(t->f, "hello.txt", 0, &data, &len, &utf8), JPT_OK);
    assert_int_equal(utf8, 1);
    jpt_free(data);
    expect_error(t, jpt_files_read(t->f, "hello.txt", 3, &data, &len, NULL), JPT_ERR_LIMIT,
                 "fs.read 'hello.txt': the file is 6 bytes, over the read limit of 3 bytes");
    expect_read_error(t, "missing.txt", JPT_ERR_NOT_FOUND, "fs.read 'missing.txt': not found");
    expect_read_error(t, "hello.txt/x", JPT_ERR_NOT_FOUND, "'hello.txt/x': not found");
    expect_read_error(t, "src", JPT_ERR_INVALID, "fs.read 'src': is a directory");
    /* .git is a directory like any other here (the policy guards it). */
    fu_write(t->root, ".git/HEAD", "ref: refs/heads/main\n");
    data = read_ok(t, ".git/HEAD");
    jpt_free(data);
}

static void list_dir_sorts_and_names_kinds(void **state)
{
    tree *t = *state;
    jpt_files_entry *e;
    size_t n;

    fu_symlink(t->root, "link", "hello.txt");
    fu_mkdir(t->root, "B");
    assert_int_equal(mkfifo(fu_path(t->root, "fifo"), 0600), 0);
    assert_int_equal(jpt_files_list_dir(t->f, "", &e, &n), JPT_OK);
    assert_int_equal(n, 5);
    const char *names[] = {"B", "fifo", "hello.txt", "link", "src"};
    int kinds[] = {JPT_FILES_KIND_DIR, JPT_FILES_KIND_OTHER, JPT_FILES_KIND_FILE,
                   JPT_FILES_KIND_SYMLINK, JPT_FILES_KIND_DIR};
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(e[i].name, names[i]);
        assert_int_equal(e[i].kind, kinds[i]);
    }
    jpt_free(e);
    expect_error(t, jpt_files_list_dir(t->f, "hello.txt", &e, &n), JPT_ERR_INVALID,
                 "fs.list_dir 'hello.txt': is not a directory");
    expect_error(t, jpt_files_list_dir(t->f, "nope", &e, &n), JPT_ERR_NOT_FOUND, "'nope'");
    char *json;
    assert_int_equal(jpt_files_call(t->f, "fs.list_dir", "{\"path\":\"src\"}", &json), JPT_OK);
    tu_assert_json_equal(json, "{\"entries\":[{\"path\":\"main.rs\",\"kind\":\"file\"}]}");
    jpt_free(json);
}

static void exists_and_metadata(void **state)
{
    tree *t = *state;
    int exists, kind;
    uint64_t size;

    assert_int_equal(jpt_files_exists(t->f, "hello.txt", &exists), JPT_OK);
    assert_int_equal(exists, 1);
    assert_int_equal(jpt_files_exists(t->f, ".", &exists), JPT_OK);
    assert_int_equal(exists, 1);
    assert_int_equal(jpt_files_exists(t->f, "nope/deeper", &exists), JPT_OK);
    assert_int_equal(exists, 0);
    fu_symlink(t->root, "dangling", "nowhere");
    assert_int_equal(jpt_files_exists(t->f, "dangling", &exists), JPT_OK);
    assert_int_equal(exists, 0);
    assert_int_equal(jpt_files_metadata(t->f, "hello.txt", &kind, &size), JPT_OK);
    assert_int_equal(kind, JPT_FILES_KIND_FILE);
    assert_int_equal(size, 6);
    assert_int_equal(jpt_files_metadata(t->f, "src", &kind, &size), JPT_OK);
    assert_int_equal(kind, JPT_FILES_KIND_DIR);
    assert_int_equal(size, 0);
    expect_error(t, jpt_files_metadata(t->f, "nope", &kind, &size), JPT_ERR_NOT_FOUND,
                 "fs.metadata 'nope': not found");
    char *json;
    assert_int_equal(jpt_files_call(t->f, "fs.metadata", "{\"path\":\"hello.txt\"}", &json),
                     JPT_OK);
    tu_assert_json_equal(json, "{\"kind\":\"file\",\"size\":6}");
    jpt_free(json);
    assert_int_equal(jpt_files_call(t->f, "fs.exists", "{\"path\":\"x\"}", &json), JPT_OK);
    tu_assert_json_equal(json, "{\"exists\":false}");
    jpt_free(json);
}

static void delete_and_rename(void **state)
{
    tree *t = *state;

    expect_error(t, jpt_files_delete(t->f, "src"), JPT_ERR_INVALID,
                 "fs.delete 'src': is a directory");
    expect_error(t, jpt_files_delete(t->f, "nope"), JPT_ERR_NOT_FOUND, "fs.delete 'nope'");
    expect_error(t, jpt_files_delete(t->f, ""), JPT_ERR_INVALID, "is the root directory");
    assert_int_equal(jpt_files_rename(t->f, "hello.txt", "docs/greeting.txt"), JPT_OK);
    char *data = fu_read(t->root, "docs/greeting.txt", NULL);
    assert_string_equal(data, "hello\n");
    free(data);
    expect_error(t, jpt_files_rename(t->f, "docs/greeting.txt", "src/main.rs"), JPT_ERR_EXISTS,
                 "fs.rename 'src/main.rs': exists already");
    expect_error(t, jpt_files_rename(t->f, "nope", "x"), JPT_ERR_NOT_FOUND, "fs.rename 'nope'");
    expect_error(t, jpt_files_rename(t->f, "src", "src/inner"), JPT_ERR_INVALID,
                 "'src': cannot move a directory into itself");
    assert_int_equal(jpt_files_rename(t->f, "src", "lib"), JPT_OK);
    assert_int_equal(jpt_files_delete(t->f, "lib/main.rs"), JPT_OK);
    assert_int_equal(fu_count_entries(fu_path(t->root, "lib")), 0);
}

static void json_calls_speak_d11(void **state)
{
    tree *t = *state;
    char *json;

    fu_write_n(t->root, "img.png", "\x89PNG\r\n\x1a\n\0", 9);
    assert_int_equal(jpt_files_call(t->f, "fs.read", "{\"path\":\"img.png\"}", &json), JPT_OK);
    tu_assert_json_equal(json, "{\"content\":\"iVBORw0KGgoA\",\"encoding\":\"base64\",\"size\":9}");
    jpt_free(json);
    assert_int_equal(jpt_files_call(t->f, "fs.read", "{\"path\":\"hello.txt\"}", &json), JPT_OK);
    tu_assert_json_equal(json, "{\"content\":\"hello\\n\",\"size\":6}");
    jpt_free(json);
    assert_int_equal(jpt_files_call(t->f, "fs.write",
                                    "{\"path\":\"b.bin\",\"content\":\"AAEC/w==\","
                                    "\"encoding\":\"base64\"}",
                                    &json),
                     JPT_OK);
    tu_assert_json_equal(json, "{}");
    jpt_free(json);
    size_t n;
    char *data = fu_read(t->root, "b.bin", &n);
    assert_int_equal(n, 4);
    assert_memory_equal(data, "\0\1\2\xff", 4);
    free(data);
    expect_error(t, jpt_files_call(t->f, "fs.write", "{\"path\":\"c\",\"content\":\"AA=\","
                                   "\"encoding\":\"base64\"}", &json),
                 JPT_ERR_INVALID, "not valid base64");
    expect_error(t, jpt_files_call(t->f, "fs.write", "{\"path\":\"c\",\"content\":1}", &json),
                 JPT_ERR_INVALID, "fs.write: params.content must be a string, not an integer");
    expect_error(t, jpt_files_call(t->f, "fs.rename", "{\"from\":\"hello.txt\"}", &json),
                 JPT_ERR_INVALID, "params.to must be a string");
    expect_error(t, jpt_files_call(t->f, "fs.chmod", "{}", &json), JPT_ERR_UNSUPPORTED,
                 "unknown method 'fs.chmod'");
    expect_error(t, jpt_files_call(t->f, "fs.read", "[]", &json), JPT_ERR_INVALID,
                 "fs.read: params must be an object");
    expect_error(t, jpt_files_call(t->f, "fs.read", "{", &json), JPT_ERR_INVALID,
                 "the params are not JSON");
    assert_null(json);
}

static void open_dir_errors(void **state)
{
    tree *t = *state;
    jpt_files *f = (jpt_files *)&f;

    assert_int_equal(jpt_files_open_dir(fu_path(t->root, "nope"), 0, &f), JPT_ERR_NOT_FOUND);
    assert_null(f);
    assert_int_equal(jpt_files_open_dir(fu_path(t->root, "hello.txt"), 0, &f), JPT_ERR_IO);
    assert_int_equal(jpt_files_open_dir(t->root, 0x100, &f), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_open_dir(NULL, 0, &f), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_open_dir(t->root, 0, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_read(NULL, "x", 0, NULL, NULL, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_files_errmsg(NULL), "");
    jpt_files_free(NULL);
}

/* A guard sees what is actually opened: the target of a symlink. */
static int deny_hello(void *ud, int access, const char *resolved, char *msg, size_t cap)
{
    (void)access;
    snprintf((char *)ud, 256, "%s", resolved);
    if (strcmp(resolved, "hello.txt") != 0)
        return JPT_OK;
    snprintf(msg, cap, "denied: '%s' is sensitive", resolved);
    return JPT_ERR_DENIED;
}

typedef struct answer {
    int status;
    char *json;
    char message[512];
    int calls;
    int method; /* JPT__VFS_FS_*, for the result's text */
} answer;

static void record(void *ud, int status, const jpt__vfs_fs_result *result, const char *message)
{
    answer *a = ud;

    a->calls++;
    a->status = status;
    a->json = result != NULL ? fu_result_text(a->method, result) : NULL;
    snprintf(a->message, sizeof(a->message), "%s", message != NULL ? message : "");
}

/* Submits with `a` reset to take the answer. */
static int submit(jpt_files *f, const char *method, const char *params_text,
                  const jpt__files_opts *opts, answer *a, jpt__files_call **pending)
{
    memset(a, 0, sizeof(*a));
    a->method = fu_method(method);
    return fu_submit(f, method, params_text, opts, record, a, pending);
}

static void submit_path(jpt_files *f, const char *method, const char *params_text,
                        const jpt__files_opts *opts, answer *a)
{
    jpt__files_call *pending = (jpt__files_call *)&pending;

    assert_int_equal(submit(f, method, params_text, opts, a, &pending), JPT_OK);
    assert_null(pending);
    assert_int_equal(a->calls, 1);
}

static void guard_sees_the_resolved_path(void **state)
{
    tree *t = *state;
    char seen[256] = "";
    jpt__files_opts opts = {0, 0, deny_hello, seen};
    answer a;

    fu_symlink(t->root, "innocent", "src/../hello.txt");
    submit_path(t->f, "fs.read", "{\"path\":\"innocent\"}", &opts, &a);
    assert_int_equal(a.status, JPT_ERR_DENIED);
    assert_string_equal(a.message, "fs.read 'innocent': denied: 'hello.txt' is sensitive");
    assert_string_equal(seen, "hello.txt");
    submit_path(t->f, "fs.write", "{\"path\":\"innocent\",\"content\":\"x\"}", &opts, &a);
    assert_int_equal(a.status, JPT_ERR_DENIED);
    char *kept = fu_read(t->root, "hello.txt", NULL);
    assert_string_equal(kept, "hello\n");
    free(kept);
    submit_path(t->f, "fs.read", "{\"path\":\"src/main.rs\"}", &opts, &a);
    assert_int_equal(a.status, JPT_OK);
    assert_string_equal(seen, "src/main.rs");
    free(a.json);
    submit_path(t->f, "fs.rename", "{\"from\":\"src/main.rs\",\"to\":\"hello.txt\"}", &opts, &a);
    assert_int_equal(a.status, JPT_ERR_DENIED);
    assert_string_equal(a.message, "fs.rename 'hello.txt': denied: 'hello.txt' is sensitive");
}

#define PATH_TESTS(prefix)                                                                 \
    cmocka_unit_test_setup_teardown(absolute_paths_are_refused, tree_setup, tree_teardown), \
        cmocka_unit_test_setup_teardown(dotdot_is_refused_at_every_position, tree_setup,   \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(empty_components_and_nul_bytes_are_refused,        \
                                        tree_setup, tree_teardown),                        \
        cmocka_unit_test_setup_teardown(a_message_quotes_controls_and_bidi_overrides,      \
                                        tree_setup, tree_teardown),                        \
        cmocka_unit_test_setup_teardown(symlinks_to_outside_are_denied, tree_setup,        \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(symlink_chains_that_escape_are_denied, tree_setup, \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(symlinked_parents_outside_are_denied, tree_setup,  \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(sibling_with_a_longer_name_is_outside, tree_setup, \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(proc_self_through_a_symlink_is_denied, tree_setup, \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(symlinks_inside_the_root_work, tree_setup,         \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(hardlinks_are_refused_unless_allowed, tree_setup,  \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(fifos_are_refused_without_blocking, tree_setup,    \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(sockets_and_devices_are_refused, tree_setup,       \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(write_creates_parents_and_keeps_the_mode,          \
                                        tree_setup, tree_teardown),                        \
        cmocka_unit_test_setup_teardown(write_refuses_directories_and_file_parents,        \
                                        tree_setup, tree_teardown),                        \
        cmocka_unit_test_setup_teardown(failed_write_leaves_the_old_content, tree_setup,   \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(read_only_directory_leaves_the_old_content,        \
                                        tree_setup, tree_teardown),                        \
        cmocka_unit_test_setup_teardown(read_reports_text_and_limits, tree_setup,          \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(list_dir_sorts_and_names_kinds, tree_setup,        \
                                        tree_teardown),                                    \
        cmocka_unit_test_setup_teardown(exists_and_metadata, tree_setup, tree_teardown),   \
        cmocka_unit_test_setup_teardown(delete_and_rename, tree_setup, tree_teardown),     \
        cmocka_unit_test_setup_teardown(json_calls_speak_d11, tree_setup, tree_teardown),  \
        cmocka_unit_test_setup_teardown(guard_sees_the_resolved_path, tree_setup,          \
                                        tree_teardown)

/* ---- The memory backend ---------------------------------------------------------------- */

static void memory_backend_has_the_same_rules(void **state)
{
    jpt_files *f;
    char *data, *json;
    size_t len, n;
    int exists, kind;
    uint64_t size;
    jpt_files_entry *e;

    (void)state;
    assert_int_equal(jpt_files_new_memory(&f), JPT_OK);
    assert_int_equal(jpt_files_read(f, "../x", 0, &data, &len, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_files_errmsg(f),
                        "fs.read '../x': '..' is not allowed: paths stay beneath the root");
    assert_int_equal(jpt_files_write(f, "/abs", "x", 1), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_write(f, "a//b", "x", 1), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_read(f, "nope", 0, &data, &len, NULL), JPT_ERR_NOT_FOUND);
    assert_string_equal(jpt_files_errmsg(f), "fs.read 'nope': not found");
    assert_int_equal(jpt_files_write(f, "src/a/main.rs", "fn main() {}\n", 13), JPT_OK);
    assert_int_equal(jpt_files_write(f, "src/b.rs", "\0\xff", 2), JPT_OK);
    assert_int_equal(jpt_files_read(f, "src/a/main.rs", 0, &data, &len, &exists), JPT_OK);
    assert_string_equal(data, "fn main() {}\n");
    assert_int_equal(exists, 1);
    jpt_free(data);
    assert_int_equal(jpt_files_read(f, "src/a/main.rs", 5, &data, &len, NULL), JPT_ERR_LIMIT);
    assert_int_equal(jpt_files_read(f, "src", 0, &data, &len, NULL), JPT_ERR_INVALID);
    assert_string_equal(jpt_files_errmsg(f), "fs.read 'src': is a directory");
    assert_int_equal(jpt_files_write(f, "src", "x", 1), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_write(f, "src/b.rs/c", "x", 1), JPT_ERR_INVALID);
    assert_string_equal(jpt_files_errmsg(f), "fs.write 'src/b.rs/c': a parent is not a directory");
    assert_int_equal(jpt_files_read(f, "src/b.rs/c", 0, &data, &len, NULL), JPT_ERR_NOT_FOUND);
    assert_int_equal(jpt_files_exists(f, "src/a", &exists), JPT_OK);
    assert_int_equal(exists, 1);
    assert_int_equal(jpt_files_metadata(f, "src/b.rs", &kind, &size), JPT_OK);
    assert_int_equal(kind, JPT_FILES_KIND_FILE);
    assert_int_equal(size, 2);
    assert_int_equal(jpt_files_metadata(f, "zz", &kind, &size), JPT_ERR_NOT_FOUND);
    assert_int_equal(jpt_files_list_dir(f, "src", &e, &n), JPT_OK);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].name, "a");
    assert_int_equal(e[0].kind, JPT_FILES_KIND_DIR);
    assert_string_equal(e[1].name, "b.rs");
    jpt_free(e);
    assert_int_equal(jpt_files_list_dir(f, "src/b.rs", &e, &n), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_rename(f, "src/b.rs", "src/a/main.rs"), JPT_ERR_EXISTS);
    assert_string_equal(jpt_files_errmsg(f), "fs.rename 'src/a/main.rs': exists already");
    assert_int_equal(jpt_files_rename(f, "src", "src/a/x"), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_rename(f, "src/b.rs", "bin/b.rs"), JPT_OK);
    assert_int_equal(jpt_files_call(f, "fs.read", "{\"path\":\"bin/b.rs\"}", &json), JPT_OK);
    tu_assert_json_equal(json, "{\"content\":\"AP8=\",\"encoding\":\"base64\",\"size\":2}");
    jpt_free(json);
    assert_int_equal(jpt_files_delete(f, "src"), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_delete(f, "bin/b.rs"), JPT_OK);
    assert_int_equal(jpt_files_delete(f, "bin/b.rs"), JPT_ERR_NOT_FOUND);
    assert_int_equal(jpt_files_rename(f, "src", "lib"), JPT_OK);
    assert_int_equal(jpt_files_list_dir(f, ".", &e, &n), JPT_OK);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].name, "bin");
    assert_string_equal(e[1].name, "lib");
    jpt_free(e);
    jpt_files_free(f);
}

/* ---- The host-supplied backend ---------------------------------------------------------- */

typedef struct host {
    int mode; /* 0: answer at once, 1: keep for later, 2: refuse */
    jpt_files_request *kept;
    char method[32];
    char params[512];
    int cancels, releases;
} host;

static int host_call(jpt_files_request *req, const char *method, const char *params, void *ud)
{
    host *h = ud;

    snprintf(h->method, sizeof(h->method), "%s", method);
    snprintf(h->params, sizeof(h->params), "%s", params);
    if (h->mode == 2)
        return JPT_ERR_DENIED;
    if (h->mode == 1) {
        h->kept = req;
        return JPT_OK;
    }
    if (strcmp(method, "fs.read") == 0)
        return jpt_files_request_reply(req, "{\"content\":\"aGk=\",\"encoding\":\"base64\","
                                            "\"size\":2}");
    if (strcmp(method, "fs.list_dir") == 0)
        return jpt_files_request_reply(req, "{\"entries\":[{\"path\":\"z\",\"kind\":\"file\"},"
                                            "{\"path\":\"a\",\"kind\":\"dir\"}]}");
    if (strcmp(method, "fs.metadata") == 0)
        return jpt_files_request_reply(req, "{\"kind\":\"file\",\"size\":7}");
    if (strcmp(method, "fs.exists") == 0)
        return jpt_files_request_reply(req, "{\"exists\":true}");
    if (strcmp(method, "fs.delete") == 0)
        return jpt_files_request_fail(req, JPT_ERR_NOT_FOUND, "no such row");
    return jpt_files_request_reply(req, "{}");
}

static void host_cancel(jpt_files_request *req, void *ud)
{
    (void)req;
    ((host *)ud)->cancels++;
}

static void host_release(void *ud)
{
    ((host *)ud)->releases++;
}

static jpt_files *host_files(host *h)
{
    jpt_files_ops ops = {sizeof(ops), host_call, host_cancel, host_release};
    jpt_files *f;

    assert_int_equal(jpt_files_new(&ops, h, &f), JPT_OK);
    return f;
}

static void host_backend_answering_at_once(void **state)
{
    host h = {.mode = 0};
    jpt_files *f = host_files(&h);
    char *data;
    size_t len, n;
    int utf8, kind, exists;
    uint64_t size;
    jpt_files_entry *e;

    (void)state;
    assert_int_equal(jpt_files_read(f, "./docs/x.txt", 0, &data, &len, &utf8), JPT_OK);
    assert_string_equal(h.method, "fs.read");
    assert_string_equal(h.params, "{\"path\":\"docs/x.txt\"}"); /* normalised */
    assert_string_equal(data, "hi");
    assert_int_equal(utf8, 1);
    jpt_free(data);
    assert_int_equal(jpt_files_list_dir(f, "", &e, &n), JPT_OK);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].name, "a");
    assert_int_equal(e[0].kind, JPT_FILES_KIND_DIR);
    jpt_free(e);
    assert_int_equal(jpt_files_metadata(f, "m", &kind, &size), JPT_OK);
    assert_int_equal(size, 7);
    assert_int_equal(jpt_files_exists(f, "m", &exists), JPT_OK);
    assert_int_equal(exists, 1);
    assert_int_equal(jpt_files_write(f, "w", "\0", 1), JPT_OK);
    assert_string_equal(h.params, "{\"path\":\"w\",\"content\":\"AA==\",\"encoding\":\"base64\"}");
    assert_int_equal(jpt_files_delete(f, "gone"), JPT_ERR_NOT_FOUND);
    assert_string_equal(jpt_files_errmsg(f), "fs.delete 'gone': no such row");
    assert_int_equal(jpt_files_read(f, "../x", 0, &data, &len, NULL), JPT_ERR_INVALID);
    h.mode = 2;
    assert_int_equal(jpt_files_rename(f, "a", "b"), JPT_ERR_DENIED);
    assert_string_equal(jpt_files_errmsg(f),
                        "fs.rename 'a': the backend refused the request: "
                        "denied by the access policy");
    assert_int_equal(h.releases, 0);
    jpt_files_free(f);
    assert_int_equal(h.releases, 1);
}

/* A host's answer is read into its values and written again in D11's
 * shape: bytes that are text go as text whatever encoding the host chose,
 * members D11 does not name are left out, and fs.read's read limit holds
 * for a host's bytes as for a file's. */
static void host_backend_answers_are_written_in_d11_shape(void **state)
{
    host h = {.mode = 1};
    jpt_files *f = host_files(&h);
    jpt__files_opts small = {4, 0, NULL, NULL};
    jpt__files_call *pending = NULL;
    answer a;

    (void)state;
    assert_int_equal(submit(f, "fs.read", "{\"path\":\"t\"}", NULL, &a, &pending), JPT_OK);
    assert_int_equal(jpt_files_request_reply(h.kept, "{\"content\":\"aGk=\",\"encoding\":"
                                                     "\"base64\",\"size\":2,\"etag\":\"x\"}"),
                     JPT_OK);
    assert_int_equal(a.status, JPT_OK);
    assert_string_equal(a.json, "{\"content\":\"hi\",\"size\":2}");
    free(a.json);
    assert_int_equal(submit(f, "fs.list_dir", "{\"path\":\".\"}", NULL, &a, &pending), JPT_OK);
    assert_int_equal(jpt_files_request_reply(h.kept, "{\"entries\":[{\"path\":\"z\",\"kind\":"
                                                     "\"file\",\"mtime\":1},{\"path\":\"a\","
                                                     "\"kind\":\"dir\"}]}"),
                     JPT_OK);
    /* The host's order: only the direct call sorts. */
    assert_string_equal(a.json, "{\"entries\":[{\"path\":\"z\",\"kind\":\"file\"},"
                                "{\"path\":\"a\",\"kind\":\"dir\"}]}");
    free(a.json);
    assert_int_equal(submit(f, "fs.read", "{\"path\":\"big\"}", &small, &a, &pending), JPT_OK);
    assert_int_equal(jpt_files_request_reply(h.kept, "{\"content\":\"12345\"}"), JPT_OK);
    assert_int_equal(a.status, JPT_ERR_LIMIT);
    assert_string_equal(a.message, "fs.read 'big': the file is 5 bytes, over the read limit of "
                                   "4 bytes");
    assert_null(a.json);
    jpt_files_free(f);
    assert_int_equal(h.releases, 1);
}

static void host_backend_answering_later(void **state)
{
    host h = {.mode = 1};
    jpt_files *f = host_files(&h);
    answer a = {0};
    char *data;
    size_t len;

    (void)state;
    /* A direct call cannot wait: JPT_ERR_AGAIN, and the request is
     * cancelled (the host still answers it, which releases it). */
    assert_int_equal(jpt_files_read(f, "x", 0, &data, &len, NULL), JPT_ERR_AGAIN);
    assert_int_equal(h.cancels, 1);
    assert_int_equal(jpt_files_request_reply(h.kept, "{\"content\":\"late\"}"), JPT_OK);
    /* Through the internal interface, the answer completes the request. */
    const char *params = "{\"path\":\"later.txt\"}";
    jpt__files_call *pending = NULL;
    assert_int_equal(submit(f, "fs.read", params, NULL, &a, &pending), JPT_OK);
    assert_non_null(pending);
    assert_false(jpt__files_call_needs_step(pending));
    assert_int_equal(a.calls, 0);
    assert_int_equal(jpt_files_request_reply(h.kept, "{\"content\":\"now\",\"size\":3}"), JPT_OK);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.status, JPT_OK);
    assert_string_equal(a.json, "{\"content\":\"now\",\"size\":3}");
    free(a.json);
    /* A malformed answer fails the request with JPT_ERR_PROTOCOL. */
    assert_int_equal(submit(f, "fs.metadata", params, NULL, &a, &pending), JPT_OK);
    assert_int_equal(jpt_files_request_reply(h.kept, "{\"kind\":\"blob\",\"size\":1}"),
                     JPT_ERR_INVALID);
    assert_int_equal(a.status, JPT_ERR_PROTOCOL);
    assert_string_equal(a.message,
                        "fs.metadata 'later.txt': the backend's result is malformed: fs.metadata "
                        "needs \"kind\" (\"file\", \"dir\", \"symlink\" or \"other\") and a "
                        "non-negative integer \"size\"");
    assert_int_equal(submit(f, "fs.read", params, NULL, &a, &pending), JPT_OK);
    assert_int_equal(jpt_files_request_reply(h.kept, "not json"), JPT_ERR_INVALID);
    assert_int_equal(a.status, JPT_ERR_PROTOCOL);
    /* A failure's status and message reach the caller. */
    assert_int_equal(submit(f, "fs.read", params, NULL, &a, &pending), JPT_OK);
    assert_int_equal(jpt_files_request_fail(h.kept, JPT_ERR_TIMEOUT, "the database is slow"),
                     JPT_OK);
    assert_int_equal(a.status, JPT_ERR_TIMEOUT);
    assert_string_equal(a.message, "fs.read 'later.txt': the database is slow");
    /* Freed with a request outstanding: released once it is answered. */
    assert_int_equal(submit(f, "fs.read", params, NULL, &a, &pending), JPT_OK);
    jpt__files_cancel(pending);
    jpt_files_free(f);
    assert_int_equal(h.releases, 0);
    assert_int_equal(jpt_files_request_fail(h.kept, 1, NULL), JPT_OK);
    assert_int_equal(h.releases, 1);
    assert_int_equal(a.calls, 0);
}

static void host_backend_ops_are_checked(void **state)
{
    struct {
        jpt_files_ops ops;
        void *newer;
    } big = {{sizeof(big), host_call, NULL, NULL}, (void *)1};
    jpt_files_ops small = {sizeof(small) - 1, host_call, NULL, NULL};
    jpt_files_ops none = {sizeof(none), NULL, NULL, NULL};
    jpt_files *f = (jpt_files *)&f;

    (void)state;
    big.ops.size = sizeof(big);
    assert_int_equal(jpt_files_new(&big.ops, NULL, &f), JPT_ERR_UNSUPPORTED);
    assert_null(f);
    assert_int_equal(jpt_files_new(&small, NULL, &f), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_new(&none, NULL, &f), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_request_reply(NULL, "{}"), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_request_fail(NULL, JPT_ERR_IO, "x"), JPT_ERR_INVALID);
}

static int walk_mode(void **state)
{
    (void)state;
    mode = JPT__FILES_FORCE_WALK;
    return 0;
}

int main(void)
{
    const struct CMUnitTest openat2[] = {PATH_TESTS(openat2)};
    const struct CMUnitTest walk[] = {PATH_TESTS(walk)};
    const struct CMUnitTest others[] = {
        cmocka_unit_test_setup_teardown(open_dir_errors, tree_setup, tree_teardown),
        cmocka_unit_test(memory_backend_has_the_same_rules),
        cmocka_unit_test(host_backend_answering_at_once),
        cmocka_unit_test(host_backend_answering_later),
        cmocka_unit_test(host_backend_answers_are_written_in_d11_shape),
        cmocka_unit_test(host_backend_ops_are_checked),
    };
    int failed;

    tu_hygiene_begin();
    failed = cmocka_run_group_tests_name("openat2", openat2, NULL, NULL);
    failed += cmocka_run_group_tests_name("component walk", walk, walk_mode, NULL);
    failed += cmocka_run_group_tests_name("backends", others, NULL, NULL);
    return tu_hygiene_end(failed);
}
