use super::*;
use crate::wire::Resource;
use coxswain_ir::Serve;

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
    let names: Vec<_> = resources.items().keys().map(|n| &**n).collect();
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
    let (applied, config) = old.applied(&update).unwrap();
    assert_eq!(applied, new);
    assert_eq!(config, self::config(9090));

    // From nothing: everything; back to nothing: only removals.
    let full = new.update_for(&BTreeMap::new()).unwrap();
    assert_eq!(full.upserts.len(), new.len());
    let empty = Resources::default().update_for(&held(&new)).unwrap();
    assert!(empty.upserts.is_empty());
    assert_eq!(empty.removals.len(), new.len());
    let (none, config) = new.applied(&empty).unwrap();
    assert!(none.is_empty() && config.sockets.is_empty());
}

#[test]
fn a_damaged_or_inconsistent_update_is_refused() {
    let old = Resources::from_config(&config(8080)).unwrap();
    let new = Resources::from_config(&config(9090)).unwrap();
    let update = new.update_for(&held(&old)).unwrap();

    let mut tampered = update.clone();
    tampered.upserts[0].body = bytes::Bytes::from_static(b"{}");
    assert!(matches!(
        old.clone().apply(&tampered),
        Err(ResourceError::Digest { .. })
    ));

    // Applied to a set it was not computed from.
    let mismatch = Resources::default().apply(&update);
    assert!(matches!(mismatch, Err(ResourceError::Version { .. })));

    let mut future = update.clone();
    future.ir_version += 1;
    assert!(matches!(
        old.clone().apply(&future),
        Err(ResourceError::IrVersion { .. })
    ));

    // A socket naming a listener that is not there.
    let mut partial = new.clone();
    partial.remove("listener/tcp/0.0.0.0:80/-/a");
    assert!(matches!(
        partial.to_config(),
        Err(ResourceError::MissingListener { .. })
    ));

    // A listener naming a route that is not there.
    let mut partial = new.clone();
    partial.remove("route/tcp/0.0.0.0:80/-/a/Http/ns/a/0/1");
    assert!(matches!(
        partial.to_config(),
        Err(ResourceError::MissingRoute { .. })
    ));

    // A body that is valid JSON of the wrong shape.
    let body = bytes::Bytes::from_static(b"{\"name\": 1}");
    let bad = crate::wire::ConfigUpdate {
        upserts: vec![Resource {
            name: "cluster/x".into(),
            digest: crate::item::Digest::of(&body).to_string(),
            body: body.clone(),
        }],
        ..update
    };
    let mut expected = old.clone();
    expected.insert("cluster/x".into(), Item::new(body));
    let bad = crate::wire::ConfigUpdate {
        version: expected.version(),
        removals: vec![],
        ..bad
    };
    let mut target = old.clone();
    assert!(matches!(
        target.apply(&bad),
        Err(ResourceError::Decode { .. })
    ));
    assert_eq!(target, old, "a refused update leaves the set as it was");
    assert_eq!(target.to_config().unwrap(), self::config(8080));
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
    let received = Resources::default().applied(&resources.update_for(&BTreeMap::new()).unwrap());
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
    assert_eq!(old.applied(&update).unwrap().1, changed);
}

/// The version does not depend on the order resources arrived in, and
/// the walk between two sets finds the same update as the digest lookup.
#[test]
fn versions_name_sets_and_walks_agree_with_lookups() {
    let old = Resources::from_config(&config(8080)).unwrap();
    let mut reversed = Resources::default();
    for (name, item) in old.items().iter().rev() {
        reversed.insert(name.clone(), item.clone());
    }
    assert_eq!(reversed.version(), old.version());
    let new = Resources::from_config(&config(9090)).unwrap();
    assert_eq!(new.update_from(&old), new.update_for(&held(&old)));
    assert_eq!(old.update_from(&old), None);
    assert_eq!(
        new.update_from(&Resources::default()),
        new.update_for(&BTreeMap::new())
    );
    assert_eq!(
        Resources::default().update_from(&new),
        Resources::default().update_for(&held(&new))
    );
}

