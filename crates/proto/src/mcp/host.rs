//! The server side of the protocol, as `rivumi-mcp serve` speaks it to
//! its host: which era a host speaks, the answers to `initialize` and
//! `server/discover`, the 2026-07-28 result envelope and `input_required`
//! results, the names the host sees (`<server>__<tool>`), paging of the
//! gateway's own lists, and the approval form. Pure: values in, values
//! out.

use serde_json::{Map, Value, json};

use super::{Capabilities, Version, meta, method};
use crate::term;

/// The protocol revisions a host may negotiate in `initialize`, newest
/// first (2024-11-05 too: some hosts still offer it).
pub const HANDSHAKE: [Version; 4] = [
    Version::V2025_11_25,
    Version::V2025_06_18,
    Version::V2025_03_26,
    Version::V2024_11_05,
];

/// The revision answered to a host's `initialize`: the one it asked for
/// when spoken here, else the newest of the handshake era (the host then
/// decides whether it can speak it).
pub fn negotiate(params: &Value) -> Version {
    params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .and_then(Version::parse)
        .filter(|v| HANDSHAKE.contains(v))
        .unwrap_or(Version::LATEST_HANDSHAKE)
}

/// What a request's `_meta` says of its era: `None` without a protocol
/// version there (a handshake-era request), `Some(Ok)` for 2026-07-28,
/// `Some(Err(version))` for a version this server does not speak that way.
pub fn modern_version(params: &Value) -> Option<Result<(), String>> {
    let v = params.get("_meta")?.get(meta::PROTOCOL_VERSION)?;
    Some(match v.as_str() {
        Some(s) if s == Version::MODERN.as_str() => Ok(()),
        Some(s) => Err(term::clip(&term::line(s), 40).into_owned()),
        None => Err(v.to_string()),
    })
}

/// Every version this server speaks, for `supportedVersions` and the
/// data of `-32022`.
pub fn supported() -> Vec<&'static str> {
    std::iter::once(Version::MODERN)
        .chain(HANDSHAKE)
        .map(Version::as_str)
        .collect()
}

/// The `-32022` error data: what this server supports.
pub fn unsupported_data() -> Value {
    json!({"supported": supported()})
}

/// The capabilities a host declared: `initialize`'s `capabilities`, or a
/// 2026-07-28 request's `_meta` client capabilities.
pub fn host_capabilities(caps: Option<&Value>) -> Capabilities {
    let Some(c) = caps.filter(|c| c.is_object()) else {
        return Capabilities::default();
    };
    let e = c.get("elicitation").filter(|e| e.is_object());
    // An `elicitation` object without modes means form (2025-06-18).
    let form =
        e.is_some_and(|e| e.get("form").is_some() || e.get("url").is_none());
    Capabilities {
        elicitation_form: form,
        elicitation_url: e.is_some_and(|e| e.get("url").is_some()),
        sampling: c.get("sampling").is_some_and(Value::is_object),
        roots: c.get("roots").is_some_and(Value::is_object),
    }
}

/// The capabilities of a 2026-07-28 request, from its `_meta`.
pub fn modern_capabilities(params: &Value) -> Capabilities {
    host_capabilities(
        params.get("_meta").and_then(|m| m.get(meta::CLIENT_CAPABILITIES)),
    )
}

/// The answer to `initialize`.
pub fn initialize_result(
    version: Version,
    capabilities: Value,
    info: Value,
    instructions: Option<&str>,
) -> Value {
    let mut r = json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities,
        "serverInfo": info,
    });
    if let Some(i) = instructions {
        r["instructions"] = json!(i);
    }
    r
}

/// The answer to `server/discover`.
pub fn discover_result(
    capabilities: Value,
    info: &Value,
    instructions: Option<&str>,
) -> Value {
    let mut r = json!({
        "supportedVersions": supported(),
        "capabilities": capabilities,
    });
    if let Some(i) = instructions {
        r["instructions"] = json!(i);
    }
    modern_result(&mut r, info, method::SERVER_DISCOVER);
    r
}

/// Whether a method's 2026-07-28 result carries cache directives
/// (`ttlMs`, `cacheScope`; SEP-2549).
pub fn cacheable(m: &str) -> bool {
    matches!(
        m,
        method::SERVER_DISCOVER
            | method::TOOLS_LIST
            | method::PROMPTS_LIST
            | method::RESOURCES_LIST
            | method::RESOURCE_TEMPLATES_LIST
            | method::RESOURCES_READ
    )
}

