/* vfs.h, "Bounds" (issue 15 §6): the host's memory stays bounded whatever
 * a tool does. Real tools (test/tools/vfs-flood: requests written, its
 * stdin never read) under a jpt_vfs_host and under a registry;
 * the host's resident memory is read from /proc/self/status before and
 * after (VmRSS, VmHWM) and must grow by less than a stated bound, where
 * a host that queued every answer grew by gigabytes. Each bound is also
 * met at its limit: the requests taken, fs.grep's result and its longest
 * line. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry-util.h"
#include "test-files-util.h"

#define FLOOD TOOL("vfs-flood")

/* The request timeout of these tests' tools: how long a tool that reads
 * nothing lives on. */
#define READ_TIMEOUT_MS 2000

/* The bound every flood must stay under: four answer budgets (vfs.h: the
 * budget and one more request's worst case, the pipe's queue, and the
 * allocator's slack), times what sanitizers and valgrind add. */
#define GROWTH_BOUND_KIB ((size_t)4 * (JPT_VFS_ANSWER_BUDGET >> 10))

static char *root;

/* big.txt: 16 MB of matching lines, so that one fs.grep answer is as big
 * as D11 lets one message be. */
static void write_big_file(void)
{
    enum { LINES = 160000 };
    char *text = malloc((size_t)LINES * 100 + 1);
    size_t n = 0;

    assert_non_null(text);
    for (int i = 0; i < LINES; i++)
        n += (size_t)sprintf(text + n, "match %07d %-84s\n", i, "padding");
    fu_write_n(root, "big.txt", text, n);
    free(text);
}

static int setup(void **state)
{
    (void)state;
    root = fu_tempdir();
    write_big_file();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fu_rmtree(root);
    free(root);
    return 0;
}

/* Checks how much the host's peak resident memory grew since `before`. */
static void assert_growth_bounded(size_t before, const char *what)
{
    size_t peak = tu_rss_peak();
    size_t growth = peak > before ? peak - before : 0;
    size_t bound = GROWTH_BOUND_KIB * tu_rss_factor();

    print_message("[ MEMORY   ] %s: the host grew by %zu KiB at its peak (bound %zu KiB)\n",
                  what, growth, bound);
    if (growth >= bound)
        fail_msg("%s: the host grew by %zu KiB, past the bound of %zu KiB", what, growth,
                 bound);
}

static void assert_stopped_for_not_reading(const char *text)
{
    char expected[128];

    snprintf(expected, sizeof(expected), "waiting for it for %d ms and was stopped",
             READ_TIMEOUT_MS);
    if (strstr(text, "The tool read none of the ") == NULL || strstr(text, expected) == NULL)
        fail_msg("the tool was not stopped for not reading: %s", text);
}

/* Spawns vfs-flood with `count` requests of `method` under a standalone
 * host on `sandbox`, runs it to its end, and returns its final text. */
static char *flood_host(const char *sandbox, int count, const char *method, const char *params)
{
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root, .sandbox_json = sandbox,
                              .request_timeout_ms = READ_TIMEOUT_MS, .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode()};
    jpt_vfs_host *h = NULL;
    char number[16];
    snprintf(number, sizeof(number), "%d", count);
    const char *argv[] = {FLOOD, number, method, params, NULL};
    jpt_state *st = NULL;
    char *text = NULL;

    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    if (jpt_vfs_host_spawn(h, argv, "{\"name\":\"flood\"}") != JPT_OK)
        fail_msg("spawn: %s", jpt_vfs_host_errmsg(h));
    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_vfs_host_state(h, &st), JPT_OK);
    assert_true(jpt_state_is_error(st));
    assert_int_equal(jpt_state_render(st, NULL, &text), JPT_OK);
    jpt_state_unref(st);
    jpt_vfs_host_free(h);
    return text;
}

/* ---- A tool that never reads ---------------------------------------------------- */

/* A hundred greps of 16 MB answers each, none read: a host that queued
 * every answer held 1.6 GB. */
static void greps_never_read_stay_within_the_budget(void **state)
{
    (void)state;
    size_t before = tu_rss_reset();
    char *text = flood_host(NULL, 100, "fs.grep",
                            "{\"pattern\":\"match\",\"max_matches\":100000000}");

    assert_growth_bounded(before, "100 greps never read (jpt_vfs_host)");
    assert_stopped_for_not_reading(text);
    jpt_free(text);
}

