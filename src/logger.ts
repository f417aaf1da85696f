// One JSON line per event on stdout. Credentials never reach it: the access log records the shop and credential
// ids, never headers or bodies.
import winston from 'winston';

export type Logger = winston.Logger;

export function createLogger(level: string): Logger {
  return winston.createLogger({
    level,
    silent: level === 'silent',
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    transports: [new winston.transports.Console()],
  });
}
