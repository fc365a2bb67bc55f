/* bench-vfs: a VFS tool's requests through a real jpt_vfs_host, each figure
 * against a reference measured in the same run (issue 9 §7, TESTING.md).
 *
 * The tool is vfs-bench-tool, built on the SDK (vfs_tool.h); it times its
 * own requests, so process start-up is not counted on either side. The
 * host serves it from a temporary tree with this process's loop, exactly
 * as an application would (jpt_vfs_host_new, _spawn, _run).
 *
 *   1. sequential fs.read of a 4 KiB file, round trips per second, against
 *      the pipe ping-pong floor: two processes, one writing a line as long
 *      as the fs.read request, the other answering 4 KiB plus a newline,
 *      both framing lines the plainest way (read, memchr). Measured with
 *      both processes on one CPU and on two (see "Where the two processes
 *      run"), and printed beside what the floor plus the file's own
 *      system calls would allow. Targets: on one CPU at least 0.55 of the
 *      floor (issue 17 §4: 80 % of what the floor and the file's own calls
 *      allow); on two at least 0.80 (issue 9 §7). With it, the host's
 *      system calls per request (bench_syscalls), against the event loop's
 *      floor: its wait, the pipe's read and write, and the file's own.
 *   2. pipelined small requests (fs.read of 64-byte files, fs.metadata),
 *      64 outstanding, requests per second, against the MCP filesystem
 *      server (npm @modelcontextprotocol/server-filesystem, node over
 *      stdio, the same files, the same window; read_text_file and
 *      get_file_info). Target: at least 10 times its rate.
 *   3. fs.read and fs.write of 1 MiB of source text, MB/s, against the
 *      same server (read_text_file, write_file). Target: at least 4 times;
 *      and fs.read at least 0.5 of a 1 MiB pipe ping-pong (issue 17 §4).
 *   4. fs.grep over /usr/include against `rg -j1` with the same pattern and
 *      file set; the match counts must agree. Target: at most 1.2 times
 *      its time.
 *
 * This program speaks MCP's JSON-RPC to the server itself and does as
 * little as it can with the answers (it checks each is not an error; the
 * content is checked in full once, untimed), so the server's figure is
 * the server's. Every figure is the median of rounds that interleave the
 * two sides, after a warm-up round of each.
 *
 * The server is looked up at $JPT_BENCH_MCP_SERVER, else where
 * scripts/run-bench installs it under the build directory; node in $PATH.
 * Without them (or without rg) the figures that need them are skipped
 * with a line saying so. Exits 0 unless something failed (a request, a
 * check, a count that differs); a missed target is reported, not failed.
 *
 * Usage: bench-vfs [--only sequential|pipelined|big|grep] [grep-root]
 * (grep-root: the tree of figure 4, /usr/include by default). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <jptool/jptool.h>

#include "bench-util.h"

#ifndef JPT_BENCH_VFS_TOOL
#error "JPT_BENCH_VFS_TOOL must name the vfs-bench-tool executable"
#endif
#ifndef JPT_BENCH_MCP_DEFAULT
#error "JPT_BENCH_MCP_DEFAULT must name where run-bench installs the MCP server"
#endif

#define ROUNDS 5
#define SMALL_FILES 256
#define SMALL_SIZE 64
#define WINDOW 64
#define BIG_SIZE (1u << 20)
#define READ_SIZE 4096
/* A reply that does not come in this long is a failure, not a hang. */
#define REPLY_TIMEOUT_MS 120000

static char tree[64];   /* the temporary tree both sides serve */
static pid_t tree_owner; /* the process that removes it (not a child) */
static pid_t server_pid; /* the MCP server while it runs, to stop on death */
static int failures;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void remove_tree(void);

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("bench-vfs: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (server_pid > 0 && getpid() == tree_owner)
        kill(server_pid, SIGKILL);
    remove_tree();
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);

    if (p == NULL)
        die("out of memory");
    return p;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        die("out of memory");
    return s;
}

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 14695981039346656037u;

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211u;
    return h;
}

/* ---- The tree ---------------------------------------------------------------- */

/* `n` bytes of C source, with what JSON has to escape as often as real
 * code has it: newlines, tabs, quotes, backslashes. */
static char *source_text(size_t n)
{
    static const char *const lines[] = {
        "/* Returns the number of bytes written, or -1 with errno set. */\n",
        "static inline int jpt_example(const char *name, size_t len)\n",
        "{\n",
        "\tif (name == NULL || len == 0)\n",
        "\t\treturn -1;\n",
        "\treturn printf(\"%s: %zu\\n\", name, len);\n",
        "}\n",
        "#define JPT_EXAMPLE_LIMIT 4096 /* bytes, see 'limits' */\n",
    };
    char *buf = xmalloc(n + 256);
    size_t len = 0;

    for (size_t i = 0; len < n; i++) {
        if (i % 8 == 0)
            len += (size_t)snprintf(buf + len, 128, "/* %zu */\n", i / 8);
        len += (size_t)snprintf(buf + len, 128, "%s", lines[i % 8]);
    }
    buf[n - 1] = '\n';
    buf[n] = '\0';
    return buf;
}

