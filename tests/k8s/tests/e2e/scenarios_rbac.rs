//! The chart's RBAC: enough for what the controller does, and what it
//! denies is checked where a denial actually protects something.
//!
//! What the ServiceAccount can read, honestly: it lists and watches every
//! Secret (and ConfigMap) in the cluster. A Gateway's `certificateRefs` may
//! name a Secret in any namespace (allowed there by a ReferenceGrant), and
//! the controller learns about Secrets through one cluster-wide watch per
//! kind of the kinds table (crates/provider-k8s/src/watch.rs, every kind in
//! crates/api/src/kinds.rs, ConfigMap included). Whoever holds this token
//! can therefore read every Secret's data; `get` is not granted only
//! because the code never calls it, and denying it protects nothing (a
//! list returns the same data), so this test does not count it as
//! protection. It shows the exposure instead, and checks what does hold:
//! the identity cannot create, change or delete Secrets (or ConfigMaps,
//! EndpointSlices, Namespaces), cannot run anything (pods, exec, attach,
//! port-forward, tokens), cannot change Gateway API objects (it writes
//! their status, and only through `update` of the status subresources it
//! needs), changes Services and ServiceAccounts only by server-side apply
//! (never replace or delete), cannot grant itself more, and updates only
//! its own Lease.

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

use crate::setup::{Env, RELEASE_NAMESPACE};

/// Namespace of this scenario's own probe objects.
const PROBE_NS: &str = "e2e-rbac";
const GW: &str = "gateway.networking.k8s.io";
const CORE: &str = "";
const COXSWAIN: &str = "gateway.coxswain-labs.dev";
const GW_X: &str = "gateway.networking.x-k8s.io";

/// One access question, as `kubectl auth can-i` would ask it.
#[derive(Clone, Debug)]
struct Access {
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
    /// Empty: every namespace (`-A`), or cluster-scoped.
    namespace: &'static str,
    name: &'static str,
}

impl Access {
    fn new(verb: &'static str, group: &'static str, resource: &'static str) -> Self {
        Access {
            verb,
            group,
            resource,
            subresource: "",
            namespace: "",
            name: "",
        }
    }

    fn sub(self, subresource: &'static str) -> Self {
        Access {
            subresource,
            ..self
        }
    }

    fn ns(self, namespace: &'static str) -> Self {
        Access { namespace, ..self }
    }

    fn named(self, name: &'static str) -> Self {
        Access { name, ..self }
    }

    fn review(&self) -> Value {
        json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {
                "verb": self.verb, "group": self.group, "resource": self.resource,
                "subresource": self.subresource, "namespace": self.namespace,
                "name": self.name,
            }},
        })
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb, self.resource)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        if !self.subresource.is_empty() {
            write!(f, "/{}", self.subresource)?;
        }
        if !self.name.is_empty() {
            write!(f, " {}", self.name)?;
        }
        match self.namespace {
            "" => write!(f, " (all namespaces)"),
            ns => write!(f, " -n {ns}"),
        }
    }
}

/// Asks every question as the chart's ServiceAccount in one kubectl run
/// (SelfSubjectAccessReviews: what `kubectl auth can-i` sends), in order.
fn allowed(env: &Env, questions: &[Access]) -> anyhow::Result<Vec<bool>> {
    let list = json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": questions.iter().map(Access::review).collect::<Vec<_>>(),
    });
    let text = env.sa.run_with_input(
        &["create", "-f", "-", "-o", "json"],
        Some(&list.to_string()),
    )?;
    // One JSON document per review, one after the other.
    let items = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .context("kubectl printed invalid JSON")?;
    ensure!(
        items.len() == questions.len(),
        "{} answers for {} questions",
        items.len(),
        questions.len()
    );
    questions
        .iter()
        .zip(&items)
        .map(|(question, review)| {
            // The answer echoes its question: check the pairing.
            let asked = &review["spec"]["resourceAttributes"];
            let field = |name: &str| asked[name].as_str().unwrap_or_default().to_string();
            ensure!(
                field("verb") == question.verb
                    && field("resource") == question.resource
                    && field("subresource") == question.subresource
                    && field("namespace") == question.namespace
                    && field("name") == question.name,
                "answer {asked} does not match the question {question}"
            );
            Ok(review["status"]["allowed"].as_bool() == Some(true))
        })
        .collect()
}

