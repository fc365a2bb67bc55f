/* D11 "HTTP methods" for a session: http.get and http.post checked against
 * the tool's network policy, their headers' ${VAR} substituted (only for
 * a URL that an entry naming the variable covers, checked before the
 * policy is asked about the URL: an asked URL gets no secret), run as
 * exchanges of the http room, redirects followed hop by hop when the
 * policy allows them (each hop checked again, never asked about, and
 * sent only the headers it may carry), and the response turned into
 * D11's result — with every value substituted scrubbed out of it (the
 * http room scrubs headers and body as they arrive) and out of every
 * error message, before the tool sees it. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "files/files.h"
#include "http/http.h"
#include "policy/policy.h"
#include "vfs/vfs.h"

/* Headers a tool may send at most, and their bytes (names and values). */
#define MAX_HEADERS 100
#define MAX_HEADER_BYTES 65536
#define MESSAGE_MAX 1024

/* Headers libcurl writes from the request itself: a tool's own would
 * contradict it (Host could also name a site the policy never saw). */
static const char *const refused_headers[] = {
    "Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "TE", "Trailer",
    "Keep-Alive", "Proxy-Authorization", "Proxy-Connection",
};

/* Headers that carry credentials: not sent on to another origin. */
static const char *const credential_headers[] = {"Authorization", "Cookie"};

/* A header of the request: the tool's text, and its value substituted. */
typedef struct header {
    char *name;
    char *value;      /* substituted */
    char *text;       /* as the tool wrote it, for jpt__policy_url_carries */
    bool credential;  /* a ${VAR}, Authorization, Cookie: not to another origin */
} header;

struct jpt__vfs_http_call {
    jpt__http *http;
    jpt__vfs_http_queue *q;
    bool waiting, active;      /* in the queue; started */
    jpt__vfs_http_call *next, *prev; /* the queue's */
    const jpt_policy *policy;
    bool post;
    const char *method;        /* "http.get" */
    char shown[256];           /* the tool's URL, quoted for messages */
    jpt__vfs_http_guard_fn guard;
    void *guard_ud;
    jpt__vfs_http_done_fn done;
    void *ud;

    jpt__policy_url origin;    /* the request's URL (its CURLU handed over) */
    char *hop_text;            /* the URL of the exchange running now */
    header *headers;
    size_t nheaders;
    bool has_expect, has_content_type;
    jpt__policy_values values; /* substituted, and the others lent */
    jpt__scrub_set *secrets;   /* their forms, or NULL */
    struct curl_slist *sent;   /* the headers of the exchange running now */
    bool stripped;             /* a hop left the origin: no credential since */
    int hops_left;
    uint64_t deadline;
    const void *body;
    size_t body_len;
    jpt__http_xfer *xfer;
};

/* ---- The queue ----------------------------------------------------------------------- */

static int start_hop(jpt__vfs_http_call *c, jpt__policy_url *url);

static void start(jpt__vfs_http_call *c)
{
    c->active = true;
    c->q->active++;
    c->deadline = jpt__loop_deadline_ms(c->policy->http_timeout_ms);
    /* The exchange takes libcurl's parse that the policy judged; the rest
     * of the origin stays for comparing hops with. A failure has ended
     * the call. */
    (void)start_hop(c, &c->origin);
}

static void on_drain(jpt__defer *d)
{
    jpt__vfs_http_queue *q = d->ud;

    while (q->head != NULL && q->active < JPT__VFS_HTTP_MAX_ACTIVE) {
        jpt__vfs_http_call *c = q->head;
        JPT__LIST_REMOVE(q->head, c);
        if (q->head == NULL)
            q->tail = NULL;
        c->waiting = false;
        start(c);
    }
}

void jpt__vfs_http_queue_init(jpt__vfs_http_queue *q, jpt__loop *loop)
{
    memset(q, 0, sizeof(*q));
    q->loop = loop;
    jpt__loop_defer_init(&q->drain, on_drain, q);
}

