#!/usr/bin/env bash
# Memory side by side on loopback: what an idle keep-alive client connection
# costs in Coxswain, nginx and HAProxy (HTTP/1.1 and h2c, one worker each, in
# front of the same nginx origin), and what Coxswain's whole `coxswain run`
# process holds with N HTTPRoutes.
#
# usage: scripts/bench-memory.sh [--connections 8000] [--routes "5000 20000"]
#            [--proxies "coxswain nginx haproxy"] [--coxswain-bin PATH]
#            [--out bench/results/memory.md]
#
# Idle cost = (RSS with the connections open, each after one answered
# request; Coxswain's HTTP/1.1 ones once it parked them) - (RSS before),
# divided by the count; RSS summed over the proxy's
# processes. Everything started here is stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONNECTIONS=8000
ROUTE_COUNTS="5000 20000"
PROXIES="coxswain nginx haproxy"
COXSWAIN_BIN=""
OUT="$ROOT/bench/results/memory.md"

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --connections) CONNECTIONS=$2; shift 2 ;;
    --routes) ROUTE_COUNTS=$2; shift 2 ;;
    --proxies) PROXIES=$2; shift 2 ;;
    --coxswain-bin) COXSWAIN_BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$CONNECTIONS${ROUTE_COUNTS// /}" in
*[!0-9]*) echo "--connections and --routes take whole numbers" >&2; exit 2 ;;
esac

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-memory.XXXXXX")
# shellcheck source=../bench/lib/procs.sh
source "$ROOT/bench/lib/procs.sh"
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
ensure_tools
# Each held connection is a descriptor in the client and one in the proxy;
# HAProxy sizes its own limit as two per maxconn.
wanted=$((CONNECTIONS * 2 + 4096)) hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$wanted" ]; then
    echo "the open-files limit ($hard) is below the $wanted this run needs; lower --connections" >&2
    exit 2
fi
ulimit -n "$wanted"
mkdir -p "$WORKDIR/tmp"
if [ -z "$COXSWAIN_BIN" ]; then
    (cd "$ROOT" && cargo build --release --quiet -p coxswain)
    COXSWAIN_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/coxswain"
fi
BODY=$(head -c 1024 /dev/zero | tr '\0' 'x')

ORIGIN_PORT=$(free_port)
render_config origin-nginx.conf "$WORKDIR/origin.conf" \
    WORKDIR="$WORKDIR" ORIGIN_PORT="$ORIGIN_PORT" BODY="$BODY"
start_pinned origin 1 nginx -p "$WORKDIR" -e "$WORKDIR/origin-error.log" -c "$WORKDIR/origin.conf"
wait_http "http://127.0.0.1:$ORIGIN_PORT/" 20

# rss_kib PID... : resident set size (KiB) summed over the processes.
rss_kib() {
    local total=0 pid kib
    for pid in "$@"; do
        kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || continue
        total=$((total + ${kib:-0}))
    done
    echo "$total"
}

# Coxswain's idle HTTP/1.1 connections with their buffers released.
parked_connections() {
    curl -s "$ADMIN_URL/metrics" |
        awk '$1 == "coxswain_proxy_http1_parked_connections" { n = $2 } END { print n + 0 }'
}

RESULTS="$WORKDIR/results.tsv"
: >"$RESULTS"

