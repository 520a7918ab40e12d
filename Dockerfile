# The temporal-compactor worker image (docker-compose.yml builds it as the `worker` service).
# Debian (glibc), not Alpine: the Temporal SDK's native core bridge ships glibc binaries.

FROM node:20.20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# The workflow bundle is prebuilt here, so a worker starts without webpack. Pruned, the image keeps
# the required peers (@temporalio/*) and leaves out the optional ones (S3, OpenTelemetry): add them
# with `npm install` here to use COMPACTOR_PAYLOAD_STORE=s3://... or COMPACTOR_TRACING.
RUN npm run build && node dist/cli/main.js bundle --out dist/workflow-bundle.js && npm prune --omit=dev

FROM node:20.20-bookworm-slim
ENV NODE_ENV=production
ENV COMPACTOR_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The worker reads its settings from the environment (src/config.ts, docs/configuration.md).
USER node
CMD ["node", "dist/worker/create-worker.js"]
