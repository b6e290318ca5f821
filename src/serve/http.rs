//! The Streamable HTTP front (`--listen`): to be written.

use std::net::SocketAddr;

use super::gateway::Gateway;
use crate::cli::ServeOptions;
use crate::error::{Error, Result};

/// Parses `--listen`: a loopback address with a port; anything else is a
/// usage error.
pub(crate) fn parse_listen(s: &str) -> Result<SocketAddr> {
    let addr: SocketAddr = s.parse().map_err(|_| {
        Error::usage(format!(
            "--listen: '{}' is not ADDRESS:PORT (e.g. 127.0.0.1:8931)",
            crate::term::line(s)
        ))
    })?;
    if !addr.ip().is_loopback() {
        return Err(Error::usage(format!(
            "--listen: {} is not a loopback address; serve listens on \
             127.0.0.1 or [::1] only",
            addr.ip()
        )));
    }
    Ok(addr)
}

pub(crate) fn run(
    _gw: &Gateway<'_>,
    _addr: SocketAddr,
    _o: &ServeOptions,
) -> Result<()> {
    Err(Error::usage("--listen is not built yet"))
}
