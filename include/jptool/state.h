/* jptool — jpt_state: what a tool produced, as typed content blocks.
 *
 * SPDX-License-Identifier: MIT
 *
 * A state is the value every part of jptool passes around: the lifecycle
 * state of a tool call (RFD 009: running, waiting, stopped), an optional error
 * (RFD 058 `isError` with `_meta."computer.jp/error"`), and an ordered list of
 * content blocks (RFD 058: text, resource, question; MCP's image, audio and
 * resource_link are kept when a tool sends them).
 *
 * States come from jpt_state_parse() (tool output in any of the formats
 * below) or from the builders (hosts and builtin tools). They are reference
 * counted; once a state has more than one reference it is immutable and the
 * builders refuse it with JPT_ERR_STATE.
 *
 * Strings returned by accessors are owned by the state and valid until its
 * last reference is dropped. Text from tool output is kept byte-exact, even
 * when it is not valid UTF-8 or contains NUL bytes (hence the length
 * out-parameters); invalid sequences are replaced with U+FFFD only when the
 * state is rendered or serialised as JSON. JSON text, whether read or given
 * to a builder or to jpt_schema_check(), may spell NUL characters inside
 * strings (\u0000); fields holding JSON text (a question's schema and
 * default, annotations, structured content) keep them escaped. */
#ifndef JPTOOL_STATE_H
#define JPTOOL_STATE_H

#include <stddef.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jpt_state jpt_state;

/* Lifecycle states (RFD 009 ToolState). */
#define JPT_STATE_RUNNING 1
#define JPT_STATE_WAITING 2
#define JPT_STATE_STOPPED 3

/* Content block types (RFD 058, MCP). */
#define JPT_BLOCK_TEXT 1
#define JPT_BLOCK_RESOURCE 2
#define JPT_BLOCK_QUESTION 3
#define JPT_BLOCK_IMAGE 4
#define JPT_BLOCK_AUDIO 5
#define JPT_BLOCK_RESOURCE_LINK 6

/* ---- Parsing ------------------------------------------------------------- */

/* Treat the input as raw text even if it looks like JSON (for tools whose
 * output is data, e.g. a tool that prints a JSON file). */
#define JPT_PARSE_RAW 0x1u

/* Parses a tool's output into a new state (one reference, owned by the
 * caller). The formats are detected in this order:
 *
 * A top-level `type` naming a ToolState or Outcome variant decides first
 * (RFD 009's detection rule; envelopes have no top-level `type`):
 *
 *  1. RFD 058 envelope / MCP CallToolResult: a JSON object with a `content`
 *     array (or a `content` string, D11's form, which is one text block), and
 *     optionally `isError`, `structuredContent`, `_meta."computer.jp/error"`
 *     ({"transient": bool, "trace": [string]}) and `_meta."computer.jp/status"`
 *     ("running" | "waiting" | "stopped"; absent means stopped, or waiting
 *     when the content holds a question block — a one-shot tool asking).
 *  2. RFD 009 ToolState: an object whose `type` is "running", "waiting",
 *     "stopped" or "spawned" (read as running), with `content` (a string, ""
 *     meaning none, or a block array), `question`, and a stopped state's
 *     end in every form the RFDs write it: `result` as the value itself (a
 *     string, as RFD 009's and D11's examples give it, "Staged 3 hunks.",
 *     or a block array), as RFD 009's Result {"Ok": …} or {"Err":
 *     {"message", "trace", "transient"}}, or, without `result`, `error`
 *     holding that ToolError (RFD 009's From<Outcome>). A stdio tool's
 *     state lines and a VFS tool's state notifications are read here
 *     alike.
 *  3. JP's legacy Outcome: `type` "success", "error" or "needs_input", mapped
 *     as RFD 009's table says. JP's Question ({id, text, pre_amble?,
 *     answer_type: "Boolean" | "Text" | {"Select": {"options": [...]}},
 *     default?}) becomes a question block with the equivalent JSON Schema,
 *     its pre_amble a text block before it.
 *  4. Anything else (not JSON, JSON that is not an object, an object with no
 *     `content`): one text block holding the bytes exactly, stopped, no error.
 *     This is a permanent, supported path, not a failure.
 *
 * A block that is malformed inside a content array (unknown type, resource
 * without uri, question without id, …) is skipped and a warning names it;
 * the rest of the output is kept. Warnings are also sent to the log hook.
 *
 * `flags` is 0 or JPT_PARSE_RAW. `data` may be NULL when `len` is 0.
 *
 * Errors: JPT_ERR_INVALID (out is NULL, data is NULL with len > 0, unknown
 * flags), JPT_ERR_NOMEM, with jpt_last_error() saying which. Malformed
 * output is never an error. */
