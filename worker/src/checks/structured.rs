//! Structured-data rules: JSON-LD that does not parse, types Schema.org does not define, and for
//! the types Google shows rich results for, missing required and recommended properties and
//! values of the wrong kind (`structured_data_*`).
//!
//! The profiles below follow Google Search Central's structured-data documentation for each rich
//! result (required and recommended properties); a type is judged by the most specific profile
//! among itself and its Schema.org ancestors, so a `Restaurant` is a `LocalBusiness` and a
//! `BlogPosting` an `Article`. Nested items are judged too (an `Offer` inside a `Product`), and
//! an item nested where its parent names what it is about (a `Review` of a `Product`) does not
//! need `itemReviewed`.

use super::Check;
use crate::extract::structured::{Found, Item, StructuredData, Value};
use shoal_shared::finding::Code;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// Findings of one code per page, at most.
pub const MAX_PER_CODE: usize = 10;
/// Items judged per page, at most (nested ones included).
const MAX_ITEMS_JUDGED: usize = 500;

/// Schema.org's types and their parents (release 30.0; see the file's header).
const TYPES_TXT: &str = include_str!("schema_types.txt");

static TYPES: LazyLock<HashMap<&'static str, Vec<&'static str>>> = LazyLock::new(|| {
    TYPES_TXT
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.split(' ');
            let name = parts.next().unwrap_or("");
            let parents = parts.next().map(|p| p.split(',').collect()).unwrap_or_default();
            (name, parents)
        })
        .collect()
});

/// Whether Schema.org defines the type.
#[must_use]
pub fn is_schema_type(name: &str) -> bool {
    TYPES.contains_key(name)
}

/// The type and its ancestors, nearest first (breadth first), each once.
fn lineage(name: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let Some((&own, _)) = TYPES.get_key_value(name) else { return out };
    out.push(own);
    let mut i = 0;
    while let Some(&t) = out.get(i) {
        for p in TYPES.get(t).into_iter().flatten() {
            if !out.contains(p) {
                out.push(p);
            }
        }
        i += 1;
    }
    out
}

/// What a property's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A number, or text holding one with a `.` for decimals (no currency sign).
    Number,
    /// A whole number.
    Integer,
    /// An ISO 8601 date, optionally with a time.
    Date,
    /// An ISO 8601 duration (`PT1H30M`).
    Duration,
    /// A URL (text without spaces), or an item (an `ImageObject` for an image).
    Url,
    /// A three-letter ISO 4217 currency code.
    Currency,
    /// One of Schema.org's `ItemAvailability` values.
    Availability,
    /// An item (not text) of one of these types or their subtypes.
    ItemOf(&'static [&'static str]),
}

/// Google's rules for one rich-result type.
#[derive(Debug)]
struct Profile {
    ty: &'static str,
    /// Each inner list: one of these properties is required.
    required: &'static [&'static [&'static str]],
    recommended: &'static [&'static str],
    values: &'static [(&'static str, Kind)],
}

const OFFERS: Kind = Kind::ItemOf(&["Offer", "AggregateOffer"]);

