#!/usr/bin/env bash
# Side-by-side unary gRPC benchmark on loopback: Coxswain (a GRPCRoute on an
# HTTP listener), nginx (grpc_pass), HAProxy (proto h2 both ways) and Envoy
# (only when a binary is already installed), each in front of the same
# backend: grpc-go's interop TestService (h2c, grpc.testing.TestService,
# tools/grpc-interop/server built by tools/grpc-interop/build.sh). Load:
# h2load with prior knowledge, a fixed number of unary calls, each a POST of
# one length-prefixed message with content-type application/grpc and
# te: trailers. h2load only sees HTTP statuses, so every run is also checked
# by its response bytes (every call must return the message a successful
# call returns; a gRPC error is a trailers-only answer with no body), and
# each proxy must first pass a curl call showing `grpc-status: 0` and the
# interop client's empty_unary and large_unary cases.
# Headline figure: calls per proxy CPU-second (utime+stime from
# /proc/PID/stat, summed over the proxy's processes). Ratios Coxswain/nginx
# and Coxswain/HAProxy from this one run.
#
# usage: scripts/bench-grpc.sh [--calls N] [--method EmptyCall|UnaryCall] [--proxies "..."]
# Knobs (environment variables; the flags above override the first three):
#   CALLS=200000         calls measured per proxy (h2load -n)
#   METHOD=EmptyCall     EmptyCall (5-byte request and answer) or UnaryCall
#   PAYLOAD=0            UnaryCall only: request payload bytes, and response_size asked for
#   PROXIES="coxswain nginx haproxy envoy"  nginx is always measured (the reference);
#                        envoy only when `envoy` is on PATH (nothing is installed for it)
#   WARMUP_CALLS=20000   calls of the same load before each measurement, not counted
#   CONNECTIONS=16 STREAMS=10  h2load -c / -m: 160 calls in flight
#   MAX_SECONDS=120      bound on each h2load run; a run cut off by it FAILS
#   PROXY_CPU=0 LOAD_CPU=1  cores for the proxies / for backend + load generator
#   COXSWAIN_BIN=        skip `cargo build --release -p coxswain`, use this binary
#   INTEROP_SERVER= INTEROP_CLIENT=  skip tools/grpc-interop/build.sh, use these
#   OUT=                 also write the markdown report to this file
# Example: CALLS=50000 METHOD=UnaryCall PAYLOAD=1024 scripts/bench-grpc.sh
#
# Missing tools (nginx-light, haproxy, curl, h2load from nghttp2-client) are
# installed with apt-get when run as root; the interop binaries need Go.
# Everything started here is stopped on exit (trap), whatever happens.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CALLS=${CALLS:-200000}
METHOD=${METHOD:-EmptyCall}
PAYLOAD=${PAYLOAD:-0}
PROXIES=${PROXIES:-coxswain nginx haproxy envoy}
WARMUP_CALLS=${WARMUP_CALLS:-20000}
CONNECTIONS=${CONNECTIONS:-16}
STREAMS=${STREAMS:-10}
MAX_SECONDS=${MAX_SECONDS:-120}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
COXSWAIN_BIN=${COXSWAIN_BIN:-}
INTEROP_SERVER=${INTEROP_SERVER:-}
INTEROP_CLIENT=${INTEROP_CLIENT:-}
OUT=${OUT:-}

usage() { sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --calls) CALLS=$2; shift 2 ;;
    --method) METHOD=$2; shift 2 ;;
    --proxies) PROXIES=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1 (knobs are environment variables, see --help)" >&2; exit 2 ;;
    esac
done
for knob in CALLS PAYLOAD WARMUP_CALLS CONNECTIONS STREAMS MAX_SECONDS PROXY_CPU LOAD_CPU; do
    case ${!knob} in
    '' | *[!0-9]*) echo "$knob takes a whole number (got '${!knob}')" >&2; exit 2 ;;
    esac
