#!/usr/bin/env bash
# Local Kubernetes control plane (etcd + kube-apiserver + kube-controller-manager)
# inside a network namespace, without Docker. See docs/local-cluster.md.
#
#   scripts/cluster.sh build    build (or reuse) the cached binaries
#   scripts/cluster.sh up       build if needed, start everything, install Gateway API CRDs
#   scripts/cluster.sh env      print the shell exports for using the cluster
#   scripts/cluster.sh status   show what is running
#   scripts/cluster.sh down     stop everything and remove the namespace (idempotent)
#   scripts/cluster.sh stop-apiserver    stop only kube-apiserver (API server loss tests)
#   scripts/cluster.sh start-apiserver   start it again and wait for /readyz
#
# Needs root (network namespaces), Go, openssl, curl, jq, iproute2.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$repo/tools/k8s"
export GOTOOLCHAIN=local

# ---- settings (overridable through the environment) -------------------------
NETNS="${COXSWAIN_NETNS:-coxswain-node}"
# /30 link between the host and the node namespace. The apiserver listens on
# NODE_IP inside the namespace; the host end only exists so the host can reach it.
NODE_PREFIX="${COXSWAIN_NODE_PREFIX:-10.213.0}"   # first three octets
HOST_IP="$NODE_PREFIX.1"
NODE_IP="$NODE_PREFIX.2"
HOST_VETH="${COXSWAIN_HOST_VETH:-cxnode-host}"
NODE_VETH="cxnode0"
SERVICE_CIDR="${COXSWAIN_SERVICE_CIDR:-10.96.0.0/16}"
svc_net="${SERVICE_CIDR%/*}"
SERVICE_APISERVER_IP="${svc_net%.*}.$(( ${svc_net##*.} + 1 ))"   # first address: the kubernetes Service
APISERVER_PORT=6443
ETCD_CLIENT_PORT=2379
ETCD_PEER_PORT=2380
READY_TIMEOUT="${COXSWAIN_READY_TIMEOUT:-120}"   # seconds
STATE="${COXSWAIN_CLUSTER_STATE:-${XDG_RUNTIME_DIR:-/tmp}/coxswain-cluster}"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/k8s"

required_version() { # dir module
  (cd "$1" && go mod edit -json) | jq -r --arg m "$2" '.Require[] | select(.Path == $m) | .Version'
}
k8s_version() { required_version "$tools" k8s.io/kubernetes; }
gwapi_version() { required_version "$tools/crds" sigs.k8s.io/gateway-api; }
K8S_VERSION="$(k8s_version)"
BIN="$CACHE_ROOT/$K8S_VERSION/bin"
BINARIES=(kube-apiserver kube-controller-manager kubectl etcd)

log() { printf '[cluster] %s\n' "$*" >&2; }
die() { printf '[cluster] error: %s\n' "$*" >&2; exit 1; }
in_ns() { ip netns exec "$NETNS" "$@"; }

# ---- build ------------------------------------------------------------------
# The cache is keyed by Kubernetes version; a stamp holding the hash of the
# wrapper module's go.mod/go.sum makes a changed module graph rebuild too.
module_stamp() { cat "$tools/go.mod" "$tools/go.sum" | sha256sum | cut -d' ' -f1; }

binaries_ok() {
  local b
  for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || return 1; done
  [ "$(cat "$BIN/.stamp" 2>/dev/null)" = "$(module_stamp)" ]
}

cmd_build() {
  if binaries_ok; then
    log "binaries for $K8S_VERSION cached in $BIN"
    return 0
  fi
  command -v go >/dev/null || die "go is not installed"
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local build_date
  build_date="$(cd "$tools" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
    | jq -r '.Info' | xargs jq -r '.Time')"
  local ldflags="-s -w"
  local pkg
  # Same variables upstream's hack/lib/version.sh sets, so /version and
  # `kubectl version` report the real release.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
    ldflags+=" -X $pkg.gitCommit=module-$K8S_VERSION"
  done
  local tmp="$BIN.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  log "building ${BINARIES[*]} for $K8S_VERSION into $BIN (slow the first time)"
  local start=$SECONDS
  (
    cd "$tools"
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kubectl
    # etcd's main package is the module root of go.etcd.io/etcd/server/v3.
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
  ) || { rm -rf "$tmp"; die "build failed"; }
  module_stamp > "$tmp/.stamp"
  rm -rf "$BIN"; mkdir -p "$(dirname "$BIN")"; mv "$tmp" "$BIN"
  log "built in $((SECONDS - start))s"
}

