#include "low/low.h"

int low_b(void)
{
    return low_a() + 1;
}
