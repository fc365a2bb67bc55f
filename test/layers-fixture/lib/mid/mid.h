/* The fixture's upper room. */
#include "low/low.h"

int mid_one(void);
