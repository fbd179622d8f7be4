//! JSON Web Key Sets (RFC 7517) as JwtAuth verifies with them: the keys'
//! public components, decoded and checked once (when the resource is
//! translated, or a remote set is fetched), never per request. Here
//! because the translator (inline sets) and the proxy (fetched sets) must
//! read them the same way.
//!
//! Only asymmetric signature keys are kept. A key that cannot be used
//! here (another `kty` or curve, an algorithm we do not verify, `use`
//! other than `sig`) is skipped; a key of a kind we do use but with
//! broken components, or any private key material, makes the whole set
//! invalid: that is a mistake worth saying rather than hiding.

use std::fmt;

use base64::Engine as _;
use base64::alphabet::URL_SAFE;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Upper bound on a key set's JSON text.
pub const MAX_JWKS_BYTES: usize = 256 * 1024;
/// Upper bound on the keys in a set.
pub const MAX_JWKS_KEYS: usize = 64;

/// base64url, padding optional (key sets in the wild carry either).
const B64: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The JWS algorithms JwtAuth verifies. `none` and the HMAC algorithms
/// are not here, so no token or key can ever select them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JwsAlg {
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    ES256,
    ES384,
    EdDSA,
}

impl JwsAlg {
    /// The algorithm a JOSE `alg` names, if it is one we verify.
    pub fn from_name(name: &str) -> Option<JwsAlg> {
        Some(match name {
            "RS256" => JwsAlg::RS256,
            "RS384" => JwsAlg::RS384,
            "RS512" => JwsAlg::RS512,
            "PS256" => JwsAlg::PS256,
            "PS384" => JwsAlg::PS384,
            "PS512" => JwsAlg::PS512,
            "ES256" => JwsAlg::ES256,
            "ES384" => JwsAlg::ES384,
            "EdDSA" => JwsAlg::EdDSA,
            _ => return None,
        })
    }
}

/// Decoded key bytes, written in the IR as base64url.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyBytes(pub Vec<u8>);

impl fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", B64.encode(&self.0))
    }
}

impl Serialize for KeyBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&B64.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for KeyBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        B64.decode(text.as_bytes())
            .map(KeyBytes)
            .map_err(serde::de::Error::custom)
    }
}

/// A public key's components.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JwkKey {
    /// Modulus and exponent, big-endian without leading zeros.
    Rsa {
        n: KeyBytes,
        e: KeyBytes,
    },
    /// Affine coordinates, 32 bytes each.
    EcP256 {
        x: KeyBytes,
        y: KeyBytes,
    },
    /// Affine coordinates, 48 bytes each.
    EcP384 {
        x: KeyBytes,
        y: KeyBytes,
    },
    Ed25519 {
        x: KeyBytes,
    },
}

impl JwkKey {
    /// The algorithms a key of this type can verify.
    pub fn algs(&self) -> &'static [JwsAlg] {
        use JwsAlg::*;
        match self {
            JwkKey::Rsa { .. } => &[RS256, RS384, RS512, PS256, PS384, PS512],
            JwkKey::EcP256 { .. } => &[ES256],
            JwkKey::EcP384 { .. } => &[ES384],
            JwkKey::Ed25519 { .. } => &[EdDSA],
        }
    }
}

/// One verification key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
    /// Pinned by the key set: the only algorithm this key verifies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alg: Option<JwsAlg>,
    pub key: JwkKey,
}

impl Jwk {
    /// Whether a token signed with `alg` may be checked with this key: the
    /// key's own `alg` when it has one, else its type's algorithms. The
    /// token never chooses an algorithm the key was not made for.
    pub fn accepts(&self, alg: JwsAlg) -> bool {
        match self.alg {
            Some(pinned) => pinned == alg,
            None => self.key.algs().contains(&alg),
        }
    }
}

/// Why a key set cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JwksError {
    TooLarge(usize),
    NotJson(String),
    TooManyKeys(usize),
    /// The set holds no key JwtAuth can verify with.
    NoUsableKey,
    /// Key `index` (0-based) is broken.
    Key {
        index: usize,
        reason: String,
    },
}

impl fmt::Display for JwksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JwksError::TooLarge(n) => {
                write!(f, "key set is {n} bytes, more than {MAX_JWKS_BYTES}")
            }
            JwksError::NotJson(e) => write!(f, "key set is not a JWK Set: {e}"),
            JwksError::TooManyKeys(n) => {
                write!(f, "key set has {n} keys, more than {MAX_JWKS_KEYS}")
            }
            JwksError::NoUsableKey => write!(
                f,
                "key set has no usable signature key (RSA, EC P-256/P-384 or Ed25519)"
            ),
            JwksError::Key { index, reason } => write!(f, "keys[{index}]: {reason}"),
        }
    }
}

impl std::error::Error for JwksError {}

#[derive(Deserialize)]
struct RawSet {
    keys: Vec<RawJwk>,
}

