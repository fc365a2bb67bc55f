/* Serving one VFS tool on a loop: its transport (a child process, or two
 * fds the application opened), the host engine over the bytes, each fs.*
 * request through the files backend after the access policy, the policy
 * prompt, the request timeout, and how the tool ends. Both the standalone
 * host (host.c) and the registry's "vfs" runtime are built on this.
 *
 * Bounded memory both ways (vfs.h, "Bounds"): the engine takes no message
 * while too much waits for the tool (it then reads no more: the tool
 * blocks on a full pipe), and no more than OUT_QUEUE bytes are handed to
 * the process room at a time; the rest waits in the engine until the pipe
 * drains. A request starts only while the answers waiting and the worst
 * case of those being worked out leave room in the answer budget; a tool
 * that reads none of what waits for it for the request timeout is
 * stopped. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "files/files.h"
#include "policy/policy.h"
#include "vfs/run.h"
#include "vfs/session.h"

/* Bytes handed to the child's stdin queue at most at once. */
#define OUT_QUEUE (256u * 1024u)
/* The end of stderr kept to explain a failure. */
#define STDERR_TAIL 4096
/* Bytes read from attached fds per readable event, in chunks. */
#define READ_CHUNK 65536
#define READS_PER_EVENT 16
/* A step of the work the loop slices (greps, held input): its budget. */
#define STEP_NS 1000000u

typedef struct vfs_req vfs_req;

struct jpt_policy_request {
    vfs_req *req;        /* NULL once the tool's request is gone */
    jpt__vfs_session *s; /* likewise */
    char *tool, *method, *path, *reason, *id;
    char *requested;     /* the path as the tool wrote it (`path`: as resolved) */
    int access;
    int decision;        /* once answered: JPT_DECISION_*, else -1 */
    char *denial;        /* the handler's reason for a denial */
    jpt_policy_request *next, *prev; /* the session's decided ones */
};

/* An (access, resolved path) pair the prompt allowed. */
typedef struct allowed {
    int access;
    char *path;
    struct allowed *next;
} allowed;

/* One fs.* or process.run request being served. */
struct vfs_req {
    jpt__vfs_session *s;
    jpt__vfs_call *call;
    int method;               /* JPT__VFS_* */
    const char *shown;        /* the requested path, for the policy's words */
    jpt__files_call *fc;      /* in flight: a grep, or a host backend's */
    jpt__vfs_run *run;        /* in flight: process.run's child */
    jpt__vfs_http_call *hc;   /* in flight: http.get, http.post */
    jpt_policy_request *asking;
    /* the guard's ask, while the request waits on the prompt */
    int ask_access;
    char *ask_path, *ask_reason;
    const char *ask_requested; /* the path the tool wrote that led there */
    /* allowed by the prompt for this request: a list, for fs.rename asks
     * about both of its paths and must not ask again for the first */
    allowed *once;
    size_t reserved;          /* of the answer budget, while in flight */
    bool waiting;             /* in the session's queue of requests to start */
    vfs_req *next, *prev;
    vfs_req *wnext, *wprev;   /* that queue, oldest first */
};

struct jpt__vfs_session {
    jpt__loop *loop;
    jpt__vfs_engine *engine;
    jpt_files *files;
    const jpt_policy *policy;
    struct jpt__http *http;
    jpt__vfs_http_queue http_queue;
    jpt__vfs_run_queue run_queue;
    jpt__vfs_session_ops ops;
    char *tool_name, *request_id;
    int request_timeout_ms, kill_grace_ms;

    /* transport */
    jpt__child *child;
    jpt__contain *contain;    /* the tool's containment, for process.run */
    int run_sandbox_mode;     /* process.run's OS sandbox (config) */
    const char *sandbox_hint; /* config's, when the tool is sandboxed */
    const char *env_hint;     /* config's */
    bool init_unread;         /* it ended without reading any of init */
    jpt__sandbox_cache *sandbox_cache;
    int rfd, wfd;             /* attached fds, else -1 */
    jpt__watch rwatch, wwatch;
    jpt__buf backlog;         /* read, not yet taken by the engine */
    size_t backlog_off;
    bool held;                /* the tool's output is not read meanwhile */
    jpt__capture err_tail;

    /* requests */
    vfs_req *reqs;
    vfs_req *wait_head, *wait_tail; /* read, waiting for room to start */
    vfs_req *starting;        /* being submitted, until it is gone */
    jpt_policy_request *decided;
    allowed *allowed;
    jpt__defer step;
    bool in_feed;             /* inside the engine's feed: answers wait */

    /* the end */
    jpt__timer idle_timer;    /* D11's request timeout */
    jpt__timer read_timer;    /* … for a tool that reads none of its answers */
    uint64_t handed;          /* bytes handed to the transport, ever */
    uint64_t read_mark;       /* bytes the tool had read at the last check */
    uint64_t messages_seen;
    bool working;             /* the tool owes a request, a state or a result */
    jpt__timer grace_timer;   /* cancel → SIGTERM */
    bool cancelled;
    bool final_seen;          /* result, error, or a stopped state */
    char *failure;            /* why the session stopped the tool */
    bool failed;              /* it did, whether or not there was memory to
                                 keep why (issue 18) */
    bool ended;
    jpt__exit exit;
};

static void flush_output(jpt__vfs_session *s);
static void rearm_idle(jpt__vfs_session *s);
static void note_room(jpt__vfs_session *s);
static void schedule(jpt__vfs_session *s);
static void on_attached_writable(jpt__watch *w, uint32_t events);
static void fail_tool(jpt__vfs_session *s, const char *fmt, ...) JPT__PRINTF(2, 3);

/* ---- Policy requests (the public jpt_policy_request) ---------------------------------- */

static void policy_request_free(jpt_policy_request *pr)
{
    jpt__free(pr->tool);
    jpt__free(pr->method);
    jpt__free(pr->path);
    jpt__free(pr->requested);
    jpt__free(pr->reason);
    jpt__free(pr->id);
    jpt__free(pr->denial);
    jpt__free(pr);
}

JPT_EXPORT const char *jpt_policy_request_tool(const jpt_policy_request *req)
{
    return req != NULL ? req->tool : NULL;
}

JPT_EXPORT const char *jpt_policy_request_method(const jpt_policy_request *req)
{
    return req != NULL ? req->method : NULL;
}

JPT_EXPORT const char *jpt_policy_request_path(const jpt_policy_request *req)
{
    return req != NULL ? req->path : NULL;
}

JPT_EXPORT const char *jpt_policy_request_requested_path(const jpt_policy_request *req)
{
    return req != NULL ? req->requested : NULL;
}

JPT_EXPORT int jpt_policy_request_access(const jpt_policy_request *req)
{
    return req != NULL ? req->access : JPT_ERR_INVALID;
}

JPT_EXPORT const char *jpt_policy_request_reason(const jpt_policy_request *req)
{
    return req != NULL ? req->reason : NULL;
}

JPT_EXPORT const char *jpt_policy_request_id(const jpt_policy_request *req)
{
    return req != NULL ? req->id : NULL;
}

