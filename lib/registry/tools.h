/* The registry room, tools layer: definitions (tools.c), the lists the
 * model sees (schemas.c), and the providers' shapes of calls and results
 * (wire.c). Never installed. See base.h for the room's layers. */
#ifndef JPT_LIB_REGISTRY_TOOLS_H
#define JPT_LIB_REGISTRY_TOOLS_H

#include "registry/runtime.h"

/* ---- Definitions (tools.c) ------------------------------------------------------ */

jpt__tool *jpt__tool_ref(jpt__tool *t);
void jpt__tool_unref(jpt__tool *t);
/* The tool of that name, loaded or the registry's own (await, while a
 * stateful tool is loaded), or NULL. */
jpt__tool *jpt__tool_find(jpt_registry *r, const char *name);
bool jpt__tools_have_stateful(const jpt_registry *r);
/* The registry's own tool `name`, its calls run through `ops` (RFD 037's
 * await); it takes `parameters`, even on failure. NULL when out of
 * memory. */
jpt__tool *jpt__tool_new_own(const char *name, const char *description, json_t *parameters,
                             const jpt__call_ops *ops);

/* ---- Tool lists (schemas.c) ----------------------------------------------------- */

/* RFD 037's await parameters, anyOf included. New reference, NULL when out
 * of memory. */
json_t *jpt__await_schema(void);
extern const char jpt__await_description[];

/* ---- Shapes of calls and results (wire.c) ------------------------------------------ */

#define JPT__DIALECT_OWN 0 /* jptool's own {"id","name","arguments"} */

/* One call as read from a model message. */
typedef struct jpt__wire_call {
    char *id;
    char *name;
    json_t *arguments; /* the arguments object; NULL when `problem` is set */
    char *problem;     /* why the call cannot run, worded for the model */
    int dialect;       /* the shape it came in: JPT_DIALECT_*, or JPT__DIALECT_OWN */
    bool id_made;      /* a Gemini call without id, named "<name>#<index>" */
} jpt__wire_call;

/* Reads the calls of one model message (see jpt_registry_submit): `*calls`
 * holds `*n` calls, skipped blocks left out; free them with
 * jpt__wire_free(). Errors (in r->err): JPT_ERR_INVALID (not such an
 * array), JPT_ERR_NOMEM. */
int jpt__wire_read(jpt_registry *r, const char *text, jpt__wire_call **calls, size_t *n);
void jpt__wire_free(jpt__wire_call *calls, size_t n);

/* What a result in a provider's shape is made of. */
typedef struct jpt__wire_result_of {
    const char *id;
    const char *name;
    const char *content;
    bool is_error;
    bool id_made;
} jpt__wire_result_of;

/* A finished call's result in the shape of `dialect` (JPT__DIALECT_OWN:
 * {"id","content","is_error"}). New reference, NULL when out of memory. */
json_t *jpt__wire_result(const jpt__wire_result_of *c, int dialect);

#endif /* JPT_LIB_REGISTRY_TOOLS_H */