done
if [ "$CALLS" -lt 1 ] || [ "$WARMUP_CALLS" -lt 1 ] || [ "$CONNECTIONS" -lt 1 ] ||
    [ "$STREAMS" -lt 1 ] || [ "$MAX_SECONDS" -lt 1 ]; then
    echo "CALLS, WARMUP_CALLS, CONNECTIONS, STREAMS and MAX_SECONDS must be at least 1" >&2
    exit 2
fi
case $METHOD in
EmptyCall)
    if [ "$PAYLOAD" != 0 ]; then echo "PAYLOAD applies to METHOD=UnaryCall only" >&2; exit 2; fi ;;
UnaryCall) ;;
*) echo "METHOD is EmptyCall or UnaryCall" >&2; exit 2 ;;
esac
GRPC_PATH=/grpc.testing.TestService/$METHOD

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-grpc.XXXXXX")
# procs.sh: start_pinned, stop_pid, stop_all_started, pid_tree, cpu_ticks,
# core_busy, busy_pct, wait_http, free_port. setup.sh: ensure_coxswain.
# shellcheck source=../bench/lib/procs.sh
source "$ROOT/bench/lib/procs.sh"
# shellcheck source=../bench/lib/setup.sh
source "$ROOT/bench/lib/setup.sh"
LOAD_PIDS=()
cleanup() {
    local pid
    # Load generators still running (interrupted run): stop them first.
    for pid in "${LOAD_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    stop_all_started
    rm -rf "$WORKDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NOTES=()
START_SECONDS=$SECONDS
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# ---- tools -------------------------------------------------------------------
ensure_grpc_tools() {
    ensure_packages nginx:nginx-light haproxy:haproxy curl:curl h2load:nghttp2-client \
        taskset:util-linux python3:python3 timeout:coreutils
}
ensure_grpc_tools

if [ -z "$INTEROP_SERVER" ] || [ -z "$INTEROP_CLIENT" ]; then
    echo "building the gRPC interop server and client (cached)" >&2
    interop_paths=$(timeout 600 "$ROOT/tools/grpc-interop/build.sh") || interop_paths=""
    mapfile -t interop <<<"$interop_paths"
    if [ "${#interop[@]}" -lt 2 ]; then
        echo "tools/grpc-interop/build.sh failed (it needs Go); set INTEROP_SERVER/INTEROP_CLIENT" >&2
        exit 1
    fi
    INTEROP_SERVER=${INTEROP_SERVER:-${interop[0]}} INTEROP_CLIENT=${INTEROP_CLIENT:-${interop[1]}}
fi
for bin in "$INTEROP_SERVER" "$INTEROP_CLIENT"; do
    [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 1; }
done

# Proxies on PROXY_CPU, backend and load generator on LOAD_CPU (taskset), as
# in the other benchmarks; both cores must exist.
for core in "$PROXY_CPU" "$LOAD_CPU"; do
    if ! taskset -c "$core" true 2>/dev/null; then
        echo "cannot pin to core $core (nproc = $(nproc)); set PROXY_CPU / LOAD_CPU" >&2
        exit 2
    fi
done
if [ "$PROXY_CPU" = "$LOAD_CPU" ]; then
    echo "warning: PROXY_CPU = LOAD_CPU: proxies and load generator share a core" >&2
fi

# ---- the request: one length-prefixed gRPC message ---------------------------
mkdir -p "$WORKDIR/tmp"
REQUEST_FILE=$WORKDIR/request.bin
# EmptyCall: an empty grpc.testing.Empty. UnaryCall: a SimpleRequest with
# response_size = PAYLOAD (field 2) and a Payload (field 3) whose body
# (field 2) is PAYLOAD zero bytes; PAYLOAD=0 is the empty SimpleRequest.
python3 - "$METHOD" "$PAYLOAD" >"$REQUEST_FILE" <<'PY'
import sys
method, n = sys.argv[1], int(sys.argv[2])
def varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | 0x80 if v else b)
        if not v:
            return bytes(out)
