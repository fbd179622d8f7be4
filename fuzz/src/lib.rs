//! The checks behind Coxswain's fuzz targets, one module per target. Each
//! `check(&[u8])` panics when a property fails; the libFuzzer binaries in
//! `fuzz_targets/` call it, and `tests/replay.rs` calls it on every file of
//! `corpus/<target>/` and `regressions/<target>/` under plain `cargo test`.
//! See docs/fuzzing.md.

pub mod client_hello;
pub mod header_edits;
pub mod path_normalize;
pub mod provider_file_load;
pub mod proxy_protocol;
pub mod router_lookup;
pub mod translate;

/// A target's check: panics when a property fails.
pub type Check = fn(&[u8]);

/// Every target: its name (the binary and corpus directory) and its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("client_hello", client_hello::check),
    ("header_edits", header_edits::check),
    ("path_normalize", path_normalize::check),
    ("provider_file_load", provider_file_load::check),
    ("proxy_protocol", proxy_protocol::check),
    ("router_lookup", router_lookup::check),
    ("translate", translate::check),
];

/// `main` of a target binary built without cargo-fuzz (no libFuzzer): runs
/// `check` on each file named on the command line, naming each first, so a
/// failing input reproduces with `cargo run --manifest-path fuzz/Cargo.toml
/// --bin <target> -- <file>...`.
pub fn run_files(check: Check) {
    let files: Vec<_> = std::env::args_os().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: <target> FILE...  (built without cargo-fuzz: replays files)");
        std::process::exit(2);
    }
    for file in files {
        let data = std::fs::read(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.to_string_lossy()));
        eprintln!("{}", file.to_string_lossy());
        check(&data);
    }
}
