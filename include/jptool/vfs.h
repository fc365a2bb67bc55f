/* jptool — VFS tools (D11): ProjectFiles, the access policy, and the host
 * that serves a tool process's JSON-RPC requests through them.
 *
 * SPDX-License-Identifier: MIT
 *
 * A VFS tool is a process that touches files only by asking the host over
 * NDJSON JSON-RPC on its stdin and stdout; each request is checked against
 * an access policy and served by a ProjectFiles backend. */
#ifndef JPTOOL_VFS_H
#define JPTOOL_VFS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "state.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== ProjectFiles (lib/files) ========================================== */

/* ProjectFiles (RFD D09 as D11 uses it): the files a VFS tool reads and
 * writes, behind one object with three backends:
 *
 *  - a directory (jpt_files_open_dir), confined beneath its root: every
 *    path is resolved from a descriptor of the root with openat2
 *    (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), or, on kernels without it,
 *    one component at a time without following any symlink blindly; the
 *    checks and the I/O happen on the same descriptor, so renaming
 *    directories and symlinks meanwhile never leads outside the root;
 *  - memory (jpt_files_new_memory): files and directories in the
 *    process, for tests and for sandboxes without a disk;
 *  - the host's own (jpt_files_new): each method is a request the host
 *    answers, at once or later (a database, a remote store).
 *
 * Paths are relative to the root, '/'-separated: an absolute path, a ".."
 * component, a NUL byte, an empty component ("a//b") or more than 4095
 * bytes is JPT_ERR_INVALID. "." components are ignored, one trailing '/'
 * is allowed, and "" or "." names the root. Symlinks inside the root work
 * as symlinks do (a symlink whose target leaves the root, or is absolute,
 * is JPT_ERR_DENIED wherever it is met; the memory backend has none). A
 * path with a name on the way that is not a directory is JPT_ERR_NOT_FOUND,
 * as one with a missing name is. Paths are resolved one name at a time in
 * a loop: a path of 2 000 names (the most 4095 bytes hold) costs 2 000
 * steps and no deeper stack than a path of one.
 *
 * Every error message names the method and the path as requested
 * ("fs.read 'src/x.rs': not found"), never the root's absolute path or a
 * symlink's target, so it can be shown to a tool as it is.
 *
 * Errors every call may return besides those it lists: JPT_ERR_INVALID
 * (a NULL argument, a path the rules above refuse), JPT_ERR_DENIED (a
 * symlink on the way leaves the root; the OS refused access), JPT_ERR_IO
 * (any other OS error, its text in the message), JPT_ERR_NOMEM; on a
 * host-supplied backend also whatever the host answered, JPT_ERR_PROTOCOL
 * for an answer of the wrong shape, and JPT_ERR_AGAIN (below).
 *
 * Threading: a jpt_files is used from one thread at a time. */
typedef struct jpt_files jpt_files;

/* Flags for jpt_files_open_dir(). */
#define JPT_FILES_ALLOW_HARDLINKS 0x1u /* read and write regular files that have
                                          more than one hard link (the policy's
                                          "filesystem": {"hardlinks": "allow"}) */
#define JPT_FILES_FSYNC 0x2u           /* fs.write syncs the file before it
                                          replaces the old one */

/* What a path is (list_dir, metadata). */
#define JPT_FILES_KIND_FILE 1    /* "file": a regular file */
#define JPT_FILES_KIND_DIR 2     /* "dir" */
#define JPT_FILES_KIND_SYMLINK 3 /* "symlink": only in list_dir, which does
                                    not follow symlinks */
#define JPT_FILES_KIND_OTHER 4   /* "other": a FIFO, socket or device */

/* fs.read's default limit, D11's message size threshold: 10 MB. */
#define JPT_FILES_READ_LIMIT (10u * 1000u * 1000u)
/* fs.grep's default cap on matched lines. */
#define JPT_FILES_GREP_MAX_MATCHES 1000u
/* The most skipped lines fs.grep's result lists (it counts them all). */
#define JPT_FILES_GREP_MAX_SKIPPED 100u

/* Opens the directory `root` (absolute or relative to the current
 * directory; it is opened once, and later renames of it do not matter).
 * Only regular files are read and written: FIFOs, sockets and devices are
 * JPT_ERR_UNSUPPORTED at once (a FIFO is opened without blocking), and a
 * regular file with more than one hard link is JPT_ERR_DENIED (it may be a
 * file outside the root) unless `flags` has JPT_FILES_ALLOW_HARDLINKS.
 * Errors: JPT_ERR_INVALID (NULL, unknown flags), JPT_ERR_NOT_FOUND (no
 * such directory), JPT_ERR_IO (not a directory, or cannot be opened),
 * JPT_ERR_NOMEM. Free with jpt_files_free(). */
JPT_EXPORT int jpt_files_open_dir(const char *root, unsigned flags, jpt_files **out);

/* Creates an empty memory backend: the same methods, path rules and
 * errors as a directory, without symlinks, modes or hard links. Errors:
 * JPT_ERR_INVALID, JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_files_new_memory(jpt_files **out);

/* A request to a host-supplied backend: one D11 method call. Valid from the
 * call callback until the host answers it with jpt_files_request_reply()
 * or jpt_files_request_fail(), which it must do exactly once, from any
 * later point of the same thread (not from another thread). */
typedef struct jpt_files_request jpt_files_request;

/* The callbacks of a host-supplied backend. */
typedef struct jpt_files_ops {
    size_t size; /* sizeof(jpt_files_ops) */
    /* A request: `method` is a D11 filesystem method ("fs.read",
     * "fs.write", "fs.exists", "fs.list_dir", "fs.metadata", "fs.delete",
     * "fs.rename", "fs.grep") and `params_json` its params object, after
     * the path rules were checked (paths are in their normal form),
     * written by jptool with D11's members only: fs.write's "content" is
     * text, or base64 with "encoding": "base64" for bytes that are not
     * UTF-8 text; fs.grep's "context", "case_insensitive" and
     * "fixed_strings" are always given. Answer with D11's result shape,
     * now or later. Return JPT_OK once the request
     * is the host's to answer, or an error status to fail it at once (then
     * do not answer it). Strings are valid during the call. Required. */
    int (*call)(jpt_files_request *req, const char *method, const char *params_json,
                void *ud);
    /* The request's answer is no longer wanted (its tool went away); the
     * host may stop the work but must still answer, which releases it. May
     * be NULL. */
    void (*cancel)(jpt_files_request *req, void *ud);
    /* The backend is freed, with no request left unanswered; release `ud`.
     * May be NULL. */
    void (*release)(void *ud);
} jpt_files_ops;

/* Creates a backend whose methods the host serves (`ops` is copied; `ud`
 * is passed to every callback). Each result is checked for D11's shape.
 * Errors: JPT_ERR_INVALID (NULL, no call callback, `ops->size` too small),
 * JPT_ERR_UNSUPPORTED (ops that set fields of a newer jptool),
 * JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_files_new(const jpt_files_ops *ops, void *ud, jpt_files **out);

/* Answers a request with its result, a JSON object in D11's shape for the
 * method: {"content": "…", "size": 13} for fs.read (with "encoding":
 * "base64" for bytes that are not text), {} for fs.write, fs.delete and
 * fs.rename, {"exists": true}, {"kind": "file", "size": 13},
 * {"entries": [{"path": name, "kind": "file"}]}, {"matches": […]}. The
 * result is read into its values (fs.read's bytes, base64 decoded; a kind
 * and size; the entries) and a tool is sent them in D11's shape, members
 * D11 does not name left out; fs.read's bytes over the read limit fail the
 * request with JPT_ERR_LIMIT. The request is gone afterwards, whatever the
 * status. Errors:
 * JPT_ERR_INVALID (NULL, or `result_json` is not a JSON object of that
 * shape: the request then fails with JPT_ERR_PROTOCOL and a message
 * saying what was expected), JPT_ERR_NOMEM (the request fails with it). */
JPT_EXPORT int jpt_files_request_reply(jpt_files_request *req, const char *result_json);

/* Fails a request: `status` is a JPT_ERR_* code (JPT_ERR_NOT_FOUND,
 * JPT_ERR_DENIED, …; anything else non-negative becomes JPT_ERR_IO) and
 * `message` says why (may be NULL); the tool is told "<method> '<path>':
 * <message>". The request is gone afterwards. Errors: JPT_ERR_INVALID
 * (NULL request). */
JPT_EXPORT int jpt_files_request_fail(jpt_files_request *req, int status,
                                      const char *message);

/* Drops the caller's reference; the backend is freed once no VFS host uses
 * it and (host-supplied) every request is answered. NULL-safe. */
JPT_EXPORT void jpt_files_free(jpt_files *f);

/* The message of the last failed call on `f`, or "". */
JPT_EXPORT const char *jpt_files_errmsg(const jpt_files *f);

/* ---- The methods, called directly -------------------------------------------
 * On a host-supplied backend each call is a request; it returns the
 * host's answer if the host answered inside its call callback, and
 * JPT_ERR_AGAIN otherwise (the request is cancelled: a host that answers
 * later is served through the VFS host, which waits). */

/* fs.read: the whole file into `*data` (NUL-terminated, `*len` bytes
 * before the NUL; free with jpt_free), and in `*utf8` (may be NULL)
 * whether it is text D11 sends as it is: valid UTF-8 without a NUL byte;
 * otherwise D11 sends it in base64. `limit` is the largest size read
 * (0: JPT_FILES_READ_LIMIT). Errors: JPT_ERR_NOT_FOUND, JPT_ERR_INVALID (a
 * directory), JPT_ERR_UNSUPPORTED (a FIFO, socket or device),
 * JPT_ERR_DENIED (more than one hard link), JPT_ERR_LIMIT (larger than
 * `limit`). On error *data is NULL. */
JPT_EXPORT int jpt_files_read(jpt_files *f, const char *path, size_t limit, char **data,
                              size_t *len, int *utf8);

/* fs.write: replaces the file's content atomically (a temporary file in the
 * same directory, renamed over the old one: a reader sees the old content
 * or the new, and a failed write leaves the old file as it was), keeping
 * an existing file's mode but its set-user-ID and set-group-ID bits (the
 * content is new, as when the kernel drops them for a write by another
 * user); a new file gets 0666 less the umask. Missing
 * parent directories are created (0777 less the umask), as D11 says —
 * served to a VFS tool, only once the access policy has let the write and
 * every directory it would create (nothing is made for a refused or a
 * pending request). A symlink (inside the root) is written through: its
 * target is replaced, and its target's missing directories are created.
 * A hard-linked file (where JPT_FILES_ALLOW_HARDLINKS allows it) is
 * replaced by a new file: its other links keep the old content. Errors:
 * JPT_ERR_INVALID (the root, a directory, a parent that is not a
 * directory), JPT_ERR_UNSUPPORTED (a FIFO, socket or device is there),
 * JPT_ERR_DENIED (more than one hard link; a directory the OS does not
 * let this process write), JPT_ERR_IO (no space, the file size limit: the
 * old content is intact, and no temporary file is left). */
JPT_EXPORT int jpt_files_write(jpt_files *f, const char *path, const void *data, size_t len);

/* fs.exists: `*exists` is 1 if something is at `path` (following
 * symlinks: a dangling one is 0), else 0. Errors: only the common ones. */
JPT_EXPORT int jpt_files_exists(jpt_files *f, const char *path, int *exists);

/* fs.metadata: what `path` is (following symlinks) and its size in bytes
 * (0 for what is not a regular file). Errors: JPT_ERR_NOT_FOUND,
 * JPT_ERR_DENIED (a regular file with more than one hard link, as
 * jpt_files_read() refuses it: its size and times may be those of a file
 * outside the root). */
