/* The files room's internal interface: ProjectFiles (RFD D09 as D11 uses
 * it) behind one object, jpt_files, over one request-shaped backend
 * interface. Never installed.
 *
 * Layers, each calling only those below it (a backend is reached through
 * its ops table, never by name, from above):
 *
 *   calls.c    the direct C calls (jpt_files_read, …, jpt_files_call: the
 *              public edge, where JSON params are read and results written)
 *   files.c    the object: its constructors, jpt__files_submit/_step/_cancel
 *   dir.c      the directory backend's methods on fds resolved beneath its
 *              root; its constructor
 *   resolve.c  resolution beneath the root: openat2 or a component walk
 *   memory.c   the memory backend; its constructor
 *   host.c     the host-supplied backend: requests the host answers
 *   sync.c     the adapter that serves requests on a synchronous backend
 *              (dir, memory): one method call, or fs.grep in steps
 *   grep.c     fs.grep as an iterator over a synchronous backend's tree
 *   search.c   the line matcher: pcre2 with JIT and a literal fast path
 *   backend.c  what every backend shares: entry lists, the guard, paths
 *   path.c     checking and normalising the relative paths every backend
 *              takes
 *
 * Requests are the wire codec's decoded params (jpt__vfs_params) and
 * results its typed values (jpt__vfs_fs_result): the directory and
 * memory backends never see JSON, the host-supplied one only at its public
 * edge (jpt_files_ops speaks JSON), and the VFS host (lib/vfs) writes the
 * protocol with the codec's writers (jpt__vfs_put_fs_result; fs.grep's
 * result with jpt__vfs_grep_* as it searches). */
#ifndef JPT_LIB_FILES_H
#define JPT_LIB_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
 * `method` is a D11 filesystem method (JPT__VFS_FS_READ … JPT__VFS_FS_GREP)
 * and `p` its params, decoded (vfs-proto's jpt__vfs_params): the paths as
 * the tool wrote them (each backend checks and normalises them), fs.write's
 * bytes, fs.grep's pattern and options. `p` and its strings are borrowed
 * for the call to jpt__files_submit() only.
 *
 * `done` runs exactly once per request taken, unless the request is
 * cancelled first: with JPT_OK and the result as typed values (fs.read's
 * bytes, fs.exists' and fs.metadata's kind and size, fs.list_dir's
 * entries in the backend's order, fs.grep's result text; nothing for
 * fs.write, fs.delete and fs.rename), for the host to write in D11's shape
 * (jpt__vfs_put_fs_result), or with an error status and its message,
 * result NULL. Both are borrowed for the call.
 * Error statuses: JPT_ERR_INVALID (D11 -32602: bad params, a path the rules
 * refuse, a directory where a file is needed), JPT_ERR_NOT_FOUND (-32002),
 * JPT_ERR_EXISTS (-32003), JPT_ERR_DENIED (-32001: a symlink leaving the
 * root, a hard-linked file, the guard), JPT_ERR_UNSUPPORTED (a FIFO, socket
 * or device), JPT_ERR_LIMIT (a file over the read limit), JPT_ERR_TIMEOUT,
 * JPT_ERR_CANCELLED, JPT_ERR_IO, JPT_ERR_PROTOCOL (a host backend's
 * malformed result), JPT_ERR_NOMEM.
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
 * arguments, a method that is not fs.*) without calling `done` when it
 * could not be taken. */
typedef struct jpt__files_call jpt__files_call;
typedef struct jpt__grep jpt__grep;
typedef void (*jpt__files_done_fn)(void *ud, int status, const jpt__vfs_fs_result *result,
                                   const char *message);

