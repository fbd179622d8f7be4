//! The per-file cache: each file's last good objects, so a bad edit never
//! takes down what was serving, and a change re-reads only the files touched.
//! The snapshot is kept up to date incrementally: a changed file removes its
//! old objects and inserts its new ones, nothing else is touched.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_api::{Kind, Object, ObjectKey, Snapshot};

use crate::LoadError;
use crate::files::list_config_files;
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

type Id = (Kind, ObjectKey);

/// What the provider keeps for an object some file defines. One entry per
/// object (thousands of routes): its order and its owner share a key.
#[derive(Debug)]
struct Known {
    /// Order in which the object was first seen: its default
    /// creationTimestamp, so "oldest wins" ties follow first appearance.
    order: i64,
    /// The file whose object is in the snapshot. `None` only between
    /// stamping a file's objects and claiming them.
    owner: Option<Arc<Path>>,
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
    snapshot: Snapshot,
    /// Every object some file defines. Forgotten when no file defines it
    /// any more (as an API server forgets a deleted one), so churn under
    /// new names cannot grow it.
    known: HashMap<Id, Known>,
    /// Other files defining an already-owned object (reported as errors;
    /// the first takes over if the owner lets go).
    shadowed: BTreeMap<Id, BTreeSet<PathBuf>>,
    /// The order the next new object gets.
    next_order: i64,
}

impl FileProvider {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileProvider {
            root: root.into(),
            files: BTreeMap::new(),
            root_errors: Vec::new(),
            snapshot: Snapshot::default(),
            known: HashMap::new(),
            shadowed: BTreeMap::new(),
            next_order: 0,
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
                let gone: Vec<PathBuf> = self
                    .files
                    .keys()
                    .filter(|p| paths.binary_search(p).is_err())
                    .cloned()
                    .collect();
                for path in gone {
                    self.remove_file(&path);
                }
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
                self.remove_file(path);
                return;
            }
            Err(e) => {
                let state = self.files.entry(path.to_path_buf()).or_default();
                state.errors = vec![LoadError::new(path, 0, 0, format!("cannot read file: {e}"))];
                return;
            }
        };
        match parse_file(path, &text) {
            Ok(mut parsed) => {
                for p in &mut parsed {
                    stamp((&mut self.known, &mut self.next_order), &mut p.object);
                }
                self.replace_objects(path, parsed);
                if let Some(state) = self.files.get_mut(path) {
                    state.errors.clear();
                }
            }
            Err(errors) => self.files.entry(path.to_path_buf()).or_default().errors = errors,
        }
    }

    /// Forgets a file (it was removed).
    pub fn remove_file(&mut self, path: &Path) {
        self.replace_objects(path, Vec::new());
        self.files.remove(path);
    }

    /// Swaps a file's objects in the snapshot for `new`.
    fn replace_objects(&mut self, path: &Path, mut new: Vec<Parsed>) {
        let state = self.files.entry(path.to_path_buf()).or_default();
        // An object the edit left as it was keeps its identity (`Arc`), so
        // the translator and proxy can tell it did not change.
        let previous: HashMap<Id, &Object> = state
            .good
            .iter()
            .map(|p| ((p.object.kind(), p.object.key()), &p.object))
            .collect();
        for parsed in &mut new {
            let id = (parsed.object.kind(), parsed.object.key());
            if let Some(old) = previous.get(&id)
                && old.same_content(&parsed.object)
            {
                parsed.object = (*old).clone();
            }
        }
        let incoming: Vec<Object> = new.iter().map(|p| p.object.clone()).collect();
        let old = std::mem::replace(&mut state.good, new);
        let mut released = Vec::new();
        for parsed in old {
            let id = (parsed.object.kind(), parsed.object.key());
            let known = self.known.get_mut(&id);
            if let Some(known) = known.filter(|k| k.owner.as_deref() == Some(path)) {
                known.owner = None;
                self.snapshot.remove(id.0, &id.1);
                released.push(id);
            } else if let Some(others) = self.shadowed.get_mut(&id) {
                others.remove(path);
            }
        }
        let owner: Arc<Path> = Arc::from(path);
        for object in incoming {
            self.claim(&owner, object);
        }
        // A released object another file also defines: that file takes over.
        for id in released {
            if self.owner(&id).is_some() {
                continue;
            }
            let Some(next) = self.shadowed.get_mut(&id).and_then(|s| s.pop_first()) else {
                // No file defines it any more.
                self.known.remove(&id);
                continue;
            };
            let object = self.files.get(&next).and_then(|state| {
                state
                    .good
                    .iter()
                    .find(|p| p.object.kind() == id.0 && p.object.key() == id.1)
            });
            if let Some(parsed) = object {
                let object = parsed.object.clone();
                self.claim(&Arc::from(next), object);
            }
        }
        self.shadowed.retain(|_, others| !others.is_empty());
    }

    /// The file whose object is in the snapshot.
    fn owner(&self, id: &Id) -> Option<&Path> {
        self.known.get(id)?.owner.as_deref()
    }

    fn claim(&mut self, path: &Arc<Path>, object: Object) {
        let id = (object.kind(), object.key());
        match self.owner(&id) {
            Some(owner) if owner != &**path => {
                self.shadowed
                    .entry(id)
                    .or_default()
                    .insert(path.to_path_buf());
            }
            _ => {
                // Stamping made the entry; a missing one is made here, so an
                // owned object is always known.
                let next = &mut self.next_order;
                let known = self.known.entry(id).or_insert_with(|| {
                    let order = *next;
                    *next = next.saturating_add(1);
                    Known { order, owner: None }
                });
                known.owner = Some(path.clone());
                self.snapshot.insert(object);
            }
        }
    }

    /// The current snapshot, errors and object list. Cheap: objects are
    /// shared, only the maps are copied.
    pub fn loaded(&self) -> Loaded {
        Loaded {
            objects: self.objects(),
            ..self.loaded_snapshot()
        }
    }

    /// Like [`Self::loaded`] but with `objects` left empty: what a reload
    /// needs, without a walk over every object.
    pub fn loaded_snapshot(&self) -> Loaded {
        let mut errors = self.root_errors.clone();
        for state in self.files.values() {
            errors.extend(state.errors.iter().cloned());
        }
        for (id, others) in &self.shadowed {
            let owner = self
                .owner(id)
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            for path in others {
                let line = self.files.get(path).and_then(|state| {
                    let parsed = state
                        .good
                        .iter()
                        .find(|p| p.object.kind() == id.0 && p.object.key() == id.1)?;
                    Some(parsed.line)
                });
                errors.push(LoadError::new(
                    path,
                    line.unwrap_or(1),
                    1,
                    format!("{} {} is also defined in {owner}", id.0, id.1),
                ));
            }
        }
        Loaded {
            snapshot: self.snapshot.clone(),
            objects: Vec::new(),
            errors,
        }
    }

    /// Objects in the snapshot, in file order then document order.
    fn objects(&self) -> Vec<Object> {
        self.files
            .iter()
            .flat_map(|(path, state)| {
                state.good.iter().filter(move |p| {
                    self.owner(&(p.object.kind(), p.object.key())) == Some(path.as_path())
                })
            })
            .map(|p| p.object.clone())
            .collect()
    }
}

