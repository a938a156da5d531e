"""Host-side assertions shared by the watchdog_* scenarios' .check.py files.

The bench runs <scenario>.check.py RESULTS_DIR with BENCH_CONSOLE_LOG (the
guest's ttyS0, where nmiprof's polled UART writer also writes) and
BENCH_KVER set.  Lines nmiprof wrote to the UART itself carry a
"[time][C<cpu>] " prefix; the printk copies of the same text carry printk's
"[time] " only, so the two can be told apart.

Detection latency, from the start of the spin to the report, is not taken
from those timestamps: they are local_clock(), which with an unstable TSC
(6.1 under TCG marks it so at boot) stops on a CPU that has interrupts off,
so the stuck CPU's report shows a time from before it was written.  It is
computed from the module's own durations, all on the monotonic clock:

  off   = "no timer interrupt for X s" in the header: report time - last beat
  took  = "recovered after R s": recovery - last beat; the CPU recovers as
          the spin of S seconds ends, so the last beat was R - S before
          the spin began, and
  latency = off - (took - S)

Each check prints what it measured and exits non-zero on a failure.
Measurements are also appended to <rundir>/watchdog.json.
"""
import json
import os
import re
import sys

UART = re.compile(r"\[\s*(\d+\.\d+)\]\[C(\d+)\] (.*)")
# Not anchored: the guest's shell writes to the same serial console, and
# its output can land in front of a kernel line, e.g.
# "of_lockup cpu=3 [   12.569393] nmiprof: CPU 3 recovered after 10.012 s".
PRINTK = re.compile(r"\[\s*(\d+\.\d+)\] (.*)")


# What nmiprof.ko logs when it stops waiting for the 8250 port lock: from
# then on, until the report ends, its lines may interleave with others'.
GAVE_UP = "port lock was not free for"


def is_subsequence(want, text):
    """True if want's characters appear in text in order."""
    it = iter(text)
    return all(c in it for c in want)


