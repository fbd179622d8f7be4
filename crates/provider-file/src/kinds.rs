//! Which documents we load: a kind of the [`Kind`] table, a `List` of
//! documents, or something else (skipped with a warning).

use coxswain_api::Kind;

/// What to do with a document of a given `apiVersion`/`kind`.
#[derive(Debug, PartialEq, Eq)]
pub enum Recognised {
    Load(Kind),
    /// A `kind: List` whose `items` are documents themselves.
    List,
    /// Not something we serve; skipped with a warning.
    Unknown,
}

/// Classifies a document by its type fields.
pub fn recognise(api_version: &str, kind: &str) -> Recognised {
    // Deployments are in the kinds table for the Kubernetes provider (its
    // proxy pools' readiness), not configuration: a file's are skipped.
    if let Some(known) = Kind::recognise(api_version, kind).filter(|k| *k != Kind::Deployment) {
        return Recognised::Load(known);
    }
    if api_version == "v1" && kind == "List" {
        return Recognised::List;
    }
    Recognised::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_versions() {
        assert_eq!(
            recognise("gateway.networking.k8s.io/v1beta1", "ReferenceGrant"),
            Recognised::Load(Kind::ReferenceGrant)
        );
        assert_eq!(
            recognise("networking.istio.io/v1", "Gateway"),
            Recognised::Unknown
        );
        assert_eq!(recognise("v1", "List"), Recognised::List);
        assert_eq!(recognise("apps/v1", "Deployment"), Recognised::Unknown);
    }
}
