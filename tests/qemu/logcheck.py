#!/usr/bin/env python3
"""Kernel log checker of the QEMU bench.

A kernel-side test fails if the guest's kernel log shows a splat (BUG,
WARNING, Oops, GPF, lockdep, RCU stall, soft/hard lockup, hung task, panic)
or the kernel is tainted by anything but O (out-of-tree module) and E
(unsigned module). Some lines are only worth recording (an NMI handler that
took too long, unknown-reason NMIs): they are reported, never failures.

  logcheck.py [--tainted N] [--allow REGEX]... LOG...   exit 1 on a problem
  logcheck.py --self-test
"""
import argparse
import re
import sys

# (name, regex) - any match is a failure.
SPLATS = [
    ("BUG", r"\bBUG: "),
    ("kernel BUG", r"kernel BUG at "),
    ("WARNING", r"\bWARNING: "),
    ("Oops", r"\bOops\b"),
    ("general protection fault", r"general protection fault"),
    ("double fault", r"double fault"),
    ("unable to handle page fault", r"(BUG: unable to handle|Unable to handle kernel)"),
    ("lockdep: circular locking", r"possible circular locking"),
    ("lockdep: recursive locking", r"possible recursive locking"),
    ("lockdep: inconsistent lock state", r"inconsistent lock state"),
    ("lockdep: deadlock", r"DEADLOCK"),
    ("lockdep: bad unlock", r"bad unlock balance"),
    ("RCU stall", r"rcu: INFO|RCU Stall|self-detected stall|detected stalls on CPUs"),
    ("soft lockup", r"soft lockup"),
    ("hard lockup", r"hard LOCKUP"),
    ("hung task", r"INFO: task .* blocked for more than"),
    ("scheduling while atomic", r"scheduling while atomic"),
    ("sleeping in atomic context", r"sleeping function called from invalid context"),
    ("UBSAN", r"UBSAN:"),
    ("KASAN", r"KASAN:"),
    ("stack corruption", r"stack-protector|stack is corrupted"),
    ("panic", r"Kernel panic - not syncing"),
]

# Recorded in the test output, never a failure by themselves.
NOTES = [
    ("slow NMI handler", r"INFO: NMI handler \(.*\) took too long"),
    ("unknown NMI", r"Uhhuh\. NMI received for unknown reason"),
    ("NMI: dazed", r"Dazed and confused"),
]

# /proc/sys/kernel/tainted bits (include/linux/panic.h).
TAINT_FLAGS = "PFSRMBUDAWCIOEL KXTNJ"
TAINT_NAMES = [
    "proprietary module", "forced module load", "SMP unsafe", "forced rmmod",
    "machine check", "bad page", "user request", "died recently (oops)",
    "ACPI table overridden", "warning", "staging driver", "firmware workaround",
    "out-of-tree module", "unsigned module", "soft lockup", "live patched",
    "auxiliary", "randstruct", "test module", "fwctl",
]
TAINT_ALLOWED = {12, 13}  # O, E

_SPLAT_RE = [(n, re.compile(r)) for n, r in SPLATS]
_NOTE_RE = [(n, re.compile(r)) for n, r in NOTES]


def decode_taint(value):
    """[(bit, letter, name)] of the bits set in value."""
    out = []
    for bit in range(max(value.bit_length(), 0)):
        if value >> bit & 1:
            letter = TAINT_FLAGS[bit] if bit < len(TAINT_FLAGS) else "?"
            name = TAINT_NAMES[bit] if bit < len(TAINT_NAMES) else "unknown"
            out.append((bit, letter.strip() or "?", name))
    return out


def check_taint(value):
    """A list of problems (strings) for a taint value."""
    return ["tainted: %s (%s, bit %d)" % (letter, name, bit)
            for bit, letter, name in decode_taint(value)
            if bit not in TAINT_ALLOWED]


def check_text(text, allow=()):
    """(problems, notes): lists of "kind: line" strings for one log."""
    allow_re = [re.compile(a) for a in allow]
    problems, notes = [], []
    for line in text.splitlines():
        if any(a.search(line) for a in allow_re):
            continue
        for name, rx in _SPLAT_RE:
            if rx.search(line):
                problems.append("%s: %s" % (name, line.strip()))
                break
        else:
            for name, rx in _NOTE_RE:
                if rx.search(line):
                    notes.append("%s: %s" % (name, line.strip()))
                    break
    return problems, notes

# TCG emulates cross-vCPU code patching loosely: a vCPU can still execute
# the int3 that text_poke_bp() placed after the kernel has finished the
# patch and forgotten it, so the int3 handler finds no patch in progress
# and oopses.  Real CPUs, serialized by text_poke_bp()'s sync IPIs, cannot.
# It shows as an int3 oops ("Oops: int3: 0000 [#1]" on 6.12, "int3: 0000
# [#1]" on 6.1) whose Code: line no longer holds an int3 (0xcc) at the
# trapping byte; seen in about 1 of 30 boots, some before any module
# loads.  An int3 still in the code (a stray breakpoint, a kprobe bug) is
# not this.  Other CPUs' lines may come between the oops and its Code:
# line; with printk's caller ids ("[C2]", "[T1]") only the oops's own count.
INT3_OOPS = re.compile(r"\bint3: [0-9a-f]{4} \[#\d+\]")
OOPS_CODE = re.compile(r"\bCode: [0-9a-f ]*<([0-9a-f]{2})>")
CALLER_ID = re.compile(r"^\s*\[[ 0-9.]+\]\[ *([CT]\d+)\]")
OOPS_LINES = 60


