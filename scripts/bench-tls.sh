#!/usr/bin/env bash
# Side-by-side TLS termination benchmark on loopback: Coxswain, nginx and
# HAProxy each terminate TLS with the same throwaway ECDSA P-256 certificate
# (TLS 1.2 and 1.3 allowed, HTTP/1.1 and h2 by ALPN, session resumption on)
# in front of the same origin (nginx, fixed 1 KiB body). Phases, each run
# against every proxy in turn, bounded in time:
#   full      a new TLS connection per request, no resumption
#             (`openssl s_time -new`): full handshake + one GET + close
#   resumed   the same, resuming the previous session (`openssl s_time -reuse`);
#             every connection must report resumption or the phase FAILS
#   keepalive HTTPS/1.1 keep-alive requests (`h2load --h1`)
#   h2        HTTP/2 over TLS (`h2load -m 8`), keep-alive too
# Headline figure: work per proxy CPU-second (utime+stime from /proc/PID/stat,
# summed over the proxy's processes; threads are included in each process).
# Ratios Coxswain/nginx and Coxswain/HAProxy per phase, from this one run.
#
# usage: scripts/bench-tls.sh [--duration S] [--phases "..."] [--proxies "..."]
# Knobs (environment variables; the flags above override the first three):
#   DURATION=10          seconds measured per phase and proxy
#   WARMUP=2             seconds of the same load before each measurement, not counted
#   PHASES="full resumed keepalive h2"  any subset (run in the order given)
#   PROXIES="coxswain nginx haproxy"  nginx is always measured (the reference)
#   HANDSHAKE_CLIENTS=4  parallel `openssl s_time` processes in full/resumed
#   CONNECTIONS=32       h2load keep-alive connections (h2: CONNECTIONS/4, 8 streams each)
#   TLS_VERSION=1.3      1.3 or 1.2: version the handshake phases ask for
#   TLS13_SUITE=TLS_AES_128_GCM_SHA256 TLS12_CIPHER=ECDHE-ECDSA-AES128-GCM-SHA256
#                        the only suite every client offers, so every proxy
#                        negotiates the same one (HAProxy prefers its own order)
#   RESUME_MIN_PCT=100   resumed phase fails below this share of resumed connections
#   PROXY_CPU=0 LOAD_CPU=1  cores for the proxies / for origin + load generators
#   COXSWAIN_BIN=        skip `cargo build --release -p coxswain`, use this binary
#   OUT=                 also write the markdown report to this file
# Example: DURATION=5 PHASES="full resumed" TLS_VERSION=1.2 scripts/bench-tls.sh
#
# Missing tools (nginx-light, haproxy, openssl, curl, h2load from
# nghttp2-client) are installed with apt-get when run as root. Everything
# started here is stopped on exit (trap), whatever happens.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
PHASES=${PHASES:-full resumed keepalive h2}
PROXIES=${PROXIES:-coxswain nginx haproxy}
HANDSHAKE_CLIENTS=${HANDSHAKE_CLIENTS:-4}
CONNECTIONS=${CONNECTIONS:-32}
TLS_VERSION=${TLS_VERSION:-1.3}
TLS13_SUITE=${TLS13_SUITE:-TLS_AES_128_GCM_SHA256}
TLS12_CIPHER=${TLS12_CIPHER:-ECDHE-ECDSA-AES128-GCM-SHA256}
RESUME_MIN_PCT=${RESUME_MIN_PCT:-100}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
COXSWAIN_BIN=${COXSWAIN_BIN:-}
OUT=${OUT:-}

usage() { sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --phases) PHASES=$2; shift 2 ;;
    --proxies) PROXIES=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1 (knobs are environment variables, see --help)" >&2; exit 2 ;;
    esac
done
for knob in DURATION WARMUP HANDSHAKE_CLIENTS CONNECTIONS RESUME_MIN_PCT PROXY_CPU LOAD_CPU; do
    case ${!knob} in
    '' | *[!0-9]*) echo "$knob takes a whole number (got '${!knob}')" >&2; exit 2 ;;
    esac
