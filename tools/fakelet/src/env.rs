//! Resolves a container's environment the way the kubelet does, for the
//! sources a test cluster needs: literals, `fieldRef`, Secret and ConfigMap
//! keys, `envFrom`, and `$(VAR)` references to earlier variables.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar};

/// Facts about the pod that `fieldRef` can read.
#[derive(Debug, Clone, Default)]
pub struct PodFacts {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub node_name: String,
    pub pod_ip: String,
    pub host_ip: String,
    pub service_account: String,
}

/// Secret and ConfigMap data already fetched, keyed by object name.
#[derive(Debug, Clone, Default)]
pub struct Objects {
    pub secrets: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    pub config_maps: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    Object {
        kind: &'static str,
        name: String,
    },
    Key {
        kind: &'static str,
        name: String,
        key: String,
    },
    Field(String),
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Object { kind, name } => write!(f, "{kind} {name:?} not found"),
            Missing::Key { kind, name, key } => {
                write!(f, "key {key:?} not found in {kind} {name:?}")
            }
            Missing::Field(path) => write!(f, "unsupported fieldRef {path:?}"),
        }
    }
}

impl Objects {
    fn table(&self, kind: &'static str) -> &BTreeMap<String, BTreeMap<String, Vec<u8>>> {
        if kind == "Secret" {
            &self.secrets
        } else {
            &self.config_maps
        }
    }

    /// The object's data; `Ok(None)` when it is optional and absent.
    pub fn data(
        &self,
        kind: &'static str,
        name: &str,
        optional: bool,
    ) -> Result<Option<&BTreeMap<String, Vec<u8>>>, Missing> {
        match self.table(kind).get(name) {
            Some(data) => Ok(Some(data)),
            None if optional => Ok(None),
            None => Err(Missing::Object {
                kind,
                name: name.to_string(),
            }),
        }
    }

    fn key(
        &self,
        kind: &'static str,
        name: &str,
        key: &str,
        optional: bool,
    ) -> Result<Option<String>, Missing> {
        let Some(data) = self.data(kind, name, optional)? else {
            return Ok(None);
        };
        match data.get(key) {
            Some(value) => Ok(Some(String::from_utf8_lossy(value).into_owned())),
            None if optional => Ok(None),
            None => Err(Missing::Key {
                kind,
                name: name.to_string(),
                key: key.to_string(),
            }),
        }
    }
}

fn field(facts: &PodFacts, path: &str) -> Result<String, Missing> {
    Ok(match path {
        "metadata.name" => facts.name.clone(),
        "metadata.namespace" => facts.namespace.clone(),
        "metadata.uid" => facts.uid.clone(),
        "spec.nodeName" => facts.node_name.clone(),
        "spec.serviceAccountName" => facts.service_account.clone(),
        "status.podIP" | "status.podIPs" => facts.pod_ip.clone(),
        "status.hostIP" | "status.hostIPs" => facts.host_ip.clone(),
        other => return Err(Missing::Field(other.to_string())),
    })
}

fn value_of(
    var: &EnvVar,
    facts: &PodFacts,
    objects: &Objects,
    earlier: &[(String, String)],
) -> Result<Option<String>, Missing> {
    if let Some(value) = &var.value {
        return Ok(Some(expand(value, earlier)));
    }
    let Some(source) = &var.value_from else {
        return Ok(Some(String::new()));
    };
    if let Some(field_ref) = &source.field_ref {
        return field(facts, &field_ref.field_path).map(Some);
    }
    if let Some(sel) = &source.secret_key_ref {
        return objects.key("Secret", &sel.name, &sel.key, sel.optional.unwrap_or(false));
    }
    if let Some(sel) = &source.config_map_key_ref {
        return objects.key(
            "ConfigMap",
            &sel.name,
            &sel.key,
            sel.optional.unwrap_or(false),
        );
    }
    // resourceFieldRef and friends: no resources are enforced here.
    Ok(None)
}

/// The container's environment in definition order; a later definition of
/// a name replaces the earlier one in place.
pub fn resolve(
    container: &Container,
    facts: &PodFacts,
    objects: &Objects,
) -> Result<Vec<(String, String)>, Missing> {
    let mut env: Vec<(String, String)> = Vec::new();
    let set = |env: &mut Vec<(String, String)>, name: String, value: String| match env
        .iter_mut()
        .find(|(n, _)| *n == name)
    {
        Some(slot) => slot.1 = value,
        None => env.push((name, value)),
    };
    for source in container.env_from.iter().flatten() {
        let prefix = source.prefix.clone().unwrap_or_default();
        let data = if let Some(sel) = &source.secret_ref {
            objects.data("Secret", &sel.name, sel.optional.unwrap_or(false))?
        } else if let Some(sel) = &source.config_map_ref {
            objects.data("ConfigMap", &sel.name, sel.optional.unwrap_or(false))?
        } else {
            None
        };
        for (key, value) in data.into_iter().flatten() {
            let value = String::from_utf8_lossy(value).into_owned();
            set(&mut env, format!("{prefix}{key}"), value);
        }
    }
    for var in container.env.iter().flatten() {
        if let Some(value) = value_of(var, facts, objects, &env)? {
            set(&mut env, var.name.clone(), value);
        }
    }
    Ok(env)
}

