// Stack traces that name the TypeScript lines of npm start's bundles, as under tsx. Node's own source-map support
// (process.setSourceMapsEnabled) reads and indexes a bundle's whole source map when the bundle loads: for the
// server's 3.5 MB map that was ~30 ms of every start, spent whether any stack trace was ever printed or not. Here a
// bundle's map is read on the first stack trace that passes through the bundle, and each of its frames is then
// named by the source it came from. Plain JavaScript, loaded by codegen/start.mjs before any bundle.
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';

/** Maps the frames of the given bundles (absolute paths; each with `<bundle>.map` beside it) in every stack trace. */
export function mapStackTraces(bundles) {
  const maps = new Map();
  const mapOf = (file) => {
    if (!bundles.includes(file)) return undefined;
    if (!maps.has(file)) {
      try {
        maps.set(file, new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))));
      } catch {
        maps.set(file, null); // no readable map: its frames stay as they are
      }
    }
    return maps.get(file) ?? undefined;
  };
  Error.prepareStackTrace = (error, frames) => {
    let header;
    try {
      header = Error.prototype.toString.call(error);
    } catch {
      header = '<error>';
    }
    return [header, ...frames.map((frame) => `    at ${mappedFrame(frame, mapOf)}`)].join('\n');
  };
}

/** A frame as V8 prints it, its bundle location replaced by the original one where the map knows it. */
function mappedFrame(frame, mapOf) {
  const text = String(frame);
  const file = frame.getFileName();
  const line = frame.getLineNumber();
  const column = frame.getColumnNumber();
  const map = file && line && column ? mapOf(file) : undefined;
  if (!map) return text;
  const entry = map.findEntry(line - 1, column - 1);
  if (!entry?.originalSource) return text;
  const original = `${resolve(dirname(file), entry.originalSource)}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  return text.replace(`${file}:${line}:${column}`, original);
}
