//! Turns a pod spec plus fetched objects into what the supervisors run:
//! per-container launch, environment and mounts, and the volume files.

use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::container::{ContainerSpec, RestartPolicy};
use crate::env::{self, Missing, Objects, PodFacts};
use crate::image_map::{ImageMap, Launch};
use crate::probe;
use crate::volumes::{self, VolumeFile};

/// Everything fixed for one pod that the container specs share.
pub struct PodPlan<'a> {
    pub pod: &'a Pod,
    pub facts: PodFacts,
    pub pod_dir: PathBuf,
    pub netns: String,
    pub pod_ip: Ipv4Addr,
    pub grace: Duration,
    pub fakelet_exe: PathBuf,
}

pub fn unmapped_message(image: &str) -> String {
    format!("image {image} is not mapped to a local binary (add an --image-map rule)")
}

/// The process for a container, with `$(VAR)` references in command and
/// args expanded from its environment.
pub fn launch_for(
    images: &ImageMap,
    container: &Container,
    env: &[(String, String)],
) -> Option<Launch> {
    let image = container.image.as_deref().unwrap_or("");
    let expand = |items: &Option<Vec<String>>| -> Vec<String> {
        items
            .iter()
            .flatten()
            .map(|s| env::expand(s, env))
            .collect()
    };
    images.launch(image, &expand(&container.command), &expand(&container.args))
}

fn volumes_root(pod_dir: &Path) -> PathBuf {
    pod_dir.join("volumes")
}

/// Resolves every mapped container; fails on the first missing object.
pub fn container_specs(
    plan: &PodPlan<'_>,
    images: &ImageMap,
    objects: &Objects,
) -> Result<Vec<ContainerSpec>, Missing> {
    let Some(spec) = &plan.pod.spec else {
        return Ok(Vec::new());
    };
    let pod_volumes = spec.volumes.clone().unwrap_or_default();
    let restart_policy = RestartPolicy::parse(spec.restart_policy.as_deref());
    let mut specs = Vec::new();
    for container in &spec.containers {
        let env = env::resolve(container, &plan.facts, objects)?;
        let Some(launch) = launch_for(images, container, &env) else {
            continue;
        };
        specs.push(ContainerSpec {
            name: container.name.clone(),
            pod_name: plan.facts.name.clone(),
            launch,
            env,
            binds: volumes::binds_for(container, &pod_volumes, &volumes_root(&plan.pod_dir)),
            workdir: container.working_dir.clone(),
            netns: plan.netns.clone(),
            pod_dir: plan.pod_dir.clone(),
            pod_ip: plan.pod_ip,
            restart_policy,
            readiness: probe::readiness_of(container),
            grace: plan.grace,
            fakelet_exe: plan.fakelet_exe.clone(),
        });
    }
    Ok(specs)
}

/// Every volume's files, by volume name; fails on the first missing object.
pub fn volume_files(
    pod: &Pod,
    objects: &Objects,
) -> Result<Vec<(String, Vec<VolumeFile>)>, Missing> {
    let mut out = Vec::new();
    for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
        let files = volumes::files_for(volume, objects)?.unwrap_or_default();
        out.push((volume.name.clone(), files));
    }
    Ok(out)
}

/// Writes the volumes under `<pod dir>/volumes/<name>/`.
pub fn write_volumes(pod_dir: &Path, volumes: &[(String, Vec<VolumeFile>)]) -> std::io::Result<()> {
    let root = volumes_root(pod_dir);
    for (name, files) in volumes {
        let Some(dir) = volumes::safe_relative(name).map(|n| root.join(n)) else {
            continue;
        };
        std::fs::create_dir_all(&dir)?;
        for file in files {
            let path = dir.join(&file.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, &file.data)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(file.mode))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image_map::ImageRule;

    #[test]
    fn expands_env_references_in_args() {
        let images = ImageMap::new(vec![ImageRule::parse("*echo*=/bin/echo-basic").unwrap()]);
        let container = Container {
            image: Some("x/echo-basic:v1".into()),
            args: Some(vec!["--name=$(POD_NAME)".into()]),
            ..Default::default()
        };
        let env = vec![("POD_NAME".to_string(), "web-1".to_string())];
        let launch = launch_for(&images, &container, &env).unwrap();
        assert_eq!(launch.args, vec!["--name=web-1".to_string()]);
        let unmapped = Container {
            image: Some("nginx".into()),
            ..Default::default()
        };
        assert!(launch_for(&images, &unmapped, &env).is_none());
        assert!(unmapped_message("nginx").contains("nginx is not mapped to a local binary"));
    }

    #[test]
    fn writes_volume_files_with_modes() {
        let dir = std::env::temp_dir().join(format!("fakelet-vol-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let files = vec![VolumeFile {
            path: PathBuf::from("sub/crt"),
            data: b"CERT".to_vec(),
            mode: 0o600,
        }];
        write_volumes(&dir, &[("secret-volume".into(), files)]).unwrap();
        let path = dir.join("volumes/secret-volume/sub/crt");
        assert_eq!(std::fs::read(&path).unwrap(), b"CERT");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
