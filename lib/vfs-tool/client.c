/* The tool side of a VFS session (D11), without I/O: what the host writes
 * (init, responses, apply, cancel, pending) comes in as bytes; requests and
 * the final notifications go out as bytes. The blocking SDK (tool.c) moves
 * the bytes. The host is trusted the way a program trusts its kernel: a
 * host that breaks the protocol fails the client rather than being argued
 * with. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vfs-tool.h"

/* Responses larger than this are not copied out of the line: the reply
 * takes the framer's buffer (fs.read of a large file). */
#define STEAL_THRESHOLD (64u << 10)

#define INIT_FIELDS 5

typedef struct entry {
    jpt__vfs_reply reply;
    char key[24]; /* the id in decimal, the map's key */
} entry;

struct jpt__vfs_client {
    jpt__vfs_lines in;
    jpt__vfs_outq out;
    size_t max_request;      /* the longest line sent */
    int status;
    bool closed;
    char *init[INIT_FIELDS]; /* JPT__VFS_INIT_*; NULL until init arrives */
    jpt__idmap replies;      /* outstanding and uncollected requests */
    uint64_t next_id;
    char **inputs;           /* applies; NULL marks a cancel */
    size_t ninputs, first_input, cap_inputs;
    bool cancelled;
    void (*pending_fn)(uint64_t id, const char *reason, void *ud);
    void *pending_ud;
    jpt__errbuf err;
};

static int fail(jpt__vfs_client *c, int status, const char *fmt, ...) JPT__PRINTF(3, 4);

static int fail(jpt__vfs_client *c, int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->err.text, sizeof(c->err.text), fmt, ap);
    va_end(ap);
    jpt__log(JPT_LOG_DEBUG, "%s (%s)", c->err.text, jpt_strerror(status));
    c->status = status;
    return status;
}

int jpt__vfs_client_new(size_t max_message, size_t max_request, jpt__vfs_client **out)
{
    jpt__vfs_client *c = jpt__calloc(1, sizeof(*c));

    *out = NULL;
    if (c == NULL)
        return JPT_ERR_NOMEM;
    jpt__vfs_lines_init(&c->in, max_message != 0 ? max_message : JPT_VFS_TOOL_MAX_MESSAGE);
    c->max_request = max_request != 0 ? max_request
                                      : JPT_VFS_CONTENT_LIMIT + JPT_VFS_ENVELOPE_LIMIT;
    jpt__idmap_init(&c->replies);
    *out = c;
    return JPT_OK;
}

static void entry_free(entry *en)
{
    jpt__free(en->reply.message);
    jpt__free(en->reply.storage);
    jpt__free(en->reply.data);
    jpt__free(en);
}

void jpt__vfs_client_free(jpt__vfs_client *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->replies.cap; i++)
        if (c->replies.slots[i].key != NULL)
            entry_free(c->replies.slots[i].value);
    jpt__idmap_free(&c->replies);
    for (size_t i = c->first_input; i < c->ninputs; i++)
        jpt__free(c->inputs[i]);
    jpt__free(c->inputs);
    for (int i = 0; i < INIT_FIELDS; i++)
        jpt__free(c->init[i]);
    jpt__vfs_lines_free(&c->in);
    jpt__vfs_outq_free(&c->out);
    jpt__free(c);
}

const char *jpt__vfs_client_errmsg(const jpt__vfs_client *c)
{
    return c->err.text;
}

int jpt__vfs_client_status(const jpt__vfs_client *c)
{
    return c->status;
}

bool jpt__vfs_client_closed(const jpt__vfs_client *c)
{
    return c->closed;
}

bool jpt__vfs_client_ready(const jpt__vfs_client *c)
{
    return c->init[JPT__VFS_INIT_NAME] != NULL;
}

const char *jpt__vfs_client_init(const jpt__vfs_client *c, int field)
{
    return field >= 0 && field < INIT_FIELDS ? c->init[field] : NULL;
}

bool jpt__vfs_client_cancelled(const jpt__vfs_client *c)
{
    return c->cancelled;
}

void jpt__vfs_client_on_pending(jpt__vfs_client *c,
                                void (*fn)(uint64_t id, const char *reason, void *ud),
                                void *ud)
{
    c->pending_fn = fn;
    c->pending_ud = ud;
}

/* ---- Reading what the host sent ---------------------------------------------- */

