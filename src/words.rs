//! Closed sets of words: an enum for logic, its word for output and records.
//! Every value's word is written once, in its `words!` block.

/// A closed set of words a record stores: an enum for logic, its word for
/// output. Each value's word is written once, here; serde reads and writes
/// exactly that word, so records keep their bytes.
///
/// Serialized as a plain string by default (the bytes a `String` field had).
/// `words! { unit_variant; … }` serializes as serde's unit variant instead
/// (JSON: the same word; bincode node params: the variant index), for an
/// enum in node params whose key bytes are serde's derived encoding.
macro_rules! words {
    (unit_variant; $($enum:tt)*) => {
        $crate::words::words!(@enum $($enum)*);
        $crate::words::words!(@serialize_unit_variant $($enum)*);
    };
    ($(#[$meta:meta])* pub(crate) enum $name:ident { $($body:tt)* }) => {
        $crate::words::words!(@enum $(#[$meta])* pub(crate) enum $name { $($body)* });
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
    (@serialize_unit_variant $(#[$meta:meta])* pub(crate) enum $name:ident { $($body:tt)* }) => {
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let index = Self::ALL.iter().position(|v| v == self).unwrap_or_default();
                s.serialize_unit_variant(stringify!($name), index as u32, self.as_str())
            }
        }
    };
    (@enum $(#[$meta:meta])* pub(crate) enum $name:ident {
        $($(#[$vmeta:meta])* $value:ident = $word:literal,)*
    }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(crate) enum $name {
            $($(#[$vmeta])* $value,)*
        }

        impl $name {
            /// Every value, in declaration order.
            pub(crate) const ALL: &'static [$name] = &[$($name::$value,)*];

            pub(crate) const fn as_str(self) -> &'static str {
                match self {
                    $($name::$value => $word,)*
                }
            }

            pub(crate) fn parse(word: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|v| v.as_str() == word)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = <String as serde::Deserialize>::deserialize(d)?;
                $name::parse(&word).ok_or_else(|| {
                    let known: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    serde::de::Error::custom(format!(
                        "unknown {} `{word}` (known: {})",
                        stringify!($name),
                        known.join(", ")
                    ))
                })
            }
        }
    };
}
pub(crate) use words;

/// The candidates nearest `word` by edit distance (a typo's "did you mean"):
/// those within a third of its length (at least 1, at most 6 edits), nearest
/// first, at most `n`.
pub(crate) fn nearest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<&'a str> {
    let limit = (word.chars().count() / 3).clamp(1, 6);
    let mut near: Vec<(usize, &str)> = candidates
        .into_iter()
        .map(|c| (edits(word, c), c))
        .filter(|(d, c)| *d <= limit && *c != word)
        .collect();
    near.sort();
    near.dedup();
    near.into_iter().take(n).map(|(_, c)| c).collect()
}

/// Levenshtein distance, by characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diag + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diag = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_finds_the_word_it_missed_and_nothing_far() {
        let ids = ["calc-1", "calc-2", "calc-10", "parser-7"];
        assert_eq!(nearest("calc-01", ids, 3), ["calc-1", "calc-10", "calc-2"]);
        assert_eq!(nearest("calc-01", ids, 1), ["calc-1"]);
        assert_eq!(nearest("clac-2", ids, 1), ["calc-2"]);
        assert!(nearest("zzzzzz", ids, 3).is_empty());
        assert!(nearest("calc-1", ids, 3).iter().all(|w| *w != "calc-1"));
        assert_eq!(edits("kitten", "sitting"), 3);
    }
}
