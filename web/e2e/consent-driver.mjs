// A person at Mandate's consent page, for tests outside Node (the Python
// SDK's OAuth client, python/tests/test_oauth_sdk.py): launches Chromium
// (CHROMIUM, default /usr/bin/chromium), opens the authorization URL, signs
// in with the API key, names the actions and resources to grant when given
// (a client that asks for no scope leaves them to the person), approves,
// and prints the URL
// the browser was sent back to (the client's redirect_uri with `code`,
// `state` and `iss`).
//
//   node e2e/consent-driver.mjs <authorization-url> <api-key> [<actions> <resources>]

import { approveConsent, launchBrowser } from "./harness.mjs";

const [authorizationUrl, key, actions, resources] = process.argv.slice(2);
if (!authorizationUrl || !key) {
  process.stderr.write("usage: node e2e/consent-driver.mjs <authorization-url> <api-key> [<actions> <resources>]\n");
  process.exit(2);
}
const browser = await launchBrowser();
try {
  process.stdout.write(`${await approveConsent(browser, authorizationUrl, key, { actions, resources })}\n`);
} finally {
  await browser.close();
}
