//! OpenTelemetry tracing flags shared by `run` and `controller`.

use std::time::Duration;

use anyhow::Context;
use clap::ValueEnum;
use coxswain_proxy::trace::{OtlpProtocol, TracingOptions};

use crate::duration::parse_duration;

#[derive(Debug, clap::Args)]
pub struct TracingArgs {
    /// Export OpenTelemetry traces to this OTLP receiver (`http://host:port`;
    /// for `--otlp-protocol http` a base URL gets `/v1/traces`, a URL with
    /// a path is used as given). Without it tracing is off and trace
    /// headers pass through untouched.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<http::Uri>,
    /// OTLP over gRPC (h2c) or over HTTP with protobuf bodies.
    #[arg(
        long,
        default_value = "grpc",
        value_name = "PROTOCOL",
        requires = "otlp_endpoint"
    )]
    pub otlp_protocol: OtlpProtocolArg,
    /// Share of new traces recorded, 0 to 1. A request whose `traceparent`
    /// is valid follows its sampled flag instead.
    #[arg(long, default_value_t = 1.0, value_parser = parse_ratio, value_name = "RATIO", requires = "otlp_endpoint")]
    pub trace_sample: f64,
    /// `service.name` of the exported spans.
    #[arg(
        long,
        default_value = "coxswain",
        value_name = "NAME",
        requires = "otlp_endpoint"
    )]
    pub trace_service_name: String,
    /// Spans waiting for export; beyond it new spans are dropped (and
    /// counted in coxswain_proxy_trace_spans_dropped_total).
    #[arg(
        long,
        default_value_t = 2048,
        value_name = "N",
        requires = "otlp_endpoint"
    )]
    pub trace_queue_size: usize,
    /// Spans per export call.
    #[arg(
        long,
        default_value_t = 512,
        value_name = "N",
        requires = "otlp_endpoint"
    )]
    pub trace_batch_size: usize,
    /// The longest a span waits for its batch to fill before it is sent.
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION", requires = "otlp_endpoint")]
    pub trace_batch_interval: Duration,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OtlpProtocolArg {
    Grpc,
    Http,
}

fn parse_ratio(text: &str) -> Result<f64, String> {
    let ratio: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    if (0.0..=1.0).contains(&ratio) {
        Ok(ratio)
    } else {
        Err(format!("{text} is not between 0 and 1"))
    }
}

impl TracingArgs {
    /// The proxy's tracing options; `None` without an endpoint.
    pub fn options(&self) -> anyhow::Result<Option<TracingOptions>> {
        let Some(endpoint) = &self.otlp_endpoint else {
            return Ok(None);
        };
        let protocol = match self.otlp_protocol {
            OtlpProtocolArg::Grpc => OtlpProtocol::Grpc,
            OtlpProtocolArg::Http => OtlpProtocol::Http,
        };
        let options = TracingOptions {
            sample_ratio: self.trace_sample,
            service_name: self.trace_service_name.clone(),
            queue_size: self.trace_queue_size.max(1),
            batch_size: self.trace_batch_size.max(1),
            batch_interval: self.trace_batch_interval,
            ..TracingOptions::new(endpoint.clone(), protocol)
        };
        options
            .check()
            .with_context(|| format!("--otlp-endpoint {endpoint}"))?;
        Ok(Some(options))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_checked() {
        assert_eq!(parse_ratio("0.25"), Ok(0.25));
        assert!(parse_ratio("1.5").is_err());
        assert!(parse_ratio("-0").is_ok());
        assert!(parse_ratio("x").is_err());
        assert!(parse_ratio("NaN").is_err());
    }
}
