#!/usr/bin/env bash
# What Coxswain's own filters cost, side by side with nginx doing the same
# where nginx can: requests per proxy CPU-second through one proxy in front
# of the same nginx origin (1 KiB text body), HTTP/1.1 keep-alive with wrk.
#   bare       no filter;
#   ratelimit  a per-client RateLimit far above the offered rate (nginx:
#              limit_req), so the check is measured, never a refusal;
#   basic      BasicAuth against an htpasswd with one APR1 user (nginx:
#              auth_basic), every request carrying the credentials;
#   gzip       Compression, gzip level 6 of the 1 KiB body (nginx: gzip);
#   jwt        JwtAuth with an inline RSA key, every request carrying an
#              RS256 token (Coxswain only: open-source nginx has no JWT
#              validation).
# Headline figures: each filter's Coxswain/nginx ratio per proxy CPU-second,
# and each proxy's cost against its own bare route. Rounds are interleaved
# (this VM's rates drift by 20% between minutes); medians are reported.
#
# usage: scripts/bench-filters.sh [--duration 5] [--rounds 3] [--connections 64]
#            [--filters "bare ratelimit basic gzip jwt"] [--coxswain-bin PATH]
#            [--out bench/results/filters-latest.md]
#
# The proxy under test is pinned to core 0; the origin and wrk to core 1.
# Everything started here is stopped on exit (trap), whatever happens.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=5
ROUNDS=3
CONNECTIONS=64
WARMUP=2
FILTERS="bare ratelimit basic gzip jwt"
COXSWAIN_BIN=""
OUT="$ROOT/bench/results/filters-latest.md"

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
    case $1 in
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --filters) FILTERS=$2; shift 2 ;;
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

WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-filters.XXXXXX")
# shellcheck source=../bench/lib/procs.sh
source "$ROOT/bench/lib/procs.sh"
# shellcheck source=../bench/lib/load.sh
source "$ROOT/bench/lib/load.sh"
# shellcheck source=../bench/lib/setup.sh
source "$ROOT/bench/lib/setup.sh"
# shellcheck source=../bench/lib/filters.sh
source "$ROOT/bench/lib/filters.sh"
cleanup() {
    stop_all_started
    rm -rf "$WORKDIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NOTES=()
ensure_tools
ensure_packages openssl:openssl
ensure_coxswain || { printf '%s\n' "${NOTES[@]}" >&2; exit 1; }
mkdir -p "$WORKDIR/tmp"
BODY=$(head -c 1024 /dev/zero | tr '\0' 'x')
make_credentials

# ---- origin ---------------------------------------------------------------
ORIGIN_PORT=$(free_port)
sed -e "s|@WORKDIR@|$WORKDIR|g; s|@ORIGIN_PORT@|$ORIGIN_PORT|g; s|@BODY@|$BODY|g" \
    "$ROOT/bench/configs/origin-nginx.conf" >"$WORKDIR/origin.conf"
start_pinned origin 1 nginx -p "$WORKDIR" -e "$WORKDIR/origin-error.log" -c "$WORKDIR/origin.conf"
wait_http "http://127.0.0.1:$ORIGIN_PORT/" 20

# ---- the two proxies, each with one route per filter -----------------------
NGINX_PORT=$(free_port)
sed -e "s|@WORKDIR@|$WORKDIR|g; s|@ORIGIN_PORT@|$ORIGIN_PORT|g; s|@LISTEN_PORT@|$NGINX_PORT|g" \
    "$ROOT/bench/configs/filters-nginx.conf" >"$WORKDIR/filters-nginx.conf"
start_pinned proxy-nginx 0 nginx -p "$WORKDIR" -e "$WORKDIR/filters-nginx-error.log" \
    -c "$WORKDIR/filters-nginx.conf"
NGINX_PID=$LAST_PID

COXSWAIN_PORT=$(free_port) ADMIN=$(free_port)
"$ROOT/bench/gen-coxswain-config.sh" "$WORKDIR/config" "$COXSWAIN_PORT" "$ORIGIN_PORT"
coxswain_filter_config >"$WORKDIR/config/route.yaml"
start_pinned proxy-coxswain 0 env TOKIO_WORKER_THREADS=1 RUST_LOG=warn \
    "$COXSWAIN_BIN" run --config "$WORKDIR/config" --admin-address "127.0.0.1:$ADMIN" \
    --bind-address 127.0.0.1
COXSWAIN_PID=$LAST_PID
WATCH_PID=$COXSWAIN_PID wait_http "http://127.0.0.1:$ADMIN/readyz" 60

port_of() { if [ "$1" = nginx ]; then echo "$NGINX_PORT"; else echo "$COXSWAIN_PORT"; fi; }
proxies_for() { if has_nginx_equivalent "$1"; then echo "nginx coxswain"; else echo coxswain; fi; }

# Every route really filters before anything is measured.
for filter in $FILTERS; do
    for proxy in $(proxies_for "$filter"); do
        check_filter "$proxy" "$filter" "http://127.0.0.1:$(port_of "$proxy")/$filter"
    done
done

# ---- measurement ------------------------------------------------------------
RESULTS="$WORKDIR/results.tsv"
: >"$RESULTS"
wrk_run() { # URL SECONDS OUT FILTER
    local headers=()
    mapfile -t headers < <(request_headers "$4")
    local args=()
    for h in "${headers[@]}"; do args+=(-H "$h"); done
    timeout $(($2 + 30)) taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$2"s --latency \
        "${args[@]}" "$1" >"$3" 2>&1 || true
}
for round in $(seq "$ROUNDS"); do
    for filter in $FILTERS; do
        for proxy in $(proxies_for "$filter"); do
            if [ "$proxy" = nginx ]; then pid=$NGINX_PID; else pid=$COXSWAIN_PID; fi
            mapfile -t PIDS < <(pid_tree "$pid")
            url="http://127.0.0.1:$(port_of "$proxy")/$filter"
            wrk_run "$url" "$WARMUP" /dev/null "$filter"
            before=$(cpu_ticks "${PIDS[@]}")
            wrk_run "$url" "$DURATION" "$WORKDIR/$proxy-$filter.out" "$filter"
            after=$(cpu_ticks "${PIDS[@]}")
            parsed=$(parse_wrk "$WORKDIR/$proxy-$filter.out") ||
                { cat "$WORKDIR/$proxy-$filter.out" >&2; exit 1; }
            read -r requests rps p50 p99 errors <<<"$parsed"
            cpu_s=$(awk -v t=$((after - before)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$proxy" "$filter" "$requests" "$rps" \
                "$p50" "$p99" "$errors" "$cpu_s" >>"$RESULTS"
            echo "  round $round $proxy $filter: $rps req/s, p99 $p99 ms, errors $errors, proxy CPU $cpu_s s" >&2
        done
    done
done

mkdir -p "$(dirname "$OUT")"
{
    echo "# Filter cost, Coxswain and nginx ($(date -u +%Y-%m-%d), git $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown))"
    echo
    echo "wrk -t1 -c$CONNECTIONS, ${DURATION}s per run after ${WARMUP}s warm-up, $ROUNDS interleaved rounds,"
    echo "HTTP/1.1 keep-alive, 1 KiB text body. Each proxy has one worker on core 0; the"
    echo "origin nginx and wrk share core 1. Medians (by requests per proxy CPU-second)."
    echo
    versions
    echo
    render_filter_table "$RESULTS" "$FILTERS"
    echo
    echo "Errors count non-2xx answers and socket errors; every run must have none."
} >"$OUT"
cat "$OUT"
