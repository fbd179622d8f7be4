//! A route's request stages, compiled from its IR filters and kept in
//! phase order.

use std::sync::Arc;

use coxswain_ir::{BackendTarget, Filter, Redirect, Rewrite};
use http::StatusCode;

use super::context::RequestCtx;
use super::extensions::{CompiledExtension, ExtensionSet, broken_status};
use super::rate_limit::RuleLimit;
use super::{
    Flow, basic_auth, compression, cors, external_auth, headers, ip_access, jwt_auth, path_rewrite,
    rate_limit, redirect, rewrite, size_limit,
};
use crate::access_log::http::AnsweredBy;
use crate::auth::ext_authz::CompiledExternalAuth;
use crate::cluster::ClusterSet;
use crate::http::body::plain;
use crate::http::cors::CorsPolicy;
use crate::metrics::Metrics;
use crate::mirror::MirrorFilter;
use crate::route::Target;
use headers::HeaderEdits;

/// The fixed order of the request path (see the module table in
/// [`super`]). Stages of an earlier phase always run first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Who may send requests here at all: address ranges, and filters
    /// that cannot be applied (their requests are refused outright).
    Network,
    Admission,
    Authn,
    Authz,
    Limits,
    Transforms,
}

impl Phase {
    /// The phase's name in the table of [`super`].
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Network => "network",
            Phase::Admission => "admission",
            Phase::Authn => "authn",
            Phase::Authz => "authz",
            Phase::Limits => "limits",
            Phase::Transforms => "transforms",
        }
    }
}

/// One step a route takes on a request before it goes upstream.
#[derive(Debug)]
pub enum RequestStage {
    /// A filter that cannot be applied: every request is answered with
    /// this status.
    Deny(StatusCode),
    /// A Coxswain filter resource (ExtensionRef).
    Extension(Arc<CompiledExtension>),
    /// A RateLimit resource, with the rule's own share of its buckets.
    RateLimit(RuleLimit),
    /// A CoxswainExternalAuth resource and its service's cluster.
    ExternalAuth {
        auth: Arc<CompiledExternalAuth>,
        target: Target,
    },
    /// CORS: a preflight is answered here; an allowed origin's request
    /// gets its response headers planned.
    Cors(CorsPolicy),
    RequestHeaders(HeaderEdits),
    Rewrite(Rewrite),
    Redirect(Redirect),
    Mirror(MirrorFilter),
}

