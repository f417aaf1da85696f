# syntax=docker/dockerfile:1
# Build: compile TypeScript to dist/. Run: production dependencies only, as the unprivileged 'node' user.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json openapi.yaml ./
COPY src ./src
COPY handlers ./handlers
COPY db ./db
COPY codegen/start.mjs ./codegen/start.mjs
# tsc checks the types; codegen/start.mjs --compile-only then lays out dist/ as `npm start` runs it: the compiled tree,
# the contract and its parsed cache (dist/openapi.yaml.cache, see src/spec.ts: no YAML parse at each start), the
# schema image (db/schema-image.ts: a first start unpacks it instead of migrating) and the one-file bundles of the
# server, the worker and the CLI (dist/bundle/, see codegen/start.mjs).
RUN npx tsc -p tsconfig.build.json --noEmit && node codegen/start.mjs --compile-only \
 && test -s dist/openapi.yaml.cache && test -s dist/bundle/server.js

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production PORT=3000 DATA_DIR=/data/pglite
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000
# With DATABASE_URL unset the embedded database lives in /data: mount a volume there to keep it.
VOLUME ["/data"]
HEALTHCHECK --interval=30s --timeout=3s CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The flags of `npm start` (package.json): see README, "Memory".
CMD ["node", "--max-semi-space-size=20", "--max-old-space-size=384", "--liftoff-only", "dist/bundle/server.js"]
