//! htpasswd files: `user:hash` lines, `#` comments and blank lines
//! skipped. Only hashes the proxy can check are accepted — bcrypt, APR1
//! and `{SHA}`; any other line (plain text, crypt(3) DES, SHA-crypt) makes
//! the whole file unusable rather than leaving its user out silently.

use std::collections::HashMap;
use std::fmt;

use base64::Engine;
use coxswain_ir::{BasicAuthUser, HashText, PasswordHash, PasswordScheme};

/// The highest bcrypt cost accepted (Apache's `htpasswd -C` limit): each
/// step doubles the work, and cost 17 is already seconds per check.
pub const MAX_BCRYPT_COST: u32 = 17;
const MIN_BCRYPT_COST: u32 = 4;
/// The MD5-crypt salt and checksum alphabet.
const CRYPT_ALPHABET: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Why an htpasswd file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HtpasswdError {
    NotUtf8,
    NoUsers,
    /// A bad line (1-based), and the user it names when it names one.
    Line {
        line: usize,
        user: Option<String>,
        problem: LineProblem,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineProblem {
    NoColon,
    BadUserName,
    Duplicate {
        first: usize,
    },
    /// Plain text or crypt(3) DES: no scheme prefix.
    NoScheme,
    /// A modular-crypt scheme we do not check (`$1$`, `$5$`, `$6$`, ...).
    UnsupportedScheme(String),
    BadBcrypt,
    BcryptCost(u32),
    BadApr1,
    BadSha,
}

impl fmt::Display for HtpasswdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HtpasswdError::NotUtf8 => f.write_str("the htpasswd file is not UTF-8 text"),
            HtpasswdError::NoUsers => f.write_str("the htpasswd file names no user"),
            HtpasswdError::Line {
                line,
                user,
                problem,
            } => {
                write!(f, "htpasswd line {line}")?;
                if let Some(user) = user {
                    write!(f, " (user {user:?})")?;
                }
                write!(f, ": {problem}")
            }
        }
    }
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineProblem::NoColon => f.write_str("not of the form user:hash"),
            LineProblem::BadUserName => f.write_str("empty user name or a control character"),
            LineProblem::Duplicate { first } => {
                write!(f, "the user is already defined on line {first}")
            }
            LineProblem::NoScheme => f.write_str(
                "a plain-text or crypt(3) password, which is refused; \
                 use bcrypt (htpasswd -B)",
            ),
            LineProblem::UnsupportedScheme(prefix) => write!(
                f,
                "hash scheme {prefix} is not supported (bcrypt, $apr1$ and {{SHA}} are)"
            ),
            LineProblem::BadBcrypt => f.write_str("malformed bcrypt hash"),
            LineProblem::BcryptCost(cost) => write!(
                f,
                "bcrypt cost {cost} is outside {MIN_BCRYPT_COST}..={MAX_BCRYPT_COST}"
            ),
            LineProblem::BadApr1 => f.write_str("malformed $apr1$ hash"),
            LineProblem::BadSha => f.write_str("malformed {SHA} hash (base64 of 20 bytes)"),
        }
    }
}

/// The users of an htpasswd file, in file order.
pub fn parse(file: &[u8]) -> Result<Vec<BasicAuthUser>, HtpasswdError> {
    let text = std::str::from_utf8(file).map_err(|_| HtpasswdError::NotUtf8)?;
    let mut users = Vec::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let entry = raw.trim_end();
        if entry.trim_start().is_empty() || entry.starts_with('#') {
            continue;
        }
        let bad = |user: Option<&str>, problem| HtpasswdError::Line {
            line,
            user: user.map(str::to_string),
            problem,
        };
        let Some((name, rest)) = entry.split_once(':') else {
            return Err(bad(None, LineProblem::NoColon));
        };
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(bad(None, LineProblem::BadUserName));
        }
        if let Some(first) = seen.insert(name, line) {
            return Err(bad(Some(name), LineProblem::Duplicate { first }));
        }
        // Apache ignores what follows a second colon.
        let hash = rest.split(':').next().unwrap_or_default();
        let scheme = scheme(hash).map_err(|p| bad(Some(name), p))?;
        users.push(BasicAuthUser {
            name: name.to_string(),
            hash: PasswordHash {
                scheme,
                text: HashText(hash.into()),
            },
        });
    }
    if users.is_empty() {
        return Err(HtpasswdError::NoUsers);
    }
    Ok(users)
}

/// The scheme of a well-formed hash.
fn scheme(hash: &str) -> Result<PasswordScheme, LineProblem> {
    if ["$2a$", "$2b$", "$2y$"].iter().any(|p| hash.starts_with(p)) {
        let parts: bcrypt::HashParts = hash.parse().map_err(|_| LineProblem::BadBcrypt)?;
        let cost = parts.get_cost();
        if !(MIN_BCRYPT_COST..=MAX_BCRYPT_COST).contains(&cost) {
            return Err(LineProblem::BcryptCost(cost));
        }
        Ok(PasswordScheme::Bcrypt)
    } else if let Some(rest) = hash.strip_prefix("$apr1$") {
        apr1_well_formed(rest)
            .then_some(PasswordScheme::Apr1)
            .ok_or(LineProblem::BadApr1)
    } else if let Some(digest) = hash.strip_prefix("{SHA}") {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(digest)
            .map_err(|_| LineProblem::BadSha)?;
        (bytes.len() == 20)
            .then_some(PasswordScheme::Sha1)
            .ok_or(LineProblem::BadSha)
    } else if let Some(rest) = hash.strip_prefix('$') {
        let id = rest.split('$').next().unwrap_or_default();
        Err(LineProblem::UnsupportedScheme(format!("${id}$")))
    } else {
        Err(LineProblem::NoScheme)
    }
}

