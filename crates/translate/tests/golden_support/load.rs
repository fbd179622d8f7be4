//! Reads a scenario: multi-document Kubernetes YAML into typed objects (for
//! the snapshot) and their original JSON form (for the rendered output).

use coxswain_api::{ApiObject, Kind, KindVisitor, Object, Snapshot};
use serde::Deserialize;
use serde_json::Value;

/// One input document: as written (namespace defaulted, key order kept) and
/// typed.
pub struct InputObject {
    pub yaml: serde_yaml_ng::Value,
    pub object: Object,
}

/// Parses every non-empty document of `text`.
pub fn parse_objects(text: &str) -> Result<Vec<InputObject>, String> {
    let mut objects = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let mut yaml = serde_yaml_ng::Value::deserialize(document)
            .map_err(|e| format!("document {index}: {e}"))?;
        if yaml.is_null() {
            continue;
        }
        let mut value =
            serde_json::to_value(&yaml).map_err(|e| format!("document {index}: {e}"))?;
        if default_namespace(&mut value) {
            yaml["metadata"]["namespace"] = "default".into();
        }
        let object = typed(&value).map_err(|e| format!("document {index}: {e}"))?;
        objects.push(InputObject { yaml, object });
    }
    Ok(objects)
}

pub fn snapshot(objects: &[InputObject]) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for input in objects {
        snapshot.insert(input.object.clone());
    }
    snapshot
}

fn kind_of(value: &Value) -> &str {
    value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn is_cluster_scoped(kind: &str) -> bool {
    Kind::from_name(kind).is_some_and(Kind::cluster_scoped)
}

/// Namespaced objects written without a namespace live in `default`.
/// Returns whether the namespace was filled in.
fn default_namespace(value: &mut Value) -> bool {
    if is_cluster_scoped(kind_of(value)) {
        return false;
    }
    let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    if meta.contains_key("namespace") {
        return false;
    }
    meta.insert("namespace".into(), Value::String("default".into()));
    true
}

fn typed(value: &Value) -> Result<Object, String> {
    struct Decode<'a>(&'a Value);
    impl KindVisitor for Decode<'_> {
        type Output = Result<Object, String>;
        fn visit<T: ApiObject>(self, _: Kind, wrap: fn(T) -> Object) -> Self::Output {
            serde_json::from_value(self.0.clone())
                .map(wrap)
                .map_err(|e| e.to_string())
        }
    }
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = Kind::recognise(api_version, kind_of(value))
        .ok_or_else(|| format!("unsupported object {api_version} {}", kind_of(value)))?;
    kind.visit(Decode(value))
}
