"""The Python package's coverage of libjptool's API (issue 19 §2): every
function the library exports (lib/jptool.sym) is bound in Python, or has a
documented reason not to be.

A function is bound when a module of the package calls it through ctypes
(``lib.jpt_…`` outside _lib.py, which only declares), or when jptool.vfs_tool,
the tool SDK in pure Python, answers it: a public function, class or method
of that module names the C function in its docstring, as vfs_tool.h's
counterpart. NOT_BOUND lists the others with the reason; a function listed
there that is bound after all fails the test too, so the list stays true.

Also here: _lib.py's two declarations of each function agree, _PROTOTYPES
(what ctypes converts) and the _Lib Protocol (what mypy checks callers
against), parameter by parameter.

Run by `meson test` (suite "python"), which sets JPTOOL_LIBRARY,
PYTHONPATH and JPT_SOURCE_ROOT; prints the counts.
"""

import ctypes
import glob
import inspect
import os
import re
import unittest

import jptool
import jptool._lib as L
import jptool.vfs_tool as vfs_tool

SOURCE_ROOT = os.environ["JPT_SOURCE_ROOT"]
SYMBOL_MAP = os.path.join(SOURCE_ROOT, "lib", "jptool.sym")
PACKAGE = os.path.dirname(os.path.abspath(jptool.__file__))

# The exported functions Python does without, and why.
NOT_BOUND = {
    "jpt_set_allocator":
        "an allocator written in Python would run, holding the GIL, for every "
        "allocation of the library and jansson, only to call the C library's "
        "malloc; Python hosts keep the default (jptool's docstring)",
    "jpt_handle_set_userdata":
        "a Python host keeps what it needs per handle in its own objects "
        "(a dict keyed by tool and id); a Handle is a Python object already",
    "jpt_handle_get_userdata":
        "see jpt_handle_set_userdata",
    "jpt_vfs_http_response_clear":
        "jptool.vfs_tool's http_get and http_post return Python values: "
        "there is nothing to free",
}

# A `const char *` result declared `bytes` rather than Optional[bytes] in
# _Lib: the header promises a string (_lib.py's docstring says when).
NEVER_NULL = {
    "jpt_version", "jpt_strerror", "jpt_last_error", "jpt_state_error_message",
    "jpt_state_errmsg", "jpt_registry_errmsg", "jpt_inquiry_errmsg",
    "jpt_policy_errmsg", "jpt_files_errmsg", "jpt_vfs_host_errmsg",
    # NULL only for a NULL object:
    "jpt_handle_id", "jpt_handle_tool", "jpt_inquiry_question_json",
    "jpt_policy_request_tool", "jpt_policy_request_method", "jpt_policy_request_path",
    "jpt_policy_request_requested_path", "jpt_policy_request_reason",
}


def exported():
    """The function names of the symbol map's global sections."""
    with open(SYMBOL_MAP) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    names = re.findall(r"^\s*(jpt_\w+);", text, re.M)
    assert len(names) == len(set(names)), "a symbol is listed twice"
    return set(names)


def called_through_ctypes():
    """{function: [module, …]} for each `lib.jpt_…` outside _lib.py."""
    found = {}
    for path in sorted(glob.glob(os.path.join(PACKAGE, "*.py"))):
        if os.path.basename(path) == "_lib.py":
            continue
        with open(path) as f:
            for name in re.findall(r"\blib\.(jpt_\w+)\b", f.read()):
                found.setdefault(name, set()).add(os.path.basename(path))
    return found


def answered_by_the_tool_sdk(functions):
    """{function: "VfsTool.read", …}: which of `functions` jptool.vfs_tool's
    public objects name in their docstrings (which also name C types)."""
    objects = []
    for name in vfs_tool.__all__:
        obj = getattr(vfs_tool, name)
        if inspect.isclass(obj):
            objects.append((name, obj))
            for member, value in vars(obj).items():
                if not member.startswith("_") or member == "__init__":
                    objects.append((f"{name}.{member}", getattr(value, "fget", value)))
        elif callable(obj):
            objects.append((name, obj))
    found = {}
    for where, obj in objects:
        for c_name in re.findall(r"``(jpt_vfs_\w+)``", inspect.getdoc(obj) or ""):
            if c_name in functions:
                found.setdefault(c_name, where)
    return found


