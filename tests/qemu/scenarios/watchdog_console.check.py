#!/usr/bin/env python3
"""watchdog_console: report on the serial port while console_lock is held."""
import watchdog_check as wc

r = wc.Run(thresh=4)
r.episode(cpu=1, secs=10, console=True)
r.expect_trace_events(cpu=1)
r.expect_reports_in_dmesg(1)
r.done()