JPT_EXPORT int jpt_files_metadata(jpt_files *f, const char *path, int *kind, uint64_t *size);

/* One entry of jpt_files_list_dir(). It has no `size`: a program steps
 * through the array by its own sizeof, so the layout is fixed for good.
 * What D11 may add to an entry reaches the host through
 * jpt_files_call("fs.list_dir"), whose JSON grows freely. */
typedef struct jpt_files_entry {
    const char *name; /* the entry's name, not its path */
    int kind;         /* JPT_FILES_KIND_*; symlinks are not followed */
} jpt_files_entry;

/* fs.list_dir: the entries of the directory `path` (without "." and ".."),
 * sorted by name bytewise, in one block (array and names) that the caller
 * frees with jpt_free. Errors: JPT_ERR_NOT_FOUND, JPT_ERR_INVALID (not a
 * directory). On error *entries is NULL and *count 0. */
JPT_EXPORT int jpt_files_list_dir(jpt_files *f, const char *path, jpt_files_entry **entries,
                                  size_t *count);

/* fs.delete: removes the file at `path` (a symlink itself, not its
 * target). Errors: JPT_ERR_NOT_FOUND, JPT_ERR_INVALID (the root or a
 * directory: D11 deletes files). */
JPT_EXPORT int jpt_files_delete(jpt_files *f, const char *path);

/* fs.rename: moves `from` (a file, symlink or directory) to `to`, creating
 * the missing parents of `to`; an existing `to` is never replaced. Errors:
 * JPT_ERR_NOT_FOUND (no `from`), JPT_ERR_EXISTS (`to` exists),
 * JPT_ERR_INVALID (the root, a directory into itself, a parent of `to`
 * that is not a directory). */
JPT_EXPORT int jpt_files_rename(jpt_files *f, const char *from, const char *to);

/* fs.grep, blocking: searches the files under `params_json`'s paths and
 * puts the result in `*result_json` (free with jpt_free). The lines found
 * are those `rg -P --no-ignore --hidden -g '!.git' --sort path` prints,
 * with the differences listed below. The params are D11's and three more:
 *   pattern           required; pcre2 syntax (Perl's), compiled as ripgrep
 *                     compiles it for -P (UTF, UCP, MULTILINE): \w, \d,
 *                     \b, POSIX classes and case folding are Unicode's;
 *                     a pattern holding a line break is refused
 *   paths             array of paths to search, files or directories
 *                     (default: the root), each followed if it is a
 *                     symlink inside the root
 *   extensions        array of file name extensions ("rs" or ".rs"):
 *                     only files ending in one are searched
 *   context           lines around each match, 0 to 100 (default 0)
 *   case_insensitive  boolean (default false): rg -i
 *   fixed_strings     boolean: the pattern is a plain string (default
 *                     false): rg -F
 *   max_matches       the most matching lines returned (default
 *                     JPT_FILES_GREP_MAX_MATCHES); when more exist the
 *                     result says "truncated": true
 * Each line is judged alone: the pattern runs on the line without its
 * "\n" (a "\r" before it stays part of the line), so ^ \A \G match at the
 * line's start, $ \z \Z at its end, lookaround sees nothing of the lines
 * around, and a pattern that needs "\n" matches nothing. Text is UTF-8:
 * each invalid sequence (each maximal invalid subpart, Unicode §3.9) is
 * read as U+FFFD, both by the pattern and in "content" (as ripgrep's
 * decoder does); a UTF-8 byte order mark at the start of a file (and a
 * second one right after it, which rg's decoder drops too) is not part of
 * its first line.
 * The result: {"matches": [{"path", "lines": [{"line_number", "content",
 * "is_match"}]}], "truncated": false}, files in the order of a walk that
 * takes each directory's entries sorted by name (ripgrep's --sort path).
 * A line on which pcre2 gives up (its match limit of 10 000 000, its JIT
 * stack of 10 MiB, or without JIT a heap of 64 MiB: a runaway pattern) is
 * neither a match nor a failure: the result then also holds "skipped":
 * [{"path", "line_number", "reason"}] (the first
 * JPT_FILES_GREP_MAX_SKIPPED such lines; "reason" is pcre2's, e.g. "match
 * limit exceeded") and "skipped_count" (all of them), and the search goes
 * on with the next line.
 * Which files, the same set as `rg --no-ignore --hidden -g '!.git'`:
 * hidden files are searched and ignore files are not read; entries named
 * ".git" are skipped; symlinks met in the walk are not followed, and
 * neither are FIFOs, sockets, devices and hard-linked files searched.
 * Binary files, as ripgrep -P reads files met in a walk: it takes a file
 * in pieces, the first 3 bytes and then 8 KiB at a time, and a NUL byte
 * ends the search at the start of its piece: the lines that ended before
 * it are searched (a NUL in the first 3 bytes: none), no other.
 * Differences from `rg -P`, by design:
 *   - a file named in `paths` is read like any other (rg searches such a
 *     binary file whole and only says that it matches);
 *   - a line pcre2 gives up on is skipped and listed (rg reports an error
 *     for the file and prints none of its lines);
 *   - a UTF-16 file (a FF FE or FE FF byte order mark), which rg decodes,
 *     is read as bytes like any other, so it is nearly always binary;
 *   - when rg's 64 KiB line buffer is nearly full as a NUL byte comes
 *     (it holds a line, or context lines, of tens of KiB), rg takes the
 *     NUL's piece in two reads and may search lines that end just before
 *     the NUL in the first, which fs.grep does not;
 *   - without JIT, rg lets pcre2's interpreter take up to 20 GB for a
 *     line.
 * Errors: JPT_ERR_INVALID (bad params, a pattern that does not compile),
 * JPT_ERR_NOT_FOUND (a path of `paths`), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_files_grep(jpt_files *f, const char *params_json, char **result_json);

/* Any D11 filesystem method by name with its params as JSON text, the
 * result as JSON text (free with jpt_free): what a VFS tool would get. The
 * content of fs.read is text or {"encoding": "base64"}, as D11 says.
 * Errors: those of the method; JPT_ERR_UNSUPPORTED for an unknown method;
 * JPT_ERR_INVALID for params that are not an object of the method's shape. */
JPT_EXPORT int jpt_files_call(jpt_files *f, const char *method, const char *params_json,
                              char **result_json);

/* ==== The access policy (lib/policy) ==================================== */

