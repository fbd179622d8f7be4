"""Renders the proxy benchmark results (TSV rows) as a markdown table with
ratios relative to nginx on the same protocol. With several rounds, each
figure is the median over the rounds (errors are summed) and the spread of
requests per CPU-second is shown."""

import statistics
import sys

COLUMNS = ("proxy", "protocol", "requests", "rps", "p50_ms", "p99_ms", "errors", "cpu_s", "round")


def load_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == len(COLUMNS) - 1:
                fields.append("1")
            if len(fields) != len(COLUMNS):
                continue
            row = dict(zip(COLUMNS, fields))
            for key in ("requests", "rps", "p50_ms", "p99_ms", "errors", "cpu_s"):
                row[key] = float(row[key])
            row["per_cpu"] = row["requests"] / row["cpu_s"] if row["cpu_s"] > 0 else 0.0
            rows.append(row)
    return rows


def medians(rows):
    """One row per (proxy, protocol), in first-seen order: medians over the
    rounds, with the lowest and highest requests per CPU-second."""
    groups = {}
    for r in rows:
        groups.setdefault((r["proxy"], r["protocol"]), []).append(r)
    out = []
    for (proxy, protocol), runs in groups.items():
        row = {"proxy": proxy, "protocol": protocol, "runs": len(runs)}
        for key in ("requests", "rps", "p50_ms", "p99_ms", "cpu_s", "per_cpu"):
            row[key] = statistics.median(r[key] for r in runs)
        row["errors"] = sum(r["errors"] for r in runs)
        row["per_cpu_min"] = min(r["per_cpu"] for r in runs)
        row["per_cpu_max"] = max(r["per_cpu"] for r in runs)
        out.append(row)
    return out


def spread(r):
    if r["runs"] < 2:
        return ""
    return f" ({r['per_cpu_min']:,.0f}–{r['per_cpu_max']:,.0f}, {r['runs']} runs)"


def ratio(value, reference):
    return f"{value / reference:.2f}x" if reference else "n/a"


def render(raw):
    rows = medians(raw)
    nginx = {r["protocol"]: r for r in rows if r["proxy"] == "nginx"}
    out = [
        "| Proxy | Protocol | Requests/s | p50 ms | p99 ms | Errors | Proxy CPU s "
        "| **Requests per CPU-second** | Req/s vs nginx | Req/CPU-s vs nginx |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ref = nginx.get(r["protocol"])
        out.append(
            f"| {r['proxy']} | {r['protocol']} | {r['rps']:,.0f} | {r['p50_ms']:.2f} "
            f"| {r['p99_ms']:.2f} | {r['errors']:.0f} | {r['cpu_s']:.2f} "
            f"| **{r['per_cpu']:,.0f}**{spread(r)} "
            f"| {ratio(r['rps'], ref['rps']) if ref else 'n/a'} "
            f"| {ratio(r['per_cpu'], ref['per_cpu']) if ref else 'n/a'} |"
        )
    out.extend(render_costs(rows, raw))
    return "\n".join(out)


def render_costs(rows, raw):
    """Coxswain's access log and tracing against the same binary with both
    off (`coxswain-nolog`), when that was measured. The ratio is the median
    of each round's own ratio: a round's runs are minutes apart, so drift
    on a shared machine cancels."""
    off = {r["protocol"]: r for r in rows if r["proxy"] == "coxswain-nolog"}
    variants = {"coxswain": "access log to a file", "coxswain-traced": "tracing, 100% sampled"}
    costed = [r for r in rows if r["proxy"] in variants and r["protocol"] in off]
    if not costed:
        return []
    out = [
        "",
        "| Coxswain with | Protocol | Req/CPU-s | Req/CPU-s with both off | Ratio | Cost |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in costed:
        share = paired_ratio(raw, r["proxy"], r["protocol"])
        out.append(
            f"| {variants[r['proxy']]} | {r['protocol']} | {r['per_cpu']:,.0f} "
            f"| {off[r['protocol']]['per_cpu']:,.0f} | {share:.2f} | {(1 - share) * 100:.0f}% |"
        )
    return out


def paired_ratio(raw, proxy, protocol):
    """Median over rounds of proxy's requests per CPU-second divided by
    coxswain-nolog's in the same round."""
    def by_round(name):
        return {
            r["round"]: r["per_cpu"]
            for r in raw
            if r["proxy"] == name and r["protocol"] == protocol
        }

    mine, off = by_round(proxy), by_round("coxswain-nolog")
    ratios = [mine[k] / off[k] for k in mine if off.get(k)]
    return statistics.median(ratios) if ratios else 0.0


if __name__ == "__main__":
    print(render(load_rows(sys.argv[1])))