void jpt__vfs_http_queue_clear(jpt__vfs_http_queue *q)
{
    jpt__loop_defer_cancel(q->loop, &q->drain);
}

static void enqueue(jpt__vfs_http_call *c)
{
    jpt__vfs_http_queue *q = c->q;

    c->waiting = true;
    c->next = NULL;
    c->prev = q->tail;
    if (q->tail != NULL)
        q->tail->next = c;
    else
        q->head = c;
    q->tail = c;
}

/* ---- Calls ---------------------------------------------------------------------------- */

static void call_free(jpt__vfs_http_call *c)
{
    jpt__vfs_http_queue *q = c->q;

    if (c->waiting) {
        if (q->tail == c)
            q->tail = c->prev;
        JPT__LIST_REMOVE(q->head, c);
    }
    if (c->active && --q->active < JPT__VFS_HTTP_MAX_ACTIVE && q->head != NULL)
        jpt__loop_defer_queue(q->loop, &q->drain); /* the next starts from the loop */
    jpt__http_xfer_free(c->xfer);
    jpt__policy_url_clear(&c->origin);
    jpt__free(c->hop_text);
    for (size_t i = 0; i < c->nheaders; i++) {
        jpt__free(c->headers[i].name);
        jpt__free(c->headers[i].value);
        jpt__free(c->headers[i].text);
    }
    jpt__free(c->headers);
    jpt__policy_values_free(&c->values);
    jpt__scrub_set_free(c->secrets);
    curl_slist_free_all(c->sent);
    jpt__free(c);
}

/* Ends the request: the call is freed before `done` runs (which frees
 * the request that owns it). `message` is scrubbed first. */
static void finish(jpt__vfs_http_call *c, int status, const char *result, size_t len,
                   const char *message)
{
    jpt__vfs_http_done_fn done = c->done;
    void *ud = c->ud;
    jpt__buf clean = JPT__BUF_INIT;

    if (message != NULL && jpt__scrub(c->secrets, message, strlen(message), &clean, NULL) == 0)
        message = clean.data;
    else if (message != NULL)
        message = "the request failed (out of memory telling why)";
    call_free(c);
    done(ud, status, result, len, message);
    jpt__buf_free(&clean);
}

static void fail(jpt__vfs_http_call *c, int status, const char *fmt, ...) JPT__PRINTF(3, 4);

static void fail(jpt__vfs_http_call *c, int status, const char *fmt, ...)
{
    char why[MESSAGE_MAX], message[MESSAGE_MAX + 300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(message, sizeof(message), "%s '%s': %s", c->method, c->shown, why);
    finish(c, status, NULL, 0, status == JPT_ERR_NOMEM ? "out of memory" : message);
}

/* ---- Headers ------------------------------------------------------------------------ */

/* RFC 9110 §5.6.2: a token. */
static bool is_token(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", c) != NULL)
            return false;
    }
    return true;
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(name, list[i]) == 0)
            return true;
    return false;
}

static bool has_control(const char *s)
{
    for (; *s != '\0'; s++)
        if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
            return true;
    return false;
}

/* One header as libcurl takes it, on `list`: "Name: value"; "Name;" for an
 * empty value (libcurl's way to send one rather than drop the header);
 * with `remove`, "Name:", which removes a header libcurl would add. */
static int append(struct curl_slist **list, const char *name, const char *value, bool remove)
{
    jpt__buf line = JPT__BUF_INIT;
    int rc = remove              ? jpt__buf_printf(&line, "%s:", name)
             : value[0] != '\0' ? jpt__buf_printf(&line, "%s: %s", name, value)
                                 : jpt__buf_printf(&line, "%s;", name);
    struct curl_slist *grown = rc == JPT_OK ? curl_slist_append(*list, line.data) : NULL;

    jpt__buf_free(&line);
    if (grown == NULL)
        return JPT_ERR_NOMEM;
    *list = grown;
    return JPT_OK;
}

