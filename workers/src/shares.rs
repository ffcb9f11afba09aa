//! Planning shared fairly between those who submit jobs. A controller plans a few jobs at once
//! (`plan_concurrency`); one submitter (a named key, an address, or a client) may hold at most
//! half of those places (at least one), so one submitter's heavy jobs leave room for the others'.
//! A request over its submitter's share goes back on the queue for a few seconds, as a new
//! message: its delivery count (and so the poison threshold) is untouched.

use tessera_shared::holds::{Hold, Holds};

/// Planning places held, per submitter.
#[derive(Debug, Clone)]
pub(crate) struct PlanningShares {
    held: Holds<String>,
    most: usize,
}

/// A submitter's place while its job is planned, given back when dropped.
pub(crate) type PlanningShare = Hold<String>;

impl PlanningShares {
    /// Shares of `places` planning places: at most half each, at least one.
    pub(crate) fn new(places: usize) -> Self {
        PlanningShares {
            held: Holds::default(),
            most: (places / 2).max(1),
        }
    }

    /// A place for `submitter`, unless it holds its share already.
    pub(crate) fn take(&self, submitter: &str) -> Option<PlanningShare> {
        self.held.take(submitter.to_string(), self.most)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_submitter_holds_at_most_half_the_places() {
        let shares = PlanningShares::new(4);
        let a1 = shares.take("address:192.0.2.1").unwrap();
        let _a2 = shares.take("address:192.0.2.1").unwrap();
        assert!(shares.take("address:192.0.2.1").is_none());
        // Others still get theirs.
        let _b = shares.take("key:bob").unwrap();
        drop(a1);
        assert!(shares.take("address:192.0.2.1").is_some());
        // Two places: one each; one place: that one.
        let two = PlanningShares::new(2);
        let _x = two.take("client:x").unwrap();
        assert!(two.take("client:x").is_none());
        assert!(two.take("client:y").is_some());
        assert!(PlanningShares::new(1).take("client:z").is_some());
    }
}
