#!/usr/bin/env python3
"""Route-churn soak of `coxswain run` (driven by scripts/soak-churn.sh).

Loads ROUTES HTTPRoutes in FILES files, requests each once, then for
DURATION seconds keeps changing them (PAUSE seconds apart) the three ways config tools do, each change checked through
the gateway before the next one:

- edit: one route's path changes (file rewritten atomically); the new path
  must answer 200;
- rename: one route is replaced by a route of a new name, hostname and path
  (the old object is gone for good); the new one must answer 200 and the
  old hostname 404;
- file: a new file of EXTRA routes with new names appears and the previous
  one is deleted; the new routes must answer 200, the deleted ones 404.

Every SAMPLE seconds it records the process's RSS, its anonymous part and
the number of lines /metrics serves. After the warm-up (the first tenth of
the run, at least 60 s) the baseline is the median of the next tenth; the
end is the median of the last tenth. It fails when the end exceeds the
baseline by more than 5% + 2 MiB (RSS or anonymous), when /metrics grew by
more than 5%, or when any change was not served within 10 s.
"""

import argparse
import http.client
import os
import random
import statistics
import sys
import time

TIMEOUT = 10.0
EXTRA = 10


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--admin-port", type=int, required=True)
    p.add_argument("--echo-port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--routes", type=int, default=5000)
    p.add_argument("--files", type=int, default=50)
    p.add_argument("--duration", type=float, default=3600)
    p.add_argument("--sample", type=float, default=10)
    p.add_argument("--samples-out", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pause", type=float, default=0.2,
                   help="seconds between changes (churn rate, and CPU left to others)")
    p.add_argument("--write-only", action="store_true",
                   help="write the initial files and exit")
    return p.parse_args()


def route_yaml(name, host, path, echo_port):
    return f"""apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: {name}
spec:
  parentRefs:
  - name: soak
  hostnames: ["{host}"]
  rules:
  - matches:
    - path: {{type: PathPrefix, value: {path}}}
    backendRefs:
    - name: echo
      port: {echo_port}
"""


class Routes:
    """The route set as files: file index -> list of (name, host, path)."""

    def __init__(self, args):
        self.args = args
        self.files = [[] for _ in range(args.files)]
        for i in range(args.routes):
            self.files[i % args.files].append((f"r{i}", f"h{i}.soak", f"/r{i}/v0"))
        self.generation = 0

    def write(self, index):
        text = "---\n".join(route_yaml(n, h, p, self.args.echo_port)
                            for n, h, p in self.files[index])
        write_atomic(self.args.dir, f"routes-{index:02}.yaml", text)

    def fresh(self, stem):
        self.generation += 1
        g = self.generation
        return (f"{stem}-g{g}", f"{stem}-g{g}.soak", f"/{stem}/v{g}")


