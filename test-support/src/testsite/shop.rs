//! A small shop (issue 37): product pages with JSON-LD (complete, unparsable, incomplete and
//! wrongly typed), three product pages that say nearly the same, a print view that says exactly
//! what a product page says, a thin page, a category whose `rel=next` leads to a 404, an image
//! over the size budget, and pages without (or with bad) viewport, Open Graph and Twitter tags.
//! [`SHOP_PAGES`] names each path and what it is there for; the end-to-end tests audit it
//! (`content_shop.rs`, and a row of `finding_codes.rs` per code).

use super::{Route, Site};
use std::fmt::Write as _;

/// The shop's pages, as the home page links them, with what each is for.
pub const SHOP_PAGES: &[(&str, &str)] = &[
    ("/product/red", "complete Product JSON-LD; near-duplicate of blue and green; same text as /print/red"),
    ("/product/blue", "near-duplicate of red"),
    ("/product/green", "near-duplicate of red"),
    ("/print/red", "exactly the text of /product/red in another template"),
    ("/product/broken", "JSON-LD that does not parse"),
    ("/product/incomplete", "Product without name, a price that is not a number, an unknown type"),
    ("/about", "a thin page"),
    ("/shoes", "rel=next to a page that answers 404; an image over the budget"),
    ("/no-meta", "no viewport, Open Graph or Twitter card"),
    ("/bad-meta", "a viewport that stops zooming, incomplete Open Graph and Twitter tags, unsized images"),
];

/// A 1x1 PNG.
const PIXEL: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// Bytes of `/img/hero.jpg`: three times the default image budget (100 KiB).
pub const HERO_BYTES: usize = 300 * 1024;

const VOCABULARY: &[&str] = &[
    "leather", "sole", "comfort", "walk", "city", "rain", "stitch", "lace", "heel", "toe", "fit", "size", "warm",
    "light", "strong", "grip", "street", "trail", "summer", "winter", "craft", "hand", "made", "local", "order",
    "return", "free", "fast", "care", "clean", "brush", "polish", "wear", "daily", "office", "travel", "soft",
    "lining", "wool", "cotton", "rubber", "natural", "classic", "modern", "style", "colour", "shade", "pair",
];

/// `n` words drawn by a generator seeded with `seed`: texts of their own, alike only when seeded
/// alike.
#[must_use]
pub fn prose(seed: u64, n: usize) -> String {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = String::new();
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if i > 0 {
            out.push(' ');
        }
        out.push_str(VOCABULARY[usize::try_from(x % VOCABULARY.len() as u64).unwrap_or(0)]);
    }
    out
}

/// A page of the shop: `<head>` with `head`, the shop's header, navigation and footer around
/// `<main>{main}</main>`.
fn page(title: &str, head: &str, main: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <meta name=\"description\" content=\"{title} at the Shoal shoe shop\">{head}</head><body>\
         <header>Shoal Shoes</header><nav><a href=\"/\">Home</a> <a href=\"/shoes\">Shoes</a> \
         <a href=\"/about\">About</a></nav><main><h1>{title}</h1>{main}</main>\
         <footer>Shoal Shoes, Example Street 1, Sampletown</footer></body></html>"
    )
}

/// The tags of a page with nothing to report: viewport, Open Graph, Twitter card.
fn good_meta(base: &str, path: &str, title: &str) -> String {
    format!(
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta property=\"og:title\" content=\"{title}\"><meta property=\"og:image\" content=\"{base}/img/og.png\">\
         <meta property=\"og:url\" content=\"{base}{path}\"><meta name=\"twitter:card\" content=\"summary\">"
    )
}

fn jsonld(json: &str) -> String {
    format!("<script type=\"application/ld+json\">{json}</script>")
}

/// The product description the three shoes share, with their colour in it.
fn shoe_text(colour: &str) -> String {
    format!("<p>The {colour} shoe. {}</p><p>Made in {colour} leather. {}</p>", prose(7, 150), prose(8, 100))
}

fn product_jsonld(base: &str, name: &str, price: &str) -> String {
    jsonld(&format!(
        r#"{{"@context":"https://schema.org","@graph":[{{"@type":"Product","name":"{name}","image":"{base}/img/og.png",
            "description":"A shoe","brand":{{"@type":"Brand","name":"Shoal Shoes"}},"sku":"S-1",
            "offers":{{"@type":"Offer","price":"{price}","priceCurrency":"EUR","availability":"https://schema.org/InStock"}}}},
            {{"@type":"BreadcrumbList","itemListElement":[{{"@type":"ListItem","position":1,"name":"Shoes","item":"{base}/shoes"}},
            {{"@type":"ListItem","position":2,"name":"{name}"}}]}}]}}"#
    ))
}