/* The members of `obj` named in `names`, absent ones with p NULL. */
static void members(jpt__vfs_span obj, const char *const *names, jpt__vfs_span *out)
{
    jpt__json_iter it;
    jpt__vfs_span key, value;

    for (size_t i = 0; names[i] != NULL; i++)
        out[i].p = NULL;
    jpt__json_iter_init(&it, obj);
    while (jpt__json_next_member(&it, &key, &value))
        for (size_t i = 0; names[i] != NULL; i++)
            if (jpt__json_key_is(key, names[i]))
                out[i] = value;
}

static jpt__vfs_span member(jpt__vfs_span obj, const char *name)
{
    const char *names[] = {name, NULL};
    jpt__vfs_span v = {NULL, 0};

    if (obj.p != NULL && jpt__json_type(obj) == JPT__JSON_OBJECT)
        members(obj, names, &v);
    return v;
}

/* A decoded copy of the string value `v` (NULL when absent or not a
 * string: `*ok` false only when out of memory). */
static char *string_copy(jpt__vfs_span v, bool *ok)
{
    *ok = true;
    if (v.p == NULL || jpt__json_type(v) != JPT__JSON_STRING)
        return NULL;
    char *s = jpt__malloc(v.n);
    if (s == NULL) {
        *ok = false;
        return NULL;
    }
    s[jpt__json_unescape(v, s)] = '\0';
    return s;
}

/* A copy of the JSON text `v`, or of `fallback` when absent. */
static char *text_copy(jpt__vfs_span v, const char *fallback)
{
    return v.p != NULL ? jpt__memdup0(v.p, v.n) : jpt__strdup(fallback);
}

/* D11 "Initial context". */
static int take_init(jpt__vfs_client *c, jpt__vfs_span params)
{
    static const char *const names[] = {"name", "arguments", "answers", "options", NULL};
    jpt__vfs_span tool = member(params, "tool"), m[4];
    char *got[INIT_FIELDS];
    bool ok;

    if (tool.p == NULL || jpt__json_type(tool) != JPT__JSON_OBJECT)
        return fail(c, JPT_ERR_PROTOCOL, "the host's init message has no params.tool object");
    members(tool, names, m);
    got[JPT__VFS_INIT_NAME] = string_copy(m[0], &ok);
    if (ok && got[JPT__VFS_INIT_NAME] == NULL)
        return fail(c, JPT_ERR_PROTOCOL, "the host's init message has no params.tool.name");
    got[JPT__VFS_INIT_ARGUMENTS] = text_copy(m[1], "{}");
    got[JPT__VFS_INIT_ANSWERS] = text_copy(m[2], "{}");
    got[JPT__VFS_INIT_OPTIONS] = text_copy(m[3], "{}");
    got[JPT__VFS_INIT_VERSION] = string_copy(member(params, "protocol_version"), &ok);
    if (ok && got[JPT__VFS_INIT_VERSION] == NULL)
        got[JPT__VFS_INIT_VERSION] = jpt__strdup("");
    bool complete = true;
    for (int i = 0; i < INIT_FIELDS; i++)
        complete &= got[i] != NULL;
    if (!complete) {
        for (int i = 0; i < INIT_FIELDS; i++)
            jpt__free(got[i]);
        return fail(c, JPT_ERR_NOMEM, "out of memory reading the init message");
    }
    memcpy(c->init, got, sizeof(got));
    return JPT_OK;
}

/* Queues an input (an apply's JSON, or NULL for a cancel). */
static int push_input(jpt__vfs_client *c, char *json)
{
    if (c->first_input > 0 && c->first_input == c->ninputs)
        c->first_input = c->ninputs = 0;
    char **v = jpt__array_reserve(c->inputs, &c->cap_inputs, c->ninputs + 1, sizeof(*v), 8);
    if (v == NULL) {
        jpt__free(json);
        return fail(c, JPT_ERR_NOMEM, "out of memory taking the host's input");
    }
    c->inputs = v;
    c->inputs[c->ninputs++] = json;
    return JPT_OK;
}

/* D11 "Cancellation": the tool should stop; every request still waiting
 * for its response ends now, so a tool blocked on the policy prompt can. */
static int take_cancel(jpt__vfs_client *c)
{
    c->cancelled = true;
    for (size_t i = 0; i < c->replies.cap; i++) {
        entry *en = c->replies.slots[i].value;
        if (c->replies.slots[i].key == NULL || en->reply.done)
            continue;
        en->reply.done = true;
        en->reply.code = JPT_VFS_E_CANCELLED;
    }
    return push_input(c, NULL);
}

