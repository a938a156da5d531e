#!/usr/bin/env python3
"""watchdog_spin4: 4 CPUs, threshold 4 s, CPU 3 spins 10 s."""
import watchdog_check as wc

r = wc.Run(thresh=4)
r.episode(cpu=3, secs=10)
r.expect_trace_events(cpu=3)
r.expect_reports_in_dmesg(1)
r.done()
