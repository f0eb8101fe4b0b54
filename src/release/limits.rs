//! The sizes at which a release's growing files are split.

/// Where a file that grows with the sessions is split (docs/audit.md, "A
/// large release's manifest"; docs/stages.md, the report's pages).
pub(crate) struct Limits {
    /// manifest.json's bytes above which it is an index and shards, and
    /// what a shard holds at most, in bytes of its entries' text (about).
    pub(crate) shard_above: usize,
    pub(crate) shard_bytes: usize,
    /// results.csv's bytes above which it is written as parts
    /// (`results/0000.csv`, …), and what a part holds at most.
    pub(crate) csv_above: usize,
    pub(crate) csv_bytes: usize,
    /// Grades an agent page holds: a pair with more grades gets several
    /// pages, `agent-<hex>.html` then `agent-<hex>-2.html`, …, each linking
    /// to every other.
    pub(crate) agent_rows: usize,
    /// Sessions report.html's matrix holds; more go on pages of their own.
    pub(crate) matrix_sessions: usize,
}

impl Limits {
    pub(crate) const RELEASE: Limits = Limits {
        shard_above: 32 << 20,
        shard_bytes: 16 << 20,
        csv_above: 32 << 20,
        csv_bytes: 16 << 20,
        // About 370 bytes a row: no agent page passes 2 MB.
        agent_rows: 3000,
        // About 1 MB of report.html.
        matrix_sessions: 5000,
    };
    /// Nothing split (benches/million.sh's side-by-side figures).
    #[cfg(test)]
    pub(crate) const NONE: Limits = Limits {
        shard_above: usize::MAX,
        shard_bytes: usize::MAX,
        csv_above: usize::MAX,
        csv_bytes: usize::MAX,
        agent_rows: usize::MAX,
        matrix_sessions: usize::MAX,
    };
}