/* A VFS tool's access policy (D11 "Access policy enforcement", RFD 075):
 * built once from the tool definition's `sandbox` section, it gives each
 * request of the tool a verdict — allow, deny, or ask the host's policy
 * handler — with a reason the tool is told. A policy never changes once
 * made (checking does not modify it), so one may serve many tool runs.
 *
 * The configuration is D11's `sandbox` section as a JSON object. Every key
 * is optional; an unknown key, a key given twice, or a value of the wrong
 * type or form makes jpt_policy_new() fail with a message naming it
 * (nothing is accepted and then ignored):
 *
 *   filesystem.allow     array of path prefixes, relative to the workspace
 *                        root ("." is the whole workspace): requests under
 *                        them may read and list. Default ["."].
 *   filesystem.writable  true: everything under filesystem.allow may also
 *                        be written (created, replaced, deleted, renamed);
 *                        an array of prefixes: those may be written, and
 *                        read (a tool may read back what it writes);
 *                        false: nothing is granted for writing. Default false.
 *   filesystem.deny      array of path prefixes that are denied, whatever
 *                        else grants them.
 *   filesystem.hardlinks "deny" (default) or "allow": whether the files
 *                        backend may open a regular file that has more than
 *                        one hard link (it may be an inode from outside the
 *                        root); see jpt_policy_hardlinks_allowed().
 *   filesystem.git       "protected" (default) or "writable": whether a
 *                        write may make or change a git repository (see
 *                        "Git's files" below). "writable" is the host saying
 *                        that the tool may; the other rules then decide
 *                        (a write must still be granted, and .git/config
 *                        and .git/hooks/ stay sensitive — which is no wall:
 *                        a tool that may write .git/commondir or .git/HEAD
 *                        can point git at a configuration of its own).
 *   sensitive_paths      array of name patterns added to the built-in list
 *                        below (never replacing it).
 *   sensitive            "deny" (default) or "ask": the verdict for a
 *                        sensitive path; "ask" sends such requests to the
 *                        policy handler instead of refusing them.
 *   uncovered            "ask" (default) or "deny": the verdict for a
 *                        request no rule covers (D11: "requests that are not
 *                        covered by the sandbox config … trigger an inquiry
 *                        prompt").
 *   network.allow        array of entries, each an http:// or https:// URL
 *                        prefix (a host, no user information, query or
 *                        fragment), or an object {"url": prefix, "envs":
 *                        [names], "private": boolean} (only "url"
 *                        required): a URL with an entry's scheme, host and
 *                        port whose path is the entry's path or beneath it
 *                        by whole segments is allowed
 *                        ("https://api.example.com/v1" covers ".../v1" and
 *                        ".../v1/x", never ".../v10"); see "URLs" below.
 *                        An object's "envs" are the variables a URL it
 *                        covers carries (see "Secrets"); "private": true
 *                        lets host names of its origin reach private
 *                        addresses (see "URLs").
 *   network.envs         array of environment variable names (letters,
 *                        digits, '_', not starting with a digit) that the
 *                        string entries of network.allow carry: ${VAR} in
 *                        an http header value; see "Secrets" below. (An
 *                        object entry carries its own "envs" instead.)
 *   network.redirects    0 to 20: the redirects http.* follow (default 0:
 *                        a 3xx response is the result, its Location header
 *                        included). Each hop is checked as a request is;
 *                        a hop the policy does not allow outright (one it
 *                        would ask about too) fails the request with
 *                        -32001. Past the count, the last 3xx response is
 *                        the result. 301, 302 and 303 turn a POST into a
 *                        GET; 307 and 308 keep it. A header holding a
 *                        ${VAR}, Authorization and Cookie are not sent to
 *                        another origin (scheme, host, port).
 *   network.timeout_ms   1 to 600000: the time a whole request may take,
 *                        its redirects included (default 30000); past
 *                        it, -32004.
 *   network.max_response_bytes
 *                        1 to 10485760 (JPT_VFS_CONTENT_LIMIT): the
 *                        response's headers and body together (default
 *                        10000000, 10 MB); the transfer is stopped beyond
 *                        it, -32603 saying so.
 *   commands.<program>   an object, the rule that lets process.run start
 *                        <program> (RFD 016's CommandRule). The key is the
 *                        program exactly as a tool names it: a name looked
 *                        up in the absolute directories of the host's PATH
 *                        ("cargo"; an entry "" or "." does not count, as it
 *                        would find a program the tool wrote) or an absolute path
 *                        ("/usr/bin/make"); a relative path with a '/' is
 *                        refused. Members, all optional:
 *     args               a non-empty array of argument lists, each an array
 *                        of strings: the arguments (after the program) must
 *                        equal one list exactly, or, when "**" is the list's
 *                        last element, begin with the strings before it
 *                        (["check","**"] allows "check" and "check --all";
 *                        ["status"] only "status"; [] no arguments). No
 *                        `args`: any arguments.
 *     envs               array of environment variable names the tool may
 *                        ask to forward (process.run's own `envs` picks from
 *                        these). Names the dynamic loader or the C library
 *                        act on (LD_*, DYLD_*, GCONV_PATH, GETCONF_DIR,
 *                        GLIBC_TUNABLES, HOSTALIASES, LOCALDOMAIN, LOCPATH,
 *                        MALLOC_TRACE, NIS_PATH, NLSPATH, RESOLV_HOST_CONF,
 *                        RES_OPTIONS, TZDIR) are refused, and for git the
 *                        names jptool sets for it (below: GIT_CONFIG*,
 *                        GIT_ASKPASS, GIT_PAGER, GIT_SSH_COMMAND, …).
 *     timeout_ms         how long the process may run before its process
 *                        group is killed, 1 to JPT_VFS_PROCESS_TIMEOUT_MAX_MS
 *                        (default JPT_VFS_PROCESS_TIMEOUT_MS).
 *     output_limit       bytes kept of each of stdout and stderr, 64 to
 *                        JPT_VFS_PROCESS_OUTPUT_MAX (default
 *                        JPT_VFS_PROCESS_OUTPUT_LIMIT).
 *     process_limit      the most processes (threads count) the process and
 *                        what it starts have at once in its OS sandbox, 2
 *                        to 65536 (default 512; "The OS sandbox").
 *
 * With no sandbox section (NULL or "{}") a tool gets D11's default:
 * workspace read-only, no network, no processes — reads and listings
 * anywhere in the workspace are allowed, writes, URLs and processes are
 * not covered (asked), sensitive paths are denied.
 *
 * URLs (network.allow, http.get, http.post) are read by libcurl's own
 * parser (curl_url), the one the transfer uses: scheme and host compared
 * in lower case, the scheme's default port filled in. The path is
 * normalised as RFC 3986 §6.2.2 says — escapes of unreserved characters
 * decoded (".../%61pi" is ".../api", ".../%2e%2e/" is ".../../"), then dot
 * segments removed — and the normalised path is both what is compared and
 * what is sent, so a server that normalises paths serves the path the
 * policy judged: "/api/%2e%2e/admin" is "/admin", not under "/api". Other
 * escapes are kept (".../a%2Fb" is one segment and matches no entry
 * ".../a"; libcurl writes their hex digits in lower case). Refused as not
 * a valid URL (-32602; in network.allow, the configuration), because
 * servers read it as another path: a path that a lenient reading — '\'
 * as '/', "%2F" and "%5C" decoded, up to three rounds of percent-decoding,
 * ";…" parameters dropped, empty segments merged — turns into one with a
 * segment of only dots ("..%2f", "..;/", "x\..\", "%252e%252e", "...");
 * an encoded NUL byte; overlong UTF-8 ("%c0%ae"); a '%' without two hex
 * digits; a path encoded more than three times over. Refused outright,
 * never asked: a scheme other than http and https; user information
 * ("https://allowed@evil/" names the host evil); an IP address or a
 * localhost name ("localhost", "x.localhost") that no entry names as
 * such. libcurl reads the decimal, octal and hexadecimal forms of an IPv4
 * address ("2130706433", "0177.0.0.1") as the dotted one, which is then
 * the address compared; an IPv4-mapped IPv6 address ("[::ffff:127.0.0.1]")
 * is a literal of its own. A host name is checked on every address libcurl
 * connects to (at the connect, so that no DNS answer — a rebinding one
 * included — leads elsewhere): refused are this machine's own addresses
 * (every interface's, IPv4 and IPv6), loopback, unspecified, link-local,
 * multicast and reserved ones (0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16,
 * 224.0.0.0/3; ::, ::1, fe80::/10, ff00::/8), and private ones (10.0.0.0/8,
 * 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 198.18.0.0/15,
 * 192.0.0.0/24; fc00::/7, fec0::/10) unless an entry of the URL's origin
 * says "private": true; an IPv6 address that carries an IPv4 one
 * (::ffff:a.b.c.d, ::a.b.c.d, NAT64's 64:ff9b::/96 and 64:ff9b:1::/48,
 * 6to4's 2002::/16) counts as that one. Only an entry naming an address or
 * localhost as such reaches those (-32001 names the address and why). Any
 * other URL no entry covers is not covered: the `uncovered` verdict (asked
 * by default).
 *
 * Secrets. ${NAME} in an http header value is replaced by the value of the
 * host's own environment variable NAME, only for a URL that a
 * network.allow entry naming NAME covers: an object entry's "envs", or
 * network.envs for a string entry (the form configurations had before
 * entries could name variables, which stays: it sends the variables to
 * the URLs the configuration lists, and no longer to others). A URL the
 * policy would ask about never carries one: the request is refused before
 * anyone is asked (the prompt cannot approve a secret it does not show).
 * A name no entry names, or none that covers the URL (-32001), not set
 * (-32002), a value shorter than 8 bytes or holding a control character
 * other than a tab (-32602), or a "${" without a name and '}' (-32602)
 * fails the request with a message that names the variable, never its
 * value. A value shorter than 8 bytes is refused rather than sent, as it
 * could not be kept from the tool without mangling ordinary text. A
 * redirect's hop gets a header holding ${NAME} only when an entry naming
 * NAME covers the hop (and never on another origin, nor Authorization and
 * Cookie); a redirect whose URL holds a value substituted is not followed
 * (-32001). The tool never sees a value the policy lends — any variable
 * named in network.envs, an entry's "envs" or a commands rule's "envs"
 * (PATH aside), whether or not the request at hand used it (a server may
 * keep a value and show it later): the response's headers and body
 * (decoded first, see "HTTP" below), error messages and redirect URLs go
 * through the streaming scrubber described under process.run (the one
 * process output goes through), before they reach the tool; jptool logs
 * no header value.
 *
 * Path prefixes in filesystem.allow, .writable and .deny are normalised
 * like jpt_policy_normalize_path() ("./src/" is "src"; "", absolute paths
 * and ".." that leaves the root are refused) and match whole names: "src"
 * covers "src" and "src/main.rs", never "src2". filesystem.deny matches
 * case-insensitively (a deny list must not be dodged on a case-insensitive
 * file system); allow and writable match exactly.
 *
 * Sensitive paths. The built-in list, which no configuration can shrink:
 *   .env  .env.*  .ssh/  .gnupg/  .aws/credentials  .kube/config
 *   .docker/config.json  .git/config  .git/hooks/  *.pem  id_rsa*
 *   id_ed25519*
 * A pattern is one or more names separated by '/'; '*' in a name matches
 * any run of characters within that name, '?' any one character. A
 * pattern without a trailing '/' matches the path's last names (".env"
 * matches "a/b/.env"; ".aws/credentials" matches "x/.aws/credentials"); a
 * pattern with a trailing '/' is a directory, and matches that directory
 * and everything beneath it, at any depth (".ssh/" matches ".ssh" and
 * "home/.ssh/keys/id"). Names are compared case-insensitively (ASCII, plus
 * the two characters that case-folding file systems fold to ASCII letters:
 * U+017F to 's' and U+212A to 'k'), so ".ENV" and "Id_Rsa.pub" match.
 * Matching is by name at request time, so a file created after the tool
 * started is covered too. A configured pattern may begin with "**" and a
 * '/' (patterns match at any depth already); "**" elsewhere, "." and ".."
 * names, absolute and "~/" patterns are refused. A write (which includes
 * rename and delete) is also refused on a path that could hold a sensitive
 * path beneath it under a pattern of several names — renaming ".git" or
 * ".aws" would otherwise move ".git/config" or ".aws/credentials" out of
 * the list's reach — and on a directory that holds a filesystem.deny
 * prefix.
 *
 * Git's files. A tool that may write a repository's files has a way out of
 * any sandbox: the user's next `git status` runs the core.fsmonitor (or a
 * hook, a pager, a diff driver) of a configuration the tool wrote. Git
 * finds a repository, from the directory it runs in and each one above
 * it, in a ".git" (a directory, or a file "gitdir: <path>" naming one,
 * whose "commondir" may name another) or in the directory itself when it
 * holds HEAD, objects/ and refs/ (a bare repository, which git uses as it
 * finds it unless safe.bareRepository is "explicit"). So, unless
 * filesystem.git is "writable", a write (fs.write, fs.delete, either path
 * of fs.rename, and each directory a write would create) is sensitive
 * when a name of its path is ".git" — a directory or a file, anywhere, in
 * any case (".GIT", ".Git") — or when its last name is "HEAD" (any case):
 * without a HEAD no directory is a repository. Reading them is as before.
 * Not covered: a repository that is there already outside a ".git" (a
 * bare one the workspace holds, "x.git/"): its files are written as the
 * other rules say; name it in filesystem.deny or sensitive_paths.
 *
 * Before anything happens. The policy is asked before a request changes
 * anything: a write that creates directories is judged on each of them
 * (as a write, for what its name is: sensitive, denied, a repository's;
 * the grant is the target's to have) and on its target, all before the
 * first is made, so a refused request — or one that waits on the policy
 * handler — leaves the tree as it was. A path that is not there is judged
 * as the path it would be before "not found" is said, so a refused name
 * answers the same whether or not it exists: fs.read of ".ENV" is denied
 * as ".env" is, whether or not either is there, and under a
 * filesystem.deny prefix every path is denied, there or not. The policy
 * applies to every backend: the directory (on what is actually opened,
 * after symlinks), the memory backend and a host-supplied one (on the
 * path as requested; a host's fs.grep result is cut to the files the
 * policy lets the tool read).
 *
 * Precedence, first match wins:
 *   1. a path that is not normalised: deny;
 *   2. a sensitive path (for a write, git's files too): deny (with
 *      "sensitive": "ask", see 4);
 *   3. under a filesystem.deny prefix: deny;
 *   4. a sensitive path with "sensitive": "ask": ask;
 *   5. a grant (filesystem.allow, filesystem.writable): allow;
 *   6. anything else: the `uncovered` verdict (ask by default).
 * So sensitive beats allow, and deny beats allow (and ask) on one path.
 *
 * A process (JPT_ACCESS_PROCESS) is allowed when commands has a rule for
 * its program whose `args` admit its arguments; a program without a rule,
 * or arguments that no list admits, get the `uncovered` verdict.
 *
 * git (a program whose last path component is "git"). A rule's fixed
 * words name what they match; what "**" (or a rule without args) lets
 * through must hold none of the arguments below, or the request is
 * denied (-32001, naming the argument and what it does) — unless another
 * entry of the rule names them. Each is caught in every form git takes:
 * an unambiguous prefix of a long option ("--out=x" is --output=x), a
 * value after '=' or in the next argument, a short option in a cluster
 * with its value attached ("-nOless"; a value attached to another short
 * option that holds the letter counts too). Arguments after "--" are
 * checked all the same.
 *   - git's own options before the subcommand, every one (-c, -C,
 *     --git-dir, --work-tree, --exec-path, --namespace, --super-prefix,
 *     --config-env, -p, --no-pager, …): they change the configuration
 *     git reads, where it looks, or what it runs;
 *   - subcommands that run programs, serve or schedule by design, or
 *     write git's configuration: archimport, bisect, citool, config,
 *     credential*, cvsexportcommit, cvsimport, cvsserver, daemon,
 *     difftool, filter-branch, gui, help, imap-send, instaweb,
 *     fsmonitor--daemon, maintenance, mergetool, p4, receive-pack,
 *     remote-ext, remote-fd, send-email, shell, submodule, svn,
 *     upload-archive, upload-pack, web--browse;
 *   - options that run a program: --open-files-in-pager and grep's -O,
 *     --upload-pack (clone's and ls-remote's -u), --receive-pack,
 *     --exec (rebase's -x), --extcmd, --ext-diff, --textconv;
 *   - options that write or read a file the rule does not name, or move
 *     the repository: --output (archive's and format-patch's -o),
 *     --output-directory, --index-output, --prefix, --export-marks,
 *     --import-marks, --import-marks-if-exists, --export-pack-edges,
 *     --no-index, --separate-git-dir;
 *   - options that set configuration or bring in programs: --config
 *     (clone's -c), --config-env, --template, --recurse-submodules
 *     (git then runs in submodules, whose configuration is not checked).
 * A merge strategy (-s) names a program of git's exec path or PATH,
 * which a tool cannot write, and is allowed. A git command line that no
 * rule covers gets the `uncovered` verdict as any other, and the reason
 * the policy handler reads names its first such argument and what it
 * does ("…; beware: argument 1 '-c' is an option of git itself, …").
 * (What the process may touch besides is the OS sandbox's to confine.) */

