//! Literal values, as a sealed assertion's expected side is written in a
//! test's source and as the code under test's value comes back through the
//! seal channel ([`super::seal`]). One small value model for every language
//! assay seals, a reader per language (the same reader reads the source
//! literal and the reported value: each language's encoder writes its
//! values in its own literal syntax), and each language's equality.
//!
//! Only literals: numbers, strings, bytes, booleans, null-likes and lists,
//! tuples, maps and sets of them. Anything else (a name, a call, an
//! operator but unary minus, a Python f-string, a JavaScript template) is
//! not a literal, and its site stays unsealed.

use super::shape::Lang;

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Lit {
    Int(i128),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Bool(bool),
    /// Python's `None`, JavaScript's `null`, Go's `nil`.
    Null,
    /// JavaScript's `undefined`.
    Undefined,
    /// A Rust `char`.
    Char(char),
    /// A Python list, a JavaScript array, a Rust vec, array or slice.
    List(Vec<Lit>),
    Tuple(Vec<Lit>),
    /// A Python dict or a JavaScript plain object, in written order.
    Map(Vec<(Lit, Lit)>),
    Set(Vec<Lit>),
}

/// The deepest nesting read: deeper values are not literals assay seals.
const DEPTH: usize = 32;

impl Lit {
    /// `text` as a literal of `lang`, whole (surrounding spaces allowed).
    pub(crate) fn parse(lang: Lang, text: &str) -> Option<Lit> {
        let mut p = Parser {
            s: text.as_bytes(),
            at: 0,
            lang,
        };
        let v = p.value(0)?;
        p.space();
        (p.at == p.s.len()).then_some(v)
    }

    /// Whether `self` (the expected literal) equals `got` (the reported
    /// value) as `lang`'s assertion compares them: Python's `==` (`2 ==
    /// 2.0`, `True == 1`, dict and set order ignored, a list never equals a
    /// tuple), JavaScript's strict deep equality, Go's and Rust's `==` on
    /// values of one type (numbers compared by value).
    pub(crate) fn equals(&self, got: &Lit, lang: Lang) -> bool {
        use Lit::*;
        let python = matches!(lang, Lang::Unittest | Lang::Pytest);
        match (self, got) {
            (Int(_) | Float(_) | Bool(_), Int(_) | Float(_) | Bool(_)) => {
                let bools = matches!(self, Bool(_)) || matches!(got, Bool(_));
                if bools && !python {
                    return self == got;
                }
                if lang == Lang::Js {
                    // Object.is: NaN is itself, +0 and -0 differ.
                    let (a, b) = (self.number().map(Num::float), got.number().map(Num::float));
                    let (Some(a), Some(b)) = (a, b) else {
                        return false;
                    };
                    let (a, b) = match (self, got) {
                        (Float(x), Float(y)) => (*x, *y),
                        (Float(x), _) => (*x, b),
                        (_, Float(y)) => (a, *y),
                        _ => (a, b),
                    };
                    return (a.is_nan() && b.is_nan())
                        || (a == b && a.is_sign_negative() == b.is_sign_negative());
                }
                match (self.number(), got.number()) {
                    (Some(Num::I(a)), Some(Num::I(b))) => a == b,
                    (Some(a), Some(b)) => a.float() == b.float(),
                    _ => false,
                }
            }
            (List(a), List(b)) | (Tuple(a), Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.equals(y, lang))
            }
            // Rust compares a tuple, an array and a slice only with their
            // own kind, and Debug prints a tuple in parentheses: the same.
            (Map(a), Map(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(k, v)| {
                        b.iter()
                            .any(|(k2, v2)| k.equals(k2, lang) && v.equals(v2, lang))
                    })
            }
            (Set(a), Set(b)) => {
                a.len() == b.len() && a.iter().all(|x| b.iter().any(|y| x.equals(y, lang)))
            }
            (Float(_), _) | (_, Float(_)) => false,
            _ => self == got,
        }
    }

    fn number(&self) -> Option<Num> {
        match self {
            Lit::Int(i) => Some(Num::I(*i)),
            Lit::Bool(b) => Some(Num::I(i128::from(*b))),
            Lit::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => Some(Num::I(*f as i128)),
            Lit::Float(f) => Some(Num::F(*f)),
            _ => None,
        }
    }

    /// The scalars of the value (strings by their contents, numbers as
    /// written by `to_string`): what a test body must not spell out
    /// elsewhere for the value to be hidden by a seal.
    pub(crate) fn scalars(&self) -> Vec<String> {
        match self {
            Lit::Int(i) => vec![i.to_string()],
            Lit::Float(f) => vec![f.to_string()],
            Lit::Str(s) => vec![s.clone()],
            Lit::Char(c) => vec![c.to_string()],
            Lit::List(v) | Lit::Tuple(v) | Lit::Set(v) => v.iter().flat_map(Lit::scalars).collect(),
            Lit::Map(m) => m
                .iter()
                .flat_map(|(k, v)| k.scalars().into_iter().chain(v.scalars()))
                .collect(),
            _ => Vec::new(),
        }
    }
}