/* Every ${VAR} of the headers may go to the request's URL; checked before
 * the policy is asked about the URL, so that a URL the prompt approves
 * never carries a secret. Else the request has failed. */
static int check_variables(jpt__vfs_http_call *c, const jpt__vfs_params *p)
{
    char why[MESSAGE_MAX], quoted[256];

    for (size_t i = 0; i < p->nheaders; i++) {
        const char *name = p->header_names[i];
        int rc = jpt__policy_substitute(c->policy, &c->origin, p->header_values[i], NULL, NULL,
                                        why, sizeof(why));
        if (rc < 0) {
            jpt__files_path_quote(name, strlen(name), quoted);
            fail(c, rc, "header '%s': %s", quoted, why);
            return rc;
        }
    }
    return JPT_OK;
}

/* One header, checked and substituted, kept. */
static int keep_header(jpt__vfs_http_call *c, const char *name, const char *text,
                       const char *quoted)
{
    char why[MESSAGE_MAX];
    jpt__buf resolved = JPT__BUF_INIT;
    header *h = &c->headers[c->nheaders];
    int rc = jpt__policy_substitute(c->policy, &c->origin, text, &resolved, &c->values, why,
                                    sizeof(why));

    if (rc < 0) {
        jpt__buf_free(&resolved);
        fail(c, rc, "header '%s': %s", quoted, rc == JPT_ERR_NOMEM ? "out of memory" : why);
        return rc;
    }
    h->credential = strstr(text, "${") != NULL ||
                    in_list(name, credential_headers,
                            sizeof(credential_headers) / sizeof(*credential_headers));
    h->name = jpt__strdup(name);
    h->text = jpt__strdup(text);
    h->value = jpt__buf_take(&resolved);
    c->nheaders++;
    jpt__buf_free(&resolved);
    if (h->name == NULL || h->text == NULL || h->value == NULL) {
        fail(c, JPT_ERR_NOMEM, "out of memory");
        return JPT_ERR_NOMEM;
    }
    return JPT_OK;
}

/* The tool's headers, checked and substituted, and the scrubber's set of
 * the values substituted and lent. */
static int build_headers(jpt__vfs_http_call *c, const jpt__vfs_params *p)
{
    size_t bytes = 0;

    if (p->nheaders > MAX_HEADERS) {
        fail(c, JPT_ERR_INVALID, "more than %d headers", MAX_HEADERS);
        return JPT_ERR_INVALID;
    }
    if ((c->headers = jpt__calloc(p->nheaders + 1, sizeof(*c->headers))) == NULL) {
        fail(c, JPT_ERR_NOMEM, "out of memory");
        return JPT_ERR_NOMEM;
    }
    for (size_t i = 0; i < p->nheaders; i++) {
        const char *name = p->header_names[i], *value = p->header_values[i];
        char quoted[256];
        jpt__files_path_quote(name, strlen(name), quoted);
        bytes += strlen(name) + strlen(value);
        if (bytes > MAX_HEADER_BYTES) {
            fail(c, JPT_ERR_INVALID, "the headers hold more than %d bytes", MAX_HEADER_BYTES);
            return JPT_ERR_INVALID;
        }
        if (!is_token(name)) {
            fail(c, JPT_ERR_INVALID, "header name '%s' is not an HTTP token", quoted);
            return JPT_ERR_INVALID;
        }
        if (in_list(name, refused_headers, sizeof(refused_headers) / sizeof(*refused_headers))) {
            fail(c, JPT_ERR_INVALID, "header '%s' is set by the host, not by the tool", quoted);
            return JPT_ERR_INVALID;
        }
        if (has_control(value)) {
            fail(c, JPT_ERR_INVALID, "the value of header '%s' holds a line break or another "
                                     "control character", quoted);
            return JPT_ERR_INVALID;
        }
        int rc = keep_header(c, name, value, quoted);
        if (rc < 0)
            return rc;
        c->has_expect |= strcasecmp(name, "Expect") == 0;
        c->has_content_type |= strcasecmp(name, "Content-Type") == 0;
    }
    /* Every value the policy lends, not only this request's: a server
     * may keep one and show it to a later request. */
    int rc = jpt__policy_lent_values(c->policy, &c->values);
    /* None: no set to build per request; NULL scrubs nothing (scrub.h). */
    if (rc == JPT_OK && c->values.n > 0)
        rc = jpt__policy_values_scrub_set(&c->values, &c->secrets);
    if (rc < 0)
        fail(c, rc, "out of memory");
    return rc;
}

