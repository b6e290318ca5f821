#!/usr/bin/env node
// The "browser" of the conformance client (RIVUMI_MCP_BROWSER): rivumi-mcp
// runs it with the authorization URL as its only argument. It GETs the URL
// without following redirects, then GETs the Location it was sent to (our
// loopback callback), as a person's browser would after consenting.
const url = process.argv[2];
(async () => {
  try {
    const r = await fetch(url, { redirect: "manual" });
    const next = r.headers.get("location");
    if (!next) {
      console.error(`browser.js: no redirect from the authorization endpoint (HTTP ${r.status})`);
      process.exit(1);
    }
    const cb = await fetch(next, { redirect: "manual" });
    await cb.text();
  } catch (e) {
    console.error(`browser.js: ${e}`);
    process.exit(1);
  }
})();
