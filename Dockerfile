# The temporal-compactor worker image (docker-compose.yml builds it as the `worker` service).
# Debian (glibc), not Alpine: the Temporal SDK's native core bridge ships glibc binaries.

FROM node:20.20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20.20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The worker reads its settings from the environment (src/config.ts, docs/configuration.md).
USER node
CMD ["node", "dist/worker/create-worker.js"]
