#!/usr/bin/env python3
"""Maps the calls trace.c recorded to their files and counts those that
cross from one file to another.

  count.py registry <traced program> <trace>
      the calls between lib/registry's files (issue 8's closing note);
      the layer order is base.h's map
  count.py lib <traced program> <trace of N> <trace of 1> <N>
      the calls between any two files of lib/ for one request: the run of
      N requests less the run of one, divided by N - 1 (issue 17)"""
import collections
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def registry_order():
    """The registry's .c files bottom first, from the repository's map."""
    spec = importlib.util.spec_from_file_location(
        "check_layers", os.path.join(HERE, "..", "..", "test", "check-layers.py"))
    check_layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_layers)
    layer_map, _ = check_layers.read_map(os.path.join(HERE, "..", "..", "docs",
                                                       "ARCHITECTURE.md"))
    return [f[:-2] for f in layer_map.files["registry"] if f.endswith(".c")]


def file_of(exe, traces):
    """Each address of the traces -> its source file under lib/, or None."""
    addrs = sorted({a for t in traces for line in t for a in line})
    out = subprocess.run(["addr2line", "-e", exe] + addrs, capture_output=True,
                         text=True).stdout.split("\n")
    where = {}
    for a, o in zip(addrs, out):
        p = o.split(":")[0]
        where[a] = p.split("/lib/", 1)[1] if "/lib/" in p else None
    return where


def hops(trace, where, room=None):
    counter = collections.Counter()
    for fn, site in trace:
        a, b = where.get(site), where.get(fn)
        if room is not None:
            a = a[len(room):] if a is not None and a.startswith(room) else None
            b = b[len(room):] if b is not None and b.startswith(room) else None
        if a and b and a != b:
            counter[(a, b)] += 1
    return counter


def read(path):
    return [line.split() for line in open(path)]


def registry(exe, path):
    trace = read(path)
    h = hops(trace, file_of(exe, [trace]), "registry/")
    print("calls between registry files:", sum(h.values()))
    for (a, b), n in h.most_common(12):
        print("  %3d %s -> %s" % (n, a, b))
    order = registry_order()

    def rank(f):
        n = f.replace(".c", "").replace(".h", "")
        return order.index(n) if n in order else -1
    up = [(a, b, n) for (a, b), n in h.items() if rank(b) > rank(a) and rank(a) >= 0]
    back = sum(n for (a, b), n in h.items() if (b, a) in h)
    print("distinct file pairs:", len(h), "; calls on pairs that also go back the other way:",
          back)
    print("upward (by the new layer order):", sum(n for a, b, n in up), up)


def lib(exe, path_n, path_1, n):
    many, one = read(path_n), read(path_1)
    where = file_of(exe, [many, one])
    h_many, h_one = hops(many, where), hops(one, where)
    per = {k: (h_many[k] - h_one.get(k, 0)) / (n - 1) for k in h_many}
    per = {k: v for k, v in per.items() if v >= 0.05}
    calls = (len(many) - len(one)) / (n - 1)
    files = {f for k in per for f in k}
    print("calls into lib/ per request: %.1f; between files: %.1f, over %d file pairs "
          "(%d files)" % (calls, sum(per.values()), len(per), len(files)))
    rooms = collections.Counter()
    for (a, b), v in per.items():
        ra, rb = a.split("/")[0], b.split("/")[0]
        if ra != rb:
            rooms[(ra, rb)] += v
    print("  between rooms: %.1f: %s" % (sum(rooms.values()), ", ".join(
        "%s->%s %.1f" % (a, b, v) for (a, b), v in sorted(rooms.items(), key=lambda x: -x[1]))))
    for (a, b), v in sorted(per.items(), key=lambda x: -x[1]):
        print("  %6.1f %s -> %s" % (v, a, b))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "registry":
        registry(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 6 and sys.argv[1] == "lib":
        lib(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit(__doc__)
