//! JwtAuth end to end: the real binary in standalone mode, curl with a
//! good token and with the tokens an attacker would try (unsigned,
//! HS256 keyed with the public key, another key, expired), then the key
//! set broken while it serves.

use crate::support;

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use support::*;

const ISSUER: &str = "https://issuer.test";

fn key_pair() -> EcdsaKeyPair {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap()
}

/// The public key as a JWK Set's JSON.
fn jwks(key: &EcdsaKeyPair) -> String {
    let point = key.public_key().as_ref();
    serde_json::json!({"keys": [{
        "kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
        "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..]),
    }]})
    .to_string()
}

fn signing_input(alg: &str, claims: &serde_json::Value) -> String {
    let header = serde_json::json!({"alg": alg, "kid": "k1"});
    format!(
        "{}.{}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    )
}

fn es256(key: &EcdsaKeyPair, claims: &serde_json::Value) -> String {
    let signed = signing_input("ES256", claims);
    let sig = key.sign(&SystemRandom::new(), signed.as_bytes()).unwrap();
    format!("{signed}.{}", B64.encode(sig.as_ref()))
}

fn claims(exp_from_now: i64) -> serde_json::Value {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    serde_json::json!({"iss": ISSUER, "sub": "alice", "aud": "api", "exp": now + exp_from_now})
}

fn resource(jwks: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: api
spec:
  parentRefs:
  - name: quickstart
  rules:
  - matches:
    - path: {{type: PathPrefix, value: /api}}
    filters:
    - type: ExtensionRef
      extensionRef: {{group: gateway.coxswain-labs.dev, kind: JwtAuth, name: api}}
    backendRefs:
    - name: echo
      port: ECHO_PORT
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: JwtAuth
metadata:
  name: api
spec:
  issuer: {ISSUER}
  audiences: [api]
  claimToHeaders:
  - {{claim: sub, header: x-user}}
  jwks:
    inline:
      jwks: '{jwks}'
"
    )
}

#[test]
fn good_tokens_pass_and_attacker_tokens_are_refused() {
    let config = TempDir::new("jwtauth");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    let key = key_pair();
    let write = |jwks: &str| resource(jwks).replace("ECHO_PORT", &echo_port.to_string());
    config.write("api.yaml", &write(&jwks(&key)));
    let gw = Gateway::start(config, http_port, echo_port);
    let url = gw.url("/api");
    let bearer = |token: &str| curl_get(&["-H", &format!("authorization: Bearer {token}")], &url);
    gw.wait_accepted("JwtAuth", "api", "True/Accepted");

    let good = es256(&key, &claims(300));
    let (code, body) = bearer(&good);
    assert_eq!(code, 200, "{body}");
    let echo = echo_json(&body);
    assert_eq!(
        echo["headers"]["X-User"],
        serde_json::json!(["alice"]),
        "{body}"
    );
    assert!(echo["headers"].get("Authorization").is_none(), "{body}");
    // A client's own x-user never survives.
    let (_, body) = curl_get(
        &[
            "-H",
            &format!("authorization: Bearer {good}"),
            "-H",
            "x-user: root",
        ],
        &url,
    );
    assert_eq!(
        echo_json(&body)["headers"]["X-User"],
        serde_json::json!(["alice"])
    );

    let unsigned = format!("{}.", signing_input("none", &claims(300)));
    let hs256 = {
        let signed = signing_input("HS256", &claims(300));
        let secret = jwks(&key);
        let tag = ring::hmac::sign(
            &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes()),
            signed.as_bytes(),
        );
        format!("{signed}.{}", B64.encode(tag.as_ref()))
    };
    let attacker = [
        ("unsigned", unsigned),
        ("HS256 with the public key", hs256),
        ("another key", es256(&key_pair(), &claims(300))),
        ("expired", es256(&key, &claims(-120))),
    ];
    for (what, token) in attacker {
        assert_eq!(bearer(&token).0, 401, "{what}");
    }
    let out = curl(&["-o", "/dev/null", "-D", "-", &url]);
    let headers = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(headers.starts_with("http/1.1 401"), "{headers}");
    assert!(
        headers.contains("www-authenticate: bearer realm=\"https://issuer.test\"\r\n"),
        "{headers}"
    );

    // A key set that no longer parses: fail closed, and the status says so.
    gw.config.write_atomic("api.yaml", &write("{\"keys\": 1}"));
    wait_for("the broken key set to refuse", || bearer(&good).0 == 503);
    gw.wait_accepted("JwtAuth", "api", "False/Invalid");
}
