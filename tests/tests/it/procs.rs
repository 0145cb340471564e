//! Real `shoal` processes for the distributed end-to-end tests: the binary (built by `cargo test`
//! itself), coordinators and workers as child processes whose standard error goes to files, and
//! small clients of the coordinator's HTTP API. Every wait has a deadline, and every child is
//! killed (SIGKILL) when its handle is dropped, so no test leaves a process behind, whatever way it
//! ends.

#![allow(dead_code, reason = "each test binary uses a different subset of the helpers")]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a coordinator may take to answer `/healthz` after it was started.
pub const HEALTH_DEADLINE: Duration = Duration::from_secs(30);
/// How long one API call may take.
const API_TIMEOUT: Duration = Duration::from_secs(10);
/// Lines of each process's standard error shown in assertion messages.
pub const TAIL_LINES: usize = 40;

/// The `shoal` program of this build (`shoal-under-test`, a binary of the test crate that runs
/// `shoal::entry::main`, built by the same `cargo test`).
pub fn shoal_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_shoal-under-test"))
}

/// The `shoal` program as a command with a clean environment: none of the caller's `SHOAL_*`
/// settings.
pub fn shoal_command() -> Command {
    let mut cmd = Command::new(shoal_bin());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("SHOAL_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// The `shoal` program; kept async for the callers that await it.
pub async fn ensure_built() -> PathBuf {
    shoal_bin()
}

/// One `shoal` child process. Dropping it kills it (SIGKILL) and reaps it.
#[derive(Debug)]
pub struct Proc {
    name: String,
    child: Option<Child>,
    stderr: PathBuf,
}

impl Proc {
    /// Starts `shoal ARGS...` in `dir` with a clean environment (no `SHOAL_*` settings from the
    /// caller); standard error goes to `dir/NAME.stderr` (appended, so a restarted process keeps
    /// the earlier lines), standard output to `dir/NAME.stdout`.
    pub fn spawn(dir: &Path, name: &str, args: &[String]) -> Proc {
        let mut cmd = shoal_command();
        cmd.args(args);
        Proc::start(dir, name, cmd)
    }

    /// Starts `cmd` as [`Proc::spawn`] starts `shoal`: in `dir`, its output in `dir/NAME.*`.
    pub fn start(dir: &Path, name: &str, mut cmd: Command) -> Proc {
        let stderr = dir.join(format!("{name}.stderr"));
        let open = |p: &Path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .unwrap_or_else(|e| panic!("log file {}: {e}", p.display()))
        };
        let child = cmd
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(open(&dir.join(format!("{name}.stdout"))))
            .stderr(open(&stderr))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name} ({cmd:?}): {e}"));
        Proc { name: name.to_owned(), child: Some(child), stderr }
    }

    /// Its name in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Kills it with SIGKILL (`Child::kill`) and reaps it; nothing happens if it already ended.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Its exit status if it has ended (`None` while running or after [`Proc::kill`]).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// Waits (polling, so the test's runtime keeps serving) until it exits, at most `deadline`;
    /// `None` if it had to be killed.
    pub async fn wait_exit(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + deadline;
        while Instant::now() < until {
            match self.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => return Some(status),
                Some(Ok(None)) => tokio::time::sleep(Duration::from_millis(20)).await,
                Some(Err(_)) | None => return None,
            }
        }
        self.kill();
        None
    }

    /// Its standard output so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(self.stderr.with_extension("stdout")).unwrap_or_default()
    }

    /// The last `n` lines of its standard error.
    pub fn tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(n);
        format!(
            "--- {} stderr (last {} of {} lines) ---\n{}\n",
            self.name,
            lines.len() - from,
            lines.len(),
            lines[from..].join("\n")
        )
    }

    /// Every line of its standard error.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The tails of several processes' standard error, for assertion messages.
pub fn tails<'a>(procs: impl IntoIterator<Item = &'a Proc>) -> String {
    procs.into_iter().map(|p| p.tail(TAIL_LINES)).collect()
}