/* process.run's limits (commands.<program>.timeout_ms and .output_limit):
 * their defaults and largest values. */
#define JPT_VFS_PROCESS_TIMEOUT_MS 60000
#define JPT_VFS_PROCESS_TIMEOUT_MAX_MS 86400000
#define JPT_VFS_PROCESS_OUTPUT_LIMIT 1048576
#define JPT_VFS_PROCESS_OUTPUT_MAX 4194304
/* process.run's children of one tool alive at once, and its requests that
 * may wait for a turn ("process.run" below). */
#define JPT_VFS_PROCESS_MAX_RUNNING 8
#define JPT_VFS_PROCESS_MAX_WAITING 256
/* The OS sandbox of a process.run child (see "The OS sandbox"): the most
 * entries walked beneath the paths it may read to find what it must not
 * read, and the most paths it covers (sensitive, denied, .git made
 * read-only); past either, process.run fails with -32603 saying so. */
#define JPT_VFS_RUN_SCAN_MAX 200000
#define JPT_VFS_RUN_COVER_MAX 4096
typedef struct jpt_policy jpt_policy;

/* What a request does, for jpt_policy_check(); the reason names the D11
 * method beside each. */
#define JPT_ACCESS_READ 1 /* "fs.read": reading a file, fs.exists,
                             fs.metadata, fs.grep (per file) */
#define JPT_ACCESS_WRITE 2 /* "fs.write": writing, creating, deleting or
                              renaming (both paths) a file or directory */
#define JPT_ACCESS_LIST 3 /* "fs.list_dir": listing a directory */
#define JPT_ACCESS_HTTP 4 /* "http": target is the URL (network.allow,
                             "URLs" above) */
#define JPT_ACCESS_PROCESS 5 /* "process.run": target is a JSON array of
                                strings, the program then its arguments,
                                ["cargo","check"]; checked against
                                commands.<program> */

/* Verdicts: positive numbers, never confused with a (negative) status. */
#define JPT_VERDICT_ALLOW 1 /* go ahead */
#define JPT_VERDICT_DENY 2  /* refuse; the tool gets -32001 and the reason */
#define JPT_VERDICT_ASK 3   /* the host's policy handler decides, and may
                               answer later; a host with no handler refuses,
                               saying that no one could be asked */

/* Creates a policy from `sandbox_json`, the JSON text of a `sandbox`
 * section, or NULL for none (the default policy above).
 * On JPT_OK, *out is the policy; free it with jpt_policy_free().
 * Errors: JPT_ERR_INVALID for a NULL `out`, and for a configuration that is
 * not valid JSON or breaks the rules above: then, as with sqlite3_open(),
 * *out is still a policy, which holds the message for jpt_policy_errmsg()
 * ("filesystem.allow[1]: '/etc' is absolute: paths are relative to the
 * workspace root"), denies every check, and must be freed.
 * JPT_ERR_NOMEM: *out is NULL. */
JPT_EXPORT int jpt_policy_new(const char *sandbox_json, jpt_policy **out);

/* Frees a policy. NULL-safe. */
JPT_EXPORT void jpt_policy_free(jpt_policy *p);

/* Why jpt_policy_new() refused the configuration of `p`, or "" for a policy
 * it accepted (and for NULL). Valid as long as `p`. */
JPT_EXPORT const char *jpt_policy_errmsg(const jpt_policy *p);

/* The verdict of `p` on one request: JPT_VERDICT_ALLOW, _DENY or _ASK.
 * `access` is a JPT_ACCESS_* kind and `target` what it applies to: for the
 * file system kinds, a normalised path relative to the workspace root —
 * the path the files backend resolved, after following symlinks beneath
 * the root, so the verdict is on what is actually opened. Normalised means
 * "." for the root, or names separated by single '/', without a leading or
 * trailing '/' and without "." or ".." names (jpt_policy_normalize_path()
 * gives this form for pre-checks); any other path is denied ("path is not
 * normalised").
 * If `reason` is not NULL it receives, for every verdict, a sentence for the
 * tool and the policy handler, to free with jpt_free():
 *   fs.read '.env': denied: path is in the sensitive paths list (.env)
 *   fs.write 'src/a.c': needs approval: not covered by the policy (the
 *     workspace is read-only: filesystem.writable is false)
 *   fs.read 'src/a.c': allowed: under 'src' in filesystem.allow
 *   process.run 'cargo': allowed: the arguments match
 *     commands.cargo.args[0]
 *   process.run 'rm': needs approval: not covered by the policy (commands
 *     has no rule for this program)
 * (a target longer than 200 bytes is shown cut, ending in "…"; a process
 * is shown by its program).
 * Errors, negative and never a verdict (treat them as a refusal):
 * JPT_ERR_INVALID (NULL `p` or `target`, an unknown access kind, a process
 * target that is not a non-empty JSON array of strings with a non-empty
 * program), JPT_ERR_NOMEM; *reason is NULL after an error. */
JPT_EXPORT int jpt_policy_check(const jpt_policy *p, int access, const char *target,
                                char **reason);

/* 1 if the files backend may open files with several hard links
 * ("filesystem": {"hardlinks": "allow"}), else 0 (also for NULL and for a
 * refused configuration). */
JPT_EXPORT int jpt_policy_hardlinks_allowed(const jpt_policy *p);

/* The normalised form of a requested path, lexically: "." and empty names
 * dropped, "name/.." removed, "" and "./" become ".". For checking a request
 * before the files backend resolves it; the final check is on the resolved
 * path, since lexical ".." removal is wrong when "name" is a symlink.
 * On JPT_OK, *out is the path, to free with jpt_free(). Errors:
 * JPT_ERR_INVALID (NULL argument, an absolute path, a ".." that leaves the
 * root), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_policy_normalize_path(const char *path, char **out);

/* ==== The OS sandbox (lib/sandbox) ====================================== */