/* The same tool as a registry's "vfs" tool. */
static void greps_never_read_stay_within_the_budget_in_a_registry(void **state)
{
    (void)state;
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode()};
    char tools[1024];
    snprintf(tools, sizeof(tools),
             "{\"tools\":[{\"name\":\"flood\",\"runtime\":\"vfs\",\"command\":[\"%s\","
             "\"100\",\"fs.grep\",\"{\\\"pattern\\\":\\\"match\\\",\\\"max_matches\\\":"
             "100000000}\"],\"request_timeout_ms\":%d}]}",
             FLOOD, READ_TIMEOUT_MS);
    jpt_registry *r = ru_registry_with(&o, tools);
    bool is_error = false;

    size_t before = tu_rss_reset();
    char *text = ru_call(r, "flood", "{}", &is_error);
    assert_growth_bounded(before, "100 greps never read (registry)");
    assert_true(is_error);
    assert_stopped_for_not_reading(text);
    free(text);
    jpt_registry_free(r);
}

/* Two hundred process.run of a program writing 8 MB, none read: each
 * answer keeps 4 MiB of each stream (output_limit at its largest), which
 * a host that ran them all and queued every answer held (800 MB). */
static void processes_never_read_stay_within_the_budget(void **state)
{
    (void)state;
    char sandbox[512], params[512];
    snprintf(sandbox, sizeof(sandbox),
             "{\"commands\":{\"%s\":{\"output_limit\":%d}}}", TOOL("flood"),
             JPT_VFS_PROCESS_OUTPUT_MAX);
    snprintf(params, sizeof(params), "{\"program\":\"%s\",\"args\":[\"8000000\"]}",
             TOOL("flood"));

    size_t before = tu_rss_reset();
    char *text = flood_host(sandbox, 200, "process.run", params);
    assert_growth_bounded(before, "200 process.run never read (jpt_vfs_host)");
    assert_stopped_for_not_reading(text);
    jpt_free(text);
}

/* ---- Each bound at its limit -------------------------------------------------------- */

/* fs.grep's result stops at JPT_VFS_GREP_RESULT_LIMIT bytes, marked
 * truncated, and stays JSON. */
static void a_grep_result_stops_at_its_limit(void **state)
{
    (void)state;
    jpt_files *f = NULL;
    char *result = NULL;

    assert_int_equal(jpt_files_open_dir(root, 0, &f), JPT_OK);
    assert_int_equal(jpt_files_grep(f, "{\"pattern\":\"match\",\"max_matches\":100000000}",
                                    &result),
                     JPT_OK);
    size_t n = strlen(result);
    assert_true(n <= JPT_VFS_GREP_RESULT_LIMIT);
    /* Full up to the last line's worst case: not cut early either. */
    assert_true(n > JPT_VFS_GREP_RESULT_LIMIT - 1024);
    json_t *v = parse(result);
    assert_true(json_is_true(json_object_get(v, "truncated")));
    json_decref(v);
    jpt_free(result);
    jpt_files_free(f);
}

/* A line of JPT_VFS_GREP_LINE_LIMIT bytes ends its file's search: the
 * matches before it are kept, the one after it is not reached. A shorter
 * line is searched whole. */
static void a_grep_line_past_its_limit_ends_the_file(void **state)
{
    (void)state;
    size_t n = JPT_VFS_GREP_LINE_LIMIT;
    char *text = malloc(n + 64);
    jpt_files *f = NULL;
    char *result = NULL;

    assert_non_null(text);
    size_t at = (size_t)sprintf(text, "first match\n");
    memset(text + at, 'x', n);
    at += n;
    at += (size_t)sprintf(text + at, "\nlast match\n");
    fu_write_n(root, "long/line.txt", text, at);
    assert_int_equal(jpt_files_open_dir(root, 0, &f), JPT_OK);
    assert_int_equal(jpt_files_grep(f, "{\"pattern\":\"match\",\"paths\":[\"long\"]}", &result),
                     JPT_OK);
    assert_string_equal(result, "{\"matches\":[{\"path\":\"long/line.txt\",\"lines\":["
                                "{\"line_number\":1,\"content\":\"first match\",\"is_match\":"
                                "true}]}],\"truncated\":false}");
    jpt_free(result);

    /* Half as long: searched to its end. */
    at = (size_t)sprintf(text, "first match\n");
    memset(text + at, 'x', n / 2);
    at += n / 2;
    at += (size_t)sprintf(text + at, "\nlast match\n");
    fu_write_n(root, "long/line.txt", text, at);
    assert_int_equal(jpt_files_grep(f, "{\"pattern\":\"match\",\"paths\":[\"long\"]}", &result),
                     JPT_OK);
    assert_non_null(strstr(result, "{\"line_number\":3,\"content\":\"last match\""));
    jpt_free(result);
    jpt_files_free(f);
    free(text);
}

/* Writes all of p[0..n) to the host's pipe `fd` (non-blocking), running
 * the host meanwhile; reads what it answers into `out` (at most `cap`). */
