/* A program built against jptool 0.1.0 keeps working with this library
 * (README "ABI"; common.h, "ABI promises"): each struct that starts with
 * `size_t size` is handed over as such a program hands it over, in a block
 * exactly as large as 0.1.0 declared the struct, and each function that
 * takes one accepts it, reading (and writing) nothing past its end — under
 * ASan and valgrind a byte beyond is an error. Structs the library fills in
 * for the host are read only up to 0.1.0's members.
 *
 * Today every struct is as 0.1.0 declared it. When a release adds a member
 * to one, this suite fails until the functions taking it accept the
 * released size (jpt__struct_take with 0.1.0's size as the oldest, the new
 * members read as zero) and touch no byte beyond it. */
#include <fcntl.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry-util.h"

/* sizeof(type) as 0.1.0 declared it: its members up to `last`, the last
 * one 0.1.0 had, padded to the struct's alignment. (A member added later
 * with a stricter alignment than all of 0.1.0's would make this larger
 * than 0.1.0's size; none has one.) */
#define SIZE_0_1(type, last)                                                   \
    ((offsetof(type, last) + sizeof(((type *)0)->last) + alignof(type) - 1) /  \
     alignof(type) * alignof(type))

/* Fails the test, naming `what` and why, unless `rc` is JPT_OK. */
static void accepted(int rc, const char *what, const char *errmsg)
{
    if (rc != JPT_OK)
        fail_msg("%s refused what a 0.1.0 program passes: %s (%s)", what, jpt_strerror(rc),
                 errmsg);
}

/* A copy of the first `size` bytes of `full` in a block of exactly that
 * size: the struct as a 0.1.0 program has it. Free with free(). */
static void *as_released(const void *full, size_t size)
{
    void *block = malloc(size);
    assert_non_null(block);
    memcpy(block, full, size);
    return block;
}

/* ---- The allocator: installed first, before anything is allocated --------------- */

static long allocator_calls;

static void *counted_malloc(size_t n, void *ud)
{
    (void)ud;
    allocator_calls++;
    return malloc(n);
}

static void *counted_realloc(void *p, size_t n, void *ud)
{
    (void)ud;
    allocator_calls++;
    return realloc(p, n);
}

static void counted_free(void *p, void *ud)
{
    (void)ud;
    free(p);
}

/* Runs first: jpt_set_allocator refuses once the library allocated. */
static void an_allocator_of_0_1_0_is_installed_and_used(void **state)
{
    (void)state;
    jpt_allocator full = {SIZE_0_1(jpt_allocator, ud), counted_malloc, counted_realloc,
                          counted_free, NULL};
    jpt_allocator *old = as_released(&full, full.size);
    jpt_state *s = NULL;

    int rc = jpt_set_allocator(old);
    free(old);
    accepted(rc, "jpt_set_allocator", "");
    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    assert_true(allocator_calls > 0);
    jpt_state_unref(s);
}

/* ---- The registry ------------------------------------------------------------------ */

static void registry_options_of_0_1_0_make_a_registry(void **state)
{
    (void)state;
    jpt_registry_options full;
    memset(&full, 0, sizeof(full));
    full.size = SIZE_0_1(jpt_registry_options, sandbox_mode);
    full.kill_grace_ms = 100;
    jpt_registry_options *old = as_released(&full, full.size);
    jpt_registry *r = NULL;

    int rc = jpt_registry_new(old, &r);
    free(old);
    accepted(rc, "jpt_registry_new", "");
    jpt_registry_free(r);
}

static int builtin_start(jpt_handle *h, const char *arguments_json, void *ud)
{
    (void)arguments_json;
    (void)ud;
    ru_report(h, JPT_STATE_STOPPED, "done");
    return JPT_OK;
}

static void builtin_ops_of_0_1_0_add_a_tool_that_runs(void **state)
{
    (void)state;
    jpt_builtin_ops full;
    memset(&full, 0, sizeof(full));
    full.size = SIZE_0_1(jpt_builtin_ops, abort);
    full.start = builtin_start;
    jpt_builtin_ops *old = as_released(&full, full.size);
    jpt_registry *r = ru_registry(NULL);

    int rc = jpt_registry_add_builtin(r, js("{'name':'b'}"), old, NULL);
    free(old);
    accepted(rc, "jpt_registry_add_builtin", jpt_registry_errmsg(r));
    ru_assert_text(ru_run_js(r, "[{'id':'c','name':'b','arguments':{}}]"), 0, "c", "done", false);
    ru_release_kept();
    jpt_registry_free(r);
}

