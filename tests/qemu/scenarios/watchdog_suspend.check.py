#!/usr/bin/env python3
"""watchdog_suspend: nothing reported across suspend; a lockup after is."""
import watchdog_check as wc

r = wc.Run(thresh=4)
r.episode(cpu=1, secs=7)
r.expect_reports_in_dmesg(1)
r.done()