static void write_all(jpt_vfs_host *h, int fd, const char *p, size_t n, int answers,
                      char *out, size_t cap, size_t *got)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else
            assert_true(k < 0 && errno == EAGAIN);
        while (jpt_vfs_host_dispatch(h) > 0)
            ;
        for (;;) {
            char buf[4096];
            k = read(answers, buf, sizeof(buf));
            if (k <= 0)
                break;
            size_t take = (size_t)k < cap - 1 - *got ? (size_t)k : cap - 1 - *got;
            memcpy(out + *got, buf, take);
            *got += take;
            out[*got] = '\0';
        }
    }
}

/* A line of max_message bytes is read; one byte more is answered -32600
 * and dropped up to its newline, never held whole: a line of 100 MB from
 * a tool costs the host no more than the limit. */
static void a_line_at_its_limit_is_read_and_a_longer_one_dropped(void **state)
{
    (void)state;
    jpt_files *files = NULL;
    jpt_vfs_host *h = NULL;
    int to_host[2], to_tool[2];
    static char answers[1 << 16];
    size_t got = 0;

    assert_int_equal(jpt_files_new_memory(&files), JPT_OK);
    jpt_vfs_host_options o = {.size = sizeof(o), .files = files, .request_timeout_ms = -1};
    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    jpt_files_free(files);
    assert_int_equal(pipe2(to_host, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(pipe2(to_tool, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(jpt_vfs_host_attach(h, to_host[0], to_tool[1], "{\"name\":\"lines\"}"),
                     JPT_OK);

    /* The limit, JPT_VFS_CONTENT_LIMIT + JPT_VFS_ENVELOPE_LIMIT, padded
     * with the blanks JSON allows. */
    size_t limit = (size_t)JPT_VFS_CONTENT_LIMIT + JPT_VFS_ENVELOPE_LIMIT;
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.exists\","
                               "\"params\":{\"path\":\"a\"}";
    char *line = malloc(limit + 2);
    assert_non_null(line);
    memcpy(line, head, sizeof(head) - 1);
    memset(line + sizeof(head) - 1, ' ', limit - sizeof(head));
    line[limit - 1] = '}';
    line[limit] = '\n';
    write_all(h, to_host[1], line, limit + 1, to_tool[0], answers, sizeof(answers), &got);

    /* One byte longer, and then a hundred megabytes. */
    size_t before = tu_rss_reset();
    memcpy(line, "{ ", 2);
    memcpy(line + 2, head + 1, sizeof(head) - 2);
    memset(line + sizeof(head), ' ', limit - sizeof(head));
    line[limit] = '}';
    line[limit + 1] = '\n';
    write_all(h, to_host[1], line, limit + 2, to_tool[0], answers, sizeof(answers), &got);
    memset(line, 'x', limit);
    for (int i = 0; i < 10; i++)
        write_all(h, to_host[1], line, limit, to_tool[0], answers, sizeof(answers), &got);
    write_all(h, to_host[1], "\n", 1, to_tool[0], answers, sizeof(answers), &got);
    assert_growth_bounded(before, "lines past the limit");
    close(to_host[1]);
    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);

    assert_non_null(strstr(answers, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"exists\":false}}\n"));
    char refused[160];
    snprintf(refused, sizeof(refused),
             "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
             "\"Invalid Request: message longer than the limit of %zu bytes\"}}\n",
             limit);
    const char *first = strstr(answers, refused);
    assert_non_null(first);
    assert_non_null(strstr(first + 1, refused));
    jpt_vfs_host_free(h);
    close(to_tool[0]);
    free(line);
}

/* The host's children running `name` (process.run's processes). */
static int children_named(const char *name)
{
    DIR *d = opendir("/proc");
    int count = 0;

    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[300], stat[512];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "re");
        if (f == NULL)
            continue;
        size_t n = fread(stat, 1, sizeof(stat) - 1, f);
        fclose(f);
        stat[n] = '\0';
        char comm[64];
        int ppid;
        const char *close = strrchr(stat, ')');
        if (close == NULL || sscanf(close + 2, "%*c %d", &ppid) != 1)
            continue;
        snprintf(comm, sizeof(comm), "(%s)", name);
        if (ppid == getpid() && strstr(stat, comm) != NULL)
            count++;
    }
    closedir(d);
    return count;
}

/* process.run's processes at once: as many as the answer budget holds
 * their worst case, six at the default output_limit (vfs.h, "Bounds"),
 * however many the tool asks for. */
static void processes_at_once_stop_at_their_limit(void **state)
{
    (void)state;
    enum { AT_ONCE = 6 };
    char sandbox[256], params[256];
    snprintf(sandbox, sizeof(sandbox), "{\"commands\":{\"%s\":{}}}", TOOL("sleep-ms"));
    snprintf(params, sizeof(params), "{\"program\":\"%s\",\"args\":[\"%d\"]}",
             TOOL("sleep-ms"), WAIT_MS);
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root, .sandbox_json = sandbox,
                              .request_timeout_ms = -1, .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode()};
    const char *argv[] = {FLOOD, "20", "process.run", params, "drain", NULL};
    jpt_vfs_host *h = NULL;

    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    assert_int_equal(jpt_vfs_host_spawn(h, argv, "{\"name\":\"flood\"}"), JPT_OK);
    uint64_t deadline = ru_now_ms() + (uint64_t)WAIT_MS;
    while (children_named("sleep-ms") < AT_ONCE && ru_now_ms() < deadline)
        assert_int_equal(jpt_vfs_host_run(h, 10), JPT_ERR_TIMEOUT);
    assert_int_equal(children_named("sleep-ms"), AT_ONCE);
    /* A while more (the tool wrote all twenty long ago): no seventh. */
    assert_int_equal(jpt_vfs_host_run(h, 300), JPT_ERR_TIMEOUT);
    assert_int_equal(children_named("sleep-ms"), AT_ONCE);
    jpt_vfs_host_free(h);
}

