//! Test certificates made with the real `openssl` command.

use std::path::Path;
use std::process::Command;

pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA `name.crt`/`name.key` in `dir`.
pub fn ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign",
        ],
    );
}

/// A key and a signing request `name.key`/`name.csr` for subject CN=name.
fn request(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
        ],
    );
}

/// `name.crt` from `name.csr`, signed by CA `issuer` for a day with the
/// extensions in file `ext`.
fn sign(dir: &Path, name: &str, issuer: &str, ext: &str) {
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{issuer}.crt"),
            "-CAkey",
            &format!("{issuer}.key"),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            ext,
            "-out",
            &format!("{name}.crt"),
        ],
    );
}

/// A client certificate `name.crt`/`name.key` signed by CA `issuer`,
/// valid from `start` to `end` (`openssl ca` dates, e.g. 20200101000000Z),
/// or for a day from now.
pub fn client(dir: &Path, name: &str, issuer: &str, dates: Option<(&str, &str)>) {
    request(dir, name);
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    let (start, end) = dates.unwrap_or(("", ""));
    if start.is_empty() {
        sign(dir, name, issuer, "client.ext");
        return;
    }
    // `openssl ca` is what can set dates in the past.
    std::fs::write(dir.join("index.txt"), "").unwrap();
    std::fs::write(dir.join("serial"), "1000\n").unwrap();
    std::fs::write(
        dir.join("ca.cnf"),
        "[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\n\
         default_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "ca",
            "-batch",
            "-notext",
            "-config",
            "ca.cnf",
            "-cert",
            &format!("{issuer}.crt"),
            "-keyfile",
            &format!("{issuer}.key"),
            "-in",
            &format!("{name}.csr"),
            "-out",
            &format!("{name}.crt"),
            "-startdate",
            start,
            "-enddate",
            end,
            "-extfile",
            "client.ext",
        ],
    );
}

/// A server certificate `name.crt`/`name.key` signed by CA `issuer`, for
/// `subject_alt_names` (openssl syntax, e.g. `DNS:a.test,URI:spiffe://x`).
pub fn server(dir: &Path, name: &str, issuer: &str, subject_alt_names: &str) {
    request(dir, name);
    let ext = format!("{name}.ext");
    std::fs::write(
        dir.join(&ext),
        format!("extendedKeyUsage=serverAuth\nsubjectAltName={subject_alt_names}\n"),
    )
    .unwrap();
    sign(dir, name, issuer, &ext);
}
