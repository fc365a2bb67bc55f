/* The vfs room's internal interface: the host side of the D11 JSON-RPC
 * protocol, the engine a pure state machine over bytes (ARCHITECTURE.md
 * §1, principle 5), and what serves a tool process with it. The wire it
 * speaks is the vfs-proto room's (lib/vfs-proto/vfs-proto.h); the tool's
 * side is the vfs-tool room (lib/vfs-tool). Never installed.
 *
 * Layers, each calling only those below it:
 *
 *   host.c     the standalone host (jpt_vfs_host_*): a loop of its own
 *              around one session
 *   serve.c    what an owner's sessions are built with: the workspace,
 *              named backends, one HTTP object, a definition's VFS keys,
 *              the one builder of a session (session.h; the registry's
 *              "vfs" runtime uses it too)
 *   session.c  serving one tool on a loop: its process or fds, the engine,
 *              fs.* through the files backend after the access policy, the
 *              policy prompt, the request timeout, the tool's end
 *              (session.h)
 *   http.c     http.get and http.post for a session: the network policy,
 *              ${VAR} headers, redirects hop by hop, D11's result, secrets
 *              scrubbed (the exchanges themselves are the http room's)
 *   engine.c   the host engine: messages from the tool in, responses and
 *              notifications to the tool out; calls and their answers
 *
 * The engine owns no fd, clock or thread: the caller feeds the bytes it
 * read, writes the bytes the engine queued, and keeps the time. */
#ifndef JPT_LIB_VFS_H
#define JPT_LIB_VFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "loop/loop.h"
#include "process/process.h"
#include "jptool/state.h"
#include "jptool/vfs.h"
#include "vfs-proto/vfs-proto.h"

/* ==== engine.c: the host side ============================================ */

typedef struct jpt__vfs_engine jpt__vfs_engine;
typedef struct jpt__vfs_call jpt__vfs_call;

/* Serves one request. The call is the handler's until it answers it
 * (jpt__vfs_call_answer_*), now or in a later dispatch, in any order.
 * Handlers run inside jpt__vfs_engine_feed(); they may answer calls and
 * queue apply or cancel, but must not free the engine. */
typedef void (*jpt__vfs_method_fn)(void *ud, jpt__vfs_call *call);

typedef struct jpt__vfs_handlers {
    /* Indexed by JPT__VFS_*; NULL answers -32601 ("'<method>' is not served
     * by this host"). */
    jpt__vfs_method_fn method[JPT__VFS_METHODS];
    /* A `result`, `error` or `state` notification as a state (RFD 058, RFD
     * 009), whose reference the handler takes. Required. `result` is the
     * RFD 058 envelope of its params (content, structuredContent, isError,
     * _meta); `error` is ToolError {message, trace, transient}; `state` is
     * RFD 009's ToolState, a stopped one's plain `result` (D11's example)
     * read as {"Ok": result}. Malformed ones are violations, never
     * delivered. `final` for result and error, the tool's last word
     * whatever state it holds (a one-shot tool's question is waiting). */
    void (*state)(void *ud, jpt_state *st, bool final);
    void *ud;
} jpt__vfs_handlers;

/* Defaults of jpt__vfs_limits' fields left 0 (vfs.h, "Bounds"). */
#define JPT__VFS_MAX_MESSAGE (JPT_VFS_CONTENT_LIMIT + JPT_VFS_ENVELOPE_LIMIT)
#define JPT__VFS_MAX_VIOLATIONS 16
#define JPT__VFS_OUTPUT_HIGH_WATER (1u << 20)
#define JPT__VFS_MAX_CALLS JPT_VFS_MAX_REQUESTS
#define JPT__VFS_MAX_CALL_BYTES JPT_VFS_MAX_REQUEST_BYTES
#define JPT__VFS_ANSWER_BUDGET JPT_VFS_ANSWER_BUDGET

/* Bounded memory (issue 9, issue 15 §6: a tool that writes requests and
 * never reads its stdin must not make the host grow without bound). The
 * engine takes no further message from the tool while
 *   - more than `output_high_water` bytes wait to be written to the tool, or
 *   - those bytes and the reservations of the calls being worked out
 *     (jpt__vfs_engine_reserve) pass `answer_budget`, or
 *   - `max_calls` calls are unanswered, or their params hold more than
 *     `max_call_bytes` bytes;
 * so it holds at most the budget + one response, the calls' limits, and
 * one line of at most `max_message` bytes. Its owner starts no work while
 * jpt__vfs_engine_has_room() says no. */
typedef struct jpt__vfs_limits {
    size_t max_message;        /* longest line taken from the tool */
    unsigned max_violations;   /* protocol violations tolerated */
    size_t output_high_water;
    size_t max_calls;
    size_t max_call_bytes;
    size_t answer_budget;
} jpt__vfs_limits;

/* D11 "Initial context": the tool's name and three JSON texts (NULL: {}). */
typedef struct jpt__vfs_init {
    const char *name;
    const char *arguments;
    const char *answers;
    const char *options;
} jpt__vfs_init;