const PROFILES: &[Profile] = &[
    Profile {
        ty: "Product",
        required: &[&["name"], &["offers", "review", "aggregateRating"]],
        recommended: &["image", "description", "brand", "sku"],
        values: &[
            ("offers", OFFERS),
            ("aggregateRating", Kind::ItemOf(&["AggregateRating"])),
            ("review", Kind::ItemOf(&["Review"])),
            ("image", Kind::Url),
        ],
    },
    Profile {
        ty: "Offer",
        required: &[&["price", "priceSpecification"]],
        recommended: &["priceCurrency", "availability"],
        values: &[
            ("price", Kind::Number),
            ("priceCurrency", Kind::Currency),
            ("availability", Kind::Availability),
            ("priceValidUntil", Kind::Date),
            ("url", Kind::Url),
        ],
    },
    Profile {
        ty: "AggregateOffer",
        required: &[&["lowPrice"], &["priceCurrency"]],
        recommended: &["highPrice", "offerCount"],
        values: &[
            ("lowPrice", Kind::Number),
            ("highPrice", Kind::Number),
            ("offerCount", Kind::Integer),
            ("priceCurrency", Kind::Currency),
        ],
    },
    Profile {
        ty: "AggregateRating",
        required: &[&["ratingValue"], &["ratingCount", "reviewCount"]],
        // bestRating and worstRating default to 5 and 1: needed only on other scales.
        recommended: &[],
        values: &[
            ("ratingValue", Kind::Number),
            ("ratingCount", Kind::Integer),
            ("reviewCount", Kind::Integer),
            ("bestRating", Kind::Number),
            ("worstRating", Kind::Number),
        ],
    },
    Profile {
        ty: "Review",
        required: &[&["author"], &["reviewRating"]],
        recommended: &["datePublished"],
        values: &[("reviewRating", Kind::ItemOf(&["Rating"])), ("datePublished", Kind::Date)],
    },
    Profile {
        ty: "Rating",
        required: &[&["ratingValue"]],
        // bestRating and worstRating default to 5 and 1: needed only on other scales.
        recommended: &[],
        values: &[("ratingValue", Kind::Number), ("bestRating", Kind::Number), ("worstRating", Kind::Number)],
    },
    Profile {
        ty: "Article",
        required: &[],
        recommended: &["headline", "image", "datePublished", "author"],
        values: &[("datePublished", Kind::Date), ("dateModified", Kind::Date), ("image", Kind::Url)],
    },
    Profile {
        ty: "BreadcrumbList",
        required: &[&["itemListElement"]],
        recommended: &[],
        values: &[("itemListElement", Kind::ItemOf(&["ListItem"]))],
    },
    Profile {
        ty: "ListItem",
        required: &[&["position"], &["name", "item"]],
        recommended: &[],
        values: &[("position", Kind::Integer), ("item", Kind::Url)],
    },
    Profile {
        ty: "LocalBusiness",
        required: &[&["name"], &["address"]],
        recommended: &["telephone", "url", "image", "openingHoursSpecification", "geo", "priceRange"],
        values: &[("url", Kind::Url), ("image", Kind::Url)],
    },
    Profile {
        ty: "Organization",
        required: &[],
        recommended: &["name", "url", "logo"],
        values: &[("url", Kind::Url), ("logo", Kind::Url)],
    },
    Profile {
        ty: "Event",
        required: &[&["name"], &["startDate"], &["location"]],
        recommended: &["description", "endDate", "eventStatus", "image", "offers", "organizer", "performer"],
        values: &[("startDate", Kind::Date), ("endDate", Kind::Date), ("offers", OFFERS), ("image", Kind::Url)],
    },
    Profile {
        ty: "FAQPage",
        required: &[&["mainEntity"]],
        recommended: &[],
        values: &[("mainEntity", Kind::ItemOf(&["Question"]))],
    },
    Profile {
        ty: "Question",
        required: &[&["name"], &["acceptedAnswer", "suggestedAnswer"]],
        recommended: &[],
        values: &[("acceptedAnswer", Kind::ItemOf(&["Answer"]))],
    },
    Profile { ty: "Answer", required: &[&["text"]], recommended: &[], values: &[] },
    Profile {
        ty: "Recipe",
        required: &[&["name"], &["image"]],
        recommended: &["author", "datePublished", "description", "recipeIngredient", "recipeInstructions", "totalTime"],
        values: &[
            ("image", Kind::Url),
            ("datePublished", Kind::Date),
            ("prepTime", Kind::Duration),
            ("cookTime", Kind::Duration),
            ("totalTime", Kind::Duration),
            ("aggregateRating", Kind::ItemOf(&["AggregateRating"])),
        ],
    },
    Profile {
        ty: "VideoObject",
        required: &[&["name"], &["thumbnailUrl"], &["uploadDate"]],
        recommended: &["description", "contentUrl", "embedUrl", "duration"],
        values: &[
            ("uploadDate", Kind::Date),
            ("duration", Kind::Duration),
            ("thumbnailUrl", Kind::Url),
            ("contentUrl", Kind::Url),
            ("embedUrl", Kind::Url),
        ],
    },
    Profile {
        ty: "JobPosting",
        required: &[
            &["title"],
            &["description"],
            &["datePosted"],
            &["hiringOrganization"],
            &["jobLocation", "applicantLocationRequirements"],
        ],
        recommended: &["validThrough", "employmentType", "baseSalary", "identifier"],
        values: &[("datePosted", Kind::Date), ("validThrough", Kind::Date)],
    },
];

/// Types whose standalone items must name what they are about (`itemReviewed`).
const NEEDS_SUBJECT: &[&str] = &["Review", "AggregateRating"];

/// The most specific profile for an item's types.
fn profile_of(item: &Item) -> Option<(&'static Profile, &str)> {
    for t in &item.types {
        for ancestor in lineage(t) {
            if let Some(p) = PROFILES.iter().find(|p| p.ty == ancestor) {
                return Some((p, t.as_str()));
            }
        }
    }
    None
}