/// The proxy applies in place; a config its applier refused is reverted,
/// so the next update (computed against what it acknowledged) still fits.
#[test]
fn a_reverted_update_leaves_the_acknowledged_set() {
    let old = Resources::from_config(&config(8080)).unwrap();
    let new = Resources::from_config(&config(9090)).unwrap();
    let mut held = old.clone();
    let (undo, _) = held.apply(&new.update_from(&old).unwrap()).unwrap();
    assert_eq!(held, new);
    held.revert(undo);
    assert_eq!(held, old);
    assert_eq!(held.version(), old.version());
    assert_eq!(held.to_config().unwrap(), config(8080));
}

/// Whatever the encoder reuses from its last run, its result is what
/// encoding from scratch gives: a changed cluster and a new route `Arc`
/// are encoded again.
#[test]
fn the_encoder_agrees_with_encoding_from_scratch() {
    let mut encoder = crate::Encoder::default();
    let first = encoder.encode(&config(8080)).unwrap();
    let again = encoder.encode(&config(8080)).unwrap();
    assert_eq!(again, first);
    let changed = encoder.encode(&config(9090)).unwrap();
    assert_eq!(changed, Resources::from_config(&config(9090)).unwrap());
    let mut moved = config(9090);
    let Serve::Http(routes) = &mut moved.sockets[0].listeners[0].serve else {
        panic!("listener a serves HTTP");
    };
    let mut route = (*routes[0]).clone();
    route.hostnames = vec![coxswain_ir::Hostname::parse("a.example.com").unwrap()];
    routes[0] = std::sync::Arc::new(route);
    assert_eq!(
        encoder.encode(&moved).unwrap(),
        Resources::from_config(&moved).unwrap()
    );
}

/// A proxy patches its last config when an update only replaces routes
/// or clusters it has, and assembles again otherwise; both give exactly
/// the config the controller encoded, and a revert gives back the last.
#[test]
fn patching_and_assembling_give_the_encoded_config() {
    let mut encoder = crate::Encoder::default();
    let mut held = Resources::default();
    let mut sent = Resources::default();
    let mut steps = vec![config(8080)];
    // A changed route (a new Arc), then a changed cluster.
    let mut next = config(8080);
    let Serve::Http(routes) = &mut next.sockets[0].listeners[0].serve else {
        panic!("listener a serves HTTP");
    };
    let mut route = (*routes[0]).clone();
    route.hostnames = vec![coxswain_ir::Hostname::parse("a.example.com").unwrap()];
    routes[0] = std::sync::Arc::new(route);
    steps.push(next.clone());
    let mut cluster = (*next.clusters[0]).clone();
    cluster.endpoints.clear();
    next.clusters[0] = std::sync::Arc::new(cluster);
    steps.push(next.clone());
    // The same route object served twice: listener b gets a second one
    // (a new name, so assembled again).
    let Serve::Http(routes) = &mut next.sockets[0].listeners[1].serve else {
        panic!("listener any serves HTTP");
    };
    routes.push(routes[0].clone());
    steps.push(next.clone());
    for step in steps {
        let encoded = encoder.encode(&step).unwrap();
        assert_eq!(encoded, Resources::from_config(&step).unwrap());
        let update = encoded.update_from(&sent).unwrap();
        let before = held.to_config().unwrap();
        let (undo, applied) = held.apply(&update).unwrap();
        assert_eq!(*applied, step);
        assert_eq!(held.to_config().unwrap(), step);
        held.revert(undo);
        assert_eq!(held.to_config().unwrap(), before);
        let (_, applied) = held.apply(&update).unwrap();
        assert_eq!(*applied, step);
        sent = encoded;
    }
}

