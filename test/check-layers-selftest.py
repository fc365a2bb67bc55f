#!/usr/bin/env python3
"""The layer check checked: check-layers.py passes on a small tree of the
right shape (test/layers-fixture), and fails, naming the fault, on each
way a change can break the shape: an upward include or call between rooms
and inside a room, a tool-side room reaching above a libc line, a file or
room off the map, an exception that no longer occurs, jpt_tool_sources
disagreeing with the map. An argued exception lets its one upward call
pass. Each case compiles its copy of the fixture with the given C compiler
and archives the objects as meson names them.

Usage: check-layers-selftest.py <check-layers.py> <fixture dir> <cc...>"""
import os
import shutil
import subprocess
import sys
import tempfile

CHECK, FIXTURE, CC = sys.argv[1], sys.argv[2], sys.argv[3:]


def edit(root, path, old, new):
    p = os.path.join(root, path)
    text = open(p).read()
    if old not in text:
        sys.exit("self-test: '%s' is not in %s" % (old, path))
    open(p, "w").write(text.replace(old, new, 1))


def build(root):
    lib = os.path.join(root, "lib")
    objs = []
    for room in sorted(os.listdir(lib)):
        if not os.path.isdir(os.path.join(lib, room)):
            continue
        for f in sorted(os.listdir(os.path.join(lib, room))):
            if f.endswith(".c"):
                obj = os.path.join(root, "lib_%s_%s.o" % (room, f))
                subprocess.run(CC + ["-c", "-I", lib, "-o", obj,
                                     os.path.join(lib, room, f)], check=True)
                objs.append(obj)
    archive = os.path.join(root, "libfixture.a")
    subprocess.run(["ar", "rcs", archive] + objs, check=True)
    return archive


def run(name, change, expect):
    """Copies the fixture, applies `change`, checks it; `expect` is None for
    a pass, else a text the failure must name."""
    root = tempfile.mkdtemp(prefix="check-layers-")
    try:
        shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
        change(root)
        archive = build(root)
        out = subprocess.run([sys.executable, CHECK, root, archive],
                             capture_output=True, text=True)
    finally:
        shutil.rmtree(root)
    text = out.stdout + out.stderr
    if expect is None:
        ok = out.returncode == 0
    else:
        ok = out.returncode == 1 and any(line.startswith("FAIL ") and expect in line
                                         for line in text.splitlines())
    print("%s %s" % ("ok  " if ok else "BAD ", name))
    if not ok:
        print("    expected %s; check-layers.py said (exit %d):\n%s"
              % ("a pass" if expect is None else "a FAIL naming '%s'" % expect,
                 out.returncode, text))
    return ok


def nothing(root):
    pass


def include_up_between_rooms(root):
    edit(root, "lib/low/a.c", '#include "low/low.h"', '#include "low/low.h"\n#include "mid/mid.h"')


def call_up_between_rooms(root):
    edit(root, "lib/low/b.c", "return low_a() + 1;", "return low_a() + mid_one();")
    edit(root, "lib/low/low.h", "int low_b(void);", "int low_b(void);\nint mid_one(void);")


def include_up_in_room(root):
    edit(root, "lib/mid/one.c", '#include "mid/mid.h"', '#include "mid/two.h"')


def call_up_in_room(root):
    edit(root, "lib/mid/one.c", "return low_b();", "return low_b() + mid_two();")
    edit(root, "lib/mid/mid.h", "int mid_one(void);", "int mid_one(void);\nint mid_two(void);")


def call_up_in_room_allowed(root):
    call_up_in_room(root)
    edit(root, "docs/ARCHITECTURE.md", "<!-- layer map: end -->",
         "allow mid/one.c -> mid/two.c   argued\n<!-- layer map: end -->")


def stale_exception(root):
    edit(root, "docs/ARCHITECTURE.md", "<!-- layer map: end -->",
         "allow mid/one.c -> mid/two.c   argued\n<!-- layer map: end -->")


def tool_above_libc(root):
    edit(root, "lib/tool/t.c", "return low_a();", "return low_b();")


def libc_code_includes_a_library(root):
    edit(root, "lib/low/a.c", '#include "low/low.h"', '#include <jansson.h>\n#include "low/low.h"')


def file_off_map(root):
    with open(os.path.join(root, "lib/mid/three.c"), "w") as f:
        f.write('#include "mid/mid.h"\nint mid_three(void);\n'
                'int mid_three(void)\n{\n    return 3;\n}\n')


def room_off_map(root):
    os.mkdir(os.path.join(root, "lib/top"))


def tool_sources_drift(root):
    edit(root, "lib/meson.build", "'tool/t.c',", "'tool/t.c',\n  'low/b.c',")


CASES = [
    ("the fixture passes", nothing, None),
    ("an include of a room above", include_up_between_rooms,
     "low/a.c includes mid/mid.h, in the room mid above low"),
    ("a call into a room above", call_up_between_rooms,
     "low/b.c uses mid_one of mid/one.c, in the room mid above low"),
    ("an include of a layer above in the room", include_up_in_room,
     "mid/one.c includes mid/two.h, which is above it in the room mid"),
    ("a call into a file above in the room", call_up_in_room,
     "mid/one.c uses mid_two of mid/two.c, which is above it in the room mid"),
    ("an argued exception lets that call pass", call_up_in_room_allowed, None),
    ("an exception that no longer occurs", stale_exception,
     "allow mid/one.c -> mid/two.c: no such call or include any more"),
    ("a [libc only] room using code above a libc line", tool_above_libc,
     "the room tool is [libc only] and low/b.c is not below a '--- libc' line"),
    ("code below a libc line including a library's header", libc_code_includes_a_library,
     "low/a.c includes <jansson.h>, but needs the C library alone"),
    ("a file off the map", file_off_map, "mid/three.c is not on the map"),
    ("a room off the map", room_off_map, "lib/top is not a room on the map"),
    ("jpt_tool_sources beyond the libc line", tool_sources_drift,
     "jpt_tool_sources has low/b.c"),
]


def main():
    results = [run(*case) for case in CASES]
    print("%d of %d cases as expected" % (sum(results), len(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