/// The structured-data findings of one page.
#[must_use]
pub fn structured_checks(data: &StructuredData) -> Vec<Check> {
    let mut judge = Judge::default();
    for e in &data.errors {
        judge.add(Code::StructuredDataInvalid, e.clone());
    }
    for Found { item, .. } in &data.items {
        judge.item(item, false);
    }
    judge.out
}

#[derive(Debug, Default)]
struct Judge {
    out: Vec<Check>,
    seen: HashSet<(Code, String)>,
    per_code: HashMap<Code, usize>,
    judged: usize,
}

impl Judge {
    fn add(&mut self, code: Code, detail: String) {
        let n = self.per_code.entry(code).or_default();
        if *n >= MAX_PER_CODE || !self.seen.insert((code, detail.clone())) {
            return;
        }
        *n += 1;
        self.out.push((code, detail));
    }

    /// Judges an item and the items nested in it (at most `MAX_ITEM_DEPTH` deep: extraction
    /// keeps no deeper ones).
    fn item(&mut self, item: &Item, nested: bool) {
        if self.judged >= MAX_ITEMS_JUDGED {
            return;
        }
        self.judged += 1;
        if item.schema_org {
            for t in &item.types {
                if !is_schema_type(t) {
                    self.add(Code::StructuredDataUnknownType, t.clone());
                }
            }
        }
        if item.schema_org
            && let Some((profile, name)) = profile_of(item)
        {
            self.profile(item, profile, name, nested);
        }
        for (_, v) in &item.props {
            if let Value::Item(inner) = v {
                self.item(inner, true);
            }
        }
    }

    fn profile(&mut self, item: &Item, p: &Profile, name: &str, nested: bool) {
        for any in p.required {
            if !any.iter().any(|prop| item.has(prop)) {
                self.add(Code::StructuredDataMissingRequired, format!("{name}: missing {}", any.join(" or ")));
            }
        }
        if !nested && NEEDS_SUBJECT.contains(&p.ty) && !item.has("itemReviewed") {
            self.add(Code::StructuredDataMissingRequired, format!("{name}: missing itemReviewed"));
        }
        for prop in p.recommended {
            if !item.has(prop) {
                self.add(Code::StructuredDataMissingRecommended, format!("{name}: missing {prop}"));
            }
        }
        for (prop, kind) in p.values {
            for v in item.values(prop) {
                if let Some(why) = wrong(v, *kind) {
                    self.add(Code::StructuredDataWrongValue, format!("{name}: {prop} {why}"));
                }
            }
        }
    }
}

/// Why a value is not of the kind, if it is not.
fn wrong(v: &Value, kind: Kind) -> Option<String> {
    let text = match v {
        Value::Text(t) => Some(t.trim()),
        Value::Number(n) => Some(n.as_str()),
        Value::Bool(_) | Value::Item(_) => None,
    };
    let shown = |t: &str| format!("{:?}", t.chars().take(60).collect::<String>());
    match (kind, v, text) {
        (Kind::ItemOf(types), Value::Item(inner), _) => {
            let fits =
                inner.types.is_empty() || inner.types.iter().any(|t| lineage(t).iter().any(|a| types.contains(a)));
            (!fits).then(|| format!("is a {} where {} is expected", inner.types.join("/"), types.join(" or ")))
        }
        (Kind::ItemOf(types), _, Some(t)) => {
            Some(format!("is the text {} where {} is expected", shown(t), types.join(" or ")))
        }
        (Kind::Url, Value::Item(_), _) => None,
        (_, _, None) => Some("is not a text or a number".to_owned()),
        (Kind::Number, _, Some(t)) => (!is_number(t)).then(|| format!("{} is not a number", shown(t))),
        (Kind::Integer, _, Some(t)) => (t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| format!("{} is not a whole number", shown(t))),
        (Kind::Date, _, Some(t)) => (!is_iso_date(t)).then(|| format!("{} is not an ISO 8601 date", shown(t))),
        (Kind::Duration, _, Some(t)) => {
            (!is_iso_duration(t)).then(|| format!("{} is not an ISO 8601 duration", shown(t)))
        }
        (Kind::Url, _, Some(t)) => {
            (t.is_empty() || t.chars().any(char::is_whitespace)).then(|| format!("{} is not a URL", shown(t)))
        }
        (Kind::Currency, _, Some(t)) => (!(t.len() == 3 && t.bytes().all(|b| b.is_ascii_uppercase())))
            .then(|| format!("{} is not an ISO 4217 currency code", shown(t))),
        (Kind::Availability, _, Some(t)) => {
            let short = t.rsplit(['/', ':']).next().unwrap_or(t);
            (!AVAILABILITY.contains(&short)).then(|| format!("{} is not a Schema.org ItemAvailability", shown(t)))
        }
    }
}

