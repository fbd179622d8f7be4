use super::*;
use crate::wire::Resource;

/// A config of one Gateway: two HTTP listeners on a port, a UDP socket,
/// two clusters.
pub(crate) fn config(backend_port: u16) -> Config {
    let route = |name: &str, cluster: &str| {
        serde_json::json!({
            "id": {"kind": "HTTPRoute", "namespace": "ns", "name": name,
                   "rule_index": 0, "rule_name": null},
            "hostnames": [],
            "matches": [{"path": {"Prefix": "/"}, "headers": [], "query": [], "method": null}],
            "filters": [],
            "backends": [{"weight": 1, "target": {"Cluster": cluster}}],
            "timeouts": {"request_ms": null, "backend_request_ms": null}
        })
    };
    let json = serde_json::json!({
        "ir_version": coxswain_ir::IR_VERSION,
        "sockets": [{
            "transport": "Tcp", "address": "0.0.0.0", "port": 80,
            "listeners": [
                {"gateway": "ns/gw", "name": "a", "hostname": "a.example.com",
                 "serve": {"Http": [route("a", "ns/a:80")]}},
                {"gateway": "ns/gw", "name": "any", "hostname": null,
                 "serve": {"Http": [route("b", "ns/b:80")]}}
            ]
        }, {
            "transport": "Udp", "address": "0.0.0.0", "port": 53,
            "listeners": [{"gateway": "ns/gw", "name": "dns", "hostname": null,
                "serve": {"Udp": [{
                    "id": {"kind": "UDPRoute", "namespace": "ns", "name": "dns",
                           "rule_index": 0, "rule_name": null},
                    "backends": [{"weight": 1, "target": {"Cluster": "ns/b:80"}}]}]}}]
        }],
        "clusters": [
            {"name": "ns/a:80", "protocol": "Http1",
             "endpoints": [{"address": format!("10.0.0.1:{backend_port}")}]},
            {"name": "ns/b:80", "protocol": "Http1", "endpoints": []}
        ]
    });
    match serde_json::from_value(json) {
        Ok(config) => config,
        Err(e) => panic!("test config does not parse: {e}"),
    }
}

fn held(resources: &Resources) -> BTreeMap<String, String> {
    resources.digests()
}

#[test]
fn a_config_survives_the_cut_into_resources() {
    let config = config(8080);
    let resources = Resources::from_config(&config).unwrap();
    let names: Vec<_> = resources.items.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "cluster/ns/a:80",
            "cluster/ns/b:80",
            "listener/tcp/0.0.0.0:80/-/a",
            "listener/tcp/0.0.0.0:80/-/any",
            "listener/udp/0.0.0.0:53/-/dns",
            "route/tcp/0.0.0.0:80/-/a/Http/ns/a/0/1",
            "route/tcp/0.0.0.0:80/-/any/Http/ns/b/0/1",
            "socket/tcp/0.0.0.0:80",
            "socket/udp/0.0.0.0:53",
        ]
    );
    assert_eq!(resources.to_config().unwrap(), config);
}

#[test]
fn an_update_carries_only_what_changed_and_lands_on_the_named_version() {
    let old = Resources::from_config(&config(8080)).unwrap();
    assert_eq!(old.update_for(&held(&old)), None, "nothing to send");
    let new = Resources::from_config(&config(9090)).unwrap();
    assert_ne!(old.version(), new.version());

    let update = new.update_for(&held(&old)).unwrap();
    let sent: Vec<_> = update.upserts.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(sent, ["cluster/ns/a:80"], "one endpoint changed");
    assert!(update.removals.is_empty());
    let (applied, config) = old.apply(&update).unwrap();
    assert_eq!(applied, new);
    assert_eq!(config, self::config(9090));

    // From nothing: everything; back to nothing: only removals.
    let full = new.update_for(&BTreeMap::new()).unwrap();
    assert_eq!(full.upserts.len(), new.items.len());
    let empty = Resources::default().update_for(&held(&new)).unwrap();
    assert!(empty.upserts.is_empty());
    assert_eq!(empty.removals.len(), new.items.len());
    let (none, config) = new.apply(&empty).unwrap();
    assert!(none.items.is_empty() && config.sockets.is_empty());
}

