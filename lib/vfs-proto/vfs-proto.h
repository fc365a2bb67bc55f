/* The vfs-proto room's internal interface: the D11 wire (RFD D11 "Message
 * framing", "Protocol methods") as functions over bytes, for both ends of a
 * session: the host (lib/vfs) and the tool side (lib/vfs-tool). Sans-I/O:
 * no fd, no loop, no clock, no file; it needs the common room's buffers
 * and allocator and nothing else, so the tool's small library
 * (libjptool-tool) is built from it. Never installed.
 *
 * Layers, each calling only those below it:
 *
 *   result.c   the fs.* methods' results, written from typed values
 *   params.c   the methods and their params, validated into typed values
 *   frame.c    NDJSON framing with a line limit; the output queue
 *   codec.c    strict JSON validation, member lookup, string unescape at
 *              memory speed (strings are written by common/utf8.c) */
#ifndef JPT_LIB_VFS_PROTO_H
#define JPT_LIB_VFS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* ==== codec.c ============================================================ */

/* A stretch of JSON text: a value, or a member name without its quotes. */
typedef struct jpt__vfs_span {
    const char *p;
    size_t n;
} jpt__vfs_span;

/* The type of a validated value, from its first byte. */
#define JPT__JSON_OBJECT 1
#define JPT__JSON_ARRAY 2
#define JPT__JSON_STRING 3
#define JPT__JSON_NUMBER 4
#define JPT__JSON_TRUE 5
#define JPT__JSON_FALSE 6
#define JPT__JSON_NULL 7

/* Deeper nesting is refused: the library's limit for every JSON text it
 * reads (common.h), and a message this deep is an attack. */
#define JPT__JSON_MAX_DEPTH JPT_JSON_MAX_DEPTH

typedef struct jpt__json_error {
    size_t offset;    /* byte offset where the text went wrong */
    const char *what; /* static text: "expected ':'" */
} jpt__json_error;

/* Checks that text[0..n) is exactly one JSON value (RFC 8259), with
 * optional whitespace around it: strings of valid UTF-8 without raw control
 * characters, escapes and surrogate pairs well-formed, numbers in JSON's
 * grammar, nesting at most JPT__JSON_MAX_DEPTH. JPT_OK, or JPT_ERR_INVALID
 * with `err` saying where and what. */
int jpt__json_validate(const char *text, size_t n, jpt__json_error *err);

/* JPT__JSON_* of the validated value starting at v.p (whitespace skipped). */
int jpt__json_type(jpt__vfs_span v);

/* Iterating the members of an object or the elements of an array of
 * validated text, without copying: values are skipped at memchr speed. */
typedef struct jpt__json_iter {
    const char *p;
    size_t n, i;
} jpt__json_iter;

/* Starts at the container `v` (validated, whitespace around it allowed). */
void jpt__json_iter_init(jpt__json_iter *it, jpt__vfs_span v);
/* The next member: `key` is the raw name between its quotes, `value` the
 * value's text. false after the last one. */
bool jpt__json_next_member(jpt__json_iter *it, jpt__vfs_span *key, jpt__vfs_span *value);
/* The next element of an array. */
bool jpt__json_next_element(jpt__json_iter *it, jpt__vfs_span *value);
/* Whether the raw member name `key` decodes to `name` (escapes allowed). */
bool jpt__json_key_is(jpt__vfs_span key, const char *name);

/* Decodes the string literal `lit` (quotes included, validated) into `out`,
 * which may be lit.p + 1 or lit.p (decoding in place: the output is never
 * longer than the input). Returns the decoded length; writes no NUL. */
size_t jpt__json_unescape(jpt__vfs_span lit, char *out);

/* A validated number that is a non-negative integer no larger than `max`
 * (no fraction, no exponent, no minus sign). */
bool jpt__json_uint(jpt__vfs_span v, uint64_t max, uint64_t *out);

/* Appends the validated JSON text v with its raw newlines (whitespace, the
 * only place JSON allows them) turned into spaces, so it fits on one line. */
int jpt__json_append_flat(jpt__buf *b, const char *p, size_t n);

/* ==== frame.c ============================================================ */

/* NDJSON framing of one direction (D11 "Message framing"): a line ends at
 * '\n', a '\r' before it is dropped. A line longer than `limit` bytes is
 * reported once and its bytes dropped up to its newline, never buffered
 * whole. */
