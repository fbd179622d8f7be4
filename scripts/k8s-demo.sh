#!/usr/bin/env bash
# Companion of scripts/cluster.sh: the local control plane plus the fakelet
# (stand-in kubelet) and `coxswain controller`, ready for
# `kubectl apply -f examples/kubernetes/`. See docs/kubernetes.md.
#
#   scripts/k8s-demo.sh up [--release]  build, start cluster + fakelet + controller
#   scripts/k8s-demo.sh down             stop all of it (idempotent)
#   scripts/k8s-demo.sh status           what runs
#
# `up` builds debug binaries (quick to build, about three times slower to
# translate and apply); `--release` builds and runs optimised ones, the
# ones to measure with (docs/kubernetes.md).
#
# Gateways get addresses from COXSWAIN_DEMO_POOL (default 10.214.0.0/24),
# reachable inside the node namespace only: curl them with
# `ip netns exec coxswain-node curl ...`. Needs root.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN="${COXSWAIN_DEMO_STATE:-${XDG_RUNTIME_DIR:-/tmp}/coxswain-demo}"
POOL="${COXSWAIN_DEMO_POOL:-10.214.0.0/24}"
POD_CIDR="${COXSWAIN_DEMO_POD_CIDR:-10.244.0.0/24}"
ADMIN_ADDRESS="127.0.0.1:9901"
NETNS="${COXSWAIN_NETNS:-coxswain-node}"
NODE_IP="${COXSWAIN_NODE_PREFIX:-10.213.0}.2"
NODE_NAME="coxswain-node"
PROFILE=debug
ECHO_BASIC="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/bin/echo-basic"

log() { printf '[demo] %s\n' "$*" >&2; }
die() { printf '[demo] error: %s\n' "$*" >&2; exit 1; }
pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

stop() { # NAME SECONDS
  local pid i
  pid="$(cat "$RUN/$1.pid" 2>/dev/null || true)"
  if pid_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < $2 * 4; i++)); do pid_alive "$pid" || break; sleep 0.25; done
    pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/$1.pid"
}

start() { # NAME CMD... (inside the node namespace, detached)
  local name="$1"; shift
  setsid ip netns exec "$NETNS" env KUBECONFIG="$KUBECONFIG" "$@" > "$RUN/$name.log" 2>&1 < /dev/null &
  echo $! > "$RUN/$name.pid"
}

wait_for() { # NAME SECONDS WHAT CHECK...
  local name="$1" limit="$2" what="$3"; shift 3
  local deadline=$((SECONDS + limit)) pid
  pid="$(cat "$RUN/$name.pid")"
  until "$@" >/dev/null 2>&1; do
    if ! pid_alive "$pid" || [ "$SECONDS" -ge "$deadline" ]; then
      log "$what: not reached; last lines of $RUN/$name.log:"
      tail -n 30 "$RUN/$name.log" >&2 || true
      exit 1
    fi
    sleep 0.25
  done
}

node_ready() {
  [ "$(kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
controller_ready() { ip netns exec "$NETNS" curl -sf "http://$ADMIN_ADDRESS/readyz"; }

cmd_up() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
  local t=$SECONDS
  mkdir -p "$RUN"
  log "building coxswain and the fakelet ($PROFILE), echo-basic"
  local release=()
  [ "$PROFILE" = release ] && release=(--release)
  (cd "$repo" && cargo build --quiet "${release[@]}" -p coxswain -p coxswain-fakelet)
  "$repo/tools/fakelet/build-echo-basic.sh" >&2
  "$repo/scripts/cluster.sh" up > "$RUN/cluster-env.sh"
  # shellcheck disable=SC1091
  source "$RUN/cluster-env.sh"
  ip netns exec "$NETNS" ip route replace local "$POOL" dev lo
  if ! pid_alive "$(cat "$RUN/fakelet.pid" 2>/dev/null || true)"; then
    log "starting the fakelet (node $NODE_NAME, pods in $POD_CIDR)"
    start fakelet "$OUT/coxswain-fakelet" run --node-name "$NODE_NAME" --node-ip "$NODE_IP" \
      --pod-cidr "$POD_CIDR" --image-map "*echo-basic*=$ECHO_BASIC" --state-dir "$RUN/fakelet"
  fi
  wait_for fakelet 60 "node $NODE_NAME Ready" node_ready
  if ! pid_alive "$(cat "$RUN/controller.pid" 2>/dev/null || true)"; then
    log "starting coxswain controller (Gateway addresses from $POOL)"
    start controller env RUST_LOG="${RUST_LOG:-info}" "$OUT/coxswain" controller \
      --gateway-address-pool "$POOL" --admin-address "$ADMIN_ADDRESS"
  fi
  wait_for controller 60 "controller ready" controller_ready
  log "up in $((SECONDS - t))s; logs in $RUN"
  cat "$RUN/cluster-env.sh"
}

cmd_down() {
  stop controller 10
  stop fakelet 30   # removes its pods' namespaces
  "$repo/scripts/cluster.sh" down
}

cmd_status() {
  local name pid rc=0
  for name in fakelet controller; do
    pid="$(cat "$RUN/$name.pid" 2>/dev/null || true)"
    if pid_alive "$pid"; then echo "$name: running (pid $pid)"; else echo "$name: stopped"; rc=1; fi
  done
  "$repo/scripts/cluster.sh" status || rc=1
  return "$rc"
}

case "${2:-}" in
  "") ;;
  --release) PROFILE=release ;;
  *) sed -n '2,16p' "$0"; exit 2 ;;
esac
OUT="${CARGO_TARGET_DIR:-$repo/target}/$PROFILE"

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) sed -n '2,16p' "$0"; exit 2 ;;
esac
