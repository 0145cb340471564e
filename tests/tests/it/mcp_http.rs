//! The MCP tools on the coordinator, `POST /mcp` over streamable HTTP, as an assistant's host
//! reaches them: the MCP SDK's client (rmcp) against a real `shoal coordinator` on a private
//! `redis-server` with a real worker, authenticated by tokens made with `shoal token add`.
//!
//! A `read` token lists the tools and reads the audit, but `audit_site` is refused and no audit
//! is made; a `submit` token starts an audit the worker crawls; a `site` token and no token are
//! refused before any MCP message is read; a removed token is refused at its next request.

use crate::common::two_page_site as site;
use crate::distributed::SERIAL;
use crate::procs::{Coordinator, TOKEN, tails, worker};
use crate::tokens::{add, token_cmd};
use rmcp::model::{CallToolRequestParams, ErrorCode};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::TestServer;
use std::time::Duration;

const HOST: &str = "mcp-http.test";
const DEADLINE: Duration = Duration::from_secs(60);
/// One MCP call; `audit_site` waits for its audit (a two-page site at gap 0: seconds).
const CALL_DEADLINE: Duration = Duration::from_secs(60);

type Client = RunningService<RoleClient, ()>;

/// An MCP session with the coordinator's `/mcp`, sending `token` as the bearer.
async fn connect(base: &str, token: &str) -> Result<Client, String> {
    let http = reqwest::Client::builder().no_proxy().timeout(CALL_DEADLINE).build().expect("an HTTP client");
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp")).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(http, config);
    tokio::time::timeout(CALL_DEADLINE, ().serve(transport))
        .await
        .map_err(|_| "no answer to initialize in time".to_owned())?
        .map_err(|e| e.to_string())
}

/// Calls a tool: its answer's JSON text parsed, or the JSON-RPC error.
async fn call(client: &Client, tool: &'static str, args: Value) -> Result<Value, ServiceError> {
    let Value::Object(args) = args else { panic!("tool arguments are an object") };
    let params = CallToolRequestParams::new(tool).with_arguments(args);
    let result = tokio::time::timeout(CALL_DEADLINE, client.call_tool(params)).await.expect("an answer in time")?;
    let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).expect("a text answer");
    assert_ne!(result.is_error, Some(true), "{tool}: {text}");
    Ok(serde_json::from_str(&text).expect("the answer is JSON"))
}

/// The status code of a bare `POST /mcp` with an `initialize` message and `token` (if any).
async fn post_initialize(base: &str, token: Option<&str>) -> (u16, String) {
    let http = reqwest::Client::builder().no_proxy().timeout(CALL_DEADLINE).build().expect("an HTTP client");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let mut req = http
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("the coordinator answers");
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

/// How many audits the coordinator has.
async fn audits(coord: &Coordinator) -> usize {
    let (code, v) = coord.api(reqwest::Method::GET, "/v1/audits", None).await.expect("the API answers");
    assert_eq!(code, 200, "{v}");
    v.as_array().expect("a list").len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinators_mcp_tools_obey_the_tokens_scopes() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = RedisServer::start().expect("redis-server");
    let server = TestServer::start(vec![site(HOST)]).await.expect("test site");
    let db = dir.path().join("shoal.db");
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), "mcp", &db, &["--gap-ms", "0"]).await;
    let w = worker(dir.path(), "w1", &redis.url(), "mcp", &[HOST.to_owned()], 4);
    let logs = || tails([&coord.proc, &w]);
    let start = server.url(HOST, "/");
    let first = coord.submit(std::slice::from_ref(&start), json!({"gap_ms": 0})).await;
    coord.wait_finished(first, DEADLINE).await.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let (read_id, read_tok) = add(&db, &["--scope", "read"]);
    let (_, submit_tok) = add(&db, &["--scope", "submit"]);
    let (_, site_tok) = add(&db, &["--scope", "site", "--host", HOST]);

    // No token, a wrong one, and a site token: refused before any MCP message is read.
    assert_eq!(post_initialize(&coord.base, None).await.0, 401);
    assert_eq!(post_initialize(&coord.base, Some("not-a-token-0123456789")).await.0, 401);
    let (code, body) = post_initialize(&coord.base, Some(&site_tok)).await;
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("scope read or submit"), "{body}");
    assert!(connect(&coord.base, &site_tok).await.is_err(), "a site token gets no session");

    // A read token: every tool listed, the audit read, but no audit started.
    let reader = connect(&coord.base, &read_tok).await.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let tools = reader.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    let want = [
        "audit_site",
        "compare_audits",
        "explain_finding",
        "issue_urls",
        "list_audits",
        "robots_verdict",
        "site_health",
    ];
    assert_eq!(names, want);
    let listed = call(&reader, "list_audits", json!({})).await.expect("list_audits");
    assert_eq!(listed["audits"][0]["id"].as_u64(), Some(first), "{listed}");
    let health = call(&reader, "site_health", json!({ "audit": first, "site": start })).await.expect("site_health");
    assert!(health["score"].as_u64().is_some(), "{health}");
    let before = (audits(&coord).await, server.log().paths(HOST).len());
    let refused = call(&reader, "audit_site", json!({ "start_url": start, "max_pages": 2 })).await;
    match refused {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code, ErrorCode::INVALID_REQUEST, "{e:?}");
            assert!(e.message.contains("scope submit"), "{}", e.message);
        }
        other => panic!("a read token must not start an audit: {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!((audits(&coord).await, server.log().paths(HOST).len()), before, "no audit made, no request sent");

    // A submit token: the audit is submitted to the fleet, crawled by the worker, and answered.
    let submitter = connect(&coord.base, &submit_tok).await.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let run = call(&submitter, "audit_site", json!({ "start_url": start, "max_pages": 2 }))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    let second = run["audit"].as_u64().expect("an audit id");
    assert!(second > first, "{run}");
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(audits(&coord).await, before.0 + 1);
    assert!(server.log().paths(HOST).len() > before.1, "the worker fetched the site again");
    let (_, status) =
        coord.api(reqwest::Method::GET, &format!("/v1/audits/{second}"), None).await.expect("the API answers");
    assert_eq!(status["pages"], 2, "the page budget asked for: {status}");
    assert_eq!(run["findings"], status["findings"], "{run} {status}");
    let over = call(&submitter, "audit_site", json!({ "start_url": start, "max_pages": 100_000 })).await;
    assert!(
        matches!(&over, Err(ServiceError::McpError(e)) if e.code == ErrorCode::INVALID_PARAMS && e.message.contains("limit")),
        "{over:?}"
    );

    // The admin token may do everything too; a removed read token is refused at its next request.
    let admin = connect(&coord.base, TOKEN).await.expect("the admin token");
    call(&admin, "list_audits", json!({ "limit": 1 })).await.expect("list_audits");
    let (code, out, err) = token_cmd(&db, &["remove", &read_id.to_string()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(call(&reader, "list_audits", json!({})).await.is_err(), "a removed token is refused");
    assert_eq!(post_initialize(&coord.base, Some(&read_tok)).await.0, 401);

    for c in [reader, submitter, admin] {
        let _ = c.cancel().await;
    }
    server.shutdown().await;
}
