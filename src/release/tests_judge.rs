//! The judges' part of the release, end to end through `publish`.

use std::collections::BTreeMap;

use assay_judge::{Criterion, Labels, Mode, PatchReview, QuoteFlag, Reading, Score, Usage};
use serde_json::{Value, json};

use super::tests::{grade, task};
use super::{PublishInput, publish};
use crate::model::records::{JudgeInfo, JudgeOutcome, JudgeRecord};

fn review(slot: usize, scores: [u8; 6], quote: Option<&str>) -> PatchReview {
    let labels = Labels::for_task(0, "t", 2);
    PatchReview {
        label: labels.get(slot).cloned().unwrap_or_else(|| unreachable!()),
        slot,
        scores: Criterion::ALL
            .iter()
            .zip(scores)
            .map(|(c, score)| Score {
                criterion: *c,
                score,
                rationale: "r".into(),
                quote: quote.map(str::to_owned),
            })
            .collect(),
    }
}

fn record(
    sessions: &[&str],
    order: [usize; 2],
    sample: u32,
    reviews: Vec<PatchReview>,
) -> JudgeRecord {
    let pair = sessions.len() == 2;
    let missing: Vec<QuoteFlag> = reviews
        .iter()
        .flat_map(|r| {
            r.scores
                .iter()
                .filter(|s| s.score <= 3 && s.quote.is_none())
                .map(|s| QuoteFlag {
                    label: r.label.clone(),
                    slot: r.slot,
                    criterion: s.criterion,
                })
        })
        .collect();
    let preferred = pair.then(|| order[0]);
    JudgeRecord {
        instance_id: "t1".into(),
        track: "basic".into(),
        task_digest: "task-t1".into(),
        sessions: sessions.iter().map(|s| (*s).to_owned()).collect(),
        order: if pair { order.to_vec() } else { vec![0] },
        mode: if pair { Mode::Pairwise } else { Mode::Single },
        sample,
        model: "judge-m".into(),
        outcome: JudgeOutcome::Reading,
        detail: String::new(),
        usage: Usage {
            input_tokens: 10,
            output_tokens: 2,
        },
        attempts: 1,
        reading: Some(Reading {
            mode: if pair { Mode::Pairwise } else { Mode::Single },
            sample,
            reviews,
            preferred,
            missing_quotes: missing,
            unverified_quotes: vec![],
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
            },
            attempts: 1,
            retried_because: vec![],
            request_digest: "d".into(),
            answer: "{}".into(),
        }),
    }
}

fn input() -> PublishInput {
    let r = |name: &str, rec: JudgeRecord| ("j".to_owned(), rec, name.to_owned());
    PublishInput {
        tasks: vec![task("t1", "basic", true)],
        grades: vec![
            grade("s1", "alpha", "m", "exclude", "resolved", "none"),
            grade("s2", "beta", "m", "exclude", "resolved", "none"),
        ],
        metrics: vec![],
        sessions: vec![],
        not_graded: vec![],
        prices: BTreeMap::new(),
        judges: vec![JudgeInfo {
            name: "j".into(),
            api: "openai".into(),
            model: "judge-m".into(),
            samples: 2,
            pairwise: true,
            seed: 0,
            settings_digest: "sd".into(),
            skipped: None,
        }],
        readings: vec![
            r(
                "k1",
                record(
                    &["s1"],
                    [0, 1],
                    0,
                    vec![review(0, [4, 4, 4, 4, 4, 4], None)],
                ),
            ),
            r(
                "k2",
                record(
                    &["s1"],
                    [0, 1],
                    1,
                    vec![review(0, [5, 4, 4, 4, 4, 4], None)],
                ),
            ),
            r(
                "k3",
                record(&["s2"], [0, 1], 0, vec![review(0, [2; 6], None)]),
            ),
            // Each order prefers the patch shown first: a flip.
            r(
                "k4",
                record(
                    &["s1", "s2"],
                    [0, 1],
                    0,
                    vec![review(0, [4; 6], None), review(1, [3; 6], Some("x"))],
                ),
            ),
            r(
                "k5",
                record(
                    &["s1", "s2"],
                    [1, 0],
                    0,
                    vec![review(1, [3; 6], Some("x")), review(0, [4; 6], None)],
                ),
            ),
        ],
        ..PublishInput::default()
    }
}

fn json(files: &BTreeMap<String, Vec<u8>>, name: &str) -> Value {
    serde_json::from_slice(&files[name]).unwrap_or_default()
}

