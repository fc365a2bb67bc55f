"""The public names of the jptool package, as data: what test_public_api.py
compares with test/python/public-api.json, which this file wrote from the
package before it was split into modules (issue 19 §2).

    python3 public_api.py --write public-api.json   # record (a release's
                                                     # API changes only)

For jptool, jptool.aio and jptool.vfs_tool: ``__all__`` in its order; every
public name (no leading underscore) that dir() lists, with what it is (a
constant with its value, a class with its public members, a function with
its parameters; a variable such as library_path, with its type); and,
apart, the names dir() lists that are not the package's API but what its
code imported for itself (the standard library's modules and typing's
names): they may come and go.

A parameter is recorded as its name, kind and default, not its annotation:
adding type annotations must not change how anything is called. A default
that is a bare ``object()`` sentinel is recorded as "<sentinel>".
"""

import inspect
import json
import sys
import types
from typing import Any, Dict, List

MODULES = ("jptool", "jptool.aio", "jptool.vfs_tool")


class _Shown:
    """A default as the record shows it."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _default(value: Any) -> Any:
    if value is inspect.Parameter.empty:
        return value
    if type(value) is object:
        return _Shown("<sentinel>")
    if value is None or isinstance(value, (bool, int, float, str, tuple)):
        return value
    return _Shown(f"<{type(value).__name__}>")


def _signature(fn: Any) -> str:
    """The parameters as Python writes them, without annotations:
    "(self, data, raw=False)"."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "<no signature>"
    params = [p.replace(annotation=inspect.Parameter.empty, default=_default(p.default))
              for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _member(cls: type, name: str) -> Any:
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, property):
        return "property"
    if isinstance(raw, classmethod):
        return ["classmethod", _signature(getattr(cls, name))]
    if isinstance(raw, staticmethod):
        return ["staticmethod", _signature(getattr(cls, name))]
    if inspect.isfunction(raw):
        return ["method", _signature(raw)]
    if type(raw).__name__ == "member_descriptor":
        return "attribute"
    if isinstance(raw, (bool, int, float, str)) or raw is None:
        return ["value", raw]
    return f"<{type(raw).__name__}>"


def _class(cls: type) -> Dict[str, Any]:
    members = {}
    for name in sorted(dir(cls)):
        if name.startswith("_") and name not in ("__init__", "__enter__", "__exit__",
                                                  "__aenter__", "__aexit__"):
            continue
        if name in dir(Exception) and issubclass(cls, BaseException) and \
                name not in ("__init__",):
            continue  # what every exception has
        members[name] = _member(cls, name)
    return {"kind": "class", "bases": [b.__name__ for b in cls.__bases__],
            "members": members}


def _incidental(module: types.ModuleType, name: str, value: Any) -> bool:
    """Imported by the package's code for itself: a module from outside the
    package, a name of typing or collections.abc, __future__'s feature, or
    in a submodule a name of jptool that it does not export."""
    package = sys.modules["jptool"]
    if module is not package and name not in module.__all__ and \
            getattr(package, name, None) is value:
        return True
    if isinstance(value, types.ModuleType):
        return not value.__name__.startswith("jptool.")
    if name == "annotations":
        return True
    import collections.abc
    import typing

    return any(getattr(source, name, None) is value for source in (typing, collections.abc))


def _describe(module: types.ModuleType, name: str, value: Any) -> Any:
    if isinstance(value, types.ModuleType):
        return {"kind": "module", "name": value.__name__}
    if inspect.isclass(value):
        return _class(value)
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        return {"kind": "function", "parameters": _signature(value)}
    if (isinstance(value, (bool, int, float, str)) or value is None) and name.isupper():
        return {"kind": "constant", "value": value}
    if isinstance(value, (bool, int, float, str)):
        # A variable (library_path: where this process loaded the library).
        return {"kind": "variable", "type": type(value).__name__}
    if getattr(value, "__module__", None) == "typing" or \
            type(value).__module__ in ("typing", "types"):
        return {"kind": "type alias"}
    return {"kind": f"<{type(value).__name__}>"}


def snapshot() -> Dict[str, Any]:
    """The public names of MODULES, each module imported."""
    import importlib

    out: Dict[str, Any] = {}
    for modname in MODULES:
        module = importlib.import_module(modname)
    for modname in MODULES:
        module = sys.modules[modname]
        names: Dict[str, Any] = {}
        incidental: List[str] = []
        for name in sorted(dir(module)):
            if name.startswith("_"):
                continue
            value = getattr(module, name)
            if _incidental(module, name, value):
                incidental.append(name)
            else:
                names[name] = _describe(module, name, value)
        out[modname] = {"__all__": list(module.__all__), "names": names,
                        "incidental": incidental}
    return out


def main(argv: List[str]) -> int:
    if len(argv) != 3 or argv[1] != "--write":
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(snapshot(), f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
