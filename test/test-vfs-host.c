/* The VFS host (vfs.h, "A standalone host") and the registry's "vfs"
 * runtime, through real tool processes built on the SDK
 * (test/tools/vfs-probe): every fs.* method and error code, the access
 * policy on what is actually opened and its prompt, the races and files
 * TESTING.md lists (a directory swapped with a symlink to outside, a hard
 * link to an outside file, FIFOs, `.env` created after the start), a 100 MB
 * line, 10 000 pipelined requests, a tool that never reads its stdin, and
 * how a tool ends (its result, an exit without one, the request timeout,
 * broken protocol, cancel). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#include <jptool/vfs_tool.h>

#include "registry-util.h"
#include "sandbox/sandbox.h"
#include "syscall-count.h"
#include "test-files-util.h"
#include "test-util.h"

#define PROBE TOOL("vfs-probe")

extern char **environ;

static char root[200], outside[256];

static void poll_fd(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    if (timeout_ms < 0 || timeout_ms > 1000)
        timeout_ms = 1000;
    assert_true(poll(&p, 1, timeout_ms) >= 0);
}

/* A handle response's member `key`, as the model reads it. */
static void assert_response(jpt_registry *r, const char *tool, const char *args_js,
                            const char *state, const char *key, const char *text)
{
    bool err = false;
    char *content = ru_call(r, tool, js(args_js), &err);
    json_t *resp = ru_response(content);

    assert_false(err);
    assert_string_equal(field(resp, "state"), state);
    assert_string_equal(field(resp, key), text);
    json_decref(resp);
    free(content);
}

/* ---- A scratch workspace ------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    fu_workspace("vfs-host", root, outside);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fu_workspace_remove(root, outside);
    return 0;
}

/* ---- Running a probe through a standalone host --------------------------------- */

static jpt_vfs_host *host_new(const char *sandbox_js, int timeout_ms, ru_asked *a)
{
    return ru_vfs_host(root, NULL, sandbox_js, timeout_ms, a);
}

static void host_spawn(jpt_vfs_host *h, const char *arguments_js)
{
    ru_vfs_spawn(h, js(arguments_js));
}

/* Runs a probe to its end with `sandbox_js` and `arguments_js`. */
static char *probe(const char *sandbox_js, const char *arguments_js, ru_asked *a)
{
    jpt_vfs_host *h = host_new(sandbox_js, 0, a);

    host_spawn(h, arguments_js);
    char *end = ru_vfs_end(h);
    jpt_vfs_host_free(h);
    return end;
}

static void assert_end(char *end, const char *expected)
{
    if (strcmp(end, expected) != 0)
        fail_msg("the tool ended with\n  %s\nnot\n  %s", end, expected);
    free(end);
}

static void assert_end_contains(char *end, const char *part)
{
    if (strstr(end, part) == NULL)
        fail_msg("'%s' is not in the end:\n  %s", part, end);
    free(end);
}

/* ---- System calls per request (issue 17 §4) ------------------------------------------ */

/* The system calls of a probe's jpt_vfs_host_run doing fs.exists `count`
 * times. */
static long long exists_run_calls(int counter, int count)
{
    char args[256];
    long long before, after;
    jpt_vfs_host *h = host_new(NULL, 0, NULL);

    snprintf(args, sizeof(args),
             "{'repeat':{'method':'fs.exists','params':{'path':'hello.txt'},'count':%d}}", count);
    host_spawn(h, args);
    assert_true((before = syscall_counter_read(counter)) >= 0);
    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    assert_true((after = syscall_counter_read(counter)) >= 0);
    char *end = ru_vfs_end(h);
    char expected[64];
    snprintf(expected, sizeof(expected), "ok: %dx fs.exists ok {\"exists\":true}", count);
    assert_end_contains(end, expected);
    jpt_vfs_host_free(h);
    return after - before;
}

/* A sequential request costs jpt_vfs_host_run its wait (epoll_wait), the
 * pipe's read and write, and fs.exists's own three (openat2 of the path
 * beneath the root, fstat, close): six. It cost eleven: a poll then an
 * epoll_wait, a sigpending and two sigprocmask around the write, a
 * timerfd_settime for the request timeout restarted by every request. */
static void a_request_costs_the_host_its_wait_and_the_pipes_read_and_write(void **state)
{
    /* Not under valgrind, whose own calls in this thread it would count. */
    int counter = RUNNING_ON_VALGRIND ? -1 : syscall_counter_open();

    (void)state;
    if (counter < 0) {
        print_message("note: no system call counter here (not root, or valgrind): skipped\n");
        skip();
    }
    long long one = exists_run_calls(counter, 1), many = exists_run_calls(counter, 201);
    double per = (double)(many - one) / 200.0;
    close(counter);
    if (per > 6.5)
        fail_msg("%.2f system calls per fs.exists in jpt_vfs_host_run, not 6", per);
}

/* ---- Every method ------------------------------------------------------------------- */

