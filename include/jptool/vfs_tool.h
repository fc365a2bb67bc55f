/* jptool — the tool side of the VFS protocol (D11): a blocking client for
 * VFS tools written in C.
 *
 * SPDX-License-Identifier: MIT
 *
 * A VFS tool is a program a host starts (jptool's registry with
 * `"runtime": "vfs"`, or any host speaking D11) with its stdin and stdout as
 * the protocol's pipes. It touches files only by asking the host, which
 * checks each request against the tool's access policy. A tool reads its
 * context, does its work through the calls below, and ends with a result:
 *
 *     jpt_vfs_tool *t = NULL;
 *     char *text = NULL;
 *     if (jpt_vfs_tool_connect(&t) != JPT_OK) {   // reads `init`
 *         fprintf(stderr, "%s\n", t ? jpt_vfs_tool_errmsg(t) : "out of memory");
 *         return 1;
 *     }
 *     if (jpt_vfs_tool_read(t, "src/main.c", &text, NULL) == JPT_OK)
 *         jpt_vfs_tool_result_text(t, "read it");
 *     else
 *         jpt_vfs_tool_error(t, jpt_vfs_tool_errmsg(t), NULL, 0, 0);
 *     jpt_free(text);
 *     jpt_vfs_tool_free(t);
 *
 * Every call blocks until its answer has arrived, but never deadlocks on a
 * full pipe: while a message is being written, responses are read. Requests
 * may also be pipelined (jpt_vfs_tool_submit…, jpt_vfs_tool_collect…): many
 * ids outstanding, answered by the host in any order.
 *
 * Errors: each call returns JPT_OK or a status; jpt_vfs_tool_errmsg() says
 * why. When the host answered with a JSON-RPC error, the status maps its
 * code (JPT_VFS_E_ACCESS_DENIED -> JPT_ERR_DENIED, JPT_VFS_E_NOT_FOUND ->
 * JPT_ERR_NOT_FOUND, JPT_VFS_E_EXISTS -> JPT_ERR_EXISTS, JPT_VFS_E_TIMEOUT
 * -> JPT_ERR_TIMEOUT, JPT_VFS_E_CANCELLED -> JPT_ERR_CANCELLED,
 * JPT_VFS_E_METHOD_NOT_FOUND -> JPT_ERR_UNSUPPORTED, -32600, -32602 and
 * -32700 -> JPT_ERR_INVALID, any other code -> JPT_ERR_IO),
 * jpt_vfs_tool_error_code() gives the code itself and the message is the
 * host's (when it sent none, or an empty one, a sentence naming the code).
 * jptool.vfs_tool, the Python SDK, answers alike: the conformance cases of
 * test/vfs-tool-conformance run against both. Otherwise:
 *   JPT_ERR_INVALID   a bad argument: NULL, a path that is not UTF-8, JSON
 *                     text that is not JSON;
 *   JPT_ERR_NOMEM     out of memory;
 *   JPT_ERR_IO        the host closed a pipe, or read/write/poll failed
 *                     (the errno text is in the message);
 *   JPT_ERR_PROTOCOL  the host broke the protocol, or answered with id
 *                     null (it could not read a request, which would
 *                     otherwise be waited for forever); the session is
 *                     over and every later call returns it;
 *   JPT_ERR_LIMIT     a message to the host would be longer than
 *                     max_request (nothing was sent), or one from the host
 *                     was longer than max_message (the session is over);
 *   JPT_ERR_CANCELLED the host sent `cancel`: every request waiting for
 *                     its response then ends with it;
 *   JPT_ERR_STATE     the tool is not connected (connecting failed).
 *
 * The host's cancel: once `cancel` arrives, jpt_vfs_tool_cancelled() is 1
 * and the tool should clean up and exit promptly (D11 "Cancellation");
 * requests sent afterwards are still served if the host allows.
 *
 * A jpt_vfs_tool is used from one thread at a time. Strings returned through
 * `char **` parameters are the caller's, freed with jpt_free().
 *
 * Linking: a tool links libjptool-tool.so.0 (`pkg-config --cflags --libs
 * jptool-tool`; meson: dependency('jptool-tool')), the tool side alone,
 * which needs the C library and nothing else: a tool process loads no
 * libcurl, pcre2, libseccomp or jansson, and its start costs little more
 * than a program of its size (issue 17 §3). It exports the functions of
 * this header and those of common.h (jpt_free, jpt_strerror,
 * jpt_status_name, jpt_version, jpt_last_error, jpt_set_allocator,
 * jpt_set_log), not the host's of vfs.h (included here for its constants),
 * registry.h or state.h. libjptool exports the same functions in the same
 * version nodes, for tools linked to it before. A program links one of
 * the two, never both: each has its own allocator and log hooks. The
 * host's OS sandbox lets a tool read the libjptool-tool beside the host's
 * libjptool (vfs.h, "The OS sandbox"). */