/* The OS sandbox (RFD 075, D11 "OS-level sandboxing") is what makes the
 * protocol a VFS tool's only way out: its process runs confined by the
 * kernel, so it cannot bypass the access policy with open() or connect().
 * A stdio tool whose definition asks for it ("sandbox", registry.h) runs
 * in RFD 075's sandbox instead, and every process.run child in one
 * derived from its tool's policy (issue 15 §3). Linux only; what is
 * enforced depends on the kernel, and each spawn reports it
 * (jpt_vfs_host_sandbox, jpt_registry_tool_sandbox, a log line at
 * JPT_LOG_INFO per tool process, JPT_LOG_WARNING when it lacks part of the
 * minimum; a process.run child's at JPT_LOG_DEBUG, WARNING likewise).
 *
 * The child of a spawn, between clone and execve: builds its view of the
 * file system in a mount namespace of its own (stdio tools and process.run
 * children); drops every capability — the bounding set up to the
 * kernel's CAP_LAST_CAP, ambient, effective, permitted, inheritable — and
 * locks its securebits (NOROOT, NO_SETUID_FIXUP, KEEP_CAPS,
 * NO_CAP_AMBIENT_RAISE, all locked), so a root host's tool is a uid 0
 * without any capability and gets none back at execve; sets no_new_privs;
 * restricts itself with a Landlock ruleset (the kernel's best ABI) and
 * loads a seccomp filter (libseccomp, built once per registry or host;
 * each child puts a few instructions naming its own pid in front).
 *
 * Where its containment gives it no cgroup of its own that ends it with
 * all it started (a registry's or host's JPT_CONTAIN_SESSION or
 * _SUBREAPER, or a cgroup that cannot bound its processes, below), every
 * sandboxed process runs in a PID namespace of its own (in a user
 * namespace of its own too for a host that is not root). Its end ends
 * every process in it, a daemon that left its session (setsid) too; it
 * sees no process of the host, so kill, tgkill or a pidfd of one fails
 * (ESRCH), which also keeps a tool from signalling a host of its uid on
 * a kernel without Landlock's signal scope (ABI 6). It is pid 1 there: a
 * signal it sends itself is dropped unless it handles it (`kill -9 $$`
 * does nothing; a fault still ends it), and SIGTERM from the host, where
 * it leaves SIGTERM to its default action (its /proc status says so),
 * is sent as SIGKILL, which ends it as that action would, and its end is
 * reported as SIGTERM's. Where the host cannot make one, process.run in
 * mode "required" is refused, and a tool runs without it (its report
 * says so).
 *
 * Its processes are bounded: at most process_limit of them (threads
 * count; 512 unless its definition's os_sandbox.process_limit or its
 * commands rule's process_limit says otherwise, 2 to 65536) are alive at
 * once, itself counted; a fork past it fails with EAGAIN. The bound is
 * its cgroup's pids.max where the host's cgroup enables the pids
 * controller for its children (cgroup.subtree_control: jptool does not
 * enable it, as that needs the host out of its own cgroup, the "no
 * internal processes" rule), else its PID namespace's pid_max (Linux
 * 6.14, which keeps one per namespace; its last pid is set to 300 so
 * that the bound holds from the first fork). Where there is neither (an
 * older kernel and no delegated pids controller, or /proc/sys read-only),
 * its processes are not bounded, and its report says so. Its memory is
 * not bounded (no memory.max: no one bound fits every tool).
 *
 * Every profile (each fails with EPERM; clone3 with ENOSYS so that the C
 * library falls back to clone, which is checked; a system call of another
 * ABI, i386 or x32 on x86-64, kills the process):
 *  - no ptrace, process_vm_readv/writev, pidfd_getfd, io_uring, bpf,
 *    perf_event_open, keyctl/add_key/request_key, userfaultfd, mount-family
 *    calls, unshare or clone with CLONE_NEWUSER, TIOCSTI or TIOCLINUX;
 *  - no syslog (the kernel log), settimeofday/clock_settime/clock_adjtime,
 *    sethostname/setdomainname, reboot, kexec_load/kexec_file_load,
 *    init/finit/delete_module, swapon/swapoff, acct, fanotify_init/_mark,
 *    name_to_handle_at, open_by_handle_at — whatever capabilities;
 *  - no inotify_init, inotify_init1 or inotify_add_watch: Landlock does
 *    not govern watching, and a watch tells when files are made, opened
 *    and written where the tool may not read (the host's home); programs
 *    that watch files (tail -f, a dev server's reloader) fall back to
 *    polling or say they cannot watch;
 *  - prlimit64, setpriority, sched_setaffinity, sched_setscheduler,
 *    sched_setparam, sched_setattr, ioprio_set, migrate_pages and
 *    move_pages only on its own process: pid 0 (itself, or the calling
 *    thread) or its own pid (its main thread; a process it forks keeps
 *    that pid as "own", and may set the tool's limits); setpriority and
 *    ioprio_set never on a user's processes (PRIO_USER, IOPRIO_WHO_USER).
 *    Another thread's tid is refused (pthread_setaffinity_np on a thread
 *    but the main one fails);
 *  - sockets: socketpair() of AF_UNIX streams only (a datagram pair sends
 *    to any path socket by address), no connect(), no sendto() with an
 *    address, no bind() or listen() (a name of its own would serve only
 *    processes outside the sandbox: a host service's name squatted, its
 *    clients' connections taken);
 *  - no other process as the owner of a file's events: fcntl F_SETOWN
 *    only to 0 (none), no F_SETOWN_EX, FIOSETOWN or SIOCSPGRP (the
 *    kernel sends the owner a signal of the tool's choosing with the
 *    tool's credentials: for a uid 0, to any process of the machine,
 *    which only Landlock's signal scope, ABI 6, would stop); no kill(-1);
 *  - no set-user-ID or set-group-ID file, where it may write as anywhere
 *    (a root host's tool would leave a program that runs as root for
 *    whoever may run it): chmod and its variants with either bit are
 *    refused, and so are open, openat, creat and mknod making a file with
 *    one; openat2 answers ENOSYS (its mode is in memory seccomp cannot
 *    read: the C library and programs fall back to openat), so `cp -p`
 *    or `install -m 4755` of such a file fails.
 * Landlock denials fail with EACCES.
 *
 * A VFS tool (always, unless the mode is JPT_SANDBOX_OFF) may:
 *  - read and execute the system's programs and libraries: /usr, /bin,
 *    /sbin, /lib, /lib32, /lib64, /libx32, /etc/ld.so.cache,
 *    /etc/ld.so.preload and /etc/localtime; read and write /dev/null,
 *    /dev/zero and /dev/full; read /dev/random and /dev/urandom;
 *  - read and execute its own program file, jptool's library and the
 *    tool side's beside it (libjptool-tool, vfs_tool.h), and the
 *    paths the host or its definition lists as readable (a tool's
 *    libraries or interpreter outside /usr: a shared library's directory,
 *    a virtualenv);
 *  and nothing else of the file system: not the workspace, not home, not
 *    /etc/passwd, not /proc (so neither the host's /proc/<pid>/environ) nor
 *    /sys. A workspace that one of those grants holds (a workspace in
 *    /usr/src, a read path above it) would be read directly: mode "required"
 *    refuses to spawn the tool (JPT_ERR_SANDBOX, naming the grant),
 *    "best-effort" runs it and its report says so. Its files it asks the host for.
 *    It may create no socket (socketpair() of AF_UNIX streams stays: it
 *    reaches no one). It changes no file's mode, owner, times, extended
 *    attributes or inode flags (chmod, fchmod, fchmodat, fchmodat2, chown and
 *    variants, utime, utimes, futimesat, utimensat, *xattr and *xattrat,
 *    file_setattr, FS_IOC_SETFLAGS and FS_IOC_FSSETXATTR), reads no extended
 *    attribute (getxattr, listxattr and variants, file_getattr), and watches
 *    no path (as every profile). It starts in "/", and so learns nothing of the host's
 *    working directory. What it still learns, as Landlock (up to ABI 7)
 *    does not govern it and the loader and interpreters need it: whether
 *    a path exists and its metadata (stat, statx, access, readlink of any
 *    path it names); it cannot list a directory it may not read.
 * Its environment is clean: PATH, and only the host's variables its
 * definition lists in env.allow (registry.h), or none (jpt_vfs_host).
 * Interpreters under /usr run (python3 without its user site in home); a
 * tool built with AddressSanitizer must turn LeakSanitizer off, whose
 * check at exit needs /proc and ptrace. A VFS tool that could not start —
 * it read none of its init (every byte still in its stdin pipe), sent no
 * valid message, and did not exit 0 — ends with an error that, after how
 * it exited, names the likely cause and its fix: a Python tool whose
 * stderr says "No module named 'jptool'", its environment (env.set with
 * jptool.python_tool_env()); else, in a sandbox that walls files in, a
 * file it may not read (os_sandbox.read, sandbox_read). A tool that read
 * its init and then failed (an argument missing) started: its end is how
 * it exited and its stderr, nothing more.
 *
 * A sandboxed stdio tool (RFD 075: workspace read-write, system
 * read-only, no network) may read and execute what a VFS tool may, and
 * /etc, /opt and /sys; read and write the workspace (or only read it,
 * with "filesystem": {"writable": false}: a read-only workspace beneath
 * /tmp or an os_sandbox.write path is mounted read-only again, and where
 * there is no mount namespace mode "required" refuses to run the tool,
 * as nothing else could keep it read-only) but its repositories, and a
 * /tmp of its own; create AF_UNIX stream sockets (bound to no name,
 * connected to nothing: a socketpair serves it better).
 *   Its repositories: each .git (any case; a directory or a "gitdir:"
 * file) and each bare repository (HEAD, and objects and refs or
 * commondir) of a writable workspace is mounted read-only in its view,
 * unless its definition says "filesystem": {"git": "writable"}: a
 * core.fsmonitor, hook or alias it wrote there would run at the user's
 * next git command, outside every sandbox (so is a directory of the
 * host's uid that no one may search, which the walk cannot see into and
 * the tool would open with chmod). They are found by a walk of
 * the workspace (at most JPT_VFS_RUN_SCAN_MAX entries and
 * JPT_VFS_RUN_COVER_MAX repositories; past either, or at a directory the
 * host may search but cannot list, mode "required" refuses to run the
 * tool, and "best-effort" says in its report that not all are kept
 * read-only), taken again at a spawn only when a
 * directory of the workspace changed since (each directory's ctime is
 * checked: a stat per directory per spawn). A repository it makes
 * (a .git, or a bare repository's HEAD, where there was none) is moved
 * aside after each of its processes ends, as process.run's children's
 * are (below; told in the host's log at JPT_LOG_WARNING and at the end of
 * its stderr); where its process lives long, a repository the user makes
 * meanwhile in the workspace is moved aside too. Where there is no mount
 * namespace, mode "required" refuses a tool whose writable workspace
 * holds a repository. os_sandbox.write paths are the host's grant: their
 * repositories are writable and not swept.
 *   Its /tmp: a directory of its own under the host's /tmp (mode 0700,
 * on disk, not in memory), bound over /tmp in its view, shared by its
 * processes for the registry's life and removed with the registry; the
 * host's /tmp and what other processes keep there (for a root host's
 * tool, every root-owned file) is out of its reach. A workspace or
 * os_sandbox path below /tmp is mounted in it where it was; an
 * os_sandbox path that holds /tmp makes the host's /tmp its own. Where
 * there is no mount namespace it shares the host's /tmp, and its report
 * says "no mount namespace". It never reads the secrets of
 * /etc: /etc/shadow, shadow-, gshadow, gshadow-, sudoers, sudoers.d,
 * ssh/ssh_host_*_key, ssl/private, pki/tls/private, security/opasswd,
 * krb5.keytab, NetworkManager/system-connections, wireguard,
 * ipsec.secrets, ipsec.d/private, ppp/chap-secrets, ppp/pap-secrets,
 * credstore, credstore.encrypted, letsencrypt/archive, letsencrypt/keys,
 * mysql/debian.cnf, libvirt/secrets (those that exist): a uid 0 without
 * capabilities still owns root's files. It runs in a mount namespace
 * (made once per registry and tool definition, shared by the tool's
 * processes, made again when a writable path, a repository of the
 * workspace or a secret of /etc changes) where everything is mounted
 * read-only but the writable areas (the workspace when writable, its
 * /tmp, os_sandbox.write; a file system the
 * host mounted beneath one stays read-only, and one the host mounted
 * read-only is never made writable), so a change of a file's mode,
 * owner, times or extended attributes outside them fails with EROFS; and
 * where each secret of /etc is covered by an empty file or directory of
 * mode 000 on a read-only tmpfs (EACCES). Not /proc: Landlock denies
 * ptrace, /proc/<pid>/mem and /proc/<pid>/fd of processes outside the
 * sandbox but not /proc/<pid>/environ (seen on Linux 6.18), so no
 * sandboxed tool may read /proc at all (programs such as ps fail; the
 * /proc/self/exe link still reads). It cannot connect() any socket:
 * seccomp cannot see a Unix socket's path, and Landlock (up to ABI 7 at
 * least) does not govern connecting to one, so forbidding connect() is the
 * only way to keep the host's sockets (an ssh-agent's, D-Bus, a container
 * engine's) out of its reach; nor send a datagram (socket() of AF_UNIX
 * streams only: Linux makes an AF_UNIX SOCK_RAW a datagram socket). Its
 * environment is clean: the core set and the names env.allow lists
 * (registry.h, "env"), unless its definition chooses to inherit the
 * host's.
 *   A host that is not root makes the mount namespace inside a user
 * namespace of the tool's own (its uid and gid mapped to themselves; files
 * of other users show as 65534). Where the host cannot make one (no user
 * namespaces for unprivileged users, an old kernel, a container's
 * seccomp profile), the tool runs without and the report says so: the
 * metadata calls above are then denied everywhere (EPERM, in the
 * workspace too: chmod, touch, cp -p fail), and a root host's ruleset
 * grants /etc entry by entry around its secrets (a host that is not root
 * cannot read them anyway).
 *
 * A process.run child (issue 15 §3) is confined as the tool that asked:
 * in the tool's sandbox mode (off: no sandbox, as for the tool), in a
 * mount namespace of its own, with the calls above denied (its profile's
 * filter is the stdio one: no network at all, http.* grants or not). It
 * may read and execute the system as a stdio tool may; read the real
 * paths of filesystem.allow's and .writable's prefixes beneath the root;
 * write .writable's (all of .allow's with "writable": true), and nothing
 * else of the workspace or the host (everything else is read-only:
 * EROFS); a workspace that the system's grants hold (in /opt, /usr/src,
 * /etc) would be readable whole, so mode "required" refuses process.run
 * there (-32603, naming the grant); never read a sensitive path or a
 * filesystem.deny prefix beneath what it may read, nor the secrets of
 * /etc — each is covered by an empty file or directory of mode 000
 * (EACCES) — nor a path the policy would ask about (outside those
 * prefixes); never rename a directory whose name such a verdict depends
 * on ("config" of a denied "config/prod", ".aws" of ".aws/credentials"),
 * which would put what it holds out of the policy's reach for the
 * tool's fs.read: each is a mount point of its own in its view (EBUSY;
 * moving a file out of one is a copy, EXDEV, as across file systems);
 * never write a .git directory, nor a .git file ("gitdir:", a
 * submodule's or a worktree's), nor a bare repository (a directory with
 * HEAD, and objects and refs or commondir), beneath a writable prefix
 * (each mounted read-only again, so neither changed nor removed, unless
 * a prefix names a path inside it or filesystem.git is "writable", as
 * for fs.write). A git child reads its repositories' .git/config (git cannot
 * work without it; it is still never written, and what git prints of it
 * is the commands rule's to allow). Its /tmp is a tmpfs of its own (at most
 * 256 MiB; what it may read of a workspace below /tmp is mounted in it
 * where it was, and where it may not read the workspace's root, the root
 * is a read-only directory there that holds only that: it starts there,
 * and lists and writes nothing else of it). It has
 * no capability and the environment run.h describes. What it starts ends
 * with it: with its own cgroup where the registry's or host's
 * containment has cgroups (killed at its end; it cannot leave the
 * cgroup: no capability, and /sys is read-only to it), else in a PID
 * namespace of its own (above), whose end ends every process in it; its
 * processes are bounded as above. What it may not read is found, before
 * each run, by a walk of the paths it may read: at most
 * JPT_VFS_RUN_SCAN_MAX entries and JPT_VFS_RUN_COVER_MAX paths covered
 * (past either the run fails, as it does at a directory the host may
 * search but cannot list, whose names a child of its uid would reach
 * unseen; one it may not search but its uid owns, which a child would
 * make searchable again with chmod, is covered whole); it runs in slices of about a millisecond
 * from the host's loop (the process starts once it is done: a large
 * workspace delays its own runs, not the host's other work); one walk
 * serves both of git's processes. Where a directory it listed changed
 * before its end (its ctime: a directory renamed meanwhile, by the tool's
 * fs.rename or another child of its, from where the walk had not been
 * to where it had, would hold paths the walk never saw), it walks again,
 * up to 4 times, then the run fails; a file system without fine-grained
 * ctimes (before Linux 6.13, or other than ext4, xfs, btrfs and tmpfs)
 * can miss a change made in the clock tick of the listing. A symbolic link is neither followed nor
 * covered (what it leads to is judged by its own path); a name that is
 * also a hard link elsewhere under another name is readable there (as
 * fs.read with "hardlinks": "allow" would); a sensitive file created
 * after the walk by another process — a process.run child running
 * meanwhile — can be read; each path covered is checked, as the child
 * covers it, to be the very file the walk found, so a directory renamed
 * and made again meanwhile (to have the cover land on a decoy and the
 * file it held be read where it went) fails the run. A child can create
 * files of any name where it may write, .git and sensitive names too
 * (Landlock grants by directory, not by name): after the run, a sweep of
 * the writable prefixes (the same bound, in slices too; none where the
 * walk before found nothing to change: every directory it stamped as it
 * was) moves aside each .git (any case: a directory, a "gitdir:" file, a
 * symbolic link) that was not there before it, and the HEAD of each bare
 * repository that was not one, to "<name>.jptool-quarantine" (-2, -3,
 * …) in its directory, so that no git of the user's finds a repository
 * whose configuration the child wrote; nothing is deleted, and stderr
 * ends with a line that says what was moved (the host's log too, at
 * JPT_LOG_WARNING). It cannot tell who made one: a repository the user
 * makes meanwhile in a writable prefix is moved aside too. A cancelled
 * run is swept at once. Nothing is swept where filesystem.git is
 * "writable". Where
 * the host cannot make the namespaces, mode "required" refuses
 * process.run (-32603, the message naming what failed) and "best-effort"
 * runs it with Landlock, seccomp and no capabilities only, sensitive paths
 * readable, as its report (logged at JPT_LOG_WARNING) says.
 *
 * A root host and one that is not: the same walls, but for what the
 * kernel checks by owner. A uid 0 tool without capabilities owns root's
 * files (the sandbox's rules keep it from them); a non-root tool owns
 * the user's. Neither may gain a capability, nor leave its cgroup.
 *
 * Landlock ABIs: 1 (Linux 5.13) confines files; 3 (6.2) truncation (below
 * 3, seccomp denies truncate(2) instead); 4 (6.7) TCP bind and connect
 * (socket() is denied by seccomp whatever the ABI); 5 (6.10) ioctls on
 * devices; 6 (6.12) signals to and abstract Unix sockets of processes
 * outside the sandbox (below 6, a tool may signal a host of its own uid).
 * Later ABIs are used at ABI 6's rights. The mount namespaces need
 * mount_setattr and openat2 (Linux 5.12).
 *
 * Modes:
 *   JPT_SANDBOX_REQUIRED     the default: a spawn fails with
 *                            JPT_ERR_SANDBOX, the message naming what the
 *                            system lacks, where there is no Landlock or no
 *                            seccomp filter (a kernel without them, or a
 *                            jptool built without libseccomp), and a
 *                            process.run where there are no namespaces;
 *   JPT_SANDBOX_BEST_EFFORT  the tool runs with what there is, and the
 *                            report says what is missing;
 *   JPT_SANDBOX_OFF          no OS sandbox (a VFS tool's environment stays
 *                            clean; process.run children run unconfined). */