#[derive(Clone, Copy)]
enum Num {
    I(i128),
    F(f64),
}

impl Num {
    fn float(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    lang: Lang,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, text: &str) -> bool {
        self.space();
        if self.s[self.at..].starts_with(text.as_bytes()) {
            self.at += text.len();
            true
        } else {
            false
        }
    }

    fn python(&self) -> bool {
        matches!(self.lang, Lang::Unittest | Lang::Pytest)
    }

    fn value(&mut self, depth: usize) -> Option<Lit> {
        if depth > DEPTH {
            return None;
        }
        self.space();
        let c = self.peek()?;
        match c {
            b'[' => {
                self.at += 1;
                Some(Lit::List(self.items(b']', depth)?))
            }
            b'(' if self.lang != Lang::Go && self.lang != Lang::Js => {
                self.at += 1;
                let (items, comma) = self.items_comma(b')', depth)?;
                if items.len() == 1 && !comma {
                    return items.into_iter().next();
                }
                Some(Lit::Tuple(items))
            }
            b'{' if self.python() || self.lang == Lang::Js => {
                self.at += 1;
                self.braces(depth)
            }
            b'&' if self.lang == Lang::Rust => {
                self.at += 1;
                self.value(depth + 1)
            }
            b'"' | b'\'' | b'`' => self.string(),
            b'-' | b'+' => {
                self.at += 1;
                self.space();
                let v = self.value(depth + 1)?;
                let neg = c == b'-';
                match v {
                    // JavaScript's -0 is a number of its own.
                    Lit::Int(0) if neg && self.lang == Lang::Js => Some(Lit::Float(-0.0)),
                    Lit::Int(i) => Some(Lit::Int(if neg { i.checked_neg()? } else { i })),
                    Lit::Float(f) => Some(Lit::Float(if neg { -f } else { f })),
                    _ => None,
                }
            }
            b'0'..=b'9' | b'.' => self.number(),
            _ => self.word(depth),
        }
    }

