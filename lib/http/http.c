/* libcurl's multi-socket API on a jpt__loop, and one HTTP exchange on it
 * (http.h). The multi tells us which sockets to watch (the socket
 * callback) and when to call it back (the timer callback); both only
 * change watches and a timer of the loop. The loop's callbacks then drive
 * the multi (curl_multi_socket_action) and collect finished transfers,
 * whose ends are reported from deferred calls. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "http/http.h"

/* Idle easy handles kept at most: one per exchange a busy tool keeps
 * running at once, roughly. */
#define IDLE_EASY 8

/* A socket libcurl asked us to watch. Found by its fd: libcurl's own
 * per-socket pointer would need curl_multi_assign() from inside its
 * socket callback. */
typedef struct sock {
    jpt__watch watch;
    jpt__http *h;
} sock;

struct jpt__http {
    jpt__loop *loop;
    CURLM *multi;        /* made by the first exchange */
    bool global_init;    /* curl_global_init() succeeded */
    jpt__timer timer;    /* the multi's timeout */
    jpt__defer kick;     /* …run from the loop when the timer could not be
                            set (out of memory) */
    bool unwatched;      /* a transfer's socket could not be watched */
    sock **socks;        /* by fd */
    size_t nsocks;
    jpt__http_xfer *xfers;
    size_t nxfers;
    /* Easy handles of ended exchanges, reset, for the next ones: a new
     * handle costs libcurl a dozen allocations (its 16 KiB buffer among
     * them) per request (issue 17 §4, http.get against a curl loop that
     * reuses its handle). curl_easy_reset keeps no option of the last
     * exchange; the connections are the multi's, shared anyway. */
    CURL *idle[IDLE_EASY];
    size_t nidle;
};

struct jpt__http_xfer {
    jpt__http *h;
    CURL *easy;
    CURLU *url;
    bool in_multi;
    int reach;           /* JPT__HTTP_ADDR_*: the most local class allowed */
    bool refused;        /* the opensocket callback refused an address */
    char refused_why[INET6_ADDRSTRLEN + 80]; /* the last one, and why */
    char bad_coding[64]; /* a Transfer-Encoding refused, or "" */
    bool too_large;
    bool nomem;
    bool unwatched;      /* its socket could not be watched: it ends */
    bool in_interim;     /* reading a 1xx response's headers */
    size_t max_bytes, seen_bytes;
    jpt__http_response resp;
    const jpt__scrub_set *secrets;
    jpt__scrubber scrub; /* the body, into resp.body */
    char errbuf[CURL_ERROR_SIZE];
    jpt__http_done_fn done;
    void *ud;
    jpt__defer report;
    jpt__http_xfer *next, *prev;
};

/* ---- Sockets ------------------------------------------------------------------------ */

static sock *sock_get(const jpt__http *h, curl_socket_t fd)
{
    return fd >= 0 && (size_t)fd < h->nsocks ? h->socks[fd] : NULL;
}

static void sock_forget(jpt__http *h, curl_socket_t fd)
{
    sock *s = sock_get(h, fd);

    if (s == NULL)
        return;
    jpt__loop_watch_stop(h->loop, &s->watch);
    h->socks[fd] = NULL;
    jpt__free(s);
}

static void collect(jpt__http *h);

