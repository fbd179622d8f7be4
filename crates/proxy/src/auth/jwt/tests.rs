//! Tokens signed in the test with freshly generated keys (ring for EC and
//! Ed25519, `openssl genpkey` for RSA), checked by the real verifier.

use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use coxswain_ir::{Jwk, JwkKey, JwksSource, JwsAlg, JwtAuth, KeyBytes, TokenHeader};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair};
use serde_json::{Value, json};

use super::keys::KeySet;
use super::seen::{VerifiedSignatures, token_digest};
use super::token::{MAX_TOKEN_BYTES, verify};

const NOW: u64 = 1_900_000_000;
const ISSUER: &str = "https://issuer.test";

enum Signer {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
    Ed(Ed25519KeyPair),
}

impl Signer {
    fn sign(&self, alg: JwsAlg, message: &[u8]) -> Vec<u8> {
        let rng = SystemRandom::new();
        match self {
            Signer::Rsa(k) => {
                let padding: &'static dyn signature::RsaEncoding = match alg {
                    JwsAlg::RS256 => &signature::RSA_PKCS1_SHA256,
                    JwsAlg::RS384 => &signature::RSA_PKCS1_SHA384,
                    JwsAlg::RS512 => &signature::RSA_PKCS1_SHA512,
                    JwsAlg::PS256 => &signature::RSA_PSS_SHA256,
                    JwsAlg::PS384 => &signature::RSA_PSS_SHA384,
                    JwsAlg::PS512 => &signature::RSA_PSS_SHA512,
                    other => panic!("{other:?} is not RSA"),
                };
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(padding, &rng, message, &mut sig).unwrap();
                sig
            }
            Signer::Ec(k) => k.sign(&rng, message).unwrap().as_ref().to_vec(),
            Signer::Ed(k) => k.sign(message).as_ref().to_vec(),
        }
    }

    fn jwk(&self, kid: Option<&str>, alg: Option<JwsAlg>) -> Jwk {
        let key = match self {
            Signer::Rsa(k) => {
                let c = signature::RsaPublicKeyComponents::<Vec<u8>>::from(k.public());
                JwkKey::Rsa {
                    n: KeyBytes(c.n),
                    e: KeyBytes(c.e),
                }
            }
            Signer::Ec(k) => {
                let point = k.public_key().as_ref();
                let half = (point.len() - 1) / 2;
                let (x, y) = (point[1..=half].to_vec(), point[1 + half..].to_vec());
                if half == 32 {
                    JwkKey::EcP256 {
                        x: KeyBytes(x),
                        y: KeyBytes(y),
                    }
                } else {
                    JwkKey::EcP384 {
                        x: KeyBytes(x),
                        y: KeyBytes(y),
                    }
                }
            }
            Signer::Ed(k) => JwkKey::Ed25519 {
                x: KeyBytes(k.public_key().as_ref().to_vec()),
            },
        };
        Jwk {
            kid: kid.map(str::to_string),
            alg,
            key,
        }
    }
}

fn rsa() -> &'static Signer {
    static KEY: OnceLock<Signer> = OnceLock::new();
    KEY.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("coxswain-jwt-rsa-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (pem, der) = (dir.join("key.pem"), dir.join("key.der"));
        let run = |cmd: &mut std::process::Command| {
            let out = cmd.output().expect("openssl");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        run(std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
            ])
            .arg(&pem));
        // PKCS#8 DER, what ring's from_pkcs8 reads.
        run(std::process::Command::new("openssl")
            .args(["pkcs8", "-topk8", "-nocrypt", "-outform", "DER", "-in"])
            .arg(&pem)
            .arg("-out")
            .arg(&der));
        let path = der;
        let der = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        Signer::Rsa(RsaKeyPair::from_pkcs8(&der).unwrap())
    })
}

fn ec(alg: &'static signature::EcdsaSigningAlgorithm) -> Signer {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    Signer::Ec(EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap())
}

fn p256() -> Signer {
    ec(&signature::ECDSA_P256_SHA256_FIXED_SIGNING)
}

fn ed25519() -> Signer {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    Signer::Ed(Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap())
}

fn b64json(v: &Value) -> String {
    B64.encode(v.to_string())
}

/// A token with `header` and `claims`, signed by `signer` with `alg`.
fn token(signer: &Signer, alg: JwsAlg, header: Value, claims: Value) -> String {
    let signed = format!("{}.{}", b64json(&header), b64json(&claims));
    let sig = signer.sign(alg, signed.as_bytes());
    format!("{signed}.{}", B64.encode(sig))
}

fn claims() -> Value {
    json!({"iss": ISSUER, "sub": "alice", "exp": NOW + 600, "iat": NOW - 10})
}

fn auth(audiences: &[&str], skew: u64) -> JwtAuth {
    JwtAuth {
        issuer: ISSUER.into(),
        audiences: audiences.iter().map(|a| a.to_string()).collect(),
        jwks: JwksSource::Inline(Vec::new()),
        from_headers: vec![TokenHeader {
            name: "authorization".into(),
            value_prefix: "Bearer ".into(),
        }],
        claim_to_headers: Vec::new(),
        forward_payload_header: None,
        forward: false,
        clock_skew_secs: skew,
    }
}