/* Asks of the policy prompt, held by the handler: each is a request taken
 * and not answered, so the host takes exactly JPT_VFS_MAX_REQUESTS of
 * them, then reads no more until some are answered. */
typedef struct held {
    jpt_policy_request **reqs;
    size_t n;
} held;

static void hold_ask(jpt_policy_request *req, void *ud)
{
    held *h = ud;

    h->reqs[h->n++] = req;
}

static void requests_in_flight_stop_at_their_limit(void **state)
{
    (void)state;
    enum { EXTRA = 10, COUNT = JPT_VFS_MAX_REQUESTS + EXTRA };
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root, .request_timeout_ms = -1,
                              .kill_grace_ms = 200, .sandbox_mode = tu_sandbox_mode()};
    jpt_vfs_host *h = NULL;
    char number[16];
    snprintf(number, sizeof(number), "%d", COUNT);
    /* "drain": the tool reads (and drops) what the host sends, so that only
     * the requests in flight stop the host. */
    const char *argv[] = {FLOOD,  number, "fs.write", "{\"path\":\"new.txt\",\"content\":\"x\"}",
                          "drain", NULL};
    held hd = {calloc(COUNT, sizeof(*hd.reqs)), 0};

    assert_non_null(hd.reqs);
    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    jpt_vfs_host_set_policy_handler(h, hold_ask, &hd);
    assert_int_equal(jpt_vfs_host_spawn(h, argv, "{\"name\":\"flood\"}"), JPT_OK);
    uint64_t deadline = ru_now_ms() + (uint64_t)WAIT_MS;
    while (hd.n < JPT_VFS_MAX_REQUESTS && ru_now_ms() < deadline)
        assert_true(jpt_vfs_host_run(h, 10) == JPT_ERR_TIMEOUT);
    assert_int_equal(hd.n, JPT_VFS_MAX_REQUESTS);
    /* The rest is written and waits in the pipe: a while more, none is taken. */
    assert_int_equal(jpt_vfs_host_run(h, 300), JPT_ERR_TIMEOUT);
    assert_int_equal(hd.n, JPT_VFS_MAX_REQUESTS);
    /* Answered, they make room for the rest. */
    size_t answered = hd.n;
    for (size_t i = 0; i < answered; i++)
        assert_int_equal(jpt_policy_request_answer(hd.reqs[i], JPT_DECISION_DENY, NULL), JPT_OK);
    while (hd.n < COUNT && ru_now_ms() < deadline)
        assert_true(jpt_vfs_host_run(h, 10) == JPT_ERR_TIMEOUT);
    assert_int_equal(hd.n, COUNT);
    for (size_t i = answered; i < hd.n; i++)
        assert_int_equal(jpt_policy_request_answer(hd.reqs[i], JPT_DECISION_DENY, NULL), JPT_OK);
    jpt_vfs_host_free(h);
    free(hd.reqs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greps_never_read_stay_within_the_budget),
        cmocka_unit_test(greps_never_read_stay_within_the_budget_in_a_registry),
        cmocka_unit_test(processes_never_read_stay_within_the_budget),
        cmocka_unit_test(a_grep_result_stops_at_its_limit),
        cmocka_unit_test(a_grep_line_past_its_limit_ends_the_file),
        cmocka_unit_test(requests_in_flight_stop_at_their_limit),
        cmocka_unit_test(processes_at_once_stop_at_their_limit),
        cmocka_unit_test(a_line_at_its_limit_is_read_and_a_longer_one_dropped),
    };

    tu_hygiene_begin();
    return tu_hygiene_end(cmocka_run_group_tests(tests, setup, teardown));
}
