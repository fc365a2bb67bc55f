"""Plays the host of the tool SDKs' conformance cases (README.md here)
against each driver: every case of cases.json, each driver a real tool
process on real pipes.

    run.py CASES --driver NAME=ARGV [--driver …] [--wrap NAME=WRAPPER] [CASE …]

ARGV is the driver's command line (shell words, "{python}" standing for
this interpreter; the case's actions are appended as the last argument); --wrap runs that driver under WRAPPER
(valgrind …), whose failing exit status fails the case. Without CASE
arguments every case runs. Exits 1 when a case fails for any driver, or
when the drivers' reports of a case differ from each other.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shlex
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

# The step of a case waits this long for what it expects (times the
# slowdown a wrapper brings).
TIMEOUT = 10.0

INIT = {"jsonrpc": "2.0", "method": "init",
        "params": {"tool": {"name": "conformance", "arguments": {"path": "a.txt"},
                            "answers": {"q": True}, "options": {"mode": 1}},
                   "protocol_version": "0.1.0"}}
CONTEXT = {"name": "conformance", "arguments": {"path": "a.txt"}, "answers": {"q": True},
           "options": {"mode": 1}, "protocol_version": "0.1.0"}
MACROS = {"$init": INIT, "$context": CONTEXT}


class Failure(Exception):
    pass


def expand(step: Dict[str, Any]) -> Dict[str, Any]:
    """A host step with its macros ("$init" to send, "$context" in a
    report) replaced."""
    out = dict(step)
    if isinstance(out.get("send"), str):
        out["send"] = MACROS[out["send"]]
    if isinstance(out.get("report"), dict):
        out["report"] = {k: MACROS[v] if isinstance(v, str) and v in MACROS else v
                         for k, v in out["report"].items()}
    return out


def prepared(case: Dict[str, Any]) -> Tuple[List[Any], List[Any]]:
    """The case's actions and host steps, with the prelude (connect, init,
    its report) unless "prelude" is false."""
    actions, host = list(case["actions"]), list(case["host"])
    if case.get("prelude", True):
        actions.insert(0, dict({"do": "connect"}, **case.get("connect", {})))
        host[:0] = [{"send": "$init"}, {"report": {"do": "connect", "ok": "$context"}}]
    return actions, [expand(step) for step in host]


class Lines:
    """The lines one of the tool's fds gives, read without blocking."""

    def __init__(self, fd: int, name: str):
        self.fd, self.name = fd, name
        self.buf = b""
        self.eof = False
        os.set_blocking(fd, False)

    def fill(self) -> None:
        try:
            data = os.read(self.fd, 1 << 20)
        except BlockingIOError:
            return
        if not data:
            self.eof = True
        self.buf += data

    def take(self) -> Optional[bytes]:
        nl = self.buf.find(b"\n")
        if nl < 0:
            return None
        line, self.buf = self.buf[:nl], self.buf[nl + 1:]
        return line


