/* jptool — an embeddable runtime for LLM tool calls. The umbrella header:
 * include this one, or the headers of the parts you use.
 *
 *   common.h  status codes, jpt_free, allocator and log hooks
 *   state.h   jpt_state: tool output as typed content blocks (RFD 058/009)
 *   registry.h  tools, handles and calls, driven from the host's loop (RFD 009)
 *   vfs.h     ProjectFiles, the access policy and the VFS host (D11)
 *   vfs_tool.h  the tool side of D11: a blocking client for VFS tools
 *
 * SPDX-License-Identifier: MIT */
#ifndef JPTOOL_JPTOOL_H
#define JPTOOL_JPTOOL_H

#include "common.h"
#include "registry.h"
#include "state.h"
#include "vfs.h"
#include "vfs_tool.h"

#endif /* JPTOOL_JPTOOL_H */