/// `salt$checksum`: 1 to 8 salt characters, 22 checksum characters, all
/// from the crypt alphabet.
fn apr1_well_formed(rest: &str) -> bool {
    let Some((salt, checksum)) = rest.split_once('$') else {
        return false;
    };
    let in_alphabet = |s: &str| s.bytes().all(|b| CRYPT_ALPHABET.contains(&b));
    (1..=8).contains(&salt.len())
        && checksum.len() == 22
        && in_alphabet(salt)
        && in_alphabet(checksum)
}

#[cfg(test)]
mod tests {
    use super::*;

    // `openssl passwd -apr1 -salt saltsalt secret`
    const APR1: &str = "$apr1$saltsalt$LrttParrLPdxvgutaSXWJ0";
    // `printf secret | openssl sha1 -binary | base64`
    const SHA: &str = "{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=";

    fn bcrypt_line(user: &str, cost: u32) -> String {
        format!("{user}:{}", bcrypt::hash("secret", cost).unwrap())
    }

    fn problem(file: &str) -> (usize, Option<String>, LineProblem) {
        match parse(file.as_bytes()) {
            Err(HtpasswdError::Line {
                line,
                user,
                problem,
            }) => (line, user, problem),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_scheme_in_file_order_with_comments_and_blank_lines_skipped() {
        let file = format!(
            "# team\n\n{}\r\nbob:{APR1}\ncarol:{SHA}:extra field\n   \n",
            bcrypt_line("alice", 4)
        );
        let users = parse(file.as_bytes()).unwrap();
        let got: Vec<_> = users
            .iter()
            .map(|u| (u.name.as_str(), u.hash.scheme))
            .collect();
        assert_eq!(
            got,
            [
                ("alice", PasswordScheme::Bcrypt),
                ("bob", PasswordScheme::Apr1),
                ("carol", PasswordScheme::Sha1)
            ]
        );
        assert_eq!(users[1].hash.text.expose(), APR1);
        assert_eq!(users[2].hash.text.expose(), SHA, "fields after it dropped");
    }

    #[test]
    fn bcrypt_prefixes_2a_2b_2y_and_cost_bounds() {
        let hash = bcrypt::hash("secret", 4).unwrap();
        for prefix in ["$2a$", "$2b$", "$2y$"] {
            let line = format!("u:{prefix}{}", &hash[4..]);
            assert_eq!(parse(line.as_bytes()).unwrap().len(), 1, "{prefix}");
        }
        let x = format!("u:$2x${}", &hash[4..]);
        assert_eq!(problem(&x).2, LineProblem::UnsupportedScheme("$2x$".into()));
        let costly = format!("u:$2y$18${}", &hash[7..]);
        assert_eq!(problem(&costly).2, LineProblem::BcryptCost(18));
        let short = format!("u:{}", &hash[..59]);
        assert_eq!(problem(&short).2, LineProblem::BadBcrypt);
    }

    #[test]
    fn plain_text_des_and_other_schemes_are_refused_naming_the_line() {
        let file = format!("{}\nbob:secret\n", bcrypt_line("alice", 4));
        assert_eq!(
            problem(&file),
            (2, Some("bob".into()), LineProblem::NoScheme)
        );
        // crypt(3) DES, as `htpasswd -d` writes it.
        assert_eq!(problem("dave:rqXexS6ZhobKA").2, LineProblem::NoScheme);
        assert_eq!(
            problem("md5:$1$salt$qJH7.N4xYta3aEG/dfqo/0").2,
            LineProblem::UnsupportedScheme("$1$".into())
        );
        assert_eq!(
            problem("sha512:$6$salt$abc").2,
            LineProblem::UnsupportedScheme("$6$".into())
        );
    }

    #[test]
    fn malformed_apr1_and_sha_entries() {
        for bad in [
            "$apr1$saltsalt",
            "$apr1$$3mPDhWWEjtOAUsL2Qv2ES/",
            "$apr1$toolongsalt$3mPDhWWEjtOAUsL2Qv2ES/",
            "$apr1$saltsalt$3mPDhWWEjtOAUsL2Qv2ES",
            "$apr1$salt_alt$3mPDhWWEjtOAUsL2Qv2ES/",
        ] {
            assert_eq!(
                problem(&format!("u:{bad}")).2,
                LineProblem::BadApr1,
                "{bad}"
            );
        }
        for bad in ["{SHA}", "{SHA}not base64!", "{SHA}c2VjcmV0"] {
            assert_eq!(problem(&format!("u:{bad}")).2, LineProblem::BadSha, "{bad}");
        }
    }

    #[test]
    fn structural_errors() {
        assert_eq!(problem("just-a-name").2, LineProblem::NoColon);
        assert_eq!(problem(&format!(":{SHA}")).2, LineProblem::BadUserName);
        assert_eq!(
            problem(&format!("a:{SHA}\nb:{APR1}\na:{APR1}")),
            (3, Some("a".into()), LineProblem::Duplicate { first: 1 })
        );
        assert_eq!(parse(b"# nobody\n\n"), Err(HtpasswdError::NoUsers));
        assert_eq!(parse(b"a:\xff"), Err(HtpasswdError::NotUtf8));
    }

    #[test]
    fn messages_name_the_line_and_user_but_never_the_hash() {
        let err = parse(b"ok:{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=\nbob:hunter2\n").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("htpasswd line 2 (user \"bob\"): "),
            "{text}"
        );
        assert!(!text.contains("hunter2"), "{text}");
    }
}
