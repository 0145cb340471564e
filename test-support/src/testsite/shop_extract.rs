//! A small shop for the tests of issue 37 (parts 5, 6 and 8; served as `shop-extract.test`, beside
//! the content shop [`super::shop`] and the links shop [`super::shop_links`]): a robots.txt that
//! treats AI crawlers differently, prices to extract, an out-of-stock notice to search for, an
//! llms.txt that departs from its format, and a second version of the shop for comparing two audits
//! URL by URL.
//!
//! Every URL that changes answers its first request with the first version and every later one
//! with the second ([`Route::sequence`]): an audit requests each URL once, so two audits in a row
//! see the shop before and after. What changes from the first version to the second:
//!
//! | URL | first | second |
//! |---|---|---|
//! | `/products/kettle` | price € 19.99 | price € 17.49 (an extracted value) |
//! | `/products/mug` | title "Mug" | title "Mug, large" |
//! | `/about` | indexable | `noindex` |
//! | `/products/spoon` | 200 | 410 |
//! | `/products/teapot` | linked from `/` | no longer linked (removed) |
//! | `/products/cup` | not linked | linked from `/` (added) |

use super::{Route, Site};

/// The shop's robots.txt: GPTBot, CCBot and Google-Extended may read nothing, ClaudeBot nothing under
/// `/products/`, everyone else everything but the cart.
pub const SHOP_ROBOTS: &str = "User-agent: GPTBot\nUser-agent: CCBot\nUser-agent: Google-Extended\nDisallow: /\n\n\
     User-agent: ClaudeBot\nDisallow: /products/\n\nUser-agent: *\nDisallow: /cart\n";

/// An llms.txt that does not start with an H1 title and has a section without links.
pub const SHOP_LLMS_TXT: &str = "Kettle Shop\n\n## Products\n\n- kettles and teapots\n";

/// Rules that read the shop: the price's text, the price's `content` attribute, and the SKU in the
/// HTML source.
pub const SHOP_EXTRACT: [&str; 3] =
    ["price=css:.price", "price_meta=css:meta[itemprop=price]@content", "sku=regex:SKU-([0-9]+)"];

/// Rules that flag the teapot (out of stock) and the pages without a price.
pub const SHOP_SEARCH: [&str; 2] = ["oos=regex:(?i)out of stock", "no-price=!regex:€\\s*\\d"];

/// The pages of the first version that the crawl reaches (the cart is disallowed for every robot).
pub const SHOP_PAGES: [&str; 6] =
    ["/", "/products/kettle", "/products/teapot", "/products/mug", "/products/spoon", "/about"];

fn page(title: &str, body: &str, head: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <meta name=\"description\" content=\"{title} at the Kettle Shop\">{head}</head>\
         <body><h1>{title}</h1>{body}</body></html>"
    )
}

fn product(title: &str, price: &str, sku: u32, stock: &str) -> String {
    page(
        title,
        &format!("<p class=\"price\">€ {price}</p><p class=\"stock\">{stock}</p><a href=\"/\">Home</a>"),
        &format!("<meta itemprop=\"price\" content=\"{price}\"><script>var sku = \"SKU-{sku}\";</script>"),
    )
}

fn home(products: &[&str]) -> String {
    let links: String = products.iter().map(|p| format!("<li><a href=\"/products/{p}\">{p}</a></li>")).collect();
    page("Kettle Shop", &format!("<ul>{links}</ul><a href=\"/about\">About us</a> <a href=\"/cart\">Cart</a>"), "")
}

/// First version, then second.
fn versions(first: String, second: String) -> Route {
    Route::sequence(vec![Route::html(first), Route::html(second)])
}

/// The shop on `host` (see the module documentation).
#[must_use]
pub fn shop(host: &str) -> Site {
    Site::new(host)
        .robots_txt(SHOP_ROBOTS)
        .route("/llms.txt", Route::text(SHOP_LLMS_TXT))
        .route("/", versions(home(&["kettle", "teapot", "mug", "spoon"]), home(&["kettle", "mug", "spoon", "cup"])))
        .route(
            "/products/kettle",
            versions(product("Kettle", "19.99", 1001, "In stock"), product("Kettle", "17.49", 1001, "In stock")),
        )
        .page("/products/teapot", &product("Teapot", "24.50", 1002, "Out of stock"))
        .route(
            "/products/mug",
            versions(product("Mug", "7.00", 1003, "In stock"), product("Mug, large", "7.00", 1003, "In stock")),
        )
        .route(
            "/products/spoon",
            Route::sequence(vec![Route::html(product("Spoon", "2.00", 1004, "In stock")), Route::status(410)]),
        )
        .page("/products/cup", &product("Cup", "5.00", 1005, "In stock"))
        .route(
            "/about",
            versions(
                page("About us", "<p>We sell kettles since 1999.</p>", ""),
                page("About us", "<p>We sell kettles since 1999.</p>", "<meta name=\"robots\" content=\"noindex\">"),
            ),
        )
        .page("/cart", &page("Cart", "<p>Nothing here yet.</p>", ""))
}
