//! Golden tests for the translator.
//!
//! Each `tests/golden/<kind>-<scenario>.in.yaml` is multi-document Kubernetes
//! YAML. The harness builds a [`Snapshot`] from it, runs [`translate`] and
//! renders ONE YAML document `{objects, ir}`: every input object in input
//! order (namespace defaulted to `default`, `status` set from the translator),
//! the Gateways with a proxy pool of their own (`dedicated`, when any) and
//! the IR. That rendering must equal `<same>.out.yaml`;
//! `UPDATE_GOLDEN=1 cargo test -p coxswain-translate --test golden` rewrites
//! the outputs. An `.out.yaml` without an `.in.yaml` fails, and so does a
//! scenario without any `# expect:` line.
//! Rewriting never skips the expectations: a scenario whose expectations fail
//! still fails, so only regenerate once they pass and then read the diff.
//!
//! # Expectations
//!
//! Comment lines `# expect: ...` in the input are checked on their own, so a
//! regenerated golden file cannot bless a wrong result. Tokens are separated
//! by spaces; keys are `namespace/name`, or `name` (namespace `default`, or
//! cluster scope for GatewayClass/Namespace).
//!
//! Status (`<Kind> <key> [selectors] <assertion>`):
//! - selectors: `listener=<name>` (a Gateway listener); for HTTPRoute
//!   `parent=<gateway>` with optional `parentns=<ns>` (default: the route's
//!   namespace), `section=<sectionName>` and `port=<port>`; the parent entry's
//!   parentRef must carry exactly that sectionName/port (none when not given).
//!   A route with one parent entry needs no selector.
//! - `<Type>=<True|False|Unknown> [<Reason>]`, or `<Type>=absent`.
//! - `attachedRoutes=<n>`, `supportedKinds=<Kind,...>` (`-` for none).
//! - `parents=<n>` (HTTPRoute: number of parent entries).
//! - Ingress: `lb=<ip>:<port,...>` (status.loadBalancer), `problems=<n>`,
//!   `problem=<text>` (a problem containing it; no spaces); `no-status`
//!   for an Ingress that is not ours.
//! - `no-status` (no status; for HTTPRoute also: no parent entries).
//! - `absent` (the selected listener or parent entry does not exist).
//!
//! IR (`ir ...`):
//! - `ir sockets=<n> routes=<n> clusters=<n>` (any subset): sockets, rules
//!   over every gateway listener, clusters.
//! - `ir cluster=<ns/svc:port> endpoints=<n> [protocol=<Http1|H2c>]`.
//! - `ir socket=<addr:port>[/udp] ids=<ns/gw/listener,...>` (listeners in order),
//!   `serves=<HTTP|HTTPS|TLS-Passthrough|TLS-Terminate|TCP|UDP,...>`.
//! - `ir on=<ns/gw/listener> order=<ns/route#rule,...>`: IR order;
//!   `ranking=...`: order after stable-sorting all matches by
//!   `MatchSpecificity` (what the proxy tries first for one host);
//!   `routes=<n>`, `hostname=<h|->`.
//! - `ir route=<ns/route#rule> [on=<ns/gw/listener>] ...` (first occurrence);
//!   `<ns/route#rule@name>` picks the rule with that rule name (`@` alone:
//!   the one without).
//! - Any selected IR item accepts `/json/pointer=<JSON or string>` as its last
//!   token (the value runs to the end of the line, `absent` for missing), and
//!   the item itself accepts `absent`.

#[path = "golden_support/diff.rs"]
mod diff;
#[path = "golden_support/expect.rs"]
mod expect;
#[path = "golden_support/expect_ir.rs"]
mod expect_ir;
#[path = "golden_support/load.rs"]
mod load;

use std::path::{Path, PathBuf};

use coxswain_api::Snapshot;
use coxswain_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use coxswain_api::k8s_openapi::jiff::Timestamp;
use coxswain_translate::{DEFAULT_CONTROLLER_NAME, Options, Output, translate};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn options(text: &str) -> Options {
    let dedicated_pools = text
        .lines()
        .any(|l| l.trim() == "# options: dedicated-pools");
    Options {
        controller_name: DEFAULT_CONTROLLER_NAME.into(),
        default_address: [0, 0, 0, 0].into(),
        now: Time(Timestamp::from_second(1_767_225_600).unwrap()),
        ingress: Default::default(),
        dedicated_pools,
    }
}

