//! The audit database schema, as an append-only list of migrations.
//!
//! Migration `i` (0-based) takes a file from `PRAGMA user_version = i` to `i + 1`. Never edit a
//! migration that has shipped: add a new one, so every existing file reaches the same schema.
//!
//! Version 1 tables (all `STRICT`):
//!
//! | table | key | holds |
//! |---|---|---|
//! | `audits` | `id` | one row per audit: `created_at_ms`, `finished_at_ms`, `status` (`running`, `done`, `cancelled`, `interrupted`, later `failed`), `options_json` (the coordinator's [`StoredOptions`](crate::StoredOptions)) |
//! | `sites` | `id` (never reused) | `audit_id`, `start_url`, `status` (`running`, `done`), counters `pages` (kind `page`), `urls` (any kind), `findings`, `done_at_ms` |
//! | `pages` | `(site_id, url)` | one row per fetched URL: what [`PageRecord`](shoal_shared::record::PageRecord) holds except its links; list fields as JSON text (`*_json`) |
//! | `links` | — | one row per link on a page, `position` keeps document order; indexed by `(site_id, to_url)` for "who links here" and by `(site_id, from_url)` to replace a page's links |
//! | `findings` | `id`, unique `(site_id, code, url, detail)` | `severity`, `related_json`; `origin` is `worker` or `analysis` (the latter owned and replaced by the site-level analysis); `stale` is scratch space for that replacement |
//!
//! Version 2 adds indexes only. Version 3 adds recurring audits:
//!
//! | table | key | holds |
//! |---|---|---|
//! | `schedules` | `id` (never reused) | `name`, `urls_json` (the start URLs, read only when a run starts) and `sites` (their number), `options_json` (the API's audit options), `spec` (a cron pattern or `every 7d`) and `time_zone` (IANA name), `next_run_ms`; the latest run: `last_audit_id`, `last_started_ms`, and `settled` (1 once its end was handled: notified, next run computed) |
//! | `audits.schedule_id` | indexed | the schedule that started the audit, `NULL` for a submitted one. No foreign key: a removed schedule's runs keep their link, so their reports still compare run with run (ids are never reused) |
//!
//! Version 4 keeps each audit's totals in `audit_totals` (key `audit_id`): `sites`, `sites_done`,
//! `pages`, `urls`, `findings`, the sums of its sites' rows, kept by triggers on `audits` (insert)
//! and `sites` (insert, update of a counter or the status, delete), so an audit's status reads
//! one row whatever its size instead of summing 100,000 sites (30 ms) on every request.
//!
//! Version 6 adds the browser check (`--browser-pages`): `browser_pages`, key `(site_id, url)`,
//! one row per page opened in Chromium (what a
//! [`BrowserPage`](shoal_shared::browser::BrowserPage) holds): `final_url`, `status`, `error`, the
//! vitals in milliseconds (CLS in thousandths), the lists and small records as JSON text
//! (`resources_json`, `third_party_json`, `blocked_json`, `axe_json`, `keyboard_json`,
//! `consent_json`) and the two screenshots as JPEG BLOBs. A page delivered again replaces its row.
//!
//! Version 7 adds indexes only, for the scheduler: `schedules_by_next_run` (`next_run_ms`) and
//! `schedules_unsettled` (partial: `settled = 0`), so that a wake-up reads the schedules that are
//! due and those whose run may have ended, never every schedule.
//!
//! Version 8 lets an audit end `failed`, with its `reason` (a new column of `audits`): the
//! coordinator fails an audit whose state in the frontier could not be read (docs/runbook.md, "A
//! bad entry is quarantined"). SQLite cannot change a CHECK constraint in place, so the table is
//! rebuilt (ids, their AUTOINCREMENT high-water mark, the schedule index and the totals trigger
//! kept).
//!
//! Version 9 adds what a page's content and structured data come to (issue 37), as columns of
//! `pages`: `word_count` (words of the main text), `text_hash` and `text_simhash` (its exact hash
//! and SimHash, as the signed 64-bit integers SQLite stores: the same bits), `structured_types_json`
//! (the Schema.org types found), `rel_next` and `rel_prev` (pagination targets). Older rows have
//! `NULL` and `[]`: the content analysis skips them.
//!
//! Version 10 adds hreflang (issue 37): `hreflang`, key `(site_id, found_in, position)`, one row
//! per alternate a record stated: `found_in` the URL whose record carried it (the page itself, or
//! a sitemap), `page_url` the page it is about (the page, or the sitemap entry's `<loc>`),
//! `source` (`html`, `header`, `sitemap`), `lang` as written and `target` (normalised when it
//! parses). A record delivered again replaces its rows. The site analysis judges each page's rows
//! from every source together (`crate::hreflang`).
//!
//! Version 11 adds two page facts (issue 37) to `pages`: `extracted_json`, what the audit's
//! extraction rules (`--extract`) found on the page as JSON pairs `[["price", "19.99"], …]` (NULL
//! when none found anything), and `ai_blocked`, the AI crawlers the host's robots.txt blocks from
//! the URL, bit `i` the `i`-th crawler of
//! [`AI_CRAWLERS`](shoal_shared::ai_crawlers::AI_CRAWLERS) (NULL for other kinds of URL and rows
//! written before).
//!
//! Version 12 adds an index for retention (issue 40, `crate::retention`): `sites_by_start_url`
//! (`start_url`, `audit_id`), so "which later audits audited this start URL" is a search that
//! stops at the N-th, not a scan of every site of every audit; and `audits_schedule_of` (partial:
//! scheduled runs only, `id`, `schedule_id`), an audit's schedule by its id without reading its
//! row, whose `schedule_id` is stored after the options (every start URL). Files created from this version
//! on are also in `auto_vacuum = INCREMENTAL` mode (set when the file is new, `AuditDb::open`);
//! older files switch with one `VACUUM` (`shoal prune --vacuum`).
//!
//! Version 13 adds API tokens with scopes (issue 40, `crate::tokens`): `tokens`, key `id` (never
//! reused), `name`, `scope` (`read`, `submit`, `site`), `hosts_json` (a site token's hosts, at least
//! one; `[]` for the others, which a CHECK holds to), `secret_sha256` (the SHA-256 of the secret,
//! 32 bytes, unique: what a request is looked up by; the secret itself is never stored) and
//! `created_at_ms`.
//!
//! Version 14 adds `sites.domain`, the registrable domain of the site's start host (public suffix
//! list; `NULL` for an IP address, and for sites added before), with the index `sites_by_domain`
//! (`audit_id`, `domain`; partial: only rows with a domain). An audit checks the DNS, mail and
//! registration of a registrable domain once, with one of its sites (issue 40); the findings of
//! that check are marked [`domain_wide`](shoal_shared::finding::Finding::domain_wide), and the
//! database gives each to every site of the audit with the same `domain` (`crate::apply`).
//!
//! Version 15 adds `browser_pages.rendered_json` (issue 38): the page's facts as its scripts left
//! them ([`Rendered`](shoal_shared::browser::Rendered), JSON; `NULL` when they could not be read
//! and in rows written before), which the site analysis compares with the page's raw row
//! (`crate::analysis::rendered`); and `browser_pages.robots_blocked_json`, the page's requests its
//! site's robots.txt held back (`[]` in rows written before).
//!
//! Version 16 adds the rendered crawl (issue 38, `--render`; `crate::render`): `rendered_pages`,
//! key `(site_id, url)`, a row per page queued for rendering (`queued` 1 until its render's
//! result arrives) with what the render found; `sites.render_json`, the site's
//! [`RenderDecision`](shoal_shared::render::RenderDecision) (`NULL`: not rendered); and
//! `links.rendered`, 1 for a link only the rendered page has (0 in rows written before).