done
if [ "$DURATION" -lt 1 ] || [ "$WARMUP" -lt 1 ] || [ "$HANDSHAKE_CLIENTS" -lt 1 ] ||
    [ "$CONNECTIONS" -lt 4 ]; then
    echo "DURATION, WARMUP and HANDSHAKE_CLIENTS must be at least 1, CONNECTIONS at least 4" >&2
    exit 2
fi
case $TLS_VERSION in
1.3) TLS_FLAG=-tls1_3 ;;
1.2) TLS_FLAG=-tls1_2 ;;
*) echo "TLS_VERSION is 1.3 or 1.2" >&2; exit 2 ;;
esac
for phase in $PHASES; do
    case $phase in full | resumed | keepalive | h2) ;; *)
        echo "unknown phase: $phase (full resumed keepalive h2)" >&2; exit 2 ;;
    esac
done

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-tls.XXXXXX")
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
ensure_tls_tools() {
    ensure_packages nginx:nginx-light haproxy:haproxy openssl:openssl curl:curl \
        h2load:nghttp2-client taskset:util-linux python3:python3 timeout:coreutils
}
ensure_tls_tools

# Proxies on PROXY_CPU, origin and load generators on LOAD_CPU (taskset), as
# in the other benchmarks; both cores must exist.
for core in "$PROXY_CPU" "$LOAD_CPU"; do
    if ! taskset -c "$core" true 2>/dev/null; then
        echo "cannot pin to core $core (nproc = $(nproc)); set PROXY_CPU / LOAD_CPU" >&2
        exit 2
    fi
done
if [ "$PROXY_CPU" = "$LOAD_CPU" ]; then
    echo "warning: PROXY_CPU = LOAD_CPU: proxies and load generators share a core" >&2
fi

# ---- certificate: self-signed ECDSA P-256 for bench.test ---------------------
CERTS="$WORKDIR/certs"
mkdir -p "$CERTS" "$WORKDIR/tmp"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=bench.test -addext subjectAltName=DNS:bench.test \
    -keyout "$CERTS/key.pem" -out "$CERTS/cert.pem" 2>"$WORKDIR/openssl-req.log" || {
    cat "$WORKDIR/openssl-req.log" >&2
    exit 1
}
cat "$CERTS/cert.pem" "$CERTS/key.pem" >"$CERTS/haproxy.pem"

# ---- origin: one nginx process, 1 KiB body, on the load core -----------------
BODY=$(head -c 1024 /dev/zero | tr '\0' 'x')
ORIGIN_PORT=$(free_port)
sed -e "s|@WORKDIR@|$WORKDIR|g; s|@ORIGIN_PORT@|$ORIGIN_PORT|g; s|@BODY@|$BODY|g" \
    "$ROOT/bench/configs/origin-nginx.conf" >"$WORKDIR/origin.conf"
start_pinned origin "$LOAD_CPU" nginx -p "$WORKDIR" -e "$WORKDIR/origin-error.log" \
    -c "$WORKDIR/origin.conf"
WATCH_PID=$LAST_PID wait_http "http://127.0.0.1:$ORIGIN_PORT/" 20

# ---- proxies: start_X sets PID_X and PORT_X ----------------------------------
declare -A PID PORT RESUMPTION
RESUMPTION[nginx]="OpenSSL stateless session tickets (ssl_session_tickets on, the default; key random per start) + ssl_session_cache shared:SSL:10m, ssl_session_timeout 5m (default)"
RESUMPTION[haproxy]="defaults: OpenSSL stateless session tickets (key random per start) + session cache tune.ssl.cachesize 20000, tune.ssl.lifetime 300s"
RESUMPTION[coxswain]="rustls ServerConfig defaults: no ticketer, stateful resumption from an in-memory cache of 256 sessions (TLS 1.3: 2 single-use tickets naming cache entries per handshake; TLS 1.2: session IDs)"

