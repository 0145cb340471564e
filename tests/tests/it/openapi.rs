//! The coordinator's OpenAPI document against the coordinator itself (issue 42): a real
//! `shoal coordinator` on a private `redis-server` and a real worker audit a loopback site, then
//! every operation the served document declares is called with the shapes it declares (path ids
//! of real objects, every value of an enum query, bodies whose keys the request schema has), and
//! each answer must carry a status and content type the operation declares and, for JSON, the
//! declared top-level fields (every required one present, none undeclared). Every token route
//! refuses a request without a token (401), and a `site` token where it declares a 403. The run
//! fails if any declared operation was not called.

use crate::common::two_page_site as site;
use crate::distributed::SERIAL;
use crate::procs::{Coordinator, TOKEN, tails, worker};
use reqwest::Method;
use serde_json::{Value, json};
use shoal_tests::redis::RedisServer;
use shoal_tests::testsite::TestServer;
use std::collections::BTreeSet;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

/// The schema `s` with a `$ref` to `#/components/schemas/X` resolved (one level).
fn resolve<'a>(doc: &'a Value, s: &'a Value) -> &'a Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")],
        None => s,
    }
}

/// The properties and required fields of an object schema, `allOf` parts merged.
fn fields(doc: &Value, s: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let s = resolve(doc, s);
    let (mut props, mut required) = (BTreeSet::new(), BTreeSet::new());
    for part in s["allOf"].as_array().into_iter().flatten() {
        let (p, r) = fields(doc, part);
        props.extend(p);
        required.extend(r);
    }
    props.extend(s["properties"].as_object().into_iter().flatten().map(|(k, _)| k.clone()));
    required.extend(s["required"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned));
    (props, required)
}

/// Whether `v` has the top-level shape of schema `s`: an object with every required field and no
/// undeclared one, an array whose items are, or (for an open `object`) any JSON object.
fn conforms(doc: &Value, s: &Value, v: &Value) -> Result<(), String> {
    let s = resolve(doc, s);
    if s["type"] == "array" {
        let items = v.as_array().ok_or_else(|| format!("not an array: {v}"))?;
        return items.iter().try_for_each(|i| conforms(doc, &s["items"], i));
    }
    let obj = v.as_object().ok_or_else(|| format!("not an object: {v}"))?;
    let (props, required) = fields(doc, s);
    if props.is_empty() && s["allOf"].is_null() {
        return Ok(()); // `type: object` with no fields declared: the report documents.
    }
    let keys: BTreeSet<String> = obj.keys().cloned().collect();
    let missing: Vec<_> = required.difference(&keys).collect();
    let undeclared: Vec<_> = keys.difference(&props).collect();
    if missing.is_empty() && undeclared.is_empty() {
        Ok(())
    } else {
        Err(format!("missing {missing:?}, undeclared {undeclared:?} in {v}"))
    }
}

/// Calls the API as the document describes it and checks the answer against it.
struct Caller<'a> {
    doc: &'a Value,
    base: String,
    http: reqwest::Client,
    called: BTreeSet<(String, String)>,
}

