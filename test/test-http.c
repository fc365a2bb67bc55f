/* The http room (lib/http, http.h) on its own: exchanges on a jpt__loop
 * against a small HTTP server the test runs on the same loop (a listening
 * socket on 127.0.0.1 and its connections are watches of that loop, so
 * nothing blocks and no thread or process is needed). What the room
 * promises: the response as received (status, headers, decoded body),
 * redirects reported and never followed, the size limit, the deadline,
 * the addresses `reach` allows, scrubbed headers and body, exchanges freed
 * before their end never calling back; and the classes of addresses. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/http.h"
#include "test-util.h"

/* A bound for the waits of a test, not a timing check. */
#define WAIT_NS (60ull * 1000000000ull)

/* ---- The server ---------------------------------------------------------------------- */

/* One connection at a time: it reads a request (headers and a body of
 * Content-Length bytes), answers `response` unless `silent`, and closes. */
static struct server {
    jpt__loop *loop;
    int listen_fd;
    jpt__watch listen_watch;
    int fd;
    jpt__watch watch;
    char request[65536];
    size_t request_len;
    char *out;       /* the answer, being written */
    size_t out_len, out_done;
    const char *response;
    bool silent;
    int requests;    /* requests read whole */
    uint16_t port;
} srv;

static void conn_close(void)
{
    if (srv.fd < 0)
        return;
    jpt__loop_watch_stop(srv.loop, &srv.watch);
    close(srv.fd);
    srv.fd = -1;
    free(srv.out);
    srv.out = NULL;
}

/* Whether the request read so far is whole. */
static bool request_whole(void)
{
    srv.request[srv.request_len] = '\0';
    char *end = strstr(srv.request, "\r\n\r\n");
    if (end == NULL)
        return false;
    const char *cl = strcasestr(srv.request, "\r\nContent-Length:");
    size_t body = cl != NULL && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
    return srv.request_len >= (size_t)(end + 4 - srv.request) + body;
}

static void on_conn(jpt__watch *w, uint32_t events)
{
    (void)w;
    if (events & EPOLLOUT) {
        ssize_t n = write(srv.fd, srv.out + srv.out_done, srv.out_len - srv.out_done);
        if (n < 0 && errno != EAGAIN) {
            conn_close();
            return;
        }
        srv.out_done += n > 0 ? (size_t)n : 0;
        if (srv.out_done == srv.out_len)
            conn_close();
        return;
    }
    ssize_t n = read(srv.fd, srv.request + srv.request_len,
                     sizeof(srv.request) - 1 - srv.request_len);
    if (n <= 0) {
        if (n == 0 || errno != EAGAIN)
            conn_close();
        return;
    }
    srv.request_len += (size_t)n;
    if (!request_whole())
        return;
    srv.requests++;
    if (srv.silent)
        return;
    srv.out = strdup(srv.response);
    assert_non_null(srv.out);
    srv.out_len = strlen(srv.out);
    srv.out_done = 0;
    assert_int_equal(jpt__loop_watch_update(srv.loop, &srv.watch, EPOLLOUT), JPT_OK);
}