static void write_file(const char *rel, const char *data, size_t n)
{
    char *path = xasprintf("%s/%s", tree, rel);
    FILE *f = fopen(path, "wb");

    if (f == NULL || fwrite(data, 1, n, f) != n || fclose(f) != 0)
        die("cannot write %s: %s", path, strerror(errno));
    free(path);
}

static char *read4k, *big;

static void make_tree(void)
{
    char name[64];

    snprintf(tree, sizeof(tree), "/tmp/jpt-bench-vfs-XXXXXX");
    if (mkdtemp(tree) == NULL)
        die("mkdtemp: %s", strerror(errno));
    tree_owner = getpid();
    char *small = xasprintf("%s/small", tree), *out = xasprintf("%s/out", tree);
    if (mkdir(small, 0777) < 0 || mkdir(out, 0777) < 0)
        die("mkdir in %s: %s", tree, strerror(errno));
    free(small);
    free(out);
    read4k = source_text(READ_SIZE);
    write_file("read4k.txt", read4k, READ_SIZE);
    big = source_text(BIG_SIZE);
    write_file("big.txt", big, BIG_SIZE);
    char *text = source_text(SMALL_SIZE);
    for (int i = 0; i < SMALL_FILES; i++) {
        snprintf(name, sizeof(name), "small/f%03d.txt", i);
        write_file(name, text, SMALL_SIZE);
    }
    free(text);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tree(void)
{
    if (tree[0] != '\0' && getpid() == tree_owner)
        nftw(tree, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    tree[0] = '\0';
}

/* ---- Reporting ---------------------------------------------------------------- */

/* One figure: ours against the reference, with its target. `higher` says
 * whether the ratio must be at least `target` (rates) or at most it
 * (times). */
static void figure(const char *name, double ours, double ref, const char *unit,
                   const char *ref_name, double target, bool higher)
{
    double ratio = ours / ref;
    bool met = higher ? ratio >= target : ratio <= target;

    printf("%s: %.1f %s (ratio %.2f vs %s %.1f %s; target %s %.2f: %s)\n", name, ours, unit,
           ratio, ref_name, ref, unit, higher ? ">=" : "<=", target, met ? "MET" : "MISSED");
    fflush(stdout);
}

/* ---- Where the two processes run -------------------------------------------------
 * A round trip's cost depends on whether the two processes share a CPU: a
 * wake-up across CPUs costs an inter-processor interrupt, which on a
 * virtual machine can cost more than the whole exchange on one CPU. The
 * sequential figure is measured both ways, each side of it placed alike:
 * the child (the tool, or the floor's answering process) is started on
 * `child_cpu` and this process runs on `parent_cpu`. -1: anywhere. */

static int child_cpu = -1, parent_cpu = -1;
/* The system calls this thread (the host) made in the last run_tool's
 * jpt_vfs_host_run: the tool's start, requests and end. */
static long long run_calls;
static cpu_set_t original_cpus;

static void run_on(int cpu)
{
    cpu_set_t set;

    if (cpu < 0)
        set = original_cpus;
    else {
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
    }
    if (sched_setaffinity(0, sizeof(set), &set) < 0)
        die("sched_setaffinity: %s", strerror(errno));
}

/* Call before starting the child, and after, to place both. */
static void place_child(void)
{
    if (child_cpu >= 0)
        run_on(child_cpu);
}

static void place_parent(void)
{
    if (child_cpu >= 0 || parent_cpu >= 0)
        run_on(parent_cpu);
}

/* ---- The host and its tool ------------------------------------------------------ */

/* Runs vfs-bench-tool with `args_json` through a host on `root` (with
 * writes allowed when `writable`). Returns 0 and what the tool measured,
 * or -1 after saying why. */
static int run_tool(const char *root, bool writable, const char *args_json, double *seconds,
                    long *matches)
{
    jpt_vfs_host_options o = {
        .size = sizeof(o),
        .root = root,
        .sandbox_json = writable ? "{\"filesystem\":{\"writable\":true}}" : NULL,
    };
    const char *const argv[] = {JPT_BENCH_VFS_TOOL, NULL};
    jpt_vfs_host *h = NULL;
    jpt_state *st = NULL;
    int rc = -1;

    char *tool_json = xasprintf("{\"name\":\"vfs-bench\",\"arguments\":%s}", args_json);
    if (jpt_vfs_host_new(&o, &h) != JPT_OK) {
        fprintf(stderr, "bench-vfs: jpt_vfs_host_new on %s failed\n", root);
        goto out;
    }
    place_child();
    int spawned = jpt_vfs_host_spawn(h, argv, tool_json);
    place_parent();
    if (spawned != JPT_OK) {
        fprintf(stderr, "bench-vfs: spawning the tool: %s\n", jpt_vfs_host_errmsg(h));
        goto out;
    }
    long long calls = bench_syscalls();
    int run = jpt_vfs_host_run(h, REPLY_TIMEOUT_MS * 5);
    run_calls = bench_syscalls() - calls;
    if (run != JPT_OK) {
        fprintf(stderr, "bench-vfs: running the tool: %s: %s\n", jpt_status_name(run),
                jpt_vfs_host_errmsg(h));
        goto out;
    }
    if (jpt_vfs_host_state(h, &st) != JPT_OK || jpt_state_is_error(st)) {
        fprintf(stderr, "bench-vfs: the tool failed (%s): %s\n", args_json,
                st != NULL ? jpt_state_error_message(st) : "no state");
        goto out;
    }
    const char *text = jpt_state_block_field(st, 0, JPT_FIELD_TEXT, NULL);
    long m = 0;
    if (text == NULL || sscanf(text, "seconds=%lf matches=%ld", seconds, &m) != 2) {
        fprintf(stderr, "bench-vfs: the tool's result is not its figures: %s\n",
                text != NULL ? text : "(no text)");
        goto out;
    }
    if (matches != NULL)
        *matches = m;
    rc = 0;
out:
    jpt_state_unref(st);
    jpt_vfs_host_free(h);
    free(tool_json);
    return rc;
}

/* ---- The pipe ping-pong floor -------------------------------------------------- */

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            die("write: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

/* Reads one line from `fd` into `buf` (of `cap` bytes); returns its length
 * with the newline, or 0 at the end of input. Lines here are sent one at a
 * time, so nothing past the newline is ever read. */
static size_t read_line(int fd, char *buf, size_t cap)
{
    size_t len = 0;

    for (;;) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("read: %s", strerror(errno));
        if (n == 0)
            return 0;
        char *nl = memchr(buf + len, '\n', (size_t)n);
        len += (size_t)n;
        if (nl != NULL)
            return len;
        if (len == cap)
            die("a line longer than %zu bytes", cap);
    }
}

/* `count` round trips: a request of `request_len` bytes plus a newline to
 * a child that answers each with `reply_len` bytes plus a newline.
 * Returns the seconds they took. */
static double ping_pong(long count, size_t request_len, size_t reply_len)
{
    int to[2], from[2];
    size_t cap = (request_len > reply_len ? request_len : reply_len) + 1;
    char *out = xmalloc(cap), *in = xmalloc(cap);

    if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
        die("pipe: %s", strerror(errno));
    place_child();
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        memset(out, 'x', reply_len);
        out[reply_len] = '\n';
        close(to[1]);
        close(from[0]);
        while (read_line(to[0], in, cap) > 0)
            write_all(from[1], out, reply_len + 1);
        _exit(0);
    }
    place_parent();
    close(to[0]);
    close(from[1]);
    memset(out, 'r', request_len);
    out[request_len] = '\n';
    double start = bench_now();
    for (long i = 0; i < count; i++) {
        write_all(to[1], out, request_len + 1);
        if (read_line(from[0], in, cap) != reply_len + 1)
            die("the ping-pong child answered short");
    }
    double seconds = bench_now() - start;
    close(to[1]);
    close(from[0]);
    waitpid(pid, NULL, 0);
    free(out);
    free(in);
    return seconds;
}

/* ---- The MCP filesystem server ------------------------------------------------- */

typedef struct mcp {
    pid_t pid;
    int to, from;  /* its stdin, its stdout */
    char *buf;     /* what it wrote, not yet taken */
    size_t start, end, scanned, cap;
    long next_id;
    char version[64];
} mcp;

static void mcp_send(mcp *m, const char *p, size_t n)
{
    write_all(m->to, p, n);
}

/* The next line the server wrote, without its newline (NUL-terminated in
 * place), valid until the next call; `*len` its length. */
static char *mcp_line(mcp *m, size_t *len)
{
    for (;;) {
        char *nl = m->end > m->scanned ? memchr(m->buf + m->scanned, '\n', m->end - m->scanned)
                                       : NULL;
        if (nl != NULL) {
            char *line = m->buf + m->start;
            *nl = '\0';
            *len = (size_t)(nl - line);
            m->start = m->scanned = (size_t)(nl - m->buf) + 1;
            return line;
        }
        m->scanned = m->end;
        if (m->start > 0 && m->start == m->end)
            m->start = m->end = m->scanned = 0;
        if (m->cap - m->end < (1u << 16)) {
            if (m->start > 0) {
                memmove(m->buf, m->buf + m->start, m->end - m->start);
                m->end -= m->start;
                m->scanned -= m->start;
                m->start = 0;
            }
            if (m->cap - m->end < (1u << 16)) {
                m->cap = m->cap * 2 + (1u << 20);
                m->buf = realloc(m->buf, m->cap);
                if (m->buf == NULL)
                    die("out of memory");
            }
        }
        struct pollfd p = {m->from, POLLIN, 0};
        int ready = poll(&p, 1, REPLY_TIMEOUT_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            die("the MCP server did not answer within %d s", REPLY_TIMEOUT_MS / 1000);
        ssize_t n = read(m->from, m->buf + m->end, m->cap - m->end);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("the MCP server closed its stdout (its stderr is in %s/mcp-stderr.log)",
                tree);
        m->end += (size_t)n;
    }
}

/* Whether a tools/call response is a success, without parsing its
 * content: the SDK writes "result" first, and a tool's failure ends it
 * with "isError":true. */
static bool mcp_succeeded(const char *line, size_t len)
{
    static const char head[] = "{\"result\":";
    size_t tail = len < 128 ? len : 128;

    return len > sizeof(head) && memcmp(line, head, sizeof(head) - 1) == 0 &&
           memmem(line + len - tail, tail, "\"isError\":true", 14) == NULL;
}

/* The line of a tools/call request of `tool` with `args_json`. */
static char *mcp_request(long id, const char *tool, const char *args_json, size_t *len)
{
    char *line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"%s\",\"arguments\":%s}}\n",
                           id, tool, args_json);
    *len = strlen(line);
    return line;
}

/* The text of the response to a tools/call, checked in full, or dies. */
static char *mcp_call_checked(mcp *m, const char *tool, const char *args_json)
{
    size_t len;
    long id = m->next_id++;
    char *req = mcp_request(id, tool, args_json, &len);

    mcp_send(m, req, len);
    free(req);
    char *line = mcp_line(m, &len);
    json_t *r = json_loadb(line, len, 0, NULL);
    json_t *result = json_object_get(r, "result");
    const char *text =
        json_string_value(json_object_get(json_array_get(json_object_get(result, "content"), 0),
                                          "text"));
    if (json_integer_value(json_object_get(r, "id")) != id || text == NULL ||
        json_is_true(json_object_get(result, "isError")) || !mcp_succeeded(line, len))
        die("the MCP server answered %s with %.300s", tool, line);
    char *copy = strdup(text);
    json_decref(r);
    if (copy == NULL)
        die("out of memory");
    return copy;
}

/* Starts `node server root` in `root` and goes through MCP's handshake.
 * Returns false after saying why when the server is not installed. */
static bool mcp_start(mcp *m, const char *root)
{
    const char *env = getenv("JPT_BENCH_MCP_SERVER");
    const char *server = env != NULL && env[0] != '\0' ? env : JPT_BENCH_MCP_DEFAULT;
    const char *found = bench_find_program("node");
    int to[2], from[2];

    memset(m, 0, sizeof(*m));
    if (found == NULL) {
        printf("bench-vfs: node is not installed (Debian package nodejs); "
               "the MCP server's figures are skipped\n");
        return false;
    }
    if (access(server, R_OK) != 0) {
        printf("bench-vfs: the MCP filesystem server is not installed at %s "
               "(scripts/run-bench installs it; or set JPT_BENCH_MCP_SERVER); its figures "
               "are skipped\n", server);
        return false;
    }
    char *node = strdup(found), *log = xasprintf("%s/mcp-stderr.log", root);
    char *package = strdup(server);
    if (node == NULL || package == NULL)
        die("out of memory");
    /* .../server-filesystem/dist/index.js -> .../server-filesystem/package.json */
    char *slash = strrchr(package, '/');
    if (slash != NULL && (*slash = '\0', slash = strrchr(package, '/')) != NULL) {
        strcpy(slash, "/package.json");
        json_t *pkg = json_load_file(package, 0, NULL);
        snprintf(m->version, sizeof(m->version), "%s",
                 json_string_value(json_object_get(pkg, "version")) != NULL
                     ? json_string_value(json_object_get(pkg, "version"))
                     : "?");
        json_decref(pkg);
    }
    free(package);
    if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
        die("pipe: %s", strerror(errno));
    m->pid = fork();
    if (m->pid < 0)
        die("fork: %s", strerror(errno));
    if (m->pid == 0) {
        int err = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        dup2(to[0], 0);
        dup2(from[1], 1);
        if (err >= 0)
            dup2(err, 2);
        if (chdir(root) == 0)
            execl(node, node, server, root, (char *)NULL);
        _exit(127);
    }
    server_pid = m->pid;
    close(to[0]);
    close(from[1]);
    m->to = to[1];
    m->from = from[0];
    free(node);
    free(log);

    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
        "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
        "\"clientInfo\":{\"name\":\"jptool-bench-vfs\",\"version\":\"1\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    size_t len;
    mcp_send(m, init, sizeof(init) - 1);
    char *line = mcp_line(m, &len);
    json_t *r = json_loadb(line, len, 0, NULL);
    if (json_object_get(json_object_get(r, "result"), "protocolVersion") == NULL)
        die("the MCP server answered initialize with %.300s", line);
    json_decref(r);
    m->next_id = 1;
    return true;
}

static void mcp_stop(mcp *m)
{
    if (m->pid <= 0)
        return;
    close(m->to);
    close(m->from);
    kill(m->pid, SIGTERM);
    waitpid(m->pid, NULL, 0);
    server_pid = 0;
    free(m->buf);
    m->pid = 0;
}

/* `count` sequential calls of `tool` with the same arguments; the seconds
 * they took. */
static double mcp_sequential(mcp *m, const char *tool, const char *args_json, long count)
{
    size_t len, got;
    char *req = mcp_request(0, tool, args_json, &len);
    char *rest = strchr(req, ',');  /* after the id */
    char *line = xmalloc(len + 32);

    double start = bench_now();
    for (long i = 0; i < count; i++) {
        int head = snprintf(line, 32, "{\"jsonrpc\":\"2.0\",\"id\":%ld", m->next_id++);
        memcpy(line + head, rest, (size_t)(req + len - rest));
        mcp_send(m, line, (size_t)head + (size_t)(req + len - rest));
        char *resp = mcp_line(m, &got);
        if (!mcp_succeeded(resp, got))
            die("the MCP server answered %s with %.300s", tool, resp);
    }
    double seconds = bench_now() - start;
    free(line);
    free(req);
    return seconds;
}

/* `count` calls of `tool` on the small files, `window` outstanding; the
 * seconds they took. */
static double mcp_pipelined(mcp *m, const char *tool, long count, long window)
{
    char **reqs = xmalloc(SMALL_FILES * sizeof(*reqs));
    size_t *lens = xmalloc(SMALL_FILES * sizeof(*lens)), got;
    char *line = xmalloc(8192);
    long sent = 0, done = 0;

    /* The request lines, made before the clock starts; only the id
     * changes. */
    for (int i = 0; i < SMALL_FILES; i++) {
        char *args = xasprintf("{\"path\":\"%s/small/f%03d.txt\"}", tree, i);
        reqs[i] = mcp_request(0, tool, args, &lens[i]);
        free(args);
    }
    double start = bench_now();
    while (done < count) {
        while (sent < count && sent - done < window) {
            const char *r = reqs[sent % SMALL_FILES], *rest = strchr(r, ',');
            size_t rest_len = lens[sent % SMALL_FILES] - (size_t)(rest - r);
            int head = snprintf(line, 32, "{\"jsonrpc\":\"2.0\",\"id\":%ld", m->next_id++);
            memcpy(line + head, rest, rest_len);
            mcp_send(m, line, (size_t)head + rest_len);
            sent++;
        }
        char *resp = mcp_line(m, &got);
        if (!mcp_succeeded(resp, got))
            die("the MCP server answered %s with %.300s", tool, resp);
        done++;
    }
    double seconds = bench_now() - start;
    for (int i = 0; i < SMALL_FILES; i++)
        free(reqs[i]);
    free(reqs);
    free(lens);
    free(line);
    return seconds;
}

/* ---- The figures ------------------------------------------------------------------ */

/* What fs.read of `path` costs the host in system calls alone, done here
 * directly (open, fstat, read to the end, close): seconds per read; the
 * calls per read in *calls. */
static double direct_read(const char *rel, long count, double *calls)
{
    char *path = xasprintf("%s/%s", tree, rel), buf[READ_SIZE * 2];
    long long before = bench_syscalls();
    double start = bench_now();

    for (long i = 0; i < count; i++) {
        struct stat st;
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || read(fd, buf, sizeof(buf)) != READ_SIZE ||
            read(fd, buf, sizeof(buf)) != 0)
            die("reading %s: %s", path, strerror(errno));
        close(fd);
    }
    double seconds = (bench_now() - start) / count;
    *calls = (double)(bench_syscalls() - before) / (double)count;
    free(path);
    return seconds;
}