JPT_EXPORT int jpt_policy_request_answer(jpt_policy_request *req, int decision,
                                         const char *reason)
{
    if (req == NULL || decision < JPT_DECISION_DENY || decision > JPT_DECISION_ALLOW_ALWAYS)
        return JPT_ERR_INVALID;
    if (req->req == NULL) {
        policy_request_free(req);
        return JPT_ERR_CANCELLED;
    }
    if (reason != NULL && (req->denial = jpt__strdup(reason)) == NULL)
        decision = JPT_DECISION_DENY; /* nothing is allowed for want of memory */
    req->decision = decision;
    /* The request goes on from the loop: answering may be from anywhere. */
    jpt__vfs_session *s = req->s;
    JPT__LIST_PUSH(s->decided, req);
    schedule(s);
    return JPT_OK;
}

/* ---- Requests ---------------------------------------------------------------------------- */

static bool is_http(int method)
{
    return method == JPT__VFS_HTTP_GET || method == JPT__VFS_HTTP_POST;
}

/* The access a request is judged and asked about. A directory that a
 * write creates (JPT__FILES_ACCESS_CREATE) is asked about as a write. */
static int access_of(const vfs_req *r, int files_access)
{
    int kind = JPT__FILES_ACCESS_KIND(files_access);

    if (r->method == JPT__VFS_PROCESS_RUN)
        return JPT_ACCESS_PROCESS;
    if (is_http(r->method))
        return JPT_ACCESS_HTTP;
    if (kind == JPT__FILES_ACCESS_WRITE || kind == JPT__FILES_ACCESS_CREATE)
        return JPT_ACCESS_WRITE;
    return r->method == JPT__VFS_FS_LIST_DIR ? JPT_ACCESS_LIST : JPT_ACCESS_READ;
}

/* The path the tool wrote that a check of the files room is about:
 * fs.rename's `to` or `from`, or the request's path (NULL for http and
 * process.run, whose prompt names what the tool sent). */
static const char *requested_of(const vfs_req *r, int files_access)
{
    const jpt__vfs_params *p = jpt__vfs_call_params(r->call);

    if (r->method == JPT__VFS_FS_RENAME)
        return files_access & JPT__FILES_ACCESS_TO ? p->to : p->from;
    return r->method == JPT__VFS_PROCESS_RUN || is_http(r->method) ? NULL : p->path;
}

static bool in_list(const allowed *a, int access, const char *path)
{
    for (; a != NULL; a = a->next)
        if (a->access == access && strcmp(a->path, path) == 0)
            return true;
    return false;
}

static bool is_allowed(const jpt__vfs_session *s, const vfs_req *r, int access,
                       const char *path)
{
    return in_list(r->once, access, path) || in_list(s->allowed, access, path);
}

/* Puts (access, path) in front of *list, taking `path`; false without memory. */
static bool allow(allowed **list, int access, char *path)
{
    allowed *a = jpt__calloc(1, sizeof(*a));

    if (a == NULL)
        return false;
    a->access = access;
    a->path = path;
    a->next = *list;
    *list = a;
    return true;
}

static void allowed_free(allowed **list)
{
    while (*list != NULL) {
        allowed *a = *list;
        *list = a->next;
        jpt__free(a->path);
        jpt__free(a);
    }
}

/* The files room's guard: the policy's verdict on what the request
 * actually touches, after its symlinks are resolved (D11: "the policy is
 * checked on what is actually opened"). An ask stops the request until
 * the prompt decides (JPT_ERR_AGAIN); a grep skips what it would ask. */
static int guard(void *ud, int files_access, const char *resolved, char *message, size_t cap)
{
    vfs_req *r = ud;
    jpt__vfs_session *s = r->s;
    int access = access_of(r, files_access);
    bool creates = !is_http(r->method) && r->method != JPT__VFS_PROCESS_RUN &&
                   JPT__FILES_ACCESS_KIND(files_access) == JPT__FILES_ACCESS_CREATE;
    char *reason = NULL;

    if (is_allowed(s, r, access, resolved))
        return JPT_OK;
    /* The files room names the request in front of the reason. */
    int verdict = jpt__policy_check(s->policy, creates ? JPT__ACCESS_CREATE : access, resolved,
                                    "", r->shown, &reason);
    if (verdict < 0) {
        snprintf(message, cap, "the access policy failed: %s", jpt_strerror(verdict));
        return verdict;
    }
    if (verdict == JPT_VERDICT_ALLOW) {
        jpt__free(reason);
        return JPT_OK;
    }
    snprintf(message, cap, "%s", reason != NULL ? reason : "denied by the access policy");
    if (verdict == JPT_VERDICT_ASK && r->method != JPT__VFS_FS_GREP &&
        files_access != JPT__VFS_HTTP_REDIRECT && r->ask_path == NULL) {
        /* Not a plain denial: the prompt would have been asked (issue 18). */
        if ((r->ask_path = jpt__strdup(resolved)) == NULL) {
            jpt__free(reason);
            snprintf(message, cap, "out of memory asking the policy prompt");
            return JPT_ERR_NOMEM;
        }
        r->ask_access = access;
        r->ask_reason = reason;
        r->ask_requested = requested_of(r, files_access);
        return JPT_ERR_AGAIN;
    }
    jpt__free(reason);
    return JPT_ERR_DENIED;
}

/* Lets go of the request's share of the answer budget. */
static void release(vfs_req *r)
{
    if (r->reserved == 0)
        return;
    jpt__vfs_engine_release(r->s->engine, r->reserved);
    r->reserved = 0;
    note_room(r->s);
}

static void unqueue(vfs_req *r)
{
    jpt__vfs_session *s = r->s;

    if (!r->waiting)
        return;
    if (r->wprev != NULL)
        r->wprev->wnext = r->wnext;
    else
        s->wait_head = r->wnext;
    if (r->wnext != NULL)
        r->wnext->wprev = r->wprev;
    else
        s->wait_tail = r->wprev;
    r->wnext = r->wprev = NULL;
    r->waiting = false;
}

static void req_free(vfs_req *r)
{
    release(r);
    unqueue(r);
    if (r->s->starting == r)
        r->s->starting = NULL;
    JPT__LIST_REMOVE(r->s->reqs, r);
    if (r->fc != NULL)
        jpt__files_cancel(r->fc);
    if (r->run != NULL)
        jpt__vfs_run_cancel(r->run);
    jpt__vfs_http_cancel(r->hc);
    if (r->asking != NULL) {
        r->asking->req = NULL;
        r->asking->s = NULL;
    }
    jpt__free(r->ask_path);
    jpt__free(r->ask_reason);
    allowed_free(&r->once);
    jpt__vfs_session *s = r->s;
    jpt__free(r);
    /* An answer went out: the tool owes the next message. */
    rearm_idle(s);
}

