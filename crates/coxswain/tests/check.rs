//! `coxswain check`: exit codes 0/1/2 and the `-o json` List.

mod support;

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
