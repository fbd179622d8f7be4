#!/usr/bin/env bash
# What route policies cost: requests per proxy CPU-second through one
# Coxswain Gateway for three HTTPRoute rules in front of the same nginx
# origin (1 KiB body), HTTP/1.1 keep-alive with wrk, every request carrying
# an allowed CORS Origin:
#   bare     no filter, no policy;
#   policy   request and response header edits, CORS, a retry stanza;
#   mirror   the same plus a RequestMirror of every request (to the origin).
# Headline figure: each rule's requests per proxy CPU-second against bare's.
# The rules are measured in turn for --rounds rounds (this VM's rates drift
# by 20% between minutes) and each rule's median round is reported.
#
# usage: scripts/bench-policy.sh [--duration 5] [--rounds 3] [--connections 64]
#            [--coxswain-bin PATH] [--out bench/results/policy-latest.md]
#
# The proxy is pinned to core 0; the origin and wrk to core 1. Everything
# started here is stopped on exit (trap), whatever happens.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=5
ROUNDS=3
CONNECTIONS=64
WARMUP=2
COXSWAIN_BIN=""
OUT="$ROOT/bench/results/policy-latest.md"
ORIGIN_HEADER="Origin: https://app.example"

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --coxswain-bin) COXSWAIN_BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
case "$DURATION$CONNECTIONS$ROUNDS" in
*[!0-9]*) echo "--duration, --rounds and --connections take whole numbers" >&2; exit 2 ;;
esac
if [ "$ROUNDS" -lt 1 ] || [ "$ROUNDS" -gt 20 ]; then
    echo "--rounds takes 1 to 20" >&2
    exit 2
