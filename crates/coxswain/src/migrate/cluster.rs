//! `coxswain migrate --from-cluster`: the objects migration reads, listed
//! from the API server the controller would reach (KUBECONFIG, else the
//! in-cluster config). Secrets are listed as metadata only: migration
//! needs their names and labels, never their data.

use std::sync::Arc;

use anyhow::Context;
use coxswain_api::{Ingress, IngressClass, Object, Secret, Service, Snapshot};
use kube::api::{Api, ListParams};

pub fn load() -> anyhow::Result<Snapshot> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(list())
}

async fn list() -> anyhow::Result<Snapshot> {
    let client = kube::Client::try_default()
        .await
        .context("cannot reach Kubernetes (KUBECONFIG or in-cluster config)")?;
    let all = ListParams::default();
    let mut snapshot = Snapshot::default();
    for ingress in Api::<Ingress>::all(client.clone())
        .list(&all)
        .await
        .context("listing Ingresses")?
    {
        snapshot.insert(Object::Ingress(Arc::new(ingress)));
    }
    let classes = Api::<IngressClass>::all(client.clone());
    for class in classes.list(&all).await.context("listing IngressClasses")? {
        snapshot.insert(Object::IngressClass(Arc::new(class)));
    }
    for service in Api::<Service>::all(client.clone())
        .list(&all)
        .await
        .context("listing Services")?
    {
        snapshot.insert(Object::Service(Arc::new(service)));
    }
    let secrets = Api::<Secret>::all(client);
    for meta in secrets
        .list_metadata(&all)
        .await
        .context("listing Secrets (metadata)")?
    {
        let secret = Secret {
            metadata: meta.metadata,
            ..Secret::default()
        };
        snapshot.insert(Object::Secret(Arc::new(secret)));
    }
    Ok(snapshot)
}
