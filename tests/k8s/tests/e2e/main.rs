//! End-to-end tests of Coxswain on a real control plane (custom harness):
//! one environment is set up, the scenarios run in order, each printing
//! `ok` or `FAILED`, then a closing `N passed, M failed` line. The process
//! exits non-zero when setup or any scenario fails. Needs root; it fails
//! (never skips) when the machine cannot run it. See docs/kubernetes.md.

mod fixtures;
mod load;
mod replicas;
mod scenarios_apiserver;
mod scenarios_chart;
mod scenarios_churn;
mod scenarios_filters;
mod scenarios_ingress;
mod scenarios_leader;
mod scenarios_migrate;
mod scenarios_pool_failover;
mod scenarios_pools;
mod scenarios_rbac;
mod scenarios_routes;
mod scenarios_status;
mod scenarios_traffic;
mod setup;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::time::Instant;

use setup::Env;

type Scenario = fn(&mut Env) -> anyhow::Result<()>;

const SCENARIOS: &[(&str, Scenario)] = &[
    (
        "gatewayclass_accepted_with_supported_features",
        scenarios_status::gatewayclass_accepted,
    ),
    (
        "gateway_programmed_and_both_pods_serve",
        scenarios_traffic::both_pods_serve,
    ),
    (
        "route_change_is_followed",
        scenarios_routes::route_change_is_followed,
    ),
    (
        "route_delete_gives_404",
        scenarios_routes::route_delete_gives_404,
    ),
    (
        "pod_delete_other_pod_serves",
        scenarios_traffic::pod_delete_other_pod_serves,
    ),
    (
        "pod_churn_under_load_loses_nothing",
        scenarios_churn::pod_churn_under_load_loses_nothing,
    ),
    (
        "endpoint_churn_recompiles_nothing",
        scenarios_churn::endpoint_churn_recompiles_nothing,
    ),
    (
        "cross_namespace_backend_needs_reference_grant",
        scenarios_routes::cross_namespace_reference_grant,
    ),
    (
        "coxswain_filters_enforced_and_reported",
        scenarios_filters::filters_enforced_and_reported,
    ),
    (
        "client_traffic_policy_reported",
        scenarios_filters::client_traffic_policy_reported,
    ),
    (
        "ingress_served_with_load_balancer_status",
        scenarios_ingress::ingress_served_with_load_balancer_status,
    ),
    (
        "migrate_from_cluster_reads_what_kubectl_applied",
        scenarios_migrate::migrate_from_cluster,
    ),
    (
        "noop_reapply_keeps_status",
        scenarios_status::noop_reapply_keeps_status,
    ),
    (
        "route_status_echo_is_not_translated",
        scenarios_status::route_status_echo_is_not_translated,
    ),
    (
        "chart_rbac_is_enough_and_least",
        scenarios_rbac::chart_rbac_is_enough_and_least,
    ),
    (
        "chart_deployment_pod_ready",
        scenarios_chart::chart_deployment_pod_ready,
    ),
    // Restarts the controller (with pools), then restores the suite's.
    (
        "dedicated_pool_fed_by_the_config_stream",
        scenarios_pools::dedicated_pool_lifecycle,
    ),
    (
        "dedicated_pool_survives_controller_failover",
        scenarios_pool_failover::pool_survives_controller_failover,
    ),
    // These two stop and restart the controller and the API server: last.
    (
        "leader_election_and_handoff",
        scenarios_leader::leader_election_and_handoff,
    ),
    (
        "apiserver_loss_keeps_serving",
        scenarios_apiserver::apiserver_loss_keeps_serving,
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in SCENARIOS {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    // Like libtest: positional arguments are name filters.
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let selected: Vec<&(&str, Scenario)> = SCENARIOS
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    if selected.is_empty() {
        println!("0 passed, 0 failed ({} filtered out)", SCENARIOS.len());
        return ExitCode::SUCCESS;
    }
    let started = Instant::now();
    let (passed, failed) = match run(&selected) {
        Ok(counts) => counts,
        Err(error) => {
            println!("setup FAILED: {error:#}");
            (0, selected.len())
        }
    };
    println!(
        "{passed} passed, {failed} failed ({:.1}s in all)",
        started.elapsed().as_secs_f64()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run(selected: &[&(&str, Scenario)]) -> anyhow::Result<(usize, usize)> {
    setup::preflight()?;
    let setup_started = Instant::now();
    let mut env = Env::start()?;
    println!("setup ok ({:.1}s)", setup_started.elapsed().as_secs_f64());
    let mut passed = 0;
    // Repeated after the log tails, so a truncated CI log still names them.
    let mut failures = Vec::new();
    for (name, scenario) in selected {
        let started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| scenario(&mut env)));
        let seconds = started.elapsed().as_secs_f64();
        match outcome {
            Ok(Ok(())) => {
                passed += 1;
                println!("scenario {name} ... ok ({seconds:.1}s)");
            }
            Ok(Err(error)) => {
                let line = format!("scenario {name} ... FAILED ({seconds:.1}s): {error:#}");
                println!("{line}");
                failures.push(line);
            }
            Err(_) => {
                let line = format!("scenario {name} ... FAILED ({seconds:.1}s): panicked");
                println!("{line}");
                failures.push(line);
            }
        }
    }
    let failed = failures.len();
    if failed > 0 {
        println!("controller log tail:\n{}", env.controller.log_tail(40));
        println!("fakelet log tail:\n{}", env.fakelet.log_tail(20));
        println!("logs in {}", env.cluster.run_dir.display());
        println!("failed scenarios:");
        for line in &failures {
            println!("  {line}");
        }
    }
    let teardown = Instant::now();
    drop(env);
    eprintln!("[e2e] teardown: {:.1}s", teardown.elapsed().as_secs_f64());
    Ok((passed, failed))
}
