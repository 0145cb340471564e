//! The browser's network wall and its lifetime, attacked as the red team of issue 36 did, in real
//! headless Chromium: pages that open new tabs from a consent banner's Reject or from a key
//! handler, ask for speculative prefetches and prerenders, open WebRTC relays, rebind their own
//! host name, or reach for names only the system resolver knows. Each one aims at `127.0.0.2` on
//! the test server's port, an address the test refuses (it stands for a private network or a
//! cloud metadata address) while listening there on TCP and UDP: nothing may arrive. Then a page
//! that eats memory, and a worker killed with SIGKILL: Chromium must not outlive or outgrow it.
//!
//! These tests fail, never skip, when Chromium is missing.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hickory_server::proto::op::{Message, MessageType, ResponseCode};
use hickory_server::proto::rr::rdata::A;
use hickory_server::proto::rr::{RData, Record, RecordType};
use shoal_shared::browser::{BrowserPage, findings};
use shoal_shared::finding::Code;
use shoal_shared::ids::{AuditId, SiteId};
use shoal_tests::chromium::chromium;
use shoal_tests::testsite::browser::{REBIND, SHOP, hostile_sites};
use shoal_tests::testsite::{ReservedPort, TestServer};
use shoal_worker::browser::{Browser, BrowserSettings, PROFILE_PREFIX};
use shoal_worker::fetch::{FetchSettings, Fetcher};

const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// Refused by the test's address policy, and listened on: what a private network would be.
const REFUSED: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// The refused address's listeners, on the test server's port (the pages aim there).
struct Watch {
    tcp: TcpListener,
    udp: UdpSocket,
}

impl Watch {
    fn on(port: u16) -> Watch {
        let tcp = TcpListener::bind((REFUSED, port)).expect("listen on 127.0.0.2 (tcp)");
        tcp.set_nonblocking(true).expect("nonblocking");
        let udp = UdpSocket::bind((REFUSED, port)).expect("listen on 127.0.0.2 (udp)");
        udp.set_nonblocking(true).expect("nonblocking");
        Watch { tcp, udp }
    }

    /// What reached the refused address since the last look: TCP connections and UDP packets
    /// (each drained, so the next look starts from nothing).
    fn arrivals(&self) -> (usize, usize) {
        let mut tcp = 0;
        while self.tcp.accept().is_ok() {
            tcp += 1;
        }
        let mut udp = 0;
        let mut buf = [0u8; 1500];
        while self.udp.recv_from(&mut buf).is_ok() {
            udp += 1;
        }
        (tcp, udp)
    }

    /// Panics if anything reached the refused address since the last look.
    fn assert_untouched(&self, what: &str) {
        let (tcp, udp) = self.arrivals();
        assert!(tcp == 0 && udp == 0, "{what}: the refused address got {tcp} TCP connections and {udp} UDP packets");
    }
}

/// A DNS server for [`REBIND`] that answers 127.0.0.1 the first time and the refused address
/// every time after, with a TTL of 0: a rebinding attacker's zone.
struct RebindingDns {
    addr: SocketAddr,
    asked: Arc<AtomicUsize>,
    _thread: ScopedStop,
}

/// Stops the DNS thread when the test ends (its socket times out every 100 ms to look).
struct ScopedStop(Arc<std::sync::atomic::AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Drop for ScopedStop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        if let Some(t) = self.1.take() {
            let _ = t.join();
        }
    }
}