/// A loopback port that was free a moment ago: bound, read and released. For a coordinator's or
/// the metrics' `--listen`, and for test sites whose content names absolute URLs of the server
/// itself (sitemaps in robots.txt, redirects and links to other hosts), which must know their port
/// before they start.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The user agent of worker `id`: each worker has its own, so the server's log tells which worker
/// sent each request.
pub fn agent_of(id: &str) -> String {
    format!("ShoalBot/1.0 (+https://shoal.invalid/bot; {id})")
}

/// `shoal worker --id ID` for the test server: every host resolved to 127.0.0.1, no DNS, private
/// addresses allowed, 2 s request timeout, its own user agent ([`agent_of`]).
pub fn worker(dir: &Path, id: &str, redis: &str, ns: &str, hosts: &[String], concurrency: usize) -> Proc {
    worker_with_timeout(dir, id, redis, ns, hosts, concurrency, 2)
}

/// `shoal worker --id ID --browser` for the test server (its Chromium opens the browser check's
/// and the rendered crawl's pages): `host` resolved to 127.0.0.1, no DNS, private addresses
/// allowed, a 5 s lease time, the default user agent (so Chromium's own is told from the crawl's).
pub fn browser_worker(dir: &Path, id: &str, redis: &str, ns: &str, host: &str) -> Proc {
    let mut args: Vec<String> =
        ["worker", "--redis", redis, "--namespace", ns, "--no-dns", "--allow-private"].map(str::to_owned).to_vec();
    args.extend(["--id", id, "--lease-ttl-s", "5", "--browser", "--resolve"].map(str::to_owned));
    args.push(format!("{host}=127.0.0.1"));
    Proc::spawn(dir, id, &args)
}

/// [`worker`] with a request timeout of `timeout_s` seconds instead of 2.
pub fn worker_with_timeout(
    dir: &Path,
    id: &str,
    redis: &str,
    ns: &str,
    hosts: &[String],
    concurrency: usize,
    timeout_s: u64,
) -> Proc {
    let mut args = worker_args(id, redis, ns, concurrency, timeout_s);
    args.push("--allow-private".into());
    for h in hosts {
        args.push("--resolve".into());
        args.push(format!("{h}=127.0.0.1"));
    }
    Proc::spawn(dir, id, &args)
}

/// The environment variable that hands [`fault_worker_process`] its `shoal worker` arguments (JSON).
/// Read by this test binary only: nothing in `shoal` reads it.
const FAULT_WORKER_ARGS: &str = "IT_FAULT_WORKER_ARGS";

/// [`worker`] with the crawler's fault injection on (`CrawlSettings::inject_faults`), for the
/// tests of a worker that a URL kills. No `shoal` binary can be told to obey the fault paths (no
/// flag, key or variable turns the switch on), so this is this test binary run again as the one
/// ignored test [`fault_worker_process`], which reads the same `shoal worker` arguments, turns the
/// switch on and runs the same worker service. Killed (SIGKILL) when dropped, like any [`Proc`].
pub fn fault_worker(dir: &Path, id: &str, redis: &str, ns: &str, hosts: &[String], concurrency: usize) -> Proc {
    let mut args = worker_args(id, redis, ns, concurrency, 2);
    args.push("--allow-private".into());
    for h in hosts {
        args.push("--resolve".into());
        args.push(format!("{h}=127.0.0.1"));
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", "procs::fault_worker_process", "--ignored", "--nocapture", "--test-threads", "1"])
        .env(FAULT_WORKER_ARGS, serde_json::to_string(&args).expect("JSON"));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("SHOAL_") {
            cmd.env_remove(key);
        }
    }
    Proc::start(dir, id, cmd)
}