class Session:
    """One driver process running one case."""

    def __init__(self, argv: List[str], actions: List[Any], slowdown: float):
        report_r, report_w = os.pipe()
        env = dict(os.environ, JPT_CONFORMANCE_REPORT_FD=str(report_w))
        self.proc = subprocess.Popen(argv + [json.dumps(actions)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     pass_fds=(report_w,), env=env)
        os.close(report_w)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.out = Lines(self.proc.stdout.fileno(), "the tool's stdout")
        self.reports = Lines(report_r, "the reports")
        self.stderr = b""
        self.report_file = report_r
        self.pending = b""
        self.timeout = TIMEOUT * slowdown
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.out.fd, selectors.EVENT_READ, self.out)
        self.sel.register(report_r, selectors.EVENT_READ, self.reports)
        self.sel.register(self.proc.stderr.fileno(), selectors.EVENT_READ, None)
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.seen_reports: List[Any] = []
        self.seen_messages: List[Any] = []

    def flush(self) -> None:
        if not self.pending or self.proc.stdin is None:
            self.pending = b""
            return
        try:
            self.proc.stdin.write(self.pending)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the tool is gone; what it did is checked next
        self.pending = b""

    def poll(self, until: float) -> bool:
        left = until - time.monotonic()
        if left <= 0:
            return False
        for key, _ in self.sel.select(left):
            if key.data is None:
                try:
                    data = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                self.stderr += data
                if not data:
                    self.sel.unregister(key.fd)
            else:
                key.data.fill()
                if key.data.eof:
                    self.sel.unregister(key.fd)
        return True

    def line(self, lines: Lines) -> Optional[bytes]:
        """The next line of `lines`, or None at its end."""
        self.flush()
        until = time.monotonic() + self.timeout
        while True:
            got = lines.take()
            if got is not None:
                return got
            if lines.eof:
                if lines.buf:
                    raise Failure(f"{lines.name} ended within a line: {lines.buf[:200]!r}")
                return None
            if not self.poll(until):
                raise Failure(f"nothing came on {lines.name} within {self.timeout:.0f} s")

    def message(self) -> Any:
        raw = self.line(self.out)
        if raw is None:
            raise Failure("the tool's stdout ended")
        try:
            msg = json.loads(raw)
        except ValueError as e:
            raise Failure(f"the tool wrote a line that is not JSON ({e}): {raw[:200]!r}")
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            raise Failure(f"the tool wrote a message that is not JSON-RPC 2.0: {raw[:200]!r}")
        self.seen_messages.append(msg)
        return msg

    def report(self) -> Any:
        raw = self.line(self.reports)
        if raw is None:
            raise Failure("the reports ended (the driver exited)")
        r = json.loads(raw)
        self.seen_reports.append(r)
        return r

    def close_stdin(self) -> None:
        self.flush()
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            self.proc.stdin = None

    def finish(self, exit_code: int) -> None:
        """Ends the case: nothing more may come, and the driver exits."""
        self.close_stdin()
        extra = self.line(self.out)
        if extra is not None:
            raise Failure(f"the tool sent what the case does not expect: {extra[:300]!r}")
        extra = self.line(self.reports)
        if extra is not None:
            raise Failure(f"a report the case does not expect: {extra[:300]!r}")
        try:
            rc = self.proc.wait(self.timeout)
        except subprocess.TimeoutExpired:
            raise Failure("the driver did not exit")
        until = time.monotonic() + self.timeout
        while self.sel.get_map() and self.poll(until):
            pass
        if rc != exit_code:
            raise Failure(f"the driver exited with {rc}, not {exit_code}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                try:
                    f.close()
                except BrokenPipeError:
                    pass
        os.close(self.report_file)
        self.sel.close()


def matches(expected: Any, got: Any) -> bool:
    """A report matches when each key the case gives has the value given;
    "message_starts" checks the beginning of the message."""
    if not isinstance(got, dict):
        return False
    for key, value in expected.items():
        if key == "message_starts":
            if not str(got.get("message", "")).startswith(value):
                return False
        elif key not in got or got[key] != value:
            return False
    return True


def run_case(case: Dict[str, Any], argv: List[str], slowdown: float) -> Session:
    actions, host = prepared(case)
    s = Session(argv, actions, slowdown)
    try:
        for n, step in enumerate(host):
            where = f"host step {n + 1} {json.dumps(step)[:160]}"
            if "send" in step:
                s.pending += json.dumps(step["send"], separators=(",", ":")).encode() + b"\n"
            elif "send_raw" in step:
                s.pending += step["send_raw"].encode()
            elif "send_hex" in step:
                s.pending += bytes.fromhex(step["send_hex"])
            elif "pause_ms" in step:
                s.flush()
                time.sleep(step["pause_ms"] / 1000 * slowdown)
            elif "expect" in step:
                got = s.message()
                if got != step["expect"]:
                    raise Failure(f"{where}: the tool sent {json.dumps(got)[:400]}")
            elif "report" in step:
                got = s.report()
                if not matches(step["report"], got):
                    raise Failure(f"{where}: the driver reported {json.dumps(got)[:400]}")
            elif "close_stdin" in step:
                s.close_stdin()
            else:
                raise Failure(f"{where}: unknown step")
        s.finish(case.get("exit", 0))
    except Failure as e:
        s.kill()
        tail = s.stderr.decode("utf-8", "replace")[-2000:]
        raise Failure(f"{e}\n  the driver's stderr: {tail!r}" if tail else str(e))
    s.kill()
    return s


def comparable(reports: List[Any], differ: List[str]) -> List[Any]:
    return [{k: v for k, v in r.items() if k not in differ} for r in reports]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("only", nargs="*")
    ap.add_argument("--driver", action="append", required=True)
    ap.add_argument("--wrap", action="append", default=[])
    ap.add_argument("--slowdown", type=float, default=1.0)
    args = ap.parse_intermixed_args()
    drivers = [(d.split("=", 1)[0],
                [sys.executable if w == "{python}" else w for w in shlex.split(d.split("=", 1)[1])])
               for d in args.driver]
    wraps = dict((w.split("=", 1)[0], shlex.split(w.split("=", 1)[1])) for w in args.wrap)
    with open(args.cases) as f:
        cases = json.load(f)["cases"]
    names = [c["name"] for c in cases]
    if len(names) != len(set(names)):
        print("cases.json: two cases have the same name", file=sys.stderr)
        return 2
    failed = 0
    ran = 0
    for case in cases:
        if args.only and case["name"] not in args.only:
            continue
        seen: Dict[str, List[Any]] = {}
        for name, argv in drivers:
            slowdown = args.slowdown * (10 if name in wraps else 1)
            ran += 1
            try:
                s = run_case(case, wraps.get(name, []) + argv, slowdown)
                seen[name] = s.seen_reports
                print(f"ok   {case['name']} [{name}]")
            except Failure as e:
                failed += 1
                print(f"FAIL {case['name']} [{name}]: {e}")
        differ = case.get("differ", [])
        first = next(iter(seen.items()), None)
        for name, reports in seen.items():
            if first is not None and comparable(reports, differ) != comparable(first[1], differ):
                failed += 1
                print(f"FAIL {case['name']}: [{name}] and [{first[0]}] report differently:\n"
                      f"  {first[0]}: {json.dumps(first[1])[:1500]}\n"
                      f"  {name}: {json.dumps(reports)[:1500]}")
    selected = len([c for c in cases if not args.only or c["name"] in args.only])
    print(f"{selected} cases, {len(drivers)} drivers: {ran} runs, {failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