#define JPT_SANDBOX_DEFAULT 0
#define JPT_SANDBOX_REQUIRED 1
#define JPT_SANDBOX_BEST_EFFORT 2
#define JPT_SANDBOX_OFF 3

/* What a sandbox enforced: bits of the report. */
#define JPT_SANDBOX_ENFORCED_NO_NEW_PRIVS 0x01u /* no set-user-ID gains */
#define JPT_SANDBOX_ENFORCED_SECCOMP 0x02u      /* the system-call filter */
#define JPT_SANDBOX_ENFORCED_FILES 0x04u        /* Landlock: files */
#define JPT_SANDBOX_ENFORCED_TRUNCATE 0x08u     /* truncation by path */
#define JPT_SANDBOX_ENFORCED_TCP 0x10u          /* Landlock: TCP */
#define JPT_SANDBOX_ENFORCED_DEVICE_IOCTL 0x20u /* Landlock: device ioctls */
#define JPT_SANDBOX_ENFORCED_SCOPES 0x40u       /* Landlock: signals and
                                                   abstract Unix sockets */
#define JPT_SANDBOX_ENFORCED_CAPABILITIES 0x80u /* every capability
                                                   dropped, securebits
                                                   locked */
#define JPT_SANDBOX_ENFORCED_METADATA 0x100u    /* no change of a file's
                                                   mode, owner, times or
                                                   extended attributes
                                                   outside what it may
                                                   write */
#define JPT_SANDBOX_ENFORCED_MOUNTS 0x200u      /* a mount namespace:
                                                   read-only but the
                                                   writable areas, secrets
                                                   covered */
#define JPT_SANDBOX_ENFORCED_PROCESSES 0x400u   /* a PID namespace: its
                                                   processes end with it */

/* ==== The VFS host (lib/vfs) ============================================ */

/* The protocol version the host announces in `init` (D11 "Initial
 * context"). */
#define JPT_VFS_PROTOCOL_VERSION "0.1.0"

/* D11 "Deadlock prevention": content larger than this (10 MiB) is refused
 * rather than sent in one message. A line from a tool may be this long plus
 * the envelope allowance; a longer one is answered -32600 (id null) and
 * dropped up to its newline without being kept whole. */
#define JPT_VFS_CONTENT_LIMIT 10485760
#define JPT_VFS_ENVELOPE_LIMIT 65536

/* ---- Bounds: what one tool can make the host hold -------------------------
 * Every size a tool controls is bounded, per tool (a standalone host's
 * tool, or each "vfs" tool of a registry), whatever it writes and whether
 * or not it reads what it is sent:
 *
 *   a line               max_message bytes (default JPT_VFS_CONTENT_LIMIT +
 *                        JPT_VFS_ENVELOPE_LIMIT); a longer one is answered
 *                        -32600 and dropped up to its newline, never kept
 *                        whole
 *   JSON nesting         JPT_JSON_MAX_DEPTH arrays and objects (common.h);
 *                        a deeper message is answered -32700
 *   requests             JPT_VFS_MAX_REQUESTS taken and not answered yet,
 *                        their params JPT_VFS_MAX_REQUEST_BYTES in all: past
 *                        either, the host reads nothing more from the tool
 *                        (it blocks writing) until answers go out
 *   answers              JPT_VFS_ANSWER_BUDGET: the answers waiting to be
 *                        written to the tool, plus the worst case of each
 *                        answer being worked out (below). While they pass
 *                        it, the host starts no request of the tool (one
 *                        that was read waits, in order) and reads no more
 *                        of its output; one request always runs, so a
 *                        request whose worst case alone passes the budget
 *                        still runs, alone
 *   a request's worst case, reserved from the budget while it runs:
 *                        fs.grep JPT_VFS_GREP_RESULT_LIMIT +
 *                        JPT_VFS_GREP_LINE_LIMIT; http.* 6 times its
 *                        network.max_response_bytes (JSON escapes take up to
 *                        6 bytes a byte); process.run 6 times twice its
 *                        output_limit; on a host-supplied backend (which
 *                        answers later) fs.read 6 times
 *                        JPT_FILES_READ_LIMIT, fs.list_dir
 *                        JPT_VFS_CONTENT_LIMIT; each plus
 *                        JPT_VFS_REQUEST_OVERHEAD, the whole worst case of
 *                        the other methods. On the directory and memory
 *                        backends every fs.* method but fs.grep is answered
 *                        as it starts, its answer counted as it is queued.
 *                        A request waiting on the policy prompt reserves
 *                        nothing: it starts (as above) once allowed
 *   process.run          as many processes at once as the budget holds
 *                        their worst cases: 6 with the default output_limit,
 *                        about a thousand with the smallest (64 bytes)
 *   fs.grep              its result holds at most JPT_VFS_GREP_RESULT_LIMIT
 *                        bytes of JSON ("truncated": true past them); a line
 *                        longer than JPT_VFS_GREP_LINE_LIMIT ends the search
 *                        of its file (its matches before the line are kept);
 *                        a pattern nests at most JPT_VFS_GREP_NEST_LIMIT
 *                        groups (pcre2 compiles a group with a stack frame
 *                        per level), a deeper one is -32602 naming the limit
 *   http transfers       JPT_VFS_HTTP_MAX_ACTIVE at once; the others wait
 *                        their turn (their timeout starts with them)
 *   a tool that does not read: while answers wait that the tool's stdin
 *                        does not take, a tool that reads none of them for
 *                        request_timeout_ms (jpt_vfs_host_options; a
 *                        registry tool's definition) is stopped, its error
 *                        state saying "The tool read none of the N bytes
 *                        waiting for it for T ms …". With no request timeout
 *                        (-1) it is never stopped for it, and holds no more
 *                        than the bounds above
 *
 * So one tool holds at most about: its line (max_message), its requests'
 * params (JPT_VFS_MAX_REQUEST_BYTES), JPT_VFS_ANSWER_BUDGET plus the worst
 * case of one more request, and 256 KiB queued for its stdin pipe. */
#define JPT_VFS_MAX_REQUESTS 16384
#define JPT_VFS_MAX_REQUEST_BYTES (64u << 20)
#define JPT_VFS_ANSWER_BUDGET (64u << 20)
#define JPT_VFS_REQUEST_OVERHEAD (64u << 10)
#define JPT_VFS_GREP_RESULT_LIMIT JPT_VFS_CONTENT_LIMIT
#define JPT_VFS_GREP_LINE_LIMIT (8u << 20)
#define JPT_VFS_GREP_NEST_LIMIT 64
#define JPT_VFS_HTTP_MAX_ACTIVE 64

/* JSON-RPC error codes of the VFS protocol, as they appear on the wire
 * (D11 "Error codes", plus JSON-RPC 2.0's parse error and internal error).
 * The host answers as JSON-RPC 2.0 says where D11 is silent: a message
 * whose id cannot be read (not JSON, an id of another type, an id given
 * twice) is answered with id null, any other malformed request with its
 * id; a notification, known or not, is never answered. Where D11 narrows
 * JSON-RPC 2.0 ("no batch requests"), a batch is never processed: an
 * empty one or one holding anything but notifications is answered with
 * one -32600 error (id null) rather than §6's array of responses, and one
 * of notifications alone with nothing, as §6 says; each counts against
 * the tool's protocol violations. */
#define JPT_VFS_E_PARSE -32700            /* the line is not valid JSON */
#define JPT_VFS_E_INVALID_REQUEST -32600  /* not a JSON-RPC 2.0 request */
#define JPT_VFS_E_METHOD_NOT_FOUND -32601 /* unknown method; process.run on a
                                           * workspace that is not a
                                           * directory */
#define JPT_VFS_E_INVALID_PARAMS -32602   /* missing or mistyped params; the
                                           * message names the field */
#define JPT_VFS_E_INTERNAL -32603         /* the host failed (memory, I/O); an
                                           * http transfer that failed (libcurl's
                                           * words) or passed
                                           * network.max_response_bytes */
