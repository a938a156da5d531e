#!/usr/bin/env python3
"""Host-side checks of kmod_backend.sh's outputs (argv[1]: results dir).

The reference for the hot_a/hot_b split is what tests/progs/hot measured
itself with its thread CPU clock (TCG's vCPUs are not evenly fast), the
nominal 75/25 when it printed nothing; tolerance TOL points.
"""
import os
import re
import sys

TOL = 8.0		# points of hot_a's share of hot_a + hot_b
SPIN_SECS, SPIN_WINDOW = 4, 8
# CPU 1's samples while it spins come from CPU 0's timer.  Under TCG the
# spinning vCPU burns a host core and CPU 0's timer then fires late, so
# the spin gets fewer samples than its 50% of the time: 18-30% measured
# on a loaded 2-core host.  The exact per-window share is asserted by
# kmod_sample (ringcheck -x); here the spin must be clearly there.
SPIN_MIN, SPIN_MAX = 10.0, 60.0

# The Pid column is there when the sort keys have pid: top's default
# (comm,pid,dso,sym) has it, report's (comm,dso,sym) hasn't.
ROW = re.compile(r'^\s*([\d.]+)%\s+(\d+)\s+(\d+)\s+(\S+)\s+(?:(\d+)\s+)?(.+?)\s+'
                 r'\[(.)\]\s+(.+?)\s*$')
failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg)


def ok(msg):
    print('ok: ' + msg)


def read(res, name):
    try:
        with open(os.path.join(res, name), errors='replace') as f:
            return f.read()
    except OSError as e:
        fail(f'{name}: {e.strerror}')
        return ''


def rows(text):
    """(self, comm, dso, kind, sym) of every table row."""
    out = []
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out.append((int(m.group(2)), m.group(4), m.group(6).strip(),
                        m.group(7), m.group(8)))
    return out


def self_of(rs, sym, kind, comm=None):
    return sum(r[0] for r in rs if r[4] == sym and r[3] == kind and
               (comm is None or r[1] == comm))


def hot_reference(text):
    m = re.search(r'hot_a ([\d.]+) hot_b ([\d.]+) total', text)
    return 100 * float(m.group(1)) if m else 75.0


def check_split(name, text, ref):
    rs = rows(text)
    a, b = self_of(rs, 'hot_a', '.'), self_of(rs, 'hot_b', '.')
    if a + b < 200:
        fail(f'{name}: only {a + b} samples in [.] hot_a/hot_b')
        return
    share = 100.0 * a / (a + b)
    msg = (f'{name}: hot_a {a} hot_b {b} samples: hot_a {share:.1f}% '
           f'of the two (hot measured {ref:.1f}%)')
    if abs(share - ref) > TOL:
        fail(msg + f', off by more than {TOL} points')
    else:
        ok(msg)
    hot = sum(r[0] for r in rs if r[1] == 'hot')
    m = re.search(r'shown: (\d+)', text)
    if m and hot and (a + b) < 0.6 * hot:
        fail(f'{name}: hot_a+hot_b only {a + b} of hot\'s {hot} samples')


def check_header(name, text):
    m = re.search(r'backend: (\S+) \((\S+)\).*samples: (\d+)\s+lost: (\d+)', text)
    if not m:
        fail(f'{name}: no "backend: X (source) ... samples: N lost: N" header')
        return
    if m.group(1) != 'kmod' or m.group(2) not in ('ipi', 'pmu'):
        fail(f'{name}: backend {m.group(1)} ({m.group(2)}), expected kmod (ipi|pmu)')
    else:
        ok(f'{name}: backend {m.group(1)} ({m.group(2)}), '
           f'{m.group(3)} samples, lost {m.group(4)} shown')


