#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Load the local ban API (docs/bans.md): N bans of distinct IPv4
addresses from FIRST on, in list LIST for DURATION, one request at a time
over one kept-alive connection to the Unix socket SOCK. Prints
"ok=<answers 200> n=<N> ops_per_s=<rate>". curl -K pays more per request
than the agent does (about 2000 to 5000/s here), so it would measure curl."""
import ipaddress
import socket
import sys
import time


def answer(sock, buf):
    """Read one response; return (status, rest of the buffer)."""
    while True:
        head = buf.find(b"\r\n\r\n")
        if head >= 0:
            lines = buf[:head].split(b"\r\n")
            length = next(int(v) for k, _, v in (l.partition(b":") for l in lines[1:])
                          if k.strip().lower() == b"content-length")
            if len(buf) >= head + 4 + length:
                return int(lines[0].split()[1]), buf[head + 4 + length:]
        chunk = sock.recv(65536)
        if not chunk:
            sys.exit("banapi-load: the agent closed the connection")
        buf += chunk


def main():
    path, n, first, lst, duration = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    base = int(ipaddress.IPv4Address(first))
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    buf, ok = b"", 0
    start = time.monotonic()
    for i in range(n):
        addr = ipaddress.IPv4Address(base + i)
        sock.sendall(f"POST /v1/ban?prefix={addr}&list={lst}&for={duration} HTTP/1.1\r\n"
                     "Host: sluice\r\nContent-Length: 0\r\n\r\n".encode())
        status, buf = answer(sock, buf)
        ok += status == 200
    took = time.monotonic() - start
    print(f"ok={ok} n={n} ops_per_s={n / took:.0f}")


main()
