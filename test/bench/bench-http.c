/* bench-http: 100 sequential http.get of a loopback server through the VFS
 * host (a tool process, test/tools/vfs-probe, asking the host over the
 * protocol; the host checking the policy and running the transfer on
 * libcurl's multi interface in its loop) against libcurl's own
 * curl_easy_perform loop fetching the same URL 100 times, in the same run
 * (issue 10 §4).
 *
 * The server is a thread of this program answering HTTP/1.1 with
 * keep-alive, so both sides reuse one connection. The jptool figure is
 * the tool's run less an empty run of the same tool (its start, init and
 * exit), divided by 100: what one request costs; the same for fs.exists
 * shows what the protocol's round trip alone costs. Each figure is the
 * median of interleaved rounds. Target: at most 1.4 times curl's loop
 * (issue 17 §4). The host's system calls per request are counted the same
 * way (a run less an empty one), beside the curl loop's (bench_syscalls). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include <jptool/jptool.h>

#include "bench-util.h"
#include "http-server.h"

#ifndef JPT_BENCH_TOOLS
#error "JPT_BENCH_TOOLS must name test/tools in the build tree"
#endif

#define REQUESTS 100
#define TARGET 1.4

/* The system calls this thread made in the last run: the host's (in
 * jptool_run) or curl's loop (curl_run). */
static long long run_calls;
/* … and the CPU it used: what a loaded machine's scheduling leaves out. */
static double run_cpu;
#define ROUNDS 9

static void die(const char *what)
{
    fprintf(stderr, "bench-http: %s\n", what);
    exit(1);
}

/* One run of the probe doing `count` http.get of `url` (or fs.exists of
 * "." when url is NULL): seconds. */
static double jptool_run(const char *sandbox, const char *url, int count)
{
    jpt_vfs_host_options o = {.size = sizeof(o), .sandbox_json = sandbox};
    const char *argv[] = {JPT_BENCH_TOOLS "/vfs-probe", NULL};
    jpt_vfs_host *h = NULL;
    jpt_state *st = NULL;
    char tool[512];

    if (url != NULL)
        snprintf(tool, sizeof(tool),
                 "{\"name\":\"bench\",\"arguments\":{\"repeat\":{\"method\":\"http.get\","
                 "\"params\":{\"url\":\"%s\"},\"count\":%d}}}",
                 url, count);
    else
        snprintf(tool, sizeof(tool),
                 "{\"name\":\"bench\",\"arguments\":{\"repeat\":{\"method\":\"fs.exists\","
                 "\"params\":{\"path\":\".\"},\"count\":%d}}}",
                 count);
    if (jpt_vfs_host_new(&o, &h) != JPT_OK)
        die("jpt_vfs_host_new");
    long long calls = bench_syscalls();
    double t0 = bench_now(), c0 = bench_cpu_now();
    if (jpt_vfs_host_spawn(h, argv, tool) != JPT_OK || jpt_vfs_host_run(h, 60000) != JPT_OK)
        die(jpt_vfs_host_errmsg(h));
    double t = bench_now() - t0;
    run_cpu = bench_cpu_now() - c0;
    run_calls = bench_syscalls() - calls;
    char *text = NULL;
    char expected[64];
    snprintf(expected, sizeof(expected), url != NULL ? "%dx http.get ok {\"status\":200,"
                                                     : "%dx fs.exists ok {\"exists\":true}",
             count);
    if (jpt_vfs_host_state(h, &st) != JPT_OK || jpt_state_render(st, NULL, &text) != JPT_OK ||
        (count > 0 && strncmp(text, expected, strlen(expected)) != 0)) {
        fprintf(stderr, "the tool said: %s\n", text != NULL ? text : "(nothing)");
        die("the probe did not fetch as it should");
    }
    jpt_free(text);
    jpt_state_unref(st);
    jpt_vfs_host_free(h);
    return t;
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

/* curl's own loop: one easy handle, `count` transfers. */
static double curl_run(const char *url, int count)
{
    CURL *easy = curl_easy_init();
    long code = 0;

    if (easy == NULL)
        die("curl_easy_init");
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_PROXY, "");
    long long calls = bench_syscalls();
    double t0 = bench_now(), c0 = bench_cpu_now();
    for (int i = 0; i < count; i++)
        if (curl_easy_perform(easy) != CURLE_OK ||
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code != 200)
            die("curl_easy_perform failed");
    double t = bench_now() - t0;
    run_cpu = bench_cpu_now() - c0;
    run_calls = bench_syscalls() - calls;
    curl_easy_cleanup(easy);
    return t;
}

