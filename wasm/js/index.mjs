// The Node ESM entry of mandate-sdk: the CommonJS build re-exported, so that
// `import` and `require` share one instance of the wasm module. Every name
// the CommonJS build exports is listed here (a test checks).
import sdk from "../pkg/node/index.js";

export const {
  AgentClient,
  AgentKey,
  DEFAULT_MAX_RETRIES,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_TIMEOUT_MS,
  LogMonitor,
  MAX_STATUS_TTL_SECONDS,
  MIN_STATUS_TTL_SECONDS,
  MandateClient,
  MandateApprovalPending,
  MandateError,
  MandateRefusal,
  RemoteVerifier,
  STATUS_LIST_MEDIA_TYPE,
  Verifier,
  checkNarrowing,
  createRemoteVerifier,
  decodeTokenUnverified,
  delegatedGrant,
  evaluatePolicy,
  generateAgentKey,
  outputHash,
  parseLogLeaf,
  permits,
  reputation,
  sha256Ref,
  summarizeWorkflow,
  trustScores,
  verifyChain,
  verifyCheckpoint,
  verifyConsistency,
  verifyLogProof,
  verifyProof,
  verifyRecordProof,
  verifyStatusList,
  verifyToken,
  verifyTrustStatement,
  verifyWebhook,
  verifyWebhookPairs,
} = sdk;

export default sdk;