/* Figure 1: sequential 4 KiB fs.read against the pipe ping-pong floor,
 * with the tool and the floor's child on `tool_on`, this process on
 * `host_on`. */
static void sequential_reads(const char *placement, int tool_on, int host_on, double target,
                             const char *target_from)
{
    const long count = 20000;
    /* The SDK's request line, {"jsonrpc":"2.0","id":N,"method":"fs.read",
     * "params":{"path":"read4k.txt"}}, without its newline. */
    const size_t request_len = 74;
    double ours[ROUNDS], floor[ROUNDS], direct[ROUNDS], calls[ROUNDS], file_calls = 0, s;
    char *args = xasprintf("{\"scenario\":\"read\",\"path\":\"read4k.txt\",\"count\":%ld,"
                           "\"size\":%d,\"sum\":\"%" PRIx64 "\"}",
                           count, READ_SIZE, fnv1a(read4k, READ_SIZE));
    char name[96];

    snprintf(name, sizeof(name), "fs.read 4 KiB sequential, %s", placement);
    child_cpu = tool_on;
    parent_cpu = host_on;
    place_parent();
    if (run_tool(tree, false, args, &s, NULL) < 0) /* warm-up */
        goto failed;
    ping_pong(count / 10, request_len, READ_SIZE);
    for (int r = 0; r < ROUNDS; r++) {
        floor[r] = count / ping_pong(count, request_len, READ_SIZE);
        if (run_tool(tree, false, args, &s, NULL) < 0)
            goto failed;
        ours[r] = count / s;
        calls[r] = (double)run_calls / (double)count;
        direct[r] = direct_read("read4k.txt", count / 4, &file_calls);
    }
    double f = bench_median(floor, ROUNDS), d = bench_median(direct, ROUNDS);
    printf("pipe ping-pong floor, %s (%zu-byte line out, 4 KiB line back): %.0f round "
           "trips/s; the file's own system calls %.2f us, so a host with no other cost "
           "would reach %.0f round trips/s (%.2f of the floor)\n",
           placement, request_len + 1, f, d * 1e6, 1 / (1 / f + d), 1 / (1 / f + d) / f);
    snprintf(name + strlen(name), sizeof(name) - strlen(name), " (%s)", target_from);
    figure(name, bench_median(ours, ROUNDS), f, "round trips/s", "the pipe floor", target, true);
    /* The floor of a host on an event loop: its wait, the pipe's read and
     * write (a blocking ping-pong makes 2), and the file's own calls. */
    double per = bench_median(calls, ROUNDS), floor_calls = 3 + file_calls;
    printf("host system calls per fs.read 4 KiB, %s: %.2f (the tool's start and end spread "
           "over %ld; floor %.0f: epoll_wait, read, write and the file's %.0f; %s; target <= "
           "%.0f: %s)\n",
           placement, per, count, floor_calls, file_calls, bench_syscalls_how(), floor_calls + 0.5,
           bench_verdict(per, floor_calls + 0.5));
    goto out;
failed:
    printf("%s: FAILED\n", name);
    failures++;
out:
    child_cpu = parent_cpu = -1;
    place_parent();
    run_on(-1);
    free(args);
}

