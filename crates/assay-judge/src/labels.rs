//! Blind labels: which letter each of a task's patches is shown under.
//!
//! The same label must mean different authors on different tasks, or a
//! reviewer (or a reader of the readings) could learn "P is the strong one".
//! So the labels of one task are a permutation drawn from the pipeline's seed
//! and the task's digest, and nothing else: the same seed and task always give
//! the same labels, on every machine.
//!
//! **Algorithm (version 1).** Names are `P, Q, …, Z, A, …, O` (slot count
//! beyond 26 continues `P2, Q2, …`). A blake3 XOF stream is opened with
//! `blake3::Hasher::new_derive_key("assay-judge labels v1")` over
//! `seed.to_le_bytes() ‖ task_digest (UTF-8)`. A Fisher–Yates shuffle runs
//! `for i in (1..n).rev()`, drawing `j` uniformly from `0..=i` with 8-byte
//! little-endian words from the stream, rejecting words at or above the
//! largest multiple of `i + 1` (no modulo bias); then slot `s` gets `names[s]`.

use std::fmt;

use serde::{Deserialize, Serialize};

const DERIVE_CONTEXT: &str = "assay-judge labels v1";

/// The name a patch is shown under (`P`, `Q`, …).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Label(String);

impl Label {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `k`-th name in the unshuffled sequence.
    fn nth(k: usize) -> Label {
        const LETTERS: &[u8; 26] = b"PQRSTUVWXYZABCDEFGHIJKLMNO";
        let letter = char::from(LETTERS[k % 26]);
        match k / 26 {
            0 => Label(letter.to_string()),
            round => Label(format!("{letter}{}", round + 1)),
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One task's labels, indexed by slot (the caller's stable order of the
/// task's patches, e.g. sorted by session digest).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Labels(Vec<Label>);

impl Labels {
    /// The seeded permutation for `n` patches of one task (module docs).
    pub fn for_task(seed: u64, task_digest: &str, n: usize) -> Labels {
        let mut names: Vec<Label> = (0..n).map(Label::nth).collect();
        let mut hasher = blake3::Hasher::new_derive_key(DERIVE_CONTEXT);
        hasher.update(&seed.to_le_bytes());
        hasher.update(task_digest.as_bytes());
        let mut stream = hasher.finalize_xof();
        let mut draw = || {
            let mut word = [0u8; 8];
            stream.fill(&mut word);
            u64::from_le_bytes(word)
        };
        for i in (1..n).rev() {
            let bound = i as u64 + 1;
            let zone = u64::MAX - u64::MAX % bound;
            let j = loop {
                let x = draw();
                if x < zone {
                    break x % bound;
                }
            };
            // j <= i < n, so it fits.
            names.swap(i, j as usize);
        }
        Labels(names)
    }

    pub fn get(&self, slot: usize) -> Option<&Label> {
        self.0.get(slot)
    }

    /// The slot shown under `label`, if any.
    pub fn slot_of(&self, label: &str) -> Option<usize> {
        self.0.iter().position(|l| l.as_str() == label)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Label> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(labels: &Labels) -> Vec<&str> {
        labels.iter().map(Label::as_str).collect()
    }

    #[test]
    fn same_seed_and_task_give_the_same_labels() {
        let a = Labels::for_task(7, "task-a", 5);
        assert_eq!(a, Labels::for_task(7, "task-a", 5));
        let mut sorted = names(&a);
        sorted.sort_unstable();
        assert_eq!(sorted, ["P", "Q", "R", "S", "T"]);
    }

    #[test]
    fn labels_are_a_fixed_function_of_seed_and_task() {
        // Pinned against an independent Python implementation of the module
        // docs' algorithm: a change here re-labels every published reading.
        assert_eq!(names(&Labels::for_task(0, "t", 3)), ["P", "Q", "R"]);
        assert_eq!(names(&Labels::for_task(1, "t", 3)), ["R", "Q", "P"]);
        assert_eq!(
            names(&Labels::for_task(7, "task-a", 5)),
            ["S", "P", "Q", "R", "T"]
        );
        assert_eq!(names(&Labels::for_task(42, "abc", 4)), ["S", "R", "Q", "P"]);
    }

    #[test]
    fn the_first_slot_is_not_always_p() {
        let firsts: std::collections::BTreeSet<String> = (0..64)
            .map(|t| Labels::for_task(42, &format!("task-{t}"), 2).0[0].to_string())
            .collect();
        assert_eq!(firsts.len(), 2, "both P and Q lead on some task");
        let seeds: std::collections::BTreeSet<String> = (0..64)
            .map(|s| Labels::for_task(s, "task", 2).0[0].to_string())
            .collect();
        assert_eq!(seeds.len(), 2, "the seed alone moves the labels too");
    }

    #[test]
    fn shuffle_is_roughly_uniform() {
        // 3 patches, 6 permutations, 6000 tasks: each within 20% of 1000.
        let mut counts = std::collections::BTreeMap::new();
        for t in 0..6000 {
            let l = Labels::for_task(3, &t.to_string(), 3);
            *counts.entry(names(&l).join("")).or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 6);
        assert!(
            counts.values().all(|&c| (800..1200).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn many_slots_get_distinct_names() {
        let l = Labels::for_task(1, "big", 60);
        let set: std::collections::BTreeSet<&str> = names(&l).into_iter().collect();
        assert_eq!(set.len(), 60);
        assert!(set.contains("P2") && set.contains("P3"));
        assert_eq!(l.slot_of(l.0[17].as_str()), Some(17));
        assert!(Labels::for_task(1, "none", 0).is_empty());
    }
}
