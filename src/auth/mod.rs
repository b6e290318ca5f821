//! OAuth for HTTP servers, as a library: the authorization-code flow with
//! PKCE S256 and `state` through a loopback callback (`flow`, `callback`,
//! `pkce`), client credentials, metadata discovery (RFC 8414, RFC 9728 and
//! the 2025-03-26 fallbacks, `discovery`), the token endpoint (`token`),
//! the credential file (`store`) and the one decision of what a request
//! carries in `Authorization` (`authorization`).
//!
//! Everything here is operator-configured: the `oauth` block of a server
//! names the client, or opts in to dynamic registration or a client
//! metadata document; refresh happens on `login --refresh`, or inline
//! only when the operator opted in (`"refresh": "auto"`, `--refresh`), and
//! step-up only when the operator enabled it. The device grant
//! (`device`) logs in where no browser can reach the loopback callback; a
//! credential command (`command`) supplies a token from the operator's
//! password manager. Tokens are sent only to the
//! URL they were obtained for. The commands that drive this library
//! (`login`, `logout`, `discover`, `status`) live in `cmd::auth`.

mod authorization;
pub(crate) mod callback;
pub(crate) mod command;
pub(crate) mod device;
pub(crate) mod discovery;
pub(crate) mod dpop;
pub(crate) mod flow;
pub(crate) mod jose;
pub(crate) mod keys;
pub(crate) mod machine;
pub(crate) mod pkce;
pub(crate) mod store;
pub(crate) mod token;

pub(crate) use authorization::Authorization;

use std::process::Stdio;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::urlcheck::Url;
use crate::{msg, spawn, term};

/// What a command may do inline about a server's authorization (the
/// operator's flags; the `oauth` block's own `step_up` and `refresh`
/// count too).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Inline {
    /// `--step-up`: log in when a server asks for (more) authorization.
    pub(crate) step_up: bool,
    /// `--refresh`: redeem the refresh token of an expired or refused
    /// token.
    pub(crate) refresh: bool,
}

/// The default time the login waits for the browser to come back.
pub(crate) const DEFAULT_CALLBACK_TIMEOUT: Duration = Duration::from_secs(300);

/// Variables a browser program needs besides the base set.
const BROWSER_ENV: &[&str] = &[
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    "BROWSER",
];

/// Opens `url` with a fixed argv (never a shell), after checking it is an
/// https (or loopback http) URL.
pub(crate) fn open_browser(
    url: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    let base = url.split('?').next().unwrap_or(url);
    let ok = Url::parse(base).is_ok() && !url.contains(['\n', '\r', ' ', '#']);
    if !ok {
        return Err(Error::server(
            "refusing to open the authorization URL: not an https (or \
             loopback http) URL",
        ));
    }
    let program = lookup("RIVUMI_MCP_BROWSER")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open".into()
            } else {
                "xdg-open".into()
            }
        });
    // Not in a group of ours nor registered: the browser is the user's.
    let env = spawn::base_env(lookup, BROWSER_ENV);
    let mut cmd = spawn::command(&program, &[url], &env);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    match cmd.spawn() {
        Ok(mut child) => {
            // Reaped in the background; the login does not wait for it.
            std::thread::spawn(move || child.wait());
            Ok(())
        }
        Err(e) => {
            msg::warn(&format!(
                "cannot start the browser '{}': {e}; open the URL yourself",
                term::line(&program)
            ));
            Ok(())
        }
    }
}
