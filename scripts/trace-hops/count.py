#!/usr/bin/env python3
"""Maps the calls trace.c recorded to their files and counts those that
cross from one file of lib/registry to another; the layer order is the
map of docs/ARCHITECTURE.md (read as test/check-layers.py reads it).
Usage: count.py <traced program> <trace file>"""
import subprocess,sys,collections,os,importlib.util
here=os.path.dirname(os.path.abspath(__file__))
spec=importlib.util.spec_from_file_location("check_layers",os.path.join(here,"..","..","test","check-layers.py"))
check_layers=importlib.util.module_from_spec(spec); spec.loader.exec_module(check_layers)
layer_map,_=check_layers.read_map(os.path.join(here,"..","..","docs","ARCHITECTURE.md"))
exe, trace = sys.argv[1], sys.argv[2]
lines=[l.split() for l in open(trace)]
addrs=sorted({a for l in lines for a in l})
out=subprocess.run(["addr2line","-e",exe]+addrs,capture_output=True,text=True).stdout.split("\n")
where={a:o.split(":")[0] for a,o in zip(addrs,out)}
def f(a):
    p=where.get(a,"?")
    return p.split("lib/registry/")[1] if "lib/registry/" in p else None
hops=collections.Counter(); total=0
for fn,site in lines:
    a,b=f(site),f(fn)
    if a and b and a!=b:
        total+=1; hops[(a,b)]+=1
print("calls between registry files:",total)
for (a,b),n in hops.most_common(12): print("  %3d %s -> %s"%(n,a,b))
order=[f[:-2] for f in layer_map.files["registry"] if f.endswith(".c")]
def rank(f):
    n=f.replace(".c","").replace(".h","")
    return order.index(n) if n in order else -1
up=[(a,b,n) for (a,b),n in hops.items() if rank(b)>rank(a) and rank(a)>=0]
pairs=set(hops)
back=sum(n for (a,b),n in hops.items() if (b,a) in pairs)
print("distinct file pairs:",len(hops),"; calls on pairs that also go back the other way:",back)
print("upward (by the new layer order):",sum(n for a,b,n in up), up)