/* The D11 code of a files room status. */
static int wire_code(int status)
{
    switch (status) {
    case JPT_ERR_INVALID:
        return JPT_VFS_E_INVALID_PARAMS;
    case JPT_ERR_NOT_FOUND:
        return JPT_VFS_E_NOT_FOUND;
    case JPT_ERR_EXISTS:
        return JPT_VFS_E_EXISTS;
    case JPT_ERR_DENIED:
        return JPT_VFS_E_ACCESS_DENIED;
    case JPT_ERR_TIMEOUT:
        return JPT_VFS_E_TIMEOUT;
    case JPT_ERR_CANCELLED:
        return JPT_VFS_E_CANCELLED;
    case JPT_ERR_UNSUPPORTED:
        /* A FIFO, socket or device: D11 has no code of its own for it. */
        return JPT_VFS_E_INVALID_PARAMS;
    default:
        return JPT_VFS_E_INTERNAL;
    }
}

/* Answers the request with an error and lets it go. */
static void req_error(vfs_req *r, int code, const char *message)
{
    jpt__vfs_session *s = r->s;

    /* A request never answered would leave the tool waiting (issue 18). */
    if (jpt__vfs_call_answer_error(r->call, code, "%s", message) < 0)
        fail_tool(s, "out of memory answering a request of the tool");
    req_free(r);
    /* Inside the engine's feed, the feed sends it. */
    if (!s->in_feed)
        flush_output(s);
}

static void ask_prompt(vfs_req *r);

/* The end of a request that failed, or was sent to the prompt: true
 * when it is answered (or asked about) already. */
static bool req_failed(vfs_req *r, int status, const char *message)
{
    if (status == JPT_ERR_AGAIN && r->ask_path != NULL) {
        ask_prompt(r);
        return true;
    }
    if (status >= 0)
        return false;
    /* process.run on a workspace that is no directory: the method is not
     * available here (JSON-RPC's -32601), not a bad param. */
    int code = r->method == JPT__VFS_PROCESS_RUN && status == JPT_ERR_UNSUPPORTED
                   ? JPT_VFS_E_METHOD_NOT_FOUND
                   : wire_code(status);
    req_error(r, code, message != NULL ? message : jpt_strerror(status));
    return true;
}

/* The request's answer is queued: it goes, and the output with it. */
static void req_answered(vfs_req *r)
{
    jpt__vfs_session *s = r->s;

    req_free(r);
    if (!s->in_feed)
        flush_output(s);
}

static void req_settle(vfs_req *r)
{
    r->fc = NULL;
    r->run = NULL;
    r->hc = NULL;
    release(r);
}

/* An fs.* request's end: its typed result is written in D11's shape by
 * the codec's one writer, straight into the engine's output. */
static void files_done(void *ud, int status, const jpt__vfs_fs_result *result,
                       const char *message)
{
    vfs_req *r = ud;

    req_settle(r);
    if (req_failed(r, status, message))
        return;
    if (jpt__vfs_call_answer_fs(r->call, r->method, result) < 0) {
        req_error(r, JPT_VFS_E_INTERNAL, "the host could not send the result");
        return;
    }
    req_answered(r);
}

/* process.run's and http.*'s end: their results are JSON text, checked. */
static void req_done(void *ud, int status, const char *result, size_t len, const char *message)
{
    vfs_req *r = ud;

    req_settle(r);
    if (status < 0 && result != NULL) {
        int code = wire_code(status);
        /* A timed-out process.run: what it wrote, as the error's data. */
        if (jpt__vfs_call_answer_error_data(r->call, code, message, result, len) < 0) {
            req_error(r, code, message);
            return;
        }
        req_answered(r);
        return;
    }
    if (req_failed(r, status, message))
        return;
    if (jpt__vfs_call_answer_json(r->call, result, len) < 0) {
        req_error(r, JPT_VFS_E_INTERNAL, "the host could not send the result");
        return;
    }
    req_answered(r);
}

/* Runs the request through the files backend (or process.run); its
 * answer comes through req_done, now (most methods) or later (a grep, a
 * host backend, a process). */
static void req_submit(vfs_req *r)
{
    jpt__vfs_session *s = r->s;
    jpt__files_opts opts = {.guard = guard, .guard_ud = r};
    jpt__files_call *pending = NULL;

    if (r->method == JPT__VFS_PROCESS_RUN) {
        jpt__vfs_run_env env = {
            .loop = s->loop,
            .files = s->files,
            .policy = s->policy,
            .contain = s->contain,
            .kill_grace_ms = s->kill_grace_ms,
            .queue = &s->run_queue,
            .sandbox_mode = s->run_sandbox_mode,
            .sandbox_cache = s->sandbox_cache,
        };
        jpt__vfs_run *run = NULL;
        if (jpt__vfs_run_submit(&env, jpt__vfs_call_params(r->call), guard, r, req_done, r,
                                &run) < 0)
            req_error(r, JPT_VFS_E_INTERNAL, "out of memory serving the request");
        else if (run != NULL)
            r->run = run; /* else req_done has run, and `r` is gone */
        return;
    }
    if (is_http(r->method)) {
        if (jpt__vfs_http_submit(s->http, &s->http_queue, s->policy, r->method,
                                 jpt__vfs_call_params(r->call),
                                 guard, r, req_done, r, &r->hc) < 0)
            req_error(r, JPT_VFS_E_INTERNAL, "out of memory serving the request");
        return;
    }
    int rc = jpt__files_submit(s->files, r->method, jpt__vfs_call_params(r->call), &opts,
                               files_done, r, &pending);
    if (rc < 0) {
        req_error(r, JPT_VFS_E_INTERNAL, "out of memory serving the request");
        return;
    }
    if (pending != NULL) {
        r->fc = pending;
        if (jpt__files_call_needs_step(pending))
            schedule(s);
    }
}

/* 6: the most bytes of JSON text one byte of an answer can take ("\u0001"). */
static size_t escaped(size_t payload)
{
    return payload <= (SIZE_MAX - JPT_VFS_REQUEST_OVERHEAD) / 6
               ? payload * 6 + JPT_VFS_REQUEST_OVERHEAD
               : SIZE_MAX;
}

/* The worst case of the answer of a request in flight (vfs.h, "Bounds"). */
static size_t worst_case(const vfs_req *r)
{
    const jpt__vfs_session *s = r->s;

    if (r->method == JPT__VFS_FS_GREP)
        return JPT_VFS_GREP_RESULT_LIMIT + JPT_VFS_GREP_LINE_LIMIT + JPT_VFS_REQUEST_OVERHEAD;
    /* The others are in flight only on a host-supplied backend: fs.read's
     * content, a listing's JSON, or an answer of a few members. */
    if (r->method == JPT__VFS_FS_READ)
        return escaped(JPT_FILES_READ_LIMIT);
    if (r->method == JPT__VFS_FS_LIST_DIR)
        return JPT_VFS_CONTENT_LIMIT + JPT_VFS_REQUEST_OVERHEAD;
    if (is_http(r->method))
        return escaped(s->policy->max_response);
    if (r->method == JPT__VFS_PROCESS_RUN) {
        const jpt__policy_command *cmd =
            jpt__policy_command_find(s->policy, jpt__vfs_call_params(r->call)->program);
        size_t limit = cmd != NULL ? cmd->output_limit : JPT_VFS_PROCESS_OUTPUT_LIMIT;
        return escaped(2 * limit);
    }
    return JPT_VFS_REQUEST_OVERHEAD;
}

