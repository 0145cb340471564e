//! On-page rules: the mobile viewport, Open Graph and Twitter card basics, and images without
//! size attributes (`viewport_*`, `open_graph_*`, `twitter_card_*`, `img_missing_dimensions`).
//! `pagination_broken` needs what the targets answered and runs in the site analysis;
//! `image_too_large` is judged when the image is checked as a resource (`crate::crawl`).

use super::Check;
use crate::extract::onpage::OnPage;
use shoal_shared::finding::Code;

/// Twitter card kinds X documents.
const CARD_KINDS: &[&str] = &["summary", "summary_large_image", "app", "player"];
/// The least `maximum-scale` that lets visitors zoom to 200 % (WCAG 1.4.4).
const MIN_MAXIMUM_SCALE: f64 = 2.0;

/// The on-page findings of one page; `whole` is false when its parse was cut (a tag missing
/// then may be after the cut).
#[must_use]
pub fn onpage_checks(p: &OnPage, whole: bool) -> Vec<Check> {
    let mut out = Vec::new();
    match p.viewport.as_deref() {
        None if whole => out.push((Code::ViewportMissing, String::new())),
        None => {}
        Some(v) => {
            if let Some(why) = viewport_problem(v) {
                out.push((Code::ViewportInvalid, why));
            }
        }
    }
    let og = [("og:title", &p.og_title), ("og:image", &p.og_image), ("og:url", &p.og_url)];
    if og.iter().all(|(_, v)| v.is_none()) {
        if whole {
            out.push((Code::OpenGraphMissing, String::new()));
        }
    } else {
        let mut problems = Vec::new();
        for (name, value) in og {
            match value.as_deref() {
                None | Some("") => problems.push(format!("no {name}")),
                Some(v) if name != "og:title" && !is_absolute(v) => {
                    problems.push(format!("{name} {v:?} is not an absolute http(s) URL"));
                }
                Some(_) => {}
            }
        }
        if !problems.is_empty() {
            out.push((Code::OpenGraphIncomplete, problems.join("; ")));
        }
    }
    match p.twitter_card.as_deref() {
        None if whole => out.push((Code::TwitterCardMissing, String::new())),
        None => {}
        Some(card) => {
            let mut problems = Vec::new();
            let kind = card.trim().to_ascii_lowercase();
            if !CARD_KINDS.contains(&kind.as_str()) {
                problems.push(format!("unknown card {card:?} (summary, summary_large_image, app or player)"));
            }
            let given = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
            if !given(&p.twitter_title) && !given(&p.og_title) {
                problems.push("no title (twitter:title or og:title)".to_owned());
            }
            if matches!(kind.as_str(), "summary_large_image" | "player")
                && !given(&p.twitter_image)
                && !given(&p.og_image)
            {
                problems.push("no image (twitter:image or og:image)".to_owned());
            }
            if !problems.is_empty() {
                out.push((Code::TwitterCardIncomplete, problems.join("; ")));
            }
        }
    }
    if p.unsized_images > 0 {
        let named: Vec<&str> = p.unsized_named.iter().map(String::as_str).filter(|s| !s.is_empty()).collect();
        out.push((
            Code::ImgMissingDimensions,
            format!("{} images without width and height: {}", p.unsized_images, named.join(", ")),
        ));
    }
    out
}

/// `image_too_large` for a successful image answer over `budget_kib` KiB (0 turns it off): its
/// declared size (a HEAD answers no body), or what was read.
#[must_use]
pub fn image_size_check(resp: &crate::fetch::Fetched, budget_kib: u32) -> Option<Check> {
    let is_image = resp.header("content-type").is_some_and(|ct| ct.trim().to_ascii_lowercase().starts_with("image/"));
    if budget_kib == 0 || !is_image || !(200..300).contains(&resp.status) {
        return None;
    }
    let declared: Option<u64> = resp.header("content-length").and_then(|v| v.trim().parse().ok());
    let size = declared.unwrap_or(0).max(resp.body.len() as u64);
    let budget = u64::from(budget_kib) * 1024;
    (size > budget).then(|| (Code::ImageTooLarge, format!("{} KiB (budget {budget_kib} KiB)", size.div_ceil(1024))))
}

fn is_absolute(v: &str) -> bool {
    url::Url::parse(v.trim()).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// What is wrong with a viewport's content, if anything: it must follow the device's width and
/// let visitors zoom.
fn viewport_problem(content: &str) -> Option<String> {
    let mut problems = Vec::new();
    let mut width = None;
    for part in content.split([',', ';']) {
        let Some((key, value)) = part.split_once('=') else { continue };
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim().to_ascii_lowercase());
        match key.as_str() {
            "width" => width = Some(value),
            "user-scalable" if matches!(value.as_str(), "no" | "0") => {
                problems.push(format!("user-scalable={value} stops visitors from zooming"));
            }
            "maximum-scale" if value.parse::<f64>().is_ok_and(|s| s < MIN_MAXIMUM_SCALE) => {
                problems.push(format!("maximum-scale={value} stops visitors from zooming to 200 %"));
            }
            _ => {}
        }
    }
    match width.as_deref() {
        Some("device-width") => {}
        Some(w) => problems.insert(0, format!("width={w} instead of width=device-width")),
        None => problems.insert(0, "no width=device-width".to_owned()),
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete() -> OnPage {
        OnPage {
            viewport: Some("width=device-width, initial-scale=1".into()),
            og_title: Some("T".into()),
            og_image: Some("https://a.test/i.png".into()),
            og_url: Some("https://a.test/".into()),
            twitter_card: Some("summary_large_image".into()),
            ..OnPage::default()
        }
    }

    #[test]
    fn a_complete_page_raises_nothing() {
        assert!(onpage_checks(&complete(), true).is_empty());
    }

    #[test]
    fn each_rule() {
        let codes = |p: &OnPage, whole| onpage_checks(p, whole).into_iter().map(|(c, _)| c).collect::<Vec<_>>();
        let empty = OnPage::default();
        assert_eq!(codes(&empty, true), [Code::ViewportMissing, Code::OpenGraphMissing, Code::TwitterCardMissing]);
        assert!(codes(&empty, false).is_empty(), "absences are not claimed after a cut");
        let bad = OnPage {
            viewport: Some("width=1024, user-scalable=no, maximum-scale=1".into()),
            og_image: Some("/i.png".into()),
            twitter_card: Some("huge".into()),
            og_title: None,
            unsized_images: 3,
            unsized_named: vec!["a.png".into()],
            ..complete()
        };
        let found = onpage_checks(&bad, true);
        assert_eq!(
            found,
            vec![
                (
                    Code::ViewportInvalid,
                    "width=1024 instead of width=device-width; user-scalable=no stops visitors from zooming; \
                     maximum-scale=1 stops visitors from zooming to 200 %"
                        .into()
                ),
                (Code::OpenGraphIncomplete, "no og:title; og:image \"/i.png\" is not an absolute http(s) URL".into()),
                (
                    Code::TwitterCardIncomplete,
                    "unknown card \"huge\" (summary, summary_large_image, app or player); no title (twitter:title or og:title)"
                        .into()
                ),
                (Code::ImgMissingDimensions, "3 images without width and height: a.png".into()),
            ]
        );
        assert_eq!(viewport_problem("initial-scale=1"), Some("no width=device-width".into()));
        assert_eq!(viewport_problem("width=device-width,initial-scale=1,maximum-scale=5"), None);
    }
}
