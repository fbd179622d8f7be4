# Process helpers for the proxy benchmark: start pinned processes, stop only
# what we started, wait for readiness with a deadline, read CPU time.
# Sourced by scripts/bench-proxy.sh; expects $WORKDIR to be set.

STARTED_PIDS=()
CLK_TCK=$(getconf CLK_TCK)

# start_pinned NAME CORE CMD... : run CMD in the background on CPU CORE
# (when taskset exists), output to $WORKDIR/NAME.log; sets LAST_PID.
start_pinned() {
    local name=$1 core=$2
    shift 2
    if command -v taskset >/dev/null; then
        taskset -c "$core" "$@" >"$WORKDIR/$name.log" 2>&1 &
    else
        "$@" >"$WORKDIR/$name.log" 2>&1 &
    fi
    LAST_PID=$!
    STARTED_PIDS+=("$LAST_PID")
}

# stop_pid PID : SIGTERM, wait up to 5 s for exit, then SIGKILL.
stop_pid() {
    local pid=$1 deadline=$((SECONDS + 5))
    kill -TERM "$pid" 2>/dev/null || return 0
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
        wait_a_moment
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

stop_all_started() {
    local i
    for ((i = ${#STARTED_PIDS[@]} - 1; i >= 0; i--)); do
        stop_pid "${STARTED_PIDS[$i]}"
    done
    STARTED_PIDS=()
}

# One poll interval of a deadline-bounded loop.
wait_a_moment() {
    sleep 0.05
}

# pid_tree PID : PID and all its descendants, one per line.
pid_tree() {
    local root=$1 stat ppid pid
    echo "$root"
    for stat in /proc/[0-9]*/stat; do
        pid=${stat#/proc/}
        pid=${pid%/stat}
        # Field 4 (ppid) counted after the ")" that closes the command name.
        ppid=$(sed -E 's/.*\) [A-Za-z] ([0-9]+) .*/\1/' "$stat" 2>/dev/null) || continue
        if [ "$ppid" = "$root" ]; then
            pid_tree "$pid"
        fi
    done
}

# cpu_ticks PID... : utime + stime (clock ticks) summed over the given pids.
cpu_ticks() {
    local total=0 pid rest f
    for pid in "$@"; do
        rest=$(sed -E 's/.*\) //' "/proc/$pid/stat" 2>/dev/null) || continue
        # After the command name: state is f[0], utime f[11], stime f[12].
        read -r -a f <<<"$rest"
        total=$((total + f[11] + f[12]))
    done
    echo "$total"
}

# wait_http URL SECONDS [CURL_ARGS...] : poll until URL answers 2xx; gives up
# early when the process WATCH_PID (if set) has exited.
wait_http() {
    local url=$1 deadline=$((SECONDS + $2))
    shift 2
    until curl -fsS -o /dev/null --max-time 1 "$@" "$url" 2>/dev/null; do
        if [ -n "${WATCH_PID:-}" ] && ! kill -0 "$WATCH_PID" 2>/dev/null; then
            echo "process $WATCH_PID exited before $url answered" >&2
            return 1
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "timed out waiting for $url" >&2
            return 1
        fi
        wait_a_moment
    done
}

# free_port : a loopback TCP port nobody listens on right now.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# core_busy CORE : "busy total" jiffies of one core from /proc/stat.
core_busy() {
    awk -v c="cpu$1" '$1 == c { print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9 }' /proc/stat
}

# busy_pct BEFORE AFTER : percentage of a core busy between two core_busy reads.
busy_pct() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        split(a, x, " "); split(b, y, " "); d = y[2] - x[2]
        printf("%.0f\n", (d > 0) ? 100 * (y[1] - x[1]) / d : 0) }'
}
