"""jptool.vfs_tool: the tool side of the VFS protocol (D11), in pure Python.

A VFS tool is a program a host starts (jptool's registry with ``"runtime":
"vfs"``, a :class:`jptool.VfsHost`, or any host speaking D11) with its stdin
and stdout as the protocol's pipes. It touches files only by asking the
host, which checks each request against the tool's access policy::

    from jptool import vfs_tool

    host = vfs_tool.connect()                 # reads `init`
    text = host.read(host.arguments["path"]).decode()
    host.write("notes/summary.txt", text.upper())
    host.result([{"type": "text", "text": "Summarised."}])

This module is the C SDK of ``include/jptool/vfs_tool.h`` written in Python,
with its names: :func:`connect` and :func:`connect_fds`, then on the
:class:`VfsTool` the initial context (``name``, ``arguments``, ``answers``,
``options``, ``protocol_version``), the file methods (:meth:`~VfsTool.read`,
:meth:`~VfsTool.write`, :meth:`~VfsTool.exists`, :meth:`~VfsTool.list_dir`,
:meth:`~VfsTool.metadata`, :meth:`~VfsTool.delete`, :meth:`~VfsTool.rename`,
:meth:`~VfsTool.grep`), HTTP through the host (:meth:`~VfsTool.http_get`,
:meth:`~VfsTool.http_post`), processes the host runs
(:meth:`~VfsTool.process_run`), any method (:meth:`~VfsTool.call`),
pipelining (:meth:`~VfsTool.submit`, :meth:`~VfsTool.submit_read`,
:meth:`~VfsTool.submit_write`, :meth:`~VfsTool.collect`,
:meth:`~VfsTool.collect_read`), stateful tools (:meth:`~VfsTool.state`,
:meth:`~VfsTool.next_input`, :attr:`~VfsTool.cancelled`) and the end
(:meth:`~VfsTool.result`, :meth:`~VfsTool.result_text`,
:meth:`~VfsTool.error`). D11 has no method to make a directory:
:meth:`~VfsTool.write` creates the missing parents.

Blocking, without deadlock: every call blocks until its answer has come,
but while it writes a message it also reads what the host writes, so a
large request and a large response never wait on each other's full pipe.
Requests may be pipelined: many ids outstanding, answered in any order.
What the host writes is taken as soon as it is read, whatever the call
waits for (a ``cancel`` read with an input is seen by :attr:`~VfsTool.cancelled`
at once), and a line that breaks the protocol fails the call that read it.

The same as the C SDK: each host message and each call gives what
``vfs_tool.h`` gives, down to the error messages; the conformance cases of
jptool's ``test/vfs-tool-conformance`` run against both. The host's lines
are read as strictly as C reads them (UTF-8, no NaN, no lone surrogate, at
most JPT_JSON_MAX_DEPTH, 256, levels of nesting), base64 as C decodes it
(padding optional, one text per content).

Errors: what the host or the session reports raises :class:`VfsToolError`,
with ``status`` (a JPT_ERR_* code), ``code`` (the host's JSON-RPC code, or 0
when the failure is on this side), ``message`` (the host's own when it
answered with an error) and ``data`` (its error's data, parsed, or None).
The host's codes map as the C SDK maps them: -32001 JPT_ERR_DENIED, -32002
JPT_ERR_NOT_FOUND, -32003 JPT_ERR_EXISTS, -32004 JPT_ERR_TIMEOUT, -32005
JPT_ERR_CANCELLED, -32601 JPT_ERR_UNSUPPORTED, -32600, -32602 and -32700
JPT_ERR_INVALID, any other JPT_ERR_IO. On this side: JPT_ERR_IO (the host
closed a pipe, or a read or write failed), JPT_ERR_PROTOCOL (the host broke
the protocol, or answered with id null: the session is over and every later
call raises it; a result of the wrong shape fails only its call),
JPT_ERR_LIMIT (a request longer than ``max_request``, nothing sent; a line
from the host longer than ``max_message``, the session over),
JPT_ERR_CANCELLED (the host sent ``cancel``: requests waiting for their
response end with it, and so does :meth:`~VfsTool.next_input`),
JPT_ERR_NOT_FOUND with code 0 (collecting an id that is not outstanding).
Arguments that cannot be sent at all (not JSON, a str that is not valid
UTF-8) raise TypeError or ValueError.

stdin and stdout: :func:`connect` keeps the protocol on private copies of
fds 0 and 1, then points fd 0 at /dev/null and fd 1 at stderr, so that a
stray ``print()``, or a child process that inherits them, cannot corrupt
the protocol or steal the host's messages.

Without libjptool: this module uses only the standard library. Imported as
``jptool.vfs_tool`` it comes with the package, which loads libjptool, and
its errors are :class:`jptool.JptError`; a tool that runs where libjptool
is not installed may ship this one file beside it and ``import vfs_tool``
(its errors are then a plain Exception with the same attributes).

In jptool's OS sandbox (vfs.h) the host is a tool's only way out: it
cannot open the workspace's files, connect to anything or read the host's
environment itself, so it asks for files, URLs and processes here.

A VfsTool is used from one thread at a time.
"""

from __future__ import annotations

import base64
import collections
import fcntl
import json
import os
import re
import select
import sys
from typing import (TYPE_CHECKING, Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple,
                    Union)

__all__ = [
    "VfsTool",
    "VfsToolError",
    "connect",
    "connect_fds",
    "JPT_VFS_TOOL_MAX_MESSAGE",
    "JPT_VFS_TOOL_EXIT_UNKNOWN",
    "JPT_VFS_CONTENT_LIMIT",
    "JPT_VFS_ENVELOPE_LIMIT",
    "JPT_VFS_E_PARSE",
    "JPT_VFS_E_INVALID_REQUEST",
    "JPT_VFS_E_METHOD_NOT_FOUND",
    "JPT_VFS_E_INVALID_PARAMS",
    "JPT_VFS_E_INTERNAL",
    "JPT_VFS_E_ACCESS_DENIED",
    "JPT_VFS_E_NOT_FOUND",
    "JPT_VFS_E_EXISTS",
    "JPT_VFS_E_TIMEOUT",
    "JPT_VFS_E_CANCELLED",
]

