//! Who may call which API route: the one table of routes and the scope each needs ([`ROUTES`],
//! [`need`]), and the one decision ([`allow`]) the API's middleware applies to every request.
//!
//! | action | admin | `submit` | `read` | `site` |
//! |---|---|---|---|---|
//! | list audits, an audit's status | all | all | all | only audits holding its hosts' sites, narrowed to them (others: 404) |
//! | a site's report (JSON, HTML) | yes | yes | yes | its hosts' sites (others: 404) |
//! | an audit's whole report | yes | yes | yes | 403 |
//! | submit, cancel | yes | yes | 403 | 403 |
//! | list and read schedules | yes | yes | yes | 403 |
//! | add and remove schedules, manage tokens | yes | 403 | 403 | 403 |
//! | the MCP tools at `/mcp` | yes | yes, `audit_site` too | yes, but not `audit_site` | 403 |
//!
//! Why `submit` reads every audit: it is for the operator's own automation (`shoal submit
//! --wait` follows the audit it submitted), not for a tenant, and tracking which token submitted
//! what would be state for no one. Why a site token gets 404 for another audit or site, not 403:
//! it learns nothing about other tenants' audits, and its own view is complete without them.
//!
//! A route missing from [`ROUTES`] is the admin token's alone: a new route cannot ship open to
//! the scoped tokens by being forgotten here.

use axum::http::Method;
use shoal_shared::token::{HostList, Scope};
use shoal_store::TokenRow;

/// Who is asking.
#[derive(Debug, Clone)]
pub enum Caller {
    /// The coordinator's `--token`.
    Admin,
    /// A token made with `shoal token add` or `POST /v1/tokens`.
    Token(TokenRow),
}

/// The MCP endpoint ([`crate::mcp`]): in the table, not in the OpenAPI document (MCP describes
/// its own tools, `tools/list`).
pub const MCP: &str = "/mcp";

/// What an API route does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `GET /v1/audits`.
    ListAudits,
    /// `GET /v1/audits/{id}`.
    AuditStatus,
    /// `GET /v1/audits/{id}/report`.
    AuditReport,
    /// `GET /v1/audits/{id}/sites/{site}/report`.
    SiteReport,
    /// `POST /v1/audits`.
    Submit,
    /// `POST /v1/audits/{id}/cancel`.
    Cancel,
    /// `GET /v1/schedules`, `GET /v1/schedules/{id}`.
    ReadSchedules,
    /// `POST /v1/schedules`, `DELETE /v1/schedules/{id}`.
    ChangeSchedules,
    /// `/v1/tokens`.
    ManageTokens,
    /// `POST /mcp`: the MCP tools; `audit_site` also needs [`Action::Submit`].
    Mcp,
}

/// What an action needs at least.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The admin token.
    Admin,
    /// `submit` (or the admin token).
    Submit,
    /// `read` or `submit` (or the admin token).
    Read,
    /// `read`, `submit`, or a `site` token, which sees its hosts' sites only.
    ReadOrSite,
}

impl Need {
    /// How a refusal names it.
    pub fn says(self) -> &'static str {
        match self {
            Need::Admin => "the coordinator's admin token",
            Need::Submit => "a token with scope submit (or the admin token)",
            Need::Read => "a token with scope read or submit (or the admin token)",
            Need::ReadOrSite => "a token with scope read, submit or site (or the admin token)",
        }
    }
}

/// Every API route behind a token, with what it does (`HEAD` is looked up as `GET`).
pub const ROUTES: &[(Method, &str, Action)] = &[
    (Method::GET, "/v1/audits", Action::ListAudits),
    (Method::POST, "/v1/audits", Action::Submit),
    (Method::GET, "/v1/audits/{id}", Action::AuditStatus),
    (Method::POST, "/v1/audits/{id}/cancel", Action::Cancel),
    (Method::GET, "/v1/audits/{id}/report", Action::AuditReport),
    (Method::GET, "/v1/audits/{id}/sites/{site}/report", Action::SiteReport),
    (Method::GET, "/v1/schedules", Action::ReadSchedules),
    (Method::POST, "/v1/schedules", Action::ChangeSchedules),
    (Method::GET, "/v1/schedules/{id}", Action::ReadSchedules),
    (Method::DELETE, "/v1/schedules/{id}", Action::ChangeSchedules),
    (Method::GET, "/v1/tokens", Action::ManageTokens),
    (Method::POST, "/v1/tokens", Action::ManageTokens),
    (Method::DELETE, "/v1/tokens/{id}", Action::ManageTokens),
    (Method::POST, MCP, Action::Mcp),
];

