//! Why part of an Ingress is not served as written. Ingress status has no
//! conditions, so these are reported by `coxswain check`, logged by
//! `coxswain run` and the controller, and make `check` exit non-zero.

use std::fmt;

use super::annotations::AnnotationProblem;

/// One thing about an Ingress that is not served as written. `at` names
/// the place in the spec (`rules[0].http.paths[1]`, `defaultBackend`,
/// `tls[0]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IngressProblem {
    /// `backend.resource` (any kind): the path is not served.
    ResourceBackend {
        at: String,
        kind: String,
        name: String,
    },
    /// Neither `service` nor `resource`: the path is not served.
    NoBackend { at: String },
    /// The Service or its port does not resolve: the path answers 500.
    Unresolved { at: String, why: String },
    InvalidHost {
        at: String,
        host: String,
        why: String,
    },
    /// The path is not served.
    InvalidPath { at: String, why: String },
    /// A TLS entry that presents no certificate.
    Tls { at: String, why: String },
    /// An older Ingress already presents a certificate for this host.
    TlsHostTaken {
        at: String,
        host: String,
        by: String,
    },
    /// An older Ingress's `defaultBackend` is the one served.
    DefaultBackendTaken { by: String },
    /// A Gateway listener on the same socket owns this hostname.
    ShadowedByGateway {
        port: u16,
        hostname: String,
        gateway: String,
    },
    /// An annotation that is not enforced as written (unsupported,
    /// invalid, refused, or overridden by the other prefix's spelling).
    Annotation(AnnotationProblem),
    /// What an annotation asks for is not (fully) done, and why.
    AnnotationEffect { annotation: String, why: String },
    /// Security annotations that cannot be enforced: every rule of the
    /// Ingress answers 500 rather than serve unprotected.
    NotServedUnprotected { annotations: Vec<String> },
    /// Our IngressClass names `spec.parameters`, which Coxswain does not read.
    ClassParameters { class: String },
}

impl fmt::Display for IngressProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IngressProblem::ResourceBackend { at, kind, name } => write!(
                f,
                "{at}: resource backend {kind} {name:?} is not supported (only Service backends are); the path is not served"
            ),
            IngressProblem::NoBackend { at } => {
                write!(f, "{at}: backend names no Service; the path is not served")
            }
            IngressProblem::Unresolved { at, why } => {
                write!(f, "{at}: {why}; requests to it answer 500")
            }
            IngressProblem::InvalidHost { at, host, why } => {
                write!(f, "{at}: host {host:?} is not served: {why}")
            }
            IngressProblem::InvalidPath { at, why } => {
                write!(f, "{at}: {why}; the path is not served")
            }
            IngressProblem::Tls { at, why } => write!(f, "{at}: {why}"),
            IngressProblem::TlsHostTaken { at, host, by } => write!(
                f,
                "{at}: host {host:?} already has a certificate from the older Ingress {by}; that one is presented"
            ),
            IngressProblem::DefaultBackendTaken { by } => write!(
                f,
                "defaultBackend: the older Ingress {by} has one too; only the oldest is served"
            ),
            IngressProblem::ShadowedByGateway {
                port,
                hostname,
                gateway,
            } => write!(
                f,
                "port {port} hostname {hostname}: the Gateway listener {gateway} on the same socket takes these requests"
            ),
            IngressProblem::Annotation(problem) => problem.fmt(f),
            IngressProblem::AnnotationEffect { annotation, why } => {
                write!(f, "annotation {annotation}: {why}")
            }
            IngressProblem::NotServedUnprotected { annotations } => write!(
                f,
                "{} cannot be enforced: every rule of this Ingress answers 500 rather than serve unprotected",
                annotations.join(", ")
            ),
            IngressProblem::ClassParameters { class } => write!(
                f,
                "IngressClass {class}: spec.parameters is not supported and has no effect"
            ),
        }
    }
}

impl std::error::Error for IngressProblem {}