# ---- Constants (vfs.h, vfs_tool.h, common.h) ---------------------------------

JPT_VFS_TOOL_MAX_MESSAGE = 67108864
# process_run's exit code when the host could not learn how the process ended.
JPT_VFS_TOOL_EXIT_UNKNOWN = -256
JPT_VFS_CONTENT_LIMIT = 10485760
JPT_VFS_ENVELOPE_LIMIT = 65536

JPT_VFS_E_PARSE = -32700
JPT_VFS_E_INVALID_REQUEST = -32600
JPT_VFS_E_METHOD_NOT_FOUND = -32601
JPT_VFS_E_INVALID_PARAMS = -32602
JPT_VFS_E_INTERNAL = -32603
JPT_VFS_E_ACCESS_DENIED = -32001
JPT_VFS_E_NOT_FOUND = -32002
JPT_VFS_E_EXISTS = -32003
JPT_VFS_E_TIMEOUT = -32004
JPT_VFS_E_CANCELLED = -32005

# The status codes this module raises, as common.h numbers them.
_STATUS_NAMES = {
    -1: "JPT_ERR_INVALID",
    -3: "JPT_ERR_NOT_FOUND",
    -4: "JPT_ERR_EXISTS",
    -6: "JPT_ERR_UNSUPPORTED",
    -7: "JPT_ERR_DENIED",
    -8: "JPT_ERR_TIMEOUT",
    -9: "JPT_ERR_CANCELLED",
    -10: "JPT_ERR_IO",
    -11: "JPT_ERR_PROTOCOL",
    -14: "JPT_ERR_LIMIT",
}
_INVALID, _NOT_FOUND, _EXISTS, _UNSUPPORTED, _DENIED = -1, -3, -4, -6, -7
_TIMEOUT, _CANCELLED, _IO, _PROTOCOL, _LIMIT = -8, -9, -10, -11, -14

_STATUS_OF_CODE = {
    JPT_VFS_E_ACCESS_DENIED: _DENIED,
    JPT_VFS_E_NOT_FOUND: _NOT_FOUND,
    JPT_VFS_E_EXISTS: _EXISTS,
    JPT_VFS_E_TIMEOUT: _TIMEOUT,
    JPT_VFS_E_CANCELLED: _CANCELLED,
    JPT_VFS_E_METHOD_NOT_FOUND: _UNSUPPORTED,
    JPT_VFS_E_INVALID_REQUEST: _INVALID,
    JPT_VFS_E_INVALID_PARAMS: _INVALID,
    JPT_VFS_E_PARSE: _INVALID,
}

# The smallest C int (JSON-RPC error codes above it fit).
_INT_MIN = -(2 ** 31)

# One read() takes up to this much of the host's output.
_READ_CHUNK = 256 << 10
# submit() stops to write when this much output is queued (as the C SDK).
_SUBMIT_HIGH_WATER = 1 << 20

# ---- Errors ---------------------------------------------------------------------

class _StandaloneError(Exception):
    """jptool.JptError's attributes, for use without libjptool."""

    def __init__(self, status: int, message: Optional[str] = None) -> None:
        self.status = status
        self.name = _STATUS_NAMES.get(status)
        self.message = message or (self.name or "unknown status")
        super().__init__(self.message)

    def __str__(self) -> str:
        return f"{self.message} ({self.name or self.status})"


# The base of VfsToolError: jptool.JptError in the package, else the class
# above, which has its attributes (mypy checks the package's case).
if TYPE_CHECKING:
    from . import JptError as _ErrorBase
else:
    try:
        from . import JptError as _ErrorBase
    except ImportError:  # this file used on its own, without the jptool package
        _ErrorBase = _StandaloneError


class VfsToolError(_ErrorBase):
    """A failed call of the tool side: ``status`` (JPT_ERR_*), ``name`` (its
    symbolic name), ``code`` (the host's JSON-RPC error code, JPT_VFS_E_*,
    or 0 when the failure is on this side; ``jpt_vfs_tool_error_code``),
    ``message`` (the host's own message when it answered with an error;
    ``jpt_vfs_tool_errmsg``) and ``data`` (that error's
    ``data``, parsed, or None when it had none: jptool's host sends it with
    process.run's timeout, what the process wrote before it was killed;
    ``jpt_vfs_tool_error_data``). A :class:`jptool.JptError` when this
    module is imported as part of the jptool package."""

    def __init__(self, status: int, message: str, code: int = 0, data: Any = None):
        super().__init__(status, message)
        self.code = code
        self.data = data

    def __repr__(self) -> str:
        return f"VfsToolError({self.status!r}, {self.message!r}, code={self.code!r})"


# ---- Decoding ---------------------------------------------------------------------

