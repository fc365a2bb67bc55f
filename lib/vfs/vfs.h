/* The vfs room's internal interface: the D11 JSON-RPC protocol as pure state
 * machines over bytes (ARCHITECTURE.md §1, principle 5), for the host that
 * serves a tool process and for the tool itself. Never installed.
 *
 * Layers, each calling only those below it:
 *
 *   host.c     the standalone host (jpt_vfs_host_*): a loop of its own
 *              around one session
 *   session.c  serving one tool on a loop: its process or fds, the engine,
 *              fs.* through the files backend after the access policy, the
 *              policy prompt, the request timeout, the tool's end (the
 *              registry's "vfs" runtime uses it too)
 *   http.c     http.get and http.post for a session: the network policy,
 *              ${VAR} headers, redirects hop by hop, D11's result, secrets
 *              scrubbed (the exchanges themselves are the http room's)
 *   tool.c     the blocking tool SDK (include/jptool/vfs_tool.h): poll(),
 *              read() and write() on the tool's fds around a client
 *   engine.c   the host engine: messages from the tool in, responses and
 *              notifications to the tool out; calls and their answers
 *   client.c   the tool-side engine: init, responses, apply, cancel,
 *              pending in; requests and final notifications out
 *   params.c   the methods and their params, validated into typed values
 *   frame.c    NDJSON framing with a line limit; the output queue
 *   codec.c    strict JSON validation, member lookup, string escape and
 *              unescape at memory speed, base64
 *
 * Neither engine owns an fd, a clock or a thread: the caller feeds the bytes
 * it read, writes the bytes the engine queued, and keeps the time. */
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
#include "jptool/vfs_tool.h"

/* ==== codec.c ============================================================ */

/* A stretch of JSON text: a value, or a member name without its quotes. */
typedef struct jpt__vfs_span {
    const char *p;
    size_t n;
} jpt__vfs_span;

/* The type of a validated value, from its first byte. */
#define JPT__JSON_OBJECT 1
#define JPT__JSON_ARRAY 2
#define JPT__JSON_STRING 3
#define JPT__JSON_NUMBER 4
#define JPT__JSON_TRUE 5
#define JPT__JSON_FALSE 6
#define JPT__JSON_NULL 7

/* Deeper nesting is refused: the state parser (jansson) and every tool's
 * JSON library have a limit too, and a message this deep is an attack. */
#define JPT__JSON_MAX_DEPTH 512

typedef struct jpt__json_error {
    size_t offset;    /* byte offset where the text went wrong */
    const char *what; /* static text: "expected ':'" */
} jpt__json_error;

/* Checks that text[0..n) is exactly one JSON value (RFC 8259), with
 * optional whitespace around it: strings of valid UTF-8 without raw control
 * characters, escapes and surrogate pairs well-formed, numbers in JSON's
 * grammar, nesting at most JPT__JSON_MAX_DEPTH. JPT_OK, or JPT_ERR_INVALID
 * with `err` saying where and what. */
int jpt__json_validate(const char *text, size_t n, jpt__json_error *err);

/* JPT__JSON_* of the validated value starting at v.p (whitespace skipped). */
int jpt__json_type(jpt__vfs_span v);

/* Iterating the members of an object or the elements of an array of
 * validated text, without copying: values are skipped at memchr speed. */
typedef struct jpt__json_iter {
    const char *p;
    size_t n, i;
} jpt__json_iter;

/* Starts at the container `v` (validated, whitespace around it allowed). */
void jpt__json_iter_init(jpt__json_iter *it, jpt__vfs_span v);
/* The next member: `key` is the raw name between its quotes, `value` the
 * value's text. false after the last one. */
bool jpt__json_next_member(jpt__json_iter *it, jpt__vfs_span *key, jpt__vfs_span *value);
/* The next element of an array. */
bool jpt__json_next_element(jpt__json_iter *it, jpt__vfs_span *value);
/* Whether the raw member name `key` decodes to `name` (escapes allowed). */
bool jpt__json_key_is(jpt__vfs_span key, const char *name);

