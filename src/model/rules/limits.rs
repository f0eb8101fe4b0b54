//! The limits a run can hit, by the words run records store (`limit`), and
//! the reason a grade or a screening record gives for one. The limits
//! themselves (`RunLimits`, part of a run's key) are settings:
//! `model::config`.

use crate::words::words;

words! {
    /// A limit a run hit: the word its record stores, as the executors
    /// write it (the executor adapters map their own hits onto these).
    pub(crate) enum Limit {
        /// The wall-clock timeout.
        Time = "time",
        Memory = "memory",
        Processes = "processes",
        FileSize = "file_size",
        /// The run's tree grew past `write_limit`.
        Write = "write",
    }
}

/// Why a run that hit `limit` (a run record's word) cannot be believed, as
/// records and grades say it; the write limit says how much.
pub(crate) fn limit_reason(limit: &str, write_limit: u64) -> String {
    if Limit::parse(limit) == Some(Limit::Write) {
        format!(
            "the run hit its write limit: it wrote over {} into its tree",
            bytes_text(write_limit)
        )
    } else {
        format!("the run hit its {limit} limit")
    }
}

/// `n` bytes in the largest binary unit that divides it (`1 GiB`,
/// `64 MiB`, `1000 bytes`).
pub(crate) fn bytes_text(n: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{} {unit}", n >> shift);
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::RunLimits;
    use assay_exec::LimitHit;
    use serde::Serialize;

    /// The limits as they were before the write limit existed.
    #[derive(Serialize)]
    struct LimitsBeforeWrites {
        memory: u64,
        processes: u64,
        open_files: u64,
        file_size: u64,
        tmp: u64,
        home: u64,
    }

    #[test]
    fn the_write_limit_enters_the_key_and_its_reason_says_how_much() {
        let d = RunLimits::default();
        let before = LimitsBeforeWrites {
            memory: d.memory,
            processes: d.processes,
            open_files: d.open_files,
            file_size: d.file_size,
            tmp: d.tmp,
            home: d.home,
        };
        assert_eq!(
            assay_engine::encode_params(&d),
            assay_engine::encode_params(&before)
        );
        let lowered = RunLimits {
            write: 64 << 20,
            ..RunLimits::default()
        };
        assert_ne!(
            assay_engine::encode_params(&lowered),
            assay_engine::encode_params(&RunLimits::default())
        );
    }

    /// The words are the executors' own: a record written by either reads
    /// back as the same limit.
    #[test]
    fn the_limit_words_are_the_executors() {
        let hits = [
            (LimitHit::Time, Limit::Time),
            (LimitHit::Memory, Limit::Memory),
            (LimitHit::Processes, Limit::Processes),
            (LimitHit::FileSize, Limit::FileSize),
            (LimitHit::Written, Limit::Write),
        ];
        for (hit, limit) in hits {
            assert_eq!(Limit::parse(hit.as_str()), Some(limit));
        }
        assert_eq!(Limit::ALL.len(), hits.len());
    }

    #[test]
    fn a_write_limit_says_how_much_the_others_name_themselves() {
        assert_eq!(
            limit_reason("write", 1 << 30),
            "the run hit its write limit: it wrote over 1 GiB into its tree"
        );
        assert_eq!(
            limit_reason("memory", 1 << 30),
            "the run hit its memory limit"
        );
        assert_eq!(bytes_text(1536 << 20), "1536 MiB");
        assert_eq!(bytes_text(1000), "1000 bytes");
    }
}
