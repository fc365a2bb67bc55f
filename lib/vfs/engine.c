/* The host side of a VFS session (D11): messages the tool writes come in
 * as bytes; requests go to the method table as calls with checked params,
 * `result`, `error` and `state` notifications become states; responses,
 * `init`, `apply`, `cancel` and `pending` go out as bytes. A malformed
 * message is answered and counted; the session survives it until the tool
 * has broken the protocol more times than the limit. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vfs.h"

/* Params larger than this are not copied out of the line: the call takes
 * the framer's buffer and decodes in place (an fs.write of 10 MB). */
#define STEAL_THRESHOLD (64u << 10)

/* Ids longer than this are refused: every unanswered call keeps its id. */
#define MAX_ID_LENGTH 256

struct jpt__vfs_call {
    jpt__vfs_call *next, *prev;
    jpt__vfs_engine *engine;
    int method;
    jpt__vfs_params params;
    void *arrays;   /* fs.grep's string arrays */
    char *storage;  /* the params' text, decoded in place */
    size_t bytes;   /* counted against max_call_bytes */
    void *data;
    char id[];      /* as the tool wrote it */
};

struct jpt__vfs_engine {
    jpt__vfs_limits limits;
    jpt__vfs_handlers h;
    jpt__vfs_lines in;
    jpt__vfs_outq out;
    jpt__vfs_call *calls;
    size_t ncalls, call_bytes;
    size_t reserved; /* of the answer budget, by calls being worked out */
    unsigned violations;
    uint64_t messages;
    bool failed;
    jpt__errbuf err;
};

/* The members of a JSON-RPC message the engine reads; p NULL: absent. */
typedef struct envelope {
    jpt__vfs_span jsonrpc, id, method, params, result, error;
} envelope;

/* ---- Output ------------------------------------------------------------------- */

static int put(jpt__buf *b, const char *s)
{
    return jpt__buf_puts(b, s);
}

/* An error response, with `id` as JSON text ("null" when the request's id
 * could not be read). */
static int queue_error(jpt__vfs_engine *e, const char *id, int code, const char *message)
{
    jpt__buf *b = &e->out.buf;
    size_t mark;
    int rc = jpt__vfs_outq_begin(&e->out, 64 + strlen(id) + strlen(message), &mark);

    if (rc == JPT_OK && (rc = put(b, "{\"jsonrpc\":\"2.0\",\"id\":")) == JPT_OK &&
        (rc = put(b, id)) == JPT_OK &&
        (rc = jpt__buf_printf(b, ",\"error\":{\"code\":%d,\"message\":", code)) == JPT_OK &&
        (rc = jpt__buf_json_string(b, message, strlen(message))) == JPT_OK)
        rc = put(b, "}}");
    return jpt__vfs_outq_end(&e->out, mark, rc);
}

/* The start of a success response, up to and including "result":. */
static int begin_result(jpt__vfs_engine *e, const char *id, size_t size, size_t *mark)
{
    int rc = jpt__vfs_outq_begin(&e->out, size + 40 + strlen(id), mark);

    if (rc == JPT_OK && (rc = put(&e->out.buf, "{\"jsonrpc\":\"2.0\",\"id\":")) == JPT_OK &&
        (rc = put(&e->out.buf, id)) == JPT_OK)
        rc = put(&e->out.buf, ",\"result\":");
    return rc;
}

/* ---- Violations ---------------------------------------------------------------------- */

/* Counts a protocol violation, logs it, and fails the engine once there
 * have been more than the limit (ARCHITECTURE.md §1.6). */
static int violation(jpt__vfs_engine *e, uint64_t line, const char *what)
{
    e->violations++;
    jpt__log(JPT_LOG_WARNING, "VFS tool broke the protocol (line %llu): %s",
             (unsigned long long)line, what);
    if (e->violations <= e->limits.max_violations)
        return JPT_OK;
    e->failed = true;
    return jpt__err(&e->err, JPT_ERR_PROTOCOL,
                    "the tool broke the VFS protocol %u times, more than the %u "
                    "allowed; the last: line %llu: %s",
                    e->violations, e->limits.max_violations, (unsigned long long)line,
                    what);
}

/* Answers a malformed message with `code` and counts it. */
static int reject(jpt__vfs_engine *e, uint64_t line, const char *id, int code,
                  const char *message)
{
    int rc = queue_error(e, id, code, message);
    if (rc < 0)
        return jpt__err(&e->err, rc, "out of memory answering line %llu of the tool",
                        (unsigned long long)line);
    return violation(e, line, message);
}

/* ---- Calls ------------------------------------------------------------------------------ */

static void call_free(jpt__vfs_call *c)
{
    jpt__vfs_engine *e = c->engine;

    JPT__LIST_REMOVE(e->calls, c);
    e->ncalls--;
    e->call_bytes -= c->bytes;
    jpt__free(c->arrays);
    jpt__free(c->storage);
    jpt__free(c);
}

