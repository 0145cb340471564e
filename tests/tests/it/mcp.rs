//! `shoal mcp` as an assistant's host runs it: a child process spoken to over stdio by the MCP
//! SDK's client (rmcp), on a database made by two real `shoal audit` runs of a loopback site.
//! Every tool is called once and checked against what the database holds, and bad input is
//! refused with an error while the session goes on.

use crate::procs::shoal_command;
use rmcp::model::{CallToolRequestParams, ErrorCode};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use shoal_tests::testsite::{Site, TestServer};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const HOST: &str = "mcp.test";
/// How long one audit of the small site may take.
const AUDIT_DEADLINE: Duration = Duration::from_secs(60);
/// How long one MCP call may take.
const CALL_DEADLINE: Duration = Duration::from_secs(20);

/// Runs `shoal audit` of the test site into `db`, with `extra` flags, to its end.
async fn audit(server: &TestServer, dir: &Path, db: &Path, extra: &[&str]) {
    let mut cmd = shoal_command();
    cmd.current_dir(dir)
        .args(["audit", &server.url(HOST, "/"), "--db"])
        .arg(db)
        .args(["--allow-private", "--no-dns", "--no-progress", "--gap-ms", "0"])
        .args(["--resolve", &server.resolve_arg(HOST)])
        .args(extra);
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let out = tokio::time::timeout(AUDIT_DEADLINE, cmd.output())
        .await
        .expect("shoal audit finishes within the deadline")
        .expect("shoal audit runs");
    assert!(out.status.success(), "shoal audit: {}", String::from_utf8_lossy(&out.stderr));
}

/// How a call was refused: a JSON-RPC error (our own validation answers `invalid_params`), or a
/// tool result marked as an error (what the SDK answers when the arguments do not deserialize).
#[derive(Debug)]
enum Refusal {
    Rpc(ServiceError),
    ToolError(String),
}

/// Calls a tool; its answer's JSON text parsed, or how it was refused.
async fn call(client: &RunningService<RoleClient, ()>, tool: &'static str, args: Value) -> Result<Value, Refusal> {
    let Value::Object(args) = args else { panic!("tool arguments are an object") };
    let params = CallToolRequestParams::new(tool).with_arguments(args);
    let result = tokio::time::timeout(CALL_DEADLINE, client.call_tool(params))
        .await
        .expect("answer in time")
        .map_err(Refusal::Rpc)?;
    let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).expect("a text answer");
    if result.is_error == Some(true) {
        return Err(Refusal::ToolError(text));
    }
    Ok(serde_json::from_str(&text).expect("the answer is JSON"))
}

/// The message of a call our validation refused (`invalid_params`).
fn refused(r: Result<Value, Refusal>) -> String {
    match r {
        Err(Refusal::Rpc(ServiceError::McpError(e))) if e.code == ErrorCode::INVALID_PARAMS => e.message.into_owned(),
        other => panic!("expected invalid params, got {other:?}"),
    }
}

