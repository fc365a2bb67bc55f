"""ProjectFiles backends (vfs.h, "ProjectFiles"): :class:`Files`, and the
requests a host-supplied one hands its handler (:class:`FilesRequest`)."""

from __future__ import annotations

import ctypes
import itertools
import json
import sys
import traceback
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Union

from ._lib import (_FilesCallFn, _FilesCancelFn, _FilesEntry, _FilesOps, _FilesPtr,
                   _FilesReleaseFn, lib)
from ._util import (_Closable, _Path, _Text, _address, _c_int_arg, _from_c, _json_arg,
                    _take_json, _to_c)
from .constants import (JPT_ERR_CANCELLED, JPT_ERR_INVALID, JPT_ERR_IO, JPT_ERR_NOMEM,
                        JPT_ERR_STATE, JPT_FILES_KIND_DIR, JPT_FILES_KIND_FILE,
                        JPT_FILES_KIND_OTHER, JPT_FILES_KIND_SYMLINK, JPT_OK)
from .errors import JptError, _check, _check_new, last_error

if TYPE_CHECKING:
    from ._lib import _FilesP, _FilesRequestP

# ---- ProjectFiles (vfs.h, "ProjectFiles (lib/files)") ------------------------------

_FILES_KINDS = {
    JPT_FILES_KIND_FILE: "file",
    JPT_FILES_KIND_DIR: "dir",
    JPT_FILES_KIND_SYMLINK: "symlink",
    JPT_FILES_KIND_OTHER: "other",
}


class _HostBackend:
    """A host-supplied backend's Python side: the handler, and the requests
    it has not answered yet (by address, weakly: one dropped unanswered is
    failed by its finaliser)."""

    __slots__ = ("handler", "requests")

    def __init__(self, handler: Callable[[FilesRequest], None]) -> None:
        self.handler = handler
        self.requests: "weakref.WeakValueDictionary[int, FilesRequest]" = \
            weakref.WeakValueDictionary()


# The library may use a host-supplied backend after its Files object is
# closed (a registry or VFS host holds a reference), so its callbacks cannot
# belong to that object: the one ops table below calls these module-level
# trampolines, never freed, with a key in `ud` naming the backend in
# _HOST_BACKENDS until the library releases it.
_HOST_BACKENDS: Dict[int, _HostBackend] = {}
_host_backend_keys = itertools.count(1)


def _files_call(rptr: _FilesRequestP, method: bytes, params: bytes, ud: Optional[int]) -> int:
    backend = _HOST_BACKENDS.get(ud or 0)
    if backend is None:  # pragma: no cover - released backends get no calls
        return JPT_ERR_STATE
    try:
        request = FilesRequest(rptr, _from_c(method), json.loads(params))
    except BaseException:  # noqa: B902 - it cannot cross C
        traceback.print_exc()
        return JPT_ERR_NOMEM
    backend.requests[_address(rptr)] = request
    try:
        backend.handler(request)
    except JptError as e:
        if request.valid:
            request.fail(e.status, e.message)
    except BaseException as e:  # noqa: B902
        # A bug in the handler, not an answer: the tool is told, and the
        # traceback goes where Python reports what it cannot raise.
        if request.valid:
            request.fail(JPT_ERR_IO, f"the host's files handler failed: "
                                     f"{type(e).__name__}: {e}")
        print("jptool: exception in a files handler (Files.host):", file=sys.stderr)
        traceback.print_exception(type(e), e, e.__traceback__)
    return JPT_OK


def _files_cancel(rptr: _FilesRequestP, ud: Optional[int]) -> None:
    backend = _HOST_BACKENDS.get(ud or 0)
    request = backend.requests.get(_address(rptr)) if backend is not None else None
    if request is not None:
        request.cancelled = True


def _files_release(ud: Optional[int]) -> None:
    _HOST_BACKENDS.pop(ud or 0, None)


_HOST_OPS = _FilesOps(ctypes.sizeof(_FilesOps), _FilesCallFn(_files_call),
                      _FilesCancelFn(_files_cancel), _FilesReleaseFn(_files_release))


