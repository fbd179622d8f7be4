//! From a Snapshot to what the Gateway's pool is sent, as the controller
//! does it: the memoising `Translator`, the Gateway's slice of the IR, and
//! the slice as content-addressed resources (reusing the encoding of what
//! did not change, and the previous set when nothing did, as in
//! `StreamFeed::publish`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use coxswain_api::Snapshot;
use coxswain_ir::Serve;
use coxswain_stream::{Encoder, Resources};
use coxswain_translate::{Options, Translator};

pub struct Feed {
    gateway: String,
    options: Options,
    translator: Translator,
    encoder: Encoder,
    resources: Option<Arc<Resources>>,
}

/// One translation's result and what each step took.
pub struct Prepared {
    pub resources: Arc<Resources>,
    pub translate: Duration,
    /// Slicing and encoding resources.
    pub encode: Duration,
    /// HTTP routes in the slice.
    pub routes: usize,
    pub clusters: usize,
}

impl Feed {
    pub fn new(gateway: &str, options: Options) -> Feed {
        Feed {
            gateway: gateway.to_string(),
            options,
            translator: Translator::new(),
            encoder: Encoder::default(),
            resources: None,
        }
    }

    pub fn prepare(&mut self, snapshot: &Snapshot) -> anyhow::Result<Prepared> {
        let start = Instant::now();
        let output = self.translator.translate(snapshot, &self.options);
        let translate = start.elapsed();
        if !output.dedicated.contains_key(&self.gateway) {
            bail!(
                "{} is not served by a dedicated pool; the fixture is wrong",
                self.gateway
            );
        }
        let start = Instant::now();
        let slice = output.ir.gateway_slice(&self.gateway);
        let encoded = self.encoder.encode(&slice).context("encoding the slice")?;
        let resources = match self.resources.take() {
            Some(previous) if *previous == encoded => previous,
            _ => Arc::new(encoded),
        };
        let encode = start.elapsed();
        let routes = slice
            .sockets
            .iter()
            .flat_map(|s| &s.listeners)
            .map(|l| match &l.serve {
                Serve::Http(routes) => routes.len(),
                _ => 0,
            })
            .sum();
        let clusters = slice.clusters.len();
        self.resources = Some(resources.clone());
        Ok(Prepared {
            resources,
            translate,
            encode,
            routes,
            clusters,
        })
    }
}