#ifndef JPTOOL_VFS_TOOL_H
#define JPTOOL_VFS_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "vfs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jpt_vfs_tool jpt_vfs_tool;

/* The longest line accepted from the host by default (64 MiB): an fs.read
 * of a file of JPT_VFS_CONTENT_LIMIT bytes, whatever its escaping. */
#define JPT_VFS_TOOL_MAX_MESSAGE 67108864

/* What jpt_vfs_tool_metadata() reports. */
#define JPT_VFS_TOOL_FILE 1
#define JPT_VFS_TOOL_DIR 2
#define JPT_VFS_TOOL_SYMLINK 3
#define JPT_VFS_TOOL_OTHER 4 /* a kind this SDK does not know */

/* ---- Connecting -------------------------------------------------------- */

typedef struct jpt_vfs_connect_options {
    size_t size;        /* sizeof(jpt_vfs_connect_options) */
    size_t max_message; /* longest line from the host; 0: JPT_VFS_TOOL_MAX_MESSAGE */
    /* Longest line sent to the host; 0: JPT_VFS_CONTENT_LIMIT +
     * JPT_VFS_ENVELOPE_LIMIT, what jptool's host takes by default. A
     * longer request or notification fails with JPT_ERR_LIMIT before
     * anything is sent (content that needs escaping counts escaped). */
    size_t max_request;
    /* Called from inside a blocking call whenever the host says a request
     * waits (the `pending` notification: a policy prompt is open), with
     * the request's id (as jpt_vfs_tool_submit gave it; 0 if not ours)
     * and the reason; `reason` is valid during the call. May be NULL. */
    void (*on_pending)(uint64_t request_id, const char *reason, void *ud);
    void *ud;
} jpt_vfs_connect_options;

/* Connects over stdin (fd 0) and stdout (fd 1) and reads the host's `init`
 * message. The same as jpt_vfs_tool_connect_fds(0, 1, NULL, out). */
JPT_EXPORT int jpt_vfs_tool_connect(jpt_vfs_tool **out);

/* Connects over `in_fd` (the host's messages) and `out_fd` (to the host)
 * and blocks until `init` has arrived. Both fds are put in non-blocking
 * mode for the session (their flags are restored by jpt_vfs_tool_free);
 * they are not closed. `opts` may be NULL.
 *
 * Like sqlite3_open(), *out is set when connecting itself failed
 * (JPT_ERR_IO: the host closed stdin before init, or fcntl, read or poll
 * failed; JPT_ERR_PROTOCOL: the first message was not a valid init;
 * JPT_ERR_LIMIT), so jpt_vfs_tool_errmsg() can say why: free it then too.
 * It is NULL after JPT_ERR_INVALID (out NULL, a negative fd, opts->size
 * too small), JPT_ERR_UNSUPPORTED (opts sets fields of a newer jptool),
 * and JPT_ERR_NOMEM before connecting began. */
JPT_EXPORT int jpt_vfs_tool_connect_fds(int in_fd, int out_fd,
                                        const jpt_vfs_connect_options *opts,
                                        jpt_vfs_tool **out);

/* Restores the fds' flags and frees the tool. Output not yet written (of
 * submitted requests no one collected) is dropped. NULL is ignored. */
JPT_EXPORT void jpt_vfs_tool_free(jpt_vfs_tool *t);

/* The message of the last failed call, "" if none. Valid until the next
 * call on `t`. */
JPT_EXPORT const char *jpt_vfs_tool_errmsg(const jpt_vfs_tool *t);

/* The JSON-RPC error code (JPT_VFS_E_*) of the last failed call when the
 * host answered it with an error; 0 when the last call succeeded or failed
 * on this side, and for a NULL `t` (there was no answer from a host). */
JPT_EXPORT int jpt_vfs_tool_error_code(const jpt_vfs_tool *t);

