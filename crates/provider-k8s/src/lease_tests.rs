use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::*;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).unwrap()
}

fn held_by(holder: &str, renewed: i64) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(holder.into()),
        acquire_time: Some(MicroTime(at(0))),
        renew_time: Some(MicroTime(at(renewed))),
        lease_duration_seconds: Some(15),
        lease_transitions: Some(3),
        ..LeaseSpec::default()
    }
}

#[test]
fn missing_lease_is_created_with_us_holding_it() {
    assert_eq!(decide(None, "me", at(0)), Action::Create);
    let spec = next_spec(&Action::Create, None, "me", at(0)).unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    assert_eq!(spec.lease_duration_seconds, Some(15));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(spec.renew_time, Some(MicroTime(at(0))));
}

#[test]
fn holder_renews_keeping_acquire_time_and_transitions() {
    let current = held_by("me", 5);
    assert_eq!(decide(Some(&current), "me", at(10)), Action::Renew);
    let spec = next_spec(&Action::Renew, Some(&current), "me", at(10)).unwrap();
    assert_eq!(spec.acquire_time, Some(MicroTime(at(0))));
    assert_eq!(spec.renew_time, Some(MicroTime(at(10))));
    assert_eq!(spec.lease_transitions, Some(3));
}

#[test]
fn valid_lease_of_another_replica_is_followed() {
    let current = held_by("other", 5);
    assert_eq!(
        decide(Some(&current), "me", at(20)),
        Action::Follow {
            holder: "other".into()
        }
    );
    assert_eq!(
        next_spec(
            &decide(Some(&current), "me", at(20)),
            Some(&current),
            "me",
            at(20)
        ),
        None
    );
}

#[test]
fn expired_or_released_lease_is_taken_over() {
    let current = held_by("other", 5);
    assert_eq!(decide(Some(&current), "me", at(21)), Action::TakeOver);
    let spec = next_spec(&Action::TakeOver, Some(&current), "me", at(21)).unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    assert_eq!(spec.acquire_time, Some(MicroTime(at(21))));
    assert_eq!(spec.lease_transitions, Some(4));
    let released = LeaseSpec {
        holder_identity: None,
        ..held_by("x", 5)
    };
    assert_eq!(decide(Some(&released), "me", at(6)), Action::TakeOver);
    let never_renewed = LeaseSpec {
        holder_identity: Some("other".into()),
        ..LeaseSpec::default()
    };
    assert_eq!(decide(Some(&never_renewed), "me", at(0)), Action::TakeOver);
}

#[test]
fn absurd_durations_do_not_panic() {
    let spec = LeaseSpec {
        holder_identity: Some("other".into()),
        renew_time: Some(MicroTime(Timestamp::MAX)),
        lease_duration_seconds: Some(i32::MAX),
        ..LeaseSpec::default()
    };
    assert!(matches!(
        decide(Some(&spec), "me", at(0)),
        Action::Follow { .. }
    ));
    let _ = SignedDuration::ZERO;
}

#[tokio::test(start_paused = true)]
async fn leadership_lapses_before_the_lease_expires() {
    let start = tokio::time::Instant::now();
    let mut leadership = Leadership::default();
    assert!(!leadership.is_leader(start));
    leadership.renewed(start);
    assert!(leadership.is_leader(start + RENEW_PERIOD * 2));
    assert!(!leadership.is_leader(start + LEASE_DURATION));
    leadership.lost();
    assert!(!leadership.is_leader(start));
}

#[test]
fn release_only_what_we_hold() {
    let ours = held_by("me", 5);
    let spec = released(Some(&ours), "me").unwrap();
    assert_eq!(spec.holder_identity, None);
    assert_eq!(decide(Some(&spec), "other", at(6)), Action::TakeOver);
    assert_eq!(released(Some(&held_by("other", 5)), "me"), None);
    assert_eq!(released(None, "me"), None);
}