#[test]
fn a_damaged_or_inconsistent_update_is_refused() {
    let old = Resources::from_config(&config(8080)).unwrap();
    let new = Resources::from_config(&config(9090)).unwrap();
    let update = new.update_for(&held(&old)).unwrap();

    let mut tampered = update.clone();
    tampered.upserts[0].body = bytes::Bytes::from_static(b"{}");
    assert!(matches!(
        old.apply(&tampered),
        Err(ResourceError::Digest { .. })
    ));

    // Applied to a set it was not computed from.
    let mismatch = Resources::default().apply(&update);
    assert!(matches!(mismatch, Err(ResourceError::Version { .. })));

    let mut future = update.clone();
    future.ir_version += 1;
    assert!(matches!(
        old.apply(&future),
        Err(ResourceError::IrVersion { .. })
    ));

    // A socket naming a listener that is not there.
    let mut partial = new.clone();
    partial.items.remove("listener/tcp/0.0.0.0:80/-/a");
    assert!(matches!(
        partial.to_config(),
        Err(ResourceError::MissingListener { .. })
    ));

    // A listener naming a route that is not there.
    let mut partial = new.clone();
    partial
        .items
        .remove("route/tcp/0.0.0.0:80/-/a/Http/ns/a/0/1");
    assert!(matches!(
        partial.to_config(),
        Err(ResourceError::MissingRoute { .. })
    ));

    // A body that is valid JSON of the wrong shape.
    let body = bytes::Bytes::from_static(b"{\"name\": 1}");
    let bad = crate::wire::ConfigUpdate {
        upserts: vec![Resource {
            name: "cluster/x".into(),
            digest: digest(&body),
            body: body.clone(),
        }],
        ..update
    };
    let mut expected = old.clone();
    expected.items.insert(
        "cluster/x".into(),
        Item {
            digest: digest(&body),
            body,
        },
    );
    let bad = crate::wire::ConfigUpdate {
        version: expected.version(),
        removals: vec![],
        ..bad
    };
    assert!(matches!(old.apply(&bad), Err(ResourceError::Decode { .. })));
}

/// A pool's proxy needs the listener's private key itself: the stream
/// carries it whole although the IR's JSON elsewhere redacts it.
#[test]
fn private_keys_travel_whole() {
    let mut json = serde_json::to_value(config(8080)).unwrap();
    json["sockets"][0]["listeners"][0]["tls"] = serde_json::json!({
        "certificates": [{"source": "ns/cert", "cert_chain_pem": "CHAIN",
                          "key_pem": "THE-PRIVATE-KEY"}]
    });
    let config: Config = serde_json::from_value(json).unwrap();
    let resources = Resources::from_config(&config).unwrap();
    let received = Resources::default().apply(&resources.update_for(&BTreeMap::new()).unwrap());
    let (_, received) = received.unwrap();
    assert_eq!(received, config);
    let key = &received.sockets[0].listeners[0]
        .tls
        .as_ref()
        .unwrap()
        .certificates[0]
        .key_pem;
    assert_eq!(&*key.0, "THE-PRIVATE-KEY");
    // Everywhere else the key stays redacted.
    assert!(
        !serde_json::to_string(&received)
            .unwrap()
            .contains("THE-PRIVATE-KEY")
    );
}

/// One rule changed: only its route is sent again, not the listener that
/// holds it (whose head names the routes, unchanged).
#[test]
fn a_route_change_sends_that_route_only() {
    let old = Resources::from_config(&config(8080)).unwrap();
    let mut changed = config(8080);
    let Serve::Http(routes) = &mut changed.sockets[0].listeners[0].serve else {
        panic!("listener a serves HTTP");
    };
    let mut route = (*routes[0]).clone();
    route.hostnames = vec![coxswain_ir::Hostname::parse("a.example.com").unwrap()];
    routes[0] = std::sync::Arc::new(route);
    let new = Resources::from_config(&changed).unwrap();
    let update = new.update_for(&held(&old)).unwrap();
    let sent: Vec<_> = update.upserts.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(sent, ["route/tcp/0.0.0.0:80/-/a/Http/ns/a/0/1"]);
    assert!(update.removals.is_empty());
    assert_eq!(old.apply(&update).unwrap().1, changed);
}
