//! Running the pre-tool hooks: each is an argv run without a shell, in
//! the sanitised base environment and its own process group, with the
//! request as JSON on stdin; its exit status and stdout decide.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{deadline, sys};

/// The default deadline of one hook.
pub(crate) const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a hook's stdout/stderr is read.
const HOOK_OUTPUT: u64 = 64 * 1024;

/// A hook's verdict.
#[derive(Debug)]
pub(super) struct Decision {
    pub(super) allow: bool,
    pub(super) how: String,
    pub(super) reason: String,
}

/// Runs one hook: its argv, no shell, the sanitised environment, the
/// request as JSON on stdin. Exit 0 allows unless it prints
/// `{"decision":"deny"}`; exit 2 denies with its stderr as the reason;
/// anything else (another exit, a crash, the deadline) denies.
pub(super) fn run_hook(
    argv: &[String],
    input: &Value,
    timeout: Duration,
) -> Decision {
    let deny =
        |how: String, reason: String| Decision { allow: false, how, reason };
    let env: Vec<(String, String)> = crate::transport::stdio::BASE_ENV
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    sys::unblock_signals_in_child(&mut cmd);
    let child = cmd.spawn();

    let mut child = match child {
        Ok(c) => c,
        Err(e) => return deny("could not start".into(), e.to_string()),
    };
    let pgid = child.id() as i32;
    sys::register_group(pgid);
    let bytes = input.to_string().into_bytes();
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            let _ = s.write_all(&bytes);
        }
    });
    let read = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = String::new();
            if let Some(r) = r {
                let _ = r.take(HOOK_OUTPUT).read_to_string(&mut out);
            }
            out
        })
    };
    let out =
        read(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err =
        read(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(2));
            }
            _ => break None,
        }
    };
    let Some(status) = status else {
        sys::kill_group(pgid, sys::SIGKILL);
        let _ = child.wait();
        sys::wait_group_gone(pgid, Duration::from_millis(500));
        sys::unregister_group(pgid);
        return deny(
            format!("timed out after {}", deadline::seconds(timeout)),
            String::new(),
        );
    };
    // The hook is done; whatever it left in its group goes too.
    sys::kill_group(pgid, sys::SIGKILL);
    sys::wait_group_gone(pgid, Duration::from_millis(500));
    sys::unregister_group(pgid);
    let _ = writer.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    match status.code() {
        Some(0) => {
            let v: Option<Value> = serde_json::from_str(stdout.trim()).ok();
            let decision = v
                .as_ref()
                .and_then(|v| v.get("decision"))
                .and_then(Value::as_str);
            if decision == Some("deny") {
                let reason = v
                    .as_ref()
                    .and_then(|v| v.get("reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                deny("decision deny".into(), reason)
            } else {
                Decision {
                    allow: true,
                    how: "exit 0".into(),
                    reason: String::new(),
                }
            }
        }
        Some(2) => deny("exit 2".into(), stderr.trim().to_string()),
        Some(c) => deny(
            format!("exit {c}, failing closed"),
            stderr.trim().to_string(),
        ),
        None => {
            deny("killed by a signal, failing closed".into(), String::new())
        }
    }
}

/// Splits a hook command line into an argv: whitespace separates words,
/// single and double quotes group them, backslash escapes the next
/// character. Nothing is expanded; no shell is involved.
pub(crate) fn split_command(
    s: &str,
) -> std::result::Result<Vec<String>, String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                cur.push(chars.next().ok_or("trailing backslash")?);
                in_word = true;
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("unterminated quote".to_string());
    }
    if in_word {
        out.push(cur);
    }
    if out.is_empty() {
        return Err("empty command".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_commands_without_a_shell() {
        assert_eq!(split_command("a b  c").unwrap(), ["a", "b", "c"]);
        assert_eq!(
            split_command(r#"sh -c 'echo $HOME; exit 2' "x y" z\ w"#).unwrap(),
            ["sh", "-c", "echo $HOME; exit 2", "x y", "z w"]
        );
        assert!(split_command("'open").is_err());
        assert!(split_command("  ").is_err());
    }
}
