#!/usr/bin/env python3
"""watchdog_uartcons: the line the guest wrote to ttyS0 after the report
reached the host."""
import os
import sys

kver = os.environ.get("BENCH_KVER", "?")
with open(os.environ["BENCH_CONSOLE_LOG"], errors="replace") as f:
    console = f.read()
marker = "@@UARTCONS-READBACK-%s@@" % kver
# The shell's own echo of the command line holds the marker's text too,
# but as "$marker"; a line that is the marker alone came from the write.
if any(l.strip("\r") == marker for l in console.split("\n")):
    print("ok: %s read back from ttyS0 on the host" % marker)
    sys.exit(0)
print("FAIL: %s never reached the host on ttyS0" % marker)
sys.exit(1)
