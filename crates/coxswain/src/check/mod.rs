//! `coxswain check DIR`: the whole pipeline except serving, offline;
//! `coxswain check --diff DIR_A DIR_B`: what changes between two configs.

mod describe;
mod diff;

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::ExitCode;

use coxswain_api::{Kind, Object};
use coxswain_ir::REDACTED_KEY;
use coxswain_provider_file::{Loaded, load_dir};
use coxswain_translate::{IngressOutcome, Options, Output, translate};

use crate::cli::{CheckArgs, OutputFormat};
use crate::conditions::conditions;

const EXIT_REJECTED: u8 = 1;
const EXIT_LOAD_FAILED: u8 = 2;

/// Loads and translates `dir`; on load errors prints them and gives up.
fn load_and_translate(dir: &Path, args: &CheckArgs) -> Option<(Loaded, Output)> {
    let loaded = load_dir(dir);
    if !loaded.errors.is_empty() {
        for error in &loaded.errors {
            eprintln!("{error}");
        }
        eprintln!("{} error(s) loading {}", loaded.errors.len(), dir.display());
        return None;
    }
    let options = Options {
        controller_name: args.controller_name.as_str().into(),
        default_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        now: crate::run::now(),
        ingress: args.ingress.options(),
        dedicated_pools: false,
    };
    let output = translate(&loaded.snapshot, &options);
    Some((loaded, output))
}

pub fn check(args: &CheckArgs) -> ExitCode {
    match (args.diff, args.dirs.as_slice()) {
        (true, [a, b]) if args.output.is_none() => diff::run(a, b, args),
        (true, [_, _]) => usage("--diff prints its own report: drop -o"),
        (true, _) => usage("--diff compares two directories: check --diff DIR_A DIR_B"),
        (false, [dir]) => check_one(dir, args),
        (false, _) => usage("check takes one directory (two only with --diff)"),
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_LOAD_FAILED)
}

fn check_one(dir: &Path, args: &CheckArgs) -> ExitCode {
    let Some((loaded, output)) = load_and_translate(dir, args) else {
        return ExitCode::from(EXIT_LOAD_FAILED);
    };
    let printed = match args.output {
        None => {
            print_summary(&loaded.objects, &output);
            Ok(())
        }
        Some(OutputFormat::Describe) => {
            print!("{}", describe::describe(&loaded.objects, &output));
            Ok(())
        }
        Some(format) => print_list(&loaded.objects, &output, format),
    };
    if let Err(e) = printed {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    if output.all_accepted() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_REJECTED)
    }
}

fn print_summary(objects: &[Object], output: &Output) {
    let mut problems = 0;
    for object in objects {
        let (kind, key) = (object.kind(), object.key());
        if kind == Kind::Ingress
            && let Some(outcome) = output.statuses.ingresses.get(&key)
        {
            if !outcome.problems.is_empty() {
                problems += 1;
            }
            println!("{kind} {key}: {}", describe_ingress(outcome));
            continue;
        }
        let Some(status) = output.statuses.status_json(kind, &key) else {
            println!("{kind} {key}: loaded");
            continue;
        };
        let found = conditions(&status);
        if found.iter().any(|c| c.is_problem()) {
            problems += 1;
        }
        let described: Vec<String> = found.iter().map(|c| c.describe()).collect();
        if described.is_empty() {
            println!("{kind} {key}: no conditions");
        } else {
            println!("{kind} {key}: {}", described.join(", "));
        }
    }
    println!("{} object(s), {problems} with problems", objects.len());
}

/// `loadBalancer 0.0.0.0:80,443`, then each problem.
fn describe_ingress(outcome: &IngressOutcome) -> String {
    let served: Vec<String> = outcome
        .status
        .load_balancer
        .iter()
        .flat_map(|lb| lb.ingress.iter().flatten())
        .map(|i| {
            let ports: Vec<String> = i
                .ports
                .iter()
                .flatten()
                .map(|p| p.port.to_string())
                .collect();
            format!("{}:{}", i.ip.as_deref().unwrap_or("-"), ports.join(","))
        })
        .collect();
    let mut parts = vec![format!("loadBalancer {}", served.join(" "))];
    parts.extend(outcome.problems.iter().map(|p| format!("problem: {p}")));
    parts.join("; ")
}

/// A Secret's values never leave the process: every `data` and
/// `stringData` entry is printed as a marker (the keys stay, so the shape
/// can still be checked).
fn redact_secret(secret: &mut serde_json::Value) {
    for field in ["data", "stringData"] {
        if let Some(map) = secret.get_mut(field).and_then(|d| d.as_object_mut()) {
            for value in map.values_mut() {
                *value = serde_json::Value::String(REDACTED_KEY.to_string());
            }
        }
    }
}

fn print_list(objects: &[Object], output: &Output, format: OutputFormat) -> anyhow::Result<()> {
    let mut items = Vec::with_capacity(objects.len());
    for object in objects {
        let mut value = object.to_json()?;
        if object.kind() == Kind::Secret {
            redact_secret(&mut value);
        }
        if let (Some(status), Some(map)) = (
            output.statuses.status_json(object.kind(), &object.key()),
            value.as_object_mut(),
        ) {
            map.insert("status".to_string(), status);
        }
        items.push(value);
    }
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    match format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&list)?),
        OutputFormat::Yaml => print!("{}", serde_yaml_ng::to_string(&list)?),
        OutputFormat::Describe => print!("{}", describe::describe(objects, output)),
    }
    Ok(())
}
