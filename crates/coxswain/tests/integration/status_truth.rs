//! Status says what the data plane really does: a listener whose port is
//! taken is not Programmed, and becomes Programmed once the port is free.

use crate::support;

use std::net::TcpListener;

use support::*;

fn listener_condition(status: &serde_json::Value, listener: &str, type_: &str) -> Option<String> {
    status["listeners"]
        .as_array()?
        .iter()
        .find(|l| l["name"] == listener)?["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str())
        .map(str::to_string)
}

#[test]
fn a_listener_whose_port_is_taken_is_not_programmed_until_it_is_free() {
    let config = TempDir::new("port-taken");
    let (http_port, echo_port) = (free_port(), free_port());
    quickstart_config(&config, http_port, echo_port);
    // Someone else holds the listener's port.
    let squatter = TcpListener::bind(("127.0.0.1", http_port)).unwrap();
    let gateway = Gateway::start_unready(config, http_port, echo_port);
    wait_for("Programmed=False with the bind error", || {
        gateway.status_of("Gateway", "quickstart").is_some_and(|s| {
            listener_condition(&s, "http", "Programmed").as_deref() == Some("False")
                && s.to_string().contains("cannot bind")
        })
    });
    assert_eq!(gateway.admin_get("/readyz").unwrap().0, 503);
    drop(squatter);
    wait_for("Programmed=True once the port is free", || {
        gateway.status_of("Gateway", "quickstart").is_some_and(|s| {
            listener_condition(&s, "http", "Programmed").as_deref() == Some("True")
        })
    });
    assert_eq!(curl_get(&[], &gateway.url("/hello")).0, 200);
}
