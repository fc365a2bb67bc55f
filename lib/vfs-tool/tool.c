/* The blocking tool SDK (include/jptool/vfs_tool.h): the tool-side engine
 * (client.c) with poll(), read() and write() on the tool's two fds. Both
 * directions move in every wait, so a tool writing a large request while
 * the host writes a large response never deadlocks (D11 "Deadlock
 * prevention"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vfs-tool.h"

/* One read() takes up to this much of the host's output. */
#define READ_CHUNK (256u << 10)

/* Submitting stops to write when this much output is queued. */
#define SUBMIT_HIGH_WATER (1u << 20)

struct jpt_vfs_tool {
    jpt__vfs_client *client;
    int in_fd, out_fd;
    int in_flags, out_flags; /* as found, restored at free; -1: untouched */
    int code;                /* JSON-RPC code of the last failure, or 0 */
    char *error_data;        /* its error's data as JSON text, or NULL */
    jpt_vfs_connect_options opts; /* a copy: the caller's may be gone */
    char *chunk;             /* READ_CHUNK bytes */
    jpt__errbuf err;
};

static int tool_err(jpt_vfs_tool *t, int status, const char *fmt, ...) JPT__PRINTF(3, 4);

static int tool_err(jpt_vfs_tool *t, int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(t->err.text, sizeof(t->err.text), fmt, ap);
    va_end(ap);
    t->code = 0;
    return status;
}

/* A failure the client described. */
static int client_err(jpt_vfs_tool *t, int status)
{
    return tool_err(t, status, "%s", jpt__vfs_client_errmsg(t->client));
}

/* The status for a JSON-RPC error code (vfs_tool.h, "Errors"). */
static int status_of_code(int code)
{
    switch (code) {
    case JPT_VFS_E_ACCESS_DENIED:
        return JPT_ERR_DENIED;
    case JPT_VFS_E_NOT_FOUND:
        return JPT_ERR_NOT_FOUND;
    case JPT_VFS_E_EXISTS:
        return JPT_ERR_EXISTS;
    case JPT_VFS_E_TIMEOUT:
        return JPT_ERR_TIMEOUT;
    case JPT_VFS_E_CANCELLED:
        return JPT_ERR_CANCELLED;
    case JPT_VFS_E_METHOD_NOT_FOUND:
        return JPT_ERR_UNSUPPORTED;
    case JPT_VFS_E_INVALID_REQUEST:
    case JPT_VFS_E_INVALID_PARAMS:
    case JPT_VFS_E_PARSE:
        return JPT_ERR_INVALID;
    default:
        return JPT_ERR_IO;
    }
}

/* ---- Moving bytes -------------------------------------------------------------- */

/* write() that turns a closed pipe into EPIPE without dying of SIGPIPE,
 * whatever the program's disposition: the signal is blocked during the
 * call and a pending one taken back (as libcurl and git do). */
static ssize_t write_quietly(int fd, const void *p, size_t n)
{
    sigset_t pipe_set, old;
    struct timespec zero = {0, 0};

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t w = write(fd, p, n);
    int saved = errno;
    if (w < 0 && saved == EPIPE && !sigismember(&old, SIGPIPE))
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return w;
}