/// The encoder patches its last set: through additions, removals,
/// reordering, a route object served twice and a listener going away, its
/// set has exactly the names and bodies of encoding from scratch.
#[test]
fn the_patching_encoder_tracks_every_kind_of_change() {
    let mut encoder = crate::Encoder::default();
    let mut current = config(8080);
    let check = |encoder: &mut crate::Encoder, config: &Config| {
        let patched = encoder.encode(config).unwrap();
        let scratch = Resources::from_config(config).unwrap();
        assert_eq!(patched.digests(), scratch.digests());
        assert_eq!(patched.version(), scratch.version());
        assert_eq!(patched.to_config().unwrap(), *config);
    };
    check(&mut encoder, &current);
    fn routes(c: &mut Config, l: usize) -> &mut Vec<std::sync::Arc<coxswain_ir::Route>> {
        match &mut c.sockets[0].listeners[l].serve {
            Serve::Http(routes) => routes,
            _ => panic!("listener {l} serves HTTP"),
        }
    }
    // A second rule on listener a, then the two swapped, then one served
    // twice (same Arc), then the first removed.
    let mut second = (*routes(&mut current, 0)[0]).clone();
    second.id.rule_index = 1;
    routes(&mut current, 0).push(std::sync::Arc::new(second));
    check(&mut encoder, &current);
    routes(&mut current, 0).swap(0, 1);
    check(&mut encoder, &current);
    let again = routes(&mut current, 0)[0].clone();
    routes(&mut current, 1).push(again);
    check(&mut encoder, &current);
    routes(&mut current, 0).remove(0);
    check(&mut encoder, &current);
    // Same-rule routes (ordinals) reordered.
    let twin = routes(&mut current, 1)[0].clone();
    let mut twin = (*twin).clone();
    twin.hostnames = vec![coxswain_ir::Hostname::parse("b.example.com").unwrap()];
    routes(&mut current, 1).insert(0, std::sync::Arc::new(twin));
    check(&mut encoder, &current);
    routes(&mut current, 1).swap(0, 1);
    check(&mut encoder, &current);
    // A listener and a cluster go away; the UDP socket too.
    current.sockets[0].listeners.remove(0);
    current.sockets.remove(1);
    current.clusters.remove(0);
    check(&mut encoder, &current);
    // And back to the start.
    check(&mut encoder, &config(8080));
}

/// Many random edits in a row (a fixed seed): after each, the patching
/// encoder's set equals encoding from scratch, and a proxy applying the
/// updates one after another serves exactly the config.
#[test]
fn random_edits_keep_encoder_and_proxy_exact() {
    let mut seed: u64 = 0x5eed;
    let mut next = move |bound: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as usize) % bound.max(1)
    };
    let mut encoder = crate::Encoder::default();
    let mut current = config(8080);
    let mut sent = Resources::default();
    let mut held = Resources::default();
    for step in 0..300 {
        let listener = next(2);
        let Serve::Http(routes) = &mut current.sockets[0].listeners[listener].serve else {
            panic!("listeners 0 and 1 serve HTTP");
        };
        match next(6) {
            0 if !routes.is_empty() => {
                let i = next(routes.len());
                let copy = routes[i].clone();
                routes.insert(next(routes.len() + 1), copy);
            }
            1 if routes.len() > 1 => {
                routes.remove(next(routes.len()));
            }
            2 if routes.len() > 1 => {
                let (i, j) = (next(routes.len()), next(routes.len()));
                routes.swap(i, j);
            }
            3 if !routes.is_empty() => {
                let i = next(routes.len());
                let mut edited = (*routes[i]).clone();
                edited.id.rule_index = next(3) as u32;
                edited.hostnames =
                    vec![coxswain_ir::Hostname::parse(&format!("h{step}.example.com")).unwrap()];
                routes[i] = std::sync::Arc::new(edited);
            }
            4 => {
                let i = next(current.clusters.len());
                let mut cluster = (*current.clusters[i]).clone();
                cluster.endpoints = vec![coxswain_ir::Endpoint {
                    address: ([10, 0, 0, 2], 1000 + step as u16).into(),
                }];
                current.clusters[i] = std::sync::Arc::new(cluster);
            }
            _ => {}
        }
        let patched = encoder.encode(&current).unwrap();
        let scratch = Resources::from_config(&current).unwrap();
        assert_eq!(patched.digests(), scratch.digests(), "step {step}");
        if let Some(update) = patched.update_from(&sent) {
            let (_, applied) = held.apply(&update).unwrap();
            assert_eq!(*applied, current, "step {step}");
        }
        sent = patched;
    }
}
