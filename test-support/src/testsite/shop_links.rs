//! A shop with broken hreflang, sections an audit excludes, images in `srcset` and `<picture>`, and
//! fonts and backgrounds in its stylesheets (issue 37): the site of the end-to-end tests of those
//! checks and of their rows in the finding-code table.
//!
//! What is wrong with it, by design (paths on the shop's host):
//!
//! | path | what |
//! |---|---|
//! | `/` | language chooser: alternates for `/en/` and `/de/` but not itself, no `x-default` |
//! | `/en/` | the full set: alternates `/fr/` (404), `/es/` (redirects), `/it/` (noindex), `/pt/` (canonical elsewhere), `/nl/` (does not name `/en/` back), `/private/ja/` (robots.txt disallows it), `en-UK` (no such region) |
//! | `/de/` | `<html lang="en">` but its own hreflang says `de`; two URLs for `de`; its `x-default` only in its `Link` header |
//! | `/at/` | alternates only in the sitemap; `/` does not name it back |
//! | `/many-langs/` | more alternates than a page is read for |
//! | `/cart/`, `/account/…`, `/css/…` `url(/cart/icon.png)` | what [`EXCLUDE`] keeps out: never requested |
//! | `/shop/shoes?utm_source=…`, `?sid=…` | what [`STRIP_QUERY`] strips: requested without them |
//! | `/shop/shoes` | `rel=next` to `/shop/shoes/2?sid=7`, which answers 404: judged without `sid` |
//! | `/css/shop.css` | `@import`s `base.css`, fonts (`/fonts/missing.woff` is 404), a background |
//! | `/img/p-960.jpg` | a `srcset` candidate that is 404 |

use super::{Route, Site};

/// The exclude rules the tests audit the shop with (`--exclude`).
pub const EXCLUDE: [&str; 2] = ["/cart/", "/account/"];
/// The query parameters they strip (`--strip-query`).
pub const STRIP_QUERY: [&str; 2] = ["utm_*", "sid"];
/// Paths that must never be requested with [`EXCLUDE`].
pub const NEVER_REQUESTED: [&str; 4] = ["/cart/", "/cart/icon.png", "/account/login", "/private/ja/"];
/// Resources only `srcset`, `<picture>`, inline CSS and the stylesheets name: each must be
/// requested.
pub const CSS_AND_SRCSET: [&str; 11] = [
    "/css/base.css",
    "/css/bg.png",
    "/fonts/shop.woff2",
    "/fonts/missing.woff",
    "/fonts/inline.woff2",
    "/img/hero.jpg",
    "/img/p-480.jpg",
    "/img/p-960.jpg",
    "/img/p.webp",
    "/img/p@2x.webp",
    "/img/banner.png",
];

/// A tiny valid PNG body (served for every image).
const PIXEL: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

fn page(lang: &str, title: &str, head: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"{lang}\"><head><title>{title}</title>\
         <meta name=\"description\" content=\"{title} of the test shop\">{head}</head>\
         <body><h1>{title}</h1>{body}</body></html>"
    )
}

fn alternates(u: &dyn Fn(&str) -> String, set: &[(&str, &str)]) -> String {
    set.iter()
        .map(|(lang, path)| format!("<link rel=\"alternate\" hreflang=\"{lang}\" href=\"{}\">", u(path)))
        .collect()
}