impl RequestStage {
    /// The access log's `answered_by` when this stage answers.
    fn answer_name(&self) -> &'static str {
        match self {
            RequestStage::Deny(_) => "filter_unavailable",
            RequestStage::Extension(e) => match &**e {
                CompiledExtension::IpAccess(_) => "ip_access",
                CompiledExtension::BasicAuth(_) => "basic_auth",
                CompiledExtension::JwtAuth(_) => "jwt_auth",
                CompiledExtension::ExternalAuth(_) => "external_auth",
                CompiledExtension::SizeLimit { .. } => "size_limit",
                CompiledExtension::RateLimit(_) => "rate_limit",
                CompiledExtension::PathRewrite { .. } => "path_rewrite",
                CompiledExtension::Compression(_) => "compression",
                CompiledExtension::Broken { .. } | CompiledExtension::Inactive => {
                    "filter_unavailable"
                }
            },
            RequestStage::RateLimit(_) => "rate_limit",
            RequestStage::ExternalAuth { .. } => "external_auth",
            RequestStage::Cors(_) => "cors",
            RequestStage::RequestHeaders(_) => "request_headers",
            RequestStage::Rewrite(_) => "url_rewrite",
            RequestStage::Redirect(_) => "redirect",
            RequestStage::Mirror(_) => "mirror",
        }
    }

    pub fn phase(&self) -> Phase {
        match self {
            RequestStage::Deny(_) => Phase::Network,
            RequestStage::Extension(e) => match &**e {
                CompiledExtension::IpAccess(_) | CompiledExtension::Broken { .. } => Phase::Network,
                CompiledExtension::BasicAuth(_)
                | CompiledExtension::JwtAuth(_)
                | CompiledExtension::ExternalAuth(_) => Phase::Authn,
                CompiledExtension::SizeLimit { .. } | CompiledExtension::RateLimit(_) => {
                    Phase::Limits
                }
                CompiledExtension::PathRewrite { .. }
                | CompiledExtension::Compression(_)
                | CompiledExtension::Inactive => Phase::Transforms,
            },
            RequestStage::RateLimit(_) => Phase::Limits,
            RequestStage::ExternalAuth { .. } => Phase::Authn,
            RequestStage::Cors(_) => Phase::Admission,
            RequestStage::RequestHeaders(_)
            | RequestStage::Rewrite(_)
            | RequestStage::Redirect(_)
            | RequestStage::Mirror(_) => Phase::Transforms,
        }
    }

    /// Async so that a stage may wait (on a key fetch, an auth service, a
    /// shared counter); a stage with a large future boxes it, so the
    /// request's future stays small.
    async fn run<'r>(&'r self, ctx: &mut RequestCtx<'r>) -> Flow {
        match self {
            RequestStage::Deny(status) => Flow::Answer(plain(*status, "filter unavailable\n")),
            RequestStage::Extension(e) => match &**e {
                CompiledExtension::IpAccess(access) => ip_access::admit(access, ctx),
                // Boxed: only requests to these rules carry its future.
                CompiledExtension::BasicAuth(table) => {
                    Box::pin(basic_auth::admit(table, ctx)).await
                }
                // Cheap and synchronous: verified inline.
                CompiledExtension::JwtAuth(jwt) => jwt_auth::admit(jwt, ctx),
                CompiledExtension::SizeLimit { max_bytes } => size_limit::admit(*max_bytes, ctx),
                CompiledExtension::PathRewrite {
                    regex,
                    substitution,
                } => path_rewrite::apply(regex, substitution, ctx),
                CompiledExtension::Compression(policy) => compression::plan(policy, ctx),
                // Compiled to their own stages; nothing to do here.
                CompiledExtension::RateLimit(_)
                | CompiledExtension::ExternalAuth(_)
                | CompiledExtension::Inactive => Flow::Next,
                CompiledExtension::Broken { status, reason } => {
                    tracing::debug!(%reason, "filter cannot be enforced");
                    Flow::Answer(plain(*status, "filter unavailable\n"))
                }
            },
            // Boxed: only requests to globally limited rules carry the
            // store's future.
            RequestStage::RateLimit(rule) if rule.is_global() => {
                Box::pin(rate_limit::admit_global(rule, ctx)).await
            }
            RequestStage::RateLimit(rule) => rate_limit::admit(rule, ctx),
            // Boxed: only requests to these rules carry its future.
            RequestStage::ExternalAuth { auth, target } => {
                Box::pin(external_auth::admit(auth, target, ctx)).await
            }
            RequestStage::Cors(policy) => cors::admit(policy, ctx),
            RequestStage::RequestHeaders(edits) => {
                edits.apply(&mut ctx.parts.headers);
                Flow::Next
            }
            RequestStage::Rewrite(rw) => rewrite::apply(rw, ctx),
            RequestStage::Redirect(r) => redirect::answer(r, ctx),
            RequestStage::Mirror(m) => {
                // A tunnel cannot be copied: upgrades are not mirrored.
                if ctx.upgrade.is_none() && m.sampled() {
                    ctx.mirrors.push(m);
                }
                Flow::Next
            }
        }
    }
}

/// A rule's request stages, in phase order (spec order within a phase).
#[derive(Debug, Default)]
pub struct RequestStages {
    stages: Box<[RequestStage]>,
    /// For each stage, the index of the rule filter it was compiled from.
    sources: Box<[usize]>,
}

/// One request stage as `coxswain explain` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedStage {
    /// Index into the IR rule's `filters`.
    pub filter: usize,
    pub phase: Phase,
}

