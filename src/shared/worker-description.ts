// Sandbox-safe: what the `describeWorker` local activity answers, shared by the activity and the workflows.

/** What only the worker running a workflow knows, as the workflow learns it (recorded in history). */
export interface WorkerDescription {
  /** The worker's data converter stores large payloads externally (COMPACTOR_PAYLOAD_STORE or any ExternalStorage). */
  externalStorage: boolean;
  /** Our search attributes the namespace has with the right type: the only ones a run upserts. */
  searchAttributes: string[];
}

/** What a workflow assumes when the worker cannot describe itself (the local activity is not registered, or failed). */
export const UNDESCRIBED_WORKER: WorkerDescription = { externalStorage: false, searchAttributes: [] };