/* The headers of the hop to `url`: a header goes only where every
 * variable it holds may go, and no credential once a hop has left the
 * origin. No 100-continue round trip, and no Content-Type the tool did
 * not write (libcurl would call every POST body a form). */
static int hop_headers(jpt__vfs_http_call *c, const jpt__policy_url *url)
{
    int rc = JPT_OK;

    curl_slist_free_all(c->sent);
    c->sent = NULL;
    for (size_t i = 0; i < c->nheaders && rc == JPT_OK; i++) {
        const header *h = &c->headers[i];
        if ((c->stripped && h->credential) || !jpt__policy_url_carries(c->policy, url, h->text))
            continue;
        rc = append(&c->sent, h->name, h->value, false);
    }
    if (rc == JPT_OK && !c->has_expect)
        rc = append(&c->sent, "Expect", "", true);
    if (rc == JPT_OK && c->post && !c->has_content_type)
        rc = append(&c->sent, "Content-Type", "", true);
    return rc;
}

/* ---- Exchanges ---------------------------------------------------------------------- */

static void on_exchange(jpt__http_xfer *x, void *ud);

/* The addresses a hop's host may lead to (http.h): a literal or a
 * localhost name only an entry naming it allows, so anything; a name
 * only public addresses, or private ones too where its origin's entry
 * says so. */
static int reach_of(const jpt__vfs_http_call *c, const jpt__policy_url *url)
{
    if (url->kind != JPT__URL_NAME)
        return JPT__HTTP_ADDR_LOCAL;
    return jpt__policy_url_private(c->policy, url) ? JPT__HTTP_ADDR_PRIVATE
                                                   : JPT__HTTP_ADDR_PUBLIC;
}

/* Starts the exchange for `url` (its CURLU is handed over). */
static int start_hop(jpt__vfs_http_call *c, jpt__policy_url *url)
{
    jpt__errbuf err;
    int rc = hop_headers(c, url);
    jpt__http_request req = {
        .url = url->u,
        .post = c->post,
        .body = c->body,
        .body_len = c->body_len,
        .headers = c->sent,
        .max_bytes = c->policy->max_response,
        .deadline = c->deadline,
        .reach = reach_of(c, url),
        .scrub = c->secrets,
    };

    url->u = NULL;
    jpt__free(c->hop_text);
    if (rc < 0 || (c->hop_text = jpt__strdup(url->text)) == NULL) {
        curl_url_cleanup(req.url);
        fail(c, JPT_ERR_NOMEM, "out of memory");
        return JPT_ERR_NOMEM;
    }
    rc = jpt__http_start(c->http, &req, on_exchange, c, &err, &c->xfer);
    if (rc < 0)
        fail(c, rc, "%s", err.text);
    return rc;
}

/* The status a redirect is followed for; `*get`: it turns a POST into a
 * GET (303 always; 301 and 302 as browsers and libcurl do). */
static bool is_redirect(long code, bool *get)
{
    *get = code == 301 || code == 302 || code == 303;
    return *get || code == 307 || code == 308;
}

