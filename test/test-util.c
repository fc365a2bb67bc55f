/* Shared test helpers; see test-util.h. */
#include <dirent.h>
#include <execinfo.h>
#include <malloc.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <jansson.h>
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#include "test-util.h"
#include "sandbox/sandbox.h"

/* ---- Hygiene ---------------------------------------------------------------- */

#define MAX_FDS 4096

static int fds_before[MAX_FDS];
static size_t nfds_before;

static int compare_ints(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* The process's open fds, sorted (valgrind and the like hold their own, which
 * is why the check compares before and after rather than expecting 0-2). */
static size_t list_fds(int *fds)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    size_t n = 0;

    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL && n < MAX_FDS) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
            continue;
        fds[n++] = atoi(e->d_name);
    }
    closedir(d);
    qsort(fds, n, sizeof(*fds), compare_ints);
    return n;
}

int tu_sandbox_mode(void)
{
    static int mode = -1;
    const char *why = NULL;

    if (mode < 0) {
        mode = jpt__landlock_abi(&why) > 0 ? JPT_SANDBOX_DEFAULT : JPT_SANDBOX_BEST_EFFORT;
        if (mode == JPT_SANDBOX_BEST_EFFORT)
            print_message("note: no Landlock here (%s): VFS tools run with the OS sandbox "
                          "best-effort\n",
                          why);
    }
    return mode;
}

void tu_hygiene_begin(void)
{
    /* JPT_TEST_FILTER=glob runs only the matching tests (debugging). */
    const char *filter = getenv("JPT_TEST_FILTER");
    if (filter != NULL && *filter != '\0')
        cmocka_set_test_filter(filter);
    nfds_before = list_fds(fds_before);
}

int tu_hygiene_end(int failed)
{
    static int fds_after[MAX_FDS];
    size_t nfds_after = list_fds(fds_after);
    int status;

    if (nfds_after != nfds_before ||
        memcmp(fds_before, fds_after, nfds_after * sizeof(int)) != 0) {
        fprintf(stderr, "hygiene: the open fds changed:");
        for (size_t i = 0; i < nfds_after; i++)
            fprintf(stderr, " %d", fds_after[i]);
        fprintf(stderr, " (there were %zu)\n", nfds_before);
        failed++;
    }
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid >= 0 || errno != ECHILD) {
        fprintf(stderr, "hygiene: a child process was left behind (pid %d)\n",
                (int)pid);
        failed++;
    }
    return failed != 0;
}

/* ---- Counting allocator --------------------------------------------------- */

static long fail_at, allocations, live;
static bool fail_once; /* only allocation fail_at fails, not those after */
static size_t live_bytes, peak_bytes;

static void count_bytes(size_t freed, size_t got)
{
    live_bytes += got - freed;
    if (live_bytes > peak_bytes)
        peak_bytes = live_bytes;
}

/* Where the first failed allocation of a sweep's run was made. */
static void *first_failure[32];
static int nfirst_failure;

static bool should_fail(void)
{
    allocations++;
    if (fail_at <= 0 || allocations < fail_at || (fail_once && allocations > fail_at))
        return false;
    if (allocations == fail_at)
        nfirst_failure = backtrace(first_failure, 32);
    return true;
}

void tu_print_first_failure(void)
{
    fprintf(stderr, "the first failed allocation was made at:\n");
    backtrace_symbols_fd(first_failure, nfirst_failure, 2);
}

static void *counting_malloc(size_t n, void *ud)
{
    (void)ud;
    if (should_fail())
        return NULL;
    void *p = malloc(n);
    live += p != NULL;
    if (p != NULL)
        count_bytes(0, malloc_usable_size(p));
    return p;
}

static void *counting_realloc(void *p, size_t n, void *ud)
{
    (void)ud;
    if (should_fail())
        return NULL;
    size_t before = malloc_usable_size(p);
    void *q = realloc(p, n);
    if (q != NULL)
        count_bytes(before, malloc_usable_size(q));
    return q;
}

static void counting_free(void *p, void *ud)
{
    (void)ud;
    live -= p != NULL;
    count_bytes(malloc_usable_size(p), 0);
    free(p);
}

void tu_install_counting_allocator(void)
{
    jpt_allocator a = {sizeof(a), counting_malloc, counting_realloc, counting_free, NULL};
    assert_int_equal(jpt_set_allocator(&a), JPT_OK);
}

void tu_fail_only(long n)
{
    tu_fail_at(n);
    fail_once = n > 0;
}

void tu_fail_at(long n)
{
    fail_once = false;
    if (n > 0)
        nfirst_failure = 0;
    fail_at = n;
    allocations = 0;
}

long tu_fail_hold(void)
{
    long n = fail_at;

    tu_fail_at(0);
    return n;
}

long tu_allocations(void)
{
    return allocations;
}

long tu_live_blocks(void)
{
    return live;
}

void tu_sweep(const char *what, int (*op)(void *ctx), void *ctx)
{
    for (long n = 1;; n++) {
        long before = tu_live_blocks();
        tu_fail_at(n);
        int rc = op(ctx);
        tu_fail_at(0);
        if (tu_live_blocks() != before || (rc != JPT_OK && rc != JPT_ERR_NOMEM))
            tu_print_first_failure();
        if (tu_live_blocks() != before)
            fail_msg("%s: %ld block(s) leaked with allocation %ld failing", what,
                     tu_live_blocks() - before, n);
        if (rc == JPT_OK)
            return;
        if (rc != JPT_ERR_NOMEM)
            fail_msg("%s: allocation %ld failing gave %s, not JPT_ERR_NOMEM", what, n,
                     jpt_status_name(rc));
        assert_true(n < 100000);
    }
}

