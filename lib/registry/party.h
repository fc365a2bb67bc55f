/* The registry room, party layer: those who follow handles on the model's
 * behalf — notifications (notify.c), the await tool (await.c) and the end
 * of a turn (turn.c), all RFD 037. Never installed. See base.h for the
 * room's layers. */
#ifndef JPT_LIB_REGISTRY_PARTY_H
#define JPT_LIB_REGISTRY_PARTY_H

#include "registry/call.h"

/* ---- Notifications (notify.c) -------------------------------------------------------
 * RFD 037's notifications, through RFD 011's system message queue: a
 * handle that changes while the model does not watch it leaves a notice,
 * per its tool's spawn.notifications flags. One notice per handle, the
 * latest; one whose state the model has since read is dropped. */

/* The registry's change hook (base.h, on_handle_change). */
void jpt__notify_handle_changed(jpt_handle *h, unsigned what);
/* Queues the handle's state (a stopped handle's result) whatever its
 * flags say (the turn end). */
void jpt__notify_force(jpt_handle *h);
/* Queues `text` as what the model learns of the handle, in place of its
 * result (the turn end's abort, which discards the output). */
void jpt__notify_instead(jpt_handle *h, const char *text, bool is_error);
void jpt__notices_free(jpt_registry *r);
/* The notices as the model reads them in text (jpt_registry_take_turn_text),
 * appended to `out`. JPT_OK or JPT_ERR_NOMEM. */
int jpt__notices_text(const jpt_registry *r, jpt__buf *out);
/* Clears the notices, as the model has them now: a stopped handle's
 * result is delivered. */
void jpt__notices_take(jpt_registry *r);
/* Appends `n` bytes of a tool's `text` and the blank line that ends an
 * entry of that text. */
int jpt__text_entry(jpt__buf *out, const char *text, size_t n);

/* ---- The await tool (await.c) --------------------------------------------------------- */

/* The call ops of the registry's await tool. */
extern const jpt__call_ops jpt__await_ops;

/* ---- The end of a turn (turn.c) ------------------------------------------------------ */

void jpt__turn_free(jpt_registry *r);

#endif /* JPT_LIB_REGISTRY_PARTY_H */
