//! Typed condition types and reasons, and the one place that turns them into
//! Kubernetes `Condition` values.

use std::borrow::Cow;

use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Every condition type the translator writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionType {
    Accepted,
    Programmed,
    ResolvedRefs,
    Conflicted,
    SupportedVersion,
    PartiallyInvalid,
    InsecureFrontendValidationMode,
}

/// Every reason the translator writes (GatewayClass, Gateway, listener and
/// route reasons share one enum: several names are common to all of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Accepted,
    Programmed,
    ResolvedRefs,
    SupportedVersion,
    Invalid,
    ListenersNotValid,
    UnsupportedAddress,
    InvalidParameters,
    AddressNotUsable,
    UnsupportedProtocol,
    PortUnavailable,
    InvalidRouteKinds,
    HostnameConflict,
    ProtocolConflict,
    NoConflicts,
    NotAllowedByListeners,
    NoMatchingListenerHostname,
    NoMatchingParent,
    UnsupportedValue,
    IncompatibleFilters,
    BackendNotFound,
    RefNotPermitted,
    InvalidKind,
    InvalidCertificateRef,
    InvalidCACertificateRef,
    InvalidCACertificateKind,
    NoValidCACertificate,
    ConfigurationChanged,
    InvalidClientCertificateRef,
    Conflicted,
    TargetNotFound,
    NotAllowed,
    ParentNotAccepted,
    /// A filter resource's Secret is missing or not meant for it.
    InvalidSecretRef,
}

impl ConditionType {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionType::Accepted => "Accepted",
            ConditionType::Programmed => "Programmed",
            ConditionType::ResolvedRefs => "ResolvedRefs",
            ConditionType::Conflicted => "Conflicted",
            ConditionType::SupportedVersion => "SupportedVersion",
            ConditionType::PartiallyInvalid => "PartiallyInvalid",
            ConditionType::InsecureFrontendValidationMode => "InsecureFrontendValidationMode",
        }
    }
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Accepted => "Accepted",
            Reason::Programmed => "Programmed",
            Reason::ResolvedRefs => "ResolvedRefs",
            Reason::SupportedVersion => "SupportedVersion",
            Reason::Invalid => "Invalid",
            Reason::ListenersNotValid => "ListenersNotValid",
            Reason::UnsupportedAddress => "UnsupportedAddress",
            Reason::InvalidParameters => "InvalidParameters",
            Reason::AddressNotUsable => "AddressNotUsable",
            Reason::UnsupportedProtocol => "UnsupportedProtocol",
            Reason::PortUnavailable => "PortUnavailable",
            Reason::InvalidRouteKinds => "InvalidRouteKinds",
            Reason::HostnameConflict => "HostnameConflict",
            Reason::ProtocolConflict => "ProtocolConflict",
            Reason::NoConflicts => "NoConflicts",
            Reason::NotAllowedByListeners => "NotAllowedByListeners",
            Reason::NoMatchingListenerHostname => "NoMatchingListenerHostname",
            Reason::NoMatchingParent => "NoMatchingParent",
            Reason::UnsupportedValue => "UnsupportedValue",
            Reason::IncompatibleFilters => "IncompatibleFilters",
            Reason::BackendNotFound => "BackendNotFound",
            Reason::RefNotPermitted => "RefNotPermitted",
            Reason::InvalidKind => "InvalidKind",
            Reason::InvalidCertificateRef => "InvalidCertificateRef",
            Reason::InvalidCACertificateRef => "InvalidCACertificateRef",
            Reason::InvalidCACertificateKind => "InvalidCACertificateKind",
            Reason::NoValidCACertificate => "NoValidCACertificate",
            Reason::ConfigurationChanged => "ConfigurationChanged",
            Reason::InvalidClientCertificateRef => "InvalidClientCertificateRef",
            Reason::Conflicted => "Conflicted",
            Reason::TargetNotFound => "TargetNotFound",
            Reason::NotAllowed => "NotAllowed",
            Reason::ParentNotAccepted => "ParentNotAccepted",
            Reason::InvalidSecretRef => "InvalidSecretRef",
        }
    }
}

/// A condition before it is stamped with generation and time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond {
    pub type_: ConditionType,
    pub status: bool,
    pub reason: Reason,
    /// Mostly a fixed text: a route's status keeps its conditions for as
    /// long as the route is unchanged.
    pub message: Cow<'static, str>,
}

impl Cond {
    pub fn new(
        type_: ConditionType,
        status: bool,
        reason: Reason,
        message: impl Into<Cow<'static, str>>,
    ) -> Self {
        Cond {
            type_,
            status,
            reason,
            message: message.into(),
        }
    }
}

/// Stamps conditions with the object's generation and the run's timestamp.
#[derive(Clone, Copy, Debug)]
pub struct Stamp<'a> {
    pub generation: Option<i64>,
    pub now: &'a Time,
}

impl Stamp<'_> {
    pub fn condition(&self, cond: Cond) -> Condition {
        Condition {
            type_: cond.type_.as_str().to_string(),
            status: if cond.status { "True" } else { "False" }.to_string(),
            reason: cond.reason.as_str().to_string(),
            message: cond.message.into_owned(),
            observed_generation: self.generation,
            last_transition_time: self.now.clone(),
        }
    }

    pub fn all(&self, conds: Vec<Cond>) -> Vec<Condition> {
        conds.into_iter().map(|c| self.condition(c)).collect()
    }
}
