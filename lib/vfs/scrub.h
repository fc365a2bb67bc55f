/* Secret scrubbing (D11 "process.run", RFD 016): the values of the
 * environment variables a host forwarded to a process, and their encoded
 * forms, replaced by "[REDACTED]" in the process's output before a tool
 * sees it. A pure unit over bytes: no fd, no clock. Never installed.
 *
 * The forms of a value v (each only where it differs from the others):
 *   - v itself;
 *   - v JSON-escaped as common encoders write it: `"` `\` and control
 *     characters escaped (\n, \u001f), and the variants with '/' as "\/",
 *     non-ASCII as \uXXXX (surrogate pairs beyond U+FFFF), '<' '>' '&' as
 *     \u003c \u003e \u0026 (Go's encoding/json), hex digits in capitals;
 *   - v URL-encoded (RFC 3986: all but A-Z a-z 0-9 - . _ ~ as %XX), and
 *     the variants with lower-case hex digits, '/' kept (Python's quote),
 *     space as '+' (forms), and ! ' ( ) * kept (encodeURIComponent);
 *   - v in base64, standard and URL-safe alphabets: padded, unpadded, and
 *     the characters that v alone determines when it starts at each of
 *     the three offsets of a 3-byte group inside longer encoded data.
 * Values shorter than JPT__SCRUB_MIN_VALUE bytes are not scrubbed: short
 * values ("1", "true", "dev") are ordinary words of any output, which
 * replacing would mangle, and too short to be secrets worth hiding.
 *
 * Every occurrence of every form is covered; overlapping occurrences
 * (two values sharing bytes, or a value inside a longer one: longest
 * first) merge and become one "[REDACTED]", so that no byte of any of
 * them survives; occurrences that merely touch stay two.
 *
 * Cost: the forms go into one Aho–Corasick automaton (a trie with failure
 * links, edges sorted per node; the 256 shallowest nodes, where ordinary
 * text keeps the automaton, with whole rows of transitions). Building it
 * is O(P log σ) for P bytes of forms; scrubbing n bytes is O(n log σ) in
 * time whatever the input (each byte is one transition plus failure links,
 * whose number is bounded by the bytes consumed: amortised O(1)), and the
 * memory beyond the automaton is bounded by the longest form: output is
 * held back only while it may still be the start of a form, so a value
 * split across two reads is found all the same. */
#ifndef JPT_LIB_VFS_SCRUB_H
#define JPT_LIB_VFS_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* The shortest value that is scrubbed, in bytes. */
#define JPT__SCRUB_MIN_VALUE 8
/* What replaces an occurrence. */
#define JPT__SCRUB_MARK "[REDACTED]"

/* The automaton of a set of values: built once, never changed, shared by
 * any number of scrubbers (stdout's and stderr's). */
typedef struct jpt__scrub_set jpt__scrub_set;

/* Builds the set of `n` values (values[i] of lens[i] bytes, any bytes).
 * Values shorter than JPT__SCRUB_MIN_VALUE are left out; a set without any
 * value scrubs nothing. JPT_OK; JPT_ERR_NOMEM (*out NULL). */
int jpt__scrub_set_new(const char *const *values, const size_t *lens, size_t n,
                       jpt__scrub_set **out);
void jpt__scrub_set_free(jpt__scrub_set *set);
/* The distinct forms the set looks for, and the longest one's length. */
size_t jpt__scrub_set_patterns(const jpt__scrub_set *set);
size_t jpt__scrub_set_max_len(const jpt__scrub_set *set);
/* Form `i` (in no particular order), `*len` bytes; NULL past the end. */
const char *jpt__scrub_set_pattern(const jpt__scrub_set *set, size_t i, size_t *len);

/* Where scrubbed output goes: JPT_OK, or a status that the feed returns. */
typedef int (*jpt__scrub_sink)(void *ud, const char *p, size_t n);

/* An occurrence (or merged occurrences) not yet written: [s, e) in bytes
 * of the stream. */
typedef struct jpt__scrub_run {
    uint64_t s, e;
} jpt__scrub_run;

/* One stream being scrubbed. */
typedef struct jpt__scrubber {
    const jpt__scrub_set *set;
    jpt__scrub_sink sink;
    void *ud;
    uint32_t state;        /* the automaton's node */
    uint64_t pos;          /* bytes fed */
    uint64_t emitted;      /* bytes before this are written, or covered by
                              runs[head] whose mark is still to come */
    jpt__buf carry;        /* the stream's bytes [emitted, pos) held back */
    jpt__scrub_run *runs;  /* a queue, oldest first */
    size_t head, count, cap;
    uint64_t steps;        /* transitions and failure links followed */
    uint64_t redactions;   /* marks written */
    int failed;            /* a status that stopped the stream, or 0 */
} jpt__scrubber;

/* Starts a stream that writes to `sink`. `set` must outlive it. */
void jpt__scrubber_init(jpt__scrubber *s, const jpt__scrub_set *set, jpt__scrub_sink sink,
                        void *ud);
/* Takes the stream's next n bytes and writes what is final: everything
 * that can no longer become part of an occurrence. JPT_OK; JPT_ERR_NOMEM
 * or the sink's status, after which the stream writes nothing more and
 * every call returns that status. */
int jpt__scrubber_feed(jpt__scrubber *s, const char *p, size_t n);
/* The stream has ended: writes what was held back. */
int jpt__scrubber_finish(jpt__scrubber *s);
/* Frees what the stream holds (not the set). */
void jpt__scrubber_free(jpt__scrubber *s);

/* Scrubs p[0..n) whole into `out` (appended). JPT_OK or JPT_ERR_NOMEM. */
int jpt__scrub(const jpt__scrub_set *set, const char *p, size_t n, jpt__buf *out);

#endif /* JPT_LIB_VFS_SCRUB_H */
