/**
 * A store that cannot be used — a read-only or full disk, a path in it that is a symbolic link, a
 * database that does not answer — is the person's to fix, not a bug: its failures become a
 * PipelineError naming the store and the path (or the server, without its password), so the
 * command line says what is wrong instead of reporting an internal error (SPEC §4, §7, §11).
 */
import { PipelineError } from '../errors.js';
import { NotRegularFile } from '../util/atomic-write.js';
import type { Store } from './types.js';

const FILE_REASONS: Record<string, string> = {
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  ENOTDIR: 'a part of the path is not a directory',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files',
  EIO: 'input/output error',
};

/** Codes of a connection that could not be made, or was lost. */
const CONNECTION_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'the host name cannot be resolved now',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection lost',
  ENOENT: 'no such socket',
  EACCES: 'permission denied on the socket',
};

/** PostgreSQL error classes (SQLSTATE) that are about the server or the account, not the engine. */
const SERVER_STATES: Record<string, string> = {
  '28P01': 'authentication failed',
  '28000': 'authentication failed',
  '3D000': 'no such database',
  '53300': 'too many connections',
  // (Also what a connection ended by pg_terminate_backend is told.)
  '57P01': 'the server ended the connection (it is shutting down, or an administrator ended the session)',
  '57014': 'a statement was cancelled (a statement_timeout, or a cancel request)',
  '57P03': 'the server is starting up or shutting down',
  '25006': 'the database is read-only',
  '42501': 'permission denied',
};

interface SystemError {
  code?: unknown;
  path?: unknown;
  syscall?: unknown;
  message?: unknown;
  errors?: unknown;
}

function codeOf(error: unknown): string | undefined {
  const found = (error as SystemError | null)?.code;
  if (typeof found === 'string') return found;
  // Node reports a refused connection to every address of a host as an AggregateError.
  const inner = (error as SystemError | null)?.errors;
  return Array.isArray(inner) ? codeOf(inner[0]) : undefined;
}

/** The words for a file-system failure the person can fix (read-only, full, no permission…); undefined for any other. */
export function systemReason(error: unknown): string | undefined {
  const code = codeOf(error);
  return code !== undefined && Object.hasOwn(FILE_REASONS, code) ? FILE_REASONS[code] : undefined;
}

/** What could not be done to which path: a temp file's name means nothing to the person, so its directory is named. */
function attempted(error: unknown, location: string): string {
  const { path: file, syscall } = error as SystemError;
  if (typeof file !== 'string') return `use ${location}`;
  const slash = file.lastIndexOf('/');
  if (file.endsWith('.tmp') && slash > 0) return `write in ${file.slice(0, slash)}/`;
  return `${syscall === 'mkdir' ? 'create' : 'use'} ${file}`;
}

/** A failure of the file store at `location`, in words; undefined when it is not one the person can fix. */
export function describeFileStoreFailure(error: unknown, location: string): PipelineError | undefined {
  if (error instanceof PipelineError) return error;
  if (error instanceof NotRegularFile) {
    return new PipelineError('store.not_regular', error.message, {
      hint: `replace ${error.file} with ${error.expected === 'a directory' ? 'a real directory' : 'a regular file'} (or move it away), then run the command again`,
    });
  }
  const code = codeOf(error);
  const reason = systemReason(error);
  if (code === undefined || reason === undefined) return undefined;
  const what = attempted(error, location);
  if (code === 'EROFS')
    return new PipelineError('store.read_only', `the store at ${location} is read-only (${reason}): cannot ${what.replace(/^use /, 'write ')}`, {
      hint: 'only read commands (status, list, show, viz, rescore, pool top) work on a read-only store',
    });
  if ((code === 'EACCES' || code === 'EPERM') && (error as { reading?: boolean }).reading === true)
    return new PipelineError('store.not_readable', `the store at ${location} is not readable here (${reason}): cannot ${what.replace(/^use /, 'read ')}`, {
      hint: `the user running pipeline needs read access to every file of ${location}`,
    });
  if (code === 'EACCES' || code === 'EPERM')
    return new PipelineError('store.not_writable', `the store at ${location} is not writable here (${reason}): cannot ${what}`, {
      hint: `the user running pipeline needs read and write access to ${location}`,
    });
  return new PipelineError('store.unusable', `cannot ${what} in the store at ${location}: ${reason}`);
}

/** A failure of the PostgreSQL store shown as `display` (no password), in words; undefined when it is not one the person can fix. */
export function describePostgresFailure(error: unknown, display: string): PipelineError | undefined {
  if (error instanceof PipelineError) return error;
  const code = codeOf(error);
  if (code !== undefined && Object.hasOwn(CONNECTION_REASONS, code))
    return new PipelineError('store.unreachable', `cannot connect to the PostgreSQL store at ${display}: ${CONNECTION_REASONS[code]}`, {
      hint: 'check that the server is running and that the URL names its host and port',
    });
  if (code !== undefined && Object.hasOwn(SERVER_STATES, code)) {
    const said = (error as SystemError).message;
    return new PipelineError(
      'store.refused',
      `the PostgreSQL store at ${display} cannot be used: ${SERVER_STATES[code]}${typeof said === 'string' && said ? ` (${said})` : ''}`,
    );
  }
  // pg's own words for a connection it lost or could not finish (these carry no code).
  const message = (error as SystemError | null)?.message;
  if (typeof message === 'string' && /^Connection terminated|^timeout expired|connection timeout/i.test(message))
    return new PipelineError('store.unreachable', `cannot connect to the PostgreSQL store at ${display}: ${message}`);
  return undefined;
}

/**
 * `store` with every failure `describe` knows turned into its PipelineError: each method's promise,
 * async listing or thrown error. Calls go to `store` itself, so its own calls are not wrapped again.
 */
export function withPlainFailures<S extends Store>(store: S, describe: (error: unknown) => PipelineError | undefined): S {
  const explain = (error: unknown) => describe(error) ?? error;
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function' || property === 'constructor') return value;
      let method = wrapped.get(property);
      if (!method) {
        method = (...args: unknown[]) => {
          let result: unknown;
          try {
            result = (value as (...args: unknown[]) => unknown).apply(target, args);
          } catch (error) {
            throw explain(error);
          }
          if (result instanceof Promise) return result.catch((error: unknown) => Promise.reject(explain(error)));
          if (result !== null && typeof result === 'object' && Symbol.asyncIterator in result) return explained(result as AsyncIterable<unknown>, explain);
          return result;
        };
        wrapped.set(property, method);
      }
      return method;
    },
  });
}

/**
 * `items` with its failures explained. A plain iterator, not an async generator: a generator's
 * `yield*` adds awaits to every item, and listings run to hundreds of thousands of them.
 */
function explained<T>(items: AsyncIterable<T>, explain: (error: unknown) => unknown): AsyncIterable<T> {
  const fail = (error: unknown) => Promise.reject(explain(error));
  return {
    [Symbol.asyncIterator]() {
      const inner = items[Symbol.asyncIterator]();
      return {
        next: () => inner.next().catch(fail),
        return: (value?: unknown) => (inner.return ? inner.return(value).catch(fail) : Promise.resolve({ done: true as const, value: value as T })),
      };
    },
  };
}