static int take_pending(jpt__vfs_client *c, jpt__vfs_span params)
{
    static const char *const names[] = {"request_id", "reason", NULL};
    jpt__vfs_span m[2];
    uint64_t id = 0;
    bool ok;

    if (params.p == NULL || jpt__json_type(params) != JPT__JSON_OBJECT)
        return JPT_OK;
    members(params, names, m);
    /* vfs_tool.h: the request's id, 0 when it is not one of ours (never
     * sent, or collected already). */
    if (m[0].p != NULL && !jpt__json_uint(m[0], UINT64_MAX, &id))
        id = 0;
    if (id != 0 && jpt__vfs_client_reply(c, id) == NULL)
        id = 0;
    char *reason = string_copy(m[1], &ok);
    if (!ok)
        return fail(c, JPT_ERR_NOMEM, "out of memory reading a pending notification");
    if (c->pending_fn != NULL)
        c->pending_fn(id, reason != NULL ? reason : "", c->pending_ud);
    jpt__free(reason);
    return JPT_OK;
}

static int take_notification(jpt__vfs_client *c, jpt__vfs_span method, jpt__vfs_span params)
{
    jpt__vfs_span name = {method.p + 1, method.n - 2};

    if (jpt__json_key_is(name, "init")) {
        if (jpt__vfs_client_ready(c)) {
            jpt__log(JPT_LOG_WARNING, "VFS host sent init twice; the second is ignored");
            return JPT_OK;
        }
        return take_init(c, params);
    }
    if (!jpt__vfs_client_ready(c))
        return fail(c, JPT_ERR_PROTOCOL, "the host's first message is not init");
    if (jpt__json_key_is(name, "apply")) {
        jpt__vfs_span input = member(params, "input");
        char *json = text_copy(input, "null");
        if (json == NULL)
            return fail(c, JPT_ERR_NOMEM, "out of memory taking the host's input");
        return push_input(c, json);
    }
    if (jpt__json_key_is(name, "cancel"))
        return take_cancel(c);
    if (jpt__json_key_is(name, "pending"))
        return take_pending(c, params);
    jpt__log(JPT_LOG_WARNING, "VFS host sent an unknown notification; ignored");
    return JPT_OK;
}

/* The result's own copy: copied when small; when large and in the
 * framer's buffer, that buffer itself. */
static int keep_result(jpt__vfs_client *c, jpt__vfs_line *line, jpt__vfs_span result,
                       jpt__vfs_reply *r)
{
    if (line->in_buffer && result.n >= STEAL_THRESHOLD) {
        size_t offset = (size_t)(result.p - line->p);
        r->storage = jpt__vfs_lines_steal(&c->in);
        r->result.p = r->storage + offset;
        r->result.n = result.n;
        return JPT_OK;
    }
    r->storage = jpt__memdup0(result.p, result.n);
    if (r->storage == NULL)
        return fail(c, JPT_ERR_NOMEM, "out of memory keeping a response");
    r->result.p = r->storage;
    r->result.n = result.n;
    return JPT_OK;
}

static int keep_error(jpt__vfs_client *c, jpt__vfs_span error, jpt__vfs_reply *r)
{
    static const char *const names[] = {"code", "message", "data", NULL};
    jpt__vfs_span m[3];
    bool ok;

    if (jpt__json_type(error) != JPT__JSON_OBJECT)
        return fail(c, JPT_ERR_PROTOCOL, "the host answered with an error that is not an object");
    members(error, names, m);
    /* JSON-RPC error codes are negative integers. */
    uint64_t magnitude;
    if (m[0].p == NULL || m[0].n < 2 || m[0].p[0] != '-' ||
        !jpt__json_uint((jpt__vfs_span){m[0].p + 1, m[0].n - 1}, INT32_MAX, &magnitude) ||
        magnitude == 0)
        return fail(c, JPT_ERR_PROTOCOL, "the host answered with an error without a "
                                         "negative integer code");
    r->message = string_copy(m[1], &ok);
    if (ok && (r->message == NULL || r->message[0] == '\0')) {
        /* Without a message the tool would be told nothing at all. */
        char text[80];
        snprintf(text, sizeof(text), "the host answered with error -%" PRIu64 " and no message",
                 magnitude);
        jpt__free(r->message);
        r->message = jpt__strdup(text);
    }
    if (r->message == NULL)
        return fail(c, JPT_ERR_NOMEM, "out of memory keeping an error response");
    /* JSON-RPC's optional data: kept as JSON text (a timed-out
     * process.run's output, say). */
    if (m[2].p != NULL && (r->data = jpt__memdup0(m[2].p, m[2].n)) == NULL)
        return fail(c, JPT_ERR_NOMEM, "out of memory keeping an error response");
    r->code = -(int)magnitude;
    return JPT_OK;
}

