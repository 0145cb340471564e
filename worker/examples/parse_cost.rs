//! What parsing hostile and ordinary HTML costs, before and after the parse bound (issue 9).
//!
//! ```text
//! cargo build --release -p shoal-worker --example parse_cost
//! target/release/examples/parse_cost CASE N [before|after|bounded]
//! ```
//!
//! CASE is one of `div`, `b`, `table`, `a`, `object-a`, `p-at-depth`, `br-at-depth`, `reformat`,
//! `attrs`, `attrs-tags` (N bytes of tags with 256 attributes each), `ordinary` or `ordinary-deep` (N bytes of ordinary markup, 7 or 37 levels deep) or `fixture` (the blog post fixture repeated to N
//! bytes). `before` times scraper's unbounded `Html::parse_document` (what `extract` did before);
//! `after` (the default) times `extract` with its default limits and prints where it cut;
//! `bounded` times the bounded parse alone.

use std::time::Instant;

use shoal_worker::extract::{ExtractCaps, extract};
use shoal_worker::parse::{ParseLimits, parse_bounded};
use url::Url;

const BLOCK: &str = "<div class=post><h2>Post</h2><p>Text <a href=/p>link</a> <b>bold</b> \
    <img src=/i.png alt=i><p>More<br>text<ul><li>one<li>two</ul><table><tr><td>1<td>2<tr><td>3</table>\
    <select><option>a<option>b</select><dl><dt>t<dd>d</dl></div>\n";

fn document(case: &str, n: usize) -> Result<String, String> {
    Ok(match case {
        "div" => "<div>".repeat(n),
        "b" => "<b>".repeat(n),
        "table" => "<table><tr><td>".repeat(n),
        "a" => "<a href=/n>n".repeat(n),
        "object-a" => "<object><a href=/n>n".repeat(n),
        "p-at-depth" => format!("{}{}", "<div>".repeat(500), "<p>x</p>".repeat(n)),
        "reformat" => (0..n).map(|i| format!("<p><b id={i}>x</p>")).collect(),
        "attrs" => format!("<a {}>", (0..n).map(|i| format!("a{i}")).collect::<Vec<_>>().join(" ")),
        // N bytes of tags with 256 attributes each, the most `attribute_flood` lets through.
        "attrs-tags" => {
            let tag = format!("<img{}>", (0..256).map(|i| format!(" a{i}")).collect::<String>());
            tag.repeat(n / tag.len())
        }
        "ordinary" => BLOCK.repeat(n / BLOCK.len()),
        "ordinary-deep" => {
            // The same blocks 30 levels down, as in a framework-built page.
            let block = format!("{}{BLOCK}{}", "<div class=wrap>".repeat(30), "</div>".repeat(30));
            block.repeat(n / block.len())
        }
        "br-at-depth" => format!("{}{}", "<div>".repeat(500), "<br>".repeat(n)),
        "fixture" => {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/html/blog_post.html");
            let post = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
            post.repeat(n / post.len().max(1))
        }
        other => return Err(format!("unknown case {other}")),
    })
}

#[expect(clippy::print_stdout, reason = "a measuring tool prints its figures")]
fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(case), Some(n)) = (args.first(), args.get(1).and_then(|n| n.replace('_', "").parse().ok())) else {
        return Err("usage: parse_cost CASE N [before|after|bounded]".into());
    };
    let mode = args.get(2).map_or("after", String::as_str);
    let html = document(case, n)?;
    let started = Instant::now();
    match mode {
        "before" => {
            let doc = scraper::Html::parse_document(&html);
            let secs = started.elapsed().as_secs_f64();
            println!("{case} n={n} bytes={} before: {secs:.3} s, {} nodes", html.len(), doc.tree.nodes().count());
        }
        "bounded" => {
            let parsed = parse_bounded(&html, ParseLimits::default());
            let secs = started.elapsed().as_secs_f64();
            println!(
                "{case} n={n} bytes={} bounded parse: {secs:.3} s, cut {:?}, work {}",
                html.len(),
                parsed.cut,
                parsed.work
            );
        }
        "after" => {
            let base = Url::parse("https://example.com/").map_err(|e| e.to_string())?;
            let facts = extract(&html, &base, &ExtractCaps::default());
            let secs = started.elapsed().as_secs_f64();
            let parsed = parse_bounded(&html, ParseLimits::default());
            println!(
                "{case} n={n} bytes={} after: {secs:.3} s, cut {:?}, work {}, depth {}, {} links",
                html.len(),
                facts.parse_cut,
                parsed.work,
                parsed.depth,
                facts.links.len()
            );
        }
        other => return Err(format!("unknown mode {other}")),
    }
    Ok(())
}