start_nginx() {
    local port
    port=$(free_port)
    cat >"$WORKDIR/proxy-nginx.conf" <<EOF
# nginx terminating TLS: one worker, keep-alive pool to the origin.
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
    proxy_temp_path $WORKDIR/tmp/proxy-proxy;
    upstream origin {
        server 127.0.0.1:$ORIGIN_PORT;
        keepalive 256;
        keepalive_requests 10000000;
    }
    server {
        listen 127.0.0.1:$port ssl http2;
        ssl_certificate $CERTS/cert.pem;
        ssl_certificate_key $CERTS/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_tickets on;
        ssl_session_cache shared:SSL:10m;
        ssl_session_timeout 5m;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
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
# HAProxy terminating TLS: one thread, idle origin connections shared.
# Session cache and tickets are HAProxy's defaults.
global
    nbthread 1
    maxconn 8192
    ssl-default-bind-options ssl-min-ver TLSv1.2
defaults
    mode http
    timeout connect 5s
    timeout client 120s
    timeout server 120s
    option http-keep-alive
    http-reuse always
frontend bench
    bind 127.0.0.1:$port ssl crt $CERTS/haproxy.pem alpn h2,http/1.1
    default_backend origin
backend origin
    server origin 127.0.0.1:$ORIGIN_PORT
EOF
    start_pinned proxy-haproxy "$PROXY_CPU" haproxy -db -f "$WORKDIR/proxy-haproxy.cfg"
    PID[haproxy]=$LAST_PID PORT[haproxy]=$port
}

start_coxswain() {
    local port admin dir=$WORKDIR/coxswain-config
    port=$(free_port) admin=$(free_port)
    mkdir -p "$dir"
    {
        cat <<EOF
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
    - name: https
      port: $port
      protocol: HTTPS
      tls:
        mode: Terminate
        certificateRefs:
          - name: bench-tls
---
apiVersion: v1
kind: Secret
metadata:
  name: bench-tls
  namespace: default
type: kubernetes.io/tls
stringData:
  tls.crt: |
EOF
        sed 's/^/    /' "$CERTS/cert.pem"
        echo "  tls.key: |"
        sed 's/^/    /' "$CERTS/key.pem"
        cat <<EOF
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: origin
  namespace: default
spec:
  parentRefs:
    - name: bench
  rules:
    - matches:
        - path: {type: PathPrefix, value: /}
      backendRefs:
        - name: origin
          port: 80
---
apiVersion: v1
kind: Service
metadata:
  name: origin
  namespace: default
spec:
  ports:
    - name: http
      port: 80
      protocol: TCP
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: origin-1
  namespace: default
  labels:
    kubernetes.io/service-name: origin
addressType: IPv4
ports:
  - name: http
    port: $ORIGIN_PORT
    protocol: TCP
endpoints:
  - addresses: [127.0.0.1]
    conditions: {ready: true}
EOF
    } >"$dir/bench.yaml"
    # One tokio worker thread, as nginx and HAProxy get one worker.
    start_pinned proxy-coxswain "$PROXY_CPU" env TOKIO_WORKER_THREADS=1 RUST_LOG=warn \
        "$COXSWAIN_BIN" run --config "$dir" --bind-address 127.0.0.1 \
        --admin-address "127.0.0.1:$admin"
    PID[coxswain]=$LAST_PID PORT[coxswain]=$port
    WATCH_PID=$LAST_PID wait_http "http://127.0.0.1:$admin/readyz" 60
}

# ---- checks before measuring -------------------------------------------------
REQUEST=$'GET / HTTP/1.1\r\nHost: bench.test\r\nConnection: close\r\n\r\n'
# s_time sends "GET <www> HTTP/1.0\r\n\r\n"; this <www> turns that into an
# HTTP/1.1 request with Host and Connection: close (the tail "HTTP/1.0" lands
# in a harmless X-Bench header value), so every proxy sees the same request.
STIME_WWW=$'/ HTTP/1.1\r\nHost: bench.test\r\nConnection: close\r\nX-Bench: s_time'
declare -A NEGOTIATED RESUME_CHECK

# check_proxy NAME : 200 with the 1 KiB body over TLS, negotiated parameters,
# and an s_client session resumption check.
check_proxy() {
    local name=$1 port=${PORT[$1]} size out1 out2
    size=$(curl -ksS --max-time 5 -o /dev/null -w '%{http_code} %{size_download}' \
        --resolve "bench.test:$port:127.0.0.1" "https://bench.test:$port/") || return 1
    if [ "$size" != "200 1024" ]; then
        echo "$name: expected '200 1024' over HTTPS, got '$size'" >&2
        return 1
    fi
    out1=$WORKDIR/$name-sclient-1.txt out2=$WORKDIR/$name-sclient-2.txt
    printf '%s' "$REQUEST" | timeout 10 openssl s_client -connect "127.0.0.1:$port" \
        -servername bench.test "$TLS_FLAG" -ciphersuites "$TLS13_SUITE" \
        -cipher "$TLS12_CIPHER" -sess_out "$WORKDIR/$name.sess" -ign_eof \
        >"$out1" 2>&1 || true
    printf '%s' "$REQUEST" | timeout 10 openssl s_client -connect "127.0.0.1:$port" \
        -servername bench.test "$TLS_FLAG" -ciphersuites "$TLS13_SUITE" \
        -cipher "$TLS12_CIPHER" -sess_in "$WORKDIR/$name.sess" -ign_eof \
        >"$out2" 2>&1 || true
    NEGOTIATED[$name]=$(python3 - "$out1" <<'PY'
import re, sys
t = open(sys.argv[1], errors="replace").read()
def f(p):
    m = re.search(p, t, re.M)
    return m.group(1).strip() if m else "?"
version = f(r"^(?:New|Reused), (TLSv[0-9.]+)")
cipher = f(r"Cipher is (\S+)")
group = f(r"^(?:Server|Peer) Temp Key: ([^,\n]+)")
sig = f(r"^Peer signature type: (\S+)")
print(f"{version} {cipher}, key exchange {group}, signature {sig}")
PY
)
    if grep -q '^Reused, ' "$out2" && grep -q '^HTTP/1.1 200' "$out2"; then
        RESUME_CHECK[$name]="s_client -sess_out/-sess_in: $(grep -m1 '^Reused, ' "$out2")"
    else
        RESUME_CHECK[$name]="s_client -sess_out/-sess_in: NOT resumed ($(grep -m1 -E '^(New|Reused), ' "$out2" || echo 'no handshake line'))"
    fi
}

# ---- measurement -------------------------------------------------------------
RESULTS=$WORKDIR/results.tsv
: >"$RESULTS"

# run_stime MODE SECONDS PORT PREFIX : HANDSHAKE_CLIENTS parallel s_time runs
# on the load core; outputs in PREFIX.N. Returns non-zero if any failed.
run_stime() {
    local mode=$1 seconds=$2 port=$3 prefix=$4 i pids=() rc=0
    for ((i = 0; i < HANDSHAKE_CLIENTS; i++)); do
        timeout $((seconds + 30)) taskset -c "$LOAD_CPU" openssl s_time \
            -connect "127.0.0.1:$port" "-$mode" -time "$seconds" -www "$STIME_WWW" \
            "$TLS_FLAG" -ciphersuites "$TLS13_SUITE" -cipher "$TLS12_CIPHER" \
            >"$prefix.$i" 2>&1 &
        pids+=($!)
    done
    LOAD_PIDS=("${pids[@]}")
    for i in "${pids[@]}"; do wait "$i" || rc=1; done
    LOAD_PIDS=()
    return "$rc"
}

# parse_stime PREFIX : "connections resumed not_resumed min_bytes_per_conn wall"
parse_stime() {
    python3 - "$1" "$HANDSHAKE_CLIENTS" <<'PY'
import re, sys
prefix, n = sys.argv[1], int(sys.argv[2])
conns = resumed = other = 0
min_bytes, wall = None, 0
for i in range(n):
    t = open(f"{prefix}.{i}", errors="replace").read()
    m = re.search(r"^(\d+) connections in (\d+) real seconds, (\d+) bytes read per connection", t, re.M)
    if not m:
        sys.exit(f"{prefix}.{i}: no s_time summary line")
    conns += int(m.group(1))
    wall = max(wall, int(m.group(2)))
    b = int(m.group(3))
    min_bytes = b if min_bytes is None else min(min_bytes, b)
    # One progress character per timed connection: 'r' = resumed.
    for line in t.splitlines():
        if line and set(line) <= set("r*t3"):
            resumed += line.count("r")
            other += len(line) - line.count("r")
print(conns, resumed, other, min_bytes, wall)
PY
}

# run_h2load MODE SECONDS PORT OUT
run_h2load() {
    local mode=$1 seconds=$2 port=$3 out=$4 args rc=0
    if [ "$mode" = keepalive ]; then
        args=(--h1 -c "$CONNECTIONS" -m 1)
    else
        args=(-c $((CONNECTIONS / 4)) -m 8)
    fi
    timeout $((seconds + 30)) taskset -c "$LOAD_CPU" h2load -t 1 "${args[@]}" -D "$seconds" \
        --tls13-ciphers="$TLS13_SUITE" --ciphers="$TLS12_CIPHER" \
        "https://127.0.0.1:$port/" >"$out" 2>&1 &
    LOAD_PIDS=($!)
    wait "${LOAD_PIDS[0]}" || rc=$?
    LOAD_PIDS=()
    return "$rc"
}

# parse_h2load OUT : "succeeded failed_or_errored non2xx wall protocol"
parse_h2load() {
    python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1], errors="replace").read()