int jpt__vfs_call_method(const jpt__vfs_call *c)
{
    return c->method;
}

const jpt__vfs_params *jpt__vfs_call_params(const jpt__vfs_call *c)
{
    return &c->params;
}

const char *jpt__vfs_call_id(const jpt__vfs_call *c)
{
    return c->id;
}

jpt__vfs_engine *jpt__vfs_call_engine(const jpt__vfs_call *c)
{
    return c->engine;
}

void jpt__vfs_call_set_data(jpt__vfs_call *c, void *data)
{
    c->data = data;
}

void *jpt__vfs_call_get_data(const jpt__vfs_call *c)
{
    return c->data;
}

int jpt__vfs_call_answer_json(jpt__vfs_call *c, const char *result, size_t len)
{
    jpt__vfs_engine *e = c->engine;
    jpt__json_error jerr;
    size_t mark;

    if (jpt__json_validate(result, len, &jerr) < 0)
        return jpt__err(&e->err, JPT_ERR_INVALID,
                        "the result for request %s is not JSON: %s at byte %zu", c->id,
                        jerr.what, jerr.offset);
    int rc = begin_result(e, c->id, len + 1, &mark);
    if (rc == JPT_OK && (rc = jpt__json_append_flat(&e->out.buf, result, len)) == JPT_OK)
        rc = put(&e->out.buf, "}");
    if ((rc = jpt__vfs_outq_end(&e->out, mark, rc)) < 0)
        return jpt__err(&e->err, rc, "out of memory answering request %s", c->id);
    call_free(c);
    return JPT_OK;
}

int jpt__vfs_call_answer_fs(jpt__vfs_call *c, int method, const jpt__vfs_fs_result *r)
{
    jpt__vfs_engine *e = c->engine;
    size_t mark;

    int rc = begin_result(e, c->id, 64, &mark);
    if (rc == JPT_OK && (rc = jpt__vfs_put_fs_result(&e->out.buf, method, r)) == JPT_OK)
        rc = put(&e->out.buf, "}");
    if ((rc = jpt__vfs_outq_end(&e->out, mark, rc)) < 0)
        return jpt__err(&e->err, rc, "out of memory answering request %s", c->id);
    call_free(c);
    return JPT_OK;
}

/* fs.read's result: the one writer of fs.* results. */
int jpt__vfs_call_answer_read(jpt__vfs_call *c, const void *data, size_t len)
{
    jpt__vfs_fs_result r = {.data = data, .len = len};

    return jpt__vfs_call_answer_fs(c, JPT__VFS_FS_READ, &r);
}

int jpt__vfs_call_answer_error(jpt__vfs_call *c, int code, const char *fmt, ...)
{
    jpt__vfs_engine *e = c->engine;
    jpt__buf message = JPT__BUF_INIT;
    char first[256];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(first, sizeof(first), fmt, ap);
    va_end(ap);
    const char *text = first;
    int rc = JPT_OK;
    if (n >= (int)sizeof(first)) {
        if ((rc = jpt__buf_reserve(&message, (size_t)n)) == JPT_OK) {
            va_start(ap, fmt);
            vsnprintf(message.data, (size_t)n + 1, fmt, ap);
            va_end(ap);
            text = message.data;
        }
    }
    if (rc == JPT_OK)
        rc = queue_error(e, c->id, code, n < 0 ? "error" : text);
    jpt__buf_free(&message);
    if (rc < 0)
        return jpt__err(&e->err, rc, "out of memory answering request %s", c->id);
    call_free(c);
    return JPT_OK;
}

int jpt__vfs_call_answer_error_data(jpt__vfs_call *c, int code, const char *message,
                                    const char *data, size_t len)
{
    jpt__vfs_engine *e = c->engine;
    jpt__buf *b = &e->out.buf;
    jpt__json_error jerr;
    size_t mark;

    if (jpt__json_validate(data, len, &jerr) < 0)
        return jpt__err(&e->err, JPT_ERR_INVALID,
                        "the error data for request %s is not JSON: %s at byte %zu", c->id,
                        jerr.what, jerr.offset);
    int rc = jpt__vfs_outq_begin(&e->out, 80 + strlen(c->id) + strlen(message) + len, &mark);
    if (rc == JPT_OK && (rc = put(b, "{\"jsonrpc\":\"2.0\",\"id\":")) == JPT_OK &&
        (rc = put(b, c->id)) == JPT_OK &&
        (rc = jpt__buf_printf(b, ",\"error\":{\"code\":%d,\"message\":", code)) == JPT_OK &&
        (rc = jpt__buf_json_string(b, message, strlen(message))) == JPT_OK &&
        (rc = put(b, ",\"data\":")) == JPT_OK &&
        (rc = jpt__json_append_flat(b, data, len)) == JPT_OK)
        rc = put(b, "}}");
    if ((rc = jpt__vfs_outq_end(&e->out, mark, rc)) < 0)
        return jpt__err(&e->err, rc, "out of memory answering request %s", c->id);
    call_free(c);
    return JPT_OK;
}