    /// A name: a keyword literal, a string prefix, `vec![`, `set()`.
    fn word(&mut self, depth: usize) -> Option<Lit> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'!')
        {
            self.at += 1;
        }
        let w = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        let py = self.python();
        let v = match (w, self.lang) {
            ("True", _) if py => Lit::Bool(true),
            ("False", _) if py => Lit::Bool(false),
            ("None", _) if py => Lit::Null,
            ("inf", _) if py => Lit::Float(f64::INFINITY),
            ("nan", _) if py => Lit::Float(f64::NAN),
            ("set", _) if py && self.eat("(") && self.eat(")") => Lit::Set(Vec::new()),
            ("true", _) if !py => Lit::Bool(true),
            ("false", _) if !py => Lit::Bool(false),
            ("null", Lang::Js) => Lit::Null,
            ("undefined", Lang::Js) => Lit::Undefined,
            ("NaN", Lang::Js | Lang::Rust) => Lit::Float(f64::NAN),
            ("Infinity", Lang::Js) => Lit::Float(f64::INFINITY),
            ("inf", Lang::Rust | Lang::Go) => Lit::Float(f64::INFINITY),
            ("NaN", Lang::Go) => Lit::Float(f64::NAN),
            ("vec!", Lang::Rust) if self.eat("[") => Lit::List(self.items(b']', depth)?),
            (p, _) if py && is_string_prefix(p) && matches!(self.peek(), Some(b'"' | b'\'')) => {
                return self.python_string(p);
            }
            (p, Lang::Rust) if (p == "r" || p == "b" || p == "br") => {
                return self.rust_prefixed(p);
            }
            _ => return None,
        };
        Some(v)
    }

    fn items(&mut self, close: u8, depth: usize) -> Option<Vec<Lit>> {
        Some(self.items_comma(close, depth)?.0)
    }

    /// Items up to `close`, and whether a comma was seen (Python's `(1,)`).
    fn items_comma(&mut self, close: u8, depth: usize) -> Option<(Vec<Lit>, bool)> {
        let mut out = Vec::new();
        let mut comma = false;
        loop {
            self.space();
            if self.peek() == Some(close) {
                self.at += 1;
                return Some((out, comma));
            }
            out.push(self.value(depth + 1)?);
            self.space();
            match self.peek()? {
                b',' => {
                    self.at += 1;
                    comma = true;
                }
                c if c == close => {}
                _ => return None,
            }
        }
    }

    /// After `{`: a Python dict or set, a JavaScript object.
    fn braces(&mut self, depth: usize) -> Option<Lit> {
        self.space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Some(Lit::Map(Vec::new()));
        }
        let mut map = Vec::new();
        let mut set = Vec::new();
        loop {
            self.space();
            if self.peek() == Some(b'}') {
                self.at += 1;
                break;
            }
            let key = if self.lang == Lang::Js && self.peek().is_some_and(is_ident_start) {
                let start = self.at;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
                {
                    self.at += 1;
                }
                Lit::Str(String::from_utf8(self.s[start..self.at].to_vec()).ok()?)
            } else {
                self.value(depth + 1)?
            };
            if self.eat(":") {
                if !set.is_empty() {
                    return None;
                }
                let mut key = key;
                if self.lang == Lang::Js
                    && let Lit::Int(_) | Lit::Float(_) = key
                {
                    key = Lit::Str(js_number_key(&key)?);
                }
                map.push((key, self.value(depth + 1)?));
            } else if self.python() && map.is_empty() {
                set.push(key);
            } else {
                return None;
            }
            self.space();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {}
                _ => return None,
            }
        }
        Some(if set.is_empty() {
            Lit::Map(map)
        } else {
            Lit::Set(set)
        })
    }

    fn number(&mut self) -> Option<Lit> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
            || (self.at > start
                && matches!(self.peek(), Some(b'+' | b'-'))
                && matches!(self.s[self.at - 1], b'e' | b'E')
                && !is_hex(&self.s[start..self.at]))
        {
            self.at += 1;
        }
        let raw = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        let mut t = raw.replace('_', "");
        if self.lang == Lang::Rust {
            for suffix in RUST_SUFFIXES {
                if let Some(stripped) = t.strip_suffix(suffix)
                    && !stripped.is_empty()
                    && !(is_hex(stripped.as_bytes()) && suffix.starts_with('f'))
                {
                    t = stripped.to_owned();
                    if suffix.starts_with('f') {
                        return t.parse::<f64>().ok().map(Lit::Float);
                    }
                    break;
                }
            }
        }
        if self.lang == Lang::Js && t.ends_with('n') {
            // A BigInt literal: another type than a number.
            return None;
        }
        let radix = |prefix: &str, r: u32| {
            t.strip_prefix(prefix)
                .or_else(|| t.strip_prefix(&prefix.to_ascii_uppercase()))
                .and_then(|d| i128::from_str_radix(d, r).ok())
        };
        if let Some(i) = radix("0x", 16)
            .or_else(|| radix("0o", 8))
            .or_else(|| radix("0b", 2))
        {
            return Some(Lit::Int(i));
        }
        if t.bytes().all(|c| c.is_ascii_digit()) {
            // A leading zero reads as octal in Go and old JavaScript, and
            // is an error in Python: not a literal assay seals.
            if t.len() > 1 && t.starts_with('0') {
                return None;
            }
            return t.parse::<i128>().ok().map(Lit::Int);
        }
        if t.bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return t.parse::<f64>().ok().map(Lit::Float);
        }
        None
    }

    fn string(&mut self) -> Option<Lit> {
        match (self.lang, self.peek()?) {
            (Lang::Unittest | Lang::Pytest, _) => self.python_string(""),
            (Lang::Js, b'`') => None,
            (Lang::Js, q) => Some(Lit::Str(self.escaped(q, Escapes::Js)?)),
            (Lang::Go, b'`') => {
                self.at += 1;
                let end = self.s[self.at..].iter().position(|c| *c == b'`')? + self.at;
                let v = String::from_utf8(self.s[self.at..end].to_vec()).ok()?;
                self.at = end + 1;
                Some(Lit::Str(v.replace('\r', "")))
            }
            (Lang::Go, b'"') => Some(Lit::Str(self.escaped(b'"', Escapes::Go)?)),
            (Lang::Go, b'\'') => {
                let s = self.escaped(b'\'', Escapes::Go)?;
                let mut cs = s.chars();
                let c = cs.next()?;
                cs.next()
                    .is_none()
                    .then_some(Lit::Int(i128::from(u32::from(c))))
            }
            (Lang::Rust, b'"') => Some(Lit::Str(self.escaped(b'"', Escapes::Rust)?)),
            (Lang::Rust, b'\'') => {
                let s = self.escaped(b'\'', Escapes::Rust)?;
                let mut cs = s.chars();
                let c = cs.next()?;
                cs.next().is_none().then_some(Lit::Char(c))
            }
            _ => None,
        }
    }

    /// A Python string after its prefix (`r`, `b`, `rb`, `u`, any case; no
    /// f-strings): short or triple quoted; adjacent strings are not read.
    fn python_string(&mut self, prefix: &str) -> Option<Lit> {
        let p = prefix.to_ascii_lowercase();
        let (raw, bytes) = (p.contains('r'), p.contains('b'));
        let q = self.peek()?;
        let triple = self.s[self.at..].starts_with(&[q, q, q]);
        let body = if triple {
            self.at += 3;
            let end = find(&self.s[self.at..], &[q, q, q])? + self.at;
            let b = &self.s[self.at..end];
            self.at = end + 3;
            b
        } else {
            self.at += 1;
            let end = find(&self.s[self.at..], &[q])? + self.at;
            let b = &self.s[self.at..end];
            if b.contains(&b'\n') {
                return None;
            }
            self.at = end + 1;
            b
        };
        let text = std::str::from_utf8(body).ok()?;
        let v = if raw {
            text.as_bytes().to_vec()
        } else {
            unescape(text, Escapes::Python { bytes })?
        };
        if bytes {
            return Some(Lit::Bytes(v));
        }
        String::from_utf8(v).ok().map(Lit::Str)
    }

    /// A Rust `r"…"`, `r#"…"#`, `b"…"` or `br"…"` after its prefix.
    fn rust_prefixed(&mut self, prefix: &str) -> Option<Lit> {
        let raw = prefix.contains('r');
        let mut hashes = 0;
        while raw && self.peek() == Some(b'#') {
            hashes += 1;
            self.at += 1;
        }
        if self.peek() != Some(b'"') {
            return None;
        }
        let text = if raw {
            self.at += 1;
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = find(&self.s[self.at..], &close)? + self.at;
            let v = self.s[self.at..end].to_vec();
            self.at = end + close.len();
            v
        } else {
            self.escaped(b'"', Escapes::Rust)?.into_bytes()
        };
        if prefix.contains('b') {
            Some(Lit::List(
                text.into_iter().map(|b| Lit::Int(b.into())).collect(),
            ))
        } else {
            String::from_utf8(text).ok().map(Lit::Str)
        }
    }

    /// A quoted string with escapes, from its opening quote `q`.
    fn escaped(&mut self, q: u8, how: Escapes) -> Option<String> {
        self.at += 1;
        let end = find(&self.s[self.at..], &[q])? + self.at;
        let body = std::str::from_utf8(&self.s[self.at..end]).ok()?;
        if body.contains('\n') {
            return None;
        }
        self.at = end + 1;
        String::from_utf8(unescape(body, how)?).ok()
    }
}

