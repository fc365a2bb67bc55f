/* libFuzzer harness for a whole VFS session through the public API: a
 * jpt_vfs_host serving a memory files backend, attached to two pipes (no
 * process), the way an application serves a tool it started itself.
 * Everything comes from the input:
 *
 *   byte 0         how the run goes (bits below)
 *   piece 1        the `sandbox` configuration (its "network" section is
 *                  dropped: a fuzzer must not reach the network)
 *   piece 2        files to create first, one "path=content" per line
 *   piece 3        the policy handler's decisions, a byte per ask: deny,
 *                  allow, allow always, or answer later (from the loop,
 *                  with the next byte)
 *   the rest       what the tool writes, NULs included
 *
 * (pieces end at a NUL byte). The tool's bytes are written to the host in
 * pieces the first byte sizes, while the loop runs; the harness reads
 * everything the host writes back, which must be lines of JSON objects
 * with "jsonrpc": "2.0" (D11 "Message framing"). Then the tool's output
 * ends and the host must end the session. Nothing may crash, leak memory
 * or an fd, or hang (a bound on loop turns). */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <jptool/jptool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MODE_APPLY 0x08u  /* an apply once a quarter of the bytes are in */
#define MODE_CANCEL 0x10u /* a cancel once half of them are in */
#define MODE_ABANDON 0x20u /* free the host before the tool's end, with
                              answers still held */
#define MODE_SLOW_READ 0x40u /* read the host's output a byte at a time */

/* The most turns of the loop one input may take: far above what any
 * input needs, so a session that never ends is a finding. */
#define MAX_TURNS 200000

/* Policy requests answered later, oldest first. */
#define MAX_HELD 4096

typedef struct run {
    const uint8_t *decisions;
    size_t ndecisions, next_decision;
    jpt_policy_request *held[MAX_HELD];
    size_t nheld;
    char line[1 << 16];
    size_t line_len;
    int overlong; /* the current line passed the buffer: checked by length only */
} run;

static int next_decision(run *r)
{
    if (r->ndecisions == 0)
        return 0;
    return r->decisions[r->next_decision++ % r->ndecisions] % 4;
}

static void decide(jpt_policy_request *req, int decision)
{
    static const int decisions[] = {JPT_DECISION_DENY, JPT_DECISION_ALLOW,
                                    JPT_DECISION_ALLOW_ALWAYS};
    int rc = jpt_policy_request_answer(req, decisions[decision % 3], "fuzz");

    if (rc != JPT_OK && rc != JPT_ERR_CANCELLED)
        abort();
}

static void on_ask(jpt_policy_request *req, void *ud)
{
    run *r = ud;
    int access = jpt_policy_request_access(req);

    /* What is asked is named: the method, the path, the tool and a reason. */
    if (jpt_policy_request_method(req) == NULL || jpt_policy_request_path(req) == NULL ||
        jpt_policy_request_tool(req) == NULL || jpt_policy_request_reason(req) == NULL ||
        access < JPT_ACCESS_READ || access > JPT_ACCESS_PROCESS)
        abort();
    /* No transfer may start: whatever the input says, a URL is refused. */
    int decision = access == JPT_ACCESS_HTTP ? 0 : next_decision(r);
    if (decision == 3 && r->nheld < MAX_HELD) {
        r->held[r->nheld++] = req;
        return;
    }
    decide(req, decision == 3 ? 0 : decision);
}

/* Answers the oldest held request with the next decision. */
static void answer_held(run *r)
{
    if (r->nheld == 0)
        return;
    jpt_policy_request *req = r->held[0];
    memmove(r->held, r->held + 1, (r->nheld - 1) * sizeof(*r->held));
    r->nheld--;
    int decision = next_decision(r);
    decide(req, decision == 3 ? 1 : decision);
}

/* One line the host wrote: a JSON object of JSON-RPC 2.0, on one line.
 * (An id is echoed as the tool wrote it: a number too large for jansson
 * is still JSON.) */