/// Marks the file as a Shoal audit database (`PRAGMA application_id`, ASCII "Shol").
pub const APPLICATION_ID: i64 = 0x5368_6f6c;

/// Every migration, in order. `MIGRATIONS.len()` is the schema version this build writes.
pub const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15, V16];

const V1: &str = "
CREATE TABLE audits (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at_ms  INTEGER NOT NULL,
    finished_at_ms INTEGER,
    status         TEXT NOT NULL CHECK (status IN ('running', 'done', 'cancelled', 'interrupted')),
    options_json   TEXT NOT NULL
) STRICT;

CREATE TABLE sites (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    audit_id   INTEGER NOT NULL REFERENCES audits (id) ON DELETE CASCADE,
    start_url  TEXT NOT NULL,
    status     TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done')),
    pages      INTEGER NOT NULL DEFAULT 0,
    urls       INTEGER NOT NULL DEFAULT 0,
    findings   INTEGER NOT NULL DEFAULT 0,
    done_at_ms INTEGER
) STRICT;
CREATE INDEX sites_by_audit ON sites (audit_id);

CREATE TABLE pages (
    site_id           INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    url               TEXT NOT NULL,
    kind              TEXT NOT NULL,
    status            INTEGER,
    error             TEXT,
    redirect_to       TEXT,
    depth             INTEGER NOT NULL,
    found_via         TEXT NOT NULL,
    found_from        TEXT,
    content_type      TEXT,
    bytes             INTEGER NOT NULL,
    response_ms       INTEGER NOT NULL,
    fetched_at_ms     INTEGER NOT NULL,
    title             TEXT,
    meta_description  TEXT,
    h1_json           TEXT NOT NULL,
    canonical         TEXT,
    meta_robots_json  TEXT NOT NULL,
    x_robots_tag_json TEXT NOT NULL,
    hreflang_json     TEXT NOT NULL,
    headers_json      TEXT NOT NULL,
    PRIMARY KEY (site_id, url)
) STRICT;