/// The shop on `host`; `base` is its origin as the crawler sees it (`http://shop.test:PORT`), for
/// the absolute URLs of its Open Graph tags and structured data.
#[must_use]
pub fn shop(host: &str, base: &str) -> Site {
    let mut links = String::new();
    for (path, _) in SHOP_PAGES {
        let _ = write!(links, "<li><a href=\"{path}\">{path}</a></li>");
    }
    let organization = jsonld(&format!(
        r#"{{"@context":"https://schema.org","@type":"Organization","name":"Shoal Shoes","url":"{base}/","logo":"{base}/img/og.png"}}"#
    ));
    let home = page(
        "Shoal Shoes",
        &format!("{}{organization}", good_meta(base, "/", "Shoal Shoes")),
        &format!("<p>{}</p><ul>{links}</ul>", prose(1, 230)),
    );
    let shoe = |colour: &str, price: &str| {
        let path = format!("/product/{colour}");
        let name = format!("{colour} shoe");
        page(
            &name,
            &format!("{}{}", good_meta(base, &path, &name), product_jsonld(base, &name, price)),
            &shoe_text(colour),
        )
    };
    let print_red = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Print: red shoe</title>\
         <meta name=\"description\" content=\"Printable red shoe\">{}<link rel=\"canonical\" href=\"{base}/print/red\">\
         </head><body><main><h1>red shoe</h1>{}</main></body></html>",
        good_meta(base, "/print/red", "Print: red shoe"),
        shoe_text("red")
    );
    let broken = page(
        "Broken shoe",
        &format!(
            "{}{}",
            good_meta(base, "/product/broken", "Broken shoe"),
            jsonld(r#"{"@context":"https://schema.org","@type":"Product","name":"Broken shoe",}"#)
        ),
        &format!("<p>{}</p>", prose(2, 230)),
    );
    let incomplete = page(
        "Incomplete shoe",
        &format!(
            "{}{}",
            good_meta(base, "/product/incomplete", "Incomplete shoe"),
            jsonld(
                r#"[{"@context":"https://schema.org","@type":"Product","description":"No name",
                    "offers":{"@type":"Offer","price":"19,99 €","priceCurrency":"EUR"}},
                   {"@context":"https://schema.org","@type":"Prodcut","name":"Typo"}]"#
            )
        ),
        &format!("<p>{}</p>", prose(3, 230)),
    );
    let about = page("About us", &good_meta(base, "/about", "About us"), "<p>We sell shoes. Since 1999.</p>");
    let shoes = page(
        "Shoes",
        &format!("{}<link rel=\"next\" href=\"/shoes?page=2\">", good_meta(base, "/shoes", "Shoes")),
        &format!("<img src=\"/img/hero.jpg\" width=\"1200\" height=\"600\" alt=\"Shoes\"><p>{}</p>", prose(4, 230)),
    );
    let no_meta = page("Plain page", "", &format!("<p>{}</p>", prose(5, 230)));
    let bad_meta = page(
        "Bad tags",
        "<meta name=\"viewport\" content=\"width=1024, user-scalable=no\">\
         <meta property=\"og:title\" content=\"Bad tags\"><meta property=\"og:image\" content=\"/img/og.png\">\
         <meta name=\"twitter:card\" content=\"huge\">",
        &format!(
            "<img src=\"/img/og.png\" alt=\"a\"><img src=\"/img/og.png?2\" width=\"10\" alt=\"b\"><p>{}</p>",
            prose(6, 230)
        ),
    );
    let pixel = Route::bytes("image/png", PIXEL.to_vec()).header("cache-control", "max-age=3600");
    Site::new(host)
        .page("/", &home)
        .page("/product/red", &shoe("red", "59.00"))
        .page("/product/blue", &shoe("blue", "61.00"))
        .page("/product/green", &shoe("green", "63.00"))
        .page("/print/red", &print_red)
        .page("/product/broken", &broken)
        .page("/product/incomplete", &incomplete)
        .page("/about", &about)
        .page("/shoes", &shoes)
        .route("/shoes?page=2", Route::status(404))
        .page("/no-meta", &no_meta)
        .page("/bad-meta", &bad_meta)
        .route("/img/og.png", pixel.clone())
        .route("/img/og.png?2", pixel)
        .route(
            "/img/hero.jpg",
            Route::bytes("image/jpeg", vec![0xa5; HERO_BYTES]).header("cache-control", "max-age=3600"),
        )
}