# idle PROXY PROTOCOL URL : one row of the idle-connection table.
idle() {
    local proxy=$1 protocol=$2 url=$3 hostport host port pids before after fifo ready
    hostport=${url#http://}
    hostport=${hostport%/}
    host=${hostport%:*} port=${hostport##*:}
    mapfile -t pids < <(pid_tree "$PROXY_PID")
    # A few requests first, so one-time allocations are not counted.
    python3 "$ROOT/bench/idle_clients.py" "$host" "$port" 16 "$protocol" </dev/null >/dev/null
    before=$(rss_kib "${pids[@]}")
    fifo="$WORKDIR/hold-$proxy-$protocol"
    mkfifo "$fifo"
    python3 "$ROOT/bench/idle_clients.py" "$host" "$port" "$CONNECTIONS" "$protocol" \
        <"$fifo" >"$fifo.out" 2>"$fifo.err" &
    local client=$!
    exec 9>"$fifo"
    local deadline=$((SECONDS + 120))
    until grep -q '^ready' "$fifo.out" 2>/dev/null; do
        if ! kill -0 "$client" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
            cat "$fifo.err" >&2
            exec 9>&-
            return 1
        fi
        wait_a_moment
    done
    read -r _ ready failed <"$fifo.out"
    # Coxswain parks an idle HTTP/1.1 connection (frees its buffers) after
    # 100 ms: measured once it has parked them all.
    if [ "$proxy" = coxswain ] && [ "$protocol" = h1 ]; then
        deadline=$((SECONDS + 60))
        until [ "$(parked_connections)" -ge "$ready" ]; do
            if [ "$SECONDS" -ge "$deadline" ]; then
                NOTES+=("coxswain h1: only $(parked_connections) of $ready connections parked")
                break
            fi
            wait_a_moment
        done
    fi
    after=$(rss_kib "${pids[@]}")
    exec 9>&-
    wait "$client" || true
    printf 'idle\t%s\t%s\t%s\t%s\t%s\t%s\n' "$proxy" "$protocol" "$ready" "$failed" \
        "$before" "$after" >>"$RESULTS"
    echo "  $proxy $protocol: $ready idle connections ($failed failed)," \
        "RSS ${before} -> ${after} KiB" >&2
}

for proxy in $PROXIES; do
    for protocol in h1 h2; do
        echo "== $proxy $protocol" >&2
        PROXY_PID="" H1_URL="" H2C_URL=""
        if ! MAX_CONNECTIONS=$((CONNECTIONS + 256)) "start_$proxy"; then
            NOTES+=("$proxy: did not start"); continue
        fi
        url=$H1_URL
        [ "$protocol" = h2 ] && url=$H2C_URL
        if ! WATCH_PID=$PROXY_PID wait_http "$H1_URL" 60; then
            NOTES+=("$proxy: did not become ready"); stop_pid "$PROXY_PID"; continue
        fi
        idle "$proxy" "$protocol" "$url" || NOTES+=("$proxy $protocol: idle run failed")
        stop_pid "$PROXY_PID"
    done
done

# routes COUNT : RSS of `coxswain run` serving COUNT HTTPRoutes (one per
# path, all to the origin), after one request to the last route.
routes() {
    local count=$1 dir="$WORKDIR/routes-$1" port admin
    port=$(free_port) admin=$(free_port)
    "$ROOT/bench/gen-coxswain-config.sh" "$dir" "$port" "$ORIGIN_PORT"
    python3 - "$dir" "$count" <<'PY'
import sys
dir, count = sys.argv[1], int(sys.argv[2])
with open(f"{dir}/many-routes.yaml", "w") as out:
    for i in range(count):
        out.write(f"""---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: r{i}
  namespace: default
spec:
  parentRefs:
  - name: bench
  hostnames: ["h{i}.example.com"]
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /r{i}}}
    backendRefs:
    - {{name: origin, port: 80}}
""")
PY
    start_pinned "routes-$count" 0 env TOKIO_WORKER_THREADS=1 RUST_LOG=warn \
        "$COXSWAIN_BIN" run --config "$dir" --admin-address "127.0.0.1:$admin" \
        --bind-address 127.0.0.1
    local pid=$LAST_PID last=$((count - 1))
    if ! WATCH_PID=$pid wait_http "http://127.0.0.1:$port/r$last" 300 \
        -H "Host: h$last.example.com"; then
        NOTES+=("coxswain with $count routes: did not serve the last route"); stop_pid "$pid"; return
    fi
    local anon
    anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status")
    printf 'routes\tcoxswain\t%s\t%s\t%s\n' "$count" "$(rss_kib "$pid")" "$anon" >>"$RESULTS"
    echo "  coxswain with $count routes: RSS $(rss_kib "$pid") KiB, anonymous $anon KiB" >&2
    stop_pid "$pid"
}

if [[ " $PROXIES " == *" coxswain "* ]]; then
    echo "== coxswain with 0 ${ROUTE_COUNTS} routes" >&2
    for count in 1 $ROUTE_COUNTS; do routes "$count"; done
fi

mkdir -p "$(dirname "$OUT")"
python3 "$ROOT/bench/lib/render_memory_table.py" "$RESULTS" "$CONNECTIONS" \
    "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "${NOTES[@]+"${NOTES[@]}"}" >"$OUT"
cat "$OUT"
