# syntax=docker/dockerfile:1
# One image for every process of the system; the command picks the entry:
#   node gateway/dist/main.js                 (default: the HTTP gateway on PORT, every <SERVICE>_URL required)
#   node services/<name>/dist/main.js         (a service: gRPC + Connect on GRPC_PORT)
#   node system/dist/main.js                  (the whole system in one process, gateway on PORT)
# Each runs as `node --import @feeds/kit/otel <entry>`: the OpenTelemetry hook (docs/operating.md,
# Traces), a no-op unless OTEL_* asks for traces.
# The gateway serves the operator console's built files (console/dist) at /console.
# Build: docker build -t feeds:local .
# Node 24 (LTS); the code supports Node >= 20 (package.json engines): --build-arg NODE_IMAGE=...

ARG NODE_IMAGE=node:24-bookworm-slim

# The workspace manifests alone, so that install layers are reused until a dependency changes.
# A new workspace must be added here as well.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY proto/package.json proto/
COPY kit/package.json kit/
COPY sdk/contract/package.json sdk/contract/
COPY sdk/client/package.json sdk/client/
COPY sdk/node/package.json sdk/node/
COPY console/package.json console/
COPY services/tenancy/package.json services/tenancy/
COPY services/identity/package.json services/identity/
COPY services/feed/package.json services/feed/
COPY services/graph/package.json services/graph/
COPY services/engagement/package.json services/engagement/
COPY services/notification/package.json services/notification/
COPY services/catalog/package.json services/catalog/
COPY gateway/package.json gateway/
COPY system/package.json system/
COPY cli/package.json cli/
COPY test/package.json test/

# Compile: every workspace's dist/ (tsc -b from the root references). No install script is
# needed for that, so none runs.
FROM manifests AS build
# npm install, not npm ci: the lock lists buf's linux-x64 platform package only.
RUN npm install --ignore-scripts --no-audit --no-fund
COPY . .
RUN npx tsc -b
# The operator console (Vite, after tsc: it bundles @feeds/client's dist): console/dist, which
# the gateway serves at /console.
RUN node console/scripts/build.mjs

# Production dependencies only: no TypeScript, buf, eslint or vitest in the final image.
FROM manifests AS deps
RUN npm install --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
# argon2 is pinned to 0.44.0, whose prebuilt binary loads on every Node the project supports, 20
# included (0.45's needs Node-API 10); this proves it loads on the image's.
RUN node -e "require('argon2').hash('probe').then(() => console.log('argon2 ok'))"

FROM ${NODE_IMAGE} AS runtime
ARG BUILD_VERSION=dev
LABEL org.opencontainers.image.licenses="Apache-2.0"
# Containers must listen beyond loopback (the config's default HOST is 127.0.0.1).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    GRPC_PORT=50051 \
    BUILD_VERSION=${BUILD_VERSION}
WORKDIR /app
# Owned by root and only readable by the process user: the app cannot rewrite its own code.
COPY --from=deps /app ./
COPY --from=build /app/proto/dist proto/dist
COPY --from=build /app/kit/dist kit/dist
COPY --from=build /app/sdk/contract/dist sdk/contract/dist
COPY --from=build /app/sdk/node/dist sdk/node/dist
COPY --from=build /app/services/tenancy/dist services/tenancy/dist
COPY --from=build /app/services/identity/dist services/identity/dist
COPY --from=build /app/services/feed/dist services/feed/dist
COPY --from=build /app/services/graph/dist services/graph/dist
COPY --from=build /app/services/engagement/dist services/engagement/dist
COPY --from=build /app/services/notification/dist services/notification/dist
COPY --from=build /app/services/catalog/dist services/catalog/dist
COPY --from=build /app/gateway/dist gateway/dist
COPY --from=build /app/console/dist console/dist
COPY --from=build /app/system/dist system/dist
# Apache-2.0: the licence travels with the image.
COPY --from=build /app/LICENSE LICENSE
# The image's `node` user, by number so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 50051
CMD ["node", "--import", "@feeds/kit/otel", "gateway/dist/main.js"]
