#!/usr/bin/env python3
"""Renders scripts/bench-memory.sh's results as Markdown.

usage: render_memory_table.py RESULTS.tsv CONNECTIONS GIT_REV [NOTE...]

Rows: `idle PROXY PROTOCOL READY FAILED RSS_BEFORE RSS_AFTER` (KiB) and
`routes coxswain COUNT RSS ANON` (KiB; ANON: RssAnon, the process's own
memory, without the binary's shared file pages).
"""

import datetime
import sys


def main() -> int:
    path, connections, rev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    notes = sys.argv[4:]
    idle, routes = [], []
    with open(path) as results:
        for line in results:
            row = line.rstrip("\n").split("\t")
            if row[0] == "idle":
                idle.append(row[1:])
            elif row[0] == "routes":
                anon = int(row[4]) if len(row) > 4 else 0
                routes.append((int(row[2]), int(row[3]), anon))
    out = [
        f"# Memory — {datetime.date.today().isoformat()}, git {rev}",
        "",
        f"Idle keep-alive client connections: {connections} opened, one request answered on",
        "each, then held idle; cost = RSS growth / connections held. One worker each.",
        "",
        "| proxy | protocol | held | failed | RSS before (MiB) | RSS after (MiB) | KiB per idle connection |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for proxy, protocol, ready, failed, before, after in idle:
        held = int(ready)
        per = (int(after) - int(before)) / held if held else float("nan")
        out.append(
            f"| {proxy} | {protocol} | {held} | {failed} | {int(before) / 1024:.1f} "
            f"| {int(after) / 1024:.1f} | {per:.1f} |"
        )
    if routes:
        routes.sort()
        base_count, base_rss, base_anon = routes[0]
        out += [
            "",
            "`coxswain run` serving N HTTPRoutes (one hostname and path each), after a request",
            "to the last one. Anonymous: RSS without the binary's file pages (shared, and",
            "reclaimable by the kernel):",
            "",
            "| routes | RSS (MiB) | anonymous (MiB) | KiB per route above the smallest config |",
            "|---:|---:|---:|---:|",
        ]
        for count, rss, anon in routes:
            per = (rss - base_rss) / (count - base_count) if count > base_count else float("nan")
            out.append(f"| {count} | {rss / 1024:.1f} | {anon / 1024:.1f} | {per:.2f} |")
    if notes:
        out += ["", "Notes:", ""] + [f"- {note}" for note in notes]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
