#!/usr/bin/env bash
# Side-by-side WebSocket benchmark on loopback: Coxswain (an HTTPRoute to a
# Service port with appProtocol kubernetes.io/ws), nginx (http proxy passing
# Upgrade/Connection on) and HAProxy (mode http, tunnel after the 101), each
# in front of the same echo origin. Every worker upgrades one connection,
# then sends one masked binary message at a time and reads its echo back.
# Headline figure: echoed messages per proxy CPU-second.
#
# usage: scripts/bench-ws.sh [--duration 6] [--concurrency 32] [--warmup 2]
#            [--message-bytes 128] [--proxies "coxswain nginx haproxy"]
#            [--coxswain-bin PATH] [--l4load-bin PATH] [--out bench/results/ws-latest.md]
#
# Proxies are pinned to core 0; the origin and the load generator to core 1.
# Everything started here is stopped on exit (trap), whatever happens.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=6
CONCURRENCY=32
WARMUP=2
MESSAGE_BYTES=128
PROXIES="coxswain nginx haproxy"
COXSWAIN_BIN=""
L4LOAD_BIN=""
OUT="$ROOT/bench/results/ws-latest.md"

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --message-bytes) MESSAGE_BYTES=$2; shift 2 ;;
    --proxies) PROXIES=$2; shift 2 ;;
    --coxswain-bin) COXSWAIN_BIN=$2; shift 2 ;;
    --l4load-bin) L4LOAD_BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$DURATION$CONCURRENCY$WARMUP$MESSAGE_BYTES" in
*[!0-9]*)
    echo "--duration, --concurrency, --warmup and --message-bytes take whole numbers" >&2
    exit 2
    ;;
esac
if [ "$DURATION" -lt 1 ] || [ "$CONCURRENCY" -lt 1 ] || [ "$WARMUP" -lt 1 ] ||
    [ "$MESSAGE_BYTES" -lt 1 ]; then
    echo "--duration, --concurrency, --warmup and --message-bytes must be at least 1" >&2
    exit 2
