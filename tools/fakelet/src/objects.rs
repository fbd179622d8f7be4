//! Fetches the Secrets and ConfigMaps a pod refers to (env and volumes).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::{Api, Client};

use crate::env::Objects;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Referenced {
    pub secrets: BTreeSet<String>,
    pub config_maps: BTreeSet<String>,
}

pub fn referenced(pod: &Pod) -> Referenced {
    let mut refs = Referenced::default();
    let Some(spec) = &pod.spec else {
        return refs;
    };
    for volume in spec.volumes.iter().flatten() {
        if let Some(name) = volume.secret.as_ref().and_then(|s| s.secret_name.clone()) {
            refs.secrets.insert(name);
        }
        if let Some(cm) = &volume.config_map {
            refs.config_maps.insert(cm.name.clone());
        }
    }
    for container in &spec.containers {
        for var in container.env.iter().flatten() {
            let Some(source) = &var.value_from else {
                continue;
            };
            if let Some(sel) = &source.secret_key_ref {
                refs.secrets.insert(sel.name.clone());
            }
            if let Some(sel) = &source.config_map_key_ref {
                refs.config_maps.insert(sel.name.clone());
            }
        }
        for source in container.env_from.iter().flatten() {
            if let Some(sel) = &source.secret_ref {
                refs.secrets.insert(sel.name.clone());
            }
            if let Some(sel) = &source.config_map_ref {
                refs.config_maps.insert(sel.name.clone());
            }
        }
    }
    refs
}

/// Fetches what exists; absent objects are simply left out (the caller
/// decides whether that blocks the pod).
pub async fn fetch(client: &Client, namespace: &str, refs: &Referenced) -> kube::Result<Objects> {
    let mut objects = Objects::default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    for name in &refs.secrets {
        if let Some(secret) = secrets.get_opt(name).await? {
            let data: BTreeMap<String, Vec<u8>> = secret
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            objects.secrets.insert(name.clone(), data);
        }
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    for name in &refs.config_maps {
        if let Some(cm) = config_maps.get_opt(name).await? {
            let mut data: BTreeMap<String, Vec<u8>> = cm
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes()))
                .collect();
            for (k, v) in cm.binary_data.unwrap_or_default() {
                data.insert(k, v.0);
            }
            objects.config_maps.insert(name.clone(), data);
        }
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_names_from_volumes_env_and_env_from() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {
                "volumes": [
                    {"name": "a", "secret": {"secretName": "tls"}},
                    {"name": "b", "configMap": {"name": "cfg"}},
                    {"name": "c", "emptyDir": {}}
                ],
                "containers": [{
                    "name": "web",
                    "env": [
                        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "s2", "key": "k"}}},
                        {"name": "Y", "value": "plain"}
                    ],
                    "envFrom": [{"configMapRef": {"name": "cfg2"}}]
                }]
            }
        }))
        .unwrap();
        let refs = referenced(&pod);
        assert_eq!(
            refs.secrets.into_iter().collect::<Vec<_>>(),
            vec!["s2".to_string(), "tls".to_string()]
        );
        assert_eq!(
            refs.config_maps.into_iter().collect::<Vec<_>>(),
            vec!["cfg".to_string(), "cfg2".to_string()]
        );
    }
}