def main():
    res = sys.argv[1]

    top = read(res, 'top_pid.txt')
    if 'top rc 0' not in read(res, 'top_pid.err'):
        fail('nmiprof top --backend kmod failed: ' + read(res, 'top_pid.err').strip())
    check_header('top', top)
    check_split('top -p', top, hot_reference(read(res, 'hot_top.txt')))

    rec = read(res, 'record.txt')
    report = read(res, 'report.txt')
    if 'record rc 0' not in rec or 'report rc 0' not in report:
        fail('nmiprof record/report failed')
    m = re.search(r'(\d+) samples, (\d+) lost', rec)
    if m:
        ok(f'record: {m.group(1)} samples, {m.group(2)} lost')
    else:
        fail('record: no "N samples, N lost" line')
    if not re.search(r'samples: \d+\s+lost: \d+', report):
        fail('report: no "samples: N lost: N" line')
    check_split('record -- hot', report, hot_reference(rec))

    spin = read(res, 'report_spin.txt')
    if 'record rc 0' not in read(res, 'record_spin.txt') or 'report rc 0' not in spin:
        fail('nmiprof record -a / report --cpu 1 failed')
    rs = rows(spin)
    total = re.search(r'shown: (\d+) samples', spin)
    total = int(total.group(1)) if total else sum(r[0] for r in rs)
    n = self_of(rs, 'nmiprof_spin_loop', 'k', 'nmiprof_spin/1')
    kthread = sum(r[0] for r in rs if r[1] == 'nmiprof_spin/1')
    exp = 100.0 * SPIN_SECS / SPIN_WINDOW
    share = 100.0 * n / total if total else 0
    msg = (f'spin: [k] nmiprof_spin_loop {n} of CPU 1\'s {total} samples '
           f'= {share:.1f}% (irqs off {SPIN_SECS} s of {SPIN_WINDOW} s: {exp:.0f}%, '
           f'accepted {SPIN_MIN:.0f}..{SPIN_MAX:.0f}%)')
    if total < 100 or not SPIN_MIN <= share <= SPIN_MAX:
        fail(msg)
    else:
        ok(msg)
    # symbolized (a module loaded after the recording started) and the
    # interrupted spot is the loop, not the irqs-off entry or exit
    if kthread and n >= 0.95 * kthread:
        ok(f'spin: {n} of the kthread\'s {kthread} samples in nmiprof_spin_loop')
    else:
        fail(f'spin: only {n} of the kthread\'s {kthread} samples in [k] nmiprof_spin_loop')

    st = read(res, 'status.txt')
    expect = [
        (r'^module:\s+loaded', 'module loaded'),
        (r'^nmi:\s+nested-NMI-safe entry found \(repeat_nmi', 'nested-NMI-safe entry (module)'),
        (r'^source:\s+(ipi|pmu) .*running', 'module source, running'),
        (r'^\s+CPU\s+samples\s+lost\s+latched\s+min ns\s+avg ns\s+max ns', 'per-CPU cost table'),
        (r'^backend:\s+kmod, source (ipi|pmu), 2 CPUs at 1000 Hz', 'daemon backend kmod'),
        (r'^samples:\s+[1-9]\d*\s+lost: \d+', 'daemon samples and lost'),
        (r'^nmi:\s+nested-NMI-safe entry found$', 'nested-NMI-safe entry (daemon)'),
    ]
    for pat, what in expect:
        if re.search(pat, st, re.M):
            ok('status: ' + what)
        else:
            fail('status: no ' + what)
    m = re.search(r'^handler:\s+min (\d+) ns, avg (\d+) ns, max (\d+) ns', st, re.M)
    if m and 0 < int(m.group(1)) <= int(m.group(2)) <= int(m.group(3)):
        ok(f'status: handler cost min {m.group(1)} avg {m.group(2)} max {m.group(3)} ns')
    else:
        fail('status: no plausible "handler: min/avg/max" line')

    steps = read(res, 'steps.txt').split()
    t = [(steps[i], float(steps[i + 1])) for i in range(0, len(steps) - 1, 2)]
    print('steps: ' + ', '.join(f'{a} {tb - ta:.1f} s' for (a, ta), (_, tb)
                                in zip(t, t[1:])))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