static int take_response(jpt__vfs_client *c, jpt__vfs_line *line, jpt__vfs_span id,
                         jpt__vfs_span result, jpt__vfs_span error)
{
    char key[24];

    if (id.p == NULL || (result.p == NULL) == (error.p == NULL))
        return fail(c, JPT_ERR_PROTOCOL, "line %" PRIu64 " from the host is neither a "
                                         "notification nor a response",
                    line->number);
    /* JSON-RPC answers with id null what it could not read. This client
     * sends only well-formed requests within the size limit, so the host
     * and this tool disagree on something basic: no response will come
     * for the request it could not read, and waiting would be forever. */
    if (jpt__json_type(id) == JPT__JSON_NULL) {
        jpt__vfs_span message = member(error, "message");
        bool ok;
        char *text = string_copy(message, &ok);
        fail(c, JPT_ERR_PROTOCOL, "the host could not read a request: %s",
             text != NULL ? text : "no message");
        jpt__free(text);
        return c->status;
    }
    snprintf(key, sizeof(key), "%.*s", id.n < sizeof(key) ? (int)id.n : 0, id.p);
    entry *en = jpt__idmap_get(&c->replies, key);
    if (en == NULL || en->reply.done) {
        /* A request forgotten or already ended by a cancel. */
        jpt__log(JPT_LOG_INFO, "VFS host answered request %s, which no one waits for", key);
        return JPT_OK;
    }
    int rc = result.p != NULL ? keep_result(c, line, result, &en->reply)
                              : keep_error(c, error, &en->reply);
    en->reply.done = rc == JPT_OK;
    return rc;
}

static int take_message(jpt__vfs_client *c, jpt__vfs_line *line)
{
    static const char *const names[] = {"method", "params", "id", "result", "error", NULL};
    jpt__json_error jerr;
    jpt__vfs_span m[5], msg = {line->p, line->n};

    if (jpt__json_validate(line->p, line->n, &jerr) < 0)
        return fail(c, JPT_ERR_PROTOCOL, "line %" PRIu64 " from the host is not JSON: %s at "
                                         "byte %zu",
                    line->number, jerr.what, jerr.offset);
    if (jpt__json_type(msg) != JPT__JSON_OBJECT)
        return fail(c, JPT_ERR_PROTOCOL, "line %" PRIu64 " from the host is not a JSON object",
                    line->number);
    members(msg, names, m);
    if (m[0].p != NULL && jpt__json_type(m[0]) == JPT__JSON_STRING)
        return take_notification(c, m[0], m[1]);
    if (!jpt__vfs_client_ready(c))
        return fail(c, JPT_ERR_PROTOCOL, "the host's first message is not init");
    return take_response(c, line, m[2], m[3], m[4]);
}

static bool blank(const jpt__vfs_line *line)
{
    for (size_t i = 0; i < line->n; i++)
        if (line->p[i] != ' ' && line->p[i] != '\t' && line->p[i] != '\r')
            return false;
    return true;
}

int jpt__vfs_client_feed(jpt__vfs_client *c, const char *p, size_t n)
{
    size_t used = 0;

    while (c->status == JPT_OK && used < n) {
        jpt__vfs_line line;
        size_t took;
        int got = jpt__vfs_lines_next(&c->in, p + used, n - used, &took, &line);
        if (got < 0)
            return fail(c, got, "out of memory reading from the host");
        used += took;
        if (got == JPT__LINE_TOO_LONG)
            return fail(c, JPT_ERR_LIMIT, "line %" PRIu64 " from the host is longer than "
                                          "the limit of %zu bytes",
                        line.number, c->in.limit);
        if (got == JPT__LINE && !blank(&line))
            take_message(c, &line);
    }
    return c->status;
}

void jpt__vfs_client_eof(jpt__vfs_client *c)
{
    c->closed = true;
}

bool jpt__vfs_client_next_input(jpt__vfs_client *c, char **input_json)
{
    if (c->first_input == c->ninputs)
        return false;
    *input_json = c->inputs[c->first_input++];
    return true;
}

/* ---- Writing to the host ---------------------------------------------------------- */