/* The `data` of that error (JSON-RPC's error.data) as JSON text, or NULL
 * when it had none (and whenever jpt_vfs_tool_error_code() is 0). jptool's
 * host sends it with process.run's timeout: {"stdout", "stderr",
 * "exit_code", …}, what the process wrote before it was killed. Valid
 * until the next call on `t`. */
JPT_EXPORT const char *jpt_vfs_tool_error_data(const jpt_vfs_tool *t);

/* ---- The initial context (D11 "Initial context") ----------------------
 * Owned by the tool, valid until jpt_vfs_tool_free(); NULL if connecting
 * failed. */

/* The tool's name as the host knows it. */
JPT_EXPORT const char *jpt_vfs_tool_name(const jpt_vfs_tool *t);
/* The call's arguments, answers to earlier questions, and the tool's
 * options, each as JSON text ("{}" when the host sent none). */
JPT_EXPORT const char *jpt_vfs_tool_arguments(const jpt_vfs_tool *t);
JPT_EXPORT const char *jpt_vfs_tool_answers(const jpt_vfs_tool *t);
JPT_EXPORT const char *jpt_vfs_tool_options(const jpt_vfs_tool *t);
/* The host's protocol version, e.g. "0.1.0" ("" when it sent none). */
JPT_EXPORT const char *jpt_vfs_tool_protocol_version(const jpt_vfs_tool *t);

/* ---- Files (D11 "Filesystem methods") ----------------------------------
 * Paths are relative to the project root, UTF-8, as the host's policy
 * sees them. */

/* fs.read: the file's bytes, base64 already decoded, NUL-terminated (the
 * terminator not counted in *len; `len` may be NULL). */
JPT_EXPORT int jpt_vfs_tool_read(jpt_vfs_tool *t, const char *path, char **data,
                                 size_t *len);

/* fs.write: creates or replaces the file (and its parent directories) with
 * `len` bytes; sent as text when they are UTF-8 without NUL bytes, else
 * base64-encoded. */
JPT_EXPORT int jpt_vfs_tool_write(jpt_vfs_tool *t, const char *path, const void *data,
                                  size_t len);

/* fs.exists: *exists is 1 or 0. */
JPT_EXPORT int jpt_vfs_tool_exists(jpt_vfs_tool *t, const char *path, int *exists);

/* fs.list_dir: the directory's entries as the JSON text of D11's array,
 * [{"path":"main.rs","kind":"file"}, …]. */
JPT_EXPORT int jpt_vfs_tool_list_dir(jpt_vfs_tool *t, const char *path,
                                     char **entries_json);

/* fs.metadata: *kind is JPT_VFS_TOOL_FILE, _DIR, _SYMLINK or _OTHER, and
 * *size the size in bytes (0 when the host sent none). Either out pointer
 * may be NULL. */
JPT_EXPORT int jpt_vfs_tool_metadata(jpt_vfs_tool *t, const char *path, int *kind,
                                     uint64_t *size);

/* fs.delete and fs.rename. */
JPT_EXPORT int jpt_vfs_tool_delete(jpt_vfs_tool *t, const char *path);
JPT_EXPORT int jpt_vfs_tool_rename(jpt_vfs_tool *t, const char *from, const char *to);

/* fs.grep's query (D11, plus issue 9's options). */
typedef struct jpt_vfs_grep_query {
    size_t size;                    /* sizeof(jpt_vfs_grep_query) */
    const char *pattern;            /* required: a regular expression, or a
                                     * literal with fixed_strings */
    const char *const *paths;       /* npaths paths to search; none: all */
    size_t npaths;
    const char *const *extensions;  /* nextensions extensions ("rs"); none: all */
    size_t nextensions;
    unsigned context;               /* lines before and after each match */
    int case_insensitive;
    int fixed_strings;
    uint64_t max_matches;           /* 0: the host's default cap */
} jpt_vfs_grep_query;

/* fs.grep: the result's JSON text, {"matches":[{"path","lines":[{
 * "line_number","content","is_match"}]}], …} as the host sent it. */
JPT_EXPORT int jpt_vfs_tool_grep(jpt_vfs_tool *t, const jpt_vfs_grep_query *query,
                                 char **result_json);

