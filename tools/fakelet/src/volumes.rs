//! Volume contents (pure): which files a Secret or ConfigMap volume holds,
//! and which host directories a container mounts where.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, KeyToPath, Volume};

use crate::env::{Missing, Objects};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeFile {
    /// Relative to the volume's root; checked to stay inside it.
    pub path: PathBuf,
    pub data: Vec<u8>,
    pub mode: u32,
}

/// The files of one volume; `Ok(None)` for volume types that start empty
/// (emptyDir and anything not materialised here).
pub fn files_for(volume: &Volume, objects: &Objects) -> Result<Option<Vec<VolumeFile>>, Missing> {
    let (kind, name, items, optional, mode) = if let Some(secret) = &volume.secret {
        let name = secret.secret_name.clone().unwrap_or_default();
        (
            "Secret",
            name,
            &secret.items,
            secret.optional,
            secret.default_mode,
        )
    } else if let Some(cm) = &volume.config_map {
        (
            "ConfigMap",
            cm.name.clone(),
            &cm.items,
            cm.optional,
            cm.default_mode,
        )
    } else {
        return Ok(None);
    };
    let optional = optional.unwrap_or(false);
    let default_mode = mode.map_or(0o644, |m| m as u32 & 0o777);
    let Some(data) = objects.data(kind, &name, optional)? else {
        return Ok(Some(Vec::new()));
    };
    project(kind, &name, data, items.as_deref(), optional, default_mode).map(Some)
}

/// Without `items` every key becomes a file of the same name; with `items`
/// only the listed keys, each at its `path`.
pub fn project(
    kind: &'static str,
    name: &str,
    data: &BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
    optional: bool,
    default_mode: u32,
) -> Result<Vec<VolumeFile>, Missing> {
    let Some(items) = items.filter(|items| !items.is_empty()) else {
        return Ok(data
            .iter()
            .filter_map(|(key, value)| {
                Some(VolumeFile {
                    path: safe_relative(key)?,
                    data: value.clone(),
                    mode: default_mode,
                })
            })
            .collect());
    };
    let mut files = Vec::new();
    for item in items {
        let Some(value) = data.get(&item.key) else {
            if optional {
                continue;
            }
            return Err(Missing::Key {
                kind,
                name: name.to_string(),
                key: item.key.clone(),
            });
        };
        // An unsafe path is skipped rather than written outside the volume.
        let Some(path) = safe_relative(&item.path) else {
            continue;
        };
        files.push(VolumeFile {
            path,
            data: value.clone(),
            mode: item.mode.map_or(default_mode, |m| m as u32 & 0o777),
        });
    }
    Ok(files)
}

/// A relative path without `..`, or `None`.
pub fn safe_relative(text: &str) -> Option<PathBuf> {
    let path = Path::new(text);
    let ok = !text.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    ok.then(|| path.to_path_buf())
}

/// One bind mount for a container: host `source` appears at `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    pub source: PathBuf,
    pub target: PathBuf,
}

/// The container's mounts, given each volume's host directory under
/// `volumes_root/<volume name>`. Mounts of unknown volumes are skipped.
pub fn binds_for(container: &Container, volumes: &[Volume], volumes_root: &Path) -> Vec<Bind> {
    container
        .volume_mounts
        .iter()
        .flatten()
        .filter(|mount| volumes.iter().any(|v| v.name == mount.name))
        .filter(|mount| Path::new(&mount.mount_path).is_absolute())
        .filter_map(|mount| {
            let mut source = volumes_root.join(&mount.name);
            if let Some(sub) = mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
                source = source.join(safe_relative(sub)?);
            }
            Some(Bind {
                source,
                target: PathBuf::from(&mount.mount_path),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ConfigMapVolumeSource, EmptyDirVolumeSource, SecretVolumeSource, VolumeMount,
    };

    fn objects() -> Objects {
        let mut objects = Objects::default();
        objects.secrets.insert(
            "tls".into(),
            BTreeMap::from([
                ("tls.crt".to_string(), b"CERT".to_vec()),
                ("tls.key".to_string(), b"KEY".to_vec()),
            ]),
        );
        objects
    }

    fn secret_volume(items: Option<Vec<KeyToPath>>) -> Volume {
        Volume {
            name: "secret-volume".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some("tls".into()),
                items,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn item(key: &str, path: &str) -> KeyToPath {
        KeyToPath {
            key: key.into(),
            path: path.into(),
            mode: None,
        }
    }

    #[test]
    fn all_keys_become_files_without_items() {
        let files = files_for(&secret_volume(None), &objects())
            .unwrap()
            .unwrap();
        let names: Vec<_> = files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            names,
            vec![PathBuf::from("tls.crt"), PathBuf::from("tls.key")]
        );
        assert_eq!(files[0].mode, 0o644);
    }

    #[test]
    fn items_rename_and_select_keys() {
        let volume = secret_volume(Some(vec![
            item("tls.crt", "crt"),
            item("tls.key", "sub/key"),
        ]));
        let files = files_for(&volume, &objects()).unwrap().unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].path, PathBuf::from("crt"));
        assert_eq!(files[0].data, b"CERT");
        assert_eq!(files[1].path, PathBuf::from("sub/key"));
    }

    #[test]
    fn escaping_paths_are_dropped() {
        let volume = secret_volume(Some(vec![item("tls.crt", "../x"), item("tls.key", "/abs")]));
        assert!(files_for(&volume, &objects()).unwrap().unwrap().is_empty());
        assert_eq!(safe_relative("a/./b"), Some(PathBuf::from("a/./b")));
        assert_eq!(safe_relative(""), None);
    }

    #[test]
    fn missing_objects_and_keys_wait_unless_optional() {
        let volume = secret_volume(Some(vec![item("ca.crt", "ca")]));
        assert!(matches!(
            files_for(&volume, &objects()),
            Err(Missing::Key { .. })
        ));
        let absent = Volume {
            name: "cm".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: "later".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(matches!(
            files_for(&absent, &objects()),
            Err(Missing::Object { .. })
        ));
        let mut optional = absent.clone();
        if let Some(cm) = optional.config_map.as_mut() {
            cm.optional = Some(true);
        }
        assert_eq!(files_for(&optional, &objects()).unwrap(), Some(Vec::new()));
    }

    #[test]
    fn empty_dir_has_no_files_and_binds_follow_mounts() {
        let empty = Volume {
            name: "scratch".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        };
        assert_eq!(files_for(&empty, &objects()).unwrap(), None);
        let container = Container {
            volume_mounts: Some(vec![
                VolumeMount {
                    name: "secret-volume".into(),
                    mount_path: "/etc/secret-volume".into(),
                    ..Default::default()
                },
                VolumeMount {
                    name: "scratch".into(),
                    mount_path: "/data".into(),
                    sub_path: Some("a".into()),
                    ..Default::default()
                },
                VolumeMount {
                    name: "undeclared".into(),
                    mount_path: "/x".into(),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        let binds = binds_for(
            &container,
            &[secret_volume(None), empty],
            Path::new("/state/v"),
        );
        assert_eq!(
            binds,
            vec![
                Bind {
                    source: PathBuf::from("/state/v/secret-volume"),
                    target: PathBuf::from("/etc/secret-volume"),
                },
                Bind {
                    source: PathBuf::from("/state/v/scratch/a"),
                    target: PathBuf::from("/data"),
                },
            ]
        );
    }
}
