// Node only: the one function that builds a data converter from the configuration, so a client and
// a worker of one configuration always agree. src/config.ts depends on this module, not the reverse.
import type { DataConverter } from '@temporalio/common';
import { ExternalStorage } from '@temporalio/common';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { ChunkStoreDriver } from './chunk-store.js';
import { CODEC_PLAIN_BELOW, CompactorCodec, isUiPayload } from './codec.js';
import { FileBackend } from './file-backend.js';
import type { Keyring } from './keyring.js';
import type { ObjectBackend } from './object-backend.js';
import { S3Backend } from './s3-backend.js';
import { describePayloadStore, type PayloadStoreLocation } from './store-location.js';
import { assertSdkEncodesClaims } from '../peer-packages.js';
import { describedAs } from '../described.js';
import { redactUrls } from '../redact.js';

/** The fields of the same names of the configuration (`CompactorConfig`). */
export interface PayloadSettings {
  /** COMPACTOR_PAYLOAD_STORE; `undefined`: not configured (then `defaultStore`, else off). */
  payloadStore?: PayloadStoreLocation | undefined;
  /** COMPACTOR_PAYLOAD_THRESHOLD: payloads of at least this many bytes go to the store. */
  payloadThreshold: number;
  /** COMPACTOR_S3_ENDPOINT: an S3-compatible server for `s3://` stores; `undefined`: AWS S3. */
  s3Endpoint?: string | undefined;
  /** COMPACTOR_CODEC_KEY (and its id and retired keys); `undefined`: no encryption. */
  codecKeyring: Keyring | undefined;
}

export interface PayloadConverterOptions {
  /** The store when `COMPACTOR_PAYLOAD_STORE` is not set (the demo's file store). @default off */
  defaultStore?: PayloadStoreLocation;
  /** Extra S3 client settings (credentials, region) for `s3://` stores. */
  s3ClientConfig?: S3ClientConfig;
}

export interface ConfiguredPayloads {
  /** For `new Client({ dataConverter })`, `Worker.create({ dataConverter })`. Empty when everything is off. */
  dataConverter: DataConverter;
  codec: CompactorCodec | undefined;
  driver: ChunkStoreDriver | undefined;
  store: PayloadStoreLocation;
  /** One line for start-up logs, e.g. `payload store file:/data (payloads of 256 B and more), codec deflate + AES-256-GCM (key id k-1a2b3c4d)`. */
  describe: string;
}

function backendOf(
  store: PayloadStoreLocation,
  settings: PayloadSettings,
  options: PayloadConverterOptions,
): ObjectBackend | undefined {
  if (store.kind === 'off') return undefined;
  if (store.kind === 'file') return new FileBackend({ directory: store.directory });
  const { bucket, prefix } = store;
  return new S3Backend({ bucket, prefix, endpoint: settings.s3Endpoint, clientConfig: options.s3ClientConfig });
}

/**
 * With a store: External Storage with the chunk store (payloads of at least `payloadThreshold` bytes)
 * and the codec for the rest; with only a key, the codec for every payload; with neither, nothing.
 */
export function payloadConverterFromConfig(
  settings: PayloadSettings,
  options: PayloadConverterOptions = {},
): ConfiguredPayloads {
  const store = settings.payloadStore ?? options.defaultStore ?? { kind: 'off' };
  const keyring = settings.codecKeyring;
  const backend = backendOf(store, settings, options);
  const encryption =
    keyring === undefined
      ? 'no encryption'
      : `AES-256-GCM (key id ${keyring.current.id}${keyring.byId.size > 1 ? `, ${keyring.byId.size - 1} retired key${keyring.byId.size > 2 ? 's' : ''} for decoding` : ''})`;
  if (backend === undefined) {
    const codec = keyring === undefined ? undefined : new CompactorCodec({ keyring });
    return described(
      { dataConverter: codec === undefined ? {} : { payloadCodecs: [codec] }, codec, driver: undefined, store },
      codec === undefined
        ? 'payloads inline (no store, no codec)'
        : `payloads inline (no store), codec deflate + ${encryption}`,
    );
  }
  // A claim the SDK cannot encode fails every workflow task that stores a payload: refuse at start instead.
  assertSdkEncodesClaims('COMPACTOR_PAYLOAD_STORE');
  const driver = new ChunkStoreDriver({ backend, keyring });
  const codec = new CompactorCodec({ keyring, passThroughAtOrAbove: settings.payloadThreshold });
  // Without a key the codec leaves payloads under its floor alone; when the store takes everything
  // from there up (the default threshold), nothing is left for it to compress.
  const compresses = keyring !== undefined || settings.payloadThreshold > CODEC_PLAIN_BELOW;
  return described(
    {
      dataConverter: {
        payloadCodecs: [codec],
        externalStorage: new ExternalStorage({
          drivers: [driver],
          // A payload marked for the UI (the memo's compaction table) stays in history, where the UI reads it.
          driverSelector: (_context, payload) => (isUiPayload(payload) ? null : driver),
          payloadSizeThreshold: settings.payloadThreshold,
        }),
      },
      codec,
      driver,
      store,
    },
    `payload store ${describePayloadStore(store)}${store.kind === 's3' && settings.s3Endpoint !== undefined ? ` at ${redactUrls(settings.s3Endpoint)}` : ''} (payloads of ${settings.payloadThreshold} B and more${compresses ? '' : '; smaller ones stay inline, too small to compress'}), ${compresses ? 'codec deflate' : 'no compression'}${keyring === undefined ? ', no encryption' : ` + ${encryption}`}`,
  );
}

/** The pieces, with `describe`; the data converter remembers it too, for a worker's start line. */
function described(pieces: Omit<ConfiguredPayloads, 'describe'>, describe: string): ConfiguredPayloads {
  return { ...pieces, dataConverter: describedAs(pieces.dataConverter, describe), describe };
}
