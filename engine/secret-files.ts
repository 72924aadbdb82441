/**
 * Per-user secret files (e.g. the author key's HMAC secret): created once with 64 random hex
 * characters and mode 0600, never regenerated; a malformed one is a refusal (left as it is);
 * wider permissions are tightened, with a warning. The secret never appears in YAML or output.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Env } from './config/interpolate.js';
import type { SecretDef } from './config/types.js';
import { writeFileAtomic } from './util/atomic-write.js';

export type SecretRead = { ok: true; value: string; warnings: string[] } | { ok: false; message: string };

const HEX64 = /^[0-9a-f]{64}$/;

export function secretPath(def: SecretDef, env: Env): string {
  const home = env['HOME'] || os.homedir();
  return def.file.startsWith('~/') ? path.join(home, def.file.slice(2)) : def.file === '~' ? home : path.resolve(def.file);
}

/** Create the secret file; false when another caller created it first. */
async function create(file: string): Promise<boolean> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    // Durable, mode 0600 from the start, and never over a secret another process just created.
    await writeFileAtomic(file, `${randomBytes(32).toString('hex')}\n`, { exclusive: true, mode: 0o600 });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  }
}

/** Read (creating it once if declared so) the secret `name`. */
export async function readSecret(name: string, def: SecretDef, env: Env): Promise<SecretRead> {
  const file = secretPath(def, env);
  const warnings: string[] = [];
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      return { ok: false, message: `cannot read the ${name} secret ${file}: ${(error as Error).message}` };
    if (def.generate !== 'hex64') return { ok: false, message: `the ${name} secret ${file} does not exist` };
    try {
      // A file appearing under the person's home directory is said once, by the call that made it.
      if (await create(file)) warnings.push(`created the ${name} secret ${file} (mode 600), once; keep it — a new one would change every value it keys`);
      text = await fs.readFile(file, 'utf8');
    } catch (createError) {
      return { ok: false, message: `cannot create the ${name} secret ${file}: ${(createError as Error).message}` };
    }
  }
  const value = text.trim();
  if (!HEX64.test(value))
    return { ok: false, message: `the ${name} secret ${file} is malformed (expected 64 lower-case hex characters); it was left as it is` };
  try {
    const { mode } = await fs.stat(file);
    if ((mode & 0o077) !== 0) {
      await fs.chmod(file, 0o600);
      warnings.push(`the ${name} secret ${file} was readable by others (mode ${(mode & 0o777).toString(8)}); tightened to 600`);
    }
  } catch (error) {
    return { ok: false, message: `cannot check the permissions of the ${name} secret ${file}: ${(error as Error).message}` };
  }
  return { ok: true, value, warnings };
}
