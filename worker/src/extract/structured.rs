//! Structured data of a page: JSON-LD blocks, microdata and RDFa Lite, read from the tree the page
//! was already parsed into (bounded by `crate::parse`), as a small owned tree of [`Item`]s that
//! `crate::checks::structured` validates.
//!
//! Why our own extractor: the Rust crates that extract structured data (schemaorg-validate 0.3,
//! microdata 0.1, graph-rdfa-processor, "WIP") are young one-person projects that parse the
//! HTML again themselves, with their own (older) scraper and without our parse bounds, so a
//! hostile page could cost them hours; the part we need (items, their types and properties) is
//! small on top of the tree we have, and serde_json, already in the build, parses JSON-LD with a
//! nesting limit of its own.
//!
//! Everything is capped: blocks and bytes of JSON-LD per page, items and properties per page,
//! the length of every text kept, the types listed. Over a cap the rest is skipped and
//! [`StructuredData::truncated`] says so; nothing panics and nothing grows without bound.
//!
//! What is left out: JSON-LD is read as Google reads it in practice (terms of a schema.org
//! `@context`, full schema.org IRIs, the `schema:` prefix), not expanded by a JSON-LD processor
//! (no remote contexts); microdata `itemref` is not followed; RDFa beyond Lite (`about`, `rel`,
//! `rev`, CURIEs other than `schema:`) is not read.

use super::tree::{Step, attr, walk_events};
use super::{NodeRef, is_html, truncate_str};
use scraper::node::Element;
use scraper::{Html, Node};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// JSON-LD blocks read per page; more are counted as truncated.
pub const MAX_JSONLD_BLOCKS: usize = 32;
/// Bytes of one JSON-LD block read at most; a larger block is reported, not parsed.
pub const MAX_JSONLD_BYTES: usize = 512 * 1024;
/// Bytes of JSON-LD read per page at most, all blocks together.
pub const MAX_JSONLD_PAGE_BYTES: usize = 1024 * 1024;
/// Items and properties kept per page, all formats together.
pub const MAX_NODES: usize = 5_000;
/// Items nest this deep at most (deeper values are dropped).
pub const MAX_ITEM_DEPTH: usize = 16;
/// Characters kept of a text value.
pub const MAX_VALUE_CHARS: usize = 200;
/// Distinct types listed per page ([`StructuredData::types`]).
pub const MAX_TYPES: usize = 64;
/// Parse errors kept per page.
pub const MAX_ERRORS: usize = 10;

const SCHEMA_HOSTS: [&str; 2] = ["schema.org/", "schema.org"];

/// Where an item was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Syntax {
    /// `<script type="application/ld+json">`.
    JsonLd,
    /// `itemscope` / `itemprop`.
    Microdata,
    /// `vocab` / `typeof` / `property`.
    Rdfa,
}

/// A property value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Value {
    /// Text (a JSON string, an attribute, an element's text), at most [`MAX_VALUE_CHARS`].
    Text(String),
    /// A JSON number, as written.
    Number(String),
    /// A JSON boolean.
    Bool(bool),
    /// A nested item.
    Item(Box<Item>),
}

/// One item: its types and its properties in document order (a repeated property is repeated).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// Types, short names for Schema.org ones (`Product`, from `https://schema.org/Product` or
    /// `schema:Product`), anything else as written.
    pub types: Vec<String>,
    /// The item is in the Schema.org vocabulary (a schema.org `@context`, `itemtype` or `vocab`).
    pub schema_org: bool,
    /// (property, value), property names shortened like types.
    pub props: Vec<(String, Value)>,
}

impl Item {
    /// The values of one property.
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.props.iter().filter(move |(n, _)| n == name).map(|(_, v)| v)
    }

    /// Whether the property is given with a non-empty value.
    #[must_use]
    pub fn has(&self, name: &str) -> bool {
        self.values(name).any(|v| !matches!(v, Value::Text(t) if t.trim().is_empty()))
    }
}

/// A top-level item and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// JSON-LD, microdata or RDFa.
    pub syntax: Syntax,
    /// The item.
    pub item: Item,
}

/// The structured data of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructuredData {
    /// Top-level items, in document order (JSON-LD `@graph` members are top-level).
    pub items: Vec<Found>,
    /// JSON-LD blocks that could not be read: the parser's message, or why not (at most
    /// [`MAX_ERRORS`]).
    pub errors: Vec<String>,
    /// Every type found (nested items' too), each once, first found first, at most [`MAX_TYPES`].
    pub types: Vec<String>,
    /// A cap was reached: blocks, bytes or items past it were not read.
    pub truncated: bool,
}