m = re.search(r"finished in ([\d.]+)s", t)
r = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", t)
s = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", t)
if not (m and r and s):
    sys.exit("no h2load summary")
def g(p):
    x = re.search(p, t)
    return x.group(1) if x else "?"
neg = "/".join([g(r"TLS Protocol: (\S+)"), g(r"Cipher: (\S+)"), g(r"Server Temp Key: (\S+)"),
                g(r"Application protocol: (\S+)")])
print(int(r.group(4)), int(r.group(5)) + int(r.group(6)) + int(r.group(7)),
      int(s.group(2)) + int(s.group(3)) + int(s.group(4)), m.group(1), neg)
PY
}

# record PHASE PROXY COUNT WALL CPU_S PROXY_CORE% LOAD_CORE% STATUS DETAIL
record() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"
}

# measure PHASE PROXY : warm-up, then one measured run; appends a record.
measure() {
    local phase=$1 name=$2 port=${PORT[$2]} pids before after cb0 cb1 ca0 ca1 cpu_s
    local out=$WORKDIR/$name-$phase parsed conns resumed other bytes wall detail status=ok
    local pcore lcore
    mapfile -t pids < <(pid_tree "${PID[$name]}")
    # Warm-up (not counted): same load, shorter.
    case $phase in
    full) run_stime new "$WARMUP" "$port" "$out-warmup" || true ;;
    resumed) run_stime reuse "$WARMUP" "$port" "$out-warmup" || true ;;
    *) run_h2load "$phase" "$WARMUP" "$port" "$out-warmup" || true ;;
    esac
    cb0=$(core_busy "$PROXY_CPU") cb1=$(core_busy "$LOAD_CPU")
    before=$(cpu_ticks "${pids[@]}")
    case $phase in
    full) run_stime new "$DURATION" "$port" "$out" || status="FAILED (s_time exited non-zero)" ;;
    resumed) run_stime reuse "$DURATION" "$port" "$out" || status="FAILED (s_time exited non-zero)" ;;
    *) run_h2load "$phase" "$DURATION" "$port" "$out" || status="FAILED (h2load exited non-zero)" ;;
    esac
    after=$(cpu_ticks "${pids[@]}")
    ca0=$(core_busy "$PROXY_CPU") ca1=$(core_busy "$LOAD_CPU")
    cpu_s=$(awk -v t=$((after - before)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
    pcore=$(busy_pct "$cb0" "$ca0") lcore=$(busy_pct "$cb1" "$ca1")
    case $phase in
    full | resumed)
        if ! parsed=$(parse_stime "$out" 2>&1); then
            record "$phase" "$name" 0 0 "$cpu_s" "$pcore" "$lcore" "FAILED" "$parsed"
            tail -5 "$out".* >&2 || true
            return 1
        fi
        read -r conns resumed other bytes wall <<<"$parsed"
        detail="$resumed of $conns connections resumed; $bytes bytes read per connection"
        if [ "$conns" -eq 0 ]; then
            status="FAILED (no connection completed)"
        elif [ "$bytes" -lt 1024 ]; then
            status="FAILED (a client read $bytes bytes per connection, less than the 1 KiB body)"
        elif [ "$phase" = full ] && [ "$resumed" -gt 0 ]; then
            status="FAILED ($resumed connections resumed in the full-handshake phase)"
        elif [ "$phase" = resumed ] && [ $((resumed * 100)) -lt $((conns * RESUME_MIN_PCT)) ]; then
            status="FAILED (only $resumed of $conns connections resumed; need ${RESUME_MIN_PCT}%)"
        fi
        ;;
    *)
        if ! parsed=$(parse_h2load "$out" 2>&1); then
            record "$phase" "$name" 0 0 "$cpu_s" "$pcore" "$lcore" "FAILED" "$parsed"
            tail -5 "$out" >&2 || true
            return 1
        fi
        read -r conns errors non2xx wall proto <<<"$parsed"
        detail="$proto; $errors failed/errored, $non2xx non-2xx"
        if [ "$conns" -eq 0 ]; then
            status="FAILED (no request succeeded)"
        elif [ "$errors" -gt 0 ] || [ "$non2xx" -gt 0 ]; then
            status="FAILED ($errors failed/errored, $non2xx non-2xx responses)"
        fi
        ;;
    esac
    if [ "$status" != ok ]; then
        NOTES+=("$name $phase: $status; not compared")
        echo "  !! $name $phase: $status" >&2
        tail -3 "$out"* >&2 || true
    fi
    record "$phase" "$name" "$conns" "$wall" "$cpu_s" "$pcore" "$lcore" "$status" "$detail"
    echo "  $phase $name: $conns in ${wall}s, proxy CPU ${cpu_s}s," \
        "cores busy: proxy ${pcore}%, load ${lcore}%; $detail; $status" >&2
}