static void on_accept(jpt__watch *w, uint32_t events)
{
    (void)w;
    (void)events;
    int fd = accept4(srv.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (srv.fd >= 0) { /* one at a time: the test makes one exchange */
        close(fd);
        return;
    }
    srv.fd = fd;
    srv.request_len = 0;
    assert_int_equal(jpt__loop_watch_start(srv.loop, &srv.watch, fd, EPOLLIN, on_conn, NULL),
                     JPT_OK);
}

static int setup(void **state)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);

    (void)state;
    memset(&srv, 0, sizeof(srv));
    srv.fd = -1;
    assert_int_equal(jpt__loop_new(&srv.loop), JPT_OK);
    srv.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(srv.listen_fd >= 0);
    assert_int_equal(bind(srv.listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(srv.listen_fd, 8), 0);
    assert_int_equal(getsockname(srv.listen_fd, (struct sockaddr *)&a, &len), 0);
    srv.port = ntohs(a.sin_port);
    assert_int_equal(jpt__loop_watch_start(srv.loop, &srv.listen_watch, srv.listen_fd, EPOLLIN,
                                           on_accept, NULL),
                     JPT_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    conn_close();
    jpt__loop_watch_stop(srv.loop, &srv.listen_watch);
    close(srv.listen_fd);
    jpt__loop_free(srv.loop);
    return 0;
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

/* ---- Exchanges ----------------------------------------------------------------------- */

typedef struct exchange {
    jpt__http *http;
    jpt__http_xfer *x;
    int done;
    struct curl_slist *headers;
    jpt__scrub_set *scrub;
    bool public_only; /* reach: public addresses only, else any */
} exchange;

static void on_done(jpt__http_xfer *x, void *ud)
{
    exchange *e = ud;

    assert_ptr_equal(x, e->x);
    e->done++;
}

/* A URL on the test's server (or `host` given), parsed by libcurl. */
static CURLU *url(const char *host, const char *path)
{
    char text[256];
    CURLU *u = curl_url();

    assert_non_null(u);
    snprintf(text, sizeof(text), "http://%s:%u%s", host != NULL ? host : "127.0.0.1",
             srv.port, path);
    assert_int_equal(curl_url_set(u, CURLUPART_URL, text, 0), CURLUE_OK);
    return u;
}

/* Starts an exchange of `req` (its url taken), the limits defaulted. */
static void start(exchange *e, jpt__http_request req)
{
    jpt__errbuf err = {0};

    if (e->http == NULL)
        assert_int_equal(jpt__http_new(srv.loop, &e->http), JPT_OK);
    if (req.max_bytes == 0)
        req.max_bytes = 1 << 20;
    if (req.deadline == 0)
        req.deadline = jpt__loop_now() + WAIT_NS;
    req.reach = e->public_only ? JPT__HTTP_ADDR_PUBLIC : JPT__HTTP_ADDR_LOCAL;
    int rc = jpt__http_start(e->http, &req, on_done, e, &err, &e->x);
    if (rc != JPT_OK)
        fail_msg("jpt__http_start: %s (%s)", jpt_status_name(rc), err.text);
}

/* Runs the loop until the exchange is done (bounded). */
static jpt__http_response *run(exchange *e)
{
    uint64_t until = jpt__loop_now() + WAIT_NS;

    while (e->done == 0 && jpt__loop_now() < until) {
        int timeout = jpt__loop_timeout(srv.loop);
        assert_int_equal(jpt__loop_poll(srv.loop, timeout < 0 || timeout > 1000 ? 1000 : timeout),
                         JPT_OK);
        assert_true(jpt__loop_dispatch(srv.loop) >= 0);
    }
    assert_int_equal(e->done, 1);
    return jpt__http_xfer_response(e->x);
}

static void finish(exchange *e)
{
    jpt__http_xfer_free(e->x);
    jpt__http_free(e->http);
    curl_slist_free_all(e->headers);
    jpt__scrub_set_free(e->scrub);
}

/* The value of response header `name` (the first), or NULL. */
static const char *header(const jpt__http_response *r, const char *name)
{
    const char *p = r->headers.data;

    for (size_t i = 0; i < r->nheaders; i++) {
        const char *value = p + strlen(p) + 1;
        if (strcasecmp(p, name) == 0)
            return value;
        p = value + strlen(value) + 1;
    }
    return NULL;
}

static void a_get_gives_the_status_headers_and_body_as_sent(void **state)
{
    (void)state;
    exchange e = {0};

    srv.response = "HTTP/1.1 203 Fine\r\nContent-Length: 5\r\nX-Test: one two\r\n"
                   "Connection: close\r\n\r\nhello";
    start(&e, (jpt__http_request){.url = url(NULL, "/a/b?c=d")});
    assert_int_equal(jpt__http_active(e.http), 1);
    jpt__http_response *r = run(&e);
    assert_int_equal(r->status, JPT_OK);
    assert_string_equal(r->error, "");
    assert_int_equal(r->code, 203);
    assert_int_equal(r->body.len, 5);
    assert_memory_equal(r->body.data, "hello", 5);
    assert_string_equal(header(r, "X-Test"), "one two");
    assert_string_equal(header(r, "content-length"), "5");
    assert_null(r->redirect);
    /* What the server read: the request line as the URL says. */
    assert_true(strncmp(srv.request, "GET /a/b?c=d HTTP/1.1\r\n", 23) == 0);
    finish(&e);
}

static void a_post_sends_its_body_and_headers(void **state)
{
    (void)state;
    exchange e = {0};
    static const char body[] = "{\"k\":\"v\"}";

    srv.response = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    e.headers = curl_slist_append(NULL, "Content-Type: application/json");
    assert_non_null(e.headers);
    start(&e, (jpt__http_request){.url = url(NULL, "/post"), .post = true, .body = body,
                                   .body_len = sizeof(body) - 1, .headers = e.headers});
    jpt__http_response *r = run(&e);
    assert_int_equal(r->status, JPT_OK);
    assert_int_equal(r->code, 200);
    assert_int_equal(r->body.len, 0);
    assert_true(strncmp(srv.request, "POST /post HTTP/1.1\r\n", 21) == 0);
    assert_non_null(strcasestr(srv.request, "\r\nContent-Type: application/json\r\n"));
    assert_non_null(strstr(srv.request, "\r\n\r\n{\"k\":\"v\"}"));
    finish(&e);
}

static void a_chunked_body_arrives_decoded(void **state)
{
    (void)state;
    exchange e = {0};

    srv.response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                   "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n";
    start(&e, (jpt__http_request){.url = url(NULL, "/")});
    jpt__http_response *r = run(&e);
    assert_int_equal(r->status, JPT_OK);
    assert_int_equal(r->body.len, 7);
    assert_memory_equal(r->body.data, "abcdefg", 7);
    finish(&e);
}

static void a_redirect_is_reported_as_an_absolute_url_and_not_followed(void **state)
{
    (void)state;
    exchange e = {0};

    srv.response = "HTTP/1.1 302 Found\r\nLocation: /elsewhere?x=1\r\nContent-Length: 0\r\n"
                   "Connection: close\r\n\r\n";
    start(&e, (jpt__http_request){.url = url(NULL, "/from")});
    jpt__http_response *r = run(&e);
    assert_int_equal(r->status, JPT_OK);
    assert_int_equal(r->code, 302);
    char expected[128];
    snprintf(expected, sizeof(expected), "http://127.0.0.1:%u/elsewhere?x=1", srv.port);
    assert_string_equal(r->redirect, expected);
    assert_int_equal(srv.requests, 1);
    finish(&e);
}

static void a_response_past_its_limit_ends_the_exchange(void **state)
{
    (void)state;
    exchange e = {0};
    enum { BODY = 200000 };
    char *text = malloc(BODY + 128);

    assert_non_null(text);
    int n = snprintf(text, 128, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
                     BODY);
    memset(text + n, 'x', BODY);
    text[n + BODY] = '\0';
    srv.response = text;
    start(&e, (jpt__http_request){.url = url(NULL, "/big"), .max_bytes = 10000});
    jpt__http_response *r = run(&e);
    assert_int_equal(r->status, JPT_ERR_LIMIT);
    assert_true(r->body.len <= 10000);
    finish(&e);
    free(text);
}

static void a_server_that_never_answers_meets_the_deadline(void **state)
{
    (void)state;
    exchange e = {0};

    srv.silent = true;
    start(&e, (jpt__http_request){.url = url(NULL, "/"),
                                   .deadline = jpt__loop_deadline_ms(300)});
    jpt__http_response *r = run(&e);
    assert_int_equal(r->status, JPT_ERR_TIMEOUT);
    assert_int_equal(srv.requests, 1);
    finish(&e);
}

/* A name that leads to this machine, with a reach that allows only public
 * addresses: refused before connecting, the address named. */
static void a_name_leading_to_a_refused_address_is_denied(void **state)
{
    (void)state;
    exchange e = {.public_only = true};

    srv.response = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    start(&e, (jpt__http_request){.url = url("localhost", "/")});
    jpt__http_response *r = run(&e);
    assert_int_equal(r->status, JPT_ERR_DENIED);
    assert_non_null(strstr(r->error, "a loopback, link-local, multicast, reserved or "
                                     "unspecified address"));
    assert_int_equal(srv.requests, 0);
    finish(&e);
}

static void secrets_in_headers_and_body_are_scrubbed(void **state)
{
    (void)state;
    exchange e = {0};
    const char *values[] = {"s3cr3t-t0ken-value"};
    size_t lens[] = {strlen(values[0])};

    assert_int_equal(jpt__scrub_set_new(values, lens, 1, &e.scrub), JPT_OK);
    srv.response = "HTTP/1.1 200 OK\r\nX-Echo: Bearer s3cr3t-t0ken-value\r\nContent-Length: 26\r\n"
                   "Connection: close\r\n\r\nseen: s3cr3t-t0ken-value.\n";
    start(&e, (jpt__http_request){.url = url(NULL, "/"), .scrub = e.scrub});
    jpt__http_response *r = run(&e);
    assert_int_equal(r->status, JPT_OK);
    assert_string_equal(header(r, "X-Echo"), "Bearer " JPT__SCRUB_MARK);
    assert_int_equal(r->body.len, strlen("seen: " JPT__SCRUB_MARK ".\n"));
    assert_memory_equal(r->body.data, "seen: " JPT__SCRUB_MARK ".\n", r->body.len);
    finish(&e);
}

static void an_unknown_content_encoding_fails_the_exchange(void **state)
{
    (void)state;
    exchange e = {0};

    srv.response = "HTTP/1.1 200 OK\r\nContent-Encoding: x-jpt-unknown\r\nContent-Length: 3\r\n"
                   "Connection: close\r\n\r\nabc";
    start(&e, (jpt__http_request){.url = url(NULL, "/")});
    jpt__http_response *r = run(&e);
    assert_int_equal(r->status, JPT_ERR_IO);
    assert_string_not_equal(r->error, "");
    finish(&e);
}

/* Freed before its end: the callback never runs, the room holds nothing,
 * and freeing the object with exchanges running is as quiet. */
static void an_exchange_freed_before_its_end_never_calls_back(void **state)
{
    (void)state;
    exchange e = {0}, f = {0};

    srv.silent = true;
    start(&e, (jpt__http_request){.url = url(NULL, "/")});
    f.http = e.http;
    start(&f, (jpt__http_request){.url = url(NULL, "/")});
    assert_int_equal(jpt__http_active(e.http), 2);
    for (int i = 0; i < 20 && srv.requests == 0; i++) {
        assert_int_equal(jpt__loop_poll(srv.loop, 100), JPT_OK);
        jpt__loop_dispatch(srv.loop);
    }
    jpt__http_xfer_free(e.x);
    e.x = NULL;
    assert_int_equal(jpt__http_active(e.http), 1);
    jpt__http_free(e.http);
    for (int i = 0; i < 5; i++) {
        jpt__loop_poll(srv.loop, 10);
        jpt__loop_dispatch(srv.loop);
    }
    assert_int_equal(e.done + f.done, 0);
}

/* ---- Classes of addresses ------------------------------------------------------------ */

static int class_of(const char *text)
{
    struct sockaddr_storage s = {0};

    if (strchr(text, ':') != NULL) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&s;
        a->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, text, &a->sin6_addr), 1);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&s;
        a->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, text, &a->sin_addr), 1);
    }
    return jpt__http_address_class((struct sockaddr *)&s);
}

