/* bench-vfs-codec: the VFS protocol engine's encoding and decoding of the
 * messages that carry file content, in MB/s of content, against jansson
 * doing the same in the same run.
 *
 * Issue 9's target for fs.read and fs.write of 1 MiB is four times the MCP
 * filesystem server's MB/s, and jansson's string encoding and parsing are
 * about as fast as that server. So each figure here is the engine against
 * jansson building and serialising (json_stringn + json_dumps), or parsing
 * (json_loadb) and taking the string out of, the same message:
 *
 *   host encode  fs.read's response  (jpt__vfs_call_answer_read)
 *   host decode  fs.write's request  (jpt__vfs_engine_feed, params decoded)
 *   tool encode  fs.write's request  (jpt__vfs_client_request_write)
 *   tool decode  fs.read's response  (jpt__vfs_client_feed, content decoded)
 *
 * for source code (mostly ASCII, with quotes, backslashes, tabs and
 * newlines to escape) and for prose in several scripts (mostly multi-byte
 * UTF-8). Each figure is the median of interleaved rounds. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench-util.h"
#include "vfs-tool/vfs-tool.h"
#include "vfs/vfs.h"

#define CONTENT_BYTES (1u << 20)
#define ROUNDS 15
#define ITERATIONS 8

static void die(const char *what)
{
    fprintf(stderr, "bench-vfs-codec: %s\n", what);
    exit(1);
}

/* 1 MiB of C headers (those that are valid UTF-8), or a generated
 * imitation where /usr/include is missing. */
static char *source_text(void)
{
    char *buf = malloc(CONTENT_BYTES), path[512];
    size_t n = 0;
    DIR *d = opendir("/usr/include");
    struct dirent *e;

    if (buf == NULL)
        die("out of memory");
    while (d != NULL && n < CONTENT_BYTES && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".h") != 0)
            continue;
        snprintf(path, sizeof(path), "/usr/include/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        if (f == NULL)
            continue;
        size_t got = fread(buf + n, 1, CONTENT_BYTES - n, f);
        fclose(f);
        if (jpt__json_quoted_size(buf + n, got, true) != 0)
            n += got;
    }
    if (d != NULL)
        closedir(d);
    static const char line[] = "\tif (x->name[i] == '\"' || c == '\\\\') /* \"quoted\" */\n";
    while (n < CONTENT_BYTES) {
        size_t k = CONTENT_BYTES - n < sizeof(line) - 1 ? CONTENT_BYTES - n : sizeof(line) - 1;
        memcpy(buf + n, line, k);
        n += k;
    }
    /* Cut back to a whole UTF-8 sequence. */
    while (jpt__json_quoted_size(buf, n, true) == 0)
        n--;
    buf[n - 1] = '\n';
    memset(buf + n, '\n', CONTENT_BYTES - n);
    return buf;
}

static char *prose_text(void)
{
    static const char line[] = "Größe, naïve café — 東京の天気は晴れ。Ελληνικά κείμενα. "
                               "Русский текст, \"quoted\".\n";
    char *buf = malloc(CONTENT_BYTES);
    size_t n = 0;

    if (buf == NULL)
        die("out of memory");
    while (n + sizeof(line) - 1 <= CONTENT_BYTES) {
        memcpy(buf + n, line, sizeof(line) - 1);
        n += sizeof(line) - 1;
    }
    memset(buf + n, '.', CONTENT_BYTES - n);
    return buf;
}

/* ---- The engine's side -------------------------------------------------------- */

static jpt__vfs_call *taken;

static void take_call(void *ud, jpt__vfs_call *call)
{
    (void)ud;
    taken = call;
}

static void drop_state(void *ud, jpt_state *st, bool final)
{
    (void)final;
    (void)ud;
    jpt_state_unref(st);
}

static jpt__vfs_engine *new_engine(void)
{
    jpt__vfs_handlers h = {.state = drop_state};
    jpt__vfs_init init = {"bench", NULL, NULL, NULL};
    jpt__vfs_engine *e;
    jpt__errbuf err;
    const char *p;

    h.method[JPT__VFS_FS_READ] = take_call;
    h.method[JPT__VFS_FS_WRITE] = take_call;
    if (jpt__vfs_engine_new(NULL, &h, &init, &err, &e) < 0)
        die(err.text);
    jpt__vfs_engine_output_done(e, jpt__vfs_engine_output(e, &p));
    return e;
}

