// Node only: two calls of the Temporal server's AdminService, which the TypeScript SDK does not
// expose: DescribeCluster (the membership rings one frontend sees) and DescribeMutableState (which
// history shard, on which host, holds a workflow). The frontend serves AdminService on its public
// gRPC port.
//
// The messages are small, so they are encoded and decoded here by hand rather than by generating
// code from the server's internal protos. Field numbers come from the server module's
// proto/internal/temporal/server/api/adminservice/v1/request_response.proto and
// proto/internal/temporal/server/api/cluster/v1/message.proto (v1.30.4).
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';

const SERVICE = '/temporal.server.api.adminservice.v1.AdminService';

/** One membership ring (a Temporal service) as a frontend sees it. */
export interface MembershipRing {
  /** "frontend", "history", "matching" or "worker". */
  role: string;
  memberCount: number;
  /** The members' identities: their gRPC address, "127.0.0.1:PORT". */
  members: string[];
}

export interface ClusterDescription {
  serverVersion: string;
  clusterName: string;
  historyShardCount: number;
  /** The host that answered (its frontend identity). */
  currentHost: string;
  rings: MembershipRing[];
}

export interface MutableStateLocation {
  shardId: string;
  /** The history host that owns the shard: its gRPC address. */
  historyAddress: string;
}

// --- protobuf wire format: just what these messages need -------------------------------------

interface WireField {
  field: number;
  /** Varints as numbers (every varint here is small), length-delimited fields as bytes. */
  value: number | Uint8Array;
}

function encodeVarint(value: number): number[] {
  const bytes: number[] = [];
  let rest = value;
  while (rest > 0x7f) {
    bytes.push((rest & 0x7f) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return bytes;
}

function encodeBytesField(field: number, bytes: Uint8Array): number[] {
  return [...encodeVarint((field << 3) | 2), ...encodeVarint(bytes.length), ...bytes];
}

function encodeStringField(field: number, text: string): number[] {
  return encodeBytesField(field, new TextEncoder().encode(text));
}

function decodeFields(bytes: Uint8Array): WireField[] {
  const fields: WireField[] = [];
  let offset = 0;
  const varint = (): number => {
    let result = 0;
    let scale = 1;
    for (;;) {
      const byte = bytes[offset++];
      if (byte === undefined) throw new Error('truncated protobuf varint');
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) return result;
      scale *= 128;
    }
  };
  while (offset < bytes.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wireType = tag & 7;
    if (wireType === 0) fields.push({ field, value: varint() });
    else if (wireType === 2) {
      const length = varint();
      fields.push({ field, value: bytes.subarray(offset, offset + length) });
      offset += length;
    } else if (wireType === 1) offset += 8;
    else if (wireType === 5) offset += 4;
    else throw new Error(`unsupported protobuf wire type ${wireType}`);
  }
  return fields;
}

const text = (value: number | Uint8Array): string => (typeof value === 'number' ? '' : new TextDecoder().decode(value));
const bytesOf = (value: number | Uint8Array): Uint8Array => (typeof value === 'number' ? new Uint8Array() : value);

function firstString(fields: WireField[], field: number): string {
  const found = fields.find((entry) => entry.field === field);
  return found === undefined ? '' : text(found.value);
}

function parseRing(bytes: Uint8Array): MembershipRing {
  const fields = decodeFields(bytes);
  const count = fields.find((entry) => entry.field === 2)?.value;
  return {
    role: firstString(fields, 1),
    memberCount: typeof count === 'number' ? count : 0,
    members: fields
      .filter((entry) => entry.field === 3)
      .map((entry) => firstString(decodeFields(bytesOf(entry.value)), 1)),
  };
}

function parseDescribeCluster(bytes: Uint8Array): ClusterDescription {
  const fields = decodeFields(bytes);
  const membership = decodeFields(bytesOf(fields.find((entry) => entry.field === 3)?.value ?? new Uint8Array()));
  const shards = fields.find((entry) => entry.field === 6)?.value;
  return {
    serverVersion: firstString(fields, 2),
    clusterName: firstString(fields, 5),
    historyShardCount: typeof shards === 'number' ? shards : 0,
    currentHost: firstString(
      decodeFields(bytesOf(membership.find((entry) => entry.field === 1)?.value ?? new Uint8Array())),
      1,
    ),
    rings: membership.filter((entry) => entry.field === 3).map((entry) => parseRing(bytesOf(entry.value))),
  };
}

// --- calls --------------------------------------------------------------------------------------

function call(address: string, method: string, request: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
  const client = new Client(address, credentials.createInsecure());
  return new Promise<Uint8Array>((resolve, reject) => {
    client.makeUnaryRequest(
      `${SERVICE}/${method}`,
      (message: Uint8Array) => Buffer.from(message),
      (buffer: Buffer) => new Uint8Array(buffer),
      request,
      new Metadata(),
      { deadline: Date.now() + timeoutMs },
      (error: ServiceError | null, response?: Uint8Array) => {
        if (error) reject(new Error(`AdminService.${method} at ${address}: ${error.message}`));
        else resolve(response ?? new Uint8Array());
      },
    );
  }).finally(() => client.close());
}

/** The cluster as the frontend at `address` sees it: version, shard count and membership rings. */
export async function describeCluster(address: string, timeoutMs = 5_000): Promise<ClusterDescription> {
  return parseDescribeCluster(await call(address, 'DescribeCluster', new Uint8Array(), timeoutMs));
}

/** Which history shard and host hold `workflowId`'s current run (or `runId`). */
export async function describeMutableState(
  address: string,
  request: { namespace: string; workflowId: string; runId?: string },
  timeoutMs = 5_000,
): Promise<MutableStateLocation> {
  const execution = [
    ...encodeStringField(1, request.workflowId),
    ...(request.runId ? encodeStringField(2, request.runId) : []),
  ];
  const body = new Uint8Array([
    ...encodeStringField(1, request.namespace),
    ...encodeBytesField(2, new Uint8Array(execution)),
  ]);
  const fields = decodeFields(await call(address, 'DescribeMutableState', body, timeoutMs));
  return { shardId: firstString(fields, 1), historyAddress: firstString(fields, 2) };
}
