//! Words for `sh`: the commands assay writes (an eval script, a rerun's
//! `{tests}`, a container's cache copy) quote what they put in.

/// `word` as one `sh` word, always single-quoted.
pub(crate) fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// `word` as one `sh` word: as it is when nothing in it is special, else
/// single-quoted.
pub(crate) fn word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:,=@%+".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        quote(word)
    }
}