/* Submits the request, and holds its worst case from the answer budget
 * while it is in flight (an answer given at once is counted as output). */
static void start(vfs_req *r)
{
    jpt__vfs_session *s = r->s;

    s->starting = r;
    req_submit(r);
    if (s->starting != r)
        return; /* answered, and gone */
    s->starting = NULL;
    if (r->fc != NULL || r->run != NULL || r->hc != NULL) {
        r->reserved = worst_case(r);
        jpt__vfs_engine_reserve(s->engine, r->reserved);
    }
}

/* Starts the request now if the answer budget has room and no request
 * read before it waits; otherwise it waits its turn. */
static void start_or_wait(vfs_req *r)
{
    jpt__vfs_session *s = r->s;

    if (s->wait_head == NULL && jpt__vfs_engine_has_room(s->engine)) {
        start(r);
        return;
    }
    r->waiting = true;
    r->wprev = s->wait_tail;
    if (s->wait_tail != NULL)
        s->wait_tail->wnext = r;
    else
        s->wait_head = r;
    s->wait_tail = r;
}

/* Starts waiting requests, oldest first, while there is room. */
static void start_waiting(jpt__vfs_session *s)
{
    while (s->wait_head != NULL && !s->ended && s->failure == NULL &&
           jpt__vfs_engine_has_room(s->engine)) {
        vfs_req *r = s->wait_head;
        unqueue(r);
        start(r);
    }
}

/* The engine's handler of every fs.* method, of process.run, and of
 * http.* when the owner serves the network. */
static void serve(void *ud, jpt__vfs_call *call)
{
    jpt__vfs_session *s = ud;
    int method = jpt__vfs_call_method(call);
    const jpt__vfs_params *p = jpt__vfs_call_params(call);
    vfs_req *r = jpt__calloc(1, sizeof(*r));

    if (r == NULL) {
        jpt__free(r);
        if (jpt__vfs_call_answer_error(call, JPT_VFS_E_INTERNAL, "out of memory") < 0)
            jpt__log(JPT_LOG_ERROR, "VFS tool '%s': out of memory", s->tool_name);
        return;
    }
    r->s = s;
    r->call = call;
    r->method = method;
    /* For the policy's words: fs.rename asks about each of its paths, and
     * the resolved one is named then. */
    r->shown = method == JPT__VFS_FS_RENAME ? NULL
               : is_http(method)             ? p->url
                                             : p->path;
    JPT__LIST_PUSH(s->reqs, r);
    start_or_wait(r);
}

/* ---- The prompt ---------------------------------------------------------------------------- */

static void ask_prompt(vfs_req *r)
{
    jpt__vfs_session *s = r->s;
    char *reason = r->ask_reason;

    jpt_policy_request *pr = jpt__calloc(1, sizeof(*pr));
    /* The tool is told of its request by the path it wrote, never where a
     * symlink led (issue 9 §2); the handler sees both (issue 15 §2): the
     * path the request touches, which its decision covers, and the one
     * written. http.* and process.run name what the tool sent. */
    const char *shown = r->ask_requested != NULL ? r->ask_requested
                        : r->shown != NULL       ? r->shown
                                                 : r->ask_path;
    const char *touched = r->ask_requested != NULL ? r->ask_path : shown;
    if (pr == NULL || (pr->tool = jpt__strdup(s->tool_name)) == NULL ||
        (pr->method = jpt__strdup(jpt__vfs_method_name(r->method))) == NULL ||
        (pr->path = jpt__strdup(touched)) == NULL ||
        (pr->requested = jpt__strdup(shown)) == NULL ||
        (pr->reason = jpt__strdup(reason != NULL ? reason : "")) == NULL ||
        (s->request_id != NULL && (pr->id = jpt__strdup(s->request_id)) == NULL)) {
        if (pr != NULL)
            policy_request_free(pr);
        req_error(r, JPT_VFS_E_INTERNAL, "out of memory asking the host");
        return;
    }
    pr->req = r;
    pr->s = s;
    pr->access = r->ask_access;
    pr->decision = -1;
    r->asking = pr;
    if (s->ops.ask == NULL || !s->ops.ask(s->ops.ud, pr)) {
        /* issue 9: "With no handler, ask is deny, and the message says
         * that no one could be asked." */
        r->asking = NULL;
        policy_request_free(pr);
        jpt__buf text = JPT__BUF_INIT;
        int rc = jpt__buf_printf(&text, "%s '%s': %s; no one could be asked (the host has no "
                                        "policy handler), so it is denied",
                                 jpt__vfs_method_name(r->method), shown,
                                 reason != NULL ? reason : "the access policy asks the host");
        req_error(r, JPT_VFS_E_ACCESS_DENIED,
                  rc == JPT_OK ? text.data : "denied (out of memory saying why)");
        jpt__buf_free(&text);
        return;
    }
    /* The tool may extend its own timeout (D11 "Inquiry prompt blocking"):
     * sent now even when the handler decided at once, which takes effect
     * from the loop. */
    if (r->asking != NULL) {
        /* Worded like every message the tool gets: the request first. */
        jpt__buf text = JPT__BUF_INIT;
        if (jpt__buf_printf(&text, "%s '%s': %s", pr->method, pr->requested, pr->reason) < 0 ||
            jpt__vfs_call_pending(r->call, text.data) < 0)
            jpt__log(JPT_LOG_WARNING, "VFS tool '%s': out of memory telling it a request waits",
                     s->tool_name);
        jpt__buf_free(&text);
    }
    if (!s->in_feed)
        flush_output(s);
}

/* The prompt decided: the request runs again, allowed, or is denied. */
static void apply_decision(jpt__vfs_session *s, jpt_policy_request *pr)
{
    vfs_req *r = pr->req;

    JPT__LIST_REMOVE(s->decided, pr);
    r->asking = NULL;
    if (pr->decision == JPT_DECISION_DENY) {
        jpt__buf text = JPT__BUF_INIT;
        int rc = jpt__buf_printf(&text, "%s '%s': denied by the host%s%s", pr->method,
                                 pr->requested,
                                 pr->denial != NULL ? ": " : "",
                                 pr->denial != NULL ? pr->denial : "");
        req_error(r, JPT_VFS_E_ACCESS_DENIED, rc == JPT_OK ? text.data : "denied by the host");
        jpt__buf_free(&text);
    } else {
        /* Without memory to remember it, the request is asked again. */
        if (pr->decision == JPT_DECISION_ALLOW_ALWAYS) {
            char *path = jpt__strdup(r->ask_path);
            if (path != NULL && !allow(&s->allowed, r->ask_access, path))
                jpt__free(path);
        }
        if (!allow(&r->once, r->ask_access, r->ask_path))
            jpt__free(r->ask_path);
        r->ask_path = NULL;
        jpt__free(r->ask_reason);
        r->ask_reason = NULL;
        r->ask_requested = NULL;
        start_or_wait(r);
    }
    policy_request_free(pr);
}

