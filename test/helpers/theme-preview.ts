// A theme with a saved draft and a running preview session, made through the API: what the browser tests of the
// preview page start from.
import request from 'supertest';
import { bearer, type TestApp } from './test-app';

export interface RunningPreview {
  key: string;
  themeId: string;
  session: { id: string; url: string };
  api: ReturnType<typeof request>;
}

export async function startThemePreview(
  t: TestApp,
  shopName: string,
  sections: Record<string, unknown>[],
): Promise<RunningPreview> {
  const shopId = await t.createShop({ name: shopName });
  const { key } = await t.createKey(shopId, ['themes.read', 'themes.write']);
  const api = request(t.app);
  const created = await api
    .post('/dev/v1/themes/control/create')
    .set(bearer(key))
    .send({ name: 'Spring', base: 'starlight' });
  expect(created.status).toBe(201);
  const themeId: string = created.body.data.id;
  const saved = await api
    .put(`/dev/v1/themes/${themeId}/control/document`)
    .set(bearer(key))
    .send({ expected_revision: 1, document: { sections } });
  expect(saved.status).toBe(200);
  const session = await api.post(`/dev/v1/themes/${themeId}/control/preview`).set(bearer(key)).send({});
  expect(session.status).toBe(201);
  return { key, themeId, session: session.body.data as { id: string; url: string }, api };
}
