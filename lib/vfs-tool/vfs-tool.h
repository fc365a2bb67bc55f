/* The vfs-tool room's internal interface: the tool side of a VFS session
 * (D11), for programs the host runs. It depends on the wire (lib/vfs-proto)
 * and the common room alone, and is built as its own small library,
 * libjptool-tool (lib/vfs-tool/jptool-tool.sym), so that a tool process
 * loads the C library and nothing else; libjptool carries the same objects
 * for the programs linked to it. Never installed.
 *
 * Layers, each calling only those below it:
 *
 *   tool.c     the blocking tool SDK (include/jptool/vfs_tool.h): poll(),
 *              read() and write() on the tool's fds around a client
 *   client.c   the tool-side engine: init, responses, apply, cancel,
 *              pending in; requests and final notifications out
 *
 * The client owns no fd, clock or thread: the caller feeds the bytes it
 * read and writes the bytes the client queued. */
#ifndef JPT_LIB_VFS_TOOL_H
#define JPT_LIB_VFS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "vfs-proto/vfs-proto.h"
#include "jptool/vfs_tool.h"

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

#endif /* JPT_LIB_VFS_TOOL_H */
