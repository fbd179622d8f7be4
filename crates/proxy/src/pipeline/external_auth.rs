//! CoxswainExternalAuth (authn phase): the authorization service decides.
//! An allowed request goes on with the headers the resource copies from
//! the answer (a client's own of those names always removed, so it cannot
//! forge them); a denied one gets the service's answer. No endpoint, or a
//! service that fails or is too slow: 503, unless the resource fails open
//! (never when there is no endpoint). A gRPC client gets its denial as a
//! gRPC status (UNAUTHENTICATED, PERMISSION_DENIED, UNAVAILABLE). A
//! resource that forwards the body reads it whole first, up to its cap:
//! a larger one is answered 413, never sent in part.

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use http_body_util::{BodyExt, Full};

use super::Flow;
use super::context::RequestCtx;
use super::request_body::Unavailable;
use crate::auth::ext_authz::{
    self, CheckError, CompiledExternalAuth, Original, Verdict, forward, grpc,
};
use crate::http::body::{ProxyBody, plain};
use crate::http::grpc::{LocalReply, is_grpc};
use crate::route::Target;
use crate::trace::CheckSpan;
use coxswain_ir::ExternalAuthProtocol;

pub async fn admit(auth: &CompiledExternalAuth, target: &Target, ctx: &mut RequestCtx<'_>) -> Flow {
    let cluster = match target {
        Target::Cluster(c) => c,
        Target::Invalid(reason) => {
            tracing::debug!(%reason, "authorization service missing");
            return unavailable();
        }
    };
    let body = match auth.auth.body_max_bytes {
        Some(cap) => match ctx.body.whole(cap).await {
            Ok(bytes) => Some(bytes.clone()),
            Err(Unavailable::TooLarge) => {
                tracing::debug!(cap, "request body larger than the check takes");
                return Flow::Answer(plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "request body too large\n",
                ));
            }
            Err(Unavailable::Broken) => {
                return Flow::Answer(plain(StatusCode::BAD_REQUEST, "bad request body\n"));
            }
        },
        None => None,
    };
    let path_and_query = match &ctx.query {
        Some(q) => format!("{}?{q}", ctx.path),
        None => ctx.path.clone(),
    };
    let original = Original {
        method: &ctx.parts.method,
        host: &ctx.host,
        path_and_query: &path_and_query,
        headers: &ctx.parts.headers,
        scheme: ctx.scheme,
        client: ctx.client,
        version: ctx.parts.version,
        body: body.as_ref(),
    };
    let request = match auth.auth.protocol {
        ExternalAuthProtocol::Http => forward::request(auth, &original),
        ExternalAuthProtocol::Grpc => grpc::request(auth, &original),
    };
    let Some(request) = request else {
        tracing::debug!("request cannot be put to the authorization service");
        return unavailable();
    };
    let grpc = auth.auth.protocol == ExternalAuthProtocol::Grpc;
    let mut span = CheckSpan::start(ctx.trace, grpc, request.method(), &cluster.name);
    let answer = ext_authz::exchange(
        ctx.upstreams,
        cluster,
        request,
        auth.timeout,
        ctx.client,
        &mut span,
    )
    .await;
    let verdict = answer.and_then(|a| match auth.auth.protocol {
        ExternalAuthProtocol::Http => Ok(forward::verdict(auth, a)),
        ExternalAuthProtocol::Grpc => grpc::verdict(auth, a),
    });
    match &verdict {
        Ok(Verdict::Allow(_)) => span.decided("allow", None),
        Ok(Verdict::Deny { .. }) => span.decided("deny", None),
        Err(e) => span.decided("error", Some(e.span_error())),
    }
    drop(span);
    match verdict {
        Ok(Verdict::Allow(headers)) => {
            remove_client_copies(auth, ctx);
            for (name, value) in headers {
                ctx.parts.headers.append(name, value);
            }
            Flow::Next
        }
        Ok(Verdict::Deny {
            status,
            headers,
            body,
        }) => Flow::Answer(denied(status, headers, body, is_grpc(&ctx.parts.headers))),
        Err(CheckError::NoEndpoint) => {
            tracing::debug!(cluster = %cluster.name, "no authorization endpoint");
            unavailable()
        }
        Err(e) if auth.auth.fail_closed => {
            tracing::debug!(cluster = %cluster.name, error = ?e, "authorization failed; denied");
            unavailable()
        }
        Err(e) => {
            tracing::debug!(cluster = %cluster.name, error = ?e, "authorization failed; let through");
            remove_client_copies(auth, ctx);
            Flow::Next
        }
    }
}

/// The client's own headers of the names the service speaks for go,
/// whatever it answered: a client cannot forge them, even when the check
/// fails open.
fn remove_client_copies(auth: &CompiledExternalAuth, ctx: &mut RequestCtx<'_>) {
    for name in &auth.response_headers {
        ctx.parts.headers.remove(name);
    }
}

fn unavailable() -> Flow {
    Flow::Answer(plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "authorization unavailable\n",
    ))
}

/// The service's denial as the client gets it; marked as the gateway's
/// own for a gRPC client, so it becomes a gRPC status.
fn denied(status: StatusCode, headers: HeaderMap, body: Bytes, grpc: bool) -> Response<ProxyBody> {
    // A 2xx or 1xx from the Check call's denied_response is no denial.
    let status = if status.is_client_error() || status.is_server_error() || status.is_redirection()
    {
        status
    } else {
        StatusCode::FORBIDDEN
    };
    let body = Full::new(body).map_err(|never| match never {});
    let mut response = Response::new(body.boxed_unsync());
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    if grpc {
        let text = match status {
            StatusCode::UNAUTHORIZED => "unauthenticated\n",
            StatusCode::FORBIDDEN => "permission denied\n",
            _ => "denied by the authorization service\n",
        };
        response.extensions_mut().insert(LocalReply(text));
    }
    response
}
