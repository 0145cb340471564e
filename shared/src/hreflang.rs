//! hreflang values and the rules about one page's set of alternates (SPEC §5, "hreflang").
//!
//! A page names its language versions in `<link rel=alternate hreflang>`, in its `Link` HTTP
//! header, or a sitemap names them for it (`<xhtml:link>` under its `<url>`). Search engines use
//! the set only when it is consistent, so every inconsistency here is a finding.
//!
//! Why a table of codes and not a crate: hreflang takes exactly an ISO 639-1 language, optionally
//! an ISO 15924 script, optionally an ISO 3166-1 alpha-2 region (search engines take no other
//! subtags, no three-letter languages and no UN M.49 regions such as `419`), so a full BCP 47
//! parser (`oxilangtag`, `icu_locid`) would accept what search engines ignore and still need
//! these lists. The two lists are short, change every few years, and a test pins their sizes.
//! Scripts are checked for form only (four letters).

use crate::finding::Code;
use std::collections::BTreeMap;
use std::fmt;

/// ISO 639-1 language codes (two letters), as of 2024.
const LANGUAGES: &str = "aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs \
    cu cv cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht \
    hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg \
    li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa \
    pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti \
    tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu";

/// ISO 3166-1 alpha-2 region codes officially assigned, as of 2024 (not the reserved `UK`, `EU`).
const REGIONS: &str = "ad ae af ag ai al am ao aq ar as at au aw ax az ba bb bd be bf bg bh bi bj bl bm bn \
    bo bq br bs bt bv bw by bz ca cc cd cf cg ch ci ck cl cm cn co cr cu cv cw cx cy cz de dj dk dm do dz \
    ec ee eg eh er es et fi fj fk fm fo fr ga gb gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu gw gy hk hm \
    hn hr ht hu id ie il im in io iq ir is it je jm jo jp ke kg kh ki km kn kp kr kw ky kz la lb lc li lk \
    lr ls lt lu lv ly ma mc md me mf mg mh mk ml mm mn mo mp mq mr ms mt mu mv mw mx my mz na nc ne nf ng \
    ni nl no np nr nu nz om pa pe pf pg ph pk pl pm pn pr ps pt pw py qa re ro rs ru rw sa sb sc sd se sg \
    sh si sj sk sl sm sn so sr ss st sv sx sy sz tc td tf tg th tj tk tl tm tn to tr tt tv tw tz ua ug um \
    us uy uz va vc ve vg vi vn vu wf ws ye yt za zm zw";

/// Old or mistaken language codes people still write, and what they mean.
const LANGUAGE_HINTS: &[(&str, &str)] =
    &[("iw", "he"), ("in", "id"), ("ji", "yi"), ("jw", "jv"), ("mo", "ro"), ("jp", "ja"), ("cn", "zh"), ("gr", "el")];

/// Region codes people write that ISO 3166-1 does not assign.
const REGION_HINTS: &[(&str, &str)] = &[("uk", "gb")];

/// A valid hreflang value, lower-cased.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hreflang {
    /// `x-default`: the page for users no other alternate fits.
    XDefault,
    /// A language, optionally with a script and a region.
    Lang {
        /// ISO 639-1, lower case.
        language: String,
        /// ISO 15924 (four letters), lower case.
        script: Option<String>,
        /// ISO 3166-1 alpha-2, lower case.
        region: Option<String>,
    },
}

impl fmt::Display for Hreflang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hreflang::XDefault => f.write_str("x-default"),
            Hreflang::Lang { language, script, region } => {
                f.write_str(language)?;
                if let Some(s) = script {
                    write!(f, "-{s}")?;
                }
                if let Some(r) = region {
                    write!(f, "-{r}")?;
                }
                Ok(())
            }
        }
    }
}

fn in_list(list: &str, code: &str) -> bool {
    list.split_ascii_whitespace().any(|c| c == code)
}

fn is_alpha(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_alphabetic())
}

