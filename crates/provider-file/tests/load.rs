use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use coxswain_api::ObjectKey;
use coxswain_provider_file::{FileProvider, Watcher, load_dir};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("coxswain-pf-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn route(name: &str, path: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: {name}\nspec:\n  parentRefs:\n  - name: gw\n  rules:\n  - matches:\n    - path:\n        type: PathPrefix\n        value: {path}\n    backendRefs:\n    - name: echo\n      port: 3000\n"
    )
}

const SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: echo\n  namespace: apps\nspec:\n  ports:\n  - port: 3000\n";

#[test]
fn type_error_in_third_document_has_file_line() {
    let dir = TempDir::new();
    // The third document's backend port is a map, not a number.
    let third = route("b", "/b").replace("port: 3000", "port: {}");
    let text = format!("{}---\n{SERVICE}---\n{third}", route("a", "/a"));
    let path = dir.write("routes.yaml", &text);
    let loaded = load_dir(dir.path());
    assert_eq!(loaded.errors.len(), 1, "{:?}", loaded.errors);
    let err = &loaded.errors[0];
    let expected_line = text.lines().position(|l| l.contains("port: {}")).unwrap() + 1;
    assert_eq!(err.path, path);
    assert_eq!(err.line, expected_line);
    assert!(err.line > 20, "third document line, got {}", err.line);
    assert!(
        err.to_string()
            .starts_with(&format!("{}:{expected_line}:", path.display()))
    );
    // The failing file contributes nothing (it never had a good version).
    assert!(loaded.snapshot.http_routes.is_empty());
}

#[test]
fn defaults_namespace_timestamps_and_generation() {
    let dir = TempDir::new();
    dir.write(
        "a.yaml",
        &format!("{}---\n{}", route("first", "/1"), route("second", "/2")),
    );
    dir.write(
        "b.yaml",
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: c\n  namespace: ignored\nspec:\n  controllerName: x/y\n",
    );
    let loaded = load_dir(dir.path());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let first = &loaded.snapshot.http_routes[&ObjectKey::new("default", "first")];
    let second = &loaded.snapshot.http_routes[&ObjectKey::new("default", "second")];
    let t1 = first.metadata.creation_timestamp.clone().unwrap();
    let t2 = second.metadata.creation_timestamp.clone().unwrap();
    assert!(t1.0 < t2.0, "first seen is older");
    assert_eq!(first.metadata.generation, Some(1));
    assert!(
        loaded
            .snapshot
            .gateway_classes
            .contains_key(&ObjectKey::cluster("c"))
    );
}

#[test]
fn bad_edit_keeps_last_good_version() {
    let dir = TempDir::new();
    let path = dir.write("r.yaml", &route("r", "/good"));
    let mut provider = FileProvider::new(dir.path());
    provider.reload_all();
    assert!(provider.loaded().errors.is_empty());
    std::fs::write(&path, route("r", "nope")).unwrap();
    provider.reload_file(&path);
    let loaded = provider.loaded();
    assert_eq!(loaded.errors.len(), 1);
    assert!(
        loaded.errors[0].message.contains("must start with '/'"),
        "{}",
        loaded.errors[0]
    );
    assert_eq!(loaded.errors[0].line, 12);
    let kept = &loaded.snapshot.http_routes[&ObjectKey::new("default", "r")];
    let rules = kept.spec.rules.as_ref().unwrap();
    let value = rules[0].matches.as_ref().unwrap()[0]
        .path
        .as_ref()
        .unwrap()
        .value
        .clone();
    assert_eq!(value.as_deref(), Some("/good"));
    // Fixing the file clears the error.
    std::fs::write(&path, route("r", "/fixed")).unwrap();
    provider.reload_file(&path);
    assert!(provider.loaded().errors.is_empty());
}

