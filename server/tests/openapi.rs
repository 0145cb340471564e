//! The coordinator's OpenAPI document (issue 42): the committed docs/openapi.json is the generated
//! one, it describes exactly the routes of the access table (and itself), each with the security,
//! 401 and 403 its scope implies, and a real OpenAPI validator accepts it. Calling every route of
//! a running coordinator with the declared shapes is the end-to-end test `openapi::` of
//! shoal-tests.
//!
//! After a change to the API: `SHOAL_BLESS=1 cargo test -p shoal-server --test openapi`.

use serde_json::Value;
use shoal_server::api::openapi_json;
use shoal_server::auth::access::{self, Need};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn committed_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json")
}

fn generated() -> Value {
    serde_json::from_str(&openapi_json()).expect("the document is JSON")
}

#[test]
fn committed_document_is_the_generated_one() {
    let fresh = openapi_json();
    let path = committed_path();
    if std::env::var_os("SHOAL_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write docs/openapi.json");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "docs/openapi.json differs from the document the code generates: \
         SHOAL_BLESS=1 cargo test -p shoal-server --test openapi (and review the diff)"
    );
}

#[test]
fn generating_twice_gives_the_same_text() {
    assert_eq!(openapi_json(), openapi_json(), "the key order must not depend on hashing");
}

/// Every (method, path) the document describes.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("a path item").keys() {
            ops.insert((method.to_uppercase(), path.clone()));
        }
    }
    ops
}

#[test]
fn the_document_describes_exactly_the_routes_of_the_access_table_and_itself() {
    let doc = generated();
    // `/mcp` speaks MCP, which describes its own tools (`tools/list`), not OpenAPI.
    let mut routes: BTreeSet<(String, String)> = access::ROUTES
        .iter()
        .filter(|(_, p, _)| *p != access::MCP)
        .map(|(m, p, _)| (m.as_str().to_owned(), (*p).to_owned()))
        .collect();
    routes.insert(("GET".to_owned(), "/v1/openapi.json".to_owned()));
    assert_eq!(operations(&doc), routes, "a route without its description, or a description without its route");
}

#[test]
fn every_token_route_names_its_bearer_scheme_401_and_the_403_of_its_scope() {
    let doc = generated();
    assert_eq!(doc["openapi"].as_str().map(|v| &v[..4]), Some("3.1."), "OpenAPI 3.1");
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    for (method, path, action) in access::ROUTES.iter().filter(|(_, p, _)| *p != access::MCP) {
        let op = &doc["paths"][*path][method.as_str().to_lowercase()];
        let what = format!("{method} {path}");
        assert_eq!(op["security"], serde_json::json!([{ "bearer": [] }]), "{what}");
        let responses = op["responses"].as_object().expect("responses");
        assert!(responses.contains_key("401"), "{what}");
        assert!(responses.contains_key("500"), "{what}");
        let need = access::need(*action);
        assert_eq!(
            responses.contains_key("403"),
            need != Need::ReadOrSite,
            "{what}: a 403 unless every scope may call it"
        );
        let needs = format!("Needs {}.", need.says());
        assert!(op["description"].as_str().is_some_and(|d| d.ends_with(&needs)), "{what}: {needs}");
        for (code, r) in responses {
            if code.starts_with('4') {
                assert_eq!(
                    r["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                    "{what} {code}: errors are {{\"error\": ...}}"
                );
            }
        }
    }
    // Generated clients name their methods after these: one each, and not a bare handler name.
    let ids: Vec<&str> = doc["paths"]
        .as_object()
        .expect("paths")
        .values()
        .flat_map(|item| item.as_object().expect("item").values())
        .map(|op| op["operationId"].as_str().expect("an operationId"))
        .collect();
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len(), "operationIds repeat: {ids:?}");
    assert!(ids.iter().all(|id| id.contains('_')), "verb_noun operationIds: {ids:?}");
    let public = &doc["paths"]["/v1/openapi.json"]["get"];
    assert!(public.get("security").is_none(), "the document itself needs no token");
}

/// `python3 -m openapi_spec_validator FILE`: whether the validator accepts it, and what it said.
fn validate(file: &Path) -> (bool, String) {
    // The machine's python3 has the validator on this project's kind of machine; elsewhere
    // scripts/test.sh's install step puts it into a venv under target/.
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/openapi-venv/bin/python3");
    for python in ["python3", venv] {
        let has = Command::new(python).args(["-c", "import openapi_spec_validator"]).output();
        if !has.is_ok_and(|o| o.status.success()) {
            continue;
        }
        let out = Command::new(python)
            .args(["-m", "openapi_spec_validator", "--schema", "3.1"])
            .arg(file)
            .output()
            .expect("python3 runs");
        // Its message quotes the whole document after the error: the error is what matters.
        let said: String = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
            .chars()
            .take(600)
            .collect();
        return (out.status.success(), said);
    }
    panic!(
        "no python3 with openapi_spec_validator: run scripts/test.sh's install step (apt-get install python3-openapi-spec-validator)"
    );
}

#[test]
fn a_real_openapi_validator_accepts_the_document_and_refuses_a_broken_one() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let good = dir.join("shoal-openapi.json");
    std::fs::write(&good, openapi_json()).expect("write");
    let (ok, said) = validate(&good);
    assert!(ok, "openapi-spec-validator refused the document: {said}");

    // The same document with a response that lacks its required description and a reference to
    // a schema that does not exist: if the validator passed this, its verdict above meant nothing.
    let mut broken = generated();
    broken["paths"]["/v1/audits"]["get"]["responses"]["200"] = serde_json::json!({
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Nothing" } } }
    });
    let bad = dir.join("shoal-openapi-broken.json");
    std::fs::write(&bad, serde_json::to_string(&broken).expect("JSON")).expect("write");
    let (ok, said) = validate(&bad);
    assert!(!ok, "the validator accepted a broken document: {said}");
}