static void on_socket_event(jpt__watch *w, uint32_t events)
{
    sock *s = w->ud;
    jpt__http *h = s->h;
    int fd = w->fd;
    int mask = 0;
    int running;

    if (events & EPOLLIN)
        mask |= CURL_CSELECT_IN;
    if (events & EPOLLOUT)
        mask |= CURL_CSELECT_OUT;
    /* An error or hang-up: let libcurl find out by doing what it waits
     * for (reading the end, or the connect's result). */
    if (events & (EPOLLERR | EPOLLHUP))
        mask |= (w->events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                (w->events & EPOLLOUT ? CURL_CSELECT_OUT : 0);
    /* `s` may be freed by the socket callback from here on. */
    curl_multi_socket_action(h->multi, fd, mask, &running);
    collect(h);
}

/* A socket that cannot be watched (out of memory) ends its transfer, at
 * the next collect: the socket callback's -1 would end the multi, every
 * transfer on it never to finish (issue 18). */
static int unwatched(jpt__http *h, CURL *easy)
{
    char *priv = NULL;

    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    jpt__http_xfer *x = (jpt__http_xfer *)(void *)priv;
    if (x != NULL) {
        x->unwatched = true;
        x->nomem = true;
        h->unwatched = true;
    }
    return 0;
}

/* CURLMOPT_SOCKETFUNCTION: only changes the loop's watches. */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    jpt__http *h = userp;
    uint32_t events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    sock *s = sock_get(h, fd);

    (void)easy;
    (void)socketp;
    if (what == CURL_POLL_REMOVE) {
        sock_forget(h, fd);
        return 0;
    }
    if (s != NULL) {
        if (jpt__loop_watch_update(h->loop, &s->watch, events) == JPT_OK)
            return 0;
        sock_forget(h, fd); /* a stale watch: start over */
    }
    if ((size_t)fd >= h->nsocks) {
        size_t n = (size_t)fd + 1 > 2 * h->nsocks ? (size_t)fd + 1 : 2 * h->nsocks;
        sock **grown = jpt__realloc(h->socks, n * sizeof(*grown));
        if (grown == NULL)
            return unwatched(h, easy);
        memset(grown + h->nsocks, 0, (n - h->nsocks) * sizeof(*grown));
        h->socks = grown;
        h->nsocks = n;
    }
    if ((s = jpt__calloc(1, sizeof(*s))) == NULL)
        return unwatched(h, easy);
    s->h = h;
    if (jpt__loop_watch_start(h->loop, &s->watch, fd, events, on_socket_event, s) < 0) {
        jpt__free(s);
        return unwatched(h, easy);
    }
    h->socks[fd] = s;
    return 0;
}

/* CURLMOPT_TIMERFUNCTION: only sets the loop's timer. */
static int on_timer_change(CURLM *multi, long timeout_ms, void *userp)
{
    jpt__http *h = userp;

    (void)multi;
    if (timeout_ms < 0) {
        jpt__loop_timer_stop(h->loop, &h->timer);
        return 0;
    }
    /* Without memory for the timer, the multi runs from the next dispatch
     * (a -1 would end it, issue 18). */
    if (jpt__loop_timer_start(h->loop, &h->timer, jpt__loop_deadline_ms(timeout_ms)) < 0)
        jpt__loop_defer_queue(h->loop, &h->kick);
    return 0;
}

static void time_out(jpt__http *h)
{
    int running;

    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    collect(h);
}

static void on_timer(jpt__timer *t)
{
    time_out(t->ud);
}

static void on_kick(jpt__defer *d)
{
    time_out(d->ud);
}

/* ---- Addresses ------------------------------------------------------------------------ */

static bool in4(const unsigned char *a, unsigned b0, unsigned b1, unsigned bits)
{
    uint32_t x = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
    uint32_t net = (uint32_t)b0 << 24 | (uint32_t)b1 << 16;

    return (x >> (32 - bits)) == (net >> (32 - bits));
}

static int class4(const unsigned char *a)
{
    if (a[0] == 0 || a[0] == 127 || in4(a, 169, 254, 16) || a[0] >= 224)
        return JPT__HTTP_ADDR_LOCAL;
    if (a[0] == 10 || in4(a, 172, 16, 12) || in4(a, 192, 168, 16) || in4(a, 100, 64, 10) ||
        in4(a, 198, 18, 15) || (a[0] == 192 && a[1] == 0 && a[2] == 0))
        return JPT__HTTP_ADDR_PRIVATE;
    return JPT__HTTP_ADDR_PUBLIC;
}

/* The IPv4 address an IPv6 one carries (see http.h), or NULL; *floor the
 * least class its prefix implies. */
