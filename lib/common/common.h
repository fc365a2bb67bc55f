/* The common room's internal interface: allocation through the host's hook,
 * per-object error text, logging, growable byte buffers, UTF-8 helpers and
 * the jansson glue (json.h), and the streaming secret scrubber (scrub.h).
 * Never installed. */
#ifndef JPT_LIB_COMMON_H
#define JPT_LIB_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jptool/common.h"

#define JPT__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

/* A thread-local read on every allocation: in the static TLS block, so
 * that reading it is one instruction rather than a call to
 * __tls_get_addr. Only for a few bytes: a library loaded with dlopen
 * takes them from glibc's small reserve. */
#define JPT__TLS_HOT __attribute__((tls_model("initial-exec")))

/* ---- Allocation (alloc.c) ------------------------------------------------
 * Every allocation of the library. jpt__malloc(0) returns a valid pointer. */
void *jpt__malloc(size_t n);
void *jpt__calloc(size_t count, size_t size);
void *jpt__realloc(void *p, size_t n);
void jpt__free(void *p);
/* After a slice of many small frees (a loop over what a model sent): has
 * the C library's allocator merge them now, so that the cost is paid a
 * slice at a time rather than at once by some later allocation (alloc.c).
 * Does nothing with a host's allocator. */
void jpt__alloc_settle(void);
char *jpt__strdup(const char *s);
/* A NUL-terminated copy of `n` bytes (which may contain NULs). */
char *jpt__memdup0(const void *p, size_t n);
/* Room for `need` (at least 1) elements of `size` bytes in array `v` of
 * `*cap`: returns `v` itself when it is big enough, else `v` reallocated to a doubled
 * capacity (from `initial`) with `*cap` updated, or NULL (out of memory or
 * overflow) with `v` and `*cap` untouched. */
void *jpt__array_reserve(void *v, size_t *cap, size_t need, size_t size, size_t initial);
/* How many allocations have failed on this thread so far. */
unsigned long jpt__alloc_failures(void);

/* ---- Per-object error text (error.c) -------------------------------------
 * Each object embeds one; setting it never allocates, so the out-of-memory
 * path can report itself. Messages longer than the buffer are cut. */
#define JPT__ERRMSG_MAX 512

typedef struct jpt__errbuf {
    char text[JPT__ERRMSG_MAX];
} jpt__errbuf;

/* Formats the message into `e`, logs it at debug level and returns `status`,
 * so that error paths read `return jpt__err(&s->err, JPT_ERR_INVALID, …);`. */
int jpt__err(jpt__errbuf *e, int status, const char *fmt, ...) JPT__PRINTF(3, 4);
void jpt__err_clear(jpt__errbuf *e);

/* The thread's last error (jpt_last_error), for the public functions that
 * have no object to keep their message: they clear it as they begin, and
 * return jpt__fail(status, "…") on every error. */
int jpt__fail(int status, const char *fmt, ...) JPT__PRINTF(2, 3);
void jpt__fail_clear(void);

/* ---- Intrusive lists -----------------------------------------------------
 * Objects kept on a doubly linked list through their own `next` and `prev`
 * members, from a head pointer. Removing a node that is on no list (both
 * links NULL, not the head) does nothing, so owners may remove twice. */
#define JPT__LIST_PUSH(head, node)                                            \
    do {                                                                      \
        (node)->prev = NULL;                                                  \
        (node)->next = (head);                                                \
        if ((head) != NULL)                                                   \
            (head)->prev = (node);                                            \
        (head) = (node);                                                      \
    } while (0)

#define JPT__LIST_REMOVE(head, node)                                          \
    do {                                                                      \
        if ((node)->prev != NULL)                                             \
            (node)->prev->next = (node)->next;                                \
        else if ((head) == (node))                                            \
            (head) = (node)->next;                                            \
        if ((node)->next != NULL)                                             \
            (node)->next->prev = (node)->prev;                                \
        (node)->next = (node)->prev = NULL;                                   \
    } while (0)

/* Queues: a list with a tail, first in first out. Append at the tail, take
 * from the head; removing a node in the middle or at either end keeps the
 * tail right. */
