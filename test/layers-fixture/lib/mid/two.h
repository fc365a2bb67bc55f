/* The second layer of the upper room. */
#include "mid/mid.h"

int mid_two(void);
