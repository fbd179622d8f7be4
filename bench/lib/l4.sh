# Helpers for the benchmarks driven by tools/l4load (scripts/bench-l4.sh,
# scripts/bench-ws.sh): tools, the l4load binary, certificates, config
# templates, starting Coxswain, readiness of TCP ports, load runs, the
# measurement of one test against one proxy and the report.
# Sourced after procs.sh and setup.sh; uses ROOT, WORKDIR, NOTES, DURATION,
# WARMUP, CONCURRENCY, RESULTS, PROXY_PID, L4LOAD_BIN, COXSWAIN_BIN
# (and MESSAGE_BYTES for the ws test).

# nginx_stream_line : the load_module line nginx needs for its stream module
# (empty when the module is built in); fails when nginx has no stream module.
nginx_stream_line() {
    local v dir
    v=$(nginx -V 2>&1)
    case $v in
    *--with-stream=dynamic*)
        dir=$(sed -n 's/.*--modules-path=\([^ ]*\).*/\1/p' <<<"$v")
        [ -f "${dir:-/usr/lib/nginx/modules}/ngx_stream_module.so" ] || return 1
        echo "load_module ${dir:-/usr/lib/nginx/modules}/ngx_stream_module.so;"
        ;;
    *--with-stream*) echo "" ;;
    *) return 1 ;;
    esac
}

# ensure_l4_tools : install missing Debian packages (root only), including
# nginx's stream module.
ensure_l4_tools() {
    local stream=()
    if ! command -v nginx >/dev/null || ! nginx_stream_line >/dev/null; then
        stream=(=libnginx-mod-stream)
    fi
    ensure_packages nginx:nginx-light haproxy:haproxy openssl:openssl curl:curl \
        taskset:util-linux python3:python3 timeout:coreutils "${stream[@]}"
}

# ensure_l4load : sets L4LOAD_BIN, building tools/l4load (release) unless
# --l4load-bin named one.
ensure_l4load() {
    if [ -z "$L4LOAD_BIN" ]; then
        L4LOAD_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/coxswain-l4load"
        echo "building coxswain-l4load (release)" >&2
        (cd "$ROOT" && cargo build --release -p coxswain-l4load) >&2 || true
    fi
    if [ ! -x "$L4LOAD_BIN" ]; then
        echo "no load generator at $L4LOAD_BIN" >&2
        return 1
    fi
}

# make_certs DIR : a CA (ca.pem) and a leaf for bench.test signed by it
# (leaf.pem, leaf.key), P-256, valid two days.
make_certs() {
    local dir=$1
    mkdir -p "$dir"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=coxswain-bench-ca -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=bench.test \
        -keyout "$dir/leaf.key" -out "$dir/leaf.csr" 2>/dev/null
    printf 'subjectAltName=DNS:bench.test\nbasicConstraints=CA:FALSE\n' >"$dir/leaf.ext"
    openssl x509 -req -in "$dir/leaf.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
        -CAcreateserial -days 2 -extfile "$dir/leaf.ext" -out "$dir/leaf.pem" 2>/dev/null
}

# render_config TEMPLATE OUT KEY=VALUE... : bench/configs/TEMPLATE with its
# @KEY@ placeholders replaced, written to OUT.
render_config() {
    local template=$1 out=$2 kv script=""
    shift 2
    for kv in "$@"; do
        script+="s|@${kv%%=*}@|${kv#*=}|g;"
    done
    sed -e "$script" "$ROOT/bench/configs/$template" >"$out"
}

# start_coxswain_standalone DIR : `coxswain run --config DIR` on core 0 with
# one worker thread (as nginx and HAProxy get one worker); sets PROXY_PID and
# waits for /readyz on a free admin port.
start_coxswain_standalone() {
    local dir=$1 admin help args
    admin=$(free_port)
    args=(run --config "$dir" --bind-address 127.0.0.1 --admin-address "127.0.0.1:$admin")
    help=$("$COXSWAIN_BIN" run --help 2>&1 || true)
    if grep -q -- '--worker-threads' <<<"$help"; then args+=(--worker-threads 1); fi
    # tokio's multi-thread runtime honours TOKIO_WORKER_THREADS when the
    # binary does not set a worker count itself.
    start_pinned proxy-coxswain 0 env TOKIO_WORKER_THREADS=1 RUST_LOG=warn \
        "$COXSWAIN_BIN" "${args[@]}"
    PROXY_PID=$LAST_PID
    WATCH_PID=$PROXY_PID wait_http "http://127.0.0.1:$admin/readyz" 60
}

# proxy_order PROXIES : sets ORDER, the proxies to measure: nginx always and
# first, then HAProxy and Coxswain if asked for. Builds happen here, before
# any measurement, so every proxy sees the same machine.
proxy_order() {
    local proxy
    ORDER=nginx
    for proxy in $1; do
        case $proxy in
        nginx) ;;
        haproxy) ORDER+=" haproxy" ;;
        coxswain) if ensure_coxswain; then ORDER+=" coxswain"; fi ;;
        *) NOTES+=("$proxy: not supported by this benchmark, skipped") ;;
        esac
    done
}