fn check(token: &str, keys: &[Jwk], auth: &JwtAuth) -> Result<String, &'static str> {
    verify(
        token,
        &KeySet::new(keys),
        auth,
        NOW,
        &VerifiedSignatures::default(),
    )
    .map(|v| {
        v.claims
            .get("sub")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    })
}

fn name(alg: JwsAlg) -> String {
    format!("{alg:?}")
}

#[test]
fn every_algorithm_verifies_with_a_generated_key_and_fails_when_tampered() {
    let (p256, p384, ed) = (
        p256(),
        ec(&signature::ECDSA_P384_SHA384_FIXED_SIGNING),
        ed25519(),
    );
    use JwsAlg::*;
    let cases: [(&Signer, JwsAlg); 9] = [
        (rsa(), RS256),
        (rsa(), RS384),
        (rsa(), RS512),
        (rsa(), PS256),
        (rsa(), PS384),
        (rsa(), PS512),
        (&p256, ES256),
        (&p384, ES384),
        (&ed, EdDSA),
    ];
    for (signer, alg) in cases {
        let t = token(signer, alg, json!({"alg": name(alg)}), claims());
        let keys = [signer.jwk(None, None)];
        assert_eq!(
            check(&t, &keys, &auth(&[], 0)),
            Ok("alice".into()),
            "{alg:?}"
        );
        // Another payload under the same signature.
        let mut parts: Vec<&str> = t.split('.').collect();
        let forged = b64json(&json!({"iss": ISSUER, "sub": "mallory", "exp": NOW + 600}));
        parts[1] = &forged;
        assert_eq!(
            check(&parts.join("."), &keys, &auth(&[], 0)),
            Err("bad signature"),
            "{alg:?}"
        );
    }
}

#[test]
fn the_key_decides_the_algorithm() {
    let signer = rsa();
    let rs = token(signer, JwsAlg::RS256, json!({"alg": "RS256"}), claims());
    let ps = token(signer, JwsAlg::PS256, json!({"alg": "PS256"}), claims());
    let pinned = [signer.jwk(None, Some(JwsAlg::RS256))];
    assert!(check(&rs, &pinned, &auth(&[], 0)).is_ok());
    assert_eq!(
        check(&ps, &pinned, &auth(&[], 0)),
        Err("no key for the token's kid and alg"),
        "a key pinned to RS256 verifies nothing else"
    );
    // An EC P-256 key without alg: ES256 only; an ES384 header is refused.
    let p = p256();
    let es = token(&p, JwsAlg::ES256, json!({"alg": "ES384"}), claims());
    assert_eq!(
        check(&es, &[p.jwk(None, None)], &auth(&[], 0)),
        Err("no key for the token's kid and alg")
    );
    // An RSA token against an Ed25519 key.
    assert_eq!(
        check(&rs, &[ed25519().jwk(None, None)], &auth(&[], 0)),
        Err("no key for the token's kid and alg")
    );
}

#[test]
fn none_and_hmac_are_always_refused() {
    let signer = rsa();
    let keys = [signer.jwk(None, None)];
    let unsigned = format!(
        "{}.{}.",
        b64json(&json!({"alg": "none"})),
        b64json(&claims())
    );
    assert_eq!(
        check(&unsigned, &keys, &auth(&[], 0)),
        Err("algorithm not allowed")
    );
    // HS256 keyed with the public key's bytes: the classic confusion.
    let JwkKey::Rsa { n, .. } = &keys[0].key else {
        unreachable!()
    };
    let signed = format!(
        "{}.{}",
        b64json(&json!({"alg": "HS256"})),
        b64json(&claims())
    );
    let mac = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &n.0),
        signed.as_bytes(),
    );
    let hs = format!("{signed}.{}", B64.encode(mac.as_ref()));
    assert_eq!(
        check(&hs, &keys, &auth(&[], 0)),
        Err("algorithm not allowed")
    );
}

#[test]
fn kid_selects_the_key() {
    let (a, b) = (p256(), p256());
    let keys = [a.jwk(Some("a"), None), b.jwk(Some("b"), None)];
    let by_b = token(
        &b,
        JwsAlg::ES256,
        json!({"alg": "ES256", "kid": "b"}),
        claims(),
    );
    assert!(check(&by_b, &keys, &auth(&[], 0)).is_ok());
    let wrong = token(
        &b,
        JwsAlg::ES256,
        json!({"alg": "ES256", "kid": "a"}),
        claims(),
    );
    assert_eq!(check(&wrong, &keys, &auth(&[], 0)), Err("bad signature"));
    let unknown = token(
        &b,
        JwsAlg::ES256,
        json!({"alg": "ES256", "kid": "z"}),
        claims(),
    );
    assert_eq!(
        check(&unknown, &keys, &auth(&[], 0)),
        Err("no key for the token's kid and alg")
    );
    // Without a kid every fitting key is tried.
    let no_kid = token(&b, JwsAlg::ES256, json!({"alg": "ES256"}), claims());
    assert!(check(&no_kid, &keys, &auth(&[], 0)).is_ok());
}