/// Defaults creationTimestamp (epoch + first-seen order, in seconds) and
/// generation (1), as an API server would have set them.
fn stamp((known, next): (&mut HashMap<Id, Known>, &mut i64), object: &mut Object) {
    let order = known
        .entry((object.kind(), object.key()))
        .or_insert_with(|| {
            let order = *next;
            *next = next.saturating_add(1);
            Known { order, owner: None }
        })
        .order;
    let Some(meta) = object.meta_mut() else {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn route(name: &str) -> String {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: {name}\n  namespace: default\nspec: {{}}\n"
        )
    }

    fn created(provider: &FileProvider, name: &str) -> Option<i64> {
        let key = ObjectKey::new("default", name);
        let snapshot = provider.loaded_snapshot().snapshot;
        let time = snapshot
            .http_routes
            .get(&key)?
            .metadata
            .creation_timestamp
            .clone()?;
        Some(time.0.as_second())
    }

    /// Route churn under new names must not grow the provider: a name no
    /// file defines any more is forgotten, and coming back it is new.
    #[test]
    fn a_deleted_objects_first_seen_order_is_forgotten() {
        let dir = std::env::temp_dir().join(format!("coxswain-first-seen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut provider = FileProvider::new(&dir);
        for i in 0..50 {
            let path = dir.join(format!("r{i}.yaml"));
            std::fs::write(&path, route(&format!("r{i}"))).unwrap();
            provider.reload_file(&path);
            std::fs::remove_file(&path).unwrap();
            provider.reload_file(&path);
        }
        assert!(provider.known.is_empty(), "{:?}", provider.known);

        let (a, b) = (dir.join("a.yaml"), dir.join("b.yaml"));
        std::fs::write(&a, route("a")).unwrap();
        provider.reload_file(&a);
        std::fs::write(&b, route("b")).unwrap();
        provider.reload_file(&b);
        assert!(created(&provider, "a") < created(&provider, "b"));
        std::fs::remove_file(&a).unwrap();
        provider.reload_file(&a);
        std::fs::write(&a, route("a")).unwrap();
        provider.reload_file(&a);
        assert!(created(&provider, "a") > created(&provider, "b"));
        assert_eq!(provider.known.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
