// The packages installed beside this one: an optional peer a setting needs and that is missing is
// named, with the setting and the install line; the SDK's claims encode with the repository's install.
import { describe, expect, it } from 'vitest';
import {
  assertPeersInstalled,
  assertSdkEncodesClaims,
  MissingPeerError,
  ProtobufCopiesError,
  requirePeer,
} from '../src/peer-packages.js';

describe('optional peers', () => {
  it('a missing one is a MissingPeerError naming it, the setting and npm install with our range', () => {
    let caught: unknown;
    try {
      assertPeersInstalled(
        ['@temporal-compactor-test/not-installed', '@opentelemetry/api', '@aws-sdk/client-s3'],
        'COMPACTOR_TEST=on',
      );
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(MissingPeerError);
    expect(caught).toMatchObject({
      packages: ['@temporal-compactor-test/not-installed'],
      setting: 'COMPACTOR_TEST=on',
    });
    expect(caught).toMatchObject({
      message:
        'COMPACTOR_TEST=on needs @temporal-compactor-test/not-installed, not installed beside temporal-compactor: npm install @temporal-compactor-test/not-installed',
    });
    // An optional peer of ours is named with the range package.json gives it.
    expect(new MissingPeerError(['@aws-sdk/client-s3'], 'COMPACTOR_PAYLOAD_STORE=s3://b/p').message).toContain(
      "npm install '@aws-sdk/client-s3@^3.729.0'",
    );
  });

  it('an installed one loads (CommonJS, from where the package is installed)', () => {
    const core = requirePeer<{ ExportResultCode: { SUCCESS: number } }>(
      '@opentelemetry/core',
      'COMPACTOR_TRACING=console',
    );
    expect(core.ExportResultCode.SUCCESS).toBe(0);
  });
});

describe('the SDK and the payload store', () => {
  it('the repository’s install encodes and reads back a claim (its protobufjs is one copy)', () => {
    expect(() => assertSdkEncodesClaims('COMPACTOR_PAYLOAD_STORE')).not.toThrow();
    expect(new ProtobufCopiesError('COMPACTOR_PAYLOAD_STORE').message).toContain('npm install protobufjs@^8.8.1');
  });
});
