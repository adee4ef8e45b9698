#!/usr/bin/env python3
"""How much bulk traffic one way slows bulk traffic the other way on a link:
the `reverse_traffic_cost` of a link in a sites file (docs/cluster.md
"Sites"). A full-duplex link with small queues has about 0; a link whose
queues are long (a bufferbloated uplink, or tools/bench/sites_netns.sh's
tbf links) delays the acknowledgements of one direction behind the data
of the other, and both directions slow down.

Measures, between two network namespaces joined by a veth pair shaped as
sites_netns.sh shapes a link (tbf, RATE MB/s, 256 kB burst, 400 ms queue):
the time to send BYTES one way alone, then BYTES each way at once, and the
round trip of a small request (an item pull's) on an idle link and while
bulk data flow the way the request goes. With
equal volumes each way the model's time for a direction is
(own + cost x other) / bandwidth, so cost = both / alone - 1. On real
hosts, `iperf3 --bidir` against `iperf3` gives the same two numbers.

  tools/bench/link_duplex.py [--mb-s 8,32,200] [--mbytes 24] [--rounds 3]

Needs root. Prints one line per bandwidth: alone, both, cost, and the two
round trips (medians of the rounds). Removes its namespaces whatever happens.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

# Serves on (address, port): "sink" reads everything, then answers one byte;
# "echo" sends back what it reads.
SERVER = r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(4)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    while (b := c.recv(1 << 20)):
        if sys.argv[3] == "echo":
            c.sendall(b)
    if sys.argv[3] == "sink":
        c.sendall(b"k")
    c.close()
"""

# Round trips of a 64-byte request and its answer, as an item pull's request
# and first bytes: the median over `count`, in seconds.
PING = r"""
import socket, statistics, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=120)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
rtt = []
for _ in range(int(sys.argv[3])):
    t0 = time.monotonic(); c.sendall(b"p" * 64); got = 0
    while got < 64:
        got += len(c.recv(64 - got))
    rtt.append(time.monotonic() - t0); time.sleep(0.05)
print(statistics.median(rtt), flush=True)
"""

CLIENT = r"""
import socket, sys, time
n = int(sys.argv[3]); buf = b"x" * (1 << 20)
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=120)
t0 = time.monotonic(); sent = 0
while sent < n:
    sent += c.send(buf[: min(len(buf), n - sent)])
c.shutdown(socket.SHUT_WR); c.recv(1)
print(time.monotonic() - t0, flush=True)
"""


def sh(*cmd):
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb-s", default="8,32,200")
    ap.add_argument("--mbytes", type=float, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("link_duplex: needs root (network namespaces)")
    tag = f"fdx{os.getpid()}"
    ns = [f"{tag}-a", f"{tag}-b"]
    addr = ["10.79.0.1", "10.79.0.2"]
    procs = []
    try:
        for n in ns:
            sh("ip", "netns", "add", n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
        sh("ip", "link", "add", f"a-{tag}", "netns", ns[0], "type", "veth", "peer", "name", f"b-{tag}", "netns", ns[1])
        for n, dev, ad in ((ns[0], f"a-{tag}", addr[0]), (ns[1], f"b-{tag}", addr[1])):
            sh("ip", "-n", n, "addr", "add", ad + "/24", "dev", dev)
            sh("ip", "-n", n, "link", "set", dev, "up")
        for i, n in enumerate(ns):
            procs.append(subprocess.Popen(["ip", "netns", "exec", n, sys.executable, "-c", SERVER, addr[i], "5400",
                                           "sink"],
                                          stdout=subprocess.PIPE, text=True))
            procs[-1].stdout.readline()
        echo = subprocess.Popen(["ip", "netns", "exec", ns[1], sys.executable, "-c", SERVER, addr[1], "5401", "echo"],
                                stdout=subprocess.PIPE, text=True)
        procs.append(echo)
        echo.stdout.readline()
        nbytes = int(a.mbytes * 1e6)

        def send(frm, to, size=None):
            return subprocess.Popen(["ip", "netns", "exec", ns[frm], sys.executable, "-c", CLIENT, addr[to], "5400",
                                     str(size or nbytes)], stdout=subprocess.PIPE, text=True)

        def ping(count):
            return subprocess.Popen(["ip", "netns", "exec", ns[0], sys.executable, "-c", PING, addr[1], "5401",
                                     str(count)], stdout=subprocess.PIPE, text=True)

        print("| MB/s | one way alone (s) | both ways at once (s) | reverse_traffic_cost | "
              "request round trip, idle (ms) | request round trip behind bulk data (ms) |")
        print("|---:|---:|---:|---:|---:|---:|")
        for mbs in [float(x) for x in a.mb_s.split(",")]:
            for n, dev in ((ns[0], f"a-{tag}"), (ns[1], f"b-{tag}")):
                subprocess.run(["tc", "-n", n, "qdisc", "del", "dev", dev, "root"], capture_output=True)
                sh("tc", "-n", n, "qdisc", "add", "dev", dev, "root", "handle", "2:", "tbf", "rate",
                   f"{int(mbs * 8e6)}bit", "burst", "256kb", "latency", "400ms")
            alone, both, idle, loaded = [], [], [], []
            for _ in range(a.rounds):
                p = send(0, 1)
                alone.append(float(p.communicate(timeout=600)[0]))
                time.sleep(0.5)
                p, q = send(0, 1), send(1, 0)
                both.append(max(float(p.communicate(timeout=600)[0]), float(q.communicate(timeout=600)[0])))
                time.sleep(0.5)
                idle.append(float(ping(10).communicate(timeout=600)[0]))
                p = send(0, 1, int(3 * mbs * 1e6))  # 3 s of bulk data the way the requests go
                time.sleep(0.3)
                loaded.append(float(ping(10).communicate(timeout=600)[0]))
                p.communicate(timeout=600)
                time.sleep(0.5)
            t1, t2 = statistics.median(alone), statistics.median(both)
            print(f"| {mbs:g} | {t1:.2f} | {t2:.2f} | {t2 / t1 - 1:.2f} | {1e3 * statistics.median(idle):.1f} | "
                  f"{1e3 * statistics.median(loaded):.1f} |", flush=True)
    finally:
        for p in procs:
            p.kill()
        for n in ns:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


if __name__ == "__main__":
    main()
