//! Data for the page's own script: JSON in a `<script type="application/json">` data block, which
//! the browser parses but never runs (so the page's Content-Security-Policy does not apply to it).
//!
//! The overview of a large batch keeps its first rows as HTML and hands the script every site as
//! JSON (about 120 bytes a site instead of 190 for a table row, and no layout for rows that are not
//! shown). A [`DataBlock`] is written without HTML escaping, which is sound because the only way to
//! make one is [`DataBlock::of`]: serde_json's output with `<`, `>` and `&` written as `\u003c`,
//! `\u003e`, `\u0026` (valid JSON escapes; outside strings JSON has none of these characters), so
//! crawled text can never close the element or start markup.

use serde::Serialize;
use std::fmt;

/// JSON safe to write inside a data block. Only [`DataBlock::of`] makes one.
#[derive(Debug, Clone)]
pub(crate) struct DataBlock(String);

impl DataBlock {
    /// `value` as JSON with the characters that matter to HTML escaped.
    pub(crate) fn of<T: Serialize>(value: &T) -> Result<DataBlock, serde_json::Error> {
        let json = serde_json::to_string(value)?;
        let mut out = String::with_capacity(json.len() + 64);
        for c in json.chars() {
            match c {
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '&' => out.push_str("\\u0026"),
                c => out.push(c),
            }
        }
        Ok(DataBlock(out))
    }
}

impl fmt::Display for DataBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// Built only by `of`, with every `<`, `>` and `&` escaped: written into the data block as is.
impl askama::filters::HtmlSafe for DataBlock {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crawled_text_cannot_leave_the_data_block() {
        let hostile = vec!["</script><script>alert(1)</script>", "<!-- x", "a & b > c"];
        let block = DataBlock::of(&hostile).expect("json").to_string();
        assert!(!block.contains('<') && !block.contains('>') && !block.contains('&'), "{block}");
        let back: Vec<String> = serde_json::from_str(&block).expect("still JSON");
        assert_eq!(back, hostile);
    }
}
