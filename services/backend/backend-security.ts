import { Counter, Gauge, type Registry } from 'prom-client';
import { backendSettings, type BackendConfig } from '../config/config.ts';
import { readTokensFile } from '../config/token-file.ts';
import type { Logger } from '../shared/logger.ts';
import { BearerAuth } from './bearer-auth.ts';
import { WatchedFiles, type ReloadReason } from './watched-files.ts';

export interface BackendSecurityOptions {
  readonly config: Pick<BackendConfig, 'tokensFile'>;
  readonly registry: Registry;
  readonly logger: Logger;
  /** How often the files are looked at for a change (default WATCH_POLL_MS). */
  readonly pollMs?: number;
}

/** The backend's tokens (SPEC §8), kept current from their file. */
export interface BackendSecurity {
  /** Undefined without BACKEND_TOKENS_FILE: every request is served. */
  readonly auth: BearerAuth | undefined;
  /** Reads the files again (SIGHUP). */
  reload(reason: ReloadReason): void;
  close(): void;
}

/**
 * Reads BACKEND_TOKENS_FILE, follows it on disk and on SIGHUP, and registers what ops
 * watch: kvbackend_tokens{scope} (the tokens in use) and kvbackend_tokens_reload_failures_total.
 * Nothing of a token reaches a metric or a log line: only counts and the path.
 */
export function startBackendSecurity({ config, registry, logger, pollMs }: BackendSecurityOptions): BackendSecurity {
  let tokenFailures = 0;
  let tokens: Pick<WatchedFiles<never>, 'reload' | 'close'> | undefined;
  let auth: BearerAuth | undefined;
  if (config.tokensFile !== '') {
    const path = config.tokensFile;
    const load = () => readTokensFile(path, backendSettings.tokensFile.env);
    const bearer = new BearerAuth(load());
    auth = bearer;
    tokens = new WatchedFiles({
      what: 'backend tokens',
      paths: [path],
      load,
      apply: (table) => {
        bearer.replace(table);
        return { path, ...table.counts };
      },
      logger,
      onFailure: () => tokenFailures++,
      pollMs,
    });
  }
  // Registered with or without a tokens file, at zero without one, so rules and panels always find them.
  new Gauge({
    name: 'kvbackend_tokens',
    help: 'Bearer tokens in use from BACKEND_TOKENS_FILE, by scope (read or write); 0 without the setting.',
    labelNames: ['scope'],
    registers: [registry],
    collect() {
      this.set({ scope: 'read' }, auth?.table.counts.read ?? 0);
      this.set({ scope: 'write' }, auth?.table.counts.write ?? 0);
    },
  });
  new Counter({
    name: 'kvbackend_tokens_reload_failures_total',
    help: 'Reloads of BACKEND_TOKENS_FILE (on SIGHUP or a change on disk) that failed; the tokens in use stayed.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(tokenFailures);
    },
  });

  return {
    auth,
    reload(reason) {
      if (tokens) tokens.reload(reason);
      else logger.info('nothing to reload: no BACKEND_TOKENS_FILE');
    },
    close() {
      tokens?.close();
    },
  };
}
