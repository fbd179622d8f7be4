//! The controller's stream server, set up as `coxswain controller` does
//! (crates/provider-k8s/src/stream_feed.rs): a private CA, a serving
//! certificate, the hub on a TCP listener (127.0.0.1:0 here), and a watch
//! of what each Gateway's pool is sent. It always leads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use coxswain_stream::{
    Authority, GatewayIdentity, Hub, PoolReport, Published, Reports, Resources, serve,
    serving_config,
};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub const SERVER_NAME: &str = "stream.coxswain.sim";

pub struct Server {
    pub address: String,
    authority: Authority,
    published: watch::Sender<Arc<Published>>,
    reports: watch::Receiver<Reports>,
    _leading: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Server {
    pub async fn start() -> anyhow::Result<Server> {
        let authority = Authority::generate(SystemTime::now()).context("generating the CA")?;
        let tls = serving_config(&authority, SERVER_NAME, SystemTime::now())
            .context("issuing the serving certificate")?;
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding 127.0.0.1:0")?;
        let address = listener.local_addr().context("local address")?.to_string();
        let (published, configs) = watch::channel(Arc::new(Published::new()));
        let (leading, leading_rx) = watch::channel(true);
        let (reports_tx, reports) = watch::channel(Reports::new());
        let hub = Hub::new(configs, leading_rx, reports_tx);
        // The receiver keeps the one serving config; no renewal in a run.
        let task = tokio::spawn(serve(listener, watch::channel(tls).1, hub));
        Ok(Server {
            address,
            authority,
            published,
            reports,
            _leading: leading,
            task,
        })
    }

    /// `count` client certificates for `gateway`, one directory each
    /// (`proxies::credentials`), as the pool's Secret would be mounted.
    pub fn write_credentials(&self, dir: &Path, gateway: &str, count: usize) -> anyhow::Result<()> {
        let (namespace, name) = gateway
            .split_once('/')
            .with_context(|| format!("gateway {gateway:?} is not namespace/name"))?;
        let identity = GatewayIdentity::new(namespace, name);
        for proxy in 0..count {
            let credentials = self
                .authority
                .issue_proxy(&identity, SystemTime::now())
                .context("issuing a proxy certificate")?;
            let dir = crate::proxies::credentials(dir, proxy);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {dir:?}"))?;
            for (file, pem) in [
                (coxswain_stream::pki::CA_FILE, &credentials.ca_pem),
                (coxswain_stream::pki::CERT_FILE, &credentials.cert_pem),
                (coxswain_stream::pki::KEY_FILE, &credentials.key_pem),
            ] {
                std::fs::write(dir.join(file), pem)
                    .with_context(|| format!("writing {file} in {dir:?}"))?;
            }
        }
        Ok(())
    }

    /// Publishes `gateway`'s resources, as `StreamFeed::publish` does (the
    /// watch wakes the sessions only when something changed).
    pub fn publish(&self, gateway: &str, resources: Arc<Resources>) {
        let published: Published = [(gateway.to_string(), resources)].into_iter().collect();
        self.published.send_if_modified(|current| {
            let changed = **current != published;
            if changed {
                *current = Arc::new(published.clone());
            }
            changed
        });
    }

    /// What the hub reports of `gateway`'s pool now.
    pub fn report(&self, gateway: &str) -> PoolReport {
        self.reports
            .borrow()
            .get(gateway)
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> anyhow::Result<TempDir> {
        let dir = std::env::temp_dir().join(format!(
            "coxswain-stream-sim-{label}-{}",
            std::process::id()
        ));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {dir:?}"))?;
        }
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {dir:?}"))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
