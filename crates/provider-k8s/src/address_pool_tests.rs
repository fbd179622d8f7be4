use std::collections::BTreeMap;
use std::net::IpAddr;

use coxswain_api::ObjectKey;

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("default", name)
}

fn any() -> AddressRequest {
    AddressRequest {
        wants_any: true,
        ..AddressRequest::default()
    }
}

fn pool(s: &str) -> AddressPool {
    s.parse().unwrap()
}

#[test]
fn parses_and_normalises_cidrs() {
    assert_eq!(pool("10.1.2.3/24").to_string(), "10.1.2.0/24");
    assert_eq!(pool("fd00::5/120").to_string(), "fd00::/120");
    assert!("10.0.0.0".parse::<AddressPool>().is_err());
    assert!("10.0.0.0/33".parse::<AddressPool>().is_err());
    assert!("nope/8".parse::<AddressPool>().is_err());
    assert!("::/0".parse::<AddressPool>().is_ok());
}

#[test]
fn contains_skips_network_and_broadcast() {
    let p = pool("10.0.0.0/30");
    assert!(!p.contains(ip("10.0.0.0")));
    assert!(p.contains(ip("10.0.0.1")));
    assert!(p.contains(ip("10.0.0.2")));
    assert!(!p.contains(ip("10.0.0.3")));
    assert!(!p.contains(ip("::1")));
    assert!(pool("10.0.0.7/32").contains(ip("10.0.0.7")));
}

#[test]
fn lowest_free_in_key_order() {
    let requests: BTreeMap<_, _> = [(key("b"), any()), (key("a"), any())].into();
    let got = allocate(&pool("10.0.0.0/24"), &requests);
    assert_eq!(got[&key("a")], Ok(vec![ip("10.0.0.1")]));
    assert_eq!(got[&key("b")], Ok(vec![ip("10.0.0.2")]));
}

#[test]
fn current_status_address_is_kept_when_free() {
    let mut b = any();
    b.current = vec![ip("10.0.0.9")];
    let requests: BTreeMap<_, _> = [(key("a"), any()), (key("b"), b)].into();
    let got = allocate(&pool("10.0.0.0/24"), &requests);
    assert_eq!(got[&key("a")], Ok(vec![ip("10.0.0.1")]));
    assert_eq!(got[&key("b")], Ok(vec![ip("10.0.0.9")]));
}

#[test]
fn current_address_taken_by_explicit_request_moves() {
    let mut a = any();
    a.current = vec![ip("10.0.0.1")];
    let b = AddressRequest {
        explicit: vec![ip("10.0.0.1")],
        ..AddressRequest::default()
    };
    let requests: BTreeMap<_, _> = [(key("a"), a), (key("b"), b)].into();
    let got = allocate(&pool("10.0.0.0/24"), &requests);
    assert_eq!(got[&key("b")], Ok(vec![ip("10.0.0.1")]));
    assert_eq!(got[&key("a")], Ok(vec![ip("10.0.0.2")]));
}

#[test]
fn explicit_outside_pool_or_taken_is_unusable() {
    let explicit = |s: &str| AddressRequest {
        explicit: vec![ip(s)],
        ..AddressRequest::default()
    };
    let requests: BTreeMap<_, _> = [
        (key("a"), explicit("10.0.0.5")),
        (key("b"), explicit("10.0.0.5")),
        (key("c"), explicit("192.0.2.1")),
    ]
    .into();
    let got = allocate(&pool("10.0.0.0/24"), &requests);
    assert_eq!(got[&key("a")], Ok(vec![ip("10.0.0.5")]));
    assert!(got[&key("b")].as_ref().unwrap_err().contains("default/a"));
    assert!(got[&key("c")].as_ref().unwrap_err().contains("outside"));
}

#[test]
fn explicit_plus_empty_value_gets_both() {
    let request = AddressRequest {
        explicit: vec![ip("10.0.0.7")],
        wants_any: true,
        current: vec![],
    };
    let requests: BTreeMap<_, _> = [(key("a"), request)].into();
    let got = allocate(&pool("10.0.0.0/24"), &requests);
    assert_eq!(got[&key("a")], Ok(vec![ip("10.0.0.1"), ip("10.0.0.7")]));
}

#[test]
fn exhausted_pool_is_unusable_and_stable() {
    let requests: BTreeMap<_, _> = [(key("a"), any()), (key("b"), any()), (key("c"), any())].into();
    let p = pool("10.0.0.0/30");
    let got = allocate(&p, &requests);
    assert_eq!(got[&key("a")], Ok(vec![ip("10.0.0.1")]));
    assert_eq!(got[&key("b")], Ok(vec![ip("10.0.0.2")]));
    assert!(got[&key("c")].as_ref().unwrap_err().contains("exhausted"));
    assert_eq!(allocate(&p, &requests), got);
}

#[test]
fn ipv6_pool() {
    let requests: BTreeMap<_, _> = [(key("a"), any())].into();
    let got = allocate(&pool("fd00::/120"), &requests);
    assert_eq!(got[&key("a")], Ok(vec![ip("fd00::1")]));
}
