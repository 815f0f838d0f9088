# syntax=docker/dockerfile:1
# Build stage: compile TypeScript to JavaScript (Node 24 could strip types at run time, but a
# compiled image starts faster and carries no dev dependencies).
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The workspaces' manifests, so npm ci finds every package the lock names (the server imports none).
COPY packages/messenger-client/package.json ./packages/messenger-client/
# patches/ is applied to node_modules by the postinstall script (patch-package).
COPY patches ./patches
RUN npm ci --omit=optional
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json

# Runtime stage: production dependencies only (no embedded PostgreSQL binaries: set DATABASE_URL), non-root user.
FROM node:24-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/messenger-client/package.json ./packages/messenger-client/
COPY patches ./patches
RUN npm ci --omit=dev --omit=optional && npm cache clean --force
COPY --from=build /app/dist ./dist
# The ops console's page, script and style (served from dist/platform/ops/console) and the runbooks it links.
COPY src/platform/ops/console ./dist/platform/ops/console
COPY docs/runbooks ./docs/runbooks
COPY drizzle ./drizzle
USER node
# 3000: the API (PORT). 9464: /metrics and /health/* when METRICS_PORT=9464 is set, as recommended
# (publish it to Prometheus only); without it /metrics needs METRICS_SCRAPE_SECRET (docs/operations.md).
EXPOSE 3000 9464
# /health/* moves to METRICS_PORT when it is set (PORT then answers 404 for it).
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.METRICS_PORT||process.env.PORT||3000)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/main.js"]
