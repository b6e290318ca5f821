//! What a running server offers, in one value: its name, protocol,
//! `serverInfo`, instructions, and the complete (or bound-cut) lists of
//! tools, resources, resource templates and prompts that were asked for.
//! `list` prints it, `lock` pins it and the executor's lock check compares
//! against it; only lists the server declares a capability for are asked.

use serde_json::{Value, json};

use crate::error::Result;
use crate::mcp;
use crate::session::{Listing, Session};

/// Which lists `list` (and the lock) asks a server for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Show {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

/// One server's answer.
#[derive(Debug)]
pub(crate) struct ServerListing {
    pub(crate) name: String,
    pub(crate) protocol: String,
    pub(crate) info: Value,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: Option<Listing>,
    pub(crate) resources: Option<Listing>,
    pub(crate) templates: Option<Listing>,
    pub(crate) prompts: Option<Listing>,
}

/// Lists what `show` asks for on a started session.
pub(crate) fn collect(s: &mut Session, show: Show) -> Result<ServerListing> {
    let caps = s.server.capabilities.clone();
    let has = |k: &str| caps.get(k).is_some();
    let mut l = ServerListing {
        name: s.name().to_string(),
        protocol: s.server.protocol.clone(),
        info: s.server.info.clone(),
        instructions: s.server.instructions.clone(),
        tools: None,
        resources: None,
        templates: None,
        prompts: None,
    };
    if show.tools {
        l.tools = Some(if has("tools") {
            s.list_all(mcp::List::Tools)?
        } else {
            Listing { complete: true, ..Listing::default() }
        });
    }
    if show.resources {
        let empty = Listing { complete: true, ..Listing::default() };
        if has("resources") {
            l.resources = Some(s.list_all(mcp::List::Resources)?);
            l.templates = Some(s.list_all(mcp::List::ResourceTemplates)?);
        } else {
            l.resources = Some(empty.clone());
            l.templates = Some(empty);
        }
    }
    if show.prompts {
        l.prompts = Some(if has("prompts") {
            s.list_all(mcp::List::Prompts)?
        } else {
            Listing { complete: true, ..Listing::default() }
        });
    }
    let count = |x: &Option<Listing>| x.as_ref().map(|x| x.items.len());
    crate::journal::event(
        "listed",
        json!({"server": l.name, "tools": count(&l.tools),
               "resources": count(&l.resources),
               "prompts": count(&l.prompts)}),
    );
    Ok(l)
}