JPT_EXPORT int jpt_state_parse(const char *data, size_t len, unsigned flags,
                               jpt_state **out);

/* ---- Reference counting -------------------------------------------------- */

/* Adds a reference and returns `s`. From then on the state is immutable,
 * even after the extra reference is dropped. NULL-safe. The count is
 * atomic, so a shared state may be read from several threads (its
 * jpt_state_errmsg() text excepted, which a refused builder call sets). */
JPT_EXPORT jpt_state *jpt_state_ref(jpt_state *s);

/* Drops a reference; the last one frees the state. NULL-safe. */
JPT_EXPORT void jpt_state_unref(jpt_state *s);

/* ---- Reading a state ----------------------------------------------------- */

/* JPT_STATE_RUNNING, JPT_STATE_WAITING or JPT_STATE_STOPPED. */
JPT_EXPORT int jpt_state_kind(const jpt_state *s);

/* 1 if the tool stopped with an error, else 0. An error state is stopped. */
JPT_EXPORT int jpt_state_is_error(const jpt_state *s);

/* The error message: the text blocks of an error state joined by newlines
 * (RFD 058: "the content blocks carry the error message"), or the legacy
 * `message`. "" when the state is not an error. Never NULL. */
JPT_EXPORT const char *jpt_state_error_message(const jpt_state *s);

/* 1 if the error is transient (retrying may succeed), else 0. */
JPT_EXPORT int jpt_state_error_transient(const jpt_state *s);

/* The error's source chain, outermost first. Index out of range: NULL.
 * Trace lines are C strings: a line holding a NUL byte is cut there. */
JPT_EXPORT size_t jpt_state_error_trace_count(const jpt_state *s);
JPT_EXPORT const char *jpt_state_error_trace(const jpt_state *s, size_t i);

/* MCP `structuredContent` as compact JSON text, or NULL when absent. */
JPT_EXPORT const char *jpt_state_structured_content(const jpt_state *s);

/* The number of content blocks, and the JPT_BLOCK_* type of block `i`
 * (0 when `i` is out of range). Blocks keep the tool's order. */
JPT_EXPORT size_t jpt_state_block_count(const jpt_state *s);
JPT_EXPORT int jpt_state_block_type(const jpt_state *s, size_t i);

/* Fields of a content block, for jpt_state_block_field(). Which block types
 * carry which field:
 *
 *   TEXT            text
 *   RESOURCE        uri, mime_type, text or blob, formatted, name, title,
 *                   description, annotations
 *   QUESTION        id, text, schema, default
 *   IMAGE, AUDIO    blob (MCP `data`, base64), mime_type, annotations
 *   RESOURCE_LINK   uri, name, title, description, mime_type, annotations
 *
 * SCHEMA, DEFAULT and ANNOTATIONS are compact JSON text. BLOB is the base64
 * text as the tool sent it; JPT_FIELD_BLOB_SIZE is the decoded size in bytes
 * as a decimal string. */
#define JPT_FIELD_TEXT 1
#define JPT_FIELD_URI 2
#define JPT_FIELD_MIME_TYPE 3
#define JPT_FIELD_BLOB 4
#define JPT_FIELD_FORMATTED 5
#define JPT_FIELD_NAME 6
#define JPT_FIELD_TITLE 7
#define JPT_FIELD_DESCRIPTION 8
#define JPT_FIELD_ANNOTATIONS 9
#define JPT_FIELD_ID 10
#define JPT_FIELD_SCHEMA 11
#define JPT_FIELD_DEFAULT 12
#define JPT_FIELD_BLOB_SIZE 13

/* A field of block `i`, NUL-terminated, or NULL when the block does not have
 * it (or `i` or `field` is out of range). If `len` is not NULL it receives the
 * length in bytes, which matters for text holding NUL bytes. */
JPT_EXPORT const char *jpt_state_block_field(const jpt_state *s, size_t i,
                                             int field, size_t *len);

/* Problems found while parsing (malformed blocks skipped, a waiting state
 * without a question, …), one sentence each, in the order found. */