/* ---- Output to the tool ------------------------------------------------------------------ */

static int attached_write(jpt__vfs_session *s, const char *p, size_t n, size_t *written);

/* Bytes handed to the transport that still wait for the tool to read
 * them (in the process room's queue for its stdin). */
static size_t unread(const jpt__vfs_session *s)
{
    const char *p;
    size_t queued = jpt__vfs_engine_output(s->engine, &p);

    return queued + (s->child != NULL ? jpt__child_pending_input(s->child) : 0);
}

/* Bytes the tool has read, ever. */
static uint64_t bytes_read(const jpt__vfs_session *s)
{
    return s->handed - (s->child != NULL ? jpt__child_pending_input(s->child) : 0);
}

/* Issue 15 §6: while answers wait that the tool's stdin does not take, the
 * tool must read some of them within the request timeout. */
static void watch_reading(jpt__vfs_session *s)
{
    bool due = !s->ended && s->request_timeout_ms > 0 && unread(s) > 0;

    if (!due) {
        jpt__loop_timer_stop(s->loop, &s->read_timer);
        return;
    }
    if (jpt__loop_timer_active(&s->read_timer))
        return;
    s->read_mark = bytes_read(s);
    if (jpt__loop_timer_start(s->loop, &s->read_timer,
                              jpt__loop_deadline_ms(s->request_timeout_ms)) < 0)
        jpt__log(JPT_LOG_WARNING, "VFS tool '%s': out of memory timing its reading",
                 s->tool_name);
}

static void on_read_timeout(jpt__timer *t)
{
    jpt__vfs_session *s = t->ud;
    uint64_t now_read = bytes_read(s);

    if (now_read != s->read_mark) {
        watch_reading(s); /* it reads, slowly: the clock starts over */
        return;
    }
    fail_tool(s, "The tool read none of the %zu bytes waiting for it for %d ms and was "
                 "stopped (D11 request timeout; vfs.h, \"Bounds\")",
              unread(s), s->request_timeout_ms);
}

/* Room appeared in the answer budget (an answer went out, or a request
 * in flight ended): waiting requests may start, held input be taken. */
static void note_room(jpt__vfs_session *s)
{
    if ((s->wait_head != NULL || s->backlog.len > s->backlog_off) &&
        jpt__vfs_engine_has_room(s->engine))
        schedule(s);
}

/* Hands what the engine queued to the transport, OUT_QUEUE at most. */
static void flush_output(jpt__vfs_session *s)
{
    const char *p;
    size_t n, handed = 0;

    while (!s->ended && (n = jpt__vfs_engine_output(s->engine, &p)) > 0) {
        size_t take = n;
        if (s->child != NULL) {
            size_t queued = jpt__child_pending_input(s->child);
            if (queued >= OUT_QUEUE)
                break; /* more once the pipe drains */
            take = n < OUT_QUEUE - queued ? n : OUT_QUEUE - queued;
            int rc = jpt__child_write(s->child, p, take);
            /* A message that cannot be queued would leave the tool waiting
             * for it (issue 18): the tool is stopped instead. */
            if (rc == JPT_ERR_NOMEM) {
                fail_tool(s, "out of memory writing to the tool");
                return;
            }
            if (rc < 0)
                take = n; /* it closed its stdin: nothing more reaches it */
        } else if (s->wfd >= 0) {
            if (attached_write(s, p, n, &take) < 0)
                take = n;
            if (take == 0)
                break;
        } else
            take = n;
        jpt__vfs_engine_output_done(s->engine, take);
        handed += take;
    }
    s->handed += handed;
    watch_reading(s);
    if (handed > 0)
        note_room(s);
}

/* ---- Input from the tool ------------------------------------------------------------------- */

static void hold_input(jpt__vfs_session *s, bool hold)
{
    if (s->held == hold)
        return;
    s->held = hold;
    if (s->child != NULL)
        jpt__child_hold_output(s->child, hold);
    else if (s->rfd >= 0 && hold)
        jpt__loop_watch_stop(s->loop, &s->rwatch);
}

/* Feeds p[0..n) to the engine; what it does not take waits in the
 * backlog, and the tool's output is held until the engine wants more. */
static void feed(jpt__vfs_session *s, const char *p, size_t n)
{
    size_t used = 0;

    s->in_feed = true;
    int rc = jpt__vfs_engine_feed(s->engine, p, n, &used);
    s->in_feed = false;
    /* A protocol error, or a request the engine had no memory to take,
     * which would never be answered (issue 18): the tool is stopped. */
    if (rc < 0) {
        fail_tool(s, "%s", jpt__vfs_engine_errmsg(s->engine));
        return;
    }
    if (used < n) {
        if (jpt__buf_append(&s->backlog, p + used, n - used) < 0)
            fail_tool(s, "out of memory holding the tool's messages");
        else
            hold_input(s, true);
    }
    flush_output(s);
}

/* Takes what waits in the backlog, as far as the engine wants it. */
static void feed_backlog(jpt__vfs_session *s)
{
    while (s->backlog_off < s->backlog.len && jpt__vfs_engine_wants_input(s->engine)) {
        size_t used = 0;
        s->in_feed = true;
        int rc = jpt__vfs_engine_feed(s->engine, s->backlog.data + s->backlog_off,
                                      s->backlog.len - s->backlog_off, &used);
        s->in_feed = false;
        s->backlog_off += used;
        if (rc < 0) {
            fail_tool(s, "%s", jpt__vfs_engine_errmsg(s->engine));
            return;
        }
        if (used == 0)
            break;
    }
    if (s->backlog_off == s->backlog.len) {
        s->backlog.len = s->backlog_off = 0;
        hold_input(s, false);
        if (s->rfd >= 0 && !s->rwatch.active && !s->ended)
            schedule(s); /* the attached fd is watched again from the step */
    }
    flush_output(s);
}

/* ---- The request timeout --------------------------------------------------------------- */

/* D11: "If the tool does not write a request or final result within a
 * configurable timeout, JP assumes the tool is hung and kills it." The
 * clock runs while the tool owes a message: after init and after an
 * apply, until it reports a state, and never while a request of its waits
 * on the host. */
static void rearm_idle(jpt__vfs_session *s)
{
    bool due = s->working && !s->ended && s->request_timeout_ms > 0 &&
               jpt__vfs_engine_calls(s->engine) == 0;

    if (!due) {
        jpt__loop_timer_stop(s->loop, &s->idle_timer);
        return;
    }
    if (jpt__loop_timer_start(s->loop, &s->idle_timer,
                              jpt__loop_deadline_ms(s->request_timeout_ms)) < 0)
        jpt__log(JPT_LOG_WARNING, "VFS tool '%s': out of memory arming its request timeout",
                 s->tool_name);
}