fi

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-ws.XXXXXX")
# procs.sh: start_pinned, stop_pid, stop_all_started, pid_tree, cpu_ticks,
# wait_http, free_port. setup.sh: ensure_packages, ensure_coxswain.
# l4.sh: ensure_l4load, render_config, start_coxswain_standalone,
# proxy_order, wait_tcp, drive_l4, load_ok, measure, not_measured, l4_versions.
# shellcheck source=../bench/lib/procs.sh
source "$ROOT/bench/lib/procs.sh"
# shellcheck source=../bench/lib/setup.sh
source "$ROOT/bench/lib/setup.sh"
# shellcheck source=../bench/lib/l4.sh
source "$ROOT/bench/lib/l4.sh"
cleanup() {
    stop_all_started
    rm -rf "$WORKDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NOTES=()
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
ensure_packages nginx:nginx-light haproxy:haproxy curl:curl taskset:util-linux \
    python3:python3 timeout:coreutils
ensure_l4load || exit 1
mkdir -p "$WORKDIR/tmp"

# ---- origin: the WebSocket echo, on core 1, checked directly -----------------
ORIGIN_PORT=$(free_port)
start_pinned origin-ws 1 "$L4LOAD_BIN" serve-ws-echo --listen "127.0.0.1:$ORIGIN_PORT"
WATCH_PID=$LAST_PID wait_tcp "$ORIGIN_PORT" 20
drive_l4 ws "$ORIGIN_PORT" 1 1 "$WORKDIR/origin-ws.json"
if [ "$(load_ok "$WORKDIR/origin-ws.json")" = 0 ]; then
    echo "origin check failed:" >&2
    cat "$WORKDIR/origin-ws.json" "$WORKDIR/origin-ws.json.err" >&2
    exit 1
fi

# ---- proxies: each sets PROXY_PID and PORT -----------------------------------
start_nginx() {
    PORT=$(free_port)
    render_config ws-nginx.conf "$WORKDIR/ws-nginx.conf" WORKDIR="$WORKDIR" PORT="$PORT" \
        ORIGIN_PORT="$ORIGIN_PORT"
    start_pinned proxy-nginx 0 nginx -p "$WORKDIR" -e "$WORKDIR/ws-nginx-error.log" \
        -c "$WORKDIR/ws-nginx.conf"
    PROXY_PID=$LAST_PID
}

start_haproxy() {
    PORT=$(free_port)
    render_config ws-haproxy.cfg "$WORKDIR/ws-haproxy.cfg" PORT="$PORT" \
        ORIGIN_PORT="$ORIGIN_PORT"
    start_pinned proxy-haproxy 0 haproxy -db -f "$WORKDIR/ws-haproxy.cfg"
    PROXY_PID=$LAST_PID
}

start_coxswain() {
    PORT=$(free_port)
    "$ROOT/bench/gen-coxswain-config.sh" "$WORKDIR/coxswain-config" "$PORT" "$ORIGIN_PORT" \
        kubernetes.io/ws
    start_coxswain_standalone "$WORKDIR/coxswain-config"
}

# ---- measurement -------------------------------------------------------------
RESULTS="$WORKDIR/results.jsonl"
: >"$RESULTS"
proxy_order "$PROXIES"

for proxy in $ORDER; do
    echo "== $proxy" >&2
    PROXY_PID="" PORT=""
    if ! "start_$proxy" || ! WATCH_PID=$PROXY_PID wait_tcp "$PORT" 60; then
        echo "$proxy did not become ready; its log:" >&2
        tail -20 "$WORKDIR/proxy-$proxy.log" >&2 || true
        NOTES+=("$proxy: did not become ready, not measured")
        if [ -n "$PROXY_PID" ]; then stop_pid "$PROXY_PID"; fi
        continue
    fi
    measure "$proxy" ws "$PORT" || not_measured "$proxy" ws "run failed"
    stop_pid "$PROXY_PID"
done

# ---- report ------------------------------------------------------------------
write_ws_report() {
    local out=$1 note
    mkdir -p "$(dirname "$out")"
    {
        echo "# WebSocket echo benchmark: latest results"
        echo
        echo "\`scripts/bench-ws.sh --duration $DURATION --concurrency $CONCURRENCY" \
            "--warmup $WARMUP --message-bytes $MESSAGE_BYTES\`, $(date -u +%Y-%m-%dT%H:%M:%SZ)."
        echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //');" \
            "load average before/after: ${LOADAVG_START:-?} / $(cut -d' ' -f1-3 /proc/loadavg)."
        echo
        echo "Each proxy is pinned to core 0 with one worker; the origin (\`coxswain-l4load"
        echo "serve-ws-echo\`) and the load generator share core 1. Load: \`coxswain-l4load ws\`,"
        echo "one thread, $CONCURRENCY connections, each upgraded once (GET /ws, Host ws.test,"
        echo "101 and Sec-WebSocket-Accept checked) and then sending one masked binary frame of"
        echo "$MESSAGE_BYTES bytes at a time and reading its echo back, checked byte for byte;"
        echo "${DURATION}s after a ${WARMUP}s warm-up on the same proxy that is not counted."
        echo "Proxy CPU: utime+stime delta over the run from /proc/PID/stat, summed over the"
        echo "proxy's processes. Errors: failed messages (+N hs: failed handshakes). Ratios are"
        echo "from this run only."
        echo
        if [ -s "$RESULTS" ]; then
            python3 "$ROOT/bench/lib/render_l4_table.py" "$RESULTS"
        else
            echo "(no results)"
        fi
        echo
        echo "Versions:"
        echo
        l4_versions "http proxy"
        if [ "${#NOTES[@]}" -gt 0 ]; then
            echo
            echo "Notes:"
            echo
            for note in "${NOTES[@]}"; do echo "- $note"; done
        fi
    } >"$out"
}

write_ws_report "$OUT"
cat "$OUT"