/* Issue 9 / D11 "Inquiry prompt blocking": the tool learns that its request
 * waits for a person, so it can extend its own timeout. */
int jpt__vfs_call_pending(jpt__vfs_call *c, const char *reason)
{
    jpt__vfs_engine *e = c->engine;
    jpt__buf *b = &e->out.buf;
    size_t mark;
    int rc = jpt__vfs_outq_begin(&e->out, 96 + strlen(c->id) + strlen(reason), &mark);

    if (rc == JPT_OK &&
        (rc = put(b, "{\"jsonrpc\":\"2.0\",\"method\":\"pending\",\"params\":{\"request_id\":")) ==
            JPT_OK &&
        (rc = put(b, c->id)) == JPT_OK && (rc = put(b, ",\"reason\":")) == JPT_OK &&
        (rc = jpt__buf_json_string(b, reason, strlen(reason))) == JPT_OK)
        rc = put(b, "}}");
    if ((rc = jpt__vfs_outq_end(&e->out, mark, rc)) < 0)
        return jpt__err(&e->err, rc, "out of memory telling the tool request %s waits",
                        c->id);
    return JPT_OK;
}

/* ---- Requests ------------------------------------------------------------------------------- */

/* The method name as messages quote it: decoded, cut to a readable size. */
static void method_label(jpt__vfs_span method, char *out, size_t size)
{
    char decoded[96];
    size_t n = method.n + 2 <= sizeof(decoded) ? jpt__json_unescape(method, decoded) : 0;

    if (method.n + 2 > sizeof(decoded))
        snprintf(out, size, "%.60s...", method.p + 1);
    else
        snprintf(out, size, "%.*s", (int)n, decoded);
}

static int method_not_found(jpt__vfs_engine *e, const char *id, jpt__vfs_span method, int m)
{
    char label[96], message[256];

    method_label(method, label, sizeof(label));
    if (m >= 0)
        snprintf(message, sizeof(message), "Method not found: '%s' is not served by this host",
                 label);
    else if (strcmp(label, "result") == 0 || strcmp(label, "error") == 0 ||
             strcmp(label, "state") == 0)
        snprintf(message, sizeof(message),
                 "Method not found: '%s' is a notification; send it without an id", label);
    else
        snprintf(message, sizeof(message), "Method not found: '%s'", label);
    /* A method this host does not know is the tool asking, not breaking the
     * protocol (D11 "Protocol versioning": unknown methods get -32601). */
    int rc = queue_error(e, id, JPT_VFS_E_METHOD_NOT_FOUND, message);
    return rc < 0 ? jpt__err(&e->err, rc, "out of memory answering the tool") : JPT_OK;
}

/* The call's own copy of the params: copied when small; when large and in
 * the framer's buffer, that buffer itself. */
static int call_storage(jpt__vfs_engine *e, jpt__vfs_line *line, jpt__vfs_span *params,
                        jpt__vfs_call *c)
{
    if (params->p == NULL)
        return JPT_OK;
    if (line->in_buffer && params->n >= STEAL_THRESHOLD) {
        size_t offset = (size_t)(params->p - line->p);
        c->storage = jpt__vfs_lines_steal(&e->in);
        c->bytes = line->n;
        params->p = c->storage + offset;
        return JPT_OK;
    }
    c->storage = jpt__memdup0(params->p, params->n);
    if (c->storage == NULL)
        return JPT_ERR_NOMEM;
    c->bytes = params->n;
    params->p = c->storage;
    return JPT_OK;
}

static int handle_request(jpt__vfs_engine *e, jpt__vfs_line *line, envelope *env,
                          const char *id)
{
    jpt__vfs_span name = {env->method.p + 1, env->method.n - 2};
    int m = jpt__vfs_method_find(name);
    char why[200], message[256];
    int rc;

    if (m < 0 || e->h.method[m] == NULL)
        return method_not_found(e, id, env->method, m);

    size_t idlen = strlen(id);
    jpt__vfs_call *c = jpt__calloc(1, sizeof(*c) + idlen + 1);
    if (c == NULL)
        return jpt__err(&e->err, JPT_ERR_NOMEM, "out of memory taking a request");
    memcpy(c->id, id, idlen + 1);
    c->engine = e;
    c->method = m;
    JPT__LIST_PUSH(e->calls, c);
    e->ncalls++;
    if ((rc = call_storage(e, line, &env->params, c)) == JPT_OK) {
        e->call_bytes += c->bytes;
        rc = jpt__vfs_params_decode(m, env->params, &c->params, &c->arrays, why, sizeof(why));
    }
    if (rc == JPT_ERR_INVALID) {
        snprintf(message, sizeof(message), "Invalid params: %s", why);
        if ((rc = queue_error(e, id, JPT_VFS_E_INVALID_PARAMS, message)) == JPT_OK) {
            call_free(c);
            return JPT_OK;
        }
    }
    if (rc < 0) {
        call_free(c);
        return jpt__err(&e->err, rc, "out of memory taking a %s request",
                        jpt__vfs_method_name(m));
    }
    e->h.method[m](e->h.ud, c);
    return JPT_OK;
}

