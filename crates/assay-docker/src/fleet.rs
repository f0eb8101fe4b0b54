//! A build's test and deployment containers with the slow parts of their
//! life off the critical path ([`crate::Docker::run_in`],
//! [`crate::Docker::serve_in`]):
//!
//! - **created and started ahead**: a run of a container spec (image,
//!   user, limits and sizes, what it is for) leaves the next container of
//!   the same spec being created while it runs, so the next run of it
//!   starts by claiming one. A pooled container is started **parked**: its
//!   first process is the shell of [`crate::command`], waiting for its
//!   go-ahead line on its stdin (attached before the start), and nothing
//!   else runs in it; its tree volume is still the image's tree directory.
//!   The run that claims it checks it still runs, puts its own tree into
//!   it, then writes the go-ahead, its argv, which the shell becomes; its
//!   clock starts then. The container's start (60–140 ms of the daemon's
//!   and runc's) was paid while the run before executed. A container that
//!   ran a command is never pooled. At most [`PER_SPEC`] a spec,
//!   [`POOLED`] in all (the oldest of another spec goes first).
//! - **removed after the result**: a stopped container is removed in the
//!   background once its report and fingerprints are read, at most
//!   [`REMOVING`] at a time (a run past that waits for a removal to end).
//!
//! [`Fleet::drain`] at a build's end removes every pooled container and
//! waits for every removal. A container a build leaves behind anyway (a
//! killed build, a cancelled task) carries its owner labels like any other
//! and goes with [`crate::Docker::remove_own`] or the next build's
//! [`crate::Docker::cleanup_leftovers`]; a held one is removed by its guard
//! when dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use bollard::container::AttachContainerResults;
use bollard::models::ContainerCreateBody;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::DockerError;
use crate::container::{Held, attach, create_held};

/// Pooled containers of one spec.
pub(crate) const PER_SPEC: usize = 1;
/// Pooled containers in all.
pub(crate) const POOLED: usize = 4;
/// Containers made ahead that [`Fleet::made_ahead`] names: a build's
/// fleet makes one a run, so the list is bounded.
pub(crate) const MADE_KEPT: usize = 64;
/// Removals under way at once.
pub(crate) const REMOVING: u32 = 8;

/// A build's pool of containers created ahead and its removals under way.
pub struct Fleet {
    pool: Mutex<VecDeque<(String, Slot)>>,
    removing: Arc<Semaphore>,
    /// Containers whose removal failed: tried again at [`Fleet::drain`].
    failed: Arc<Mutex<Vec<Held>>>,
    counts: Mutex<Counts>,
    /// The last [`MADE_KEPT`] containers made ahead, oldest first.
    made: Arc<Mutex<VecDeque<String>>>,
}

/// How the fleet's containers came to their runs, for a build's figures.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Runs that claimed a container created ahead.
    pub claimed: u64,
    /// Runs that created their own (no pooled one of their spec).
    pub created: u64,
    /// Pooled containers removed without ever running (evicted, drained).
    pub unused: u64,
}

/// A pooled container, started and parked on its go-ahead.
pub(crate) struct Pooled {
    pub(crate) held: Held,
    /// Its output (nothing yet) and its stdin, for the go-ahead.
    pub(crate) parked: AttachContainerResults,
}

/// A pooled container: its creation and start, under way or done.
type Slot = JoinHandle<Result<Pooled, DockerError>>;

/// The container a [`Slot`] made, once it is; `None` if that failed.
async fn arrived(slot: Slot) -> Option<Pooled> {
    slot.await.ok()?.ok()
}

/// Starts `held` parked: attached first (stdin too), so the run that
/// claims it reads all of its output and says go on its stdin.
async fn start_parked(api: &bollard::Docker, held: Held) -> Result<Pooled, DockerError> {
    let parked = attach(api, &held.id, true).await?;
    api.start_container(&held.id, None)
        .await
        .map_err(DockerError::api("start a container"))?;
    Ok(Pooled { held, parked })
}

impl Default for Fleet {
    fn default() -> Self {
        Self {
            pool: Mutex::new(VecDeque::new()),
            removing: Arc::new(Semaphore::new(REMOVING as usize)),
            failed: Arc::new(Mutex::new(Vec::new())),
            counts: Mutex::new(Counts::default()),
            made: Arc::new(Mutex::new(VecDeque::new())),
        }
    }
}