static void on_idle(jpt__timer *t)
{
    jpt__vfs_session *s = t->ud;

    fail_tool(s, "The tool wrote no request and no result for %d ms and was stopped "
                 "(D11 request timeout)",
              s->request_timeout_ms);
}

/* After every message: the clock starts over. */
static void note_messages(jpt__vfs_session *s)
{
    uint64_t seen = jpt__vfs_engine_messages(s->engine);

    if (seen != s->messages_seen) {
        s->messages_seen = seen;
        rearm_idle(s);
    }
}

/* ---- States from the tool ------------------------------------------------------------------- */

static void on_state(void *ud, jpt_state *st, bool final)
{
    jpt__vfs_session *s = ud;

    /* A state is the tool's answer: it owes nothing until the next apply. */
    s->working = false;
    rearm_idle(s);
    if (final || jpt_state_kind(st) == JPT_STATE_STOPPED)
        s->final_seen = true;
    s->ops.state(s->ops.ud, st);
}

/* ---- The end --------------------------------------------------------------------------------- */

static void stop_process(jpt__vfs_session *s, int grace_ms)
{
    if (s->child != NULL)
        jpt__child_terminate(s->child, grace_ms);
    else if (s->rfd >= 0) {
        /* Attached fds: the tool's end is the end of its input. */
        jpt__loop_watch_stop(s->loop, &s->rwatch);
        jpt__loop_watch_stop(s->loop, &s->wwatch);
        close(s->rfd);
        s->rfd = -1;
        if (s->wfd >= 0)
            close(s->wfd);
        s->wfd = -1;
        schedule(s);
    }
}

static void fail_tool(jpt__vfs_session *s, const char *fmt, ...)
{
    va_list ap;
    jpt__buf text = JPT__BUF_INIT;

    if (s->failure != NULL || s->ended)
        return;
    s->failed = true;
    va_start(ap, fmt);
    int rc = jpt__buf_vprintf(&text, fmt, ap);
    va_end(ap);
    s->failure = rc == JPT_OK ? jpt__buf_take(&text) : NULL;
    jpt__buf_free(&text);
    jpt__log(JPT_LOG_INFO, "VFS tool '%s' stopped: %s", s->tool_name,
             s->failure != NULL ? s->failure : "out of memory");
    hold_input(s, true);
    stop_process(s, s->kill_grace_ms);
}

/* Whether the kept end of its stderr holds `what`. */
static bool stderr_says(const jpt__vfs_session *s, const char *what)
{
    jpt__buf text = JPT__BUF_INIT;
    bool found = jpt__capture_text(&s->err_tail, &text) == JPT_OK && text.data != NULL &&
                 strstr(text.data, what) != NULL;

    jpt__buf_free(&text);
    return found;
}

/* Issue 16 §4: a tool that could not start, most often for want of a file
 * the OS sandbox does not let it read (an interpreter's files, a
 * virtualenv's pyvenv.cfg) or, for a Python tool, of the variables that
 * find jptool (its environment is clean). Said only of a tool that never
 * read its init (every byte of it still in its stdin pipe), sent no valid
 * message, and did not exit 0: a tool that read its arguments and then
 * failed (a KeyError) started, and one that exits 0 (`echo hello`) did not
 * fail to. */
static int add_start_hint(jpt__vfs_session *s, jpt__buf *text)
{
    bool clean_exit = s->exit.known && s->exit.code == 0 && s->exit.signal == 0;

    if (!s->init_unread || clean_exit ||
        jpt__vfs_engine_messages(s->engine) != jpt__vfs_engine_violations(s->engine))
        return JPT_OK;
    if (s->env_hint != NULL && stderr_says(s, "No module named 'jptool'"))
        return jpt__buf_printf(text,
                               ". It ended before it read its input: it could not import "
                               "jptool. A tool's environment is clean (PATH alone), so the "
                               "variables that let the host import jptool do not reach it: "
                               "pass it those jptool.python_tool_env() gives, with %s%s",
                               s->env_hint,
                               s->sandbox_hint != NULL
                                   ? " (in the OS sandbox it must also be let read them: the "
                                     "paths jptool.python_tool_read_paths() gives)."
                                   : ".");
    if (s->sandbox_hint == NULL)
        return JPT_OK;
    return jpt__buf_printf(text,
                           ". It ended before it read its input, and it ran in the OS "
                           "sandbox: the likely cause is a file it needs to start that the "
                           "sandbox does not let it read (its interpreter's, its libraries', "
                           "a virtual environment's). Grant such paths with %s (for a Python "
                           "tool, the paths jptool.python_tool_read_paths() gives).",
                           s->sandbox_hint);
}

/* What the end says when the tool failed by the session's account. */
static jpt_state *failure_state(jpt__vfs_session *s)
{
    jpt__buf text = JPT__BUF_INIT;
    jpt_state *st = NULL;
    int rc;

    if (s->failure != NULL)
        rc = jpt__buf_puts(&text, s->failure);
    else if (s->failed)
        rc = jpt__buf_puts(&text, "out of memory keeping why the tool was stopped");
    else if (s->final_seen || s->cancelled)
        return NULL;
    else if (!s->exit.known)
        rc = jpt__buf_puts(&text, "The tool ended without a result");
    else if (s->exit.signal != 0)
        rc = jpt__buf_printf(&text, "The tool was killed by signal %d without a result",
                             s->exit.signal);
    else
        rc = jpt__buf_printf(&text, "The tool exited (exit status %d) without a result",
                             s->exit.code);
    if (rc == JPT_OK && s->failure == NULL)
        rc = add_start_hint(s, &text);
    if (rc == JPT_OK && jpt__capture_total(&s->err_tail) > 0 &&
        (rc = jpt__buf_puts(&text, "\n\nstderr:\n")) == JPT_OK)
        rc = jpt__capture_text(&s->err_tail, &text);
    /* Through the public builders: the message may hold any byte but NUL. */
    if (rc == JPT_OK && (jpt_state_new(JPT_STATE_STOPPED, &st) < 0 ||
                         jpt_state_add_text(st, text.data != NULL ? text.data : "") < 0 ||
                         jpt_state_set_error(st, "", 0) < 0)) {
        jpt_state_unref(st);
        st = NULL;
    }
    jpt__buf_free(&text);
    return st;
}

/* The tool has ended: every request of its is moot, and the owner hears
 * of the end. */
static void end_session(jpt__vfs_session *s)
{
    if (s->ended)
        return;
    s->ended = true;
    jpt__loop_timer_stop(s->loop, &s->idle_timer);
    jpt__loop_timer_stop(s->loop, &s->read_timer);
    jpt__loop_timer_stop(s->loop, &s->grace_timer);
    while (s->reqs != NULL)
        req_free(s->reqs);
    s->ops.ended(s->ops.ud, failure_state(s));
}