typedef struct jpt__vfs_lines {
    jpt__buf buf;       /* the start of a line that has not ended yet */
    size_t limit;
    bool skipping;      /* dropping a line over the limit */
    bool buf_returned;  /* buf holds the line returned last; clear it next */
    uint64_t dropped;   /* bytes of the line being dropped */
    uint64_t count;     /* lines completed, dropped ones included */
} jpt__vfs_lines;

typedef struct jpt__vfs_line {
    char *p;            /* in the caller's bytes, or in the framer's buffer */
    size_t n;           /* without the newline and the '\r' before it */
    bool in_buffer;     /* p is the framer's buffer: jpt__vfs_lines_steal() */
    uint64_t number;    /* 1 for the first line */
} jpt__vfs_line;

#define JPT__LINE_NONE 0     /* every byte taken, no line completed */
#define JPT__LINE 1          /* a line: `line` is valid until the next call */
#define JPT__LINE_TOO_LONG 2 /* the line `line->number` passed the limit */

void jpt__vfs_lines_init(jpt__vfs_lines *l, size_t limit);
void jpt__vfs_lines_free(jpt__vfs_lines *l);
/* Takes bytes of p[0..n) up to the end of the next line or event; `*used`
 * says how many. JPT__LINE_NONE means all n were taken; JPT_ERR_NOMEM
 * takes none. */
int jpt__vfs_lines_next(jpt__vfs_lines *l, const char *p, size_t n, size_t *used,
                        jpt__vfs_line *line);
/* Bytes of a line that has begun and not ended (0 between lines). */
uint64_t jpt__vfs_lines_partial(const jpt__vfs_lines *l);
/* Hands the buffer holding `line` (in_buffer) to the caller, to be freed
 * with jpt__free(); the framer starts a new one. */
char *jpt__vfs_lines_steal(jpt__vfs_lines *l);

/* The bytes waiting to be written to the peer: appended at the end, taken
 * from the front. A message is appended whole or not at all. */
typedef struct jpt__vfs_outq {
    jpt__buf buf;
    size_t start; /* buf.data[start..len) is pending */
} jpt__vfs_outq;

void jpt__vfs_outq_free(jpt__vfs_outq *q);
size_t jpt__vfs_outq_pending(const jpt__vfs_outq *q);
const char *jpt__vfs_outq_data(const jpt__vfs_outq *q);
/* `n` bytes from the front were written. */
void jpt__vfs_outq_consume(jpt__vfs_outq *q, size_t n);
/* Before appending a message: room for `n` more bytes, and a mark to roll
 * back to when building it fails. */
int jpt__vfs_outq_begin(jpt__vfs_outq *q, size_t n, size_t *mark);
/* Ends the message started at `mark`: appends the newline, or when `rc`
 * is an error drops everything appended since the mark. Returns `rc` (or
 * JPT_ERR_NOMEM when the newline does not fit). */
int jpt__vfs_outq_end(jpt__vfs_outq *q, size_t mark, int rc);

/* ==== params.c =========================================================== */

/* The methods a tool may call (D11 "Protocol methods"). */
#define JPT__VFS_FS_READ 0
#define JPT__VFS_FS_WRITE 1
#define JPT__VFS_FS_EXISTS 2
#define JPT__VFS_FS_LIST_DIR 3
#define JPT__VFS_FS_METADATA 4
#define JPT__VFS_FS_DELETE 5
#define JPT__VFS_FS_RENAME 6
#define JPT__VFS_FS_GREP 7
#define JPT__VFS_HTTP_GET 8
#define JPT__VFS_HTTP_POST 9
#define JPT__VFS_PROCESS_RUN 10
#define JPT__VFS_METHODS 11

/* The most `context` lines fs.grep accepts on each side of a match. */
#define JPT__VFS_GREP_MAX_CONTEXT 10000

/* A request's params, decoded and checked. Strings are NUL-terminated and
 * hold no NUL byte, except fs.write's content, which has a length. */
typedef struct jpt__vfs_params {
    const char *path;       /* fs.read, write, exists, list_dir, metadata, delete */
    const char *from, *to;  /* fs.rename */
    const char *content;    /* fs.write: the bytes to write, base64 decoded */
    size_t content_len;
    bool base64;            /* fs.write: the content came as base64 */
    /* fs.grep */
    const char *pattern;
    const char *const *paths;      /* NULL: the whole project */
    size_t npaths;
    const char *const *extensions; /* NULL: every file */
    size_t nextensions;
    unsigned context;              /* lines each side, 0 by default */
    bool case_insensitive, fixed_strings;
    uint64_t max_matches;          /* 0: not given (the backend's default) */
    /* process.run */
    const char *program;
    const char *const *args;       /* NULL when not given: no arguments */
    size_t nargs;
    const char *const *envs;       /* NULL when not given: none */
    size_t nenvs;
    /* http.get, http.post */
    const char *url;
    const char *const *header_names;  /* nheaders of each, in order */
    const char *const *header_values;
    size_t nheaders;
    const char *body;       /* http.post: the bytes to send, base64 decoded;
                               may hold NULs (body_len) */
    size_t body_len;
} jpt__vfs_params;

