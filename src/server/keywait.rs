//! A worker's connections waiting for an early key-set load (see `auth::refresh`).
//!
//! A connection with an unknown key registers its waker here and sleeps. While anyone waits, one
//! ticker task per worker looks at the count of finished loads every `TICK` and wakes the
//! waiters whose load has finished or whose deadline passed. So a thousand waiting connections
//! cost one timer, not a thousand; nothing here blocks or locks (the worker is one thread:
//! `Rc`, `RefCell`).

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use crate::server::Shared;

/// How often the ticker looks at the count of finished loads while someone waits.
const TICK: Duration = Duration::from_millis(5);

/// The waiters of one worker.
#[derive(Default, Clone)]
pub struct KeyWaits(Rc<Inner>);

#[derive(Default)]
struct Inner {
    /// Each waiting connection: the load it waits for, its deadline, its waker.
    waiters: RefCell<Vec<(u64, Instant, Waker)>>,
    /// The ticker task runs.
    ticking: Cell<bool>,
}

impl KeyWaits {
    /// Waits until the key-set load `target` has finished (true) or `deadline` passed (false).
    pub async fn until_loaded(&self, shared: &Arc<Shared>, target: u64, deadline: Instant) -> bool {
        let demand = &shared.keys.demand;
        poll_fn(|cx| {
            if demand.loaded(target) {
                return Poll::Ready(true);
            }
            if Instant::now() >= deadline {
                return Poll::Ready(false);
            }
            self.0
                .waiters
                .borrow_mut()
                .push((target, deadline, cx.waker().clone()));
            if !self.0.ticking.replace(true) {
                monoio::spawn(tick(self.0.clone(), shared.clone()));
            }
            Poll::Pending
        })
        .await
    }
}

/// Wakes the waiters whose load finished or whose deadline passed; ends when none is left.
async fn tick(inner: Rc<Inner>, shared: Arc<Shared>) {
    loop {
        monoio::time::sleep(TICK).await;
        let finished = shared.keys.demand.finished();
        let now = Instant::now();
        let mut waiters = inner.waiters.borrow_mut();
        waiters.retain(|(target, deadline, waker)| {
            let wake = finished >= *target || now >= *deadline;
            if wake {
                waker.wake_by_ref();
            }
            !wake
        });
        if waiters.is_empty() {
            inner.ticking.set(false);
            return;
        }
    }
}
