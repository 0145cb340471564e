//! The legal pages a site links to: its Impressum (imprint, legal notice) and its privacy policy,
//! found by the words of the links to them, and the details an Impressum must give (an e-mail
//! address and a postal address, as German, Austrian and Swiss law ask), found in its text.
//!
//! Pure functions over what extraction gives; the crawl step decides when to ask
//! (`crawl/page.rs`): the start page says which links exist, a page that is an Impressum (by its
//! address, title or heading) says whether it has the details.

/// Words that name an Impressum, in the languages its laws are written in and in English; matched
/// in a link's text or its URL's path, ASCII case-insensitively.
const IMPRINT_WORDS: &[&str] = &[
    "impressum",
    "imprint",
    "legal notice",
    "legal-notice",
    "legal_notice",
    "mentions légales",
    "mentions legales",
    "mentions-legales",
    "aviso legal",
    "aviso-legal",
    "note legali",
    "colofon",
    "anbieterkennzeichnung",
];

/// Words that name a privacy policy.
const PRIVACY_WORDS: &[&str] = &[
    "privacy",
    "datenschutz",
    "data protection",
    "data-protection",
    "confidentialité",
    "confidentialite",
    "protection des données",
    "privacidad",
    "privacybeleid",
    "informativa sulla privacy",
    "gdpr",
];

/// Street types that, followed by a house number, make a postal address.
const STREET_SUFFIXES: &[&str] = &[
    "straße", "strasse", "str.", "weg", "platz", "gasse", "allee", "ring", "damm", "ufer", "chaussee", "street", "st.",
    "road", "rd.", "avenue", "ave.", "lane", "rue", "via",
];

/// Country-code top-level domains whose sites must name their provider (Impressumspflicht).
const IMPRINT_TLDS: &[&str] = &["de", "at", "ch", "li"];

/// Top-level domains of the EU, the EEA, Switzerland and the UK, where the GDPR (or its
/// equivalent) wants visitors told how their data is processed.
const PRIVACY_TLDS: &[&str] = &[
    "at", "be", "bg", "ch", "cy", "cz", "de", "dk", "ee", "es", "eu", "fi", "fr", "gr", "hr", "hu", "ie", "is", "it",
    "li", "lt", "lu", "lv", "mt", "nl", "no", "pl", "pt", "ro", "se", "si", "sk", "uk",
];

/// Which legal page a link or a page is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legal {
    /// The Impressum (provider identification).
    Imprint,
    /// The privacy policy.
    Privacy,
}

fn names(words: &[&str], text: &str) -> bool {
    let t = text.to_lowercase();
    words.iter().any(|w| t.contains(w))
}

/// Whether a link names a legal page of this kind, by its text or its URL's path ("Impressum &
/// Datenschutz" names both).
#[must_use]
pub fn link_is(kind: Legal, text: Option<&str>, path: &str) -> bool {
    let words = match kind {
        Legal::Imprint => IMPRINT_WORDS,
        Legal::Privacy => PRIVACY_WORDS,
    };
    let path = path.replace(['-', '_'], " ");
    names(words, text.unwrap_or("")) || names(words, &path)
}

/// Whether a page is an Impressum, by its URL's path, its title or a top heading.
#[must_use]
pub fn is_imprint(path: &str, title: Option<&str>, h1: &[String]) -> bool {
    let path = path.replace(['-', '_'], " ");
    names(IMPRINT_WORDS, &path)
        || title.is_some_and(|t| names(IMPRINT_WORDS, t))
        || h1.iter().any(|h| names(IMPRINT_WORDS, h))
}

fn tld(host: &str) -> String {
    host.trim_end_matches('.').rsplit('.').next().unwrap_or("").to_ascii_lowercase()
}

fn german(lang: Option<&str>) -> bool {
    lang.is_some_and(|l| l.trim().to_ascii_lowercase().split(['-', '_']).next() == Some("de"))
}

