//! API tokens with scopes end to end (issue 40): a real `shoal coordinator` on a private
//! `redis-server` and a real worker audit two customers' sites; `shoal token add` (another process,
//! on the database the coordinator holds open) makes a site token for one customer, a read token
//! and a submit token, and every route is asked with each over real HTTP. The site token sees its
//! customer's site only (status, JSON and HTML report), everything else is 403 with the scope it
//! needs (or 404 for what is not its own); the dashboard refuses it; removed with `shoal token
//! remove`, it is refused at the next request. The same through the API's `/v1/tokens`.

use crate::common::two_page_site as site;
use crate::distributed::SERIAL;
use crate::procs::{Coordinator, TOKEN, shoal_command, tails, worker};
use reqwest::Method;
use serde_json::{Value, json};
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::TestServer;
use std::path::Path;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(60);

/// `shoal token ARGS --db DB` as its own process: exit code, stdout, stderr.
pub(crate) fn token_cmd(db: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out =
        shoal_command().arg("token").arg(args[0]).arg("--db").arg(db).args(&args[1..]).output().expect("shoal runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `shoal token add ...`: the token's id and secret.
pub(crate) fn add(db: &Path, args: &[&str]) -> (u64, String) {
    let mut all = vec!["add"];
    all.extend_from_slice(args);
    let (code, out, err) = token_cmd(db, &all);
    assert_eq!(code, Some(0), "{out}{err}");
    let id = out.split_whitespace().nth(1).and_then(|w| w.parse().ok()).unwrap_or_else(|| panic!("an id in {out}"));
    let secret = out.lines().nth(1).unwrap_or_else(|| panic!("a secret in {out}")).trim().to_owned();
    assert!(secret.starts_with("shoal_") && secret.len() == 70, "{out}");
    (id, secret)
}

/// One request with `token` as the bearer: status, body (JSON, or text as a JSON string) and the
/// content type.
async fn ask(base: &str, token: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value, String) {
    let http =
        reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let mut req = http.request(method, format!("{base}{path}")).bearer_auth(token);
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(serde_json::to_vec(&b).expect("JSON"));
    }
    let resp = req.send().await.expect("the coordinator answers");
    let status = resp.status().as_u16();
    let ctype = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let bytes = resp.bytes().await.expect("a body");
    let v =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, v, ctype)
}

