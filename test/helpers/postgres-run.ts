// Test files that start PostgreSQL servers, pools or processes of their own belong to the PostgreSQL run of the
// suite (DATABASE_URL set); in the embedded run they are skipped, and say why on the console.

/** `describe` in the PostgreSQL run; otherwise `describe.skip`, after printing `<file> skipped: <why>`. */
export function describeInPostgresRun(file: string, why: string): jest.Describe {
  if (process.env.DATABASE_URL) return describe;
  console.log(`${file} skipped: ${why}`);
  return describe.skip;
}
