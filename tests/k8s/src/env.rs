//! Brings up the whole environment once: our own cluster instance, the
//! fakelet, deploy/install.yaml, and `coxswain controller` running with the
//! chart's ServiceAccount token (not admin), so every scenario also proves
//! the chart's RBAC is enough. Dropping `Env` tears it all down, in order.
//! Used by the e2e tests (tests/e2e/setup.rs) and the Kubernetes-mode
//! reload benchmark (examples/k8s_reload_latency).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::binaries;
use crate::cluster::Cluster;
use crate::kubectl::{Kubectl, is_true};
use crate::netns_http::NetnsHttp;
use crate::poll;
use crate::procs::Background;

/// Gateway addresses; a local route makes them bindable in the node namespace only.
pub const POOL: &str = "10.214.0.0/28";
pub const RELEASE_NAMESPACE: &str = "coxswain-system";
pub const ADMIN: &str = "127.0.0.1:9901";

pub struct Env {
    // Field order is drop order: controller, fakelet, then the cluster.
    pub controller: Background,
    pub fakelet: Background,
    pub cluster: Cluster,
    pub repo: PathBuf,
    pub admin: Kubectl,
    /// The chart's ServiceAccount (what the controller runs as).
    pub sa: Kubectl,
    pub http: NetnsHttp,
    /// Set once the example Gateway has an address.
    pub gateway: Option<SocketAddr>,
    /// The binary under test, for scenarios that start more replicas.
    pub coxswain: PathBuf,
}

/// Not root or no `ip`: fail with a clear message, never skip.
pub fn preflight() -> anyhow::Result<()> {
    if !nix::unistd::Uid::effective().is_root() {
        bail!(
            "the Kubernetes e2e tests need root (network namespaces for scripts/cluster.sh and the fakelet)"
        );
    }
    for tool in ["ip", "go", "openssl", "curl", "jq"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !found {
            bail!("the Kubernetes e2e tests need `{tool}` on PATH (see docs/local-cluster.md)");
        }
    }
    Ok(())
}

