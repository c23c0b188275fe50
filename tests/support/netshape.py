"""Delay and drop a host's packets in user space, for kernels built without `tc netem`.

Run inside a host's network namespace as `python -m tests.support.netshape --delay-ms 200 --loss 0.05`:
it binds netfilter queues 0 (what the host sends) and 1 (what it receives), prints ``ready``, and
then holds every packet the kernel hands it for the delay before accepting it, dropping a packet
with the given probability instead. The harness (tests/support/cluster.py) steers the host's
traffic on its link into the queues with iptables NFQUEUE rules, added only after ``ready``.

The kernel keeps each packet and waits for our verdict on it; we only see its id (copy mode
META), so the shaping costs a few hundred bytes of netlink per packet, whatever its size. On
SIGTERM every held packet is accepted at once and the queues are unbound: removing the shaping
never drops what was in flight.
"""

from __future__ import annotations

import argparse
import collections
import errno
import os
import random
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
SOL_NETLINK = 270
NETLINK_NO_ENOBUFS = 5
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET = 0
NFQNL_MSG_VERDICT = 1
NFQNL_MSG_CONFIG = 2
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_CFG_CMD = 1
NFQA_CFG_PARAMS = 2
NFQA_CFG_QUEUE_MAXLEN = 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_CFG_CMD_UNBIND = 2
NFQNL_COPY_META = 1
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NF_DROP = 0
NF_ACCEPT = 1
QUEUES = (0, 1)  # 0: the host's egress on its link, 1: its ingress
MAXLEN = 8192  # packets the kernel may hold per queue before it drops new ones


def _attr(kind: int, payload: bytes) -> bytes:
    """Return one netlink attribute, padded to four bytes."""
    head = struct.pack("=HH", 4 + len(payload), kind)
    return head + payload + b"\0" * (-len(payload) % 4)


def _message(msg: int, queue: int, attrs: bytes, seq: int = 0) -> bytes:
    """Return an nfnetlink queue message (header, nfgenmsg, attributes)."""
    body = struct.pack("=BB", socket.AF_UNSPEC, 0) + struct.pack(">H", queue) + attrs
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, NLM_F_REQUEST, seq, 0) + body


def _packets(data: bytes) -> list[tuple[int, int]]:
    """Return (queue, packet id) for each packet message in a netlink datagram; raise OSError on an error."""
    out = []
    pos = 0
    while pos + 16 <= len(data):
        length, kind, _flags, _seq, _pid = struct.unpack_from("=IHHII", data, pos)
        if length < 16:
            break
        if kind == NLMSG_ERROR:
            (code,) = struct.unpack_from("=i", data, pos + 16)
            if code:
                raise OSError(-code, f"nfnetlink: {os.strerror(-code)}")
        elif kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            (queue,) = struct.unpack_from(">H", data, pos + 18)
            apos = pos + 20
            while apos + 4 <= pos + length:
                alen, atype = struct.unpack_from("=HH", data, apos)
                if alen < 4:
                    break
                if atype & 0x3FFF == NFQA_PACKET_HDR:
                    (packet_id,) = struct.unpack_from(">I", data, apos + 4)
                    out.append((queue, packet_id))
                apos += (alen + 3) & ~3
        pos += (length + 3) & ~3
    return out


class Shaper:
    """Bound netfilter queues whose packets leave after a delay, or are dropped with a probability."""

    def __init__(self, delay_s: float, loss: float, seed: int) -> None:
        self.delay_s = delay_s
        self.loss = loss
        self.rng = random.Random(seed)
        self.held: collections.deque[tuple[float, int, int]] = collections.deque()
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        # Past the receive buffer the kernel drops packets (a loss); it must not stop our reads.
        self.sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
        self.sock.bind((0, 0))
        for queue in QUEUES:
            cmd = struct.pack("=BB", NFQNL_CFG_CMD_BIND, 0) + struct.pack(">H", 0)
            params = struct.pack(">IB", 0, NFQNL_COPY_META)
            attrs = _attr(NFQA_CFG_CMD, cmd) + _attr(NFQA_CFG_PARAMS, params)
            attrs += _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack(">I", MAXLEN))
            self.sock.send(_message(NFQNL_MSG_CONFIG, queue, attrs))
        self.sock.setblocking(False)
        self.passed = 0
        self.dropped = 0

    def verdict(self, queue: int, packet_id: int, verdict: int) -> None:
        self.sock.send(
            _message(
                NFQNL_MSG_VERDICT, queue, _attr(NFQA_VERDICT_HDR, struct.pack(">II", verdict, packet_id))
            )
        )

    def serve(self, stop: list[bool]) -> None:
        """Hold and release packets until stop[0]; then accept whatever is still held."""
        while not stop[0]:
            now = time.monotonic()
            while self.held and self.held[0][0] <= now:
                _, queue, packet_id = self.held.popleft()
                self.verdict(queue, packet_id, NF_ACCEPT)
                self.passed += 1
            timeout = max(0.0, self.held[0][0] - now) if self.held else 0.5
            try:
                ready, _, _ = select.select([self.sock], [], [], timeout)
            except InterruptedError:
                continue
            if not ready:
                continue
            while True:
                try:
                    data = self.sock.recv(1 << 16)
                except BlockingIOError:
                    break
                except OSError as exc:
                    if exc.errno == errno.ENOBUFS:
                        continue
                    raise
                arrived = time.monotonic()
                for queue, packet_id in _packets(data):
                    if self.loss and self.rng.random() < self.loss:
                        self.verdict(queue, packet_id, NF_DROP)
                        self.dropped += 1
                    else:
                        self.held.append((arrived + self.delay_s, queue, packet_id))
        while self.held:
            _, queue, packet_id = self.held.popleft()
            self.verdict(queue, packet_id, NF_ACCEPT)
        for queue in QUEUES:
            cmd = struct.pack("=BB", NFQNL_CFG_CMD_UNBIND, 0) + struct.pack(">H", 0)
            self.sock.send(_message(NFQNL_MSG_CONFIG, queue, _attr(NFQA_CFG_CMD, cmd)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--loss", type=float, default=0.0, help="probability of dropping a packet, 0..1")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    stop = [False]

    def on_term(*_: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    shaper = Shaper(args.delay_ms / 1000, args.loss, args.seed)
    print("ready", flush=True)
    shaper.serve(stop)
    print(f"passed {shaper.passed} dropped {shaper.dropped}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
