#!/usr/bin/env python3
"""TCP round trip of 8 bytes with blocking receives (TCP_NODELAY), the network's own latency
without MPI's polling: `tcp_pingpong.py server ADDR` on one node, `tcp_pingpong.py client
ADDR` on the other; the client prints one JSON line (median, min, p90 of 2000 round trips).
"""
import json
import socket, sys, time
mode, host = sys.argv[1], sys.argv[2]
n = 2000
if mode == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, 5555)); s.listen(1); c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(n):
        d = c.recv(8); c.sendall(d)
else:
    c = socket.create_connection((host, 5555)); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = []
    for i in range(n):
        t0 = time.perf_counter(); c.sendall(b"x" * 8); c.recv(8); t.append(time.perf_counter() - t0)
    t.sort()
    print(json.dumps({"op": "tcp round trip (python, blocking)", "bytes": 8, "ranks": 2, "reps": n,
                      "median_us": 1e6 * t[n // 2], "min_us": 1e6 * t[0], "p90_us": 1e6 * t[n * 9 // 10]}))
