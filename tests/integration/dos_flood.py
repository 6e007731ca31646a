#!/usr/bin/env python3
"""Table-miss flood for integration.dos: raw Ethernet frames from this namespace's interface,
addressed (L2) to one host of the testbed, each with a fresh IPv4 destination in 10.0.1.0 -
10.0.255.255 (namespace-local addresses no host has: the receiving kernel drops them), so every
frame misses the flow table of the switches that match on IPv4 addresses. Stops by itself after
--seconds; prints the number of frames sent."""
import argparse
import socket
import struct
import time


def checksum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iface", required=True)
    ap.add_argument("--src-mac", required=True)
    ap.add_argument("--dst-mac", required=True)
    ap.add_argument("--src-ip", required=True)
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
    eth = mac(a.dst_mac) + mac(a.src_mac) + b"\x08\x00"
    src = socket.inet_aton(a.src_ip)
    frames = []
    for n in range(256, 65536):  # 10.0.1.0 .. 10.0.255.255
        dst = bytes([10, 0, n >> 8, n & 0xFF])
        udp = struct.pack("!HHHH", 40000, 9, 8 + 18, 0) + b"\0" * 18
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst)
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        frames.append(eth + ip + udp)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    sent = 0
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        for f in frames[sent % len(frames):sent % len(frames) + 512]:
            try:
                s.send(f)
                sent += 1
            except BlockingIOError:
                pass
            except OSError:
                time.sleep(0.001)
    print(sent)


if __name__ == "__main__":
    main()
