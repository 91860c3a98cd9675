"""Which process holds which TCP connection, read from /proc (Linux): for tests and benches of servers."""

import os
import socket
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def child_pids(parent: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == parent:
                pids.append(int(entry))
    return sorted(pids)


ESTABLISHED, LISTENING = "01", "0A"  # the `st` column of /proc/net/tcp


def connection_inodes(port: int, *, any_state: bool = False) -> set[str]:
    """Socket inodes of the TCP connections whose local port is `port`: established ones, or with
    `any_state` every one but the listening socket (closing ones too)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) != port:
                    continue
                if fields[3] == ESTABLISHED or (any_state and fields[3] != LISTENING):
                    inodes.add(fields[9])
    return inodes


def connections_per_process(pids: list[int], port: int, *, any_state: bool = False) -> list[int]:
    """For each pid, how many connections to local `port` it holds open (see connection_inodes)."""
    inodes = connection_inodes(port, any_state=any_state)
    counts = []
    for pid in pids:
        held = 0
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                held += 1
        counts.append(held)
    return counts