/// The action of a route (its pattern as the router matched it), if the table has it.
#[must_use]
pub fn action(method: &Method, route: &str) -> Option<Action> {
    let method = if method == Method::HEAD { &Method::GET } else { method };
    ROUTES.iter().find(|(m, r, _)| m == method && *r == route).map(|(_, _, a)| *a)
}

/// What each action needs: the one place that says it.
#[must_use]
pub fn need(action: Action) -> Need {
    match action {
        Action::ListAudits | Action::AuditStatus | Action::SiteReport => Need::ReadOrSite,
        Action::AuditReport | Action::ReadSchedules | Action::Mcp => Need::Read,
        Action::Submit | Action::Cancel => Need::Submit,
        Action::ChangeSchedules | Action::ManageTokens => Need::Admin,
    }
}

/// What a caller let in sees.
#[derive(Debug, Clone)]
pub enum View {
    /// Every audit and site.
    All,
    /// Only the sites of these hosts.
    Sites(HostList),
}

/// Why a request is refused (403): what it needs and what the token has. Never shows a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// What `caller` sees if it may do what needs `need`, or `None`.
#[must_use]
pub fn reaches(caller: &Caller, need: Need) -> Option<View> {
    let token = match caller {
        Caller::Admin => return Some(View::All),
        Caller::Token(t) => t,
    };
    match (&token.scope, need) {
        (_, Need::Admin) | (Scope::Read | Scope::Sites(_), Need::Submit) | (Scope::Sites(_), Need::Read) => None,
        (Scope::Read | Scope::Submit, _) => Some(View::All),
        (Scope::Sites(hosts), Need::ReadOrSite) => Some(View::Sites(hosts.clone())),
    }
}

/// Whether `caller` may do what the route (`method`, matched `route`) does, and what it sees.
///
/// # Errors
/// [`Refusal`] naming the scope needed.
pub fn allow(caller: &Caller, method: &Method, route: &str) -> Result<View, Refusal> {
    let need = action(method, route).map_or(Need::Admin, need);
    let token = match caller {
        Caller::Admin => return Ok(View::All),
        Caller::Token(t) => t,
    };
    reaches(caller, need).ok_or_else(|| {
        let hosts = match &token.scope {
            Scope::Sites(h) => {
                format!(" for {}", h.hosts().iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
            }
            Scope::Read | Scope::Submit => String::new(),
        };
        Refusal(format!(
            "{method} {route} needs {}; this token (id {}) has scope {}{hosts}",
            need.says(),
            token.id,
            token.scope.name()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_shared::ids::TokenId;
    use shoal_shared::time::UnixMs;

    fn token(scope: Scope) -> Caller {
        Caller::Token(TokenRow { id: TokenId(7), name: String::new(), scope, created_at: UnixMs(0) })
    }

    /// The whole matrix, route by route: what each scope may do.
    #[test]
    fn every_route_allows_exactly_its_scopes() {
        let site = token(Scope::parse("site", &["example.com"]).expect("site"));
        let (read, submit) = (token(Scope::Read), token(Scope::Submit));
        for (method, route, action) in ROUTES {
            let ok = |c: &Caller| allow(c, method, route).is_ok();
            assert!(ok(&Caller::Admin), "{method} {route}");
            let want = match need(*action) {
                Need::Admin => [false, false, false],
                Need::Submit => [true, false, false],
                Need::Read => [true, true, false],
                Need::ReadOrSite => [true, true, true],
            };
            assert_eq!([ok(&submit), ok(&read), ok(&site)], want, "{method} {route} for submit, read, site");
        }
        assert!(matches!(allow(&site, &Method::GET, "/v1/audits"), Ok(View::Sites(_))));
        assert!(matches!(allow(&read, &Method::HEAD, "/v1/audits/{id}/report"), Ok(View::All)));
    }

    #[test]
    fn a_route_missing_from_the_table_is_the_admins_alone() {
        assert!(allow(&Caller::Admin, &Method::GET, "/v1/new-thing").is_ok());
        for scope in [Scope::Read, Scope::Submit] {
            let refused = allow(&token(scope), &Method::GET, "/v1/new-thing").expect_err("refused");
            assert!(refused.0.contains("admin token"), "{refused}");
        }
    }

    #[test]
    fn a_refusal_names_the_scope_needed_and_the_tokens() {
        let site = token(Scope::parse("site", &["a.example", "b.example"]).expect("site"));
        let e = allow(&site, &Method::POST, "/v1/audits").expect_err("refused");
        assert_eq!(
            e.0,
            "POST /v1/audits needs a token with scope submit (or the admin token); this token (id 7) has scope site for a.example, b.example"
        );
        let e = allow(&token(Scope::Read), &Method::POST, "/v1/audits/{id}/cancel").expect_err("refused");
        assert!(e.0.contains("scope submit") && e.0.contains("has scope read"), "{e}");
    }
}