/// Renders the `.out.yaml` document for one translated scenario. Built from
/// YAML values so input key order (and IR field order) is kept.
fn render(objects: &[load::InputObject], output: &Output) -> String {
    use serde_yaml_ng::{Mapping, Value};
    let objects: Vec<Value> = objects
        .iter()
        .map(|input| {
            let mut value = input.yaml.clone();
            let status = output
                .statuses
                .status_json(input.object.kind(), &input.object.key());
            if let (Some(status), Value::Mapping(map)) = (status, &mut value) {
                map.insert("status".into(), serde_yaml_ng::to_value(status).unwrap());
            }
            value
        })
        .collect();
    let mut document = Mapping::new();
    document.insert("objects".into(), Value::Sequence(objects));
    // Ingress status has no conditions: what is not served shows here.
    let ingress_problems: Mapping = output
        .statuses
        .ingresses
        .iter()
        .filter(|(_, o)| !o.problems.is_empty())
        .map(|(key, o)| {
            let problems = o.problems.iter().map(|p| Value::String(p.to_string()));
            (
                Value::String(key.to_string()),
                Value::Sequence(problems.collect()),
            )
        })
        .collect();
    if !ingress_problems.is_empty() {
        document.insert("ingressProblems".into(), Value::Mapping(ingress_problems));
    }
    // Gateways served by a pool of their own, and the parameters of it.
    if !output.dedicated.is_empty() {
        let dedicated: Mapping = output
            .dedicated
            .iter()
            .map(|(gateway, parameters)| {
                let source = coxswain_api::ObjectKey::of(&parameters.metadata);
                (gateway.as_str().into(), Value::String(source.to_string()))
            })
            .collect();
        document.insert("dedicated".into(), Value::Mapping(dedicated));
    }
    document.insert("ir".into(), serde_yaml_ng::to_value(&output.ir).unwrap());
    serde_yaml_ng::to_string(&document).unwrap()
}

/// Runs one scenario; returns every problem found.
fn run_scenario(input_path: &Path, update: bool) -> Vec<String> {
    let text = std::fs::read_to_string(input_path).unwrap();
    let objects = match load::parse_objects(&text) {
        Ok(objects) => objects,
        Err(e) => return vec![format!("cannot parse input: {e}")],
    };
    let snapshot: Snapshot = load::snapshot(&objects);
    let output = translate(&snapshot, &options(&text));
    let mut problems = Vec::new();

    let expectations = expect::extract(&text);
    if expectations.is_empty() {
        problems.push("no `# expect:` line".to_string());
    }
    for expectation in &expectations {
        if let Err(why) = expect::check(expectation, &output) {
            problems.push(format!(
                "line {}: expect: {}\n      -> {why}",
                expectation.line, expectation.text
            ));
        }
    }

    let rendered = render(&objects, &output);
    let out_path = out_path_for(input_path);
    if update {
        std::fs::write(&out_path, &rendered).unwrap();
    } else {
        match std::fs::read_to_string(&out_path) {
            Ok(golden) if golden == rendered => {}
            Ok(golden) => problems.push(format!(
                "output drifted from {} (- golden, + actual):\n{}",
                out_path.display(),
                diff::unified(&golden, &rendered)
            )),
            Err(_) => problems.push(format!(
                "missing {} (run with UPDATE_GOLDEN=1)",
                out_path.display()
            )),
        }
    }
    problems
}

fn out_path_for(input: &Path) -> PathBuf {
    let name = input.file_name().unwrap().to_string_lossy();
    input.with_file_name(name.replace(".in.yaml", ".out.yaml"))
}

fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

fn scenario_name(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    name.split(".in.yaml")
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn golden_scenarios() {
    let dir = golden_dir();
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v != "0");
    let inputs = files_ending(&dir, ".in.yaml");
    assert!(!inputs.is_empty(), "no scenarios in {}", dir.display());

    let mut failures = Vec::new();
    for input in &inputs {
        let problems = run_scenario(input, update);
        if !problems.is_empty() {
            failures.push(format!(
                "--- {}\n  {}",
                scenario_name(input),
                problems.join("\n  ")
            ));
        }
    }
    for out in files_ending(&dir, ".out.yaml") {
        let name = out.file_name().unwrap().to_string_lossy();
        let input = out.with_file_name(name.replace(".out.yaml", ".in.yaml"));
        if !input.exists() {
            failures.push(format!("--- orphan {name}: no matching .in.yaml"));
        }
    }
    let total = inputs.len();
    assert!(
        failures.is_empty(),
        "{} of {total} golden checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn scenario_names_follow_kind_dash_scenario() {
    for input in files_ending(&golden_dir(), ".in.yaml") {
        let name = scenario_name(&input);
        let kind = name.split('-').next().unwrap_or_default();
        assert!(
            [
                "gatewayclass",
                "gateway",
                "listener",
                "httproute",
                "grpcroute",
                "tlsroute",
                "tcproute",
                "udproute",
                "backendtlspolicy",
                "backendpolicy",
                "backendtrafficpolicy",
                "clienttrafficpolicy",
                "listenerset",
                "endpoints",
                "referencegrant",
                "extensionref",
                "ipaccesscontrol",
                "basicauth",
                "compression",
                "externalauth",
                "jwtauth",
                "pathrewriteregex",
                "ratelimit",
                "requestsizelimit",
                "ingress"
            ]
            .contains(&kind)
                && name.contains('-'),
            "{name}: expected <kind>-<scenario>"
        );
    }
}
