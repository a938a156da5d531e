#!/usr/bin/env python3
"""Minimal QMP client of the QEMU bench, and an NMI injector.

  qmp.py nmi --socket S --rate HZ --duration SEC   inject NMIs, print the count
  qmp.py cmd --socket S COMMAND                     run one command, print reply

QMP's inject-nmi reaches CPU 0 of an x86 guest only.
"""
import argparse
import json
import socket
import sys
import threading
import time


class QMPError(Exception):
    pass


class QMP:
    """One QMP connection: connect() does the capabilities handshake."""

    def __init__(self, path):
        self.path = path
        self.sock = None
        self.buf = b""

    def connect(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.path)
                break
            except OSError:
                s.close()
                if time.monotonic() > deadline:
                    raise QMPError("cannot connect to QMP socket " + self.path)
                time.sleep(0.05)
        s.settimeout(timeout)
        self.sock = s
        greeting = self._read()
        if "QMP" not in greeting:
            raise QMPError("not a QMP greeting: %r" % greeting)
        self.command("qmp_capabilities")
        return self

    def close(self):
        if self.sock:
            self.sock.close()
            self.sock = None

    def _read(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise QMPError("QMP connection closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def command(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "event" in reply:  # asynchronous; not what we wait for
                continue
            if "error" in reply:
                raise QMPError("%s: %s" % (name, reply["error"].get("desc", reply)))
            return reply.get("return")


class NMIInjector(threading.Thread):
    """Injects NMIs at `rate` per second for `duration` seconds.

    Paced against absolute deadlines, so a slow command does not lower the
    average rate; if QEMU falls behind, NMIs are sent back to back, and the
    injection still ends after `duration` (QMP manages ~2000/s under TCG).
    `sent` counts the commands QEMU acknowledged.
    """

    def __init__(self, path, rate, duration):
        super().__init__(daemon=True)
        self.path, self.rate, self.duration = path, float(rate), float(duration)
        self.sent = 0
        self.error = None
        self.elapsed = 0.0
        self._halt = threading.Event()

    def stop(self):
        self._halt.set()

    def run(self):
        q = QMP(self.path)
        try:
            q.connect()
            start = time.monotonic()
            period = 1.0 / self.rate
            n = 0
            end = start + self.duration
            while not self._halt.is_set():
                due = start + n * period
                if due >= end or time.monotonic() >= end:
                    break
                delay = due - time.monotonic()
                if delay > 0 and self._halt.wait(delay):
                    break
                q.command("inject-nmi")
                self.sent += 1
                n += 1
            self.elapsed = time.monotonic() - start
        except (QMPError, OSError) as e:
            self.error = str(e)
        finally:
            q.close()


class ExitWatch(threading.Thread):
    """Listens on a QMP monitor of its own for the events that say how the
    guest ended: SHUTDOWN's reason tells a power-off ("guest-shutdown")
    from a reset ("guest-reset": a triple fault, an emergency restart,
    which -no-reboot makes a shutdown) and from the bench's own quit.
    QEMU runs with -action shutdown=pause, so a guest that reset itself
    is stopped with its vCPUs' state intact: `registers` keeps "info
    registers -a" of that moment.  Then, or at once after any other
    shutdown, the watch quits QEMU.  `events`: (seconds since start,
    name, data)."""

    def __init__(self, path, start):
        super().__init__(daemon=True)
        self.path, self.t0 = path, start
        self.events = []
        self.registers = None
        self.error = None
        self.q = None

    def connect(self, timeout=30.0):
        """Before the guest can shut down: without the watch, a paused
        QEMU would wait for the bench's timeout.  QEMU opens the socket
        within milliseconds; the wait is for a host under heavy load."""
        try:
            self.q = QMP(self.path).connect(timeout)
            self.q.sock.settimeout(None)
        except (QMPError, OSError) as e:
            self.error = str(e)
        return self.q is not None

    def run(self):
        q = self.q
        try:
            while True:
                msg = q._read()
                if "event" not in msg:
                    continue
                data = msg.get("data", {})
                self.events.append((round(time.monotonic() - self.t0, 3),
                                    msg["event"], data))
                if msg["event"] != "SHUTDOWN":
                    continue
                if data.get("reason") == "guest-reset":
                    self.registers = q.command("human-monitor-command", **{
                        "command-line": "info registers -a"})
                q.command("quit")
        except (QMPError, OSError, ValueError) as e:
            if not self.events:  # else QEMU's exit closed the connection
                self.error = str(e)
        finally:
            q.close()

    def shutdown_reason(self):
        for _, name, data in self.events:
            if name == "SHUTDOWN":
                return data.get("reason", "?")
        return None

    def shutdown_age(self, now):
        """Seconds since the first SHUTDOWN event, None before it."""
        for t, name, _ in self.events:
            if name == "SHUTDOWN":
                return now - t
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("nmi")
    n.add_argument("--socket", required=True)
    n.add_argument("--rate", type=float, default=100.0)
    n.add_argument("--duration", type=float, default=5.0)
    c = sub.add_parser("cmd")
    c.add_argument("--socket", required=True)
    c.add_argument("command")
    a = ap.parse_args()
    if a.cmd == "nmi":
        inj = NMIInjector(a.socket, a.rate, a.duration)
        inj.start()
        inj.join()
        print("nmi: sent %d in %.2f s (%.0f/s)%s" % (
            inj.sent, inj.elapsed, inj.sent / inj.elapsed if inj.elapsed else 0,
            "; error: " + inj.error if inj.error else ""))
        return 1 if inj.error else 0
    q = QMP(a.socket).connect()
    print(json.dumps(q.command(a.command), indent=1))
    q.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