/* ---- Notifications ---------------------------------------------------------------------------- */

/* `final`: a result or error notification, the tool's last word (D11),
 * whatever state it holds (a one-shot tool's question is a waiting one). */
static int deliver(jpt__vfs_engine *e, const char *text, size_t len, bool final)
{
    jpt_state *st = NULL;
    int rc = jpt_state_parse(text, len, 0, &st);

    if (rc < 0)
        return jpt__err(&e->err, rc, "out of memory reading the tool's state");
    e->h.state(e->h.ud, st, final);
    return JPT_OK;
}

/* Appends `"name":value` to b, after a comma unless it is the first. */
static int add_member(jpt__buf *b, const char *name, jpt__vfs_span value, bool *first)
{
    int rc = jpt__buf_printf(b, "%s\"%s\":", *first ? "" : ",", name);

    *first = false;
    return rc < 0 ? rc : jpt__buf_append(b, value.p, value.n);
}

/* Delivers as the tool's state the object `head` (its opening, "{" or
 * "{\"type\":…") followed by the members of `names` that `m` holds, in
 * that order. `params_len` sizes the text. `what` names it when memory runs
 * out. */
static int deliver_members(jpt__vfs_engine *e, const char *head, const char *const *names,
                           const jpt__vfs_span *m, size_t params_len, const char *what)
{
    jpt__buf text = JPT__BUF_INIT;
    bool first = head[1] == '\0'; /* "{" alone: no member written yet */
    int rc;

    if ((rc = jpt__buf_reserve(&text, params_len + strlen(head) + 1)) == JPT_OK &&
        (rc = put(&text, head)) == JPT_OK)
        for (size_t i = 0; names[i] != NULL && rc == JPT_OK; i++)
            if (m[i].p != NULL)
                rc = add_member(&text, names[i], m[i], &first);
    if (rc == JPT_OK && (rc = jpt__buf_putc(&text, '}')) == JPT_OK)
        rc = deliver(e, text.data, text.len, true);
    else
        rc = jpt__err(&e->err, rc, "out of memory reading the tool's %s", what);
    jpt__buf_free(&text);
    return rc;
}

/* Whether `v` (p NULL: absent) is the string literal of `text`. */
static bool string_is(jpt__vfs_span v, const char *text)
{
    if (v.p == NULL || jpt__json_type(v) != JPT__JSON_STRING)
        return false;
    jpt__vfs_span inner = {v.p + 1, v.n - 2};
    return jpt__json_key_is(inner, text);
}

/* The members of `obj` named in `names`, in that order; absent ones left
 * with p NULL; a duplicate sets *twice. */
static void members(jpt__vfs_span obj, const char *const *names, jpt__vfs_span *out,
                    const char **twice)
{
    jpt__json_iter it;
    jpt__vfs_span key, value;

    *twice = NULL;
    for (size_t i = 0; names[i] != NULL; i++)
        out[i].p = NULL;
    jpt__json_iter_init(&it, obj);
    while (jpt__json_next_member(&it, &key, &value))
        for (size_t i = 0; names[i] != NULL; i++)
            if (jpt__json_key_is(key, names[i])) {
                if (out[i].p != NULL)
                    *twice = names[i];
                out[i] = value;
            }
}

/* D11 `result`: params.content is RFD 058's content array or a plain string
 * (one text block); the state room reads it as the envelope it is. */
static int notify_result(jpt__vfs_engine *e, uint64_t line, jpt__vfs_span params)
{
    static const char *const names[] = {"content", "structuredContent", "isError", "_meta",
                                        NULL};
    jpt__vfs_span m[4];
    const char *twice;

    if (params.p == NULL || jpt__json_type(params) != JPT__JSON_OBJECT)
        return violation(e, line, "a result notification needs params {\"content\"}");
    members(params, names, m, &twice);
    int type = m[0].p != NULL ? jpt__json_type(m[0]) : 0;
    if (type != JPT__JSON_STRING && type != JPT__JSON_ARRAY)
        return violation(e, line, "a result notification's params.content must be a string "
                                  "or an array of content blocks");
    if (twice != NULL)
        return violation(e, line, "a result notification gives a member twice");
    return deliver_members(e, "{", names, m, params.n, "result");
}