#define JPT_VFS_E_ACCESS_DENIED -32001    /* the access policy refused it */
#define JPT_VFS_E_NOT_FOUND -32002        /* no such file or resource */
#define JPT_VFS_E_EXISTS -32003           /* the target exists already */
#define JPT_VFS_E_TIMEOUT -32004          /* the operation timed out */
#define JPT_VFS_E_CANCELLED -32005        /* cancelled by the host or user */

/* ---- The policy prompt ---------------------------------------------------
 * A request the policy answers JPT_VERDICT_ASK (D11: "not covered by the
 * sandbox config") waits for the host's policy handler, which decides now
 * or at any later time; the tool is sent D11's `pending` notification
 * meanwhile ({"request_id", "reason"}). With no handler installed the
 * request is denied, and the tool is told that no one could be asked. */
typedef struct jpt_policy_request jpt_policy_request;

/* Decisions for jpt_policy_request_answer(). */
#define JPT_DECISION_DENY 0         /* refuse: the tool gets -32001 */
#define JPT_DECISION_ALLOW 1        /* this request only */
#define JPT_DECISION_ALLOW_ALWAYS 2 /* this request, and every later one of
                                       this tool run for the same access
                                       to the same path (for http.*, the
                                       same URL as libcurl reads it, which
                                       redirects may then reach too) */

/* Called inside dispatch (of the VFS host, or of the registry for its
 * "vfs" tools). The request is the handler's until it answers it. */
typedef void (*jpt_policy_fn)(jpt_policy_request *req, void *ud);

/* What is asked; strings are owned by the request and valid until it is
 * answered. The tool's name; the D11 method ("fs.write"); the path:
 *  - for fs.* methods, the root-relative path the request will touch,
 *    after the symlinks inside the root are followed — what the policy
 *    judged and what a decision covers. A write through "scratch/ci.yml",
 *    a symlink to ".github/workflows/ci.yml", is asked about as
 *    ".github/workflows/ci.yml". fs.rename asks for each of its two
 *    paths; a write asks for a directory it would create when the policy
 *    asks about that directory (a sensitive name with "sensitive": "ask"),
 *    before it creates any;
 *  - http.get and http.post: the URL as the tool wrote it;
 *  - process.run: the command line as a JSON array of strings,
 *    ["cargo","publish"], and JPT_DECISION_ALLOW_ALWAYS covers that exact
 *    command line;
 * the requested path: the path as the tool wrote it that led there
 * ("scratch/ci.yml"; the same as the path when no symlink was followed,
 * and for http.* and process.run). Show both when they differ: the tool
 * chose the written one, the request touches the other. Messages to the
 * tool name only the written one. The access (JPT_ACCESS_*); why the
 * policy asks, worded for a person ("needs approval: not covered by the
 * policy (the workspace is read-only: filesystem.writable is false)").
 * The call id or handle id the request belongs to in a registry, or NULL
 * (a standalone host). NULL for a NULL request. */
JPT_EXPORT const char *jpt_policy_request_tool(const jpt_policy_request *req);
JPT_EXPORT const char *jpt_policy_request_method(const jpt_policy_request *req);
JPT_EXPORT const char *jpt_policy_request_path(const jpt_policy_request *req);
JPT_EXPORT const char *jpt_policy_request_requested_path(const jpt_policy_request *req);
JPT_EXPORT int jpt_policy_request_access(const jpt_policy_request *req);
JPT_EXPORT const char *jpt_policy_request_reason(const jpt_policy_request *req);
JPT_EXPORT const char *jpt_policy_request_id(const jpt_policy_request *req);

/* Decides the request and frees it (`req` is invalid afterwards, whatever
 * is returned). `reason` (may be NULL) is added to a denial's message to
 * the tool. Returns JPT_OK; JPT_ERR_CANCELLED when the tool's request is
 * gone (the tool ended or was stopped first); JPT_ERR_INVALID for a NULL
 * request or an unknown decision (the request is then not freed). May be
 * called from anywhere in the host's thread; the tool hears of it from the
 * next dispatch. */
JPT_EXPORT int jpt_policy_request_answer(jpt_policy_request *req, int decision,
                                         const char *reason);

/* ---- process.run -------------------------------------------------------------
 * A host (standalone or a registry's, for "vfs" tools) serves D11's
 * process.run, {"program", "args", "envs"}, with the result
 * {"stdout", "stderr", "exit_code"}:
 *   - The policy decides on the command line (JPT_ACCESS_PROCESS; the
 *     `commands` keys above), asking the policy handler when it is not
 *     covered. Every name in `envs` must be listed in the program's
 *     commands.<program>.envs (-32001 names the variable, never its value),
 *     and forwarded only to a command line that rule allows: one the
 *     policy would ask about carries none (-32001 before anyone is asked,
 *     as for http's ${VAR}: the prompt shows the command line, not the
 *     values riding along); a malformed name is -32602. PATH is always
 *     given.
 *   - The process runs with a clean environment: PATH (the host's absolute
 *     entries; "", "." and other relative ones are dropped) and the
 *     variables of `envs` that the host has set, nothing else — no LD_* or
 *     other loader variable ever, whatever the host's environment holds.
 *     (A registry with JPT_CONTAIN_SUBREAPER also gives it the
 *     JPTOOL_CONTAIN_… variable that marks its processes.)
 *   - It runs in the OS sandbox of its tool's mode ("The OS sandbox"
 *     above: what it may read and write follows the policy's
 *     filesystem prefixes, sensitive paths are covered, no network, no
 *     capability).
 *   - git gets no configuration the tool can write (issue 15 §3). It runs
 *     with GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_SYSTEM and GIT_CONFIG_GLOBAL
 *     /dev/null (no system or global configuration), GIT_ATTR_NOSYSTEM=1,
 *     GIT_TERMINAL_PROMPT=0, GIT_ASKPASS and GIT_PROXY_COMMAND empty,
 *     GIT_PAGER=cat, GIT_EDITOR and GIT_SEQUENCE_EDITOR ":" (git's own
 *     "no pager" and "no editor"), GIT_SSH_COMMAND=ssh; and in the
 *     command-line scope (GIT_CONFIG_COUNT, which wins over the
 *     repository's own configuration and its includes): core.hooksPath
 *     /dev/null (no hook runs), core.fsmonitor false, core.pager cat,
 *     core.editor and sequence.editor ":", core.askPass and
 *     core.alternateRefsCommand empty, credential.helper empty (the list
 *     of helpers reset), gpg.program and gpg.openpgp.program gpg,
 *     gpg.x509.program gpgsm, gpg.ssh.program ssh-keygen,
 *     gpg.ssh.defaultKeyCommand empty, interactive.diffFilter cat,
 *     help.autocorrect 0 (a mistyped subcommand is not run as another),
 *     init.templateDir empty (no templates, so no hooks copied),
 *     http.saveCookies false, submodule.recurse false, protocol.allow
 *     never with protocol.http, .https, .ssh and .git "always",
 *     protocol.file "user" and protocol.ext "never" (no remote helper,
 *     no ext::). Before each run jptool reads the repository's
 *     configuration (`git config --list -z --show-scope`, includes
 *     followed, in the same environment and with the request's -C, -c,
 *     --git-dir, --work-tree, --config-env and --bare where a rule names
 *     them; it costs one more git process)
 *     and sets every key that names a program under a name of the
 *     repository's choosing: alias.<name> empty (git then refuses it),
 *     pager.<command> false, filter.<driver>.clean, .smudge and .process
 *     empty and .required false (git skips the filter),
 *     diff.<driver>.textconv cat, diff.<driver>.command and diff.external
 *     false (and `git diff` gets --no-ext-diff after its subcommand, so
 *     it diffs as without them), merge.<driver>.driver
 *     "git merge-file --marker-size=%L %A %O %B" (git's own text merge),
 *     credential.<url>.helper empty, submodule.<name>.update "none" where
 *     it is a "!command", and difftool, mergetool, man, browser and
 *     guitool's <tool>.cmd and .path empty. The run is refused (-32001)
 *     when the configuration sets remote.<name>.uploadpack or
 *     .receivepack (the first value set wins, so no override can) or
 *     core.worktree (it could point git outside the workspace); -32603
 *     when it cannot be read (git's complaint quoted), holds more than
 *     1 MiB, or this git ignores GIT_CONFIG_COUNT (before 2.31). The
 *     configuration is read anew for each run; a key written between the
 *     reading and the run (by another process of the tool, where the OS
 *     sandbox lets it write .git) would not be overridden, and `git
 *     config` itself is refused unless a rule names it. Other programs
 *     that run git (make, a script) get none of this.
 *   - Its working directory is the workspace root, entered through the
 *     directory backend's open descriptor (in its mount namespace: by the
 *     descriptor's path, checked to lead to the same directory, else the
 *     run fails). A memory or host-supplied backend has no directory:
 *     process.run is -32601 there, saying so.
 *   - stdin is /dev/null; it runs in a session and process group of its
 *     own (and the registry's or the standalone host's containment: a
 *     cgroup each where the host's cgroup allows it, else a PID namespace
 *     of its own when sandboxed), and dies with the host. When
 *     it exits, whatever is left of its group is killed. After
 *     commands.<program>.timeout_ms (default JPT_VFS_PROCESS_TIMEOUT_MS)
 *     its group gets SIGTERM, and SIGKILL after the host's kill grace; the
 *     tool is answered -32004 once it is reaped, with what it wrote as the
 *     error's `data` (same shape as the result). When the tool ends or is
 *     cancelled, its running processes are killed (SIGKILL to the group)
 *     and reaped, and a cancelled tool's process.run requests answer
 *     -32005.
 *   - Secret scrubbing (D11, RFD 016): before anything else sees them,
 *     stdout and stderr have every value the policy lends (those
 *     forwarded, and those of every other variable a commands rule or the
 *     network section names, PATH's aside: a child may find one a server
 *     kept) replaced by "[REDACTED]" — one streaming scrubber, the same
 *     that http responses and every error message a tool gets go through
 *     — in every form: as it is; JSON-escaped (with and without "\/", \uXXXX for
 *     non-ASCII, \u003c-style HTML escapes, either hex case); URL-encoded
 *     (%XX in either case, '/' kept or not, '+' for space, !'()* kept or
 *     not); HTML-escaped (&quot; &#x27;, &#34; &#39;, or only & < >); in
 *     hexadecimal of either case; in UTF-16 of either byte order (a UTF-8
 *     value); in base64 (standard and URL-safe alphabets, padded or not,
 *     and the characters the value alone decides at each alignment inside
 *     longer base64 data: the at most two characters at each end that mix
 *     in neighbouring bytes, at most 4 bits of the value's first and last
 *     byte, stay). A value cut short is redacted too: wherever a form's
 *     start that encodes the value's first 8 bytes (7 for a value of 8)
 *     appears, the text from there is redacted up to the end of the
 *     longest whole form found there, or, without one, as far as the
 *     longest form beginning there would reach, whatever those bytes are
 *     — so what a tool sees depends on them only through whether they
 *     complete the value, and a tool that reflects its guesses learns at
 *     most the value's first 8 bytes, by guessing them together. The cost:
 *     where a value begins with ordinary text ("https://" of a URL), that
 *     text and what follows it are redacted wherever they appear. A value
 *     split across two reads is found all the same; overlapping
 *     redactions become one "[REDACTED]", so no byte of either survives.
 *     Values shorter than 8 bytes are NOT scrubbed: they are ordinary
 *     words of any output ("1", "true", "dev"), and replacing them would
 *     mangle it. Scrubbing takes time linear in the output and holds back
 *     at most the longest form's length. It is a last line of defence,
 *     not a sandbox: a process can always transform a value some other
 *     way (reverse it, encrypt it, compress it) before printing.
 *   - Each of stdout and stderr is kept up to commands.<program>
 *     .output_limit bytes (default JPT_VFS_PROCESS_OUTPUT_LIMIT): the first
 *     and the last halves, the middle replaced by "[… N bytes omitted …]";
 *     the process is never stopped for writing more. The text is UTF-8
 *     (invalid bytes become U+FFFD).
 *   - "exit_code" is null when a signal killed the process, with "signal"
 *     its number, and null alone when someone else reaped it (a host that
 *     reaps every child with waitpid(-1)).
 *   - The tool's other requests are served meanwhile. At most
 *     JPT_VFS_PROCESS_MAX_RUNNING (8) of its processes run at once; its
 *     further process.run requests wait their turn in order (a timeout
 *     starts when its process starts), at most JPT_VFS_PROCESS_MAX_WAITING
 *     (256) of them: one more is answered -32603 at once ("8 processes of
 *     this tool run and 256 wait already …"). In a registry each process
 *     also takes one of its max_processes slots (registry.h), as the tool
 *     itself does, and waits for one as a call does; when every process
 *     the registry runs is a VFS tool waiting for a slot for process.run,
 *     none could ever free one, and those requests are answered -32603
 *     at once ("no process slot is free: …") rather than wait forever. */