#define JPT__QUEUE_APPEND(head, tail, node)                                   \
    do {                                                                      \
        (node)->next = NULL;                                                  \
        (node)->prev = (tail);                                                \
        if ((tail) != NULL)                                                   \
            (tail)->next = (node);                                            \
        else                                                                  \
            (head) = (node);                                                  \
        (tail) = (node);                                                      \
    } while (0)

#define JPT__QUEUE_REMOVE(head, tail, node)                                   \
    do {                                                                      \
        if ((tail) == (node))                                                 \
            (tail) = (node)->prev;                                            \
        JPT__LIST_REMOVE(head, node);                                         \
    } while (0)

/* ---- String-keyed maps (idmap.c) -----------------------------------------
 * Handle ids, call ids: lookups in constant time, so that what a model
 * sends (thousands of ids in one batch or await) costs linear time. Keys are
 * not copied; each must live as long as its entry. */
typedef struct jpt__idmap_slot {
    const char *key; /* NULL: empty */
    void *value;
} jpt__idmap_slot;

typedef struct jpt__idmap {
    jpt__idmap_slot *slots;
    size_t cap, n; /* cap is 0 or a power of two */
    uint64_t seed;
} jpt__idmap;

void jpt__idmap_init(jpt__idmap *m);
void jpt__idmap_free(jpt__idmap *m);
/* The value of `key`, or NULL. */
void *jpt__idmap_get(const jpt__idmap *m, const char *key);
/* Adds `key`: JPT_ERR_EXISTS if it is there already, JPT_ERR_NOMEM. */
int jpt__idmap_put(jpt__idmap *m, const char *key, void *value);
/* Room for `n` entries in all, so that putting them never grows the map
 * (growing moves every entry at once). JPT_ERR_NOMEM. */
int jpt__idmap_reserve(jpt__idmap *m, size_t n);
/* Removes `key` if it maps to `value`. */
void jpt__idmap_remove(jpt__idmap *m, const char *key, const void *value);

/* ---- Caller-sized structs (error.c) --------------------------------------
 * A struct whose `size` the caller sets (common.h, "ABI promises"): `known`
 * is this library's sizeof. Smaller is JPT_ERR_INVALID (every struct is at
 * its first version, so no older layout exists); larger is a newer caller,
 * accepted if every byte this library does not know is zero, else
 * JPT_ERR_UNSUPPORTED (the caller asks for something not built here). */
int jpt__struct_check(const void *p, size_t size, size_t known);
/* The same for a struct that has grown since its first version, of
 * `oldest` bytes: a caller built against any version from that one on is
 * accepted, and the fields it does not know are zero (their defaults).
 * Copies the caller's struct `src` of `size` bytes into `dst` of `known`. */
int jpt__struct_take(void *dst, size_t known, const void *src, size_t size, size_t oldest);

/* ---- Logging (log.c) ------------------------------------------------------ */
bool jpt__log_enabled(int level);
void jpt__log(int level, const char *fmt, ...) JPT__PRINTF(2, 3);

/* ---- Byte buffers (buf.c) --------------------------------------------------
 * A growable byte string, always NUL-terminated once anything was appended.
 * Appends return JPT_OK or JPT_ERR_NOMEM and leave the buffer valid. */
typedef struct jpt__buf {
    char *data;
    size_t len;
    size_t cap;
} jpt__buf;

#define JPT__BUF_INIT {NULL, 0, 0}

int jpt__buf_reserve(jpt__buf *b, size_t extra);
int jpt__buf_append(jpt__buf *b, const void *p, size_t n);
int jpt__buf_puts(jpt__buf *b, const char *s);
int jpt__buf_putc(jpt__buf *b, char c);
int jpt__buf_printf(jpt__buf *b, const char *fmt, ...) JPT__PRINTF(2, 3);
int jpt__buf_vprintf(jpt__buf *b, const char *fmt, va_list ap) JPT__PRINTF(2, 0);
/* Appends `n` bytes with invalid UTF-8 sequences replaced by U+FFFD, one
 * replacement per maximal invalid subpart (Unicode §3.9); NUL bytes are
 * replaced too unless `keep_nul`. */
