// The theme bases: which may be used for new themes, and for each base the JSON Schema (2020-12) its documents must
// satisfy, its settings (ids, formats, defaults) and the starter document a new theme gets as revision 1. Every
// validator is compiled once, when this module loads.
//
// A document is `{ sections: [...], meta?: { title, description } }`; a section is an object whose `type` picks its
// shape. All bases know `hero`, `text`, `product_grid` and `announcement` (clean-minimal: `hero` and `text` only);
// `pulse` adds `countdown`, `starlight` adds `testimonials`, and the retired bases add their legacy `banner`. A
// document holds text and links only, never asset URLs: the storefront (and the preview) loads nothing from
// elsewhere.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ThemeBase } from '../../../db/tables';
import type { ErrorDetail } from '../../errors';
import { validationDetails } from '../../platform/validation-details';

export const creatableBases = ['default', 'classic', 'pulse', 'starlight', 'clean-minimal'] as const;
export const retiredBases = ['apex', 'nebula', 'phantom', 'shadow', 'vault'] as const;
export const allBases: readonly ThemeBase[] = [...creatableBases, ...retiredBases];

export function isRetiredBase(base: string): boolean {
  return (retiredBases as readonly string[]).includes(base);
}

export function isThemeBase(base: string): base is ThemeBase {
  return (allBases as readonly string[]).includes(base);
}

const text = (max: number, min = 0) => ({ type: 'string', minLength: min, maxLength: max });
/** A link: a path on the storefront or an https address (never javascript:, data: or plain http). */
const link = { type: 'string', maxLength: 2048, pattern: '^(/(?!/)[^\\s]*|https://[^\\s]+)$' };

function section(type: string, properties: Record<string, unknown>, required: string[] = []) {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['type', ...required],
    properties: { type: { const: type }, ...properties },
  };
}

const sections = {
  hero: section('hero', { title: text(200, 1), subtitle: text(500), button_label: text(60, 1), button_link: link }, [
    'title',
  ]),
  text: section('text', { heading: text(200), body: text(20000, 1) }, ['body']),
  product_grid: section('product_grid', {
    title: text(200),
    columns: { type: 'integer', minimum: 1, maximum: 6 },
    limit: { type: 'integer', minimum: 1, maximum: 48 },
  }),
  announcement: section('announcement', { message: text(500, 1), link }, ['message']),
  countdown: section('countdown', { label: text(100, 1), ends_at: { type: 'string', format: 'date-time' } }, [
    'label',
    'ends_at',
  ]),
  testimonials: section(
    'testimonials',
    {
      title: text(200),
      items: {
        type: 'array',
        minItems: 1,
        maxItems: 20,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['quote', 'author'],
          properties: { quote: text(1000, 1), author: text(100, 1) },
        },
      },
    },
    ['items'],
  ),
  banner: section('banner', { text: text(500, 1), tone: { enum: ['info', 'warning', 'dark'] } }, ['text']),
} as const;

type SectionType = keyof typeof sections;

const common: SectionType[] = ['hero', 'text', 'product_grid', 'announcement'];
const sectionsOf: Record<ThemeBase, { types: SectionType[]; max: number }> = {
  default: { types: common, max: 50 },
  classic: { types: common, max: 50 },
  pulse: { types: [...common, 'countdown'], max: 50 },
  starlight: { types: [...common, 'testimonials'], max: 50 },
  'clean-minimal': { types: ['hero', 'text'], max: 20 },
  apex: { types: [...common, 'banner'], max: 50 },
  nebula: { types: [...common, 'banner'], max: 50 },
  phantom: { types: [...common, 'banner'], max: 50 },
  shadow: { types: [...common, 'banner'], max: 50 },
  vault: { types: [...common, 'banner'], max: 50 },
};

