#!/usr/bin/env python3
"""watchdog_allcpu: every CPU's backtrace, console_lock held."""
import watchdog_check as wc

r = wc.Run(thresh=4)
r.episode(cpu=2, secs=8, console=True, all_cpus=True)
r.expect_reports_in_dmesg(1)
r.done()
