#!/usr/bin/env bash
# Writes a standalone Coxswain config directory for the proxy benchmark:
# one Gateway listener on 127.0.0.1:LISTEN_PORT routing every path to a
# selector-less Service whose EndpointSlice points at the origin. With
# APP_PROTOCOL (e.g. kubernetes.io/ws), the Service port and the slice's
# port carry it as appProtocol.
#
# usage: bench/gen-coxswain-config.sh DIR LISTEN_PORT ORIGIN_PORT [APP_PROTOCOL]
set -euo pipefail

if [ "$#" -ne 3 ] && [ "$#" -ne 4 ]; then
    echo "usage: $0 DIR LISTEN_PORT ORIGIN_PORT [APP_PROTOCOL]" >&2
    exit 2
fi
dir=$1 listen_port=$2 origin_port=$3 app_protocol=${4:-}
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
    - name: http
      port: ${listen_port}
      protocol: HTTP
YAML

cat >"$dir/route.yaml" <<YAML
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: origin
  namespace: default
spec:
  parentRefs:
    - name: bench
  rules:
    - matches:
        - path: {type: PathPrefix, value: /}
      backendRefs:
        - name: origin
          port: 80
YAML

cat >"$dir/origin.yaml" <<YAML
apiVersion: v1
kind: Service
metadata:
  name: origin
  namespace: default
spec:
  ports:
    - name: http
      port: 80
      protocol: TCP
${app_protocol:+      appProtocol: ${app_protocol}
}---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: origin-1
  namespace: default
  labels:
    kubernetes.io/service-name: origin
addressType: IPv4
ports:
  - name: http
    port: ${origin_port}
    protocol: TCP
${app_protocol:+    appProtocol: ${app_protocol}
}endpoints:
  - addresses: [127.0.0.1]
    conditions: {ready: true}
YAML