/** The JSON Schema (2020-12) of a base's documents, as GET /themes/{id}/control/document/schema returns it. */
export function documentSchemaOf(base: ThemeBase): Record<string, unknown> {
  const { types, max } = sectionsOf[base];
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `https://schemas.merchant-developer-api/themes/${base}/document.json`,
    title: `Theme document (${base})`,
    type: 'object',
    additionalProperties: false,
    required: ['sections'],
    properties: {
      meta: {
        type: 'object',
        additionalProperties: false,
        properties: { title: text(200), description: text(500) },
      },
      sections: {
        type: 'array',
        maxItems: max,
        items: {
          type: 'object',
          required: ['type'],
          // The OpenAPI `discriminator` is an annotation in JSON Schema: validators that do not know it ignore it.
          discriminator: { propertyName: 'type' },
          oneOf: types.map((t) => sections[t]),
        },
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------------------------

const color = { type: 'string', pattern: '^#[0-9a-fA-F]{6}$' };
const commonSettings = {
  primary_color: color,
  background_color: color,
  text_color: color,
  font_family: { enum: ['system', 'serif', 'sans-serif', 'monospace'] },
  layout_width: { enum: ['narrow', 'normal', 'wide'] },
  show_shop_name: { type: 'boolean' },
};

const settingsSchemas: Record<ThemeBase, Record<string, unknown>> = Object.fromEntries(
  allBases.map((base) => [
    base,
    {
      ...commonSettings,
      ...(base === 'pulse' ? { accent_color: color } : {}),
      ...(base === 'starlight' ? { glow: { type: 'integer', minimum: 0, maximum: 100 } } : {}),
    },
  ]),
) as unknown as Record<ThemeBase, Record<string, unknown>>;

const baseDefaults: Record<string, unknown> = {
  primary_color: '#1a73e8',
  background_color: '#ffffff',
  text_color: '#202124',
  font_family: 'system',
  layout_width: 'normal',
  show_shop_name: true,
};
const settingDefaults: Record<ThemeBase, Record<string, unknown>> = {
  default: baseDefaults,
  classic: { ...baseDefaults, primary_color: '#5b3a29', background_color: '#fbf7f0', font_family: 'serif' },
  pulse: { ...baseDefaults, primary_color: '#e91e63', accent_color: '#ffc107', layout_width: 'wide' },
  starlight: {
    ...baseDefaults,
    primary_color: '#b39ddb',
    background_color: '#0d1026',
    text_color: '#e8eaf6',
    glow: 40,
  },
  'clean-minimal': { ...baseDefaults, primary_color: '#111111', layout_width: 'narrow', font_family: 'sans-serif' },
  apex: { ...baseDefaults, primary_color: '#ff5722' },
  nebula: { ...baseDefaults, primary_color: '#7e57c2', background_color: '#1b1330', text_color: '#ede7f6' },
  phantom: { ...baseDefaults, primary_color: '#607d8b', background_color: '#eceff1' },
  shadow: { ...baseDefaults, primary_color: '#9e9e9e', background_color: '#121212', text_color: '#f5f5f5' },
  vault: { ...baseDefaults, primary_color: '#c9a227', font_family: 'monospace' },
};

/** The setting ids of a base and their schemas (for docs and errors). */
export function settingIdsOf(base: ThemeBase): string[] {
  return Object.keys(settingsSchemas[base]);
}

/** The settings a theme shows: the base's defaults, overridden by the stored values. */
export function effectiveSettings(base: ThemeBase, stored: Record<string, unknown>): Record<string, unknown> {
  return { ...settingDefaults[base], ...stored };
}

// ---------------------------------------------------------------------------------------------------------------
// Starter documents
// ---------------------------------------------------------------------------------------------------------------

export function starterDocument(base: ThemeBase): Record<string, unknown> {
  const sectionList: Record<string, unknown>[] = [
    { type: 'hero', title: 'Welcome to our shop', subtitle: 'Edit this theme to make it yours.' },
    { type: 'text', heading: 'About us', body: 'Tell your customers who you are.' },
  ];
  if (sectionsOf[base].types.includes('product_grid'))
    sectionList.push({ type: 'product_grid', title: 'Products', columns: 3, limit: 6 });
  return { sections: sectionList };
}

// ---------------------------------------------------------------------------------------------------------------
// Validators, compiled once each, on first use: compiling them all when the module loads was ~0.3 s of every
// server start, for requests a server may never get.
// ---------------------------------------------------------------------------------------------------------------

let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction>();

function validatorOf(kind: 'document' | 'settings', base: ThemeBase): ValidateFunction {
  if (!allBases.includes(base)) throw new Error(`no ${kind} schema for theme base ${base}`);
  const key = `${kind}:${base}`;
  let validate = compiled.get(key);
  if (!validate) {
    if (!ajv) {
      ajv = new Ajv2020({ allErrors: true, discriminator: true, strict: false });
      addFormats(ajv, ['date-time']);
    }
    validate = ajv.compile(
      kind === 'document'
        ? documentSchemaOf(base)
        : { type: 'object', additionalProperties: false, maxProperties: 500, properties: settingsSchemas[base] },
    );
    compiled.set(key, validate);
  }
  return validate;
}

/** Ajv errors of a value under `prefix` (a body field), as `details` with paths like `document.sections[0].title`. */
function details(validate: ValidateFunction, prefix: string, sectionTypes: string[] = []): ErrorDetail[] {
  const errors = (validate.errors ?? []).map((e) =>
    // A section whose `type` is missing or not one of the base's: say so on `type`, with the types there are.
    e.keyword === 'discriminator'
      ? {
          ...e,
          keyword: 'enum',
          instancePath: `/requestBody/${prefix}${e.instancePath}/type`,
          params: { allowedValues: sectionTypes },
        }
      : { ...e, instancePath: `/requestBody/${prefix}${e.instancePath}` },
  );
  return validationDetails(errors);
}

/** The problems of a document under its base's schema (empty when it is valid). */
export function documentProblems(base: ThemeBase, document: unknown): ErrorDetail[] {
  const validate = validatorOf('document', base);
  return validate(document) ? [] : details(validate, 'document', sectionsOf[base].types);
}

/** The problems of a settings update under its base's settings (empty when it is valid); null means "the default". */
export function settingsProblems(base: ThemeBase, settings: Record<string, unknown>): ErrorDetail[] {
  const validate = validatorOf('settings', base);
  const defaults = settingDefaults[base];
  // A null is valid for every known setting: it is checked as the default it stands for.
  const checked = Object.fromEntries(
    Object.entries(settings).map(([id, value]) => [id, value === null && id in defaults ? defaults[id] : value]),
  );
  return validate(checked) ? [] : details(validate, 'settings');
}