# ---- run ---------------------------------------------------------------------
# nginx is the reference and always measured; builds happen before any
# measurement. All proxies run side by side (idle when not measured) so each
# phase measures them back to back, minutes apart at most.
ORDER=nginx
for proxy in $PROXIES; do
    case $proxy in
    nginx) ;;
    haproxy) ORDER+=" haproxy" ;;
    coxswain) if ensure_coxswain; then ORDER+=" coxswain"; fi ;;
    *) NOTES+=("$proxy: not supported by this benchmark, skipped") ;;
    esac
done

MEASURED=""
for proxy in $ORDER; do
    echo "== starting $proxy" >&2
    PID[$proxy]="" PORT[$proxy]=""
    if ! "start_$proxy" || ! WATCH_PID=${PID[$proxy]} wait_http "https://127.0.0.1:${PORT[$proxy]}/" 60 -k ||
        ! check_proxy "$proxy"; then
        echo "$proxy did not become ready; its log:" >&2
        tail -20 "$WORKDIR/proxy-$proxy.log" >&2 || true
        NOTES+=("$proxy: did not become ready (HTTPS 200 with the 1 KiB body), not measured")
        continue
    fi
    MEASURED+=" $proxy"
    case ${RESUME_CHECK[$proxy]} in *"NOT resumed"*)
        NOTES+=("$proxy: the s_client resumption check before measuring did not resume") ;;
    esac
    echo "   negotiated: ${NEGOTIATED[$proxy]}; ${RESUME_CHECK[$proxy]}" >&2
