//! Pages for the browser check (`worker/src/browser/`): known layout shifts, a slow largest image,
//! accessibility faults, keyboard traps, consent banners with a tracker on a second host, and a
//! script that reaches for a refused address. The tests open them in real Chromium and compare what
//! the engine measured with what these pages are built to show, and with this server's log.
//!
//! Hosts: [`SHOP`] (the audited site) and [`TRACKER`] (a third party that sets a cookie). Pages
//! reach the tracker on the same port as themselves (`location.port`), since the server serves
//! every host on one port.

use std::time::Duration;

use super::{Route, Site};

/// The audited site of the browser pages.
pub const SHOP: &str = "shop.test";
/// The third-party tracker the consent pages load.
pub const TRACKER: &str = "tracker.test";
/// How long the server holds the slow page's largest image.
pub const SLOW_IMAGE_DELAY: Duration = Duration::from_millis(3_000);

/// A block of text that fills the desktop viewport, so a shift of it moves most of the screen.
const FILLER: &str = r#"<div id="content" style="font:20px/1.5 sans-serif;width:1200px">
<h1>Products</h1>
<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.</p>
<p>Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum.</p>
<p>Sed ut perspiciatis unde omnis iste natus error sit voluptatem accusantium doloremque laudantium, totam rem aperiam, eaque ipsa quae ab illo inventore veritatis et quasi architecto beatae vitae dicta sunt explicabo.</p>
<p>Nemo enim ipsam voluptatem quia voluptas sit aspernatur aut odit aut fugit, sed quia consequuntur magni dolores eos qui ratione voluptatem sequi nesciunt.</p>
<div style="height:500px;background:#eef">More products below.</div>
</div>"#;

fn page(title: &str, head: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>{head}</head><body>{body}</body></html>"
    )
}

/// A 1200x600 picture: SVG, so its intrinsic size is its displayed size, with enough detail (over
/// 0.05 bits per pixel: 600 coloured tiles) that Chromium counts it for LCP rather than ignoring it
/// as a low-entropy placeholder.
fn picture(colour: &str) -> Route {
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" height=\"600\"><rect width=\"1200\" height=\"600\" fill=\"{colour}\"/>"
    );
    for i in 0..600u32 {
        let (x, y) = ((i % 30) * 40, (i / 30) * 30);
        let shade = (i * 37) % 256;
        svg.push_str(&format!(
            "<rect x=\"{x}\" y=\"{y}\" width=\"38\" height=\"28\" fill=\"rgb({shade},{},{})\"/>",
            (shade * 7) % 256,
            255 - shade
        ));
    }
    svg.push_str("</svg>");
    Route::bytes("image/svg+xml", svg.into_bytes())
}

/// The consent banner: a fixed box with Accept and, when `reject` is given, a reject button.
fn banner(reject: Option<&str>) -> String {
    let reject = reject.map(|r| format!("<button id=\"no\" type=\"button\">{r}</button>")).unwrap_or_default();
    format!(
        r#"<div id="cookie-notice" role="dialog" style="position:fixed;bottom:0;left:0;right:0;background:#222;color:#fff;padding:16px">
<p>We use cookies to improve your experience.</p>
<button id="yes" type="button">Accept all</button> {reject} <button type="button">Settings</button></div>"#
    )
}

/// Loads the tracker (before any consent) unless `respect` and the visitor said No.
fn tracker_script(respect: bool) -> String {
    let gate = if respect { "if (!document.cookie.includes('consent=no'))" } else { "" };
    format!(
        r#"<script>
{gate} {{ const s = document.createElement('script'); s.src = 'http://{TRACKER}:' + location.port + '/t.js'; document.head.appendChild(s); }}
const no = document.getElementById('no');
if (no) no.addEventListener('click', () => {{ document.cookie = 'consent=no; path=/'; document.getElementById('cookie-notice').remove(); }});
if (document.cookie.includes('consent=')) {{ const b = document.getElementById('cookie-notice'); if (b) b.remove(); }}
</script>"#
    )
}

