#!/usr/bin/env python3
"""watchdog_slowreport: a CPU busy writing its report is not 'silent'."""
import re

import watchdog_check as wc

r = wc.Run(thresh=1)
for cpu in (1, 2, 3):
    n = len(re.findall(r"nmiprof: hard LOCKUP on CPU %d, no timer interrupt for [0-9.]+ s\n" % cpu,
                       r.dmesg))
    silent = len(re.findall(r"hard LOCKUP on CPU %d, .*does not answer NMIs" % cpu, r.dmesg))
    if n != 1 or silent:
        r.fail("CPU %d: %d reports from NMI, %d as deaf to NMIs; want 1 and 0" % (cpu, n, silent))
    else:
        r.ok("CPU %d reported itself once, and never as deaf to NMIs" % cpu)
r.done()
