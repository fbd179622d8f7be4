//! Secrets in the IR (private keys, password hashes) serialise as a
//! redacted marker, so `/config`, `coxswain check` and logs never show
//! them. The config stream is the one place the IR must travel whole (a
//! pool's proxy cannot serve HTTPS without its key): it encodes inside
//! [`revealing`], and nothing else may.

use std::cell::Cell;

thread_local! {
    static REVEALING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `encode` with secrets serialised in full on this thread. Encoding
/// is synchronous, so the scope cannot leak to other work.
pub fn revealing<T>(encode: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            REVEALING.with(|r| r.set(self.0));
        }
    }
    let _restore = Restore(REVEALING.with(|r| r.replace(true)));
    encode()
}

/// Whether a secret being serialised now is written in full.
pub(crate) fn is_revealing() -> bool {
    REVEALING.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::{PrivateKeyPem, REDACTED_KEY};

    #[test]
    fn only_the_scope_reveals_and_it_ends_even_on_panic() {
        let key = PrivateKeyPem("SECRET-KEY".into());
        let plain = serde_json::to_string(&key).unwrap();
        assert_eq!(plain, format!("\"{REDACTED_KEY}\""));
        let whole = revealing(|| serde_json::to_string(&key).unwrap());
        assert_eq!(whole, "\"SECRET-KEY\"");
        let _ = std::panic::catch_unwind(|| revealing(|| panic!("mid-encode")));
        assert!(!is_revealing());
        assert_eq!(serde_json::to_string(&key).unwrap(), plain);
    }
}
