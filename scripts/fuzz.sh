#!/usr/bin/env bash
# Builds and runs the cargo-fuzz targets in fuzz/ on stable Rust (no
# sanitizer: `cargo fuzz build -s none` needs no nightly). See docs/fuzzing.md.
#
# usage: scripts/fuzz.sh [--cache] [--seconds N] [--jobs N] [target...] [-- libFuzzer flags]
#        scripts/fuzz.sh [--cache] --replay [target...]
#        scripts/fuzz.sh --list
#   (no flag)    fuzz each target for N seconds (default 60) with
#                -max_total_time; new inputs go to fuzz/work/corpus/<target>
#                (git-ignored), the seeds in fuzz/corpus/<target> are only
#                read. Prints CPU seconds and executions per target.
#   --replay     run every target once over its seed corpus and saved
#                regressions (-runs=0).
#   --jobs N     fuzz N targets at once (default 1).
#   --work DIR   keep new inputs, logs and scratch files in DIR instead of
#                fuzz/work (a fresh DIR: start from the seeds alone).
#   --cache      for CI: build in ${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/fuzz/target
#                instead of fuzz/target, and when `cargo fuzz` is missing,
#                install cargo-fuzz (pinned version) under
#                ${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/fuzz/ rather than
#                in ~/.cargo/bin. Both survive a fresh checkout.
#   --list       print the target names.
# Crashes (and timeouts, out-of-memory) are left in fuzz/artifacts/<target>/;
# the exit status is 1 when any target found one, 2 on a usage or build error.
set -euo pipefail

CALLER_PWD=$PWD
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ="$ROOT/fuzz"
cd "$ROOT"

# The cargo-fuzz release scripts/fuzz.sh installs when it is missing.
CARGO_FUZZ_VERSION=0.13.2

seconds=60
jobs=1
cache=
WORK="$FUZZ/work"
mode=fuzz
targets=()
extra=()
while (($#)); do
    case "$1" in
    --seconds)
        seconds=${2:?--seconds needs a value}
        shift 2
        ;;
    --seconds=*)
        seconds=${1#*=}
        shift
        ;;
    --jobs)
        jobs=${2:?--jobs needs a value}
        shift 2
        ;;
    --work)
        WORK=${2:?--work needs a directory}
        shift 2
        ;;
    --work=*)
        WORK=${1#*=}
        shift
        ;;
    --cache)
        cache="${XDG_CACHE_HOME:-$HOME/.cache}/coxswain/fuzz"
        shift
        ;;
    --replay)
        mode=replay
        shift
        ;;
    --list)
        mode=list
        shift
        ;;
    -h | --help)
        awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
        exit 0
        ;;
    --)
        shift
        extra=("$@")
        break
        ;;
    -*)
        echo "fuzz.sh: unknown option $1" >&2
        exit 2
        ;;
    *)
        targets+=("$1")
        shift
        ;;
    esac