#[derive(Deserialize)]
struct RawJwk {
    kty: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    alg: Option<String>,
    #[serde(default, rename = "use")]
    use_: Option<String>,
    #[serde(default)]
    key_ops: Option<Vec<String>>,
    #[serde(default)]
    crv: Option<String>,
    #[serde(default)]
    n: Option<String>,
    #[serde(default)]
    e: Option<String>,
    #[serde(default)]
    x: Option<String>,
    #[serde(default)]
    y: Option<String>,
    #[serde(default)]
    d: Option<serde::de::IgnoredAny>,
}

/// The usable keys of a JWK Set's JSON text.
pub fn parse_jwks(json: &str) -> Result<Vec<Jwk>, JwksError> {
    if json.len() > MAX_JWKS_BYTES {
        return Err(JwksError::TooLarge(json.len()));
    }
    let set: RawSet = serde_json::from_str(json).map_err(|e| JwksError::NotJson(e.to_string()))?;
    if set.keys.len() > MAX_JWKS_KEYS {
        return Err(JwksError::TooManyKeys(set.keys.len()));
    }
    let mut keys = Vec::new();
    for (index, raw) in set.keys.into_iter().enumerate() {
        match parse_key(raw) {
            Ok(Some(key)) => keys.push(key),
            Ok(None) => {}
            Err(reason) => return Err(JwksError::Key { index, reason }),
        }
    }
    if keys.is_empty() {
        return Err(JwksError::NoUsableKey);
    }
    Ok(keys)
}

/// `Ok(None)`: a key that is fine but not one we verify with.
fn parse_key(raw: RawJwk) -> Result<Option<Jwk>, String> {
    if raw.d.is_some() {
        return Err("holds private key material (\"d\"); publish only the public key".into());
    }
    if raw.use_.as_deref().is_some_and(|u| u != "sig") {
        return Ok(None);
    }
    if raw
        .key_ops
        .as_ref()
        .is_some_and(|ops| !ops.iter().any(|op| op == "verify"))
    {
        return Ok(None);
    }
    let alg = match raw.alg.as_deref() {
        None => None,
        Some(name) => match JwsAlg::from_name(name) {
            Some(alg) => Some(alg),
            // HS256, none, RSA-OAEP, ES512, ...: never verified here.
            None => return Ok(None),
        },
    };
    let field = |name: &str, value: &Option<String>| -> Result<Vec<u8>, String> {
        let text = value.as_deref().ok_or_else(|| format!("no \"{name}\""))?;
        B64.decode(text.as_bytes())
            .map_err(|e| format!("\"{name}\" is not base64url: {e}"))
    };
    let fixed = |name: &str, value: &Option<String>, len: usize| -> Result<KeyBytes, String> {
        let bytes = field(name, value)?;
        if bytes.len() != len {
            return Err(format!("\"{name}\" is {} bytes, not {len}", bytes.len()));
        }
        Ok(KeyBytes(bytes))
    };
    let key = match (raw.kty.as_str(), raw.crv.as_deref()) {
        ("RSA", _) => {
            let n = strip_zeros(field("n", &raw.n)?);
            let e = strip_zeros(field("e", &raw.e)?);
            if !(256..=1024).contains(&n.len()) {
                return Err(format!(
                    "RSA modulus of {} bits; 2048 to 8192 are accepted",
                    n.len() * 8
                ));
            }
            if e.is_empty() || e.len() > 4 {
                return Err("RSA exponent out of range".into());
            }
            JwkKey::Rsa {
                n: KeyBytes(n),
                e: KeyBytes(e),
            }
        }
        ("EC", Some("P-256")) => JwkKey::EcP256 {
            x: fixed("x", &raw.x, 32)?,
            y: fixed("y", &raw.y, 32)?,
        },
        ("EC", Some("P-384")) => JwkKey::EcP384 {
            x: fixed("x", &raw.x, 48)?,
            y: fixed("y", &raw.y, 48)?,
        },
        ("OKP", Some("Ed25519")) => JwkKey::Ed25519 {
            x: fixed("x", &raw.x, 32)?,
        },
        // oct (symmetric), other curves, other key types.
        _ => return Ok(None),
    };
    if let Some(alg) = alg
        && !key.algs().contains(&alg)
    {
        return Err(format!("\"alg\" {alg:?} does not fit a {} key", raw.kty));
    }
    Ok(Some(Jwk {
        kid: raw.kid,
        alg,
        key,
    }))
}

