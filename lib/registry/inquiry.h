/* The registry room, inquiry layer: questions put to the host's inquiry
 * handler (inquiry.c). Never installed. See base.h for the room's layers.
 *
 * An inquiry is created by whoever has a question (a one-shot call, an
 * await for a handle it watches, the turn end), which gives it its owner
 * callbacks: the inquiry checks an answer (JSON, the question's schema)
 * and hands it to the owner. The handler may answer at any later time, so
 * an inquiry outlives the dispatch that raised it; an owner that goes
 * first orphans it, and its answer then returns JPT_ERR_CANCELLED. */
#ifndef JPT_LIB_REGISTRY_INQUIRY_H
#define JPT_LIB_REGISTRY_INQUIRY_H

#include "registry/handle.h"

typedef struct jpt__inquiry_owner {
    /* The host's answer, valid JSON that fits the question's schema.
     * JPT_OK or JPT_ERR_CANCELLED (the question is moot) end the
     * inquiry; another error leaves it out, with the message in q->err,
     * for the host to answer again. */
    int (*answered)(jpt_inquiry *q, const json_t *answer, const char *answer_json);
    /* The host will not answer: `why` is worded for the model. The
     * inquiry ends. */
    void (*declined)(jpt_inquiry *q, const char *why);
    /* The inquiry ends (answered, declined, or with the registry) while
     * the owner has it: the owner lets go of it. */
    void (*released)(jpt_inquiry *q);
} jpt__inquiry_owner;

struct jpt_inquiry {
    jpt_registry *r;
    const jpt__inquiry_owner *ops;
    void *owner;         /* NULL once orphaned */
    char *tool;
    char *call_id;
    char *handle_id;
    char *question_json;
    char *question_id;
    json_t *schema;
    int target;
    jpt_state *context;
    jpt__errbuf err;
    jpt_inquiry *next, *prev;
};

/* What an inquiry asks: the question block, the blocks shown before it
 * (its context), and whose it is (NULL names are left out). */
typedef struct jpt__inquiry_about {
    const jpt__block *question;
    const jpt__block *before;
    size_t nbefore;
    const char *tool;
    const char *call_id;
    const char *handle_id;
    int target;          /* JPT_TARGET_* */
} jpt__inquiry_about;

/* Whether the host installed an inquiry handler. */
bool jpt__inquiry_handler_set(const jpt_registry *r);
/* Creates the inquiry, stores it in `*slot` (when not NULL), and puts it
 * to the handler, which may answer before this returns: the owner is
 * ready for its callbacks first. Inside dispatch only. JPT_ERR_NOMEM:
 * nothing was asked. */
int jpt__inquiry_ask(jpt_registry *r, const jpt__inquiry_about *about,
                     const jpt__inquiry_owner *ops, void *owner, jpt_inquiry **slot);
/* The owner goes: the inquiry stays with the host, its answer refused. */
void jpt__inquiry_orphan(jpt_inquiry *q);
void jpt__inquiries_free(jpt_registry *r);

#endif /* JPT_LIB_REGISTRY_INQUIRY_H */