impl RebindingDns {
    fn start() -> RebindingDns {
        let socket = UdpSocket::bind((LOOPBACK, 0)).expect("dns socket");
        socket.set_read_timeout(Some(Duration::from_millis(100))).expect("timeout");
        let addr = socket.local_addr().expect("addr");
        let asked = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (count, done) = (Arc::clone(&asked), Arc::clone(&stop));
        #[allow(clippy::disallowed_methods)] // joined by ScopedStop
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 1500];
            let deadline = Instant::now() + Duration::from_secs(300);
            while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
                let Ok((n, peer)) = socket.recv_from(&mut buf) else { continue };
                let Ok(query) = Message::from_vec(&buf[..n]) else { continue };
                let mut answer = Message::response(query.metadata.id, query.metadata.op_code);
                answer.metadata.message_type = MessageType::Response;
                answer.metadata.authoritative = true;
                answer.metadata.recursion_desired = query.metadata.recursion_desired;
                for q in &query.queries {
                    answer.add_query(q.clone());
                    let ours = q.name().to_ascii().trim_end_matches('.').eq_ignore_ascii_case(REBIND);
                    if !ours {
                        answer.metadata.response_code = ResponseCode::NXDomain;
                    } else if q.query_type() == RecordType::A {
                        let first = count.fetch_add(1, Ordering::SeqCst) == 0;
                        let ip = if first { Ipv4Addr::LOCALHOST } else { Ipv4Addr::new(127, 0, 0, 2) };
                        answer.add_answer(Record::from_rdata(q.name().clone(), 0, RData::A(A(ip))));
                    }
                }
                if let Ok(bytes) = answer.to_vec() {
                    let _ = socket.send_to(&bytes, peer);
                }
            }
        });
        RebindingDns { addr, asked, _thread: ScopedStop(stop, Some(thread)) }
    }
}

fn fetcher(settings: FetchSettings) -> Fetcher {
    Fetcher::new(FetchSettings { allow_private: true, ..settings }).expect("fetcher")
}

/// The test server (hostile pages) on a port whose 127.0.0.2 twin the test watches.
async fn server() -> (TestServer, Watch) {
    let port = ReservedPort::new().expect("port");
    let watch = Watch::on(port.port());
    let server = TestServer::start_reserved(port, hostile_sites()).await.expect("test server");
    (server, watch)
}

async fn launch(fetcher: &Fetcher, settings: BrowserSettings) -> Browser {
    Browser::launch_refusing(settings, fetcher, vec![REFUSED]).await.expect("chromium starts")
}

fn settings() -> BrowserSettings {
    BrowserSettings { chromium: chromium(), page_timeout: Duration::from_secs(60), ..BrowserSettings::default() }
}

