#!/usr/bin/env python3
"""watchdog_external: an unclaimed NMI makes the stuck CPU report itself."""
import watchdog_check as wc

r = wc.Run(thresh=4)
# The first injected NMI after the threshold reports; the host's injector
# aims at 2/s but its timing under load is loose: allow two intervals.
r.episode(cpu=0, secs=8, limit=4 + 1.0)
r.expect_reports_in_dmesg(1)
r.done()
