/* The files room's internal interface: ProjectFiles (RFD D09 as D11 uses
 * it) behind one object, jpt_files, with three backends. Never installed.
 *
 *   files.c    the object, the D11 methods as JSON requests
 *              (jpt__files_submit, _step, _cancel)
 *   host.c     the host-supplied backend: requests and their answers
 *   calls.c    the direct C calls (jpt_files_read, …)
 *   path.c     checking and normalising the relative paths every backend
 *              takes
 *   dir.c      the directory backend: a root fd, every method on fds
 *              resolved beneath it (resolve.c)
 *   resolve.c  resolution beneath the root: openat2 or a component walk
 *   memory.c   the memory backend
 *   grep.c     fs.grep as an iterator over any backend's tree (tree ops)
 *   search.c   the line matcher: pcre2 with JIT and a literal fast path
 *
 * The VFS host (lib/vfs) calls only this header: jpt__files_submit() for
 * every fs.* method on every backend, jpt__files_step() for a grep it
 * slices across dispatches, jpt__files_cancel() for a request whose tool
 * went away. */
#ifndef JPT_LIB_FILES_H
#define JPT_LIB_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/json.h"
#include "vfs-proto/vfs-proto.h"
#include "jptool/vfs.h"

/* The longest relative path accepted, in bytes (Linux's PATH_MAX less the
 * terminating NUL). */
#define JPT__FILES_PATH_MAX 4095

/* ---- Paths (path.c) -------------------------------------------------------
 * The path rules of every backend: relative to the root, no "..", no NUL,
 * no empty component ("a//b"), at most JPT__FILES_PATH_MAX bytes. "." and
 * "" name the root; "." components are dropped and one trailing '/' is
 * allowed. On success `norm` (JPT__FILES_PATH_MAX + 1 bytes) holds the
 * normal form: components joined by '/', or "." for the root. `len` is the
 * length of `path` (which may hold NULs when it comes from JSON).
 * JPT_ERR_INVALID with a message "<method> '<path>': why" in `e`. */
int jpt__files_path_check(const char *method, const char *path, size_t len, char *norm,
                          jpt__errbuf *e);
/* The message's rendering of a requested path: at most 200 bytes, each
 * control character (C0, DEL, C1), NUL, bidirectional control and line
 * separator shown as '?' (jpt__utf8_misleading), so a hostile path can
 * neither forge lines nor read backwards. */
void jpt__files_path_quote(const char *path, size_t len, char out[256]);

/* ---- Options of one request -------------------------------------------------- */

/* Access kinds a guard is asked about. */
#define JPT__FILES_ACCESS_READ 1  /* read, list, grep, exists, metadata */
#define JPT__FILES_ACCESS_WRITE 2 /* write, delete, rename (both ends) */
/* A directory that a write (fs.write, fs.rename's target) creates on its
 * way to what it writes, asked about before anything is created: refused
 * for what its name is, never for want of a grant, which is the target's
 * to have (issue 15 §2). */
#define JPT__FILES_ACCESS_CREATE 3
/* Or'ed into the kind when the check is about fs.rename's `to` (the
 * other paths are the request's `path` or `from`), for the words of a
 * prompt. */
#define JPT__FILES_ACCESS_TO 0x100
/* The kind without JPT__FILES_ACCESS_TO. */
#define JPT__FILES_ACCESS_KIND(access) ((access) & 0xff)

/* Called with the root-relative path of what a request actually touches,
 * after every symlink is resolved, right before the I/O on the same fd
 * (the access policy's check: D11 "The policy is checked on what is
 * actually opened"); for a path that is not there, with the path it would
 * be, before "not found" is said, so that a refused name answers the same
 * whether or not it exists; for a write, with every directory it would
 * create and its target before anything is created. Return JPT_OK to go
 * on, or a status with a message (at most `cap` bytes with its NUL) to
 * refuse; the request then fails with that status and "<method>
 * '<requested path>': <message>". */
typedef int (*jpt__files_guard_fn)(void *ud, int access, const char *resolved, char *message,
                                   size_t cap);

