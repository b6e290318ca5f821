//! Named deadlines: every blocking wait in rivumi-mcp takes one.
//!
//! A deadline is a start instant, a limit and the name of what is being
//! waited for, so the error that fires says which wait it was and after
//! how long (`timed out after 30s waiting for initialize`). Waits compute
//! `remaining()` from the one start instant; nobody sleeps on a fresh
//! `Duration` of their own.

use std::time::{Duration, Instant};

use crate::error::{Error, Kind, Result};

#[derive(Clone, Debug)]
pub(crate) struct Deadline {
    what: String,
    start: Instant,
    limit: Duration,
}

impl Deadline {
    pub(crate) fn new(what: impl Into<String>, limit: Duration) -> Deadline {
        Deadline { what: what.into(), start: Instant::now(), limit }
    }

    /// Time left, or the timeout error when none is.
    pub(crate) fn remaining(&self) -> Result<Duration> {
        let left = self.limit.saturating_sub(self.start.elapsed());
        if left.is_zero() { Err(self.error()) } else { Ok(left) }
    }

    pub(crate) fn error(&self) -> Error {
        Error::new(
            Kind::Timeout,
            format!(
                "timed out after {} waiting for {}",
                seconds(self.limit),
                self.what
            ),
        )
    }
}

/// Formats a duration as seconds the way a person writes them: `30s`,
/// `0.5s`, `1.25s`.
pub(crate) fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        let s = format!("{:.3}", d.as_secs_f64());
        format!("{}s", s.trim_end_matches('0'))
    }
}

/// Parses a positive number of seconds (`30`, `0.5`) into a duration.
pub(crate) fn parse_seconds(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    to_duration(v).ok_or_else(|| {
        format!("'{s}' must be a positive number of seconds up to 1e6")
    })
}

/// A positive, finite number of seconds (at most a million) as a duration.
pub(crate) fn to_duration(v: f64) -> Option<Duration> {
    if v.is_finite() && v > 0.0 && v <= 1e6 {
        Some(Duration::from_secs_f64(v))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_seconds() {
        assert_eq!(seconds(Duration::from_secs(30)), "30s");
        assert_eq!(seconds(Duration::from_millis(500)), "0.5s");
        assert_eq!(seconds(Duration::from_millis(1250)), "1.25s");
    }

    #[test]
    fn parses_seconds() {
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("inf").is_err());
        assert!(parse_seconds("x").is_err());
    }

    #[test]
    fn expired_deadline_names_the_wait() {
        let d = Deadline::new("initialize", Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(5));
        let e = d.remaining().unwrap_err();
        assert_eq!(e.kind(), Kind::Timeout);
        assert_eq!(
            e.to_string(),
            "timed out after 0.001s waiting for initialize"
        );
    }
}