static const unsigned char *embedded4(const struct in6_addr *in6, int *floor)
{
    static const unsigned char nat64[12] = {0x00, 0x64, 0xff, 0x9b};
    static const unsigned char nat64_local[6] = {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01};
    const unsigned char *b = in6->s6_addr;

    *floor = JPT__HTTP_ADDR_PUBLIC;
    if (IN6_IS_ADDR_V4MAPPED(in6) || (IN6_IS_ADDR_V4COMPAT(in6)) || memcmp(b, nat64, 12) == 0)
        return b + 12;
    if (memcmp(b, nat64_local, 6) == 0) {
        *floor = JPT__HTTP_ADDR_PRIVATE;
        return b + 12;
    }
    if (b[0] == 0x20 && b[1] == 0x02)
        return b + 2;
    return NULL;
}

int jpt__http_address_class(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)a;
        return class4((const unsigned char *)&in->sin_addr);
    }
    if (a->sa_family != AF_INET6)
        return JPT__HTTP_ADDR_LOCAL; /* not an Internet address at all */
    const struct in6_addr *in6 = &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;
    const unsigned char *b = in6->s6_addr;
    int floor;
    if (IN6_IS_ADDR_UNSPECIFIED(in6) || IN6_IS_ADDR_LOOPBACK(in6) ||
        IN6_IS_ADDR_LINKLOCAL(in6) || IN6_IS_ADDR_MULTICAST(in6))
        return JPT__HTTP_ADDR_LOCAL;
    if ((b[0] & 0xfe) == 0xfc || IN6_IS_ADDR_SITELOCAL(in6))
        return JPT__HTTP_ADDR_PRIVATE;
    const unsigned char *v4 = embedded4(in6, &floor);
    if (v4 == NULL)
        return JPT__HTTP_ADDR_PUBLIC;
    int c = class4(v4);
    return c > floor ? c : floor;
}

/* The address as an IPv4 one when it is or carries one (4 bytes), else
 * its IPv6 bytes (16); 0 for another family. */
static size_t address_bytes(const struct sockaddr *a, const unsigned char **bytes)
{
    int floor;

    if (a->sa_family == AF_INET) {
        *bytes = (const unsigned char *)&((const struct sockaddr_in *)(const void *)a)->sin_addr;
        return 4;
    }
    if (a->sa_family != AF_INET6)
        return 0;
    const struct in6_addr *in6 = &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;
    if ((*bytes = embedded4(in6, &floor)) != NULL)
        return 4;
    *bytes = in6->s6_addr;
    return 16;
}

int jpt__http_address_is_own(const struct sockaddr *a)
{
    const unsigned char *want, *have;
    size_t n = address_bytes(a, &want);
    struct ifaddrs *list = NULL;
    int own = 0;

    if (n == 0)
        return 0;
    if (getifaddrs(&list) < 0)
        return JPT_ERR_IO;
    for (const struct ifaddrs *i = list; i != NULL && !own; i = i->ifa_next)
        own = i->ifa_addr != NULL && address_bytes(i->ifa_addr, &have) == n &&
              memcmp(want, have, n) == 0;
    freeifaddrs(list);
    return own;
}

/* Why `reach` refuses the address: a phrase, or NULL when it allows it. */
static const char *refusal(int reach, const struct sockaddr *a)
{
    if (reach >= JPT__HTTP_ADDR_LOCAL)
        return NULL;
    int c = jpt__http_address_class(a);
    if (c == JPT__HTTP_ADDR_LOCAL)
        return "a loopback, link-local, multicast, reserved or unspecified address";
    if (c > reach)
        return "a private address";
    int own = jpt__http_address_is_own(a);
    return own > 0   ? "an address of this machine"
           : own < 0 ? "an address that could not be compared with this machine's own"
                     : NULL;
}

/* The address in its usual text ("192.0.2.1", "fd00::2"). */
static void address_text(const struct sockaddr *a, char *out, size_t cap)
{
    const void *bytes = NULL;

    if (a->sa_family == AF_INET)
        bytes = &((const struct sockaddr_in *)(const void *)a)->sin_addr;
    else if (a->sa_family == AF_INET6)
        bytes = &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;
    if (bytes == NULL || inet_ntop(a->sa_family, bytes, out, (socklen_t)cap) == NULL)
        snprintf(out, cap, "an address of family %d", a->sa_family);
}