# What the C SDK's JSON reader refuses beyond Python's json (lib/vfs/codec.c):
# nesting deeper than this, NaN and Infinity, a lone surrogate (escaped or
# encoded), invalid UTF-8, a byte order mark.
_MAX_DEPTH = 256  # JPT_JSON_MAX_DEPTH (this module also runs without jptool)
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _nesting_too_deep(text: str) -> bool:
    if text.count("[") + text.count("{") <= _MAX_DEPTH:
        return False
    depth = 0
    for m in _STRING_OR_BRACKET.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > _MAX_DEPTH:
                return True
        elif token in "]}":
            depth -= 1
    return False


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def _parse(line: bytes) -> Any:
    """A line from the host as JSON, read as strictly as the C SDK reads it;
    ValueError saying why not."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"invalid UTF-8 at byte {e.start}") from None
    if _nesting_too_deep(text):
        raise ValueError(f"nested deeper than {_MAX_DEPTH} levels")
    value = json.loads(text, parse_constant=_refuse_constant)
    if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise ValueError("a lone surrogate in a string")
    return value


def _base64_bytes(text: str) -> Optional[bytes]:
    """Base64 as the C SDK reads it (lib/common/base64.c): the padding may
    be left out; None for any other character, or when the last character
    carries bits beyond the bytes (one text, one content)."""
    body = text
    if len(body) % 4 == 0 and body.endswith("="):
        body = body[:-2] if body.endswith("==") else body[:-1]
    if len(body) % 4 == 1 or not _BASE64_ALPHABET.issuperset(body):
        return None
    data = base64.b64decode(body + "=" * (-len(body) % 4))
    if base64.b64encode(data).decode("ascii").rstrip("=") != body:
        return None
    return data


_BASE64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


# ---- Encoding -----------------------------------------------------------------------


def _encode(message: Dict[str, Any], what: str) -> bytes:
    """One NDJSON line. JSON escapes every newline inside strings, so the
    line has none but its last."""
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what} cannot be sent as JSON: {e}") from None
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        raise ValueError(f"{what} cannot be sent: a string in it is not valid UTF-8 (it "
                         "holds a lone surrogate)") from None


def _path_arg(path: Any, what: str = "path") -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, bytes):
        try:
            return path.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{what} {path!r} is not valid UTF-8") from None
    if not isinstance(path, str):
        raise TypeError(f"{what} must be str, bytes or a path, not {type(path).__name__}")
    return path


def _text_or_base64(data: Union[str, bytes, bytearray, memoryview], what: str
                    ) -> Tuple[str, bool]:
    """Content as D11 sends it, as the C SDK does: text as it is when it is
    UTF-8 without a NUL byte, else base64 (the bool)."""
    if isinstance(data, str):
        return data, False
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be bytes or str, not {type(data).__name__}")
    data = bytes(data)
    if b"\0" not in data:
        try:
            return data.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(data).decode("ascii"), True


def _content_params(path: Any, data: Union[str, bytes, bytearray, memoryview]
                    ) -> Dict[str, Any]:
    """fs.write's params."""
    params: Dict[str, Any] = {"path": _path_arg(path)}
    params["content"], encoded = _text_or_base64(data, "data")
    if encoded:
        params["encoding"] = "base64"
    return params


# A path: text, or what os.fspath() takes.
_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

# http_get's and http_post's headers: a dict, or (name, value) pairs.
_Headers = Optional[Union[Dict[str, str],
                          Sequence[Union[Tuple[str, str], Sequence[str], Dict[str, str]]]]]

# A `cancel` among the inputs.
_CANCEL = object()
# A request whose response has not come yet.
_WAITING = None