def field(num, wire_type, payload):
    return varint(num << 3 | wire_type) + payload
msg = b""
if method == "UnaryCall" and n:
    body = field(2, 2, varint(n) + b"\0" * n)
    msg = field(2, 0, varint(n)) + field(3, 2, varint(len(body)) + body)
sys.stdout.buffer.write(b"\0" + len(msg).to_bytes(4, "big") + msg)
PY
REQUEST_BYTES=$(stat -c %s "$REQUEST_FILE")
GRPC_HEADERS=(-H 'content-type: application/grpc' -H 'te: trailers')

# grpc_call PORT OUT : one call with curl (h2c prior knowledge); prints
# "http_status grpc_status body_bytes", verbose log in OUT.log, body in OUT.
grpc_call() {
    local port=$1 out=$2 http grpc
    : >"$out"
    http=$(curl --http2-prior-knowledge -sv --max-time 5 --data-binary "@$REQUEST_FILE" \
        "${GRPC_HEADERS[@]}" -o "$out" -w '%{http_code}' \
        "http://127.0.0.1:$port$GRPC_PATH" 2>"$out.log") || http=000
    # Headers and trailers alike appear as "< name: value" in curl -v.
    grpc=$(sed -n 's/^< grpc-status: *\([0-9]*\).*/\1/p' "$out.log" | tr -d '\r' | head -1)
    echo "$http ${grpc:-none} $(stat -c %s "$out")"
}

# ---- backend: the interop server, one Go thread, on the load core -------------
BACKEND_PORT=$(free_port)
start_pinned backend "$LOAD_CPU" env GOMAXPROCS=1 "$INTEROP_SERVER" -port "$BACKEND_PORT"
BACKEND_PID=$LAST_PID
deadline=$((SECONDS + 20))
until [ "$(grpc_call "$BACKEND_PORT" "$WORKDIR/backend-call" | cut -d' ' -f1-2)" = "200 0" ]; do
    if ! kill -0 "$BACKEND_PID" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
        echo "the interop server did not answer $GRPC_PATH with grpc-status 0:" >&2
        cat "$WORKDIR/backend.log" "$WORKDIR/backend-call.log" >&2 || true
        exit 1
    fi
    wait_a_moment
done
# What every successful call returns: the reference for the checks below.
RESPONSE_BYTES=$(stat -c %s "$WORKDIR/backend-call")
if [ "$RESPONSE_BYTES" -lt 5 ]; then
    echo "the interop server's answer has no gRPC message ($RESPONSE_BYTES bytes)" >&2
    exit 1
fi

# ---- proxies: start_X sets PID[X] and PORT[X] --------------------------------
declare -A PID PORT CHECK

start_nginx() {
    local port
    port=$(free_port)
    cat >"$WORKDIR/proxy-nginx.conf" <<EOF
# nginx proxying gRPC: one worker, h2c listener, grpc_pass with an upstream
# keep-alive pool (nginx's gRPC proxy uses one stream per upstream connection).
daemon off;
worker_processes 1;
pid $WORKDIR/proxy-nginx.pid;
error_log $WORKDIR/proxy-nginx-error.log warn;
events {
    worker_connections 4096;
}
http {
    access_log off;
    keepalive_requests 10000000;
    keepalive_timeout 120s;
    client_body_temp_path $WORKDIR/tmp/proxy-body;
    upstream grpc_backend {
        server 127.0.0.1:$BACKEND_PORT;
        keepalive 256;
        keepalive_requests 10000000;
    }
    server {
        listen 127.0.0.1:$port http2;
        location / {
            grpc_pass grpc://grpc_backend;
        }
    }
}
EOF
    start_pinned proxy-nginx "$PROXY_CPU" nginx -p "$WORKDIR" \
        -e "$WORKDIR/proxy-nginx-error.log" -c "$WORKDIR/proxy-nginx.conf"
    PID[nginx]=$LAST_PID PORT[nginx]=$port
}

