#!/usr/bin/env bash
# Side-by-side L4 proxy benchmark on loopback: Coxswain, nginx (stream) and
# HAProxy (mode tcp), each with the same three listeners in front of the same
# echo origins: plain TCP, TLS passthrough chosen by SNI, and UDP (not in
# HAProxy's community edition: n/a). Headline figure: work per proxy CPU-second.
#
# usage: scripts/bench-l4.sh [--duration 6] [--concurrency 32] [--warmup 2]
#            [--proxies "coxswain nginx haproxy"] [--coxswain-bin PATH]
#            [--l4load-bin PATH] [--out bench/results/l4-latest.md]
#
# Proxies are pinned to core 0; the origins and the load generator to core 1.
# Everything started here is stopped on exit (trap), whatever happens.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=6
CONCURRENCY=32
WARMUP=2
PROXIES="coxswain nginx haproxy"
COXSWAIN_BIN=""
L4LOAD_BIN=""
OUT="$ROOT/bench/results/l4-latest.md"
TESTS="tcp-conn tcp-stream tls-conn udp"

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --proxies) PROXIES=$2; shift 2 ;;
    --coxswain-bin) COXSWAIN_BIN=$2; shift 2 ;;
    --l4load-bin) L4LOAD_BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$DURATION$CONCURRENCY$WARMUP" in
*[!0-9]*) echo "--duration, --concurrency and --warmup take whole numbers" >&2; exit 2 ;;
esac
if [ "$DURATION" -lt 1 ] || [ "$CONCURRENCY" -lt 1 ] || [ "$WARMUP" -lt 1 ]; then
    echo "--duration, --concurrency and --warmup must be at least 1" >&2
    exit 2
fi

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-l4.XXXXXX")
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
ensure_l4_tools
ensure_l4load || exit 1
make_certs "$WORKDIR/certs"

# ---- origins: one of each for every proxy, on core 1 ------------------------
ORIGIN_TCP_PORT=$(free_port) ORIGIN_TLS_PORT=$(free_port) ORIGIN_UDP_PORT=$(free_udp_port)
start_pinned origin-tcp 1 "$L4LOAD_BIN" serve-tcp-echo --listen "127.0.0.1:$ORIGIN_TCP_PORT"
WATCH_PID=$LAST_PID wait_tcp "$ORIGIN_TCP_PORT" 20
start_pinned origin-tls 1 "$L4LOAD_BIN" serve-tls-echo --listen "127.0.0.1:$ORIGIN_TLS_PORT" \
    --cert "$WORKDIR/certs/leaf.pem" --key "$WORKDIR/certs/leaf.key"
WATCH_PID=$LAST_PID wait_tcp "$ORIGIN_TLS_PORT" 20
start_pinned origin-udp 1 "$L4LOAD_BIN" serve-udp-echo --listen "127.0.0.1:$ORIGIN_UDP_PORT"
# Each origin answers directly before any proxy is measured.
for test in $TESTS; do
    port=$ORIGIN_TCP_PORT
    case $test in tls-conn) port=$ORIGIN_TLS_PORT ;; udp) port=$ORIGIN_UDP_PORT ;; esac
    drive_l4 "$test" "$port" 1 1 "$WORKDIR/origin-$test.json"
    if [ "$(load_ok "$WORKDIR/origin-$test.json")" = 0 ]; then
        echo "origin check failed for $test:" >&2
        cat "$WORKDIR/origin-$test.json" "$WORKDIR/origin-$test.json.err" >&2
        exit 1
    fi
done

# ---- proxies: each sets PROXY_PID, TCP_PORT, TLS_PORT, UDP_PORT -------------
# (UDP_PORT empty when the proxy has no UDP).
start_nginx() {
    local stream
    stream=$(nginx_stream_line) || { echo "nginx has no stream module" >&2; return 1; }
    TCP_PORT=$(free_port) TLS_PORT=$(free_port) UDP_PORT=$(free_udp_port)
    render_config l4-nginx.conf "$WORKDIR/l4-nginx.conf" LOAD_STREAM="$stream" \
        WORKDIR="$WORKDIR" TCP_PORT="$TCP_PORT" TLS_PORT="$TLS_PORT" UDP_PORT="$UDP_PORT" \
        ORIGIN_TCP_PORT="$ORIGIN_TCP_PORT" ORIGIN_TLS_PORT="$ORIGIN_TLS_PORT" \
        ORIGIN_UDP_PORT="$ORIGIN_UDP_PORT"
    start_pinned proxy-nginx 0 nginx -p "$WORKDIR" -e "$WORKDIR/l4-nginx-error.log" \
        -c "$WORKDIR/l4-nginx.conf"
    PROXY_PID=$LAST_PID
}

start_haproxy() {
    TCP_PORT=$(free_port) TLS_PORT=$(free_port) UDP_PORT=""
    render_config l4-haproxy.cfg "$WORKDIR/l4-haproxy.cfg" TCP_PORT="$TCP_PORT" \
        TLS_PORT="$TLS_PORT" ORIGIN_TCP_PORT="$ORIGIN_TCP_PORT" ORIGIN_TLS_PORT="$ORIGIN_TLS_PORT"
    start_pinned proxy-haproxy 0 haproxy -db -f "$WORKDIR/l4-haproxy.cfg"
    PROXY_PID=$LAST_PID
}

start_coxswain() {
    TCP_PORT=$(free_port) TLS_PORT=$(free_port) UDP_PORT=$(free_udp_port)
    "$ROOT/bench/gen-coxswain-l4-config.sh" "$WORKDIR/coxswain-config" "$TCP_PORT" \
        "$TLS_PORT" "$UDP_PORT" "$ORIGIN_TCP_PORT" "$ORIGIN_TLS_PORT" "$ORIGIN_UDP_PORT"
    start_coxswain_standalone "$WORKDIR/coxswain-config"
}

# ---- measurement ------------------------------------------------------------
RESULTS="$WORKDIR/results.jsonl"
: >"$RESULTS"
proxy_order "$PROXIES"

for proxy in $ORDER; do
    echo "== $proxy" >&2
    PROXY_PID="" TCP_PORT="" TLS_PORT="" UDP_PORT=""
    if ! "start_$proxy" || ! WATCH_PID=$PROXY_PID wait_tcp "$TCP_PORT" 60 ||
        ! WATCH_PID=$PROXY_PID wait_tcp "$TLS_PORT" 20; then
        echo "$proxy did not become ready; its log:" >&2
        tail -20 "$WORKDIR/proxy-$proxy.log" >&2 || true
        NOTES+=("$proxy: did not become ready, not measured")
        if [ -n "$PROXY_PID" ]; then stop_pid "$PROXY_PID"; fi
        continue
    fi
    for test in $TESTS; do
        port=$TCP_PORT
        case $test in tls-conn) port=$TLS_PORT ;; udp) port=$UDP_PORT ;; esac
        if [ -z "$port" ]; then
            not_measured "$proxy" "$test" "n/a, no UDP proxying in the community edition"
            continue
        fi
        measure "$proxy" "$test" "$port" || not_measured "$proxy" "$test" "run failed"
    done
    stop_pid "$PROXY_PID"
done

write_l4_report "$OUT"
cat "$OUT"
