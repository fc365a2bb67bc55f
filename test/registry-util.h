/* Helpers for the registry suites: a registry with short timings, tool
 * configs that point at test/tools, and calls run to completion. */
#ifndef JPT_TEST_REGISTRY_UTIL_H
#define JPT_TEST_REGISTRY_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "test-util.h"

/* The directory of the helper programs (test/tools in the build tree). */
#ifndef JPT_TEST_TOOLS
#error "JPT_TEST_TOOLS must name the test tools' directory"
#endif
#define TOOL(name) JPT_TEST_TOOLS "/" name

/* Generous bound for waits: a test never asserts a duration. Under
 * valgrind (JPT_TEST_SLOWDOWN, set by the valgrind test setup) it grows by
 * that factor: a bound that stops a hung test, not a timing check. */
#define WAIT_MS ru_wait_ms()
int ru_wait_ms(void);

/* A registry with a short kill grace and drain window (for speed), the
 * given tools loaded. Fails the test on error. */
jpt_registry *ru_registry(const char *tools_json);
jpt_registry *ru_registry_with(const jpt_registry_options *opts, const char *tools_json);

/* ---- A suite's scratch directory and its registry ------------------------- */

/* The fixture of the suites that run tools in a scratch directory: a new
 * directory per test (ru_setup), the registry the test made (ru_current),
 * freed with the directory by ru_teardown whatever the test did. */
extern char ru_scratch[64];
extern jpt_registry *ru_current;
int ru_setup(void **state);
/* Frees ru_current, removes the log hook, releases kept requests
 * (ru_release_kept) and removes the scratch directory. */
int ru_teardown(void **state);
#define RU_TEST(name) cmocka_unit_test_setup_teardown(name, ru_setup, ru_teardown)
/* A registry rooted in ru_scratch, as ru_current: the fields of `o` left
 * 0 get short timings (kill grace 300 ms, drain 100 ms, settle 50 ms). */
jpt_registry *ru_scratch_registry(jpt_registry_options *o, const char *tools_json);
/* ru_scratch_registry() with the tools of a NULL-terminated list of
 * definitions (taken). */
jpt_registry *ru_scratch_registry_of(jpt_registry_options *o, json_t *first, ...);
/* Frees the registry `r`, which must be ru_current. */
void ru_done(jpt_registry *r);
/* One call run to completion: its content compared with `content_js`
 * (js() text) as JSON, or with `text` exactly; and its is_error flag. */
void ru_call_expect(jpt_registry *r, const char *tool, const char *args_js,
                    const char *content_js, bool is_error);
void ru_call_expect_text(jpt_registry *r, const char *tool, const char *args_js,
                         const char *text, bool is_error);

/* Submits `calls_json`, waits for the batch, and returns its results
 * (parsed); the batch is freed. */
json_t *ru_run(jpt_registry *r, const char *calls_json);

/* One call {"id":"c1","name":tool,"arguments":arguments_json}, run to
 * completion; returns a copy of its content and sets *is_error. */
char *ru_call(jpt_registry *r, const char *tool, const char *arguments_json, bool *is_error);

/* The content of result i, and its is_error flag. */
const char *ru_content(const json_t *results, size_t i);
bool ru_is_error(const json_t *results, size_t i);

/* Parses a stateful response {"id","state",…} (asserting it is JSON). */
json_t *ru_response(const char *content);

/* Polls the registry's fd for up to `max_ms` (less if a timer is due). */
void ru_poll(jpt_registry *r, int max_ms);

/* JSON written with single quotes, to keep it legible: js("{'a':1}") is
 * {"a":1}. The text lives until eight more calls. */
const char *js(const char *text);
/* Parses JSON text (any value), failing the test if it is not JSON. */
json_t *parse(const char *text);
/* Compares a jansson value with expected JSON text, as JSON. */
void assert_json(const json_t *actual, const char *expected);
/* One action run to completion; its content parsed as a handle response. */
json_t *act(jpt_registry *r, const char *tool, const char *args, bool *is_error);
/* A string member of a response, failing the test if it has none. */
const char *field(const json_t *resp, const char *key);

/* Submits calls written for js(), failing the test if submit fails. */
jpt_batch *ru_submit(jpt_registry *r, const char *calls_js);
/* The batch's results, parsed (new reference). */
json_t *ru_results(const jpt_batch *b);
/* Keeps `v` until ru_release_kept() (a suite's teardown), so that tests
 * can use results without freeing them; returns `v`. */
json_t *ru_keep(json_t *v);
void ru_release_kept(void);
/* How ru_finish waits: jpt_registry_wait unless a suite installs a
 * wrapper (as with ru_dispatch). */
extern int (*ru_wait)(jpt_registry *r, jpt_batch *b, int timeout_ms);
/* Waits for the batch (WAIT_MS), frees it and returns its results, kept
 * until ru_release_kept(). */
json_t *ru_finish(jpt_registry *r, jpt_batch *b);
/* ru_finish(r, ru_submit(r, calls_js)). */
json_t *ru_run_js(jpt_registry *r, const char *calls_js);
/* Pops and frees every queued event. */
void ru_drain_events(jpt_registry *r);
/* Result i is call `id` with `content`, a handle or await response
 * compared as JSON (written for js()). */