#[derive(Clone, Copy)]
enum Escapes {
    Python { bytes: bool },
    Js,
    Go,
    Rust,
}

/// The first `close` in `s` that no backslash escapes (in a Python raw
/// string too, a backslash keeps a quote from closing it).
fn find(s: &[u8], close: &[u8]) -> Option<usize> {
    let mut k = 0;
    while k + close.len() <= s.len() {
        if s[k] == b'\\' {
            k += 2;
            continue;
        }
        if s[k..].starts_with(close) {
            return Some(k);
        }
        k += 1;
    }
    None
}

/// The bytes of an escaped string body; `None` for an escape this reader
/// does not know (the site stays unsealed).
fn unescape(body: &str, how: Escapes) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut it = body.chars().peekable();
    let push = |out: &mut Vec<u8>, c: char| {
        let mut buf = [0; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    };
    let hex = |it: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| -> Option<u32> {
        let s: String = (0..n).map_while(|_| it.next()).collect();
        (s.len() == n).then_some(())?;
        u32::from_str_radix(&s, 16).ok()
    };
    while let Some(c) = it.next() {
        if c != '\\' {
            push(&mut out, c);
            continue;
        }
        let e = it.next()?;
        match e {
            'n' => out.push(b'\n'),
            't' => out.push(b'\t'),
            'r' => out.push(b'\r'),
            '0' if !matches!(it.peek(), Some('0'..='7'))
                || matches!(how, Escapes::Rust | Escapes::Js) =>
            {
                out.push(0)
            }
            '\\' | '\'' | '"' => push(&mut out, e),
            '`' if matches!(how, Escapes::Js) => out.push(b'`'),
            'a' if !matches!(how, Escapes::Rust | Escapes::Js) => out.push(7),
            'b' if !matches!(how, Escapes::Rust) => out.push(8),
            'f' if !matches!(how, Escapes::Rust) => out.push(12),
            'v' if !matches!(how, Escapes::Rust) => out.push(11),
            'x' => {
                let v = hex(&mut it, 2)?;
                match how {
                    Escapes::Python { bytes: true } | Escapes::Go => out.push(v as u8),
                    Escapes::Rust if v > 0x7f => return None,
                    _ => push(&mut out, char::from_u32(v)?),
                }
            }
            'u' if matches!(how, Escapes::Rust)
                || matches!(how, Escapes::Js) && it.peek() == Some(&'{') =>
            {
                (it.next()? == '{').then_some(())?;
                let s: String = it.by_ref().take_while(|c| *c != '}').collect();
                push(
                    &mut out,
                    char::from_u32(u32::from_str_radix(&s.replace('_', ""), 16).ok()?)?,
                );
            }
            'u' if !matches!(how, Escapes::Python { bytes: true }) => {
                let v = hex(&mut it, 4)?;
                if (0xd800..0xdc00).contains(&v) && matches!(how, Escapes::Js) {
                    // A surrogate pair.
                    (it.next()? == '\\' && it.next()? == 'u').then_some(())?;
                    let lo = hex(&mut it, 4)?;
                    let c = 0x10000 + ((v - 0xd800) << 10) + (lo.checked_sub(0xdc00)?);
                    push(&mut out, char::from_u32(c)?);
                } else {
                    push(&mut out, char::from_u32(v)?);
                }
            }
            'U' if matches!(how, Escapes::Python { bytes: false } | Escapes::Go) => {
                push(&mut out, char::from_u32(hex(&mut it, 8)?)?)
            }
            '0'..='7' if matches!(how, Escapes::Python { .. } | Escapes::Go) => {
                let mut v = e.to_digit(8)?;
                for _ in 0..2 {
                    match it.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            it.next();
                        }
                        None => break,
                    }
                }
                match how {
                    Escapes::Python { bytes: false } => push(&mut out, char::from_u32(v)?),
                    _ => out.push(u8::try_from(v).ok()?),
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

fn is_string_prefix(p: &str) -> bool {
    matches!(
        p.to_ascii_lowercase().as_str(),
        "r" | "b" | "u" | "rb" | "br"
    )
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$'
}

fn is_hex(s: &[u8]) -> bool {
    s.len() > 2 && s[0] == b'0' && matches!(s[1], b'x' | b'X')
}

/// A JavaScript object's numeric key as the property name it becomes.
fn js_number_key(key: &Lit) -> Option<String> {
    match key {
        Lit::Int(i) => Some(i.to_string()),
        Lit::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

const RUST_SUFFIXES: &[&str] = &[
    "i128", "u128", "isize", "usize", "i64", "u64", "i32", "u32", "i16", "u16", "f32", "f64", "i8",
    "u8",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn py(s: &str) -> Option<Lit> {
        Lit::parse(Lang::Unittest, s)
    }

    #[test]
    fn python_literals_read_as_repr_writes_them() {
        assert_eq!(py("2"), Some(Lit::Int(2)));
        assert_eq!(py(" -0x1F "), Some(Lit::Int(-31)));
        assert_eq!(py("1_000"), Some(Lit::Int(1000)));
        assert_eq!(py("2.5e3"), Some(Lit::Float(2500.0)));
        assert_eq!(py("'a\\'b\\n'"), Some(Lit::Str("a'b\n".into())));
        assert_eq!(py("r'a\\d'"), Some(Lit::Str("a\\d".into())));
        assert_eq!(py("b'\\xff'"), Some(Lit::Bytes(vec![255])));
        assert_eq!(py("'\\u00e9\\x00'"), Some(Lit::Str("é\0".into())));
        assert_eq!(py("(1,)"), Some(Lit::Tuple(vec![Lit::Int(1)])));
        assert_eq!(py("(1)"), Some(Lit::Int(1)));
        assert_eq!(py("()"), Some(Lit::Tuple(vec![])));
        assert_eq!(
            py("{'a': [1, None], 'b': (True, -2.0)}"),
            Some(Lit::Map(vec![
                (
                    Lit::Str("a".into()),
                    Lit::List(vec![Lit::Int(1), Lit::Null])
                ),
                (
                    Lit::Str("b".into()),
                    Lit::Tuple(vec![Lit::Bool(true), Lit::Float(-2.0)])
                ),
            ]))
        );
        assert_eq!(py("{1, 2}"), Some(Lit::Set(vec![Lit::Int(1), Lit::Int(2)])));
        assert_eq!(py("set()"), Some(Lit::Set(vec![])));
        assert!(matches!(py("inf"), Some(Lit::Float(f)) if f.is_infinite()));
        for not in [
            "x", "f(1)", "1 + 2", "f'{x}'", "'a' 'b'", "[1, x]", "01", "1j", "",
        ] {
            assert_eq!(py(not), None, "{not}");
        }
    }

    #[test]
    fn python_equality_is_pythons() {
        let eq = |a: &str, b: &str| py(a).unwrap().equals(&py(b).unwrap(), Lang::Pytest);
        assert!(eq("2", "2.0"));
        assert!(eq("1", "True"));
        assert!(eq("0", "False"));
        assert!(!eq("2", "'2'"));
        assert!(!eq("[1, 2]", "(1, 2)"));
        assert!(eq("{'a': 1, 'b': 2}", "{'b': 2, 'a': 1}"));
        assert!(eq("{1, 2}", "{2, 1}"));
        assert!(!eq("{1, 2}", "{1, 3}"));
        assert!(!eq("nan", "nan"));
        assert!(eq("[1, [2.0, 'x']]", "[1, [2, 'x']]"));
        assert!(!eq("None", "0"));
        assert!(!eq("b'a'", "'a'"));
    }

    #[test]
    fn javascript_literals_and_strict_equality() {
        let js = |s: &str| Lit::parse(Lang::Js, s).unwrap();
        let eq = |a: &str, b: &str| js(a).equals(&js(b), Lang::Js);
        assert!(eq("3", "3.0"));
        assert!(!eq("1", "true"));
        assert!(!eq("0", "-0"));
        assert!(eq("NaN", "NaN"));
        assert!(eq(
            "{a: 1, 'b': [null, \"x\"]}",
            "{\"b\": [null, \"x\"], \"a\": 1}"
        ));
        assert!(!eq("null", "undefined"));
        assert!(!eq("'1'", "1"));
        assert_eq!(js("'\\u{1F600}'"), Lit::Str("😀".into()));
        assert_eq!(js("\"\\ud83d\\ude00\""), Lit::Str("😀".into()));
        assert_eq!(Lit::parse(Lang::Js, "`x`"), None);
        assert_eq!(Lit::parse(Lang::Js, "10n"), None);
        assert_eq!(js("1e+21"), Lit::Float(1e21));
    }

    #[test]
    fn go_and_rust_literals() {
        let go = |s: &str| Lit::parse(Lang::Go, s).unwrap();
        assert_eq!(go("\"a\\tb\""), Lit::Str("a\tb".into()));
        assert_eq!(go("`a\\tb`"), Lit::Str("a\\tb".into()));
        assert_eq!(go("'a'"), Lit::Int(97));
        assert!(go("3").equals(&go("3.0"), Lang::Go));
        assert!(!go("true").equals(&go("1"), Lang::Go));
        let rs = |s: &str| Lit::parse(Lang::Rust, s).unwrap();
        assert_eq!(rs("3u8"), Lit::Int(3));
        assert_eq!(rs("2.5f32"), Lit::Float(2.5));
        assert_eq!(rs("0xffu8"), Lit::Int(255));
        assert_eq!(rs("'\\u{e9}'"), Lit::Char('é'));
        assert_eq!(rs("r#\"a\"b\"#"), Lit::Str("a\"b".into()));
        assert_eq!(rs("vec![1, 2]"), Lit::List(vec![Lit::Int(1), Lit::Int(2)]));
        assert!(rs("&[1, 2]").equals(&rs("[1, 2]"), Lang::Rust));
        assert!(rs("(1, \"a\")").equals(&rs("(1, \"a\")"), Lang::Rust));
        assert_eq!(Lit::parse(Lang::Rust, "Foo::new()"), None);
    }
}