impl Fleet {
    /// A container of `spec` started ahead and parked (waiting for one
    /// whose start is under way), or `None`: the caller creates its own.
    pub(crate) async fn claim(&self, spec: &str) -> Option<Pooled> {
        let slot = {
            let mut pool = lock(&self.pool);
            let at = pool.iter().position(|(s, _)| s == spec);
            at.and_then(|at| pool.remove(at)).map(|(_, slot)| slot)
        };
        let held = match slot {
            Some(slot) => arrived(slot).await,
            None => None,
        };
        let mut counts = lock(&self.counts);
        match held {
            Some(_) => counts.claimed += 1,
            None => counts.created += 1,
        }
        held
    }

    /// Starts creating and starting, parked, a container of `spec`
    /// (`body`, a parking request: [`crate::command::park`]) for its next
    /// run, unless [`PER_SPEC`] of it are pooled; past [`POOLED`], the
    /// oldest pooled container of another spec is removed.
    pub(crate) fn ahead(&self, api: &bollard::Docker, spec: &str, body: ContainerCreateBody) {
        let evicted = {
            let mut pool = lock(&self.pool);
            if pool.iter().filter(|(s, _)| s == spec).count() >= PER_SPEC {
                return;
            }
            let evicted = if pool.len() >= POOLED {
                pool.iter()
                    .position(|(s, _)| s != spec)
                    .and_then(|at| pool.remove(at))
            } else {
                None
            };
            let (api, made) = (api.clone(), self.made.clone());
            let creating = tokio::spawn(async move {
                let held = create_held(&api, body).await?;
                {
                    let mut made = lock(&made);
                    if made.len() == MADE_KEPT {
                        made.pop_front();
                    }
                    made.push_back(held.id.clone());
                }
                start_parked(&api, held).await
            });
            pool.push_back((spec.to_owned(), creating));
            evicted
        };
        if let Some((_, slot)) = evicted {
            lock(&self.counts).unused += 1;
            let (removing, failed) = (self.removing.clone(), self.failed.clone());
            tokio::spawn(async move {
                if let Some(pooled) = arrived(slot).await {
                    remove_now(pooled.held, removing, failed).await;
                }
            });
        }
    }

    /// Removes a stopped container in the background; waits first while
    /// [`REMOVING`] removals are under way.
    pub(crate) async fn remove(&self, held: Held) {
        let Ok(permit) = self.removing.clone().acquire_owned().await else {
            return;
        };
        let failed = self.failed.clone();
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(held) = held.try_remove().await {
                lock(&failed).push(held);
            }
        });
    }

    /// At a build's end: removes every pooled container (those being
    /// created once they are), waits for every removal under way, and tries
    /// once more those that failed. The ids still there, if any.
    pub async fn drain(&self) -> Vec<String> {
        let slots: Vec<Slot> = lock(&self.pool).drain(..).map(|(_, slot)| slot).collect();
        for slot in slots {
            if let Some(pooled) = arrived(slot).await {
                lock(&self.counts).unused += 1;
                self.remove(pooled.held).await;
            }
        }
        // Every permit back: no removal is under way.
        if let Ok(all) = self.removing.acquire_many(REMOVING).await {
            drop(all);
        }
        let failed: Vec<Held> = lock(&self.failed).drain(..).collect();
        let mut left = Vec::new();
        for held in failed {
            if let Err(held) = held.try_remove().await {
                left.push(held.id.clone());
                // Its guard tries once more when it drops.
            }
        }
        left
    }

    /// The ids of the last containers made ahead (at most [`MADE_KEPT`]),
    /// oldest first: claimed, removed unused, or still parked.
    pub fn made_ahead(&self) -> Vec<String> {
        lock(&self.made).iter().cloned().collect()
    }

    /// How this fleet's runs got their containers so far.
    pub fn counts(&self) -> Counts {
        *lock(&self.counts)
    }
}

async fn remove_now(held: Held, removing: Arc<Semaphore>, failed: Arc<Mutex<Vec<Held>>>) {
    let _permit = removing.acquire_owned().await;
    if let Err(held) = held.try_remove().await {
        lock(&failed).push(held);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each lock is held for a few plain steps: a panic elsewhere cannot
    // leave the data half-changed.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
