/**
 * The names under which the configuration registers its inline schemas, shared by the loader that
 * compiles them and the stage or provider that validates with them.
 */

/** A review command's argument schema. */
export const argsKey = (stage: string, command: string) => `args:${stage}:${command}`;

/** One `checks` provider check's schema. */
export const checkKey = (provider: string, criterion: string, index: number) => `check:${provider}:${criterion}:${index}`;
