//! `provider_file_load`: arbitrary bytes as one config file in a scratch
//! directory, loaded with `coxswain_provider_file::load_dir`. Always as
//! `input.yaml`; also as `input.json` when the text starts like JSON.
//!
//! Properties:
//! - never panics;
//! - every error names the file and has a non-empty message;
//! - text that is UTF-8: every error has a 1-based line and column, and the
//!   line lies inside the file (at most one past its last line);
//! - text that is not UTF-8: exactly one error, "cannot read file" (the
//!   provider reports it at 0:0, "unknown position", by design);
//! - a file with any error contributes no objects (a bad file never half
//!   loads);
//! - every loaded object has a name, a namespace unless cluster-scoped, and
//!   is in the snapshot;
//! - loading the same file again gives the same errors and objects.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use coxswain_api::{Kind, Object};
use coxswain_provider_file::{Loaded, load_dir};

/// A scratch directory that is removed when dropped. The libFuzzer binary
/// keeps one for the whole process (libFuzzer exits without running
/// destructors, so scripts/fuzz.sh points `TMPDIR` into `fuzz/work/` and
/// removes it there); the replay test makes its own and drops it.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh directory `coxswain-fuzz-provider-file-<pid>-<tag>` under
    /// the system temporary directory.
    pub fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "coxswain-fuzz-provider-file-{}-{tag}",
            std::process::id()
        ));
        for sub in ["yaml", "json"] {
            std::fs::create_dir_all(dir.join(sub))
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        }
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn object_json(o: &Object) -> String {
    o.to_json().map(|v| v.to_string()).unwrap_or_default()
}

fn check_loaded(loaded: &Loaded, file: &Path, data: &[u8]) {
    let text = std::str::from_utf8(data).ok();
    let ctx = |what: &str| {
        format!(
            "{what}\nfile {}\ninput {:?}",
            file.display(),
            String::from_utf8_lossy(data)
        )
    };
    for e in &loaded.errors {
        assert_eq!(
            e.path,
            file,
            "{}",
            ctx(&format!("error names another file: {e}"))
        );
        assert!(!e.message.is_empty(), "{}", ctx("empty error message"));
        match text {
            Some(text) => {
                // YAML also breaks lines at a lone `\r` (and NEL, LS, PS): allow
                // either count.
                let lines = text.lines().count().max(yaml_lines(text));
                assert!(
                    e.line >= 1 && e.column >= 1,
                    "{}",
                    ctx(&format!("error without a position: {e}"))
                );
                assert!(
                    e.line <= lines + 1,
                    "{}",
                    ctx(&format!(
                        "error past the end of the file ({lines} lines): {e}"
                    ))
                );
            }
            None => assert!(
                e.message.starts_with("cannot read file"),
                "{}",
                ctx(&format!("unexpected error for non-UTF-8 input: {e}"))
            ),
        }
    }
    if text.is_none() {
        assert_eq!(loaded.errors.len(), 1, "{}", ctx("non-UTF-8: one error"));
    }
    if !loaded.errors.is_empty() {
        assert!(
            loaded.objects.is_empty(),
            "{}",
            ctx("a file with errors still loaded objects")
        );
    }
    let in_snapshot: usize = Kind::ALL.iter().map(|&k| loaded.snapshot.count(k)).sum();
    let mut distinct: Vec<_> = loaded.objects.iter().map(|o| (o.kind(), o.key())).collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        in_snapshot,
        distinct.len(),
        "{}",
        ctx("snapshot and object list disagree")
    );
    for o in &loaded.objects {
        let meta = o.meta();
        assert!(
            meta.name.as_deref().is_some_and(|n| !n.is_empty()),
            "{}",
            ctx("object without a name")
        );
        assert_eq!(
            meta.namespace.is_none(),
            o.kind().cluster_scoped(),
            "{}",
            ctx(&format!("namespace of {} {}", o.kind(), o.key()))
        );
    }
}

fn load_twice(dir: &Path, file: &Path, data: &[u8]) {
    std::fs::write(file, data).unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    let first = load_dir(dir);
    check_loaded(&first, file, data);
    let second = load_dir(dir);
    assert_eq!(
        first.errors, second.errors,
        "errors differ between two loads"
    );
    let a: Vec<String> = first.objects.iter().map(object_json).collect();
    let b: Vec<String> = second.objects.iter().map(object_json).collect();
    assert_eq!(a, b, "objects differ between two loads");
}

/// Lines as YAML counts them: `\r\n`, `\r`, `\n`, NEL, LS and PS each
/// end one.
fn yaml_lines(text: &str) -> usize {
    text.replace("\r\n", "\n")
        .replace(['\r', '\u{85}', '\u{2028}', '\u{2029}'], "\n")
        .lines()
        .count()
}

fn looks_like_json(data: &[u8]) -> bool {
    data.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{' || b == b'[')
}

/// The fuzz entry point: [`check_in`] a scratch directory kept for the
/// whole process.
pub fn check(data: &[u8]) {
    static DIR: OnceLock<Scratch> = OnceLock::new();
    check_in(DIR.get_or_init(|| Scratch::new("fuzz")).path(), data);
}

/// The checks, with `input.yaml` / `input.json` written under `dir` (made
/// by [`Scratch::new`]).
pub fn check_in(dir: &Path, data: &[u8]) {
    let yaml_dir = dir.join("yaml");
    load_twice(&yaml_dir, &yaml_dir.join("input.yaml"), data);
    if looks_like_json(data) {
        let json_dir = dir.join("json");
        load_twice(&json_dir, &json_dir.join("input.json"), data);
    }
}
