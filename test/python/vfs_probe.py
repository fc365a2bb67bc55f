"""vfs_probe.py: a VFS tool written with jptool.vfs_tool, for test_vfs.py.

Driven by its init arguments; it reports what it saw as its result text,
the JSON of {"init": the initial context, "steps": one record per step,
"pending": the pending notifications it was told of, "standalone": whether
it runs without the jptool package}. A step's record is {"ok": result} or
{"error": [status, code, message]}.

  {"steps": [[name, args...], ...]}
      each step in turn: "read" path, "read_text" path, "write" path text,
      "write_b64" path base64, "exists" path, "list_dir" path, "metadata"
      path, "delete" path, "rename" src dst, "grep" pattern {keywords},
      "call" method params, "pipeline" path n (n reads submitted at once,
      collected in reverse: the count read), "collect" id (an id never
      submitted), "write_size" path n (a write of n bytes of "x"), "state"
      state (sent as a state notification), "sleep" seconds, "http_get" url
      {headers} and "http_post" url text (the record's result [status,
      headers, body in base64]), "process_run" program [args] [envs]
      (its result [exit_code, stdout, stderr]); and what the
      process itself may do beside the protocol: "open" path mode (an
      absolute path opened directly, read or written with mode "r" or
      "w"), "socket" (a TCP socket made), "environ" (the names of its
      environment variables); these record {"oserror": [exception class,
      errno name]} when the OS refuses
  {"stateful": true}
      reports a running state "ready", then for each input: {"read": path}
      reads it and reports its text as a running state; {"write": [path,
      text]} writes it and reports the step's record; {"ask": id}
      reports a waiting state asking `id` (boolean); "stop" ends with a
      stopped state; anything else is reported back as JSON; a cancel ends
      the tool with exit status 0
  {"ask": id}
      one-shot: with an answer to `id` in init's answers, the result is
      "answered <JSON>"; without, a result whose content asks it (a
      question block)
  {"fail": message, "trace": [...], "transient": bool}
      ends with an error notification
  {"crash": message}
      raises RuntimeError(message) before any result
  {"silent": true}
      sends nothing and waits for its stdin to end, or a cancel

It imports jptool from PYTHONPATH, which loads the library JPTOOL_LIBRARY
names: a VFS tool's environment is PATH alone unless its host passes more,
so test_vfs.py gives it both (on the command line, or in the definition's
env.set). Run with VFS_PROBE_STANDALONE=1 and PYTHONPATH naming the jptool
package's directory itself, it imports vfs_tool.py as a module of its own.
"""

import base64
import errno
import json
import os
import socket
import sys
import time

if os.environ.get("VFS_PROBE_STANDALONE"):
    import vfs_tool
else:
    from jptool import vfs_tool

pending = []


def on_pending(request_id, reason):
    pending.append([request_id, reason])


def record(fn, *args, **kw):
    try:
        return {"ok": fn(*args, **kw)}
    except vfs_tool.VfsToolError as e:
        return {"error": [e.status, e.code, e.message]}


def os_record(fn, *args):
    try:
        return {"ok": fn(*args)}
    except OSError as e:
        return {"oserror": [type(e).__name__, errno.errorcode.get(e.errno, str(e.errno))]}


def open_directly(path, mode):
    with open(path, mode) as f:
        return f.read() if mode == "r" else f.write("written directly")


def make_socket():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM):
        return None


def http_record(response):
    status, headers, body = response
    return [status, headers, base64.b64encode(body).decode()]