/// Where instances are claimed (`COXSWAIN_E2E_ROOT`, else a temp dir).
pub fn run_root() -> PathBuf {
    std::env::var_os("COXSWAIN_E2E_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("coxswain-k8s-tests"))
}

fn timed<T>(what: &str, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let started = Instant::now();
    let value = f().with_context(|| what.to_string())?;
    eprintln!("[e2e] {what}: {:.1}s", started.elapsed().as_secs_f64());
    Ok(value)
}

impl Env {
    pub fn start() -> anyhow::Result<Self> {
        let repo = crate::repo_root().canonicalize()?;
        timed("kubernetes binaries (cached)", || {
            binaries::kubernetes(&repo)
        })?;
        let echo = timed("echo-basic (cached)", || binaries::echo_basic(&repo))?;
        let built = timed("cargo build coxswain + fakelet", || {
            binaries::workspace(&repo)
        })?;

        let mut cluster = Cluster::claim(&repo, &run_root())?;
        eprintln!(
            "[e2e] own cluster instance: netns {}, node {}, state {}",
            cluster.netns(),
            cluster.node_ip(),
            cluster.state().display()
        );
        timed("cluster up", || cluster.up())?;
        let admin = cluster.admin.clone();
        let netns = cluster.netns();
        let status = Command::new("ip")
            .args([
                "netns", "exec", &netns, "ip", "route", "replace", "local", POOL, "dev", "lo",
            ])
            .status()?;
        if !status.success() {
            bail!("cannot add the local route for {POOL} in {netns}");
        }

        let node = format!("cxe2e-node-{}", cluster.octet);
        let mut fakelet = Command::new("ip");
        fakelet
            .args(["netns", "exec", &netns, "env"])
            .arg(format!("KUBECONFIG={}", admin.kubeconfig.display()))
            .arg(&built.fakelet)
            .args(["run", "--node-name", &node, "--node-ip", &cluster.node_ip()])
            .args(["--pod-cidr", "10.244.0.0/24", "--bridge", "cxbr0"])
            .arg("--image-map")
            .arg(format!("*echo-basic*={}", echo.display()))
            .arg("--state-dir")
            .arg(cluster.run_dir.join("fakelet"));
        let mut fakelet = Background::spawn(
            "fakelet",
            fakelet,
            &cluster.run_dir.join("fakelet.log"),
            Duration::from_secs(30),
        )?;
        timed("fakelet node Ready", || {
            poll::until("node Ready", Duration::from_secs(60), || {
                fakelet.check_alive()?;
                let node = admin.get_json(&["node", &node])?;
                Ok(is_true(&node["status"]["conditions"], "Ready").then_some(()))
            })
        })?;

        timed("kubectl apply -f deploy/install.yaml", || {
            install(&repo, &admin)
        })?;
        let sa = timed("ServiceAccount kubeconfig", || sa_kubectl(&cluster, &admin))?;

        let http = NetnsHttp { netns };
        let controller = timed("controller /readyz", || {
            start_controller(
                &built.coxswain,
                &sa,
                &http,
                ADMIN,
                &cluster.run_dir.join("controller.log"),
            )
        })?;
        Ok(Self {
            controller,
            fakelet,
            cluster,
            repo,
            admin,
            sa,
            http,
            gateway: None,
            coxswain: built.coxswain,
        })
    }
}

/// The controller's ingress ports, and the address it reports in
/// Ingress status (the proxy binds the wildcard address in its network
/// namespace, where the test client runs too).
pub const INGRESS_HTTP_PORT: u16 = 18080;
pub const INGRESS_HTTPS_PORT: u16 = 18443;
pub const INGRESS_STATUS_ADDRESS: &str = "127.0.0.1";

/// `coxswain controller` as the chart runs it (ServiceAccount token, the
/// address pool, the release namespace's Lease), inside `http`'s network
/// namespace with its admin endpoint on `admin`; returns once /readyz is 200.
pub fn start_controller(
    coxswain: &std::path::Path,
    sa: &Kubectl,
    http: &NetnsHttp,
    admin: &str,
    log: &std::path::Path,
) -> anyhow::Result<Background> {
    start_controller_with(coxswain, sa, http, admin, log, &[])
}

/// [`start_controller`] with more flags (dedicated pools' stream).
pub fn start_controller_with(
    coxswain: &std::path::Path,
    sa: &Kubectl,
    http: &NetnsHttp,
    admin: &str,
    log: &std::path::Path,
    extra: &[String],
) -> anyhow::Result<Background> {
    let mut command = Command::new("ip");
    command
        .args(["netns", "exec", &http.netns, "env"])
        .arg(format!("KUBECONFIG={}", sa.kubeconfig.display()))
        .arg("RUST_LOG=info")
        .arg(coxswain)
        .args([
            "controller",
            "--gateway-address-pool",
            POOL,
            "--admin-address",
            admin,
        ])
        .args([
            "--leader-lease-namespace",
            RELEASE_NAMESPACE,
            "--gateway-class-name",
            "coxswain",
        ])
        // Gateways bind port 80 on pool addresses: Ingresses get their own
        // ports (bound on the wildcard address only while one is ours).
        .args([
            "--ingress-http-port",
            &INGRESS_HTTP_PORT.to_string(),
            "--ingress-https-port",
            &INGRESS_HTTPS_PORT.to_string(),
            "--ingress-status-address",
            INGRESS_STATUS_ADDRESS,
        ]);
    command.args(extra);
    let name = log
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "controller".into());
    let mut controller = Background::spawn(&name, command, log, Duration::from_secs(15))?;
    let admin_addr: SocketAddr = admin.parse()?;
    poll::until(&format!("{name} ready"), Duration::from_secs(60), || {
        controller.check_alive()?;
        let response = http.get(admin_addr, "/readyz", &[])?;
        Ok((response.status == 200).then_some(()))
    })?;
    Ok(controller)
}

/// Applies the rendered chart for real. The Deployment is scaled to zero
/// afterwards: the fakelet cannot hand pods in-cluster credentials, so the
/// same binary runs as a process with the chart ServiceAccount's token.
fn install(repo: &std::path::Path, admin: &Kubectl) -> anyhow::Result<()> {
    let manifest = repo.join("deploy/install.yaml");
    admin.run(&["apply", "-f", &manifest.display().to_string()])?;
    admin.run(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/coxswaingatewayparameters.gateway.coxswain-labs.dev",
        "crd/coxswainbackendpolicies.gateway.coxswain-labs.dev",
    ])?;
    admin.run(&[
        "-n",
        RELEASE_NAMESPACE,
        "scale",
        "deployment/coxswain",
        "--replicas=0",
    ])?;
    Ok(())
}

/// A kubeconfig holding a token of the chart's ServiceAccount.
fn sa_kubectl(cluster: &Cluster, admin: &Kubectl) -> anyhow::Result<Kubectl> {
    let token = admin.run(&[
        "-n",
        RELEASE_NAMESPACE,
        "create",
        "token",
        "coxswain",
        "--duration=2h",
    ])?;
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": format!("https://{}:6443", cluster.node_ip()),
            "certificate-authority": cluster.ca_file().display().to_string(),
        }}],
        "users": [{"name": "coxswain", "user": {"token": token.trim()}}],
        "contexts": [{"name": "coxswain", "context": {
            "cluster": "e2e", "user": "coxswain", "namespace": RELEASE_NAMESPACE,
        }}],
        "current-context": "coxswain",
    });
    let path = cluster.run_dir.join("coxswain-sa.kubeconfig");
    std::fs::write(&path, serde_json::to_string_pretty(&config)?)?;
    Ok(Kubectl {
        bin: admin.bin.clone(),
        kubeconfig: path,
    })
}
