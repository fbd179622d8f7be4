//! Config propagation in Kubernetes mode (a benchmark, not a test): with
//! N HTTPRoutes loaded, the time from a route write to the API server until
//! the Gateway answers 200 on the new path.
//!
//! Run it with `scripts/bench-k8s-reload.sh` (release binaries, root). It
//! brings up its own cluster instance, fakelet and `coxswain controller`
//! exactly as the e2e tests do (`coxswain_k8s_tests::env`), applies the
//! example app (Gateway `demo`, echo Deployment and Service) without its
//! HTTPRoute, creates the routes (`r<i>.bench.example`, `/r<i>`), then
//! measures route moves and new routes one at a time. `--reap PID` only
//! tears down the instance the run of PID left, once PID is gone (the
//! script's exit trap).

mod gateway_client;
mod report;
mod routes;

use std::fs::File;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use coxswain_k8s_tests::env::{self, Env};
use coxswain_k8s_tests::kubectl::is_true;
use coxswain_k8s_tests::poll;
use nix::sched::{CloneFlags, setns};

use gateway_client::GatewayClient;

/// Loading the routes (and their statuses) may take minutes.
const LOAD_CAP: Duration = Duration::from_secs(900);
const SAMPLE_CAP: Duration = Duration::from_secs(10);
const EXAMPLE_FILES: [&str; 4] = [
    "00-namespace.yaml",
    "gatewayclass.yaml",
    "gateway.yaml",
    "echo.yaml",
];

struct Args {
    routes: usize,
    changes: usize,
    /// Routes without `hostnames` (they match any host, as in the
    /// standalone benchmark), to tell hostnames' cost apart.
    without_hostnames: bool,
    /// Only tear down what the run of this pid left.
    reap: Option<u32>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        routes: 5_000,
        changes: 100,
        without_hostnames: false,
        reap: None,
    };
    let mut given = std::env::args().skip(1);
    while let Some(arg) = given.next() {
        match arg.as_str() {
            "--routes" => args.routes = given.next().context("--routes N")?.parse()?,
            "--changes" => args.changes = given.next().context("--changes N")?.parse()?,
            "--without-hostnames" => args.without_hostnames = true,
            "--reap" => args.reap = Some(given.next().context("--reap PID")?.parse()?),
            other => bail!(
                "unknown argument {other:?} (--routes N, --changes N, --without-hostnames, --reap PID)"
            ),
        }
    }
    anyhow::ensure!(
        args.routes > 0 && args.changes > 0 && args.changes <= args.routes,
        "need 0 < --changes <= --routes"
    );
    Ok(args)
}