/* Figure 2: pipelined small requests against the MCP server. */
static void pipelined(mcp *m, const char *method, const char *mcp_tool, long count,
                      long mcp_count)
{
    double ours[ROUNDS], theirs[ROUNDS], s;
    char name[96];
    char *args = xasprintf("{\"scenario\":\"pipeline\",\"method\":\"%s\",\"prefix\":"
                           "\"small/f\",\"files\":%d,\"count\":%ld,\"window\":%d,"
                           "\"size\":%d}",
                           method, SMALL_FILES, count, WINDOW, SMALL_SIZE);
    char *check_args = xasprintf("{\"path\":\"%s/small/f000.txt\"}", tree);
    char *text = mcp_call_checked(m, mcp_tool, check_args);

    /* Issue 17 §4 sets fs.metadata's target; fs.read's is issue 9's. */
    snprintf(name, sizeof(name), "%s %d B pipelined (%d outstanding; %s)", method, SMALL_SIZE,
             WINDOW, strcmp(method, "fs.metadata") == 0 ? "issue 17 §4" : "issue 9 §7");
    if (strcmp(method, "fs.read") == 0 ? strlen(text) != SMALL_SIZE
                                       : strstr(text, "size: 64\n") == NULL)
        die("the MCP server's %s of small/f000.txt says %.200s", mcp_tool, text);
    free(text);
    free(check_args);
    if (run_tool(tree, false, args, &s, NULL) < 0)
        goto failed;
    mcp_pipelined(m, mcp_tool, mcp_count, WINDOW);
    for (int r = 0; r < ROUNDS; r++) {
        theirs[r] = mcp_count / mcp_pipelined(m, mcp_tool, mcp_count, WINDOW);
        if (run_tool(tree, false, args, &s, NULL) < 0)
            goto failed;
        ours[r] = count / s;
    }
    char *ref = xasprintf("MCP %s", mcp_tool);
    figure(name, bench_median(ours, ROUNDS), bench_median(theirs, ROUNDS), "requests/s", ref,
           10.0, true);
    free(ref);
    free(args);
    return;
failed:
    printf("%s: FAILED\n", name);
    failures++;
    free(args);
}

