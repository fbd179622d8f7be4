//! `coxswain crds`: print Coxswain's CustomResourceDefinitions, generated
//! from the Rust types in crates/crds. The checked-in copy is refreshed with
//!   cargo run -p coxswain -- crds > deploy/crds/coxswain.yaml
//! and a test fails when it drifts.

use std::io::Write;
use std::process::ExitCode;

pub fn print() -> ExitCode {
    let yaml = match coxswain_crds::all_yaml() {
        Ok(yaml) => yaml,
        Err(e) => {
            eprintln!("error: cannot render the CRDs: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(yaml.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write the CRDs: {e}");
            ExitCode::FAILURE
        }
    }
}
