#!/usr/bin/env bash
# Runs the upstream Gateway API conformance suite against Coxswain on a local
# control plane (no Docker). See docs/conformance.md.
#
#   scripts/conformance.sh [--profile P] [--run-test NAME] [--core-only] [--dedicated] [--debug] [--keep]
#
#   --profile P       conformance profile(s), comma-separated (default: every
#                     profile Coxswain claims, CLAIMED_PROFILES below)
#   --run-test NAME   run one test (its report goes to a temp dir, not conformance/reports)
#   --core-only       only the profiles' core tests (a quick check)
#   --dedicated       every Gateway dedicated: GatewayClass `coxswain` gets a
#                     parametersRef (a class default), so each Gateway has its
#                     own pool of `coxswain proxy` pods behind a LoadBalancer
#                     Service (the fakelet's load-balancer stand-in); reported
#                     apart (suite -mode=dedicated). Default profile GATEWAY-HTTP.
#   --debug           the suite's request/response debug logging
#   --keep            leave the cluster, fakelet and controller running afterwards
#   --down            stop what an earlier --keep left running
#
# Steps: build coxswain, the fakelet and echo-basic; bring up our own cluster
# instance (scripts/cluster.sh with a separate namespace and state dir, so a
# developer's cluster keeps running); start the fakelet and `coxswain
# controller` inside the node namespace; apply the GatewayClass; wait for
# Accepted; run `go test`; tear everything down. Exit status is go test's,
# which also fails when a test whose features are all claimed did not pass.
# Needs root (network namespaces).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GOTOOLCHAIN=local

# The profiles Coxswain claims (the features are crates/translate/src/features.rs).
CLAIMED_PROFILES="GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS,GATEWAY-TCP,GATEWAY-UDP"

# The dedicated-pools run's profile (docs/conformance.md).
DEDICATED_PROFILES="GATEWAY-HTTP"

profile="" run_test="" core_only=false dedicated=false debug=false keep=false down=false
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="${2:?--profile needs a value}"; shift 2 ;;
    --profile=*) profile="${1#*=}"; shift ;;
    --run-test) run_test="${2:?--run-test needs a test name}"; shift 2 ;;
    --run-test=*) run_test="${1#*=}"; shift ;;
    --core-only) core_only=true; shift ;;
    --debug) debug=true; shift ;;
    --keep) keep=true; shift ;;
    --down) down=true; shift ;;
    --dedicated) dedicated=true; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$profile" ]; then
  if $dedicated; then profile="$DEDICATED_PROFILES"; else profile="$CLAIMED_PROFILES"; fi
fi

# ---- settings (overridable through the environment) -------------------------
RUN="${COXSWAIN_CONFORMANCE_STATE:-${XDG_RUNTIME_DIR:-/tmp}/coxswain-conformance}"
# Our own instance of scripts/cluster.sh: namespace, link and state of its own.
export COXSWAIN_NETNS="${COXSWAIN_CONFORMANCE_NETNS:-cxconf-node}"
export COXSWAIN_NODE_PREFIX="${COXSWAIN_CONFORMANCE_NODE_PREFIX:-10.213.4}"
export COXSWAIN_HOST_VETH="${COXSWAIN_CONFORMANCE_HOST_VETH:-cxconf-host}"
export COXSWAIN_CLUSTER_STATE="$RUN/cluster"
NETNS="$COXSWAIN_NETNS"
NODE_IP="$COXSWAIN_NODE_PREFIX.2"
NODE_NAME="coxswain-conformance-node"
POD_CIDR="${COXSWAIN_CONFORMANCE_POD_CIDR:-10.244.0.0/22}"
# Every Gateway gets its own address from this pool (the harness's stand-in
# for a LoadBalancer). A local route makes the whole range bindable inside
# the node namespace, nowhere else.
POOL_PREFIX="${COXSWAIN_CONFORMANCE_POOL_PREFIX:-10.214.0}"
POOL="$POOL_PREFIX.0/24"
USABLE_ADDRESS="$POOL_PREFIX.250"       # in the pool, above what the suite's Gateways take
UNUSABLE_ADDRESS="10.215.0.250"         # outside the pool
# --dedicated: the pools' LoadBalancer Services get addresses from this pool
# (the fakelet's load-balancer stand-in), the pools' proxies dial the config
# stream at the bridge address (the controller runs in the node namespace),
# and the fakelet runs the controller's binary for the proxy image.
LB_PREFIX="${COXSWAIN_CONFORMANCE_LB_PREFIX:-10.216.0}"
LB_POOL="$LB_PREFIX.0/24"
STREAM_ADVERTISE="${COXSWAIN_CONFORMANCE_BRIDGE_ADDRESS:-10.244.0.1}:19902"   # first host of POD_CIDR: the bridge
STREAM_LISTEN="0.0.0.0:19902"
PROXY_IMAGE="coxswain-proxy:conformance"
POOLS_NAMESPACE="coxswain-conformance-pools"
if $dedicated; then USABLE_ADDRESS="$LB_PREFIX.250"; fi
ADMIN_ADDRESS="127.0.0.1:9902"
CARGO_PROFILE="${COXSWAIN_CONFORMANCE_CARGO_PROFILE:-release}"
TARGET="${CARGO_TARGET_DIR:-$repo/target}"
case "$CARGO_PROFILE" in dev) OUT="$TARGET/debug" ;; *) OUT="$TARGET/$CARGO_PROFILE" ;; esac
# Binaries the fakelet runs for images. Not under /root: the suite's coredns
# pod mounts a ConfigMap over /root, which would hide them from its process.
POD_BIN="$RUN/bin"
ECHO_BASIC="$POD_BIN/echo-basic"
DNS_STAND_IN="$POD_BIN/dns-stand-in"   # for the base manifests' coredns image

