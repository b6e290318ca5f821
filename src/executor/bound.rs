//! Bounding an observation: a result is cut to `--max-output` bytes of
//! JSON before it is printed, with the cut said out loud.

use serde_json::{Value, json};

use crate::error::{Error, Kind, Result};
use crate::msg;

/// The default cap on what one observation prints.
pub(crate) const DEFAULT_MAX_OUTPUT: usize = 1 << 20;

/// A result, bounded for printing.
#[derive(Debug)]
pub(crate) struct Observation {
    pub(crate) result: Value,
    pub(crate) truncated: bool,
    pub(crate) original_bytes: usize,
    /// The result as the server sent it, kept when it was cut: `--save`
    /// writes whole files whatever `--max-output` says, since the cap is
    /// on what is printed.
    whole: Option<Value>,
    /// Only binary payloads were cut: with `--save`, which writes them
    /// whole, nothing printed is missing.
    binary_only: bool,
}

impl Observation {
    /// The result before the cut (the bounded one when nothing was cut).
    pub(crate) fn whole(&self) -> &Value {
        self.whole.as_ref().unwrap_or(&self.result)
    }

    /// After the bounded output is printed: an error of its own kind
    /// (exit 8) when `--max-output` cut it, so that a script never takes
    /// a part for the whole. The message is the marker, on stderr, and
    /// stdout holds only the bytes kept. `saved`: binary content went to
    /// files whole (`--save`), so a cut of binaries only lost nothing.
    pub(crate) fn check_whole(&self, saved: bool) -> Result<()> {
        if !self.truncated || (saved && self.binary_only) {
            return Ok(());
        }
        Err(Error::new(
            Kind::Truncated,
            format!(
                "output truncated: the result was {} bytes, more than \
                 --max-output allows; use --max-output to see more",
                self.original_bytes
            ),
        ))
    }

    /// The result as `--json` prints it: with `truncated` and
    /// `original_bytes` when it was cut.
    pub(crate) fn json(&self) -> Value {
        let mut v = self.result.clone();
        if self.truncated
            && let Value::Object(m) = &mut v
        {
            m.insert("truncated".into(), json!(true));
            m.insert("original_bytes".into(), json!(self.original_bytes));
        }
        v
    }
}

/// Cuts a result to about `max` bytes of JSON: text is clipped in order,
/// binary payloads and structured content that no longer fit are dropped.
pub(crate) fn bound(result: Value, max: usize) -> Observation {
    let original_bytes =
        serde_json::to_vec(&result).map(|v| v.len()).unwrap_or(0);
    if original_bytes <= max {
        return Observation {
            result,
            truncated: false,
            original_bytes,
            whole: None,
            binary_only: false,
        };
    }
    let whole = result.clone();
    let mut result = result;
    let mut budget = max;
    // What was cut: text (or structured content), binary payloads.
    let (mut text_cut, mut binary_cut) = (false, false);
    let clip_str = |s: &mut String, budget: &mut usize| {
        let cut = s.len() > *budget;
        if cut {
            let mut end = *budget;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
        }
        *budget -= s.len();
        cut
    };
    for key in ["content", "contents", "messages"] {
        let Some(Value::Array(items)) = result.get_mut(key) else { continue };
        for item in items.iter_mut() {
            let target = match key {
                "messages" => item.get_mut("content"),
                _ => Some(item),
            };
            let Some(Value::Object(block)) = target else { continue };
            for field in ["text", "data", "blob"] {
                if let Some(Value::String(s)) = block.get_mut(field) {
                    if field == "text" {
                        text_cut |= clip_str(s, &mut budget);
                    } else if s.len() <= budget {
                        budget -= s.len();
                    } else {
                        s.clear();
                        block.insert("truncated".into(), json!(true));
                        binary_cut = true;
                        break;
                    }
                }
            }
            if let Some(Value::Object(res)) = block.get_mut("resource") {
                if let Some(Value::String(s)) = res.get_mut("text") {
                    text_cut |= clip_str(s, &mut budget);
                }
                if let Some(Value::String(s)) = res.get_mut("blob")
                    && s.len() > budget
                {
                    s.clear();
                    res.insert("truncated".into(), json!(true));
                    binary_cut = true;
                } else if let Some(Value::String(s)) = res.get("blob") {
                    budget -= s.len();
                }
            }
        }
    }
    if let Some(sc) = result.get("structuredContent") {
        let n = sc.to_string().len();
        if n > budget
            && let Value::Object(m) = &mut result
        {
            m.remove("structuredContent");
            text_cut = true;
        }
    }
    if !text_cut && !binary_cut {
        // Over the cap in JSON overhead only: nothing is missing.
        return Observation {
            result: whole,
            truncated: false,
            original_bytes,
            whole: None,
            binary_only: false,
        };
    }
    msg::debug(&format!("output cut to {max} of {original_bytes} bytes"));
    Observation {
        result,
        truncated: true,
        original_bytes,
        whole: Some(whole),
        binary_only: !text_cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_text_and_drops_what_does_not_fit() {
        let r = json!({"content": [
            {"type": "text", "text": "x".repeat(100)},
            {"type": "image", "data": "A".repeat(100), "mimeType": "image/png"},
        ], "structuredContent": {"k": "v".repeat(100)}});
        let o = bound(r.clone(), 50);
        assert!(o.truncated);
        assert_eq!(o.result["content"][0]["text"].as_str().unwrap().len(), 50);
        assert_eq!(o.result["content"][1]["data"], "");
        assert_eq!(o.result["content"][1]["truncated"], true);
        assert!(o.result.get("structuredContent").is_none());
        assert_eq!(o.json()["original_bytes"], json!(o.original_bytes));
        assert_eq!(o.whole(), &r);
        let e = o.check_whole(true).unwrap_err();
        assert_eq!(e.kind(), Kind::Truncated);
        assert!(e.to_string().starts_with("output truncated: the result was"));
        let small = bound(r, 1 << 20);
        assert!(!small.truncated);
        assert!(small.check_whole(false).is_ok());
        // Only an image cut: whole with --save.
        let img = json!({"content": [
            {"type": "image", "data": "A".repeat(100), "mimeType": "image/png"},
        ]});
        let o = bound(img, 60);
        assert!(o.truncated && o.check_whole(false).is_err());
        assert!(o.check_whole(true).is_ok());
        // Over the cap by JSON overhead only: nothing cut.
        let o = bound(json!({"content": [{"type": "text", "text": "x"}]}), 10);
        assert!(!o.truncated);
    }
}
