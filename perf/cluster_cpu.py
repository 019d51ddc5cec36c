#!/usr/bin/env python3
"""ClickHouse CPU per span in the local cluster (scripts/cluster.sh), for docs/fleet.md.

Starts two traceingest replicas (the binary given, release or debug) in cluster mode on a
database of their own, measures the four ClickHouse nodes' idle CPU for a few seconds, then
sends batches of 500 spans (50 traces of 10) from 4 connections for --secs seconds, waits
until every accepted span is in both replicas of its shard and ClickHouse has settled, and
prints ClickHouse CPU per span (idle CPU subtracted) and the ingest servers' CPU per span.

    scripts/cluster.sh up
    cargo build --release
    perf/cluster_cpu.py target/release/traceingest --secs 30
"""
import argparse
import json
import os
import subprocess
import threading
import time
import urllib.request

RUN = os.environ.get("CLUSTER_RUN_DIR", "/tmp/traceingest-cluster")
TICK = os.sysconf("SC_CLK_TCK")


def env_file():
    nodes, env = [], {}
    for line in open(f"{RUN}/env"):
        k, v = line.rstrip("\n").split("=", 1)
        if k == "NODE":
            name, shard, _, native, http, pid = v.split(" ")
            nodes.append((name, int(http), pid))
        else:
            env[k] = v
    return env, nodes


def cpu_s(pid):
    stat = open(f"/proc/{pid}/stat").read()
    f = stat[stat.rfind(")") + 2:].split(" ")
    return (int(f[11]) + int(f[12])) / TICK


def ch_cpu(nodes):
    return sum(cpu_s(open(p).read().strip()) for _, _, p in nodes)


def sql(http, q):
    req = urllib.request.Request(f"http://127.0.0.1:{http}/", data=q.encode())
    return urllib.request.urlopen(req).read().decode()


def body(tag):
    traces = [{"traceId": f"{tag}-t{t}", "traceName": "run", "spans": [
        {"spanId": f"s{s}", "spanType": "llm", "name": "chat",
         "startTime": 1_700_000_000_000 + s, "endTime": 1_700_000_000_500 + s,
         "provider": "openai.chat", "modelId": "gpt-4o",
         "usage": {"inputTokens": 1000, "outputTokens": 200}}
        for s in range(10)]} for t in range(50)]
    return json.dumps({"version": "v1", "traces": traces}).encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--secs", type=int, default=30)
    a = ap.parse_args()
    env, nodes = env_file()
    db = f"perf_cluster_{os.getpid()}"
    base = dict(os.environ, INGEST_CLICKHOUSE_URL=env["INGEST_CLICKHOUSE_URL"],
                INGEST_CLICKHOUSE_CLUSTER=env["INGEST_CLICKHOUSE_CLUSTER"],
                INGEST_CLICKHOUSE_DATABASE=db, INGEST_RATE_LIMIT_RPS="unlimited",
                INGEST_HOST="127.0.0.1", INGEST_WORKERS="1", INGEST_LOG="warn")
    subprocess.run([a.binary, "migrate"], env=base, check=True, capture_output=True)
    key = subprocess.run([a.binary, "keys", "create", "--org", "perf"], env=base,
                         check=True, capture_output=True).stdout.decode().strip()
    servers, ports = [], []
    for i in range(2):
        e = dict(base, INGEST_PORT=str(4600 + i), INGEST_DATA_DIR=f"/tmp/{db}-{i}")
        servers.append(subprocess.Popen([a.binary, "serve"], env=e, stdout=subprocess.DEVNULL))
        ports.append(4600 + i)
    time.sleep(2)
    idle0, t0 = ch_cpu(nodes), time.time()
    time.sleep(5)
    idle_rate = (ch_cpu(nodes) - idle0) / (time.time() - t0)
    accepted = [0]
    stop = time.time() + a.secs
    lock = threading.Lock()

    def post(n):
        i = 0
        while time.time() < stop:
            req = urllib.request.Request(
                f"http://127.0.0.1:{ports[(n + i) % 2]}/ingest", data=body(f"p{n}-{i}"),
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
            try:
                if urllib.request.urlopen(req).status == 202:
                    with lock:
                        accepted[0] += 500
            except urllib.error.HTTPError:
                time.sleep(0.05)
            i += 1

    ch0, ing0, start = ch_cpu(nodes), sum(cpu_s(s.pid) for s in servers), time.time()
    threads = [threading.Thread(target=post, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = lambda: [int(sql(h, f"SELECT count() FROM {db}.spans_local")) for _, h, _ in nodes]
    while sum(counts()) < 2 * accepted[0]:
        time.sleep(0.2)
    ing = sum(cpu_s(s.pid) for s in servers) - ing0
    time.sleep(3)  # the merges the load started
    took = time.time() - start
    ch = ch_cpu(nodes) - ch0 - idle_rate * took
    for s in servers:
        s.terminate()
        s.wait()
    sql(nodes[0][1], f"DROP DATABASE IF EXISTS {db} ON CLUSTER {env['INGEST_CLICKHOUSE_CLUSTER']}")
    n = accepted[0]
    print(f"{n} spans in {a.secs} s ({n / a.secs:.0f}/s) over 2 replicas; "
          f"ClickHouse idle {idle_rate:.2f} cores on 4 nodes; "
          f"ClickHouse CPU {ch:.1f} s above idle = {ch * 1e6 / n:.1f} us per span "
          f"(2 copies, merges included); ingest {ing:.1f} s = {ing * 1e6 / n:.1f} us per span")


if __name__ == "__main__":
    main()