start_haproxy() {
    local port
    port=$(free_port)
    cat >"$WORKDIR/proxy-haproxy.cfg" <<EOF
# HAProxy proxying gRPC: one thread, HTTP/2 both ways, backend connections
# shared across clients.
global
    nbthread 1
    maxconn 8192
defaults
    mode http
    timeout connect 5s
    timeout client 120s
    timeout server 120s
    option http-keep-alive
    http-reuse always
frontend bench
    bind 127.0.0.1:$port proto h2
    default_backend grpc_backend
backend grpc_backend
    server interop 127.0.0.1:$BACKEND_PORT proto h2
EOF
    start_pinned proxy-haproxy "$PROXY_CPU" haproxy -db -f "$WORKDIR/proxy-haproxy.cfg"
    PID[haproxy]=$LAST_PID PORT[haproxy]=$port
}

start_envoy() {
    local port admin
    port=$(free_port) admin=$(free_port)
    cat >"$WORKDIR/proxy-envoy.yaml" <<EOF
# Envoy proxying gRPC (run with --concurrency 1): h2c listener, HTTP/2 cluster.
admin:
  address:
    socket_address: { address: 127.0.0.1, port_value: $admin }
static_resources:
  listeners:
    - name: bench
      address:
        socket_address: { address: 127.0.0.1, port_value: $port }
      filter_chains:
        - filters:
            - name: envoy.filters.network.http_connection_manager
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                stat_prefix: bench
                codec_type: AUTO
                route_config:
                  virtual_hosts:
                    - name: all
                      domains: ["*"]
                      routes:
                        - match: { prefix: "/" }
                          route: { cluster: interop }
                http_filters:
                  - name: envoy.filters.http.router
                    typed_config:
                      "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
    - name: interop
      type: STATIC
      connect_timeout: 5s
      typed_extension_protocol_options:
        envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
          "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
          explicit_http_config:
            http2_protocol_options: {}
      load_assignment:
        cluster_name: interop
        endpoints:
          - lb_endpoints:
              - endpoint:
                  address:
                    socket_address: { address: 127.0.0.1, port_value: $BACKEND_PORT }
EOF
    start_pinned proxy-envoy "$PROXY_CPU" envoy -c "$WORKDIR/proxy-envoy.yaml" \
        --concurrency 1 -l warning --disable-hot-restart
    PID[envoy]=$LAST_PID PORT[envoy]=$port
}

start_coxswain() {
    local port admin help args dir=$WORKDIR/coxswain-config
    port=$(free_port) admin=$(free_port)
    mkdir -p "$dir"
    cat >"$dir/bench.yaml" <<EOF
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: coxswain
spec:
  controllerName: coxswain-labs.dev/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: bench
  namespace: default
spec:
  gatewayClassName: coxswain
  addresses:
    - type: IPAddress
      value: 127.0.0.1
  listeners:
    - name: h2c
      port: $port
      protocol: HTTP
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata:
  name: interop
  namespace: default
spec:
  parentRefs:
    - name: bench
  rules:
    - matches:
        - method:
            service: grpc.testing.TestService
      backendRefs:
        - name: interop
          port: $BACKEND_PORT
---
apiVersion: v1
kind: Service
metadata:
  name: interop
  namespace: default
spec:
  ports:
    - port: $BACKEND_PORT
      protocol: TCP
      appProtocol: kubernetes.io/h2c
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: interop-1
  namespace: default
  labels:
    kubernetes.io/service-name: interop
addressType: IPv4
ports:
  - port: $BACKEND_PORT
    protocol: TCP
    appProtocol: kubernetes.io/h2c
endpoints:
  - addresses: [127.0.0.1]
    conditions: {ready: true}
EOF
    args=(run --config "$dir" --bind-address 127.0.0.1 --admin-address "127.0.0.1:$admin")
    help=$("$COXSWAIN_BIN" run --help 2>&1 || true)
    if grep -q -- '--worker-threads' <<<"$help"; then args+=(--worker-threads 1); fi
    # One tokio worker thread, as nginx and HAProxy get one worker.
    start_pinned proxy-coxswain "$PROXY_CPU" env TOKIO_WORKER_THREADS=1 RUST_LOG=warn \
        "$COXSWAIN_BIN" "${args[@]}"
    PID[coxswain]=$LAST_PID PORT[coxswain]=$port
    WATCH_PID=$LAST_PID wait_http "http://127.0.0.1:$admin/readyz" 60
}