/* A new engine with `init` already queued as its first output. `limits`
 * may be NULL (defaults); the handlers struct is copied. JPT_ERR_INVALID
 * (a JSON text that is not an object, no state handler or name),
 * JPT_ERR_NOMEM; the message goes to `err`. */
int jpt__vfs_engine_new(const jpt__vfs_limits *limits, const jpt__vfs_handlers *h,
                        const jpt__vfs_init *init, jpt__errbuf *err,
                        jpt__vfs_engine **out);
/* Frees the engine and every unanswered call. Not from inside a handler. */
void jpt__vfs_engine_free(jpt__vfs_engine *e);

/* Takes the bytes the tool wrote, p[0..n), and handles every complete
 * message: requests go to the method table, notifications to the state
 * handler, malformed messages are answered and counted. Lines end at '\n'
 * with an optional '\r'; blank lines are skipped. Violations: a line
 * that is not JSON (-32700), too long, or not a JSON-RPC 2.0 request or
 * notification (-32600, with id null when the id cannot be read or is
 * not a string or number of at most 256 bytes), a response (the host
 * sends no requests), a malformed result/error/state notification. Not
 * violations: unknown methods (-32601), bad params (-32602), unknown
 * notifications (logged and ignored). Stops early
 * (*used < n) while the engine does not want input (the limits above):
 * the caller keeps the rest and feeds it again once it wants input. An
 * unfinished line is kept (up to the message limit).
 * JPT_OK; JPT_ERR_PROTOCOL once the tool broke the protocol more than
 * max_violations times (the message names the count and the last cause;
 * every later feed returns it too, taking nothing): stop the tool;
 * JPT_ERR_NOMEM (the message being handled is lost). */
int jpt__vfs_engine_feed(jpt__vfs_engine *e, const char *p, size_t n, size_t *used);
/* The tool closed its stdout. JPT_ERR_PROTOCOL if it did so in the middle
 * of a line (D11: an unterminated line is a protocol error, not a hang). */
int jpt__vfs_engine_eof(jpt__vfs_engine *e);
/* Whether feed would take another message now. */
bool jpt__vfs_engine_wants_input(const jpt__vfs_engine *e);
/* The answers being worked out: `bytes` of the answer budget are held for
 * one until it is released (the answer, once queued, counts as output). */
void jpt__vfs_engine_reserve(jpt__vfs_engine *e, size_t bytes);
void jpt__vfs_engine_release(jpt__vfs_engine *e, size_t bytes);
/* Whether the output waiting for the tool and the reservations leave room
 * in the answer budget: work may start. */
bool jpt__vfs_engine_has_room(const jpt__vfs_engine *e);

/* The bytes to write to the tool's stdin: `*p` and the count, valid until
 * the next call on the engine. */
size_t jpt__vfs_engine_output(const jpt__vfs_engine *e, const char **p);
/* `n` of them were written. */
void jpt__vfs_engine_output_done(jpt__vfs_engine *e, size_t n);

/* Queues an `apply` notification with the model's input (JSON text;
 * JPT_ERR_INVALID if it is not JSON), or `cancel`. */
int jpt__vfs_engine_apply(jpt__vfs_engine *e, const char *input_json, size_t len);
int jpt__vfs_engine_cancel(jpt__vfs_engine *e);

const char *jpt__vfs_engine_errmsg(const jpt__vfs_engine *e);
/* Counters: protocol violations so far; messages taken (requests,
 * notifications and malformed lines; a host's request timeout can watch
 * it); calls not answered yet. */
unsigned jpt__vfs_engine_violations(const jpt__vfs_engine *e);
uint64_t jpt__vfs_engine_messages(const jpt__vfs_engine *e);
size_t jpt__vfs_engine_calls(const jpt__vfs_engine *e);

/* ---- Calls: one request being served ------------------------------------ */

int jpt__vfs_call_method(const jpt__vfs_call *c);
const jpt__vfs_params *jpt__vfs_call_params(const jpt__vfs_call *c);
/* The request's id exactly as the tool wrote it (JSON text: a number or a
 * string literal with its quotes). */
const char *jpt__vfs_call_id(const jpt__vfs_call *c);
jpt__vfs_engine *jpt__vfs_call_engine(const jpt__vfs_call *c);
/* A pointer the handler may keep with the call. */
void jpt__vfs_call_set_data(jpt__vfs_call *c, void *data);
void *jpt__vfs_call_get_data(const jpt__vfs_call *c);

/* Tells the tool its request waits (on the policy prompt): a `pending`
 * notification {"request_id", "reason"}. JPT_ERR_NOMEM. */
int jpt__vfs_call_pending(jpt__vfs_call *c, const char *reason);

/* Each answer queues the response and frees the call. On JPT_ERR_NOMEM
 * nothing is queued and the call stays the handler's to answer (an error
 * answer needs little memory) or to drop with the engine. */
