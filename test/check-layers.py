#!/usr/bin/env python3
"""Checks the library's shape against its map, the block of
docs/ARCHITECTURE.md between the lines "<!-- layer map: begin -->" and
"<!-- layer map: end -->" (one source: the document maintainers read is
the one this check reads, so the two cannot drift).

The map lists the rooms (lib/<room>) bottom first, and inside each room
its headers and .c files bottom first. It says:

  - every room of lib/ and every .c and .h file of a room is on the map;
  - a file calls (or reads) only what files before it in its room define,
    or what the rooms before its room define (nm of the objects);
  - a file includes only headers before it in its room, or headers of the
    rooms before its room (its #include "..." lines; the public headers,
    jptool/*.h, are everyone's);
  - a room marked [libc only] (the tool side, libjptool-tool) calls and
    includes, outside itself, only what lies below a "--- libc" line of a
    room (code that needs the C library alone), none of that code includes
    a header of the libraries libjptool links (jansson, libcurl, pcre2,
    libseccomp), and lib/meson.build's jpt_tool_sources are exactly those
    files;
  - an "allow A -> B" line lets file A call or include file B against
    the order: the exceptions the document argues for, no more (an
    exception that no longer occurs fails too, so it is removed).

Usage: check-layers.py <source root> [static library ...]
With no library, only includes are checked (the self-test's fixtures can
be checked either way)."""
import os
import re
import subprocess
import sys

