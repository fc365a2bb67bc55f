/* jptool — common definitions: export macro, status codes, memory and logging
 * hooks shared by every other header.
 *
 * SPDX-License-Identifier: MIT
 *
 * ABI promises (see README.md, "Stability"):
 *  - Status codes are negative, explicit and append-only; a number is never
 *    reused or renumbered.
 *  - Structs that callers fill in start with `size_t size`, which the caller
 *    sets to sizeof the struct it was compiled against, so the struct can grow.
 *    A size below the first version's is JPT_ERR_INVALID. A larger one (a
 *    caller built against a newer jptool) is accepted when every field this
 *    library does not know is zero, and is JPT_ERR_UNSUPPORTED otherwise, so
 *    a request is never silently ignored. A struct the library fills in
 *    (jpt_output) carries its size too. The two that travel in arrays
 *    (jpt_files_entry, jpt_vfs_http_header) have no size and never change;
 *    every other type is opaque. Checked against each release: README "ABI".
 *  - Strings cross the API as NUL-terminated UTF-8; JSON crosses it as text.
 *    Every JSON text the library reads (tool output, tool definitions, a
 *    model's calls and arguments, answers, schemas, VFS messages) nests at
 *    most JPT_JSON_MAX_DEPTH arrays and objects; deeper text is refused as
 *    malformed, with a message naming the limit, so that no walk of a value
 *    (parsing, checking, copying, writing) runs deeper than that whatever a
 *    tool or a model sends.
 *  - NULL for the object a function works on is never a crash: a function
 *    that returns a status returns JPT_ERR_INVALID (so does a getter of a
 *    status-like int: a kind, a type, a target, an fd); a yes/no or a count
 *    returns 0; a pointer getter returns NULL, but the message getters
 *    (`*_errmsg`, jpt_state_error_message), which never return NULL, "";
 *    a free, cancel or setter does nothing.
 *
 * Threading: the library keeps no global mutable state except the allocator
 * and log hooks below, which are set once before anything else is used, and
 * each thread's last error (jpt_last_error), which is the thread's own. */
#ifndef JPTOOL_COMMON_H
#define JPTOOL_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(JPT_BUILDING_LIBRARY) && defined(__GNUC__)
#define JPT_EXPORT __attribute__((visibility("default")))
#else
#define JPT_EXPORT
#endif

/* ---- Status codes -------------------------------------------------------
 * Every function that can fail returns an int: JPT_OK (0) or one of these.
 * Functions that return a count or a flag document it separately. */
#define JPT_OK 0
#define JPT_ERR_INVALID -1      /* bad argument or malformed input */
#define JPT_ERR_NOMEM -2        /* an allocation failed */
#define JPT_ERR_NOT_FOUND -3    /* unknown tool, handle or path */
#define JPT_ERR_EXISTS -4       /* handle id collision, file exists */
#define JPT_ERR_STATE -5        /* not valid in the current state */
#define JPT_ERR_UNSUPPORTED -6  /* action the tool does not declare */
#define JPT_ERR_DENIED -7       /* access policy */
#define JPT_ERR_TIMEOUT -8      /* a deadline passed */
#define JPT_ERR_CANCELLED -9    /* cancelled by the host or the peer */
#define JPT_ERR_IO -10          /* OS error, errno text in the message */
#define JPT_ERR_PROTOCOL -11    /* peer broke the protocol */
#define JPT_ERR_AGAIN -12       /* nothing ready (event queue empty, not done) */
#define JPT_ERR_SANDBOX -13     /* sandbox required but not enforceable here */
#define JPT_ERR_LIMIT -14       /* size or count limit */

/* The deepest nesting of arrays and objects in JSON text the library
 * reads (see "ABI promises" above): "[[1]]" nests 2. Deep enough for any
 * schema or result a tool means (serde_json stops at 128), shallow enough
 * that every walk of a value fits a 256 KiB stack, sanitizers included. */
#define JPT_JSON_MAX_DEPTH 256

/* The library version as "MAJOR.MINOR.PATCH", e.g. "0.1.0". Static storage. */
JPT_EXPORT const char *jpt_version(void);

/* A short English description of a status code ("invalid argument or
 * malformed input" for JPT_ERR_INVALID). Never NULL: an unknown code gives
 * "unknown status". Static storage. */
JPT_EXPORT const char *jpt_strerror(int status);

/* The symbolic name of a status code ("JPT_ERR_INVALID"), or NULL for a code
 * this version does not know. Static storage. */
