//! What a person sees while an audit runs: progress bars on a terminal, log lines otherwise.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use shoal_shared::ids::SiteId;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Sites shown with a bar of their own; more are summed into the total bar only.
const MAX_SITE_BARS: usize = 8;
/// How often plain log lines report progress when there is no terminal.
const LOG_EVERY: Duration = Duration::from_secs(5);

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    pages: u64,
    errors: u64,
    queued: u64,
    done: bool,
}

/// The sum of every site's [`Counts`], kept up to date on each change (summing 40,000 sites on
/// every page made a large audit quadratic).
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    pages: u64,
    errors: u64,
    queued: u64,
    done: u64,
}

impl Totals {
    fn replace(&mut self, old: Counts, new: Counts) {
        self.pages = self.pages - old.pages + new.pages;
        self.errors = self.errors - old.errors + new.errors;
        self.queued = self.queued - old.queued + new.queued;
        self.done = self.done - u64::from(old.done) + u64::from(new.done);
    }
}

/// Audit progress, per site and overall.
#[derive(Debug)]
pub struct Progress {
    bars: Option<(MultiProgress, ProgressBar, HashMap<SiteId, ProgressBar>)>,
    names: HashMap<SiteId, String>,
    counts: Mutex<(HashMap<SiteId, Counts>, Totals, Instant)>,
}

impl Progress {
    /// Bars if `enabled` and standard error is a terminal; log lines otherwise.
    #[must_use]
    pub fn new(enabled: bool, sites: &HashMap<SiteId, String>) -> Progress {
        let bars = (enabled && std::io::stderr().is_terminal()).then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
            let style = ProgressStyle::with_template("{prefix:>30.bold} {spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            let total = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
            total.set_prefix("all sites");
            let mut per_site = HashMap::new();
            let mut ids: Vec<_> = sites.keys().copied().collect();
            ids.sort();
            for id in ids.into_iter().take(MAX_SITE_BARS) {
                let b = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
                let name = sites.get(&id).map_or_else(String::new, |s| shorten(s));
                b.set_prefix(name);
                per_site.insert(id, b);
            }
            (multi, total, per_site)
        });
        let counts = sites.keys().map(|id| (*id, Counts::default())).collect();
        Progress { bars, names: sites.clone(), counts: Mutex::new((counts, Totals::default(), Instant::now())) }
    }

    fn update(&self, site: SiteId, f: impl FnOnce(&mut Counts)) {
        let mut guard = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (counts, totals, last_log) = &mut *guard;
        if let Some(c) = counts.get_mut(&site) {
            let old = *c;
            f(c);
            totals.replace(old, *c);
        }
        let Totals { pages, errors, queued, done } = *totals;
        let total = counts.len();
        match &self.bars {
            Some((_, all, per_site)) => {
                all.set_message(format!("{pages} pages, {queued} queued, {errors} errors, {done}/{total} sites done"));
                all.tick();
                if let (Some(b), Some(c)) = (per_site.get(&site), counts.get(&site)) {
                    let state = if c.done { "done" } else { "crawling" };
                    b.set_message(format!("{} pages, {} queued, {} errors, {state}", c.pages, c.queued, c.errors));
                    b.tick();
                }
            }
            None => {
                if last_log.elapsed() >= LOG_EVERY {
                    *last_log = Instant::now();
                    tracing::info!(pages, queued, errors, sites_done = done, sites = total, "progress");
                }
            }
        }
    }

    /// A page was recorded.
    pub fn page(&self, site: SiteId, failed: bool) {
        self.update(site, |c| {
            c.pages += 1;
            c.errors += u64::from(failed);
        });
    }

    /// The site's queue length now.
    pub fn site_queue(&self, site: SiteId, queued: u64) {
        self.update(site, |c| c.queued = queued);
    }

    /// A site finished.
    pub fn site_done(&self, site: SiteId) {
        if self.bars.is_none() {
            let name = self.names.get(&site).map_or("?", String::as_str);
            tracing::info!(site = %name, "site done");
        }
        self.update(site, |c| {
            c.done = true;
            c.queued = 0;
        });
    }

    /// Leaves the final state on screen.
    pub fn finish(&self) {
        if let Some((_, all, per_site)) = &self.bars {
            all.finish();
            for b in per_site.values() {
                b.finish();
            }
        }
    }
}

fn shorten(s: &str) -> String {
    let s = s.trim_start_matches("https://").trim_start_matches("http://").trim_end_matches('/');
    if s.chars().count() > 30 {
        let tail: String = s.chars().rev().take(29).collect::<Vec<_>>().into_iter().rev().collect();
        format!("…{tail}")
    } else {
        s.to_owned()
    }
}

/// The engine tells the display what it applied (`shoal audit`).
impl shoal_coordinator::Observer for Progress {
    fn applied(&self, events: &[shoal_shared::record::Event]) {
        use shoal_shared::record::Event;
        for e in events {
            match e {
                Event::Page(p) => self.page(p.site, p.error.is_some() || p.status.is_some_and(|s| s >= 400)),
                Event::Finding(_) | Event::Browser(_) | Event::Render(_) | Event::CrawlDone { .. } => {}
                Event::SiteDone { site, .. } => self.site_done(*site),
            }
        }
    }

    fn queue(&self, site: SiteId, waiting: u64) {
        self.site_queue(site, waiting);
    }

    fn finish(&self) {
        Progress::finish(self);
    }
}
