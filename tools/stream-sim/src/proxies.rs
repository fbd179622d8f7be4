//! The proxies' process: `count` subscriptions of the same Gateway over
//! real sockets and mutual TLS, each with its own client certificate
//! (`<credentials-dir>/proxy-<i>/`), through the stream's own client, so
//! every update is checked and decoded (`Resources::apply`) as a proxy
//! would. The applier accepts everything and reports it on stdout (see
//! `acks`). Runs until stdin closes (the controller's process went).

use std::path::PathBuf;

use anyhow::Context;
use coxswain_ir::{Config, UnboundSocket};
use coxswain_stream::{Applier, Resources, Subscription, subscribe};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

use crate::acks::{self, Ack};

pub struct Args {
    pub endpoint: String,
    pub server_name: String,
    pub credentials_dir: PathBuf,
    pub count: usize,
}

/// One proxy's applier: serves nothing, says what it would serve.
struct Acker {
    proxy: usize,
    applied: mpsc::UnboundedSender<(usize, String)>,
}

impl Applier for Acker {
    async fn apply(
        &mut self,
        resources: &Resources,
        _config: std::sync::Arc<Config>,
    ) -> Result<Vec<UnboundSocket>, String> {
        let _ = self.applied.send((self.proxy, resources.version()));
        Ok(Vec::new())
    }
}

pub fn credentials(dir: &std::path::Path, proxy: usize) -> PathBuf {
    dir.join(format!("proxy-{proxy}"))
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let (applied, mut acked) = mpsc::unbounded_channel();
    for proxy in 0..args.count {
        let subscription = Subscription {
            endpoint: args.endpoint.clone(),
            server_name: args.server_name.clone(),
            credentials: credentials(&args.credentials_dir, proxy),
            node: format!("sim-proxy-{proxy}"),
        };
        let mut acker = Acker {
            proxy,
            applied: applied.clone(),
        };
        tokio::spawn(
            async move { subscribe(subscription, Resources::default(), &mut acker).await },
        );
    }
    drop(applied);
    let writer = tokio::spawn(async move {
        let mut out = BufWriter::new(tokio::io::stdout());
        while let Some(first) = acked.recv().await {
            let mut next = Some(first);
            // Everything waiting goes out in one write.
            while let Some((proxy, version)) = next {
                let cpu = crate::measure::cpu()?;
                out.write_all(
                    acks::format(&Ack {
                        proxy,
                        version,
                        cpu,
                    })
                    .as_bytes(),
                )
                .await?;
                next = acked.try_recv().ok();
            }
            out.flush().await?;
        }
        anyhow::Ok(())
    });
    // The controller's process holds our stdin; its end is ours.
    let (mut stdin, mut sink) = (tokio::io::stdin(), Vec::new());
    tokio::select! {
        read = stdin.read_to_end(&mut sink) => {
            read.context("reading stdin")?;
            Ok(())
        }
        written = writer => written.context("the ack writer")?.context("writing acks"),
    }
}
