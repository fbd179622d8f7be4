//! The input of `coxswain migrate`: a directory of manifests (read as
//! `run` and `check` read one) or a list of files, through the standalone
//! provider's parser; then the Ingresses to migrate, oldest first.

use std::path::PathBuf;
use std::sync::Arc;

use coxswain_api::{Ingress, IngressClass, ObjectKey, Snapshot};
use coxswain_provider_file::{FileProvider, LoadError, load_dir};

/// The deprecated class annotation that predates `spec.ingressClassName`.
const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";

/// Loads one directory, or every file given; fails with every load error.
pub fn load(inputs: &[PathBuf]) -> Result<Snapshot, Vec<LoadError>> {
    let loaded = match inputs {
        [dir] if dir.is_dir() => load_dir(dir),
        files => {
            let mut provider = FileProvider::new(".");
            for file in files {
                if file.is_dir() {
                    return Err(vec![LoadError::new(
                        file,
                        0,
                        0,
                        "give one directory, or files only".to_string(),
                    )]);
                }
                if !file.exists() {
                    return Err(vec![LoadError::new(file, 0, 0, "no such file".to_string())]);
                }
                provider.reload_file(file);
            }
            provider.loaded_snapshot()
        }
    };
    if loaded.errors.is_empty() {
        Ok(loaded.snapshot)
    } else {
        Err(loaded.errors)
    }
}

/// The class an Ingress asks for: `spec.ingressClassName`, else the
/// deprecated annotation, else the IngressClass marked default.
pub fn class_of(snapshot: &Snapshot, ingress: &Ingress) -> Option<String> {
    let named = ingress
        .spec
        .as_ref()
        .and_then(|s| s.ingress_class_name.clone())
        .or_else(|| {
            ingress
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CLASS_ANNOTATION).cloned())
        });
    named.or_else(|| {
        snapshot
            .ingress_classes
            .iter()
            .find(|(_, class)| is_default(class))
            .map(|(key, _)| key.name.to_string())
    })
}

fn is_default(class: &IngressClass) -> bool {
    class
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// The Ingresses of `class` (every one when `None`), oldest first
/// (creationTimestamp, then namespace/name) as the Ingress translator
/// orders them, since that order decides ties.
pub fn selected<'a>(
    snapshot: &'a Snapshot,
    class: Option<&str>,
) -> Vec<(&'a ObjectKey, &'a Arc<Ingress>)> {
    let mut found: Vec<(&ObjectKey, &Arc<Ingress>)> = snapshot
        .ingresses
        .iter()
        .filter(|(_, ingress)| {
            class.is_none_or(|wanted| class_of(snapshot, ingress).as_deref() == Some(wanted))
        })
        .collect();
    found.sort_by(|a, b| {
        (a.1.metadata.creation_timestamp.as_ref(), a.0)
            .cmp(&(b.1.metadata.creation_timestamp.as_ref(), b.0))
    });
    found
}
