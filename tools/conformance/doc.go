// Package conformance runs the upstream Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance) against Coxswain.
//
// The suite needs a cluster with Coxswain's controller running and its
// GatewayClass accepted; scripts/conformance.sh provides both. The claimed
// features are read from the live GatewayClass status and must equal the
// Rust source of truth, crates/translate/src/features.rs.
package conformance