/// Reads the page's structured data from its parsed tree.
#[must_use]
pub fn collect(doc: &Html) -> StructuredData {
    let mut c = Collector::default();
    walk_events(doc, |step| c.step(step));
    c.finish()
}

/// A shortened Schema.org name: `https://schema.org/Product`, `http://schema.org/Product` and
/// `schema:Product` are `Product`; the bool says whether it named Schema.org.
fn short_name(name: &str) -> (String, bool) {
    let t = name.trim();
    for prefix in ["https://schema.org/", "http://schema.org/", "https://www.schema.org/", "http://www.schema.org/"] {
        if let Some(rest) = t.strip_prefix(prefix) {
            return (truncate_str(rest, MAX_VALUE_CHARS), true);
        }
    }
    if let Some(rest) = t.strip_prefix("schema:") {
        return (truncate_str(rest, MAX_VALUE_CHARS), true);
    }
    (truncate_str(t, MAX_VALUE_CHARS), false)
}

fn text_value(s: &str) -> Value {
    Value::Text(s.trim().chars().take(MAX_VALUE_CHARS).collect())
}

/// An item being read from microdata or RDFa: its element's depth in the walk, and the property
/// name it fills in its parent (if any).
#[derive(Debug)]
struct Open {
    item: Item,
    syntax: Syntax,
    fills: Option<Vec<String>>,
    /// The number of open elements when it was entered (its element's exit closes it).
    depth: usize,
}

/// A property whose value is its element's text, being collected.
#[derive(Debug)]
struct OpenText {
    names: Vec<String>,
    text: String,
    /// Index into `Collector::items` of the item it belongs to.
    owner: usize,
    depth: usize,
}

#[derive(Debug, Default)]
struct Collector {
    out: StructuredData,
    nodes: usize,
    jsonld_blocks: usize,
    jsonld_bytes: usize,
    /// Open elements (depth of the walk).
    depth: usize,
    /// Open microdata / RDFa items, innermost last.
    items: Vec<Open>,
    texts: Vec<OpenText>,
    /// RDFa `vocab` in force (schema.org or not), innermost last, with the depth that set it.
    vocab: Vec<(bool, usize)>,
}

impl Collector {
    fn step(&mut self, step: Step<'_>) -> bool {
        match step {
            Step::Enter(node) => self.enter(node),
            Step::Exit(node) => {
                self.exit(node);
                true
            }
        }
    }

    fn budget(&mut self) -> bool {
        if self.nodes >= MAX_NODES {
            self.out.truncated = true;
            return false;
        }
        self.nodes += 1;
        true
    }

    fn note_type(&mut self, t: &str) {
        if self.out.types.iter().any(|x| x == t) {
            return;
        }
        if self.out.types.len() >= MAX_TYPES {
            self.out.truncated = true;
            return;
        }
        self.out.types.push(t.to_owned());
    }

    fn error(&mut self, e: String) {
        if self.out.errors.len() < MAX_ERRORS {
            self.out.errors.push(e);
        }
    }

    fn enter(&mut self, node: NodeRef<'_>) -> bool {
        match node.value() {
            Node::Text(t) => {
                for open in &mut self.texts {
                    let room = (MAX_VALUE_CHARS * 4).saturating_sub(open.text.len());
                    open.text.push_str(&truncate_str(t, room));
                }
                false
            }
            Node::Element(el) if is_html(el) => {
                if el.name() == "script" {
                    self.script(node, el);
                    return false;
                }
                self.depth += 1;
                self.element(el);
                true
            }
            Node::Element(_) | Node::Document => {
                self.depth += 1;
                true
            }
            _ => false,
        }
    }

    fn exit(&mut self, node: NodeRef<'_>) {
        if !matches!(node.value(), Node::Element(_) | Node::Document) {
            return;
        }
        while self.texts.last().is_some_and(|t| t.depth == self.depth) {
            if let Some(t) = self.texts.pop() {
                let value = text_value(&t.text);
                if let Some(owner) = self.items.get_mut(t.owner) {
                    for name in t.names {
                        owner.item.props.push((name, value.clone()));
                    }
                }
            }
        }
        while self.items.last().is_some_and(|o| o.depth == self.depth) {
            if let Some(open) = self.items.pop() {
                self.close(open);
            }
        }
        while self.vocab.last().is_some_and(|(_, d)| *d == self.depth) {
            self.vocab.pop();
        }
        self.depth = self.depth.saturating_sub(1);
    }