class VfsTool:
    """A VFS tool's session with its host (``jpt_vfs_tool``): made by
    :func:`connect` or :func:`connect_fds`, which read ``init``.

    The initial context (D11 "Initial context"), as the host sent it:
    ``name`` (the tool's name; ``jpt_vfs_tool_name``), ``arguments``,
    ``answers`` and ``options`` (parsed; {} when the host sent none;
    ``jpt_vfs_tool_arguments``, ``jpt_vfs_tool_answers``,
    ``jpt_vfs_tool_options``), ``protocol_version`` ("" when none;
    ``jpt_vfs_tool_protocol_version``).

    :meth:`close` (or the end of a ``with`` block) restores the fds' flags
    and, after :func:`connect`, closes the private copies of stdin and
    stdout; output not yet written (of submitted requests no one collected)
    is dropped.
    """

    def __init__(self, in_fd: int, out_fd: int, owned: bool, max_message: int,
                 max_request: int, on_pending: Optional[Callable[[int, str], None]]):
        """Made by connect() and connect_fds()."""
        self._in_fd = in_fd
        self._out_fd = out_fd
        self._owned = owned
        self._max_message = max_message
        self._max_request = max_request
        self._on_pending = on_pending
        self._flags: List[Tuple[int, int]] = []  # (fd, flags as found)
        self._open = True
        self._inbuf = bytearray()
        self._scanned = 0        # bytes of _inbuf searched for a newline
        self._line_number = 0
        # Lines read and not yet handled (number, line; None for a line past
        # max_message): those an on_pending callback that raised left.
        self._lines: Deque[Tuple[int, Optional[bytes]]] = collections.deque()
        self._eof = False
        self._out = bytearray()
        self._out_pos = 0
        self._failure: Optional[Tuple[int, str]] = None  # the session is over
        self._replies: Dict[int, Optional[Tuple[Any, ...]]] = {}
        self._next_id = 1
        self._inputs: Deque[Any] = collections.deque()
        self._cancelled = False
        self._ready = False
        self.name = ""
        self.arguments: Any = {}
        self.answers: Any = {}
        self.options: Any = {}
        self.protocol_version = ""

    # -- lifetime --

    def _start(self) -> None:
        for fd in (self._in_fd, self._out_fd):
            if any(saved == fd for saved, _ in self._flags):
                continue
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            if not flags & os.O_NONBLOCK:
                fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
                self._flags.append((fd, flags))
        self._pump(lambda: self._ready, "sending init")

    def close(self) -> None:
        """Ends the session on this side (``jpt_vfs_tool_free``): restores
        the fds' flags and, after :func:`connect`, closes the protocol's
        private fds. Closing twice is harmless; other calls afterwards raise
        ValueError."""
        if not self._open:
            return
        self._open = False
        for fd, flags in self._flags:
            try:
                fcntl.fcntl(fd, fcntl.F_SETFL, flags)
            except OSError:
                pass
        self._flags = []
        if self._owned:
            for fd in {self._in_fd, self._out_fd}:
                os.close(fd)

    def __enter__(self) -> "VfsTool":
        self._check_open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<jptool.vfs_tool.VfsTool {self.name!r}{'' if self._open else ' closed'}>"

    def _check_open(self) -> None:
        if not self._open:
            raise ValueError("operation on a closed VfsTool")

    @property
    def cancelled(self) -> bool:
        """True once the host has sent ``cancel`` (D11 "Cancellation";
        ``jpt_vfs_tool_cancelled``): the tool should clean up and exit
        promptly. Requests sent afterwards are still served if the host
        allows."""
        return self._cancelled

    # -- moving bytes --

    def _fail(self, status: int, message: str) -> None:
        """Ends the session: every later call raises this."""
        if self._failure is None:
            self._failure = (status, message)

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise VfsToolError(*self._failure)

    def _write_some(self) -> None:
        """Writes queued output until it is all written or the pipe is full."""
        while self._out_pos < len(self._out):
            try:
                with memoryview(self._out) as view:
                    n = os.write(self._out_fd, view[self._out_pos:])
            except BlockingIOError:
                break
            except BrokenPipeError:
                self._fail(_IO, "writing to the host: the host closed the tool's stdout")
                self._raise_failure()
            except OSError as e:
                self._fail(_IO, f"writing to the host: {e.strerror}")
                self._raise_failure()
            self._out_pos += n
        if self._out_pos == len(self._out):
            self._out.clear()
            self._out_pos = 0
        elif self._out_pos > len(self._out) // 2:
            del self._out[:self._out_pos]
            self._out_pos = 0

    def _queued(self) -> int:
        return len(self._out) - self._out_pos

    def _read_some(self) -> None:
        """One read() of what the host wrote, split into lines, each handled
        at once, in order: the C SDK's client takes what it reads so
        (lib/vfs/client.c), so a message is seen as soon as it was read,
        whatever the tool waits for."""
        try:
            data = os.read(self._in_fd, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as e:
            self._fail(_IO, f"reading from the host: {e.strerror}")
            return
        if not data:
            self._eof = True  # an unterminated last line is dropped, as in C
            return
        buf = self._inbuf
        buf += data
        start = 0
        while True:
            end = buf.find(b"\n", max(start, self._scanned))
            if end < 0:
                break
            self._line_number += 1
            start, line = end + 1, bytes(buf[start:end])
            self._scanned = start
            # The limit counts the line's bytes before its newline (a CR too).
            self._lines.append((self._line_number, line if len(line) <= self._max_message
                                else None))
            if len(line) > self._max_message:
                break
        if start:
            del buf[:start]
        self._scanned = len(buf)
        if len(buf) > self._max_message and (not self._lines or self._lines[-1][1] is not None):
            self._lines.append((self._line_number + 1, None))
        self._take_lines()

    def _take_lines(self) -> None:
        """Handles the lines read, in order, until one fails the session."""
        while self._lines and self._failure is None:
            number, line = self._lines.popleft()
            if line is None:
                self._fail(_LIMIT, f"line {number} from the host is longer than the limit "
                                   f"of {self._max_message} bytes")
            elif line.strip(b" \t\r"):
                self._take_message(number, line)

    def _pump(self, ready: Callable[[], bool], what: str) -> None:
        """Moves bytes both ways until ``ready()``; ``what`` names what is
        awaited for the message when the host closes the tool's stdin
        first. As the C SDK's pump (lib/vfs/tool.c): what was awaited may
        have come already; a failure found reading fails the call."""
        self._take_lines()  # left by an on_pending callback that raised
        while True:
            self._write_some()
            if ready():
                return
            self._raise_failure()
            want_read = not self._eof
            want_write = self._queued() > 0
            if not want_read and not want_write:
                raise VfsToolError(_IO, f"the host closed the tool's stdin before {what}")
            masks: Dict[int, int] = {}
            if want_read:
                masks[self._in_fd] = select.POLLIN
            if want_write:
                masks[self._out_fd] = masks.get(self._out_fd, 0) | select.POLLOUT
            poller = select.poll()
            for fd, mask in masks.items():
                poller.register(fd, mask)
            readable = select.POLLIN | select.POLLHUP | select.POLLERR
            if want_read and any(fd == self._in_fd and mask & readable
                                 for fd, mask in poller.poll()):
                self._read_some()
                self._raise_failure()

    # -- what the host sends --

    def _take_message(self, number: int, line: bytes) -> None:
        try:
            msg = _parse(line)
        except ValueError as e:
            self._fail(_PROTOCOL, f"line {number} from the host is not JSON: {e}")
            return
        if not isinstance(msg, dict):
            self._fail(_PROTOCOL, f"line {number} from the host is not a JSON object")
            return
        method = msg.get("method")
        if isinstance(method, str):
            self._take_notification(method, msg.get("params"))
        elif not self._ready:
            self._fail(_PROTOCOL, "the host's first message is not init")
        else:
            self._take_response(number, msg)

    def _take_notification(self, method: str, params: Any) -> None:
        if method == "init":
            if not self._ready:  # a second init is ignored, as in C
                self._take_init(params)
            return
        if not self._ready:
            self._fail(_PROTOCOL, "the host's first message is not init")
            return
        if method == "apply":
            self._inputs.append(params.get("input") if isinstance(params, dict) else None)
        elif method == "cancel":
            # D11 "Cancellation": every request still waiting for its
            # response ends now, so a tool blocked on the policy prompt can.
            self._cancelled = True
            for rid, reply in self._replies.items():
                if reply is _WAITING:
                    self._replies[rid] = ("error", JPT_VFS_E_CANCELLED, "cancelled by the host",
                                          None)
            self._inputs.append(_CANCEL)
        elif method == "pending" and isinstance(params, dict):
            told = params.get("request_id")
            reason = params.get("reason")
            if self._on_pending is not None:
                self._on_pending(told if isinstance(told, int) and not isinstance(told, bool)
                                 and told in self._replies else 0,
                                 reason if isinstance(reason, str) else "")
        # Unknown notifications are ignored (D11 "Protocol versioning").

    def _take_init(self, params: Any) -> None:
        tool = params.get("tool") if isinstance(params, dict) else None
        if not isinstance(tool, dict):
            self._fail(_PROTOCOL, "the host's init message has no params.tool object")
            return
        name = tool.get("name")
        if not isinstance(name, str):
            self._fail(_PROTOCOL, "the host's init message has no params.tool.name")
            return
        self.name = name
        for key in ("arguments", "answers", "options"):
            setattr(self, key, tool.get(key, {}))
        version = params.get("protocol_version")
        self.protocol_version = version if isinstance(version, str) else ""
        self._ready = True

    def _take_response(self, number: int, msg: Dict[str, Any]) -> None:
        has_result, has_error = "result" in msg, "error" in msg
        if "id" not in msg or has_result == has_error:
            self._fail(_PROTOCOL, f"line {number} from the host is neither a notification "
                                  "nor a response")
            return
        rid = msg["id"]
        if rid is None:
            # JSON-RPC answers with id null what it could not read: no
            # response will come for that request, and waiting would be
            # forever.
            error = msg.get("error")
            text = error.get("message") if isinstance(error, dict) else None
            self._fail(_PROTOCOL, f"the host could not read a request: "
                                  f"{text if isinstance(text, str) else 'no message'}")
            return
        if isinstance(rid, bool) or not isinstance(rid, int) or \
                self._replies.get(rid, False) is not _WAITING:
            return  # a request forgotten, or already ended by a cancel
        if has_result:
            self._replies[rid] = ("result", msg["result"])
            return
        error = msg["error"]
        if not isinstance(error, dict):
            self._fail(_PROTOCOL, "the host answered with an error that is not an object")
            return
        code = error.get("code")
        # JSON-RPC's codes are negative integers; the C SDK's are C ints.
        if isinstance(code, bool) or not isinstance(code, int) or not _INT_MIN < code < 0:
            self._fail(_PROTOCOL, "the host answered with an error without a negative "
                                  "integer code")
            return
        text = error.get("message")
        if not isinstance(text, str) or not text:
            text = f"the host answered with error {code} and no message"
        self._replies[rid] = ("error", code, text, error.get("data"))

    # -- requests --

    def _usable(self) -> None:
        self._check_open()
        self._raise_failure()

    def _send(self, message: Dict[str, Any], what: str, limited: str) -> None:
        """Queues `message` (`what` names it), or refuses it, nothing sent,
        when its line without the newline is longer than max_request, as
        the C SDK does (`limited` names it there)."""
        line = _encode(message, what)
        if len(line) - 1 > self._max_request:
            raise VfsToolError(_LIMIT, f"{limited} is {len(line) - 1} bytes, more than the "
                                       f"{self._max_request} a message to the host may have")
        self._out += line

    def submit(self, method: str, params: Any = None) -> int:
        """Sends a request without waiting for its response and returns its
        id (``jpt_vfs_tool_submit``): ``params`` is any JSON value (None:
        none). The bytes are written as far as the pipe takes them without
        blocking (past 1 MiB queued, until it is below that); the rest goes
        with the next blocking call. Collect every id submitted, in any
        order."""
        self._usable()
        if not isinstance(method, str):
            raise TypeError(f"method must be str, not {type(method).__name__}")
        rid = self._next_id
        message: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message, f"the {method} request", "the request")
        self._next_id += 1
        self._replies[rid] = _WAITING
        self._write_some()
        if self._queued() > _SUBMIT_HIGH_WATER:
            self._pump(lambda: self._queued() <= _SUBMIT_HIGH_WATER, "taking the requests")
        return rid

    def submit_read(self, path: _Path) -> int:
        """Sends fs.read without waiting (``jpt_vfs_tool_submit_read``);
        collect it with :meth:`collect_read`."""
        return self.submit("fs.read", {"path": _path_arg(path)})

    def submit_write(self, path: _Path,
                     data: Union[str, bytes, bytearray, memoryview]) -> int:
        """Sends fs.write without waiting (``jpt_vfs_tool_submit_write``);
        :meth:`write` says how ``data`` is sent."""
        return self.submit("fs.write", _content_params(path, data))

    def collect(self, id: int) -> Any:
        """Waits for the response to request ``id`` and forgets the id
        (``jpt_vfs_tool_collect``): the result, parsed. Raises
        VfsToolError with the host's code and message when it answered
        with an error, JPT_ERR_NOT_FOUND (code 0) when ``id`` is not
        outstanding."""
        self._usable()
        if id not in self._replies:
            raise VfsToolError(_NOT_FOUND, f"request {id} is not outstanding")
        self._pump(lambda: self._replies[id] is not _WAITING, f"answering request {id}")
        reply = self._replies.pop(id)
        assert reply is not _WAITING  # what the pump waited for
        if reply[0] == "error":
            code, message, data = reply[1], reply[2], reply[3]
            raise VfsToolError(_STATUS_OF_CODE.get(code, _IO), message, code, data)
        return reply[1]

    def collect_read(self, id: int) -> bytes:
        """:meth:`collect` for an fs.read: the file's bytes, base64 already
        decoded (``jpt_vfs_tool_collect_read``)."""
        result = self.collect(id)
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise VfsToolError(_PROTOCOL, "the host's fs.read result has no string 'content'")
        encoding = result.get("encoding")
        if encoding is None:
            return content.encode("utf-8")  # (_parse refused lone surrogates)
        if encoding != "base64":
            raise VfsToolError(_PROTOCOL, "the host's fs.read result has no known 'encoding'")
        data = _base64_bytes(content)
        if data is None:
            raise VfsToolError(_PROTOCOL, "the host's fs.read result has no valid base64 "
                                          "'content'")
        return data

    def call(self, method: str, params: Any = None) -> Any:
        """Sends ``method`` with ``params`` (any JSON value; None: none) and
        waits: the result, parsed (``jpt_vfs_tool_call``). For methods this
        module has no function for, and the result as the host sent it."""
        return self.collect(self.submit(method, params))

    # -- files (D11 "Filesystem methods") --

    def read(self, path: _Path) -> bytes:
        """fs.read: the file's bytes, base64 already decoded
        (``jpt_vfs_tool_read``); ``.decode()`` them for text."""
        return self.collect_read(self.submit_read(path))

    def write(self, path: _Path,
              data: Union[str, bytes, bytearray, memoryview]) -> None:
        """fs.write: creates or replaces the file, and its missing parent
        directories (``jpt_vfs_tool_write``). A str is sent as text; bytes
        as text when they are UTF-8 without NUL bytes, else base64."""
        self.collect(self.submit_write(path, data))

    def exists(self, path: _Path) -> bool:
        """fs.exists (``jpt_vfs_tool_exists``)."""
        result = self.call("fs.exists", {"path": _path_arg(path)})
        exists = result.get("exists") if isinstance(result, dict) else None
        if not isinstance(exists, bool):
            raise VfsToolError(_PROTOCOL, "the host's fs.exists result has no boolean 'exists'")
        return exists

    def list_dir(self, path: _Path) -> List[Dict[str, Any]]:
        """fs.list_dir: the directory's entries as D11's list,
        ``[{"path": "main.rs", "kind": "file"}, …]``
        (``jpt_vfs_tool_list_dir``)."""
        result = self.call("fs.list_dir", {"path": _path_arg(path)})
        entries = result.get("entries") if isinstance(result, dict) else None
        if not isinstance(entries, list):
            raise VfsToolError(_PROTOCOL, "the host's fs.list_dir result has no array "
                                          "'entries'")
        return entries

    def metadata(self, path: _Path) -> Dict[str, Any]:
        """fs.metadata (``jpt_vfs_tool_metadata``): ``{"kind": "file" |
        "dir" | "symlink" | "other", "size": bytes}``; a kind this module
        does not know is "other", and the size 0 when the host sent
        none."""
        result = self.call("fs.metadata", {"path": _path_arg(path)})
        kind = result.get("kind") if isinstance(result, dict) else None
        if not isinstance(kind, str):
            raise VfsToolError(_PROTOCOL, "the host's fs.metadata result has no string 'kind'")
        size = result.get("size", 0)
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size < 2 ** 64:
            raise VfsToolError(_PROTOCOL, "the host's fs.metadata result has no non-negative "
                                          "integer 'size'")
        return {"kind": kind if kind in ("file", "dir", "symlink") else "other", "size": size}

    def delete(self, path: _Path) -> None:
        """fs.delete: removes the file (``jpt_vfs_tool_delete``)."""
        self.call("fs.delete", {"path": _path_arg(path)})

    def rename(self, src: _Path,
               dst: _Path) -> None:
        """fs.rename: moves ``src`` to ``dst`` (D11's "from" and "to";
        ``jpt_vfs_tool_rename``)."""
        self.call("fs.rename", {"from": _path_arg(src, "src"), "to": _path_arg(dst, "dst")})

    def grep(self, pattern: str, *, paths: Optional[List[str]] = None,
             extensions: Optional[List[str]] = None, context: int = 0,
             case_insensitive: bool = False, fixed_strings: bool = False,
             max_matches: int = 0) -> Dict[str, Any]:
        """fs.grep (``jpt_vfs_tool_grep``, the fields of
        ``jpt_vfs_grep_query``): ``pattern`` a regular expression, or a
        literal with ``fixed_strings``; ``paths`` and ``extensions`` (none:
        all); ``context`` lines before and after each match;
        ``max_matches`` 0 for the host's default cap. The result as the
        host sent it: ``{"matches": [{"path", "lines": [{"line_number",
        "content", "is_match"}]}], "truncated": bool}``."""
        params: Dict[str, Any] = {"pattern": pattern}
        if paths:
            params["paths"] = [_path_arg(p) for p in paths]
        if extensions:
            params["extensions"] = list(extensions)
        if context:
            params["context"] = context
        if case_insensitive:
            params["case_insensitive"] = True
        if fixed_strings:
            params["fixed_strings"] = True
        if max_matches:
            params["max_matches"] = max_matches
        found: Dict[str, Any] = self.call("fs.grep", params)
        return found

    # -- HTTP (D11 "HTTP methods") --

    def http_get(self, url: str, headers: _Headers = None) -> Tuple[int, List[Dict[str, str]],
                                                                   bytes]:
        """http.get of ``url`` through the host (``jpt_vfs_tool_http_get``),
        when the tool's network policy allows it: ``(status, headers,
        body)``, the HTTP status (an error status such as 404 is a
        response, not an error), the response's headers as D11 sends them
        (``[{"name": "Content-Type", "value": "…"}, …]``) and the body's
        bytes (base64 already decoded). ``headers``: a dict, or a list of
        (name, value) pairs (tuples, or lists as JSON gives them) or of
        D11's ``{"name", "value"}`` objects; a value may hold ``${NAME}``,
        which the host replaces with its own variable NAME when the policy
        lists it (the tool never sees the value: "[REDACTED]" stands
        wherever the response would show it). The host's refusals raise VfsToolError:
        JPT_ERR_DENIED (-32001: the policy, a variable not listed, a
        redirect not allowed), JPT_ERR_TIMEOUT (-32004), JPT_ERR_NOT_FOUND
        (-32002: a variable not set), JPT_ERR_INVALID (-32602: a URL or
        header the host refuses), JPT_ERR_IO (-32603: the transfer failed,
        or the response passed the host's size limit); JPT_ERR_PROTOCOL for
        a result not of D11's shape."""
        return self._http("http.get", url, headers, None)

    def http_post(self, url: str, body: Union[str, bytes, bytearray, memoryview] = b"",
                  headers: _Headers = None) -> Tuple[int, List[Dict[str, str]], bytes]:
        """http.post of ``body`` to ``url`` (``jpt_vfs_tool_http_post``):
        a str is sent as text, bytes as text when they are UTF-8 without
        NUL bytes, else base64-encoded; otherwise as :meth:`http_get`. No
        Content-Type is sent unless ``headers`` has one."""
        return self._http("http.post", url, headers, body)

    def _http(self, method: str, url: str, headers: _Headers,
              body: Optional[Union[str, bytes, bytearray, memoryview]]
              ) -> Tuple[int, List[Dict[str, str]], bytes]:
        if not isinstance(url, str):
            raise TypeError(f"url must be str, not {type(url).__name__}")
        pairs: List[Any] = (list(headers.items()) if isinstance(headers, dict)
                            else list(headers or ()))
        sent = []
        for i, pair in enumerate(pairs):
            # As JSON gives them too: [name, value], or D11's own
            # {"name", "value"} (what a response's headers are).
            if isinstance(pair, dict) and sorted(pair) == ["name", "value"]:
                pair = (pair["name"], pair["value"])
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and
                    all(isinstance(x, str) for x in pair)):
                raise TypeError(f"{method}: header {i} is not a (name, value) pair of str "
                                'nor a {"name", "value"} object')
            sent.append({"name": pair[0], "value": pair[1]})
        params: Dict[str, Any] = {"url": url, "headers": sent}
        if body is not None:
            params["body"], encoded = _text_or_base64(body, "body")
            if encoded:
                params["encoding"] = "base64"
        answer = self.call(method, params)
        result: Dict[str, Any] = answer if isinstance(answer, dict) else {}
        status, got, content = result.get("status"), result.get("headers"), result.get("body")
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 999:
            raise VfsToolError(_PROTOCOL, f"the host's {method} result has no status from 100 "
                                          "to 999")
        if not isinstance(got, list):
            raise VfsToolError(_PROTOCOL, f"the host's {method} result has no array 'headers'")
        if not isinstance(content, str):
            raise VfsToolError(_PROTOCOL, f"the host's {method} result has no string 'body'")
        encoding = result.get("encoding")
        if encoding is None:
            return status, got, content.encode("utf-8")
        if encoding != "base64":
            raise VfsToolError(_PROTOCOL, f"the host's {method} result has no known "
                                          "'encoding'")
        data = _base64_bytes(content)
        if data is None:
            raise VfsToolError(_PROTOCOL, f"the host's {method} result has no valid base64 "
                                          "'body'")
        return status, got, data

    # -- processes (D11 "Process methods") --

    def process_run(self, program: str, args: Sequence[str] = (),
                    envs: Sequence[str] = ()) -> Tuple[int, str, str]:
        """process.run (``jpt_vfs_tool_process_run``): asks the host to run
        ``program`` (a name it looks up in its PATH, or an absolute path)
        with ``args``, forwarding the host's variables named in ``envs``
        (each must be listed in the tool's sandbox.commands.<program>.envs),
        and waits until it has ended: ``(exit_code, stdout, stderr)``. The
        exit code is the exit status (0 to 255), -N when signal N killed
        the process, or JPT_VFS_TOOL_EXIT_UNKNOWN. The process runs in the
        project root with only PATH and those variables; its output comes
        back with every forwarded value of 8 bytes or more (and its JSON-,
        URL- and base64-encoded forms) replaced by "[REDACTED]", invalid
        UTF-8 replaced by U+FFFD, and each stream kept to the host's limit.
        The host's refusals raise VfsToolError: JPT_ERR_DENIED (the policy,
        a variable that may not be forwarded), JPT_ERR_NOT_FOUND (no such
        program), JPT_ERR_TIMEOUT (it ran past its time and was killed: the
        error's ``data`` holds what it wrote), JPT_ERR_UNSUPPORTED (this
        host runs no processes), JPT_ERR_INVALID (a relative program path);
        JPT_ERR_PROTOCOL for a result not of D11's shape."""
        for what, value in (("args", args), ("envs", envs)):
            if isinstance(value, (str, bytes)) or \
                    not all(isinstance(x, str) for x in value):
                raise TypeError(f"process.run: {what} must be a sequence of str")
        if not isinstance(program, str):
            raise TypeError(f"program must be str, not {type(program).__name__}")
        # Empty lists are left out, as the C SDK leaves them out.
        params: Dict[str, Any] = {"program": program}
        if args:
            params["args"] = list(args)
        if envs:
            params["envs"] = list(envs)
        got = self.call("process.run", params)
        result: Dict[str, Any] = got if isinstance(got, dict) else {}
        code, sig = result.get("exit_code"), result.get("signal")
        if isinstance(code, int) and not isinstance(code, bool) and 0 <= code <= 255:
            exit_code = code
        elif code is None and "exit_code" in result and "signal" not in result:
            exit_code = JPT_VFS_TOOL_EXIT_UNKNOWN
        elif code is None and "exit_code" in result and isinstance(sig, int) and \
                not isinstance(sig, bool) and 0 < sig <= 255:
            exit_code = -sig
        else:
            raise VfsToolError(_PROTOCOL, "the host's process.run result has no exit_code "
                                          "from 0 to 255, nor null with a signal")
        texts = []
        for name in ("stdout", "stderr"):
            text = result.get(name)
            if not isinstance(text, str):
                raise VfsToolError(_PROTOCOL, f"the host's process.run result has no string "
                                              f"'{name}'")
            texts.append(text)
        return exit_code, texts[0], texts[1]

    # -- stateful tools (D11 "Integration with the stateful tool protocol") --

    def _notify(self, method: str, params: Dict[str, Any]) -> None:
        """Sends a notification and waits until it is written."""
        self._usable()
        self._send({"jsonrpc": "2.0", "method": method, "params": params},
                   f"the {method} notification", f"the {method} notification")
        self._pump(lambda: self._queued() == 0, "everything was written")

    def state(self, state: Union[Dict[str, Any], str, bytes]) -> None:
        """Sends a ``state`` notification (``jpt_vfs_tool_state``): RFD 009
        ToolState, a dict (or its JSON text) whose "type" is "running",
        "waiting" or "stopped" (``{"type": "waiting", "content":
        "Confirm?", "question": {…}}``). Blocks until written. ValueError
        for anything else."""
        if isinstance(state, (str, bytes)):
            try:
                state = json.loads(state)
            except ValueError as e:
                raise ValueError(f"the state is not JSON: {e}") from None
        if not isinstance(state, dict) or state.get("type") not in ("running", "waiting",
                                                                     "stopped"):
            raise ValueError('a state must be an object whose "type" is "running", '
                             '"waiting" or "stopped"')
        self._notify("state", state)

    def next_input(self) -> Any:
        """Waits for the host's next ``apply`` and returns its input, parsed
        (``jpt_vfs_tool_next_input``). Raises VfsToolError
        JPT_ERR_CANCELLED (code -32005) when the host sent ``cancel`` before
        any later apply, JPT_ERR_IO when it closed the tool's stdin. Inputs
        and the cancel come in the order sent."""
        self._usable()
        self._pump(lambda: bool(self._inputs), "the next input")
        value = self._inputs.popleft()
        if value is _CANCEL:
            raise VfsToolError(_CANCELLED, "the host cancelled the tool", JPT_VFS_E_CANCELLED)
        return value

    # -- the end (D11 "Final result") --

    def result(self, content: Union[List[Dict[str, Any]], str]) -> None:
        """Sends the ``result`` (``jpt_vfs_tool_result``): RFD 058 content
        blocks (a list of dicts) or plain text (a str). Blocks until
        written; then the tool should exit. TypeError for anything else."""
        if not isinstance(content, (list, str)):
            raise TypeError("a result's content must be a list of content blocks or a str, "
                            f"not {type(content).__name__}")
        self._notify("result", {"content": content})

    def result_text(self, text: str) -> None:
        """A ``result`` with plain text (``jpt_vfs_tool_result_text``)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        self.result(text)

    def error(self, message: str, trace: Optional[List[str]] = None,
              transient: bool = False) -> None:
        """Sends an ``error`` (RFD 009 ToolError; ``jpt_vfs_tool_error``):
        the message, trace lines (outermost first), and whether retrying may
        succeed. Blocks until written; then the tool should exit."""
        if not isinstance(message, str):
            raise TypeError(f"message must be str, not {type(message).__name__}")
        self._notify("error", {"message": message, "trace": list(trace or ()),
                               "transient": bool(transient)})


# ---- Connecting -----------------------------------------------------------------------


def _limit_arg(value: Optional[int], default: int, what: str) -> int:
    if value is None or value == 0:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a positive int, not {value!r}")
    return value


def connect_fds(in_fd: int, out_fd: int, *, max_message: Optional[int] = None,
                max_request: Optional[int] = None,
                on_pending: Optional[Callable[[int, str], None]] = None) -> VfsTool:
    """Connects over ``in_fd`` (the host's messages) and ``out_fd`` (to the
    host) and blocks until ``init`` has arrived
    (``jpt_vfs_tool_connect_fds``). Both fds are put in non-blocking mode
    for the session (their flags are restored by :meth:`VfsTool.close`);
    they are not closed.

    ``max_message``: the longest line taken from the host (default
    JPT_VFS_TOOL_MAX_MESSAGE, 64 MiB). ``max_request``: the longest line
    sent (default JPT_VFS_CONTENT_LIMIT + JPT_VFS_ENVELOPE_LIMIT, what
    jptool's host takes). ``on_pending(request_id, reason)``: called from
    inside a blocking call whenever the host says a request waits (D11's
    ``pending``: a policy prompt is open), with the request's id as
    :meth:`VfsTool.submit` gave it (0 if not one of ours); an exception it
    raises is raised by that call.

    Raises VfsToolError: JPT_ERR_IO (the host closed the pipe before init,
    or reading failed), JPT_ERR_PROTOCOL (the first message is not a valid
    init), JPT_ERR_LIMIT; OSError when an fd is not usable."""
    for fd, what in ((in_fd, "in_fd"), (out_fd, "out_fd")):
        if isinstance(fd, bool) or not isinstance(fd, int) or fd < 0:
            raise ValueError(f"{what} must be a non-negative fd, not {fd!r}")
    if on_pending is not None and not callable(on_pending):
        raise TypeError("on_pending must be callable or None")
    return _connect(in_fd, out_fd, False, max_message, max_request, on_pending)


def connect(*, max_message: Optional[int] = None, max_request: Optional[int] = None,
            on_pending: Optional[Callable[[int, str], None]] = None) -> VfsTool:
    """Connects over stdin and stdout and reads ``init``
    (``jpt_vfs_tool_connect``), with the options of :func:`connect_fds`.
    The protocol goes on private copies of fds 0 and 1; fd 0 then reads
    /dev/null and fd 1 (``sys.stdout`` and ``print()``) writes to stderr,
    so nothing else in the process can break the protocol. Raises as
    :func:`connect_fds`."""
    if on_pending is not None and not callable(on_pending):
        raise TypeError("on_pending must be callable or None")
    if sys.stdout is not None:
        sys.stdout.flush()  # what was written before goes where it was meant to
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return _connect(in_fd, out_fd, True, max_message, max_request, on_pending)


def _connect(in_fd: int, out_fd: int, owned: bool, max_message: Optional[int],
             max_request: Optional[int],
             on_pending: Optional[Callable[[int, str], None]]) -> VfsTool:
    tool = VfsTool(in_fd, out_fd, owned,
                   _limit_arg(max_message, JPT_VFS_TOOL_MAX_MESSAGE, "max_message"),
                   _limit_arg(max_request, JPT_VFS_CONTENT_LIMIT + JPT_VFS_ENVELOPE_LIMIT,
                              "max_request"),
                   on_pending)
    try:
        tool._start()
    except BaseException:
        tool.close()
        raise
    return tool