void ru_assert_response(const json_t *results, size_t i, const char *id,
                        const char *content_js, bool is_error);
/* Result i is call `id` with `text` as its content, exactly. */
void ru_assert_text(const json_t *results, size_t i, const char *id, const char *text,
                    bool is_error);

/* Whether event `e` is of `type`, for `id` (a call id for CALL_DONE, else
 * a handle id; NULL: any) in `state` (0: any). */
bool ru_event_matches(const jpt_event *e, int type, const char *id, int state);
/* Milliseconds on CLOCK_MONOTONIC. */
uint64_t ru_now_ms(void);
/* How the helpers below dispatch: jpt_registry_dispatch unless a suite
 * installs a wrapper (to note that it is inside dispatch, say). */
extern int (*ru_dispatch)(jpt_registry *r);
/* Dispatches until an event ru_event_matches() is popped (the others are
 * dropped); false if none came within WAIT_MS. */
bool ru_until_event(jpt_registry *r, int type, const char *id, int state);

/* The child slots of a state file's text: past the line that says where
 * the host's cgroups are, in cgroup containment. */
const char *ru_state_slots(const char *text);

/* Reads a small file whole; returns its length, or -1 when it is absent. */
long ru_read_text(const char *path, char *buf, size_t n);

/* A builtin handle reports a state of `kind` holding one text block
 * (asserting every step succeeds). */
void ru_report(jpt_handle *h, int kind, const char *text);

/* RFD 037's await tool, its schema and description exactly as the RFD
 * gives them. */
extern const char ru_await_schema[];
extern const char ru_await_description[];

/* Asserts that `haystack` contains `needle`. */
void ru_assert_contains(const char *haystack, const char *needle);

/* Asserts that `text` is what a call naming handle `id` is told once the
 * handle has gone, its result given to the model (handle.h, ended ids):
 * "Handle `id` has stopped, and …" or "… does not exist: its spawn never
 * ran …". A handle still registered would answer with its state. */
void ru_assert_gone_text(const char *text, const char *id);

/* ---- VFS tools: a standalone host serving test/tools/vfs-probe ---------- */

/* What a policy handler was asked, and how it answers: the one policy
 * prompt of the test suites. */
typedef struct ru_asked {
    int count;
    int decision;              /* what the handler answers, or -1: it keeps
                                  the request (in `kept`) */
    const char *reason;        /* added to a denial */
    jpt_policy_request *kept;
    /* The last ask: "method path [tool]: reason", and each part. */
    char last[1280];
    char method[32], path[512], tool[64], id[64], why[512];
    int access;
    char requested[512];       /* its jpt_policy_request_requested_path() */
} ru_asked;

/* The policy handler (jpt_policy_fn) that records into the ru_asked `ud`
 * and answers with its decision, at once. */
void ru_on_ask(jpt_policy_request *req, void *ud);

/* A standalone VFS host on the directory `root` (or on `files`, when not
 * NULL), with the sandbox section `sandbox_js` (written for js(); NULL:
 * none), the request timeout `timeout_ms` (0: the default), `a`'s policy
 * handler (NULL: none), in the OS sandbox mode of tu_sandbox_mode(). */
jpt_vfs_host *ru_vfs_host(const char *root, jpt_files *files, const char *sandbox_js,
                          int timeout_ms, ru_asked *a);
/* Spawns test/tools/vfs-probe, named "probe", with the init arguments
 * `arguments_json` (JSON text of any length). */
void ru_vfs_spawn(jpt_vfs_host *h, const char *arguments_json);
/* Runs the tool to its end (WAIT_MS), rendered: "ok: text" or "error:
 * text" (free()). */
char *ru_vfs_end(jpt_vfs_host *h);

/* A host's path (issue 18): registry_new with `o`, load_tools, submit
 * `calls`, wait, the results, free. JPT_OK with the results in `*out`
 * (free()), or the status of the step that failed; a batch that completes
 * with a result saying "out of memory" is JPT_ERR_NOMEM too (the failure
 * was met and answered). A batch that never completes fails the test,
 * with the stack of the first failed allocation and the calls pending. */
int ru_run_path(const jpt_registry_options *o, const char *tools, const char *calls,
                char **out);
/* Runs `run` (a path as above, results normalised as the caller likes)
 * with allocation N failing, for each N it makes: with every one after it
 * too, or alone (`once`). Each run gives the unhindered results exactly,
 * or JPT_ERR_NOMEM, and leaks nothing. Needs the counting allocator. */
void ru_sweep(const char *what, int (*run)(char **out), bool once);

/* ---- Processes a test left ------------------------------------------------ */

/* The live processes (not zombies) whose command line is exactly `sleep
 * <seconds>`, in the host's view of /proc: a test's own marker, which
 * names its process whatever PID namespace it runs in. */
int ru_count_sleeping(const char *seconds);
/* No `sleep <seconds>` is left, within WAIT_MS (SIGKILL is delivered, not
 * awaited); one that is fails the test, and is killed. */
void ru_assert_none_sleeping(const char *seconds);

#endif
