//! What a message costs in memory once parsed, before it is parsed.
//!
//! A message within `--max-message` can still parse into far more memory
//! than its length: `{"a":0}` is 7 bytes on the wire and a map node of
//! some 640 bytes in a `serde_json::Value`. [`parsed_size`] estimates,
//! from the bytes alone and in one pass without allocating per value,
//! an upper bound of what serde_json builds for them, so that a message
//! whose tree would pass a budget is refused before it is built;
//! [`value_size`] is the same estimate of a tree already built (for what
//! is kept across messages, such as the pages of a list). The model is
//! deliberately generous (a map node per six members, a vector slot
//! twice over for growth, every string rounded up to a heap chunk).

use serde_json::Value;

/// One node of a `BTreeMap<String, Value>` (eleven keys and values and
/// the links), as the allocator hands it out.
const MAP_NODE: usize = 640;
/// Members per map node assumed (nodes split half-full at worst).
const PER_NODE: usize = 6;
/// One array element: a `Value` slot, twice over for growth.
const ARRAY_SLOT: usize = 64;
/// The deepest nesting scanned; serde_json refuses deeper (128) anyway.
const MAX_DEPTH: usize = 130;

/// The heap a string of `len` bytes takes (none when empty).
fn string(len: usize) -> usize {
    if len == 0 { 0 } else { len.div_ceil(16) * 16 + 16 }
}

/// The heap an object of `members` members takes (none when empty).
fn object(members: usize) -> usize {
    if members == 0 { 0 } else { MAP_NODE * (1 + members / PER_NODE) }
}

/// An upper bound of the memory, in bytes, that the JSON text `bytes`
/// takes once parsed into a [`Value`] (text that is not JSON gets a
/// number too; the parser refuses it anyway).
pub fn parsed_size(bytes: &[u8]) -> usize {
    // For each open container: whether it is an object, and its count.
    let mut stack: Vec<(bool, usize)> = Vec::new();
    let mut cost = 0usize;
    let mut expect_key = false;
    let mut i = 0;
    // A value starts: an array slot when inside an array.
    let start = |stack: &mut Vec<(bool, usize)>, cost: &mut usize| {
        if let Some((false, n)) = stack.last_mut() {
            *n += 1;
            *cost = cost.saturating_add(ARRAY_SLOT);
        }
    };
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let begin = i + 1;
                i = begin;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let len = i.min(bytes.len()) - begin;
                if !expect_key {
                    start(&mut stack, &mut cost);
                }
                expect_key = false;
                cost = cost.saturating_add(string(len));
            }
            b'{' | b'[' => {
                start(&mut stack, &mut cost);
                if stack.len() >= MAX_DEPTH {
                    return cost;
                }
                let is_object = bytes[i] == b'{';
                stack.push((is_object, 0));
                expect_key = is_object;
            }
            b'}' | b']' => {
                if let Some((true, members)) = stack.pop() {
                    cost = cost.saturating_add(object(members));
                }
                expect_key = false;
            }
            b':' => {
                if let Some((true, n)) = stack.last_mut() {
                    *n += 1;
                }
            }
            b',' => {
                expect_key = matches!(stack.last(), Some((true, _)));
            }
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => {
                // A number or a literal: no heap of its own.
                start(&mut stack, &mut cost);
                while i + 1 < bytes.len()
                    && !b",:]}\"[{ \t\r\n".contains(&bytes[i + 1])
                {
                    i += 1;
                }
            }
        }
        i += 1;
    }
    // What is still open when the text ends.
    for (is_object, n) in stack {
        if is_object {
            cost = cost.saturating_add(object(n));
        }
    }
    cost
}

/// The same estimate as [`parsed_size`], of a tree already built.
pub fn value_size(v: &Value) -> usize {
    match v {
        Value::String(s) => string(s.len()),
        Value::Array(a) => a.iter().fold(0usize, |c, e| {
            c.saturating_add(ARRAY_SLOT).saturating_add(value_size(e))
        }),
        Value::Object(m) => m.iter().fold(object(m.len()), |c, (k, e)| {
            c.saturating_add(string(k.len())).saturating_add(value_size(e))
        }),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_estimates_agree_and_bound_the_expansion() {
        for text in [
            r#"{"a":0}"#,
            r#"[{},{},{"type":"text","text":""},[1,2,"x"],"\"q\\"]"#,
            r#"{"k":{"k":{"k":[true,null,-1.5e3,"ü"]}},"s":"abc"}"#,
            "[]",
            "\"\"",
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parsed_size(text.as_bytes()), value_size(&v), "{text}");
        }
        // Many tiny blocks cost far more than their bytes.
        let block = r#"{"type":"text","text":""}"#;
        let many = format!("[{}]", vec![block; 1000].join(","));
        assert!(parsed_size(many.as_bytes()) > 25 * many.len());
        // A long string costs about its length.
        let long = format!("\"{}\"", "x".repeat(1 << 20));
        assert!(parsed_size(long.as_bytes()) < (1 << 20) + 64);
    }

    /// The next number of a small xorshift generator.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// A short string with escapes, non-ASCII and JSON punctuation.
    fn text(n: u64) -> String {
        let parts = [
            "",
            "a",
            "é\"\\\n",
            "\u{1f600}",
            ":,{}[]",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ];
        parts[(n % 6) as usize].repeat((n % 3) as usize + 1)
    }

    /// A random JSON value.
    fn random(state: &mut u64, depth: u32) -> Value {
        let pick = next(state) % if depth > 4 { 4 } else { 6 };
        match pick {
            0 => Value::Null,
            1 => Value::from(next(state) as i64),
            2 => Value::from(text(next(state))),
            3 => Value::from(-1.5e-3),
            4 => {
                let n = next(state) % 14;
                Value::Array(
                    (0..n).map(|_| random(state, depth + 1)).collect(),
                )
            }
            _ => {
                let n = next(state) % 14;
                let mut m = serde_json::Map::new();
                for _ in 0..n {
                    let k = text(next(state));
                    m.insert(k, random(state, depth + 1));
                }
                Value::Object(m)
            }
        }
    }

    #[test]
    fn the_estimate_before_parsing_never_falls_below_the_tree() {
        let mut state = 0x2545_f491_4f6c_dd1d;
        for _ in 0..2000 {
            let v = random(&mut state, 0);
            for text in
                [v.to_string(), serde_json::to_string_pretty(&v).unwrap()]
            {
                let parsed: Value = serde_json::from_str(&text).unwrap();
                let (before, built) =
                    (parsed_size(text.as_bytes()), value_size(&parsed));
                assert!(before >= built, "{before} < {built}: {text}");
            }
        }
    }

    #[test]
    fn text_that_is_not_json_still_ends() {
        for text in ["{", "[[[", "\"abc", "\"a\\", "}}]]", ",,::", "x"] {
            let _ = parsed_size(text.as_bytes());
        }
        let deep = "[".repeat(100_000);
        assert!(parsed_size(deep.as_bytes()) < 100_000 * ARRAY_SLOT);
    }
}