/* The method named by the raw JSON string `name` (no quotes), or -1. */
int jpt__vfs_method_find(jpt__vfs_span name);
const char *jpt__vfs_method_name(int method);

/* Decodes the params object `params` (a validated span; p == NULL when the
 * request had none) of `method` into `out`. String values are unescaped in
 * place, so params.p must be writable and owned by the caller; arrays (fs.grep's
 * paths, extensions; http's headers; process.run's args and envs) are
 * one allocation stored in `*arrays` for the caller to free. JPT_OK;
 * JPT_ERR_INVALID with `why` naming the field
 * ("'path' must be a string"); JPT_ERR_NOMEM. */
int jpt__vfs_params_decode(int method, jpt__vfs_span params, jpt__vfs_params *out,
                           void **arrays, char *why, size_t why_len);

/* ==== result.c ========================================================== */

/* One entry of an fs.list_dir result. */
typedef struct jpt__vfs_fs_entry {
    char *name;
    int kind; /* JPT_FILES_KIND_* */
} jpt__vfs_fs_entry;

/* What an fs.* method gives, as typed values; each method reads its own
 * members. Everything is borrowed. */
typedef struct jpt__vfs_fs_result {
    const char *data;                 /* fs.read: the file's bytes */
    size_t len;
    int kind;                         /* fs.metadata: JPT_FILES_KIND_*; fs.exists:
                                         0 when nothing is there */
    uint64_t size;                    /* fs.metadata */
    const jpt__vfs_fs_entry *entries; /* fs.list_dir */
    size_t nentries;
    const char *json;                 /* fs.grep: its result, JSON text already
                                         (grep.c writes it as it searches) */
    size_t json_len;
} jpt__vfs_fs_result;

/* "file", "dir", "symlink", "other" by JPT_FILES_KIND_*, and back (0 for
 * another name). */
const char *jpt__vfs_kind_name(int kind);
int jpt__vfs_kind_find(const char *name, size_t len);
/* Appends the result of fs.* method `method` (JPT__VFS_FS_*) in D11's
 * shape, as compact JSON on one line: {"content", "encoding"?, "size"},
 * {"exists"}, {"kind", "size"}, {"entries"}, fs.grep's text, or {}. */
int jpt__vfs_put_fs_result(jpt__buf *b, int method, const jpt__vfs_fs_result *r);

/* fs.grep's result in D11's shape, written piece by piece as a search
 * goes: {"matches":[{"path","lines":[{"line_number","content",
 * "is_match"}]}],"truncated":bool} and, when lines were skipped,
 * "skipped":[{"path","line_number","reason"}],"skipped_count":N. `first`:
 * the first of its list (no comma before it). Each returns JPT_OK or
 * JPT_ERR_NOMEM (what was appended then is left for the caller's
 * truncation or failure). */
int jpt__vfs_grep_begin(jpt__buf *b);
int jpt__vfs_grep_file(jpt__buf *b, bool first, const char *path);
int jpt__vfs_grep_line(jpt__buf *b, bool first, uint64_t number, const char *p, size_t n,
                       bool match);
/* The most bytes a line's entry can add (its path and content escaped, up
 * to 6 bytes a byte, and the members around them). */
size_t jpt__vfs_grep_line_size(size_t path_len, size_t content_len);
int jpt__vfs_grep_file_end(jpt__buf *b);
/* An entry of "skipped", into a buffer of its own (the list goes last). */
int jpt__vfs_grep_skipped(jpt__buf *b, bool first, const char *path, uint64_t number,
                          const char *reason);
/* Ends the result: "truncated", then the skipped entries written with
 * jpt__vfs_grep_skipped (skipped[0..skipped_len)) when there are any. */
int jpt__vfs_grep_end(jpt__buf *b, bool truncated, const char *skipped, size_t skipped_len,
                      size_t n_skipped);

#endif /* JPT_LIB_VFS_PROTO_H */
