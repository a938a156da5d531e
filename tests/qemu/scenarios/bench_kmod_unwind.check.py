#!/usr/bin/env python3
"""Host side of bench_kmod_unwind: the RESULTS block (handler cost of
table walks against frame-pointer walks; bytes per sample and slowdown
against perf -g and perf --call-graph dwarf), with the issue's targets.

Fails (exit 1) only when a measurement is missing, never on the figures.
"""
import json
import os
import re
import sys

from bench_common import median, reader

res = sys.argv[1]
kver = os.environ.get("BENCH_KVER", "?")
try:
    host = json.load(open(os.environ["BENCH_HOST_JSON"]))
except (KeyError, OSError, ValueError):
    host = {}
missing = []


read = reader(res, missing)


def frames(name):
    """Frames per sample in a folded export (the comm is not a frame)."""
    n = f = 0
    for line in read(name).splitlines():
        stack, _, c = line.rpartition(" ")
        if stack and c.isdigit():
            n += int(c)
            f += int(c) * (stack.count(";"))
    return (f / n if n else 0.0), n


shift = host.get("icount_shift")
out = ["==== RESULTS bench_kmod_unwind %s: TCG, %s" % (
    kver, "icount shift=%s: guest ns = instructions x %d" % (shift, 2 ** shift)
    if shift is not None else "wall clock")]

# (a) handler cost: "cpu delta_ns handled" per call of our handler; CPU 0
# is sampled, the job runs there.  Calls that took no sample are tens of
# ns: the median is that of the job's samples.
cost = {}
out.append("  handler cost per sample on CPU 0, nmi:nmi_handler, job 40 frames deep:")
for name, what in (("fp", "deep, frame-pointer walks (unwind_tables=0)"),
                   ("table", "deep, table walks"),
                   ("table_nofp", "deep_nofp, table walks"),
                   ("fp2", "deep, frame-pointer walks again")):
    v = [int(f[1]) for f in (l.split() for l in read("cost_%s.ns" % name).splitlines())
         if len(f) >= 3 and f[0] == "0" and f[2] == "1"]
    if not v:
        missing.append("handler calls in cost_%s.ns" % name)
        continue
    fr, n = frames("cost_%s.folded" % name)
    w = read("cost_%s.walks" % name).split()
    walks = int(w[2]) - int(w[1]) if len(w) == 3 and w[1].isdigit() and w[2].isdigit() else "?"
    if name.startswith("table") and walks == 0:
        # the job's mapping set never took effect: no table walk measured
        missing.append("table walks in the %s run" % name)
    else:
        cost[name] = median(v)
    out.append("    %-11s %-44s n %5d median %6d mean %6.0f  user frames/sample %.1f%s" % (
        name, what, len(v), median(v), sum(v) / len(v), fr,
        "  table walks meanwhile %s" % walks))
fp = [cost[k] for k in ("fp", "fp2") if k in cost]
if fp:
    base = median(fp)
    for k in ("table", "table_nofp"):
        if k in cost:
            out.append("    ratio %s / fp: %.2f  (target <= 2.00)" % (k, cost[k] / base))

# (b) "run TOOL ROUND SPAN_NS [samples N bytes B]"
runs, notes, nmis = {}, {}, {}
for line in read("runs.txt").splitlines():
    f = line.split()
    if len(f) >= 4 and f[0] == "run":
        runs.setdefault(f[1], []).append(int(f[3]))
        m = re.search(r"samples (\d+) bytes (\d+)", line)
        if m:
            notes.setdefault(f[1], []).append((int(m.group(1)), int(m.group(2))))
        m = re.search(r"total: samples (\d+)", line)
        if m:	# ringcheck: every CPU's, the idle one's too
            nmis.setdefault(f[1], []).append(int(m.group(1)))
# attrib.txt, "== TOOL ROUND" then the job's parent's CPU ns (the tool's
# reader) and /proc/interrupts' NMI and LOC lines, before and after.
reader = {}
for blk in read("attrib.txt").split("== ")[1:]:
    lines = blk.splitlines()
    head = lines[0].split()
    cpu = [l.strip() for l in lines[1:] if l.strip().isdigit()]
    if len(head) == 2 and len(cpu) == 2:
        reader.setdefault(head[0], []).append(int(cpu[1]) - int(cpu[0]))
tools = ("base", "nmiprof", "raw", "perf_g", "perf_dwarf")
label = {"base": "alone", "nmiprof": "nmiprof record (kmod, tables)",
         "raw": "module, ringcheck reader (no tables)",
         "perf_g": "perf record -g", "perf_dwarf": "perf record --call-graph dwarf"}
for t in tools:
    if not runs.get(t):
        missing.append("runs of " + t)
# The ring record: the sample's fixed part (its format text) and 8 bytes
# a frame (the nmiprof record runs' folded stacks, kernel and user).
fixed = 0
for m in re.finditer(r"offset:(\d+);\s*size:(\d+);", read("sample_format.txt")):
    fixed = max(fixed, int(m.group(1)) + int(m.group(2)))
if all(runs.get(t) for t in tools):
    b = median(runs["base"])
    out.append("  fixed job (deep_nofp 40 on CPU 0), -F 1000, %d interleaved rounds:" % len(runs["base"]))
    slow, bps = {}, {}
    for t in tools:
        m = median(runs[t])
        line = "    %-32s span median %.4f s (%s)" % (
            label[t], m / 1e9, " ".join("%.4f" % (x / 1e9) for x in runs[t]))
        if t != "base":
            slow[t] = 100.0 * (m - b) / b
            line += "  slowdown %+.2f%%" % slow[t]
        if nmis.get(t):
            line += "  samples of both CPUs %d" % median(nmis[t])
        # ringcheck's -r runs the job under an sh -c: not its reader
        if reader.get(t) and t in ("nmiprof", "perf_g", "perf_dwarf"):
            line += "  reader CPU %.1fM ns" % (median(reader[t]) / 1e6)
        if notes.get(t):
            n = median([s for s, _ in notes[t]])
            by = median([x for _, x in notes[t]])
            bps[t] = by / n if n else 0
            line += "  samples %d, file %d B = %.0f B/sample" % (n, by, bps[t])
        out.append(line)
    fr = [frames("np.%d.folded" % r)[0] for r in range(1, len(runs["nmiprof"]) + 1)]
    ring = None
    if fixed and fr:
        ring = fixed + 8 * median(fr)
        out.append("    nmiprof ring record: %d B fixed + 8 B x %.1f frames = %.0f B/sample"
                   % (fixed, median(fr), ring))
    if bps.get("perf_dwarf"):
        d = bps["perf_dwarf"]
        out.append("    bytes/sample vs perf dwarf: file %.4f%s  (target <= 0.05); perf -g %.3f"
                   % (bps["nmiprof"] / d, ", ring %.4f" % (ring / d) if ring else "",
                      bps["perf_g"] / d))
    if slow.get("perf_dwarf", 0) > 0:
        out.append("    slowdown vs perf dwarf: %.3f  (target <= 0.33); perf -g %.3f;"
                   " the module's own sampling (ringcheck, leaf-only) %.3f"
                   % (slow["nmiprof"] / slow["perf_dwarf"], slow["perf_g"] / slow["perf_dwarf"],
                      slow["raw"] / slow["perf_dwarf"]))
out.append("==== END")
print("\n".join(out))
if missing:
    print("MISSING: " + ", ".join(missing))
    sys.exit(1)
