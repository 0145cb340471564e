//! A finding about a registrable domain (issue 40): the audit checks the domain once, with one
//! site, and the database gives the finding to every site of the same audit under that domain,
//! with their counters; not to other domains' sites, not to other audits', and not twice.

use rusqlite::Connection;
use shoal_shared::finding::{Code, Finding};
use shoal_shared::ids::{AuditId, SiteId};
use shoal_shared::record::Event;
use shoal_shared::time::UnixMs;
use shoal_store::{AuditDb, DbError, schema};

fn codes(db: &AuditDb, site: SiteId) -> Vec<(String, String)> {
    let mut out = Vec::new();
    db.for_each_finding(site, |f| {
        out.push((f.code.clone(), f.url.clone()));
        Ok::<(), DbError>(())
    })
    .expect("read findings");
    out.sort();
    out
}

fn finding(audit: AuditId, site: SiteId, code: Code, url: &str, domain_wide: bool) -> Event {
    let mut f = Finding::new(audit, site, code, url, "detail");
    f.domain_wide = domain_wide;
    Event::Finding(f)
}

#[test]
fn a_domain_wide_finding_reaches_every_site_of_the_audit_under_the_domain() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut db = AuditDb::open(&dir.path().join("audit.db")).expect("open");
    let audit = db.create_audit("{}", UnixMs(10)).expect("audit");
    let sites = db
        .add_sites(
            audit,
            &[
                "https://a.provider.test/",
                "https://www.b.provider.test/shop",
                "https://provider.test:8443/",
                "https://other.test/",
                "https://127.0.0.1/",
            ],
        )
        .expect("sites");
    let lone = db.add_site(audit, "https://c.provider.test/").expect("one more, added alone");
    let later = db.create_audit("{}", UnixMs(20)).expect("another audit");
    let elsewhere = db.add_site(later, "https://d.provider.test/").expect("site of another audit");

    let events = vec![
        finding(audit, sites[0], Code::DmarcPolicyNone, "_dmarc.provider.test", true),
        finding(audit, sites[0], Code::CaaMissing, "provider.test", false),
    ];
    db.apply(&events).expect("apply");
    db.apply(&events).expect("applied again: nothing doubles");

    let shared = ("dmarc_policy_none".to_owned(), "_dmarc.provider.test".to_owned());
    let own = ("caa_missing".to_owned(), "provider.test".to_owned());
    assert_eq!(codes(&db, sites[0]), vec![own, shared.clone()]);
    for site in [sites[1], sites[2], lone] {
        assert_eq!(codes(&db, site), vec![shared.clone()], "{site}: the domain's finding, not the host's");
        assert_eq!(db.site(site).expect("read").expect("site").findings, 1, "{site}: counted once");
    }
    for site in [sites[3], sites[4], elsewhere] {
        assert!(codes(&db, site).is_empty(), "{site}: another domain, no domain or another audit");
    }
}

/// A version-13 file (before `sites.domain`) upgrades in place: its sites have no domain and share
/// nothing (their audits ran each site's own checks), and sites added after the upgrade do.
#[test]
fn sites_stored_before_version_14_share_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    {
        let conn = Connection::open(&path).expect("sqlite");
        for m in &schema::MIGRATIONS[..13] {
            conn.execute_batch(m).expect("old migration");
        }
        conn.execute_batch(&format!("PRAGMA user_version = 13; PRAGMA application_id = {};", schema::APPLICATION_ID))
            .expect("version");
        conn.execute("INSERT INTO audits (created_at_ms, status, options_json) VALUES (100, 'running', '{}')", [])
            .expect("an old audit");
        for start in ["https://a.provider.test/", "https://b.provider.test/"] {
            conn.execute("INSERT INTO sites (audit_id, start_url) VALUES (1, ?1)", [start]).expect("an old site");
        }
    }
    let mut db = AuditDb::open(&path).expect("upgrade");
    let audit = AuditId(1);
    let newer = db.add_site(audit, "https://c.provider.test/").expect("a site added after the upgrade");
    db.apply(&[finding(audit, SiteId(1), Code::DmarcPolicyNone, "_dmarc.provider.test", true)]).expect("apply");
    assert!(codes(&db, SiteId(2)).is_empty(), "an old site has no domain to share");
    assert!(codes(&db, newer).is_empty(), "nor does the old site that ran the check have one");
    db.apply(&[finding(audit, newer, Code::DmarcPolicyNone, "_dmarc.provider.test", true)]).expect("apply");
    assert_eq!(codes(&db, newer).len(), 1);
}
