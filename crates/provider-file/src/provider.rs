//! The per-file cache: each file's last good objects, so a bad edit never
//! takes down what was serving, and a change re-reads only the files touched.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_api::{Object, ObjectKey, Snapshot};

use crate::LoadError;
use crate::files::list_config_files;
use crate::kinds::object_meta_mut;
use crate::parse::{Parsed, parse_file};

/// Everything loaded from the directory at one moment.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    pub snapshot: Snapshot,
    /// Objects in the snapshot, in file order then document order.
    pub objects: Vec<Object>,
    /// Problems in the current files (a failing file's previous version,
    /// if any, is still in the snapshot).
    pub errors: Vec<LoadError>,
}

#[derive(Default)]
struct FileState {
    /// The last version of the file that parsed cleanly.
    good: Vec<Parsed>,
    /// Why the current version does not parse (empty when it does).
    errors: Vec<LoadError>,
}

/// Loads a config directory and keeps it loaded across changes.
pub struct FileProvider {
    root: PathBuf,
    files: BTreeMap<PathBuf, FileState>,
    /// Problems with the directory itself (unreadable, ...).
    root_errors: Vec<LoadError>,
    /// Order in which each object was first seen: its default
    /// creationTimestamp, so "oldest wins" ties follow first appearance.
    first_seen: HashMap<(&'static str, ObjectKey), i64>,
}

impl FileProvider {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileProvider {
            root: root.into(),
            files: BTreeMap::new(),
            root_errors: Vec::new(),
            first_seen: HashMap::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Rescans the whole directory: reads every config file, forgets files
    /// that disappeared.
    pub fn reload_all(&mut self) {
        self.root_errors.clear();
        match list_config_files(&self.root) {
            Ok(paths) => {
                self.files.retain(|p, _| paths.binary_search(p).is_ok());
                for path in paths {
                    self.reload_file(&path);
                }
            }
            Err(e) => self.root_errors.push(LoadError::new(
                &self.root,
                0,
                0,
                format!("cannot read directory: {e}"),
            )),
        }
    }

    /// Re-reads one file, or forgets it if it no longer exists.
    pub fn reload_file(&mut self, path: &Path) {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.files.remove(path);
                return;
            }
            Err(e) => {
                let state = self.files.entry(path.to_path_buf()).or_default();
                state.errors = vec![LoadError::new(path, 0, 0, format!("cannot read file: {e}"))];
                return;
            }
        };
        let state_result = parse_file(path, &text);
        let state = self.files.entry(path.to_path_buf()).or_default();
        match state_result {
            Ok(mut parsed) => {
                for p in &mut parsed {
                    stamp(&mut self.first_seen, &mut p.object);
                }
                state.good = parsed;
                state.errors.clear();
            }
            Err(errors) => state.errors = errors,
        }
    }

    /// Forgets a file (it was removed).
    pub fn remove_file(&mut self, path: &Path) {
        self.files.remove(path);
    }

    /// Builds the snapshot from every file's last good objects. Cheap: the
    /// objects are shared, only the maps are rebuilt.
    pub fn loaded(&self) -> Loaded {
        let mut out = Loaded {
            errors: self.root_errors.clone(),
            ..Loaded::default()
        };
        let mut owners: HashMap<(&'static str, ObjectKey), &Path> = HashMap::new();
        for (path, state) in &self.files {
            out.errors.extend(state.errors.iter().cloned());
            for parsed in &state.good {
                let kind = parsed.object.kind();
                let key = parsed.object.key();
                if let Some(first) = owners.get(&(kind, key.clone())) {
                    out.errors.push(LoadError::new(
                        path,
                        parsed.line,
                        1,
                        format!("{kind} {key} is also defined in {}", first.display()),
                    ));
                    continue;
                }
                owners.insert((kind, key), path);
                out.snapshot.insert(parsed.object.clone());
                out.objects.push(parsed.object.clone());
            }
        }
        out
    }
}

/// Defaults creationTimestamp (epoch + first-seen order, in seconds) and
/// generation (1), as an API server would have set them.
fn stamp(first_seen: &mut HashMap<(&'static str, ObjectKey), i64>, object: &mut Object) {
    let next = i64::try_from(first_seen.len()).unwrap_or(i64::MAX);
    let order = *first_seen
        .entry((object.kind(), object.key()))
        .or_insert(next);
    let Some(meta) = object_meta_mut(object) else {
        return;
    };
    if meta.creation_timestamp.is_none() {
        let at = Timestamp::from_second(order).unwrap_or(Timestamp::UNIX_EPOCH);
        meta.creation_timestamp = Some(Time(at));
    }
    if meta.generation.is_none() {
        meta.generation = Some(1);
    }
}

/// Loads `dir` once.
pub fn load_dir(dir: impl AsRef<Path>) -> Loaded {
    let mut provider = FileProvider::new(dir.as_ref());
    provider.reload_all();
    provider.loaded()
}
