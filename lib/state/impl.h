/* The layout of jpt_state: the state room's own. Its files include this
 * header; other rooms read a state through state.h's functions. Never
 * installed. */
#ifndef JPT_LIB_STATE_IMPL_H
#define JPT_LIB_STATE_IMPL_H

#include <stdatomic.h>

#include "state/state.h"

struct jpt_state {
    atomic_uint refs;
    atomic_bool shared; /* set by the first jpt_state_ref(); never cleared */
    int kind;
    bool is_error;
    bool transient;
    bool raw; /* the raw text fallback: the output was no structured format */
    char *error_message; /* NULL when not an error */
    size_t error_message_len; /* it may hold NUL bytes from the text blocks */
    jpt__strv trace;
    jpt__block *blocks;
    size_t nblocks;
    size_t cap_blocks;
    jpt__strv warnings;
    char *structured; /* compact JSON text, or NULL */
    jpt__errbuf err;
};

#endif /* JPT_LIB_STATE_IMPL_H */
