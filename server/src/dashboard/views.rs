//! The dashboard's pages: one askama struct per template of `templates/dashboard/`.
//!
//! Everything shown is escaped by askama (start URLs are text written by whoever submitted the
//! audit); nothing is marked safe. A start URL becomes a link only when it is an absolute http(s)
//! URL.

use askama::Template;
use shoal_report::{generator, rfc3339};
use shoal_shared::status::{AuditStatus, SiteStatus};
use shoal_shared::time::UnixMs;
use shoal_shared::wire::{AuditView, ScheduleView, SiteView};

/// Seconds between reloads of a page that shows a running audit.
pub(super) const REFRESH_SECS: u32 = 3;

/// Where the stylesheet is served; the version defeats a stale cached copy after an upgrade.
pub(super) const CSS_PATH: &str = "/ui/static/dashboard.css";

/// The dashboard's stylesheet, served at [`CSS_PATH`].
pub(super) const CSS: &str = include_str!("../../templates/dashboard/dashboard.css");

/// The frame around every page (title, navigation, live reload).
#[derive(Debug)]
pub(super) struct Chrome {
    pub(super) title: String,
    /// Reload every this many seconds; 0 for never.
    pub(super) refresh_secs: u32,
    /// The session's CSRF value, for the logout form; `None` when not logged in with a session.
    pub(super) logout_csrf: Option<String>,
    pub(super) generator: String,
    pub(super) css_href: String,
}

impl Chrome {
    pub(super) fn new(title: impl Into<String>, logout_csrf: Option<String>) -> Chrome {
        Chrome {
            title: title.into(),
            refresh_secs: 0,
            logout_csrf,
            generator: generator(),
            css_href: format!("{CSS_PATH}?v={}", env!("CARGO_PKG_VERSION")),
        }
    }

    pub(super) fn live(mut self, live: bool) -> Chrome {
        self.refresh_secs = if live { REFRESH_SECS } else { 0 };
        self
    }
}

/// One audit's totals as a table row or a summary.
#[derive(Debug)]
pub(super) struct AuditLine {
    pub(super) id: u64,
    pub(super) status: AuditStatus,
    pub(super) sites_done: u64,
    pub(super) sites_total: u64,
    pub(super) pages: u64,
    pub(super) findings: u64,
    pub(super) created: String,
    pub(super) finished: Option<String>,
}

impl AuditLine {
    /// Whether it is still running (what offers the cancel button).
    pub(super) fn is_running(&self) -> bool {
        self.status == AuditStatus::Running
    }
}

impl From<&AuditView> for AuditLine {
    fn from(a: &AuditView) -> AuditLine {
        AuditLine {
            id: a.id,
            status: a.status,
            sites_done: a.sites_done,
            sites_total: a.sites_total,
            pages: a.pages,
            findings: a.findings,
            created: rfc3339(UnixMs(a.created_at_ms)),
            finished: a.finished_at_ms.map(|t| rfc3339(UnixMs(t))),
        }
    }
}

/// One site's progress row.
#[derive(Debug)]
pub(super) struct SiteLine {
    pub(super) id: u64,
    pub(super) start_url: String,
    pub(super) href: Option<String>,
    pub(super) status: SiteStatus,
    pub(super) pages: u64,
    pub(super) urls: u64,
    pub(super) queued: u64,
    pub(super) leased: u64,
    pub(super) findings: u64,
    pub(super) progress_value: u64,
    pub(super) progress_max: u64,
}

impl From<&SiteView> for SiteLine {
    fn from(s: &SiteView) -> SiteLine {
        let (progress_value, progress_max) =
            if s.status == SiteStatus::Running { (s.urls, (s.urls + s.queued + s.leased).max(1)) } else { (1, 1) };
        SiteLine {
            id: s.id,
            start_url: s.start_url.clone(),
            href: href(&s.start_url),
            status: s.status,
            pages: s.pages,
            urls: s.urls,
            queued: s.queued,
            leased: s.leased,
            findings: s.findings,
            progress_value,
            progress_max,
        }
    }
}

/// `url` as a link target if it is an absolute http(s) URL; anything else is shown as text only.
pub(super) fn href(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    matches!(parsed.scheme(), "http" | "https").then(|| parsed.to_string())
}

/// `GET /ui/`: every audit.
#[derive(Template, Debug)]
#[template(path = "dashboard/list.html")]
pub(super) struct ListPage {
    pub(super) chrome: Chrome,
    pub(super) audits: Vec<AuditLine>,
}

/// One schedule as a table row. Its name, `when` and time zone were typed by an API client:
/// escaped like everything else.
#[derive(Debug)]
pub(super) struct ScheduleLine {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) when: String,
    pub(super) time_zone: String,
    pub(super) sites: u64,
    pub(super) last_audit: Option<u64>,
    pub(super) last_status: Option<AuditStatus>,
    pub(super) last_started: Option<String>,
    pub(super) next_run: Option<String>,
}

