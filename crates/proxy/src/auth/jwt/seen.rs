//! Signatures already verified. A token whose SHA-256 digest is here,
//! under the same key set, skips the signature check, the costly part
//! (an RSA-2048 verification is tens of microseconds); its header and
//! claims are still checked on every request, since expiry moves on.
//!
//! Only good signatures are remembered, keyed by the key set's id, so a
//! rotated or refetched set starts empty. Direct-mapped and lock-free: a
//! slot holds one digest; a collision replaces it (the worst case is a
//! signature checked again).

use arc_swap::ArcSwapOption;
use ring::digest::{SHA256, digest};
use std::sync::Arc;

/// Slots per JwtAuth resource: 8 bytes each.
pub const SLOTS: usize = 4096;

/// A token's SHA-256.
pub type Digest = [u8; 32];

#[derive(Debug)]
struct Seen {
    digest: Digest,
    keys: u64,
}

/// The verified signatures of one JwtAuth resource.
#[derive(Debug)]
pub struct VerifiedSignatures {
    slots: Box<[ArcSwapOption<Seen>]>,
}

impl Default for VerifiedSignatures {
    fn default() -> Self {
        VerifiedSignatures::with_slots(SLOTS)
    }
}

impl VerifiedSignatures {
    pub fn with_slots(slots: usize) -> Self {
        VerifiedSignatures {
            slots: (0..slots.max(1)).map(|_| ArcSwapOption::empty()).collect(),
        }
    }

    /// The slot of `digest` (always one: there is at least one slot).
    fn slot(&self, digest: &Digest) -> Option<&ArcSwapOption<Seen>> {
        let first = u64::from_le_bytes(*digest.first_chunk::<8>()?);
        let index = usize::try_from(first % self.slots.len() as u64).ok()?;
        self.slots.get(index)
    }

    /// Was this token's signature verified with the key set `keys`?
    pub fn contains(&self, digest: &Digest, keys: u64) -> bool {
        self.slot(digest).is_some_and(|slot| {
            slot.load()
                .as_ref()
                .is_some_and(|seen| seen.keys == keys && seen.digest == *digest)
        })
    }

    /// Remembers a signature `keys` verified.
    pub fn insert(&self, digest: Digest, keys: u64) {
        if let Some(slot) = self.slot(&digest) {
            slot.store(Some(Arc::new(Seen { digest, keys })));
        }
    }
}

/// The digest a token is remembered by.
pub fn token_digest(token: &str) -> Digest {
    let mut out = [0u8; 32];
    for (o, b) in out
        .iter_mut()
        .zip(digest(&SHA256, token.as_bytes()).as_ref())
    {
        *o = *b;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_a_digest_under_its_key_set_only() {
        let seen = VerifiedSignatures::with_slots(16);
        let d = token_digest("a.b.c");
        assert!(!seen.contains(&d, 1));
        seen.insert(d, 1);
        assert!(seen.contains(&d, 1));
        assert!(!seen.contains(&d, 2), "another key set");
        assert!(!seen.contains(&token_digest("a.b.d"), 1));
    }

    #[test]
    fn a_collision_replaces_the_slot() {
        let seen = VerifiedSignatures::with_slots(1);
        let (a, b) = (token_digest("a"), token_digest("b"));
        seen.insert(a, 1);
        seen.insert(b, 1);
        assert!(seen.contains(&b, 1));
        assert!(!seen.contains(&a, 1), "one slot holds one digest");
    }
}