/// Adds what every 2026-07-28 result of `m` carries: `resultType`
/// (complete unless set), the server's info in `_meta`, and for the
/// cacheable results, directives that cache nothing unless the result
/// already says otherwise (`ttlMs` 0, `cacheScope` private).
pub fn modern_result(result: &mut Value, info: &Value, m: &str) {
    let Value::Object(r) = result else { return };
    r.entry("resultType").or_insert_with(|| json!("complete"));
    if cacheable(m) && r.get("resultType") == Some(&json!("complete")) {
        r.entry("ttlMs").or_insert_with(|| json!(0));
        r.entry("cacheScope").or_insert_with(|| json!("private"));
    }
    let m = r.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = m {
        m.insert(meta::SERVER_INFO.into(), info.clone());
    }
}

/// A 2026-07-28 `input_required` result asking `requests` (key → request
/// object), with the opaque state the host echoes.
pub fn input_required(requests: Map<String, Value>, state: &str) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": state,
    })
}

/// The `inputResponses` and `requestState` of a retried request.
pub fn input_responses(
    params: &Value,
) -> (Option<&Map<String, Value>>, Option<&str>) {
    (
        params.get("inputResponses").and_then(Value::as_object),
        params.get("requestState").and_then(Value::as_str),
    )
}

/// The separator of the names a host sees: `<server>__<name>`.
pub const SEP: &str = "__";

/// The name a host sees for a qualified tool name (`mcp__s__t` → `s__t`):
/// within the 64 characters hosts allow, since the qualified name is.
pub fn exposed(qualified: &str) -> &str {
    qualified.strip_prefix("mcp__").unwrap_or(qualified)
}

/// Splits a name the host sent (`s__t`, or `mcp__s__t`) into server and
/// the rest. Server names cannot contain `__`.
pub fn split_exposed(name: &str) -> Option<(&str, &str)> {
    let name = name.strip_prefix("mcp__").unwrap_or(name);
    name.split_once(SEP).filter(|(s, r)| !s.is_empty() && !r.is_empty())
}

/// The prefix of a resource URI that two servers both list:
/// `rivumi+<server>:` before the URI as the server wrote it.
pub const URI_PREFIX: &str = "rivumi+";

/// A URI with its server recorded, for URIs that are not unique.
pub fn prefixed_uri(server: &str, uri: &str) -> String {
    format!("{URI_PREFIX}{server}:{uri}")
}

/// The server and URI of a prefixed URI.
pub fn split_prefixed_uri(uri: &str) -> Option<(&str, &str)> {
    uri.strip_prefix(URI_PREFIX)?.split_once(':')
}

/// One page of the gateway's own list: items from the offset the cursor
/// names, and the cursor of the next page. `Err` for a cursor this server
/// did not give.
pub fn page(
    items: &[Value],
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<Value>, Option<String>), String> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix("o")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0 && n < items.len())
            .ok_or_else(|| {
                format!("unknown cursor '{}'", term::clip(&term::line(c), 40))
            })?,
    };
    let end = (start + size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| format!("o{end}"));
    Ok((items[start..end].to_vec(), next))
}

/// The `elicitation/create` params that ask the host to approve a call:
/// a form with no fields, whose accept approves.
pub fn approval_form(
    server: &str,
    tool: &str,
    class: &str,
    summary: &str,
) -> Value {
    let message = format!(
        "Approve this call?\nserver: {}\ntool: {}\nclassification: {}\n\
         arguments: {}",
        term::line(server),
        term::line(tool),
        class,
        summary
    );
    json!({
        "message": message,
        "requestedSchema": {"type": "object", "properties": {}},
    })
}

/// Whether an elicitation result approves: `action` is `accept`.
pub fn approved(result: &Value) -> bool {
    result.get("action").and_then(Value::as_str) == Some("accept")
}