#[test]
fn time_claims_with_and_without_skew() {
    let s = p256();
    let keys = [s.jwk(None, None)];
    let with = |c: Value| token(&s, JwsAlg::ES256, json!({"alg": "ES256"}), c);
    let expired = with(json!({"iss": ISSUER, "exp": NOW - 30}));
    assert_eq!(check(&expired, &keys, &auth(&[], 0)), Err("token expired"));
    assert!(
        check(&expired, &keys, &auth(&[], 60)).is_ok(),
        "within skew"
    );
    assert_eq!(check(&expired, &keys, &auth(&[], 20)), Err("token expired"));
    let no_exp = with(json!({"iss": ISSUER}));
    assert_eq!(
        check(&no_exp, &keys, &auth(&[], 60)),
        Err("token has no expiry")
    );
    let early = with(json!({"iss": ISSUER, "exp": NOW + 600, "nbf": NOW + 30}));
    assert_eq!(
        check(&early, &keys, &auth(&[], 0)),
        Err("token not yet valid")
    );
    assert!(check(&early, &keys, &auth(&[], 60)).is_ok());
    let future = with(json!({"iss": ISSUER, "exp": NOW + 600, "iat": NOW + 120}));
    assert_eq!(
        check(&future, &keys, &auth(&[], 60)),
        Err("token issued in the future")
    );
    let text_exp = with(json!({"iss": ISSUER, "exp": "tomorrow"}));
    assert_eq!(
        check(&text_exp, &keys, &auth(&[], 0)),
        Err("malformed time claim")
    );
}

#[test]
fn issuer_and_audience() {
    let s = p256();
    let keys = [s.jwk(None, None)];
    let with = |c: Value| token(&s, JwsAlg::ES256, json!({"alg": "ES256"}), c);
    let exp = NOW + 600;
    let other_iss = with(json!({"iss": "https://evil.test", "exp": exp}));
    assert_eq!(check(&other_iss, &keys, &auth(&[], 0)), Err("wrong issuer"));
    let one = with(json!({"iss": ISSUER, "exp": exp, "aud": "api"}));
    let many = with(json!({"iss": ISSUER, "exp": exp, "aud": ["web", "api"]}));
    let none = with(json!({"iss": ISSUER, "exp": exp}));
    let other = with(json!({"iss": ISSUER, "exp": exp, "aud": ["web"]}));
    let wants = auth(&["api", "cli"], 0);
    assert!(check(&one, &keys, &wants).is_ok());
    assert!(check(&many, &keys, &wants).is_ok());
    assert_eq!(check(&none, &keys, &wants), Err("wrong audience"));
    assert_eq!(check(&other, &keys, &wants), Err("wrong audience"));
    assert!(
        check(&other, &keys, &auth(&[], 0)).is_ok(),
        "no audiences: not checked"
    );
}

#[test]
fn malformed_oversized_and_critical_tokens_are_refused() {
    let s = p256();
    let keys = [s.jwk(None, None)];
    let a = auth(&[], 0);
    for bad in ["", "a.b", "a.b.c.d", "!!.!!.!!"] {
        assert!(check(bad, &keys, &a).is_err(), "{bad:?}");
    }
    let crit = token(
        &s,
        JwsAlg::ES256,
        json!({"alg": "ES256", "crit": ["exp"]}),
        claims(),
    );
    assert_eq!(check(&crit, &keys, &a), Err("unsupported critical header"));
    let huge = token(
        &s,
        JwsAlg::ES256,
        json!({"alg": "ES256"}),
        json!({"iss": ISSUER, "exp": NOW + 600, "pad": "x".repeat(MAX_TOKEN_BYTES)}),
    );
    assert_eq!(check(&huge, &keys, &a), Err("token too large"));
}

#[test]
fn a_remembered_signature_still_has_its_claims_checked_and_goes_with_its_keys() {
    let signer = p256();
    let keys = KeySet::new(&[signer.jwk(None, None)]);
    let seen = VerifiedSignatures::default();
    let auth = auth(&[], 0);
    let good = token(&signer, JwsAlg::ES256, json!({"alg": "ES256"}), claims());
    assert!(verify(&good, &keys, &auth, NOW, &seen).is_ok());
    assert!(seen.contains(&token_digest(&good), keys.id()), "remembered");
    assert!(verify(&good, &keys, &auth, NOW, &seen).is_ok());
    // Expiry moves on: the claims of a remembered token are checked anew.
    assert_eq!(
        verify(&good, &keys, &auth, NOW + 3_600, &seen).err(),
        Some("token expired")
    );
    // Keys rotated to a set without the signing key: checked afresh, refused.
    let rotated = KeySet::new(&[p256().jwk(None, None)]);
    assert_eq!(
        verify(&good, &rotated, &auth, NOW, &seen).err(),
        Some("bad signature")
    );
    // A refused signature is never remembered.
    let forged = format!("{}x", &good[..good.len() - 1]);
    assert!(verify(&forged, &keys, &auth, NOW, &seen).is_err());
    assert!(!seen.contains(&token_digest(&forged), keys.id()));
}
