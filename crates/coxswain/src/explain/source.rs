//! Where the config to explain comes from: a directory, loaded and
//! translated as `check` and `run` do, or a running gateway's `/config`.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use coxswain_ir::Config;
use coxswain_provider_file::load_dir;
use coxswain_translate::{Options, translate};

/// Why no config could be had.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{count} error(s) loading {dir}")]
    Load { dir: String, count: usize },
    #[error("cannot read {address}/config: {source}")]
    Admin {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("{address}/config answered {status_line:?}")]
    Status {
        address: SocketAddr,
        status_line: String,
    },
    #[error("{address}/config is not a config: {source}")]
    Json {
        address: SocketAddr,
        source: serde_json::Error,
    },
}

/// How long the admin endpoint may take to answer.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(10);

/// The IR `run` would serve from `dir`. Load errors are printed, as
/// `check` prints them.
pub fn from_dir(
    dir: &Path,
    controller_name: &str,
    bind_address: IpAddr,
) -> Result<Config, SourceError> {
    let loaded = load_dir(dir);
    if !loaded.errors.is_empty() {
        for error in &loaded.errors {
            eprintln!("{error}");
        }
        return Err(SourceError::Load {
            dir: dir.display().to_string(),
            count: loaded.errors.len(),
        });
    }
    // Ingresses as `run` serves them by default (ports 80 and 443).
    let options = Options::standalone(controller_name, bind_address, crate::run::now());
    Ok(translate(&loaded.snapshot, &options).ir)
}

/// The IR a running gateway serves, from its admin endpoint.
pub fn from_admin(address: SocketAddr) -> Result<Config, SourceError> {
    let io = |source| SourceError::Admin { address, source };
    let mut stream = TcpStream::connect_timeout(&address, ADMIN_TIMEOUT).map_err(io)?;
    stream.set_read_timeout(Some(ADMIN_TIMEOUT)).map_err(io)?;
    let request = format!("GET /config HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).map_err(io)?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status_line = head.lines().next().unwrap_or_default();
    // The admin endpoint answers whole bodies (never chunked).
    if status_line.split(' ').nth(1) != Some("200") {
        return Err(SourceError::Status {
            address,
            status_line: status_line.to_string(),
        });
    }
    serde_json::from_str(body).map_err(|source| SourceError::Json { address, source })
}