/* Decodes the string literal `lit` (quotes included, validated) into `out`,
 * which may be lit.p + 1 or lit.p (decoding in place: the output is never
 * longer than the input). Returns the decoded length; writes no NUL. */
size_t jpt__json_unescape(jpt__vfs_span lit, char *out);

/* A validated number that is a non-negative integer no larger than `max`
 * (no fraction, no exponent, no minus sign). */
bool jpt__json_uint(jpt__vfs_span v, uint64_t max, uint64_t *out);

/* The length of p[0..n) as a JSON string literal, quotes included, or 0
 * when p[0..n) is not valid UTF-8 (or holds a NUL byte and `refuse_nul`). */
size_t jpt__json_quoted_size(const char *p, size_t n, bool refuse_nul);
/* Writes that literal, exactly jpt__json_quoted_size() bytes, to dst. */
void jpt__json_quote(char *dst, const char *p, size_t n);
/* Appends p[0..n) as a JSON string literal to `b`; invalid UTF-8 is
 * replaced by U+FFFD. */
int jpt__json_append_string(jpt__buf *b, const char *p, size_t n);
/* Appends the validated JSON text v with its raw newlines (whitespace, the
 * only place JSON allows them) turned into spaces, so it fits on one line. */
int jpt__json_append_flat(jpt__buf *b, const char *p, size_t n);

/* ==== frame.c ============================================================ */

/* NDJSON framing of one direction (D11 "Message framing"): a line ends at
 * '\n', a '\r' before it is dropped. A line longer than `limit` bytes is
 * reported once and its bytes dropped up to its newline, never buffered
 * whole. */
typedef struct jpt__vfs_lines {
    jpt__buf buf;       /* the start of a line that has not ended yet */
    size_t limit;
    bool skipping;      /* dropping a line over the limit */
    bool buf_returned;  /* buf holds the line returned last; clear it next */
    uint64_t dropped;   /* bytes of the line being dropped */
    uint64_t count;     /* lines completed, dropped ones included */
} jpt__vfs_lines;

typedef struct jpt__vfs_line {
    char *p;            /* in the caller's bytes, or in the framer's buffer */
    size_t n;           /* without the newline and the '\r' before it */
    bool in_buffer;     /* p is the framer's buffer: jpt__vfs_lines_steal() */
    uint64_t number;    /* 1 for the first line */
} jpt__vfs_line;

#define JPT__LINE_NONE 0     /* every byte taken, no line completed */
#define JPT__LINE 1          /* a line: `line` is valid until the next call */
#define JPT__LINE_TOO_LONG 2 /* the line `line->number` passed the limit */

void jpt__vfs_lines_init(jpt__vfs_lines *l, size_t limit);
void jpt__vfs_lines_free(jpt__vfs_lines *l);
/* Takes bytes of p[0..n) up to the end of the next line or event; `*used`
 * says how many. JPT__LINE_NONE means all n were taken; JPT_ERR_NOMEM
 * takes none. */
int jpt__vfs_lines_next(jpt__vfs_lines *l, const char *p, size_t n, size_t *used,
                        jpt__vfs_line *line);
/* Bytes of a line that has begun and not ended (0 between lines). */
uint64_t jpt__vfs_lines_partial(const jpt__vfs_lines *l);
/* Hands the buffer holding `line` (in_buffer) to the caller, to be freed
 * with jpt__free(); the framer starts a new one. */
char *jpt__vfs_lines_steal(jpt__vfs_lines *l);

/* The bytes waiting to be written to the peer: appended at the end, taken
 * from the front. A message is appended whole or not at all. */
typedef struct jpt__vfs_outq {
    jpt__buf buf;
    size_t start; /* buf.data[start..len) is pending */
} jpt__vfs_outq;

