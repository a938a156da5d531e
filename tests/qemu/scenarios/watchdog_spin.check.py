#!/usr/bin/env python3
"""watchdog_spin: default threshold, 2 CPUs, 25 s spin."""
import watchdog_check as wc

r = wc.Run(thresh=10)
r.episode(cpu=1, secs=25)
r.expect_trace_events(cpu=1)
r.expect_reports_in_dmesg(1)
r.done()