static void on_child_output(jpt__child *c, int stream, const char *p, size_t n, void *ud)
{
    jpt__vfs_session *s = ud;

    (void)c;
    if (stream == JPT__STDERR) {
        if (jpt__capture_append(&s->err_tail, p, n) < 0)
            jpt__log(JPT_LOG_WARNING, "VFS tool '%s': out of memory keeping its stderr",
                     s->tool_name);
        if (s->ops.stderr_bytes != NULL)
            s->ops.stderr_bytes(s->ops.ud, p, n);
        return;
    }
    if (s->ended || s->failure != NULL)
        return;
    if (s->held) {
        /* Read before the hold took effect: it waits its turn. */
        if (jpt__buf_append(&s->backlog, p, n) < 0)
            fail_tool(s, "out of memory holding the tool's messages");
        return;
    }
    feed(s, p, n);
    note_messages(s);
}

static void on_child_exited(jpt__child *c, const jpt__exit *e, void *ud)
{
    jpt__vfs_session *s = ud;

    s->exit = *e;
    s->child = NULL;
    s->init_unread = jpt__child_read_no_input(c);
    /* A tool's last line without its newline is a protocol error. */
    if (!s->ended && s->failure == NULL && s->backlog_off == s->backlog.len &&
        jpt__vfs_engine_eof(s->engine) == JPT_ERR_PROTOCOL && !s->final_seen) {
        s->failed = true;
        s->failure = jpt__strdup(jpt__vfs_engine_errmsg(s->engine));
    }
    jpt__child_free(c);
    end_session(s);
}

static void on_child_drained(jpt__child *c, void *ud)
{
    (void)c;
    flush_output(ud);
}

static const jpt__child_ops child_ops = {on_child_output, on_child_exited, on_child_drained};

/* ---- Attached fds --------------------------------------------------------------------------- */

static int attached_write(jpt__vfs_session *s, const char *p, size_t n, size_t *written)
{
    *written = 0;
    while (*written < n) {
        ssize_t k = write(s->wfd, p + *written, n - *written);
        if (k > 0) {
            *written += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno == EAGAIN) {
            if (!s->wwatch.active && jpt__loop_watch_start(s->loop, &s->wwatch, s->wfd, EPOLLOUT,
                                                           on_attached_writable, s) < 0)
                return JPT_ERR_IO;
            return JPT_OK;
        }
        return JPT_ERR_IO; /* the reader is gone */
    }
    jpt__loop_watch_stop(s->loop, &s->wwatch);
    return JPT_OK;
}

static void on_attached_writable(jpt__watch *w, uint32_t events)
{
    (void)events;
    flush_output(w->ud);
}

static void on_attached_readable(jpt__watch *w, uint32_t events)
{
    jpt__vfs_session *s = w->ud;
    char buf[READ_CHUNK];

    (void)events;
    for (int i = 0; i < READS_PER_EVENT && s->rfd >= 0 && !s->held && !s->ended; i++) {
        ssize_t n = read(s->rfd, buf, sizeof(buf));
        if (n > 0) {
            feed(s, buf, (size_t)n);
            note_messages(s);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        /* Its end: the tool is done. */
        if (s->failure == NULL && jpt__vfs_engine_eof(s->engine) == JPT_ERR_PROTOCOL &&
            !s->final_seen)
            s->failure = jpt__strdup(jpt__vfs_engine_errmsg(s->engine));
        stop_process(s, 0);
        return;
    }
}

/* ---- Steps from the loop ------------------------------------------------------------------- */

static void schedule(jpt__vfs_session *s)
{
    jpt__loop_defer_queue(s->loop, &s->step);
}

/* Decisions of the prompt, greps a slice at a time, held input, and an
 * attached tool's end. */
static void run_step(jpt__defer *d)
{
    jpt__vfs_session *s = d->ud;
    bool more = false;

    if (s->ended)
        return;
    while (s->decided != NULL)
        apply_decision(s, s->decided);
    start_waiting(s);
    for (vfs_req *r = s->reqs, *next; r != NULL; r = next) {
        next = r->next;
        if (r->fc != NULL && jpt__files_call_needs_step(r->fc)) {
            jpt__files_call *fc = r->fc;
            if (jpt__files_step(fc, STEP_NS) == 1)
                more = true; /* else req_done ran and `r` is gone */
        }
    }
    if (s->backlog.len > s->backlog_off)
        feed_backlog(s);
    if (s->rfd >= 0 && !s->held && !s->rwatch.active &&
        jpt__loop_watch_start(s->loop, &s->rwatch, s->rfd, EPOLLIN, on_attached_readable, s) < 0)
        fail_tool(s, "cannot watch the tool's fd");
    if (s->child == NULL && s->rfd < 0) {
        end_session(s);
        return;
    }
    flush_output(s);
    note_messages(s);
    if (more)
        schedule(s);
}

static void on_grace(jpt__timer *t)
{
    jpt__vfs_session *s = t->ud;

    /* D11 "Cancellation": the tool did not end within the timeout. */
    jpt__log(JPT_LOG_INFO, "VFS tool '%s' did not end within %d ms of its cancel", s->tool_name,
             s->kill_grace_ms);
    stop_process(s, s->kill_grace_ms);
}

/* ---- The session -------------------------------------------------------------------------- */

static int session_new(const jpt__vfs_session_config *cfg, const jpt__vfs_session_ops *ops,
                       jpt__errbuf *err, jpt__vfs_session **out)
{
    jpt__vfs_session *s = jpt__calloc(1, sizeof(*s));
    jpt__vfs_handlers h = {.state = on_state, .ud = s};

    *out = NULL;
    if (s == NULL)
        return jpt__err(err, JPT_ERR_NOMEM, "out of memory starting the VFS tool");
    for (int m = JPT__VFS_FS_READ; m <= JPT__VFS_FS_GREP; m++)
        h.method[m] = serve;
    h.method[JPT__VFS_PROCESS_RUN] = serve; /* run.c through req_submit */
    if (cfg->http != NULL)
        h.method[JPT__VFS_HTTP_GET] = h.method[JPT__VFS_HTTP_POST] = serve;
    s->loop = cfg->loop;
    s->files = jpt__files_ref(cfg->files);
    s->policy = cfg->policy;
    s->http = cfg->http;
    jpt__vfs_http_queue_init(&s->http_queue, cfg->loop);
    jpt__vfs_run_queue_init(&s->run_queue, cfg->loop, cfg->slots);
    s->ops = *ops;
    s->rfd = s->wfd = -1;
    s->request_timeout_ms = cfg->request_timeout_ms;
    s->kill_grace_ms = cfg->kill_grace_ms;
    s->run_sandbox_mode =
        cfg->run_sandbox_mode != JPT_SANDBOX_DEFAULT ? cfg->run_sandbox_mode : JPT_SANDBOX_REQUIRED;
    s->sandbox_cache = cfg->sandbox_cache;
    s->env_hint = cfg->env_hint;
    s->working = true; /* it owes a request or a result after init */
    jpt__capture_init(&s->err_tail, STDERR_TAIL);
    jpt__loop_defer_init(&s->step, run_step, s);
    jpt__loop_timer_init(&s->idle_timer, on_idle, s);
    jpt__loop_timer_init(&s->read_timer, on_read_timeout, s);
    jpt__loop_timer_init(&s->grace_timer, on_grace, s);
    int rc = (s->tool_name = jpt__strdup(cfg->init.name)) != NULL &&
                     (cfg->request_id == NULL ||
                      (s->request_id = jpt__strdup(cfg->request_id)) != NULL)
                 ? jpt__vfs_engine_new(&cfg->limits, &h, &cfg->init, err, &s->engine)
                 : jpt__err(err, JPT_ERR_NOMEM, "out of memory starting the VFS tool");
    if (rc < 0) {
        s->ended = true;
        jpt__vfs_session_free(s);
        return rc;
    }
    *out = s;
    return JPT_OK;
}

int jpt__vfs_session_spawn(const jpt__vfs_session_config *cfg, const jpt__spawn *spawn,
                           const jpt__vfs_session_ops *ops, jpt__errbuf *err,
                           jpt__vfs_session **out)
{
    jpt__vfs_session *s;
    int rc = session_new(cfg, ops, err, &s);

    *out = NULL;
    if (rc < 0)
        return rc;
    s->contain = spawn->contain;
    jpt__spawn sp = *spawn;
    sp.stdin_pipe = true;
    sp.pty = false;
    if ((rc = jpt__child_spawn(s->loop, &sp, &child_ops, s, &s->child, err)) < 0) {
        s->ended = true;
        jpt__vfs_session_free(s);
        return rc;
    }
    /* Only a sandbox that walls files in can be why a tool cannot start. */
    if (spawn->sandbox != NULL && spawn->sandbox_report != NULL &&
        (spawn->sandbox_report->enforced & JPT_SANDBOX_ENFORCED_FILES))
        s->sandbox_hint = cfg->sandbox_hint;
    flush_output(s); /* init */
    rearm_idle(s);
    *out = s;
    return JPT_OK;
}

int jpt__vfs_session_attach(const jpt__vfs_session_config *cfg, int rfd, int wfd,
                            const jpt__vfs_session_ops *ops, jpt__errbuf *err,
                            jpt__vfs_session **out)
{
    jpt__vfs_session *s;
    int rc = session_new(cfg, ops, err, &s);

    *out = NULL;
    if (rc < 0)
        return rc;
    s->rfd = rfd;
    s->wfd = wfd;
    if (fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_NONBLOCK) < 0 ||
        fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK) < 0 ||
        jpt__loop_watch_start(s->loop, &s->rwatch, rfd, EPOLLIN, on_attached_readable, s) < 0) {
        rc = jpt__err(err, JPT_ERR_IO, "cannot watch the tool's fds: %s", strerror(errno));
        s->rfd = s->wfd = -1; /* the caller's still */
        s->ended = true;
        jpt__vfs_session_free(s);
        return rc;
    }
    flush_output(s); /* init */
    rearm_idle(s);
    *out = s;
    return JPT_OK;
}

