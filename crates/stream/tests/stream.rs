//! The config stream over real sockets with real TLS: a server fed by watch
//! channels and proxies subscribing with certificates from the stream CA.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use coxswain_ir::{Config, UnboundSocket};
use coxswain_stream::{
    Applier, Authority, Credentials, GatewayIdentity, Hub, PoolReport, Published, Reports,
    Resources, Subscription, serve, snapshot, subscribe,
};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

const SERVER_NAME: &str = "stream.coxswain.test";
/// A bound on waits that should end at once, never a synchronisation.
const PATIENCE: Duration = Duration::from_secs(20);

/// One HTTP listener of `gateway` routing to one cluster on `port`.
fn config(gateway: &str, port: u16) -> Config {
    let ns = gateway.split('/').next().unwrap_or_default();
    let json = serde_json::json!({
        "ir_version": coxswain_ir::IR_VERSION,
        "sockets": [{
            "transport": "Tcp", "address": "127.0.0.1", "port": 8000,
            "listeners": [{"gateway": gateway, "name": "http", "hostname": null,
                "serve": {"Http": [{
                    "id": {"kind": "HTTPRoute", "namespace": ns, "name": "r",
                           "rule_index": 0, "rule_name": null},
                    "hostnames": [],
                    "matches": [{"path": {"Prefix": "/"}, "headers": [], "query": [], "method": null}],
                    "filters": [],
                    "backends": [{"weight": 1, "target": {"Cluster": format!("{ns}/svc:80")}}],
                    "timeouts": {"request_ms": null, "backend_request_ms": null}
                }]}}]
        }],
        "clusters": [{"name": format!("{ns}/svc:80"), "protocol": "Http1",
                      "endpoints": [{"address": format!("10.0.0.1:{port}")}]}]
    });
    serde_json::from_value(json).unwrap()
}

fn resources(gateway: &str, port: u16) -> Arc<Resources> {
    Arc::new(Resources::from_config(&config(gateway, port)).unwrap())
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "coxswain-stream-{}-{name}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn rand_suffix() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn write_credentials(credentials: &Credentials, name: &str) -> PathBuf {
    let dir = temp_dir(name);
    std::fs::write(dir.join("ca.crt"), &credentials.ca_pem).unwrap();
    std::fs::write(dir.join("tls.crt"), &credentials.cert_pem).unwrap();
    std::fs::write(dir.join("tls.key"), &credentials.key_pem).unwrap();
    dir
}

/// Hands each applied config to the test; refuses while `refuse` is set.
struct Recorder {
    applied: mpsc::UnboundedSender<Config>,
    refuse: Arc<AtomicBool>,
}

impl Applier for Recorder {
    async fn apply(
        &mut self,
        _: &Resources,
        config: Arc<Config>,
    ) -> Result<Vec<UnboundSocket>, String> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err("refused by the test".to_string());
        }
        let _ = self.applied.send((*config).clone());
        Ok(Vec::new())
    }
}

struct Controller {
    ca: Authority,
    address: String,
    configs: watch::Sender<Arc<Published>>,
    leading: watch::Sender<bool>,
    reports: watch::Receiver<Reports>,
    refused: watch::Receiver<u64>,
    _server: tokio::task::JoinHandle<()>,
}

impl Controller {
    async fn start(published: Published) -> Controller {
        let ca = Authority::generate(SystemTime::now()).unwrap();
        let server = ca.issue_server(SERVER_NAME, SystemTime::now()).unwrap();
        let tls = coxswain_stream::tls::server_config(&server).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let (configs, configs_rx) = watch::channel(Arc::new(published));
        let (leading, leading_rx) = watch::channel(true);
        let (reports_tx, reports) = watch::channel(Reports::default());
        let hub = Hub::new(configs_rx, leading_rx, reports_tx);
        let refused = hub.refused();
        // The sender may go: the receiver keeps the last value.
        let server = tokio::spawn(serve(listener, watch::channel(tls).1, hub));
        Controller {
            ca,
            address,
            configs,
            leading,
            reports,
            refused,
            _server: server,
        }
    }

    fn publish(&self, entries: &[(&str, u16)]) {
        let published: Published = entries
            .iter()
            .map(|(gw, port)| (gw.to_string(), resources(gw, *port)))
            .collect();
        self.configs.send_replace(Arc::new(published));
    }

    /// Starts a proxy of `gateway` holding `held`.
    fn proxy(&self, gateway: &str, held: Resources) -> Proxy {
        let (ns, name) = gateway.split_once('/').unwrap();
        let identity = GatewayIdentity::new(ns, name);
        let credentials = self.ca.issue_proxy(&identity, SystemTime::now()).unwrap();
        self.proxy_with(write_credentials(&credentials, name), held)
    }

    fn proxy_with(&self, credentials: PathBuf, held: Resources) -> Proxy {
        let (applied, configs) = mpsc::unbounded_channel();
        let refuse = Arc::new(AtomicBool::new(false));
        let mut recorder = Recorder {
            applied,
            refuse: refuse.clone(),
        };
        let subscription = Subscription {
            endpoint: self.address.clone(),
            server_name: SERVER_NAME.to_string(),
            credentials,
            node: "test-proxy".to_string(),
        };
        let task = tokio::spawn(async move { subscribe(subscription, held, &mut recorder).await });
        Proxy {
            configs,
            refuse,
            task,
        }
    }

