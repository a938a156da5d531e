#!/usr/bin/env python3
"""watchdog_portlock: report lines never inside another CPU's hold of the
port lock; a CPU stuck holding it still gets its report out."""
import re

import watchdog_check as wc

r = wc.Run(thresh=4)
mark = r.dmesg.find("holding ttyS0's port lock")
if mark < 0:
    r.fail("CPU 1 never took the port lock")
    mark = len(r.dmesg)
# 20 ms pulses for the 9 s the pulser runs: 236-424 seen.  Far fewer
# means CPU 2 was kept from pulsing during the spin (a clocksource switch:
# its stop_machine() waits for the spinning CPU), so the report met none.
pulses = re.search(r"nmiprof_lockup: (\d+) port lock pulses on CPU 2", r.dmesg)
if not pulses or int(pulses.group(1)) < 100:
    r.fail("CPU 2 pulsed the port lock %s times, want >= 100: it did not run "
           "beside the spin" % (pulses.group(1) if pulses else "no"))
else:
    r.ok("CPU 2 pulsed the port lock %s times" % pulses.group(1))
gave_up = wc.GAVE_UP in r.dmesg[:mark]
if gave_up:
    # The writer waited for the lock in vain (the host did not run CPU 2's
    # vCPU while it held it) and wrote on without it, so CPU 2's markers
    # may split report lines: judge the report without them.
    text, n, k = "\n".join(r.lines), 0, 1
    while k:  # a marker that follows a split one splits the line too
        text, k = re.subn(r"(?<=[^\n])portlock: (held|released) \d+\n", "", text)
        n += k
    r.lines = text.split("\n")
    print("watchdog check: note: the writer gave up on CPU 2's pulse; %d "
          "pulse markers taken out of other lines" % n)
head = r.episode(cpu=3, secs=8, whole=True)
if head:
    r.expect_outside_pulses(head[0], cpu=3, gave_up=gave_up)
r.episode(cpu=1, secs=6, whole=True)
if wc.GAVE_UP not in r.dmesg[mark:]:
    r.fail("CPU 1 held the port lock, yet the writer never said it gave up "
           "waiting for it")
else:
    r.ok("the writer gave up waiting for the lock CPU 1 held, and said so")
r.expect_trace_events(cpu=3)
r.expect_trace_events(cpu=1)
# One report per episode; while CPU 1 held the port lock, any CPU that
# wanted it spun with interrupts off and may rightly be reported too.
before = re.findall(r"hard LOCKUP on CPU (\d)", r.dmesg[:mark])
during = re.findall(r"hard LOCKUP on CPU (\d)", r.dmesg[mark:])
if before != ["3"] or during.count("1") != 1:
    r.fail("lockup reports: %s before CPU 1 took the port lock, %s after; "
           "want CPU 3 once, then CPU 1 once" % (before, during))
else:
    others = [c for c in during if c != "1"]
    r.ok("lockup reports: CPU 3, then CPU 1%s" % (
        "" if not others else ", and CPU(s) %s spinning on the port lock"
        % ",".join(others)))
r.done()
