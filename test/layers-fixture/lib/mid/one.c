#include "mid/mid.h"

int mid_one(void)
{
    return low_b();
}
