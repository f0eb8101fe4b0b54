//! The index writer's page cache against its commits: rows shaped like the
//! index's (`nodes`, random 32-byte keys, an inline output of 0.2–1.7 KB)
//! inserted in key order, a transaction of BATCH rows at a time, through a
//! writer cache of 128 MiB (the size before) and of 32 MiB (the size now),
//! side by side at each batch size. Prints the CPU time (user + system) of
//! each. `cargo bench -p assay-engine --bench writer_cache`; env
//! `WRITER_CACHE_ROWS` (default 300,000: an index of about 300 MB, the size
//! of a build of 30,000 sessions).
//!
//! What it shows: while the database is under 1 GiB, sqlite walks the whole
//! page cache at every commit (the reason is in `WRITER_CACHE_KIB`'s
//! comment, `src/store/index.rs`), so with small transactions, as a build
//! of nodes taking milliseconds commits them, the larger cache costs more;
//! with large ones it spills less.

use std::time::Instant;

use rusqlite::{Connection, params};

fn cpu_secs() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Inserts `rows` rows, `batch` a transaction, with a writer cache of
/// `cache_kib`; returns (CPU seconds, wall seconds).
fn run(rows: usize, batch: usize, cache_kib: i64) -> (f64, f64) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let conn = Connection::open(dir.path().join("index.sqlite")).expect("open");
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    conn.pragma_update(None, "synchronous", "NORMAL")
        .expect("sync");
    conn.execute_batch(
        "CREATE TABLE nodes(key BLOB PRIMARY KEY, name TEXT NOT NULL, output BLOB NOT NULL,
         inline BLOB) WITHOUT ROWID;",
    )
    .expect("schema");
    conn.pragma_update(None, "cache_size", -cache_kib)
        .expect("cache");
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (cpu, wall) = (cpu_secs(), Instant::now());
    let mut done = 0;
    while done < rows {
        let mut keys: Vec<[u8; 32]> = (0..batch.min(rows - done))
            .map(|_| {
                let mut k = [0u8; 32];
                k.chunks_mut(8)
                    .for_each(|c| c.copy_from_slice(&next().to_le_bytes()));
                k
            })
            .collect();
        keys.sort_unstable();
        let tx = conn.unchecked_transaction().expect("begin");
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO nodes(key, name, output, inline) VALUES (?1, ?2, ?3, ?4)",
                )
                .expect("prepare");
            for key in &keys {
                let inline = vec![b'x'; 200 + (next() % 1500) as usize];
                insert
                    .execute(params![&key[..], format!("node-{done}"), &key[..], inline])
                    .expect("insert");
                done += 1;
            }
        }
        tx.commit().expect("commit");
    }
    (cpu_secs() - cpu, wall.elapsed().as_secs_f64())
}

fn main() {
    let rows: usize = std::env::var("WRITER_CACHE_ROWS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(300_000);
    println!("{rows} rows; CPU s (wall s) by the writer's cache");
    println!(
        "{:>8}  {:>16}  {:>16}  {:>6}",
        "batch", "128 MiB", "32 MiB", "ratio"
    );
    for batch in [5, 30, 1_000, 5_000] {
        let (old, old_wall) = run(rows, batch, 128 * 1024);
        let (new, new_wall) = run(rows, batch, 32 * 1024);
        println!(
            "{batch:>8}  {old:>7.2} ({old_wall:>6.2})  {new:>7.2} ({new_wall:>6.2})  {:>6.2}",
            new / old
        );
    }
}
