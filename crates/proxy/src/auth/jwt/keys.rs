//! A JWK Set turned into what `ring` verifies with, once per set (when the
//! resource is compiled or a remote set is fetched), never per request.

use std::sync::atomic::{AtomicU64, Ordering};

use coxswain_ir::{Jwk, JwkKey, JwsAlg};
use ring::signature::{
    self, ECDSA_P256_SHA256_FIXED, ECDSA_P384_SHA384_FIXED, ED25519, RsaPublicKeyComponents,
    UnparsedPublicKey,
};

/// One key, ready to verify.
#[derive(Debug)]
struct VerifyingKey {
    jwk: Jwk,
    material: Material,
}

#[derive(Debug)]
enum Material {
    Rsa(RsaPublicKeyComponents<Vec<u8>>),
    /// An uncompressed SEC1 point (`04 || x || y`).
    Ec(Vec<u8>),
    Ed25519(Vec<u8>),
}

/// The keys of one set.
#[derive(Debug)]
pub struct KeySet {
    keys: Vec<VerifyingKey>,
    /// Unique to this set in this process: what a signature verified
    /// with it is remembered under ([`super::seen`]).
    id: u64,
}

/// The next [`KeySet::id`].
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Why no key verified a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRefusal {
    /// No key has the token's `kid` and accepts its `alg`.
    NoKey,
    BadSignature,
}

impl KeySet {
    pub fn new(jwks: &[Jwk]) -> Self {
        KeySet {
            keys: jwks
                .iter()
                .map(|jwk| VerifyingKey {
                    material: material(&jwk.key),
                    jwk: jwk.clone(),
                })
                .collect(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Checks `signature` over `message`: with the key named `kid` when
    /// the token names one, else with every key whose algorithm is `alg`.
    pub fn verify(
        &self,
        alg: JwsAlg,
        kid: Option<&str>,
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), KeyRefusal> {
        let mut candidates = self
            .keys
            .iter()
            .filter(|k| kid.is_none_or(|kid| k.jwk.kid.as_deref() == Some(kid)))
            .filter(|k| k.jwk.accepts(alg))
            .peekable();
        if candidates.peek().is_none() {
            return Err(KeyRefusal::NoKey);
        }
        if candidates.any(|k| k.verify(alg, message, signature)) {
            Ok(())
        } else {
            Err(KeyRefusal::BadSignature)
        }
    }
}

fn material(key: &JwkKey) -> Material {
    match key {
        JwkKey::Rsa { n, e } => Material::Rsa(RsaPublicKeyComponents {
            n: n.0.clone(),
            e: e.0.clone(),
        }),
        JwkKey::EcP256 { x, y } | JwkKey::EcP384 { x, y } => {
            let mut point = Vec::with_capacity(1 + x.0.len() + y.0.len());
            point.push(0x04);
            point.extend_from_slice(&x.0);
            point.extend_from_slice(&y.0);
            Material::Ec(point)
        }
        JwkKey::Ed25519 { x } => Material::Ed25519(x.0.clone()),
    }
}

impl VerifyingKey {
    fn verify(&self, alg: JwsAlg, message: &[u8], sig: &[u8]) -> bool {
        let rsa = |params: &'static signature::RsaParameters| match &self.material {
            Material::Rsa(c) => c.verify(params, message, sig).is_ok(),
            _ => false,
        };
        // `accepts` already matched the algorithm to the key type; the
        // curve of an EC key is its type (P-256 keys accept only ES256).
        match alg {
            JwsAlg::RS256 => rsa(&signature::RSA_PKCS1_2048_8192_SHA256),
            JwsAlg::RS384 => rsa(&signature::RSA_PKCS1_2048_8192_SHA384),
            JwsAlg::RS512 => rsa(&signature::RSA_PKCS1_2048_8192_SHA512),
            JwsAlg::PS256 => rsa(&signature::RSA_PSS_2048_8192_SHA256),
            JwsAlg::PS384 => rsa(&signature::RSA_PSS_2048_8192_SHA384),
            JwsAlg::PS512 => rsa(&signature::RSA_PSS_2048_8192_SHA512),
            JwsAlg::ES256 | JwsAlg::ES384 | JwsAlg::EdDSA => {
                let (algorithm, bytes): (&'static dyn signature::VerificationAlgorithm, _) =
                    match (&self.material, alg) {
                        (Material::Ec(p), JwsAlg::ES256) => (&ECDSA_P256_SHA256_FIXED, p),
                        (Material::Ec(p), JwsAlg::ES384) => (&ECDSA_P384_SHA384_FIXED, p),
                        (Material::Ed25519(x), JwsAlg::EdDSA) => (&ED25519, x),
                        _ => return false,
                    };
                UnparsedPublicKey::new(algorithm, bytes)
                    .verify(message, sig)
                    .is_ok()
            }
        }
    }
}
