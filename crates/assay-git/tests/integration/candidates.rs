use assay_git::{CandidateKind, CandidateQuery, Source};
use regex::Regex;

use crate::support::Repo;

fn query() -> CandidateQuery {
    CandidateQuery {
        branch: "main".into(),
        id_prefix: "proj".into(),
        squash_pattern: Some(Regex::new(r"\(#(\d+)\)\s*$").expect("regex")),
        since: None,
        limit: None,
    }
}

/// main: init, squash (#7), plain commit, merge of feature (#12, which
/// itself contains a merge of topic), merge without PR number.
fn history() -> (Repo, Vec<String>) {
    let mut r = Repo::new();
    r.write("a.txt", "a\n");
    let init = r.commit("init");
    r.write("a.txt", "a2\n");
    let squash = r.commit("Fix the thing (#7)");
    r.write("b.txt", "b\n");
    let plain = r.commit("chore: plain commit, not a PR");

    r.git(&["checkout", "-q", "-b", "feature"]);
    r.write("f.txt", "f\n");
    r.commit("feature work");
    r.git(&["checkout", "-q", "-b", "topic"]);
    r.write("t.txt", "t\n");
    r.commit("topic work");
    r.git(&["checkout", "-q", "feature"]);
    r.write("f2.txt", "f2\n");
    r.commit("more feature work");
    let inner = r.merge("topic", "Merge branch 'topic' into feature (#99)");
    r.git(&["checkout", "-q", "main"]);
    let outer = r.merge(
        "feature",
        "Merge pull request #12 from someone/feature\n\nAdd the feature\n\nIt does things.\nSecond line.",
    );

    r.git(&["checkout", "-q", "-b", "other"]);
    r.write("o.txt", "o\n");
    r.commit("other work");
    r.git(&["checkout", "-q", "main"]);
    let nonumber = r.merge("other", "Merge branch 'other'\n\nSome body");
    (r, vec![init, squash, plain, inner, outer, nonumber])
}

#[test]
fn merges_and_squashes_on_first_parent_line() {
    let (r, ids) = history();
    let [_init, squash, plain, inner, outer, nonumber] = ids.as_slice() else {
        panic!()
    };
    let src = Source::open(r.path()).expect("open");
    let c = src.candidates(&query()).expect("candidates");
    let heads: Vec<&str> = c.iter().map(|c| c.head.as_str()).collect();
    assert_eq!(
        heads,
        vec![nonumber.as_str(), outer.as_str(), squash.as_str()]
    );
    assert!(
        !heads.contains(&inner.as_str()),
        "inner merge is not on the first-parent line"
    );
    assert!(
        !heads.contains(&plain.as_str()),
        "non-matching commit ignored"
    );

    assert_eq!(c[0].id, format!("proj-{}", &nonumber[..10]));
    assert_eq!(c[0].title, "Merge branch 'other'");
    assert_eq!(c[0].body, "Some body");
    assert_eq!(c[0].kind, CandidateKind::Merge);

    assert_eq!(c[1].id, "proj-12");
    assert_eq!(c[1].title, "Add the feature");
    assert_eq!(c[1].body, "It does things.\nSecond line.");
    assert_eq!(
        c[1].base,
        src.resolve(&format!("{outer}^1")).expect("parent")
    );
    assert_eq!(c[1].kind, CandidateKind::Merge);

    assert_eq!(c[2].id, "proj-7");
    assert_eq!(c[2].title, "Fix the thing (#7)");
    assert_eq!(
        c[2].base,
        src.resolve(&format!("{squash}^")).expect("parent")
    );
    assert_eq!(c[2].kind, CandidateKind::Squash);
    assert!(c[0].merged_at > c[1].merged_at && c[1].merged_at > c[2].merged_at);
}

#[test]
fn without_squash_pattern_only_merges() {
    let (r, _) = history();
    let src = Source::open(r.path()).expect("open");
    let q = CandidateQuery {
        squash_pattern: None,
        ..query()
    };
    let c = src.candidates(&q).expect("candidates");
    assert_eq!(c.len(), 2);
    assert!(c.iter().all(|c| c.kind == CandidateKind::Merge));
}

#[test]
fn since_and_limit() {
    let (r, _) = history();
    let src = Source::open(r.path()).expect("open");
    let all = src.candidates(&query()).expect("all");
    let q = CandidateQuery {
        since: Some(all[1].merged_at),
        ..query()
    };
    let recent = src.candidates(&q).expect("since");
    assert_eq!(recent, all[..2].to_vec());
    let q = CandidateQuery {
        limit: Some(1),
        ..query()
    };
    assert_eq!(src.candidates(&q).expect("limit"), all[..1].to_vec());
}

#[test]
fn merge_number_from_any_hash_in_subject() {
    let mut r = Repo::new();
    r.write("a", "1");
    r.commit("init");
    r.git(&["checkout", "-q", "-b", "x"]);
    r.write("a", "2");
    r.commit("work");
    r.git(&["checkout", "-q", "main"]);
    r.merge("x", "Merge branch 'x' (#31)");
    let src = Source::open(r.path()).expect("open");
    let c = src.candidates(&query()).expect("candidates");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].id, "proj-31");
    assert_eq!(c[0].title, "Merge branch 'x' (#31)");
}