static void every_method_answers_as_d11_says(void **state)
{
    (void)state;
    assert_end(
        probe("{'filesystem':{'writable':['out/']}}",
              "{'ops':["
              "{'method':'fs.write','params':{'path':'out/a.txt','content':'one\\ntwo\\n'}},"
              "{'method':'fs.read','params':{'path':'out/a.txt'}},"
              "{'method':'fs.exists','params':{'path':'out/a.txt'}},"
              "{'method':'fs.exists','params':{'path':'out/none'}},"
              "{'method':'fs.metadata','params':{'path':'out/a.txt'}},"
              "{'method':'fs.list_dir','params':{'path':'out'}},"
              "{'method':'fs.rename','params':{'from':'out/a.txt','to':'out/b.txt'}},"
              "{'method':'fs.grep','params':{'pattern':'tw','paths':['out']}},"
              "{'method':'fs.delete','params':{'path':'out/b.txt'}},"
              "{'method':'fs.exists','params':{'path':'out/b.txt'}}]}",
              NULL),
        "ok: fs.write ok {}\n"
        "fs.read ok {\"content\":\"one\\ntwo\\n\",\"size\":8}\n"
        "fs.exists ok {\"exists\":true}\n"
        "fs.exists ok {\"exists\":false}\n"
        "fs.metadata ok {\"kind\":\"file\",\"size\":8}\n"
        "fs.list_dir ok {\"entries\":[{\"path\":\"a.txt\",\"kind\":\"file\"}]}\n"
        "fs.rename ok {}\n"
        "fs.grep ok {\"matches\":[{\"path\":\"out/b.txt\",\"lines\":[{\"line_number\":2,"
        "\"content\":\"two\",\"is_match\":true}]}],\"truncated\":false}\n"
        "fs.delete ok {}\n"
        "fs.exists ok {\"exists\":false}");
}

static void errors_carry_d11_codes_and_never_the_root(void **state)
{
    (void)state;
    char *end = probe("{'filesystem':{'writable':true}}",
                      "{'ops':["
                      "{'method':'fs.read','params':{'path':'missing.txt'}},"
                      "{'method':'fs.rename','params':{'from':'hello.txt','to':'src/main.c'}},"
                      "{'method':'fs.read','params':{}},"
                      "{'method':'fs.chmod','params':{'path':'hello.txt'}},"
                      "{'method':'http.get','params':{'url':'https://example.com'}},"
                      "{'method':'fs.read','params':{'path':'.env'}},"
                      "{'method':'fs.read','params':{'path':'/etc/passwd'}},"
                      "{'method':'fs.read','params':{'path':'../x'}}]}",
                      NULL);
    const char *codes[] = {"fs.read err -32002 ", "fs.rename err -32003 ",
                           "fs.read err -32602 ", "fs.chmod err -32601 ",
                           "http.get err -32001 ", "fs.read err -32001 ",
                           "fs.read err -32602 ", "fs.read err -32602 "};
    const char *p = end + 4;
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (strncmp(p, codes[i], strlen(codes[i])) != 0)
            fail_msg("line %zu is not '%s…':\n%s", i + 1, codes[i], end);
        p = strchr(p, '\n');
        p = p != NULL ? p + 1 : "";
    }
    /* issue 9 §2: "Error texts name the requested relative path, never the
     * host's absolute root". */
    assert_null(strstr(end, root));
    free(end);
}

/* ---- The policy on what is opened ------------------------------------------------ */

static void a_symlink_out_of_the_root_fails_without_naming_its_target(void **state)
{
    (void)state;
    char link[512];
    snprintf(link, sizeof(link), "%s/escape", root);
    assert_int_equal(symlink(outside, link), 0);
    char *end = probe(NULL, "{'ops':[{'method':'fs.read','params':{'path':'escape/secret.txt'}},"
                            "{'method':'fs.list_dir','params':{'path':'escape'}}]}",
                      NULL);
    assert_null(strstr(end, "OUTSIDE"));
    assert_null(strstr(end, outside));
    assert_null(strstr(end, root));
    assert_end_contains(end, "fs.read err -32001 fs.read 'escape/secret.txt'");
    unlink(link);
}

static void a_hard_link_to_an_outside_file_is_refused(void **state)
{
    (void)state;
    char from[512], to[512];
    snprintf(from, sizeof(from), "%s/secret.txt", outside);
    snprintf(to, sizeof(to), "%s/linked.txt", root);
    if (link(from, to) != 0)
        skip(); /* another file system */
    char *end = probe(NULL, "{'ops':[{'method':'fs.read','params':{'path':'linked.txt'}}]}",
                      NULL);
    assert_null(strstr(end, "OUTSIDE"));
    assert_end_contains(end, "fs.read err -32001 ");
    /* ...unless the policy allows hard links: then the standalone host
     * opens its root with them allowed (it used to ignore the setting). */
    assert_end(probe("{'filesystem':{'hardlinks':'allow'}}",
                     "{'ops':[{'method':'fs.read','params':{'path':'linked.txt'}}]}", NULL),
               "ok: fs.read ok {\"content\":\"OUTSIDE\\n\",\"size\":8}");
    unlink(to);
}

/* The adversarial pass: fs.write keeps a file's mode, but the content is
 * the tool's, so not its set-user-ID and set-group-ID bits (the kernel
 * drops them when someone else writes the file): a root host would
 * otherwise make a program that runs as root, and owned by root, out of
 * any such file of the workspace. */