size_t tu_live_bytes(void)
{
    return live_bytes;
}

/* The `key` line of /proc/self/status, in KiB. */
static size_t status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    size_t kib = 0, n = strlen(key);

    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, key, n) == 0 && line[n] == ':')
            kib = strtoul(line + n + 1, NULL, 10);
    fclose(f);
    assert_true(kib > 0);
    return kib;
}

size_t tu_rss_reset(void)
{
    /* Memory freed before is given back first, so that what the test
     * allocates shows as growth rather than reusing it. */
    malloc_trim(0);
    FILE *f = fopen("/proc/self/clear_refs", "we");

    /* "5" resets the peak resident size to the current one (proc(5)). */
    assert_non_null(f);
    assert_true(fputs("5", f) >= 0);
    assert_int_equal(fclose(f), 0);
    return status_kib("VmRSS");
}

size_t tu_rss_peak(void)
{
    return status_kib("VmHWM");
}

unsigned tu_rss_factor(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 3;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 3;
#endif
#endif
    return RUNNING_ON_VALGRIND ? 3 : 1;
}

size_t tu_peak_bytes(void)
{
    size_t peak = peak_bytes;
    peak_bytes = live_bytes;
    return peak;
}

/* ---- States ----------------------------------------------------------------- */

jpt_state *tu_parse(const char *text)
{
    jpt_state *s = NULL;
    assert_int_equal(jpt_state_parse(text, strlen(text), 0, &s), JPT_OK);
    assert_non_null(s);
    return s;
}

char *tu_render(const jpt_state *s, const char *root)
{
    jpt_render_options opts = {sizeof(opts), root};
    char *out = NULL;
    assert_int_equal(jpt_state_render(s, &opts, &out), JPT_OK);
    assert_non_null(out);
    return out;
}

char *tu_to_json(const jpt_state *s, int form)
{
    char *out = NULL;
    assert_int_equal(jpt_state_to_json(s, form, 0, &out), JPT_OK);
    assert_non_null(out);
    return out;
}

static bool json_texts_equal(const char *a, const char *b)
{
    json_t *ja = json_loads(a, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    json_t *jb = json_loads(b, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    bool equal = ja != NULL && jb != NULL && json_equal(ja, jb);
    json_decref(ja);
    json_decref(jb);
    return equal;
}

void tu_assert_json_equal(const char *actual, const char *expected)
{
    if (!json_texts_equal(actual, expected))
        fail_msg("JSON differs:\n  actual:   %s\n  expected: %s", actual, expected);
}

static const int json_fields[] = {JPT_FIELD_SCHEMA, JPT_FIELD_DEFAULT,
                                  JPT_FIELD_ANNOTATIONS};

static bool is_json_field(int field)
{
    for (size_t i = 0; i < sizeof(json_fields) / sizeof(json_fields[0]); i++)
        if (json_fields[i] == field)
            return true;
    return false;
}

void tu_assert_states_equal(const jpt_state *a, const jpt_state *b)
{
    assert_int_equal(jpt_state_kind(a), jpt_state_kind(b));
    assert_int_equal(jpt_state_is_error(a), jpt_state_is_error(b));
    assert_string_equal(jpt_state_error_message(a), jpt_state_error_message(b));
    assert_int_equal(jpt_state_error_transient(a), jpt_state_error_transient(b));
    assert_int_equal(jpt_state_error_trace_count(a), jpt_state_error_trace_count(b));
    for (size_t i = 0; i < jpt_state_error_trace_count(a); i++)
        assert_string_equal(jpt_state_error_trace(a, i), jpt_state_error_trace(b, i));
    const char *sa = jpt_state_structured_content(a);
    const char *sb = jpt_state_structured_content(b);
    assert_true((sa == NULL) == (sb == NULL));
    if (sa != NULL)
        tu_assert_json_equal(sa, sb);

    assert_int_equal(jpt_state_block_count(a), jpt_state_block_count(b));
    for (size_t i = 0; i < jpt_state_block_count(a); i++) {
        assert_int_equal(jpt_state_block_type(a, i), jpt_state_block_type(b, i));
        for (int f = JPT_FIELD_TEXT; f <= JPT_FIELD_BLOB_SIZE; f++) {
            size_t la, lb;
            const char *fa = jpt_state_block_field(a, i, f, &la);
            const char *fb = jpt_state_block_field(b, i, f, &lb);
            if ((fa == NULL) != (fb == NULL))
                fail_msg("block %zu field %d: %s vs %s", i, f, fa ? fa : "(none)",
                         fb ? fb : "(none)");
            if (fa == NULL)
                continue;
            if (is_json_field(f))
                tu_assert_json_equal(fa, fb);
            else if (la != lb || memcmp(fa, fb, la) != 0)
                fail_msg("block %zu field %d differs: '%s' vs '%s'", i, f, fa, fb);
        }
    }
}

const char tu_rfd058_waiting[] =
    "{\"content\":["
    "{\"type\":\"text\",\"text\":\"Diff for hunk 3/5:\"},"
    "{\"type\":\"text\",\"text\":\"@@ -10,3 +10,4 @@\\n+    new_line();\"},"
    "{\"type\":\"question\",\"question\":{\"id\":\"hunk_3\",\"text\":\"Stage this hunk?\","
    "\"schema\":{\"type\":\"string\",\"enum\":[\"y\",\"n\",\"s\",\"q\"]},"
    "\"default\":\"y\"}}],"
    "\"_meta\":{\"computer.jp/status\":\"waiting\"}}";
