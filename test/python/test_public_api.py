"""The public names of jptool, jptool.aio and jptool.vfs_tool stay as they
were recorded (test/python/public-api.json, written by public_api.py from
the package as one 3 700-line __init__.py, before issue 19 split it into
modules): ``__all__`` in its order, and every public name dir() lists with
what it is (a constant's value, a class's public members and each
method's parameters, a function's parameters). Parameters are compared
without their annotations, so typing the package cannot change a call.

Allowed to differ: the names the package's code imported for its own use
(the standard library's modules, typing's names: "incidental" in the
record), and new submodules of jptool itself (jptool.state, …), which
dir() lists once imported.

Run by `meson test` (suite "python"), which sets JPTOOL_LIBRARY and
PYTHONPATH.
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import public_api  # noqa: E402

RECORD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "public-api.json")


class PublicNames(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(RECORD, encoding="utf-8") as f:
            cls.recorded = json.load(f)
        cls.now = public_api.snapshot()

    def test_modules_recorded(self):
        self.assertEqual(sorted(self.recorded), sorted(public_api.MODULES))

    def test_all_unchanged(self):
        for module in public_api.MODULES:
            with self.subTest(module=module):
                self.assertEqual(self.now[module]["__all__"], self.recorded[module]["__all__"])

    def test_names_unchanged(self):
        for module in public_api.MODULES:
            was, now = self.recorded[module]["names"], self.now[module]["names"]
            with self.subTest(module=module):
                self.assertEqual(sorted(set(was) - set(now)), [], "names gone")
                for name in sorted(set(was) & set(now)):
                    self.assertEqual(now[name], was[name], f"{module}.{name} changed")
                new = {name: now[name] for name in set(now) - set(was)}
                own = {name for name, what in new.items()
                       if what.get("kind") == "module" and
                       what.get("name") == f"{module}.{name}"}
                self.assertEqual(sorted(set(new) - own), [],
                                 "new public names other than the package's own modules")

    def test_star_import(self):
        namespace: dict = {}
        exec("from jptool import *", namespace)
        names = set(namespace) - {"__builtins__"}
        self.assertEqual(names, set(self.recorded["jptool"]["__all__"]))

    def test_record_is_meaningful(self):
        # A record that lost its content would pass the tests above.
        names = self.recorded["jptool"]["names"]
        self.assertGreater(len(names), 150)
        self.assertEqual(names["State"]["members"]["add_question"],
                         ["method", "(self, id, text, schema=None, default=<sentinel>)"])
        self.assertEqual(names["JPT_ERR_LIMIT"], {"kind": "constant", "value": -14})


if __name__ == "__main__":
    unittest.main()