fn codes(page: &BrowserPage) -> Vec<Code> {
    findings(page).into_iter().map(|f| f.code).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_tabs_prefetches_and_webrtc_reach_nothing_the_guard_refuses() {
    let (server, watch) = server().await;
    let resolve = [(SHOP.to_owned(), LOOPBACK)].into_iter().collect();
    let fetcher = fetcher(FetchSettings { resolve, no_dns: true, ..FetchSettings::default() });
    let browser = launch(&fetcher, settings()).await;
    let open = |path: &str| {
        let url = server.url(SHOP, path);
        let browser = &browser;
        async move { browser.check_page(AuditId(1), SiteId(1), &url, shoal_worker::browser::no_robots_rules()).await }
    };

    // Each attack is checked on its own: its page, a moment for anything late (a prerender, an
    // ICE gathering), then the listeners.
    let mut pages = Vec::new();
    for (path, what) in [
        // 1. A consent banner whose "Reject all" is a link to the metadata address in a new tab.
        ("/attack/reject-newtab", "a Reject link opening a new tab"),
        // 2. A key handler that clicks links (in the page and detached) and submits a form, all
        //    targeting new windows, at each of the check's Tab presses.
        ("/attack/keydown", "Tab presses opening new tabs"),
        // 3. Speculation rules (prefetch and prerender) and prefetch / preconnect hints.
        ("/attack/speculation", "speculation rules and resource hints"),
        // 5. WebRTC with STUN and TURN (UDP and TCP) relays on the refused address.
        ("/attack/webrtc", "WebRTC relays"),
    ] {
        let page = open(path).await;
        assert_eq!(page.error, None, "{what}: {page:?}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        watch.assert_untouched(what);
        pages.push(page);
    }
    let [reject, keydown, speculation, webrtc] = <[BrowserPage; 4]>::try_from(pages).expect("four pages");
    assert!(reject.consent.banner_found, "{:?}", reject.consent);
    assert_eq!(reject.consent.reject_control.as_deref(), Some("reject all"), "{:?}", reject.consent);
    assert!(reject.consent.reject_clicked, "{:?}", reject.consent);
    assert!(keydown.keyboard.tabbed > 0, "the page was tabbed through: {:?}", keydown.keyboard);
    // What a page's record lists as refused is that page's: Chromium's own traffic (updates,
    // its clock, account services) goes to a proxy that refuses it without a word.
    for page in [&reject, &keydown, &speculation, &webrtc] {
        assert!(page.blocked.iter().all(|b| b.contains("127.0.0.2")), "{}: {:?}", page.url, page.blocked);
    }
    // The pages themselves loaded through the proxy, each once per visit.
    let log = server.log();
    for path in ["/attack/reject-newtab", "/attack/keydown", "/attack/speculation", "/attack/webrtc"] {
        assert!(log.count(SHOP, path) >= 1, "{path} was loaded: {}", log.dump());
    }
    // The rendered crawl's page loads (`render_page`: one context kept per site) pass the same
    // wall: speculation and WebRTC reach nothing the guard refuses.
    for path in ["/attack/speculation", "/attack/webrtc"] {
        let url = server.url(SHOP, path);
        let (page, _) =
            browser.render_page(AuditId(1), SiteId(2), &url, shoal_worker::browser::no_robots_rules()).await;
        assert_eq!(page.error, None, "rendering {path}: {page:?}");
        assert!(page.rendered.is_some(), "{page:?}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        watch.assert_untouched(&format!("rendering {path}"));
        assert!(page.blocked.iter().all(|b| b.contains("127.0.0.2")), "{path}: {:?}", page.blocked);
    }
    browser.shutdown().await;
    let _ = server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_resolved_by_the_workers_resolver_only_and_a_rebound_name_keeps_its_first_address() {
    let (server, watch) = server().await;
    let dns = RebindingDns::start();
    // No --resolve for the rebinding host: it goes to the configured DNS server, as every name
    // the worker resolves.
    let resolve = [(SHOP.to_owned(), LOOPBACK)].into_iter().collect();
    let fetcher = fetcher(FetchSettings { resolve, dns_servers: vec![dns.addr], ..FetchSettings::default() });
    let browser = launch(&fetcher, settings()).await;

    // 4. DNS rebinding of the page's own host: first answer loopback (allowed), later answers the
    //    refused address with TTL 0. The page asks its own host again 1.5 s after loading.
    let page = browser
        .check_page(AuditId(1), SiteId(1), &server.url(REBIND, "/rebind"), shoal_worker::browser::no_robots_rules())
        .await;
    assert_eq!(page.error, None, "{page:?}");
    assert_eq!(page.status, Some(200));
    let log = server.log();
    assert!(log.count(REBIND, "/rebind") >= 1, "{}", log.dump());
    assert!(
        log.count(REBIND, "/again") >= 1 && log.count(REBIND, "/late.gif") >= 1,
        "{}\nrefused: {:?}\nresources: {:?}",
        log.dump(),
        page.blocked,
        page.resources
    );
    watch.assert_untouched("DNS rebinding");
    assert!(dns.asked.load(Ordering::SeqCst) >= 1, "the page's host was asked of the configured DNS server");

    // 6. Names only the system resolver knows (`localhost`, from /etc/hosts) reach nothing: the
    //    worker's resolver is the configured server, which does not know them, and Chromium
    //    resolves nothing itself.
    let names = browser
        .check_page(
            AuditId(1),
            SiteId(1),
            &server.url(SHOP, "/attack/system-dns"),
            shoal_worker::browser::no_robots_rules(),
        )
        .await;
    assert_eq!(names.error, None, "{names:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = server.log();
    assert!(!log.all().iter().any(|r| r.path.starts_with("/leak")), "{}", log.dump());
    assert!(names.blocked.iter().any(|b| b.contains("localhost")), "refusals are recorded: {:?}", names.blocked);
    browser.shutdown().await;
    let _ = server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_eats_memory_is_stopped_with_a_finding_and_chromium_ends() {
    let (server, _watch) = server().await;
    let resolve = [(SHOP.to_owned(), LOOPBACK)].into_iter().collect();
    let fetcher = fetcher(FetchSettings { resolve, no_dns: true, ..FetchSettings::default() });
    let limit_mib = 900;
    let browser = launch(&fetcher, BrowserSettings { memory_limit: limit_mib << 20, ..settings() }).await;
    let profile = browser.profile_dir();
    // A page within the limit is checked as usual.
    let calm = browser
        .check_page(AuditId(1), SiteId(1), &server.url(SHOP, "/stable"), shoal_worker::browser::no_robots_rules())
        .await;
    assert_eq!(calm.error, None, "an ordinary page stays under {limit_mib} MiB: {calm:?}");
    let started = Instant::now();
    let bomb = browser
        .check_page(
            AuditId(1),
            SiteId(1),
            &server.url(SHOP, "/attack/memory"),
            shoal_worker::browser::no_robots_rules(),
        )
        .await;
    let used = bomb.memory_exceeded_mib.expect("the page went over the limit");
    assert!(u64::from(used) > limit_mib, "{used} MiB");
    assert_eq!(codes(&bomb), [Code::BrowserMemoryExceeded], "{bomb:?}");
    assert!(started.elapsed() < Duration::from_secs(50), "stopped long before the page's time limit");
    assert!(browser.worn_out(), "the owner starts a fresh Chromium for the next page");
    wait_gone(&profile, "after the memory limit");
    browser.shutdown().await;
    let _ = server.shutdown().await;
}

/// The processes whose command line names `profile` as their `--user-data-dir`: every process of
/// one Chromium carries it.
pub fn processes_using(profile: &Path) -> Vec<u32> {
    let needle = format!("--user-data-dir={}", profile.display());
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == needle.as_bytes()))
        })
        .collect()
}

/// Waits (at most 10 s) until no process uses `profile`.
fn wait_gone(profile: &Path, when: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_using(profile);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "{when}: Chromium processes {left:?} still use {}", profile.display());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The profile folders `shoal-chromium-*` in `dir`.
fn profiles_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(PROFILE_PREFIX)))
                .collect()
        })
        .unwrap_or_default()
}

