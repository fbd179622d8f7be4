//! BasicAuth: the users of an htpasswd file, as the proxy checks them.
//! Password hashes never leave the process through serialisation (the
//! admin `/config`, `coxswain check`): they are written redacted.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::REDACTED_KEY;

/// Requests must carry `Authorization: Basic` credentials of one of
/// `users`; else 401 with a challenge naming `realm`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BasicAuth {
    /// Validated: no `"`, `\` or control characters.
    pub realm: String,
    /// Keep the `Authorization` header on the way upstream.
    pub forward_credentials: bool,
    /// Unique names, in file order.
    pub users: Vec<BasicAuthUser>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BasicAuthUser {
    pub name: String,
    pub hash: PasswordHash,
}

/// How an htpasswd entry's password was hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PasswordScheme {
    /// `$2a$`, `$2b$`, `$2y$`.
    Bcrypt,
    /// `$apr1$`: Apache's MD5-crypt.
    Apr1,
    /// `{SHA}`: unsalted SHA-1, base64. Weak.
    Sha1,
}

/// One entry's hash: its scheme and the text as the file has it (with
/// its `$2y$…`, `$apr1$…` or `{SHA}` prefix), already checked to be
/// well formed for the scheme.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasswordHash {
    pub scheme: PasswordScheme,
    pub text: HashText,
}

/// A password hash whose `Debug` and `Serialize` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct HashText(pub Arc<str>);

impl HashText {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for HashText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED_KEY)
    }
}

impl Serialize for HashText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if crate::reveal::is_revealing() {
            return s.serialize_str(&self.0);
        }
        s.serialize_str(REDACTED_KEY)
    }
}

impl<'de> Deserialize<'de> for HashText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| HashText(s.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_redacted_in_json_and_debug_but_compared_in_full() {
        let user = |text: &str| BasicAuthUser {
            name: "alice".into(),
            hash: PasswordHash {
                scheme: PasswordScheme::Apr1,
                text: HashText(text.into()),
            },
        };
        let a = user("$apr1$salt$SECRETHASH");
        let json = serde_json::to_string(&a).unwrap();
        assert!(!json.contains("SECRETHASH"), "{json}");
        assert!(json.contains("alice"), "{json}");
        assert!(!format!("{a:?}").contains("SECRETHASH"));
        assert_eq!(a.hash.text.expose(), "$apr1$salt$SECRETHASH");
        // A rotated hash is a different IR entry (and a fresh proxy cache).
        assert_ne!(a, user("$apr1$salt$OTHERHASH"));
    }
}
