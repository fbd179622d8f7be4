#!/usr/bin/env bash
# Smoke run of the proxy benchmark for CI: a few seconds of HTTP/1.1 and h2c
# through Coxswain and nginx (scripts/bench-proxy.sh), then each protocol's
# requests per CPU-second relative to nginx is checked against the ratio
# recorded in bench/smoke/floor.tsv. It fails only when a ratio falls below
# half the recorded one, or a request fails: a gross regression, never noise.
#
# usage: scripts/bench-smoke.sh [--coxswain-bin PATH] [--floor FILE] [--record]
#   --coxswain-bin  the binary to measure (default: the debug build the
#                   test command made, target/debug/coxswain)
#   --floor         the recorded ratios for that build (default:
#                   bench/smoke/floor.tsv, recorded for the debug build)
#   --record        write the measured ratios to the floor file
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
COXSWAIN_BIN="$TARGET/debug/coxswain"
FLOOR="$ROOT/bench/smoke/floor.tsv"
RECORD=""
while [ "$#" -gt 0 ]; do
    case $1 in
    --coxswain-bin) COXSWAIN_BIN=$2; shift 2 ;;
    --floor) FLOOR=$2; shift 2 ;;
    --record) RECORD=1; shift ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
if [ ! -x "$COXSWAIN_BIN" ]; then
    echo "bench-smoke: no binary at $COXSWAIN_BIN (run cargo build -p coxswain first)" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$ROOT/scripts/bench-proxy.sh" --duration 3 --proxies coxswain --coxswain-bin "$COXSWAIN_BIN" \
    --out "$work/report.md" --results "$work/rows.tsv" >"$work/bench.log" 2>&1 || {
    cat "$work/bench.log" >&2
    exit 1
}
python3 "$ROOT/bench/lib/check_smoke.py" "$work/rows.tsv" "$FLOOR" ${RECORD:+--record}