done
[[ $seconds =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds must be a whole number" >&2; exit 2; }
[[ $WORK == /* ]] || WORK="$CALLER_PWD/$WORK"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --jobs must be a positive number" >&2; exit 2; }

all_targets() {
    local f
    for f in "$FUZZ"/fuzz_targets/*.rs; do
        basename "$f" .rs
    done
}

if [[ $mode == list ]]; then
    all_targets
    exit 0
fi
if ((${#targets[@]} == 0)); then
    mapfile -t targets < <(all_targets)
fi
for t in "${targets[@]}"; do
    [[ -f $FUZZ/fuzz_targets/$t.rs ]] || { echo "fuzz.sh: no target $t (see --list)" >&2; exit 2; }
done

# ---- tools: cargo-fuzz and a C++ compiler (libfuzzer-sys builds libFuzzer;
# only under cargo-fuzz, plain `cargo test` does not need it)
if ! command -v c++ >/dev/null 2>&1; then
    if [[ $(id -u) -eq 0 ]]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++
    else
        echo "fuzz.sh: a C++ compiler (c++) is needed to build libFuzzer" >&2
        exit 2
    fi
fi
if [[ -n $cache ]]; then
    # A copy installed by an earlier --cache run, if there is no other.
    PATH="$PATH:$cache/cargo-fuzz-$CARGO_FUZZ_VERSION/bin"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    t0=$SECONDS
    if [[ -n $cache ]]; then
        echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION into $cache/cargo-fuzz-$CARGO_FUZZ_VERSION"
        cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked \
            --root "$cache/cargo-fuzz-$CARGO_FUZZ_VERSION"
    else
        echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION"
        cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
    fi
    echo "cargo-fuzz installed in $((SECONDS - t0))s"
fi

# ---- build: stable Rust, no sanitizer, one build for every target
host=$(rustc -vV | sed -n 's/^host: //p')
# cargo-fuzz leaves the target directory to cargo: fuzz/target, unless
# CARGO_TARGET_DIR says otherwise or --cache gives it one.
target_dir=${CARGO_TARGET_DIR:-$FUZZ/target}
[[ -n $cache ]] && target_dir="$cache/target"
[[ $target_dir == /* ]] || target_dir="$ROOT/$target_dir"
echo "== cargo fuzz build -s none ${targets[*]} (in $target_dir)"
build=(cargo fuzz build -s none --target "$host" --target-dir "$target_dir")
if ((${#targets[@]} == 1)); then
    build+=("${targets[0]}")
fi
t0=$SECONDS
"${build[@]}" || { echo "fuzz.sh: build failed" >&2; exit 2; }
echo "built in $((SECONDS - t0))s"
bin_dir="$target_dir/$host/release"

dict_for() {
    case "$1" in
    translate | provider_file_load) echo "-dict=$FUZZ/dicts/kubernetes-yaml.dict" ;;
    path_normalize) echo "-dict=$FUZZ/dicts/path.dict" ;;
    esac
}

mkdir -p "$WORK/tmp" "$WORK/logs"
# The provider_file_load target writes its scratch files under TMPDIR.
export TMPDIR="$WORK/tmp"

# run_one TARGET: fuzz or replay one target; writes $WORK/logs/TARGET.{log,summary}.
run_one() {
    local t=$1 bin="$bin_dir/$1" log="$WORK/logs/$1.log"
    local artifacts="$FUZZ/artifacts/$t/" dict
    mkdir -p "$artifacts"
    dict=$(dict_for "$t")
    local args=(-artifact_prefix="$artifacts" -print_final_stats=1 ${dict:+"$dict"})
    local dirs=()
    if [[ $mode == replay ]]; then
        args+=(-runs=0)
        dirs=("$FUZZ/corpus/$t")
        [[ -d $FUZZ/regressions/$t ]] && dirs+=("$FUZZ/regressions/$t")
    else
        mkdir -p "$WORK/corpus/$t"
        # First directory gets the new inputs; the seeds are only read.
        args+=(-max_total_time="$seconds" -timeout=20)
        dirs=("$WORK/corpus/$t" "$FUZZ/corpus/$t")
    fi
    local status=0 cpu t0=$SECONDS
    # CPU seconds of the fuzzer process, from bash's `time` (user + sys).
    local TIMEFORMAT='%U %S'
    { time "$bin" "${args[@]}" "${extra[@]}" "${dirs[@]}" >"$log" 2>&1 || status=$?; } 2>"$log.time"
    cpu=$(awk '{printf "%.1f", $1 + $2}' "$log.time")
    local execs
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    local result=ok
    if ((status != 0)); then
        result="FAILED (exit $status, see $log and $artifacts)"
    fi
    printf '%-20s %8s %12s %6ss  %s\n' "$t" "$cpu" "${execs:-?}" "$((SECONDS - t0))" "$result" \
        >"$WORK/logs/$t.summary"
    return "$status"
}

echo "== $mode: ${targets[*]}$([[ $mode == fuzz ]] && echo " (${seconds}s each, $jobs at a time)")"
failed=0
pids=()
names=()
for t in "${targets[@]}"; do
    rm -f "$WORK/logs/$t.summary"
    run_one "$t" &
    pids+=($!)
    names+=("$t")
    if ((${#pids[@]} >= jobs)); then
        wait "${pids[0]}" || failed=1
        cat "$WORK/logs/${names[0]}.summary"
        pids=("${pids[@]:1}")
        names=("${names[@]:1}")
    fi
done
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed=1
    cat "$WORK/logs/${names[$i]}.summary"
done

# provider_file_load's scratch directories (libFuzzer exits without
# running destructors, so they are removed here).
rm -rf "$WORK"/tmp/coxswain-fuzz-provider-file-*

echo
printf '%-20s %8s %12s %7s  %s\n' target cpu_s execs wall result
for t in "${targets[@]}"; do
    cat "$WORK/logs/$t.summary"
done
if ((failed)); then
    echo
    echo "fuzz.sh: a target failed; crash inputs are in fuzz/artifacts/<target>/." >&2
    echo "Reproduce one with: ${bin_dir#"$ROOT"/}/<target> fuzz/artifacts/<target>/<file>" >&2
    exit 1
fi