#[test]
fn readings_become_means_agreement_flips_and_quote_flags() {
    let files = publish(&input());
    let s = json(&files, "summary.json");
    let j = &s["judges"]["j"];
    assert_eq!(j["readings"], 5, "{j:#}");
    assert_eq!(j["position_inconsistency"]["pairs"], 1);
    assert_eq!(j["position_inconsistency"]["rate"], 1.0);
    // s1's two samples agree on 5 of 6 criteria.
    assert_eq!(j["sample_agreement"]["pairs"], 6);
    assert_eq!(j["sample_agreement"]["agreeing"], 5);
    // s2: 6 low scores without a quote alone, 12 in the pairs' quoted threes.
    assert_eq!(j["quotes"]["missing"], 6);
    assert_eq!(j["quotes"]["low_scores"], 18);
    assert_eq!(j["flagged"].as_array().map(Vec::len), Some(6));
    assert_eq!(j["flagged"][0]["agent"], "beta");
    let a = &s["agents"]["alpha/m"]["judge"]["j"];
    assert_eq!(a["criteria"]["overall"]["mean"], 4.0, "{a:#}");
    assert_eq!(a["criteria"]["correctness"]["mean"], 4.5);
    assert_eq!(a["criteria"]["overall"]["lo"], Value::Null, "one session");
    assert_eq!(a["pairwise"]["appearances"], 2);
    assert_eq!(a["pairwise"]["preferred"], 1);
    // beta: 18 low scores (6 alone, 12 in the pairs), 6 of them unquoted.
    let b = &s["agents"]["beta/m"]["judge"]["j"]["quotes"];
    assert_eq!(
        (&b["low_scores"], &b["missing_rate"]),
        (&json!(18), &json!(0.333333))
    );

    let csv = String::from_utf8(files["results.csv"].clone()).unwrap_or_default();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap_or_default().ends_with(
        ",sandbox,ended,is_error,permission_denials,duration_ms,cost_usd,reported_cost_usd,\
         judge_overall,judge_samples,judge_missing_quotes,judge_unverified_quotes"
    ));
    assert!(
        lines
            .next()
            .unwrap_or_default()
            .ends_with(",bwrap,,,,,,,4,2,0,0")
    );
    assert!(
        lines
            .next()
            .unwrap_or_default()
            .ends_with(",bwrap,,,,,,,2,1,6,0")
    );

    let m = json(&files, "manifest.json");
    let n = m["numbers"]
        .as_array()
        .and_then(|ns| {
            ns.iter()
                .find(|n| n["path"] == "summary.judges.j.position_inconsistency.rate")
        })
        .cloned()
        .unwrap_or_default();
    assert_eq!(n["readings"], serde_json::json!(["k4", "k5"]), "{n}");
    assert_eq!(m["judges"], json!({"j": "sd"}));
    let html = String::from_utf8(files["report.html"].clone()).unwrap_or_default();
    assert!(html.contains("<h2>Judge readings</h2>"));
}

#[test]
fn the_order_of_the_readings_does_not_matter() {
    let a = publish(&input());
    let mut shuffled = input();
    shuffled.readings.reverse();
    shuffled.readings.swap(0, 2);
    assert_eq!(a, publish(&shuffled));
}

#[test]
fn without_judges_nothing_is_said() {
    let mut plain = input();
    plain.judges.clear();
    plain.readings.clear();
    let files = publish(&plain);
    let s = json(&files, "summary.json");
    assert!(s.get("judges").is_none());
    assert!(s["agents"]["alpha/m"].get("judge").is_none());
    let csv = String::from_utf8(files["results.csv"].clone()).unwrap_or_default();
    assert!(!csv.contains("judge"));
}

#[test]
fn several_judges_get_columns_by_name_and_a_skipped_one_says_why() {
    let mut two = input();
    let mut other = two.judges[0].clone();
    other.name = "k".into();
    other.skipped = Some("the variable K that should hold the API key is not set".into());
    two.judges.push(other);
    let files = publish(&two);
    let csv = String::from_utf8(files["results.csv"].clone()).unwrap_or_default();
    assert!(csv.contains(",judge_overall:j,") && csv.contains(",judge_overall:k,"));
    let s = json(&files, "summary.json");
    assert_eq!(
        s["judges"]["k"]["skipped"],
        "the variable K that should hold the API key is not set"
    );
    assert!(s["agents"]["alpha/m"]["judge"].get("k").is_none());
}

#[test]
fn every_recorded_judge_source_names_a_published_number() {
    super::tests::assert_sources_name_numbers(&input());
}

#[test]
fn a_judged_summary_reads_back_into_the_model_unchanged() {
    let files = publish(&input());
    let summary: super::Summary =
        serde_json::from_slice(&files["summary.json"]).expect("a summary");
    assert!(summary.judges.is_some());
    assert_eq!(super::pretty(&summary), files["summary.json"]);
}

#[test]
fn the_judges_model_writes_its_keys_sorted() {
    super::tests::assert_keys_sorted(&input());
}
