//! Leader election on a coordination.k8s.io/v1 Lease, as a pure state
//! machine: given the Lease we read, what do we write? The I/O loop that
//! applies these decisions (with resourceVersion preconditions) is in
//! `leader.rs`.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// How long a Lease is valid without renewal.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often the holder renews (and others retry).
pub const RENEW_PERIOD: Duration = Duration::from_secs(5);

/// What to do with the Lease as read from the API server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// No Lease exists: create it, holding it.
    Create,
    /// We hold it: bump renewTime.
    Renew,
    /// Nobody holds it or the holder let it expire: take it over.
    TakeOver,
    /// Someone else holds a valid Lease.
    Follow { holder: String },
}

/// Decides from the current Lease spec (`None`: no Lease object).
pub fn decide(current: Option<&LeaseSpec>, me: &str, now: Timestamp) -> Action {
    let Some(spec) = current else {
        return Action::Create;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder == me {
        return Action::Renew;
    }
    if holder.is_empty() || expired(spec, now) {
        return Action::TakeOver;
    }
    Action::Follow {
        holder: holder.to_string(),
    }
}

fn expired(spec: &LeaseSpec, now: Timestamp) -> bool {
    let Some(MicroTime(renewed)) = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()) else {
        return true;
    };
    let seconds = spec.lease_duration_seconds.unwrap_or(0).max(0);
    match renewed.checked_add(SignedDuration::from_secs(i64::from(seconds))) {
        Ok(valid_until) => valid_until < now,
        Err(_) => false,
    }
}

/// The spec to write for `action` (`None` for [`Action::Follow`]).
pub fn next_spec(
    action: &Action,
    current: Option<&LeaseSpec>,
    me: &str,
    now: Timestamp,
) -> Option<LeaseSpec> {
    let duration = i32::try_from(LEASE_DURATION.as_secs()).unwrap_or(i32::MAX);
    let transitions = current.and_then(|c| c.lease_transitions).unwrap_or(0);
    match action {
        Action::Follow { .. } => None,
        Action::Renew => Some(LeaseSpec {
            renew_time: Some(MicroTime(now)),
            holder_identity: Some(me.to_string()),
            lease_duration_seconds: Some(duration),
            ..current.cloned().unwrap_or_default()
        }),
        Action::Create | Action::TakeOver => Some(LeaseSpec {
            holder_identity: Some(me.to_string()),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            lease_duration_seconds: Some(duration),
            lease_transitions: Some(match action {
                Action::TakeOver => transitions.saturating_add(1),
                _ => transitions,
            }),
            ..LeaseSpec::default()
        }),
    }
}

/// The spec that hands the Lease back on shutdown, so another replica can
/// take over at its next try instead of waiting for expiry; `None` when
/// we do not hold it.
pub fn released(current: Option<&LeaseSpec>, me: &str) -> Option<LeaseSpec> {
    let spec = current?;
    if spec.holder_identity.as_deref() != Some(me) {
        return None;
    }
    Some(LeaseSpec {
        holder_identity: None,
        ..spec.clone()
    })
}

/// Our own view of leadership: we lead until the Lease we last wrote
/// successfully expires, minus a margin for clock skew, so two replicas
/// never believe they lead at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Leadership {
    valid_until: Option<tokio::time::Instant>,
}

impl Leadership {
    const MARGIN: Duration = Duration::from_secs(2);

    /// A write that makes us the holder succeeded at `written_at`.
    pub fn renewed(&mut self, written_at: tokio::time::Instant) {
        self.valid_until = Some(written_at + LEASE_DURATION - Self::MARGIN);
    }

    /// Someone else holds the Lease.
    pub fn lost(&mut self) {
        self.valid_until = None;
    }

    /// When our leadership lapses unless renewed.
    pub fn valid_until(&self) -> Option<tokio::time::Instant> {
        self.valid_until
    }

    pub fn is_leader(&self, now: tokio::time::Instant) -> bool {
        self.valid_until.is_some_and(|until| now < until)
    }
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