impl Caller<'_> {
    /// `method template` with `path` (the template filled in, a query added) and `body`, as
    /// `bearer`: checks the body against the request schema, then the answer's status, content
    /// type and top-level fields against the operation's responses; returns status and answer.
    async fn call(
        &mut self,
        bearer: Option<&str>,
        method: Method,
        template: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let op = &self.doc["paths"][template][method.as_str().to_lowercase()];
        assert!(op.is_object(), "the document has no {method} {template}");
        self.called.insert((method.as_str().to_owned(), template.to_owned()));
        let mut req = self.http.request(method.clone(), format!("{}{path}", self.base));
        if let Some(t) = bearer {
            req = req.bearer_auth(t);
        }
        if let Some(b) = &body {
            let schema = &op["requestBody"]["content"]["application/json"]["schema"];
            assert!(schema.is_object(), "{method} {template} declares no JSON body");
            conforms(self.doc, schema, b).unwrap_or_else(|e| panic!("the test's {method} {template} body: {e}"));
            req = req.header("content-type", "application/json").body(b.to_string());
        }
        let resp = req.send().await.expect("the coordinator answers");
        let status = resp.status().as_u16();
        let ctype = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        let bytes = resp.bytes().await.expect("a body");
        let declared = &op["responses"][status.to_string()];
        assert!(
            declared.is_object(),
            "{method} {path} answered {status}, which it does not declare: {}",
            String::from_utf8_lossy(&bytes)
        );
        let mime = ctype.split(';').next().unwrap_or("").trim();
        let content = &declared["content"][mime];
        assert!(content.is_object(), "{method} {path} {status}: content type {ctype:?} not declared");
        let v = if mime.ends_with("json") {
            let v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{method} {path}: not JSON: {e}"));
            conforms(self.doc, &content["schema"], &v).unwrap_or_else(|e| panic!("{method} {path} {status}: {e}"));
            v
        } else {
            assert!(!bytes.is_empty(), "{method} {path}: an empty {mime}");
            Value::String(String::from_utf8_lossy(&bytes).into_owned())
        };
        (status, v)
    }

    /// [`Self::call`] with the admin token, expecting `want`.
    async fn admin(&mut self, method: Method, template: &str, path: &str, body: Option<Value>, want: u16) -> Value {
        let (status, v) = self.call(Some(TOKEN), method.clone(), template, path, body).await;
        assert_eq!(status, want, "{method} {path}: {v}");
        v
    }

    /// The values of the enum query parameter `name` of `GET template`.
    fn enum_values(&self, template: &str, name: &str) -> Vec<String> {
        let params = self.doc["paths"][template]["get"]["parameters"].as_array().expect("parameters");
        let p = params.iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{template} has no {name}"));
        p["schema"]["enum"].as_array().expect("an enum").iter().filter_map(Value::as_str).map(str::to_owned).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_of_the_document_answers_as_declared() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = RedisServer::start().expect("redis-server");
    let server = TestServer::start(vec![site("api.test")]).await.expect("test site");
    let db = dir.path().join("shoal.db");
    let coord = Coordinator::start(dir.path(), "coordinator", &redis.url(), "openapi", &db, &[]).await;
    let w = worker(dir.path(), "w1", &redis.url(), "openapi", &["api.test".to_owned()], 2);
    let logs = || tails([&coord.proc, &w]);
    let http = reqwest::Client::builder().no_proxy().build().expect("client");

    // The document, without a token; it is the committed one.
    let resp = http.get(format!("{}/v1/openapi.json", coord.base)).send().await.expect("an answer");
    assert_eq!(resp.status().as_u16(), 200);
    let text = resp.text().await.expect("text");
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json"))
        .expect("docs/openapi.json");
    assert!(text == committed, "the served document is not docs/openapi.json");
    let doc: Value = serde_json::from_str(&text).expect("JSON");
    let mut c = Caller { doc: &doc, base: coord.base.clone(), http, called: BTreeSet::new() };
    c.call(None, Method::GET, "/v1/openapi.json", "/v1/openapi.json", None).await;

    // Audits.
    let start = server.url("api.test", "/");
    let made = c
        .admin(Method::POST, "/v1/audits", "/v1/audits", Some(json!({"urls": [start], "options": {"gap_ms": 0}})), 201)
        .await;
    let audit = made["id"].as_u64().expect("an id");
    coord.wait_finished(audit, DEADLINE).await.unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    c.admin(Method::GET, "/v1/audits", "/v1/audits", None, 200).await;
    let status =
        c.admin(Method::GET, "/v1/audits/{id}", &format!("/v1/audits/{audit}?after=0&limit=10"), None, 200).await;
    let site_id = status["sites"][0]["id"].as_u64().expect("a site");
    c.admin(Method::GET, "/v1/audits/{id}", "/v1/audits/999999", None, 404).await;
    c.admin(Method::GET, "/v1/audits/{id}", &format!("/v1/audits/{audit}?limit=x"), None, 400).await;
    let t = "/v1/audits/{id}/report";
    for f in c.enum_values(t, "format") {
        c.admin(Method::GET, t, &format!("/v1/audits/{audit}/report?format={f}"), None, 200).await;
    }
    c.admin(Method::GET, t, &format!("/v1/audits/{audit}/report"), None, 200).await;
    let v = c.admin(Method::GET, t, &format!("/v1/audits/{audit}/report?format=pdf"), None, 400).await;
    assert!(v["error"].as_str().is_some_and(|e| e.contains("pdf") && e.contains("junit")), "names the formats: {v}");
    let t = "/v1/audits/{id}/sites/{site}/report";
    for f in c.enum_values(t, "format") {
        c.admin(Method::GET, t, &format!("/v1/audits/{audit}/sites/{site_id}/report?format={f}"), None, 200).await;
    }
    c.admin(Method::GET, t, &format!("/v1/audits/{audit}/sites/999999/report"), None, 404).await;
    c.admin(Method::POST, "/v1/audits/{id}/cancel", &format!("/v1/audits/{audit}/cancel"), None, 200).await;

    // Schedules.
    let body =
        json!({"name": "weekly", "urls": [start], "options": {"gap_ms": 0}, "when": "every 7d", "time_zone": "UTC"});
    let sched =
        c.admin(Method::POST, "/v1/schedules", "/v1/schedules", Some(body), 201).await["id"].as_u64().expect("an id");
    c.admin(
        Method::POST,
        "/v1/schedules",
        "/v1/schedules",
        Some(json!({"name": "x", "urls": [start], "when": "now and then"})),
        400,
    )
    .await;
    c.admin(Method::GET, "/v1/schedules", "/v1/schedules", None, 200).await;
    c.admin(Method::GET, "/v1/schedules/{id}", &format!("/v1/schedules/{sched}"), None, 200).await;
    c.admin(Method::DELETE, "/v1/schedules/{id}", &format!("/v1/schedules/{sched}"), None, 200).await;
    c.admin(Method::GET, "/v1/schedules/{id}", &format!("/v1/schedules/{sched}"), None, 404).await;

    // Tokens: a site token, to be refused where the document says 403.
    let made = c
        .admin(
            Method::POST,
            "/v1/tokens",
            "/v1/tokens",
            Some(json!({"name": "panel", "scope": "site", "hosts": ["api.test"]})),
            201,
        )
        .await;
    let (tok_id, secret) = (made["id"].as_u64().expect("id"), made["secret"].as_str().expect("secret").to_owned());
    c.admin(Method::POST, "/v1/tokens", "/v1/tokens", Some(json!({"scope": "site"})), 400).await;
    c.admin(Method::GET, "/v1/tokens", "/v1/tokens", None, 200).await;

    // Every token route: 401 without a token; 403 for the site token where declared, else not.
    let ops: Vec<(String, String)> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(p, item)| item.as_object().expect("item").keys().map(move |m| (m.clone(), p.clone())))
        .collect();
    for (m, template) in &ops {
        let op = &doc["paths"][template][m];
        if op.get("security").is_none() {
            continue;
        }
        let method = Method::from_bytes(m.to_uppercase().as_bytes()).expect("a method");
        let path = template.replace("{id}", &audit.to_string()).replace("{site}", &site_id.to_string());
        let (status, v) = c.call(None, method.clone(), template, &path, None).await;
        assert_eq!(status, 401, "{method} {template} without a token: {v}");
        if op["responses"].get("403").is_some() {
            // No body: the scope is refused before a body is read.
            let (status, v) = c.call(Some(&secret), method.clone(), template, &path, None).await;
            assert_eq!(status, 403, "{method} {template} with a site token: {v}");
        }
    }

    c.admin(Method::DELETE, "/v1/tokens/{id}", &format!("/v1/tokens/{tok_id}"), None, 200).await;
    c.admin(Method::DELETE, "/v1/tokens/{id}", &format!("/v1/tokens/{tok_id}"), None, 404).await;

    let declared: BTreeSet<(String, String)> = ops.iter().map(|(m, p)| (m.to_uppercase(), p.clone())).collect();
    assert_eq!(c.called, declared, "every declared operation is called");
}
