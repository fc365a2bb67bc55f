#!/usr/bin/env python3
"""Checks the registry room's layers (lib/registry/base.h is the map):

  - every .c file of the room is on the map;
  - a file calls (or reads) only functions and data defined in files
    before it on the map, as the objects' symbol tables show (nm);
  - a file includes only its own layer's header of the room, and a layer's
    header only the header of the layer below.

Usage: check-layers.py <registry dir> <static library of the objects>"""
import os
import re
import subprocess
import sys

HEADER_LINE = re.compile(r"^ \*\s+(?:(\w+\.h)\s+)?([\w-]+\.c)\b")
INCLUDE = re.compile(r'^#include "registry/([\w-]+\.h)"', re.M)


def read_map(registry_dir):
    """The files in layer order, and each .c file's layer header."""
    text = open(os.path.join(registry_dir, "base.h")).read()
    comment = text[: text.index("*/")]
    order, header_of, headers = [], {}, []
    header = None
    for line in comment.splitlines():
        m = HEADER_LINE.match(line)
        if not m:
            continue
        if m.group(1):
            header = m.group(1)
            headers.append(header)
        elif m.group(2) == "registry.c":
            header = None  # the face: it includes the top layer's header
        order.append(m.group(2))
        header_of[m.group(2)] = header or headers[-1]
    return order, header_of, headers


def symbols(archive):
    """{file: (defined, undefined)} from the archive's members."""
    out = subprocess.run(["nm", "-A", archive], capture_output=True, text=True, check=True)
    table = {}
    for line in out.stdout.splitlines():
        # archive:member.o:value type name   (value absent for U)
        head, _, rest = line.rpartition(":")
        member = os.path.basename(head.split(":")[-1])
        m = re.match(r"registry_([\w-]+\.c)\.o$", member)
        if not m:
            continue
        parts = rest.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        defined, undefined = table.setdefault(m.group(1), (set(), set()))
        if kind == "U":
            undefined.add(name)
        elif kind.isupper():
            defined.add(name)
    return table


def main():
    registry_dir, archive = sys.argv[1], sys.argv[2]
    order, header_of, headers = read_map(registry_dir)
    problems = []

    on_disk = sorted(f for f in os.listdir(registry_dir) if f.endswith(".c"))
    for f in on_disk:
        if f not in order:
            problems.append("%s is not on the map in base.h" % f)

    table = symbols(archive)
    where = {}
    for f, (defined, _) in table.items():
        for name in defined:
            where[name] = f
    for f in order:
        if f not in table:
            problems.append("%s: no object in %s" % (f, archive))
            continue
        for name in sorted(table[f][1]):
            g = where.get(name)
            if g is not None and order.index(g) > order.index(f):
                problems.append("%s uses %s, defined above it in %s" % (f, name, g))

    for f in on_disk:
        text = open(os.path.join(registry_dir, f)).read()
        own = header_of.get(f)
        for inc in INCLUDE.findall(text):
            if inc != own:
                problems.append("%s includes registry/%s; its layer's header is %s"
                                % (f, inc, own))
    for i, h in enumerate(headers):
        text = open(os.path.join(registry_dir, h)).read()
        below = headers[i - 1] if i > 0 else None
        for inc in INCLUDE.findall(text):
            if inc != below:
                problems.append("%s includes registry/%s; the layer below is %s"
                                % (h, inc, below))

    for p in problems:
        print("FAIL " + p)
    print("%d files in %d layers checked, %d problems"
          % (len(order), len(headers) + 1, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