fn strip_zeros(mut bytes: Vec<u8>) -> Vec<u8> {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    bytes.drain(..zeros);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        B64.encode(bytes)
    }

    fn rsa_json(extra: &str) -> String {
        let mut n = vec![0u8];
        n.extend(std::iter::repeat_n(0xC5, 256));
        format!(r#"{{"kty":"RSA","n":"{}","e":"AQAB"{extra}}}"#, b64(&n))
    }

    fn set(keys: &[String]) -> String {
        format!(r#"{{"keys":[{}]}}"#, keys.join(","))
    }

    #[test]
    fn parses_each_key_type_and_keeps_kid_and_alg() {
        let ec = format!(
            r#"{{"kty":"EC","crv":"P-256","kid":"e1","x":"{}","y":"{}","use":"sig"}}"#,
            b64(&[1; 32]),
            b64(&[2; 32])
        );
        let ec384 = format!(
            r#"{{"kty":"EC","crv":"P-384","x":"{}","y":"{}"}}"#,
            b64(&[1; 48]),
            b64(&[2; 48])
        );
        let ed = format!(
            r#"{{"kty":"OKP","crv":"Ed25519","alg":"EdDSA","x":"{}"}}"#,
            b64(&[3; 32])
        );
        let keys = parse_jwks(&set(&[rsa_json(r#","alg":"PS256""#), ec, ec384, ed])).unwrap();
        assert_eq!(keys.len(), 4);
        match &keys[0].key {
            JwkKey::Rsa { n, e } => {
                assert_eq!(n.0.len(), 256, "leading zero stripped");
                assert_eq!(e.0, [1, 0, 1]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(keys[0].alg, Some(JwsAlg::PS256));
        assert_eq!(keys[1].kid.as_deref(), Some("e1"));
        assert!(matches!(keys[2].key, JwkKey::EcP384 { .. }));
        assert!(matches!(keys[3].key, JwkKey::Ed25519 { .. }));
    }

    #[test]
    fn a_key_accepts_only_its_own_alg_or_its_types_algs() {
        let keys = parse_jwks(&set(&[rsa_json(r#","alg":"RS256""#), rsa_json("")])).unwrap();
        assert!(keys[0].accepts(JwsAlg::RS256));
        assert!(!keys[0].accepts(JwsAlg::PS256), "pinned alg");
        assert!(!keys[0].accepts(JwsAlg::ES256));
        assert!(keys[1].accepts(JwsAlg::PS512));
        assert!(!keys[1].accepts(JwsAlg::EdDSA), "not an RSA alg");
    }

    #[test]
    fn unusable_keys_are_skipped_and_an_empty_result_is_an_error() {
        let oct = r#"{"kty":"oct","k":"c2VjcmV0"}"#.to_string();
        let enc = rsa_json(r#","use":"enc""#);
        let hs = rsa_json(r#","alg":"HS256""#);
        let none = rsa_json(r#","alg":"none""#);
        let x25519 = format!(r#"{{"kty":"OKP","crv":"X25519","x":"{}"}}"#, b64(&[1; 32]));
        let ops = rsa_json(r#","key_ops":["encrypt"]"#);
        assert_eq!(
            parse_jwks(&set(&[oct.clone(), enc, hs, none, x25519, ops])),
            Err(JwksError::NoUsableKey)
        );
        assert_eq!(parse_jwks(&set(&[oct, rsa_json("")])).unwrap().len(), 1);
        assert_eq!(parse_jwks(r#"{"keys":[]}"#), Err(JwksError::NoUsableKey));
    }

    #[test]
    fn broken_keys_and_sets_are_errors() {
        let bad = |json: &str| parse_jwks(json).unwrap_err();
        assert!(matches!(bad("not json"), JwksError::NotJson(_)));
        assert!(matches!(bad(r#"{"k":[]}"#), JwksError::NotJson(_)));
        let short_ec = format!(
            r#"{{"kty":"EC","crv":"P-256","x":"{}","y":"{}"}}"#,
            b64(&[1; 31]),
            b64(&[2; 32])
        );
        assert!(matches!(
            bad(&set(&[short_ec])),
            JwksError::Key { index: 0, .. }
        ));
        let small_rsa = format!(r#"{{"kty":"RSA","n":"{}","e":"AQAB"}}"#, b64(&[7; 128]));
        assert!(matches!(bad(&set(&[small_rsa])), JwksError::Key { .. }));
        let private = rsa_json(r#","d":"AQAB""#);
        assert!(matches!(bad(&set(&[private])), JwksError::Key { .. }));
        let mismatch = rsa_json(r#","alg":"ES256""#);
        assert!(matches!(bad(&set(&[mismatch])), JwksError::Key { .. }));
        let not_b64 = r#"{"kty":"RSA","n":"!!","e":"AQAB"}"#.to_string();
        assert!(matches!(bad(&set(&[not_b64])), JwksError::Key { .. }));
        let many = vec![rsa_json(""); MAX_JWKS_KEYS + 1];
        assert_eq!(bad(&set(&many)), JwksError::TooManyKeys(MAX_JWKS_KEYS + 1));
        let huge = " ".repeat(MAX_JWKS_BYTES + 1);
        assert!(matches!(bad(&huge), JwksError::TooLarge(_)));
    }

    #[test]
    fn key_bytes_round_trip_as_base64url() {
        let key = Jwk {
            kid: None,
            alg: None,
            key: JwkKey::Ed25519 {
                x: KeyBytes(vec![0xfb; 32]),
            },
        };
        let json = serde_json::to_string(&key).unwrap();
        assert!(json.contains("-_v7"), "{json}");
        assert_eq!(serde_json::from_str::<Jwk>(&json).unwrap(), key);
    }
}
