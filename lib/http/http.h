/* The http room's internal interface: HTTP exchanges on libcurl's
 * multi-socket API, driven by the loop of the object that owns them
 * (ARCHITECTURE.md §1, principle 1: libcurl's sockets and its timer are
 * watches and a timer of that loop, never a thread or a blocking call of
 * ours). Never installed.
 *
 *   http.c   the multi on a loop (sockets, timer, completions) and one
 *            exchange: one request, one response, no redirect followed
 *
 * One jpt__http per loop owner: the standalone VFS host has one, a
 * registry has one for all its "vfs" tools, so transfers of one owner share
 * libcurl's connection and DNS caches. The multi is made on the first
 * exchange: an owner whose tools never use the network never starts
 * libcurl.
 *
 * What libcurl is asked to do is fixed here, for every exchange: http and
 * https only (CURLOPT_PROTOCOLS_STR, REDIR_PROTOCOLS_STR), no redirect
 * followed (the caller decides on each hop), TLS peer and host
 * verification always on, no proxy (the *_proxy environment variables are
 * ignored), no cookies, no .netrc, an overall deadline, a limit on the
 * response's size, and new sockets made close-on-exec. Bodies are
 * decoded (CURLOPT_ACCEPT_ENCODING: every Content-Encoding this libcurl
 * knows; one it does not know fails the exchange), so that what is
 * scrubbed is what a tool could read; a Transfer-Encoding other than
 * chunked is refused (libcurl versions differ in whether they decode one
 * they did not ask for). The connect of every address is checked
 * (CURLOPT_OPENSOCKETFUNCTION): a name leads only to the addresses the
 * request's `reach` allows, so that DNS answers, rebinding included,
 * cannot lead a request to this machine or its networks.
 *
 * Calls into libcurl happen only from the loop's callbacks (a socket
 * event, the timer) and from the functions below, never from inside one
 * of libcurl's callbacks; an exchange's end is reported from a deferred
 * call of the loop. Host name lookups run on the short-lived threads of
 * libcurl's threaded resolver (Debian builds it so); no jptool code runs
 * on them. */
#ifndef JPT_LIB_HTTP_H
#define JPT_LIB_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "common/common.h"
#include "common/scrub.h"
#include "loop/loop.h"

typedef struct jpt__http jpt__http;
typedef struct jpt__http_xfer jpt__http_xfer;

/* Connections one owner keeps open at most, for all its exchanges
 * (CURLMOPT_MAX_TOTAL_CONNECTIONS): more wait inside libcurl, with their
 * deadline running. */
#define JPT__HTTP_MAX_CONNECTIONS 256

/* A new object on `loop` (which must outlive it). Makes no libcurl call.
 * JPT_ERR_NOMEM. */
int jpt__http_new(jpt__loop *loop, jpt__http **out);
/* Ends every exchange still running (their callbacks never run), closes
 * libcurl's connections and frees. NULL-safe. Not from inside a callback
 * of an exchange of `h`. */
void jpt__http_free(jpt__http *h);
/* Exchanges started and not freed yet. */
size_t jpt__http_active(const jpt__http *h);

/* One exchange to start. */
typedef struct jpt__http_request {
    CURLU *url;        /* taken by the exchange (also on failure) */
    bool post;         /* POST with `body`, else GET */
    const void *body;  /* POST: the caller keeps it until the exchange is freed */
    size_t body_len;
    /* "Name: value" lines, kept by the caller until the exchange is freed */
    const struct curl_slist *headers;
    size_t max_bytes;  /* response headers and body together, at most */
    uint64_t deadline; /* CLOCK_MONOTONIC ns: the exchange ends by then */
    /* The addresses it may connect to: the most local class
     * (JPT__HTTP_ADDR_*) allowed. JPT__HTTP_ADDR_LOCAL (any address) for
     * a URL whose host is an IP literal or a localhost name, which the
     * policy allows only where an entry names it; JPT__HTTP_ADDR_PRIVATE
     * or _PUBLIC for a host name, which then never reaches an address of
     * this machine either. Another address is refused (JPT_ERR_DENIED). */
    int reach;
    /* The values to scrub from the response's headers and body, or NULL;
     * kept by the caller until the exchange is freed. */
    const jpt__scrub_set *scrub;
} jpt__http_request;

