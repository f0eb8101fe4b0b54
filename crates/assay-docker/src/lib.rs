//! The Docker executor's engine client (bollard): environment images built
//! from an offline base image, and test runs in fresh, locked-down
//! containers.
//!
//! - **rebuild** = [`Docker::build_image`]: base image + key files + setup
//!   commands → an image named by its id (`sha256:…`, never a tag), reusable
//!   by the digest of its spec, exportable as a blob ([`Docker::save_image`],
//!   [`Docker::load_image`]).
//! - **run** = [`Docker::run`]: a fresh container of that image over one
//!   staged tree, with no network, a read-only root, a non-root user without
//!   capabilities, CPU/memory/pids limits and a wall-clock timeout; output
//!   captured under a cap; the report file copied out without following
//!   symlinks; the container always removed.
//! - **serve** = [`Docker::serve`]: an app's deployment, the run's
//!   container kept serving, its stdin open for a go-ahead, until assay
//!   ends it.
//! - **foreign** = [`Docker::create_foreign`]: a container of an image
//!   assay did not build (a Harbor task's environment), run as the image
//!   says inside the same confinement, and removed the same ways.
//!
//! Nothing is ever pulled: the base image comes from `scripts/base-image.sh`.
//! Every container is labelled `assay.run=1` with its creating process, and
//! [`Docker::cleanup_leftovers`] removes those whose process is gone.
//!
//! Inside an image: [`ENV_DIR`] holds the environment (`ASSAY_ENV`),
//! [`TREE_DIR`] receives each run's tree, [`HOME_DIR`] is a run's home,
//! [`GUARD_DIR`] holds assay's own read-only files ([`LAYOUT`]).

mod archive;
mod build;
mod capture;
mod client;
mod command;
mod container;
mod error;
mod fleet;
mod foreign;
mod image;
mod limits;
mod owner;
mod phase;
mod run;
mod serve;
mod spec;

pub use client::{CONNECT_TIMEOUT, DEFAULT_ENDPOINT, Docker};
pub use error::DockerError;
pub use fleet::{Counts, Fleet};
pub use foreign::{ForeignContainer, ForeignImage, ForeignRan, ForeignSpec};
pub use serve::{ServeSpec, Serving, ServingState};
pub use spec::{
    BuiltImage, ContainerOutcome, ContainerRun, ENV_DIR, GUARD_DIR, HOME_DIR, HostBind, ImageId,
    ImageSpec, KilledBy, LAYOUT, Limits, Report, ReportRequest, RunUser, SetupFailure, TREE_DIR,
    TreeMount, writable_dir,
};