JPT_EXPORT size_t jpt_state_warning_count(const jpt_state *s);
JPT_EXPORT const char *jpt_state_warning(const jpt_state *s, size_t i);

/* The message of the last failed builder call on `s`, or "" if none. Valid
 * until the next call on `s`. */
JPT_EXPORT const char *jpt_state_errmsg(const jpt_state *s);

/* ---- Building a state -----------------------------------------------------
 * For hosts and builtin tools. Each builder appends in order and fails with
 * JPT_ERR_STATE once the state is shared (jpt_state_ref) or, for content,
 * once an error was set; on failure the state is unchanged and
 * jpt_state_errmsg() says why. */

/* A new empty state of `kind` (JPT_STATE_*). JPT_ERR_INVALID for another
 * kind or a NULL `out`; JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_state_new(int kind, jpt_state **out);

/* Appends a text block. JPT_ERR_INVALID if `text` is NULL. */
JPT_EXPORT int jpt_state_add_text(jpt_state *s, const char *text);

/* A resource for jpt_state_add_resource(). Set `size` to sizeof(jpt_resource)
 * and leave unused fields NULL. `uri` is required and exactly one of `text`
 * or `blob` (base64). `annotations_json` is a JSON object (MCP annotations:
 * audience, priority, lastModified). */
typedef struct jpt_resource {
    size_t size;
    const char *uri;
    const char *mime_type;
    const char *text;
    const char *blob;
    const char *formatted;
    const char *name;
    const char *title;
    const char *description;
    const char *annotations_json;
} jpt_resource;

/* Appends a resource block. JPT_ERR_INVALID when the struct is too small,
 * `uri` is missing, text and blob are both or neither given, the blob is not
 * base64, or the annotations are not a JSON object; JPT_ERR_UNSUPPORTED when
 * it sets fields of a newer jptool. */
JPT_EXPORT int jpt_state_add_resource(jpt_state *s, const jpt_resource *r);

/* Appends a question block. `id` is non-empty; `schema_json` is a JSON
 * Schema (an object, or the boolean schemas true / false) or NULL for "any
 * answer"; `default_json` is any JSON value or NULL for none.
 * JPT_ERR_INVALID for a missing or empty id, a missing text, JSON that does
 * not parse, or a schema that is neither an object nor a boolean. */
JPT_EXPORT int jpt_state_add_question(jpt_state *s, const char *id,
                                      const char *text,
                                      const char *schema_json,
                                      const char *default_json);

/* Appends one content block given as JSON in RFD 058 / MCP form (any block
 * type, including image, audio and resource_link). The block is checked as
 * jpt_state_parse() checks it; a malformed block is JPT_ERR_INVALID with the
 * reason in jpt_state_errmsg(). */
JPT_EXPORT int jpt_state_add_block_json(jpt_state *s, const char *block_json);

/* Sets MCP `structuredContent` (any JSON value), replacing an earlier one.
 * JPT_ERR_INVALID if it does not parse. */
JPT_EXPORT int jpt_state_set_structured_content(jpt_state *s, const char *json);

/* Marks the state as a stopped error. A non-empty `message` is appended as a
 * text block, so the content carries it as RFD 058 requires; the error
 * message is then the text of all text blocks. `transient` is 0 or 1. Call it
 * after the content blocks: content can no longer be added afterwards, trace
 * lines can. JPT_ERR_INVALID if message is NULL. */
JPT_EXPORT int jpt_state_set_error(jpt_state *s, const char *message,
                                   int transient);

/* Appends a line to the error's trace. JPT_ERR_STATE if no error is set. */
JPT_EXPORT int jpt_state_add_error_trace(jpt_state *s, const char *line);

/* ---- Serialising --------------------------------------------------------- */

/* Output forms for jpt_state_to_json(). */
#define JPT_JSON_ENVELOPE 1   /* RFD 058 / MCP CallToolResult */
#define JPT_JSON_TOOL_STATE 2 /* RFD 009 ToolState */
#define JPT_JSON_OUTCOME 3    /* JP's legacy Outcome */

/* Flags for jpt_state_to_json(). */
#define JPT_JSON_PRETTY 0x1u /* indent with two spaces */