/* ---- A standalone host ------------------------------------------------------
 * Serves one VFS tool from the host's own loop, like a registry: one fd to
 * poll, a timeout, a non-blocking dispatch. The tool is a process the host
 * spawns, or one the application started itself, on a pair of fds. Its
 * requests go through `files` after the policy of `sandbox_json`; its
 * `result`, `error` and `state` notifications become states
 * (jpt_vfs_host_state). A tool the host spawns runs in the OS sandbox
 * (above), so the protocol is its only way to the files, with a clean
 * environment (PATH alone), in "/"; a tool on attached fds is confined by
 * whatever the application did. The host contains what the tool and its
 * process.run children start as a registry does by default
 * (JPT_CONTAIN_AUTO, registry.h): a cgroup each, made under the host's,
 * where its cgroup lets it, else their sessions. process.run is served as described above,
 * with `kill_grace_ms` as its kill grace.
 *
 * http.get and http.post (D11 "HTTP methods") run on libcurl's
 * multi-socket interface inside the host's loop: its sockets and timer are
 * part of the fd and the timeout above, many transfers run at once, and
 * dispatch never blocks on one. A standalone host has one libcurl multi
 * handle; a registry has one for all its "vfs" tools, whose connections
 * they share. libcurl resolves host names on short-lived threads of its
 * own (its threaded resolver): the one place where threads run, and no
 * jptool code runs on them. TLS peer and host verification is always on;
 * no proxy is used (the *_proxy environment variables are ignored); no
 * cookies are kept. HTTP: a response's body is decoded (Accept-Encoding
 * announces what this libcurl decodes: gzip, deflate, br, zstd on Debian),
 * so that what is scrubbed is what the tool could read; its headers stay
 * as received (Content-Encoding and Content-Length describe the encoded
 * body). An unknown Content-Encoding, or a Transfer-Encoding other than
 * chunked, fails the request (-32603) rather than pass bytes the scrubber
 * cannot read.
 *   Request params: "url"; "headers", an array of {"name", "value"} (at
 *   most 100, 64 KiB in all; Host, Content-Length, Transfer-Encoding,
 *   Connection, Upgrade, TE, Trailer, Keep-Alive and Proxy-* are the
 *   host's to write and refused with -32602, as are names that are not
 *   HTTP tokens and values with line breaks); http.post's "body", text, or
 *   base64 with "encoding": "base64". No Content-Type is sent unless the
 *   tool writes one, and User-Agent is "jptool/<version>" unless it does.
 *   Result: {"status": 200, "headers": [{"name", "value"}, …] as received
 *   (of the last response when redirects were followed), "body": "…"},
 *   with "encoding": "base64" when the body is not UTF-8 text without NUL
 *   bytes. An HTTP error status is a result, not an error. */
typedef struct jpt_vfs_host jpt_vfs_host;

typedef struct jpt_vfs_host_options {
    size_t size;                /* sizeof(jpt_vfs_host_options) */
    jpt_files *files;           /* the tool's files (the host takes a
                                   reference; the policy applies to any
                                   backend); NULL: the directory `root` */
    const char *root;           /* with files NULL; NULL: the current directory */
    const char *sandbox_json;   /* the tool's `sandbox` section; NULL: D11's
                                   default (workspace read-only) */
    int request_timeout_ms;     /* no request nor result for this long stops
                                   the tool; 0: 60000; -1: none */
    int kill_grace_ms;          /* after `cancel`, before SIGTERM, and again
                                   before SIGKILL; 0: 5000 */
    size_t max_message;         /* longest line from the tool; 0: 10 MiB +
                                   64 KiB */
    unsigned max_violations;    /* protocol violations tolerated; 0: 16 */
    int sandbox_mode;           /* the spawned tool's OS sandbox
                                   (JPT_SANDBOX_*); 0: JPT_SANDBOX_REQUIRED */
    const char *const *sandbox_read; /* absolute paths the spawned tool may
                                   also read and execute (its libraries or
                                   interpreter outside /usr), NULL-terminated
                                   and copied; NULL: none */
} jpt_vfs_host_options;

/* Creates a host. `opts` may be NULL (every default). The root directory
 * is opened with JPT_FILES_ALLOW_HARDLINKS when the sandbox says
 * "filesystem": {"hardlinks": "allow"}; `files` given by the application
 * keeps the flags it was opened with. Errors: JPT_ERR_INVALID (a bad
 * option, an unknown sandbox mode, a relative sandbox_read path; a
 * sandbox the policy refuses: the message, which names the key,
 * is logged, as there is no host to ask), JPT_ERR_NOT_FOUND (no root
 * directory), JPT_ERR_IO (the loop's fds; the root cannot be opened),
 * JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_vfs_host_new(const jpt_vfs_host_options *opts, jpt_vfs_host **out);

/* Starts the tool: `argv` (argv[0] looked up in PATH unless it has a '/')
 * with stdin and stdout as the protocol's pipes, stderr kept (its end is
 * quoted when the tool fails), then `init` with `tool_json`, an object
 * {"name", "arguments", "answers", "options"} (name required; the others
 * default to {}). One tool per host. It runs in the OS sandbox of the
 * host's sandbox_mode, its environment PATH alone. Errors: JPT_ERR_STATE
 * (a tool was started already), JPT_ERR_INVALID (tool_json),
 * JPT_ERR_NOT_FOUND (no such program), JPT_ERR_SANDBOX (the sandbox is
 * required and this system cannot enforce it; the message names what it
 * lacks), JPT_ERR_IO, JPT_ERR_NOMEM; the message says which. */
JPT_EXPORT int jpt_vfs_host_spawn(jpt_vfs_host *h, const char *const argv[],
                                  const char *tool_json);

/* Serves a tool the application started itself: the host reads its
 * messages from `read_fd` and writes to `write_fd` (both made
 * non-blocking; the host closes them when it is freed, or when the tool
 * ends). The tool ends when `read_fd` reaches its end. Errors as
 * jpt_vfs_host_spawn, JPT_ERR_INVALID for a negative fd. */
JPT_EXPORT int jpt_vfs_host_attach(jpt_vfs_host *h, int read_fd, int write_fd,
                                   const char *tool_json);

/* The loop: as jpt_registry_get_fd, _get_timeout and _dispatch. Dispatch
 * returns >0 if more work is ready at once, 0 if not, JPT_ERR_IO (epoll
 * failed; the message has errno's text). JPT_ERR_INVALID for NULL. */
JPT_EXPORT int jpt_vfs_host_get_fd(const jpt_vfs_host *h);
JPT_EXPORT int jpt_vfs_host_get_timeout(const jpt_vfs_host *h);
JPT_EXPORT int jpt_vfs_host_dispatch(jpt_vfs_host *h);

/* Polls and dispatches until the tool has ended or `timeout_ms` passes
 * (-1: no limit): JPT_OK, JPT_ERR_TIMEOUT, JPT_ERR_STATE (no tool),
 * JPT_ERR_IO. While it runs, SIGPIPE is blocked in the calling thread
 * (once for the run, not around each write to the tool) and unblocked as
 * it returns unless it was blocked before; a SIGPIPE a write to the tool
 * raises is taken back. The policy handler runs inside it: a SIGPIPE the
 * handler's own writes raise is delivered when the run returns, and the
 * handler must not unblock SIGPIPE. jpt_vfs_host_dispatch blocks it around
 * each write instead. */
JPT_EXPORT int jpt_vfs_host_run(jpt_vfs_host *h, int timeout_ms);

/* A stateful tool's input (RFD 009 apply, D11 `apply` notification):
 * `input_json` is any JSON value. JPT_ERR_INVALID (not JSON), JPT_ERR_STATE
 * (no tool, or it has ended), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_vfs_host_apply(jpt_vfs_host *h, const char *input_json);

/* Cancels the tool: D11's `cancel` notification, SIGTERM after the grace
 * if it has not ended, SIGKILL after another (a tool on attached fds has
 * its fds closed instead). Its requests waiting on the policy handler are
 * answered -32005. JPT_ERR_STATE when no tool runs. */
JPT_EXPORT int jpt_vfs_host_cancel(jpt_vfs_host *h);

/* The tool's latest state, a new reference for the caller to unref:
 * running or waiting as its `state` notifications said, and stopped once
 * it has ended — its result, or an error state saying why it failed (it
 * exited without a result, with the end of its stderr; it broke the
 * protocol; it was silent past the request timeout). JPT_ERR_AGAIN while
 * the tool has reported nothing; JPT_ERR_STATE when none was started. */
JPT_EXPORT int jpt_vfs_host_state(jpt_vfs_host *h, jpt_state **out);

/* What the OS sandbox of the spawned tool enforces: `*enforced` gets the
 * JPT_SANDBOX_ENFORCED_* bits (0 with JPT_SANDBOX_OFF), `*report` a
 * sentence saying so and naming what this system lacks ("vfs profile,
 * Landlock ABI 7: enforced files, …"), valid while the host lives. Either
 * may be NULL. Also after the tool ended. Errors: JPT_ERR_INVALID (NULL
 * h), JPT_ERR_STATE (no tool was spawned: none yet, or one attached). */
JPT_EXPORT int jpt_vfs_host_sandbox(jpt_vfs_host *h, unsigned *enforced, const char **report);

/* 1 once the tool has ended (its process reaped, or its fds closed), else
 * 0 (also for NULL). */
JPT_EXPORT int jpt_vfs_host_done(const jpt_vfs_host *h);

/* Installs the policy handler (NULL: none; an ask is then denied). */
JPT_EXPORT void jpt_vfs_host_set_policy_handler(jpt_vfs_host *h, jpt_policy_fn fn,
                                                void *ud);

/* The message of the last failed call, or "". Never NULL. */
JPT_EXPORT const char *jpt_vfs_host_errmsg(const jpt_vfs_host *h);

/* Frees the host; a tool still running is killed (SIGKILL) and reaped
 * first, its requests dropped. Policy requests the handler still holds
 * answer JPT_ERR_CANCELLED and must still be answered to be freed. Not
 * from inside a callback of this host. NULL-safe. */
JPT_EXPORT void jpt_vfs_host_free(jpt_vfs_host *h);

#ifdef __cplusplus
}
#endif

#endif /* JPTOOL_VFS_H */