static void addresses_fall_in_the_classes_http_h_lists(void **state)
{
    (void)state;
    static const struct {
        const char *address;
        int class;
    } cases[] = {
        {"8.8.8.8", JPT__HTTP_ADDR_PUBLIC},       {"2001:db8::1", JPT__HTTP_ADDR_PUBLIC},
        {"10.1.2.3", JPT__HTTP_ADDR_PRIVATE},     {"172.16.0.1", JPT__HTTP_ADDR_PRIVATE},
        {"172.32.0.1", JPT__HTTP_ADDR_PUBLIC},    {"192.168.9.9", JPT__HTTP_ADDR_PRIVATE},
        {"100.64.0.1", JPT__HTTP_ADDR_PRIVATE},   {"198.18.0.1", JPT__HTTP_ADDR_PRIVATE},
        {"192.0.0.8", JPT__HTTP_ADDR_PRIVATE},    {"fc00::1", JPT__HTTP_ADDR_PRIVATE},
        {"fec0::1", JPT__HTTP_ADDR_PRIVATE},      {"127.0.0.1", JPT__HTTP_ADDR_LOCAL},
        {"0.0.0.0", JPT__HTTP_ADDR_LOCAL},        {"169.254.169.254", JPT__HTTP_ADDR_LOCAL},
        {"224.0.0.1", JPT__HTTP_ADDR_LOCAL},      {"255.255.255.255", JPT__HTTP_ADDR_LOCAL},
        {"::", JPT__HTTP_ADDR_LOCAL},             {"::1", JPT__HTTP_ADDR_LOCAL},
        {"fe80::1", JPT__HTTP_ADDR_LOCAL},        {"ff02::1", JPT__HTTP_ADDR_LOCAL},
        /* IPv6 forms of an IPv4 address are of its class. */
        {"::ffff:127.0.0.1", JPT__HTTP_ADDR_LOCAL}, {"::ffff:10.0.0.1", JPT__HTTP_ADDR_PRIVATE},
        {"::ffff:8.8.8.8", JPT__HTTP_ADDR_PUBLIC},  {"64:ff9b::7f00:1", JPT__HTTP_ADDR_LOCAL},
        {"2002:7f00:1::", JPT__HTTP_ADDR_LOCAL},    {"2002:808:808::", JPT__HTTP_ADDR_PUBLIC},
        {"64:ff9b:1::808:808", JPT__HTTP_ADDR_PRIVATE},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = class_of(cases[i].address);
        if (got != cases[i].class)
            fail_msg("%s: class %d, not %d", cases[i].address, got, cases[i].class);
    }
}

static void the_loopback_address_is_this_machines_own(void **state)
{
    (void)state;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in b = {.sin_family = AF_INET};

    assert_int_equal(inet_pton(AF_INET, "192.0.2.77", &b.sin_addr), 1); /* TEST-NET-1 */
    assert_int_equal(jpt__http_address_is_own((struct sockaddr *)&a), 1);
    assert_int_equal(jpt__http_address_is_own((struct sockaddr *)&b), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(a_get_gives_the_status_headers_and_body_as_sent),
        T(a_post_sends_its_body_and_headers),
        T(a_chunked_body_arrives_decoded),
        T(a_redirect_is_reported_as_an_absolute_url_and_not_followed),
        T(a_response_past_its_limit_ends_the_exchange),
        T(a_server_that_never_answers_meets_the_deadline),
        T(a_name_leading_to_a_refused_address_is_denied),
        T(secrets_in_headers_and_body_are_scrubbed),
        T(an_unknown_content_encoding_fails_the_exchange),
        T(an_exchange_freed_before_its_end_never_calls_back),
        cmocka_unit_test(addresses_fall_in_the_classes_http_h_lists),
        cmocka_unit_test(the_loopback_address_is_this_machines_own),
    };

    return TU_RUN(tests);
}