done

for phase in $PHASES; do
    for proxy in $MEASURED; do
        measure "$phase" "$proxy" || NOTES+=("$proxy $phase: run failed")
    done
done
LOADAVG_END=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$((SECONDS - START_SECONDS))

# ---- report ------------------------------------------------------------------
report() {
    local note
    echo "# TLS termination benchmark"
    echo
    echo "\`scripts/bench-tls.sh\` with DURATION=$DURATION WARMUP=$WARMUP PHASES=\"$PHASES\"" \
        "HANDSHAKE_CLIENTS=$HANDSHAKE_CLIENTS CONNECTIONS=$CONNECTIONS TLS_VERSION=$TLS_VERSION;" \
        "started $STARTED_AT, took ${ELAPSED}s."
    echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //');" \
        "load average before/after: $LOADAVG_START / $LOADAVG_END."
    echo
    echo "Proxies pinned to core $PROXY_CPU (one worker / thread each); origin (nginx, 1 KiB body)"
    echo "and load generators on core $LOAD_CPU. Certificate: self-signed ECDSA P-256; clients"
    echo "do not verify it and offer one suite only ($TLS13_SUITE for TLS 1.3,"
    echo "$TLS12_CIPHER for TLS 1.2), so every proxy negotiates the same one."
    echo "Phases (each ${WARMUP}s warm-up, then ${DURATION}s measured):"
    echo
    echo "- full: $HANDSHAKE_CLIENTS x \`openssl s_time -new $TLS_FLAG -www ...\`: per connection a full"
    echo "  handshake, one \`GET /\` (HTTP/1.1, Connection: close), read to close; no SNI."
    echo "- resumed: the same with \`s_time -reuse\` (each connection resumes the session the"
    echo "  previous one got); a phase with less than ${RESUME_MIN_PCT}% resumed connections fails."
    echo "- keepalive: \`h2load --h1 -t1 -c$CONNECTIONS -D$DURATION\` over TLS (h2load's default TLS version)."
    case " $PHASES " in *" h2 "*)
        echo "- h2: \`h2load -t1 -c$((CONNECTIONS / 4)) -m8 -D$DURATION\`, HTTP/2 over TLS (ALPN h2)." ;;
    esac
    echo
    echo "Rate per proxy CPU-second = count / (utime+stime delta of the proxy's processes over"
    echo "the measured run, from /proc/PID/stat). Core busy % is over the whole core (/proc/stat),"
    echo "other tenants of the machine included."
    echo
    python3 - "$RESULTS" <<'PY'
