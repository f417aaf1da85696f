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
# The parsed contract is cached beside it (dist/openapi.yaml.cache, see src/spec.ts): no YAML parse at each start.
# The schema image beside the compiled code (db/schema-image.ts): a first start unpacks it instead of migrating.
RUN npx tsc -p tsconfig.build.json && cp openapi.yaml dist/openapi.yaml && cp -r db/image dist/db/image \
 && node -e "require('./dist/src/spec').specJson()" && test -s dist/openapi.yaml.cache

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
CMD ["node", "--max-semi-space-size=20", "--max-old-space-size=384", "--liftoff-only", "dist/src/server.js"]
