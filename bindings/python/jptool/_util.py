"""What the wrappers share: converting arguments and results between Python
and C (strings, JSON text, C ints, pointers), and ``with`` support."""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Optional, Union

from ._lib import lib

# ---- Conversions ------------------------------------------------------------

_Text = Union[str, bytes]


def _to_c(value: Optional[Union[_Text, os.PathLike]], what: str) -> Optional[bytes]:
    """A str/bytes/path argument as NUL-free bytes for a C string; None stays."""
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


def _from_c(data: Optional[bytes]) -> Optional[str]:
    """Library text as str, keeping invalid UTF-8 as surrogate escapes."""
    if data is None:
        return None
    return data.decode("utf-8", "surrogateescape")


def _json_arg(value: Any, raw: bool, what: str) -> bytes:
    """A Python value as JSON text, or JSON text given as it is (raw=True)."""
    if raw:
        return _to_c(value, what)
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{what}: cannot be written as JSON: {e}") from None
    return text.encode("ascii")


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


class _Closable:
    """``with`` support for the wrappers that own a C object: entering
    checks the object is still open, leaving closes it."""

    __slots__ = ()

    def __enter__(self):
        """Returns the object itself; the ``with`` block closes it."""
        self._p()
        return self

    def __exit__(self, *exc) -> None:
        """Closes the object (see ``close``)."""
        self.close()