static void fs_write_drops_set_user_id_bits(void **state)
{
    (void)state;
    char path[512];
    struct stat st;
    snprintf(path, sizeof(path), "%s/helper", root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    assert_int_equal(chmod(path, 06755), 0);
    assert_end(probe("{'filesystem':{'writable':true}}",
                     "{'ops':[{'method':'fs.write','params':{'path':'helper',"
                     "'content':'#!/bin/sh\\nid\\n'}}]}",
                     NULL),
               "ok: fs.write ok {}");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);
    unlink(path);
}

static void fifos_are_refused_at_once_and_delay_nothing(void **state)
{
    (void)state;
    char path[512];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/fifo%d", root, i);
        assert_int_equal(mkfifo(path, 0600), 0);
    }
    /* A FIFO nobody writes would block a read for ever: each is refused
     * at once, and the read after them answers. */
    char *end = probe(NULL, "{'ops':["
                            "{'method':'fs.read','params':{'path':'fifo0'}},"
                            "{'method':'fs.read','params':{'path':'fifo1'}},"
                            "{'method':'fs.read','params':{'path':'fifo2'}},"
                            "{'method':'fs.read','params':{'path':'fifo3'}},"
                            "{'method':'fs.read','params':{'path':'hello.txt'}}]}",
                      NULL);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/fifo%d", root, i);
        unlink(path);
    }
    assert_end_contains(end, "fs.read ok {\"content\":\"hello\\n\",\"size\":6}");
}

/* A thread swaps a real directory and a symlink to outside with
 * renameat2(RENAME_EXCHANGE) while the tool reads, lists and writes under
 * the name: nothing from outside is ever read, listed or written. */
typedef struct swapper {
    atomic_bool stop;
    char a[512], b[512];
    long swaps;
} swapper;

static void *swap_loop(void *arg)
{
    swapper *s = arg;

    /* Under valgrind, which runs one thread at a time, the loop lets the
     * host's thread in between swaps, or it starves it. */
    bool yield = getenv("JPT_TEST_SLOWDOWN") != NULL;
    while (!atomic_load(&s->stop)) {
        if (renameat2(AT_FDCWD, s->a, AT_FDCWD, s->b, RENAME_EXCHANGE) == 0)
            s->swaps++;
        if (yield)
            sched_yield();
    }
    return NULL;
}

static void swapping_a_directory_with_a_symlink_never_escapes(void **state)
{
    (void)state;
    swapper s = {0};
    char dir[512];

    snprintf(s.a, sizeof(s.a), "%s/swap", root);
    snprintf(s.b, sizeof(s.b), "%s/swap-link", root);
    assert_int_equal(mkdir(s.a, 0755), 0);
    fu_write(s.a, "secret.txt", "inside\n");
    assert_int_equal(symlink(outside, s.b), 0);
    snprintf(dir, sizeof(dir), "%s", outside);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, swap_loop, &s), 0);
    char *end = probe("{'filesystem':{'writable':['swap/']}}",
                      "{'repeat':{'method':'fs.read','params':{'path':'swap/secret.txt'},"
                      "'count':10000}}",
                      NULL);
    char *listed = probe(NULL,
                         "{'repeat':{'method':'fs.list_dir','params':{'path':'swap'},"
                         "'count':2000}}",
                         NULL);
    char *written = probe("{'filesystem':{'writable':['swap/']}}",
                          "{'repeat':{'method':'fs.write','params':{'path':'swap/w.txt',"
                          "'content':'x'},'count':2000}}",
                          NULL);
    atomic_store(&s.stop, true);
    pthread_join(th, NULL);
    assert_true(s.swaps > 0);
    assert_null(strstr(end, "OUTSIDE"));
    assert_null(strstr(listed, "secret.txt\",\"type\":\"file\"},{") ); /* never outside's list */
    char path[512];
    snprintf(path, sizeof(path), "%s/w.txt", outside);
    assert_int_equal(access(path, F_OK), -1);
    free(end);
    free(listed);
    free(written);
    fu_rmtree(s.a);
    unlink(s.b);
}

/* D11 sensitive paths: ".env" created after the tool started is denied all
 * the same (matched on names at request time). */
static void env_created_after_the_start_is_denied(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof(path), "%s/later", root);
    assert_int_equal(mkdir(path, 0755), 0);
    jpt_vfs_host *h = host_new(NULL, 0, NULL);
    host_spawn(h, "{'stateful':true}");
    jpt_state *st = NULL;
    while (jpt_vfs_host_state(h, &st) == JPT_ERR_AGAIN) {
        poll_fd(jpt_vfs_host_get_fd(h), jpt_vfs_host_get_timeout(h));
        assert_true(jpt_vfs_host_dispatch(h) >= 0);
    }
    jpt_state_unref(st);
    fu_write(root, "later/.env", "LATE=1\n");
    assert_int_equal(jpt_vfs_host_apply(h, "\"read later/.env\""), JPT_OK);
    assert_int_equal(jpt_vfs_host_apply(h, "\"stop\""), JPT_OK);
    char *end = ru_vfs_end(h);
    jpt_vfs_host_free(h);
    assert_end(end, "ok: stopped on request");
    fu_rmtree(path);
}