import sys
from collections import OrderedDict
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
phases = OrderedDict()
for r in rows:
    phase, proxy, count, wall, cpu, pcore, lcore, status, detail = r
    phases[phase] = True
    per = float(count) / float(cpu) if status == "ok" and float(cpu) > 0 else None
    by[(phase, proxy)] = dict(count=int(count), wall=float(wall), cpu=float(cpu), pcore=pcore,
                              lcore=lcore, status=status, detail=detail, per=per)
unit = {"full": "handshakes", "resumed": "resumed handshakes", "keepalive": "requests", "h2": "requests"}
def n(x, d=0):
    return f"{x:,.{d}f}"
def ratio(a, b):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}x"
print("| Phase | Proxy | Count | Per s | Proxy CPU s | Proxy core busy | Load core busy | **Per proxy CPU-second** | Check |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|")
proxies = ["nginx", "haproxy", "coxswain"]
for phase in phases:
    for p in proxies:
        d = by.get((phase, p))
        if not d:
            continue
        per = f"**{n(d['per'])}**" if d["per"] is not None else "**FAILED**"
        rate = n(d["count"] / d["wall"]) if d["wall"] > 0 else "-"
        check = d["detail"] if d["status"] == "ok" else f"{d['status']}: {d['detail']}"
        print(f"| {phase} ({unit[phase]}) | {p} | {n(d['count'])} | {rate} | {d['cpu']:.2f} | "
              f"{d['pcore']}% | {d['lcore']}% | {per} | {check} |")
print()
print("| Phase | Coxswain / nginx | Coxswain / HAProxy | HAProxy / nginx |")
print("|---|---:|---:|---:|")
for phase in phases:
    g = lambda p: (by.get((phase, p)) or {}).get("per")
    print(f"| {phase} (per proxy CPU-second) | {ratio(g('coxswain'), g('nginx'))} | "
          f"{ratio(g('coxswain'), g('haproxy'))} | {ratio(g('haproxy'), g('nginx'))} |")
PY
    echo
    echo "Negotiated (openssl s_client $TLS_FLAG) and resumption check before measuring:"
    echo
    for proxy in $MEASURED; do
        echo "- $proxy: ${NEGOTIATED[$proxy]}; ${RESUME_CHECK[$proxy]}"
    done
    echo
    echo "Session resumption as configured:"
    echo
    for proxy in $MEASURED; do
        echo "- $proxy: ${RESUMPTION[$proxy]}"
    done
    echo
    echo "Versions: nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), HAProxy" \
        "$(haproxy -v 2>/dev/null | head -1 | awk '{print $3}'), $(openssl version)," \
        "h2load $(h2load --version | awk '{print $2}'), Coxswain" \
        "$("${COXSWAIN_BIN:-true}" --version 2>/dev/null | awk '{print $2}')" \
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
