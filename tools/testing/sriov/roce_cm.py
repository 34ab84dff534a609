#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""RoCEv2 CM MADs on the wire, checked and made without the kernel's code.

  roce_cm.py capture IFACE...       print "ready" once bound, then one
                                    line per CM MAD seen on the
                                    interfaces, until killed:
                                    IFACE in|out SRC DST ATTR LOCAL REMOTE
                                    ICRC (ok or bad; ids in hex, - if none)
  roce_cm.py audit VFIP... < LINES  check a capture: every ICRC good; a MAD
                                    from a VF address arrives with a local
                                    comm id that VF never sent; a MAD that
                                    arrives at a VF names one of its own ids
  roce_cm.py send IFACE SRC DST KIND [LOCAL]
                                    send one CM DREQ to DST over IFACE:
                                    KIND good, bad-icrc, short or
                                    fragments (two IP fragments, the
                                    first 16 bytes long); or a DREP
                                    (KIND drep); random ids, or the
                                    local one LOCAL (hex)

The ICRC is the one of IBTA vol 1 annex A17.3.3, computed here with zlib.
"""

import os
import socket
import struct
import sys
import zlib

ROCE_PORT = 4791
UD_SEND_ONLY = 0x64
CM_CLASS = 0x07
ATTRS = {0x10: 'REQ', 0x11: 'MRA', 0x12: 'REJ', 0x13: 'REP', 0x14: 'RTU',
         0x15: 'DREQ', 0x16: 'DREP', 0x17: 'SIDR_REQ', 0x18: 'SIDR_REP',
         0x19: 'LAP', 0x1a: 'APR'}
PACKET_OUTGOING = 4


def icrc(ip, udp, gsi):
    """The ICRC of IP header, UDP header, BTH... (without the ICRC)."""
    ip = bytearray(ip[:20])
    udp = bytearray(udp[:8])
    gsi = bytearray(gsi)
    ip[1] = 0xff                # type of service
    ip[8] = 0xff                # time to live
    ip[10:12] = b'\xff\xff'     # header checksum
    udp[6:8] = b'\xff\xff'      # checksum
    gsi[4] = 0xff               # BTH reserved byte
    return zlib.crc32(b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(gsi))


def parse(frame):
    """(src, dst, attr, local, remote, icrc_ok) of a CM MAD frame, or None."""
    if len(frame) < 14 + 20 + 8 + 20 + 256 + 4 or frame[12:14] != b'\x08\x00':
        return None
    ip = frame[14:]
    ihl = (ip[0] & 15) * 4
    if ip[0] >> 4 != 4 or ip[9] != 17 or ihl != 20:
        return None
    udp = ip[20:28]
    ulen = struct.unpack('!H', udp[4:6])[0]
    if struct.unpack('!H', udp[2:4])[0] != ROCE_PORT:
        return None
    gsi = ip[28:20 + ulen]
    if len(gsi) != 12 + 8 + 256 + 4 or gsi[0] != UD_SEND_ONLY or \
       gsi[5:8] != b'\x00\x00\x01':
        return None
    mad = gsi[20:276]
    if mad[1] != CM_CLASS:
        return None
    attr = ATTRS.get(struct.unpack('!H', mad[16:18])[0], 'attr?')
    first, second = struct.unpack('!II', mad[24:32])
    local, remote = first, second
    if attr == 'REQ' or attr == 'SIDR_REQ':
        remote = None
    elif attr == 'SIDR_REP':
        local, remote = None, first
    ok = struct.pack('<I', icrc(ip, udp, gsi[:-4])) == bytes(gsi[-4:])
    return (socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20]), attr,
            local, remote, ok)


def capture(ifaces):
    socks = []
    for name in ifaces:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                          socket.htons(0x0003))
        s.bind((name, 0))
        socks.append((s, name))
    # bound: from here on nothing is missed (audit skips this line)
    print('ready', flush=True)
    import select
    while True:
        ready, _, _ = select.select([s for s, _ in socks], [], [])
        for s, name in socks:
            if s not in ready:
                continue
            frame, addr = s.recvfrom(65535)
            m = parse(frame)
            if not m:
                continue
            src, dst, attr, local, remote, ok = m
            print(name, 'out' if addr[2] == PACKET_OUTGOING else 'in', src,
                  dst, attr, '-' if local is None else '%x' % local,
                  '-' if remote is None else '%x' % remote,
                  'ok' if ok else 'bad', flush=True)


def audit(vf_ips):
    lines = [ln.split() for ln in sys.stdin if len(ln.split()) == 8]
    own = {ip: set() for ip in vf_ips}
    for ifc, way, src, dst, attr, local, remote, ok in lines:
        # what a VF node itself sent, before the PF
        if way == 'out' and src in own and local != '-':
            own[src].add(local)
    bad = checked = 0
    for ln in lines:
        ifc, way, src, dst, attr, local, remote, ok = ln
        if ok != 'ok':
            print('bad ICRC:', ' '.join(ln))
            bad += 1
        if way != 'in':
            continue
        if src in own and local != '-':
            checked += 1
            if local in own[src] and not (attr == 'REJ' and local == '0'):
                print('VF id on the wire:', ' '.join(ln))
                bad += 1
        if dst in own and remote not in ('-', '0'):
            checked += 1
            if remote not in own[dst]:
                print('not the VF\'s id:', ' '.join(ln))
                bad += 1
    print('audit: %d MADs, %d ids checked, %d bad' % (len(lines), checked, bad))
    return 1 if bad or not checked else 0


def send(iface, src, dst, kind, local=None):
    mad = bytearray(256)
    mad[0:4] = bytes([1, CM_CLASS, 2, 3])   # base, class, version, Send
    mad[8:16] = os.urandom(8)               # transaction id
    # a DREQ, or a DREP for kind 'drep'
    mad[16:18] = struct.pack('!H', 0x16 if kind == 'drep' else 0x15)
    mad[24:32] = os.urandom(8)              # local and remote comm id
    if local is not None:
        mad[24:28] = struct.pack('!I', int(local, 16))
    bth = struct.pack('!BBHB3sB3s', UD_SEND_ONLY, 0, 0xffff, 0,
                      b'\x00\x00\x01', 0, b'\x00\x00\x00')
    deth = struct.pack('!IB3s', 0x80010000, 0, b'\x00\x00\x01')
    gsi = bth + deth + bytes(mad if kind != 'short' else mad[:100])
    ulen = 8 + len(gsi) + 4
    udp = struct.pack('!HHHH', 0xc001, ROCE_PORT, ulen, 0)
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + ulen,
                     struct.unpack('!H', os.urandom(2))[0] | 1, 0x4000, 64,
                     17, 0, socket.inet_aton(src), socket.inet_aton(dst))
    crc = icrc(ip, udp, gsi)
    if kind == 'bad-icrc':
        crc ^= 1
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, iface.encode())
    if kind == 'fragments':
        # two IP fragments, the first too short to show the BTH: what a
        # VF could use to slip a MAD past a hook that needs the headers
        body = udp + gsi + struct.pack('<I', crc)
        ipid = struct.unpack('!H', os.urandom(2))[0] | 1
        for off, part, more in ((0, body[:16], 0x2000), (2, body[16:], 0)):
            hdr = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(part), ipid,
                              more | off, 64, 17, 0, socket.inet_aton(src),
                              socket.inet_aton(dst))
            s.sendto(hdr + part, (dst, 0))
        return
    s.sendto(ip + udp + gsi + struct.pack('<I', crc), (dst, 0))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == 'capture':
        capture(sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == 'audit':
        return audit(sys.argv[2:])
    elif len(sys.argv) in (6, 7) and sys.argv[1] == 'send':
        send(*sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
