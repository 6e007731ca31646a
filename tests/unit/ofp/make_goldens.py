# Independent construction of golden OpenFlow 1.3 messages with struct.pack.
import struct, sys, subprocess
P = struct.pack
def hdr(t, body, xid=1, ver=4): return P('!BBHI', ver, t, 8+len(body), xid) + body
def pad8(b): return b + b'\0'*((8-len(b)%8)%8)
def oxm(field, val, width, mask=None):
    h = P('!HBB', 0x8000, (field<<1)|(1 if mask is not None else 0), width*(2 if mask is not None else 1))
    v = val.to_bytes(width,'big') + (mask.to_bytes(width,'big') if mask is not None else b'')
    return h+v
def match(*oxms):
    body = b''.join(oxms)
    return pad8(P('!HH', 1, 4+len(body)) + body)
def a_output(port, max_len=0xffff): return P('!HHIH6x', 0, 16, port, max_len)
def a_push_vlan(et=0x8100): return P('!HHH2x', 17, 8, et)
def a_pop_vlan(): return P('!HH4x', 18, 8)
def a_group(g): return P('!HHI', 22, 8, g)
def a_dec_ttl(): return P('!HH4x', 24, 8)
def a_set_field(o):
    b = P('!HH', 25, 0) + o; b = pad8(b); return P('!HH', 25, len(b)) + b[4:]
def i_goto(t): return P('!HHB3x', 1, 8, t)
def i_actions(t, acts):
    a = b''.join(acts); return P('!HH4x', t, 8+len(a)) + a
def i_clear(): return P('!HH4x', 5, 8)
def i_meter(m): return P('!HHI', 6, 8, m)
def port(no, hw, name, config=0, state=0, curr=0x802, adv=0, sup=0, peer=0, cs=10000000, ms=10000000):
    return P('!I4x6s2x16s8I', no, hw.to_bytes(6,'big'), name.encode().ljust(16,b'\0'), config, state, curr, adv, sup, peer, cs, ms)
def bucket(weight, wp, wg, acts):
    a = b''.join(acts); return P('!HHII4x', 16+len(a), weight, wp, wg) + a
def mp_req(t, body, flags=0, xid=1): return hdr(18, P('!HH4x', t, flags)+body, xid)
def mp_rep(t, body, flags=0, xid=1): return hdr(19, P('!HH4x', t, flags)+body, xid)

frame = bytes.fromhex('ffffffffffff 001122334455 0806 0001 0800 0604 0001 001122334455 0a000001 000000000000 0a000002')
ANY=0xffffffff; CTRL=0xfffffffd
G = {}
G['hello'] = hdr(0, P('!HHI', 1, 8, 0x10))
G['hello_plain'] = hdr(0, b'')
G['error'] = hdr(1, P('!HH', 1, 6) + bytes.fromhex('0400000800000001'), xid=7)
G['echo_request'] = hdr(2, b'abcd', xid=2)
G['echo_reply'] = hdr(3, b'abcd', xid=2)
G['features_request'] = hdr(5, b'', xid=3)
G['features_reply'] = hdr(6, P('!QIBB2xII', 0x0000aabbccddeeff, 256, 254, 0, 0x4f, 0), xid=3)
G['get_config_request'] = hdr(7, b'', xid=4)
G['get_config_reply'] = hdr(8, P('!HH', 0, 128), xid=4)
G['set_config'] = hdr(9, P('!HH', 0, 0xffff), xid=5)
G['barrier_request'] = hdr(20, b'', xid=6)
G['barrier_reply'] = hdr(21, b'', xid=6)
G['role_request'] = hdr(24, P('!I4xQ', 2, 5), xid=8)
G['role_reply'] = hdr(25, P('!I4xQ', 2, 5), xid=8)
G['packet_in'] = hdr(10, P('!IHBBQ', 0xffffffff, len(frame), 0, 0, 0) + match(oxm(0, 1, 4)) + b'\0\0' + frame, xid=0)
G['flow_removed'] = hdr(11, P('!QHBBIIHHQQ', 0x1234, 100, 0, 0, 10, 500, 60, 0, 5, 420) + match(oxm(5, 0x0800, 2), oxm(11, 0x0a000000, 4, 0xffffff00)), xid=0)
G['port_status'] = hdr(12, P('!B7x', 0) + port(1, 0x001122334455, 'eth1'), xid=0)
G['packet_out'] = hdr(13, P('!IIH6x', 0xffffffff, CTRL, 16) + a_output(2) + frame, xid=9)
G['flow_mod'] = hdr(14, P('!QQBBHHHIIIH2x', 0, 0, 0, 0, 0, 0, 100, 0xffffffff, ANY, ANY, 1) +
    match(oxm(0, 1, 4), oxm(5, 0x0800, 2), oxm(10, 6, 1), oxm(12, 0x0a000001, 4), oxm(14, 80, 2)) +
    i_actions(4, [a_output(2, 0)]), xid=10)
