//! Node keys: blake3 over the canonical bincode encoding of a [`KeyRecord`].
//!
//! The record holds only order-stable types (strings, byte vectors, `Vec`s in
//! a fixed order), so the same inputs give the same bytes on every machine.
//! Params arrive already encoded (see [`encode_params`]); a stage is expected
//! to keep timeouts-for-retries, concurrency and credentials out of them.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Bumped when the encoding of [`KeyRecord`] itself changes meaning.
pub const SCHEMA_VERSION: u32 = 1;

/// Inputs at least this long are hashed on all cores (large logs, reports).
pub(crate) const PARALLEL_HASH_MIN: usize = 1 << 20;

/// A blake3 digest: of a key record (a node key) or of bytes (an output, a blob).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Digest(pub [u8; 32]);

/// A digest is already uniformly random: eight of its bytes are a fine hash.
impl Hash for Digest {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut first = [0u8; 8];
        first.copy_from_slice(&self.0[..8]);
        state.write_u64(u64::from_le_bytes(first));
    }
}

/// Passes a [`Digest`]'s own bits through instead of re-hashing them: lookups
/// in a no-op build's 100k-entry index then cost no SipHash rounds. (Keys are
/// blake3 outputs, so nobody can choose them to collide.)
#[derive(Default, Clone, Copy)]
pub struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only reached if something other than a Digest is hashed: mix it in.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

/// A map keyed by digests, hashed by [`DigestHasher`].
pub type DigestMap<V> = HashMap<Digest, V, BuildHasherDefault<DigestHasher>>;

impl Digest {
    pub fn of(bytes: &[u8]) -> Digest {
        // Below a few hundred KiB, spreading over threads costs more than it saves.
        if bytes.len() >= PARALLEL_HASH_MIN {
            let mut hasher = blake3::Hasher::new();
            hasher.update_rayon(bytes);
            return Digest(*hasher.finalize().as_bytes());
        }
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// The digest of a file's content: memory-mapped and hashed on all cores
    /// (blake3's tree hashing parallelises), as `b3sum` does. Small files and
    /// files that cannot be mapped are read instead.
    pub fn of_file(path: &std::path::Path) -> std::io::Result<Digest> {
        let mut hasher = blake3::Hasher::new();
        hasher.update_mmap_rayon(path)?;
        Ok(Digest(*hasher.finalize().as_bytes()))
    }

    pub fn to_hex(&self) -> String {
        let mut buf = [0u8; 64];
        self.hex_into(&mut buf).to_owned()
    }

    /// The hex form written into `buf`, without allocating.
    pub fn hex_into<'b>(&self, buf: &'b mut [u8; 64]) -> &'b str {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for (i, b) in self.0.iter().enumerate() {
            buf[2 * i] = HEX[usize::from(b >> 4)];
            buf[2 * i + 1] = HEX[usize::from(b & 0xf)];
        }
        // Only ASCII hex digits were written.
        std::str::from_utf8(buf).unwrap_or_default()
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
        f.write_str(self.hex_into(&mut [0u8; 64]))
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

/// A [`KeyRecord`] made of borrowed parts: the same canonical bytes, without
/// cloning a node's kind and params to compute its key.
pub(crate) struct KeyRecordRef<'a> {
    pub(crate) schema: u32,
    pub(crate) kind: &'a str,
    pub(crate) kind_version: u32,
    pub(crate) params: &'a [u8],
    pub(crate) deps: &'a [Digest],
}

impl KeyRecordRef<'_> {
    /// The key, encoding into `buf` (cleared first) so a build reuses one
    /// buffer. The bytes are [`KeyRecord::encode`]'s (bincode's standard
    /// configuration), written directly: serde's encoder hands each digest
    /// over one byte at a time.
    pub(crate) fn key_with(&self, buf: &mut Vec<u8>) -> Digest {
        buf.clear();
        varint(buf, u64::from(self.schema));
        varint(buf, self.kind.len() as u64);
        buf.extend_from_slice(self.kind.as_bytes());
        varint(buf, u64::from(self.kind_version));
        varint(buf, self.params.len() as u64);
        buf.extend_from_slice(self.params);
        varint(buf, self.deps.len() as u64);
        for d in self.deps {
            buf.extend_from_slice(&d.0);
        }
        Digest::of(buf)
    }

    pub(crate) fn to_owned(&self) -> KeyRecord {
        KeyRecord {
            schema: self.schema,
            kind: self.kind.to_owned(),
            kind_version: self.kind_version,
            params: self.params.to_vec(),
            deps: self.deps.to_vec(),
        }
    }
}

/// bincode's variable-length integer (standard configuration): below 251 one
/// byte, else a marker byte and the value little-endian in 2, 4 or 8 bytes.
pub(crate) fn varint(buf: &mut Vec<u8>, n: u64) {
    if n < 251 {
        buf.push(n as u8);
    } else if let Ok(n) = u16::try_from(n) {
        buf.push(251);
        buf.extend_from_slice(&n.to_le_bytes());
    } else if let Ok(n) = u32::try_from(n) {
        buf.push(252);
        buf.extend_from_slice(&n.to_le_bytes());
    } else {
        buf.push(253);
        buf.extend_from_slice(&n.to_le_bytes());
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
    fn borrowed_record_encodes_like_the_owned_one() {
        let long = vec![7u8; 300];
        let huge = vec![9u8; 70_000];
        let many: Vec<Digest> = (0..300u32).map(|i| Digest::of(&i.to_le_bytes())).collect();
        let mut buf = Vec::new();
        for (params, deps, kind_version) in [
            (&b"params"[..], vec![Digest::of(b"a"), Digest::of(b"b")], 1),
            (&b""[..], vec![], 0),
            (&long[..], many.clone(), 250),
            (&huge[..], many, 70_000),
        ] {
            let mut r = record(params, deps);
            r.kind_version = kind_version;
            r.kind = "k".repeat(kind_version as usize % 400);
            let borrowed = KeyRecordRef {
                schema: r.schema,
                kind: &r.kind,
                kind_version: r.kind_version,
                params: &r.params,
                deps: &r.deps,
            };
            assert_eq!(borrowed.key_with(&mut buf), r.key());
            assert_eq!(buf, r.encode());
            assert_eq!(borrowed.to_owned(), r);
        }
    }

    #[test]
    fn digest_hex_round_trip() {
        let d = Digest::of(b"x");
        assert_eq!(d.to_hex().parse::<Digest>(), Ok(d));
        assert_eq!(d.to_hex(), hex::encode(d.0));
        assert_eq!(d.to_string(), d.to_hex());
    }

    #[test]
    fn parallel_and_file_hashing_agree_with_plain_blake3() {
        let big: Vec<u8> = (0..3 * PARALLEL_HASH_MIN)
            .map(|i| (i % 251) as u8)
            .collect();
        assert_eq!(Digest::of(&big).0, *blake3::hash(&big).as_bytes());
        let dir = std::env::temp_dir().join(format!("assay-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        for len in [0, 10, big.len()] {
            let path = dir.join(format!("f{len}"));
            std::fs::write(&path, &big[..len]).unwrap_or_default();
            let d = Digest::of_file(&path).ok();
            assert_eq!(d, Some(Digest(*blake3::hash(&big[..len]).as_bytes())));
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!("zz".parse::<Digest>().is_err());
    }
}