/* ---- The prompt ------------------------------------------------------------------------ */

#define WRITE_TWICE                                                                             \
    "{'ops':[{'method':'fs.write','params':{'path':'notes.txt','content':'a'}},"               \
    "{'method':'fs.write','params':{'path':'notes.txt','content':'b'}}]}"

static void an_allowed_ask_lets_the_request_through_once(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    assert_end(probe(NULL, WRITE_TWICE, &a), "ok: fs.write ok {}\nfs.write ok {}");
    assert_int_equal(a.count, 2);
    assert_string_equal(a.last, "fs.write notes.txt [probe]: needs approval: not covered by "
                                "the policy (the workspace is read-only: filesystem.writable "
                                "is false)");
}

static void allow_always_asks_once_per_path(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW_ALWAYS};
    assert_end(probe(NULL, WRITE_TWICE, &a), "ok: fs.write ok {}\nfs.write ok {}");
    assert_int_equal(a.count, 1);
}

static void a_denied_ask_tells_the_tool_why(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_DENY, .reason = "not today"};
    char *end = probe(NULL, "{'ops':[{'method':'fs.write','params':{'path':'notes.txt',"
                            "'content':'a'}}]}",
                      &a);
    assert_end(end, "ok: fs.write err -32001 fs.write 'notes.txt': denied by the host: not "
                    "today");
}

static void without_a_handler_an_ask_is_denied_saying_so(void **state)
{
    (void)state;
    assert_end(probe(NULL, "{'ops':[{'method':'fs.write','params':{'path':'n.txt',"
                           "'content':'a'}}]}",
                     NULL),
               "ok: fs.write err -32001 fs.write 'n.txt': needs approval: not covered by the "
               "policy (the workspace is read-only: filesystem.writable is false); no one could "
               "be asked (the host has no policy handler), so it is denied");
}

/* The `pending` notification names the request as every other message to
 * the tool does. */
static void pending_names_the_request(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    assert_end(probe(NULL, "{'show_pending':true,'ops':[{'method':'fs.write','params':"
                           "{'path':'n.txt','content':'a'}}]}",
                     &a),
               "ok: pending fs.write 'n.txt': needs approval: not covered by the policy (the "
               "workspace is read-only: filesystem.writable is false)\nfs.write ok {}");
}

/* fs.rename asks about each of its paths; allowing each once lets it
 * through (it used to ask for the first path again, forever). */
static void a_rename_allowed_once_asks_for_each_path_once(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    assert_end(probe(NULL, "{'ops':[{'method':'fs.rename','params':{'from':'hello.txt',"
                           "'to':'moved.txt'}}]}",
                     &a),
               "ok: fs.rename ok {}");
    assert_int_equal(a.count, 2);
    char moved[512], back[512];
    snprintf(moved, sizeof(moved), "%s/moved.txt", root);
    snprintf(back, sizeof(back), "%s/hello.txt", root);
    assert_int_equal(rename(moved, back), 0);
}

/* The handler may answer at any later time, from outside dispatch; the
 * tool waits meanwhile (it was told `pending`). */
static void an_ask_answered_later_goes_on(void **state)
{
    (void)state;
    ru_asked a = {.decision = -1};
    jpt_vfs_host *h = host_new(NULL, 0, &a);
    host_spawn(h, "{'ops':[{'method':'fs.write','params':{'path':'n.txt','content':'a'}}]}");
    while (a.kept == NULL) {
        poll_fd(jpt_vfs_host_get_fd(h), jpt_vfs_host_get_timeout(h));
        assert_true(jpt_vfs_host_dispatch(h) >= 0);
    }
    assert_int_equal(jpt_vfs_host_done(h), 0);
    assert_int_equal(jpt_policy_request_answer(a.kept, JPT_DECISION_ALLOW, NULL), JPT_OK);
    assert_end(ru_vfs_end(h), "ok: fs.write ok {}");
    jpt_vfs_host_free(h);
}

/* A request whose tool went away answers JPT_ERR_CANCELLED (and is freed). */
static void an_ask_outliving_its_tool_is_cancelled(void **state)
{
    (void)state;
    ru_asked a = {.decision = -1};
    jpt_vfs_host *h = host_new(NULL, 0, &a);
    host_spawn(h, "{'ops':[{'method':'fs.write','params':{'path':'n.txt','content':'a'}}]}");
    while (a.kept == NULL) {
        poll_fd(jpt_vfs_host_get_fd(h), jpt_vfs_host_get_timeout(h));
        assert_true(jpt_vfs_host_dispatch(h) >= 0);
    }
    assert_int_equal(jpt_vfs_host_cancel(h), JPT_OK);
    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    jpt_vfs_host_free(h);
    assert_int_equal(jpt_policy_request_answer(a.kept, JPT_DECISION_ALLOW, NULL),
                     JPT_ERR_CANCELLED);
}

/* ---- Volume ---------------------------------------------------------------------------- */

static void ten_thousand_pipelined_requests_are_all_answered(void **state)
{
    (void)state;
    assert_end(probe(NULL, "{'pipeline':10000,'path':'hello.txt'}", NULL), "ok: 10000 ok");
}

