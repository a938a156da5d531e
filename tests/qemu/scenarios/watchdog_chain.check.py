#!/usr/bin/env python3
"""watchdog_chain: CPUs 0 and 1 stuck at once, both reported."""
import watchdog_check as wc

r = wc.Run(thresh=4)
for cpu in (0, 1):
    r.pos = 0           # the two episodes overlap on the console
    r.episode(cpu=cpu, secs=8)
    r.expect_trace_events(cpu=cpu)
r.expect_reports_in_dmesg(2)
r.done()