class Coverage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.exported = exported()
        cls.called = called_through_ctypes()
        cls.sdk = answered_by_the_tool_sdk(cls.exported)

    def test_every_exported_function_is_bound_or_has_a_reason(self):
        missing = sorted(n for n in self.exported
                         if n not in self.called and n not in self.sdk and n not in NOT_BOUND)
        self.assertEqual(missing, [], "exported, not bound, and no reason given")

    def test_the_reasons_are_true(self):
        self.assertEqual(sorted(set(NOT_BOUND) - self.exported), [], "not exported")
        self.assertEqual(sorted(n for n in NOT_BOUND if n in self.called or n in self.sdk), [],
                         "listed as not bound, but bound")

    def test_nothing_bound_is_not_exported(self):
        self.assertEqual(sorted(set(self.called) - self.exported), [])
        self.assertEqual(sorted(set(L._PROTOTYPES) - self.exported), [])

    def test_every_function_called_is_declared(self):
        # Called through ctypes without argtypes, a function would take
        # anything and truncate its result to a C int.
        self.assertEqual(sorted(set(self.called) - set(L._PROTOTYPES)), [])

    def test_report(self):
        via_sdk = set(self.sdk) - set(self.called)
        declared_only = set(L._PROTOTYPES) - set(self.called)
        print(f"\nlibjptool exports {len(self.exported)} functions; the Python package: "
              f"{len(set(self.called) & self.exported)} called through ctypes, "
              f"{len(via_sdk)} answered by jptool.vfs_tool (pure Python), "
              f"{len(NOT_BOUND)} not bound, each with a reason:")
        for name, why in sorted(NOT_BOUND.items()):
            print(f"  {name}: {why}")
        if declared_only:
            print("declared in _PROTOTYPES only (for the tests):", sorted(declared_only))
        self.assertEqual(len(self.exported),
                         len(set(self.called) & self.exported) + len(via_sdk) + len(NOT_BOUND))


# ---- _PROTOTYPES and _Lib -----------------------------------------------------------

OPAQUE = {
    L._StatePtr: "_StateP", L._RegistryPtr: "_RegistryP", L._BatchPtr: "_BatchP",
    L._EventPtr: "_EventP", L._InquiryPtr: "_InquiryP", L._HandlePtr: "_HandleP",
    L._PolicyPtr: "_PolicyP", L._FilesPtr: "_FilesP", L._FilesRequestPtr: "_FilesRequestP",
    L._PolicyRequestPtr: "_PolicyRequestP", L._VfsHostPtr: "_VfsHostP",
}
INTS = (ctypes.c_int, ctypes.c_uint, ctypes.c_size_t)


def argument_annotations(ctype):
    """What _Lib may declare for a parameter of this ctypes type."""
    if ctype is ctypes.c_char_p:
        return {"Optional[bytes]"}
    if ctype in INTS:
        return {"int"}
    if ctype is ctypes.c_void_p:
        return {"_VoidArg"}
    if ctype in OPAQUE:
        return {OPAQUE[ctype]}
    if ctype is ctypes.POINTER(ctypes.c_char_p):
        return {"_StringArray", "_Ref"}  # argv in, or a `const char **` out
    if issubclass(ctype, ctypes._Pointer):
        return {"_Ref"}
    if issubclass(ctype, ctypes._CFuncPtr):
        return {"_Callback"}
    raise AssertionError(f"no annotation for {ctype}")


def result_annotation(name, ctype):
    if ctype is None:
        return "None"
    if ctype is ctypes.c_char_p:
        return "bytes" if name in NEVER_NULL else "Optional[bytes]"
    if ctype in INTS:
        return "int"
    if ctype is ctypes.c_void_p:
        return "Optional[int]"
    return OPAQUE[ctype]


class Declarations(unittest.TestCase):
    def test_the_protocol_declares_each_prototype(self):
        declared = {n for n, v in vars(L._Lib).items() if n.startswith("jpt_") and callable(v)}
        self.assertEqual(declared, set(L._PROTOTYPES))

    def test_each_declaration_agrees(self):
        for name, (restype, argtypes) in L._PROTOTYPES.items():
            with self.subTest(name):
                sig = inspect.signature(getattr(L._Lib, name))
                params = list(sig.parameters.values())[1:]  # self
                self.assertEqual(len(params), len(argtypes))
                for param, ctype in zip(params, argtypes):
                    self.assertIn(param.annotation, argument_annotations(ctype), param.name)
                self.assertEqual(sig.return_annotation, result_annotation(name, restype))

    def test_the_library_has_the_prototypes(self):
        for name, (restype, argtypes) in L._PROTOTYPES.items():
            fn = getattr(L.lib, name)
            self.assertEqual(fn.restype, restype, name)
            self.assertEqual(tuple(fn.argtypes), tuple(argtypes), name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
