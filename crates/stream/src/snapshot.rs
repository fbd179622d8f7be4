//! The last acknowledged config on disk, so a proxy restarted while the
//! controller is unreachable serves it instead of nothing. Written
//! atomically (temporary file, fsync, rename) and verified on load: every
//! resource against its digest, the set against its version.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use coxswain_ir::Config;
use serde::{Deserialize, Serialize};

use crate::item::Item;
use crate::resources::{ResourceError, Resources};

const FILE: &str = "last-good.json";

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a config snapshot: {error}")]
    Parse { path: PathBuf, error: String },
    #[error("{path} fails verification: {error}")]
    Verify { path: PathBuf, error: String },
}

#[derive(Serialize, Deserialize)]
struct Stored {
    version: String,
    ir_version: u32,
    resources: Vec<StoredResource>,
}

#[derive(Serialize, Deserialize)]
struct StoredResource {
    name: String,
    digest: String,
    /// The resource's JSON, as text.
    body: String,
}

pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Replaces the snapshot in `dir` with `resources`.
pub fn save(dir: &Path, resources: &Resources) -> std::io::Result<()> {
    let stored = Stored {
        version: resources.version(),
        ir_version: coxswain_ir::IR_VERSION,
        resources: resources
            .items()
            .iter()
            .map(|(name, item)| StoredResource {
                name: name.to_string(),
                digest: item.digest().to_string(),
                body: String::from_utf8_lossy(item.body()).into_owned(),
            })
            .collect(),
    };
    let text = serde_json::to_vec(&stored).map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!("{FILE}.tmp"));
    // It holds the Gateway's private keys: this user only.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(&text)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path(dir))?;
    // The rename itself survives a crash once the directory is synced.
    std::fs::File::open(dir)?.sync_all()
}

/// The snapshot in `dir`, verified; `None` when there is none.
pub fn load(dir: &Path) -> Result<Option<(Resources, Config)>, SnapshotError> {
    let path = path(dir);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(SnapshotError::Read { path, source }),
    };
    let stored: Stored = serde_json::from_slice(&text).map_err(|e| SnapshotError::Parse {
        path: path.clone(),
        error: e.to_string(),
    })?;
    let verify = |error: String| SnapshotError::Verify {
        path: path.clone(),
        error,
    };
    if stored.ir_version != coxswain_ir::IR_VERSION {
        return Err(verify(
            ResourceError::IrVersion {
                got: stored.ir_version,
                want: coxswain_ir::IR_VERSION,
            }
            .to_string(),
        ));
    }
    let mut resources = Resources::default();
    for resource in stored.resources {
        let body = Bytes::from(resource.body.into_bytes());
        let item = Item::verified(&resource.name, &resource.digest, body)
            .map_err(|e| verify(e.to_string()))?;
        resources.insert(resource.name.into(), item);
    }
    if resources.version() != stored.version {
        return Err(verify(format!(
            "the resources are version {}, the file says {}",
            resources.version(),
            stored.version
        )));
    }
    let config = resources.to_config().map_err(|e| verify(e.to_string()))?;
    Ok(Some((resources, config)))
}