int jpt__buf_append_utf8(jpt__buf *b, const char *p, size_t n, bool keep_nul);
/* Appends `n` bytes as a JSON string literal, quotes included: control
 * characters escaped, invalid UTF-8 replaced by U+FFFD. For responses built
 * on a hot path without a JSON tree (utf8.c). */
int jpt__buf_json_string(jpt__buf *b, const char *p, size_t n);
/* The length of p[0..n) as a JSON string literal, quotes included, or 0
 * when p[0..n) is not valid UTF-8 (or holds a NUL byte and `refuse_nul`). */
size_t jpt__json_quoted_size(const char *p, size_t n, bool refuse_nul);
/* Writes that literal, exactly jpt__json_quoted_size() bytes, to dst. */
void jpt__json_quote(char *dst, const char *p, size_t n);
/* D11's content (fs.read, fs.write, http bodies), written once for both
 * ends (base64.c): the bytes as a JSON string literal when they are UTF-8
 * without a NUL byte (D11: the host picks the encoding by checking UTF-8;
 * a NUL makes a file binary, as for fs.grep and git), else their base64
 * as a string literal; `*base64` says which, for the "encoding": "base64"
 * member the caller writes. The buffer grows once. */
int jpt__buf_content(jpt__buf *b, const void *data, size_t len, bool *base64);
/* Hands the NUL-terminated contents to the caller (an empty string when
 * nothing was appended) and resets the buffer; NULL on allocation failure. */
char *jpt__buf_take(jpt__buf *b);
void jpt__buf_free(jpt__buf *b);

/* ---- Base64 (base64.c) ----------------------------------------------------
 * RFC 4648 §4, the standard alphabet. Encoding pads: jpt__base64_size(n)
 * bytes, no NUL. Decoding takes padded or unpadded text in canonical form
 * (the unused bits of the last character zero), no whitespace; it may work
 * in place (dst == src) and writes at most n / 4 * 3 + 2 bytes. */
size_t jpt__base64_size(size_t n);
void jpt__base64_encode(char *dst, const unsigned char *src, size_t n);
bool jpt__base64_decode(const char *src, size_t n, unsigned char *dst, size_t *len);
/* The same into and out of buffers: appends the encoding of data[0..len),
 * or the bytes `text` decodes to (JPT_ERR_INVALID for a text
 * jpt__base64_decode refuses); JPT_ERR_NOMEM. */
int jpt__buf_base64(jpt__buf *b, const void *data, size_t len);
int jpt__buf_base64_decode(jpt__buf *b, const char *text, size_t len);

/* ---- UTF-8 (utf8.c) -------------------------------------------------------- */
/* Length of the longest valid UTF-8 prefix of p[0..n) (NUL counts as valid). */
size_t jpt__utf8_valid_prefix(const char *p, size_t n);
bool jpt__utf8_valid(const char *p, size_t n);
/* Number of code points in valid UTF-8. */
size_t jpt__utf8_length(const char *p, size_t n);
/* The bytes p[0..n) take up once repaired by jpt__buf_append_utf8 (NUL and
 * each invalid subpart as the 3 bytes of U+FFFD): what the model reads. */
size_t jpt__render_width(const char *p, size_t n);
/* The longest prefix of p[0..n) that renders within `budget` bytes, and
 * the start of the longest suffix that does; never inside a character. */
size_t jpt__render_prefix(const char *p, size_t n, size_t budget);
size_t jpt__render_suffix(const char *p, size_t n, size_t budget);
/* The bytes of the character at p[0..n) when it would make text display
 * other than it reads, else 0: a C0 control or DEL (1 byte), a C1 control
 * (U+0080-U+009F), a bidirectional control (U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069) or a line or paragraph separator (U+2028,
 * U+2029). Quoting a path or a name for a person replaces each (a path
 * that reads "txt.exe" backwards must not look like "exe.txt"). */
size_t jpt__utf8_misleading(const char *p, size_t n);

#endif /* JPT_LIB_COMMON_H */