    /// A finished microdata or RDFa item: a property of the item around it, or top-level.
    fn close(&mut self, open: Open) {
        let depth = self.items.len();
        let (Some(mut names), Some(parent)) = (open.fills, self.items.last_mut()) else {
            self.out.items.push(Found { syntax: open.syntax, item: open.item });
            return;
        };
        if depth >= MAX_ITEM_DEPTH {
            self.out.truncated = true;
            return;
        }
        let last = names.pop();
        for name in names {
            parent.item.props.push((name, Value::Item(Box::new(open.item.clone()))));
        }
        if let Some(name) = last {
            parent.item.props.push((name, Value::Item(Box::new(open.item))));
        }
    }

    fn element(&mut self, el: &Element) {
        if let Some(vocab) = attr(el, "vocab") {
            let schema = SCHEMA_HOSTS.iter().any(|h| vocab.contains(h));
            self.vocab.push((schema, self.depth));
        }
        let microdata = attr(el, "itemscope").is_some();
        let rdfa = !microdata && attr(el, "typeof").is_some();
        let prop_attr = if microdata || attr(el, "itemprop").is_some() { "itemprop" } else { "property" };
        let names: Vec<String> = attr(el, prop_attr)
            .map(|p| p.split_ascii_whitespace().take(8).map(|n| short_name(n).0).collect())
            .unwrap_or_default();
        if (microdata || rdfa) && self.budget() {
            let (types_attr, syntax) =
                if microdata { ("itemtype", Syntax::Microdata) } else { ("typeof", Syntax::Rdfa) };
            let mut item = Item::default();
            let vocab_schema = self.vocab.last().is_some_and(|(s, _)| *s);
            for t in attr(el, types_attr).unwrap_or("").split_ascii_whitespace().take(8) {
                let (name, schema) = short_name(t);
                item.schema_org |= schema || (rdfa && vocab_schema);
                self.note_type(&name);
                item.types.push(name);
            }
            let fills = (!names.is_empty() && !self.items.is_empty()).then_some(names);
            self.items.push(Open { item, syntax, fills, depth: self.depth });
            return;
        }
        if names.is_empty() || self.items.is_empty() || !self.budget() {
            return;
        }
        let owner = self.items.len() - 1;
        let attr_value = match el.name() {
            "meta" => attr(el, "content"),
            "audio" | "embed" | "iframe" | "img" | "source" | "track" | "video" => attr(el, "src"),
            "a" | "area" | "link" => attr(el, "href"),
            "object" => attr(el, "data"),
            "data" | "meter" => attr(el, "value"),
            "time" => attr(el, "datetime"),
            _ => None,
        }
        .or_else(|| attr(el, "content"));
        match attr_value {
            Some(v) => {
                if let Some(open) = self.items.get_mut(owner) {
                    for name in names {
                        open.item.props.push((name, text_value(v)));
                    }
                }
            }
            None if self.texts.len() < MAX_ITEM_DEPTH => {
                self.texts.push(OpenText { names, text: String::new(), owner, depth: self.depth });
            }
            None => self.out.truncated = true,
        }
    }

    fn script(&mut self, node: NodeRef<'_>, el: &Element) {
        let kind = attr(el, "type").unwrap_or("").split(';').next().unwrap_or("").trim();
        if !kind.eq_ignore_ascii_case("application/ld+json") {
            return;
        }
        if self.jsonld_blocks >= MAX_JSONLD_BLOCKS {
            self.out.truncated = true;
            return;
        }
        self.jsonld_blocks += 1;
        let mut body = String::new();
        for child in node.children() {
            if let Node::Text(t) = child.value() {
                if body.len() + t.len() > MAX_JSONLD_BYTES {
                    self.error(format!("a JSON-LD block over {MAX_JSONLD_BYTES} bytes was not read"));
                    return;
                }
                body.push_str(t);
            }
        }
        if self.jsonld_bytes + body.len() > MAX_JSONLD_PAGE_BYTES {
            self.out.truncated = true;
            return;
        }
        self.jsonld_bytes += body.len();
        match serde_json::from_str::<Json>(&body) {
            Ok(json) => self.jsonld_root(&json),
            Err(e) => self.error(format!("JSON-LD does not parse: {e}")),
        }
    }

