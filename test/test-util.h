/* Helpers every test suite shares: the end-of-suite hygiene check (no fd
 * and no child left behind), a counting allocator that can fail the Nth
 * allocation, and state comparison through the public API. */
#ifndef JPT_TEST_UTIL_H
#define JPT_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jptool/jptool.h>

/* Runs a cmocka group and then checks that the suite left no open fd and no
 * unreaped child behind; the exit status is non-zero on any failure. */
#define TU_RUN(tests)                                                          \
    (tu_hygiene_begin(), tu_hygiene_end(cmocka_run_group_tests(tests, NULL, NULL)))

void tu_hygiene_begin(void);
int tu_hygiene_end(int failed);

/* The OS sandbox mode for suites that test something else with VFS tools:
 * the default (required), or best-effort where this process sees no
 * Landlock (under valgrind 3.19, which does not pass landlock_* calls
 * through), said once on the test output. test-sandbox tests the modes. */
int tu_sandbox_mode(void);

/* Installs the counting allocator; must run before any other jptool call.
 * tu_fail_at(n) makes the nth allocation from now (1-based) fail, and every
 * one after it, until tu_fail_at(0). */
void tu_install_counting_allocator(void);
void tu_fail_at(long n);
/* Makes only the nth allocation from now fail, the ones after it succeed
 * (0: none): what a program that recovers from a failure meets. */
void tu_fail_only(long n);
/* Prints (stderr) the stack of the first allocation that failed since the
 * last tu_fail_at(): what a sweep's hung or leaking run ran out at. */
void tu_print_first_failure(void);
/* Allocations made since the last tu_fail_at(). */
long tu_allocations(void);
/* Blocks allocated and not yet freed. */
long tu_live_blocks(void);
/* Runs `op(ctx)` with allocation n failing, for n = 1, 2, … until it
 * returns JPT_OK: each failing run must return JPT_ERR_NOMEM and leave no
 * block allocated. `what` names the operation in the failure. */
void tu_sweep(const char *what, int (*op)(void *ctx), void *ctx);
/* For an op under tu_sweep whose setup must not fail: disarms the failure
 * the sweep armed and returns its n; tu_fail_at(n) after the setup arms it
 * again, counting from there. */
long tu_fail_hold(void);
/* Bytes allocated and not yet freed (as malloc_usable_size counts them),
 * and the most there were since the last tu_peak_bytes() call. */
size_t tu_live_bytes(void);
size_t tu_peak_bytes(void);

/* The process's resident memory from /proc/self/status, in KiB: the peak
 * (VmHWM) since tu_rss_reset(), which starts a new peak (clear_refs) and
 * returns the resident size now (VmRSS). Issue 15 §6 measures the host's
 * memory with these, from the outside. */
size_t tu_rss_reset(void);
size_t tu_rss_peak(void);
/* How many times the resident sizes are inflated here: 3 under
 * AddressSanitizer (shadow memory, the quarantine of freed blocks) or
 * valgrind (its shadow memory), else 1. A bound on memory growth is
 * multiplied by it. */
unsigned tu_rss_factor(void);

/* RFD 058's waiting example: two text blocks of context and question
 * "hunk_3" with an enum schema and a default. */
extern const char tu_rfd058_waiting[];

/* Parses `text` (asserting success). */
jpt_state *tu_parse(const char *text);
/* Renders with `root` (asserting success); free with jpt_free(). */
char *tu_render(const jpt_state *s, const char *root);
/* Serialises in `form` (asserting success); free with jpt_free(). */
char *tu_to_json(const jpt_state *s, int form);

/* Asserts two states say the same: kind, error, trace, structured content,
 * and every field of every block (JSON fields compared as JSON). Warnings
 * are not compared. */
void tu_assert_states_equal(const jpt_state *a, const jpt_state *b);

/* Asserts that JSON texts are equal as JSON (object member order ignored). */
void tu_assert_json_equal(const char *actual, const char *expected);

#endif