static bool is_string_array(jpt__vfs_span v)
{
    jpt__json_iter it;
    jpt__vfs_span element;

    if (jpt__json_type(v) != JPT__JSON_ARRAY)
        return false;
    jpt__json_iter_init(&it, v);
    while (jpt__json_next_element(&it, &element))
        if (jpt__json_type(element) != JPT__JSON_STRING)
            return false;
    return true;
}

/* D11 `error`: params are RFD 009's ToolError {message, trace, transient},
 * which the state room reads in JP's error Outcome form. */
static int notify_error(jpt__vfs_engine *e, uint64_t line, jpt__vfs_span params)
{
    static const char *const names[] = {"message", "trace", "transient", NULL};
    jpt__vfs_span m[3];
    const char *twice;

    if (params.p == NULL || jpt__json_type(params) != JPT__JSON_OBJECT)
        return violation(e, line, "an error notification needs params {\"message\"}");
    members(params, names, m, &twice);
    if (m[0].p == NULL || jpt__json_type(m[0]) != JPT__JSON_STRING)
        return violation(e, line, "an error notification's params.message must be a string");
    if (m[1].p != NULL && !is_string_array(m[1]))
        return violation(e, line,
                         "an error notification's params.trace must be an array of strings");
    int transient = m[2].p != NULL ? jpt__json_type(m[2]) : JPT__JSON_FALSE;
    if (transient != JPT__JSON_TRUE && transient != JPT__JSON_FALSE)
        return violation(e, line, "an error notification's params.transient must be a boolean");
    if (twice != NULL)
        return violation(e, line, "an error notification gives a member twice");
    return deliver_members(e, "{\"type\":\"error\"", names, m, params.n, "error");
}

/* D11 `state`: RFD 009's ToolState, running, waiting or stopped. The
 * state room reads it, in every form the RFDs give a stopped state's
 * result (D11's "result": "Staged 3 hunks." too), as it reads a stdio
 * tool's state line. */
static int notify_state(jpt__vfs_engine *e, uint64_t line, jpt__vfs_span params)
{
    static const char *const names[] = {"type", "result", NULL};
    jpt__vfs_span m[2];
    const char *twice;

    if (params.p == NULL || jpt__json_type(params) != JPT__JSON_OBJECT)
        return violation(e, line, "a state notification needs params {\"type\"}");
    members(params, names, m, &twice);
    if (twice != NULL)
        return violation(e, line, "a state notification gives a member twice");
    if (!(string_is(m[0], "running") || string_is(m[0], "waiting") ||
          string_is(m[0], "stopped")))
        return violation(e, line, "a state notification's params.type must be \"running\", "
                                  "\"waiting\" or \"stopped\"");
    return deliver(e, params.p, params.n, false);
}

static int handle_notification(jpt__vfs_engine *e, uint64_t line, envelope *env)
{
    jpt__vfs_span name = {env->method.p + 1, env->method.n - 2};
    char label[96];

    if (jpt__json_key_is(name, "result"))
        return notify_result(e, line, env->params);
    if (jpt__json_key_is(name, "error"))
        return notify_error(e, line, env->params);
    if (jpt__json_key_is(name, "state"))
        return notify_state(e, line, env->params);
    /* JSON-RPC never answers a notification; one this host does not know
     * may come from a newer tool, so it is logged, not held against it. */
    method_label(env->method, label, sizeof(label));
    jpt__log(JPT_LOG_WARNING, "VFS tool sent an unknown notification '%s' (line %llu); ignored",
             label, (unsigned long long)line);
    return JPT_OK;
}

/* ---- Messages ------------------------------------------------------------------------------------ */

static bool blank(const jpt__vfs_line *line)
{
    for (size_t i = 0; i < line->n; i++)
        if (line->p[i] != ' ' && line->p[i] != '\t' && line->p[i] != '\r')
            return false;
    return true;
}

/* The id as JSON text to echo, or NULL when it is neither a string nor a
 * number (JSON-RPC 2.0 §4: those two, and null, which is discouraged and
 * refused here because its response could not be told from an answer to
 * an unreadable request). */
static bool valid_id(jpt__vfs_span id)
{
    int type = jpt__json_type(id);
    return (type == JPT__JSON_STRING || type == JPT__JSON_NUMBER) && id.n <= MAX_ID_LENGTH;
}

