//! Finding a site of an audit by what a user types (`shoal report --site`, the MCP tools): its
//! id, its start URL as stored, or a start URL as a user would type it, normalised as the
//! audit's start URLs were. One rule, so both read the same words the same way.

use shoal_shared::ids::AuditId;
use shoal_shared::starts::StartList;
use shoal_store::{AuditDb, DbError, SiteSummary};

/// Why [`find_site`] found no site.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FindSiteError {
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// No site of the audit is named so; the message lists some that are.
    #[error("audit {audit} has no site {wanted:?} (by start URL or site id); its sites include: {some}")]
    NoSuchSite {
        /// The audit looked in.
        audit: AuditId,
        /// What was asked for.
        wanted: String,
        /// Up to five of its start URLs, or `none`.
        some: String,
    },
}

/// The site of `audit` that `wanted` names (surrounding spaces ignored).
///
/// # Errors
/// [`FindSiteError::NoSuchSite`] when none matches, [`FindSiteError::Db`] on a read failure.
pub fn find_site(db: &AuditDb, audit: AuditId, wanted: &str) -> Result<SiteSummary, FindSiteError> {
    let wanted = wanted.trim();
    let sites = db.site_counts(audit)?;
    if let Ok(id) = wanted.parse::<u64>()
        && let Some(s) = sites.iter().find(|s| s.id.0 == id)
    {
        return Ok(s.clone());
    }
    let mut normal = StartList::default();
    let normalised = normal.push(wanted).ok().and_then(|()| normal.into_urls().pop()).map(|u| u.to_string());
    match sites.iter().find(|s| s.start_url == wanted || Some(&s.start_url) == normalised.as_ref()) {
        Some(s) => Ok(s.clone()),
        None => {
            let some: Vec<&str> = sites.iter().take(5).map(|s| s.start_url.as_str()).collect();
            let some = if some.is_empty() { "none".to_owned() } else { some.join(", ") };
            Err(FindSiteError::NoSuchSite { audit, wanted: wanted.to_owned(), some })
        }
    }
}