/// Parses an hreflang value; the error says what is wrong with it, in words a site owner can act
/// on.
///
/// # Errors
/// Why the value is not one search engines accept.
/// (A `String`: it becomes a finding's detail for the site owner, and no caller branches on it.)
pub fn parse(value: &str) -> Result<Hreflang, String> {
    let v = value.trim().to_ascii_lowercase();
    if v == "x-default" {
        return Ok(Hreflang::XDefault);
    }
    if v.is_empty() {
        return Err("empty".into());
    }
    if v.contains('_') {
        return Err(format!("use a hyphen, not an underscore ({})", v.replace('_', "-")));
    }
    let mut parts = v.split('-');
    let language = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    if !in_list(LANGUAGES, language) {
        if let Some((_, good)) = LANGUAGE_HINTS.iter().find(|(bad, _)| *bad == language) {
            return Err(format!("{language} is not an ISO 639-1 language code (use {good})"));
        }
        if is_alpha(language, 2) && in_list(REGIONS, language) && rest.is_empty() {
            return Err(format!(
                "{language} is a region, not a language: hreflang starts with the language (en-{})",
                language.to_ascii_uppercase()
            ));
        }
        return Err(if is_alpha(language, 3) {
            format!("{language} is not an ISO 639-1 language code: search engines take two-letter codes only")
        } else {
            format!("{language} is not an ISO 639-1 language code")
        });
    }
    let (script, region) = match rest.as_slice() {
        [] => (None, None),
        [s] if is_alpha(s, 4) => (Some(*s), None),
        [r] => (None, Some(*r)),
        [s, r] if is_alpha(s, 4) => (Some(*s), Some(*r)),
        _ => return Err("too many parts: hreflang is a language, optionally a script, optionally a region".into()),
    };
    if let Some(r) = region
        && !in_list(REGIONS, r)
    {
        if let Some((_, good)) = REGION_HINTS.iter().find(|(bad, _)| *bad == r) {
            return Err(format!(
                "{} is not an ISO 3166-1 region code (use {})",
                r.to_ascii_uppercase(),
                good.to_ascii_uppercase()
            ));
        }
        return Err(if r.bytes().all(|b| b.is_ascii_digit()) {
            format!("{r} is a UN M.49 region: search engines take ISO 3166-1 alpha-2 country codes only")
        } else {
            format!("{} is not an ISO 3166-1 alpha-2 region code", r.to_ascii_uppercase())
        });
    }
    Ok(Hreflang::Lang {
        language: language.to_owned(),
        script: script.map(str::to_owned),
        region: region.map(str::to_owned),
    })
}

/// Whether a page's `<html lang>` agrees with an hreflang value naming the page itself: the same
/// language, and the same region when both name one (`en` agrees with `en-GB`; `en-US` does not).
/// An `lang` that is not a language tag at all agrees with nothing; `x-default` with everything.
#[must_use]
pub fn html_lang_agrees(html_lang: &str, hreflang: &Hreflang) -> bool {
    let Hreflang::Lang { language, region, .. } = hreflang else { return true };
    let lang = html_lang.trim().to_ascii_lowercase().replace('_', "-");
    let mut parts = lang.split('-');
    if parts.next() != Some(language.as_str()) {
        return false;
    }
    let html_region = parts.find(|p| p.len() == 2 || p.bytes().all(|b| b.is_ascii_digit()));
    match (html_region, region) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// One finding about a page's own set of alternates, before it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetFinding {
    /// The code.
    pub code: Code,
    /// Its detail: stable (it names what is wrong, never a count).
    pub detail: String,
    /// Other URLs involved.
    pub related: Vec<String>,
}

/// The rules about one page's set of alternates, all sources together: invalid values, several
/// URLs for one value, no entry naming the page itself, no `x-default`. `entries` are (value as
/// written, target URL); targets compare as given, so give them normalised.
#[must_use]
pub fn judge_set(page: &str, entries: &[(String, String)]) -> Vec<SetFinding> {
    let mut out = Vec::new();
    let mut targets: BTreeMap<Hreflang, Vec<&str>> = BTreeMap::new();
    let mut invalid_seen: Vec<&str> = Vec::new();
    for (value, target) in entries {
        match parse(value) {
            Ok(h) => {
                let list = targets.entry(h).or_default();
                if !list.contains(&target.as_str()) {
                    list.push(target);
                }
            }
            Err(why) if !invalid_seen.contains(&value.as_str()) => {
                invalid_seen.push(value);
                let shown: String = value.chars().take(40).collect();
                out.push(SetFinding {
                    code: Code::HreflangInvalidCode,
                    detail: format!("{shown}: {why}"),
                    related: Vec::new(),
                });
            }
            Err(_) => {}
        }
    }
    if targets.is_empty() {
        return out;
    }
    for (value, list) in &targets {
        if list.len() > 1 {
            let mut related: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
            related.sort();
            related.truncate(crate::hreflang::MAX_RELATED);
            out.push(SetFinding { code: Code::HreflangConflict, detail: value.to_string(), related });
        }
    }
    if !targets.values().flatten().any(|t| *t == page) {
        out.push(SetFinding { code: Code::HreflangSelfMissing, detail: String::new(), related: Vec::new() });
    }
    if !targets.contains_key(&Hreflang::XDefault) {
        out.push(SetFinding { code: Code::HreflangXDefaultMissing, detail: String::new(), related: Vec::new() });
    }
    out
}

