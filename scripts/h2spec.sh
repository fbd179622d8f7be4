#!/usr/bin/env bash
# HTTP/2 conformance (h2spec, strict mode) against a running `coxswain run`:
# one h2c listener (HTTP/1.1 and HTTP/2 with prior knowledge on one port)
# and one HTTPS listener (ALPN h2), both routed to the built-in echo
# backend. Fails unless every h2spec test passes on both.
#
#   scripts/h2spec.sh [--coxswain-bin PATH]
#
# h2spec is built from tools/h2spec (pinned in its go.mod) and cached under
# ~/.cache/coxswain/bin. Loopback only; everything started is stopped on exit.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GOTOOLCHAIN=local
bin="${CARGO_TARGET_DIR:-$repo/target}/debug/coxswain"
case "${1:-}" in
  --coxswain-bin) bin="${2:?--coxswain-bin needs a path}" ;;
  "") ;;
  *) echo "usage: $0 [--coxswain-bin PATH]" >&2; exit 2 ;;
esac

cache="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/bin"
h2spec="$cache/h2spec-$(sha256sum "$repo/tools/h2spec/go.sum" | cut -c1-12)"
if [ ! -x "$h2spec" ]; then
  mkdir -p "$cache"
  (cd "$repo/tools/h2spec" && go build -o "$h2spec" github.com/summerwind/h2spec/cmd/h2spec)
fi
[ -x "$bin" ] || (cd "$repo" && cargo build --quiet -p coxswain)

work="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
h2c=$(free_port) https=$(free_port) echo_port=$(free_port) admin=$(free_port)

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
indent() { sed 's/^/    /' "$1"; }
mkdir "$work/config"
cat > "$work/config/h2spec.yaml" <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: coxswain
spec:
  controllerName: coxswain-labs.dev/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: h2spec
spec:
  gatewayClassName: coxswain
  listeners:
  - name: h2c
    protocol: HTTP
    port: $h2c
  - name: https
    protocol: HTTPS
    port: $https
    tls:
      certificateRefs:
      - name: cert
---
apiVersion: v1
kind: Secret
metadata:
  name: cert
type: kubernetes.io/tls
stringData:
  tls.crt: |
$(indent "$work/cert.pem")
  tls.key: |
$(indent "$work/key.pem")
---
apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  ports:
  - port: $echo_port
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: echo
  labels:
    kubernetes.io/service-name: echo
addressType: IPv4
ports:
- port: $echo_port
endpoints:
- addresses: [127.0.0.1]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: all
spec:
  parentRefs:
  - name: h2spec
  rules:
  - backendRefs:
    - name: echo
      port: $echo_port
YAML

"$bin" run --config "$work/config" --bind-address 127.0.0.1 \
  --admin-address "127.0.0.1:$admin" --echo "127.0.0.1:$echo_port" > "$work/coxswain.log" 2>&1 &
pid=$!
for _ in $(seq 1 200); do
  curl -sf "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/coxswain.log" >&2; exit 1; }
  sleep 0.1
done

status=0
for target in "h2c:-p $h2c" "https (ALPN h2):-p $https -t -k"; do
  name="${target%%:*}" args="${target#*:}"
  # shellcheck disable=SC2086
  if out=$("$h2spec" -h 127.0.0.1 $args --strict 2>&1); then :; fi
  summary=$(grep -E '^[0-9]+ tests, ' <<<"$out" || echo "no summary")
  echo "h2spec --strict, $name: $summary"
  if ! grep -qE '^[0-9]+ tests, [0-9]+ passed, 0 skipped, 0 failed' <<<"$out"; then
    grep -A3 '×' <<<"$out" >&2 || true
    status=1
  fi
done
exit "$status"
