//! Apache's `$apr1$` hash: MD5-crypt with the `$apr1$` magic, as
//! `htpasswd -m` and `openssl passwd -apr1` write it.

use md5::{Digest, Md5};

const MAGIC: &[u8] = b"$apr1$";
const ALPHABET: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The 22-character checksum of `password` with `salt` (at most 8 bytes
/// are used, as the algorithm says).
pub fn checksum(password: &[u8], salt: &[u8]) -> String {
    let salt = salt.get(..salt.len().min(8)).unwrap_or(salt);
    let alternate = Md5::new()
        .chain_update(password)
        .chain_update(salt)
        .chain_update(password)
        .finalize();
    let mut ctx = Md5::new()
        .chain_update(password)
        .chain_update(MAGIC)
        .chain_update(salt);
    let mut left = password.len();
    while left > 0 {
        let n = left.min(16);
        ctx.update(alternate.get(..n).unwrap_or_default());
        left -= n;
    }
    let mut bits = password.len();
    while bits > 0 {
        if bits & 1 == 1 {
            ctx.update([0u8]);
        } else {
            ctx.update(password.get(..1).unwrap_or_default());
        }
        bits >>= 1;
    }
    let mut digest: [u8; 16] = ctx.finalize().into();
    for round in 0..1000 {
        let mut ctx = Md5::new();
        if round & 1 == 1 {
            ctx.update(password);
        } else {
            ctx.update(digest);
        }
        if round % 3 != 0 {
            ctx.update(salt);
        }
        if round % 7 != 0 {
            ctx.update(password);
        }
        if round & 1 == 1 {
            ctx.update(digest);
        } else {
            ctx.update(password);
        }
        digest = ctx.finalize().into();
    }
    let d = digest;
    let mut out = String::with_capacity(22);
    let groups = [
        (d[0], d[6], d[12]),
        (d[1], d[7], d[13]),
        (d[2], d[8], d[14]),
        (d[3], d[9], d[15]),
        (d[4], d[10], d[5]),
    ];
    for (a, b, c) in groups {
        push64(
            &mut out,
            (u32::from(a) << 16) | (u32::from(b) << 8) | u32::from(c),
            4,
        );
    }
    push64(&mut out, u32::from(d[11]), 2);
    out
}

fn push64(out: &mut String, mut value: u32, chars: usize) {
    for _ in 0..chars {
        out.push(char::from(
            ALPHABET
                .get((value & 0x3f) as usize)
                .copied()
                .unwrap_or(b'.'),
        ));
        value >>= 6;
    }
}

#[cfg(test)]
mod tests {
    use super::checksum;

    #[test]
    fn matches_openssl_passwd_apr1() {
        // `openssl passwd -apr1 -salt saltsalt secret`
        assert_eq!(checksum(b"secret", b"saltsalt"), "LrttParrLPdxvgutaSXWJ0");
        // Longer than one MD5 block of alternate sum, and empty.
        assert_eq!(
            checksum(b"a-much-longer-password-than-16-bytes", b"ab"),
            "HJE4wNluqTl7SaYibFIQO/"
        );
        assert_eq!(checksum(b"", b"x"), "tMwYqBfQwi3FYAr0aJc8M/");
    }
}
