#!/usr/bin/env python3
"""watchdog_chatter: CPU 3's report and recovery line come out whole on the
serial port while shells write to it; the chatter must really have been
on the port while the report went out."""
import watchdog_check as wc

r = wc.Run(thresh=4)
head = r.episode(cpu=3, secs=8, whole=True)
if head:
    r.expect_chatter(head[0], r"chatter: (printk|tty) line \d+")
r.expect_trace_events(cpu=3)
r.expect_reports_in_dmesg(1)
r.done()