/// Kinds the controller watches (one cluster-wide list+watch each).
const WATCHED: &[(&str, &str)] = &[
    (GW, "gatewayclasses"),
    (GW, "gateways"),
    (GW, "listenersets"),
    (GW, "httproutes"),
    (GW, "tlsroutes"),
    (GW, "tcproutes"),
    (GW, "udproutes"),
    (GW, "backendtlspolicies"),
    (GW, "referencegrants"),
    (COXSWAIN, "coxswainbackendpolicies"),
    (COXSWAIN, "coxswainexternalauths"),
    (COXSWAIN, "coxswaingatewayparameters"),
    (COXSWAIN, "basicauths"),
    (COXSWAIN, "clienttrafficpolicies"),
    (COXSWAIN, "compressions"),
    (COXSWAIN, "ipaccesscontrols"),
    (COXSWAIN, "jwtauths"),
    (COXSWAIN, "pathrewriteregexes"),
    (COXSWAIN, "ratelimits"),
    (COXSWAIN, "requestsizelimits"),
    (GW_X, "xbackendtrafficpolicies"),
    (CORE, "services"),
    ("discovery.k8s.io", "endpointslices"),
    ("networking.k8s.io", "ingresses"),
    ("networking.k8s.io", "ingressclasses"),
    // Only those labelled managed-by=coxswain (the pools'), but RBAC
    // cannot narrow a list by label.
    ("apps", "deployments"),
    (CORE, "namespaces"),
    // Cluster-wide on purpose: certificateRefs (and CA bundles) may point
    // into any namespace through a ReferenceGrant.
    (CORE, "secrets"),
    (CORE, "configmaps"),
];

/// Kinds whose status the controller writes.
const WITH_STATUS: &[&str] = &[
    "gatewayclasses",
    "gateways",
    "listenersets",
    "backendtlspolicies",
    "httproutes",
    "tlsroutes",
    "tcproutes",
    "udproutes",
];

/// Everything the controller calls (crates/provider-k8s): the watches, the
/// status PUTs, the server-side applies and the Lease.
fn needed() -> Vec<Access> {
    let mut all = Vec::new();
    for &(group, resource) in WATCHED {
        all.push(Access::new("list", group, resource));
        all.push(Access::new("watch", group, resource));
    }
    for &resource in WITH_STATUS {
        all.push(Access::new("update", GW, resource).sub("status"));
    }
    for resource in [
        "basicauths",
        "clienttrafficpolicies",
        "compressions",
        "coxswainbackendpolicies",
        "coxswainexternalauths",
        "ipaccesscontrols",
        "jwtauths",
        "pathrewriteregexes",
        "ratelimits",
        "requestsizelimits",
    ] {
        all.push(Access::new("update", COXSWAIN, resource).sub("status"));
    }
    all.push(Access::new("update", GW_X, "xbackendtrafficpolicies").sub("status"));
    all.push(Access::new("update", "networking.k8s.io", "ingresses").sub("status"));
    // Per-Gateway ServiceAccount (every mode) and Service (LoadBalancer
    // mode, the chart's default): server-side apply, a patch that is also
    // authorised as create when it creates the object.
    for resource in ["services", "serviceaccounts"] {
        all.push(Access::new("create", CORE, resource));
        all.push(Access::new("patch", CORE, resource));
    }
    let lease = |verb| Access::new(verb, "coordination.k8s.io", "leases").ns(RELEASE_NAMESPACE);
    all.push(lease("create"));
    all.push(lease("get").named("coxswain-controller"));
    all.push(lease("update").named("coxswain-controller"));
    all
}

