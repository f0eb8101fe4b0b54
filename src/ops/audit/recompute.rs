//! The release recomputed from the release node's key record and its
//! inputs' output bytes, with the pure function the release job runs
//! (`nodes::release::assemble`): shared by `verify --release` (inputs read from the
//! cache) and `verify --bundle` (inputs read from the bundle).

use assay_engine::{Digest, encode_params};
use serde_json::Value;

use crate::nodes::release::{ReadBlob, ReleaseParams, ReleaseRecord, assemble};
use crate::release::Sink;
use crate::run::error::{NodeError, chain};

/// The release recomputed, each file handed to `sink` as it is made, and
/// the output record the release job would store.
///
/// `params_json` is the human form of the params (not hashed into the key):
/// it is believed only if it encodes to exactly `params`, the key's bytes.
/// `inputs`: each input's output bytes with its node key, in input order;
/// `read`: the blobs the release reads (the session patches).
pub(crate) fn recompute_into<S: Sink>(
    params_json: &Value,
    params: &[u8],
    inputs: &[(Vec<u8>, Digest)],
    read: ReadBlob<'_>,
    sink: &mut S,
) -> Result<ReleaseRecord, String>
where
    NodeError: From<S::Error>,
{
    let parsed: ReleaseParams = serde_json::from_value(params_json.clone())
        .map_err(|e| format!("release node params: {e}"))?;
    if encode_params(&parsed) != params {
        return Err(
            "the release node's params (JSON) do not encode to the params of its key record"
                .to_owned(),
        );
    }
    let refs: Vec<(&[u8], Digest)> = inputs.iter().map(|(b, k)| (b.as_slice(), *k)).collect();
    let (files, funnel) = assemble(&parsed, &refs, read, sink).map_err(|e| chain(&e))?;
    Ok(ReleaseRecord { files, funnel })
}