/// URLs listed in one finding's `related` at most.
pub const MAX_RELATED: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_lists_are_complete() {
        assert_eq!(LANGUAGES.split_ascii_whitespace().count(), 184, "ISO 639-1 (with bh)");
        assert_eq!(REGIONS.split_ascii_whitespace().count(), 249, "ISO 3166-1 alpha-2");
        for list in [LANGUAGES, REGIONS] {
            let mut codes: Vec<&str> = list.split_ascii_whitespace().collect();
            assert!(codes.iter().all(|c| is_alpha(c, 2) && c.bytes().all(|b| b.is_ascii_lowercase())));
            let n = codes.len();
            codes.sort_unstable();
            codes.dedup();
            assert_eq!(codes.len(), n, "no duplicates");
        }
    }

    #[test]
    fn values_search_engines_accept() {
        for ok in ["en", "EN-gb", "de-AT", "zh-Hant", "zh-Hant-TW", "x-default", "X-Default", " pt-BR "] {
            assert!(parse(ok).is_ok(), "{ok}: {:?}", parse(ok));
        }
        assert_eq!(parse("en-GB").map(|h| h.to_string()), Ok("en-gb".to_owned()));
    }

    #[test]
    fn values_they_ignore_and_why() {
        let why = |v: &str| parse(v).expect_err(v);
        assert!(why("en-UK").contains("use GB"), "{}", why("en-UK"));
        assert!(why("en_US").contains("hyphen"));
        assert!(why("eng").contains("two-letter"));
        assert!(why("us").contains("region, not a language"));
        assert!(why("es-419").contains("M.49"));
        assert!(why("iw").contains("use he"));
        assert!(why("en-EU").contains("EU is not"));
        assert!(why("de-DE-1996").contains("too many"));
        assert!(why("").contains("empty"));
    }

    #[test]
    fn html_lang_against_hreflang() {
        let h = |v: &str| parse(v).expect("valid");
        assert!(html_lang_agrees("en", &h("en-GB")));
        assert!(html_lang_agrees("en-GB", &h("en")));
        assert!(html_lang_agrees("EN_gb", &h("en-gb")));
        assert!(!html_lang_agrees("en-US", &h("en-GB")));
        assert!(!html_lang_agrees("de", &h("en")));
        assert!(html_lang_agrees("de", &h("x-default")));
        assert!(html_lang_agrees("zh-Hant-TW", &h("zh-TW")));
    }

    #[test]
    fn a_page_set_is_judged_as_a_whole() {
        let e = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
        };
        let codes = |f: Vec<SetFinding>| f.into_iter().map(|f| (f.code, f.detail)).collect::<Vec<_>>();
        let page = "https://a.test/en/";
        let good = e(&[("en", page), ("de", "https://a.test/de/"), ("x-default", page)]);
        assert_eq!(judge_set(page, &good), vec![]);
        let bad = e(&[("en-UK", page), ("en-UK", page), ("de", "https://a.test/de/"), ("DE", "https://a.test/de-de/")]);
        let found = codes(judge_set(page, &bad));
        assert_eq!(found.len(), 4, "{found:?}");
        assert_eq!(found[0].0, Code::HreflangInvalidCode, "once per value");
        assert_eq!(found[1], (Code::HreflangConflict, "de".to_owned()));
        assert_eq!(found[2].0, Code::HreflangSelfMissing, "en-UK is ignored, so nothing names the page");
        assert_eq!(found[3].0, Code::HreflangXDefaultMissing);
        assert_eq!(judge_set(page, &[]), vec![]);
    }
}
