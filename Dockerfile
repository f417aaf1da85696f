# syntax=docker/dockerfile:1
# Build: compile TypeScript to dist/. Run: production dependencies only, as the unprivileged 'node' user.
# test/ops/docker-image.test.ts builds the runtime layout this file describes (its COPY lines, read from here) and
# runs the server, the worker and the CLI from it as CMD and the README say.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: the 'node' devDependency's would download a second Node 24 (the base image has one), and the
# build needs none of the others (esbuild finds its binary in its platform package without one; the native addon
# argon2 is installed in the runtime stage).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json openapi.yaml ./
COPY src ./src
COPY handlers ./handlers
COPY db ./db
COPY codegen/start.mjs codegen/run-bundle.mjs codegen/stack-traces.mjs codegen/write-atomic.mjs ./codegen/
RUN npx tsc -p tsconfig.build.json --noEmit
# codegen/start.mjs --compile-only lays out dist/ as `npm start` runs it: the compiled tree, the contract and its
# parsed cache (dist/openapi.yaml.cache, see src/spec.ts: no YAML parse at each start), the schema image
# (db/schema-image.ts: a first start unpacks it instead of migrating) and the one-file bundles of the server, the
# worker and the CLI (dist/bundle/, see codegen/start.mjs).
RUN node codegen/start.mjs --compile-only && test -s dist/openapi.yaml.cache && test -s dist/bundle/server.js

FROM node:24-bookworm-slim AS runtime
# No demo shop (its full-access keys would be printed into the container's logs): create a shop and a key with
# `docker exec <container> npm run -s cli -- shop create --name NAME` and `... key create --shop <id> --scopes "*"`.
ENV NODE_ENV=production PORT=3000 DATA_DIR=/data/pglite SEED_DEMO=false
WORKDIR /app
COPY package.json package-lock.json ./
# node_modules/.cache: V8's code caches of the bundles (codegen/start.mjs, codegen/run-bundle.mjs), written by the 'node' user.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force \
 && mkdir -p node_modules/.cache && chown node:node node_modules/.cache
# start.mjs runs `npm start`, `npm run worker` and `npm run cli`; with no sources beside it, it runs dist/ as built.
COPY codegen/start.mjs codegen/run-bundle.mjs codegen/stack-traces.mjs codegen/write-atomic.mjs ./codegen/
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000
# With DATABASE_URL unset the embedded database lives in /data: mount a volume there to keep it.
VOLUME ["/data"]
HEALTHCHECK --interval=30s --timeout=3s CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# `npm start` (package.json) without npm in between, so that SIGTERM reaches node itself. Its flags: see docs/performance.md,
# "Memory".
CMD ["node", "--max-semi-space-size=20", "--max-old-space-size=384", "--liftoff-only", "codegen/start.mjs"]
