# The HTTP proxies of the side-by-side benchmarks, each configured the same
# way (one worker, pinned to core 0, in front of the origin on ORIGIN_PORT).
# Sourced by scripts/bench-proxy.sh and scripts/bench-memory.sh; expects
# ROOT, WORKDIR, ORIGIN_PORT and COXSWAIN_BIN, and bench/lib/procs.sh.
# MAX_CONNECTIONS (default 8192) caps client connections where a proxy
# needs a cap configured.

# render_config TEMPLATE OUT KEY=VALUE... : replace @KEY@ placeholders.
render_config() {
    local template=$1 out=$2 kv script=""
    shift 2
    for kv in "$@"; do
        script+="s|@${kv%%=*}@|${kv#*=}|g;"
    done
    sed -e "$script" "$ROOT/bench/configs/$template" >"$out"
}

# Each start_PROXY sets PROXY_PID, H1_URL and H2C_URL.
start_nginx() {
    local port h2c
    port=$(free_port) h2c=$(free_port)
    render_config proxy-nginx.conf "$WORKDIR/proxy-nginx.conf" WORKDIR="$WORKDIR" \
        ORIGIN_PORT="$ORIGIN_PORT" LISTEN_PORT="$port" H2C_PORT="$h2c" \
        MAX_CONNECTIONS="${MAX_CONNECTIONS:-8192}"
    start_pinned proxy-nginx 0 nginx -p "$WORKDIR" -e "$WORKDIR/proxy-nginx-error.log" \
        -c "$WORKDIR/proxy-nginx.conf"
    PROXY_PID=$LAST_PID H1_URL="http://127.0.0.1:$port/" H2C_URL="http://127.0.0.1:$h2c/"
}

start_haproxy() {
    local port
    port=$(free_port)
    render_config proxy-haproxy.cfg "$WORKDIR/proxy-haproxy.cfg" \
        ORIGIN_PORT="$ORIGIN_PORT" LISTEN_PORT="$port" MAX_CONNECTIONS="${MAX_CONNECTIONS:-8192}"
    start_pinned proxy-haproxy 0 haproxy -db -f "$WORKDIR/proxy-haproxy.cfg"
    PROXY_PID=$LAST_PID H1_URL="http://127.0.0.1:$port/" H2C_URL=$H1_URL
}

start_envoy() {
    local port
    port=$(free_port)
    render_config proxy-envoy.yaml "$WORKDIR/proxy-envoy.yaml" \
        ORIGIN_PORT="$ORIGIN_PORT" LISTEN_PORT="$port"
    start_pinned proxy-envoy 0 "$ENVOY_BIN" -c "$WORKDIR/proxy-envoy.yaml" \
        --concurrency 1 -l warning --disable-hot-restart
    PROXY_PID=$LAST_PID H1_URL="http://127.0.0.1:$port/" H2C_URL=$H1_URL
}

# start_coxswain [ACCESS_LOG [FLAG...]] : ACCESS_LOG is a file (default) or
# `off`; further flags go to `coxswain run`.
start_coxswain() {
    local port admin help args access_log=${1:-$WORKDIR/access.log}
    shift || true
    port=$(free_port) admin=$(free_port)
    "$ROOT/bench/gen-coxswain-config.sh" "$WORKDIR/coxswain-config" "$port" "$ORIGIN_PORT"
    args=(run --config "$WORKDIR/coxswain-config" --admin-address "127.0.0.1:$admin")
    help=$("$COXSWAIN_BIN" run --help 2>&1 || true)
    if grep -q -- '--worker-threads' <<<"$help"; then args+=(--worker-threads 1); fi
    if grep -q -- '--bind-address' <<<"$help"; then args+=(--bind-address 127.0.0.1); fi
    if grep -q -- '--access-log ' <<<"$help"; then args+=(--access-log "$access_log"); fi
    args+=("$@")
    # tokio's multi-thread runtime honours TOKIO_WORKER_THREADS when the
    # binary does not set a worker count itself.
    start_pinned proxy-coxswain 0 env TOKIO_WORKER_THREADS=1 RUST_LOG=warn \
        "$COXSWAIN_BIN" "${args[@]}"
    PROXY_PID=$LAST_PID H1_URL="http://127.0.0.1:$port/" H2C_URL=$H1_URL
    ADMIN_URL="http://127.0.0.1:$admin"
    WATCH_PID=$PROXY_PID wait_http "$ADMIN_URL/readyz" 60
}

# The same binary without its access log: the log's cost is the gap.
start_coxswain-nolog() { start_coxswain off; }

# Coxswain without its access log, tracing every request (100% sampling) to
# a real OTLP receiver: Jaeger over OTLP/gRPC, pinned with the origin on
# core 1. Against coxswain-nolog, the gap is tracing's cost.
start_coxswain-traced() {
    local otlp query query_grpc
    otlp=$(free_port) query=$(free_port) query_grpc=$(free_port)
    render_config jaeger.yaml "$WORKDIR/jaeger.yaml" OTLP_GRPC_PORT="$otlp" \
        QUERY_PORT="$query" QUERY_GRPC_PORT="$query_grpc"
    start_pinned jaeger 1 "$JAEGER_BIN" --config "$WORKDIR/jaeger.yaml"
    JAEGER_PID=$LAST_PID
    WATCH_PID=$JAEGER_PID wait_http "http://127.0.0.1:$query/api/services" 60
    start_coxswain off --otlp-endpoint "http://127.0.0.1:$otlp" --otlp-protocol grpc \
        --trace-sample 1
    TRACE_QUERY_URL="http://127.0.0.1:$query"
}

# After a traced run: the spans Jaeger stored prove tracing really ran
# (a note for the report), and the receiver stops with the proxy.
finish_coxswain-traced() {
    local services
    services=$(curl -s "$TRACE_QUERY_URL/api/services" || true)
    if grep -q '"coxswain' <<<"$services"; then
        NOTES+=("coxswain-traced: Jaeger received spans (services: $(jq -c .data <<<"$services"))")
    else
        NOTES+=("coxswain-traced: Jaeger stored no spans ($services): tracing did not run")
    fi
    stop_pid "$JAEGER_PID"
}