# ---- checks before measuring -------------------------------------------------
# wait_grpc NAME SECONDS : poll the curl call until it returns HTTP 200 with
# grpc-status 0; gives up early when the proxy has exited.
wait_grpc() {
    local name=$1 deadline=$((SECONDS + $2))
    until [ "$(grpc_call "${PORT[$name]}" "$WORKDIR/$name-call" | cut -d' ' -f1-2)" = "200 0" ]; do
        if ! kill -0 "${PID[$name]}" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
            echo "$name: no grpc-status 0 through the proxy; curl said:" >&2
            grep -E '^[<>*] ' "$WORKDIR/$name-call.log" | tail -15 >&2 || true
            return 1
        fi
        wait_a_moment
    done
}

# check_proxy NAME : the curl call returns the backend's answer byte for byte
# with grpc-status 0 in the trailers, and the interop client's empty_unary and
# large_unary cases pass through the proxy.
check_proxy() {
    local name=$1 port=${PORT[$1]} result case
    result=$(grpc_call "$port" "$WORKDIR/$name-call")
    if [ "$result" != "200 0 $RESPONSE_BYTES" ] ||
        ! cmp -s "$WORKDIR/$name-call" "$WORKDIR/backend-call"; then
        echo "$name: curl call: expected '200 0 $RESPONSE_BYTES' (http, grpc-status, bytes)" \
            "and the backend's answer, got '$result'" >&2
        return 1
    fi
    CHECK[$name]="curl: HTTP/2 200, grpc-status 0 trailer, $RESPONSE_BYTES-byte answer"
    for case in empty_unary large_unary; do
        if ! timeout 30 "$INTEROP_CLIENT" -server_host 127.0.0.1 -server_port "$port" \
            -test_case "$case" >"$WORKDIR/$name-interop-$case.log" 2>&1; then
            echo "$name: interop client $case failed:" >&2
            tail -5 "$WORKDIR/$name-interop-$case.log" >&2
            return 1
        fi
    done
    CHECK[$name]+="; interop client empty_unary, large_unary pass"
}

# ---- measurement -------------------------------------------------------------
RESULTS=$WORKDIR/results.tsv
: >"$RESULTS"

# run_h2load CALLS PORT OUT [LOG] : CALLS unary calls on the load core, one
# h2load thread, bounded by MAX_SECONDS; per-call log in LOG when given.
# Returns h2load's status (124: cut off by the bound).
run_h2load() {
    local calls=$1 port=$2 out=$3 log=${4:-} args rc=0
    args=(-t 1 -c "$CONNECTIONS" -m "$STREAMS" -n "$calls" -d "$REQUEST_FILE" "${GRPC_HEADERS[@]}")
    if [ -n "$log" ]; then args+=("--log-file=$log"); fi
    timeout "$MAX_SECONDS" taskset -c "$LOAD_CPU" h2load "${args[@]}" \
        "http://127.0.0.1:$port$GRPC_PATH" >"$out" 2>&1 &
    LOAD_PIDS=($!)
    wait "${LOAD_PIDS[0]}" || rc=$?
    LOAD_PIDS=()
    return "$rc"
}

