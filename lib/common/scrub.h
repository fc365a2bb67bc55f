/* The streaming secret scrubber (ARCHITECTURE.md §2, common: "one copy of
 * each shared service … the streaming secret scrubber"; D11 "process.run"
 * and "http.get", RFD 016's scrubbing): the values a host lends a tool
 * without showing them — the environment variables forwarded to a
 * process.run child, the ${VAR} values of http headers — replaced by
 * "[REDACTED]" in every form a program or a server could send them back
 * in, before a tool sees anything: process output, http headers and
 * bodies, error messages. A pure unit over bytes: no fd, no clock. Never
 * installed.
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
 *   - v HTML-escaped: & < > " ' as &amp; &lt; &gt; &quot; &#x27; (Python's
 *     html.escape), as &#34; and &#39; (markupsafe), or only & < >;
 *   - v in hexadecimal, lower and upper case;
 *   - v in UTF-16, little- and big-endian (a v that is UTF-8 text);
 *   - v in base64, standard and URL-safe alphabets: padded, unpadded, and
 *     the characters that v alone determines when it starts at each of
 *     the three offsets of a 3-byte group inside longer encoded data (the
 *     at most two characters at each end that mix in neighbouring bytes
 *     are left: they hold at most 4 bits of v's first and of its last
 *     byte).
 * Values shorter than JPT__SCRUB_MIN_VALUE bytes are not scrubbed: short
 * values ("1", "true", "dev") are ordinary words of any output, which
 * replacing would mangle, and too short to be secrets worth hiding.
 *
 * Truncated values. A server that shows a token cut short ("token
 * 'ghp_12ab…' is invalid") must not show most of it, and a scrubber that
 * redacts only whole forms would also answer, for a tool that reflects
 * its own guesses, whether "all but the last byte" plus a guess is the
 * value: an oracle that gives the value away a byte at a time. So each
 * form has a trigger, the start of the form that encodes the value's first
 * JPT__SCRUB_PREFIX bytes (JPT__SCRUB_MIN_VALUE - 1 for a value of
 * JPT__SCRUB_MIN_VALUE bytes; a UTF-8 character begun is taken whole).
 * Wherever a trigger occurs, the text from there is redacted:
 *   - up to the end of the longest whole form that starts there, when one
 *     does (the common case: the value, followed by ordinary text that
 *     stays);
 *   - otherwise as far as the longest form beginning with that trigger
 *     would reach (plus room for line breaks in base64), whatever the
 *     bytes there are.
 * What a tool sees therefore depends on the bytes after a trigger only
 * through whether they complete a whole form, that is whether it already
 * knows the whole value. The one question a tool can still ask by
 * reflecting its guesses is whether a string is the start of a form: it
 * can learn at most the value's first JPT__SCRUB_PREFIX bytes, and only
 * by guessing them all at once (a tool that knows 7 of them learns the
 * 8th). A trigger found inside a whole form found at an earlier place
 * (a value that repeats itself) adds nothing. The cost: where a value's
 * first 8 bytes are ordinary text ("https://" of a URL), that text and
 * what follows it are redacted wherever it appears; give the scrubber
 * values that start with their secret part.
 *
 * Every occurrence is covered; overlapping redactions (two values sharing
 * bytes, a value inside a longer one) merge and become one "[REDACTED]",
 * so that no byte of any of them survives; redactions that merely touch
 * stay two.
 *
 * Not caught: any other transformation (reversed, encrypted, compressed
 * — the http room decodes Content-Encoding before scrubbing —, split by
 * other bytes, hex at an odd nibble), a value shown without its start, and
 * base64 or hex of another form (of the UTF-16 form, say). It is a last
 * line of defence, not a sandbox.
 *
 * Cost: the forms and triggers go into one Aho–Corasick automaton (a trie
 * with failure and output links, edges sorted per node; the 256
 * shallowest nodes, where ordinary text keeps the automaton, with whole
 * rows of transitions). Building it is O(P log σ) for P bytes of
 * patterns; scrubbing n bytes is O(n log σ) in time whatever the input
 * (each byte is one transition plus failure links, whose number is bounded
 * by the bytes consumed, plus the patterns that end there), and the memory
 * beyond the automaton is bounded by the longest form: output is held
 * back only while it may still be part of an occurrence, so a value split
 * across two reads is found all the same. */
