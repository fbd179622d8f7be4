//! `coxswain check`: exit codes 0/1/2 and the `-o json` List.

use crate::support;

use std::process::Command;

use support::{BIN, TempDir, quickstart_config};

fn check(dir: &TempDir, extra: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("check")
        .arg(dir.path())
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn accepted_config_exits_zero_with_a_summary() {
    let dir = TempDir::new("check-ok");
    quickstart_config(&dir, 8080, 3000);
    let (code, stdout, _) = check(&dir, &[]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("HTTPRoute default/echo: parent quickstart Accepted=True"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Gateway default/quickstart: Accepted=True"),
        "{stdout}"
    );
}

#[test]
fn rejected_route_exits_one_and_says_why() {
    let dir = TempDir::new("check-rejected");
    quickstart_config(&dir, 8080, 3000);
    let routes = std::fs::read_to_string(dir.path().join("routes.yaml")).unwrap();
    dir.write(
        "routes.yaml",
        &routes.replacen("- name: echo\n", "- name: missing\n", 1),
    );
    let (code, stdout, _) = check(&dir, &[]);
    assert_eq!(code, 1, "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("HTTPRoute default/echo:"))
        .unwrap();
    assert!(
        line.contains("ResolvedRefs=False (BackendNotFound"),
        "{line}"
    );
}

#[test]
fn rejected_filter_resource_exits_one() {
    let dir = TempDir::new("check-filter");
    quickstart_config(&dir, 8080, 3000);
    dir.write(
        "filters.yaml",
        "apiVersion: gateway.coxswain-labs.dev/v1alpha1\n\
         kind: Compression\n\
         metadata: {name: c, namespace: default}\n\
         spec: {gzip: true, level: 12}\n",
    );
    let (code, stdout, _) = check(&dir, &[]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("Compression default/c: Accepted=False (Invalid"),
        "{stdout}"
    );
}

#[test]
fn load_error_exits_two_with_file_and_line() {
    let dir = TempDir::new("check-bad");
    quickstart_config(&dir, 8080, 3000);
    let routes = std::fs::read_to_string(dir.path().join("routes.yaml")).unwrap();
    // Line 13 of routes.yaml holds the first rule's `value: /`.
    let broken = routes.replacen("value: /\n", "value: no-slash\n", 1);
    let path = dir.write("routes.yaml", &broken);
    let line = broken.lines().position(|l| l.contains("no-slash")).unwrap() + 1;
    let (code, _, stderr) = check(&dir, &[]);
    assert_eq!(code, 2, "{stderr}");
    let expected = format!("{}:{line}:", path.display());
    assert!(stderr.contains(&expected), "want {expected} in:\n{stderr}");
    assert!(stderr.contains("must start with '/'"), "{stderr}");
}

#[test]
fn json_output_is_a_list_with_statuses() {
    let dir = TempDir::new("check-json");
    quickstart_config(&dir, 8080, 3000);
    let (code, stdout, _) = check(&dir, &["-o", "json"]);
    assert_eq!(code, 0);
    let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 6);
    let route = items
        .iter()
        .find(|i| i["kind"] == "HTTPRoute" && i["metadata"]["name"] == "api")
        .unwrap();
    assert_eq!(route["apiVersion"], "gateway.networking.k8s.io/v1");
    assert_eq!(route["metadata"]["namespace"], "default");
    let conditions = route["status"]["parents"][0]["conditions"]
        .as_array()
        .unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Accepted" && c["status"] == "True")
    );
    let service = items.iter().find(|i| i["kind"] == "Service").unwrap();
    assert!(
        service
            .get("status")
            .is_none_or(|s| s.get("conditions").is_none())
    );

    let (code, stdout, _) = check(&dir, &["-o", "yaml"]);
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with("apiVersion: v1\nkind: List\n") || stdout.contains("kind: List"),
        "{stdout}"
    );
}

#[test]
fn secrets_are_printed_without_their_values() {
    let dir = TempDir::new("check-secret");
    dir.write(
        "secret.yaml",
        "apiVersion: v1
kind: Secret
metadata:
  name: cert
type: kubernetes.io/tls
stringData:
  tls.crt: PRIVATE-CERT-TEXT
  tls.key: PRIVATE-KEY-TEXT
data:
  extra: U0VDUkVULURBVEE=
",
    );
    for format in ["json", "yaml"] {
        let (_, stdout, _) = check(&dir, &["-o", format]);
        for secret in ["PRIVATE-KEY-TEXT", "PRIVATE-CERT-TEXT", "U0VDUkVULURBVEE="] {
            assert!(
                !stdout.contains(secret),
                "{format} output leaks {secret}: {stdout}"
            );
        }
        assert!(
            stdout.contains("tls.key"),
            "the keys are still listed: {stdout}"
        );
    }
}