static int handle_message(jpt__vfs_engine *e, jpt__vfs_line *line, jpt__vfs_span msg)
{
    static const char *const names[] = {"jsonrpc", "id", "method", "params", "result", "error",
                                        NULL};
    jpt__vfs_span m[6];
    envelope env;
    const char *twice;
    char id[MAX_ID_LENGTH + 1] = "null", message[128];

    members(msg, names, m, &twice);
    env = (envelope){m[0], m[1], m[2], m[3], m[4], m[5]};
    bool has_id = env.id.p != NULL;
    /* JSON-RPC 2.0 §5: the id is null only when it could not be read; an
     * id given twice could not, any other member given twice leaves it
     * readable. */
    if (has_id && valid_id(env.id) && (twice == NULL || strcmp(twice, "id") != 0))
        snprintf(id, sizeof(id), "%.*s", (int)env.id.n, env.id.p);
    if (twice != NULL) {
        snprintf(message, sizeof(message), "Invalid Request: member '%s' is given twice", twice);
        return reject(e, line->number, id, JPT_VFS_E_INVALID_REQUEST, message);
    }
    if (!string_is(env.jsonrpc, "2.0"))
        return reject(e, line->number, id, JPT_VFS_E_INVALID_REQUEST,
                      "Invalid Request: 'jsonrpc' must be \"2.0\"");
    if (env.method.p == NULL) {
        /* The host never sends requests, so a response answers nothing
         * (issue 9: ignored with a log line). */
        if (has_id && (env.result.p != NULL || env.error.p != NULL))
            return violation(e, line->number, "a response, but the host sent no request");
        return reject(e, line->number, id, JPT_VFS_E_INVALID_REQUEST,
                      "Invalid Request: no 'method'");
    }
    if (jpt__json_type(env.method) != JPT__JSON_STRING)
        return reject(e, line->number, id, JPT_VFS_E_INVALID_REQUEST,
                      "Invalid Request: 'method' must be a string");
    if (!has_id)
        return handle_notification(e, line->number, &env);
    if (!valid_id(env.id))
        return reject(e, line->number, "null", JPT_VFS_E_INVALID_REQUEST,
                      "Invalid Request: 'id' must be a string or a number of at most "
                      "256 bytes");
    return handle_request(e, line, &env, id);
}

/* Whether `v` is a well-formed notification: an object with "jsonrpc":
 * "2.0", a string method and no id, each given once. */
static bool is_notification(jpt__vfs_span v)
{
    static const char *const names[] = {"jsonrpc", "id", "method", NULL};
    jpt__vfs_span m[3];
    const char *twice;

    if (jpt__json_type(v) != JPT__JSON_OBJECT)
        return false;
    members(v, names, m, &twice);
    return twice == NULL && string_is(m[0], "2.0") && m[1].p == NULL && m[2].p != NULL &&
           jpt__json_type(m[2]) == JPT__JSON_STRING;
}

/* D11 "Message framing": "no batch requests", so a batch is never
 * processed. What it is answered follows JSON-RPC 2.0 §6, narrowed to
 * one message: an empty array is one Invalid Request error; a batch of
 * notifications alone is answered with nothing, as §6 says ("the server
 * MUST NOT return an empty Array and should return nothing at all");
 * any other batch, which §6 would answer with an array of responses, gets
 * one Invalid Request error with id null, since no single request of it
 * is answered. Each is a violation. */
static int handle_batch(jpt__vfs_engine *e, uint64_t line, jpt__vfs_span batch)
{
    jpt__json_iter it;
    jpt__vfs_span element;
    bool any = false, only_notifications = true;

    jpt__json_iter_init(&it, batch);
    while (jpt__json_next_element(&it, &element)) {
        any = true;
        only_notifications = only_notifications && is_notification(element);
    }
    if (any && only_notifications)
        return violation(e, line, "a batch of notifications, not processed (D11 has no "
                                  "batches) and not answered (JSON-RPC 2.0 §6)");
    return reject(e, line, "null", JPT_VFS_E_INVALID_REQUEST,
                  any ? "Invalid Request: batches are not supported (D11)"
                      : "Invalid Request: an empty batch");
}

static int handle_line(jpt__vfs_engine *e, jpt__vfs_line *line)
{
    jpt__json_error jerr;
    char message[160];

    /* D11 framing as MCP's stdio transport: empty lines are ignored. */
    if (blank(line))
        return JPT_OK;
    e->messages++;
    if (jpt__json_validate(line->p, line->n, &jerr) < 0) {
        snprintf(message, sizeof(message), "Parse error: invalid JSON at byte %zu: %s",
                 jerr.offset, jerr.what);
        return reject(e, line->number, "null", JPT_VFS_E_PARSE, message);
    }
    jpt__vfs_span msg = {line->p, line->n};
    int type = jpt__json_type(msg);
    if (type == JPT__JSON_ARRAY)
        return handle_batch(e, line->number, msg);
    if (type != JPT__JSON_OBJECT)
        return reject(e, line->number, "null", JPT_VFS_E_INVALID_REQUEST,
                      "Invalid Request: a message must be a JSON object");
    return handle_message(e, line, msg);
}

