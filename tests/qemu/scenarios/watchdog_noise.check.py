#!/usr/bin/env python3
"""watchdog_noise: no report but the final, real lockup (logcheck fails any
other 'hard LOCKUP' line); that one must be complete."""
import watchdog_check as wc

r = wc.Run(thresh=4)
r.episode(cpu=2, secs=7)
r.expect_reports_in_dmesg(1)
r.done()