/* ---- HTTP (D11 "HTTP methods") -------------------------------------------
 * The host fetches the URL when the tool's network policy allows it
 * (vfs.h, "network.allow" and "URLs"). A header value may hold ${NAME}:
 * the host puts the value of its own environment variable there (for the
 * variables its policy lists), and the tool never reads it —
 * "[REDACTED]" stands wherever the response would show it. An HTTP error
 * status (404, 500) is a response, not an error; the errors are the
 * host's: JPT_ERR_DENIED (-32001: the policy, a variable not listed, a
 * redirect not allowed), JPT_ERR_TIMEOUT (-32004), JPT_ERR_NOT_FOUND
 * (-32002: a variable not set), JPT_ERR_INVALID (-32602: a URL or header
 * the host refuses), JPT_ERR_IO (-32603: the transfer failed, or the
 * response passed the host's size limit; the message says which). */

/* A request header: a name and a value, all a header has. It has no
 * `size`: the library steps through the array by sizeof, so the layout is
 * fixed for good. */
typedef struct jpt_vfs_http_header {
    const char *name;
    const char *value;
} jpt_vfs_http_header;

/* A response: set `size` to sizeof(jpt_vfs_http_response) and the rest to
 * zero before the call, which fills it; jpt_vfs_http_response_clear()
 * frees what it holds. */
typedef struct jpt_vfs_http_response {
    size_t size;
    int status;         /* the HTTP status: 200, 404, … */
    char *headers_json; /* the headers as D11 sends them, a JSON array
                           [{"name": "Content-Type", "value": "…"}, …] */
    char *body;         /* the body's bytes (base64 already decoded),
                           NUL-terminated */
    size_t body_len;    /* without the NUL */
} jpt_vfs_http_response;

/* http.get of `url` with `nheaders` headers (`headers` may be NULL when
 * there are none), the response in `*response`. Besides the host's
 * errors: JPT_ERR_INVALID (NULL `t`, `url` or `response`, a NULL header
 * name or value, text that is not UTF-8, response->size too small),
 * JPT_ERR_UNSUPPORTED (response->size larger, with non-zero bytes this
 * jptool does not know), JPT_ERR_PROTOCOL (a result without a status or
 * body). On error the response holds nothing to free. */
JPT_EXPORT int jpt_vfs_tool_http_get(jpt_vfs_tool *t, const char *url,
                                     const jpt_vfs_http_header *headers, size_t nheaders,
                                     jpt_vfs_http_response *response);

/* http.post of `body_len` bytes (sent as text when they are UTF-8 without
 * NUL bytes, else base64-encoded; `body` may be NULL when body_len is 0),
 * otherwise as jpt_vfs_tool_http_get. */
JPT_EXPORT int jpt_vfs_tool_http_post(jpt_vfs_tool *t, const char *url,
                                      const jpt_vfs_http_header *headers, size_t nheaders,
                                      const void *body, size_t body_len,
                                      jpt_vfs_http_response *response);

/* Frees what a response holds and zeroes it, keeping `size`. NULL is
 * ignored. */
JPT_EXPORT void jpt_vfs_http_response_clear(jpt_vfs_http_response *response);

/* ---- Any method, and pipelining -----------------------------------------*/

/* Sends `method` with `params_json` (JSON text, or NULL for none) and
 * waits: the result's JSON text. For methods this SDK has no function for
 * (the http and process methods have helpers below), and the result as
 * the host sent it. `result_json` may be NULL when the result does not
 * matter. */
JPT_EXPORT int jpt_vfs_tool_call(jpt_vfs_tool *t, const char *method, const char *params_json,
                                 char **result_json);

/* Sends a request without waiting for its response and gives its id. The
 * bytes are written as far as the pipe takes them without blocking; the
 * rest goes with the next blocking call. Collect every id submitted, in
 * any order. */
JPT_EXPORT int jpt_vfs_tool_submit(jpt_vfs_tool *t, const char *method,
                                   const char *params_json, uint64_t *id);
JPT_EXPORT int jpt_vfs_tool_submit_read(jpt_vfs_tool *t, const char *path, uint64_t *id);
JPT_EXPORT int jpt_vfs_tool_submit_write(jpt_vfs_tool *t, const char *path, const void *data,
                                         size_t len, uint64_t *id);

/* Waits for the response to request `id` and forgets the id: the result's
 * JSON text (`result_json` may be NULL), or the file's bytes as
 * jpt_vfs_tool_read() gives them. JPT_ERR_NOT_FOUND with code 0 when `id`
 * is not an outstanding request. */