/* The output handler of a host built against 0.1.0 reads the members it
 * knows, which the size says are there. */
static void on_output(const jpt_output *o, void *ud)
{
    char *seen = ud;

    assert_true(o->size >= SIZE_0_1(jpt_output, len));
    strncat(seen, o->data, o->len < 16 ? o->len : 16);
}

static void output_is_read_by_a_0_1_0_host(void **state)
{
    (void)state;
    char seen[64] = "";
    jpt_registry *r = ru_registry(js("{'tools':[{'name':'say','command':['sh','-c',"
                                     "'printf hello']}]}"));

    jpt_registry_set_output_handler(r, on_output, seen);
    ru_run_js(r, "[{'id':'c','name':'say','arguments':{}}]");
    ru_release_kept();
    jpt_registry_free(r);
    assert_string_equal(seen, "hello");
}

/* ---- States -------------------------------------------------------------------------- */

static void a_resource_and_render_options_of_0_1_0_are_taken(void **state)
{
    (void)state;
    jpt_resource full_r;
    memset(&full_r, 0, sizeof(full_r));
    full_r.size = SIZE_0_1(jpt_resource, annotations_json);
    full_r.uri = "file:///w/a.txt";
    full_r.text = "alpha";
    jpt_render_options full_o;
    memset(&full_o, 0, sizeof(full_o));
    full_o.size = SIZE_0_1(jpt_render_options, root);
    full_o.root = "/w";
    jpt_resource *r = as_released(&full_r, full_r.size);
    jpt_render_options *o = as_released(&full_o, full_o.size);
    jpt_state *s = NULL;
    char *out = NULL;

    assert_int_equal(jpt_state_new(JPT_STATE_STOPPED, &s), JPT_OK);
    int added = jpt_state_add_resource(s, r);
    int rendered = jpt_state_render(s, o, &out);
    free(r);
    free(o);
    accepted(added, "jpt_state_add_resource", jpt_state_errmsg(s));
    accepted(rendered, "jpt_state_render", "");
    ru_assert_contains(out, "a.txt");
    ru_assert_contains(out, "alpha");
    jpt_free(out);
    jpt_state_unref(s);
}

/* ---- VFS: the host side ------------------------------------------------------------- */

static int files_call(jpt_files_request *req, const char *method, const char *params_json,
                      void *ud)
{
    (void)method;
    (void)params_json;
    (void)ud;
    return jpt_files_request_reply(req, "{\"exists\": true}");
}

static void files_ops_of_0_1_0_make_a_backend_that_answers(void **state)
{
    (void)state;
    jpt_files_ops full;
    memset(&full, 0, sizeof(full));
    full.size = SIZE_0_1(jpt_files_ops, release);
    full.call = files_call;
    jpt_files_ops *old = as_released(&full, full.size);
    jpt_files *f = NULL;
    int exists = 0;

    int rc = jpt_files_new(old, NULL, &f);
    free(old);
    accepted(rc, "jpt_files_new", "");
    assert_int_equal(jpt_files_exists(f, "a", &exists), JPT_OK);
    assert_int_equal(exists, 1);
    jpt_files_free(f);
}

static void vfs_host_options_of_0_1_0_make_a_host(void **state)
{
    (void)state;
    jpt_vfs_host_options full;
    memset(&full, 0, sizeof(full));
    full.size = SIZE_0_1(jpt_vfs_host_options, sandbox_read);
    full.sandbox_json = "{\"filesystem\": {\"writable\": true}}";
    jpt_vfs_host_options *old = as_released(&full, full.size);
    jpt_vfs_host *h = NULL;

    int rc = jpt_vfs_host_new(old, &h);
    free(old);
    accepted(rc, "jpt_vfs_host_new", "");
    jpt_vfs_host_free(h);
}

/* ---- VFS: the tool side ------------------------------------------------------------- */

/* A host in a child process: init, then each request answered by its
 * method (fs.grep, http.get) until the tool closes its end. */