size_t jpt__vfs_client_output(const jpt__vfs_client *c, const char **p)
{
    *p = jpt__vfs_outq_data(&c->out);
    return jpt__vfs_outq_pending(&c->out);
}

void jpt__vfs_client_output_done(jpt__vfs_client *c, size_t n)
{
    jpt__vfs_outq_consume(&c->out, n);
}

jpt__vfs_reply *jpt__vfs_client_reply(jpt__vfs_client *c, uint64_t id)
{
    char key[24];

    snprintf(key, sizeof(key), "%" PRIu64, id);
    entry *en = jpt__idmap_get(&c->replies, key);
    return en != NULL ? &en->reply : NULL;
}

void jpt__vfs_client_forget(jpt__vfs_client *c, uint64_t id)
{
    char key[24];

    snprintf(key, sizeof(key), "%" PRIu64, id);
    entry *en = jpt__idmap_get(&c->replies, key);
    if (en == NULL)
        return;
    jpt__idmap_remove(&c->replies, en->key, en);
    entry_free(en);
}

/* A request that could not be sent: the message says why, and the client
 * stays usable (the caller reports the status). */
static int refuse(jpt__vfs_client *c, int status, const char *fmt, ...) JPT__PRINTF(3, 4);

static int refuse(jpt__vfs_client *c, int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->err.text, sizeof(c->err.text), fmt, ap);
    va_end(ap);
    return status;
}

/* The start of a request: a new id, its entry, and the message's head up
 * to the method's name. *out is NULL when nothing was started. */
static int begin_request(jpt__vfs_client *c, const char *method, size_t size, size_t *mark,
                         entry **out)
{
    jpt__buf *b = &c->out.buf;
    int rc;

    *out = NULL;
    if (c->status != JPT_OK)
        return c->status;
    entry *en = jpt__calloc(1, sizeof(*en));
    if (en == NULL)
        return refuse(c, JPT_ERR_NOMEM, "out of memory sending %s", method);
    snprintf(en->key, sizeof(en->key), "%" PRIu64, c->next_id + 1);
    if ((rc = jpt__idmap_put(&c->replies, en->key, en)) < 0) {
        jpt__free(en);
        return refuse(c, rc, "out of memory sending %s", method);
    }
    *out = en;
    if ((rc = jpt__vfs_outq_begin(&c->out, size + 64 + strlen(method), mark)) == JPT_OK &&
        (rc = jpt__buf_printf(b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":", en->key)) ==
            JPT_OK)
        rc = jpt__buf_json_string(b, method, strlen(method));
    return rc;
}

/* Ends the request begun with begin_request: queued with the next id, or
 * undone. */
static int end_request(jpt__vfs_client *c, size_t mark, entry *en, int rc, uint64_t *id)
{
    if (en == NULL)
        return rc;
    if (rc == JPT_OK && c->out.buf.len - mark > c->max_request)
        rc = refuse(c, JPT_ERR_LIMIT, "the request is %zu bytes, more than the %zu a message "
                                      "to the host may have",
                    c->out.buf.len - mark, c->max_request);
    if ((rc = jpt__vfs_outq_end(&c->out, mark, rc)) < 0) {
        jpt__idmap_remove(&c->replies, en->key, en);
        entry_free(en);
        return rc == JPT_ERR_NOMEM ? refuse(c, rc, "out of memory sending a request") : rc;
    }
    *id = ++c->next_id;
    return JPT_OK;
}

int jpt__vfs_client_request(jpt__vfs_client *c, const char *method, const char *params_json,
                            uint64_t *id)
{
    jpt__json_error jerr;
    size_t len = params_json != NULL ? strlen(params_json) : 0, mark = 0;
    entry *en;

    if (params_json != NULL && jpt__json_validate(params_json, len, &jerr) < 0)
        return refuse(c, JPT_ERR_INVALID, "the params of %s are not JSON: %s at byte %zu",
                      method, jerr.what, jerr.offset);
    int rc = begin_request(c, method, len, &mark, &en);
    if (rc == JPT_OK && params_json != NULL &&
        (rc = jpt__buf_puts(&c->out.buf, ",\"params\":")) == JPT_OK)
        rc = jpt__json_append_flat(&c->out.buf, params_json, len);
    if (rc == JPT_OK)
        rc = jpt__buf_putc(&c->out.buf, '}');
    return end_request(c, mark, en, rc, id);
}

/* Appends `"name":"text"`, refusing text that is not UTF-8: a path the
 * host would read differently from the tool must not be sent. */
