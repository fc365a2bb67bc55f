/* The state room's internal interface: blocks, and what other rooms may
 * read of a jpt_state and do with it, beyond the public functions; the
 * pieces its files share (block <-> JSON, questions, error bookkeeping).
 * jpt_state's layout is the room's own (impl.h). Never installed. */
#ifndef JPT_LIB_STATE_H
#define JPT_LIB_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/json.h"
#include "jptool/state.h"

/* Block fields are indexed by their public JPT_FIELD_* number. */
#define JPT__FIELD_MAX JPT_FIELD_BLOB_SIZE

typedef struct jpt__field {
    char *ptr; /* NUL-terminated; NULL when the block has no such field */
    size_t len;
} jpt__field;

typedef struct jpt__block {
    int type;
    jpt__field f[JPT__FIELD_MAX + 1];
} jpt__block;

typedef struct jpt__strv {
    char **v;
    size_t n;
    size_t cap;
} jpt__strv;


/* What other rooms read of a state (state.c); its kind and error through
 * jpt_state_kind() and jpt_state_is_error(). */
const jpt__block *jpt__state_blocks(const jpt_state *s, size_t *n);
/* The raw text fallback: the output was no structured format. */
bool jpt__state_is_raw(const jpt_state *s);
bool jpt__state_is_transient(const jpt_state *s);
const jpt__strv *jpt__state_trace(const jpt_state *s);
int jpt__state_add_trace(jpt_state *s, const char *line);

/* RFD 009's ToolState names: "running", "waiting", "stopped" (state.c). */
const char *jpt__state_kind_name(int kind);

/* Lifecycle (state.c). */
jpt_state *jpt__state_alloc(int kind);
void jpt__block_clear(jpt__block *b);
/* A deep copy of `src` into `dst`. */
int jpt__block_copy(const jpt__block *src, jpt__block *dst);
/* Appends `b`, taking its fields; on failure `b` is cleared. */
int jpt__state_push_block(jpt_state *s, jpt__block *b);
/* Appends a text block of `n` bytes (NULs and invalid UTF-8 kept as they
 * are). JPT_ERR_NOMEM. */
int jpt__state_add_text(jpt_state *s, const char *text, size_t n);
int jpt__state_warn(jpt_state *s, const char *fmt, ...) JPT__PRINTF(2, 3);
int jpt__strv_push(jpt__strv *sv, const char *p, size_t n);
/* Makes `s` a stopped error whose message is the text of its text blocks. */
int jpt__state_set_error_from_blocks(jpt_state *s, bool transient);
size_t jpt__state_question_count(const jpt_state *s);

/* A bounded queue of blocks (blockq.c): the first half of `limit` bytes
 * kept in order, the last half in a ring, the middle dropped and counted;
 * copied out with a text block marking what was dropped. */
typedef struct jpt__blockq {
    size_t limit;
    jpt__block *head;
    size_t nhead, cap_head, head_bytes;
    jpt__block *ring;
    size_t ring_cap, ring_start, ring_len, ring_bytes;
    uint64_t dropped_blocks, dropped_bytes;
} jpt__blockq;

void jpt__blockq_init(jpt__blockq *q, size_t limit);
/* Takes `b`'s fields (on failure too: `b` is cleared either way). */
int jpt__blockq_push(jpt__blockq *q, jpt__block *b);
bool jpt__blockq_empty(const jpt__blockq *q);
/* Appends copies of the kept blocks to `s`, the marker in their midst. */
int jpt__blockq_copy(const jpt__blockq *q, jpt_state *s);
void jpt__blockq_clear(jpt__blockq *q);
void jpt__blockq_free(jpt__blockq *q);

/* jpt_schema_check() on parsed values (schema.c): the schema is linted,
 * then the value checked. JPT_OK; JPT_ERR_INVALID (the value does not
 * match, or the schema is malformed: `why` says which, the latter
 * starting "the schema"); JPT_ERR_UNSUPPORTED (a keyword jptool does not
 * check); JPT_ERR_LIMIT (too deep, too many steps, a pattern's match
 * limit); JPT_ERR_NOMEM (`*why` NULL). */
int jpt__schema_check_json(const json_t *schema, const json_t *value, char **why);

/* Whether `schema` says only what the checker checks (schema-keywords.c):
 * JPT_OK; JPT_ERR_UNSUPPORTED (a keyword of a later draft, a $ref that is
 * not a JSON Pointer into the schema, an $id below the root of a schema
 * with $refs) or JPT_ERR_INVALID (a keyword with a value JSON Schema does
 * not allow, a $ref to nothing), with `*why` ("at /properties/a: …", the
 * schema's place), which the caller frees; JPT_ERR_NOMEM. */
int jpt__schema_lint(const json_t *schema, char **why);

/* The target of a local $ref ("#", "#/definitions/a"): the value at that
 * JSON Pointer in `root`, or NULL when `ref` is not such a pointer or
 * points to nothing. Borrowed from `root`. */
const json_t *jpt__schema_ref_target(const json_t *root, const char *ref);

/* 0 when `root` can serve as the workspace root (uri.c). */
int jpt__uri_check_root(const char *root);
/* jpt_state_render() with a root checked already (one jpt__uri_check_root
 * accepts; may be NULL): a renderer that renders often, with the same
 * root, checks it once (render.c). */
int jpt__state_render_at(const jpt_state *s, const char *root, char **out);

/* Fields (state.c). */
int jpt__field_set(jpt__field *f, const char *p, size_t n);
/* Sets the field to the compact JSON text of `v`. */
int jpt__field_set_json(jpt__field *f, const json_t *v);
/* The value of JSON text the library stored (a field set by
 * jpt__field_set_json, structured content), NUL characters included; NULL
 * only when out of memory. */
json_t *jpt__json_reload(const char *text, size_t len);

/* Blocks as JSON (block.c). Parsing fills `why` with the reason a block is
 * malformed and returns JPT_ERR_INVALID; the blocks are then empty. A
 * question in JP's form may carry a pre_amble, returned as the text block
 * `pre` to place before it (pre->type is 0 when there is none). */
int jpt__block_from_json(const json_t *j, jpt__block *out, jpt__block *pre,
                         char *why, size_t why_len);
/* A question from RFD 058's {id, text, schema, default} or JP's {id, text,
 * answer_type, pre_amble, default}; `pre_amble` receives JP's pre_amble (not
 * owned by the caller, NULL when absent). */
int jpt__question_from_json(const json_t *q, jpt__block *out,
                            const char **pre_amble, char *why, size_t why_len);
json_t *jpt__block_to_json(const jpt__block *b);
/* A question block as the `question` member of RFD 009 ToolState and legacy
 * Outcome JSON: JP's Question, with `answer_type` when the schema maps onto
 * Boolean, Text or Select, else with the schema itself. `pre_amble` may be
 * NULL. */
json_t *jpt__question_to_json(const jpt__block *b, const jpt__field *pre_amble);
/* A JSON string of the field's bytes, with invalid UTF-8 replaced. */
json_t *jpt__json_from_field(const jpt__field *f);

#endif /* JPT_LIB_STATE_H */