void jpt__vfs_outq_free(jpt__vfs_outq *q);
size_t jpt__vfs_outq_pending(const jpt__vfs_outq *q);
const char *jpt__vfs_outq_data(const jpt__vfs_outq *q);
/* `n` bytes from the front were written. */
void jpt__vfs_outq_consume(jpt__vfs_outq *q, size_t n);
/* Before appending a message: room for `n` more bytes, and a mark to roll
 * back to when building it fails. */
int jpt__vfs_outq_begin(jpt__vfs_outq *q, size_t n, size_t *mark);
/* Ends the message started at `mark`: appends the newline, or when `rc`
 * is an error drops everything appended since the mark. Returns `rc` (or
 * JPT_ERR_NOMEM when the newline does not fit). */
int jpt__vfs_outq_end(jpt__vfs_outq *q, size_t mark, int rc);

/* ==== params.c =========================================================== */

/* The methods a tool may call (D11 "Protocol methods"). */
#define JPT__VFS_FS_READ 0
#define JPT__VFS_FS_WRITE 1
#define JPT__VFS_FS_EXISTS 2
#define JPT__VFS_FS_LIST_DIR 3
#define JPT__VFS_FS_METADATA 4
#define JPT__VFS_FS_DELETE 5
#define JPT__VFS_FS_RENAME 6
#define JPT__VFS_FS_GREP 7
#define JPT__VFS_HTTP_GET 8
#define JPT__VFS_HTTP_POST 9
#define JPT__VFS_PROCESS_RUN 10
#define JPT__VFS_METHODS 11

/* The most `context` lines fs.grep accepts on each side of a match. */
#define JPT__VFS_GREP_MAX_CONTEXT 10000

/* A request's params, decoded and checked. Strings are NUL-terminated and
 * hold no NUL byte, except fs.write's content, which has a length. */
typedef struct jpt__vfs_params {
    const char *path;       /* fs.read, write, exists, list_dir, metadata, delete */
    const char *from, *to;  /* fs.rename */
    const char *content;    /* fs.write: the bytes to write, base64 decoded */
    size_t content_len;
    bool base64;            /* fs.write: the content came as base64 */
    /* fs.grep */
    const char *pattern;
    const char *const *paths;      /* NULL: the whole project */
    size_t npaths;
    const char *const *extensions; /* NULL: every file */
    size_t nextensions;
    unsigned context;              /* lines each side, 0 by default */
    bool case_insensitive, fixed_strings;
    uint64_t max_matches;          /* 0: not given (the backend's default) */
    /* process.run */
    const char *program;
    const char *const *args;       /* NULL when not given: no arguments */
    size_t nargs;
    const char *const *envs;       /* NULL when not given: none */
    size_t nenvs;
    /* http.get, http.post */
    const char *url;
    const char *const *header_names;  /* nheaders of each, in order */
    const char *const *header_values;
    size_t nheaders;
    const char *body;       /* http.post: the bytes to send, base64 decoded;
                               may hold NULs (body_len) */
    size_t body_len;
} jpt__vfs_params;

/* The method named by the raw JSON string `name` (no quotes), or -1. */
int jpt__vfs_method_find(jpt__vfs_span name);
const char *jpt__vfs_method_name(int method);

/* Decodes the params object `params` (a validated span; p == NULL when the
 * request had none) of `method` into `out`. String values are unescaped in
 * place, so params.p must be writable and owned by the caller; arrays (fs.grep's
 * paths, extensions; http's headers; process.run's args and envs) are
 * one allocation stored in `*arrays` for the caller to free. JPT_OK;
 * JPT_ERR_INVALID with `why` naming the field
 * ("'path' must be a string"); JPT_ERR_NOMEM. */
int jpt__vfs_params_decode(int method, jpt__vfs_span params, jpt__vfs_params *out,
                           void **arrays, char *why, size_t why_len);

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

