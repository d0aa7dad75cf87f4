// The agent: a CRM assistant acting for a developer through the CRM's MCP
// server, with the stock MCP client (Client + StreamableHTTPClientTransport)
// and its VAT as the bearer token.
//
// 1. The developer's side (an API key) issues the assistant a token:
//    read the CRM, send from the outbox (each send approved by a reviewer
//    first), and delegate.
// 2. The assistant looks a contact up (`crm_lookup`).
// 3. It delegates a sub-agent, the mailer, a narrower token: `send` on
//    `mail:outbox` only, and only to addresses at example.com (an argument
//    rule; the approval requirement comes along).
// 4. The mailer cannot read the CRM (refused, and recorded), cannot send to
//    an address outside example.com (refused by the MCP server from the
//    token alone, before anything reaches Mandate), and sends the e-mail
//    (`send_email`) to the contact: the server asks for a reviewer's approval by
//    URL-mode elicitation; the agent shows the reviewer's page and waits.
//    With `autoApprove` (demo only), the developer's API key approves it,
//    standing in for the reviewer who would click Approve on that page. A
//    reviewer's no is an answer too: the agent says the e-mail was not sent.
// 5. It prints the workflow's page in the dashboard.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { MandateClient } from "mandate-sdk";
import { META_AAR_ID, META_ERROR } from "mandate-sdk/mcp";

/** The contact the demo writes to. */
const CONTACT_ID = "c-1001";

/** The agent ended early: a tool call did not go as the demo expects. */
export class AgentFailed extends Error {
  constructor(message) {
    super(message);
    this.name = "AgentFailed";
  }
}

/**
 * @typedef {object} AgentRun
 * @property {string} provenanceRef the workflow
 * @property {string} workflowUrl its page in the dashboard
 * @property {string} rootJti the assistant's token
 * @property {string} childJti the mailer's token
 * @property {string} lookupAarId the record of the lookup
 * @property {string} deniedAarId the record of the mailer's refused lookup
 * @property {string} outsideError why the mailer's e-mail to an address outside example.com was refused
 * @property {string} sendAarId the record of the send
 * @property {boolean} sent whether the reviewer approved and the e-mail went out
 * @property {string} approvalUrl the reviewer's page the server sent
 */

/**
 * Runs the demo against a Mandate server and the CRM's MCP server.
 *
 * @param {object} options
 * @param {string} options.mandateUrl the Mandate server's base URL
 * @param {string} options.apiKey an API key that may issue (and, with `autoApprove`, decide approvals)
 * @param {string} options.mcpUrl the MCP endpoint
 * @param {boolean} [options.autoApprove] DEMO ONLY: approve the send with the API key
 * @param {(line: string) => void} [options.log]
 * @returns {Promise<AgentRun>}
 */
