//! Explain against the proxy's router on many requests: the same winner,
//! and near-miss reasons that agree with it (exactly the matches the
//! router could have taken are "precedence" misses).

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use coxswain_ir::Config;
use coxswain_proxy::PathOptions;
use coxswain_proxy::router::{RequestView, Router};

use super::model::{Field, Outcome};
use super::request::ExplainRequest;
use super::{explain_request, source};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../translate/tests/golden")
}

/// The IR of one golden scenario, loaded from a directory as `run` would
/// (`None` for the scenarios the loader itself refuses).
fn golden_config(name: &str) -> Option<Config> {
    let dir = std::env::temp_dir().join(format!("coxswain-explain-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(golden_dir().join(name)).unwrap();
    std::fs::write(dir.join("config.yaml"), text).unwrap();
    let config = source::from_dir(
        &dir,
        coxswain_translate::DEFAULT_CONTROLLER_NAME,
        IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    config.ok()
}

const HOSTS: &[&str] = &[
    "a.example.com",
    "example.com",
    "foo.bar.example.com",
    "other.test",
];
const PATHS: &[&str] = &[
    "/",
    "/foo",
    "/foo/bar/baz",
    "/foobar",
    "/api/v1",
    "/v1/a",
    "/home",
];
const METHODS: &[&str] = &["GET", "POST"];
const HEADERS: &[&[&str]] = &[&[], &["x-a: 1", "x-b: 2"], &["version: two"]];
const QUERIES: &[&str] = &["", "?animal=whale&q=1"];

#[test]
fn explain_and_the_router_pick_the_same_rule_on_many_requests() {
    let mut files: Vec<String> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("httproute-") && n.ends_with(".in.yaml"))
        .collect();
    files.sort();
    assert!(files.len() > 50, "{files:?}");
    let mut routed = 0;
    for file in &files {
        let Some(config) = golden_config(file) else {
            continue;
        };
        let router = Router::compile(&config);
        for socket in config.sockets.iter().filter(|s| !s.reads_client_hello()) {
            let port = socket.port;
            for host in HOSTS {
                for path in PATHS {
                    for method in METHODS {
                        for headers in HEADERS {
                            for query in QUERIES {
                                let url = format!("http://{host}:{port}{path}{query}");
                                let words = [method.to_string(), url];
                                let headers: Vec<String> =
                                    headers.iter().map(|h| h.to_string()).collect();
                                let req = ExplainRequest::parse(
                                    &words,
                                    &headers,
                                    None,
                                    &PathOptions::default(),
                                )
                                .unwrap();
                                let explained =
                                    explain_request(&config, &router, &req, Some(socket.address));
                                let view = RequestView {
                                    host: &req.host,
                                    method: &req.method,
                                    path: req.path.as_deref().unwrap(),
                                    query: req.query.as_deref(),
                                    headers: &req.headers,
                                };
                                let hit = router.lookup(socket.addr(), &view);
                                let context = format!("{file}: {} {}", words[0], words[1]);
                                let explained_id = explained
                                    .route
                                    .as_ref()
                                    .map(|r| (r.namespace.clone(), r.name.clone(), r.rule_index));
                                let router_id = hit.map(|h| {
                                    (
                                        h.route.id.namespace.clone(),
                                        h.route.id.name.clone(),
                                        h.route.id.rule_index,
                                    )
                                });
                                assert_eq!(explained_id, router_id, "{context}");
                                assert_eq!(
                                    explained.verdict.outcome == Outcome::Routed,
                                    hit.is_some(),
                                    "{context}"
                                );
                                let precedence_only = explained.near_misses.iter().filter(|m| {
                                    !m.reasons.is_empty()
                                        && m.reasons.iter().all(|r| r.field == Field::Precedence)
                                });
                                // A miss with no failed condition is one the router
                                // could have taken: there is a winner to rank below.
                                if hit.is_none() {
                                    assert_eq!(precedence_only.count(), 0, "{context}");
                                    assert!(
                                        explained.near_misses.iter().all(|m| !m.reasons.is_empty()),
                                        "{context}"
                                    );
                                } else {
                                    routed += 1;
                                    assert!(
                                        explained.near_misses.iter().all(|m| !m.reasons.is_empty()),
                                        "{context}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(routed > 500, "only {routed} requests were routed");
}
