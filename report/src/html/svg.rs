//! Bar charts as inline SVG, drawn on the server from aggregate counts.
//!
//! The report must be readable offline and under a policy that runs no script but its own, so charts
//! are plain SVG markup rather than a JavaScript chart library. An [`Svg`] is written into the HTML
//! without escaping; that is sound because the only way to make one is this module, which escapes
//! every piece of text it puts in (labels are Shoal's own words today, but the builder does not rely
//! on that) and writes numbers itself.

use std::fmt::{self, Write as _};

/// A chart's markup. Only this module can build one (the field is private).
#[derive(Debug, Clone)]
pub(crate) struct Svg(String);

impl fmt::Display for Svg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// Built only by this module, with every text escaped: written into the HTML as markup.
impl askama::filters::HtmlSafe for Svg {}

/// One bar: a label, a count, and a fill colour from [`palette`].
#[derive(Debug, Clone)]
pub(crate) struct Bar {
    /// Shown under (or beside) the bar.
    pub(crate) label: String,
    /// The count.
    pub(crate) value: u64,
    /// Fill colour, one of the [`palette`] constants.
    pub(crate) color: &'static str,
}

impl Bar {
    pub(crate) fn new(label: impl Into<String>, value: u64, color: &'static str) -> Bar {
        Bar { label: label.into(), value, color }
    }
}

/// The chart colours (also the report's severity colours).
pub(crate) mod palette {
    pub(crate) const GREEN: &str = "#1e8449";
    pub(crate) const BLUE: &str = "#2471a3";
    pub(crate) const ORANGE: &str = "#b9770e";
    pub(crate) const RED: &str = "#c0392b";
    pub(crate) const GREY: &str = "#7f8c8d";
    pub(crate) const DARK: &str = "#34495e";
    pub(crate) const TEAL: &str = "#148f77";
}

/// Escapes text for SVG (XML) content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn open(out: &mut String, name: &str, title: &str, width: u32, height: u32) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{}" role="img" aria-label="{}" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="system-ui, sans-serif" font-size="11"><title>{}</title>"#,
        escape(name),
        escape(title),
        escape(title)
    );
}

fn empty_note(out: &mut String, width: u32, height: u32) {
    let _ = write!(
        out,
        r##"<text x="{}" y="{}" text-anchor="middle" fill="#5b6670" font-size="13">none</text>"##,
        width / 2,
        height / 2
    );
}

