//go:build tools

// Package tools pins h2spec (HTTP/2 conformance checker) for scripts/h2spec.sh.
package tools

import _ "github.com/summerwind/h2spec/cmd/h2spec"