def tcg_patch_artifact(text):
    """True if the first int3 oops in text is the TCG artifact above."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not INT3_OOPS.search(line):
            continue
        who = CALLER_ID.match(line)
        for l in lines[i + 1:i + 1 + OOPS_LINES]:
            if who:
                c = CALLER_ID.match(l)
                if c and c.group(1) != who.group(1):
                    continue
            m = OOPS_CODE.search(l)
            if m:
                return m.group(1) != "cc"
        return False
    return False


def check(texts, tainted=None, allow=()):
    """Check several logs of one run (e.g. serial console and dmesg, which
    overlap): the union of their findings, each distinct line once."""
    problems, notes = [], []
    for text in texts:
        p, n = check_text(text, allow)
        problems += [x for x in p if x not in problems]
        notes += [x for x in n if x not in notes]
    if tainted is not None:
        problems += check_taint(tainted)
    return problems, notes


def self_test():
    ok = True

    def expect(cond, what):
        nonlocal ok
        if not cond:
            print("FAIL:", what)
            ok = False

    clean = "[    1.0] nmiprof: loaded\n[    1.1] random: crng init done\n"
    p, n = check_text(clean)
    expect(not p and not n, "clean log is clean")
    for line in [
        "[    3.06] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI",
        "[    2.00] WARNING: CPU: 1 PID: 140 at x.c:5 f+0x1/0x2 [m]",
        "[    2.00] BUG: kernel NULL pointer dereference, address: 0000",
        "[    2.00] general protection fault, probably for non-canonical address",
        "[    2.00] WARNING: possible circular locking dependency detected",
        "[    2.00] rcu: INFO: rcu_preempt self-detected stall on CPU",
        "[    2.00] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!",
        "[    2.00] Kernel panic - not syncing: Fatal exception in interrupt",
        "[    2.00] INFO: task insmod:77 blocked for more than 120 seconds.",
    ]:
        p, _ = check_text(clean + line + "\n")
        expect(len(p) == 1, "splat detected: " + line)
        p, _ = check_text(clean + line + "\n", allow=[re.escape(line[12:])])
        expect(not p, "splat allowed: " + line)
    p, n = check_text("[ 5.0] INFO: NMI handler (nmiprof_nmi) took too long to run: 1.2 msecs\n")
    expect(not p and len(n) == 1, "slow NMI handler is a note")
    expect(check_taint(0) == [], "taint 0")
    expect(check_taint(1 << 12 | 1 << 13) == [], "taint OE allowed")
    t = check_taint(1 << 12 | 1 << 9)
    expect(len(t) == 1 and "W" in t[0], "taint W fails: %s" % t)
    p, _ = check(["[ 1.0] WARNING: x\n", "[ 1.0] WARNING: x\n"])
    expect(len(p) == 1, "same line in two logs counted once")
    other = "".join("[ 4.%02d][C1] other CPU line %d\n" % (i, i) for i in range(12))
    oops612 = ("[ 4.00][C2] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n"
               "[ 4.00][C2] CPU: 2 UID: 0 PID: 0 Comm: swapper/2\n" + other +
               "[ 4.00][C2] RIP: 0010:sched_clock_cpu+0x10/0x1a0\n"
               "[ 4.00][C1] Code: 90 90 <cc> 90\n"
               "[ 4.00][C2] Code: 0f 1f 44 00 00 eb <1b> 48 8b\n")
    expect(tcg_patch_artifact(oops612), "6.12 int3 oops, patched byte, lines between")
    expect(not tcg_patch_artifact(oops612.replace("eb <1b>", "eb <cc>")),
           "6.12 int3 oops with the int3 still there")
    oops61 = ("[ 4.00] int3: 0000 [#1] PREEMPT SMP NOPTI\n"
              "[ 4.00] CPU: 2 PID: 0 Comm: swapper/2\n"
              "[ 4.00] RIP: 0010:sched_clock_cpu+0x10/0x1a0\n"
              "[ 4.00] Code: 0f 1f 44 00 00 eb <1b> 48 8b\n")
    expect(tcg_patch_artifact(oops61), "6.1 int3 oops, patched byte")
    expect(not tcg_patch_artifact(clean + "[ 4.0] Code: 0f <1b>\n"), "no oops")
    print("logcheck self test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="*")
    ap.add_argument("--tainted", type=lambda s: int(s, 0))
    ap.add_argument("--allow", action="append", default=[])
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    texts = [open(f, errors="replace").read() for f in a.logs]
    problems, notes = check(texts, a.tainted, a.allow)
    for x in notes:
        print("note:", x)
    for x in problems:
        print("PROBLEM:", x)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
