//! The connection to the daemon, checked once when made.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use bollard::query_parameters::ListContainersOptions;

use crate::container::remove_by_id;
use crate::run::ImageRun;
use crate::{DockerError, ImageId, owner};

/// How long the daemon has to answer the first request before
/// [`Docker::connect`] gives up: an unreachable or wedged daemon must fail
/// the build at once, not hang it.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Docker's own default when `DOCKER_HOST` is unset.
pub const DEFAULT_ENDPOINT: &str = "unix:///var/run/docker.sock";
/// Requests whose answer waits on work of unbounded length (waiting for a
/// container, uploading a tree, committing, saving and loading images) use
/// this instead of bollard's 2-minute default; our own timeouts bound them.
const LONG_REQUEST: Duration = Duration::from_secs(24 * 3600);

/// A checked connection to a Docker daemon.
#[derive(Debug)]
pub struct Docker {
    /// Default timeout (2 minutes) for requests answered at once.
    pub(crate) api: bollard::Docker,
    /// The same connection without a practical timeout.
    pub(crate) long: bollard::Docker,
    pub(crate) endpoint: String,
    /// Image id → who runs in it and where it writes: ids are content
    /// addresses, so the labels read once stay true.
    pub(crate) users: Mutex<HashMap<ImageId, ImageRun>>,
}

impl Docker {
    /// Connects where `DOCKER_HOST` says (the local socket by default) and
    /// checks, within [`CONNECT_TIMEOUT`], that a daemon answers; the API
    /// version is negotiated down to the daemon's.
    pub async fn connect() -> Result<Self, DockerError> {
        let endpoint = std::env::var("DOCKER_HOST").unwrap_or_else(|_| DEFAULT_ENDPOINT.to_owned());
        Self::connect_to(&endpoint).await
    }

    /// Connects to `endpoint` (`unix:///path` or `tcp://host:port`).
    pub async fn connect_to(endpoint: &str) -> Result<Self, DockerError> {
        let unreachable = |reason: String| DockerError::Unreachable {
            endpoint: endpoint.to_owned(),
            reason,
        };
        let api = bollard::Docker::connect_with_host(endpoint)
            .map_err(|error| unreachable(error.to_string()))?;
        let api = match tokio::time::timeout(CONNECT_TIMEOUT, api.negotiate_version()).await {
            Ok(Ok(api)) => api,
            Ok(Err(error)) => return Err(unreachable(error.to_string())),
            Err(_) => {
                return Err(unreachable(format!(
                    "no answer within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )));
            }
        };
        Ok(Self {
            long: api.clone().with_timeout(LONG_REQUEST),
            api,
            endpoint: endpoint.to_owned(),
            users: Mutex::new(HashMap::new()),
        })
    }

    /// Where this connection goes, for messages.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Removes every assay container (labelled `assay.run=1`) whose creating
    /// process is gone — left by an assay that was killed before it could
    /// clean up — and returns their ids. Containers of live processes and of
    /// other hosts are left alone.
    pub async fn cleanup_leftovers(&self) -> Result<Vec<String>, DockerError> {
        self.remove_where(owner::is_abandoned).await
    }

    /// Removes every container this process started: after an interrupted
    /// build, whose cancelled runs may not have finished removing their own.
    pub async fn remove_own(&self) -> Result<Vec<String>, DockerError> {
        self.remove_where(owner::is_mine).await
    }

    async fn remove_where(
        &self,
        doomed: fn(&HashMap<String, String>) -> bool,
    ) -> Result<Vec<String>, DockerError> {
        let options = ListContainersOptions {
            all: true,
            filters: Some(HashMap::from([(
                "label".to_owned(),
                vec![format!("{}=1", owner::RUN)],
            )])),
            ..Default::default()
        };
        let containers = self
            .api
            .list_containers(Some(options))
            .await
            .map_err(DockerError::api("list assay containers"))?;
        let mut removed = Vec::new();
        for container in containers {
            let (Some(id), Some(labels)) = (container.id, container.labels) else {
                continue;
            };
            // One container that will not go must not fail the caller's
            // build: it stays listed for the next look.
            if doomed(&labels) && remove_by_id(self, &id).await.is_ok() {
                removed.push(id);
            }
        }
        Ok(removed)
    }
}
