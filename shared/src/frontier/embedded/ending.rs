//! The end of an audit in the embedded frontier: a cancel drops its queued work, and `forget`
//! drops what is left of it once its sites are done, so memory does not grow with every audit.

use super::EmbeddedFrontier;
use crate::ids::{AuditId, SiteId};

impl EmbeddedFrontier {
    pub(super) fn cancel_now(&self, audit: AuditId) {
        let mut st = self.lock();
        let sites: Vec<SiteId> = st.sites.iter().filter(|(_, s)| s.audit == audit).map(|(id, _)| *id).collect();
        for site in sites {
            let hosts = st.sites.get(&site).map(|s| s.hosts.clone()).unwrap_or_default();
            let mut dropped = 0u64;
            for h in hosts {
                if let Some(lane) = st.lanes.get_mut(&(site, h)) {
                    dropped += lane.clear() as u64;
                }
            }
            dropped += st.drop_browser(site);
            if let Some(s) = st.sites.get_mut(&site) {
                s.cancelled = true;
                s.queued -= dropped;
            }
            st.check_done(site);
        }
    }

    pub(super) fn forget_now(&self, audit: AuditId) -> bool {
        let mut st = self.lock();
        st.sites.retain(|_, s| s.audit != audit || !s.done);
        if st.sites.values().any(|s| s.audit == audit) {
            return false;
        }
        st.seen.remove(&audit);
        st.cache.forget_audit(audit);
        for host in st.audit_hosts.remove(&audit).unwrap_or_default() {
            if let Some(h) = st.hosts.get_mut(&host)
                && h.slow_audits.remove(&audit)
            {
                h.recompute();
            }
        }
        true
    }
}
