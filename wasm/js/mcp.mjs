// The Node ESM entry of mandate-sdk/mcp: the CommonJS build re-exported, so
// that `import` and `require` share one instance of the wasm module and of
// the client's error classes. Every name the CommonJS build exports is listed
// here.
import mcp from "../pkg/node/mcp.js";

export const {
  META_AAR_ID,
  META_APPROVAL_URL,
  META_DELEGATED_TOKEN,
  META_ERROR,
  META_PROVENANCE_REF,
  META_RESULT_HASH,
  authInfoOf,
  mandateAuth,
  mandateAuthOf,
  mandateTokenVerifier,
  mandateTool,
  protectedResourceMetadata,
  protectedResourceMetadataHandler,
  protectedResourceMetadataUrl,
  toolResultHash,
} = mcp;

export default mcp;
