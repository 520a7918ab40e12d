// Node only: which of our search attributes a namespace has, and registering the missing ones. A run
// must never depend on them: upserting one the namespace lacks fails every workflow task, forever.
import type { OperatorService } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import proto from '@temporalio/proto';
import { failureMessage } from '../shared/failures.js';
import { COMPACTOR_SEARCH_ATTRIBUTES } from '../shared/search-attributes.js';

/** The `temporal` CLI's names of the types (`--type Int`, `--search-attribute Name=Int`). */
export const CLI_TYPE_NAMES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

const { IndexedValueType } = proto.temporal.api.enums.v1;

function indexedValueType(type: SearchAttributeType): number {
  return IndexedValueType[`INDEXED_VALUE_TYPE_${type}`];
}

export function searchAttributeTypeName(indexed: number): SearchAttributeType | undefined {
  return (Object.keys(CLI_TYPE_NAMES) as SearchAttributeType[]).find((name) => indexedValueType(name) === indexed);
}

export interface HasOperatorService {
  operatorService: OperatorService;
}

export interface SearchAttributeStatus {
  /** Present with the right type: runs may upsert these. */
  present: string[];
  missing: string[];
  /** There with another type (`name: TYPE`): left alone, and not upserted. */
  conflicting: string[];
}

export async function searchAttributeStatus(
  connection: HasOperatorService,
  namespace: string,
  wanted: Record<string, SearchAttributeType> = COMPACTOR_SEARCH_ATTRIBUTES,
): Promise<SearchAttributeStatus> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const existing = new Map<string, number>(
    Object.entries(customAttributes ?? {}).map(([name, type]) => [name, Number(type)]),
  );
  const status: SearchAttributeStatus = { present: [], missing: [], conflicting: [] };
  for (const [name, type] of Object.entries(wanted)) {
    const have = existing.get(name);
    if (have === undefined) status.missing.push(name);
    else if (have !== indexedValueType(type))
      status.conflicting.push(`${name}: ${searchAttributeTypeName(have) ?? have}`);
    else status.present.push(name);
  }
  return status;
}

/** Adds the `missing` attributes of `wanted` through the operator API; throws what the server answered (e.g. PermissionDenied). */
export async function addSearchAttributes(
  connection: HasOperatorService,
  namespace: string,
  missing: readonly string[],
  wanted: Record<string, SearchAttributeType> = COMPACTOR_SEARCH_ATTRIBUTES,
): Promise<void> {
  if (missing.length === 0) return;
  const types = Object.entries(wanted).filter(([name]) => missing.includes(name));
  const searchAttributes = Object.fromEntries(types.map(([name, type]) => [name, indexedValueType(type)]));
  await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
}

export interface SearchAttributeSetup extends SearchAttributeStatus {
  registered: string[];
  /** Why the missing ones could not be registered. */
  error: string | undefined;
}

/**
 * Registers what the namespace lacks where the operator API allows it (not on Temporal Cloud, which has
 * its own API). Never throws for a refusal: the caller runs without them, and `warn` tells the operator once.
 */
export async function ensureSearchAttributesIfAllowed(
  connection: HasOperatorService,
  namespace: string,
  { register, warn }: { register: boolean; warn: (warning: string) => void },
): Promise<SearchAttributeSetup> {
  const setup = await registerMissing(connection, namespace, register);
  const warning = searchAttributeWarning(namespace, setup);
  if (warning !== undefined) warn(warning);
  return setup;
}

async function registerMissing(
  connection: HasOperatorService,
  namespace: string,
  register: boolean,
): Promise<SearchAttributeSetup> {
  let status: SearchAttributeStatus;
  try {
    status = await searchAttributeStatus(connection, namespace);
  } catch (error) {
    const missing = Object.keys(COMPACTOR_SEARCH_ATTRIBUTES);
    const reason = `listing them failed: ${failureMessage(error)}`;
    return { present: [], missing, conflicting: [], registered: [], error: reason };
  }
  const { present, missing, conflicting } = status;
  if (missing.length === 0) return { ...status, registered: [], error: undefined };
  if (!register) return { ...status, registered: [], error: 'registering is turned off for this worker' };
  try {
    await addSearchAttributes(connection, namespace, missing);
    return { present: [...present, ...missing], missing: [], conflicting, registered: missing, error: undefined };
  } catch (error) {
    return { ...status, registered: [], error: failureMessage(error) };
  }
}

/** What is not usable, why, and the command that fixes it. */
function searchAttributeWarning(
  namespace: string,
  setup: Pick<SearchAttributeSetup, 'missing' | 'conflicting' | 'error'>,
): string | undefined {
  if (setup.missing.length === 0 && setup.conflicting.length === 0) return undefined;
  const unregistered = setup.error === undefined ? '' : ` (could not register them: ${setup.error})`;
  const parts = [
    ...(setup.missing.length > 0 ? [`missing ${setup.missing.join(', ')}${unregistered}`] : []),
    ...(setup.conflicting.length > 0 ? [`registered with another type: ${setup.conflicting.join(', ')}`] : []),
  ];
  const commands = Object.entries(COMPACTOR_SEARCH_ATTRIBUTES)
    .filter(([name]) => setup.missing.includes(name))
    .map(
      ([name, type]) =>
        `temporal operator search-attribute create --namespace ${namespace} --name ${name} --type ${CLI_TYPE_NAMES[type]}`,
    )
    .join(' && ');
  return `WARNING: namespace "${namespace}" search attributes ${parts.join('; ')}. Agent runs go on without them (no filtering by CompactionCount, ContextTokens, CompactionFallbacks, ContextExhausted, CompactionPending)${commands === '' ? '' : `; to add them: ${commands}`}`;
}
