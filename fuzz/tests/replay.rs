//! Replays every seed corpus and every saved regression input through the
//! same checks the fuzz targets run, without libFuzzer: deterministic, on
//! stable Rust, part of `cargo test --manifest-path fuzz/Cargo.toml`.
//!
//! Inputs live in `fuzz/corpus/<target>/` (seeds) and
//! `fuzz/regressions/<target>/` (minimised inputs of bugs found by fuzzing
//! and fixed). Each file is one input; a failing file is named in the panic
//! message.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    files
}

/// Runs `check` on one input; the panic message if it fails.
fn run(check: &dyn Fn(&[u8]), file: &Path) -> Result<(), String> {
    let data = std::fs::read(file).unwrap();
    catch_unwind(AssertUnwindSafe(|| check(&data))).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn check_of(target: &str) -> coxswain_fuzz::Check {
    coxswain_fuzz::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, check)| *check)
        .unwrap_or_else(|| panic!("no target {target}"))
}

fn replay(target: &str) {
    replay_with(target, &check_of(target));
}

fn replay_with(target: &str, check: &dyn Fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = inputs(&root.join("corpus").join(target));
    assert!(!seeds.is_empty(), "{target}: empty seed corpus");
    let regressions = inputs(&root.join("regressions").join(target));
    let failures: Vec<String> = seeds
        .iter()
        .chain(&regressions)
        .filter_map(|file| {
            run(check, file)
                .err()
                .map(|why| format!("{}: {why}", file.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{target}: {} of {} inputs failed:\n{}",
        failures.len(),
        seeds.len() + regressions.len(),
        failures.join("\n")
    );
}

#[test]
fn client_hello() {
    replay("client_hello");
}

#[test]
fn header_edits() {
    replay("header_edits");
}

#[test]
fn proxy_protocol() {
    replay("proxy_protocol");
}

#[test]
fn path_normalize() {
    replay("path_normalize");
}

/// In its own scratch directory, removed afterwards (also when it fails).
#[test]
fn provider_file_load() {
    use coxswain_fuzz::provider_file_load::{Scratch, check_in};
    let scratch = Scratch::new("replay");
    replay_with("provider_file_load", &|data| check_in(scratch.path(), data));
}

#[test]
fn router_lookup() {
    replay("router_lookup");
}

#[test]
fn translate() {
    replay("translate");
}

/// Every target has a test above, a binary and a seed corpus, and every
/// directory of inputs belongs to a target (so none is silently skipped).
#[test]
fn every_target_is_replayed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["corpus", "regressions"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let name = entry.unwrap().file_name();
            let name = name.to_string_lossy();
            assert!(
                coxswain_fuzz::TARGETS.iter().any(|(t, _)| *t == name),
                "fuzz/{dir}/{name}: no such target"
            );
        }
    }
    let this = std::fs::read_to_string(root.join("tests/replay.rs")).unwrap();
    for (name, _) in coxswain_fuzz::TARGETS {
        assert!(
            this.contains(&format!("fn {name}()")),
            "{name}: no replay test"
        );
        assert!(
            root.join("fuzz_targets")
                .join(format!("{name}.rs"))
                .is_file(),
            "{name}: no fuzz_targets/{name}.rs"
        );
    }
}
