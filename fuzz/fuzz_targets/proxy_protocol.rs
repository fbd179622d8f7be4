#![cfg_attr(fuzzing, no_main)]
//! See `coxswain_fuzz::proxy_protocol` (fuzz/src/proxy_protocol.rs) for what this target checks.

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| coxswain_fuzz::proxy_protocol::check(data));

/// Built without cargo-fuzz: runs the check on each file named on the
/// command line.
#[cfg(not(fuzzing))]
fn main() {
    coxswain_fuzz::run_files(coxswain_fuzz::proxy_protocol::check);
}