/// The process of [`fault_worker`]: `shoal worker` with `inject_faults` on, until killed (or
/// until a fault aborts it). Does nothing when run any other way (`cargo test -- --ignored`).
#[test]
#[ignore = "the child process of procs::fault_worker"]
fn fault_worker_process() {
    use clap::Parser as _;
    let Ok(json) = std::env::var(FAULT_WORKER_ARGS) else { return };
    let args: Vec<String> = serde_json::from_str(&json).expect("the worker's arguments");
    let cli = shoal::cli::Cli::try_parse_from(std::iter::once("shoal".to_owned()).chain(args)).expect("parse");
    let shoal::cli::Command::Worker(w) = cli.command else { panic!("not `shoal worker` arguments") };
    let config = shoal::cli::CrawlConfig::try_from(&w.crawl).expect("valid worker settings");
    let mut worker_config = config.worker;
    worker_config.crawl.inject_faults = true;
    let worker = shoal::cmd::worker::RedisWorker {
        redis: w.redis.target().expect("the worker's Redis"),
        namespace: w.redis.namespace.clone(),
        id: w.id.clone().expect("an --id"),
        concurrency: w.concurrency,
        config: worker_config,
        frontier: config.engine.frontier,
        browser: false,
    };
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let outcome =
        runtime.block_on(shoal::cmd::worker::run_redis_worker(worker, tokio_util::sync::CancellationToken::new()));
    outcome.expect("the fault worker ran");
}

/// `shoal worker --id ID` with the default address guard: no `--allow-private`, no `--resolve`
/// and no DNS. It can reach a host only through an address the frontier pinned for it (chosen by
/// another worker), which its own guard must then judge.
pub fn guarded_worker(dir: &Path, id: &str, redis: &str, ns: &str, concurrency: usize) -> Proc {
    Proc::spawn(dir, id, &worker_args(id, redis, ns, concurrency, 2))
}

/// What every test worker is started with: no DNS, `timeout_s` request timeout, 5 s leases, its
/// own user agent ([`agent_of`]).
pub fn worker_args(id: &str, redis: &str, ns: &str, concurrency: usize, timeout_s: u64) -> Vec<String> {
    vec![
        "worker".into(),
        "--redis".into(),
        redis.into(),
        "--namespace".into(),
        ns.into(),
        "--no-dns".into(),
        "--id".into(),
        id.into(),
        "--timeout-s".into(),
        timeout_s.to_string(),
        "--lease-ttl-s".into(),
        "5".into(),
        "--concurrency".into(),
        concurrency.to_string(),
        "--user-agent".into(),
        agent_of(id),
    ]
}

/// A running `shoal coordinator` and an HTTP client for its API.
#[derive(Debug)]
pub struct Coordinator {
    /// The process.
    pub proc: Proc,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    token: String,
    http: reqwest::Client,
}

/// The bearer token every test coordinator uses.
pub const TOKEN: &str = "test-token-0123456789";