/// The shop on `host`; `u` makes absolute URLs of it (hreflang, robots.txt and sitemaps name them).
#[must_use]
pub fn shop(host: &str, u: &dyn Fn(&str) -> String) -> Site {
    let home_body = "<a href=\"/en/\">English</a> <a href=\"/de/\">Deutsch</a> <a href=\"/many-langs/\">more</a>\
        <a href=\"/cart/\">Cart</a> <a href=\"/account/login\">Log in</a>\
        <a href=\"/shop/shoes?utm_source=news&amp;color=red\">Red shoes</a> <a href=\"/shop/shoes?sid=123\">Shoes</a>\
        <img src=\"/img/p.jpg\" srcset=\"/img/p-480.jpg 480w, /img/p-960.jpg 960w\" alt=\"Product\">\
        <picture><source type=\"image/webp\" srcset=\"/img/p.webp 1x, /img/p@2x.webp 2x\"><img src=\"/img/p.jpg\" alt=\"P\"></picture>\
        <div style=\"background-image: url(/img/banner.png)\">Sale</div>";
    let home_head = format!(
        "<link rel=\"stylesheet\" href=\"/css/shop.css\"><style>@font-face{{font-family:I;src:url(/fonts/inline.woff2)}}</style>{}",
        alternates(u, &[("en", "/en/"), ("de", "/de/")])
    );
    let en = alternates(
        u,
        &[
            ("en", "/en/"),
            ("de", "/de/"),
            ("fr", "/fr/"),
            ("es", "/es/"),
            ("it", "/it/"),
            ("pt", "/pt/"),
            ("nl", "/nl/"),
            ("ja", "/private/ja/"),
            ("en-UK", "/uk/"),
            ("x-default", "/"),
        ],
    );
    let de = alternates(u, &[("de", "/de/"), ("de", "/de-alt/"), ("en", "/en/")]);
    let many: String = (0..1_001)
        .map(|i| format!("<link rel=\"alternate\" hreflang=\"en\" href=\"http://elsewhere.test/{i}\">"))
        .collect();
    let sitemap = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
         <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:xhtml=\"http://www.w3.org/1999/xhtml\">\
         <url><loc>{at}</loc><xhtml:link rel=\"alternate\" hreflang=\"de-AT\" href=\"{at}\"/>\
         <xhtml:link rel=\"alternate\" hreflang=\"x-default\" href=\"{home}\"/></url></urlset>",
        at = u("/at/"),
        home = u("/")
    );
    let shop_css = "@import \"base.css\";\n\
        @font-face { font-family: Shop; src: url(../fonts/shop.woff2) format(\"woff2\"), url('/fonts/missing.woff') format(\"woff\"); }\n\
        .hero { background: url(/img/hero.jpg) no-repeat; }\n\
        .cart { background: url(/cart/icon.png); }\n\
        /* url(/img/commented-out.png) */\n";
    let image = || Route::bytes("image/png", PIXEL).header("cache-control", "max-age=3600");
    let css = |body: &str| Route::bytes("text/css", body.as_bytes().to_vec()).header("cache-control", "max-age=3600");
    Site::new(host)
        .robots_txt(&format!("User-agent: *\nDisallow: /private/\n\nSitemap: {}\n", u("/sitemap.xml")))
        .page("/", &page("en", "Shop", &home_head, home_body))
        .page("/en/", &page("en", "Shop in English", &en, "<a href=\"/\">Home</a>"))
        .route(
            "/de/",
            Route::html(page("en", "Shop auf Deutsch", &de, "<a href=\"/\">Start</a>"))
                .header("link", &format!("<{}>; rel=\"alternate\"; hreflang=\"x-default\"", u("/"))),
        )
        .page("/de-alt/", &page("de", "Shop (alt)", "", ""))
        .route("/fr/", Route::status(404))
        .route("/es/", Route::redirect(301, "/es/home/"))
        .page("/es/home/", &page("es", "Tienda", "", ""))
        .page("/it/", &page("it", "Negozio", "<meta name=\"robots\" content=\"noindex\">", ""))
        .page("/pt/", &page("pt", "Loja", &format!("<link rel=\"canonical\" href=\"{}\">", u("/pt/main/")), ""))
        .page("/pt/main/", &page("pt", "Loja principal", "", ""))
        .page("/nl/", &page("nl", "Winkel", "", ""))
        .page("/private/ja/", &page("ja", "Private", "", ""))
        .page("/at/", &page("de-AT", "Shop Österreich", "", ""))
        .page("/many-langs/", &page("en", "Many languages", &many, ""))
        .page("/cart/", &page("en", "Cart", "", ""))
        .page("/account/login", &page("en", "Log in", "", ""))
        .page("/shop/shoes", &page("en", "Shoes", "<link rel=\"next\" href=\"/shop/shoes/2?sid=7\">", ""))
        .route("/shop/shoes/2", Route::status(404))
        .route("/sitemap.xml", Route::bytes("application/xml", sitemap.into_bytes()))
        .route("/css/shop.css", css(shop_css))
        .route("/css/base.css", css("body { background: url(bg.png); }"))
        .route("/css/bg.png", image())
        .route(
            "/fonts/shop.woff2",
            Route::bytes("font/woff2", b"wOF2".to_vec()).header("cache-control", "max-age=3600"),
        )
        .route(
            "/fonts/inline.woff2",
            Route::bytes("font/woff2", b"wOF2".to_vec()).header("cache-control", "max-age=3600"),
        )
        .route("/img/p.jpg", image())
        .route("/img/p-480.jpg", image())
        .route("/img/p.webp", image())
        .route("/img/p@2x.webp", image())
        .route("/img/hero.jpg", image())
        .route("/img/banner.png", image())
        .route("/cart/icon.png", image())
}