class FilesRequest:
    """One request to a host-supplied backend (:meth:`Files.host`), given to
    its handler: answer it exactly once, at once or later (from the same
    thread), with :meth:`reply` or :meth:`fail` (``jpt_files_request *``).

    ``method`` is the D11 method ("fs.read", "fs.write", "fs.exists",
    "fs.list_dir", "fs.metadata", "fs.delete", "fs.rename", "fs.grep") and
    ``params`` its params as a dict, paths already checked and in their
    normal form. ``cancelled`` becomes True when nobody wants the answer any
    more (the tool went away): the host may stop the work, but must still
    answer. A request dropped unanswered (garbage collected) is failed with
    JPT_ERR_CANCELLED, so the backend can be freed.
    """

    __slots__ = ("_ptr", "method", "params", "cancelled", "__weakref__")
    _ptr: Optional[_FilesRequestP]

    def __init__(self, ptr: _FilesRequestP, method: str, params: Dict[str, Any]) -> None:
        """Made by the backend for its handler."""
        self._ptr = ptr
        self.method = method
        self.params = params
        self.cancelled = False

    @property
    def valid(self) -> bool:
        """True until the request is answered."""
        return bool(self._ptr)

    def _take(self) -> _FilesRequestP:
        ptr, self._ptr = self._ptr, None
        if not ptr:
            raise ValueError("the FilesRequest was answered already")
        return ptr

    def reply(self, result: Union[Dict[str, Any], _Text]) -> None:
        """Answers with ``result``, D11's result for the method as a dict
        (or its JSON text): ``{"content": "…"}`` for fs.read (with
        ``"encoding": "base64"`` for bytes that are not text),
        ``{}`` for fs.write, fs.delete and fs.rename, ``{"exists": True}``,
        ``{"kind": "file", "size": 13}``, ``{"entries": [{"path": name,
        "kind": "file"}]}``, ``{"matches": […]}``
        (``jpt_files_request_reply``). The request is answered whatever
        happens. Raises JptError(JPT_ERR_INVALID) for a result not of that
        shape (the request then fails with JPT_ERR_PROTOCOL, saying what was
        expected), TypeError/ValueError for a dict that is not JSON (the
        request then fails with JPT_ERR_IO), ValueError when answered
        already."""
        raw = isinstance(result, (str, bytes, bytearray, memoryview))
        try:
            text = _json_arg(result, raw, "result")
        except (TypeError, ValueError) as e:
            self.fail(JPT_ERR_IO, f"the host's result is not JSON: {e}")
            raise
        rc = lib.jpt_files_request_reply(self._take(), text)
        if rc == JPT_ERR_INVALID:
            raise JptError(rc, f"{self.method}: the result is not of D11's shape for the "
                               f"method; the request failed with JPT_ERR_PROTOCOL")
        _check(rc)

    def fail(self, status: int, message: Optional[_Text] = None) -> None:
        """Fails the request (``jpt_files_request_fail``): ``status`` is a
        JPT_ERR_* code (JPT_ERR_NOT_FOUND, JPT_ERR_DENIED, …; anything not
        negative becomes JPT_ERR_IO) and ``message`` says why; the tool is
        told "<method> '<path>': <message>". Raises ValueError when answered
        already."""
        status = _c_int_arg(status, "status")
        message_b = _to_c(message, "message")
        _check(lib.jpt_files_request_fail(self._take(), status, message_b))

    def __del__(self, _fail: Callable[[_FilesRequestP, int, Optional[bytes]], int]
                = lib.jpt_files_request_fail) -> None:
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._ptr = None
            _fail(ptr, JPT_ERR_CANCELLED, b"the host dropped the request unanswered")

    def __repr__(self) -> str:
        return (f"<jptool.FilesRequest {self.method} "
                f"{self.params.get('path', self.params.get('from', ''))!r}"
                f"{'' if self.valid else ' (answered)'}>")


