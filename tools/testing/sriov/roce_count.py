#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Count the RoCEv2 packets (IPv4, UDP port 4791) that enter and leave the
# given interfaces, and among them the GSI ones (BTH destination QP 1: the
# CM MADs), until SIGTERM or SIGINT; then write one line per interface,
# direction and kind to OUT:
#
#	roce_count.py OUT IFNAME...
#	vf1 in roce 255
#	vf1 in gsi 6
#	...
#
# Run in the PF guest of tools/testing/sriov/run (pf_forward.sh), it shows
# which packets crossed each NIC.  It prints "listening" on stdout once the
# socket is bound.

import signal
import socket
import sys

ETH_P_ALL = 3
PACKET_OUTGOING = 4
ROCE_V2_PORT = 4791
SO_RCVBUFFORCE = 33     # not in Python's socket module


def main():
    out, names = sys.argv[1], sys.argv[2:]
    counts = {(n, d, k): 0 for n in names for d in ("in", "out")
              for k in ("roce", "gsi")}
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                         socket.htons(ETH_P_ALL))
    # Root in the guest: past rmem_max, so that a burst is not dropped
    # while the guest is busy (the counts are lower bounds all the same).
    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)

    def stop(_sig, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print("listening", flush=True)
    try:
        while True:
            pkt, addr = sock.recvfrom(128)
            name, pkttype = addr[0], addr[2]
            if name not in names or len(pkt) < 14 + 20 + 8 + 12:
                continue
            if pkt[12:14] != b"\x08\x00" or pkt[23] != 17:
                continue
            ip_len = (pkt[14] & 0x0f) * 4
            udp = 14 + ip_len
            if int.from_bytes(pkt[udp + 2:udp + 4], "big") != ROCE_V2_PORT:
                continue
            way = "out" if pkttype == PACKET_OUTGOING else "in"
            counts[(name, way, "roce")] += 1
            bth = udp + 8
            if int.from_bytes(pkt[bth + 5:bth + 8], "big") == 1:
                counts[(name, way, "gsi")] += 1
    except KeyboardInterrupt:
        pass
    with open(out, "w", encoding="ascii") as f:
        for (n, d, k), c in counts.items():
            f.write(f"{n} {d} {k} {c}\n")


if __name__ == "__main__":
    main()