static pid_t start_host(int *to_tool, int *from_tool)
{
    int down[2], up[2];

    assert_int_equal(pipe2(down, O_CLOEXEC), 0);
    assert_int_equal(pipe2(up, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(down[0]);
        close(up[1]);
        FILE *in = fdopen(up[0], "r");
        char line[4096];
        dprintf(down[1], "{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{\"tool\":"
                         "{\"name\":\"old\"},\"protocol_version\":\"0.1.0\"}}\n");
        while (in != NULL && fgets(line, sizeof(line), in) != NULL) {
            const char *id = strstr(line, "\"id\":");
            if (id == NULL)
                continue;
            dprintf(down[1], "{\"jsonrpc\":\"2.0\",\"id\":%lu,\"result\":%s}\n",
                    strtoul(id + 5, NULL, 10),
                    strstr(line, "\"fs.grep\"") != NULL
                        ? "{\"matches\":[],\"truncated\":false}"
                        : "{\"status\":200,\"headers\":[],\"body\":\"fetched\"}");
        }
        _exit(0);
    }
    close(down[1]);
    close(up[0]);
    *to_tool = down[0];
    *from_tool = up[1];
    return pid;
}

static void a_0_1_0_tool_connects_greps_and_fetches(void **state)
{
    (void)state;
    int in_fd, out_fd, status;
    jpt_vfs_connect_options full_c;
    memset(&full_c, 0, sizeof(full_c));
    full_c.size = SIZE_0_1(jpt_vfs_connect_options, ud);
    jpt_vfs_grep_query full_q;
    memset(&full_q, 0, sizeof(full_q));
    full_q.size = SIZE_0_1(jpt_vfs_grep_query, max_matches);
    full_q.pattern = "needle";
    jpt_vfs_http_response full_r;
    memset(&full_r, 0, sizeof(full_r));
    full_r.size = SIZE_0_1(jpt_vfs_http_response, body_len);
    jpt_vfs_connect_options *c = as_released(&full_c, full_c.size);
    jpt_vfs_grep_query *q = as_released(&full_q, full_q.size);
    jpt_vfs_http_response *r = as_released(&full_r, full_r.size);
    jpt_vfs_tool *t = NULL;
    char *grep = NULL;
    pid_t host = start_host(&in_fd, &out_fd);

    char why[3][256];
    int connected = jpt_vfs_tool_connect_fds(in_fd, out_fd, c, &t);
    snprintf(why[0], sizeof(why[0]), "%s", jpt_vfs_tool_errmsg(t));
    int grepped = jpt_vfs_tool_grep(t, q, &grep);
    snprintf(why[1], sizeof(why[1]), "%s", jpt_vfs_tool_errmsg(t));
    int fetched = jpt_vfs_tool_http_get(t, "https://example.com/", NULL, 0, r);
    snprintf(why[2], sizeof(why[2]), "%s", jpt_vfs_tool_errmsg(t));
    char body[16];
    snprintf(body, sizeof(body), "%s", r->body != NULL ? r->body : "(none)");
    int http_status = r->status;
    jpt_vfs_http_response_clear(r);
    free(c);
    free(q);
    free(r);
    jpt_vfs_tool_free(t);
    close(in_fd);
    close(out_fd);
    assert_int_equal(waitpid(host, &status, 0), host);

    accepted(connected, "jpt_vfs_tool_connect_fds", why[0]);
    accepted(grepped, "jpt_vfs_tool_grep", why[1]);
    ru_assert_contains(grep, "\"matches\"");
    jpt_free(grep);
    accepted(fetched, "jpt_vfs_tool_http_get", why[2]);
    assert_int_equal(http_status, 200);
    assert_string_equal(body, "fetched");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* First: the allocator can only be set before anything else. */
        cmocka_unit_test(an_allocator_of_0_1_0_is_installed_and_used),
        cmocka_unit_test(registry_options_of_0_1_0_make_a_registry),
        cmocka_unit_test(builtin_ops_of_0_1_0_add_a_tool_that_runs),
        cmocka_unit_test(output_is_read_by_a_0_1_0_host),
        cmocka_unit_test(a_resource_and_render_options_of_0_1_0_are_taken),
        cmocka_unit_test(files_ops_of_0_1_0_make_a_backend_that_answers),
        cmocka_unit_test(vfs_host_options_of_0_1_0_make_a_host),
        cmocka_unit_test(a_0_1_0_tool_connects_greps_and_fetches),
    };
    return TU_RUN(tests);
}
