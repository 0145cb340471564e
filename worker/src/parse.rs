//! HTML text to a `scraper::Html` tree with a bound on work, not only on bytes (SPEC §7: "anything
//! over a cap is a finding, never a crash").
//!
//! html5ever's tree builder is not linear on hostile markup. Nearly every start tag checks a scope
//! ("is there a `<p>` in button scope?") by walking the stack of open elements down to a scope
//! boundary, and `<div>` is no boundary: N unclosed `<div>` cost about N²/2 steps (issue 9: 10,000
//! of them took 0.7 s, 100,000 a minute; 1,000,000 fit under the 5 MB body cap). Other markup
//! nests without being quadratic in the parser (a million unclosed `<b>`, tables in cells) but
//! still builds a tree a million deep for everything downstream, and shallow markup can be
//! quadratic too (500 levels, then a million `<p>`, each scanning all 500).
//!
//! [`parse_bounded`] runs the same parser (same options as `Html::parse_document`) through a sink
//! that wraps scraper's own and watches two numbers:
//!
//! - **depth**: the tree depth of every node inserted. Past [`ParseLimits::max_depth`] the parse is
//!   cut. The default, [`DEFAULT_MAX_DEPTH`], is Blink's: Chrome stops nesting at 512 levels, so no
//!   page that renders as its author meant is deeper. The depth is the tree builder's own answer
//!   (optional end tags, void elements and misnesting are resolved by the real algorithm), not a
//!   guess from the tokens.
//! - **work**: every call the tree builder makes into the sink, plus the sink's own steps. Scope
//!   checks call `elem_name` once per element they walk past and formatting-list searches call
//!   `same_node` once per entry, so this count follows the tree builder's real cost whatever
//!   markup causes it, shallow or deep. Past [`ParseLimits::max_work`] the parse is cut.
//!
//! A cut freezes the tree: from then on the sink creates nodes but attaches none (the tree builder
//! still needs handles), and no more input is fed. Input goes in [`CHUNK`]-byte pieces, so after
//! the cut at most one chunk more is tokenised. The tree is what the document before the cut
//! built, as if it had ended there: links, title and everything else found so far are kept.
//!
//! The tokenizer has one cost the sink cannot see: it checks each attribute of a tag against the
//! tag's earlier ones, so one tag with N attributes costs N²/2 comparisons before the tree builder
//! sees it. [`attribute_flood`] finds the first tag with more than
//! [`ParseLimits::max_attributes`] by a linear scan first, and the parse stops before that tag.

use std::borrow::Cow;
use std::cell::{Cell, Ref};

use html5ever::driver::{self, ParseOpts};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{Html, HtmlTreeSink};
use serde::{Deserialize, Serialize};

/// Default for [`ParseLimits::max_depth`]: Blink's limit (`kMaximumHTMLParserDOMTreeDepth`).
pub const DEFAULT_MAX_DEPTH: usize = 512;
/// Default for [`ParseLimits::max_work`], in steps (tree-builder calls into the sink, and the
/// sink's own depth walk). Ordinary 5 MB pages (the body cap) measured 2 to 18 million steps, the
/// most for one 37 levels deep; the costliest markup measured takes 0.8 s to reach this many in a
/// release build (figures: `examples/parse_cost.rs`).
pub const DEFAULT_MAX_WORK: u64 = 200_000_000;
/// Input is fed to the parser in pieces of this many bytes (rounded up to a character boundary);
/// limits are checked between pieces, so a cut tokenises at most this much more.
pub const CHUNK: usize = 4 * 1024;

/// How much a parse may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// Deepest a node may be inserted (the `<html>` element is at depth 1).
    pub max_depth: usize,
    /// Most calls the tree builder may make into the sink.
    pub max_work: u64,
    /// Most attributes one tag may have (see [`DEFAULT_MAX_ATTRIBUTES`]).
    pub max_attributes: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits { max_depth: DEFAULT_MAX_DEPTH, max_work: DEFAULT_MAX_WORK, max_attributes: DEFAULT_MAX_ATTRIBUTES }
    }
}

