// The theme operations: thin wrappers over src/domain/themes/themes.ts (reads get a ReadDb, writes the unit of work's
// transaction and effects).
import {
  createTheme as create,
  getDocumentSchema,
  getDraft,
  getPublishedDocument,
  getThemeSettings as readSettings,
  publishTheme as publish,
  saveDraft,
  startPreview,
  stopPreview,
  themeCursorList,
  updateThemeSettings as writeSettings,
} from '../src/domain/themes/themes';
import type { OperationHandler } from '../src/http/handler';
import { listHandler } from '../src/http/list-handler';

export const listThemes: OperationHandler<'listThemes'> = listHandler(themeCursorList, () => undefined);

export const createTheme: OperationHandler<'createTheme'> = async ({ db, auth, body, effects, services }) => ({
  status: 201,
  data: await create(db, auth.shop.id, body, effects, services.clock),
});

export const getThemeSettings: OperationHandler<'getThemeSettings'> = async ({ db, auth, params }) => ({
  data: await readSettings(db, auth.shop.id, params.id),
});

export const updateThemeSettings: OperationHandler<'updateThemeSettings'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  data: await writeSettings(db, auth.shop.id, params.id, body.settings, effects, services.clock),
});

export const getThemeDocument: OperationHandler<'getThemeDocument'> = async ({ db, auth, params }) => ({
  data: await getPublishedDocument(db, auth.shop.id, params.id),
});

export const saveThemeDocument: OperationHandler<'saveThemeDocument'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  data: await saveDraft(db, auth.shop.id, params.id, body, effects, services.clock),
});

export const getThemeDraft: OperationHandler<'getThemeDraft'> = async ({ db, auth, params }) => ({
  data: await getDraft(db, auth.shop.id, params.id),
});

export const getThemeDocumentSchema: OperationHandler<'getThemeDocumentSchema'> = async ({ db, auth, params }) => ({
  data: await getDocumentSchema(db, auth.shop.id, params.id),
});

export const createThemePreview: OperationHandler<'createThemePreview'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  status: 201,
  data: await startPreview(db, auth.shop.id, params.id, body ?? {}, effects, {
    clock: services.clock,
    publicUrl: services.config.publicUrl,
  }),
});

export const deleteThemePreview: OperationHandler<'deleteThemePreview'> = async ({
  db,
  auth,
  params,
  effects,
  services,
}) => ({
  data: await stopPreview(db, auth.shop.id, params.id, params.sessionId, effects, services.clock),
});

export const publishTheme: OperationHandler<'publishTheme'> = async ({
  db,
  auth,
  params,
  body,
  effects,
  services,
}) => ({
  data: await publish(db, auth.shop.id, params.id, body.expected_revision, effects, services.clock),
});