fn error_of(v: &Value) -> &str {
    v.get("error").and_then(Value::as_str).unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scoped_tokens_see_and_do_exactly_what_their_scope_allows() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = RedisServer::start().expect("redis-server");
    let server = TestServer::start(vec![site("cust-a.test"), site("cust-b.test")]).await.expect("test sites");
    let db = dir.path().join("shoal.db");
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), "tokens", &db, &[]).await;
    let w = worker(dir.path(), "w1", &redis.url(), "tokens", &["cust-a.test".to_owned(), "cust-b.test".to_owned()], 4);
    let logs = || tails([&coord.proc, &w]);
    let (a_url, b_url) = (server.url("cust-a.test", "/"), server.url("cust-b.test", "/"));
    let both = coord.submit(&[a_url.clone(), b_url.clone()], json!({"gap_ms": 0})).await;
    coord.wait_finished(both, DEADLINE).await.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let only_b = coord.submit(std::slice::from_ref(&b_url), json!({"gap_ms": 0})).await;
    coord.wait_finished(only_b, DEADLINE).await.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let (_, full, _) = ask(&coord.base, TOKEN, Method::GET, &format!("/v1/audits/{both}"), None).await;
    let site_id = |start: &str| {
        full["sites"].as_array().expect("sites").iter().find(|s| s["start_url"] == start).expect("the site")["id"]
            .as_u64()
            .expect("an id")
    };
    let (a_site, b_site) = (site_id(&a_url), site_id(&b_url));

    // Made by another process on the file the coordinator holds open; bad input is refused.
    let (site_tok_id, site_tok) = add(&db, &["--scope", "site", "--host", "CUST-A.test", "--name", "customer A"]);
    let (_, read_tok) = add(&db, &["--scope", "read"]);
    let (_, submit_tok) = add(&db, &["--scope", "submit"]);
    let (code, _, err) = token_cmd(&db, &["add", "--scope", "site"]);
    assert_eq!(code, Some(3), "a site token without a host: {err}");
    assert!(err.contains("at least one host"), "{err}");
    let (code, _, err) = token_cmd(&db, &["add", "--scope", "site", "--host", "https://cust-a.test/"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("not a host"), "{err}");
    let (code, listed, err) = token_cmd(&db, &["list"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(listed.contains("customer A") && listed.contains("cust-a.test"), "{listed}");
    for secret in [&site_tok, &read_tok, &submit_tok] {
        assert!(!listed.contains(secret.as_str()), "list never shows a secret: {listed}");
    }

    // The site token: its customer's site only.
    let base = coord.base.clone();
    let get = |tok: String, path: String| {
        let base = base.clone();
        async move { ask(&base, &tok, Method::GET, &path, None).await }
    };
    let (status, list, _) = get(site_tok.clone(), "/v1/audits".into()).await;
    assert_eq!(status, 200, "{list}");
    let list = list.as_array().expect("a list").clone();
    assert_eq!(list.len(), 1, "only the audit holding cust-a: {list:?}");
    assert_eq!((list[0]["id"].as_u64(), list[0]["sites_total"].as_u64()), (Some(both), Some(1)), "{list:?}");
    let (status, mine, _) = get(site_tok.clone(), format!("/v1/audits/{both}")).await;
    assert_eq!(status, 200, "{mine}");
    let starts: Vec<&str> =
        mine["sites"].as_array().expect("sites").iter().filter_map(|s| s["start_url"].as_str()).collect();
    assert_eq!(starts, [a_url.as_str()], "{mine}");
    assert_eq!(
        mine["pages"].as_u64(),
        full["sites"].as_array().and_then(|s| s.iter().find(|s| s["id"] == a_site)).and_then(|s| s["pages"].as_u64())
    );
    let (status, v, _) = get(site_tok.clone(), format!("/v1/audits/{only_b}")).await;
    assert_eq!(status, 404, "an audit without its hosts is not found: {v}");
    let (status, report, ctype) = get(site_tok.clone(), format!("/v1/audits/{both}/sites/{a_site}/report")).await;
    assert_eq!((status, ctype.as_str()), (200, "application/json"), "{report}");
    assert!(report.to_string().contains("cust-a.test") && !report.to_string().contains("cust-b.test"), "{report}");
    let (status, html, ctype) =
        get(site_tok.clone(), format!("/v1/audits/{both}/sites/{a_site}/report?format=html")).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        ctype.starts_with("text/html")
            && html.as_str().is_some_and(|h| h.contains("cust-a.test") && !h.contains("cust-b.test")),
        "{ctype}"
    );
    let (status, v, _) = get(site_tok.clone(), format!("/v1/audits/{both}/sites/{b_site}/report")).await;
    assert_eq!(status, 404, "another customer's site: {v}");
    for (method, path, needs) in [
        (Method::GET, format!("/v1/audits/{both}/report"), "scope read"),
        (Method::POST, "/v1/audits".to_owned(), "scope submit"),
        (Method::POST, format!("/v1/audits/{both}/cancel"), "scope submit"),
        (Method::GET, "/v1/schedules".to_owned(), "scope read"),
        (Method::GET, "/v1/tokens".to_owned(), "admin token"),
    ] {
        let (status, v, _) = ask(&coord.base, &site_tok, method.clone(), &path, Some(json!({"urls": [a_url]}))).await;
        assert_eq!(status, 403, "{method} {path}: {v}");
        assert!(
            error_of(&v).contains(needs) && error_of(&v).contains("has scope site for cust-a.test"),
            "{method} {path}: {v}"
        );
    }
    // The dashboard takes the admin token only, as a header or in its login form.
    let (status, page, _) = get(site_tok.clone(), "/ui/".into()).await;
    assert_eq!(status, 403, "{page}");
    assert!(
        page.as_str().is_some_and(|p| p.contains("only the coordinator&#39;s admin token")
            || p.contains("only the coordinator's admin token")),
        "{page}"
    );
    let http =
        reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let login = http
        .post(format!("{}/ui/login", coord.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={site_tok}&next=%2Fui%2F"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(login.status().as_u16(), 403);
    assert!(login.headers().get("set-cookie").is_none(), "no session for a scoped token");

    // read: every audit and report, no writes; submit: submit and cancel.
    let (status, v, _) = get(read_tok.clone(), format!("/v1/audits/{both}/report")).await;
    assert_eq!(status, 200, "{v}");
    let (status, v, _) = get(read_tok.clone(), "/v1/audits".into()).await;
    assert_eq!((status, v.as_array().map(Vec::len)), (200, Some(2)), "{v}");
    let (status, v, _) = ask(&coord.base, &read_tok, Method::POST, "/v1/audits", Some(json!({"urls": [a_url]}))).await;
    assert_eq!(status, 403, "{v}");
    assert!(error_of(&v).contains("scope submit") && error_of(&v).contains("has scope read"), "{v}");
    let (status, v, _) = ask(
        &coord.base,
        &submit_tok,
        Method::POST,
        "/v1/audits",
        Some(json!({"urls": [a_url], "options": {"gap_ms": 0}})),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    let third = v["id"].as_u64().expect("an id");
    let (status, v, _) = ask(&coord.base, &submit_tok, Method::POST, &format!("/v1/audits/{third}/cancel"), None).await;
    assert_eq!(status, 200, "{v}");
    let (status, v, _) = ask(&coord.base, &submit_tok, Method::DELETE, "/v1/schedules/1", None).await;
    assert_eq!(status, 403, "{v}");
    let (status, _, _) = get("shoal_".to_owned() + &"0".repeat(64), "/v1/audits".into()).await;
    assert_eq!(status, 401, "an unknown token");

    // Removed by another process: refused at the coordinator's next request.
    let (code, out, err) = token_cmd(&db, &["remove", &site_tok_id.to_string()]);
    assert_eq!(code, Some(0), "{out}{err}");
    let removed_at = Instant::now();
    let (status, v, _) = get(site_tok.clone(), "/v1/audits".into()).await;
    assert_eq!(status, 401, "a removed token, {:?} after its removal: {v}", removed_at.elapsed());
    let (code, _, err) = token_cmd(&db, &["remove", &site_tok_id.to_string()]);
    assert_eq!(code, Some(3), "{err}");

    // The same through the API, admin only.
    let (status, v, _) = ask(&coord.base, TOKEN, Method::POST, "/v1/tokens", Some(json!({"scope": "site"}))).await;
    assert_eq!(status, 400, "{v}");
    let (status, made, _) = ask(
        &coord.base,
        TOKEN,
        Method::POST,
        "/v1/tokens",
        Some(json!({"scope": "site", "hosts": ["cust-b.test"], "name": "B"})),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let (b_id, b_tok) = (made["id"].as_u64().expect("id"), made["secret"].as_str().expect("secret").to_owned());
    let (status, v, _) = get(b_tok.clone(), "/v1/audits".into()).await;
    assert_eq!((status, v.as_array().map(Vec::len)), (200, Some(2)), "cust-b is in both audits: {v}");
    let (status, v, _) = get(b_tok.clone(), format!("/v1/audits/{both}/sites/{b_site}/report")).await;
    assert_eq!(status, 200, "{v}");
    let (status, listed, _) = get(TOKEN.to_owned(), "/v1/tokens".into()).await;
    assert_eq!(status, 200, "{listed}");
    assert!(!listed.to_string().contains(&b_tok) && !listed.to_string().contains("secret"), "{listed}");
    assert_eq!(listed.as_array().map(Vec::len), Some(3), "{listed}");
    let (status, v, _) = ask(&coord.base, TOKEN, Method::DELETE, &format!("/v1/tokens/{b_id}"), None).await;
    assert_eq!(status, 200, "{v}");
    let (status, _, _) = get(b_tok, "/v1/audits".into()).await;
    assert_eq!(status, 401, "removed through the API");
    let (status, v, _) = ask(&coord.base, TOKEN, Method::DELETE, &format!("/v1/tokens/{b_id}"), None).await;
    assert_eq!(status, 404, "{v}");
}