#ifndef JPT_LIB_COMMON_SCRUB_H
#define JPT_LIB_COMMON_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* The shortest value that is scrubbed, in bytes. */
#define JPT__SCRUB_MIN_VALUE 8
/* The bytes of a value at the start of a form that trigger a redaction
 * (one less for a value of JPT__SCRUB_MIN_VALUE bytes). */
#define JPT__SCRUB_PREFIX 8
/* What replaces an occurrence. */
#define JPT__SCRUB_MARK "[REDACTED]"

/* The automaton of a set of values: built once, never changed, shared by
 * any number of scrubbers (stdout's and stderr's). */
typedef struct jpt__scrub_set jpt__scrub_set;

/* Builds the set of `n` values (values[i] of lens[i] bytes, any bytes).
 * Values shorter than JPT__SCRUB_MIN_VALUE are left out; a set without any
 * value (n 0 too) scrubs nothing. JPT_OK; JPT_ERR_NOMEM (*out NULL). */
int jpt__scrub_set_new(const char *const *values, const size_t *lens, size_t n,
                       jpt__scrub_set **out);
void jpt__scrub_set_free(jpt__scrub_set *set);
/* Whether the set holds any value to scrub (NULL holds none). */
bool jpt__scrub_set_empty(const jpt__scrub_set *set);

/* One pattern of the set: a whole form, a trigger, or both (two values'
 * forms may coincide). */
typedef struct jpt__scrub_pattern {
    const char *text;
    size_t len;
    bool whole;   /* a whole form: its occurrence is redacted exactly */
    bool trigger; /* a trigger: redacted with what follows, up to `span`
                     bytes from its start when no whole form starts there */
    size_t span;  /* for a trigger, else 0 */
} jpt__scrub_pattern;

/* The distinct patterns the set looks for, and the longest one's length
 * (what a scrubber holds back at most). */
size_t jpt__scrub_set_patterns(const jpt__scrub_set *set);
size_t jpt__scrub_set_max_len(const jpt__scrub_set *set);
/* Pattern `i` (in no particular order); NULL past the end. */
const jpt__scrub_pattern *jpt__scrub_set_pattern(const jpt__scrub_set *set, size_t i);

/* Where scrubbed output goes: JPT_OK, or a status that the feed returns. */
typedef int (*jpt__scrub_sink)(void *ud, const char *p, size_t n);

/* A redaction (or merged redactions) not yet written: [s, e) in bytes of
 * the stream. */
typedef struct jpt__scrub_run {
    uint64_t s, e;
} jpt__scrub_run;

/* The triggers found at one place of the stream, not decided yet: the end
 * of the longest trigger, how far the longest form beginning with one
 * would reach, the end of the longest whole form found there (0: none).
 * Kept in a ring indexed by the place; 0 `trig_end`: none. */
typedef struct jpt__scrub_pending {
    uint64_t trig_end, span_end, whole_end;
} jpt__scrub_pending;

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
    jpt__scrub_pending *pending; /* a ring of max_len + 2, made on the
                                    first trigger */
    size_t npending;
    uint64_t decided;      /* places before this are decided */
    uint64_t covered;      /* the end of the furthest whole form decided */
    uint64_t steps;        /* transitions, failure and output links followed */
    uint64_t redactions;   /* marks written */
    int failed;            /* a status that stopped the stream, or 0 */
} jpt__scrubber;

/* Starts a stream that writes to `sink`. `set` (NULL: scrub nothing) must
 * outlive it. */
void jpt__scrubber_init(jpt__scrubber *s, const jpt__scrub_set *set, jpt__scrub_sink sink,
                        void *ud);
/* Takes the stream's next n bytes and writes what is final: everything
 * that can no longer become part of a redaction. JPT_OK; JPT_ERR_NOMEM
 * or the sink's status, after which the stream writes nothing more and
 * every call returns that status. */
int jpt__scrubber_feed(jpt__scrubber *s, const char *p, size_t n);
/* The stream has ended: decides what was pending (a trigger's redaction
 * stops at the end) and writes what was held back. */
int jpt__scrubber_finish(jpt__scrubber *s);
/* Frees what the stream holds (not the set). */
void jpt__scrubber_free(jpt__scrubber *s);

/* Scrubs p[0..n) whole into `out` (appended); with `found` (may be NULL),
 * whether anything was redacted. JPT_OK or JPT_ERR_NOMEM. */
int jpt__scrub(const jpt__scrub_set *set, const char *p, size_t n, jpt__buf *out,
               bool *found);

#endif /* JPT_LIB_COMMON_SCRUB_H */
