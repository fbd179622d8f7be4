use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// `namespace/name` of an object; cluster-scoped objects have an empty namespace.
/// Shared strings: a key is copied into the snapshot, the translator's memo
/// and every status map of every pass, so a copy is two reference counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectKey {
    pub namespace: Arc<str>,
    pub name: Arc<str>,
}

impl ObjectKey {
    pub fn new(namespace: impl AsRef<str>, name: impl AsRef<str>) -> Self {
        ObjectKey {
            namespace: Arc::from(namespace.as_ref()),
            name: Arc::from(name.as_ref()),
        }
    }

    pub fn cluster(name: impl AsRef<str>) -> Self {
        ObjectKey::new("", name)
    }

    pub fn of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Self {
        ObjectKey::new(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
        )
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}