/* issue 9 §1: a line over the limit is answered -32600 and dropped
 * without being kept whole; the session goes on. */
static void a_100_mb_line_is_dropped_in_bounded_memory(void **state)
{
    (void)state;
    size_t before = tu_live_bytes();
    jpt_vfs_host *h = host_new(NULL, 0, NULL);
    host_spawn(h, "{'long_line':100000000}");
    char *end = ru_vfs_end(h);
    size_t peak = tu_peak_bytes();
    jpt_vfs_host_free(h);
    assert_end(end, "ok: fs.exists ok {\"exists\":true}");
    /* The line is ten times the limit; the host held far less. */
    assert_true(peak - before < 32u << 20);
}

/* A tool that writes requests and never reads its stdin: the host stops
 * taking them once its answers pile up (so it does not grow), and the
 * request timeout ends the tool. */
static void a_tool_that_never_reads_neither_blocks_nor_grows_the_host(void **state)
{
    (void)state;
    size_t before = tu_live_bytes();
    jpt_vfs_host *h = host_new(NULL, 500, NULL);
    host_spawn(h, "{'no_read':200000}");
    char *end = ru_vfs_end(h);
    size_t peak = tu_peak_bytes();
    jpt_vfs_host_free(h);
    assert_end_contains(end, "request timeout");
    assert_true(peak - before < 32u << 20);
}

/* ---- How a tool ends --------------------------------------------------------------- */

static void an_exit_without_a_result_is_an_error_with_its_stderr(void **state)
{
    (void)state;
    /* The probe read its init, then failed: it started, and its end does
     * not blame the sandbox (the host trial: every such end did). */
    assert_end(probe(NULL, "{'exit':3,'stderr':'it broke\\n'}", NULL),
               "error: Error: The tool exited (exit status 3) without a result\n\nstderr:\n"
               "it broke\n");
}

/* Issue 16 §4: a tool that died before it read its init, in an OS sandbox
 * that walls files in (not under valgrind, which passes no Landlock call
 * through): the end names the sandbox as the likely cause and the host's
 * option. */
static void an_exit_before_reading_init_names_the_sandbox(void **state)
{
    (void)state;
    const char *why = NULL;
    const char *hint = jpt__landlock_abi(&why) > 0 && tu_sandbox_mode() != JPT_SANDBOX_OFF
                           ? ". It ended before it read its input, and it ran in the OS "
                             "sandbox: the likely cause is a file it needs to start that the "
                             "sandbox does not let it read (its interpreter's, its libraries', "
                             "a virtual environment's). Grant such paths with "
                             "jpt_vfs_host_options.sandbox_read (Python: "
                             "VfsHost(sandbox_read=…)) (for a Python tool, the paths "
                             "jptool.python_tool_read_paths() gives)."
                           : "";
    const char *argv[] = {"/bin/sh", "-c", "echo it broke >&2; exit 3", NULL};
    jpt_vfs_host *h = host_new(NULL, 0, NULL);
    char want[1024];

    assert_int_equal(jpt_vfs_host_spawn(h, argv, "{\"name\":\"sh\",\"arguments\":{}}"), JPT_OK);
    snprintf(want, sizeof(want),
             "error: Error: The tool exited (exit status 3) without a result%s\n\nstderr:\n"
             "it broke\n",
             hint);
    assert_end(ru_vfs_end(h), want);
    jpt_vfs_host_free(h);
}

static void a_silent_tool_is_stopped_by_the_request_timeout(void **state)
{
    (void)state;
    jpt_vfs_host *h = host_new(NULL, 300, NULL);
    host_spawn(h, "{'silent':true}");
    assert_end(ru_vfs_end(h), "error: Error: The tool wrote no request and no result for 300 ms "
                            "and was stopped (D11 request timeout)");
    jpt_vfs_host_free(h);
}

static void broken_protocol_past_the_limit_stops_the_tool(void **state)
{
    (void)state;
    assert_end(probe(NULL, "{'garbage':3}", NULL), "ok: survived");
    assert_end_contains(probe(NULL, "{'garbage':40}", NULL), "error: Error: ");
}

static void an_unterminated_last_line_is_a_protocol_error(void **state)
{
    (void)state;
    assert_end_contains(probe(NULL, "{'unterminated':true}", NULL), "error: Error: ");
}

static void cancel_ends_a_tool_that_reads_it(void **state)
{
    (void)state;
    jpt_vfs_host *h = host_new(NULL, 0, NULL);
    host_spawn(h, "{'stateful':true}");
    jpt_state *st = NULL;
    while (jpt_vfs_host_state(h, &st) == JPT_ERR_AGAIN) {
        poll_fd(jpt_vfs_host_get_fd(h), jpt_vfs_host_get_timeout(h));
        assert_true(jpt_vfs_host_dispatch(h) >= 0);
    }
    jpt_state_unref(st);
    assert_int_equal(jpt_vfs_host_cancel(h), JPT_OK);
    assert_end(ru_vfs_end(h), "error: Error: The tool was cancelled before it ended");
    assert_int_equal(jpt_vfs_host_apply(h, "\"x\""), JPT_ERR_STATE);
    jpt_vfs_host_free(h);
}

