//! `/llms.txt` against its published format (<https://llmstxt.org/>): the `llms_txt` finding family.
//!
//! The format, in the order a file must give it:
//! 1. an H1 with the name of the site or project: the only required part;
//! 2. optionally a blockquote with a short summary;
//! 3. optionally Markdown of any kind except headings (paragraphs, lists) with more detail;
//! 4. optionally H2 sections, each a "file list": a Markdown list whose items are a link
//!    `[name](url)`, optionally followed by `: notes`. A section named `Optional` marks links a
//!    tool may skip.
//!
//! [`problems`] reports where a file departs from that, line by line (at most [`MAX_NAMED`]
//! problems named). Fenced code blocks are skipped. The probe reads at most the first 256 KiB of
//! the file; for a longer one the last line read may be cut, so it is not judged.

/// Problems named in a finding's detail at most; the rest are counted.
pub const MAX_NAMED: usize = 5;
/// Problems collected at most: a 256 KiB file of bad lines is reported, not listed.
pub const MAX_COLLECTED: usize = 100;

/// A Markdown heading: its level and text (`## Docs` is `(2, "Docs")`).
fn heading(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None; // four spaces: code, not a heading
    }
    let level = trimmed.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    (rest.is_empty() || rest.starts_with([' ', '\t'])).then(|| (level, rest.trim().trim_end_matches('#').trim()))
}

/// The text of a list item (`- x`, `* x`, `+ x`, `1. x`), or `None` for other lines.
fn list_item(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix(['-', '*', '+']) {
        return rest.starts_with([' ', '\t']).then(|| rest.trim());
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let rest = t[digits..].strip_prefix(['.', ')'])?;
    (digits > 0 && rest.starts_with([' ', '\t'])).then(|| rest.trim())
}

/// Whether a list item starts with a Markdown link `[name](url)` whose URL is not empty.
fn starts_with_link(item: &str) -> bool {
    let Some(rest) = item.strip_prefix('[') else { return false };
    let Some(close) = rest.find("](") else { return false };
    let after = &rest[close + 2..];
    after.find(')').is_some_and(|end| !after[..end].trim().is_empty()) && close > 0
}

/// Where a file departs from the llms.txt format; empty when it follows it. `truncated`: the
/// body is the start of a longer file (its last line may be cut and is not judged).
#[must_use]
pub fn problems(body: &str, truncated: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines: Vec<&str> = body.lines().collect();
    if truncated {
        lines.pop();
    }
    let mut title_seen = false;
    let mut section: Option<(usize, &str, usize)> = None; // (line, name, links)
    let mut fenced = false;
    let close_section = |section: Option<(usize, &str, usize)>, out: &mut Vec<String>| {
        if let Some((at, name, 0)) = section {
            out.push(format!("line {at}: section \"{name}\" lists no links ([name](url) list items)"));
        }
    };
    for (i, raw) in lines.iter().enumerate() {
        if out.len() >= MAX_COLLECTED {
            return out;
        }
        let n = i + 1;
        let line = raw.trim_end();
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.trim().is_empty() {
            continue;
        }
        if !title_seen {
            title_seen = true;
            match heading(line) {
                Some((1, text)) if !text.is_empty() => continue,
                Some((1, _)) => out.push(format!("line {n}: the H1 title is empty")),
                _ => out.push(format!("line {n}: the file does not start with an H1 title (# Site name)")),
            }
            if line.trim_start().starts_with('<') {
                out.push("the file looks like HTML, not Markdown".to_owned());
                break;
            }
            continue;
        }
        match heading(line) {
            Some((1, _)) => out.push(format!("line {n}: a second H1; the file has one title")),
            Some((2, name)) => {
                close_section(section.take(), &mut out);
                section = Some((n, name, 0));
            }
            Some((level, _)) => {
                out.push(format!("line {n}: an H{level} heading; sections are H2 headings of link lists"));
            }
            None => {
                if let (Some((_, name, links)), Some(item)) = (section.as_mut(), list_item(line)) {
                    if starts_with_link(item) {
                        *links += 1;
                    } else {
                        out.push(format!("line {n}: an item of section \"{name}\" is not a [name](url) link"));
                    }
                }
            }
        }
    }
    close_section(section, &mut out);
    if !title_seen {
        out.push("the file is empty".to_owned());
    }
    out
}

/// The detail of an `llms_txt_invalid` finding: the first [`MAX_NAMED`] problems and how many
/// more there are.
#[must_use]
pub fn detail(problems: &[String]) -> String {
    let mut d = problems.iter().take(MAX_NAMED).cloned().collect::<Vec<_>>().join("; ");
    if problems.len() >= MAX_COLLECTED {
        d.push_str(&format!("; and {} or more others", MAX_COLLECTED - MAX_NAMED));
    } else if problems.len() > MAX_NAMED {
        d.push_str(&format!("; and {} more", problems.len() - MAX_NAMED));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# Shop\n\n> A shop for kettles.\n\nSome detail about the shop.\n\n- a plain list is fine here\n\n\
                        ## Docs\n\n- [Kettles](https://shop.test/kettles.md): every kettle\n- [FAQ](/faq.md)\n\n\
                        ```\n# not a heading\n```\n\n## Optional\n\n1. [Blog](https://shop.test/blog.md)\n";

    #[test]
    fn a_file_in_the_format_has_no_problems() {
        assert_eq!(problems(GOOD, false), Vec::<String>::new());
        assert_eq!(problems("# Just a title\n", false), Vec::<String>::new(), "the title is all that is required");
    }

    #[test]
    fn departures_are_named_by_line() {
        let bad = "Welcome!\n# Shop\n### Deep\n## Docs\n- see the docs\n- [](https://x.test/)\n## Empty\ntext\n";
        assert_eq!(
            problems(bad, false),
            [
                "line 1: the file does not start with an H1 title (# Site name)",
                "line 2: a second H1; the file has one title",
                "line 3: an H3 heading; sections are H2 headings of link lists",
                "line 5: an item of section \"Docs\" is not a [name](url) link",
                "line 6: an item of section \"Docs\" is not a [name](url) link",
                "line 4: section \"Docs\" lists no links ([name](url) list items)",
                "line 7: section \"Empty\" lists no links ([name](url) list items)",
            ]
        );
        assert_eq!(problems("  \n\n", false), ["the file is empty"]);
        let html = problems("<!doctype html><html><body>Not found</body></html>", false);
        assert_eq!(html.last().map(String::as_str), Some("the file looks like HTML, not Markdown"));
    }

    #[test]
    fn a_cut_last_line_is_not_judged() {
        let cut = "# Shop\n## Docs\n- [A](/a.md)\n- [B](/b";
        assert_eq!(problems(cut, true), Vec::<String>::new());
        assert_eq!(problems(cut, false), ["line 4: an item of section \"Docs\" is not a [name](url) link"]);
    }

    #[test]
    fn the_detail_names_a_few_and_counts_the_rest() {
        let many: Vec<String> = (1..=8).map(|i| format!("p{i}")).collect();
        assert_eq!(detail(&many), "p1; p2; p3; p4; p5; and 3 more");
        let huge = format!("# Big\n## Docs\n{}", "- not a link\n".repeat(20_000));
        let found = problems(&huge, false);
        assert_eq!(found.len(), MAX_COLLECTED, "collection stops at the cap");
        assert!(detail(&found).ends_with("; and 95 or more others"), "{}", detail(&found));
    }
}
