//! A dedicated Gateway's proxy pool: the Deployment `<gateway>-coxswain`
//! running `coxswain proxy` (config from the controller's stream, no
//! Kubernetes credentials), its ServiceAccount, and (when configured) a
//! PodDisruptionBudget. The Service is in `pool_service`. Pure: the
//! writer applies what these return.

use coxswain_api::Gateway;
use coxswain_api::crds::CoxswainGatewayParametersSpec;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    HTTPGetAction, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    SeccompProfile, SecretVolumeSource, SecurityContext, ServiceAccount, Sysctl, Volume,
    VolumeMount,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::gateway_service::{owner_reference, resource_name};
use crate::labels::{pool_labels, user_labels};

/// What every pool needs from the controller's flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSettings {
    /// Proxy image when the parameters name none (`--proxy-image`).
    pub image: String,
    /// HOST:PORT the pool's proxies dial (`--config-stream-advertise`).
    pub stream_endpoint: String,
    /// Name the controller's stream certificate carries
    /// (`--config-stream-server-name`).
    pub stream_server_name: String,
}

/// The proxy's admin port: /readyz, /healthz, /metrics.
pub const ADMIN_PORT: u16 = 9901;
pub const STREAM_CREDENTIALS_DIR: &str = "/etc/coxswain/stream";
pub const STATE_DIR: &str = "/var/lib/coxswain";
/// The non-root user of the image (as the chart runs the controller).
const USER: i64 = 65532;

/// The Secret holding a pool's stream credentials (`ca.crt`, `tls.crt`,
/// `tls.key`), mounted at [`STREAM_CREDENTIALS_DIR`].
pub fn stream_secret_name(gateway: &str) -> String {
    format!("{}-stream", resource_name(gateway))
}

/// The proxy container's arguments.
pub fn proxy_args(settings: &PoolSettings) -> Vec<String> {
    [
        "proxy",
        "--config-stream",
        &settings.stream_endpoint,
        "--stream-server-name",
        &settings.stream_server_name,
        "--stream-credentials",
        STREAM_CREDENTIALS_DIR,
        "--state-dir",
        STATE_DIR,
        "--admin-address",
        &format!("0.0.0.0:{ADMIN_PORT}"),
    ]
    .into_iter()
    .map(str::to_string)
    .collect()
}

/// Metadata of a pool object: user labels (parameters', then the
/// Gateway's infrastructure labels), the reserved ones, annotations
/// likewise, and the Gateway as owner. `None` for a Gateway not stored yet.
pub fn pool_metadata(
    gw: &Gateway,
    spec: &CoxswainGatewayParametersSpec,
    name: String,
) -> Option<ObjectMeta> {
    let gateway = gw.metadata.name.as_deref()?;
    let mut labels = user_labels(gw, Some(spec));
    labels.extend(pool_labels(gateway));
    let mut annotations = spec.annotations.clone();
    let infra = gw
        .spec
        .infrastructure
        .as_ref()
        .and_then(|i| i.annotations.as_ref());
    annotations.extend(
        infra
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    Some(ObjectMeta {
        name: Some(name),
        namespace: gw.metadata.namespace.clone(),
        labels: Some(labels),
        annotations: (!annotations.is_empty()).then_some(annotations),
        owner_references: Some(vec![owner_reference(gw)?]),
        ..ObjectMeta::default()
    })
}

pub fn desired_pool_service_account(
    gw: &Gateway,
    spec: &CoxswainGatewayParametersSpec,
) -> Option<ServiceAccount> {
    let name = resource_name(gw.metadata.name.as_deref()?);
    Some(ServiceAccount {
        metadata: pool_metadata(gw, spec, name)?,
        // The proxies hold no Kubernetes credentials.
        automount_service_account_token: Some(false),
        ..ServiceAccount::default()
    })
}

pub fn desired_deployment(
    gw: &Gateway,
    spec: &CoxswainGatewayParametersSpec,
    settings: &PoolSettings,
) -> Option<Deployment> {
    let gateway = gw.metadata.name.as_deref()?;
    let name = resource_name(gateway);
    let labels = pool_labels(gateway);
    let scrape = [
        ("prometheus.io/scrape", "true".to_string()),
        ("prometheus.io/port", ADMIN_PORT.to_string()),
        ("prometheus.io/path", "/metrics".to_string()),
    ];
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels.clone()),
            annotations: Some(scrape.map(|(k, v)| (k.to_string(), v)).into()),
            ..ObjectMeta::default()
        }),
        spec: Some(pod_spec(gateway, spec, settings)),
    };
    Some(Deployment {
        metadata: pool_metadata(gw, spec, name)?,
        spec: Some(DeploymentSpec {
            replicas: Some(spec.replicas.unwrap_or(1)),
            selector: LabelSelector {
                match_labels: Some(labels),
                match_expressions: None,
            },
            template,
            ..DeploymentSpec::default()
        }),
        status: None,
    })
}