/// Schema.org's `ItemAvailability` values.
const AVAILABILITY: &[&str] = &[
    "BackOrder",
    "Discontinued",
    "InStock",
    "InStoreOnly",
    "LimitedAvailability",
    "MadeToOrder",
    "OnlineOnly",
    "OutOfStock",
    "PreOrder",
    "PreSale",
    "Reserved",
    "SoldOut",
];

/// A decimal number with `.` for decimals, as Google reads prices and ratings.
fn is_number(t: &str) -> bool {
    let digits = t.strip_prefix('-').unwrap_or(t);
    let mut parts = digits.splitn(2, '.');
    let whole = parts.next().unwrap_or("");
    let frac = parts.next();
    !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

/// `YYYY-MM-DD`, optionally followed by `T` and a time starting `HH:MM`.
fn is_iso_date(t: &str) -> bool {
    let b = t.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    if !(digits(0..4) && b.get(4) == Some(&b'-') && digits(5..7) && b.get(7) == Some(&b'-') && digits(8..10)) {
        return false;
    }
    let month = (b[5] - b'0') * 10 + (b[6] - b'0');
    let day = (b[8] - b'0') * 10 + (b[9] - b'0');
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return false;
    }
    match b.get(10) {
        None => true,
        Some(b'T' | b' ') => digits(11..13) && b.get(13) == Some(&b':') && digits(14..16),
        Some(_) => false,
    }
}

