"""The Python driver of the tool SDKs' conformance cases (README.md here):
a VFS tool that runs the tool-side actions of one case through
jptool.vfs_tool and reports each outcome as tool.c does through
vfs_tool.h.

    python3 tool.py '<the case's actions, a JSON array>'
    python3 tool.py --standalone VFS_TOOL_PY '<actions>'

The first imports jptool.vfs_tool from the package (its errors are
jptool.JptError); the second loads the file VFS_TOOL_PY on its own, as a
tool that ships vfs_tool.py beside it does, without libjptool. stdin and
stdout are the protocol's pipes; the fd JPT_CONFORMANCE_REPORT_FD names
takes the reports (tool.c says how).
A TypeError or ValueError, how this SDK refuses an argument, is reported
as JPT_ERR_INVALID with code 0, as vfs_tool.h refuses one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import IO, Any, Dict, List, Tuple

if len(sys.argv) == 4 and sys.argv[1] == "--standalone":
    spec = importlib.util.spec_from_file_location("vfs_tool", sys.argv[2])
    assert spec is not None and spec.loader is not None
    vfs_tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vfs_tool)
    ACTIONS = sys.argv[3]
elif len(sys.argv) == 2:
    from jptool import vfs_tool
    ACTIONS = sys.argv[1]
else:
    sys.exit("usage: tool.py [--standalone VFS_TOOL_PY] '<actions: a JSON array>'")

reports: IO[str]
tool: Any = None


def report(r: Dict[str, Any]) -> None:
    reports.write(json.dumps(r, ensure_ascii=True, separators=(",", ":")) + "\n")
    reports.flush()


def on_pending(request_id: int, reason: str) -> None:
    report({"pending": [request_id, reason]})


def context() -> Dict[str, Any]:
    return {"name": tool.name, "arguments": tool.arguments, "answers": tool.answers,
            "options": tool.options, "protocol_version": tool.protocol_version}


def data(a: Dict[str, Any]) -> bytes:
    """An action's bytes: its "text" (UTF-8) or "hex"; none: empty."""
    if "text" in a:
        return str(a["text"]).encode("utf-8")
    return bytes.fromhex(a.get("hex", ""))


def response(got: Tuple[int, List[Dict[str, str]], bytes]) -> Dict[str, Any]:
    status, headers, body = got
    return {"hex": body.hex(), "status": status, "headers": headers}


def run(a: Dict[str, Any]) -> Any:
    """Runs one action; its "ok" value."""
    global tool
    what, path = a["do"], a.get("path")
    if what == "connect":
        tool = vfs_tool.connect(max_message=a.get("max_message"),
                                max_request=a.get("max_request"),
                                on_pending=on_pending if a.get("pending") else None)
        return context()
    if what == "context":
        return context()
    if what in ("read", "collect_read"):
        got = tool.read(path) if what == "read" else tool.collect_read(a["id"])
        return {"hex": got.hex()}
    if what == "write":
        return tool.write(path, data(a))
    if what == "exists":
        return tool.exists(path)
    if what == "list_dir":
        return tool.list_dir(path)
    if what == "metadata":
        got = tool.metadata(path)
        return {"kind": got["kind"], "size": str(got["size"])}
    if what == "delete":
        return tool.delete(path)
    if what == "rename":
        return tool.rename(a["from"], a["to"])
    if what == "grep":
        q = dict(a["query"])
        return tool.grep(q.pop("pattern"), **q)
    if what == "http_get":
        return response(tool.http_get(a["url"], [tuple(h) for h in a.get("headers", [])]))
    if what == "http_post":
        return response(tool.http_post(a["url"], data(a),
                                       [tuple(h) for h in a.get("headers", [])]))
    if what == "process_run":
        code, out, err = tool.process_run(a["program"], a.get("args", []), a.get("envs", []))
        return {"exit_code": code, "stdout": out, "stderr": err}
    if what == "call":
        return tool.call(a["method"], a.get("params"))
    if what == "submit":
        return tool.submit(a["method"], a.get("params"))
    if what == "submit_read":
        return tool.submit_read(path)
    if what == "submit_write":
        return tool.submit_write(path, data(a))
    if what == "collect":
        return tool.collect(a["id"])
    if what == "state":
        return tool.state(a["json"])
    if what == "next_input":
        return tool.next_input()
    if what == "cancelled":
        return tool.cancelled
    if what == "result":
        return tool.result(json.loads(a["json"]))
    if what == "result_text":
        return tool.result_text(a["text"])
    if what == "error":
        return tool.error(a["message"], a.get("trace", []), a.get("transient", False))
    if what == "close":
        tool.close()
        return None
    sys.exit(f"tool.py: unknown action {what!r}")


def main() -> int:
    global reports
    actions = json.loads(ACTIONS)
    reports = os.fdopen(int(os.environ["JPT_CONFORMANCE_REPORT_FD"]), "w")
    for i, a in enumerate(actions):
        r: Dict[str, Any] = {"i": i, "do": a["do"]}
        try:
            r["ok"] = run(a)
        except vfs_tool.VfsToolError as e:
            r.update(error=e.name, code=e.code, message=e.message, data=e.data)
        except (TypeError, ValueError) as e:
            r.update(error="JPT_ERR_INVALID", code=0, message=str(e), data=None)
        report(r)
        if a["do"] == "close" or (a["do"] == "connect" and "error" in r):
            break
    if tool is not None:
        tool.close()
    reports.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