/* Writes queued output until it is all written or the pipe is full. */
static int write_some(jpt_vfs_tool *t)
{
    const char *p;
    size_t n;

    while ((n = jpt__vfs_client_output(t->client, &p)) > 0) {
        ssize_t w = write_quietly(t->out_fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return JPT_OK;
        if (w < 0)
            return tool_err(t, JPT_ERR_IO, "writing to the host: %s",
                            errno == EPIPE ? "the host closed the tool's stdout"
                                           : strerror(errno));
        jpt__vfs_client_output_done(t->client, (size_t)w);
    }
    return JPT_OK;
}

/* One read() of what the host wrote, fed to the client. */
static int read_some(jpt_vfs_tool *t)
{
    ssize_t got = read(t->in_fd, t->chunk, READ_CHUNK);

    if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
        return JPT_OK;
    if (got < 0)
        return tool_err(t, JPT_ERR_IO, "reading from the host: %s", strerror(errno));
    if (got == 0) {
        jpt__vfs_client_eof(t->client);
        return JPT_OK;
    }
    int rc = jpt__vfs_client_feed(t->client, t->chunk, (size_t)got);
    return rc < 0 ? client_err(t, rc) : JPT_OK;
}

/* What a wait waits for: `ready` says whether it has come; `what` names it
 * for the message when the host closes the tool's stdin first. */
typedef struct wait_for {
    bool (*ready)(jpt_vfs_tool *t, void *arg);
    void *arg;
    const char *what;
} wait_for;

/* Moves bytes both ways until the awaited thing is ready. */
static int pump(jpt_vfs_tool *t, const wait_for *w)
{
    for (;;) {
        int rc = write_some(t);
        if (rc < 0)
            return rc;
        if (w->ready(t, w->arg))
            return JPT_OK;
        if ((rc = jpt__vfs_client_status(t->client)) < 0)
            return client_err(t, rc);
        const char *p;
        bool want_read = !jpt__vfs_client_closed(t->client);
        bool want_write = jpt__vfs_client_output(t->client, &p) > 0;
        if (!want_read && !want_write)
            return tool_err(t, JPT_ERR_IO, "the host closed the tool's stdin before %s",
                            w->what);
        struct pollfd fds[2];
        nfds_t n = 0;
        if (want_read)
            fds[n++] = (struct pollfd){.fd = t->in_fd, .events = POLLIN};
        if (want_write)
            fds[n++] = (struct pollfd){.fd = t->out_fd, .events = POLLOUT};
        if (poll(fds, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            return tool_err(t, JPT_ERR_IO, "poll: %s", strerror(errno));
        }
        if (want_read && fds[0].revents != 0 && (rc = read_some(t)) < 0)
            return rc;
    }
}

static bool output_written(jpt_vfs_tool *t, void *arg)
{
    const char *p;
    (void)arg;
    return jpt__vfs_client_output(t->client, &p) == 0;
}

static bool output_below_high_water(jpt_vfs_tool *t, void *arg)
{
    const char *p;
    (void)arg;
    return jpt__vfs_client_output(t->client, &p) <= SUBMIT_HIGH_WATER;
}

static int flush(jpt_vfs_tool *t)
{
    wait_for w = {output_written, NULL, "everything was written"};
    return pump(t, &w);
}

/* ---- Connecting ------------------------------------------------------------------- */

static bool initialised(jpt_vfs_tool *t, void *arg)
{
    (void)arg;
    return jpt__vfs_client_ready(t->client);
}

static void pending_relay(uint64_t id, const char *reason, void *ud)
{
    const jpt_vfs_tool *t = ud;
    t->opts.on_pending(id, reason, t->opts.ud);
}

/* Puts `fd` in non-blocking mode, remembering its flags in *saved. */
static int make_nonblocking(jpt_vfs_tool *t, int fd, int *saved)
{
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0)
        return tool_err(t, JPT_ERR_IO, "fcntl(%d): %s", fd, strerror(errno));
    if (flags & O_NONBLOCK)
        return JPT_OK;
    if (fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return tool_err(t, JPT_ERR_IO, "fcntl(%d): %s", fd, strerror(errno));
    *saved = flags;
    return JPT_OK;
}

JPT_EXPORT int jpt_vfs_tool_connect(jpt_vfs_tool **out)
{
    return jpt_vfs_tool_connect_fds(0, 1, NULL, out);
}

static int check_options(const jpt_vfs_connect_options *opts, jpt_vfs_connect_options *copy)
{
    memset(copy, 0, sizeof(*copy));
    if (opts == NULL)
        return JPT_OK;
    int rc = jpt__struct_check(opts, opts->size, sizeof(*opts));
    if (rc == JPT_OK)
        *copy = *opts;
    return rc;
}

JPT_EXPORT int jpt_vfs_tool_connect_fds(int in_fd, int out_fd,
                                        const jpt_vfs_connect_options *opts,
                                        jpt_vfs_tool **out)
{
    jpt_vfs_connect_options o;
    int rc;

    jpt__fail_clear();
    if (out == NULL)
        return jpt__fail(JPT_ERR_INVALID, "jpt_vfs_tool_connect: out is NULL");
    *out = NULL;
    jpt_vfs_tool *t = jpt__calloc(1, sizeof(*t));
    if (t == NULL)
        return jpt__fail(JPT_ERR_NOMEM, "jpt_vfs_tool_connect: out of memory");
    t->in_fd = in_fd;
    t->out_fd = out_fd;
    t->in_flags = t->out_flags = -1;
    if ((rc = check_options(opts, &o)) < 0) {
        jpt__free(t);
        return jpt__fail(rc, rc == JPT_ERR_INVALID
                                 ? "jpt_vfs_tool_connect: opts->size is less than "
                                   "jpt_vfs_connect_options"
                                 : "jpt_vfs_tool_connect: opts sets fields this jptool does "
                                   "not know (built against a newer one)");
    }
    if (in_fd < 0 || out_fd < 0)
        rc = jpt__fail(JPT_ERR_INVALID, "jpt_vfs_tool_connect: %s is %d, not a file descriptor",
                       in_fd < 0 ? "in_fd" : "out_fd", in_fd < 0 ? in_fd : out_fd);
    else if ((rc = jpt__vfs_client_new(o.max_message, o.max_request, &t->client)) == JPT_OK &&
             (t->chunk = jpt__malloc(READ_CHUNK)) == NULL)
        rc = JPT_ERR_NOMEM;
    if (rc == JPT_ERR_NOMEM)
        jpt__fail(rc, "jpt_vfs_tool_connect: out of memory");
    if (rc < 0) {
        jpt_vfs_tool_free(t);
        return rc;
    }
    *out = t;
    t->opts = o;
    if (o.on_pending != NULL)
        jpt__vfs_client_on_pending(t->client, pending_relay, t);
    if ((rc = make_nonblocking(t, in_fd, &t->in_flags)) < 0 ||
        (rc = make_nonblocking(t, out_fd, &t->out_flags)) < 0)
        return rc;
    wait_for w = {initialised, NULL, "sending init"};
    return pump(t, &w);
}

JPT_EXPORT void jpt_vfs_tool_free(jpt_vfs_tool *t)
{
    if (t == NULL)
        return;
    if (t->in_flags >= 0)
        fcntl(t->in_fd, F_SETFL, t->in_flags);
    if (t->out_flags >= 0)
        fcntl(t->out_fd, F_SETFL, t->out_flags);
    jpt__vfs_client_free(t->client);
    jpt__free(t->chunk);
    jpt__free(t->error_data);
    jpt__free(t);
}

JPT_EXPORT const char *jpt_vfs_tool_errmsg(const jpt_vfs_tool *t)
{
    return t != NULL ? t->err.text : "";
}

JPT_EXPORT int jpt_vfs_tool_error_code(const jpt_vfs_tool *t)
{
    return t != NULL ? t->code : 0;
}

JPT_EXPORT const char *jpt_vfs_tool_error_data(const jpt_vfs_tool *t)
{
    return t != NULL && t->code != 0 ? t->error_data : NULL;
}

static const char *init_field(const jpt_vfs_tool *t, int field)
{
    return t != NULL && t->client != NULL ? jpt__vfs_client_init(t->client, field) : NULL;
}

JPT_EXPORT const char *jpt_vfs_tool_name(const jpt_vfs_tool *t)
{
    return init_field(t, JPT__VFS_INIT_NAME);
}

JPT_EXPORT const char *jpt_vfs_tool_arguments(const jpt_vfs_tool *t)
{
    return init_field(t, JPT__VFS_INIT_ARGUMENTS);
}

JPT_EXPORT const char *jpt_vfs_tool_answers(const jpt_vfs_tool *t)
{
    return init_field(t, JPT__VFS_INIT_ANSWERS);
}

JPT_EXPORT const char *jpt_vfs_tool_options(const jpt_vfs_tool *t)
{
    return init_field(t, JPT__VFS_INIT_OPTIONS);
}

JPT_EXPORT const char *jpt_vfs_tool_protocol_version(const jpt_vfs_tool *t)
{
    return init_field(t, JPT__VFS_INIT_VERSION);
}

/* ---- Requests and their replies --------------------------------------------------------- */

/* Checks that a call can be made: a connected tool and the pointers it
 * needs. Clears the last error. */
static int usable(jpt_vfs_tool *t, bool args_ok)
{
    if (t == NULL)
        return JPT_ERR_INVALID;
    if (!args_ok)
        return tool_err(t, JPT_ERR_INVALID, "a required argument is NULL");
    if (t->client == NULL || !jpt__vfs_client_ready(t->client))
        return tool_err(t, JPT_ERR_STATE, "the tool is not connected");
    int rc = jpt__vfs_client_status(t->client);
    if (rc < 0)
        return client_err(t, rc);
    t->code = 0;
    t->err.text[0] = '\0';
    jpt__free(t->error_data);
    t->error_data = NULL;
    return JPT_OK;
}

static bool reply_arrived(jpt_vfs_tool *t, void *arg)
{
    jpt__vfs_reply *r = jpt__vfs_client_reply(t->client, *(uint64_t *)arg);
    return r == NULL || r->done;
}

/* Waits for request `id`'s reply: JPT_OK with *out, or the host's error
 * (the id then forgotten). */
static int wait_reply(jpt_vfs_tool *t, uint64_t id, jpt__vfs_reply **out)
{
    char what[64];
    int rc;

    if (jpt__vfs_client_reply(t->client, id) == NULL)
        return tool_err(t, JPT_ERR_NOT_FOUND, "request %llu is not outstanding",
                        (unsigned long long)id);
    snprintf(what, sizeof(what), "answering request %llu", (unsigned long long)id);
    wait_for w = {reply_arrived, &id, what};
    if ((rc = pump(t, &w)) < 0)
        return rc;
    jpt__vfs_reply *r = jpt__vfs_client_reply(t->client, id);
    if (r->code != 0) {
        rc = tool_err(t, status_of_code(r->code), "%s",
                      r->message != NULL ? r->message : "cancelled by the host");
        t->code = r->code;
        jpt__free(t->error_data);
        t->error_data = r->data;
        r->data = NULL;
        jpt__vfs_client_forget(t->client, id);
        return rc;
    }
    *out = r;
    return JPT_OK;
}

/* After a request was queued: writes what the pipe takes now. */
static int sent(jpt_vfs_tool *t, int rc)
{
    if (rc < 0)
        return client_err(t, rc);
    if ((rc = write_some(t)) < 0)
        return rc;
    const char *p;
    if (jpt__vfs_client_output(t->client, &p) > SUBMIT_HIGH_WATER) {
        wait_for w = {output_below_high_water, NULL, "taking the requests"};
        return pump(t, &w);
    }
    return JPT_OK;
}

/* The member `name` of the result object (p NULL when absent). */
static jpt__vfs_span result_member(const jpt__vfs_reply *r, const char *name)
{
    jpt__json_iter it;
    jpt__vfs_span key, value, none = {NULL, 0};

    if (jpt__json_type(r->result) != JPT__JSON_OBJECT)
        return none;
    jpt__json_iter_init(&it, r->result);
    while (jpt__json_next_member(&it, &key, &value))
        if (jpt__json_key_is(key, name))
            return value;
    return none;
}

/* Hands the reply's storage to the caller holding `n` bytes moved to its
 * start, NUL-terminated. */
static char *take_storage(jpt__vfs_reply *r, const char *from, size_t n)
{
    char *s = r->storage;

    memmove(s, from, n);
    s[n] = '\0';
    r->storage = NULL;
    return s;
}

static int bad_result(jpt_vfs_tool *t, const char *method, const char *what)
{
    return tool_err(t, JPT_ERR_PROTOCOL, "the host's %s result has no %s", method, what);
}

/* D11's content (fs.read's, an http body): the string decoded into the
 * reply's own storage, from base64 too when "encoding": "base64". Decoding
 * to the start of the storage never overtakes the reading: the output
 * begins before the input and grows no faster. */
static int decode_content(jpt_vfs_tool *t, jpt__vfs_reply *r, jpt__vfs_span content,
                          jpt__vfs_span encoding, const char *method, const char *name,
                          size_t *n)
{
    char what[48];
    bool base64 = encoding.p != NULL && jpt__json_type(encoding) == JPT__JSON_STRING &&
                  jpt__json_key_is((jpt__vfs_span){encoding.p + 1, encoding.n - 2}, "base64");

    if (encoding.p != NULL && jpt__json_type(encoding) != JPT__JSON_NULL && !base64)
        return bad_result(t, method, "known 'encoding'");
    *n = jpt__json_unescape(content, r->storage);
    if (base64 && !jpt__base64_decode(r->storage, *n, (unsigned char *)r->storage, n)) {
        snprintf(what, sizeof(what), "valid base64 '%s'", name);
        return bad_result(t, method, what);
    }
    return JPT_OK;
}

/* D11 fs.read's result: the content decoded in the reply's own storage,
 * from base64 too when "encoding":"base64". */
static int take_file(jpt_vfs_tool *t, jpt__vfs_reply *r, char **data, size_t *len)
{
    jpt__vfs_span content = result_member(r, "content");
    jpt__vfs_span encoding = result_member(r, "encoding");
    size_t n;

    if (content.p == NULL || jpt__json_type(content) != JPT__JSON_STRING)
        return bad_result(t, "fs.read", "string 'content'");
    int rc = decode_content(t, r, content, encoding, "fs.read", "content", &n);
    if (rc < 0)
        return rc;
    *data = take_storage(r, r->storage, n);
    if (len != NULL)
        *len = n;
    return JPT_OK;
}

JPT_EXPORT int jpt_vfs_tool_collect_read(jpt_vfs_tool *t, uint64_t id, char **data,
                                         size_t *len)
{
    jpt__vfs_reply *r;
    int rc = usable(t, data != NULL);

    if (rc == JPT_OK && (rc = wait_reply(t, id, &r)) == JPT_OK) {
        rc = take_file(t, r, data, len);
        jpt__vfs_client_forget(t->client, id);
    }
    return rc;
}

JPT_EXPORT int jpt_vfs_tool_collect(jpt_vfs_tool *t, uint64_t id, char **result_json)
{
    jpt__vfs_reply *r;
    int rc = usable(t, true);

    if (rc == JPT_OK && (rc = wait_reply(t, id, &r)) == JPT_OK) {
        if (result_json != NULL)
            *result_json = take_storage(r, r->result.p, r->result.n);
        jpt__vfs_client_forget(t->client, id);
    }
    return rc;
}

JPT_EXPORT int jpt_vfs_tool_submit(jpt_vfs_tool *t, const char *method,
                                   const char *params_json, uint64_t *id)
{
    int rc = usable(t, method != NULL && id != NULL);

    return rc < 0 ? rc : sent(t, jpt__vfs_client_request(t->client, method, params_json, id));
}

JPT_EXPORT int jpt_vfs_tool_submit_read(jpt_vfs_tool *t, const char *path, uint64_t *id)
{
    int rc = usable(t, path != NULL && id != NULL);

    return rc < 0 ? rc
                  : sent(t, jpt__vfs_client_request_path(t->client, JPT__VFS_FS_READ, path, id));
}

JPT_EXPORT int jpt_vfs_tool_submit_write(jpt_vfs_tool *t, const char *path, const void *data,
                                         size_t len, uint64_t *id)
{
    int rc = usable(t, path != NULL && id != NULL && (data != NULL || len == 0));

    return rc < 0 ? rc
                  : sent(t, jpt__vfs_client_request_write(t->client, path, data != NULL ? data : "",
                                                          len, id));
}

JPT_EXPORT int jpt_vfs_tool_call(jpt_vfs_tool *t, const char *method, const char *params_json,
                                 char **result_json)
{
    uint64_t id;
    int rc = jpt_vfs_tool_submit(t, method, params_json, &id);

    return rc < 0 ? rc : jpt_vfs_tool_collect(t, id, result_json);
}

JPT_EXPORT int jpt_vfs_tool_read(jpt_vfs_tool *t, const char *path, char **data, size_t *len)
{
    uint64_t id;
    int rc = usable(t, data != NULL);

    if (rc == JPT_OK)
        rc = jpt_vfs_tool_submit_read(t, path, &id);
    return rc < 0 ? rc : jpt_vfs_tool_collect_read(t, id, data, len);
}

JPT_EXPORT int jpt_vfs_tool_write(jpt_vfs_tool *t, const char *path, const void *data,
                                  size_t len)
{
    uint64_t id;
    int rc = jpt_vfs_tool_submit_write(t, path, data, len, &id);

    return rc < 0 ? rc : jpt_vfs_tool_collect(t, id, NULL);
}

/* Sends a one-path fs.* request and waits for its reply. */
static int path_call(jpt_vfs_tool *t, int method, const char *path, uint64_t *id,
                     jpt__vfs_reply **r)
{
    int rc = usable(t, path != NULL);

    if (rc == JPT_OK)
        rc = sent(t, jpt__vfs_client_request_path(t->client, method, path, id));
    return rc < 0 ? rc : wait_reply(t, *id, r);
}

JPT_EXPORT int jpt_vfs_tool_exists(jpt_vfs_tool *t, const char *path, int *exists)
{
    jpt__vfs_reply *r;
    uint64_t id;
    int rc = exists != NULL ? path_call(t, JPT__VFS_FS_EXISTS, path, &id, &r)
                            : usable(t, false);

    if (rc < 0)
        return rc;
    int type = jpt__json_type(result_member(r, "exists"));
    if (result_member(r, "exists").p == NULL || (type != JPT__JSON_TRUE && type != JPT__JSON_FALSE))
        rc = bad_result(t, "fs.exists", "boolean 'exists'");
    else
        *exists = type == JPT__JSON_TRUE;
    jpt__vfs_client_forget(t->client, id);
    return rc;
}

JPT_EXPORT int jpt_vfs_tool_list_dir(jpt_vfs_tool *t, const char *path, char **entries_json)
{
    jpt__vfs_reply *r;
    uint64_t id;
    int rc = entries_json != NULL ? path_call(t, JPT__VFS_FS_LIST_DIR, path, &id, &r)
                                  : usable(t, false);

    if (rc < 0)
        return rc;
    jpt__vfs_span entries = result_member(r, "entries");
    if (entries.p == NULL || jpt__json_type(entries) != JPT__JSON_ARRAY)
        rc = bad_result(t, "fs.list_dir", "array 'entries'");
    else
        *entries_json = take_storage(r, entries.p, entries.n);
    jpt__vfs_client_forget(t->client, id);
    return rc;
}

static int kind_of(jpt__vfs_span kind)
{
    static const struct {
        const char *name;
        int kind;
    } kinds[] = {{"file", JPT_VFS_TOOL_FILE}, {"dir", JPT_VFS_TOOL_DIR},
                 {"symlink", JPT_VFS_TOOL_SYMLINK}};
    jpt__vfs_span inner = {kind.p + 1, kind.n - 2};

    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (jpt__json_key_is(inner, kinds[i].name))
            return kinds[i].kind;
    return JPT_VFS_TOOL_OTHER;
}

JPT_EXPORT int jpt_vfs_tool_metadata(jpt_vfs_tool *t, const char *path, int *kind,
                                     uint64_t *size)
{
    jpt__vfs_reply *r;
    uint64_t id, bytes = 0;
    int rc = path_call(t, JPT__VFS_FS_METADATA, path, &id, &r);

    if (rc < 0)
        return rc;
    jpt__vfs_span k = result_member(r, "kind"), s = result_member(r, "size");
    if (k.p == NULL || jpt__json_type(k) != JPT__JSON_STRING)
        rc = bad_result(t, "fs.metadata", "string 'kind'");
    else if (s.p != NULL && !jpt__json_uint(s, UINT64_MAX, &bytes))
        rc = bad_result(t, "fs.metadata", "non-negative integer 'size'");
    else {
        if (kind != NULL)
            *kind = kind_of(k);
        if (size != NULL)
            *size = bytes;
    }
    jpt__vfs_client_forget(t->client, id);
    return rc;
}

JPT_EXPORT int jpt_vfs_tool_delete(jpt_vfs_tool *t, const char *path)
{
    jpt__vfs_reply *r;
    uint64_t id;
    int rc = path_call(t, JPT__VFS_FS_DELETE, path, &id, &r);

    if (rc == JPT_OK)
        jpt__vfs_client_forget(t->client, id);
    return rc;
}

JPT_EXPORT int jpt_vfs_tool_rename(jpt_vfs_tool *t, const char *from, const char *to)
{
    uint64_t id;
    int rc = usable(t, from != NULL && to != NULL);

    if (rc == JPT_OK)
        rc = sent(t, jpt__vfs_client_request_rename(t->client, from, to, &id));
    return rc < 0 ? rc : jpt_vfs_tool_collect(t, id, NULL);
}

/* ---- fs.grep --------------------------------------------------------------------------- */

static int put_string(jpt_vfs_tool *t, jpt__buf *b, const char *s)
{
    size_t len = strlen(s);

    if (jpt__json_quoted_size(s, len, false) == 0)
        return tool_err(t, JPT_ERR_INVALID, "'%s' is not valid UTF-8", s);
    return jpt__buf_json_string(b, s, len);
}

static int put_strings(jpt_vfs_tool *t, jpt__buf *b, const char *method, const char *name,
                       const char *const *v, size_t n)
{
    int rc = JPT_OK;

    if (n == 0)
        return JPT_OK;
    if (v == NULL)
        return tool_err(t, JPT_ERR_INVALID, "%s: %s is NULL with a count of %zu", method, name,
                        n);
    if ((rc = jpt__buf_printf(b, ",\"%s\":[", name)) < 0)
        return rc;
    for (size_t i = 0; i < n && rc == JPT_OK; i++) {
        if (v[i] == NULL)
            return tool_err(t, JPT_ERR_INVALID, "%s: %s[%zu] is NULL", method, name, i);
        if (i > 0)
            rc = jpt__buf_putc(b, ',');
        if (rc == JPT_OK)
            rc = put_string(t, b, v[i]);
    }
    return rc < 0 ? rc : jpt__buf_putc(b, ']');
}

static int grep_params(jpt_vfs_tool *t, const jpt_vfs_grep_query *q, jpt__buf *b)
{
    int rc;

    if ((rc = jpt__buf_puts(b, "{\"pattern\":")) < 0 || (rc = put_string(t, b, q->pattern)) < 0 ||
        (rc = put_strings(t, b, "fs.grep", "paths", q->paths, q->npaths)) < 0 ||
        (rc = put_strings(t, b, "fs.grep", "extensions", q->extensions, q->nextensions)) < 0)
        return rc;
    if (q->context != 0 && (rc = jpt__buf_printf(b, ",\"context\":%u", q->context)) < 0)
        return rc;
    if (q->case_insensitive && (rc = jpt__buf_puts(b, ",\"case_insensitive\":true")) < 0)
        return rc;
    if (q->fixed_strings && (rc = jpt__buf_puts(b, ",\"fixed_strings\":true")) < 0)
        return rc;
    if (q->max_matches != 0 &&
        (rc = jpt__buf_printf(b, ",\"max_matches\":%llu", (unsigned long long)q->max_matches)) < 0)
        return rc;
    return jpt__buf_putc(b, '}');
}

JPT_EXPORT int jpt_vfs_tool_grep(jpt_vfs_tool *t, const jpt_vfs_grep_query *query,
                                 char **result_json)
{
    jpt_vfs_grep_query q;
    jpt__buf params = JPT__BUF_INIT;
    int rc = usable(t, query != NULL && result_json != NULL);

    if (rc < 0)
        return rc;
    if ((rc = jpt__struct_check(query, query->size, sizeof(q))) < 0)
        return tool_err(t, rc, "fs.grep: the query's size does not match this jptool");
    q = *query;
    if (q.pattern == NULL)
        return tool_err(t, JPT_ERR_INVALID, "fs.grep needs a pattern");
    rc = grep_params(t, &q, &params);
    if (rc == JPT_ERR_NOMEM)
        rc = tool_err(t, rc, "out of memory building an fs.grep request");
    if (rc == JPT_OK)
        rc = jpt_vfs_tool_call(t, "fs.grep", params.data, result_json);
    jpt__buf_free(&params);
    return rc;
}

/* ---- Processes ------------------------------------------------------------------------- */

/* A string member of the result, decoded into a new allocation. */
static int take_text(jpt_vfs_tool *t, const jpt__vfs_reply *r, const char *name, char **out)
{
    jpt__vfs_span v = result_member(r, name);

    if (v.p == NULL || jpt__json_type(v) != JPT__JSON_STRING)
        return tool_err(t, JPT_ERR_PROTOCOL, "the host's process.run result has no string '%s'",
                        name);
    if (out == NULL)
        return JPT_OK;
    if ((*out = jpt__malloc(v.n)) == NULL)
        return tool_err(t, JPT_ERR_NOMEM, "out of memory reading process.run's %s", name);
    (*out)[jpt__json_unescape(v, *out)] = '\0';
    return JPT_OK;
}

/* D11's exit_code (null and a signal when one killed the process). */
static int take_status(jpt_vfs_tool *t, const jpt__vfs_reply *r, int *exit_code)
{
    jpt__vfs_span code = result_member(r, "exit_code"), sig = result_member(r, "signal");
    uint64_t n;

    if (code.p != NULL && jpt__json_uint(code, 255, &n))
        *exit_code = (int)n;
    else if (code.p != NULL && jpt__json_type(code) == JPT__JSON_NULL && sig.p != NULL &&
             jpt__json_uint(sig, 255, &n) && n > 0)
        *exit_code = -(int)n;
    else if (code.p != NULL && jpt__json_type(code) == JPT__JSON_NULL && sig.p == NULL)
        *exit_code = JPT_VFS_TOOL_EXIT_UNKNOWN;
    else
        return tool_err(t, JPT_ERR_PROTOCOL, "the host's process.run result has no exit_code "
                                             "from 0 to 255, nor null with a signal");
    return JPT_OK;
}

JPT_EXPORT int jpt_vfs_tool_process_run(jpt_vfs_tool *t, const char *program,
                                        const char *const *args, size_t nargs,
                                        const char *const *envs, size_t nenvs, int *exit_code,
                                        char **stdout_text, char **stderr_text)
{
    jpt__buf params = JPT__BUF_INIT;
    jpt__vfs_reply *r;
    uint64_t id;
    int status = 0;
    int rc = usable(t, program != NULL);

    if (rc < 0)
        return rc;
    if ((rc = jpt__buf_puts(&params, "{\"program\":")) == JPT_OK &&
        (rc = put_string(t, &params, program)) == JPT_OK &&
        (rc = put_strings(t, &params, "process.run", "args", args, nargs)) == JPT_OK &&
        (rc = put_strings(t, &params, "process.run", "envs", envs, nenvs)) == JPT_OK)
        rc = jpt__buf_putc(&params, '}');
    if (rc == JPT_ERR_NOMEM)
        rc = tool_err(t, rc, "out of memory building a process.run request");
    if (rc == JPT_OK)
        rc = sent(t, jpt__vfs_client_request(t->client, "process.run", params.data, &id));
    jpt__buf_free(&params);
    if (rc == JPT_OK)
        rc = wait_reply(t, id, &r);
    if (rc < 0)
        return rc;
    char *out = NULL, *err = NULL;
    if ((rc = take_status(t, r, &status)) == JPT_OK &&
        (rc = take_text(t, r, "stdout", stdout_text != NULL ? &out : NULL)) == JPT_OK &&
        (rc = take_text(t, r, "stderr", stderr_text != NULL ? &err : NULL)) == JPT_OK) {
        if (exit_code != NULL)
            *exit_code = status;
        if (stdout_text != NULL)
            *stdout_text = out;
        if (stderr_text != NULL)
            *stderr_text = err;
    } else {
        jpt__free(out);
        jpt__free(err);
    }
    jpt__vfs_client_forget(t->client, id);
    return rc;
}

/* ---- http.get, http.post --------------------------------------------------------------- */

static int http_params(jpt_vfs_tool *t, const char *method, const char *url,
                       const jpt_vfs_http_header *headers, size_t nheaders, const void *body,
                       size_t body_len, jpt__buf *b)
{
    int rc;

    if (nheaders > 0 && headers == NULL)
        return tool_err(t, JPT_ERR_INVALID, "%s: headers is NULL with a count of %zu", method,
                        nheaders);
    if ((rc = jpt__buf_puts(b, "{\"url\":")) < 0 || (rc = put_string(t, b, url)) < 0 ||
        (rc = jpt__buf_puts(b, ",\"headers\":[")) < 0)
        return rc;
    for (size_t i = 0; i < nheaders; i++) {
        if (headers[i].name == NULL || headers[i].value == NULL)
            return tool_err(t, JPT_ERR_INVALID, "%s: header %zu has a NULL name or value",
                            method, i);
        if ((rc = jpt__buf_puts(b, i > 0 ? ",{\"name\":" : "{\"name\":")) < 0 ||
            (rc = put_string(t, b, headers[i].name)) < 0 ||
            (rc = jpt__buf_puts(b, ",\"value\":")) < 0 ||
            (rc = put_string(t, b, headers[i].value)) < 0 || (rc = jpt__buf_putc(b, '}')) < 0)
            return rc;
    }
    if ((rc = jpt__buf_putc(b, ']')) < 0)
        return rc;
    if (body != NULL || body_len > 0) {
        /* As fs.write's content: text when it is, else base64. */
        bool base64;
        if ((rc = jpt__buf_puts(b, ",\"body\":")) < 0 ||
            (rc = jpt__buf_content(b, body, body_len, &base64)) < 0 ||
            (base64 && (rc = jpt__buf_puts(b, ",\"encoding\":\"base64\"")) < 0))
            return rc;
    }
    return jpt__buf_putc(b, '}');
}

/* D11's http result into `out`: the headers' text copied, then the body
 * decoded in the reply's own storage (as fs.read's content). */
static int take_response(jpt_vfs_tool *t, jpt__vfs_reply *r, const char *method,
                         jpt_vfs_http_response *out)
{
    jpt__vfs_span status = result_member(r, "status"), headers = result_member(r, "headers");
    jpt__vfs_span body = result_member(r, "body"), encoding = result_member(r, "encoding");
    uint64_t code;
    size_t n;

    if (status.p == NULL || !jpt__json_uint(status, 999, &code) || code < 100)
        return bad_result(t, method, "status from 100 to 999");
    if (headers.p == NULL || jpt__json_type(headers) != JPT__JSON_ARRAY)
        return bad_result(t, method, "array 'headers'");
    if (body.p == NULL || jpt__json_type(body) != JPT__JSON_STRING)
        return bad_result(t, method, "string 'body'");
    char *headers_json = jpt__memdup0(headers.p, headers.n);
    if (headers_json == NULL)
        return tool_err(t, JPT_ERR_NOMEM, "out of memory taking the %s response", method);
    int rc = decode_content(t, r, body, encoding, method, "body", &n);
    if (rc < 0) {
        jpt__free(headers_json);
        return rc;
    }
    out->status = (int)code;
    out->headers_json = headers_json;
    out->body = take_storage(r, r->storage, n);
    out->body_len = n;
    return JPT_OK;
}

static int http_call(jpt_vfs_tool *t, const char *method, const char *url,
                     const jpt_vfs_http_header *headers, size_t nheaders, const void *body,
                     size_t body_len, jpt_vfs_http_response *response)
{
    jpt__buf params = JPT__BUF_INIT;
    jpt__vfs_reply *r;
    uint64_t id;
    int rc = usable(t, url != NULL && response != NULL && (body != NULL || body_len == 0));

    if (rc < 0)
        return rc;
    if ((rc = jpt__struct_check(response, response->size, sizeof(*response))) < 0)
        return tool_err(t, rc, "%s: the response's size does not match this jptool", method);
    size_t size = response->size;
    memset(response, 0, sizeof(*response));
    response->size = size;
    rc = http_params(t, method, url, headers, nheaders, body, body_len, &params);
    if (rc == JPT_ERR_NOMEM)
        rc = tool_err(t, rc, "out of memory building an %s request", method);
    if (rc == JPT_OK)
        rc = sent(t, jpt__vfs_client_request(t->client, method, params.data, &id));
    jpt__buf_free(&params);
    if (rc == JPT_OK && (rc = wait_reply(t, id, &r)) == JPT_OK) {
        rc = take_response(t, r, method, response);
        jpt__vfs_client_forget(t->client, id);
    }
    return rc;
}

JPT_EXPORT int jpt_vfs_tool_http_get(jpt_vfs_tool *t, const char *url,
                                     const jpt_vfs_http_header *headers, size_t nheaders,
                                     jpt_vfs_http_response *response)
{
    return http_call(t, "http.get", url, headers, nheaders, NULL, 0, response);
}

JPT_EXPORT int jpt_vfs_tool_http_post(jpt_vfs_tool *t, const char *url,
                                      const jpt_vfs_http_header *headers, size_t nheaders,
                                      const void *body, size_t body_len,
                                      jpt_vfs_http_response *response)
{
    return http_call(t, "http.post", url, headers, nheaders, body != NULL ? body : "", body_len,
                     response);
}

JPT_EXPORT void jpt_vfs_http_response_clear(jpt_vfs_http_response *response)
{
    if (response == NULL)
        return;
    jpt__free(response->headers_json);
    jpt__free(response->body);
    size_t size = response->size;
    memset(response, 0, sizeof(*response));
    response->size = size;
}

/* ---- Stateful tools and the end ---------------------------------------------------------- */

/* Sends a notification and waits until it is written. */
static int notify(jpt_vfs_tool *t, const char *method, const char *params, size_t len)
{
    int rc = jpt__vfs_client_notify(t->client, method, params, len);
    return rc < 0 ? client_err(t, rc) : flush(t);
}

JPT_EXPORT int jpt_vfs_tool_state(jpt_vfs_tool *t, const char *state_json)
{
    jpt__json_error jerr;
    jpt__json_iter it;
    jpt__vfs_span key, value, v;
    int rc = usable(t, state_json != NULL);
    bool typed = false;

    if (rc < 0)
        return rc;
    v = (jpt__vfs_span){state_json, strlen(state_json)};
    if (jpt__json_validate(v.p, v.n, &jerr) < 0)
        return tool_err(t, JPT_ERR_INVALID, "the state is not JSON: %s at byte %zu", jerr.what,
                        jerr.offset);
    if (jpt__json_type(v) == JPT__JSON_OBJECT) {
        jpt__json_iter_init(&it, v);
        while (jpt__json_next_member(&it, &key, &value))
            if (jpt__json_key_is(key, "type") && jpt__json_type(value) == JPT__JSON_STRING) {
                jpt__vfs_span inner = {value.p + 1, value.n - 2};
                typed = jpt__json_key_is(inner, "running") ||
                        jpt__json_key_is(inner, "waiting") || jpt__json_key_is(inner, "stopped");
            }
    }
    if (!typed)
        return tool_err(t, JPT_ERR_INVALID, "a state must be an object whose \"type\" is "
                                            "\"running\", \"waiting\" or \"stopped\"");
    return notify(t, "state", v.p, v.n);
}

static bool input_arrived(jpt_vfs_tool *t, void *arg)
{
    struct {
        bool got;
        char *json;
    } *in = arg;
    in->got = jpt__vfs_client_next_input(t->client, &in->json);
    return in->got;
}

JPT_EXPORT int jpt_vfs_tool_next_input(jpt_vfs_tool *t, char **input_json)
{
    struct {
        bool got;
        char *json;
    } in = {false, NULL};
    int rc = usable(t, input_json != NULL);

    if (rc < 0)
        return rc;
    wait_for w = {input_arrived, &in, "the next input"};
    if ((rc = pump(t, &w)) < 0)
        return rc;
    if (in.json == NULL) {
        rc = tool_err(t, JPT_ERR_CANCELLED, "the host cancelled the tool");
        t->code = JPT_VFS_E_CANCELLED;
        return rc;
    }
    *input_json = in.json;
    return JPT_OK;
}

JPT_EXPORT int jpt_vfs_tool_cancelled(const jpt_vfs_tool *t)
{
    return t != NULL && t->client != NULL && jpt__vfs_client_cancelled(t->client);
}

JPT_EXPORT int jpt_vfs_tool_result(jpt_vfs_tool *t, const char *content_json)
{
    jpt__json_error jerr;
    jpt__buf params = JPT__BUF_INIT;
    int rc = usable(t, content_json != NULL);

    if (rc < 0)
        return rc;
    jpt__vfs_span v = {content_json, strlen(content_json)};
    if (jpt__json_validate(v.p, v.n, &jerr) < 0 ||
        (jpt__json_type(v) != JPT__JSON_ARRAY && jpt__json_type(v) != JPT__JSON_STRING))
        return tool_err(t, JPT_ERR_INVALID, "a result's content must be a JSON array of "
                                            "content blocks or a JSON string");
    if ((rc = jpt__buf_puts(&params, "{\"content\":")) == JPT_OK &&
        (rc = jpt__buf_append(&params, v.p, v.n)) == JPT_OK &&
        (rc = jpt__buf_putc(&params, '}')) == JPT_OK)
        rc = notify(t, "result", params.data, params.len);
    else
        rc = tool_err(t, rc, "out of memory building the result");
    jpt__buf_free(&params);
    return rc;
}

JPT_EXPORT int jpt_vfs_tool_result_text(jpt_vfs_tool *t, const char *text)
{
    jpt__buf params = JPT__BUF_INIT;
    int rc = usable(t, text != NULL);

    if (rc < 0)
        return rc;
    if ((rc = jpt__buf_puts(&params, "{\"content\":")) == JPT_OK &&
        (rc = jpt__buf_json_string(&params, text, strlen(text))) == JPT_OK &&
        (rc = jpt__buf_putc(&params, '}')) == JPT_OK)
        rc = notify(t, "result", params.data, params.len);
    else
        rc = tool_err(t, rc, "out of memory building the result");
    jpt__buf_free(&params);
    return rc;
}

JPT_EXPORT int jpt_vfs_tool_error(jpt_vfs_tool *t, const char *message,
                                  const char *const *trace, size_t ntrace, int transient)
{
    jpt__buf params = JPT__BUF_INIT;
    int rc = JPT_OK;

    if (t == NULL)
        return JPT_ERR_INVALID;
    /* The message is often jpt_vfs_tool_errmsg(t), which usable() clears:
     * it is written into the params first. */
    if (message != NULL && (trace != NULL || ntrace == 0) &&
        (rc = jpt__buf_puts(&params, "{\"message\":")) == JPT_OK &&
        (rc = jpt__buf_json_string(&params, message, strlen(message))) == JPT_OK)
        rc = jpt__buf_puts(&params, ",\"trace\":[");
    for (size_t i = 0; i < ntrace && trace != NULL && rc == JPT_OK; i++) {
        const char *line = trace[i] != NULL ? trace[i] : "";
        if ((rc = i > 0 ? jpt__buf_putc(&params, ',') : JPT_OK) == JPT_OK)
            rc = jpt__buf_json_string(&params, line, strlen(line));
    }
    if (rc == JPT_OK)
        rc = jpt__buf_printf(&params, "],\"transient\":%s}", transient ? "true" : "false");
    int usable_rc = usable(t, message != NULL && (trace != NULL || ntrace == 0));
    if (usable_rc < 0)
        rc = usable_rc;
    else if (rc == JPT_OK)
        rc = notify(t, "error", params.data, params.len);
    else
        rc = tool_err(t, rc, "out of memory building the error");
    jpt__buf_free(&params);
    return rc;
}