#[test]
fn an_edit_keeps_the_identity_of_objects_it_left_unchanged() {
    let dir = TempDir::new();
    let two = |b: &str| format!("{}---\n{}", route("a", "/a"), route("b", b));
    let path = dir.write("r.yaml", &two("/b"));
    let mut provider = FileProvider::new(dir.path());
    provider.reload_all();
    let key = |name| ObjectKey::new("default", name);
    let before = provider.loaded_snapshot().snapshot;
    std::fs::write(&path, two("/b2")).unwrap();
    provider.reload_file(&path);
    let after = provider.loaded_snapshot().snapshot;
    let same = |name| {
        std::sync::Arc::ptr_eq(
            &before.http_routes[&key(name)],
            &after.http_routes[&key(name)],
        )
    };
    assert!(same("a"), "unchanged route kept its Arc");
    assert!(!same("b"), "edited route is a new object");
}

#[test]
fn removed_file_drops_its_objects() {
    let dir = TempDir::new();
    let a = dir.write("a.yaml", &route("a", "/a"));
    dir.write("sub/b.yml", &route("b", "/b"));
    let mut provider = FileProvider::new(dir.path());
    provider.reload_all();
    assert_eq!(provider.loaded().snapshot.http_routes.len(), 2);
    std::fs::remove_file(&a).unwrap();
    provider.reload_file(&a);
    let routes = provider.loaded().snapshot.http_routes;
    assert_eq!(
        routes.keys().cloned().collect::<Vec<_>>(),
        vec![ObjectKey::new("default", "b")]
    );
}

#[test]
fn duplicates_name_both_files() {
    let dir = TempDir::new();
    let a = dir.write("a.yaml", &route("same", "/a"));
    let b = dir.write("b.yaml", &route("same", "/b"));
    let loaded = load_dir(dir.path());
    assert_eq!(loaded.errors.len(), 1);
    let message = loaded.errors[0].to_string();
    assert!(message.starts_with(&b.display().to_string()), "{message}");
    assert!(message.contains(&a.display().to_string()), "{message}");
    assert_eq!(loaded.snapshot.http_routes.len(), 1);
}

#[test]
fn duplicate_takes_over_when_the_owner_goes() {
    let dir = TempDir::new();
    let a = dir.write("a.yaml", &route("same", "/a"));
    let b = dir.write("b.yaml", &route("same", "/b"));
    let mut provider = FileProvider::new(dir.path());
    provider.reload_all();
    assert_eq!(provider.loaded().errors.len(), 1);
    std::fs::remove_file(&a).unwrap();
    provider.reload_file(&a);
    let loaded = provider.loaded();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let route = &loaded.snapshot.http_routes[&ObjectKey::new("default", "same")];
    let rules = route.spec.rules.as_ref().unwrap();
    let value = rules[0].matches.as_ref().unwrap()[0]
        .path
        .as_ref()
        .unwrap()
        .value
        .clone();
    assert_eq!(value.as_deref(), Some("/b"));
    assert_eq!(loaded.objects.len(), 1);
    // Rewriting the owner in place keeps it the owner (no spurious errors).
    std::fs::write(&b, route_text_with_path("/b2")).unwrap();
    provider.reload_file(&b);
    assert!(provider.loaded().errors.is_empty());
}

fn route_text_with_path(path: &str) -> String {
    route("same", path)
}

#[test]
fn json_list_and_hidden_and_unknown() {
    let dir = TempDir::new();
    dir.write(
        "list.json",
        r#"{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s1"}},
  {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
   "metadata": {"name": "s1-a", "labels": {"kubernetes.io/service-name": "s1"}},
   "addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"]}]},
  {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
]}"#,
    );
    dir.write(".hidden.yaml", "not: [valid");
    dir.write(".git/x.yaml", "not: [valid");
    dir.write("r.yaml~", "not: [valid");
    let loaded = load_dir(dir.path());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    assert!(
        loaded
            .snapshot
            .services
            .contains_key(&ObjectKey::new("default", "s1"))
    );
    assert!(
        loaded
            .snapshot
            .endpoint_slices
            .contains_key(&ObjectKey::new("default", "s1-a"))
    );
    assert_eq!(loaded.objects.len(), 2);
}