/// Expands `$(NAME)` from `vars`; `$$` escapes a dollar; unknown references
/// stay as written (as the kubelet does).
pub fn expand(text: &str, vars: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match vars.iter().rev().find(|(n, _)| n == name) {
                Some((_, value)) => out.push_str(value),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ConfigMapKeySelector, EnvFromSource, EnvVarSource, ObjectFieldSelector, SecretEnvSource,
        SecretKeySelector,
    };

    fn facts() -> PodFacts {
        PodFacts {
            name: "web-abc".into(),
            namespace: "gateway-conformance-infra".into(),
            uid: "u1".into(),
            node_name: "node-1".into(),
            pod_ip: "10.244.0.7".into(),
            host_ip: "10.99.0.2".into(),
            service_account: "default".into(),
        }
    }

    fn field_var(name: &str, path: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: path.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn literal(name: &str, value: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: Some(value.into()),
            ..Default::default()
        }
    }

    fn objects() -> Objects {
        let mut objects = Objects::default();
        objects.secrets.insert(
            "tls".into(),
            BTreeMap::from([("crt".to_string(), b"CERT".to_vec())]),
        );
        objects.config_maps.insert(
            "cfg".into(),
            BTreeMap::from([("mode".to_string(), b"fast".to_vec())]),
        );
        objects
    }

    #[test]
    fn resolves_literals_fields_and_object_keys() {
        let container = Container {
            env: Some(vec![
                field_var("POD_NAME", "metadata.name"),
                field_var("NAMESPACE", "metadata.namespace"),
                field_var("POD_IP", "status.podIP"),
                field_var("NODE", "spec.nodeName"),
                literal("GREETING", "hi $(POD_NAME) $$(POD_NAME) $(NOPE)"),
                EnvVar {
                    name: "CERT".into(),
                    value_from: Some(EnvVarSource {
                        secret_key_ref: Some(SecretKeySelector {
                            name: "tls".into(),
                            key: "crt".into(),
                            optional: None,
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                EnvVar {
                    name: "MODE".into(),
                    value_from: Some(EnvVarSource {
                        config_map_key_ref: Some(ConfigMapKeySelector {
                            name: "cfg".into(),
                            key: "mode".into(),
                            optional: None,
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        let env = resolve(&container, &facts(), &objects()).unwrap();
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("POD_NAME"), Some("web-abc"));
        assert_eq!(get("NAMESPACE"), Some("gateway-conformance-infra"));
        assert_eq!(get("POD_IP"), Some("10.244.0.7"));
        assert_eq!(get("NODE"), Some("node-1"));
        assert_eq!(get("GREETING"), Some("hi web-abc $(POD_NAME) $(NOPE)"));
        assert_eq!(get("CERT"), Some("CERT"));
        assert_eq!(get("MODE"), Some("fast"));
    }

    #[test]
    fn missing_secret_is_reported_unless_optional() {
        let mut var = EnvVar {
            name: "X".into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: "later".into(),
                    key: "k".into(),
                    optional: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let container = Container {
            env: Some(vec![var.clone()]),
            ..Default::default()
        };
        let err = resolve(&container, &facts(), &objects()).unwrap_err();
        assert_eq!(
            err,
            Missing::Object {
                kind: "Secret",
                name: "later".into()
            }
        );
        assert_eq!(err.to_string(), "Secret \"later\" not found");
        if let Some(sel) = var
            .value_from
            .as_mut()
            .and_then(|s| s.secret_key_ref.as_mut())
        {
            sel.optional = Some(true);
        }
        let container = Container {
            env: Some(vec![var]),
            ..Default::default()
        };
        assert!(
            resolve(&container, &facts(), &objects())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn missing_key_and_unknown_field_are_errors() {
        let container = Container {
            env: Some(vec![EnvVar {
                name: "X".into(),
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: "tls".into(),
                        key: "key".into(),
                        optional: None,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert!(matches!(
            resolve(&container, &facts(), &objects()),
            Err(Missing::Key { .. })
        ));
        let container = Container {
            env: Some(vec![field_var("X", "metadata.labels['a']")]),
            ..Default::default()
        };
        assert!(matches!(
            resolve(&container, &facts(), &objects()),
            Err(Missing::Field(_))
        ));
    }

    #[test]
    fn env_from_applies_prefix_and_env_overrides_it() {
        let container = Container {
            env_from: Some(vec![EnvFromSource {
                prefix: Some("S_".into()),
                secret_ref: Some(SecretEnvSource {
                    name: "tls".into(),
                    optional: None,
                }),
                ..Default::default()
            }]),
            env: Some(vec![literal("S_crt", "override"), literal("B", "$(S_crt)")]),
            ..Default::default()
        };
        let env = resolve(&container, &facts(), &objects()).unwrap();
        assert_eq!(
            env,
            vec![
                ("S_crt".to_string(), "override".to_string()),
                ("B".to_string(), "override".to_string())
            ]
        );
    }

    #[test]
    fn expand_handles_unterminated_references() {
        assert_eq!(expand("a$(b", &[]), "a$(b");
        assert_eq!(expand("cost $5", &[]), "cost $5");
        assert_eq!(expand("$", &[]), "$");
    }
}