CREATE TABLE links (
    site_id  INTEGER NOT NULL,
    from_url TEXT NOT NULL,
    position INTEGER NOT NULL,
    to_url   TEXT NOT NULL,
    kind     TEXT NOT NULL,
    nofollow INTEGER NOT NULL CHECK (nofollow IN (0, 1)),
    internal INTEGER NOT NULL CHECK (internal IN (0, 1)),
    text     TEXT,
    FOREIGN KEY (site_id, from_url) REFERENCES pages (site_id, url) ON DELETE CASCADE
) STRICT;
CREATE INDEX links_by_target ON links (site_id, to_url);
CREATE INDEX links_by_source ON links (site_id, from_url, position);

CREATE TABLE findings (
    id           INTEGER PRIMARY KEY,
    site_id      INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    code         TEXT NOT NULL,
    severity     TEXT NOT NULL CHECK (severity IN ('error', 'warning', 'notice')),
    url          TEXT NOT NULL,
    detail       TEXT NOT NULL,
    related_json TEXT NOT NULL DEFAULT '[]',
    origin       TEXT NOT NULL CHECK (origin IN ('worker', 'analysis')),
    stale        INTEGER NOT NULL DEFAULT 0,
    UNIQUE (site_id, code, url, detail)
) STRICT;
";

/// Version 2: indexes for the site-level analysis, which groups and looks pages up by title and
/// description, and by kind (external checks, sitemap entries). Without them the duplicate rules
/// scanned every page once per duplicate group (quadratic on large sites).
const V2: &str = "
CREATE INDEX pages_by_title ON pages (site_id, title);
CREATE INDEX pages_by_description ON pages (site_id, meta_description);
CREATE INDEX pages_by_kind ON pages (site_id, kind);
CREATE INDEX links_by_kind ON links (site_id, kind, to_url);
";

