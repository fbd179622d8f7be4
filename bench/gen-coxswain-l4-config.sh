#!/usr/bin/env bash
# Writes a standalone Coxswain config directory for the L4 benchmark: one
# Gateway on 127.0.0.1 with a TCP, a TLS passthrough (hostname bench.test)
# and a UDP listener; a TCPRoute, TLSRoute and UDPRoute, each to a
# selector-less Service whose EndpointSlice points at the matching origin.
#
# usage: bench/gen-coxswain-l4-config.sh DIR TCP_PORT TLS_PORT UDP_PORT \
#            ORIGIN_TCP_PORT ORIGIN_TLS_PORT ORIGIN_UDP_PORT
set -euo pipefail

if [ "$#" -ne 7 ]; then
    echo "usage: $0 DIR TCP_PORT TLS_PORT UDP_PORT ORIGIN_TCP_PORT ORIGIN_TLS_PORT ORIGIN_UDP_PORT" >&2
    exit 2
fi
dir=$1 tcp_port=$2 tls_port=$3 udp_port=$4 origin_tcp=$5 origin_tls=$6 origin_udp=$7
mkdir -p "$dir"

cat >"$dir/gateway.yaml" <<YAML
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
  name: bench
  namespace: default
spec:
  gatewayClassName: coxswain
  addresses:
    - type: IPAddress
      value: 127.0.0.1
  listeners:
    - name: tcp
      port: ${tcp_port}
      protocol: TCP
    - name: tls
      port: ${tls_port}
      protocol: TLS
      hostname: bench.test
      tls:
        mode: Passthrough
    - name: udp
      port: ${udp_port}
      protocol: UDP
YAML

# route KIND NAME SECTION BACKEND [HOSTNAME]
route() {
    cat <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: $1
metadata:
  name: $2
  namespace: default
spec:
  parentRefs:
    - name: bench
      sectionName: $3
YAML
    if [ -n "${5:-}" ]; then
        printf '  hostnames:\n    - %s\n' "$5"
    fi
    cat <<YAML
  rules:
    - backendRefs:
        - name: $4
          port: 7000
YAML
}

# service NAME PROTOCOL ORIGIN_PORT
service() {
    cat <<YAML
apiVersion: v1
kind: Service
metadata:
  name: $1
  namespace: default
spec:
  ports:
    - name: main
      port: 7000
      protocol: $2
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $1-1
  namespace: default
  labels:
    kubernetes.io/service-name: $1
addressType: IPv4
ports:
  - name: main
    port: $3
    protocol: $2
endpoints:
  - addresses: [127.0.0.1]
    conditions: {ready: true}
YAML
}

{
    route TCPRoute tcp tcp tcp-origin
    echo ---
    route TLSRoute tls tls tls-origin bench.test
    echo ---
    route UDPRoute udp udp udp-origin
} >"$dir/routes.yaml"

{
    service tcp-origin TCP "$origin_tcp"
    echo ---
    service tls-origin TCP "$origin_tls"
    echo ---
    service udp-origin UDP "$origin_udp"
} >"$dir/origins.yaml"