JPT_EXPORT const char *jpt_status_name(int status);

/* Frees memory the library handed to the caller (strings returned through a
 * `char **out` parameter). NULL is accepted and ignored. */
JPT_EXPORT void jpt_free(void *p);

/* Why the last call on this thread of a function that has no object to
 * keep its message failed: jpt_registry_new(), jpt_vfs_host_new(),
 * jpt_files_open_dir(), jpt_files_new_memory(), jpt_files_new(),
 * jpt_policy_new(), jpt_policy_normalize_path(), jpt_state_new(),
 * jpt_state_parse(), jpt_uri_canonicalize(), jpt_registry_reap_stale(),
 * jpt_set_allocator(), and jpt_vfs_tool_connect() and
 * jpt_vfs_tool_connect_fds() when they return no tool. Each of them clears
 * it as it begins and, on every error it returns, sets it to a message that
 * names the argument or option and the reason ("jpt_registry_new:
 * settle_ms is -1: a duration is 0 (the default) or more"; "jpt_registry_new:
 * root '/srv/x': No such file or directory"). Like errno, it is meant to be
 * read right after such a call returned an error: another call into jptool
 * on the thread may change it. Functions that work on an object keep their
 * messages there (jpt_registry_errmsg(), jpt_state_errmsg(), …). Never
 * NULL; the text is the calling thread's own (thread-local storage), valid
 * until the thread's next call into jptool. */
JPT_EXPORT const char *jpt_last_error(void);

/* ---- Allocator hook -----------------------------------------------------
 * Every allocation the library makes goes through these functions, and in
 * libjptool so do the allocations of the jansson JSON library
 * (json_set_alloc_funcs; libjptool-tool, vfs_tool.h, has no jansson and
 * leaves its hook alone). Note that jansson's hook is process-wide: if the
 * application uses jansson itself, its JSON values are then allocated here
 * too. libcurl's and pcre2's internal allocations are not routed.
 *
 * All three functions are required. `malloc` and `realloc` return NULL on
 * failure (a failed realloc leaves the block as it was); `free` accepts NULL.
 * A request for 0 bytes is never made. */
typedef struct jpt_allocator {
    size_t size; /* sizeof(jpt_allocator) */
    void *(*malloc)(size_t n, void *ud);
    void *(*realloc)(void *p, size_t n, void *ud);
    void (*free)(void *p, void *ud);
    void *ud;
} jpt_allocator;

/* Installs an allocator (copied), or restores the C library's with NULL.
 * Call it before any other jptool call: once the library has allocated
 * anything it returns JPT_ERR_STATE, because memory from one allocator must
 * never be freed by another. JPT_ERR_INVALID if `a->size` is too small or
 * a function is missing; JPT_ERR_UNSUPPORTED if it sets fields of a newer
 * jptool. Not thread-safe. */
JPT_EXPORT int jpt_set_allocator(const jpt_allocator *a);

/* ---- Logging ------------------------------------------------------------
 * The library never writes to stdout or stderr. Diagnostics go to the
 * function installed here, if any:
 *   ERROR    what the library could not do for lack of memory or an fd;
 *   WARNING  malformed tool output, dropped events, spool files that could
 *            not be written, a tool process whose OS sandbox runs
 *            best-effort without Landlock or seccomp (vfs.h);
 *   INFO     each tool process's start (tool, handle or call id, pid,
 *            program, what its OS sandbox enforces), its end (how it
 *            ended), its timeout, every SIGTERM
 *            and the SIGKILL after the grace, a registry's shutdown, and
 *            how many processes jpt_registry_free() ends itself;
 *   DEBUG    every error a function returns, with its message. */
#define JPT_LOG_ERROR 1
#define JPT_LOG_WARNING 2
#define JPT_LOG_INFO 3
#define JPT_LOG_DEBUG 4

/* `msg` is one line without a trailing newline, valid during the call. */
typedef void (*jpt_log_fn)(int level, const char *msg, void *ud);

/* Installs `fn` for messages of `min_level` or more important (a lower
 * number): min_level JPT_LOG_WARNING delivers errors and warnings. NULL
 * removes the function. Set it before other calls; it is not thread-safe. */
JPT_EXPORT void jpt_set_log(jpt_log_fn fn, void *ud, int min_level);

#ifdef __cplusplus
}
#endif

#endif /* JPTOOL_COMMON_H */