typedef struct jpt__files_opts {
    size_t read_limit;        /* fs.read: bytes; 0: JPT_FILES_READ_LIMIT */
    size_t grep_max_matches;  /* fs.grep's default cap; 0: JPT_FILES_GREP_MAX_MATCHES */
    jpt__files_guard_fn guard; /* may be NULL */
    void *guard_ud;
} jpt__files_opts;

/* ---- Requests: the D11 methods on any backend (files.c) ---------------------
 * `method` is a D11 filesystem method ("fs.read", "fs.write", "fs.exists",
 * "fs.list_dir", "fs.metadata", "fs.delete", "fs.rename", "fs.grep") and
 * `params` its params object; the result has D11's shape.
 *
 * `done` runs exactly once per request taken, unless the request is
 * cancelled first: with JPT_OK and the result, a JSON object as compact
 * text of `len` bytes without a line break (what a response's "result"
 * holds, ready to be framed), or with an error status and its message,
 * result NULL. Both are borrowed for the call. Results are written
 * without a JSON tree where they can be large (fs.read's content,
 * fs.grep's lines).
 * Error statuses: JPT_ERR_INVALID (D11 -32602: bad params, a path the rules
 * refuse, a directory where a file is needed), JPT_ERR_NOT_FOUND (-32002),
 * JPT_ERR_EXISTS (-32003), JPT_ERR_DENIED (-32001: a symlink leaving the
 * root, a hard-linked file, the guard), JPT_ERR_UNSUPPORTED (a FIFO, socket
 * or device; an unknown method: -32601), JPT_ERR_LIMIT (a file over the read
 * limit), JPT_ERR_TIMEOUT, JPT_ERR_CANCELLED, JPT_ERR_IO, JPT_ERR_PROTOCOL
 * (a host backend's malformed result), JPT_ERR_NOMEM.
 *
 * The directory and memory backends run every method before
 * jpt__files_submit() returns, so `done` runs inside it, except fs.grep:
 * its result comes from jpt__files_step(). A host-supplied backend's
 * requests complete when the host answers, which may be inside submit (the
 * host's call callback answered at once) or at any later time.
 *
 * Returns JPT_OK when the request was taken; then `*pending` is NULL if
 * `done` has run already, else the request in flight (valid until `done`
 * runs or it is cancelled). Returns JPT_ERR_NOMEM or JPT_ERR_INVALID (NULL
 * arguments) without calling `done` when it could not be taken. */
typedef struct jpt__files_call jpt__files_call;
typedef struct jpt__grep jpt__grep;
typedef void (*jpt__files_done_fn)(void *ud, int status, const char *result, size_t len,
                                   const char *message);

int jpt__files_submit(jpt_files *f, const char *method, json_t *params,
                      const jpt__files_opts *opts, jpt__files_done_fn done, void *ud,
                      jpt__files_call **pending);
/* Whether the request needs jpt__files_step() (a grep on a directory or
 * memory backend) rather than waiting for a host's answer. */
bool jpt__files_call_needs_step(const jpt__files_call *c);
/* Advances a request that needs steps for about `budget_ns` nanoseconds
 * (the clock is read after every file and every 64 KiB searched). Returns
 * 1 if it needs more steps, 0 once `done` has run (the call is then gone). */
int jpt__files_step(jpt__files_call *c, uint64_t budget_ns);
/* Abandons a request in flight: `done` will not run. A host backend's
 * request stays valid for the host to answer (its answer is dropped). */
void jpt__files_cancel(jpt__files_call *c);

/* The directory backend's root, an open directory the caller
 * may use but not close: where process.run starts its children. -1 for
 * the memory and host-supplied backends, which have no directory. */
int jpt__files_root_fd(const jpt_files *f);

/* References: a jpt_files shared by several hosts lives until the last
 * reference goes (jpt_files_free drops the creator's). */
jpt_files *jpt__files_ref(jpt_files *f);
void jpt__files_unref(jpt_files *f);

/* ---- Backends (dir.c, memory.c) ---------------------------------------------
 * What each backend provides. Paths are normalised (path.c); `e` takes the
 * message of a failure, which names `shown` (the requested path, quoted). */