class Run:
    def __init__(self, thresh):
        self.thresh = float(thresh)
        self.period = self.thresh * 2 / 5
        self.resdir = sys.argv[1]
        self.kver = os.environ.get("BENCH_KVER", "?")
        with open(os.environ["BENCH_CONSOLE_LOG"], errors="replace") as f:
            self.lines = f.read().replace("\r", "").split("\n")
        self.dmesg = self._read("dmesg.txt")
        self.trace = self._read("trace")
        self.smp = os.cpu_count()
        try:
            with open(os.path.join(os.path.dirname(self.resdir), "host.json")) as f:
                self.smp = json.load(f)["smp"]
        except (OSError, ValueError, KeyError):
            pass
        self.failures = []
        self.measured = []
        self.pos = 0    # console line where the next episode is searched

    def _read(self, name):
        try:
            with open(os.path.join(self.resdir, name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def fail(self, msg):
        print("watchdog check: FAIL: " + msg)
        self.failures.append(msg)

    def ok(self, msg):
        print("watchdog check: ok: " + msg)

    def find(self, pattern, start=0, uart_cpu=None):
        """(line index, time, text) of the first line at or after start
        matching pattern: a UART line of CPU uart_cpu, or a printk line."""
        rx = re.compile(pattern)
        for i in range(start, len(self.lines)):
            line = self.lines[i]
            if uart_cpu is not None:
                m = UART.search(line)
                if m and uart_cpu in (-1, int(m.group(2))) and rx.search(m.group(3)):
                    return i, float(m.group(1)), m.group(3)
            else:
                m = PRINTK.search(line)
                if m and rx.search(m.group(2)):
                    return i, float(m.group(1)), m.group(2)
        return None

    def find_recovery(self, cpu, start, whole=False):
        """CPU cpu's UART recovery line, as find() returns it.

        The writer holds the 8250 port lock for each line, so nothing else
        lands inside it, unless it logged that it gave up waiting for the
        lock (GAVE_UP).  Only then, and not with whole, is the line allowed
        to come interleaved with others' output, character by character
        (CI once saw "[C3]o nmik: iprof: CPU 3 recovered after 10.008
        snsmod nmipr" before the lock was taken).  Interleaving keeps each
        writer's characters in order, so the line is still there as a
        subsequence of what follows CPU cpu's prefix (newlines of others
        may split it, hence the next lines are joined); its printk copy
        then gives the figure."""
        want = "nmiprof: CPU %d recovered after " % cpu
        pat = r"^" + re.escape(want) + r"([0-9.]+) s"
        rec = self.find(pat, start, uart_cpu=cpu)
        if rec or whole or GAVE_UP not in self.dmesg:
            return rec
        copy = self.find(pat, start)
        if not copy:
            return None
        for i in range(start, len(self.lines)):
            m = UART.search(self.lines[i])
            if not m or int(m.group(2)) != cpu:
                continue
            text = "".join([m.group(3)] + self.lines[i + 1:i + 4])
            if is_subsequence(want, text[:len(want) + 200]):
                print("watchdog check: note: CPU %d's UART recovery line was "
                      "interleaved with other console output after the writer "
                      "gave up on the port lock; its printk copy is used" % cpu)
                return copy
        return None

    def report_block(self, start, cpu, end_pattern):
        """Texts of CPU cpu's UART lines from start up to end_pattern."""
        out = []
        for line in self.lines[start:]:
            m = UART.search(line)
            if not m or int(m.group(2)) != cpu:
                continue
            out.append(m.group(3))
            if re.search(end_pattern, m.group(3)):
                break
        return out

    def check_trace(self, block, cpu, what):
        if not any("Call Trace:" in t for t in block):
            self.fail("%s: no Call Trace" % what)
        elif not any(re.match(r"\s*(\? )?\S+\+0x[0-9a-f]+/0x[0-9a-f]+", t) for t in block):
            self.fail("%s: no symbolized frame in the Call Trace" % what)
        if not any(t.startswith("RIP: ") for t in block):
            self.fail("%s: no registers" % what)

    def episode(self, cpu, secs, console=False, all_cpus=False, limit=None,
                whole=False, anchored=True, ctx=None):
        """One lockup of CPU cpu by nmiprof_lockup for secs seconds, to be
        reported within limit s (default: threshold + one period).  With
        whole, every line of the report must be on the port unbroken.
        Without anchored, the report is looked for from the end of the
        last episode, not after the spin's "spinning now" line: another
        stuck CPU may hold console_lock, and that line then reaches the
        console only after the spins.  With ctx ("hardirq"), the CPU was
        stuck in that context over np_lockup's kthread: the task line must
        say so, and the trace show the frames on the IRQ stack in <IRQ>
        and the kthread's in <TASK>."""
        what = "lockup of CPU %d" % cpu
        if anchored:
            mark = self.find(r"nmiprof_lockup: spinning now on CPU %d for %d s"
                             % (cpu, secs), self.pos)
        else:
            mark = (self.pos, 0.0, "")
        if not mark:
            self.fail("%s: no 'spinning now' marker on the console" % what)
            return None
        head = self.find(r"^nmiprof: hard LOCKUP on CPU %d, no timer interrupt for ([0-9.]+) s"
                         % cpu, mark[0], uart_cpu=cpu)
        if not head:
            self.fail("%s: no report on the serial port" % what)
            return None
        off = float(re.search(r"for ([0-9.]+) s", head[2]).group(1))
        if off < self.thresh:   # printed in ms, truncated: 4.000 can be 4.0004
            self.fail("%s: header says %.3f s, below the threshold" % (what, off))

        block = self.report_block(head[0], cpu, r"^nmiprof: end of CPU %d lockup report" % cpu)
        if not block or not block[-1].startswith("nmiprof: end of CPU"):
            self.fail("%s: report not complete on the serial port" % what)
        task = (r"CPU: %d PID: \d+ Comm: np_lockup/%d$" % (cpu, cpu) if not ctx else
                r"CPU: %d in %s, interrupted PID: \d+ Comm: np_lockup/%d$" % (cpu, ctx, cpu))
        if not any(re.match(task, t) for t in block):
            self.fail("%s: task line missing or wrong (want %r)" % (what, task))
        elif ctx:
            self.ok("%s: the task line says %s, interrupting np_lockup/%d" % (what, ctx, cpu))
        if ctx:
            self.check_stacks(block, what)
        self.check_trace(block, cpu, what)
        if whole:
            self.check_whole(block, cpu, what)
        if not any(re.match(r"\s*(\? )?nmiprof_lockup_spin\+0x", t) for t in block):
            self.fail("%s: the spinning function is not in the backtrace" % what)
        else:
            self.ok("%s: report with nmiprof_lockup_spin in the backtrace" % what)

        if console:
            held = self.find(r"nmiprof_lockup: console_lock held", mark[0])
            if not held:
                self.fail("%s: 'console_lock held' never reached the console" % what)
            elif held[0] < head[0]:
                self.fail("%s: the console was flushed before our report got out" % what)
            else:
                self.ok("%s: report out while console_lock was held (%d console "
                        "lines before the buffered ones)" % (what, held[0] - head[0]))

        if all_cpus:
            for other in range(self.smp):
                if other == cpu:
                    continue
                bt = self.find(r"^nmiprof: backtrace of CPU %d \(for the lockup on CPU %d\)"
                               % (other, cpu), head[0], uart_cpu=other)
                if not bt:
                    self.fail("%s: no backtrace from CPU %d" % (what, other))
                    continue
                self.check_trace(self.report_block(bt[0], other, r"^nmiprof: end of CPU"),
                                 other, "backtrace of CPU %d" % other)
            self.ok("%s: all-CPU backtrace checked for %d CPUs" % (what, self.smp))

        rec = self.find_recovery(cpu, head[0], whole)
        if not rec:
            self.fail("%s: no %srecovery line" % (what, "whole " if whole else ""))
        else:
            took = float(re.search(r"after ([0-9.]+) s", rec[2]).group(1))
            if not secs - 0.5 <= took <= secs + self.period + 1:
                self.fail("%s: recovered after %.3f s, spun %d s" % (what, took, secs))
            else:
                self.ok("%s: recovered after %.3f s" % (what, took))
            self.pos = rec[0] + 1
            self.latency(what, cpu, off, took, secs,
                         limit or self.thresh + self.period)

        n = len(re.findall(r"nmiprof: hard LOCKUP on CPU %d," % cpu, self.dmesg))
        self.episodes_in_dmesg = n
        return head

    def episode_all(self, secs, limit, console_cpu=None):
        """Every CPU spun secs seconds at once (nmiprof_lockup all=1), while
        the host sent NMIs to CPU 0: each CPU's report, whole, once, within
        limit s of its own spin's start; console_cpu held console_lock."""
        start = self.pos
        ends = []
        held_until = None
        if console_cpu is not None:
            m = self.find(r"nmiprof_lockup: spinning now on CPU %d for %d s, holding"
                          % (console_cpu, secs), start)
            held_until = m[1] + secs if m else None
        for cpu in range(self.smp):
            self.pos = start
            console = console_cpu is not None
            # A CPU whose thread first ran after the holder let go of
            # console_lock (seen once on 6.12: CPU 3 at 13.51 s, the
            # holder's spin over at 13.49 s) spun with the console free.
            m = self.find(r"nmiprof_lockup: spinning now on CPU %d for %d s"
                          % (cpu, secs), start)
            if console and held_until is not None and m and m[1] > held_until:
                console = False
                self.ok("lockup of CPU %d: its spin began at %.3f s, after "
                        "console_lock was let go at %.3f s: no console check"
                        % (cpu, m[1], held_until))
            self.episode(cpu, secs, console=console,
                         limit=limit, whole=True, anchored=False)
            ends.append(self.pos)
        self.pos = max(ends)
        bad = 0
        for cpu in range(self.smp):
            n = sum(1 for l in self.lines[start:self.pos]
                    if re.search(r"\[C%d\] nmiprof: hard LOCKUP on CPU %d," % (cpu, cpu), l))
            if n != 1:
                bad += 1
                self.fail("all CPUs stuck: %d reports of CPU %d on the serial "
                          "port in the episode, want 1" % (n, cpu))
        if not bad:
            self.ok("all %d CPUs stuck%s: each reported itself once" % (
                self.smp, "" if console_cpu is None
                else ", CPU %d holding console_lock" % console_cpu))

    def check_stacks(self, block, what):
        """The spin's frames inside <IRQ> .. </IRQ>, then the kthread's
        (nmiprof_lockup_fn) inside <TASK> .. </TASK>."""
        where, stack = {}, None
        for t in block:
            m = re.fullmatch(r" <(/?)([A-Z#_0-9]+)>", t)
            if m:
                stack = None if m.group(1) else m.group(2)
                continue
            # gcc's clones count as the function: nmiprof_lockup_fn.cold
            m = re.match(r"\s*(\? )?(\w+)(?:\.\w+)*\+0x", t)
            if m and m.group(2) not in where:
                where[m.group(2)] = stack
        want = {"nmiprof_lockup_spin": "IRQ", "nmiprof_lockup_irq": "IRQ",
                "nmiprof_lockup_fn": "TASK"}
        bad = ["%s in %s" % (f, where.get(f, "no frame")) for f, s in want.items()
               if where.get(f) != s]
        if bad:
            self.fail("%s: stack markers wrong: want %s, got %s" % (
                what, want, ", ".join(bad)))
        else:
            self.ok("%s: frames on the IRQ stack marked <IRQ>, the kthread's <TASK>" % what)

    def check_whole(self, block, cpu, what):
        """The report block line by line, each line exactly as written and
        in order: header, task, RIP, RSP, 5 more register lines, "Call
        Trace:", frames with the stack markers around them (<TASK>, <IRQ>,
        ...), end."""
        frame = r"(\? )?\S+\+0x[0-9a-f]+/0x[0-9a-f]+( \[\w+\])?"
        kinds = [
            ("H", r"nmiprof: hard LOCKUP on CPU %d, no timer interrupt for \d+\.\d{3} s" % cpu),
            ("T", r"CPU: %d (in \w+, interrupted )?PID: \d+ Comm: np_lockup/%d" % (cpu, cpu)),
            ("I", r"RIP: [0-9a-f]{4}:" + frame),
            ("S", r"RSP: [0-9a-f]{4}:[0-9a-f]{16} EFLAGS: [0-9a-f]{8}"),
            ("R", r"R\w\w: [0-9a-f]{16} R\w\w: [0-9a-f]{16} R\w\w: [0-9a-f]{16}"),
            ("C", r"Call Trace:"),
            ("F", " " + frame),
            ("M", r" </?[A-Z#_0-9]+>"),
            ("E", r"nmiprof: end of CPU %d lockup report" % cpu),
        ]
        seq = ""
        for t in block:
            k = next((k for k, rx in kinds if re.fullmatch(rx, t)), None)
            if k is None:
                self.fail("%s: broken line on the serial port: %r" % (what, t))
                k = "?"
            seq += k
        if "?" in seq:
            return
        if not re.fullmatch(r"HTISRRRRRC(M?F+M?)+E", seq):
            self.fail("%s: report lines missing or out of order on the serial "
                      "port (%s)" % (what, seq))
        else:
            self.ok("%s: all %d report lines whole on the serial port"
                    % (what, len(block)))

    def expect_chatter(self, start, pattern, least=20):
        """At least least lines matching pattern on the console between
        console line start and the recovery: the port really was busy.
        Says how many came between the report's first and last line."""
        rx = re.compile(pattern)
        # the recovery line, as episode() left it (else: to the end)
        rec = self.pos - 1 if self.pos > start else len(self.lines) - 1
        n = sum(1 for l in self.lines[start:rec + 1] if rx.search(l))
        end = next((i for i in range(start, rec + 1)
                    if "nmiprof: end of CPU" in self.lines[i]), rec)
        inside = sum(1 for l in self.lines[start:end] if rx.search(l))
        print("watchdog check: chatter: %d lines from the report to the "
              "recovery, %d of them inside the report" % (n, inside))
        if n < least:
            self.fail("only %d chatter lines while the report went out, want %d"
                      % (n, least))

    def expect_outside_pulses(self, start, cpu, gave_up=False):
        """No UART line of CPU cpu between "portlock: held N" and
        "portlock: released N" (nmiprof_lockup pulse_cpu=) up to the
        recovery, unless the writer said it gave up waiting for the lock
        (gave_up: a holder that did not let go in time, e.g. a vCPU the
        host did not run).  Says how many pulses began inside the report,
        which starts at console line start: how often the writer had to
        wait."""
        held = None
        inside = 0
        end = None
        # From the top: a pulse the report starts in began before it.
        for i in range(0, self.pos):
            line = self.lines[i]
            m = re.search(r"portlock: (held|released) (\d+)", line)
            if m and m.group(1) == "held":
                held = m.group(2)
                if i > start and end is None:
                    inside += 1
            elif m:
                if held != m.group(2) and not gave_up:
                    self.fail("pulse marker out of order: %r" % line)
                held = None
            u = UART.search(line)
            if u and int(u.group(2)) == cpu:
                if held is not None:
                    msg = ("CPU %d's line inside port lock pulse %s: %r"
                           % (cpu, held, u.group(3)))
                    if gave_up:
                        print("watchdog check: note: %s (the writer gave up "
                              "waiting for the lock)" % msg)
                    else:
                        self.fail(msg)
                if u.group(3).startswith("nmiprof: end of CPU"):
                    end = i
        print("watchdog check: %d port lock pulses began inside CPU %d's report"
              % (inside, cpu))

    def silent_episode(self, cpu, secs):
        """CPU cpu spins in an NMI handler: it cannot answer the watchdog's
        NMI, so its buddy must report it (no registers) after 2 thresholds."""
        what = "NMI-deaf lockup of CPU %d" % cpu
        mark = self.find(r"nmiprof_lockup: spinning now on CPU %d .*in NMI" % cpu, self.pos)
        if not mark:
            self.fail("%s: no 'spinning now' marker on the console" % what)
            return
        head = self.find(r"^nmiprof: hard LOCKUP on CPU %d, no timer interrupt for [0-9.]+ s; "
                         r"it does not answer NMIs" % cpu, mark[0], uart_cpu=-1)
        if not head:
            self.fail("%s: not reported by its buddy" % what)
            return
        off = float(re.search(r"for ([0-9.]+) s", head[2]).group(1))
        if self.find(r"^nmiprof: end of CPU %d lockup report" % cpu, mark[0], uart_cpu=cpu):
            self.fail("%s: also reported from NMI, after the fact" % what)
        rec = self.find_recovery(cpu, head[0])
        if not rec:
            self.fail("%s: no recovery line" % what)
            return
        took = float(re.search(r"after ([0-9.]+) s", rec[2]).group(1))
        self.ok("%s: by its buddy, recovered after %.3f s" % (what, took))
        self.pos = rec[0] + 1
        # Reported once the NMI went unanswered for another threshold.
        self.latency(what, cpu, off, took, secs, 2 * self.thresh + self.period,
                     low=2 * self.thresh - self.period)

    def latency(self, what, cpu, off, took, secs, limit, low=0.0):
        latency = off - (took - secs)
        print("watchdog latency: kernel %s smp %s CPU %d%s: %.3f s from the start of the "
              "spin to the report (threshold %g s, limit %g s + 0.5 s slack)" % (
                  self.kver, self.smp, cpu, " (NMI-deaf, buddy report)" if low else "",
                  latency, self.thresh, limit))
        self.measured.append({"kernel": self.kver, "smp": self.smp, "cpu": cpu,
                              "nmi_deaf": bool(low), "latency_s": round(latency, 3),
                              "threshold_s": self.thresh, "reported_off_s": off,
                              "recovered_after_s": took, "spin_s": secs})
        if not low < latency <= limit + 0.5:
            self.fail("%s: detection latency %.3f s, want (%.1f, %.1f]" % (
                what, latency, low, limit + 0.5))

    def expect_trace_events(self, cpu):
        ev = [l for l in self.trace.splitlines() if "lockup: cpu=%d " % cpu in l]
        if not any("comm=np_lockup/%d " % cpu in l and "recovered=0" in l for l in ev):
            self.fail("no nmiprof:lockup event (recovered=0) for CPU %d" % cpu)
        elif not any("recovered=1" in l for l in ev):
            self.fail("no nmiprof:lockup event (recovered=1) for CPU %d" % cpu)
        else:
            self.ok("nmiprof:lockup trace events for CPU %d: %d" % (cpu, len(ev)))

    def expect_reports_in_dmesg(self, n):
        got = len(re.findall(r"nmiprof: hard LOCKUP on CPU", self.dmesg))
        if got != n:
            self.fail("%d lockup reports in the kernel log, want %d (one per episode)"
                      % (got, n))
        else:
            self.ok("%d lockup report(s) in the kernel log, one per episode" % n)

    def done(self):
        path = os.path.join(os.path.dirname(self.resdir), "watchdog.json")
        with open(path, "w") as f:
            json.dump({"measured": self.measured, "failures": self.failures}, f, indent=1)
        sys.exit(1 if self.failures else 0)
