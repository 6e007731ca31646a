#!/usr/bin/env python3
"""A one-shot OpenFlow peer for integration.tls: connects to the controller over TLS (optionally
presenting a client certificate) or plain TCP, sends an OpenFlow 1.3 HELLO and reports whether the
controller answered with its HELLO.

  tls_probe.py PORT tls --ca CA [--cert CERT --key KEY]
  tls_probe.py PORT plain

Prints one line; exit 0: the controller spoke OpenFlow (HELLO received), 1: refused (TLS alert,
reset or close before any OpenFlow), 2: no answer within the timeout (a hang is a failure too).
"""
import argparse
import socket
import ssl
import struct
import sys

HELLO = struct.pack("!BBHI", 4, 0, 8, 1)  # OFPT_HELLO, version 1.3, xid 1


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the controller")
        buf += chunk
    return buf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("mode", choices=["tls", "plain"])
    ap.add_argument("--ca")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--timeout", type=float, default=5.0)
    a = ap.parse_args()

    raw = socket.create_connection(("127.0.0.1", a.port), timeout=a.timeout)
    s = raw
    try:
        if a.mode == "tls":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False  # OVS-style certificates name no host; the chain is checked
            ctx.load_verify_locations(a.ca)
            if a.cert:
                ctx.load_cert_chain(a.cert, a.key)
            s = ctx.wrap_socket(raw)  # handshake (TLS 1.3: the server checks our cert after this)
        s.sendall(HELLO)
        head = read_exact(s, 8)
        version, msg_type, length, _ = struct.unpack("!BBHI", head)
        if msg_type == 0:
            print(f"hello: controller answered OFPT_HELLO version {version}")
            return 0
        print(f"spoke: controller sent type {msg_type} first")
        return 0
    except socket.timeout:
        print("timeout: no answer and no close")
        return 2
    except (ssl.SSLError, ConnectionError, OSError) as e:
        print(f"refused: {type(e).__name__}: {e}")
        return 1
    finally:
        s.close()


if __name__ == "__main__":
    sys.exit(main())