/* ---- The engine ------------------------------------------------------------------------------------ */

static size_t or_default(size_t value, size_t fallback)
{
    return value != 0 ? value : fallback;
}

/* A JSON text of the init message: NULL is {}, anything else must be an
 * object. */
static int check_object(const char *text, const char *what, jpt__errbuf *err)
{
    jpt__json_error jerr;
    jpt__vfs_span v = {text, text != NULL ? strlen(text) : 0};

    if (text == NULL)
        return JPT_OK;
    if (jpt__json_validate(v.p, v.n, &jerr) < 0)
        return jpt__err(err, JPT_ERR_INVALID, "the tool's %s are not JSON: %s at byte %zu",
                        what, jerr.what, jerr.offset);
    if (jpt__json_type(v) != JPT__JSON_OBJECT)
        return jpt__err(err, JPT_ERR_INVALID, "the tool's %s must be a JSON object", what);
    return JPT_OK;
}

static int put_object(jpt__buf *b, const char *name, const char *text)
{
    int rc = jpt__buf_printf(b, ",\"%s\":", name);
    if (rc < 0)
        return rc;
    return text != NULL ? jpt__json_append_flat(b, text, strlen(text)) : put(b, "{}");
}

/* D11 "Initial context": the first message the tool reads. */
static int queue_init(jpt__vfs_engine *e, const jpt__vfs_init *init)
{
    jpt__buf *b = &e->out.buf;
    size_t mark;
    int rc = jpt__vfs_outq_begin(&e->out, 256, &mark);

    if (rc == JPT_OK &&
        (rc = put(b, "{\"jsonrpc\":\"2.0\",\"method\":\"init\",\"params\":{\"tool\":{\"name\":")) ==
            JPT_OK &&
        (rc = jpt__buf_json_string(b, init->name, strlen(init->name))) == JPT_OK &&
        (rc = put_object(b, "arguments", init->arguments)) == JPT_OK &&
        (rc = put_object(b, "answers", init->answers)) == JPT_OK &&
        (rc = put_object(b, "options", init->options)) == JPT_OK)
        rc = put(b, "},\"protocol_version\":\"" JPT_VFS_PROTOCOL_VERSION "\"}}");
    return jpt__vfs_outq_end(&e->out, mark, rc);
}

