#!/usr/bin/env python3
"""A minimal role-aware OpenFlow 1.3 controller for ofbench's failover test (not a product).

Each emulated switch that connects gets HELLO, FEATURES_REQUEST, then ROLE_REQUEST with this
controller's role and generation 1. A master answers every PACKET_IN with a PACKET_OUT carrying
the frame back (ofbench correlates by the frame). A slave probes the switch's role rules once per
switch (a FLOW_MOD, which must come back as OFPBRC_IS_SLAVE, and a ROLE_REQUEST(MASTER) with a
stale generation 0, which must come back as OFPRRFC_STALE), then polls --watch (the master's
port): once nothing listens there, it waits --takeover-ms and sends ROLE_REQUEST(MASTER) with
generation 2 on every channel, and from then on answers PACKET_INs. On SIGTERM it writes what it
saw as JSON (--report).
"""
import argparse
import asyncio
import json
import signal
import struct
import sys

OFP_VERSION = 4
HELLO, ERROR, ECHO_REQ, ECHO_REP, FEAT_REQ, FEAT_REP = 0, 1, 2, 3, 5, 6
PACKET_IN, FLOW_MOD, PACKET_OUT, ROLE_REQ, ROLE_REP = 10, 14, 13, 24, 25
ROLE_MASTER, ROLE_SLAVE = 2, 3
NO_BUFFER = 0xFFFFFFFF


def msg(t, xid, body=b""):
    return struct.pack("!BBHI", OFP_VERSION, t, 8 + len(body), xid) + body


def role_request(role, gen, xid):
    return msg(ROLE_REQ, xid, struct.pack("!I4xQ", role, gen))


def flow_mod_add(xid):
    # OFPFC_ADD, priority 1, no buffer, empty match (type OXM, length 4, padded to 8), no instructions.
    body = struct.pack("!QQBBHHHIIIH2x", 0, 0, 0, 0, 0, 0, 1, NO_BUFFER, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    body += struct.pack("!HH4x", 1, 4)
    return msg(FLOW_MOD, xid, body)


def packet_out(data, xid):
    action = struct.pack("!HHIH6x", 0, 16, 1, 0xFFFF)  # OFPAT_OUTPUT port 1
    return msg(PACKET_OUT, xid, struct.pack("!IIH6x", NO_BUFFER, 0xFFFFFFFD, len(action)) + action + data)


class Ctl:
    def __init__(self, a):
        self.a = a
        self.master = a.role == "master"
        self.gen = 1
        self.chans = []
        self.stats = {"role": a.role, "switches": 0, "packet_ins": 0, "packet_outs": 0, "role_replies": 0,
                      "is_slave_errors": 0, "stale_errors": 0, "other_errors": 0, "took_over": False}
        self.xid = 100

    def next_xid(self):
        self.xid += 1
        return self.xid

    async def serve(self, reader, writer):
        self.chans.append(writer)
        writer.write(msg(HELLO, self.next_xid()))
        try:
            while True:
                hdr = await reader.readexactly(8)
                _, t, length, xid = struct.unpack("!BBHI", hdr)
                body = await reader.readexactly(length - 8)
                self.handle(writer, t, xid, body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            if writer in self.chans:
                self.chans.remove(writer)

    def handle(self, w, t, xid, body):
        s = self.stats
        if t == HELLO:
            w.write(msg(FEAT_REQ, self.next_xid()))
        elif t == ECHO_REQ:
            w.write(msg(ECHO_REP, xid, body))
        elif t == FEAT_REP:
            s["switches"] += 1
            w.write(role_request(ROLE_MASTER if self.master else ROLE_SLAVE, self.gen, self.next_xid()))
            if not self.master:  # the switch's rules, probed once per switch
                w.write(flow_mod_add(self.next_xid()))
                w.write(role_request(ROLE_MASTER, 0, self.next_xid()))
        elif t == ROLE_REP:
            s["role_replies"] += 1
        elif t == ERROR:
            etype, code = struct.unpack("!HH", body[:4])
            if (etype, code) == (1, 10):
                s["is_slave_errors"] += 1
            elif (etype, code) == (11, 0):
                s["stale_errors"] += 1
            else:
                s["other_errors"] += 1
        elif t == PACKET_IN:
            s["packet_ins"] += 1
            if not self.master:
                return
            mlen = struct.unpack("!H", body[18:20])[0]
            data = body[16 + (mlen + 7) // 8 * 8 + 2:]
            w.write(packet_out(data, self.next_xid()))
            s["packet_outs"] += 1

    async def watch(self):
        if self.master or not self.a.watch:
            return
        # Armed only once the master's port has been seen open: under load the master may start
        # listening after this process does, and a refused connect then is not a failure.
        seen_open = False
        while True:
            await asyncio.sleep(0.02)
            try:
                _, w = await asyncio.open_connection("127.0.0.1", self.a.watch)
                w.close()
                seen_open = True
            except OSError:
                if seen_open:
                    break
        await asyncio.sleep(self.a.takeover_ms / 1000)
        self.gen = 2
        self.master = True
        s = self.stats
        s["took_over"] = True
        for w in list(self.chans):
            w.write(role_request(ROLE_MASTER, self.gen, self.next_xid()))


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--role", choices=["master", "slave"], required=True)
    p.add_argument("--watch", type=int, default=0, help="slave: the master's port")
    p.add_argument("--takeover-ms", type=float, default=300)
    p.add_argument("--report", default="")
    a = p.parse_args()
    ctl = Ctl(a)
    server = await asyncio.start_server(ctl.serve, "127.0.0.1", a.port)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    watcher = asyncio.create_task(ctl.watch())
    await stop.wait()
    watcher.cancel()
    server.close()
    if a.report:
        json.dump(ctl.stats, open(a.report, "w"))
    sys.exit(0)


if __name__ == "__main__":
    asyncio.run(main())
