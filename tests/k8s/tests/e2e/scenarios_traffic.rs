//! Traffic through the Gateway address reaches the echo pods.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure};
use coxswain_k8s_tests::kubectl::is_true;
use coxswain_k8s_tests::poll;
use serde_json::Value;

use crate::fixtures::{CAP, NS, condition_state, ensure_demo, get, route_parent};
use crate::setup::{Env, POOL};

/// Names of the echo pods that are Running and Ready.
pub fn ready_echo_pods(env: &Env) -> anyhow::Result<BTreeSet<String>> {
    let pods = env.admin.get_json(&["-n", NS, "pods", "-l", "app=echo"])?;
    Ok(pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| is_true(&p["status"]["conditions"], "Ready"))
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect())
}

/// Ready endpoint target pods of the echo Service.
pub fn ready_endpoints(env: &Env) -> anyhow::Result<BTreeSet<String>> {
    let slices = env.admin.get_json(&[
        "-n",
        NS,
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=echo",
    ])?;
    let endpoints = slices["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default());
    Ok(endpoints
        .filter(|e: &Value| e["conditions"]["ready"].as_bool() == Some(true))
        .filter_map(|e| e["targetRef"]["name"].as_str().map(str::to_string))
        .collect())
}

/// Sends up to `max` requests to `/`; returns the pods that answered.
fn pods_answering(
    env: &Env,
    max: usize,
    want: &BTreeSet<String>,
) -> anyhow::Result<(BTreeSet<String>, usize)> {
    let mut seen = BTreeSet::new();
    for sent in 1..=max {
        let response = get(env, "/")?;
        ensure!(
            response.status == 200,
            "request {sent}: status {}",
            response.status
        );
        let pod = response
            .echo_pod()
            .ok_or_else(|| anyhow!("no pod in {}", response.body))?;
        seen.insert(pod);
        if want.is_subset(&seen) {
            return Ok((seen, sent));
        }
    }
    Ok((seen, max))
}

pub fn both_pods_serve(env: &mut Env) -> anyhow::Result<()> {
    let address = ensure_demo(env)?;
    let pool: Vec<u8> = POOL
        .split(['.', '/'])
        .filter_map(|p| p.parse().ok())
        .collect();
    let ip = address.ip().to_string();
    ensure!(
        ip.starts_with(&format!("{}.{}.{}.", pool[0], pool[1], pool[2])),
        "Gateway address {ip} is not from {POOL}"
    );
    let parent = route_parent(env, NS, "echo")?;
    for type_ in ["Accepted", "ResolvedRefs"] {
        let state = condition_state(&parent["conditions"], type_);
        ensure!(
            state.as_ref().map(|s| s.0.as_str()) == Some("True"),
            "route {type_}: {state:?}"
        );
    }
    let pods = poll::until("two echo pods Ready and in the EndpointSlice", CAP, || {
        let pods = ready_echo_pods(env)?;
        Ok((pods.len() == 2 && ready_endpoints(env)? == pods).then_some(pods))
    })?;
    let (seen, sent) = pods_answering(env, 100, &pods)?;
    ensure!(
        seen == pods,
        "after {sent} requests only {seen:?} answered, want {pods:?}"
    );
    println!("    Gateway demo at {address}; both pods {pods:?} answered within {sent} requests");
    Ok(())
}

pub fn pod_delete_other_pod_serves(env: &mut Env) -> anyhow::Result<()> {
    ensure_demo(env)?;
    let pods = poll::until("two echo pods Ready", CAP, || {
        let pods = ready_echo_pods(env)?;
        Ok((pods.len() == 2).then_some(pods))
    })?;
    let victim = pods
        .iter()
        .next()
        .cloned()
        .ok_or_else(|| anyhow!("no pod"))?;
    let deleted = Instant::now();
    env.admin
        .run(&["-n", NS, "delete", "pod", &victim, "--wait=false"])?;
    // Until the EndpointSlice drops it a request may still pick the victim;
    // count those failures, then require a clean run without it.
    let mut failures = 0;
    poll::until("deleted pod out of the EndpointSlice", CAP, || {
        if get(env, "/").map(|r| r.status != 200).unwrap_or(true) {
            failures += 1;
        }
        Ok((!ready_endpoints(env)?.contains(&victim)).then_some(()))
    })?;
    let gone_after = deleted.elapsed();
    for sent in 1..=20 {
        let response = get(env, "/")?;
        ensure!(
            response.status == 200,
            "request {sent} after the endpoint update: {}",
            response.status
        );
        let pod = response.echo_pod().unwrap_or_default();
        if pod == victim {
            bail!("request {sent} was answered by the deleted pod {victim}");
        }
    }
    println!(
        "    deleted {victim}; out of the EndpointSlice after {:.0} ms ({failures} failed requests meanwhile); 20/20 served by others",
        gone_after.as_secs_f64() * 1e3
    );
    // Leave two Ready pods for the next scenarios.
    poll::until("replacement pod Ready", Duration::from_secs(60), || {
        Ok((ready_echo_pods(env)?.len() == 2).then_some(()))
    })?;
    Ok(())
}
