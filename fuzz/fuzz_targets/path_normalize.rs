#![cfg_attr(fuzzing, no_main)]
//! See `coxswain_fuzz::path_normalize` (fuzz/src/path_normalize.rs) for what this target checks.

#[cfg(fuzzing)]
libfuzzer_sys::fuzz_target!(|data: &[u8]| coxswain_fuzz::path_normalize::check(data));

/// Built without cargo-fuzz: runs the check on each file named on the
/// command line.
#[cfg(not(fuzzing))]
fn main() {
    coxswain_fuzz::run_files(coxswain_fuzz::path_normalize::check);
}