    fn jsonld_root(&mut self, json: &Json) {
        match json {
            Json::Array(list) => {
                for v in list {
                    self.jsonld_root(v);
                }
            }
            Json::Object(map) => {
                let schema = map.get("@context").is_some_and(names_schema_org);
                if let Some(graph) = map.get("@graph") {
                    let members: Vec<&Json> = match graph {
                        Json::Array(list) => list.iter().collect(),
                        other => vec![other],
                    };
                    for m in members {
                        if let Json::Object(_) = m
                            && let Some(item) = self.jsonld_item(m, schema, 0)
                        {
                            self.out.items.push(Found { syntax: Syntax::JsonLd, item });
                        }
                    }
                } else if let Some(item) = self.jsonld_item(json, schema, 0) {
                    self.out.items.push(Found { syntax: Syntax::JsonLd, item });
                }
            }
            _ => self.error("JSON-LD is neither an object nor an array of objects".to_owned()),
        }
    }

    /// An object as an item; its own `@context` (if any) decides its vocabulary, else its parent's.
    fn jsonld_item(&mut self, json: &Json, parent_schema: bool, depth: usize) -> Option<Item> {
        let Json::Object(map) = json else { return None };
        if depth >= MAX_ITEM_DEPTH || !self.budget() {
            self.out.truncated |= depth >= MAX_ITEM_DEPTH;
            return None;
        }
        let schema = map.get("@context").map_or(parent_schema, names_schema_org);
        let mut item = Item { schema_org: schema, ..Item::default() };
        let types: Vec<&str> = match map.get("@type") {
            Some(Json::String(t)) => vec![t.as_str()],
            Some(Json::Array(list)) => list.iter().filter_map(Json::as_str).take(8).collect(),
            _ => Vec::new(),
        };
        for t in types {
            let (name, iri) = short_name(t);
            item.schema_org |= iri;
            self.note_type(&name);
            item.types.push(name);
        }
        for (key, value) in map {
            if key.starts_with('@') {
                continue;
            }
            let name = short_name(key).0;
            let values: Vec<&Json> = match value {
                Json::Array(list) => list.iter().collect(),
                other => vec![other],
            };
            for v in values {
                if !self.budget() {
                    return Some(item);
                }
                let converted = match v {
                    Json::Null | Json::Array(_) => None,
                    Json::Bool(b) => Some(Value::Bool(*b)),
                    Json::Number(n) => Some(Value::Number(n.to_string())),
                    Json::String(s) => Some(text_value(s)),
                    Json::Object(inner) => match (inner.get("@value"), inner.get("@id")) {
                        (Some(Json::String(s)), _) => Some(text_value(s)),
                        (Some(Json::Number(n)), _) => Some(Value::Number(n.to_string())),
                        (None, Some(Json::String(id))) if inner.len() == 1 => Some(text_value(id)),
                        _ => self.jsonld_item(v, item.schema_org, depth + 1).map(|i| Value::Item(Box::new(i))),
                    },
                };
                if let Some(v) = converted {
                    item.props.push((name.clone(), v));
                }
            }
        }
        Some(item)
    }

    fn finish(mut self) -> StructuredData {
        // Items still open at the end of the document (the walk always exits, but be sure).
        while let Some(open) = self.items.pop() {
            self.close(open);
        }
        self.out
    }
}