BEGIN = "<!-- layer map: begin -->"
END = "<!-- layer map: end -->"
ROOM_LINE = re.compile(r"^([\w-]+)(\s+\[libc only\])?(?:\s{2,}.*)?$")
ENTRY_LINE = re.compile(r"^\s+([\w-]+\.[ch])(?:\s{2,}.*)?$")
LIBC_LINE = re.compile(r"^\s+--- libc\b")
ALLOW_LINE = re.compile(r"^allow\s+([\w-]+/[\w-]+\.[ch])\s+->\s+([\w-]+/[\w-]+\.[ch])(?:\s{2,}.*)?$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)
# The headers of the libraries libjptool links (meson.build's jpt_deps):
# none may be included by code that needs the C library alone.
LIBRARY_HEADERS = re.compile(r"^(jansson\.h|curl/|pcre2\.h|seccomp\.h)")
TOOL_SOURCES = re.compile(r"jpt_tool_sources\s*=\s*files\((.*?)\)", re.S)


class Map:
    def __init__(self):
        self.rooms = []          # room names, bottom first
        self.libc_only = set()   # rooms of the tool side
        self.pos = {}            # "room/file" -> (room index, index in the room)
        self.libc = set()        # "room/file" below a room's "--- libc" line
        self.allow = {}          # (a, b) -> whether it was met
        self.files = {}          # room -> its entries in order


def read_map(path):
    text = open(path).read()
    if BEGIN not in text or END not in text:
        sys.exit("%s: no layer map (%s ... %s)" % (path, BEGIN, END))
    block = text[text.index(BEGIN) + len(BEGIN): text.index(END)]
    m, room, problems = Map(), None, []
    for n, line in enumerate(block.splitlines()):
        if not line.strip() or line.startswith("```"):
            continue
        a = ALLOW_LINE.match(line)
        if a:
            m.allow[(a.group(1), a.group(2))] = False
            continue
        r = ROOM_LINE.match(line)
        if r and not line[0].isspace():
            room = r.group(1)
            m.rooms.append(room)
            m.files[room] = []
            if r.group(2):
                m.libc_only.add(room)
            continue
        if room is None:
            problems.append("map: '%s' before the first room" % line.strip())
            continue
        if LIBC_LINE.match(line):
            m.libc.update(room + "/" + f for f in m.files[room])
            continue
        e = ENTRY_LINE.match(line)
        if e:
            name = room + "/" + e.group(1)
            if name in m.pos:
                problems.append("map: %s listed twice" % name)
            m.pos[name] = (len(m.rooms) - 1, len(m.files[room]))
            m.files[room].append(e.group(1))
        # any other line continues the description of the entry above
    return m, problems


def is_below(m, a, b):
    """Whether b lies below a: an earlier room, or earlier in a's room."""
    return m.pos[b] < m.pos[a]


def room_of(name):
    return name.split("/", 1)[0]


def judge(m, a, b, what, problems):
    """A use of b by a (a call or an include)."""
    if a == b or b not in m.pos:
        return
    if (a, b) in m.allow:
        m.allow[(a, b)] = True
        return
    ra, rb = room_of(a), room_of(b)
    if not is_below(m, a, b):
        if ra == rb:
            problems.append("%s %s, which is above it in the room %s" % (a, what, ra))
        else:
            problems.append("%s %s, in the room %s above %s" % (a, what, rb, ra))
        return
    if ra in m.libc_only and rb != ra and rb not in m.libc_only and b not in m.libc:
        problems.append("%s %s: the room %s is [libc only] and %s is not below a "
                        "'--- libc' line" % (a, what, ra, b))


def member_file(member, m):
    """lib/<room>/<file>.c of an archive member (meson names the object
    <dirs joined by _>_<file>.c.o)."""
    base = os.path.basename(member)
    for name in m.pos:
        obj = name.replace("/", "_") + ".o"
        if base == obj or base.endswith("_" + obj):
            return name
    return None


def symbols(archives, m):
    """{room/file.c: (defined, used)} from the archives' members."""
    table = {}
    for archive in archives:
        out = subprocess.run(["nm", "-A", archive], capture_output=True, text=True,
                             check=True)
        for line in out.stdout.splitlines():
            head, _, rest = line.rpartition(":")
            name = member_file(head.split(":")[-1], m)
            parts = rest.split()
            if name is None or len(parts) < 2:
                continue
            kind, sym = parts[-2], parts[-1]
            defined, used = table.setdefault(name, (set(), set()))
            if kind in ("U", "w", "v"):
                used.add(sym)  # a weak reference is a use too
            elif kind.isupper():
                defined.add(sym)
    return table


def check_calls(m, archives, problems):
    table = symbols(archives, m)
    where = {}
    for name, (defined, _) in table.items():
        for sym in defined:
            where[sym] = name
    for name in m.pos:
        if name.endswith(".c") and name not in table:
            problems.append("%s: no object in %s" % (name, " ".join(archives)))
    for name in sorted(table):
        for sym in sorted(table[name][1]):
            if sym in where:
                judge(m, name, where[sym], "uses %s of %s" % (sym, where[sym]), problems)


def resolve_include(lib, name, inc):
    """lib-relative name of an include, or None for a public/system one."""
    here = os.path.join(room_of(name), inc)
    if os.path.exists(os.path.join(lib, here)):
        return here
    if "/" in inc and os.path.exists(os.path.join(lib, inc)):
        return inc
    return None


def check_includes(m, lib, problems):
    for name in sorted(m.pos):
        text = open(os.path.join(lib, name)).read()
        for inc in INCLUDE.findall(text):
            target = resolve_include(lib, name, inc)
            if target is None or target == "config.h":
                continue
            if target not in m.pos:
                problems.append("%s includes %s, which is not on the map" % (name, target))
                continue
            judge(m, name, target, "includes %s" % target, problems)
        if name in m.libc or room_of(name) in m.libc_only:
            for inc in SYSTEM_INCLUDE.findall(text):
                if LIBRARY_HEADERS.match(inc):
                    problems.append("%s includes <%s>, but needs the C library alone "
                                    "(libjptool-tool)" % (name, inc))


def check_tool_sources(m, root, problems):
    build = os.path.join(root, "lib", "meson.build")
    if not os.path.exists(build):
        return
    t = TOOL_SOURCES.search(open(build).read())
    if t is None:
        problems.append("lib/meson.build: no jpt_tool_sources")
        return
    listed = set(re.findall(r"'([\w/-]+\.c)'", t.group(1)))
    wanted = {n for n in m.pos if n.endswith(".c") and
              (n in m.libc or room_of(n) in m.libc_only)}
    for n in sorted(wanted - listed):
        problems.append("lib/meson.build: jpt_tool_sources lacks %s (libc only on the map)" % n)
    for n in sorted(listed - wanted):
        problems.append("lib/meson.build: jpt_tool_sources has %s, which the map does "
                        "not put below a '--- libc' line" % n)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root, archives = sys.argv[1], sys.argv[2:]
    lib = os.path.join(root, "lib")
    m, problems = read_map(os.path.join(root, "docs", "ARCHITECTURE.md"))

    for room in sorted(os.listdir(lib)):
        if not os.path.isdir(os.path.join(lib, room)):
            continue
        if room not in m.files:
            problems.append("lib/%s is not a room on the map" % room)
            continue
        for f in sorted(os.listdir(os.path.join(lib, room))):
            if f.endswith((".c", ".h")) and room + "/" + f not in m.pos:
                problems.append("%s/%s is not on the map" % (room, f))
    for name in sorted(m.pos):
        if not os.path.exists(os.path.join(lib, name)):
            problems.append("map: %s does not exist" % name)
    for a, b in m.allow:
        for n in (a, b):
            if n not in m.pos:
                problems.append("map: allow %s -> %s names %s, not on the map" % (a, b, n))
    if problems:
        for p in problems:
            print("FAIL " + p)
        return 1

    check_includes(m, lib, problems)
    if archives:
        check_calls(m, archives, problems)
        check_tool_sources(m, root, problems)
        for (a, b), met in sorted(m.allow.items()):
            if not met:
                problems.append("allow %s -> %s: no such call or include any more; "
                                "remove the exception from the map" % (a, b))

    for p in problems:
        print("FAIL " + p)
    print("%d rooms, %d files, %d exceptions checked (%s), %d problems"
          % (len(m.rooms), len(m.pos), len(m.allow),
             "calls and includes" if archives else "includes only", len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
