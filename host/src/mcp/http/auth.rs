//! Who an `/mcp` request is: its bearer token (or, without tokens, the
//! server's user), or the principal another replica sealed it for.

use crate::access::Auth;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The credential a request presents, once authenticated.
#[derive(Debug, Clone)]
pub(crate) struct Principal(pub(crate) Arc<str>);

/// How `/mcp` requests are authenticated.
pub(super) struct Authenticate {
    pub(super) auth: Auth,
    /// Who a request is without tokens (`--no-auth`): the server's user.
    pub(super) open_as: Arc<str>,
    /// Seals forwarded requests are checked with (none alone).
    pub(super) cluster: Option<Arc<crate::mcp::cluster::Cluster>>,
}

/// 401 unless the request presents one of the server's credentials (or
/// is a request another replica forwarded and sealed, mcp/cluster.rs); the
/// credential goes with the request as its [`Principal`].
pub(super) async fn authenticate(
    State(auth): State<Arc<Authenticate>>,
    mut request: Request,
    next: Next,
) -> Response {
    if request
        .headers()
        .contains_key(crate::mcp::cluster::FORWARDED)
    {
        return match crate::mcp::cluster::admit_forwarded(auth.cluster.as_deref(), request).await {
            Ok(request) => next.run(request).await,
            Err(refusal) => refusal,
        };
    }
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let Some(principal) = auth.auth.principal(header, &auth.open_as) else {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: send `Authorization: Bearer TOKEN`, TOKEN from the file \
             `toolhost serve --http` printed at start (or the --token-file it was given)",
        )
            .into_response();
    };
    request.extensions_mut().insert(Principal(principal));
    next.run(request).await
}