/* `result` is the JSON text of the response's result (JPT_ERR_INVALID and
 * nothing queued if it is not JSON). */
int jpt__vfs_call_answer_json(jpt__vfs_call *c, const char *result, size_t len);
/* The result of fs.* method `method` (JPT__VFS_FS_*) from its typed values,
 * written in D11's shape by vfs-proto's writer straight into the output
 * queue (fs.read's bytes quoted there in one pass): nothing to check. */
int jpt__vfs_call_answer_fs(jpt__vfs_call *c, int method, const jpt__vfs_fs_result *r);
/* fs.read's result for the file's bytes: {"content","size"} as text when
 * they are UTF-8 without NUL bytes, else with "encoding":"base64". */
int jpt__vfs_call_answer_read(jpt__vfs_call *c, const void *data, size_t len);
/* An error response: `code` one of JPT_VFS_E_*, the message formatted. */
int jpt__vfs_call_answer_error(jpt__vfs_call *c, int code, const char *fmt, ...)
    JPT__PRINTF(3, 4);

/* An error response whose `data` (JSON-RPC 2.0's error.data) is the JSON
 * text data[0..len) (JPT_ERR_INVALID and nothing queued if it is not
 * JSON): what a timed-out process.run had written, say. */
int jpt__vfs_call_answer_error_data(jpt__vfs_call *c, int code, const char *message,
                                    const char *data, size_t len);
/* ==== http.c: http.get and http.post ===================================== */

struct jpt__http;
typedef struct jpt__vfs_http_call jpt__vfs_http_call;

/* What a guard is asked about: the request's own URL (the policy may ask
 * the prompt: the guard returns JPT_ERR_AGAIN), or a redirect's next hop
 * (allowed or refused, never asked). */
#define JPT__VFS_HTTP_URL 11
#define JPT__VFS_HTTP_REDIRECT 12

/* The session's verdict on `url` (a URL as libcurl writes it back), in
 * the shape of the files room's guard: JPT_OK, JPT_ERR_AGAIN (asked), or
 * a status with `message` ("denied: …", at most `cap` bytes). */
typedef int (*jpt__vfs_http_guard_fn)(void *ud, int kind, const char *url, char *message,
                                      size_t cap);
/* The request's end, as the files room's: JPT_OK with the result's JSON
 * text, or a status with its message (which names the method and the
 * URL, and holds no secret); JPT_ERR_AGAIN when the guard asked. */
typedef void (*jpt__vfs_http_done_fn)(void *ud, int status, const char *result, size_t len,
                                      const char *message);

/* A session's transfers: at most JPT__VFS_HTTP_MAX_ACTIVE run at once,
 * the others wait their turn in order (their timeout starts with them),
 * so that one tool holds at most that many responses in memory. */
#define JPT__VFS_HTTP_MAX_ACTIVE JPT_VFS_HTTP_MAX_ACTIVE

typedef struct jpt__vfs_http_queue {
    jpt__loop *loop;
    size_t active;
    jpt__vfs_http_call *head, *tail; /* waiting, oldest first */
    jpt__defer drain;                /* starts waiting calls */
} jpt__vfs_http_queue;

void jpt__vfs_http_queue_init(jpt__vfs_http_queue *q, jpt__loop *loop);
/* Stops the queue's deferred work; cancel its calls first. */
void jpt__vfs_http_queue_clear(jpt__vfs_http_queue *q);

/* Serves an http.get or http.post whose params are `p` (kept by the caller
 * until `done` or the cancel), on `http`, under `policy`'s network.*
 * settings, in the session's queue `q`. Statuses `done` gets: JPT_ERR_INVALID (-32602: a URL libcurl
 * cannot parse or whose path cannot be normalised, a bad header name or
 * value, "${" without a name), JPT_ERR_DENIED (the guard; a header's
 * ${VAR} that the URL does not carry — checked before the guard is asked,
 * unless the policy refuses the URL outright; a redirect the policy does
 * not allow, or whose URL holds a value substituted; a host name leading
 * to an address it may not reach), JPT_ERR_NOT_FOUND (a ${VAR} not set),
 * JPT_ERR_TIMEOUT
 * (network.timeout_ms), JPT_ERR_LIMIT (network.max_response_bytes),
 * JPT_ERR_IO (the transfer failed: libcurl's words), JPT_ERR_NOMEM.
 * JPT_OK with *pending NULL when `done` has run already, else the call in
 * flight; JPT_ERR_NOMEM without `done`. */
int jpt__vfs_http_submit(struct jpt__http *http, jpt__vfs_http_queue *q,
                         const jpt_policy *policy, int method,
                         const jpt__vfs_params *p, jpt__vfs_http_guard_fn guard,
                         void *guard_ud, jpt__vfs_http_done_fn done, void *ud,
                         jpt__vfs_http_call **pending);
/* Abandons a call in flight: `done` will not run. NULL-safe. */
void jpt__vfs_http_cancel(jpt__vfs_http_call *c);

#endif /* JPT_LIB_VFS_H */
