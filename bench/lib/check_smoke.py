"""Checks a smoke run of the proxy benchmark against the recorded ratios.

usage: check_smoke.py ROWS FLOOR [--record]

ROWS are scripts/bench-proxy.sh's raw rows; FLOOR holds, per protocol, the
ratio of Coxswain's requests per CPU-second to nginx's that was recorded
for the measured build. A ratio under half the recorded one, or any failed
request, is a gross regression and exits 1. With --record the measured
ratios replace the recorded ones."""

import sys

from render_table import load_rows

TOLERANCE = 0.5


def ratios(rows):
    per_cpu = {(r["proxy"], r["protocol"]): r["per_cpu"] for r in rows}
    out = {}
    for (proxy, protocol), value in per_cpu.items():
        reference = per_cpu.get(("nginx", protocol))
        if proxy == "coxswain" and reference:
            out[protocol] = value / reference
    return out


def read_floor(path):
    floor = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            protocol, ratio = line.split()
            floor[protocol] = float(ratio)
    return floor


def main(argv):
    rows_path, floor_path = argv[1], argv[2]
    rows = load_rows(rows_path)
    measured = ratios(rows)
    failed = [r for r in rows if r["errors"] > 0]
    if argv[3:] == ["--record"]:
        with open(floor_path, "w") as f:
            f.write("# protocol  Coxswain/nginx requests per CPU-second, recorded by\n")
            f.write("# scripts/bench-smoke.sh --record (debug build unless noted)\n")
            for protocol, ratio in sorted(measured.items()):
                f.write(f"{protocol} {ratio:.3f}\n")
        print(f"recorded {measured} in {floor_path}")
        return 0
    floor = read_floor(floor_path)
    problems = [f"{r['proxy']} {r['protocol']}: {r['errors']:.0f} failed requests" for r in failed]
    for protocol, recorded in sorted(floor.items()):
        ratio = measured.get(protocol)
        if ratio is None:
            problems.append(f"{protocol}: not measured")
            continue
        verdict = "ok" if ratio >= recorded * TOLERANCE else "GROSS REGRESSION"
        print(f"{protocol}: Coxswain/nginx per CPU-second {ratio:.3f} (recorded {recorded:.3f}, floor {recorded * TOLERANCE:.3f}) {verdict}")
        if verdict != "ok":
            problems.append(f"{protocol}: {ratio:.3f} < {recorded * TOLERANCE:.3f}")
    for p in problems:
        print(f"bench-smoke: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
