//! The arithmetic of the release: Wilson and Student t intervals, the
//! six-decimal rounding of every published float, the cost of a session's
//! tokens and the agent key. Pure functions, unit-tested here.

use std::collections::{BTreeMap, BTreeSet};

use super::input::Price;
use crate::model::records::RunFacts;

/// The z of a two-sided 95% interval.
const Z95: f64 = 1.959964;

/// The Wilson 95% score interval of `k` successes in `n` trials, clamped to
/// [0, 1]; None when `n` is 0 (no rate) or `k > n` (no such rate).
pub(crate) fn wilson(k: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    wilson_share(k as f64 / n as f64, n)
}

/// The Wilson interval of a share `p` of `n` units where each unit is
/// itself a share (a task's resolved attempts): `p(1 − p)/n` bounds the
/// variance of a mean of values in [0, 1], so the interval is conservative,
/// and with one attempt per task it is the plain Wilson interval of k/n.
pub(crate) fn wilson_share(p: f64, n: u64) -> Option<(f64, f64)> {
    if n == 0 || !(0.0..=1.0).contains(&p) {
        return None;
    }
    let n = n as f64;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At p = 0 or 1 the bound is exact in theory; do not let rounding leak out.
    let lo = if p == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if p == 1.0 {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some((lo, hi))
}

/// What a session's tokens cost by `[prices]`: per model id where its
/// transcript gives per-model usage, else by its model label. Token kinds
/// and model ids without a price add nothing and are noted in `unpriced`.
pub(crate) fn session_cost(
    prices: &BTreeMap<String, Price>,
    label: &str,
    facts: &RunFacts,
    unpriced: &mut BTreeSet<String>,
) -> f64 {
    let mut priced = |who: &str, tokens: &BTreeMap<String, u64>| {
        if tokens.values().all(|n| *n == 0) {
            return 0.0;
        }
        let Some(price) = prices.get(who) else {
            unpriced.insert(format!("model {who}"));
            return 0.0;
        };
        tokens
            .iter()
            // A kind the run used none of costs nothing, priced or not.
            .filter(|(_, n)| **n > 0)
            .filter_map(|(kind, n)| match price.0.get(kind) {
                Some(usd) => Some(*n as f64 * usd / 1e6),
                None => {
                    unpriced.insert(kind.clone());
                    None
                }
            })
            .sum::<f64>()
    };
    if facts.by_model.is_empty() {
        priced(label, &facts.tokens)
    } else {
        facts
            .by_model
            .iter()
            .map(|(id, kinds)| priced(id, kinds))
            .sum()
    }
}

/// Published floats carry six decimals: recomputing with any IEEE-754 double
/// arithmetic and rounding the same way gives the same number. A value that
/// rounds to zero is `0.0`, never `-0.0` (a Wilson bound of a rate of 0 is a
/// tiny negative before rounding): adding `+0.0` turns `-0.0` into `0.0` and
/// leaves every other number as it is.
pub(crate) fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6 + 0.0
}

/// `agent/model` as the key of `summary.agents`: `%` and `/` inside either
/// label are percent-encoded, so two different pairs never share a key.
pub(crate) fn agent_key(agent: &str, model: &str) -> String {
    let enc = |s: &str| s.replace('%', "%25").replace('/', "%2F");
    format!("{}/{}", enc(agent), enc(model))
}

/// The mean of `values`; None without one.
pub(crate) fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0u64), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The mean and its t 95% interval (clamped to 1–5), see the module docs.
pub(crate) fn mean_interval(values: &[f64]) -> (Option<f64>, Option<(f64, f64)>) {
    let Some(m) = mean(values.iter().copied()) else {
        return (None, None);
    };
    let n = values.len();
    if n < 2 {
        return (Some(m), None);
    }
    let var = values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64;
    let half = t975((n - 1) as f64) * (var / n as f64).sqrt();
    (Some(m), Some(((m - half).max(1.0), (m + half).min(5.0))))
}

/// Student's t 0.975 quantile with `df` degrees of freedom: the `t` with
/// P(|T| > t) = 0.05, found by bisection on the exact tail
/// `I_{df/(df+t²)}(df/2, 1/2)` (scipy's `t.ppf(0.975, df)` to ~1e-12).
pub(crate) fn t975(df: f64) -> f64 {
    let tail = |t: f64| incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    let (mut lo, mut hi) = (0.0_f64, 1.0e3_f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if tail(mid) > 0.05 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// The regularised incomplete beta function `I_x(a, b)` (Lentz's continued
/// fraction, as in Numerical Recipes' `betai`).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind (or a model) the run used none of is never reported unpriced.
    #[test]
    fn a_zero_count_costs_nothing_and_needs_no_price() {
        let prices = BTreeMap::from([(
            "model-a".to_owned(),
            super::super::input::Price(BTreeMap::from([("input".to_owned(), 3.0)])),
        )]);
        let facts = RunFacts {
            tokens: BTreeMap::from([
                ("input".to_owned(), 1_000_000),
                ("web_search_requests".to_owned(), 0),
            ]),
            ..RunFacts::default()
        };
        let mut unpriced = BTreeSet::new();
        assert_eq!(session_cost(&prices, "model-a", &facts, &mut unpriced), 3.0);
        assert!(unpriced.is_empty(), "{unpriced:?}");
        let helper = RunFacts {
            by_model: BTreeMap::from([
                (
                    "model-a".to_owned(),
                    BTreeMap::from([("input".to_owned(), 1)]),
                ),
                (
                    "helper".to_owned(),
                    BTreeMap::from([("input".to_owned(), 0)]),
                ),
            ]),
            ..RunFacts::default()
        };
        session_cost(&prices, "model-a", &helper, &mut unpriced);
        assert!(unpriced.is_empty(), "{unpriced:?}");
        let used = RunFacts {
            tokens: BTreeMap::from([("web_search_requests".to_owned(), 2)]),
            ..RunFacts::default()
        };
        session_cost(&prices, "model-a", &used, &mut unpriced);
        assert_eq!(unpriced, BTreeSet::from(["web_search_requests".to_owned()]));
    }

    #[test]
    fn t_quantiles_match_the_table() {
        for (df, t) in [
            (1.0, 12.706205),
            (2.0, 4.302653),
            (5.0, 2.570582),
            (10.0, 2.228139),
            (30.0, 2.042272),
            (1000.0, 1.962339),
        ] {
            assert!((t975(df) - t).abs() < 1e-6, "df {df}: {}", t975(df));
        }
    }

    #[test]
    fn intervals_need_two_sessions_and_stay_on_the_scale() {
        assert_eq!(mean_interval(&[]), (None, None));
        assert_eq!(mean_interval(&[3.0]), (Some(3.0), None));
        assert_eq!(mean_interval(&[4.0, 5.0]), (Some(4.5), Some((1.0, 5.0))));
        let (m, i) = mean_interval(&[3.0, 3.0, 3.0]);
        assert_eq!((m, i), (Some(3.0), Some((3.0, 3.0))));
        let (_, i) = mean_interval(&[2.0, 3.0, 4.0, 3.0]);
        let (lo, hi) = i.unwrap_or_default();
        // mean 3, s/√n = 0.408248, t(3) = 3.182446: half = 1.299228
        assert!(
            (lo - 1.700772).abs() < 1e-6 && (hi - 4.299228).abs() < 1e-6,
            "{lo} {hi}"
        );
    }
}
