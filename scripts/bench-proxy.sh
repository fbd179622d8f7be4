#!/usr/bin/env bash
# Side-by-side reverse-proxy benchmark on loopback: Coxswain, nginx, HAProxy
# and (when available) Envoy, each in front of the same nginx origin serving a
# fixed 1 KiB body. Headline figure: requests per proxy CPU-second.
#
# usage: scripts/bench-proxy.sh [--duration 10] [--connections 64]
#            [--proxies "coxswain nginx haproxy envoy"] [--coxswain-bin PATH]
#            (`coxswain-nolog`: Coxswain with its access log off; `coxswain`
#            writes every request's record to a file, its default cost;
#            `coxswain-traced`: log off, every request traced to Jaeger)
#            [--rounds 1] (each round measures every proxy again, in
#            turn; the tables give medians, so drift on a shared machine
#            hits all proxies alike) [--out bench/results/latest.md]
#            [--results FILE] (also keep the raw rows, tab-separated:
#            proxy protocol requests rps p50 p99 errors cpu_s round)
#
# Proxies are pinned to core 0; the origin and the load generators to core 1.
# Everything started here is stopped on exit (trap), whatever happens.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=10
CONNECTIONS=64
WARMUP=2
PROXIES="coxswain nginx haproxy envoy"
COXSWAIN_BIN=""
OUT="$ROOT/bench/results/latest.md"
ROWS_OUT=""
ROUNDS=1

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --proxies) PROXIES=$2; shift 2 ;;
    --coxswain-bin) COXSWAIN_BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --results) ROWS_OUT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$DURATION$CONNECTIONS$ROUNDS" in
*[!0-9]*) echo "--duration, --connections and --rounds take whole numbers" >&2; exit 2 ;;
esac

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-proxy.XXXXXX")
# shellcheck source=../bench/lib/procs.sh
source "$ROOT/bench/lib/procs.sh"
# shellcheck source=../bench/lib/load.sh
source "$ROOT/bench/lib/load.sh"
# shellcheck source=../bench/lib/setup.sh
source "$ROOT/bench/lib/setup.sh"
# shellcheck source=../bench/lib/http_proxies.sh
source "$ROOT/bench/lib/http_proxies.sh"
cleanup() {
    stop_all_started
    rm -rf "$WORKDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NOTES=()
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
ensure_tools
mkdir -p "$WORKDIR/tmp"
BODY=$(head -c 1024 /dev/zero | tr '\0' 'x')

# ---- origin ---------------------------------------------------------------
ORIGIN_PORT=$(free_port)
render_config origin-nginx.conf "$WORKDIR/origin.conf" \
    WORKDIR="$WORKDIR" ORIGIN_PORT="$ORIGIN_PORT" BODY="$BODY"
start_pinned origin 1 nginx -p "$WORKDIR" -e "$WORKDIR/origin-error.log" -c "$WORKDIR/origin.conf"
wait_http "http://127.0.0.1:$ORIGIN_PORT/" 20

# ---- measurement ------------------------------------------------------------
RESULTS="$WORKDIR/results.tsv"
: >"$RESULTS"

# measure PROXY PROTOCOL URL : warm up, then one measured run; appends a row.
measure() {
    local proxy=$1 protocol=$2 url=$3 pids before after parsed cpu_s
    local raw="$WORKDIR/$1-$2.out" log="$WORKDIR/$1-$2.log"
    mapfile -t pids < <(pid_tree "$PROXY_PID")
    drive "$protocol" "$url" "$WARMUP" /dev/null /dev/null
    before=$(cpu_ticks "${pids[@]}")
    drive "$protocol" "$url" "$DURATION" "$raw" "$log"
    after=$(cpu_ticks "${pids[@]}")
    parsed=$(parse_load "$protocol" "$raw" "$log") || { cat "$raw" >&2; return 1; }
    read -r requests rps p50 p99 errors <<<"$parsed"
    cpu_s=$(awk -v t=$((after - before)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$proxy" "$protocol" "$requests" "$rps" \
        "$p50" "$p99" "$errors" "$cpu_s" "$ROUND" >>"$RESULTS"
    echo "  $proxy $protocol: $rps req/s, p50 $p50 ms, p99 $p99 ms, errors $errors," \
        "proxy CPU $cpu_s s" >&2
}

# nginx is the reference for the ratios: always measured, and first. Builds
# and installs happen before any measurement so every proxy sees the same
# machine.
ORDER=nginx
for proxy in $PROXIES; do
    if [ "$proxy" != nginx ] && proxy_available "$proxy"; then ORDER+=" $proxy"; fi
done

for ROUND in $(seq 1 "$ROUNDS"); do
    for proxy in $ORDER; do
        echo "== $proxy (round $ROUND/$ROUNDS)" >&2
        PROXY_PID="" H1_URL="" H2C_URL=""
        if ! "start_$proxy" || ! WATCH_PID=$PROXY_PID wait_http "$H1_URL" 60 ||
            ! WATCH_PID=$PROXY_PID wait_http "$H2C_URL" 20 --http2-prior-knowledge; then
            echo "$proxy did not become ready; its log:" >&2
            tail -20 "$WORKDIR/proxy-$proxy.log" >&2 || true
            NOTES+=("$proxy: did not become ready, not measured")
            if [ -n "$PROXY_PID" ]; then stop_pid "$PROXY_PID"; fi
            continue
        fi
        measure "$proxy" http1 "$H1_URL" || NOTES+=("$proxy http1: run failed")
        measure "$proxy" h2c "$H2C_URL" || NOTES+=("$proxy h2c: run failed")
        stop_pid "$PROXY_PID"
        if declare -F "finish_$proxy" >/dev/null; then "finish_$proxy"; fi
    done
done

write_report "$OUT"
if [ -n "$ROWS_OUT" ]; then cp "$RESULTS" "$ROWS_OUT"; fi
cat "$OUT"