/// Version 3: recurring audits (the `schedules` table) and each audit's link to the schedule that
/// started it.
const V3: &str = "
CREATE TABLE schedules (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    name            TEXT NOT NULL,
    urls_json       TEXT NOT NULL,
    sites           INTEGER NOT NULL,
    options_json    TEXT NOT NULL,
    spec            TEXT NOT NULL,
    time_zone       TEXT NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    next_run_ms     INTEGER NOT NULL,
    last_audit_id   INTEGER,
    last_started_ms INTEGER,
    settled         INTEGER NOT NULL DEFAULT 1 CHECK (settled IN (0, 1))
) STRICT;
ALTER TABLE audits ADD COLUMN schedule_id INTEGER;
CREATE INDEX audits_by_schedule ON audits (schedule_id, id) WHERE schedule_id IS NOT NULL;
";

/// Version 4: each audit's totals in a row of their own, kept by triggers (see the module
/// documentation). Not columns of `audits`: that row holds the options with every start URL
/// (megabytes for 100,000 sites), and rewriting it on every site insert made a submit quadratic.
const V4: &str = "
CREATE TABLE audit_totals (
    audit_id   INTEGER PRIMARY KEY REFERENCES audits (id) ON DELETE CASCADE,
    sites      INTEGER NOT NULL DEFAULT 0,
    sites_done INTEGER NOT NULL DEFAULT 0,
    pages      INTEGER NOT NULL DEFAULT 0,
    urls       INTEGER NOT NULL DEFAULT 0,
    findings   INTEGER NOT NULL DEFAULT 0
) STRICT;
INSERT INTO audit_totals (audit_id, sites, sites_done, pages, urls, findings)
    SELECT a.id, COUNT(s.id), COALESCE(SUM(s.status = 'done'), 0), COALESCE(SUM(s.pages), 0),
           COALESCE(SUM(s.urls), 0), COALESCE(SUM(s.findings), 0)
    FROM audits a LEFT JOIN sites s ON s.audit_id = a.id GROUP BY a.id;
CREATE TRIGGER audit_totals_insert AFTER INSERT ON audits BEGIN
    INSERT INTO audit_totals (audit_id) VALUES (NEW.id);
END;
CREATE TRIGGER sites_totals_insert AFTER INSERT ON sites BEGIN
    UPDATE audit_totals SET sites = sites + 1, sites_done = sites_done + (NEW.status = 'done'),
        pages = pages + NEW.pages, urls = urls + NEW.urls, findings = findings + NEW.findings
    WHERE audit_id = NEW.audit_id;
END;
CREATE TRIGGER sites_totals_update AFTER UPDATE OF status, pages, urls, findings ON sites BEGIN
    UPDATE audit_totals SET sites_done = sites_done + (NEW.status = 'done') - (OLD.status = 'done'),
        pages = pages + NEW.pages - OLD.pages, urls = urls + NEW.urls - OLD.urls,
        findings = findings + NEW.findings - OLD.findings
    WHERE audit_id = NEW.audit_id;
END;
CREATE TRIGGER sites_totals_delete AFTER DELETE ON sites BEGIN
    UPDATE audit_totals SET sites = sites - 1, sites_done = sites_done - (OLD.status = 'done'),
        pages = pages - OLD.pages, urls = urls - OLD.urls, findings = findings - OLD.findings
    WHERE audit_id = OLD.audit_id;
END;
";