/* Figure 3: fs.read and fs.write of 1 MiB against the MCP server. */
static void big_transfers(mcp *m)
{
    const long count = 100, mcp_count = 20;
    double r_ours[ROUNDS], r_theirs[ROUNDS], w_ours[ROUNDS], w_theirs[ROUNDS], r_floor[ROUNDS], s;
    const double mb = BIG_SIZE / 1e6;
    char *read_args = xasprintf("{\"scenario\":\"read\",\"path\":\"big.txt\",\"count\":%ld,"
                                "\"size\":%u,\"sum\":\"%" PRIx64 "\"}",
                                count, BIG_SIZE, fnv1a(big, BIG_SIZE));
    char *write_args = xasprintf("{\"scenario\":\"write\",\"from\":\"big.txt\",\"path\":"
                                 "\"out/big-jpt.txt\",\"count\":%ld,\"size\":%u}",
                                 count, BIG_SIZE);
    char *mcp_read = xasprintf("{\"path\":\"%s/big.txt\"}", tree);
    char *mcp_write_path = xasprintf("%s/out/big-mcp.txt", tree);
    json_t *w = json_pack("{s:s,s:s%}", "path", mcp_write_path, "content", big,
                          (size_t)BIG_SIZE);
    char *mcp_write = json_dumps(w, JSON_COMPACT);
    json_decref(w);
    if (mcp_write == NULL)
        die("out of memory");

    /* Both sides' results checked in full once. */
    char *text = mcp_call_checked(m, "read_text_file", mcp_read);
    if (strlen(text) != BIG_SIZE || memcmp(text, big, BIG_SIZE) != 0)
        die("the MCP server's read_text_file of big.txt is not its content");
    free(text);
    free(mcp_call_checked(m, "write_file", mcp_write));
    if (run_tool(tree, true, write_args, &s, NULL) < 0 ||
        run_tool(tree, false, read_args, &s, NULL) < 0)
        goto failed;
    for (int k = 0; k < 2; k++) {
        char *path = xasprintf("%s/out/big-%s.txt", tree, k == 0 ? "mcp" : "jpt");
        FILE *f = fopen(path, "rb");
        char *back = xmalloc(BIG_SIZE + 1);
        size_t n = f != NULL ? fread(back, 1, BIG_SIZE + 1, f) : 0;
        if (f != NULL)
            fclose(f);
        if (n != BIG_SIZE || memcmp(back, big, BIG_SIZE) != 0)
            die("%s does not hold what was written", path);
        free(back);
        free(path);
    }
    for (int r = 0; r < ROUNDS; r++) {
        r_theirs[r] = mb * mcp_count / mcp_sequential(m, "read_text_file", mcp_read, mcp_count);
        if (run_tool(tree, false, read_args, &s, NULL) < 0)
            goto failed;
        r_ours[r] = mb * count / s;
        w_theirs[r] = mb * mcp_count / mcp_sequential(m, "write_file", mcp_write, mcp_count);
        if (run_tool(tree, true, write_args, &s, NULL) < 0)
            goto failed;
        w_ours[r] = mb * count / s;
        /* The SDK's request line is about as long as the 4 KiB one's. */
        r_floor[r] = mb * count / ping_pong(count, 72, BIG_SIZE);
    }
    figure("fs.read 1 MiB (issue 17 §4)", bench_median(r_ours, ROUNDS),
           bench_median(r_theirs, ROUNDS), "MB/s", "MCP read_text_file", 4.0, true);
    figure("fs.read 1 MiB (issue 17 §4)", bench_median(r_ours, ROUNDS),
           bench_median(r_floor, ROUNDS), "MB/s", "a 1 MiB pipe ping-pong", 0.5, true);
    figure("fs.write 1 MiB (issue 17 §4)", bench_median(w_ours, ROUNDS),
           bench_median(w_theirs, ROUNDS), "MB/s", "MCP write_file", 4.0, true);
    goto out;
failed:
    printf("fs.read/fs.write 1 MiB: FAILED\n");
    failures++;
out:
    free(read_args);
    free(write_args);
    free(mcp_read);
    free(mcp_write_path);
    free(mcp_write);
}

