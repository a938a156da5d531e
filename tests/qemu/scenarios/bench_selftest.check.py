#!/usr/bin/env python3
"""Host-side check of bench_selftest: every injected NMI reached CPU 0.

QEMU may merge an NMI into one still pending (the vCPU thread was not
scheduled in between), so CPU 0 may count fewer than were sent, never more.
"""
import json
import os
import sys

res = sys.argv[1]
host = json.load(open(os.environ["BENCH_HOST_JSON"]))
sent_guest, counted = map(int, open(os.path.join(res, "nmi-counts")).read().split())
sent = host["nmi_sent"]
print("bench_selftest: host sent %d NMIs, guest was told %d, CPU 0 counted %d"
      % (sent, sent_guest, counted))
ok = sent > 0 and sent_guest == sent and sent // 2 <= counted <= sent
sys.exit(0 if ok else 1)
