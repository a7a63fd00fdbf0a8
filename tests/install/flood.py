#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""The flood tests/install/test_install.sh sends at the package's shipped policy.

Reads that policy (the conffile, taken from the .deb) and prints shell
assignments for the guest: the first policy a sluice-flood can aim at (UDP or
TCP SYN, to one port or any, or ICMP), source addresses no allow entry covers (one
per flood: each starts a fresh key), and
the tightest rate and burst of the policies that flood matches, since every
one of them limits it.

usage: flood.py POLICY_YAML
"""
import ipaddress
import re
import sys

import yaml

PERIOD_S = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}
SOURCES = ["198.51.100.7", "203.0.113.7", "100.64.0.7"]  # documentation and CGNAT ranges


def flood_of(match):
    """(sluice-flood --proto, port or None) for a policy's match, or None."""
    proto, port = match.get("proto"), match.get("dst_port")
    if port is not None and not isinstance(port, int):
        return None
    if proto == "udp":
        return ("udp", port)
    if proto == "tcp" and match.get("tcp_syn"):
        return ("tcp-syn", port)
    if proto == "icmp" and port is None:
        return ("icmp", None)
    return None


def matches(match, flood):
    proto = {"udp": "udp", "tcp-syn": "tcp", "icmp": "icmp"}[flood[0]]
    if match.get("proto", proto) != proto:
        return False
    port = match.get("dst_port")
    return port is None or port == flood[1]


def rate_of(text):
    """'100/s' -> (100, 1): packets per so many seconds."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d*)\s*([a-z]+)\s*", str(text))
    if not m or m.group(3) not in PERIOD_S:
        sys.exit(f"flood.py: rate '{text}' is not N/UNIT")
    return int(m.group(1)), int(m.group(2) or 1) * PERIOD_S[m.group(3)]


def main():
    with open(sys.argv[1]) as f:
        doc = yaml.safe_load(f) or {}
    policies = doc.get("policies") or []
    flood = next((fl for p in policies if (fl := flood_of(p.get("match") or {}))), None)
    if flood is None:
        sys.exit("flood.py: no policy matches all UDP, TCP SYN or ICMP, or one port of them")
    allow = [ipaddress.ip_network(a, strict=False) for a in doc.get("allow") or []]
    srcs = [s for s in SOURCES if not any(ipaddress.ip_address(s) in n for n in allow)]
    if len(srcs) < 2:
        sys.exit(f"flood.py: the allow list covers all but {len(srcs)} of {' '.join(SOURCES)}")
    # The tightest limit of every policy the flood matches: rate as
    # packets per period, compared by their quotient.
    limits = []
    for p in policies:
        if matches(p.get("match") or {}, flood):
            n, period = rate_of(p["rate"])
            limits.append((n / period, n, period, int(p["burst"]), p["name"]))
    _, n, period, burst, name = min(limits)
    print(f"FLOOD_PROTO={flood[0]}")
    print(f"FLOOD_PORT={flood[1] or ''}")
    print(f"FLOOD_SRCS='{' '.join(srcs)}'")
    print(f"POLICY={name}")
    print(f"RATE={n}")
    print(f"RATE_PERIOD_S={period}")
    print(f"BURST={burst}")


if __name__ == "__main__":
    main()
