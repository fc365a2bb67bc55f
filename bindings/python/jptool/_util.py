"""What the wrappers share: converting arguments and results between Python
and C (strings, JSON text, C ints, pointers), and ``with`` support."""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Optional, TypeVar, Union, overload

from ._lib import lib

# ---- Conversions ------------------------------------------------------------

_Text = Union[str, bytes]
# A path argument: text, or what os.fspath() takes.
_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
# What _to_c() takes: a path, or bytes in another buffer.
_CText = Union[_Path, bytearray, memoryview]


@overload
def _to_c(value: None, what: str) -> None: ...
@overload
def _to_c(value: _CText, what: str) -> bytes: ...
@overload
def _to_c(value: Optional[_CText], what: str) -> Optional[bytes]: ...


def _to_c(value: object, what: str) -> Optional[bytes]:
    """A str/bytes/path argument as NUL-free bytes for a C string; None stays.
    TypeError for anything else (the argument came from the caller, whatever
    its annotation said)."""
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fsencode(value)
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    elif isinstance(value, (bytearray, memoryview)):
        value = bytes(value)
    elif not isinstance(value, bytes):
        raise TypeError(f"{what} must be str or bytes, not {type(value).__name__}")
    if b"\0" in value:
        raise ValueError(f"{what}: embedded null byte")
    return value


@overload
def _from_c(data: bytes) -> str: ...
@overload
def _from_c(data: None) -> None: ...
@overload
def _from_c(data: Optional[bytes]) -> Optional[str]: ...


def _from_c(data: Optional[bytes]) -> Optional[str]:
    """Library text as str, keeping invalid UTF-8 as surrogate escapes."""
    if data is None:
        return None
    return data.decode("utf-8", "surrogateescape")


def _json_arg(value: Any, raw: bool, what: str) -> Optional[bytes]:
    """A Python value as JSON text, or JSON text given as it is (raw=True;
    None is then NULL, which the library refuses with its own message)."""
    if raw:
        given: Optional[bytes] = _to_c(value, what)
        return given
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what}: cannot be written as JSON: {e}") from None
    return text.encode("ascii")


def _json_text(value: Any, what: str) -> bytes:
    """A Python value as JSON text (_json_arg without raw)."""
    text = _json_arg(value, False, what)
    assert text is not None  # json.dumps gives text
    return text


def _take_json(p: ctypes.c_void_p) -> Any:
    """Reads JSON text the caller owns, frees it, returns it parsed (None
    for a NULL pointer)."""
    text = _take_string(p)
    return None if text is None else json.loads(text)


def _take_string(p: ctypes.c_void_p) -> Optional[str]:
    """Reads a `char *` the caller owns, frees it, returns it as str."""
    if not p.value:
        return None
    try:
        return _from_c(ctypes.string_at(p.value))
    finally:
        lib.jpt_free(p)


def _set(text: Optional[str], what: str) -> str:
    """The text a `char **out` of a call that succeeded holds, which the
    headers say is always set: RuntimeError if the library broke that."""
    if text is None:
        raise RuntimeError(f"{what}: the library succeeded without setting its result")
    return text


def _take_text(p: ctypes.c_void_p, what: str) -> str:
    """_take_string for a call that succeeded (see _set)."""
    return _set(_take_string(p), what)


_INT_MIN, _INT_MAX = -(2 ** 31), 2 ** 31 - 1


def _c_int_arg(value: Any, what: str) -> int:
    """An int argument checked to fit a C int (ctypes would truncate it)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueError(f"{what} is out of range for a C int: {value}")
    return value


def _address(ptr: Any) -> int:
    """The address a ctypes pointer holds (0 for NULL)."""
    return ctypes.cast(ptr, ctypes.c_void_p).value or 0


_Self = TypeVar("_Self", bound="_Closable")


class _Closable:
    """``with`` support for the wrappers that own a C object: entering
    checks the object is still open, leaving closes it. Each subclass has
    ``_p()`` (its pointer; ValueError once closed) and ``close()``."""

    __slots__ = ()

    def _p(self) -> object:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        """Returns the object itself; the ``with`` block closes it."""
        self._p()
        return self

    def __exit__(self, *exc: object) -> None:
        """Closes the object (see ``close``)."""
        self.close()