#[test]
fn describe_prints_conditions_as_tables_per_parent() {
    let dir = TempDir::new("check-describe");
    quickstart_config(&dir, 8080, 3000);
    let routes = std::fs::read_to_string(dir.path().join("routes.yaml")).unwrap();
    dir.write(
        "routes.yaml",
        &routes.replacen("- name: echo\n", "- name: missing\n", 1),
    );
    let (code, stdout, _) = check(&dir, &["-o", "describe"]);
    assert_eq!(code, 1, "a rejected route still exits 1: {stdout}");
    let route = stdout
        .split("\n\n")
        .find(|block| block.contains("Kind:       HTTPRoute\nName:       echo\n"))
        .unwrap_or_else(|| panic!("no HTTPRoute echo block in:\n{stdout}"));
    assert!(route.contains("Namespace:  default\n"), "{route}");
    assert!(
        route.contains("Parent quickstart:\n  Conditions:\n"),
        "{route}"
    );
    let header = route
        .lines()
        .find(|l| l.trim_start().starts_with("Type"))
        .unwrap();
    for column in ["Type", "Status", "Reason", "Message"] {
        assert!(header.contains(column), "{header}");
    }
    let resolved = route
        .lines()
        .find(|l| l.trim_start().starts_with("ResolvedRefs"))
        .unwrap();
    let cells: Vec<&str> = resolved.split_whitespace().collect();
    assert_eq!(
        &cells[..3],
        ["ResolvedRefs", "False", "BackendNotFound"],
        "{resolved}"
    );

    let gateway = stdout
        .split("\n\n")
        .find(|block| block.contains("Kind:       Gateway\n"))
        .unwrap();
    assert!(gateway.contains("Conditions:\n"), "{gateway}");
    assert!(
        gateway.contains("Listener http:\n  Conditions:\n"),
        "{gateway}"
    );
    assert!(
        gateway
            .lines()
            .any(|l| l.split_whitespace().take(2).eq(["Programmed", "True"])),
        "{gateway}"
    );
    let service = stdout
        .split("\n\n")
        .find(|block| block.contains("Kind:       Service\n"))
        .unwrap();
    assert!(service.contains("Status:     none"), "{service}");
}

fn diff(a: &TempDir, b: &TempDir) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["check", "--diff"])
        .arg(a.path())
        .arg(b.path())
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn diff_of_identical_directories_exits_zero() {
    let (a, b) = (TempDir::new("diff-a"), TempDir::new("diff-b"));
    quickstart_config(&a, 8080, 3000);
    quickstart_config(&b, 8080, 3000);
    let (code, stdout) = diff(&a, &b);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(stdout, "no differences\n");
}

#[test]
fn diff_names_changed_routes_rules_backends_and_listeners() {
    let (a, b) = (TempDir::new("diff-a"), TempDir::new("diff-b"));
    quickstart_config(&a, 8080, 3000);
    quickstart_config(&b, 8080, 3000);
    let routes = std::fs::read_to_string(b.path().join("routes.yaml")).unwrap();
    // B: the catch-all's backend gets another weight, the api rule
    // another path.
    let routes = routes
        .replacen("port: 3000\n", "port: 3000\n      weight: 5\n", 1)
        .replacen("value: /api\n", "value: /api/v2\n", 1);
    b.write("routes.yaml", &routes);
    let gateway = std::fs::read_to_string(b.path().join("gateway.yaml")).unwrap();
    b.write(
        "gateway.yaml",
        &format!("{gateway}  - name: admin\n    protocol: HTTP\n    port: 9090\n    hostname: admin.test\n"),
    );
    b.write(
        "new-route.yaml",
        "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: extra
spec:
  parentRefs:
  - name: quickstart
    sectionName: admin
  rules:
  - backendRefs:
    - name: echo
      port: 3000
",
    );
    let (code, stdout) = diff(&a, &b);
    assert_eq!(code, 1, "{stdout}");
    for line in [
        "listeners:\n",
        "  + default/quickstart/admin: ",
        "hostname admin.test",
        "routes:\n",
        "  ~ HTTPRoute default/api\n",
        "      ~ rule 0\n",
        "          matches: PathPrefix /api, header x-api-version = \"v1\" -> PathPrefix /api/v2, header x-api-version = \"v1\"\n",
        "  + HTTPRoute default/extra\n",
        "conditions:\n",
        "      rule 0: backends default/echo:3000 weight 1",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    assert!(
        stdout.contains("  ~ HTTPRoute default/echo\n      ~ rule 0\n          backends: default/echo:3000 weight 1 -> default/echo:3000 weight 5\n"),
        "{stdout}"
    );
    assert!(stdout.ends_with(" difference(s)\n"), "{stdout}");
}

/// A printing command whose reader goes away (`coxswain crds | head -1`)
/// ends as other command-line tools do, killed by SIGPIPE, and never
/// panics in `println!`. The pipe's read end is closed before the child
/// writes anything, so its first write fails whatever the timing.
#[test]
fn a_closed_pipe_ends_a_printing_command_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(BIN)
        .arg("crds")
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(13), "{:?} {stderr}", out.status);
}
