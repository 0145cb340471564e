//! Accessibility with axe-core (Deque, MPL-2.0), the version pinned in
//! `worker/assets/axe-core/VERSION` and shipped with its licence: the WCAG 2.x A and AA rules,
//! one [`AxeViolation`] per failing rule with its number of elements and a sample selector.

use chromiumoxide::Page;
use serde::Deserialize;
use shoal_shared::browser::AxeViolation;

use super::js::eval;

/// axe-core's minified source, compiled in (no npm at build or run time).
const AXE_SOURCE: &str = include_str!("../../assets/axe-core/axe.min.js");
/// Its version.
pub const AXE_VERSION: &str = include_str!("../../assets/axe-core/VERSION");

/// Runs axe-core in the page, after loading it there if the page has none of ours yet.
const RUN: &str = r#"
(async () => {
  const r = await axe.run(document, {
    resultTypes: ['violations'],
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] },
  });
  return r.violations.slice(0, 100).map((v) => {
    const t = v.nodes.length ? v.nodes[0].target : [];
    const flat = (x) => Array.isArray(x) ? x.map(flat).join(' >>> ') : String(x);
    return { rule: v.id, impact: v.impact || 'minor', elements: v.nodes.length, sample: flat(t).slice(0, 300), help: v.help || '' };
  });
})()
"#;

#[derive(Debug, Deserialize)]
struct Violation {
    rule: String,
    impact: String,
    elements: u32,
    sample: String,
    help: String,
}

/// The violated rules of the page as it is now.
pub(crate) async fn run(page: &Page) -> Result<Vec<AxeViolation>, String> {
    let check = format!(
        "typeof window.axe === 'object' && typeof window.axe.run === 'function' && window.axe.version === '{}'",
        AXE_VERSION.trim()
    );
    let loaded: bool = eval(page, &check).await?;
    if !loaded {
        eval::<serde_json::Value>(page, &format!("{AXE_SOURCE}\n;null"))
            .await
            .map_err(|e| format!("loading axe-core: {e}"))?;
    }
    let found: Vec<Violation> = eval(page, RUN).await.map_err(|e| format!("axe-core: {e}"))?;
    Ok(found
        .into_iter()
        .map(|v| AxeViolation {
            rule: v.rule,
            impact: v.impact,
            elements: v.elements,
            sample_selector: v.sample,
            help: v.help,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendored_axe_is_the_pinned_version_with_its_licence() {
        assert_eq!(AXE_VERSION.trim(), "4.14.1");
        assert!(AXE_SOURCE.starts_with(&format!("/*! axe v{}", AXE_VERSION.trim())));
        assert!(RUN.contains("axe.run"));
        let licence = include_str!("../../assets/axe-core/LICENSE");
        assert!(licence.starts_with("Mozilla Public License, version 2.0"));
    }
}
