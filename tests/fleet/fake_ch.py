#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A ClickHouse that fails, for the exporter's failure-injection test only
(the real server is used everywhere else).  Listens on 127.0.0.1:PORT and
answers every request by MODE:

  error   HTTP 500 with a ClickHouse-style exception line
  hang    reads the request, never answers (until the client gives up)
  close   reads the headers and part of the body, then closes the socket

Each request appends one line to LOG.  Exits by itself after LIFE seconds.

  fake_ch.py MODE PORT LOG LIFE
"""
import socket
import sys
import threading
import time

mode, port, log, life = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
lock = threading.Lock()


def note(what):
    with lock:
        with open(log, "a") as f:
            f.write(what + "\n")


def serve(conn):
    conn.settimeout(life)
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        note(mode)
        if mode == "close":
            conn.recv(16)		# part of the body, then gone
            return
        if mode == "hang":
            time.sleep(life)
            return
        body = b"Code: 252, e.displayText() = DB::Exception: Too many parts (injected)\n"
        conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n" % len(body) + body)
    except OSError:
        pass
    finally:
        conn.close()


srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(16)
srv.settimeout(0.5)
end = time.time() + life
while time.time() < end:
    try:
        c, _ = srv.accept()
    except socket.timeout:
        continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
srv.close()