static void follow(jpt__vfs_http_call *c, const char *location)
{
    jpt__policy_url next;
    const char *why = NULL;
    char message[MESSAGE_MAX], from[256], to[256];

    jpt__files_path_quote(c->hop_text, strlen(c->hop_text), from);
    jpt__files_path_quote(location, strlen(location), to);
    int rc = jpt__policy_url_parse(location, &next, &why);
    if (rc == JPT_ERR_NOMEM) {
        fail(c, rc, "out of memory");
        return;
    }
    if (rc < 0) {
        fail(c, JPT_ERR_IO, "'%s' redirects to '%s', which is not a valid URL (%s)", from, to,
             why);
        return;
    }
    /* A secret in the URL itself would go wherever the hop goes. */
    jpt__buf clean = JPT__BUF_INIT;
    bool holds = false;
    rc = jpt__scrub(c->secrets, location, strlen(location), &clean, &holds);
    jpt__buf_free(&clean);
    if (rc < 0 || holds) {
        jpt__policy_url_clear(&next);
        fail(c, rc < 0 ? rc : JPT_ERR_DENIED,
             "'%s' redirects to '%s', which is not followed: the URL holds the value of a "
             "${VAR} header",
             from, to);
        return;
    }
    message[0] = '\0';
    rc = c->guard(c->guard_ud, JPT__VFS_HTTP_REDIRECT, next.text, message, sizeof(message));
    if (rc < 0) {
        jpt__policy_url_clear(&next);
        fail(c, rc == JPT_ERR_NOMEM ? rc : JPT_ERR_DENIED,
             "'%s' redirects to '%s', which is not followed: %s (a redirect is followed only "
             "to a URL the policy allows, without asking)",
             from, to, message);
        return;
    }
    if (!c->stripped && !jpt__policy_url_same_origin(&c->origin, &next))
        c->stripped = true;
    c->hops_left--;
    rc = start_hop(c, &next);
    jpt__policy_url_clear(&next);
    (void)rc; /* a failure has ended the call */
}

/* D11's result: {"status", "headers": [{"name", "value"}], "body"} with
 * "encoding": "base64" for a body that is not UTF-8 text without NULs.
 * The http room has scrubbed headers and body already. */
static int result_json(jpt__http_response *r, jpt__buf *out)
{
    const char *h = r->headers.data;
    int rc = jpt__buf_printf(out, "{\"status\":%ld,\"headers\":[", r->code);

    for (size_t i = 0; rc == JPT_OK && i < r->nheaders; i++) {
        const char *name = h, *value = name + strlen(name) + 1;
        h = value + strlen(value) + 1;
        if ((rc = jpt__buf_printf(out, "%s{\"name\":", i > 0 ? "," : "")) == JPT_OK &&
            (rc = jpt__buf_json_string(out, name, strlen(name))) == JPT_OK &&
            (rc = jpt__buf_puts(out, ",\"value\":")) == JPT_OK &&
            (rc = jpt__buf_json_string(out, value, strlen(value))) == JPT_OK)
            rc = jpt__buf_putc(out, '}');
    }
    const char *body = r->body.data != NULL ? r->body.data : "";
    size_t len = r->body.len;
    if (rc == JPT_OK)
        rc = jpt__buf_puts(out, "],\"body\":");
    bool base64;
    if (rc == JPT_OK && (rc = jpt__buf_content(out, body, len, &base64)) == JPT_OK)
        rc = jpt__buf_puts(out, base64 ? ",\"encoding\":\"base64\"}" : "}");
    return rc;
}