# ---- Gateway API CRDs ---------------------------------------------------------
crd_dir() {
  local dir
  dir="$(cd "$tools/crds" && go mod download -json "sigs.k8s.io/gateway-api@$(gwapi_version)" | jq -r .Dir)"
  [ -d "$dir/config/crd/experimental" ] || die "no config/crd/experimental in $dir"
  printf '%s\n' "$dir/config/crd/experimental"
}

# ---- certificates, tokens, kubeconfig ---------------------------------------
gen_pki() {
  local pki="$STATE/pki"
  mkdir -p "$pki"; chmod 700 "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=coxswain-local-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  cat > "$pki/serving.ext" <<EOF
basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,IP:127.0.0.1,IP:$SERVICE_APISERVER_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EOF
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 30 -extfile "$pki/serving.ext" -out "$pki/apiserver.crt" 2>/dev/null
  # Service-account token signing key pair.
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null

  # Static tokens: token,user,uid,"group1,group2"
  local admin cm
  admin="$(openssl rand -hex 24)"; cm="$(openssl rand -hex 24)"
  # The controller manager runs all controllers under its own identity (no
  # --use-service-account-credentials), so it needs more than the bootstrap
  # system:kube-controller-manager role grants: it is put in system:masters.
  printf '%s,admin,admin,"system:masters"\n%s,system:kube-controller-manager,kube-controller-manager,"system:masters"\n' \
    "$admin" "$cm" > "$pki/tokens.csv"
  chmod 600 "$pki"/*
  write_kubeconfig "$STATE/kubeconfig" admin "$admin"
  write_kubeconfig "$STATE/controller-manager.kubeconfig" kube-controller-manager "$cm"
}

write_kubeconfig() { # file user token
  local ca
  ca="$(base64 -w0 < "$STATE/pki/ca.crt")"
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: coxswain-local
  cluster:
    server: https://$NODE_IP:$APISERVER_PORT
    certificate-authority-data: $ca
users:
- name: $2
  user:
    token: $3
contexts:
- name: coxswain-local
  context:
    cluster: coxswain-local
    user: $2
    namespace: default
current-context: coxswain-local
EOF
  chmod 600 "$1"
}

# ---- network namespace --------------------------------------------------------
setup_netns() {
  ip netns add "$NETNS"
  ip link add "$HOST_VETH" type veth peer name "$NODE_VETH" netns "$NETNS"
  ip addr add "$HOST_IP/30" dev "$HOST_VETH"
  ip link set "$HOST_VETH" up
  in_ns ip link set lo up
  in_ns ip addr add "$NODE_IP/30" dev "$NODE_VETH"
  in_ns ip link set "$NODE_VETH" up
}

# ---- processes --------------------------------------------------------------
pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# start NAME CMD...: runs CMD inside the namespace, detached, logging to NAME.log
start() {
  local name="$1"; shift
  setsid ip netns exec "$NETNS" "$@" > "$STATE/$name.log" 2>&1 < /dev/null &
  echo $! > "$STATE/$name.pid"
}

fail_component() { # name message
  log "$1: $2; last lines of $STATE/$1.log:"
  tail -n 30 "$STATE/$1.log" >&2 || true
  cmd_down >/dev/null 2>&1 || true
  exit 1
}

# wait_for NAME SECONDS CHECK...: polls CHECK every 0.5 s until it succeeds,
# the component's process dies, or the time is up.
wait_for() {
  local name="$1" limit="$2"; shift 2
  local deadline=$((SECONDS + limit)) pid
  pid="$(cat "$STATE/$name.pid")"
  until "$@" >/dev/null 2>&1; do
    pid_alive "$pid" || fail_component "$name" "exited during start-up"
    [ "$SECONDS" -lt "$deadline" ] || fail_component "$name" "not ready after ${limit}s"
    sleep 0.5
  done
  log "$name ready ($((SECONDS - t0))s since start)"
}

etcd_healthy() {
  in_ns curl -sf --max-time 2 "http://127.0.0.1:$ETCD_CLIENT_PORT/health" | grep -q '"health":"true"'
}
apiserver_ready() {
  curl -sf --max-time 2 --cacert "$STATE/pki/ca.crt" \
    -H "Authorization: Bearer $(awk -F, '$2 == "admin" {print $1}' "$STATE/pki/tokens.csv")" \
    "https://$NODE_IP:$APISERVER_PORT/readyz" | grep -qx ok
}
controller_manager_healthy() {
  in_ns curl -sfk --max-time 2 "https://127.0.0.1:10257/healthz" | grep -qx ok
}

start_etcd() {
  # etcd's data lives on a tmpfs mounted inside the private mount namespace
  # that `ip netns exec` creates, so it disappears with the process.
  mkdir -p "$STATE/etcd"
  start etcd sh -c 'mount -t tmpfs -o size=1g,mode=0700 tmpfs "$1" && shift && exec "$@"' sh \
    "$STATE/etcd" "$BIN/etcd" \
    --name=coxswain \
    --data-dir="$STATE/etcd/data" \
    --listen-client-urls="http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --advertise-client-urls="http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="coxswain=http://127.0.0.1:$ETCD_PEER_PORT" \
    --listen-metrics-urls="http://127.0.0.1:2381" \
    --unsafe-no-fsync \
    --quota-backend-bytes=$((768 * 1024 * 1024)) \
    --log-level=warn
}

start_apiserver() {
  local pki="$STATE/pki"
  start kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --bind-address=0.0.0.0 \
    --advertise-address="$NODE_IP" \
    --secure-port="$APISERVER_PORT" \
    --cert-dir="$STATE/apiserver-certs" \
    --tls-cert-file="$pki/apiserver.crt" \
    --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --token-auth-file="$pki/tokens.csv" \
    --authorization-mode=RBAC \
    --anonymous-auth=false \
    --service-account-issuer="https://kubernetes.default.svc.cluster.local" \
    --service-account-key-file="$pki/sa.pub" \
    --service-account-signing-key-file="$pki/sa.key" \
    --api-audiences="https://kubernetes.default.svc.cluster.local" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --disable-admission-plugins=ServiceAccount \
    --endpoint-reconciler-type=none \
    --allow-privileged=true \
    --profiling=false \
    --v=1
}

start_controller_manager() {
  local pki="$STATE/pki"
  start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$STATE/controller-manager.kubeconfig" \
    --controllers=deployment-controller,replicaset-controller,endpointslice-controller,endpointslice-mirroring-controller,namespace-controller,garbage-collector-controller,serviceaccount-controller,pod-garbage-collector-controller \
    --leader-elect=false \
    --bind-address=127.0.0.1 \
    --secure-port=10257 \
    --cert-dir="$STATE/controller-manager-certs" \
    --root-ca-file="$pki/ca.crt" \
    --service-account-private-key-file="$pki/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --profiling=false \
    --v=1
}

install_crds() {
  local dir
  dir="$(crd_dir)"
  log "installing Gateway API $(gwapi_version) CRDs (experimental channel)"
  "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig" apply --server-side -k "$dir" > "$STATE/crds.log" 2>&1 \
    || { log "kubectl apply failed:"; tail -n 30 "$STATE/crds.log" >&2; cmd_down >/dev/null 2>&1; exit 1; }
  "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig" wait --for=condition=Established \
    --timeout=60s crd --all >> "$STATE/crds.log" 2>&1 \
    || { log "CRDs not Established:"; tail -n 30 "$STATE/crds.log" >&2; cmd_down >/dev/null 2>&1; exit 1; }
  log "CRDs Established ($((SECONDS - t0))s since start)"
}

# ---- commands -----------------------------------------------------------------
cmd_env() {
  [ -f "$STATE/kubeconfig" ] || die "no cluster state in $STATE (run: scripts/cluster.sh up)"
  printf 'export KUBECONFIG=%q\n' "$STATE/kubeconfig"
  printf 'export PATH=%q:"$PATH"\n' "$BIN"
  printf 'export COXSWAIN_NETNS=%q\n' "$NETNS"
  printf 'export COXSWAIN_APISERVER=%q\n' "https://$NODE_IP:$APISERVER_PORT"
}

cmd_up() {
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
  if [ -f "$STATE/kube-apiserver.pid" ] && pid_alive "$(cat "$STATE/kube-apiserver.pid")"; then
    log "already up"; cmd_env; return 0
  fi
  cmd_build
  cmd_down >/dev/null 2>&1 || true
  # Whatever goes wrong from here on, leave nothing half-started behind.
  trap 'log "start-up failed; tearing down"; cmd_down >/dev/null 2>&1' EXIT
  local start_time=$SECONDS
  t0=$SECONDS
  mkdir -p "$STATE"; chmod 700 "$STATE"
  gen_pki
  setup_netns
  start_etcd
  wait_for etcd 30 etcd_healthy
  start_apiserver
  wait_for kube-apiserver "$READY_TIMEOUT" apiserver_ready
  start_controller_manager
  wait_for kube-controller-manager 60 controller_manager_healthy
  install_crds
  trap - EXIT
  log "up in $((SECONDS - start_time))s; apiserver https://$NODE_IP:$APISERVER_PORT (netns $NETNS)"
  cmd_env
}

cmd_down() {
  local name pid i
  for name in kube-controller-manager kube-apiserver etcd; do
    pid="$(cat "$STATE/$name.pid" 2>/dev/null || true)"
    pid_alive "$pid" && kill -TERM "$pid" 2>/dev/null || true
  done
  for name in kube-controller-manager kube-apiserver etcd; do
    pid="$(cat "$STATE/$name.pid" 2>/dev/null || true)"
    for i in $(seq 1 40); do pid_alive "$pid" || break; sleep 0.25; done
    pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    rm -f "$STATE/$name.pid"
  done
  if [ -e "/run/netns/$NETNS" ]; then
    # Anything else still inside the namespace was started there by us.
    for pid in $(ip netns pids "$NETNS" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$NETNS" 2>/dev/null || true
  fi
  ip link del "$HOST_VETH" 2>/dev/null || true
  log "down"
}

# Only kube-apiserver; etcd, the controller manager and the namespace stay.
cmd_stop_apiserver() {
  local pid i
  pid="$(cat "$STATE/kube-apiserver.pid" 2>/dev/null || true)"
  pid_alive "$pid" || die "kube-apiserver is not running"
  kill -TERM "$pid"
  for i in $(seq 1 40); do pid_alive "$pid" || break; sleep 0.25; done
  pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$STATE/kube-apiserver.pid"
  log "kube-apiserver stopped"
}

cmd_start_apiserver() {
  [ -f "$STATE/pki/ca.crt" ] || die "no cluster state in $STATE (run: scripts/cluster.sh up)"
  if [ -f "$STATE/kube-apiserver.pid" ] && pid_alive "$(cat "$STATE/kube-apiserver.pid")"; then
    die "kube-apiserver is already running"
  fi
  t0=$SECONDS
  # As in `up`, a start that fails tears the whole cluster down.
  # Keep the log of the run before the restart.
  mv -f "$STATE/kube-apiserver.log" "$STATE/kube-apiserver.before-restart.log" 2>/dev/null || true
  start_apiserver
  wait_for kube-apiserver "$READY_TIMEOUT" apiserver_ready
}

cmd_status() {
  local name pid rc=0
  echo "version:  $K8S_VERSION ($(binaries_ok && echo "built: $BIN" || echo "not built"))"
  echo "state:    $STATE"
  if [ -e "/run/netns/$NETNS" ]; then echo "netns:    $NETNS ($NODE_IP)"; else echo "netns:    absent"; rc=1; fi
  for name in etcd kube-apiserver kube-controller-manager; do
    pid="$(cat "$STATE/$name.pid" 2>/dev/null || true)"
    if pid_alive "$pid"; then echo "$name: running (pid $pid)"; else echo "$name: stopped"; rc=1; fi
  done
  if [ "$rc" = 0 ] && apiserver_ready; then echo "readyz:   ok"; else echo "readyz:   not ready"; rc=1; fi
  return "$rc"
}

case "${1:-}" in
  build) cmd_build ;;
  up) cmd_up ;;
  down) cmd_down ;;
  env) cmd_env ;;
  status) cmd_status ;;
  stop-apiserver) cmd_stop_apiserver ;;
  start-apiserver) cmd_start_apiserver ;;
  *) echo "usage: $0 build|up|down|env|status|stop-apiserver|start-apiserver" >&2; exit 2 ;;
esac
