use std::time::{Duration, SystemTime};

use coxswain_api::Object;
use coxswain_api::crds::CoxswainGatewayParametersSpec;
use serde_json::json;

use super::*;
use crate::pool::tests::gateway;

const DAY: Duration = Duration::from_secs(24 * 3600);

fn issuer() -> ProxyCredentials {
    ProxyCredentials::new(Arc::new(Authority::generate(SystemTime::now()).unwrap()))
}

fn desired(issuer: &mut ProxyCredentials, snapshot: &Snapshot, now: SystemTime) -> Secret {
    let gw = gateway(json!({}));
    let key = ObjectKey::new("apps", "web");
    let spec = CoxswainGatewayParametersSpec::default();
    let mut secrets = issuer.desired(snapshot, [(&key, &gw, &spec)].into_iter(), now);
    assert_eq!(secrets.len(), 1);
    secrets.remove(0)
}

fn live(secret: &Secret) -> Snapshot {
    let mut snapshot = Snapshot::default();
    snapshot.insert(Object::Secret(Arc::new(secret.clone())));
    snapshot
}

#[test]
fn issues_once_names_the_gateway_and_is_owned_by_it() {
    let mut issuer = issuer();
    let now = SystemTime::now();
    let first = desired(&mut issuer, &Snapshot::default(), now);
    assert_eq!(first.metadata.name.as_deref(), Some("web-coxswain-stream"));
    assert_eq!(first.metadata.namespace.as_deref(), Some("apps"));
    let owner = &first.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("Gateway", "u-1")
    );
    let issued = credentials(&first).unwrap();
    assert_eq!(issued.ca_pem, issuer.authority().cert_pem());
    let (_, pem) = x509_parser::pem::parse_x509_pem(issued.cert_pem.as_bytes()).unwrap();
    let identity = GatewayIdentity::from_certificate(&pem.contents).unwrap();
    assert_eq!(identity.to_string(), "apps/web");
    // The watch has not shown our write yet: the same credentials again,
    // not a new certificate per translation.
    assert_eq!(desired(&mut issuer, &Snapshot::default(), now), first);
}

#[test]
fn a_fresh_live_secret_is_kept() {
    let mut issuer = issuer();
    let now = SystemTime::now();
    let first = desired(&mut issuer, &Snapshot::default(), now);
    let snapshot = live(&first);
    let again = desired(&mut issuer, &snapshot, now + DAY);
    assert_eq!(again.data, first.data);
    assert!(secret_up_to_date(
        snapshot.secrets.values().next().unwrap(),
        &again
    ));
}

#[test]
fn renewed_when_two_thirds_of_its_life_are_gone() {
    let mut issuer = issuer();
    let now = SystemTime::now();
    let first = desired(&mut issuer, &Snapshot::default(), now);
    let later = now + 21 * DAY;
    let renewed = desired(&mut issuer, &live(&first), later);
    assert_ne!(renewed.data, first.data);
    assert!(
        !issuer
            .authority()
            .needs_renewal(&credentials(&renewed).unwrap().cert_pem, later)
    );
}

#[test]
fn a_secret_from_another_authority_is_replaced() {
    let now = SystemTime::now();
    let foreign = desired(&mut issuer(), &Snapshot::default(), now);
    let mut ours = issuer();
    let replaced = desired(&mut ours, &live(&foreign), now);
    assert_ne!(replaced.data, foreign.data);
    assert_eq!(
        credentials(&replaced).unwrap().ca_pem,
        ours.authority().cert_pem()
    );
}
