#!/usr/bin/env python3
"""watchdog_silent: a CPU spinning in NMI is reported by its buddy."""
import watchdog_check as wc

r = wc.Run(thresh=4)
r.silent_episode(cpu=1, secs=12)
r.expect_reports_in_dmesg(1)
r.done()
