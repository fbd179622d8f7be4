//! Live reload: new files are served, removed files stop being served, a
//! bad edit is reported with its location while the last good config keeps
//! serving, and rewrites under load drop no request.

use crate::support;

use std::process::Command;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use support::{Gateway, curl_get, echo_json, route_tag, tagged_route, wait_for};

fn tag_at(gateway: &Gateway, path: &str) -> Option<String> {
    let (code, body) = curl_get(&[], &gateway.url(path));
    if code != 200 {
        return None;
    }
    route_tag(&echo_json(&body))
}

#[test]
fn new_route_file_is_served_and_removal_stops_it() {
    let gateway = Gateway::quickstart("reload-new");
    assert_eq!(tag_at(&gateway, "/new"), None);
    let file = gateway.config.write(
        "new.yaml",
        &tagged_route("new", "/new", "new", gateway.echo_port),
    );
    wait_for("the new route", || {
        tag_at(&gateway, "/new").as_deref() == Some("new")
    });
    std::fs::remove_file(file).unwrap();
    wait_for("the new route to go", || tag_at(&gateway, "/new").is_none());

    // Removing the file with the catch-all route leaves nothing for /hello.
    std::fs::remove_file(gateway.config.path().join("routes.yaml")).unwrap();
    wait_for("404 after deleting routes.yaml", || {
        curl_get(&[], &gateway.url("/hello")).0 == 404
    });
}

#[test]
fn bad_edit_is_located_and_last_good_keeps_serving() {
    let gateway = Gateway::quickstart("reload-bad");
    let good = tagged_route("extra", "/extra", "v1", gateway.echo_port);
    gateway.config.write("extra.yaml", &good);
    wait_for("the extra route", || {
        tag_at(&gateway, "/extra").as_deref() == Some("v1")
    });

    // A type error on line 12 (`value` must be a string, not a list).
    let bad = good.replace("value: /extra", "value: [/extra]");
    let path = gateway.config.write("extra.yaml", &bad);
    let line = bad.lines().position(|l| l.contains("[/extra]")).unwrap() + 1;
    let location = format!("{}:{line}:", path.display());
    wait_for("the located error on stderr", || {
        gateway.stderr().contains(&location)
    });
    assert_eq!(
        tag_at(&gateway, "/extra").as_deref(),
        Some("v1"),
        "last good version serves"
    );
    let (_, metrics) = gateway.admin_get("/metrics").unwrap();
    assert!(
        metrics.contains("coxswain_config_load_errors 1"),
        "{metrics}"
    );

    // Fixing the file applies the new version and clears the error.
    gateway
        .config
        .write("extra.yaml", &good.replace("value: v1", "value: v2"));
    wait_for("the fixed route", || {
        tag_at(&gateway, "/extra").as_deref() == Some("v2")
    });
    let (_, metrics) = gateway.admin_get("/metrics").unwrap();
    assert!(
        metrics.contains("coxswain_config_load_errors 0"),
        "{metrics}"
    );
}

#[test]
fn rewrites_under_load_drop_no_request() {
    let gateway = Gateway::quickstart("reload-load");
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let writer = {
        let dir = gateway.config.path().to_path_buf();
        let routes = std::fs::read_to_string(dir.join("routes.yaml")).unwrap();
        let echo_port = gateway.echo_port;
        std::thread::spawn(move || {
            let mut rewrites = 0;
            // Rewrite every 5 ms until told to stop.
            while let Err(RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_millis(5))
            {
                // The serving file is replaced atomically (temp file + rename,
                // what config tools do); a second file is rewritten in place.
                std::fs::write(dir.join(".routes.yaml.tmp"), &routes).unwrap();
                std::fs::rename(dir.join(".routes.yaml.tmp"), dir.join("routes.yaml")).unwrap();
                let extra = tagged_route("churn", &format!("/churn{rewrites}"), "c", echo_port);
                std::fs::write(dir.join("churn.yaml"), extra).unwrap();
                rewrites += 1;
            }
            rewrites
        })
    };
    // 1000 requests over one keep-alive connection (curl reuses it for a URL range).
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{num_connects}\n",
        ])
        .arg(gateway.url("/hello?n=[1-1000]"))
        .output()
        .unwrap();
    stop.send(()).unwrap();
    let rewrites = writer.join().unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1000);
    let failures: Vec<_> = lines.iter().filter(|l| !l.starts_with("200 ")).collect();
    assert!(
        failures.is_empty(),
        "{} failures: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    let connects: u32 = lines
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap().parse::<u32>().unwrap())
        .sum();
    assert_eq!(connects, 1, "all requests on one connection");
    assert!(rewrites > 10, "only {rewrites} rewrites happened");
    let (_, metrics) = gateway.admin_get("/metrics").unwrap();
    let reloads: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("coxswain_config_reloads_total{result=\"success\"} "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(reloads > 2, "config was reloaded under load ({reloads})");
}