static int put_path(jpt__vfs_client *c, const char *name, const char *text)
{
    size_t len = strlen(text), size = jpt__json_quoted_size(text, len, false);
    jpt__buf *b = &c->out.buf;
    int rc;

    if (size == 0)
        return refuse(c, JPT_ERR_INVALID, "the %s '%s' is not valid UTF-8", name, text);
    if ((rc = jpt__buf_printf(b, "\"%s\":", name)) < 0 || (rc = jpt__buf_reserve(b, size)) < 0)
        return rc;
    jpt__json_quote(b->data + b->len, text, len);
    b->len += size;
    b->data[b->len] = '\0';
    return JPT_OK;
}

int jpt__vfs_client_request_path(jpt__vfs_client *c, int method, const char *path,
                                 uint64_t *id)
{
    size_t mark = 0;
    entry *en;
    int rc = begin_request(c, jpt__vfs_method_name(method), strlen(path) * 6 + 32, &mark, &en);

    if (rc == JPT_OK && (rc = jpt__buf_puts(&c->out.buf, ",\"params\":{")) == JPT_OK &&
        (rc = put_path(c, "path", path)) == JPT_OK)
        rc = jpt__buf_puts(&c->out.buf, "}}");
    return end_request(c, mark, en, rc, id);
}

int jpt__vfs_client_request_rename(jpt__vfs_client *c, const char *from, const char *to,
                                   uint64_t *id)
{
    size_t mark = 0;
    entry *en;
    int rc = begin_request(c, "fs.rename", (strlen(from) + strlen(to)) * 6 + 32, &mark, &en);

    if (rc == JPT_OK && (rc = jpt__buf_puts(&c->out.buf, ",\"params\":{")) == JPT_OK &&
        (rc = put_path(c, "from", from)) == JPT_OK &&
        (rc = jpt__buf_putc(&c->out.buf, ',')) == JPT_OK && (rc = put_path(c, "to", to)) == JPT_OK)
        rc = jpt__buf_puts(&c->out.buf, "}}");
    return end_request(c, mark, en, rc, id);
}

/* D11 fs.write: text when the bytes are UTF-8 without NUL, else base64;
 * either way written straight into the output queue. */
int jpt__vfs_client_request_write(jpt__vfs_client *c, const char *path, const void *data,
                                  size_t len, uint64_t *id)
{
    jpt__buf *b = &c->out.buf;
    size_t mark = 0;
    entry *en;
    bool base64;
    int rc = begin_request(c, "fs.write", strlen(path) * 6 + 64, &mark, &en);

    if (rc == JPT_OK && (rc = jpt__buf_puts(b, ",\"params\":{")) == JPT_OK &&
        (rc = put_path(c, "path", path)) == JPT_OK &&
        (rc = jpt__buf_puts(b, ",\"content\":")) == JPT_OK &&
        (rc = jpt__buf_content(b, data, len, &base64)) == JPT_OK)
        rc = jpt__buf_puts(b, base64 ? ",\"encoding\":\"base64\"}}" : "}}");
    return end_request(c, mark, en, rc, id);
}

int jpt__vfs_client_notify(jpt__vfs_client *c, const char *method, const char *params_json,
                           size_t len)
{
    jpt__json_error jerr;
    jpt__buf *b = &c->out.buf;
    size_t mark;

    if (c->status != JPT_OK)
        return c->status;
    if (jpt__json_validate(params_json, len, &jerr) < 0)
        return refuse(c, JPT_ERR_INVALID,
                      "the params of the %s notification are not JSON: %s at byte %zu", method,
                      jerr.what, jerr.offset);
    int rc = jpt__vfs_outq_begin(&c->out, len + 64, &mark);
    if (rc == JPT_OK &&
        (rc = jpt__buf_printf(b, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":", method)) ==
            JPT_OK &&
        (rc = jpt__json_append_flat(b, params_json, len)) == JPT_OK)
        rc = jpt__buf_putc(b, '}');
    if (rc == JPT_OK && c->out.buf.len - mark > c->max_request)
        rc = refuse(c, JPT_ERR_LIMIT, "the %s notification is %zu bytes, more than the %zu a "
                                      "message to the host may have",
                    method, c->out.buf.len - mark, c->max_request);
    if ((rc = jpt__vfs_outq_end(&c->out, mark, rc)) < 0)
        return rc == JPT_ERR_NOMEM
                   ? refuse(c, rc, "out of memory sending the %s notification", method)
                   : rc;
    return JPT_OK;
}
