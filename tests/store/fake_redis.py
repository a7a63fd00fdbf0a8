#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""A lying Redis, for tests/e2e/test_store_lies.sh (issue #12).

A proxy on a Unix socket in front of a real redis-server: every command is
passed through until the test switches the mode (write the mode's name
into --mode-file, then SIGUSR1); from then on script calls (EVALSHA and
EVAL: the membership beat, the hot sets and the leases) and GETs (the
fleet's news counter, read at every sync between beats) are answered
with one bad shape each:

  pass         pass everything through (the start)
  huge         lease replies with every key's held and granted (a rate
               lease's shares and fair shares) set to 2^62
  endless      "$1000000000" then one byte every 3 ms, forever
  array        "*2147483647" then integer elements, as fast as they go
  oom, noperm, moved
               the error a full, locked-down or clustered Redis gives
  wrongtype    lease replies as four strings, the others as a string
  stall        nothing at all, to any command, from then on

--listen and --upstream take a Unix socket's path, or tcp:HOST:PORT (a
Redis Cluster node, tests/e2e/test_cluster_redirect.sh); --moved-to names
the address "moved" sends the client to.

Each switch is logged on stdout as "mode=NAME at_ns=N" (N: CLOCK_REALTIME,
the agent log's clock), and the first lease calls passed as "lease n=K".
Bounded: what it sends past the switch is capped (SEND_CAP bytes per
connection), and it ends on SIGTERM.
"""
import argparse
import asyncio
import os
import signal
import sys
import time

HUGE = 1 << 62
SEND_CAP = 64 * 1024 * 1024  # bytes of a bad shape per connection, at most
LEASES_LOGGED = 5
LIED_TO = (b"EVALSHA", b"EVAL", b"GET")  # what a bad shape answers
ERRORS = {
    "oom": b"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
    "noperm": b"-NOPERM this user has no permissions to run the 'evalsha' command\r\n",
    "moved": b"-MOVED 3999 127.0.0.1:6381\r\n",
}


class State:
    def __init__(self, mode_file):
        self.mode_file = mode_file
        self.mode = "pass"
        self.leases = 0

    def reload(self):
        with open(self.mode_file) as f:
            self.mode = f.read().strip()
        print(f"mode={self.mode} at_ns={time.time_ns()}", flush=True)


async def read_value(reader):
    """One RESP value: (raw bytes, parsed); parsed arrays are lists."""
    line = await reader.readuntil(b"\r\n")
    kind, body = line[:1], line[1:-2]
    if kind in (b"+", b"-"):
        return line, body
    if kind == b":":
        return line, int(body)
    if kind == b"$":
        n = int(body)
        if n < 0:
            return line, None
        data = await reader.readexactly(n + 2)
        return line + data, data[:-2]
    if kind == b"*":
        n = int(body)
        raw, items = line, []
        for _ in range(max(n, 0)):
            r, v = await read_value(reader)
            raw += r
            items.append(v)
        return raw, items
    raise ValueError(f"not RESP: {line!r}")


def is_lease(cmd):
    """A script call on leases: its first key a lump lease's bucket,
    <fleet>:b2:{<policy>:<group>}, or a rate lease's hash, <fleet>:r2:{...}."""
    return len(cmd) > 3 and (b":b2:" in cmd[3] or b":r2:" in cmd[3])


def encode(items):
    out = b"*%d\r\n" % len(items)
    for v in items:
        out += b":%d\r\n" % v if isinstance(v, int) else b"$%d\r\n%s\r\n" % (len(v), v)
    return out


async def trickle(writer, first, chunk, every_s):
    """Send @first, then @chunk every @every_s, until the peer goes or SEND_CAP."""
    sent = len(first)
    writer.write(first)
    while sent < SEND_CAP:
        await writer.drain()
        await asyncio.sleep(every_s)
        writer.write(chunk)
        sent += len(chunk)


async def bad_reply(st, cmd, up_r, up_w, writer):
    """Answer call @cmd (LIED_TO) in mode st.mode; True when it did."""
    mode = st.mode
    if mode in ERRORS:
        writer.write(ERRORS[mode])
    elif mode == "wrongtype":
        writer.write(encode([b"1", b"2", b"3", b"4"]) if is_lease(cmd) else b"$2\r\nok\r\n")
    elif mode == "endless":
        await trickle(writer, b"$1000000000\r\n", b"x", 0.003)
    elif mode == "array":
        await trickle(writer, b"*2147483647\r\n", b":1\r\n" * 4096, 0.001)
    elif mode == "huge" and is_lease(cmd):
        up_w.write(encode(cmd))
        await up_w.drain()
        raw, v = await read_value(up_r)
        if b":r2:" in cmd[3]:  # RATE_FIELDS a key: rate, burst, fair rate, fair burst,
            # expires, now, and the bank taken: level, rate, burst, at
            per, lies = 10, (0, 1, 2, 3)
        else:  # 4 a key: held, expires, now, granted
            per, lies = 4, (0, 3)
        if isinstance(v, list) and v and len(v) % per == 0:
            raw = encode([HUGE if i % per in lies else x for i, x in enumerate(v)])
        else:  # passed on honest: the test then sees no fault, and says so
            print(f"huge: a reply not of {per} values a key, passed on", flush=True)
        writer.write(raw)
    else:
        return False
    return True


def tcp_of(where):
    """(host, port) of "tcp:HOST:PORT", or None for a Unix socket's path."""
    if not where.startswith("tcp:"):
        return None
    host, port = where[4:].rsplit(":", 1)
    return host, int(port)


async def open_upstream(upstream):
    tcp = tcp_of(upstream)
    if tcp:
        return await asyncio.open_connection(*tcp)
    return await asyncio.open_unix_connection(upstream)


async def serve(st, upstream, reader, writer):
    up_r, up_w = await open_upstream(upstream)
    try:
        while True:
            _, cmd = await read_value(reader)
            if st.mode == "stall":
                await asyncio.Event().wait()  # never set: silent until the peer goes
            verb = cmd[0].upper() if cmd else b""
            if verb in LIED_TO and await bad_reply(st, cmd, up_r, up_w, writer):
                await writer.drain()
                continue
            if verb in (b"EVALSHA", b"EVAL") and is_lease(cmd):
                st.leases += 1
                if st.leases <= LEASES_LOGGED:
                    print(f"lease n={st.leases}", flush=True)
            up_w.write(encode(cmd))
            await up_w.drain()
            raw, _ = await read_value(up_r)
            writer.write(raw)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        up_w.close()
        writer.close()


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", required=True, help="Unix socket (or tcp:HOST:PORT) to serve")
    ap.add_argument("--upstream", required=True, help="the real redis-server's, the same")
    ap.add_argument("--mode-file", required=True, help="read on SIGUSR1: the mode's name")
    ap.add_argument("--moved-to", default="127.0.0.1:6381", help="where 'moved' redirects")
    a = ap.parse_args()
    ERRORS["moved"] = f"-MOVED 3999 {a.moved_to}\r\n".encode()
    st = State(a.mode_file)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR1, st.reload)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    tcp = tcp_of(a.listen)
    if tcp:
        server = await asyncio.start_server(lambda r, w: serve(st, a.upstream, r, w), *tcp)
    else:
        server = await asyncio.start_unix_server(
            lambda r, w: serve(st, a.upstream, r, w), path=a.listen
        )
        os.chmod(a.listen, 0o700)
    print(f"listening on {a.listen}", flush=True)
    async with server:
        await stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