/// Whether a site must have an Impressum: its start host is under a German, Austrian, Swiss or
/// Liechtenstein domain, or its start page is in German.
#[must_use]
pub fn imprint_required(host: &str, lang: Option<&str>) -> bool {
    IMPRINT_TLDS.contains(&tld(host).as_str()) || german(lang)
}

/// Whether a site is expected to link a privacy policy: it is under a domain of the EU, the EEA,
/// Switzerland or the UK, or in German. Elsewhere a missing link says too little to report.
#[must_use]
pub fn privacy_policy_expected(host: &str, lang: Option<&str>) -> bool {
    PRIVACY_TLDS.contains(&tld(host).as_str()) || german(lang)
}

/// What an Impressum's text gives of the details it must give.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContactDetails {
    /// An e-mail address (also written `name [at] example.de`, or a `mailto:` link).
    pub email: bool,
    /// A postal address: a postal code followed by a place, or a street with a house number.
    pub postal_address: bool,
}

impl ContactDetails {
    /// Reads the details from a page's text (whitespace-separated words, as extraction joins
    /// them); `mailto` says whether the page links to an e-mail address.
    #[must_use]
    pub fn scan(text: &str, mailto: bool) -> ContactDetails {
        let words: Vec<&str> = text.split_whitespace().collect();
        let email = mailto || words.iter().any(|w| looks_like_email(w)) || obfuscated_email(&words);
        let postal_address = words.windows(2).any(|w| postcode_then_place(w[0], w[1]))
            || words.windows(2).any(|w| street_then_number(w[0], w[1]))
            || words.windows(3).any(|w| street_then_number(&format!("{} {}", w[0], w[1]), w[2]));
        ContactDetails { email, postal_address }
    }
}

fn trim_punct(w: &str) -> &str {
    w.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '(' | ')' | '<' | '>' | '"' | '\'' | '[' | ']'))
}

/// `local@domain.tld`, with a dot in the domain and letters at its end.
fn looks_like_email(word: &str) -> bool {
    let w = trim_punct(word).trim_end_matches('.');
    let Some((local, domain)) = w.split_once('@') else { return false };
    let local_ok = !local.is_empty() && local.chars().all(|c| c.is_alphanumeric() || "._%+-".contains(c));
    let domain_ok = domain.contains('.')
        && domain.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-')
        && domain.rsplit('.').next().is_some_and(|tld| tld.len() >= 2 && tld.chars().all(char::is_alphabetic));
    local_ok && domain_ok
}

/// `info [at] example [dot] de`, `info(at)example.de`, `info at example.de`: the spam-shy forms.
fn obfuscated_email(words: &[&str]) -> bool {
    let joined = words.join(" ").to_lowercase();
    let normal = joined
        .replace(" [at] ", "@")
        .replace(" (at) ", "@")
        .replace("[at]", "@")
        .replace("(at)", "@")
        .replace(" [dot] ", ".")
        .replace(" (dot) ", ".")
        .replace("[dot]", ".")
        .replace("(dot)", ".");
    normal != joined && normal.split_whitespace().any(looks_like_email)
}

/// `10115 Berlin`, `1010 Wien`, `D-10115 Berlin`, `CH-8001 Zürich`. A four-digit number that
/// could be a year (`© 2024 Beispiel GmbH`) counts only with a country prefix.
fn postcode_then_place(code: &str, place: &str) -> bool {
    let code = trim_punct(code);
    let (prefixed, code) = match code.split_once('-') {
        Some((c, n)) if (1..=2).contains(&c.len()) && c.chars().all(char::is_alphabetic) => (true, n),
        _ => (false, code),
    };
    let digits = (4..=5).contains(&code.len()) && code.chars().all(|c| c.is_ascii_digit());
    let year_like = code.len() == 4 && code.parse::<u16>().is_ok_and(|y| (1900..=2099).contains(&y));
    let place = trim_punct(place);
    digits
        && (prefixed || !year_like)
        && place.chars().next().is_some_and(char::is_uppercase)
        && place.chars().filter(|c| c.is_alphabetic()).count() >= 2
}