def step(host, name, *args):
    if name == "read":
        return record(lambda: base64.b64encode(host.read(args[0])).decode())
    if name == "read_text":
        return record(lambda: host.read(args[0]).decode())
    if name == "write":
        return record(host.write, args[0], args[1])
    if name == "write_b64":
        return record(host.write, args[0], base64.b64decode(args[1]))
    if name == "write_size":
        return record(host.write, args[0], b"x" * args[1])
    if name == "exists":
        return record(host.exists, args[0])
    if name == "list_dir":
        return record(host.list_dir, args[0])
    if name == "metadata":
        return record(host.metadata, args[0])
    if name == "delete":
        return record(host.delete, args[0])
    if name == "rename":
        return record(host.rename, args[0], args[1])
    if name == "grep":
        return record(host.grep, args[0], **(args[1] if len(args) > 1 else {}))
    if name == "call":
        return record(host.call, args[0], args[1] if len(args) > 1 else None)
    if name == "pipeline":
        def pipeline():
            ids = [host.submit_read(args[0]) for _ in range(args[1])]
            return sum(1 for i in reversed(ids) if host.collect_read(i) is not None)
        return record(pipeline)
    if name == "collect":
        return record(host.collect, args[0])
    if name == "state":
        return record(host.state, args[0])
    if name == "sleep":
        time.sleep(args[0])
        return {"ok": None}
    if name == "http_get":
        return record(lambda: http_record(host.http_get(args[0], args[1] if len(args) > 1
                                                        else None)))
    if name == "http_post":
        return record(lambda: http_record(host.http_post(args[0], args[1])))
    if name == "process_run":
        return record(lambda: list(host.process_run(*args)))
    if name == "open":
        return os_record(open_directly, args[0], args[1])
    if name == "socket":
        return os_record(make_socket)
    if name == "environ":
        return {"ok": sorted(os.environ)}
    raise SystemExit(f"vfs_probe: unknown step {name!r}")


def stateful(host):
    host.state({"type": "running", "content": "ready"})
    while True:
        try:
            value = host.next_input()
        except vfs_tool.VfsToolError as e:
            if e.code == vfs_tool.JPT_VFS_E_CANCELLED:
                return
            raise
        if isinstance(value, dict) and "read" in value:
            r = record(lambda: host.read(value["read"]).decode())
            host.state({"type": "running", "content": json.dumps(r)})
        elif isinstance(value, dict) and "write" in value:
            r = record(host.write, *value["write"])
            host.state({"type": "running", "content": json.dumps(r)})
        elif isinstance(value, dict) and "ask" in value:
            host.state({"type": "waiting", "content": "A question.",
                        "question": {"id": value["ask"], "text": "Go on?",
                                     "schema": {"type": "boolean"}}})
        elif value == "stop":
            host.state({"type": "stopped", "result": "stopped on request"})
            return
        else:
            host.state({"type": "running", "content": json.dumps(value)})


def main():
    host = vfs_tool.connect(on_pending=on_pending)
    # connect() moved fd 1 to stderr: a print cannot break the protocol.
    print("vfs_probe: connected")
    args = host.arguments
    if "stateful" in args:
        stateful(host)
        host.close()
        return
    if "ask" in args:
        qid = args["ask"]
        if qid in host.answers:
            host.result_text("answered " + json.dumps(host.answers[qid]))
        else:
            # RFD 058: a result whose content asks a question.
            host.result([{"type": "text", "text": "About to go."},
                         {"type": "question", "question": {
                             "id": qid, "text": "Go?", "schema": {"type": "boolean"}}}])
        host.close()
        return
    if "fail" in args:
        host.error(args["fail"], args.get("trace"), args.get("transient", False))
        host.close()
        return
    if "crash" in args:
        raise RuntimeError(args["crash"])
    if "silent" in args:
        try:
            while True:
                host.next_input()
        except vfs_tool.VfsToolError:
            return
    steps = [step(host, *s) for s in args.get("steps", [])]
    report = {
        "init": {"name": host.name, "arguments": host.arguments, "answers": host.answers,
                 "options": host.options, "protocol_version": host.protocol_version},
        "steps": steps,
        "pending": pending,
        "standalone": "jptool" not in sys.modules,
    }
    host.result_text(json.dumps(report))
    host.close()


if __name__ == "__main__":
    main()