/* An entry: its name and JPT_FILES_KIND_* (the wire codec's type, which
 * writes fs.list_dir's result from them). */
typedef jpt__vfs_fs_entry jpt__files_entry;

typedef struct jpt__files_list {
    jpt__files_entry *v;
    size_t n, cap;
} jpt__files_list;

void jpt__files_list_free(jpt__files_list *l);
int jpt__files_list_add(jpt__files_list *l, const char *name, size_t len, int kind);
/* Sorts by name, bytewise (the order of list_dir and of grep's walk). */
void jpt__files_list_sort(jpt__files_list *l);

/* One request's context for a backend method. */
typedef struct jpt__files_ctx {
    const char *method; /* "fs.read", … for messages */
    const char *shown;  /* the requested path, quoted for messages */
    const jpt__files_opts *opts;
    jpt__errbuf *e;
} jpt__files_ctx;

/* Whether the request has a guard (an access policy) to ask. */
bool jpt__files_guarded(const jpt__files_ctx *c);
/* The guard's verdict on `resolved` for `access` (JPT__FILES_ACCESS_*):
 * JPT_OK (also without a guard), or its refusal with the message
 * "<method> '<shown>': <why>" in c->e. */
int jpt__files_guard(const jpt__files_ctx *c, int access, const char *resolved);
/* jpt__files_guard() on a write of the normal path `target`: first on
 * each directory above it that it would create — those longer than the
 * `exists_len` bytes of it that are there — as JPT__FILES_ACCESS_CREATE,
 * then on `target` as JPT__FILES_ACCESS_WRITE; with `to`, each or'ed with
 * JPT__FILES_ACCESS_TO. */
int jpt__files_guard_write(const jpt__files_ctx *c, const char *target, size_t exists_len,
                           bool to);
/* Joins a parent's root-relative path ("." the root) and a name into
 * `out` (JPT__FILES_PATH_MAX + 1 bytes); false if it is too long. */
bool jpt__files_join(char *out, const char *parent, const char *name);

typedef struct jpt__files_backend {
    int (*read)(jpt_files *f, const jpt__files_ctx *c, const char *path, jpt__buf *out);
    int (*write)(jpt_files *f, const jpt__files_ctx *c, const char *path, const void *data,
                 size_t len);
    /* *kind: JPT_FILES_KIND_*, or 0 when nothing is there. `size` is NULL
     * when only the kind is wanted (fs.exists); with it, a regular file
     * with several hard links is refused as fs.read refuses it (its size
     * and times are those of a file that may be outside the root). */
    int (*stat)(jpt_files *f, const jpt__files_ctx *c, const char *path, int *kind,
                uint64_t *size);
    int (*list)(jpt_files *f, const jpt__files_ctx *c, const char *path, jpt__files_list *out);
    int (*remove)(jpt_files *f, const jpt__files_ctx *c, const char *path);
    /* `c->shown` is "from", `shown_to` "to". */
    int (*rename)(jpt_files *f, const jpt__files_ctx *c, const char *from, const char *to,
                  const char *shown_to);

    /* The tree that fs.grep walks. A directory handle lists its entries
     * and opens what is beneath it without following symlinks; the paths
     * of grep's `paths` are opened following symlinks that stay inside. */
    int (*dir_open)(jpt_files *f, const jpt__files_ctx *c, const char *path, void **dir);
    int (*dir_open_at)(jpt_files *f, const jpt__files_ctx *c, void *parent, const char *name,
                       const char *rel, void **dir);
    int (*dir_list)(jpt_files *f, const jpt__files_ctx *c, void *dir, jpt__files_list *out);
    void (*dir_close)(jpt_files *f, void *dir);
    /* Opens a regular file for grep: JPT_ERR_NOT_FOUND (gone), JPT_ERR_DENIED
     * (hard-linked), JPT_ERR_UNSUPPORTED (not a regular file): grep skips
     * those without a word. */
    int (*file_open)(jpt_files *f, const jpt__files_ctx *c, const char *path, void **file);
    int (*file_open_at)(jpt_files *f, const jpt__files_ctx *c, void *dir, const char *name,
                        void **file);
    /* Reads up to n bytes: the count, 0 at the end, or a status. */
    long (*file_read)(jpt_files *f, const jpt__files_ctx *c, void *file, char *buf, size_t n);
    void (*file_close)(jpt_files *f, void *file);

    /* The root-relative path `path` names after resolving its symlinks
     * (for a guard and grep's path filter), into `out`
     * (JPT__FILES_PATH_MAX + 1 bytes). */
    int (*realpath)(jpt_files *f, const jpt__files_ctx *c, const char *path, char *out);

    void (*destroy)(jpt_files *f);
} jpt__files_backend;

