use std::io;
use std::path::PathBuf;

use crate::SetupFailure;

/// Why the Docker executor could not do what it was asked. A test command
/// that runs and fails is not an error: that is a
/// [`ContainerOutcome`](crate::ContainerOutcome).
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    #[error(
        "cannot reach the Docker daemon at {endpoint}: {reason}. Start it (`systemctl start docker`), \
         or point DOCKER_HOST at a running one, and check that this user may use its socket (`docker info`)"
    )]
    Unreachable { endpoint: String, reason: String },

    #[error(
        "base image `{image}` is not in the Docker daemon, and images are never pulled: \
         build it with `scripts/base-image.sh {image}`"
    )]
    BaseImageMissing { image: String },

    #[error(
        "image {id} is not in the Docker daemon: rebuild its environment, or load its saved blob"
    )]
    ImageMissing { id: String },

    #[error(
        "image {id} was not built by assay (it has no valid `assay.user` label): \
         build the environment with `Docker::build_image`"
    )]
    NotAnAssayImage { id: String },

    #[error(
        "image {id} has the layout of another assay (`assay.layout` {found}, this one runs {want}): \
         its runs could not protect the hidden tests; rebuild its environment"
    )]
    OtherLayout {
        id: String,
        found: String,
        want: u32,
    },

    /// The setup ran and failed: the environment cannot be used.
    #[error("{0}")]
    Setup(Box<SetupFailure>),

    #[error("invalid {what} `{value}`: {why}")]
    InvalidSpec {
        what: &'static str,
        value: String,
        why: &'static str,
    },

    #[error("cannot read the staged tree {path}")]
    Tree {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// The write limit measures a run's tree volume from this host, and
    /// could not read it.
    #[error(
        "cannot read the run's tree volume at {path} to hold its write limit: the docker executor \
         measures the volume on the daemon's disk, so assay must run on the daemon's machine as a \
         user that can read its volumes (root, for a rootful daemon)"
    )]
    TreeVolume {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("cannot write the log file {path}")]
    Log {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("the Docker daemon failed to {action}")]
    Api {
        action: String,
        #[source]
        source: bollard::errors::Error,
    },

    #[error("cannot read a tar archive the Docker daemon sent ({what})")]
    Archive {
        what: &'static str,
        #[source]
        source: io::Error,
    },

    #[error("the Docker daemon loaded the image blob but named no image id (it said: {said})")]
    LoadedNoImage { said: String },
}

impl DockerError {
    pub(crate) fn api(action: impl Into<String>) -> impl FnOnce(bollard::errors::Error) -> Self {
        let action = action.into();
        move |source| Self::Api { action, source }
    }
}

/// The HTTP status of a daemon error response (404 no such container/image,
/// 409 conflict), if that is what `error` is.
pub(crate) fn status(error: &bollard::errors::Error) -> Option<u16> {
    match error {
        bollard::errors::Error::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}
