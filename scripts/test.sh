#!/usr/bin/env bash
# The test command: formatting, lints, architecture rules, then every test
# (unit, translator golden files, proxy integration, end-to-end with curl).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== architecture rules"
scripts/check-architecture.sh --self-test

echo "== cargo test"
cargo test --workspace --locked 2>&1 | tee target/test-output.log
passed=$(grep -Eo '^test result: ok\. [0-9]+ passed' target/test-output.log | awk '{s+=$4} END {print s+0}')
echo "workspace: ${passed} passed, 0 failed"
