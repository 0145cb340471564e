//! API tokens with scopes in the audit database (schema 13): made with a secret shown once and
//! stored only as its hash, found by that secret until removed, listed without it; a site token's
//! sites found by index; and a version-12 file upgrading in place.

use rusqlite::Connection;
use shoal_shared::ids::{AuditId, TokenId};
use shoal_shared::time::UnixMs;
use shoal_shared::token::{HostList, Scope};
use shoal_store::{AuditDb, schema};

fn db_in(dir: &tempfile::TempDir) -> AuditDb {
    AuditDb::open(&dir.path().join("shoal.db")).expect("open")
}

#[test]
fn a_token_is_found_by_its_secret_until_removed_and_the_file_holds_only_a_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = db_in(&dir);
    let site = Scope::parse("site", &["example.com"]).expect("scope");
    let (row, secret) = db.add_token("customer 42", &site, UnixMs(1_000)).expect("add");
    let (other, _) = db.add_token("", &Scope::Read, UnixMs(2_000)).expect("add");
    assert_ne!(row.id, other.id);

    let found = db.token_by_secret(secret.expose()).expect("lookup").expect("found");
    assert_eq!(found, row);
    assert_eq!(found.scope.hosts()[0].as_str(), "example.com");
    let mut wrong = secret.expose().to_owned();
    wrong.replace_range(wrong.len() - 1.., if wrong.ends_with('0') { "1" } else { "0" });
    assert_eq!(db.token_by_secret(&wrong).expect("lookup"), None, "one digit off");
    assert_eq!(db.token_by_secret("not a token").expect("lookup"), None);

    let listed = db.tokens().expect("list");
    assert_eq!(listed.iter().map(|t| t.id).collect::<Vec<_>>(), [row.id, other.id]);

    // The file never holds the secret, only 32 bytes of hash.
    let conn = Connection::open(dir.path().join("shoal.db")).expect("sqlite");
    let (scope, hash): (String, Vec<u8>) = conn
        .query_row(
            "SELECT scope, secret_sha256 FROM tokens WHERE id = ?1",
            [i64::try_from(row.id.0).expect("small")],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("row");
    assert_eq!((scope.as_str(), hash.len()), ("site", 32));
    drop(conn);
    let bytes = std::fs::read(dir.path().join("shoal.db")).expect("file");
    let wal = std::fs::read(dir.path().join("shoal.db-wal")).unwrap_or_default();
    let hex = &secret.expose()["shoal_".len()..];
    for content in [&bytes, &wal] {
        assert!(!content.windows(hex.len()).any(|w| w == hex.as_bytes()), "the secret is not in the file");
    }

    assert!(db.remove_token(row.id).expect("remove"));
    assert!(!db.remove_token(row.id).expect("again"), "already gone");
    assert_eq!(db.token_by_secret(secret.expose()).expect("lookup"), None, "refused once removed");
    assert!(!db.remove_token(TokenId(999)).expect("unknown"));
}

#[test]
fn the_schema_refuses_a_site_token_without_hosts_and_a_read_token_with_some() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(db_in(&dir));
    let conn = Connection::open(dir.path().join("shoal.db")).expect("sqlite");
    let insert = |scope: &str, hosts: &str| {
        conn.execute(
            "INSERT INTO tokens (name, scope, hosts_json, secret_sha256, created_at_ms) VALUES ('', ?1, ?2, randomblob(32), 0)",
            [scope, hosts],
        )
    };
    assert!(insert("site", "[]").is_err());
    assert!(insert("read", r#"["a.example"]"#).is_err());
    assert!(insert("admin", "[]").is_err());
    assert!(insert("site", r#"["a.example"]"#).is_ok());
}

#[test]
fn a_site_tokens_sites_are_its_hosts_and_their_twins_in_every_audit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = db_in(&dir);
    let a1 = db.create_audit("{}", UnixMs(1)).expect("audit");
    let a2 = db.create_audit("{}", UnixMs(2)).expect("audit");
    let s1 = db
        .add_sites(
            a1,
            &[
                "https://example.com/",
                "https://blog.example.com/",
                "https://other.example/",
                "http://www.example.com:8080/shop",
            ],
        )
        .expect("sites");
    let s2 = db.add_sites(a2, &["https://other.example/", "https://example.com.evil.example/"]).expect("sites");
    let hosts = HostList::new(&["example.com"]).expect("hosts");
    let ids = |v: Vec<shoal_store::SiteSummary>| v.into_iter().map(|s| s.id).collect::<Vec<_>>();
    assert_eq!(ids(db.sites_of_hosts(&hosts, None).expect("read")), [s1[0], s1[3]]);
    assert_eq!(ids(db.sites_of_hosts(&hosts, Some(a2)).expect("read")), []);
    let other = HostList::new(&["other.example"]).expect("hosts");
    assert_eq!(ids(db.sites_of_hosts(&other, None).expect("read")), [s1[2], s2[0]]);
    assert_eq!(ids(db.sites_of_hosts(&other, Some(AuditId(a2.0))).expect("read")), [s2[0]]);
}

/// A version-12 file (what the previous build wrote) gains the tokens table, keeping its audits.
#[test]
fn a_version_12_database_upgrades_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.db");
    {
        let conn = Connection::open(&path).expect("sqlite");
        for m in &schema::MIGRATIONS[..12] {
            conn.execute_batch(m).expect("old migration");
        }
        conn.execute_batch(&format!("PRAGMA user_version = 12; PRAGMA application_id = {};", schema::APPLICATION_ID))
            .expect("version");
        conn.execute("INSERT INTO audits (created_at_ms, status, options_json) VALUES (100, 'done', '{}')", [])
            .expect("an old audit");
    }
    let mut db = AuditDb::open(&path).expect("upgrade");
    let version: i64 =
        Connection::open(&path).and_then(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0))).expect("version");
    assert_eq!(version, i64::try_from(schema::MIGRATIONS.len()).expect("small"), "upgraded to the current version");
    assert!(db.audit(AuditId(1)).expect("read").is_some(), "the old audit is kept");
    assert!(db.tokens().expect("list").is_empty());
    let (_, secret) = db.add_token("", &Scope::Submit, UnixMs(5)).expect("add");
    assert_eq!(db.token_by_secret(secret.expose()).expect("lookup").map(|t| t.scope), Some(Scope::Submit));
}
