//! A walk of the parsed tree that sees each element twice, on the way in and on the way out, for
//! the collectors that need to know where an element ends (structured-data scopes, the main
//! text's landmarks). An explicit stack, so markup as deep as the parser builds cannot overflow
//! the call stack; template contents are inert and skipped, as in [`super::walk`].

use super::NodeRef;
use scraper::Html;

/// One step of [`walk_events`].
#[derive(Debug, Clone, Copy)]
pub(super) enum Step<'a> {
    /// A node, before its children. Returning `false` skips them (and its `Exit`).
    Enter(NodeRef<'a>),
    /// A node whose `Enter` returned `true`, after its children.
    Exit(NodeRef<'a>),
}

/// Visits the document in tree order; `visit` returns whether to descend into an entered node.
pub(super) fn walk_events<'a>(doc: &'a Html, mut visit: impl FnMut(Step<'a>) -> bool) {
    let mut stack: Vec<(NodeRef<'a>, bool)> = vec![(doc.tree.root(), false)];
    while let Some((node, entered)) = stack.pop() {
        if entered {
            visit(Step::Exit(node));
            continue;
        }
        if node.value().is_fragment() {
            continue;
        }
        if visit(Step::Enter(node)) {
            stack.push((node, true));
            let first = stack.len();
            stack.extend(node.children().map(|c| (c, false)));
            stack[first..].reverse();
        }
    }
}

/// The value of the attribute `name` (lower case, no namespace) of `el`. Why not
/// `Element::attr`: it makes an interned atom of `name` on every call (a global table lookup, and
/// a lock for a name outside html5ever's static set, such as RDFa's `typeof`), and the extraction
/// asks several names of every element of every page; most elements have no attribute at all.
pub(crate) fn attr<'a>(el: &'a scraper::node::Element, name: &str) -> Option<&'a str> {
    el.attrs().find_map(|(n, v)| (n == name).then_some(v))
}