/// The arguments as the approval form shows them: one line, sanitised,
/// at most `max` bytes with a marker of what is cut.
pub fn summary(arguments: &Value, max: usize) -> String {
    let text = term::line(&arguments.to_string()).into_owned();
    term::clip(&text, max).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_answers_what_it_speaks() {
        let p = |v: &str| json!({"protocolVersion": v});
        assert_eq!(negotiate(&p("2025-06-18")), Version::V2025_06_18);
        assert_eq!(negotiate(&p("2024-11-05")), Version::V2024_11_05);
        assert_eq!(negotiate(&p("2026-07-28")), Version::V2025_11_25);
        assert_eq!(negotiate(&p("1999-01-01")), Version::V2025_11_25);
        assert_eq!(negotiate(&json!({})), Version::V2025_11_25);
    }

    #[test]
    fn the_era_of_a_request_is_in_its_meta() {
        assert_eq!(modern_version(&json!({})), None);
        let m = |v: Value| json!({"_meta": {meta::PROTOCOL_VERSION: v}});
        assert_eq!(modern_version(&m(json!("2026-07-28"))), Some(Ok(())));
        assert!(modern_version(&m(json!("2025-11-25"))).unwrap().is_err());
        assert!(modern_version(&m(json!(3))).unwrap().is_err());
        assert_eq!(supported()[0], "2026-07-28");
        assert_eq!(unsupported_data()["supported"][1], "2025-11-25");
    }

    #[test]
    fn host_capabilities_are_read_strictly() {
        let c = host_capabilities(Some(&json!({"elicitation": {},
            "sampling": {}, "roots": {"listChanged": true}})));
        assert!(c.elicitation_form && c.sampling && c.roots);
        assert!(!c.elicitation_url);
        let c = host_capabilities(Some(&json!({"elicitation": {"url": {}},
            "sampling": true})));
        assert!(!c.elicitation_form && c.elicitation_url && !c.sampling);
        assert_eq!(host_capabilities(None), Capabilities::default());
        let p = json!({"_meta": {meta::CLIENT_CAPABILITIES:
            {"elicitation": {"form": {}}}}});
        assert!(modern_capabilities(&p).elicitation_form);
    }

    #[test]
    fn results_carry_the_modern_envelope() {
        let info = json!({"name": "g", "version": "1"});
        let d = discover_result(json!({"tools": {}}), &info, Some("hi"));
        assert_eq!(d["supportedVersions"][0], "2026-07-28");
        assert_eq!(d["resultType"], "complete");
        assert_eq!(d["_meta"][meta::SERVER_INFO]["name"], "g");
        assert_eq!(d["instructions"], "hi");
        assert_eq!(d["ttlMs"], 0);
        assert_eq!(d["cacheScope"], "private");
        let mut r = json!({"resultType": "input_required"});
        modern_result(&mut r, &info, method::RESOURCES_READ);
        assert_eq!(r["resultType"], "input_required");
        assert!(r.get("ttlMs").is_none());
        let mut l = json!({"tools": [], "ttlMs": 5});
        modern_result(&mut l, &info, method::TOOLS_LIST);
        assert_eq!(l["ttlMs"], 5);
        let mut c = json!({"content": []});
        modern_result(&mut c, &info, method::TOOLS_CALL);
        assert!(c.get("cacheScope").is_none());
        let i = initialize_result(Version::V2025_06_18, json!({}), info, None);
        assert_eq!(i["protocolVersion"], "2025-06-18");
        assert!(i.get("instructions").is_none());
        let mut q = Map::new();
        q.insert("k".into(), json!({"method": "m"}));
        let ir = input_required(q, "st");
        let p = json!({"inputResponses": {"k": {"action": "accept"}},
                       "requestState": "st"});
        let (resp, state) = input_responses(&p);
        assert_eq!(state, Some("st"));
        assert!(approved(&resp.unwrap()["k"]));
        assert_eq!(ir["inputRequests"]["k"]["method"], "m");
        assert!(!approved(&json!({"action": "decline"})));
    }

    #[test]
    fn names_and_uris_round_trip() {
        assert_eq!(exposed("mcp__a__b_c"), "a__b_c");
        assert_eq!(split_exposed("a__b__c"), Some(("a", "b__c")));
        assert_eq!(split_exposed("mcp__a__b"), Some(("a", "b")));
        assert_eq!(split_exposed("ab"), None);
        assert_eq!(split_exposed("__b"), None);
        let u = prefixed_uri("s", "file:///x");
        assert_eq!(u, "rivumi+s:file:///x");
        assert_eq!(split_prefixed_uri(&u), Some(("s", "file:///x")));
        assert_eq!(split_prefixed_uri("file:///x"), None);
    }

    #[test]
    fn pages_follow_their_cursors() {
        let items: Vec<Value> = (0..5).map(|i| json!(i)).collect();
        let (p, next) = page(&items, None, 2).unwrap();
        assert_eq!(p, vec![json!(0), json!(1)]);
        assert_eq!(next.as_deref(), Some("o2"));
        let (p, next) = page(&items, Some("o4"), 2).unwrap();
        assert_eq!(p, vec![json!(4)]);
        assert_eq!(next, None);
        assert!(page(&items, Some("o9"), 2).is_err());
        assert!(page(&items, Some("x"), 2).is_err());
        assert_eq!(page(&[], None, 2).unwrap(), (vec![], None));
    }

    #[test]
    fn the_approval_form_is_sanitised() {
        let f = approval_form("s", "t\u{1b}[2J", "execute", "{}");
        let m = f["message"].as_str().unwrap();
        assert!(m.contains("tool: t\\x1b[2J"), "{m}");
        assert_eq!(f["requestedSchema"]["properties"], json!({}));
        let s = summary(&json!({"a": "x".repeat(100)}), 20);
        assert!(s.len() < 60, "{s}");
    }
}