class Files(_Closable):
    """A ProjectFiles backend (``jpt_files *``): the files a VFS tool reads
    and writes, for :class:`VfsHost` (``files=``) and
    :meth:`Registry.add_files`, or used directly. Three kinds:
    :meth:`open_dir` (a directory, every path confined beneath it),
    :meth:`memory` (files in this process), :meth:`host` (methods a Python
    handler serves, at once or later). vfs.h documents the path rules and
    each method's errors.

    Paths are relative to the root, '/'-separated (str, bytes or path-like);
    every failure raises :class:`JptError` with the library's message,
    which names the method and the path as requested, never the root
    ("fs.read 'src/x.rs': not found"). On a host-supplied backend a method
    the handler did not answer within its call raises
    JptError(JPT_ERR_AGAIN) (a VFS host waits instead).

    :meth:`close` (or the end of a ``with`` block, or garbage collection)
    drops this object's reference; a registry or host that took one keeps
    the backend alive.
    """

    __slots__ = ("_ptr", "__weakref__")
    _ptr: Optional[_FilesP]

    def __init__(self, _ptr: _FilesP) -> None:
        """Wraps a reference the caller owns; use open_dir(), memory() or
        host() instead."""
        if not isinstance(_ptr, _FilesPtr) or not _ptr:
            raise TypeError("Files() takes a jpt_files pointer; use Files.open_dir(), "
                            "Files.memory() or Files.host()")
        self._ptr = _ptr

    @classmethod
    def open_dir(cls, root: _Path, flags: int = 0) -> "Files":
        """The directory ``root``, opened once (``jpt_files_open_dir``);
        ``flags``: JPT_FILES_ALLOW_HARDLINKS (read and write files with
        several hard links), JPT_FILES_FSYNC (fs.write syncs before it
        replaces). Raises JptError: JPT_ERR_NOT_FOUND (no such directory),
        JPT_ERR_IO (not a directory, or it cannot be opened),
        JPT_ERR_INVALID (unknown flags)."""
        root_b = _to_c(root, "root")
        p = _FilesPtr()
        _check_new(lib.jpt_files_open_dir(root_b, _c_int_arg(flags, "flags"), ctypes.byref(p)))
        return cls(p)

    @classmethod
    def memory(cls) -> "Files":
        """An empty memory backend (``jpt_files_new_memory``): the same
        methods, path rules and errors, without symlinks, modes or hard
        links."""
        p = _FilesPtr()
        _check_new(lib.jpt_files_new_memory(ctypes.byref(p)))
        return cls(p)

    @classmethod
    def host(cls, handler: Callable[[FilesRequest], None]) -> "Files":
        """A backend whose methods ``handler`` serves (``jpt_files_new``): it
        gets each request as a :class:`FilesRequest` and answers it at once
        or later. A JptError the handler raises fails the request with its
        status and message; any other exception fails it with JPT_ERR_IO
        naming the exception, and its traceback is printed to stderr (it
        cannot cross the library). The handler lives as long as the backend
        does: after this object is closed, while a registry or host still
        holds it."""
        if not callable(handler):
            raise TypeError("Files.host: handler must be callable")
        key = next(_host_backend_keys)
        _HOST_BACKENDS[key] = _HostBackend(handler)
        p = _FilesPtr()
        rc = lib.jpt_files_new(ctypes.byref(_HOST_OPS), key, ctypes.byref(p))
        if rc < 0:
            _HOST_BACKENDS.pop(key, None)
            raise JptError(rc, last_error())
        return cls(p)

    def close(self) -> None:
        """Drops this object's reference (``jpt_files_free``). Closing twice
        is harmless; any other use afterwards raises ValueError."""
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            lib.jpt_files_free(ptr)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return not self._ptr

    def __del__(self, _free: Callable[[_FilesP], None] = lib.jpt_files_free) -> None:
        ptr = getattr(self, "_ptr", None)
        if ptr:
            self._ptr = None
            _free(ptr)

    def __repr__(self) -> str:
        return "<jptool.Files closed>" if not self._ptr else "<jptool.Files>"

    def _p(self) -> _FilesP:
        if not self._ptr:
            raise ValueError("operation on a closed Files")
        return self._ptr

    def _check(self, rc: int) -> None:
        if rc < 0:
            # (The handler of a host-supplied backend may have closed it.)
            message = lib.jpt_files_errmsg(self._ptr) if self._ptr else None
            raise JptError(rc, _from_c(message) or None)

    def read(self, path: _Path, limit: int = 0) -> bytes:
        """The file's bytes (fs.read, ``jpt_files_read``), at most ``limit``
        bytes (0: JPT_FILES_READ_LIMIT): JPT_ERR_LIMIT when larger."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"limit must be a non-negative int, not {limit!r}")
        out, n = ctypes.c_void_p(), ctypes.c_size_t()
        rc = lib.jpt_files_read(self._p(), _to_c(path, "path"), limit, ctypes.byref(out),
                                 ctypes.byref(n), None)
        self._check(rc)
        try:
            return ctypes.string_at(out, n.value)
        finally:
            lib.jpt_free(out)

    def write(self, path: _Path, data: _Text) -> None:
        """Replaces the file's content atomically, creating missing parent
        directories (fs.write, ``jpt_files_write``); str is written as
        UTF-8."""
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        elif isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        elif not isinstance(data, bytes):
            raise TypeError(f"data must be bytes or str, not {type(data).__name__}")
        self._check(lib.jpt_files_write(self._p(), _to_c(path, "path"), data, len(data)))

    def exists(self, path: _Path) -> bool:
        """Whether something is at ``path``, following symlinks
        (fs.exists)."""
        out = ctypes.c_int()
        self._check(lib.jpt_files_exists(self._p(), _to_c(path, "path"), ctypes.byref(out)))
        return bool(out.value)

    def metadata(self, path: _Path) -> Dict[str, Any]:
        """``{"kind": "file" | "dir" | "other", "size": bytes}``, following
        symlinks (fs.metadata; size 0 for what is not a regular file)."""
        kind, size = ctypes.c_int(), ctypes.c_uint64()
        self._check(lib.jpt_files_metadata(self._p(), _to_c(path, "path"),
                                            ctypes.byref(kind), ctypes.byref(size)))
        return {"kind": _FILES_KINDS.get(kind.value, "other"), "size": size.value}

    def list_dir(self, path: _Path = ".") -> List[Dict[str, str]]:
        """The directory's entries as D11 lists them, ``[{"path": name,
        "kind": "file" | "dir" | "symlink" | "other"}]``, sorted by name
        bytewise; symlinks are not followed (fs.list_dir)."""
        out, n = ctypes.c_void_p(), ctypes.c_size_t()
        self._check(lib.jpt_files_list_dir(self._p(), _to_c(path, "path"),
                                            ctypes.byref(out), ctypes.byref(n)))
        try:
            entries = ctypes.cast(out, ctypes.POINTER(_FilesEntry))
            return [{"path": entries[i].name.decode("utf-8", "surrogateescape"),
                     "kind": _FILES_KINDS.get(entries[i].kind, "other")}
                    for i in range(n.value)]
        finally:
            lib.jpt_free(out)

    def delete(self, path: _Path) -> None:
        """Removes the file (a symlink itself) at ``path`` (fs.delete)."""
        self._check(lib.jpt_files_delete(self._p(), _to_c(path, "path")))

    def rename(self, src: _Path, dst: _Path) -> None:
        """Moves ``src`` to ``dst``, creating the parents of ``dst``; an
        existing ``dst`` is never replaced (JPT_ERR_EXISTS) (fs.rename)."""
        self._check(lib.jpt_files_rename(self._p(), _to_c(src, "src"), _to_c(dst, "dst")))

    def grep(self, pattern: _Text, *, paths: Optional[List[str]] = None,
             extensions: Optional[List[str]] = None, context: Optional[int] = None,
             case_insensitive: Optional[bool] = None, fixed_strings: Optional[bool] = None,
             max_matches: Optional[int] = None) -> Dict[str, Any]:
        """Searches the files (fs.grep, ``jpt_files_grep``; vfs.h says which
        files and how): ``{"matches": [{"path", "lines": [{"line_number",
        "content", "is_match"}]}], "truncated": bool}``. The keywords are
        D11's params and issue 9's; None leaves one out."""
        params: Dict[str, Any] = {"pattern": _from_c(_to_c(pattern, "pattern"))}
        for name, value in (("paths", paths), ("extensions", extensions),
                            ("context", context), ("case_insensitive", case_insensitive),
                            ("fixed_strings", fixed_strings), ("max_matches", max_matches)):
            if value is not None:
                params[name] = value
        out = ctypes.c_void_p()
        rc = lib.jpt_files_grep(self._p(), _json_arg(params, False, "params"),
                                 ctypes.byref(out))
        found: Dict[str, Any] = _take_json(out)
        self._check(rc)
        return found

    def call(self, method: _Text, params: Union[Dict[str, Any], _Text]) -> Dict[str, Any]:
        """Any D11 filesystem method by name (``jpt_files_call``), its params
        a dict or JSON text, its result parsed as a VFS tool gets it (an
        fs.read's content is text, or base64 with ``"encoding"``).
        JPT_ERR_UNSUPPORTED for an unknown method."""
        raw = isinstance(params, (str, bytes, bytearray, memoryview))
        out = ctypes.c_void_p()
        rc = lib.jpt_files_call(self._p(), _to_c(method, "method"),
                                 _json_arg(params, raw, "params"), ctypes.byref(out))
        got: Dict[str, Any] = _take_json(out)
        self._check(rc)
        return got