# parse_h2load OUT LOG : "succeeded failed non2xx data_bytes seconds p50_ms p99_ms"
parse_h2load() {
    python3 - "$1" "$2" <<'PY'
import re, sys
t = open(sys.argv[1], errors="replace").read()
m = re.search(r"finished in ([\d.]+)(ms|s),", t)
r = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", t)
s = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", t)
d = re.search(r"traffic: .*?, ([\d.]+\w*) \((\d+)\) data", t)
if not (m and r and s and d):
    sys.exit("no h2load summary")
seconds = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
# Log lines: start time (us), status, duration (us); one per completed call.
durations = sorted(int(l.split("\t")[2]) for l in open(sys.argv[2]) if l.count("\t") >= 2)
if not durations:
    sys.exit("empty h2load log")
def pct(p):
    return durations[max(0, min(len(durations) - 1, int(len(durations) * p) - 1))] / 1000
print(int(r.group(4)), int(r.group(5)) + int(r.group(6)) + int(r.group(7)),
      int(s.group(2)) + int(s.group(3)) + int(s.group(4)), int(d.group(2)),
      f"{seconds:.3f}", f"{pct(0.50):.3f}", f"{pct(0.99):.3f}")
PY
}

# measure PROXY : warm-up, then one measured run; appends a record:
# proxy calls seconds p50 p99 cpu_s proxy_core% load_core% backend_cpu_s status detail
measure() {
    local name=$1 port=${PORT[$1]} pids before after bb ba cb0 cb1 ca0 ca1 cpu_s backend_s
    local out=$WORKDIR/$name-run log=$WORKDIR/$name-run.log parsed status=ok rc=0
    local calls failed non2xx data seconds p50 p99 pcore lcore detail
    mapfile -t pids < <(pid_tree "${PID[$name]}")
    # Warm-up (not counted): same load, fewer calls.
    run_h2load "$WARMUP_CALLS" "$port" "$out-warmup" || true
    cb0=$(core_busy "$PROXY_CPU") cb1=$(core_busy "$LOAD_CPU")
    before=$(cpu_ticks "${pids[@]}") bb=$(cpu_ticks "$BACKEND_PID")
    run_h2load "$CALLS" "$port" "$out" "$log" || rc=$?
    after=$(cpu_ticks "${pids[@]}") ba=$(cpu_ticks "$BACKEND_PID")
    ca0=$(core_busy "$PROXY_CPU") ca1=$(core_busy "$LOAD_CPU")
    cpu_s=$(awk -v t=$((after - before)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
    backend_s=$(awk -v t=$((ba - bb)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
    pcore=$(busy_pct "$cb0" "$ca0") lcore=$(busy_pct "$cb1" "$ca1")
    if ! parsed=$(parse_h2load "$out" "$log" 2>&1); then
        status="FAILED (h2load exit $rc, $parsed)"
        [ "$rc" = 124 ] && status="FAILED (cut off after MAX_SECONDS=$MAX_SECONDS)"
        printf '%s\t0\t0\t0\t0\t%s\t%s\t%s\t%s\t%s\t-\n' "$name" "$cpu_s" "$pcore" "$lcore" \
            "$backend_s" "$status" >>"$RESULTS"
        NOTES+=("$name: $status; not compared")
        echo "  !! $name: $status" >&2
        tail -5 "$out" >&2 || true
        return 1
    fi
    read -r calls failed non2xx data seconds p50 p99 <<<"$parsed"
    detail="$failed failed/errored, $non2xx non-2xx, $data response data bytes"
    if [ "$rc" = 124 ]; then
        status="FAILED (cut off after MAX_SECONDS=$MAX_SECONDS)"
    elif [ "$calls" -ne "$CALLS" ] || [ "$failed" -gt 0 ] || [ "$non2xx" -gt 0 ]; then
        status="FAILED ($calls of $CALLS succeeded, $failed failed/errored, $non2xx non-2xx)"
    elif [ "$data" -ne $((CALLS * RESPONSE_BYTES)) ]; then
        # A gRPC error is HTTP 200 with no message: fewer bytes than expected.
        status="FAILED ($data response data bytes, expected $CALLS x $RESPONSE_BYTES: some calls did not return the message)"
    fi
    if [ "$status" != ok ]; then
        NOTES+=("$name: $status; not compared")
        echo "  !! $name: $status" >&2
        tail -8 "$out" >&2 || true
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$calls" "$seconds" "$p50" \
        "$p99" "$cpu_s" "$pcore" "$lcore" "$backend_s" "$status" "$detail" >>"$RESULTS"
    echo "  $name: $calls calls in ${seconds}s, p50 ${p50} ms, p99 ${p99} ms, proxy CPU ${cpu_s}s," \
        "backend CPU ${backend_s}s, cores busy: proxy ${pcore}%, load ${lcore}%; $detail; $status" >&2
}

# ---- run ---------------------------------------------------------------------
# nginx is the reference and always measured; builds happen before any
# measurement. All proxies run side by side (idle when not measured) so they
# are measured back to back.
if nginx -V 2>&1 | grep -q -- '--without-http_grpc_module'; then
    echo "this nginx is built without the gRPC module (grpc_pass); cannot run" >&2
    exit 1
fi
ORDER=nginx
for proxy in $PROXIES; do
    case $proxy in
    nginx) ;;
    haproxy) ORDER+=" haproxy" ;;
    coxswain) if ensure_coxswain; then ORDER+=" coxswain"; fi ;;
    envoy)
        if command -v envoy >/dev/null && envoy --version >/dev/null 2>&1; then
            ORDER+=" envoy"
        else
            NOTES+=("envoy: not measured, no envoy binary on PATH (this script installs nothing for it)")
        fi
        ;;
    *) NOTES+=("$proxy: not supported by this benchmark, skipped") ;;
    esac