impl RequestStages {
    /// `stages` paired with the index of the filter each came from.
    pub fn new(mut stages: Vec<(usize, RequestStage)>) -> Self {
        // Stable: filters of one phase keep the order the rule gave them.
        stages.sort_by_key(|(_, stage)| stage.phase());
        let (sources, stages): (Vec<_>, Vec<_>) = stages.into_iter().unzip();
        RequestStages {
            stages: stages.into_boxed_slice(),
            sources: sources.into_boxed_slice(),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &RequestStage> {
        self.stages.iter()
    }

    /// The order the stages run in, by the filter each came from.
    pub fn plan(&self) -> Vec<PlannedStage> {
        self.stages
            .iter()
            .zip(self.sources.iter())
            .map(|(stage, &filter)| PlannedStage {
                filter,
                phase: stage.phase(),
            })
            .collect()
    }

    /// Does the rule mirror requests?
    pub fn mirrors(&self) -> bool {
        self.stages
            .iter()
            .any(|s| matches!(s, RequestStage::Mirror(_)))
    }

    /// Runs every stage in order until one answers.
    pub async fn run<'r>(&'r self, ctx: &mut RequestCtx<'r>) -> Flow {
        for stage in self.stages.iter() {
            if let Flow::Answer(mut response) = stage.run(ctx).await {
                response
                    .extensions_mut()
                    .insert(AnsweredBy(stage.answer_name()));
                return Flow::Answer(response);
            }
        }
        Flow::Next
    }
}

/// A rule's filters split into its request stages and its response header
/// edits.
pub fn compile(
    filters: &[Filter],
    (clusters, extensions): (&ClusterSet, &ExtensionSet),
    metrics: &Metrics,
    label: &str,
) -> (RequestStages, Vec<HeaderEdits>) {
    let mut stages = Vec::new();
    let mut response = Vec::new();
    for (index, filter) in filters.iter().enumerate() {
        let mut push = |stage| stages.push((index, stage));
        match filter {
            Filter::RequestHeaders(m) => {
                push(RequestStage::RequestHeaders(HeaderEdits::compile(m)));
            }
            Filter::ResponseHeaders(m) => response.push(HeaderEdits::compile(m)),
            Filter::Redirect(r) => push(RequestStage::Redirect(r.clone())),
            Filter::Rewrite(r) => push(RequestStage::Rewrite(r.clone())),
            Filter::Cors(c) => push(RequestStage::Cors(CorsPolicy::compile(c))),
            Filter::Mirror(m) => push(RequestStage::Mirror(MirrorFilter::compile(
                m,
                clusters,
                &metrics.mirrors,
                label,
            ))),
            Filter::Extension(key) => {
                push(match extensions.get(key) {
                    Some(e) => match &**e {
                        CompiledExtension::RateLimit(limit) => RequestStage::RateLimit(
                            RuleLimit::new(limit.clone(), label, metrics.rate_limit_store.clone()),
                        ),
                        CompiledExtension::ExternalAuth(auth) => RequestStage::ExternalAuth {
                            target: Target::resolve(
                                &BackendTarget::Cluster(auth.auth.cluster.clone()),
                                clusters,
                            ),
                            auth: auth.clone(),
                        },
                        _ => RequestStage::Extension(e.clone()),
                    },
                    None => {
                        tracing::warn!(route = label, %key, "filter resource missing from the config");
                        RequestStage::Deny(StatusCode::INTERNAL_SERVER_ERROR)
                    }
                })
            }
            Filter::Deny { status, reason } => {
                tracing::debug!(route = label, %reason, "rule refuses its requests");
                push(RequestStage::Deny(broken_status(*status)));
            }
        }
    }
    (RequestStages::new(stages), response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coxswain_ir::{Cors, HeaderModifier};

    #[test]
    fn stages_run_in_phase_order_and_keep_spec_order_within_a_phase() {
        let set = |name: &str| {
            Filter::RequestHeaders(HeaderModifier {
                set: vec![coxswain_ir::Header {
                    name: name.into(),
                    value: "1".into(),
                }],
                ..HeaderModifier::default()
            })
        };
        let filters = [
            set("x-first"),
            Filter::Cors(Cors::default()),
            set("x-second"),
        ];
        let (stages, _) = compile(
            &filters,
            (&ClusterSet::default(), &ExtensionSet::default()),
            &Metrics::default(),
            "ns/r/0",
        );
        let order: Vec<String> = stages
            .iter()
            .map(|s| match s {
                RequestStage::Cors(_) => "cors".to_string(),
                RequestStage::RequestHeaders(e) => e.set[0].0.to_string(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(order, ["cors", "x-first", "x-second"]);
        let plan: Vec<_> = stages.plan().iter().map(|p| (p.filter, p.phase)).collect();
        assert_eq!(
            plan,
            [
                (1, Phase::Admission),
                (0, Phase::Transforms),
                (2, Phase::Transforms)
            ]
        );
    }
}
