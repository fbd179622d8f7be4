//! Helper programs the end-to-end tests build once and cache outside the
//! repository (the build scripts under tools/ print where).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs `tools/<script>` and returns what it printed on stdout: the
/// paths of the programs it built or found cached. Panics with the
/// script's output when it fails.
pub fn build_tool(script: &str) -> Vec<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tools")
        .join(script);
    let out = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} failed ({}): {}{stdout}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let paths: Vec<PathBuf> = stdout.lines().map(PathBuf::from).collect();
    for path in &paths {
        assert!(path.is_file(), "{} was not built", path.display());
    }
    paths
}