export async function runAgent({ mandateUrl, apiKey, mcpUrl, autoApprove = false, log = console.log }) {
  // The developer's side holds the API key; the agents hold only their tokens.
  const developer = new MandateClient({ baseUrl: mandateUrl, apiKey });
  const agents = new MandateClient({ baseUrl: mandateUrl });

  const root = await developer.issueL1({
    developer_email: "dev@example.com",
    agent_id: "crm-assistant",
    resources: ["crm:*", "mail:outbox"],
    actions: ["read", "send", "delegate"],
    constraints: { max_actions: 20, require_approval: { actions: ["send"] } },
    ttl_seconds: 900,
  });
  log(`token     crm-assistant: read crm:*, send mail:outbox (a reviewer approves each send), delegate`);
  log(`workflow  ${root.provenance_ref}`);

  const assistant = await connect(mcpUrl, root.compact_jwt, "crm-assistant");
  let lookup;
  try {
    lookup = await callTool(assistant, "crm_lookup", { contact_id: CONTACT_ID });
  } finally {
    await assistant.close();
  }
  if (!lookup.ok) {
    throw new AgentFailed(`crm_lookup failed: ${lookup.text}`);
  }
  const contact = JSON.parse(lookup.text);
  log(`lookup    crm-assistant → crm_lookup ${CONTACT_ID}: ${contact.name} <${contact.email}> (${lookup.aarId})`);

  const child = await agents.as(root.compact_jwt).delegate({
    agent_id: "crm-mailer",
    resources: ["mail:outbox"],
    actions: ["send"],
    // The mailer may write only to addresses at example.com: every recipient's address must end so.
    constraints: { args: [{ actions: ["send"], pol: [["like", ".to", "*@example.com"]] }] },
    ttl_seconds: 600,
  });
  log(`delegate  crm-assistant → crm-mailer: send on mail:outbox only, to addresses at example.com (depth ${child.delegation_depth})`);

  let approvalUrl;
  const onApproval = async (url) => {
    approvalUrl = url;
    log(`approval  send_email waits for a reviewer: ${url}`);
    if (!autoApprove) {
      log("approval  open the page, approve, and the call goes on (it waits up to 5 minutes)");
      return;
    }
    // DEMO ONLY: the developer's API key decides, as the reviewer would on the page above.
    let approval;
    for await (const pending of developer.approvals({ status: "pending" })) {
      if (pending.provenance_ref === root.provenance_ref && agents.approvalUrl(pending.approval_id) === url) {
        approval = pending;
        break;
      }
    }
    if (approval === undefined) {
      throw new AgentFailed(`no pending approval of this workflow has the page ${url}`);
    }
    const decided = await developer.decide(approval.approval_id, {
      decision: "approve",
      note: "approved by the example's --auto-approve (demo only)",
    });
    log(`approval  ${decided.status} (--auto-approve, demo only: the API key stood in for the reviewer)`);
  };

  const mailer = await connect(mcpUrl, child.compact_jwt, "crm-mailer", onApproval);
  let denied;
  let outside;
  let sent;
  try {
    denied = await callTool(mailer, "crm_lookup", { contact_id: CONTACT_ID });
    if (denied.ok) {
      throw new AgentFailed("crm_lookup: the mailer's token does not allow reading, yet the call ran");
    }
    log(`refused   crm-mailer → crm_lookup: ${denied.error} (${denied.aarId})`);
    outside = await callTool(mailer, "send_email", {
      to: "ada@example.com.attacker.test",
      subject: "Your renewal",
      body: "Please confirm your bank details.",
    });
    if (outside.ok || outside.error === undefined) {
      throw new AgentFailed(`send_email outside example.com: the mailer's token does not allow it, yet: ${outside.text}`);
    }
    log(`refused   crm-mailer → send_email to ada@example.com.attacker.test: ${outside.error} (refused from the token, before Mandate)`);
    sent = await callTool(mailer, "send_email", {
      to: contact.email,
      subject: "Your renewal",
      body: `Dear ${contact.name}, your contract with us is due for renewal. Shall we talk this week?`,
    });
  } finally {
    await mailer.close();
  }
  if (sent.ok) {
    log(`send      crm-mailer → send_email: ${sent.text} (${sent.aarId})`);
  } else if (sent.error === "approval_denied" || sent.error === "approval_expired") {
    // A reviewer's no is an answer, not a failure: the e-mail is not sent, and the record says why.
    log(`not sent  crm-mailer → send_email: ${sent.error} (${sent.aarId})`);
  } else {
    throw new AgentFailed(`send_email failed: ${sent.text}`);
  }

  const workflowUrl = agents.workflowUrl(root.provenance_ref);
  log(`dashboard ${workflowUrl}`);
  return {
    provenanceRef: root.provenance_ref,
    workflowUrl,
    rootJti: root.jti,
    childJti: child.jti,
    lookupAarId: lookup.aarId,
    deniedAarId: denied.aarId,
    outsideError: outside.error,
    sendAarId: sent.aarId,
    sent: sent.ok,
    approvalUrl,
  };
}

/**
 * An MCP client connected with `token` as its bearer token. It declares
 * URL-mode elicitation: the server sends the reviewer's page that way, and
 * `onApproval` is given it before the client accepts.
 */
async function connect(mcpUrl, token, name, onApproval) {
  const client = new Client(
    { name, version: "0.1.0" },
    { capabilities: onApproval === undefined ? {} : { elicitation: { url: {} } } },
  );
  if (onApproval !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      if (request.params.mode !== "url") {
        return { action: "decline" };
      }
      await onApproval(request.params.url);
      return { action: "accept" };
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/**
 * @typedef {object} ToolOutcome
 * @property {boolean} ok false when the call ended in a tool error (a refusal by Mandate, or the tool's own)
 * @property {string} text the result's text
 * @property {string | undefined} aarId Mandate's record of the call
 * @property {string | undefined} error the refusal's reason code, when Mandate refused
 */

/**
 * Calls a tool.
 *
 * @returns {Promise<ToolOutcome>}
 */
async function callTool(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  const text = result.content?.find((part) => part.type === "text")?.text ?? "";
  const meta = result._meta ?? {};
  return { ok: result.isError !== true, text, aarId: meta[META_AAR_ID], error: meta[META_ERROR] };
}
