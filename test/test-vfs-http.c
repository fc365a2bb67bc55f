/* http.get and http.post (D11 "HTTP methods", issue 10 §1) through real
 * tool processes (test/tools/vfs-probe) against a server this suite starts
 * on 127.0.0.1 (test/http_test_server.py): the network.allow policy on the
 * URL as libcurl parses it (whole path segments, userinfo, IP literals in
 * every form, localhost), the prompt, redirects off and hop by hop, the
 * size limit, the timeout, TLS verification, ${VAR} headers whose values
 * never reach the tool, base64 bodies, fifty transfers at once while fs.*
 * requests go on being answered, and the registry's "vfs" runtime. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netinet/in.h>

#include "http/http.h"
#include "policy/policy.h"
#include "registry-util.h"
#include "test-util.h"

#define PROBE TOOL("vfs-probe")

#ifndef JPT_TEST_SERVER
#error "JPT_TEST_SERVER must name test/http_test_server.py"
#endif

extern char **environ;

static char root[200], tls_dir[220];
static int port, tls_port;
static pid_t server_pid;
static int server_stdin = -1;

/* The value the tests put in the host's environment: what no tool may
 * ever read, in any encoding. */
#define SECRET "s3cr3t/value+with=chars\"&more"

/* ---- The server --------------------------------------------------------------- */

