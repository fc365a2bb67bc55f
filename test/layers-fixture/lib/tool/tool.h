/* The fixture's tool-side room. */
#include "low/low.h"

int tool_t(void);
