//! `certify`: one extra reading of a candidate's gold tree that certifies
//! the canaries its graded runs are made of (docs/security.md,
//! "Canaries"). Every test of the hidden test files is renamed, copied
//! and mutated ([`canary::plant_real`] with nothing certified yet); the
//! record keeps the copies that passed, the mutants that failed while
//! their original passed, and the files whose renamed tests all kept the
//! outcome every gold reading gave them. A mutant that passes at gold, or
//! a file the reader broke, is dropped here and never planted in a
//! graded run.
//!
//! An observation like a run (re-read with `--reread certify`); it runs
//! the maintainer's tree, never an agent's, as a screening run does.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use assay_engine::JobCtx;

use super::adapter::{Kind, Made, NodeKind};
use super::canaries::Plant;
use super::run::{RunParams, execute_tree};
use crate::model::canary;
use crate::model::records::{CertifyRecord, EnvRecord, ScreenRecord, TreeRecord, TriageRecord};
use crate::model::rules::policy::TestPatch;
use crate::run::error::NodeError;

super::adapter::inputs! {
    pub(crate) struct CertifyInputs / CertifyNames {
        triage: TriageRecord,
        // The gold state's tree.
        tree: TreeRecord,
        env: EnvRecord,
        screen: ScreenRecord,
    }
}

pub(crate) struct Certify {
    /// A screening run's params (repeat 0).
    pub(crate) params: RunParams,
    pub(crate) store_dir: PathBuf,
    pub(crate) env: String,
    pub(crate) executors: std::sync::Arc<crate::run::executor::Executors>,
}

impl Kind for Certify {
    const NAME: &'static str = NodeKind::Certify.as_str();
    /// 2: windows that give nothing away (issue 47): ranks drawn first, a
    /// Go or Rust window that would go below 0 dropped, every place writing
    /// the value mutated with it, strings mutated into the file's own
    /// strings, sites that are inputs or recomputable from them not used.
    /// 3: a second reading of the gold tree seals every sealable
    /// assertion and certifies the seals that matched.
    /// 4: a command's `-x`/`-f` stops at the first failure only where a
    /// test runner takes it (assay's Deep-SWE wrapper's `rm -f` and
    /// `[ -f … ]` refused every Deep-SWE task its canaries).
    const VERSION: u32 = 4;
    const OBSERVATION: bool = true;
    type Params = RunParams;
    type Inputs = CertifyInputs;
    type Record = CertifyRecord;

    fn params(&self) -> &RunParams {
        &self.params
    }

    async fn run(
        self: Arc<Self>,
        i: CertifyInputs,
        ctx: JobCtx,
    ) -> Result<Made<CertifyRecord>, NodeError> {
        let none = |why: &str| {
            Ok(Made::record(CertifyRecord {
                none: Some(why.to_owned()),
                ..CertifyRecord::default()
            }))
        };
        let (triage, tree, screen) = (&i.triage.record, &i.tree.record, &i.screen.record);
        if !triage.eligible() || screen.skipped.is_some() {
            return none("not screened");
        }
        let Some(tree_id) = &tree.tree else {
            return none("no gold tree");
        };
        let gold_passed: BTreeSet<String> = screen
            .fail_to_pass
            .iter()
            .chain(&screen.pass_to_pass)
            .cloned()
            .collect();
        if gold_passed.is_empty() {
            return none("no test passes at gold");
        }
        let test_patch = super::blob(&ctx, &triage.test_patch)?;
        let hidden = TestPatch::read(&test_patch).hidden();
        let (run, attachments, planted) = execute_tree(
            tree_id,
            &[],
            &tree.rebuild,
            &i.env.record,
            &self.params,
            0,
            &self.store_dir,
            &self.executors,
            &ctx,
            Plant::Certify(&hidden),
        )
        .await?;
        let own_ms = run
            .duration_ms
            .saturating_sub(run.cpu_stalled_ms.unwrap_or_default());
        // Named only where the canaries at least double the slowest
        // screening reading: below that a task's timeout (ten times it by
        // default) covers them, and a reading near a step of the rounding
        // would move every task digest of the candidate from build to build.
        let slowest = crate::model::rules::timeout::bucket(own_ms);
        let mut record = CertifyRecord {
            slowest_s: screen
                .slowest_s
                .is_some_and(|s| slowest > 2.0 * s)
                .then_some(slowest),
            ..CertifyRecord::default()
        };
        match planted {
            None => {
                record.none = Some(run.unchecked.unwrap_or_else(|| "nothing planted".into()));
            }
            Some(planted) => {
                record.planted = planted.trials.len() as u32;
                if let Some(why) = &run.untrusted {
                    record.none = Some(format!("the certifying reading is not believed: {why}"));
                } else {
                    let trials: Vec<(canary::Trial, Option<assay_report::Outcome>)> = planted
                        .trials
                        .into_iter()
                        .zip(run.canaries.iter().map(|c| c.seen))
                        .collect();
                    record.certified =
                        canary::certified(&trials, &run.tests, &gold_passed, &hidden);
                    if record.certified.mutants.is_empty() {
                        record.none = Some("no mutant failed at gold while its test passed".into());
                    }
                }
            }
        }
        let mut attachments = attachments;
        let (seals, unsealed, more) = self.seal(tree_id, &hidden, &i, &ctx, &gold_passed).await?;
        record.certified.seals = seals;
        record.unsealed = unsealed;
        attachments.extend(more);
        Ok(Made {
            record,
            attachments,
        })
    }

    fn exclusive(&self) -> Option<&str> {
        self.params.exclusive(&self.executors, &self.env)
    }
}

impl Certify {
    /// The sealed reading of the gold tree (docs/security.md, "Sealed
    /// expectations"): the seals whose test passed and every report of
    /// which matched, or why there are none.
    async fn seal(
        &self,
        tree_id: &str,
        hidden: &[String],
        i: &CertifyInputs,
        ctx: &JobCtx,
        gold_passed: &BTreeSet<String>,
    ) -> Result<(Vec<canary::Seal>, Option<String>, Vec<assay_engine::Digest>), NodeError> {
        if hidden.is_empty() {
            return Ok((Vec::new(), Some("no hidden test file".into()), Vec::new()));
        }
        let (run, attachments, planted) = execute_tree(
            tree_id,
            &[],
            &i.tree.record.rebuild,
            &i.env.record,
            &self.params,
            0,
            &self.store_dir,
            &self.executors,
            ctx,
            Plant::Seal(hidden),
        )
        .await?;
        let Some(planted) = planted else {
            let why = run.unchecked.unwrap_or_else(|| "nothing sealed".into());
            return Ok((Vec::new(), Some(why), attachments));
        };
        if let Some(why) = &run.untrusted {
            let why = format!("the sealed reading is not believed: {why}");
            return Ok((Vec::new(), Some(why), attachments));
        }
        let seals = canary::certified_seals(self.params.report, &planted, &run.tests, gold_passed);
        let why = seals.is_empty().then(|| {
            format!(
                "none of the {} sealed assertions passed at gold with its value matched",
                planted.sealed.len()
            )
        });
        Ok((seals, why, attachments))
    }
}
