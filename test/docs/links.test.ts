// The README is the front door and the guides in docs/ link into each other: every relative link of README.md and
// docs/*.md must lead to a file that is there and, with a #fragment, to a heading of it; every `npm run` command they
// give must be a script of package.json. No database: it reads files only.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  brokenLinks,
  fileLookup,
  headingAnchors,
  missingScripts,
  type Document,
  type Lookup,
} from '../helpers/markdown-links';

const root = join(__dirname, '..', '..');
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;
const readme: Document = { path: 'README.md', text: readFileSync(join(root, 'README.md'), 'utf8') };
const guides: Document[] = [
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
].map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }));
const documents = [readme, ...guides];

test('the README and every guide of docs/ are read', () => {
  // A guide the README does not link is one nobody finds: every one of them is linked from the README.
  for (const doc of guides) expect(readme.text).toContain(`](${doc.path})`);
});

test.each(documents.map((d) => [d.path, d] as const))('every relative link of %s leads somewhere', (_path, doc) => {
  expect(brokenLinks(doc, fileLookup(root))).toEqual([]);
});

test.each(documents.map((d) => [d.path, d] as const))('every npm script %s names exists', (_path, doc) => {
  expect(missingScripts(doc, scripts)).toEqual([]);
});

test("openapi.yaml's description names only guides that are there", () => {
  // The reference at /docs is rendered from openapi.yaml, and it points integrators at guides of docs/ by path.
  const named = [...readFileSync(join(root, 'openapi.yaml'), 'utf8').matchAll(/\bdocs\/[\w.-]+\.md\b/g)].map(
    (m) => m[0],
  );
  expect(named.length).toBeGreaterThan(0);
  expect(named.filter((path) => !guides.some((g) => g.path === path))).toEqual([]);
});

test('the README gives the two commands a newcomer needs, verbatim', () => {
  expect(readme.text).toContain('npm install && npm start');
  expect(readme.text).toMatch(/^npm test$/m);
});

// The checker itself, on texts written here, so that it is known to fail on what it must find.
describe('the link checker', () => {
  const files: Record<string, string | null> = {
    'docs/guide.md':
      '# A guide\n\n## Start times through `npm start`\n\n## Fixture format (`seed`)\n\n## Twice\n\n## Twice\n',
    'docs/screenshots/page.png': null,
    'openapi.yaml': null,
  };
  const lookup: Lookup = (path) =>
    path in files ? (files[path] === null ? {} : { markdown: files[path] ?? undefined }) : undefined;
  const readmeOf = (text: string): Document => ({ path: 'README.md', text });

  test('accepts links that lead somewhere', () => {
    const ok = readmeOf(
      [
        '# Title',
        '',
        '## Quick start',
        '',
        'See [the guide](docs/guide.md), [start](docs/guide.md#start-times-through-npm-start) and',
        '[the\nseed format](docs/guide.md#fixture-format-seed "title"), [again](docs/guide.md#twice-1),',
        '![a page](docs/screenshots/page.png), [spec](openapi.yaml), [here](#quick-start),',
        '[away](https://example.com/missing.md) and [mail](mailto:a@example.com).',
        '',
        '```sh',
        'echo "[not a link](nowhere.md)"',
        '```',
        '',
        'Nor is `[this](nowhere.md)`.',
      ].join('\n'),
    );
    expect(brokenLinks(ok, lookup)).toEqual([]);
  });

  test('finds a missing file, a missing heading, a link out of the repository and a fragment of a non-markdown file', () => {
    const broken = readmeOf(
      [
        '# Title',
        '',
        'See [gone](docs/gone.md),',
        '[no such heading](docs/guide.md#cold-start), [no anchor here](#nowhere),',
        '[out](../elsewhere.md) and [png](docs/screenshots/page.png#top).',
      ].join('\n'),
    );
    expect(brokenLinks(broken, lookup)).toEqual([
      'README.md:3: docs/gone.md: no file docs/gone.md',
      'README.md:4: docs/guide.md#cold-start: docs/guide.md has no heading #cold-start',
      'README.md:4: #nowhere: README.md has no heading #nowhere',
      'README.md:5: ../elsewhere.md leaves the repository',
      'README.md:5: docs/screenshots/page.png#top: docs/screenshots/page.png is not a markdown file, so it has no #top',
    ]);
  });

  test('makes the anchors GitHub makes', () => {
    expect([
      ...headingAnchors(
        "# The API reference (`/docs`)\n## Reading events: `GET /events`\n## The embedded database's lock\n" +
          '## `snake_case_name` and _emphasis_ **bold**\n## Twice\n## Twice\n```\n# not a heading\n```\n',
      ),
    ]).toEqual([
      'the-api-reference-docs',
      'reading-events-get-events',
      'the-embedded-databases-lock',
      'snake_case_name-and-emphasis-bold',
      'twice',
      'twice-1',
    ]);
  });

  test('finds an npm script package.json does not have', () => {
    const doc = readmeOf('Run `npm run -s cli -- key list`, `npm run sdk:build`, `npm run nosuch` and `npm test`.');
    expect(missingScripts(doc, { cli: '', 'sdk:build': '', test: '' })).toEqual([
      'README.md: npm run nosuch: no such script in package.json',
    ]);
    expect(missingScripts(readmeOf('npm start'), { test: '' })).toEqual([
      'README.md: npm run start: no such script in package.json',
    ]);
  });
});
