//! Where the report's pages are, so one page can link to another: the same views are written as
//! one file, as a directory of files (`shoal report --per-site DIR`) and served by the dashboard.
//!
//! Every link target is a [`Local`]: built here from ids and from names reduced to a safe alphabet,
//! never from crawled text as it is, so an href of ours cannot carry markup or a scheme.

use shoal_shared::ids::{AuditId, SiteId};
use shoal_store::SiteSummary;
use std::fmt;

/// A link to another page (or part) of the report. Only this module makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Local(String);

impl Local {
    /// The href.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Local {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where the pages being written live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// One file: sites link to their sections in it when `inline`, to nothing otherwise.
    SingleFile {
        /// The sites' sections follow the overview in the same file.
        inline: bool,
    },
    /// A directory: `index.html`, `sites/<id>-<host>.html`, `issues/<code>.html`. `nested` is
    /// true for pages written in a subdirectory (a site's or an issue's page).
    Directory {
        /// The page being written is one level down.
        nested: bool,
    },
    /// The coordinator's dashboard (`/ui/audits/{audit}/…`).
    Dashboard {
        /// The audit.
        audit: AuditId,
    },
}

/// A file name part from arbitrary text: ASCII letters, digits, `.` and `-` kept (lower case),
/// everything else dropped, at most 60 characters.
fn slug(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
        .map(|c| c.to_ascii_lowercase())
        .take(60)
        .collect::<String>()
        .trim_matches(['.', '-'])
        .to_owned()
}

/// The host of a start URL, for file names (the whole URL's slug if it has none).
fn host(start_url: &str) -> String {
    let h = url::Url::parse(start_url).ok().and_then(|u| u.host_str().map(str::to_owned));
    slug(h.as_deref().unwrap_or(start_url))
}

/// A code, if it is a plausible code (lower-case letters, digits, `_`): codes are stored strings,
/// and one a newer version (or a hand-edited file) wrote is not trusted into a path.
fn code_part(code: &str) -> Option<&str> {
    (!code.is_empty()
        && code.len() <= 64
        && code.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'))
    .then_some(code)
}

/// The file name of a site's pages in a directory, without extension: `<id>-<host>`.
#[must_use]
pub fn site_file(site: &SiteSummary) -> String {
    let h = host(&site.start_url);
    if h.is_empty() { site.id.0.to_string() } else { format!("{}-{h}", site.id.0) }
}

/// The file name of an audit-wide issue page, without extension, if the code is safe to name.
#[must_use]
pub fn issue_file(code: &str) -> Option<String> {
    code_part(code).map(str::to_owned)
}

impl Links {
    fn up(self) -> &'static str {
        match self {
            Links::Directory { nested: true } => "../",
            _ => "",
        }
    }

    /// A site's report.
    #[must_use]
    pub fn site(self, site: &SiteSummary) -> Option<Local> {
        match self {
            Links::SingleFile { inline: true } => Some(Local(format!("#site-{}", site.id.0))),
            Links::SingleFile { inline: false } => None,
            Links::Directory { .. } => Some(Local(format!("{}sites/{}.html", self.up(), site_file(site)))),
            Links::Dashboard { audit } => Some(Local(format!("/ui/audits/{}/sites/{}", audit.0, site.id.0))),
        }
    }

    /// A site's JSON report.
    #[must_use]
    pub fn site_json(self, site: &SiteSummary) -> Option<Local> {
        match self {
            Links::SingleFile { .. } => None,
            Links::Directory { .. } => Some(Local(format!("{}sites/{}.json", self.up(), site_file(site)))),
            Links::Dashboard { audit } => {
                Some(Local(format!("/ui/audits/{}/sites/{}/report.json", audit.0, site.id.0)))
            }
        }
    }

    /// The page listing every site with findings of `code`.
    #[must_use]
    pub fn audit_issue(self, code: &str) -> Option<Local> {
        let code = code_part(code)?;
        match self {
            Links::SingleFile { .. } => None,
            Links::Directory { .. } => Some(Local(format!("{}issues/{code}.html", self.up()))),
            Links::Dashboard { audit } => Some(Local(format!("/ui/audits/{}/issues/{code}", audit.0))),
        }
    }

    /// One page (0-based) of a site's issue group, served by the dashboard only.
    #[must_use]
    pub fn site_issue(self, site: SiteId, code: &str, page: u64) -> Option<Local> {
        let code = code_part(code)?;
        match self {
            Links::Dashboard { audit } => {
                Some(Local(format!("/ui/audits/{}/sites/{}/issues/{code}?page={}", audit.0, site.0, page + 1)))
            }
            _ => None,
        }
    }

    /// The audit's overview, from a site's or an issue's page.
    #[must_use]
    pub fn overview(self) -> Option<Local> {
        match self {
            Links::SingleFile { .. } => None,
            Links::Directory { .. } => Some(Local(format!("{}index.html", self.up()))),
            Links::Dashboard { audit } => Some(Local(format!("/ui/audits/{}/report", audit.0))),
        }
    }

    /// The overview's JSON twin.
    #[must_use]
    pub fn overview_json(self) -> Option<Local> {
        match self {
            Links::SingleFile { .. } => None,
            Links::Directory { .. } => Some(Local(format!("{}index.json", self.up()))),
            Links::Dashboard { audit } => Some(Local(format!("/ui/audits/{}/overview.json", audit.0))),
        }
    }

    /// A site's section on the page that shows it (for an issue's "more" link within a file).
    #[must_use]
    pub fn in_page(anchor: &str) -> Local {
        Local(format!("#{}", slug_anchor(anchor)))
    }
}