/// Whether a JSON-LD `@context` names Schema.org (a string, an array holding one, or an object
/// whose `@vocab` does).
fn names_schema_org(context: &Json) -> bool {
    match context {
        Json::String(s) => SCHEMA_HOSTS.iter().any(|h| s.contains(h)),
        Json::Array(list) => list.iter().take(16).any(names_schema_org),
        Json::Object(map) => map.get("@vocab").is_some_and(names_schema_org),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(html: &str) -> StructuredData {
        collect(&Html::parse_document(html))
    }

    #[test]
    fn json_ld_items_graphs_and_nested_values() {
        let d = data(
            r#"<script type="application/ld+json">{"@context":"https://schema.org","@graph":[
                {"@type":"Product","name":"Widget","offers":{"@type":"Offer","price":19.99,"priceCurrency":"EUR"}},
                {"@type":["Organization","Thing"],"url":{"@id":"https://a.test/"}}]}</script>
               <script type="application/LD+JSON; charset=utf-8">[{"@context":{"@vocab":"http://schema.org/"},"@type":"schema:BreadcrumbList"}]</script>"#,
        );
        assert!(d.errors.is_empty(), "{:?}", d.errors);
        assert_eq!(d.types, ["Product", "Offer", "Organization", "Thing", "BreadcrumbList"]);
        let product = &d.items[0].item;
        assert!(product.schema_org);
        let Some(Value::Item(offer)) = product.values("offers").next() else { panic!("{product:?}") };
        assert_eq!(offer.values("price").next(), Some(&Value::Number("19.99".into())));
        assert_eq!(d.items[1].item.values("url").next(), Some(&Value::Text("https://a.test/".into())));
        assert!(d.items[2].item.schema_org);
    }

    #[test]
    fn unparsable_json_ld_keeps_the_parsers_message() {
        let d = data(r#"<script type="application/ld+json">{"@type": "Product", "name": }</script>"#);
        assert_eq!(d.errors.len(), 1);
        assert!(d.errors[0].contains("line 1 column"), "{:?}", d.errors);
        let d = data(r#"<script type="application/ld+json">"just a string"</script>"#);
        assert_eq!(d.errors.len(), 1, "{d:?}");
    }

    #[test]
    fn microdata_and_rdfa_items() {
        let d = data(
            r#"<div itemscope itemtype="https://schema.org/Product"><h2 itemprop="name">Widget <b>Pro</b></h2>
                 <img itemprop="image" src="/w.png">
                 <div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
                   <meta itemprop="price" content="10.00"><span itemprop="priceCurrency">EUR</span></div></div>
               <div vocab="https://schema.org/" typeof="Event"><span property="name">Launch</span>
                 <time property="startDate" datetime="2026-05-01">May</time></div>"#,
        );
        assert_eq!(d.items.len(), 2, "{d:?}");
        let product = &d.items[0];
        assert_eq!((product.syntax, product.item.types.as_slice()), (Syntax::Microdata, &["Product".to_owned()][..]));
        assert_eq!(product.item.values("name").next(), Some(&Value::Text("Widget Pro".into())));
        assert_eq!(product.item.values("image").next(), Some(&Value::Text("/w.png".into())));
        let Some(Value::Item(offer)) = product.item.values("offers").next() else { panic!("{product:?}") };
        assert_eq!(offer.values("priceCurrency").next(), Some(&Value::Text("EUR".into())));
        let event = &d.items[1];
        assert_eq!(event.syntax, Syntax::Rdfa);
        assert!(event.item.schema_org);
        assert_eq!(event.item.values("startDate").next(), Some(&Value::Text("2026-05-01".into())));
    }

    #[test]
    fn hostile_structured_data_is_bounded() {
        // Nested deeper than serde_json's recursion limit: an error, not a stack overflow.
        let deep =
            format!(r#"<script type="application/ld+json">{}1{}</script>"#, "[".repeat(100_000), "]".repeat(100_000));
        let d = data(&deep);
        assert_eq!(d.errors.len(), 1);
        assert!(d.errors[0].contains("recursion limit"), "{:?}", d.errors);
        // Objects nested deeper than items go: kept to MAX_ITEM_DEPTH.
        let nested = format!(
            r#"<script type="application/ld+json">{}{{"@type":"Thing"}}{}</script>"#,
            r#"{"@context":"https://schema.org","@type":"Thing","x":"#.repeat(60),
            "}".repeat(60)
        );
        let d = data(&nested);
        assert!(d.truncated && d.errors.is_empty(), "{d:?}");
        // Tens of thousands of items: capped.
        let many: String = (0..10_000).map(|i| format!(r#"{{"@type":"T{i}","name":"n"}},"#)).collect();
        let html = format!(r#"<script type="application/ld+json">[{}{{}}]</script>"#, many);
        let d = data(&html);
        assert!(d.truncated);
        assert_eq!(d.types.len(), MAX_TYPES);
        assert!(d.items.len() <= MAX_NODES);
        // Too many and too large blocks.
        let big = format!(r#"<script type="application/ld+json">"{}"</script>"#, "x".repeat(MAX_JSONLD_BYTES + 1));
        let d = data(&big);
        assert!(d.errors[0].contains("over"), "{:?}", d.errors);
        let blocks = r#"<script type="application/ld+json">{"@type":"Thing"}</script>"#.repeat(MAX_JSONLD_BLOCKS + 5);
        let d = data(&blocks);
        assert!(d.truncated && d.items.len() == MAX_JSONLD_BLOCKS, "{}", d.items.len());
        // Thousands of nested microdata scopes.
        let scopes = format!(
            "{}{}",
            r#"<div itemscope itemtype="https://schema.org/Thing" itemprop="x">"#.repeat(3_000),
            "</div>".repeat(3_000)
        );
        let d = data(&scopes);
        assert!(d.items.len() <= MAX_NODES);
    }

    #[test]
    fn invalid_utf8_and_junk_do_not_panic() {
        let bytes = b"<script type=\"application/ld+json\">{\"name\": \"\xff\xfe\"}</script><div itemscope itemprop>\xc3(</div>";
        let html = String::from_utf8_lossy(bytes);
        let d = data(&html);
        assert_eq!(d.items.len(), 2, "{d:?}");
    }
}