int jpt__vfs_engine_new(const jpt__vfs_limits *limits, const jpt__vfs_handlers *h,
                        const jpt__vfs_init *init, jpt__errbuf *err,
                        jpt__vfs_engine **out)
{
    jpt__vfs_limits none = {0};
    int rc;

    *out = NULL;
    if (h == NULL || h->state == NULL || init == NULL || init->name == NULL)
        return jpt__err(err, JPT_ERR_INVALID, "a VFS engine needs a state handler and a "
                                              "tool name");
    if ((rc = check_object(init->arguments, "arguments", err)) < 0 ||
        (rc = check_object(init->answers, "answers", err)) < 0 ||
        (rc = check_object(init->options, "options", err)) < 0)
        return rc;
    if (limits == NULL)
        limits = &none;
    jpt__vfs_engine *e = jpt__calloc(1, sizeof(*e));
    if (e == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory creating a VFS engine");
    e->limits.max_message = or_default(limits->max_message, JPT__VFS_MAX_MESSAGE);
    e->limits.max_violations = limits->max_violations != 0 ? limits->max_violations
                                                           : JPT__VFS_MAX_VIOLATIONS;
    e->limits.output_high_water = or_default(limits->output_high_water,
                                             JPT__VFS_OUTPUT_HIGH_WATER);
    e->limits.max_calls = or_default(limits->max_calls, JPT__VFS_MAX_CALLS);
    e->limits.max_call_bytes = or_default(limits->max_call_bytes, JPT__VFS_MAX_CALL_BYTES);
    e->limits.answer_budget = or_default(limits->answer_budget, JPT__VFS_ANSWER_BUDGET);
    e->h = *h;
    jpt__vfs_lines_init(&e->in, e->limits.max_message);
    if ((rc = queue_init(e, init)) < 0) {
        jpt__vfs_engine_free(e);
        return jpt__err(err, rc, "out of memory writing the init message");
    }
    *out = e;
    return JPT_OK;
}

void jpt__vfs_engine_free(jpt__vfs_engine *e)
{
    if (e == NULL)
        return;
    while (e->calls != NULL)
        call_free(e->calls);
    jpt__vfs_lines_free(&e->in);
    jpt__vfs_outq_free(&e->out);
    jpt__free(e);
}

bool jpt__vfs_engine_has_room(const jpt__vfs_engine *e)
{
    size_t queued = jpt__vfs_outq_pending(&e->out);

    return queued <= e->limits.answer_budget &&
           e->reserved <= e->limits.answer_budget - queued;
}

void jpt__vfs_engine_reserve(jpt__vfs_engine *e, size_t bytes)
{
    e->reserved = bytes <= SIZE_MAX - e->reserved ? e->reserved + bytes : SIZE_MAX;
}

void jpt__vfs_engine_release(jpt__vfs_engine *e, size_t bytes)
{
    e->reserved = bytes <= e->reserved ? e->reserved - bytes : 0;
}

bool jpt__vfs_engine_wants_input(const jpt__vfs_engine *e)
{
    return !e->failed && jpt__vfs_outq_pending(&e->out) <= e->limits.output_high_water &&
           jpt__vfs_engine_has_room(e) && e->ncalls < e->limits.max_calls &&
           e->call_bytes <= e->limits.max_call_bytes;
}

int jpt__vfs_engine_feed(jpt__vfs_engine *e, const char *p, size_t n, size_t *used)
{
    char message[128];
    int rc = JPT_OK;

    *used = 0;
    if (e->failed)
        return JPT_ERR_PROTOCOL;
    while (*used < n && jpt__vfs_engine_wants_input(e)) {
        jpt__vfs_line line;
        size_t took;
        int got = jpt__vfs_lines_next(&e->in, p + *used, n - *used, &took, &line);
        if (got < 0)
            return jpt__err(&e->err, got, "out of memory reading the tool's output");
        *used += took;
        if (got == JPT__LINE)
            rc = handle_line(e, &line);
        else if (got == JPT__LINE_TOO_LONG) {
            e->messages++;
            snprintf(message, sizeof(message),
                     "Invalid Request: message longer than the limit of %zu bytes",
                     e->limits.max_message);
            rc = reject(e, line.number, "null", JPT_VFS_E_INVALID_REQUEST, message);
        }
        if (rc < 0)
            return rc;
    }
    return JPT_OK;
}

int jpt__vfs_engine_eof(jpt__vfs_engine *e)
{
    uint64_t partial = jpt__vfs_lines_partial(&e->in);

    if (partial == 0)
        return JPT_OK;
    return jpt__err(&e->err, JPT_ERR_PROTOCOL,
                    "the tool's output ended inside a message (%llu bytes without a "
                    "newline)",
                    (unsigned long long)partial);
}

size_t jpt__vfs_engine_output(const jpt__vfs_engine *e, const char **p)
{
    *p = jpt__vfs_outq_data(&e->out);
    return jpt__vfs_outq_pending(&e->out);
}

void jpt__vfs_engine_output_done(jpt__vfs_engine *e, size_t n)
{
    jpt__vfs_outq_consume(&e->out, n);
}

/* D11 "Integration with the stateful tool protocol": each apply of the
 * model reaches the tool as {"input": …}. */
int jpt__vfs_engine_apply(jpt__vfs_engine *e, const char *input_json, size_t len)
{
    jpt__json_error jerr;
    size_t mark;

    if (jpt__json_validate(input_json, len, &jerr) < 0)
        return jpt__err(&e->err, JPT_ERR_INVALID, "the input to apply is not JSON: %s at byte %zu",
                        jerr.what, jerr.offset);
    int rc = jpt__vfs_outq_begin(&e->out, len + 64, &mark);
    if (rc == JPT_OK &&
        (rc = put(&e->out.buf,
                  "{\"jsonrpc\":\"2.0\",\"method\":\"apply\",\"params\":{\"input\":")) == JPT_OK &&
        (rc = jpt__json_append_flat(&e->out.buf, input_json, len)) == JPT_OK)
        rc = put(&e->out.buf, "}}");
    if ((rc = jpt__vfs_outq_end(&e->out, mark, rc)) < 0)
        return jpt__err(&e->err, rc, "out of memory writing apply to the tool");
    return JPT_OK;
}

int jpt__vfs_engine_cancel(jpt__vfs_engine *e)
{
    size_t mark;
    int rc = jpt__vfs_outq_begin(&e->out, 40, &mark);

    if (rc == JPT_OK)
        rc = put(&e->out.buf, "{\"jsonrpc\":\"2.0\",\"method\":\"cancel\"}");
    if ((rc = jpt__vfs_outq_end(&e->out, mark, rc)) < 0)
        return jpt__err(&e->err, rc, "out of memory writing cancel to the tool");
    return JPT_OK;
}

const char *jpt__vfs_engine_errmsg(const jpt__vfs_engine *e)
{
    return e->err.text;
}

unsigned jpt__vfs_engine_violations(const jpt__vfs_engine *e)
{
    return e->violations;
}

uint64_t jpt__vfs_engine_messages(const jpt__vfs_engine *e)
{
    return e->messages;
}

size_t jpt__vfs_engine_calls(const jpt__vfs_engine *e)
{
    return e->ncalls;
}
