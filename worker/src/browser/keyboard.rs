//! Keyboard navigation: Tab (the only key the check presses) through up to 50 focusable elements,
//! recording where focus goes (`__shoal.focusStep()` in `js/probe.js`): elements without a visible
//! focus indicator, a trap (focus cycles among some elements without ever leaving them), a skip
//! link first, and steps backwards in document order.

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::input::{DispatchKeyEventParams, DispatchKeyEventType};
use serde::Deserialize;
use shoal_shared::browser::Keyboard;

use super::js::eval;

/// Tab presses at most.
pub(crate) const MAX_TABS: u32 = 50;
/// Selectors kept per list.
const MAX_LISTED: usize = 20;

#[derive(Debug, Clone, Deserialize)]
struct Step {
    sel: Option<String>,
    #[serde(default)]
    visible: bool,
    #[serde(default)]
    back: bool,
    #[serde(default)]
    from: String,
    #[serde(default)]
    href: String,
    #[serde(default)]
    text: String,
}

async fn press_tab(page: &Page) -> Result<(), String> {
    for kind in [DispatchKeyEventType::RawKeyDown, DispatchKeyEventType::KeyUp] {
        let key = DispatchKeyEventParams::builder()
            .r#type(kind)
            .key("Tab")
            .code("Tab")
            .windows_virtual_key_code(9)
            .native_virtual_key_code(9)
            .build()
            .map_err(|e| format!("key event: {e}"))?;
        page.execute(key).await.map_err(|e| format!("Tab: {e}"))?;
    }
    Ok(())
}

/// Tabs through the page from its top.
pub(crate) async fn run(page: &Page) -> Result<Keyboard, String> {
    let reachable: u32 = eval(page, "window.__shoal ? window.__shoal.tabbable() : 0").await?;
    eval::<serde_json::Value>(
        page,
        "(document.activeElement && document.activeElement.blur(), window.scrollTo(0, 0), null)",
    )
    .await?;
    let mut steps: Vec<Step> = Vec::new();
    let mut keyboard = Keyboard::default();
    for _ in 0..MAX_TABS {
        press_tab(page).await?;
        keyboard.tabbed += 1;
        let step: Step = eval(page, "window.__shoal ? window.__shoal.focusStep() : {sel: null}").await?;
        let done = step.sel.as_ref().and_then(|sel| {
            // Focus came back to an element already visited: a full round, or a trap.
            let last = steps.iter().rposition(|s| s.sel.as_ref() == Some(sel))?;
            let between = &steps[last..];
            let left_page = between.iter().any(|s| s.sel.is_none());
            let distinct: Vec<String> = unique(steps.iter().filter_map(|s| s.sel.clone()));
            let trapped = !left_page && (distinct.len() as u32) < reachable;
            Some(if trapped { unique(between.iter().filter_map(|s| s.sel.clone())) } else { Vec::new() })
        });
        steps.push(step);
        // Three presses in a row that leave focus nowhere: nothing (more) to reach.
        if steps.len() >= 3 && steps[steps.len() - 3..].iter().all(|s| s.sel.is_none()) {
            break;
        }
        if let Some(trap) = done {
            keyboard.trap = trap;
            break;
        }
    }
    let focused: Vec<&Step> = steps.iter().filter(|s| s.sel.is_some()).collect();
    if focused.is_empty() {
        // Nothing on the page takes focus: no keyboard finding can apply (no skip link needed).
        keyboard.tabbed = 0;
        return Ok(keyboard);
    }
    keyboard.no_focus_indicator = unique(focused.iter().filter(|s| !s.visible).filter_map(|s| s.sel.clone()))
        .into_iter()
        .take(MAX_LISTED)
        .collect();
    keyboard.backwards = focused
        .iter()
        .filter(|s| s.back)
        .filter_map(|s| Some(format!("{} -> {}", s.from, s.sel.as_ref()?)))
        .take(MAX_LISTED)
        .collect();
    keyboard.has_skip_link = match focused.first() {
        Some(first) if first.href.starts_with('#') && first.href.len() > 1 => {
            let target: bool = eval(page, &format!("window.__shoal.skipTarget({})", js_string(&first.href))).await?;
            target || is_skip_text(&first.text)
        }
        _ => false,
    };
    Ok(keyboard)
}

/// Link texts that say "skip to the content", in the languages the consent check knows.
fn is_skip_text(text: &str) -> bool {
    let t = text.to_lowercase();
    [
        "skip",
        "jump to",
        "zum inhalt",
        "zum hauptinhalt",
        "springen",
        "aller au contenu",
        "passer au contenu",
        "saltar",
        "ir al contenido",
        "salta",
        "vai al contenuto",
        "naar de inhoud",
        "ga naar",
    ]
    .iter()
    .any(|p| t.contains(p))
}

fn unique(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// A JavaScript string literal.
pub(crate) fn js_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_texts_and_string_literals() {
        assert!(is_skip_text("Skip to main content"));
        assert!(is_skip_text("Zum Inhalt springen"));
        assert!(!is_skip_text("Home"));
        assert_eq!(js_string("#a\"b"), r##""#a\"b""##);
        assert_eq!(unique(["a", "b", "a"].into_iter().map(String::from)), ["a", "b"]);
    }
}
