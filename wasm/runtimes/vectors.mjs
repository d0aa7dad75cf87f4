// The conformance vectors the verifier suite reads, as JSON modules: Node,
// Deno and Bun load them from tests/vectors/ (the files core's native tests
// read, not a copy), and esbuild bundles them into workerd's worker, which
// has no file system.
import dpop from "../../tests/vectors/dpop.json" with { type: "json" };
import log from "../../tests/vectors/log.json" with { type: "json" };
import reputation from "../../tests/vectors/reputation.json" with { type: "json" };
import scope from "../../tests/vectors/scope.json" with { type: "json" };
import status_list from "../../tests/vectors/status_list.json" with { type: "json" };
import tokens from "../../tests/vectors/tokens.json" with { type: "json" };
import webhooks from "../../tests/vectors/webhooks.json" with { type: "json" };

export default { dpop, log, reputation, scope, status_list, tokens, webhooks };
