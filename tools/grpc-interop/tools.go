//go:build tools

// Package tools pins the standard gRPC interop test client and grpcurl for
// tools/grpc-interop/build.sh (used by crates/coxswain/tests/integration/grpc.rs); the
// server is ./server, the interop TestService with reflection.
package tools

import (
	_ "github.com/fullstorydev/grpcurl/cmd/grpcurl"
	_ "google.golang.org/grpc/interop/client"
)