/// Version 5: cheaper writes (issue 13). A crawl stored every link in a table and three indexes
/// and every page in a table and four, though only the site analysis, once per site, reads them
/// by target, kind, title or description. `links` is now clustered on its source (`WITHOUT ROWID`,
/// primary key site, page, position: one B-tree per link instead of two, and the order every
/// reader wants), and the analysis builds its own per-site indexes in a temporary table when the
/// site ends (`analysis.rs`). Pages are read per site through their primary key.
const V5: &str = "
DROP INDEX pages_by_title;
DROP INDEX pages_by_description;
DROP INDEX pages_by_kind;
DROP INDEX links_by_kind;
DROP INDEX links_by_target;
DROP INDEX links_by_source;
CREATE TABLE links_v5 (
    site_id  INTEGER NOT NULL,
    from_url TEXT NOT NULL,
    position INTEGER NOT NULL,
    to_url   TEXT NOT NULL,
    kind     TEXT NOT NULL,
    nofollow INTEGER NOT NULL CHECK (nofollow IN (0, 1)),
    internal INTEGER NOT NULL CHECK (internal IN (0, 1)),
    text     TEXT,
    PRIMARY KEY (site_id, from_url, position),
    FOREIGN KEY (site_id, from_url) REFERENCES pages (site_id, url) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
INSERT OR IGNORE INTO links_v5 (site_id, from_url, position, to_url, kind, nofollow, internal, text)
    SELECT site_id, from_url, position, to_url, kind, nofollow, internal, text FROM links;
DROP TABLE links;
ALTER TABLE links_v5 RENAME TO links;
";

/// Version 6: what the browser check saw on each page it opened (`--browser-pages`).
const V6: &str = "
CREATE TABLE browser_pages (
    site_id          INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    url              TEXT NOT NULL,
    final_url        TEXT NOT NULL,
    status           INTEGER,
    error            TEXT,
    lcp_ms           INTEGER,
    cls_milli        INTEGER,
    inp_ms           INTEGER,
    tbt_ms           INTEGER,
    fcp_ms           INTEGER,
    ttfb_ms          INTEGER,
    resources_json   TEXT NOT NULL,
    third_party_json TEXT NOT NULL,
    blocked_json     TEXT NOT NULL,
    axe_json         TEXT NOT NULL,
    keyboard_json    TEXT NOT NULL,
    consent_json     TEXT NOT NULL,
    desktop_jpeg     BLOB NOT NULL,
    phone_jpeg       BLOB NOT NULL,
    PRIMARY KEY (site_id, url)
) STRICT;
";

/// Version 7: what the scheduler reads on a wake-up, by index: the schedules due by a time (a range
/// of `next_run_ms`, and its minimum for the next wake-up) and the schedules whose latest run has
/// not been settled (a partial index: only the schedules with a run under way or just ended).
const V7: &str = "
CREATE INDEX schedules_by_next_run ON schedules (next_run_ms);
CREATE INDEX schedules_unsettled ON schedules (settled) WHERE settled = 0;
";

/// Version 8: an audit may end `failed`, with a `reason`. The connection runs with foreign keys
/// off (`AuditDb::open`), so dropping the old table touches no site; the new one takes the old
/// one's name and its AUTOINCREMENT high-water mark, so no id is ever given out twice.
const V8: &str = "
CREATE TABLE audits_v8 (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at_ms  INTEGER NOT NULL,
    finished_at_ms INTEGER,
    status         TEXT NOT NULL CHECK (status IN ('running', 'done', 'cancelled', 'interrupted', 'failed')),
    options_json   TEXT NOT NULL,
    schedule_id    INTEGER,
    reason         TEXT
) STRICT;
INSERT INTO audits_v8 (id, created_at_ms, finished_at_ms, status, options_json, schedule_id)
    SELECT id, created_at_ms, finished_at_ms, status, options_json, schedule_id FROM audits;
DELETE FROM sqlite_sequence WHERE name = 'audits_v8';
INSERT INTO sqlite_sequence (name, seq) SELECT 'audits_v8', seq FROM sqlite_sequence WHERE name = 'audits';
DROP TABLE audits;
ALTER TABLE audits_v8 RENAME TO audits;
CREATE INDEX audits_by_schedule ON audits (schedule_id, id) WHERE schedule_id IS NOT NULL;
CREATE TRIGGER audit_totals_insert AFTER INSERT ON audits BEGIN
    INSERT INTO audit_totals (audit_id) VALUES (NEW.id);
END;
";

/// Version 9: the page facts of issue 37 (content fingerprints, structured-data types, pagination
/// links). Columns, not a table: they are read with the page, and only the site analysis scans
/// them.
const V9: &str = "
ALTER TABLE pages ADD COLUMN word_count INTEGER;
ALTER TABLE pages ADD COLUMN text_hash INTEGER;
ALTER TABLE pages ADD COLUMN text_simhash INTEGER;
ALTER TABLE pages ADD COLUMN structured_types_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE pages ADD COLUMN rel_next TEXT;
ALTER TABLE pages ADD COLUMN rel_prev TEXT;
";

/// Version 10: the hreflang alternates every page and sitemap stated, by the record that stated
/// them (clustered like `links`, so a record's rows are replaced in one range); the analysis
/// copies a site's rows into an indexed temporary table when it needs to look them up by page
/// or target, so the crawl maintains no second index.
const V10: &str = "
CREATE TABLE hreflang (
    site_id  INTEGER NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    found_in TEXT NOT NULL,
    position INTEGER NOT NULL,
    page_url TEXT NOT NULL,
    source   TEXT NOT NULL CHECK (source IN ('html', 'header', 'sitemap')),
    lang     TEXT NOT NULL,
    target   TEXT NOT NULL,
    PRIMARY KEY (site_id, found_in, position)
) STRICT, WITHOUT ROWID;
";

/// Version 11: page facts of issue 37, the extracted values and the AI crawlers robots.txt blocks
/// (see the module documentation).
const V11: &str = "
ALTER TABLE pages ADD COLUMN extracted_json TEXT;
ALTER TABLE pages ADD COLUMN ai_blocked INTEGER;
";

/// Version 12: the later audits of a start URL, by index (retention, see the module documentation).
const V12: &str = "
CREATE INDEX sites_by_start_url ON sites (start_url, audit_id);
CREATE INDEX audits_schedule_of ON audits (id, schedule_id) WHERE schedule_id IS NOT NULL;
";

/// Version 13: API tokens with scopes, stored by the hash of their secret (see the module
/// documentation and `crate::tokens`).
const V13: &str = "
CREATE TABLE tokens (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL,
    scope         TEXT NOT NULL CHECK (scope IN ('read', 'submit', 'site')),
    hosts_json    TEXT NOT NULL,
    secret_sha256 BLOB NOT NULL UNIQUE CHECK (length(secret_sha256) = 32),
    created_at_ms INTEGER NOT NULL,
    CHECK ((scope = 'site') = (hosts_json <> '[]'))
) STRICT;
";

/// Version 14: each site's registrable domain, by audit (see the module documentation). Rows of
/// older versions keep `NULL`: their audits ended with each site's own checks.
const V14: &str = "
ALTER TABLE sites ADD COLUMN domain TEXT;
CREATE INDEX sites_by_domain ON sites (audit_id, domain) WHERE domain IS NOT NULL;
";

/// Version 16: the rendered crawl (see the module documentation).
const V16: &str = "
CREATE TABLE rendered_pages (
    site_id             INTEGER NOT NULL,
    url                 TEXT NOT NULL,
    depth               INTEGER NOT NULL,
    queued              INTEGER NOT NULL CHECK (queued IN (0, 1)),
    final_url           TEXT,
    status              INTEGER,
    error               TEXT,
    rendered_json       TEXT,
    render_ms           INTEGER,
    requests            INTEGER,
    bytes               INTEGER,
    robots_blocked_json TEXT NOT NULL DEFAULT '[]',
    blocked_json        TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (site_id, url)
) STRICT, WITHOUT ROWID;
ALTER TABLE sites ADD COLUMN render_json TEXT;
ALTER TABLE links ADD COLUMN rendered INTEGER NOT NULL DEFAULT 0 CHECK (rendered IN (0, 1));
";

/// Version 15: a browser page's rendered facts (see the module documentation).
const V15: &str = "
ALTER TABLE browser_pages ADD COLUMN rendered_json TEXT;
ALTER TABLE browser_pages ADD COLUMN robots_blocked_json TEXT NOT NULL DEFAULT '[]';
";
