#!/usr/bin/env python3
"""Host side of bench_kmod_cost: bench_kmod.check.py's handler-cost part."""
import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "bench_kmod.check.py"), run_name="__main__")