/// `P[nY][nM][nW][nD][T[nH][nM][n[.n]S]]` with at least one part.
fn is_iso_duration(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('P') else { return false };
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let parts_ok = |s: &str, units: &str| -> Option<usize> {
        let mut count = 0;
        let mut number = String::new();
        let mut allowed = units;
        for c in s.chars() {
            if c.is_ascii_digit() || (c == '.' && !number.is_empty()) {
                number.push(c);
            } else {
                let at = allowed.find(c)?;
                if number.is_empty() {
                    return None;
                }
                number.clear();
                allowed = &allowed[at + 1..];
                count += 1;
            }
        }
        number.is_empty().then_some(count)
    };
    match (parts_ok(date, "YMWD"), time.map(|t| parts_ok(t, "HMS"))) {
        (Some(d), None) => d > 0,
        (Some(_), Some(Some(t))) => t > 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::structured::collect;
    use scraper::Html;

    fn checks(html: &str) -> Vec<(Code, String)> {
        structured_checks(&collect(&Html::parse_document(html)))
    }

    fn jsonld(json: &str) -> String {
        format!(r#"<script type="application/ld+json">{json}</script>"#)
    }

    #[test]
    fn the_vocabulary_knows_types_and_their_ancestors() {
        assert!(is_schema_type("Product") && is_schema_type("FAQPage") && !is_schema_type("Prodcut"));
        assert_eq!(lineage("Restaurant")[..3], ["Restaurant", "FoodEstablishment", "LocalBusiness"]);
        assert!(lineage("BlogPosting").contains(&"Article"));
        assert!(lineage("Nope").is_empty());
    }

    #[test]
    fn a_complete_product_raises_nothing() {
        let found = checks(&jsonld(
            r#"{"@context":"https://schema.org","@type":"Product","name":"Shoe","image":"https://a.test/s.png",
               "description":"A shoe","brand":{"@type":"Brand","name":"B"},"sku":"1",
               "offers":{"@type":"Offer","price":"19.99","priceCurrency":"EUR","availability":"https://schema.org/InStock"},
               "aggregateRating":{"@type":"AggregateRating","ratingValue":4.5,"reviewCount":10}}"#,
        ));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn every_rule_of_a_broken_product() {
        let found = checks(&jsonld(
            r#"{"@context":"https://schema.org","@type":"Product","description":"no name",
               "offers":{"@type":"Offer","price":"19,99 €","priceCurrency":"euro","availability":"in stock"},
               "review":"great"}"#,
        ));
        let has = |code: Code, detail: &str| found.iter().any(|(c, d)| *c == code && d == detail);
        assert!(has(Code::StructuredDataMissingRequired, "Product: missing name"), "{found:#?}");
        assert!(has(Code::StructuredDataMissingRecommended, "Product: missing brand"), "{found:#?}");
        assert!(has(Code::StructuredDataWrongValue, "Offer: price \"19,99 €\" is not a number"), "{found:#?}");
        assert!(has(Code::StructuredDataWrongValue, "Offer: priceCurrency \"euro\" is not an ISO 4217 currency code"));
        assert!(has(
            Code::StructuredDataWrongValue,
            "Offer: availability \"in stock\" is not a Schema.org ItemAvailability"
        ));
        assert!(has(Code::StructuredDataWrongValue, "Product: review is the text \"great\" where Review is expected"));
    }

    #[test]
    fn unknown_types_and_unparsable_blocks() {
        let found = checks(&format!(
            "{}{}{}",
            jsonld(r#"{"@context":"https://schema.org","@type":"Prodcut","name":"x"}"#),
            jsonld(r#"{"@context":"https://example.org/vocab","@type":"Widget"}"#),
            jsonld(r#"{"@type": "Product",}"#)
        ));
        assert_eq!(found.iter().filter(|(c, _)| *c == Code::StructuredDataUnknownType).count(), 1, "{found:?}");
        assert!(found.contains(&(Code::StructuredDataUnknownType, "Prodcut".into())));
        let invalid: Vec<_> = found.iter().filter(|(c, _)| *c == Code::StructuredDataInvalid).collect();
        assert_eq!(invalid.len(), 1);
        assert!(invalid[0].1.contains("trailing comma"), "{invalid:?}");
    }

    #[test]
    fn nested_reviews_need_no_subject_and_standalone_ones_do() {
        let review = r#"{"@type":"Review","author":{"@type":"Person","name":"A"},"reviewRating":{"@type":"Rating","ratingValue":"5"},"datePublished":"2026-01-02"}"#;
        let nested = checks(&jsonld(&format!(
            r#"{{"@context":"https://schema.org","@type":"Product","name":"x","image":"i","description":"d","brand":"b","sku":"s","review":{review}}}"#
        )));
        assert!(nested.is_empty(), "{nested:?}");
        let alone = checks(&jsonld(&review.replacen('{', r#"{"@context":"https://schema.org","#, 1)));
        assert_eq!(alone, vec![(Code::StructuredDataMissingRequired, "Review: missing itemReviewed".to_owned())]);
    }

    #[test]
    fn subtypes_use_their_ancestors_profile_and_microdata_is_judged_too() {
        let found = checks(
            r#"<div itemscope itemtype="https://schema.org/Restaurant"><span itemprop="name">Chez A</span></div>"#,
        );
        assert!(
            found.contains(&(Code::StructuredDataMissingRequired, "Restaurant: missing address".into())),
            "{found:?}"
        );
        let event = checks(&jsonld(
            r#"{"@context":"https://schema.org","@type":"Event","name":"E","startDate":"next friday","location":"x"}"#,
        ));
        assert!(event.contains(&(
            Code::StructuredDataWrongValue,
            "Event: startDate \"next friday\" is not an ISO 8601 date".into()
        )));
    }

    #[test]
    fn value_kinds() {
        for ok in ["1", "19.99", "-2.5", "0"] {
            assert!(is_number(ok), "{ok}");
        }
        for bad in ["", "19,99", "$5", "1.", ".5", "1e3"] {
            assert!(!is_number(bad), "{bad}");
        }
        for ok in ["2026-01-31", "2026-01-31T10:00", "2026-01-31T10:00:00+02:00", "2026-01-31 10:00"] {
            assert!(is_iso_date(ok), "{ok}");
        }
        for bad in ["31.01.2026", "2026-13-01", "2026-1-1", "2026-01-31X", "tomorrow"] {
            assert!(!is_iso_date(bad), "{bad}");
        }
        for ok in ["PT1H30M", "P1D", "PT45S", "P1Y2M3DT4H5M6.5S", "PT0.5S"] {
            assert!(is_iso_duration(ok), "{ok}");
        }
        for bad in ["P", "PT", "1H", "PT1H30", "PTM", "P1H", "PT1D"] {
            assert!(!is_iso_duration(bad), "{bad}");
        }
    }

    #[test]
    fn findings_per_code_are_capped() {
        let many: String = (0..100).map(|i| format!(r#"{{"@type":"Nope{i}"}},"#)).collect();
        let found = checks(&jsonld(&format!(r#"{{"@context":"https://schema.org","@graph":[{many}{{}}]}}"#)));
        assert_eq!(found.len(), MAX_PER_CODE);
    }
}
