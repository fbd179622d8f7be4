// Pins the Gateway API release whose CRDs scripts/cluster.sh installs.
// `go mod download sigs.k8s.io/gateway-api` (run from this directory) puts
// config/crd/{standard,experimental} into the module cache. Kept apart from
// the parent module so its requirements cannot change the versions that
// kube-apiserver is built with.
module coxswain.dev/tools/k8s/crds

go 1.25.0

require sigs.k8s.io/gateway-api v1.6.3
