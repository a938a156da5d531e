#!/usr/bin/env python3
"""watchdog_allstuck4: 4 CPUs stuck, console_lock held, one episode."""
import watchdog_check as wc

r = wc.Run(thresh=4)
r.episode_all(secs=8, limit=4 + 1.5, console_cpu=2)
r.expect_reports_in_dmesg(r.smp)
r.done()
