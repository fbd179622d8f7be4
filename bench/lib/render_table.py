"""Renders the proxy benchmark results (TSV rows) as a markdown table with
ratios relative to nginx on the same protocol."""

import sys

COLUMNS = ("proxy", "protocol", "requests", "rps", "p50_ms", "p99_ms", "errors", "cpu_s")


def load_rows(path):
    rows = []
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(COLUMNS):
                continue
            row = dict(zip(COLUMNS, fields))
            for key in ("requests", "rps", "p50_ms", "p99_ms", "errors", "cpu_s"):
                row[key] = float(row[key])
            row["per_cpu"] = row["requests"] / row["cpu_s"] if row["cpu_s"] > 0 else 0.0
            rows.append(row)
    return rows


def ratio(value, reference):
    return f"{value / reference:.2f}x" if reference else "n/a"


def render(rows):
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
            f"| **{r['per_cpu']:,.0f}** "
            f"| {ratio(r['rps'], ref['rps']) if ref else 'n/a'} "
            f"| {ratio(r['per_cpu'], ref['per_cpu']) if ref else 'n/a'} |"
        )
    out.extend(render_costs(rows))
    return "\n".join(out)


def render_costs(rows):
    """Coxswain's access log and tracing against the same binary with both
    off (`coxswain-nolog`), when that was measured."""
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
        ref = off[r["protocol"]]["per_cpu"]
        share = r["per_cpu"] / ref if ref else 0.0
        out.append(
            f"| {variants[r['proxy']]} | {r['protocol']} | {r['per_cpu']:,.0f} | {ref:,.0f} "
            f"| {share:.2f} | {(1 - share) * 100:.0f}% |"
        )
    return out


if __name__ == "__main__":
    print(render(load_rows(sys.argv[1])))