static void feed_all(jpt__vfs_engine *e, const char *p, size_t n)
{
    size_t used;
    if (jpt__vfs_engine_feed(e, p, n, &used) < 0 || used != n)
        die(jpt__vfs_engine_errmsg(e));
}

static const char read_request[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fs.read\",\"params\":{\"path\":\"src/main.c\"}}\n";

/* The response to fs.read, from the file's bytes to the bytes written. */
static size_t host_encode(jpt__vfs_engine *e, const char *content)
{
    const char *p;

    feed_all(e, read_request, sizeof(read_request) - 1);
    if (jpt__vfs_call_answer_read(taken, content, CONTENT_BYTES) < 0)
        die("answer_read failed");
    size_t n = jpt__vfs_engine_output(e, &p);
    jpt__vfs_engine_output_done(e, n);
    return n;
}

/* The fs.write request, from its line to the bytes the handler writes. */
static size_t host_decode(jpt__vfs_engine *e, const char *line, size_t len)
{
    feed_all(e, line, len);
    size_t n = jpt__vfs_call_params(taken)->content_len;
    if (jpt__vfs_call_answer_json(taken, "{}", 2) < 0)
        die("answer_json failed");
    const char *p;
    jpt__vfs_engine_output_done(e, jpt__vfs_engine_output(e, &p));
    return n;
}

static const char init_line[] = "{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{\"tool\":"
                                "{\"name\":\"bench\"},\"protocol_version\":\"0.1.0\"}}\n";

static jpt__vfs_client *new_client(void)
{
    jpt__vfs_client *c;

    if (jpt__vfs_client_new(0, 0, &c) < 0 || jpt__vfs_client_feed(c, init_line, sizeof(init_line) - 1) < 0)
        die("client setup failed");
    return c;
}

static size_t tool_encode(const char *content)
{
    jpt__vfs_client *c = new_client();
    uint64_t id;
    const char *p;

    if (jpt__vfs_client_request_write(c, "src/main.c", content, CONTENT_BYTES, &id) < 0)
        die("request_write failed");
    size_t n = jpt__vfs_client_output(c, &p);
    jpt__vfs_client_free(c);
    return n;
}

/* The response to fs.read: framed, matched to its request, and its content
 * decoded in place as jpt_vfs_tool_read() does. */
static size_t tool_decode(const char *line, size_t len)
{
    jpt__vfs_client *c = new_client();
    jpt__json_iter it;
    jpt__vfs_span key, value;
    uint64_t id;
    size_t n = 0;

    if (jpt__vfs_client_request_path(c, JPT__VFS_FS_READ, "src/main.c", &id) < 0 ||
        jpt__vfs_client_feed(c, line, len) < 0)
        die("client feed failed");
    jpt__vfs_reply *r = jpt__vfs_client_reply(c, id);
    if (r == NULL || !r->done)
        die("no reply");
    jpt__json_iter_init(&it, r->result);
    while (jpt__json_next_member(&it, &key, &value))
        if (jpt__json_key_is(key, "content"))
            n = jpt__json_unescape(value, r->storage);
    jpt__vfs_client_free(c);
    return n;
}

/* ---- jansson doing the same ---------------------------------------------------------- */

static size_t jansson_encode_response(const char *content)
{
    json_t *v = json_pack("{s:s,s:i,s:{s:s%,s:i}}", "jsonrpc", "2.0", "id", 1, "result",
                          "content", content, (size_t)CONTENT_BYTES, "size", CONTENT_BYTES);
    char *text = json_dumps(v, JSON_COMPACT);
    size_t n = strlen(text);
    free(text);
    json_decref(v);
    return n;
}

static size_t jansson_encode_request(const char *content)
{
    json_t *v = json_pack("{s:s,s:i,s:s,s:{s:s,s:s%}}", "jsonrpc", "2.0", "id", 1, "method",
                          "fs.write", "params", "path", "src/main.c", "content", content,
                          (size_t)CONTENT_BYTES);
    char *text = json_dumps(v, JSON_COMPACT);
    size_t n = strlen(text);
    free(text);
    json_decref(v);
    return n;
}

/* Parses the message and takes the content string out of `outer`. */
static size_t jansson_decode(const char *line, size_t len, const char *outer)
{
    json_t *v = json_loadb(line, len, 0, NULL);
    json_t *s = json_object_get(json_object_get(v, outer), "content");
    size_t n = json_string_length(s);
    if (n != CONTENT_BYTES)
        die("jansson read a different content");
    char *copy = malloc(n);
    memcpy(copy, json_string_value(s), n);
    free(copy);
    json_decref(v);
    return n;
}

/* ---- Measuring ------------------------------------------------------------------------------ */

typedef struct pair {
    double ours[ROUNDS], ref[ROUNDS];
} pair;

static double mbps(double seconds)
{
    return (double)CONTENT_BYTES * ITERATIONS / seconds / 1e6;
}

static void report(const char *name, pair *p)
{
    double ours = bench_median(p->ours, ROUNDS), ref = bench_median(p->ref, ROUNDS);
    printf("%s: %.0f MB/s (ratio %.2f vs jansson %.0f MB/s)\n", name, mbps(ours), ref / ours,
           mbps(ref));
}

static void bench_content(const char *label, const char *content)
{
    pair he, hd, te, td;
    char name[96];
    jpt__vfs_engine *e = new_engine();
    size_t sink = 0;

    /* The lines each side parses, made once by the other side. */
    jpt__vfs_client *c = new_client();
    uint64_t id;
    const char *p;
    if (jpt__vfs_client_request_write(c, "src/main.c", content, CONTENT_BYTES, &id) < 0)
        die("request_write failed");
    size_t wlen = jpt__vfs_client_output(c, &p);
    char *write_line = malloc(wlen);
    memcpy(write_line, p, wlen);
    jpt__vfs_client_free(c);
    feed_all(e, read_request, sizeof(read_request) - 1);
    jpt__vfs_call_answer_read(taken, content, CONTENT_BYTES);
    size_t rlen = jpt__vfs_engine_output(e, &p);
    char *read_line = malloc(rlen);
    memcpy(read_line, p, rlen);
    jpt__vfs_engine_output_done(e, rlen);

    for (int r = 0; r < ROUNDS; r++) {
        double t0 = bench_now();
        for (int i = 0; i < ITERATIONS; i++)
            sink += host_encode(e, content);
        double t1 = bench_now();
        for (int i = 0; i < ITERATIONS; i++)
            sink += jansson_encode_response(content);
        double t2 = bench_now();
        for (int i = 0; i < ITERATIONS; i++)
            sink += host_decode(e, write_line, wlen);
        double t3 = bench_now();
        for (int i = 0; i < ITERATIONS; i++)
            sink += jansson_decode(write_line, wlen, "params");
        double t4 = bench_now();
        for (int i = 0; i < ITERATIONS; i++)
            sink += tool_encode(content);
        double t5 = bench_now();
        for (int i = 0; i < ITERATIONS; i++)
            sink += jansson_encode_request(content);
        double t6 = bench_now();
        for (int i = 0; i < ITERATIONS; i++)
            sink += tool_decode(read_line, rlen);
        double t7 = bench_now();
        for (int i = 0; i < ITERATIONS; i++)
            sink += jansson_decode(read_line, rlen, "result");
        double t8 = bench_now();
        he.ours[r] = t1 - t0, he.ref[r] = t2 - t1;
        hd.ours[r] = t3 - t2, hd.ref[r] = t4 - t3;
        te.ours[r] = t5 - t4, te.ref[r] = t6 - t5;
        td.ours[r] = t7 - t6, td.ref[r] = t8 - t7;
    }
    if (sink == 0)
        die("nothing measured");
    snprintf(name, sizeof(name), "host encode fs.read 1 MiB %s", label);
    report(name, &he);
    snprintf(name, sizeof(name), "host decode fs.write 1 MiB %s", label);
    report(name, &hd);
    snprintf(name, sizeof(name), "tool encode fs.write 1 MiB %s", label);
    report(name, &te);
    snprintf(name, sizeof(name), "tool decode fs.read 1 MiB %s", label);
    report(name, &td);
    free(write_line);
    free(read_line);
    jpt__vfs_engine_free(e);
}

int main(void)
{
    char *source = source_text(), *prose = prose_text();

    bench_content("source", source);
    bench_content("prose", prose);
    free(source);
    free(prose);
    return 0;
}