impl Coordinator {
    /// Starts `shoal coordinator --redis REDIS --namespace NS --db DB --listen 127.0.0.1:PORT
    /// --token T --timeout-s 2 --lease-ttl-s 5 EXTRA...` and waits (bounded) until `/healthz`
    /// answers 200.
    pub async fn start(dir: &Path, name: &str, redis: &str, ns: &str, db: &Path, extra: &[&str]) -> Coordinator {
        shoal_worker::tls::install_crypto_provider();
        let http = reqwest::Client::builder().no_proxy().timeout(API_TIMEOUT).build().expect("an HTTP client");
        // The port is free when chosen but another process could take it before the coordinator
        // binds it; then the coordinator exits at once, and we try another port.
        let mut failures = String::new();
        for _ in 0..3 {
            let port = free_port();
            let mut args: Vec<String> = vec![
                "coordinator".into(),
                "--redis".into(),
                redis.into(),
                "--namespace".into(),
                ns.into(),
                "--db".into(),
                db.display().to_string(),
                "--listen".into(),
                format!("127.0.0.1:{port}"),
                "--token".into(),
                TOKEN.into(),
                "--timeout-s".into(),
                "2".into(),
                "--lease-ttl-s".into(),
                "5".into(),
            ];
            // The test workers send no DNS queries (--no-dns): the DNS, mail and domain checks
            // are seeded only by tests that serve DNS themselves (and say so with --dns-server).
            if !extra.contains(&"--dns-server") {
                args.push("--no-dns-checks".into());
            }
            args.extend(extra.iter().map(|s| (*s).to_owned()));
            let proc = Proc::spawn(dir, name, &args);
            let mut c =
                Coordinator { proc, base: format!("http://127.0.0.1:{port}"), token: TOKEN.into(), http: http.clone() };
            let until = Instant::now() + HEALTH_DEADLINE;
            loop {
                if let Some(status) = c.proc.exited() {
                    failures.push_str(&format!("exited with {status}\n{}", c.proc.tail(TAIL_LINES)));
                    break;
                }
                let ok = c
                    .http
                    .get(format!("{}/healthz", c.base))
                    .send()
                    .await
                    .is_ok_and(|r| r.status() == reqwest::StatusCode::OK);
                if ok {
                    return c;
                }
                if Instant::now() > until {
                    let tail = c.proc.tail(TAIL_LINES);
                    c.proc.kill();
                    panic!("{name} did not answer /healthz within {HEALTH_DEADLINE:?}\n{tail}");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        panic!("{name} would not start:\n{failures}");
    }

    async fn call(&self, req: reqwest::RequestBuilder) -> Result<(u16, Value), String> {
        let resp =
            req.bearer_auth(&self.token).send().await.map_err(|e| format!("request to {} failed: {e}", self.base))?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await.map_err(|e| format!("reading the answer of {}: {e}", self.base))?;
        let value = serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        Ok((status, value))
    }

    /// Any API call with the bearer token: `method` on `path` (`/v1/...`), with a JSON `body` if
    /// given; the status and the answer (JSON, or the text as a JSON string).
    pub async fn api(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<(u16, Value), String> {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(b).map_err(|e| e.to_string())?);
        }
        self.call(req).await
    }

    /// `POST /v1/audits`: the new audit's id. Panics (with the coordinator's log) on failure.
    pub async fn submit(&self, urls: &[String], options: Value) -> u64 {
        let body = serde_json::json!({ "urls": urls, "options": options });
        let req = self
            .http
            .post(format!("{}/v1/audits", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&body).expect("JSON body"));
        match self.call(req).await {
            Ok((201, v)) => v.get("id").and_then(Value::as_u64).unwrap_or_else(|| panic!("no audit id in {v}")),
            Ok((status, v)) => panic!("submit answered {status}: {v}\n{}", self.proc.tail(TAIL_LINES)),
            Err(e) => panic!("{e}\n{}", self.proc.tail(TAIL_LINES)),
        }
    }

    /// `GET /v1/audits/ID`.
    pub async fn status(&self, id: u64) -> Result<Value, String> {
        match self.call(self.http.get(format!("{}/v1/audits/{id}", self.base))).await? {
            (200, v) => Ok(v),
            (status, v) => Err(format!("status answered {status}: {v}")),
        }
    }

    /// Polls the audit until it is no longer `running`, for at most `deadline`; returns the last
    /// answer and how long it took, or the last answer (or error) on timeout.
    pub async fn wait_finished(&self, id: u64, deadline: Duration) -> Result<(Value, Duration), String> {
        let start = Instant::now();
        let mut last = String::from("(no answer yet)");
        while start.elapsed() < deadline {
            match self.status(id).await {
                Ok(v) if v.get("status").and_then(Value::as_str) != Some("running") => {
                    return Ok((v, start.elapsed()));
                }
                Ok(v) => last = v.to_string(),
                Err(e) => last = e,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("audit {id} still not finished after {deadline:?}; last answer: {last}"))
    }
}