done

MEASURED=""
for proxy in $ORDER; do
    echo "== starting $proxy" >&2
    PID[$proxy]="" PORT[$proxy]=""
    if ! "start_$proxy" || ! wait_grpc "$proxy" 60 || ! check_proxy "$proxy"; then
        echo "$proxy did not become ready; its log:" >&2
        tail -20 "$WORKDIR/proxy-$proxy.log" >&2 || true
        NOTES+=("$proxy: did not pass the checks before measuring (grpc-status 0, interop client), not measured")
        continue
    fi
    MEASURED+=" $proxy"
    echo "   ${CHECK[$proxy]}" >&2
done

for proxy in $MEASURED; do
    measure "$proxy" || NOTES+=("$proxy: run failed")
done
LOADAVG_END=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$((SECONDS - START_SECONDS))

# ---- report ------------------------------------------------------------------
report() {
    local note what
    what="$METHOD (request $REQUEST_BYTES bytes, answer $RESPONSE_BYTES bytes, length prefix included)"
    echo "# Unary gRPC benchmark"
    echo
    echo "\`scripts/bench-grpc.sh\` with CALLS=$CALLS METHOD=$METHOD PAYLOAD=$PAYLOAD" \
        "WARMUP_CALLS=$WARMUP_CALLS CONNECTIONS=$CONNECTIONS STREAMS=$STREAMS;" \
        "started $STARTED_AT, took ${ELAPSED}s."
    echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //');" \
        "load average before/after: $LOADAVG_START / $LOADAVG_END."
    echo
    echo "Proxies pinned to core $PROXY_CPU (one worker / thread each); backend (grpc-go interop"
    echo "server, GOMAXPROCS=1, h2c) and load generator on core $LOAD_CPU. Load:"
    echo "\`h2load -t1 -c$CONNECTIONS -m$STREAMS -n$CALLS -d REQUEST -H 'content-type: application/grpc'"
    echo "-H 'te: trailers' http://127.0.0.1:PORT$GRPC_PATH\` (h2c prior knowledge), after"
    echo "$WARMUP_CALLS warm-up calls not counted. Calls: $what."
    echo "A run passes when every call succeeded with HTTP 2xx and returned the full answer"
    echo "(response data bytes = calls x $RESPONSE_BYTES; a gRPC error would be a trailers-only"
    echo "answer without a message)."
    echo
    echo "Rate per proxy CPU-second = calls / (utime+stime delta of the proxy's processes over"
    echo "the measured run, from /proc/PID/stat). Core busy % is over the whole core (/proc/stat),"
    echo "other tenants of the machine included. p50/p99 from h2load's per-call log."
    echo
    python3 - "$RESULTS" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    proxy, calls, secs, p50, p99, cpu, pcore, lcore, bcpu, status, detail = r
    ok = status == "ok" and float(cpu) > 0
    by[proxy] = dict(calls=int(calls), secs=float(secs), p50=p50, p99=p99, cpu=float(cpu),
                     pcore=pcore, lcore=lcore, bcpu=bcpu, status=status, detail=detail,
                     per=int(calls) / float(cpu) if ok else None)
def n(x):
    return f"{x:,.0f}"
def ratio(a, b):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}x"
print("| Proxy | Calls | Calls/s | p50 ms | p99 ms | Proxy CPU s | Proxy core busy | Load core busy | Backend CPU s | **Calls per proxy CPU-second** | Check |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for p in ["nginx", "haproxy", "coxswain", "envoy"]:
    d = by.get(p)
    if not d:
        continue
    per = f"**{n(d['per'])}**" if d["per"] is not None else "**FAILED**"
    rate = n(d["calls"] / d["secs"]) if d["secs"] > 0 else "-"
    check = d["detail"] if d["status"] == "ok" else f"{d['status']}: {d['detail']}"
    print(f"| {p} | {n(d['calls'])} | {rate} | {d['p50']} | {d['p99']} | {d['cpu']:.2f} | "
          f"{d['pcore']}% | {d['lcore']}% | {d['bcpu']} | {per} | {check} |")
print()
g = lambda p: (by.get(p) or {}).get("per")
print("| Per proxy CPU-second | Coxswain / nginx | Coxswain / HAProxy | HAProxy / nginx |"
      + (" Coxswain / Envoy |" if "envoy" in by else ""))
print("|---|---:|---:|---:|" + ("---:|" if "envoy" in by else ""))
print(f"| unary calls | {ratio(g('coxswain'), g('nginx'))} | {ratio(g('coxswain'), g('haproxy'))} | "
      f"{ratio(g('haproxy'), g('nginx'))} |"
      + (f" {ratio(g('coxswain'), g('envoy'))} |" if "envoy" in by else ""))
print()
c, h = g("coxswain"), g("haproxy")
if c is None or h is None:
    print("Goal (>= 1.0x HAProxy calls per proxy CPU-second): not determined in this run.")
else:
    verdict = "met" if c >= h else "NOT met"
    print(f"Goal (>= 1.0x HAProxy calls per proxy CPU-second): {verdict} ({c / h:.2f}x).")
PY
    echo
    echo "Checks before measuring:"
    echo
    for proxy in $MEASURED; do
        echo "- $proxy: ${CHECK[$proxy]}"
    done
    echo
    echo "Versions: nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), HAProxy" \
        "$(haproxy -v 2>/dev/null | head -1 | awk '{print $3}')," \
        "h2load $(h2load --version | awk '{print $2}'), interop server $(basename "$INTEROP_SERVER")," \
        "Coxswain $("${COXSWAIN_BIN:-true}" --version 2>/dev/null | awk '{print $2}')" \
        "(git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), working tree as built)."
    if [ "${#NOTES[@]}" -gt 0 ]; then
        echo
        echo "Notes:"
        echo
        for note in "${NOTES[@]}"; do echo "- $note"; done
    fi
}

if [ -n "$OUT" ]; then
    mkdir -p "$(dirname "$OUT")"
    report | tee "$OUT"
else
    report
fi
