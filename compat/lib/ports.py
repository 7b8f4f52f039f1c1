#!/usr/bin/env python3
"""Free loopback ports for the servers a test starts, below Linux's ephemeral range
(32768-60999 by default): a port asked of the kernel with bind(0) comes from that range,
so between the moment it is released and the moment the server binds it, any outgoing
connection of another process may take it as its local port (CI saw a broker fail to
start on such a port). A port below the range is only ever taken by a process that asks
for it by number. compat/cluster/cluster.py picks its ports the same way.

    python3 compat/lib/ports.py [N]      # prints N free ports (default 1), space-separated
    from ports import free_port, free_ports
"""
import random
import socket
import sys

LOW = 20000


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(n, avoid=()):
    """`n` distinct ports that 127.0.0.1 can bind now, none in `avoid`."""
    high = _ephemeral_low() - 1
    ports = []
    while len(ports) < n:
        if high - LOW < 1000:  # an unusual range: let the kernel choose
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        else:
            port = random.randint(LOW, high)
        if port in ports or port in avoid:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
    return ports


def free_port(avoid=()):
    return free_ports(1, avoid)[0]


if __name__ == "__main__":
    print(" ".join(str(p) for p in free_ports(int(sys.argv[1]) if len(sys.argv) > 1 else 1)))