/* Figure 4: fs.grep over a tree against rg -j1. */
static void grep_figure(const char *rg, const char *root, const char *label,
                        const char *pattern, bool case_insensitive)
{
    double ours[ROUNDS], theirs[ROUNDS], s;
    long ours_n = -1, rg_n;
    json_t *p = json_string(pattern);
    char *quoted = json_dumps(p, JSON_ENCODE_ANY), name[128];
    json_decref(p);
    char *args = xasprintf("{\"scenario\":\"grep\",\"pattern\":%s,\"case_insensitive\":%s}",
                           quoted, case_insensitive ? "true" : "false");
    const char *flag = case_insensitive ? "-i" : NULL;

    snprintf(name, sizeof(name), "fs.grep %s %s", root, label);
    if (run_tool(root, false, args, &s, &ours_n) < 0) /* warm-up, both */
        goto failed;
    rg_n = bench_rg_lines(rg, root, flag, pattern);
    for (int r = 0; r < ROUNDS && rg_n >= 0; r++) {
        double start = bench_now();
        if (bench_rg_lines(rg, root, flag, pattern) != rg_n)
            rg_n = -1;
        theirs[r] = bench_now() - start;
        long n;
        if (run_tool(root, false, args, &ours[r], &n) < 0)
            goto failed;
        if (n != ours_n)
            ours_n = -1;
    }
    if (rg_n < 0 || ours_n != rg_n) {
        printf("%s '%s': match counts differ: fs.grep %ld, rg -j1 %ld: FAILED\n", name,
               pattern, ours_n, rg_n);
        failures++;
        goto out;
    }
    printf("rg -j1 %s '%s': %ld matching lines\n", label, pattern, rg_n);
    figure(name, bench_median(ours, ROUNDS) * 1e3, bench_median(theirs, ROUNDS) * 1e3, "ms",
           "rg -j1", 1.2, false);
    goto out;
failed:
    printf("%s: FAILED\n", name);
    failures++;
out:
    free(args);
    free(quoted);
}

