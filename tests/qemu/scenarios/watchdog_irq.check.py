#!/usr/bin/env python3
"""watchdog_irq: CPU 1 stuck 6 s in hardirq, threshold 2 s."""
import watchdog_check as wc

r = wc.Run(thresh=2)
r.episode(cpu=1, secs=6, whole=True, ctx="hardirq")
r.expect_reports_in_dmesg(1)
r.done()
