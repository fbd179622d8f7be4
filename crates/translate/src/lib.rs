//! Gateway API semantics as a pure function: [`translate`] turns a
//! [`Snapshot`] into the proxy's IR plus the status of every object.
//! Synchronous and deterministic: no I/O, no tokio, no clock (the timestamp
//! for new conditions is injected through [`Options::now`]).

mod output;

pub use output::{Output, Statuses};

use std::net::IpAddr;

use coxswain_api::Snapshot;
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The controller name Coxswain claims GatewayClasses for by default.
pub const DEFAULT_CONTROLLER_NAME: &str = "coxswain-labs.dev/gateway-controller";

/// What the translator needs to know about its environment.
#[derive(Clone, Debug)]
pub struct Options {
    /// GatewayClasses whose `spec.controllerName` equals this are ours.
    pub controller_name: String,
    /// Listeners of Gateways without `spec.addresses` bind here.
    pub default_address: IpAddr,
    /// `lastTransitionTime` for conditions computed in this run.
    pub now: Time,
}

/// Translates a snapshot. Never panics on any input.
pub fn translate(snapshot: &Snapshot, options: &Options) -> Output {
    let _ = (snapshot, options);
    Output::default()
}
