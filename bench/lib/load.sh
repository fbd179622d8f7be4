# Load generators and their output parsers for the proxy benchmark.
# Each parser prints one line: "REQUESTS RPS P50_MS P99_MS ERRORS".
# Uses CONNECTIONS and DURATION/WARMUP-style arguments from the caller.

# drive PROTOCOL URL SECONDS OUT LOG : one load run on core 1, one client
# thread, bounded by timeout. http1: wrk keep-alive with CONNECTIONS
# connections. h2c: h2load prior knowledge (its default for http:// URLs)
# with as many streams in flight (CONNECTIONS/8 connections x 8 streams),
# per-request durations in LOG.
drive() {
    local protocol=$1 url=$2 seconds=$3 out=$4 log=$5 bound=$(($3 + 30))
    if [ "$protocol" = http1 ]; then
        timeout "$bound" taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$seconds"s --latency "$url" \
            >"$out" 2>&1 || true
    else
        timeout "$bound" taskset -c 1 h2load -t1 -c"$(h2_clients)" -m8 -D"$seconds" \
            --log-file="$log" "$url" >"$out" 2>&1 || true
    fi
}

h2_clients() {
    echo $(((CONNECTIONS + 7) / 8))
}

# parse_load PROTOCOL OUT LOG
parse_load() {
    if [ "$1" = http1 ]; then parse_wrk "$2"; else parse_h2load "$2" "$3"; fi
}

# wrk latency figures come as e.g. 812.00us, 1.23ms, 1.01s.
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) n /= 1000
        else if (v ~ /ms$/) n = n
        else if (v ~ /s$/) n *= 1000
        else if (v ~ /m$/) n *= 60000
        printf "%.3f", n
    }'
}

parse_wrk() {
    local out=$1 requests rps p50 p99 non2xx sockerr
    requests=$(awk '/requests in/ {print $1; exit}' "$out")
    rps=$(awk '/^Requests\/sec:/ {print $2; exit}' "$out")
    p50=$(awk '$1 == "50%" {print $2; exit}' "$out")
    p99=$(awk '$1 == "99%" {print $2; exit}' "$out")
    non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $NF; exit}' "$out")
    # "Socket errors: connect 0, read 0, write 0, timeout 0"
    sockerr=$(awk '/Socket errors:/ {gsub(",", ""); print $4 + $6 + $8 + $10; exit}' "$out")
    if [ -z "$requests" ] || [ -z "$rps" ] || [ -z "$p50" ] || [ -z "$p99" ]; then
        echo "could not parse wrk output $out" >&2
        return 1
    fi
    echo "$requests $rps $(to_ms "$p50") $(to_ms "$p99") $((${non2xx:-0} + ${sockerr:-0}))"
}

parse_h2load() {
    local out=$1 log=$2 requests rps failed not2xx percentiles
    # "finished in 10.00s, 12345.60 req/s, 12.70MB/s"
    rps=$(awk '/^finished in/ {print $4; exit}' "$out")
    # "requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout"
    requests=$(awk '/^requests:/ {print $8; exit}' "$out")
    failed=$(awk '/^requests:/ {print $10 + $12 + $14; exit}' "$out")
    # "status codes: N 2xx, N 3xx, N 4xx, N 5xx"
    not2xx=$(awk '/^status codes:/ {print $5 + $7 + $9; exit}' "$out")
    # Log lines: start time (us), status, duration (us).
    percentiles=$(awk -F'\t' '{print $3}' "$log" | sort -n | awk '
        { d[NR] = $1 }
        END {
            if (NR == 0) exit 1
            i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
            i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
            printf "%.3f %.3f", d[i50] / 1000, d[i99] / 1000
        }') || percentiles=""
    if [ -z "$requests" ] || [ -z "$rps" ] || [ -z "$percentiles" ]; then
        echo "could not parse h2load output $out" >&2
        return 1
    fi
    echo "$requests $rps $percentiles $((failed + ${not2xx:-0}))"
}