/* What came back. Headers are kept as received, but scrubbed: `headers`
 * holds `nheaders` pairs, each name then value, NUL-terminated (folded
 * lines joined with a space; each name and each value scrubbed whole);
 * interim responses (100 Continue) are dropped. The body is decoded and
 * scrubbed as it arrives (the Content-Encoding and Content-Length headers
 * still describe what the server sent). `redirect` is not scrubbed: it is
 * for following, never for showing. */
typedef struct jpt__http_response {
    int status;        /* JPT_OK, or why the exchange failed (below) */
    char error[CURL_ERROR_SIZE + 96]; /* the failure in words, "" on success */
    long code;         /* the HTTP status (0 if none arrived) */
    jpt__buf headers;
    size_t nheaders;
    jpt__buf body;
    char *redirect;    /* a 3xx's Location as an absolute URL, or NULL */
} jpt__http_response;

/* Called once per exchange, from a deferred call of the loop (never from
 * inside libcurl), unless it is freed first. The callback may free the
 * exchange, start others and free others. */
typedef void (*jpt__http_done_fn)(jpt__http_xfer *x, void *ud);

/* Starts an exchange. JPT_OK with *out, which belongs to the caller (free
 * it with jpt__http_xfer_free, done or not); JPT_ERR_NOMEM, JPT_ERR_IO
 * (libcurl refused an option or the multi; the message in `err`), and
 * `done` is not called. Statuses `done` may find in the response:
 *   JPT_OK            a response arrived (any HTTP status);
 *   JPT_ERR_TIMEOUT   the deadline passed first;
 *   JPT_ERR_LIMIT     the response passed max_bytes (the transfer was
 *                     stopped there);
 *   JPT_ERR_DENIED    the host name resolved only to addresses `reach`
 *                     refuses (`error` names the last one and why);
 *   JPT_ERR_NOMEM;
 *   JPT_ERR_IO        anything else (connecting, TLS, the peer): libcurl's
 *                     words in `error`. */
int jpt__http_start(jpt__http *h, const jpt__http_request *req, jpt__http_done_fn done,
                    void *ud, jpt__errbuf *err, jpt__http_xfer **out);
/* The exchange's response; complete once `done` has run. The caller may
 * take its buffers. */
jpt__http_response *jpt__http_xfer_response(jpt__http_xfer *x);
/* Ends the exchange if it runs (its callback will not run) and frees it.
 * NULL-safe. */
void jpt__http_xfer_free(jpt__http_xfer *x);

/* Classes of addresses, from the most public. */
#define JPT__HTTP_ADDR_PUBLIC 0  /* anything not below */
#define JPT__HTTP_ADDR_PRIVATE 1 /* 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
                                    100.64.0.0/10 (CGNAT), 198.18.0.0/15,
                                    192.0.0.0/24; fc00::/7, fec0::/10 */
#define JPT__HTTP_ADDR_LOCAL 2   /* 0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16,
                                    224.0.0.0/3 (multicast, reserved,
                                    broadcast); ::, ::1, fe80::/10, ff00::/8 */

/* The class of an address. An IPv6 address that carries an IPv4 one
 * (::ffff:a.b.c.d, ::a.b.c.d, 64:ff9b::/96 and 64:ff9b:1::/48 of NAT64,
 * 2002::/16 of 6to4) is of that one's class (64:ff9b:1::/48 at least
 * private). */
int jpt__http_address_class(const struct sockaddr *a);

/* Whether the address is one of this machine's own (getifaddrs: any
 * interface, up or not; an IPv6 form of an IPv4 one above counts): 1, 0,
 * or JPT_ERR_IO when the interfaces cannot be read. */
int jpt__http_address_is_own(const struct sockaddr *a);

#endif /* JPT_LIB_HTTP_H */