/* Serialises the state as JSON text in `form`; the caller frees `*out` with
 * jpt_free(). Every form parses back (jpt_state_parse) to an equal state, for
 * valid UTF-8 text. Where the RFD 009 and legacy forms carry content as a
 * string, a state whose content is not one non-empty text block is written
 * with `content` as a block array instead, and `structuredContent` is kept as
 * an extra member, so nothing is lost. The envelope names the state's kind in
 * `_meta."computer.jp/status"` unless it is stopped without questions (RFD
 * 058: an absent status means stopped).
 *
 * Errors: JPT_ERR_INVALID (bad form or flags, NULL argument; or
 * JPT_JSON_OUTCOME for a running state, which the legacy format cannot
 * express), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_state_to_json(const jpt_state *s, int form, unsigned flags,
                                 char **out);

/* Options for jpt_state_render(). Zero-initialise, then set `size`. */
typedef struct jpt_render_options {
    size_t size; /* sizeof(jpt_render_options) */
    /* The workspace root: an absolute path or a file:// URI. File resources
     * beneath it are named by their path relative to it. NULL: absolute
     * URIs. */
    const char *root;
} jpt_render_options;

/* The text the model reads for this state; the caller frees `*out` with
 * jpt_free(). Blocks are rendered in order, separated by a blank line:
 * text as-is; a resource by its `formatted` text if given, else a line naming
 * it (canonical URI, relative to the root) and a code fence whose language
 * comes from the mime type and which is longer than any backtick run inside;
 * a binary resource as one line with uri, mime type and size; a question with
 * its id, text, expected answer and default. An error state starts with
 * "Error: " ("Error (transient): ") and ends with its trace. Invalid UTF-8
 * and NUL bytes become U+FFFD. `opts` may be NULL.
 *
 * Errors: JPT_ERR_INVALID (NULL state or out, `opts->size` too small, a
 * root that is not absolute), JPT_ERR_UNSUPPORTED (`opts` sets fields of a
 * newer jptool), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_state_render(const jpt_state *s,
                                const jpt_render_options *opts, char **out);

/* ---- Helpers the state uses, useful on their own --------------------------- */

/* Canonicalises a URI for identity (RFD 058 "URI canonicalization"); the
 * caller frees `*out` with jpt_free().
 *
 * File URIs (and bare paths, which are read as file paths, relative ones
 * against `root`): percent-decoding, `.` and `..` resolved, `//` collapsed,
 * trailing slash dropped, query and fragment dropped (they name no other
 * file). A path beneath `root` (a path or file:// URI; may
 * be NULL) is returned relative to it ("src/main.rs", or "." for the root
 * itself); any other path as a file:///… URI with canonical percent-encoding.
 * Other URIs with an authority (https://…): lowercase scheme and host, default
 * port dropped, dot segments resolved, percent-encoding normalised (unreserved
 * characters decoded, hex digits uppercase). Opaque URIs (urn:…, mailto:…):
 * lowercase scheme. Parsing uses libcurl's URL API.
 *
 * Errors: JPT_ERR_INVALID (NULL or empty URI, NULL out, a URI libcurl
 * rejects, a file URI naming a remote host or holding an encoded NUL byte
 * (no file name can), a root that
 * is not an absolute path or file URI), JPT_ERR_NOMEM. */
JPT_EXPORT int jpt_uri_canonicalize(const char *uri, const char *root,
                                    char **out);

/* The code fence language for a mime type ("text/rust" -> "rs",
 * "text/x-python" -> "python", "application/json" -> "json"); parameters
 * ("; charset=…") and case are ignored, and "+json" / "+xml" suffixes map to
 * json / xml. NULL for an unknown type or NULL. Static storage. */
JPT_EXPORT const char *jpt_mime_fence_lang(const char *mime_type);

/* Checks the JSON value `value_json` against `schema_json`, in the JSON
 * Schema subset questions use: type (all seven, or an array of them), enum,
 * const, properties, required, additionalProperties, items, minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum, minLength, maxLength (in characters),
 * minItems, maxItems, anyOf, oneOf, and the boolean schemas true/false.
 * Unknown keywords are ignored.
 *
 * Returns JPT_OK when the value matches. JPT_ERR_INVALID when it does not, or
 * when either text is not JSON; then if `why` is not NULL it receives a
 * message saying what did not match and where, as a JSON Pointer ("at
 * /files/2: expected string, got integer"), which the caller frees with
 * jpt_free(). JPT_ERR_NOMEM (then `*why` is NULL). */
JPT_EXPORT int jpt_schema_check(const char *schema_json,
                                const char *value_json, char **why);

#ifdef __cplusplus
}
#endif

#endif /* JPTOOL_STATE_H */