/// Which limit stopped a parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CutReason {
    /// Elements nested deeper than [`ParseLimits::max_depth`].
    Depth,
    /// The tree builder's work passed [`ParseLimits::max_work`].
    Work,
    /// A tag had more than [`ParseLimits::max_attributes`] attributes (the parse stops before it).
    Attributes,
}

/// Where and why a parse stopped before the end of the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseCut {
    /// The limit that was passed.
    pub reason: CutReason,
    /// Its value ([`ParseLimits::max_depth`], [`ParseLimits::max_work`] or
    /// [`ParseLimits::max_attributes`]).
    pub limit: u64,
    /// Bytes fed to the parser when it stopped (the cut is in the last [`CHUNK`] of them).
    pub at_byte: usize,
    /// Length of the whole document, in bytes.
    pub total_bytes: usize,
}

/// A parsed document and what parsing it cost.
#[derive(Debug)]
pub struct Parsed {
    /// The tree; after a cut, of the part of the document before it.
    pub html: Html,
    /// Where and why the parse stopped early; `None` when the whole document was parsed.
    pub cut: Option<ParseCut>,
    /// Calls the tree builder made into the sink (the unit of [`ParseLimits::max_work`]).
    pub work: u64,
    /// Depth of the deepest node in the tree.
    pub depth: usize,
}

/// Parses a whole document like `Html::parse_document`, stopping at `limits`. Never panics on any
/// input; the work done is bounded by the limits plus one [`CHUNK`].
#[must_use]
pub fn parse_bounded(html: &str, limits: ParseLimits) -> Parsed {
    let sink = BoundedSink {
        inner: HtmlTreeSink::new(Html::new_document()),
        limits,
        deepest: Cell::new(0),
        work: Cell::new(0),
        cut: Cell::new(None),
        last: Cell::new(None),
    };
    // A tag with too many attributes: parse what comes before it, as if the document ended there.
    let flood = attribute_flood(html, limits.max_attributes);
    let text = flood.map_or(html, |at| &html[..at]);
    let mut parser = driver::parse_document(sink, ParseOpts::default());
    let mut fed = 0;
    while fed < text.len() && parser.tokenizer.sink.sink.cut.get().is_none() {
        let mut end = fed.saturating_add(CHUNK).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1; // ends at text.len() at the latest, which is a boundary
        }
        parser.process(StrTendril::from_slice(&text[fed..end]));
        fed = end;
    }
    let Finished { html: doc, cut: reason, work, depth } = parser.finish();
    let reason = reason.or(flood.map(|_| CutReason::Attributes));
    let cut = reason.map(|reason| ParseCut {
        reason,
        limit: match reason {
            CutReason::Depth => limits.max_depth as u64,
            CutReason::Work => limits.max_work,
            CutReason::Attributes => limits.max_attributes as u64,
        },
        at_byte: fed,
        total_bytes: html.len(),
    });
    Parsed { html: doc, cut, work, depth }
}

/// Default for [`ParseLimits::max_attributes`]. html5ever's tokenizer compares each attribute of a
/// tag with the tag's earlier ones, so a tag with N attributes costs N²/2 comparisons before the
/// tree builder (and the bounded sink) sees it: 50,000 of them took 0.46 s, one 5 MB tag would take
/// hours. At this many per tag, 5 MB of such tags (distinct names) parse in 0.23 s
/// (`examples/parse_cost.rs attrs-tags`). Real elements carry a few dozen at most.
pub const DEFAULT_MAX_ATTRIBUTES: usize = 256;

