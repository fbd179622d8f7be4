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

# render_config TEMPLATE OUT KEY=VALUE... : replace @KEY@ placeholders.
render_config() {
    local template=$1 out=$2 kv script=""
    shift 2
    for kv in "$@"; do
        script+="s|@${kv%%=*}@|${kv#*=}|g;"
    done
    sed -e "$script" "$ROOT/bench/configs/$template" >"$out"
}

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
    local admin help args
    TCP_PORT=$(free_port) TLS_PORT=$(free_port) UDP_PORT=$(free_udp_port) admin=$(free_port)
    "$ROOT/bench/gen-coxswain-l4-config.sh" "$WORKDIR/coxswain-config" "$TCP_PORT" \
        "$TLS_PORT" "$UDP_PORT" "$ORIGIN_TCP_PORT" "$ORIGIN_TLS_PORT" "$ORIGIN_UDP_PORT"
    args=(run --config "$WORKDIR/coxswain-config" --bind-address 127.0.0.1
        --admin-address "127.0.0.1:$admin")
    help=$("$COXSWAIN_BIN" run --help 2>&1 || true)
    if grep -q -- '--worker-threads' <<<"$help"; then args+=(--worker-threads 1); fi
    # tokio's multi-thread runtime honours TOKIO_WORKER_THREADS when the
    # binary does not set a worker count itself.
    start_pinned proxy-coxswain 0 env TOKIO_WORKER_THREADS=1 RUST_LOG=warn \
        "$COXSWAIN_BIN" "${args[@]}"
    PROXY_PID=$LAST_PID
    WATCH_PID=$PROXY_PID wait_http "http://127.0.0.1:$admin/readyz" 60
}

# ---- measurement ------------------------------------------------------------
RESULTS="$WORKDIR/results.jsonl"
: >"$RESULTS"

# measure PROXY TEST PORT : warm up (which must succeed), then one measured
# run with the proxy's CPU time around it; appends a record.
measure() {
    local proxy=$1 test=$2 port=$3 pids before after cpu_s
    local out="$WORKDIR/$proxy-$test.json"
    mapfile -t pids < <(pid_tree "$PROXY_PID")
    drive_l4 "$test" "$port" "$WARMUP" "$CONCURRENCY" "$WORKDIR/$proxy-$test-warmup.json"
    if [ "$(load_ok "$WORKDIR/$proxy-$test-warmup.json")" = 0 ]; then
        echo "  $proxy $test: nothing got through during the warm-up:" >&2
        cat "$WORKDIR/$proxy-$test-warmup.json" "$WORKDIR/$proxy-$test-warmup.json.err" >&2
        return 1
    fi
    before=$(cpu_ticks "${pids[@]}")
    drive_l4 "$test" "$port" "$DURATION" "$CONCURRENCY" "$out"
    after=$(cpu_ticks "${pids[@]}")
    if [ "$(load_ok "$out")" = 0 ]; then
        cat "$out" "$out.err" >&2
        return 1
    fi
    cpu_s=$(awk -v t=$((after - before)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
    printf '{"proxy":"%s","test":"%s","cpu_s":%s,"load":%s}\n' "$proxy" "$test" "$cpu_s" \
        "$(head -1 "$out")" >>"$RESULTS"
    python3 "$ROOT/bench/lib/render_l4_table.py" --line "$RESULTS" >&2
}

not_measured() {
    printf '{"proxy":"%s","test":"%s","note":"%s"}\n' "$1" "$2" "$3" >>"$RESULTS"
    NOTES+=("$1 $2: $3")
}

# nginx is always measured, first; builds happen before any measurement so
# every proxy sees the same machine.
ORDER=nginx
for proxy in $PROXIES; do
    case $proxy in
    nginx) ;;
    haproxy) ORDER+=" haproxy" ;;
    coxswain) if ensure_coxswain; then ORDER+=" coxswain"; fi ;;
    *) NOTES+=("$proxy: not supported by the L4 benchmark, skipped") ;;
    esac
done

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
