//! Node keys: blake3 over the canonical bincode encoding of a [`KeyRecord`].
//!
//! The record holds only order-stable types (strings, byte vectors, `Vec`s in
//! a fixed order), so the same inputs give the same bytes on every machine.
//! Params arrive already encoded (see [`encode_params`]); a stage is expected
//! to keep timeouts-for-retries, concurrency and credentials out of them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Bumped when the encoding of [`KeyRecord`] itself changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// A blake3 digest: of a key record (a node key) or of bytes (an output, a blob).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// The digest of a file's content, streamed (no whole-file buffer).
    pub fn of_file(path: &std::path::Path) -> std::io::Result<Digest> {
        let mut hasher = blake3::Hasher::new();
        let mut file = std::fs::File::open(path)?;
        // Large reads let blake3 hash many chunks per SIMD pass.
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match std::io::Read::read(&mut file, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    hasher.update(&buf[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Digest(*hasher.finalize().as_bytes()))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub fn short(&self) -> String {
        hex::encode(&self.0[..6])
    }

    pub fn from_slice(bytes: &[u8]) -> Option<Digest> {
        <[u8; 32]>::try_from(bytes).ok().map(Digest)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.short())
    }
}

impl FromStr for Digest {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bytes = hex::decode(s).map_err(|e| format!("not a hex digest: {e}"))?;
        Digest::from_slice(&bytes).ok_or_else(|| "a digest has 64 hex digits".to_owned())
    }
}

/// Everything that determines a node's output, and nothing else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub schema: u32,
    pub kind: String,
    pub kind_version: u32,
    /// Canonical bytes of the stage's params struct.
    pub params: Vec<u8>,
    /// Output digests of the dependencies, in the node's declared order.
    pub deps: Vec<Digest>,
}

impl KeyRecord {
    pub fn key(&self) -> Digest {
        Digest::of(&self.encode())
    }

    pub fn encode(&self) -> Vec<u8> {
        // Encoding plain owned data into a Vec cannot fail.
        bincode::serde::encode_to_vec(self, bincode::config::standard()).unwrap_or_default()
    }
}

/// Canonical bytes of a params value. Use only order-stable types (no HashMap).
pub fn encode_params<T: Serialize>(params: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(params, bincode::config::standard()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(params: &[u8], deps: Vec<Digest>) -> KeyRecord {
        KeyRecord {
            schema: SCHEMA_VERSION,
            kind: "k".into(),
            kind_version: 1,
            params: params.to_vec(),
            deps,
        }
    }

    #[test]
    fn key_is_stable_and_sensitive_to_every_field() {
        let base = record(b"p", vec![Digest::of(b"a")]);
        assert_eq!(base.key(), base.clone().key());
        let mut v = base.clone();
        v.kind_version = 2;
        assert_ne!(v.key(), base.key());
        assert_ne!(record(b"q", vec![Digest::of(b"a")]).key(), base.key());
        assert_ne!(record(b"p", vec![Digest::of(b"b")]).key(), base.key());
        let mut k = base.clone();
        k.kind = "other".into();
        assert_ne!(k.key(), base.key());
    }

    #[test]
    fn key_of_known_record_is_pinned() {
        // Pins the canonical encoding: if this changes, every cache is invalidated,
        // which must be a deliberate SCHEMA_VERSION bump.
        let r = record(b"p", vec![]);
        assert_eq!(r.encode(), vec![1, 1, b'k', 1, 1, b'p', 0]);
    }

    #[test]
    fn digest_hex_round_trip() {
        let d = Digest::of(b"x");
        assert_eq!(d.to_hex().parse::<Digest>(), Ok(d));
        assert!("zz".parse::<Digest>().is_err());
    }
}