/// An anchor from our own ids: letters, digits, `-` and `_` kept.
fn slug_anchor(text: &str) -> String {
    text.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_store::SiteStatus;

    fn site(url: &str) -> SiteSummary {
        SiteSummary {
            id: SiteId(42),
            audit: AuditId(7),
            start_url: url.to_owned(),
            status: SiteStatus::Done,
            pages: 0,
            urls: 0,
            findings: 0,
            done_at: None,
        }
    }

    #[test]
    fn file_names_keep_only_a_safe_alphabet() {
        assert_eq!(site_file(&site("https://Shop.Example.com:8443/x?y")), "42-shop.example.com");
        assert_eq!(site_file(&site("https://xn--bcher-kva.example/")), "42-xn--bcher-kva.example");
        assert_eq!(site_file(&site("not a url\"><script>")), "42-notaurlscript");
        assert_eq!(site_file(&site("")), "42");
        assert_eq!(issue_file("broken_internal_link").as_deref(), Some("broken_internal_link"));
        for bad in ["../x", "a/b", "A", "x\"y", "", "a b"] {
            assert_eq!(issue_file(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn links_by_place() {
        let s = site("https://a.test/");
        let dir = Links::Directory { nested: false };
        let nested = Links::Directory { nested: true };
        let dash = Links::Dashboard { audit: AuditId(7) };
        assert_eq!(dir.site(&s).map(|l| l.0), Some("sites/42-a.test.html".into()));
        assert_eq!(nested.site(&s).map(|l| l.0), Some("../sites/42-a.test.html".into()));
        assert_eq!(nested.overview().map(|l| l.0), Some("../index.html".into()));
        assert_eq!(dir.audit_issue("hsts_missing").map(|l| l.0), Some("issues/hsts_missing.html".into()));
        assert_eq!(dash.site(&s).map(|l| l.0), Some("/ui/audits/7/sites/42".into()));
        assert_eq!(
            dash.site_issue(SiteId(42), "h1_missing", 1).map(|l| l.0),
            Some("/ui/audits/7/sites/42/issues/h1_missing?page=2".into())
        );
        assert_eq!(Links::SingleFile { inline: true }.site(&s).map(|l| l.0), Some("#site-42".into()));
        assert_eq!(Links::SingleFile { inline: false }.site(&s), None);
        assert_eq!(dash.audit_issue("x/../y"), None);
        assert_eq!(Links::in_page("issue-42-\"x").0, "#issue-42-x");
    }
}