#define JPT__FILES_DIR 1
#define JPT__FILES_MEMORY 2
#define JPT__FILES_HOST 3

struct jpt_files {
    unsigned refs;
    int type; /* JPT__FILES_* */
    const jpt__files_backend *be;
    void *impl;
    unsigned flags; /* JPT_FILES_* of jpt_files_open_dir */
    jpt__errbuf err;
    /* host-supplied backend */
    jpt_files_ops ops;
    void *ud;
    /* The directory and memory backends' buffers, lent to one request at
     * a time (`lent`): the bytes fs.read reads, the result's text. */
    jpt__buf data, text;
    bool lent;
};

/* ---- The object's own parts (files.c, host.c, calls.c) ------------------------ */

/* The D11 filesystem methods, in the order of jpt__files_method_names. */
enum {
    JPT__FS_READ,
    JPT__FS_WRITE,
    JPT__FS_EXISTS,
    JPT__FS_LIST,
    JPT__FS_METADATA,
    JPT__FS_DELETE,
    JPT__FS_RENAME,
    JPT__FS_GREP,
    JPT__FS_COUNT
};

extern const char *const jpt__files_method_names[JPT__FS_COUNT]; /* "fs.read", … */

/* The JPT_FILES_KIND_* a JSON string names ("file", "dir", "symlink",
 * "other"); 0 for anything else. */
int jpt__files_kind_json(const json_t *s);
/* The method's JPT__FS_* number, or -1. */
int jpt__files_method_id(const char *name);
/* params[key] as a path: checked, normalised into `norm`
 * (JPT__FILES_PATH_MAX + 1 bytes), quoted into `shown` (256 bytes). */
int jpt__files_take_path(json_t *params, const char *key, int m, char *norm, char *shown,
                         jpt__errbuf *e);
/* JPT_ERR_NOMEM with "<method>: out of memory for the result". */
int jpt__files_nomem(jpt__errbuf *e, int m);
/* Whether bytes are text D11 sends as they are: UTF-8 without NUL. */
bool jpt__files_is_text(const char *data, size_t len);

/* A request in flight (jpt__files_submit's `pending`). */
struct jpt__files_call {
    jpt_files *f;
    jpt__files_done_fn done;
    void *ud;
    jpt__files_opts opts;   /* a host backend's: its grep's matches are guarded */
    jpt__grep *grep;        /* a grep on the directory or memory backend */
    jpt_files_request *req; /* a host-supplied backend's request */
};

jpt__files_call *jpt__files_call_new(jpt_files *f, jpt__files_done_fn done, void *ud);
void jpt__files_call_free(jpt__files_call *c);

/* Method `m` as a request to the host (host.c), as jpt__files_submit()
 * promises. */
int jpt__files_host_submit(jpt_files *f, int m, json_t *params, const jpt__files_opts *opts,
                           jpt__files_done_fn done, void *ud, jpt__files_call **pending);
/* jpt__files_cancel() of a host request. */
void jpt__files_host_cancel(jpt__files_call *c);

/* Creates the object around a backend (refs 1). */
int jpt__files_wrap(int type, const jpt__files_backend *be, void *impl, jpt_files **out);

/* The directory backend (dir.c). Tests force the component walk instead of
 * openat2 (the path kernels before 5.6 take) with
 * JPT__FILES_FORCE_WALK in `flags`. */