/* CURLOPT_OPENSOCKETFUNCTION: the address libcurl resolved, before it
 * connects (each address it tries, so a DNS answer that changes between
 * lookups changes nothing). */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    jpt__http_xfer *x = clientp;
    const char *why = refusal(x->reach, &a->addr);

    (void)purpose;
    if (why == NULL)
        return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    address_text(&a->addr, x->refused_why, sizeof(x->refused_why));
    size_t n = strlen(x->refused_why);
    snprintf(x->refused_why + n, sizeof(x->refused_why) - n, " (%s)", why);
    x->refused = true;
    return CURL_SOCKET_BAD;
}

/* CURLOPT_CLOSESOCKETFUNCTION: a connection may outlive its transfer in
 * libcurl's cache, so this is the object's, not the exchange's. The watch
 * goes before the fd: a later fd of the same number is someone else's. */
static int close_socket(void *clientp, curl_socket_t fd)
{
    sock_forget(clientp, fd);
    return close(fd);
}

/* ---- The exchange's data ----------------------------------------------------------- */

static bool count(jpt__http_xfer *x, size_t n)
{
    if (n > x->max_bytes - x->seen_bytes) {
        x->too_large = true;
        return false;
    }
    x->seen_bytes += n;
    return true;
}

static int keep_body(void *ud, const char *p, size_t n)
{
    return jpt__buf_append(ud, p, n);
}

/* The body, decoded, through the scrubber. */
static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    jpt__http_xfer *x = ud;

    if (!count(x, n))
        return 0; /* CURLE_WRITE_ERROR ends the transfer */
    if (jpt__scrubber_feed(&x->scrub, p, n) < 0) {
        x->nomem = true;
        return 0;
    }
    (void)size; /* always 1 */
    return n;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Appends one header line, "Name: value", as a NUL-terminated pair. */
static int add_header(jpt__http_response *r, const char *p, size_t n)
{
    const char *colon = memchr(p, ':', n);

    if (colon == NULL || colon == p)
        return JPT_OK; /* not a header: nothing to keep */
    const char *v = colon + 1, *end = p + n;
    while (v < end && is_space(*v))
        v++;
    while (end > v && is_space(end[-1]))
        end--;
    int rc = jpt__buf_append(&r->headers, p, (size_t)(colon - p));
    if (rc == JPT_OK)
        rc = jpt__buf_putc(&r->headers, '\0');
    if (rc == JPT_OK)
        rc = jpt__buf_append(&r->headers, v, (size_t)(end - v));
    if (rc == JPT_OK)
        rc = jpt__buf_putc(&r->headers, '\0');
    if (rc == JPT_OK)
        r->nheaders++;
    return rc;
}

/* obs-fold (RFC 9112 §5.2): a line starting with a space continues the
 * last value, joined with one space. */
static int fold_header(jpt__http_response *r, const char *p, size_t n)
{
    const char *end = p + n;

    if (r->nheaders == 0)
        return JPT_OK;
    while (p < end && is_space(*p))
        p++;
    while (end > p && is_space(end[-1]))
        end--;
    r->headers.len--; /* the last value's NUL */
    int rc = jpt__buf_putc(&r->headers, ' ');
    if (rc == JPT_OK)
        rc = jpt__buf_append(&r->headers, p, (size_t)(end - p));
    if (rc == JPT_OK)
        rc = jpt__buf_putc(&r->headers, '\0');
    return rc;
}

/* A Transfer-Encoding of anything but chunked and identity: the first
 * such coding into x->bad_coding. libcurl decodes one it did not ask for
 * in some versions and passes it on raw in others, where the scrubber
 * would see compressed bytes. */
