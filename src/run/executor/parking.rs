//! Deployments left serving between an app task's layers, held by the
//! process's [`Executors`](super::Executors) (never a static: two builds in
//! one process share nothing). A parked value is anything that ends when
//! dropped (an app's deployment under its hold); it is kept under its key
//! for a while, taken at most once, and dropped when its time is up, when
//! the lot is full, or when the build ends.

use std::any::Any;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a parked value waits to be taken.
const PARK_FOR: Duration = Duration::from_secs(60);
/// Parked values at most; past it the oldest is dropped.
const PARKED_MAX: usize = 4;

type Value = Box<dyn Any + Send>;

#[derive(Default)]
pub(crate) struct Parking(Mutex<Vec<Parked>>);

struct Parked {
    key: String,
    value: Value,
    until: Instant,
}

impl Parking {
    fn lot(&self) -> MutexGuard<'_, Vec<Parked>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `value` under `key` for [`PARK_FOR`].
    pub(crate) fn park(&self, key: String, value: Value) {
        let now = Instant::now();
        let ended = {
            let mut lot = self.lot();
            let mut ended = expired(&mut lot, now);
            while lot.len() >= PARKED_MAX {
                ended.push(lot.remove(0));
            }
            lot.push(Parked {
                key,
                value,
                until: now + PARK_FOR,
            });
            ended
        };
        // Dropped outside the lock: ending a deployment takes milliseconds.
        drop(ended);
    }

    /// The value parked under `key`, taken out of the lot.
    pub(crate) fn take(&self, key: &str) -> Option<Value> {
        let (found, ended) = {
            let mut lot = self.lot();
            let ended = expired(&mut lot, Instant::now());
            let found = lot
                .iter()
                .position(|p| p.key == key)
                .map(|i| lot.remove(i).value);
            (found, ended)
        };
        drop(ended);
        found
    }

    /// Drops every parked value: at the end of a build.
    pub(crate) fn end_all(&self) {
        let all = std::mem::take(&mut *self.lot());
        drop(all);
    }
}

/// Takes the parked values past their time out of `lot`.
fn expired(lot: &mut Vec<Parked>, now: Instant) -> Vec<Parked> {
    let (gone, kept) = std::mem::take(lot)
        .into_iter()
        .partition(|p| p.until <= now);
    *lot = kept;
    gone
}
