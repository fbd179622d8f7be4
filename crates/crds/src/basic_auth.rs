//! `BasicAuth`: HTTP Basic authentication against an htpasswd file kept in
//! a Secret.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::FilterStatus;

/// Requires a user name and password from an htpasswd file, referenced by
/// an ExtensionRef filter. A request without valid credentials gets 401
/// and a `WWW-Authenticate` challenge.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "gateway.coxswain-labs.dev",
    version = "v1alpha1",
    kind = "BasicAuth",
    plural = "basicauths",
    status = "FilterStatus",
    derive = "PartialEq",
    namespaced
)]
#[serde(rename_all = "camelCase")]
pub struct BasicAuthSpec {
    /// The Secret holding the htpasswd file under the key `auth`. It must
    /// carry the label `ingress.coxswain-labs.dev/auth-basic: "true"`.
    pub secret_ref: BasicAuthSecretRef,
    /// The realm the challenge names (default `Restricted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256), pattern(r#"^[^"\\\x00-\x1f\x7f]*$"#))]
    pub realm: Option<String>,
    /// Pass the client's `Authorization` header on to the backend; by
    /// default it is removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forward_credentials: bool,
}

/// A Secret by name; in another namespace it needs a ReferenceGrant there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BasicAuthSecretRef {
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Defaults to the BasicAuth's own namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
}