static bool refuse_coding(jpt__http_xfer *x, const char *p, size_t len)
{
    static const char name[] = "transfer-encoding:";
    size_t at = sizeof(name) - 1;

    if (len < at || strncasecmp(p, name, at) != 0)
        return false;
    while (at < len) {
        while (at < len && (p[at] == ' ' || p[at] == '\t' || p[at] == ','))
            at++;
        size_t start = at;
        while (at < len && p[at] != ',' && p[at] != ' ' && p[at] != '\t')
            at++;
        size_t k = at - start;
        if (k == 0 || (k == 7 && strncasecmp(p + start, "chunked", 7) == 0) ||
            (k == 8 && strncasecmp(p + start, "identity", 8) == 0))
            continue;
        snprintf(x->bad_coding, sizeof(x->bad_coding), "%.*s", (int)(k < 40 ? k : 40),
                 p + start);
        return true;
    }
    return false;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    jpt__http_xfer *x = ud;
    jpt__http_response *r = &x->resp;
    size_t len = n;
    int rc = JPT_OK;

    (void)size;
    if (!count(x, n))
        return 0;
    while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r'))
        len--;
    if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        /* A status line: an interim response's headers (1xx) are dropped,
         * and so is anything before the final one. */
        const char *sp = memchr(p, ' ', len);
        x->in_interim = sp != NULL && sp + 1 < p + len && sp[1] == '1';
        r->headers.len = 0;
        r->nheaders = 0;
    } else if (x->in_interim || len == 0)
        ;
    else if (refuse_coding(x, p, len))
        return 0;
    else if (is_space(p[0]))
        rc = fold_header(r, p, len);
    else
        rc = add_header(r, p, len);
    if (rc < 0) {
        x->nomem = true;
        return 0;
    }
    return n;
}

/* ---- Ends -------------------------------------------------------------------------- */

static void on_report(jpt__defer *d)
{
    jpt__http_xfer *x = d->ud;

    x->done(x, x->ud);
}

/* The headers' names and values scrubbed, each whole. */
static int scrub_headers(jpt__http_xfer *x)
{
    jpt__http_response *r = &x->resp;
    jpt__buf clean = JPT__BUF_INIT;
    const char *h = r->headers.data;
    int rc = JPT_OK;

    if (jpt__scrub_set_empty(x->secrets) || r->nheaders == 0)
        return JPT_OK;
    for (size_t i = 0; i < 2 * r->nheaders && rc == JPT_OK; i++) {
        size_t n = strlen(h);
        if ((rc = jpt__scrub(x->secrets, h, n, &clean, NULL)) == JPT_OK)
            rc = jpt__buf_putc(&clean, '\0');
        h += n + 1;
    }
    if (rc == JPT_OK) {
        jpt__buf_free(&r->headers);
        r->headers = clean;
    } else
        jpt__buf_free(&clean);
    return rc;
}

/* Fills the response of a finished transfer and schedules its report. */
static void finish(jpt__http_xfer *x, CURLcode res)
{
    jpt__http_response *r = &x->resp;
    char *location = NULL;

    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &r->code);
    if (res == CURLE_OK && (jpt__scrubber_finish(&x->scrub) < 0 || scrub_headers(x) < 0))
        res = CURLE_OUT_OF_MEMORY;
    if (res == CURLE_OK) {
        r->status = JPT_OK;
        if (curl_easy_getinfo(x->easy, CURLINFO_REDIRECT_URL, &location) == CURLE_OK &&
            location != NULL && (r->redirect = jpt__strdup(location)) == NULL)
            r->status = JPT_ERR_NOMEM;
    } else if (x->nomem || res == CURLE_OUT_OF_MEMORY)
        r->status = JPT_ERR_NOMEM;
    else if (x->too_large || res == CURLE_FILESIZE_EXCEEDED) {
        r->status = JPT_ERR_LIMIT;
        snprintf(r->error, sizeof(r->error), "the response is larger than %zu bytes",
                 x->max_bytes);
    } else if (res == CURLE_OPERATION_TIMEDOUT)
        r->status = JPT_ERR_TIMEOUT;
    else if (x->refused && res == CURLE_COULDNT_CONNECT) {
        r->status = JPT_ERR_DENIED;
        snprintf(r->error, sizeof(r->error), "%s", x->refused_why);
    } else if (x->bad_coding[0] != '\0') {
        r->status = JPT_ERR_IO;
        snprintf(r->error, sizeof(r->error),
                 "the response's Transfer-Encoding '%s' is refused: only chunked is read",
                 x->bad_coding);
    } else
        r->status = JPT_ERR_IO;
    if (r->status != JPT_OK && r->error[0] == '\0')
        snprintf(r->error, sizeof(r->error), "%s",
                 x->errbuf[0] != '\0' ? x->errbuf : curl_easy_strerror(res));
    jpt__loop_defer_queue(x->h->loop, &x->report);
}

