// Sandbox-safe: the `workflowsPath` target — every workflow a compactor worker runs.
export { compactConversation } from './compact-conversation.js';
export { agentRun } from './agent-run.js';