int main(void)
{
    double full[ROUNDS], empty[ROUNDS], ref[ROUNDS], fs[ROUNDS];
    double calls_full[ROUNDS], calls_empty[ROUNDS], calls_ref[ROUNDS];
    double cpu_full[ROUNDS], cpu_empty[ROUNDS], cpu_ref[ROUNDS];
    char url[128], sandbox[256];
    int port = bench_http_server_start();

    if (port < 0)
        die("cannot start the server");

    curl_global_init(CURL_GLOBAL_DEFAULT);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/hello", port);
    snprintf(sandbox, sizeof(sandbox), "{\"network\":{\"allow\":[\"http://127.0.0.1:%d/\"]}}",
             port);
    for (int r = 0; r < ROUNDS; r++) {
        full[r] = jptool_run(sandbox, url, REQUESTS);
        calls_full[r] = (double)run_calls;
        cpu_full[r] = run_cpu;
        empty[r] = jptool_run(sandbox, url, 0);
        calls_empty[r] = (double)run_calls;
        cpu_empty[r] = run_cpu;
        ref[r] = curl_run(url, REQUESTS);
        calls_ref[r] = (double)run_calls;
        cpu_ref[r] = run_cpu;
        fs[r] = jptool_run(sandbox, NULL, REQUESTS);
    }
    double per_jpt[ROUNDS], per_fs[ROUNDS], per_calls[ROUNDS], per_cpu[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        per_jpt[r] = (full[r] - empty[r]) / REQUESTS;
        per_fs[r] = (fs[r] - empty[r]) / REQUESTS;
        per_calls[r] = (calls_full[r] - calls_empty[r]) / REQUESTS;
        per_cpu[r] = (cpu_full[r] - cpu_empty[r]) / REQUESTS;
    }
    double jpt = bench_median(per_jpt, ROUNDS), curl = bench_median(ref, ROUNDS) / REQUESTS;
    double whole = bench_median(full, ROUNDS);
    printf("%d sequential http.get of a loopback server, median of %d rounds\n", REQUESTS,
           ROUNDS);
    printf("  jptool (tool -> VFS host -> libcurl multi): %8.1f us per request "
           "(whole run %.1f ms, tool start and exit included)\n",
           jpt * 1e6, whole * 1e3);
    printf("  curl_easy_perform loop:                     %8.1f us per request\n", curl * 1e6);
    printf("  (the protocol's round trip alone, fs.exists: %.1f us per request)\n",
           bench_median(per_fs, ROUNDS) * 1e6);
    printf("  CPU per request (this thread: the host, or curl's loop): host %.1f us, curl "
           "loop %.1f us\n",
           bench_median(per_cpu, ROUNDS) * 1e6, bench_median(cpu_ref, ROUNDS) / REQUESTS * 1e6);
    double host_calls = bench_median(per_calls, ROUNDS);
    double curl_calls = bench_median(calls_ref, ROUNDS) / REQUESTS;
    printf("  system calls per request (%s): host %.2f, curl loop %.2f "
           "(the tool's pipe adds 3 at least: epoll_wait, read, write; target <= %.0f: %s)\n",
           bench_syscalls_how(), host_calls, curl_calls, curl_calls + 3.5,
           bench_verdict(host_calls, curl_calls + 3.5));
    printf("http.get x%d keep-alive loopback: %.1f us per request (ratio %.2f vs "
           "curl_easy_perform loop %.1f us; target <= %.2f (issue 17 §4): %s)\n",
           REQUESTS, jpt * 1e6, jpt / curl, curl * 1e6, TARGET, bench_verdict(jpt / curl, TARGET));
    curl_global_cleanup();
    return 0;
}
