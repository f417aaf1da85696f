// Why a webhook attempt failed, as the delivery log shows it (`error: { code, message }` of GET /webhooks/logs): a
// code from a fixed list beside the existing `error` text, which becomes the message. Rows written before this
// migration get their code from the text they hold (it began with the client's own code, or "refused:", or
// "redirect"), and an attempt that failed on a non-2xx answer, which had no text, gets HTTP_ERROR and a message.
import { sql, type Kysely } from 'kysely';

const codes = [
  'CONNECTION_REFUSED',
  'CONNECT_TIMEOUT',
  'TIMEOUT',
  'DNS_FAILURE',
  'TLS_ERROR',
  'CONNECTION_RESET',
  'HOST_UNREACHABLE',
  'INVALID_RESPONSE',
  'NETWORK_ERROR',
  'PRIVATE_TARGET_REFUSED',
  'INVALID_TARGET',
  'HTTP_ERROR',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table webhook_attempts add column error_code text`.execute(db);
  await sql`update webhook_attempts set
      error_code = case
        when error like 'refused: %' and (error like '%resolves to%' or error ~ ' is an? [a-z() -]+ address$'
          or error like '%connected address is unknown%') then 'PRIVATE_TARGET_REFUSED'
        when error like 'refused: %' then 'INVALID_TARGET'
        when error like 'TIMEOUT: %' then 'TIMEOUT'
        when error like 'CONNECT_TIMEOUT: %' then 'CONNECT_TIMEOUT'
        when error like 'CONNECTION_REFUSED: %' then 'CONNECTION_REFUSED'
        when error like 'DNS: %' then 'DNS_FAILURE'
        when error like 'TLS: %' then 'TLS_ERROR'
        when error like 'redirect (%' then 'HTTP_ERROR'
        else 'NETWORK_ERROR'
      end,
      error = left(regexp_replace(error, '^(TIMEOUT|CONNECT_TIMEOUT|CONNECTION_REFUSED|DNS|TLS|NETWORK): ', ''), 1000)
    where error is not null`.execute(db);
  await sql`update webhook_attempts set error_code = 'HTTP_ERROR',
      error = 'the endpoint answered ' || response_status || '; only a 2xx counts as delivered'
    where error is null and response_status is not null and (response_status < 200 or response_status >= 300)
      and status in ('RETRYING', 'FAILED')`.execute(db);
  await sql`alter table webhook_attempts
    add constraint webhook_attempts_error_code_check check (error_code in (${sql.join(codes.map((c) => sql.lit(c)))})),
    add constraint webhook_attempts_error_pair check ((error_code is null) = (error is null)),
    add constraint webhook_attempts_error_length check (char_length(error) <= 1000)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table webhook_attempts drop constraint webhook_attempts_error_length,
    drop constraint webhook_attempts_error_pair, drop constraint webhook_attempts_error_code_check,
    drop column error_code`.execute(db);
}
