#!/usr/bin/env python3
"""watchdog_allstuck: one external NMI gets every stuck CPU reported."""
import watchdog_check as wc

r = wc.Run(thresh=4)
# Within threshold + 2 s of each CPU's spin start (latency() adds 0.5 s).
r.episode_all(secs=8, limit=4 + 1.5)
r.episode_all(secs=8, limit=4 + 1.5, console_cpu=1)
r.expect_reports_in_dmesg(2 * r.smp)
r.done()