/// Where the first tag with more than `max` attributes starts (the byte of its `<`), by a linear
/// scan that follows the HTML tokenizer's tag states closely enough to count attributes: quoted
/// values may hold `>` and spaces, comments, doctypes and processing instructions hold no tags, and
/// the text of `script`, `style`, `textarea`, `title`, `xmp`, `iframe`, `noembed` and `noframes`
/// holds no tags until its own end tag. It can only count too many where the real tokenizer would
/// not (never too few for start tags), so a page it lets through cannot take the quadratic path.
#[must_use]
pub fn attribute_flood(html: &str, max: usize) -> Option<usize> {
    const RAW_TEXT: [&[u8]; 8] =
        [b"script", b"style", b"textarea", b"title", b"xmp", b"iframe", b"noembed", b"noframes"];
    #[derive(Clone, Copy)]
    enum State {
        Data,
        TagName,
        BeforeName,
        Name,
        AfterName,
        BeforeValue,
        Quoted(u8),
        AfterQuoted,
        Unquoted,
    }
    let bytes = html.as_bytes();
    let mut state = State::Data;
    let (mut tag_start, mut attrs, mut end_tag) = (0usize, 0usize, false);
    let mut name = [0u8; 8];
    let mut name_len = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        let c = bytes[i];
        let space = matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c');
        // A tag ends: leave the tag states, skip the text of a raw-text element.
        let mut close = false;
        state = match state {
            State::Data => {
                if c == b'<' {
                    let rest = &bytes[i + 1..];
                    if rest.starts_with(b"!--") {
                        i = find(bytes, i + 4, b"-->").map_or(bytes.len(), |e| e + 3);
                        continue;
                    }
                    if rest.first().is_some_and(|b| *b == b'!' || *b == b'?') {
                        i = find(bytes, i + 1, b">").map_or(bytes.len(), |e| e + 1);
                        continue;
                    }
                    end_tag = rest.first() == Some(&b'/');
                    let first = rest.get(usize::from(end_tag)).copied().unwrap_or(0);
                    if first.is_ascii_alphabetic() {
                        tag_start = i;
                        attrs = 0;
                        name_len = 0;
                        i += 1 + usize::from(end_tag);
                        state = State::TagName;
                        continue;
                    }
                }
                State::Data
            }
            State::TagName if space => State::BeforeName,
            State::TagName if c == b'/' => State::BeforeName,
            State::TagName if c == b'>' => {
                close = true;
                State::Data
            }
            State::TagName => {
                if name_len < name.len() {
                    name[name_len] = c.to_ascii_lowercase();
                }
                name_len += 1;
                State::TagName
            }
            State::BeforeName | State::AfterQuoted if space || c == b'/' => State::BeforeName,
            State::BeforeName | State::AfterName | State::AfterQuoted | State::Unquoted if c == b'>' => {
                close = true;
                State::Data
            }
            State::BeforeName | State::AfterQuoted => {
                attrs += 1;
                State::Name
            }
            State::Name if space => State::AfterName,
            State::Name if c == b'/' => State::BeforeName,
            State::Name | State::AfterName if c == b'=' => State::BeforeValue,
            State::Name if c == b'>' => {
                close = true;
                State::Data
            }
            State::Name => State::Name,
            State::AfterName if space => State::AfterName,
            State::AfterName if c == b'/' => State::BeforeName,
            State::AfterName => {
                attrs += 1;
                State::Name
            }
            State::BeforeValue if space => State::BeforeValue,
            State::BeforeValue if c == b'"' || c == b'\'' => State::Quoted(c),
            State::BeforeValue if c == b'>' => {
                close = true;
                State::Data
            }
            State::BeforeValue => State::Unquoted,
            State::Quoted(q) if c == q => State::AfterQuoted,
            State::Quoted(q) => State::Quoted(q),
            State::Unquoted if space => State::BeforeName,
            State::Unquoted => State::Unquoted,
        };
        if attrs > max {
            return Some(tag_start);
        }
        i += 1;
        if close && !end_tag {
            let tag = &name[..name_len.min(name.len())];
            if name_len <= name.len() && RAW_TEXT.contains(&tag) {
                // Skip to `</name`, where the tokenizer leaves the raw text.
                let mut j = i;
                i = loop {
                    match find(bytes, j, b"</") {
                        Some(at)
                            if bytes.len() >= at + 2 + tag.len()
                                && bytes[at + 2..at + 2 + tag.len()].eq_ignore_ascii_case(tag) =>
                        {
                            break at;
                        }
                        Some(at) => j = at + 2,
                        None => break bytes.len(),
                    }
                };
            }
        }
    }
    None
}

