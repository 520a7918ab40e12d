// Node (dev support, tests and benchmarks): a real S3-compatible server for the S3 backend's tests and the payload
// benchmark — moto's server (installed into .temporal/moto by scripts/s3-server.mjs on first use),
// on 127.0.0.1 and a free port, with a fresh bucket; stop() kills it and waits for it to exit.
//
//   const s3 = await startS3Server();
//   const backend = new S3Backend({ bucket: s3.bucket, prefix: 'test', client: s3.client() });
//   ...
//   await s3.stop();
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateBucketCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { resolveS3Server } from './s3-server.mjs';
import { freePort } from '../dev/dev-server.js';

export interface S3TestServer {
  /** `http://127.0.0.1:PORT` (what COMPACTOR_S3_ENDPOINT would be). */
  endpoint: string;
  bucket: string;
  /** Client settings for this server: endpoint, path style, region and moto's dummy credentials. */
  clientConfig: S3ClientConfig;
  /** Environment that points the configuration at this server (COMPACTOR_S3_ENDPOINT and AWS_*). */
  env: Record<string, string>;
  client(): S3Client;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;

/** Starts moto's S3 server (installing it on first use) and creates a bucket. */
export async function startS3Server({ bucket = 'compactor-test' }: { bucket?: string } = {}): Promise<S3TestServer> {
  const python = await resolveS3Server();
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawn(python, ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (text: string) => {
    output = (output + text).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const stopped = await Promise.race([exited.then(() => true), sleep(5_000, false)]);
      if (!stopped) {
        child.kill('SIGKILL');
        await exited;
      }
    }
  };
  const clientConfig: S3ClientConfig = {
    endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
  const client = (): S3Client => new S3Client(clientConfig);
  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    const admin = client();
    for (;;) {
      if (child.exitCode !== null) throw new Error(`moto's S3 server exited with code ${child.exitCode}: ${output}`);
      try {
        await admin.send(new CreateBucketCommand({ Bucket: bucket }));
        break;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(
            `moto's S3 server at ${endpoint} did not answer within ${READY_TIMEOUT_MS / 1000} s: ${String(error)}\n${output}`,
          );
        await sleep(200);
      }
    }
    admin.destroy();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    endpoint,
    bucket,
    clientConfig,
    env: {
      COMPACTOR_S3_ENDPOINT: endpoint,
      AWS_ACCESS_KEY_ID: 'testing',
      AWS_SECRET_ACCESS_KEY: 'testing',
      AWS_REGION: 'us-east-1',
    },
    client,
    stop,
  };
}