def write_atomic(directory, name, text):
    tmp = os.path.join(directory, f".{name}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(directory, name))


class Client:
    def __init__(self, port):
        self.port = port
        self.conn = None
        self.errors = 0

    def status(self, host, path):
        """The answer's status, or None when the connection failed."""
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            self.conn.request("GET", path, headers={"Host": host})
            response = self.conn.getresponse()
            response.read()
            return response.status
        except (OSError, http.client.HTTPException):
            self.conn = None
            self.errors += 1
            return None

    def wait_for(self, host, path, want, timeout=TIMEOUT):
        """Seconds until (host, path) answers `want`, or None after `timeout`."""
        start = time.monotonic()
        while True:
            if self.status(host, path) == want:
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                return None
            time.sleep(0.0005)


def proc_kib(pid):
    rss = anon = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("RssAnon:"):
                anon = int(line.split()[1])
    return rss, anon


def metrics_lines(admin_port):
    conn = http.client.HTTPConnection("127.0.0.1", admin_port, timeout=10)
    conn.request("GET", "/metrics")
    body = conn.getresponse().read()
    conn.close()
    return body.count(b"\n")


def main():
    args = parse_args()
    routes = Routes(args)
    if args.write_only:
        for index in range(args.files):
            routes.write(index)
        return 0
    rng = random.Random(args.seed)
    client = Client(args.port)
    last = routes.files[(args.routes - 1) % args.files][-1]
    if client.wait_for(last[1], last[2], 200, timeout=300) is None:
        print(f"the gateway never served {last}", file=sys.stderr)
        return 1
    # Every route answers once first: a route's series appear with its
    # first request, and that must not read as growth.
    for file_routes in routes.files:
        for _, host, path in file_routes:
            if client.wait_for(host, path, 200) is None:
                print(f"the gateway never served {host}{path}", file=sys.stderr)
                return 1
    client.errors = 0

    failures = []
    latencies = []
    counts = {"edit": 0, "rename": 0, "file": 0}
    extra_index = 0
    extra_routes = []
    samples = []
    start = time.monotonic()
    next_sample = start
    kinds = ["edit", "rename", "file"]
    step = 0
    with open(args.samples_out, "w") as out:
        out.write("seconds\trss_kib\tanon_kib\tmetrics_lines\tchanges\n")
        while True:
            now = time.monotonic()
            if now >= next_sample:
                rss, anon = proc_kib(args.pid)
                lines = metrics_lines(args.admin_port)
                samples.append((now - start, rss, anon, lines))
                out.write(f"{now - start:.1f}\t{rss}\t{anon}\t{lines}\t{sum(counts.values())}\n")
                out.flush()
                next_sample += args.sample
            if now - start >= args.duration:
                break
            kind = kinds[step % len(kinds)]
            step += 1
            index = rng.randrange(args.files)
            file_routes = routes.files[index]
            slot = rng.randrange(len(file_routes))
            name, host, old_path = file_routes[slot]
            if kind == "edit":
                routes.generation += 1
                path = f"/{name}/v{routes.generation}"
                file_routes[slot] = (name, host, path)
                routes.write(index)
                checks = [(host, path, 200)]
            elif kind == "rename":
                new = routes.fresh(f"r{index}x{slot}")
                file_routes[slot] = new
                routes.write(index)
                checks = [(new[1], new[2], 200), (host, old_path, 404)]
            else:
                fresh = [routes.fresh(f"extra{extra_index}-{j}") for j in range(EXTRA)]
                text = "---\n".join(route_yaml(n, h, p, args.echo_port) for n, h, p in fresh)
                write_atomic(args.dir, f"extra-{extra_index}.yaml", text)
                checks = [(h, p, 200) for _, h, p in fresh]
                if extra_routes:
                    os.remove(os.path.join(args.dir, f"extra-{extra_index - 1}.yaml"))
                    checks += [(h, p, 404) for _, h, p in extra_routes]
                extra_routes = fresh
                extra_index += 1
            began = time.monotonic()
            for check_host, check_path, want in checks:
                if client.wait_for(check_host, check_path, want) is None:
                    failures.append(f"{kind}: {check_host}{check_path} not {want} within {TIMEOUT} s")
            latencies.append(time.monotonic() - began)
            counts[kind] += 1
            time.sleep(args.pause)

    if client.errors:
        failures.append(f"{client.errors} requests failed at the connection")
    return judge(args, samples, latencies, counts, failures)


def judge(args, samples, latencies, counts, failures):
    duration = samples[-1][0] if samples else 0
    warm = max(60.0, duration / 10)
    tenth = max(duration / 10, args.sample * 3)
    base = [s for s in samples if warm <= s[0] < warm + tenth]
    end = [s for s in samples if s[0] >= duration - tenth]
    ok = not failures
    print(f"changes: {sum(counts.values())} ({counts['edit']} edits, {counts['rename']} renames, "
          f"{counts['file']} file swaps) in {duration:.0f} s, {len(failures)} not served in time")
    if latencies:
        latencies.sort()
        q = lambda f: latencies[round((len(latencies) - 1) * f)] * 1e3
        print(f"change to checked: p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, max {q(1.0):.1f} ms")
    if not base or not end or base is end:
        print("run too short to judge growth (needs warm-up + two tenths)")
        return 0 if ok else 1
    for label, column in (("RSS", 1), ("anonymous", 2)):
        b = statistics.median(s[column] for s in base)
        e = statistics.median(s[column] for s in end)
        limit = b * 1.05 + 2048
        verdict = "ok" if e <= limit else "GROWTH"
        ok &= e <= limit
        print(f"{label}: baseline {b / 1024:.1f} MiB -> end {e / 1024:.1f} MiB "
              f"({(e - b) / 1024:+.1f} MiB; limit {limit / 1024:.1f}) {verdict}")
    b = statistics.median(s[3] for s in base)
    e = statistics.median(s[3] for s in end)
    verdict = "ok" if e <= b * 1.05 else "GROWTH"
    ok &= e <= b * 1.05
    print(f"/metrics lines: baseline {b:.0f} -> end {e:.0f} {verdict}")
    for failure in failures[:10]:
        print(f"  {failure}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
