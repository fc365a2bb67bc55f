#include "mid/two.h"

int mid_two(void)
{
    return mid_one() + 1;
}