impl From<&ScheduleView> for ScheduleLine {
    fn from(s: &ScheduleView) -> ScheduleLine {
        ScheduleLine {
            id: s.id,
            name: s.name.clone(),
            when: s.when.clone(),
            time_zone: s.time_zone.clone(),
            sites: s.sites,
            last_audit: s.last_audit,
            last_status: s.last_status,
            last_started: s.last_started_ms.map(|t| rfc3339(UnixMs(t))),
            next_run: s.next_run_ms.map(|t| rfc3339(UnixMs(t))),
        }
    }
}

/// `GET /ui/schedules`: every recurring audit with its last and next run.
#[derive(Template, Debug)]
#[template(path = "dashboard/schedules.html")]
pub(super) struct SchedulesPage {
    pub(super) chrome: Chrome,
    pub(super) schedules: Vec<ScheduleLine>,
}

/// `GET /ui/audits/{id}`: one audit with per-site progress.
#[derive(Template, Debug)]
#[template(path = "dashboard/audit.html")]
pub(super) struct AuditPage {
    pub(super) chrome: Chrome,
    pub(super) audit: AuditLine,
    pub(super) sites: Vec<SiteLine>,
    /// The value the cancel form echoes (empty when authenticated by the bearer header, which
    /// needs none).
    pub(super) csrf: String,
}

/// `GET /ui/login`: the token form.
#[derive(Template, Debug)]
#[template(path = "dashboard/login.html")]
pub(super) struct LoginPage {
    pub(super) chrome: Chrome,
    pub(super) next: String,
    pub(super) error: Option<String>,
}

/// A message (error, not found) with one link onwards.
#[derive(Template, Debug)]
#[template(path = "dashboard/message.html")]
pub(super) struct MessagePage {
    pub(super) chrome: Chrome,
    pub(super) message: String,
    pub(super) link_href: String,
    pub(super) link_text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(start_url: &str) -> SiteView {
        SiteView {
            id: 7,
            start_url: start_url.to_owned(),
            status: SiteStatus::Running,
            pages: 3,
            urls: 4,
            findings: 1,
            queued: 5,
            leased: 1,
        }
    }

    #[test]
    fn only_http_urls_become_links() {
        assert_eq!(href("https://example.test/a?b").as_deref(), Some("https://example.test/a?b"));
        assert_eq!(href("javascript:alert(1)"), None);
        assert_eq!(href("data:text/html,hi"), None);
        assert_eq!(href("/relative"), None);
    }

    #[test]
    fn hostile_text_is_escaped_and_not_linked() {
        let evil = "javascript:\"><script>alert(1)</script>";
        let page = AuditPage {
            chrome: Chrome::new("Audit <1>", Some("c\"srf".into())).live(true),
            audit: AuditLine {
                id: 1,
                status: AuditStatus::Running,
                sites_done: 0,
                sites_total: 1,
                pages: 3,
                findings: 1,
                created: "2024-01-01T00:00:00.000Z".into(),
                finished: None,
            },
            sites: vec![SiteLine::from(&site(evil))],
            csrf: "x\"y".into(),
        };
        let html = page.render().expect("renders");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&#60;script&#62;") || html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("href=\"javascript"), "{html}");
        assert!(html.contains("Audit &#60;1&#62;") || html.contains("Audit &lt;1&gt;"), "{html}");
        assert!(html.contains(r#"<meta http-equiv="refresh" content="3">"#), "{html}");
        assert!(html.contains("/ui/audits/1/cancel"), "a running audit can be cancelled");
        assert!(!html.contains("style="), "no inline style: the CSP allows none");
        assert!(!html.contains("<script"), "no script at all");
        let handler = html.match_indices(" on").any(|(i, _)| {
            let rest = &html[i + 3..];
            let name_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
            name_len > 0 && rest[name_len..].starts_with('=')
        });
        assert!(!handler, "no inline event handler");
    }

    #[test]
    fn schedules_are_escaped_and_link_their_last_run() {
        let evil = "<script>alert(1)</script>";
        let view = ScheduleView {
            id: 4,
            name: format!("weekly {evil}"),
            sites: 2,
            options: shoal_shared::wire::AuditOptions::default(),
            when: "0 6 * * MON".into(),
            time_zone: "Europe/Berlin".into(),
            created_at_ms: 0,
            next_run_ms: Some(1_761_541_200_000),
            last_audit: Some(9),
            last_status: Some(AuditStatus::Done),
            last_started_ms: Some(1_760_936_400_000),
            urls: Vec::new(),
        };
        let page = SchedulesPage { chrome: Chrome::new("Schedules", None), schedules: vec![ScheduleLine::from(&view)] };
        let html = page.render().expect("renders");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("weekly &#60;script&#62;") || html.contains("weekly &lt;script&gt;"), "{html}");
        assert!(html.contains(r#"href="/ui/audits/9""#), "{html}");
        assert!(html.contains("Europe/Berlin") && html.contains("2025-10-27T05:00:00.000Z"), "{html}");
    }

    #[test]
    fn progress_of_a_running_site_counts_known_work() {
        let l = SiteLine::from(&site("https://a.test/"));
        assert_eq!((l.progress_value, l.progress_max), (4, 10));
        assert_eq!(l.href.as_deref(), Some("https://a.test/"));
    }
}