/// The first position of `needle` in `hay` at or after `from`.
fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

/// What the sink hands back when the parser finishes.
struct Finished {
    html: Html,
    cut: Option<CutReason>,
    work: u64,
    depth: usize,
}

type Handle = <HtmlTreeSink as TreeSink>::Handle;

/// scraper's sink, with depth and work counted and the tree frozen at the first cut.
struct BoundedSink {
    inner: HtmlTreeSink,
    limits: ParseLimits,
    deepest: Cell<usize>,
    work: Cell<u64>,
    cut: Cell<Option<CutReason>>,
    /// The last node whose children's depth was computed, and that depth. Siblings (list items,
    /// paragraphs, `<br>`s) are attached one after another, so most lookups take one step. Forgotten
    /// whenever a node that could be its ancestor moves.
    last: Cell<Option<(Handle, usize)>>,
}

impl BoundedSink {
    fn charge(&self, units: u64) {
        let work = self.work.get().saturating_add(units);
        self.work.set(work);
        if work > self.limits.max_work && self.cut.get().is_none() {
            self.cut.set(Some(CutReason::Work));
        }
    }

    fn frozen(&self) -> bool {
        self.cut.get().is_some()
    }

    /// How deep a child of `parent` would be: `parent`'s ancestors counted up the tree, at most
    /// one past the limit. A walk rather than a node → depth table: it is what the tree says now
    /// (nodes move: adoption agency, foster parenting), it costs no memory, and on ordinary pages
    /// it is cheaper than a table insert per element. Charged as work, one unit per step.
    fn child_depth(&self, parent: &Handle) -> usize {
        if let Some((last, depth)) = self.last.get()
            && last == *parent
        {
            self.charge(1);
            return depth;
        }
        let steps = self
            .inner
            .0
            .borrow()
            .tree
            .get(*parent)
            .map_or(0, |p| p.ancestors().take(self.limits.max_depth.saturating_add(1)).count());
        self.charge(units(steps));
        self.last.set(Some((*parent, steps + 1)));
        steps + 1
    }

    /// Before `child` is attached: a node with a parent or children of its own moves a subtree,
    /// which may hold the remembered node.
    fn moving(&self, child: &NodeOrText<Handle>) {
        if let NodeOrText::AppendNode(node) = child
            && self.inner.0.borrow().tree.get(*node).is_some_and(|n| n.parent().is_some() || n.has_children())
        {
            self.last.set(None);
        }
    }

    /// Depth a node would get under `parent` (text needs none: it adds no level).
    fn depth_under(&self, parent: &Handle, child: &NodeOrText<Handle>) -> usize {
        match child {
            NodeOrText::AppendNode(_) => self.child_depth(parent),
            NodeOrText::AppendText(_) => 0,
        }
    }

    /// Whether a node may be attached at `depth`; past the limit, cuts the parse instead. Text
    /// and comments only need the tree unfrozen.
    fn attach(&self, child: &NodeOrText<Handle>, depth: usize) -> bool {
        match child {
            _ if self.frozen() => false,
            NodeOrText::AppendNode(_) => self.within_depth(depth),
            NodeOrText::AppendText(_) => true,
        }
    }

    /// Whether a node may go at `depth`; past the limit, cuts the parse instead.
    fn within_depth(&self, depth: usize) -> bool {
        if depth > self.limits.max_depth {
            self.cut.set(Some(CutReason::Depth));
            return false;
        }
        self.deepest.set(self.deepest.get().max(depth));
        true
    }

    fn has_parent(&self, node: &Handle) -> bool {
        self.inner.0.borrow().tree.get(*node).is_some_and(|n| n.parent().is_some())
    }
}