static void check_line(const char *p, size_t n)
{
    json_error_t err;
    json_t *v = json_loadb(p, n, JSON_ALLOW_NUL, &err);
    const char *version = json_string_value(json_object_get(v, "jsonrpc"));

    if (v == NULL && json_error_code(&err) == json_error_numeric_overflow)
        return;
    if (!json_is_object(v) || version == NULL || strcmp(version, "2.0") != 0) {
        fprintf(stderr, "fuzz-vfs-session: the host wrote a line that is not a JSON-RPC "
                        "message: %.*s\n",
                (int)(n < 400 ? n : 400), p);
        abort();
    }
    json_decref(v);
}

static void take_output(run *r, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') {
            if (!r->overlong)
                check_line(r->line, r->line_len);
            r->line_len = 0;
            r->overlong = 0;
        } else if (r->line_len < sizeof(r->line))
            r->line[r->line_len++] = p[i];
        else
            r->overlong = 1;
    }
}

/* Reads what the host wrote to the tool; 0 once it closed its end. */
static int read_output(run *r, int fd, unsigned mode)
{
    char buf[65536];
    size_t want = mode & MODE_SLOW_READ ? 1 : sizeof(buf);

    for (;;) {
        ssize_t n = read(fd, buf, want);
        if (n > 0) {
            take_output(r, buf, (size_t)n);
            if (mode & MODE_SLOW_READ)
                return 1;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 1;
        /* Its end, which may cut a message the tool would never read:
         * the host closes both fds once the tool's output ends. */
        return 0;
    }
}

/* The sandbox configuration without its "network" section; NULL for
 * text that is not an object (passed on as it is). */
static char *without_network(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    char *out = NULL;

    if (json_is_object(v) && json_object_get(v, "network") != NULL) {
        json_object_del(v, "network");
        out = json_dumps(v, JSON_COMPACT);
        if (out == NULL)
            abort();
    }
    json_decref(v);
    return out;
}

static void put_files(jpt_files *f, const char *spec)
{
    char *copy = strdup(spec), *save = NULL;

    if (copy == NULL)
        abort();
    for (char *line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        /* Paths the backend refuses are refused: not the harness's care. */
        jpt_files_write(f, line, eq + 1, strlen(eq + 1));
    }
    free(copy);
}

/* The lowest free fd: the same before and after a run, or an fd leaked. */
static int lowest_free_fd(void)
{
    int fd = dup(0);

    if (fd < 0)
        abort();
    close(fd);
    return fd;
}

static void quiet(int level, const char *msg, void *ud)
{
    (void)level;
    (void)msg;
    (void)ud;
}

/* The piece of data[*at..size) up to its NUL, as a string; *at moves past it. */
static char *piece(const uint8_t *data, size_t size, size_t *at)
{
    const uint8_t *end = memchr(data + *at, '\0', size - *at);
    size_t n = end != NULL ? (size_t)(end - (data + *at)) : size - *at;
    char *s = malloc(n + 1);

    if (s == NULL)
        abort();
    memcpy(s, data + *at, n);
    s[n] = '\0';
    *at += end != NULL ? n + 1 : n;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static run r;
    int fds_before = lowest_free_fd();

    if (size == 0)
        return 0;
    jpt_set_log(quiet, NULL, JPT_LOG_ERROR);
    unsigned mode = data[0];
    size_t at = 1;
    char *sandbox = piece(data, size, &at);
    char *files_spec = piece(data, size, &at);
    char *decisions = piece(data, size, &at);
    const uint8_t *tool = data + at;
    size_t tool_len = size - at;

    memset(&r, 0, sizeof(r));
    r.decisions = (const uint8_t *)decisions;
    r.ndecisions = strlen(decisions);

    jpt_files *files = NULL;
    if (jpt_files_new_memory(&files) != JPT_OK)
        abort();
    put_files(files, files_spec);
    char *offline = without_network(sandbox);
    jpt_vfs_host_options opts = {
        .size = sizeof(opts),
        .files = files,
        .sandbox_json = offline != NULL ? offline : sandbox,
        .request_timeout_ms = -1,
        /* A small line limit, so long lines are refused too. */
        .max_message = 4096,
        .max_violations = 32,
    };
    jpt_vfs_host *h = NULL;
    int rc = jpt_vfs_host_new(&opts, &h);
    jpt_files_free(files);
    free(offline);
    if (rc != JPT_OK) {
        /* Only a sandbox the policy refuses. */
        if (rc != JPT_ERR_INVALID || h != NULL)
            abort();
        goto done;
    }
    jpt_vfs_host_set_policy_handler(h, on_ask, &r);

    int to_host[2], to_tool[2];
    if (pipe2(to_host, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(to_tool, O_CLOEXEC | O_NONBLOCK) < 0)
        abort();
    if (jpt_vfs_host_attach(h, to_host[0], to_tool[1],
                            "{\"name\":\"fuzz\",\"arguments\":{\"a\":1}}") != JPT_OK)
        abort();

    size_t chunk = (size_t)(mode & 0x7u) * 512u + 1u, written = 0;
    int writing = 1, reading = 1, applied = 0, cancelled = 0;
    for (int turn = 0; !jpt_vfs_host_done(h); turn++) {
        if (turn == MAX_TURNS)
            abort(); /* the session does not end */
        if (writing && written < tool_len) {
            size_t n = tool_len - written < chunk ? tool_len - written : chunk;
            ssize_t k = write(to_host[1], tool + written, n);
            if (k > 0)
                written += (size_t)k;
            else if (k < 0 && errno != EAGAIN)
                abort();
        }
        if (writing && written == tool_len) {
            if (mode & MODE_ABANDON)
                break;
            close(to_host[1]);
            writing = 0;
        }
        if ((mode & MODE_APPLY) && !applied && written >= tool_len / 4) {
            applied = 1;
            rc = jpt_vfs_host_apply(h, "{\"input\":[1,\"two\"]}");
            if (rc != JPT_OK && rc != JPT_ERR_STATE)
                abort();
        }
        if ((mode & MODE_CANCEL) && !cancelled && written >= tool_len / 2) {
            cancelled = 1;
            rc = jpt_vfs_host_cancel(h);
            if (rc != JPT_OK && rc != JPT_ERR_STATE)
                abort();
        }
        while ((rc = jpt_vfs_host_dispatch(h)) > 0)
            ;
        if (rc < 0)
            abort();
        if (reading)
            reading = read_output(&r, to_tool[0], mode);
        if (turn % 2 == 1)
            answer_held(&r);
    }

    jpt_state *st = NULL;
    rc = jpt_vfs_host_state(h, &st);
    if (rc == JPT_OK) {
        char *json = NULL, *text = NULL;
        if (jpt_state_to_json(st, JPT_JSON_ENVELOPE, 0, &json) != JPT_OK ||
            jpt_state_render(st, NULL, &text) != JPT_OK)
            abort();
        jpt_free(json);
        jpt_free(text);
        jpt_state_unref(st);
    } else if (rc != JPT_ERR_AGAIN)
        abort();
    jpt_vfs_host_free(h);
    if (writing)
        close(to_host[1]);
    close(to_tool[0]);
    /* Answers still held: their requests are gone with the host. */
    while (r.nheld > 0) {
        rc = jpt_policy_request_answer(r.held[--r.nheld], JPT_DECISION_ALLOW, NULL);
        if (rc != JPT_ERR_CANCELLED && rc != JPT_OK)
            abort();
    }
done:
    free(sandbox);
    free(files_spec);
    free(decisions);
    if (lowest_free_fd() != fds_before)
        abort();
    return 0;
}
