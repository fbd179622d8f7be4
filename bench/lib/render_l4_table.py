"""Renders the results of the benchmarks driven by tools/l4load (JSON lines
written by scripts/bench-l4.sh and scripts/bench-ws.sh) as a markdown table
with ratios relative to nginx and to HAProxy on the same test. With --line,
prints a one-line summary of the last record instead."""

import json
import sys

MIB = 1024 * 1024
# test -> (rate unit, per-CPU unit)
UNITS = {
    "tcp-conn": ("conn/s", "conn"),
    "tcp-stream": ("MiB/s", "MiB"),
    "tls-conn": ("conn/s", "conn"),
    "udp": ("datagrams/s", "datagrams"),
    "ws": ("messages/s", "messages"),
}


def load_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(derive(json.loads(line)))
    return rows


def derive(record):
    """Adds amount, rate, per_cpu (None when not measured)."""
    row = dict(record)
    load = record.get("load")
    if not load:
        row.update(amount=None, rate=None, per_cpu=None)
        return row
    test = record["test"]
    if test == "tcp-stream":
        row["amount"] = load["received_bytes"] / MIB
        row["rate"] = load["received_mib_per_s"]
    elif test == "udp":
        row["amount"] = load["datagrams"]
        row["rate"] = load["datagrams_per_s"]
    elif test == "ws":
        row["amount"] = load["messages"]
        row["rate"] = load["messages_per_s"]
    else:
        row["amount"] = load["connections"]
        row["rate"] = load["connections_per_s"]
    cpu = record["cpu_s"]
    row["per_cpu"] = row["amount"] / cpu if cpu > 0 else None
    return row


def fmt_ratio(row, ref, key):
    if ref is None or row[key] is None or not ref[key]:
        return "n/a"
    return f"{row[key] / ref[key]:.2f}x"


def fmt_num(value, digits=0):
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def summary(row):
    test = row["test"]
    if row["rate"] is None:
        return f"  {row['proxy']} {test}: n/a ({row.get('note', '')})"
    load = row["load"]
    unit, per_unit = UNITS[test]
    extra = ""
    if test == "udp":
        extra = f", lost {load['lost']}"
    if "handshake_failures" in load:
        extra = f", failed handshakes {load['handshake_failures']}"
    if "p50_ms" in load:
        extra += f", p50 {load['p50_ms']:.2f} ms, p99 {load['p99_ms']:.2f} ms"
    if test == "tcp-stream":
        extra += f", sent {load['sent_mib_per_s']:,.0f} MiB/s"
    first = load.get("first_error")
    if first:
        extra += f", first error: {first}"
    return (
        f"  {row['proxy']} {test}: {fmt_num(row['rate'])} {unit}, errors {load['errors']}"
        f"{extra}, proxy CPU {row['cpu_s']:.2f} s, {fmt_num(row['per_cpu'])} {per_unit}/CPU-s"
    )


def errors_cell(load):
    """Errors, with failed WebSocket handshakes added as "+N hs"."""
    failed = load.get("handshake_failures")
    if failed:
        return f"{load['errors']} +{failed} hs"
    return str(load["errors"])


def render(rows):
    refs = {}
    for name in ("nginx", "haproxy"):
        refs[name] = {r["test"]: r for r in rows if r["proxy"] == name and r["rate"] is not None}
    out = [
        "| Proxy | Test | Rate | Unit | p50 ms | p99 ms | Errors | Lost | Proxy CPU s "
        "| **Per CPU-second** | Rate vs nginx | Per-CPU vs nginx "
        "| Rate vs HAProxy | Per-CPU vs HAProxy |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    order = {t: i for i, t in enumerate(UNITS)}
    for r in sorted(rows, key=lambda r: order.get(r["test"], 99)):
        unit, per_unit = UNITS.get(r["test"], ("", ""))
        if r["rate"] is None:
            cells = [r["proxy"], r["test"], "n/a", unit] + ["n/a"] * 10
            out.append("| " + " | ".join(cells) + " |")
            continue
        load = r["load"]
        nginx = refs["nginx"].get(r["test"])
        haproxy = refs["haproxy"].get(r["test"])
        p50 = f"{load['p50_ms']:.2f}" if "p50_ms" in load else "-"
        p99 = f"{load['p99_ms']:.2f}" if "p99_ms" in load else "-"
        lost = str(load["lost"]) if "lost" in load else "-"
        digits = 1 if r["test"] == "tcp-stream" else 0
        cells = [
            r["proxy"],
            r["test"],
            fmt_num(r["rate"], digits),
            unit,
            p50,
            p99,
            errors_cell(load),
            lost,
            f"{r['cpu_s']:.2f}",
            f"**{fmt_num(r['per_cpu'], digits)} {per_unit}**",
            fmt_ratio(r, nginx, "rate"),
            fmt_ratio(r, nginx, "per_cpu"),
            fmt_ratio(r, haproxy, "rate"),
            fmt_ratio(r, haproxy, "per_cpu"),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1] == "--line":
        print(summary(load_rows(sys.argv[2])[-1]))
    else:
        print(render(load_rows(sys.argv[1])))