static void start_server(void)
{
    int in[2], out[2];
    posix_spawn_file_actions_t fa;
    char line[128];
    char *argv[] = {"python3", JPT_TEST_SERVER, "--tls", tls_dir, NULL};

    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    assert_int_equal(posix_spawnp(&server_pid, "python3", &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    server_stdin = in[1];
    size_t n = 0;
    while (n < sizeof(line) - 1 && (n == 0 || line[n - 1] != '\n')) {
        ssize_t k = read(out[0], line + n, sizeof(line) - 1 - n);
        assert_true(k > 0);
        n += (size_t)k;
    }
    line[n] = '\0';
    close(out[0]);
    assert_int_equal(sscanf(line, "PORT %d %d", &port, &tls_port), 2);
}

static void stop_server(void)
{
    int status;

    close(server_stdin);
    server_stdin = -1;
    assert_int_equal(waitpid(server_pid, &status, 0), server_pid);
}

static void rm_rf(const char *dir)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/jpt-vfs-http-%d", (int)getpid());
    snprintf(tls_dir, sizeof(tls_dir), "%s-tls", root);
    rm_rf(root);
    rm_rf(tls_dir);
    assert_int_equal(mkdir(root, 0755), 0);
    assert_int_equal(mkdir(tls_dir, 0700), 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/hello.txt", root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("hello\n", f);
    fclose(f);
    assert_int_equal(setenv("JPT_TEST_SECRET", SECRET, 1), 0);
    assert_int_equal(setenv("JPT_TEST_SHORT", "short", 1), 0);
    unsetenv("JPT_TEST_UNSET");
    start_server();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    stop_server();
    rm_rf(root);
    rm_rf(tls_dir);
    return 0;
}

/* ---- Text with the server's ports ------------------------------------------------- */

/* printf into one of a few rotating buffers, then js() (single quotes
 * become double quotes). "$P" is the HTTP port, "$T" the HTTPS one. */
static const char *fmt(const char *format, ...) JPT__PRINTF(1, 2);

static const char *fmt(const char *format, ...)
{
    static char bufs[8][1 << 14];
    static int next;
    char raw[1 << 14], *out = bufs[next++ % 8];
    va_list ap;

    va_start(ap, format);
    vsnprintf(raw, sizeof(raw), format, ap);
    va_end(ap);
    size_t n = 0;
    for (const char *p = raw; *p != '\0' && n < sizeof(bufs[0]) - 8; p++) {
        if (p[0] == '$' && (p[1] == 'P' || p[1] == 'T')) {
            n += (size_t)snprintf(out + n, sizeof(bufs[0]) - n, "%d", p[1] == 'P' ? port : tls_port);
            p++;
        } else
            out[n++] = *p;
    }
    out[n] = '\0';
    return js(out);
}

/* ---- Running a probe ----------------------------------------------------------------- */

typedef struct asked {
    int count;
    int decision;
    char last[512];
} asked;

static void on_ask(jpt_policy_request *req, void *ud)
{
    asked *a = ud;

    a->count++;
    snprintf(a->last, sizeof(a->last), "%s %s: %s", jpt_policy_request_method(req),
             jpt_policy_request_path(req), jpt_policy_request_reason(req));
    assert_int_equal(jpt_policy_request_answer(req, a->decision, NULL), JPT_OK);
}

/* Runs vfs-probe with `arguments` under `sandbox` (both JSON text, NULL:
 * none) and returns its end: "ok: <report>" or "error: <text>". */
static char *probe(const char *sandbox, const char *arguments, asked *a)
{
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .sandbox_json = sandbox};
    jpt_vfs_host *h = NULL;
    const char *argv[] = {PROBE, NULL};
    char *tool = NULL, *text = NULL, *out = NULL;
    jpt_state *st = NULL;

    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    if (a != NULL)
        jpt_vfs_host_set_policy_handler(h, on_ask, a);
    assert_true(asprintf(&tool, "{\"name\":\"probe\",\"arguments\":%s}", arguments) > 0);
    if (jpt_vfs_host_spawn(h, argv, tool) != JPT_OK)
        fail_msg("spawn: %s", jpt_vfs_host_errmsg(h));
    free(tool);
    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    assert_int_equal(jpt_vfs_host_state(h, &st), JPT_OK);
    assert_int_equal(jpt_state_render(st, NULL, &text), JPT_OK);
    assert_true(asprintf(&out, "%s: %s", jpt_state_is_error(st) ? "error" : "ok", text) > 0);
    jpt_free(text);
    jpt_state_unref(st);
    jpt_vfs_host_free(h);
    return out;
}

/* One request through a probe: its report line, "<method> ok <result>" or
 * "<method> err <code> <message>" (freed by the next eight calls). */
static const char *one(const char *sandbox, const char *method, const char *params, asked *a)
{
    static char kept[8][1 << 16];
    static int next;
    char *end = probe(sandbox, fmt("{'ops':[{'method':'%s','params':%s}]}", method, params), a);
    char *line = kept[next++ % 8];

    if (strncmp(end, "ok: ", 4) != 0)
        fail_msg("the probe failed: %s", end);
    snprintf(line, sizeof(kept[0]), "%s", end + 4);
    free(end);
    return line;
}

static __attribute__((unused)) void assert_starts(const char *text, const char *prefix)
{
    if (strncmp(text, prefix, strlen(prefix)) != 0)
        fail_msg("'%s' does not start with '%s'", text, prefix);
}

static __attribute__((unused)) void assert_contains(const char *text, const char *part)
{
    if (strstr(text, part) == NULL)
        fail_msg("'%s' is not in '%s'", part, text);
}

/* The result of an "ok" line, parsed. */
static json_t *result_of(const char *line)
{
    const char *json = strstr(line, " ok ");

    if (json == NULL)
        fail_msg("not a success: %s", line);
    return parse(json + 4);
}

/* ---- The URL policy ----------------------------------------------------------------- */

static void an_allowed_url_is_fetched(void **state)
{
    (void)state;
    const char *line = one(fmt("{'network':{'allow':['http://127.0.0.1:$P/hello']}}"),
                           "http.get", fmt("{'url':'http://127.0.0.1:$P/hello'}"), NULL);
    json_t *r = result_of(line);
    assert_int_equal(json_integer_value(json_object_get(r, "status")), 200);
    assert_string_equal(json_string_value(json_object_get(r, "body")), "hello\n");
    assert_null(json_object_get(r, "encoding"));
    json_t *h;
    size_t i;
    bool typed = false;
    json_array_foreach(json_object_get(r, "headers"), i, h)
        typed |= strcmp(json_string_value(json_object_get(h, "name")), "Content-Type") == 0 &&
                 strcmp(json_string_value(json_object_get(h, "value")), "text/plain") == 0;
    assert_true(typed);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_allowed_url_is_fetched),
    };
    return tu_hygiene_end((tu_hygiene_begin(), cmocka_run_group_tests(tests, setup, teardown)));
}
