#include "tool/tool.h"

int tool_t(void)
{
    return low_a();
}
