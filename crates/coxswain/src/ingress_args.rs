//! Flags saying where classic Ingresses are served (`run`, `check` and
//! `controller` take the same ones).

use std::net::IpAddr;

use coxswain_translate::IngressOptions;

#[derive(Clone, Debug, clap::Args)]
pub struct IngressArgs {
    /// Port of the plain HTTP listener serving our Ingresses (bound only
    /// while at least one Ingress is ours).
    #[arg(long, default_value_t = 80, value_name = "PORT")]
    pub ingress_http_port: u16,
    /// Port of the HTTPS listener serving our Ingresses' `tls` hosts
    /// (bound only while one of them presents a certificate).
    #[arg(long, default_value_t = 443, value_name = "PORT")]
    pub ingress_https_port: u16,
    /// Ingresses naming this class are ours even when no IngressClass of
    /// that name exists (an IngressClass of that name decides otherwise).
    #[arg(long, value_name = "NAME")]
    pub ingress_class: Option<String>,
    /// Address written to status.loadBalancer of our Ingresses (default:
    /// the bind address).
    #[arg(long, value_name = "IP")]
    pub ingress_status_address: Option<IpAddr>,
}

impl IngressArgs {
    pub fn options(&self) -> IngressOptions {
        IngressOptions {
            http_port: self.ingress_http_port,
            https_port: self.ingress_https_port,
            class: self.ingress_class.clone(),
            status_address: self.ingress_status_address,
        }
    }
}