static void on_exchange(jpt__http_xfer *x, void *ud)
{
    jpt__vfs_http_call *c = ud;
    jpt__http_response *r = jpt__http_xfer_response(x);
    bool get = false;

    switch (r->status) {
    case JPT_OK:
        break;
    case JPT_ERR_TIMEOUT:
        fail(c, r->status, "no complete response within %d ms (network.timeout_ms)",
             c->policy->http_timeout_ms);
        return;
    case JPT_ERR_LIMIT:
        fail(c, r->status, "%s (network.max_response_bytes); the transfer was stopped",
             r->error);
        return;
    case JPT_ERR_DENIED:
        fail(c, r->status,
             "its host name resolves to %s, which a host name may not reach: only a "
             "network.allow entry naming the address itself does (\"private\": true on an "
             "entry lets its host name reach private addresses)",
             r->error);
        return;
    default:
        fail(c, r->status, "the request failed: %s", r->error);
        return;
    }
    if (r->redirect != NULL && c->hops_left > 0 && is_redirect(r->code, &get)) {
        char *location = r->redirect;
        r->redirect = NULL;
        jpt__http_xfer_free(c->xfer);
        c->xfer = NULL;
        if (get) {
            c->post = false;
            c->body = NULL;
            c->body_len = 0;
        }
        follow(c, location);
        jpt__free(location);
        return;
    }
    jpt__buf out = JPT__BUF_INIT;
    int rc = result_json(r, &out);
    if (rc < 0) {
        jpt__buf_free(&out);
        fail(c, rc, "out of memory");
        return;
    }
    finish(c, JPT_OK, out.data, out.len, NULL);
    jpt__buf_free(&out);
}

/* ---- The request ------------------------------------------------------------------- */

int jpt__vfs_http_submit(struct jpt__http *http, jpt__vfs_http_queue *q,
                         const jpt_policy *policy, int method,
                         const jpt__vfs_params *p, jpt__vfs_http_guard_fn guard,
                         void *guard_ud, jpt__vfs_http_done_fn done, void *ud,
                         jpt__vfs_http_call **pending)
{
    jpt__vfs_http_call *c = jpt__calloc(1, sizeof(*c));
    const char *why = NULL;
    char message[MESSAGE_MAX];

    *pending = NULL;
    if (c == NULL)
        return JPT_ERR_NOMEM;
    c->http = http;
    c->q = q;
    c->policy = policy;
    c->post = method == JPT__VFS_HTTP_POST;
    c->method = jpt__vfs_method_name(method);
    c->guard = guard;
    c->guard_ud = guard_ud;
    c->done = done;
    c->ud = ud;
    c->hops_left = policy->redirects;
    c->body = p->body;
    c->body_len = p->body_len;
    jpt__files_path_quote(p->url, strlen(p->url), c->shown);

    int rc = jpt__policy_url_parse(p->url, &c->origin, &why);
    if (rc == JPT_ERR_NOMEM) {
        call_free(c);
        return rc;
    }
    if (rc < 0) {
        fail(c, JPT_ERR_INVALID, "'url' is not a valid URL (%s)", why);
        return JPT_OK;
    }
    /* A URL refused outright is told so; any other, whether allowed or
     * to be asked about, must carry its variables before anyone is asked.
     * Without headers there is nothing to carry: the guard's verdict is
     * the only one (a verdict costs a parse of the URL, issue 17 §4). */
    if (p->nheaders > 0 &&
        jpt__policy_check(policy, JPT_ACCESS_HTTP, c->origin.text, NULL, NULL, NULL) !=
            JPT_VERDICT_DENY &&
        check_variables(c, p) < 0)
        return JPT_OK;
    /* The policy's verdict on the URL as libcurl reads it; an ask goes to
     * the prompt (JPT_ERR_AGAIN) and the request comes back once decided. */
    message[0] = '\0';
    rc = guard(guard_ud, JPT__VFS_HTTP_URL, c->origin.text, message, sizeof(message));
    if (rc == JPT_ERR_AGAIN) {
        finish(c, rc, NULL, 0, message);
        return JPT_OK;
    }
    if (rc < 0) {
        fail(c, rc, "%s", message);
        return JPT_OK;
    }
    if (build_headers(c, p) < 0)
        return JPT_OK;
    if (q->active >= JPT__VFS_HTTP_MAX_ACTIVE) {
        enqueue(c);
        *pending = c;
        return JPT_OK;
    }
    *pending = c;
    start(c);
    /* A start that failed has run `done`, which forgot the call. */
    return JPT_OK;
}

void jpt__vfs_http_cancel(jpt__vfs_http_call *c)
{
    if (c != NULL)
        call_free(c);
}