#[test]
fn json_type_error_is_located() {
    let dir = TempDir::new();
    dir.write("svc.json", "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Service\",\n  \"metadata\": {\"name\": 5}\n}\n");
    let loaded = load_dir(dir.path());
    assert_eq!(loaded.errors.len(), 1);
    assert_eq!(loaded.errors[0].line, 4, "{}", loaded.errors[0]);
}

/// Found by fuzzing: an error at a line start was reported at column 0,
/// which our positions reserve for "unknown".
#[test]
fn json_errors_have_one_based_columns() {
    let dir = TempDir::new();
    dir.write("cut.json", "{\n");
    let loaded = load_dir(dir.path());
    assert_eq!(loaded.errors.len(), 1);
    let error = &loaded.errors[0];
    assert_eq!((error.line, error.column), (2, 1), "{error}");
}

#[test]
fn https_listener_tls_rules_are_checked() {
    let dir = TempDir::new();
    let gateway = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: gw\nspec:\n  gatewayClassName: c\n  listeners:\n  - name: a\n    port: 443\n    protocol: HTTPS\n  - name: b\n    port: 80\n    protocol: HTTP\n    tls:\n      certificateRefs:\n      - name: cert\n  - name: c\n    port: 8443\n    protocol: HTTPS\n    tls:\n      mode: Terminate\n      certificateRefs:\n      - name: cert\n";
    dir.write("gw.yaml", gateway);
    let loaded = load_dir(dir.path());
    let messages: Vec<_> = loaded.errors.iter().map(|e| e.message.clone()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages
            .iter()
            .any(|m| m.contains("listeners[0].tls is required"))
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("listeners[1].tls must not be set"))
    );
}

#[test]
fn schema_checks_are_located() {
    let dir = TempDir::new();
    let gateway = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: gw\nspec:\n  gatewayClassName: c\n  listeners:\n  - name: http\n    port: 80\n    protocol: HTTP\n  - name: http\n    port: 70000\n    protocol: HTTP\n    hostname: bad_host\n";
    dir.write("gw.yaml", gateway);
    let loaded = load_dir(dir.path());
    let mut found: Vec<_> = loaded
        .errors
        .iter()
        .map(|e| (e.line, e.message.clone()))
        .collect();
    found.sort();
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(found[0].0, 11);
    assert!(found[0].1.contains("duplicate listener name"));
    assert_eq!(found[1].0, 12);
    assert!(found[1].1.contains("70000"));
    assert_eq!(found[2].0, 14);
    let no_name = "apiVersion: v1\nkind: Service\nmetadata:\n  namespace: x\n";
    dir.write("gw.yaml", no_name);
    let loaded = load_dir(dir.path());
    assert!(
        loaded.errors[0].message.contains("metadata.name"),
        "{:?}",
        loaded.errors
    );
}

#[test]
fn watcher_sees_new_changed_and_removed_files() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = TempDir::new();
        dir.write("a.yaml", &route("a", "/a"));
        let (_watcher, initial, mut reloads) = Watcher::start(dir.path()).unwrap();
        assert_eq!(initial.snapshot.http_routes.len(), 1);
        let wait = async |reloads: &mut tokio::sync::mpsc::UnboundedReceiver<_>, want: usize| {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            loop {
                let reload: coxswain_provider_file::Reload =
                    tokio::time::timeout_at(deadline, reloads.recv())
                        .await
                        .unwrap()
                        .unwrap();
                if reload.loaded.snapshot.http_routes.len() == want {
                    return reload;
                }
            }
        };
        let b = dir.write("b.yaml", &route("b", "/b"));
        let reload = wait(&mut reloads, 2).await;
        assert!(reload.changed.contains(&b), "{:?} vs {b:?}", reload.changed);
        std::fs::remove_file(&b).unwrap();
        let reload = wait(&mut reloads, 1).await;
        assert!(reload.loaded.errors.is_empty());
    });
}