fn main() -> ExitCode {
    match parse_args().and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("k8s_reload_latency: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let repo = coxswain_k8s_tests::repo_root().canonicalize()?;
    if let Some(pid) = args.reap {
        coxswain_k8s_tests::cluster::clean_left_by(&repo, &env::run_root(), pid);
        return Ok(());
    }
    env::preflight()?;
    let env = Env::start()?;
    println!(
        "cluster instance: netns {}, state {}",
        env.cluster.netns(),
        env.cluster.state().display()
    );
    let gateway = demo_gateway(&env)?;
    let bench = Bench {
        netns: env.cluster.netns(),
        kubeconfig: env.admin.kubeconfig.clone(),
        controller_log: env.controller.log.clone(),
        gateway,
        routes: args.routes,
        changes: args.changes,
        hostnames: !args.without_hostnames,
    };
    let outcome = std::thread::spawn(move || bench.run_in_node_netns())
        .join()
        .map_err(|_| anyhow::anyhow!("the measuring thread panicked"))?;
    if outcome.is_err() {
        eprintln!("controller log tail:\n{}", env.controller.log_tail(30));
    }
    outcome
}

/// The example app without its HTTPRoute; the Gateway's address once it
/// is Programmed and the echo pods are ready.
fn demo_gateway(env: &Env) -> anyhow::Result<SocketAddr> {
    let dir = env.repo.join("examples/kubernetes");
    for file in EXAMPLE_FILES {
        env.admin
            .run(&["apply", "-f", &dir.join(file).display().to_string()])?;
    }
    let address = poll::until(
        "Gateway demo Programmed with an address",
        Duration::from_secs(60),
        || {
            let gateway = env
                .admin
                .get_json(&["-n", routes::NAMESPACE, "gateway", "demo"])?;
            if !is_true(&gateway["status"]["conditions"], "Programmed") {
                return Ok(None);
            }
            let ip = gateway["status"]["addresses"][0]["value"]
                .as_str()
                .context("no status.addresses")?;
            Ok(Some(format!("{ip}:80").parse::<SocketAddr>()?))
        },
    )?;
    env.admin.run(&[
        "-n",
        routes::NAMESPACE,
        "rollout",
        "status",
        "deployment/echo",
        "--timeout=120s",
    ])?;
    Ok(address)
}

struct Bench {
    netns: String,
    kubeconfig: PathBuf,
    controller_log: PathBuf,
    gateway: SocketAddr,
    routes: usize,
    changes: usize,
    hostnames: bool,
}

/// One timed change: the API server's answer, the first 200 on the new
/// path, the route's status Accepted at the new generation; all from just
/// before the write.
#[derive(Default)]
struct Samples {
    written: Vec<Duration>,
    served: Vec<Duration>,
    status: Vec<Duration>,
}

impl Samples {
    fn print(&self, what: &str) {
        println!(
            "{}",
            report::durations(&format!("{what}: API answered"), &self.written)
        );
        println!(
            "{}",
            report::durations(&format!("{what}: first 200"), &self.served)
        );
        println!(
            "{}",
            report::durations(&format!("{what}: status written"), &self.status)
        );
    }
}

impl Bench {
    /// The Gateway address exists only inside the node namespace: this
    /// thread joins it (the API server is reachable from there too).
    fn run_in_node_netns(self) -> anyhow::Result<()> {
        let path = format!("/run/netns/{}", self.netns);
        let file = File::open(&path).with_context(|| format!("cannot open {path}"))?;
        setns(&file, CloneFlags::CLONE_NEWNET).context("setns")?;
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(self.measure())
    }

    async fn measure(self) -> anyhow::Result<()> {
        let api = routes::api(routes::client(&self.kubeconfig).await?);
        let loading = Instant::now();
        routes::create_bulk(&api, self.routes, self.hostnames).await?;
        let created = loading.elapsed();
        let mut gateway = GatewayClient::connect(self.gateway).await?;
        let last = routes::bulk_name(self.routes - 1);
        gateway
            .wait_for_200(&routes::host(&last), &format!("/{last}"), LOAD_CAP)
            .await?;
        let served = loading.elapsed();
        gateway
            .wait_for_200(&routes::host("r0"), "/r0", SAMPLE_CAP)
            .await?;
        routes::wait_all_statuses(&api, self.routes, LOAD_CAP).await?;
        println!(
            "{} HTTPRoutes ({}): created in {:.1} s, the last one served at {:.1} s, every status Accepted at {:.1} s",
            self.routes,
            if self.hostnames {
                "one hostname each"
            } else {
                "no hostnames"
            },
            created.as_secs_f64(),
            served.as_secs_f64(),
            loading.elapsed().as_secs_f64()
        );

        let log_start = std::fs::metadata(&self.controller_log)?.len();
        let mut moved = Samples::default();
        for i in 0..self.changes {
            let name = routes::bulk_name(i * self.routes / self.changes);
            let (host, path) = (routes::host(&name), format!("/moved-{i}"));
            let start = Instant::now();
            let generation = routes::move_path(&api, &name, &path).await?;
            moved.written.push(start.elapsed());
            gateway.wait_for_200(&host, &path, SAMPLE_CAP).await?;
            moved.served.push(start.elapsed());
            routes::wait_status(&api, &name, generation, SAMPLE_CAP).await?;
            moved.status.push(start.elapsed());
            let old = gateway.status(&host, &format!("/{name}")).await?;
            anyhow::ensure!(old == 404, "{name}: the old path still answers {old}");
        }
        let mut created = Samples::default();
        for i in 0..self.changes {
            let name = format!("new-{i}");
            let (host, path) = (routes::host(&name), format!("/{name}"));
            let start = Instant::now();
            let generation = routes::create(&api, &name, &path, self.hostnames).await?;
            created.written.push(start.elapsed());
            gateway.wait_for_200(&host, &path, SAMPLE_CAP).await?;
            created.served.push(start.elapsed());
            routes::wait_status(&api, &name, generation, SAMPLE_CAP).await?;
            created.status.push(start.elapsed());
        }
        moved.print("modified route");
        created.print("new route");
        let log = std::fs::read(&self.controller_log)?;
        let window = usize::try_from(log_start)
            .ok()
            .and_then(|start| log.get(start..))
            .unwrap_or_default();
        for line in report::controller_split(&String::from_utf8_lossy(window)) {
            println!("{line}");
        }
        println!("gateway connection reopened {} times", gateway.reconnects);
        println!(
            "{} changes measured; {:.1} s since the routes were created",
            2 * self.changes,
            loading.elapsed().as_secs_f64()
        );
        Ok(())
    }
}