fn units(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl TreeSink for BoundedSink {
    type Handle = Handle;
    type Output = Finished;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Self::Output {
        Finished { html: self.inner.finish(), cut: self.cut.get(), work: self.work.get(), depth: self.deepest.get() }
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg);
    }

    fn get_document(&self) -> Handle {
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> Ref<'a, QualName> {
        self.charge(1);
        self.inner.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.charge(1 + units(attrs.len()));
        self.inner.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.charge(1);
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.charge(1);
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        self.charge(1);
        self.moving(&child);
        if self.attach(&child, self.depth_under(parent, &child)) {
            self.inner.append(parent, child);
        }
    }

    fn append_based_on_parent_node(&self, element: &Handle, prev_element: &Handle, child: NodeOrText<Handle>) {
        self.charge(1);
        self.moving(&child);
        // scraper inserts before `element` when it has a parent, else appends to `prev_element`.
        let depth = match &child {
            NodeOrText::AppendText(_) => 0,
            NodeOrText::AppendNode(_) if self.has_parent(element) => self.child_depth(element) - 1,
            NodeOrText::AppendNode(_) => self.child_depth(prev_element),
        };
        if self.attach(&child, depth) {
            self.inner.append_based_on_parent_node(element, prev_element, child);
        }
    }

    fn append_doctype_to_document(&self, name: StrTendril, public_id: StrTendril, system_id: StrTendril) {
        self.charge(1);
        if !self.frozen() {
            self.inner.append_doctype_to_document(name, public_id, system_id);
        }
    }

    fn mark_script_already_started(&self, node: &Handle) {
        self.inner.mark_script_already_started(node);
    }

    fn pop(&self, node: &Handle) {
        self.charge(1);
        self.inner.pop(node);
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.charge(1);
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.charge(1);
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        self.charge(1);
        self.moving(&new_node);
        // A sibling's depth is that of its children, less one.
        let depth = self.depth_under(sibling, &new_node).saturating_sub(1);
        if self.attach(&new_node, depth) {
            self.inner.append_before_sibling(sibling, new_node);
        }
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        // scraper inserts each new attribute into a sorted Vec: a shift of the existing ones.
        let existing =
            self.inner.0.borrow().tree.get(*target).and_then(|n| n.value().as_element().map(|e| e.attrs.len()));
        self.charge(units(attrs.len()).saturating_mul(1 + units(existing.unwrap_or(0))));
        if !self.frozen() {
            self.inner.add_attrs_if_missing(target, attrs);
        }
    }

    fn associate_with_form(&self, target: &Handle, form: &Handle, nodes: (&Handle, Option<&Handle>)) {
        self.charge(1);
        self.inner.associate_with_form(target, form, nodes);
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.charge(1);
        self.last.set(None);
        if !self.frozen() {
            self.inner.remove_from_parent(target);
        }
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        // scraper moves the children one by one.
        let children = self.inner.0.borrow().tree.get(*node).map_or(0, |n| n.children().count());
        self.charge(1 + units(children));
        if self.frozen() {
            return;
        }
        // The children's subtrees move along; insertions into them are checked where they land.
        self.last.set(None);
        if self.within_depth(self.child_depth(new_parent)) {
            self.inner.reparent_children(node, new_parent);
        }
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.charge(1);
        self.inner.is_mathml_annotation_xml_integration_point(handle)
    }

    fn set_current_line(&self, line_number: u64) {
        self.inner.set_current_line(line_number);
    }

    fn allow_declarative_shadow_roots(&self, intended_parent: &Handle) -> bool {
        self.inner.allow_declarative_shadow_roots(intended_parent)
    }

    fn attach_declarative_shadow(&self, location: &Handle, template: &Handle, attrs: &[Attribute]) -> bool {
        self.inner.attach_declarative_shadow(location, template, attrs)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &Handle) {
        self.inner.maybe_clone_an_option_into_selectedcontent(option);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scraper::Node;

    fn limits(max_depth: usize, max_work: u64) -> ParseLimits {
        ParseLimits { max_depth, max_work, ..ParseLimits::default() }
    }

    #[test]
    fn attribute_flood_finds_the_first_tag_over_the_limit() {
        let many = |n: usize, attr: &str| format!("<div{}>", format!(" {attr}").repeat(n));
        for attr in ["a", "a=1", "a='1 > 2'", "a=\"x\"", "a = \"x\"/"] {
            let html = format!("<p>before</p>{}<p>after", many(257, attr));
            assert_eq!(attribute_flood(&html, 256), html.find("<div"), "{attr}");
            let html = format!("<p>before</p>{}<p>after", many(256, attr));
            assert_eq!(attribute_flood(&html, 256), None, "{attr}: exactly the limit is allowed");
        }
        // Quoted values run into each other: each is still an attribute of its own to the tokenizer.
        assert_eq!(attribute_flood(&format!("<i {}>", "a=\"1\"".repeat(300)), 256), Some(0));
        // Many tags under the limit are fine, however many.
        assert_eq!(attribute_flood(&many(200, "x=1").repeat(1_000), 256), None);
    }

    #[test]
    fn attribute_flood_ignores_what_the_tokenizer_does_not_read_as_tags() {
        let words = "w ".repeat(10_000);
        for html in [
            format!("<script>if (a<b) {{ {words} }} x > y</script><p>x"),
            format!("<style>a<b {words}</style>"),
            format!("<title>a<b {words}</title>"),
            format!("<textarea>a<b {words}</textarea>"),
            format!("<!-- <a {words} -->"),
            format!("<!doctype html {words}>"),
            format!("<?xml {words}?>"),
            format!("a < b {words} > c"),
            format!("<p title=\"<a {words}\">"),
        ] {
            assert_eq!(attribute_flood(&html, 256), None, "{}", &html[..40]);
        }
        // After the raw text ends, tags count again.
        let html = format!("<script>x<y {words}</script><b{}>", " a".repeat(300));
        assert_eq!(attribute_flood(&html, 256), html.find("<b"));
    }

    #[test]
    fn a_tag_with_too_many_attributes_stops_the_parse_before_it() {
        let html =
            format!("<title>t</title><a href=/kept>k</a><div{}>x</div><a href=/lost>l</a>", " a".repeat(100_000));
        let parsed = parse_bounded(&html, ParseLimits::default());
        let at = html.find("<div").expect("the div");
        let want = ParseCut { reason: CutReason::Attributes, limit: 256, at_byte: at, total_bytes: html.len() };
        assert_eq!(parsed.cut, Some(want));
        assert_eq!(count(&parsed.html, "a"), 1, "the link before the tag is kept, the one after is not");
        assert_eq!(count(&parsed.html, "div"), 0);
    }

    /// Elements named `name` that are in the tree (reachable from the document).
    fn count(html: &Html, name: &str) -> usize {
        html.tree.root().descendants().filter(|n| matches!(n.value(), Node::Element(e) if e.name() == name)).count()
    }

    #[test]
    fn under_the_limits_the_tree_is_scrapers() {
        // Chunk boundaries fall inside tags, entities, CRLF pairs and multi-byte characters.
        let cases = [
            "<!doctype html><title>t</title><p>a<p>b<ul><li>x<li>y</ul><table><tr><td>1<td>2</table>".repeat(300),
            "<p>caf\u{e9} \u{1f600} &amp; &eacute;\r\n<br><img src=x alt=y>".repeat(500),
            "<b><i>x</b></i><a href=/1><div>in</div></a><template><p>t</template>".repeat(200),
            "<svg><a href=/s><text>s</text></a></svg><math><mi>x</mi></math><select><option>o</select>".repeat(200),
        ];
        for html in &cases {
            let parsed = parse_bounded(html, ParseLimits::default());
            assert_eq!(parsed.cut, None);
            assert_eq!(parsed.html, Html::parse_document(html), "{}", &html[..80]);
        }
    }

    #[test]
    fn depth_counts_the_tree_builders_nesting() {
        // <html> is at depth 1, <body> 2: n unclosed <div> reach depth n + 2.
        let at = |html: &str| parse_bounded(html, ParseLimits::default()).depth;
        assert_eq!(at(&"<div>".repeat(10)), 12);
        assert_eq!(at(&"<b>".repeat(10)), 12, "unclosed formatting elements nest");
        assert_eq!(at(&"<font size=2>".repeat(10)), 12);
        // Optional end tags, void elements and closed elements do not nest.
        for flat in ["<p>x", "<li>x", "<dt>x<dd>y", "<br>", "<img src=i>", "<div></div>", "<option>o"] {
            assert_eq!(at(&flat.repeat(1_000)), 3, "{flat}");
        }
        assert_eq!(at(&"<table><tr><td>x</table>".repeat(1_000)), 6, "html body table tbody tr td");
        assert_eq!(at(&"<table><tr><td>x".repeat(10)), 42, "a table in a cell nests: 4 levels each");
        // <a> closes the open <a> (adoption agency); through <object> it nests.
        assert_eq!(at(&"<a href=/x>x".repeat(1_000)), 3);
        assert_eq!(at(&"<object><a href=/x>x".repeat(10)), 22);
    }

    #[test]
    fn depth_cut_is_exactly_at_the_limit() {
        let ok = parse_bounded(&"<div>".repeat(48), limits(50, u64::MAX));
        assert_eq!((ok.cut, ok.depth, count(&ok.html, "div")), (None, 50, 48));
        let html = "<div>".repeat(49);
        let cut = parse_bounded(&html, limits(50, u64::MAX));
        let want = ParseCut { reason: CutReason::Depth, limit: 50, at_byte: html.len(), total_bytes: html.len() };
        assert_eq!(cut.cut, Some(want));
        assert_eq!(count(&cut.html, "div"), 48, "the element past the limit is not in the tree");
    }

    #[test]
    fn a_cut_freezes_the_tree_and_stops_feeding() {
        let html = format!("<p id=before>{}<p id=after>{}", "<div>".repeat(1_000_000), "x".repeat(10));
        let parsed = parse_bounded(&html, ParseLimits::default());
        let cut = parsed.cut.expect("cut");
        assert_eq!(cut.reason, CutReason::Depth);
        assert_eq!((cut.at_byte, cut.total_bytes), (CHUNK, html.len()), "cut in the first chunk");
        assert_eq!(parsed.depth, DEFAULT_MAX_DEPTH);
        // A <div> closes the open <p>: html > body > 510 divs, the last at the limit.
        assert_eq!(count(&parsed.html, "div"), DEFAULT_MAX_DEPTH - 2);
        let ids: Vec<&str> =
            parsed.html.tree.root().descendants().filter_map(|n| n.value().as_element()?.attr("id")).collect();
        assert_eq!(ids, ["before"]);
        assert!(parsed.work < 1_000_000, "work {}", parsed.work);
    }

    #[test]
    fn work_cut_stops_shallow_quadratic_markup() {
        // 400 levels (under the depth limit), then paragraphs: each <p> scans all 400 for an open <p>.
        let html = format!("{}{}", "<div>".repeat(400), "<p>x</p>".repeat(100_000));
        let parsed = parse_bounded(&html, limits(DEFAULT_MAX_DEPTH, 1_000_000));
        let cut = parsed.cut.expect("cut");
        assert_eq!(cut.reason, CutReason::Work);
        assert!(cut.at_byte < html.len() / 10, "stopped early: {cut:?}");
        let paragraphs = count(&parsed.html, "p");
        assert!(paragraphs > 100 && paragraphs < 10_000, "{paragraphs} paragraphs before the cut");
        // The same markup without a work limit goes through, and costs far more.
        let whole = parse_bounded(&html, limits(DEFAULT_MAX_DEPTH, u64::MAX));
        assert_eq!(whole.cut, None);
        assert!(whole.work > 30_000_000, "work {}", whole.work);
    }

    #[test]
    fn reparenting_and_templates_carry_depth() {
        // Misnested formatting (adoption agency) and template contents stay within the count.
        let at = |html: &str| parse_bounded(html, ParseLimits::default()).depth;
        assert_eq!(at("<template><div><div></div></div></template>"), 6, "html head template (contents) div div");
        let misnested = "<b><p>x</b>y</p>".repeat(5);
        let parsed = parse_bounded(&misnested, ParseLimits::default());
        assert_eq!(parsed.html, Html::parse_document(&misnested));
        assert!(parsed.depth >= 4, "depth {}", parsed.depth);
    }
}