int jpt__vfs_session_apply(jpt__vfs_session *s, const char *input_json, size_t len)
{
    if (s->ended || s->failure != NULL)
        return JPT_ERR_STATE;
    int rc = jpt__vfs_engine_apply(s->engine, input_json, len);
    if (rc < 0)
        return rc;
    s->working = true;
    rearm_idle(s);
    flush_output(s);
    return JPT_OK;
}

void jpt__vfs_session_cancel(jpt__vfs_session *s)
{
    if (s->ended || s->cancelled)
        return;
    s->cancelled = true;
    /* Requests waiting on the prompt are moot (D11 -32005). */
    for (vfs_req *r = s->reqs, *next; r != NULL; r = next) {
        next = r->next;
        if ((r->asking != NULL && r->asking->decision < 0) || r->run != NULL || r->waiting)
            req_error(r, JPT_VFS_E_CANCELLED, "cancelled: the tool is being stopped");
    }
    if (jpt__vfs_engine_cancel(s->engine) < 0)
        jpt__log(JPT_LOG_WARNING, "VFS tool '%s': out of memory sending its cancel",
                 s->tool_name);
    flush_output(s);
    if (jpt__loop_timer_start(s->loop, &s->grace_timer, jpt__loop_deadline_ms(s->kill_grace_ms)) <
        0)
        stop_process(s, s->kill_grace_ms);
}

void jpt__vfs_session_terminate(jpt__vfs_session *s)
{
    if (s->ended)
        return;
    s->cancelled = true;
    stop_process(s, s->kill_grace_ms);
}

void jpt__vfs_session_refresh(jpt__vfs_session *s)
{
    if (s->child != NULL)
        jpt__child_poll(s->child);
}

bool jpt__vfs_session_ended(const jpt__vfs_session *s)
{
    return s->ended;
}

bool jpt__vfs_session_failed(const jpt__vfs_session *s)
{
    return s->failed || !(s->final_seen || s->cancelled);
}

pid_t jpt__vfs_session_pid(const jpt__vfs_session *s)
{
    return s->child != NULL ? jpt__child_pid(s->child) : 0;
}

void jpt__vfs_session_slot_free(jpt__vfs_session *s)
{
    jpt__vfs_run_queue_wake(&s->run_queue);
}

bool jpt__vfs_session_starved(const jpt__vfs_session *s)
{
    return jpt__vfs_run_queue_starved(&s->run_queue);
}

void jpt__vfs_session_refuse_waiting(jpt__vfs_session *s, const char *why)
{
    jpt__vfs_run_queue_refuse(&s->run_queue, why);
}

jpt__child *jpt__vfs_session_take_child(jpt__vfs_session *s)
{
    jpt__child *c = s->child;

    s->child = NULL;
    return c;
}

void jpt__vfs_session_free(jpt__vfs_session *s)
{
    if (s == NULL)
        return;
    jpt__loop_timer_stop(s->loop, &s->idle_timer);
    jpt__loop_timer_stop(s->loop, &s->read_timer);
    jpt__loop_timer_stop(s->loop, &s->grace_timer);
    while (s->reqs != NULL)
        req_free(s->reqs);
    jpt__vfs_http_queue_clear(&s->http_queue);
    jpt__vfs_run_queue_clear(&s->run_queue);
    while (s->decided != NULL) {
        jpt_policy_request *pr = s->decided;
        JPT__LIST_REMOVE(s->decided, pr);
        policy_request_free(pr);
    }
    if (s->child != NULL)
        jpt__child_free(s->child);
    if (s->rfd >= 0) {
        jpt__loop_watch_stop(s->loop, &s->rwatch);
        close(s->rfd);
    }
    if (s->wfd >= 0) {
        jpt__loop_watch_stop(s->loop, &s->wwatch);
        close(s->wfd);
    }
    allowed_free(&s->allowed);
    jpt__vfs_engine_free(s->engine);
    jpt__files_unref(s->files);
    /* Last: ending the requests and the queues above may queue the step. */
    jpt__loop_defer_cancel(s->loop, &s->step);
    jpt__capture_free(&s->err_tail);
    jpt__buf_free(&s->backlog);
    jpt__free(s->failure);
    jpt__free(s->tool_name);
    jpt__free(s->request_id);
    jpt__free(s);
}
