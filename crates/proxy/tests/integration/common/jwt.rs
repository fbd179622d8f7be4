//! ES256 tokens signed in the test (ring) and a JwtAuth that accepts them.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use coxswain_ir::{ExtensionSpec, Jwk, JwkKey, JwksSource, JwtAuth, KeyBytes, TokenHeader};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

pub const ISSUER: &str = "https://issuer.test";

pub struct Signer(EcdsaKeyPair);

impl Signer {
    pub fn new() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        Signer(
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                .unwrap(),
        )
    }

    /// A JwtAuth for [`ISSUER`] with this key, the token in
    /// `Authorization: Bearer`.
    pub fn auth(&self) -> ExtensionSpec {
        let point = self.0.public_key().as_ref();
        ExtensionSpec::JwtAuth(JwtAuth {
            issuer: ISSUER.into(),
            audiences: Vec::new(),
            jwks: JwksSource::Inline(vec![Jwk {
                kid: Some("k1".into()),
                alg: None,
                key: JwkKey::EcP256 {
                    x: KeyBytes(point[1..33].to_vec()),
                    y: KeyBytes(point[33..].to_vec()),
                },
            }]),
            from_headers: vec![TokenHeader {
                name: "authorization".into(),
                value_prefix: "Bearer ".into(),
            }],
            claim_to_headers: Vec::new(),
            forward_payload_header: None,
            forward: false,
            clock_skew_secs: 0,
        })
    }

    /// A token from [`ISSUER`] valid for ten minutes, with `extra` claims.
    pub fn token(&self, extra: Value) -> String {
        let exp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 600;
        let mut claims = json!({"iss": ISSUER, "exp": exp});
        if let (Some(all), Value::Object(more)) = (claims.as_object_mut(), extra) {
            all.extend(more);
        }
        let header = B64.encode(json!({"alg": "ES256", "kid": "k1"}).to_string());
        let signed = format!("{header}.{}", B64.encode(claims.to_string()));
        let sig = self
            .0
            .sign(&SystemRandom::new(), signed.as_bytes())
            .unwrap();
        format!("{signed}.{}", B64.encode(sig.as_ref()))
    }
}