static bool wanted(const char *only, const char *name)
{
    return only == NULL || strcmp(only, name) == 0;
}

int main(int argc, char **argv)
{
    const char *only = NULL, *grep_root = "/usr/include";
    mcp m;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (argv[i][0] != '-')
            grep_root = argv[i];
        else {
            fprintf(stderr, "usage: bench-vfs [--only sequential|pipelined|big|grep] "
                            "[grep-root]\n");
            return 2;
        }
    }
    const char *found = bench_find_program("rg");
    char *rg = found != NULL ? strdup(found) : NULL;
    /* A server that dies makes writes fail with EPIPE, reported. */
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    make_tree();
    printf("tree: %s; tool: %s\n", tree, JPT_BENCH_VFS_TOOL);

    if (sched_getaffinity(0, sizeof(original_cpus), &original_cpus) < 0)
        die("sched_getaffinity: %s", strerror(errno));
    if (wanted(only, "sequential")) {
        int cpus[2] = {-1, -1}, n = 0;
        for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
            if (CPU_ISSET(c, &original_cpus))
                cpus[n++] = c;
        sequential_reads("one CPU", cpus[0], cpus[0], 0.55, "issue 17 §4");
        if (n == 2)
            sequential_reads("two CPUs", cpus[1], cpus[0], 0.80, "issue 9 §7");
        else
            printf("bench-vfs: one CPU only; the sequential figure across two CPUs is "
                   "skipped\n");
    }

    if ((wanted(only, "pipelined") || wanted(only, "big")) && mcp_start(&m, tree)) {
        printf("MCP filesystem server %s (node, stdio)\n", m.version);
        if (wanted(only, "pipelined")) {
            pipelined(&m, "fs.read", "read_text_file", 20000, 4000);
            pipelined(&m, "fs.metadata", "get_file_info", 20000, 4000);
        }
        if (wanted(only, "big"))
            big_transfers(&m);
        mcp_stop(&m);
    }

    if (wanted(only, "grep") && rg == NULL)
        printf("bench-vfs: rg is not installed (Debian package ripgrep); the fs.grep "
               "figures are skipped\n");
    else if (wanted(only, "grep")) {
        grep_figure(rg, grep_root, "literal", "pthread_mutex_lock", false);
        grep_figure(rg, grep_root, "regex", "struct \\w+_ops\\b", false);
        grep_figure(rg, grep_root, "case-insensitive", "copyright", true);
    }
    free(rg);
    remove_tree();
    free(read4k);
    free(big);
    return failures > 0;
}
