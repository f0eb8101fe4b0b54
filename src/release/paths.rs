//! The paths of published numbers (`summary.agents[alpha/m].pass@1`):
//! how a key becomes a step of a path, and the value a path names in a
//! published JSON file. A leaf of the release layer: it imports nothing of
//! it, so the CLI can reach it without the rest.

/// One step of a number's path: `.key` for a plain key (lowercase letters,
/// digits, `_`), `[key]` for any other key with `%`, `[` and `]`
/// percent-encoded, `[i]` for an array index. Paths start at `summary`.
pub(crate) fn segment(key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if plain {
        format!(".{key}")
    } else {
        format!(
            "[{}]",
            key.replace('%', "%25")
                .replace('[', "%5B")
                .replace(']', "%5D")
        )
    }
}

/// The value at `path` in a published JSON file's tree (`root` names the
/// tree: `summary`, `funnel`), found by writing every node's path as the
/// manifest writes a number's, so a path on the report resolves exactly as
/// written there; None when no node has it.
pub(crate) fn value_at<'v>(
    tree: &'v serde_json::Value,
    root: &str,
    path: &str,
) -> Option<&'v serde_json::Value> {
    if path == root {
        return Some(tree);
    }
    let children: Vec<(String, &serde_json::Value)> = match tree {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(k, v)| (format!("{root}{}", segment(k)), v))
            .collect(),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{root}[{i}]"), v))
            .collect(),
        _ => return None,
    };
    children
        .into_iter()
        .filter(|(p, _)| path.starts_with(p.as_str()))
        .find_map(|(p, v)| value_at(v, &p, path))
}
