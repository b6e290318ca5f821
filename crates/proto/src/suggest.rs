//! "Did you mean …?": the closest of some candidates to a mistyped name.
//! Pure; used for commands, options, config keys, servers and tools.

/// The closest candidate within a small edit distance, for "did you mean".
pub fn suggest<'a>(
    input: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .map(|c| (edit_distance(input, c), c))
        .filter(|&(d, c)| d <= 2.max(c.len() / 4) && d < c.len())
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let c = ["list", "login", "logout", "call"];
        assert_eq!(suggest("lsit", c.iter().copied()), Some("list"));
        assert_eq!(suggest("logut", c.iter().copied()), Some("logout"));
        assert_eq!(suggest("zzzzzz", c.iter().copied()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "ab"), 2);
    }
}