/// The browser test pages. `private_port` is the port of a listener on 127.0.0.2 that the
/// `/private` page's script tries to fetch from (the test refuses that address and watches the
/// listener get no connection).
pub fn browser_sites(private_port: u16) -> Vec<Site> {
    let shift = page(
        "Shifting",
        "",
        &format!(
            r#"{FILLER}<script>
addEventListener('load', () => setTimeout(() => {{
  const ad = document.createElement('div');
  ad.style.cssText = 'height:500px;background:#fc0';
  ad.textContent = 'Advertisement';
  document.body.insertBefore(ad, document.body.firstChild);
}}, 100));
</script>"#
        ),
    );
    let stable = page("Stable", "", FILLER);
    let slow = page("Slow hero", "", r#"<p>Welcome</p><img src="/hero.svg" width="1200" height="600" alt="Our shop">"#);
    let a11y = page(
        "Faults",
        "",
        r#"<main><h1>Faults</h1><img src="/pic.svg" width="120" height="60">
<p style="color:#c8c8c8;background:#ffffff">Low contrast text that is hard to read.</p>
<input type="text" name="q"></main>"#,
    );
    let trap = page(
        "Trap",
        "",
        r#"<a href="/stable">Home</a>
<div id="widget"><button id="t1" type="button">One</button> <button id="t2" type="button">Two</button></div>
<a href="/stable">After one</a> <a href="/a11y">After two</a>
<script>
const t1 = document.getElementById('t1'), t2 = document.getElementById('t2');
document.addEventListener('keydown', (e) => {
  if (e.key === 'Tab' && document.activeElement === t2) { e.preventDefault(); t1.focus(); }
});
</script>"#,
    );
    let no_focus = page(
        "No focus style",
        "<style>a:focus, a:focus-visible, button:focus, button:focus-visible { outline: none; }</style>",
        r##"<a href="#main">Skip to content</a> <a href="/stable">Home</a> <button type="button">Menu</button>
<main id="main"><h1>Content</h1></main>"##,
    );
    let consent = page(
        "Consent",
        "",
        &format!("<main><h1>Shop</h1></main>{}{}", banner(Some("Reject all")), tracker_script(true)),
    );
    let leaky = page(
        "Leaky consent",
        "",
        &format!("<main><h1>Shop</h1></main>{}{}", banner(Some("Alle ablehnen")), tracker_script(false)),
    );
    let no_reject = page("No reject", "", &format!("<main><h1>Shop</h1></main>{}", banner(None)));
    let private = page(
        "Private",
        "",
        &format!(
            r#"<main><h1>Private</h1></main><script>
fetch('http://127.0.0.2:{private_port}/secret').catch(() => {{}});
try {{ new WebSocket('ws://127.0.0.2:{private_port}/socket'); }} catch (_) {{}}
try {{ new Worker('data:text/javascript,fetch("http://127.0.0.2:{private_port}/worker")'); }} catch (_) {{}}
fetch('/reached').catch(() => {{}});
</script>"#
        ),
    );
    let tracker_js =
        "document.cookie = '_trk=1; path=/'; new Image().src = 'http://tracker.test:' + location.port + '/pixel.gif';";
    vec![
        Site::new(SHOP)
            .page("/shift", &shift)
            .page("/stable", &stable)
            .page("/slow", &slow)
            .route("/hero.svg", Route::slow(SLOW_IMAGE_DELAY, picture("#36c")))
            .page("/a11y", &a11y)
            .route("/pic.svg", picture("#c63"))
            .page("/trap", &trap)
            .page("/nofocus", &no_focus)
            .page("/consent", &consent)
            .page("/consent-leaky", &leaky)
            .page("/consent-noreject", &no_reject)
            .page("/private", &private)
            .route("/reached", Route::text("ok")),
        Site::new(TRACKER)
            .route(
                "/t.js",
                Route::bytes("text/javascript", tracker_js.as_bytes().to_vec()).header("set-cookie", "uid=42; Path=/"),
            )
            .route("/pixel.gif", Route::bytes("image/gif", PIXEL.to_vec()).header("set-cookie", "px=1; Path=/")),
    ]
}

/// Hostile pages for the browser's network wall (issue 36's red team): each one tries to reach
/// `127.0.0.2` on the page's own port, an address the tests refuse (it stands in for a private
/// network or a cloud metadata service) and on which they listen, over TCP and UDP, to see that
/// nothing arrives. Served by [`SHOP`], and `/rebind` by [`REBIND`].
#[must_use]
pub fn hostile_sites() -> Vec<Site> {
    let refused = "'http://127.0.0.2:' + location.port";
    let reject_newtab = page(
        "Reject opens a tab",
        "",
        r#"<main><h1>Shop</h1></main>
<div id="cookie-notice" role="dialog" style="position:fixed;bottom:0;left:0;right:0;background:#222;color:#fff;padding:16px">
<p>We use cookies to improve your experience.</p>
<button id="yes" type="button">Accept all</button> <a id="no" target="_blank" href="/placeholder">Reject all</a></div>
<script>document.getElementById('no').href = 'http://127.0.0.2:' + location.port + '/latest/meta-data/iam';</script>"#,
    );
    let keydown = page(
        "Tab opens tabs",
        "",
        &format!(
            r#"<a href="/stable">Home</a> <a id="away" target="_blank" href="/placeholder">Away</a> <button type="button">Menu</button>
<script>
const away = document.getElementById('away');
away.href = {refused} + '/keydown-link';
document.addEventListener('keydown', () => {{
  away.click();
  const detached = document.createElement('a');
  detached.target = '_blank';
  detached.href = {refused} + '/keydown-detached';
  detached.click();
  const f = document.createElement('form');
  f.target = '_blank'; f.method = 'get'; f.action = {refused} + '/keydown-form';
  document.body.appendChild(f);
  f.submit();
}});
</script>"#
        ),
    );
    let speculation = page(
        "Speculation",
        "",
        r#"<main><h1>Fast shop</h1><a href="/stable">Next</a></main>
<script>
const rules = document.createElement('script');
rules.type = 'speculationrules';
const target = 'http://127.0.0.2:' + location.port;
rules.textContent = JSON.stringify({
  prefetch: [{ source: 'list', urls: [target + '/prefetch'], eagerness: 'immediate' }],
  prerender: [{ source: 'list', urls: [target + '/prerender'], eagerness: 'immediate' }],
});
document.head.appendChild(rules);
const hint = document.createElement('link');
hint.rel = 'prefetch'; hint.href = target + '/link-prefetch';
document.head.appendChild(hint);
const pre = document.createElement('link');
pre.rel = 'preconnect'; pre.href = target;
document.head.appendChild(pre);
</script>"#,
    );
    let webrtc = page(
        "Calls",
        "",
        r#"<main><h1>Call us</h1></main>
<script>
const relay = '127.0.0.2:' + location.port;
for (const make of [window.RTCPeerConnection, window.webkitRTCPeerConnection]) {
  try {
    const pc = new make({ iceServers: [
      { urls: 'stun:' + relay },
      { urls: ['turn:' + relay + '?transport=udp', 'turn:' + relay + '?transport=tcp'], username: 'u', credential: 'p' },
    ] });
    pc.createDataChannel('x');
    pc.createOffer().then((o) => pc.setLocalDescription(o)).catch(() => {});
  } catch (_) {}
}
// The same from a frame the probe reaches too, and from a page in a new window.
const f = document.createElement('iframe');
f.srcdoc = '<script>try { const pc = new RTCPeerConnection({ iceServers: [{ urls: "stun:' + relay + '" }] }); pc.createDataChannel("y"); pc.createOffer().then((o) => pc.setLocalDescription(o)); } catch (_) {}<\/script>';
document.body.appendChild(f);
</script>"#,
    );
    let rebind = page(
        "Rebinding",
        "",
        r#"<main><h1>Rebinding</h1><img id="late" alt="late"></main>
<script>
setTimeout(() => {
  fetch('/again').catch(() => {});
  document.getElementById('late').src = '/late.gif';
}, 1500);
</script>"#,
    );
    let system_dns = page(
        "System names",
        "",
        r#"<main><h1>Names</h1></main>
<script>
fetch('http://localhost:' + location.port + '/leak').catch(() => {});
new Image().src = 'http://localhost.localdomain:' + location.port + '/leak-image';
</script>"#,
    );
    let memory = page(
        "Memory bomb",
        "",
        r#"<main><h1>Loading…</h1></main>
<script>
const hoard = [];
setInterval(() => { for (let i = 0; i < 4; i++) hoard.push(new Uint8Array(32 << 20).fill(i + 1)); }, 100);
</script>"#,
    );
    let shop = Site::new(SHOP)
        .page("/stable", &page("Stable", "", FILLER))
        .page("/attack/reject-newtab", &reject_newtab)
        .page("/attack/keydown", &keydown)
        .page("/attack/speculation", &speculation)
        .page("/attack/webrtc", &webrtc)
        .page("/attack/system-dns", &system_dns)
        .page("/attack/memory", &memory)
        .page("/attack/spin", &page("Spinning", "", "<main><h1>Busy</h1></main><script>for (;;) {}</script>"));
    let rebinding = Site::new(REBIND)
        .page("/rebind", &rebind)
        .route("/again", Route::text("again"))
        .route("/late.gif", Route::bytes("image/gif", PIXEL.to_vec()));
    vec![shop, rebinding]
}

/// The host name of the DNS-rebinding page: resolved by the test's own DNS server, which answers
/// 127.0.0.1 first and the refused 127.0.0.2 afterwards.
pub const REBIND: &str = "rebind.test";

/// A 1x1 transparent GIF.
const PIXEL: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
    0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02,
    0x02, 0x44, 0x01, 0x00, 0x3b,
];