/// Vertical bars, one per entry, for a handful to a few dozen categories (status classes,
/// severities, depths, response-time buckets). `name` becomes `data-chart` (tests and styling find
/// charts by it); `title` is the accessible name.
pub(crate) fn columns(name: &str, title: &str, bars: &[Bar]) -> Svg {
    const H: u32 = 200;
    const TOP: u32 = 18;
    const BOTTOM: u32 = 34;
    const LEFT: u32 = 8;
    let n = u32::try_from(bars.len()).unwrap_or(u32::MAX).max(1);
    // Wide enough for the longest label (about 7 px a character at this font size).
    let longest = bars.iter().map(|b| b.label.chars().count()).max().unwrap_or(0);
    let slot = u32::try_from(longest * 7 + 10).unwrap_or(u32::MAX).max(if n > 12 { 26 } else { 40 });
    let width = (LEFT * 2 + n.saturating_mul(slot)).max(220);
    let max = bars.iter().map(|b| b.value).max().unwrap_or(0);
    let plot = H - TOP - BOTTOM;
    let mut out = String::with_capacity(256 + bars.len() * 240);
    open(&mut out, name, title, width, H);
    let base = H - BOTTOM;
    let _ = write!(out, r##"<line x1="{LEFT}" y1="{base}" x2="{}" y2="{base}" stroke="#d9dee3"/>"##, width - LEFT);
    if max == 0 {
        empty_note(&mut out, width, H);
    }
    for (i, bar) in bars.iter().enumerate() {
        let x = LEFT + u32::try_from(i).unwrap_or(0) * slot;
        let h = scaled(bar.value, max, plot);
        let bw = slot - 8;
        let cx = x + slot / 2;
        let label = escape(&bar.label);
        let _ = write!(
            out,
            r##"<g><title>{label}: {v}</title><rect x="{}" y="{}" width="{bw}" height="{h}" fill="{}"/><text x="{cx}" y="{}" text-anchor="middle">{v}</text><text x="{cx}" y="{}" text-anchor="middle" fill="#5b6670">{label}</text></g>"##,
            x + 4,
            base - h,
            escape(bar.color),
            base - h - 4,
            base + 14,
            v = bar.value,
        );
    }
    out.push_str("</svg>");
    Svg(out)
}

/// Horizontal bars with the label on the left, for categories with longer names (finding families).
pub(crate) fn rows(name: &str, title: &str, bars: &[Bar]) -> Svg {
    const W: u32 = 360;
    const LABEL: u32 = 96;
    const ROW: u32 = 20;
    const PAD: u32 = 8;
    const VALUE: u32 = 48;
    let n = u32::try_from(bars.len()).unwrap_or(u32::MAX).max(1);
    let height = (PAD * 2 + n.saturating_mul(ROW)).max(60);
    let max = bars.iter().map(|b| b.value).max().unwrap_or(0);
    let plot = W - LABEL - VALUE - PAD;
    let mut out = String::with_capacity(256 + bars.len() * 240);
    open(&mut out, name, title, W, height);
    if bars.is_empty() || max == 0 {
        empty_note(&mut out, W, height);
    }
    for (i, bar) in bars.iter().enumerate() {
        let y = PAD + u32::try_from(i).unwrap_or(0) * ROW;
        let w = scaled(bar.value, max, plot);
        let label = escape(&bar.label);
        let _ = write!(
            out,
            r##"<g><title>{label}: {v}</title><text x="{}" y="{}" text-anchor="end" fill="#5b6670">{label}</text><rect x="{LABEL}" y="{}" width="{w}" height="{}" fill="{}"/><text x="{}" y="{}">{v}</text></g>"##,
            LABEL - 6,
            y + 13,
            y + 3,
            ROW - 6,
            escape(bar.color),
            LABEL + w + 4,
            y + 13,
            v = bar.value,
        );
    }
    out.push_str("</svg>");
    Svg(out)
}

/// `value / max` of `span` pixels, at least 1 pixel for a non-zero value so small counts stay visible.
fn scaled(value: u64, max: u64, span: u32) -> u32 {
    if value == 0 || max == 0 {
        return 0;
    }
    let px = u128::from(value) * u128::from(span) / u128::from(max);
    u32::try_from(px).unwrap_or(span).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_in_a_chart_is_escaped() {
        let svg = columns("x\"y", "<b>t</b>", &[Bar::new("<script>alert(1)</script>", 3, palette::RED)]).to_string();
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{svg}");
        assert!(svg.contains(r#"data-chart="x&quot;y""#), "{svg}");
        let svg = rows("f", "t", &[Bar::new("a&b", 1, palette::RED)]).to_string();
        assert!(svg.contains("a&amp;b"), "{svg}");
    }

    #[test]
    fn bars_scale_to_the_largest_and_small_ones_stay_visible() {
        assert_eq!(scaled(0, 10, 100), 0);
        assert_eq!(scaled(10, 10, 100), 100);
        assert_eq!(scaled(1, 1_000_000, 100), 1);
        assert_eq!(scaled(u64::MAX, u64::MAX, 100), 100);
    }

    #[test]
    fn an_empty_chart_says_none() {
        let svg = columns("c", "t", &[Bar::new("a", 0, palette::RED)]).to_string();
        assert!(svg.contains(">none</text>"), "{svg}");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<svg").count(), 1);
        let svg = rows("r", "t", &[]).to_string();
        assert!(svg.contains(">none</text>"), "{svg}");
    }
}
