#!/usr/bin/env python3
"""Host side of bench_kmod: turn the guest's raw figures into the RESULTS
block (medians, spreads, slowdowns, ratios, handler-cost percentiles).

Fails (exit 1) only when a measurement is missing, never on the figures:
this is a benchmark, not a timed assertion.
"""
import json
import os
import re
import sys

from bench_common import median, reader

res = sys.argv[1]
kver = os.environ.get("BENCH_KVER", "?")
host = {}
try:
    host = json.load(open(os.environ["BENCH_HOST_JSON"]))
except (KeyError, OSError, ValueError):
    pass
missing = []
scenario = host.get("scenario", "bench_kmod")
slowdown = scenario == "bench_kmod"  # bench_kmod_cost: handler cost only


read = reader(res, missing)


def pct(v, p):
    """Nearest-rank percentile."""
    s = sorted(v)
    return s[min(len(s) - 1, max(0, -(-p * len(s) // 100) - 1))]


shift = host.get("icount_shift")
clock = ("icount shift=%d: guest ns = instructions x %d, host load does not enter"
         % (shift, 2 ** shift)) if shift is not None else "wall clock (MTTCG)"
load = host.get("host_loadavg", "?")
guest = read("guest.txt").splitlines()
out = ["==== RESULTS %s %s: TCG, %s" % (scenario, kver, clock),
       "     host load (1/5/15 min) at start %s, end %s; guest %s" % (
           load, host.get("host_loadavg_end", "?"), guest[0] if guest else "?")]

# (b) slowdown: "run TOOL ROUND SECONDS [note]" per run; the note holds
# the samples taken ("total: samples N", "N samples").
runs = {}
by_round = {}
nsamples = {}
for line in (read("runs.txt") if slowdown else "").splitlines():
    f = line.split()
    if len(f) >= 4 and f[0] == "run":
        runs.setdefault(f[1], []).append(float(f[3]))
        by_round.setdefault(int(f[2]), {})[f[1]] = float(f[3])
        m = re.search(r"samples (\d+)|(\d+) samples", line)
        if m:
            nsamples.setdefault(f[1], []).append(int(m.group(1) or m.group(2)))
tools = ["base", "nmiprof", "nmiprof_raw", "nmiprof_ustack", "nmiprof_nostack",
         "perf_nog", "perf"]
label = {"base": "alone", "nmiprof": "nmiprof record -a (kmod)",
         "nmiprof_raw": "nmiprof.ko + raw ring drain",
         "nmiprof_ustack": "  same, user stacks only",
         "nmiprof_nostack": "  same, no stacks (floor)",
         "perf_nog": "perf record -a (cpu-clock)",
         "perf": "perf record -a -g (cpu-clock)"}
for t in tools if slowdown else []:
    if not runs.get(t):
        missing.append("runs of " + t)
if slowdown and all(runs.get(t) for t in tools):
    b = median(runs["base"])
    out.append("  slowdown of a fixed job (deep on each vCPU; span from first start to last "
               "end), 1 kHz per CPU, %d interleaved rounds:" % len(runs["base"]))
    slow = {}
    for t in tools:
        v = runs[t]
        m = median(v)
        slow[t] = 100 * (m - b) / b
        # per-round slowdowns against that round's own baseline: the spread
        paired = [100 * (r[t] - r["base"]) / r["base"] for r in by_round.values()
                  if t in r and "base" in r]
        out.append("    %-30s median %.4f s  (min %.4f max %.4f, spread %.2f%%)%s" % (
            label[t], m, min(v), max(v), 100 * (max(v) - min(v)) / m,
            "" if t == "base" else "  slowdown %+.2f%% (per round %s)" % (
                slow[t], " ".join("%+.2f" % p for p in paired))))
    for t in ("nmiprof", "nmiprof_raw"):
        r = "%.2f" % (slow[t] / slow["perf"]) if slow["perf"] > 0 else "n/a"
        out.append("    ratio %s/perf slowdown: %s  (target <= 0.50)" % (t, r))
    # Under icount the extra span is the extra instructions of both vCPUs,
    # so this is each sample's whole cost: timer, IPI or interrupt, handler,
    # and the consumer's share.  nmiprof record counts the samples of its
    # whole run (a little before the job starts), so its figure is low.
    out.append("  instructions per sample, all in (extra span / samples taken):")
    for t in tools[1:]:
        n = nsamples.get(t)
        if not n or not median(n):
            out.append("    %-30s ? (no sample count)" % label[t])
            continue
        per = (median(runs[t]) - b) * 1e9 / median(n)
        out.append("    %-30s %6.0f  (median %d samples)%s" % (
            label[t], per, median(n),
            "  = %.2f x perf -g" % (per / ((median(runs["perf"]) - b) * 1e9 /
                                         median(nsamples["perf"])))
            if nsamples.get("perf") and t != "perf" else ""))
    # Where the raw runs' NMIs landed: user or kernel mode, stack depths.
    for line in read("nmiprof_raw.1.txt").splitlines():
        m = re.match(r"^cpu (\d+): samples (\d+) .*avg kframes ([\d.]+) avg uframes "
                     r"([\d.]+) user (\d+)", line)
        if m:
            out.append("    raw run 1 cpu %s: %s samples, %s in user mode; avg kernel frames "
                       "%s, user frames %s" % m.group(1, 2, 5, 3, 4))
        elif re.match(r"^cpu \d+: kernel-mode samples", line):
            out.append("    raw run 1 " + line)

# (a) handler cost.  The module: "cpu N: samples ... cost ns min A avg B max
# C p50< D p99< E" and "cpu N: hist h0 h1 ..." (bucket b: ns < 2^(b+7)).
COST = re.compile(r"^cpu (\d+): samples (\d+) .*avg kframes ([\d.]+) avg uframes ([\d.]+)"
                  r".*cost ns min (\d+) avg (\d+) max (\d+)")


def bucket(hist, q):
    n = sum(hist)
    seen = 0
    for b, c in enumerate(hist):
        seen += c
        if seen * 100 >= n * q:
            return "%d..%d" % (0 if b == 0 else 1 << (b + 6), 1 << (b + 7))
    return "?"


def module_cost(name):
    rows = {}
    hists = {}
    for line in read(name).splitlines():
        m = COST.match(line)
        if m:
            rows[int(m.group(1))] = m.groups()[1:]
        elif re.match(r"^cpu \d+: hist", line):
            c = int(line.split()[1].rstrip(":"))
            hists[c] = [int(x) for x in line.split()[3:]]
    return rows, hists


ns = {}
for line in read("cost_trace.ns").splitlines():
    f = line.split()  # cpu delta_ns handled
    if len(f) >= 2:
        ns.setdefault(int(f[0]), []).append(int(f[1]))
if not ns:
    missing.append("nmi_handler tracepoint events")
what = {0: "user stack, deep on CPU 0", 1: "kernel stack, deepstack kthread on CPU 1"}
unit = "ns (TCG%s)" % (", icount" if shift is not None else "")
out.append("  handler cost per sample, stacks capped at 32 frames, %s:" % unit)
sampled = {}
for name, title in (("cost_module.txt", "module stats, tracepoint off"),
                    ("cost_trace.txt", "module stats, tracepoint on")):
    rows, hists = module_cost(name)
    if name == "cost_trace.txt":
        sampled = {c: int(r[0]) for c, r in rows.items()}
    if not rows:
        missing.append("cost lines in " + name)
    for c in sorted(rows):
        n, kf, uf, mn, avg, mx = rows[c]
        h = hists.get(c, [])
        out.append("    cpu %d %-29s n %5s kframes %4s uframes %4s: min %6s avg %6s max %8s"
                   "  p50 in %s  p99 in %s" % (c, title, n, kf, uf, mn, avg, mx,
                                               bucket(h, 50) if h else "?",
                                               bucket(h, 99) if h else "?"))
for line in read("cost_module.txt").splitlines():
    m = re.match(r"^cpu (\d+): samples (\d+) .* user (\d+) ", line)
    if m:
        out.append("    cpu %s tracepoint off: %s of %s samples in user mode" % m.group(1, 3, 2))
    elif re.match(r"^cpu \d+: kernel-mode samples", line):
        out.append("    " + line)
# The tracepoint times every call of our NMI_LOCAL handler, including the
# ones that take no sample (an NMI of another user, or one owed after two
# IPIs were claimed at once: tens of ns).  The module counts the calls
# that sampled; those are the slowest calls, so its count of them is
# taken from the top.
for c in sorted(ns):
    v = sorted(ns[c])
    k = min(sampled.get(c, len(v)), len(v))
    top, rest = v[len(v) - k:], v[:len(v) - k]
    if top:
        out.append("    cpu %d nmi:nmi_handler(np_ipi_nmi) n %5d: min %6d p50 %6d p99 %8d max %8d"
                   "  (%s)" % (c, len(top), min(top), median(top), pct(top, 99), max(top),
                               what.get(c, "")))
    if rest:
        out.append("    cpu %d   + %d calls without a sample: max %d ns" % (c, len(rest), max(rest)))
info = read("cost_trace.ns.info").strip()
if info:
    out.append("    tracepoint ring: %s" % info)
out.append("==== END RESULTS %s %s" % (scenario, kver))
print("\n".join(out))
with open(os.path.join(res, "RESULTS.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
if missing:
    print(scenario + ": measurement missing: " + ", ".join(sorted(set(missing))))
    sys.exit(1)
