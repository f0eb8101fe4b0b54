//! Is a judge's quote really in the patch it scored?
//!
//! **Rule.** Both the patch and the quote are normalised the same way:
//!
//! 1. split into lines; from each line remove ONE leading diff marker (`+`,
//!    `-` or a space), so a quote may be copied with or without markers;
//! 2. join the lines with a space and collapse every run of whitespace to one
//!    space; trim the ends.
//!
//! The quote is *verified* when its normalised text is a substring of the
//! normalised patch. A quote that elides with `...` or `…` is verified when
//! each of its non-empty pieces is found, in order, without overlap. An empty
//! quote (after normalising) is never verified: it is a missing quote.
//!
//! Case, punctuation and the characters of the code itself are compared as
//! they are: a paraphrase is not a quote.

/// The normalised form described in the module docs.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let body = line.strip_prefix(['+', '-', ' ']).unwrap_or(line);
        for word in body.split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}

/// Whether `quote` is found in `patch` under the rule in the module docs.
pub fn quote_is_in(quote: &str, patch: &str) -> bool {
    let haystack = normalise(patch);
    let whole = normalise(quote);
    if whole.is_empty() {
        return false;
    }
    if haystack.contains(&whole) {
        return true;
    }
    let pieces: Vec<String> = quote
        .split("...")
        .flat_map(|p| p.split('…'))
        .map(normalise)
        .filter(|p| !p.is_empty())
        .collect();
    if pieces.len() < 2 {
        return false;
    }
    let mut rest = haystack.as_str();
    for piece in &pieces {
        match rest.find(piece.as_str()) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "\
diff --git a/src/ratio.rs b/src/ratio.rs
@@ -1,4 +1,6 @@
 fn ratio(a: u32, b: u32) -> u32 {
-    a / b
+    if b == 0 {
+        return 0; // TODO remove
+    }
+    a   /   b
 }
";

    #[test]
    fn quotes_with_or_without_markers_are_found() {
        assert!(quote_is_in("return 0; // TODO remove", PATCH));
        assert!(quote_is_in("+        return 0; // TODO remove", PATCH));
        assert!(quote_is_in("if b == 0 {\n    return 0;", PATCH));
        assert!(quote_is_in("+    if b == 0 {\n+        return 0;", PATCH));
        // Whitespace inside a line is collapsed on both sides.
        assert!(quote_is_in("a / b", PATCH));
        // Removed lines are part of the patch too.
        assert!(quote_is_in("-    a / b", PATCH));
    }

    #[test]
    fn elisions_match_pieces_in_order() {
        assert!(quote_is_in("if b == 0 { ... return 0;", PATCH));
        assert!(quote_is_in("fn ratio(a: u32, b: u32) … a / b", PATCH));
        assert!(
            !quote_is_in("return 0; ... fn ratio", PATCH),
            "out of order"
        );
    }

    #[test]
    fn paraphrases_and_empty_quotes_are_not_found() {
        assert!(!quote_is_in("return None;", PATCH));
        assert!(!quote_is_in("IF B == 0", PATCH));
        assert!(!quote_is_in("", PATCH));
        assert!(!quote_is_in("  \n+ ", PATCH));
        assert!(!quote_is_in("...", PATCH));
    }
}
