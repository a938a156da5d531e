"""What the bench_*.check.py host checks share."""
import os


def reader(res, missing):
    """read(name): a result file's text, or "" with name added to missing."""
    def read(name):
        try:
            return open(os.path.join(res, name), errors="replace").read()
        except OSError:
            missing.append(name)
            return ""
    return read


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
