//! The API's OpenAPI 3.1 document (`GET /v1/openapi.json`, committed as docs/openapi.json): made
//! from the handlers' `#[utoipa::path]` attributes and the wire types' schemas as the router is
//! built (`described`), then completed from the one table of who may call what
//! ([`access::ROUTES`]): the bearer requirement, 401, 403 with the scope a route needs, and 500.
//! Nothing in it is written twice, so it cannot drift from the code it describes.

use crate::auth::access::{self, Need};
use axum::Extension;
use axum::http::{Method, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::sync::Arc;
use utoipa::ToSchema;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Components, ContentBuilder, OpenApi, Ref};
use utoipa_axum::PathItemExt as _;
use utoipa_axum::router::UtoipaMethodRouter;

/// The name of the bearer security scheme in the document.
const BEARER: &str = "bearer";

/// Every error answer: what is wrong, for people.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What is wrong (a 403 names what the route needs and what the token has).
    pub error: String,
}

/// `POST /v1/audits` answers the new audit's id.
#[derive(Debug, Serialize, ToSchema)]
pub struct Submitted {
    /// The audit's id.
    pub id: u64,
}

/// A `DELETE` answers the id it removed.
#[derive(Debug, Serialize, ToSchema)]
pub struct Removed {
    /// The removed schedule's or token's id.
    pub removed: u64,
}

/// The document's frame; the paths come from the router ([`described`]).
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Shoal coordinator API",
        description = "The HTTP API of `shoal coordinator`: submit and follow website audits, read their reports, \
                       manage schedules and tokens. Prose and examples: docs/api.md.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(schemas(ErrorBody)),
    tags(
        (name = "audits", description = "Submit, list, follow and cancel audits"),
        (name = "reports", description = "An audit's or one site's report"),
        (name = "schedules", description = "Recurring audits (docs/schedules.md)"),
        (name = "tokens", description = "Tokens with scopes (admin token only)"),
        (name = "meta", description = "This document"),
    )
)]
pub(crate) struct Frame;

/// One route, served and described from the same `#[utoipa::path]` handler: `P` is the type the
/// attribute generates beside `handler`. Why not utoipa-axum's `routes!`: it cannot name a
/// generic handler (`submit::<F>`), and every handler here is generic over the frontier.
pub(crate) fn described<P, H, T, S>(handler: H) -> UtoipaMethodRouter<S>
where
    P: utoipa::Path + utoipa::__dev::SchemaReferences + for<'t> utoipa::__dev::Tags<'t>,
    H: axum::handler::Handler<T, S>,
    T: 'static,
    S: Clone + Send + Sync + 'static,
{
    let mut schemas = Vec::new();
    P::schemas(&mut schemas);
    let methods = P::methods();
    let router =
        methods.iter().fold(axum::routing::MethodRouter::new(), |r, m| r.on(m.to_method_filter(), handler.clone()));
    let mut paths = utoipa::openapi::path::Paths::new();
    // The attribute's `tag` reaches the operation through `Tags`, as in utoipa-axum's `routes!`.
    let mut operation = P::operation();
    operation.tags.get_or_insert_with(Vec::new).extend(P::tags().iter().map(ToString::to_string));
    paths.add_path_operation(P::path(), methods, operation);
    (schemas, paths, router)
}

/// Completes the document the router collected: the bearer scheme on every route of
/// [`access::ROUTES`] with its 401, its 403 (unless every scope may call it) and the scope it
/// needs in its description, and a 500 everywhere.
pub(crate) fn complete(mut doc: OpenApi) -> OpenApi {
    let frame = <Frame as utoipa::OpenApi>::openapi();
    doc.info = frame.info;
    doc.tags = frame.tags;
    let components = doc.components.get_or_insert_with(Components::new);
    if let Some(c) = frame.components {
        components.schemas.extend(c.schemas);
    }
    components.add_security_scheme(BEARER, SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
    for item in doc.paths.paths.values_mut() {
        for op in operations(item) {
            op.responses
                .responses
                .entry("500".to_owned())
                .or_insert_with(|| error("The coordinator failed; its log says why"));
        }
    }
    for (method, route, action) in access::ROUTES {
        let need = access::need(*action);
        let Some(op) = doc.paths.paths.get_mut(*route).and_then(|item| operation(item, method)) else { continue };
        op.security = Some(vec![SecurityRequirement::new(BEARER, Vec::<String>::new())]);
        let needs = format!("Needs {}.", need.says());
        op.description = Some(match op.description.take() {
            Some(d) => format!("{d}\n\n{needs}"),
            None => needs,
        });
        let r = &mut op.responses.responses;
        r.insert("401".to_owned(), error("No bearer token, or one the coordinator does not know"));
        if need != Need::ReadOrSite {
            r.insert(
                "403".to_owned(),
                error(&format!("The token's scope does not reach this route: it needs {}", need.says())),
            );
        }
    }
    doc
}

/// An error response with [`ErrorBody`].
fn error(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    let content = ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build();
    ResponseBuilder::new().description(description).content("application/json", content).build().into()
}

/// The operations of a path item (the API uses GET, POST and DELETE only).
fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [item.get.as_mut(), item.post.as_mut(), item.delete.as_mut()].into_iter().flatten()
}

/// The operation of `method` in a path item.
fn operation<'a>(item: &'a mut PathItem, method: &Method) -> Option<&'a mut Operation> {
    match *method {
        Method::GET => item.get.as_mut(),
        Method::POST => item.post.as_mut(),
        Method::DELETE => item.delete.as_mut(),
        _ => None,
    }
}

/// The document as served, serialised once.
#[derive(Debug, Clone)]
pub struct Served(pub Arc<str>);

/// `GET /v1/openapi.json`, without a token: the document describes the API, not its data (the
/// same text is docs/openapi.json), and a client generator fetches it before it has a token.
#[utoipa::path(get, path = "/v1/openapi.json", operation_id = "get_openapi", tag = "meta",
    summary = "This OpenAPI document (no token needed)",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", content_type = "application/json", body = Object)))]
pub async fn document(Extension(Served(doc)): Extension<Served>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], doc.to_string()).into_response()
}

/// The document as served and committed: pretty-printed, keys in a stable order (utoipa keeps
/// paths and schemas in sorted maps), ending in a newline.
#[must_use]
pub fn json(doc: OpenApi) -> String {
    let mut text = doc.to_pretty_json().expect("an OpenAPI document of plain maps and strings serialises");
    text.push('\n');
    text
}