/* Every transfer the multi has finished, out of the multi. */
static void collect(jpt__http *h)
{
    CURLMsg *msg;
    int left;

    while ((msg = curl_multi_info_read(h->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        char *priv = NULL;
        CURLcode res = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
        jpt__http_xfer *x = (jpt__http_xfer *)(void *)priv;
        curl_multi_remove_handle(h->multi, x->easy);
        x->in_multi = false;
        finish(x, res);
    }
    if (!h->unwatched)
        return;
    h->unwatched = false;
    for (jpt__http_xfer *x = h->xfers; x != NULL; x = x->next)
        if (x->unwatched && x->in_multi) {
            curl_multi_remove_handle(h->multi, x->easy);
            x->in_multi = false;
            finish(x, CURLE_OUT_OF_MEMORY);
        }
}

/* ---- The object -------------------------------------------------------------------- */

int jpt__http_new(jpt__loop *loop, jpt__http **out)
{
    jpt__http *h = jpt__calloc(1, sizeof(*h));

    *out = NULL;
    if (h == NULL)
        return JPT_ERR_NOMEM;
    h->loop = loop;
    jpt__loop_timer_init(&h->timer, on_timer, h);
    jpt__loop_defer_init(&h->kick, on_kick, h);
    *out = h;
    return JPT_OK;
}

static int open_multi(jpt__http *h, jpt__errbuf *err)
{
    if (h->multi != NULL)
        return JPT_OK;
    /* Reference-counted by libcurl; thread-safe where libcurl says
     * "threadsafe" (Debian's does). */
    if (!h->global_init) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return jpt__err(err, JPT_ERR_IO, "libcurl could not be initialised");
        h->global_init = true;
    }
    if ((h->multi = curl_multi_init()) == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory making libcurl's multi handle");
    if (curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket) != CURLM_OK ||
        curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h) != CURLM_OK ||
        curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer_change) != CURLM_OK ||
        curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h) != CURLM_OK ||
        curl_multi_setopt(h->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                          (long)JPT__HTTP_MAX_CONNECTIONS) != CURLM_OK) {
        curl_multi_cleanup(h->multi);
        h->multi = NULL;
        return jpt__err(err, JPT_ERR_IO, "libcurl refused an option of its multi handle");
    }
    return JPT_OK;
}

void jpt__http_free(jpt__http *h)
{
    if (h == NULL)
        return;
    while (h->xfers != NULL)
        jpt__http_xfer_free(h->xfers);
    while (h->nidle > 0)
        curl_easy_cleanup(h->idle[--h->nidle]);
    /* Closes the cached connections through close_socket(). */
    if (h->multi != NULL)
        curl_multi_cleanup(h->multi);
    jpt__loop_timer_stop(h->loop, &h->timer);
    jpt__loop_defer_cancel(h->loop, &h->kick);
    for (size_t fd = 0; fd < h->nsocks; fd++)
        sock_forget(h, (curl_socket_t)fd);
    jpt__free(h->socks);
    if (h->global_init)
        curl_global_cleanup();
    jpt__free(h);
}

size_t jpt__http_active(const jpt__http *h)
{
    return h->nxfers;
}

/* ---- One exchange ------------------------------------------------------------------ */

#define SET(opt, value) (rc == CURLE_OK ? (rc = curl_easy_setopt(x->easy, opt, value)) : rc)

