//go:build tools

// Package tools pins the standard gRPC interop test server and client for
// tools/grpc-interop/build.sh (used by crates/coxswain/tests/grpc.rs).
package tools

import (
	_ "google.golang.org/grpc/interop/client"
	_ "google.golang.org/grpc/interop/server"
)