/// `Hauptstraße 5`, `Am Markt 12a`, `Gartenweg 3-5`, `Main Street 10`.
fn street_then_number(street: &str, number: &str) -> bool {
    let street = trim_punct(street).to_lowercase();
    let number = trim_punct(number);
    let house = number.chars().next().is_some_and(|c| c.is_ascii_digit())
        && number.len() <= 8
        && number.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '/');
    house && STREET_SUFFIXES.iter().any(|s| street.ends_with(s) && street.len() > s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_links_are_named_by_their_words_or_their_path() {
        let (i, p) = (Legal::Imprint, Legal::Privacy);
        assert!(link_is(i, Some("Impressum"), "/x"));
        assert!(link_is(i, Some("Legal Notice"), "/x"));
        assert!(link_is(i, None, "/de/impressum.html"));
        assert!(
            link_is(i, Some("Impressum & Datenschutz"), "/legal")
                && link_is(p, Some("Impressum & Datenschutz"), "/legal")
        );
        assert!(link_is(p, Some("Datenschutzerklärung"), "/ds"));
        assert!(link_is(p, Some("Privacy Policy"), "/p"));
        assert!(link_is(p, None, "/privacy-policy/"));
        assert!(link_is(p, Some("Politique de confidentialité"), "/p"));
        assert!(!link_is(i, Some("About us"), "/about") && !link_is(p, Some("About us"), "/about"));
        assert!(is_imprint("/legal", Some("Impressum | Beispiel GmbH"), &[]));
        assert!(is_imprint("/x", None, &["Legal notice".into()]));
        assert!(!is_imprint("/about", Some("About"), &["About".into()]));
    }

    #[test]
    fn who_must_have_an_impressum() {
        assert!(imprint_required("www.beispiel.de", None));
        assert!(imprint_required("shop.example.at", Some("en")));
        assert!(imprint_required("example.com", Some("de-CH")));
        assert!(!imprint_required("example.com", Some("en-GB")));
        assert!(!imprint_required("example.co.uk", None));
        assert!(privacy_policy_expected("example.co.uk", None) && privacy_policy_expected("exemple.fr", Some("fr")));
        assert!(!privacy_policy_expected("example.com", Some("en")) && !privacy_policy_expected("a.test", None));
    }

    #[test]
    fn contact_details_in_an_impressums_text() {
        let full = "Beispiel GmbH Hauptstraße 5 10115 Berlin Telefon: 030 123 E-Mail: info@beispiel.de";
        assert_eq!(ContactDetails::scan(full, false), ContactDetails { email: true, postal_address: true });
        let obfuscated = "Kontakt: info [at] beispiel [dot] de, Am Markt 12a, 1010 Wien";
        assert_eq!(ContactDetails::scan(obfuscated, false), ContactDetails { email: true, postal_address: true });
        let no_mail = "Beispiel AG, Bahnhofstrasse 1, CH-8001 Zürich";
        assert_eq!(ContactDetails::scan(no_mail, false), ContactDetails { email: false, postal_address: true });
        assert!(ContactDetails::scan(no_mail, true).email, "a mailto: link gives an address");
        let nothing = "Verantwortlich für den Inhalt: Max Mustermann. Alle Rechte vorbehalten 2024.";
        assert_eq!(ContactDetails::scan(nothing, false), ContactDetails::default());
        assert!(!looks_like_email("@handle"), "a social handle is not an e-mail address");
        assert!(!looks_like_email("user@localhost"));
        assert!(!postcode_then_place("2024", "Beispiel"), "a year before a name is no postal code");
        assert!(postcode_then_place("A-2000", "Stockerau"), "with its country prefix it is");
    }
}