static CURLcode set_options(jpt__http_xfer *x, const jpt__http_request *req)
{
    CURLcode rc = CURLE_OK;
    uint64_t now = jpt__loop_now();
    /* At least a millisecond: 0 would mean no timeout at all. */
    long timeout_ms = req->deadline > now ? (long)((req->deadline - now + 999999u) / 1000000u) : 1;

    SET(CURLOPT_PRIVATE, (char *)x);
    SET(CURLOPT_CURLU, x->url);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_SSL_VERIFYHOST, 2L);
    SET(CURLOPT_PROXY, "");
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_TIMEOUT_MS, timeout_ms);
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)req->max_bytes);
    SET(CURLOPT_ERRORBUFFER, x->errbuf);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, x);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, x);
    SET(CURLOPT_OPENSOCKETFUNCTION, open_socket);
    SET(CURLOPT_OPENSOCKETDATA, x);
    SET(CURLOPT_CLOSESOCKETFUNCTION, close_socket);
    SET(CURLOPT_CLOSESOCKETDATA, x->h);
    SET(CURLOPT_USERAGENT, "jptool/" JPT_VERSION_STRING);
    /* "": every encoding this libcurl decodes, announced and decoded. */
    SET(CURLOPT_ACCEPT_ENCODING, "");
    SET(CURLOPT_HTTPHEADER, (struct curl_slist *)req->headers);
    if (req->post) {
        SET(CURLOPT_POST, 1L);
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        SET(CURLOPT_POSTFIELDS, req->body_len > 0 ? req->body : "");
    }
    return rc;
}

#undef SET

int jpt__http_start(jpt__http *h, const jpt__http_request *req, jpt__http_done_fn done,
                    void *ud, jpt__errbuf *err, jpt__http_xfer **out)
{
    jpt__http_xfer *x = jpt__calloc(1, sizeof(*x));
    int rc;

    *out = NULL;
    if (x == NULL) {
        curl_url_cleanup(req->url);
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory starting an HTTP request");
    }
    x->h = h;
    x->url = req->url;
    x->reach = req->reach;
    x->secrets = req->scrub;
    jpt__scrubber_init(&x->scrub, req->scrub, keep_body, &x->resp.body);
    x->max_bytes = req->max_bytes;
    x->done = done;
    x->ud = ud;
    jpt__loop_defer_init(&x->report, on_report, x);
    JPT__LIST_PUSH(h->xfers, x);
    h->nxfers++;
    if ((rc = open_multi(h, err)) < 0)
        goto fail;
    if (h->nidle > 0)
        x->easy = h->idle[--h->nidle];
    else if ((x->easy = curl_easy_init()) == NULL) {
        rc = jpt__err(err, JPT_ERR_NOMEM, "out of memory making a libcurl handle");
        goto fail;
    }
    CURLcode code = set_options(x, req);
    if (code != CURLE_OK) {
        rc = jpt__err(err, code == CURLE_OUT_OF_MEMORY ? JPT_ERR_NOMEM : JPT_ERR_IO,
                      "libcurl refused an option: %s", curl_easy_strerror(code));
        goto fail;
    }
    /* Sets the multi's timer to 0: the transfer begins at the next
     * dispatch, from the loop. */
    CURLMcode mc = curl_multi_add_handle(h->multi, x->easy);
    if (mc != CURLM_OK) {
        rc = jpt__err(err, mc == CURLM_OUT_OF_MEMORY ? JPT_ERR_NOMEM : JPT_ERR_IO,
                      "libcurl refused the request: %s", curl_multi_strerror(mc));
        goto fail;
    }
    x->in_multi = true;
    *out = x;
    return JPT_OK;
fail:
    jpt__http_xfer_free(x);
    return rc;
}

jpt__http_response *jpt__http_xfer_response(jpt__http_xfer *x)
{
    return &x->resp;
}

void jpt__http_xfer_free(jpt__http_xfer *x)
{
    if (x == NULL)
        return;
    jpt__http *h = x->h;
    jpt__loop_defer_cancel(h->loop, &x->report);
    if (x->in_multi)
        curl_multi_remove_handle(h->multi, x->easy);
    if (x->easy != NULL && h->nidle < IDLE_EASY) {
        curl_easy_reset(x->easy);
        h->idle[h->nidle++] = x->easy;
    } else if (x->easy != NULL)
        curl_easy_cleanup(x->easy);
    curl_url_cleanup(x->url);
    jpt__scrubber_free(&x->scrub);
    jpt__buf_free(&x->resp.headers);
    jpt__buf_free(&x->resp.body);
    jpt__free(x->resp.redirect);
    JPT__LIST_REMOVE(h->xfers, x);
    h->nxfers--;
    jpt__free(x);
}
