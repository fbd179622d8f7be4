#!/usr/bin/env bash
# The test command: formatting, lints, architecture rules, generated-file
# drift, then every test — unit, translator golden files, proxy integration,
# end-to-end with curl, Kubernetes end-to-end on a real API server — and the
# upstream Gateway API conformance suite: every test of every claimed profile
# whose features are all claimed must pass, and GATEWAY-HTTP core with every
# Gateway on a dedicated proxy pool.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"

echo "== cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== architecture rules"
scripts/check-architecture.sh --self-test

echo "== deploy/install.yaml and chart CRDs match their sources"
scripts/render-install.sh --check

echo "== one-time cached builds (Kubernetes binaries, echo-basic, Jaeger)"
scripts/cluster.sh build
tools/fakelet/build-echo-basic.sh
tools/jaeger/build.sh >/dev/null
echo "== CRD field list matches the pinned Gateway API CRDs" && scripts/gen-crd-fields.sh --check

echo "== cargo test"
# The console's browser test fails instead of skipping when chromium is missing.
export COXSWAIN_REQUIRE_CHROMIUM=1
cargo test --workspace --locked 2>&1 | tee "$target/test-output.log"
passed=$(grep -Eo '^test result: ok\. [0-9]+ passed' "$target/test-output.log" | awk '{s+=$4} END {print s+0}')
echo "workspace: ${passed} passed, 0 failed"
echo "== fuzz corpora and regressions, replayed without libFuzzer (docs/fuzzing.md)"
CARGO_TARGET_DIR="$target" cargo test --manifest-path fuzz/Cargo.toml --locked
fuzz_seconds="${COXSWAIN_FUZZ_SECONDS:-60}"
if ((fuzz_seconds > 0)); then
    echo "== bounded fuzzing: ${fuzz_seconds}s per target from the seed corpora (docs/fuzzing.md)"
    # Fresh work directory: every run starts from the checked-in seeds; the
    # instrumented build and cargo-fuzz are cached outside the repository.
    rm -rf "$target/fuzz-work"
    scripts/fuzz.sh --cache --jobs 2 --seconds "$fuzz_seconds" --work "$target/fuzz-work"
fi

echo "== h2spec --strict against an h2c and an HTTPS listener"
scripts/h2spec.sh

echo "== proxy benchmark smoke: the test build against nginx, fails only on a gross regression"
scripts/bench-smoke.sh

echo "== Gateway API conformance, every claimed profile and feature (debug binaries from the test build)"
COXSWAIN_CONFORMANCE_CARGO_PROFILE=dev scripts/conformance.sh

echo "== Gateway API conformance, GATEWAY-HTTP core with every Gateway on a dedicated proxy pool"
COXSWAIN_CONFORMANCE_CARGO_PROFILE=dev scripts/conformance.sh --dedicated --core-only