/// What the identity must not be able to do: each a real capability an
/// attacker holding the token would want.
fn refused() -> Vec<Access> {
    let mut all = Vec::new();
    // No writes to the data it reads (Services and ServiceAccounts only
    // through apply, below).
    for (group, resource) in [
        (CORE, "secrets"),
        (CORE, "configmaps"),
        ("discovery.k8s.io", "endpointslices"),
    ] {
        for verb in ["create", "update", "patch", "delete", "deletecollection"] {
            all.push(Access::new(verb, group, resource));
        }
    }
    all.push(Access::new("create", CORE, "namespaces"));
    all.push(Access::new("delete", CORE, "namespaces"));
    // Nothing that runs code or mints credentials.
    all.push(Access::new("create", CORE, "pods"));
    all.push(Access::new("list", CORE, "pods"));
    // Dedicated pools are off by default: no Deployment or PDB writes.
    for verb in ["create", "update", "patch", "delete"] {
        all.push(Access::new(verb, "apps", "deployments"));
        all.push(Access::new(verb, "policy", "poddisruptionbudgets"));
    }
    for sub in ["exec", "attach", "portforward"] {
        all.push(Access::new("create", CORE, "pods").sub(sub));
        all.push(Access::new("get", CORE, "pods").sub(sub));
    }
    all.push(Access::new("create", CORE, "serviceaccounts").sub("token"));
    // Applied objects are never replaced or deleted, and a Service's status
    // (its load-balancer address) is not ours to write.
    for resource in ["services", "serviceaccounts"] {
        all.push(Access::new("update", CORE, resource));
        all.push(Access::new("delete", CORE, resource));
    }
    all.push(Access::new("update", CORE, "services").sub("status"));
    // No spec writes to Gateway API objects (a ReferenceGrant of its own
    // would widen what routes may reference).
    for &(group, resource) in WATCHED.iter().filter(|(g, _)| *g == GW) {
        for verb in ["create", "update", "patch", "delete"] {
            all.push(Access::new(verb, group, resource));
        }
    }
    // Status only through update (a PUT with the resourceVersion it read).
    for &resource in WITH_STATUS {
        all.push(Access::new("patch", GW, resource).sub("status"));
    }
    // No way to grant itself more.
    let rbac = "rbac.authorization.k8s.io";
    all.push(Access::new("create", rbac, "clusterrolebindings"));
    all.push(Access::new("create", rbac, "rolebindings"));
    all.push(Access::new("bind", rbac, "clusterroles"));
    all.push(Access::new("escalate", rbac, "clusterroles"));
    all.push(Access::new("impersonate", CORE, "serviceaccounts"));
    all.push(Access::new("impersonate", CORE, "users"));
    all.push(Access::new(
        "create",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
    ));
    all.push(Access::new(
        "create",
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ));
    all.push(Access::new("patch", CORE, "nodes"));
    // Only its own Lease, in its own namespace: never another component's
    // leader election (kube-controller-manager's Lease is in kube-system).
    let lease = |verb| Access::new(verb, "coordination.k8s.io", "leases");
    all.push(lease("create").ns("default"));
    all.push(lease("update").ns("kube-system"));
    all.push(lease("update").ns(RELEASE_NAMESPACE).named("other"));
    all.push(
        lease("delete")
            .ns(RELEASE_NAMESPACE)
            .named("coxswain-controller"),
    );
    all
}

pub fn chart_rbac_is_enough_and_least(env: &mut Env) -> anyhow::Result<()> {
    env.admin.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {PROBE_NS}}}\n"
    ))?;
    // LoadBalancer mode applies a Service and a ServiceAccount server-side
    // (creating them the first time).
    let probe = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: rbac-probe, namespace: {PROBE_NS}}}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: rbac-probe, namespace: {PROBE_NS}}}\n\
         spec: {{type: LoadBalancer, ports: [{{port: 80}}], selector: {{app.kubernetes.io/name: coxswain}}}}\n"
    );
    env.sa.run_with_input(
        &[
            "apply",
            "--server-side",
            "--field-manager=coxswain-e2e",
            "-f",
            "-",
        ],
        Some(&probe),
    )?;

    // The exposure, shown rather than hidden: a Secret the controller has
    // no use for comes back, data included, from a plain list.
    env.admin.apply(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: rbac-probe, namespace: {PROBE_NS}}}\n\
         type: Opaque\nstringData: {{password: not-for-the-gateway}}\n"
    ))?;
    let listed = env.sa.get_json(&["-n", PROBE_NS, "secrets"])?;
    let readable = listed["items"]
        .as_array()
        .context("Secret list without items")?
        .iter()
        .any(|s| s["metadata"]["name"] == "rbac-probe" && s["data"]["password"].is_string());
    ensure!(
        readable,
        "the ServiceAccount's list of Secrets no longer returns their data: \
         update this test and docs/security.md"
    );

    let needed = needed();
    let refused = refused();
    let mut wrong = Vec::new();
    for (access, yes) in needed.iter().zip(allowed(env, &needed)?) {
        if !yes {
            wrong.push(format!("cannot {access}"));
        }
    }
    for (access, yes) in refused.iter().zip(allowed(env, &refused)?) {
        if yes {
            wrong.push(format!("can {access} (more than it needs)"));
        }
    }
    if !wrong.is_empty() {
        bail!("the ServiceAccount {}", wrong.join("; "));
    }
    env.admin
        .run(&["delete", "namespace", PROBE_NS, "--wait=false"])?;

    // Everything above ran with the controller on this identity.
    let log = env.controller.log_text();
    if let Some(line) = log
        .lines()
        .find(|l| l.to_ascii_lowercase().contains("forbidden"))
    {
        bail!("the controller was denied something: {line}");
    }
    println!(
        "    server-side apply created a Service and a ServiceAccount; a Secret's data comes back from a list (the cluster-wide watch); {} needed accesses allowed, {} refused; no Forbidden in the controller log",
        needed.len(),
        refused.len()
    );
    Ok(())
}