int jpt__files_submit(jpt_files *f, int method, const jpt__vfs_params *p,
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

/* ---- The backend interface --------------------------------------------------------
 * Every backend serves requests: what jpt__files_submit() promises, on its
 * own data `impl`. A request in flight begins with a jpt__files_call (its
 * backend's ops), so that files.c reaches its step and cancel. */
typedef struct jpt__files_request {
    int method;                  /* JPT__VFS_FS_* */
    const jpt__vfs_params *p;
    const jpt__files_opts *opts; /* may be NULL */
    jpt__files_done_fn done;
    void *ud;
    jpt__errbuf *e;              /* the object's, for a message before `done` */
} jpt__files_request;

typedef struct jpt__files_backend jpt__files_backend;

struct jpt__files_call {
    const jpt__files_backend *be;
};

struct jpt__files_backend {
    /* Takes the request: as jpt__files_submit(). */
    int (*submit)(void *impl, const jpt__files_request *rq, jpt__files_call **pending);
    /* Advances a request in flight as jpt__files_step(). NULL: requests
     * complete from elsewhere (a host's answer). */
    int (*step)(jpt__files_call *c, uint64_t budget_ns);
    void (*cancel)(jpt__files_call *c);
    /* The root directory's fd; NULL: the backend has no directory. */
    int (*root_fd)(const void *impl);
    /* The object lets go of `impl`; requests in flight may keep it until
     * they end. */
    void (*release)(void *impl);
};

/* A backend as its constructor gives it. */
typedef struct jpt__files_be {
    const jpt__files_backend *ops;
    void *impl;
} jpt__files_be;

struct jpt_files {
    unsigned refs;
    jpt__files_be be;
    jpt__errbuf err;
};

/* ---- What the backends share (backend.c) ----------------------------------------
 * Paths are normalised (path.c); `e` takes the message of a failure, which
 * names `shown` (the requested path, quoted). */
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
/* A request's path (NUL-terminated): quoted into `shown` (256 bytes),
 * checked and normalised into `norm` (JPT__FILES_PATH_MAX + 1 bytes). */
int jpt__files_take_path(int method, const char *path, char *norm, char *shown,
                         jpt__errbuf *e);
/* JPT_ERR_NOMEM with "<method>: out of memory for the result". */
int jpt__files_nomem(jpt__errbuf *e, int method);
/* Whether bytes are text D11 sends as they are: UTF-8 without NUL. */
bool jpt__files_is_text(const char *data, size_t len);

/* ---- The synchronous backends behind the adapter (sync.c) --------------------------
 * The directory and memory backends are method tables that answer at
 * once; the adapter turns them into the request interface. */
typedef struct jpt__files_sync jpt__files_sync;

typedef struct jpt__files_sync_ops {
    int (*read)(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, jpt__buf *out);
    int (*write)(jpt__files_sync *f, const jpt__files_ctx *c, const char *path,
                 const void *data, size_t len);
    /* *kind: JPT_FILES_KIND_*, or 0 when nothing is there. `size` is NULL
     * when only the kind is wanted (fs.exists); with it, a regular file
     * with several hard links is refused as fs.read refuses it (its size
     * and times are those of a file that may be outside the root). */
    int (*stat)(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, int *kind,
                uint64_t *size);
    int (*list)(jpt__files_sync *f, const jpt__files_ctx *c, const char *path,
                jpt__files_list *out);
    int (*remove)(jpt__files_sync *f, const jpt__files_ctx *c, const char *path);
    /* `c->shown` is "from", `shown_to` "to". */
    int (*rename)(jpt__files_sync *f, const jpt__files_ctx *c, const char *from,
                  const char *to, const char *shown_to);

    /* The tree that fs.grep walks. A directory handle lists its entries
     * and opens what is beneath it without following symlinks; the paths
     * of grep's `paths` are opened following symlinks that stay inside. */
    int (*dir_open)(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, void **dir);
    int (*dir_open_at)(jpt__files_sync *f, const jpt__files_ctx *c, void *parent,
                       const char *name, const char *rel, void **dir);
    int (*dir_list)(jpt__files_sync *f, const jpt__files_ctx *c, void *dir,
                    jpt__files_list *out);
    void (*dir_close)(jpt__files_sync *f, void *dir);
    /* Opens a regular file for grep: JPT_ERR_NOT_FOUND (gone), JPT_ERR_DENIED
     * (hard-linked), JPT_ERR_UNSUPPORTED (not a regular file): grep skips
     * those without a word. */
    int (*file_open)(jpt__files_sync *f, const jpt__files_ctx *c, const char *path,
                     void **file);
    int (*file_open_at)(jpt__files_sync *f, const jpt__files_ctx *c, void *dir,
                        const char *name, void **file);
    /* Reads up to n bytes: the count, 0 at the end, or a status. */
    long (*file_read)(jpt__files_sync *f, const jpt__files_ctx *c, void *file, char *buf,
                      size_t n);
    void (*file_close)(jpt__files_sync *f, void *file);

    /* The root-relative path `path` names after resolving its symlinks
     * (for a guard and grep's path filter), into `out`
     * (JPT__FILES_PATH_MAX + 1 bytes). */
    int (*realpath)(jpt__files_sync *f, const jpt__files_ctx *c, const char *path, char *out);

    /* The root directory's fd; NULL: none. */
    int (*root_fd)(const jpt__files_sync *f);
    void (*destroy)(jpt__files_sync *f);
} jpt__files_sync_ops;

struct jpt__files_sync {
    unsigned refs;  /* the object's, and each grep's in flight */
    const jpt__files_sync_ops *be;
    void *impl;
    unsigned flags; /* JPT_FILES_* of jpt_files_open_dir */
    /* fs.read's buffer, lent to one request at a time (`lent`). */
    jpt__buf data;
    bool lent;
};

/* The request interface on the synchronous backend `be` with data `impl`
 * (refs 1): its destroy runs when the last reference goes. JPT_ERR_NOMEM
 * (the caller still owns `impl`). */
int jpt__files_sync_new(const jpt__files_sync_ops *be, void *impl, unsigned flags,
                        jpt__files_be *out);

/* ---- The backends' constructors ------------------------------------------------------ */

/* The directory backend (dir.c). Tests force the component walk instead of
 * openat2 (the path kernels before 5.6 take) with
 * JPT__FILES_FORCE_WALK in `flags`. */
#define JPT__FILES_FORCE_WALK 0x80000000u
int jpt__files_dir_new(const char *root, unsigned flags, jpt__errbuf *e, jpt__files_be *out);
/* The memory backend (memory.c). */
int jpt__files_memory_new(jpt__files_be *out);
/* The host-supplied backend (host.c): `ops` checked by the caller; its
 * release runs when the object and every request in flight are gone. */
int jpt__files_host_new(const jpt_files_ops *ops, void *ud, jpt__files_be *out);

/* ---- The grep iterator (grep.c) -----------------------------------------------
 * fs.grep in slices over a synchronous backend. The params are D11's
 * (pattern, paths, extensions, context) plus case_insensitive,
 * fixed_strings and max_matches. The options' guard, if any, is asked
 * about every directory and file with its root-relative path after
 * symlinks, before it is entered or searched: what it refuses is skipped
 * without a word (the access policy's sensitive paths), except a path
 * named in `paths`, which fails the grep. */
/* Checks the params and compiles the pattern: JPT_ERR_INVALID (with the
 * message in `e`), JPT_ERR_NOMEM. Nothing is read before the first step.
 * `opts` is copied (its guard_ud must outlive the iterator), `p` is not
 * kept; `f` must outlive the iterator. */
int jpt__grep_begin(jpt__files_sync *f, const jpt__vfs_params *p, const jpt__files_opts *opts,
                    jpt__errbuf *e, jpt__grep **out);
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