JPT_EXPORT int jpt_vfs_tool_collect(jpt_vfs_tool *t, uint64_t id, char **result_json);
JPT_EXPORT int jpt_vfs_tool_collect_read(jpt_vfs_tool *t, uint64_t id, char **data,
                                         size_t *len);

/* ---- Processes (D11 "Process methods") -----------------------------------*/

/* What jpt_vfs_tool_process_run() reports when the host could not learn
 * how the process ended (its exit_code is null without a signal). */
#define JPT_VFS_TOOL_EXIT_UNKNOWN (-256)

/* process.run: asks the host to run `program` (a name the host looks up in
 * its PATH, or an absolute path) with `nargs` arguments `args`, forwarding
 * the host's variables named in `envs` (`nenvs` names; each must be listed
 * in the tool's sandbox.commands.<program>.envs), and waits until it has
 * ended. The process runs in the project root with only PATH and those
 * variables, and its output comes back with every forwarded value of 8
 * bytes or more (and its JSON-, URL- and base64-encoded forms) replaced by
 * "[REDACTED]", invalid UTF-8 replaced by U+FFFD, and each stream kept to
 * the host's limit, head and tail around a note of what was left out.
 * `*exit_code`: its exit status (0 to 255), -N when signal N killed it, or
 * JPT_VFS_TOOL_EXIT_UNKNOWN; `*stdout_text` and `*stderr_text` the output
 * (free with jpt_free). Any out pointer may be NULL; `args` and `envs` may
 * be NULL when their count is 0. The host's refusals come as its errors:
 * JPT_ERR_DENIED (the policy, a variable that may not be forwarded; the
 * host's policy handler may have been asked first), JPT_ERR_NOT_FOUND (no
 * such program), JPT_ERR_TIMEOUT (it ran past its time and its process
 * group was killed: jpt_vfs_tool_error_data() holds what it wrote),
 * JPT_ERR_UNSUPPORTED (this host runs no processes), JPT_ERR_INVALID (a
 * relative program path; a string that is not UTF-8);
 * JPT_ERR_PROTOCOL for a result not of D11's shape. */
JPT_EXPORT int jpt_vfs_tool_process_run(jpt_vfs_tool *t, const char *program,
                                        const char *const *args, size_t nargs,
                                        const char *const *envs, size_t nenvs, int *exit_code,
                                        char **stdout_text, char **stderr_text);

/* ---- Stateful tools (D11 "Integration with the stateful tool protocol") */

/* Sends a `state` notification: RFD 009 ToolState JSON text, an object
 * whose "type" is "running", "waiting" or "stopped"
 * ({"type":"waiting","content":"Confirm?","question":{…}}). Blocks until
 * written. JPT_ERR_INVALID if it is not such an object. */
JPT_EXPORT int jpt_vfs_tool_state(jpt_vfs_tool *t, const char *state_json);

/* Waits for the host's next `apply` and gives its input as JSON text (a
 * string input is a JSON string literal). JPT_ERR_CANCELLED when the host
 * sent `cancel` (before any later apply); JPT_ERR_IO when it closed the
 * tool's stdin. Inputs and the cancel are delivered in the order sent. */
JPT_EXPORT int jpt_vfs_tool_next_input(jpt_vfs_tool *t, char **input_json);

/* 1 once the host has sent `cancel`, else 0. */
JPT_EXPORT int jpt_vfs_tool_cancelled(const jpt_vfs_tool *t);

/* ---- The end (D11 "Final result") ----------------------------------------
 * Each blocks until the notification is written; then the tool should
 * exit. */

/* A `result` whose content is `content_json`: RFD 058 content blocks (a
 * JSON array) or a JSON string. JPT_ERR_INVALID if it is neither. */
JPT_EXPORT int jpt_vfs_tool_result(jpt_vfs_tool *t, const char *content_json);

/* A `result` with plain text (UTF-8; invalid sequences become U+FFFD). */
JPT_EXPORT int jpt_vfs_tool_result_text(jpt_vfs_tool *t, const char *text);

/* An `error` (RFD 009 ToolError): the message, `ntrace` trace lines
 * (outermost first; `trace` may be NULL when ntrace is 0), and whether
 * retrying may succeed. */
JPT_EXPORT int jpt_vfs_tool_error(jpt_vfs_tool *t, const char *message,
                                  const char *const *trace, size_t ntrace, int transient);

#ifdef __cplusplus
}
#endif

#endif /* JPTOOL_VFS_TOOL_H */