G['flow_mod_actions'] = hdr(14, P('!QQBBHHHIIIH2x', 0xabcd, 0xffff, 1, 1, 30, 300, 200, 0xffffffff, ANY, ANY, 0) +
    match(oxm(3, 0x0a0b0c0d0e00, 6, 0xffffffffff00), oxm(6, 0x1000|10, 2, 0x1fff), oxm(5, 0x0800, 2)) +
    i_meter(3) + i_actions(4, [a_dec_ttl(), a_pop_vlan(), a_push_vlan(), a_set_field(oxm(6, 0x1000|20, 2)), a_set_field(oxm(3, 0x020000000001, 6)), a_group(7)]) +
    i_clear() + i_actions(3, [a_output(CTRL, 128)]) + i_goto(2), xid=11)
G['hello_unknown_elem'] = hdr(0, P('!HH4x', 0x7, 4) + P('!HHI', 1, 8, 0x10) + P('!HH', 0x99, 6) + b'\x01\x02\0\0', xid=1)
G['group_mod'] = hdr(15, P('!HBxI', 0, 1, 1) + bucket(1, ANY, ANY, [a_output(1)]) + bucket(2, ANY, ANY, [a_output(2)]), xid=12)
G['meter_mod'] = hdr(29, P('!HHI', 0, 1|4, 1) + P('!HHII4x', 1, 16, 1000, 100) + P('!HHIIB3x', 2, 16, 2000, 200, 1), xid=13)
G['mp_desc_request'] = mp_req(0, b'', xid=20)
G['mp_flow_request'] = mp_req(1, P('!B3xII4xQQ', 0xff, ANY, ANY, 0, 0) + match(), xid=21)
G['mp_aggregate_request'] = mp_req(2, P('!B3xII4xQQ', 1, 2, ANY, 0x10, 0xff) + match(oxm(0, 1, 4)), xid=22)
G['mp_table_request'] = mp_req(3, b'', xid=23)
G['mp_port_stats_request'] = mp_req(4, P('!I4x', ANY), xid=24)
G['mp_group_desc_request'] = mp_req(7, b'', xid=25)
G['mp_meter_request'] = mp_req(9, P('!I4x', 0xffffffff), xid=26)
G['mp_port_desc_request'] = mp_req(13, b'', flags=0, xid=27)
def dstr(s, n): return s.encode().ljust(n, b'\0')
G['mp_desc_reply'] = mp_rep(0, dstr('Nicira, Inc.',256)+dstr('Open vSwitch',256)+dstr('3.1.0',256)+dstr('None',32)+dstr('s1',256), xid=20)
def flow_stats(table, dsec, dnsec, prio, idle, hard, flags, cookie, pk, by, m, insts):
    body = P('!BxIIHHHH4xQQQ', table, dsec, dnsec, prio, idle, hard, flags, cookie, pk, by) + m + insts
    return P('!H', 2+len(body)) + body
G['mp_flow_reply'] = mp_rep(1, flow_stats(0, 5, 100, 100, 0, 0, 1, 0x10, 3, 180, match(oxm(0, 1, 4)), i_actions(4, [a_output(2)])) +
                              flow_stats(0, 9, 0, 0, 0, 0, 0, 0, 7, 420, match(), i_actions(4, [a_output(CTRL, 0xffff)])), flags=1, xid=21)
G['mp_aggregate_reply'] = mp_rep(2, P('!QQI4x', 10, 600, 2), xid=22)
G['mp_table_reply'] = mp_rep(3, P('!B3xIQQ', 0, 2, 100, 90) + P('!B3xIQQ', 1, 0, 10, 0), xid=23)
G['mp_port_stats_reply'] = mp_rep(4, P('!I4x12QII', 1, 10, 20, 1000, 2000, 1, 2, 3, 4, 5, 6, 7, 8, 30, 500), xid=24)
G['mp_group_desc_reply'] = mp_rep(7, (lambda b: P('!HBxI', 8+len(b), 3, 5) + b)(bucket(0, 1, ANY, [a_output(1)]) + bucket(0, 2, ANY, [a_output(2)])), xid=25)
G['mp_meter_reply'] = mp_rep(9, P('!IH6xIQQII', 1, 40+16, 2, 50, 5000, 12, 34) + P('!QQ', 4, 400), xid=26)
G['mp_port_desc_reply'] = mp_rep(13, port(1, 0x001122334455, 'eth1') + port(0xfffffffe, 0x0a0b0c0d0e0f, 's1', config=1, state=1), xid=27)

if __name__ == '__main__':
    names = sys.argv[1:] or list(G)
    for n in names:
        h = G[n].hex()
        print('==', n, len(G[n]), h)
        if '--noprint' not in sys.argv:
            print(subprocess.run(['ovs-ofctl', 'ofp-print', h], capture_output=True, text=True).stdout + subprocess.run(['ovs-ofctl', 'ofp-print', h], capture_output=True, text=True).stderr)
