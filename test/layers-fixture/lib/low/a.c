#include "low/low.h"

int low_a(void)
{
    return 1;
}