# free_udp_port : a loopback UDP port nobody has bound right now.
free_udp_port() {
    python3 -c 'import socket; s=socket.socket(type=socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_tcp PORT SECONDS : poll until 127.0.0.1:PORT accepts; gives up early
# when WATCH_PID (if set) has exited.
wait_tcp() {
    local port=$1 deadline=$((SECONDS + $2))
    until timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; do
        if [ -n "${WATCH_PID:-}" ] && ! kill -0 "$WATCH_PID" 2>/dev/null; then
            echo "process $WATCH_PID exited before 127.0.0.1:$port accepted" >&2
            return 1
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "timed out waiting for 127.0.0.1:$port" >&2
            return 1
        fi
        wait_a_moment
    done
}

# l4_args TEST : the per-test arguments of the load generator.
l4_args() {
    case $1 in
    tcp-conn) echo "--size 16" ;;
    tcp-stream) echo "--chunk 16384" ;;
    tls-conn) echo "--size 16 --sni bench.test --cafile $WORKDIR/certs/ca.pem" ;;
    udp) echo "--size 64 --timeout-ms 200" ;;
    ws) echo "--path /ws --host ws.test --message-bytes ${MESSAGE_BYTES:-128}" ;;
    esac
}

# drive_l4 TEST PORT SECONDS CONCURRENCY OUT : one bounded load run on core 1;
# the JSON line goes to OUT, diagnostics to OUT.err.
drive_l4() {
    local test=$1 port=$2 seconds=$3 concurrency=$4 out=$5 extra
    read -r -a extra <<<"$(l4_args "$test")"
    timeout $((${seconds%.*} + 30)) taskset -c 1 "$L4LOAD_BIN" "$test" \
        --target "127.0.0.1:$port" --duration "$seconds" --concurrency "$concurrency" \
        "${extra[@]}" >"$out" 2>"$out.err" || true
}

# load_ok FILE : successful operations in a load run's JSON line (received
# bytes for tcp-stream, messages for ws); 0 when there is no parsable line.
load_ok() {
    python3 -c '
import json, sys
try:
    d = json.loads(open(sys.argv[1]).readline())
except Exception:
    print(0); sys.exit()
print({"udp": d.get("datagrams"), "tcp-stream": d.get("received_bytes"), "ws": d.get("messages")}.get(d.get("mode"), d.get("connections")) or 0)
' "$1"
}

# measure PROXY TEST PORT : warm up (which must succeed), then one measured
# run with the CPU time of PROXY_PID and its children around it; appends a
# record to RESULTS and prints its summary line.
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

# not_measured PROXY TEST NOTE : a record (and a note) for a test not run.
not_measured() {
    printf '{"proxy":"%s","test":"%s","note":"%s"}\n' "$1" "$2" "$3" >>"$RESULTS"
    NOTES+=("$1 $2: $3")
}

# l4_versions NGINX_FEATURE [ORIGIN_NOTE] : the versions list of a report.
l4_versions() {
    echo "- nginx: $(nginx -v 2>&1 | sed 's/.*version: //') ($1)"
    echo "- HAProxy: $(haproxy -v 2>/dev/null | head -1 | awk '{print $3}')"
    local cox=""
    if [ -n "${COXSWAIN_BIN:-}" ] && [ -x "$COXSWAIN_BIN" ]; then
        cox="$("$COXSWAIN_BIN" --version 2>/dev/null | awk '{print $2}'), "
    fi
    echo "- Coxswain: ${cox}git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "- load generator and origins: tools/l4load ($("$L4LOAD_BIN" --version 2>/dev/null || echo unknown))${2:+, $2}"
}

# write_l4_report FILE : the markdown results page.
write_l4_report() {
    local out=$1 note
    mkdir -p "$(dirname "$out")"
    {
        echo "# L4 proxy benchmark: latest results"
        echo
        echo "\`scripts/bench-l4.sh --duration $DURATION --concurrency $CONCURRENCY\`," \
            "$(date -u +%Y-%m-%dT%H:%M:%SZ)."
        echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //');" \
            "load average before/after: ${LOADAVG_START:-?} / $(cut -d' ' -f1-3 /proc/loadavg)."
        echo
        echo "Each proxy is pinned to core 0 with one worker; the origins (tools/l4load echo"
        echo "servers: TCP, TLS terminating for bench.test, UDP) and the load generator share core 1."
        echo "Load (\`coxswain-l4load\`, one thread, $CONCURRENCY workers, ${DURATION}s after a"
        echo "${WARMUP}s warm-up that is not counted): tcp-conn = connect, 16 bytes, echo, close;"
        echo "tcp-stream = $CONCURRENCY connections writing 16 KiB chunks and reading the echo (rate ="
        echo "MiB/s echoed back; each MiB crossed the proxy once each way); tls-conn = tcp-conn"
        echo "with a full TLS handshake (SNI bench.test, no resumption) passed through by SNI;"
        echo "udp = one socket per worker, 64-byte datagrams, a reply not back within 200 ms is lost."
        echo "Proxy CPU: utime+stime delta over the run from /proc/PID/stat, summed over the"
        echo "proxy's processes. Ratios are from this run only."
        echo
        if [ -s "$RESULTS" ]; then
            python3 "$ROOT/bench/lib/render_l4_table.py" "$RESULTS"
        else
            echo "(no results)"
        fi
        echo
        echo "Versions:"
        echo
        l4_versions "stream module" "$(openssl version | awk '{print $1, $2}') certificates"
        if [ "${#NOTES[@]}" -gt 0 ]; then
            echo
            echo "Notes:"
            echo
            for note in "${NOTES[@]}"; do echo "- $note"; done
        fi
    } >"$out"
}
