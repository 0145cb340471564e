//! Each site's "Domain and e-mail" section holds the findings of the DNS, mail and domain checks
//! (and only them), escaped like every crawled text.

use shoal_report as report;
use shoal_report::fixtures::html::{T0, between, html, u};
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::AuditId;
use shoal_shared::record::Event;
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, AuditStatus};

#[test]
fn domain_and_mail_findings_have_a_section_of_their_own() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut db = AuditDb::open(&dir.path().join("audit.db")).expect("open");
    let audit: AuditId = db.create_audit("{}", UnixMs(T0)).expect("audit");
    let site = db.add_site(audit, &u("/")).expect("site");
    let events = vec![
        Event::Finding(Finding::new(audit, site, Code::DmarcPolicyNone, "_dmarc.a.test", "v=DMARC1; p=none <script>")),
        Event::Finding(Finding::new(
            audit,
            site,
            Code::SmtpStarttlsMissing,
            "smtp://mx.a.test:25",
            "EHLO lists no STARTTLS",
        )),
        Event::Finding(Finding::new(audit, site, Code::TitleMissing, u("/"), "")),
        Event::SiteDone { audit, site },
    ];
    db.apply_at(&events, UnixMs(T0 + 1000)).expect("apply");
    db.finish_audit(audit, AuditStatus::Done, UnixMs(T0 + 2000)).expect("finish");
    let page = html(&db, audit);
    let section = between(&page, "<h3>Domain and e-mail</h3>", "</section>");
    assert!(section.contains("2 findings"), "{section}");
    assert!(
        section.contains("<code>dmarc_policy_none</code>") && section.contains("<code>smtp_starttls_missing</code>")
    );
    assert!(!section.contains("title_missing"), "page findings stay in the site's findings table");
    assert!(section.contains("&#60;script&#62;") && !section.contains("<script>"), "escaped: {section}");
    assert!(section.contains("smtp://mx.a.test:25") && !section.contains("href=\"smtp:"), "only http(s) URLs link");
    let _ = report::write_html;
}
