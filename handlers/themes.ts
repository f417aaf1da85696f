// The theme operations: thin wrappers over src/domain/themes/themes.ts (reads get a ReadDb, writes the unit of work's
// ShopWrite).
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

export const createTheme: OperationHandler<'createTheme'> = async ({ write, body }) => ({
  status: 201,
  data: await create(write, body),
});

export const getThemeSettings: OperationHandler<'getThemeSettings'> = async ({ db, auth, params }) => ({
  data: await readSettings(db, auth.shop.id, params.id),
});

export const updateThemeSettings: OperationHandler<'updateThemeSettings'> = async ({ write, params, body }) => ({
  data: await writeSettings(write, params.id, body.settings),
});

export const getThemeDocument: OperationHandler<'getThemeDocument'> = async ({ db, auth, params }) => ({
  data: await getPublishedDocument(db, auth.shop.id, params.id),
});

export const saveThemeDocument: OperationHandler<'saveThemeDocument'> = async ({ write, params, body }) => ({
  data: await saveDraft(write, params.id, body),
});

export const getThemeDraft: OperationHandler<'getThemeDraft'> = async ({ db, auth, params }) => ({
  data: await getDraft(db, auth.shop.id, params.id),
});

export const getThemeDocumentSchema: OperationHandler<'getThemeDocumentSchema'> = async ({ db, auth, params }) => ({
  data: await getDocumentSchema(db, auth.shop.id, params.id),
});

export const createThemePreview: OperationHandler<'createThemePreview'> = async ({
  write,
  params,
  body,
  services,
}) => ({
  status: 201,
  data: await startPreview(write, params.id, body ?? {}, { publicUrl: services.config.publicUrl }),
});

export const deleteThemePreview: OperationHandler<'deleteThemePreview'> = async ({ write, params }) => ({
  data: await stopPreview(write, params.id, params.sessionId),
});

export const publishTheme: OperationHandler<'publishTheme'> = async ({ write, params, body }) => ({
  data: await publish(write, params.id, body.expected_revision),
});