fn pod_spec(
    gateway: &str,
    spec: &CoxswainGatewayParametersSpec,
    settings: &PoolSettings,
) -> PodSpec {
    let admin = || IntOrString::String("admin".to_string());
    let probe = |path: &str, period: i32, failures: i32| Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: admin(),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        ..Probe::default()
    };
    let container = Container {
        name: "proxy".to_string(),
        image: Some(spec.image.clone().unwrap_or_else(|| settings.image.clone())),
        args: Some(proxy_args(settings)),
        env: Some(vec![
            EnvVar {
                name: "RUST_LOG".to_string(),
                value: Some(spec.log_level.clone().unwrap_or_else(|| "info".to_string())),
                value_from: None,
            },
            // The proxy's name in the controller's stream logs.
            EnvVar {
                name: "POD_NAME".to_string(),
                value: None,
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: "metadata.name".to_string(),
                        api_version: None,
                    }),
                    ..EnvVarSource::default()
                }),
            },
        ]),
        ports: Some(vec![ContainerPort {
            name: Some("admin".to_string()),
            container_port: i32::from(ADMIN_PORT),
            protocol: Some("TCP".to_string()),
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(probe("/readyz", 5, 2)),
        liveness_probe: Some(probe("/healthz", 10, 3)),
        resources: spec.resources.clone(),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_string()]),
                add: None,
            }),
            ..SecurityContext::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "stream".to_string(),
                mount_path: STREAM_CREDENTIALS_DIR.to_string(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "state".to_string(),
                mount_path: STATE_DIR.to_string(),
                ..VolumeMount::default()
            },
        ]),
        ..Container::default()
    };
    PodSpec {
        containers: vec![container],
        service_account_name: Some(resource_name(gateway)),
        automount_service_account_token: Some(false),
        // Longer than the proxy's default drain timeout (30s).
        termination_grace_period_seconds: Some(45),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(USER),
            run_as_group: Some(USER),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".to_string(),
                localhost_profile: None,
            }),
            // Listeners below 1024 without any capability (a namespaced,
            // safe sysctl; see lowPorts in the chart's values).
            sysctls: Some(vec![Sysctl {
                name: "net.ipv4.ip_unprivileged_port_start".to_string(),
                value: "0".to_string(),
            }]),
            ..PodSecurityContext::default()
        }),
        volumes: Some(vec![
            Volume {
                name: "stream".to_string(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(stream_secret_name(gateway)),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            },
            Volume {
                name: "state".to_string(),
                empty_dir: Some(EmptyDirVolumeSource::default()),
                ..Volume::default()
            },
        ]),
        node_selector: (!spec.node_selector.is_empty()).then(|| spec.node_selector.clone()),
        tolerations: (!spec.tolerations.is_empty()).then(|| spec.tolerations.clone()),
        affinity: spec.affinity.clone(),
        ..PodSpec::default()
    }
}

/// The pool's PodDisruptionBudget, when the parameters ask for one.
pub fn desired_pdb(
    gw: &Gateway,
    spec: &CoxswainGatewayParametersSpec,
) -> Option<PodDisruptionBudget> {
    let budget = spec.pod_disruption_budget.as_ref()?;
    let gateway = gw.metadata.name.as_deref()?;
    Some(PodDisruptionBudget {
        metadata: pool_metadata(gw, spec, resource_name(gateway))?,
        spec: Some(PodDisruptionBudgetSpec {
            min_available: budget.min_available.clone(),
            max_unavailable: budget.max_unavailable.clone(),
            selector: Some(LabelSelector {
                match_labels: Some(pool_labels(gateway)),
                match_expressions: None,
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    })
}

#[cfg(test)]
#[path = "pool_tests.rs"]
pub(crate) mod tests;