log() { printf '[conformance] %s\n' "$*" >&2; }
die() { printf '[conformance] error: %s\n' "$*" >&2; exit 1; }
in_ns() { ip netns exec "$NETNS" "$@"; }
pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
mkdir -p "$RUN"
started=$SECONDS

# ---- teardown -------------------------------------------------------------------
# stop NAME SECONDS: SIGTERM, wait up to SECONDS, then SIGKILL.
stop() {
  local pid i
  pid="$(cat "$RUN/$1.pid" 2>/dev/null || true)"
  pid_alive "$pid" || { rm -f "$RUN/$1.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < $2 * 4; i++)); do pid_alive "$pid" || break; sleep 0.25; done
  pid_alive "$pid" && { log "$1 did not stop in $2s; killing it"; kill -KILL "$pid" 2>/dev/null || true; }
  rm -f "$RUN/$1.pid"
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if $keep; then
    log "--keep: leaving everything running (logs in $RUN); stop with: scripts/conformance.sh --down"
  else
    stop controller 10
    stop fakelet 30   # the fakelet removes its pods' namespaces on SIGTERM
    "$repo/scripts/cluster.sh" down >/dev/null 2>&1 || true
  fi
  log "total time $((SECONDS - started))s; logs in $RUN"
  exit "$rc"
}

# ---- build ----------------------------------------------------------------------
build() {
  local t=$SECONDS
  log "building coxswain and the fakelet ($CARGO_PROFILE)"
  (cd "$repo" && cargo build --quiet --profile "$CARGO_PROFILE" -p coxswain -p coxswain-fakelet)
  # echo-basic from the suite's own module, so the backends and the tests
  # always come from one Gateway API release.
  mkdir -p "$POD_BIN"
  (cd "$repo/tools/conformance" && CGO_ENABLED=0 go build -trimpath -o "$ECHO_BASIC" sigs.k8s.io/gateway-api/conformance/echo-basic)
  (cd "$repo/tools/conformance" && CGO_ENABLED=0 go build -o "$DNS_STAND_IN" ./dns-stand-in)
  log "checking claimed features against the Rust list and Gateway API versions (no cluster needed)"
  (cd "$repo/tools/conformance" && go test -count=1 -skip '^TestConformance$' ./... >&2)
  log "build and checks took $((SECONDS - t))s"
}

# ---- start ----------------------------------------------------------------------
# start NAME CMD...: runs CMD inside the node namespace, detached, logging to NAME.log.
start() {
  local name="$1"; shift
  setsid ip netns exec "$NETNS" env KUBECONFIG="$KUBECONFIG" "$@" > "$RUN/$name.log" 2>&1 < /dev/null &
  echo $! > "$RUN/$name.pid"
}

# wait_until NAME SECONDS WHAT CHECK...: polls CHECK until it succeeds; fails
# early when NAME's process died.
wait_until() {
  local name="$1" limit="$2" what="$3"; shift 3
  local deadline=$((SECONDS + limit)) pid
  pid="$(cat "$RUN/$name.pid")"
  until "$@" >/dev/null 2>&1; do
    if ! pid_alive "$pid" || [ "$SECONDS" -ge "$deadline" ]; then
      if pid_alive "$pid"; then log "$what: not reached after ${limit}s"; else log "$what: $name exited"; fi
      log "last lines of $RUN/$name.log:"
      tail -n 40 "$RUN/$name.log" >&2 || true
      exit 1
    fi
    sleep 0.5
  done
}

node_ready() {
  [ "$(kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
gatewayclass_accepted() {
  [ "$(kubectl get gatewayclass coxswain -o jsonpath='{.status.conditions[?(@.type=="Accepted")].status}')" = True ]
}

# deploy/install.yaml as a user applies it (RBAC, CRDs, GatewayClass `coxswain`),
# with its Deployment scaled to zero, and a kubeconfig holding a token of its
# ServiceAccount.
install_chart() {
  kubectl apply -f "$repo/deploy/install.yaml" > "$RUN/install.log"
  kubectl -n coxswain-system scale deployment/coxswain --replicas=0 >> "$RUN/install.log"
  local token
  token="$(kubectl -n coxswain-system create token coxswain --duration=3h)"
  cat > "$RUN/coxswain-sa.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: conformance
  cluster: {server: "$COXSWAIN_APISERVER", certificate-authority: "$COXSWAIN_CLUSTER_STATE/pki/ca.crt"}
users:
- name: coxswain
  user: {token: "$token"}
contexts:
- name: coxswain
  context: {cluster: conformance, user: coxswain, namespace: coxswain-system}
current-context: coxswain
EOF
  chmod 600 "$RUN/coxswain-sa.kubeconfig"
}

# start_coxswain ARGS...: `coxswain controller` with the chart Deployment's
# arguments and ARGS, as the chart's ServiceAccount (the fakelet cannot give
# pods in-cluster credentials, so the binary runs as a process with its token).
start_coxswain() {
  KUBECONFIG="$RUN/coxswain-sa.kubeconfig" start controller env RUST_LOG="${RUST_LOG:-info}" \
    "$OUT/coxswain" controller \
    --controller-name=coxswain-labs.dev/gateway-controller \
    --leader-lease-namespace=coxswain-system \
    --leader-lease-name=coxswain-controller \
    --drain-timeout=30s \
    --proxy-selector=app.kubernetes.io/name=coxswain \
    --proxy-selector=app.kubernetes.io/instance=coxswain \
    --admin-address="$ADMIN_ADDRESS" "$@"
}

# --dedicated: the chart's RBAC with dedicatedPools.enabled (rendered by
# Helm, as scripts/helm.sh builds it), a CoxswainGatewayParameters made the
# default of GatewayClass `coxswain` (so every Gateway the suite creates is
# dedicated), and the controller with the chart's pool arguments: no address
# pool (the LoadBalancer address mode, as in a cloud), the config stream on
# the pod bridge, the pools' image mapped by the fakelet to this binary.
start_dedicated_controller() {
  "$repo/scripts/helm.sh" template coxswain "$repo/deploy/helm/coxswain" \
    --namespace coxswain-system --kube-version 1.35.0 \
    --set dedicatedPools.enabled=true \
    --show-only templates/clusterrole.yaml --show-only templates/role.yaml \
    > "$RUN/pool-rbac.yaml"
  kubectl apply -f "$RUN/pool-rbac.yaml" >> "$RUN/install.log"
  kubectl apply -f - >> "$RUN/install.log" <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: $POOLS_NAMESPACE
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainGatewayParameters
metadata:
  name: dedicated
  namespace: $POOLS_NAMESPACE
spec:
  serviceType: LoadBalancer
  replicas: 1
EOF
  kubectl patch gatewayclass coxswain --type merge -p "{\"spec\":{\"parametersRef\":{
    \"group\":\"gateway.coxswain-labs.dev\",\"kind\":\"CoxswainGatewayParameters\",
    \"name\":\"dedicated\",\"namespace\":\"$POOLS_NAMESPACE\"}}}" >> "$RUN/install.log"
  log "starting coxswain controller as the chart's ServiceAccount (dedicated pools; LoadBalancer addresses from the fakelet, $LB_POOL)"
  start_coxswain \
    --proxy-image="$PROXY_IMAGE" \
    --config-stream-advertise="$STREAM_ADVERTISE" \
    --config-stream-listen="$STREAM_LISTEN"
}

bring_up() {
  local t=$SECONDS
  "$repo/scripts/cluster.sh" up > "$RUN/cluster-env.sh"
  # shellcheck disable=SC1091
  source "$RUN/cluster-env.sh"
  in_ns ip route replace local "$POOL" dev lo

  log "starting the fakelet (node $NODE_NAME, pods in $POD_CIDR)"
  local extra=()
  # --dedicated: the load-balancer stand-in, and the proxy image.
  $dedicated && extra=(--load-balancer-pool "$LB_POOL" --image-map "$PROXY_IMAGE=$OUT/coxswain")
  start fakelet "$OUT/coxswain-fakelet" run \
    --node-name "$NODE_NAME" --node-ip "$NODE_IP" --pod-cidr "$POD_CIDR" \
    --image-map "*echo-basic*=$ECHO_BASIC" \
    --image-map "*coredns*=$DNS_STAND_IN" \
    "${extra[@]}" \
    --state-dir "$RUN/fakelet"
  wait_until fakelet 60 "node $NODE_NAME Ready" node_ready

  install_chart
  if $dedicated; then
    start_dedicated_controller
    wait_until controller 120 "GatewayClass coxswain Accepted" gatewayclass_accepted
    log "control plane, fakelet and controller (dedicated pools) up in $((SECONDS - t))s"
    return
  fi
  log "starting coxswain controller as the chart's ServiceAccount (Gateway addresses from $POOL)"
  # The chart Deployment's arguments, plus the address pool; the fakelet cannot
  # give pods in-cluster credentials, so the binary runs as a process with the
  # ServiceAccount's token (same RBAC as in a cluster). Not the chart's
  # --gateway-class-name=coxswain: the suite creates GatewayClasses of its own
  # with our controllerName (GatewayClassObservedGenerationBump) and expects
  # them served, which is the binary's default.
  start_coxswain --gateway-address-pool="$POOL"
  wait_until controller 120 "GatewayClass coxswain Accepted" gatewayclass_accepted
  log "control plane, fakelet and controller up in $((SECONDS - t))s"
}

# ---- run the suite ----------------------------------------------------------------
run_suite() {
  local t=$SECONDS rc=0 args
  args=(-conformance-profiles="$profile"
        -usable-address="$USABLE_ADDRESS" -unusable-address="$UNUSABLE_ADDRESS")
  [ -n "$run_test" ] && args+=(-run-test="$run_test")
  $core_only && args+=(-core-only)
  $dedicated && args+=(-mode=dedicated)
  $debug && args+=(-debug)
  log "running the suite: profile $profile${run_test:+, test $run_test}$($core_only && echo ', core only')$($dedicated && echo ', every Gateway dedicated')"
  # The suite dials Gateway addresses, so it runs inside the node namespace.
  set +e
  (cd "$repo/tools/conformance" && in_ns env KUBECONFIG="$KUBECONFIG" \
    COXSWAIN_VERSION="${COXSWAIN_VERSION:-}" \
    go test -timeout 90m -count=1 -v -run '^TestConformance$' . -args "${args[@]}") \
    2>&1 | tee "$RUN/go-test.log" | grep -E --line-buffered '^\s*--- (PASS|FAIL|SKIP)|^(ok|FAIL|panic)' >&2
  rc="${PIPESTATUS[0]}"
  set -e
  local passed failed skipped
  # Only the suite's tests (one level below TestConformance), not their subtests.
  local top='^    --- %s: TestConformance/[^/ ]+ '
  passed=$(grep -cE "$(printf "$top" PASS)" "$RUN/go-test.log" || true)
  failed=$(grep -cE "$(printf "$top" FAIL)" "$RUN/go-test.log" || true)
  skipped=$(grep -cE "$(printf "$top" SKIP)" "$RUN/go-test.log" || true)
  log "go test: $passed passed, $failed failed, $skipped skipped in $((SECONDS - t))s (exit $rc)"
  if [ "$failed" -gt 0 ]; then
    log "failed tests:"; grep -E "$(printf "$top" FAIL)" "$RUN/go-test.log" >&2
    # What the failed tests logged (the last lines of each), so a failure in
    # CI can be diagnosed from its output alone.
    local name
    for name in $(grep -oE "$(printf "$top" FAIL | sed 's/ $//')" "$RUN/go-test.log" | sed 's|.*TestConformance/||'); do
      log "log of $name (last 60 lines):"
      awk -v t="TestConformance/$name" '
        /^=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
        index(cur, t) == 1 { print }' "$RUN/go-test.log" | tail -n 60 >&2
    done
  fi
  grep -E 'summary written to' "$RUN/go-test.log" | sed 's/^ */[conformance] /' >&2 || true
  return "$rc"
}

if $down; then keep=false; cleanup; fi
trap cleanup EXIT
trap 'exit 130' INT TERM
build
bring_up
run_suite