    async fn report_until(
        &mut self,
        gateway: &str,
        done: impl Fn(&PoolReport) -> bool,
    ) -> PoolReport {
        let mut reports = self.reports.clone();
        let wait = reports.wait_for(|r| r.get(gateway).is_some_and(&done));
        match tokio::time::timeout(PATIENCE, wait).await {
            Ok(Ok(reports)) => reports.get(gateway).cloned().unwrap_or_default(),
            _ => panic!(
                "{gateway}: no such report; last {:?}",
                self.reports.borrow().get(gateway)
            ),
        }
    }
}

struct Proxy {
    configs: mpsc::UnboundedReceiver<Config>,
    refuse: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn next(&mut self) -> Config {
        tokio::time::timeout(PATIENCE, self.configs.recv())
            .await
            .expect("no config arrived")
            .unwrap()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn version(gateway: &str, port: u16) -> String {
    resources(gateway, port).version()
}

#[tokio::test]
async fn each_proxy_gets_its_gateway_then_only_the_changes() {
    let mut controller = Controller::start(BTreeMap::new()).await;
    controller.publish(&[("a/gw", 8080), ("b/gw", 8080)]);
    let mut a = controller.proxy("a/gw", Resources::default());
    assert_eq!(a.next().await, config("a/gw", 8080));
    let first = controller
        .report_until("a/gw", |r| r.acked == Some(version("a/gw", 8080)))
        .await;
    assert_eq!((first.connected, first.updates_sent), (1, 1));

    // One endpoint changes: one cluster resource goes out, not the world.
    controller.publish(&[("a/gw", 9090), ("b/gw", 8080)]);
    assert_eq!(a.next().await, config("a/gw", 9090));
    let second = controller
        .report_until("a/gw", |r| r.acked == Some(version("a/gw", 9090)))
        .await;
    let delta = second.bytes_sent - first.bytes_sent;
    assert!(
        delta * 2 < first.bytes_sent,
        "the change cost {delta} bytes, the whole config {}",
        first.bytes_sent
    );

    // b's proxy sees b's config only.
    let mut b = controller.proxy("b/gw", Resources::default());
    let got = b.next().await;
    assert_eq!(got, config("b/gw", 8080));
    assert!(got.sockets[0].listeners.iter().all(|l| l.gateway == "b/gw"));
}

#[tokio::test]
async fn a_rejected_update_is_reported_and_not_offered_again() {
    let mut controller = Controller::start(BTreeMap::new()).await;
    controller.publish(&[("a/gw", 8080)]);
    let mut a = controller.proxy("a/gw", Resources::default());
    a.next().await;
    a.refuse.store(true, Ordering::SeqCst);
    controller.publish(&[("a/gw", 9090)]);
    let report = controller
        .report_until("a/gw", |r| r.rejected.is_some())
        .await;
    let (rejected, why) = report.rejected.unwrap();
    assert_eq!(rejected, version("a/gw", 9090));
    assert_eq!(why, "refused by the test");
    assert_eq!(
        report.acked,
        Some(version("a/gw", 8080)),
        "still serving the old one"
    );

    // A later version is offered, applied and clears nothing it should not.
    a.refuse.store(false, Ordering::SeqCst);
    controller.publish(&[("a/gw", 7070)]);
    assert_eq!(a.next().await, config("a/gw", 7070));
    controller
        .report_until("a/gw", |r| r.acked == Some(version("a/gw", 7070)))
        .await;
}

#[tokio::test]
async fn a_proxy_already_serving_the_config_is_acknowledged_without_an_update() {
    let mut controller = Controller::start(BTreeMap::new()).await;
    controller.publish(&[("a/gw", 8080)]);
    let held = (*resources("a/gw", 8080)).clone();
    let _a = controller.proxy("a/gw", held);
    let report = controller
        .report_until("a/gw", |r| r.acked == Some(version("a/gw", 8080)))
        .await;
    assert_eq!(report.updates_sent, 0);
}

#[tokio::test]
async fn only_the_leader_serves_and_proxies_come_back_when_it_leads_again() {
    let mut controller = Controller::start(BTreeMap::new()).await;
    controller.publish(&[("a/gw", 8080)]);
    let mut a = controller.proxy("a/gw", Resources::default());
    a.next().await;
    controller
        .report_until("a/gw", |r| r.connected == 1 && r.acked.is_some())
        .await;

    controller.leading.send_replace(false);
    controller.report_until("a/gw", |r| r.connected == 0).await;
    controller.publish(&[("a/gw", 9090)]);
    controller.leading.send_replace(true);
    // The proxy dials again (with backoff) and catches up.
    assert_eq!(a.next().await, config("a/gw", 9090));
}

/// An update over `PART_BYTES` travels in parts and is applied (and
/// counted, and acknowledged) once, whole.
#[tokio::test]
async fn a_large_update_arrives_in_parts_and_is_applied_once() {
    let mut controller = Controller::start(BTreeMap::new()).await;
    let mut big = config("a/gw", 8080);
    let coxswain_ir::Serve::Http(routes) = &mut big.sockets[0].listeners[0].serve else {
        panic!("the test listener serves HTTP");
    };
    let template = (*routes[0]).clone();
    for i in 1..8000u32 {
        let mut route = template.clone();
        route.id.rule_index = i;
        routes.push(Arc::new(route));
    }
    let resources = Arc::new(Resources::from_config(&big).unwrap());
    let whole = resources.update_from(&Resources::default()).unwrap();
    let bytes: usize = whole.upserts.iter().map(|r| r.body.len()).sum();
    assert!(
        bytes > 2 * coxswain_stream::parts::PART_BYTES,
        "{bytes} bytes"
    );
    let version = resources.version();
    controller
        .configs
        .send_replace(Arc::new(BTreeMap::from([("a/gw".to_string(), resources)])));
    let mut a = controller.proxy("a/gw", Resources::default());
    assert_eq!(a.next().await, big);
    let report = controller
        .report_until("a/gw", |r| r.acked == Some(version.clone()))
        .await;
    assert_eq!(report.updates_sent, 1);
    assert!(a.configs.try_recv().is_err(), "applied once");
}

/// A dedicated Gateway with no usable listener still has a pool: its
/// fresh proxy is told the (empty) config, so it serves it and turns ready.
#[tokio::test]
async fn a_fresh_proxy_of_an_empty_config_is_told_so() {
    let mut controller = Controller::start(BTreeMap::new()).await;
    let empty = Arc::new(Resources::default());
    let version = empty.version();
    controller
        .configs
        .send_replace(Arc::new(BTreeMap::from([("a/gw".to_string(), empty)])));
    let mut a = controller.proxy("a/gw", Resources::default());
    let served = a.next().await;
    assert!(served.sockets.is_empty() && served.clusters.is_empty());
    let report = controller
        .report_until("a/gw", |r| r.acked == Some(version.clone()))
        .await;
    assert_eq!(report.updates_sent, 1);
}

#[tokio::test]
async fn a_gateway_not_published_yet_is_sent_nothing() {
    let mut controller = Controller::start(BTreeMap::new()).await;
    let mut a = controller.proxy("a/gw", Resources::default());
    controller.report_until("a/gw", |r| r.connected == 1).await;
    assert!(a.configs.try_recv().is_err(), "nothing to serve yet");
    controller.publish(&[("a/gw", 8080)]);
    assert_eq!(a.next().await, config("a/gw", 8080));
}

#[tokio::test]
async fn a_certificate_of_another_ca_or_without_a_gateway_is_refused() {
    let mut controller = Controller::start(BTreeMap::new()).await;
    controller.publish(&[("a/gw", 8080)]);
    let stranger = Authority::generate(SystemTime::now()).unwrap();
    let foreign = stranger
        .issue_proxy(&GatewayIdentity::new("a", "gw"), SystemTime::now())
        .unwrap();
    // Trusts our server, presents a certificate our CA never issued.
    let foreign = Credentials {
        ca_pem: controller.ca.cert_pem().to_string(),
        ..foreign
    };
    let mut intruder =
        controller.proxy_with(write_credentials(&foreign, "foreign"), Resources::default());
    // Ours, but naming no Gateway (a server certificate).
    let nameless = controller
        .ca
        .issue_server("x.test", SystemTime::now())
        .unwrap();
    let mut nobody = controller.proxy_with(
        write_credentials(&nameless, "nameless"),
        Resources::default(),
    );
    let refusals = controller.refused.wait_for(|n| *n >= 2);
    tokio::time::timeout(PATIENCE, refusals)
        .await
        .unwrap()
        .unwrap();
    let mut a = controller.proxy("a/gw", Resources::default());
    a.next().await;
    let reports = controller.reports.borrow().clone();
    assert_eq!(reports.len(), 1, "only a/gw subscribed: {reports:?}");
    assert_eq!(reports["a/gw"].connected, 1);
    assert!(intruder.configs.try_recv().is_err());
    assert!(nobody.configs.try_recv().is_err());
}

#[test]
fn the_last_good_snapshot_round_trips_and_refuses_tampering() {
    let dir = temp_dir("snapshot");
    assert!(snapshot::load(&dir).unwrap().is_none(), "no snapshot yet");
    let saved = resources("a/gw", 8080);
    snapshot::save(&dir, &saved).unwrap();
    let (loaded, config) = snapshot::load(&dir).unwrap().unwrap();
    assert_eq!(&loaded, &*saved);
    assert_eq!(config, self::config("a/gw", 8080));

    let path = snapshot::path(&dir);
    // It may hold private keys: readable by this user only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("10.0.0.1", "10.6.6.6")).unwrap();
    let error = snapshot::load(&dir).unwrap_err().to_string();
    assert!(error.contains("fails verification"), "{error}");
    std::fs::write(&path, "{not json").unwrap();
    assert!(snapshot::load(&dir).is_err());
}