fi

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-policy.XXXXXX")
# shellcheck source=../bench/lib/procs.sh
source "$ROOT/bench/lib/procs.sh"
# shellcheck source=../bench/lib/load.sh
source "$ROOT/bench/lib/load.sh"
# shellcheck source=../bench/lib/setup.sh
source "$ROOT/bench/lib/setup.sh"
cleanup() {
    stop_all_started
    rm -rf "$WORKDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NOTES=()
ensure_tools
ensure_coxswain || { printf '%s\n' "${NOTES[@]}" >&2; exit 1; }
mkdir -p "$WORKDIR/tmp"
BODY=$(head -c 1024 /dev/zero | tr '\0' 'x')

# ---- origin -------------------------------------------------------------------
ORIGIN_PORT=$(free_port)
sed -e "s|@WORKDIR@|$WORKDIR|g; s|@ORIGIN_PORT@|$ORIGIN_PORT|g; s|@BODY@|$BODY|g" \
    "$ROOT/bench/configs/origin-nginx.conf" >"$WORKDIR/origin.conf"
start_pinned origin 1 nginx -p "$WORKDIR" -e "$WORKDIR/origin-error.log" -c "$WORKDIR/origin.conf"
wait_http "http://127.0.0.1:$ORIGIN_PORT/" 20

# ---- Coxswain: the bench Gateway and origin Service, plus three rules --------
PORT=$(free_port) ADMIN=$(free_port)
"$ROOT/bench/gen-coxswain-config.sh" "$WORKDIR/config" "$PORT" "$ORIGIN_PORT"
policy_filters() { # indent
    local pad=$1
    sed "s/^/$pad/" <<'YAML'
- type: RequestHeaderModifier
  requestHeaderModifier:
    set: [{name: x-bench, value: policy}]
    remove: [x-debug]
- type: ResponseHeaderModifier
  responseHeaderModifier:
    add: [{name: x-served-by, value: coxswain}]
- type: CORS
  cors:
    allowOrigins: ["https://app.example"]
    allowMethods: [GET, POST]
    allowHeaders: [x-bench]
    maxAge: 600
YAML
}
cat >"$WORKDIR/config/route.yaml" <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: origin
  namespace: default
spec:
  parentRefs:
    - name: bench
  rules:
    - name: bare
      matches:
        - path: {type: PathPrefix, value: /bare}
      backendRefs:
        - name: origin
          port: 80
    - name: policy
      matches:
        - path: {type: PathPrefix, value: /policy}
      filters:
$(policy_filters "        ")
      retry:
        codes: [502, 503]
        attempts: 2
        backoff: 10ms
      backendRefs:
        - name: origin
          port: 80
    - name: mirror
      matches:
        - path: {type: PathPrefix, value: /mirror}
      filters:
$(policy_filters "        ")
        - type: RequestMirror
          requestMirror:
            backendRef: {name: origin, port: 80}
      retry:
        codes: [502, 503]
        attempts: 2
        backoff: 10ms
      backendRefs:
        - name: origin
          port: 80
YAML
start_pinned proxy-coxswain 0 env TOKIO_WORKER_THREADS=1 RUST_LOG=warn \
    "$COXSWAIN_BIN" run --config "$WORKDIR/config" --admin-address "127.0.0.1:$ADMIN" \
    --bind-address 127.0.0.1
PROXY_PID=$LAST_PID
WATCH_PID=$PROXY_PID wait_http "http://127.0.0.1:$ADMIN/readyz" 60
for rule in bare policy mirror; do
    WATCH_PID=$PROXY_PID wait_http "http://127.0.0.1:$PORT/$rule" 20
done
# The rules really carry their policy: CORS and response edits answer.
headers=$(curl -s -D - -o /dev/null -H "$ORIGIN_HEADER" "http://127.0.0.1:$PORT/policy")
grep -qi '^access-control-allow-origin: https://app.example' <<<"$headers" &&
    grep -qi '^x-served-by: coxswain' <<<"$headers" ||
    { echo "the policy rule did not apply its filters: $headers" >&2; exit 1; }

# ---- measurement ------------------------------------------------------------
RESULTS="$WORKDIR/results.tsv"
: >"$RESULTS"
mapfile -t PIDS < <(pid_tree "$PROXY_PID")
wrk_run() { # URL SECONDS OUT
    timeout $(($2 + 30)) taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$2"s --latency \
        -H "$ORIGIN_HEADER" "$1" >"$3" 2>&1 || true
}
for round in $(seq "$ROUNDS"); do
for rule in bare policy mirror; do
    url="http://127.0.0.1:$PORT/$rule"
    wrk_run "$url" "$WARMUP" /dev/null
    before=$(cpu_ticks "${PIDS[@]}")
    wrk_run "$url" "$DURATION" "$WORKDIR/$rule.out"
    after=$(cpu_ticks "${PIDS[@]}")
    parsed=$(parse_wrk "$WORKDIR/$rule.out") || { cat "$WORKDIR/$rule.out" >&2; exit 1; }
    read -r requests rps p50 p99 errors <<<"$parsed"
    cpu_s=$(awk -v t=$((after - before)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rule" "$requests" "$rps" "$p50" "$p99" \
        "$errors" "$cpu_s" >>"$RESULTS"
    echo "  round $round $rule: $rps req/s, p50 $p50 ms, p99 $p99 ms, errors $errors, proxy CPU $cpu_s s" >&2
done
done
mirrored=$(curl -s "http://127.0.0.1:$ADMIN/metrics" |
    awk '/^coxswain_proxy_mirror_requests_total/ {s += $NF} END {print s + 0}')

mkdir -p "$(dirname "$OUT")"
{
    echo "# Route policy cost ($(date -u +%Y-%m-%d), git $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown))"
    echo
    echo "wrk -t1 -c$CONNECTIONS, ${DURATION}s per rule after ${WARMUP}s warm-up, $ROUNDS rounds in turn,"
    echo "HTTP/1.1 keep-alive, 1 KiB body; Coxswain with one worker on core 0, origin"
    echo "nginx and wrk on core 1. Each rule's median round (by requests per proxy"
    echo "CPU-second); the ratio is of medians. Mirror requests sent: $mirrored."
    echo
    echo "| Rule | Requests/s | p50 ms | p99 ms | Errors | Proxy CPU s | **Per CPU-second** | all rounds | vs bare |"
    echo "|---|---:|---:|---:|---:|---:|---:|---|---:|"
    awk -F'\t' '{ printf "%s\t%.0f\t%s\n", $1, ($7 > 0) ? $2 / $7 : 0, $0 }' "$RESULTS" |
        sort -t$'\t' -k1,1 -k2,2n | awk -F'\t' '
        { rule = $1; n[rule]++; per[rule, n[rule]] = $2; row[rule, n[rule]] = $0 }
        END {
            split("bare policy mirror", order, " ")
            for (k = 1; k <= 3; k++) {
                r = order[k]; m = int((n[r] + 1) / 2); split(row[r, m], f, "\t")
                all = ""; for (i = 1; i <= n[r]; i++) all = all (i > 1 ? ", " : "") per[r, i]
                if (k == 1) base = per[r, m]
                printf "| %s | %s | %s | %s | %s | %s | **%d** | %s | %.2fx |\n", r, f[5], f[6], f[7], f[8], f[9], per[r, m], all, (base > 0) ? per[r, m] / base : 0
            }
        }'
    echo
    echo "Errors count non-2xx answers and socket errors; every run must have none."
} >"$OUT"
cat "$OUT"
