//! An htpasswd user table as the BasicAuth stage checks it: constant-time
//! comparisons, the same work for an unknown user as for a known one, and
//! a small lock-free memory of credentials that verified (bcrypt costs
//! milliseconds per check; a browser sends the same header every request).

use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use coxswain_ir::{BasicAuth, BasicAuthUser, PasswordScheme};
use ring::hmac;
use subtle::ConstantTimeEq;

use super::apr1;

/// Credentials remembered as verified, per BasicAuth resource.
const REMEMBERED: usize = 1024;

pub struct UserTable {
    pub auth: BasicAuth,
    /// Keys the fingerprints of remembered credentials: random per table,
    /// so they mean nothing outside this process, and a changed file
    /// (a new table) forgets everything.
    key: hmac::Key,
    remembered: Box<[AtomicU64]>,
}

impl std::fmt::Debug for UserTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserTable")
            .field("users", &self.auth.users.len())
            .finish()
    }
}

/// What a check needs from the table, cheap to move to a blocking thread.
pub struct Check {
    user: Option<BasicAuthUser>,
    /// Verified against when the user is unknown, so the answer takes as
    /// long either way.
    decoy: Option<BasicAuthUser>,
    password: Vec<u8>,
}

impl UserTable {
    pub fn new(auth: &BasicAuth) -> Self {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng)
            .unwrap_or_else(|_| hmac::Key::new(hmac::HMAC_SHA256, b"coxswain-basic-auth"));
        UserTable {
            auth: auth.clone(),
            key,
            remembered: (0..REMEMBERED).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn fingerprint(&self, user: &str, password: &[u8]) -> u64 {
        let mut ctx = hmac::Context::with_key(&self.key);
        ctx.update(user.as_bytes());
        ctx.update(&[0]);
        ctx.update(password);
        let tag = ctx.sign();
        let mut first = [0u8; 8];
        first.copy_from_slice(tag.as_ref().get(..8).unwrap_or(&[0; 8]));
        // 0 marks an empty slot.
        u64::from_le_bytes(first).max(1)
    }

    fn slot(&self, fingerprint: u64) -> Option<&AtomicU64> {
        self.remembered
            .get((fingerprint % self.remembered.len() as u64) as usize)
    }

    /// These credentials verified before (against this very table).
    pub fn remembered(&self, user: &str, password: &[u8]) -> bool {
        let fp = self.fingerprint(user, password);
        self.slot(fp)
            .is_some_and(|s| s.load(Ordering::Relaxed) == fp)
    }

    pub fn remember(&self, user: &str, password: &[u8]) {
        let fp = self.fingerprint(user, password);
        if let Some(slot) = self.slot(fp) {
            slot.store(fp, Ordering::Relaxed);
        }
    }

    /// What verifying `user`/`password` takes.
    pub fn check(&self, user: &str, password: &[u8]) -> Check {
        let found = self.auth.users.iter().find(|u| u.name == user).cloned();
        Check {
            decoy: found
                .is_none()
                .then(|| self.auth.users.first().cloned())
                .flatten(),
            user: found,
            password: password.to_vec(),
        }
    }
}

impl Check {
    /// Whether a bcrypt hash is involved (worth a blocking thread).
    pub fn is_slow(&self) -> bool {
        self.user
            .as_ref()
            .or(self.decoy.as_ref())
            .is_some_and(|u| u.hash.scheme == PasswordScheme::Bcrypt)
    }

    pub fn verify(&self) -> bool {
        match (&self.user, &self.decoy) {
            (Some(user), _) => matches(user, &self.password),
            (None, Some(decoy)) => {
                let _ = matches(decoy, &self.password);
                false
            }
            (None, None) => false,
        }
    }
}

fn matches(user: &BasicAuthUser, password: &[u8]) -> bool {
    let hash = user.hash.text.expose();
    match user.hash.scheme {
        PasswordScheme::Bcrypt => bcrypt::verify(password, hash).unwrap_or(false),
        PasswordScheme::Apr1 => {
            let Some((salt, expected)) = hash
                .strip_prefix("$apr1$")
                .and_then(|rest| rest.split_once('$'))
            else {
                return false;
            };
            let got = apr1::checksum(password, salt.as_bytes());
            bool::from(got.as_bytes().ct_eq(expected.as_bytes()))
        }
        PasswordScheme::Sha1 => {
            let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, password);
            let got = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
            let expected = hash.strip_prefix("{SHA}").unwrap_or_default();
            bool::from(got.as_bytes().ct_eq(expected.as_bytes()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coxswain_ir::{HashText, PasswordHash};

    fn table(entries: &[(&str, PasswordScheme, &str)]) -> UserTable {
        UserTable::new(&BasicAuth {
            realm: "r".into(),
            forward_credentials: false,
            users: entries
                .iter()
                .map(|(name, scheme, text)| BasicAuthUser {
                    name: (*name).into(),
                    hash: PasswordHash {
                        scheme: *scheme,
                        text: HashText((*text).into()),
                    },
                })
                .collect(),
        })
    }

    #[test]
    fn each_scheme_verifies_its_password_and_nothing_else() {
        let bcrypt_hash = bcrypt::hash("secret", 4).unwrap();
        let t = table(&[
            ("b", PasswordScheme::Bcrypt, &bcrypt_hash),
            (
                "a",
                PasswordScheme::Apr1,
                "$apr1$saltsalt$LrttParrLPdxvgutaSXWJ0",
            ),
            // `printf secret | openssl sha1 -binary | base64`
            (
                "s",
                PasswordScheme::Sha1,
                "{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=",
            ),
        ]);
        for user in ["b", "a", "s"] {
            assert!(t.check(user, b"secret").verify(), "{user}");
            assert!(!t.check(user, b"Secret").verify(), "{user}");
            assert!(!t.check(user, b"").verify(), "{user}");
        }
        assert!(t.check("b", b"secret").is_slow());
        assert!(!t.check("a", b"secret").is_slow());
    }

    #[test]
    fn an_unknown_user_is_refused_after_the_same_kind_of_work() {
        let bcrypt_hash = bcrypt::hash("secret", 4).unwrap();
        let t = table(&[("b", PasswordScheme::Bcrypt, &bcrypt_hash)]);
        let check = t.check("nobody", b"secret");
        assert!(check.is_slow(), "the decoy is the first user's bcrypt hash");
        assert!(!check.verify(), "even with a known user's password");
    }

    #[test]
    fn remembered_credentials_are_exactly_the_ones_remembered() {
        let t = table(&[(
            "a",
            PasswordScheme::Apr1,
            "$apr1$saltsalt$LrttParrLPdxvgutaSXWJ0",
        )]);
        assert!(!t.remembered("a", b"secret"));
        t.remember("a", b"secret");
        assert!(t.remembered("a", b"secret"));
        assert!(!t.remembered("a", b"secret2"));
        assert!(!t.remembered("b", b"secret"));
        // Another table (a changed file) remembers nothing.
        let other = table(&[(
            "a",
            PasswordScheme::Apr1,
            "$apr1$saltsalt$LrttParrLPdxvgutaSXWJ0",
        )]);
        assert!(!other.remembered("a", b"secret"));
    }
}