#define JPT__FILES_FORCE_WALK 0x80000000u
int jpt__files_dir_new(const char *root, unsigned flags, jpt__errbuf *e, jpt_files **out);
/* The memory backend (memory.c). */
int jpt__files_memory_new(jpt_files **out);

/* ---- The grep iterator (grep.c) -----------------------------------------------
 * fs.grep in slices. `params` are D11's (pattern, paths, extensions,
 * context) plus case_insensitive, fixed_strings and max_matches. The
 * options' guard, if any, is asked about every directory and file with its
 * root-relative path after symlinks, before it is entered or searched:
 * what it refuses is skipped without a word (the access policy's
 * sensitive paths), except a path named in `paths`, which fails the grep. */
/* Checks the params and compiles the pattern: JPT_ERR_INVALID (with the
 * message in `e`), JPT_ERR_NOMEM. Nothing is read before the first step.
 * `opts` is copied (its guard_ud must outlive the iterator). */
int jpt__grep_begin(jpt_files *f, json_t *params, const jpt__files_opts *opts, jpt__errbuf *e,
                    jpt__grep **out);
/* Searches for about `budget_ns` (0: to the end). Returns 1 if more remains,
 * 0 when done (jpt__grep_result then holds the result), or an error status
 * with the message in jpt__grep_errmsg(). */
int jpt__grep_step(jpt__grep *g, uint64_t budget_ns);
/* The result once done, as JSON text of `*len` bytes: {"matches":[{"path",
 * "lines":[{"line_number","content","is_match"}]}],"truncated":bool}, with
 * "skipped" and "skipped_count" when lines were skipped (vfs.h), borrowed
 * from the iterator. */
const char *jpt__grep_result(const jpt__grep *g, size_t *len);
const char *jpt__grep_errmsg(const jpt__grep *g);
void jpt__grep_free(jpt__grep *g);

/* ---- The line matcher (search.c) ----------------------------------------------- */
typedef struct jpt__matcher jpt__matcher;

/* Compiles `pattern` (pcre2 syntax, or a literal string with `fixed`):
 * JPT_ERR_INVALID with pcre2's message and offset, JPT_ERR_NOMEM. */
int jpt__matcher_new(const char *pattern, size_t len, bool fixed, bool caseless,
                     jpt__errbuf *e, jpt__matcher **out);
void jpt__matcher_free(jpt__matcher *m);
/* Whether the text given to jpt__matcher_find must be valid UTF-8 (the
 * caller repairs it as ripgrep's decoder does: each maximal invalid
 * subpart becomes U+FFFD); otherwise any bytes will do, and the matcher
 * repairs the lines it judges itself. */
bool jpt__matcher_needs_utf8(const jpt__matcher *m);
/* Finds the first line of [p, end) that matches, each line judged alone
 * (without its '\n'). The text is whole lines: each ends with '\n' except
 * perhaps the last. Returns 1 with the line's bounds (its '\n' excluded) in
 * *line and *line_end, 0 if no line matches, JPT_ERR_LIMIT with the bounds
 * of a line that needs more than pcre2's limits allow (the search may go
 * on after it; jpt__matcher_reason says which limit), or JPT_ERR_NOMEM. */
int jpt__matcher_find(jpt__matcher *m, const char *p, const char *end, const char **line,
                      const char **line_end);
/* The index of the first byte of p[0..n) that is not ASCII, or n. */
size_t jpt__ascii_prefix(const char *p, size_t n);
/* pcre2's words for the limit of the last JPT_ERR_LIMIT. */
const char *jpt__matcher_reason(const jpt__matcher *m);
/* How lines are found (for tests): by a scan for this literal (NULL if
 * none), or line by line (neither: over many lines at once). */
const char *jpt__matcher_literal(const jpt__matcher *m, size_t *len);
bool jpt__matcher_line_by_line(const jpt__matcher *m);
/* Forces pcre2's interpreter instead of its JIT (for tests). */
void jpt__matcher_disable_jit(jpt__matcher *m);

#endif /* JPT_LIB_FILES_H */
