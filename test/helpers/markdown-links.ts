// What the README and the guides in docs/ point at, and whether it is there: relative links (the file, and a
// #fragment as GitHub renders a heading's anchor) and the `npm run <script>` commands they tell a reader to type.
// The documents are split into guides that link into each other, so a heading renamed or a guide moved breaks a
// reader's way silently unless something reads every link.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

export interface Document {
  /** Path relative to the repository's root, with forward slashes: `README.md`, `docs/cli.md`. */
  path: string;
  text: string;
}

/** What a link may point at: undefined when nothing is there, else the text when it is a markdown file. */
export type Lookup = (path: string) => { markdown?: string } | undefined;

/** The repository's files, read from disk (relative to `root`). */
export function fileLookup(root: string): Lookup {
  return (path) => {
    const full = join(root, path);
    if (!existsSync(full)) return undefined;
    if (statSync(full).isFile() && path.endsWith('.md')) return { markdown: readFileSync(full, 'utf8') };
    return {};
  };
}

/** The text outside fenced code blocks and HTML comments, line for line (what is blanked keeps its newlines). */
function prose(markdown: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ');
  let out = markdown.replace(/<!--[\s\S]*?-->/g, blank);
  out = out.replace(/^( {0,3})(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ {0,3}\2[`~]*[ \t]*$/gm, blank);
  return out;
}

/** Inline code spans blanked too: a link shown as code is not a link. */
function linkable(markdown: string): string {
  return prose(markdown).replace(/(`+)[\s\S]*?\1/g, (s) => s.replace(/[^\n]/g, ' '));
}

/**
 * GitHub's anchor of a heading (github-slugger): the heading's text as rendered (code spans keep their text, a
 * link its label, emphasis marks go), lower case, every character that is not a letter, a mark, a digit, `_`, `-`
 * or a space removed, spaces made hyphens; a repeated slug gets `-1`, `-2`...
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(markdown).split('\n')) {
    const m = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (!m) continue;
    // Code spans keep their text as it is; outside them a link keeps its label and emphasis marks go (`_` only
    // at a word's edge: inside a word it is a letter of it).
    const text = (m[1] ?? '')
      .split(/(`[^`]*`)/)
      .map((part) =>
        part.startsWith('`')
          ? part.slice(1, -1)
          : part
              .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
              .replace(/\*+/g, '')
              .replace(/(^|[^\p{L}\p{N}])_+|_+(?=[^\p{L}\p{N}]|$)/gu, '$1'),
      )
      .join('');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  // Explicit anchors (<a id="x">, <a name="x">) are link targets too.
  for (const m of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1] ?? '');
  return anchors;
}

/** Every inline link or image target and reference definition of a document, with its line number. */
export function linkTargets(markdown: string): { target: string; line: number }[] {
  const text = linkable(markdown);
  const found: { target: string; line: number }[] = [];
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  // The label may span lines; the destination may be in <...> and be followed by a title.
  for (const m of text.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g)) {
    found.push({ target: (m[1] ?? '').replace(/^<|>$/g, ''), line: lineOf(m.index) });
  }
  for (const m of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*(\S+)/gm))
    found.push({ target: m[1] ?? '', line: lineOf(m.index) });
  return found;
}

/** The broken relative links of a document: a missing file, or a #fragment no heading of the target makes. */
export function brokenLinks(doc: Document, lookup: Lookup): string[] {
  const problems: string[] = [];
  for (const { target, line } of linkTargets(doc.text)) {
    // Absolute URLs (http:, https:, mailto:...) and protocol-relative ones leave the repository.
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
    const hash = target.indexOf('#');
    const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
    const fragment = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const resolved = pathPart === '' ? doc.path : normalize(join(dirname(doc.path), pathPart)).replace(/\\/g, '/');
    const where = `${doc.path}:${line}: ${target}`;
    if (resolved.startsWith('..') || relative('.', resolved).startsWith('..')) {
      problems.push(`${where} leaves the repository`);
      continue;
    }
    const found = resolved === doc.path ? { markdown: doc.text } : lookup(resolved);
    if (!found) {
      problems.push(`${where}: no file ${resolved}`);
      continue;
    }
    if (fragment === undefined || fragment === '') continue;
    if (found.markdown === undefined) {
      problems.push(`${where}: ${resolved} is not a markdown file, so it has no #${fragment}`);
      continue;
    }
    if (!headingAnchors(found.markdown).has(fragment))
      problems.push(`${where}: ${resolved} has no heading #${fragment}`);
  }
  return problems;
}

/** The npm scripts a document tells its reader to run: `npm run [-s|--silent] NAME`, `npm test`, `npm start`. */
export function npmScripts(markdown: string): string[] {
  const names = new Set<string>();
  for (const m of markdown.matchAll(/\bnpm run(?:\s+(?:-s|--silent))?\s+([a-z][\w:-]*\w|[a-z])/g))
    names.add(m[1] ?? '');
  for (const m of markdown.matchAll(/\bnpm (test|start)\b/g)) names.add(m[1] ?? '');
  return [...names];
}

/** The scripts a document names that package.json does not have. */
export function missingScripts(doc: Document, scripts: Record<string, string>): string[] {
  return npmScripts(doc.text)
    .filter((name) => !Object.hasOwn(scripts, name))
    .map((name) => `${doc.path}: npm run ${name}: no such script in package.json`);
}