/* Defaults of jpt__vfs_limits' fields left 0. */
#define JPT__VFS_MAX_MESSAGE (JPT_VFS_CONTENT_LIMIT + JPT_VFS_ENVELOPE_LIMIT)
#define JPT__VFS_MAX_VIOLATIONS 16
#define JPT__VFS_OUTPUT_HIGH_WATER (1u << 20)
#define JPT__VFS_MAX_CALLS 16384
#define JPT__VFS_MAX_CALL_BYTES (64u << 20)

/* Bounded memory (issue 9: a tool that writes requests and never reads its
 * stdin must not make the host grow without bound). The engine takes no
 * further message from the tool while
 *   - more than `output_high_water` bytes wait to be written to the tool, or
 *   - `max_calls` calls are unanswered, or their params hold more than
 *     `max_call_bytes` bytes;
 * so it holds at most high water + one response, the calls' limits, and one
 * line of at most `max_message` bytes. */
typedef struct jpt__vfs_limits {
    size_t max_message;        /* longest line taken from the tool */
    unsigned max_violations;   /* protocol violations tolerated */
    size_t output_high_water;
    size_t max_calls;
    size_t max_call_bytes;
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
#define JPT__VFS_HTTP_MAX_ACTIVE 64

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

/* ==== session.c: serving one tool on a loop ============================== */

typedef struct jpt__vfs_session jpt__vfs_session;

/* What the session tells its owner (the standalone host, the registry's
 * "vfs" runtime). Inside the loop's dispatch. */
typedef struct jpt__vfs_session_ops {
    /* A state the tool reported (result, error, state notifications); the
     * owner takes the reference. */
    void (*state)(void *ud, jpt_state *st);
    /* The tool has ended (its process reaped, or its fds closed). `failure`
     * (a reference for the owner, or NULL) is an error state when it failed
     * by the session's account: it exited without a result (with the end
     * of its stderr), broke the protocol past the limit, or was silent past
     * the request timeout. The owner may free the session from here. */
    void (*ended)(void *ud, jpt_state *failure);
    /* A request the policy asks about: the owner hands it to its policy
     * handler (jpt_policy_fn) and returns true, or returns false when it
     * has none (the request is then denied, saying no one could be
     * asked). NULL: no handler ever. */
    bool (*ask)(void *ud, jpt_policy_request *req);
    /* Bytes of the tool's stderr as they are read (its stdout is the
     * protocol's). May be NULL. */
    void (*stderr_bytes)(void *ud, const char *p, size_t n);
    void *ud;
} jpt__vfs_session_ops;

typedef struct jpt__vfs_session_config {
    jpt__loop *loop;
    jpt_files *files;           /* referenced by the session */
    const jpt_policy *policy;   /* the owner keeps it for the session's life */
    /* The owner's HTTP object (one per loop owner, outliving its
     * sessions), or NULL: http.* are then answered -32601. */
    struct jpt__http *http;
    jpt__vfs_init init;         /* init.name is the tool's name in messages */
    const char *request_id;     /* jpt_policy_request_id(), or NULL */
    int request_timeout_ms;     /* <= 0: none */
    int kill_grace_ms;
    jpt__vfs_limits limits;     /* zeros: the defaults */
    /* The owner's process slots, which process.run's children take too
     * (run.h), or NULL: the tool's own bound alone. Outlives the session. */
    const struct jpt__vfs_slots *slots;
    /* The OS sandbox of process.run's children (JPT_SANDBOX_*, run.h):
     * the tool's own mode; 0: JPT_SANDBOX_REQUIRED. */
    int run_sandbox_mode;
    struct jpt__sandbox_cache *sandbox_cache; /* the owner's, for the
                                                 children's filters; may be
                                                 NULL */
    /* The option that lets a sandboxed tool read more, in the owner's
     * words ("os_sandbox.read in its definition"), static storage, or
     * NULL: the end of a tool that ran in the OS sandbox and could not
     * start (it read none of init, sent no valid message and did not exit
     * 0) names it (issue 16 §4). */
    const char *sandbox_hint;
    /* How to give a tool environment variables, in the owner's words,
     * static storage, or NULL: the end of a Python tool that could not
     * start because it could not import jptool (its stderr says "No
     * module named 'jptool'") names it with jptool.python_tool_env(). */
    const char *env_hint;
} jpt__vfs_session_config;

/* Starts a tool as a child process (`spawn`, its stdin a pipe whatever it
 * says) and writes init. Errors as jpt__child_spawn and
 * jpt__vfs_engine_new, the message in `err`. */
int jpt__vfs_session_spawn(const jpt__vfs_session_config *cfg, const jpt__spawn *spawn,
                           const jpt__vfs_session_ops *ops, jpt__errbuf *err,
                           jpt__vfs_session **out);
/* Serves a tool on two fds the caller opened, which the session owns from
 * then on (made non-blocking; closed at its end). */
int jpt__vfs_session_attach(const jpt__vfs_session_config *cfg, int rfd, int wfd,
                            const jpt__vfs_session_ops *ops, jpt__errbuf *err,
                            jpt__vfs_session **out);
/* D11's apply notification with `input_json`. JPT_ERR_STATE once the tool
 * is ending, JPT_ERR_INVALID (not JSON), JPT_ERR_NOMEM. */
int jpt__vfs_session_apply(jpt__vfs_session *s, const char *input_json, size_t len);
/* D11 "Cancellation": the cancel notification, SIGTERM after the grace,
 * SIGKILL after another; requests waiting on the prompt are answered
 * -32005. Its end comes through ops->ended. */
void jpt__vfs_session_cancel(jpt__vfs_session *s);
/* Ends the tool now: SIGTERM, SIGKILL after the grace (attached fds are
 * closed). */
void jpt__vfs_session_terminate(jpt__vfs_session *s);
/* Takes in what the tool wrote and was not read yet, and its end. */
void jpt__vfs_session_refresh(jpt__vfs_session *s);
bool jpt__vfs_session_ended(const jpt__vfs_session *s);
/* The tool's process id, 0 for attached fds or once it is reaped. */
pid_t jpt__vfs_session_pid(const jpt__vfs_session *s);
/* The owner has a process slot again: process.run requests waiting for
 * one start (run.h, jpt__vfs_run_queue_wake). */
void jpt__vfs_session_slot_free(jpt__vfs_session *s);
/* Whether process.run requests wait for the owner's slots while none of
 * the tool's processes runs. */
bool jpt__vfs_session_starved(const jpt__vfs_session *s);
/* Refuses the waiting process.run requests: JPT_ERR_LIMIT (-32603) and
 * "process.run '<program>': <why>". */
void jpt__vfs_session_refuse_waiting(jpt__vfs_session *s, const char *why);
/* Hands over the tool's process, for a free that ends every process at
 * once. */
jpt__child *jpt__vfs_session_take_child(jpt__vfs_session *s);
/* Frees the session; a process still running is killed and reaped. Not
 * from inside a callback of the session but ops->ended. */
void jpt__vfs_session_free(jpt__vfs_session *s);

/* ==== client.c: the tool side ============================================ */

typedef struct jpt__vfs_client jpt__vfs_client;

/* A response to one of the client's requests, kept until collected. */
typedef struct jpt__vfs_reply {
    bool done;             /* a response (or the cancel) has arrived */
    int code;              /* 0: success; else the JSON-RPC error code */
    char *message;         /* the error's message (NUL-terminated) */
    char *storage;         /* owns the bytes `result` points into */
    jpt__vfs_span result;  /* the result's JSON text, writable in place */
    char *data;            /* an error's data as JSON text, or NULL */
} jpt__vfs_reply;

/* `max_message`: the longest line taken from the host, 0 for
 * JPT_VFS_TOOL_MAX_MESSAGE; `max_request`: the longest line sent, 0 for
 * the default host's limit (JPT_VFS_CONTENT_LIMIT + JPT_VFS_ENVELOPE_LIMIT);
 * a longer request or notification is refused with JPT_ERR_LIMIT. */
int jpt__vfs_client_new(size_t max_message, size_t max_request, jpt__vfs_client **out);
void jpt__vfs_client_free(jpt__vfs_client *c);
const char *jpt__vfs_client_errmsg(const jpt__vfs_client *c);

/* Takes what the host wrote, handling every complete message. The first
 * must be `init`. JPT_OK; or the status that failed the client (every
 * later call returns it): JPT_ERR_PROTOCOL when the host broke the
 * protocol or answered with id null, JPT_ERR_LIMIT for a line longer than
 * max_message, JPT_ERR_NOMEM (a response lost). */
int jpt__vfs_client_feed(jpt__vfs_client *c, const char *p, size_t n);
/* The host closed the tool's stdin. */
void jpt__vfs_client_eof(jpt__vfs_client *c);
/* JPT_OK while usable, else the status that failed it. */
int jpt__vfs_client_status(const jpt__vfs_client *c);
bool jpt__vfs_client_closed(const jpt__vfs_client *c);

/* The init message's fields once it arrived (NULL before): the name, and
 * JSON texts for arguments, answers and options ("{}" when absent). */
bool jpt__vfs_client_ready(const jpt__vfs_client *c);
const char *jpt__vfs_client_init(const jpt__vfs_client *c, int field);
#define JPT__VFS_INIT_NAME 0
#define JPT__VFS_INIT_ARGUMENTS 1
#define JPT__VFS_INIT_ANSWERS 2
#define JPT__VFS_INIT_OPTIONS 3
#define JPT__VFS_INIT_VERSION 4

/* Queues a request and gives its id (1, 2, …). `params_json` NULL: none;
 * otherwise JSON text (JPT_ERR_INVALID if not). */
int jpt__vfs_client_request(jpt__vfs_client *c, const char *method, const char *params_json,
                            uint64_t *id);
/* The same for fs.* methods taking one path, fs.rename, and fs.write of
 * raw bytes (sent as text when UTF-8 without NUL, else as base64). Paths
 * that are not UTF-8 are JPT_ERR_INVALID. A request that cannot be sent
 * leaves the client usable; the message says why. */
int jpt__vfs_client_request_path(jpt__vfs_client *c, int method, const char *path,
                                 uint64_t *id);
int jpt__vfs_client_request_rename(jpt__vfs_client *c, const char *from, const char *to,
                                   uint64_t *id);
int jpt__vfs_client_request_write(jpt__vfs_client *c, const char *path, const void *data,
                                  size_t len, uint64_t *id);
/* The reply to request `id`: NULL when it is not one outstanding or
 * collected-but-not-forgotten. */
jpt__vfs_reply *jpt__vfs_client_reply(jpt__vfs_client *c, uint64_t id);
/* Drops request `id`'s reply (and a response that may still come). */
void jpt__vfs_client_forget(jpt__vfs_client *c, uint64_t id);

/* Queues a notification: `result`, `error` or `state` with its params
 * (JSON text of an object). */
int jpt__vfs_client_notify(jpt__vfs_client *c, const char *method, const char *params_json,
                           size_t len);

/* Inputs the host sent, in order: an `apply` (its input's JSON text,
 * handed over with *input_json, to free) or a `cancel` (*input_json NULL).
 * false when none is waiting. */
bool jpt__vfs_client_next_input(jpt__vfs_client *c, char **input_json);
bool jpt__vfs_client_cancelled(const jpt__vfs_client *c);

/* Each `pending` notification goes here: the request's id (0 when it is
 * not one of ours) and the reason. */
void jpt__vfs_client_on_pending(jpt__vfs_client *c,
                                void (*fn)(uint64_t id, const char *reason, void *ud),
                                void *ud);

/* The bytes to write to the host, as for the engine. */
size_t jpt__vfs_client_output(const jpt__vfs_client *c, const char **p);
void jpt__vfs_client_output_done(jpt__vfs_client *c, size_t n);

#endif /* JPT_LIB_VFS_H */