/* D11: "If the tool does not exit within a timeout, JP kills the process
 * with SIGTERM, then SIGKILL." The silent probe ignores cancel. */
static void cancel_kills_a_tool_that_ignores_it(void **state)
{
    (void)state;
    jpt_vfs_host *h = host_new(NULL, -1, NULL);
    host_spawn(h, "{'silent':true}");
    assert_int_equal(jpt_vfs_host_cancel(h), JPT_OK);
    assert_end(ru_vfs_end(h), "error: Error: The tool was cancelled before it ended");
    jpt_vfs_host_free(h);
}

/* ---- Attached fds ----------------------------------------------------------------------- */

static void a_tool_started_by_the_application_is_served_on_its_fds(void **state)
{
    (void)state;
    int to_tool[2], from_tool[2];
    pid_t pid;
    posix_spawn_file_actions_t fa;
    char *argv[] = {PROBE, NULL};

    assert_int_equal(pipe2(to_tool, O_CLOEXEC), 0);
    assert_int_equal(pipe2(from_tool, O_CLOEXEC), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to_tool[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from_tool[1], 1);
    assert_int_equal(posix_spawn(&pid, PROBE, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(to_tool[0]);
    close(from_tool[1]);
    jpt_vfs_host *h = host_new(NULL, 0, NULL);
    assert_int_equal(jpt_vfs_host_attach(h, from_tool[0], to_tool[1],
                                         js("{'name':'probe','arguments':{'ops':[{'method':"
                                            "'fs.read','params':{'path':'hello.txt'}}]}}")),
                     JPT_OK);
    char *end = ru_vfs_end(h);
    jpt_vfs_host_free(h);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_end(end, "ok: fs.read ok {\"content\":\"hello\\n\",\"size\":6}");
}

static void host_misuse_is_refused_with_a_message(void **state)
{
    (void)state;
    jpt_vfs_host *h = NULL;
    jpt_vfs_host_options bad = {.size = sizeof(bad), .sandbox_json = "{\"filesystem\":1}"};
    const char *argv[] = {PROBE, NULL};

    assert_int_equal(jpt_vfs_host_new(&bad, &h), JPT_ERR_INVALID);
    assert_null(h);
    h = host_new(NULL, 0, NULL);
    assert_int_equal(jpt_vfs_host_run(h, 0), JPT_ERR_STATE);
    assert_int_equal(jpt_vfs_host_spawn(h, argv, "{\"arguments\":{}}"), JPT_ERR_INVALID);
    assert_string_equal(jpt_vfs_host_errmsg(h),
                        "tool_json must be an object with a non-empty \"name\"");
    assert_int_equal(jpt_vfs_host_spawn(h, argv, "{\"name\":\"p\",\"argument\":{}}"),
                     JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_apply(h, "1"), JPT_ERR_STATE);
    jpt_vfs_host_free(h);
}

/* ---- The registry's "vfs" runtime ------------------------------------------------------ */

static const char vfs_tools[] =
    "{'tools':[{'name':'probe','runtime':'vfs','command':['" PROBE "'],"
    "'parameters':{'type':'object'}},"
    "{'name':'keeper','runtime':'vfs','stateful':true,'command':['" PROBE "'],"
    "'sandbox':{'filesystem':{'writable':['out/']}}}]}";

static jpt_registry *vfs_registry(void)
{
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode()};
    return ru_registry_with(&o, js(vfs_tools));
}

static void a_one_shot_vfs_call_runs_through_the_registry(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_DENY};
    jpt_registry *r = vfs_registry();
    jpt_registry_set_policy_handler(r, ru_on_ask, &a);
    json_t *res = ru_run_js(r, "[{'id':'c1','name':'probe','arguments':{'ops':["
                               "{'method':'fs.read','params':{'path':'hello.txt'}},"
                               "{'method':'fs.read','params':{'path':'.env'}},"
                               "{'method':'fs.write','params':{'path':'x','content':''}}]}}]");
    ru_assert_text(res, 0, "c1",
                   "fs.read ok {\"content\":\"hello\\n\",\"size\":6}\n"
                   "fs.read err -32001 fs.read '.env': denied: path is in the sensitive paths "
                   "list (.env)\n"
                   "fs.write err -32001 fs.write 'x': denied by the host",
                   false);
    assert_int_equal(a.count, 1);
    jpt_registry_free(r);
}

static void on_output(const jpt_output *o, void *ud)
{
    char *buf = ud;
    size_t have = strlen(buf);

    assert_int_equal(o->stream, JPT_STREAM_STDERR); /* stdout is the protocol's */
    snprintf(buf + have, 128 - have, "%s:%.*s", o->id, (int)o->len, o->data);
}

/* The registry's output handler gets a vfs tool's stderr as it comes. */
static void the_output_handler_gets_a_vfs_tools_stderr(void **state)
{
    (void)state;
    char seen[128] = "";
    jpt_registry *r = vfs_registry();
    jpt_registry_set_output_handler(r, on_output, seen);
    json_t *res = ru_run_js(r, "[{'id':'c1','name':'probe','arguments':{'exit':3,"
                               "'stderr':'it broke'}}]");
    assert_true(ru_is_error(res, 0));
    assert_string_equal(seen, "c1:it broke");
    jpt_registry_free(r);
}

static void answer_yes(jpt_inquiry *q, void *ud)
{
    int *count = ud;

    (*count)++;
    assert_int_equal(jpt_inquiry_answer(q, "true"), JPT_OK);
}

/* A one-shot vfs tool's question goes to the inquiry handler, and the tool
 * runs again with the answer (RFD 009), as a stdio tool's does. */
static void a_one_shot_vfs_question_is_answered_and_the_tool_reruns(void **state)
{
    (void)state;
    int count = 0;
    jpt_registry *r = vfs_registry();
    jpt_registry_set_inquiry_handler(r, answer_yes, &count);
    json_t *res = ru_run_js(r, "[{'id':'c1','name':'probe','arguments':{'ask':true}}]");
    ru_assert_text(res, 0, "c1", "answered true", false);
    assert_int_equal(count, 1);
    jpt_registry_free(r);
}

static void a_stateful_vfs_tool_takes_apply_and_await(void **state)
{
    (void)state;
    jpt_registry *r = vfs_registry();
    assert_response(r, "keeper", "{'action':'spawn','id':'k','stateful':true}", "running",
                    "content", "ready");
    assert_response(r, "keeper", "{'action':'apply','id':'k','input':'read hello.txt'}",
                    "running", "content",
                    "fs.read ok {\"content\":\"hello\\n\",\"size\":6}");
    json_t *res = ru_run_js(r, "[{'id':'s','name':'keeper','arguments':{'action':'apply',"
                               "'id':'k','input':'stop'}},"
                               "{'id':'w','name':'await','arguments':{'all':['k']}}]");
    json_t *resp = ru_response(ru_content(res, 0));
    assert_string_equal(field(resp, "state"), "stopped");
    assert_string_equal(field(resp, "result"), "stopped on request");
    json_decref(resp);
    jpt_registry_free(r);
}

/* common.h's NULL rule over vfs.h and vfs_tool.h: statuses (and status-like
 * ints) JPT_ERR_INVALID, yes/no and counts 0, pointers NULL, messages "",
 * frees and setters nothing. */
static void every_vfs_function_takes_null_by_the_one_rule(void **state)
{
    (void)state;
    char *text = NULL, *data = NULL;
    size_t len = 0;
    int v = 0;
    uint64_t size = 0, id = 0;
    jpt_files *f = NULL;
    jpt_files_entry *entries = NULL;
    jpt_policy *p = NULL;
    jpt_vfs_host *h = NULL;
    jpt_vfs_tool *t = NULL;
    jpt_state *st = NULL;
    jpt_vfs_grep_query q = {.size = sizeof(q), .pattern = "x"};
    const char *argv[] = {"x", NULL};

    assert_int_equal(jpt_files_open_dir(NULL, 0, &f), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_new_memory(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_new(NULL, NULL, &f), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_request_reply(NULL, "{}"), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_request_fail(NULL, JPT_ERR_IO, "x"), JPT_ERR_INVALID);
    jpt_files_free(NULL);
    assert_string_equal(jpt_files_errmsg(NULL), "");
    assert_int_equal(jpt_files_read(NULL, "a", 0, &data, &len, &v), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_write(NULL, "a", "", 0), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_exists(NULL, "a", &v), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_metadata(NULL, "a", &v, &size), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_list_dir(NULL, "a", &entries, &len), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_delete(NULL, "a"), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_rename(NULL, "a", "b"), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_grep(NULL, "{}", &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_files_call(NULL, "fs.read", "{}", &text), JPT_ERR_INVALID);

    assert_int_equal(jpt_policy_new(NULL, NULL), JPT_ERR_INVALID);
    jpt_policy_free(NULL);
    assert_string_equal(jpt_policy_errmsg(NULL), "");
    assert_int_equal(jpt_policy_check(NULL, JPT_ACCESS_READ, "a", &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_policy_hardlinks_allowed(NULL), 0);
    assert_int_equal(jpt_policy_normalize_path(NULL, &text), JPT_ERR_INVALID);
    assert_null(jpt_policy_request_tool(NULL));
    assert_null(jpt_policy_request_method(NULL));
    assert_null(jpt_policy_request_path(NULL));
    assert_int_equal(jpt_policy_request_access(NULL), JPT_ERR_INVALID);
    assert_null(jpt_policy_request_reason(NULL));
    assert_null(jpt_policy_request_id(NULL));
    assert_int_equal(jpt_policy_request_answer(NULL, JPT_DECISION_ALLOW, NULL), JPT_ERR_INVALID);

    assert_int_equal(jpt_vfs_host_new(NULL, NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_spawn(NULL, argv, "{}"), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_attach(NULL, 0, 1, "{}"), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_get_fd(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_get_timeout(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_dispatch(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_run(NULL, 0), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_apply(NULL, "{}"), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_cancel(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_state(NULL, &st), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_host_done(NULL), 0);
    jpt_vfs_host_set_policy_handler(NULL, ru_on_ask, NULL);
    assert_string_equal(jpt_vfs_host_errmsg(NULL), "");
    jpt_vfs_host_free(NULL);

    assert_int_equal(jpt_vfs_tool_connect(NULL), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_connect_fds(0, 1, NULL, NULL), JPT_ERR_INVALID);
    jpt_vfs_tool_free(NULL);
    assert_string_equal(jpt_vfs_tool_errmsg(NULL), "");
    assert_int_equal(jpt_vfs_tool_error_code(NULL), 0); /* a JSON-RPC code: none */
    assert_null(jpt_vfs_tool_name(NULL));
    assert_null(jpt_vfs_tool_arguments(NULL));
    assert_null(jpt_vfs_tool_answers(NULL));
    assert_null(jpt_vfs_tool_options(NULL));
    assert_null(jpt_vfs_tool_protocol_version(NULL));
    assert_int_equal(jpt_vfs_tool_read(NULL, "a", &data, &len), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_write(NULL, "a", "", 0), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_exists(NULL, "a", &v), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_list_dir(NULL, "a", &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_metadata(NULL, "a", &v, &size), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_delete(NULL, "a"), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_rename(NULL, "a", "b"), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_grep(NULL, &q, &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_call(NULL, "fs.read", "{}", &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_submit(NULL, "fs.read", "{}", &id), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_submit_read(NULL, "a", &id), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_submit_write(NULL, "a", "", 0, &id), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_collect(NULL, 1, &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_collect_read(NULL, 1, &data, &len), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_state(NULL, "{}"), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_next_input(NULL, &text), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_cancelled(NULL), 0);
    assert_int_equal(jpt_vfs_tool_result(NULL, "[]"), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_result_text(NULL, "x"), JPT_ERR_INVALID);
    assert_int_equal(jpt_vfs_tool_error(NULL, "x", NULL, 0, 0), JPT_ERR_INVALID);
    assert_null(jpt_vfs_tool_error_data(NULL));
    assert_int_equal(
        jpt_vfs_tool_process_run(NULL, "x", NULL, 0, NULL, 0, &v, &text, &data),
        JPT_ERR_INVALID);
    (void)p;
    (void)h;
    (void)t;
}

int main(void)
{
    tu_install_counting_allocator();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_method_answers_as_d11_says),
        cmocka_unit_test(errors_carry_d11_codes_and_never_the_root),
        cmocka_unit_test(a_symlink_out_of_the_root_fails_without_naming_its_target),
        cmocka_unit_test(a_hard_link_to_an_outside_file_is_refused),
        cmocka_unit_test(fifos_are_refused_at_once_and_delay_nothing),
        cmocka_unit_test(fs_write_drops_set_user_id_bits),
        cmocka_unit_test(swapping_a_directory_with_a_symlink_never_escapes),
        cmocka_unit_test(env_created_after_the_start_is_denied),
        cmocka_unit_test(an_allowed_ask_lets_the_request_through_once),
        cmocka_unit_test(allow_always_asks_once_per_path),
        cmocka_unit_test(a_denied_ask_tells_the_tool_why),
        cmocka_unit_test(without_a_handler_an_ask_is_denied_saying_so),
        cmocka_unit_test(pending_names_the_request),
        cmocka_unit_test(a_rename_allowed_once_asks_for_each_path_once),
        cmocka_unit_test(an_ask_answered_later_goes_on),
        cmocka_unit_test(an_ask_outliving_its_tool_is_cancelled),
        cmocka_unit_test(ten_thousand_pipelined_requests_are_all_answered),
        cmocka_unit_test(a_100_mb_line_is_dropped_in_bounded_memory),
        cmocka_unit_test(a_tool_that_never_reads_neither_blocks_nor_grows_the_host),
        cmocka_unit_test(an_exit_without_a_result_is_an_error_with_its_stderr),
        cmocka_unit_test(an_exit_before_reading_init_names_the_sandbox),
        cmocka_unit_test(a_silent_tool_is_stopped_by_the_request_timeout),
        cmocka_unit_test(broken_protocol_past_the_limit_stops_the_tool),
        cmocka_unit_test(an_unterminated_last_line_is_a_protocol_error),
        cmocka_unit_test(cancel_ends_a_tool_that_reads_it),
        cmocka_unit_test(cancel_kills_a_tool_that_ignores_it),
        cmocka_unit_test(a_tool_started_by_the_application_is_served_on_its_fds),
        cmocka_unit_test(host_misuse_is_refused_with_a_message),
        cmocka_unit_test(every_vfs_function_takes_null_by_the_one_rule),
        cmocka_unit_test(a_request_costs_the_host_its_wait_and_the_pipes_read_and_write),
        cmocka_unit_test(a_one_shot_vfs_call_runs_through_the_registry),
        cmocka_unit_test(a_stateful_vfs_tool_takes_apply_and_await),
        cmocka_unit_test(a_one_shot_vfs_question_is_answered_and_the_tool_reruns),
        cmocka_unit_test(the_output_handler_gets_a_vfs_tools_stderr),
    };
    return tu_hygiene_end(
        (tu_hygiene_begin(), cmocka_run_group_tests(tests, setup, teardown)));
}