/// The message of arguments that do not fit the tool's schema.
fn malformed(r: Result<Value, Refusal>) -> String {
    match r {
        Err(Refusal::ToolError(msg)) => msg,
        other => panic!("expected the arguments refused, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_session_over_stdio_calls_every_tool_and_refuses_bad_input() {
    let server = TestServer::start(vec![Site::generated(HOST, 12, 3)]).await.expect("server starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("audit.db");
    // Two audits of one site: the first stops at a page budget the second does not reach.
    audit(&server, dir.path(), &db, &["--max-pages", "3"]).await;
    audit(&server, dir.path(), &db, &[]).await;

    let mut cmd = shoal_command();
    // The crawl settings are `shoal audit`'s: loopback allowed for the test site, and at most 5
    // pages from the configuration file's [crawl] section, as every crawling command reads it.
    let config = dir.path().join("shoal.toml");
    std::fs::write(&config, "[crawl]\nmax_pages = 5\n").expect("write the config file");
    cmd.arg("--config").arg(&config);
    cmd.arg("mcp").arg("--db").arg(&db).args(["--allow-private", "--no-dns", "--gap-ms", "0"]);
    cmd.args(["--resolve", &server.resolve_arg(HOST)]);
    let stderr = std::fs::File::create(dir.path().join("mcp.stderr")).expect("stderr file");
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(stderr)
        .spawn()
        .expect("shoal mcp starts");
    let client = ().serve(transport).await.expect("initialize");
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("shoal"));
    assert!(info.capabilities.tools.is_some());

    let tools: BTreeSet<String> =
        client.list_all_tools().await.expect("tools/list").into_iter().map(|t| t.name.into_owned()).collect();
    let want: BTreeSet<String> = [
        "list_audits",
        "site_health",
        "issue_urls",
        "compare_audits",
        "explain_finding",
        "robots_verdict",
        "audit_site",
    ]
    .map(str::to_owned)
    .into();
    assert_eq!(tools, want);

    // list_audits: both, newest first.
    let audits = call(&client, "list_audits", json!({})).await.expect("list_audits");
    let list = audits["audits"].as_array().expect("audits");
    assert_eq!(list.len(), 2, "{audits}");
    let (new, old) = (list[0]["id"].as_u64().expect("id"), list[1]["id"].as_u64().expect("id"));
    assert!(new > old);
    assert!(list.iter().all(|a| a["status"] == "done"), "{audits}");

    // site_health of the site in the latest audit: issues ranked, their counts add up.
    let start = server.url(HOST, "/");
    let health = call(&client, "site_health", json!({ "site": start })).await.expect("site_health");
    assert_eq!(health["audit"], new);
    let issues = health["issues"].as_array().expect("issues");
    assert!(!issues.is_empty(), "a generated site has findings: {health}");
    let sum: u64 = issues.iter().map(|i| i["findings"].as_u64().expect("count")).sum();
    assert_eq!(Some(sum), health["site"]["findings"].as_u64(), "{health}");
    let impacts: Vec<f64> = issues.iter().map(|i| i["impact"].as_f64().expect("impact")).collect();
    assert!(impacts.windows(2).all(|w| w[0] >= w[1]), "ranked by impact: {impacts:?}");

    // issue_urls for the top issue: every finding of it, on this site's host.
    let top = &issues[0];
    let code = top["code"].as_str().expect("code");
    let urls =
        call(&client, "issue_urls", json!({ "site": start, "code": code, "limit": 200 })).await.expect("issue_urls");
    let rows = urls["findings"].as_array().expect("findings");
    assert_eq!(Some(rows.len() as u64), top["findings"].as_u64(), "{urls}");
    assert!(rows.iter().all(|f| f["code"] == code && f["url"].as_str().is_some_and(|u| u.contains(HOST))), "{urls}");

    // compare_audits: the counts add up both ways.
    let cmp = call(&client, "compare_audits", json!({ "old": old, "new": new })).await.expect("compare_audits");
    let pair = &cmp["sites"][0];
    let n = |k: &str| pair[k].as_u64().expect("count");
    let findings = |a: &Value| a["findings"].as_u64().expect("findings");
    assert_eq!(n("new_count") + n("remaining_count"), findings(&list[0]), "{cmp}");
    assert_eq!(n("fixed_count") + n("remaining_count"), findings(&list[1]), "{cmp}");
    // The first audit stopped at its page budget; the second did not: that finding is fixed.
    let fixed: Vec<&str> = pair["fixed"].as_array().expect("fixed").iter().filter_map(|f| f["code"].as_str()).collect();
    assert!(fixed.contains(&"page_limit_reached"), "{cmp}");

    // explain_finding for that code, robots_verdict for a rule.
    let why = call(&client, "explain_finding", json!({ "code": code })).await.expect("explain_finding");
    assert_eq!(why["code"], code);
    assert!(why["what"].as_str().is_some_and(|s| !s.is_empty()), "{why}");
    let robots = call(
        &client,
        "robots_verdict",
        json!({ "robots_txt": "User-agent: ShoalBot\nDisallow: /p/\n", "url": server.url(HOST, "/p/1") }),
    )
    .await
    .expect("robots_verdict");
    assert_eq!((robots["allowed"].as_bool(), robots["rule"].as_str()), (Some(false), Some("/p/")), "{robots}");

    // Bad input: refused with a reason, and the session goes on.
    assert!(refused(call(&client, "site_health", json!({ "audit": 999 })).await).contains("no audit 999"));
    assert!(malformed(call(&client, "issue_urls", json!({ "site": start })).await).contains("missing field `code`"));
    assert!(malformed(call(&client, "list_audits", json!({ "limit": "ten" })).await).contains("invalid type"));
    assert!(malformed(call(&client, "list_audits", json!({ "lmit": 5 })).await).contains("unknown field"));
    assert!(refused(call(&client, "list_audits", json!({ "limit": 1000 })).await).contains("maximum"));
    assert!(refused(call(&client, "explain_finding", json!({ "code": "nonsense" })).await).contains("unknown"));
    assert!(
        refused(call(&client, "robots_verdict", json!({ "robots_txt": "", "url": "not a url" })).await).contains("URL")
    );
    assert!(matches!(call(&client, "no_such_tool", json!({})).await, Err(Refusal::Rpc(_))));
    let again = call(&client, "list_audits", json!({ "limit": 1 })).await.expect("still answering");
    assert_eq!(again["page"]["next_offset"], 1);

    // audit_site: limits above the server's refused, then a real audit of the loopback site into
    // the same database, within the page budget asked for.
    let too_many = call(&client, "audit_site", json!({ "start_url": start, "max_pages": 6 })).await;
    assert!(refused(too_many).contains("limit of 5"));
    assert!(refused(call(&client, "audit_site", json!({ "start_url": "ftp://mcp.test/" })).await).contains("ftp"));
    let before = server.log().paths(HOST).len();
    let run = call(&client, "audit_site", json!({ "start_url": start, "max_pages": 2 })).await.expect("audit_site");
    let third = run["audit"].as_u64().expect("audit id");
    assert!(third > new, "{run}");
    assert!(server.log().paths(HOST).len() > before, "the site was fetched again");
    let audits = call(&client, "list_audits", json!({ "limit": 1 })).await.expect("list_audits");
    let latest = &audits["audits"][0];
    assert_eq!((latest["id"].as_u64(), latest["status"].as_str()), (Some(third), Some("done")));
    assert_eq!(latest["pages"], 2, "the page budget asked for: {audits}");
    assert_eq!(latest["findings"], run["findings"], "{audits} {run}");
    let health = call(&client, "site_health", json!({ "audit": third, "site": start })).await.expect("site_health");
    assert!(health["issues"].as_array().expect("issues").iter().any(|i| i["code"] == "page_limit_reached"), "{health}");

    client.cancel().await.expect("session closes");
    server.shutdown().await;
}
