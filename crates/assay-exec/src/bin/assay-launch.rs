//! The launcher of `assay_exec::launch` as a program of its own, for
//! callers of this crate that are not the `assay` binary (its tests).

fn main() {
    assay_exec::launch::dispatch();
    eprintln!(
        "assay-launch starts a run's command for assay_exec; run as `assay-launch {} …`",
        assay_exec::launch::ARG
    );
    std::process::exit(2);
}