/// `shoal audit` of `url` with the browser check on, its temporary folder (where Chromium's
/// profile goes) set to `tmp`.
fn audit_with_browser(tmp: &Path, server: &TestServer, url: &str) -> std::process::Child {
    crate::procs::shoal_command()
        .env("TMPDIR", tmp)
        .current_dir(tmp)
        .args(["audit", url, "--allow-private", "--no-dns", "--browser-pages", "1", "--browser-timeout-s", "60"])
        .arg("--resolve")
        .arg(server.resolve_arg(SHOP))
        .arg("--db")
        .arg(tmp.join("audit.db"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(tmp.join("audit.stderr")).expect("stderr file"))
        .spawn()
        .expect("shoal audit starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_dies_with_a_killed_worker_and_its_profile_goes_at_the_next_start() {
    let (server, _watch) = server().await;
    let tmp = tempfile::tempdir().expect("tmp");
    // `shoal audit` runs the browser check in its own process, as a worker does; its start page
    // never finishes loading (a script that spins), so Chromium is busy when the worker dies.
    let mut first = audit_with_browser(tmp.path(), &server, &server.url(SHOP, "/attack/spin"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let profile = loop {
        if let Some(p) = profiles_in(tmp.path()).into_iter().find(|p| processes_using(p).len() >= 2) {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "Chromium never started: {}",
            std::fs::read_to_string(tmp.path().join("audit.stderr")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    first.kill().expect("SIGKILL shoal");
    let _ = first.wait();
    wait_gone(&profile, "after shoal was killed");
    assert!(profile.exists(), "a killed worker cannot clean up after itself");
    // The next browser started with this temporary folder removes the dead one's profile, and
    // its own at the end.
    let mut second = audit_with_browser(tmp.path(), &server, &server.url(SHOP, "/stable"));
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = second.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "the second audit did not end");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let log = std::fs::read_to_string(tmp.path().join("audit.stderr")).unwrap_or_default();
    assert!(status.success(), "{status}: {log}");
    assert!(!profile.exists(), "{} was removed at the next start: {log}", profile.display());
    assert!(profiles_in(tmp.path()).is_empty(), "no profile folder is left: {:?}", profiles_in(tmp.path()));
    let loads = server.log().count(SHOP, "/stable");
    assert!(loads >= 2, "crawled and opened in the browser: {}", server.log().dump());
    let _ = server.shutdown().await;
}
